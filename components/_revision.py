"""Checked and Revisioned: components whose fields are validated wherever they enter, and that count assignments.

``Checked`` holds a per-class table of field specs (``_fields``, see ``loom.components._validate``): every
assignment to a listed field after construction is checked (shape against the object's other fields, dtype
converted to the one kernels take, finiteness, index range) and refused with one ValueError naming
Class.field; ``check_state()`` re-runs every check on the whole object (the snapshot loader calls it after
filling ``__dict__``); ``assign(**fields)`` changes fields whose sizes change together, all or nothing.
``Revisioned`` adds ``revision``, which systems/shared/batch.py keys on. Fields whose spec is ``readonly`` (rest
data, index tables) are stored as read-only arrays: an in-place write raises ValueError, so no kernel ever reads an
index table that was not checked.
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from loom.components._validate import Arr, Dims, Spec, freeze_in_place, frozen

_SPEC = "loom.spec"
"""Key of a field's spec in its dataclass ``metadata`` (``checked_field``)."""

_BUILDING: set[int] = set()
"""ids of the objects whose ``__post_init__`` runs now: the constructor validates those itself."""


def checked_field(spec: Spec, default: Any = dataclasses.MISSING, *, default_factory: Any = dataclasses.MISSING,
                  init: bool = True, repr: bool = True) -> Any:
    """Declare a dataclass field of a ``Checked`` or ``FrozenChecked`` class once: its type (the annotation), its
    validation (``spec``) and its docstring (the string literal below it) in one place. ``default`` /
    ``default_factory`` as for ``dataclasses.field`` (neither: a required argument). The class's ``_fields`` table
    is built from these declarations, in declaration order (declare the fields that fix a shape symbol first, or
    name them in the class's ``_check_first`` when a dataclass's argument order cannot put them first)::

        radius: float = checked_field(Real(0.0, low_open=True, unit=" [m]"), 1.0)
        \"\"\"Radius [m] > 0.\"\"\"
    """
    return dataclasses.field(default=default, default_factory=default_factory, init=init, repr=repr,
                             metadata={_SPEC: spec})


def _declared(cls: type) -> dict[str, Spec]:
    """The specs ``checked_field`` declared in ``cls``'s own body, in declaration order (read before
    ``@dataclass`` replaces the Field objects by their defaults)."""
    return {name: value.metadata[_SPEC] for name, value in cls.__dict__.items()
            if isinstance(value, dataclasses.Field) and _SPEC in value.metadata}


def _declare(cls: Any, check: str) -> None:
    """Extend ``cls._fields`` with the fields its body declares (after the base classes'; the fields its own
    ``_check_first`` names go before all others, in that order) and, when it declares some and has no
    ``__post_init__`` of its own, give it one that runs the method named ``check``."""
    declared = _declared(cls)
    if not declared:
        return
    fields = {**cls._fields, **declared}
    first = cls.__dict__.get("_check_first", ())
    if isinstance(first, str) or any(name not in fields for name in first):
        raise TypeError(f"{cls.__qualname__}._check_first = {first!r}: expected a tuple of names of fields declared "
                        f"with checked_field")
    cls._fields = {**{name: fields[name] for name in first}, **fields}
    if "__post_init__" not in cls.__dict__:
        def __post_init__(self: Any) -> None:
            getattr(self, check)()                    # every declared field, then _cross
        __post_init__.__qualname__ = f"{cls.__qualname__}.__post_init__"
        cls.__post_init__ = __post_init__


