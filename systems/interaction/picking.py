"""Picking: grab a cloth particle with a pointer ray and drag it; point a Blower where the cursor is.

- ``pick_particle`` casts a world ray (``Camera.ray``) and returns the particle under it: among the
  particles of every cloth within ``radius`` of the ray, in front of its origin, the one closest
  to the ray within the front-most layer (depths up to 2·radius behind the nearest candidate), so
  a fold's hidden layer is not picked through the visible one.
- ``hold_grabs`` (PRE_STEP, last in ``ClothSet.PIN_TARGETS``) gives a grabbed particle infinite mass,
  inv_mass = 0 (Fuhrmann et al. 2003 §3 "User input", eq. 11: the position change "has priority
  over all other forces or constraints"), and records where it is and where the Grab's target is.
  On release it restores ``cloth.base_inv_mass[p]`` — or keeps 0 if an active Pin holds p.
- ``move_grabs`` (SUBSTEP, last in ``ClothSet.PIN``) places the particle on the straight line from
  its step-start position to the target at fraction (k + 1)/S in substep k, exactly as
  systems/pipeline/pins.py moves pins: it sits exactly on the target at the end of the step, and the
  velocity update turns the motion into velocity, so a released particle keeps the fling.
  Whole-step solvers (model "implicit") have no substeps: the particle is set on its target at
  the start of the step, with the velocity (target − x)/dt.

Order with pins: both systems run after the pin system's in their set, so a grab overrides a pin
on the same particle while held (user input has priority); on release the pin takes it back
smoothly over the next step. Tethers are rebuilt with the grabbed particle as an anchor (the
tether system sees inv_mass 0 in ``ClothSet.TETHERS``, after ``hold_grabs``).

``update_grab`` and ``update_blower`` are for the INPUT stage: call them from the window's event
handling with the cursor in pixels (x right, y down).
"""
from __future__ import annotations

import math

import numba
import numpy as np

from loom.components import Camera, Cloth, Pin
from loom.components._validate import floats, integer, real
from loom.components.grab import Grab
from loom.components.wind import Blower
from loom.engine import App, Stage
from loom.systems.sets import ClothSet


class PickingPlugin:
    """Grabbed particles: infinite mass each step, moved to the pointer's target each substep."""

    def build(self, app: App) -> None:
        app.add_system(hold_grabs, Stage.PRE_STEP, in_set=ClothSet.PIN_TARGETS, after=ClothSet.PIN_TARGETS)
        app.add_system(move_grabs, Stage.SUBSTEP, in_set=ClothSet.PIN, after=ClothSet.PIN, run_if=holding)


# --- picking -------------------------------------------------------------------------------------
def pick_particle(app: App, origin: np.ndarray, direction: np.ndarray, radius: float
                  ) -> tuple[int, int, float] | None:
    """Return (cloth entity, particle index, depth [m] along the ray) of the particle under a ray, or None.

    origin (3,) [m] and direction (3,) (normalised here) are a world ray, e.g. ``Camera.ray``;
    radius [m] > 0 is how far off the ray a particle may be. Raises ValueError for a zero
    direction or a radius that is not finite and > 0."""
    o = floats("pick_particle", "origin", origin, (3,), unit=" [m]")
    d = floats("pick_particle", "direction", direction, (3,))
    norm = float(np.linalg.norm(d))
    if not norm > 1e-12 or not math.isfinite(norm):
        raise ValueError(f"pick_particle direction = {d.tolist()}: must be a finite non-zero vector")
    if isinstance(radius, bool) or not isinstance(radius, (int, float)) or not 0.0 < radius < math.inf:
        raise ValueError(f"pick_particle radius = {radius!r}: must be finite and > 0 [m]")
    d = d / norm
    clothes = app.query(Cloth)
    front = math.inf
    for _, cloth in clothes:
        front = min(front, _front_depth(cloth.x, o, d, float(radius)))
    if front == math.inf:
        return None
    best: tuple[float, int, int, float] | None = None
    for entity, cloth in clothes:                # ties: lower entity, then lower index (deterministic)
        p, off2, depth = _closest_in_slab(cloth.x, o, d, float(radius), front, front + 2.0 * radius)
        if p >= 0 and (best is None or off2 < best[0]):
            best = (off2, entity, p, depth)
    if best is None:
        return None
    return best[1], best[2], best[3]


