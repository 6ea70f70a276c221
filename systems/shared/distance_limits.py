"""Distance limits: pull linked particle pairs back within bounds of their rest length, mass-weighted.

Shared by two models, owned by neither (a system never imports another system):
- Verlet cloth (Fuhrmann et al. 2003 §3): ``relax_distances``, a fixed number of passes keeping
  structural and shear links within [d_min, d_max] × rest length (eq. 5), bending pairs no shorter
  than bend_min × rest;
- Provot 1995's deformation limit (mass-spring cloth, and XPBD's ``ClothMaterial.strain_limit``):
  ``DeformationLimits``/``limit_lengths``, which ends every call with no limited link longer than
  its bound hi = (1 + τ_c)·l₀, or reports that it could not.

A link out of its bounds is moved along the line through its particles, each end in proportion to its
inverse mass (Fuhrmann eqs. 6–9), so the centre of mass stays put. A particle of inverse mass 0
(Fuhrmann's infinite mass, eq. 11: pinned or grabbed) is not moved — Provot's fixed–free case — and
a link between two such particles is skipped.

Why Provot's limit needs more than passes. Provot (slides "Constraints on Deformation Rates" and
"Disadvantages"; the seed text carries no section or equation numbers) sets each over-long spring
back to (1 + τ_c)·l₀ and notes that "correcting one spring may overextend another" and that the
"reiterative process does not always converge to a completely non-extended state": a fixed number of
colour-order passes leaves a hanging sheet over its limit, the more so the finer the mesh. Exact targets
converge only asymptotically, so no fixed pass count is enough. ``DeformationLimit.apply`` therefore, each substep:

1. pulls every free particle to within the shortest path of bounds from its nearest anchors
   (``_pull_toward_anchors``): a distance the links could never allow, removed in one sweep instead of
   one link per pass;
2. runs ``limit_lengths``, which aims below the bound: an over-long link (l > hi) is set to its target
   t = (1 − δ)·hi (δ = ``SHRINK``; the rest length if that is longer) minus an over-relaxation
   (ω − 1)·min(l − t, γ·t) (ω = ``OVER_RELAX``, γ = ``OVER_RELAX_CAP``), never below the rest length;
3. visits only what can be over: a work queue of links, first all of them in colour order, then the
   links touching a particle that a correction moved (Gauss–Seidel, positions updated at once);
4. stops when the queue is empty — every link was checked after its particles last moved, so every
   link is within hi exactly, no tolerance — or after ``max_passes`` × (limited links) link visits, the
   hard bound; then it counts the links still over, and the caller reports them.

Why it terminates. Each limited link's set {|x_a − x_b| ≤ t} is convex, and the mass-weighted correction
is the projection onto it in the metric ‖y‖²_M = Σ m_p·|y_p|² (free particles; anchors fixed). Let z be
any configuration with every limited link within its target and the anchors where they are (the rest
shape moved rigidly, when the anchors sit as in it: t is never below the rest length). A projection relaxed
by ω_eff ∈ [1, ω] (ω < 2) lowers ‖x − z‖²_M by at least ω(2 − ω)·(l − t)²/(w_a + w_b), and a link is
only corrected when l > hi, so by more than ω(2 − ω)·(hi − t)²/(w_a + w_b): at most
‖x₀ − z‖²_M · max (w_a + w_b)/(ω(2 − ω)·(hi − t)²) corrections can happen before the queue empties.
Step 1 projects onto sets that contain every such z, so it never raises ‖x − z‖_M. (τ_c = 0 leaves
hi = t and no margin: then the passes converge only in the limit, and the bound ends them.)

Without such a z the limit cannot hold. Anchors farther apart than their shortest path of bounds
(``reach``) prove it; for each such pair the links on short paths between them get relaxed bounds
(``_relaxed_scales``), which with two anchors makes a z exist again, the substep spends at most
``INFEASIBLE_PASSES`` passes' worth, and the caller reports it (``DeformationLimit.unmet``, the
``loom.limits`` log). Positions stay finite: a correction moves a particle by at most its link's excess.
"""
from __future__ import annotations

import logging
import math
import weakref

from typing import NamedTuple

import numba
from numba import prange
import numpy as np

from loom.components import Cloth
from loom.components.cloth import HELD
from loom.engine.persist import persistent
from loom.systems.shared.batch import Batch
from loom.systems.shared.held import hold
from loom.launch.cold_kernels import called_from, python_twin

log = logging.getLogger("loom.limits")

MIN_LENGTH = 1e-12
"""Links shorter than this [m] have no direction and are left alone."""
SLACK = 1e-12
"""Relative tolerance [-]: a link within [lo·(1 − SLACK), hi·(1 + SLACK)] counts as within bounds.
Exact comparisons would make the passes chase rounding: links a few 1e-15 over would keep every pass busy
and no pass would come out clean."""
MIN_MOBILITY = 0.01
"""Smallest share [-] of its ends' inverse masses a link over its limit must keep once the parts of their moves into
their contact surfaces are taken out (w = w_a (1 − e_a²) + w_b (1 − e_b²), e the link's direction along an end's
contact normal); below it the link counts as held, like a link between two anchors. Sliding an end along its
surface shortens a link pointing nearly along the surface normal only to second order: the projection's slide is
the excess over √(1 − e²), so a link 0.01° from the normal of the one end that can move would slide that end
about 5,700 times its excess in one pass. Below 0.01 the link is held; above it, each end's slide is also cut to
the link's excess (``_at_most``): second-order effects of a slide that steep are not small."""
_HI = 1.0 + SLACK
_LO = 1.0 - SLACK

