"""Issue 17's acceptance: with the defaults a user gets, cloth stays within a few % stretch where it used to stretch
like rubber — draped over a ball, over a table, pushed by a ball, and as the cape game's cape in its headwind.

Strain is the stretch (structural, warp and weft) links' l/l₀ − 1, measured after every step as a player sees it.
Bounds, from the issue: drapes ≤ 3 % at every step and ≤ 1.5 % over the last 30 steps (at rest), the pushed sheet
≤ 2 %, the cape ≤ 5 % in its headwind and ≤ 2 % elsewhere. The default cotton and silk carry Provot's limit on
their stretch links at 1.2 % and 2 % (``ClothMaterial.stretch_limit``), so the ≤ 3 % bounds also hold by
construction; what each test adds is that the solver itself does the work: the 99th percentile of the strain the
solve and the collisions leave *before* the limit runs is under 1 % (measured 0.11–0.28 % for the drapes; the limit
catches the few links a violent contact overstretches, and a limit doing the solver's work would show here).
Measured values: docs/models.md, "Stiffness".

Penetration: no particle inside a collider's own shape grown by its margin (``Collider.thickness``), to 0.1 mm
(the contact projection lands particles on the margin-plus-cloth-thickness surface exactly; 0.1 mm allows for a
particle moved by the limit after the contacts, which moves particles by at most the few % of a link's excess).
"""
from __future__ import annotations

import numpy as np
import pytest

from loom.benchmarks import stiffness
from loom.components import STRETCH, Cloth, Collider, Cylinder, Plane, Sphere, Transform, Wind
from loom.engine import App, Stage
from loom.systems import DefaultPlugins

REST_STEPS = 30


def _inside(app: App) -> float:
    """Deepest a particle lies inside any sphere, cylinder or plane collider grown by its margin [m] (0: none)."""
    deepest = 0.0
    for _, collider, transform in app.query(Collider, Transform):
        shape = collider.shape
        for _, cloth in app.query(Cloth):
            local = (cloth.x - transform.position) @ transform.rotation      # rows: points in the collider's frame
            if isinstance(shape, Sphere):
                sdf = np.linalg.norm(local, axis=1) - shape.radius
            elif isinstance(shape, Cylinder):
                radial = np.hypot(local[:, 0], local[:, 2]) - shape.radius
                axial = np.abs(local[:, 1]) - shape.half_height
                outside = np.hypot(np.maximum(radial, 0.0), np.maximum(axial, 0.0))
                sdf = np.minimum(np.maximum(radial, axial), 0.0) + outside
            elif isinstance(shape, Plane):
                sdf = local @ np.asarray(shape.normal)
            else:
                continue
            deepest = max(deepest, float((collider.thickness - sdf).max()))
    return deepest


def _run(build, steps: int, drive=None, substeps: int = 16) -> dict:
    """Step the scene ``build`` makes with the default App and cloth; strain after every step, the solve's strain
    before the stretch limit at each step's last substep, and the deepest penetration."""
    app = App(dt=1 / 60, substeps=substeps)
    app.add_plugin(DefaultPlugins)
    built = build(app)
    drive = built if callable(built) else drive
    before: list[np.ndarray] = []

    def measure(app: App, h: float) -> None:
        if app.clock.substep_index == app.clock.substeps - 1:
            before.append(np.concatenate([c.strain(STRETCH) for _, c in app.query(Cloth)]))
    app.add_system(measure, Stage.SUBSTEP, after="settle_yarns", before="limit_links")
    worst, calm, windy, inside = [], [], [], 0.0
    for step in range(steps):
        if drive is not None:
            drive(step)
        app.step()
        strain = np.concatenate([c.strain(STRETCH) for _, c in app.query(Cloth)])
        worst.append(float(strain.max()))
        blowing = any(w.active and np.linalg.norm(w.velocity) > 0 for _, w in app.query(Wind))
        (windy if blowing else calm).append(strain)
        inside = max(inside, _inside(app))
        assert all(np.isfinite(c.x).all() for _, c in app.query(Cloth))
        assert all(c.rejected_steps == 0 for _, c in app.query(Cloth))
    pre = np.concatenate(before)
    return {"worst": np.array(worst), "rest": max(worst[-REST_STEPS:]), "inside": inside,
            "calm": np.concatenate(calm) if calm else np.zeros(1), "windy": np.concatenate(windy) if windy else None,
            "pre_p99": float(np.percentile(pre, 99))}