def update_grab(app: App, camera: Camera, mouse_x: float, mouse_y: float, width: int, height: int,
                pressed: bool, *, grab: int | None = None) -> Grab:
    """INPUT-stage helper: pick on press, drag while held, let go on release; return the Grab.

    mouse_x, mouse_y [px] (x right, y down) in a viewport of width × height [px]; pressed is the
    button's state this frame. While pressed with nothing held, every call tries to pick (so
    sweeping onto the cloth with the button down grabs it); once held, the target follows the
    cursor's ray at the depth where the particle was picked. ``grab`` selects a Grab entity (one
    per pointer); by default the first one, spawned on first use."""
    _viewport("update_grab", mouse_x, mouse_y, width, height)
    g = _pointer(app, Grab, grab)
    if not pressed:
        g.active = False
        return g
    origin, direction = _ray("update_grab", camera, mouse_x, mouse_y, width, height)
    if not g.active:
        hit = pick_particle(app, origin, direction, g.radius)
        if hit is None:
            return g
        g.cloth, g.particle, g.depth = hit
        g.active = True
    g.target[:] = origin + g.depth * direction
    return g


def update_blower(app: App, camera: Camera, mouse_x: float, mouse_y: float, width: int, height: int,
                  blowing: bool, *, blower: int | None = None) -> Blower:
    """INPUT-stage helper: point a Blower from the camera toward the cursor (Schönberger §3.3) and
    switch it on while ``blowing``; return it.

    The nozzle sits where the cursor's ray leaves the near plane (the eye's line of sight through
    the cursor, also right for orthographic cameras). ``blower`` selects a Blower entity; by default
    the first one, spawned on first use with Blower's defaults."""
    _viewport("update_blower", mouse_x, mouse_y, width, height)
    b = _pointer(app, Blower, blower)
    origin, direction = _ray("update_blower", camera, mouse_x, mouse_y, width, height)
    b.origin[:] = origin
    b.direction[:] = direction
    b.active = bool(blowing)
    return b


def _viewport(where: str, mouse_x: float, mouse_y: float, width: int, height: int) -> None:
    """Refuse a cursor that is not a finite point [px] or a viewport that is not positive whole pixels (a
    zero-sized window while minimised): ValueError (FieldError for a wrong kind) naming ``where``'s argument."""
    integer(where, "width", width, low=1)
    integer(where, "height", height, low=1)
    real(where, "mouse_x", mouse_x, unit=" [px]")
    real(where, "mouse_y", mouse_y, unit=" [px]")


def _ray(where: str, camera: Camera, mouse_x: float, mouse_y: float, width: int, height: int
         ) -> tuple[np.ndarray, np.ndarray]:
    """``camera.ray`` through the cursor, or ValueError naming ``where`` when the camera gives no finite ray (its
    matrices singular or overflowing: an extreme distance, near or far)."""
    try:
        with np.errstate(all="ignore"):
            origin, direction = camera.ray(mouse_x, mouse_y, width, height)
    except np.linalg.LinAlgError:
        origin = direction = np.full(3, np.nan)
    if not (np.isfinite(origin).all() and np.isfinite(direction).all()):
        raise ValueError(f"{where}: the Camera gives no finite ray through ({mouse_x!r}, {mouse_y!r}) px in "
                         f"{width}x{height} px (check Camera.distance, near, far and ortho_height)")
    return origin, direction


def _pointer(app: App, kind: type, entity: int | None):
    """The component of ``kind`` on ``entity``, or the first one in the world (spawned if none)."""
    if entity is not None:
        return app.get(entity, kind)
    found = app.query(kind)
    if found:
        return found[0][1]
    component = kind()
    app.spawn(component)
    return component


