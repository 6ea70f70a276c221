"""Yarns: every warp and weft line of a cloth's stretch links solved as a line, one tridiagonal system per line.

Why. A Gauss–Seidel sweep (``constraints._solve``) moves a correction one link per sweep, so a cloth that hangs
from a contact (a tablecloth's skirt, a sheet on a ball, a cape pressed by the wind) carries its weight down
tens of links on a few sweeps a substep and stretches 5–20 % (docs/models.md, "Stiffness"). Woven cloth is
made of yarns that barely stretch; a yarn is a chain, and a chain's links can be solved together in O(links).

What. ``build_yarns`` splits the stretch links into yarns: greedy walks that keep going the straightest way in
the rest shape (cos ≥ ``STRAIGHT``), so a grid's yarns are its rows and columns and a disc's run along its three
lattice directions. Yarns are coloured so two of one colour share no particle (``loom.engine.coloring``).

Per yarn of particles v₀ … v_m and links k = 1 … m (link k from v_{k−1} to v_k, unit direction n_k, length l_k,
rest length l₀ₖ, compliance α̃_k = α_k/h², multiplier λ_k), one XPBD step (Macklin et al. 2016 eqs. 10–12, with
Provot 1995's and Fuhrmann et al. 2003's distance constraints C_k = l_k − l₀ₖ) on the yarn's links together, the
rest of the cloth held where it is, is the linear system (∇C W ∇Cᵀ + α̃) Δλ = −C − α̃λ. Only links that share a
particle couple, so it is tridiagonal:

    A_kk = w_{k−1} + w_k + α̃_k,   A_{k,k+1} = −w_k (n_k · n_{k+1}),   b_k = l₀ₖ − l_k − α̃_k λ_k,

then λ += Δλ and x_{v_k} += w_k (n_k Δλ_k − n_{k+1} Δλ_{k+1}) (mass-weighted, Fuhrmann eqs. 6–9: the centre of
mass stays). A is symmetric, positive definite and diagonally dominant, so the Thomas algorithm (Gaussian
elimination without pivoting) is stable; a link between two fixed particles (w = 0, α̃ = 0) has a zero row and is
skipped. For a straight yarn the linearisation is exact: one solve puts every link at its rest length (tested);
a bent one converges over the iterations. This is line relaxation — a block Gauss–Seidel whose blocks are lines,
as in alternating-direction methods — and it is what lets a correction cross a 64-link overhang in one sweep.

Heavy yarns. The step above is Gauss–Newton: it drops the links' curvature, the term λ ∇²C_k = λ (I − n nᵀ)/l of the
Hessian of the projection's Lagrangian (their geometric stiffness). That is harmless while neighbours weigh alike,
but a light particle between heavy ones (a rope of 1 g and 10 kg beads, a weight hung on a sheet) is where it fails:
near a straight line the light particle's sideways move shortens its links only to first order in its angle, so the
linear solve asks it to move tens of times farther than its links are long, and their true lengths (second order in
that move) overshoot, and the next substep starts from that: such a rope stretched to many times its length
(tests/test_stress.py). A yarn whose neighbours' inverse masses differ by more than ``HEAVY_RATIO`` is solved with
each free particle's inverse mass replaced by (m I + Σ k̃ (I − n nᵀ))⁻¹ over its two links on the yarn, k̃ =
−λ/l₀ ≥ 0 from the link's multiplier at the end of the previous substep (tension only: a compressed link's negative
stiffness would make the step indefinite): the Newton step with the geometric stiffness, as in Tournier et al. 2015
("Stable constrained dynamics", SIGGRAPH) and Andrews et al. 2017 ("Geometric stiffness for real-time constrained
multibody dynamics", Eurographics), both written for chains of very unequal masses; the multipliers are the last
substep's, as this substep's are not known before its solve. Along a straight yarn (I − n nᵀ) n = 0, so the step
there is the plain one and stays exact; sideways, a light particle under tension T moves as if it weighed m + h² T
(1/l₁ + 1/l₂), so the line solve's answer stays where its linearisation holds. Its solve is ``_solve_heavy``: one
yarn at a time, the inverse of each 3 × 3 block in closed form (two links: a 2 × 2 system,
Sherman–Morrison–Woodbury).

Cost: the Thomas algorithm is about twice a link projection's arithmetic per link, and only stretch links are
yarns (a third of a grid's links). A heavy yarn costs more (its 3 × 3 blocks, one yarn at a time, not four side
by side); a cloth without one pays a test per yarn.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np
from numba.core.cpu import CPUTargetOptions

from loom.components.cloth import HELD, STUCK
from loom.launch.cold_kernels import called_from, python_twin
from loom.engine.coloring import color_groups

STRAIGHT = 0.7
"""Cosine [-] above which a walk continues a yarn into the next stretch link at a particle (about 45°): a grid's
row turns 90° at a corner, a disc's lattice line 60° from the next, so neither continues around a corner."""
PIVOT_FLOOR = 0.25
"""Smallest pivot, as a fraction of its row's diagonal [-], of the link that closes a stretch of yarn between two fixed
particles (pins, grabs). Such a stretch held nearly straight has a nearly singular system: no move can shorten it, and
the unfloored solve answers a tiny residual with a huge tension whose sideways part throws the yarn about (a taut
47-link rope between two pins: 10 m/s; the sandbox's hands tearing the sheet apart: 50 m/s). Flooring that pivot
bounds the tension, and the taut rope hangs still (0.2 m/s) at the strain plain sweeps leave (2.6 % against 2.3 %).
Every other pivot is exact, however small: a yarn eliminated from its free end toward a pin ends on a pivot of
1/m of its diagonal (m links), which is the true answer there (floored, a curtain's columns hung 2–4 % long)."""
TAUT = 0.999
"""A stretch of yarn between two fixed particles whose ends are at least this fraction of its rest length apart [-]
cannot reach its rest length: no solve has an answer, and the line solve jerks its particles sideways each pass (the
sandbox's hands pulling the hem apart: 60–80 m/s). Such a yarn is projected link by link that pass, as plain sweeps
do, which spread the stretch calmly, each particle with its mobility in the pass. After the collisions the fixed
particles are the pinned, grabbed and squeezed-out ones (``HELD``); one static friction holds (``STUCK``) moves in the
solve and is then held back by the friction its contact left (``_held_back``). Stops 34–35 fixed it too: a flat cloth
on a table was then taut between any two such particles and most yarns across a table went link by link, and where the
drop left a cloth stretched between them it stayed so (docs/models.md, "Friction after the collisions")."""
NO_REFCOUNT = {"_nrt": False} if hasattr(CPUTargetOptions, "_nrt") else {}
"""numba's options for a kernel that allocates nothing: no reference counting (its private ``_nrt`` option, there
since numba 0.4x; with a numba that drops it, the kernels compile with counting, slower, not wrong). A kernel whose
per-entry helpers take arrays otherwise counts a reference to each array at every call (``solve_yarn_group``)."""
SCRATCH = 8
"""Scratch values per yarn entry: the direction of the link into it (3), then that link's row of the system after
elimination: diagonal, right-hand side, and the off-diagonal with the previous link; 1.0 if the link closes a
stretch between two fixed particles (``PIVOT_FLOOR``); last, on a heavy yarn (``HEAVY_RATIO``), the link's tension
stiffness over a substep, −λ/l₀ [kg] of its multiplier at the end of the previous substep (0 if slack), and at each
yarn's first entry (no link into it) 1.0 if the yarn is heavy, else 0.0 (``mark_heavy``)."""
HEAVY_RATIO = 20.0
"""Inverse masses [-] of two neighbours along a yarn (neither fixed) more than this many times apart make the yarn
heavy: its solve adds the links' geometric stiffness (``_solve_heavy``). Neighbours on a mesh's own masses differ
a few times at most (4× on a grid, where a corner carries one triangle; 3× on a disc), so cloth built from a mesh
is not heavy and keeps the plain solve; a rope of light and heavy beads, a weight hung on a sheet or a sheet with
its inverse masses overridden is."""


