"""Implicit-cloth constraints: pins and collider contacts as the filter S, z and y of Baraff & Witkin 1998.

- Fully constrained particles (§5.1, eq. 13: S_i = 0): inverse mass 0. A held particle's prescribed
  velocity change is z_i = (target − x_i)/h − v_i, so it arrives at its pin target at the end of the
  (sub)step (and is then placed exactly there); a particle fixed for good (no pin) has target x_i,
  i.e. z_i = −v_i: it stays.
- Contacts with every collider of the ColliderSet (§5, §6): planes, spheres, capsules, cylinders,
  boxes, prisms and triangle meshes, through the signed distances of systems/shared/shapes.py in each
  collider's local frame, at its END-of-step pose (``collider_frames``). A sliding contact constrains
  one direction, S_i = I − n·nᵀ with z_i = −(n·v_i)·n (no normal velocity after the step); a sticking one
  all three, z_i = −v_i. Both get the position alteration y_i = depth·n (§6.2, eq. 17), which puts the
  particle at exactly ``reach`` = cloth thickness + collider thickness from the surface at the end of the
  step with no velocity jump (depth > 0: out of a penetration; depth < 0: down onto the surface it
  touches or is landing on); exact for flat faces, on or outside the surface for convex shapes.
  The collider's own velocity is ignored for now: contacts and friction act as if every collider were
  at rest where it ends the step (a moving collider sweeps cloth along only through y, and friction does
  not carry cloth riding on a moving platform, unlike systems/collision/environment.py).
- Contact forces (§5.4): after a solve the residual e = A·Δv − b at a constrained particle is the
  impulse its constraint supplied. A contact whose normal impulse pulls toward the surface (n·e < 0)
  is released; a sticking contact whose tangential impulse exceeds μ·(n·e) slides (Coulomb), and the
  step is solved again. A sliding contact carries a dissipative tangential force of magnitude μ·f_n
  opposite its slip (f_n its normal force at the end of the previous step), in the linear system as
  the damping −c·v_t, c = μ·f_n/|v_t|, so it is implicit and never reverses the slip; one slow enough
  for that force to stop it within the step sticks. μ = √(μ_cloth·μ_collider) as in systems/collision/environment.py.
- Contact initiation: particles touching or inside a collider at the start of the step (§6.1), plus
  any free particle the solved step would carry inside one: it becomes a contact landing on the surface
  (y < 0) and the step is solved again, so steps end on, never in, a collider.
- Two-way coupling: the momentum each accepted step's contacts took from their colliders is added,
  negated, to ``ColliderSet.impulse`` and ``impulse_point`` (``collider_impulses``), as the environment
  system does for the other models, so pymunk bodies feel implicit cloth.
One contact per particle: the deepest collider's (``Contacts.collider`` keeps its row). Friction acts
between the step's solves and its pass count is bounded (solver.CONTACT_PASSES).

The kernels take their arrays packed in named tuples, held (``loom.systems.shared.held``): ``Colliders``
(the ColliderSet's table with the end-of-step frames), ``Contacts`` (each particle's contact),
``StepVectors`` (a step's start, solution and end), block_sparse's ``Constraints`` (S, z, y) and forces'
``LinearSystem`` (A, b₀, ...).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from loom.engine.persist import persistent
from loom.systems.models.implicit.block_sparse import FIXED, FREE, NORMAL, zero_vectors
from loom.systems.shared.shapes import pose, sdf

NONE, SLIDE, STICK = 0, 1, 2
"""Contact modes of a particle (``mode`` (n,) int8)."""

TOUCH = 1e-9
"""A free particle closer to a surface than thickness + TOUCH [m] starts a contact."""


class Colliders(NamedTuple):
    """The ColliderSet's table as the contact kernels read it, at the end-of-step pose (k colliders)."""

    kind: np.ndarray
    """Shape kind, (k,) (systems.shared.shapes)."""
    params: np.ndarray
    """Shape parameters [m], (k, 4)."""
    margin: np.ndarray
    """Collider thickness, (k,) [m]."""
    friction: np.ndarray
    """Friction coefficient, (k,) [-]."""
    rot: np.ndarray
    """End-of-step rotation, (k, 3, 3) (``collider_frames``)."""
    pos: np.ndarray
    """End-of-step position, (k, 3) [m]."""
    polygons: np.ndarray
    """Every prism's polygon, (P, 2) [m]."""
    mesh: np.ndarray
    """TriangleMesh row of each collider, (k,) int32."""
    mv: np.ndarray
    """Every mesh's vertices, (V, 3) [m] (ColliderSet.mesh_arrays, like the next four)."""
    mt: np.ndarray
    """Every mesh's triangles, (T, 3) int32."""
    minfo: np.ndarray
    """Per mesh, (M, 10): grid origin (3) [m], cell size [m], grid shape (3), first triangle, mcell, mcelltri rows."""
    mcell: np.ndarray
    """Grid cells' first rows in mcelltri, int64."""
    mcelltri: np.ndarray
    """Triangles listed per grid cell, int32."""


