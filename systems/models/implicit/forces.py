"""Implicit-cloth forces: Baraff & Witkin 1998 §4 conditions, their forces, damping and derivatives.

Every internal force comes from a condition C(x) that is zero at rest, with energy E = ½·k·CᵀC:
- stretch (eq. 10): C = a·(‖w_u‖ − b_u, ‖w_v‖ − b_v) per triangle, with (w_u w_v) = (Δx₁ Δx₂)·D⁻¹
  (eq. 9; D the triangle's uv edge matrix) and a its uv area;
- shear (§4.3): C = a·w_uᵀw_v per triangle;
- bend (§4.3): C = θ − θ₀ per pair of adjacent triangles, θ the signed dihedral angle
  (sin θ = (n₁ × n₂)·e, cos θ = n₁·n₂), not scaled by area (footnote 5), with the k_u/k_v
  anisotropic weighting (k_u·Δu² + k_v·Δv²)/(Δu² + Δv²) of the shared edge's uv extent
  (ImplicitSettings.bend_stiffness is k_u, bend_stiffness_v is k_v; equal by default).

For each condition: force f = −k·(∂C/∂x)ᵀC (eq. 7), ∂f/∂x = −k·(JᵀJ + (∂²C/∂x²)·C) (eq. 8),
damping d = −k_d·(∂C/∂x)ᵀĊ (eq. 11), ∂d/∂v = −k_d·JᵀJ and ∂d/∂x = −k_d·(∂²C/∂x²)·Ċ — eq. 12
without its asymmetric term J_iᵀ·(∂Ċ/∂x_j), which the paper drops to keep A symmetric (§4.5;
``asymmetric_damping`` adds it back, for tests). All derivatives are exact and closed form, so
they match finite differences of the forces; the bend Hessian is exact too (the paper instead treats
n₁, n₂ and e as constant-length, §4.3), by the chain rule through E = x_e1 − x_e0, A = x_o0 − x_e0,
B = x_o1 − x_e1, for which θ = atan2(−|E|·det[E, A, B], (E·A)(E·B) − |E|²(A·B)).

Units. ImplicitSettings gives stretch and shear stiffness k in N/m (damping k_d in N·s/m): an energy
per unit area, ½·k·strain². With the paper's area-scaled C [m²] that is a per-triangle constant
k/a [N/m³] (k is "a stiffness constant of our choice", §4.1), so the same sheet behaves the same at
any resolution. The bend condition is an angle [rad]: k [N·m], k_d [N·m·s], used as given.

Definiteness. A must be positive definite for CG (§5.2, footnote 6), but the exact second-derivative
terms (∂²C/∂x²)·(k·C + k_d·Ċ) are not: the stretch Hessian is positive semi-definite times a coefficient
that turns negative under compression (buckling), and the shear Hessian a·(du·dvᵀ + dv·duᵀ)⊗I always has
one negative eigenvalue. With ``definite`` the matrix (A and K, not the forces) keeps only their positive
semi-definite parts: the stretch coefficient clamped at 0, and the shear term's eigenvalue of the
coefficient's sign (closed form). The bend term is kept exact. solver.DEFINITE records the
measurements behind this default.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from loom.engine.persist import persistent

DEGENERATE = 1e-12
"""Lengths [m] (‖w‖, |E|) below which an element's derivatives are skipped for that step."""
EXACT, CLAMPED, SCALED = 0, 1, 2
"""How ``_accumulate`` uses a condition's Hessian (see there)."""


# --- what the kernels take, packed -------------------------------------------------------------------
@persistent
class RestShape(NamedTuple):
    """A cloth's rest data as the conditions use it, built once per topology (ImplicitWorkspace)."""

    triangles: np.ndarray
    """Particle indices of each triangle, (t, 3) int."""
    du: np.ndarray
    """Weights of w_u = Σ du[m]·x_m (eq. 9), (t, 3) [1/m] (``rest_frames``)."""
    dv: np.ndarray
    """Weights of w_v = Σ dv[m]·x_m (eq. 9), (t, 3) [1/m]."""
    area: np.ndarray
    """uv area a of each triangle, (t,) [m²]."""
    quads: np.ndarray
    """Bend quads (e0, e1, o0, o1): shared edge, then the opposite corners, (b, 4) int."""
    rest_angle: np.ndarray
    """Rest dihedral angle θ₀ of each quad, (b,) [rad] (Cloth.bend_rest_angle)."""
    bend_frac: np.ndarray
    """Δu²/(Δu² + Δv²) of each quad's shared edge, (b,) [-] (``bend_u_fraction``)."""


