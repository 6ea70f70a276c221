"""Guard: a step that would leave NaN, inf, an exploded value or a torn-apart link is refused, then recovered.

Refusal. Before each step (PRE_STEP, ``ClothSet.SAVE``) the guard copies every cloth's positions,
velocities and x_prev (if finite: see below); after it (POST_STEP, ``ClothSet.GUARD``) one pass checks
them and keeps a good state as the new last good copy. A step is bad for a
cloth if any value is not finite, a coordinate lies farther than MAX_POSITION from the origin, a
velocity component exceeds MAX_SPEED (an unstable explicit integrator grows through 1e60 and
beyond long before it overflows to inf), or a distance link (stretch, shear or distance bend) is
longer than MAX_STRETCH = 20 × its rest length (no fabric survives that: the solver has lost it;
on a cloth with an active Tearable that is left to tearing, which breaks such links). The
step is then undone for that cloth (x, v restored, x_prev = x), its ``rejected_steps`` grows, a
warning goes to the ``loom.guard`` logger (the 1st, 10th, 100th … time, no flood: it names the
reason, link, substeps and action) and the App emits ``step_rejected`` (entity, step, particle) so
the game can react; inside the handler ``app.clock.substeps`` is the refused step's substep count
and ``app.resource(Recovery)`` tells the rest (``factor == max_factor`` means it was clamped).

State broken between steps. A game (or a bad assignment, or an in-place write such as ``cloth.x[:] = 1e308``)
may write NaN, inf or absurd values into a cloth's x, v or x_prev between two steps. The guard's copy is
therefore the last GOOD state, never a copy of what it finds: before a step, one fused pass per cloth checks
x, v and x_prev (finite, |x| and |x_prev| within MAX_POSITION, |v| within MAX_SPEED) and copies them only if
all pass; after a good step the guard copies the state it has just verified. A cloth found broken
before a step is restored from that copy — the state at the end of its last good step, so it
continues exactly as if nothing had been written — ``Recovery.restores`` grows, a warning goes to
``loom.guard`` and the App emits ``state_restored`` (entity, step, particle, field); the warning names the
likely causes (``LIKELY_CAUSES``). This is not a
solver failure: ``rejected_steps`` and the substep multiplier are untouched. A cloth that never had
a good state (NaN or 1e308 written before its first step, or right after tearing re-meshed it; a cloth built
at an absurd position) cannot be restored: the step raises ValueError naming the entity, the field, the
particle and the likely causes.

Recovery (the ``Recovery`` resource holds the policy and its state):

1. retry, then retry with smaller substeps: the next step starts from the restored state and so
   retries the refused one's motion (its pin and grab targets). A first refusal is retried as it
   was — a transient fault (one poisoned force) then costs exactly one step and the run stays
   bit-identical to one without it (tests/test_verlet.py, test_mass_spring.py rely on it). When a
   cloth is refused again in a row, the guard multiplies ``app.clock.substeps`` by 2 (up to
   ``max_factor`` = 8 × the substeps it found): h/2, then h/4, then h/8 while it keeps failing.
   The App re-reads the substep count every step (engine/app.py), so this works inside one
   ``step(frames)`` or ``update`` call.
2. clamp: a step refused while already at ``max_factor`` restores the positions and clamps each
   particle's restored speed to ``clamp_speed`` [m/s] (action "clamp"), so a cloth whose velocity
   field is the problem gets calmer input; the guard keeps refusing (never NaN) while it fails.
3. back to normal: the first good step of a cloth refused before emits ``step_recovered``
   (entity, step, substeps, refused = how many steps in a row were refused); after ``hold_steps``
   good steps in a row the factor halves, down to 1 (the substeps the guard found); a halved
   factor that fails again doubles the wait (backoff), so probing costs few refused steps.

Limits, said plainly: the substep count is the App's, so while any cloth recovers every cloth
pays up to 8× the substep cost (a frame may take ~8× longer for those steps; ``max_steps`` still
caps the steps per ``update``). Time does not stop for a refused step: the cloth stays where it
was for that dt and the retry is the next step. The whole-step implicit model ignores substeps
(its own §7 halving is its retry), so for it only the clamp applies. A model that is unstable at
any h (explicit Euler with stiff springs) is refused, clamped and reported on every step: safe,
frozen, loud. Change ``clock.substeps`` yourself only while ``Recovery.factor`` is 1.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import numba
import numpy as np
from numba import prange

from loom.components import Cloth, Tearable
from loom.engine import App
from loom.engine.clock import MAX_SUBSTEPS
from loom.launch.cold_kernels import called_from, python_twin
from loom.engine.persist import persistent
from loom.systems.shared.batch import Batch, batchable, revisions

log = logging.getLogger("loom.guard")

MAX_POSITION = 1e6
"""Largest believable |coordinate| [m] (1000 km): beyond it a cloth has exploded."""
MAX_SPEED = 1e4
"""Largest believable |velocity component| [m/s] (10 km/s)."""
LIKELY_CAUSES = ("likely causes: a PixelSpace inserted after the helpers built the cloth (its pixel sizes taken as "
                 "metres), pixels passed where metres are expected, a teleport by an absurd distance, or an "
                 "in-place write into cloth.x, cloth.v, cloth.force or a pin target")
"""What the guard's messages name when a cloth's state is non-finite or exploded."""
MAX_STRETCH = 20.0
"""Longest believable link, as a multiple of its rest length [-]: a link beyond it means a lost step.
10× was the first choice, but a Verlet sheet yanked 4 m by one corner (tests/test_verlet.py) holds
its corner link at 12.8× by design (relaxation cannot move pinned particles); 20× leaves room."""


@persistent
@dataclass
class Recovery:
    """The guard's recovery policy and state (a resource; insert your own before the plugins to tune it)."""

    max_factor: int = 8
    """Largest substep multiplier a retry may use [-] (a power of 2): 8 runs h/8."""
    hold_steps: int = 30
    """Good steps in a row before the multiplier halves again (30 = 0.5 s at 60 Hz)."""
    clamp_speed: float = 10.0
    """Speed [m/s] a cloth's restored velocities are clamped to when it fails at ``max_factor``."""
    factor: int = 1
    """Substep multiplier in force now [-]: clock.substeps = base_substeps × factor."""
    base_substeps: int = 0
    """The App's own substep count, recorded when the factor first rises (0: not raised yet)."""
    good_steps: int = 0
    """Good steps in a row at the current factor."""
    backoff: int = 1
    """hold_steps multiplier [-]: doubles (up to 64) each time a lowered factor fails again, so a
    scene that needs ×4 probes ×2 after 30, 60, 120 … steps instead of failing every 30."""
    lowered: bool = False
    """True from a halving of the factor until the next refusal or a return to factor 1."""
    failing: dict[int, int] = field(default_factory=dict)
    """Refused steps in a row, per cloth entity that has not passed a step since."""
    clamps: int = 0
    """Times a cloth's velocities were clamped (a refusal at ``max_factor``)."""
    recoveries: int = 0
    """Times a refused cloth passed a step again (``step_recovered`` events)."""
    restores: int = 0
    """Times a cloth found non-finite before a step was restored to its last good state (``state_restored``)."""

    def __post_init__(self) -> None:
        f = self.max_factor
        if isinstance(f, bool) or not isinstance(f, int) or f < 1 or f & (f - 1):
            raise ValueError(f"Recovery.max_factor = {f!r}: must be a power of 2 >= 1")
        if isinstance(self.hold_steps, bool) or not isinstance(self.hold_steps, int) or self.hold_steps < 1:
            raise ValueError(f"Recovery.hold_steps = {self.hold_steps!r}: must be an integer >= 1")
        if not (isinstance(self.clamp_speed, (int, float)) and 0.0 <= self.clamp_speed <= MAX_SPEED):
            raise ValueError(f"Recovery.clamp_speed = {self.clamp_speed!r}: must be in [0, {MAX_SPEED:g}] [m/s]")

    def forget(self, entity: int) -> None:
        """Drop a despawned entity's count of refused steps."""
        self.failing.pop(entity, None)


