"""Snapshots: save an App's whole simulation state to a file and resume from it bit-identically.

Typical use::

    save_snapshot(app, "autosave.loom")            # atomic: the old file survives a crash mid-write
    ...
    app = App(dt=1 / 60, substeps=16)              # later, or in another process:
    app.add_plugin(DefaultPlugins)                 # the same scene code builds the same App ...
    build_scene(app)
    load_snapshot(app, "autosave.loom")            # ... and its state is replaced by the saved one
    app.step(60)                                   # bit-identical to never having stopped

Why "restore into an App built by the same scene code" (and not ``load_snapshot(path) -> App``):
an App is data (entities, components, resources, clock) *and* behaviour (plugins, systems, event
handlers, reporters: functions and closures). Only the data is saved; the behaviour comes from the
code that built the App, so a snapshot never has to name — let alone unpickle — a function.

What is captured (everything the next step reads):

- every entity, with its exact id, and every component of it, whole (all dataclass fields and
  other attributes: Cloth's x, v, x_prev, inv_mass, base_inv_mass, force, lambdas, tether tables
  and masks, rejected_steps; Pin's step_start/step_end/bound; Tearable's timers; Grab's scratch;
  RigidBody2D's pymunk Body and pending impulses; game components such as a Hero) — plus esper's
  next entity id, so entities spawned after a load get the ids they would have had;
- every resource that pickles as plain Loom / numpy / pymunk data: Gravity, ColliderSet (with
  ``pose1``, the last step's end poses, where moving colliders start the next step), the guard's
  StepSnapshot, the implicit workspaces (adaptive step level, wait counters, contact sets),
  mass-spring and Verlet scratch, wind and self-collision scratch, Space2D (the pymunk Space with
  its bodies and shapes);
- the clock: dt, substeps, max_steps, accumulator, step_index, substep_index, dropped.

Everything goes through one pickle, so objects shared between components and resources (a
workspace's ``triangles is cloth.triangles``, a ColliderSet's meshes, a body in both a RigidBody2D
and the Space) are still shared after a load: the identity checks systems use to detect stale
scratch keep working. Component, resource and clock objects the App already has (same entity,
same type) are restored *in place*, so a scene's closures that hold them stay valid; the arrays
inside them are new objects.

Not captured: the schedule, plugins, event handlers and reporters (they come from the scene
code); state kept outside components and resources (closures, module globals, attributes of
system objects); resources that do not pickle under the rules below (a WindowRunner's callback,
a Window): they are skipped with a warning, listed in the file, and left as the loading App has
them; wall-clock statistics (``sim_seconds``, ``system_seconds``); numba's thread count.
pymunk: a Space pickles with its bodies, shapes and constraints but **without its contact cache**
(arbiters, accumulated impulses for warm starting), so rigid bodies touching each other inside
pymunk at the moment of the save resume close to, not bit-identical with, the uninterrupted run.
Bodies touching only cloth (through Loom colliders) resume bit-identically.

File format (version 1), all integers little-endian::

    offset  size  field
    0       8     magic b"LOOMSNAP"
    8       4     format version, uint32 (this Loom writes and reads FORMAT_VERSION)
    12      4     kind: b"SNAP" (snapshot) or b"RPLY" (replay log, loom.files.replay)
    16      8     payload length in bytes, uint64
    24      32    SHA-256 of the payload
    56      …     payload: a pickle (protocol 5) of a dict of plain data

Loading checks, in order: length of the header, magic, version (a newer one is refused, never
guessed at), kind, payload length (truncation), checksum; each failure raises ``SnapshotError``
naming the file and the problem in one line. The pickle is read by a restricted unpickler that
only resolves: classes from ``loom.components``, ``loom.systems``, ``loom.engine`` and ``loom.files``
(a replay log); classes from ``pymunk``; the few numpy functions and classes arrays, dtypes and
scalars need; safe builtins (set, frozenset, complex, slice, range, bytearray) and ``collections``
containers; and the classes of components and resources the loading App already holds (its game's
own components), plus any given as ``trusted=``. Functions (other than those numpy helpers) are
never resolved. A snapshot is still a pickle: load only files you or your game wrote — the checksum
detects corruption, not tampering.

Writes are atomic: the bytes go to a temporary file in the target's directory, are flushed and
fsync'ed, and only then ``os.replace`` the target; an error anywhere before the rename deletes the
temporary file and leaves the previous snapshot intact.
"""
from __future__ import annotations

