"""Guard: a step that would leave NaN, inf, an exploded value or a torn-apart link is refused, then recovered.

Refusal. Before each step (PRE_STEP, ``ClothSet.SAVE``) the guard copies every cloth's positions
and velocities; after it (POST_STEP, ``ClothSet.GUARD``) one pass checks them. A step is bad for a
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
from loom.systems.shared.batch import Batch, batchable, revisions

log = logging.getLogger("loom.guard")

MAX_POSITION = 1e6
"""Largest believable |coordinate| [m] (1000 km): beyond it a cloth has exploded."""
MAX_SPEED = 1e4
"""Largest believable |velocity component| [m/s] (10 km/s)."""
MAX_STRETCH = 20.0
"""Longest believable link, as a multiple of its rest length [-]: a link beyond it means a lost step.
10× was the first choice, but a Verlet sheet yanked 4 m by one corner (tests/test_verlet.py) holds
its corner link at 12.8× by design (relaxation cannot move pinned particles); 20× leaves room."""


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


class StepSnapshot:
    """Per-cloth copies of x and v at the start of the step, keyed by entity (guard scratch)."""

    def __init__(self) -> None:
        self.saved: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.batch = Batch()
        self.check = Batch()
        self.found = np.zeros((2, 0), np.int64)        # batched check: first bad particle, link per cloth
        self.stretch = np.zeros(0)                      # batched check: stretch bound per cloth

    def forget(self, entity: int) -> None:
        """Drop a despawned entity's saved state."""
        self.saved.pop(entity, None)


def save_state(app: App, dt: float) -> None:
    """Copy each cloth's positions and velocities before the step (no allocation after the first)."""
    snapshot = app.init_resource(StepSnapshot)
    clothes = app.query(Cloth)

    def rows() -> list[tuple[np.ndarray, ...]]:
        out = []
        for entity, cloth in clothes:
            saved = snapshot.saved.get(entity)
            if saved is None or saved[0].shape != cloth.x.shape:
                saved = snapshot.saved[entity] = (np.empty_like(cloth.x), np.empty_like(cloth.v))
            out.append((cloth.x, cloth.v, saved[0], saved[1]))
        return out

    if batchable([c for _, c in clothes]):
        key = (tuple(e for e, _ in clothes), revisions(c for _, c in clothes))
        _copy_batch(*snapshot.batch.update(key, rows))
        return
    for x, v, x0, v0 in rows():
        np.copyto(x0, x)
        np.copyto(v0, v)


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

    def arrays() -> list[tuple[np.ndarray, ...]]:
        return [(c.x, c.v, c.link_i, c.link_j, c.link_rest, c.inv_mass) for _, c in rows]

    if batchable([c for _, c in rows]):                  # one call checks every cloth
        if snapshot.found.shape[1] != len(rows):
            snapshot.found = np.zeros((2, len(rows)), np.int64)
            snapshot.stretch = np.zeros(len(rows))
        bad_particle, bad_link = snapshot.found
        snapshot.stretch[:] = stretch
        _first_bad_batch(*snapshot.check.update(revisions(c for _, c in rows), arrays), MAX_POSITION, MAX_SPEED,
                         snapshot.stretch, bad_particle, bad_link)
    else:
        found = [_first_bad(*row, MAX_POSITION, MAX_SPEED, limit) for row, limit in zip(arrays(), stretch)]
        bad_particle = [bad for bad, _ in found]
        bad_link = [link for _, link in found]
    if not recovery.failing and max(bad_particle, default=-1) < 0:
        _set_factor(recovery, clock, False, False)       # all good, nothing recovering: nothing to report
        return
    for k, (entity, cloth) in enumerate(rows):
        bad, link = int(bad_particle[k]), int(bad_link[k])
        saved = snapshot.saved.get(entity)
        if saved is not None and saved[0].shape != cloth.x.shape:
            saved = None                                      # re-meshed during the step (tearing): no restore
        if bad < 0 or saved is None:
            count = recovery.failing.pop(entity, 0)
            if count and bad < 0:
                recovery.recoveries += 1
                log.info("cloth entity %d: step %d passed with %d substeps after %d refused", entity, step,
                         clock.substeps, count)
                app.emit("step_recovered", entity=entity, step=step, substeps=clock.substeps, refused=count)
            continue
        refused = True
        x0, v0 = saved
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
        reason = f"link {link} beyond {MAX_STRETCH:g}× its rest length" if link >= 0 else "non-finite or exploded"
        if _is_power_of_ten(cloth.rejected_steps):          # 1st, 10th, 100th …: no log flood
            log.warning("cloth entity %d: step %d refused at %d substeps, particle %d: %s; state restored, "
                        "action %s (%d refused so far)", entity, step, clock.substeps, bad, reason, action,
                        cloth.rejected_steps)
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
    clock.substeps = recovery.base_substeps * recovery.factor


def _is_power_of_ten(count: int) -> bool:
    while count >= 10 and count % 10 == 0:
        count //= 10
    return count == 1


# --- kernels --------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _first_bad(x, v, link_i, link_j, link_rest, inv_mass, max_position, max_speed, max_stretch):
    """(first bad particle, first overstretched link or −1): particle −1 if the state is good.

    x, v (n, 3) [m, m/s]; link_i, link_j (c,) int32; link_rest (c,) [m]. A particle is bad if a
    coordinate or velocity component is non-finite or beyond its bound (a NaN fails every
    comparison, so ``not (|a| <= bound)`` catches it too); a link is bad if longer than
    max_stretch × rest, and then its first particle is reported — unless both its particles are
    held (inverse mass 0: pinned or grabbed), which the game placed there and no solver can fix."""
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
    return -1, -1


@numba.njit(cache=True, parallel=True)
def _first_bad_batch(x, v, link_i, link_j, link_rest, inv_mass, max_position, max_speed, max_stretch, bad_particle,
                     bad_link):
    """``_first_bad`` for every cloth of a batch (typed lists), a cloth per thread: writes bad_particle[c],
    bad_link[c]; max_stretch (cloths,) per cloth."""
    for k in prange(len(x)):
        c = np.int64(k)                          # typed lists take signed indices; prange's are unsigned
        bad_particle[c], bad_link[c] = _first_bad(x[c], v[c], link_i[c], link_j[c], link_rest[c], inv_mass[c],
                                                  max_position, max_speed, max_stretch[c])


@numba.njit(cache=True)
def _copy_batch(x, v, x0, v0):
    """x0[c] = x[c], v0[c] = v[c] for every cloth of a batch (the guard's snapshot)."""
    for c in range(len(x)):
        x0[c][:] = x[c]
        v0[c][:] = v[c]


@numba.njit(cache=True)
def _clamp_speeds(v, max_speed):
    """Scale every velocity v[p] (n, 3) [m/s] longer than max_speed [m/s] down to that length, in place."""
    for p in range(v.shape[0]):
        sq = v[p, 0] * v[p, 0] + v[p, 1] * v[p, 1] + v[p, 2] * v[p, 2]
        if sq > max_speed * max_speed:
            s = max_speed / np.sqrt(sq)
            for c in range(3):
                v[p, c] *= s
