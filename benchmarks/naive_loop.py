"""The naive loop of the sheet benchmark: Loom's own algorithm written out once more, plainly, for that one scene.

What it is, and what it is not: a deliberately naive copy of Loom's own solver (the same yarn line solve, tethers
and sweeps), not a baseline a user would pick instead of Loom. It answers one question: what Loom's systems,
plans and kernel layout cost or save against the same arithmetic in straightforward numba loops. The method
comparison at equal quality, against plain small-step XPBD, is ``benchmarks/small_steps.py``.

One numba kernel, one thread, float64, structure of arrays (positions as three (n,) arrays x, y, z; links as
(c,) arrays i, j, rest, compliance, λ in colour order): per substep of h it predicts (v += h·g on free
particles, x_prev = x, x += h·v), runs ``iters`` sweeps: Gauss–Seidel XPBD distance projections of the links that
are not stretch links, colour by colour (Macklin et al. 2016 eq. 18, α̃ = α/h², λ restarting from 0 every
substep), then each yarn's stretch links solved together (tridiagonal, Thomas algorithm: systems/xpbd/yarns.py,
on the yarns Loom built for the cloth), then the tethers on every second sweep ending with the last, then every
yarn once more, colours in reverse order (Loom's ``settle_yarns``, after the collisions, of which the sheet has none);
Loom's semantics, the same operations in the same order, so its positions match Loom's bit for bit; then
v = (x − x_prev)/h · decay. No App, no systems, no guard, no pins
(pinned particles have inverse mass 0 and rest, so Loom's pins only rewrite them where they are), no external
forces (the sheet has none: Loom's v += h·(g + w·f) is then v += h·g to the bit).

``NaiveSheet.of(app, cloth)`` copies a Loom cloth's tables and state (and the App's gravity, dt and substeps);
``step(steps)`` advances it; ``sweep()`` runs only the constraint sweeps of one substep (ns per projection).
The sheet benchmark (benchmarks/sheet.py) runs it next to the App, in one process, and reports the ratio
(``ratio_to_naive``); ``benchmarks/yardstick.py`` times it as the machine's speed.

Written the way a numba user would write it for this one scene: plain ``range`` loops over int32 index arrays
and numba's default (Python) error model, with nothing specialised for the scene's compliances or masses.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from loom.components import STRETCH, Cloth, Gravity
from loom.engine import App
from loom.systems.xpbd.data import XPBDClothData, XPBDData
from loom.systems.xpbd.yarns import PIVOT_FLOOR, TAUT, build_yarns


class NaiveSheet:
    """A copy of one XPBD cloth as structure-of-arrays, stepped by ``_naive_steps``."""

    def __init__(self, cloth: Cloth, tethers: XPBDClothData, *, gravity: tuple[float, float, float], dt: float,
                 substeps: int) -> None:
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
        stretch = cloth.link_kind[cloth.link_order] == STRETCH
        colour = np.repeat(np.arange(self.offsets.shape[0] - 1), np.diff(self.offsets))
        self.sweep_end = self.offsets[:-1] + np.bincount(colour[~stretch], minlength=self.offsets.shape[0] - 1)
        yarns = build_yarns(cloth.link_i, cloth.link_j, stretch, cloth.rest_x)
        self.yarn_particles, self.yarn_links, self.yarn_offsets = yarns.particles, yarns.links, yarns.offsets
        self.yarn_colors = yarns.color_offsets
        longest = int(np.diff(self.yarn_offsets).max()) if self.yarn_offsets.shape[0] > 1 else 1
        self.work = np.zeros((7, longest))
        self.tether_offsets = tethers.tether_offsets.copy()          # XPBD's data of the cloth
        self.tether_anchor = tethers.tether_anchor.copy()
        self.tether_length = tethers.tether_length.copy()
        self.g = tuple(float(c) for c in gravity)
        self.h = dt / substeps
        self.substeps = substeps
        self.iters = cloth.iterations
        self.decay = math.exp(-cloth.material.damping * self.h)

    @classmethod
    def of(cls, app: App, cloth: Cloth) -> NaiveSheet:
        """A copy of ``cloth`` as it is now, stepped with ``app``'s gravity, dt and substeps."""
        return cls(cloth, app.resource(XPBDData).of(cloth), gravity=app.resource(Gravity).acceleration,
                   dt=app.clock.dt, substeps=app.clock.substeps)

    def positions(self) -> np.ndarray:
        """Current positions as (n, 3)."""
        return np.stack([self.x, self.y, self.z], axis=1)

    def step(self, steps: int) -> None:
        """Advance ``steps`` fixed steps of ``substeps`` substeps."""
        _naive_steps(steps, self.substeps, self.iters, self.h, self.g[0], self.g[1], self.g[2], self.decay,
                     self.x, self.y, self.z, self.vx, self.vy, self.vz, self.px, self.py, self.pz, self.inv_mass,
                     self.link_i, self.link_j, self.rest, self.compliance, self.lam, self.offsets, self.sweep_end,
                     self.yarn_particles, self.yarn_links, self.yarn_offsets, self.yarn_colors, self.work,
                     self.tether_offsets, self.tether_anchor, self.tether_length)

    def sweep(self) -> None:
        """Only the constraint sweeps of one substep (λ reset, ``iters`` sweeps, tethers)."""
        _naive_sweeps(self.iters, 1.0 / (self.h * self.h), self.x, self.y, self.z, self.inv_mass, self.link_i,
                      self.link_j, self.rest, self.compliance, self.lam, self.offsets, self.sweep_end,
                      self.yarn_particles, self.yarn_links, self.yarn_offsets, self.work, self.tether_offsets,
                      self.tether_anchor, self.tether_length)