@pytest.mark.parametrize("scene, steps", [("sphere", 180), ("table", 240)])
def test_a_64_sheet_draped_on_a_ball_or_a_table_stays_within_3_percent_and_rests_within_1_5(scene, steps):
    build = stiffness.SCENES[scene][0]
    result = _run(lambda app: build(app, 64), steps)
    assert result["worst"].max() <= 0.03, f"{scene}: {result['worst'].max():.2%} at step {result['worst'].argmax()}"
    assert result["rest"] <= 0.015, f"{scene}: {result['rest']:.2%} at rest"
    assert result["pre_p99"] < 0.01, f"{scene}: p99 {result['pre_p99']:.2%} before the stretch limit"
    assert result["inside"] <= 1e-4, f"{scene}: a particle {result['inside'] * 1000:.2f} mm inside a collider"


def test_a_128_tablecloth_at_the_drape_games_step_stays_within_3_percent_and_rests_within_1_5():
    """The drape game's scene at n = 128 (16,384 particles, self-collision) at the game's 8 substeps × 1 sweep: ≤ 3 %
    at every step, ≤ 1.5 % over the last 30 of 240 steps, nothing inside the table or the ball, and the solve alone
    keeps 99 % of links under 1 %. Measured: 1.2 % worst and at rest (cotton's stretch limit: where friction holds
    both ends of a link on the table's rim the solve leaves about 2 %, docs/models.md "What holds the 128² rim"),
    p99 0.7 %; before stop 38's 1.2 % limit, 2.0 % at rest."""
    from loom.games import drape
    result = _run(lambda app: drape.build_scene(app, n=128), 240, substeps=drape.SUBSTEPS)
    assert result["worst"].max() <= 0.03, f"{result['worst'].max():.2%} at step {result['worst'].argmax()}"
    assert result["rest"] <= 0.015, f"{result['rest']:.2%} at rest"
    assert result["pre_p99"] < 0.01, f"p99 {result['pre_p99']:.2%} before the stretch limit"
    assert result["inside"] <= 1e-4, f"a particle {result['inside'] * 1000:.2f} mm inside a collider"


def test_the_drape_games_tablecloth_comes_to_rest_within_1_5_percent_at_its_own_step():
    """The drape game as a player gets it (n = 48, 8 substeps, round table, ball, self-collision): from 8 s, when it
    has settled, no stretch link over 1.5 % for the next second (measured 0.77 %). Until stop 36 friction held a
    particle after the collisions against any pull, and links the drop left stretched between friction-held
    particles stayed so: 1.77 % for as long as it lay there (docs/models.md, "Friction after the collisions")."""
    from loom.games import drape
    app = App(dt=drape.DT, substeps=drape.SUBSTEPS, threads=1).add_plugin(DefaultPlugins)
    cloth = drape.build_scene(app, n=48)
    app.step(8 * 60)
    worst = 0.0
    for _ in range(60):
        app.step(1)
        worst = max(worst, float(cloth.strain(STRETCH).max()))
    app.close()
    assert worst <= 0.015, f"{worst:.2%} at rest"


def test_a_pinned_sheet_pushed_by_a_ball_stays_within_2_percent():
    """The sheet benchmark's sheet (a bare ClothMaterial: no stretch limit, tethers from the pinned corners), a
    0.25 m ball pushed 0.15 m into it: the solve alone keeps it within 2 % (measured 0.6 %; 2.9 % before yarns)."""
    drive = {}

    def build(app):
        drive["f"] = stiffness.pushed(app, 64)
    result = _run(build, 180, drive=lambda step: drive["f"](step))
    assert result["worst"].max() <= 0.02, f"pushed: {result['worst'].max():.2%}"
    assert result["inside"] <= 1e-4


def test_the_cape_games_cape_stays_within_2_percent_out_of_its_headwind_and_5_in_it():
    """The cape game's scripted run at its own step (``games.cape.SUBSTEPS``), silk cape, wind zone at 11–15 m:
    ≤ 2 % out of the wind and ≤ 5 % in it (the issue's bounds), 99 % of links within 2 % in the wind. Measured:
    2.0 % worst in and out of the wind (the silk's stretch limit), p99 1.5 % in the wind; the solve alone leaves
    p99 1.0 %. The frame the hero lands on his cape in the wind reached 5.2 % while the yarns' second pass and the
    limit could pull particles squeezed out from under his feet back under them (``environment.HELD``)."""
    from loom.games import cape
    result = _run(cape.build_scene, 570, substeps=cape.SUBSTEPS)
    assert result["windy"] is not None, "the run never reached the headwind"
    assert result["calm"].max() <= 0.02, f"calm: {result['calm'].max():.2%}"
    assert result["windy"].max() <= 0.05, f"headwind: {result['windy'].max():.2%}"
    assert np.percentile(result["windy"], 99) <= 0.02
    assert result["pre_p99"] < 0.02, f"cape: p99 {result['pre_p99']:.2%} before the stretch limit"
    assert result["inside"] <= 1e-4
