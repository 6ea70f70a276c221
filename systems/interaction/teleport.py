"""Teleport and inertia: move a cloth rigidly without stretching it, and scale what its carrier's motion does to it.

NvCloth's two controls for fast characters (``Cloth::teleport`` and the inertia scales):

- ``teleport(app, cloth_entity, translation, rotation=None, pivot=(0, 0, 0))`` applies the rigid
  motion x ↦ R·(x − pivot) + pivot + translation to the cloth's positions and x_prev (velocities
  and forces turn with R), its Pin's world targets and this step's pin path, and the targets of
  Grabs holding it. No link changes length and no velocity is added: the cloth arrives as it
  left. Call it between steps (from game code or an INPUT system). Pins carried by a Transform
  (``Pin.attach_to``) follow their carrier: move the carrier's Transform by the same motion
  yourself (the cloth does not own it); an ``Inertia`` on the cloth is told, so the jump of its
  frame is not felt as motion.
- ``apply_inertia`` (PRE_STEP, ``ClothSet.FORCES``: after pins and carriers have moved, before the
  whole-step solvers) reads the carrier frame of each cloth with an ``Inertia`` (its ``frame`` or
  its Pin's ``attach_to``), measures the frame's velocity u = Δp/dt and angular velocity
  ω = log(R₁·R₀ᵀ)/dt over the step, and hands the free particles (inv_mass > 0) the part of the
  frame's change of velocity they are not to feel as inertia:
  Δv = (1 − linear)·(u − u_prev) + (1 − angular)·(ω − ω_prev) × (x − p₀).
  That is the world-space twin of simulating in the carrier's frame with the fictitious force
  scaled by ``linear`` (NvCloth's linear inertia). x_prev moves back by Δv·h so the position-based
  models (verlet, mass_spring's verlet) see the same velocity. The centrifugal pull of a steady
  spin is not scaled (its ω does not change). A step the guard refuses loses its Δv; the frame
  is still recorded, so the retry feels no double kick.
"""
from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

from loom.components import Cloth, Grab, Pin, Transform
from loom.components._validate import floats
from loom.components.inertia import Inertia
from loom.engine import App, Stage
from loom.systems.sets import ClothSet


WORLD_SIZE = 1e6
"""Largest |coordinate| [m] a teleport may move a cloth to: the step guard's bound (beyond it a cloth has exploded)."""


class TeleportPlugin:
    """Inertia scaling of carried cloths, once per step before the solvers."""

    def build(self, app: App) -> None:
        app.add_system(apply_inertia, Stage.PRE_STEP, in_set=ClothSet.FORCES)


# --- teleport --------------------------------------------------------------------------------------
def teleport(app: App, cloth_entity: int, translation: Any, rotation: Any = None, *,
             pivot: Any = (0.0, 0.0, 0.0)) -> None:
    """Move a cloth, its pins and grabs by x ↦ rotation·(x − pivot) + pivot + translation, rigidly.

    translation (3,) [m]; rotation a (3, 3) rotation matrix or None (no turn); pivot (3,) [m]
    the point the rotation turns about. Raises KeyError if the entity has no Cloth, ValueError
    (naming ``teleport.<field>``) for a non-finite translation or pivot, a non-rotation, or a motion that would
    put a particle beyond ±WORLD_SIZE m; the cloth is unchanged then."""
    t = floats("teleport", "translation", translation, (3,), unit=" [m]")
    c = floats("teleport", "pivot", pivot, (3,), unit=" [m]")
    try:
        r = np.eye(3) if rotation is None else Transform(rotation=rotation).rotation
    except (TypeError, ValueError) as error:
        raise type(error)(str(error).replace("Transform.rotation", "teleport.rotation", 1)) from None
    cloth = app.get(cloth_entity, Cloth)
    if cloth.particle_count:
        with np.errstate(all="ignore"):
            far = float(np.abs((cloth.x - c) @ r.T + c + t).max())
        if not far <= WORLD_SIZE:
            raise ValueError(f"teleport.translation = {t.tolist()}: would move cloth entity {cloth_entity} to "
                             f"|x| = {far:g} m, beyond the world's ±{WORLD_SIZE:g} m (pixels taken for metres?)")
    _move_points(cloth.x, r, c, t)
    _move_points(cloth.x_prev, r, c, t)
    _turn(cloth.v, r)
    _turn(cloth.force, r)
    pin = app.try_get(cloth_entity, Pin)
    if pin is not None:
        if pin.attach_to is None and pin.target is not None:
            _move_points(pin.target, r, c, t)
        _move_points(pin.step_start, r, c, t)
        _move_points(pin.step_end, r, c, t)
    for _, grab in app.query(Grab):
        if grab.held_cloth == cloth_entity or (grab.active and grab.cloth == cloth_entity):
            for points in (grab.target, grab.step_start, grab.step_end):
                _move_points(points.reshape(1, 3), r, c, t)
    inertia = app.try_get(cloth_entity, Inertia)
    if inertia is not None and inertia.primed:
        _move_points(inertia.frame_position.reshape(1, 3), r, c, t)
        inertia.frame_rotation[:] = r @ inertia.frame_rotation
        _turn(inertia.frame_velocity.reshape(1, 3), r)
        _turn(inertia.frame_spin.reshape(1, 3), r)


