"""Collider geometry shared by every model's contact code: poses and signed distances of shapes.

Not a system: kernels only, used by the environment collision system and by solvers that handle
contacts themselves (the implicit model), so neither imports the other. Shapes are in the
collider's local frame, packed as in ``loom.components.ColliderSet``.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from loom.components.collider import BOX, CAPSULE, CYLINDER, PLANE, PRISM, SPHERE
from loom.engine.geometry import closest_point_on_triangle


class Shapes(NamedTuple):
    """The colliders' shapes as ``sdf`` reads them (k colliders, as packed in ``ColliderSet``)."""

    kind: np.ndarray
    """Shape kind, (k,) int32: PLANE … MESH (loom.components.collider)."""
    params: np.ndarray
    """Shape numbers, (k, 4) [m]: as ``basic_sdf``'s a, b, c; prisms: half depth, first polygon row, row count."""
    polygons: np.ndarray
    """Every prism's outline, (P, 2) [m], counter-clockwise in the xy plane."""
    mesh: np.ndarray
    """Each collider's row of minfo, (k,) int32 (−1: not a mesh)."""
    mv: np.ndarray
    """Every mesh's vertices, (V, 3) [m] (``ColliderSet.mesh_arrays``, like the next four)."""
    mt: np.ndarray
    """Every mesh's triangles, (T, 3) int32 rows of mv."""
    minfo: np.ndarray
    """Per mesh, (M, 10): grid origin (3) [m], cell size [m], grid shape (3), first triangle, first mcell
    row, first mcelltri row."""
    mcell: np.ndarray
    """Each grid cell's first row of mcelltri (a cell's triangles end at the next cell's first), int64."""
    mcelltri: np.ndarray
    """Triangles listed per grid cell (mesh-local rows of mt), int32."""


@numba.njit(cache=True)
def pose(pose0, pose1, c, alpha, rot, pos):
    """Write collider c's rotation (3, 3) and position (3,) at fraction alpha of the step (nlerp, lerp)."""
    w = (1.0 - alpha) * pose0[c, 0] + alpha * pose1[c, 0]
    x = (1.0 - alpha) * pose0[c, 1] + alpha * pose1[c, 1]
    y = (1.0 - alpha) * pose0[c, 2] + alpha * pose1[c, 2]
    z = (1.0 - alpha) * pose0[c, 3] + alpha * pose1[c, 3]
    n = math.sqrt(w * w + x * x + y * y + z * z)
    w, x, y, z = w / n, x / n, y / n, z / n
    rot[0, 0] = 1 - 2 * (y * y + z * z)
    rot[0, 1] = 2 * (x * y - w * z)
    rot[0, 2] = 2 * (x * z + w * y)
    rot[1, 0] = 2 * (x * y + w * z)
    rot[1, 1] = 1 - 2 * (x * x + z * z)
    rot[1, 2] = 2 * (y * z - w * x)
    rot[2, 0] = 2 * (x * z - w * y)
    rot[2, 1] = 2 * (y * z + w * x)
    rot[2, 2] = 1 - 2 * (x * x + y * y)
    for a in range(3):
        pos[a] = (1.0 - alpha) * pose0[c, 4 + a] + alpha * pose1[c, 4 + a]


@numba.njit(cache=True)
def is_basic(k):
    """True for the shapes ``basic_sdf`` handles from three size numbers (all but prisms and meshes)."""
    return k == PLANE or k == SPHERE or k == CAPSULE or k == BOX or k == CYLINDER