@persistent
class Contacts(NamedTuple):
    """Each particle's collider contact (one per particle), kept across steps."""

    mode: np.ndarray
    """NONE, SLIDE or STICK, (n,) int8."""
    collider: np.ndarray
    """ColliderSet row of the contact, (n,) int32 (meaningful where mode != NONE)."""
    normal: np.ndarray
    """Outward unit surface normal, (n, 3)."""
    depth: np.ndarray
    """Reach − distance, (n,) [m] (> 0: penetrating; y = depth·n)."""
    mu: np.ndarray
    """Friction coefficient √(μ_cloth·μ_collider), (n,) [-]."""
    locked: np.ndarray
    """A landing this step, not to be released by the force test, (n,) bool."""
    friction: np.ndarray
    """Sliding friction damping c (``apply_friction``), (n,) [N·s/m]."""
    force: np.ndarray
    """Normal force at the end of the last step, (n,) [N] (drives next step's friction)."""
    impulse: np.ndarray
    """Kinetic friction impulse of a contact that started sliding this step, (n, 3) [N·s]."""

    @classmethod
    def zeros(cls, n: int) -> Contacts:
        """No contacts for n particles (collider rows −1)."""
        return cls(mode=np.zeros(n, np.int8), collider=np.full(n, -1, np.int32), normal=np.zeros((n, 3)),
                   depth=np.zeros(n), mu=np.zeros(n), locked=np.zeros(n, np.bool_), friction=np.zeros(n),
                   force=np.zeros(n), impulse=np.zeros((n, 3)))


@persistent
class StepVectors(NamedTuple):
    """One (sub)step's particle vectors, (n, 3) each."""

    x0: np.ndarray
    """Positions at the start [m]."""
    v0: np.ndarray
    """Velocities at the start [m/s]."""
    dv: np.ndarray
    """The solved Δv [m/s]."""
    e: np.ndarray
    """Residual e = A·Δv − b [N·s]: at a constrained particle, its constraint's impulse (§5.4)."""
    x_new: np.ndarray
    """Positions at the end [m] (eq. 17)."""
    v_new: np.ndarray
    """Velocities at the end [m/s]."""

    @classmethod
    def zeros(cls, n: int) -> StepVectors:
        """Vectors for n particles."""
        return zero_vectors(cls, n)


@numba.njit(cache=True)
def collider_frames(pose0, pose1, rot, pos):
    """Write every collider's end-of-step rotation rot (k, 3, 3) and position pos (k, 3) [m] (pose at 1)."""
    for c in range(pose1.shape[0]):
        pose(pose0, pose1, c, 1.0, rot[c], pos[c])


