"""Pin: particles of the cloth on the same entity held at world points or at another entity's Transform.

A pinned particle has inverse mass 0 while its pin is active, so no constraint moves it (Fuhrmann
2003 eq. 11 convention); the pin system moves it to its target, interpolated across the substeps
of a step so a moving hand never yanks the cloth in one jump. Release and re-grab any time by
toggling ``active`` (``pin.release()``, ``pin.grab()``); components are never added per frame.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from loom.components._revision import Revisioned
from loom.components._validate import floats, integer
from loom.engine.mesh import Mesh


@dataclass(eq=False)
class Pin(Revisioned):
    """Holds ``index`` particles at ``target`` world points, or at ``offset`` in ``attach_to``'s Transform."""

    index: Any
    """Pinned particle indices, shape (k,) int, unique, each < the cloth's particle count."""
    target: Any = None
    """World targets [m], shape (k, 3); None: where the particles are when first stepped. Move it to drag them."""
    attach_to: int | None = None
    """Entity whose Transform carries the pins (a hero's shoulders); None: fixed world targets."""
    offset: Any = None
    """Targets in ``attach_to``'s local frame [m], shape (k, 3); None: measured at the first step."""
    active: Any = None
    """Which pins hold, shape (k,) bool; default all. A released particle falls free."""

    step_start: np.ndarray = field(init=False, repr=False)
    """World targets at the start of the current step [m], (k, 3) (pin system scratch)."""
    step_end: np.ndarray = field(init=False, repr=False)
    """World targets at the end of the current step [m], (k, 3) (pin system scratch)."""
    bound: bool = field(init=False, default=False, repr=False)
    """True once the pin system has checked the indices against its cloth and filled missing targets."""
    active_before: np.ndarray = field(init=False, repr=False)
    """``active`` as the pin system saw it last step (to report releases and grabs as events)."""

    def __post_init__(self) -> None:
        idx = np.asarray(self.index)
        if idx.ndim == 0:
            idx = idx.reshape(1)
        if idx.ndim != 1 or idx.size == 0:
            raise ValueError(f"Pin.index: shape {idx.shape}, expected (k,) with k >= 1")
        if idx.dtype.kind not in "iu":
            raise TypeError(f"Pin.index: expected integer particle indices, got dtype {idx.dtype}")
        negative = np.flatnonzero(idx < 0)
        if negative.size:
            k = int(negative[0])
            raise ValueError(f"Pin.index[{k}] = {int(idx[k])}: particle indices are >= 0")
        values, counts = np.unique(idx, return_counts=True)
        if (counts > 1).any():
            raise ValueError(f"Pin.index: particle {int(values[counts > 1][0])} is pinned twice")
        self.index = np.ascontiguousarray(idx, dtype=np.int32)
        k = self.index.size
        if self.target is not None:
            self.target = floats("Pin", "target", self.target, (k, 3), unit=" [m]")
        if self.attach_to is not None:
            self.attach_to = integer("Pin", "attach_to", self.attach_to, low=1)
        if self.offset is not None:
            if self.attach_to is None:
                raise ValueError("Pin.offset: given without attach_to; offsets are in an entity's local frame")
            self.offset = floats("Pin", "offset", self.offset, (k, 3), unit=" [m]")
        if self.active is None:
            self.active = np.ones(k, np.bool_)
        else:
            active = np.asarray(self.active)
            if active.shape != (k,) or active.dtype != np.bool_:
                raise ValueError(f"Pin.active: shape {active.shape} dtype {active.dtype}, expected ({k},) bool")
            self.active = active.copy()
        self.step_start = np.zeros((k, 3))
        self.step_end = np.zeros((k, 3))
        self.active_before = self.active.copy()

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
