"""The collision kernels as NumPy stand-ins, run only while a compile worker compiles the kernels.

On an empty numba cache with a compile worker at work (``loom.launch.compile_ahead``), ``loom.launch.cold_kernels``
binds the environment contacts' Python call sites (``_touches_call``, ``_collide_basic_call`` and the module's
``hold``) and the max distance's (``_project_call``) to the functions here, and rebinds them to the compiled kernels
at a step boundary once they are ready. Without a worker (tests, one core, ``LOOM_COMPILE_AHEAD=0``,
``LOOM_COLD_PYTHON=0``) nothing here runs.

The contact stand-in is the kernel's contact and friction (Fuhrmann et al. 2003 eqs. 18–21: the push r_n = n·(t − d)
along the outward normal, Coulomb's law in position form on the slip relative to the moving surface) for every free
particle at once, collider by collider in the kernel's order, with the kernel's contact skin and resting rule. It
has no swept path (a particle and a surface that close more than the contact reach in one substep may pass through:
a substep of a running hero moves ~7 mm against a cape's 10 mm reach) and no pinch (a particle caught between two
surfaces facing each other is pushed by each in turn). It takes basic shapes only, as the kernel it stands in for
(``environment._COLLIDE_BASIC``); a scene with a prism or a mesh compiles the general contact kernel in the game.

Each basic shape's signed distance is here in array form (``numpy_distance_of``, the NumPy twin of
``shapes.distance_of``): a shape without one is evaluated through its numba kernel's Python source, element by
element (correct, slow).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from loom.components import collider
from loom.components.cloth import STUCK
from loom.launch.cold_kernels import called_from, python_twin
from loom.systems.collision import environment, max_distance
from loom.systems.shared import cold_held  # noqa: F401  (``hold``'s stand-in registered)
from loom.systems.shared import shapes
from loom.systems.shared.cold_held import value_of
from loom.systems.shared.held import hold

Distances = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""Signed distance [m] and unit outward normal (d, nx, ny, nz), each (n,), in the shape's local frame."""

_NUMPY_DISTANCES: dict[type, Callable[..., Distances]] = {}
"""Shape class → its signed distance in array form (``numpy_distance_of``)."""


def numpy_distance_of(shape: type) -> Callable[[Callable[..., Distances]], Callable[..., Distances]]:
    """Decorator: register ``f(a, b, c, lx, ly, lz) -> (d, nx, ny, nz)`` as the array form of ``shape``'s signed
    distance kernel (``shapes.distance_of``): a, b, c its ``pack`` row's first three numbers [m], lx, ly, lz (n,)
    local points [m]; the same numbers as the kernel, point by point."""
    def register(f: Callable[..., Distances]) -> Callable[..., Distances]:
        _NUMPY_DISTANCES[shape] = f
        return f
    return register


def _ball(a: float, dx: np.ndarray, dy: np.ndarray, dz: np.ndarray) -> Distances:
    """``shapes._ball`` in array form: |offset| − a and the offset's direction (straight up where it vanishes)."""
    d = np.sqrt(dx * dx + dy * dy + dz * dz)
    tiny = d < 1e-12
    safe = np.where(tiny, 1.0, d)
    return d - a, np.where(tiny, 0.0, dx / safe), np.where(tiny, 1.0, dy / safe), np.where(tiny, 0.0, dz / safe)


@numpy_distance_of(collider.Plane)
def _plane(a: float, b: float, c: float, lx: np.ndarray, ly: np.ndarray, lz: np.ndarray) -> Distances:
    """``shapes.plane_sdf``: d = l·n."""
    return lx * a + ly * b + lz * c, np.full_like(lx, a), np.full_like(lx, b), np.full_like(lx, c)


@numpy_distance_of(collider.Sphere)
def _sphere(a: float, b: float, c: float, lx: np.ndarray, ly: np.ndarray, lz: np.ndarray) -> Distances:
    """``shapes.sphere_sdf``: d = |l| − a."""
    return _ball(a, lx, ly, lz)


@numpy_distance_of(collider.Capsule)
def _capsule(a: float, b: float, c: float, lx: np.ndarray, ly: np.ndarray, lz: np.ndarray) -> Distances:
    """``shapes.capsule_sdf``: the segment (0, ±b, 0) swept by a ball of radius a."""
    return _ball(a, lx, ly - np.clip(ly, -b, b), lz)


