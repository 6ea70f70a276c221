"""Self- and inter-cloth collision: keep particles of cloths a thickness apart (Fuhrmann 2003 §4).

Fuhrmann et al. keep nearby particles apart with constraints "like the structural ones"; Fisher
("Cloth-Cloth") and Schönberger (§3.3) do the same with a spatial grid; the method here follows
Müller's Ten Minute Physics self-collision:

1. clamp: no particle moves more than ``CLAMP`` × thickness in one substep, so two particles
   cannot pass through each other between two checks (the velocity clamp against tunnelling);
2. hash: particles of every cloth with ``self_collision`` on go into one spatial hash (cell =
   the largest thickness), rebuilt each substep (counting sort, O(n));
3. separate: every pair closer than its thickness is found once (each particle searches the
   forward half of its 27 cells) and pushed apart, mass weighted; mesh neighbours whose rest distance is below the thickness keep their rest distance
   instead, so the cloth's own edges are not fought. Pairs from different cloths always keep the
   thickness: this is the inter-cloth collision (a cape against a flag), with the same machinery;
4. friction between layers: a touching pair's motions over the substep are pulled toward their
   average by the cloths' friction (0 slides freely, 1 moves together).

Every contact is measured at the positions of the start of the pass (Jacobi) and written to
slots of a fixed particle range (chunk); the contacts are then applied in chunk order, so the
result does not depend on thread count. Separations are summed, friction averaged over each
particle's contacts: averaging the separations too (constraint averaging) left a falling 48×48
heap with 12 pairs inside 0.9 × thickness, summing left none. Large cloths run clamp, hash and
search on all threads (the hash in bucket ranges, "lanes"); small ones stay on one, with the same
result. Cost at n = 128 (16,384 particles, 2 threads): about 1.1 ms per substep, hash 0.27 of it.
Coarse meshes, whose particles are farther apart than the thickness, can use
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
LANES = 2
"""Ranges of hash buckets sorted side by side, on all threads (a fixed number: same table for any thread count)."""
BUCKETS_PER_PARTICLE = 16
"""Hash table size per particle (rounded up to a power of two): few other cells share a bucket."""
CONTACTS_PER_PARTICLE = 4
"""Contact slots per particle to start with (a heap of cloth has about one; a chunk that runs out
doubles them all and the pass runs again)."""
CLAMP = 0.3
"""Largest substep displacement of a self-colliding particle, as a fraction of its thickness
(7 m/s for 25 mm cloth at 16 substeps of 1/60 s). A 48×48 heap had up to 6 close pairs while
falling with 0.5, 2 with 0.3."""


class SelfCollisionBuffers:
    """Scratch of the self-collision system (resource): the packed particles of every colliding cloth."""

    def __init__(self) -> None:
        self.key: tuple[tuple[int, int], ...] = ()
        self.x = self.x_prev = self.rest = np.zeros((0, 3))
        self.inv_mass = self.thickness = self.friction = np.zeros(0)
        self.cloth = np.zeros(0, np.int32)
        self.thickest = 0.0
        self.table = np.zeros(1, np.int32)
        self.bucket = np.zeros(0, np.int64)
        self.lane_list = np.zeros((LANES, 0), np.int32)
        self.lane_count = np.zeros((CHUNKS, LANES), np.int64)
        self.entries = np.zeros(0, np.int32)
        self.keys = np.zeros(0, np.int64)
        self.xs = np.zeros((0, 3))
        self.cell_of = np.zeros((0, 3), np.int64)
        self.offsets = np.zeros(1, np.int64)
        self.pair = np.zeros((0, 2), np.int32)
        self.push = self.slip = np.zeros((0, 3))
        self.first_slot = self.last_slot = np.zeros(CHUNKS, np.int64)
        self.count = np.zeros(0, np.int32)


def collide_self(app: App, h: float) -> None:
    """Separate particles of self-colliding cloths from each other (one pass per substep)."""
    clothes = [c for _, c in app.query(Cloth) if c.substepped and c.self_collision]
    if not clothes:
        return
    buffers = app.init_resource(SelfCollisionBuffers)
    key = tuple((id(c), c.particle_count) for c in clothes)   # tearing changes the count
    if key != buffers.key:
        _allocate(buffers, clothes)
    if len(clothes) == 1:                              # one cloth: work on its own arrays
        x, x_prev, inv_mass = clothes[0].x, clothes[0].x_prev, clothes[0].inv_mass
    else:                                              # several: one copy in per cloth, per substep
        x, x_prev, inv_mass = buffers.x, buffers.x_prev, buffers.inv_mass
        for k, c in enumerate(clothes):
            x[buffers.offsets[k]:buffers.offsets[k + 1]] = c.x
            x_prev[buffers.offsets[k]:buffers.offsets[k + 1]] = c.x_prev
            inv_mass[buffers.offsets[k]:buffers.offsets[k + 1]] = c.inv_mass
    parallel = numba.get_num_threads() > 1 and x.shape[0] >= PARALLEL_MIN_PARTICLES
    find = _contacts_parallel if parallel else _contacts_serial
    while not find(x, x_prev, buffers.rest, buffers.cloth, inv_mass, buffers.thickness, buffers.thickest, CLAMP,
                   buffers.friction, buffers.bucket, buffers.lane_list, buffers.lane_count, buffers.table,
                   buffers.entries, buffers.keys, buffers.xs, buffers.cell_of, buffers.pair, buffers.push,
                   buffers.slip, buffers.first_slot, buffers.last_slot):
        _allocate_contacts(buffers, 2 * buffers.pair.shape[0] // max(1, x.shape[0]))   # a chunk ran out
    _apply_contacts(inv_mass, buffers.pair, buffers.push, buffers.slip, buffers.first_slot, buffers.last_slot,
                    buffers.count, x)
    for k, c in enumerate(clothes):
        if len(clothes) > 1:
            c.x[:] = x[buffers.offsets[k]:buffers.offsets[k + 1]]
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
    buffers.inv_mass = np.zeros(n)
    buffers.rest = np.concatenate([c.rest_x for c in clothes])
    buffers.cloth = np.concatenate([np.full(c.particle_count, k, np.int32) for k, c in enumerate(clothes)])
    buffers.thickness = np.concatenate([np.full(c.particle_count, c.material.thickness) for c in clothes])
    buffers.friction = np.concatenate([np.full(c.particle_count, min(c.material.friction, 1.0)) for c in clothes])
    buffers.thickest = float(buffers.thickness.max())
    buffers.offsets = np.cumsum([0] + [c.particle_count for c in clothes])
    buffers.table = np.zeros(_power_of_two(max(LANES, BUCKETS_PER_PARTICLE * n)) + 1, np.int32)
    buffers.bucket = np.zeros(n, np.int64)
    buffers.lane_list = np.zeros((LANES, n), np.int32)
    buffers.lane_count = np.zeros((CHUNKS, LANES), np.int64)
    buffers.entries = np.zeros(n, np.int32)
    buffers.keys = np.zeros(n, np.int64)
    buffers.xs = np.zeros((n, 3))
    buffers.cell_of = np.zeros((n, 3), np.int64)
    buffers.count = np.zeros(n, np.int32)
    _allocate_contacts(buffers, CONTACTS_PER_PARTICLE)


def _allocate_contacts(buffers: SelfCollisionBuffers, per_particle: int) -> None:
    """Contact slots for ``per_particle`` contacts per particle on average, split evenly over the chunks."""
    per_chunk = max(16, per_particle * buffers.x.shape[0] // CHUNKS + per_particle)
    buffers.pair = np.zeros((per_chunk * CHUNKS, 2), np.int32)
    buffers.push = np.zeros((per_chunk * CHUNKS, 3))
    buffers.slip = np.zeros((per_chunk * CHUNKS, 3))
    buffers.first_slot = np.arange(CHUNKS, dtype=np.int64) * per_chunk
    buffers.last_slot = buffers.first_slot.copy()


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


CELL_OFFSET = 1 << 20
"""Added to cell coordinates before packing (|cell index| < 2**20: ±13 km at 12 mm cells)."""


@numba.njit(cache=True)
def _cell_key(ix, iy, iz):
    """Grid cell (ix, iy, iz) packed in one int64, x in the lowest 21 bits: the cells ix … ix+2 of a
    row are the keys k … k+2, so "q is in this row" is one unsigned compare."""
    return ((iz + CELL_OFFSET) << 42) | ((iy + CELL_OFFSET) << 21) | (ix + CELL_OFFSET)


@numba.njit(cache=True)
def _locate(chunk, lo, hi, x_prev, thickness, fraction, inv_mass, cell, x, cell_of, bucket, lane_list, lane_count,
            size):
    """For particles lo … hi−1 (chunk ``chunk``): clamp the substep's motion to fraction × thickness
    (anti-tunnelling; pinned and grabbed particles, of inverse mass 0, go where they are told), find
    the grid cell and hash bucket, and list the particle under its lane (bucket range), in order."""
    lanes = lane_count.shape[1]
    for lane in range(lanes):
        lane_count[chunk, lane] = 0
    for p in range(lo, hi):
        if inv_mass[p] != 0.0:
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
        for c in range(3):
            cell_of[p, c] = int(math.floor(x[p, c] / cell))
        b = _cell_hash(cell_of[p, 0], cell_of[p, 1], cell_of[p, 2], size)
        bucket[p] = b
        lane = b * lanes // size
        lane_list[lane, lo + lane_count[chunk, lane]] = p
        lane_count[chunk, lane] += 1


@numba.njit(cache=True)
def _sort_lane(lane, x, cell_of, bucket, lane_list, lane_count, table, entries, keys, xs):
    """Counting-sort the particles of one lane into its buckets: bucket b holds entries[table[b]:
    table[b + 1]], with each entry's packed cell in keys and its position in xs (bucket order, so
    the scan in ``_find_contacts`` reads them in sequence).

    The lane writes table[b + 1] for its buckets only: counts, then starts (the prefix sum, from the
    particles of the lanes before), then, advanced by the fill, ends; so table[b] is bucket b's start
    when every lane is done, with no copy and no lane touching another's slots."""
    n = x.shape[0]
    size = table.shape[0] - 1
    lanes = lane_count.shape[1]
    chunks = lane_count.shape[0]
    first, last = lane * size // lanes, (lane + 1) * size // lanes
    table[first + 1:last + 1] = 0
    if lane == 0:
        table[0] = 0
    start = 0
    for chunk in range(chunks):
        for other in range(lane):
            start += lane_count[chunk, other]
        lo = chunk * n // chunks
        for k in range(lane_count[chunk, lane]):
            table[bucket[lane_list[lane, lo + k]] + 1] += 1
    for b in range(first, last):
        c = table[b + 1]
        table[b + 1] = start
        start += c
    for chunk in range(chunks):
        lo = chunk * n // chunks
        for k in range(lane_count[chunk, lane]):
            p = lane_list[lane, lo + k]
            b = bucket[p]
            e = table[b + 1]
            table[b + 1] = e + 1
            entries[e] = p
            keys[e] = _cell_key(cell_of[p, 0], cell_of[p, 1], cell_of[p, 2])
            xs[e, 0], xs[e, 1], xs[e, 2] = x[p, 0], x[p, 1], x[p, 2]


