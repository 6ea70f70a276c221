"""Sleep and off-screen freezing: cloths at rest, or out of view, are left out of the fixed steps.

One system, ``settle_cloths``, first in PRE_STEP (first in ``ClothSet.SAVE``), decides at the start of each step which
cloths the step processes, and hands the others to ``App.rest(Cloth, ...)``: for the rest of the step every query
naming ``Cloth`` leaves them out (engine/app.py), so no other system checks a flag of its own and a new system needs
to know nothing about sleep. A resting cloth keeps its whole state (x, v, x_prev, force, its models' scratch); it
resumes from that state, as if time had stopped for it (``v`` is kept, not zeroed: the sleep is a pause, so
the first step after waking is the one that would have followed the last step before it, the trajectory shows no
kink, and a snapshot of a sleeping cloth resumes bit-exact; the speeds kept are below the threshold anyway).

Opt-in: without a ``Sleep`` of the game's own (an App resource, or a component on a cloth), every cloth gets
``Sleep(enabled=False)`` and is neither surveyed nor frozen (docs/sleep.md says why).

Falling asleep (``Sleep``, components/sleep.py): each step, one kernel pass per awake cloth with sleep enabled (or
off-screen freezing on) measures the largest
step-to-step displacement of its particles, |x(t) − x(t − dt)| (the same pass keeps x for the next step and the
cloth's bound box); a cloth whose every particle moved slower than ``Sleep.threshold`` [m/s] for ``Sleep.steps``
steps in a row falls asleep. The step-to-step speed, not ``Cloth.v``: ``v`` is the last substep's velocity, and a
still cloth's substeps still jitter by 0.2–0.3 m/s at the rim in some scenes while the cloth goes nowhere
(docs/sleep.md has the measurements).

Waking (checked at each step's start for every sleeping cloth; what held at sleep is recorded in ``SleepData``):
- a collider (``Collider`` + ``Transform``) moved, appeared, disappeared or changed, its bounding ball (grown by its
  travel since the last step) within the cloth's bound box grown by ``Sleep.reach``; an unbounded one (a plane)
  anywhere;
- a pin's target moved: ``Pin.target`` (a fixed pin) or its carrier's ``Transform`` (``attach_to``), or its
  ``active`` flags changed;
- the wind changed: any ``Wind`` or ``Blower`` spawned, despawned or given another value in any field (every
  sleeping cloth wakes, whether or not the wind's region reaches it); the ``Gravity`` resource's acceleration changed;
- an active ``Grab`` holds the cloth (the pointer's grab, systems/interaction/picking.py, or a game's);
- the cloth itself changed: ``Cloth.changes`` (pins, grabs, masses, a tear's new topology: tearing re-meshes through
  ``retopologize``, which moves it) or ``Cloth.revision`` (an array or the material assigned);
- the game wrote ``Sleep.state = "awake"``, or ``Sleep.enabled = False``.
A game that writes a sleeping cloth's x or v in place, or moves something Loom cannot see, writes "awake" too.

Freezing: with ``Sleep(offscreen=True)`` (off by default) and a ``Camera`` in the world, an awake cloth whose bound box lies
wholly outside the camera's view (the six planes of its projection, the aspect of the App's ``Window`` or
``WindowSettings``, else 16:9) is frozen for that step, state kept, and resumes when its box is back in view. A
sleeping cloth stays asleep off screen.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numba
import numpy as np

from loom.components import Blower, Camera, Cloth, Collider, Grab, Gravity, Pin, Transform, Wind
from loom.components.sleep import Sleep
from loom.engine import App, Stage
from loom.engine.persist import persistent
from loom.engine.window import Window, WindowSettings
from loom.launch.cold_kernels import called_from, python_twin
from loom.systems.shared.model_index import forget_on_despawn
from loom.systems.sets import ClothSet

DEFAULT_ASPECT = 16.0 / 9.0
"""Width / height of the view the off-screen test assumes when the App has no Window or WindowSettings."""


class SleepPlugin:
    """Sleep and off-screen freezing (a member of ``DefaultPlugins``, ahead of ``GuardPlugin``): ``settle_cloths`` first
    in PRE_STEP (``ClothSet.SAVE``, before the guard's copy), the App's ``Sleep`` defaults (a resource the game may
    insert first; without one, ``Sleep(enabled=False)``: sleep is opt-in), the scratch forgotten with its entity."""

    def build(self, app: App) -> None:
        app.insert_resource(Sleep(enabled=False), replace=False)   # opt-in: docs/sleep.md
        forget_on_despawn(app, SleepData)
        app.add_system(settle_cloths, Stage.PRE_STEP, in_set=ClothSet.SAVE)   # first in it: added before the guard


@persistent
class SleepData:
    """Resource: the sleep system's scratch per cloth entity (saved in snapshots: a loaded App resumes counting and
    waking exactly where the saved one was)."""

    def __init__(self) -> None:
        self.last: dict[int, np.ndarray] = {}
        """Each awake cloth's x at the start of the last step [m], (n, 3)."""
        self.box: dict[int, np.ndarray] = {}
        """Each cloth's bound box at the start of its last stepped step: min xyz, max xyz [m], (6,)."""
        self.quiet: dict[int, int] = {}
        """Steps in a row each cloth moved slower than its threshold."""
        self.held: dict[int, tuple] = {}
        """What held each sleeping cloth when it fell asleep (``_record``), compared at each step."""
        self.poses: dict[int, tuple] = {}
        """Each collider entity's (centre [m] (3,), bounding radius [m] (inf: unbounded), signature), last step."""
        self.posed = -1
        """The step index ``poses`` were taken at (−1: never)."""
        self.out: list[int] = []
        """The entities the last step left out (asleep or frozen)."""
        self.seen: list | None = None
        """The ``query(Cloth, Sleep)`` list last looked at (its identity changes with any component added or removed:
        then the cloths without Sleep are looked for). Not saved."""
        self.view: np.ndarray | None = None
        """The view's planes (6, 4) last computed (``_view_planes``)."""
        self.view_key: tuple = ()
        """The camera fields and aspect ``view`` was computed for. Not saved."""

    def __getstate__(self) -> dict:
        return {**self.__dict__, "seen": None, "view_key": (), "view": None}

    def check_state(self, clothes: dict[int, Any]) -> None:
        """Check a snapshot's scratch (``clothes``: the loaded cloths by entity); raise ValueError naming the field.
        A cloth's last positions that do not fit its loaded x are dropped (it counts its quiet steps anew)."""
        for name in ("last", "box", "quiet", "held", "poses"):
            if type(getattr(self, name, None)) is not dict:
                raise ValueError(f"SleepData.{name}: expected a dict")
        if type(self.out) is not list or not all(type(e) is int for e in self.out) or type(self.posed) is not int:
            raise ValueError("SleepData.out / posed: expected a list of entity ids and a step index")
        for entity, last in list(self.last.items()):
            cloth = clothes.get(entity)
            box = self.box.get(entity)
            if (cloth is None or not isinstance(last, np.ndarray) or last.shape != cloth.x.shape
                    or last.dtype != cloth.x.dtype or not isinstance(box, np.ndarray) or box.shape != (6,)):
                self.last.pop(entity)
                self.quiet.pop(entity, None)
        if any(type(q) is not int or q < 0 for q in self.quiet.values()):
            raise ValueError("SleepData.quiet: expected whole numbers of steps >= 0")
        for entity, held in list(self.held.items()):
            if type(held) is not tuple or len(held) != 5:
                raise ValueError(f"SleepData.held[{entity}]: expected a 5-tuple (_record)")
            self.held[entity] = (*held[:4], None)   # restoring the Cloth counts as assignments: revision taken anew

    def forget(self, entity: int) -> None:
        """Drop a despawned entity's scratch (a collider's last pose stays until the next step's poses replace it: its
        going away wakes the cloths near it)."""
        for table in (self.last, self.box, self.quiet, self.held):
            table.pop(entity, None)


