"""Cloth meshes: triangle panels in their rest shape and the link tables derived from them.

A builder (``grid``, ``strip``, ``disc``, ``from_triangles``) validates its inputs and returns a frozen ``Mesh`` of
read-only rest data: positions [m], counter-clockwise triangles, material coordinates ``uv`` [m], the unique edges,
the bending topology (opposite-vertex pairs, Fuhrmann et al. 2003 §3; dihedral quads, Müller et al. 2007) and three
distance-link tables (stretch, shear, bend) that a cloth component turns into constraints. Particle masses follow
Fuhrmann et al. 2003, eq. 1 (``Mesh.vertex_masses``). Every builder derives edges and bending topology with the
same private function, ``_derive_topology``; only ``grid`` replaces the link tables with its regular stencil.

Conventions: SI units, y is up. A panel's front is where its triangle normals, cross(p1 - p0, p2 - p0), point:
+z for a vertical sheet (plane "xy"), +y for a horizontal one (plane "xz", seen from above)::

    plane "xy", front +z                  plane "xz", front +y (looking down)
    y                                     -z
    ^  row ny-1 (top)                     ^  row ny-1 (top: far edge)
    |  ...                                |  ...
    |  row 0 (bottom)                     |  row 0 (bottom: near edge)
    +------> x   col 0 ... nx-1           +------> x   col 0 ... nx-1

Particle (col c, row r) of a grid has index r * nx + c and material coordinate uv = (c·dx, r·dy) [m].
"""
from __future__ import annotations

import math as _math
import numbers as _numbers
from dataclasses import dataclass as _dataclass

import numpy as np

from loom.engine.geometry import grid_triangles as _grid_triangles, triangle_areas as _triangle_areas
from loom.engine.persist import persistent

__all__ = ["Mesh", "grid", "strip", "disc", "from_triangles"]

_PLANES = ("xy", "xz", "yz")
_SIDE_NAMES = ("left", "right", "top", "bottom", "top_corners", "bottom_corners", "corners")
_INT32_MAX = np.iinfo(np.int32).max


# --- the Mesh component ----------------------------------------------------------------------------------------