SHRINK = 0.01
"""δ [-]: Provot's limit sets a link longer than its bound hi to (1 − δ)·hi (never below its rest length),
not to hi. The margin is what makes the passes end (module docstring): each correction then removes a
finite amount, so finitely many do, and the next substep's small stretch often fits in the margin; exact
targets (δ = 0) converge only asymptotically; a smaller δ costs more link checks (docs/performance.md,
"Moved from docstrings"). A corrected link ends 1 % or more under the limit; the springs or the XPBD solve
stretch it back."""
OVER_RELAX = 1.8
"""ω [-]: a correction goes ω times as far as (1 − δ)·hi, the overshoot capped (``OVER_RELAX_CAP``) and never
below the rest length. Any ω in [1, 2) keeps the termination proof (module docstring); Gauss–Seidel carries
a correction across the sheet in fewer checks when it anticipates the neighbour's pull-back (the link checks
and energies of ω = 1 and 1.8: docs/performance.md, "Moved from docstrings")."""
OVER_RELAX_CAP = 0.1
"""γ [-]: the overshoot (ω − 1)·(l − (1 − δ)·hi) is at most (ω − 1)·γ·(1 − δ)·hi, so a link stretched far (a
fast fall, an unstable integrator) is not folded back through itself; a corrected link ends within
[(1 − (ω − 1)·γ)·(1 − δ)·hi, (1 − δ)·hi] = [0.911, 0.99]·hi, for τ_c = 10 % never shorter than at rest.
A smaller γ takes more link checks per substep."""
INFEASIBLE_PASSES = 10
"""Most work [passes' worth of link checks] the limit spends in a substep whose anchors are too far apart
for it to hold (it is unmet whatever it does), so a game dragging a grabbed particle beyond the limit keeps
its frame rate: more passes bring the links closer to the relaxed bound at a cost proportional to them."""
PULL_ANCHORS = 2
"""Anchors each free particle is pulled toward before the link corrections, the nearest along the links
(``_pull_toward_anchors``): two take fewer link checks than the nearest alone, pulling toward all costs more."""
_NO_CONTACT = np.zeros((0, 4))
"""``DeformationLimit.apply``'s contacts when the caller has none (a model without them: mass-spring)."""
MAX_ANCHORS = 64
"""Most anchors (particles of inverse mass 0 with a limited link) whose pairwise reach is computed, one
Dijkstra search each, when the set of anchors changes (a pin or grab added or released). Above it there is
no pull toward the anchors and no pair check: anchors too far apart then run the passes to their bound,
reported as unmet."""


def link_bounds(cloth: Cloth, lo_by_kind: tuple[float, float, float],
                hi_by_kind: tuple[float, float, float]) -> tuple[np.ndarray, np.ndarray]:
    """Return (lo, hi) [m], each (c,) in colour order: rest length × the factor of the link's kind.

    ``lo_by_kind`` and ``hi_by_kind`` hold one factor [-] per kind (stretch, shear, bend); 0 turns a
    lower bound off and inf an upper one. Call once per cloth and settings, never per substep."""
    kinds = cloth.link_kind[cloth.link_order]
    lo = np.ascontiguousarray(np.asarray(lo_by_kind, np.float64)[kinds] * cloth.link_rest)
    hi = np.ascontiguousarray(np.asarray(hi_by_kind, np.float64)[kinds] * cloth.link_rest)   # inf stays inf
    return lo, hi


