"""Thickness export: a closed, quilted mesh at distance T around a thin cloth (Fisher's cloth notes, "Rendering").

The simulated cloth is infinitely thin. Fisher builds a mesh with thickness from it: define
f(p) = d(p) − T, where d is the distance from p to the cloth, and polygonize the surface f = 0 — "the set of all
points a distance exactly T from the surface of the cloth" — on a grid. With d the distance to the nearest *vertex*
instead of the nearest surface point, the result has "a knot at each source vertex" (``mode="vertex"``).

Pipeline of ``thicken`` (each step a public function you can call on its own):

1. ``distance_field``: d on a regular grid of spacing h <= T/2 covering the cloth's bounding box grown by T + 2h.
   A numba kernel visits, per triangle (or vertex), only the grid points within T + 2h of its bounding box and keeps
   the minimum point–triangle (point–vertex) distance; farther points keep the cap T + 2h. Every grid point next to
   the surface (within one cell diagonal, < T + √3·h) therefore holds its exact distance.
2. ``marching_tetrahedra``: the surface f = 0. Choice: marching *tetrahedra*, not the 256-case marching cubes
   table. Each cube is split into the six Kuhn tetrahedra around its main diagonal, the same split in every cube,
   so neighbouring cubes share triangulated faces and the result is watertight and manifold by construction (the
   classic cubes table has ambiguous faces that can leave holes unless extra cases are added). The tables are tiny
   (1, 2 or 3 corners inside) and derived in code, triangles come out oriented with normals pointing outward
   (towards larger d), and vertices are shared through the grid edge they lie on. Cost: about twice the triangles
   of marching cubes — which step 3 addresses.
3. ``simplify`` (optional): vertex clustering — vertices in the same cell of a coarser grid merge into their mean,
   collapsed and doubled triangles are dropped. Fisher simplifies (he calls DirectX) because marching produces many
   sliver triangles. Clustering is the simple, fast kind: it can pinch the surface where two sheets of it pass
   within one cluster cell, so the output is no longer guaranteed manifold; leave it off when you need that.
4. ``smooth``: uniform Laplacian smoothing (x ← x + λ·(mean of neighbours − x)), which evens out the slivers.
5. ``refit``: Fisher's final step, "refitting it to the original surface f": each vertex moves along the line from
   its nearest cloth point q to distance exactly T (x ← q + T·(x − q)/|x − q|), using a cell hash of the cloth.

Fisher's subdivision step is left to the renderer (Loom's surface kernels subdivide at draw time).
``save_thickened`` writes the result as OBJ with area-weighted vertex normals. From a shell, for a baked frame:

    python -m loom.files.thickness frame_00120.obj quilt.obj --thickness 0.01 [--mode vertex] [--smooth 3]

Units: metres throughout. Typical T for a quilt or a sweater is 0.005–0.02 m; the grid holds about
(extent / h)³ points, so ``max_points`` guards against a T far too small for the cloth's size.
"""
from __future__ import annotations

import math as _math
import numbers as _numbers
import os as _os
import sys as _sys
from itertools import permutations as _permutations
from pathlib import Path

import numba
import numpy as np

from loom.engine.geometry import closest_point_on_triangle, vertex_normals
from loom.files import meshes as _io
from loom.files.atomic import os_error_line

__all__ = ["MODES", "main", "thicken", "save_thickened", "distance_field", "marching_tetrahedra", "simplify", "smooth",
           "refit", "closest_points", "vertex_normals"]

MODES = ("surface", "vertex")
"""Distance to the cloth surface (closed quilted shell) or to the nearest cloth vertex (knotted look)."""
MAX_POINTS = 60_000_000
"""Default cap on distance-field grid points (480 MB of float64)."""


