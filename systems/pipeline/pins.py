"""Pins: hold particles at their targets, moving them smoothly across the substeps of each step.

Once per step (PRE_STEP) the pin system reads each Pin's target for the end of the step — a fixed
world point, or an offset carried by another entity's Transform — and sets the pinned particles'
inverse mass to 0 (infinite mass: constraints never move them; Fuhrmann 2003 eq. 11). In each
substep k of S it places them on the straight line from where they were to that target, at
fraction (k + 1)/S, so they sit exactly on the target at the end of the step.

A pin bound to its cloth, or whose ``active`` flags changed, moves the cloth's change signal
(``Cloth.changed``): models that derive data from the anchors (XPBD's tethers) rebuild it.
"""
from __future__ import annotations

import numba
import numpy as np

from loom.components import Cloth, Pin, Transform
from loom.engine import App
from loom.launch.cold_kernels import called_from, python_twin
from loom.engine.persist import persistent
from loom.systems.shared.batch import BATCH_MIN_CLOTHS, Batch, batchable, revisions
from loom.systems.shared.plan import Plan


def prepare_pins(app: App, dt: float) -> None:
    """Bind new pins to their cloth, read this step's targets, and zero pinned inverse masses.

    Emits ``pin_released`` and ``pin_grabbed`` (entity, particles, step) when ``active`` flags change.
    Many pins with fixed targets and unchanged flags are prepared in one kernel call."""
    rows = app.query(Cloth, Pin)
    for entity, cloth, pin in rows:
        if not pin.bound or pin.bound_particles != cloth.x.shape[0]:     # new indices, or another cloth
            _bind(app, entity, cloth, pin)
    fixed = [r for r in rows if _fixed_target(r[2])] if len(rows) >= BATCH_MIN_CLOTHS else []
    done = _NONE_DONE
    if batchable([cloth for _, cloth, _ in fixed]):
        batch = app.init_resource(PinTargetBatch)
        if batch.done.shape[0] != len(fixed):
            batch.done = np.zeros(len(fixed), np.bool_)
        done = batch.done
        key = revisions(c for _, cloth, pin in fixed for c in (cloth, pin))
        _prepare_fixed_batch(*batch.update(key, lambda: [(pin.index, pin.active, pin.active_before, pin.target,
                                                          cloth.base_inv_mass, pin.step_start, pin.step_end,
                                                          cloth.x, cloth.inv_mass) for _, cloth, pin in fixed]),
                             done)
    prepared = {id(pin) for (_, _, pin), ok in zip(fixed, done) if ok}
    for entity, cloth, pin in rows:
        if not prepared or id(pin) not in prepared:
            _prepare_one(app, entity, cloth, pin)


def _fixed_target(pin: Pin) -> bool:
    """A pin the batch kernel can prepare: a fixed target held as a (k, 3) float array (a game may
    assign any array-like to ``target`` to drag the pins; those go through numpy)."""
    target = pin.target
    return (pin.attach_to is None and isinstance(target, np.ndarray) and target.dtype == np.float64
            and target.shape == pin.step_end.shape and target.flags.c_contiguous)


def _prepare_one(app: App, entity: int, cloth: Cloth, pin: Pin) -> None:
    """``prepare_pins`` for one pin: events for changed flags, this step's start and end, inverse masses."""
    if _flags_changed_call(pin.active, pin.active_before):
        changed = pin.active != pin.active_before
        released = pin.index[changed & ~pin.active]
        grabbed = pin.index[changed & pin.active]
        pin.active_before[:] = pin.active
        cloth.changed()                                 # the anchors change: every model follows
        if released.size:
            app.emit("pin_released", entity=entity, particles=released.tolist(), step=app.clock.step_index)
        if grabbed.size:
            app.emit("pin_grabbed", entity=entity, particles=grabbed.tolist(), step=app.clock.step_index)
    if pin.attach_to is None:
        pin.step_end[:] = pin.target
    else:
        carrier = _carrier(app, pin)
        offset = pin.offset
        if isinstance(offset, np.ndarray) and offset.dtype == np.float64 and offset.shape == pin.step_end.shape:
            _carry_call(carrier.rotation, carrier.position, offset, pin.step_end)
        else:                                           # a game assigned some other array-like
            pin.step_end[:] = carrier.to_world(offset)
    _hold_call(pin.index, pin.active, cloth.x, cloth.base_inv_mass, pin.step_start, cloth.inv_mass)


def pin_particles(app: App, h: float) -> Plan:
    """Move active pinned particles to their targets interpolated at this substep; returns the plan for the step's
    other substeps (``loom.systems.shared.plan``: the same kernels, each substep's fraction of the step)."""
    clock = app.clock
    substeps = clock.substeps                           # fixed within a step (a plan relies on it)
    pairs = app.query(Cloth, Pin)
    if batchable([cloth for _, cloth, _ in pairs]):    # many pinned cloths: one call
        batch = app.init_resource(PinBatch)
        if clock.substep_index == 0:
            batch.update([(cloth, pin) for _, cloth, pin in pairs if cloth.substepped])
        lists = batch.lists

        def plan(app: App, h: float) -> None:
            if lists:
                _move_pins_batch(*lists, (app.clock.substep_index + 1) / substeps)
    else:
        rows = [(_move_pins_call, pin.index, pin.active, pin.step_start, pin.step_end, cloth.x)
                for _, cloth, pin in pairs if cloth.substepped]

        def plan(app: App, h: float) -> None:
            alpha = (app.clock.substep_index + 1) / substeps
            for kernel, index, active, step_start, step_end, x in rows:
                kernel(index, active, step_start, step_end, alpha, x)
    plan(app, h)
    return plan


