"""Loom's data-only state format: plain values and persistent classes' objects as JSON plus ``.npy`` arrays in a zip.

Snapshots (loom.files.snapshot) and replay logs (loom.files.replay) are written in this format. Loading one
never imports a module the file names, never calls a function or class named by the file, and never unpickles:
the file names classes by strings that are looked up in a ``ClassTable`` built by the loading program (the
classes registered with ``loom.engine.persist.persistent`` where they are defined, Loom's and its plugins', plus
the loading App's and ``trusted=`` classes); an object is made with ``cls.__new__(cls)`` and its saved state put
into it. Arrays are ``.npy`` entries read with ``np.load(allow_pickle=False)`` after their header was checked
(plain numeric or bool dtype, declared size equal to the bytes present); the zip's declared sizes are capped
(``MAX_TOTAL_BYTES``).

Value kinds, as JSON nodes:

- ``null``, ``true``/``false``, integers, finite floats, strings: themselves;
- ``{"t": "float", "v": "nan" | "inf" | "-inf"}``: non-finite floats (JSON has none);
- ``{"t": "tuple" | "list" | "set" | "frozenset", "v": [...]}``, ``{"t": "dict", "k": [...], "v": [...]}``,
  ``{"t": "bytes", "v": base64}``;
- ``{"t": "array", "npy": "<entry name>"}``, ``{"t": "scalar", "d": "<f8", "v": base64}`` (numpy);
- ``{"t": "obj", "c": "<class name>", "s": state}``, ``{"t": "ntuple", "c": ..., "v": [...]}``: objects;
- ``{"t": "space" | "body" | "shape" | "constraint", ...}``: pymunk objects as explicit state (see below);
- ``{"t": "ref", "r": n}``: the object with ``"id": n`` met earlier (shared arrays and objects stay shared).

pymunk objects are written as what they are (body type, mass, moment, position, velocity, angle, angular
velocity, force, torque, centre of gravity; shape kind and parameters, friction, elasticity, collision type,
filter, sensor, surface velocity, mass or density; constraint kind, bodies and parameters; the Space's gravity,
damping, iterations, thresholds, collision slop/bias/persistence and its bodies, shapes and constraints in
order) and rebuilt with the pymunk constructors of a fixed list. Not saved: body velocity/position functions,
collision handlers, the Space's contact cache (arbiters).
"""
from __future__ import annotations

import base64
import io
import json
import math
import zipfile
from collections.abc import Iterable
from typing import Any

import numpy as np
import pymunk

from loom.engine.persist import name_of, persistent_classes

DOCUMENT = "state.json"
"""Name of the JSON entry in the zip."""
MAX_TOTAL_BYTES = 2 * 1024 ** 3
"""Largest total declared uncompressed size of a file's entries [bytes]."""
MAX_RATIO = 64
"""Largest declared uncompressed size per byte of the file (this module writes uncompressed entries)."""
MAX_ENTRIES = 1_000_000
"""Most entries a state zip may hold."""
MAX_DEPTH = 200
"""Deepest nesting of values the decoder follows."""
MAX_POLY_VERTICES = 100_000
"""Most vertices of a pymunk Poly."""

_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
_DTYPES = {np.dtype(t).newbyteorder(order).str: np.dtype(t).newbyteorder(order)
           for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
                     np.float16, np.float32, np.float64, np.complex64, np.complex128)
           for order in "<>|"}
"""The array and scalar dtypes a state file may hold, by their ``dtype.str``: plain numbers and bools."""
_SEQUENCES = {"tuple": tuple, "list": list, "set": set, "frozenset": frozenset}
_BODY_TYPES = {pymunk.Body.DYNAMIC, pymunk.Body.KINEMATIC, pymunk.Body.STATIC}
_BODY_VECTORS = ("force", "position", "center_of_gravity", "velocity")
_BODY_SCALARS = ("angle", "angular_velocity", "torque")
_SHAPE_PARAMS: dict[type, tuple[str, ...]] = {
    pymunk.Circle: ("radius", "offset"),
    pymunk.Segment: ("a", "b", "radius"),
    pymunk.Poly: ("vertices", "radius"),
}
"""The pymunk shapes a file may hold and their constructor parameters after the body."""
_CONSTRAINT_PARAMS: dict[type, tuple[str, ...]] = {
    pymunk.PinJoint: ("anchor_a", "anchor_b"),
    pymunk.SlideJoint: ("anchor_a", "anchor_b", "min", "max"),
    pymunk.PivotJoint: ("anchor_a", "anchor_b"),
    pymunk.GrooveJoint: ("groove_a", "groove_b", "anchor_b"),
    pymunk.DampedSpring: ("anchor_a", "anchor_b", "rest_length", "stiffness", "damping"),
    pymunk.DampedRotarySpring: ("rest_angle", "stiffness", "damping"),
    pymunk.RotaryLimitJoint: ("min", "max"),
    pymunk.RatchetJoint: ("phase", "ratchet"),
    pymunk.GearJoint: ("phase", "ratio"),
    pymunk.SimpleMotor: ("rate",),
}
"""The pymunk constraints a file may hold and their constructor parameters after the two bodies."""
_CONSTRAINT_GENERAL = ("max_force", "error_bias", "max_bias")
_SPACE_INTS = ("iterations", "collision_persistence")
_SPACE_PARAMS = ("iterations", "gravity", "damping", "idle_speed_threshold", "sleep_time_threshold",
                 "collision_slop", "collision_bias", "collision_persistence")


