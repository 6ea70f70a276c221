"""Self- and inter-cloth collision: keep particles of cloths a thickness apart (Fuhrmann 2003 §4).

Fuhrmann et al. keep nearby particles apart with constraints "like the structural ones"; Fisher
("Cloth-Cloth") and Schönberger (§3.3) do the same with a spatial grid; the method here follows
Müller's Ten Minute Physics self-collision (a hash built once, queried with the travel allowed
until the next build, a velocity clamp):

1. clamp: no particle moves more than ``CLAMP`` × thickness in one substep *besides the motion all
   of them share* (``_common_motion``), so two particles cannot pass through each other between two
   checks (the velocity clamp against tunnelling). Whether two particles can meet depends on their
   relative motion only (Bridson et al. 2002 treat the proximity of a pair by its relative velocity;
   Fuhrmann et al. 2003 correct a pair by its relative position): a bound of CLAMP × thickness on each
   particle's motion less a vector common to all bounds every pair's relative motion by twice that,
   as the clamp of the absolute motion did, but leaves a falling cloth falling at g·t (the absolute
   clamp held it to 7 m/s at 16 substeps, 3.5 at 8: slow motion). The common vector is, per axis, the
   motion every particle, held ones included, has at least (0 when one rests or two move apart), so the
   clamp never adds motion to a particle nor turns it back;
2. list: particles of every cloth with ``self_collision`` on go into one spatial hash (cell =
   the largest thickness plus a skin, counting sort, O(n)), and every pair closer than a cell is
   listed, once (each particle searches the forward half of its 27 cells). The list holds every
   pair that can touch while no particle has drifted more than half the skin from where it was
   at the build, besides the drift all share (a falling cloth's). Particles that have, the
   escapees, are searched for on their own each pass: in the build's hash for the others, in a
   small hash of the escapees for each other. When more than ``REBUILD_FRACTION`` escaped, the
   list is built again (often while a cloth drapes, never while it rests), and
   always at the first substep of a step, so a step depends only on the state it starts from
   (nothing of the list carries over between steps: a snapshot, which holds no list, resumes
   bit-exact);
3. separate: every listed pair closer than its gap, and every escapee's, is pushed apart, mass
   weighted: Fuhrmann's correction for a too-short link (eqs. 5–9) with the gap g as its minimum length,
   u = (x_q − x_p)/d · (d − g), d = |x_q − x_p|, then x_p += w_p/(w_p + w_q) · u and x_q −= w_q/(w_p + w_q) · u
   (w the inverse masses: the centre of mass stays put). The gap is the thickness, or, for mesh
   neighbours whose rest distance is below it, the rest distance, so the cloth's own edges are not
   fought. Pairs from different cloths always keep the thickness: this is the inter-cloth collision
   (a cape against a flag), with the same machinery. A particle this substep's contacts hold
   (static friction on a collider, or squeezed out of a pinch: ``Cloth.contact`` ``STUCK``,
   ``HELD``) counts as immovable here, as it does in the yarns' pass after the collisions: its
   partner takes the whole push. Shared by inverse mass, a tablecloth's folds would push the cloth
   lying on the table along it every substep, and nothing would take that back (docs/models.md,
   "creep on a table"). The same holds in ``self_collision_mode="triangle"``'s
   particle-against-triangle pass;
4. friction between layers: a touching pair's motions over the substep are pulled toward their
   average by the cloths' friction (0 slides freely, 1 moves together).

Every contact is measured at the positions of the start of the pass (Jacobi) and written to
slots of a fixed particle range (chunk); the contacts are then applied in chunk order, so the
result does not depend on thread count. Separations are summed, friction averaged over each
particle's contacts (averaging the separations too lets a falling heap's pairs sink inside the
thickness; docs/performance.md, "Moved from docstrings"). Large cloths run the pass on all
threads (the hash in bucket ranges, "lanes"); small ones stay on one, with the same result.
A pass over the list costs a fraction of a build, so a list kept over substeps is cheaper than a hash built every
substep (docs/performance.md, "Moved from docstrings").
Coarse meshes, whose particles are farther apart than the thickness, can use
``self_collision_mode="triangle"``: a point–triangle proximity pass keeps particles off the
cloth's non-incident triangles as well.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np
from numba import prange

from loom.components import Cloth
from loom.components.cloth import HELD, STUCK
from loom.engine import App
from loom.engine.persist import persistent
from loom.systems.shared.held import hold

CHUNKS = 64
"""Fixed particle ranges of the pass (the same on any thread count: the same result)."""
LANES = 2
"""Ranges of hash buckets sorted side by side, on all threads (a fixed number: same table for any thread count)."""
BUCKETS_PER_PARTICLE = 4
"""Hash table size per particle (rounded up to a power of two). A cell of two thicknesses holds
about 4 particles of a sheet, so a cell has about 16 buckets: few other cells share one (more per
particle gain nothing and make a larger table to clear at each build)."""
CONTACTS_PER_PARTICLE = 4
"""Contact slots per particle to start with (a heap of cloth has about one; a chunk that runs out
doubles them all and the pass runs again)."""
PAIRS_PER_PARTICLE = 16
"""Pair-list slots per particle to start with (a draping cloth lists a few at the default skin; a chunk that
runs out doubles them all and the list is built again)."""
CLAMP = 0.3
"""Largest substep displacement of a self-colliding particle besides the motion all share
(``_common_motion``), as a fraction of its thickness (7 m/s relative to the rest for 25 mm cloth at 16
substeps of 1/60 s): a larger fraction lets more pairs of a falling heap get too close between two checks
(docs/performance.md, "Moved from docstrings")."""
SKIN = 1.0
"""Margin of the pair list, as a fraction of the thickest cloth's thickness: pairs closer than
thickness + skin when the list is built are listed. A larger skin lists more pairs and makes a
build dearer, a smaller one more escapees; 1.0 balances them (docs/performance.md,
"Moved from docstrings")."""
REBUILD_FRACTION = 0.075
"""The list is built again when more than this fraction of the particles escaped (drifted more
than half the skin since the build): an escapee's search is cheap and a build dear, and this fraction balances
them (docs/performance.md, "Moved from docstrings")."""


@persistent
class SelfCollisionBuffers:
    """Scratch of the self-collision system (resource): the packed particles of every colliding
    cloth, the hash and pair list of the last build, the contacts of the last pass."""

    def __init__(self) -> None:
        self.key: tuple[tuple[int, int], ...] = ()
        self.x = self.x_prev = self.rest = np.zeros((0, 3))
        self.inv_mass = self.thickness = self.friction = np.zeros(0)
        """Packed per particle; ``inv_mass`` is 0 where this substep's contacts hold a particle (``_unless_held``)."""
        self.held_mask = self.squeezed_mask = np.zeros(0, np.bool_)
        """Scratch of ``_unless_held``."""
        self.cloth = np.zeros(0, np.int32)
        self.thickest = 0.0
        self.stale = True
        """The list must be rebuilt at the next pass (a new set of cloths, or a pass that ran out of list slots)."""
        self.builds = np.zeros(1, np.int64)
        """Rebuilds of the pair list so far."""
        self.built = np.zeros((0, 3))
        self.box = np.zeros((CHUNKS, 6))
        self.drift = np.zeros((2, 3))
        """The common drift escapees are measured against, and the last pass's measured drift."""
        self.common = np.zeros(3)
        """This substep's motion all particles share [m] (``_common_motion``; the clamp leaves it alone)."""
        self.moved = np.zeros(0, np.bool_)
        self.escapees = np.zeros(0, np.int32)
        self.escapee_count = np.zeros(CHUNKS, np.int64)
        self.table = self.escapee_table = np.zeros(1, np.int32)
        self.bucket = np.zeros(0, np.int32)
        self.lane_list = np.zeros((LANES, 0), np.int32)
        self.lane_count = np.zeros((CHUNKS, LANES), np.int64)
        self.entries = self.escapee_entries = np.zeros(0, np.int32)
        self.keys = self.escapee_keys = np.zeros(0, np.int64)
        self.xs = self.escapee_xs = np.zeros((0, 3))
        self.cell_of = np.zeros((0, 3), np.int32)
        self.offsets = np.zeros(1, np.int64)
        self.pairs = np.zeros((0, 2), np.int32)
        self.gap2 = np.zeros(0)
        self.first_pair = self.last_pair = np.zeros(CHUNKS, np.int64)
        self.pair = np.zeros((0, 2), np.int32)
        self.push = self.slip = np.zeros((0, 3))
        self.first_slot = self.last_slot = np.zeros(CHUNKS, np.int64)
        self.count = np.zeros(0, np.int32)
        self.held = None
        """The arrays above as ``_pass`` takes them (a held ``Buffers``), made again whenever they are."""


