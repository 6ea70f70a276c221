"""Surface: what every renderer draws from a cloth — smooth normals, Loop subdivision, per-vertex strain.

Not a system: shared kernels and a per-cloth cache (``ClothSurface``) that the GL renderer
(systems/render/gl.py) and the software renderer (systems/render/soft.py) both use, so neither imports
the other. The normals kernel itself is ``loom.engine.geometry``'s (re-exported here as ``vertex_normals``),
shared with the mass-spring model and the thickness export. Following Fisher's "Rendering" notes
(seeds/fisher-cloth-notes.txt):

- **Normals** are area-weighted vertex normals: the sum of the unnormalised face normals
  cross(p1 − p0, p2 − p0) (each 2·area long) of the triangles around a vertex, normalised. Fisher colours
  them as RGB (the renderers' "normals" view) "because it makes it obvious what the orientation of the
  cloth at any point is".
- **Loop subdivision** ("we can take a low-resolution cloth simulation output, and construct a
  high-resolution refined mesh … In the case below, I use the loop subdivision scheme"): each level splits
  every triangle in four and smooths. Every new vertex is a fixed linear combination of the particles, so
  the whole 0–2 level scheme is one sparse matrix S (m, n), built ONCE per topology (``loop_stencil``, CSR)
  and applied per frame by one numba kernel (``subdivide``): x_fine = S · x. Rest UVs go through the same
  matrix once.
- **Strain** per particle is the mean relative elongation |xᵢ − xⱼ| / rest − 1 of its structural links,
  for the strain heatmap.

Loop's rules (Loop 1987), n the particles, k a vertex's valence:

    interior vertex   (1 − k·β)·v + β·Σ neighbours,  β = (5/8 − (3/8 + ¼·cos(2π/k))²) / k
    interior edge     3/8·(a + b) + 1/8·(c + d)       (c, d: the vertices opposite the edge)
    boundary vertex   3/4·v + 1/8·(p + q)             (p, q: its two boundary neighbours)
    boundary edge     1/2·(a + b)
    corner            v (kept)                        (boundary turning by more than ``CORNER_ANGLE``
                                                       in the rest shape, or not exactly two boundary edges)

The weights of each row sum to 1, so the subdivided surface of a flat sheet stays in its plane and
corners (where cloth is usually pinned) stay put. Edges shared by more than two triangles are treated
as boundary creases.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from loom.components.cloth import STRETCH
from loom.engine.geometry import vertex_normals, vertex_normals_into
from loom.launch.cold_kernels import called_from, python_twin

CORNER_ANGLE = math.radians(40.0)
"""A boundary vertex whose boundary turns by more than this in the rest shape is a corner and is kept
(a grid's four corners turn by 90°; a 24-segment disc's rim by 15° and stays smooth)."""
MAX_LEVELS = 2
"""Most subdivision levels supported: each quadruples the triangles (2 levels: 16× the triangles)."""


@dataclass(eq=False)
class LoopStencil:
    """``levels`` of Loop subdivision as one sparse matrix: fine vertex i = Σ weights · particle indices.

    indptr (m + 1,) int64, indices (nnz,) int32 and weights (nnz,) float64 are the CSR rows of the
    (m, n) matrix; ``triangles`` (4^levels · t, 3) int32 are the fine triangles, counter-clockwise like
    the coarse ones. The first n fine vertices are the (smoothed) particles, in order."""

    levels: int
    """Subdivision levels, 0–2 (0: the identity)."""
    source_count: int
    """Coarse vertices n (the cloth's particles)."""
    vertex_count: int
    """Fine vertices m."""
    indptr: np.ndarray
    """CSR row offsets (m + 1,) int64."""
    indices: np.ndarray
    """CSR column (particle) indices (nnz,) int32, ascending within a row."""
    weights: np.ndarray
    """CSR weights (nnz,) float64; each row sums to 1."""
    triangles: np.ndarray
    """Fine triangles (4^levels · t, 3) int32, counter-clockwise seen from the front."""


def loop_stencil(triangles: Any, rest_x: Any, levels: int) -> LoopStencil:
    """Build the sparse matrix of ``levels`` (0–2) Loop subdivision steps of a triangle mesh, once per topology.

    triangles (t, 3) int, counter-clockwise; rest_x (n, 3) [m] rest positions (only used to find corners,
    whose boundary turns by more than ``CORNER_ANGLE``). Raises ValueError for levels outside 0–2 or
    indices out of range. Cost: a few ms for a 64 × 64 grid at 2 levels; never call it per frame."""
    if isinstance(levels, bool) or not isinstance(levels, (int, np.integer)) or not 0 <= levels <= MAX_LEVELS:
        raise ValueError(f"loop_stencil levels = {levels!r}: must be 0, 1 or 2")
    tris = np.ascontiguousarray(triangles, dtype=np.int64)
    rest = np.ascontiguousarray(rest_x, dtype=np.float64)
    n = rest.shape[0]
    if tris.ndim != 2 or tris.shape[1] != 3 or rest.ndim != 2 or rest.shape[1] != 3:
        raise ValueError(f"loop_stencil: triangles {tris.shape} and rest_x {rest.shape}, expected (t, 3) and (n, 3)")
    if tris.size and (tris.min() < 0 or tris.max() >= n):
        raise ValueError(f"loop_stencil triangles: indices {tris.min()}..{tris.max()} out of range for {n} vertices")
    indptr = np.arange(n + 1, dtype=np.int64)
    indices = np.arange(n, dtype=np.int32)
    weights = np.ones(n)
    for _ in range(int(levels)):
        l_ptr, l_idx, l_w, tris = _loop_level(tris, rest)
        rest = np.zeros((l_ptr.size - 1, 3))
        indptr, indices, weights = _csr_matmul(l_ptr, l_idx, l_w, indptr, indices, weights, n)
        _apply_csr_call(indptr, indices, weights, np.ascontiguousarray(rest_x, dtype=np.float64), rest)
    return LoopStencil(levels=int(levels), source_count=n, vertex_count=indptr.size - 1, indptr=indptr,
                       indices=indices, weights=weights, triangles=np.ascontiguousarray(tris, dtype=np.int32))


def subdivide(stencil: LoopStencil, values: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Return the fine values S · values: values (n, k) or (n,) float64 per particle → (m, k) or (m,).

    Positions, rest UVs, strains … anything linear. ``out`` (preallocated, C-contiguous float64) avoids
    an allocation per frame."""
    src = np.ascontiguousarray(values, dtype=np.float64)
    if src.shape[0] != stencil.source_count:
        raise ValueError(f"subdivide values: {src.shape[0]} rows, the stencil expects {stencil.source_count}")
    shape = (stencil.vertex_count,) + src.shape[1:]
    if out is None:
        out = np.empty(shape)
    elif out.shape != shape or out.dtype != np.float64 or not out.flags.c_contiguous:
        raise ValueError(f"subdivide out: shape {out.shape} dtype {out.dtype}, expected C-contiguous {shape} float64")
    _apply_csr_call(stencil.indptr, stencil.indices, stencil.weights, src.reshape(src.shape[0], -1),
               out.reshape(shape[0], -1))
    return out


def vertex_strain(x: np.ndarray, link_i: np.ndarray, link_j: np.ndarray, link_rest: np.ndarray,
                  link_use: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Return each particle's mean link strain (n,) [-]: mean of |xᵢ − xⱼ| / rest − 1 over its used links.

    x (n, 3) [m]; link_i, link_j (c,) int32; link_rest (c,) [m]; link_use (c,) bool selects the links
    (structural ones for the heatmap). Positive is stretch, negative compression; 0 for a particle with no
    used link."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    if out is None:
        out = np.empty(x.shape[0])
    _vertex_strain(link_i, link_j, link_rest, link_use, x, out)
    return out


class ClothSurface:
    """One cloth's drawing data at ``levels`` of subdivision: fine positions, normals, rest UVs, strains.

    Build it once per cloth and topology (``ClothSurface(cloth, levels)``; ``matches`` says whether a
    cloth still fits, e.g. after tearing rebuilt its triangles), then call ``update(cloth)`` every frame:
    it writes the preallocated arrays in place with numba kernels, no Python loop over vertices.

        x (m, 3) [m] · normal (m, 3) unit · uv (m, 2) [m] rest material coordinates (constant) ·
        strain (m,) [-] (filled when ``update(strain=True)``) · triangles (t_fine, 3) int32
    """

    def __init__(self, cloth: Any, levels: int) -> None:
        self.levels = int(levels)
        """Loop subdivision levels 0–2 (0: the particles themselves)."""
        self._triangles_source = cloth.triangles              # held, so `is` detects a replaced array
        self._key = _topology_key(cloth, self.levels)
        n = cloth.x.shape[0]
        self.stencil = loop_stencil(cloth.triangles, cloth.rest_x, self.levels) if self.levels else None
        """The subdivision matrix (``LoopStencil``), or None at 0 levels."""
        self.triangles = self.stencil.triangles if self.stencil else np.ascontiguousarray(cloth.triangles, np.int32)
        """Triangles (t_fine, 3) int32 into ``x``, counter-clockwise seen from the front; fixed for this surface."""
        m = self.stencil.vertex_count if self.stencil else n
        self.vertex_count = m
        """Vertices m of the surface (the cloth's particles n at 0 levels)."""
        self.uv = subdivide(self.stencil, cloth.rest_uv) if self.stencil else cloth.rest_uv.astype(np.float64)
        """Rest material coordinates (m, 2) float64 [m] (``Cloth.rest_uv``, subdivided); constant."""
        self.x = np.empty((m, 3))
        """Vertex positions (m, 3) float64 [m], y up, written by ``update``."""
        self.normal = np.zeros((m, 3))
        """Unit area-weighted vertex normals (m, 3) float64 towards the front, written by ``update``."""
        self.strain = np.zeros(m)
        """Per-vertex mean structural strain (m,) [-], written by ``update(strain=True)``."""
        self.particle_strain = np.zeros(n)
        """Per-particle mean structural strain [-], (n,), filled by ``update(strain=True)``."""
        kinds = np.asarray(cloth.link_kind)[cloth.link_order] if cloth.link_i.size else np.zeros(0, np.int8)
        use = kinds == STRETCH
        self._link_use = np.ascontiguousarray(use if use.any() else np.ones(kinds.shape, bool))

    def matches(self, cloth: Any, levels: int) -> bool:
        """True if this surface still fits ``cloth`` at ``levels`` (same particles, same triangle array)."""
        return cloth.triangles is self._triangles_source and self._key == _topology_key(cloth, int(levels))

    def update(self, cloth: Any, *, strain: bool = False, x: np.ndarray | None = None) -> None:
        """Refresh x, normal (and strain when asked) from the cloth's current positions, in place; ``x`` (n, 3)
        [m], when given, is drawn instead of ``cloth.x`` (the positions between two steps: ``between.StepBlend``)."""
        source = cloth.x if x is None else x
        if self.stencil is not None:
            _apply_csr_call(self.stencil.indptr, self.stencil.indices, self.stencil.weights, source, self.x)
        else:
            self.x[:] = source
        vertex_normals_into_call(self.triangles, self.x, self.normal)
        if strain:
            _vertex_strain(cloth.link_i, cloth.link_j, cloth.link_rest, self._link_use, source, self.particle_strain)
            if self.stencil is not None:
                _apply_csr_call(self.stencil.indptr, self.stencil.indices, self.stencil.weights,
                                self.particle_strain.reshape(-1, 1), self.strain.reshape(-1, 1))
            else:
                self.strain[:] = self.particle_strain


def _topology_key(cloth: Any, levels: int) -> tuple:
    """What must not change for a ClothSurface to stay valid (tearing may bump ``topology_version``)."""
    return (levels, cloth.x.shape[0], cloth.triangles.shape[0], cloth.link_i.shape[0],
            getattr(cloth, "topology_version", None))


# --- one Loop level: topology → CSR rows (built once, vectorised numpy) ------------------------------------------
def _loop_level(tris: np.ndarray, rest: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One Loop step of triangles (t, 3) int64 with rest positions (n, 3): CSR (n + e, n) and the 4t triangles."""
    n, t = rest.shape[0], tris.shape[0]
    a = tris.ravel()                                        # half-edge (a → b) of triangle f, side k,
    b = np.roll(tris, -1, axis=1).ravel()                   # with c the vertex opposite it
    c = np.roll(tris, -2, axis=1).ravel()
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    keys, edge_of_half, count = np.unique(lo * n + hi, return_inverse=True, return_counts=True)
    edge_of_half = edge_of_half.ravel()
    e = keys.size
    e_lo, e_hi = keys // n, keys % n
    interior = count == 2
    order = np.argsort(edge_of_half, kind="stable")
    start = np.zeros(e + 1, np.int64)
    np.cumsum(count, out=start[1:])
    opp0 = c[order[start[:-1]]]
    opp1 = c[order[np.minimum(start[:-1] + 1, start[1:] - 1)]]

    valence = np.bincount(e_lo, minlength=n) + np.bincount(e_hi, minlength=n)
    b_lo, b_hi = e_lo[~interior], e_hi[~interior]
    boundary_count = np.bincount(b_lo, minlength=n) + np.bincount(b_hi, minlength=n)
    # The two boundary neighbours of each boundary vertex: sort (vertex, neighbour) pairs by vertex.
    pv = np.concatenate([b_lo, b_hi])
    pn = np.concatenate([b_hi, b_lo])
    by_vertex = np.argsort(pv, kind="stable")
    pv, pn = pv[by_vertex], pn[by_vertex]
    first = np.searchsorted(pv, np.arange(n))
    regular_boundary = boundary_count == 2
    smooth = np.zeros(n, bool)
    rb = np.flatnonzero(regular_boundary)
    if rb.size:
        p, q = pn[first[rb]], pn[first[rb] + 1]
        d1 = rest[rb] - rest[p]
        d2 = rest[q] - rest[rb]
        norms = np.linalg.norm(d1, axis=1) * np.linalg.norm(d2, axis=1)
        cos_turn = np.einsum("ij,ij->i", d1, d2) / np.where(norms > 0.0, norms, 1.0)
        smooth[rb] = (norms > 0.0) & (cos_turn >= math.cos(CORNER_ANGLE))
    is_interior_vertex = (boundary_count == 0) & (valence > 0)

    k = np.maximum(valence, 1).astype(np.float64)
    beta = (5.0 / 8.0 - (3.0 / 8.0 + 0.25 * np.cos(2.0 * math.pi / k)) ** 2) / k
    self_weight = np.ones(n)
    self_weight[is_interior_vertex] = 1.0 - valence[is_interior_vertex] * beta[is_interior_vertex]
    self_weight[smooth] = 0.75

    rows, cols, vals = [np.arange(n)], [np.arange(n)], [self_weight]
    for v, u in ((e_lo, e_hi), (e_hi, e_lo)):               # interior vertices: β to every neighbour
        use = is_interior_vertex[v]
        rows.append(v[use]), cols.append(u[use]), vals.append(beta[v[use]])
    for v, u in ((b_lo, b_hi), (b_hi, b_lo)):               # smooth boundary vertices: 1/8 along the boundary
        use = smooth[v]
        rows.append(v[use]), cols.append(u[use]), vals.append(np.full(use.sum(), 0.125))
    edge_rows = n + np.arange(e)
    w_end = np.where(interior, 0.375, 0.5)
    rows += [edge_rows, edge_rows, edge_rows[interior], edge_rows[interior]]
    cols += [e_lo, e_hi, opp0[interior], opp1[interior]]
    vals += [w_end, w_end, np.full(interior.sum(), 0.125), np.full(interior.sum(), 0.125)]
    rows_a, cols_a = np.concatenate(rows), np.concatenate(cols)
    entry, inverse = np.unique(rows_a * n + cols_a, return_inverse=True)
    weights = np.bincount(inverse.ravel(), weights=np.concatenate(vals))
    indptr = np.zeros(n + e + 1, np.int64)
    np.cumsum(np.bincount(entry // n, minlength=n + e), out=indptr[1:])

    mid = (n + edge_of_half).reshape(t, 3)                  # mid[:, 0] on edge v0v1, 1 on v1v2, 2 on v2v0
    v0, v1, v2 = tris[:, 0], tris[:, 1], tris[:, 2]
    m01, m12, m20 = mid[:, 0], mid[:, 1], mid[:, 2]
    fine = np.stack([np.stack([v0, m01, m20], 1), np.stack([v1, m12, m01], 1),
                     np.stack([v2, m20, m12], 1), np.stack([m01, m12, m20], 1)], 1).reshape(4 * t, 3)
    return indptr, (entry % n).astype(np.int32), weights, fine


# --- kernels: private, arrays in, arrays out -----------------------------------------------------------------
@numba.njit(cache=True)
def _apply_csr(indptr, indices, weights, src, out):
    """out (m, k) = S · src (n, k) for the CSR matrix S (indptr (m + 1,), indices, weights); overwrites out."""
    k = src.shape[1]
    for i in range(out.shape[0]):
        for col in range(k):
            out[i, col] = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            w = weights[p]
            for col in range(k):
                out[i, col] += w * src[j, col]


def _csr_matmul(a_ptr: np.ndarray, a_idx: np.ndarray, a_val: np.ndarray, b_ptr: np.ndarray, b_idx: np.ndarray,
                b_val: np.ndarray, b_cols: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """C = A · B for CSR matrices; returns C's (indptr, indices int32, weights), column indices sorted per row.

    Used once per topology to fold several Loop levels into one stencil, so it is NumPy, not a kernel: every
    product term of A's entry (i, r, w) with B's row r, then equal (row, column) terms summed (a numba kernel
    with a sort cost about 2 s of a first launch to compile)."""
    m = a_ptr.shape[0] - 1
    a_rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(a_ptr))
    lengths = (b_ptr[a_idx + 1] - b_ptr[a_idx]).astype(np.int64)       # B's entries each A entry meets
    total = int(lengths.sum())
    first = np.repeat(b_ptr[a_idx].astype(np.int64) - (np.cumsum(lengths) - lengths), lengths)
    q = first + np.arange(total, dtype=np.int64)                          # the B entries, term by term
    keys = np.repeat(a_rows, lengths) * b_cols + b_idx[q]
    entry, inverse = np.unique(keys, return_inverse=True)
    weights = np.bincount(inverse.ravel(), weights=np.repeat(a_val, lengths) * b_val[q], minlength=entry.size)
    indptr = np.zeros(m + 1, np.int64)
    np.cumsum(np.bincount(entry // b_cols, minlength=m), out=indptr[1:])
    return indptr, (entry % b_cols).astype(np.int32), weights


@numba.njit(cache=True)
def _vertex_strain(link_i, link_j, link_rest, link_use, x, out):
    """Mean strain |xᵢ − xⱼ| / rest − 1 [-] of each particle's used links → out (n,); 0 with no used link.

    link_i, link_j (c,) int32; link_rest (c,) [m]; link_use (c,) bool; x (n, 3) [m]."""
    n = out.shape[0]
    count = np.zeros(n)
    out[:] = 0.0
    for k in range(link_i.shape[0]):
        if not link_use[k] or link_rest[k] <= 0.0:
            continue
        a, b = link_i[k], link_j[k]
        d = math.sqrt((x[a, 0] - x[b, 0]) ** 2 + (x[a, 1] - x[b, 1]) ** 2 + (x[a, 2] - x[b, 2]) ** 2)
        s = d / link_rest[k] - 1.0
        out[a] += s
        out[b] += s
        count[a] += 1.0
        count[b] += 1.0
    for v in range(n):
        if count[v] > 0.0:
            out[v] /= count[v]


def _apply_csr_numpy(indptr, indices, weights, src, out):
    """``_apply_csr`` in NumPy (each row's terms summed in the same order): its twin while the compile-ahead worker
    compiles it (``cold_kernels``)."""
    rows = np.repeat(np.arange(out.shape[0]), np.diff(indptr))
    out[:, :] = 0.0
    np.add.at(out, rows, weights[:, None] * src[indices])


python_twin(_apply_csr, per_step=True, twin=_apply_csr_numpy)
_apply_csr_call, vertex_normals_into_call = _apply_csr, vertex_normals_into   # the Python call sites' names
called_from(__name__, _apply_csr, vertex_normals_into)
