"""Max distance and backstop: keep each particle near where its animated reference says it belongs, and behind it.

The data is ``loom.components.MaxDistance`` (its docstring has the geometry). Once a step (PRE_STEP,
``ClothSet.FORCES``, after the game and the pin targets moved the carriers) the reference points and backstop normals
are carried into the world at the step's end, the last step's end being this step's start (``prepare_max_distance``).
In every substep, last (after ``ClothSet.SETTLE`` and the collisions' keep-out pass, before ``ClothSet.UPDATE``: after
the constraints, the collisions and the self-collisions, so nothing after it but the velocity update moves a
particle), each free particle is projected
(``limit_max_distance``), with the reference interpolated to the substep's end, fraction (k + 1)/S as the pins are:

1. max distance (NvCloth's motion constraint, a sphere of radius r_i about the reference point p_i):
   if |x − p| > r then x ← p + (x − p)·r/|x − p|  (r = 0: x ← p);
2. backstop (NvCloth's separation constraint, Unity's collisionSphereDistance): the ball of radius R about
   c = p − n·(R + d) (a capsule: about the nearest point q of the segment c ± a·L): if |x − q| < R then
   x ← q + (x − q)·R/|x − q|, for a particle that has been outside it since it was armed (``MaxDistance.armed``).

Both are position projections (Provot 1995's fix-up of positions, as every XPBD constraint is: Macklin et al.'s
positions with v = (x − x_prev)/h afterwards), so the velocity the projection removes is removed from the particle
too: a cape stopped by its backstop does not bounce off it. The backstop goes last: a particle may not pass it even
where its max distance would allow. Pinned and grabbed particles (inverse mass 0) are left to their pins.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from loom.components import Cloth, Transform
from loom.components.max_distance import MaxDistance
from loom.engine import App, Stage
from loom.systems.sets import ClothSet


def _limited(app: App) -> bool:
    """Run condition: some entity holds a MaxDistance (the systems cost nothing in a game with none)."""
    return bool(app.query(MaxDistance))


def prepare_max_distance(app: App, dt: float) -> None:
    """PRE_STEP: place every active MaxDistance's reference (and backstop normals and axis) in the world at the end of
    this step, the end of the last step being its start (the first step starts where it ends)."""
    for entity, cloth, limit in app.query(Cloth, MaxDistance):
        if not limit.active:
            limit.primed = False
            continue
        n = limit.reference.shape[0]
        if n != cloth.particle_count:
            raise ValueError(f"MaxDistance on entity {entity}: {n} reference points for a cloth of "
                             f"{cloth.particle_count} particles (one per particle)")
        backstop = limit.normal is not None
        if limit.world_end.shape[0] != n or (limit.normal_end.shape[0] != (n if backstop else 0)):
            limit.world_start, limit.world_end = np.zeros((n, 3)), np.zeros((n, 3))     # set-up: once
            m = n if backstop else 0
            limit.normal_start, limit.normal_end = np.zeros((m, 3)), np.zeros((m, 3))
            limit.armed = np.zeros(n, np.bool_)
            limit.primed = False
        if limit.primed:
            limit.world_start[:] = limit.world_end
            limit.normal_start[:] = limit.normal_end
            limit.axis_world[0] = limit.axis_world[1]
        if limit.attach_to is None:
            limit.world_end[:] = limit.reference
            if backstop:
                limit.normal_end[:] = limit.normal
            limit.axis_world[1] = limit.backstop_axis
        else:
            carrier = app.try_get(limit.attach_to, Transform)
            if carrier is None:
                raise ValueError(f"MaxDistance on entity {entity}: attach_to = {limit.attach_to} has no Transform "
                                 f"(despawned, or not yet spawned?)")
            np.matmul(limit.reference, carrier.rotation.T, out=limit.world_end)
            np.add(limit.world_end, carrier.position, out=limit.world_end)     # in place: no field assignment
            if backstop:
                np.matmul(limit.normal, carrier.rotation.T, out=limit.normal_end)
            np.matmul(carrier.rotation, limit.backstop_axis, out=limit.axis_world[1])
        if not limit.primed:
            limit.world_start[:] = limit.world_end
            limit.normal_start[:] = limit.normal_end
            limit.axis_world[0] = limit.axis_world[1]
            limit.primed = True


def limit_max_distance(app: App, h: float):
    """SUBSTEP: project each substepped cloth's free particles into their max distance and out of their backstop;
    returns the plan for the step's other substeps (the same kernel calls at each substep's fraction)."""
    rows = []
    for _, cloth, limit in app.query(Cloth, MaxDistance):
        if not limit.active or not limit.primed or not cloth.substepped:
            continue
        backstop = limit.has_backstop
        rows.append((cloth.x, cloth.inv_mass, limit.world_start, limit.world_end, limit.distance,
                     limit.normal_start if backstop else _NO_ROWS, limit.normal_end if backstop else _NO_ROWS,
                     limit.backstop_offset, float(limit.backstop_radius) if backstop else 0.0, limit.axis_world,
                     float(limit.backstop_half_length), limit.armed))

    def plan(app: App, h: float) -> None:
        alpha = (app.clock.substep_index + 1) / app.clock.substeps
        for row in rows:
            _project_call(*row, alpha)

    plan(app, h)
    return plan


_NO_ROWS = np.zeros((0, 3))


@numba.njit(cache=True)
def _project(x, inv_mass, start, end, distance, normal_start, normal_end, offset, radius, axis, half_length, armed,
             alpha):
    """Project free particles (inv_mass > 0) of x (n, 3) [m] in place: first within distance[i] [m] of their reference
    point p = (1 − alpha)·start + alpha·end [m]; then out of the backstop ball of ``radius`` R [m] about
    c = p − n·(R + offset[i]), n the normalised blend of normal_start and normal_end (a capsule when half_length
    [m] > 0: about the nearest point of c ± a·L, a the blend of axis[0] and axis[1]), only once armed[i]: a particle
    found outside it is armed (written). normal_* (0, 3) or R = 0: no backstop. alpha in (0, 1]: the substep's
    fraction of the step."""
    n = x.shape[0]
    backstop = radius > 0.0 and normal_start.shape[0] == n
    ax = (1.0 - alpha) * axis[0, 0] + alpha * axis[1, 0]
    ay = (1.0 - alpha) * axis[0, 1] + alpha * axis[1, 1]
    az = (1.0 - alpha) * axis[0, 2] + alpha * axis[1, 2]
    alen = math.sqrt(ax * ax + ay * ay + az * az)
    if alen > 0.0:
        ax, ay, az = ax / alen, ay / alen, az / alen
    for i in range(n):
        if inv_mass[i] == 0.0:
            continue
        px = (1.0 - alpha) * start[i, 0] + alpha * end[i, 0]
        py = (1.0 - alpha) * start[i, 1] + alpha * end[i, 1]
        pz = (1.0 - alpha) * start[i, 2] + alpha * end[i, 2]
        r = distance[i]
        dx, dy, dz = x[i, 0] - px, x[i, 1] - py, x[i, 2] - pz
        d2 = dx * dx + dy * dy + dz * dz
        if d2 > r * r:                                    # outside its sphere: back onto it (r = 0: onto p)
            s = 0.0 if r == 0.0 else r / math.sqrt(d2)
            x[i, 0], x[i, 1], x[i, 2] = px + dx * s, py + dy * s, pz + dz * s
        if not backstop:
            continue
        nx = (1.0 - alpha) * normal_start[i, 0] + alpha * normal_end[i, 0]
        ny = (1.0 - alpha) * normal_start[i, 1] + alpha * normal_end[i, 1]
        nz = (1.0 - alpha) * normal_start[i, 2] + alpha * normal_end[i, 2]
        nlen = math.sqrt(nx * nx + ny * ny + nz * nz)
        if nlen == 0.0:
            continue
        nx, ny, nz = nx / nlen, ny / nlen, nz / nlen
        back = radius + offset[i]
        qx, qy, qz = px - nx * back, py - ny * back, pz - nz * back
        if half_length > 0.0:                             # a capsule: the nearest point of its axis segment
            t = (x[i, 0] - qx) * ax + (x[i, 1] - qy) * ay + (x[i, 2] - qz) * az
            t = min(max(t, -half_length), half_length)
            qx, qy, qz = qx + ax * t, qy + ay * t, qz + az * t
        vx, vy, vz = x[i, 0] - qx, x[i, 1] - qy, x[i, 2] - qz
        v2 = vx * vx + vy * vy + vz * vz
        if v2 >= radius * radius:                         # outside: from now on the backstop holds it
            armed[i] = True
        elif armed[i]:                                    # inside the backstop: out to its surface
            if v2 > 1e-24:
                s = radius / math.sqrt(v2)
                x[i, 0], x[i, 1], x[i, 2] = qx + vx * s, qy + vy * s, qz + vz * s
            else:
                x[i, 0], x[i, 1], x[i, 2] = qx + nx * radius, qy + ny * radius, qz + nz * radius


_project_call = _project
"""The Python call site's name of ``_project`` (a cold launch binds it to its NumPy stand-in while a worker compiles
the kernel: ``loom.systems.collision.cold``)."""


class MaxDistancePlugin:
    """Max distance and backstop (``MaxDistance``): the world reference once a step (PRE_STEP, FORCES) and the
    projection last in every substep (after SETTLE and the collisions' last pass, before UPDATE); idle in a game with
    no MaxDistance."""

    def build(self, app: App) -> None:
        app.add_system(prepare_max_distance, Stage.PRE_STEP, in_set=ClothSet.FORCES, run_if=_limited)
        app.add_system(limit_max_distance, Stage.SUBSTEP, after=ClothSet.SETTLE, before=ClothSet.UPDATE,
                       run_if=_limited)
