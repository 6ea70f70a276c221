"""RigidBody2D: a pymunk body whose shapes the cloth collides with — and pushes back on.

A 2D game keeps its physics in pymunk (Space / Body / Shape). Wrap a body in RigidBody2D and each
of its shapes becomes a Loom collider extruded along z: a Circle becomes a capsule along z, a
Segment a thin box, a Poly a prism, each ``depth`` metres deep around z = ``z``. With ``two_way``,
the momentum the cloth's contacts give a shape goes back to a dynamic body within the same step,
substep by substep, and the step's result (velocities, and the small displacement the impulses made)
is written to the pymunk body after each Loom step — so a ball bounces on a cloth trampoline, never
faster than it landed, and a cape tugs lightly at its hero (systems/coupling/pymunk_bridge.py). Insert
a ``Space2D`` resource to have Loom step the space at the fixed step.

Units. With a ``PixelSpace`` resource in the App (pixel mode) and ``scale`` left at None, the body is read in
the game's pixels: positions through ``PixelSpace.to_metres`` (y flipped when the game's y is down, so a body's
angle turns the other way), lengths divided by pixels per metre, and the impulses cloth gives back converted
to pixels with y flipped again. Without a PixelSpace, or with an explicit ``scale``, pymunk units are
``scale`` per metre (1 when None) with y up, as in a pymunk space with gravity (0, −9.81)::

    pixel mode (PixelSpace, scale None)        pymunk px, y down  ──▶  ((px − ox)/ppm, (oy − py)/ppm, z) [m]
    explicit scale (or no PixelSpace: 1.0)     pymunk units, y up ──▶  (x / scale, y / scale, z) [m]

The bridge keeps a ``Transform`` on the RigidBody2D's own entity (added when it first sees the body if the
entity has none) at the body's position and rotation in metres, so pins ride on it:
``loom.Pin(index, attach_to=body_entity)`` or ``loom.cape(app, body_entity)``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pymunk

from loom.components._revision import Checked, checked_field
from loom.components._validate import Arr, Flag, Instance, Real
from loom.engine.persist import persistent


@persistent
@dataclass(eq=False)
class RigidBody2D(Checked):
    """A pymunk Body seen by the cloth; its shapes are synchronised as colliders every step."""

    body: Any = checked_field(Instance(pymunk.Body, "a pymunk.Body"))
    """The pymunk.Body (dynamic, kinematic or static) whose shapes collide with cloth."""
    depth: float = checked_field(Real(0.0, low_open=True, unit=" [m]"), 1.0)
    """Extent of the extruded shapes along z [m]."""
    z: float = checked_field(Real(unit=" [m]"), 0.0)
    """Centre of the extrusion along z [m]."""
    scale: float | None = checked_field(Real(0.0, low_open=True, unit=" [units/m]", optional=True), None)
    """pymunk length units per metre (> 0); None: the App's PixelSpace (pixels, y down) if it has one, else 1.0."""
    two_way: bool = checked_field(Flag(), True)
    """The cloth's contact impulses move the body (dynamic bodies only); False: cloth only reacts."""
    friction: float | None = checked_field(Real(0.0, unit=" [-]", optional=True), None)
    """Friction of the colliders [-]; None: each pymunk shape's own friction."""
    thickness: float = checked_field(Real(0.0, unit=" [m]"), 0.0)
    """Extra contact margin of the colliders [m] (a Poly's or Segment's radius is added to it)."""
    shapes: list[Any] = checked_field(Instance(list, "a list of the body's pymunk shapes"), default_factory=list,
                                      init=False, repr=False)
    """The body's pymunk shapes, in the order fixed when the bridge first saw them."""
    shape_entities: list[int] = checked_field(Instance(list, "a list of collider entities"), default_factory=list,
                                              init=False, repr=False)
    """Collider entities made for those shapes, in the same order (filled by the bridge on first sight)."""
    cloth_force: np.ndarray = checked_field(Arr((3,), unit=" [N, N, N·m]"), default_factory=lambda: np.zeros(3),
                                            init=False, repr=False)
    """Force and torque the cloth's contacts exerted on the body in the last substep: (fx, fy) [N] and torque
    [N·m], in Loom's frame (SI, y up, counter-clockwise; two-way dynamic bodies only, else zeros). The bridge
    moves the body's colliders in the next substep as if this much were already applied (backward Euler:
    systems/coupling/pymunk_bridge.py says why the cloth then gives no energy back that it was not given)."""
    cloth_shift: np.ndarray = checked_field(Arr((3,), unit=" [m, m, rad]"), default_factory=lambda: np.zeros(3),
                                            init=False, repr=False)
    """Displacement (dx, dy) [m] and turn [rad] the cloth's impulses gave the body within the last step (Loom's
    frame), not yet in the pymunk body: the bridge adds it at the start of the next step, before pins and
    colliders read the body, so cloth pinned to the body stays exactly on it (its velocities are updated at once)."""


@persistent
@dataclass(eq=False)
class Space2D(Checked):
    """App resource: the game's pymunk.Space, stepped by Loom once per fixed step when ``step`` is True."""

    space: Any = checked_field(Instance(pymunk.Space, "a pymunk.Space"))
    """The game's pymunk.Space."""
    step: bool = checked_field(Flag(), True)
    """Step the space at the App's fixed dt (before the cloth; the last step's cloth impulses are already in the
    bodies' velocities); False: the game steps it."""