@numba.njit(cache=True)
def _distance(colliders, c, px, py, pz, sd):
    """Signed distance [m] from world point p to collider c's surface and its outward world normal.

    World → local with the end-of-step frame, shared.shapes.sdf there, normal back to world (as
    systems/collision/environment.py's _collide). colliders: the Colliders; sd (4,) is scratch.
    Returns (distance, nx, ny, nz)."""
    r = colliders.rot[c]
    pos = colliders.pos
    dx, dy, dz = px - pos[c, 0], py - pos[c, 1], pz - pos[c, 2]
    lx = r[0, 0] * dx + r[1, 0] * dy + r[2, 0] * dz
    ly = r[0, 1] * dx + r[1, 1] * dy + r[2, 1] * dz
    lz = r[0, 2] * dx + r[1, 2] * dy + r[2, 2] * dz
    sdf(colliders, c, lx, ly, lz, sd)                  # Colliders has every field of shapes.Shapes
    nx = r[0, 0] * sd[1] + r[0, 1] * sd[2] + r[0, 2] * sd[3]
    ny = r[1, 0] * sd[1] + r[1, 1] * sd[2] + r[1, 2] * sd[3]
    nz = r[2, 0] * sd[1] + r[2, 1] * sd[2] + r[2, 2] * sd[3]
    return sd[0], nx, ny, nz


@numba.njit(cache=True)
def _deepest(colliders, thickness, px, py, pz, sd):
    """Deepest collider at world point p: (depth = reach − distance [m], nx, ny, nz, row; −1 if none).

    reach = thickness + the collider's margin; depth −inf with no collider."""
    margin = colliders.margin
    best = -math.inf
    bx, by, bz, row = 0.0, 1.0, 0.0, -1
    for c in range(margin.shape[0]):
        d, nx, ny, nz = _distance(colliders, c, px, py, pz, sd)
        depth = thickness + margin[c] - d
        if depth > best:
            best, bx, by, bz, row = depth, nx, ny, nz, c
    return best, bx, by, bz, row


@numba.njit(cache=True)
def detect_contacts(colliders, thickness, friction, keep, inv_mass, x, contacts):
    """Start-of-step contacts (§6.1): touching or penetrating particles, and kept contacts within ``keep``.

    colliders: the held Colliders; thickness [m] and friction [-] of the cloth; keep [m]: an existing contact
    stays while its particle is within reach + keep (the force test releases it); inv_mass (n,); x (n, 3)
    [m]. Updates the held Contacts' mode and writes its collider, normal, depth and mu; clears locked."""
    table = colliders.value
    mode, collider, normal, depth, mu, locked, _, _, _ = contacts.value
    sd = np.empty(4)
    mixed = table.friction
    for p in range(x.shape[0]):
        locked[p] = False
        if inv_mass[p] == 0.0:
            mode[p] = NONE
            continue
        d, nx, ny, nz, c = _deepest(table, thickness, x[p, 0], x[p, 1], x[p, 2], sd)
        limit = -keep if mode[p] != NONE else -TOUCH
        if c >= 0 and d > limit:
            if mode[p] == NONE:
                mode[p] = SLIDE
            collider[p] = c
            normal[p, 0] = nx
            normal[p, 1] = ny
            normal[p, 2] = nz
            depth[p] = d
            mu[p] = math.sqrt(friction * mixed[c])
        else:
            mode[p] = NONE


@numba.njit(cache=True)
def pin_targets(x, end, fraction, inv_mass, target):
    """Where each fully constrained particle must be at the end of this (sub)step [m].

    x (n, 3) now; end (n, 3) the targets at the end of the fixed step; fraction ∈ (0, 1] the part of the
    remaining time this sub-step covers. Writes target (n, 3) for inv_mass == 0 (exactly end at 1)."""
    for p in range(x.shape[0]):
        if inv_mass[p] != 0.0:
            continue
        for c in range(3):
            if fraction >= 1.0:
                target[p, c] = end[p, c]
            else:
                target[p, c] = x[p, c] + fraction * (end[p, c] - x[p, c])


