"""Record and replay: log the inputs a game feeds the simulation each fixed step, and play them back exactly.

Typical use::

    recorder = Recorder()                      # a plugin: add it to the App you play
    app.add_plugin(recorder)
    ...                                        # the game moves pins, colliders, wind, grabs, bodies
    save_replay(recorder.log, "run.loomrec")

    fresh = App(dt=1 / 60, substeps=16)        # the same scene code builds a fresh App ...
    fresh.add_plugin(DefaultPlugins)
    build_scene(fresh)
    replay(load_replay("run.loomrec"), fresh)  # ... and it passes through the same states, bit for bit

What is an input: whatever code outside the fixed step may change between steps — the game's
frame loop, INPUT-stage systems reading a keyboard or mouse, scripts calling ``app.step`` — as
opposed to what the step computes. By default (``DEFAULT_INPUTS``, matched by class name, so a
game lists its own classes the same way): Pin target, active, offset and attach_to; every Transform's
position and rotation (colliders, pin carriers); Collider active, thickness and friction; every
init field of Wind and Blower; Grab active, cloth, particle, target, depth and radius; a
RigidBody2D body's position, velocity, angle and angular velocity; the Gravity resource.

How: the Recorder runs first in each fixed step (first system of PRE_STEP), compares every input
with the value it logged last and logs only the ones that changed (bitwise), so a still scene costs
nothing per step and a moving collider costs its 12 numbers. The replay runs the same system
position in the fresh App and sets the logged values, skipping those already bit-identical (so
replaying never disturbs a value the step itself reproduced, e.g. a sleeping pymunk body). Systems
the scene code registers run in both Apps: a scripted motion in the schedule replays by itself.

Each step also logs a 16-byte BLAKE2b digest of every cloth's positions as the step begins, and the
log ends with the digest after the last step; ``replay`` checks them (``verify=True``) and raises
ReplayError at the first step that diverges, so a non-deterministic input that was not logged is
found where it first matters.

Recording may start mid-run: the log keeps the step index it started at; load the snapshot taken
then (loom.files.snapshot) into the fresh App before replaying. Logs are saved in the snapshot
container (checksummed, versioned, atomic; kind b"RPLY") as data only (loom.files.state_format: JSON and
``.npy`` arrays, no pickle), so loading one runs no code. ``load_replay`` checks the log's structure (dt,
step counts, (entity, class name, public attribute path, value) entries, 16-byte digests); ``replay``
checks each value as it applies it: a component or resource attribute is assigned through its class's
checks (shape, dtype, finiteness — on a shallow copy first when the array is updated in place), a pymunk
body's position, velocity, angle or angular velocity must be a finite number or 2-vector; a bad value
raises ReplayError naming the step, entity, class, path and value.
"""
from __future__ import annotations

import copy
import dataclasses
import hashlib
import math
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pymunk

from loom.engine.app import App
from loom.engine.persist import persistent
from loom.engine.schedule import Stage
from loom.files.snapshot import (KIND_REPLAY, SnapshotError, class_table, decode_plain, encode_plain,
                                 read_container, write_container)
from loom.files.state_format import FormatError

DEFAULT_INPUTS: dict[str, tuple[str, ...]] = {
    "Pin": ("target", "active", "offset", "attach_to"),
    "Transform": ("position", "rotation"),
    "Collider": ("active", "thickness", "friction"),
    "Wind": ("*",),
    "Blower": ("*",),
    "Grab": ("active", "cloth", "particle", "target", "depth", "radius"),
    "RigidBody2D": ("body.position", "body.velocity", "body.angle", "body.angular_velocity"),
    "Gravity": ("acceleration",),
}
"""Inputs recorded by default: component or resource class name → attribute paths ("*": every
dataclass init field; dotted paths reach into held objects, such as a pymunk Body)."""
DIGEST_TYPE = "Cloth"
"""Class name of the components whose positions ``x`` are digested each step."""
RESOURCE = -1
"""Entity value of a log entry that belongs to a resource."""


class ReplayError(ValueError):
    """A replay cannot run (different App) or diverged from the recording; the message says where."""


