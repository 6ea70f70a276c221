"""Environment collision: push predicted cloth positions out of colliders, with Coulomb friction.

Once per step the colliders (``Collider`` + ``Transform``) are packed into flat arrays; each substep,
after the constraints, every free particle closer than ``thickness`` to a surface is set back along
the surface normal n by the penetration depth p (Fuhrmann 2003 eq. 18: r_n = n·(t − d)). Its
tangential motion over the substep, d_t = d − n(d·n) with d = x − x_prev (eq. 19), is then cut by
friction (eqs. 20–21, r_t = −c_f·d_t) with c_f from Coulomb's law in position form: a contact whose
slip is within μ·p sticks (c_f = 1, static), else it slides with c_f = μ·p/|d_t| (kinetic).
μ = √(μ_cloth·μ_collider).
"""
from __future__ import annotations

import math

import numba
import numpy as np

from components import Cloth, Collider, ColliderSet, Plane, Sphere, Transform
from engine import App


def gather_colliders(app: App, dt: float) -> None:
    """Pack every Collider with its Transform into the ColliderSet resource for this step."""
    packed = app.insert_resource(ColliderSet(), replace=False)
    spheres, planes = [], []
    for entity, collider, transform in app.query(Collider, Transform):
        shape = collider.shape
        if isinstance(shape, Sphere):
            spheres.append((*transform.position, shape.radius + collider.thickness, collider.friction, 0.0))
        elif isinstance(shape, Plane):
            planes.append((*transform.position, *(transform.rotation @ shape.normal), collider.thickness,
                           collider.friction))
    packed.spheres = np.array(spheres, np.float64).reshape(-1, 6)
    packed.planes = np.array(planes, np.float64).reshape(-1, 8)


def collide_environment(app: App, h: float) -> None:
    """Project each cloth's particles out of every collider and apply contact friction."""
    packed = app.resources.get(ColliderSet)
    if packed is None or (packed.spheres.shape[0] == 0 and packed.planes.shape[0] == 0):
        return
    for _, cloth in app.query(Cloth):
        if not cloth.substepped:
            continue
        m = cloth.material
        _collide(packed.spheres, packed.planes, m.thickness, m.friction, cloth.inv_mass, cloth.x_prev, cloth.x)


# --- kernels --------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _collide(spheres, planes, thickness, friction, inv_mass, x_prev, x):
    """Resolve sphere and plane contacts of every free particle (Fuhrmann 2003 eqs. 18–21).

    spheres (s, 6), planes (p, 8) as in ColliderSet; thickness [m] and friction [-] of the cloth;
    inv_mass (n,) [1/kg]; x_prev (n, 3) [m] start of substep. Writes x (n, 3) [m]."""
    for p in range(x.shape[0]):
        if inv_mass[p] == 0.0:
            continue
        for s in range(spheres.shape[0]):
            dx = x[p, 0] - spheres[s, 0]
            dy = x[p, 1] - spheres[s, 1]
            dz = x[p, 2] - spheres[s, 2]
            reach = spheres[s, 3] + thickness
            dist = math.sqrt(dx * dx + dy * dy + dz * dz)
            if dist >= reach:
                continue
            if dist < 1e-12:                     # at the centre: leave upwards
                nx, ny, nz = 0.0, 1.0, 0.0
            else:
                nx, ny, nz = dx / dist, dy / dist, dz / dist
            _contact(p, nx, ny, nz, reach - dist, math.sqrt(friction * spheres[s, 4]), x_prev, x)
        for q in range(planes.shape[0]):
            nx, ny, nz = planes[q, 3], planes[q, 4], planes[q, 5]
            side = ((x[p, 0] - planes[q, 0]) * nx + (x[p, 1] - planes[q, 1]) * ny
                    + (x[p, 2] - planes[q, 2]) * nz)
            reach = planes[q, 6] + thickness
            if side >= reach:
                continue
            _contact(p, nx, ny, nz, reach - side, math.sqrt(friction * planes[q, 7]), x_prev, x)


@numba.njit(cache=True)
def _contact(p, nx, ny, nz, depth, mu, x_prev, x):
    """Push particle p out by ``depth`` [m] along unit n (eq. 18), then Coulomb friction (eqs. 19–21)."""
    x[p, 0] += nx * depth
    x[p, 1] += ny * depth
    x[p, 2] += nz * depth
    mx = x[p, 0] - x_prev[p, 0]
    my = x[p, 1] - x_prev[p, 1]
    mz = x[p, 2] - x_prev[p, 2]
    along = mx * nx + my * ny + mz * nz
    tx = mx - nx * along
    ty = my - ny * along
    tz = mz - nz * along
    slip = math.sqrt(tx * tx + ty * ty + tz * tz)
    if slip < 1e-15:
        return
    cf = 1.0 if slip <= mu * depth else mu * depth / slip     # static: stick; kinetic: slide less
    x[p, 0] -= cf * tx
    x[p, 1] -= cf * ty
    x[p, 2] -= cf * tz