class FormatError(ValueError):
    """A value cannot be written in, or a file's content cannot be read as, the state format (one line)."""


class ClassTable:
    """The classes a state file may name: registered name (``module.qualname``) → class. Nothing else is
    ever resolved; the table is built by the loading program from classes it imported itself."""

    def __init__(self, classes: Iterable[type] = ()) -> None:
        self.by_name: dict[str, type] = {}
        self.add(classes)

    def add(self, classes: Iterable[type]) -> None:
        """Register ``classes`` under their ``module.qualname``."""
        for cls in classes:
            if not isinstance(cls, type):
                raise ValueError(f"ClassTable.classes: {cls!r} is not a class")
            self.by_name[name_of(cls)] = cls

    def __contains__(self, cls: type) -> bool:
        return self.by_name.get(name_of(cls)) is cls

    def lookup(self, name: Any) -> type:
        """The class registered as ``name``; FormatError if there is none (nothing is imported)."""
        cls = self.by_name.get(name) if isinstance(name, str) else None
        if cls is None:
            raise FormatError(f"class {str(name)[:200]!r} is not a Loom component, resource or value class this "
                              f"App knows (a plugin's class needs @loom.engine.persist.persistent, a game's "
                              f"classes trusted=)")
        return cls


# --- the class table -----------------------------------------------------------------------------------------
def loom_classes() -> tuple[type, ...]:
    """The classes a state file may name without ``trusted=``: every class registered with
    ``loom.engine.persist.persistent`` (components, the resources systems create, also lazily after the first
    step, and the value classes inside them), each declared next to its definition.

    Loom's own packages are imported first (components, the mesh, every built-in plugin through ``loom.systems``,
    prefabs, replay logs), so the table holds every class of theirs even when the loading program has not
    imported the module defining it yet. A plugin defined outside Loom registers its classes when its module is
    imported, which the program building an App with that plugin has done. Nothing here is named by a file."""
    import loom.components  # noqa: F401  (each import registers its package's persistent classes)
    import loom.engine.mesh  # noqa: F401
    import loom.files.replay  # noqa: F401
    import loom.prefabs  # noqa: F401
    import loom.systems  # noqa: F401
    return persistent_classes()


