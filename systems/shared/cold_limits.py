"""Provot's deformation limit as a NumPy stand-in, run only while a compile worker compiles its kernel.

On an empty numba cache with a compile worker at work (``loom.launch.compile_ahead``), ``loom.launch.cold_kernels``
binds ``DeformationLimit.apply``'s call of ``distance_limits._limit_substep`` (and of ``hold``, whose ``PyHeld`` it
reads) to the functions here, and rebinds the compiled kernel at a step boundary once it is ready. Without a
worker (tests, one core, ``LOOM_COMPILE_AHEAD=0``, ``LOOM_COLD_PYTHON=0``) nothing here runs.

``limit_numpy`` is not the kernel's algorithm: the kernel corrects one over-long link at a time from a work queue
until none is over its bound (Provot 1995, with over-relaxation and the anchors' reach); the stand-in shortens every
over-long link at once, each particle moved by the mean of its over-long links' corrections (Fuhrmann et al. 2003
eqs. 6–9: in proportion to the inverse masses), ``PASSES`` times at most. It reports what is left over, as the
kernel does, and leaves the anchors' relaxation (anchors farther apart than the limit allows) out.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from loom.launch.cold_kernels import called_from, python_twin
from loom.systems.shared import distance_limits
from loom.systems.shared.cold_held import value_of
from loom.systems.shared.held import hold

_XYZ = np.arange(3)
PASSES = 6
"""Most passes [-] of ``limit_numpy`` over the over-long links per call."""


def limit_numpy(held: Any, max_visits: int, relaxed_visits: int, inv_mass: np.ndarray, x: np.ndarray,
                contact: np.ndarray) -> tuple[bool, int, int, float, float]:
    """Stand-in of ``distance_limits._limit_substep`` while it compiles (module docstring): returns (anchors changed,
    link visits, links left over their bound, their largest excess l/hi − 1 [-], 1.0); writes x (n, 3) [m]; a
    particle with a contact normal (``contact`` columns 0–2) keeps none of its move into the surface. When the
    particles of inverse mass 0 are not the tables' anchors it returns at once, x untouched, as the kernel does."""
    t = value_of(held)
    fixed = inv_mass == 0.0
    if (fixed != t.anchor_mask).any():
        t.anchor_mask[:] = fixed
        return True, 0, 0, 0.0, 1.0
    if t.relaxed[0]:
        t.link_scale[:] = 1.0
        t.relaxed[0] = False
    i, j = t.link_i, t.link_j
    n = x.shape[0]
    hi, target = t.link_hi * t.link_scale, t.link_target * t.link_scale
    normal = contact[:, :3]
    pushed = np.flatnonzero((normal != 0.0).any(axis=1))
    visits = 0
    over = np.zeros(0, np.int64)
    length = np.zeros(0)
    for _ in range(PASSES):
        d = x[i] - x[j]
        length = np.sqrt(np.einsum("ij,ij->i", d, d))
        visits += i.shape[0]
        over = np.flatnonzero(length > hi)
        if over.size == 0:
            break
        a, b = i[over], j[over]
        wa, wb = inv_mass[a], inv_mass[b]
        w = wa + wb
        move = np.where(w > 0.0, (length[over] - target[over]) / np.where(w > 0.0, w * length[over], 1.0), 0.0)
        step = d[over] * move[:, None]
        ends = np.concatenate((a, b))
        count = np.bincount(ends, weights=np.concatenate((wa, wb)) > 0.0, minlength=n)
        flat = (3 * ends[:, None] + _XYZ).ravel()         # one scatter of both ends' three coordinates
        dx = np.bincount(flat, (np.concatenate((-wa, wb))[:, None] * np.concatenate((step, step))).ravel(),
                         3 * n).reshape(n, 3)
        dx /= np.maximum(count, 1.0)[:, None]
        if pushed.size:
            into = np.einsum("ij,ij->i", dx[pushed], normal[pushed])
            dx[pushed] -= np.minimum(into, 0.0)[:, None] * normal[pushed]
        x += dx
    else:
        d = x[i] - x[j]
        length = np.sqrt(np.einsum("ij,ij->i", d, d))
        over = np.flatnonzero(length > hi)
    excess = float((length[over] / hi[over]).max() - 1.0) if over.size else 0.0
    return False, visits, int(over.size), excess, 1.0


python_twin(distance_limits._limit_substep, per_step=True, twin=limit_numpy)
called_from(distance_limits.__name__, hold, distance_limits._limit_substep)