def collide_self(app: App, h: float) -> None:
    """Separate particles of self-colliding cloths from each other (one pass per substep); particles the
    contacts hold this substep do not move (module docstring, item 3)."""
    clothes = [c for _, c in app.query(Cloth) if c.substepped and c.self_collision]
    if not clothes:
        return
    buffers = app.init_resource(SelfCollisionBuffers)
    key = tuple((id(c), c.particle_count) for c in clothes)   # tearing changes the count
    if key != buffers.key:
        _allocate(buffers, clothes, key)
    if app.clock.substep_index == 0:                   # each step builds its own list: a step's result depends
        buffers.stale = True                           # on its start state only, so a snapshot resumes bit-exact
    held, squeezed = _masks(buffers)
    if len(clothes) == 1:                              # one cloth: work on its own arrays
        x, x_prev = clothes[0].x, clothes[0].x_prev
        inv_mass = buffers.inv_mass
        _unless_held(clothes[0].inv_mass, clothes[0].contact, inv_mass, held, squeezed)
    else:                                              # several: one copy in per cloth, per substep
        x, x_prev, inv_mass = buffers.x, buffers.x_prev, buffers.inv_mass
        for k, c in enumerate(clothes):
            x[buffers.offsets[k]:buffers.offsets[k + 1]] = c.x
            x_prev[buffers.offsets[k]:buffers.offsets[k + 1]] = c.x_prev
            part = slice(buffers.offsets[k], buffers.offsets[k + 1])
            _unless_held(c.inv_mass, c.contact, inv_mass[part], held[part], squeezed[part])
    b = buffers
    common = _common(b)
    _common_motion(x, x_prev, common)                  # once: a pass run again clamps the same
    while True:
        status = _pass(x, x_prev, inv_mass, b.held, b.thickest, SKIN * b.thickest, CLAMP, common,
                       REBUILD_FRACTION * x.shape[0], b.stale)
        if status == 0:
            break
        if status == 1:                                # the pair list ran out: grow it, build again
            _allocate_pairs(b, 2 * b.pairs.shape[0] // max(1, x.shape[0]))
            b.stale = True
        else:                                          # a chunk's contact slots ran out
            _allocate_contacts(b, 2 * b.pair.shape[0] // max(1, x.shape[0]))
    b.stale = False
    _apply_contacts(inv_mass, b.pair, b.push, b.slip, b.first_slot, b.last_slot, b.count, x)
    for k, c in enumerate(clothes):
        if len(clothes) > 1:
            c.x[:] = x[buffers.offsets[k]:buffers.offsets[k + 1]]
        if c.self_collision_mode == "triangle":           # held particles stay put here too (their masked masses)
            _point_triangle(c.triangles, c.material.thickness, inv_mass[buffers.offsets[k]:buffers.offsets[k + 1]],
                            c.x)


def _common(buffers: SelfCollisionBuffers) -> np.ndarray:
    """``buffers``' (3,) common motion (a snapshot saved before it existed loads without it: made here)."""
    if getattr(buffers, "common", None) is None:
        buffers.common = np.zeros(3)
    return buffers.common


def _masks(buffers: SelfCollisionBuffers) -> tuple[np.ndarray, np.ndarray]:
    """``buffers``' scratch for ``_unless_held``, sized to its packed particles (a snapshot saved before they
    existed loads without them: made here)."""
    n = buffers.inv_mass.shape[0]
    if getattr(buffers, "held_mask", None) is None or buffers.held_mask.shape[0] != n:
        buffers.held_mask = np.zeros(n, np.bool_)
        buffers.squeezed_mask = np.zeros(n, np.bool_)
    return buffers.held_mask, buffers.squeezed_mask


def _unless_held(inv_mass: np.ndarray, contact: np.ndarray, out: np.ndarray, held: np.ndarray,
                 squeezed: np.ndarray) -> None:
    """``out`` = ``inv_mass`` with 0 for the particles this substep's contacts hold (``Cloth.contact`` column 3
    ``STUCK``: static friction; ``HELD``: squeezed out of a pinch); ``held`` and ``squeezed`` are (n,) bool
    scratch (nothing is allocated per substep)."""
    kind = contact[:, 3]
    np.equal(kind, STUCK, out=held)
    np.equal(kind, HELD, out=squeezed)
    np.logical_or(held, squeezed, out=held)
    np.copyto(out, inv_mass)
    np.copyto(out, 0.0, where=held)


def _power_of_two(n: int) -> int:
    """Smallest power of two >= n."""
    return 1 << max(0, int(n - 1).bit_length())


def _allocate(buffers: SelfCollisionBuffers, clothes: list[Cloth], key: tuple[tuple[int, int], ...]) -> None:
    """Size the packed arrays for this set of cloths, ``key`` (only when the set changes)."""
    n = sum(c.particle_count for c in clothes)
    buffers.key = key
    buffers.stale = True
    buffers.x = np.zeros((n, 3))
    buffers.x_prev = np.zeros((n, 3))
    buffers.inv_mass = np.zeros(n)
    buffers.rest = np.concatenate([c.rest_x for c in clothes])
    buffers.cloth = np.concatenate([np.full(c.particle_count, k, np.int32) for k, c in enumerate(clothes)])
    buffers.thickness = np.concatenate([np.full(c.particle_count, c.material.thickness) for c in clothes])
    buffers.friction = np.concatenate([np.full(c.particle_count, min(c.material.friction, 1.0)) for c in clothes])
    buffers.thickest = float(buffers.thickness.max())
    buffers.offsets = np.cumsum([0] + [c.particle_count for c in clothes])
    buffers.built = np.zeros((n, 3))
    buffers.moved = np.zeros(n, np.bool_)
    buffers.escapees = np.zeros(n, np.int32)
    buffers.table = np.zeros(_power_of_two(max(LANES, BUCKETS_PER_PARTICLE * n)) + 1, np.int32)
    buffers.escapee_table = np.zeros_like(buffers.table)
    buffers.bucket = np.zeros(n, np.int32)
    buffers.lane_list = np.zeros((LANES, n), np.int32)
    buffers.entries = np.zeros(n, np.int32)
    buffers.escapee_entries = np.zeros(n, np.int32)
    buffers.keys = np.zeros(n, np.int64)
    buffers.escapee_keys = np.zeros(n, np.int64)
    buffers.xs = np.zeros((n, 3))
    buffers.escapee_xs = np.zeros((n, 3))
    buffers.cell_of = np.zeros((n, 3), np.int32)
    buffers.count = np.zeros(n, np.int32)
    _allocate_pairs(buffers, PAIRS_PER_PARTICLE)
    _allocate_contacts(buffers, CONTACTS_PER_PARTICLE)


def _chunk_slots(n: int, per_particle: int) -> tuple[int, np.ndarray]:
    """Slots per chunk for ``per_particle`` entries per particle on average, and each chunk's first slot."""
    per_chunk = max(16, per_particle * n // CHUNKS + per_particle)
    return per_chunk * CHUNKS, np.arange(CHUNKS, dtype=np.int64) * per_chunk


def _allocate_pairs(buffers: SelfCollisionBuffers, per_particle: int) -> None:
    """Pair-list slots for ``per_particle`` pairs per particle on average, split evenly over the chunks."""
    slots, buffers.first_pair = _chunk_slots(buffers.x.shape[0], per_particle)
    buffers.pairs = np.zeros((slots, 2), np.int32)
    buffers.gap2 = np.zeros(slots)
    buffers.last_pair = buffers.first_pair.copy()
    _hold(buffers)


def _allocate_contacts(buffers: SelfCollisionBuffers, per_particle: int) -> None:
    """Contact slots for ``per_particle`` contacts per particle on average, split evenly over the chunks."""
    slots, buffers.first_slot = _chunk_slots(buffers.x.shape[0], per_particle)
    buffers.pair = np.zeros((slots, 2), np.int32)
    buffers.push = np.zeros((slots, 3))
    buffers.slip = np.zeros((slots, 3))
    buffers.last_slot = buffers.first_slot.copy()
    _hold(buffers)


def _hold(b: SelfCollisionBuffers) -> None:
    """Hold the buffers' arrays for ``_pass`` (after any of them was made anew)."""
    b.held = hold(Buffers(b.rest, b.cloth, b.thickness, b.friction, b.builds,
                          Build(b.built, b.cell_of, b.bucket, b.lane_list, b.lane_count),
                          Hash(b.table, b.entries, b.keys, b.xs),
                          Escapees(b.moved, b.escapees, b.escapee_count, b.box, b.drift),
                          Hash(b.escapee_table, b.escapee_entries, b.escapee_keys, b.escapee_xs),
                          PairList(b.pairs, b.gap2, b.first_pair, b.last_pair),
                          Contacts(b.pair, b.push, b.slip, b.first_slot, b.last_slot)))


class Particles(NamedTuple):
    """The packed particles of every self-colliding cloth (n of them), as the kernels read them."""

    x: np.ndarray
    """Positions at the end of the substep, (n, 3) [m]: clamped and separated."""
    x_prev: np.ndarray
    """Positions at its start, (n, 3) [m]."""
    inv_mass: np.ndarray
    """(n,) [1/kg]; 0: pinned or grabbed, not moved."""
    rest: np.ndarray
    """Rest positions, (n, 3) [m] (mesh neighbours' gaps, ``_gap2``)."""
    cloth: np.ndarray
    """Which cloth each particle is of, (n,) int32."""
    thickness: np.ndarray
    """Its cloth's thickness, (n,) [m]."""
    friction: np.ndarray
    """Its cloth's friction between layers, (n,) [-] (at most 1)."""


class Build(NamedTuple):
    """The particles as the pair list was last built: where, in which cell and bucket, in which lane."""

    built: np.ndarray
    """Positions at the build, (n, 3) [m]."""
    cell_of: np.ndarray
    """Grid cell at the build, (n, 3) int32."""
    bucket: np.ndarray
    """Hash bucket of that cell, (n,) int32."""
    lane_list: np.ndarray
    """Each lane's particles, listed per chunk from the chunk's first particle, (LANES, n) int32."""
    lane_count: np.ndarray
    """How many each chunk listed in each lane, (CHUNKS, LANES) int64."""


class Hash(NamedTuple):
    """A counting-sorted spatial hash: bucket b holds entries[table[b]: table[b + 1]] (``_sort_lane``)."""

    table: np.ndarray
    """Bucket starts, (size + 1,) int32, size a power of two."""
    entries: np.ndarray
    """The particles, bucket by bucket, (n,) int32."""
    keys: np.ndarray
    """Each entry's packed cell (``_cell_key``), (n,) int64."""
    xs: np.ndarray
    """Each entry's position as hashed, (n, 3) [m] (read in sequence by the scans)."""


class Escapees(NamedTuple):
    """The particles that drifted more than half the skin since the build, and the drift they are measured by."""

    moved: np.ndarray
    """Escaped, (n,) bool."""
    listed: np.ndarray
    """The escapees, each chunk's from its first particle on, (n,) int32."""
    count: np.ndarray
    """How many each chunk listed, (CHUNKS,) int64."""
    box: np.ndarray
    """Each chunk's bounds of the motions since the build, (CHUNKS, 6) [m]: low x, y, z, high x, y, z."""
    drift: np.ndarray
    """The common drift escapees are measured against, and the last pass's measured drift, (2, 3) [m]."""


class PairList(NamedTuple):
    """The pairs closer than the reach at the build, in fixed slots per chunk."""

    pairs: np.ndarray
    """(slots, 2) int32."""
    gap2: np.ndarray
    """Each pair's squared gap, (slots,) [m²] (``_gap2``, fixed at the build)."""
    first: np.ndarray
    """Each chunk's first slot, (CHUNKS,) int64."""
    last: np.ndarray
    """The slot after each chunk's last pair, (CHUNKS,) int64."""


@persistent
class Contacts(NamedTuple):
    """The contacts of a pass, in fixed slots per chunk (``_write_contact``)."""

    pair: np.ndarray
    """The two particles, (slots, 2) int32."""
    push: np.ndarray
    """Separation per unit inverse mass, (slots, 3) [m·kg]."""
    slip: np.ndarray
    """Friction pull on the first particle's motion, (slots, 3) [m]."""
    first: np.ndarray
    """Each chunk's first slot, (CHUNKS,) int64."""
    last: np.ndarray
    """The slot after each chunk's last contact, (CHUNKS,) int64 (−1 while a chunk has run out)."""


@persistent
class Buffers(NamedTuple):
    """Everything ``_pass`` keeps between passes (held once per allocation: ``_hold``)."""

    rest: np.ndarray
    cloth: np.ndarray
    thickness: np.ndarray
    friction: np.ndarray
    """rest … friction: as in ``Particles``."""
    builds: np.ndarray
    """Builds of the pair list so far, (1,) int64."""
    build: Build
    hash: Hash
    """The build's hash of every particle, at its built position."""
    escapees: Escapees
    escapee_hash: Hash
    """The escapees' hash at their present positions (a prefix of its table; ``_hash_escapees``)."""
    pairs: PairList
    contacts: Contacts


# --- kernels --------------------------------------------------------------------------------------
HASH_X, HASH_Y, HASH_Z = 1, 689287499, 283923481
"""Cell hash coefficients: large primes for y and z (Teschner et al. 2003) but 1 for x, so the three
cells of a row are adjacent buckets (one cache line) and particles in mesh order reuse them, where a
prime for x too would make 27 random bucket reads per particle (docs/performance.md, "Moved from docstrings")."""


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
def _clamp_and_flag(chunk, lo, hi, particles, fraction, common, half_skin2, built, escapees):
    """For particles lo … hi−1 (chunk ``chunk``): clamp the substep's motion less ``common`` (3,) [m], the
    motion all share (``_common_motion``), to fraction × thickness (anti-tunnelling; pinned and grabbed
    particles, of inverse mass 0, go where they are told);
    flag those that moved more than half the skin (half_skin2 its square [m²]) from where they were
    built, besides the common ``escapees.drift``, and list them from escapees.listed[lo] (return how
    many); bound the motions since the build in escapees.box[chunk], for the next pass's drift."""
    x, x_prev, inv_mass, thickness = particles.x, particles.x_prev, particles.inv_mass, particles.thickness
    box, drift, moved, listed = escapees.box, escapees.drift, escapees.moved, escapees.listed
    for c in range(3):
        box[chunk, c] = np.inf
        box[chunk, 3 + c] = -np.inf
    count = 0
    for p in range(lo, hi):
        if inv_mass[p] != 0.0:
            dx = x[p, 0] - x_prev[p, 0] - common[0]
            dy = x[p, 1] - x_prev[p, 1] - common[1]
            dz = x[p, 2] - x_prev[p, 2] - common[2]
            d = math.sqrt(dx * dx + dy * dy + dz * dz)
            limit = fraction * thickness[p]
            if d > limit * (1.0 + 1e-9):     # not d > limit: a pass run again (its list grew) must not
                # rescale an already clamped motion by an ulp — the result would depend on the list's size
                s = limit / d
                x[p, 0] = x_prev[p, 0] + common[0] + dx * s
                x[p, 1] = x_prev[p, 1] + common[1] + dy * s
                x[p, 2] = x_prev[p, 2] + common[2] + dz * s
        away = 0.0
        for c in range(3):
            m = x[p, c] - built[p, c]
            box[chunk, c] = min(box[chunk, c], m)
            box[chunk, 3 + c] = max(box[chunk, 3 + c], m)
            away += (m - drift[0, c]) ** 2
        moved[p] = away > half_skin2
        if away > half_skin2:
            listed[lo + count] = p
            count += 1
    return count


@numba.njit(cache=True)
def _common_motion(x, x_prev, common):
    """The substep's motion all particles share, into ``common`` (3,) [m]: per axis, the point of the
    interval of their motions x − x_prev nearest 0 (0 if the interval holds it: a particle rests or two
    move apart; else the smallest motion of all, so each particle's motion less it keeps its sign: the
    clamp, which scales that difference, never adds motion to a particle). A cloth in free fall shares all
    its motion: the clamp leaves it alone. Pinned, grabbed and contact-held particles (inverse mass 0, not
    clamped) count too: a sheet thrown at one held by static friction shares no motion with it and is
    clamped as before, where counting only the movable particles let it pass through (its fall was common);
    so for every pair the bound on the relative motion is at most the absolute clamp's. Serial, one read of
    x and x_prev (a few µs for 4096 particles; a parallel region per substep costs more on a busy machine)."""
    lx = ly = lz = np.inf
    hx = hy = hz = -np.inf
    for p in range(x.shape[0]):
        mx = x[p, 0] - x_prev[p, 0]
        my = x[p, 1] - x_prev[p, 1]
        mz = x[p, 2] - x_prev[p, 2]
        lx, hx = min(lx, mx), max(hx, mx)
        ly, hy = min(ly, my), max(hy, my)
        lz, hz = min(lz, mz), max(hz, mz)
    common[0] = lx if lx > 0.0 else (hx if hx < 0.0 else 0.0)
    common[1] = ly if ly > 0.0 else (hy if hy < 0.0 else 0.0)
    common[2] = lz if lz > 0.0 else (hz if hz < 0.0 else 0.0)


@numba.njit(cache=True)
def _next_drift(box, drift):
    """Predict the next pass's common drift (drift[0]) from the middle of this pass's motion box
    (a falling cloth's shared motion) and the last pass's: linear, exact for a steady fall. Any
    vector is correct (escapees are found against the same one); a good guess makes fewer."""
    for c in range(3):
        low, high = np.inf, -np.inf
        for chunk in range(box.shape[0]):
            low = min(low, box[chunk, c])
            high = max(high, box[chunk, 3 + c])
        middle = 0.5 * (low + high) if low <= high else 0.0
        drift[0, c] = 2.0 * middle - drift[1, c]
        drift[1, c] = middle


@numba.njit(cache=True)
def _locate(chunk, lo, hi, x, cell, build, size):
    """For particles lo … hi−1 (chunk ``chunk``) at a rebuild: keep the position as built, find the
    grid cell (of ``cell`` [m]) and hash bucket (of ``size``), and list the particle under its lane
    (bucket range), in order; all in ``build`` (a ``Build``)."""
    built, cell_of, bucket, lane_list, lane_count = build
    lanes = lane_count.shape[1]
    for lane in range(lanes):
        lane_count[chunk, lane] = 0
    for p in range(lo, hi):
        for c in range(3):
            built[p, c] = x[p, c]
            cell_of[p, c] = int(math.floor(x[p, c] / cell))
        b = _cell_hash(cell_of[p, 0], cell_of[p, 1], cell_of[p, 2], size)
        bucket[p] = b
        lane = b * lanes // size
        lane_list[lane, lo + lane_count[chunk, lane]] = p
        lane_count[chunk, lane] += 1


@numba.njit(cache=True)
def _sort_lane(lane, build, hash_):
    """Counting-sort the particles of one lane (of ``build``) into its buckets of ``hash_``: bucket b
    holds entries[table[b]: table[b + 1]], with each entry's packed cell in keys and its built
    position in xs (bucket order, so the scans read them in sequence).

    The lane writes table[b + 1] for its buckets only: counts, then starts (the prefix sum, from the
    particles of the lanes before), then, advanced by the fill, ends; so table[b] is bucket b's start
    when every lane is done, with no copy and no lane touching another's slots."""
    x, cell_of, bucket, lane_list, lane_count = build
    table, entries, keys, xs = hash_
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


@numba.njit(cache=True)
def _row_range(table, size, bucket, cells, part):
    """Entries [begin, end) of ``part`` of the row of ``cells`` consecutive buckets from ``bucket``:
    the whole row in one range (part 0), or, if the row wraps past the table's end, bucket by
    bucket (``_row_parts`` of them)."""
    if bucket + cells <= size:
        return table[bucket], table[bucket + cells]
    b = (bucket + part) & (size - 1)
    return table[b], table[b + 1]


@numba.njit(cache=True)
def _row_parts(size, bucket, cells):
    """Ranges the row of ``cells`` buckets from ``bucket`` is read in: 1, or ``cells`` if it wraps."""
    return cells if bucket + cells > size else 1


HALF_SHELL = ((0, 0), (0, 1), (1, -1), (1, 0), (1, 1))
"""Rows (dy, dz) of the forward half of a particle's 27 cells: its own row from its own cell on, and
the four rows after it. Every pair of particles lies in the forward half of exactly one of the two."""


@numba.njit(cache=True)
def _find_pairs(lo, hi, reach2, hash_, build, pairs, first, last):
    """List the pairs (p, q), p in lo … hi−1, closer than the reach (reach2 its square [m²]) at the
    build, each once (q in p's forward half-shell), in pairs[first …] from the build's ``hash_``;
    return the slot after the last, or −1 if ``last`` was reached (the caller grows the list and
    builds again).

    The cost is the scan of the candidates (several per listed pair):
    a row of cells is consecutive buckets (HASH_X = 1), read as one range that holds almost only
    particles of its row (``BUCKETS_PER_PARTICLE``); the row test is one
    compare of packed cell keys, positions are read from the bucket-ordered copy xs, and every
    candidate is written with no branch, the slot advancing only for the listed (a close candidate is a coin
    toss for the branch predictor; docs/performance.md, "Moved from docstrings")."""
    table, entries, keys, xs = hash_
    cell_of, built = build.cell_of, build.built
    size = table.shape[0] - 1
    mask = size - 1
    slot = first
    for p in range(lo, hi):
        cx, cy, cz = cell_of[p, 0], cell_of[p, 1], cell_of[p, 2]
        px, py, pz = built[p, 0], built[p, 1], built[p, 2]
        base = cx * HASH_X + cy * HASH_Y + cz * HASH_Z
        for row in range(5):
            oy, oz = HALF_SHELL[row]
            own = row == 0                       # own row: cells cx and cx + 1 only
            left = 0 if own else 1
            cells = 2 if own else 3
            bucket = (base - left + oy * HASH_Y + oz * HASH_Z) & mask
            key = _cell_key(cx - left, cy + oy, cz + oz)
            for part in range(_row_parts(size, bucket, cells)):
                begin, end = _row_range(table, size, bucket, cells, part)
                if slot + end - begin > last:
                    return -1
                for e in range(begin, end):     # branch-free: write every candidate, keep the close ones
                    k = numba.uint64(keys[e] - key)
                    dx = px - xs[e, 0]
                    dy = py - xs[e, 1]
                    dz = pz - xs[e, 2]
                    q = entries[e]
                    pairs[slot, 0], pairs[slot, 1] = p, q
                    slot += (k < cells) & (dx * dx + dy * dy + dz * dz < reach2) & ~(own & (k == 0) & (q <= p))
    return slot


@numba.njit(cache=True, inline="always")
def _gap2(p, q, rest, cloth, thickness):
    """Squared gap of particles p and q [m²]: the mean thickness, or, for mesh neighbours whose rest
    distance is below it, the rest distance, so the cloth's own edges are not fought."""
    gap = 0.5 * (thickness[p] + thickness[q])
    g2 = gap * gap
    if cloth[p] == cloth[q]:
        rx = rest[p, 0] - rest[q, 0]
        ry = rest[p, 1] - rest[q, 1]
        rz = rest[p, 2] - rest[q, 2]
        g2 = min(g2, rx * rx + ry * ry + rz * rz)
    return g2


@numba.njit(cache=True, inline="always")
def _write_contact(p, q, dx, dy, dz, d2, gap, particles, contacts, slot):
    """Write the contact of p and q, closer than their ``gap`` (dx … = x_p − x_q, d2 its square
    length), to ``slot`` of ``contacts``; return the next free slot (the same if neither can move or
    they coincide).

    push is the pair's separation per unit inverse mass ((gap − d) / d / (w_p + w_q) × (x_p − x_q):
    p moves by w_p × push, q by −w_q × push); slip the friction pull on p's motion over the substep
    toward q's (f × (Δx_q − Δx_p), q gets the opposite)."""
    x, x_prev, inv_mass, friction = particles.x, particles.x_prev, particles.inv_mass, particles.friction
    pair, push, slip = contacts.pair, contacts.push, contacts.slip
    w = inv_mass[p] + inv_mass[q]
    if w == 0.0 or d2 < 1e-24:
        return slot
    d = math.sqrt(d2)
    s = (gap - d) / (d * w)
    f = 0.25 * (friction[p] + friction[q])
    pair[slot, 0], pair[slot, 1] = p, q
    push[slot, 0], push[slot, 1], push[slot, 2] = dx * s, dy * s, dz * s
    for c in range(3):
        slip[slot, c] = f * ((x[q, c] - x_prev[q, c]) - (x[p, c] - x_prev[p, c]))
    return slot + 1


@numba.njit(cache=True)
def _pair_gaps(first, last, pairs, gap2, particles):
    """The squared gap of each listed pair first … last−1, fixed at the build."""
    rest, cloth, thickness = particles.rest, particles.cloth, particles.thickness
    for k in range(first, last):
        gap2[k] = _gap2(pairs[k, 0], pairs[k, 1], rest, cloth, thickness)


LIST_BLOCK = 256
"""Listed pairs screened per block (``_listed_contacts``): a block needs that many free contact slots."""


@numba.njit(cache=True)
def _listed_contacts(first, last, pair_list, particles, contacts, slot, last_slot):
    """Contacts among the listed pairs first … last−1, written to ``contacts`` from ``slot``; return
    the slot after the last, or −1 if ``last_slot`` was reached.

    Block by block, the list indices of the pairs closer than their gap are first copied to the
    free contact slots without a branch (every index is written, the slot advances if the pair
    touches: about one in ten does, at random, a branch mispredicted every other time), then each
    is measured and written over its index."""
    pairs, gap2, x, pair = pair_list.pairs, pair_list.gap2, particles.x, contacts.pair
    for block in range(first, last, LIST_BLOCK):
        end = min(block + LIST_BLOCK, last)
        if slot + end - block > last_slot:
            return -1
        touching = slot
        for k in range(block, end):
            p, q = pairs[k, 0], pairs[k, 1]
            dx = x[p, 0] - x[q, 0]
            dy = x[p, 1] - x[q, 1]
            dz = x[p, 2] - x[q, 2]
            pair[touching, 0] = k
            touching += dx * dx + dy * dy + dz * dz < gap2[k]
        for i in range(slot, touching):
            k = pair[i, 0]
            p, q = pairs[k, 0], pairs[k, 1]
            dx = x[p, 0] - x[q, 0]
            dy = x[p, 1] - x[q, 1]
            dz = x[p, 2] - x[q, 2]
            slot = _write_contact(p, q, dx, dy, dz, dx * dx + dy * dy + dz * dz, math.sqrt(gap2[k]), particles,
                                  contacts, slot)
    return slot


@numba.njit(cache=True)
def _hash_escapees(escapees, x, cell, hash_):
    """Counting-sort the escapees at their present positions x into ``hash_``, with about 16 buckets
    per escapee (a prefix of its table, a power of two plus one long), the layout of ``_sort_lane``;
    return its size. Serial: there are few escapees (more, and the list is rebuilt)."""
    escapee_count, listed = escapees.count, escapees.listed
    table, entries, keys, xs = hash_
    n = x.shape[0]
    chunks = escapee_count.shape[0]
    total = 0
    for chunk in range(chunks):
        total += escapee_count[chunk]
    size = 2
    while size < 16 * total and 2 * size < table.shape[0]:
        size *= 2
    table[:size + 1] = 0
    for chunk in range(chunks):
        lo = chunk * n // chunks
        for k in range(escapee_count[chunk]):
            p = listed[lo + k]
            table[_cell_hash(int(math.floor(x[p, 0] / cell)), int(math.floor(x[p, 1] / cell)),
                             int(math.floor(x[p, 2] / cell)), size)] += 1
    for b in range(1, size):                  # table[b]: the end of bucket b
        table[b] += table[b - 1]
    table[size] = total
    for chunk in range(chunks):               # filled from each bucket's end: table[b] ends at its start
        lo = chunk * n // chunks
        for k in range(escapee_count[chunk]):
            p = listed[lo + k]
            cx = int(math.floor(x[p, 0] / cell))
            cy = int(math.floor(x[p, 1] / cell))
            cz = int(math.floor(x[p, 2] / cell))
            b = _cell_hash(cx, cy, cz, size)
            e = table[b] - 1
            table[b] = e
            entries[e] = p
            keys[e] = _cell_key(cx, cy, cz)
            xs[e, 0], xs[e, 1], xs[e, 2] = x[p, 0], x[p, 1], x[p, 2]
    return size


@numba.njit(cache=True)
def _escapee_contacts(chunk, particles, build, escapees, hash_, escapee_hash, escapee_size, thickest, skin, contacts,
                      slot, last_slot):
    """Contacts of chunk ``chunk``'s escapees that the list cannot hold, the pairs that were farther
    apart than the reach at the build: with particles that stayed, from the build's ``hash_`` near
    the escapee's present position less the common drift (a stayer is within half the skin of where
    it was built plus the drift), and with later escapees, from ``escapee_hash`` (of escapee_size
    buckets). thickest, skin [m] as in ``_pass``. Written to ``contacts`` from ``slot``; return the
    slot after the last, or −1 if ``last_slot`` was reached."""
    lo = chunk * particles.x.shape[0] // escapees.count.shape[0]
    for k in range(escapees.count[chunk]):
        p = escapees.listed[lo + k]
        slot = _scan_escapee(p, True, particles, build, escapees, hash_, hash_.table.shape[0] - 1, thickest, skin,
                             contacts, slot, last_slot)
        if slot < 0:
            return -1
        slot = _scan_escapee(p, False, particles, build, escapees, escapee_hash, escapee_size, thickest, skin,
                             contacts, slot, last_slot)
        if slot < 0:
            return -1
    return slot


@numba.njit(cache=True)
def _scan_escapee(p, stayers, particles, build, escapees, hash_, size, thickest, skin, contacts, slot, last_slot):
    """Scan the 27 cells around escapee p's present position in one hash (of ``size`` buckets): the
    build's (``stayers``: xs holds positions as built, a candidate must not have moved and be within
    thickest + half the skin of p less the drift) or the escapees' (xs holds present positions; q > p,
    so a pair is found once). Pairs listed at the build (closer than the reach, thickest + skin,
    then) are the list's; the others touching p get a contact, from slot on (−1 if ``last_slot`` was
    reached)."""
    x, rest, cloth, thickness = particles.x, particles.rest, particles.cloth, particles.thickness
    built, moved, drift = build.built, escapees.moved, escapees.drift
    table, entries, keys, xs = hash_
    cell = thickest + skin
    reach2 = cell * cell
    near2 = (thickest + 0.5 * skin) ** 2 if stayers else thickest * thickest
    mask = size - 1
    px, py, pz = x[p, 0], x[p, 1], x[p, 2]
    ax, ay, az = (px - drift[0, 0], py - drift[0, 1], pz - drift[0, 2]) if stayers else (px, py, pz)
    cx, cy, cz = int(math.floor(ax / cell)), int(math.floor(ay / cell)), int(math.floor(az / cell))
    base = cx * HASH_X + cy * HASH_Y + cz * HASH_Z
    thickest2 = thickest * thickest
    for oy in range(-1, 2):
        for oz in range(-1, 2):
            bucket = (base - 1 + oy * HASH_Y + oz * HASH_Z) & mask
            key = _cell_key(cx - 1, cy + oy, cz + oz)
            for part in range(_row_parts(size, bucket, 3)):
                begin, end = _row_range(table, size, bucket, 3, part)
                for e in range(begin, end):
                    if numba.uint64(keys[e] - key) >= 3:
                        continue
                    ex, ey, ez = ax - xs[e, 0], ay - xs[e, 1], az - xs[e, 2]
                    if ex * ex + ey * ey + ez * ez >= near2:
                        continue
                    q = entries[e]
                    if (moved[q] if stayers else q <= p):
                        continue
                    bx = built[p, 0] - built[q, 0]
                    by = built[p, 1] - built[q, 1]
                    bz = built[p, 2] - built[q, 2]
                    if bx * bx + by * by + bz * bz < reach2:
                        continue
                    dx, dy, dz = px - x[q, 0], py - x[q, 1], pz - x[q, 2]
                    d2 = dx * dx + dy * dy + dz * dz
                    if d2 >= thickest2:
                        continue
                    g2 = _gap2(p, q, rest, cloth, thickness)
                    if d2 >= g2:
                        continue
                    if slot == last_slot:
                        return -1
                    slot = _write_contact(p, q, dx, dy, dz, d2, math.sqrt(g2), particles, contacts, slot)
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
def _slots_fit(first_slot, last_slot):
    """False if some chunk ran out of slots (its kernel returned −1: its slots are then emptied, and
    the caller grows them and runs the pass again); True if every chunk's fit."""
    fit = True
    for chunk in range(first_slot.shape[0]):
        if last_slot[chunk] < 0:
            fit = False
            last_slot[chunk] = first_slot[chunk]
    return fit


@numba.njit(cache=True, parallel=True)
def _pass(x, x_prev, inv_mass, buffers, thickest, skin, fraction, common, rebuild_at, force):
    """One self-collision pass: clamp and flag, rebuild the pair list if ``force`` or more than
    ``rebuild_at`` particles escaped, then find the contacts of the list and of the escapees.

    x, x_prev (n, 3) [m], inv_mass (n,) of the packed particles; buffers: the held ``Buffers``;
    thickest [m] the largest thickness, skin [m] the list's margin (cell = thickest + skin); fraction
    the clamp (``CLAMP``) of the motion less ``common`` (3,) [m] (``_common_motion``), which also predicts
    the drift of the pass after a rebuild. Return 0, or 1 if the pair list ran out of slots (grow it, force a
    rebuild), 2 if the contact slots did (grow them). Chunks and lanes are spread over the threads,
    each writing only its own particles, buckets and slots (the escapees' table is built on one), so
    the list and the contacts are the same on any thread count. Even a 16×16 cloth runs it on the
    threads: a one-thread twin (plain ``range``) would gain next to nothing on one thread and lose on two
    (docs/performance.md, "Moved from docstrings")."""
    b = buffers.value
    # built here by their classes: numba's parfors take a named tuple into a prange body only then
    particles = Particles(x, x_prev, inv_mass, b.rest, b.cloth, b.thickness, b.friction)
    build, hash_, escapees = Build(*b.build), Hash(*b.hash), Escapees(*b.escapees)
    escapee_hash, pair_list, contacts = Hash(*b.escapee_hash), PairList(*b.pairs), Contacts(*b.contacts)
    builds, moved, escapee_count, box, drift = b.builds, escapees.moved, escapees.count, escapees.box, escapees.drift
    first_pair, last_pair, first_slot, last_slot = pair_list.first, pair_list.last, contacts.first, contacts.last
    pair_slots, contact_slots, size = pair_list.pairs.shape[0], contacts.pair.shape[0], hash_.table.shape[0] - 1
    n = x.shape[0]
    chunks = first_slot.shape[0]
    cell = thickest + skin
    for chunk in prange(chunks):
        escapee_count[chunk] = _clamp_and_flag(chunk, chunk * n // chunks, (chunk + 1) * n // chunks, particles,
                                               fraction, common, (0.5 * skin) ** 2, build.built, escapees)
    total = 0
    for chunk in range(chunks):              # not .sum(): parallel numba makes that a reduction, which allocates
        total += escapee_count[chunk]
    rebuilt = force or total > rebuild_at
    if rebuilt:
        builds[0] += 1
        drift[1, :] = 0.0                    # nothing moved since this build; the next pass's motion: this
        drift[0, :] = common                 # one's common (a falling cloth's fall, else few escape: no rebuild)
        for chunk in prange(chunks):
            lo, hi = chunk * n // chunks, (chunk + 1) * n // chunks
            _locate(chunk, lo, hi, x, cell, build, size)
            moved[lo:hi] = False
            escapee_count[chunk] = 0
        for lane in prange(build.lane_count.shape[1]):
            _sort_lane(lane, build, hash_)
        for chunk in prange(chunks):
            last_pair[chunk] = _find_pairs(chunk * n // chunks, (chunk + 1) * n // chunks, cell * cell, hash_, build,
                                           pair_list.pairs, first_pair[chunk], first_pair[chunk] + pair_slots // chunks)
        if not _slots_fit(first_pair, last_pair):
            return 1
        for chunk in prange(chunks):
            _pair_gaps(first_pair[chunk], last_pair[chunk], pair_list.pairs, pair_list.gap2, particles)
        total = 0
    for chunk in prange(chunks):
        last_slot[chunk] = _listed_contacts(first_pair[chunk], last_pair[chunk], pair_list, particles, contacts,
                                            first_slot[chunk], first_slot[chunk] + contact_slots // chunks)
    if total > 0:
        escapee_size = _hash_escapees(escapees, x, cell, escapee_hash)
        for chunk in prange(chunks):
            if last_slot[chunk] >= 0:
                last_slot[chunk] = _escapee_contacts(chunk, particles, build, escapees, hash_, escapee_hash,
                                                     escapee_size, thickest, skin, contacts, last_slot[chunk],
                                                     first_slot[chunk] + contact_slots // chunks)
    if not rebuilt:                          # box holds the motions since the build
        _next_drift(box, drift)
    return 0 if _slots_fit(first_slot, last_slot) else 2


@numba.njit(cache=True)
def _point_triangle(triangles, thickness, inv_mass, x):
    """Keep every particle ``thickness`` off each non-incident triangle of its cloth (coarse meshes).

    Triangles are bucketed by a uniform grid of cell = the longest triangle edge + thickness; a
    particle inside the slab of a nearby triangle is pushed out along the triangle's normal, on
    the side it is on, and the triangle's corners the other way by barycentric weights (mass
    weighted, so momentum is kept; a particle the contacts hold has inverse mass 0 in ``inv_mass``, and stays put).
    The point–triangle proximity of Bridson et al. 2002 resolved as a position constraint
    (``_push_off_triangle``): with n the unit normal, (b_i, b_j, b_k) the barycentric coordinates of p's
    projection (inside the triangle), depth = thickness − |height| and w the inverse masses,
    s = ±depth / (w_p + b_i²·w_i + b_j²·w_j + b_k²·w_k) (the sign of the side p is on), x_p += w_p·s·n and each
    corner c −= w_c·b_c·s·n.
    Serial: triangles share corners."""
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
