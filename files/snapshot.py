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
code that built the App, so a snapshot never names a function and loading one runs no code from it.

What a snapshot holds (everything the next step reads), as data only:

- every entity, with its exact id, and every component of it, whole (all dataclass fields and
  other attributes: Cloth's x, v, x_prev, inv_mass, base_inv_mass, force, changes, rejected_steps;
  Pin's step_start/step_end/bound; Tearable's timers; Grab's scratch; RigidBody2D's pymunk Body, cloth
  force and shift; game components such as a Hero) — plus esper's next entity id, so entities spawned
  after a load get the ids they would have had;
- every resource made of plain Loom / numpy / pymunk data: Gravity, ColliderSet (with ``pose1``, the
  last step's end poses, where moving colliders start the next step), the guard's StepSnapshot,
  XPBD's data per cloth (XPBDData: multipliers, tether tables and masks, checked against the loaded
  cloths), implicit workspaces (adaptive step level, wait counters, contact sets), mass-spring and Verlet
  scratch, wind scratch, Space2D (the pymunk Space with its bodies, shapes and constraints);
- the clock: dt, substeps, max_steps, accumulator, step_index, substep_index, dropped.

Values are written in Loom's state format (``loom.files.state_format``): None, bools, ints, floats
(non-finite ones tagged), strings, bytes, lists, tuples, dicts, sets, numpy arrays and scalars of plain
numeric or bool dtype (``.npy`` entries), objects of persistent classes (by name, with their attributes), and
pymunk bodies, shapes, constraints and spaces as their explicit state (rebuilt with pymunk's constructors).
An object referenced twice (a workspace's ``triangles is cloth.triangles``, a body in both a RigidBody2D
and the Space) is written once and referenced, so it is still shared after a load: the identity checks
systems use to detect stale scratch keep working. Component, resource and clock objects the App already
has (same entity, same type) are restored *in place*, so a scene's closures that hold them stay valid;
the arrays inside them are new objects.

In a game's own esper world (``App(world="default")``, docs/embedding.md) a snapshot holds Loom's part only,
so it never touches the game's data: the components of persistent classes (``loom.engine.persist``: Cloth,
Pin, RigidBody2D, Transform …, a plugin's) on every entity holding one — not the game's own components on those
entities (its Hero, its Velocity), nor its other entities, nor esper's entity counter, which stay the game's to
save — plus Loom's resources and clock. Loading one needs every saved entity to exist in the App's world (the same
scene code made them; a missing one is refused, since esper cannot hand out a chosen id without taking it
from the game), puts the saved Loom components on them (in place where the entity holds one of that class),
takes off Loom's components the file does not have (an entity holding nothing but Loom's is despawned: Loom
made it), and leaves every component of the game's classes and every entity without Loom components as it
was. pymunk objects inside Loom's components restored in place (a RigidBody2D's body and shapes) stay the
game's objects with the state the game gave them: they live in the game's Space, so the game restores its
physics with its own state. A snapshot of a private world is refused by an App in a game's world and the other
way round.

Not captured: the schedule, plugins, event handlers and reporters (they come from the scene code);
state kept outside components and resources (closures, module globals, attributes of system objects);
resources that are not plain data (a WindowRunner's callback, a Window, a system's compiled scratch):
they are listed in the file and left as the loading App has them (a warning names a game's own; a
``loom.systems`` cache is rebuilt by its system, so it is skipped quietly); wall-clock statistics
(``sim_seconds``, ``system_seconds``); numba's thread count; pymunk velocity/position functions and
collision handlers (they come from the scene code) and the Space's **contact cache** (arbiters,
accumulated impulses for warm starting), so rigid bodies touching each other inside pymunk at the
moment of the save resume close to, not bit-identical with, the uninterrupted run. Bodies touching
only cloth (through Loom colliders) resume bit-identically.

File format (version 2), all integers little-endian::

    offset  size  field
    0       8     magic b"LOOMSNAP"
    8       4     format version, uint32 (this Loom writes and reads FORMAT_VERSION)
    12      4     kind: b"SNAP" (snapshot) or b"RPLY" (replay log, loom.files.replay)
    16      8     payload length in bytes, uint64
    24      32    SHA-256 of the payload
    56      …     payload: a zip holding state.json (structure and scalars) and one .npy entry per array