class Coefficients(NamedTuple):
    """The conditions' constants (module docstring, Units), built per step from ImplicitSettings."""

    k_stretch: float
    """Stretch stiffness per unit area [N/m] (eq. 10)."""
    kd_stretch: float
    """Stretch damping per unit area [N·s/m] (eq. 11)."""
    k_shear: float
    """Shear stiffness per unit area [N/m] (§4.3)."""
    kd_shear: float
    """Shear damping per unit area [N·s/m]."""
    k_bend_u: float
    """Bend stiffness across u [N·m] (§4.3)."""
    k_bend_v: float
    """Bend stiffness across v [N·m]."""
    kd_bend_u: float
    """Bend damping across u [N·m·s]."""
    kd_bend_v: float
    """Bend damping across v [N·m·s]."""
    b_u: float
    """Rest stretch along u [-] (eq. 10; 1: no stretch)."""
    b_v: float
    """Rest stretch along v [-]."""

    @classmethod
    def of(cls, settings) -> Coefficients:
        """From an ImplicitSettings (bend_stiffness_v None: k_v = k_u; bend damping is isotropic)."""
        s = settings
        k_bend_v = s.bend_stiffness if s.bend_stiffness_v is None else s.bend_stiffness_v
        return cls(*(float(k) for k in (s.stretch_stiffness, s.stretch_damping, s.shear_stiffness, s.shear_damping,
                                        s.bend_stiffness, k_bend_v, s.bend_damping, s.bend_damping, s.b_u, s.b_v)))


class Loads(NamedTuple):
    """What acts on the particles besides the conditions (assembled into f₀ and the diagonal of A)."""

    mass: np.ndarray
    """Particle masses, (n,) [kg]."""
    gravity: np.ndarray
    """Gravitational acceleration, (3,) [m/s²]."""
    force: np.ndarray
    """External forces (wind, user), (n, 3) [N]."""
    drag: float
    """Air drag −m·drag·v [1/s] (§4.4, the material's damping)."""


@persistent
class LinearSystem(NamedTuple):
    """The step's matrices and vectors, (eq. 18): A·Δv = b; block values on a BlockPattern."""

    A: np.ndarray
    """A = M − h·∂f/∂v − h²·∂f/∂x (eq. 16), (nnz, 3, 3) [kg]."""
    K: np.ndarray
    """K = ∂f/∂x (eq. 8), (nnz, 3, 3) [N/m]."""
    f: np.ndarray
    """f₀, every force at the start of the step, (n, 3) [N]."""
    b0: np.ndarray
    """b₀ = h·(f₀ + h·K·v₀), (n, 3) [N·s]."""
    b: np.ndarray
    """b = b₀ + h·K·y plus the friction impulses of new sliders, (n, 3) [N·s]."""


class _Element(NamedTuple):
    """The triangle or quad ``assemble`` is adding (built inside the kernel)."""

    nodes: np.ndarray
    """Its particles, the first p of (4,) int64."""
    p: int
    """Particle count: 3 (triangle) or 4 (bend quad)."""
    v: np.ndarray
    """Their velocities, the first 3p of (12,) [m/s]."""
    hv: np.ndarray
    """Scratch (12,)."""


