"""App: one simulation — an esper world (its own, or the game's), its resources, its schedule and its fixed-step clock.

Typical use, headless::

    app = App(dt=1 / 60, substeps=16)
    app.add_plugin(DefaultPlugins)            # from loom.systems: the standard cloth pipeline
    cloth_entity = app.spawn(Cloth.from_mesh(mesh.grid(32, 32, 1.0, 1.0)), Pin(...))
    app.step(frames=60)                       # one second of simulated time
    app.get(cloth_entity, Cloth).x            # positions [m], (n, 3)

Inside a game loop of your own, call ``app.update(real_dt)`` once per frame instead: it takes as
many fixed steps as the elapsed time owes (at most ``max_steps``), so the cloth moves at the same
speed whatever the frame rate. A game that steps its own physics (pymunk) by a fixed tick calls
``app.step(dt=TICK)`` right after each ``space.step(TICK)`` instead, so Loom and the game's bodies
advance in lockstep, one step per tick, at any frame rate.

Structural changes during a step are deferred: ``spawn``, ``despawn``, ``add_component`` and
``remove_component`` called from a system or an event handler while a fixed step runs are checked at
once and applied, in call order, at the end of that step (before the next one), as esper's
``delete_entity`` and pymunk's post-step callbacks do. A step's systems therefore all see the same
entities. ``app.step``/``app.update`` from inside a step or a frame raises RuntimeError, and so does
any use of the App after ``close()``.

Loom is a guest in the game's program: no public call changes esper's current world as the caller sees it.
Each public method makes the App's world current for its own duration and switches back to the caller's
on return (on an exception too); inside a step, where the App's world is already current, nothing switches.
The App's world is private by default (``loom-app-N``, deleted by ``close()``); ``App(world="default")`` lives
in the game's own world instead: Loom's components go on the game's entities and ``app.processor()`` runs
Loom's steps as one of the game's esper processors (docs/embedding.md, "esper: Loom's world or yours").
"""
from __future__ import annotations

import functools
import itertools
import logging
import sys
import time
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import esper
import numba
from numba import get_num_threads, set_num_threads

from loom.engine.clock import FixedClock, _checked_dt
from loom.engine.boundary import StepBoundary
from loom.engine.frame_stats import FrameStats
from loom.engine.plugin import (ENTRY_POINT_GROUP, PluginError, PluginLike, build_plugin, entry_point_plugins,
                               plugin_name)
from loom.engine.schedule import Schedule, Stage, System

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])
log = logging.getLogger("loom")
_app_ids = itertools.count(1)
_hosts: weakref.WeakValueDictionary[str, App] = weakref.WeakValueDictionary()
"""The open App living in each esper world, by world name: one App per world (two would step its cloths twice)."""

SLOW_FRAME = 0.25
"""``App.update`` real_dt [s] above which it warns once that milliseconds were probably passed as seconds."""
INTEGRATOR_SETS = ((Stage.SUBSTEP, "PREDICT"), (Stage.PRE_STEP, "SOLVE_STEP"))
"""(stage, set name) where a cloth model's integrator runs (``ClothSet.PREDICT`` for the substepped models,
``ClothSet.SOLVE_STEP`` for whole-step ones): an App stepping cloths with no system in either moves nothing."""


def _in_world(method: F) -> F:
    """Run ``method`` with the App's world current and the caller's made current again on return (or raise).

    When the App's world is already current (a system inside a step, a game living in the App's world) it costs
    one comparison and switches nothing."""
    @functools.wraps(method)
    def hosted(self: App, *args: Any, **kwargs: Any) -> Any:
        if esper.current_world == self._world:
            return method(self, *args, **kwargs)
        previous = self._switch_in()
        try:
            return method(self, *args, **kwargs)
        finally:
            esper.switch_world(previous)
    return hosted  # type: ignore[return-value]


