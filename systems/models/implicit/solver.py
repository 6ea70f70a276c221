"""Implicit cloth: Baraff & Witkin 1998, "Large Steps in Cloth Simulation", for cloths with model="implicit".

Once per fixed step dt (PRE_STEP, ClothSet.SOLVE_STEP, after pins and forces) each implicit cloth takes
one or more backward Euler steps of h ≤ dt (§3):

    (M − h·∂f/∂v − h²·∂f/∂x)·Δv = h·(f₀ + h·∂f/∂x·v₀ + ∂f/∂x·y)        (eq. 18)
    Δx = h·(v₀ + Δv) + y                                               (eq. 17)

with the stretch, shear and bend condition forces and their damping (§4, systems/models/implicit/forces.py),
gravity, the material's velocity damping and the cloth's external forces (wind); the matrix is block-sparse,
laid out once per topology and refilled each step (§2.3, systems/models/implicit/block_sparse.py); pins and collider
contacts enter as the filter S, z and y solved by the modified PCG (§5, §6, systems/models/implicit/constraints.py),
the contact forces read from the residual release contacts and drive Coulomb friction (§5.4).

Contacts use every shape of the ColliderSet (systems/shared/shapes.py signed distances) at each collider's
end-of-step pose (pose1) for the whole fixed step; a moving collider's velocity is ignored for now
(no surface velocity in z or friction). The momentum the contacts exchange with each collider over the
accepted sub-steps is accumulated into ``ColliderSet.impulse`` / ``impulse_point`` (minus the constraint
and friction impulses the particles received, §5.4), so two-way rigid bodies feel implicit cloth.

Adaptive steps (§7): after each step the stretch of every triangle (eq. 10, per unit area) is compared
with its value before; if any changed by more than ``ImplicitSettings.max_stretch_change`` the step is
discarded and retried at half the size (also when it is not finite, even with ``adaptive`` off). After
two successes at a reduced size the next step tries double the size; if that fails, the wait before the
next try doubles, up to 40 steps ("at its limit, the simulator will try increasing the step size every
40 steps"). The step size and counters persist across fixed steps; sizes are dt/2^k, so the sub-steps
of a fixed step always add up to exactly dt.

Solver state lives in the ``ImplicitWorkspaces`` resource (entity → ``ImplicitWorkspace``), built when a
cloth is first stepped or its topology changes, never reallocated per step, dropped when the cloth is
despawned (or no longer implicit); each workspace also keeps
the CG iteration counts, the current step level and the rejected sub-steps.
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from loom.components import Cloth, ColliderSet, Gravity, ImplicitSettings, Pin
from loom.engine import App, Stage
from loom.engine.persist import persistent
from loom.systems.models.implicit.block_sparse import (BlockPattern, Constraints, PcgScratch, build_pattern,
                                                       modified_pcg, multiply_add, residual)
from loom.systems.shared.conditions import uses_model
from loom.systems.shared.held import Held, hold
from loom.systems.shared.model_index import cloths_of, forget_on_despawn
from loom.systems.models.implicit.constraints import (Colliders, Contacts, StepVectors, apply_friction, build_filter,
                                                      collider_frames, collider_impulses, detect_contacts, finish_step,
                                                      pin_targets, update_contacts)
from loom.systems.models.implicit.forces import (Coefficients, LinearSystem, Loads, RestShape, assemble,
                                                 bend_u_fraction, rest_frames, stretch_change)
from loom.systems.sets import ClothSet

MODEL = "implicit"
"""The ``Cloth.model`` this module steps (registered in ``loom.systems.registry``)."""
MAX_LEVEL = 10
"""Most halvings of dt (§7): the smallest step is dt/1024 (16 µs at 60 Hz); a step rejected there is kept."""
GROW_WAIT = 2
"""Successes at a reduced step size before trying a larger one (§7: "after two successes")."""
MAX_GROW_WAIT = 40
"""Longest wait, in steps, between tries of a larger step that keeps failing (§7)."""
CONTACT_PASSES = 5
"""Most solves per step while the contact set changes (release, stick/slide, new landings); the last
revision only adds landings, so a step ends inside a collider only if that last solve carries yet
another free particle in."""
DEFINITE = True
"""Assemble only the positive semi-definite parts of the stretch and shear Hessian terms (forces stay exact;
see implicit_forces). Measured over 180 steps of 1/60 s on 24×24 sheets (ε = 1e-3), rejected sub-steps /
CG breakdowns, exact → definite: hanging 0/0 → 0/0; draped over a ball onto a floor 7/29 → 0/0; a vertical
sheet crumpling onto a floor 7/16 → 0/0. A 16×16 sheet with k = 1e5 N/m falling from two corners with §7
off diverged at step 7 with the exact matrix (energy 1e4 J, then 1e32 J) and stays stable with this one."""
CONTACT_KEEP_FRACTION = 0.5
"""An existing contact is kept while its particle is within reach + this × the cloth's thickness."""


