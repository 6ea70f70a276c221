"""Tearable: lets a cloth tear where it is overstretched — the threshold strain and how long it must last.

Add it next to a Cloth with triangles (``app.spawn(cloth, Tearable(tear_strain=0.5))``). The
tearing system (systems/interaction/tearing.py) breaks a stretch or shear link strained beyond
``tear_strain`` for at least ``tear_time`` and splits the mesh there. The scratch fields below
belong to that system.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from loom.components._revision import Checked
from loom.components._validate import Arr, Flag, Instance, Int, Real, integer, real


@dataclass(eq=False)
class Tearable(Checked):
    """Tearing thresholds: strain ``tear_strain`` [-] held for ``tear_time`` [s] breaks a link."""

    tear_strain: float = 0.5
    """Relative elongation (length/rest − 1) [-] > 0 beyond which a stretch or shear link is
    overloaded: 0.1 paper-like, 0.5 a knit, 2 rubber."""
    tear_time: float = 0.05
    """Time [s] >= 0 a link must stay overloaded before it breaks (3 steps at 60 Hz): filters the
    one-step spikes of a hard collision; 0 breaks at once."""
    max_splits: int = 16
    """Most particles split per step [-] >= 1: bounds the cost of one rebuild; links past the cap
    break in the next step, most strained first (a crack then runs max_splits particles per step)."""
    active: bool = True
    """False makes the cloth untearable for now (timers are kept)."""

    link_time: np.ndarray = field(init=False, repr=False)
    """Time each link has been overloaded without a break [s], (c,), in the cloth's colour order."""
    link_table: np.ndarray | None = field(init=False, default=None, repr=False)
    """The cloth's ``link_i`` array the timers belong to (a new table resets them)."""
    piece: np.ndarray = field(init=False, repr=False)
    """Connected piece of each particle after the last tear, (n,) int32 (empty until the first tear)."""
    torn: np.ndarray = field(init=False, repr=False)
    """Particles that are copies or have been copied, (n,) bool (empty until the first tear)."""
    crack: np.ndarray = field(init=False, repr=False)
    """Boundary edges between torn particles — the faces of the cracks — (k, 2) int32. ``piece``, ``torn`` and
    ``crack`` are read-only arrays (the tearing system assigns new ones; an in-place write raises ValueError)."""
    tether_table: np.ndarray | None = field(init=False, default=None, repr=False)
    """The cloth's ``tether_anchor`` array last pruned to stay within pieces."""
    tears: int = field(init=False, default=0)
    """Particles duplicated by tearing so far (a measure of how torn the cloth is)."""
    rebuilds: int = field(init=False, default=0)
    """Steps in which the cloth's topology was rebuilt."""

    def __post_init__(self) -> None:
        self.tear_strain = real("Tearable", "tear_strain", self.tear_strain, low=0.0, low_open=True, unit=" [-]")
        self.tear_time = real("Tearable", "tear_time", self.tear_time, low=0.0, unit=" [s]")
        self.max_splits = integer("Tearable", "max_splits", self.max_splits, low=1)
        self.active = bool(self.active)
        self.link_time = np.zeros(0)
        self.piece = np.zeros(0, np.int32)
        self.torn = np.zeros(0, np.bool_)
        self.crack = np.zeros((0, 2), np.int32)

    def _cross(self, owner: str, state: Any) -> None:
        """piece and torn cover the same particles, and every crack face joins two of them."""
        n = state["torn"].shape[0]
        if state["piece"].shape[0] != n:
            raise ValueError(f"{owner}.piece: shape {state['piece'].shape}, expected ({n},) like {owner}.torn")
        crack = state["crack"]
        if crack.size and crack.max() >= n:
            raise ValueError(f"{owner}.crack: particle {int(crack.max())} out of range for {n} particles")


Tearable._fields = {
    "tear_strain": Real(0.0, low_open=True, unit=" [-]"),
    "tear_time": Real(0.0, unit=" [s]"),
    "max_splits": Int(1),
    "active": Flag(),
    "link_time": Arr((None,), low=0.0, unit=" [s]"),
    "link_table": Instance(np.ndarray, "the cloth's link_i array or None", optional=True),
    "piece": Arr((None,), "i", low=0, readonly=True),
    "torn": Arr((None,), "b", readonly=True),
    "crack": Arr((None, 2), "i", low=0, readonly=True),
    "tether_table": Instance(np.ndarray, "the cloth's tether_anchor array or None", optional=True),
    "tears": Int(0),
    "rebuilds": Int(0),
}
