"""Provot 1995's deformation limit holds: no structural or shear link ends a step longer than (1 + τ_c)·l₀.

Issue 17, item 3. Provot's slides ("Constraints on Deformation Rates", "Disadvantages") set each over-long
spring back to (1 + τ_c)·l₀ and warn that correcting one spring over-extends another; fixed pass counts
left 16.8 % (mass-spring, 10 passes) and 12.4 % (XPBD, 20 passes) on a 32² hanging sheet under a 10 %
limit. ``distance_limits.limit_lengths`` now runs until no link is over (module docstring: why that ends),
and reports the cases where it cannot (anchors farther apart than the limit allows).

Tolerance. The limit compares |x_a − x_b| with hi = (1 + τ_c)·l₀ exactly, no slack; ``Cloth.strain``
recomputes |x_a − x_b|/l₀ − 1 in float64, which differs from that comparison by rounding only (~1e-16
relative). 1e-9 in strain is therefore seven orders above rounding and about eight below what the old
limit left over, so ``strain <= τ_c + 1e-9`` after every step is "the limit held", nothing looser.
"""
from __future__ import annotations

import logging

import numpy as np
import pytest

from loom.components import SHEAR, STRETCH, Cloth, ClothMaterial, Pin
from loom.components.cloth import HELD
from loom.engine import mesh
from loom.systems.models.mass_spring import MassSpringScratch
from loom.systems.shared.distance_limits import (OVER_RELAX, OVER_RELAX_CAP, SHRINK, DeformationLimit,
                                                DeformationLimits)

TAU = 0.1
"""τ_c [-]: MassSpringSettings' default strain_limit, and the XPBD sheets' ``strain_limit``."""
TOL = 1e-9
"""Allowed strain above τ_c [-] (module docstring)."""
STEPS = 300


def corner_hang(app, n: int, **cloth_options) -> tuple[Cloth, Pin]:
    """Provot's hanging sheet: a horizontal 1 m n×n sheet pinned at its two far corners, falling and hanging."""
    sheet = mesh.grid(n, n, 1.0, 1.0, plane="xz")
    cloth = Cloth.from_mesh(sheet, **cloth_options)
    pin = Pin.corners(sheet, "top")
    app.spawn(cloth, pin)
    return cloth, pin


def worst_strain(cloth: Cloth) -> float:
    """Largest strain [-] of the limited kinds, structural (stretch) and shear."""
    return max(float(cloth.strain(STRETCH).max()), float(cloth.strain(SHEAR).max()))


def hang_and_check_every_step(app, cloth: Cloth) -> float:
    """Step ``STEPS`` times, asserting the limit after each step; return the worst strain seen."""
    worst = 0.0
    for step in range(STEPS):
        app.step()
        strain = worst_strain(cloth)
        assert strain <= TAU + TOL, f"step {step + 1}: a link is at {strain:.12%}, limit {TAU:.0%}"
        worst = max(worst, strain)
    assert np.isfinite(cloth.x).all() and np.isfinite(cloth.v).all()
    assert cloth.rejected_steps == 0
    limit = app.resource(DeformationLimits).of(cloth)
    assert limit.unmet == 0 and limit.over == 0, f"the limit reported {limit.unmet} unmet substeps"
    return worst


@pytest.mark.parametrize("n", [32, 64])
def test_mass_spring_default_limit_holds_after_every_step_of_a_300_step_hang(make_app, n):
    # MassSpringSettings() defaults: τ_c = 10 %, symplectic Euler, 16 substeps of 1/60 s. The springs
    # (200 N/m) are past explicit stability for the light particles at this h, so the sheet jitters; the
    # limit holds regardless. Measured: 1.8 (32²) and 3.5 (64²) passes' worth of checks per substep on
    # average, at most 1.9 and 6.7 (limit_passes = 100).
    app = make_app()
    cloth, _ = corner_hang(app, n, material="cotton", model="mass_spring")
    worst = hang_and_check_every_step(app, cloth)
    assert worst > TAU * (1 - 2 * SHRINK), f"the limit should bind in this hang, worst strain {worst:.3%}"
    (state,) = app.resource(MassSpringScratch).states.values()         # the model's own copy of the report
    assert state.limit_unmet == 0 and state.limit_over == 0


