"""Geometry kernels shared by the engine and the systems (closest points), numba, arrays in.

Systems import engine, never the reverse: this is where math both sides need lives.
"""
from __future__ import annotations

import numba


@numba.njit(cache=True)
def closest_point_on_triangle(px, py, pz, a, b, c):
    """Closest point (x, y, z) to p on triangle abc, corners as rows (3,) [m] (Ericson, Real-Time
    Collision Detection §5.1.5); degenerate triangles are safe (no division by zero)."""
    abx, aby, abz = b[0] - a[0], b[1] - a[1], b[2] - a[2]
    acx, acy, acz = c[0] - a[0], c[1] - a[1], c[2] - a[2]
    apx, apy, apz = px - a[0], py - a[1], pz - a[2]
    d1 = abx * apx + aby * apy + abz * apz
    d2 = acx * apx + acy * apy + acz * apz
    if d1 <= 0.0 and d2 <= 0.0:
        return a[0], a[1], a[2]
    bpx, bpy, bpz = px - b[0], py - b[1], pz - b[2]
    d3 = abx * bpx + aby * bpy + abz * bpz
    d4 = acx * bpx + acy * bpy + acz * bpz
    if d3 >= 0.0 and d4 <= d3:
        return b[0], b[1], b[2]
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        v = d1 / (d1 - d3) if d1 != d3 else 0.0
        return a[0] + v * abx, a[1] + v * aby, a[2] + v * abz
    cpx, cpy, cpz = px - c[0], py - c[1], pz - c[2]
    d5 = abx * cpx + aby * cpy + abz * cpz
    d6 = acx * cpx + acy * cpy + acz * cpz
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
