"""Integration: advance XPBD cloth particles by gravity and external forces, then derive velocities.

Symplectic Euler prediction (Macklin et al. 2016, Algorithm 1 lines 3–4; Fuhrmann 2003 eqs. 12–13):
v ← v + h·(g + w·f), x_prev ← x, x ← x + h·v. After the constraints moved x, the update
v ← (x − x_prev)/h (Fuhrmann eq. 14: velocity from positions, which keeps the scheme stable
when constraints and collisions move particles) and damping v ← v·exp(−damping·h).
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

from loom.components import Cloth, Gravity
from loom.engine import App
from loom.engine.persist import persistent
from loom.systems.shared.batch import Batch, batchable, revisions
from loom.systems.shared.model_index import clothes_of
from loom.systems.shared.plan import Plan, run

MODEL = "xpbd"
"""The ``Cloth.model`` this package steps (registered in ``loom.systems.registry``)."""


@persistent
class IntegrationBatch:
    """Resource: the XPBD cloths' particle arrays as one batch (systems/shared/batch.py), with each cloth's
    damping, for worlds of many cloths."""

    def __init__(self) -> None:
        self.batch = Batch()
        self.lists: tuple = ()
        self.decay = np.zeros(0)

    def update(self, clothes: list[Cloth], h: float) -> None:
        """Point the batch at ``clothes`` and re-read their damping as this step's decay per substep of h [s]."""
        self.lists = self.batch.update(revisions(clothes), lambda: [(c.inv_mass, c.force, c.x, c.v, c.x_prev)
                                                                     for c in clothes])
        if self.decay.shape[0] != len(clothes):
            self.decay = np.zeros(len(clothes))
        for k, c in enumerate(clothes):                  # math.exp, as update_velocities does per cloth
            self.decay[k] = math.exp(-c.material.damping * h)


def _xpbd_cloths(app: App) -> list[Cloth]:
    """The XPBD cloths, entity order (the model index's shared list: read only)."""
    return clothes_of(app, MODEL)


def _batch(app: App, clothes: list[Cloth]) -> IntegrationBatch | None:
    """The integration batch for ``clothes`` (checked at each step's first substep), or None for a few."""
    if not batchable(clothes):
        return None
    batch = app.init_resource(IntegrationBatch)
    if app.clock.substep_index == 0:
        batch.update(clothes, app.clock.h)
    return batch


def predict_positions(app: App, h: float) -> Plan:
    """XPBD cloths: apply gravity and external forces for a substep of h [s] and predict positions; returns the
    plan for the step's other substeps (``loom.systems.shared.plan``: the same kernels, gravity read at each)."""
    g = app.resource(Gravity).acceleration
    clothes = _xpbd_cloths(app)
    batch = _batch(app, clothes)
    if batch is not None:
        lists = batch.lists

        def plan(app: App, h: float) -> None:
            _predict_batch(*lists, g[0], g[1], g[2], h)
    else:
        rows = [(cloth.inv_mass, cloth.force, cloth.x, cloth.v, cloth.x_prev) for cloth in clothes]

        def plan(app: App, h: float) -> None:
            for inv_mass, force, x, v, x_prev in rows:
                _predict_call(inv_mass, force, g[0], g[1], g[2], h, x, v, x_prev)
    plan(app, h)
    return plan


def update_velocities(app: App, h: float) -> Plan:
    """XPBD cloths: set velocities from the substep's position change and apply the material's damping; returns the
    plan for the step's other substeps (the same kernels and decay)."""
    clothes = _xpbd_cloths(app)
    batch = app.resources.get(IntegrationBatch) if batchable(clothes) else None
    if batch is not None and len(batch.decay) == len(clothes):       # set up by this step's predict
        calls = [(_update_batch, (*batch.lists, 1.0 / h, batch.decay))]
    else:
        calls = [(_update_call, (cloth.x, cloth.x_prev, 1.0 / h, math.exp(-cloth.material.damping * h), cloth.v))
                 for cloth in clothes]
    return run(calls)


# --- kernels: private, arrays in, arrays out ----------------------------------------------------
@numba.njit(cache=True)
def _predict(inv_mass, force, gx, gy, gz, h, x, v, x_prev):
    """Symplectic Euler prediction of every particle.

    inv_mass (n,) [1/kg]; force (n, 3) [N]; g [m/s²]; h [s]. Writes v (n, 3) [m/s], x_prev and x
    (n, 3) [m]. Particles of inverse mass 0 keep their velocity (pins overwrite their position)."""
    for p in range(x.shape[0]):
        w = inv_mass[p]
        if w > 0.0:
            v[p, 0] += h * (gx + w * force[p, 0])
            v[p, 1] += h * (gy + w * force[p, 1])
            v[p, 2] += h * (gz + w * force[p, 2])
        for c in range(3):
            x_prev[p, c] = x[p, c]
            x[p, c] += h * v[p, c]


@numba.njit(cache=True)
def _update(x, x_prev, inv_h, decay, v):
    """v = (x − x_prev)/h · decay (Fuhrmann 2003 eq. 14 with damping). x, x_prev (n, 3) [m]; 1/h [1/s]."""
    for p in range(x.shape[0]):
        for c in range(3):
            v[p, c] = (x[p, c] - x_prev[p, c]) * inv_h * decay


_predict_call, _update_call = _predict, _update       # the Python call sites' names (loom.systems.xpbd.cold)


@numba.njit(cache=True, parallel=True)
def _predict_batch(inv_mass, force, x, v, x_prev, gx, gy, gz, h):
    """``_predict`` for every cloth of a batch (typed lists, one entry per cloth), a cloth per thread."""
    for k in prange(len(x)):
        c = np.int64(k)                          # typed lists take signed indices; prange's are unsigned
        _predict(inv_mass[c], force[c], gx, gy, gz, h, x[c], v[c], x_prev[c])


@numba.njit(cache=True, parallel=True)
def _update_batch(inv_mass, force, x, v, x_prev, inv_h, decay):
    """``_update`` for every cloth of a batch; decay (cloths,) per cloth."""
    for k in prange(len(x)):
        c = np.int64(k)
        _update(x[c], x_prev[c], inv_h, decay[c], v[c])
