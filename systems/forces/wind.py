"""Wind: aerodynamic forces on every cloth triangle from the air of Wind and Blower entities.

Once per step (PRE_STEP, ``ClothSet.FORCES``) each triangle of each cloth gets a force from its
velocity relative to the air, added to the cloth's ``force`` accumulator [N] (every model reads it;
``clear_forces`` zeroes it after the step). For a triangle of current area A and unit normal n
(counter-clockwise front), centroid c and mean particle velocity v̄:

    u_rel = u(c, t) − v̄,   cos θ = n·û_rel  (θ between the normal and the relative flow)
    drag     F_D = ½·ρ·C_D·A·|u_rel|·(n·u_rel)·n            = ½ρC_D·A·|u_rel|²·cos θ · n
    lift     F_L = ½·ρ·C_L·A·(n·u_rel)·(|u_rel|·n − (n·u_rel)·û_rel)
                                                           = ½ρC_L·A·|u_rel|²·cos θ·sin θ · l̂
    viscous  F_V = C_vi·A·[n·(u − v̄)]·n

- F_D is the pressure force of a flat plate in a flow, along the normal: ½ρC_D·A·U² on a plate
  facing the wind, zero edge-on. With u = 0 it is air drag that "opposes velocities along the
  triangle's normal direction" (Baraff & Witkin 1998 §4.4, formulated per triangle as there).
- F_L acts across the relative flow, in the plane of n and u_rel (l̂ ⊥ u_rel), zero face-on and
  edge-on and largest at 45°: the sideways push that makes a flag flutter.
- F_V is Provot 1995's viscous fluid force Fvi = Cvi·[n·(u_fluid − v)]·n ("Viscous fluid (wind)"),
  taken per triangle and per unit area (``Wind.viscosity`` [N·s/m³]) so it does not depend on the
  mesh resolution. Provot applies it per particle with the particle normal; per triangle the
  normal is exact and the force distributes like the quadratic terms.
Each triangle's force goes a third to each corner (its mass is a third per corner: Fuhrmann 2003
eq. 1). Forces are evaluated at the start of the step and held over dt, an explicit scheme: a
light cloth in a strong wind would overshoot (a 0.06 kg/m² silk at 10 m/s relaxes at ~240/s,
4 per step of 1/60 s). So each particle's wind force is scaled by min(1, m / (k·dt)), k = Σ over
its triangles of A/3·(ρ·(C_D + C_L)·|u_rel| + C_vi) [kg/s], a bound on ∂F/∂v: the wind can then
at most stop the particle's motion relative to the air within one step, never reverse it. It is
inactive whenever k·dt <= m (a 1 m² sheet of 1 kg/m² in a 10 m/s wind: k·dt/m = 0.2).

The air velocity u(p, t) is the sum of every active Wind's
``velocity·(1 + gust·s(t)) + turbulence·|velocity|·w(p, t)`` and every active Blower's cone
(``loom.components.wind``). s and w are sums of sines whose frequencies, wave vectors, directions and
phases are drawn once from ``numpy.random.default_rng(seed)`` (no global random state): the same
seed and simulated time give the same air, bit for bit, on every run. |s| <= 1 and |w| <= 1.
Several Winds add their velocities; the aerodynamic coefficients and air density of the first
active Wind (lowest entity id) apply, Wind's defaults when only Blowers blow.

Wind zones: a Wind with a ``region`` (``WindBox`` or ``WindSphere``) adds weight(p)·u_w(p, t), the weight 1
deeper than the region's ``edge`` inside it, smoothstep(depth/edge) across the edge, 0 outside. Each particle
also gets a coverage c = 1 when any global Wind (no region) or Blower is active, else min(1, Σ weights); each
triangle's forces and stability rate are scaled by its corners' mean coverage, and a triangle with coverage 0
is skipped. So a cloth outside every zone feels nothing — not even still-air drag — exactly as with no Wind
at all, and without zones every weight is 1 (x·1 is exact): the forces are those of the zone-free model, bit for
bit. The weights are evaluated per particle inside the kernels; each Wind's zone is packed into one row of 17
floats (``_pack``).
"""
from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from typing import NamedTuple

import numba
import numpy as np
from numba import prange

