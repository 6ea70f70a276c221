"""Loom is a guest in an esper game: no public call changes esper's current world as the caller sees it, and Loom
can live in the game's own world (``App(world=...)``, ``app.processor()``) beside the game's processors.

The games here are written as esper's own docs write them: module-level esper functions, the game's own component
dataclasses (``Hero``, ``Velocity``) and processors, a fixed-step loop of its own, pymunk in pixels (y down)."""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import esper
import numpy as np
import pygame
import pymunk
import pytest

import loom
from loom.engine import App, Stage
from loom.files.replay import positions_digest
from loom.files.snapshot import SnapshotError, load_snapshot, save_snapshot
from loom.systems.pipeline.guard import Recovery

TICK = 1 / 60                                  # the game's physics step [s]
GROUND_Y = 400                                 # [px], y down
RUN = 150.0                                    # the hero's running speed [px/s] (1.5 m/s at 100 px/m)


# --- the game's own components.py ---------------------------------------------------------------------------------
@dataclass
class Hero:
    ticks: int = 0
    score: int = 0


@dataclass
class Velocity:
    x: float = 0.0                             # [px/s]


@dataclass
class PhysicsBody:
    body: pymunk.Body


@dataclass
class Level:
    name: str = "level 1"


@dataclass
class Enemy:
    hp: int = 3


@dataclass
class Score:
    """A game's own resource (for ``init_resource``)."""

    points: int = 0


