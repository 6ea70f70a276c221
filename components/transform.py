"""Transform: where an entity is — position [m] and orientation — for pins, colliders and cameras."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from loom.components._revision import Checked, checked_field
from loom.components._validate import Arr, Custom, floats, real
from loom.engine.persist import persistent


def _rotation(owner: str, name: str, state: Any, value: Any) -> np.ndarray:
    """A rotation matrix (3, 3): orthonormal to 1e-6, determinant +1."""
    r = floats(owner, name, value, (3, 3))
    error = np.abs(r @ r.T - np.eye(3)).max()
    if error > 1e-6 or np.linalg.det(r) < 0.0:
        raise ValueError(f"{owner}.{name} = {r.tolist()}: must be a rotation matrix "
                         f"(orthonormal, det +1); R·Rᵀ is off identity by {error:.3g}")
    return r


@persistent
@dataclass(eq=False)
class Transform(Checked):
    """Position [m] and rotation of an entity; games move it, systems read it.

    ``rotation`` is a 3×3 orthonormal matrix with determinant +1 (local → world). For a 2D game,
    ``Transform.from_2d(x, y, angle)`` turns about +z (y up, angle counter-clockwise [rad])."""

    position: Any = checked_field(Arr((3,), unit=" [m]"), (0.0, 0.0, 0.0))
    """World position of the origin [m], shape (3,)."""
    rotation: Any = checked_field(Custom(_rotation), default_factory=lambda: np.eye(3))
    """Local-to-world rotation, shape (3, 3), orthonormal, det +1."""

    @classmethod
    def from_2d(cls, x: float, y: float, angle: float = 0.0, z: float = 0.0) -> Transform:
        """A transform at (x, y, z) [m] turned by ``angle`` [rad] about +z (counter-clockwise)."""
        a = real("Transform", "angle", angle, unit=" [rad]")
        c, s = math.cos(a), math.sin(a)
        return cls(position=(x, y, z), rotation=np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]))

    @classmethod
    def from_axis_angle(cls, position: Any, axis: Any, angle: float) -> Transform:
        """A transform at ``position`` [m] turned by ``angle`` [rad] about ``axis`` (Rodrigues' formula)."""
        a = floats("Transform", "axis", axis, (3,))
        norm = float(np.linalg.norm(a))
        if norm == 0.0:
            raise ValueError("Transform.axis = [0, 0, 0]: the rotation axis must be non-zero")
        k = a / norm
        t = real("Transform", "angle", angle, unit=" [rad]")
        cross = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
        rot = np.eye(3) + math.sin(t) * cross + (1.0 - math.cos(t)) * cross @ cross
        return cls(position=position, rotation=rot)

    def to_world(self, local: Any) -> np.ndarray:
        """Map local points (…, 3) [m] to world space: rotation · local + position."""
        return np.asarray(local, dtype=np.float64) @ self.rotation.T + self.position

    def to_local(self, world: Any) -> np.ndarray:
        """Map world points (…, 3) [m] to this transform's local space."""
        return (np.asarray(world, dtype=np.float64) - self.position) @ self.rotation
