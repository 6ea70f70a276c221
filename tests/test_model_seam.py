"""The model seam: one registry of models, one index of cloths by model, per-cloth scratch that leaves at despawn."""
from __future__ import annotations

import gc
import pickle
import tracemalloc
from dataclasses import dataclass

import numpy as np
import pymunk
import pytest

from loom.components import (MODELS, Cloth, Collider, ImplicitSettings, MassSpringSettings, Pin, Plane,
                             RigidBody2D, Transform, VerletSettings, Wind)
from loom.engine import Stage, mesh
from loom.systems import DefaultPlugins, ClothSet, model_names, model_plugins, register_model
from loom.systems.shared.conditions import uses_model
from loom.systems.shared.model_index import cloths_of, clothes_of, models_in_use


# --- a plugin author's own model: toy cloths sink at settings.speed, nothing else ------------------------
@dataclass(frozen=True)
class ToySettings:
    speed: float = 1.0
    """Sinking speed [m/s]."""


def sink_toys(app, h):
    for _, cloth in cloths_of(app, "sinker"):
        speed = cloth.settings.speed
        cloth.x_prev[:] = cloth.x
        cloth.x[:, 1] -= speed * h
        cloth.v[:] = 0.0
        cloth.v[:, 1] = -speed


class ToyPlugin:
    def build(self, app):
        app.add_system(sink_toys, Stage.SUBSTEP, in_set=ClothSet.PREDICT, run_if=uses_model("sinker"))


register_model("sinker", ToyPlugin, settings=ToySettings)     # idempotent: a second identical call is a no-op

BUILT_IN = ("xpbd", "verlet", "mass_spring", "implicit")


def test_registry_lists_the_four_models_and_default_plugins_hold_theirs():
    assert model_names()[:4] == BUILT_IN == MODELS
    assert "sinker" in model_names()
    members = DefaultPlugins.members()
    for name in BUILT_IN:
        for plugin in model_plugins(name).members():
            assert plugin in members, f"{name}'s {plugin} is not in DefaultPlugins"
    assert "ToyPlugin" not in members                           # a registered model is added by the game


def test_unknown_model_is_a_value_error_naming_field_value_and_known_names():
    with pytest.raises(ValueError, match=r"Cloth\.model = 'pbd': expected one of xpbd, verlet, mass_spring, "
                                         r"implicit, .*sinker"):
        Cloth.from_mesh(mesh.grid(3, 3, 1.0, 1.0), model="pbd")
    with pytest.raises(ValueError, match=r"model = 'pbd': not a registered model; known: xpbd, verlet"):
        model_plugins("pbd")


def test_register_model_refuses_a_second_different_registration():
    assert register_model("sinker", ToyPlugin, settings=ToySettings).plugins == (ToyPlugin,)
    with pytest.raises(ValueError, match=r"model 'sinker' is already registered"):
        register_model("sinker", ToyPlugin, settings=VerletSettings)
    with pytest.raises(ValueError, match=r"model 'verlet' is already registered"):
        register_model("verlet", ToyPlugin)
    with pytest.raises(ValueError, match=r"register_settings model = 'not a name'"):
        register_model("not a name", ToyPlugin)
    with pytest.raises(ValueError, match=r"give the plugin"):
        register_model("lonely")


def test_a_registered_model_is_spawned_validated_and_stepped(make_app):
    app = make_app(substeps=4)
    app.add_plugin(model_plugins("sinker"))
    sheet = mesh.grid(4, 4, 1.0, 1.0, plane="xz")
    toy = Cloth.from_mesh(sheet, model="sinker", settings=ToySettings(speed=2.0))
    default = Cloth.from_mesh(sheet, model="sinker")
    falling = Cloth.from_mesh(sheet)                             # xpbd beside it
    app.spawn(toy)
    app.spawn(default)
    app.spawn(falling)
    assert toy.substepped and toy.constraint_count == toy.link_count
    assert default.settings == ToySettings()
    with pytest.raises(TypeError, match=r"model 'sinker' expects ToySettings"):
        Cloth.from_mesh(sheet, model="sinker", settings=VerletSettings())
    start = toy.x.copy()
    app.step(60)                                                  # 1 s
    np.testing.assert_allclose(toy.x[:, 1], start[:, 1] - 2.0, atol=1e-9)
    np.testing.assert_allclose(default.x[:, 1], start[:, 1] - 1.0, atol=1e-9)
    np.testing.assert_array_equal(toy.x[:, [0, 2]], start[:, [0, 2]])
    assert falling.x[:, 1].mean() < -3.0                          # gravity moved the xpbd cloth, not sink_toys


def test_the_index_follows_spawns_replacements_and_despawns(new_app):
    app = new_app()
    sheet = mesh.grid(3, 3, 1.0, 1.0)
    a = app.spawn(Cloth.from_mesh(sheet, model="verlet"))
    b = app.spawn(Cloth.from_mesh(sheet))
    assert [e for e, _ in cloths_of(app, "verlet")] == [a]
    assert clothes_of(app, "xpbd") == [app.get(b, Cloth)]
    assert cloths_of(app, "implicit") == [] and not uses_model("implicit")(app)
    app.add_component(b, Cloth.from_mesh(sheet, model="implicit"))    # a model switch replaces the component
    assert [e for e, _ in cloths_of(app, "implicit")] == [b] and cloths_of(app, "xpbd") == []
    assert models_in_use(app) == ["verlet", "implicit"]
    app.despawn(a)
    assert cloths_of(app, "verlet") == [] and not uses_model("verlet")(app)


