"""Verlet cloth (Fuhrmann et al. 2003 §3; Schönberger; Fisher) measured against analytic answers: free
fall, drag, held particles, centre of mass, hanging strain, bending pairs, refused steps."""
from __future__ import annotations

import math

import numpy as np
import pytest

from loom.components import BEND, SHEAR, STRETCH, Cloth, Gravity, VerletSettings
from loom.engine import App, mesh

G = 9.81


def particle(app: App, v0, drag: float = 1.0) -> Cloth:
    """One free 0.3 kg particle at (0, 2, 0) m moving at v0 [m/s]: Verlet's velocity lives in x − x_prev."""
    cloth = Cloth.from_particles([[0.0, 2.0, 0.0]], mass=0.3, links=np.zeros((0, 2), np.int32), model="verlet",
                                 settings=VerletSettings(drag=drag))
    cloth.x_prev[:] = cloth.x - app.clock.h * np.asarray(v0)
    app.spawn(cloth)
    return cloth


@pytest.fixture
def hanging_sheet(pinned_sheet):
    """Return ``hanging_sheet(app, n, **settings)``: a horizontal n×n, 1 m Verlet sheet (VerletSettings(**settings))
    pinned at its two far corners; it returns (cloth, pin)."""
    return lambda app, n, **settings: pinned_sheet(app, n, model="verlet", settings=VerletSettings(**settings))


def test_free_fall_matches_verlets_closed_form_and_the_parabola(make_app):
    # With x_prev = x0 − h·v0 the step d_n = x_n − x_{n−1} grows by g·h² each substep: d_n = h·v0 + n·g·h²,
    # so x_N = x0 + v0·t + ½·g·t²·(1 + 1/N) exactly — symplectic Euler's answer — and the error
    # against the parabola is ½·|g|·h·t. Rounding: each d_n carries an error of about one ulp of x
    # and N of them accumulate into x, so allow N²·ε·|x| (6e-12 m here; measured 9e-13 m).
    app = make_app(dt=1 / 60, substeps=4)
    v0 = np.array([1.5, 4.0, -0.5])
    cloth = particle(app, v0)
    app.step(30)                                           # t = 0.5 s in N = 120 substeps
    t, n_sub = 0.5, 120
    h = t / n_sub
    g = np.array([0.0, -G, 0.0])
    x0 = np.array([0.0, 2.0, 0.0])
    discrete = x0 + v0 * t + 0.5 * g * t * t * (1 + 1 / n_sub)
    rounding = n_sub ** 2 * np.finfo(float).eps * 2.0
    assert np.abs(cloth.x[0] - discrete).max() < rounding, f"x {cloth.x[0]} want {discrete}"
    error = abs(cloth.x[0, 1] - (x0 + v0 * t + 0.5 * g * t * t)[1])
    bound = 0.5 * G * h * t
    assert error == pytest.approx(bound, rel=1e-9), f"error {error:.4e} m, Verlet's is {bound:.4e} m"
    assert np.allclose(cloth.v[0], v0 + g * t, rtol=0, atol=1e-9), f"v {cloth.v[0]} want {v0 + g * t}"


@pytest.mark.parametrize("substeps", [4, 16])
def test_drag_keeps_drag_to_the_power_sixty_of_the_speed_per_second_at_any_substep_count(make_app, substeps):
    # Each substep keeps drag^(60h) of the step x − x_prev, so after t seconds the speed is
    # v0·drag^(60t) and the kinetic energy falls as drag^(120t) whatever the substep count.
    # Rounding: each substep rounds x (≈ 2 m) by up to ε·|x|, a velocity error of ε·|x|/h, and N
    # substeps add at most N of them (4e-10 m/s at 16 substeps; measured relative errors 2e-11).
    app = make_app(substeps=substeps)
    app.insert_resource(Gravity((0.0, 0.0, 0.0)))
    v0, drag = np.array([2.0, 0.0, 1.0]), 0.9
    cloth = particle(app, v0, drag=drag)
    app.step(60)                                           # 1 s
    h, n_sub = app.clock.h, 60 * substeps
    expected = v0 * drag ** 60
    rounding = n_sub * np.finfo(float).eps * 2.0 / h
    assert np.abs(cloth.v[0] - expected).max() < rounding, f"v {cloth.v[0]} m/s want {expected} m/s"
    energy_ratio = float(cloth.v[0] @ cloth.v[0] / (v0 @ v0))
    assert energy_ratio == pytest.approx(drag ** 120, rel=1e-9), \
        f"kinetic energy ×{energy_ratio:.9f}, drag^120 = {drag ** 120:.9f}"


def test_grabbed_particle_sits_exactly_on_its_target_while_the_cloth_is_yanked(make_app, hanging_sheet):
    app = make_app()
    cloth, pin = hanging_sheet(app, 16)
    app.step(10)
    start = pin.target.copy()
    for frame in range(30):                                # drag one corner 3.4 m away in half a second
        pin.target[0] = start[0] + [-0.1 * (frame + 1), 0.05 * (frame + 1), 0.0]
        app.step()
        assert np.array_equal(cloth.x[pin.index], pin.target), f"frame {frame}: a held particle was moved"
    stretch = float(cloth.strain(STRETCH).max())
    assert stretch > 1.0, f"the corners are 4 m apart on a 1 m sheet: edges should be torn long, max {stretch:.0%}"
    assert (cloth.inv_mass[pin.index] == 0.0).all()