from loom.components import Cloth
from loom.components.wind import Blower, Wind, WindBox, WindSphere
from loom.engine import App, Stage
from loom.engine.persist import persistent
from loom.systems.shared.batch import Batch, batchable, revisions
from loom.systems.shared.held import Held, hold
from loom.systems.shared.model_index import forget_on_despawn
from loom.systems.sets import ClothSet

GUST_MODES = 4
"""Sines in the gust signal s(t), periods 0.5 … 2 × gust_period."""
TURBULENCE_MODES = 8
"""Travelling waves in the turbulence field w(p, t), wavelengths 0.5 … 3 m."""
_COEFFICIENTS = Wind(velocity=(0.0, 0.0, 0.0))
"""Aerodynamic defaults used when only Blowers blow."""
AIR_ROWS = 8
"""Rows of the air scratch: x, y, z, ux, uy, uz, coverage, zone weight."""
ZONE_COLUMNS = 17
"""Floats per wind zone: kind (0 none, 1 box, 2 sphere), centre (3), half-size (3; a sphere: radius, 0, 0),
edge, box-to-world rotation (9, row-major)."""


class WindPlugin:
    """Aerodynamic forces from Wind and Blower entities, once per step in ClothSet.FORCES."""

    def build(self, app: App) -> None:
        app.insert_resource(WindScratch(), replace=False)
        forget_on_despawn(app, WindScratch)
        app.add_system(apply_wind, Stage.PRE_STEP, in_set=ClothSet.FORCES)


@persistent
class AeroArrays(NamedTuple):
    """One cloth as the wind kernel reads it, held (``loom.systems.shared.held``): references to the cloth's
    arrays, no copies, and the kernel's own scratch."""

    triangles: np.ndarray
    """(t, 3) int32, counter-clockwise from the front."""
    x: np.ndarray
    """Positions, (n, 3) [m]."""
    v: np.ndarray
    """Velocities, (n, 3) [m/s]."""
    mass: np.ndarray
    """(n,) [kg]."""
    force: np.ndarray
    """The cloth's force accumulator, (n, 3) [N]: added to."""
    acc: np.ndarray
    """Scratch: each particle's wind force before the stability cap, (n, 3) [N]."""
    rate: np.ndarray
    """Scratch: each particle's bound on ∂F/∂v, (n,) [kg/s]."""
    air: np.ndarray
    """Scratch (8, n): the particles' x, y, z [m], the air velocity there [m/s], their wind coverage [-] and
    one zone weight [-] (see the module docstring)."""


@persistent
class WindScratch:
    """Each cloth's held ``AeroArrays`` (its arrays and the wind kernel's accumulators), keyed by entity.

    Holds nothing from one step to the next, so snapshots save it empty (held structs and typed lists do
    not pickle); a loaded world rebuilds it at its first step."""

    def __init__(self) -> None:
        self.by_entity: dict[int, tuple[Cloth, int, np.ndarray, Held]] = {}
        self.batch = Batch()
        self.packed: tuple[np.ndarray, ...] | None = None

    def get(self, entity: int, cloth: Cloth) -> Held:
        """``entity``'s held ``AeroArrays``, rebuilt with new accumulators when its cloth has replaced an array (its
        ``revision``; after a snapshot load, which restores the revision with new arrays, ``x``'s identity)."""
        entry = self.by_entity.get(entity)
        if entry is None or entry[0] is not cloth or entry[1] != cloth.revision or entry[2] is not cloth.x:
            n = cloth.particle_count
            arrays = _hold_call(AeroArrays(cloth.triangles, cloth.x, cloth.v, cloth.mass, cloth.force,
                                     np.zeros((n, 3)), np.zeros(n), np.zeros((AIR_ROWS, n))))
            entry = self.by_entity[entity] = (cloth, cloth.revision, cloth.x, arrays)
        return entry[3]

    def __getstate__(self) -> dict:
        return {"by_entity": {}, "batch": Batch(), "packed": None}

    def forget(self, entity: int) -> None:
        """Drop a despawned entity's accumulators."""
        self.by_entity.pop(entity, None)