@persistent
@dataclass
class ReplayLog:
    """Recorded inputs of consecutive fixed steps, from step ``start_step`` on."""

    dt: float
    """Fixed step of the recorded App [s]."""
    substeps: int
    """Substeps per step of the recorded App."""
    start_step: int
    """``clock.step_index`` when recording began (0: from the scene's start)."""
    steps: list[list[tuple[int, str, str, Any]]] = field(default_factory=list)
    """Per step, the inputs that changed: (entity or RESOURCE, class name, attribute path, value)."""
    digests: list[bytes] = field(default_factory=list)
    """Per step, the digest of every cloth's positions as that step began."""
    end_digest: bytes | None = None
    """Digest after the last recorded step (None until the log is taken from its Recorder)."""

    @property
    def step_count(self) -> int:
        """Number of recorded steps."""
        return len(self.steps)


class Recorder:
    """Plugin that logs, at the start of every fixed step, the inputs in ``inputs`` that changed.

    ``inputs`` maps class names to attribute paths (default ``DEFAULT_INPUTS``); add your game's
    own input components there (``Recorder({**DEFAULT_INPUTS, "Hero": ("run", "jump")})``)."""

    def __init__(self, inputs: dict[str, tuple[str, ...]] | None = None) -> None:
        self.inputs = dict(DEFAULT_INPUTS if inputs is None else inputs)
        self._app: App | None = None
        self._log: ReplayLog | None = None
        self._last: dict[tuple[int, str, str], Any] = {}

    def build(self, app: App) -> None:
        """Register the recording system first in PRE_STEP."""
        self._app = app
        self._log = ReplayLog(app.clock.dt, app.clock.substeps, app.clock.step_index)
        _add_first(app, Stage.PRE_STEP, self.record_inputs, "record_inputs")

    def record_inputs(self, app: App, dt: float) -> None:
        """Log this step's changed inputs and the digest of the cloth positions it starts from."""
        log = self._require_log()
        if app.clock.step_index != log.start_step + log.step_count:
            raise ReplayError(f"Recorder: step {app.clock.step_index} follows step "
                              f"{log.start_step + log.step_count - 1}: the App's clock jumped (a snapshot "
                              f"load?); start a new Recorder after loading")
        changed = []
        for key, value in _read_inputs(app, self.inputs):
            if key not in self._last or not _same(self._last[key], value):
                self._last[key] = value
                changed.append((*key, value))
        log.steps.append(changed)
        log.digests.append(positions_digest(app))

    @property
    def log(self) -> ReplayLog:
        """The log so far, ending with the digest of the App's current positions (a copy: keep recording)."""
        log = self._require_log()
        return dataclasses.replace(log, steps=list(log.steps), digests=list(log.digests),
                                   end_digest=positions_digest(self._app))

    def _require_log(self) -> ReplayLog:
        if self._log is None or self._app is None:
            raise ReplayError("Recorder: add it to an App with app.add_plugin(recorder) first")
        return self._log


def replay(log: ReplayLog, app: App, *, verify: bool = True) -> App:
    """Step ``app`` through ``log``'s steps, setting the logged inputs at the start of each; return ``app``.

    ``app`` must be built by the same scene code as the recorded App and stand at step
    ``log.start_step`` (load the matching snapshot first if recording began mid-run). With
    ``verify`` the cloth positions are checked against the logged digests. Raises ReplayError for a
    different dt, substep count or start step, a logged entity or component the App lacks, or a
    divergence (naming the first step that differs)."""
    if not isinstance(log, ReplayLog):
        raise TypeError(f"replay: log = {log!r}: expected a ReplayLog (from Recorder.log or load_replay)")
    clock = app.clock
    if clock.dt != log.dt or clock.substeps != log.substeps:
        raise ReplayError(f"replay: the log was recorded at dt = {log.dt} s, {log.substeps} substeps; this App "
                          f"has dt = {clock.dt} s, {clock.substeps} substeps")
    if clock.step_index != log.start_step:
        raise ReplayError(f"replay: the log starts at step {log.start_step}, this App is at step "
                          f"{clock.step_index} (load the snapshot taken when recording began)")
    state = {"k": 0}

    def play_inputs(app: App, dt: float) -> None:
        k = state["k"]
        if verify and k < len(log.digests) and positions_digest(app) != log.digests[k]:
            raise ReplayError(f"replay: diverged before step {log.start_step + k}: cloth positions differ "
                              f"from the recording (an input that was not recorded changed?)")
        for entity, type_name, path, value in log.steps[k]:
            _write_input(app, entity, type_name, path, value, log.start_step + k)
        state["k"] = k + 1

    name = f"play_inputs_{id(log):x}"
    _add_first(app, Stage.PRE_STEP, play_inputs, name)
    try:
        app.step(log.step_count)
    finally:
        app.schedule.remove(Stage.PRE_STEP, name)
    if verify and log.end_digest is not None and positions_digest(app) != log.end_digest:
        raise ReplayError(f"replay: diverged in the last step ({log.start_step + log.step_count - 1}): "
                          f"final cloth positions differ from the recording")
    return app


