"""Collider geometry shared by every model's contact code: poses and signed distances of shapes.

Not a system: kernels only, used by the environment collision system and by solvers that handle
contacts themselves (the implicit model), so neither imports the other. Shapes are in the
collider's local frame, packed as in ``loom.components.ColliderSet``.
"""
from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numba
import numpy as np

from loom.components import collider
from loom.components.collider import MESH, PRISM, SHAPES
from loom.engine.geometry import closest_point_on_triangle


class Shapes(NamedTuple):
    """The colliders' shapes as ``sdf`` reads them (k colliders, as packed in ``ColliderSet``)."""

    kind: np.ndarray
    """Shape kind, (k,) int32: ``Shape.code`` (loom.components.collider)."""
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


# --- the signed distance of each shape: one kernel per shape of ``collider.SHAPES``, registered for it ----------
_DISTANCES: dict[type, Any] = {}
"""Shape class → its basic signed-distance kernel (``distance_of``)."""


def distance_of(shape: type) -> Callable[[Any], Any]:
    """Decorator: register a numba kernel ``(a, b, c, lx, ly, lz) -> (d, nx, ny, nz)`` as the signed distance [m]
    (negative inside) and unit outward normal of ``shape`` (a class of ``collider.SHAPES`` whose ``basic`` is True)
    at the local point l [m], a, b, c being the first three numbers of its ``pack`` row. Scalars only, so it inlines
    into the contact loops. ``basic_sdf`` dispatches to it by the shape's kind code."""
    def register(kernel: Any) -> Any:
        _DISTANCES[shape] = kernel
        return kernel
    return register


@distance_of(collider.Plane)
@numba.njit(cache=True)
def plane_sdf(a, b, c, lx, ly, lz):
    """Half-space below the plane through the origin with unit normal (a, b, c): d = l·n."""
    return lx * a + ly * b + lz * c, a, b, c


@numba.njit(cache=True)
def _ball(a, dx, dy, dz):
    """Distance [m] of the offset (dx, dy, dz) from a ball of radius a about its centre, d = |offset| − a, and the
    offset's unit direction (straight up when it vanishes)."""
    d = math.sqrt(dx * dx + dy * dy + dz * dz)
    if d < 1e-12:
        return d - a, 0.0, 1.0, 0.0
    return d - a, dx / d, dy / d, dz / d


@distance_of(collider.Sphere)
@numba.njit(cache=True)
def sphere_sdf(a, b, c, lx, ly, lz):
    """Ball of radius a about the origin: d = |l| − a (straight up at the centre)."""
    return _ball(a, lx, ly - 0.0, lz)


@distance_of(collider.Capsule)
@numba.njit(cache=True)
def capsule_sdf(a, b, c, lx, ly, lz):
    """Segment (0, ±b, 0) swept by a ball of radius a: d = |l − nearest segment point| − a."""
    cy = min(max(ly, -b), b)
    return _ball(a, lx, ly - cy, lz)


@distance_of(collider.Box)
@numba.njit(cache=True)
def box_sdf(a, b, c, lx, ly, lz):
    """Box of half extents (a, b, c) about the origin; inside, it is left by the nearest face."""
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


@distance_of(collider.Cylinder)
@numba.njit(cache=True)
def cylinder_sdf(a, b, c, lx, ly, lz):
    """Flat-ended cylinder of radius a along y, ends at y = ±b."""
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