HALF_SHELL = ((0, 0), (0, 1), (1, -1), (1, 0), (1, 1))
"""Rows (dy, dz) of the forward half of a particle's 27 cells: its own row from its own cell on, and
the four rows after it. Every pair of particles lies in the forward half of exactly one of the two."""


@numba.njit(cache=True)
def _find_contacts(lo, hi, x, x_prev, rest, cloth, inv_mass, thickness, thickest, friction, table, entries, keys,
                   xs, cell_of, pair, push, slip, first_slot, last_slot):
    """Find the touching pairs (p, q) with p in lo … hi−1 and q in p's forward half-shell, and write
    them to slots first_slot … of pair (p, q), push and slip; return the slot after the last, or −1
    if last_slot was reached (the caller grows the arrays and runs the pass again).

    push is the pair's separation per unit inverse mass ((gap − d) / d / (w_p + w_q) × (x_p − x_q):
    p moves by w_p × push, q by −w_q × push); slip the friction pull on p's motion over the
    substep toward q's (f × (Δx_q − Δx_p), q gets the opposite).
    Each pair is found once, from the particle whose half-shell holds the other: half the cells of
    the full 27-cell scan. The cost is the scan of the candidates, and there the branches, not the
    arithmetic: a row of cells is consecutive buckets (HASH_X = 1), read as one range; the table has
    16 buckets per particle, so a range holds almost only particles of its row (at 2 per particle,
    half of the scanned entries were other cells': 3.2 against 1.7 ms for a bare scan of the n =
    128 drape); the row test is one compare of packed cell keys, and positions are read from the
    bucket-ordered copy xs. Mass, rest position and friction of q are read only for contacts."""
    size = table.shape[0] - 1
    mask = size - 1
    slot = first_slot
    for p in range(lo, hi):
        cx, cy, cz = cell_of[p, 0], cell_of[p, 1], cell_of[p, 2]
        px, py, pz = x[p, 0], x[p, 1], x[p, 2]
        wp = inv_mass[p]
        reach2 = (0.5 * (thickness[p] + thickest)) ** 2
        base = cx * HASH_X + cy * HASH_Y + cz * HASH_Z
        for row in range(5):
            oy, oz = HALF_SHELL[row]
            own = row == 0                       # own row: cells cx and cx + 1 only
            left = 0 if own else 1
            cells = 2 if own else 3
            bucket = (base - left + oy * HASH_Y + oz * HASH_Z) & mask
            key = _cell_key(cx - left, cy + oy, cz + oz)
            for part in range(cells if bucket + cells > size else 1):     # a row wrapping the table's end
                begin = table[(bucket + part) & mask]
                end = table[bucket + cells] if bucket + cells <= size else table[((bucket + part) & mask) + 1]
                for e in range(begin, end):
                    k = numba.uint64(keys[e] - key)
                    if k >= cells:                  # another cell in the same bucket
                        continue
                    dx = px - xs[e, 0]
                    dy = py - xs[e, 1]
                    dz = pz - xs[e, 2]
                    d2 = dx * dx + dy * dy + dz * dz
                    if d2 >= reach2 or d2 < 1e-24:
                        continue
                    q = entries[e]
                    if own and k == 0 and q <= p:     # same cell: the lower index finds the pair
                        continue
                    gap = 0.5 * (thickness[p] + thickness[q])
                    if d2 >= gap * gap:
                        continue
                    w = wp + inv_mass[q]
                    if w == 0.0:
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
                    if slot == last_slot:
                        return -1
                    d = math.sqrt(d2)
                    s = (gap - d) / (d * w)
                    f = 0.25 * (friction[p] + friction[q])
                    pair[slot, 0], pair[slot, 1] = p, q
                    push[slot, 0], push[slot, 1], push[slot, 2] = dx * s, dy * s, dz * s
                    slip[slot, 0] = f * ((x[q, 0] - x_prev[q, 0]) - (px - x_prev[p, 0]))
                    slip[slot, 1] = f * ((x[q, 1] - x_prev[q, 1]) - (py - x_prev[p, 1]))
                    slip[slot, 2] = f * ((x[q, 2] - x_prev[q, 2]) - (pz - x_prev[p, 2]))
                    slot += 1
    return slot


