"""Grab: one pointer's hold on a cloth particle — which particle, and where the pointer wants it.

One Grab entity per pointer (mouse, touch, VR controller). The input code changes its data — most
simply through ``loom.systems.interaction.picking.update_grab`` — and the picking system does the rest: while
``active`` the particle gets infinite mass and is moved to ``target`` (Fuhrmann et al. 2003 §3,
"User input", eq. 11); when ``active`` turns False it gets its mass back. Toggle ``active``;
don't add and remove the component per click.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from loom.components._revision import Checked
from loom.components._validate import Arr, Custom, Flag, Int, Real, floats, integer, real


@dataclass(eq=False)
class Grab(Checked):
    """A pointer's grab: ``cloth`` entity, ``particle`` index, world ``target`` [m] and ray ``depth`` [m]."""

    active: bool = False
    """True while the pointer holds the particle."""
    cloth: int | None = None
    """Entity of the grabbed Cloth (None when nothing was picked)."""
    particle: int = 0
    """Index of the grabbed particle in that cloth, >= 0."""
    target: Any = (0.0, 0.0, 0.0)
    """Where the particle must be at the end of the next step [m], shape (3,)."""
    depth: float = 0.0
    """Distance along the pointer's ray at which the particle was picked [m] >= 0; dragging keeps it."""
    radius: float = 0.05
    """Pick radius [m] > 0: particles farther than this from the ray cannot be picked."""

    step_start: np.ndarray = field(init=False, repr=False)
    """Particle position at the start of the current step [m], (3,) (picking system scratch)."""
    step_end: np.ndarray = field(init=False, repr=False)
    """Target for the end of the current step [m], (3,) (picking system scratch)."""
    held_cloth: int | None = field(init=False, default=None, repr=False)
    """Cloth entity whose particle the system holds now (None: none); differs from ``cloth`` for one
    step after the pointer lets go or switches, so the system knows whose mass to give back."""
    held_particle: int = field(init=False, default=-1, repr=False)
    """Particle the system holds now, or −1."""

    def __post_init__(self) -> None:
        o = "Grab"
        self.active = bool(self.active)
        if self.cloth is not None:
            self.cloth = integer(o, "cloth", self.cloth, low=1)
        self.particle = integer(o, "particle", self.particle, low=0)
        if self.active and self.cloth is None:
            raise ValueError("Grab.active = True with Grab.cloth = None: an active grab needs a cloth entity")
        self.target = floats(o, "target", self.target, (3,), unit=" [m]")
        self.depth = real(o, "depth", self.depth, low=0.0, unit=" [m]")
        self.radius = real(o, "radius", self.radius, low=0.0, low_open=True, unit=" [m]")
        self.step_start = self.target.copy()
        self.step_end = self.target.copy()


def _active(owner: str, name: str, state: Any, value: Any) -> bool:
    """Grab.active: True needs a cloth entity."""
    active = Flag().check(owner, name, state, value, {})
    if active and state.get("cloth") is None:
        raise ValueError(f"{owner}.active = True with {owner}.cloth = None: an active grab needs a cloth entity")
    return active


Grab._fields = {
    "cloth": Int(1, optional=True),
    "active": Custom(_active),
    "particle": Int(0),
    "target": Arr((3,), unit=" [m]"),
    "depth": Real(0.0, unit=" [m]"),
    "radius": Real(0.0, low_open=True, unit=" [m]"),
    "step_start": Arr((3,), unit=" [m]"),
    "step_end": Arr((3,), unit=" [m]"),
    "held_cloth": Int(1, optional=True),
    "held_particle": Int(-1),
}