@numba.njit(cache=True)
def build_filter(inv_mass, target, contacts, x, v, h, constraints):
    """Fill the filter (eq. 13), z (§5.1) [m/s] and y (eq. 17) [m] of every particle for a step of h [s].

    inv_mass (n,); target (n, 3) [m] (``pin_targets``); contacts: the held Contacts; x, v (n, 3) at the start
    of the step. Writes every row of the held constraints (block_sparse.Constraints: kind, normal, z, y)."""
    mode, _, normal, depth, _, _, _, _, _ = contacts.value
    kind, nrm, z, y = constraints.value
    for p in range(x.shape[0]):
        for c in range(3):
            z[p, c] = 0.0
            y[p, c] = 0.0
        if inv_mass[p] == 0.0:
            kind[p] = FIXED
            for c in range(3):
                z[p, c] = (target[p, c] - x[p, c]) / h - v[p, c]
        elif mode[p] == NONE:
            kind[p] = FREE
        else:
            vn = v[p, 0] * normal[p, 0] + v[p, 1] * normal[p, 1] + v[p, 2] * normal[p, 2]
            for c in range(3):
                nrm[p, c] = normal[p, c]
                y[p, c] = depth[p] * normal[p, c]
                z[p, c] = -v[p, c] if mode[p] == STICK else -vn * normal[p, c]
            kind[p] = FIXED if mode[p] == STICK else NORMAL


@numba.njit(cache=True)
def apply_friction(mass, contacts, v, h, diag, system):
    """Start-of-step Coulomb friction of sliding contacts (§5.4), from last step's normal force.

    mass (n,) [kg]; contacts: the held Contacts, whose force (n,) [N] is each contact's normal force at the end of
    the previous step; v (n, 3) [m/s]; h [s]; diag (n,) block slots. A sliding contact that friction
    μ·force could stop within the step, |v_t| ≤ μ·force·h/m, sticks ("lock the particle onto the surface if
    the relative tangential velocity is low"); a faster one gets the dissipative force −c·v_t with
    c = μ·force/|v_t| [N·s/m] (magnitude μ·force, opposite the slip), taken implicitly:
    ∂f/∂v = −c·(I − n·nᵀ), so A += h·c·(I − n·nᵀ). Writes contacts.friction = c (and mode, on sticking)
    and adds to the held LinearSystem's A (nnz, 3, 3) and f (n, 3)."""
    mode, _, normal, _, mu, _, friction, force, _ = contacts.value
    A, _, f, _, _ = system.value
    for p in range(mass.shape[0]):
        friction[p] = 0.0
        if mode[p] != SLIDE or force[p] <= 0.0:
            continue
        nx, ny, nz = normal[p, 0], normal[p, 1], normal[p, 2]
        vn = v[p, 0] * nx + v[p, 1] * ny + v[p, 2] * nz
        tx = v[p, 0] - vn * nx
        ty = v[p, 1] - vn * ny
        tz = v[p, 2] - vn * nz
        speed = math.sqrt(tx * tx + ty * ty + tz * tz)
        if speed <= mu[p] * force[p] * h / mass[p]:
            mode[p] = STICK
            continue
        c = mu[p] * force[p] / speed
        friction[p] = c
        _add_tangent_damping(A, diag[p], nx, ny, nz, h * c)
        f[p, 0] -= c * tx
        f[p, 1] -= c * ty
        f[p, 2] -= c * tz


@numba.njit(cache=True)
def _add_tangent_damping(A, slot, nx, ny, nz, scale):
    """A[slot] += scale·(I − n·nᵀ)."""
    nv = (nx, ny, nz)
    for i in range(3):
        for j in range(3):
            A[slot, i, j] += scale * ((1.0 if i == j else 0.0) - nv[i] * nv[j])


