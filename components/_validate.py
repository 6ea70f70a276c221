"""Boundary checks shared by every component constructor: each raises ValueError naming Owner.field and the value."""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np


class FieldError(ValueError, TypeError):
    """A component field given a value of the wrong type (a string for a number, floats for indices…).

    A ValueError, as every boundary error of Loom is, and a TypeError, so older ``except TypeError`` code
    still catches it."""


def show(value: Any) -> str:
    """Format a bad value for an error message: plain numbers (``-0.5``, not ``np.float64(-0.5)``)."""
    if isinstance(value, np.ndarray) and value.ndim > 0:
        return " ".join(np.array2string(value, precision=6, separator=", ", threshold=8).split())
    if isinstance(value, (np.ndarray, np.generic)):
        return repr(value.item())
    return repr(value)


def brief(value: Any) -> str:
    """``repr(value)`` on one line, cut to 80 characters (a bad value quoted in a one-line error)."""
    text = " ".join(repr(value).split())
    return text if len(text) <= 80 else text[:77] + "..."


def real(owner: str, name: str, value: Any, *, low: float | None = None, high: float | None = None,
         low_open: bool = False, unit: str = "") -> float:
    """Return ``value`` as a finite float within [low, high] (low excluded if low_open)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise FieldError(f"{owner}.{name} = {brief(value)}: must be a real number{unit}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{owner}.{name} = {value!r}: must be finite{unit}")
    if low is not None and (value <= low if low_open else value < low):
        raise ValueError(f"{owner}.{name} = {value!r}: must be {'>' if low_open else '>='} {low}{unit}")
    if high is not None and value > high:
        raise ValueError(f"{owner}.{name} = {value!r}: must be <= {high}{unit}")
    return value


def integer(owner: str, name: str, value: Any, *, low: int | None = None) -> int:
    """Return ``value`` as an int (bools refused) that is >= low."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise FieldError(f"{owner}.{name} = {brief(value)}: must be an integer")
    value = int(value)
    if low is not None and value < low:
        raise ValueError(f"{owner}.{name} = {value!r}: must be >= {low}")
    return value


