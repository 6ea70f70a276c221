"""Block-sparse matrices of 3×3 blocks and the filtered PCG of Baraff & Witkin 1998 (§2.3, §5.3).

The implicit solver's matrix A = M − h·∂f/∂v − h²·∂f/∂x (eq. 16) has one 3×3 block for every pair of
particles that share a triangle or a bend quad, plus the diagonal. ``build_pattern`` lays that pattern
out once per topology as block CSR (``indptr``, ``indices``; values (nnz, 3, 3)) and returns, for each
element table, the slot of every (local row, local column) pair, so the assembly kernels add an element's
blocks straight into the values with no search. The paper keeps rows as linked lists because its
cloth/cloth contact springs change the pattern at run time; Loom has no such springs, so a fixed CSR
layout (refilled, never reallocated) is enough.

``modified_pcg`` is procedure modified-pcg of §5.3 with the filter of eq. 13: particle i is free
(``kind`` 0, S_i = I), constrained along one unit normal (``kind`` 1, S_i = I − n·nᵀ) or fully
constrained (``kind`` 3, S_i = 0). The constrained part of Δv is exactly z whatever the iteration count.
"""
from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from loom.engine.persist import persistent

FREE, NORMAL, FIXED = 0, 1, 3
"""Filter kinds (eq. 13): the number of constrained directions of a particle (3 − ndof)."""


@persistent
class BlockPattern(NamedTuple):
    """Block CSR layout of an n×n matrix of 3×3 blocks (§2.3), built once per topology; kernels take it held."""

    indptr: np.ndarray
    """Row starts, (n + 1,) int64: row i's blocks are ``indptr[i]:indptr[i+1]``, sorted by column."""
    indices: np.ndarray
    """Column of each block, (nnz,) int32."""
    diag: np.ndarray
    """Slot of block (i, i), (n,) int64."""
    slots: tuple[np.ndarray, ...]
    """Per element table (e, p) the slots (e, p, p) int64 of its blocks: local (a, b) → block
    (table[:, a], table[:, b])."""

    @property
    def block_count(self) -> int:
        """Number of stored 3×3 blocks nnz."""
        return int(self.indices.shape[0])


@persistent
class Constraints(NamedTuple):
    """A step's constraints (§5.1), one row per particle: the filter S, z and y."""

    kind: np.ndarray
    """Filter kind (eq. 13): FREE, NORMAL or FIXED, (n,) int8."""
    normal: np.ndarray
    """Constrained unit direction of a NORMAL particle, (n, 3)."""
    z: np.ndarray
    """Prescribed velocity change in the constrained directions (§5.1), (n, 3) [m/s]."""
    y: np.ndarray
    """Position alteration (eq. 17), (n, 3) [m]."""


@persistent
class PcgScratch(NamedTuple):
    """modified_pcg's work vectors (§5.3), (n, 3) each."""

    r: np.ndarray
    """Filtered residual."""
    c: np.ndarray
    """Search direction."""
    q: np.ndarray
    """A·c."""
    s: np.ndarray
    """P⁻¹·r."""
    pinv: np.ndarray
    """Jacobi preconditioner P⁻¹ = 1/diag(A)."""

    @classmethod
    def zeros(cls, n: int) -> PcgScratch:
        """Scratch for n particles."""
        return zero_vectors(cls, n)


def zero_vectors(cls: type, n: int):
    """A ``cls`` (a named tuple of (n, 3) vectors: PcgScratch, constraints.StepVectors) of zeros for n particles."""
    return cls(*(np.zeros((n, 3)) for _ in cls._fields))