# --- encoding -------------------------------------------------------------------------------------------------
class Encoder:
    """Turns values into JSON nodes and ``.npy`` entries; ``finish(document)`` returns the zip's bytes."""

    def __init__(self, table: ClassTable) -> None:
        self.table = table
        self.arrays: dict[str, bytes] = {}
        self.ids: dict[int, int] = {}
        self.keep: list[Any] = []                            # keeps encoded objects alive: ids stay unique

    def root(self, obj: Any) -> int:
        """Reserve an id for ``obj`` (a component or resource): later occurrences become references to it. One
        object on several entities (a prefab's shared style) keeps its first id."""
        known = self.ids.get(id(obj))
        return self._remember(obj) if known is None else known

    def encode(self, value: Any, where: str = "value", depth: int = 0) -> Any:
        """The JSON node of ``value``; FormatError naming ``where`` if it is not plain data or an allowed object."""
        if depth > MAX_DEPTH:
            raise FormatError(f"{where}: nested deeper than {MAX_DEPTH} levels")
        kind = type(value)
        if value is None or kind in (bool, str):
            return value
        if kind is int:
            return value
        if kind is float:
            return value if math.isfinite(value) else {"t": "float", "v": repr(value)}
        if id(value) in self.ids:
            return {"t": "ref", "r": self.ids[id(value)]}
        if kind is bytes:
            return {"t": "bytes", "v": base64.b64encode(value).decode("ascii")}
        if kind in (tuple, list, set, frozenset):
            node: dict[str, Any] = {"t": kind.__name__}
            if kind is not tuple:
                node["id"] = self._remember(value)
            items = sorted(value, key=_set_order) if kind in (set, frozenset) else value
            node["v"] = [self.encode(v, f"{where}[{k}]", depth + 1) for k, v in enumerate(items)]
            return node
        if kind is dict:
            node = {"t": "dict", "id": self._remember(value)}
            node["k"] = [self.encode(k, f"{where} key", depth + 1) for k in value]
            node["v"] = [self.encode(v, f"{where}[{k!r}]", depth + 1) for k, v in value.items()]
            return node
        if kind is np.ndarray:
            return self._array(value, where)
        if isinstance(value, np.generic):
            if value.dtype.str not in _DTYPES:
                raise FormatError(f"{where}: numpy scalar of dtype {value.dtype} is not plain numeric data")
            return {"t": "scalar", "d": value.dtype.str, "v": base64.b64encode(value.tobytes()).decode("ascii")}
        if isinstance(value, (pymunk.Space, pymunk.Body, pymunk.Shape, pymunk.Constraint)):
            return self._pymunk(value, where, depth)
        if kind in self.table:
            return self._object(value, where, depth)
        raise FormatError(f"{where}: {kind.__module__}.{kind.__qualname__} is not plain data or a persistent class "
                          f"(@loom.engine.persist.persistent; functions and other objects are never saved)")

    def finish(self, document: dict[str, Any]) -> bytes:
        """The zip: the JSON document, then every array entry (stored uncompressed: fast, bounded on read)."""
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
            archive.writestr(DOCUMENT, json.dumps(document, allow_nan=False, separators=(",", ":")))
            for name, data in self.arrays.items():
                archive.writestr(name, data)
        return buffer.getvalue()

    def mark(self) -> tuple[int, int]:
        """A point to ``rollback`` to (a resource that turns out not to be plain data leaves nothing behind)."""
        return len(self.ids), len(self.arrays)

    def rollback(self, mark: tuple[int, int]) -> None:
        """Forget the objects and arrays encoded since ``mark``."""
        for key in list(self.ids)[mark[0]:]:
            del self.ids[key]
        for name in list(self.arrays)[mark[1]:]:
            del self.arrays[name]

    def _remember(self, obj: Any) -> int:
        self.keep.append(obj)
        self.ids[id(obj)] = len(self.ids)
        return self.ids[id(obj)]

    def _array(self, array: np.ndarray, where: str) -> dict[str, Any]:
        if array.dtype.str not in _DTYPES:
            raise FormatError(f"{where}: array of dtype {array.dtype} is not plain numeric data")
        ident = self._remember(array)
        name = f"a{ident}.npy"
        buffer = io.BytesIO()
        np.save(buffer, array, allow_pickle=False)
        self.arrays[name] = buffer.getvalue()
        return {"t": "array", "id": ident, "npy": name}

    def _object(self, obj: Any, where: str, depth: int) -> dict[str, Any]:
        cls = type(obj)
        if isinstance(obj, tuple):                             # a NamedTuple
            ident = self._remember(obj)
            items = [self.encode(v, f"{where}.{k}", depth + 1) for k, v in enumerate(obj)]
            return {"t": "ntuple", "id": ident, "c": name_of(cls), "v": items}
        ident = self._remember(obj)
        return {"t": "obj", "id": ident, "c": name_of(cls), "s": self.state(obj, where, depth)}

    def state(self, obj: Any, where: str, depth: int = 0) -> Any:
        """The node of ``obj``'s state (its ``__getstate__()``: usually a copy of its ``__dict__``)."""
        state = obj.__getstate__()
        self.keep.append(state)
        return self.encode(state, f"{where} ({type(obj).__qualname__})", depth + 1)

    # pymunk: explicit state, rebuilt by constructors
    def _pymunk(self, obj: Any, where: str, depth: int) -> dict[str, Any]:
        space = obj if isinstance(obj, pymunk.Space) else obj.space
        if space is not None and id(space) not in self.ids:
            node = self._space(space, where, depth)           # the whole space, members included
            if obj is space:
                return node
            if id(obj) in self.ids:                           # a member: now a reference into that node
                return {"t": "space_member", "space": node, "r": self.ids[id(obj)]}
        if id(obj) in self.ids:
            return {"t": "ref", "r": self.ids[id(obj)]}
        if isinstance(obj, pymunk.Body):
            return self._body(obj, where)
        if isinstance(obj, pymunk.Shape):
            return self._shape(obj, where, depth)
        if isinstance(obj, pymunk.Constraint):
            return self._constraint(obj, where, depth)
        raise FormatError(f"{where}: pymunk {type(obj).__qualname__} cannot be saved")

    def _space(self, space: pymunk.Space, where: str, depth: int) -> dict[str, Any]:
        if type(space) is not pymunk.Space:
            raise FormatError(f"{where}: {type(space).__qualname__} is not a pymunk.Space")
        node: dict[str, Any] = {"t": "space", "id": self._remember(space)}
        node["params"] = {name: int(getattr(space, name)) if name in _SPACE_INTS else _plain_number(getattr(space, name))
                          for name in _SPACE_PARAMS}
        static = getattr(space, "_static_body", None)
        if static is not None:
            self._remember(static)
            node["static"] = self._body_state(static)
        node["bodies"] = [self._body(b, where) for b in space.bodies]
        node["shapes"] = [self._shape(s, where, depth) for s in space.shapes]
        node["constraints"] = [self._constraint(c, where, depth) for c in space.constraints]
        node["counters"] = _space_counters(space)
        return node

    def _body(self, body: pymunk.Body, where: str) -> dict[str, Any]:
        if type(body) is not pymunk.Body:
            raise FormatError(f"{where}: {type(body).__qualname__} is not a pymunk.Body")
        return {"t": "body", "id": self._remember(body), **self._body_state(body)}

    @staticmethod
    def _body_state(body: pymunk.Body) -> dict[str, Any]:
        state = {"body_type": int(body.body_type), "mass": _plain_number(body.mass),
                 "moment": _plain_number(body.moment)}
        for name in _BODY_VECTORS + _BODY_SCALARS:
            state[name] = _plain_number(getattr(body, name))
        return state

    def _shape(self, shape: pymunk.Shape, where: str, depth: int) -> dict[str, Any]:
        cls = type(shape)
        if cls not in _SHAPE_PARAMS:
            raise FormatError(f"{where}: pymunk {cls.__qualname__} is not a Circle, Segment or Poly")
        body = self.encode(shape.body, where, depth + 1)
        params = {name: _plain_number(shape.get_vertices() if name == "vertices" else getattr(shape, name))
                  for name in _SHAPE_PARAMS[cls]}
        return {"t": "shape", "id": self._remember(shape), "c": cls.__name__, "body": body, "params": params,
                "sensor": bool(shape.sensor), "collision_type": int(shape.collision_type),
                "filter": [int(v) for v in shape.filter], "elasticity": float(shape.elasticity),
                "friction": float(shape.friction), "surface_velocity": _plain_number(shape.surface_velocity),
                "hashid": int(shape._hashid), "mass": float(shape.mass), "density": float(shape.density)}

    def _constraint(self, constraint: pymunk.Constraint, where: str, depth: int) -> dict[str, Any]:
        cls = type(constraint)
        if cls not in _CONSTRAINT_PARAMS:
            raise FormatError(f"{where}: pymunk {cls.__qualname__} is not a constraint this format holds")
        a = self.encode(constraint.a, where, depth + 1)
        b = self.encode(constraint.b, where, depth + 1)
        params = {name: _plain_number(getattr(constraint, name)) for name in _CONSTRAINT_PARAMS[cls]}
        general = {name: _plain_number(getattr(constraint, name)) for name in _CONSTRAINT_GENERAL}
        return {"t": "constraint", "id": self._remember(constraint), "c": cls.__name__, "a": a, "b": b,
                "params": params, "general": general, "collide_bodies": bool(constraint.collide_bodies)}


