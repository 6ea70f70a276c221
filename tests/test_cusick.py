"""The Cusick drape test (benchmarks/cusick.py): the meter sees a flat and a hanging specimen, and a fabric preset
drapes as its fabric does at any mesh resolution (issue 44, item 10).

References: the drape coefficient is 1 for a specimen that stays flat and 0 for one whose shadow is the pedestal
(Cusick 1968, by the definition DC = (A_shadow − A_pedestal)/(A_disc − A_pedestal)); a fabric's drape is a
property of the fabric, so the same preset must give the same DC at 10, 20 and 40 rings (±0.05, the issue's
tolerance) and the presets must order as their fabrics (silk < cotton < denim: silk is the limpest, denim the
stiffest of the three), inside the ranges measured on Cusick drapemeters for those fabrics (docs/materials.md,
"Bending in physical units", with the sources). The bending model's own reference: a plate of rigidity B bent to a
cylinder of curvature κ stores B/2·κ² per unit area, on any mesh (Grinspun et al. 2003; Bergou et al. 2006).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from loom.benchmarks import cusick
from loom.components import ClothMaterial
from loom.components.cloth import dihedral_angles
from loom.systems.xpbd.constraints import hinge_compliance

MEASURED_DC = {"silk": (0.15, 0.45), "cotton": (0.45, 0.75), "denim": (0.65, 0.95)}
"""Cusick drape coefficients measured for each preset's fabric (30 cm specimen on an 18 cm disc): light silks,
cotton shirting, denim (docs/materials.md, "Bending in physical units", where the sources are cited)."""


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


def bent_energy(specimen, material: ClothMaterial, radius: float, direction: float) -> float:
    """The hinges' XPBD energy Σ θ²/(2α) [J] of ``specimen`` wrapped onto a cylinder of ``radius`` [m] whose axis
    lies in the specimen's plane at ``direction`` [rad] (an isometry: no edge changes length)."""
    x0 = specimen.positions
    c, s = math.cos(direction), math.sin(direction)
    u = c * x0[:, 0] + s * x0[:, 2]                      # along the axis
    w = -s * x0[:, 0] + c * x0[:, 2]                     # across it: wrapped
    bent = np.stack([u, radius * (1.0 - np.cos(w / radius)), radius * np.sin(w / radius)], axis=1)
    theta = dihedral_angles(bent, specimen.bend_quads)
    return float((theta ** 2 / (2.0 * hinge_compliance(x0, specimen.bend_quads, material))).sum())


@pytest.mark.parametrize("kind", ["disc", "grid"])
def test_a_hinge_stores_the_plate_bending_energy_at_any_resolution(kind):
    material = ClothMaterial.preset("cotton", bend_model="dihedral")
    radius = 0.5
    plate = {}
    for rings in (10, 20, 40):
        specimen = cusick.specimen(rings, kind)
        area = float(specimen.triangle_areas().sum())
        reference = 0.5 * material.bending_rigidity * area / radius ** 2      # B/2·κ²·A
        ratios = [bent_energy(specimen, material, radius, d) / reference for d in np.linspace(0, math.pi, 8, False)]
        plate[rings] = float(np.mean(ratios))
        assert 0.9 < min(ratios) and max(ratios) < 1.5, (kind, rings, ratios)  # the mesh factor, docs/materials.md
    assert max(plate.values()) / min(plate.values()) < 1.05, plate            # the same plate at any resolution


def test_a_hinge_compliance_override_is_one_value_for_every_hinge():
    specimen = cusick.specimen(10)
    expert = ClothMaterial.preset("cotton", bend_model="dihedral", bend_angle_compliance=50.0)
    assert np.all(hinge_compliance(specimen.positions, specimen.bend_quads, expert) == 50.0)


def settled(record: dict) -> None:
    """A run counts only if no step was refused and the skirt had settled: slower than 5 cm/s at the end and its
    coefficient within 0.01 over the last second."""
    assert record["rejected_steps"] == 0, record
    assert record["speed_at_end_m_s"] < 0.05 and abs(record["dc_drift"]) < 0.01, f"not settled: {record}"


def test_the_presets_drape_in_their_fabrics_order_within_their_measured_ranges():
    dc = {preset: cusick.run(preset, 20, seconds=6.0) for preset in ("silk", "cotton", "denim")}
    for record in dc.values():
        settled(record)
    assert dc["silk"]["drape_coefficient"] < dc["cotton"]["drape_coefficient"] < dc["denim"]["drape_coefficient"], dc
    for preset, (low, high) in MEASURED_DC.items():
        assert low <= dc[preset]["drape_coefficient"] <= high, (preset, dc[preset], MEASURED_DC[preset])


class DrapeDiffers(AssertionError):
    """The one failure the resolution test is marked xfail for: a refused step or a skirt still moving fails it."""


@pytest.mark.xfail(strict=True, raises=DrapeDiffers, reason=(
    "issue 44 item 10: the hinges store B/2·κ² at any spacing (test above), but one XPBD sweep per substep leaves a "
    "fine mesh's hinges unconverged (stiff regime, B·h²/(ρ·l⁴) ~ 1 at 40 rings), so cotton still drapes limper at 40 "
    "rings: measured DC 0.67 / 0.59 / 0.45 (disc), 0.55 / 0.57 / 0.38 (grid) at 10 / 20 / 40 rings, 8 s"))
@pytest.mark.parametrize("kind", ["disc", "grid"])
def test_a_preset_drapes_the_same_at_10_20_and_40_rings(kind):
    records = [cusick.run("cotton", rings, kind=kind, seconds=8.0) for rings in (10, 20, 40)]
    for record in records:
        settled(record)
    dc = [record["drape_coefficient"] for record in records]
    if max(dc) - min(dc) > 0.05:
        raise DrapeDiffers(f"{kind}: drape coefficients {dc} at 10 / 20 / 40 rings: more than 0.05 apart")
