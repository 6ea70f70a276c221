"""Triangle lists of collider shapes in their local frame, for every renderer: the helpers each shape's
``tessellate`` (components/collider.py) is built from.

A tessellation is a non-indexed triangle list, (3·t, 8) float64 rows of position [m], unit outward normal and uv
[m] (zero but for a plane's floor checker), every triangle counter-clockwise seen from outside (``oriented``), so a
renderer's front face is the outside.
"""
from __future__ import annotations

import math

import numpy as np

from loom.engine.geometry import grid_triangles


def lathe(radius: np.ndarray, y: np.ndarray, normal_r: np.ndarray, normal_y: np.ndarray, segments: int) -> np.ndarray:
    """Revolve a profile about local y: ``radius`` [m] and ``y`` [m] of its points, top to bottom, with the radial
    and y parts of the profile's outward normal there; ``segments`` around. A radius of 0 closes a cap (its
    degenerate triangles are dropped)."""
    theta = np.linspace(0.0, 2.0 * math.pi, segments + 1)
    s, c = np.sin(theta)[None, :], np.cos(theta)[None, :]
    pos = np.stack([radius[:, None] * s, np.broadcast_to(y[:, None], (y.size, theta.size)), radius[:, None] * c], -1)
    nrm = np.stack([normal_r[:, None] * s, np.broadcast_to(normal_y[:, None], (y.size, theta.size)),
                    normal_r[:, None] * c], -1)
    tri = grid_triangles(theta.size, y.size, checkerboard=False)      # vertex (row i, angle j): i·theta.size + j
    pos, nrm = pos.reshape(-1, 3), nrm.reshape(-1, 3)
    return oriented(pos[tri].reshape(-1, 3), nrm[tri].reshape(-1, 3), np.zeros((tri.size, 2)))


def oriented(pos: np.ndarray, nrm: np.ndarray, uv: np.ndarray) -> np.ndarray:
    """Rows (pos, normal, uv) of a triangle list with every triangle turned counter-clockwise about its normal
    (so a renderer's front face is the outside), degenerate triangles dropped."""
    p = pos.reshape(-1, 3, 3)
    face = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    facing = np.einsum("ij,ij->i", face, nrm.reshape(-1, 3, 3).sum(axis=1))
    rows = np.concatenate([pos, nrm, uv], axis=1).reshape(-1, 3, 8)
    flip = facing < 0.0
    rows[flip] = rows[flip][:, ::-1]
    keep = np.linalg.norm(face, axis=1) > 1e-12
    return np.ascontiguousarray(rows[keep].reshape(-1, 8))


def square(normal: np.ndarray, extent: float) -> np.ndarray:
    """Two triangles of a square of half side ``extent`` [m] through the origin, facing ``normal`` (unit, (3,));
    uv: in-plane coordinates [m] (a floor's checker)."""
    n = np.asarray(normal, float)
    t1 = np.cross(n, (1.0, 0.0, 0.0) if abs(n[0]) < 0.9 else (0.0, 0.0, 1.0))
    t1 /= np.linalg.norm(t1)
    t2 = np.cross(n, t1)
    e = extent
    corners = [(-e, -e), (e, -e), (e, e), (-e, e)]
    pos = np.array([a * t1 + b * t2 for a, b in corners])
    uv = np.array(corners, float)
    tri = np.array([[0, 1, 2], [0, 2, 3]])
    return oriented(pos[tri].reshape(-1, 3), np.tile(n, (6, 1)), uv[tri].reshape(-1, 2))


def box(half_extents: np.ndarray) -> np.ndarray:
    """The twelve triangles of a box of ``half_extents`` (3,) [m] centred on the origin."""
    pos, nrm = [], []
    for axis in range(3):
        for sign in (-1.0, 1.0):
            n = np.zeros(3)
            n[axis] = sign
            u, v = np.eye(3)[(axis + 1) % 3], np.eye(3)[(axis + 2) % 3]
            c = n * half_extents[axis]
            hu, hv = u * half_extents[(axis + 1) % 3], v * half_extents[(axis + 2) % 3]
            quad = [c - hu - hv, c + hu - hv, c + hu + hv, c - hu + hv]
            pos += [quad[0], quad[1], quad[2], quad[0], quad[2], quad[3]]
            nrm += [n] * 6
    return oriented(np.array(pos), np.array(nrm), np.zeros((len(pos), 2)))


def prism(polygon: np.ndarray, half_depth: float) -> np.ndarray:
    """A convex counter-clockwise ``polygon`` (k, 2) [m] in the xy plane extruded ±``half_depth`` [m] along z."""
    poly, d = polygon, half_depth
    k = poly.shape[0]
    pos, nrm = [], []
    for i in range(1, k - 1):                                 # caps: fans (the polygon is convex)
        for z, sign in ((d, 1.0), (-d, -1.0)):
            pos += [(*poly[0], z), (*poly[i], z), (*poly[i + 1], z)]
            nrm += [(0.0, 0.0, sign)] * 3
    for i in range(k):                                        # sides: outward = right of a CCW edge
        a, b = poly[i], poly[(i + 1) % k]
        edge = b - a
        n = np.array([edge[1], -edge[0], 0.0]) / np.linalg.norm(edge)
        pos += [(*a, -d), (*b, -d), (*b, d), (*a, -d), (*b, d), (*a, d)]
        nrm += [n] * 6
    return oriented(np.array(pos, float), np.array(nrm, float), np.zeros((len(pos), 2)))


def triangles(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """A triangle mesh's rows as given (front = counter-clockwise), each with its face normal."""
    corners = vertices[faces]                                  # (t, 3, 3)
    face = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    face /= np.linalg.norm(face, axis=1)[:, None]
    return np.concatenate([corners.reshape(-1, 3), np.repeat(face, 3, axis=0),
                           np.zeros((corners.shape[0] * 3, 2))], axis=1)
