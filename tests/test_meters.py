"""The opt-in meters (loom.systems.pipeline.meters) against geometric references and the limit they watch."""
from __future__ import annotations

import math

import numpy as np

from loom.components import STRETCH, Cloth, Pin
from loom.engine import mesh
from loom.systems.pipeline import meters as mt


def _sheet(n: int = 8) -> Cloth:
    return Cloth.from_mesh(mesh.grid(n, n, 0.5, 0.5, center=(0.0, 1.0, 0.0), plane="xz"), "cotton")


def _meter_x(cloth: Cloth, x: np.ndarray) -> dict:
    """Run the three kernels on positions ``x`` (the cloth's own arrays untouched) and return the record."""
    m = mt.ClothMeters(cloth)
    m.x_step[:] = x                                            # speed 0: the same positions as "last step"
    mt._before(x, cloth.link_i, cloth.link_j, cloth.link_rest, m.kinds, m.acc, m.counts, m.strain_hist, m.x_before)
    mt._after(x, m.x_before, m.acc, m.counts)
    mt._step(x, m.triangles, m.rest_area, m.rest_angle, m.acc, m.counts, m.area_hist, m.x_step, m.speeds, 60.0)
    return m.record()


def test_a_sheet_stretched_5_percent_along_x_reads_5_percent_and_its_diagonals_the_exact_shear():
    cloth = _sheet()
    x = np.array(cloth.rest_x, copy=True)
    x[:, 0] *= 1.05
    r = _meter_x(cloth, x)
    assert abs(r["stretch_before_limit_worst"] - 0.05) < 1e-12
    # half the warp/weft links lie along x (5 %), half along z (0 %): the p99 is the 5 % bin's upper edge
    assert abs(r["stretch_before_limit_p99"] - 0.05) <= 1e-4 + 1e-12
    assert abs(r["shear_stretch_worst"] - (math.hypot(1.05, 1.0) / math.sqrt(2.0) - 1.0)) < 1e-12
    assert abs(r["area_ratio_min"] - 1.05) < 1e-12
    # a right angle of a grid triangle stays right; its 45° corners become atan(1.05) and atan(1/1.05)
    assert abs(r["angle_change_worst_rad"] - (math.atan(1.05) - math.pi / 4)) < 1e-12
    assert r["limit_active_share"] == 0.0 and r["speed_max_recent_mps"] == 0.0


def test_a_sheet_scaled_to_half_its_area_reads_area_ratio_one_half():
    cloth = _sheet()
    x = np.array(cloth.rest_x, copy=True)
    centre = x.mean(axis=0)
    x = centre + (x - centre) / math.sqrt(2.0)
    r = _meter_x(cloth, x)
    assert abs(r["area_ratio_min"] - 0.5) < 1e-12
    assert abs(r["area_ratio_p1"] - 0.5) <= 2e-4 + 1e-12
    assert abs(r["stretch_before_limit_worst"]) < 1e-12            # shortened links read no stretch above 0
    assert abs(r["angle_change_worst_rad"]) < 1e-12                 # a similar triangle keeps its angles


def test_the_limit_moving_a_particle_is_counted_with_its_distance():
    cloth = _sheet(4)
    m = mt.ClothMeters(cloth)
    x = np.array(cloth.rest_x, copy=True)
    mt._before(x, cloth.link_i, cloth.link_j, cloth.link_rest, m.kinds, m.acc, m.counts, m.strain_hist, m.x_before)
    mt._after(x, m.x_before, m.acc, m.counts)                       # nothing moved
    mt._before(x, cloth.link_i, cloth.link_j, cloth.link_rest, m.kinds, m.acc, m.counts, m.strain_hist, m.x_before)
    x[3] += (0.003, 0.0, 0.004)                                       # the "limit" moves one particle 5 mm
    mt._after(x, m.x_before, m.acc, m.counts)
    r = m.record()
    assert r["substeps"] == 2 and r["limit_active_share"] == 0.5
    assert abs(r["limit_correction_max_m"] - 0.005) < 1e-15


def test_the_meter_sees_stretch_that_the_limit_later_removes(make_app):
    app = make_app(substeps=8)
    app.add_plugin(mt.MeterPlugin())
    sheet = mesh.grid(16, 16, 1.0, 1.0, center=(0.0, 1.0, 0.0), plane="xz")
    cloth = Cloth.from_mesh(sheet, "cotton", stretch_limit=0.01, tethers=False)
    entity = app.spawn(cloth, Pin.corners(sheet, "top"))
    after = 0.0
    for _ in range(60):
        app.step(1)
        after = max(after, float(cloth.strain(STRETCH).max()))
    r = app.resource(mt.Meters).record(entity)
    assert cloth.rejected_steps == 0
    assert after <= 0.01 + 1e-9                                       # the limit held after every step
    assert r["stretch_before_limit_worst"] > 0.01 + 1e-3              # before it ran, the solve left more
    assert r["limit_active_share"] > 0.0 and r["limit_correction_max_m"] > 0.0
    assert r["substeps"] == 60 * 8 and r["steps"] == 60


def test_a_frozen_cloth_reads_no_speed(make_app):
    app = make_app(substeps=4)
    app.add_plugin(mt.MeterPlugin())
    sheet = mesh.grid(8, 8, 0.5, 0.5, center=(0.0, 1.0, 0.0), plane="xz")
    cloth = Cloth.from_mesh(sheet, "cotton")
    entity = app.spawn(cloth, Pin(index=np.arange(cloth.particle_count)))
    app.step(30)
    r = app.resource(mt.Meters).record(entity)
    assert cloth.rejected_steps == 0
    assert r["speed_max_recent_mps"] < 1e-9
    assert r["stretch_before_limit_worst"] < 1e-9 and r["limit_active_share"] == 0.0


def test_scenes_meters_option_adds_an_untimed_metered_run_to_the_record(capsys):
    import json

    from loom.benchmarks import scenes
    scenes.main(["--scene", "cape", "--frames", "3", "--no-render", "--threads", "1", "--meters"])
    record = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    meters = record["meters"]
    assert meters["rejected_steps"] == 0 and record["rejected_steps"] == 0
    assert set(meters) >= {"stretch_before_limit_worst", "stretch_before_limit_p99", "shear_stretch_worst",
                           "angle_change_worst_rad", "area_ratio_min", "area_ratio_p1", "limit_active_share",
                           "limit_correction_max_m", "speed_max_recent_mps"}
    assert 0.0 < meters["area_ratio_min"] <= meters["area_ratio_p1"]
    assert meters["stretch_before_limit_p99"] <= meters["stretch_before_limit_worst"] + 1e-4