@numba.njit(cache=True)
def basic_sdf(k, a, b, c, lx, ly, lz):
    """Signed distance [m] and unit outward normal (d, nx, ny, nz) of local point l for the shapes
    given by three numbers: plane (a, b, c) its normal; sphere a radius; capsule and cylinder a
    radius, b half length; box (a, b, c) half extents. Scalars only, so it inlines into ``sdf``'s callers."""
    if k == PLANE:
        return lx * a + ly * b + lz * c, a, b, c
    if k == SPHERE or k == CAPSULE:
        cy = min(max(ly, -b), b) if k == CAPSULE else 0.0
        dx, dy, dz = lx, ly - cy, lz
        d = math.sqrt(dx * dx + dy * dy + dz * dz)
        if d < 1e-12:
            return d - a, 0.0, 1.0, 0.0
        return d - a, dx / d, dy / d, dz / d
    if k == BOX:
        qx = abs(lx) - a
        qy = abs(ly) - b
        qz = abs(lz) - c
        if qx <= 0.0 and qy <= 0.0 and qz <= 0.0:            # inside: leave by the nearest face
            if qx >= qy and qx >= qz:
                return qx, math.copysign(1.0, lx), 0.0, 0.0
            if qy >= qz:
                return qy, 0.0, math.copysign(1.0, ly), 0.0
            return qz, 0.0, 0.0, math.copysign(1.0, lz)
        ox = math.copysign(max(qx, 0.0), lx)
        oy = math.copysign(max(qy, 0.0), ly)
        oz = math.copysign(max(qz, 0.0), lz)
        d = math.sqrt(ox * ox + oy * oy + oz * oz)
        return d, ox / d, oy / d, oz / d
    # cylinder
    radial = math.sqrt(lx * lx + lz * lz)
    dr = radial - a
    dy = abs(ly) - b
    if dr <= 0.0 and dy <= 0.0:                      # inside: leave through the rim or a flat end
        if dr >= dy and radial > 1e-12:
            return dr, lx / radial, 0.0, lz / radial
        return dy, 0.0, math.copysign(1.0, ly), 0.0
    if dy <= 0.0:                                    # beside the rim
        return dr, lx / radial, 0.0, lz / radial
    if dr <= 0.0:                                    # above or below a flat end
        return dy, 0.0, math.copysign(1.0, ly), 0.0
    d = math.sqrt(dr * dr + dy * dy)                 # beyond the edge of an end
    return d, lx / radial * dr / d, math.copysign(dy, ly) / d, lz / radial * dr / d


@numba.njit(cache=True)
def sdf(shapes, c, lx, ly, lz, out):
    """Signed distance [m] from local point l to collider c's surface (negative inside) and the unit
    outward normal: out = (distance, nx, ny, nz). The one signed-distance dispatch of every contact
    kernel. ``shapes``: a ``Shapes``, or any named tuple with its fields (the implicit model's Colliders).
    Meshes: distance to the nearest triangle in the point's grid cell, signed by that triangle's front
    side (+inf when no triangle is near; the normal is then left as it was).

    A per-particle loop over basic shapes calls ``basic_sdf`` on scalars it read once, and this only for
    prisms and meshes: any call that takes arrays, inlined or not, costs numba's reference counting of
    each array, many times the cost of the distance itself (docs/performance.md, "Moved from docstrings")."""
    k = shapes.kind[c]
    if is_basic(k):
        out[0], out[1], out[2], out[3] = basic_sdf(k, shapes.params[c, 0], shapes.params[c, 1], shapes.params[c, 2],
                                                   lx, ly, lz)
    elif k == PRISM:
        _prism_sdf(shapes.params, c, shapes.polygons, lx, ly, lz, out)
    else:
        _mesh_sdf(shapes.mesh[c], shapes.mv, shapes.mt, shapes.minfo, shapes.mcell, shapes.mcelltri, lx, ly, lz,
                  out)


@numba.njit(cache=True)
def basic_only_sdf(shapes, c, lx, ly, lz, out):
    """``sdf`` for collider sets with basic shapes only (no prism, no mesh): the same result for them, and no
    prism or mesh code. The environment contact kernels are compiled a second time with this in place of
    ``sdf`` (``loom.systems.collision.environment``), so a scene of planes, spheres, capsules, boxes and
    cylinders — most games — never compiles the prism and mesh distance code (about 2 s of a first launch)."""
    out[0], out[1], out[2], out[3] = basic_sdf(shapes.kind[c], shapes.params[c, 0], shapes.params[c, 1],
                                               shapes.params[c, 2], lx, ly, lz)