def settle_cloths(app: App, dt: float) -> None:
    """Decide which cloths this step processes: count the quiet steps of the awake ones, put to sleep, freeze off
    screen, wake (see the module's docstring), then ``app.rest(Cloth, asleep and frozen)``. An awake scene pays one
    call of this system, two queries and one kernel call per cloth (plus the view's planes while the camera moves)."""
    data = app.resources.get(SleepData) or app.init_resource(SleepData)
    rows = app.query(Cloth, Sleep, resting=True)
    if rows is not data.seen:                        # a component added or removed somewhere: a cloth without Sleep?
        if len(rows) != len(app.query(Cloth, resting=True)):
            _give_defaults(app, rows)
        data.seen = rows
    view = _view_planes(app, data) if any(row[2].offscreen for row in rows) else None
    if data.out:                                     # something rested last step: wake what may move
        _wake(app, data, [row for row in rows if row[2].state != "awake"], view)
    dozing = False                                   # a cloth fell asleep this step
    out = []
    for entity, cloth, sleep in rows:
        state = sleep.state
        if state == "awake":
            if data.held:                            # woken by the game's write: its record is stale
                data.held.pop(entity, None)
            if not sleep.enabled and not sleep.offscreen:
                continue                             # nothing to watch: no survey
            last = data.last.get(entity)
            if last is None or last.shape != cloth.x.shape or last.dtype != cloth.x.dtype:
                data.last[entity] = cloth.x.copy()
                data.box[entity] = box = np.empty(6)
                _survey_call(cloth.x, cloth.x, box)
                data.quiet[entity] = 0
            else:
                moved = _survey_call(cloth.x, last, data.box[entity])
                if sleep.enabled and moved < (sleep.threshold * dt) ** 2:
                    quiet = data.quiet[entity] = data.quiet.get(entity, 0) + 1
                    if quiet >= sleep.steps:
                        sleep.state = state = "asleep"
                        data.held[entity] = _record(app, entity, cloth)
                        dozing = True
                elif data.quiet.get(entity):
                    data.quiet[entity] = 0
            if view is not None and sleep.offscreen and state == "awake":
                box = data.box[entity]                   # outside: every corner behind one of the view's planes
                if ((box[_PICK] @ view[:, :3].T + view[:, 3]) < 0.0).all(axis=0).any():
                    sleep.state = state = "frozen"
        elif state == "asleep" and entity not in data.held:       # put to sleep by the game
            data.held[entity] = _record(app, entity, cloth)
            dozing = True
        if state != "awake":
            out.append(entity)
    if dozing and data.posed != app.clock.step_index:
        _moved_colliders(app, data)                  # poses to compare the next steps with
    if out != data.out or len(app.resting) != len(out):        # (a loaded snapshot: data.out saved, resting not)
        data.out = out
        app.rest(Cloth, out)


