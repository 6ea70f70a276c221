"""Vertex Block Descent, the stiffness benchmark's comparison solver (not a Loom model).

Chen, Liu, Yang, Yuksel 2024, "Vertex Block Descent": each substep of h minimises the incremental potential

    G(x) = Σᵢ mᵢ/(2h²)·|xᵢ − yᵢ|² + Σ_links ½·k·(|xᵢ − xⱼ| − l₀)²        (VBD eq. 3, mass-spring energy)

with y the inertial prediction (Loom's predict step leaves x = y), by Gauss–Seidel over a vertex colouring:
vertex i takes one 3×3 Newton step on G with every other vertex fixed (VBD eqs. 5–6),

    Hᵢ·Δxᵢ = fᵢ,   fᵢ = −mᵢ/h²·(xᵢ − yᵢ) − Σ k·(L − l₀)·n,   Hᵢ = mᵢ/h²·I + Σ [k·n nᵀ + k·max(0, 1 − l₀/L)·(I − n nᵀ)]

(the spring Hessian clamped to positive semi-definite, §3.4). ``rho`` > 0 adds the Chebyshev
semi-iterative acceleration of VBD §3.6 (Wang 2015) across the iterations of a substep.

``use_vbd(app, stiffness=…, rho=…)`` swaps XPBD's constraint system for ``solve_vbd`` (``App.replace_system``),
keeping Loom's predict, collision, self-collision and velocity update, so the two solvers run the same scenes
through the same pipeline. Links only: an inextensible link (compliance 0) gets ``stiffness`` [N/m], a compliant
one k = 1/α capped at it; tethers and dihedral bending are not applied (the sphere and table drapes have no
tethers; the pushed sheet and the cape do, so compare those with care).

docs/models.md ("What else was tried") compares it with XPBD's sweeps: a vertex block, like a link, moves a
correction one link per sweep.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from loom.components import Cloth
from loom.engine import App
from loom.systems.shared.model_index import clothes_of
from loom.systems.xpbd.predict import MODEL

STIFFNESS = 1e4
"""Spring constant of an inextensible link [N/m]: on the 64² cotton sheet (0.04 g a particle) the strain it
allows under the weight of the overhang is below 0.01 %, and at 16 substeps k·h²/m ≈ 300. Stiffer is slower
to converge (docs/performance.md, "Moved from docstrings")."""


class VertexBlocks:
    """A cloth's links as VBD reads them: each vertex's incident links (CSR: offsets, neighbour, rest length,
    stiffness), the vertices in colour order with colour offsets (no two vertices of a colour share a link),
    masses and scratch for y and the Chebyshev history."""

    def __init__(self, cloth: Cloth, stiffness: float) -> None:
        n = cloth.particle_count
        comp = cloth.link_compliance
        k = np.minimum(np.where(comp > 0.0, 1.0 / np.maximum(comp, 1e-300), stiffness), stiffness)
        src = np.concatenate([cloth.link_i, cloth.link_j]).astype(np.int64)
        dst = np.concatenate([cloth.link_j, cloth.link_i]).astype(np.int64)
        order = np.argsort(src, kind="stable")
        self.neighbour = dst[order]
        self.rest = np.concatenate([cloth.link_rest, cloth.link_rest])[order]
        self.k = np.concatenate([k, k])[order]
        self.offsets = np.concatenate([[0], np.cumsum(np.bincount(src, minlength=n))]).astype(np.int64)
        colour = _greedy_colours(self.offsets, self.neighbour)
        self.vertices = np.argsort(colour, kind="stable").astype(np.int64)
        self.colour_offsets = np.searchsorted(colour[self.vertices], np.arange(colour.max() + 2)).astype(np.int64)
        self.mass = np.where(cloth.inv_mass > 0.0, 1.0 / np.maximum(cloth.inv_mass, 1e-300), 0.0)
        self.y = np.empty_like(cloth.x)
        self.history = np.empty((2,) + cloth.x.shape)
        self.source = cloth.x


@numba.njit(cache=True)
def _greedy_colours(offsets, neighbour):
    """Smallest colour not used by an earlier neighbour, vertex by vertex (n,) int64."""
    n = offsets.shape[0] - 1
    colour = np.full(n, -1, np.int64)
    taken = np.full(n + 1, -1, np.int64)
    for i in range(n):
        for e in range(offsets[i], offsets[i + 1]):
            if colour[neighbour[e]] >= 0:
                taken[colour[neighbour[e]]] = i
        c = 0
        while taken[c] == i:
            c += 1
        colour[i] = c
    return colour


@numba.njit(cache=True, error_model="numpy")
def vbd_iterate(iterations, inv_h2, rho, x, y, inv_mass, blocks, history):
    """``iterations`` VBD sweeps on x (n, 3) [m] toward the minimum of G (module docstring); y (n, 3) the inertial
    target, blocks = (mass, offsets, neighbour, rest, k, vertices, colour_offsets), history (2, n, 3) scratch for
    the Chebyshev step (rho ≤ 0: none). Vertices of inverse mass 0 (pinned) stay where they are."""
    mass, offsets, neighbour, rest, k, vertices, colour_offsets = blocks
    n = x.shape[0]
    omega = 1.0
    for it in range(iterations):
        if rho > 0.0:
            history[0, :, :] = history[1, :, :]
            history[1, :, :] = x
        for c in range(colour_offsets.shape[0] - 1):
            for v in range(colour_offsets[c], colour_offsets[c + 1]):
                i = vertices[v]
                if inv_mass[i] == 0.0:
                    continue
                mh = mass[i] * inv_h2
                fx = -mh * (x[i, 0] - y[i, 0])
                fy = -mh * (x[i, 1] - y[i, 1])
                fz = -mh * (x[i, 2] - y[i, 2])
                h00 = h11 = h22 = mh
                h01 = h02 = h12 = 0.0
                for e in range(offsets[i], offsets[i + 1]):
                    j = neighbour[e]
                    dx = x[i, 0] - x[j, 0]
                    dy = x[i, 1] - x[j, 1]
                    dz = x[i, 2] - x[j, 2]
                    length = math.sqrt(dx * dx + dy * dy + dz * dz)
                    if length < 1e-12:
                        continue
                    nx = dx / length
                    ny = dy / length
                    nz = dz / length
                    s = k[e] * (length - rest[e])
                    fx -= s * nx
                    fy -= s * ny
                    fz -= s * nz
                    t = max(k[e] * (1.0 - rest[e] / length), 0.0)      # PSD clamp (VBD §3.4)
                    a = k[e] - t
                    h00 += a * nx * nx + t
                    h11 += a * ny * ny + t
                    h22 += a * nz * nz + t
                    h01 += a * nx * ny
                    h02 += a * nx * nz
                    h12 += a * ny * nz
                c00 = h11 * h22 - h12 * h12                               # H⁻¹ by cofactors (H symmetric)
                c01 = h02 * h12 - h01 * h22
                c02 = h01 * h12 - h02 * h11
                det = h00 * c00 + h01 * c01 + h02 * c02
                if det <= 1e-30:
                    continue
                c11 = h00 * h22 - h02 * h02
                c12 = h01 * h02 - h00 * h12
                c22 = h00 * h11 - h01 * h01
                x[i, 0] += (c00 * fx + c01 * fy + c02 * fz) / det
                x[i, 1] += (c01 * fx + c11 * fy + c12 * fz) / det
                x[i, 2] += (c02 * fx + c12 * fy + c22 * fz) / det
        if rho > 0.0 and it > 0:                                          # Chebyshev (VBD §3.6)
            omega = 2.0 / (2.0 - rho * rho) if it == 1 else 4.0 / (4.0 - rho * rho * omega)
            for p in range(n):
                if inv_mass[p] > 0.0:
                    for d in range(3):
                        x[p, d] = omega * (x[p, d] - history[0, p, d]) + history[0, p, d]


class VBDSolver:
    """Resource: ``VertexBlocks`` per cloth (rebuilt when the cloth replaces x), the stiffness and rho."""

    def __init__(self, stiffness: float = STIFFNESS, rho: float = 0.0) -> None:
        if not (math.isfinite(stiffness) and stiffness > 0.0):
            raise ValueError(f"VBDSolver.stiffness = {stiffness!r}: must be a positive number [N/m]")
        if not (math.isfinite(rho) and 0.0 <= rho < 1.0):
            raise ValueError(f"VBDSolver.rho = {rho!r}: must be in [0, 1) (0: no Chebyshev acceleration)")
        self.stiffness = stiffness
        self.rho = rho
        self.blocks: dict[int, VertexBlocks] = {}

    def of(self, cloth: Cloth) -> VertexBlocks:
        blocks = self.blocks.get(id(cloth))
        if blocks is None or blocks.source is not cloth.x:
            blocks = self.blocks[id(cloth)] = VertexBlocks(cloth, self.stiffness)
        return blocks


def solve_vbd(app: App, h: float) -> None:
    """XPBD's place in the substep (ClothSet.CONSTRAIN): ``cloth.iterations`` VBD sweeps per xpbd cloth."""
    solver = app.resource(VBDSolver)
    for cloth in clothes_of(app, MODEL):
        b = solver.of(cloth)
        b.y[:] = cloth.x                                  # predict left x at the inertial target y
        vbd_iterate(cloth.iterations, 1.0 / (h * h), solver.rho, cloth.x, b.y, cloth.inv_mass,
                    (b.mass, b.offsets, b.neighbour, b.rest, b.k, b.vertices, b.colour_offsets), b.history)


def use_vbd(app: App, *, stiffness: float = STIFFNESS, rho: float = 0.0) -> App:
    """Run ``app``'s xpbd cloths with VBD instead of XPBD's constraint solve (the rest of the pipeline kept)."""
    app.insert_resource(VBDSolver(stiffness, rho))
    return app.replace_system("solve_constraints", solve_vbd)