@numba.njit(cache=True)
def _apply_contacts(inv_mass, pair, push, slip, first_slot, last_slot, count, x):
    """Move x by every contact found (Jacobi: all were measured at the pass's start positions):
    separations summed, friction averaged over each particle's contacts. Serial, since pairs share
    particles, and over the contacts only (about one per particle); ``count`` is all zero between
    calls."""
    for chunk in range(first_slot.shape[0]):
        for slot in range(first_slot[chunk], last_slot[chunk]):
            count[pair[slot, 0]] += 1
            count[pair[slot, 1]] += 1
    for chunk in range(first_slot.shape[0]):
        for slot in range(first_slot[chunk], last_slot[chunk]):
            p, q = pair[slot, 0], pair[slot, 1]
            wp, wq = inv_mass[p], inv_mass[q]
            fp = 1.0 / count[p] if wp > 0.0 else 0.0
            fq = 1.0 / count[q] if wq > 0.0 else 0.0
            for c in range(3):
                x[p, c] += wp * push[slot, c] + fp * slip[slot, c]
                x[q, c] -= wq * push[slot, c] + fq * slip[slot, c]
    for chunk in range(first_slot.shape[0]):
        for slot in range(first_slot[chunk], last_slot[chunk]):
            count[pair[slot, 0]] = 0
            count[pair[slot, 1]] = 0


