"""pymunk bridge: a 2D game's rigid bodies as cloth colliders, with two-way impulses exchanged within each step.

PRE_STEP (``sync_bodies``, before colliders are gathered): step the Space2D (if Loom owns stepping), add to each
body the displacement the cloth gave it within the last step (``RigidBody2D.cloth_shift``), then set each
shape's collider Transform from its body's position and angle — so the cloth sees the body move from where it
was to where it is now across the step's substeps. The RigidBody2D's own entity gets a Transform
when the bridge first sees it (if it has none: added once, never per frame), which then follows the body
every step before the pins read it, so pins ride on it (``Pin(attach_to=body_entity)``, a cape on a hero).

SUBSTEP (``couple_bodies``, before the environment contacts) and POST_STEP (``collect_impulses``): two-way
coupling inside the step. The environment kernel adds the momentum each substep's contacts give each
collider to ``ColliderSet.impulse``. A two-way dynamic body takes it substep by substep: before substep k its
extra velocity (and spin) grows by the impulse (and torque) of substep k − 1, and its colliders are moved over
substep k along pymunk's path plus the extra displacement so far, carried on at the extra velocity *including
the impulse substep k is predicted to give* — the last substep's, ``RigidBody2D.cloth_force`` × h. After
the step the extra velocities are added to the pymunk body, so pymunk's next step uses them whoever steps
the space (Space2D or the game's own ``space.step``); the extra displacement and rotation (millimetres for a
ball bouncing on cloth, micrometres for a hero in a cape) wait in ``cloth_shift`` for the next step's start,
where the pins read the body after it: a cape pinned to a body stays exactly on it. Impulses of whole-step
solvers (the implicit model, before the substeps) go to the velocities at the end of the step.

Why (energy). In a substep where a collider moves at velocity c and receives impulse J from the cloth, the
cloth is given work −J·c (a passive, damped cloth keeps at most that) while the body, at velocity u before,
gains kinetic energy J·u + |J|²/2M: the body gets back no more than the cloth took iff J·(c − u) ≥ |J|²/2M.
Explicit coupling (c = u: the collider moved before its impulse was known) breaks that by |J|²/2M every
time: a ball would leave a cloth trampoline faster than it landed and, left on it, be pumped until it fell
through (tests/test_pymunk_bridge.py checks it does not). Moving the collider at the velocity its
impulse will give, c = u + Ĵ/M (backward Euler), satisfies it whenever J·Ĵ ≥ |J|²/2, i.e. when the cloth's
force changed by less than its own size since the last substep (|J − Ĵ| ≤ |Ĵ|): every substep of a contact
but its first. Momentum is exact either way — the body receives exactly the impulses the cloth lost; only
the path the cloth sees uses the prediction.

Units (components/rigid_body.py): a body whose ``scale`` is None is read in the App's ``PixelSpace`` when it
has one — pixels, y down: a point (px, py) is ((px − ox)/ppm, (oy − py)/ppm) [m], an angle a is −a, and
displacements and velocities go back as pixels with y flipped — else with scale 1 and y up; an explicit scale
keeps y up. Inside, all is SI (metres, y up, radians counter-clockwise, N·s). Despawning a RigidBody2D's entity
despawns the collider entities made for its shapes (``forget_body``); removing its body from the pymunk Space
stays the game's job. Read with scale 1 (no PixelSpace, ``scale`` None), a moving body bigger than
PIXEL_SIZED_BODY metres warns once per App (UnitsWarning naming PixelSpace): a hero of 36 × 80 pixels is not
36 × 80 m. A PixelSpace with a ``gravity`` [px/s²] sets the App's ``Gravity`` [m/s²] here, at the start of the
first step after it (or its gravity) changed (``pixel_gravity``).
"""
from __future__ import annotations

import math
import weakref

from typing import NamedTuple

import numba
import numpy as np
import pymunk

from loom.components import Box, Capsule, Collider, ColliderSet, Gravity, PixelSpace, Prism, Transform
from loom.components.pixels import warn_units
from loom.components.rigid_body import RigidBody2D, Space2D
from loom.engine import App
from loom.engine.persist import persistent
from loom.systems.shared.held import HeldByArrays, hold
from loom.systems.shared.plan import Plan, nothing

_Z_UP = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])   # local y → world z (capsule axis)
PIXEL_SIZED_BODY = 10.0
"""Size [m] beyond which a moving body read with scale 1 and no PixelSpace warns: likely pixels taken for metres."""
_GRAVITY_FROM: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""App → (PixelSpace, its revision) whose ``gravity`` last set the App's Gravity resource."""