@persistent
@_dataclass(frozen=True, eq=False)
class Mesh:
    """Triangle mesh of a cloth panel in its rest shape, with the derived link topology.

    Build one with ``grid``, ``strip``, ``disc`` or ``from_triangles`` (which validate their inputs); the
    constructor itself only checks dtypes, shapes and index ranges. Every array is a C-contiguous, read-only copy
    owned by the mesh: it is rest data, shared by every cloth made from it, and never changes.
    """

    positions: np.ndarray
    """Rest positions [m], shape (n, 3), float64."""
    triangles: np.ndarray
    """Vertex indices, shape (t, 3), int32, counter-clockwise seen from the front (normal = cross(p1-p0, p2-p0))."""
    uv: np.ndarray
    """Rest material coordinates [m], shape (n, 2), float64 (grid: column and row distance from the lower left)."""
    edges: np.ndarray
    """Unique undirected triangle edges, shape (e, 2), int32, rows (a, b) with a < b, in lexicographic order."""
    bend_pairs: np.ndarray
    """Opposite vertices of the two triangles at each interior edge (Fuhrmann et al. 2003 §3), shape (b, 2), int32,
    rows (a, b) with a < b, unique, lexicographic; derived from ``bend_quads``."""
    bend_quads: np.ndarray
    """Dihedral stencils (Müller et al. 2007), shape (q, 4), int32: one row (e0, e1, o0, o1) per edge shared by
    exactly two triangles, in ``edges`` order: the edge's endpoints, then the opposite vertices, so that triangles
    (e0, e1, o0) and (e1, e0, o1) are both counter-clockwise as in ``triangles``."""
    stretch_links: np.ndarray
    """Distance links resisting stretch, shape (s, 2), int32 (grid: row and column neighbours; else ``edges``)."""
    shear_links: np.ndarray
    """Distance links resisting shear, shape (h, 2), int32 (grid: both quad diagonals; else empty)."""
    bend_links: np.ndarray
    """Distance links resisting bending, shape (k, 2), int32 (grid: neighbours two apart; else ``bend_pairs``)."""
    grid_shape: tuple[int, int] | None = None
    """(nx, ny) particles for meshes made by ``grid`` or ``strip``, else None (no named sides)."""

    def __post_init__(self) -> None:
        positions = _owned(self.positions, "positions", np.float64, 3)
        n = positions.shape[0]
        object.__setattr__(self, "positions", positions)
        object.__setattr__(self, "uv", _owned(self.uv, "uv", np.float64, 2, rows=n))
        for name, width in (("triangles", 3), ("edges", 2), ("bend_pairs", 2), ("bend_quads", 4),
                            ("stretch_links", 2), ("shear_links", 2), ("bend_links", 2)):
            table = _owned(getattr(self, name), name, np.int32, width)
            if table.size and (table.min() < 0 or table.max() >= n):
                raise ValueError(f"Mesh.{name}: indices {table.min()}..{table.max()} out of range for {n} positions")
            object.__setattr__(self, name, table)
        if self.grid_shape is not None:
            shape = tuple(self.grid_shape)
            if len(shape) != 2 or shape[0] * shape[1] != n:
                raise ValueError(f"Mesh.grid_shape = {self.grid_shape!r}: expected (nx, ny) with nx * ny = {n}")
            object.__setattr__(self, "grid_shape", (int(shape[0]), int(shape[1])))

    @property
    def vertex_count(self) -> int:
        """Number of particles n."""
        return int(self.positions.shape[0])

    @property
    def triangle_count(self) -> int:
        """Number of triangles t."""
        return int(self.triangles.shape[0])

    def triangle_areas(self) -> np.ndarray:
        """Rest area of each triangle [m²], shape (t,), float64: half the length of cross(p1 - p0, p2 - p0)."""
        return _triangle_areas(self.positions, self.triangles)

    def vertex_masses(self, density: float) -> np.ndarray:
        """Particle masses [kg], shape (n,): a third of each adjacent triangle's area (Fuhrmann et al. 2003, eq. 1).

        density is the fabric's mass per area [kg/m²]: about 0.05 for silk, 0.15 for cotton shirting, 0.4 for denim.
        The masses sum to density × total area. Raises ValueError if density is not finite and > 0.
        """
        if isinstance(density, (bool, np.bool_)) or not isinstance(density, _numbers.Real) \
                or not _math.isfinite(density) or density <= 0:
            raise ValueError(f"Mesh.vertex_masses.density = {density!r}: must be finite and > 0 [kg/m²]")
        third = np.repeat(self.triangle_areas() / 3.0, 3)                # each corner owns a third
        return float(density) * np.bincount(self.triangles.ravel(), weights=third, minlength=self.vertex_count)

    def side(self, name: str) -> np.ndarray:
        """Indices (int32) of a grid's particles on one side, in order along it: use it to pin an edge or corners.

        "left" and "right" run bottom to top, "top" and "bottom" left to right; "top_corners" is
        [top-left, top-right], "bottom_corners" [bottom-left, bottom-right], "corners"
        [bottom-left, bottom-right, top-left, top-right].
        Raises ValueError for a mesh that is not a grid or an unknown name.
        """
        nx, ny = self._require_grid(f"Mesh.side({name!r})")
        if not isinstance(name, str) or name not in _SIDE_NAMES:
            raise ValueError(f"Mesh.side({name!r}): unknown side, expected one of {', '.join(_SIDE_NAMES)}")
        bottom_left, bottom_right, top_left, top_right = 0, nx - 1, (ny - 1) * nx, ny * nx - 1
        indices = {
            "left": np.arange(ny) * nx,
            "right": np.arange(ny) * nx + nx - 1,
            "bottom": np.arange(nx),
            "top": top_left + np.arange(nx),
            "top_corners": [top_left, top_right],
            "bottom_corners": [bottom_left, bottom_right],
            "corners": [bottom_left, bottom_right, top_left, top_right],
        }[name]
        return np.asarray(indices, dtype=np.int32)

    def index(self, col: int, row: int) -> int:
        """Index of a grid's particle at column col (0..nx-1, left to right) and row row (0..ny-1, bottom to top).

        Equals row * nx + col. Raises ValueError for a mesh that is not a grid or a column or row out of range.
        """
        nx, ny = self._require_grid(f"Mesh.index({col!r}, {row!r})")
        for field, value, count in (("col", col, nx), ("row", row, ny)):
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
                    or not 0 <= value < count:
                raise ValueError(f"Mesh.index.{field} = {value!r}: expected an integer in 0..{count - 1}")
        return int(row) * nx + int(col)

    def _require_grid(self, call: str) -> tuple[int, int]:
        """Return (nx, ny), or raise ValueError naming call if this mesh was not made by grid() or strip()."""
        if self.grid_shape is None:
            raise ValueError(f"{call}: only meshes made by grid() or strip() have sides and (col, row) indices; "
                             "this mesh has grid_shape None")
        return self.grid_shape