# --- systems -------------------------------------------------------------------------------------
def hold_grabs(app: App, dt: float) -> None:
    """Give grabbed particles inv_mass 0 and this step's path; give released ones their mass back."""
    for _, g in app.query(Grab):
        want = (g.cloth, g.particle) if g.active else None
        if g.held_cloth is not None and (g.held_cloth, g.held_particle) != want:
            _release(app, g)
        if want is None:
            continue
        cloth = app.try_get(g.cloth, Cloth)
        if cloth is None:                            # the cloth was despawned: let go
            g.active = False
            continue
        p = g.particle
        if p >= cloth.particle_count:
            raise ValueError(f"Grab.particle = {p}: out of range for cloth entity {g.cloth} of "
                             f"{cloth.particle_count} particles")
        if (g.held_cloth, g.held_particle) != want:
            cloth.changed()                          # a new grab: the anchors change (Cloth.changes)
        cloth.inv_mass[p] = 0.0
        g.step_start[:] = cloth.x[p]
        g.step_end[:] = g.target
        g.held_cloth, g.held_particle = g.cloth, p
        if not cloth.substepped:                     # whole-step solver: on the target from the start
            cloth.v[p] = (g.target - cloth.x[p]) / dt
            cloth.x[p] = g.target


def holding(app: App) -> bool:
    """Run condition of ``move_grabs``: some Grab holds a particle."""
    return any(g.held_cloth is not None for _, g in app.query(Grab))


def move_grabs(app: App, h: float) -> None:
    """Move held particles to their Grab's target interpolated at this substep (pins' rule)."""
    clock = app.clock
    alpha = (clock.substep_index + 1) / clock.substeps
    for _, g in app.query(Grab):
        if g.held_cloth is None:
            continue
        cloth = app.try_get(g.held_cloth, Cloth)
        if cloth is None or not cloth.substepped:
            continue
        cloth.x[g.held_particle] = (1.0 - alpha) * g.step_start + alpha * g.step_end


def _release(app: App, g: Grab) -> None:
    """Give the held particle its inverse mass back (0 if an active Pin holds it) and forget it."""
    cloth = app.try_get(g.held_cloth, Cloth)
    p = g.held_particle
    if cloth is not None and p < cloth.particle_count:
        pin = app.try_get(g.held_cloth, Pin)
        pinned = pin is not None and bool(np.any(pin.active & (pin.index == p)))
        cloth.inv_mass[p] = 0.0 if pinned else cloth.base_inv_mass[p]
        cloth.changed()                              # let go: the anchors change (Cloth.changes)
    g.held_cloth, g.held_particle = None, -1


# --- kernels: private, arrays in, scalars out -----------------------------------------------------
@numba.njit(cache=True)
def _ray_depth_offset(x, p, o, d):
    """(t, off²) of particle p of x (n, 3): depth t = (x_p − o)·d [m] along the ray o + t·d (d unit) and
    squared distance |x_p − o|² − t² [m²] to it (may round below 0)."""
    rx = x[p, 0] - o[0]
    ry = x[p, 1] - o[1]
    rz = x[p, 2] - o[2]
    t = rx * d[0] + ry * d[1] + rz * d[2]
    return t, rx * rx + ry * ry + rz * rz - t * t


@numba.njit(cache=True)
def _front_depth(x, o, d, radius):
    """Smallest depth t = (x − o)·d > 0 [m] of the particles x (n, 3) within ``radius`` [m] of the
    ray o + t·d (d unit), or inf if none."""
    best = math.inf
    r2 = radius * radius
    for p in range(x.shape[0]):
        t, off2 = _ray_depth_offset(x, p, o, d)
        if t <= 0.0 or t >= best:
            continue
        if off2 <= r2:
            best = t
    return best


@numba.njit(cache=True)
def _closest_in_slab(x, o, d, radius, t_lo, t_hi):
    """(index, squared distance to the ray [m²], depth [m]) of the particle closest to the ray
    among those within ``radius`` of it with depth in [t_lo, t_hi]; index −1 if none (first wins ties)."""
    best = -1
    best_off2 = math.inf
    best_t = 0.0
    r2 = radius * radius
    for p in range(x.shape[0]):
        t, off2 = _ray_depth_offset(x, p, o, d)
        if t < t_lo or t > t_hi:
            continue
        off2 = max(off2, 0.0)
        if off2 <= r2 and off2 < best_off2:
            best = p
            best_off2 = off2
            best_t = t
    return best, best_off2, best_t