class Yarns(NamedTuple):
    """A cloth's yarns as the solve reads them (built by ``build_yarns``; p particle entries, y yarns)."""

    particles: np.ndarray
    """Particles of each yarn in order, (p,) int32: yarn y is particles[offsets[y]:offsets[y + 1]]."""
    links: np.ndarray
    """Link (colour-order index into the cloth's link tables) from the previous particle of the yarn to this one,
    (p,) int32; −1 at each yarn's first particle."""
    offsets: np.ndarray
    """First entry of each yarn, (y + 1,) int64, yarns in colour order."""
    color_offsets: np.ndarray
    """First yarn of each colour, (colours + 1,) int32: the yarns of a colour share no particle."""
    scratch: np.ndarray
    """Work space of the solve, (p, ``SCRATCH``) float64: a yarn writes only its own rows."""


def mark_heavy(yarns: Yarns, inv_mass: np.ndarray) -> None:
    """Flag the heavy yarns in ``yarns.scratch`` (column 7 of each yarn's first entry: 1.0 heavy, 0.0 not; module
    docstring): those with two neighbours, neither fixed (inverse mass 0), whose inverse masses ``inv_mass`` (n,)
    [1/kg] differ by more than ``HEAVY_RATIO``. Called when the solve's tables are built (a new inverse-mass array
    rebuilds them) and when ``Cloth.changes`` moves (inverse masses written in place: pins, grabs, a game's
    masses)."""
    first = yarns.offsets[:-1]
    yarns.scratch[first, 7] = 0.0
    if yarns.particles.shape[0] < 2:
        return
    w = np.asarray(inv_mass, np.float64)[yarns.particles]
    a, b = w[:-1], w[1:]
    inside = yarns.links[1:] >= 0                          # a link into the entry: the pair is on one yarn
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    far = inside & (lo > 0.0) & (hi > HEAVY_RATIO * lo)
    yarn = np.repeat(np.arange(first.shape[0]), np.diff(yarns.offsets))[1:]
    heavy = np.bincount(yarn[far], minlength=first.shape[0]) > 0
    yarns.scratch[first[heavy], 7] = 1.0


@numba.njit(inline="always", error_model="numpy")
def remember_tension(offsets, links, scratch, link_lambda, link_rest):
    """Before a substep's solve resets the multipliers: on each heavy yarn (``mark_heavy``), each link's tension
    stiffness over the last substep, max(−λ, 0)/l₀ [kg] (λ [kg·m], the link's multiplier after that substep's two
    passes; ``link_rest`` [m]) into ``scratch`` column 7 of the entry it leads to. A test per yarn elsewhere."""
    one = np.uint64(1)
    for y in range(offsets.shape[0] - 1):
        first = np.uint64(offsets[y])
        if scratch[first, 7] == 0.0:
            continue
        for e in range(first + one, np.uint64(offsets[y + 1])):
            k = np.uint64(links[e])
            scratch[e, 7] = max(-link_lambda[k], 0.0) / link_rest[k]


def build_yarns(link_i: np.ndarray, link_j: np.ndarray, stretch: np.ndarray, rest_x: np.ndarray) -> Yarns:
    """Split the links flagged in ``stretch`` (c,) bool into coloured yarns (module docstring).

    link_i, link_j (c,) int32: the cloth's link tables in colour order; rest_x (n, 3) [m]: the rest shape, whose
    straight lines the yarns follow. Every stretch link lies in exactly one yarn. The sorting and gathering are
    NumPy's: the one kernel here (the walk) keeps a first launch's compile short."""
    link_i = np.ascontiguousarray(link_i, np.int32)
    link_j = np.ascontiguousarray(link_j, np.int32)
    stretch = np.ascontiguousarray(stretch, np.bool_)
    n = rest_x.shape[0]
    degree = np.bincount(link_i[stretch], minlength=n) + np.bincount(link_j[stretch], minlength=n)
    starts = np.argsort(degree, kind="stable")       # line ends first: fewest stretch links
    particles, links, offsets = _walk_call(link_i, link_j, stretch, np.ascontiguousarray(rest_x, np.float64),
                                      starts.astype(np.int64), STRAIGHT)
    order, color_offsets = color_groups(particles, offsets, n)
    sizes = np.diff(offsets)[order]
    new_offsets = np.zeros(order.shape[0] + 1, np.int64)
    np.cumsum(sizes, out=new_offsets[1:])
    entries = np.repeat(offsets[order] - new_offsets[:-1], sizes) + np.arange(new_offsets[-1])
    return Yarns(particles[entries], links[entries], new_offsets, color_offsets,
                 np.zeros((particles.shape[0], SCRATCH)))


