"""Wind zones (issue 16, item 5): a Wind with a WindBox or WindSphere region blows only inside it, fades across
its soft edge, adds to other winds, refuses bad regions, and survives a snapshot."""
from __future__ import annotations

import math

import numpy as np
import pytest

import loom
from loom.components import Cloth, Pin, Wind, WindBox, WindSphere
from loom.engine import mesh
from loom.systems.forces.wind import air_velocity, apply_wind

RHO, CD = 1.2, 1.0
FLAG_AT = np.array([0.0, 2.0, 0.0])
"""Centre of the flag that stands in the zone [m]."""
CAPE_AT = np.array([4.0, 2.0, 0.0])
"""Centre of the cloths outside it [m]."""


def hanging(app, center, n: int = 7) -> Cloth:
    """A 0.8 × 0.6 m vertical sheet facing +z, its top corners pinned, spawned in ``app``."""
    sheet = mesh.grid(n, n, 0.8, 0.6, center=tuple(center))
    cloth = Cloth.from_mesh(sheet, density=0.15)
    app.spawn(cloth, Pin.corners(sheet, "top"))
    return cloth


def zone_scene(make_app, *, zoned: bool, global_wind: bool, capes: int = 1) -> tuple[Cloth, list[Cloth]]:
    """A flag at FLAG_AT, ``capes`` cloths at and beyond CAPE_AT, optionally a global breeze and a gusty,
    turbulent gale in a box around the flag only; 40 steps run. Returns (flag, capes)."""
    app = make_app(substeps=4)
    flag = hanging(app, FLAG_AT)
    others = [hanging(app, CAPE_AT + (1.2 * k, 0.0, 0.0)) for k in range(capes)]
    if global_wind:
        app.spawn(Wind(velocity=(0.0, 0.0, 1.5), turbulence=0.2, seed=2))
    if zoned:
        app.spawn(Wind(velocity=(2.0, 0.0, 9.0), gust=0.4, turbulence=0.3, seed=5,
                       region=WindBox(center=FLAG_AT, half_size=(1.0, 1.0, 1.0), edge=0.2)))
    app.step(40)
    return flag, others


@pytest.mark.parametrize("global_wind", [False, True], ids=["zone-only", "zone-plus-breeze"])
@pytest.mark.parametrize("capes", [1, 11], ids=["one-cape", "batched"])  # 12 cloths: batched at any thread count
def test_flag_in_its_zone_moves_and_cloths_outside_do_not_feel_that_wind(make_app, global_wind, capes):
    flag, capes_with = zone_scene(make_app, zoned=True, global_wind=global_wind, capes=capes)
    flag_without, capes_without = zone_scene(make_app, zoned=False, global_wind=global_wind, capes=capes)
    lean = flag.x[:, 2].mean() - flag_without.x[:, 2].mean()
    assert lean > 0.05, f"the flag in the zone leaned {lean:.4f} m downwind, want > 0.05 m"
    for k, (cape, alone) in enumerate(zip(capes_with, capes_without)):
        assert np.array_equal(cape.x, alone.x), \
            f"cloth {k} outside the zone moved by {np.abs(cape.x - alone.x).max():.3g} m because of the zone's wind"
        assert np.array_equal(cape.v, alone.v), f"cloth {k} outside the zone changed velocity"


def plate_force(make_app, center, region, speed: float = 6.0) -> float:
    """Wind force [N] along +z on a small 0.1 m plate facing +z at ``center``, from a zoned wind along +z."""
    app = make_app()
    plate = Cloth.from_mesh(mesh.grid(3, 3, 0.1, 0.1, center=tuple(center)), density=1.0)
    app.spawn(plate)
    app.spawn(Wind(velocity=(0.0, 0.0, speed), drag_coefficient=CD, lift_coefficient=0.0, air_density=RHO,
                   region=region))
    plate.force[:] = 0.0
    apply_wind(app, app.clock.dt)
    return float(plate.force[:, 2].sum())


@pytest.mark.parametrize("region", [WindSphere(center=(0.0, 0.0, 0.0), radius=1.0, edge=0.5),
                                    WindBox(center=(0.0, 0.0, 0.0), half_size=(1.0, 2.0, 2.0), edge=0.5)],
                         ids=["sphere", "box"])
def test_particles_in_the_soft_edge_get_a_partial_force(make_app, region):
    full = plate_force(make_app, (0.0, 0.0, 0.0), region)
    assert full == pytest.approx(0.5 * RHO * CD * 0.1**2 * 6.0**2, rel=1e-9), f"full-strength drag {full} N"
    partial = plate_force(make_app, (0.75, 0.0, 0.0), region)             # 0.25 m deep: halfway across the edge
    outside = plate_force(make_app, (1.3, 0.0, 0.0), region)
    assert 0.02 * full < partial < 0.98 * full, f"soft-edge drag {partial} N, want between 0 and {full} N"
    assert outside == 0.0, f"drag {outside} N outside the zone"
    u = air_velocity([Wind(velocity=(0.0, 0.0, 6.0), region=region)], [],
                     np.array([[0.0, 0.0, 0.0], [0.6, 0.0, 0.0], [0.75, 0.0, 0.0], [0.9, 0.0, 0.0], [1.01, 0, 0]]),
                     0.0)[:, 2]
    assert u[0] == 6.0 and u[-1] == 0.0, f"air {u} m/s: want 6 at the centre, 0 outside"
    assert np.all(np.diff(u) < 0.0), f"air {u} m/s should fade monotonically across the edge"
    s = 0.5                                                               # smoothstep(depth/edge) at 0.25 m deep
    assert u[2] == pytest.approx(6.0 * s * s * (3.0 - 2.0 * s), rel=1e-12)