def test_a_cloths_model_is_fixed_once_built():
    cloth = Cloth.from_mesh(mesh.grid(3, 3, 1.0, 1.0))
    cloth.model = "xpbd"                                        # the same value: allowed
    with pytest.raises(TypeError, match=r"Cloth\.model = 'verlet': a cloth's model is fixed"):
        cloth.model = "verlet"


# --- spawn and despawn 1,000 cloths of every model: nothing grows -------------------------------------
SETTINGS = {"verlet": VerletSettings(), "mass_spring": MassSpringSettings(integrator="rk4"),
            "implicit": ImplicitSettings(), "sinker": ToySettings(), "xpbd": None}
BATCH = 100
BATCHES = 10                                                    # 1,000 cloths a round


def _containers(app) -> dict[str, int]:
    """Length of every dict, list, set and tuple the App's resources hold (three attribute levels down),
    by path, plus the world's entity count and the App's despawn handlers."""
    out: dict[str, int] = {}
    seen: set[int] = set()

    def walk(path: str, value, depth: int) -> None:
        if id(value) in seen or isinstance(value, (np.ndarray, str, bytes, int, float, type)):
            return
        seen.add(id(value))
        if isinstance(value, (dict, list, set, tuple)):
            out[path] = len(value)
            if depth and isinstance(value, dict):
                for key, item in value.items():
                    if not isinstance(key, int):                 # entity-keyed entries are counted above
                        walk(f"{path}[{key!r}]", item, depth - 1)
            return
        if depth and hasattr(value, "__dict__") and type(value).__module__.startswith("loom."):
            for name, item in vars(value).items():
                walk(f"{path}.{name}", item, depth - 1)

    for cls, resource in app.resources.items():
        walk(cls.__name__, resource, 3)
    out["world entities"] = len(app.entities())
    out["despawn handlers"] = len(app._despawn_handlers)
    return out


def _round(app, model: str, sheet) -> None:
    """Spawn BATCHES × BATCH cloths of ``model`` (half pinned, one a round self-colliding) beside a pymunk
    body, step, despawn them all, step again."""
    plain = pickle.dumps(Cloth.from_mesh(sheet, model=model, settings=SETTINGS[model]))
    colliding = pickle.dumps(Cloth.from_mesh(sheet, model=model, settings=SETTINGS[model], self_collision=True))
    for batch in range(BATCHES):
        body = pymunk.Body(body_type=pymunk.Body.KINEMATIC)
        pymunk.Circle(body, 0.05)
        body.position = (5.0, 5.0)                               # far from the cloths
        entities = [app.spawn(RigidBody2D(body, depth=0.2))]
        for k in range(BATCH):
            cloth = pickle.loads(colliding if batch == k == 0 else plain)    # 0.2 ms, from_mesh 2.3 ms
            entities.append(app.spawn(cloth, Pin.corners(sheet, "top")) if k % 2 else app.spawn(cloth))
        app.step()
        for entity in entities:
            app.despawn(entity)
        app.step()


@pytest.mark.parametrize("model", (*BUILT_IN, "sinker"))
def test_spawning_and_despawning_1000_cloths_leaves_nothing_behind(make_app, model):
    app = make_app(substeps=2)
    if model == "sinker":
        app.add_plugin(model_plugins("sinker"))
    app.spawn(Wind(velocity=(2.0, 0.0, 0.0)))                   # wind scratch per cloth
    app.spawn(Collider(Plane()), Transform.from_2d(0.0, -2.0, 0.0, 0.0))    # the environment pass
    sheet = mesh.grid(3, 3, 0.2, 0.2, plane="xz", center=(0.0, 1.0, 0.0))
    _round(app, model, sheet)                                   # warm up: kernels compiled, batches built
    after_first = _containers(app)
    gc.collect()
    tracemalloc.start()
    try:
        _round(app, model, sheet)
        gc.collect()
        second = tracemalloc.get_traced_memory()[0]
        after_second = _containers(app)
        _round(app, model, sheet)
        gc.collect()
        third = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    after_third = _containers(app)
    assert after_second == after_first
    assert after_third == after_first
    live = set(app.entities())
    stale = {path: n for path, n in after_third.items() if n and path.split(".")[0] in
             {"VerletScratch", "MassSpringScratch", "ImplicitWorkspaces", "WindScratch", "StepSnapshot",
              "BodyPoses"} and path.rsplit(".", 1)[-1] in {"tables", "states", "by_entity", "saved", "last",
                                                            "colliders"}}
    assert not stale, f"per-entity scratch left after every cloth was despawned: {stale} (live {sorted(live)})"
    # a kept entry per despawned cloth would be ≥ 100 B × 1,000; allow 64 KiB of unrelated noise
    assert third - second < 64 * 1024, f"traced memory grew {third - second} B over a round of 1,000 cloths"