@numba.njit(cache=True)
def _walk(link_i, link_j, stretch, rest_x, starts, straight):
    """Greedy straight walks over the stretch links: (particles (p,) int32, links (p,) int32, offsets (y + 1,)).

    Walks start at the particles in the order ``starts`` (n,) (the fewest stretch links first: a grid's corners,
    then its edges, the ends of lines) and extend both ways, at each particle into the unused stretch link closest
    to the walk's direction in the rest shape, if its cosine is at least ``straight``."""
    n = rest_x.shape[0]
    c = link_i.shape[0]
    degree = np.zeros(n, np.int64)
    for k in range(c):
        if stretch[k]:
            degree[link_i[k]] += 1
            degree[link_j[k]] += 1
    start = np.zeros(n + 1, np.int64)
    for p in range(n):
        start[p + 1] = start[p] + degree[p]
    fill = start[:-1].copy()
    adjacent = np.empty(start[n], np.int64)
    for k in range(c):
        if stretch[k]:
            adjacent[fill[link_i[k]]] = k
            fill[link_i[k]] += 1
            adjacent[fill[link_j[k]]] = k
            fill[link_j[k]] += 1
    used = np.zeros(c, np.bool_)
    count = 0
    for k in range(c):
        count += stretch[k]
    # each yarn of m links holds m + 1 particles; there are at most `count` yarns
    particles = np.empty(2 * count, np.int32)
    links = np.empty(2 * count, np.int32)
    offsets = np.zeros(count + 1, np.int64)
    forward = np.empty(count + 1, np.int64)     # scratch: one walk's particles and links, each way
    forward_link = np.empty(count + 1, np.int64)
    backward = np.empty(count + 1, np.int64)
    backward_link = np.empty(count + 1, np.int64)
    stamp = np.full(n, -1, np.int64)            # the yarn a particle was last put in: a yarn never closes a loop
    yarns = 0
    entry = 0
    for p0 in starts:                           # int64, as p1 and k0 below: _extend compiles once
        for s in range(start[p0], start[p0 + 1]):
            k0 = adjacent[s]
            if used[k0]:
                continue
            used[k0] = True
            p1 = np.int64(link_j[k0] if link_i[k0] == p0 else link_i[k0])   # one signature for _extend
            stamp[p0] = yarns
            stamp[p1] = yarns
            nf = _extend(p0, p1, k0, link_i, link_j, rest_x, start, adjacent, used, straight, forward, forward_link,
                         stamp, np.int64(yarns))
            nb = _extend(p1, p0, np.int64(-1), link_i, link_j, rest_x, start, adjacent, used, straight, backward,
                         backward_link, stamp, np.int64(yarns))
            # the yarn: the backward walk beyond p0 reversed, p0, then the forward walk from p1
            for b in range(nb - 1, 1, -1):
                particles[entry] = backward[b]
                links[entry] = -1 if b == nb - 1 else backward_link[b + 1]
                entry += 1
            particles[entry] = p0
            links[entry] = -1 if nb == 2 else backward_link[2]
            entry += 1
            for f in range(1, nf):
                particles[entry] = forward[f]
                links[entry] = forward_link[f]
                entry += 1
            yarns += 1
            offsets[yarns] = entry
    return particles[:entry].copy(), links[:entry].copy(), offsets[:yarns + 1].copy()


@numba.njit(cache=True)
def _extend(prev, here, link, link_i, link_j, rest_x, start, adjacent, used, straight, walk, walk_link, stamp,
            yarn):
    """Walk on from ``here`` (reached from ``prev`` through ``link``, −1 for none yet) while a straight enough
    unused stretch link leads to a particle not yet in this yarn (``stamp`` (n,) holds each particle's last yarn;
    the walk stamps what it adds with ``yarn``); walk[0] = prev, walk[1] = here, …; walk_link[t] = the link into
    walk[t]. Returns the number of particles written."""
    walk[0] = prev
    walk[1] = here
    walk_link[0] = -1
    walk_link[1] = link
    t = 2
    a, b = prev, here
    while True:
        dx = rest_x[b, 0] - rest_x[a, 0]
        dy = rest_x[b, 1] - rest_x[a, 1]
        dz = rest_x[b, 2] - rest_x[a, 2]
        norm = math.sqrt(dx * dx + dy * dy + dz * dz)
        best = -1
        best_cos = straight
        for s in range(start[b], start[b + 1]):
            k = adjacent[s]
            q = link_j[k] if link_i[k] == b else link_i[k]
            if used[k] or stamp[q] == yarn:
                continue
            ex = rest_x[q, 0] - rest_x[b, 0]
            ey = rest_x[q, 1] - rest_x[b, 1]
            ez = rest_x[q, 2] - rest_x[b, 2]
            cos = (dx * ex + dy * ey + dz * ez) / (norm * math.sqrt(ex * ex + ey * ey + ez * ez) + 1e-300)
            if cos >= best_cos:
                best, best_cos = k, cos
        if best < 0:
            return t
        used[best] = True
        a = b
        b = link_j[best] if link_i[best] == b else link_i[best]
        stamp[b] = yarn
        walk[t] = b
        walk_link[t] = best
        t += 1




python_twin(_extend)
python_twin(_walk, _extend, size=lambda link_i, link_j, stretch, rest_x, *args: rest_x.shape[0])
_walk_call = _walk
called_from(__name__, _walk)     # a small cloth's yarns are walked in Python on a cold launch


