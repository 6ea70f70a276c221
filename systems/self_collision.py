"""Self- and inter-cloth collision: keep particles of cloths a thickness apart (Fuhrmann 2003 §4).

Fuhrmann et al. keep nearby particles apart with constraints "like the structural ones"; Fisher
("Cloth-Cloth") and Schönberger (§3.3) do the same with a spatial grid; the method here follows
Müller's Ten Minute Physics self-collision:

1. clamp: no particle moves more than ``CLAMP`` × thickness in one substep, so two particles
   cannot pass through each other between two checks (the velocity clamp against tunnelling);
2. hash: particles of every cloth with ``self_collision`` on go into one spatial hash (cell =
   the largest thickness), rebuilt each substep (counting sort, O(n));
3. separate: every particle closer than the pair's thickness to another is pushed apart, mass
   weighted; mesh neighbours whose rest distance is below the thickness keep their rest distance
   instead, so the cloth's own edges are not fought. Pairs from different cloths always keep the
   thickness: this is the inter-cloth collision (a cape against a flag), with the same machinery;
4. friction between layers: a touching pair's motions over the substep are pulled toward their
   average by the cloths' friction (0 slides freely, 1 moves together).

Each particle sums its own corrections from the positions at the start of the pass (Jacobi), so
the result does not depend on visiting order or thread count. Separations are summed, friction
averaged over the contacts: averaging the separations too (constraint averaging) left a falling
48×48 heap with 12 pairs inside 0.9 × thickness, summing left none. Large cloths run the pass
on all threads in fixed particle ranges (same result); small ones stay on one. Coarse meshes, whose particles are farther apart than the thickness, can use
``self_collision_mode="triangle"``: a point–triangle proximity pass keeps particles off the
cloth's non-incident triangles as well.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

from components import Cloth
from engine import App

PARALLEL_MIN_PARTICLES = 4_000
"""Particle count from which the separation pass runs on all threads (below, thread start-up costs more)."""
CHUNKS = 64
"""Fixed particle ranges of the parallel pass."""
BUCKETS_PER_PARTICLE = 16
"""Hash table size per particle (rounded up to a power of two): few other cells share a bucket."""
CLAMP = 0.3
"""Largest substep displacement of a self-colliding particle, as a fraction of its thickness
(7 m/s for 25 mm cloth at 16 substeps of 1/60 s). A 48×48 heap had up to 6 close pairs while
falling with 0.5, 2 with 0.3."""


class SelfCollisionBuffers:
    """Scratch of the self-collision system (resource): the packed particles of every colliding cloth."""

    def __init__(self) -> None:
        self.key: tuple[tuple[int, int], ...] = ()
        self.x = self.x_prev = self.rest = self.out = np.zeros((0, 3))
        self.inv_mass = self.thickness = self.friction = np.zeros(0)
        self.cloth = np.zeros(0, np.int32)
        self.thickest = 0.0
        self.table = np.zeros(1, np.int32)
        self.entries = np.zeros(0, np.int32)
        self.keys = np.zeros(0, np.int64)
        self.xs = np.zeros((0, 3))
        self.cell_of = np.zeros((0, 3), np.int64)
        self.offsets = np.zeros(1, np.int64)


def collide_self(app: App, h: float) -> None:
    """Separate particles of self-colliding cloths from each other (one pass per substep)."""
    clothes = [c for _, c in app.query(Cloth) if c.substepped and c.self_collision]
    if not clothes:
        return
    buffers = app.insert_resource(SelfCollisionBuffers(), replace=False)
    key = tuple((id(c), c.particle_count) for c in clothes)   # tearing changes the count
    if key != buffers.key:
        _allocate(buffers, clothes)
    offsets = buffers.offsets
    for k, c in enumerate(clothes):                    # one copy in per cloth, per substep
        buffers.x[offsets[k]:offsets[k + 1]] = c.x
        buffers.x_prev[offsets[k]:offsets[k + 1]] = c.x_prev
        buffers.inv_mass[offsets[k]:offsets[k + 1]] = c.inv_mass
    _clamp_motion(buffers.x_prev, buffers.thickness, CLAMP, buffers.inv_mass, buffers.x)
    _hash(buffers.x, buffers.thickest, buffers.table, buffers.entries, buffers.keys, buffers.xs, buffers.cell_of)
    parallel = numba.get_num_threads() > 1 and buffers.x.shape[0] >= PARALLEL_MIN_PARTICLES
    separate = _separate_parallel if parallel else _separate_serial
    separate(buffers.x, buffers.x_prev, buffers.rest, buffers.cloth, buffers.inv_mass, buffers.thickness,
             buffers.thickest, buffers.friction, buffers.table, buffers.entries, buffers.keys, buffers.xs,
             buffers.cell_of, buffers.out)
    for k, c in enumerate(clothes):
        c.x[:] = buffers.out[offsets[k]:offsets[k + 1]]
        if c.self_collision_mode == "triangle":
            _point_triangle(c.triangles, c.material.thickness, c.inv_mass, c.x)


def _power_of_two(n: int) -> int:
    """Smallest power of two >= n."""
    return 1 << max(0, int(n - 1).bit_length())


def _allocate(buffers: SelfCollisionBuffers, clothes: list[Cloth]) -> None:
    """Size the packed arrays for this set of cloths (only when the set changes)."""
    n = sum(c.particle_count for c in clothes)
    buffers.key = tuple((id(c), c.particle_count) for c in clothes)
    buffers.x = np.zeros((n, 3))
    buffers.x_prev = np.zeros((n, 3))
    buffers.out = np.zeros((n, 3))
    buffers.inv_mass = np.zeros(n)
    buffers.rest = np.concatenate([c.rest_x for c in clothes])
    buffers.cloth = np.concatenate([np.full(c.particle_count, k, np.int32) for k, c in enumerate(clothes)])
    buffers.thickness = np.concatenate([np.full(c.particle_count, c.material.thickness) for c in clothes])
    buffers.friction = np.concatenate([np.full(c.particle_count, min(c.material.friction, 1.0)) for c in clothes])
    buffers.thickest = float(buffers.thickness.max())
    buffers.offsets = np.cumsum([0] + [c.particle_count for c in clothes])
    buffers.table = np.zeros(_power_of_two(BUCKETS_PER_PARTICLE * n) + 1, np.int32)
    buffers.entries = np.zeros(n, np.int32)
    buffers.keys = np.zeros(n, np.int64)
    buffers.xs = np.zeros((n, 3))
    buffers.cell_of = np.zeros((n, 3), np.int64)


# --- kernels --------------------------------------------------------------------------------------
HASH_X, HASH_Y, HASH_Z = 1, 689287499, 283923481
"""Cell hash coefficients: large primes for y and z (Teschner et al. 2003) but 1 for x, so the three
cells of a row are adjacent buckets (one cache line) and particles in mesh order reuse them: with
a prime for x too, the 27 random bucket reads cost 380 ns per particle in the n = 128 drape."""


@numba.njit(cache=True)
def _cell_hash(ix, iy, iz, size):
    """Bucket of grid cell (ix, iy, iz) in a table of ``size`` buckets, a power of two.

    Additive, so a neighbour's bucket is the cell's plus a constant offset; a mask, not a modulo:
    27 modulos per particle cost more than the whole contact test."""
    return (ix * HASH_X + iy * HASH_Y + iz * HASH_Z) & (size - 1)


@numba.njit(cache=True)
def _clamp_motion(x_prev, thickness, fraction, inv_mass, x):
    """Shorten any substep displacement longer than fraction × thickness (anti-tunnelling clamp);
    particles of inverse mass 0 (pinned, grabbed) go where they are told."""
    for p in range(x.shape[0]):
        if inv_mass[p] == 0.0:
            continue
        dx = x[p, 0] - x_prev[p, 0]
        dy = x[p, 1] - x_prev[p, 1]
        dz = x[p, 2] - x_prev[p, 2]
        d = math.sqrt(dx * dx + dy * dy + dz * dz)
        limit = fraction * thickness[p]
        if d > limit:
            s = limit / d
            x[p, 0] = x_prev[p, 0] + dx * s
            x[p, 1] = x_prev[p, 1] + dy * s
            x[p, 2] = x_prev[p, 2] + dz * s


CELL_OFFSET = 1 << 20
"""Added to cell coordinates before packing (|cell index| < 2**20: ±13 km at 12 mm cells)."""


@numba.njit(cache=True)
def _cell_key(ix, iy, iz):
    """Grid cell (ix, iy, iz) packed in one int64, x in the lowest 21 bits: the cells ix … ix+2 of a
    row are the keys k … k+2, so "q is in this row" is one unsigned compare."""
    return ((iz + CELL_OFFSET) << 42) | ((iy + CELL_OFFSET) << 21) | (ix + CELL_OFFSET)


@numba.njit(cache=True)
def _hash(x, cell, table, entries, keys, xs, cell_of):
    """Counting-sort particles into hash buckets: bucket b holds entries[table[b]:table[b + 1]],
    with each entry's packed cell in keys and its position in xs (bucket order, so the scan in
    ``_separate_range`` reads them in sequence); cell_of (n, 3) records each particle's cell."""
    size = table.shape[0] - 1
    table[:] = 0
    for p in range(x.shape[0]):
        for c in range(3):
            cell_of[p, c] = int(math.floor(x[p, c] / cell))
        table[_cell_hash(cell_of[p, 0], cell_of[p, 1], cell_of[p, 2], size) + 1] += 1
    for b in range(size):
        table[b + 1] += table[b]
    fill = table[:-1].copy()
    for p in range(x.shape[0]):
        b = _cell_hash(cell_of[p, 0], cell_of[p, 1], cell_of[p, 2], size)
        e = fill[b]
        entries[e] = p
        keys[e] = _cell_key(cell_of[p, 0], cell_of[p, 1], cell_of[p, 2])
        xs[e, 0], xs[e, 1], xs[e, 2] = x[p, 0], x[p, 1], x[p, 2]
        fill[b] += 1