# --- builders --------------------------------------------------------------------------------------------------

def grid(nx: int, ny: int, width: float, height: float, *,
         center: tuple[float, float, float] = (0.0, 0.0, 0.0), plane: str = "xy") -> Mesh:
    """Rectangular sheet of nx × ny particles spanning width × height [m]: the standard flag, curtain or tablecloth.

    plane "xy" is a vertical sheet facing +z (row 0 at the bottom); "xz" a horizontal one facing +y (row 0 on the
    +z side, so "top" is the far edge seen from +z); "yz" a vertical sheet facing +x (row 0 at the bottom, columns
    running toward -z, i.e. left to right seen from +x): the "xy" sheet turned 90° about y, e.g. a cape behind a
    hero who runs along x, free to swing back and forth in x. center [m] is the sheet's middle. Quads are split along
    alternating (checkerboard) diagonals, so the sheet has no preferred shear direction, and all triangles are
    counter-clockwise seen from the front. Link tables use the classic Provot stencil: stretch links between row and
    column neighbours, shear links along both diagonals of every quad, bend links between particles two apart.
    Raises ValueError for nx or ny not an integer >= 2, width or height not finite and > 0, or a bad plane/center.
    """
    nx = _check_count("grid", "nx", nx, 2, "need at least 2 particles per side")
    ny = _check_count("grid", "ny", ny, 2, "need at least 2 particles per side")
    width = _check_length("grid", "width", width)
    height = _check_length("grid", "height", height)
    return _grid(nx, ny, width, height, _check_center("grid", center), _check_plane("grid", plane), "grid")


def strip(count: int, length: float, width: float, *,
          center: tuple[float, float, float] = (0.0, 0.0, 0.0), plane: str = "xy") -> Mesh:
    """Ribbon of count × 2 particles, length [m] along x and width [m] across: for ropes, streamers and tails.

    Same as grid(nx=count, ny=2, width=length, height=width, center=center, plane=plane), so side() names work.
    Raises ValueError for count not an integer >= 2 or length/width not finite and > 0.
    """
    count = _check_count("strip", "count", count, 2, "need at least 2 particles along the ribbon")
    length = _check_length("strip", "length", length)
    width = _check_length("strip", "width", width)
    return _grid(count, 2, length, width, _check_center("strip", center), _check_plane("strip", plane), "strip")


def disc(radius: float, rings: int, *,
         center: tuple[float, float, float] = (0.0, 0.0, 0.0), plane: str = "xz") -> Mesh:
    """Round panel of a centre particle and `rings` hexagonal rings: a round tablecloth or a parachute canopy.

    Ring k (1..rings) lies at radius k·radius/rings [m] with 6k particles evenly spaced, angle starting at 0 (+x);
    the band between rings k-1 and k holds 6(2k-1) triangles, so the disc has 1 + 3·rings·(rings+1) particles and
    6·rings² nearly equilateral triangles. plane "xz" (default) is horizontal facing +y, "xy" vertical facing +z,
    "yz" vertical facing +x.
    stretch_links are the edges, bend_links the bend pairs (Fuhrmann et al. 2003 §3), no shear links.
    uv [m] is measured from the lower-left corner of the circle's bounding box, (cx - radius, ...).
    Raises ValueError for radius not finite and > 0, rings not an integer >= 1, or a bad plane/center.
    """
    radius = _check_length("disc", "radius", radius)
    rings = _check_count("disc", "rings", rings, 1, "need at least 1 ring")
    center = _check_center("disc", center)
    plane = _check_plane("disc", plane)
    if 1 + 3 * rings * (rings + 1) > _INT32_MAX:
        raise ValueError(f"disc.rings = {rings}: too many particles for int32 indices")

    u_parts, v_parts, tri_parts = [np.zeros(1)], [np.zeros(1)], []
    sector = np.arange(6)[:, None]
    for k in range(1, rings + 1):                                       # one vectorised band per ring
        angle = 2.0 * np.pi * np.arange(6 * k) / (6 * k)
        u_parts.append(k * radius / rings * np.cos(angle))
        v_parts.append(k * radius / rings * np.sin(angle))
        outer0, inner0 = 1 + 3 * k * (k - 1), 1 + 3 * (k - 1) * (k - 2)  # first index of ring k and ring k-1
        i = np.arange(k)[None, :]                                       # k triangles per sector on ring k ...
        o0, o1 = outer0 + (sector * k + i) % (6 * k), outer0 + (sector * k + i + 1) % (6 * k)
        if k == 1:
            tri_parts.append(np.stack(np.broadcast_arrays(o0, o1, 0), axis=-1).reshape(-1, 3))
            continue
        i0 = inner0 + (sector * (k - 1) + i) % (6 * (k - 1))
        tri_parts.append(np.stack([o0, o1, i0], axis=-1).reshape(-1, 3))
        i0, i1, o1 = i0[:, :-1], i0[:, 1:], o1[:, :-1]                  # ... and k - 1 with an edge on ring k-1
        tri_parts.append(np.stack([i0, o1, i1], axis=-1).reshape(-1, 3))
    u, v = np.concatenate(u_parts), np.concatenate(v_parts)
    triangles = np.concatenate(tri_parts).astype(np.int32)
    positions = _place(u, v, center, plane)
    uv = np.stack([u + radius, v + radius], axis=1)
    return _assemble(positions, triangles, uv, "disc")


