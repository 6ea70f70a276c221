"""loom-vortex: an example Loom plugin package — a vortex force field and a sewing constraint.

Installed, it offers two plugins through the ``loom.plugins`` entry-point group, so a plain
``App(plugins="auto")`` picks them up:

- ``VortexPlugin``: ``Vortex`` components (a swirl of air around an axis that also draws cloth
  in) add forces to every cloth in the PRE_STEP forces set, like Loom's own wind.
- ``SewingPlugin``: a ``Seam`` component on a cloth entity pulls pairs of its particles together
  (Blender's sewing springs) as XPBD constraints of rest length 0, right after Loom's constraints.

It uses only Loom's public API: components, ``App``, ``Stage`` and the ``ClothSet`` handles.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np

from loom.components import Cloth
from loom.engine import App, Stage
from loom.systems import ClothSet

__all__ = ["Seam", "SewingPlugin", "Vortex", "VortexPlugin", "sew", "swirl"]


# --- components -----------------------------------------------------------------------------------
@dataclass(eq=False)
class Vortex:
    """A vortex of air around the line through ``center`` along ``axis``.

    Each particle within ``radius`` [m] of the axis feels ``strength`` [N/kg] tangentially (the swirl)
    and ``pull`` [N/kg] toward the axis, both fading linearly to 0 at the radius."""

    center: Any = (0.0, 0.0, 0.0)
    axis: Any = (0.0, 1.0, 0.0)
    strength: float = 5.0
    pull: float = 1.0
    radius: float = 1.0

    def __post_init__(self) -> None:
        self.center = np.asarray(self.center, dtype=np.float64)
        axis = np.asarray(self.axis, dtype=np.float64)
        if self.center.shape != (3,) or not np.isfinite(self.center).all():
            raise ValueError(f"Vortex.center = {self.center!r}: expected 3 finite numbers [m]")
        norm = float(np.linalg.norm(axis)) if axis.shape == (3,) and np.isfinite(axis).all() else 0.0
        if norm == 0.0:
            raise ValueError(f"Vortex.axis = {self.axis!r}: expected a non-zero finite 3-vector")
        self.axis = axis / norm
        for name in ("strength", "pull"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"Vortex.{name} = {getattr(self, name)!r}: must be finite [N/kg]")
        if not (math.isfinite(self.radius) and self.radius > 0.0):
            raise ValueError(f"Vortex.radius = {self.radius!r}: must be > 0 [m]")


@dataclass(eq=False)
class Seam:
    """Pairs of particles of the cloth on the same entity to sew together, shape (s, 2) int.

    ``compliance`` [m/N]: 0 closes the seam hard in a few steps, larger values close it softly."""

    pairs: Any
    compliance: float = 1e-4
    lam: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        pairs = np.asarray(self.pairs)
        if pairs.ndim != 2 or pairs.shape[1] != 2 or pairs.shape[0] == 0 or pairs.dtype.kind not in "iu":
            raise ValueError(f"Seam.pairs: shape {pairs.shape} dtype {pairs.dtype}, expected (s, 2) integers")
        if (pairs < 0).any() or (pairs[:, 0] == pairs[:, 1]).any():
            raise ValueError("Seam.pairs: indices must be >= 0 and join two different particles")
        self.pairs = np.ascontiguousarray(pairs, dtype=np.int32)
        if not (math.isfinite(self.compliance) and self.compliance >= 0.0):
            raise ValueError(f"Seam.compliance = {self.compliance!r}: must be >= 0 [m/N]")
        self.lam = np.zeros(self.pairs.shape[0])


# --- systems --------------------------------------------------------------------------------------
def swirl(app: App, dt: float) -> None:
    """Add every Vortex's force to every cloth's external force accumulator (PRE_STEP, forces set)."""
    vortices = [v for _, v in app.query(Vortex)]
    for _, cloth in app.query(Cloth):
        for v in vortices:
            _vortex_forces(v.center, v.axis, v.strength, v.pull, v.radius, cloth.mass, cloth.x, cloth.force)


def sew(app: App, h: float) -> None:
    """Project every Seam once per substep, after Loom's constraints (XPBD, rest length 0)."""
    for _, cloth, seam in app.query(Cloth, Seam):
        if seam.pairs.max() >= cloth.particle_count:
            raise ValueError(f"Seam.pairs: index {int(seam.pairs.max())} out of range for a cloth of "
                             f"{cloth.particle_count} particles")
        seam.lam[:] = 0.0
        _sew(seam.pairs, seam.compliance / (h * h), cloth.inv_mass, cloth.x, seam.lam)


@numba.njit(cache=True)
def _vortex_forces(center, axis, strength, pull, radius, mass, x, force):
    """Tangential swirl plus pull toward the axis, linear falloff to the radius [N]."""
    for p in range(x.shape[0]):
        rx = x[p, 0] - center[0]
        ry = x[p, 1] - center[1]
        rz = x[p, 2] - center[2]
        along = rx * axis[0] + ry * axis[1] + rz * axis[2]
        rx -= along * axis[0]
        ry -= along * axis[1]
        rz -= along * axis[2]
        d = math.sqrt(rx * rx + ry * ry + rz * rz)
        if d >= radius or d < 1e-9:
            continue
        fade = 1.0 - d / radius
        tx = axis[1] * rz - axis[2] * ry                    # axis × r: the swirl direction
        ty = axis[2] * rx - axis[0] * rz
        tz = axis[0] * ry - axis[1] * rx
        s = mass[p] * fade / d
        force[p, 0] += s * (strength * tx - pull * rx)
        force[p, 1] += s * (strength * ty - pull * ry)
        force[p, 2] += s * (strength * tz - pull * rz)


@numba.njit(cache=True)
def _sew(pairs, alpha, inv_mass, x, lam):
    """XPBD distance constraints of rest length 0 (C = |x_a − x_b|), compliance α̃ = α/h²."""
    for k in range(pairs.shape[0]):
        a, b = pairs[k, 0], pairs[k, 1]
        w = inv_mass[a] + inv_mass[b]
        dx = x[a, 0] - x[b, 0]
        dy = x[a, 1] - x[b, 1]
        dz = x[a, 2] - x[b, 2]
        length = math.sqrt(dx * dx + dy * dy + dz * dz)
        if w == 0.0 or length < 1e-12:
            continue
        dlam = (-length - alpha * lam[k]) / (w + alpha)
        lam[k] += dlam
        s = dlam / length
        x[a, 0] += inv_mass[a] * s * dx
        x[a, 1] += inv_mass[a] * s * dy
        x[a, 2] += inv_mass[a] * s * dz
        x[b, 0] -= inv_mass[b] * s * dx
        x[b, 1] -= inv_mass[b] * s * dy
        x[b, 2] -= inv_mass[b] * s * dz


# --- plugins: tables of contents ----------------------------------------------------------------
class VortexPlugin:
    """Vortex force fields acting on every cloth."""

    def build(self, app: App) -> None:
        app.add_system(swirl, Stage.PRE_STEP, in_set=ClothSet.FORCES)


class SewingPlugin:
    """Seams sewn after the core constraints, before collisions."""

    def build(self, app: App) -> None:
        app.add_system(sew, Stage.SUBSTEP, after=ClothSet.CONSTRAIN, before=ClothSet.COLLIDE)