@numba.njit(cache=True)
def update_contacts(step, colliders, inv_mass, diag, thickness, friction_cloth, h, release, contacts, system):
    """Revise the contact set after a solve (§5.4, §6.1); return how many particles changed.

    step: the held StepVectors — e = A·Δv − b [N·s], x0, v0 at the start of the step, dv the solved Δv;
    colliders: the held Colliders; inv_mass (n,); diag (n,) block slots; thickness [m] and friction_cloth [-]
    of the cloth; h [s]; release: False on the last revision, which only adds landings, so the last solve
    ends on no surface. Updates the held contacts (Contacts):
    - a contact pulled toward its surface (n·e < 0, unless locked) is released, and its friction
      damping taken out of the held system's A and b0 (LinearSystem);
    - a sticking contact whose tangential impulse e_t exceeds μ·(n·e) slides, with the kinetic friction
      impulse μ·(n·e) along e_t (opposing the slip it starts) written to contacts.impulse, a term of b;
    - a free particle the step would carry inside a collider becomes a locked sliding contact, normal
      and depth measured at x so its y lands it on the surface (frictionless for this step); its
      collider row is written."""
    x, v, dv, e, _, _ = step.value
    mode, collider, normal, depth, mu, locked, friction, _, impulse = contacts.value
    A, _, _, b0, _ = system.value
    table = colliders.value
    sd = np.empty(4)
    mixed = table.friction
    changed = 0
    for p in range(x.shape[0]):
        if inv_mass[p] == 0.0:
            continue
        if mode[p] != NONE:
            if not release:
                continue
            nx, ny, nz = normal[p, 0], normal[p, 1], normal[p, 2]
            en = e[p, 0] * nx + e[p, 1] * ny + e[p, 2] * nz
            if en < 0.0 and not locked[p]:
                if friction[p] > 0.0:                         # undo apply_friction's terms
                    c = friction[p]
                    _add_tangent_damping(A, diag[p], nx, ny, nz, -h * c)
                    vn = v[p, 0] * nx + v[p, 1] * ny + v[p, 2] * nz
                    b0[p, 0] += h * c * (v[p, 0] - vn * nx)
                    b0[p, 1] += h * c * (v[p, 1] - vn * ny)
                    b0[p, 2] += h * c * (v[p, 2] - vn * nz)
                    friction[p] = 0.0
                mode[p] = NONE
                for c3 in range(3):
                    impulse[p, c3] = 0.0
                changed += 1
            elif mode[p] == STICK:
                tx = e[p, 0] - en * nx
                ty = e[p, 1] - en * ny
                tz = e[p, 2] - en * nz
                et = math.sqrt(tx * tx + ty * ty + tz * tz)
                if et > mu[p] * en:
                    mode[p] = SLIDE
                    scale = mu[p] * en / et
                    impulse[p, 0] = scale * tx
                    impulse[p, 1] = scale * ty
                    impulse[p, 2] = scale * tz
                    changed += 1
            continue
        px = x[p, 0] + h * (v[p, 0] + dv[p, 0])
        py = x[p, 1] + h * (v[p, 1] + dv[p, 1])
        pz = x[p, 2] + h * (v[p, 2] + dv[p, 2])
        d, nx, ny, nz, c = _deepest(table, thickness, px, py, pz, sd)
        if c < 0 or d <= 0.0:
            continue
        # the collider it ends in: normal and depth at the start position, where y is measured
        dist, nx, ny, nz = _distance(table, c, x[p, 0], x[p, 1], x[p, 2], sd)
        mode[p] = SLIDE
        locked[p] = True
        collider[p] = c
        normal[p, 0] = nx
        normal[p, 1] = ny
        normal[p, 2] = nz
        depth[p] = thickness + table.margin[c] - dist
        mu[p] = math.sqrt(friction_cloth * mixed[c])
        changed += 1
    return changed