def sync_bodies(app: App, dt: float) -> None:
    """Step the space (with a Space2D that asks for it) and move every body's Transform and shape colliders to it."""
    poses = app.init_resource(BodyPoses)
    pixels = app.resources.get(PixelSpace)
    if pixels is not None and pixels.gravity is not None:
        pixel_gravity(app, pixels)
    for entity, rigid in app.query(RigidBody2D):
        if not rigid.shape_entities:
            _bind(app, entity, rigid, body_units(rigid, pixels))
            poses.colliders[entity] = rigid.shape_entities
    space = app.resources.get(Space2D)
    if space is not None and space.step:
        space.space.step(dt)
    for entity, rigid in app.query(RigidBody2D):
        body = rigid.body
        pushed = _pushed(rigid)
        for shape_entity in rigid.shape_entities:            # the game may switch two_way or the body's type
            collider = app.get(shape_entity, Collider)
            if collider.two_way != pushed:
                collider.two_way = pushed
        frame = body_units(rigid, pixels)
        if any(rigid.cloth_shift.tolist()):          # the last step's in-step displacement (collect_impulses;
            _shift(body, frame, rigid.cloth_shift)    # floats, not ndarray.any(): 7 µs a body in a frame)
            rigid.cloth_shift[:] = 0.0
        at = body.position
        pose = (at.x, at.y, body.angle, rigid.z, *frame)
        if poses.last.get(entity) == pose:           # resting or static: its Transforms are where they were
            continue
        poses.last[entity] = pose
        own = app.try_get(entity, Transform)
        if own is not None:                          # the body's own Transform: carries pins (a cape)
            x, y = _to_metres(frame, body.position)
            own.position[:] = (x, y, rigid.z)
            own.rotation[:] = _turn_z(frame[3] * body.angle)
        for entity, shape in zip(rigid.shape_entities, rigid.shapes):
            transform = app.get(entity, Transform)
            centre, angle = _shape_pose(rigid, shape, frame)
            transform.position[:] = (centre[0], centre[1], rigid.z)
            c, s = math.cos(angle), math.sin(angle)
            if isinstance(shape, pymunk.Circle):                # turn · _Z_UP: the capsule axis along z
                transform.rotation[:] = ((c, 0.0, s), (s, 0.0, -c), (0.0, 1.0, 0.0))
            else:
                transform.rotation[:] = ((c, -s, 0.0), (s, c, 0.0), (0.0, 0.0, 1.0))


def pixel_gravity(app: App, pixels: PixelSpace) -> None:
    """Set the App's Gravity resource to the PixelSpace's ``gravity`` [px/s²] in m/s², y up, when that PixelSpace
    (or an assignment to it) is new since the last time: once, not every step, so a Gravity the game inserts later
    wins until the PixelSpace changes again."""
    key = (pixels, pixels.revision)
    seen = _GRAVITY_FROM.get(app)
    if seen is None or seen[0] is not key[0] or seen[1] != key[1]:
        app.insert_resource(Gravity(pixels.gravity_metres()))
        _GRAVITY_FROM[app] = key


def _pushed(rigid: RigidBody2D) -> bool:
    """Whether the cloth pushes ``rigid``'s body back: two-way and dynamic (what ``Coupling.begin`` couples)."""
    return rigid.two_way and rigid.body.body_type == pymunk.Body.DYNAMIC


Units = tuple[float, float, float, float]
"""How a body's pymunk coordinates map to metres: (units per metre, origin x, origin y [units], sign of y)."""


def body_units(rigid: RigidBody2D, pixels: PixelSpace | None) -> Units:
    """The body's units: its explicit ``scale`` (y up, origin 0); else the App's PixelSpace (pixels, its origin,
    y flipped when the game's y is down); else 1 unit per metre, y up."""
    if rigid.scale is not None:
        return (rigid.scale, 0.0, 0.0, 1.0)
    if pixels is not None:
        return (pixels.pixels_per_metre, float(pixels.origin[0]), float(pixels.origin[1]), pixels.sign_y)
    return (1.0, 0.0, 0.0, 1.0)


def _to_metres(frame: Units, point) -> tuple[float, float]:
    """A pymunk point (units) → world (x, y) [m]."""
    scale, ox, oy, sign = frame
    return (point[0] - ox) / scale, sign * (point[1] - oy) / scale