def _set_order(value: Any) -> tuple[str, str]:
    """A deterministic order for set members (files of equal states are equal bytes)."""
    return type(value).__name__, repr(value)


def _plain_number(value: Any) -> Any:
    """A pymunk number or vector as JSON: floats as floats (non-finite tagged), vectors as lists."""
    if isinstance(value, (tuple, list)):
        return [_plain_number(v) for v in value]
    value = float(value)
    return value if math.isfinite(value) else {"t": "float", "v": repr(value)}


def _space_counters(space: pymunk.Space) -> dict[str, Any]:
    """The Space's shape-id counter, timestamp and last time step (they order its collision pairs)."""
    from pymunk._chipmunk_cffi import lib                   # pymunk's own binding, as its pickling uses it
    return {"shape_ids": int(lib.cpSpaceGetShapeIDCounter(space._space)),
            "stamp": int(lib.cpSpaceGetTimestamp(space._space)),
            "time_step": float(lib.cpSpaceGetCurrentTimeStep(space._space))}


# --- decoding ------------------------------------------------------------------------------------------------
class Decoder:
    """Reads a state zip: ``document`` is its JSON; ``decode(node)`` rebuilds a value. Objects are made with
    ``cls.__new__`` for classes in the table and pymunk's fixed constructors; nothing the file names is called."""

    def __init__(self, data: bytes, table: ClassTable) -> None:
        self.table = table
        self.objects: dict[int, Any] = {}
        self.created: list[Any] = []
        """Objects of listed classes made while decoding (not the caller's declared ones), in order."""
        self.archive, self.entries = _open_zip(data)
        self.document = _read_document(self.archive, self.entries)

    def declare(self, ident: Any, obj: Any) -> None:
        """Make id ``ident`` stand for ``obj`` (a component or resource object chosen by the caller)."""
        if type(ident) is not int or ident in self.objects:
            raise FormatError(f"object id {ident!r} is not a new integer")
        self.objects[ident] = obj

    def decode(self, node: Any, depth: int = 0) -> Any:
        """The value of ``node``; FormatError for anything outside the format."""
        if depth > MAX_DEPTH:
            raise FormatError(f"values nested deeper than {MAX_DEPTH} levels")
        if node is None or type(node) in (bool, int, float, str):
            return node
        if type(node) is not dict:
            raise FormatError(f"unexpected JSON {type(node).__name__} where a value node belongs")
        tag = node.get("t")
        if tag == "ref":
            return self._ref(node.get("r"))
        if tag == "float":
            return _non_finite(node.get("v"))
        if tag == "bytes":
            return _b64(node.get("v"))
        if tag in _SEQUENCES:
            return self._sequence(tag, node, depth)
        if tag == "dict":
            return self._dict(node, depth)
        if tag == "array":
            return self._register(node, self._array(node.get("npy")))
        if tag == "scalar":
            return _scalar(node.get("d"), node.get("v"))
        if tag == "obj":
            return self._object(node, depth)
        if tag == "ntuple":
            return self._ntuple(node, depth)
        if tag in ("space", "body", "shape", "constraint", "space_member"):
            return self._pymunk(tag, node, depth)
        raise FormatError(f"unknown value tag {str(tag)[:50]!r}")

    def new(self, name: Any) -> Any:
        """A blank object of the class registered as ``name`` (``cls.__new__(cls)``: no constructor runs)."""
        cls = self.table.lookup(name)
        if issubclass(cls, tuple):
            raise FormatError(f"class {name!r} is a named tuple, written as 'ntuple'")
        return cls.__new__(cls)

    def _register(self, node: dict[str, Any], value: Any) -> Any:
        ident = node.get("id")
        if ident is not None:
            self.declare(ident, value)
        return value

    def _ref(self, ident: Any) -> Any:
        if type(ident) is not int or ident not in self.objects:
            raise FormatError(f"reference to object {str(ident)[:30]} that the file has not defined before")
        return self.objects[ident]

    def _items(self, node: dict[str, Any], key: str = "v") -> list[Any]:
        items = node.get(key)
        if type(items) is not list:
            raise FormatError(f"'{node.get('t')}' node without its list {key!r}")
        return items

    def _sequence(self, tag: str, node: dict[str, Any], depth: int) -> Any:
        items = self._items(node)
        if tag == "list":
            out: list[Any] = self._register(node, [])
            out.extend(self.decode(v, depth + 1) for v in items)
            return out
        values = [self.decode(v, depth + 1) for v in items]
        try:
            return self._register(node, _SEQUENCES[tag](values))
        except TypeError as exc:                              # an unhashable set member
            raise FormatError(f"{tag} member: {exc}") from None

    def _dict(self, node: dict[str, Any], depth: int) -> dict[Any, Any]:
        keys, values = self._items(node, "k"), self._items(node, "v")
        if len(keys) != len(values):
            raise FormatError(f"dict with {len(keys)} keys and {len(values)} values")
        out: dict[Any, Any] = self._register(node, {})
        for k, v in zip(keys, values):
            key = self.decode(k, depth + 1)
            if type(key) not in (str, int, float, bool, tuple, bytes, frozenset) and key is not None:
                raise FormatError(f"dict key of type {type(key).__name__}: keys are plain values")
            try:
                hash(key)
            except TypeError as exc:
                raise FormatError(f"dict key: {exc}") from None
            out[key] = self.decode(v, depth + 1)
        return out

    def _object(self, node: dict[str, Any], depth: int) -> Any:
        obj = self._register(node, self.new(node.get("c")))
        set_state(obj, self.decode(node.get("s"), depth + 1))
        self.created.append(obj)
        return obj

    def _ntuple(self, node: dict[str, Any], depth: int) -> Any:
        cls = self.table.lookup(node.get("c"))
        if not issubclass(cls, tuple):
            raise FormatError(f"class {node.get('c')!r} is not a named tuple")
        values = [self.decode(v, depth + 1) for v in self._items(node)]
        if len(values) != len(getattr(cls, "_fields", values)):
            raise FormatError(f"{cls.__qualname__}: {len(values)} fields, expected {len(cls._fields)}")
        return self._register(node, tuple.__new__(cls, values))

    def _array(self, name: Any) -> np.ndarray:
        if type(name) is not str or name not in self.entries or name == DOCUMENT:
            raise FormatError(f"array entry {str(name)[:80]!r} is not in the file")
        return read_npy(self.archive, self.entries[name])

    # pymunk
    def _pymunk(self, tag: str, node: dict[str, Any], depth: int) -> Any:
        if tag == "space_member":
            self.decode(node.get("space"), depth + 1)
            return self._ref(node.get("r"))
        if tag == "space":
            return self._space(node, depth)
        if tag == "body":
            return self._register(node, _new_body(node))
        if tag == "shape":
            return self._register(node, self._shape(node, depth))
        return self._register(node, self._constraint(node, depth))

    def _space(self, node: dict[str, Any], depth: int) -> pymunk.Space:
        space = self._register(node, pymunk.Space())
        params = _mapping(node.get("params"), "Space params")
        for name in _SPACE_PARAMS:
            value = params.get(name)
            if name in _SPACE_INTS:
                setattr(space, name, _int(value, f"Space.{name}", 0, 2 ** 32 - 1))
            elif name == "gravity":
                space.gravity = _vector(value, "Space.gravity")
            else:
                setattr(space, name, _real(value, f"Space.{name}", low=0.0, allow_inf=True))
        static = node.get("static")
        if static is not None:
            state = _mapping(static, "Space static body")
            body = space.static_body
            _set_body_state(body, state)
            self.declare(_static_id(node), body)
        bodies = [self._pymunk("body", _tagged(b, "body"), depth + 1) for b in self._items(node, "bodies")]
        shapes = [self._pymunk("shape", _tagged(s, "shape"), depth + 1) for s in self._items(node, "shapes")]
        constraints = [self._pymunk("constraint", _tagged(c, "constraint"), depth + 1)
                       for c in self._items(node, "constraints")]
        for shape in shapes:
            if shape.body is not space.static_body and shape.body not in bodies:
                raise FormatError("Space: a shape's body is not in the space")
        space.add(*bodies, *shapes, *constraints)
        _set_space_counters(space, _mapping(node.get("counters"), "Space counters"))
        return space

    def _shape(self, node: dict[str, Any], depth: int) -> pymunk.Shape:
        cls = {c.__name__: c for c in _SHAPE_PARAMS}.get(node.get("c"))
        if cls is None:
            raise FormatError(f"pymunk shape {str(node.get('c'))[:50]!r} is not a Circle, Segment or Poly")
        body = self.decode(node.get("body"), depth + 1)
        if body is not None and type(body) is not pymunk.Body:
            raise FormatError(f"pymunk {cls.__name__}.body is a {type(body).__name__}, not a Body")
        params = _mapping(node.get("params"), f"{cls.__name__} params")
        radius = _real(params.get("radius"), f"{cls.__name__}.radius", low=0.0)
        if cls is pymunk.Circle:
            shape = pymunk.Circle(body, radius, _vector(params.get("offset"), "Circle.offset"))
        elif cls is pymunk.Segment:
            shape = pymunk.Segment(body, _vector(params.get("a"), "Segment.a"), _vector(params.get("b"), "Segment.b"),
                                   radius)
        else:
            vertices = params.get("vertices")
            if type(vertices) is not list or not 1 <= len(vertices) <= MAX_POLY_VERTICES:
                raise FormatError("Poly.vertices: expected a list of 1 to 100000 points")
            shape = pymunk.Poly(body, [_vector(v, "Poly.vertices") for v in vertices], None, radius)
        shape.sensor = _bool(node.get("sensor"), "Shape.sensor")
        shape.collision_type = _int(node.get("collision_type"), "Shape.collision_type", 0, 2 ** 64 - 1)
        filt = node.get("filter")
        if type(filt) is not list or len(filt) != 3:
            raise FormatError(f"Shape.filter = {str(filt)[:60]}: expected [group, categories, mask]")
        shape.filter = pymunk.ShapeFilter(_int(filt[0], "ShapeFilter.group", 0, 2 ** 64 - 1),
                                          _int(filt[1], "ShapeFilter.categories", 0, 2 ** 32 - 1),
                                          _int(filt[2], "ShapeFilter.mask", 0, 2 ** 32 - 1))
        shape.elasticity = _real(node.get("elasticity"), "Shape.elasticity", low=0.0)
        shape.friction = _real(node.get("friction"), "Shape.friction", low=0.0)
        shape.surface_velocity = _vector(node.get("surface_velocity"), "Shape.surface_velocity")
        shape._hashid = _int(node.get("hashid"), "Shape.hashid", 0, 2 ** 64 - 1)
        mass = _real(node.get("mass"), "Shape.mass", low=0.0)
        density = _real(node.get("density"), "Shape.density", low=0.0)
        if mass > 0:
            shape.mass = mass
        if density > 0:
            shape.density = density
        return shape

    def _constraint(self, node: dict[str, Any], depth: int) -> pymunk.Constraint:
        cls = {c.__name__: c for c in _CONSTRAINT_PARAMS}.get(node.get("c"))
        if cls is None:
            raise FormatError(f"pymunk constraint {str(node.get('c'))[:50]!r} is not one this format holds")
        a, b = self.decode(node.get("a"), depth + 1), self.decode(node.get("b"), depth + 1)
        if type(a) is not pymunk.Body or type(b) is not pymunk.Body:
            raise FormatError(f"pymunk {cls.__name__}: a and b must be Bodies")
        params = _mapping(node.get("params"), f"{cls.__name__} params")
        args = []
        for name in _CONSTRAINT_PARAMS[cls]:
            value = params.get(name)
            args.append(_vector(value, f"{cls.__name__}.{name}") if type(value) is list
                        else _real(value, f"{cls.__name__}.{name}"))
        constraint = cls(a, b, *args)
        general = _mapping(node.get("general"), f"{cls.__name__} general")
        for name in _CONSTRAINT_GENERAL:
            setattr(constraint, name, _real(general.get(name), f"{cls.__name__}.{name}", low=0.0, allow_inf=True))
        constraint.collide_bodies = _bool(node.get("collide_bodies"), f"{cls.__name__}.collide_bodies")
        return constraint


