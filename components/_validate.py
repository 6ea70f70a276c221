"""Boundary checks shared by every component constructor: each raises ValueError naming Owner.field and the value."""
from __future__ import annotations

import math
from typing import Any

import numpy as np


def show(value: Any) -> str:
    """Format a bad value for an error message: plain numbers (``-0.5``, not ``np.float64(-0.5)``)."""
    if isinstance(value, np.ndarray) and value.ndim > 0:
        return np.array2string(value, precision=6, separator=", ", threshold=8)
    if isinstance(value, (np.ndarray, np.generic)):
        return repr(value.item())
    return repr(value)


def real(owner: str, name: str, value: Any, *, low: float | None = None, high: float | None = None,
         low_open: bool = False, unit: str = "") -> float:
    """Return ``value`` as a finite float within [low, high] (low excluded if low_open)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{owner}.{name} = {value!r}: must be a real number{unit}")
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
        raise TypeError(f"{owner}.{name} = {value!r}: must be an integer")
    value = int(value)
    if low is not None and value < low:
        raise ValueError(f"{owner}.{name} = {value!r}: must be >= {low}")
    return value


def choice(owner: str, name: str, value: Any, allowed: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``allowed``."""
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{owner}.{name} = {value!r}: expected one of {', '.join(allowed)}")
    return value


def floats(owner: str, name: str, value: Any, shape: tuple[int | None, ...], *, unit: str = "",
           low: float | None = None) -> np.ndarray:
    """Return ``value`` as a C-contiguous float64 array of ``shape`` (None = any length), all finite (and >= low)."""
    if np.iscomplexobj(value):
        raise TypeError(f"{owner}.{name}: expected real numbers of shape {_shape(shape)}, got complex values")
    try:
        arr = np.array(value, dtype=np.float64, copy=True, order="C")
    except (TypeError, ValueError):
        raise TypeError(f"{owner}.{name}: expected real numbers of shape {_shape(shape)}, got {show(value)}") \
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
    arr = np.asarray(value)
    if arr.size == 0 and arr.dtype.kind not in "iu":
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{owner}.{name}: expected integer indices, got dtype {arr.dtype} ({show(arr)})")
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