def save_replay(log: ReplayLog, path: str | os.PathLike[str], *, trusted: tuple[type, ...] = ()) -> None:
    """Write ``log`` to ``path`` atomically in the checksummed snapshot container (kind b"RPLY"), as data only
    (loom.files.state_format). Values of a game's own classes need those classes in ``trusted``."""
    try:
        data = encode_plain(log, class_table(None, trusted), {"kind": "replay"})
    except FormatError as exc:
        raise SnapshotError(f"{path}: cannot save {' '.join(str(exc).split())}") from None
    write_container(path, KIND_REPLAY, data)


def load_replay(path: str | os.PathLike[str], *, trusted: tuple[type, ...] = ()) -> ReplayLog:
    """Read a log written by ``save_replay``; loading runs no code from the file. Raises SnapshotError in one
    line for a missing, corrupt, truncated, newer or pickle-based file, a malformed log, and values of classes
    outside Loom's table (pass game classes as ``trusted``)."""
    path = Path(path)
    document, log = decode_plain(path, read_container(path, KIND_REPLAY), class_table(None, trusted))
    if document.get("kind") != "replay" or type(log) is not ReplayLog:
        raise SnapshotError(f"{path}: payload is not a Loom replay log")
    problem = _log_problem(log)
    if problem:
        raise SnapshotError(f"{path}: invalid replay log: {problem}")
    return log


def _log_problem(log: ReplayLog) -> str | None:
    """What is wrong with a loaded log's structure (None: nothing); values are checked when applied."""
    if type(log.dt) is not float or not math.isfinite(log.dt) or log.dt <= 0:
        return f"ReplayLog.dt = {log.dt!r}: expected a finite float > 0 [s]"
    for name in ("substeps", "start_step"):
        value = getattr(log, name)
        if type(value) is not int or value < (1 if name == "substeps" else 0):
            return f"ReplayLog.{name} = {value!r}: expected an integer >= {1 if name == 'substeps' else 0}"
    if type(log.steps) is not list or type(log.digests) is not list:
        return "ReplayLog.steps and ReplayLog.digests must be lists"
    if len(log.digests) != len(log.steps):
        return f"ReplayLog: {len(log.steps)} steps but {len(log.digests)} digests"
    for k, entries in enumerate(log.steps):
        if type(entries) is not list:
            return f"ReplayLog.steps[{k}]: expected a list of entries"
        for entry in entries:
            if type(entry) is not tuple or len(entry) != 4 or type(entry[0]) is not int \
                    or type(entry[1]) is not str or type(entry[2]) is not str:
                return f"ReplayLog.steps[{k}]: entry {str(entry)[:80]} is not (entity, class name, path, value)"
            if entry[0] != RESOURCE and entry[0] < 1:
                return f"ReplayLog.steps[{k}]: entity {entry[0]} is not an entity id"
            if not all(part.isidentifier() and not part.startswith("_") for part in entry[2].split(".")):
                return f"ReplayLog.steps[{k}]: path {entry[2][:60]!r} is not a dotted public attribute path"
    for digest in [*log.digests, log.end_digest]:
        if digest is not None and (type(digest) is not bytes or len(digest) != 16):
            return f"ReplayLog: digest {str(digest)[:40]} is not 16 bytes"
    return None


def positions_digest(app: App) -> bytes:
    """16-byte BLAKE2b digest of every cloth's positions, in entity order (bit-exact comparisons)."""
    h = hashlib.blake2b(digest_size=16)
    with app._current():                                 # one switch into the App's world, not one per entity
        for entity in sorted(app.entities()):
            for component in app._components_of(entity):
                if type(component).__name__ == DIGEST_TYPE:
                    h.update(struct.pack("<q", entity))
                    h.update(np.ascontiguousarray(component.x).tobytes())
    return h.digest()