def wake(app: App, entity: int) -> None:
    """Wake the cloth of ``entity`` (asleep or frozen) now: the next step processes it. Raises KeyError if the
    entity has no Sleep component (the sleep system gives every cloth one at its first step)."""
    sleep = app.get(entity, Sleep)
    if sleep.state != "awake":
        sleep.state = "awake"
    data = app.resources.get(SleepData)
    if data is not None:
        data.quiet[entity] = 0
        data.held.pop(entity, None)
        data.out = [other for other in data.out if other != entity]
    if entity in app.resting:
        app.rest(Cloth, app.resting - {entity})


def _give_defaults(app: App, rows: list) -> None:
    """Add a copy of the App's Sleep resource (its defaults) to every cloth without a Sleep component (applied at the
    end of this step: the cloth is awake until then)."""
    template = app.resources.get(Sleep)
    if template is None:
        template = app.insert_resource(Sleep())
    have = {entity for entity, _, _ in rows}
    for entity, _ in app.query(Cloth, resting=True):
        if entity not in have and app.try_get(entity, Sleep) is None:
            app.add_component(entity, dataclasses.replace(template, state="awake"))


def _record(app: App, entity: int, cloth: Cloth) -> tuple:
    """What holds a cloth still now: gravity, winds and blowers, its pin's targets and flags, its change counters."""
    return (_gravity(app), _winds(app), _pin_state(app, entity), cloth.changes, cloth.revision)