# --- the game's own processors ----------------------------------------------------------------------------------
class ControlProcessor(esper.Processor):
    """The game's input, scripted: run right for 100 ticks, left for 100, right again."""

    def process(self, dt: float) -> None:
        for _, (hero, velocity, physics) in esper.get_components(Hero, Velocity, PhysicsBody):
            velocity.x = RUN if (hero.ticks // 100) % 2 == 0 else -RUN
            physics.body.velocity = (velocity.x, physics.body.velocity.y)
            hero.ticks += 1


class PhysicsProcessor(esper.Processor):
    """The game steps its own pymunk space, one tick per ``esper.process``."""

    def __init__(self, space: pymunk.Space) -> None:
        self.space = space

    def process(self, dt: float) -> None:
        self.space.step(dt)


ADDED_PROCESSORS: set[type] = set()
"""The processor types a test added to the game's world (removed after it)."""


def add_processor(processor: esper.Processor, priority: int) -> None:
    """``esper.add_processor``, remembered so the test's world is left clean."""
    ADDED_PROCESSORS.add(type(processor))
    esper.add_processor(processor, priority=priority)


def remove_processors() -> None:
    for processor_type in ADDED_PROCESSORS:
        esper.remove_processor(processor_type)


@pytest.fixture(params=["default", "game-level"])
def game_world(request):
    """The game's esper world, current during the test (esper's "default" one, or one of its own); emptied (and
    a non-default one deleted) afterwards, the default world made current again."""
    name = request.param
    esper.switch_world(name)
    yield name
    esper.switch_world(name)
    remove_processors()
    esper.clear_database()
    esper.switch_world("default")
    if name != "default":
        esper.delete_world(name)


def other_world(name: str) -> str:
    return "game-menu" if name == "default" else "default"


def hero_body(space: pymunk.Space | None = None, x: float = 200.0) -> pymunk.Body:
    """A 70 kg hero that never tips over, a 36 × 80 px box standing on the ground."""
    body = pymunk.Body(70.0, math.inf)
    body.position = (x, GROUND_Y - 40)
    shape = pymunk.Poly.create_box(body, (36, 80))
    if space is not None:
        space.add(body, shape)
    else:
        pymunk.Space().add(body, shape)
    return body


def game_space() -> pymunk.Space:
    space = pymunk.Space()
    space.gravity = (0, 981)                                       # [px/s²], y down
    ground = pymunk.Segment(space.static_body, (-2000, GROUND_Y + 4), (4000, GROUND_Y + 4), 4)
    ground.friction = 1.0
    space.add(ground)
    return space


# --- 1. no public call changes the caller's world -------------------------------------------------------------------
def public_app_methods() -> set[str]:
    names = {name for name, value in vars(App).items()
             if not name.startswith("_") and (callable(value) or isinstance(value, property))}
    return names | {"__init__"}


@pytest.mark.parametrize("where", ["private", "another world"])
def test_no_public_call_changes_the_callers_current_world(game_world, new_app, tmp_path, where):
    hero = esper.create_entity(Hero(), Velocity())                 # the game's hero, in the game's world
    covered: list[str] = []

    def check(name: str) -> None:
        covered.append(name)
        assert esper.current_world == game_world, f"{name} left esper's current world at {esper.current_world!r}"
        assert esper.component_for_entity(hero, Hero).ticks == 0, f"the game's own lookup failed after {name}"

    def call(what: str, function, *args, **kwargs):
        result = function(*args, **kwargs)
        check(what)
        return result

    def refuse(what: str, error: type[Exception], function, *args) -> None:
        with pytest.raises(error):
            function(*args)
        check(f"{what} (raising)")

    world = None if where == "private" else other_world(game_world)
    app = call("__init__", new_app, world=world, dt=TICK, substeps=4, threads=1)
    assert app.world != game_world
    call("set_threads", app.set_threads, 1)
    call("tuner", lambda: app.tuner)
    call("add_plugin", app.add_plugin, loom.DefaultPlugins)
    assert call("add_plugins_from_entry_points", app.add_plugins_from_entry_points, "loom.no-such-group") == []
    call("plugins", lambda: app.plugins)
    call("insert_resource", app.insert_resource, loom.Gravity((0.0, -9.81, 0.0)))
    call("init_resource", app.init_resource, Score)
    call("resource", app.resource, Score)
    refuse("resource", KeyError, app.resource, Level)
    carrier = call("spawn", app.spawn, loom.RigidBody2D(hero_body(x=1.0), scale=100.0, depth=0.3))
    cape = call("loom.cape", loom.cape, app, carrier)
    flag = call("loom.flag", loom.flag, app, (3.0, 2.0))
    call("Flag.wind_zone", flag.wind_zone, (6.0, 0.0, 1.0))
    call("Cape.face", cape.face, -1)
    extra = call("spawn", app.spawn, loom.Transform())
    call("get", app.get, cape.entity, loom.Cloth)
    refuse("get", KeyError, app.get, extra, loom.Cloth)
    call("try_get", app.try_get, extra, loom.Cloth)
    call("add_component", app.add_component, extra, Enemy())
    refuse("add_component", KeyError, app.add_component, 10_000, Enemy())
    call("remove_component", app.remove_component, extra, Enemy)
    call("query", app.query, loom.Cloth)
    call("query", app.query, loom.Cloth, loom.Pin)
    call("entities", app.entities)
    call("rest", app.rest, loom.Cloth, ())
    call("resting", lambda: app.resting)
    ticks: list[int] = []
    call("add_system", app.add_system, lambda a, dt: ticks.append(len(a.query(loom.Cloth))), Stage.POST_STEP,
         name="count")
    call("add_systems", app.add_systems, Stage.RENDER, lambda a, dt: None)
    call("configure_sets", app.configure_sets, Stage.RENDER, "first", "second")
    call("replace_system", app.replace_system, "count", lambda a, dt: ticks.append(len(a.query(loom.Cloth))),
         Stage.POST_STEP)
    call("on", app.on, "hit", lambda **payload: app.query(loom.Cloth))
    call("emit", app.emit, "hit", strength=1)
    call("on_despawn", app.on_despawn, lambda entity: None)
    call("add_reporter", app.add_reporter, lambda a: {"cloths": len(a.query(loom.Cloth))})
    call("step", app.step, 2)
    call("update", app.update, TICK)
    call("run_stage", app.run_stage, Stage.RENDER, TICK)
    assert ticks == [2, 2, 2]
    assert call("report", app.report)["cloths"] == 2
    call("processor", lambda: app.processor().process(TICK))
    assert app.clock.step_index == 4
    surface = pygame.Surface((64, 48))
    call("SoftRenderer.draw (an App)", loom.SoftRenderer((64, 48)).draw, app, surface, loom.Camera())
    call("SoftRenderer.draw (a bare Cloth)", loom.SoftRenderer((64, 48)).draw, cape.cloth, surface, loom.Camera())
    call("save_snapshot", save_snapshot, app, tmp_path / "s.loom")
    call("load_snapshot", load_snapshot, app, tmp_path / "s.loom")
    call("positions_digest", positions_digest, app)
    call("run", app.run, ["--headless", "--frames", "2", "--report", "json"])

    def failing(a, dt):
        a.query(loom.Cloth)
        raise ArithmeticError("a system failed")
    app.add_system(failing, Stage.PRE_STEP)
    refuse("step", ArithmeticError, app.step)
    refuse("update", ArithmeticError, app.update, TICK)
    app.schedule.remove(Stage.PRE_STEP, "failing")
    call("despawn", app.despawn, extra)
    refuse("despawn", KeyError, app.despawn, extra)
    call("close", app.close)
    refuse("spawn after close", RuntimeError, app.spawn, loom.Transform())
    refuse("query after close", RuntimeError, app.query, loom.Cloth)
    missing = public_app_methods() - {name.split(" ")[0] for name in covered}
    assert not missing, f"public App methods this test never called: {sorted(missing)}"
    if world is not None:
        assert world in esper.list_worlds(), "close() deleted a world that is not Loom's"


def test_an_app_in_the_callers_own_world_switches_nothing(game_world, new_app):
    switches = []
    original = esper.switch_world
    app = new_app(plugins=True, world=game_world, dt=TICK, substeps=4, threads=1)
    app.spawn(loom.Cloth.from_mesh(loom.mesh.grid(6, 6, 0.5, 0.5, center=(0.0, 1.0, 0.0))))
    esper.switch_world = lambda name: (switches.append(name), original(name))[1]
    try:
        app.step(3)
        app.update(TICK)
        app.query(loom.Cloth)
    finally:
        esper.switch_world = original
    assert switches == [] and esper.current_world == game_world


# --- 2. an esper game with a cape on its hero and a flag, both ways ---------------------------------------------------
def run_esper_game(world_name: str, style: str, new_app, frames: int = 300) -> dict:
    """The game: its hero (Hero, Velocity, PhysicsBody) runs right, left, right; Loom puts a cape on him and a flag
    in wind. style "private": Loom in its own world, one app.step(dt=TICK) after the game's esper.process;
    "shared": Loom in the game's world, its components on the game's entities, run by app.processor()."""
    space = game_space()
    body = hero_body(space)
    level = esper.create_entity(Level())
    hero = esper.create_entity(Hero(), Velocity(), PhysicsBody(body))
    esper.create_entity(Enemy(), Velocity(-20.0))
    add_processor(ControlProcessor(), priority=10)
    add_processor(PhysicsProcessor(space), priority=5)

    app = new_app(plugins=True, dt=TICK, substeps=6, world=world_name if style == "shared" else None)
    app.insert_resource(loom.PixelSpace(100, origin=(0, GROUND_Y)))
    if style == "shared":                                          # Loom's components on the game's entities
        app.add_component(level, loom.RigidBody2D(space.static_body))
        app.add_component(hero, loom.RigidBody2D(body, depth=0.3))
        carrier = hero
        add_processor(app.processor(fixed_step=True), priority=0)         # after the game's physics
    else:
        app.spawn(loom.RigidBody2D(space.static_body))
        carrier = app.spawn(loom.RigidBody2D(body, depth=0.3))
    cape = loom.cape(app, carrier)
    flag = loom.flag(app, (700, 150))
    flag.wind_zone((6.0, 0.0, 1.0))
    refused = []
    app.on("step_rejected", lambda **event: refused.append(event))
    cape_start, flag_start = cape.cloth.x.copy(), flag.cloth.x.copy()
    hero_x, cape_x = [], []
    cached = None
    for tick in range(frames):                                     # the game's fixed-step loop
        esper.process(TICK)                                        # the game's processors (and Loom's, shared)
        if style == "private":
            app.step(dt=TICK)
        # the game's own esper calls, every tick, with no workaround line
        assert esper.current_world == world_name
        assert esper.component_for_entity(hero, Hero).ticks == tick + 1
        movers = esper.get_components(Hero, Velocity)
        assert [entity for entity, _ in movers] == [hero]
        if tick >= 10:                                             # Loom adds or removes nothing per frame:
            assert movers is cached, f"tick {tick}: the game's cached query was dropped"
        cached = movers
        hero_x.append(body.position.x / 100)
        cape_x.append(float(cape.cloth.x[:, 0].mean()))
    assert app.clock.step_index == frames
    return {"app": app, "cape": cape, "flag": flag, "refused": refused, "hero": hero, "hero_x": np.array(hero_x),
            "cape_x": np.array(cape_x), "cape_start": cape_start, "flag_start": flag_start}


@pytest.mark.parametrize("style", ["private", "shared"])
def test_an_esper_game_runs_with_a_cape_and_a_flag(game_world, new_app, style):
    run = run_esper_game(game_world, style, new_app)
    cape, flag, app = run["cape"], run["flag"], run["app"]
    for cloth in (cape.cloth, flag.cloth):
        assert np.isfinite(cloth.x).all() and np.isfinite(cloth.v).all()
        assert cloth.rejected_steps == 0
    assert run["refused"] == [] and app.resource(Recovery).restores == 0, "a step was refused"
    hero_x, cape_x = run["hero_x"], run["cape_x"]
    assert hero_x[99] - hero_x[0] > 1.2 and hero_x[199] - hero_x[99] < -1.2, "the game's hero did not run"
    assert cape_x[99] - cape_x[0] > 1.0 and cape_x[199] - cape_x[99] < -1.0, "the cape did not follow the hero"
    assert abs(cape_x[-1] - hero_x[-1]) < 0.5, "the cape is not on the hero"
    assert np.abs(flag.cloth.x - run["flag_start"]).max() > 0.05, "the flag did not move in the wind"
    if style == "shared":                                          # the game sees Loom's components on its hero
        assert isinstance(esper.component_for_entity(run["hero"], loom.RigidBody2D), loom.RigidBody2D)
        assert {id(c) for _, c in esper.get_component(loom.Cloth)} == {id(cape.cloth), id(flag.cloth)}
    else:
        assert esper.get_component(loom.Cloth) == [], "Loom's cloths belong in its private world"


def test_the_private_and_shared_games_step_the_same_cloth(game_world, new_app):
    """Where Loom lives changes no number: the same game gives the same cape and flag in both styles."""
    shared = run_esper_game(game_world, "shared", new_app, frames=60)
    shared["app"].close()
    remove_processors()
    esper.clear_database()
    private = run_esper_game(game_world, "private", new_app, frames=60)
    assert np.array_equal(shared["cape"].cloth.x, private["cape"].cloth.x)
    assert np.array_equal(shared["flag"].cloth.x, private["flag"].cloth.x)


def test_a_game_puts_cloth_and_pin_on_its_own_entity(game_world, new_app):
    """In the game's world the game adds Loom's Cloth and Pin to an entity of its own, and Loom's processor
    (``app.update(dt)`` per ``esper.process(dt)``) steps it beside the game's processors."""
    banner = esper.create_entity(Level("banner"))
    app = new_app(plugins=True, world=game_world, dt=TICK, substeps=4, threads=1)
    sheet = loom.mesh.grid(6, 6, 0.5, 0.5, center=(0.0, 1.0, 0.0), plane="xz")     # horizontal: it will sag
    app.add_component(banner, loom.Cloth.from_mesh(sheet))
    app.add_component(banner, loom.Pin.edge(sheet, "top"))
    add_processor(app.processor(), priority=0)
    cloth = esper.component_for_entity(banner, loom.Cloth)
    start = cloth.x.copy()
    pinned = loom.Pin.edge(sheet, "top").index
    for _ in range(60):
        esper.process(TICK)                                       # one frame: app.update(TICK), one step
    assert app.clock.step_index == 60
    assert np.array_equal(cloth.x[pinned], start[pinned]), "the pinned edge moved"
    assert cloth.x[:, 1].min() < start[:, 1].min() - 0.1, "the free edge did not fall"
    assert esper.component_for_entity(banner, Level).name == "banner"


# --- the shared world: close, one App per world, the processor --------------------------------------------------------
def test_close_in_a_shared_world_leaves_the_game_its_world_and_entities(game_world, new_app):
    hero = esper.create_entity(Hero(score=5))
    app = new_app(plugins=True, world=game_world)
    flag = loom.flag(app, (0.0, 2.0))
    processor = app.processor()
    with pytest.raises(ValueError, match="another open App"):
        App(world=game_world)
    app.close()
    assert game_world in esper.list_worlds() and esper.current_world == game_world
    assert esper.component_for_entity(hero, Hero).score == 5
    assert esper.component_for_entity(flag.entity, loom.Cloth) is flag.cloth
    processor.process(TICK)                                        # a closed App's processor does nothing
    with pytest.raises(RuntimeError, match="close"):
        app.step()
    second = new_app(world=game_world)                             # the world may host a new App now
    assert second.world == game_world


def test_app_world_and_processor_arguments_are_checked(new_app):
    with pytest.raises(TypeError, match="world"):
        App(world=3)
    with pytest.raises(ValueError, match="world"):
        App(world="")
    processor = new_app(plugins=True).processor()
    assert isinstance(processor, esper.Processor)
    with pytest.raises(TypeError, match=r"esper\.process\(dt\)"):
        processor.process()


def test_a_private_world_never_takes_a_name_the_game_uses(new_app):
    taken = new_app().world.replace("loom-app-", "")
    name = f"loom-app-{int(taken) + 1}"
    esper.switch_world(name)
    esper.switch_world("default")
    try:
        assert new_app().world != name
    finally:
        esper.delete_world(name)


# --- snapshots in a shared world: Loom's part only --------------------------------------------------------------------
def test_a_shared_world_snapshot_restores_loom_and_leaves_the_games_data(game_world, new_app, tmp_path):
    path = tmp_path / "loom.snap"
    body = pymunk.Body(body_type=pymunk.Body.KINEMATIC)           # the game moves its hero itself
    body.position = (200, 300)
    pymunk.Space().add(body, pymunk.Poly.create_box(body, (36, 80)))
    hero = esper.create_entity(Hero(score=1), Velocity(RUN))
    enemy = esper.create_entity(Enemy(), Velocity(-20.0))
    app = new_app(plugins=True, world=game_world, dt=TICK, substeps=4, threads=1)
    app.insert_resource(loom.PixelSpace(100, origin=(0, GROUND_Y)))
    app.add_component(hero, loom.RigidBody2D(body, depth=0.3))
    cape = loom.cape(app, hero)
    flag = loom.flag(app, (600, 150))
    flag.wind_zone((6.0, 0.0, 1.0))

    def tick(n: int) -> None:
        for _ in range(n):
            body.velocity = (RUN, 0.0)
            body.position = (body.position.x + RUN * TICK, body.position.y)
            app.step(dt=TICK)

    tick(30)
    save_snapshot(app, path)
    game_save = (body.position, body.velocity)                      # the game saves its own state its own way
    at_save = cape.cloth.x.copy(), flag.cloth.x.copy()
    tick(30)
    expected = cape.cloth.x.copy(), flag.cloth.x.copy()
    # after the save: the game changes its data, Loom gets a new entity and a component on the game's enemy
    esper.component_for_entity(hero, Hero).score = 99
    late = app.spawn(loom.Cloth.from_mesh(loom.mesh.grid(4, 4, 0.3, 0.3)))
    app.add_component(enemy, loom.Transform())
    hero_component = esper.component_for_entity(hero, Hero)
    body.position, body.velocity = game_save                        # the game loads its state ...
    load_snapshot(app, path)                                        # ... and Loom's
    assert esper.current_world == game_world
    assert np.array_equal(cape.cloth.x, at_save[0]) and np.array_equal(flag.cloth.x, at_save[1])
    assert esper.component_for_entity(hero, Hero) is hero_component and hero_component.score == 99, \
        "the game's own component was restored or replaced"
    assert esper.component_for_entity(enemy, Velocity).x == -20.0 and esper.has_component(enemy, Enemy)
    assert not esper.has_component(enemy, loom.Transform), "a Loom component added after the save stayed"
    assert not esper.entity_exists(late), "a Loom entity spawned after the save stayed"
    assert app.get(hero, loom.RigidBody2D).body is body, "the game's pymunk body was replaced"
    newcomer = esper.create_entity(Enemy())
    assert newcomer > max(late, enemy, flag.entity), "esper's entity counter of the game was rewound"
    tick(30)
    assert np.array_equal(cape.cloth.x, expected[0]) and np.array_equal(flag.cloth.x, expected[1]), \
        "resuming from a shared-world snapshot is not bit-identical"


def test_a_shared_world_snapshot_refuses_what_it_cannot_restore(game_world, new_app, tmp_path):
    hero = esper.create_entity(Hero())
    app = new_app(plugins=True, world=game_world)
    app.add_component(hero, loom.Cloth.from_mesh(loom.mesh.grid(4, 4, 0.3, 0.3)))
    flag = loom.flag(app, (0.0, 2.0))
    save_snapshot(app, tmp_path / "shared.loom")
    private = new_app(plugins=True)
    with pytest.raises(SnapshotError, match="game's esper world"):
        load_snapshot(private, tmp_path / "shared.loom")
    save_snapshot(private, tmp_path / "private.loom")
    with pytest.raises(SnapshotError, match="private world"):
        load_snapshot(app, tmp_path / "private.loom")
    app.despawn(flag.entity)
    with pytest.raises(SnapshotError, match=f"entity {flag.entity} is not in the game's world"):
        load_snapshot(app, tmp_path / "shared.loom")
    assert esper.has_component(hero, Hero) and esper.current_world == game_world


# --- 3. item 4's warnings: milliseconds for seconds; no integrator ----------------------------------------------------
def caught(function) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as found:
        warnings.simplefilter("always")
        function()
    return [w for w in found if issubclass(w.category, RuntimeWarning)]


def test_update_with_milliseconds_warns_once(new_app):
    app = new_app(plugins=True)
    assert caught(lambda: [app.update(TICK), app.update(0.25)]) == []
    first = caught(lambda: app.update(16))                          # clock.tick(60) without / 1000
    assert len(first) == 1 and "milliseconds" in str(first[0].message)
    assert first[0].filename == __file__, "the warning points at the game's line"
    assert caught(lambda: app.update(16)) == [], "warned twice"
    assert app.clock.step_index == 1 + 4 + 4 + 4, "a slow frame still runs as asked (at most max_steps)"


def test_stepping_cloths_without_an_integrator_warns_once_naming_default_plugins(new_app):
    bare = new_app()
    assert caught(lambda: bare.step(2)) == [], "no cloth, nothing to warn about"
    cloth = loom.Cloth.from_mesh(loom.mesh.grid(5, 5, 0.5, 0.5, center=(0.0, 1.0, 0.0)))
    bare.spawn(cloth)
    found = caught(lambda: bare.step(2))
    assert len(found) == 1 and "DefaultPlugins" in str(found[0].message)
    assert found[0].filename == __file__
    assert caught(lambda: bare.step(2)) == []
    assert caught(lambda: bare.update(TICK)) == []
    assert np.isfinite(cloth.x).all()

    full = new_app(plugins=True)
    full.spawn(loom.Cloth.from_mesh(loom.mesh.grid(5, 5, 0.5, 0.5, center=(0.0, 1.0, 0.0))))
    assert caught(lambda: full.step(2)) == []

    own = new_app()                                                 # a game's own integrator, then none
    own.spawn(loom.Cloth.from_mesh(loom.mesh.grid(5, 5, 0.5, 0.5, center=(0.0, 1.0, 0.0))))
    own.add_system(lambda app, h: None, Stage.SUBSTEP, name="my_integrator", in_set=loom.ClothSet.PREDICT)
    assert caught(lambda: own.step(2)) == []
    own.schedule.set_enabled(Stage.SUBSTEP, "my_integrator", False)   # the schedule changed: checked again
    found = caught(lambda: own.step())
    assert len(found) == 1 and "DefaultPlugins" in str(found[0].message)