def test_two_overlapping_zones_add_up(make_app):
    a = WindBox(center=(0.0, 0.0, 0.0), half_size=(1.0, 1.0, 1.0))
    b = WindSphere(center=(0.5, 0.0, 0.0), radius=1.0)
    app = make_app()
    plate = Cloth.from_mesh(mesh.grid(3, 3, 0.1, 0.1, center=(0.3, 0.0, 0.0)), density=1.0)
    app.spawn(plate)
    app.spawn(Wind(velocity=(0.0, 0.0, 3.0), drag_coefficient=CD, lift_coefficient=0.0, air_density=RHO, region=a))
    app.spawn(Wind(velocity=(0.0, 0.0, 5.0), region=b))
    apply_wind(app, app.clock.dt)
    expected = 0.5 * RHO * CD * 0.1**2 * (3.0 + 5.0) ** 2
    assert plate.force[:, 2].sum() == pytest.approx(expected, rel=1e-9), "overlapping zones should add velocities"
    u = air_velocity([Wind(velocity=(0.0, 0.0, 3.0), region=a), Wind(velocity=(0.0, 0.0, 5.0), region=b)], [],
                     np.array([[-0.8, 0.0, 0.0], [0.3, 0.0, 0.0], [1.3, 0.0, 0.0], [3.0, 0.0, 0.0]]), 0.0)[:, 2]
    assert u.tolist() == [3.0, 8.0, 5.0, 0.0], f"air {u} m/s in a only, both, b only, neither"


def test_a_rotated_box_blows_along_its_own_axes():
    c, s = math.cos(math.pi / 4.0), math.sin(math.pi / 4.0)
    box = WindBox(center=(0.0, 0.0, 0.0), half_size=(2.0, 0.2, 1.0),
                  rotation=[[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])       # long axis along (1, 1, 0)
    u = air_velocity([Wind(velocity=(1.0, 0.0, 0.0), region=box)], [],
                     np.array([[1.0, 1.0, 0.0], [1.0, -1.0, 0.0]]), 0.0)[:, 0]
    assert u.tolist() == [1.0, 0.0], f"air {u} m/s on the box's diagonal axis and across it"


@pytest.mark.parametrize("build, field, shown", [
    (lambda: WindSphere(radius=-0.5), "WindSphere.radius", "-0.5"),
    (lambda: WindSphere(center=(0.0, float("nan"), 0.0)), "WindSphere.center", "nan"),
    (lambda: WindBox(center=(float("nan"), 0.0, 0.0)), "WindBox.center", "nan"),
    (lambda: WindBox(half_size=(1.0, 0.0, 1.0)), "WindBox.half_size", "0.0"),
    (lambda: WindBox(half_size=(1.0, 1.0, 1.0), edge=-0.1), "WindBox.edge", "-0.1"),
    (lambda: WindBox(half_size=(1.0, 0.3, 1.0), edge=0.5), "WindBox.edge", "0.5"),
    (lambda: WindBox(rotation=np.diag([1.0, 1.0, -1.0])), "WindBox.rotation", "-1.0"),
    (lambda: Wind(region=(0.0, 0.0, 1.0)), "Wind.region", "(0.0, 0.0, 1.0)"),
])
def test_invalid_regions_raise_naming_the_field(build, field, shown):
    with pytest.raises(ValueError) as info:
        build()
    message = str(info.value)
    assert message.startswith(field) and shown in message and "\n" not in message, message


def test_assigning_a_bad_region_field_later_is_refused():
    wind = Wind(region=WindSphere(radius=1.0))
    with pytest.raises(ValueError, match=r"^WindSphere\.radius = 0\.0"):
        wind.region.radius = 0.0
    with pytest.raises(ValueError, match=r"^Wind\.region = 'box'"):
        wind.region = "box"
    wind.region = WindBox(center=(1.0, 2.0, 3.0))                     # a zone can be swapped or moved
    wind.region.center = (2.0, 2.0, 3.0)
    assert wind.region.center.tolist() == [2.0, 2.0, 3.0]


def test_a_scene_with_a_zone_round_trips_through_a_snapshot(make_app, tmp_path, resumed_runs):
    def scene():
        app = make_app(substeps=4)
        hanging(app, FLAG_AT)
        hanging(app, CAPE_AT)
        turned = loom.Transform.from_axis_angle((0.0, 0.0, 0.0), (0.0, 1.0, 0.0), 0.3).rotation
        app.spawn(Wind(velocity=(1.0, 0.0, 7.0), gust=0.3, turbulence=0.25, seed=9,
                       region=WindBox(center=FLAG_AT, half_size=(0.8, 0.8, 0.8), rotation=turned, edge=0.3)))
        app.spawn(Wind(velocity=(0.0, 0.0, -3.0), region=WindSphere(center=CAPE_AT, radius=0.5, edge=0.2)))
        return app

    a, b = resumed_runs(scene, tmp_path / "zones.loom", 15, 30)
    regions = [type(w.region).__name__ for _, w in b.query(Wind)]
    assert regions == ["WindBox", "WindSphere"], regions
    cloths_a = [c for _, c in a.query(Cloth)]
    cloths_b = [c for _, c in b.query(Cloth)]
    for ca, cb in zip(cloths_a, cloths_b):
        assert np.array_equal(ca.x, cb.x) and np.array_equal(ca.v, cb.v), "steps after the load differ"
    assert not np.array_equal(cloths_a[0].x, scene_without_wind_positions(make_app)), "the zone did not blow"


def scene_without_wind_positions(make_app) -> np.ndarray:
    """The flag of the snapshot scene after 45 steps with no wind at all [m]."""
    app = make_app(substeps=4)
    flag = hanging(app, FLAG_AT)
    hanging(app, CAPE_AT)
    app.step(45)
    return flag.x.copy()