@numba.njit(cache=True, error_model="numpy")
def solve_yarn(y, particles, links, offsets, scratch, link_rest, link_compliance, inv_h2, inv_mass, contact,
               resting_only, x, x_prev, link_lambda):
    """One linearised XPBD step of yarn y's links together (module docstring): tridiagonal, Thomas algorithm.

    particles, links, offsets, scratch: the cloth's ``Yarns`` (arrays, not the tuple: a parallel kernel's loop
    body takes arrays); link tables (colour order): rest [m], compliance α [m/N], multipliers (written);
    inv_h2 = 1/h² [1/s²]; inv_mass (n,) [1/kg]; contact (n, 5): ``Cloth.contact`` (with ``resting_only``, only
    contacts with colliders at rest count: a substep's solve, which adds the normal push each resting particle's
    surface takes to column 4, friction's budget in the collisions; else all, after the collisions); x (n, 3) [m]
    written; x_prev (n, 3) [m]: positions at the substep's start.

    A particle resting on a collider (normal c ≠ 0) moves only along the surface: its inverse mass becomes the
    projection W = w (I − c cᵀ), so in the rows n·W·n = w (1 − (n·c)²), the coupling of two links through it
    w (n₁·n₂ − (n₁·c)(n₂·c)), and its move w (g − c (c·g)) for g = n_k Δλ_k − n_{k+1} Δλ_{k+1}. Without it the
    solve pulled a yarn taut through a table's rim and the contact pushed it back out, stretching the links at the
    rim every substep (2–3 % at rest, docs/models.md). Contact is one-sided: a particle the solve pulls away from
    the surface (c·g > 0) moves freely and its normal is cleared, so later solves of the substep leave it free (a
    sheet sliding off a ball; kept, the separation line could not move and the sheet stayed 2 % stretched there).
    The normal is not kept when the pass after the collisions pulls a particle off: a cloth whose skirt tucks under
    a thin table's top shakes harder with it kept (docs/models.md, "Creep on a table").
    "Into the surface" is measured from where the particle met it: a resting particle the sweeps before the yarns
    lifted (a bend link over a table's rim) moves down as far as its position at the substep's start (``x_prev``, on
    the surface), and only the rest of the pull is the surface's push. Held at the lifted height instead, it dropped
    out of contact, fell back in the next substep and was pushed out again: the rim chattered (a tablecloth's fastest
    particle at rest 0.28–0.29 → 0.09–0.1 m/s, tests/test_yarns.py). The height is read only in the branch of a
    particle pressed into its surface: read for every particle (a select) it would slow the solve of every yarn
    (docs/performance.md, "Moved from docstrings").

    A yarn that touches a two-way body (``Cloth.contact`` column 3 = −1: a pymunk ball on a bed) is solved in the
    substep's solve (free of the body: it may press particles into it, and the body's reaction is the contact's push
    back at the next contact) and left alone after the collisions (``resting_only`` False): solved then, its
    particles slid round the ball and over its top (a 0.3 kg ball fell through a 0.05 kg bed at 1 and 4 substeps;
    left alone, it rebounds at 0.84× its impact speed).

    Three passes, so that only the elimination itself is a chain of dependent operations: the rows (directions,
    residuals: independent per link, pipelined), the forward elimination (one division per link, kept as the
    pivot's reciprocal), and the back substitution (multiplications only), which moves each particle once both
    its links' Δλ are known. Row e of ``scratch``: the unit direction of the link into entry e (0–2), the pivot's
    reciprocal (3), the right-hand side (4), the off-diagonal with the previous link (5).

    This is ``solve_yarn_group`` of y alone, in its copy with the contact tests (right whatever touches; on a cloth
    touching nothing the same result as the copy without): the solves run it on four yarns at a time and ask
    ``touches`` once a pass, not once a yarn."""
    solve_yarn_group(y, 1, particles, links, offsets, scratch, link_rest, link_compliance, inv_h2, inv_mass, contact,
                     resting_only, True, x, x_prev, link_lambda)


@numba.njit(cache=True, error_model="numpy", **NO_REFCOUNT)
def solve_yarn_group(y0, count, particles, links, offsets, scratch, link_rest, link_compliance, inv_h2, inv_mass,
                     contact, resting_only, touching, x, x_prev, link_lambda):
    """``solve_yarn`` of the ``count`` (1 … 4) yarns y0 … y0 + count − 1, which must share no particle (yarns of one
    colour), their dependent chains run side by side: the four eliminations, then the back substitutions two by two.

    ``touching``: ``touches(contact, resting_only)``, whether any particle of the cloth touches something this solve
    counts. Without, every normal is zero and every mobility the inverse mass, so the solve runs a copy of its loops
    compiled with those constants (``_group`` called with a literal False: numba compiles it once per literal and
    folds the contact tests away in that copy, and the normals' products by zero are skipped): the same positions to
    the bit, without reading ``contact`` at every entry. The cape game's cape touches nothing in every substep's
    solve and in four of five passes after the collisions, the flag game's flag never (docs/performance.md, "Stop
    39" and "Stop 40"). The cost: a first launch compiles ``_group``, ``_rows`` and ``_project_links`` twice; the
    same branch on a runtime flag, compiled once, saves less."""
    if touching:
        _group(y0, count, particles, links, offsets, scratch, link_rest, link_compliance, inv_h2, inv_mass, contact,
               resting_only, True, x, x_prev, link_lambda)
    else:
        _group(y0, count, particles, links, offsets, scratch, link_rest, link_compliance, inv_h2, inv_mass, contact,
               resting_only, False, x, x_prev, link_lambda)


@numba.njit(inline="always", error_model="numpy")
def touches(contact, resting_only):
    """Whether any particle's ``Cloth.contact`` row counts in a yarn solve: with ``resting_only`` one resting on a
    collider at rest (column 3 > 0), else any contact at all (a normal, or column 3 not 0)."""
    for p in range(contact.shape[0]):
        kind = contact[p, 3]
        if kind > 0.0 or not resting_only and (kind != 0.0 or contact[p, 0] != 0.0 or contact[p, 1] != 0.0
                                               or contact[p, 2] != 0.0):
            return True
    return False