class DeformationLimit:
    """One cloth's Provot deformation limit: its limited links, their adjacency, a work queue and a report.

    Built from the cloth's links in colour order and their upper bounds hi [m] (inf: not limited);
    ``apply`` runs ``limit_lengths`` over the limited links. The report, for the last ``apply`` (substep):
    ``passes``, link visits / limited links [-]; ``over``, links left longer than hi (0: the limit held);
    ``excess``, the largest l/hi − 1 among them [-]; ``stretch``, the factor [-] the bounds were relaxed by
    because the anchors were too far apart (1: not relaxed); and ``unmet``, how many calls ended with a
    link over hi since this table was built."""

    def __init__(self, link_i: np.ndarray, link_j: np.ndarray, link_rest: np.ndarray, link_hi: np.ndarray,
                 particle_count: int) -> None:
        limited = np.flatnonzero(np.isfinite(link_hi))
        self.link_i = np.ascontiguousarray(link_i[limited], dtype=np.int32)
        """First particle of each limited link, (c,) int32, colour order."""
        self.link_j = np.ascontiguousarray(link_j[limited], dtype=np.int32)
        """Second particle of each limited link, (c,) int32."""
        self.link_hi = np.ascontiguousarray(link_hi[limited], dtype=np.float64)
        """Bound of each limited link, (c,) [m]: (1 + τ_c)·l₀."""
        rest = np.asarray(link_rest, np.float64)[limited]
        self.link_target = np.ascontiguousarray(np.maximum((1.0 - SHRINK) * self.link_hi,
                                                           np.minimum(self.link_hi, rest)))
        """Length an over-long link is set to before over-relaxation, (c,) [m]: (1 − δ)·hi, at least
        the rest length (a limit below 1 % would otherwise pull links shorter than at rest)."""
        self.link_floor = np.ascontiguousarray(np.minimum(rest, self.link_target))
        """Shortest an over-relaxed correction leaves a link, (c,) [m]: its rest length (the limit only
        undoes stretch; compressing is the springs' business)."""
        c = self.link_i.shape[0]
        ends = np.concatenate([self.link_i, self.link_j])
        self.offsets = np.zeros(particle_count + 1, np.int64)
        """Each particle's first entry in ``neighbours``, (n + 1,) (CSR)."""
        np.cumsum(np.bincount(ends, minlength=particle_count), out=self.offsets[1:])
        order = np.argsort(ends, kind="stable")
        self.neighbours = np.ascontiguousarray(np.tile(np.arange(c, dtype=np.int32), 2)[order])
        """The limited links at each particle, (2c,) int32, indices into the tables above."""
        self.queue = np.zeros(c, np.int32)
        """Scratch: ``limit_lengths``'s work queue, (c,) int32 (a ring of link indices)."""
        self.queued = np.zeros(c, np.bool_)
        """Scratch: whether each link is in the queue, (c,)."""
        self.anchor_mask = np.zeros(particle_count, np.bool_)
        """Which particles had inverse mass 0 when ``anchors`` and ``reach`` were computed, (n,)."""
        self.anchors = np.zeros(0, np.int32)
        """Particles of inverse mass 0 with a limited link, (k,) int32 (empty above ``MAX_ANCHORS``)."""
        self.reach = np.zeros((0, 0))
        """Shortest path between each two anchors through limited links, summing their bounds, (k, k) [m]
        (inf: not connected): the farthest apart two anchors can be with every link within its bound."""
        self.distance = np.zeros((0, particle_count))
        """The same from each anchor to every particle, (k, n) [m]."""
        self.pull_anchor = np.full((particle_count, 1), -1, np.int32)
        """Each particle's nearest ``PULL_ANCHORS`` anchors along limited links, (n, m) int32 (−1: none)."""
        self.pull_reach = np.full((particle_count, 1), np.inf)
        """The paths of bounds to them, (n, m) [m]: the farthest the links let the particle be from each."""
        self.link_scale = np.ones(c)
        """Factor [-] on each link's bound and target for this substep: 1, or more where anchors too far apart
        pull (``_relaxed_scales``)."""
        self.passes = 0.0
        self.over = 0
        self.excess = 0.0
        self.stretch = 1.0
        self.unmet = 0
        self.relaxed = np.zeros(1, np.bool_)
        """Whether ``link_scale`` holds relaxed factors from the last call, (1,)."""
        self.limited = False
        """Whether the last call corrected a link: then the next goes straight to ``_limit_substep`` (a cloth
        over its limit in one substep mostly is in the next: the flag game's flag in every substep), whose own
        first pass checks every link, instead of checking every link twice. With none over it moves nothing there
        either (within their bounds, the links keep each particle within its anchors' reach), save a link within
        rounding of its bound, which that pass (squared lengths) and ``_count_over`` (lengths) may judge apart, so
        the shortcut can change a result in its last bits."""
        self._hold()

    def apply(self, max_passes: int, inv_mass: np.ndarray, x: np.ndarray, contact: np.ndarray = _NO_CONTACT) -> bool:
        """Limit the links of the cloth with ``inv_mass`` (n,) [1/kg] and positions ``x`` (n, 3) [m] (written),
        with at most ``max_passes`` × (limited links) link visits; return True when no link is over its bound.

        First every free particle is pulled to within its path of bounds from its ``PULL_ANCHORS`` nearest
        anchors (``_pull_toward_anchors``: a bound the links imply, so it changes no answer, but it moves a
        hanging cloth's weight back toward its pins at once instead of one link per pass); then
        ``limit_lengths`` runs.

        Anchors (inverse mass 0) farther apart than their ``reach`` make the limit impossible. For each such
        pair (a, b), r = |x_a − x_b| / reach > 1, the links on some path between them no longer than
        |x_a − x_b|/(1 − δ) in bounds get bounds and targets × r/(1 − δ) for this substep (``stretch``: the
        largest factor), and the pull is skipped. With two anchors the passes then provably end again (the
        relaxed links can span the gap, a path leaving them is long enough unrelaxed); the stretch is shared
        by the links between the anchors, the rest of the cloth keeps its limit, and the substep spends at
        most ``INFEASIBLE_PASSES`` passes' worth. A call that leaves a link over its bound (relaxed, or the
        visits ran out) counts in ``unmet`` and is logged to ``loom.limits`` the 1st, 10th, 100th … time.

        A call in which no link is over its bound ends after one length check per link (``_count_over``): what the
        rest would do then (within their bounds, the links keep every particle within its path of bounds from each
        anchor and no two anchors too far apart), and a first launch compiles the limit's kernels only once a link
        needs them (a first frame with no overstretch compiles none of them). New anchors are found either way,
        so a steady frame allocates nothing (``_find_reach`` does, when pins come or go)."""
        c = self.link_i.shape[0]
        self.passes, self.over, self.excess, self.stretch = 0.0, 0, 0.0, 1.0
        if c == 0:
            return True
        if not self.limited and _count_over_call(self.link_i, self.link_j, self.link_hi, x)[0] == 0:
            self.passes = 1.0                            # every link checked once, none over: nothing to do
            if _anchors_changed_call(inv_mass, self.anchor_mask):
                self._find_reach()                       # but new anchors are found now, not in a later frame
            return True
        budget = min(max_passes, INFEASIBLE_PASSES)
        changed, visits, over, excess, stretch = _limit_substep_call(self.held, max_passes * c, budget * c, inv_mass,
                                                                     x, contact)
        self.limited = visits > c or stretch > 1.0       # some link was over: likely again next substep
        if changed:                                      # a pin or grab came or went: new anchors, then the limit
            self._find_reach()
            changed, visits, over, excess, stretch = _limit_substep_call(self.held, max_passes * c, budget * c,
                                                                         inv_mass, x, contact)
        return self._report(max_passes, visits, over, excess, stretch)

    def _report(self, max_passes: int, visits: int, over: int, excess: float, stretch: float) -> bool:
        """Keep a limited substep's figures (``passes``, ``over``, ``excess``, ``stretch``); count and log it when
        it left a link over its bound. Returns True when none is over."""
        self.passes, self.over, self.excess, self.stretch = visits / self.link_i.shape[0], int(over), excess, stretch
        if self.over == 0:
            return True
        self.unmet += 1
        if _is_power_of_ten(self.unmet):
            log.warning("Provot limit unmet (%d time(s)): %d link(s) over (1 + τ_c)·l₀, by up to %.3g %%; anchors "
                        "(pins, grabs) %s", self.unmet, self.over, 100.0 * self.excess,
                        f"too far apart, bounds relaxed × {self.stretch:.4g}" if self.stretch > 1.0 else
                        f"allow it but {max_passes} passes' worth of corrections did not reach it")
        return False

    def _find_reach(self) -> None:
        """Anchors, their ``distance`` fields and pairwise ``reach`` for the current ``anchor_mask`` (a Dijkstra
        search from each anchor; none above ``MAX_ANCHORS``), then hold the tables again."""
        has_link = self.offsets[1:] > self.offsets[:-1]
        anchors = np.flatnonzero(self.anchor_mask & has_link).astype(np.int32)
        n = self.offsets.shape[0] - 1
        if anchors.shape[0] == 0 or anchors.shape[0] > MAX_ANCHORS:
            self.anchors, self.reach = np.zeros(0, np.int32), np.zeros((0, 0))
            self.distance = np.zeros((0, n))
            self.pull_anchor, self.pull_reach = np.full((n, 1), -1, np.int32), np.full((n, 1), np.inf)
        else:
            self.anchors = anchors
            self.distance = np.empty((anchors.shape[0], n))
            _anchor_distances_call(anchors, self.link_i, self.link_j, self.link_hi, self.offsets, self.neighbours,
                              self.distance)
            self.reach = np.ascontiguousarray(self.distance[:, anchors])
            m = min(PULL_ANCHORS, anchors.shape[0])
            nearest = np.argsort(self.distance, axis=0, kind="stable")[:m].T                       # (n, m)
            self.pull_reach = np.ascontiguousarray(np.take_along_axis(self.distance.T, nearest, axis=1))
            self.pull_anchor = np.ascontiguousarray(np.where(np.isfinite(self.pull_reach), anchors[nearest], -1),
                                                    dtype=np.int32)
        self._hold()

    def _hold(self) -> None:
        self.held = _hold_call(LimitTables(self.link_i, self.link_j, self.link_hi, self.link_target, self.link_floor,
                                     self.link_scale, self.offsets, self.neighbours, self.queue, self.queued,
                                     self.anchor_mask, self.anchors, self.reach, self.distance, self.pull_anchor,
                                     self.pull_reach, self.relaxed))


