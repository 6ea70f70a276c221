"""Collider: a rigid shape the cloth cannot enter, placed by its entity's Transform.

Vocabulary after pymunk: a ``Collider`` holds one shape (``Sphere``, ``Plane``) plus the contact
parameters — ``thickness`` [m], the extra margin cloth keeps from its surface, and ``friction``
[-], mixed with the cloth's own as √(μ_cloth·μ_collider). The shape is in the entity's local
frame: a sphere is centred on the Transform's position; a plane passes through it with its normal
turned by the Transform's rotation. Move the Transform to move the collider.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from components._validate import floats, real


@dataclass(eq=False)
class Sphere:
    """A ball of ``radius`` [m] centred on the Transform's position."""

    radius: float

    def __post_init__(self) -> None:
        self.radius = real("Sphere", "radius", self.radius, low=0.0, low_open=True, unit=" [m]")


@dataclass(eq=False)
class Plane:
    """An infinite plane through the Transform's position; cloth stays on the side ``normal`` points to."""

    normal: Any = (0.0, 1.0, 0.0)
    """Local normal (3,), normalised on construction; default +y: a floor."""

    def __post_init__(self) -> None:
        n = floats("Plane", "normal", self.normal, (3,))
        norm = float(np.linalg.norm(n))
        if norm < 1e-12:
            raise ValueError(f"Plane.normal = {n.tolist()}: must be a non-zero vector")
        self.normal = n / norm


SHAPES = (Sphere, Plane)


@dataclass(eq=False)
class Collider:
    """A shape cloth collides with, with its contact margin and friction; needs a Transform on the entity."""

    shape: Any
    """One of ``Sphere``, ``Plane``."""
    thickness: float = 0.0
    """Extra margin [m] kept between cloth and surface, added to the cloth's own thickness."""
    friction: float = 0.5
    """Coulomb friction coefficient [-]: 0 ice, 0.3 polished wood, 0.6 cloth on wood, 1 rubber."""

    def __post_init__(self) -> None:
        if not isinstance(self.shape, SHAPES):
            raise TypeError(f"Collider.shape = {self.shape!r}: expected one of "
                            f"{', '.join(s.__name__ for s in SHAPES)}")
        self.thickness = real("Collider", "thickness", self.thickness, low=0.0, unit=" [m]")
        self.friction = real("Collider", "friction", self.friction, low=0.0, unit=" [-]")


class ColliderSet:
    """App resource: every Collider packed into flat arrays once per step, for the kernels of any model.

    spheres (s, 6): centre (3) [m], radius + collider thickness [m], friction [-], unused (0);
    planes (p, 8): point (3) [m], unit world normal (3), collider thickness [m], friction [-]."""

    def __init__(self) -> None:
        self.spheres = np.zeros((0, 6))
        self.planes = np.zeros((0, 8))