def _gravity(app: App) -> bytes:
    gravity = app.resources.get(Gravity)
    return b"" if gravity is None else np.asarray(gravity.acceleration, np.float64).tobytes()


def _winds(app: App) -> tuple:
    """Every Wind and Blower by entity and field values: a change to any of them shows here."""
    return (tuple((entity, _key(wind)) for entity, wind in app.query(Wind)),
            tuple((entity, _key(blower)) for entity, blower in app.query(Blower)))


def _key(value: object) -> object:
    """A comparable copy of a component's fields (arrays as bytes, nested dataclasses as tuples)."""
    if isinstance(value, np.ndarray):
        return value.tobytes()
    if dataclasses.is_dataclass(value):
        return tuple(_key(getattr(value, f.name)) for f in dataclasses.fields(value))
    return value


def _pin_state(app: App, entity: int) -> tuple:
    """The cloth's Pin targets now [m] (where ``prepare_pins`` would put them) and its active flags, as bytes."""
    pin = app.try_get(entity, Pin)
    if pin is None:
        return ()
    if pin.attach_to is None or pin.offset is None:
        target = np.asarray(pin.target, np.float64)
    else:
        carrier = app.try_get(pin.attach_to, Transform)
        if carrier is None:
            return (pin.attach_to, None)
        target = carrier.to_world(pin.offset)
    return (pin.attach_to, target.tobytes(), np.asarray(pin.active).tobytes())


def _wake(app: App, data: SleepData, sleeping: list, view: np.ndarray | None) -> None:
    """Wake the asleep cloths something may move and the frozen ones back in view (or no longer allowed off)."""
    gravity = winds = None
    grabbed = {grab.cloth for _, grab in app.query(Grab) if grab.active}
    asleep = []
    for entity, cloth, sleep in sleeping:
        if sleep.state == "frozen":
            continue                                 # decided below with the view
        held = data.held.get(entity)
        if held is None:
            continue                                 # put to sleep by the game this step: recorded below
        if gravity is None:
            gravity, winds = _gravity(app), _winds(app)
        if held[4] is None:                          # loaded from a snapshot: the restored cloth's count
            held = data.held[entity] = (*held[:4], cloth.revision)
        if (not sleep.enabled or entity in grabbed or held[0] != gravity or held[1] != winds
                or held[3] != cloth.changes or held[4] != cloth.revision or held[2] != _pin_state(app, entity)):
            _awaken(data, entity, sleep)
        else:
            asleep.append((entity, sleep))
    for entity, cloth, sleep in sleeping:
        if sleep.state == "frozen" and (view is None or not sleep.offscreen or not _outside(view, data.box[entity])):
            _awaken(data, entity, sleep)
    if not asleep:
        data.posed = -1
        return
    moved = _moved_colliders(app, data)
    if moved is None or not len(moved):
        return
    boxes = np.array([data.box[entity] for entity, _ in asleep])
    reach = np.array([sleep.reach for _, sleep in asleep])[:, None]
    lo, hi = boxes[:, None, :3] - reach[:, :, None], boxes[:, None, 3:] + reach[:, :, None]
    centre, radius = moved[None, :, :3], moved[None, :, 3]
    gap = np.maximum(lo - centre, 0.0) + np.maximum(centre - hi, 0.0)        # (cloths, colliders, 3) [m]
    near = (np.einsum("ijk,ijk->ij", gap, gap) <= radius * radius).any(axis=1)
    for (entity, sleep), hit in zip(asleep, near):
        if hit:
            _awaken(data, entity, sleep)


def _awaken(data: SleepData, entity: int, sleep: Sleep) -> None:
    sleep.state = "awake"
    data.quiet[entity] = 0
    data.held.pop(entity, None)