@numba.njit(cache=True, error_model="numpy", **NO_REFCOUNT)
def _group(y0, count, particles, links, offsets, scratch, link_rest, link_compliance, inv_h2, inv_mass, contact,
           resting_only, touching, x, x_prev, link_lambda):
    """``solve_yarn_group``'s body, called with ``touching`` a literal True or False (one compiled copy each).

    Each yarn's elimination is a chain of divisions and its back substitution a chain through Δλ of the link after:
    each step waits for the one before, so one yarn leaves the core idle most of each step's latency. The four yarns'
    eliminations run interleaved, four independent chains the core runs at once (docs/performance.md, "Stop 40"),
    and their back substitutions two at a time (four gain nothing more and cost a first launch more compiling).
    Each yarn's arithmetic is the same, in the same order, as alone, and the yarns touch different particles, links
    and scratch rows, so the result is bit for bit ``solve_yarn`` of each in turn (tests/test_yarns.py)."""
    one = np.uint64(1)
    a_first, a_last, a_on, a_stuck = _open(y0, 0, count, particles, links, offsets, scratch, link_rest,
                                           link_compliance, inv_h2, inv_mass, contact, resting_only, touching, x,
                                           x_prev, link_lambda)
    b_first, b_last, b_on, b_stuck = _open(y0, 1, count, particles, links, offsets, scratch, link_rest,
                                           link_compliance, inv_h2, inv_mass, contact, resting_only, touching, x,
                                           x_prev, link_lambda)
    c_first, c_last, c_on, c_stuck = _open(y0, 2, count, particles, links, offsets, scratch, link_rest,
                                           link_compliance, inv_h2, inv_mass, contact, resting_only, touching, x,
                                           x_prev, link_lambda)
    d_first, d_last, d_on, d_stuck = _open(y0, 3, count, particles, links, offsets, scratch, link_rest,
                                           link_compliance, inv_h2, inv_mass, contact, resting_only, touching, x,
                                           x_prev, link_lambda)
    if not (a_on or b_on or c_on or d_on):
        return
    # forward elimination, the dependent chains: each yarn's first link's pivot, then the yarns' links side by side
    a_pivot, a_rhs, a_e, a_end = _first_pivot(a_first, a_last, a_on, scratch)
    b_pivot, b_rhs, b_e, b_end = _first_pivot(b_first, b_last, b_on, scratch)
    c_pivot, c_rhs, c_e, c_end = _first_pivot(c_first, c_last, c_on, scratch)
    d_pivot, d_rhs, d_e, d_end = _first_pivot(d_first, d_last, d_on, scratch)
    while a_e <= a_end or b_e <= b_end or c_e <= c_end or d_e <= d_end:   # one copy of each step per yarn
        if a_e <= a_end:
            a_pivot, a_rhs = _eliminate(a_e, scratch, a_pivot, a_rhs)
            a_e += one
        if b_e <= b_end:
            b_pivot, b_rhs = _eliminate(b_e, scratch, b_pivot, b_rhs)
            b_e += one
        if c_e <= c_end:
            c_pivot, c_rhs = _eliminate(c_e, scratch, c_pivot, c_rhs)
            c_e += one
        if d_e <= d_end:
            d_pivot, d_rhs = _eliminate(d_e, scratch, d_pivot, d_rhs)
            d_e += one
    # back substitution from each yarn's last entry to its first: Δλ of the link after, and its direction
    a_below = a_ox = a_oy = a_oz = 0.0
    b_below = b_ox = b_oy = b_oz = 0.0
    c_below = c_ox = c_oy = c_oz = 0.0
    d_below = d_ox = d_oy = d_oz = 0.0
    a_e, b_e, c_e, d_e = a_last, b_last, c_last, d_last
    for _ in range(2):                              # two chains at a time (four: a first launch compiled 13.0 s
        while a_on or b_on:                         # against 8.4, and they ran no faster): yarns a and b, then c, d
            a_on, a_e, a_below, a_ox, a_oy, a_oz = _back(a_on, a_e, a_first, a_last, a_below, a_ox, a_oy, a_oz,
                                                         a_stuck, particles, links, scratch, inv_mass, contact,
                                                         resting_only, touching, x, x_prev, link_lambda)
            b_on, b_e, b_below, b_ox, b_oy, b_oz = _back(b_on, b_e, b_first, b_last, b_below, b_ox, b_oy, b_oz,
                                                         b_stuck, particles, links, scratch, inv_mass, contact,
                                                         resting_only, touching, x, x_prev, link_lambda)
        a_on, a_e, a_first, a_last, a_below, a_ox, a_oy, a_oz, a_stuck = \
            c_on, c_e, c_first, c_last, c_below, c_ox, c_oy, c_oz, c_stuck
        b_on, b_e, b_first, b_last, b_below, b_ox, b_oy, b_oz, b_stuck = \
            d_on, d_e, d_first, d_last, d_below, d_ox, d_oy, d_oz, d_stuck
        c_on = d_on = False


@numba.njit(inline="always", error_model="numpy")
def _back(on, e, first, last, below, ox, oy, oz, stuck, particles, links, scratch, inv_mass, contact, resting_only,
          touching, x, x_prev, link_lambda):
    """One step of a yarn's back substitution (``_substitute`` at entry e) while it is ``on``; returns (whether it
    goes on, its next entry, Δλ of the link into e and that link's direction)."""
    if on:
        below, ox, oy, oz = _substitute(e, first, last, below, ox, oy, oz, particles, links, scratch, inv_mass,
                                        contact, resting_only, touching, stuck, x, x_prev, link_lambda)
        on = e != first
        e -= np.uint64(1) if on else np.uint64(0)
    return on, e, below, ox, oy, oz


@numba.njit(inline="always", error_model="numpy")
def _open(y0, i, count, particles, links, offsets, scratch, link_rest, link_compliance, inv_h2, inv_mass, contact,
          resting_only, touching, x, x_prev, link_lambda):
    """Yarn y0 + i of a group of ``count``: its rows (``_rows``), or its links one by one when it is taut between two
    fixed particles (``_project_links``); returns (first entry, last entry, whether the tridiagonal solve runs on it,
    ``stuck``). A heavy yarn (``HEAVY_RATIO``) is solved here whole (``_solve_heavy``) and not left to the group's
    solve. A yarn past the group's count: (0, 0, False, False)."""
    if i >= count:
        return np.uint64(0), np.uint64(0), False, False
    first = np.uint64(offsets[y0 + i])              # unsigned entries: no wraparound test per access
    last = np.uint64(offsets[y0 + i + 1] - 1)       # entries first … last: particles; links first + 1 … last
    mode, stuck = _rows(first, last, particles, links, scratch, link_rest, link_compliance, inv_h2, inv_mass,
                        contact, resting_only, touching, x, link_lambda)
    if mode == _LINKS:                              # pinned farther apart than its rest length: link by link
        _project_links(first, last, particles, links, link_rest, link_compliance, inv_h2, inv_mass, contact,
                       resting_only, touching, stuck, x, link_lambda)
    elif mode == _SOLVE and scratch[first, 7] != 0.0:   # heavy: solved here, with the geometric stiffness
        _solve_heavy(first, last, particles, links, scratch, link_rest, link_compliance, inv_h2, inv_mass, contact,
                     resting_only, touching, stuck, x, x_prev, link_lambda)
        mode = _DONE
    return first, last, mode == _SOLVE, stuck


@numba.njit(inline="always", error_model="numpy")
def _first_pivot(first, last, on, scratch):
    """The elimination's start for a yarn at entries first … last: (the first link's pivot reciprocal, its right-hand
    side, the next entry, the last entry); a yarn not solved (``on`` False) starts past its end (1, 0)."""
    one = np.uint64(1)
    if not on:
        return 0.0, 0.0, one, np.uint64(0)
    pivot = 1.0 / scratch[first + one, 3]
    scratch[first + one, 3] = pivot
    return pivot, scratch[first + one, 4], first + np.uint64(2), last


_SOLVE, _DONE, _LINKS = 0, 1, 2
"""What ``_rows`` leaves a yarn to: the tridiagonal solve, nothing (too short, or touching a two-way body after the
collisions), or its links one after another (taut between two fixed particles)."""