FIELDS = ("x", "v", "x_prev")
"""The Cloth state the guard checks before a step and keeps a good copy of, in kernel order."""
_BOUND = {"x": f"±{MAX_POSITION:g} m", "v": f"±{MAX_SPEED:g} m/s", "x_prev": f"±{MAX_POSITION:g} m"}
"""Each checked field's sane range, as the messages quote it."""


@persistent
class StepSnapshot:
    """Per-cloth copies of the last good x, v and x_prev, keyed by entity (guard scratch)."""

    def __init__(self) -> None:
        self.saved: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.unverified: set[int] = set()              # entities whose copy was never filled (no good state yet)
        self.batch = Batch()
        self.check = Batch()
        self.start = np.zeros((2, 0), np.int64)        # batched start check: first bad particle, field per cloth
        self.found = np.zeros((2, 0), np.int64)        # batched check: first bad particle, link per cloth
        self.stretch = np.zeros(0)                      # batched check: stretch bound per cloth

    def forget(self, entity: int) -> None:
        """Drop a despawned entity's saved state."""
        self.saved.pop(entity, None)
        self.unverified.discard(entity)

    def rows(self, clothes: list[tuple[int, Cloth]]) -> list[tuple[np.ndarray, ...]]:
        """(x, v, x_prev, x0, v0, x_prev0) per cloth: its arrays and its copies (allocated for a new shape)."""
        out = []
        for entity, cloth in clothes:
            saved = self.saved.get(entity)
            if saved is None or saved[0].shape != cloth.x.shape or saved[0].dtype != cloth.x.dtype:
                saved = self.saved[entity] = (np.empty_like(cloth.x), np.empty_like(cloth.v),
                                              np.empty_like(cloth.x_prev))
                self.unverified.add(entity)
            out.append((cloth.x, cloth.v, cloth.x_prev, *saved))
        return out