@numpy_distance_of(collider.Box)
def _box(a: float, b: float, c: float, lx: np.ndarray, ly: np.ndarray, lz: np.ndarray) -> Distances:
    """``shapes.box_sdf``: half extents (a, b, c); inside, left by the nearest face."""
    q = np.stack((np.abs(lx) - a, np.abs(ly) - b, np.abs(lz) - c))
    local = np.stack((lx, ly, lz))
    inside = (q <= 0.0).all(axis=0)
    face = np.where((q[0] >= q[1]) & (q[0] >= q[2]), 0, np.where(q[1] >= q[2], 1, 2))   # the kernel's tie order
    o = np.copysign(np.maximum(q, 0.0), local)
    d_out = np.sqrt((o * o).sum(axis=0))
    safe = np.where(inside, 1.0, d_out)
    n = o / safe
    rows = np.arange(lx.shape[0])
    n_in = np.zeros_like(n)
    n_in[face, rows] = np.copysign(1.0, local[face, rows])
    n = np.where(inside, n_in, n)
    return np.where(inside, q[face, rows], d_out), n[0], n[1], n[2]


@numpy_distance_of(collider.Cylinder)
def _cylinder(a: float, b: float, c: float, lx: np.ndarray, ly: np.ndarray, lz: np.ndarray) -> Distances:
    """``shapes.cylinder_sdf``: radius a along y, flat ends at y = ±b."""
    radial = np.sqrt(lx * lx + lz * lz)
    safe = np.where(radial > 1e-12, radial, 1.0)
    rx, rz = lx / safe, lz / safe
    dr, dy = radial - a, np.abs(ly) - b
    up = np.copysign(1.0, ly)
    inside = (dr <= 0.0) & (dy <= 0.0)
    rim = np.where(inside, (dr >= dy) & (radial > 1e-12), dy <= 0.0)     # leaves by (or is beside) the rim
    end = ~rim & (inside | (dr <= 0.0))                                  # by (or above) a flat end
    edge = ~rim & ~end                                                   # beyond the edge of an end
    d_edge = np.sqrt(dr * dr + dy * dy)
    e = np.where(edge, d_edge, 1.0)
    d = np.where(rim, dr, np.where(end, dy, d_edge))
    nx = np.where(rim, rx, np.where(end, 0.0, rx * dr / e))
    ny = np.where(rim, 0.0, np.where(end, up, up * dy / e))
    nz = np.where(rim, rz, np.where(end, 0.0, rz * dr / e))
    return d, nx, ny, nz


def numpy_sdf(shape: type, a: float, b: float, c: float, lx: np.ndarray, ly: np.ndarray,
              lz: np.ndarray) -> Distances:
    """Signed distance and outward normal of the basic ``shape`` at local points l (n,) [m] (``Distances``): its
    array form, or its kernel's Python source point by point where it has none."""
    f = _NUMPY_DISTANCES.get(shape)
    if f is not None:
        return f(a, b, c, lx, ly, lz)
    scalar = np.vectorize(shapes._DISTANCES[shape].py_func, otypes=[float] * 4)
    return tuple(np.asarray(r, float).reshape(lx.shape) for r in scalar(a, b, c, lx, ly, lz))


def near_numpy(inv_mass: np.ndarray, x_prev: np.ndarray, x: np.ndarray, thickness: float, kind: np.ndarray,
               margin: np.ndarray, f: Any) -> int:
    """``environment._near_colliders`` in NumPy, every collider at once: the colliders near the cloth written to
    f.near (a ``Frames``); returns how many."""
    free = inv_mass != 0.0
    if free.all():
        lo = np.minimum(x.min(axis=0), x_prev.min(axis=0))
        hi = np.maximum(x.max(axis=0), x_prev.max(axis=0))
    elif free.any():
        lo = np.minimum(x[free].min(axis=0), x_prev[free].min(axis=0))
        hi = np.maximum(x[free].max(axis=0), x_prev[free].max(axis=0))
    else:
        lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    with np.errstate(over="ignore", invalid="ignore"):          # (a turning plane's motion bound is 1e300)
        found = _near(lo, hi, f.pos1, f.extent, f.bound, (thickness + margin) * (1.0 + environment.CONTACT_SKIN)
                      + f.motion, kind == collider.PLANE)
    f.near[:found.shape[0]] = found
    return int(found.shape[0])


def _near(lo: np.ndarray, hi: np.ndarray, p: np.ndarray, extent: np.ndarray, bound: np.ndarray, reach: np.ndarray,
          plane: np.ndarray) -> np.ndarray:
    """The indices of the colliders near the box lo–hi [m] (``near_numpy``)."""
    low = np.minimum(extent * (lo - p), extent * (hi - p)).sum(axis=1)          # a plane: its deepest box corner
    ball = np.maximum(np.maximum(lo - p, p - hi), 0.0)
    box = np.maximum(np.maximum(lo - p - extent, p - extent - hi), 0.0)
    near = np.where(plane, low <= reach,
                    (bound <= 0.0) | (((ball * ball).sum(axis=1) <= (bound + reach) ** 2)
                                      & ((box * box).sum(axis=1) <= reach * reach)))
    return np.flatnonzero(near)