@numba.njit(cache=True)
def _naive_sweeps(iters, inv_h2, x, y, z, inv_mass, link_i, link_j, rest, compliance, lam, offsets, sweep_end,
                  yarn_particles, yarn_links, yarn_offsets, work, tether_offsets, tether_anchor, tether_length):
    """λ = 0, then ``iters`` sweeps: the links that are not stretch links colour by colour (each colour's first
    ``sweep_end`` links), the yarns, and the tethers on every second sweep ending with the last."""
    lam[:] = 0.0
    for it in range(iters):
        for c in range(offsets.shape[0] - 1):
            for k in range(offsets[c], sweep_end[c]):
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
        for y_ in range(yarn_offsets.shape[0] - 1):
            _naive_yarn(yarn_offsets[y_], yarn_offsets[y_ + 1], yarn_particles, yarn_links, work, inv_h2, x, y, z,
                        inv_mass, rest, compliance, lam)
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
def _naive_steps(steps, substeps, iters, h, gx, gy, gz, decay, x, y, z, vx, vy, vz, px, py, pz, inv_mass,
                 link_i, link_j, rest, compliance, lam, offsets, sweep_end, yarn_particles, yarn_links, yarn_offsets,
                 yarn_colors, work, tether_offsets, tether_anchor, tether_length):
    """``steps`` × ``substeps`` × (predict, sweeps, the yarns again in reverse colour order, velocity update)."""
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
        _naive_sweeps(iters, inv_h2, x, y, z, inv_mass, link_i, link_j, rest, compliance, lam, offsets, sweep_end,
                      yarn_particles, yarn_links, yarn_offsets, work, tether_offsets, tether_anchor, tether_length)
        colors = yarn_colors.shape[0] - 1
        for c in range(colors - 1, -1, -1):
            for y_ in range(yarn_colors[c], yarn_colors[c + 1]):
                _naive_yarn(yarn_offsets[y_], yarn_offsets[y_ + 1], yarn_particles, yarn_links, work, inv_h2, x, y,
                            z, inv_mass, rest, compliance, lam)
        for p in range(x.shape[0]):
            vx[p] = (x[p] - px[p]) * inv_h * decay
            vy[p] = (y[p] - py[p]) * inv_h * decay
            vz[p] = (z[p] - pz[p]) * inv_h * decay


@numba.njit(cache=True)
def _yarn_link(particles, links, first, t, x, y, z):
    """Row ``t`` of the yarn whose entries start at ``first``: its particles a and b, its link k, the offset b − a
    (dx, dy, dz) [m] and its length [m]."""
    a = particles[first + t]
    b = particles[first + t + 1]
    k = links[first + t + 1]
    dx = x[b] - x[a]
    dy = y[b] - y[a]
    dz = z[b] - z[a]
    return a, b, k, dx, dy, dz, math.sqrt(dx * dx + dy * dy + dz * dz)