def from_triangles(positions: np.ndarray, triangles: np.ndarray, uv: np.ndarray | None = None) -> Mesh:
    """Mesh from any triangle soup that forms a consistently wound surface: imported garments, hand-made panels.

    positions (n, 3) [m] finite reals; triangles (t, 3) integers (t >= 1), counter-clockwise seen from the front
    and wound consistently (two triangles sharing an edge traverse it in opposite directions); uv (n, 2) [m] rest
    material coordinates, or None for the projection of positions onto their best-fit plane (the two leading
    principal axes through the centroid, oriented so the triangles stay counter-clockwise), shifted so its minimum
    is 0. stretch_links are the edges, bend_links the bend pairs (Fuhrmann et al. 2003 §3), no shear links. Edges
    shared by more than two triangles (non-manifold) are allowed but get no bend quad.

    Raises ValueError naming the row for: bad shape or dtype (triangles must be an integer array), empty arrays,
    non-finite values, indices out of range, a repeated vertex, zero area (<= 1e-12 × max(1, bbox diagonal)² [m²]),
    duplicate triangles (same vertex set), a position no triangle uses, or inconsistent winding across an edge.
    """
    pos = _as_real_array("from_triangles", "positions", positions, 3, "[m]", need="need at least 3 positions")
    n = pos.shape[0]
    tri = _as_index_array("from_triangles", "triangles", triangles)
    out_of_range = np.flatnonzero(((tri < 0) | (tri >= n)).any(axis=1))
    if out_of_range.size:
        k = out_of_range[0]
        raise ValueError(f"from_triangles.triangles[{k}] = {_fmt(tri[k])}: index out of range for {n} positions")
    tri = tri.astype(np.int32)
    repeated = np.flatnonzero((tri[:, 0] == tri[:, 1]) | (tri[:, 1] == tri[:, 2]) | (tri[:, 0] == tri[:, 2]))
    if repeated.size:
        k = repeated[0]
        raise ValueError(f"from_triangles.triangles[{k}] = {_fmt(tri[k])}: degenerate triangle (repeated vertex)")
    _reject_duplicate_triangles(tri)
    diagonal = float(np.linalg.norm(pos.max(axis=0) - pos.min(axis=0)))
    min_area = 1e-12 * max(1.0, diagonal) ** 2
    flat = np.flatnonzero(_triangle_areas(pos, tri) <= min_area)
    if flat.size:
        k = flat[0]
        raise ValueError(f"from_triangles.triangles[{k}] = {_fmt(tri[k])}: zero-area triangle "
                         f"(area <= {min_area:g} m²)")
    unused = np.flatnonzero(np.bincount(tri.ravel(), minlength=n) == 0)
    if unused.size:
        raise ValueError(f"from_triangles.positions[{unused[0]}]: not used by any triangle")
    if uv is None:
        uv = _best_fit_plane_coordinates(pos, tri)
    else:
        uv = _as_real_array("from_triangles", "uv", uv, 2, "[m]", rows=n)
    return _assemble(pos, tri, uv, "from_triangles")