# --- systems ------------------------------------------------------------------------------------
def apply_wind(app: App, dt: float) -> None:
    """Add every cloth's aerodynamic forces for this step of dt [s] to ``cloth.force`` [N]."""
    winds = [w for _, w in app.query(Wind) if w.active]
    blowers = [b for _, b in app.query(Blower) if b.active]
    if not winds and not blowers:
        return
    scratch = app.init_resource(WindScratch)
    t = app.clock.time
    base, amp, modes, cones, zones = scratch.packed = _pack(winds, blowers, t, scratch.packed)
    first = winds[0] if winds else _COEFFICIENTS
    clothes = [(entity, cloth) for entity, cloth in app.query(Cloth) if cloth.triangles.shape[0] > 0]
    coefficients = (first.air_density, first.drag_coefficient, first.lift_coefficient, first.viscosity, dt)
    if batchable([c for _, c in clothes], heavy=True, threads=app.step_threads):   # many cloths: one call, one a thread
        key = (tuple(e for e, _ in clothes), revisions(c for _, c in clothes))
        (batch,) = scratch.batch.update(key, lambda: [(scratch.get(e, c),) for e, c in clothes])
        _aero_forces_batch(batch, base, amp, modes, cones, zones, t, *coefficients)
        return
    for entity, cloth in clothes:
        _aero_forces_call(scratch.get(entity, cloth), base, amp, modes, cones, zones, t, *coefficients)


def air_velocity(winds: Iterable[Wind], blowers: Iterable[Blower], points: np.ndarray, time: float) -> np.ndarray:
    """Air velocity [m/s], shape (k, 3), at world ``points`` (k, 3) [m] and simulated ``time`` [s].

    The field the wind system uses (inactive Winds and Blowers are skipped): use it to move leaves,
    smoke or a HUD arrow with the same gusts the cloth feels. Zoned Winds count with their weight there."""
    p = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
    base, amp, modes, cones, zones = _pack([w for w in winds if w.active], [b for b in blowers if b.active],
                                           float(time))
    out = np.zeros_like(p)
    _air_at_points(p, base, amp, modes, cones, zones, float(time), out)
    return out


def gust_factor(wind: Wind, time: float) -> float:
    """The factor 1 + gust·s(t) [-] scaling ``wind.velocity`` at simulated ``time`` [s], in [1 − gust, 1 + gust]."""
    gusts, _ = _noise_tables(wind.seed)
    total = weights = 0.0
    for omega_period, phase, weight in gusts.tolist():          # a handful of sines: scalar math, no arrays
        total += weight * math.sin(omega_period / wind.gust_period * time + phase)
        weights += weight
    return 1.0 + wind.gust * total / weights


