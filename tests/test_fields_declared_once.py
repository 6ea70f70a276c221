"""Each component field is declared once: its type, its validation and its docstring in one place (issue 43, item 5).

Every Checked / FrozenChecked dataclass of ``loom.components`` declares each validated field with
``checked_field(spec, default)`` followed by its docstring; the class's ``_fields`` table is built from those
declarations and nothing else (no ``Cls._fields = {...}`` beside the class), and no ``__post_init__`` checks a field
a second time with the boundary helpers (``real``, ``floats``, ``integer``...). The constructor then runs the same
specs as an assignment does.
"""
from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import pkgutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import loom.components
from loom.components import Transform
from loom.components._revision import _SPEC, Checked, FrozenChecked, checked_field, frozen_fields
from loom.components._validate import Arr, FieldError, Int, Real

HELPERS = {"real", "floats", "integer", "choice", "indices", "unit_vector"}
"""The boundary helpers of loom.components._validate a ``__post_init__`` must not call on a field (the spec does)."""


def component_classes() -> list[type]:
    """Every Checked / FrozenChecked dataclass defined in a module of loom.components."""
    found = []
    for info in pkgutil.iter_modules(loom.components.__path__):
        module = importlib.import_module(f"loom.components.{info.name}")
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, (Checked, FrozenChecked)) and dataclasses.is_dataclass(obj) \
                    and obj.__module__ == module.__name__:
                found.append(obj)
    return found


CLASSES = component_classes()
MODULES = sorted({cls.__module__ for cls in CLASSES})


def class_node(cls: type) -> ast.ClassDef:
    """The class statement of ``cls`` in its module's source."""
    tree = ast.parse(Path(inspect.getsourcefile(cls)).read_text())
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls.__name__)


def test_the_walk_finds_the_components():
    names = {cls.__name__ for cls in CLASSES}
    assert {"Camera", "Grab", "Inertia", "ClothMaterial", "Pin", "PixelSpace", "ClothStyle", "RenderSettings",
            "ColliderStyle", "Prop", "InputState", "RigidBody2D", "Space2D", "Tearable", "Transform", "Wind",
            "Blower", "WindBox", "WindSphere", "Gravity", "Cloth", "Collider", "Sphere"} <= names


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_validated_field_is_declared_with_checked_field(cls):
    fields = {f.name: f for f in dataclasses.fields(cls)}
    assert cls._fields, f"{cls.__name__} validates no field"
    for name, spec in cls._fields.items():
        assert name in fields, f"{cls.__name__}._fields names {name!r}, which is not a dataclass field"
        assert fields[name].metadata.get(_SPEC) is spec, \
            f"{cls.__name__}.{name} is validated but not declared with checked_field(spec, ...)"
    undeclared = [name for name, f in fields.items() if _SPEC in f.metadata and name not in cls._fields]
    assert not undeclared, f"{cls.__name__}: declared but not in _fields: {undeclared}"


@pytest.mark.parametrize("module", MODULES)
def test_no_fields_table_is_written_beside_the_declarations(module):
    path = Path(importlib.import_module(module).__file__)
    writes = []
    for node in ast.walk(ast.parse(path.read_text())):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            while isinstance(target, ast.Subscript):
                target = target.value
            if (isinstance(target, ast.Attribute) and target.attr == "_fields") or \
                    (isinstance(target, ast.Name) and target.id == "_fields"):
                writes.append(f"{path.name}:{node.lineno}")
    assert not writes, f"_fields assigned outside checked_field declarations at {writes}"


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_declared_field_has_a_docstring(cls):
    body = class_node(cls).body
    missing = []
    for k, item in enumerate(body):
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) \
                and "ClassVar" not in ast.unparse(item.annotation):
            following = body[k + 1] if k + 1 < len(body) else None
            if not (isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                    and isinstance(following.value.value, str) and following.value.value.strip()):
                missing.append(item.target.id)
    assert not missing, f"{cls.__name__}: fields without a docstring right below them: {missing}"


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_no_post_init_checks_a_field_again(cls):
    posts = [n for n in class_node(cls).body if isinstance(n, ast.FunctionDef) and n.name == "__post_init__"]
    calls = []
    for post in posts:
        for node in ast.walk(post):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
                if name in HELPERS or name == "check":
                    calls.append(f"{name}() at line {node.lineno}")
    assert not calls, f"{cls.__name__}.__post_init__ re-validates fields: {calls}"


# --- the mechanism: one declaration serves the constructor, assignment and check_state ----------------------------

@dataclasses.dataclass(eq=False)
class Toy(Checked):
    """A component of the test: two declared fields and a cross-field rule."""

    size: Any = checked_field(Arr((3,), low=0.0, unit=" [m]"), (1.0, 1.0, 1.0))
    """Extent [m] (3,) >= 0."""
    count: int = checked_field(Int(1), 2)
    """How many, >= 1."""
    scratch: int = checked_field(Int(0), 0, init=False)
    """Left at its class default by the constructor."""

    def _cross(self, owner: str, state: Any) -> None:
        if state["count"] > 10 and float(np.max(state["size"])) > 5.0:
            raise ValueError(f"{owner}.count: at most 10 of a size over 5 m")