@numba.njit(cache=True)
def _contacts_serial(x, x_prev, rest, cloth, inv_mass, thickness, thickest, fraction, friction, bucket, lane_list,
                     lane_count, table, entries, keys, xs, cell_of, pair, push, slip, first_slot, last_slot):
    """Clamp, hash and find every contact, chunk by chunk and lane by lane, on one thread (small
    cloths); False if a chunk's contact slots ran out. Twin of ``_contacts_parallel``: the same
    chunks and lanes, so the same table and the same contacts in the same slots."""
    n = x.shape[0]
    size = table.shape[0] - 1
    chunks = first_slot.shape[0]
    for chunk in range(chunks):
        _locate(chunk, chunk * n // chunks, (chunk + 1) * n // chunks, x_prev, thickness, fraction, inv_mass,
                thickest, x, cell_of, bucket, lane_list, lane_count, size)
    for lane in range(lane_count.shape[1]):
        _sort_lane(lane, x, cell_of, bucket, lane_list, lane_count, table, entries, keys, xs)
    for chunk in range(chunks):
        last_slot[chunk] = _find_contacts(chunk * n // chunks, (chunk + 1) * n // chunks, x, x_prev, rest, cloth,
                                          inv_mass, thickness, thickest, friction, table, entries, keys, xs, cell_of,
                                          pair, push, slip, first_slot[chunk],
                                          first_slot[chunk] + pair.shape[0] // chunks)
    return _slots_fit(first_slot, last_slot)


@numba.njit(cache=True, parallel=True)
def _contacts_parallel(x, x_prev, rest, cloth, inv_mass, thickness, thickest, fraction, friction, bucket, lane_list,
                       lane_count, table, entries, keys, xs, cell_of, pair, push, slip, first_slot, last_slot):
    """Clamp, hash and find every contact with chunks and lanes spread over all threads (each writes
    only its own particles, buckets and slots)."""
    n = x.shape[0]
    size = table.shape[0] - 1
    chunks = first_slot.shape[0]
    for chunk in prange(chunks):
        _locate(chunk, chunk * n // chunks, (chunk + 1) * n // chunks, x_prev, thickness, fraction, inv_mass,
                thickest, x, cell_of, bucket, lane_list, lane_count, size)
    for lane in prange(lane_count.shape[1]):
        _sort_lane(lane, x, cell_of, bucket, lane_list, lane_count, table, entries, keys, xs)
    for chunk in prange(chunks):
        last_slot[chunk] = _find_contacts(chunk * n // chunks, (chunk + 1) * n // chunks, x, x_prev, rest, cloth,
                                          inv_mass, thickness, thickest, friction, table, entries, keys, xs, cell_of,
                                          pair, push, slip, first_slot[chunk],
                                          first_slot[chunk] + pair.shape[0] // chunks)
    return _slots_fit(first_slot, last_slot)


@numba.njit(cache=True)
def _slots_fit(first_slot, last_slot):
    """False if some chunk ran out of contact slots (``_find_contacts`` returned −1: its slots are
    then emptied, and the caller grows them and runs the pass again); True if every chunk's fit."""
    fit = True
    for chunk in range(first_slot.shape[0]):
        if last_slot[chunk] < 0:
            fit = False
            last_slot[chunk] = first_slot[chunk]
    return fit


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