def _turn_z(angle: float) -> tuple[tuple[float, float, float], ...]:
    """Rotation matrix rows of a turn by ``angle`` [rad] about +z (counter-clockwise, y up)."""
    c, s = math.cos(angle), math.sin(angle)
    return ((c, -s, 0.0), (s, c, 0.0), (0.0, 0.0, 1.0))


def couple_bodies(app: App, h: float) -> Plan:
    """Before substep k's contacts: each two-way body takes the momentum the cloth gave it in substep k − 1, and
    its colliders are moved over substep k with it and the predicted impulse of substep k (module docstring).
    Returns the plan for the step's other substeps (``loom.systems.shared.plan``: the same kernel, each substep's
    part of the step)."""
    packed = app.resources.get(ColliderSet)
    if packed is None or packed.count == 0:
        return nothing
    coupling = app.init_resource(Coupling)
    if app.clock.substep_index == 0 and not coupling.begin(app, packed):
        return nothing
    if not coupling.rigids:                            # (plans off: a later substep finds begin's bodies here)
        return nothing
    held, rows = coupling.held, coupling.packed
    substeps = app.clock.substeps                      # fixed within a step (a plan relies on it)

    def plan(app: App, h: float) -> None:
        k = app.clock.substep_index
        _couple_substep_call(held, rows, k > 0, k / substeps, (k + 1) / substeps, h)
    plan(app, h)
    return plan


def collect_impulses(app: App, dt: float) -> None:
    """After the step: each two-way body takes the last substep's impulse and any whole-step solver's; its extra
    velocities go to the pymunk body, its extra displacement and the last force to the RigidBody2D."""
    coupling = app.resources.get(Coupling)
    if coupling is None or not coupling.rigids:
        return
    _couple_end_call(coupling.held, coupling.packed, dt / app.clock.substeps)
    state = coupling.state
    for b, (rigid, frame) in enumerate(zip(coupling.rigids, coupling.frames)):
        scale, sign = frame[0], frame[3]
        vx, vy, spin = state[b, VX], state[b, VY], state[b, SPIN]
        rigid.cloth_force[:] = state[b, FX:TORQUE + 1]
        rigid.cloth_shift[:] = state[b, SX:TURN + 1]
        if vx or vy or spin:
            body = rigid.body
            body.velocity = (body.velocity.x + vx * scale, body.velocity.y + sign * vy * scale)
            body.angular_velocity = body.angular_velocity + sign * spin
    coupling.rigids, coupling.frames = [], []


def _shift(body: pymunk.Body, frame: Units, shift: np.ndarray) -> None:
    """Move a pymunk body by (dx, dy) [m] and turn it by dθ [rad] (Loom's frame) about its centre of gravity."""
    scale, _, _, sign = frame
    body.position = (body.position.x + shift[0] * scale, body.position.y + sign * shift[1] * scale)
    body.angle = body.angle + sign * shift[2]


INV_MASS, INV_MOMENT, CX, CY, FX, FY, TORQUE, ARM_X, ARM_Y, ANGLE1, VX, VY, SPIN, SX, SY, TURN, MOVED = range(17)
"""Columns of ``CouplingArrays.state``, one row per coupled body, in Loom's frame (metres, y up, counter-clockwise).
Given at the step's start: 1/mass [1/kg], 1/moment [1/(kg·m²)] (0: never turns), the centre of gravity at the
step's end [m] and the last substep's force [N] and torque [N·m] (the predictor, updated every substep). Then:
its first collider's offset from that centre at the step's end [m] and that collider's angle then [rad]; the
extra velocity [m/s] and angular velocity [rad/s] the cloth gave it so far this step, the extra displacement
[m] and rotation [rad] so far, and 1 once its colliders' rows have been rewritten this step."""
GIVEN = TORQUE + 1
"""The columns ``Coupling.begin`` fills; the kernels derive or zero the rest."""