def _static_id(node: dict[str, Any]) -> int:
    """The id the encoder gave a Space's static body: the one right after the Space's own."""
    ident = node.get("id")
    if type(ident) is not int:
        raise FormatError("Space node without an integer id")
    return ident + 1


def _tagged(node: Any, tag: str) -> dict[str, Any]:
    if type(node) is not dict or node.get("t") != tag:
        raise FormatError(f"Space member is not a {tag} node")
    return node


def _mapping(value: Any, what: str) -> dict[str, Any]:
    if type(value) is not dict:
        raise FormatError(f"{what}: expected a JSON object")
    return value


def _number(value: Any) -> Any:
    """A JSON number or a tagged non-finite float as a Python number (anything else unchanged)."""
    if type(value) is dict and value.get("t") == "float":
        return _non_finite(value.get("v"))
    return value


def _real(value: Any, what: str, *, low: float | None = None, allow_inf: bool = False) -> float:
    value = _number(value)
    if type(value) not in (int, float) or math.isnan(value) or (math.isinf(value) and not allow_inf) \
            or (low is not None and value < low):
        bound = f" >= {low}" if low is not None else ""
        raise FormatError(f"{what} = {str(value)[:40]}: expected a {'' if allow_inf else 'finite '}number{bound}")
    return float(value)