def prepare_numpy(col: Any, f: Any, a0: float, a1: float) -> None:
    """``environment._prepare`` in NumPy, every collider at once: the poses at the substep's start and end
    (``shapes.pose``: position lerp, quaternion nlerp), the bounding radii, the world boxes (a plane's world normal)
    and the motion bound, written into the ``Frames`` f."""
    for alpha, rot, pos in ((a0, f.rot0, f.pos0), (a1, f.rot1, f.pos1)):
        q = (1.0 - alpha) * col.pose0[:, :4] + alpha * col.pose1[:, :4]
        q = q / np.sqrt((q * q).sum(axis=1))[:, None]
        w, x, y, z = q.T
        rot[:, 0, 0] = 1 - 2 * (y * y + z * z)
        rot[:, 0, 1] = 2 * (x * y - w * z)
        rot[:, 0, 2] = 2 * (x * z + w * y)
        rot[:, 1, 0] = 2 * (x * y + w * z)
        rot[:, 1, 1] = 1 - 2 * (x * x + z * z)
        rot[:, 1, 2] = 2 * (y * z - w * x)
        rot[:, 2, 0] = 2 * (x * z - w * y)
        rot[:, 2, 1] = 2 * (y * z + w * x)
        rot[:, 2, 2] = 1 - 2 * (x * x + y * y)
        pos[:] = (1.0 - alpha) * col.pose0[:, 4:] + alpha * col.pose1[:, 4:]
    f.bound[:] = col.bound
    plane = (col.shapes.kind == collider.PLANE)[:, None]
    f.extent[:] = (np.where(plane[:, :, None], f.rot1, np.abs(f.rot1)) * col.extents[:, None, :]).sum(axis=2)
    turn = np.abs(f.rot1 - f.rot0).reshape(-1, 9).max(axis=1, initial=0.0)
    shift = np.sqrt(((f.pos1 - f.pos0) ** 2).sum(axis=1))
    f.motion[:] = shift + 3.0 * turn * np.where(f.bound > 0.0, f.bound, 1e300)


_prepared: list[tuple] = [()]
"""The colliders, frames, substep and poses ``prepare_numpy`` last wrote its frames for."""


def touches_numpy(colliders: Any, frames: Any, a0: float, a1: float, thickness: float, friction: float,
                  mass: np.ndarray, inv_mass: np.ndarray, x_prev: np.ndarray, x: np.ndarray,
                  contact: np.ndarray) -> int:
    """``environment._touches``: the poses prepared (``prepare_numpy``) and the near colliders written; returns how
    many."""
    col, f = value_of(colliders), value_of(frames)
    poses = (id(col), id(f), a0, a1, col.pose0.tobytes(), col.pose1.tobytes())
    if _prepared[0] != poses:                         # (the substep's other cloths find the colliders prepared)
        prepare_numpy(col, f, a0, a1)
        _prepared[0] = poses
    return near_numpy(inv_mass, x_prev, x, thickness, col.shapes.kind, col.margin, f)