class CouplingArrays(NamedTuple):
    """The coupling kernels' arrays for one step's coupled bodies (held by ``Coupling``; sized to the largest
    count seen, the first ``start[-1]`` rows and ``len(start) − 1`` bodies used)."""

    start: np.ndarray
    """Each body's first entry in ``rows``, (bodies + 1,) int64."""
    rows: np.ndarray
    """ColliderSet row of each of the bodies' shapes, (m,) int64."""
    base0: np.ndarray
    """Each row's gathered pose at the step's start (quaternion w, x, y, z, position [m]), (m, 7)."""
    base1: np.ndarray
    """And at its end, (m, 7): the path pymunk moved the body along."""
    consumed: np.ndarray
    """The ColliderSet's impulse (k, 3) [N·s] at each row already taken this step, (m, 3)."""
    consumed_point: np.ndarray
    """And its impulse_point (Σ|j|·x [N·s·m], Σ|j| [N·s]), (m, 4)."""
    whole: np.ndarray
    """Impulses of whole-step solvers (there before the first substep), (m, 3) [N·s]: taken at the end."""
    whole_point: np.ndarray
    """Their impulse_point, (m, 4)."""
    state: np.ndarray
    """Per body: ``INV_MASS`` … ``MOVED``, (bodies, 17)."""
    poses: np.ndarray
    """Scratch: a row's pose at a substep's start and end, (2, 7)."""
    given: np.ndarray
    """Scratch: each body's ``GIVEN`` columns, flat, as ``Coupling.begin`` collects them."""


class Packed(NamedTuple):
    """The ColliderSet's arrays the coupling kernels read and write (held per combination: the ColliderSet
    swaps pose0 and pose1 every step, so two held ones alternate)."""

    impulse: np.ndarray
    """``ColliderSet.impulse`` (k, 3) [N·s], the environment kernel's running total this step."""
    impulse_point: np.ndarray
    """``ColliderSet.impulse_point`` (k, 4)."""
    pose0: np.ndarray
    """``ColliderSet.pose0`` (k, 7): rewritten for the coupled rows every substep."""
    pose1: np.ndarray
    """``ColliderSet.pose1`` (k, 7): likewise."""


@persistent
class Coupling:
    """Resource: the two-way dynamic bodies among this step's colliders and their motion so far (``state``).
    Filled at every step's first substep and emptied after it: nothing here outlives a step (what the next
    step needs, the last force and the displacement not yet in pymunk, is kept on the RigidBody2D, where
    snapshots find it). Its arrays are reallocated only when the number of coupled bodies changes or more shapes
    are coupled than ever before."""

    def __init__(self) -> None:
        self.rigids: list[RigidBody2D] = []
        self.frames: list[Units] = []
        self.held = None
        """The held ``CouplingArrays``."""
        self.packed = None
        """The held ``Packed`` of this step."""
        self.state = np.zeros((0, MOVED + 1))
        self._arrays: CouplingArrays | None = None
        self._packed = HeldByArrays()                  # the two alternating ``Packed`` (its docstring)
        self._rows_of: tuple[object, dict[int, int]] = (None, {})

    def begin(self, app: App, packed: ColliderSet) -> bool:
        """Find the two-way dynamic bodies whose shapes are packed colliders and keep their gathered paths;
        return whether there is any."""
        self.rigids, self.frames = [], []
        if self._rows_of[0] is not packed.entities:       # the same array while the colliders stay the same
            self._rows_of = (packed.entities, {int(e): r for r, e in enumerate(packed.entities)})
        row_of = self._rows_of[1]
        pixels = app.resources.get(PixelSpace)
        rows: list[int] = []
        start = [0]
        given: list[float] = []
        for _, rigid in app.query(RigidBody2D):
            if not rigid.two_way:
                continue
            body = rigid.body
            mass = body.mass
            if body.body_type != pymunk.Body.DYNAMIC or not 0.0 < mass < math.inf:   # massless: not in a space yet
                continue
            mine = [row_of[e] for e in rigid.shape_entities if e in row_of]
            if not mine:
                continue
            frame = body_units(rigid, pixels)
            scale = frame[0]
            moment = body.moment / (scale * scale)                            # [kg·m²]; inf (or 0): never turns
            self.rigids.append(rigid)
            self.frames.append(frame)
            rows.extend(mine)
            start.append(len(rows))
            fx, fy, torque = rigid.cloth_force
            given.extend((1.0 / mass, 1.0 / moment if 0.0 < moment < math.inf else 0.0,
                          *_to_metres(frame, body.position), fx, fy, torque))
        if not self.rigids:
            return False
        bodies = len(self.rigids)
        arrays = self._fit(bodies, len(rows))
        arrays.start[:] = start
        arrays.rows[:len(rows)] = rows
        arrays.given[:bodies * GIVEN] = given
        self.state = arrays.state[:bodies]
        arrays = (packed.impulse, packed.impulse_point, packed.pose0, packed.pose1)
        self.packed = self._packed.get(arrays, lambda: Packed(*arrays), _hold_call)
        _begin_rows_call(self.held, self.packed, bodies, len(rows))
        return True

    def _fit(self, bodies: int, shapes: int) -> CouplingArrays:
        """The arrays, grown (never shrunk) to hold ``bodies`` bodies with ``shapes`` shapes."""
        a = self._arrays
        if a is None or a.state.shape[0] < bodies or a.rows.shape[0] < shapes or a.start.shape[0] != bodies + 1:
            m = shapes if a is None else max(shapes, a.rows.shape[0])
            n = bodies if a is None else max(bodies, a.state.shape[0])
            a = self._arrays = CouplingArrays(np.zeros(bodies + 1, np.int64), np.zeros(m, np.int64), np.zeros((m, 7)),
                                              np.zeros((m, 7)), np.zeros((m, 3)), np.zeros((m, 4)), np.zeros((m, 3)),
                                              np.zeros((m, 4)), np.zeros((n, MOVED + 1)), np.zeros((2, 7)),
                                              np.zeros(n * GIVEN))
            self.held = _hold_call(a)
        return a


