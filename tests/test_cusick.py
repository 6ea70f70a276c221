"""The Cusick drape test (benchmarks/cusick.py): the meter sees a flat and a hanging specimen, and a fabric preset
drapes as its fabric does at any mesh resolution (issue 44, item 10).

References: the drape coefficient is 1 for a specimen that stays flat and 0 for one whose shadow is the pedestal
(Cusick 1968, by the definition DC = (A_shadow − A_pedestal)/(A_disc − A_pedestal)); a fabric's drape is a
property of the fabric, so the same preset must give the same DC at 10, 20 and 40 rings (±0.05, the issue's
tolerance) and the presets must order as their fabrics (silk < cotton < denim: silk is the limpest, denim the
stiffest of the three).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from loom.benchmarks import cusick


def test_the_meter_reads_one_for_a_flat_specimen_and_zero_for_one_hanging_straight_down():
    disc = cusick.specimen(20)
    flat, triangles = disc.positions, disc.triangles
    assert cusick.drape_coefficient(flat, triangles) == pytest.approx(1.0, abs=0.01)
    coarse = cusick.specimen(5)                          # its rim a 30-gon: the shadow is that polygon's area
    polygon = 0.5 * 30 * cusick.DISC_RADIUS ** 2 * math.sin(2 * math.pi / 30)
    pedestal, disc_area = math.pi * cusick.PEDESTAL_RADIUS ** 2, math.pi * cusick.DISC_RADIUS ** 2
    assert cusick.drape_coefficient(coarse.positions, coarse.triangles) == pytest.approx(
        (polygon - pedestal) / (disc_area - pedestal), abs=0.003)
    hanging = flat.copy()
    r = np.hypot(flat[:, 0], flat[:, 2])
    outside = r > cusick.PEDESTAL_RADIUS
    scale = cusick.PEDESTAL_RADIUS / r[outside]          # the skirt folded straight down at the pedestal's rim
    hanging[outside, 0] *= scale
    hanging[outside, 2] *= scale
    hanging[outside, 1] = -(r[outside] - cusick.PEDESTAL_RADIUS)
    assert cusick.drape_coefficient(hanging, triangles) == pytest.approx(0.0, abs=0.01)
    half = flat.copy()                                   # the skirt half as wide: DC from the areas
    half[outside, 0] *= (cusick.PEDESTAL_RADIUS + (r[outside] - cusick.PEDESTAL_RADIUS) / 2) / r[outside]
    half[outside, 2] *= (cusick.PEDESTAL_RADIUS + (r[outside] - cusick.PEDESTAL_RADIUS) / 2) / r[outside]
    middle = (cusick.PEDESTAL_RADIUS + cusick.DISC_RADIUS) / 2
    expected = (middle ** 2 - cusick.PEDESTAL_RADIUS ** 2) / (cusick.DISC_RADIUS ** 2 - cusick.PEDESTAL_RADIUS ** 2)
    assert cusick.drape_coefficient(half, triangles) == pytest.approx(expected, abs=0.01)


def test_a_grid_specimen_is_the_disc_cut_from_a_square():
    grid = cusick.specimen(10, "grid")
    r = np.hypot(grid.positions[:, 0], grid.positions[:, 2])
    assert r.max() <= cusick.DISC_RADIUS * (1 + 1e-9)
    area = float(grid.triangle_areas().sum())
    assert 0.85 * math.pi * cusick.DISC_RADIUS ** 2 < area <= math.pi * cusick.DISC_RADIUS ** 2


def test_the_presets_drape_in_their_fabrics_order():
    dc = {preset: cusick.run(preset, 20, seconds=4.0) for preset in ("silk", "cotton", "denim")}
    for record in dc.values():
        assert record["rejected_steps"] == 0
    assert dc["silk"]["drape_coefficient"] < dc["cotton"]["drape_coefficient"] < dc["denim"]["drape_coefficient"], dc


class DrapeDiffers(AssertionError):
    """The one failure the resolution test is marked xfail for: a refused step or a skirt still moving fails it."""


@pytest.mark.xfail(strict=True, raises=DrapeDiffers, reason=(
    "issue 44 item 10: the cotton preset drapes limper on a finer mesh; measured DC 0.67 / 0.38 / 0.25 at "
    "10 / 20 / 40 rings"))
def test_a_preset_drapes_the_same_at_10_20_and_40_rings():
    records = [cusick.run("cotton", rings, seconds=6.0) for rings in (10, 20, 40)]
    for record in records:
        assert record["rejected_steps"] == 0, record
        assert record["speed_at_end_m_s"] < 0.05, f"not settled after 6 s: {record}"
    dc = [record["drape_coefficient"] for record in records]
    if max(dc) - min(dc) > 0.05:
        raise DrapeDiffers(f"drape coefficients {dc} at 10 / 20 / 40 rings: more than 0.05 apart")