def thicken(positions: np.ndarray, triangles: np.ndarray, thickness: float, *, mode: str = "surface",
            spacing: float | None = None, simplify_cell: float | None = None, smooth_iterations: int = 3,
            smooth_factor: float = 0.5, refit_surface: bool = True,
            max_points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """Closed mesh of the points at distance ``thickness`` T [m] from the cloth; return (vertices (m, 3), triangles).

    positions (n, 3) [m] and triangles (t, 3) are the thin cloth (a frame, ``Cloth.x`` and ``Cloth.triangles``).
    mode "surface" gives the quilted shell, "vertex" the knotted one. spacing h [m] of the grid defaults to T/2 (the
    largest allowed; smaller is smoother and costs (1/h)³). simplify_cell [m] > h turns on vertex clustering
    (off by default: it may break manifoldness), smooth_iterations Laplacian passes of factor λ in (0, 1], then with
    refit_surface every vertex is moved to distance exactly T. Triangles are counter-clockwise seen from outside.
    Raises ValueError naming thicken.<field> for bad input or a grid of more than max_points points.
    """
    pos, tri = _check_cloth(positions, triangles)
    thickness = _positive("thickness", thickness)
    mode = _check_mode(mode)
    h = thickness / 2.0 if spacing is None else _positive("spacing", spacing)
    if h > thickness / 2.0:
        raise ValueError(f"thicken.spacing = {h!r}: must be <= thickness / 2 = {thickness / 2.0!r} [m]")
    if simplify_cell is not None:
        simplify_cell = _positive("simplify_cell", simplify_cell)
    if isinstance(smooth_iterations, bool) or not isinstance(smooth_iterations, int) or smooth_iterations < 0:
        raise ValueError(f"thicken.smooth_iterations = {smooth_iterations!r}: must be an integer >= 0")
    if not isinstance(smooth_factor, _numbers.Real) or not 0.0 < smooth_factor <= 1.0:
        raise ValueError(f"thicken.smooth_factor = {smooth_factor!r}: must be in (0, 1]")

    field, origin = distance_field(pos, tri, thickness, h, mode=mode, max_points=max_points)
    vertices, faces = marching_tetrahedra(field - thickness, origin, h)
    if simplify_cell is not None:
        vertices, faces = simplify(vertices, faces, simplify_cell)
    vertices = smooth(vertices, faces, smooth_iterations, smooth_factor)
    if refit_surface:
        vertices = refit(vertices, pos, tri, thickness, mode=mode)
    return vertices, faces


def save_thickened(path: str | _os.PathLike, positions: np.ndarray, triangles: np.ndarray, thickness: float,
                   **options: object) -> tuple[np.ndarray, np.ndarray]:
    """``thicken`` the cloth and write the closed mesh to an OBJ at path (with vertex normals); return the mesh."""
    vertices, faces = thicken(positions, triangles, thickness, **options)
    _io.save_obj(Path(path), vertices, faces, normals=vertex_normals(vertices, faces))
    return vertices, faces


def main(argv: list[str] | None = None) -> int:
    """Command line: thicken one OBJ (a baked frame) into a closed OBJ; print vertex and triangle counts."""
    import argparse
    p = argparse.ArgumentParser(prog="python -m loom.files.thickness", description="Thicken a cloth OBJ into a closed "
                                "quilted (mode surface) or knotted (mode vertex) mesh at distance T.")
    p.add_argument("source", help="cloth OBJ (e.g. a frame written by python -m loom.files.bake)")
    p.add_argument("target", help="OBJ to write")
    p.add_argument("--thickness", type=float, required=True, help="T [m], e.g. 0.01")
    p.add_argument("--mode", choices=MODES, default="surface")
    p.add_argument("--spacing", type=float, default=None, help="grid spacing [m] (default and maximum T/2)")
    p.add_argument("--simplify", type=float, default=None, metavar="CELL", help="vertex-clustering cell [m]")
    p.add_argument("--smooth", type=int, default=3, help="Laplacian passes (default 3)")
    args = p.parse_args(argv)
    try:
        cloth = _io.load_obj(args.source)
        vertices, faces = save_thickened(args.target, cloth.positions, cloth.triangles, args.thickness,
                                         mode=args.mode, spacing=args.spacing, simplify_cell=args.simplify,
                                         smooth_iterations=args.smooth)
    except ValueError as error:
        print(f"loom thickness: {error}", file=_sys.stderr)
        return 2
    except OSError as error:                              # unreadable source; read-only or full disk; bad path
        print(f"loom thickness: {os_error_line(error)}", file=_sys.stderr)
        return 1
    print(f"{args.target}: {vertices.shape[0]} vertices, {faces.shape[0]} triangles")
    return 0


# --- pipeline steps --------------------------------------------------------------------------------------------

def distance_field(positions: np.ndarray, triangles: np.ndarray, thickness: float, spacing: float, *,
                   mode: str = "surface", max_points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """Distance [m] from each grid point to the cloth (surface or nearest vertex), capped at T + 2h.

    Returns (d (nx, ny, nz), origin (3,)): grid point (i, j, k) sits at origin + h·(i, j, k). The grid spans the
    cloth's bounding box grown by T + 2h + h on every side, so the outermost layer is always outside (d > T).
    """
    pos, tri = _check_cloth(positions, triangles)
    mode = _check_mode(mode)
    reach = thickness + 2.0 * spacing
    margin = reach + spacing
    origin = pos.min(axis=0) - margin
    shape = np.floor((pos.max(axis=0) + margin - origin) / spacing).astype(np.int64) + 2
    points = int(np.prod(shape))
    if points > max_points:
        raise ValueError(f"thicken: a grid of {shape[0]} × {shape[1]} × {shape[2]} = {points} points at spacing "
                         f"{spacing:g} m exceeds max_points = {max_points}; use a larger thickness or spacing")
    field = np.full(tuple(shape), reach, dtype=np.float64)
    if mode == "surface":
        _surface_distance(pos, tri.astype(np.int64), origin, spacing, reach, field)
    else:
        _vertex_distance(pos, origin, spacing, reach, field)
    return field, origin


def marching_tetrahedra(values: np.ndarray, origin: np.ndarray, spacing: float) -> tuple[np.ndarray, np.ndarray]:
    """Triangles of the surface values = 0 on the grid (values < 0 inside); return (vertices (m, 3), faces (t, 3)).

    Each cube splits into ``KUHN_TETRAHEDRA``; each tetrahedron with 1 or 3 corners inside emits one triangle, with
    2 inside a quad (two triangles). Vertices lie on grid edges by linear interpolation and are shared by key of the
    edge, so the mesh is closed and manifold wherever the inside region stays off the grid border. Normals,
    cross(p1 − p0, p2 − p0), point outward (towards larger values).
    """
    values = np.ascontiguousarray(values, dtype=np.float64)
    if values.ndim != 3 or min(values.shape) < 2:
        raise ValueError(f"marching_tetrahedra.values: shape {values.shape}, expected (nx, ny, nz) with each >= 2")
    counts = np.zeros(values.shape[0] - 1, dtype=np.int64)
    _count_triangles(values, _TETS, counts)
    offsets = np.concatenate(([0], np.cumsum(counts)))
    keys = np.empty((int(offsets[-1]), 3), dtype=np.int64)
    _emit_triangles(values, _TETS, offsets, keys)
    unique, faces = np.unique(keys, return_inverse=True)
    faces = faces.reshape(-1, 3).astype(np.int64)
    total = values.size
    a, b = unique // total, unique % total                      # grid points (linear index) at the edge's ends
    fa, fb = values.ravel()[a], values.ravel()[b]
    t = (fa / (fa - fb))[:, None]
    pa, pb = _grid_point(a, values.shape, origin, spacing), _grid_point(b, values.shape, origin, spacing)
    return pa + t * (pb - pa), faces


def simplify(vertices: np.ndarray, faces: np.ndarray, cell: float) -> tuple[np.ndarray, np.ndarray]:
    """Vertex clustering: merge the vertices in each cell of size ``cell`` [m] into their mean.

    Drops triangles that collapse (two corners in one cell), duplicates of a triangle (keeping the first) and
    pairs of opposite triangles on the same three vertices (a zero-volume fin), then unused vertices.
    """
    key = np.floor((vertices - vertices.min(axis=0)) / cell).astype(np.int64)
    _, cluster, count = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    cluster = cluster.ravel()
    merged = np.stack([np.bincount(cluster, weights=vertices[:, c]) for c in range(3)], axis=1) / count[:, None]
    tri = cluster[faces]
    tri = tri[(tri[:, 0] != tri[:, 1]) & (tri[:, 1] != tri[:, 2]) & (tri[:, 0] != tri[:, 2])]
    rolled = np.take_along_axis(tri, (np.argmin(tri, axis=1)[:, None] + np.arange(3)) % 3, axis=1)
    _, first = np.unique(rolled, axis=0, return_index=True)
    tri = rolled[np.sort(first)]                               # one of each oriented triangle
    flipped = tri[:, [0, 2, 1]]
    flipped = np.take_along_axis(flipped, (np.argmin(flipped, axis=1)[:, None] + np.arange(3)) % 3, axis=1)
    own = {tuple(r) for r in tri.tolist()}
    keep = np.array([tuple(r) not in own for r in flipped.tolist()], dtype=bool)
    tri = tri[keep]
    used = np.unique(tri)
    remap = np.full(merged.shape[0], -1, dtype=np.int64)
    remap[used] = np.arange(used.size)
    return merged[used], remap[tri]


def smooth(vertices: np.ndarray, faces: np.ndarray, iterations: int = 3, factor: float = 0.5) -> np.ndarray:
    """Uniform Laplacian smoothing: ``iterations`` passes of x ← x + factor·(mean of edge neighbours − x)."""
    vertices = np.array(vertices, dtype=np.float64)
    if iterations == 0 or faces.size == 0:
        return vertices
    edges = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    edges = np.unique(np.sort(edges, axis=1), axis=0)
    i, j = np.concatenate([edges[:, 0], edges[:, 1]]), np.concatenate([edges[:, 1], edges[:, 0]])
    degree = np.maximum(np.bincount(i, minlength=vertices.shape[0]), 1)[:, None]
    for _ in range(iterations):
        mean = np.stack([np.bincount(i, weights=vertices[j, c], minlength=vertices.shape[0]) for c in range(3)],
                        axis=1) / degree
        vertices += factor * (mean - vertices)
    return vertices


def refit(vertices: np.ndarray, positions: np.ndarray, triangles: np.ndarray, thickness: float, *,
          mode: str = "surface") -> np.ndarray:
    """Move each vertex to distance exactly ``thickness`` from the cloth, along the line from its nearest point."""
    nearest = closest_points(vertices, positions, triangles, mode=mode, reach=2.0 * thickness)
    offset = vertices - nearest
    length = np.linalg.norm(offset, axis=1, keepdims=True)
    ok = (length > 1e-12 * max(thickness, 1.0)).ravel()
    out = np.array(vertices, dtype=np.float64)
    out[ok] = nearest[ok] + thickness * offset[ok] / length[ok]
    return out


def closest_points(points: np.ndarray, positions: np.ndarray, triangles: np.ndarray, *, mode: str = "surface",
                   reach: float | None = None) -> np.ndarray:
    """Nearest point of the cloth (surface, or nearest vertex) to each of points (m, 3); returns (m, 3) [m].

    Uses a uniform cell hash of cell size ``reach`` (default: 1/20 of the bounding-box diagonal); points farther
    than that from the cloth fall back to a search over every primitive, so the answer is exact either way.
    """
    pos, tri = _check_cloth(positions, triangles)
    mode = _check_mode(mode)
    pts = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
    if mode == "vertex":
        tri = np.repeat(np.arange(pos.shape[0], dtype=np.int64)[:, None], 3, axis=1)    # points as triangles
    tri = tri.astype(np.int64)
    lo, hi = pos.min(axis=0), pos.max(axis=0)
    if reach is None or not reach > 0:
        reach = max(float(np.linalg.norm(hi - lo)) / 20.0, 1e-9)
    shape = np.floor((hi - lo) / reach).astype(np.int64) + 1
    counts = np.zeros(int(np.prod(shape)) + 1, dtype=np.int64)
    _hash_cells(pos, tri, lo, reach, shape, counts, np.empty(0, dtype=np.int64))
    starts = np.concatenate(([0], np.cumsum(counts)))
    items = np.empty(int(starts[-1]), dtype=np.int64)
    _hash_cells(pos, tri, lo, reach, shape, starts.copy(), items)
    out = np.empty_like(pts)
    _closest(pts, pos, tri, lo, reach, shape, starts, items, out)
    return out


# --- private: validation and tables ----------------------------------------------------------------------------

def _check_cloth(positions: object, triangles: object) -> tuple[np.ndarray, np.ndarray]:
    pos, tri, _, _ = _io._check_export("thicken", positions, triangles)
    if pos.shape[0] == 0:
        raise ValueError("thicken.positions: empty, need at least one vertex")
    return np.ascontiguousarray(pos), np.ascontiguousarray(tri)


def _positive(field: str, value: object) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, _numbers.Real) \
            or not _math.isfinite(value) or value <= 0:
        raise ValueError(f"thicken.{field} = {value!r}: must be finite and > 0 [m]")
    return float(value)


def _check_mode(mode: object) -> str:
    if mode not in MODES:
        raise ValueError(f"thicken.mode = {mode!r}: expected one of {', '.join(MODES)}")
    return str(mode)


def _kuhn_tetrahedra() -> np.ndarray:
    """The six tetrahedra of a cube around its main diagonal, corners as bits (dx·4 + dy·2 + dz), each ordered so
    det(p1 − p0, p2 − p0, p3 − p0) > 0 (the orientation the triangle rules in ``_emit_triangles`` assume)."""
    tets = []
    for order in _permutations(range(3)):
        corner, path = np.zeros(3, dtype=np.int64), [0]
        for axis in order:
            corner[axis] = 1
            path.append(int(corner[0] * 4 + corner[1] * 2 + corner[2]))
        p = np.array([[(c >> 2) & 1, (c >> 1) & 1, c & 1] for c in path], dtype=np.float64)
        if np.linalg.det(p[1:] - p[0]) < 0:
            path[2], path[3] = path[3], path[2]
        tets.append(path)
    return np.array(tets, dtype=np.int64)


KUHN_TETRAHEDRA = _kuhn_tetrahedra()
"""(6, 4) cube-corner bits (dx·4 + dy·2 + dz) of the positively oriented tetrahedra every cube is split into."""
_TETS = KUHN_TETRAHEDRA


def _grid_point(linear: np.ndarray, shape: tuple[int, ...], origin: np.ndarray, spacing: float) -> np.ndarray:
    i, rest = np.divmod(linear, shape[1] * shape[2])
    j, k = np.divmod(rest, shape[2])
    return origin + spacing * np.stack([i, j, k], axis=1).astype(np.float64)


# --- private: kernels ------------------------------------------------------------------------------------------

@numba.njit(cache=True)
def _surface_distance(positions, triangles, origin, h, reach, field):
    """field[i, j, k] = min(field, distance [m] from grid point to each triangle) for points within reach of its box."""
    for t in range(triangles.shape[0]):
        a, b, c = positions[triangles[t, 0]], positions[triangles[t, 1]], positions[triangles[t, 2]]
        lo = np.empty(3, np.int64)
        hi = np.empty(3, np.int64)
        for d in range(3):
            low = min(a[d], b[d], c[d]) - reach
            high = max(a[d], b[d], c[d]) + reach
            lo[d] = max(int(np.floor((low - origin[d]) / h)), 0)
            hi[d] = min(int(np.ceil((high - origin[d]) / h)), field.shape[d] - 1)
        for i in range(lo[0], hi[0] + 1):
            px = origin[0] + i * h
            for j in range(lo[1], hi[1] + 1):
                py = origin[1] + j * h
                for k in range(lo[2], hi[2] + 1):
                    pz = origin[2] + k * h
                    qx, qy, qz = closest_point_on_triangle(px, py, pz, a, b, c)
                    dist = np.sqrt((px - qx) ** 2 + (py - qy) ** 2 + (pz - qz) ** 2)
                    if dist < field[i, j, k]:
                        field[i, j, k] = dist


@numba.njit(cache=True)
def _vertex_distance(positions, origin, h, reach, field):
    """field = min(field, distance [m] to each cloth vertex) for grid points within reach of the vertex."""
    for v in range(positions.shape[0]):
        lo = np.empty(3, np.int64)
        hi = np.empty(3, np.int64)
        for d in range(3):
            lo[d] = max(int(np.floor((positions[v, d] - reach - origin[d]) / h)), 0)
            hi[d] = min(int(np.ceil((positions[v, d] + reach - origin[d]) / h)), field.shape[d] - 1)
        for i in range(lo[0], hi[0] + 1):
            dx = origin[0] + i * h - positions[v, 0]
            for j in range(lo[1], hi[1] + 1):
                dy = origin[1] + j * h - positions[v, 1]
                for k in range(lo[2], hi[2] + 1):
                    dz = origin[2] + k * h - positions[v, 2]
                    dist = np.sqrt(dx * dx + dy * dy + dz * dz)
                    if dist < field[i, j, k]:
                        field[i, j, k] = dist


@numba.njit(cache=True)
def _tet_case(values, tets, i, j, k, q, ids, inside):
    """Fill ids (4,) linear grid indices and inside (4,) of tetrahedron q of cube (i, j, k); return #inside."""
    ny, nz = values.shape[1], values.shape[2]
    n_in = 0
    for c in range(4):
        bits = tets[q, c]
        a, b, e = i + ((bits >> 2) & 1), j + ((bits >> 1) & 1), k + (bits & 1)
        ids[c] = (a * ny + b) * nz + e
        inside[c] = values[a, b, e] < 0.0
        if inside[c]:
            n_in += 1
    return n_in


@numba.njit(cache=True)
def _count_triangles(values, tets, counts):
    """counts[i] = triangles the slab of cubes with first index i emits."""
    nx, ny, nz = values.shape
    ids = np.empty(4, np.int64)
    inside = np.empty(4, np.bool_)
    for i in range(nx - 1):
        total = 0
        for j in range(ny - 1):
            for k in range(nz - 1):
                for q in range(6):
                    n_in = _tet_case(values, tets, i, j, k, q, ids, inside)
                    if n_in == 1 or n_in == 3:
                        total += 1
                    elif n_in == 2:
                        total += 2
        counts[i] = total


@numba.njit(cache=True)
def _edge_key(a, b, total):
    return min(a, b) * total + max(a, b)


@numba.njit(cache=True)
def _emit_triangles(values, tets, offsets, keys):
    """Write each triangle as the keys of the three grid edges its corners lie on, slab by slab (fixed order).

    With the tetrahedron (0, 1, 2, 3) positively oriented, an even permutation keeps it so; the rules below first
    bring the lone (or paired) inside corners to the front with one: 1 inside (a; b, c, d out) → (ab, ac, ad),
    normal away from a; 3 inside (lone outside o) → the same triangle reversed; 2 inside (a, b; c, d out) →
    (ac, ad, bd), (ac, bd, bc). Checked by tests/test_io.py (every edge used once each way, signed volume > 0)."""
    nx, ny, nz = values.shape
    total = values.size
    ids = np.empty(4, np.int64)
    inside = np.empty(4, np.bool_)
    lone_perm = np.array([[0, 1, 2, 3], [1, 0, 3, 2], [2, 3, 0, 1], [3, 2, 1, 0]])
    for i in range(nx - 1):
        row = offsets[i]
        for j in range(ny - 1):
            for k in range(nz - 1):
                for q in range(6):
                    n_in = _tet_case(values, tets, i, j, k, q, ids, inside)
                    if n_in == 0 or n_in == 4:
                        continue
                    if n_in == 1 or n_in == 3:
                        lone = 0
                        for c in range(4):
                            if inside[c] == (n_in == 1):
                                lone = c
                        a, b, c2, d = (ids[lone_perm[lone, 0]], ids[lone_perm[lone, 1]],
                                       ids[lone_perm[lone, 2]], ids[lone_perm[lone, 3]])
                        e_ab, e_ac, e_ad = _edge_key(a, b, total), _edge_key(a, c2, total), _edge_key(a, d, total)
                        keys[row, 0] = e_ab
                        if n_in == 1:
                            keys[row, 1], keys[row, 2] = e_ac, e_ad
                        else:
                            keys[row, 1], keys[row, 2] = e_ad, e_ac
                        row += 1
                    else:
                        # the even permutation (a, b, c, d) with a, b the inside pair
                        if inside[0] and inside[1]:
                            p0, p1, p2, p3 = 0, 1, 2, 3
                        elif inside[2] and inside[3]:
                            p0, p1, p2, p3 = 2, 3, 0, 1
                        elif inside[0] and inside[2]:
                            p0, p1, p2, p3 = 0, 2, 3, 1
                        elif inside[1] and inside[3]:
                            p0, p1, p2, p3 = 1, 3, 2, 0
                        elif inside[0] and inside[3]:
                            p0, p1, p2, p3 = 0, 3, 1, 2
                        else:                                  # inside[1] and inside[2]
                            p0, p1, p2, p3 = 1, 2, 0, 3
                        a, b, c2, d = ids[p0], ids[p1], ids[p2], ids[p3]
                        e_ac, e_ad = _edge_key(a, c2, total), _edge_key(a, d, total)
                        e_bd, e_bc = _edge_key(b, d, total), _edge_key(b, c2, total)
                        keys[row, 0], keys[row, 1], keys[row, 2] = e_ac, e_ad, e_bd
                        keys[row + 1, 0], keys[row + 1, 1], keys[row + 1, 2] = e_ac, e_bd, e_bc
                        row += 2


@numba.njit(cache=True)
def _cell_range(positions, triangles, t, lo, cell, shape, first, last):
    for d in range(3):
        a = positions[triangles[t, 0], d]
        b = positions[triangles[t, 1], d]
        c = positions[triangles[t, 2], d]
        first[d] = min(max(int(np.floor((min(a, b, c) - lo[d]) / cell)), 0), shape[d] - 1)
        last[d] = min(max(int(np.floor((max(a, b, c) - lo[d]) / cell)), 0), shape[d] - 1)


@numba.njit(cache=True)
def _hash_cells(positions, triangles, lo, cell, shape, cursor, items):
    """For each triangle t and each cell its bounding box overlaps: items[cursor[cell]] = t (when items is
    not empty), then cursor[cell] += 1. Count pass: cursor = zeros, items empty → cursor[cell] = triangles
    of the cell. Fill pass: cursor = a copy of starts → items[starts[cell]:starts[cell + 1]] = its triangles."""
    fill = items.shape[0] > 0
    first = np.empty(3, np.int64)
    last = np.empty(3, np.int64)
    for t in range(triangles.shape[0]):
        _cell_range(positions, triangles, t, lo, cell, shape, first, last)
        for i in range(first[0], last[0] + 1):
            for j in range(first[1], last[1] + 1):
                for k in range(first[2], last[2] + 1):
                    key = (i * shape[1] + j) * shape[2] + k
                    if fill:
                        items[cursor[key]] = t
                    cursor[key] += 1


@numba.njit(cache=True)
def _closest(points, positions, triangles, lo, cell, shape, starts, items, out):
    """out[p] = nearest point on any triangle: the 3×3×3 cells around p, else (nothing within cell) all of them."""
    for p in range(points.shape[0]):
        px, py, pz = points[p, 0], points[p, 1], points[p, 2]
        ci = int(np.floor((px - lo[0]) / cell))
        cj = int(np.floor((py - lo[1]) / cell))
        ck = int(np.floor((pz - lo[2]) / cell))
        best = np.inf
        bx, by, bz = px, py, pz
        for i in range(max(ci - 1, 0), min(ci + 1, shape[0] - 1) + 1):
            for j in range(max(cj - 1, 0), min(cj + 1, shape[1] - 1) + 1):
                for k in range(max(ck - 1, 0), min(ck + 1, shape[2] - 1) + 1):
                    key = (i * shape[1] + j) * shape[2] + k
                    for s in range(starts[key], starts[key + 1]):
                        t = items[s]
                        qx, qy, qz = closest_point_on_triangle(px, py, pz, positions[triangles[t, 0]],
                                                          positions[triangles[t, 1]], positions[triangles[t, 2]])
                        dist = (px - qx) ** 2 + (py - qy) ** 2 + (pz - qz) ** 2
                        if dist < best:
                            best, bx, by, bz = dist, qx, qy, qz
        if not best <= cell * cell:                       # nearest may lie beyond the searched cells
            for t in range(triangles.shape[0]):
                qx, qy, qz = closest_point_on_triangle(px, py, pz, positions[triangles[t, 0]],
                                                  positions[triangles[t, 1]], positions[triangles[t, 2]])
                dist = (px - qx) ** 2 + (py - qy) ** 2 + (pz - qz) ** 2
                if dist < best:
                    best, bx, by, bz = dist, qx, qy, qz
        out[p, 0], out[p, 1], out[p, 2] = bx, by, bz


if __name__ == "__main__":
    _sys.exit(main())