@numba.njit(cache=True, error_model="numpy", **NO_REFCOUNT)
def _rows(first, last, particles, links, scratch, link_rest, link_compliance, inv_h2, inv_mass, contact, resting_only,
          touching, x, link_lambda):
    """The rows pass of the yarn at entries first … last (``solve_yarn``): each link's direction, diagonal,
    right-hand side and off-diagonal into ``scratch``; returns (``_SOLVE``, ``_DONE`` or ``_LINKS``, whether friction
    holds its particles after the collisions (``_held_back``'s ``stuck``)). ``touching``: ``solve_yarn_group``'s, a
    literal there, so numba compiles one copy for each value, the contact tests folded away in the False one."""
    if last <= first:
        return _DONE, False
    one = np.uint64(1)
    stuck = not resting_only                    # friction holds its particles (``_held_back``) unless the yarn
    if stuck and touching:                      # has one squeezed out of a pinch
        for e in range(first, last + one):
            if contact[np.uint64(particles[e]), 3] == HELD:
                stuck = False
                break
    a = np.uint64(particles[first])
    ax, ay, az = x[a, 0], x[a, 1], x[a, 2]
    cx, cy, cz = _normal(contact, a, resting_only, touching)
    wa = _mobility(inv_mass, contact, a, resting_only, touching)
    anchored = wa == 0.0                        # this stretch of yarn started at a fixed particle
    sx, sy, sz, spanned = ax, ay, az, 0.0       # where it started, and its rest length so far [m]
    link_by_link = False                        # taut between two anchors (below)
    two_way = touching and contact[a, 3] < 0.0  # touching a two-way body (docstring)
    px = py = pz = 0.0                          # direction of the previous link
    for e in range(first + one, last + one):    # rows: independent per link
        b = np.uint64(particles[e])
        k = np.uint64(links[e])
        bx, by, bz = x[b, 0], x[b, 1], x[b, 2]
        qx, qy, qz = _normal(contact, b, resting_only, touching)
        wb = _mobility(inv_mass, contact, b, resting_only, touching)
        if touching and contact[b, 3] < 0.0:
            two_way = True
        dx = bx - ax
        dy = by - ay
        dz = bz - az
        length = math.sqrt(dx * dx + dy * dy + dz * dz)
        alpha = link_compliance[k] * inv_h2
        nx = ny = nz = rhs = off = 0.0
        diag = 1.0                              # a link with no direction, or that cannot move, stays
        if length >= 1e-12:
            inv = 1.0 / length
            nx, ny, nz = dx * inv, dy * inv, dz * inv
            ea = 0.0
            if touching:
                ea = nx * cx + ny * cy + nz * cz    # along a's contact normal (0 with none)
                eb = nx * qx + ny * qy + nz * qz
                mobile = wa * (1.0 - ea * ea) + wb * (1.0 - eb * eb) + alpha
            else:                               # no normals: the same sums without their products by zero
                mobile = wa + wb + alpha
            if mobile > 1e-9 * (wa + wb + alpha):
                diag = mobile
                rhs = link_rest[k] - length - alpha * link_lambda[k]
                # through particle a, with the previous link: w_a (n_prev·n − (n_prev·c_a)(n·c_a))
                turn = nx * px + ny * py + nz * pz
                off = -wa * (turn - (px * cx + py * cy + pz * cz) * ea) if touching else -wa * turn
        scratch[e, 0] = nx
        scratch[e, 1] = ny
        scratch[e, 2] = nz
        scratch[e, 3] = diag
        scratch[e, 4] = rhs
        scratch[e, 5] = off                     # 0 for the first link
        scratch[e, 6] = 1.0 if anchored and wb == 0.0 else 0.0
        spanned += link_rest[k]
        if wb == 0.0:                           # a fixed particle: closes a stretch, starts the next
            if anchored and (bx - sx) ** 2 + (by - sy) ** 2 + (bz - sz) ** 2 >= (TAUT * spanned) ** 2:
                link_by_link = True             # no rows needed past here: only whether it touches a two-way body
                for later in range(e + one, last + one):
                    if touching and contact[np.uint64(particles[later]), 3] < 0.0:
                        two_way = True
                break
            anchored = True
            sx, sy, sz, spanned = bx, by, bz, 0.0
        ax, ay, az, wa, cx, cy, cz = bx, by, bz, wb, qx, qy, qz
        px, py, pz = nx, ny, nz
    if two_way and not resting_only:            # after the collisions: left where the contacts put it
        return _DONE, stuck
    return (_LINKS if link_by_link else _SOLVE), stuck


@numba.njit(inline="always", error_model="numpy")
def _eliminate(e, scratch, pivot, rhs):
    """Forward elimination of entry e's row (``solve_yarn``): the previous (pivot's reciprocal, right-hand side) in,
    this row's out (also written to ``scratch``)."""
    off = scratch[e, 5]
    f = off * pivot
    diag = scratch[e, 3]
    pivot = 1.0 / max(diag - f * off, (PIVOT_FLOOR if scratch[e, 6] != 0.0 else 1e-12) * diag)
    rhs = scratch[e, 4] - f * rhs
    scratch[e, 3] = pivot
    scratch[e, 4] = rhs
    return pivot, rhs


@numba.njit(inline="always", error_model="numpy")
def _substitute(e, first, last, below, ox, oy, oz, particles, links, scratch, inv_mass, contact, resting_only,
                touching, stuck, x, x_prev, link_lambda):
    """Back substitution at entry e of the yarn first … last (``solve_yarn``): Δλ of the link into e from ``below``
    (Δλ of the link out of it, direction o), then e's particle moved. Returns (Δλ of the link into e, its direction)."""
    dlam, ox, oy, oz, gx, gy, gz = _link_into(e, first, last, below, ox, oy, oz, links, scratch, link_lambda)
    b = np.uint64(particles[e])
    wb = _mobility(inv_mass, contact, b, resting_only, touching)
    if not touching:                                     # no normal: the same move without its products by zero
        mx, my, mz = wb * gx, wb * gy, wb * gz
    else:
        cx, cy, cz = _normal(contact, b, resting_only, touching)
        along = gx * cx + gy * cy + gz * cz
        sink = 0.0                                       # its move into the surface [m], ≤ 0
        if along > 0.0 and wb > 0.0:                     # pulled off the surface: it goes, and is free from now on
            contact[b, 0] = contact[b, 1] = contact[b, 2] = contact[b, 3] = 0.0
            along = 0.0
        elif resting_only and along < 0.0:   # pressed into it: down to where it met the surface (the substep's
            room = cx * (x[b, 0] - x_prev[b, 0]) + cy * (x[b, 1] - x_prev[b, 1]) + cz * (x[b, 2] - x_prev[b, 2])
            sink = max(wb * along, -max(room, 0.0))      # start), the surface takes the rest (friction)
            contact[b, 4] -= wb * along - sink
        mx = wb * (gx - cx * along) + cx * sink
        my = wb * (gy - cy * along) + cy * sink
        mz = wb * (gz - cz * along) + cz * sink
    f = _held_back(contact, b, resting_only, touching, stuck, mx, my, mz)
    x[b, 0] += f * mx
    x[b, 1] += f * my
    x[b, 2] += f * mz
    return dlam, ox, oy, oz