import hashlib
import importlib
import io
import logging
import os
import pickle
import re
import struct
import tempfile
import types
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import esper
import numpy as np

from loom.engine.app import App

log = logging.getLogger("loom.snapshot")

FORMAT_VERSION = 1
"""Container format this Loom writes; files with a larger version are refused."""
MAGIC = b"LOOMSNAP"
KIND_SNAPSHOT = b"SNAP"
KIND_REPLAY = b"RPLY"
_KIND_NAMES = {KIND_SNAPSHOT: "snapshot", KIND_REPLAY: "replay log"}
_HEADER = struct.Struct("<8sI4sQ32s")
HEADER_SIZE = _HEADER.size
"""Bytes before the payload (56)."""

_LOOM_PACKAGES = ("loom.components", "loom.systems", "loom.engine", "loom.files")
"""Packages whose classes a snapshot may name (a game's own classes come in as the App's or as trusted=)."""
_SAFE_BUILTINS = frozenset({"set", "frozenset", "complex", "slice", "range", "bytearray", "bytes", "object"})
_SAFE_COLLECTIONS = frozenset({"OrderedDict", "deque", "Counter"})
_NUMPY_NAMES = {                                           # what arrays, dtypes and scalars pickle to
    "numpy": {"ndarray", "dtype"},
    "numpy.core.multiarray": {"_reconstruct", "scalar"},
    "numpy._core.multiarray": {"_reconstruct", "scalar"},
    "numpy.core.numeric": {"_frombuffer"},
    "numpy._core.numeric": {"_frombuffer"},
}


class SnapshotError(ValueError):
    """A snapshot or replay file cannot be written or read; the message names the file and why."""


# --- public API -------------------------------------------------------------------------------------
def save_snapshot(app: App, path: str | os.PathLike[str]) -> None:
    """Write ``app``'s whole simulation state to ``path`` atomically (see the module docstring).

    Raises SnapshotError if a component cannot be saved (a class outside the trusted set, or an
    object that does not pickle, such as a lambda); resources that cannot are skipped with a warning."""
    path = Path(path)
    try:
        data = _snapshot_bytes(app, path)
    except _Refused as exc:
        raise SnapshotError(f"{path}: cannot save {exc}") from None
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        raise SnapshotError(f"{path}: cannot save the world: {exc} (components must be plain data)") from None
    write_container(path, KIND_SNAPSHOT, data)