class LimitTables(NamedTuple):
    """One cloth's limit as ``_limit_substep`` reads it, held (``loom.systems.shared.held``): references to the
    ``DeformationLimit``'s arrays (described there), one pointer per call instead of seventeen arrays."""

    link_i: np.ndarray
    link_j: np.ndarray
    link_hi: np.ndarray
    link_target: np.ndarray
    link_floor: np.ndarray
    link_scale: np.ndarray
    offsets: np.ndarray
    neighbours: np.ndarray
    queue: np.ndarray
    queued: np.ndarray
    anchor_mask: np.ndarray
    anchors: np.ndarray
    reach: np.ndarray
    distance: np.ndarray
    pull_anchor: np.ndarray
    pull_reach: np.ndarray
    relaxed: np.ndarray


@persistent
class DeformationLimits:
    """Resource: each cloth's ``DeformationLimit``, keyed by the cloth, rebuilt when its link tables, bounds or
    particle count change (by identity: a table is replaced, never edited). Entries of cloths that no longer
    exist are dropped when another is built. Saved empty by snapshots (derived data; the report restarts)."""

    def __init__(self) -> None:
        self.by_cloth: dict[int, tuple] = {}

    def get(self, cloth: Cloth, link_hi: np.ndarray) -> DeformationLimit:
        """``cloth``'s limit for bounds ``link_hi`` [m], (c,) in colour order (inf: not limited), up to date."""
        entry = self.by_cloth.get(id(cloth))
        if entry is None or entry[0]() is not cloth or entry[1] is not cloth.link_i or entry[2] is not cloth.link_j \
                or entry[3] is not link_hi or entry[4] != cloth.particle_count:
            self.by_cloth = {k: e for k, e in self.by_cloth.items() if e[0]() is not None}
            limit = DeformationLimit(cloth.link_i, cloth.link_j, cloth.link_rest, link_hi, cloth.particle_count)
            entry = (weakref.ref(cloth), cloth.link_i, cloth.link_j, link_hi, cloth.particle_count, limit)
            self.by_cloth[id(cloth)] = entry
        return entry[5]

    def of(self, cloth: Cloth) -> DeformationLimit | None:
        """``cloth``'s limit and its report (None before its first limited substep)."""
        entry = self.by_cloth.get(id(cloth))
        return entry[5] if entry is not None and entry[0]() is cloth else None

    def __getstate__(self) -> dict:
        """Saved empty: weak references do not save, and a loaded world rebuilds the tables at its first substep."""
        return {"by_cloth": {}}


