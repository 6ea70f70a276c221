"""Calls into the App from inside a step: nested steps are refused, structural changes wait for the step's end."""
from __future__ import annotations

import numpy as np
import pytest

from loom.components import Cloth, Pin, Transform, Wind
from loom.engine import App, Stage, mesh
from loom.systems import ClothSet
from loom.systems.pipeline.guard import StepSnapshot

NESTED = r"App\.step called inside a step \(from a system or event handler\)"


def sheet_cloth(x: float = 0.0) -> tuple[Cloth, Pin]:
    """A 4×4, 0.4 m xpbd sheet centred at (x, 1, 0), pinned at its top corners."""
    sheet = mesh.grid(4, 4, 0.4, 0.4, center=(x, 1.0, 0.0), plane="xz")
    return Cloth.from_mesh(sheet, "cotton"), Pin.corners(sheet, "top")


def run_inside(app: App, action, via: str, stage: Stage = Stage.SUBSTEP, once: bool = True) -> list:
    """Run ``action(app)`` during the next step — from a system of ``stage`` or from an event handler that a
    POST_STEP system triggers (``via`` = "system" or "handler"); return the list of its results."""
    results: list = []
    state = {"done": False}

    def act() -> None:
        if once and state["done"]:
            return
        state["done"] = True
        results.append(action(app))

    if via == "system":
        app.add_system(lambda app, dt: act(), stage, name="act")
    else:
        app.on("poke", lambda **_: act())
        app.add_system(lambda app, dt: app.emit("poke"), Stage.POST_STEP, name="poke", in_set=ClothSet.CLEAR)
    return results


@pytest.fixture
def app(make_app):
    made = make_app(substeps=2)
    made.spawn(*sheet_cloth())
    return made


# --- nested steps -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("via", ["system", "handler"])
@pytest.mark.parametrize("call", ["step", "update"])
def test_a_step_or_update_from_inside_a_step_raises_a_clear_error_and_the_app_steps_on(app, via, call):
    run_inside(app, lambda app: getattr(app, call)(1 if call == "step" else 1 / 60), via)
    message = NESTED.replace("step", call, 1) if call == "update" else NESTED
    with pytest.raises(RuntimeError, match=message):
        app.step()
    app.step(2)                                                    # the App is usable again
    assert app.clock.step_index == 2


def test_update_from_an_input_system_raises_instead_of_recursing(app):
    app.add_system(lambda app, dt: app.update(dt), Stage.INPUT, name="recurse")
    with pytest.raises(RuntimeError, match=r"App\.update called inside App\.update"):
        app.update(1 / 60)
    app.step()
    assert app.clock.step_index == 1


# --- spawn ------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("via", ["system", "handler"])
def test_a_cloth_spawned_during_a_substep_joins_at_the_end_of_the_step(app, via):
    cloth, pin = sheet_cloth(2.0)
    seen: list[int] = []
    spawned = run_inside(app, lambda app: app.spawn(cloth, pin), via)
    app.add_system(lambda app, dt: seen.append(len(app.query(Cloth))), Stage.POST_STEP, name="count",
                   in_set=ClothSet.CLEAR)
    app.step()
    entity = spawned[0]
    assert isinstance(entity, int) and seen == [1], "the step's systems all saw one cloth"
    assert app.get(entity, Cloth) is cloth and len(app.query(Cloth)) == 2
    start = cloth.x.copy()
    app.step(3)                                                   # and the new cloth simulates from then on
    assert np.isfinite(cloth.x).all() and cloth.x[:, 1].min() < start[:, 1].min()
    assert cloth.rejected_steps == 0
    assert seen == [1, 2, 2, 2]


def test_get_during_the_step_returns_the_queued_component(app):
    got = run_inside(app, lambda app: app.get(app.spawn(Transform(position=(1.0, 2.0, 3.0))), Transform), "system")
    app.step()
    assert tuple(got[0].position) == (1.0, 2.0, 3.0)


# --- despawn ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("via", ["system", "handler"])
def test_a_cloth_despawned_during_a_step_leaves_at_its_end(app, via):
    (entity, cloth), = app.query(Cloth)
    seen: list[int] = []
    run_inside(app, lambda app: app.despawn(entity), via, stage=Stage.PRE_STEP)
    app.add_system(lambda app, dt: seen.append(len(app.query(Cloth))), Stage.POST_STEP, name="count",
                   in_set=ClothSet.CLEAR)
    app.step()
    assert seen == [1] and app.try_get(entity, Cloth) is None and entity not in app.entities()
    assert entity not in app.resource(StepSnapshot).saved, "despawn handlers ran"
    app.step(2)
    assert seen == [1, 0, 0]


def test_despawning_a_missing_entity_or_twice_in_a_step_raises_key_error_at_the_call(app):
    (entity, _), = app.query(Cloth)
    errors: list[str] = []

    def twice(app: App) -> None:
        app.despawn(entity)
        for bad in (entity, 999):
            with pytest.raises(KeyError) as caught:
                app.despawn(bad)
            errors.append(str(caught.value))

    run_inside(app, twice, "system")
    app.step()
    assert len(errors) == 2 and all("does not exist" in e for e in errors)
    assert app.query(Cloth) == []