def load_snapshot(app: App, path: str | os.PathLike[str], *, trusted: Iterable[type] = ()) -> App:
    """Replace ``app``'s entities, components, saved resources and clock by those in ``path``; return ``app``.

    ``app`` must be built by the same scene code as the saved App (same plugins and systems): its
    behaviour is kept, its state replaced. Classes of components ``app`` does not hold yet (a game
    component spawned after start-up) must be passed in ``trusted``. Raises SnapshotError (a
    ValueError) for a missing, corrupt, truncated, newer or untrusted file; ``app`` is unchanged then."""
    path = Path(path)
    data = read_container(path, KIND_SNAPSHOT)
    app._use()
    allowed = _app_types(app) | set(trusted)
    targets: dict[tuple[Any, ...], Any] = {}
    existing = {(e, type(c)): c for e in app.entities() for c in esper.components_for_entity(e)}

    def target(key: tuple[Any, ...], cls: type) -> Any:
        """The object a saved component or resource becomes: the App's own (in place) or a new one."""
        if key not in targets:
            kind, entity = key[0], key[1]
            if kind == "component":
                found = existing.get((entity, cls))
            else:
                found = app.resources.get(cls)
            targets[key] = found if type(found) is cls else cls.__new__(cls)
        return targets[key]

    try:
        payload = _RestrictedUnpickler(io.BytesIO(data), allowed, target).load()
        if not isinstance(payload, dict) or {"entities", "resources", "clock"} - payload.keys():
            raise SnapshotError(f"{path}: payload is not a Loom snapshot (missing sections)")
    except SnapshotError:
        raise
    except _Refused as exc:
        raise SnapshotError(f"{path}: refused to load {exc}") from None
    except Exception as exc:                            # a checksummed file that still fails: one line
        raise SnapshotError(f"{path}: cannot read the payload: {type(exc).__name__}: {exc}") from None
    saved_plugins = payload.get("plugins", [])
    if saved_plugins != app.plugins:
        log.warning("load_snapshot %s: saved App had plugins %s, this one has %s; systems may differ",
                    path, saved_plugins, app.plugins)
    # --- commit: nothing above changed the App -------------------------------------------------
    objects = []
    for entity, comps in payload["entities"]:
        row = []
        for cls, state in comps:
            obj = target(("component", entity, cls.__module__, cls.__qualname__), cls)
            _set_state(obj, state)
            row.append(obj)
        objects.append((entity, row))
    esper.clear_database()
    wanted = {entity for entity, _ in objects}
    rows = dict(objects)
    last = max([payload.get("next_entity", 1) - 1, *wanted], default=0)
    for entity in range(1, last + 1):                   # esper hands out ids in order: replay them
        made = esper.create_entity(*rows.get(entity, ()))
        if made != entity:
            raise SnapshotError(f"{path}: esper created entity {made}, expected {entity}")
    for entity in range(1, last + 1):
        if entity not in wanted:
            esper.delete_entity(entity, immediate=True)
    for cls, state in payload["resources"]:
        obj = target(("resource", None, cls.__module__, cls.__qualname__), cls)
        _set_state(obj, state)
        app.resources[cls] = obj
    clock = payload["clock"]
    vars(app.clock).update(clock)
    esper.clear_cache()
    return app