Loading runs no code from the file, by construction: there is no pickle; class names in the file are
looked up in a fixed table of the component, resource and value classes registered with ``@persistent`` (Loom's
and its plugins', ``state_format.loom_classes``) plus the classes of the loading App's own components and
resources and any given as ``trusted=``; a name outside it is refused; objects are made with ``cls.__new__``
and filled with their saved attributes; arrays are read with ``np.load(allow_pickle=False)`` after their header
(plain dtype, size) was checked, and the zip's total uncompressed size is capped. Version 1 files (pickles) are
refused, never read.

Loading checks, in order: length of the header, magic, version (a newer or a pickle-based one is refused),
kind, payload length (truncation), checksum (it detects corruption, not tampering), the format of every
value (kinds, class names, dtypes, sizes; pymunk values: finite, masses > 0), then every component, resource
and nested object with its class's ``check_state()`` (shapes, dtypes, finiteness, index ranges: the checks
its constructor makes), the entity ids and the clock's fields. Each failure raises ``SnapshotError`` naming
the file and the problem in one line (a field's ValueError keeps its ``Class.field = value``), and leaves
the App unchanged: everything is decoded and checked before the App is touched.

What is taken from the file, so that no array a kernel indexes comes unchecked from it: components and
data resources (Gravity, Space2D, a game's own) whole, after their checks; ColliderSet only its entities,
end poses and impulses (the rest is repacked from the Collider components at the next step); the implicit
solver's workspaces rebuilt from their loaded cloth (topology and index arrays from the cloth) and given
the file's solver state where its layout matches exactly; other system caches (``loom.systems``: guard
copies, scratch, batches) only if their class has ``check_state`` or they hold nothing but scalars (the
guard's Recovery) — otherwise the App gets a fresh one, which its systems refill at the next step.

Writes are atomic: the bytes go to a temporary file in the target's directory, are flushed and
fsync'ed, and only then ``os.replace`` the target; an error anywhere before the rename deletes the
temporary file and leaves the previous snapshot intact. The file gets the permissions the umask allows
(``0o666 & ~umask``), as ``open()`` would create it.
"""
from __future__ import annotations

import hashlib
import inspect
import logging
import math
import os
import re
import struct
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import esper
import numpy as np
import pymunk

from loom.engine.app import App
from loom.files.atomic import write_atomic
from loom.engine.persist import name_of
from loom.files.state_format import ClassTable, Decoder, Encoder, FormatError, loom_classes, set_state

log = logging.getLogger("loom.snapshot")

FORMAT_VERSION = 2
"""Container format this Loom writes and reads: 2 (data only). 1 (a pickle) is refused; a larger one too."""
MAGIC = b"LOOMSNAP"
KIND_SNAPSHOT = b"SNAP"
KIND_REPLAY = b"RPLY"
_KIND_NAMES = {KIND_SNAPSHOT: "snapshot", KIND_REPLAY: "replay log"}
_HEADER = struct.Struct("<8sI4sQ32s")
HEADER_SIZE = _HEADER.size
"""Bytes before the payload (56)."""
MAX_ENTITY_GAP = 1_000_000
"""Most ids a snapshot may leave unused below its next entity id (esper's ids are replayed one by one)."""

MAX_CLOCK_COUNT = 100_000
"""Largest substep count and max_steps a snapshot's clock may hold (a larger one would stall the App)."""


class SnapshotError(ValueError):
    """A snapshot or replay file cannot be written or read; the message names the file and why."""


# --- public API -------------------------------------------------------------------------------------
def save_snapshot(app: App, path: str | os.PathLike[str]) -> None:
    """Write ``app``'s whole simulation state to ``path`` atomically (see the module docstring).

    Raises SnapshotError if a component cannot be saved (an object that is not plain data, such as a
    lambda, or of a class outside the table), if ``load_snapshot`` would refuse the state (checked before
    writing: a value written in place that its field refuses, such as a negative mass), or the folder cannot
    be written; resources that cannot be saved are skipped with a warning."""
    path = Path(path)
    try:
        data = _snapshot_bytes(app, path)
    except FormatError as exc:
        raise SnapshotError(f"{path}: cannot save {_one_line(exc)} (components must be plain data)") from None
    _refuse_unloadable(app, path, data)
    write_container(path, KIND_SNAPSHOT, data)


def _refuse_unloadable(app: App, path: Path, data: bytes) -> None:
    """SnapshotError naming what ``load_snapshot`` would refuse in the payload ``data`` (a negative mass written in
    place, a resource it cannot read back): a save never writes a file its own App cannot load. The load's own
    decode and checks, without the commit: the App is not touched."""
    with app._current():
        try:
            _check_plan(_decode_snapshot(data, class_table(app), app), app)
        except (FormatError, ValueError) as exc:
            raise SnapshotError(f"{path}: cannot save: {_one_line(exc)} (load_snapshot would refuse it)") from None


def load_snapshot(app: App, path: str | os.PathLike[str], *, trusted: Iterable[type] = ()) -> App:
    """Replace ``app``'s entities, components, saved resources and clock by those in ``path``; return ``app``.

    ``app`` must be built by the same scene code as the saved App (same plugins and systems): its
    behaviour is kept, its state replaced. Classes of components ``app`` does not hold yet (a game
    component spawned after start-up) must be passed in ``trusted``. Raises SnapshotError (a
    ValueError) for a missing, corrupt, truncated, newer, pickle-based or invalid file, or one naming a
    class outside the table; ``app`` is unchanged then. Loading never runs code named by the file."""
    path = Path(path)
    data = read_container(path, KIND_SNAPSHOT)
    with app._current():                                # the App's world, the caller's again on return
        table = class_table(app, trusted)
        try:
            plan = _decode_snapshot(data, table, app)
            _check_plan(plan, app)
        except FormatError as exc:
            raise SnapshotError(f"{path}: refused to load: {_one_line(exc)}") from None
        except ValueError as exc:                           # a component's check_state(): Class.field and value
            raise SnapshotError(f"{path}: invalid state: {_one_line(exc)}") from None
        except Exception as exc:                            # a checksummed file that still fails: one line
            raise SnapshotError(f"{path}: cannot read the payload: {type(exc).__name__}: {_one_line(exc)}") \
                from None
        if plan["plugins"] != app.plugins:
            log.warning("load_snapshot %s: saved App had plugins %s, this one has %s; systems may differ",
                        path, plan["plugins"], app.plugins)
        _commit(plan, app, path)
    return app


def class_table(app: App | None, trusted: Iterable[type] = ()) -> ClassTable:
    """The classes a file loaded into ``app`` may name: the persistent classes (Loom's and its plugins'), the
    App's own component and resource classes (its scene code made them) and ``trusted``."""
    table = ClassTable(loom_classes())
    if app is not None:
        table.add(_app_types(app))
    table.add(trusted)
    return table


# --- container: header, checksum, atomic write (shared with files.replay) ----------------------------
def write_container(path: str | os.PathLike[str], kind: bytes, payload: bytes) -> None:
    """Write ``payload`` under a checksummed header to ``path`` atomically (loom.files.atomic: temp file, fsync,
    rename, the umask's permissions). SnapshotError naming ``path`` if its folder is missing; an OSError naming
    ``path`` for the others (not writable, disk full), and the previous file is left intact."""
    path = Path(path)
    header = _HEADER.pack(MAGIC, FORMAT_VERSION, kind, len(payload), hashlib.sha256(payload).digest())
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise SnapshotError(f"{path}: cannot write: folder {directory} does not exist")
    write_atomic(path, header + payload)                 # any other OSError names the path


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
    if version == 1:
        raise SnapshotError(f"{path}: format version 1 files are pickle-based and no longer read (loading one "
                            f"could run code); re-create it with this Loom")
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


def encode_plain(obj: Any, table: ClassTable, document: dict[str, Any]) -> bytes:
    """The state-format zip of ``document`` with ``obj`` encoded under key "value" (for loom.files.replay)."""
    encoder = Encoder(table)
    return encoder.finish({**document, "value": encoder.encode(obj, "value")})


def decode_plain(path: Path, data: bytes, table: ClassTable) -> tuple[dict[str, Any], Any]:
    """(document, value) of a zip written by ``encode_plain``; SnapshotError in one line if it is not one."""
    try:
        decoder = Decoder(data, table)
        return decoder.document, decoder.decode(decoder.document.get("value"))
    except FormatError as exc:
        raise SnapshotError(f"{path}: refused to load: {_one_line(exc)}") from None
    except Exception as exc:
        raise SnapshotError(f"{path}: cannot read the payload: {type(exc).__name__}: {_one_line(exc)}") from None


# --- private: saving ---------------------------------------------------------------------------------
def _one_line(exc: BaseException) -> str:
    """An exception's message on one line (at most 400 characters)."""
    text = " ".join(str(exc).split())
    return text if len(text) <= 400 else text[:397] + "..."


def _app_types(app: App) -> set[type]:
    """Classes of the App's components and resources: trusted, since the App's own code made them."""
    with app._current():
        types_ = {type(c) for e in app.entities() for c in app._components_of(e)}
    types_.update(app.resources)
    return types_


def _loom_component_types() -> frozenset[type]:
    """The persistent classes (``loom_classes``, Loom's and its plugins'): in a game's world, the components a
    snapshot saves and restores."""
    return frozenset(loom_classes())


def _snapshot_bytes(app: App, path: Path) -> bytes:
    """The snapshot payload: entities and their components, resources (those that are plain data), clock. In a
    game's world (``app.owns_world`` False) only the entities holding Loom's components, and only those."""
    shared = not app.owns_world
    own = _loom_component_types() if shared else frozenset()
    with app._current():
        encoder = Encoder(class_table(app))
        rows = []
        for entity in sorted(app.entities()):
            if not esper.entity_exists(entity):               # deferred deletion pending: already gone
                continue
            comps = list(esper.components_for_entity(entity))
            if shared:
                comps = [c for c in comps if type(c) in own]  # the game's own components are the game's to save
                if not comps:
                    continue
            rows.append((entity, [(encoder.root(c), c) for c in comps]))
        next_entity = _next_entity_id(rows)
    entities = [[entity, [{"id": ident, "c": name_of(type(c)),
                           "s": encoder.state(c, f"entity {entity} {type(c).__qualname__}")} for ident, c in comps]]
                for entity, comps in rows]
    resources, skipped = [], []
    for cls, resource in app.resources.items():
        mark = encoder.mark()
        try:
            ident = encoder.root(resource)
            resources.append({"id": ident, "c": name_of(type(resource)),
                              "s": encoder.state(resource, f"resource {cls.__qualname__}")})
        except FormatError as exc:
            encoder.rollback(mark)
            skipped.append(name_of(cls))
            # a system's cache (loom.systems) is rebuilt by its system after a load: not worth a warning
            report = log.debug if cls.__module__.startswith("loom.systems.") else log.warning
            report("save_snapshot %s: resource %s not saved (%s); the loading App keeps its own",
                   path, cls.__qualname__, _one_line(exc))
    clock = {}
    for name, value in vars(app.clock).items():
        clock[name] = encoder.encode(value, f"clock.{name}")
    document = {
        "kind": "snapshot",
        "resources": resources,
        "entities": entities,
        "next_entity": next_entity,
        "skipped_resources": skipped,
        "clock": clock,
        "plugins": list(app.plugins),
    }
    if shared:
        document["shared"] = True                         # Loom's part of a game's world (module docstring)
    return encoder.finish(document)


# --- private: loading ---------------------------------------------------------------------------------
def _list(value: Any, what: str) -> list[Any]:
    if type(value) is not list:
        raise FormatError(f"{what}: expected a list")
    return value


def _decode_snapshot(data: bytes, table: ClassTable, app: App) -> dict[str, Any]:
    """Decode the payload into a plan: the objects to become components/resources and their states. The App's
    own objects are chosen as targets (restored in place) but nothing is put into them yet."""
    decoder = Decoder(data, table)
    doc = decoder.document
    if doc.get("kind") != "snapshot":
        raise FormatError("payload is not a Loom snapshot (kind)")
    shared = not app.owns_world
    if doc.get("shared", False) is not shared:
        saved = "a game's esper world (App(world=...))" if doc.get("shared", False) is True else "a private world"
        here = f"the game's world {app.world!r}" if shared else "a private world"
        raise FormatError(f"the snapshot holds an App living in {saved}, this App lives in {here}: load it into "
                          f"an App made the same way")
    existing = {(e, type(c)): c for e in app.entities() for c in esper.components_for_entity(e)}
    resource_nodes = [_root_node(n, "resource") for n in _list(doc.get("resources"), "resources")]
    entity_rows = []
    for row in _list(doc.get("entities"), "entities"):
        row = _list(row, "entity row")
        if len(row) != 2 or type(row[0]) is not int or not 1 <= row[0] <= 2 ** 31:
            raise FormatError(f"entity row {str(row)[:60]}: expected [entity id >= 1, components]")
        entity_rows.append((row[0], [_root_node(n, f"entity {row[0]} component")
                                     for n in _list(row[1], f"entity {row[0]}")]))
    if len({e for e, _ in entity_rows}) != len(entity_rows):
        raise FormatError("an entity id appears twice")
    if shared:
        _check_shared_rows(entity_rows, table)
    # declare every root first (references between components and resources resolve to the targets)
    for node in resource_nodes:
        cls = _root_class(table, node)
        found = app.resources.get(cls)
        node["obj"] = found if type(found) is cls else decoder.new(node["c"])
        decoder.declare(node["id"], node["obj"])
    for entity, nodes in entity_rows:
        seen: set[type] = set()
        for node in nodes:
            cls = _root_class(table, node)
            if cls in seen:
                raise FormatError(f"entity {entity} has two {cls.__qualname__} components")
            seen.add(cls)
            prior = decoder.objects.get(node["id"])          # one object on several entities (a shared style)
            if prior is not None and type(prior) is cls:
                node["obj"] = prior
                continue
            found = existing.get((entity, cls))
            node["obj"] = found if type(found) is cls else decoder.new(node["c"])
            decoder.declare(node["id"], node["obj"])
    entities = [(e, [(n["obj"], decoder.decode(n.get("s"))) for n in nodes]) for e, nodes in entity_rows]
    resources = [(n["obj"], decoder.decode(n.get("s"))) for n in resource_nodes]
    clock = _clock(doc.get("clock"), app, decoder)
    next_entity = doc.get("next_entity")
    last = max([e for e, _ in entity_rows], default=0)
    if type(next_entity) is not int or not last < next_entity <= last + MAX_ENTITY_GAP + 1 and not shared:
        raise FormatError(f"next_entity = {str(next_entity)[:30]}: expected an integer above every entity id")
    plugins = doc.get("plugins")
    if type(plugins) is not list or any(type(p) is not str for p in plugins):
        raise FormatError("plugins: expected a list of names")
    if next_entity - 1 - len(entity_rows) > MAX_ENTITY_GAP and not shared:    # ids replayed only in a private world
        raise FormatError(f"next_entity = {next_entity}: more than {MAX_ENTITY_GAP} unused entity ids")
    return {"resources": resources, "entities": entities, "clock": clock, "next_entity": next_entity,
            "plugins": plugins, "nested": decoder.created, "shared": shared}


def _check_shared_rows(entity_rows: list[tuple[int, list[dict[str, Any]]]], table: ClassTable) -> None:
    """In a game's world: every saved entity exists in it now, and every saved component is of Loom's classes
    (the game's own components are never taken from a file)."""
    own = _loom_component_types()
    for entity, nodes in entity_rows:
        if not esper.entity_exists(entity):
            raise FormatError(f"entity {entity} is not in the game's world now: a snapshot of an App in a game's "
                              f"world puts Loom's components back on the game's entities, so build the scene "
                              f"(the same code, the same entities) before loading")
        for node in nodes:
            cls = _root_class(table, node)
            if cls not in own:
                raise FormatError(f"entity {entity}: {cls.__qualname__} is not one of Loom's component classes; "
                                  f"a snapshot of an App in a game's world holds Loom's components only")


def _root_node(node: Any, what: str) -> dict[str, Any]:
    if type(node) is not dict or type(node.get("id")) is not int or type(node.get("c")) is not str:
        raise FormatError(f"{what}: expected {{id, c, s}}")
    return dict(node)


def _root_class(table: ClassTable, node: dict[str, Any]) -> type:
    cls = table.lookup(node["c"])
    if issubclass(cls, tuple):
        raise FormatError(f"{node['c']}: a named tuple cannot be a component or resource")
    return cls


def _clock(node: Any, app: App, decoder: Decoder) -> dict[str, Any]:
    """The saved clock fields, each of the type the App's clock has (finite; counts >= 0, dt and sizes > 0)."""
    if type(node) is not dict:
        raise FormatError("clock: expected an object")
    current = vars(app.clock)
    if set(node) != set(current):
        raise FormatError(f"clock fields {sorted(node)[:10]} differ from this Loom's {sorted(current)}")
    clock = {}
    for name, raw in node.items():
        value = decoder.decode(raw)
        kind = type(current[name])
        if kind in (int, float) and (type(value) is not kind or not math.isfinite(value) or value < 0
                                     or (name in ("dt", "substeps", "max_steps") and value <= 0)):
            raise FormatError(f"clock.{name} = {str(value)[:40]}: expected a finite {kind.__name__} "
                              f"{'> 0' if name in ('dt', 'substeps', 'max_steps') else '>= 0'}")
        if name in ("substeps", "max_steps") and value > MAX_CLOCK_COUNT:
            raise FormatError(f"clock.{name} = {value}: more than {MAX_CLOCK_COUNT}")
        if kind not in (int, float) and type(value) is not kind:
            raise FormatError(f"clock.{name}: expected a {kind.__name__}")
        clock[name] = value
    return clock


def _validated_state(obj: Any, state: Any, clothes: dict[int, Any]) -> Any:
    """``state`` as ``obj``'s class accepts it: put into a blank object of the class, ``check_state()`` run
    (when the class has it: ValueError naming Class.field), and that object's checked attributes returned."""
    cls = type(obj)
    check = getattr(cls, "check_state", None)
    if check is None:
        return state
    blank = cls.__new__(cls)
    set_state(blank, state)
    _run_check(blank, clothes)
    return dict(vars(blank)) if getattr(cls, "__setstate__", None) is None else state


def _run_check(obj: Any, clothes: dict[int, Any]) -> None:
    """``obj.check_state()``; a system resource's ``check_state(clothes)`` also gets the loaded cloths by entity."""
    check = obj.check_state
    try:
        takes_clothes = len(inspect.signature(check).parameters) >= 1
    except (TypeError, ValueError):
        takes_clothes = False
    if takes_clothes:
        check(clothes)
    else:
        check()


def _scalar_state(state: Any, own: Any) -> bool:
    """True if ``state`` holds only finite scalars, each of the type the App's own object has there."""
    if type(state) is not dict:
        return False
    for name, value in state.items():
        if type(value) not in (int, float, bool, str, type(None)):
            return False
        if type(value) is float and not math.isfinite(value):
            return False
        mine = getattr(own, name, None)
        if mine is not None and value is not None and type(mine) is not type(value):
            return False
    return True


def _implicit_workspaces(state: Any, clothes: dict[int, Any], colliders: int, owner: type) -> dict[str, Any]:
    """The implicit solver's workspaces, each rebuilt for its loaded cloth (``ImplicitWorkspace(cloth)``: its
    topology, block pattern and index arrays come from the cloth, never from the file) and then given the
    file's solver state where it has exactly the layout of the rebuilt one: scalars of the same type, float
    arrays of the same shape and dtype (finite), int8/bool flag arrays of the same shape, per-particle collider
    indices in [-1, ``colliders``). ``owner`` is the ImplicitWorkspaces class; its workspace class, beside it in
    its module, is known by name (files/ imports no system's internals)."""
    if type(state) is not dict or type(state.get("by_entity")) is not dict:
        raise FormatError("ImplicitWorkspaces: expected {by_entity: {entity: workspace}}")
    spaces = {}
    for entity, loaded in state["by_entity"].items():
        cloth = clothes.get(entity)
        kind = type(loaded)
        if cloth is None or kind.__module__ != owner.__module__ or kind.__qualname__ != "ImplicitWorkspace":
            raise FormatError(f"ImplicitWorkspaces.by_entity[{str(entity)[:20]}]: not a workspace of a loaded cloth")
        fresh = kind(cloth)
        for name, template in fresh.__getstate__().items():
            if name in vars(loaded):
                object.__setattr__(fresh, name, _merged(template, vars(loaded)[name],
                                                        f"ImplicitWorkspace.{name}", colliders))
        spaces[entity] = fresh
    return {**state, "by_entity": spaces}


def _merged(template: Any, loaded: Any, where: str, limit: int) -> Any:
    """``loaded`` where it has exactly ``template``'s layout and is safe state (see ``_implicit_workspaces``);
    the template's value where the value is topology (integer arrays other than int8 flags) or another kind."""
    if isinstance(template, np.ndarray):
        if not isinstance(loaded, np.ndarray) or loaded.shape != template.shape or loaded.dtype != template.dtype:
            raise FormatError(f"{where}: array of shape {getattr(loaded, 'shape', None)}, expected {template.shape} "
                              f"{template.dtype}")
        if template.dtype.kind == "f":
            if not np.isfinite(loaded).all():
                raise FormatError(f"{where}: non-finite values")
            return loaded
        if template.dtype in (np.int8, np.bool_):
            return loaded
        constant = template.size == 0 or (template == template.flat[0]).all()
        if constant and template.size and loaded.min() >= -1 and loaded.max() < limit:
            return loaded                                  # an index per particle (collider), in range
        return template                                    # topology: from the cloth, never from the file
    if isinstance(template, tuple) and hasattr(template, "_fields"):
        if type(loaded) is not type(template):
            raise FormatError(f"{where}: expected a {type(template).__qualname__}")
        return type(template)(*(_merged(t, v, f"{where}.{f}", limit)
                                for f, t, v in zip(template._fields, template, loaded)))
    if type(template) in (int, float, bool):
        if type(loaded) is not type(template) or (type(loaded) is float and not math.isfinite(loaded)):
            raise FormatError(f"{where} = {str(loaded)[:40]}: expected a finite {type(template).__name__}")
        return loaded
    return template


def _collider_set(state: Any, entities: set[int]) -> dict[str, Any]:
    """The packed colliders, checked and reduced to what the next step reads from them: each packed collider's
    entity, its last end pose ``pose1`` (where a moving collider starts the next step), impulses (collision
    events); every other array is made empty-of-the-right-size here and repacked by ``gather_colliders`` from
    the Collider components (so no array the kernels index comes from the file)."""
    from loom.components.collider import ColliderSet
    if type(state) is not dict:
        raise FormatError("ColliderSet: state is not a mapping")
    ids = state.get("entities")
    if not isinstance(ids, np.ndarray) or ids.ndim != 1 or ids.dtype != np.int64 \
            or not set(ids.tolist()) <= entities or np.unique(ids).size != ids.size:
        raise FormatError("ColliderSet.entities: expected distinct ids of loaded entities, (k,) int64")
    k = ids.size
    fresh = ColliderSet().__dict__
    for name, width in (("pose1", 7), ("impulse", 3), ("impulse_point", 4)):
        array = state.get(name)
        if not isinstance(array, np.ndarray) or array.shape != (k, width) or array.dtype != np.float64 \
                or not np.isfinite(array).all():
            raise FormatError(f"ColliderSet.{name}: expected ({k}, {width}) finite float64")
        fresh[name] = array
    touching = state.get("touching")
    if type(touching) is not set or not touching <= entities:
        raise FormatError("ColliderSet.touching: expected a set of loaded entity ids")
    fresh.update(entities=ids, touching=touching, kind=np.zeros(k, np.int32), params=np.zeros((k, 4)),
                 margin=np.zeros(k), friction=np.zeros(k), two_way=np.zeros(k, np.bool_), pose0=np.zeros((k, 7)),
                 mesh=np.full(k, -1, np.int32))
    return fresh


def _check_plan(plan: dict[str, Any], app: App) -> None:
    """Run every component's and resource's checks (``check_state``, converting arrays) and every nested
    object's; store the checked states in the plan. A system resource (``loom.systems``: caches, workspaces,
    scratch) is taken from the file only if its class checks its state, or its state is scalars of the App's
    own types (the guard's Recovery); else the App gets a fresh one, which its systems refill."""
    plan["entities"] = [(e, [(obj, _validated_state(obj, state, {})) for obj, state in comps])
                        for e, comps in plan["entities"]]
    clothes = {}                                           # entity → the loaded Cloth as it will be (a view)
    colliders = 0
    for e, comps in plan["entities"]:
        for obj, state in comps:
            if type(obj).__name__ == "Cloth" and type(state) is dict:
                view = type(obj).__new__(type(obj))
                view.__dict__.update(state)
                clothes[e] = view
            colliders += type(obj).__name__ == "Collider"
    for obj in plan["nested"]:
        if getattr(type(obj), "check_state", None) is not None:
            _run_check(obj, clothes)
    resources = []
    for obj, state in plan["resources"]:
        cls = type(obj)
        if cls.__name__ == "ColliderSet" and cls.__module__ == "loom.components.collider":
            state = _collider_set(state, {e for e, _ in plan["entities"]})
        elif cls.__name__ == "ImplicitWorkspaces" and cls.__module__.startswith("loom.systems."):
            state = _implicit_workspaces(state, clothes, colliders, cls)
        elif cls.__module__.startswith("loom.systems.") and getattr(cls, "check_state", None) is None \
                and not _scalar_state(state, app.resources.get(cls)):
            resources.append((None, cls))                  # rebuilt by its systems
            continue
        resources.append((obj, _validated_state(obj, state, clothes)))
    plan["resources"] = resources


def _commit(plan: dict[str, Any], app: App, path: Path) -> None:
    """Put the checked plan into the App: components (in place where the App had them), entities with their
    ids, resources, clock. Nothing before this changed the App."""
    objects = []
    for entity, comps in plan["entities"]:
        row = []
        for obj, state in comps:
            kept = _game_physics(obj, state) if plan["shared"] else {}
            _restore(obj, state)
            for name, value in kept.items():              # the game's pymunk objects stay the game's
                object.__setattr__(obj, name, value)
            row.append(obj)
        objects.append((entity, row))
    if plan["shared"]:
        _commit_shared(objects)
    else:
        _commit_private(objects, plan["next_entity"], path)
    for obj, state in plan["resources"]:
        if obj is None:
            _fresh_resource(app, state)
            continue
        _restore(obj, state)
        app.resources[type(obj)] = obj
    vars(app.clock).update(plan["clock"])
    esper.clear_cache()


def _is_physics(value: Any) -> bool:
    """True for a pymunk object, or a non-empty list or tuple of them (a RigidBody2D's body, its shapes)."""
    if isinstance(value, (list, tuple)) and value:
        return all(isinstance(v, (pymunk.Body, pymunk.Shape, pymunk.Space, pymunk.Constraint)) for v in value)
    return isinstance(value, (pymunk.Body, pymunk.Shape, pymunk.Space, pymunk.Constraint))


def _game_physics(obj: Any, state: Any) -> dict[str, Any]:
    """In a game's world, the attributes of a component restored in place that hold pymunk objects (now or in
    the file): they are the game's own (in its Space, stepped by it), kept with their identity and state."""
    mine = vars(obj) if hasattr(obj, "__dict__") else {}
    if type(state) is not dict or not mine:
        return {}
    return {name: mine[name] for name in mine if name in state and (_is_physics(mine[name])
                                                                    or _is_physics(state[name]))}


def _commit_shared(objects: list[tuple[int, list[Any]]]) -> None:
    """In a game's world (current): Loom's components of the file onto their entities, Loom's components the file
    lacks taken off (an entity holding only Loom's despawned); the game's components and entities untouched."""
    own = _loom_component_types()
    wanted = dict(objects)
    for entity in [e for e in esper.get_entities() if esper.entity_exists(e)]:
        comps = esper.components_for_entity(entity)
        loom_types = [type(c) for c in comps if type(c) in own]
        saved = wanted.get(entity)
        if saved is None and loom_types and len(loom_types) == len(comps):
            esper.delete_entity(entity, immediate=True)   # Loom's own entity, made after the save
            continue
        keep = {type(c) for c in saved or ()}
        for cls in loom_types:
            if cls not in keep:
                esper.remove_component(entity, cls)
        for component in saved or ():
            esper.add_component(entity, component)


def _commit_private(objects: list[tuple[int, list[Any]]], next_entity: int, path: Path) -> None:
    """In the App's own world (current): every entity replaced by the file's, with their ids."""
    esper.clear_database()
    wanted = {entity for entity, _ in objects}
    rows = dict(objects)
    last = max([next_entity - 1, *wanted], default=0)
    for entity in range(1, last + 1):                   # esper hands out ids in order: replay them
        made = esper.create_entity(*rows.get(entity, ()))
        if made != entity:
            raise SnapshotError(f"{path}: esper created entity {made}, expected {entity}")
    for entity in range(1, last + 1):
        if entity not in wanted:
            esper.delete_entity(entity, immediate=True)


def _fresh_resource(app: App, cls: type) -> None:
    """Give the App a new, empty ``cls`` (a system cache its systems refill); keep its own if ``cls()`` needs
    arguments. ``cls`` is the App's own resource class from the fixed table, never a name read from the file."""
    try:
        app.resources[cls] = cls()
    except TypeError:
        pass


def _restore(obj: Any, state: Any) -> None:
    """Put a checked state into ``obj``; an object restored in place counts as changed (``revision`` moves on,
    so batches keyed on it rebuild their references to its new arrays)."""
    before = vars(obj).get("revision") if hasattr(obj, "__dict__") else None
    set_state(obj, state)
    if type(before) is int and type(vars(obj).get("revision")) is int:
        object.__setattr__(obj, "revision", max(before, vars(obj)["revision"]) + 1)



def _next_entity_id(entities: list[tuple[int, Any]]) -> int:
    """The id esper will give the next entity of the current world (read without consuming it)."""
    found = re.fullmatch(r"count\((\d+)\)", repr(getattr(esper, "_entity_count", None)))
    if found:
        return int(found.group(1))
    return max((e for e, _ in entities), default=0) + 1


__all__ = ["FORMAT_VERSION", "SnapshotError", "class_table", "load_snapshot", "save_snapshot"]