@frozen_fields
@dataclasses.dataclass(frozen=True)
class FrozenToy(FrozenChecked):
    """A frozen settings class of the test."""

    rate: float = checked_field(Real(0.0, low_open=True, unit=" [1/s]"), 1.0)
    """Rate [1/s] > 0."""
    limit: float | None = checked_field(Real(0.0, optional=True), None)
    """Limit [-] >= 0, or None."""

    def _cross(self, owner: str, state: Any) -> None:
        if self.limit is not None and self.limit > self.rate:
            raise ValueError(f"{owner}.limit = {self.limit!r}: must be <= rate")


def test_the_constructor_runs_the_declared_specs_in_order_then_the_cross_rules():
    assert list(Toy._fields) == ["size", "count", "scratch"]
    toy = Toy(size=[1, 2, 3], count=np.int64(4))
    assert toy.size.dtype == np.float64 and toy.size.tolist() == [1.0, 2.0, 3.0]
    assert type(toy.count) is int and toy.count == 4 and toy.scratch == 0
    with pytest.raises(ValueError, match=r"^Toy\.size\[1\] = -2\.0: must be >= 0\.0 \[m\]$"):
        Toy(size=(1.0, -2.0, 3.0))
    with pytest.raises(FieldError, match=r"^Toy\.count = 'x': must be an integer$"):
        Toy(count="x")
    with pytest.raises(ValueError, match=r"^Toy\.size: shape \(2,\)"):
        Toy(size=(1.0, 2.0), count=0)                 # size is checked before count: the declaration order
    with pytest.raises(ValueError, match=r"^Toy\.count: at most 10"):
        Toy(size=(6.0, 0.0, 0.0), count=11)


def test_assignment_and_check_state_use_the_same_declaration():
    toy = Toy()
    with pytest.raises(ValueError, match=r"^Toy\.count = 0: must be >= 1$"):
        toy.count = 0
    assert toy.count == 2
    object.__setattr__(toy, "size", np.array([1.0, np.nan, 0.0]))
    with pytest.raises(ValueError, match=r"^Toy\.size\[1\] = nan: must be finite \[m\]$"):
        toy.check_state()


def test_the_constructor_copies_the_callers_arrays_and_assignment_takes_them_as_given():
    given = np.array([1.0, 2.0, 3.0])
    toy, transform = Toy(size=given), Transform(position=given)
    given[0] = 99.0
    assert toy.size.tolist() == [1.0, 2.0, 3.0] and transform.position.tolist() == [1.0, 2.0, 3.0]
    toy.size = given
    assert toy.size is given


def test_a_frozen_class_declares_its_fields_once_and_keeps_them_as_given():
    assert list(FrozenToy._fields) == ["rate", "limit"]
    toy = FrozenToy(rate=2, limit=0)
    assert type(toy.rate) is int and toy.rate == 2          # validated only: a frozen object is stored as given
    with pytest.raises(ValueError, match=r"^FrozenToy\.rate = 0\.0: must be > 0\.0 \[1/s\]$"):
        FrozenToy(rate=0.0)
    with pytest.raises(ValueError, match=r"^FrozenToy\.limit = 3\.0: must be <= rate$"):
        FrozenToy(rate=1.0, limit=3.0)
    object.__setattr__(toy, "rate", -1.0)
    with pytest.raises(ValueError, match=r"^FrozenToy\.rate = -1\.0: must be > 0\.0"):
        toy.check_state()


@dataclasses.dataclass(eq=False)
class Ordered(Checked):
    """A component of the test whose symbol-fixing field has a default, so it is declared after the required one."""

    _check_first = ("anchors",)
    """Checked first: ``anchors`` fixes k, which ``weights`` is checked against."""
    weights: Any = checked_field(Arr(("k",), low=0.0))
    """One weight per anchor [-], (k,) >= 0."""
    anchors: Any = checked_field(Arr(("k", 3), unit=" [m]"), default_factory=lambda: np.zeros((2, 3)))
    """Anchor points [m], (k, 3)."""


Ordered._dims = {"k": (lambda state: getattr(state.get("anchors"), "shape", (None,))[0], "anchors", "one per anchor")}


def test_check_first_puts_the_named_fields_first_in_the_table():
    assert list(Ordered._fields) == ["anchors", "weights"]
    assert list(loom.components.Cloth._fields)[:4] == ["precision", "model", "rest_x", "link_i"]
    ordered = Ordered(weights=[1.0, 2.0])
    object.__setattr__(ordered, "anchors", [[0.0, 0.0, 0.0]] * 3)     # a list: k is read from anchors once checked
    with pytest.raises(ValueError, match=r"^Ordered\.weights: shape \(2,\), expected \(3,\) \(one per anchor\)$"):
        ordered.check_state()
    with pytest.raises(TypeError, match=r"^Unknown\._check_first = \('nope',\): expected a tuple of names"):
        type("Unknown", (Checked,), {"__annotations__": {"a": "int"}, "_check_first": ("nope",),
                                     "a": checked_field(Int(0), 0)})
