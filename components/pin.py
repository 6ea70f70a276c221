"""Pin: particles of the cloth on the same entity held at world points or at another entity's Transform.

A pinned particle has inverse mass 0 while its pin is active, so no constraint moves it (Fuhrmann
2003 eq. 11 convention); the pin system moves it to its target, interpolated across the substeps
of a step so a moving hand never yanks the cloth in one jump. Release and re-grab any time by
toggling ``active`` (``pin.release()``, ``pin.grab()``); components are never added per frame.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from loom.components._revision import Revisioned, checked_field
from loom.components._validate import Arr, Custom, FieldError, Flag, Int, as_array, brief, length
from loom.engine.mesh import Mesh
from loom.engine.persist import persistent


def _index(owner: str, name: str, state: Any, value: Any) -> np.ndarray:
    """Pin.index: (k,) unique particle indices >= 0 as int32; k fixed by the other per-pin arrays once built
    (``state`` None: a single index may be a plain integer)."""
    idx = as_array(owner, name, value, "integer particle indices")
    if state is None and idx.ndim == 0:
        idx = idx.reshape(1)
    if idx.ndim != 1 or idx.size == 0:
        raise ValueError(f"{owner}.{name}: shape {idx.shape}, expected (k,) with k >= 1")
    if idx.dtype.kind not in "iu":
        raise FieldError(f"{owner}.{name}: expected integer particle indices, got dtype {idx.dtype}")
    if state is not None:
        k = length("index")(state)
        if k is not None and idx.size != k:
            raise ValueError(f"{owner}.{name}: shape {idx.shape}, expected ({k},) ({_PER_PIN})")
    negative = np.flatnonzero(idx < 0)
    if negative.size:
        j = int(negative[0])
        raise ValueError(f"{owner}.{name}[{j}] = {int(idx[j])}: particle indices are >= 0")
    big = np.flatnonzero(idx > np.iinfo(np.int32).max)
    if big.size:
        j = int(big[0])
        raise ValueError(f"{owner}.{name}[{j}] = {int(idx[j])}: out of range for any cloth")
    values, counts = np.unique(idx, return_counts=True)
    if (counts > 1).any():
        raise ValueError(f"{owner}.{name}: particle {int(values[counts > 1][0])} is pinned twice")
    return np.ascontiguousarray(idx, dtype=np.int32)


def _rows(owner: str, name: str, state: Any, value: Any, unit: str) -> np.ndarray | None:
    """A per-pin (k, 3) array, or None; a single (3,) row only for a pin of one particle (never broadcast)."""
    if value is None:
        return None
    k = length("index")(state)
    if k == 1 and np.shape(value) == (3,):
        value = np.reshape(np.asarray(value), (1, 3))
    arr = Arr(("k", 3), unit=unit).check(owner, name, state, value, _PIN_DIMS)
    return arr if arr is not value else arr.copy()


def _targets(owner: str, name: str, state: Any, value: Any) -> np.ndarray | None:
    """Pin.target: (k, 3) world points [m], or None (filled by the pin system at the first step)."""
    return _rows(owner, name, state, value, " [m]")


def _offsets(owner: str, name: str, state: Any, value: Any) -> np.ndarray | None:
    """Pin.offset: (k, 3) points [m] in attach_to's frame, or None; needs attach_to."""
    if value is not None and state.get("attach_to") is None:
        raise ValueError(f"{owner}.{name}: given without attach_to; offsets are in an entity's local frame")
    return _rows(owner, name, state, value, " [m]")


_PER_PIN = ("one per pinned particle, k = len(Pin.index); change k with pin.assign(index=..., target=..., "
            "active=..., active_before=..., step_start=..., step_end=...)")
_PIN_DIMS = {"k": (length("index"), "pinned particles", _PER_PIN)}

class _Flags(Arr):
    """Pin.active: (k,) bool, one flag per pin; refused naming the shape and dtype found."""

    def __init__(self) -> None:
        super().__init__(("k",), "b")

    def check(self, owner: str, name: str, state: Any, value: Any, dims: Any) -> Any:
        k = length("index")(state)
        try:
            arr = np.asarray(value)
        except (TypeError, ValueError):
            raise FieldError(f"{owner}.{name} = {brief(value)}: expected ({k},) bool") from None
        if arr.shape != (k,) or arr.dtype != np.bool_:
            raise ValueError(f"{owner}.{name}: shape {arr.shape} dtype {arr.dtype}, expected ({k},) bool "
                             f"({_PER_PIN})")
        return super().check(owner, name, state, arr, dims)