# --- kernels: a handful of rows a substep, in Loom's frame (metres, y up, radians counter-clockwise) ----------
@numba.njit(cache=True)
def _begin_rows(held, packed, bodies, m):
    """Start a step: each body's state from its given columns (the rest zeroed, the first collider's offset
    and angle derived), and the first m coupled rows' gathered poses and whole-step impulses (taken so far)."""
    a, p = held.value, packed.value
    for i in range(m):                          # element loops: a row copy (a.base0[i] = p.pose0[r]) compiles
        r = a.rows[i]                           # numba's shape-error formatting, seconds of a first launch
        for c in range(a.base0.shape[1]):
            a.base0[i, c] = p.pose0[r, c]
            a.base1[i, c] = p.pose1[r, c]
        for c in range(a.whole.shape[1]):
            a.whole[i, c] = p.impulse[r, c]
            a.consumed[i, c] = p.impulse[r, c]
        for c in range(a.whole_point.shape[1]):
            a.whole_point[i, c] = p.impulse_point[r, c]
            a.consumed_point[i, c] = p.impulse_point[r, c]
    for b in range(bodies):
        s = a.state[b]
        s[:] = 0.0
        for g in range(GIVEN):                  # a loop: an array-to-slice copy compiles numba's shape-error formatting
            s[g] = a.given[b * GIVEN + g]
        i = a.start[b]
        s[ARM_X] = a.base1[i, 4] - s[CX]
        s[ARM_Y] = a.base1[i, 5] - s[CY]
        s[ANGLE1] = _angle(a.base1[i, 0], a.base1[i, 1], a.base1[i, 2], a.base1[i, 3])


@numba.njit(cache=True)
def _couple_substep(held, packed, take, a0, a1, h):
    """Substep [a0, a1] of the step (fractions) of h [s]: if ``take``, the last substep's extra motion joins
    the displacement and its impulses (what the ColliderSet gained since) the velocities and the predictor;
    then the rows are written so the kernel's interpolation gives the gathered path plus the extra motion."""
    a, p = held.value, packed.value
    for b in range(a.start.shape[0] - 1):
        if take:
            _advance(a.state[b], h)
            jx, jy, torque = _take(a, b, a0, p.impulse, p.impulse_point, True)
            a.state[b, FX], a.state[b, FY], a.state[b, TORQUE] = jx / h, jy / h, torque / h
        _move(a, b, a0, a1, h, p.pose0, p.pose1)


@numba.njit(cache=True)
def _couple_end(held, packed, h):
    """After the step: the last substep's motion and impulses (which become the next step's predictor), then
    the whole-step solvers' impulses, go to each body's state."""
    a, p = held.value, packed.value
    for b in range(a.start.shape[0] - 1):
        _advance(a.state[b], h)
        jx, jy, torque = _take(a, b, 1.0, p.impulse, p.impulse_point, True)
        a.state[b, FX], a.state[b, FY], a.state[b, TORQUE] = jx / h, jy / h, torque / h
        _take(a, b, 1.0, a.whole, a.whole_point, False)


@numba.njit(cache=True)
def _path_velocity(s, h):
    """Extra velocity [m/s] and angular velocity [rad/s] the colliders move at in a substep of h [s]: the
    body's so far plus the predicted impulse of the substep (last force and torque × h over mass, moment): the
    backward-Euler path c = u + Ĵ/M of the module docstring ("Why (energy)")."""
    return (s[VX] + s[FX] * h * s[INV_MASS], s[VY] + s[FY] * h * s[INV_MASS],
            s[SPIN] + s[TORQUE] * h * s[INV_MOMENT])


