"""The guard refuses steps that explode, not only those that reach NaN, and restores a state broken between steps."""
from __future__ import annotations

import numpy as np
import pytest

from loom.components import Cloth, MassSpringSettings, Pin
from loom.engine import mesh
from loom.systems.pipeline.guard import Recovery


def test_guard_refuses_an_exploding_explicit_integrator_before_it_overflows(make_app):
    # k = 200 N/m at h = 1/240 s on a 64×64 sheet: h·ω ≈ 12, far past explicit Euler's limit;
    # the values grow through 1e60 while still finite, so a NaN check alone would never fire.
    app = make_app(substeps=4)
    sheet = mesh.grid(64, 64, 1.0, 1.0)
    cloth = Cloth.from_mesh(sheet, "cotton", model="mass_spring",
                            settings=MassSpringSettings(integrator="explicit_euler", strain_limit=None))
    app.spawn(cloth, Pin.corners(sheet, "top"))
    seen = []
    app.on("step_rejected", lambda **event: seen.append(event))
    app.step(30)
    assert cloth.rejected_steps > 0 and len(seen) == cloth.rejected_steps
    assert np.abs(cloth.x).max() <= 1e6 and np.abs(cloth.v).max() <= 1e4, "an exploded state was kept"


def test_guard_lets_the_game_pull_two_held_particles_apart(make_app):
    # a rope of three: two held particles the game drags 1 m apart (their link at 40× its rest
    # length) and one hanging from the second; the game put both ends there, so the step stands
    app = make_app()
    rope = Cloth.from_particles([[0.0, 0.0, 0.0], [0.025, 0.0, 0.0], [0.025, -0.025, 0.0]], mass=0.01,
                                links=[[0, 1], [1, 2]], tethers=False)
    pin = Pin(index=[0, 1])
    app.spawn(rope, pin)
    app.step(1)
    pin.target[1] += (1.0, 0.0, 0.0)
    app.step(3)
    assert rope.rejected_steps == 0
    assert np.array_equal(rope.x[pin.index], pin.target)
    assert abs(np.linalg.norm(rope.x[2] - rope.x[1]) - 0.025) < 1e-3, "the hanging particle follows its link"


# --- state broken between steps ---------------------------------------------------------------------------------------

MODELS = ("xpbd", "verlet", "mass_spring", "implicit")


def _sheet_app(make_app, model: str):
    """A 6×6, 0.5 m sheet of ``model`` pinned at its top corners, 4 substeps: (app, entity, cloth)."""
    app = make_app(substeps=4)
    sheet = mesh.grid(6, 6, 0.5, 0.5, center=(0.0, 1.0, 0.0), plane="xz")
    cloth = Cloth.from_mesh(sheet, "cotton", model=model)
    entity = app.spawn(cloth, Pin.corners(sheet, "top"))
    return app, entity, cloth


def _break(cloth: Cloth, field: str) -> None:
    if field == "x":
        cloth.x[5] = np.nan
    elif field == "v":
        cloth.v[3] = np.inf
    else:
        cloth.x_prev[2, 1] = -np.inf


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("field", ["x", "v"])
def test_a_state_broken_between_steps_is_restored_and_the_cloth_continues_exactly(make_app, model, field):
    clean, _, reference = _sheet_app(make_app, model)
    app, entity, cloth = _sheet_app(make_app, model)
    restored: list[dict] = []
    app.on("state_restored", lambda **event: restored.append(event))
    base = app.clock.substeps
    clean.step(10)
    app.step(10)
    assert np.array_equal(cloth.x, reference.x)
    _break(cloth, field)                                          # the user writes between two steps
    app.step()
    clean.step()
    assert np.isfinite(cloth.x).all() and np.isfinite(cloth.v).all()
    assert cloth.rejected_steps == 0
    assert np.array_equal(cloth.x, reference.x) and np.array_equal(cloth.v, reference.v), \
        "the cloth continues from the end of its last good step"
    app.step(5)
    clean.step(5)
    assert np.array_equal(cloth.x, reference.x) and np.array_equal(cloth.v, reference.v)
    recovery = app.resource(Recovery)
    assert restored == [{"entity": entity, "step": 10, "particle": 5 if field == "x" else 3, "field": field}]
    assert recovery.restores == 1 and cloth.rejected_steps == 0
    assert recovery.factor == 1 and app.clock.substeps == base, "a user's NaN is not a solver failure"