@numba.njit(cache=True)
def _separate_range(lo, hi, x, x_prev, rest, cloth, inv_mass, thickness, thickest, friction, table, entries, keys,
                    xs, cell_of, out):
    """One Jacobi separation pass: each particle sums its separations from (and averages its friction
    with) every particle in the 27 cells around it, from positions at the start of the pass, and
    writes only its own row of out.

    Particles lo … hi−1 only: the drivers below split the work (no particle reads another's output,
    so serial and parallel give the same result).
    The cost is the scan of the candidates (10 per particle in the n = 128 drape, 1.8 of them
    closer than the thickness), and there the branches, not the arithmetic: a row of three cells
    is three consecutive buckets (HASH_X = 1), read as one range, 9 ranges instead of 27 buckets;
    the table has 16 buckets per particle, so a range holds almost only particles of its row (at
    2 per particle half of the scanned entries were other cells': 3.2 against 1.7 ms for the bare
    scan at n = 128); the row test is one compare of packed cell keys, and positions are read from
    the bucket-ordered copy xs. Mass, rest position and friction of q are read only for contacts."""
    size = table.shape[0] - 1
    mask = size - 1
    for p in range(lo, hi):
        out[p, 0], out[p, 1], out[p, 2] = x[p, 0], x[p, 1], x[p, 2]
        wp = inv_mass[p]
        if wp == 0.0:
            continue
        cx, cy, cz = cell_of[p, 0], cell_of[p, 1], cell_of[p, 2]
        px, py, pz = x[p, 0], x[p, 1], x[p, 2]
        reach2 = (0.5 * (thickness[p] + thickest)) ** 2
        sx = 0.0
        sy = 0.0
        sz = 0.0
        fx = 0.0
        fy = 0.0
        fz = 0.0
        count = 0
        base = cx * HASH_X + cy * HASH_Y + cz * HASH_Z
        for oy in range(-1, 2):
            for oz in range(-1, 2):
                # the row of cells cx-1 … cx+1 is three consecutive buckets (HASH_X = 1): one range
                first = (base - 1 + oy * HASH_Y + oz * HASH_Z) & mask
                row = _cell_key(cx - 1, cy + oy, cz + oz)
                for part in range(3 if first + 2 >= size else 1):   # a row wrapping the table's end
                    begin = table[(first + part) & mask]
                    end = table[first + 3] if first + 2 < size else table[((first + part) & mask) + 1]
                    for e in range(begin, end):
                        if numba.uint64(keys[e] - row) > 2:       # another cell in the same bucket
                            continue
                        dx = px - xs[e, 0]
                        dy = py - xs[e, 1]
                        dz = pz - xs[e, 2]
                        d2 = dx * dx + dy * dy + dz * dz
                        if d2 >= reach2 or d2 < 1e-24:           # (q == p is the d2 = 0 case)
                            continue
                        q = entries[e]
                        gap = 0.5 * (thickness[p] + thickness[q])
                        if d2 >= gap * gap:
                            continue
                        if cloth[p] == cloth[q]:         # mesh neighbours keep their rest distance
                            rx = rest[p, 0] - rest[q, 0]
                            ry = rest[p, 1] - rest[q, 1]
                            rz = rest[p, 2] - rest[q, 2]
                            r2 = rx * rx + ry * ry + rz * rz
                            if r2 < gap * gap:
                                if d2 >= r2:
                                    continue
                                gap = math.sqrt(r2)
                        d = math.sqrt(d2)
                        share = wp / (wp + inv_mass[q]) * (gap - d) / d
                        sx += dx * share
                        sy += dy * share
                        sz += dz * share
                        # friction between layers: pull this particle's motion toward the pair's average
                        f = 0.25 * (friction[p] + friction[q])
                        fx += f * ((x[q, 0] - x_prev[q, 0]) - (px - x_prev[p, 0]))
                        fy += f * ((x[q, 1] - x_prev[q, 1]) - (py - x_prev[p, 1]))
                        fz += f * ((x[q, 2] - x_prev[q, 2]) - (pz - x_prev[p, 2]))
                        count += 1
        if count > 0:
            out[p, 0] += sx + fx / count
            out[p, 1] += sy + fy / count
            out[p, 2] += sz + fz / count