@persistent
class LimitBatch:
    """Resource: the limits of many cloths run by one kernel call a substep (``apply_all``), a cloth per thread.

    ``DeformationLimit.apply`` costs a Python call and two or three kernel dispatches per cloth per substep, and runs
    the cloths one after another on one thread. Batched, the limit spreads the cloths over the threads and saves the
    per-cloth calls, which matters with many small cloths (``python -m loom.benchmarks scenes --scene flags100``;
    docs/performance.md, "Moved from docstrings"). The batch holds typed lists of
    the limits' held tables and the cloths' arrays (systems/shared/batch.py), rebuilt when any of them is replaced.
    Saved empty by snapshots."""

    def __init__(self) -> None:
        self.batch = Batch()
        self.out = np.zeros((0, 5))

    def apply_all(self, work: list[tuple[DeformationLimit, np.ndarray, np.ndarray, np.ndarray]],
                  max_passes: int) -> None:
        """``limit.apply(max_passes, inv_mass, x, contact)`` for each (limit, inv_mass, x, contact) of ``work``,
        the same kernels on the same arrays in one call (``_limit_batch``), then each limit's report; a limit
        whose anchors changed finds them again in Python and, if a link was over, runs alone once more, as
        ``apply`` does."""
        work = [w for w in work if w[0].link_i.shape[0] > 0]
        if not work:
            return
        key = tuple((id(limit.held), id(inv_mass), id(x), id(contact)) for limit, inv_mass, x, contact in work)
        tables, inv_masses, xs, contacts = self.batch.update(
            key, lambda: [(limit.held, inv_mass, x, contact) for limit, inv_mass, x, contact in work])
        if self.out.shape[0] != len(work):
            self.out = np.zeros((len(work), 5))
        out = self.out
        _limit_batch(tables, inv_masses, xs, contacts, max_passes, min(max_passes, INFEASIBLE_PASSES), out)
        for k, (limit, inv_mass, x, contact) in enumerate(work):
            flag = out[k, 0]
            if flag == 2.0:                              # anchors changed with links over: find them, limit again
                limit._find_reach()
                limit.apply(max_passes, inv_mass, x, contact)
                continue
            limit._report(max_passes, out[k, 1], out[k, 2], out[k, 3], out[k, 4])
            if flag == 1.0:                              # none over, new anchors: found now, as ``apply`` does
                limit._find_reach()

    def __getstate__(self) -> dict:
        """Saved empty: typed lists and held structs do not pickle; the next substep builds the batch again."""
        return {"batch": Batch(), "out": np.zeros((0, 5))}


@numba.njit(inline="always")
def _at_most(x, y, z, most):
    """The move (x, y, z) [m] shortened to length ``most`` [m] if longer: an end sliding along its surface never
    moves farther than its link's excess (``MIN_MOBILITY``)."""
    size = math.sqrt(x * x + y * y + z * z)
    if size <= most:
        return x, y, z
    scale = most / size
    return x * scale, y * scale, z * scale


@numba.njit(cache=True, parallel=True)
def _limit_batch(tables, inv_mass, x, contact, max_passes, budget, out):
    """``DeformationLimit.apply``'s kernel work for each cloth of a batch (typed lists of held ``LimitTables``,
    inverse masses, positions and contacts), a cloth per thread: the length check (``_count_over``), and
    ``_limit_substep`` when a link is over. out (k, 5): 0, or 1 (none over, anchors changed) or 2 (anchors changed,
    nothing done: the caller finds them and limits again); then visits, links over, largest excess, stretch."""
    for kk in prange(len(tables)):
        k = np.int64(kk)                                 # typed lists take signed indices
        t = tables[k].value
        c = t.link_i.shape[0]
        out[k, 0] = 0.0
        out[k, 1] = c
        out[k, 2] = 0.0
        out[k, 3] = 0.0
        out[k, 4] = 1.0
        if _count_over(t.link_i, t.link_j, t.link_hi, x[k])[0] == 0:
            if _anchors_changed(inv_mass[k], t.anchor_mask):
                out[k, 0] = 1.0
            continue
        changed, visits, over, excess, stretch = _limit_substep(tables[k], max_passes * c, budget * c, inv_mass[k],
                                                                x[k], contact[k])
        out[k, 0] = 2.0 if changed else 0.0
        out[k, 1] = visits
        out[k, 2] = over
        out[k, 3] = excess
        out[k, 4] = stretch


def _is_power_of_ten(k: int) -> bool:
    while k % 10 == 0:
        k //= 10
    return k == 1


# --- kernels: arrays in, arrays out -------------------------------------------------------------
@numba.njit(cache=True)
def relax_distances(max_passes, link_i, link_j, link_lo, link_hi, inv_mass, x):
    """Run up to ``max_passes`` passes that put every link's length within [lo, hi]; return the passes that moved.

    link_i, link_j (c,) int32, colour order; link_lo, link_hi (c,) [m] (lo 0: no lower bound, hi inf:
    no upper bound); inv_mass (n,) [1/kg]; writes x (n, 3) [m] in place.
    For a violated link of length l and target bound b, with d = x_a − x_b (Fuhrmann 2003 eq. 5,
    u = d̂·(l − b)): x_a −= w_a/(w_a + w_b)·u, x_b += w_b/(w_a + w_b)·u (eqs. 6–9 in inverse masses).
    A pass that moves nothing ends the loop: the returned count r < max_passes means every link
    was within its bounds when the kernel returned; r == max_passes means it may not be."""
    for sweep in range(max_passes):
        moved = 0
        for k in range(link_i.shape[0]):
            a = link_i[k]
            b = link_j[k]
            wa = inv_mass[a]
            wb = inv_mass[b]
            w = wa + wb
            if w == 0.0:
                continue
            dx = x[a, 0] - x[b, 0]
            dy = x[a, 1] - x[b, 1]
            dz = x[a, 2] - x[b, 2]
            length = math.sqrt(dx * dx + dy * dy + dz * dz)
            if length > link_hi[k] * _HI:
                target = link_hi[k]
            elif length < link_lo[k] * _LO:
                target = link_lo[k]
            else:
                continue
            if length < MIN_LENGTH:
                continue
            moved += 1
            s = (target - length) / (w * length)
            x[a, 0] += wa * s * dx
            x[a, 1] += wa * s * dy
            x[a, 2] += wa * s * dz
            x[b, 0] -= wb * s * dx
            x[b, 1] -= wb * s * dy
            x[b, 2] -= wb * s * dz
        if moved == 0:
            return sweep
    return max_passes