def collide_numpy(colliders: Any, frames: Any, near: int, inv_h: float, thickness: float, friction: float,
                  mass: np.ndarray, inv_mass: np.ndarray, x_prev: np.ndarray, x: np.ndarray,
                  contact: np.ndarray) -> None:
    """``environment._collide_serial_basic`` without its swept paths and pinches (module docstring): for each near
    collider in turn, every free particle within its touch distance is pushed out to the contact reach along the
    outward normal, its slip relative to the surface cut by Coulomb friction; writes x, contact (n, 5) and the
    colliders' impulse and impulse_point. inv_h [1/s]; thickness [m] and friction [-] of the cloth."""
    col, f = value_of(colliders), value_of(frames)
    pressed = np.maximum(contact[:, 4], 0.0)          # the normal push its surface took in the solve [m]
    contact[:, :5] = 0.0
    free = inv_mass != 0.0
    close = f.near[:near]
    two_way_near = bool(col.two_way[close].any())
    kinds = collider.SHAPES
    for c in close:
        reach = thickness + col.margin[c]
        still = f.motion[c] <= environment.RESTING * reach
        skinned = col.skin[c] == collider.ROUND or (col.skin[c] == collider.FLAT and not two_way_near)
        touch = reach * (1.0 + environment.CONTACT_SKIN) if still and skinned and not col.two_way[c] else reach
        rot1, pos1, rot0, pos0 = f.rot1[c], f.pos1[c], f.rot0[c], f.pos0[c]
        local = (x - pos1) @ rot1                      # Rᵀ(x − p), row by row
        a, b, cc = col.shapes.params[c, 0], col.shapes.params[c, 1], col.shapes.params[c, 2]
        d, nx, ny, nz = numpy_sdf(kinds[col.shapes.kind[c]], a, b, cc, local[:, 0], local[:, 1], local[:, 2])
        hit = np.nonzero(free & (d < touch))[0]
        if hit.size == 0:
            continue
        normal_local = np.stack((nx[hit], ny[hit], nz[hit]), axis=1)
        moved = local[hit] + normal_local * np.maximum(reach - d[hit], 0.0)[:, None]
        w = moved @ rot1.T + pos1                      # on the surface's reach, end pose
        u = moved @ rot0.T + pos0                      # the same surface point at the substep's start
        n = normal_local @ rot1.T
        xp = x[hit]
        push = ((w - xp) * n).sum(axis=1)              # normal correction [m]
        slide = u - x_prev[hit]                        # motion in the surface's frame (eq. 19)
        tangent = slide - n * (slide * n).sum(axis=1)[:, None]
        slip = np.sqrt((tangent * tangent).sum(axis=1))
        mu = np.sqrt(friction * col.friction[c])
        budget = mu * (np.maximum(push, 0.0) + pressed[hit])
        moving = slip > 1e-15
        stuck = ~moving | (slip <= budget)
        cf = np.where(moving & ~stuck, budget / np.where(moving, slip, 1.0), 1.0)   # eqs. 20–21, Coulomb
        w -= np.where(moving, cf, 0.0)[:, None] * tangent
        j = -mass[hit, None] * (w - xp) * inv_h        # momentum the collider receives [N·s]
        jn = np.sqrt((j * j).sum(axis=1))
        col.impulse[c] += j.sum(axis=0)
        col.impulse_point[c, :3] += (jn[:, None] * w).sum(axis=0)
        col.impulse_point[c, 3] += jn.sum()
        x[hit] = w
        if not col.two_way[c]:                         # the yarns and the limit slide it along this surface
            contact[hit, :3] = n
            contact[hit, 3] = np.where(stuck, STUCK, 1.0) if still else 0.0
            contact[hit, 4] = np.where(stuck, -(budget - slip), 0.0) if still else 0.0
        else:                                          # a two-way body: no normal (it gives way), −1
            free_row = hit[contact[hit, 3] == 0.0]
            contact[free_row, 3] = -1.0


def project_numpy(x: np.ndarray, inv_mass: np.ndarray, start: np.ndarray, end: np.ndarray, distance: np.ndarray,
                  normal_start: np.ndarray, normal_end: np.ndarray, offset: np.ndarray, radius: float,
                  axis: np.ndarray, half_length: float, armed: np.ndarray, alpha: float) -> None:
    """``max_distance._project`` in NumPy: the free particles into their max-distance spheres, then out of their
    backstops once armed (its docstring); the same formulas, all particles at once."""
    free = inv_mass != 0.0
    p = (1.0 - alpha) * start + alpha * end
    r = np.where(free, distance, np.inf)
    off = x - p
    d2 = (off * off).sum(axis=1)
    out = free & (d2 > r * r)
    if out.any():
        s = np.where(r[out] == 0.0, 0.0, r[out] / np.sqrt(d2[out]))
        x[out] = p[out] + off[out] * s[:, None]
    if not (radius > 0.0 and normal_start.shape[0] == x.shape[0]):
        return
    a = (1.0 - alpha) * axis[0] + alpha * axis[1]
    alen = float(np.sqrt(a @ a))
    if alen > 0.0:
        a = a / alen
    n = (1.0 - alpha) * normal_start + alpha * normal_end
    nlen = np.sqrt((n * n).sum(axis=1))
    live = free & (nlen != 0.0)
    n = n / np.where(nlen == 0.0, 1.0, nlen)[:, None]
    q = p - n * (radius + offset)[:, None]
    if half_length > 0.0:                              # a capsule: the nearest point of its axis segment
        t = np.clip((x - q) @ a, -half_length, half_length)
        q = q + t[:, None] * a
    v = x - q
    v2 = (v * v).sum(axis=1)
    outside = live & (v2 >= radius * radius)
    inside = live & ~outside & armed
    armed |= outside
    if inside.any():
        far = v2[inside] > 1e-24
        s = radius / np.sqrt(np.where(far, v2[inside], 1.0))
        moved = np.where(far[:, None], q[inside] + v[inside] * s[:, None], q[inside] + n[inside] * radius)
        x[inside] = moved


python_twin(environment._touches, per_step=True, twin=touches_numpy)
python_twin(environment._COLLIDE_BASIC[0], per_step=True, twin=collide_numpy)
called_from(environment.__name__, hold, environment._touches, environment._COLLIDE_BASIC[0])
python_twin(max_distance._project, per_step=True, twin=project_numpy)
called_from(max_distance.__name__, max_distance._project)