@numba.njit(cache=True)
def _prism_sdf(params, c, polygons, lx, ly, lz, out):
    """Signed distance to a convex polygon (counter-clockwise, xy) extruded ±half_depth along z."""
    half = params[c, 0]
    first = int(params[c, 1])
    count = int(params[c, 2])
    inside = -1e300                                  # max over edges of the signed edge distance
    ex, ey = 0.0, 0.0
    best = 1e300                                     # squared distance to the boundary, closest point
    bx, by = 0.0, 0.0
    for e in range(count):
        ax, ay = polygons[first + e, 0], polygons[first + e, 1]
        nxt = first + (e + 1) % count
        vx, vy = polygons[nxt, 0] - ax, polygons[nxt, 1] - ay
        length = math.sqrt(vx * vx + vy * vy)
        nx, ny = vy / length, -vx / length           # outward normal of a counter-clockwise polygon
        s = (lx - ax) * nx + (ly - ay) * ny
        if s > inside:
            inside, ex, ey = s, nx, ny
        t = min(max(((lx - ax) * vx + (ly - ay) * vy) / (length * length), 0.0), 1.0)
        px, py = ax + t * vx, ay + t * vy
        d2 = (lx - px) ** 2 + (ly - py) ** 2
        if d2 < best:
            best, bx, by = d2, px, py
    dz = abs(lz) - half
    if inside <= 0.0:                                # within the polygon's outline
        if dz <= 0.0:
            if inside >= dz:
                out[0], out[1], out[2], out[3] = inside, ex, ey, 0.0
            else:
                out[0], out[1], out[2], out[3] = dz, 0.0, 0.0, math.copysign(1.0, lz)
        else:
            out[0], out[1], out[2], out[3] = dz, 0.0, 0.0, math.copysign(1.0, lz)
        return
    d2d = math.sqrt(best)
    ox, oy = (lx - bx) / d2d, (ly - by) / d2d
    if dz <= 0.0:
        out[0], out[1], out[2], out[3] = d2d, ox, oy, 0.0
    else:
        d = math.sqrt(d2d * d2d + dz * dz)
        out[0], out[1], out[2], out[3] = d, ox * d2d / d, oy * d2d / d, math.copysign(dz, lz) / d


@numba.njit(cache=True)
def _mesh_sdf(m, mv, mt, minfo, mcell, mcelltri, lx, ly, lz, out):
    """Distance to the nearest triangle of mesh m listed in the point's grid cell (Ericson's closest point)."""
    out[0] = 1e300
    cell = minfo[m, 3]
    ix = int(math.floor((lx - minfo[m, 0]) / cell))
    iy = int(math.floor((ly - minfo[m, 1]) / cell))
    iz = int(math.floor((lz - minfo[m, 2]) / cell))
    sx, sy, sz = int(minfo[m, 4]), int(minfo[m, 5]), int(minfo[m, 6])
    if ix < 0 or iy < 0 or iz < 0 or ix >= sx or iy >= sy or iz >= sz:
        return
    t_off, s_off, c_off = int(minfo[m, 7]), int(minfo[m, 8]), int(minfo[m, 9])
    flat = (ix * sy + iy) * sz + iz
    best = 1e300
    for j in range(mcell[s_off + flat], mcell[s_off + flat + 1]):
        t = t_off + mcelltri[c_off + j]
        a, b, cc = mt[t, 0], mt[t, 1], mt[t, 2]
        px, py, pz = closest_point_on_triangle(lx, ly, lz, mv[a], mv[b], mv[cc])
        dx, dy, dz = lx - px, ly - py, lz - pz
        d2 = dx * dx + dy * dy + dz * dz
        if d2 < best:
            best = d2
            e1x, e1y, e1z = mv[b, 0] - mv[a, 0], mv[b, 1] - mv[a, 1], mv[b, 2] - mv[a, 2]
            e2x, e2y, e2z = mv[cc, 0] - mv[a, 0], mv[cc, 1] - mv[a, 1], mv[cc, 2] - mv[a, 2]
            nx = e1y * e2z - e1z * e2y
            ny = e1z * e2x - e1x * e2z
            nz = e1x * e2y - e1y * e2x
            nn = math.sqrt(nx * nx + ny * ny + nz * nz)
            nx, ny, nz = nx / nn, ny / nn, nz / nn
            d = math.sqrt(d2)
            side = dx * nx + dy * ny + dz * nz
            if d > 1e-12 and side >= 0.0:
                out[0], out[1], out[2], out[3] = d, dx / d, dy / d, dz / d
            else:                                     # on or behind the triangle: leave by its front
                out[0], out[1], out[2], out[3] = -d, nx, ny, nz