@numba.njit(cache=True)
def limit_lengths(max_visits, link_i, link_j, link_hi, link_target, link_floor, link_scale, inv_mass, offsets,
                  neighbours, queue, queued, x, contact):
    """Provot 1995's deformation limit: correct links until none is longer than its bound; return
    (visits, over, excess).

    link_i, link_j (c,) int32, colour order; link_hi (c,) bounds [m]; link_target (c,) lengths an
    over-long link is set to before over-relaxation [m] (< hi); link_floor (c,) shortest length an
    over-relaxed correction leaves [m] (≤ target); link_scale (c,) [-] multiplies the three (1: Provot's
    limit; > 1: relaxed, anchors too far apart); inv_mass (n,) [1/kg] (0: not moved);
    offsets (n + 1,), neighbours (2c,): the links at each particle (CSR); queue (c,) int32 and queued
    (c,) bool: scratch. Writes x (n, 3) [m].

    Work queue: first every link over its bound, found by one plain pass over the links in order (most links of
    a cloth the solver keeps in shape are within it, and the pass costs a length check each), then each link
    touching a particle a correction moved. Lengths are computed in float64 whatever x's precision, so the
    check is exact on the stored positions.
    A visited link of length l > hi is set to max(t − (ω − 1)·min(l − t, γ·t), floor), t = link_target, each end
    moved in proportion to its inverse mass (Fuhrmann 2003 eqs. 6–9; Provot's fixed–free case when
    one is 0). The queue empties, with every link within hi exactly, after finitely many corrections
    when the anchors allow every link to be within t (module docstring), or the loop stops after
    ``max_visits`` visits. visits: links visited; over: links left longer than scale·hi (a link between
    two particles of inverse mass 0 is never corrected and counts if over); excess: max l/(scale·hi) − 1
    of those [-]."""
    c = link_i.shape[0]
    count = 0
    for k in range(c):                               # the first pass: queue the links over their bound
        dx = np.float64(x[link_i[k], 0]) - np.float64(x[link_j[k], 0])
        dy = np.float64(x[link_i[k], 1]) - np.float64(x[link_j[k], 1])
        dz = np.float64(x[link_i[k], 2]) - np.float64(x[link_j[k], 2])
        over = dx * dx + dy * dy + dz * dz > (link_scale[k] * link_hi[k]) ** 2
        queued[k] = over
        if over:
            queue[count] = k
            count += 1
    head = 0
    tail = count if count < c else 0
    visits = c
    stuck = 0
    excess = 0.0
    relax = OVER_RELAX - 1.0
    slid = False                                     # some end slid along its surface (below)
    while count > 0 and visits < max_visits:
        k = queue[head]
        head = head + 1 if head + 1 < c else 0
        count -= 1
        queued[k] = False
        visits += 1
        a = link_i[k]
        b = link_j[k]
        wa = inv_mass[a]
        wb = inv_mass[b]
        if contact.shape[0] > 0:                     # squeezed out of a pinch this substep: stays
            wa = 0.0 if contact[a, 3] == HELD else wa
            wb = 0.0 if contact[b, 3] == HELD else wb
        dx = np.float64(x[a, 0]) - np.float64(x[b, 0])
        dy = np.float64(x[a, 1]) - np.float64(x[b, 1])
        dz = np.float64(x[a, 2]) - np.float64(x[b, 2])
        length = math.sqrt(dx * dx + dy * dy + dz * dz)
        hi = link_scale[k] * link_hi[k]
        if length <= hi:
            continue
        # a particle on a collider (contact, n × 4: its normal) that shortening would pull into it slides along it
        ea = eb = 0.0                                # the link's direction along each end's contact normal
        if contact.shape[0] > 0:
            ea = (dx * contact[a, 0] + dy * contact[a, 1] + dz * contact[a, 2]) / length
            eb = (dx * contact[b, 0] + dy * contact[b, 1] + dz * contact[b, 2]) / length
        ea = max(ea, 0.0)                            # a moves toward b: into its surface where b lies inside it
        eb = min(eb, 0.0)
        w = wa * (1.0 - ea * ea) + wb * (1.0 - eb * eb)
        if w <= MIN_MOBILITY * (wa + wb):            # two anchors, or held by their surfaces (MIN_MOBILITY)
            stuck += 1
            excess = max(excess, length / hi - 1.0)
            continue
        target = link_scale[k] * link_target[k]
        target = max(target - relax * min(length - target, OVER_RELAX_CAP * target), link_scale[k] * link_floor[k])
        s = (target - length) / (w * length)
        ax, ay, az = wa * s * dx, wa * s * dy, wa * s * dz
        bx, by, bz = -wb * s * dx, -wb * s * dy, -wb * s * dz
        slid = slid or ea > 0.0 or eb < 0.0
        if ea > 0.0:                                 # the part into a's surface removed
            along = ax * contact[a, 0] + ay * contact[a, 1] + az * contact[a, 2]
            ax, ay, az = ax - along * contact[a, 0], ay - along * contact[a, 1], az - along * contact[a, 2]
            ax, ay, az = _at_most(ax, ay, az, length - target)
        if eb < 0.0:
            along = bx * contact[b, 0] + by * contact[b, 1] + bz * contact[b, 2]
            bx, by, bz = bx - along * contact[b, 0], by - along * contact[b, 1], bz - along * contact[b, 2]
            bx, by, bz = _at_most(bx, by, bz, length - target)
        x[a, 0] += ax
        x[a, 1] += ay
        x[a, 2] += az
        x[b, 0] += bx
        x[b, 1] += by
        x[b, 2] += bz
        for p in (a, b):
            if inv_mass[p] == 0.0:
                continue
            for e in range(offsets[p], offsets[p + 1]):
                m = neighbours[e]
                if m != k and not queued[m]:
                    queued[m] = True
                    queue[tail] = m
                    tail = tail + 1 if tail + 1 < c else 0
                    count += 1
    # stopped at the bound: links not queued are within hi, and the stuck ones are over; unless an end slid along
    # its surface: a slide shortens its link only to first order (or less: ``_at_most``), so the link may end still
    # over and not queued. Then every link is counted.
    over = 0 if slid else stuck
    for q in range(c if slid else count):
        k = q if slid else queue[(head + q) % c]
        a = link_i[k]
        b = link_j[k]
        dx = np.float64(x[a, 0]) - np.float64(x[b, 0])
        dy = np.float64(x[a, 1]) - np.float64(x[b, 1])
        dz = np.float64(x[a, 2]) - np.float64(x[b, 2])
        length = math.sqrt(dx * dx + dy * dy + dz * dz)
        if length > link_scale[k] * link_hi[k]:
            over += 1
            excess = max(excess, length / (link_scale[k] * link_hi[k]) - 1.0)
    return visits, over, excess