# --- packing: Python, once per step, a handful of entities ----------------------------------------
@functools.lru_cache(maxsize=64)
def _noise_tables(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Gust sines (G, 3): ω·period [rad], phase [rad], amplitude; turbulence waves (K, 9):
    wave vector (3) [rad/m], ω·period [rad], phase [rad], direction (3), amplitude. Drawn from a
    private generator seeded with ``seed`` (read-only results: cached per seed)."""
    rng = np.random.default_rng(seed)
    gusts = np.empty((GUST_MODES, 3))
    gusts[:, 0] = 2.0 * math.pi / rng.uniform(0.5, 2.0, GUST_MODES)            # periods 0.5 … 2 × gust_period
    gusts[:, 1] = rng.uniform(0.0, 2.0 * math.pi, GUST_MODES)
    gusts[:, 2] = 1.0 / np.arange(1, GUST_MODES + 1)                            # slow sines dominate
    waves = np.empty((TURBULENCE_MODES, 9))
    heading = rng.normal(size=(TURBULENCE_MODES, 3))
    heading /= np.linalg.norm(heading, axis=1)[:, None]
    waves[:, 0:3] = heading * (2.0 * math.pi / rng.uniform(0.5, 3.0, TURBULENCE_MODES))[:, None]
    waves[:, 3] = 2.0 * math.pi / rng.uniform(0.5, 2.0, TURBULENCE_MODES)
    waves[:, 4] = rng.uniform(0.0, 2.0 * math.pi, TURBULENCE_MODES)
    direction = rng.normal(size=(TURBULENCE_MODES, 3))
    waves[:, 5:8] = direction / np.linalg.norm(direction, axis=1)[:, None]
    waves[:, 8] = rng.uniform(0.5, 1.0, TURBULENCE_MODES)
    gusts.flags.writeable = False
    waves.flags.writeable = False
    return gusts, waves


def _pack(winds: list[Wind], blowers: list[Blower], time: float, out: tuple[np.ndarray, ...] | None = None
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Kernel inputs: base velocities (w, 3) [m/s] with this instant's gust factor, turbulence
    amplitudes (w,) [m/s], turbulence waves (w, K, 9) with ω divided by the period [rad/s] and the
    amplitudes normalised to sum 1, blower cones (b, 9): origin (3), direction (3), speed, radius,
    tan(spread), and wind zones (w, ZONE_COLUMNS) (``_pack_zone``). Written into ``out`` (the five arrays of
    a previous call) when their sizes fit."""
    w, b = len(winds), len(blowers)
    if out is None or len(out) != 5 or out[0].shape[0] != w or out[3].shape[0] != b:
        out = (np.zeros((w, 3)), np.zeros(w), np.zeros((w, TURBULENCE_MODES, 9)), np.zeros((b, 9)),
               np.zeros((w, ZONE_COLUMNS)))
    base, amp, modes, cones, zones = out
    for k, wind in enumerate(winds):
        _, waves = _noise_tables(wind.seed)
        gust = gust_factor(wind, time)
        vx, vy, vz = wind.velocity
        base[k, 0], base[k, 1], base[k, 2] = vx * gust, vy * gust, vz * gust
        amp[k] = wind.turbulence * math.sqrt(vx * vx + vy * vy + vz * vz)
        modes[k] = waves
        modes[k, :, 3] /= wind.gust_period
        modes[k, :, 8] /= waves[:, 8].sum()
        _pack_zone(wind.region, zones[k])
    for k, blower in enumerate(blowers):
        cones[k, 0:3] = blower.origin
        cones[k, 3:6] = blower.direction
        cones[k, 6] = blower.speed
        cones[k, 7] = blower.radius
        cones[k, 8] = math.tan(blower.spread)
    return base, amp, modes, cones, zones


def _pack_zone(region: WindBox | WindSphere | None, row: np.ndarray) -> None:
    """Write one Wind's region into ``row`` (ZONE_COLUMNS,): kind 0 (everywhere), 1 (box) or 2 (sphere),
    centre [m], half-size [m] (a sphere: radius, 0, 0), edge [m], box-to-world rotation row-major."""
    row[:] = 0.0
    if region is None:
        return
    row[1:4] = region.center
    row[7] = region.edge
    if isinstance(region, WindSphere):
        row[0], row[4] = 2.0, region.radius
        return
    row[0] = 1.0
    row[4:7] = region.half_size
    row[8:17] = region.rotation.reshape(9)


# --- kernels: private, arrays in, arrays out -----------------------------------------------------
@numba.njit(cache=True)
def _wave(phase):
    """sin(phase) to 1e-6, branch-free: reduced to [−π, π], then its Taylor series to the 15th power
    (error < π¹⁷/17! = 8e-7). No libm call and no branch, so the loops over points that call it
    (``_air_at_points``, ``_waves``) vectorise; the turbulence takes 8 sines per particle per step."""
    r = phase - 2.0 * math.pi * math.floor(phase / (2.0 * math.pi) + 0.5)
    r2 = r * r
    return r * (1.0 + r2 * (-1.0 / 6.0 + r2 * (1.0 / 120.0 + r2 * (-1.0 / 5040.0 + r2 * (
        1.0 / 362880.0 + r2 * (-1.0 / 39916800.0 + r2 * (1.0 / 6227020800.0 + r2 * (-1.0 / 1307674368000.0))))))))


@numba.njit(cache=True)
def _air_at(px, py, pz, t, base, amp, modes, cones):
    """Air velocity (ux, uy, uz) [m/s] at point p [m], time t [s]: winds (gusts in ``base``,
    turbulence waves Σ a·sin(κ·p − ω·t + φ)·ê) plus blower cones speed·(radius/R)²·(1 − (r/R)²)²
    (see components.wind.Blower). The seeds' wind is a uniform fluid velocity (Provot 1995, "Viscous fluid
    (wind)") or "some globally varying constant function" (Fisher's notes); this field is Loom's own,
    seeded and deterministic."""
    ux = 0.0
    uy = 0.0
    uz = 0.0
    for w in range(base.shape[0]):
        ux += base[w, 0]
        uy += base[w, 1]
        uz += base[w, 2]
        a = amp[w]
        if a == 0.0:
            continue
        for k in range(modes.shape[1]):
            s = a * modes[w, k, 8] * _wave(modes[w, k, 0] * px + modes[w, k, 1] * py + modes[w, k, 2] * pz
                                           - modes[w, k, 3] * t + modes[w, k, 4])
            ux += s * modes[w, k, 5]
            uy += s * modes[w, k, 6]
            uz += s * modes[w, k, 7]
    for b in range(cones.shape[0]):
        rx = px - cones[b, 0]
        ry = py - cones[b, 1]
        rz = pz - cones[b, 2]
        along = rx * cones[b, 3] + ry * cones[b, 4] + rz * cones[b, 5]
        if along <= 0.0:
            continue
        ox = rx - along * cones[b, 3]
        oy = ry - along * cones[b, 4]
        oz = rz - along * cones[b, 5]
        off2 = ox * ox + oy * oy + oz * oz
        rim = cones[b, 7] + along * cones[b, 8]
        q = off2 / (rim * rim)
        if q >= 1.0:
            continue
        ratio = cones[b, 7] / rim
        speed = cones[b, 6] * ratio * ratio * (1.0 - q) * (1.0 - q)
        ux += speed * cones[b, 3]
        uy += speed * cones[b, 4]
        uz += speed * cones[b, 5]
    return ux, uy, uz


@numba.njit(cache=True)
def _zone_weight(zones, w, px, py, pz):
    """Weight [-] in [0, 1] of wind w's zone at point p [m]: 1 for no zone or deeper than its edge inside,
    smoothstep(depth/edge) across the edge, 0 on and outside the boundary (depth: distance to the surface)."""
    kind = zones[w, 0]
    if kind == 0.0:
        return 1.0
    dx = px - zones[w, 1]
    dy = py - zones[w, 2]
    dz = pz - zones[w, 3]
    if kind == 2.0:
        depth = zones[w, 4] - math.sqrt(dx * dx + dy * dy + dz * dz)
    else:                                                     # box: world offset into box axes, Rᵀ·d
        lx = zones[w, 8] * dx + zones[w, 11] * dy + zones[w, 14] * dz
        ly = zones[w, 9] * dx + zones[w, 12] * dy + zones[w, 15] * dz
        lz = zones[w, 10] * dx + zones[w, 13] * dy + zones[w, 16] * dz
        depth = min(zones[w, 4] - abs(lx), zones[w, 5] - abs(ly), zones[w, 6] - abs(lz))
    if not depth > 0.0:                                       # outside, or NaN (a centre written in place)
        return 0.0
    edge = zones[w, 7]
    if depth >= edge:
        return 1.0
    s = depth / edge
    return s * s * (3.0 - 2.0 * s)


@numba.njit(cache=True)
def _air_at_points(points, base, amp, modes, cones, zones, t, out):
    """out[k] = air velocity at points[k] (k, 3) [m] and time t [s] → [m/s]; the same field as
    ``_air_at``, with the points in the inner loops over contiguous coordinate rows, which LLVM
    vectorises (with ``_wave``, no libm call)."""
    rows = np.empty((8, points.shape[0]))
    _air_rows(points, base, amp, modes, cones, zones, t, rows)
    for k in range(points.shape[0]):             # loops, not out[:, 0] = rows[3]: an array-to-slice copy pulls
        out[k, 0] = rows[3, k]                   # numba's shape-error formatting (seconds of string code) into
        out[k, 1] = rows[4, k]                   # a first launch's compile
        out[k, 2] = rows[5, k]


@numba.njit(cache=True)
def _air_rows(points, base, amp, modes, cones, zones, t, rows):
    """rows (8, n): the points' x, y, z, the air velocity's x, y, z there [m, m/s], their coverage [-]
    (1 if a global Wind or a Blower is active, else min(1, Σ zone weights)), and scratch."""
    n = points.shape[0]
    for k in range(n):
        rows[0, k] = points[k, 0]
        rows[1, k] = points[k, 1]
        rows[2, k] = points[k, 2]
    _waves(rows, base, amp, modes, zones, t)
    if cones.shape[0] > 0:
        rows[6, :] = 1.0                                      # a Blower: still air everywhere else
        for k in range(n):
            bx, by, bz = _air_at(points[k, 0], points[k, 1], points[k, 2], t, base[:0], amp[:0], modes[:0], cones)
            rows[3, k] += bx
            rows[4, k] += by
            rows[5, k] += bz


@numba.njit(cache=True)
def _waves(rows, base, amp, modes, zones, t):
    """rows[3:6] (n,) = the winds' velocity with gusts and turbulence, zones weighted, at points rows[0:3] [m];
    rows[6] = coverage (``_air_rows``); rows[7] scratch for one zone's weights."""
    px, py, pz, ux, uy, uz, cover = rows[0], rows[1], rows[2], rows[3], rows[4], rows[5], rows[6]
    n = px.shape[0]
    ux[:] = 0.0
    uy[:] = 0.0
    uz[:] = 0.0
    everywhere = False
    for w in range(base.shape[0]):
        if zones[w, 0] == 0.0:
            everywhere = True
    if everywhere:
        cover[:] = 1.0
    else:
        cover[:] = 0.0
    for w in range(base.shape[0]):
        _add_wind(rows, base, amp, modes, zones, t, w, everywhere)


@numba.njit(cache=True)
def _add_wind(rows, base, amp, modes, zones, t, w, everywhere):
    """Add wind w (its mean and turbulence) to the air rows[3:6], weighted per point by ``_zone_weight``
    (kept in rows[7]; 1 for a wind without a region, and x·1 is exact, so a global wind adds exactly its
    unweighted velocity); a zoned wind also adds its weights to the coverage rows[6], capped at 1,
    unless ``everywhere`` (coverage already 1)."""
    px, py, pz, ux, uy, uz, cover, weight = rows[0], rows[1], rows[2], rows[3], rows[4], rows[5], rows[6], rows[7]
    n = px.shape[0]
    zoned = zones[w, 0] != 0.0
    for k in range(n):
        weight[k] = _zone_weight(zones, w, px[k], py[k], pz[k]) if zoned else 1.0
        if zoned and not everywhere:
            cover[k] = min(1.0, cover[k] + weight[k])
    bx, by, bz = base[w, 0], base[w, 1], base[w, 2]
    for k in range(n):
        ux[k] += bx * weight[k]
        uy[k] += by * weight[k]
        uz[k] += bz * weight[k]
    if amp[w] == 0.0:
        return
    for m in range(modes.shape[1]):
        kx, ky, kz = modes[w, m, 0], modes[w, m, 1], modes[w, m, 2]
        a = amp[w] * modes[w, m, 8]
        ex, ey, ez = a * modes[w, m, 5], a * modes[w, m, 6], a * modes[w, m, 7]
        shift = modes[w, m, 4] - modes[w, m, 3] * t
        for k in range(n):
            s = _wave(kx * px[k] + ky * py[k] + kz * pz[k] + shift) * weight[k]
            ux[k] += s * ex
            uy[k] += s * ey
            uz[k] += s * ez


@numba.njit(cache=True, parallel=True)
def _aero_forces_batch(clothes, base, amp, modes, cones, zones, t, rho, cd, cl, cvi, dt):
    """``_aero_forces`` for every cloth of a batch (``clothes``, a typed list of held ``AeroArrays``), a
    cloth per thread."""
    for k in prange(len(clothes)):
        c = np.int64(k)                          # typed lists take signed indices; prange's are unsigned
        _aero_forces(clothes[c], base, amp, modes, cones, zones, t, rho, cd, cl, cvi, dt)


@numba.njit(cache=True)
def _aero_forces(held, base, amp, modes, cones, zones, t, rho, cd, cl, cvi, dt):
    """Add each triangle's drag, lift and viscous force (module docstring) to ``force``, a third per corner:
    drag along the triangle's normal (Baraff & Witkin 1998 §4.4, per triangle), lift across the flow, and Provot
    1995's viscous fluid force Fvi = Cvi·[n·(u − v)]·n per unit area; a third to each corner as the mass is
    (Fuhrmann et al. 2003 eq. 1).

    held: the cloth's held ``AeroArrays``; base, amp, modes, cones, zones: the air (``_air_rows``) at time t [s];
    rho [kg/m³]; cd, cl [-]; cvi [N·s/m³]; dt [s].
    Adds to force (n, 3) [N], each particle's share scaled by min(1, m/(rate·dt)) (stability cap).
    Skips triangles of zero area or zero wind coverage; scales the others' force and rate by their corners'
    mean coverage (1 without zones: unchanged). Serial: triangles share corners.
    The air is evaluated at the particles and averaged over each triangle's corners: a grid has
    twice as many triangles as particles, so this takes half the turbulence's sines; over a triangle (5 cm) the
    shortest wave (0.5 m) is linear to 0.3 % of the wind."""
    cloth = held.value
    triangles = cloth.triangles
    x = cloth.x
    v = cloth.v
    mass = cloth.mass
    force = cloth.force
    acc = cloth.acc
    rate = cloth.rate
    air = cloth.air
    acc[:, :] = 0.0
    rate[:] = 0.0
    third = 1.0 / 3.0
    _air_rows(x, base, amp, modes, cones, zones, t, air)
    for f in range(triangles.shape[0]):
        i0 = triangles[f, 0]
        i1 = triangles[f, 1]
        i2 = triangles[f, 2]
        cover = (air[6, i0] + air[6, i1] + air[6, i2]) / 3.0
        if cover == 0.0:
            continue
        ax = x[i1, 0] - x[i0, 0]
        ay = x[i1, 1] - x[i0, 1]
        az = x[i1, 2] - x[i0, 2]
        bx = x[i2, 0] - x[i0, 0]
        by = x[i2, 1] - x[i0, 1]
        bz = x[i2, 2] - x[i0, 2]
        nx = ay * bz - az * by
        ny = az * bx - ax * bz
        nz = ax * by - ay * bx
        twice = math.sqrt(nx * nx + ny * ny + nz * nz)
        if twice < 1e-18:
            continue
        area = 0.5 * twice
        nx /= twice
        ny /= twice
        nz /= twice
        ux = (air[3, i0] + air[3, i1] + air[3, i2]) * third
        uy = (air[4, i0] + air[4, i1] + air[4, i2]) * third
        uz = (air[5, i0] + air[5, i1] + air[5, i2]) * third
        rx = ux - (v[i0, 0] + v[i1, 0] + v[i2, 0]) * third
        ry = uy - (v[i0, 1] + v[i1, 1] + v[i2, 1]) * third
        rz = uz - (v[i0, 2] + v[i1, 2] + v[i2, 2]) * third
        speed = math.sqrt(rx * rx + ry * ry + rz * rz)
        un = nx * rx + ny * ry + nz * rz                      # n·u_rel = |u_rel| cos θ
        normal = (0.5 * rho * cd * speed + cvi) * area * un   # drag + Provot's viscous term, along n
        fx = normal * nx
        fy = normal * ny
        fz = normal * nz
        if cl > 0.0 and speed > 0.0:                          # lift: ⊥ u_rel, in the plane of n and u_rel
            lift = 0.5 * rho * cl * area * un
            across = un / speed
            fx += lift * (speed * nx - across * rx)
            fy += lift * (speed * ny - across * ry)
            fz += lift * (speed * nz - across * rz)
        if cover != 1.0:                                      # a zone's soft edge
            fx *= cover
            fy *= cover
            fz *= cover
        k = area * third * (rho * (cd + cl) * speed + cvi) * cover
        for i in (i0, i1, i2):
            acc[i, 0] += fx * third
            acc[i, 1] += fy * third
            acc[i, 2] += fz * third
            rate[i] += k
    for p in range(x.shape[0]):
        scale = 1.0
        if rate[p] * dt > mass[p]:
            scale = mass[p] / (rate[p] * dt)
        force[p, 0] += scale * acc[p, 0]
        force[p, 1] += scale * acc[p, 1]
        force[p, 2] += scale * acc[p, 2]


_hold_call, _aero_forces_call = hold, _aero_forces       # the Python call sites' names (loom.systems.forces.cold)
