"""Triangle-mesh geometry every package shares: the grid's triangle indices, triangle areas, vertex normals,
closest points on triangles. Arrays in, arrays out; the per-frame ones are numba kernels.

Engine, components, systems and files all import engine, never the reverse: this is where math they all need
lives, written once.
"""
from __future__ import annotations

import math

import numba
import numpy as np


def grid_triangles(nx: int, ny: int, *, checkerboard: bool = True) -> np.ndarray:
    """Triangles (2·(nx−1)·(ny−1), 3) int32 of an nx × ny vertex grid numbered row by row (row·nx + col).

    Each quad gives two triangles, counter-clockwise when col runs right and row up. checkerboard=True splits the
    quads along alternating diagonals (a cloth sheet then has no preferred shear direction); False splits every
    quad along the same diagonal, corner (col, row) to (col + 1, row + 1) (tessellated solids)."""
    idx = np.arange(nx * ny).reshape(ny, nx)
    p00, p10, p01, p11 = idx[:-1, :-1], idx[:-1, 1:], idx[1:, :-1], idx[1:, 1:]    # quad corners (col, row)
    col, row = np.meshgrid(np.arange(nx - 1), np.arange(ny - 1))
    even = ((col + row) % 2 == 0 if checkerboard else np.ones_like(col, dtype=bool))[..., None]
    first = np.where(even, np.stack([p00, p10, p11], -1), np.stack([p00, p10, p01], -1))
    second = np.where(even, np.stack([p00, p11, p01], -1), np.stack([p10, p11, p01], -1))
    return np.stack([first, second], axis=2).reshape(-1, 3).astype(np.int32)


def triangle_areas(x: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Area of each triangle [m²], shape (t,): half the length of cross(p1 − p0, p2 − p0); x (n, 3) [m],
    triangles (t, 3) integer indices into x."""
    p0, p1, p2 = (x[triangles[:, k]] for k in range(3))
    return 0.5 * np.linalg.norm(np.cross(p1 - p0, p2 - p0), axis=1)


def vertex_normals(x: np.ndarray, triangles: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Return area-weighted unit vertex normals (n, 3) of positions x (n, 3) [m] and triangles (t, 3).

    Each vertex sums the face normals cross(p1 − p0, p2 − p0) (length 2·area) of its triangles and
    normalises; a vertex in no triangle, or only in degenerate ones, gets (0, 0, 0). ``out`` (C-contiguous
    float64 (n, 3)) avoids an allocation; kernels call ``vertex_normals_into`` directly."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    if out is None:
        out = np.empty_like(x)
    vertex_normals_into(np.ascontiguousarray(triangles, dtype=np.int32), x, out)
    return out


@numba.njit(cache=True)
def vertex_normals_into(triangles, x, out):
    """Area-weighted unit vertex normals: out (n, 3) = normalise(Σ cross(p1 − p0, p2 − p0)) over each vertex's
    triangles (Fisher "Rendering"); triangles (t, 3) int32, x (n, 3) [m]; zero where the sum is zero."""
    out[:, :] = 0.0
    for f in range(triangles.shape[0]):
        a, b, c = triangles[f, 0], triangles[f, 1], triangles[f, 2]
        ux, uy, uz = x[b, 0] - x[a, 0], x[b, 1] - x[a, 1], x[b, 2] - x[a, 2]
        vx, vy, vz = x[c, 0] - x[a, 0], x[c, 1] - x[a, 1], x[c, 2] - x[a, 2]
        nx = uy * vz - uz * vy
        ny = uz * vx - ux * vz
        nz = ux * vy - uy * vx
        for v in (a, b, c):
            out[v, 0] += nx
            out[v, 1] += ny
            out[v, 2] += nz
    for v in range(out.shape[0]):
        length = math.sqrt(out[v, 0] ** 2 + out[v, 1] ** 2 + out[v, 2] ** 2)
        if length > 0.0:
            out[v, 0] /= length
            out[v, 1] /= length
            out[v, 2] /= length


@numba.njit(cache=True)
def _edge_dots(px, py, pz, q, abx, aby, abz, acx, acy, acz):
    """(ab·(p − q), ac·(p − q)) [m²] for corner q (3,): Ericson's d1, d2 (q = a), d3, d4 (b), d5, d6 (c)."""
    qx, qy, qz = px - q[0], py - q[1], pz - q[2]
    return abx * qx + aby * qy + abz * qz, acx * qx + acy * qy + acz * qz


@numba.njit(cache=True)
def closest_point_on_triangle(px, py, pz, a, b, c):
    """Closest point (x, y, z) to p on triangle abc, corners as rows (3,) [m] (Ericson, Real-Time
    Collision Detection §5.1.5); degenerate triangles are safe (no division by zero)."""
    abx, aby, abz = b[0] - a[0], b[1] - a[1], b[2] - a[2]
    acx, acy, acz = c[0] - a[0], c[1] - a[1], c[2] - a[2]
    d1, d2 = _edge_dots(px, py, pz, a, abx, aby, abz, acx, acy, acz)
    if d1 <= 0.0 and d2 <= 0.0:
        return a[0], a[1], a[2]
    d3, d4 = _edge_dots(px, py, pz, b, abx, aby, abz, acx, acy, acz)
    if d3 >= 0.0 and d4 <= d3:
        return b[0], b[1], b[2]
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        v = d1 / (d1 - d3) if d1 != d3 else 0.0
        return a[0] + v * abx, a[1] + v * aby, a[2] + v * abz
    d5, d6 = _edge_dots(px, py, pz, c, abx, aby, abz, acx, acy, acz)
    if d6 >= 0.0 and d5 <= d6:
        return c[0], c[1], c[2]
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        w = d2 / (d2 - d6) if d2 != d6 else 0.0
        return a[0] + w * acx, a[1] + w * acy, a[2] + w * acz
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        denom = (d4 - d3) + (d5 - d6)
        w = (d4 - d3) / denom if denom != 0.0 else 0.0
        return b[0] + w * (c[0] - b[0]), b[1] + w * (c[1] - b[1]), b[2] + w * (c[2] - b[2])
    denom = va + vb + vc
    if denom == 0.0:                                      # degenerate triangle: fall back to its first corner
        return a[0], a[1], a[2]
    v = vb / denom
    w = vc / denom
    return a[0] + abx * v + acx * w, a[1] + aby * v + acy * w, a[2] + abz * v + acz * w


def _vertex_normals_numpy(triangles, x, out):
    """``vertex_normals_into`` in NumPy (sums in another order: equal to rounding): its twin while the
    compile-ahead worker compiles it (``loom.launch.cold_kernels`` registers it)."""
    p0, p1, p2 = x[triangles[:, 0]], x[triangles[:, 1]], x[triangles[:, 2]]
    face = np.cross(p1 - p0, p2 - p0)
    out[:, :] = 0.0
    for corner in range(3):
        np.add.at(out, triangles[:, corner], face)
    length = np.sqrt((out * out).sum(axis=1))
    np.divide(out, length[:, None], out=out, where=length[:, None] > 0.0)