@persistent
@dataclass(eq=False)
class Pin(Revisioned):
    """Holds ``index`` particles at ``target`` world points, or at ``offset`` in ``attach_to``'s Transform."""

    _dims = _PIN_DIMS
    """k: the pinned particles (``len(index)``)."""
    index: Any = checked_field(Custom(_index, ("k",), readonly=True))
    """Pinned particle indices, shape (k,) int, unique, each < the cloth's particle count; a read-only array (an
    in-place write raises ValueError): assign a new one, checked here and against the cloth before the next step."""
    target: Any = checked_field(Custom(_targets, ("k",)), None)
    """World targets [m], shape (k, 3), one row per index (a single (3,) point only when k = 1: never broadcast
    to several pins); None: where the particles are when first stepped. Move it to drag them."""
    attach_to: int | None = checked_field(Int(1, optional=True), None)
    """Entity whose Transform carries the pins (a hero's shoulders); None: fixed world targets."""
    offset: Any = checked_field(Custom(_offsets, ("k",)), None)
    """Targets in ``attach_to``'s local frame [m], shape (k, 3); None: taken from where the particles are at the
    first step."""
    active: Any = checked_field(_Flags(), None)
    """Which pins hold, shape (k,) bool; default all. A released particle falls free."""

    step_start: np.ndarray = checked_field(Arr(("k", 3), unit=" [m]"), init=False, repr=False)
    """World targets at the start of the current step [m], (k, 3) (pin system scratch)."""
    step_end: np.ndarray = checked_field(Arr(("k", 3), unit=" [m]"), init=False, repr=False)
    """World targets at the end of the current step [m], (k, 3) (pin system scratch)."""
    bound: bool = checked_field(Flag(), False, init=False, repr=False)
    """True once the pin system has checked the indices against its cloth and filled missing targets."""
    bound_particles: int = checked_field(Int(-1), -1, init=False, repr=False)
    """Particle count of the cloth the indices were last checked against (−1: none yet): a cloth replaced on the
    entity (``app.add_component(entity, other_cloth)``) or re-meshed has another count, and the pin system checks
    the indices again before any kernel reads them."""
    active_before: np.ndarray = checked_field(Arr(("k",), "b"), init=False, repr=False)
    """``active`` as the pin system saw it last step (to report releases and grabs as events)."""

    def __post_init__(self) -> None:
        """A single index may be a plain integer; ``active`` None holds every pin; the scratch is sized from the
        indices (``_check_new`` then checks every field)."""
        self.index = _one_or_more(self.index)
        k = _size(self.index)
        if self.active is None:
            self.active = np.ones(k, np.bool_)
        self.step_start = np.zeros((k, 3))
        self.step_end = np.zeros((k, 3))
        self.active_before = self.active
        self._check_new()
        self.active_before = self.active.copy()

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name == "index":                      # the pin system re-checks new indices against its cloth
            object.__setattr__(self, "bound", False)

    def check_state(self) -> None:
        """Re-run every field check (``Checked.check_state``); the pin system then re-checks the indices
        against its cloth's particle count before the next step (a pin does not know its cloth)."""
        self.__dict__.setdefault("bound_particles", -1)          # a snapshot saved before the field existed
        super().check_state()
        object.__setattr__(self, "bound", False)

    def assign(self, **fields: Any) -> None:
        """Set fields whose sizes change together (``pin.assign(index=..., target=..., active=...,
        active_before=..., step_start=..., step_end=...)``), all checked against each other."""
        super().assign(**fields)
        if "index" in fields:
            object.__setattr__(self, "bound", False)

    def _cross(self, owner: str, state: Any) -> None:
        if state["offset"] is not None and state["attach_to"] is None:
            raise ValueError("Pin.offset: set without attach_to; offsets are in an entity's local frame")

    # --- constructors ---------------------------------------------------------------------------
    @classmethod
    def edge(cls, mesh: Mesh, side: str, **options: Any) -> Pin:
        """Pin the particles of a grid mesh's ``side`` ("left", "right", "top", "bottom", "top_corners", …)
        at their rest positions (or to ``attach_to`` with options)."""
        idx = mesh.side(side)
        if "attach_to" in options:
            return cls(index=idx, **options)
        return cls(index=idx, target=mesh.positions[idx], **options)

    @classmethod
    def corners(cls, mesh: Mesh, which: str = "top", **options: Any) -> Pin:
        """Pin two corners of a grid mesh: ``which`` = "top" or "bottom"."""
        return cls.edge(mesh, f"{which}_corners", **options)

    # --- data toggles ------------------------------------------------------------------------------
    def release(self, *which: int) -> None:
        """Let go of the pins at positions ``which`` in ``index`` (all when none given)."""
        self.active[list(which) if which else slice(None)] = False

    def grab(self, *which: int) -> None:
        """Take hold again of the pins at positions ``which`` (all when none given), at their targets."""
        self.active[list(which) if which else slice(None)] = True

    @property
    def count(self) -> int:
        """Number of pinned particles k."""
        return self.index.size


def _one_or_more(index: Any) -> Any:
    """A single index given to the constructor as a (1,) array; anything else as given (checked by ``_index``)."""
    if isinstance(index, (str, bytes)):
        return index
    try:
        arr = np.asarray(index)
    except (TypeError, ValueError):
        return index
    return arr.reshape(1) if arr.ndim == 0 else index


def _size(index: Any) -> int:
    """The number of pins ``index`` names if it is a 1D array or list, else 0 (``_index`` then refuses it)."""
    try:
        return int(np.asarray(index).size) if np.ndim(index) == 1 else 0
    except (TypeError, ValueError):
        return 0
