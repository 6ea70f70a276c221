"""Distance limits: pull each linked particle pair back to within [lo, hi] of its length, mass-weighted.

Shared by two models, owned by neither (a system never imports another system):
- Verlet cloth (Fuhrmann et al. 2003 §3): structural and shear links kept within
  [d_min, d_max] × rest length (eq. 5), bending pairs no shorter than bend_min × rest;
- mass-spring cloth (Provot 1995): the deformation limit, a spring longer than (1 + τ_c) × rest
  is shortened to that length; lo = 0 leaves compression to the springs.

One pass visits every link in colour order (Gauss–Seidel). A link out of its bounds is set to the
violated bound along the line through its particles, each end moved in proportion to its inverse
mass (eqs. 6–9), so the centre of mass stays put. A particle of inverse mass 0 (Fuhrmann's infinite
mass, eq. 11: pinned or grabbed) is not moved — Provot's fixed–free case — and a link between two
such particles is skipped. Passes repeat until one finds every link within bounds (to a relative
``SLACK`` of 1e-12) or ``max_passes`` have run.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from loom.components import Cloth

MIN_LENGTH = 1e-12
"""Links shorter than this [m] have no direction and are left alone."""
SLACK = 1e-12
"""Relative tolerance [-]: a link within [lo·(1 − SLACK), hi·(1 + SLACK)] counts as within bounds.
Exact comparisons made the passes chase rounding: on a hanging 16×16 mass-spring sheet with a
10 % limit, links 2e-15 over kept every one of 1000 passes busy and no pass ever came out clean."""
_HI = 1.0 + SLACK
_LO = 1.0 - SLACK


def link_bounds(cloth: Cloth, lo_by_kind: tuple[float, float, float],
                hi_by_kind: tuple[float, float, float]) -> tuple[np.ndarray, np.ndarray]:
    """Return (lo, hi) [m], each (c,) in colour order: rest length × the factor of the link's kind.

    ``lo_by_kind`` and ``hi_by_kind`` hold one factor [-] per kind (stretch, shear, bend); 0 turns a
    lower bound off and inf an upper one. Call once per cloth and settings, never per substep."""
    kinds = cloth.link_kind[cloth.link_order]
    lo = np.ascontiguousarray(np.asarray(lo_by_kind, np.float64)[kinds] * cloth.link_rest)
    hi = np.ascontiguousarray(np.asarray(hi_by_kind, np.float64)[kinds] * cloth.link_rest)   # inf stays inf
    return lo, hi


# --- kernels: arrays in, arrays out -------------------------------------------------------------
@numba.njit(cache=True)
def relax_distances(max_passes, link_i, link_j, link_lo, link_hi, inv_mass, x):
    """Run up to ``max_passes`` passes that put every link's length within [lo, hi]; return the passes that moved.

    link_i, link_j (c,) int32, colour order; link_lo, link_hi (c,) [m] (lo 0: no lower bound, hi inf:
    no upper bound); inv_mass (n,) [1/kg]; writes x (n, 3) [m] in place.
    For a violated link of length l and target bound b, with d = x_a − x_b (Fuhrmann 2003 eq. 5,
    u = d̂·(l − b)): x_a −= w_a/(w_a + w_b)·u, x_b += w_b/(w_a + w_b)·u (eqs. 6–9 in inverse masses).
    A pass that moves nothing ends the loop: the returned count r < max_passes means every link
    was within its bounds when the kernel returned; r == max_passes means it may not be."""
    for sweep in range(max_passes):
        moved = 0
        for k in range(link_i.shape[0]):
            a = link_i[k]
            b = link_j[k]
            wa = inv_mass[a]
            wb = inv_mass[b]
            w = wa + wb
            if w == 0.0:
                continue
            dx = x[a, 0] - x[b, 0]
            dy = x[a, 1] - x[b, 1]
            dz = x[a, 2] - x[b, 2]
            length = math.sqrt(dx * dx + dy * dy + dz * dz)
            if length > link_hi[k] * _HI:
                target = link_hi[k]
            elif length < link_lo[k] * _LO:
                target = link_lo[k]
            else:
                continue
            if length < MIN_LENGTH:
                continue
            moved += 1
            s = (target - length) / (w * length)
            x[a, 0] += wa * s * dx
            x[a, 1] += wa * s * dy
            x[a, 2] += wa * s * dz
            x[b, 0] -= wb * s * dx
            x[b, 1] -= wb * s * dy
            x[b, 2] -= wb * s * dz
        if moved == 0:
            return sweep
    return max_passes
