"""Mass-spring cloth: Hooke springs, an explicit integrator, and Provot's deformation limit.

The model of Provot 1995 (and Fisher, "Mass-Spring Model") for cloths with ``model="mass_spring"``.
Forces on particle p (Provot's "Dynamics and Forces" slides; MassSpringSettings holds the constants):
- springs on every link, k by kind (structural, shear, flexion): f_a = −[k·(l − l₀) + c·(v_a − v_b)·d̂]·d̂,
  f_b = −f_a, d = x_a − x_b, l = |d| (Hooke's law plus damping along the spring, c =
  spring_damping);
- viscous damping −C_dis·v; gravity m·g; the external forces in ``cloth.force`` (wind, user);
- Provot's viscous fluid force C_vi·[n·(u − v)]·n, n the unit normal at p (area-weighted mean of the
  adjacent triangles' normals at the current positions), u the air velocity.
Particles of inverse mass 0 get zero acceleration; the pin system places them.

Each substep of h, one PREDICT system advances x and v by ``settings.integrator`` (Fisher, "Euler's
Method", "Runge Kutta", "Verlet", "Symplectic Euler"):
- explicit_euler:   x ← x + h·v_n;       v ← v + h·a(x_n, v_n)    (energy grows by 1 + ω²h² a step)
- symplectic_euler: v ← v + h·a(x_n, v_n); x ← x + h·v_{n+1}      (energy bounded)
- rk4: classical 4-stage Runge–Kutta on (x, v)                     (4th order)
- verlet: x_{n+1} = 2x_n − x_{n−1} + a(x_n, (x_n − x_{n−1})/h)·h², v = (x_{n+1} − x_{n−1})/(2h) (2nd order)
and leaves x_prev = x at the start of the substep (the collision system's substep start; for verlet
it is also x_{n−1} of the next substep). It remembers the integrated positions x_int; UPDATE adds
(x − x_int)/h to v, so velocities follow what pins, the deformation limit and collisions did to
positions, while untouched particles keep the integrator's own velocity.

CONSTRAIN runs Provot's deformation limit (slides "Constraints on Deformation Rates"): structural and
shear springs (and flexion springs with ``bend_strain_limit``) longer than (1 + τ_c)·l₀ are shortened —
both ends of a free–free spring (mass-weighted), only the free end of a fixed–free one — and the springs
next to every moved particle checked again, until no spring is over: each substep ends with every
limited spring within (1 + τ_c)·l₀ exactly, or — anchors farther apart than the limit allows, or
``limit_passes`` passes' worth of checks used up — with the springs left over reported in ``SpringState``
and the ``loom.limits`` log (``loom.systems.shared.distance_limits``: why the corrections end, their
over-long target (1 − δ)·(1 + τ_c)·l₀ and over-relaxation). Collisions run after it and have priority.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from loom.components import Cloth, Gravity
from loom.engine import App
from loom.engine.geometry import vertex_normals_into
from loom.engine.persist import persistent
from loom.systems.shared.distance_limits import DeformationLimits, link_bounds
from loom.systems.shared.held import Held, hold
from loom.systems.shared.model_index import cloths_of
from loom.systems.shared.substep_model import ClothScratch, Seen, add_substep_model

MODEL = "mass_spring"
"""The ``Cloth.model`` this module steps (registered in ``loom.systems.registry``)."""
MIN_LENGTH = 1e-12
"""Springs shorter than this [m] have no direction and exert no force."""

# Layout of the coefficient vector the force kernel reads (one array instead of nine scalars).
_SPRING_DAMPING, _VISCOUS_DAMPING, _FLUID_VISCOSITY, _UX, _UY, _UZ, _GX, _GY, _GZ = range(9)


class MassSpringPlugin:
    """Mass-spring cloth (``model="mass_spring"``): integrate, limit deformation, correct velocities."""

    def build(self, app: App) -> None:
        add_substep_model(app, MODEL, MassSpringScratch, integrate_springs, limit_spring_deformation,
                          update_spring_velocities)


@persistent
class MassSpringScratch(ClothScratch):
    """Per-cloth solver scratch of the mass-spring model, keyed by entity (allocated once, reused)."""

    def get(self, entity: int, cloth: Cloth) -> SpringState:
        """Return ``entity``'s scratch: arrays reallocated only when the particle count changes, link
        tables rebuilt when the settings object or the link table is replaced."""
        state = super().get(entity, cloth)
        state.fit(cloth)
        return state

    def build(self, cloth: Cloth) -> SpringState:
        return SpringState(cloth)


@persistent
class SpringState:
    """Scratch of one mass-spring cloth: spring tables, integrator stages and history, diagnostics.

    Arrays (n, 3): x_int, the positions as integrated, before pins, limit and collisions [m];
    force, the total force of the last evaluation [N]; normals, unit particle normals of the last
    evaluation (fluid force only); v_eval, the velocity a force is evaluated at [m/s] (RK4 stage
    velocity, Verlet's (x_n − x_{n−1})/h); RK4 only: x_stage [m], v_start [m/s]; Verlet only:
    x_prev_at_step, x_{n−1} at the start of the step [m], put back if the guard refuses the step.
    Tables (c,), colour order: link_k [N/m]; link_hi, the deformation-limit bounds [m] (inf: not limited)."""

    def __init__(self, cloth: Cloth) -> None:
        self.particle_count = -1
        self.settings = None
        self.link_rest = None
        self.coeffs = np.zeros(9)
        """The force kernel's coefficients: c, C_dis, C_vi [N·s/m], u (3) [m/s], g (3) [m/s²]."""
        self.seeded = False
        """True once x_prev holds a valid x_{n−1} for the verlet integrator."""
        self.seen = Seen(cloth)
        """What this scratch last saw of the cloth's change signal and of the guard's refusals."""
        self.limit_passes_used = 0.0
        """Work of the deformation limit in the last substep: springs checked / limited springs [-]
        (1: one check of each, nothing over; bounded by ``limit_passes``)."""
        self.limit_over = 0
        """Limited springs still longer than (1 + τ_c)·l₀ after the last substep; 0: the limit held."""
        self.limit_unmet = 0
        """Substeps that ended with a spring over its limit (anchors farther apart than the limit allows,
        or ``limit_passes`` too small), since the limit's tables were last built."""
        self.fit(cloth)

    def fit(self, cloth: Cloth) -> None:
        """(Re)allocate arrays for ``cloth``'s particle count and rebuild its tables if they are stale."""
        n = cloth.particle_count
        method = cloth.settings.integrator
        if n != self.particle_count:
            self.particle_count = n
            self.x_int, self.force, self.normals, self.v_eval = (np.zeros((n, 3)) for _ in range(4))
            self.x_stage = self.v_start = self.x_prev_at_step = np.zeros((0, 3))
            self.seeded = False
        if method == "rk4" and self.x_stage.shape[0] != n:
            self.x_stage, self.v_start = np.zeros((n, 3)), np.zeros((n, 3))
        if method == "verlet" and self.x_prev_at_step.shape[0] != n:
            self.x_prev_at_step = np.zeros((n, 3))
        if self.settings is not cloth.settings or self.link_rest is not cloth.link_rest:
            s = cloth.settings
            self.settings, self.link_rest = s, cloth.link_rest
            kinds = cloth.link_kind[cloth.link_order]
            stiffness = np.array([s.stretch_stiffness, s.shear_stiffness, s.bend_stiffness])
            self.link_k = np.ascontiguousarray(stiffness[kinds])
            limit = math.inf if s.strain_limit is None else 1.0 + s.strain_limit
            bend = math.inf if s.bend_strain_limit is None else 1.0 + s.bend_strain_limit
            _, self.link_hi = link_bounds(cloth, (0.0, 0.0, 0.0), (limit, limit, bend))
            self.limited = s.limit_passes > 0 and (s.strain_limit is not None or s.bend_strain_limit is not None)
            self.coeffs[:_GX] = (s.spring_damping, s.viscous_damping, s.fluid_viscosity, *s.fluid_velocity)


def integrate_springs(app: App, h: float) -> None:
    """Mass-spring cloths: advance x and v over a substep of h [s] with the cloth's integrator."""
    g = app.resource(Gravity).acceleration
    scratch = app.resource(MassSpringScratch)
    rows = cloths_of(app, MODEL)
    tables = app.init_resource(SpringTables)
    if app.clock.substep_index == 0:
        tables.keep_only(rows)
    for entity, cloth in rows:
        state = scratch.get(entity, cloth)
        state.coeffs[_GX:] = g                               # gravity is a resource: it may change any step
        springs = tables.get(entity, cloth, state)
        restored = state.seen.refused(cloth)                 # the guard reset x, v and x_prev = x
        method = cloth.settings.integrator
        if method == "symplectic_euler" or method == "explicit_euler":
            _euler(springs, h, method == "symplectic_euler", state.normals, state.force, cloth.x, cloth.v,
                   cloth.x_prev)
        elif method == "rk4":
            _rk4(springs, h, state.normals, state.force, state.x_stage, state.v_eval, state.v_start,
                 cloth.x, cloth.v, cloth.x_prev)
        else:                                                # "verlet" (MassSpringSettings validates the name)
            if not state.seeded:
                _seed_verlet(springs, h, state.normals, state.force, cloth.x, cloth.v, cloth.x_prev)
            elif restored:                                   # retry the refused step from its own x_{n−1}
                np.copyto(cloth.x_prev, state.x_prev_at_step)
            if app.clock.substep_index == 0:
                np.copyto(state.x_prev_at_step, cloth.x_prev)
            _verlet(springs, h, state.normals, state.force, state.v_eval, cloth.x, cloth.v, cloth.x_prev)
        state.seeded = method == "verlet"
        np.copyto(state.x_int, cloth.x)


def limit_spring_deformation(app: App, h: float) -> None:
    """Mass-spring cloths: Provot 1995's deformation limit, until no limited spring is over (1 + τ_c)·l₀, at
    most ``settings.limit_passes`` passes' worth of spring checks."""
    scratch = app.resource(MassSpringScratch)
    limits = app.init_resource(DeformationLimits)
    for entity, cloth in cloths_of(app, MODEL):
        state = scratch.get(entity, cloth)
        if not state.limited:
            continue
        limit = limits.get(cloth, state.link_hi)
        limit.apply(cloth.settings.limit_passes, cloth.inv_mass, cloth.x)
        state.limit_passes_used, state.limit_over, state.limit_unmet = limit.passes, limit.over, limit.unmet


def update_spring_velocities(app: App, h: float) -> None:
    """Mass-spring cloths: v += (x − x_int)/h, the velocity of the corrections made after integrating."""
    scratch = app.resource(MassSpringScratch)
    for entity, cloth in cloths_of(app, MODEL):
        _follow_corrections(cloth.x, scratch.get(entity, cloth).x_int, 1.0 / h, cloth.v)


@persistent
class SpringTables:
    """Resource: each mass-spring cloth's held ``Springs``, keyed by entity; rebuilt when the cloth has replaced
    an array (its ``revision``; after a snapshot load, which restores the revision with new arrays,
    ``x``'s identity) or its scratch has new spring constants. Saved empty by snapshots (derived data)."""

    def __init__(self) -> None:
        self.by_entity: dict[int, tuple[Cloth, int, np.ndarray, np.ndarray, np.ndarray, Held]] = {}

    def get(self, entity: int, cloth: Cloth, state: SpringState) -> Held:
        """``entity``'s held ``Springs`` over ``cloth`` and its ``state`` (link_k, coeffs), up to date."""
        e = self.by_entity.get(entity)
        if e is None or e[0] is not cloth or e[1] != cloth.revision or e[2] is not cloth.x \
                or e[3] is not state.link_k or e[4] is not state.coeffs:
            springs = hold(Springs(cloth.link_i, cloth.link_j, cloth.link_rest, state.link_k, cloth.triangles,
                                   cloth.mass, cloth.inv_mass, state.coeffs, cloth.force))
            e = self.by_entity[entity] = (cloth, cloth.revision, cloth.x, state.link_k, state.coeffs, springs)
        return e[5]

    def keep_only(self, rows: list[tuple[int, Cloth]]) -> None:
        """Forget entities not in ``rows`` (despawned), so their arrays can be freed."""
        if len(self.by_entity) > len(rows):
            kept = {entity for entity, _ in rows}
            self.by_entity = {k: e for k, e in self.by_entity.items() if k in kept}

    def __getstate__(self) -> dict:
        """Saved empty: held structs do not pickle, and a loaded world rebuilds them at its first substep."""
        return {"by_entity": {}}


# --- kernels: private, arrays in, arrays out ----------------------------------------------------
class Springs(NamedTuple):
    """A mass-spring cloth's force model as ``_spring_forces`` reads it, held (``loom.systems.shared.held``):
    references to the cloth's and its scratch's arrays, no copies."""

    link_i: np.ndarray
    """First particle of each spring, (c,) int32, colour order."""
    link_j: np.ndarray
    """Second particle of each spring, (c,) int32."""
    link_rest: np.ndarray
    """Rest length l₀ of each spring, (c,) [m]."""
    link_k: np.ndarray
    """Stiffness k of each spring, (c,) [N/m]."""
    triangles: np.ndarray
    """(t, 3) int32, for the particle normals of the fluid force."""
    mass: np.ndarray
    """(n,) [kg]."""
    inv_mass: np.ndarray
    """(n,) [1/kg]; 0: not moved."""
    coeffs: np.ndarray
    """(9,): spring damping c, viscous damping C_dis, fluid viscosity C_vi [N·s/m], air velocity u (3)
    [m/s], gravity g (3) [m/s²]."""
    external: np.ndarray
    """External forces (wind, user), (n, 3) [N]."""


@numba.njit(cache=True)
def _spring_forces(held, x, v, normals, out):
    """Total force on every particle at positions x and velocities v (Provot 1995; Fisher).

    held: the cloth's held ``Springs``; x (n, 3) [m]; v (n, 3) [m/s]. Writes normals (n, 3) (only when C_vi > 0 and
    there are triangles) and out (n, 3) [N]:
    out = external + m·g − C_dis·v + Σ springs −[k·(l − l₀) + c·(v_a − v_b)·d̂]·d̂ + C_vi·[n·(u − v)]·n."""
    springs = held.value
    link_i = springs.link_i
    link_j = springs.link_j
    link_rest = springs.link_rest
    link_k = springs.link_k
    triangles = springs.triangles
    mass = springs.mass
    coeffs = springs.coeffs
    external = springs.external
    c_spring = coeffs[_SPRING_DAMPING]
    c_dis = coeffs[_VISCOUS_DAMPING]
    c_vi = coeffs[_FLUID_VISCOSITY]
    for p in range(x.shape[0]):
        m = mass[p]
        out[p, 0] = external[p, 0] + m * coeffs[_GX] - c_dis * v[p, 0]
        out[p, 1] = external[p, 1] + m * coeffs[_GY] - c_dis * v[p, 1]
        out[p, 2] = external[p, 2] + m * coeffs[_GZ] - c_dis * v[p, 2]
    for k in range(link_i.shape[0]):
        a = link_i[k]
        b = link_j[k]
        dx = x[a, 0] - x[b, 0]
        dy = x[a, 1] - x[b, 1]
        dz = x[a, 2] - x[b, 2]
        length = math.sqrt(dx * dx + dy * dy + dz * dz)
        if length < MIN_LENGTH:
            continue
        nx = dx / length
        ny = dy / length
        nz = dz / length
        closing = (v[a, 0] - v[b, 0]) * nx + (v[a, 1] - v[b, 1]) * ny + (v[a, 2] - v[b, 2]) * nz
        f = -link_k[k] * (length - link_rest[k]) - c_spring * closing      # along d̂, on particle a
        out[a, 0] += f * nx
        out[a, 1] += f * ny
        out[a, 2] += f * nz
        out[b, 0] -= f * nx
        out[b, 1] -= f * ny
        out[b, 2] -= f * nz
    if c_vi == 0.0 or triangles.shape[0] == 0:
        return
    vertex_normals_into(triangles, x, normals)          # area-weighted unit normals (shared with rendering)
    ux = coeffs[_UX]
    uy = coeffs[_UY]
    uz = coeffs[_UZ]
    for p in range(x.shape[0]):
        nx = normals[p, 0]
        ny = normals[p, 1]
        nz = normals[p, 2]
        f = c_vi * (nx * (ux - v[p, 0]) + ny * (uy - v[p, 1]) + nz * (uz - v[p, 2]))
        out[p, 0] += f * nx
        out[p, 1] += f * ny
        out[p, 2] += f * nz


@numba.njit(cache=True)
def _euler(springs, h, symplectic, normals, force, x, v, x_prev):
    """One Euler step; x_prev ← x_n. Writes normals, force, x, v, x_prev.

    explicit (symplectic False): x ← x + h·v_n, v ← v + h·w·F(x_n, v_n);
    symplectic: v ← v + h·w·F(x_n, v_n), then x ← x + h·v_{n+1}."""
    inv_mass = springs.value.inv_mass
    _spring_forces(springs, x, v, normals, force)
    for p in range(x.shape[0]):
        w = inv_mass[p]
        for c in range(3):
            x_prev[p, c] = x[p, c]
            if symplectic:
                v[p, c] += h * w * force[p, c]
                x[p, c] += h * v[p, c]
            else:
                x[p, c] += h * v[p, c]
                v[p, c] += h * w * force[p, c]


@numba.njit(cache=True)
def _rk4(springs, h, normals, force, x_stage, v_stage, v_start, x, v, x_prev):
    """Classical 4-stage Runge–Kutta on (x, v) with ẋ = v, v̇ = w·F(x, v) (Fisher, "Runge Kutta").

    Stage s ∈ 1…4 evaluates (k_x, k_v) = (v_s, w·F(x_s, v_s)) at x_s = x_n + c_s·h·k_x(s−1),
    v_s = v_n + c_s·h·k_v(s−1), c = (0, ½, ½, 1); x and v accumulate h·(k1 + 2k2 + 2k3 + k4)/6.
    Scratch x_stage, v_stage, v_start (n, 3); x_prev ← x_n doubles as the stage origin."""
    inv_mass = springs.value.inv_mass
    n = x.shape[0]
    for p in range(n):
        for c in range(3):
            x_prev[p, c] = x[p, c]
            v_start[p, c] = v[p, c]
            x_stage[p, c] = x[p, c]
            v_stage[p, c] = v[p, c]
    for stage in range(4):
        _spring_forces(springs, x_stage, v_stage, normals, force)
        weight = h / 6.0 if stage == 0 or stage == 3 else h / 3.0
        step = h if stage == 2 else 0.5 * h                 # c of the next stage
        for p in range(n):
            w = inv_mass[p]
            for c in range(3):
                kx = v_stage[p, c]
                kv = w * force[p, c]
                x[p, c] += weight * kx
                v[p, c] += weight * kv
                x_stage[p, c] = x_prev[p, c] + step * kx
                v_stage[p, c] = v_start[p, c] + step * kv


@numba.njit(cache=True)
def _seed_verlet(springs, h, normals, force, x, v, x_prev):
    """Start the Verlet history: x_{n−1} = x_n − h·v_n + ½·a(x_n, v_n)·h² (Taylor, 3rd-order exact), into x_prev.

    x_{n−1} = x_n − h·v_n alone errs by ½·a·h², a velocity error of ½·a·h that leaves the whole run
    first-order; with the ½·a·h² term position Verlet stays second order."""
    inv_mass = springs.value.inv_mass
    _spring_forces(springs, x, v, normals, force)
    half_h2 = 0.5 * h * h
    for p in range(x.shape[0]):
        w = inv_mass[p]
        for c in range(3):
            x_prev[p, c] = x[p, c] - h * v[p, c] + half_h2 * w * force[p, c]


@numba.njit(cache=True)
def _verlet(springs, h, normals, force, v_eval, x, v, x_prev):
    """Position Verlet (Fisher, "Verlet"; Fuhrmann 2003 eq. 15): x_{n+1} = 2x_n − x_{n−1} + w·F·h².

    x_prev holds x_{n−1} on entry and x_n on return. F is evaluated at (x_n, (x_n − x_{n−1})/h) (into
    v_eval); v ← (x_{n+1} − x_{n−1})/(2h), the central-difference velocity at t_n."""
    inv_mass = springs.value.inv_mass
    n = x.shape[0]
    inv_h = 1.0 / h
    for p in range(n):
        for c in range(3):
            v_eval[p, c] = (x[p, c] - x_prev[p, c]) * inv_h
    _spring_forces(springs, x, v_eval, normals, force)
    h2 = h * h
    half_inv_h = 0.5 * inv_h
    for p in range(n):
        w = inv_mass[p]
        for c in range(3):
            old = x_prev[p, c]
            now = x[p, c]
            new = 2.0 * now - old + w * force[p, c] * h2
            x[p, c] = new
            v[p, c] = (new - old) * half_inv_h
            x_prev[p, c] = now


@numba.njit(cache=True)
def _follow_corrections(x, x_int, inv_h, v):
    """v += (x − x_int)/h: the velocity of position corrections after integration. Writes v (n, 3) [m/s]."""
    for p in range(x.shape[0]):
        for c in range(3):
            v[p, c] += (x[p, c] - x_int[p, c]) * inv_h