# --- private ------------------------------------------------------------------------------------------
def _add_first(app: App, stage: Stage, system: Any, name: str) -> None:
    """Add ``system`` so it runs first in ``stage``: the schedule breaks ties by insertion order, so an
    unconstrained entry at index 0 always resolves first (reaches into the engine's Schedule table)."""
    app.add_system(system, stage, name=name)
    entries = app.schedule._entries[stage]
    entries.insert(0, entries.pop())
    app.schedule._order.pop(stage, None)


def _paths(obj: Any, paths: tuple[str, ...]) -> tuple[str, ...]:
    if "*" in paths:
        extra = tuple(p for p in paths if p != "*")
        return tuple(f.name for f in dataclasses.fields(obj) if f.init) + extra
    return paths


def _read_inputs(app: App, inputs: dict[str, tuple[str, ...]]):
    """Yield ((entity or RESOURCE, class name, path), plain value) for every recorded input, in a fixed order."""
    for entity in sorted(app.entities()):
        for component in app._components_of(entity):
            name = type(component).__name__
            if name in inputs:
                for path in _paths(component, inputs[name]):
                    yield (entity, name, path), _plain(_get(component, path))
    for cls, resource in app.resources.items():
        name = cls.__name__
        if name in inputs:
            for path in _paths(resource, inputs[name]):
                yield (RESOURCE, name, path), _plain(_get(resource, path))


def _write_input(app: App, entity: int, type_name: str, path: str, value: Any, step: int) -> None:
    """Set one logged input on the App, unless it already holds that exact value."""
    if entity == RESOURCE:
        owner = next((r for cls, r in app.resources.items() if cls.__name__ == type_name), None)
    else:
        owner = next((c for c in app._components_of(entity) if type(c).__name__ == type_name), None)
    if owner is None:
        where = "resource" if entity == RESOURCE else f"entity {entity}"
        raise ReplayError(f"replay step {step}: {where} has no {type_name} (was this App built by the same "
                          f"scene code?)")
    where = f"replay step {step}: {'resource' if entity == RESOURCE else f'entity {entity}'} {type_name}.{path}"
    *parents, last = path.split(".")
    try:
        for part in parents:
            owner = getattr(owner, part)
        current = getattr(owner, last)
    except AttributeError:
        raise ReplayError(f"{where}: no such attribute (was this App built by the same scene code?)") from None
    if _same(_plain(current), value):
        return
    if isinstance(owner, pymunk.Body):
        _check_body_value(where, value)
    candidate = value.copy() if isinstance(value, np.ndarray) else value
    keep = isinstance(current, np.ndarray) and current.flags.writeable
    probe = copy.copy(owner) if keep else owner            # an array is checked on a shallow copy, then copied in
    try:
        setattr(probe, last, candidate)                    # the class checks it (shape, dtype, finiteness)
    except (ValueError, TypeError) as exc:
        raise ReplayError(f"{where} = {_short(value)}: {' '.join(str(exc).split())}") from None
    if not keep:
        return
    checked = getattr(probe, last)
    if isinstance(checked, np.ndarray) and checked.shape == current.shape and checked.dtype == current.dtype:
        np.copyto(current, checked)                        # keep the array: systems may hold it
    else:
        setattr(owner, last, checked)


def _check_body_value(where: str, value: Any) -> None:
    """A pymunk Body's logged position, velocity, angle or angular velocity: a finite number or 2-vector."""
    items = value if isinstance(value, tuple) else (value,)
    if len(items) not in (1, 2) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                           and math.isfinite(v) for v in items):
        raise ReplayError(f"{where} = {_short(value)}: expected a finite number or (x, y) of finite numbers")


def _short(value: Any) -> str:
    """A value for an error message: at most 80 characters, one line."""
    text = " ".join(repr(value).split())
    return text if len(text) <= 80 else text[:77] + "..."


def _get(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _plain(value: Any) -> Any:
    """A detached, plain copy of an input value: arrays copied, tuples (pymunk Vec2d) as tuples."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def _same(a: Any, b: Any) -> bool:
    """Bitwise equality (0.0 and −0.0 differ, NaN equals the same NaN)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape
                and a.dtype == b.dtype and a.tobytes() == b.tobytes())
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b)
                and all(_same(x, y) for x, y in zip(a, b)))
    if isinstance(a, float) or isinstance(b, float):
        return type(a) is type(b) and struct.pack("<d", a) == struct.pack("<d", b)
    return type(a) is type(b) and a == b


__all__ = ["DEFAULT_INPUTS", "Recorder", "ReplayError", "ReplayLog", "load_replay", "positions_digest", "replay",
           "save_replay"]