def _int(value: Any, what: str, low: int, high: int) -> int:
    if type(value) is not int or not low <= value <= high:
        raise FormatError(f"{what} = {str(value)[:40]}: expected an integer in [{low}, {high}]")
    return value


def _bool(value: Any, what: str) -> bool:
    if type(value) is not bool:
        raise FormatError(f"{what} = {str(value)[:40]}: expected true or false")
    return value


def _vector(value: Any, what: str) -> tuple[float, float]:
    if type(value) is not list or len(value) != 2:
        raise FormatError(f"{what} = {str(value)[:60]}: expected a 2-vector")
    return _real(value[0], what), _real(value[1], what)


def _new_body(node: dict[str, Any]) -> pymunk.Body:
    """A pymunk Body built from its explicit state (constructor, then attributes in pymunk's own order)."""
    body_type = _int(node.get("body_type"), "Body.body_type", 0, 2)
    dynamic = body_type == pymunk.Body.DYNAMIC
    mass = _real(node.get("mass"), "Body.mass", low=0.0, allow_inf=not dynamic)
    moment = _real(node.get("moment"), "Body.moment", low=0.0, allow_inf=True)
    if dynamic and not (mass > 0.0 and moment > 0.0):
        raise FormatError(f"Body.mass = {mass}, Body.moment = {moment}: a dynamic body needs both > 0")
    body = pymunk.Body(mass, moment, body_type)
    _set_body_state(body, node)
    return body