class Checked:
    """Mixin: fields listed in ``_fields`` are checked on assignment once the object is built.

    Declare each field with ``checked_field(spec, default)``: the table is built from the declarations (the base
    classes' fields first), and a class without a ``__post_init__`` of its own gets one that runs
    ``_check_new()`` (every field's check in table order, then ``_cross``; the caller's arrays copied). A
    ``__post_init__`` of its own fills what the declarations cannot (scratch sized from other fields) and calls
    ``_check_new()``; it does not check fields itself."""

    _fields: ClassVar[dict[str, Spec]] = {}
    """Field name → spec, in checking order (fields that fix a dims symbol first)."""
    _check_first: ClassVar[tuple[str, ...]] = ()
    """Fields checked before all others, in this order: those that fix a dims symbol or a dtype other checks read,
    when the dataclass's argument order (fields without a default first) cannot declare them first. Read from the
    class's own body when ``_fields`` is built; the other fields keep their declaration order."""
    _dims: ClassVar[Dims] = {}
    """Shape symbols of the class (``loom.components._validate.Dims``)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Build ``_fields`` from the ``checked_field`` declarations; wrap the subclass's ``__post_init__`` so
        assignments inside it (the constructor's own checks) pass."""
        super().__init_subclass__(**kwargs)
        _declare(cls, "_check_new")
        post = cls.__dict__.get("__post_init__")
        if post is None:
            return

        @functools.wraps(post)
        def __post_init__(self: Checked) -> None:
            key = id(self)
            outer = key in _BUILDING
            _BUILDING.add(key)
            try:
                for name in self._fields:                 # init=False fields left at their class default
                    if name not in self.__dict__ and hasattr(type(self), name):
                        object.__setattr__(self, name, getattr(type(self), name))
                post(self)
                for name, spec in self._fields.items():
                    if spec.readonly and not outer and name in self.__dict__:   # rest data, index tables:
                        object.__setattr__(self, name, frozen(self.__dict__[name]))   # stored read-only
            finally:
                if not outer:
                    _BUILDING.discard(key)

        cls.__post_init__ = __post_init__  # type: ignore[attr-defined]

    def __setattr__(self, name: str, value: Any) -> None:
        spec = self._fields.get(name)
        if spec is not None and name in self.__dict__ and id(self) not in _BUILDING:
            value = spec.check(type(self).__name__, name, self.__dict__, value, self._dims)
        object.__setattr__(self, name, value)

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickling and ``copy``: the fields restored as they were, read-only ones frozen again (pickle does not
        keep numpy's write flag), so a copied component's kernels see the same array types as the original's."""
        self.__dict__.update(state)
        self._freeze_read_only()

    def _freeze_read_only(self) -> None:
        """Make the arrays of the read-only fields present in ``__dict__`` read-only in place (``freeze_in_place``:
        the same objects, so references shared with them stay shared)."""
        for name, spec in self._fields.items():
            if spec.readonly and name in self.__dict__:
                self.__dict__[name] = freeze_in_place(self.__dict__[name])

    def _checked(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """Every listed field of ``state`` checked (and converted) in table order, then the cross-field rules."""
        owner = type(self).__name__
        staged = dict(state)
        for name, spec in self._fields.items():
            if name not in staged:
                raise ValueError(f"{owner}.{name}: missing")
            staged[name] = spec.check(owner, name, staged, staged[name], self._dims)
        self._cross(owner, staged)
        return staged

    def _cross(self, owner: str, state: Mapping[str, Any]) -> None:
        """Rules between fields not expressed by the shape symbols; raise ValueError naming Class.field."""

    def check_state(self) -> None:
        """Re-run every field check on this object as it is (after its ``__dict__`` was filled directly, as
        the snapshot loader does); raise ValueError naming Class.field, else store the converted arrays. Read-only
        fields' arrays are frozen in place first (with the arrays they view), so a decoded snapshot's shared
        references stay the same objects."""
        if id(self) not in _BUILDING:
            self._freeze_read_only()
        self.__dict__.update(self._checked(self.__dict__))

    def _check_new(self) -> None:
        """The constructor's check (run by ``__post_init__``): ``check_state()``, then every array field whose
        check kept the very array the caller passed is stored as a copy, so a component owns its arrays (writing to
        the array given to the constructor does not move the component; an assigned array is taken as it is)."""
        given = {name: value for name, value in self.__dict__.items() if isinstance(value, np.ndarray)}
        self.check_state()
        for name, spec in self._fields.items():
            value = self.__dict__.get(name)
            if isinstance(spec, Arr) and not spec.readonly and value is not None and value is given.get(name):
                self.__dict__[name] = value.copy()

    def assign(self, **fields: Any) -> None:
        """Set several fields at once — those whose sizes change together (a pin gaining particles, rebuilt
        tethers) — checked together against each other: all are stored, or none and a ValueError. Fields not
        given are re-checked only where a size they depend on changed."""
        owner = type(self).__name__
        for name in fields:
            if name not in self._fields:
                raise ValueError(f"{owner}.{name}: not a checked field of {owner}")
        before = self.__dict__
        staged = {**before, **fields}
        changed = {s for s, (read, _, _) in self._dims.items() if read(before) != read(staged)}
        for name, spec in self._fields.items():
            if name in fields or (spec.symbols & changed):
                staged[name] = spec.check(owner, name, staged, staged[name], self._dims)
        self._cross(owner, staged)
        for name in fields:
            object.__setattr__(self, name, staged[name])
        self._assigned(tuple(fields))

    def _assigned(self, names: tuple[str, ...]) -> None:
        """Hook after ``assign`` stored ``names`` (Revisioned counts it as one assignment)."""


class Revisioned(Checked):
    """Mixin: ``revision`` counts assignments to the instance's attributes (an array replaced, not one
    changed in place), so batches of many components (systems/shared/batch.py) know when to rebuild their
    references to its arrays."""

    revision: int = 0

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name != "revision":
            object.__setattr__(self, "revision", self.__dict__.get("revision", 0) + 1)

    def _assigned(self, names: tuple[str, ...]) -> None:
        object.__setattr__(self, "revision", self.__dict__.get("revision", 0) + 1)


class FrozenFieldError(TypeError):
    """A field that cannot be assigned was (a ClothMaterial's or a model's settings' field, a Cloth's model): make a
    changed copy, or a new component, instead.

    A TypeError, as Loom's documented errors are (dataclasses' own FrozenInstanceError is an AttributeError)."""


def frozen_fields(cls: type) -> type:
    """Class decorator over ``@dataclass(frozen=True)``: assigning or deleting a field of an instance raises
    FrozenFieldError naming Class.field and how to get a changed copy (``dataclasses.replace``)."""
    owner = cls.__name__
    preset = hasattr(cls, "preset")

    def refuse(self: Any, name: str, *value: Any) -> None:
        extra = f" or {owner}.preset(name, {name}=...)" if preset else ""
        use = "assign the copy (cloth.material = copy)" if preset else "build the cloth with it (Cloth.from_mesh)"
        raise FrozenFieldError(f"{owner}.{name} cannot be assigned: a {owner} is frozen (cloths may share it); "
                               f"make a changed copy with dataclasses.replace(obj, {name}=...){extra} and "
                               f"{use}")

    cls.__setattr__ = refuse  # type: ignore[assignment,method-assign]
    cls.__delattr__ = refuse  # type: ignore[assignment,method-assign]
    return cls


class FrozenChecked:
    """Mixin for frozen dataclasses (materials, model settings): no field can be assigned, so only
    ``check_state()`` is needed — it re-runs the constructor's checks on a decoded object. Decorate the class
    with ``frozen_fields`` (over ``@dataclass(frozen=True)``) so an assignment raises FrozenFieldError.

    Declare each field with ``checked_field(spec, default)``, as in ``Checked``: a class without a
    ``__post_init__`` of its own gets one that runs every declared field's check, then ``_cross``. The checks only
    validate: a frozen object keeps its fields as given (``density=1`` stays the int 1)."""

    _fields: ClassVar[dict[str, Spec]] = {}
    """Field name → spec, in checking order (built from the ``checked_field`` declarations)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Build ``_fields`` from the ``checked_field`` declarations (the base classes' first)."""
        super().__init_subclass__(**kwargs)
        _declare(cls, "_check_fields")

    def _check_fields(self) -> None:
        """Every declared field's check in table order, then ``_cross``; raise ValueError naming Class.field."""
        owner = type(self).__name__
        for name, spec in self._fields.items():
            spec.check(owner, name, self.__dict__, getattr(self, name), {})
        self._cross(owner, self.__dict__)

    def _cross(self, owner: str, state: Mapping[str, Any]) -> None:
        """Rules between fields; raise ValueError naming Class.field."""

    def check_state(self) -> None:
        """Re-run the constructor's checks on this object as it is; raise ValueError naming Class.field."""
        self.__post_init__()  # type: ignore[attr-defined]