@numba.njit(cache=True)
def _advance(s, h):
    """A substep of h [s] is over: the extra motion its colliders moved by joins the displacement."""
    vx, vy, w = _path_velocity(s, h)
    s[SX] += vx * h
    s[SY] += vy * h
    s[TURN] += w * h


@numba.njit(cache=True)
def _take(a, b, alpha, impulse, impulse_point, since):
    """Add to body b's extra velocities the impulses of its rows, at their |j|-weighted points, applied at
    fraction alpha of the step; ``since``: the ColliderSet's (k, ·) arrays, minus what was taken (then marked
    taken), else the rows' own (m, ·) arrays. Returns the total (jx, jy [N·s], torque [N·m·s]). A rigid body's
    impulse response: Δv = J/M, Δω = Σ (r × j)_z / I, r from the centre of gravity to each impulse's point."""
    s = a.state[b]
    cx, cy = _centre(a, b, alpha)
    cx += s[SX]
    cy += s[SY]
    jx = jy = torque = 0.0
    for i in range(a.start[b], a.start[b + 1]):
        r = a.rows[i] if since else i
        ix, iy = impulse[r, 0], impulse[r, 1]
        px, py, weight = impulse_point[r, 0], impulse_point[r, 1], impulse_point[r, 3]
        if since:
            ix -= a.consumed[i, 0]
            iy -= a.consumed[i, 1]
            px -= a.consumed_point[i, 0]
            py -= a.consumed_point[i, 1]
            weight -= a.consumed_point[i, 3]
            for c in range(a.consumed.shape[1]):          # element loops: see _begin_rows
                a.consumed[i, c] = impulse[r, c]
            for c in range(a.consumed_point.shape[1]):
                a.consumed_point[i, c] = impulse_point[r, c]
        if weight <= 0.0:
            continue
        jx += ix
        jy += iy
        torque += (px / weight - cx) * iy - (py / weight - cy) * ix
    s[VX] += jx * s[INV_MASS]
    s[VY] += jy * s[INV_MASS]
    s[SPIN] += torque * s[INV_MOMENT]
    return jx, jy, torque


@numba.njit(cache=True)
def _move(a, b, a0, a1, h, pose0, pose1):
    """Write body b's ColliderSet rows so that the contact kernel's interpolation (position lerp, quaternion
    nlerp) gives the gathered path plus the extra motion at a0 and a1, the substep's start and end: with
    poses A at a0 and B at a1, the rows ((a1·A − a0·B), ((1 − a0)·B − (1 − a1)·A)) / (a1 − a0). The last
    substep ends at a1 = 1: its end row is where the body is after the step (the next step's start)."""
    s = a.state[b]
    vx, vy, w = _path_velocity(s, h)
    if s[MOVED] == 0.0 and vx == 0.0 and vy == 0.0 and w == 0.0 and s[SX] == 0.0 and s[SY] == 0.0 \
            and s[TURN] == 0.0:
        return                                        # untouched so far: the gathered rows are right
    s[MOVED] = 1.0
    start, end = a.poses[0], a.poses[1]
    for i in range(a.start[b], a.start[b + 1]):
        _pose(a, b, i, a0, s[SX], s[SY], s[TURN], start)
        _pose(a, b, i, a1, s[SX] + vx * h, s[SY] + vy * h, s[TURN] + w * h, end)
        r = a.rows[i]
        for c in range(7):
            pose0[r, c] = (a1 * start[c] - a0 * end[c]) / (a1 - a0)
            pose1[r, c] = ((1.0 - a0) * end[c] - (1.0 - a1) * start[c]) / (a1 - a0)


@numba.njit(cache=True)
def _pose(a, b, i, alpha, sx, sy, turn, out):
    """Row i's pose (7,) at fraction alpha of its gathered path, displaced by (sx, sy) [m] and turned by
    ``turn`` [rad] about body b's centre of gravity, into out."""
    w, x, y, z = _nlerp(a.base0[i], a.base1[i], alpha)
    c, s = math.cos(0.5 * turn), math.sin(0.5 * turn)
    out[0], out[1], out[2], out[3] = c * w - s * z, c * x - s * y, c * y + s * x, c * z + s * w   # z-turn, then q
    cx, cy = _centre(a, b, alpha)
    px = (1.0 - alpha) * a.base0[i, 4] + alpha * a.base1[i, 4] - cx
    py = (1.0 - alpha) * a.base0[i, 5] + alpha * a.base1[i, 5] - cy
    ct, st = math.cos(turn), math.sin(turn)
    out[4] = cx + sx + ct * px - st * py
    out[5] = cy + sy + st * px + ct * py
    out[6] = (1.0 - alpha) * a.base0[i, 6] + alpha * a.base1[i, 6]