@pytest.mark.parametrize("n", [32, 64])
def test_xpbd_strain_limit_holds_after_every_step_of_a_300_step_hang(make_app, n):
    # A compliant sheet (0.05 m/N, 2 kg/m²) without tethers: without the limit its strain passes 1000 % (32²)
    # and 1800 % (64², where the guard refuses steps), so the limit does all the work. Measured: 1.6 and 3.2
    # passes' worth per substep on average, at most 3.7 and 21 (STRAIN_LIMIT_MAX_PASSES = 100).
    app = make_app()
    material = ClothMaterial(density=2.0, stretch_compliance=0.05, shear_compliance=0.05, strain_limit=TAU)
    cloth, _ = corner_hang(app, n, material=material, tethers=False)
    worst = hang_and_check_every_step(app, cloth)
    assert worst > TAU * (1 - 2 * SHRINK), f"the limit should bind in this hang, worst strain {worst:.3%}"


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "issue 44 item 8: kinetic + elastic energy reaches 1.22 × gravity's work at step 5 (0.079 J of 0.064 J); "
    "2.08 × with the limit off: symplectic Euler at ω·h ≈ 0.7–1.0 (k = 200 N/m, 0.44 g particles, h = 1/960 s) makes "
    "energy, and the limit removes part of it"))
def test_mass_spring_limit_does_not_add_energy_to_a_stable_hang(make_app):
    # 16²: 16 substeps are within explicit stability here, so energy can only come from gravity. Springs
    # store E = Σ ½·k·(l − l₀)² ≥ 0, and damping and Provot's corrections may only remove energy, so kinetic plus
    # stored elastic energy can never exceed gravity's work W = g·Σ m·(y₀ − y) (1 % allowed for rounding).
    app = make_app()
    cloth, _ = corner_hang(app, 16, material="cotton", model="mass_spring")
    settings = cloth.settings
    k = np.array([settings.stretch_stiffness, settings.shear_stiffness, settings.bend_stiffness])[cloth.link_kind]
    y0 = cloth.x[:, 1].copy()
    for step in range(STEPS):
        app.step()
        kinetic = 0.5 * float(cloth.mass @ (cloth.v ** 2).sum(axis=1))
        length = np.linalg.norm(cloth.x[cloth.link_i] - cloth.x[cloth.link_j], axis=1)
        elastic = 0.5 * float((k * (length - cloth.link_rest) ** 2).sum())
        work = 9.81 * float(cloth.mass @ (y0 - cloth.x[:, 1]))
        assert cloth.rejected_steps == 0
        assert kinetic + elastic <= 1.01 * work, (
            f"step {step + 1}: kinetic {kinetic:.4g} J + elastic {elastic:.4g} J > gravity's work {work:.4g} J")
        assert worst_strain(cloth) <= TAU + TOL
    assert kinetic < 0.1 * work, f"the sheet should have settled, kinetic {kinetic:.3g} J of {work:.3g} J"


@pytest.mark.parametrize("model", ["mass_spring", "xpbd"])
def test_pins_pulled_beyond_the_limit_are_reported_and_stay_finite(make_app, caplog, model):
    # The two pinned corners 1.5 m apart: the top edge can reach only 1.1 m, so no motion satisfies the
    # limit. Documented behaviour (DeformationLimit.apply): the links between the pins get bounds relaxed
    # by r/(1 − δ), r = 1.5/1.1; the substep spends at most INFEASIBLE_PASSES passes' worth; ``unmet`` counts
    # it and loom.limits logs it; positions stay finite and the guard refuses nothing.
    app = make_app()
    options = dict(material="cotton", model="mass_spring") if model == "mass_spring" else \
        dict(material=ClothMaterial(strain_limit=TAU))
    cloth, pin = corner_hang(app, 16, **options)
    app.step()
    pin.target = pin.target * np.array([1.5, 1.0, 1.0])          # x of each corner × 1.5 (centred sheet)
    with caplog.at_level(logging.WARNING, logger="loom.limits"):
        app.step(120)
    assert np.isfinite(cloth.x).all() and np.isfinite(cloth.v).all()
    assert cloth.rejected_steps == 0
    assert np.linalg.norm(cloth.x[pin.index[0]] - cloth.x[pin.index[1]]) == pytest.approx(1.5)
    limit = app.resource(DeformationLimits).of(cloth)
    stretch = 1.5 / (1.0 + TAU) / (1.0 - SHRINK)
    assert limit.unmet > 0 and limit.over > 0
    assert limit.stretch == pytest.approx(stretch, rel=1e-9)
    assert any("Provot limit unmet" in r.getMessage() for r in caplog.records)
    if model == "mass_spring":             # the relaxed limit holds (measured: 2.6 passes' worth on average)
        assert worst_strain(cloth) <= (1.0 + TAU) * stretch - 1.0 + TOL


