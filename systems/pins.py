"""Pins: hold particles at their targets, moving them smoothly across the substeps of each step.

Once per step (PRE_STEP) the pin system reads each Pin's target for the end of the step — a fixed
world point, or an offset carried by another entity's Transform — and sets the pinned particles'
inverse mass to 0 (infinite mass: constraints never move them; Fuhrmann 2003 eq. 11). In each
substep k of S it places them on the straight line from where they were to that target, at
fraction (k + 1)/S, so they sit exactly on the target at the end of the step.
"""
from __future__ import annotations

import numba
import numpy as np

from components import Cloth, Pin, Transform
from engine import App


def prepare_pins(app: App, dt: float) -> None:
    """Bind new pins to their cloth, read this step's targets, and zero pinned inverse masses.

    Emits ``pin_released`` and ``pin_grabbed`` (entity, particles, step) when ``active`` flags change."""
    for entity, cloth, pin in app.query(Cloth, Pin):
        if not pin.bound:
            _bind(app, cloth, pin)
        if not np.array_equal(pin.active, pin.active_before):
            changed = pin.active != pin.active_before
            released = pin.index[changed & ~pin.active]
            grabbed = pin.index[changed & pin.active]
            pin.active_before[:] = pin.active
            if released.size:
                app.emit("pin_released", entity=entity, particles=released.tolist(), step=app.clock.step_index)
            if grabbed.size:
                app.emit("pin_grabbed", entity=entity, particles=grabbed.tolist(), step=app.clock.step_index)
        idx = pin.index
        pin.step_start[:] = cloth.x[idx]
        if pin.attach_to is None:
            pin.step_end[:] = pin.target
        else:
            pin.step_end[:] = _carrier(app, pin).to_world(pin.offset)
        cloth.inv_mass[idx] = np.where(pin.active, 0.0, cloth.base_inv_mass[idx])


def pin_particles(app: App, h: float) -> None:
    """Move active pinned particles to their targets interpolated at this substep."""
    clock = app.clock
    alpha = (clock.substep_index + 1) / clock.substeps
    for _, cloth, pin in app.query(Cloth, Pin):
        if not cloth.substepped:
            continue
        _move_pins(pin.index, pin.active, pin.step_start, pin.step_end, alpha, cloth.x)


def _carrier(app: App, pin: Pin) -> Transform:
    transform = app.try_get(pin.attach_to, Transform)
    if transform is None:
        raise ValueError(f"Pin.attach_to = {pin.attach_to}: that entity has no Transform to carry the pins")
    return transform


def _bind(app: App, cloth: Cloth, pin: Pin) -> None:
    """Check the pin's indices against its cloth and fill targets or offsets left to the first step."""
    n = cloth.particle_count
    over = np.flatnonzero(pin.index >= n)
    if over.size:
        k = int(over[0])
        raise ValueError(f"Pin.index[{k}] = {int(pin.index[k])}: out of range for a cloth of {n} particles")
    if pin.attach_to is None:
        if pin.target is None:
            pin.target = cloth.x[pin.index].copy()
    elif pin.offset is None:
        pin.offset = _carrier(app, pin).to_local(cloth.x[pin.index])
    pin.bound = True


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