@numba.njit(cache=True)
def _count_over(link_i, link_j, link_hi, x):
    """(links longer than hi, largest l/hi − 1 among them [-]); link_hi (c,) [m], x (n, 3) [m]: the test of
    Provot 1995's limit, l ≤ hi = (1 + τ_c)·l₀."""
    over = 0
    excess = 0.0
    for k in range(link_i.shape[0]):
        a = link_i[k]
        b = link_j[k]
        dx = np.float64(x[a, 0]) - np.float64(x[b, 0])
        dy = np.float64(x[a, 1]) - np.float64(x[b, 1])
        dz = np.float64(x[a, 2]) - np.float64(x[b, 2])
        length = math.sqrt(dx * dx + dy * dy + dz * dz)
        if length > link_hi[k]:
            over += 1
            excess = max(excess, length / link_hi[k] - 1.0)
    return over, excess


@numba.njit(cache=True)
def _anchors_changed(inv_mass, mask):
    """Whether the particles of inverse mass 0 differ from ``mask`` (n,) bool; updates ``mask``."""
    changed = False
    for p in range(inv_mass.shape[0]):
        anchor = inv_mass[p] == 0.0
        if anchor != mask[p]:
            mask[p] = anchor
            changed = True
    return changed


@numba.njit(cache=True)
def _anchor_distances(anchors, link_i, link_j, link_hi, offsets, neighbours, distance):
    """Fill distance (k, n) [m] with the shortest path from each anchor to each particle through limited
    links, a link's length being its bound hi (Dijkstra with a binary heap, one search per anchor; paths
    may pass through other anchors; inf: not connected)."""
    n = offsets.shape[0] - 1
    k = anchors.shape[0]
    size = link_i.shape[0] * 2 + 2
    heap_key = np.empty(size)
    heap_node = np.empty(size, np.int32)
    for s in range(k):
        dist = distance[s]
        dist[:] = math.inf
        dist[anchors[s]] = 0.0
        heap_key[0] = 0.0
        heap_node[0] = anchors[s]
        top = 1
        while top > 0:
            d = heap_key[0]
            u = heap_node[0]
            top -= 1                                          # pop: move the last entry to the root, sift down
            key = heap_key[top]
            node = heap_node[top]
            i = 0
            while True:
                child = 2 * i + 1
                if child >= top:
                    break
                if child + 1 < top and heap_key[child + 1] < heap_key[child]:
                    child += 1
                if heap_key[child] >= key:
                    break
                heap_key[i] = heap_key[child]
                heap_node[i] = heap_node[child]
                i = child
            heap_key[i] = key
            heap_node[i] = node
            if d > dist[u]:
                continue                                      # a stale entry
            for e in range(offsets[u], offsets[u + 1]):
                m = neighbours[e]
                v = link_i[m] + link_j[m] - u
                nd = d + link_hi[m]
                if nd < dist[v]:
                    dist[v] = nd
                    i = top                                   # push: sift up
                    top += 1
                    while i > 0:
                        parent = (i - 1) // 2
                        if heap_key[parent] <= nd:
                            break
                        heap_key[i] = heap_key[parent]
                        heap_node[i] = heap_node[parent]
                        i = parent
                    heap_key[i] = nd
                    heap_node[i] = v