def choice(owner: str, name: str, value: Any, allowed: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``allowed``."""
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{owner}.{name} = {brief(value)}: expected one of {', '.join(allowed)}")
    return value


def floats(owner: str, name: str, value: Any, shape: tuple[int | None, ...], *, unit: str = "",
           low: float | None = None) -> np.ndarray:
    """Return ``value`` as a C-contiguous float64 array of ``shape`` (None = any length), all finite (and >= low)."""
    if isinstance(value, (str, bytes)):
        raise FieldError(f"{owner}.{name} = {brief(value)}: expected real numbers of shape {_shape(shape)}")
    try:
        complex_values = np.iscomplexobj(value)
    except (TypeError, ValueError):
        complex_values = False                       # ragged: refused by np.array below
    if complex_values:
        raise FieldError(f"{owner}.{name}: expected real numbers of shape {_shape(shape)}, got complex values")
    if isinstance(value, np.ndarray) and value.dtype.kind not in "iuf":
        raise FieldError(f"{owner}.{name}: dtype {value.dtype}, expected real numbers of shape {_shape(shape)}")
    try:
        arr = np.array(value, dtype=np.float64, copy=True, order="C")
    except (TypeError, ValueError):
        raise FieldError(f"{owner}.{name}: expected real numbers of shape {_shape(shape)}, got {show(value)}") \
            from None
    _check_shape(owner, name, arr, shape)
    bad = ~np.isfinite(arr)
    if bad.any():
        where = np.argwhere(bad)[0]
        row = tuple(int(w) for w in where[: max(1, arr.ndim - 1)])
        label = row[0] if len(row) == 1 else list(row)
        raise ValueError(f"{owner}.{name}[{label}] = {show(arr[row])}: must be finite{unit}")
    if low is not None:
        below = arr < low
        if below.any():
            k = int(np.argwhere(below)[0][0])
            raise ValueError(f"{owner}.{name}[{k}] = {show(arr[k])}: must be >= {low}{unit}")
    return arr


def indices(owner: str, name: str, value: Any, shape: tuple[int | None, ...], count: int,
            *, count_label: str = "particles") -> np.ndarray:
    """Return ``value`` as a C-contiguous int32 array of ``shape`` with every entry in [0, count)."""
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        raise FieldError(f"{owner}.{name}: expected integer indices of shape {_shape(shape)}, got {brief(value)}") \
            from None
    if arr.size == 0 and arr.dtype.kind not in "iu":
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise FieldError(f"{owner}.{name}: expected integer indices, got dtype {arr.dtype} ({show(arr)})")
    _check_shape(owner, name, arr, shape)
    if arr.size == 0:
        return np.ascontiguousarray(arr, dtype=np.int32)
    flat = arr.reshape(arr.shape[0], -1) if arr.ndim > 1 else arr.reshape(-1, 1)
    bad = (flat < 0) | (flat >= count)
    if bad.any():
        k = int(np.argwhere(bad)[0][0])
        shown = show(arr[k])
        raise ValueError(f"{owner}.{name}[{k}] = {shown}: out of range for {count} {count_label}")
    return np.ascontiguousarray(arr, dtype=np.int32)


def _shape(shape: tuple[int | None, ...]) -> str:
    return "(" + ", ".join("n" if s is None else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def _check_shape(owner: str, name: str, arr: np.ndarray, shape: tuple[int | None, ...]) -> None:
    if arr.ndim != len(shape) or any(s is not None and s != a for s, a in zip(shape, arr.shape)):
        raise ValueError(f"{owner}.{name}: shape {arr.shape}, expected {_shape(shape)}")


# --- field specs: what a component field must hold, checked on assignment and by check_state -------------------

Dims = Mapping[str, tuple[Callable[[Mapping[str, Any]], int | None], str, str]]
"""A class's shape symbols: symbol → (its size read from the object's state, what it counts, why it is fixed)."""


def length(key: str, axis: int = 0, plus: int = 0) -> Callable[[Mapping[str, Any]], int | None]:
    """A dims reader: the size of ``state[key]`` along ``axis`` (+ plus), or None if it has no such axis."""
    def read(state: Mapping[str, Any]) -> int | None:
        value = state.get(key)
        shape = getattr(value, "shape", None)
        if shape is None or len(shape) <= axis:
            return None
        return int(shape[axis]) + plus
    return read


def frozen(value: Any) -> Any:
    """``value`` as a read-only array that shares memory with nothing writable: ``value`` itself when it is already
    read-only all the way down (``sealed``), else a read-only C-contiguous copy (a caller's array is never frozen in
    place). Non-arrays pass through. Rest data and index tables are stored so: an in-place write
    (``cloth.link_i[0] = 10**6``) raises ValueError ("assignment destination is read-only") instead of reaching a
    kernel unchecked; assigning a new array stays allowed and is checked."""
    if not isinstance(value, np.ndarray) or sealed(value):
        return value
    out = np.array(value, copy=True, order="C")
    out.flags.writeable = False
    return out


def sealed(arr: np.ndarray) -> bool:
    """True if ``arr`` is C-contiguous and neither it nor any array it is a view of can be written."""
    if not arr.flags.c_contiguous:
        return False
    while isinstance(arr, np.ndarray):
        if arr.flags.writeable:
            return False
        arr = arr.base
    return True


def freeze_in_place(value: Any) -> Any:
    """``value`` and the arrays it is a view of made read-only in place (an array Loom built or decoded itself:
    its identity is kept, so other references to it, such as a snapshot's shared arrays, stay the same object);
    ``frozen(value)`` for a non-contiguous one."""
    if isinstance(value, np.ndarray) and value.flags.c_contiguous:
        arr = value
        while isinstance(arr, np.ndarray):
            arr.flags.writeable = False
            arr = arr.base
        return value
    return frozen(value)


class Spec:
    """What one field holds; ``check`` returns the value to store or raises ValueError naming Owner.field."""

    optional = False
    readonly = False
    """True: the field's array is stored read-only (``frozen``); in-place writes raise, assignment is checked."""
    symbols: frozenset[str] = frozenset()
    """Dims symbols the check reads (a field is re-checked when ``assign`` changes one of them)."""

    def check(self, owner: str, name: str, state: Mapping[str, Any], value: Any, dims: Dims) -> Any:
        """Return ``value`` converted for storage, or raise ValueError (FieldError for a wrong type)."""
        raise NotImplementedError


class Arr(Spec):
    """An array field: ``shape`` of ints, None (any) and dims symbols; ``kind`` "f" real (``dtype`` float64, or
    "state" for the cloth's precision), "i" integer (``count`` symbol: every entry in [0, count)), "b" bool."""

    def __init__(self, shape: tuple[int | str | None, ...], kind: str = "f", *, dtype: Any = None,
                 low: float | None = None, high: float | None = None, low_open: bool = False, finite: bool = True,
                 count: str | None = None, unit: str = "", optional: bool = False, readonly: bool = False) -> None:
        self.shape, self.kind, self.low, self.high, self.low_open = shape, kind, low, high, low_open
        self.finite, self.count, self.unit, self.optional, self.readonly = finite, count, unit, optional, readonly
        self.symbols = frozenset(x for x in (*shape, count) if isinstance(x, str))
        default = {"f": np.float64, "i": np.int32, "b": np.bool_}[kind]
        self.dtype = default if dtype is None else dtype

    def check(self, owner: str, name: str, state: Mapping[str, Any], value: Any, dims: Dims) -> Any:
        if value is None and self.optional:
            return None
        arr = _array(owner, name, value, self.kind)
        _expect_shape(owner, name, arr, self.shape, state, dims)
        if self.kind == "f":
            dtype = (np.float32 if state.get("precision") == "float32" else np.float64) \
                if self.dtype == "state" else self.dtype
            with np.errstate(over="ignore", invalid="ignore"):    # too large for float32: refused as inf below
                arr = np.require(arr, dtype=dtype, requirements=("C",) if self.readonly else ("C", "W"))
            if self.finite:
                _finite(owner, name, arr, self.unit)
            else:
                _not_nan(owner, name, arr, self.unit)
            _bounds(owner, name, arr, self.low, self.high, self.low_open, self.unit)
            return frozen(arr) if self.readonly else arr
        if self.kind == "i":
            high = self.high
            if self.count is not None:
                count = dims[self.count][0](state)
                if count is not None:
                    high = count - 1
            info = np.iinfo(self.dtype)
            low = self.low if self.low is not None else (0 if self.count is not None else info.min)
            _bounds(owner, name, arr, low, info.max if high is None else high, False, "",
                    count_label=None if self.count is None else dims[self.count][1])
        if self.readonly:
            return frozen(np.require(arr, dtype=self.dtype, requirements=("C",)))
        return np.require(arr, dtype=self.dtype, requirements=("C", "W"))


class Offsets(Arr):
    """CSR/colour offsets (k + 1,) int: start at 0, never decrease, end at the size of the table they slice."""

    def __init__(self, total: str, shape: tuple[int | str | None, ...] = (None,), dtype: Any = np.int32,
                 readonly: bool = True) -> None:
        super().__init__(shape, "i", dtype=dtype, low=0, readonly=readonly)
        self.total = total
        self.symbols = self.symbols | {total}

    def check(self, owner: str, name: str, state: Mapping[str, Any], value: Any, dims: Dims) -> Any:
        arr = super().check(owner, name, state, value, dims)
        total = dims[self.total][0](state)
        if arr.size == 0 or arr[0] != 0 or (total is not None and arr[-1] != total) or (np.diff(arr) < 0).any():
            raise ValueError(f"{owner}.{name} = {show(arr)}: expected offsets rising from 0 to {total} "
                             f"(the {dims[self.total][1]})")
        return arr


class Real(Spec):
    """A real-number field (``real`` on assignment, same bounds as the constructor)."""

    def __init__(self, low: float | None = None, high: float | None = None, *, low_open: bool = False,
                 unit: str = "", optional: bool = False, above: str | None = None) -> None:
        self.low, self.high, self.low_open, self.unit, self.optional, self.above = \
            low, high, low_open, unit, optional, above

    def check(self, owner: str, name: str, state: Mapping[str, Any], value: Any, dims: Dims) -> Any:
        if value is None and self.optional:
            return None
        low, low_open = self.low, self.low_open
        if self.above is not None and isinstance(state.get(self.above), float):
            low, low_open = state[self.above], True
        return real(owner, name, value, low=low, high=self.high, low_open=low_open, unit=self.unit)


class Int(Spec):
    """An integer field (bools refused) >= low."""

    def __init__(self, low: int | None = None, *, optional: bool = False) -> None:
        self.low, self.optional = low, optional

    def check(self, owner: str, name: str, state: Mapping[str, Any], value: Any, dims: Dims) -> Any:
        if value is None and self.optional:
            return None
        return integer(owner, name, value, low=self.low)


class Flag(Spec):
    """A True/False field (numpy bools and the integers 0 and 1 accepted)."""

    def check(self, owner: str, name: str, state: Mapping[str, Any], value: Any, dims: Dims) -> Any:
        if isinstance(value, (bool, np.bool_)) or (isinstance(value, (int, np.integer)) and value in (0, 1)):
            return bool(value)
        raise FieldError(f"{owner}.{name} = {brief(value)}: must be True or False")


class Choice(Spec):
    """A field holding one of a few names."""

    def __init__(self, allowed: tuple[str, ...], *, optional: bool = False) -> None:
        self.allowed, self.optional = allowed, optional

    def check(self, owner: str, name: str, state: Mapping[str, Any], value: Any, dims: Dims) -> Any:
        if value is None and self.optional:
            return None
        return choice(owner, name, value, self.allowed)


class Instance(Spec):
    """A field holding an instance of ``types`` (described as ``label`` in the error)."""

    def __init__(self, types: Any, label: str, *, optional: bool = False) -> None:
        self.types, self.label, self.optional = types, label, optional

    def check(self, owner: str, name: str, state: Mapping[str, Any], value: Any, dims: Dims) -> Any:
        if (value is None and self.optional) or isinstance(value, self.types):
            return value
        raise FieldError(f"{owner}.{name} = {brief(value)}: expected {self.label}")


class Fixed(Spec):
    """A field set once by the constructor: assignment refused (``why`` says what to do), ``check_state`` runs
    ``spec`` on the stored value."""

    def __init__(self, spec: Spec, why: str) -> None:
        self.spec, self.why, self.symbols, self.readonly = spec, why, spec.symbols, spec.readonly

    def check(self, owner: str, name: str, state: Mapping[str, Any], value: Any, dims: Dims) -> Any:
        if value is not state.get(name):
            raise ValueError(f"{owner}.{name}: fixed when the {owner} is built ({self.why})")
        return self.spec.check(owner, name, state, value, dims)


class Custom(Spec):
    """A field checked by ``fn(owner, name, state, value) -> value``."""

    def __init__(self, fn: Callable[[str, str, Mapping[str, Any], Any], Any], symbols: tuple[str, ...] = (),
                 *, readonly: bool = False) -> None:
        self.fn, self.symbols, self.readonly = fn, frozenset(symbols), readonly

    def check(self, owner: str, name: str, state: Mapping[str, Any], value: Any, dims: Dims) -> Any:
        value = self.fn(owner, name, state, value)
        return frozen(value) if self.readonly else value


def unit_vector(owner: str, name: str, state: Any, value: Any) -> np.ndarray:
    """A direction (3,), returned normalised; a zero vector is refused (a ``Custom`` field check)."""
    vector = floats(owner, name, value, (3,))
    norm = float(np.linalg.norm(vector))
    if norm < 1e-12:
        raise ValueError(f"{owner}.{name} = {vector.tolist()}: must be a non-zero vector (it is normalised)")
    return vector / norm


def as_array(owner: str, name: str, value: Any, expected: str) -> np.ndarray:
    """``np.asarray(value)``, or a FieldError naming Class.field and what was ``expected`` for a string, bytes or a
    value NumPy cannot make an array of (a ragged list)."""
    if isinstance(value, (str, bytes)):
        raise FieldError(f"{owner}.{name} = {brief(value)}: expected {expected}")
    try:
        return np.asarray(value)
    except (TypeError, ValueError):
        raise FieldError(f"{owner}.{name}: expected {expected}, got {type(value).__name__}") from None


def _array(owner: str, name: str, value: Any, kind: str) -> np.ndarray:
    """``value`` as an ndarray of ``kind`` numbers (f real, i integer, b bool), or a FieldError naming the field."""
    expected = {"f": "real numbers", "i": "integers", "b": "booleans"}[kind]
    arr = as_array(owner, name, value, f"an array of {expected}")
    if arr.size == 0 and kind != "b" and arr.dtype.kind in "fiub":
        return arr
    allowed = {"f": "iuf", "i": "iu", "b": "b"}[kind]
    if arr.dtype.kind not in allowed:
        raise FieldError(f"{owner}.{name}: dtype {arr.dtype}, expected {expected}")
    return arr


def _expect_shape(owner: str, name: str, arr: np.ndarray, shape: tuple[int | str | None, ...],
                  state: Mapping[str, Any], dims: Dims) -> None:
    """Raise ValueError unless ``arr.shape`` matches ``shape`` with its symbols read from ``state``."""
    sizes, why = [], []
    for s in shape:
        if isinstance(s, str):
            size = dims[s][0](state)
            sizes.append(size)
            if size is not None and dims[s][2] not in why:
                why.append(dims[s][2])
        else:
            sizes.append(s)
    if arr.ndim != len(sizes) or any(s is not None and s != a for s, a in zip(sizes, arr.shape)):
        reason = f" ({'; '.join(why)})" if why else ""
        raise ValueError(f"{owner}.{name}: shape {arr.shape}, expected {_shape(tuple(sizes))}{reason}")


def _finite(owner: str, name: str, arr: np.ndarray, unit: str) -> None:
    """Raise ValueError naming the first non-finite entry of ``arr``."""
    if arr.size and not np.isfinite(arr).all():
        where = np.argwhere(~np.isfinite(arr))[0]
        row = tuple(int(w) for w in where[: max(1, arr.ndim - 1)])
        label = row[0] if len(row) == 1 else list(row)
        raise ValueError(f"{owner}.{name}[{label}] = {show(arr[row])}: must be finite{unit}")


def _not_nan(owner: str, name: str, arr: np.ndarray, unit: str) -> None:
    """Raise ValueError naming the first NaN of ``arr`` (inf allowed)."""
    if arr.size and np.isnan(arr).any():
        k = int(np.argwhere(np.isnan(arr))[0][0])
        raise ValueError(f"{owner}.{name}[{k}] = {show(arr[k])}: must not be NaN{unit}")


def _bounds(owner: str, name: str, arr: np.ndarray, low: float | None, high: float | None, low_open: bool,
            unit: str, *, count_label: str | None = None) -> None:
    """Raise ValueError naming the first entry of ``arr`` below ``low`` or above ``high``."""
    if arr.size == 0:
        return
    bad = np.zeros(arr.shape, np.bool_)
    if low is not None:
        bad |= (arr <= low) if low_open else (arr < low)
    if high is not None:
        bad |= arr > high
    if bad.any():
        k = tuple(int(w) for w in np.argwhere(bad)[0][: max(1, arr.ndim - 1)])
        label = k[0] if len(k) == 1 else list(k)
        if count_label is not None:
            raise ValueError(f"{owner}.{name}[{label}] = {show(arr[k])}: out of range for {high + 1} {count_label}")
        rule = " and ".join(r for r in ((f"{'>' if low_open else '>='} {low}" if low is not None else ""),
                                        (f"<= {high}" if high is not None else "")) if r)
        raise ValueError(f"{owner}.{name}[{label}] = {show(arr[k])}: must be {rule}{unit}")