def test_internal_constraints_keep_the_centre_of_mass_of_a_crumpled_free_cloth(make_app):
    # Fuhrmann 2003 eqs. 6–9: each correction moves the two ends by amounts in inverse ratio to their
    # masses, so the centre of mass of a cloth at rest with no external force never moves.
    app = make_app()
    app.insert_resource(Gravity((0.0, 0.0, 0.0)))
    cloth = Cloth.from_mesh(mesh.disc(0.5, 6), model="verlet")
    rng = np.random.default_rng(7)
    cloth.x += rng.normal(scale=0.02, size=cloth.x.shape)          # crumple: every constraint violated
    cloth.x_prev[:] = cloth.x                                      # at rest
    app.spawn(cloth)
    com0 = cloth.mass @ cloth.x / cloth.total_mass
    app.step(60)
    drift = np.abs(cloth.mass @ cloth.x / cloth.total_mass - com0).max()
    assert drift < 1e-12, f"centre of mass drifted {drift:.2e} m"
    strain = np.abs(cloth.strain(STRETCH)).max()
    assert strain < 0.01, f"after 1 s the edges are still {strain:.2%} off their rest length"


def test_hanging_sheet_settles_within_stretch_max_up_to_the_relaxation_residual(make_app, hanging_sheet):
    # Gauss–Seidel passes in colour order move a correction one link per pass, so a 32×32 sheet
    # hanging from two corners keeps a residual stretch at the pins that falls as 1/(substeps ×
    # passes): measured 1.79 % at 16 × 8, 0.45 % at 16 × 32 and at 32 × 8. Drag 0.9 settles it in 3 s.
    settled = {}
    for passes in (8, 32):
        app = make_app(substeps=16)
        cloth, _ = hanging_sheet(app, 32, passes=passes, drag=0.9)
        app.step(180)
        assert np.abs(cloth.v).max() < 0.05, "the sheet has not settled"
        settled[passes] = float(cloth.strain(STRETCH).max())
    squeeze = float(cloth.strain(STRETCH).min())
    assert squeeze >= -0.005, f"an edge is compressed {-squeeze:.2%} with stretch_min = 1 (measured 0.35 %)"
    residual = settled[32] - (VerletSettings().stretch_max - 1)
    assert residual <= 0.005, f"max edge strain {settled[32]:.3%} with 32 passes, want <= 0.5 % (measured 0.45 %)"
    ratio = settled[8] / settled[32]
    assert 3.0 <= ratio <= 5.0, f"4× the passes cut the residual {ratio:.2f}×, want ≈ 4 (Gauss–Seidel)"


def test_bend_min_opens_a_sharp_crease_to_its_limit_and_no_further_below_it(make_app):
    # A 17×17 sheet folded 90° along its middle row, at rest, no gravity: pairs across the crease are
    # √2·s long for a rest length of 2·s, ratio 0.7071. Stretch and shear links are all at rest length.
    ratios = {}
    for bend_min in (0.5, 0.9):
        app = make_app()
        app.insert_resource(Gravity((0.0, 0.0, 0.0)))
        cloth = Cloth.from_mesh(mesh.grid(17, 17, 1.0, 1.0, plane="xz"), model="verlet",
                                settings=VerletSettings(bend_min=bend_min))
        up = cloth.x[:, 2] > 1e-9                                  # the half beyond the crease z = 0 ...
        cloth.x[up, 1], cloth.x[up, 2] = cloth.x[up, 2], 0.0       # ... turned up to stand vertical
        cloth.x_prev[:] = cloth.x
        app.spawn(cloth)
        lowest = []
        for _ in range(60):
            app.step()
            lowest.append(float(cloth.strain(BEND).min()) + 1)
        ratios[bend_min] = lowest
    assert np.allclose(ratios[0.5], 1 / math.sqrt(2), rtol=0, atol=1e-12), \
        f"bend_min 0.5 moved the 0.7071 crease: {min(ratios[0.5]):.6f}..{max(ratios[0.5]):.6f}"
    # 4 passes per substep leave the opened crease flapping slightly under the bound (measured 1.2e-4).
    worst = min(ratios[0.9])
    assert worst >= 0.9 - 1e-3, f"a bending pair is at {worst:.5f} × rest, bend_min 0.9"


def test_refused_step_is_retried_from_its_own_start_and_costs_exactly_one_step(make_app, hanging_sheet,
                                                                                refusal_runs):
    def scene() -> tuple[App, Cloth]:
        app = make_app(substeps=8)
        return app, hanging_sheet(app, 8)[0]

    runs = refusal_runs(scene, (5, 1))
    assert np.array_equal(runs[True], runs[False]), f"off by {np.abs(runs[True] - runs[False]).max():.2e} m"


def test_default_verlet_sheet_hangs_from_its_pins_without_refused_steps(make_app, pinned_sheet):
    app = make_app()
    cloth, _ = pinned_sheet(app, 32, center=(0.0, 1.0, 0.0), material="cotton", model="verlet")
    app.step(60)
    report = app.report()
    assert report["rejected_steps"] == 0 and not report["nan"]
    assert report["min_y"] < 0.6, f"the sheet should hang down, lowest point {report['min_y']:.3f} m"
    shear = float(np.abs(cloth.strain(SHEAR)).max())
    assert shear < 0.1, f"shear links {shear:.2%} off rest with stretch_min = stretch_max = 1"