@numba.njit(cache=True)
def _relaxed_scales(anchors, reach, distance, link_i, link_j, link_hi, keep, x, link_scale):
    """Raise link_scale (c,) [-] where anchors too far apart pull; return the largest factor [-] (1: no pair
    of anchors is farther apart than its reach, nothing changed). A gap D above the reach R of a pair proves
    the limit impossible: every path of limited links between them would have to be at least D long, more
    than the sum of its bounds.

    For each pair of anchors a, b with gap D = |x_a − x_b| > reach R: every link (u, v) on a path from a
    to b no longer than D/keep in bounds (min over orientations of distance[a, u] + hi + distance[b, v];
    keep = 1 − δ) gets a factor of at least (D/R)/keep. Each path between a and b is then long enough in
    relaxed targets (keep × factor × hi) to span D: one inside the relaxed links has at least
    (D/R)·R = D, one leaving them has more than (D/keep)·keep = D unrelaxed."""
    k = anchors.shape[0]
    worst = 1.0
    for s in range(k):
        a = anchors[s]
        for t in range(s + 1, k):
            r = reach[s, t]
            if r == math.inf or r <= 0.0:
                continue
            b = anchors[t]
            dx = np.float64(x[a, 0]) - np.float64(x[b, 0])
            dy = np.float64(x[a, 1]) - np.float64(x[b, 1])
            dz = np.float64(x[a, 2]) - np.float64(x[b, 2])
            gap = math.sqrt(dx * dx + dy * dy + dz * dz)
            if gap <= r:
                continue
            factor = gap / (r * keep)
            worst = max(worst, factor)
            span = gap / keep
            da = distance[s]
            db = distance[t]
            for e in range(link_i.shape[0]):
                u = link_i[e]
                v = link_j[e]
                through = min(da[u] + db[v], da[v] + db[u]) + link_hi[e]
                if through <= span and link_scale[e] < factor:
                    link_scale[e] = factor
    return worst


@numba.njit(cache=True)
def _pull_toward_anchors(pull_anchor, pull_reach, inv_mass, x):
    """Move each free particle p to within pull_reach[p, s] [m] of its nearest anchors pull_anchor[p, s]
    (−1: none), in turn (Provot's fixed–free correction along the straight line, only p moves). Writes x
    (n, 3) [m].

    No motion that keeps every limited link within its bound puts p farther from an anchor than the
    shortest path of bounds between them, so this only removes distance the links could never allow,
    in one sweep where link-by-link corrections carry it from the anchor one link at a time. The nearest
    ``PULL_ANCHORS`` only: a pinned edge has many anchors, and each costs a sweep."""
    for p in range(x.shape[0]):
        if inv_mass[p] == 0.0:
            continue
        for s in range(pull_anchor.shape[1]):
            a = pull_anchor[p, s]
            if a < 0 or inv_mass[a] != 0.0:
                continue
            reach = pull_reach[p, s]
            dx = np.float64(x[p, 0]) - np.float64(x[a, 0])
            dy = np.float64(x[p, 1]) - np.float64(x[a, 1])
            dz = np.float64(x[p, 2]) - np.float64(x[a, 2])
            length = math.sqrt(dx * dx + dy * dy + dz * dz)
            if length <= reach:
                continue
            f = reach / length
            x[p, 0] = x[a, 0] + f * dx
            x[p, 1] = x[a, 1] + f * dy
            x[p, 2] = x[a, 2] + f * dz


@numba.njit(cache=True)
def _limit_substep(held, max_visits, relaxed_visits, inv_mass, x, contact):
    """One substep of ``DeformationLimit.apply`` (Provot 1995's deformation limit, the module docstring's steps
    1–4) on its held ``LimitTables``: return (anchors changed, visits, over, excess, stretch). When the particles
    of inverse mass 0 changed it returns at once, x untouched, with the new ``anchor_mask``; the caller recomputes
    the anchors and calls again."""
    t = held.value
    if _anchors_changed(inv_mass, t.anchor_mask):
        return True, 0, 0, 0.0, 1.0
    if t.relaxed[0]:                                     # the last substep relaxed some bounds: back to 1
        t.link_scale[:] = 1.0
        t.relaxed[0] = False
    stretch = 1.0
    if t.anchors.shape[0] > 1:                           # > 1: two anchors are farther apart than the limit allows
        stretch = _relaxed_scales(t.anchors, t.reach, t.distance, t.link_i, t.link_j, t.link_hi, 1.0 - SHRINK, x,
                                  t.link_scale)
    if stretch > 1.0:
        t.relaxed[0] = True
        max_visits = min(max_visits, relaxed_visits)
    elif t.anchors.shape[0] > 0:
        _pull_toward_anchors(t.pull_anchor, t.pull_reach, inv_mass, x)
    visits, over, excess = limit_lengths(max_visits, t.link_i, t.link_j, t.link_hi, t.link_target, t.link_floor,
                                         t.link_scale, inv_mass, t.offsets, t.neighbours, t.queue, t.queued, x,
                                         contact)
    if t.relaxed[0]:                                     # report against the real bounds
        over, excess = _count_over(t.link_i, t.link_j, t.link_hi, x)
    return False, visits, over, excess, stretch


def _count_over_numpy(link_i, link_j, link_hi, x):
    """``_count_over`` in NumPy: its twin while the compile-ahead worker compiles it (``cold_kernels``)."""
    d = x[link_i].astype(np.float64) - x[link_j]
    length = np.sqrt((d * d).sum(axis=1))
    over = length > link_hi                      # as the kernel compares: l > hi, not l / hi > 1
    return int(over.sum()), float((length[over] / link_hi[over]).max() - 1.0) if over.any() else 0.0


def _anchors_changed_numpy(inv_mass, mask):
    """``_anchors_changed`` in NumPy: its twin while the compile-ahead worker compiles it (``cold_kernels``)."""
    anchor = inv_mass == 0.0
    changed = bool((anchor != mask).any())
    mask[:] = anchor
    return changed


python_twin(_count_over, per_step=True, twin=_count_over_numpy)
python_twin(_anchors_changed, per_step=True, twin=_anchors_changed_numpy)
python_twin(_anchor_distances, size=lambda *args: args[-1].shape[1])    # its distance (anchors, n)
_count_over_call, _anchors_changed_call = _count_over, _anchors_changed   # the Python call sites' names
_anchor_distances_call = _anchor_distances
_hold_call, _limit_substep_call = hold, _limit_substep      # (their stand-ins: loom.systems.shared.cold_limits)
called_from(__name__, _count_over, _anchors_changed, _anchor_distances)