# --- private: shared topology ----------------------------------------------------------------------------------

def _derive_topology(triangles: np.ndarray, vertex_count: int,
                     where: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edges, bend quads and bend pairs of a triangle list, shared by every builder (Fuhrmann et al. 2003 §3).

    triangles (t, 3) int; returns edges (e, 2), bend_quads (q, 4) and bend_pairs (b, 2), all int32, in the orders
    documented on ``Mesh``. Each triangle (a, b, c) contributes three half-edges a→b, b→c, c→a with opposite
    vertices c, a, b; sorting half-edges by their undirected key groups each edge's triangles. An edge with exactly
    two half-edges is interior: its quad starts with the half-edge of the lower-numbered triangle, so (e0, e1, o0)
    is a rotation of that triangle and, with consistent winding, (e1, e0, o1) a rotation of the other.
    Raises ValueError (naming where) if two triangles traverse a shared edge in the same direction.
    """
    tri = triangles.astype(np.int64)
    start = tri.ravel()                                   # half-edge h belongs to triangle h // 3
    end = tri[:, [1, 2, 0]].ravel()
    opposite = tri[:, [2, 0, 1]].ravel()
    key = _pair_key(start, end, vertex_count)
    order = np.argsort(key, kind="stable")               # stable: lower triangle first within an edge
    sorted_key = key[order]
    first = np.flatnonzero(np.r_[True, sorted_key[1:] != sorted_key[:-1]])
    count = np.diff(np.r_[first, sorted_key.size])
    edges = np.stack([sorted_key[first] // vertex_count, sorted_key[first] % vertex_count], axis=1)

    interior = first[count == 2]                         # non-manifold edges (count > 2) get no quad
    h0, h1 = order[interior], order[interior + 1]
    same_way = np.flatnonzero(start[h0] == start[h1])
    if same_way.size:
        a, b = order[interior[same_way[0]]], order[interior[same_way[0]] + 1]
        t0, t1 = a // 3, b // 3
        raise ValueError(f"{where}.triangles[{t0}] = {_fmt(tri[t0])} and triangles[{t1}] = {_fmt(tri[t1])}: "
                         f"inconsistent winding, both traverse edge {start[a]} -> {end[a]}; reverse one of them "
                         "so neighbouring triangles are all counter-clockwise seen from the same side")
    quads = np.stack([start[h0], end[h0], opposite[h0], opposite[h1]], axis=1)
    # unique on int64 keys: np.unique(..., axis=0) on the rows took 0.1 s of a 256 × 256 grid's 0.13 s build
    pair_key = np.unique(_pair_key(quads[:, 2], quads[:, 3], vertex_count))
    pairs = np.stack([pair_key // vertex_count, pair_key % vertex_count], axis=1)
    return edges.astype(np.int32), quads.astype(np.int32), pairs.astype(np.int32)


def _pair_key(a: np.ndarray, b: np.ndarray, vertex_count: int) -> np.ndarray:
    """Int64 key of each unordered pair {a, b}; sorting keys sorts the pairs (low, high) lexicographically."""
    return np.minimum(a, b).astype(np.int64) * vertex_count + np.maximum(a, b)


def _assemble(positions: np.ndarray, triangles: np.ndarray, uv: np.ndarray, where: str) -> Mesh:
    """Mesh whose link tables are the generic ones: stretch = edges, no shear, bend = bend pairs (disc, soup)."""
    edges, quads, pairs = _derive_topology(triangles, positions.shape[0], where)
    return Mesh(positions=positions, triangles=triangles, uv=uv, edges=edges, bend_pairs=pairs, bend_quads=quads,
                stretch_links=edges, shear_links=np.zeros((0, 2), np.int32), bend_links=pairs, grid_shape=None)


def _grid(nx: int, ny: int, width: float, height: float, center: np.ndarray, plane: str, where: str) -> Mesh:
    """Build a validated grid (see ``grid``); where names the public caller in errors."""
    if nx * ny > _INT32_MAX:
        raise ValueError(f"{where}: {nx} × {ny} = {nx * ny} particles exceeds the int32 index range")
    col, row = np.meshgrid(np.arange(nx), np.arange(ny))            # (ny, nx), row-major like the indices
    u, v = (col * (width / (nx - 1))).ravel(), (row * (height / (ny - 1))).ravel()
    positions = _place(u - width / 2.0, v - height / 2.0, center, plane)
    uv = np.stack([u, v], axis=1)

    idx = np.arange(nx * ny).reshape(ny, nx)
    p00, p10, p01, p11 = idx[:-1, :-1], idx[:-1, 1:], idx[1:, :-1], idx[1:, 1:]    # quad corners (col, row)
    triangles = _grid_triangles(nx, ny)                                             # checkerboard diagonals

    def links(*pairs: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        return np.concatenate([np.stack([a.ravel(), b.ravel()], axis=1) for a, b in pairs]).astype(np.int32)

    edges, quads, bend_pairs = _derive_topology(triangles, nx * ny, where)
    return Mesh(positions=positions, triangles=triangles, uv=uv, edges=edges, bend_pairs=bend_pairs,
                bend_quads=quads,
                stretch_links=links((idx[:, :-1], idx[:, 1:]), (idx[:-1, :], idx[1:, :])),
                shear_links=np.stack([p00, p11, p10, p01], axis=-1).reshape(-1, 2).astype(np.int32),
                bend_links=links((idx[:, :-2], idx[:, 2:]), (idx[:-2, :], idx[2:, :])),
                grid_shape=(nx, ny))


def _place(u: np.ndarray, v: np.ndarray, center: np.ndarray, plane: str) -> np.ndarray:
    """Positions (n, 3) [m] of in-plane coordinates u (right) and v (up the sheet) [m] about center.

    "xy": (cx + u, cy + v, cz), front +z. "xz": (cx + u, cy, cz - v), front +y: the "xy" sheet tipped back onto
    the floor (a rotation about x). "yz": (cx, cy + v, cz - u), front +x: the "xy" sheet turned 90° about y. Both
    are rotations, so counter-clockwise triangles stay counter-clockwise seen from the front.
    """
    cx, cy, cz = center
    if plane == "xy":
        return np.stack([cx + u, cy + v, np.full_like(u, cz)], axis=1)
    if plane == "yz":
        return np.stack([np.full_like(u, cx), cy + v, cz - u], axis=1)
    return np.stack([cx + u, np.full_like(u, cy), cz - v], axis=1)


def _best_fit_plane_coordinates(positions: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Coordinates [m], shape (n, 2), of positions projected onto their best-fit plane, minimum shifted to 0.

    Axes are the two leading principal axes through the centroid. Signs are fixed so the result is deterministic:
    the first axis's largest component is positive, and the second makes first × second agree with the summed
    triangle normal (so the triangles stay counter-clockwise in uv).
    """
    centred = positions - positions.mean(axis=0)
    _, vectors = np.linalg.eigh(centred.T @ centred)               # eigenvalues ascending
    axis_u, axis_v = vectors[:, 2], vectors[:, 1]
    if axis_u[np.argmax(np.abs(axis_u))] < 0:
        axis_u = -axis_u
    p0, p1, p2 = (positions[triangles[:, k]] for k in range(3))
    if np.dot(np.cross(axis_u, axis_v), np.cross(p1 - p0, p2 - p0).sum(axis=0)) < 0:
        axis_v = -axis_v
    uv = centred @ np.stack([axis_u, axis_v], axis=1)
    return uv - uv.min(axis=0)


def _reject_duplicate_triangles(triangles: np.ndarray) -> None:
    """Raise ValueError naming two rows of from_triangles.triangles with the same vertex set, if any."""
    vertex_sets = np.sort(triangles, axis=1)
    order = np.lexsort(vertex_sets.T[::-1])                       # stable: equal sets keep row order
    ordered = vertex_sets[order]
    same = np.flatnonzero((ordered[1:] == ordered[:-1]).all(axis=1))
    if same.size:
        a, b = order[same[0]], order[same[0] + 1]
        raise ValueError(f"from_triangles.triangles[{a}] = {_fmt(triangles[a])} and triangles[{b}] = "
                         f"{_fmt(triangles[b])}: duplicate triangle (same vertices)")


# --- private: validation ---------------------------------------------------------------------------------------

def _check_count(where: str, field: str, value: object, minimum: int, need: str) -> int:
    """Return value as int, or raise ValueError unless it is an integer (not bool) >= minimum."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{where}.{field} = {value!r}: must be an integer; {need}")
    if value < minimum:
        raise ValueError(f"{where}.{field} = {value}: {need}")
    return int(value)


def _check_length(where: str, field: str, value: object) -> float:
    """Return value as float, or raise ValueError unless it is a finite real number > 0 [m]."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, _numbers.Real) \
            or not _math.isfinite(value) or value <= 0:
        raise ValueError(f"{where}.{field} = {value!r}: must be finite and > 0 [m]")
    return float(value)


def _check_center(where: str, center: object) -> np.ndarray:
    """Return center as a float64 (3,) array, or raise ValueError unless it is 3 finite numbers [m]."""
    try:
        array = np.asarray(center, dtype=np.float64)
    except (TypeError, ValueError):
        array = None
    if array is None or array.shape != (3,) or not np.isfinite(array).all():
        raise ValueError(f"{where}.center = {center!r}: expected 3 finite numbers (x, y, z) [m]")
    return array


def _check_plane(where: str, plane: object) -> str:
    """Return plane, or raise ValueError unless it is one of _PLANES."""
    if not isinstance(plane, str) or plane not in _PLANES:
        raise ValueError(f"{where}.plane = {plane!r}: expected one of {', '.join(_PLANES)}")
    return plane


def _as_real_array(where: str, field: str, value: object, width: int, unit: str, *,
                   rows: int | None = None, need: str = "") -> np.ndarray:
    """Float64 C-contiguous copy of value, shape (rows or any >= 1, width); raise ValueError naming the bad row."""
    name = f"{where}.{field}"
    expected = f"({rows if rows is not None else 'n'}, {width})"
    try:
        array = np.asarray(value)
    except ValueError:                                           # ragged nested lists
        raise ValueError(f"{name}: not a rectangular array, expected shape {expected} {unit}") from None
    if array.size == 0:
        raise ValueError(f"{name}: empty, expected shape {expected} {unit}" + (f"; {need}" if need else ""))
    if array.ndim != 2 or array.shape[1] != width or (rows is not None and array.shape[0] != rows):
        raise ValueError(f"{name}: shape {array.shape}, expected {expected} {unit}")
    if array.dtype.kind not in "iuf":
        raise ValueError(f"{name}: dtype {array.dtype}, expected real numbers {unit}")
    array = np.array(array, dtype=np.float64, order="C")
    bad = np.flatnonzero(~np.isfinite(array).all(axis=1))
    if bad.size:
        raise ValueError(f"{name}[{bad[0]}] = {_fmt(array[bad[0]])}: must be finite {unit}")
    return array


def _as_index_array(where: str, field: str, value: object) -> np.ndarray:
    """value as an integer array of shape (t >= 1, 3), any integer dtype; raise ValueError for bad shape or dtype."""
    name = f"{where}.{field}"
    try:
        array = np.asarray(value)
    except ValueError:
        raise ValueError(f"{name}: not a rectangular array, expected shape (t, 3) of integers") from None
    if array.size == 0:
        raise ValueError(f"{name}: empty, expected shape (t, 3) of integers; need at least one triangle")
    if array.ndim != 2 or array.shape[1] != 3:
        raise ValueError(f"{name}: shape {array.shape}, expected (t, 3) of integers")
    if array.dtype.kind not in "iu":
        raise ValueError(f"{name}: dtype {array.dtype}, expected an integer array of vertex indices")
    return array


def _owned(value: object, field: str, dtype: type, width: int, *, rows: int | None = None) -> np.ndarray:
    """Read-only C-contiguous copy of a Mesh field; raise ValueError for a wrong dtype or shape."""
    array = np.asarray(value)
    if array.dtype != dtype:
        raise ValueError(f"Mesh.{field}: dtype {array.dtype}, expected {np.dtype(dtype)}")
    if array.ndim != 2 or array.shape[1] != width or (rows is not None and array.shape[0] != rows):
        raise ValueError(f"Mesh.{field}: shape {array.shape}, expected ({rows if rows is not None else '·'}, "
                         f"{width})")
    array = np.array(array, order="C", copy=True)               # the mesh owns its rest data
    array.flags.writeable = False
    return array


def _fmt(row: np.ndarray) -> str:
    """A table row as "[3, 3, 7]" or "[nan, 0, 0]" for error messages."""
    return "[" + ", ".join(f"{x:g}" if isinstance(x, float) else str(x) for x in row.tolist()) + "]"