@pytest.mark.parametrize("model", ["verlet", "xpbd"])
def test_a_non_finite_x_prev_is_restored_too(make_app, model):
    clean, _, reference = _sheet_app(make_app, model)
    app, _, cloth = _sheet_app(make_app, model)
    clean.step(8)
    app.step(8)
    _break(cloth, "x_prev")
    app.step(3)
    clean.step(3)
    assert np.array_equal(cloth.x, reference.x) and app.resource(Recovery).restores == 1


def test_a_state_broken_again_and_again_is_restored_every_time_and_never_escalates(make_app):
    app, _, cloth = _sheet_app(make_app, "xpbd")
    base = app.clock.substeps
    app.step(2)
    for _ in range(12):
        cloth.v[:] = np.inf
        app.step()
        assert np.isfinite(cloth.v).all() and np.isfinite(cloth.x).all()
        assert cloth.rejected_steps == 0
    assert app.resource(Recovery).restores == 12 and app.resource(Recovery).factor == 1
    assert app.clock.substeps == base and cloth.rejected_steps == 0


def test_a_refused_step_then_a_broken_state_both_recover_and_the_multiplier_falls_back(make_app):
    app, _, cloth = _sheet_app(make_app, "xpbd")
    recovery = app.init_resource(Recovery)
    recovery.hold_steps = 2
    base = app.clock.substeps
    app.step(3)
    for _ in range(2):                                            # two refusals in a row: the factor rises
        cloth.force[4] = np.nan
        app.step()
    assert recovery.factor == 2 and app.clock.substeps == 2 * base
    cloth.x[7] = np.nan                                           # then the user breaks the state
    app.step(6)
    assert np.isfinite(cloth.x).all() and recovery.restores == 1
    assert recovery.factor == 1 and app.clock.substeps == base


def test_a_cloth_broken_before_its_first_step_raises_one_clear_error(make_app):
    app, entity, cloth = _sheet_app(make_app, "xpbd")
    cloth.x[5] = np.nan
    with pytest.raises(ValueError, match=rf"Cloth\.x\[5\] of entity {entity} = \[nan, nan, nan\] is not finite "
                                         r"before step 0 and the cloth has no good state"):
        app.step()
    cloth.x[5] = (0.0, 1.0, 0.0)                                  # fixed: the App steps on
    app.step(2)
    assert np.isfinite(cloth.x).all() and app.clock.step_index == 2
    assert cloth.rejected_steps == 0


def test_the_batched_guard_restores_a_broken_cloth_among_many(make_app):
    app = make_app(substeps=2)
    clothes = []
    for k in range(14):                                           # past BATCH_MIN_CLOTHS: one batched call
        sheet = mesh.grid(4, 4, 0.3, 0.3, center=(float(k), 1.0, 0.0), plane="xz")
        clothes.append(Cloth.from_mesh(sheet, "cotton"))
        app.spawn(clothes[-1], Pin.corners(sheet, "top"))
    app.step(3)
    before = [c.x.copy() for c in clothes]
    clothes[9].v[2] = np.nan
    app.step()
    assert all(np.isfinite(c.x).all() and np.isfinite(c.v).all() for c in clothes)
    assert all(c.rejected_steps == 0 for c in clothes)
    assert app.resource(Recovery).restores == 1
    assert not np.array_equal(clothes[9].x, before[9]), "the restored cloth steps on"
