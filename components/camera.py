"""Camera: where the viewer is — an orbit around a target, with a perspective or orthographic lens.

Orbit parameters are what a player changes (drag to orbit, right-drag to pan, wheel to zoom);
the view and projection matrices are derived from them on demand. Matrices are row-major numpy
(4, 4) arrays acting on column vectors (clip = projection @ view @ [x, y, z, 1]); transpose them
for OpenGL uniforms. y is up; yaw 0 looks along −z (the viewer sits on +z), pitch > 0 looks down::

        y
        |   camera at target + distance·(sin yaw·cos pitch, sin pitch, cos yaw·cos pitch)
        |
        +------ x
       /
      z (toward the viewer at yaw 0)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from loom.components._revision import Checked, checked_field
from loom.components._validate import Arr, Custom, Flag, Real, real
from loom.engine.persist import persistent


def _near(owner: str, name: str, state: Any, value: Any) -> float:
    """Camera.near: > 0 and below far [m]."""
    near = real(owner, name, value, low=0.0, low_open=True, unit=" [m]")
    far = state.get("far")
    if isinstance(far, float) and near >= far:
        raise ValueError(f"{owner}.{name} = {near!r}: must be < far = {far!r} [m]")
    return near


@persistent
@dataclass(eq=False)
class Camera(Checked):
    """An orbit camera: ``target`` [m], ``distance`` [m], ``yaw`` and ``pitch`` [rad], lens ``fov_y`` [rad]."""

    target: Any = checked_field(Arr((3,), unit=" [m]"), (0.0, 0.5, 0.0))
    """Point looked at [m], shape (3,)."""
    distance: float = checked_field(Real(0.0, low_open=True, unit=" [m]"), 3.0)
    """Distance from target to eye [m], > 0."""
    yaw: float = checked_field(Real(unit=" [rad]"), 0.0)
    """Turn about +y [rad]; 0 puts the eye on the +z side."""
    pitch: float = checked_field(Real(-1.5607, 1.5607, unit=" [rad] (|pitch| < π/2)"), 0.25)
    """Elevation [rad] in (−π/2, π/2); > 0 looks down on the target."""
    fov_y: float = checked_field(Real(1e-3, 3.1, unit=" [rad]"), math.radians(45.0))
    """Vertical field of view [rad] of the perspective lens."""
    near: float = checked_field(Custom(_near), 0.05)
    """Near clip distance [m], > 0 and < far."""
    far: float = checked_field(Real(0.0, low_open=True, unit=" [m] (> near)", above="near"), 100.0)
    """Far clip distance [m], > near."""
    orthographic: bool = checked_field(Flag(), False)
    """True: parallel projection showing ``ortho_height`` metres vertically (2D games, side views)."""
    ortho_height: float = checked_field(Real(0.0, low_open=True, unit=" [m]"), 2.0)
    """Visible height [m] of the orthographic lens."""

    @property
    def eye(self) -> np.ndarray:
        """Eye position [m], (3,)."""
        cp = math.cos(self.pitch)
        offset = np.array([math.sin(self.yaw) * cp, math.sin(self.pitch), math.cos(self.yaw) * cp])
        return self.target + self.distance * offset

    def view(self) -> np.ndarray:
        """World → eye matrix (4, 4): the eye at the origin looking down −z, y up."""
        forward = self.target - self.eye
        forward /= np.linalg.norm(forward)
        right = np.cross(forward, (0.0, 1.0, 0.0))
        right /= np.linalg.norm(right)
        up = np.cross(right, forward)
        m = np.eye(4)
        m[0, :3], m[1, :3], m[2, :3] = right, up, -forward
        m[:3, 3] = -m[:3, :3] @ self.eye
        return m

    def projection(self, aspect: float) -> np.ndarray:
        """Eye → clip matrix (4, 4) for a viewport of width/height ``aspect`` (OpenGL conventions)."""
        n, f = self.near, self.far
        m = np.zeros((4, 4))
        if self.orthographic:
            top = self.ortho_height / 2
            m[0, 0] = 1.0 / (top * aspect)
            m[1, 1] = 1.0 / top
            m[2, 2] = -2.0 / (f - n)
            m[2, 3] = -(f + n) / (f - n)
            m[3, 3] = 1.0
        else:
            t = 1.0 / math.tan(self.fov_y / 2)
            m[0, 0] = t / aspect
            m[1, 1] = t
            m[2, 2] = (f + n) / (n - f)
            m[2, 3] = 2 * f * n / (n - f)
            m[3, 2] = -1.0
        return m

    def project(self, points: Any, width: int, height: int) -> np.ndarray:
        """Pixel coordinates (x right, y down) and depth in [0, 1] of world points (…, 3) → (…, 3)."""
        p = np.asarray(points, dtype=np.float64)
        h = np.concatenate([p, np.ones(p.shape[:-1] + (1,))], axis=-1)
        clip = h @ (self.projection(width / height) @ self.view()).T
        ndc = clip[..., :3] / clip[..., 3:4]
        return np.stack([(ndc[..., 0] + 1) * 0.5 * width, (1 - ndc[..., 1]) * 0.5 * height,
                         (ndc[..., 2] + 1) * 0.5], axis=-1)

    def ray(self, px: float, py: float, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
        """World-space ray (origin [m], unit direction) through pixel (px, py) (x right, y down)."""
        inverse = np.linalg.inv(self.projection(width / height) @ self.view())
        ndc_x = 2 * px / width - 1
        ndc_y = 1 - 2 * py / height
        near = inverse @ np.array([ndc_x, ndc_y, -1.0, 1.0])
        far = inverse @ np.array([ndc_x, ndc_y, 1.0, 1.0])
        near, far = near[:3] / near[3], far[:3] / far[3]
        direction = far - near
        return near, direction / np.linalg.norm(direction)