@persistent
class PinTargetBatch(Batch):
    """Resource: the pins with fixed targets as one batch, for ``prepare_pins``."""

    def __init__(self) -> None:
        super().__init__()
        self.done = np.zeros(0, np.bool_)


_NONE_DONE = np.zeros(0, np.bool_)
"""``done`` of a step with no batched pin (read-only)."""
_NONE_DONE.flags.writeable = False


@persistent
class PinBatch:
    """Resource: the pins of substepped cloths as one batch (systems/shared/batch.py), refreshed at substep 0."""

    def __init__(self) -> None:
        self.batch = Batch()
        self.lists: tuple = ()

    def update(self, pairs: list[tuple[Cloth, Pin]]) -> None:
        """Point the batch at the (cloth, pin) ``pairs`` of substepped cloths (none: an empty batch)."""
        self.lists = () if not pairs else self.batch.update(
            revisions(c for pair in pairs for c in pair),
            lambda: [(pin.index, pin.active, pin.step_start, pin.step_end, cloth.x) for cloth, pin in pairs])


def _carrier(app: App, pin: Pin) -> Transform:
    transform = app.try_get(pin.attach_to, Transform)
    if transform is None:
        raise ValueError(f"Pin.attach_to = {pin.attach_to}: that entity has no Transform to carry the pins")
    return transform


def _bind(app: App, entity: int, cloth: Cloth, pin: Pin) -> None:
    """Check the pin's indices against its cloth (before any kernel reads them: the first step, new indices, or a
    cloth of another particle count on the entity) and fill targets or offsets left to the first step. Raises
    ValueError naming the Pin, the entity and the counts when an index does not fit the cloth."""
    n = cloth.particle_count
    over = np.flatnonzero(pin.index >= n)
    if over.size:
        k = int(over[0])
        again = "" if pin.bound_particles < 0 or pin.bound_particles == n else \
            f" (the Pin was checked against a cloth of {pin.bound_particles} particles: the entity's Cloth was " \
            f"replaced; give the Pin indices of the new cloth, pin.assign(index=..., target=...), or remove it)"
        raise ValueError(f"Pin.index[{k}] = {int(pin.index[k])}: out of range for a cloth of {n} particles "
                         f"(the Cloth of entity {entity}){again}")
    if pin.attach_to is None:
        if pin.target is None:
            pin.target = cloth.x[pin.index].copy()
    elif pin.offset is None:
        pin.offset = _carrier(app, pin).to_local(cloth.x[pin.index])
    pin.bound = True
    pin.bound_particles = n
    cloth.changed()                                     # new pinned particles: every model follows


# --- kernels --------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _move_pins(index, active, start, end, alpha, x):
    """x[index[k]] = (1 − alpha)·start[k] + alpha·end[k] for active pins (exactly end at alpha = 1).

    index (k,) int32; active (k,) bool; start, end (k, 3) [m]; alpha in (0, 1]. Writes x (n, 3)."""
    for k in range(index.shape[0]):
        if active[k]:
            p = index[k]
            for c in range(3):
                x[p, c] = (1.0 - alpha) * start[k, c] + alpha * end[k, c]


@numba.njit(cache=True)
def _flags_changed(active, before):
    """Whether any pin's ``active`` flag differs from last step's (without a temporary array)."""
    for k in range(active.shape[0]):
        if active[k] != before[k]:
            return True
    return False


@numba.njit(cache=True)
def _hold(index, active, x, base_inv_mass, start, inv_mass):
    """start[k] = x[index[k]] (where the pinned particles are at the step's start); inverse mass 0
    for active pins, the particle's own for released ones."""
    for k in range(index.shape[0]):
        p = index[k]
        for c in range(3):
            start[k, c] = x[p, c]
        inv_mass[p] = 0.0 if active[k] else base_inv_mass[p]


@numba.njit(cache=True)
def _carry(rotation, position, offset, out):
    """out[k] = rotation · offset[k] + position: pins carried by a Transform, in world space [m]."""
    for k in range(offset.shape[0]):
        for i in range(3):
            out[k, i] = (rotation[i, 0] * offset[k, 0] + rotation[i, 1] * offset[k, 1] + rotation[i, 2] * offset[k, 2]
                         + position[i])


@numba.njit(cache=True)
def _prepare_fixed_batch(index, active, active_before, target, base_inv_mass, start, end, x, inv_mass, done):
    """``prepare_pins`` for every fixed-target pin of a batch whose ``active`` flags did not change
    (done[k] = True); a pin whose flags changed is left to Python (it emits events)."""
    for k in range(len(index)):
        done[k] = not _flags_changed(active[k], active_before[k])
        if done[k]:
            ends, targets = end[k], target[k]
            for i in range(ends.shape[0]):          # a loop: an array-to-slice copy compiles numba's shape-error
                for c in range(3):                  # formatting (seconds of a first launch)
                    ends[i, c] = targets[i, c]
            _hold(index[k], active[k], x[k], base_inv_mass[k], start[k], inv_mass[k])


@numba.njit(cache=True)
def _move_pins_batch(index, active, start, end, x, alpha):
    """``_move_pins`` for every pin of a batch (typed lists, one entry per pin)."""
    for k in range(len(x)):
        _move_pins(index[k], active[k], start[k], end[k], alpha, x[k])


python_twin(_flags_changed, per_step=True)
python_twin(_carry, per_step=True)
python_twin(_hold, per_step=True)
python_twin(_move_pins, per_step=True)
_flags_changed_call, _hold_call, _move_pins_call = _flags_changed, _hold, _move_pins   # the Python call sites'
_carry_call = _carry                                                                   # names
called_from(__name__, _flags_changed, _carry, _hold, _move_pins)