def save_state(app: App, dt: float) -> None:
    """Check each cloth's x, v, x_prev before the step and copy them if finite; restore a broken one.

    One fused kernel pass per cloth (or one call for a batch); no allocation after the first step."""
    snapshot = app.init_resource(StepSnapshot)
    clothes = app.query(Cloth)
    if batchable([c for _, c in clothes]):
        key = (tuple(e for e, _ in clothes), revisions(c for _, c in clothes))
        lists = snapshot.batch.update(key, lambda: snapshot.rows(clothes))
        if snapshot.start.shape[1] != len(clothes):
            snapshot.start = np.zeros((2, len(clothes)), np.int64)
        _check_and_save_batch(*lists, snapshot.start[0], snapshot.start[1])
        bad_particle, bad_field = snapshot.start
    else:
        found = [_check_and_save_call(*row) for row in snapshot.rows(clothes)]
        bad_particle = [bad for bad, _ in found]
        bad_field = [which for _, which in found]
    if max(bad_particle, default=-1) < 0:
        snapshot.unverified.clear()
        return
    for k, (entity, cloth) in enumerate(clothes):
        if bad_particle[k] < 0:
            snapshot.unverified.discard(entity)
        else:
            _restore_broken(app, snapshot, entity, cloth, int(bad_particle[k]), FIELDS[int(bad_field[k])])


def _restore_broken(app: App, snapshot: StepSnapshot, entity: int, cloth: Cloth, particle: int, name: str) -> None:
    """Put back a cloth found non-finite before a step from its last good copy, report it; ValueError if none."""
    step = app.clock.step_index
    if entity in snapshot.unverified:
        value = getattr(cloth, name)[particle].tolist()
        what = "is not finite" if not all(math.isfinite(a) for a in value) else f"is beyond {_BOUND[name]}"
        raise ValueError(f"Cloth.{name}[{particle}] of entity {entity} = {value} {what} before step {step} and "
                         f"the cloth has no good state to restore (written "
                         f"before its first step or after a re-mesh, or the cloth was built there): set sane "
                         f"values; {LIKELY_CAUSES}")
    x0, v0, xp0 = snapshot.saved[entity]
    np.copyto(cloth.x, x0)
    np.copyto(cloth.v, v0)
    np.copyto(cloth.x_prev, xp0)
    recovery = app.init_resource(Recovery)
    recovery.restores += 1
    if _is_power_of_ten(recovery.restores):
        log.warning("cloth entity %d: Cloth.%s[%d] was not finite or beyond %s before step %d (written between "
                    "steps); restored to its last good state (%d restores so far); %s", entity, name, particle,
                    _BOUND[name], step, recovery.restores, LIKELY_CAUSES)
    app.emit("state_restored", entity=entity, step=step, particle=particle, field=name)