def _moved_colliders(app: App, data: SleepData) -> np.ndarray | None:
    """Colliders that moved, appeared, changed or went since the last step, as (m, 4) rows: centre [m], the radius
    [m] of a ball holding them over the move (inf: unbounded). None when the last poses are not from the previous
    step (nothing was asleep then: the poses are only taken now)."""
    step = app.clock.step_index
    fresh = data.posed == step - 1
    poses: dict[int, tuple] = {}
    moved = []
    for entity, collider, transform in app.query(Collider, Transform):
        shape = collider.shape
        bound = shape.extents()[0]
        centre = np.array(transform.position, np.float64)
        radius = math.inf if bound <= 0.0 else bound + collider.thickness
        signature = (type(shape).__name__, _key(shape), collider.active, collider.thickness, centre.tobytes(),
                     np.asarray(transform.rotation).tobytes())   # values only: the same after a snapshot's load
        poses[entity] = (centre, radius, signature)
        old = data.poses.get(entity)
        if fresh and (old is None or old[2] != signature):
            travel = 0.0 if old is None else float(np.linalg.norm(centre - old[0]))
            moved.append((*centre, max(radius, 0.0 if old is None else old[1]) + travel))
    if fresh:
        moved.extend((*old[0], old[1]) for entity, old in data.poses.items() if entity not in poses)
    data.poses = poses
    data.posed = step
    return np.array(moved, np.float64).reshape(-1, 4) if fresh else None


def _view_planes(app: App, data: SleepData) -> np.ndarray | None:
    """The six planes (6, 4) of the view of the App's first Camera (a point p is inside when every plane·(p, 1) ≥ 0;
    Gribb & Hartmann's rows of the view-projection matrix), or None without a Camera. Kept while the camera's
    fields and the view's aspect stay the same."""
    cameras = app.query(Camera)
    if not cameras:
        return None
    camera = cameras[0][1]
    window = app.resources.get(Window) or app.resources.get(WindowSettings)
    aspect = window.width / window.height if window is not None else DEFAULT_ASPECT
    key = (id(camera), tuple(camera.target), camera.distance, camera.yaw, camera.pitch, camera.fov_y,
           camera.near, camera.far, camera.orthographic, camera.ortho_height, aspect)
    if key != data.view_key:
        m = camera.projection(aspect) @ camera.view()
        data.view = np.stack([m[3] + m[0], m[3] - m[0], m[3] + m[1], m[3] - m[1], m[3] + m[2], m[3] - m[2]])
        data.view_key = key
    return data.view


_PICK = np.array([[3 if i & 1 else 0, 4 if i & 2 else 1, 5 if i & 4 else 2] for i in range(8)])
"""Indices into a bound box (min xyz, max xyz) giving its 8 corners, (8, 3): ``box[_PICK]``."""


def _outside(planes: np.ndarray, box: np.ndarray) -> bool:
    """Whether the bound box (min xyz, max xyz) [m] lies wholly on the outer side of one of the view's planes."""
    return bool(((box[_PICK] @ planes[:, :3].T + planes[:, 3]) < 0.0).all(axis=0).any())


# --- kernels --------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _survey(x, last, box):
    """The largest squared step displacement max_i |x_i − last_i|² [m²] of a cloth, then ``last`` ← x (the next
    step's reference), and its bound box into ``box`` (6,): min xyz, max xyz [m]. x, last (n, 3) [m]. A NaN
    displacement counts as no motion here (the guard deals with it)."""
    worst = 0.0
    lo0 = lo1 = lo2 = np.inf
    hi0 = hi1 = hi2 = -np.inf
    for i in range(x.shape[0]):
        a, b, c = x[i, 0], x[i, 1], x[i, 2]
        dx, dy, dz = a - last[i, 0], b - last[i, 1], c - last[i, 2]
        d = dx * dx + dy * dy + dz * dz
        if d > worst:
            worst = d
        last[i, 0], last[i, 1], last[i, 2] = a, b, c
        lo0, lo1, lo2 = min(lo0, a), min(lo1, b), min(lo2, c)
        hi0, hi1, hi2 = max(hi0, a), max(hi1, b), max(hi2, c)
    box[0], box[1], box[2], box[3], box[4], box[5] = lo0, lo1, lo2, hi0, hi1, hi2
    return worst


python_twin(_survey, per_step=True)
_survey_call = _survey                               # the Python call site's name (launch/cold_kernels.py)
called_from(__name__, _survey)