def test_limit_ends_with_every_link_within_its_bound_and_never_moves_an_anchor():
    # A chain of 20 links, 1 m each, pinned at particle 0, stretched to 1.5 m per link. Link by link the
    # pin's correction travels one link per pass and is halved at each free–free link (the chain's centre
    # of mass moves only through the pinned link): 100 passes' worth did not end it. The pull toward the
    # anchor (particle k within 1.1·k m of the pin) does it at once. The limit must end with every link
    # within 1.1 m and none shorter than at rest, the pin where it was.
    count = 21
    rest = np.arange(count, dtype=float)
    x = np.stack([1.5 * rest, np.zeros(count), np.zeros(count)], axis=1)
    link_i = np.arange(count - 1, dtype=np.int32)
    link_j = link_i + 1
    inv_mass = np.ones(count)
    inv_mass[0] = 0.0
    limit = DeformationLimit(link_i, link_j, np.ones(count - 1), np.full(count - 1, 1.0 + TAU), count)
    assert limit.apply(100, inv_mass, x)
    lengths = np.linalg.norm(x[1:] - x[:-1], axis=1)
    assert lengths.max() <= 1.0 + TAU and limit.over == 0 and limit.unmet == 0
    overshoot = (OVER_RELAX - 1.0) * OVER_RELAX_CAP                     # the most over-relaxation shortens [-]
    assert lengths.min() >= max(1.0, (1.0 + TAU) * (1.0 - SHRINK) * (1.0 - overshoot)) - 1e-12
    assert np.array_equal(x[0], [0.0, 0.0, 0.0]) and 1.0 < limit.passes < 100


@pytest.mark.parametrize("degrees", [0.01, 3.0, 20.0])
def test_an_end_sliding_on_its_surface_never_moves_farther_than_its_links_excess(degrees):
    """One link, 1 m at rest, stretched to 1.5 m under a 10 % limit: its end b is held where a pinch left it
    (``Cloth.contact`` ``HELD``: it does not move this substep), its end a rests on a floor and b lies below it,
    the link tilted ``degrees`` from the floor's normal (shortening would pull a into the floor, so a may only
    slide along it: a particle under a table's rim with its link into the rim). Sliding changes the length only
    through the tilt (by √(1 − e²) of the slide, e = cos tilt), so the projection asked a slide of the excess
    over √(1 − e²): about 0.45 m / 1.7e-4 at 0.01°, 2850 m measured. That exploded a tablecloth resting under a
    table's rim after two minutes (one pass moved a particle 10⁵ m). Now a link whose free end is that nearly
    pinned counts as held (``MIN_MOBILITY``: below 5.7° here), and no slide is longer than the link's excess: a
    moves no farther than the link is over its rest length (0.5 m), along its surface and never into it, and the
    limit reports the link it could not bring within its bound (b lies 1.41 m or more below the floor)."""
    tilt = np.radians(degrees)
    x = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    x[1] = 1.5 * np.array([np.sin(tilt), -np.cos(tilt), 0.0])          # b below a, the link tilted from −y
    start = x.copy()
    contact = np.zeros((2, 5))
    contact[0, :3], contact[0, 3] = (0.0, 1.0, 0.0), 1.0                 # a on a floor (normal +y)
    contact[1, 3] = HELD                                                 # b squeezed out of a pinch: stays
    limit = DeformationLimit(np.array([0], np.int32), np.array([1], np.int32), np.ones(1), np.full(1, 1.0 + TAU), 2)
    limit.apply(100, np.ones(2), x, contact)
    moved = np.linalg.norm(x[0] - start[0])
    assert np.array_equal(x[1], start[1]), "the held end moved"
    assert x[0, 1] == 0.0, f"a was pushed into its surface: y = {x[0, 1]}"
    assert moved <= 0.5 + 1e-9, f"a slid {moved:.3g} m for a link 0.5 m too long"
    length = float(np.linalg.norm(x[1] - x[0]))
    assert length <= 1.5 + 1e-12, f"the limit lengthened the link to {length:.4g} m"
    assert limit.over == 1 and limit.unmet == 1, (limit.over, limit.unmet)