def _set_body_state(body: pymunk.Body, state: dict[str, Any]) -> None:
    """Set a body's force, angle, position, centre of gravity, velocity, angular velocity and torque."""
    body.force = _vector(state.get("force"), "Body.force")
    body.angle = _real(state.get("angle"), "Body.angle")
    body.position = _vector(state.get("position"), "Body.position")
    body.center_of_gravity = _vector(state.get("center_of_gravity"), "Body.center_of_gravity")
    body.velocity = _vector(state.get("velocity"), "Body.velocity")
    body.angular_velocity = _real(state.get("angular_velocity"), "Body.angular_velocity")
    body.torque = _real(state.get("torque"), "Body.torque")


def _set_space_counters(space: pymunk.Space, counters: dict[str, Any]) -> None:
    from pymunk._chipmunk_cffi import lib
    lib.cpSpaceSetShapeIDCounter(space._space, _int(counters.get("shape_ids"), "Space.shape_ids", 0, 2 ** 63 - 1))
    lib.cpSpaceSetTimestamp(space._space, _int(counters.get("stamp"), "Space.stamp", 0, 2 ** 32 - 1))
    lib.cpSpaceSetCurrentTimeStep(space._space, _real(counters.get("time_step"), "Space.time_step", low=0.0))


def set_state(obj: Any, state: Any) -> None:
    """Put a decoded ``state`` into ``obj`` as pickle would: the class's ``__setstate__`` if it defines one
    (a persistent class), else the instance ``__dict__`` (and slots) replaced by the state's entries."""
    setstate = getattr(type(obj), "__setstate__", None)
    if setstate is not None:
        setstate(obj, state)
        return
    slots: Any = None
    if type(state) is tuple and len(state) == 2:
        state, slots = state
    for part in (state, slots):
        if part is not None and (type(part) is not dict
                                 or any(type(k) is not str or k.startswith("__") for k in part)):
            raise FormatError(f"{type(obj).__qualname__}: state is not a mapping of attribute names")
    if state is not None:
        if not hasattr(obj, "__dict__"):
            raise FormatError(f"{type(obj).__qualname__}: has no attributes to set")
        obj.__dict__.clear()
        obj.__dict__.update(state)
    for key, value in (slots or {}).items():
        object.__setattr__(obj, key, value)


