"""Verlet cloth: position Verlet with a drag factor, then relaxation passes of distance limits.

The model of Fuhrmann et al. 2003 §3 (also Schönberger §3.3, Fisher "Verlet" and "Maximum Stretch")
for cloths with ``model="verlet"``; each substep of h:
- predict: x ← x + (x − x_prev)·drag_h + (g + w·f)·h², x_prev ← old x (eqs. 15/17 with
  Schönberger's drag, eq. 1), drag_h = drag^(60·h) so that ``VerletSettings.drag`` is the fraction of
  velocity kept per 1/60 s whatever the substep count. Particles of inverse mass 0 are not
  integrated (eq. 11): the pin system places them;
- constrain: ``passes`` passes over the links in colour order: stretch and shear links kept within
  [stretch_min, stretch_max] × rest length (eq. 5 with d_min, d_max), bending pairs no shorter than
  bend_min × rest; corrections weighted by inverse mass, so internal constraints never move the
  centre of mass (eqs. 6–9);
- update: v = (x − x_prev)/h (eq. 14). Velocity is an output only (colliders, reports): the next
  prediction reads x_prev, never v.

The guard restores a refused step's x and v but sets x_prev = x, which would stop the cloth dead;
the next prediction puts back the x_prev saved at the start of the refused step, so the retry is
that same step and the cloth keeps its momentum.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from loom.components import Cloth, Gravity
from loom.engine import App
from loom.engine.persist import persistent
from loom.systems.shared.distance_limits import link_bounds, relax_distances
from loom.systems.shared.model_index import cloths_of
from loom.systems.shared.substep_model import ClothScratch, Seen, add_substep_model

MODEL = "verlet"
"""The ``Cloth.model`` this module steps (registered in ``loom.systems.registry``)."""


class VerletPlugin:
    """Verlet cloth (``model="verlet"``): predict, relax distance limits, derive velocities."""

    def build(self, app: App) -> None:
        add_substep_model(app, MODEL, VerletScratch, predict_verlet, relax_verlet_links, update_verlet_velocities)


@persistent
class VerletScratch(ClothScratch):
    """Per-cloth link bounds of the Verlet model, keyed by entity (rebuilt when the settings change);
    ``get(entity, cloth)`` returns the cloth's ``_VerletTables``."""

    def build(self, cloth: Cloth) -> _VerletTables:
        return _VerletTables(cloth)

    def stale(self, t: _VerletTables, cloth: Cloth) -> bool:
        """Rebuild when the settings, the link table or the particle count changed."""
        return t.settings is not cloth.settings or t.link_rest is not cloth.link_rest \
            or t.x_prev_at_step.shape != cloth.x.shape


@persistent
class _VerletTables:
    """Per-link bounds [m] (c,) in colour order, what they were built from, and the guard's scratch."""

    def __init__(self, cloth: Cloth) -> None:
        s = cloth.settings
        self.settings = s
        self.link_rest = cloth.link_rest
        self.link_lo, self.link_hi = link_bounds(cloth, (s.stretch_min, s.stretch_min, s.bend_min),
                                                 (s.stretch_max, s.stretch_max, math.inf))
        self.seen = Seen(cloth)
        """What these tables last saw of the cloth's change signal and of the guard's refusals."""
        self.x_prev_at_step = cloth.x_prev.copy()
        """x_prev at the start of the current step [m], (n, 3): put back if the guard refuses the step."""


def predict_verlet(app: App, h: float) -> None:
    """Verlet cloths: advance free particles by position Verlet with drag over a substep of h [s]."""
    g = app.resource(Gravity).acceleration
    scratch = app.resource(VerletScratch)
    for entity, cloth in cloths_of(app, MODEL):
        tables = scratch.get(entity, cloth)
        if tables.seen.refused(cloth):          # the guard reset x, v and x_prev = x: retry the refused step
            np.copyto(cloth.x_prev, tables.x_prev_at_step)      # from its own x_prev
        if app.clock.substep_index == 0:
            np.copyto(tables.x_prev_at_step, cloth.x_prev)
        drag_h = cloth.settings.drag ** (60.0 * h)
        _predict(cloth.inv_mass, cloth.force, g[0], g[1], g[2], drag_h, h, cloth.x, cloth.x_prev)


def relax_verlet_links(app: App, h: float) -> None:
    """Verlet cloths: ``settings.passes`` passes of d_min/d_max and bend_min limits (Fuhrmann 2003 eqs. 5–9)."""
    scratch = app.resource(VerletScratch)
    for entity, cloth in cloths_of(app, MODEL):
        tables = scratch.get(entity, cloth)
        relax_distances(cloth.settings.passes, cloth.link_i, cloth.link_j, tables.link_lo, tables.link_hi,
                        cloth.inv_mass, cloth.x)


def update_verlet_velocities(app: App, h: float) -> None:
    """Verlet cloths: v = (x − x_prev)/h (Fuhrmann 2003 eq. 14), for colliders, reports and the guard."""
    for _, cloth in cloths_of(app, MODEL):
        _update(cloth.x, cloth.x_prev, 1.0 / h, cloth.v)


# --- kernels: private, arrays in, arrays out ----------------------------------------------------
@numba.njit(cache=True)
def _predict(inv_mass, force, gx, gy, gz, drag_h, h, x, x_prev):
    """Position Verlet with drag (Fuhrmann 2003 eq. 17; Schönberger eq. 1) for every free particle.

    inv_mass (n,) [1/kg]; force (n, 3) [N]; g [m/s²]; drag_h [-] velocity fraction kept this
    substep; h [s]. Writes x and x_prev (n, 3) [m]: x_prev ← x for every particle (the collision
    system reads it as the substep start), x ← x + (x − x_prev)·drag_h + (g + w·f)·h² where w > 0."""
    h2 = h * h
    for p in range(x.shape[0]):
        w = inv_mass[p]
        if w > 0.0:
            x0 = x[p, 0]
            x1 = x[p, 1]
            x2 = x[p, 2]
            x[p, 0] = x0 + (x0 - x_prev[p, 0]) * drag_h + (gx + w * force[p, 0]) * h2
            x[p, 1] = x1 + (x1 - x_prev[p, 1]) * drag_h + (gy + w * force[p, 1]) * h2
            x[p, 2] = x2 + (x2 - x_prev[p, 2]) * drag_h + (gz + w * force[p, 2]) * h2
            x_prev[p, 0] = x0
            x_prev[p, 1] = x1
            x_prev[p, 2] = x2
        else:
            for c in range(3):
                x_prev[p, c] = x[p, c]


@numba.njit(cache=True)
def _update(x, x_prev, inv_h, v):
    """v = (x − x_prev)/h (Fuhrmann 2003 eq. 14). x, x_prev (n, 3) [m]; 1/h [1/s]; writes v (n, 3) [m/s]."""
    for p in range(x.shape[0]):
        for c in range(3):
            v[p, c] = (x[p, c] - x_prev[p, c]) * inv_h