def reject_non_finite(app: App, dt: float) -> None:
    """Restore any cloth whose step went bad, report it, and set the substeps of the retry."""
    snapshot = app.resource(StepSnapshot)
    recovery = app.init_resource(Recovery)
    clock = app.clock
    step = clock.step_index
    refused = escalate = False
    rows = app.query(Cloth)
    tearing = {entity for entity, tear in app.query(Tearable) if tear.active}     # tearing breaks long links
    stretch = [math.inf if entity in tearing else MAX_STRETCH for entity, _ in rows]

    def arrays() -> list[tuple[np.ndarray, ...]]:                  # a good state is kept as the last good one
        return [(x, v, xp, c.link_i, c.link_j, c.link_rest, c.inv_mass, x0, v0, xp0)
                for (_, c), (x, v, xp, x0, v0, xp0) in zip(rows, snapshot.rows(rows))]

    if batchable([c for _, c in rows]):                  # one call checks every cloth
        if snapshot.found.shape[1] != len(rows):
            snapshot.found = np.zeros((2, len(rows)), np.int64)
            snapshot.stretch = np.zeros(len(rows))
        bad_particle, bad_link = snapshot.found
        snapshot.stretch[:] = stretch
        _first_bad_batch(snapshot.check.update(revisions(c for _, c in rows), arrays), (MAX_POSITION, MAX_SPEED),
                         snapshot.stretch, snapshot.found)
    else:
        found = [_first_bad_call(row[0:3], row[3:6], row[6], row[7:10], (MAX_POSITION, MAX_SPEED, limit))
                 for row, limit in zip(arrays(), stretch)]
        bad_particle = [bad for bad, _ in found]
        bad_link = [link for _, link in found]
    if not recovery.failing and max(bad_particle, default=-1) < 0:
        _set_factor(recovery, clock, False, False)       # all good, nothing recovering: nothing to report
        return
    for k, (entity, cloth) in enumerate(rows):
        bad, link = int(bad_particle[k]), int(bad_link[k])
        saved = None if entity in snapshot.unverified else snapshot.saved.get(entity)   # none good: no restore
        if bad < 0 or saved is None:
            count = recovery.failing.pop(entity, 0)
            if count and bad < 0:
                recovery.recoveries += 1
                log.info("cloth entity %d: step %d passed with %d substeps after %d refused", entity, step,
                         clock.substeps, count)
                app.emit("step_recovered", entity=entity, step=step, substeps=clock.substeps, refused=count)
            continue
        refused = True
        x0, v0, _ = saved
        np.copyto(cloth.x, x0)
        np.copyto(cloth.v, v0)
        np.copyto(cloth.x_prev, x0)
        action = "retry"
        if recovery.factor >= recovery.max_factor:
            _clamp_speeds(cloth.v, recovery.clamp_speed)
            recovery.clamps += 1
            action = "clamp"
        cloth.rejected_steps += 1
        recovery.failing[entity] = recovery.failing.get(entity, 0) + 1
        escalate = escalate or recovery.failing[entity] >= 2      # the same-substep retry failed too
        reason = (f"link {link} beyond {MAX_STRETCH:g}× its rest length" if link >= 0 else
                  f"non-finite or exploded (|x| beyond {MAX_POSITION:g} m or |v| beyond {MAX_SPEED:g} m/s)")
        if _is_power_of_ten(cloth.rejected_steps):          # 1st, 10th, 100th …: no log flood
            log.warning("cloth entity %d: step %d refused at %d substeps, particle %d: %s; state restored, "
                        "action %s (%d refused so far); %s", entity, step, clock.substeps, bad, reason, action,
                        cloth.rejected_steps, LIKELY_CAUSES)
        app.emit("step_rejected", entity=entity, step=step, particle=bad)
    _set_factor(recovery, clock, escalate, refused)