def build_pattern(n: int, *tables: np.ndarray) -> BlockPattern:
    """Lay out the diagonal plus every particle pair of each element table (e, p) int (triangles, bend quads).

    Vectorised numpy, run once per topology; returns the BlockPattern with one slot array per table."""
    keys = [np.arange(n, dtype=np.int64) * (n + 1)]
    for table in tables:
        t = np.asarray(table, dtype=np.int64)
        keys.append((t[:, :, None] * n + t[:, None, :]).ravel())
    unique = np.unique(np.concatenate(keys))
    rows = unique // n
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    indices = np.ascontiguousarray(unique % n, dtype=np.int32)
    diag = np.searchsorted(unique, np.arange(n, dtype=np.int64) * (n + 1))
    slots = []
    for table in tables:
        t = np.asarray(table, dtype=np.int64)
        pair = t[:, :, None] * n + t[:, None, :]
        slots.append(np.ascontiguousarray(np.searchsorted(unique, pair.ravel()).reshape(pair.shape)))
    return BlockPattern(indptr=indptr, indices=indices, diag=np.ascontiguousarray(diag), slots=tuple(slots))


def to_scipy(pattern: BlockPattern, values: np.ndarray):
    """Return the matrix as a scipy.sparse CSR matrix (3n × 3n), for tests and reference solves (needs scipy)."""
    import scipy.sparse as sparse
    n = pattern.indptr.shape[0] - 1
    return sparse.bsr_matrix((values, pattern.indices, pattern.indptr), shape=(3 * n, 3 * n)).tocsr()


# --- kernels: arrays in, arrays out ---------------------------------------------------------------
@numba.njit(cache=True)
def _row(indptr, indices, values, x, i):
    """Row i of A·x for block CSR A: (s0, s1, s2)."""
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    for k in range(indptr[i], indptr[i + 1]):
        j = indices[k]
        x0 = x[j, 0]
        x1 = x[j, 1]
        x2 = x[j, 2]
        s0 += values[k, 0, 0] * x0 + values[k, 0, 1] * x1 + values[k, 0, 2] * x2
        s1 += values[k, 1, 0] * x0 + values[k, 1, 1] * x1 + values[k, 1, 2] * x2
        s2 += values[k, 2, 0] * x0 + values[k, 2, 1] * x1 + values[k, 2, 2] * x2
    return s0, s1, s2


@numba.njit(cache=True)
def multiply(indptr, indices, values, x, out):
    """out = A·x for block CSR A. indptr (n+1,), indices (nnz,), values (nnz, 3, 3); x, out (n, 3)."""
    for i in range(out.shape[0]):
        out[i, 0], out[i, 1], out[i, 2] = _row(indptr, indices, values, x, i)


@numba.njit(cache=True)
def multiply_add(indptr, indices, values, x, scale, base, out):
    """out = base + scale·A·x (block CSR A); base and out (n, 3) may be the same array."""
    for i in range(out.shape[0]):
        s0, s1, s2 = _row(indptr, indices, values, x, i)
        out[i, 0] = base[i, 0] + scale * s0
        out[i, 1] = base[i, 1] + scale * s1
        out[i, 2] = base[i, 2] + scale * s2


@numba.njit(cache=True)
def residual(indptr, indices, values, dv, b, out):
    """out = A·Δv − b (§5.4): at a constrained particle, the impulse the constraint supplied [N·s]."""
    multiply(indptr, indices, values, dv, out)
    for i in range(out.shape[0]):
        for c in range(3):
            out[i, c] -= b[i, c]


@numba.njit(cache=True)
def _filter_row(kind, normal, i, a):
    """Apply S_i (eq. 13) to row i of a (n, 3) in place: keep, remove the normal part, or zero."""
    k = kind[i]
    if k == FIXED:
        a[i, 0] = 0.0
        a[i, 1] = 0.0
        a[i, 2] = 0.0
    elif k == NORMAL:
        d = a[i, 0] * normal[i, 0] + a[i, 1] * normal[i, 1] + a[i, 2] * normal[i, 2]
        a[i, 0] -= d * normal[i, 0]
        a[i, 1] -= d * normal[i, 1]
        a[i, 2] -= d * normal[i, 2]


@numba.njit(cache=True)
def filter_vector(kind, normal, a):
    """procedure filter (§5.3): a_i ← S_i·a_i for every particle, in place. kind (n,) int8; normal (n, 3)."""
    for i in range(a.shape[0]):
        _filter_row(kind, normal, i, a)