@numba.njit(cache=True)
def finish_step(step, y, h, inv_mass, target, contacts):
    """New state from Δv (eq. 17: Δx = h·(v + Δv) + y); fully constrained particles exactly on target.

    step: the held StepVectors (x0, v0 at the start, dv, e = A·Δv − b [N·s]); y (n, 3) [m]; h [s]; inv_mass
    (n,); target (n, 3) [m]. Writes step.x_new, step.v_new and each contact's normal force n·e/h [N] (0 if
    pulling) into the held contacts' force (Contacts). Returns True if every new position and velocity is
    finite."""
    x, v, dv, e, x_new, v_new = step.value
    mode, _, normal, _, _, _, _, force, _ = contacts.value
    finite = True
    for p in range(x.shape[0]):
        force[p] = 0.0
        for c in range(3):
            v_new[p, c] = v[p, c] + dv[p, c]
        if inv_mass[p] == 0.0:
            for c in range(3):
                x_new[p, c] = target[p, c]
                if not math.isfinite(v_new[p, c]):
                    finite = False
            continue
        if mode[p] != NONE:
            en = e[p, 0] * normal[p, 0] + e[p, 1] * normal[p, 1] + e[p, 2] * normal[p, 2]
            force[p] = max(en, 0.0) / h
        for c in range(3):
            x_new[p, c] = x[p, c] + h * v_new[p, c] + y[p, c]
            if not (math.isfinite(x_new[p, c]) and math.isfinite(v_new[p, c])):
                finite = False
    return finite


@numba.njit(cache=True)
def collider_impulses(contacts, step, h, out, out_point):
    """Add, negated, the momentum each contact gave its particle over an accepted step to its collider.

    The momentum a contact gave particle p [N·s] (§5.4): its constraint impulse from the residual
    e (n, 3) = A·Δv − b — the normal part (n·e)·n of a sliding contact (the rest is CG error), all of e
    for a sticking one (static friction included) — plus kinetic friction: ``impulse`` (n, 3), the
    Coulomb impulse of a contact that started sliding in this step, and −h·c·v_t of one that slid from
    the start (c = friction (n,) [N·s/m], taken implicitly, so at the new velocity v_new (n, 3)). The
    collider receives minus that (Newton's third law), so a sheet resting on it pushes it with its weight
    per unit time. The residual is used rather than m·Δv, which is the whole momentum change (gravity,
    the cloth's own forces) and is zero for cloth at rest. An attractive n·e left by the last solve is
    passed on as it acted; the position alteration y moves particles without momentum and is not.
    Accumulates out (k, 3) [N·s] and out_point (k, 4) (Σ|J|·x_new [N·s·m], Σ|J| [N·s]) as
    systems/collision/environment.py does. contacts: the held Contacts; step: the held StepVectors (e, x_new,
    v_new are read)."""
    mode, collider, normal, _, _, _, friction, _, impulse = contacts.value
    _, _, _, e, x_new, v_new = step.value
    for p in range(mode.shape[0]):
        if mode[p] == NONE:
            continue
        c = collider[p]
        nx, ny, nz = normal[p, 0], normal[p, 1], normal[p, 2]
        if mode[p] == STICK:
            jx, jy, jz = e[p, 0], e[p, 1], e[p, 2]
        else:
            en = e[p, 0] * nx + e[p, 1] * ny + e[p, 2] * nz
            jx, jy, jz = en * nx, en * ny, en * nz
            jx += impulse[p, 0]
            jy += impulse[p, 1]
            jz += impulse[p, 2]
            if friction[p] > 0.0:
                vn = v_new[p, 0] * nx + v_new[p, 1] * ny + v_new[p, 2] * nz
                k = h * friction[p]
                jx -= k * (v_new[p, 0] - vn * nx)
                jy -= k * (v_new[p, 1] - vn * ny)
                jz -= k * (v_new[p, 2] - vn * nz)
        jn = math.sqrt(jx * jx + jy * jy + jz * jz)
        out[c, 0] -= jx
        out[c, 1] -= jy
        out[c, 2] -= jz
        out_point[c, 0] += jn * x_new[p, 0]
        out_point[c, 1] += jn * x_new[p, 1]
        out_point[c, 2] += jn * x_new[p, 2]
        out_point[c, 3] += jn