# --- container: header, checksum, atomic write (shared with files.replay) ----------------------------
def write_container(path: str | os.PathLike[str], kind: bytes, payload: bytes) -> None:
    """Write ``payload`` under a checksummed header to ``path`` atomically (temp file, fsync, rename)."""
    path = Path(path)
    header = _HEADER.pack(MAGIC, FORMAT_VERSION, kind, len(payload), hashlib.sha256(payload).digest())
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(header)
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:                                                # make the rename itself durable (POSIX)
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def read_container(path: str | os.PathLike[str], kind: bytes) -> bytes:
    """Return the checked payload of the ``kind`` file at ``path``; raise SnapshotError in one line if not."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SnapshotError(f"{path}: cannot read: {exc.strerror or exc}") from None
    what = _KIND_NAMES[kind]
    if len(raw) < HEADER_SIZE:
        raise SnapshotError(f"{path}: truncated: {len(raw)} bytes, a Loom {what} header needs {HEADER_SIZE}")
    magic, version, file_kind, length, digest = _HEADER.unpack_from(raw)
    if magic != MAGIC:
        raise SnapshotError(f"{path}: not a Loom file (magic {magic!r}, expected {MAGIC!r})")
    if version > FORMAT_VERSION:
        raise SnapshotError(f"{path}: format version {version} is newer than this Loom ({FORMAT_VERSION}); "
                            f"upgrade Loom to read it")
    if version < 1:
        raise SnapshotError(f"{path}: format version {version} is not a valid Loom format version")
    if file_kind != kind:
        found = _KIND_NAMES.get(file_kind, repr(file_kind))
        raise SnapshotError(f"{path}: is a {found}, not a {what}")
    payload = raw[HEADER_SIZE:]
    if len(payload) != length:
        raise SnapshotError(f"{path}: truncated: header says {length} payload bytes, file has {len(payload)}")
    if hashlib.sha256(payload).digest() != digest:
        raise SnapshotError(f"{path}: checksum mismatch: the file is corrupt (SHA-256 of the payload differs "
                            f"from the header's)")
    return payload


def dumps_plain(obj: Any) -> bytes:
    """Pickle ``obj`` under the same class rules as snapshots (for loom.files.replay's logs)."""
    try:
        return _dumps(obj, frozenset(), {})
    except _Refused as exc:
        raise SnapshotError(f"cannot save {exc}") from None


def loads_plain(path: Path, data: bytes, trusted: Iterable[type] = ()) -> Any:
    """Unpickle ``data`` read from ``path`` under the snapshot rules; raise SnapshotError in one line."""
    try:
        return _RestrictedUnpickler(io.BytesIO(data), set(trusted), None).load()
    except _Refused as exc:
        raise SnapshotError(f"{path}: refused to load {exc}") from None
    except Exception as exc:
        raise SnapshotError(f"{path}: cannot read the payload: {type(exc).__name__}: {exc}") from None


# --- private: class rules, pickling, state ----------------------------------------------------------
class _Refused(Exception):
    """A class or function outside the trusted set was met while pickling or unpickling."""


def _in_loom(module: str) -> bool:
    """True if ``module`` is one of ``_LOOM_PACKAGES`` or inside one."""
    return any(module == package or module.startswith(package + ".") for package in _LOOM_PACKAGES)


def _allowed(module: str, name: str, obj: Any, trusted: set[type] | frozenset[type]) -> bool:
    """True if the global ``module.name`` (resolved to ``obj``) may appear in a snapshot."""
    if module in _NUMPY_NAMES and name in _NUMPY_NAMES[module]:
        return True
    if not isinstance(obj, type):
        return False                                     # no function is ever called by a load
    if obj in trusted:
        return True
    root = module.split(".")[0]
    if _in_loom(module) or root == "pymunk":
        return True
    if module == "numpy.dtypes" or (root == "numpy" and issubclass(obj, np.generic)):
        return True
    if module == "builtins":
        return name in _SAFE_BUILTINS
    if module == "collections":
        return name in _SAFE_COLLECTIONS
    return False


def _app_types(app: App) -> set[type]:
    """Classes of the App's components and resources: trusted, since the App's own code made them."""
    types_ = {type(c) for e in app.entities() for c in esper.components_for_entity(e)}
    types_.update(app.resources)
    return types_


def _state_of(obj: Any, what: str) -> Any:
    """The picklable state of a component or resource (its ``__getstate__``, usually its ``__dict__``)."""
    getstate = getattr(obj, "__getstate__", None)
    state = getstate() if getstate is not None else None
    if state is None and not hasattr(obj, "__setstate__"):
        raise _Refused(f"{what}: {type(obj).__qualname__} has no state to save")
    return state


def _set_state(obj: Any, state: Any) -> None:
    """Put ``state`` into ``obj`` (in place: the object keeps its identity)."""
    setstate = getattr(obj, "__setstate__", None)
    if setstate is not None:
        setstate(state)
        return
    if isinstance(state, tuple) and len(state) == 2:    # (__dict__, slots) from object.__getstate__
        state, slots = state
        for key, value in (slots or {}).items():
            setattr(obj, key, value)
    if state:
        obj.__dict__.clear()
        obj.__dict__.update(state)


def _snapshot_bytes(app: App, path: Path) -> bytes:
    """Pickle the App's state (entities, saved resources, clock) under the class rules."""
    app._use()
    trusted = _app_types(app)
    entities = []
    component_ids: dict[int, tuple[Any, ...]] = {}
    for entity in sorted(app.entities()):
        if not esper.entity_exists(entity):               # deferred deletion pending: already gone
            continue
        comps = []
        for component in esper.components_for_entity(entity):
            cls = type(component)
            comps.append((cls, _state_of(component, f"entity {entity} {cls.__name__}")))
            component_ids[id(component)] = ("component", entity, cls.__module__, cls.__qualname__)
        entities.append((entity, comps))
    resources, skipped = [], []
    for cls, resource in app.resources.items():
        try:
            _dumps(resource, trusted, component_ids)     # dry run: does it pickle under the rules?
        except (_Refused, pickle.PicklingError, TypeError, AttributeError) as exc:
            skipped.append(f"{cls.__module__}.{cls.__qualname__}")
            log.warning("save_snapshot %s: resource %s not saved (%s); the loading App keeps its own",
                        path, cls.__qualname__, exc)
            continue
        resources.append((cls, _state_of(resource, f"resource {cls.__name__}")))
        component_ids[id(resource)] = ("resource", None, cls.__module__, cls.__qualname__)
    payload = {
        "entities": entities,
        "next_entity": _next_entity_id(entities),
        "resources": resources,
        "skipped_resources": skipped,
        "clock": dict(vars(app.clock)),
        "plugins": app.plugins,
    }
    return _dumps(payload, trusted, component_ids)


def _dumps(obj: Any, trusted: set[type] | frozenset[type], ids: dict[int, tuple[Any, ...]]) -> bytes:
    buffer = io.BytesIO()
    _CheckedPickler(buffer, trusted, ids).dump(obj)
    return buffer.getvalue()


class _CheckedPickler(pickle.Pickler):
    """Pickles only what the restricted unpickler will accept; components and resources referenced from
    elsewhere are written as references to their own entry (restored in place on load)."""

    def __init__(self, file: io.BytesIO, trusted: set[type] | frozenset[type], ids: dict[int, tuple[Any, ...]]):
        super().__init__(file, protocol=5)
        self.trusted = trusted
        self.ids = ids

    def persistent_id(self, obj: Any) -> Any:
        return self.ids.get(id(obj))

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
            module = getattr(obj, "__module__", None) or "?"
            name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", "?")
            if not _allowed(module, name, obj, self.trusted):
                raise _Refused(f"{module}.{name}: not a Loom, numpy or pymunk class (functions are never saved)")
        return NotImplemented


class _RestrictedUnpickler(pickle.Unpickler):
    """Resolves only the globals ``_allowed`` accepts; component/resource references go to ``target``."""

    def __init__(self, file: io.BytesIO, trusted: set[type], target: Any) -> None:
        super().__init__(file)
        self.trusted = trusted
        self.target = target

    def find_class(self, module: str, name: str) -> Any:
        root = module.split(".")[0]
        if not _in_loom(module) and root not in ("pymunk", "numpy", "builtins", "collections") and \
                not any(t.__module__ == module for t in self.trusted):
            raise _Refused(f"{module}.{name}: module {module!r} is not trusted (pass its classes as trusted=)")
        try:
            obj = importlib.import_module(module)
            for part in name.split("."):
                obj = getattr(obj, part)
        except (ImportError, AttributeError):
            raise _Refused(f"{module}.{name}: no such class in this Loom") from None
        if not _allowed(module, name, obj, self.trusted):
            raise _Refused(f"{module}.{name}: not a Loom, numpy or pymunk class (pass game classes as trusted=)")
        return obj

    def persistent_load(self, pid: Any) -> Any:
        if self.target is None or not (isinstance(pid, tuple) and len(pid) == 4):
            raise _Refused(f"reference {pid!r}: unexpected in this file")
        kind, entity, module, qualname = pid
        return self.target(pid, self.find_class(module, qualname))


def _next_entity_id(entities: list[tuple[int, Any]]) -> int:
    """The id esper will give the next entity of the current world (read without consuming it)."""
    found = re.fullmatch(r"count\((\d+)\)", repr(getattr(esper, "_entity_count", None)))
    if found:
        return int(found.group(1))
    return max((e for e, _ in entities), default=0) + 1


__all__ = ["FORMAT_VERSION", "SnapshotError", "load_snapshot", "save_snapshot"]