@persistent
class HeldParts(NamedTuple):
    """A workspace's named tuples, each held once for the kernels (``loom.systems.shared.held``)."""

    rest: Held
    pattern: Held
    system: Held
    constraints: Held
    contacts: Held
    step: Held
    pcg: Held


@persistent
class ImplicitWorkspace:
    """One implicit cloth's solver state: block pattern, matrix values and every per-step vector.

    Built once per topology (``matches`` tells whether it still fits a cloth); no array is allocated per
    step. Statistics: ``iterations`` (last solve), ``iterations_total``, ``solves``, ``substeps`` (last
    fixed step), ``rejected`` (sub-steps discarded by §7), ``level`` (current step = dt/2^level),
    ``breakdowns`` (solves stopped early on a direction of non-positive curvature)."""

    def __init__(self, cloth: Cloth) -> None:
        n = cloth.particle_count
        self.rest = RestShape(cloth.triangles, *rest_frames(cloth.triangles, cloth.rest_uv, cloth.rest_x),
                              cloth.bend_quads, cloth.bend_rest_angle, bend_u_fraction(cloth.bend_quads, cloth.rest_uv))
        """Triangles with their eq. 9 weights and areas, bend quads with rest angles and k_u fractions."""
        self.pattern: BlockPattern = build_pattern(n, cloth.triangles, cloth.bend_quads)
        nnz = self.pattern.block_count
        self.system = LinearSystem(A=np.zeros((nnz, 3, 3)), K=np.zeros((nnz, 3, 3)), f=np.zeros((n, 3)),
                                   b0=np.zeros((n, 3)), b=np.zeros((n, 3)))
        """A = M − h·∂f/∂v − h²·∂f/∂x (eq. 16) [kg] and K = ∂f/∂x [N/m] block values, f₀, b₀ and b (eq. 18)."""
        self.constraints = Constraints(kind=np.zeros(n, np.int8), normal=np.zeros((n, 3)), z=np.zeros((n, 3)),
                                       y=np.zeros((n, 3)))
        """The step's filter S, z and y (eqs. 13, 17)."""
        self.contacts = Contacts.zeros(n)
        """Each particle's collider contact; its normal force drives next step's friction."""
        self.step = StepVectors.zeros(n)
        """The (sub)step's start state, Δv, residual and end state."""
        self.pcg = PcgScratch.zeros(n)
        self.target = np.zeros((n, 3))
        self.end = np.zeros((n, 3))
        self.mode_saved = np.zeros(n, np.int8)
        self.force_saved = np.zeros(n)
        self.gravity = np.zeros(3)
        self.level = 0
        self.successes = 0
        self.wait = GROW_WAIT
        self.trying = False
        self.iterations = 0
        self.iterations_total = 0
        self.solves = 0
        self.substeps = 0
        self.rejected = 0
        self.breakdowns = 0
        self.last_change = 0.0
        self._forget_held()

    def _forget_held(self) -> None:
        """Drop the held structs (rebuilt on first use): they do not pickle."""
        self._held: HeldParts | None = None
        self._loads: tuple[Any, ...] = (None, None, None, None)        # (mass, force, drag, held Loads)
        self._coefficients: tuple[Any, Any] = (None, None)             # (settings, held Coefficients)

    def __getstate__(self) -> dict:
        """Saved without the held structs (they do not pickle); a loaded workspace holds its own arrays."""
        return {k: v for k, v in self.__dict__.items() if k not in ("_held", "_loads", "_coefficients")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._forget_held()

    @property
    def held(self) -> HeldParts:
        """The workspace's named tuples, held (once: their arrays are never replaced)."""
        if self._held is None:
            self._held = HeldParts(*(hold(part) for part in (self.rest, self.pattern, self.system, self.constraints,
                                                            self.contacts, self.step, self.pcg)))
        return self._held

    def loads(self, cloth: Cloth) -> Held:
        """The held Loads of ``cloth`` (mass, this workspace's gravity, external forces, the material's
        drag), held again only when one of them is replaced."""
        drag = float(cloth.material.damping)
        mass, force, was, held = self._loads
        if mass is not cloth.mass or force is not cloth.force or was != drag:
            held = hold(Loads(cloth.mass, self.gravity, cloth.force, drag))
            self._loads = (cloth.mass, cloth.force, drag, held)
        return held

    def coefficients(self, settings: ImplicitSettings) -> Held:
        """The held Coefficients of ``settings`` (frozen: held again only when the settings are replaced)."""
        if self._coefficients[0] is not settings:
            self._coefficients = (settings, hold(Coefficients.of(settings)))
        return self._coefficients[1]

    def matches(self, cloth: Cloth) -> bool:
        """True while the cloth has the topology this workspace was built for."""
        return (self.rest.triangles is cloth.triangles and self.rest.quads is cloth.bend_quads
                and self.rest.rest_angle is cloth.bend_rest_angle and self.step.x0.shape[0] == cloth.particle_count)

    A = property(lambda self: self.system.A, doc="system.A: A = M − h·∂f/∂v − h²·∂f/∂x (eq. 16) [kg], block values.")
    K = property(lambda self: self.system.K, doc="system.K: ∂f/∂x [N/m], block values.")
    f = property(lambda self: self.system.f, doc="system.f: the forces at the start of the last step [N].")
    b = property(lambda self: self.system.b, doc="system.b: the last solve's right-hand side (eq. 18) [N·s].")

    @property
    def mode(self) -> np.ndarray:
        """contacts.mode: each particle's contact mode (n,) int8 (constraints.NONE, SLIDE, STICK)."""
        return self.contacts.mode


@persistent
class ImplicitWorkspaces:
    """App resource: the ImplicitWorkspace of each implicit cloth, by entity, and the step's held Colliders."""

    def __init__(self) -> None:
        self.by_entity: dict[int, ImplicitWorkspace] = {}
        self._colliders: tuple[Any, ...] = ((), None, None, None)   # (key, held Colliders, rot, pos)

    def __getstate__(self) -> dict:
        """Saved without the held Colliders (they do not pickle; rebuilt at the first step)."""
        return {"by_entity": self.by_entity, "_colliders": ((), None, None, None)}

    def colliders(self, packed: ColliderSet | None) -> tuple[Held, np.ndarray, np.ndarray]:
        """The kernels' held Colliders (constraints.Colliders) with this step's end-of-step frames, and the
        ColliderSet's impulse (k, 3) and impulse_point (k, 4) to accumulate into (scratch when there is none).
        Held again only when the ColliderSet replaces an array; the frames are rewritten in place."""
        if packed is None or packed.count == 0 or packed.mesh_arrays is None:
            packed = _NO_COLLIDERS
            packed.impulse.fill(0.0)
            packed.impulse_point.fill(0.0)
        arrays = (packed.kind, packed.params, packed.margin, packed.friction, packed.polygons, packed.mesh,
                  *packed.mesh_arrays)
        key, held, rot, pos = self._colliders
        if len(key) != len(arrays) or any(a is not b for a, b in zip(key, arrays)):
            k = packed.count
            rot, pos = np.zeros((k, 3, 3)), np.zeros((k, 3))
            held = hold(Colliders(packed.kind, packed.params, packed.margin, packed.friction, rot, pos,
                                  packed.polygons, packed.mesh, *packed.mesh_arrays))
            self._colliders = (arrays, held, rot, pos)
        collider_frames(packed.pose0, packed.pose1, rot, pos)
        return held, packed.impulse, packed.impulse_point

    def for_cloth(self, entity: int, cloth: Cloth) -> ImplicitWorkspace:
        """Return the entity's workspace, (re)building it if the cloth is new or its topology changed."""
        ws = self.by_entity.get(entity)
        if ws is None or not ws.matches(cloth):
            ws = self.by_entity[entity] = ImplicitWorkspace(cloth)
        return ws

    def forget(self, entity: int) -> None:
        """Drop a despawned entity's workspace."""
        self.by_entity.pop(entity, None)


# --- system -----------------------------------------------------------------------------------------
def step_implicit(app: App, dt: float) -> None:
    """Advance every implicit cloth over the fixed step dt [s] (backward Euler, §3–7)."""
    spaces = app.init_resource(ImplicitWorkspaces)
    colliders, pushed, pushed_point = spaces.colliders(app.resources.get(ColliderSet))
    gravity = app.resource(Gravity).acceleration
    pins = {entity: pin for entity, _, pin in app.query(Cloth, Pin)}
    stepped = []
    for entity, cloth in cloths_of(app, MODEL):
        ws = spaces.for_cloth(entity, cloth)
        _advance(cloth, ws, pins.get(entity), gravity, colliders, pushed, pushed_point, dt)
        stepped.append(entity)
    if spaces.by_entity.keys() != set(stepped):           # forget despawned or re-modelled cloths
        spaces.by_entity = {entity: spaces.by_entity[entity] for entity in stepped}


def implicit_report(app: App) -> dict[str, Any]:
    """Report CG iterations per solve, rejected sub-steps and the smallest step level of implicit cloths."""
    spaces = app.resources.get(ImplicitWorkspaces)
    if spaces is None or not spaces.by_entity:
        return {}
    all_ws = list(spaces.by_entity.values())
    solves = sum(ws.solves for ws in all_ws)
    return {
        "implicit_cg_iterations_per_solve": round(sum(ws.iterations_total for ws in all_ws) / max(solves, 1), 2),
        "implicit_rejected_substeps": sum(ws.rejected for ws in all_ws),
        "implicit_max_level": max(ws.level for ws in all_ws),
    }


class ImplicitPlugin:
    """Baraff–Witkin implicit cloth: one whole-step solver in ClothSet.SOLVE_STEP, its workspaces, its report."""

    def build(self, app: App) -> None:
        app.insert_resource(ImplicitWorkspaces(), replace=False)
        forget_on_despawn(app, ImplicitWorkspaces)
        app.add_system(step_implicit, Stage.PRE_STEP, in_set=ClothSet.SOLVE_STEP, run_if=uses_model(MODEL))
        app.add_reporter(implicit_report)


# --- stepping (per fixed step and per sub-step: Python calls kernels, never loops over particles) -------
def _no_colliders() -> ColliderSet:
    """An empty ColliderSet with empty mesh arrays: the table when no collider is packed."""
    empty = ColliderSet()
    empty.pack_meshes([])
    return empty


_NO_COLLIDERS = _no_colliders()


def _advance(cloth: Cloth, ws: ImplicitWorkspace, pin: Pin | None, gravity: np.ndarray, colliders: Held,
             pushed: np.ndarray, pushed_point: np.ndarray, dt: float) -> None:
    """Take sub-steps of dt/2^level until dt is covered, halving on rejection and growing back (§7)."""
    settings: ImplicitSettings = cloth.settings
    np.copyto(cloth.x_prev, cloth.x)
    np.copyto(ws.end, cloth.x)                           # fixed particles without a pin stay where they are
    if pin is not None:
        held = pin.index[pin.active]
        ws.end[held] = pin.step_end[pin.active]
    np.copyto(ws.gravity, gravity)
    total = 1 << MAX_LEVEL
    done = 0
    ws.substeps = 0
    level = ws.level if settings.adaptive else 0
    while done < total:
        span = min(total >> level, total - done)
        h = dt * span / total
        accepted = _substep(cloth, ws, settings, colliders, pushed, pushed_point, h, span / (total - done),
                            check=settings.adaptive and level < MAX_LEVEL, last=level == MAX_LEVEL)
        if accepted:
            done += span
            ws.substeps += 1
            if ws.trying:                                 # the larger step worked: back to the short wait
                ws.trying = False
                ws.wait = GROW_WAIT
            ws.successes += 1
            if settings.adaptive and level > 0 and ws.successes >= ws.wait:
                level -= 1
                ws.successes = 0
                ws.trying = True
        else:
            ws.rejected += 1
            if ws.trying:                                 # the larger step failed: wait longer next time
                ws.wait = min(2 * ws.wait, MAX_GROW_WAIT)
                ws.trying = False
            ws.successes = 0
            level = min(level + 1, MAX_LEVEL)
    if settings.adaptive:
        ws.level = level


def _substep(cloth: Cloth, ws: ImplicitWorkspace, s: ImplicitSettings, colliders: Held, pushed: np.ndarray,
             pushed_point: np.ndarray, h: float, fraction: float, *, check: bool, last: bool) -> bool:
    """One backward Euler step of h [s] from cloth.x, cloth.v; writes them and returns True if accepted.

    An accepted step adds the momentum its contacts took from each collider to pushed (k, 3) [N·s] and
    pushed_point (k, 4) (ColliderSet.impulse, impulse_point); a rejected step, or one held still at the
    last level, adds nothing.

    fraction: the part of the fixed step's remaining time this step covers (pins move that far).
    check: apply §7's stretch test. A non-finite result is always refused; at the last level (``last``)
    the cloth is held still instead, rather than written with NaN."""
    p, sy, st, con, ct = ws.pattern, ws.system, ws.step, ws.constraints, ws.contacts
    held = ws.held
    m = cloth.material
    np.copyto(st.x0, cloth.x)
    np.copyto(st.v0, cloth.v)
    np.copyto(ws.mode_saved, ct.mode)
    np.copyto(ws.force_saved, ct.force)
    ct.impulse.fill(0.0)
    detect_contacts(colliders, m.thickness, m.friction, CONTACT_KEEP_FRACTION * m.thickness, cloth.inv_mass, st.x0,
                    held.contacts)
    pin_targets(st.x0, ws.end, fraction, cloth.inv_mass, ws.target)
    assemble(st.x0, st.v0, ws.loads(cloth), held.rest, ws.coefficients(s), held.pattern, h, DEFINITE, False,
             held.system)
    apply_friction(cloth.mass, held.contacts, st.v0, h, p.diag, held.system)
    np.multiply(sy.f, h, out=sy.b0)
    multiply_add(p.indptr, p.indices, sy.K, st.v0, h * h, sy.b0, sy.b0)        # b₀ = h·(f₀ + h·K·v₀)
    build_filter(cloth.inv_mass, ws.target, held.contacts, st.x0, st.v0, h, held.constraints)
    solvable = True
    for attempt in range(CONTACT_PASSES):
        multiply_add(p.indptr, p.indices, sy.K, con.y, h, sy.b0, sy.b)          # b = b₀ + h·K·y (eq. 18)
        np.add(sy.b, ct.impulse, out=sy.b)                                      # friction of new sliders
        iterations, delta, delta0 = modified_pcg(held.pattern, sy.A, sy.b, held.constraints, s.tolerance,
                                                 s.max_iterations, attempt > 0, st.dv, held.pcg)
        solvable = solvable and math.isfinite(delta0)     # inf in b would be skipped, not solved
        ws.iterations = iterations
        ws.iterations_total += iterations
        ws.solves += 1
        if iterations < s.max_iterations and delta > s.tolerance ** 2 * delta0:
            ws.breakdowns += 1                            # stopped on cᵀq ≤ 0: A indefinite along c
        residual(p.indptr, p.indices, sy.A, st.dv, sy.b, st.e)                 # constraint impulses (§5.4)
        if attempt == CONTACT_PASSES - 1:
            break
        if update_contacts(held.step, colliders, cloth.inv_mass, p.diag, m.thickness, m.friction, h,
                           attempt < CONTACT_PASSES - 2, held.contacts, held.system) == 0:
            break
        build_filter(cloth.inv_mass, ws.target, held.contacts, st.x0, st.v0, h, held.constraints)
    finite = finish_step(held.step, con.y, h, cloth.inv_mass, ws.target, held.contacts) and solvable
    if not finite and last:                              # nothing smaller to try: hold still, never write NaN
        np.copyto(ct.mode, ws.mode_saved)
        np.copyto(ct.force, ws.force_saved)
        cloth.v.fill(0.0)
        return True
    if not finite or check:
        ws.last_change = stretch_change(st.x0, st.x_new, held.rest) if finite else math.inf
        if not finite or ws.last_change > s.max_stretch_change:
            np.copyto(ct.mode, ws.mode_saved)
            np.copyto(ct.force, ws.force_saved)
            return False
    collider_impulses(held.contacts, held.step, h, pushed, pushed_point)
    np.copyto(cloth.x, st.x_new)
    np.copyto(cloth.v, st.v_new)
    return True