@numba.njit(cache=True)
def _naive_yarn(first, end, particles, links, work, inv_h2, x, y, z, inv_mass, rest, compliance, lam):
    """The stretch links of the yarn of entries first … end − 1, solved together: rows (work[0:3] the unit
    directions, work[3] the diagonals, work[4] the right-hand sides, work[5] the couplings), forward elimination,
    back substitution, each particle moved by w·(n_in Δλ_in − n_out Δλ_out). The pivot of a link that closes a
    stretch between two fixed particles is floored at ``PIVOT_FLOOR`` of its diagonal, any other at 1e-12, as
    Loom's; a yarn with a stretch between two fixed particles at least ``TAUT`` of its rest length apart is projected
    link by link instead, as Loom's."""
    m = end - first - 1                               # links; row t is the link into entry first + 1 + t
    if m < 1:
        return
    anchored = inv_mass[particles[first]] == 0.0
    start = particles[first]
    spanned = 0.0
    overstretched = False
    for t in range(m):
        a, b, k, dx, dy, dz, length = _yarn_link(particles, links, first, t, x, y, z)
        alpha = compliance[k] * inv_h2
        work[0, t] = work[1, t] = work[2, t] = work[4, t] = work[5, t] = 0.0
        work[3, t] = 1.0
        if length >= 1e-12 and inv_mass[a] + inv_mass[b] + alpha > 1e-9 * (inv_mass[a] + inv_mass[b] + alpha):
            work[0, t] = dx * (1.0 / length)
            work[1, t] = dy * (1.0 / length)
            work[2, t] = dz * (1.0 / length)
            work[3, t] = inv_mass[a] + inv_mass[b] + alpha
            work[4, t] = rest[k] - length - alpha * lam[k]
            if t > 0:
                work[5, t] = -inv_mass[a] * (work[0, t] * work[0, t - 1] + work[1, t] * work[1, t - 1]
                                             + work[2, t] * work[2, t - 1])
        work[6, t] = 1.0 if anchored and inv_mass[b] == 0.0 else 0.0
        spanned += rest[k]
        if inv_mass[b] == 0.0:
            if anchored and ((x[b] - x[start]) ** 2 + (y[b] - y[start]) ** 2
                             + (z[b] - z[start]) ** 2 >= (TAUT * spanned) ** 2):
                overstretched = True
            anchored = True
            start = b
            spanned = 0.0
    if overstretched:
        for t in range(m):
            a, b, k, dx, dy, dz, length = _yarn_link(particles, links, first, t, x, y, z)
            alpha = compliance[k] * inv_h2
            if length < 1e-12 or inv_mass[a] + inv_mass[b] + alpha == 0.0:
                continue
            dlam = (rest[k] - length - alpha * lam[k]) / (inv_mass[a] + inv_mass[b] + alpha)
            lam[k] += dlam
            s = dlam / length
            x[a] -= inv_mass[a] * s * dx
            y[a] -= inv_mass[a] * s * dy
            z[a] -= inv_mass[a] * s * dz
            x[b] += inv_mass[b] * s * dx
            y[b] += inv_mass[b] * s * dy
            z[b] += inv_mass[b] * s * dz
        return
    work[3, 0] = 1.0 / work[3, 0]
    for t in range(1, m):
        f = work[5, t] * work[3, t - 1]
        floor = PIVOT_FLOOR if work[6, t] != 0.0 else 1e-12
        work[3, t] = 1.0 / max(work[3, t] - f * work[5, t], floor * work[3, t])
        work[4, t] = work[4, t] - f * work[4, t - 1]
    for t in range(m - 1, -1, -1):
        if t < m - 1:
            work[4, t] = (work[4, t] - work[5, t + 1] * work[4, t + 1]) * work[3, t]
        else:
            work[4, t] = work[4, t] * work[3, t]
        lam[links[first + t + 1]] += work[4, t]
    for t in range(m + 1):
        p = particles[first + t]
        gx = gy = gz = 0.0
        if t < m:
            gx = -work[0, t] * work[4, t]
            gy = -work[1, t] * work[4, t]
            gz = -work[2, t] * work[4, t]
        if t > 0:
            gx += work[0, t - 1] * work[4, t - 1]
            gy += work[1, t - 1] * work[4, t - 1]
            gz += work[2, t - 1] * work[4, t - 1]
        x[p] += inv_mass[p] * gx
        y[p] += inv_mass[p] * gy
        z[p] += inv_mass[p] * gz
