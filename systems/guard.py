"""Guard: a step that would leave NaN, inf or an exploded value in a cloth is refused — state restored, reported.

Before each step the guard copies every cloth's positions and velocities; after it, one pass
checks them. If any value is not finite, or a position is farther than MAX_POSITION from the
origin or a speed above MAX_SPEED (an unstable explicit integrator grows through 1e60 and beyond
long before it overflows to inf), the step is undone for that cloth, its ``rejected_steps`` count
grows, a warning is logged (the 1st, 10th, 100th … time) and the App emits ``step_rejected`` with
entity, step and the first bad particle, so the game can react. The step after retries from the
restored state (recovery by smaller substeps comes with the reliability work).
"""
from __future__ import annotations

import logging

import numba
import numpy as np

from components import Cloth
from engine import App

log = logging.getLogger("loom.guard")

MAX_POSITION = 1e6
"""Largest believable |coordinate| [m] (1000 km): beyond it a cloth has exploded."""
MAX_SPEED = 1e4
"""Largest believable |velocity component| [m/s] (10 km/s)."""


class StepSnapshot:
    """Per-cloth copies of x and v at the start of the step, keyed by entity (guard scratch)."""

    def __init__(self) -> None:
        self.saved: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def save_state(app: App, dt: float) -> None:
    """Copy each cloth's positions and velocities before the step (no allocation after the first)."""
    snapshot = app.insert_resource(StepSnapshot(), replace=False)
    for entity, cloth in app.query(Cloth):
        saved = snapshot.saved.get(entity)
        if saved is None or saved[0].shape != cloth.x.shape:
            saved = snapshot.saved[entity] = (np.empty_like(cloth.x), np.empty_like(cloth.v))
        np.copyto(saved[0], cloth.x)
        np.copyto(saved[1], cloth.v)


def reject_non_finite(app: App, dt: float) -> None:
    """Restore any cloth whose step produced NaN, inf or an exploded value, and report it."""
    snapshot = app.resource(StepSnapshot)
    for entity, cloth in app.query(Cloth):
        bad = _first_bad(cloth.x, cloth.v, MAX_POSITION, MAX_SPEED)
        if bad < 0:
            continue
        x0, v0 = snapshot.saved[entity]
        np.copyto(cloth.x, x0)
        np.copyto(cloth.v, v0)
        np.copyto(cloth.x_prev, x0)
        cloth.rejected_steps += 1
        step = app.clock.step_index
        if _is_power_of_ten(cloth.rejected_steps):          # 1st, 10th, 100th …: no log flood
            log.warning("cloth entity %d: step %d refused, particle %d would be non-finite or exploded; "
                        "state restored (%d refused so far)", entity, step, bad, cloth.rejected_steps)
        app.emit("step_rejected", entity=entity, step=step, particle=bad)


def _is_power_of_ten(count: int) -> bool:
    while count >= 10 and count % 10 == 0:
        count //= 10
    return count == 1


@numba.njit(cache=True)
def _first_bad(x, v, max_position, max_speed):
    """Index of the first particle whose position or velocity is non-finite or beyond the bounds, or −1.

    x, v (n, 3) [m, m/s]; a NaN fails every comparison, so ``not (|a| <= bound)`` catches it too."""
    for p in range(x.shape[0]):
        for c in range(3):
            if not (abs(x[p, c]) <= max_position and abs(v[p, c]) <= max_speed):
                return p
    return -1
