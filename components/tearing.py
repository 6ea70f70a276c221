"""Tearable: lets a cloth tear where it is overstretched — the threshold strain and how long it must last.

Add it next to a Cloth with triangles (``app.spawn(cloth, Tearable(tear_strain=0.5))``). The
tearing system (systems/interaction/tearing.py) breaks a stretch or shear link strained beyond
``tear_strain`` for at least ``tear_time`` and splits the mesh there. The scratch fields below
belong to that system.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from loom.components._revision import Checked, checked_field
from loom.components._validate import Arr, Flag, Instance, Int, Real
from loom.engine.persist import persistent


@persistent
@dataclass(eq=False)
class Tearable(Checked):
    """Tearing thresholds: strain ``tear_strain`` [-] held for ``tear_time`` [s] breaks a link."""

    tear_strain: float = checked_field(Real(0.0, low_open=True, unit=" [-]"), 0.5)
    """Relative elongation (length/rest − 1) [-] > 0 beyond which a stretch or shear link is
    overloaded: 0.1 paper-like, 0.5 a knit, 2 rubber."""
    tear_time: float = checked_field(Real(0.0, unit=" [s]"), 0.05)
    """Time [s] >= 0 a link must stay overloaded before it breaks (3 steps at 60 Hz): filters the
    one-step spikes of a hard collision; 0 breaks at once."""
    max_splits: int = checked_field(Int(1), 16)
    """Most particles split per step [-] >= 1: bounds the cost of one rebuild; links past the cap
    break in the next step, most strained first (a crack then runs max_splits particles per step)."""
    active: bool = checked_field(Flag(), True)
    """False makes the cloth untearable for now (timers are kept)."""

    link_time: np.ndarray = checked_field(Arr((None,), low=0.0, unit=" [s]"), default_factory=lambda: np.zeros(0),
                                          init=False, repr=False)
    """Time each link has been overloaded without a break [s], (c,), in the cloth's colour order."""
    link_table: np.ndarray | None = checked_field(
        Instance(np.ndarray, "the cloth's link_i array or None", optional=True), None, init=False, repr=False)
    """The cloth's ``link_i`` array the timers belong to (a new table resets them)."""
    piece: np.ndarray = checked_field(Arr((None,), "i", low=0, readonly=True),
                                      default_factory=lambda: np.zeros(0, np.int32), init=False, repr=False)
    """Connected piece of each particle after the last tear, (n,) int32 (empty until the first tear)."""
    torn: np.ndarray = checked_field(Arr((None,), "b", readonly=True), default_factory=lambda: np.zeros(0, np.bool_),
                                     init=False, repr=False)
    """Particles that are copies or have been copied, (n,) bool (empty until the first tear)."""
    crack: np.ndarray = checked_field(Arr((None, 2), "i", low=0, readonly=True),
                                      default_factory=lambda: np.zeros((0, 2), np.int32), init=False, repr=False)
    """Boundary edges between torn particles — the faces of the cracks — (k, 2) int32. ``piece``, ``torn`` and
    ``crack`` are read-only arrays (the tearing system assigns new ones; an in-place write raises ValueError)."""
    tears: int = checked_field(Int(0), 0, init=False)
    """Particles duplicated by tearing so far (a measure of how torn the cloth is)."""
    rebuilds: int = checked_field(Int(0), 0, init=False)
    """Steps in which the cloth's topology was rebuilt."""

    def _cross(self, owner: str, state: Any) -> None:
        """piece and torn cover the same particles, and every crack face joins two of them."""
        n = state["torn"].shape[0]
        if state["piece"].shape[0] != n:
            raise ValueError(f"{owner}.piece: shape {state['piece'].shape}, expected ({n},) like {owner}.torn")
        crack = state["crack"]
        if crack.size and crack.max() >= n:
            raise ValueError(f"{owner}.crack: particle {int(crack.max())} out of range for {n} particles")