@numba.njit(cache=True)
def modified_pcg(pattern, values, b, constraints, tolerance, max_iterations, warm, dv, scratch):
    """Solve A·Δv = b for the free directions while Δv's constrained part is z (modified-pcg, §5.3).

    A: the held BlockPattern and its values (nnz, 3, 3), symmetric; b (n, 3) [N·s]; constraints: the held
    Constraints, the filter S (eq. 13, kind and normal) and z (n, 3) [m/s], the prescribed velocity change in
    the constrained directions (y is not used); tolerance ε [-]; max_iterations ≥ 1; warm: start from S·dv + z
    instead of z (line 2). Writes dv (n, 3) [m/s]; scratch: a held PcgScratch.
    Returns (iterations, δ_new, δ_0): the loop ran while δ_new > ε²·δ_0 (line 7).

    Preconditioner (§5.3): Jacobi, P = diag(A), applied as P⁻¹ (the paper's text writes P_ii = 1/A_ii
    and then multiplies by P⁻¹; we use the standard form, P⁻¹ ≈ A⁻¹). δ_0 is measured on the filtered
    residual at Δv = z, filter(b − A·z), instead of line 3's filter(b): with b alone a pin dragged
    through a cloth at rest in zero gravity gives b = 0, δ_0 = 0, and the loop would never start.
    A direction of non-positive curvature (cᵀq ≤ 0: A not positive definite there) stops the loop.
    Lines 5 and 15 filter c, so the constrained parts of Δv never leave z: exactly, for fully
    constrained particles (S_i = 0 adds 0.0), and to rounding (1e-16 relative) along a normal."""
    indptr, indices, diag, _ = pattern.value
    kind, normal, z, _ = constraints.value
    r, c, q, s, pinv = scratch.value
    n = b.shape[0]
    for i in range(n):
        for k in range(3):
            d = values[diag[i], k, k]
            pinv[i, k] = 1.0 / d if d > 0.0 else 0.0
    # δ_0 from the residual of the start Δv = z
    multiply(indptr, indices, values, z, q)
    delta0 = 0.0
    for i in range(n):
        for k in range(3):
            r[i, k] = b[i, k] - q[i, k]
        _filter_row(kind, normal, i, r)
        for k in range(3):
            delta0 += r[i, k] * pinv[i, k] * r[i, k]
    if warm:                                                   # line 2 with a warm start, invariant kept
        for i in range(n):
            _filter_row(kind, normal, i, dv)
            for k in range(3):
                dv[i, k] += z[i, k]
        multiply(indptr, indices, values, dv, q)
        for i in range(n):
            for k in range(3):
                r[i, k] = b[i, k] - q[i, k]
            _filter_row(kind, normal, i, r)                    # line 4
    else:
        for i in range(n):                                     # line 2: Δv = z (r already filter(b − A·z))
            for k in range(3):
                dv[i, k] = z[i, k]
    delta_new = 0.0
    for i in range(n):                                         # lines 5–6
        for k in range(3):
            c[i, k] = pinv[i, k] * r[i, k]
        _filter_row(kind, normal, i, c)
        for k in range(3):
            delta_new += r[i, k] * c[i, k]
    limit = tolerance * tolerance * delta0
    iterations = 0
    while iterations < max_iterations and delta_new > limit:  # line 7
        multiply(indptr, indices, values, c, q)                # line 8
        cq = 0.0
        for i in range(n):
            _filter_row(kind, normal, i, q)
            for k in range(3):
                cq += c[i, k] * q[i, k]
        if cq <= 0.0:
            break
        alpha = delta_new / cq                                 # line 9
        delta_old = delta_new
        delta_new = 0.0
        for i in range(n):                                     # lines 10–14
            for k in range(3):
                dv[i, k] += alpha * c[i, k]
                r[i, k] -= alpha * q[i, k]
                s[i, k] = pinv[i, k] * r[i, k]
                delta_new += r[i, k] * s[i, k]
        beta = delta_new / delta_old
        for i in range(n):                                     # line 15
            for k in range(3):
                c[i, k] = s[i, k] + beta * c[i, k]
            _filter_row(kind, normal, i, c)
        iterations += 1
    return iterations, delta_new, delta0