def test_spawn_then_despawn_in_one_step_apply_in_call_order(app):
    made = run_inside(app, lambda app: (lambda e: (app.despawn(e), e)[1])(app.spawn(Transform())), "system")
    app.step()
    assert made[0] not in app.entities() and app.query(Transform) == []


# --- add and remove components --------------------------------------------------------------------------------------

@pytest.mark.parametrize("via", ["system", "handler"])
def test_add_and_remove_component_during_a_step_take_effect_at_its_end(app, via):
    (entity, _), = app.query(Cloth)
    wind = Wind(velocity=(5.0, 0.0, 0.0))
    seen: list[tuple[bool, bool]] = []

    def change(app: App):
        app.add_component(entity, wind)
        return app.remove_component(entity, Pin)

    removed = run_inside(app, change, via)
    app.add_system(lambda app, dt: seen.append((bool(app.query(Wind)), bool(app.query(Pin)))), Stage.POST_STEP,
                   name="look", in_set=ClothSet.CLEAR)
    app.step()
    assert seen == [(False, True)], "the step ran with the components it started with"
    assert isinstance(removed[0], Pin)
    assert app.get(entity, Wind) is wind and app.try_get(entity, Pin) is None
    app.step()
    assert seen[-1] == (True, False)


def test_removing_a_missing_component_during_a_step_raises_key_error_at_the_call(app):
    (entity, _), = app.query(Cloth)
    run_inside(app, lambda app: app.remove_component(entity, Wind), "system")
    with pytest.raises(KeyError, match="has no Wind component"):
        app.step()
    app.step()                                                    # the App steps on, unchanged
    assert app.try_get(entity, Pin) is not None


def test_changes_queued_before_a_system_raises_are_still_applied(app):
    def spawn_then_fail(app: App, dt: float) -> None:
        app.spawn(Transform())
        raise ArithmeticError("boom")

    app.add_system(spawn_then_fail, Stage.PRE_STEP, name="fail")
    with pytest.raises(ArithmeticError):
        app.step()
    assert len(app.query(Transform)) == 1


# --- close ------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("use", ["step", "update", "spawn", "query"])
def test_an_app_used_after_close_raises_a_clear_error(new_app, use):
    app = new_app(plugins=True)
    app.spawn(*sheet_cloth())
    app.close()
    calls = {"step": lambda: app.step(), "update": lambda: app.update(1 / 60), "spawn": lambda: app.spawn(Transform()),
             "query": lambda: app.query(Cloth)}
    with pytest.raises(RuntimeError, match="close"):
        calls[use]()
    app.close()                                                   # closing twice is harmless


def test_close_from_inside_a_step_raises(app):
    run_inside(app, lambda app: app.close(), "system")
    with pytest.raises(RuntimeError, match=r"App\.close called inside a step"):
        app.step()
    app.step()
    assert app.clock.step_index == 1


SPAWN_EVERY_MODEL = r'''
import numpy as np
from loom.components import Cloth, Pin
from loom.engine import App, Stage, mesh
from loom.systems import DefaultPlugins

app = App(substeps=3)
app.add_plugin(DefaultPlugins)
models = ["xpbd", "verlet", "mass_spring", "implicit"]
for k, model in enumerate(models):
    sheet = mesh.grid(5, 5, 0.4, 0.4, center=(k, 1.0, 0.0), plane="xz")
    app.spawn(Cloth.from_mesh(sheet, "cotton", model=model), Pin.corners(sheet, "top"))
made = []

def spawn_every_model(app, h):
    # every substep of step 2: a cloth of each model, a different size each time, with and without a pin
    if app.clock.step_index != 2:
        return
    for k, model in enumerate(models):
        n = 3 + app.clock.substep_index + k
        sheet = mesh.grid(n, n, 0.3, 0.3, center=(k, 2.0, 1.0 + app.clock.substep_index), plane="xz")
        parts = [Cloth.from_mesh(sheet, "cotton", model=model)]
        if k % 2:
            parts.append(Pin.corners(sheet, "top"))
        made.append(app.spawn(*parts))

app.add_system(spawn_every_model, Stage.SUBSTEP, name="spawn_every_model")
app.step(6)
clothes = [c for _, c in app.query(Cloth)]
assert len(clothes) == 4 + 4 * 3, len(clothes)
assert all(np.isfinite(c.x).all() for c in clothes)
assert all(c.rejected_steps == 0 for c in clothes)
assert all(app.get(e, Cloth).x[:, 1].mean() < 2.0 for e in made), "the spawned cloths fall from step 3 on"
print("ok", len(made))
'''


def test_cloths_of_every_model_spawned_inside_substeps_join_after_the_step_and_the_process_survives():
    import os
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", SPAWN_EVERY_MODEL], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "SDL_AUDIODRIVER": "dummy", "NUMBA_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["ok", "12"]