@numba.njit(cache=True)
def _separate_serial(x, x_prev, rest, cloth, inv_mass, thickness, thickest, friction, table, entries, keys, xs,
                     cell_of, out):
    """One separation pass over every particle on one thread (small cloths). Twin of ``_separate_parallel``."""
    _separate_range(0, x.shape[0], x, x_prev, rest, cloth, inv_mass, thickness, thickest, friction, table, entries,
                    keys, xs, cell_of, out)


@numba.njit(cache=True, parallel=True)
def _separate_parallel(x, x_prev, rest, cloth, inv_mass, thickness, thickest, friction, table, entries, keys, xs,
                       cell_of, out):
    """One separation pass with the particles split into CHUNKS ranges over all threads (same result)."""
    n = x.shape[0]
    for chunk in prange(CHUNKS):
        _separate_range(chunk * n // CHUNKS, (chunk + 1) * n // CHUNKS, x, x_prev, rest, cloth, inv_mass, thickness,
                        thickest, friction, table, entries, keys, xs, cell_of, out)


@numba.njit(cache=True)
def _point_triangle(triangles, thickness, inv_mass, x):
    """Keep every particle ``thickness`` off each non-incident triangle of its cloth (coarse meshes).

    Triangles are bucketed by a uniform grid of cell = the longest triangle edge + thickness; a
    particle inside the slab of a nearby triangle is pushed out along the triangle's normal, on
    the side it is on, and the triangle's corners the other way by barycentric weights (mass
    weighted, so momentum is kept). Serial: triangles share corners."""
    t_count = triangles.shape[0]
    if t_count == 0:
        return
    longest = 0.0
    for t in range(t_count):
        for a in range(3):
            i, j = triangles[t, a], triangles[t, (a + 1) % 3]
            longest = max(longest, math.sqrt((x[i, 0] - x[j, 0]) ** 2 + (x[i, 1] - x[j, 1]) ** 2
                                             + (x[i, 2] - x[j, 2]) ** 2))
    cell = longest + thickness
    size = 1
    while size < 2 * t_count:
        size *= 2
    table = np.zeros(size + 1, np.int64)
    centre = np.empty((t_count, 3))
    for t in range(t_count):
        for c in range(3):
            centre[t, c] = (x[triangles[t, 0], c] + x[triangles[t, 1], c] + x[triangles[t, 2], c]) / 3.0
        table[_cell_hash(int(math.floor(centre[t, 0] / cell)), int(math.floor(centre[t, 1] / cell)),
                         int(math.floor(centre[t, 2] / cell)), size) + 1] += 1
    for b in range(size):
        table[b + 1] += table[b]
    fill = table[:-1].copy()
    entries = np.empty(t_count, np.int32)
    for t in range(t_count):
        b = _cell_hash(int(math.floor(centre[t, 0] / cell)), int(math.floor(centre[t, 1] / cell)),
                       int(math.floor(centre[t, 2] / cell)), size)
        entries[fill[b]] = t
        fill[b] += 1
    for p in range(x.shape[0]):
        if inv_mass[p] == 0.0:
            continue
        cx = int(math.floor(x[p, 0] / cell))
        cy = int(math.floor(x[p, 1] / cell))
        cz = int(math.floor(x[p, 2] / cell))
        for ox in range(-1, 2):
            for oy in range(-1, 2):
                for oz in range(-1, 2):
                    b = _cell_hash(cx + ox, cy + oy, cz + oz, size)
                    for e in range(table[b], table[b + 1]):
                        t = entries[e]
                        i, j, k = triangles[t, 0], triangles[t, 1], triangles[t, 2]
                        if p == i or p == j or p == k:
                            continue
                        _push_off_triangle(p, i, j, k, thickness, inv_mass, x)