@distance_of(collider.Cone)
@numba.njit(cache=True)
def cone_sdf(a, b, c, lx, ly, lz):
    """Capped cone along y: radius a at the base y = −c, b at the top y = +c. Exact: the solid is convex and
    round, so its distance is the distance in the plane through the axis, (ρ, y) with ρ = √(x² + z²) ≥ 0, to the
    half profile's three edges: the base (0, −c)–(a, −c), the side (a, −c)–(b, c) and the top (b, c)–(0, c).
    Inside, the nearest of their lines (the largest signed distance); outside, the nearest point of the three
    segments. The normal is that edge's, or ρ̂ = x̂ on the axis."""
    rho = math.sqrt(lx * lx + lz * lz)
    ux, uz = (lx / rho, lz / rho) if rho > 1e-12 else (1.0, 0.0)
    length = math.sqrt(4.0 * c * c + (a - b) * (a - b))
    sr, sy = 2.0 * c / length, (a - b) / length           # the side's outward normal (ρ, y)
    base, top = -ly - c, ly - c
    side = (rho - a) * sr + (ly + c) * sy
    if base <= 0.0 and top <= 0.0 and side <= 0.0:        # inside: leave by the nearest face
        if side >= base and side >= top:
            return side, sr * ux, sy, sr * uz
        if top >= base:
            return top, 0.0, 1.0, 0.0
        return base, 0.0, -1.0, 0.0
    best, pr, py = 1e300, 0.0, 0.0                        # outside: the nearest point of the half profile
    for e in range(3):
        if e == 0:
            ar, ay, vr, vy = 0.0, -c, a, 0.0
        elif e == 1:
            ar, ay, vr, vy = a, -c, b - a, 2.0 * c
        else:
            ar, ay, vr, vy = b, c, -b, 0.0
        v2 = vr * vr + vy * vy
        t = min(max(((rho - ar) * vr + (ly - ay) * vy) / v2, 0.0), 1.0) if v2 > 0.0 else 0.0
        qr, qy = ar + t * vr, ay + t * vy
        d2 = (rho - qr) * (rho - qr) + (ly - qy) * (ly - qy)
        if d2 < best:
            best, pr, py = d2, qr, qy
    d = math.sqrt(best)
    nr, ny = (rho - pr) / d, (ly - py) / d
    return d, nr * ux, ny, nr * uz


def _dispatch() -> tuple[Any, Any]:
    """``basic_sdf`` and ``is_basic`` generated from ``collider.SHAPES``: one explicit branch per basic shape's kind
    code, calling the kernel registered for it (``distance_of``), so a shape appended to the table is reached, and a
    basic shape with no registered distance is refused here, at import (RuntimeError). Compiled as if written in
    this file (numba caches them with it, under a name that carries the table's fingerprint)."""
    basic = [shape for shape in SHAPES if shape.basic]
    missing = [shape.__name__ for shape in basic if shape not in _DISTANCES]
    if missing:
        raise RuntimeError(f"no signed distance registered for the collider shape(s) {', '.join(missing)}: "
                           f"decorate one with @distance_of(<shape>) in loom.systems.shared.shapes")
    namespace = {"__name__": __name__, "math": math}
    lines = ["def basic_sdf(k, a, b, c, lx, ly, lz):"]
    for shape in basic:
        name = f"_{shape.__name__.lower()}_sdf_{shape.code}"
        namespace[name] = _DISTANCES[shape]
        lines += [f"    if k == {shape.code}:                 # {shape.__name__}",
                  f"        return {name}(a, b, c, lx, ly, lz)"]
    lines += ["    return math.nan, 0.0, 0.0, 0.0        # no basic shape has this code: NaN, not another shape's",
              "",
              "",
              "def is_basic(k):",
              "    return " + " or ".join(f"k == {shape.code}" for shape in basic)]
    source = "\n".join(lines) + "\n"
    exec(compile(source, __file__, "exec"), namespace)
    table = hashlib.sha256(source.encode()).hexdigest()[:12]   # numba files a cached kernel by its qualified name:
    made = []                                                  # a changed table is a kernel of its own
    for name, doc in (("basic_sdf", _BASIC_SDF_DOC), ("is_basic", _IS_BASIC_DOC)):
        function = namespace[name]
        function.__doc__ = doc
        function.__qualname__ = f"{name}_{table}"
        made.append(numba.njit(cache=True)(function))
    return made[0], made[1]


_BASIC_SDF_DOC = """Signed distance [m] and unit outward normal (d, nx, ny, nz) of local point l for a shape whose
``basic`` is True, of kind code k and sizes a, b, c (its ``pack`` row): the kernel registered for it
(``distance_of``), by an explicit branch per kind code (generated from ``collider.SHAPES``). NaN for a code no basic
shape has (the callers test ``is_basic`` first). Scalars only, so it inlines into ``sdf``'s callers."""
_IS_BASIC_DOC = """True for the kind codes ``basic_sdf`` handles from three size numbers (every shape of
``collider.SHAPES`` whose ``basic`` is True)."""

basic_sdf, is_basic = _dispatch()


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
    elif k == MESH:
        _mesh_sdf(shapes.mesh[c], shapes.mv, shapes.mt, shapes.minfo, shapes.mcell, shapes.mcelltri, lx, ly, lz,
                  out)
    else:                                            # no shape has this code: NaN, not another shape's
        out[0], out[1], out[2], out[3] = math.nan, 0.0, 0.0, 0.0


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