def _set_factor(recovery: Recovery, clock, escalate: bool, refused: bool) -> None:
    """Double the substep multiplier after a failed retry; halve it after hold_steps good steps."""
    if refused and not escalate:                              # a first refusal: retry as it was
        recovery.good_steps = 0
        return
    if recovery.factor == 1:
        if not refused or recovery.max_factor == 1:
            return
        recovery.base_substeps = clock.substeps
    if refused:
        if recovery.lowered:                                  # the lower factor was not enough yet
            recovery.backoff = min(2 * recovery.backoff, 64)
            recovery.lowered = False
        recovery.factor = min(2 * recovery.factor, recovery.max_factor)
        recovery.good_steps = 0
    else:
        recovery.good_steps += 1
        if recovery.good_steps < recovery.hold_steps * recovery.backoff:
            return
        recovery.factor //= 2
        recovery.good_steps = 0
        recovery.lowered = recovery.factor > 1
        if recovery.factor == 1:
            recovery.backoff = 1
    clock.substeps = min(recovery.base_substeps * recovery.factor, MAX_SUBSTEPS)   # the clock's own bound


def _is_power_of_ten(count: int) -> bool:
    while count >= 10 and count % 10 == 0:
        count //= 10
    return count == 1


# --- kernels --------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _first_bad(state, links, inv_mass, saved, bounds):
    """(first bad particle, first overstretched link or −1): particle −1 if the state is good, and then
    ``state`` (x, v, x_prev) is copied into ``saved`` (x0, v0, x_prev0), the last good state.

    x, v (n, 3) [m, m/s]; links (link_i, link_j (c,) int32, link_rest (c,) [m]); inv_mass (n,) [1/kg];
    bounds (max_position [m], max_speed [m/s], max_stretch [-]). A particle is bad if a
    coordinate or velocity component is non-finite or beyond its bound (a NaN fails every
    comparison, so ``not (|a| <= bound)`` catches it too); a link is bad if longer than
    max_stretch × rest, and then its first particle is reported — unless both its particles are
    held (inverse mass 0: pinned or grabbed), which the game placed there and no solver can fix."""
    x, v, x_prev = state
    link_i, link_j, link_rest = links
    max_position, max_speed, max_stretch = bounds
    for p in range(x.shape[0]):
        for c in range(3):
            if not (abs(x[p, c]) <= max_position and abs(v[p, c]) <= max_speed):
                return p, -1
    for k in range(link_i.shape[0]):
        a = link_i[k]
        b = link_j[k]
        if inv_mass[a] == 0.0 and inv_mass[b] == 0.0:
            continue
        sq = 0.0
        for c in range(3):
            sq += (x[a, c] - x[b, c]) ** 2
        limit = max_stretch * link_rest[k]
        if sq > limit * limit:
            return a, k
    x0, v0, x_prev0 = saved
    bad, _ = _check_and_save(x, v, x_prev, x0, v0, x_prev0)
    return bad, -1


@numba.njit(cache=True, parallel=True)
def _first_bad_batch(lists, bounds, max_stretch, found):
    """``_first_bad`` for every cloth of a batch, a cloth per thread: ``lists`` the typed lists (x, v, x_prev,
    link_i, link_j, link_rest, inv_mass, x0, v0, x_prev0), bounds (max_position, max_speed), max_stretch
    (cloths,) per cloth; writes found[0, c] the bad particle, found[1, c] the bad link."""
    x, v, x_prev, link_i, link_j, link_rest, inv_mass, x0, v0, x_prev0 = lists
    for k in prange(len(x)):
        c = np.int64(k)                          # typed lists take signed indices; prange's are unsigned
        found[0, c], found[1, c] = _first_bad((x[c], v[c], x_prev[c]), (link_i[c], link_j[c], link_rest[c]),
                                              inv_mass[c], (x0[c], v0[c], x_prev0[c]),
                                              (bounds[0], bounds[1], max_stretch[c]))