@numba.njit(cache=True)
def _push_off_triangle(p, i, j, k, thickness, inv_mass, x):
    """Separate particle p from triangle ijk to ``thickness`` along the triangle normal."""
    e1x, e1y, e1z = x[j, 0] - x[i, 0], x[j, 1] - x[i, 1], x[j, 2] - x[i, 2]
    e2x, e2y, e2z = x[k, 0] - x[i, 0], x[k, 1] - x[i, 1], x[k, 2] - x[i, 2]
    nx, ny, nz = e1y * e2z - e1z * e2y, e1z * e2x - e1x * e2z, e1x * e2y - e1y * e2x
    area2 = math.sqrt(nx * nx + ny * ny + nz * nz)
    if area2 < 1e-18:
        return
    nx, ny, nz = nx / area2, ny / area2, nz / area2
    px, py, pz = x[p, 0] - x[i, 0], x[p, 1] - x[i, 1], x[p, 2] - x[i, 2]
    height = px * nx + py * ny + pz * nz
    if abs(height) >= thickness:
        return
    # barycentric coordinates of the projection; outside the triangle: no contact with its face
    qx, qy, qz = px - height * nx, py - height * ny, pz - height * nz
    d00 = e1x * e1x + e1y * e1y + e1z * e1z
    d01 = e1x * e2x + e1y * e2y + e1z * e2z
    d11 = e2x * e2x + e2y * e2y + e2z * e2z
    d20 = qx * e1x + qy * e1y + qz * e1z
    d21 = qx * e2x + qy * e2y + qz * e2z
    den = d00 * d11 - d01 * d01
    v = (d11 * d20 - d01 * d21) / den
    w = (d00 * d21 - d01 * d20) / den
    u = 1.0 - v - w
    if u < 0.0 or v < 0.0 or w < 0.0:
        return
    side = 1.0 if height >= 0.0 else -1.0
    depth = thickness - abs(height)
    wp = inv_mass[p]
    wt = u * u * inv_mass[i] + v * v * inv_mass[j] + w * w * inv_mass[k]
    total = wp + wt
    if total == 0.0:
        return
    s = depth / total * side
    x[p, 0] += wp * s * nx
    x[p, 1] += wp * s * ny
    x[p, 2] += wp * s * nz
    for corner, bary in ((i, u), (j, v), (k, w)):
        x[corner, 0] -= inv_mass[corner] * bary * s * nx
        x[corner, 1] -= inv_mass[corner] * bary * s * ny
        x[corner, 2] -= inv_mass[corner] * bary * s * nz