def _non_finite(text: Any) -> float:
    if text not in _NON_FINITE:
        raise FormatError(f"float {str(text)[:20]!r}: expected 'nan', 'inf' or '-inf'")
    return _NON_FINITE[text]


def _b64(text: Any) -> bytes:
    if type(text) is not str:
        raise FormatError("bytes node without base64 text")
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise FormatError("bytes node: invalid base64") from None


def _scalar(dtype_text: Any, text: Any) -> np.generic:
    dtype = _DTYPES.get(dtype_text) if isinstance(dtype_text, str) else None
    if dtype is None:
        raise FormatError(f"numpy scalar of dtype {str(dtype_text)[:20]!r}: not plain numeric data")
    raw = _b64(text)
    if len(raw) != dtype.itemsize:
        raise FormatError(f"numpy scalar of dtype {dtype}: {len(raw)} bytes, expected {dtype.itemsize}")
    return np.frombuffer(raw, dtype)[0]


# --- zip and npy reading ---------------------------------------------------------------------------------------
def _open_zip(data: bytes) -> tuple[zipfile.ZipFile, dict[str, zipfile.ZipInfo]]:
    """The archive and its entries by name, after the size caps (no entry is decompressed yet)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError, NotImplementedError) as exc:
        raise FormatError(f"payload is not a Loom state zip ({exc})") from None
    if len(infos) > MAX_ENTRIES:
        raise FormatError(f"payload holds {len(infos)} entries, more than {MAX_ENTRIES}")
    limit = min(MAX_TOTAL_BYTES, MAX_RATIO * len(data) + 1024 ** 2)
    total = sum(info.file_size for info in infos)
    if total > limit:
        raise FormatError(f"payload declares {total} bytes uncompressed, more than the {limit} allowed for a file "
                          f"of {len(data)} bytes")
    entries = {info.filename: info for info in infos}
    if len(entries) != len(infos):
        raise FormatError("payload has two entries of the same name")
    return archive, entries


def _entry_bytes(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """An entry's bytes, reading at most its declared size (a lying header cannot make it read more)."""
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise FormatError(f"entry {info.filename!r}: compression method {info.compress_type} is not allowed")
    try:
        with archive.open(info) as stream:
            data = stream.read(info.file_size + 1)
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, NotImplementedError, RuntimeError) as exc:
        raise FormatError(f"entry {info.filename!r}: {exc}") from None
    if len(data) != info.file_size:
        raise FormatError(f"entry {info.filename!r}: {len(data)} bytes, its header says {info.file_size}")
    return data


def _read_document(archive: zipfile.ZipFile, entries: dict[str, zipfile.ZipInfo]) -> dict[str, Any]:
    if DOCUMENT not in entries:
        raise FormatError(f"payload has no {DOCUMENT}")
    raw = _entry_bytes(archive, entries[DOCUMENT])
    try:
        document = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:
        raise FormatError(f"{DOCUMENT}: not valid JSON ({str(exc)[:120]})") from None
    if type(document) is not dict:
        raise FormatError(f"{DOCUMENT}: expected a JSON object")
    return document


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (non-finite floats are written as tagged nodes)")


def read_npy(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> np.ndarray:
    """An ``.npy`` entry as an array: header checked first (plain dtype, size equal to the bytes present), then
    ``np.load(allow_pickle=False)``."""
    raw = _entry_bytes(archive, info)
    stream = io.BytesIO(raw)
    try:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream)
        else:
            raise ValueError(f"npy version {version} is not written by Loom")
    except (ValueError, SyntaxError, TypeError, EOFError) as exc:
        raise FormatError(f"array {info.filename!r}: bad .npy header ({str(exc)[:120]})") from None
    if dtype.str not in _DTYPES or dtype.hasobject:
        raise FormatError(f"array {info.filename!r}: dtype {str(dtype)[:40]} is not plain numeric data")
    count = 1
    for n in shape:
        count *= n
    if count * dtype.itemsize != len(raw) - stream.tell():
        raise FormatError(f"array {info.filename!r}: shape {shape} of {dtype} needs {count * dtype.itemsize} bytes, "
                          f"the entry holds {len(raw) - stream.tell()}")
    stream.seek(0)
    try:
        array = np.load(stream, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise FormatError(f"array {info.filename!r}: {str(exc)[:120]}") from None
    if not isinstance(array, np.ndarray):
        raise FormatError(f"array {info.filename!r}: not an .npy array")
    return array


__all__ = ["ClassTable", "loom_classes", "Decoder", "Encoder", "FormatError", "MAX_TOTAL_BYTES", "name_of", "read_npy", "set_state"]
