"""The plain reference of the sheet benchmark: XPBD written for that one scene, the yardstick for Loom's solver.

One numba kernel, one thread, float64, structure of arrays (positions as three (n,) arrays x, y, z; links as
(c,) arrays i, j, rest, compliance, λ in colour order): per substep of h it predicts (v += h·g on free
particles, x_prev = x, x += h·v), runs ``iters`` Gauss–Seidel sweeps of XPBD distance projections colour by
colour (Macklin et al. 2016 eq. 18, α̃ = α/h², λ restarting from 0 every substep: Loom's semantics, the same
operations in the same order, so its positions match Loom's bit for bit), the tethers on every second sweep
ending with the last (as Loom), then v = (x − x_prev)/h · decay. No App, no systems, no guard, no pins
(pinned particles have inverse mass 0 and rest, so Loom's pins only rewrite them where they are), no external
forces (the sheet has none: Loom's v += h·(g + w·f) is then v += h·g to the bit).

``PlainSheet.of(app, cloth)`` copies a Loom cloth's tables and state (and the App's gravity, dt and substeps);
``step(steps)`` advances it; ``sweep()`` runs only the constraint sweeps of one substep (ns per projection).
The sheet benchmark (benchmarks/sheet.py) runs it next to the App, in one process, and reports the ratio.

Written the way a numba user would write it for this one scene: plain ``range`` loops over int32 index arrays
and numba's default (Python) error model, with nothing specialised for the scene's compliances or masses.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from loom.components import Cloth, Gravity
from loom.engine import App


class PlainSheet:
    """A copy of one XPBD cloth as structure-of-arrays, stepped by ``_plain_steps``."""

    def __init__(self, cloth: Cloth, *, gravity: tuple[float, float, float], dt: float, substeps: int) -> None:
        self.x, self.y, self.z = (np.ascontiguousarray(cloth.x[:, c], np.float64) for c in range(3))
        self.vx, self.vy, self.vz = (np.ascontiguousarray(cloth.v[:, c], np.float64) for c in range(3))
        self.px, self.py, self.pz = (np.empty_like(self.x) for _ in range(3))
        self.inv_mass = cloth.inv_mass.copy()
        self.link_i = cloth.link_i.copy()
        self.link_j = cloth.link_j.copy()
        self.rest = cloth.link_rest.copy()
        self.compliance = cloth.link_compliance.copy()
        self.lam = np.zeros(cloth.link_count)
        self.offsets = cloth.link_color_offsets.copy()
        self.tether_offsets = cloth.tether_offsets.copy()
        self.tether_anchor = cloth.tether_anchor.copy()
        self.tether_length = cloth.tether_length.copy()
        self.g = tuple(float(c) for c in gravity)
        self.h = dt / substeps
        self.substeps = substeps
        self.iters = cloth.iterations
        self.decay = math.exp(-cloth.material.damping * self.h)

    @classmethod
    def of(cls, app: App, cloth: Cloth) -> PlainSheet:
        """A copy of ``cloth`` as it is now, stepped with ``app``'s gravity, dt and substeps."""
        return cls(cloth, gravity=app.resource(Gravity).acceleration, dt=app.clock.dt, substeps=app.clock.substeps)

    def positions(self) -> np.ndarray:
        """Current positions as (n, 3)."""
        return np.stack([self.x, self.y, self.z], axis=1)

    def step(self, steps: int) -> None:
        """Advance ``steps`` fixed steps of ``substeps`` substeps."""
        _plain_steps(steps, self.substeps, self.iters, self.h, self.g[0], self.g[1], self.g[2], self.decay,
                     self.x, self.y, self.z, self.vx, self.vy, self.vz, self.px, self.py, self.pz, self.inv_mass,
                     self.link_i, self.link_j, self.rest, self.compliance, self.lam, self.offsets,
                     self.tether_offsets, self.tether_anchor, self.tether_length)

    def sweep(self) -> None:
        """Only the constraint sweeps of one substep (λ reset, ``iters`` sweeps, tethers)."""
        _plain_sweeps(self.iters, 1.0 / (self.h * self.h), self.x, self.y, self.z, self.inv_mass, self.link_i,
                      self.link_j, self.rest, self.compliance, self.lam, self.offsets, self.tether_offsets,
                      self.tether_anchor, self.tether_length)


@numba.njit(cache=True)
def _plain_sweeps(iters, inv_h2, x, y, z, inv_mass, link_i, link_j, rest, compliance, lam, offsets,
                  tether_offsets, tether_anchor, tether_length):
    """λ = 0, then ``iters`` sweeps of the links colour by colour, tethers on every second sweep ending with
    the last."""
    lam[:] = 0.0
    for it in range(iters):
        for c in range(offsets.shape[0] - 1):
            for k in range(offsets[c], offsets[c + 1]):
                a = link_i[k]
                b = link_j[k]
                wa = inv_mass[a]
                wb = inv_mass[b]
                w = wa + wb
                if w == 0.0:
                    continue
                dx = x[a] - x[b]
                dy = y[a] - y[b]
                dz = z[a] - z[b]
                length = math.sqrt(dx * dx + dy * dy + dz * dz)
                if length < 1e-12:
                    continue
                alpha = compliance[k] * inv_h2
                dlam = (rest[k] - length - alpha * lam[k]) / (w + alpha)
                lam[k] += dlam
                s = dlam / length
                x[a] += wa * s * dx
                y[a] += wa * s * dy
                z[a] += wa * s * dz
                x[b] -= wb * s * dx
                y[b] -= wb * s * dy
                z[b] -= wb * s * dz
        if tether_anchor.shape[0] > 0 and (iters - 1 - it) % 2 == 0:
            for p in range(x.shape[0]):
                if inv_mass[p] == 0.0:
                    continue
                for t in range(tether_offsets[p], tether_offsets[p + 1]):
                    a = tether_anchor[t]
                    dx = x[p] - x[a]
                    dy = y[p] - y[a]
                    dz = z[p] - z[a]
                    dist = math.sqrt(dx * dx + dy * dy + dz * dz)
                    if dist > tether_length[t]:
                        s = tether_length[t] / dist
                        x[p] = x[a] + dx * s
                        y[p] = y[a] + dy * s
                        z[p] = z[a] + dz * s


@numba.njit(cache=True)
def _plain_steps(steps, substeps, iters, h, gx, gy, gz, decay, x, y, z, vx, vy, vz, px, py, pz, inv_mass,
                 link_i, link_j, rest, compliance, lam, offsets, tether_offsets, tether_anchor, tether_length):
    """``steps`` × ``substeps`` × (predict, sweeps, velocity update)."""
    inv_h = 1.0 / h
    inv_h2 = 1.0 / (h * h)
    for _ in range(steps * substeps):
        for p in range(x.shape[0]):
            if inv_mass[p] > 0.0:
                vx[p] += h * gx
                vy[p] += h * gy
                vz[p] += h * gz
            px[p] = x[p]
            py[p] = y[p]
            pz[p] = z[p]
            x[p] += h * vx[p]
            y[p] += h * vy[p]
            z[p] += h * vz[p]
        _plain_sweeps(iters, inv_h2, x, y, z, inv_mass, link_i, link_j, rest, compliance, lam, offsets,
                      tether_offsets, tether_anchor, tether_length)
        for p in range(x.shape[0]):
            vx[p] = (x[p] - px[p]) * inv_h * decay
            vy[p] = (y[p] - py[p]) * inv_h * decay
            vz[p] = (z[p] - pz[p]) * inv_h * decay