@numba.njit(inline="always", error_model="numpy")
def _link_into(e, first, last, below, ox, oy, oz, links, scratch, link_lambda):
    """Back substitution's multiplier at entry e: Δλ of the link into e from Δλ ``below`` of the link out of it
    (direction o), added to ``link_lambda``; returns (Δλ, the link into e's direction, −n_{e+1} Δλ_{e+1} + n_e Δλ_e:
    the direction e's particle moves along, times its mobility)."""
    gx, gy, gz = -ox * below, -oy * below, -oz * below        # −n_{e+1} Δλ_{e+1}: the link out of it
    dlam = 0.0
    if e > first:
        off = scratch[e + np.uint64(1), 5] if e < last else 0.0
        dlam = (scratch[e, 4] - off * below) * scratch[e, 3]
        link_lambda[np.uint64(links[e])] += dlam
        ox, oy, oz = scratch[e, 0], scratch[e, 1], scratch[e, 2]
        gx += ox * dlam                                       # +n_e Δλ_e: the link into it
        gy += oy * dlam
        gz += oz * dlam
    return dlam, ox, oy, oz, gx, gy, gz


@numba.njit(inline="always", error_model="numpy")
def _held_back(contact, p, resting_only, touching, stuck, mx, my, mz):
    """The share [-] of a move (mx, my, mz) [m] the yarns ask of particle p after the collisions: the static friction
    its contact left unused (``Cloth.contact`` column 4, negative: μ·N less its slip [m]) holds a ``STUCK`` particle
    against a pull it can bear (0) and takes that much off a larger one (1 − left/|move|: it slides, kinetic); 1 for
    any other particle, and for all of a yarn that holds one squeezed out of a pinch (``stuck`` False). Coulomb's law
    in position form once more, on the pull of the pass after the collisions: the particle's own neighbours on the
    yarn move as if it moved (their moves come from the multipliers), so a held particle leaves its links that much
    long, as friction does. 1 where nothing touches (``touching`` False)."""
    if not touching:
        return 1.0
    left = -contact[p, 4] if (stuck and not resting_only and contact[p, 3] == STUCK) else 0.0
    m = math.sqrt(mx * mx + my * my + mz * mz)
    return 1.0 if left <= 0.0 else (0.0 if m <= left else 1.0 - left / m)


@numba.njit(cache=True, error_model="numpy", **NO_REFCOUNT)
def _project_links(first, last, particles, links, link_rest, link_compliance, inv_h2, inv_mass, contact, resting_only,
                   touching, stuck, x, link_lambda):
    """The links of yarn entries first … last projected one after another (XPBD eq. 18, as a sweep does), each
    particle with its mobility in this solve (``_mobility``) and, after the collisions, one friction holds held back
    by the friction it has left (``_held_back``). Called, not inlined: a rare path (a yarn taut between two fixed
    particles, once a pass), and inlined into both copies of ``_group`` it cost a first launch 0.6 s of compiling."""
    for e in range(first + np.uint64(1), last + np.uint64(1)):
        a = np.uint64(particles[e - np.uint64(1)])
        b = np.uint64(particles[e])
        k = np.uint64(links[e])
        wa = _mobility(inv_mass, contact, a, resting_only, touching)
        wb = _mobility(inv_mass, contact, b, resting_only, touching)
        dx = x[b, 0] - x[a, 0]
        dy = x[b, 1] - x[a, 1]
        dz = x[b, 2] - x[a, 2]
        length = math.sqrt(dx * dx + dy * dy + dz * dz)
        alpha = link_compliance[k] * inv_h2
        if length < 1e-12 or wa + wb + alpha == 0.0:
            continue
        dlam = (link_rest[k] - length - alpha * link_lambda[k]) / (wa + wb + alpha)
        link_lambda[k] += dlam
        s = dlam / length
        fa = _held_back(contact, a, resting_only, touching, stuck, wa * s * dx, wa * s * dy, wa * s * dz)
        fb = _held_back(contact, b, resting_only, touching, stuck, wb * s * dx, wb * s * dy, wb * s * dz)
        x[a, 0] -= fa * wa * s * dx
        x[a, 1] -= fa * wa * s * dy
        x[a, 2] -= fa * wa * s * dz
        x[b, 0] += fb * wb * s * dx
        x[b, 1] += fb * wb * s * dy
        x[b, 2] += fb * wb * s * dz


@numba.njit(inline="always", error_model="numpy")
def _weigh(e, first, last, gx, gy, gz, particles, scratch, inv_mass, contact, resting_only, touching, along_surface):
    """The move [m] of the particle at yarn entry e (of a heavy yarn, entries first … last) for a push g: its inverse
    mass with the geometric stiffness of its links on the yarn, W̃ g = (m I + k̃₁ P₁ + k̃₂ P₂)⁻¹ g with P = I − n nᵀ
    (directions n and stiffnesses k̃ [kg] in ``scratch`` columns 0–2 and 7 of the entry and of the next; module
    docstring). The matrix is (m + k̃₁ + k̃₂) I − U D Uᵀ with U = [n₁ n₂], D = diag(k̃₁, k̃₂), whose inverse is
    (I + U (c I − D UᵀU)⁻¹ D Uᵀ)/c, c = m + k̃₁ + k̃₂ (Woodbury): a 2 × 2 solve, its determinant
    (m + k̃₁)(m + k̃₂) − k̃₁ k̃₂ (n₁·n₂)² ≥ m² > 0. With ``along_surface``, a particle resting on a surface (a normal c)
    moves along it only: P_c W̃ P_c g, P_c = I − c cᵀ (w P_c g where nothing is taut, as in the plain solve). A fixed
    particle does not move."""
    one = np.uint64(1)
    p = np.uint64(particles[e])
    w = _mobility(inv_mass, contact, p, resting_only, touching)
    if w == 0.0:
        return 0.0, 0.0, 0.0
    cx, cy, cz = _normal(contact, p, resting_only, touching)
    if not along_surface:
        cx = cy = cz = 0.0
    along = gx * cx + gy * cy + gz * cz
    gx, gy, gz = gx - cx * along, gy - cy * along, gz - cz * along
    ax = ay = az = bx = by = bz = ka = kb = 0.0
    if e > first:                                   # the link into the entry
        ax, ay, az, ka = scratch[e, 0], scratch[e, 1], scratch[e, 2], scratch[e, 7]
    if e < last:                                    # the link out of it
        bx, by, bz, kb = scratch[e + one, 0], scratch[e + one, 1], scratch[e + one, 2], scratch[e + one, 7]
    if ka == 0.0 and kb == 0.0:
        return w * gx, w * gy, w * gz
    m = 1.0 / w
    c = m + ka + kb
    s = ax * bx + ay * by + az * bz
    pa = ka * (ax * gx + ay * gy + az * gz)
    pb = kb * (bx * gx + by * gy + bz * gz)
    det = (c - ka) * (c - kb) - ka * kb * s * s
    u = ((c - kb) * pa + ka * s * pb) / det
    v = ((c - ka) * pb + kb * s * pa) / det
    rx, ry, rz = (gx + u * ax + v * bx) / c, (gy + u * ay + v * by) / c, (gz + u * az + v * bz) / c
    along = rx * cx + ry * cy + rz * cz
    return rx - cx * along, ry - cy * along, rz - cz * along