@numba.njit(cache=True)
def _check_and_save(x, v, x_prev, x0, v0, x_prev0):
    """(first broken particle, field 0 x / 1 v / 2 x_prev), or (−1, −1) after copying x, v, x_prev
    (n, 3) into x0, v0, x_prev0: a broken state is never copied over the last good one. Broken: a value not
    finite, a coordinate of x or x_prev beyond MAX_POSITION [m], a velocity component beyond MAX_SPEED [m/s]
    (``cloth.x[:] = 1e308`` is finite, and would be stepped on).

    The check is branch-free (a finite a gives a·0 = 0, a NaN or inf gives NaN, so the sum is 0 only
    if every value is finite; the largest magnitudes are kept alongside); only a failed check searches for
    the particle."""
    n = x.shape[0]
    acc = 0.0
    far = 0.0
    fast = 0.0
    for p in range(n):
        for c in range(3):
            acc += x[p, c] * 0.0 + v[p, c] * 0.0 + x_prev[p, c] * 0.0
            far = max(far, abs(x[p, c]), abs(x_prev[p, c]))
            fast = max(fast, abs(v[p, c]))
    if acc != 0.0 or far > MAX_POSITION or fast > MAX_SPEED:
        for p in range(n):
            for c in range(3):
                if not abs(x[p, c]) <= MAX_POSITION:          # NaN fails every comparison
                    return p, 0
                if not abs(v[p, c]) <= MAX_SPEED:
                    return p, 1
                if not abs(x_prev[p, c]) <= MAX_POSITION:
                    return p, 2
    for p in range(n):                           # one array at a time: about 2× faster than interleaved
        for c in range(3):
            x0[p, c] = x[p, c]
    for p in range(n):
        for c in range(3):
            v0[p, c] = v[p, c]
    for p in range(n):
        for c in range(3):
            x_prev0[p, c] = x_prev[p, c]
    return -1, -1


@numba.njit(cache=True)
def _check_and_save_batch(x, v, x_prev, x0, v0, x_prev0, bad_particle, bad_field):
    """``_check_and_save`` for every cloth of a batch (typed lists): writes bad_particle[c], bad_field[c]."""
    for c in range(len(x)):
        bad_particle[c], bad_field[c] = _check_and_save(x[c], v[c], x_prev[c], x0[c], v0[c], x_prev0[c])


@numba.njit(cache=True)
def _clamp_speeds(v, max_speed):
    """Scale every velocity v[p] (n, 3) [m/s] longer than max_speed [m/s] down to that length, in place."""
    for p in range(v.shape[0]):
        sq = v[p, 0] * v[p, 0] + v[p, 1] * v[p, 1] + v[p, 2] * v[p, 2]
        if sq > max_speed * max_speed:
            s = max_speed / np.sqrt(sq)
            for c in range(3):
                v[p, c] *= s


def _check_and_save_numpy(x, v, x_prev, x0, v0, x_prev0):
    """``_check_and_save`` in NumPy: its twin while the compile-ahead worker compiles it (``cold_kernels``)."""
    bad = ~((np.abs(x) <= MAX_POSITION) & (np.abs(v) <= MAX_SPEED) & (np.abs(x_prev) <= MAX_POSITION)).all(axis=1)
    if bad.any():
        p = int(np.argmax(bad))
        for c in range(3):
            for which, (a, bound) in enumerate(((x, MAX_POSITION), (v, MAX_SPEED), (x_prev, MAX_POSITION))):
                if not abs(a[p, c]) <= bound:
                    return p, which
    np.copyto(x0, x)
    np.copyto(v0, v)
    np.copyto(x_prev0, x_prev)
    return -1, -1


def _first_bad_numpy(state, links, inv_mass, saved, bounds):
    """``_first_bad`` in NumPy: its twin while the compile-ahead worker compiles it (``cold_kernels``)."""
    x, v, x_prev = state
    link_i, link_j, link_rest = links
    max_position, max_speed, max_stretch = bounds
    bad = ~((np.abs(x) <= max_position) & (np.abs(v) <= max_speed)).all(axis=1)
    if bad.any():
        return int(np.argmax(bad)), -1
    d = x[link_i] - x[link_j]
    limit = max_stretch * link_rest
    over = ((d * d).sum(axis=1) > limit * limit) & ~((inv_mass[link_i] == 0.0) & (inv_mass[link_j] == 0.0))
    if over.any():
        k = int(np.argmax(over))
        return int(link_i[k]), k
    bad, _ = _check_and_save_numpy(x, v, x_prev, *saved)
    return bad, -1


python_twin(_check_and_save, per_step=True, twin=_check_and_save_numpy)
python_twin(_first_bad, per_step=True, twin=_first_bad_numpy)
_check_and_save_call, _first_bad_call = _check_and_save, _first_bad   # the Python call sites' names
called_from(__name__, _check_and_save, _first_bad)
