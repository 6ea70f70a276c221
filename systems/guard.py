"""Guard: a step that would leave NaN or inf in a cloth is refused — state restored, reported.

Before each step the guard copies every cloth's positions and velocities; after it, one pass
checks them. If any value is not finite the step is undone for that cloth, its
``rejected_steps`` count grows, a warning is logged and the App emits ``step_rejected`` with
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
    """Restore any cloth whose step produced NaN or inf, and report it."""
    snapshot = app.resource(StepSnapshot)
    for entity, cloth in app.query(Cloth):
        bad = _first_non_finite(cloth.x, cloth.v)
        if bad < 0:
            continue
        x0, v0 = snapshot.saved[entity]
        np.copyto(cloth.x, x0)
        np.copyto(cloth.v, v0)
        np.copyto(cloth.x_prev, x0)
        cloth.rejected_steps += 1
        step = app.clock.step_index
        log.warning("cloth entity %d: step %d refused, particle %d would be non-finite; state restored",
                    entity, step, bad)
        app.emit("step_rejected", entity=entity, step=step, particle=bad)


@numba.njit(cache=True)
def _first_non_finite(x, v):
    """Index of the first particle with a non-finite position or velocity, or −1. x, v (n, 3)."""
    for p in range(x.shape[0]):
        for c in range(3):
            if not (np.isfinite(x[p, c]) and np.isfinite(v[p, c])):
                return p
    return -1