@numba.njit(cache=True, error_model="numpy", **NO_REFCOUNT)
def _solve_heavy(first, last, particles, links, scratch, link_rest, link_compliance, inv_h2, inv_mass, contact,
                 resting_only, touching, stuck, x, x_prev, link_lambda):
    """One solve of the heavy yarn at entries first … last whose rows ``_rows`` has written (directions, the pivot
    floor's flag): the rows again with each particle's inverse mass and its links' geometric stiffness (``_weigh``,
    module docstring), then the Thomas algorithm as in ``solve_yarn`` (``_eliminate``, the same pivot floors), and
    the back substitution moving each particle by ``_weigh`` of its push, with the contacts' one-sidedness, sinking
    and friction as ``_substitute``. Called, not inlined: a rare path, one yarn at a time."""
    one = np.uint64(1)
    px = py = pz = 0.0                              # direction of the previous link
    for e in range(first + one, last + one):
        k = np.uint64(links[e])
        a = np.uint64(particles[e - one])
        b = np.uint64(particles[e])
        nx, ny, nz = scratch[e, 0], scratch[e, 1], scratch[e, 2]
        dx = x[b, 0] - x[a, 0]
        dy = x[b, 1] - x[a, 1]
        dz = x[b, 2] - x[a, 2]
        length = math.sqrt(dx * dx + dy * dy + dz * dz)
        alpha = link_compliance[k] * inv_h2
        wa = _mobility(inv_mass, contact, a, resting_only, touching)
        wb = _mobility(inv_mass, contact, b, resting_only, touching)
        diag, rhs, off = 1.0, 0.0, 0.0              # a link with no direction, or that cannot move, stays
        if length >= 1e-12:
            ux, uy, uz = _weigh(e - one, first, last, nx, ny, nz, particles, scratch, inv_mass, contact,
                                resting_only, touching, True)
            vx, vy, vz = _weigh(e, first, last, nx, ny, nz, particles, scratch, inv_mass, contact, resting_only,
                                touching, True)
            mobile = nx * (ux + vx) + ny * (uy + vy) + nz * (uz + vz) + alpha
            if mobile > 1e-9 * (wa + wb + alpha):
                diag = mobile
                rhs = link_rest[k] - length - alpha * link_lambda[k]
                off = -(px * ux + py * uy + pz * uz)         # through the particle before: −n_prev·W̃ n
        scratch[e, 3] = diag
        scratch[e, 4] = rhs
        scratch[e, 5] = off
        px, py, pz = nx, ny, nz
    pivot, rhs, e, end = _first_pivot(first, last, True, scratch)
    while e <= end:
        pivot, rhs = _eliminate(e, scratch, pivot, rhs)
        e += one
    below = ox = oy = oz = 0.0                      # Δλ of the link out of the entry, and its direction
    e = last
    while True:
        dlam, ox, oy, oz, gx, gy, gz = _link_into(e, first, last, below, ox, oy, oz, links, scratch, link_lambda)
        b = np.uint64(particles[e])
        cx, cy, cz = _normal(contact, b, resting_only, touching)
        wb = _mobility(inv_mass, contact, b, resting_only, touching)
        along = gx * cx + gy * cy + gz * cz
        free = along > 0.0 and wb > 0.0              # pulled off its surface: it goes (as ``_substitute``)
        mx, my, mz = _weigh(e, first, last, gx, gy, gz, particles, scratch, inv_mass, contact, resting_only,
                            touching, not free)
        if touching and (cx != 0.0 or cy != 0.0 or cz != 0.0):     # as ``_substitute``: one-sided, sinking
            if free:
                contact[b, 0] = contact[b, 1] = contact[b, 2] = contact[b, 3] = 0.0
            elif resting_only and along < 0.0:
                room = cx * (x[b, 0] - x_prev[b, 0]) + cy * (x[b, 1] - x_prev[b, 1]) + cz * (x[b, 2] - x_prev[b, 2])
                sink = max(wb * along, -max(room, 0.0))
                contact[b, 4] -= wb * along - sink
                mx += cx * sink
                my += cy * sink
                mz += cz * sink
        f = _held_back(contact, b, resting_only, touching, stuck, mx, my, mz)
        x[b, 0] += f * mx
        x[b, 1] += f * my
        x[b, 2] += f * mz
        below = dlam
        if e == first:
            break
        e -= one


@numba.njit(inline="always")
def _mobility(inv_mass, contact, p, resting_only, touching):
    """Particle p's inverse mass in the solve [1/kg]: 0 after the collisions (not ``resting_only``) for a particle
    squeezed out of a pinch this substep (``Cloth.contact`` column 3 ``HELD``: it stays where the contacts put it).
    One static friction holds (``STUCK``) keeps its own: friction holds its move back afterwards (``_held_back``).
    The inverse mass where nothing touches (``touching`` False: a constant where inlined, the test folded away)."""
    if not touching:
        return inv_mass[p]
    kind = contact[p, 3]
    held = (not resting_only) and kind == HELD
    return 0.0 if held else inv_mass[p]                 # a select, not a branch (``_normal``)


@numba.njit(inline="always")
def _normal(contact, p, resting_only, touching):
    """Particle p's contact normal from ``Cloth.contact`` (n, 5), or zero where it touched nothing, or with
    ``resting_only`` a collider that was moving.

    Written as a select (the normal times 1 or 0), not an early return, and ``_mobility`` likewise: the early
    returns, inlined into the line solve's loops, make it about twice as slow per yarn entry whether or not anything
    touches (docs/performance.md, "Moved from docstrings"). With nothing touching the branch always goes one way,
    so the cost is the code the two returns make of the loop, not mispredictions. The same operations on the same
    values: the drapes' strains and the sheet benchmark's bit-for-bit match with its plain kernel are unchanged (a
    normal zeroed by the select may be −0 where the branch gave +0). Zero where nothing touches (``touching`` False, a
    constant in ``_group``'s copy for a cloth touching nothing: no load, and the test folded away)."""
    if not touching:
        return 0.0, 0.0, 0.0
    on = 1.0 if contact[p, 3] > 0.0 or not resting_only else 0.0
    return contact[p, 0] * on, contact[p, 1] * on, contact[p, 2] * on
