"""XPBD's per-step kernels as NumPy stand-ins, run only while a compile worker compiles the kernels.

On an empty numba cache with a compile worker at work (``loom.launch.compile_ahead``: ``run_app``'s kernel list, or
the worker an App serves itself on its first step), ``loom.launch.cold_kernels`` binds the Python call sites of
these kernels to the functions here and rebinds them to the compiled kernels at a step boundary once they are ready.
Without a worker (tests, one core, ``LOOM_COMPILE_AHEAD=0``, ``LOOM_COLD_PYTHON=0``) nothing here runs.

The prediction and the velocity update are the kernels' own formulas in array form (Macklin et al. 2016,
Algorithm 1 lines 3–4 and 15; Fuhrmann et al. 2003 eqs. 12–14), element for element the same operations, so they
give the kernels' numbers.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from loom.launch.cold_kernels import called_from, python_twin
from loom.systems.shared import cold_limits  # noqa: F401  (the deformation limit's stand-in registered)
from loom.systems.shared.cold_held import PyHeld, value_of
from loom.systems.shared.held import hold
from loom.systems.xpbd import constraints, predict


def predict_numpy(inv_mass: np.ndarray, force: np.ndarray, gx: float, gy: float, gz: float, h: float,
                  x: np.ndarray, v: np.ndarray, x_prev: np.ndarray) -> None:
    """``predict._predict`` in NumPy: v += h·(g + w·f) for particles of inverse mass w > 0 [m/s]; x_prev ← x;
    x += h·v [m] (symplectic Euler)."""
    free = inv_mass > 0.0
    if free.all():
        v += h * (np.array((gx, gy, gz)) + inv_mass[:, None] * force)
    else:
        v[free] += h * (np.array((gx, gy, gz)) + inv_mass[free, None] * force[free])
    x_prev[...] = x
    x += h * v


def update_numpy(x: np.ndarray, x_prev: np.ndarray, inv_h: float, decay: float, v: np.ndarray) -> None:
    """``predict._update`` in NumPy: v = (x − x_prev)·(1/h)·decay [m/s]."""
    np.multiply((x - x_prev) * inv_h, decay, out=v)


python_twin(predict._predict, per_step=True, twin=predict_numpy)
python_twin(predict._update, per_step=True, twin=update_numpy)
called_from(predict.__name__, predict._predict, predict._update)


SWEEPS = 2
"""Jacobi sweeps [-] of ``solve_numpy`` per iteration of the kernel it stands in for: a Jacobi sweep moves a
correction one link, as a Gauss–Seidel colour does, but each particle takes only the average of its links'
corrections, so it converges more slowly."""
SETTLE_SWEEPS = 1
"""Jacobi sweeps [-] of ``settle_numpy`` (the kernel's one pass of every yarn after the collisions)."""
OMEGA = 1.5
"""Over-relaxation [-] of the averaged Jacobi corrections (Macklin et al. 2014, "Unified particle physics", §4.2:
1 ≤ ω ≤ 2)."""


_XYZ = np.arange(3)
_scatter: dict[int, tuple] = {}          # id(link_i) → (link_i, link_j, flat scatter index): kept with the arrays


def _flat(i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """The (2c × 3,) index into a flattened (n, 3) array of each link's two particles' coordinates, made once per
    link table (one ``np.bincount`` then scatters every correction)."""
    entry = _scatter.get(id(i))
    if entry is None or entry[0] is not i or entry[1] is not j or entry[2].shape[0] != 6 * i.shape[0]:
        if len(_scatter) > 16:
            _scatter.clear()
        flat = np.concatenate((3 * i.astype(np.int64)[:, None] + _XYZ, 3 * j.astype(np.int64)[:, None] + _XYZ))
        entry = _scatter[id(i)] = (i, j, flat.ravel())
    return entry[2]


_statics: dict[tuple, tuple] = {}        # (ids of the links, compliances and masses, inv_h2) → ``_static``'s tuple


def _static(i: np.ndarray, j: np.ndarray, compliance: np.ndarray, inv_h2: float, inv_mass: np.ndarray) -> tuple:
    """What ``_jacobi`` reads of the links i–j that stays the same from call to call while the inverse masses do:
    (α̃ = compliance·inv_h2, 1/(w_i + w_j + α̃) (0 where both are fixed), ``OMEGA`` over each particle's count of
    links, the scatter's signed weights); made again when the inverse masses changed (a pin)."""
    key = (id(i), id(j), id(compliance), inv_h2, id(inv_mass))
    entry = _statics.get(key)
    if entry is not None and entry[0] is i and np.array_equal(entry[1], inv_mass):
        return entry[2]
    if len(_statics) > 16:
        _statics.clear()
    n = inv_mass.shape[0]
    alpha = compliance * inv_h2
    wi, wj = inv_mass[i], inv_mass[j]
    wsum = wi + wj
    live = wsum > 0.0
    inv_den = np.where(live, 1.0 / np.where(live, wsum + alpha, 1.0), 0.0)
    count = np.bincount(i, weights=wi > 0.0, minlength=n) + np.bincount(j, weights=wj > 0.0, minlength=n)
    scale = (OMEGA / np.maximum(count, 1.0))[:, None]
    weights = np.concatenate((wi, -wj))[:, None]
    statics = (alpha, inv_den, scale, weights)
    _statics[key] = (i, inv_mass.copy(), statics)
    return statics


def _jacobi(sweeps: int, i: np.ndarray, j: np.ndarray, rest: np.ndarray, compliance: np.ndarray, inv_h2: float,
            lam: np.ndarray, inv_mass: np.ndarray, x: np.ndarray, contact: np.ndarray | None = None) -> None:
    """``sweeps`` Jacobi XPBD sweeps over the links i–j (Macklin et al. 2016 eq. 18 for every link at once:
    Δλ = (l₀ − l − α̃λ)/(w_i + w_j + α̃), α̃ = compliance/h², x_i += w_i n Δλ, x_j −= w_j n Δλ, Fuhrmann et al. 2003
    eqs. 6–9), each particle moved by ``OMEGA`` × the mean of its links' corrections; a particle with a contact normal
    (``contact`` columns 0–2; None: no contact) keeps none of its correction into the surface. Writes x (n, 3) [m]
    and lam (c,)."""
    n = x.shape[0]
    flat = _flat(i, j)
    alpha, inv_den, scale, weights = _static(i, j, compliance, inv_h2, inv_mass)
    normal = None if contact is None else contact[:, :3]
    pushed = np.zeros(0, np.int64) if normal is None else np.flatnonzero((normal != 0.0).any(axis=1))
    for _ in range(sweeps):
        d = x[i] - x[j]
        length = np.sqrt(np.einsum("ij,ij->i", d, d))
        dlam = (rest - length - alpha * lam) * inv_den
        lam += dlam
        d *= (dlam / np.maximum(length, 1e-12))[:, None]
        dx = np.bincount(flat, (np.concatenate((d, d)) * weights).ravel(), 3 * n).reshape(n, 3)
        dx *= scale
        if pushed.size:
            into = np.einsum("ij,ij->i", dx[pushed], normal[pushed])
            dx[pushed] -= np.minimum(into, 0.0)[:, None] * normal[pushed]
        x += dx


def _tethers(a) -> None:
    """The kernel's tether pass (Kim et al. 2012, one-sided: a free particle farther from an anchor than its tether
    is put back on the tether's sphere), exactly: each particle's tethers in their order, all particles at once
    (they only move free particles toward fixed anchors, so particles do not interact)."""
    offsets, anchor, length, x = a.tether_offsets, a.tether_anchor, a.tether_length, a.x
    if anchor.shape[0] == 0:
        return
    n = x.shape[0]
    counts = np.diff(offsets[: n + 1])
    free = np.flatnonzero((a.inv_mass != 0.0) & (counts > 0))
    for slot in range(int(counts.max(initial=0))):
        p = free if slot == 0 else free[counts[free] > slot]
        t = offsets[p] + slot
        q = anchor[t]
        d = x[p] - x[q]
        dist = np.sqrt(np.einsum("ij,ij->i", d, d))
        far = dist > length[t]
        p, q, d = p[far], q[far], d[far]
        x[p] = x[q] + d * (length[t][far] / dist[far])[:, None]


def solve_numpy(iterations: int, inv_h2: float, *rest: Any) -> None:
    """Stand-in of ``constraints._solve_serial`` while it compiles: ``iterations`` × ``SWEEPS`` Jacobi sweeps over
    every link (the yarns' stretch links among them, solved as links, not as lines), then the tethers as the kernel
    runs them (every second iteration ending with the last). Not the kernel's algorithm: no dihedral bend quads
    (``bend_model="dihedral"``: the distance bend links only), no heavy-yarn stiffness; the multipliers restart from
    0 as in the kernel. ``rest``: the kernel's other arguments, its held ``ConstraintArrays`` last. Writes x (n, 3)
    [m] and the link multipliers."""
    a = value_of(rest[-1])
    a.link_lambda[:] = 0.0
    a.bend_lambda[:] = 0.0
    for it in range(iterations):
        _jacobi(SWEEPS, a.link_i, a.link_j, a.link_rest, a.link_compliance, inv_h2, a.link_lambda, a.inv_mass, a.x)
        if (iterations - 1 - it) % 2 == 0:
            _tethers(a)


def settle_numpy(inv_h2: float, held: PyHeld) -> None:
    """Stand-in of ``constraints._yarns_serial`` (after the collisions) while it compiles: ``SETTLE_SWEEPS`` Jacobi
    sweeps over the stretch links (the yarns' links), no particle moved into the surface it touches (its contact
    normal); then ``Cloth.contact`` column 4 back to 0, as the kernel does."""
    a = value_of(held)
    links, i, j, rest, compliance = _yarn_links(a)
    if links.size:
        lam = a.link_lambda[links]
        _jacobi(SETTLE_SWEEPS, i, j, rest, compliance, inv_h2, lam, a.inv_mass, a.x, a.contact)
        a.link_lambda[links] = lam
    a.contact[:, 4] = 0.0


_yarns: dict[int, tuple] = {}            # id(yarn_links) → (yarn_links, links, their i, j, rest, compliance)


def _yarn_links(a: Any) -> tuple:
    """The yarns' links of the held ``ConstraintArrays`` a and their i, j, rest lengths and compliances, made once per
    yarn table (the arrays keep their identity from call to call, as ``_jacobi``'s caches need)."""
    entry = _yarns.get(id(a.yarn_links))
    if entry is None or entry[0] is not a.yarn_links or entry[2] is not a.link_i \
            or entry[6] is not a.link_compliance:
        if len(_yarns) > 16:
            _yarns.clear()
        links = a.yarn_links[a.yarn_links >= 0]
        entry = _yarns[id(a.yarn_links)] = (a.yarn_links, links, a.link_i, a.link_i[links], a.link_j[links],
                                            a.link_rest[links], a.link_compliance, a.link_compliance[links])
    return entry[1], entry[3], entry[4], entry[5], entry[7]


python_twin(constraints._solve_serial, per_step=True, twin=solve_numpy)
python_twin(constraints._yarns_serial, per_step=True, twin=settle_numpy)
called_from(constraints.__name__, hold, constraints._solve_serial, constraints._yarns_serial)