@numba.njit(cache=True)
def _centre(a, b, alpha):
    """Body b's centre of gravity [m] (x, y) on the gathered path at fraction alpha of the step: its first
    row's position less the offset ARM, turned by how far that row has yet to turn to its end angle."""
    s = a.state[b]
    i = a.start[b]
    w, x, y, z = _nlerp(a.base0[i], a.base1[i], alpha)
    turn = _angle(w, x, y, z) - s[ANGLE1]
    c, t = math.cos(turn), math.sin(turn)
    return ((1.0 - alpha) * a.base0[i, 4] + alpha * a.base1[i, 4] - (c * s[ARM_X] - t * s[ARM_Y]),
            (1.0 - alpha) * a.base0[i, 5] + alpha * a.base1[i, 5] - (t * s[ARM_X] + c * s[ARM_Y]))


@numba.njit(cache=True)
def _nlerp(q0, q1, alpha):
    """Normalised linear interpolation of two quaternions (w, x, y, z) (the first four of each pose), as the
    contact kernel's ``pose``."""
    w = (1.0 - alpha) * q0[0] + alpha * q1[0]
    x = (1.0 - alpha) * q0[1] + alpha * q1[1]
    y = (1.0 - alpha) * q0[2] + alpha * q1[2]
    z = (1.0 - alpha) * q0[3] + alpha * q1[3]
    n = math.sqrt(w * w + x * x + y * y + z * z)
    return w / n, x / n, y / n, z / n


@numba.njit(cache=True)
def _angle(w, x, y, z):
    """Turn [rad] about z of a collider's unit quaternion: the angle of its matrix's first column (for every
    shape the bridge makes — a capsule's turn · axis-to-z too — that column is (cos, sin, 0))."""
    return math.atan2(2.0 * (x * y + w * z), 1.0 - 2.0 * (y * y + z * z))


def _bind(app: App, entity: int, rigid: RigidBody2D, frame: Units) -> None:
    """Create one collider entity per shape of the body, and the body's own Transform if its entity has none
    (once: components are not added per frame; during a step the Transform is queued, and ``try_get`` — what
    the pins use — already returns it).

    pymunk keeps a body's shapes in a set; the order is fixed here, on the component, so a snapshot
    pairs every shape with its collider again (an order recomputed from ids would not survive a load)."""
    if app.try_get(entity, Transform) is None:
        x, y = _to_metres(frame, rigid.body.position)
        app.add_component(entity, Transform.from_2d(x, y, frame[3] * rigid.body.angle, rigid.z))
    rigid.shapes = list(rigid.body.shapes)
    if rigid.scale is None and rigid.body.body_type != pymunk.Body.STATIC and PixelSpace not in app.resources:
        _warn_if_pixels(app, entity, rigid)
    s, sign = frame[0], frame[3]
    for shape in rigid.shapes:
        margin = rigid.thickness
        if isinstance(shape, pymunk.Circle):
            geometry = Capsule(shape.radius / s, rigid.depth / 2)
        elif isinstance(shape, pymunk.Segment):
            length = (shape.b - shape.a).length / s
            radius = shape.radius / s
            geometry = Box((length / 2 + radius, max(radius, 1e-3), rigid.depth / 2))
        elif isinstance(shape, pymunk.Poly):
            vertices = np.array([tuple(v) for v in shape.get_vertices()]) * (1.0 / s, sign / s)  # Prism re-winds
            half = _rectangle_half_size(vertices)
            if half is not None:                         # a create_box: an exact, cheap Box (a hero, a crate)
                geometry = Box((half[0], half[1], rigid.depth / 2))
            else:
                geometry = Prism(vertices, half_depth=rigid.depth / 2)
            margin += shape.radius / s
        else:
            raise TypeError(f"RigidBody2D.body has a shape of type {type(shape).__name__}; "
                            f"expected pymunk Circle, Segment or Poly")
        friction = shape.friction if rigid.friction is None else rigid.friction
        collider = Collider(geometry, thickness=margin, friction=friction, two_way=_pushed(rigid))
        centre, angle = _shape_pose(rigid, shape, frame)
        rigid.shape_entities.append(app.spawn(collider, Transform.from_2d(centre[0], centre[1], angle, rigid.z)))