def _move_points(points: np.ndarray, r: np.ndarray, pivot: np.ndarray, t: np.ndarray) -> None:
    """points (k, 3) [m] ← r·(points − pivot) + pivot + t, in place."""
    points[:] = (points - pivot) @ r.T + pivot + t


def _turn(vectors: np.ndarray, r: np.ndarray) -> None:
    """vectors (k, 3) ← r·vectors, in place."""
    vectors[:] = vectors @ r.T


# --- inertia ------------------------------------------------------------------------------------------
def apply_inertia(app: App, dt: float) -> None:
    """Give free particles of each cloth with an Inertia the unfelt part of its carrier's velocity change."""
    for entity, cloth, inertia in app.query(Cloth, Inertia):
        frame = inertia.frame
        if frame is None:
            pin = app.try_get(entity, Pin)
            frame = None if pin is None else pin.attach_to
        carrier = None if frame is None else app.try_get(frame, Transform)
        if carrier is None:
            inertia.primed = False
            continue
        p1, r1 = carrier.position, carrier.rotation
        if not inertia.primed:
            inertia.frame_position[:] = p1
            inertia.frame_rotation[:] = r1
            inertia.frame_velocity[:] = 0.0
            inertia.frame_spin[:] = 0.0
            inertia.primed = True
            continue
        u = (p1 - inertia.frame_position) / dt
        w = _log_rotation(r1 @ inertia.frame_rotation.T) / dt
        du = (1.0 - inertia.linear) * (u - inertia.frame_velocity)
        dw = (1.0 - inertia.angular) * (w - inertia.frame_spin)
        if du.any() or dw.any():
            _kick(cloth.inv_mass, inertia.frame_position, du, dw, app.clock.h, cloth.x, cloth.v, cloth.x_prev)
        inertia.frame_position[:] = p1
        inertia.frame_rotation[:] = r1
        inertia.frame_velocity[:] = u
        inertia.frame_spin[:] = w


def _log_rotation(r: np.ndarray) -> np.ndarray:
    """Rotation vector (axis × angle [rad], (3,)) of the rotation matrix r (3, 3), angle in [0, π]."""
    cos = min(1.0, max(-1.0, 0.5 * (float(np.trace(r)) - 1.0)))
    angle = math.acos(cos)
    skew = 0.5 * np.array([r[2, 1] - r[1, 2], r[0, 2] - r[2, 0], r[1, 0] - r[0, 1]])   # sin(angle)·axis
    sin = math.sin(angle)
    if angle < 1e-9:
        return skew
    if sin > 1e-6:
        return skew * (angle / sin)
    column = r + np.eye(3)                              # a half turn: the axis spans R + I
    k = int(np.argmax(np.linalg.norm(column, axis=0)))
    axis = column[:, k] / np.linalg.norm(column[:, k])
    return axis * angle


# --- kernels --------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _kick(inv_mass, origin, du, dw, h, x, v, x_prev):
    """v += du + dw × (x − origin) for free particles (inv_mass > 0); x_prev −= that·h.

    inv_mass (n,) [1/kg]; origin (3,) [m]; du (3,) [m/s]; dw (3,) [rad/s]; h [s] the substep.
    Writes v (n, 3) [m/s] and x_prev (n, 3) [m]."""
    for p in range(x.shape[0]):
        if inv_mass[p] <= 0.0:
            continue
        rx = x[p, 0] - origin[0]
        ry = x[p, 1] - origin[1]
        rz = x[p, 2] - origin[2]
        k0 = du[0] + dw[1] * rz - dw[2] * ry
        k1 = du[1] + dw[2] * rx - dw[0] * rz
        k2 = du[2] + dw[0] * ry - dw[1] * rx
        v[p, 0] += k0
        v[p, 1] += k1
        v[p, 2] += k2
        x_prev[p, 0] -= k0 * h
        x_prev[p, 1] -= k1 * h
        x_prev[p, 2] -= k2 * h