class App:
    """A simulation with an ECS world (private, or the game's), resources, an ordered schedule and a fixed-step clock.

    dt [s] is the fixed step (1/60 s suits a 60 Hz game); substeps splits each step into
    h = dt/substeps for the SUBSTEP stage (more substeps: stiffer, less stretchy cloth, more cost);
    max_steps caps the catch-up steps one ``update`` may take. threads: "auto" (default; None is the
    same) measures: steps run on one thread and now and then a few try every core, the faster wins
    (``loom.launch.threads.ThreadTuner``); an integer 1 … cores fixes the count for this App's steps
    (results do not depend on it). Both are carried out by the App's step boundary (``step_boundary``, which
    ``DefaultPlugins`` installs: ``loom.launch.LaunchPlugin``); without one every step runs on one thread.
    Importing Loom sets ``GOMP_SPINCOUNT=10000`` unless you set it or ``OMP_WAIT_POLICY``, so idle threads spin
    only briefly before they sleep; "auto" keeps a busy machine on one thread (``loom.launch.threads``;
    docs/performance.md, "Threads"). plugins: None (default) adds
    nothing; "auto" adds every installed plugin of the ``loom.plugins`` entry-point group (after
    the App is set up: add the core plugins first if the installed ones order against them — or
    call ``add_plugins_from_entry_points()`` yourself after adding them); a list adds those.

    Structural changes during a step (from a system or an event handler) are deferred to the end of
    the step: ``spawn`` returns the new entity id at once and ``get``/``try_get`` return the queued
    components, but ``query`` sees the entity only after the step; ``despawn``, ``add_component`` and
    ``remove_component`` are checked at once (KeyError for a missing entity or component) and take
    effect at the end of the step, in call order. Outside a step (set-up, INPUT and RENDER systems,
    between calls) they act immediately. esper functions called directly bypass this: use the App's.

    world: None (default) gives the App a private esper world, ``loom-app-N``, that ``close()`` deletes; a name
    (the game's world, e.g. "default") makes Loom live in that world: Loom's components go on the game's
    entities (``app.add_component(hero, cloth)``), ``entities()`` and ``query`` see the game's entities too,
    ``app.processor()`` runs Loom's steps among the game's esper processors, and ``close()`` leaves the world and
    its entities to the game. One open App per world (ValueError for a second). Either way no public method
    changes esper's current world as the caller sees it: each makes the App's world current for its own
    duration only.
    """

    def __init__(self, dt: float = 1.0 / 60.0, substeps: int = 16, *, max_steps: int = 4,
                 threads: int | str | None = "auto", plugins: str | list[PluginLike] | None = None,
                 world: str | None = None) -> None:
        if world is not None and not isinstance(world, str):
            raise TypeError(f"App world = {world!r}: expected the name (str) of the game's esper world, or None "
                            f"for a private one")
        if world is not None and not world:
            raise ValueError("App world = '': expected the name of the game's esper world (e.g. \"default\"), "
                             "or None for a private one")
        host = _hosts.get(world) if world is not None else None
        if host is not None:
            raise ValueError(f"App world = {world!r}: another open App already lives in that world (two would step "
                             f"its cloths twice); close() it first, or leave world=None for a private world")
        self.clock = FixedClock(dt=dt, substeps=substeps, max_steps=max_steps)
        """The fixed-step clock: ``dt`` [s], ``substeps``, ``max_steps``, ``time``, ``step_index``, ``alpha``."""
        self.schedule = Schedule()
        """The systems of each stage in their resolved order (``add_system`` fills it)."""
        self.resources: dict[type, Any] = {}
        """One resource per type (``insert_resource``, ``resource``): gravity, pixel space, solver scratch."""
        self._flat_queries: dict[tuple[type, ...], tuple[list, list]] = {}
        self._rest_type: type | None = None                 # queries with this type leave `resting` out in steps
        self.resting: frozenset[int] = frozenset()
        """The entities the fixed steps leave out (``rest``; read it, set it with ``rest``): empty when every entity
        is stepped."""
        self._rest_queries: dict[tuple[type, ...], tuple[list, frozenset[int], list]] = {}
        self.owns_world = world is None
        """True when the world is the App's own (private, deleted by ``close()``); False in a game's world."""
        if world is None:
            world = f"loom-app-{next(_app_ids)}"
            while world in esper.list_worlds():               # a name the game took: never share by accident
                world = f"loom-app-{next(_app_ids)}"
        self.world = world
        """The name of the esper world Loom's entities live in (``esper.list_worlds()``)."""
        self._world: str | None = world                      # None once closed: never equals esper's current world
        self._plugins: list[str] = []
        self._building: list[str] = []                     # plugins whose build() is running, innermost last
        self._handlers: dict[str, list[Callable[..., None]]] = {}
        self._despawn_handlers: list[Callable[[int], None]] = []
        self._reporters: list[Callable[[App], dict[str, Any]]] = []
        self._busy: str | None = None                      # "step" or "update" while one runs
        self._deferring = False                            # True while a fixed step runs: changes wait
        self._pending: list[tuple[str, int, Any]] = []     # deferred (op, entity, component or type)
        self._pending_adds: dict[tuple[int, type], Any] = {}
        self._pending_despawns: set[int] = set()
        self._closed = False
        self._warned: set[str] = set()                      # warnings given once: "slow_frame", "integrator"
        self._integrator_runs: tuple[Any, Any] | None = None   # the schedule's runs when last checked for one
        self.sim_seconds = 0.0
        """Wall-clock time spent in fixed steps since the start [s] (for reports)."""
        self.frame_stats = FrameStats()
        """Frames per second and ms per step over the last second, the first step (compile) left out (HUDs)."""
        self.profiling = False
        """When True, ``step`` times every system; totals accumulate in ``system_seconds``."""
        self.plans = True
        """When False, the plans SUBSTEP systems return are not used: each system runs at every substep (to check a
        plan against its system; ``add_system``)."""
        self.system_seconds: dict[str, float] = {}
        """Wall-clock seconds spent in each system while profiling, by system name."""
        self.threads: int | None = None
        """The fixed thread count of this App's steps, or None when the step boundary's tuner chooses
        (``set_threads``)."""
        self.step_boundary: StepBoundary | None = None
        """What runs before and after each fixed step (``loom.engine.boundary``): the thread count, the kernels
        rebound once ready (``loom.launch.LaunchPlugin`` installs it; None: one thread, nothing else)."""
        self.step_threads = 1
        """The threads numba runs the current (or last) step's kernels on (1 before the first step): systems read
        it to pick a serial or parallel kernel instead of asking numba (a call to ``numba.get_num_threads()``
        per system and substep adds up). Either kernel gives the same result."""
        self.set_threads("auto" if threads is None else threads)
        if world not in esper.list_worlds():                 # make it now (list_worlds shows it), leave it not current
            previous = esper.current_world
            esper.switch_world(world)
            esper.switch_world(previous)
        _hosts[world] = self
        if plugins == "auto":
            self.add_plugins_from_entry_points()
        elif isinstance(plugins, str):
            raise ValueError(f"App.plugins = {plugins!r}: expected None, \"auto\" or a list of plugins")
        elif plugins is not None:
            for plugin in plugins:
                self.add_plugin(plugin)

    def set_threads(self, threads: int | str) -> None:
        """Run this App's steps on ``threads`` threads (1 … cores), or "auto" to measure and choose; results do
        not depend on it. The count applies to this App's steps only (numba's own setting is restored after
        each ``step``/``update``). Raises ValueError naming the value otherwise."""
        if threads == "auto" and isinstance(threads, str):
            self.threads = None
            return
        top = int(numba.config.NUMBA_NUM_THREADS)
        if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= top:
            raise ValueError(f"App.threads = {threads!r}: must be an integer in 1 … {top} "
                             "(this machine's cores, or NUMBA_NUM_THREADS), or \"auto\"")
        self.threads = threads

    @property
    def tuner(self) -> Any:
        """The step boundary's measuring thread chooser (``loom.launch.threads.ThreadTuner``) while ``threads`` is
        "auto", else None."""
        return getattr(self.step_boundary, "tuner", None)

    # --- world ------------------------------------------------------------------------------
    def _switch_in(self) -> str:
        """Make this App's world esper's current one and return the caller's (to switch back to); RuntimeError
        once closed."""
        if self._closed:
            where = "deleted its world" if self.owns_world else "ended its use of the world"
            raise RuntimeError(f"App {self.world} is closed: close() {where}; make a new App")
        previous = esper.current_world
        esper.switch_world(self.world)
        return previous

    @contextmanager
    def _current(self) -> Iterator[None]:
        """``with app._current():`` esper's module functions act on this App's world inside the block, and the
        caller's world is current again after it (loom.files reads and writes entities this way)."""
        if esper.current_world == self._world:
            yield
            return
        previous = self._switch_in()
        try:
            yield
        finally:
            esper.switch_world(previous)

    def _components_of(self, entity: int) -> tuple[Any, ...]:
        """Every component of ``entity`` in this App's world (an empty tuple if it has none or does not exist)."""
        with self._current():
            try:
                return esper.components_for_entity(entity)
            except KeyError:
                return ()

    @_in_world
    def spawn(self, *components: Any) -> int:
        """Create an entity with ``components`` and return its id.

        During a step the id is made now and the components are attached at the end of the step."""
        if not self._deferring:
            return esper.create_entity(*components)
        entity = esper.create_entity()
        for component in components:
            self._defer("add", entity, component)
        return entity

    @_in_world
    def despawn(self, entity: int) -> None:
        """Delete ``entity`` and all its components (at the end of the step, if called during one).

        Raises KeyError if it does not exist (or is already being despawned this step)."""
        if not esper.entity_exists(entity) or entity in self._pending_despawns:
            raise KeyError(f"despawn: entity {entity} does not exist in {self.world}")
        if self._deferring:
            self._defer("despawn", entity, None)
            return
        esper.delete_entity(entity, immediate=True)
        for handler in self._despawn_handlers:
            handler(entity)

    def on_despawn(self, handler: Callable[[int], None]) -> None:
        """Call ``handler(entity)`` right after ``despawn`` deletes an entity (held strongly: lambdas work).

        Systems that keep scratch keyed by entity in a resource drop the entity's entry here, so a
        despawned cloth or body leaves nothing behind (``loom.systems.shared.model_index.forget_on_despawn``)."""
        self._despawn_handlers.append(handler)

    def get(self, entity: int, component_type: type[T]) -> T:
        """Return ``entity``'s component of ``component_type``. Raises KeyError if it has none."""
        if esper.current_world == self._world and not self._pending_adds:      # try_get's usual case, inline
            found = esper.try_component(entity, component_type) if esper.entity_exists(entity) else None
        else:
            found = self.try_get(entity, component_type)
        if found is None:
            raise KeyError(f"entity {entity} has no {component_type.__name__} component")
        return found

    def try_get(self, entity: int, component_type: type[T]) -> T | None:
        """Return ``entity``'s component of ``component_type`` (one queued this step first), or None."""
        if esper.current_world != self._world:              # called from outside: in the App's world and back
            with self._current():
                return self.try_get(entity, component_type)
        if self._pending_adds:
            queued = self._pending_adds.get((entity, component_type))
            if queued is not None:
                return queued
        if not esper.entity_exists(entity):
            return None
        return esper.try_component(entity, component_type)

    @_in_world
    def add_component(self, entity: int, component: Any) -> None:
        """Attach ``component`` to ``entity`` (replacing one of the same type); at the end of the step
        if called during one. Raises KeyError if the entity does not exist.

        Every add or remove drops esper's query caches: do it at set-up or on events, not per frame."""
        if not esper.entity_exists(entity) or entity in self._pending_despawns:
            raise KeyError(f"add_component: entity {entity} does not exist in {self.world}")
        if self._deferring:
            self._defer("add", entity, component)
            return
        esper.add_component(entity, component)

    @_in_world
    def remove_component(self, entity: int, component_type: type[T]) -> T:
        """Detach and return ``entity``'s component of ``component_type`` (at the end of the step, if
        called during one). Raises KeyError if absent."""
        if not self._deferring:
            return esper.remove_component(entity, component_type)
        found = self.try_get(entity, component_type)
        if found is None or entity in self._pending_despawns:
            raise KeyError(f"remove_component: entity {entity} has no {component_type.__name__} component")
        self._defer("remove", entity, component_type)
        return found

    def _defer(self, op: str, entity: int, what: Any) -> None:
        """Queue a structural change made during a step (applied by ``_apply_deferred``)."""
        self._pending.append((op, entity, what))
        if op == "add":
            self._pending_adds[(entity, type(what))] = what
        elif op == "remove":
            self._pending_adds.pop((entity, what), None)
        else:
            self._pending_despawns.add(entity)

    def _apply_deferred(self) -> None:
        """Apply the structural changes queued during the step, in call order (immediately: not deferring)."""
        pending, self._pending = self._pending, []
        self._pending_adds.clear()
        self._pending_despawns.clear()
        for op, entity, what in pending:
            if not esper.entity_exists(entity):
                continue                                    # deleted behind the App's back (direct esper)
            if op == "add":
                esper.add_component(entity, what)
            elif op == "remove":
                if esper.has_component(entity, what):
                    esper.remove_component(entity, what)
            else:
                self.despawn(entity)

    def query(self, *component_types: type, resting: bool = False) -> list[tuple[Any, ...]]:
        """Return ``[(entity, component, ...), ...]`` for the entities holding every type given.

        Ordered by entity id, so systems visit entities in a deterministic order. The list is shared
        (cached until a component is added or removed anywhere, or the resting entities change): read it, don't
        change it. While a fixed step runs, a query naming the type given to ``rest`` leaves the resting entities
        out (cloths asleep or frozen off screen), so no system of the step sees them; ``resting=True`` keeps them
        (the system that decides who rests). INPUT, RENDER and calls between steps always see every entity."""
        if esper.current_world != self._world:              # called from outside: in the App's world and back
            with self._current():
                return self.query(*component_types, resting=resting)
        if len(component_types) == 1:
            rows = esper.get_component(component_types[0])
        else:
            found = esper.get_components(*component_types)   # esper's cached list while nothing changed
            flat = self._flat_queries.get(component_types)
            if flat is None or flat[0] is not found:         # flatten once per change, not per call
                flat = self._flat_queries[component_types] = (found, [(e, *comps) for e, comps in found])
            rows = flat[1]
        if self.resting and self._deferring and not resting and self._rest_type in component_types:
            return self._awake_rows(component_types, rows)
        return rows

    def _awake_rows(self, component_types: tuple[type, ...], rows: list) -> list:
        """``rows`` without the resting entities: one list per query, kept (same identity) until ``rows`` or the
        resting set change, so caches keyed on a query's identity (the model index) stay valid between changes."""
        cached = self._rest_queries.get(component_types)
        if cached is None or cached[0] is not rows or cached[1] is not self.resting:
            resting = self.resting
            cached = self._rest_queries[component_types] = (rows, resting,
                                                            [row for row in rows if row[0] not in resting])
        return cached[2]

    def rest(self, component_type: type, entities: Iterable[int]) -> None:
        """Leave ``entities`` out of this App's fixed steps from now on: while a step runs, ``query`` of any types
        that include ``component_type`` skips them, so every system of the step processes only the others (a
        system needs no check of its own). ``loom.systems.pipeline.sleep`` calls it with the cloths asleep or
        frozen off screen, at the start of each step; an empty set rests nothing. One type per App: a second
        type replaces the first. Their components stay as they were (a resting cloth resumes from its state)."""
        resting = frozenset(entities)
        if resting != self.resting or component_type is not self._rest_type:
            self.resting = resting
            self._rest_type = component_type
            self._rest_queries.clear()

    @_in_world
    def entities(self) -> list[int]:
        """Return every entity id in this App's world (in a game's world, the game's entities too)."""
        return list(esper.get_entities())

    # --- resources ------------------------------------------------------------------------
    def insert_resource(self, resource: Any, *, replace: bool = True) -> Any:
        """Store one ``resource`` per type (gravity, settings …) and return the one in force.

        With replace=False an existing resource of that type is kept: plugins insert defaults
        this way, so a resource the game inserted first wins."""
        key = type(resource)
        if replace or key not in self.resources:
            self.resources[key] = resource
        return self.resources[key]

    def init_resource(self, resource_type: type[T]) -> T:
        """Return the resource of ``resource_type``, inserting ``resource_type()`` first if there is none
        (Bevy's ``init_resource``; unlike ``insert_resource(T(), replace=False)`` it builds nothing when
        the resource exists, so systems can call it every substep)."""
        found = self.resources.get(resource_type)
        if found is None:
            found = self.resources[resource_type] = resource_type()
        return found

    def resource(self, resource_type: type[T]) -> T:
        """Return the resource of ``resource_type``. Raises KeyError naming it if absent."""
        try:
            return self.resources[resource_type]
        except KeyError:
            raise KeyError(f"no {resource_type.__name__} resource; insert one with insert_resource "
                           f"or add the plugin that provides it") from None

    # --- plugins, systems, events, reports --------------------------------------------------
    @_in_world
    def add_plugin(self, plugin: PluginLike) -> App:
        """Build ``plugin`` (an object with ``build(app)``, a plugin class, or a function of app).

        A plugin is unique: adding one with the same name twice raises ValueError."""
        name = plugin_name(plugin)
        if name in self._plugins and not hasattr(plugin, "plugins"):
            raise ValueError(f"add_plugin: {name} is already added to this App")
        if not hasattr(plugin, "plugins"):
            self._plugins.append(name)
        self._building.append(name)
        try:
            build_plugin(plugin, self)
        finally:
            self._building.pop()
        return self

    def add_plugins_from_entry_points(self, group: str = ENTRY_POINT_GROUP) -> list[str]:
        """Add every installed plugin of the entry-point ``group`` (by name order); return their names.

        Raises PluginError naming the plugin that fails to import or to build."""
        added = []
        for name, plugin in entry_point_plugins(group):
            try:
                self.add_plugin(plugin)
            except PluginError:
                raise
            except Exception as error:                   # a third-party build() failing
                raise PluginError(f"loom plugin {name!r} failed to build: {type(error).__name__}: {error}") \
                    from error
            added.append(name)
        return added

    @property
    def plugins(self) -> list[str]:
        """Names of the plugins built so far, in order."""
        return list(self._plugins)

    def add_system(self, system: System, stage: Stage = Stage.SUBSTEP, *, name: str | None = None,
                   in_set: Any = None, before: Any = None, after: Any = None,
                   run_if: Callable[[App], bool] | None = None) -> App:
        """Run ``system(app, dt)`` in ``stage``, ordered by ``before``/``after`` (names of systems or sets).

        ``run_if(app)``, if given, decides whether the system runs: once per fixed step for the
        step's stages (a SUBSTEP system runs in all of the step's substeps or in none), once per
        frame for INPUT and RENDER. A system that has nothing to do in most games (another cloth
        model's solver, say) then costs nothing per substep.

        SUBSTEP systems run through plans, the one way a step's substeps are executed: the App calls each SUBSTEP
        system at the step's first substep, and what it returns is its plan for substeps 1, 2, … of that step (the
        system itself runs again at the next step's first substep):
        - a replay (``loom.systems.shared.plan.run``/``replay``: a callable with a ``calls`` list of
          ``(kernel, args)``): the App splices the calls into one list with the other systems' and calls each
          ``kernel(*args)`` itself, so a later substep costs one Python call per kernel and none per system;
        - any other callable ``plan(app, h)``: called in the system's place (for work that changes per substep,
          read from ``app.clock.substep_index``);
        - anything else (None, a plain system): the system itself is its plan and runs at every substep.
        A plan does the same work without looking anything up again: the kernels and arrays the system found at
        substep 0. It may rely on what a step leaves as it is — the entities and their components (added and
        removed at the step's end), the arrays they hold (Loom's systems replace a component's arrays only between
        steps), the resources, the substep count, the run conditions — and reads the values inside arrays at each
        call: a SUBSTEP system of your own that assigns a new array or resource mid-step has the plans act on the
        old one until the next step. ``app.plans = False`` runs every system at every substep instead (to check a
        plan against its system). ``python -m loom.benchmarks scenes --calls`` counts the Python calls per step.
        Raises ValueError for a duplicate name; unknown names and cycles raise when the stage
        next runs (so plugins may be added in any order)."""
        self.schedule.add(stage, system, name=name, in_set=in_set, before=before, after=after, run_if=run_if,
                          plugin=self._building[-1] if self._building else None)
        return self

    def add_systems(self, stage: Stage, *systems: System, in_set: Any = None, before: Any = None,
                    after: Any = None) -> App:
        """Add several systems to one stage with the same set and ordering, in the order given."""
        for system in systems:
            self.add_system(system, stage, in_set=in_set, before=before, after=after)
        return self

    def configure_sets(self, stage: Stage, *sets: Any, chain: bool = True) -> App:
        """Declare that the named system sets of ``stage`` run in the order given."""
        self.schedule.configure_sets(stage, *sets, chain=chain)
        return self

    def replace_system(self, name: str, system: System, stage: Stage = Stage.SUBSTEP,
                       run_if: Callable[[App], bool] | None = None) -> App:
        """Swap the system registered as ``name`` for ``system``, keeping its place in the order (not
        the old system's run_if: the new one runs every time unless given its own)."""
        self.schedule.replace(stage, name, system, run_if)
        return self

    def on(self, event: str, handler: Callable[..., None]) -> None:
        """Call ``handler(**payload)`` whenever ``event`` is emitted (held strongly: lambdas work)."""
        self._handlers.setdefault(event, []).append(handler)

    def emit(self, event: str, **payload: Any) -> None:
        """Send ``event`` with keyword ``payload`` to every handler registered with ``on``."""
        for handler in self._handlers.get(event, ()):
            handler(**payload)

    def add_reporter(self, reporter: Callable[[App], dict[str, Any]]) -> None:
        """Add a function whose dict is merged into ``report()`` (plugins report their own numbers)."""
        self._reporters.append(reporter)

    @_in_world
    def report(self) -> dict[str, Any]:
        """Return a summary of the run: frames, simulated time, sim ms per frame (the mean since the start), the
        last second's frames per second and ms per step (``frame_stats``: what a HUD shows), plus each reporter's."""
        steps = self.clock.step_index
        out: dict[str, Any] = {
            "frames": steps,
            "time_s": round(self.clock.time, 9),
            "sim_ms_per_frame": round(1000.0 * self.sim_seconds / steps, 4) if steps else 0.0,
            "recent_fps": round(self.frame_stats.fps, 2),
            "recent_sim_ms_per_frame": round(self.frame_stats.sim_ms_per_step, 4),
        }
        for reporter in self._reporters:
            out.update(reporter(self))
        return out

    # --- time --------------------------------------------------------------------------------
    def step(self, frames: int = 1, *, dt: float | None = None) -> None:
        """Advance ``frames`` fixed steps of dt: PRE_STEP, SUBSTEP × substeps, POST_STEP each.

        A game with its own fixed-step physics loop calls ``app.step(dt=TICK)`` once per tick, right
        after ``space.step(TICK)``: Loom then takes exactly one step per physics step, seeing the bodies
        where that tick left them (docs/embedding.md, "Fixed-step games"). ``dt`` [s], when given, is
        the game's tick; if it differs from the App's fixed dt it becomes the App's dt from this step
        on (``clock.dt``; ``app.update`` then banks time against it too). Pass the same tick every time:
        ``clock.time`` is steps × the current dt. Raises ValueError for a bad ``frames`` or ``dt`` (not
        a finite time in (0, 1] s), RuntimeError when called from inside a step or frame (a system or
        event handler) or after ``close()``."""
        if isinstance(frames, bool) or not isinstance(frames, int) or frames < 0:
            raise ValueError(f"App.step frames = {frames!r}: must be an integer >= 0")
        if dt is not None:
            dt = _checked_dt(dt, "App.step dt")
        previous = self._enter("step")
        try:
            if dt is not None and dt != self.clock.dt:
                self.clock.set_dt(dt, "App.step dt")
            self._steps(frames)
        finally:
            self._busy = None
            if previous is not None:
                esper.switch_world(previous)

    def _enter(self, name: str) -> str | None:
        """Refuse ``App.<name>`` after close() or from inside a running step or frame; else mark it running, make
        the App's world current and return the caller's world to switch back to (None: it was current already)."""
        if self._closed:
            where = "is deleted" if self.owns_world else "is no longer Loom's"
            raise RuntimeError(f"App.{name} called after close(): {self.world} {where}; make a new App")
        if self._busy is not None:
            where = "a step" if self._deferring or self._busy == "step" else "App.update (INPUT or RENDER)"
            raise RuntimeError(f"App.{name} called inside {where} (from a system or event handler): a step cannot "
                               f"run steps; call it after app.{self._busy} returns")
        previous = None if esper.current_world == self._world else self._switch_in()
        self._busy = name
        return previous

    def _check_integrator(self, runs: tuple[Any, Any], frames: int) -> None:
        """Warn once if this App steps cloths and no system integrates them (no system in ``INTEGRATOR_SETS``:
        typically ``DefaultPlugins`` was never added, and nothing moves). Looked up again only when the schedule
        changed (``runs``: its resolved PRE_STEP and SUBSTEP runs, new objects after a change) or, while none
        integrates, until a cloth is stepped."""
        if frames == 0 or "integrator" in self._warned:
            return
        integrates = any(entry.enabled and name in entry.sets
                         for stage, name in INTEGRATOR_SETS for entry in self.schedule._entries[stage])
        if integrates:
            self._integrator_runs = runs
            return
        cloth_module = sys.modules.get("loom.components.cloth")
        cloth_type = getattr(cloth_module, "Cloth", None)
        if cloth_type is None or not esper.get_component(cloth_type):
            return
        self._warned.add("integrator")
        warnings.warn(f"App {self.world} steps cloths but no system integrates them (none in ClothSet.PREDICT or "
                      f"ClothSet.SOLVE_STEP), so nothing moves: add loom.DefaultPlugins "
                      f"(app.add_plugin(loom.DefaultPlugins)) before stepping", RuntimeWarning, stacklevel=4)

    def _steps(self, frames: int) -> None:
        """Run ``frames`` fixed steps; structural changes made during each are applied at its end."""
        clock = self.clock
        dt = clock.dt
        stages = list(self.schedule.step_runs())
        if self._integrator_runs is None or stages[1] is not self._integrator_runs[1] \
                or stages[0] is not self._integrator_runs[0]:
            self._check_integrator((stages[0], stages[1]), frames)      # a new schedule: is a cloth integrated?
        if self.profiling:
            stages = [tuple((self._timed(s), c) for s, c in runs) for runs in stages]
        pre_runs, sub_runs, post_runs = stages
        start = time.perf_counter()
        boundary = self.step_boundary
        numba_threads = current = get_num_threads() if boundary is not None else 0
        try:
            for _ in range(frames):
                if boundary is not None:
                    count = boundary.before_step(self)        # the thread count; kernels rebound once ready
                    if count != current:
                        set_num_threads(count)
                        current = count
                    self.step_threads = count
                began = time.perf_counter()
                # substeps are read per step: a system may change clock.substeps between steps (the
                # guard's recovery runs a refused step's retry with 2×, 4×, 8× substeps; systems/pipeline/guard.py)
                substeps = clock.substeps
                h = clock.dt / substeps                   # clock.h, without its property's calls
                self._deferring = True
                try:
                    for system in self._due(pre_runs):
                        system(self, dt)
                    sub = self._due(sub_runs)
                    clock.substep_index = 0
                    chain: list[tuple[Callable[..., Any], tuple]] = []    # what substeps 1, 2, … call, in order
                    for system in sub:                   # what a system returns is its plan (add_system)
                        plan = system(self, h)
                        if not callable(plan) or not self.plans:
                            chain.append((system, (self, h)))
                            continue
                        calls = getattr(plan, "calls", None)
                        if isinstance(calls, (list, tuple)):     # a replay: its kernels, called here, none for it
                            chain.extend(calls)
                        else:
                            chain.append((plan, (self, h)))
                    for k in range(1, substeps):
                        clock.substep_index = k
                        for call, args in chain:
                            call(*args)
                    for system in self._due(post_runs):
                        system(self, dt)
                    clock.step_index += 1
                finally:
                    self._deferring = False
                    if self._pending:
                        self._apply_deferred()
                ended = time.perf_counter()
                counts = boundary is None or boundary.after_step(self, ended - began)   # False: it compiled
                if clock.step_index > 1 and counts:
                    self.frame_stats.step(ended, ended - began)
        finally:
            if boundary is not None and get_num_threads() != numba_threads:
                set_num_threads(numba_threads)
            self.sim_seconds += time.perf_counter() - start

    def _due(self, runs: tuple[tuple[System, Any], ...]) -> list[System]:
        """The systems of ``runs`` whose run_if condition holds now (or that have none); a condition several
        systems share is asked once (all are asked before any of the stage's systems runs, as one would be)."""
        due = []
        answers: dict[Any, bool] = {}
        for system, condition in runs:
            if condition is not None:
                answer = answers.get(condition)
                if answer is None:
                    answer = answers[condition] = bool(condition(self))
                if not answer:
                    continue
            due.append(system)
        return due

    def _timed(self, system: System) -> System:
        """Wrap ``system`` so its wall-clock time adds to ``system_seconds`` under its name."""
        name = getattr(system, "name", None) or system.__name__
        totals = self.system_seconds

        def timed(app: App, dt: float) -> Any:
            start = time.perf_counter()
            plan = system(app, dt)
            totals[name] = totals.get(name, 0.0) + time.perf_counter() - start
            return self._timed_as(plan, name) if callable(plan) else None
        return timed

    def _timed_as(self, plan: System, name: str) -> System:
        """``plan`` (a substep system's plan for the rest of the step) timed under its system's ``name``."""
        totals = self.system_seconds

        def timed(app: App, dt: float) -> None:
            start = time.perf_counter()
            plan(app, dt)
            totals[name] = totals.get(name, 0.0) + time.perf_counter() - start
        return timed

    def update(self, real_dt: float) -> int:
        """Run one rendered frame: INPUT, the fixed steps ``real_dt`` [s] owes, RENDER; return the steps taken.

        At most ``max_steps`` steps run, so a long hitch (say real_dt = 1 s) drops time instead
        of freezing the game while the simulation catches up. A ``real_dt`` over ``SLOW_FRAME`` (0.25 s) warns
        once (RuntimeWarning): it is usually milliseconds passed as seconds (``clock.tick() / 1000`` is seconds);
        the frame still runs as asked. Raises ValueError for a negative or non-finite ``real_dt``,
        RuntimeError when called from inside a step or frame (a system or event handler) or after ``close()``."""
        previous = self._enter("update")
        self.frame_stats.frame(time.perf_counter())
        try:
            steps = self.clock.advance(real_dt)
            if real_dt > SLOW_FRAME and "slow_frame" not in self._warned:
                self._warned.add("slow_frame")
                warnings.warn(f"App.update real_dt = {real_dt!r} s: more than {SLOW_FRAME} s for one frame; were "
                              f"milliseconds passed as seconds? (pass clock.tick() / 1000). Loom takes at most "
                              f"max_steps = {self.clock.max_steps} steps per update and drops the rest",
                              RuntimeWarning, stacklevel=2)
            self.run_stage(Stage.INPUT, real_dt)
            self._steps(steps)
            self.run_stage(Stage.RENDER, real_dt)
        finally:
            self._busy = None
            if previous is not None:
                esper.switch_world(previous)
        return steps

    @_in_world
    def run_stage(self, stage: Stage, dt: float) -> None:
        """Run the systems of one stage once with ``dt`` (INPUT and RENDER are run by ``update``)."""
        for system in self._due(self.schedule.runs(stage)):
            system(self, dt)

    @_in_world
    def run(self, argv: Iterable[str] | None = None) -> dict[str, Any]:
        """Run the App from a command line: ``--headless --frames N --report json|text``.

        Headless (or with no window plugin) it steps N frames and prints the report; a window
        plugin provides ``WindowRunner`` as a resource to open a window instead."""
        from loom.launch.runner import run_app     # the launch tooling, loaded only here (loom.launch)
        return run_app(self, argv)

    def processor(self, *, fixed_step: bool = False) -> esper.Processor:
        """An esper Processor running this App among the game's own: ``esper.add_processor(app.processor())``.

        Each ``esper.process(dt)`` then calls ``process(dt)``, which runs ``app.update(dt)`` (dt: the frame's real
        time [s]; Loom takes the fixed steps it owes, as in a game loop of its own). fixed_step=True is for a game
        that calls ``esper.process(TICK)`` once per tick of its own fixed-step loop: each call takes exactly one
        step, ``app.step(dt=TICK)``. The App's world may be the game's (``App(world=...)``) or its own: either way
        the game's current world is current again when ``process`` returns. Priority is esper's:
        ``esper.add_processor(app.processor(), priority=...)``. After ``close()`` the processor does nothing, so
        a game may close Loom before removing it (``esper.remove_processor(AppProcessor)``)."""
        return AppProcessor(self, fixed_step=fixed_step)

    def close(self) -> None:
        """End this App: delete its private esper world (in a game's world, ``App(world=...)``, the world and its
        entities, Loom's components included, stay the game's); afterwards ``step``, ``update`` and every entity
        method raise RuntimeError. Closing twice is harmless; closing from inside a step raises RuntimeError."""
        if self._busy is not None:
            raise RuntimeError(f"App.close called inside a step (from a system or event handler): call it after "
                               f"app.{self._busy} returns")
        if self._closed:
            return
        self._closed = True
        self._world = None
        if _hosts.get(self.world) is self:
            del _hosts[self.world]
        if not self.owns_world:
            return
        if esper.current_world == self.world:                # the caller switched into it by hand
            esper.switch_world("default")
        if self.world in esper.list_worlds():
            esper.delete_world(self.world)


class AppProcessor(esper.Processor):
    """An esper Processor that runs an App (made by ``App.processor``): each ``process(dt)`` is one
    ``app.update(dt)``, or with ``fixed_step`` one ``app.step(dt=dt)``; nothing once the App is closed."""

    def __init__(self, app: App, *, fixed_step: bool = False) -> None:
        if not isinstance(app, App):
            raise TypeError(f"AppProcessor app = {app!r}: expected a loom App")
        self.app = app
        """The App this processor runs."""
        self.fixed_step = bool(fixed_step)
        """True: one fixed step per ``process(dt)``; False: ``app.update(dt)`` (the steps dt owes)."""

    def process(self, dt: float | None = None, *args: Any, **kwargs: Any) -> None:
        """Run the App for ``dt`` [s], the argument of ``esper.process(dt)`` (other arguments, meant for the game's
        own processors, are ignored). Raises TypeError if esper.process was called without a time."""
        if dt is None:
            raise TypeError("AppProcessor.process: call esper.process(dt) with the frame time dt [s] (Loom's "
                            "processor needs it to advance the cloth)")
        if self.app._closed:
            return
        if self.fixed_step:
            self.app.step(dt=dt)
        else:
            self.app.update(dt)