def _warn_if_pixels(app: App, entity: int, rigid: RigidBody2D) -> None:
    """Warn once per App (UnitsWarning naming PixelSpace) if the moving body read in metres (no PixelSpace, scale
    None) is bigger than PIXEL_SIZED_BODY: a 36 × 80 px hero read as 36 × 80 m."""
    boxes = [shape.cache_bb() for shape in rigid.shapes]
    if not boxes:
        return
    w = max(b.right for b in boxes) - min(b.left for b in boxes)
    h = max(b.top for b in boxes) - min(b.bottom for b in boxes)
    if max(w, h) > PIXEL_SIZED_BODY:
        warn_units(app, "body size", f"RigidBody2D on entity {entity}: its pymunk body is {w:.3g} × {h:.3g} m, read "
                   f"in metres (the App has no PixelSpace and RigidBody2D.scale is None): pixels? Insert "
                   f"loom.PixelSpace(pixels_per_metre, origin=...) before the first step (bodies, loom.cape and "
                   f"loom.flag are then read in the game's pixels, y down), or give RigidBody2D(scale=...) "
                   f"(units per metre)")


@persistent
class BodyPoses:
    """Resource: each RigidBody2D entity's pose when its colliders were last moved (bodies that did not
    move since, resting or static, are skipped: their colliders are already there)."""

    def __init__(self) -> None:
        self.last: dict[int, tuple[float, ...]] = {}
        self.colliders: dict[int, list[int]] = {}
        """The collider entities made for each body entity's shapes (despawned with the body)."""


def forget_body(app: App, entity: int) -> None:
    """On despawn (``App.on_despawn``): drop a body's pose and despawn the collider entities made for its
    shapes, which would otherwise stay in the world where the body last was."""
    poses = app.resources.get(BodyPoses)
    if poses is None:
        return
    poses.last.pop(entity, None)
    for collider in poses.colliders.pop(entity, ()):
        if app.try_get(collider, Collider) is not None:       # not despawned by the game already
            app.despawn(collider)


_BOX_CENTRES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Local centre of each polygon shape's collider (a rectangle's centre, else the body origin), read once."""


def _shape_pose(rigid: RigidBody2D, shape: pymunk.Shape, frame: Units) -> tuple[tuple[float, float], float]:
    """World centre [m] and angle [rad] (counter-clockwise, y up) of a shape's collider frame."""
    body = rigid.body
    if isinstance(shape, pymunk.Circle):
        centre = body.local_to_world(shape.offset)
        angle = body.angle
    elif isinstance(shape, pymunk.Segment):
        a, b = body.local_to_world(shape.a), body.local_to_world(shape.b)
        centre = (a + b) / 2
        angle = math.atan2(b.y - a.y, b.x - a.x)
    else:
        local = _BOX_CENTRES.get(shape)
        if local is None:
            vertices = np.array([tuple(v) for v in shape.get_vertices()])
            local = _BOX_CENTRES[shape] = (tuple(vertices.mean(axis=0)) if _rectangle_half_size(vertices) is not None
                                           else (0.0, 0.0))        # a Box is centred on the rectangle
        centre = body.local_to_world(local)
        angle = body.angle
    return _to_metres(frame, centre), frame[3] * angle


def _rectangle_half_size(vertices: np.ndarray) -> tuple[float, float] | None:
    """Half width and height of a polygon that is a rectangle aligned with its body's axes, else None.

    Such polygons (pymunk's ``Poly.create_box``) become a Box collider: its exact distance is a few
    operations, where a general prism walks every edge."""
    if vertices.shape[0] != 4:
        return None
    lo, hi = vertices.min(axis=0), vertices.max(axis=0)
    corners = {(float(x), float(y)) for x in (lo[0], hi[0]) for y in (lo[1], hi[1])}
    snapped = {(float(x), float(y)) for x, y in vertices}
    if len(corners) != 4 or not all(min(abs(cx - x) + abs(cy - y) for x, y in snapped) < 1e-9 for cx, cy in corners):
        return None
    return (hi[0] - lo[0]) / 2, (hi[1] - lo[1]) / 2


_hold_call, _begin_rows_call, _couple_substep_call, _couple_end_call = hold, _begin_rows, _couple_substep, _couple_end
"""The Python call sites' names of ``hold`` and the coupling kernels (a cold launch binds them to their Python twins
while a worker compiles the kernels: ``loom.systems.coupling.cold``)."""
