"""Grab: one pointer's hold on a cloth particle — which particle, and where the pointer wants it.

One Grab entity per pointer (mouse, touch, VR controller). The input code changes its data — most
simply through ``loom.systems.interaction.picking.update_grab`` — and the picking system does the rest: while
``active`` the particle gets infinite mass and is moved to ``target`` (Fuhrmann et al. 2003 §3,
"User input", eq. 11); when ``active`` turns False it gets its mass back. Toggle ``active``;
don't add and remove the component per click.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from loom.components._revision import Checked, checked_field
from loom.components._validate import Arr, Custom, Flag, Int, Real
from loom.engine.persist import persistent


def _active(owner: str, name: str, state: Any, value: Any) -> bool:
    """Grab.active: True needs a cloth entity."""
    active = Flag().check(owner, name, state, value, {})
    if active and state.get("cloth") is None:
        raise ValueError(f"{owner}.active = True with {owner}.cloth = None: an active grab needs a cloth entity")
    return active


@persistent
@dataclass(eq=False)
class Grab(Checked):
    """A pointer's grab: ``cloth`` entity, ``particle`` index, world ``target`` [m] and ray ``depth`` [m]."""

    active: bool = checked_field(Custom(_active), False)
    """True while the pointer holds the particle (needs ``cloth``)."""
    cloth: int | None = checked_field(Int(1, optional=True), None)
    """Entity of the grabbed Cloth (None when nothing was picked)."""
    particle: int = checked_field(Int(0), 0)
    """Index of the grabbed particle in that cloth, >= 0."""
    target: Any = checked_field(Arr((3,), unit=" [m]"), (0.0, 0.0, 0.0))
    """Where the particle must be at the end of the next step [m], shape (3,)."""
    depth: float = checked_field(Real(0.0, unit=" [m]"), 0.0)
    """Distance along the pointer's ray at which the particle was picked [m] >= 0; dragging keeps it."""
    radius: float = checked_field(Real(0.0, low_open=True, unit=" [m]"), 0.05)
    """Pick radius [m] > 0: particles farther than this from the ray cannot be picked."""

    step_start: np.ndarray = checked_field(Arr((3,), unit=" [m]"), default_factory=lambda: np.zeros(3), init=False,
                                           repr=False)
    """Particle position at the start of the current step [m], (3,) (picking system scratch)."""
    step_end: np.ndarray = checked_field(Arr((3,), unit=" [m]"), default_factory=lambda: np.zeros(3), init=False,
                                         repr=False)
    """Target for the end of the current step [m], (3,) (picking system scratch)."""
    held_cloth: int | None = checked_field(Int(1, optional=True), None, init=False, repr=False)
    """Cloth entity whose particle the system holds now (None: none); differs from ``cloth`` for one
    step after the pointer lets go or switches, so the system knows whose mass to give back."""
    held_particle: int = checked_field(Int(-1), -1, init=False, repr=False)
    """Particle the system holds now, or −1."""

    def __post_init__(self) -> None:
        """Check every field; the step's scratch starts at ``target``."""
        self._check_new()
        self.step_start = self.target.copy()
        self.step_end = self.target.copy()
