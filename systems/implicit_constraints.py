"""Implicit-cloth constraints: pins and collider contacts as the filter S, z and y of Baraff & Witkin 1998.

- Fully constrained particles (§5.1, eq. 13: S_i = 0): inverse mass 0. A held particle's prescribed
  velocity change is z_i = (target − x_i)/h − v_i, so it arrives at its pin target at the end of the
  (sub)step (and is then placed exactly there); a particle fixed for good (no pin) has target x_i,
  i.e. z_i = −v_i: it stays.
- Contacts with the ColliderSet's spheres and planes (§5, §6): a sliding contact constrains one
  direction, S_i = I − n·nᵀ with z_i = −(n·v_i)·n (no normal velocity after the step); a sticking one
  all three, z_i = −v_i. Both get the position alteration y_i = depth·n (§6.2, eq. 17), which puts the
  particle at exactly ``thickness`` from the surface at the end of the step with no velocity jump
  (depth > 0: out of a penetration; depth < 0: down onto the surface it touches or is landing on).
- Contact forces (§5.4): after a solve the residual e = A·Δv − b at a constrained particle is the
  impulse its constraint supplied. A contact whose normal impulse pulls toward the surface (n·e < 0)
  is released; a sticking contact whose tangential impulse exceeds μ·(n·e) slides (Coulomb), and the
  step is solved again. A sliding contact carries a dissipative tangential force of magnitude μ·f_n
  opposite its slip (f_n its normal force at the end of the previous step), in the linear system as
  the damping −c·v_t, c = μ·f_n/|v_t|, so it is implicit and never reverses the slip; one slow enough
  for that force to stop it within the step sticks. μ = √(μ_cloth·μ_collider) as in systems/environment.py.
- Contact initiation: particles touching or inside a collider at the start of the step (§6.1), plus
  any free particle the solved step would carry inside one: it becomes a contact landing on the surface
  (y < 0) and the step is solved again, so steps end on, never in, a collider.
One contact per particle: the deepest collider's. Friction acts between the step's solves and its
pass count is bounded (systems/implicit.CONTACT_PASSES).
"""
from __future__ import annotations

import math

import numba

from systems.block_sparse import FIXED, FREE, NORMAL

NONE, SLIDE, STICK = 0, 1, 2
"""Contact modes of a particle (``mode`` (n,) int8)."""

TOUCH = 1e-9
"""A free particle closer to a surface than thickness + TOUCH [m] starts a contact."""


@numba.njit(cache=True)
def _deepest(spheres, planes, thickness, px, py, pz):
    """Deepest collider at point p: (depth = reach − distance [m], nx, ny, nz, friction, found)."""
    best = -math.inf
    bx, by, bz, bmu = 0.0, 1.0, 0.0, 0.0
    for s in range(spheres.shape[0]):
        dx = px - spheres[s, 0]
        dy = py - spheres[s, 1]
        dz = pz - spheres[s, 2]
        dist = math.sqrt(dx * dx + dy * dy + dz * dz)
        depth = spheres[s, 3] + thickness - dist
        if depth > best:
            best = depth
            bmu = spheres[s, 4]
            if dist < 1e-12:                           # at the centre: leave upwards
                bx, by, bz = 0.0, 1.0, 0.0
            else:
                bx, by, bz = dx / dist, dy / dist, dz / dist
    for q in range(planes.shape[0]):
        nx, ny, nz = planes[q, 3], planes[q, 4], planes[q, 5]
        side = (px - planes[q, 0]) * nx + (py - planes[q, 1]) * ny + (pz - planes[q, 2]) * nz
        depth = planes[q, 6] + thickness - side
        if depth > best:
            best = depth
            bx, by, bz, bmu = nx, ny, nz, planes[q, 7]
    return best, bx, by, bz, bmu