# --- rest data (numpy, once per topology) ---------------------------------------------------------
def rest_frames(triangles: np.ndarray, rest_uv: np.ndarray, rest_x: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per triangle the weights of eq. 9 and the uv area: w_u = Σ du[m]·x_m, w_v = Σ dv[m]·x_m.

    triangles (t, 3); rest_uv (n, 2) [m]; rest_x (n, 3) [m]. Returns du, dv (t, 3) [1/m] and area (t,) [m²].
    A triangle whose uv area is zero (a cloth built without material coordinates) gets its own planar
    frame from rest_x instead (footnote 3: uv may depend on the triangle)."""
    uv = rest_uv[triangles]                                              # (t, 3, 2)
    det = ((uv[:, 1, 0] - uv[:, 0, 0]) * (uv[:, 2, 1] - uv[:, 0, 1])
           - (uv[:, 2, 0] - uv[:, 0, 0]) * (uv[:, 1, 1] - uv[:, 0, 1]))
    flat = np.abs(det) <= 1e-14
    if flat.any():
        p = rest_x[triangles[flat]]
        e1, e2 = p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]
        ax = e1 / np.linalg.norm(e1, axis=1)[:, None]
        normal = np.cross(e1, e2)
        ay = np.cross(normal, ax)
        ay /= np.linalg.norm(ay, axis=1)[:, None]
        local = np.zeros((p.shape[0], 3, 2))
        local[:, 1, 0] = np.einsum("ij,ij->i", e1, ax)
        local[:, 2, 0] = np.einsum("ij,ij->i", e2, ax)
        local[:, 2, 1] = np.einsum("ij,ij->i", e2, ay)
        uv = uv.copy()
        uv[flat] = local
    du1, du2 = uv[:, 1, 0] - uv[:, 0, 0], uv[:, 2, 0] - uv[:, 0, 0]
    dv1, dv2 = uv[:, 1, 1] - uv[:, 0, 1], uv[:, 2, 1] - uv[:, 0, 1]
    det = du1 * dv2 - du2 * dv1
    wu = np.stack([np.zeros_like(det), dv2 / det, -dv1 / det], axis=1)   # (Δx1 Δx2)·D⁻¹, first column
    wv = np.stack([np.zeros_like(det), -du2 / det, du1 / det], axis=1)   # second column
    wu[:, 0] = -(wu[:, 1] + wu[:, 2])
    wv[:, 0] = -(wv[:, 1] + wv[:, 2])
    return np.ascontiguousarray(wu), np.ascontiguousarray(wv), np.abs(det) / 2.0


def bend_u_fraction(quads: np.ndarray, rest_uv: np.ndarray) -> np.ndarray:
    """Δu²/(Δu² + Δv²) of each quad's shared edge (§4.3), (b,): bend stiffness = k_u·frac + k_v·(1 − frac)."""
    d = rest_uv[quads[:, 0]] - rest_uv[quads[:, 1]]
    sq = (d * d).sum(axis=1)
    return np.where(sq > 0.0, d[:, 0] ** 2 / np.where(sq > 0.0, sq, 1.0), 0.5)


# --- assembly --------------------------------------------------------------------------------------
@numba.njit(cache=True)
def assemble(x, v, loads, rest, coefficients, pattern, h, definite, asymmetric_damping, system):
    """Evaluate f₀ and fill A = M − h·∂f/∂v − h²·∂f/∂x (eq. 16) and K = ∂f/∂x (eq. 8 + kept eq. 12).

    x (n, 3) [m], v (n, 3) [m/s]; held (``loom.systems.shared.held``): loads, the Loads (mass, gravity,
    external forces and air drag); rest, the RestShape; coefficients, the conditions' Coefficients; pattern,
    the BlockPattern of its triangles and quads (block_sparse.build_pattern); system, the LinearSystem; h [s]; definite: use the positive semi-definite parts of the
    stretch and shear (∂²C/∂x²)·(k·C + k_d·Ċ) terms in A and K (module docstring); asymmetric_damping: add
    eq. 12's dropped term (tests only). Writes system.A, system.K (nnz, 3, 3) [kg], [N/m] and system.f (n, 3)
    [N] (all forces at (x, v)); b0 and b are left alone."""
    A, K, f, _, _ = system.value
    out = (A, K, f)                             # what _accumulate adds to (the whole system: ~1–2 % slower)
    mass, gravity, f_ext, drag = loads.value
    shape, coeff = rest.value, coefficients.value
    triangles, quads, rest_angle, bend_frac = shape.triangles, shape.quads, shape.rest_angle, shape.bend_frac
    k_stretch, kd_stretch, k_shear, kd_shear, k_bend_u, k_bend_v, kd_bend_u, kd_bend_v, _, _ = coeff
    diag = pattern.value.diag
    tri_slots, quad_slots = pattern.value.slots
    A[:] = 0.0
    K[:] = 0.0
    n = x.shape[0]
    for i in range(n):
        m = mass[i]
        for c in range(3):
            A[diag[i], c, c] = m * (1.0 + h * drag)                     # M − h·(−m·drag·I)
            f[i, c] = m * gravity[c] + f_ext[i, c] - m * drag * v[i, c]
    cond = np.zeros(3)
    J = np.zeros((3, 12))
    H = np.zeros((3, 12, 12))
    nodes = np.zeros(4, np.int64)
    vl = np.zeros(12)
    hv = np.zeros(12)
    triangle = _Element(nodes, 3, vl, hv)
    quad = _Element(nodes, 4, vl, hv)
    work = np.zeros((6, 9, 9))
    w = np.zeros((2, 3))
    stretch_mode = CLAMPED if definite else EXACT
    for t in range(triangles.shape[0]):
        for a in range(3):
            nodes[a] = triangles[t, a]
            for c in range(3):
                vl[3 * a + c] = v[nodes[a], c]
        _triangle_conditions(x, shape, coeff, t, cond, J, H, w)
        inv_a = 1.0 / shape.area[t]
        for r in range(2):
            _accumulate(triangle, cond[r], J[r], H[r], k_stretch * inv_a, kd_stretch * inv_a,
                        stretch_mode, asymmetric_damping, h, tri_slots[t], out)
        mode = EXACT
        if definite:
            _project_shear_hessian(shape, t, cond[2], J[2], vl, k_shear * inv_a, kd_shear * inv_a, H[2])
            mode = SCALED
        _accumulate(triangle, cond[2], J[2], H[2], k_shear * inv_a, kd_shear * inv_a, mode,
                    asymmetric_damping, h, tri_slots[t], out)
    for q in range(quads.shape[0]):
        for a in range(4):
            nodes[a] = quads[q, a]
            for c in range(3):
                vl[3 * a + c] = v[nodes[a], c]
        theta = _bend_condition(x, quads, q, J[0], H[0], work)
        if math.isnan(theta):
            continue
        k = k_bend_u * bend_frac[q] + k_bend_v * (1.0 - bend_frac[q])
        kd = kd_bend_u * bend_frac[q] + kd_bend_v * (1.0 - bend_frac[q])
        _accumulate(quad, _wrap(theta - rest_angle[q]), J[0], H[0], k, kd, EXACT, asymmetric_damping, h,
                    quad_slots[q], out)


@numba.njit(cache=True)
def _accumulate(element, C, J, H, k, kd, mode, asymmetric, h, slots, out):
    """Add one condition's force (eqs. 7, 11) and blocks (eqs. 8, 12) of an element of p particles.

    element: its nodes, p and velocities (_Element); C [m² or rad]; J (≥3p,) = ∂C/∂x; H (≥3p, ≥3p) =
    ∂²C/∂x²; k, kd the element's stiffness and damping; mode: EXACT (the H term is (k·C + k_d·Ċ)·H),
    CLAMPED (max(k·C + k_d·Ċ, 0)·H, for a PSD H) or SCALED (H already holds the term); h [s]; slots (p, p)
    block slots; out = (A, K, f) of the LinearSystem, added to."""
    nodes, p, vl, hv = element
    A, K, f = out
    m = 3 * p
    cdot = 0.0
    for a in range(m):
        cdot += J[a] * vl[a]
    g = k * C + kd * cdot                                    # f = −g·J  (k·C from eq. 7, k_d·Ċ from eq. 11)
    gh = g
    if mode == CLAMPED and gh < 0.0:
        gh = 0.0
    elif mode == SCALED:
        gh = 1.0
    for a in range(p):
        for c in range(3):
            f[nodes[a], c] -= g * J[3 * a + c]
    if asymmetric:                                           # ∂Ċ/∂x_j = Σ_i (∂²C/∂x_i∂x_j)·v_i
        for b in range(m):
            s = 0.0
            for a in range(m):
                s += H[a, b] * vl[a]
            hv[b] = s
    h2 = h * h
    for a in range(p):
        for b in range(p):
            slot = slots[a, b]
            for c in range(3):
                ja = J[3 * a + c]
                for d in range(3):
                    jj = ja * J[3 * b + d]
                    kx = -k * jj - gh * H[3 * a + c, 3 * b + d]
                    if asymmetric:
                        kx -= kd * ja * hv[3 * b + d]
                    K[slot, c, d] += kx
                    A[slot, c, d] += h * kd * jj - h2 * kx       # −h·(−k_d·JᵀJ) − h²·∂f/∂x


@numba.njit(cache=True)
def _project_shear_hessian(rest, t, C, J, vl, k, kd, H):
    """Replace triangle t's shear Hessian H (9, 9) by the positive semi-definite part of (k·C + k_d·Ċ)·H.

    ∂²C/∂x_m∂x_n = a·(du_m·dv_n + dv_m·du_n)·I: over the three nodes a·|du||dv|·(p·qᵀ + q·pᵀ) with p, q the
    unit du, dv, whose eigenvalues are a·|du||dv|·(p·q ± 1) on (p ± q)/|p ± q|: one ≥ 0, one ≤ 0. Times the
    coefficient g, only the eigenvalue of g's sign is kept (closed form, no eigen-solver). vl (9,) the
    triangle's velocities [m/s]."""
    du, dv, area = rest.du, rest.dv, rest.area
    cdot = 0.0
    for i in range(9):
        cdot += J[i] * vl[i]
    g = k * C + kd * cdot
    nu = math.sqrt(du[t, 0] ** 2 + du[t, 1] ** 2 + du[t, 2] ** 2)
    nv = math.sqrt(dv[t, 0] ** 2 + dv[t, 1] ** 2 + dv[t, 2] ** 2)
    cos = (du[t, 0] * dv[t, 0] + du[t, 1] * dv[t, 1] + du[t, 2] * dv[t, 2]) / (nu * nv)
    sign = 1.0 if g >= 0.0 else -1.0
    lam = g * area[t] * nu * nv * (cos + sign)             # g·eigenvalue ≥ 0
    e0 = du[t, 0] / nu + sign * dv[t, 0] / nv             # eigenvector p ± q over the three nodes
    e1 = du[t, 1] / nu + sign * dv[t, 1] / nv
    e2 = du[t, 2] / nu + sign * dv[t, 2] / nv
    norm = e0 * e0 + e1 * e1 + e2 * e2
    for i in range(9):
        for j in range(9):
            H[i, j] = 0.0
    if norm <= 0.0 or lam <= 0.0:
        return
    e = (e0, e1, e2)
    for m in range(3):
        for n in range(3):
            val = lam * e[m] * e[n] / norm
            for c in range(3):
                H[3 * m + c, 3 * n + c] = val


@numba.njit(cache=True)
def _triangle_conditions(x, rest, coefficients, t, cond, J, H, w_scratch):
    """Stretch (eq. 10: rows 0, 1) and shear (§4.3: row 2) conditions of triangle t with J, H (rows, 9[, 9]).

    rest: the RestShape; coefficients: b_u, b_v (eq. 10) are used. A row whose ‖w‖ is below DEGENERATE is
    left zero (no force, no derivative) for this step. w_scratch (2, 3) receives w_u, w_v."""
    triangles, du, dv = rest.triangles, rest.du, rest.dv
    b_u, b_v = coefficients.b_u, coefficients.b_v
    a = rest.area[t]
    wu = w_scratch[0]
    wv = w_scratch[1]
    for c in range(3):
        wu[c] = 0.0
        wv[c] = 0.0
    for m in range(3):
        p = triangles[t, m]
        for c in range(3):
            wu[c] += du[t, m] * x[p, c]
            wv[c] += dv[t, m] * x[p, c]
    for r in range(3):
        cond[r] = 0.0
        for i in range(9):
            J[r, i] = 0.0
            for j in range(9):
                H[r, i, j] = 0.0
    for r in range(2):
        w = wu if r == 0 else wv
        wt = du if r == 0 else dv
        rest = b_u if r == 0 else b_v
        length = math.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
        if length < DEGENERATE:
            continue
        cond[r] = a * (length - rest)
        for m in range(3):
            for c in range(3):
                J[r, 3 * m + c] = a * wt[t, m] * w[c] / length
        for m in range(3):
            for n in range(3):
                s = a * wt[t, m] * wt[t, n] / length
                for c in range(3):
                    for d in range(3):
                        proj = (1.0 if c == d else 0.0) - w[c] * w[d] / (length * length)
                        H[r, 3 * m + c, 3 * n + d] = s * proj
    cond[2] = a * (wu[0] * wv[0] + wu[1] * wv[1] + wu[2] * wv[2])
    for m in range(3):
        for c in range(3):
            J[2, 3 * m + c] = a * (du[t, m] * wv[c] + dv[t, m] * wu[c])
        for n in range(3):
            s = a * (du[t, m] * dv[t, n] + dv[t, m] * du[t, n])
            for c in range(3):
                H[2, 3 * m + c, 3 * n + c] = s


@numba.njit(cache=True)
def _wrap(angle):
    """Angle [rad] wrapped into (−π, π]."""
    if angle > math.pi:
        return angle - 2.0 * math.pi
    if angle <= -math.pi:
        return angle + 2.0 * math.pi
    return angle


@numba.njit(cache=True)
def _cross_matrix(H, r, col, a, scale):
    """H[r:r+3, col:col+3] += scale·[a]× (the matrix of a × ·)."""
    H[r + 0, col + 1] -= scale * a[2]
    H[r + 0, col + 2] += scale * a[1]
    H[r + 1, col + 0] += scale * a[2]
    H[r + 1, col + 2] -= scale * a[0]
    H[r + 2, col + 0] -= scale * a[1]
    H[r + 2, col + 1] += scale * a[0]


@numba.njit(cache=True)
def _outer(H, r, col, a, b, scale):
    """H[r:r+3, col:col+3] += scale·a·bᵀ."""
    for i in range(3):
        for j in range(3):
            H[r + i, col + j] += scale * a[i] * b[j]


@numba.njit(cache=True)
def _identity(H, r, col, scale):
    """H[r:r+3, col:col+3] += scale·I."""
    for i in range(3):
        H[r + i, col + i] += scale


@numba.njit(cache=True)
def _mirror_upper(H):
    """Copy the upper off-diagonal 3×3 blocks of H (9, 9) into the lower ones (H symmetric)."""
    for i in range(3):
        for j in range(3):
            H[3 + i, 0 + j] = H[0 + j, 3 + i]
            H[6 + i, 0 + j] = H[0 + j, 6 + i]
            H[6 + i, 3 + j] = H[3 + j, 6 + i]


@numba.njit(cache=True)
def _cross(a, b, out):
    """out = a × b (3,)."""
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@numba.njit(cache=True)
def _bend_condition(x, quads, q, g, H, work):
    """Dihedral angle θ [rad] of quad q with its exact gradient g (12,) and Hessian H (12, 12) (§4.3).

    θ = atan2(s, c), s = −|E|·det[E, A, B] = (n₀ × n₁)·ê·|n₀||n₁|, c = (E·A)(E·B) − |E|²(A·B) = n₀·n₁·|n₀||n₁|
    with n₀ ∥ E × A, n₁ ∥ B × E (components.cloth.dihedral_angles' convention). Derivatives in y = (E, A, B)
    (9,) by the chain rule through atan2, then mapped to (x_e0, x_e1, x_o0, x_o1) by the constant linear
    map E = x_e1 − x_e0, A = x_o0 − x_e0, B = x_o1 − x_e1. work (6, 9, 9) scratch.
    Returns NaN (g, H untouched) for a degenerate quad (|E| or both s and c near zero)."""
    e0 = quads[q, 0]
    e1 = quads[q, 1]
    o0 = quads[q, 2]
    o1 = quads[q, 3]
    E = work[0, 0, 0:3]
    Av = work[0, 1, 0:3]
    B = work[0, 2, 0:3]
    AxB = work[0, 3, 0:3]
    BxE = work[0, 4, 0:3]
    ExA = work[0, 5, 0:3]
    for c in range(3):
        E[c] = x[e1, c] - x[e0, c]
        Av[c] = x[o0, c] - x[e0, c]
        B[c] = x[o1, c] - x[e1, c]
    ee = E[0] * E[0] + E[1] * E[1] + E[2] * E[2]
    length = math.sqrt(ee)
    if length < DEGENERATE:
        return np.nan
    ea = E[0] * Av[0] + E[1] * Av[1] + E[2] * Av[2]
    eb = E[0] * B[0] + E[1] * B[1] + E[2] * B[2]
    ab = Av[0] * B[0] + Av[1] * B[1] + Av[2] * B[2]
    _cross(Av, B, AxB)
    _cross(B, E, BxE)
    _cross(E, Av, ExA)
    det = E[0] * AxB[0] + E[1] * AxB[1] + E[2] * AxB[2]
    s = -length * det
    cc = ea * eb - ee * ab
    rr = s * s + cc * cc
    scale = ee * math.sqrt((Av[0] * Av[0] + Av[1] * Av[1] + Av[2] * Av[2]) * (B[0] * B[0] + B[1] * B[1] + B[2] * B[2]))
    if not rr > (1e-10 * scale) ** 2:                     # a triangle of the pair has collapsed onto the edge
        return np.nan
    gc = work[1, 0]
    gs = work[1, 1]
    gt = work[1, 2]
    Hc = work[2]
    Hs = work[3]
    Ht = work[4]
    ehat = work[0, 6, 0:3]
    for c in range(3):
        ehat[c] = E[c] / length
    for i in range(9):
        gc[i] = 0.0
        gs[i] = 0.0
        for j in range(9):
            Hc[i, j] = 0.0
            Hs[i, j] = 0.0
    # c = (E·A)(E·B) − (E·E)(A·B): gradient and Hessian in (E, A, B) = slots 0, 3, 6
    for k in range(3):
        gc[k] = Av[k] * eb + B[k] * ea - 2.0 * E[k] * ab
        gc[3 + k] = E[k] * eb - B[k] * ee
        gc[6 + k] = E[k] * ea - Av[k] * ee
    _outer(Hc, 0, 0, Av, B, 1.0)
    _outer(Hc, 0, 0, B, Av, 1.0)
    _identity(Hc, 0, 0, -2.0 * ab)
    _identity(Hc, 0, 3, eb)
    _outer(Hc, 0, 3, B, E, 1.0)
    _outer(Hc, 0, 3, E, B, -2.0)
    _identity(Hc, 0, 6, ea)
    _outer(Hc, 0, 6, Av, E, 1.0)
    _outer(Hc, 0, 6, E, Av, -2.0)
    _outer(Hc, 3, 6, E, E, 1.0)
    _identity(Hc, 3, 6, -ee)
    _mirror_upper(Hc)
    # s = −|E|·D, D = E·(A × B): ∇D = (A×B, B×E, E×A); ∇²D blocks −[B]×, [A]×, −[E]× (upper)
    Hd = work[5]
    for i in range(9):
        for j in range(9):
            Hd[i, j] = 0.0
    _cross_matrix(Hd, 0, 3, B, -1.0)
    _cross_matrix(Hd, 0, 6, Av, 1.0)
    _cross_matrix(Hd, 3, 6, E, -1.0)
    _mirror_upper(Hd)
    for k in range(3):
        gs[k] = -(det * ehat[k] + length * AxB[k])
        gs[3 + k] = -length * BxE[k]
        gs[6 + k] = -length * ExA[k]
    for i in range(9):
        for j in range(9):
            Hs[i, j] = -length * Hd[i, j]
    for i in range(3):                                    # −D·∇²|E| − ∇|E|·∇Dᵀ − ∇D·∇|E|ᵀ
        for j in range(3):
            Hs[i, j] -= det * ((1.0 if i == j else 0.0) - ehat[i] * ehat[j]) / length
    for j in range(3):
        for col in range(9):
            gd = AxB[col] if col < 3 else (BxE[col - 3] if col < 6 else ExA[col - 6])
            Hs[j, col] -= ehat[j] * gd
            Hs[col, j] -= gd * ehat[j]
    # θ = atan2(s, c)
    ts = cc / rr
    tc = -s / rr
    tss = -2.0 * s * cc / (rr * rr)
    tcc = 2.0 * s * cc / (rr * rr)
    tsc = (s * s - cc * cc) / (rr * rr)
    for i in range(9):
        gt[i] = ts * gs[i] + tc * gc[i]
        for j in range(9):
            Ht[i, j] = (ts * Hs[i, j] + tc * Hc[i, j] + tss * gs[i] * gs[j] + tcc * gc[i] * gc[j]
                        + tsc * (gs[i] * gc[j] + gc[i] * gs[j]))
    # map y = (E, A, B) → x = (e0, e1, o0, o1): E = x1 − x0, A = x2 − x0, B = x3 − x1
    for p in range(4):
        for c in range(3):
            g[3 * p + c] = 0.0
            for pp in range(4):
                for d in range(3):
                    H[3 * p + c, 3 * pp + d] = 0.0
    for r in range(3):
        for p in range(4):
            lp = _LMAP[r, p]
            if lp == 0.0:
                continue
            for c in range(3):
                g[3 * p + c] += lp * gt[3 * r + c]
            for rr2 in range(3):
                for pp in range(4):
                    lq = _LMAP[rr2, pp]
                    if lq == 0.0:
                        continue
                    for c in range(3):
                        for d in range(3):
                            H[3 * p + c, 3 * pp + d] += lp * lq * Ht[3 * r + c, 3 * rr2 + d]
    return math.atan2(s, cc)


_LMAP = np.array([[-1.0, 1.0, 0.0, 0.0],      # E = x_e1 − x_e0
                  [-1.0, 0.0, 1.0, 0.0],      # A = x_o0 − x_e0
                  [0.0, -1.0, 0.0, 1.0]])     # B = x_o1 − x_e1
"""∂(E, A, B)/∂(x_e0, x_e1, x_o0, x_o1), block coefficients (3 × 4)."""


# --- measures ---------------------------------------------------------------------------------------
@numba.njit(cache=True)
def stretch_change(x0, x1, rest):
    """Largest change of any triangle's stretch ‖w_u‖ or ‖w_v‖ (eq. 9–10, per unit area) [-] from x0 to x1 (§7).

    x0, x1 (n, 3) [m]: before and after a proposed step; rest: the held RestShape. Returns NaN if x1 is not
    finite."""
    triangles, du, dv = rest.value.triangles, rest.value.du, rest.value.dv
    worst = 0.0
    for t in range(triangles.shape[0]):
        for r in range(2):
            wt = du if r == 0 else dv
            s0 = 0.0
            s1 = 0.0
            for c in range(3):
                a0 = 0.0
                a1 = 0.0
                for m in range(3):
                    a0 += wt[t, m] * x0[triangles[t, m], c]
                    a1 += wt[t, m] * x1[triangles[t, m], c]
                s0 += a0 * a0
                s1 += a1 * a1
            d = abs(math.sqrt(s1) - math.sqrt(s0))
            if not d <= worst:                      # also catches NaN
                worst = d
    return worst


@numba.njit(cache=True)
def elastic_energy(x, rest, coefficients):
    """Σ ½·k·CᵀC over stretch, shear (k/a per triangle) and bend conditions [J] (eq. 7's energy E = ½·k·CᵀC).

    x (n, 3) [m]; rest: the held RestShape; coefficients: the held Coefficients, the stiffnesses (damping
    unused) and b_u, b_v."""
    shape, coeff = rest.value, coefficients.value
    triangles, _, _, area, quads, rest_angle, bend_frac = shape
    k_stretch, k_shear = coeff.k_stretch, coeff.k_shear
    k_bend_u, k_bend_v = coeff.k_bend_u, coeff.k_bend_v
    total = 0.0
    cond = np.zeros(3)
    J = np.zeros((3, 12))
    H = np.zeros((3, 12, 12))
    w = np.zeros((2, 3))
    for t in range(triangles.shape[0]):
        _triangle_conditions(x, shape, coeff, t, cond, J, H, w)
        total += 0.5 / area[t] * (k_stretch * (cond[0] ** 2 + cond[1] ** 2) + k_shear * cond[2] ** 2)
    for q in range(quads.shape[0]):
        e0, e1, o0, o1 = quads[q, 0], quads[q, 1], quads[q, 2], quads[q, 3]
        theta = _angle(x, e0, e1, o0, o1)
        k = k_bend_u * bend_frac[q] + k_bend_v * (1.0 - bend_frac[q])
        total += 0.5 * k * _wrap(theta - rest_angle[q]) ** 2
    return total


@numba.njit(cache=True)
def _angle(x, e0, e1, o0, o1):
    """Signed dihedral angle [rad] (same formula as _bend_condition, no derivatives)."""
    ex, ey, ez = x[e1, 0] - x[e0, 0], x[e1, 1] - x[e0, 1], x[e1, 2] - x[e0, 2]
    ax, ay, az = x[o0, 0] - x[e0, 0], x[o0, 1] - x[e0, 1], x[o0, 2] - x[e0, 2]
    bx, by, bz = x[o1, 0] - x[e1, 0], x[o1, 1] - x[e1, 1], x[o1, 2] - x[e1, 2]
    ee = ex * ex + ey * ey + ez * ez
    det = ex * (ay * bz - az * by) + ey * (az * bx - ax * bz) + ez * (ax * by - ay * bx)
    ea = ex * ax + ey * ay + ez * az
    eb = ex * bx + ey * by + ez * bz
    ab = ax * bx + ay * by + az * bz
    return math.atan2(-math.sqrt(ee) * det, ea * eb - ee * ab)
