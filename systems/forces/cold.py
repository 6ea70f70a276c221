"""The wind's per-step kernel as a NumPy stand-in, run only while a compile worker compiles the kernel.

On an empty numba cache with a compile worker at work (``loom.launch.compile_ahead``), ``loom.launch.cold_kernels``
binds the wind system's call of ``wind._aero_forces`` (and of ``hold``, whose stand-in ``PyHeld`` it reads) to the
functions here, and rebinds the compiled kernel at a step boundary once it is ready. Without a worker (tests, one
core, ``LOOM_COMPILE_AHEAD=0``, ``LOOM_COLD_PYTHON=0``) nothing here runs.

``aero_numpy`` is the kernel's model in array form (``wind._aero_forces``: drag along each triangle's normal,
Baraff & Witkin 1998 §4.4; lift across the flow; Provot 1995's viscous term; a third per corner, Fuhrmann et al.
2003 eq. 1; the stability cap), every triangle at once; the air is the same field (``wind._air_at``: winds with
gusts and turbulence, zones, blower cones), its waves by ``np.sin`` where the kernel takes a 15th-order series
(within 1e-6 of it), and the triangles' forces summed in another order: the forces agree to rounding, not to the bit.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from loom.launch.cold_kernels import called_from, python_twin
from loom.systems.forces import wind
from loom.systems.shared.cold_held import PyHeld, value_of
from loom.systems.shared.held import hold


def _zone_weights(zone: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``wind._zone_weight`` at points p (n, 3) [m] for one wind's zone row: 1 deeper than the edge inside,
    smoothstep(depth/edge) across it, 0 outside."""
    d = p - zone[1:4]
    if zone[0] == 2.0:
        depth = zone[4] - np.sqrt((d * d).sum(axis=1))
    else:
        local = d @ zone[8:17].reshape(3, 3)                        # Rᵀ·d per point
        depth = np.min(zone[4:7] - np.abs(local), axis=1)
    s = np.clip(np.where(depth > 0.0, depth, 0.0) / zone[7], 0.0, 1.0) if zone[7] > 0.0 else \
        (depth > 0.0).astype(float)
    return np.where(depth > 0.0, s * s * (3.0 - 2.0 * s), 0.0)


def air_numpy(p: np.ndarray, base: np.ndarray, amp: np.ndarray, modes: np.ndarray, cones: np.ndarray,
              zones: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray]:
    """The air velocity (n, 3) [m/s] at points p (n, 3) [m] and time t [s], and each point's wind coverage (n,) [-]
    (``wind._air_rows``)."""
    n = p.shape[0]
    u = np.zeros((n, 3))
    everywhere = bool((zones[:, 0] == 0.0).any()) if zones.shape[0] else False
    cover = np.ones(n) if everywhere else np.zeros(n)
    for w in range(base.shape[0]):
        zoned = zones[w, 0] != 0.0
        weight = _zone_weights(zones[w], p) if zoned else np.ones(n)
        if zoned and not everywhere:
            cover = np.minimum(1.0, cover + weight)
        u += base[w] * weight[:, None]
        if amp[w] != 0.0:
            m = modes[w]
            phase = p @ m[:, 0:3].T - m[:, 3] * t + m[:, 4]            # (n, K)
            s = np.sin(phase) * (amp[w] * m[:, 8]) * weight[:, None]
            u += s @ m[:, 5:8]
    if cones.shape[0] > 0:
        cover[:] = 1.0
        for b in range(cones.shape[0]):
            axis = cones[b, 3:6]
            r = p - cones[b, 0:3]
            along = r @ axis
            off = r - along[:, None] * axis
            rim = cones[b, 7] + along * cones[b, 8]
            q = (off * off).sum(axis=1) / np.where(along > 0.0, rim * rim, 1.0)
            inside = (along > 0.0) & (q < 1.0)
            ratio = cones[b, 7] / np.where(inside, rim, 1.0)
            speed = np.where(inside, cones[b, 6] * ratio * ratio * (1.0 - q) ** 2, 0.0)
            u += speed[:, None] * axis
    return u, cover


def aero_numpy(held: PyHeld, base: np.ndarray, amp: np.ndarray, modes: np.ndarray, cones: np.ndarray,
               zones: np.ndarray, t: float, rho: float, cd: float, cl: float, cvi: float, dt: float) -> None:
    """Stand-in of ``wind._aero_forces`` while it compiles (module docstring): adds each triangle's drag, lift and
    viscous force, a third per corner, to the cloth's ``force`` (n, 3) [N], each particle's share scaled by
    min(1, m/(rate·dt)); writes the kernel's scratch ``acc`` [N] and ``rate`` [kg/s] with their meaning."""
    a = value_of(held)
    x, v, tri = a.x, a.v, a.triangles
    n = x.shape[0]
    air, coverage = air_numpy(x, base, amp, modes, cones, zones, t)
    third = 1.0 / 3.0
    cover = coverage[tri].sum(axis=1) / 3.0
    e1 = x[tri[:, 1]] - x[tri[:, 0]]
    e2 = x[tri[:, 2]] - x[tri[:, 0]]
    normal = np.cross(e1, e2)
    twice = np.sqrt((normal * normal).sum(axis=1))
    ok = (cover != 0.0) & (twice >= 1e-18)
    area = np.where(ok, 0.5 * twice, 0.0)
    normal /= np.where(ok, twice, 1.0)[:, None]
    rel = (air[tri].sum(axis=1) - v[tri].sum(axis=1)) * third
    speed = np.sqrt((rel * rel).sum(axis=1))
    un = (normal * rel).sum(axis=1)
    f = ((0.5 * rho * cd * speed + cvi) * area * un)[:, None] * normal
    if cl > 0.0:
        moving = speed > 0.0
        lift = np.where(moving, 0.5 * rho * cl * area * un, 0.0)
        across = un / np.where(moving, speed, 1.0)
        f += lift[:, None] * (speed[:, None] * normal - across[:, None] * rel)
    f *= cover[:, None]
    k = area * third * (rho * (cd + cl) * speed + cvi) * cover
    corners = tri.reshape(-1)
    a.acc[:] = 0.0
    for c in range(3):
        a.acc[:, c] = np.bincount(corners, np.repeat(f[:, c] * third, 3), n)
    a.rate[:] = np.bincount(corners, np.repeat(k, 3), n)
    over = a.rate * dt > a.mass
    scale = np.where(over, a.mass / np.where(over, a.rate * dt, 1.0), 1.0)
    force = a.force
    force += scale[:, None] * a.acc


python_twin(wind._aero_forces, per_step=True, twin=aero_numpy)
called_from(wind.__name__, hold, wind._aero_forces)
