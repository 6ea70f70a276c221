"""Inertia: how much of its carrier's acceleration a pinned cloth feels (NvCloth's inertia scales).

A cape pinned to a hero's shoulders (``Pin(attach_to=hero)``) is dragged by the pins alone; when
the hero teleports, dashes or spins, the free particles lag behind and the cape whips. Put an
``Inertia`` on the cloth's entity to scale that: the fraction ``linear`` of the carrier frame's
linear acceleration and ``angular`` of its angular acceleration act on the free particles; the
rest (1 − fraction) of the frame's change of velocity is handed to them directly, so they move
with the frame as if the cloth were simulated in the carrier's space::

    app.spawn(cape, Pin(index=shoulders, attach_to=hero, offset=offsets), Inertia(linear=0.3, angular=0.3))

1 (default) is physical; 0 makes a cape on a teleporting or spinning hero stay calm (it still
swings under gravity, wind and collisions); values in between soften the carrier's kicks.
``systems/interaction/teleport.py`` applies it once per step.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from loom.components._revision import Checked, checked_field
from loom.components._validate import Arr, Flag, Int, Real
from loom.engine.persist import persistent


@persistent
@dataclass(eq=False)
class Inertia(Checked):
    """Fractions [-] of the carrier's linear and angular acceleration the cloth's free particles feel."""

    linear: float = checked_field(Real(0.0, 1.0, unit=" [-] (a fraction in [0, 1])"), 1.0)
    """Fraction of the carrier's linear acceleration felt [-] in [0, 1]: 1 physical, 0 none."""
    angular: float = checked_field(Real(0.0, 1.0, unit=" [-] (a fraction in [0, 1])"), 1.0)
    """Fraction of the carrier's angular acceleration felt [-] in [0, 1]: 1 physical, 0 none. (The
    centrifugal pull of a steady spin is not scaled: the pins carry the cloth round.)"""
    frame: int | None = checked_field(Int(1, optional=True), None)
    """Entity whose Transform is the carrier frame; None: the ``attach_to`` of the cloth's Pin."""

    frame_position: np.ndarray = checked_field(Arr((3,), unit=" [m]"), default_factory=lambda: np.zeros(3),
                                               init=False, repr=False)
    """Carrier position at the last step [m], (3,) (inertia system scratch)."""
    frame_rotation: np.ndarray = checked_field(Arr((3, 3)), default_factory=lambda: np.eye(3), init=False,
                                               repr=False)
    """Carrier rotation at the last step, (3, 3) (inertia system scratch)."""
    frame_velocity: np.ndarray = checked_field(Arr((3,), unit=" [m/s]"), default_factory=lambda: np.zeros(3),
                                               init=False, repr=False)
    """Carrier velocity over the last step [m/s], (3,) (inertia system scratch)."""
    frame_spin: np.ndarray = checked_field(Arr((3,), unit=" [rad/s]"), default_factory=lambda: np.zeros(3),
                                           init=False, repr=False)
    """Carrier angular velocity over the last step [rad/s], (3,) (inertia system scratch)."""
    primed: bool = checked_field(Flag(), False, init=False, repr=False)
    """False until the system has seen the carrier once (and after a teleport of the frame)."""