@numba.njit(cache=True)
def detect_contacts(spheres, planes, thickness, friction, keep, inv_mass, x, mode, normal, depth, mu, locked):
    """Start-of-step contacts (§6.1): touching or penetrating particles, and kept contacts within ``keep``.

    spheres (s, 6), planes (p, 8) as in ColliderSet; thickness [m] and friction [-] of the cloth; keep [m]:
    an existing contact stays while its particle is within reach + keep (the force test releases it);
    inv_mass (n,); x (n, 3) [m]. Updates mode (n,) int8 and writes normal (n, 3), depth (n,) [m],
    mu (n,) [-]; clears locked (n,) bool."""
    for p in range(x.shape[0]):
        locked[p] = False
        if inv_mass[p] == 0.0:
            mode[p] = NONE
            continue
        d, nx, ny, nz, m = _deepest(spheres, planes, thickness, x[p, 0], x[p, 1], x[p, 2])
        limit = -keep if mode[p] != NONE else -TOUCH
        if d > limit:
            if mode[p] == NONE:
                mode[p] = SLIDE
            normal[p, 0] = nx
            normal[p, 1] = ny
            normal[p, 2] = nz
            depth[p] = d
            mu[p] = math.sqrt(friction * m)
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
def build_filter(inv_mass, target, mode, normal, depth, x, v, h, kind, nrm, z, y):
    """Fill the filter (eq. 13), z (§5.1) [m/s] and y (eq. 17) [m] of every particle for a step of h [s].

    Writes kind (n,) int8 (FREE, NORMAL, FIXED), nrm (n, 3), z (n, 3), y (n, 3)."""
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
def apply_friction(mass, mode, normal, mu, force, v, h, diag, friction, A, f):
    """Start-of-step Coulomb friction of sliding contacts (§5.4), from last step's normal force.

    mass (n,) [kg]; force (n,) [N]: each contact's normal force at the end of the previous step; v (n, 3)
    [m/s]; h [s]; diag (n,) block slots. A sliding contact that friction μ·force could stop within the step,
    |v_t| ≤ μ·force·h/m, sticks ("lock the particle onto the surface if the relative tangential velocity
    is low"); a faster one gets the dissipative force −c·v_t with c = μ·force/|v_t| [N·s/m] (magnitude
    μ·force, opposite the slip), taken implicitly: ∂f/∂v = −c·(I − n·nᵀ), so A += h·c·(I − n·nᵀ).
    Writes friction (n,) = c and adds to A (nnz, 3, 3) and f (n, 3)."""
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
def update_contacts(e, x, v, dv, h, spheres, planes, thickness, friction_cloth, inv_mass, diag, release,
                    mode, normal, depth, mu, locked, friction, A, b0, impulse):
    """Revise the contact set after a solve (§5.4, §6.1); return how many particles changed.

    e (n, 3) = A·Δv − b [N·s]; x, v (n, 3) at the start of the step; dv (n, 3) the solved Δv; h [s];
    release: False on the last revision, which only adds landings, so the last solve ends on no surface.
    - a contact pulled toward its surface (n·e < 0, unless locked) is released, and its friction
      damping taken out of A and b₀;
    - a sticking contact whose tangential impulse e_t exceeds μ·(n·e) slides, with the kinetic friction
      impulse μ·(n·e) along e_t (opposing the slip it starts) added to ``impulse`` (n, 3), a term of b;
    - a free particle the step would carry inside a collider becomes a locked sliding contact, normal
      and depth measured at x so its y lands it on the surface (frictionless for this step)."""
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
        d, nx, ny, nz, m = _deepest(spheres, planes, thickness, px, py, pz)
        if d <= 0.0:
            continue
        # the collider it ends in: normal and depth at the start position, where y is measured
        d0, nx, ny, nz, m = _depth_at(spheres, planes, thickness, px, py, pz, x[p, 0], x[p, 1], x[p, 2])
        mode[p] = SLIDE
        locked[p] = True
        normal[p, 0] = nx
        normal[p, 1] = ny
        normal[p, 2] = nz
        depth[p] = d0
        mu[p] = math.sqrt(friction_cloth * m)
        changed += 1
    return changed


@numba.njit(cache=True)
def _depth_at(spheres, planes, thickness, px, py, pz, sx, sy, sz):
    """Depth [m] and normal at start point s of the collider deepest at end point p (found again by p)."""
    best = -math.inf
    kind = -1
    index = -1
    for s in range(spheres.shape[0]):
        dx = px - spheres[s, 0]
        dy = py - spheres[s, 1]
        dz = pz - spheres[s, 2]
        depth = spheres[s, 3] + thickness - math.sqrt(dx * dx + dy * dy + dz * dz)
        if depth > best:
            best, kind, index = depth, 0, s
    for q in range(planes.shape[0]):
        side = ((px - planes[q, 0]) * planes[q, 3] + (py - planes[q, 1]) * planes[q, 4]
                + (pz - planes[q, 2]) * planes[q, 5])
        depth = planes[q, 6] + thickness - side
        if depth > best:
            best, kind, index = depth, 1, q
    if kind == 0:
        dx = sx - spheres[index, 0]
        dy = sy - spheres[index, 1]
        dz = sz - spheres[index, 2]
        dist = math.sqrt(dx * dx + dy * dy + dz * dz)
        if dist < 1e-12:
            return spheres[index, 3] + thickness, 0.0, 1.0, 0.0, spheres[index, 4]
        return spheres[index, 3] + thickness - dist, dx / dist, dy / dist, dz / dist, spheres[index, 4]
    q = index
    nx, ny, nz = planes[q, 3], planes[q, 4], planes[q, 5]
    side = (sx - planes[q, 0]) * nx + (sy - planes[q, 1]) * ny + (sz - planes[q, 2]) * nz
    return planes[q, 6] + thickness - side, nx, ny, nz, planes[q, 7]


@numba.njit(cache=True)
def finish_step(x, v, dv, y, e, h, inv_mass, target, mode, normal, x_new, v_new, force):
    """New state from Δv (eq. 17: Δx = h·(v + Δv) + y); fully constrained particles exactly on target.

    x, v (n, 3) at the start; dv, y (n, 3); e (n, 3) = A·Δv − b [N·s]; h [s]; target (n, 3).
    Writes x_new, v_new (n, 3) and each contact's normal force n·e/h [N] (0 if pulling) into force (n,).
    Returns True if every new position and velocity is finite."""
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
