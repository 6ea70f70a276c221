"""Environment collision: keep cloth out of colliders, with Coulomb friction against moving surfaces.

Once per step every active Collider is packed (``ColliderSet``) with its pose at the start and end of
the step; each substep the kernel interpolates each collider's pose (position lerp, quaternion
nlerp) to the substep's start and end, and for every free particle, in the collider's local frame:

1. continuous collision (fast particles): march the particle's substep path, from x_prev in the
   start pose to x in the end pose, by conservative advancement on the shape's signed distance; if
   it reaches the surface margin, the rest of its path continues along the surface (its part into
   the surface removed), so nothing tunnels through a thin box and nothing snags on one. A path
   that starts on the margin counts only if it heads into the surface;
2. contact: a particle closer than ``reach`` = cloth thickness + collider thickness is set back
   along the outward normal n by the penetration depth (Fuhrmann 2003 eq. 18: r_n = n·(t − d));
3. friction on the slip relative to the surface: d = (x − x_prev) − (surface point's motion over
   the substep), d_t = d − n(d·n) (eq. 19), cut by r_t = −c_f·d_t (eqs. 20–21) with Coulomb's law
   in position form: c_f = 1 (static, sticks) if |d_t| ≤ μ·N, else μ·N/|d_t| (kinetic);
   μ = √(μ_cloth·μ_collider), N the normal push the surface gave this substep: the contact's depth
   plus what the XPBD solve would have moved the particle into a surface it rests on (its yarns keep
   it on the surface: ``Cloth.contact`` column 4). A particle resting on a moving platform therefore
   rides along; one static friction held is ``STUCK`` for the pass after the collisions, with the friction it did not
   use (μ·N less its slip [m], column 4, negative): how hard that pass may pull it before it slides.
4. pinching: a particle pushed out of one collider into another whose surface faces the other way
   (normals more than 120° apart: a hero's feet landing on cape lying on the floor) cannot satisfy
   both by pushing along their normals — each substep one pushes it back into the other. It is put on
   the larger collider's surface (the level: the larger bounding ball, a plane or mesh counts as
   infinite) and slid out of the smaller one (the body) within that surface, toward the cloth's
   centre (so neighbours leave the same way), by up to ``PINCH_SLIDE`` a substep, until it is the
   body's contact reach outside it (bisection on its signed distance, ``PINCH_STEPS``). It leaves the
   pinch at rest (x_prev = x) and gives the colliders no impulse: caught between a landing hero's feet
   and the floor, moving only by the slide, it has no velocity of its own (kept, the solve's pull on it
   in the substeps it was held became velocity: the cape flew up 6–8 m/s when the hero landed on it).
The correction's momentum m·Δx/h is accumulated per collider (``ColliderSet.impulse``) so a rigid
body bridge can push back (two-way coupling).

``keep_out`` runs last in the substep, after the yarns' settle and the deformation limit: what those passes moved back
inside a collider is pushed out again, the limit rerun with the pushed particles sliding along their surfaces, so no
step ends inside a contact reach (issue 44 item 7; docs/physics.md, "Contacts hold").
"""
from __future__ import annotations

import math
from types import FunctionType
from typing import Any, NamedTuple

import numba
import numpy as np
from numba import prange

from loom.components import Cloth, Collider, ColliderSet, Tearable, Transform
from loom.components.cloth import HELD, STUCK
from loom.components.collider import BOX, FLAT, PLANE, ROUND, Packing, quaternion_of
from loom.engine import App
from loom.launch import cold_kernels
from loom.engine.persist import persistent
from loom.systems.shared.distance_limits import DeformationLimit, DeformationLimits
from loom.systems.shared.held import HeldByArrays, hold
from loom.systems.shared.plan import Plan, nothing
from loom.systems.shared.shapes import Shapes, basic_only_sdf, basic_sdf, is_basic, pose, sdf

CCD_STEPS = 24
"""Most conservative-advancement steps per swept particle path."""
CHUNKS = 16
"""Fixed particle ranges of the contact kernel (not the thread count: results stay the same)."""
PINCH_STEPS = 16
"""Bisection steps that find where a pinched particle leaves the smaller collider's reach (to
``PINCH_SLIDE`` / 2^16: half a micrometre)."""
PINCH_COSINE = -0.5
"""Two colliders pinch a particle when their outward normals there have a cosine below this (> 120°)."""
PINCH_SLIDE = 0.03
"""Farthest a pinched particle slides out in one substep beyond where it started it [m]: the cloth follows
within a frame or two (the cape game's 7 substeps: 0.21 m a frame, about a hero's half width) instead of being
torn across the body in one jump (tests/test_pinching.py, the cape under a landing hero's feet: worst stretch
736 % slid out at once, under 120 % at 0.03 m, as the landing alone)."""
PINCH_SIDE = -0.5
"""A particle at the foot of a body's side face is pinched when the way out (``_exit``) has a cosine of at
least this with the face's normal: it leaves by that face or along it (not into it)."""
PINCH_NEAREST = -0.5
"""A pinched particle slides out by the body's nearest face when that face's direction has a cosine of at
least this with the way out (the shortest way that does not head back under the body)."""
KEEP_OUT_ROUNDS = 1
"""Rounds of (deformation limit, push-out) ``keep_out`` runs after its first push-out in a substep, while a push-out
finds a particle inside; it always ends with a push-out (contacts first). One: a slide along a flat face stays out
of it, one along a curved surface or across a box's edge dips back in only to second order. Where the surfaces'
normals hold a link's ends (``MIN_MOBILITY``) the limit cannot shorten it, so a further round's push lengthens it
again (docs/physics.md, "Contacts hold")."""
KEEP_OUT_SLACK = 0.005
"""Depth inside the contact reach, as a share of the cloth's thickness [-], that the push-outs after the limit's second
run in ``keep_out`` leave alone (the first push-out leaves none): half of the 1 % of the thickness the margin may
lose (tests/test_contacts_rest.py). A slide along a curved surface dips back in only by micrometres; pushing it out
again would lengthen its links past the limit (docs/physics.md, "Contacts hold")."""
KEEP_OUT_LIMIT_PASSES = 100
"""Most work of the deformation limit's second run in ``keep_out`` [passes' worth of link checks]: as the XPBD
limit's own (``constraints.STRAIN_LIMIT_MAX_PASSES``); it stops as soon as no link is over."""
RESTING = 0.1
"""A particle touching a collider that moves at most this fraction of the contact reach in the substep is resting
on it (``Cloth.contact`` column 3): the next substep's XPBD solve keeps it on that surface too. A faster surface (a
falling ball, a running hero) may be moving away from it, and a particle held to where the surface was would not
follow it (a one-way ball passing through a bed left the bed bulging upward); its normal serves only the pass
right after the collisions (``settle_yarns``), when the surface is still where it was met."""
CONTACT_SKIN = 0.01
"""A particle within (1 + this) × the contact reach of a round collider at rest (``Shape.skin`` ROUND: sphere,
cylinder, capsule, cone), or of a FLAT one (a box) at rest while no two-way body is near the cloth, touches it [-]:
it gets the surface's normal and friction, though only one inside the reach is pushed out. Why: a particle the solve
slides along a convex surface at rest (a round table's rim) ends a hair beyond the reach, and counted free it would be
pulled into the surface by the pass after the collisions and pushed out by the next substep's, so the rim chatters and
the cloth creeps (docs/models.md, "Creep on a table"). Not near a two-way body or for a moving collider, whose yarns
are left alone after the collisions: there the skin would keep particles pressed into the body (tests/test_pinching.py,
tests/test_games.py). Measurements: docs/performance.md, "Moved from docstrings"."""
PARALLEL_MIN_PARTICLES = 2_000
"""Cloths with at least this many particles use the parallel contact kernel when numba has threads. Serial below
2,000 particles (the cape, the flag): threads save little on small cloths when idle and, with another process busy
on the other core, every parallel loop waits for a worker the OS may not run for milliseconds (docs/performance.md,
"Threads")."""


def gather_colliders(app: App, dt: float) -> None:
    """Pack every active Collider with its Transform (start and end pose of this step) into ColliderSet; each shape
    through its entry of the shape table (``collider.Shape``: ``pack``, ``extents``, ``skin``); the numbers of a
    shape unchanged since the last step (same object, same ``revision``, no shared arrays) are reused."""
    packed = app.init_resource(ColliderSet)
    _report_new_contacts(app, packed)
    scratch = app.init_resource(ContactScratch)
    rows = [(e, c, t) for e, c, t in app.query(Collider, Transform) if c.active]
    k = len(rows)
    same = k == packed.count == packed.bound.shape[0] == len(scratch.packed_shapes) \
        and packed.entities.tolist() == [e for e, _, _ in rows]
    if same:          # the colliders of the last step: reuse its arrays, its end poses start this step
        entities, kind, params, margin, friction = packed.entities, packed.kind, packed.params, packed.margin, \
            packed.friction
        pose0, pose1, mesh, two_way = packed.pose1, packed.pose0, packed.mesh, packed.two_way
        bound, extents, skin = packed.bound, packed.extents, packed.skin
        previous = None
    else:             # colliders came or went: new arrays; each one's last end pose by entity
        previous = {int(e): packed.pose1[r] for r, e in enumerate(packed.entities)}
        entities, kind, params = np.zeros(k, np.int64), np.zeros(k, np.int32), np.zeros((k, 4))
        margin, friction, pose0, pose1 = np.zeros(k), np.zeros(k), np.zeros((k, 7)), np.zeros((k, 7))
        mesh = np.full(k, -1, np.int32)
        two_way = np.zeros(k, np.bool_)
        bound, extents, skin = np.zeros(k), np.zeros((k, 3)), np.zeros(k, np.int8)
        scratch.packed_shapes = [None] * k
    seen = scratch.packed_shapes
    packing = Packing()
    basic_only = True
    for r, (entity, collider, transform) in enumerate(rows):       # per collider, once per step
        shape = collider.shape
        entities[r] = entity
        margin[r] = collider.thickness
        friction[r] = collider.friction
        two_way[r] = collider.two_way
        q = quaternion_of(transform.rotation)
        if previous is not None:
            before = previous.get(entity)
            pose0[r] = (*q, *transform.position) if before is None else before
        w, x, y, z = pose0[r, :4].tolist()
        if w * q[0] + x * q[1] + y * q[2] + z * q[3] < 0.0:      # shortest arc for the nlerp
            q = (-q[0], -q[1], -q[2], -q[3])
        pose1[r, :4] = q
        pose1[r, 4:] = transform.position
        if shape.basic:                                            # its numbers, packed again if it changed
            row = seen[r]
            if row is None or row[0] is not shape or row[1] != shape.revision:
                row = seen[r] = (shape, shape.revision, shape.pack(packing), shape.extents())
            packing.mesh = -1
        else:                                                      # shared arrays (prism outlines, meshes): packed
            basic_only = False                                     # each step, after the ones before it
            packing.mesh = -1
            row = (shape, shape.revision, shape.pack(packing), shape.extents())
            seen[r] = None
        params[r] = row[2]                                         # every row written each step (an array written
        bound[r], extents[r, 0], extents[r, 1], extents[r, 2] = row[3]    # in place between steps is not kept)
        kind[r], mesh[r], skin[r] = shape.code, packing.mesh, shape.skin
    packed.entities, packed.kind, packed.params, packed.margin, packed.friction = entities, kind, params, margin, \
        friction
    packed.pose0, packed.pose1, packed.mesh, packed.two_way = pose0, pose1, mesh, two_way
    packed.bound, packed.extents, packed.skin = bound, extents, skin
    polygons, meshes = packing.polygons, packing.meshes
    if polygons or packed.polygons.shape[0]:
        packed.polygons = np.concatenate(polygons) if polygons else np.zeros((0, 2))
    if packed.mesh_arrays is None or [id(m) for m in meshes] != [id(m) for m in packed.meshes]:
        packed.pack_meshes(meshes)                                # static meshes: packed once
    if same:
        packed.impulse.fill(0.0)
        packed.impulse_point.fill(0.0)
    else:
        packed.impulse = np.zeros((k, 3))
        packed.impulse_point = np.zeros((k, 4))
    arrays = (kind, params, packed.polygons, mesh, *packed.mesh_arrays, margin, friction, pose0, pose1, packed.impulse,
              packed.impulse_point, two_way, bound, extents, skin)   # a steady step: the last two steps' arrays
    scratch.colliders = scratch.held.get(arrays, lambda: Colliders(Shapes(*arrays[:9]), *arrays[9:]), _hold_call)
    scratch.basic_only = basic_only


def _report_new_contacts(app: App, packed: ColliderSet) -> None:
    """Emit ``collision_started`` (collider entity, step) for each collider that cloth touched in the
    last step but not in the step before; ``packed`` still holds the last step's impulses."""
    touched = set(packed.entities[packed.impulse_point[:, 3] > 0.0].tolist())
    for entity in sorted(touched - packed.touching):
        app.emit("collision_started", collider=entity, step=app.clock.step_index - 1)
    packed.touching = touched


def collide_environment(app: App, h: float) -> Plan:
    """Project each substepped cloth's particles out of every collider, with friction and CCD; returns the plan for
    the step's other substeps (``loom.systems.shared.plan``: the same kernels, each substep's part of the step)."""
    packed = app.resources.get(ColliderSet)
    if packed is None or packed.count == 0:
        if app.clock.substep_index == 0:             # nothing to touch: no contact normal from an earlier collider
            for _, cloth in app.query(Cloth):        # (once a step: only this system writes contacts; a test per
                if cloth.substepped and cloth.contact.any():    # cloth and substep cost 100 flags 1 ms a frame)
                    cloth.contact[:] = 0.0
        return nothing
    scratch = app.init_resource(ContactScratch)
    scratch.fit(packed.count)
    parallel = app.step_threads > 1
    kernels = (_collide_basic_call, _COLLIDE_BASIC[1]) if scratch.basic_only else _COLLIDE
    rows = [(kernels[parallel and cloth.particle_count >= PARALLEL_MIN_PARTICLES], cloth.material.thickness,
             cloth.material.friction, cloth.mass, cloth.inv_mass, cloth.x_prev, cloth.x, cloth.contact)
            for _, cloth in app.query(Cloth) if cloth.substepped]
    colliders, frames = scratch.colliders, scratch.frames
    substeps = app.clock.substeps                    # fixed within a step (a plan relies on it)

    def plan(app: App, h: float) -> None:
        k = app.clock.substep_index
        a0 = k / substeps
        a1 = (k + 1) / substeps
        for kernel, thickness, friction, mass, inv_mass, x_prev, x, contact in rows:
            near = _touches_call(colliders, frames, a0, a1, thickness, friction, mass, inv_mass, x_prev, x, contact)
            if near == 0 and _may_skip(kernel):
                contact.fill(0.0)                    # what the contact kernel writes for a particle touching nothing
                continue
            kernel(colliders, frames, near, 1.0 / h, thickness, friction, mass, inv_mass, x_prev, x, contact)
    plan(app, h)
    return plan


def keep_out(app: App, h: float) -> Plan:
    """The substep's last position pass (after ``ClothSet.SETTLE``: the yarns settled, the deformation limit applied),
    so that no step ends with a particle inside a collider and the limit still holds:

    1. every free particle of a substepped cloth still inside a collider's contact reach is set back along the
       outward normal n by its depth (Fuhrmann 2003 eq. 18, r_n = n·(t − d)), at the colliders' end-of-substep
       poses, the momentum m·Δx/h to the collider (two-way coupling, as in the contact pass);
    2. if it pushed any and the cloth has a deformation limit (``DeformationLimits``), the limit runs again with
       those particles' normals as contacts: it slides them along their surfaces instead of pulling them back in
       (``distance_limits.limit_lengths``), so the push does not leave links over their bound;
    3. the push of 1 once more, for a particle deeper than ``KEEP_OUT_SLACK`` × thickness inside the reach: what a
       slide across a box's edge (or, to second order, along a curved surface) took back in; 2 and 3 again while 3
       finds such a particle, at most ``KEEP_OUT_ROUNDS``.
    Why: the passes after the contacts (``settle_yarns``, the deformation limit, self-collision) may move a particle
    back inside (a two-way body has no contact normal there: the solve and the limit may press cloth into it), and
    the step would end there. The contact pass's friction, pinches and sweeps are not repeated (a particle squeezed
    out of a pinch, ``HELD``, is left where it was put). Returns the plan for the step's other substeps."""
    packed = app.resources.get(ColliderSet)
    if packed is None or packed.count == 0:
        return nothing
    scratch = app.init_resource(ContactScratch)
    scratch.fit(packed.count)
    limits = app.resources.get(DeformationLimits)
    tearing = {id(cloth) for _, cloth, tear in app.query(Cloth, Tearable) if tear.active}
    rows = []
    slides = {}                                       # this step's cloths only: a despawned cloth's array goes
    for _, cloth in app.query(Cloth):
        if not cloth.substepped:
            continue
        limit = _limit_of(cloth, limits, tearing)
        slide = scratch.slides.get(id(cloth))
        if slide is None or slide.shape != cloth.contact.shape:
            slide = np.zeros_like(cloth.contact)
        slides[id(cloth)] = slide
        rows.append((cloth.material.thickness, cloth.mass, cloth.inv_mass, cloth.x_prev, cloth.x, cloth.contact, slide,
                     limit))
    scratch.slides = slides
    colliders, frames = scratch.colliders, scratch.frames
    kernel = _KEEP_OUT[0 if scratch.basic_only else 1]

    def plan(app: App, h: float) -> None:
        for thickness, mass, inv_mass, x_prev, x, contact, slide, limit in rows:
            np.copyto(slide, contact)
            pushes = kernel(colliders, frames, 1.0 / h, thickness, mass, inv_mass, x_prev, x, contact, slide, 0.0)
            rounds = 0
            while pushes and limit is not None and rounds < KEEP_OUT_ROUNDS:
                limit.apply(KEEP_OUT_LIMIT_PASSES, inv_mass, x, slide)
                if not limit.limited:                # no link was over: it moved nothing, nothing to push again
                    break
                pushes = kernel(colliders, frames, 1.0 / h, thickness, mass, inv_mass, x_prev, x, contact, slide,
                                KEEP_OUT_SLACK * thickness)
                rounds += 1
    plan(app, h)
    return plan


def _limit_of(cloth: Cloth, limits: DeformationLimits | None, tearing: set[int]) -> DeformationLimit | None:
    """The deformation limit the cloth's model applied this substep (``DeformationLimits``, up to date for its links),
    or None: a cloth with no ``strain_limit`` and no ``stretch_limit`` (or only a stretch limit, while it can tear:
    such a cloth keeps only Provot's strain limit) has none."""
    m = cloth.material
    if limits is None or m.strain_limit is None and (m.stretch_limit is None or id(cloth) in tearing):
        return None
    entry = limits.by_cloth.get(id(cloth))
    if entry is None or entry[0]() is not cloth or entry[1] is not cloth.link_i or entry[2] is not cloth.link_j \
            or entry[4] != cloth.particle_count:
        return None
    return entry[-1]


def _may_skip(kernel: Any) -> bool:
    """Whether a substep in which no collider is near a cloth may leave its contact ``kernel`` uncalled: once the
    kernel is loaded in this process, or while it is not yet compiled (a first launch: the compile-ahead worker
    compiles it meanwhile, and the game only when a collider comes near). Not when it sits in numba's cache
    unloaded: loading it takes 10 ms (the cape's contact tree), better in the first frame than at the first contact
    in the middle of play. Never under ``--precompile`` or the kernel lists' recorder (``cold_kernels.ENABLED``
    False), so the cache and the lists hold it."""
    if kernel in _LOADED:
        return cold_kernels.ENABLED
    loaded = bool(getattr(kernel, "signatures", True))           # (a plain function in a test: loaded)
    if loaded:
        _LOADED.add(kernel)                                      # (``signatures`` costs 3 µs a call: once)
    return cold_kernels.ENABLED and (loaded or not cold_kernels.cached(kernel))


_LOADED: set[Any] = set()
"""The contact kernels ``_may_skip`` found loaded: a loaded kernel stays loaded."""


class Colliders(NamedTuple):
    """The contact kernel's view of the ColliderSet for one step (k colliders; held by ``gather_colliders``)."""

    shapes: Shapes
    """Kinds, sizes, prism outlines and meshes, as ``shapes.sdf`` reads them."""
    margin: np.ndarray
    """Collider thickness, (k,) [m]."""
    friction: np.ndarray
    """Friction coefficient, (k,) [-]."""
    pose0: np.ndarray
    """Pose at the start of the step, (k, 7): quaternion (w, x, y, z), position [m]."""
    pose1: np.ndarray
    """Pose at the end of the step, (k, 7)."""
    impulse: np.ndarray
    """Momentum the cloth gave each collider this step, (k, 3) [N·s] (accumulated)."""
    impulse_point: np.ndarray
    """Σ|j|·(contact point) (3) [N·s·m] and Σ|j| [N·s] per collider, (k, 4) (accumulated)."""
    two_way: np.ndarray
    """``Collider.two_way``, (k,) bool: a particle touching such a collider has no normal and −1 in
    ``Particles.contact`` column 3: the solve and the stretch limit may press it into the body (the body's push
    back, at the next contact, is the coupling's impulse), and its yarns are not solved again after the collisions
    (``loom.systems.xpbd.yarns.solve_yarn``)."""
    bound: np.ndarray
    """Radius of the ball about its local origin that holds each shape, (k,) [m] (0: unbounded; ``Shape.extents``)."""
    extents: np.ndarray
    """Half extents of the box along its local axes that holds each shape, (k, 3) [m]; a plane's unit normal."""
    skin: np.ndarray
    """``Shape.skin`` of each collider, (k,) int8: NO_SKIN, ROUND or FLAT (``CONTACT_SKIN``)."""


class Frames(NamedTuple):
    """The contact kernel's per-collider work arrays (``ContactScratch``), written each substep."""

    rot0: np.ndarray
    """Rotation at the substep's start, (k, 3, 3)."""
    rot1: np.ndarray
    """Rotation at the substep's end, (k, 3, 3)."""
    pos0: np.ndarray
    """Position at the substep's start, (k, 3) [m]."""
    pos1: np.ndarray
    """Position at the substep's end, (k, 3) [m]."""
    bound: np.ndarray
    """Bounding-ball radius of the shape, (k,) [m] (0: unbounded)."""
    extent: np.ndarray
    """Half extents of the box around the shape at its substep's end pose, world axes, (k, 3) [m] (where ``bound`` >
    0): a long thin collider (a flagpole) is far tighter in it than in its bounding ball; a plane's unit normal in
    world axes (``_near_colliders``); zero for a mesh."""
    motion: np.ndarray
    """Upper bound on how far a point of the surface moves in the substep, (k,) [m]."""
    near: np.ndarray
    """Indices of the colliders near the cloth, (k,) int64 (a prefix is used)."""
    acc: np.ndarray
    """Each particle range's momentum per collider, (CHUNKS, k, 7): impulse (3), impulse_point (4)."""
    distances: np.ndarray
    """Each particle range's signed distance [m] and normal, (CHUNKS, 4)."""
    centre: np.ndarray
    """Mean position of the cloth's particles, (3,) [m]: where pinched particles slide out toward."""
    mine: np.ndarray
    """Each particle range's current particle's momentum per collider, (CHUNKS, k, 7): added to ``acc``
    when the particle is done, dropped if it was pinched."""


class Particles(NamedTuple):
    """One cloth's arrays and material, as the contact kernel reads them."""

    x_prev: np.ndarray
    """Positions at the substep's start, (n, 3) [m]; a pinched particle's slide moves it too (no velocity)."""
    x: np.ndarray
    """Positions at its end, (n, 3) [m]: written."""
    mass: np.ndarray
    """(n,) [kg]."""
    inv_mass: np.ndarray
    """(n,) [1/kg]; 0: pinned, not moved."""
    thickness: float
    """Cloth thickness [m]."""
    friction: float
    """Cloth friction coefficient [-]."""
    contact: np.ndarray
    """What each particle touched this substep, (n, 4): the collider's outward normal and 1.0 if it was at rest
    (``RESTING``), 0.0 if not; −1.0 (and no normal) if it touched only two-way bodies; ``HELD`` (and no normal) if it
    was squeezed out of a pinch; zero where it touched nothing; the last collider's where several; ``Cloth.contact``."""


@persistent
class ContactScratch:
    """Resource: the contact kernel's per-collider work arrays, reallocated only when the collider count
    changes (the substep's hot path allocates nothing), and this step's colliders, held for the kernel."""

    def __init__(self) -> None:
        self.frames = None
        """The held ``Frames``."""
        self.colliders = None
        """The held ``Colliders`` of this step (``gather_colliders``)."""
        self.held = HeldByArrays()
        """The held ``Colliders`` of the last two steps: a steady step reuses the arrays of the step before the last
        (``gather_colliders`` swaps the start and end poses)."""
        self.basic_only = False
        """Whether this step's colliders are all basic shapes (no prism, no mesh): the contact kernels compiled
        without prism and mesh code then run (``_COLLIDE_BASIC``)."""
        self.count = -1
        self.slides: dict[int, np.ndarray] = {}
        """Per cloth (by id), ``keep_out``'s contacts for the limit's second run, (n, 5): scratch."""
        self.packed_shapes: list = []
        """Per ColliderSet row, (shape, revision, its ``pack`` row, its ``extents``) as ``gather_colliders`` last packed
        it there (None: packed each step): a shape still there, unchanged, is not packed again."""

    def fit(self, k: int) -> None:
        """Size the work arrays (``Frames``) for k colliders."""
        if k != self.count:
            self.count = k
            self.frames = _hold_call(Frames(np.zeros((k, 3, 3)), np.zeros((k, 3, 3)), np.zeros((k, 3)),
                                            np.zeros((k, 3)), np.zeros(k), np.zeros((k, 3)), np.zeros(k),
                                            np.zeros(k, np.int64), np.zeros((CHUNKS, k, 7)),
                                            np.zeros((CHUNKS, 4)), np.zeros(3), np.zeros((CHUNKS, k, 7))))


# --- kernels --------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _prepare(colliders, frames, a0, a1):
    """Write the collider poses at the substep's start and end (fractions a0, a1 of the step), each
    shape's bounding-ball radius [m] (0: unbounded) and world box (from ``Colliders.bound`` and ``extents``, packed
    from the shape table) and an upper bound on how far any point of its surface moves in the substep [m] into
    ``frames`` (a ``Frames``), shared by every particle range (scratch arrays of ``ContactScratch``: nothing is
    allocated per substep)."""
    kind = colliders.shapes.kind
    pose0, pose1, sizes, box = colliders.pose0, colliders.pose1, colliders.bound, colliders.extents
    rot0, rot1, pos0, pos1, bound, extent, motion = frames.rot0, frames.rot1, frames.pos0, frames.pos1, \
        frames.bound, frames.extent, frames.motion
    k = kind.shape[0]
    for c in range(k):
        pose(pose0, pose1, c, a0, rot0[c], pos0[c])
        pose(pose0, pose1, c, a1, rot1[c], pos1[c])
    for c in range(k):
        bound[c] = sizes[c]                          # bounding-ball radius [m] of each shape (0: none)
        ex, ey, ez = box[c, 0], box[c, 1], box[c, 2]     # the shape's half extents along its own axes [m]
        if kind[c] == PLANE:                         # a plane has no box: its world normal instead
            for i in range(3):
                extent[c, i] = rot1[c, i, 0] * ex + rot1[c, i, 1] * ey + rot1[c, i, 2] * ez
        else:
            for i in range(3):                       # the rotated box's world extents: |R| e
                extent[c, i] = abs(rot1[c, i, 0]) * ex + abs(rot1[c, i, 1]) * ey + abs(rot1[c, i, 2]) * ez
    for c in range(k):
        turn = 0.0
        for i in range(3):
            for j in range(3):
                turn = max(turn, abs(rot1[c, i, j] - rot0[c, i, j]))
        shift = math.sqrt((pos1[c, 0] - pos0[c, 0]) ** 2 + (pos1[c, 1] - pos0[c, 1]) ** 2
                          + (pos1[c, 2] - pos0[c, 2]) ** 2)
        motion[c] = shift + 3.0 * turn * (bound[c] if bound[c] > 0.0 else 1e300)


@numba.njit(cache=True)
def _near_colliders(cloth, kind, margin, frames):
    """Indices of the colliders whose bounding ball and whose box (``Frames.extent``), each grown by the contact
    reach (with ``CONTACT_SKIN``) and the collider's motion this substep, touch the box around the free particles'
    substep paths; a plane when that box's corner deepest under it is within the reach (and its motion); a mesh
    always. A cape among a level's platforms meets one or two of them, so testing every particle against each
    would cost most of its contact time. A flag beside its pole is inside the pole's bounding ball (a 3 m capsule's
    is 1.5 m round) but clear of its box. kind (k,): ``Shapes.kind``. Writes them to
    frames.near (k,) and returns the view of the ones written. cloth: ``Particles``; margin (k,) [m]."""
    x_prev, x, inv_mass = cloth.x_prev, cloth.x, cloth.inv_mass
    pos1, bound, extent, motion, near = frames.pos1, frames.bound, frames.extent, frames.motion, frames.near
    lox = loy = loz = np.inf
    hix = hiy = hiz = -np.inf
    for p in range(x.shape[0]):
        if inv_mass[p] == 0.0:
            continue
        lox, hix = min(lox, x[p, 0], x_prev[p, 0]), max(hix, x[p, 0], x_prev[p, 0])
        loy, hiy = min(loy, x[p, 1], x_prev[p, 1]), max(hiy, x[p, 1], x_prev[p, 1])
        loz, hiz = min(loz, x[p, 2], x_prev[p, 2]), max(hiz, x[p, 2], x_prev[p, 2])
    count = 0
    for c in range(bound.shape[0]):
        if kind[c] == PLANE:                         # the box's corner deepest under the plane, within reach
            nx, ny, nz = extent[c, 0], extent[c, 1], extent[c, 2]
            low = (min(nx * (lox - pos1[c, 0]), nx * (hix - pos1[c, 0]))
                   + min(ny * (loy - pos1[c, 1]), ny * (hiy - pos1[c, 1]))
                   + min(nz * (loz - pos1[c, 2]), nz * (hiz - pos1[c, 2])))
            if low > (cloth.thickness + margin[c]) * (1.0 + CONTACT_SKIN) + motion[c]:
                continue
        elif bound[c] > 0.0:
            gx = max(lox - pos1[c, 0], pos1[c, 0] - hix, 0.0)
            gy = max(loy - pos1[c, 1], pos1[c, 1] - hiy, 0.0)
            gz = max(loz - pos1[c, 2], pos1[c, 2] - hiz, 0.0)
            gap2 = gx * gx + gy * gy + gz * gz
            reach = (cloth.thickness + margin[c]) * (1.0 + CONTACT_SKIN) + motion[c]
            radius = bound[c] + reach
            if gap2 > radius * radius:
                continue
            gx = max(lox - pos1[c, 0] - extent[c, 0], pos1[c, 0] - extent[c, 0] - hix, 0.0)   # its box, world axes
            gy = max(loy - pos1[c, 1] - extent[c, 1], pos1[c, 1] - extent[c, 1] - hiy, 0.0)
            gz = max(loz - pos1[c, 2] - extent[c, 2], pos1[c, 2] - extent[c, 2] - hiz, 0.0)
            if gx * gx + gy * gy + gz * gz > reach * reach:
                continue
        near[count] = c
        count += 1
    return near[:count]


@numba.njit(cache=True)
def _collide_range(chunk, near, colliders, frames, cloth, inv_h):
    """Contacts of the particles of range ``chunk`` (of CHUNKS) against the colliders ``near`` the
    cloth: writes their x and adds the momentum they give each collider to frames.acc[chunk] (k, 7).
    frames.distances (CHUNKS, 4) holds each range's signed distance and normal; frames.mine
    (CHUNKS, k, 7) the momentum its current particle gave each collider so far, added to acc when the
    particle is done unless it turned out pinched. colliders and frames: the held ``Colliders`` and
    ``Frames``; cloth: ``Particles``; inv_h [1/s].

    Particles outside, colliders inside: each particle is first tested for a pinch as the solver left
    it (``_pinched``); if free, it meets the colliders in ``near`` order (CCD, contact, friction), and
    a push into another collider facing the other way pinches it (``_facing``). A pinched particle is
    done for the substep."""
    col = colliders.value
    shapes, margin, friction = col.shapes, col.margin, col.friction
    kind, params = shapes.kind, shapes.params
    f = frames.value
    rot0, rot1, pos0, pos1, bound, motion, acc = f.rot0, f.rot1, f.pos0, f.pos1, f.bound, f.motion, f.acc
    x_prev, x, mass, inv_mass = cloth.x_prev, cloth.x, cloth.mass, cloth.inv_mass
    n = x.shape[0]
    sd = f.distances[chunk]
    mine = f.mine[chunk]
    contact = cloth.contact
    two_way_near = False                    # a two-way body near the cloth: no skin on boxes (CONTACT_SKIN)
    for c_at in range(near.shape[0]):
        two_way_near = two_way_near or col.two_way[near[c_at]]
        mine[near[c_at], :] = 0.0           # kept zero between particles: only a particle that touched adds it
    for p in range(chunk * n // CHUNKS, (chunk + 1) * n // CHUNKS):
        pressed = max(contact[p, 4], 0.0)  # the normal push its surface took in the solve [m]: friction's too
        contact[p, 0] = contact[p, 1] = contact[p, 2] = contact[p, 3] = contact[p, 4] = 0.0
        if inv_mass[p] == 0.0:
            continue
        x0, y0, z0 = x[p, 0], x[p, 1], x[p, 2]          # as the solver left it
        start = (x_prev[p, 0], x_prev[p, 1], x_prev[p, 2])
        pinched, ux, uy, uz = False, x0, y0, z0
        maybe = False                   # _pinched's test on cheap bounds first (its call costs)
        for s_at in range(near.shape[0] if near.shape[0] > 1 else 0):
            s = near[s_at]
            if bound[s] == 0.0:
                continue
            reach_s = cloth.thickness + margin[s]
            ds = _bound_at(kind, params, bound, pos1, rot1, s, x0, y0, z0, reach_s)
            if ds >= reach_s:
                continue
            limit = reach_s - min(ds, 0.0) if ds > -np.inf else reach_s + 2.0 * bound[s]
            for l_at in range(near.shape[0]):
                l = near[l_at]
                if l == s or 0.0 < bound[l] <= bound[s]:
                    continue
                reach_l = cloth.thickness + margin[l] + limit
                if _bound_at(kind, params, bound, pos1, rot1, l, x0, y0, z0, reach_l) < reach_l:
                    maybe = True
        if maybe:
            pinched, ux, uy, uz = _pinched(colliders, frames, near, sd, x0, y0, z0, start, cloth.thickness)
        touched = False                 # whether it gave any collider momentum (``mine``)
        for c_at in range(near.shape[0]):
            c = near[c_at]
            if pinched:
                break
            reach = cloth.thickness + margin[c]
            still = motion[c] <= RESTING * reach           # a collider at rest this substep (a table, not a hero)
            skinned = col.skin[c] == ROUND or (col.skin[c] == FLAT and not two_way_near)
            touch = reach * (1.0 + CONTACT_SKIN) if still and skinned and not col.two_way[c] else reach   # else pushed
            # particle in the collider's frame: end of substep (end pose), start (start pose)
            lx = (rot1[c, 0, 0] * (x[p, 0] - pos1[c, 0]) + rot1[c, 1, 0] * (x[p, 1] - pos1[c, 1])
                  + rot1[c, 2, 0] * (x[p, 2] - pos1[c, 2]))
            ly = (rot1[c, 0, 1] * (x[p, 0] - pos1[c, 0]) + rot1[c, 1, 1] * (x[p, 1] - pos1[c, 1])
                  + rot1[c, 2, 1] * (x[p, 2] - pos1[c, 2]))
            lz = (rot1[c, 0, 2] * (x[p, 0] - pos1[c, 0]) + rot1[c, 1, 2] * (x[p, 1] - pos1[c, 1])
                  + rot1[c, 2, 2] * (x[p, 2] - pos1[c, 2]))
            swept = False
            kc, pa, pb, pc = kind[c], params[c, 0], params[c, 1], params[c, 2]
            basic = is_basic(kc)           # basic shapes: basic_sdf on scalars (shapes.sdf's docstring)
            # relative motion this substep bounds how far the path can reach: far particles skip early
            moved = math.sqrt((x[p, 0] - x_prev[p, 0]) ** 2 + (x[p, 1] - x_prev[p, 1]) ** 2
                              + (x[p, 2] - x_prev[p, 2]) ** 2) + motion[c]
            if kc == BOX:
                if max(abs(lx) - pa, abs(ly) - pb, abs(lz) - pc) > touch + moved:
                    continue
            elif bound[c] > 0.0 and math.sqrt(lx * lx + ly * ly + lz * lz) - bound[c] > touch + moved:
                continue
            if basic:
                sd[0], sd[1], sd[2], sd[3] = basic_sdf(kc, pa, pb, pc, lx, ly, lz)
            else:
                sdf(shapes, c, lx, ly, lz, sd)
            # fast relative motion (particle plus collider moved more than the margin): sweep the path
            if bound[c] > 0.0 and moved > reach:          # (not an unbounded plane or mesh)
                sx = rot0[c, 0, 0] * (x_prev[p, 0] - pos0[c, 0]) + rot0[c, 1, 0] * (x_prev[p, 1] - pos0[c, 1]) \
                    + rot0[c, 2, 0] * (x_prev[p, 2] - pos0[c, 2])
                sy = rot0[c, 0, 1] * (x_prev[p, 0] - pos0[c, 0]) + rot0[c, 1, 1] * (x_prev[p, 1] - pos0[c, 1]) \
                    + rot0[c, 2, 1] * (x_prev[p, 2] - pos0[c, 2])
                sz = rot0[c, 0, 2] * (x_prev[p, 0] - pos0[c, 0]) + rot0[c, 1, 2] * (x_prev[p, 1] - pos0[c, 1]) \
                    + rot0[c, 2, 2] * (x_prev[p, 2] - pos0[c, 2])
                span = math.sqrt((lx - sx) ** 2 + (ly - sy) ** 2 + (lz - sz) ** 2)
                if span > reach:                     # conservative advancement along the path (its own kernel)
                    lx, ly, lz, swept = _sweep(shapes, c, sd, sx, sy, sz, lx, ly, lz, span, reach)
            if sd[0] >= touch and not swept:             # a swept particle stopped at the margin: write it
                continue
            depth = max(reach - sd[0], 0.0)
            lx += sd[1] * depth
            ly += sd[2] * depth
            lz += sd[3] * depth
            # back to world (end pose); the surface point under it, where it was at the substep start
            wx = rot1[c, 0, 0] * lx + rot1[c, 0, 1] * ly + rot1[c, 0, 2] * lz + pos1[c, 0]
            wy = rot1[c, 1, 0] * lx + rot1[c, 1, 1] * ly + rot1[c, 1, 2] * lz + pos1[c, 1]
            wz = rot1[c, 2, 0] * lx + rot1[c, 2, 1] * ly + rot1[c, 2, 2] * lz + pos1[c, 2]
            ux = rot0[c, 0, 0] * lx + rot0[c, 0, 1] * ly + rot0[c, 0, 2] * lz + pos0[c, 0]
            uy = rot0[c, 1, 0] * lx + rot0[c, 1, 1] * ly + rot0[c, 1, 2] * lz + pos0[c, 1]
            uz = rot0[c, 2, 0] * lx + rot0[c, 2, 1] * ly + rot0[c, 2, 2] * lz + pos0[c, 2]
            nx = rot1[c, 0, 0] * sd[1] + rot1[c, 0, 1] * sd[2] + rot1[c, 0, 2] * sd[3]
            ny = rot1[c, 1, 0] * sd[1] + rot1[c, 1, 1] * sd[2] + rot1[c, 1, 2] * sd[3]
            nz = rot1[c, 2, 0] * sd[1] + rot1[c, 2, 1] * sd[2] + rot1[c, 2, 2] * sd[3]
            push = (wx - x[p, 0]) * nx + (wy - x[p, 1]) * ny + (wz - x[p, 2]) * nz   # normal correction [m]
            # slip relative to the moving surface (eq. 19), Coulomb in position form (eqs. 20-21)
            dx = ux - x_prev[p, 0]                   # (w − x_prev) − (w − u): motion in the surface's frame
            dy = uy - x_prev[p, 1]
            dz = uz - x_prev[p, 2]
            along = dx * nx + dy * ny + dz * nz
            tx, ty, tz = dx - nx * along, dy - ny * along, dz - nz * along
            slip = math.sqrt(tx * tx + ty * ty + tz * tz)
            stuck = True                             # static friction holds it (or it did not slip)
            mu = math.sqrt(cloth.friction * friction[c])
            budget = mu * (max(push, 0.0) + pressed)
            if slip > 1e-15:
                stuck = slip <= budget
                cf = 1.0 if stuck else budget / slip
                wx -= cf * tx
                wy -= cf * ty
                wz -= cf * tz
            jx = -mass[p] * (wx - x[p, 0]) * inv_h           # momentum the collider receives [N·s]
            jy = -mass[p] * (wy - x[p, 1]) * inv_h
            jz = -mass[p] * (wz - x[p, 2]) * inv_h
            jn = math.sqrt(jx * jx + jy * jy + jz * jz)
            mine[c, 0] += jx
            mine[c, 1] += jy
            mine[c, 2] += jz
            mine[c, 3] += jn * wx
            mine[c, 4] += jn * wy
            mine[c, 5] += jn * wz
            mine[c, 6] += jn
            touched = True
            x[p, 0], x[p, 1], x[p, 2] = wx, wy, wz
            if not col.two_way[c]:       # the yarns and the limit slide it along this surface
                contact[p, 0], contact[p, 1], contact[p, 2] = nx, ny, nz
                resting = still
                contact[p, 3] = (STUCK if stuck else 1.0) if resting else 0.0
                contact[p, 4] = -(budget - slip) if stuck and resting else 0.0   # static friction left [m], < 0
            elif contact[p, 3] == 0.0:   # a two-way body: no normal (it gives way), −1
                contact[p, 3] = -1.0
            maybe = False                # _facing's test on cheap bounds first
            for b_at in range(near.shape[0] if near.shape[0] > 1 else 0):
                b = near[b_at]
                if b == c or (bound[b] == 0.0 and bound[c] == 0.0):
                    continue
                reach_b = cloth.thickness + margin[b]
                if _bound_at(kind, params, bound, pos1, rot1, b, wx, wy, wz, reach_b) < reach_b:
                    maybe = True
            b = -1
            if maybe:
                b = _facing(colliders, frames, near, sd, c, wx, wy, wz, cloth.thickness, nx, ny, nz)
            if b >= 0:                   # pushed into another collider facing the other way: pinched
                ux, uy, uz = _unpinch(col, f, sd, c, b, (wx, wy, wz), start, cloth.thickness)
                pinched = True
        if pinched:   # squeezed out, not launched: caught between two surfaces it leaves at rest, and gives
            x_prev[p, 0] = ux           # no collider an impulse
            x_prev[p, 1] = uy
            x_prev[p, 2] = uz
            x[p, 0], x[p, 1], x[p, 2] = ux, uy, uz
            contact[p, 0] = contact[p, 1] = contact[p, 2] = 0.0
            contact[p, 3] = HELD         # where it was squeezed out to: the yarns and the limit leave it there
        if touched:                      # its momentum to the range's sum (a pinched particle's dropped)
            for c_at in range(near.shape[0]):
                c = near[c_at]
                for a in range(7):
                    if not pinched:
                        acc[chunk, c, a] += mine[c, a]
                    mine[c, a] = 0.0


@numba.njit(cache=True)
def _sweep(shapes, c, sd, sx, sy, sz, lx, ly, lz, span, reach):
    """Conservative advancement of a particle's path this substep, from s to l (collider c's local frame,
    ``span`` = |l − s| > ``reach`` [m]): the first point within reach of the surface, if the path meets it, then
    the rest of the path minus its component into the surface (it slides along). Returns the particle's new
    local point and whether the path hit; sd (4,) ends as the signed distance and normal there.

    Its own kernel, not part of ``_collide_range``: it runs only for particles moving faster than the margin,
    and out of line the contact kernel compiles in less time (the largest kernels are split)."""
    kc, pa, pb, pc = shapes.kind[c], shapes.params[c, 0], shapes.params[c, 1], shapes.params[c, 2]
    basic = is_basic(kc)
    swept = False
    if basic:
        sd[0], sd[1], sd[2], sd[3] = basic_sdf(kc, pa, pb, pc, sx, sy, sz)
    else:
        sdf(shapes, c, sx, sy, sz, sd)
    heading = sd[1] * (lx - sx) + sd[2] * (ly - sy) + sd[3] * (lz - sz)
    # it started outside the shape itself, and not on the margin moving away
    if sd[0] > 0.0 and (sd[0] - reach > 1e-9 or heading < 0.0):
        t = 0.0
        for _ in range(CCD_STEPS):
            gap = sd[0] - reach
            if gap <= 1e-9:
                break
            t += gap / span
            if t >= 1.0:
                break
            mx, my, mz = sx + t * (lx - sx), sy + t * (ly - sy), sz + t * (lz - sz)
            if basic:
                sd[0], sd[1], sd[2], sd[3] = basic_sdf(kc, pa, pb, pc, mx, my, mz)
            else:
                sdf(shapes, c, mx, my, mz, sd)
        if t < 1.0:                  # hit: keep the rest of the path, minus its
            hx = sx + t * (lx - sx)      # component into the surface (slide along it)
            hy = sy + t * (ly - sy)
            hz = sz + t * (lz - sz)
            rx, ry, rz = lx - hx, ly - hy, lz - hz
            into = rx * sd[1] + ry * sd[2] + rz * sd[3]
            if into < 0.0:
                rx -= into * sd[1]
                ry -= into * sd[2]
                rz -= into * sd[3]
            lx, ly, lz = hx + rx, hy + ry, hz + rz
            swept = True
    if basic:
        sd[0], sd[1], sd[2], sd[3] = basic_sdf(kc, pa, pb, pc, lx, ly, lz)
    else:
        sdf(shapes, c, lx, ly, lz, sd)
    return lx, ly, lz, swept


@numba.njit(cache=True, inline="always")
def _bound_at(kind, params, bound, pos1, rot1, j, x, y, z, limit):
    """``_bound_sdf`` of collider j at the world point (x, y, z) [m], taken into its frame at the substep's end
    (pos1, rot1). Inlined into the contact loop, so its array arguments cost no reference counting per call."""
    ex, ey, ez = x - pos1[j, 0], y - pos1[j, 1], z - pos1[j, 2]
    return _bound_sdf(kind[j], params[j, 0], params[j, 1], params[j, 2], bound[j],
                      rot1[j, 0, 0] * ex + rot1[j, 1, 0] * ey + rot1[j, 2, 0] * ez,
                      rot1[j, 0, 1] * ex + rot1[j, 1, 1] * ey + rot1[j, 2, 1] * ez,
                      rot1[j, 0, 2] * ex + rot1[j, 1, 2] * ey + rot1[j, 2, 2] * ez, limit)


@numba.njit(cache=True)
def _bound_sdf(k, pa, pb, pc, bound, lx, ly, lz, limit):
    """A cheap lower bound on the signed distance [m] of local point l to a collider of kind k, sizes
    (pa, pb, pc), bounding-ball radius ``bound``: exact for a basic shape within ``limit`` of its
    bounding box or ball, inf beyond, −inf (unknown) for a prism or mesh there. Scalars only: the contact
    kernel calls it per particle, and every array passed to a function costs two atomic reference counts
    (with packed tuples, they took 85 % of the kernel)."""
    if k == BOX:
        if max(abs(lx) - pa, abs(ly) - pb, abs(lz) - pc) >= limit:
            return np.inf
    elif bound > 0.0 and math.sqrt(lx * lx + ly * ly + lz * lz) - bound >= limit:
        return np.inf
    if is_basic(k):
        return basic_sdf(k, pa, pb, pc, lx, ly, lz)[0]
    return -np.inf


@numba.njit(cache=True)
def _distance(col, f, out, c, wx, wy, wz, limit):
    """``_world_sdf`` of world point w [m] to collider c, or (inf, 0, 0, 0) when a cheap bound (its box,
    its bounding ball) already puts w ``limit`` [m] or more from it. out (4,): scratch."""
    r = f.rot1
    ex, ey, ez = wx - f.pos1[c, 0], wy - f.pos1[c, 1], wz - f.pos1[c, 2]
    lx = r[c, 0, 0] * ex + r[c, 1, 0] * ey + r[c, 2, 0] * ez
    ly = r[c, 0, 1] * ex + r[c, 1, 1] * ey + r[c, 2, 1] * ez
    lz = r[c, 0, 2] * ex + r[c, 1, 2] * ey + r[c, 2, 2] * ez
    k = col.shapes.kind[c]
    params = col.shapes.params
    if k == BOX:
        if max(abs(lx) - params[c, 0], abs(ly) - params[c, 1], abs(lz) - params[c, 2]) >= limit:
            return np.inf, 0.0, 0.0, 0.0
    elif f.bound[c] > 0.0 and math.sqrt(lx * lx + ly * ly + lz * lz) - f.bound[c] >= limit:
        return np.inf, 0.0, 0.0, 0.0
    if is_basic(k):
        out[0], out[1], out[2], out[3] = basic_sdf(k, params[c, 0], params[c, 1], params[c, 2], lx, ly, lz)
    else:
        sdf(col.shapes, c, lx, ly, lz, out)
    return (out[0], r[c, 0, 0] * out[1] + r[c, 0, 1] * out[2] + r[c, 0, 2] * out[3],
            r[c, 1, 0] * out[1] + r[c, 1, 1] * out[2] + r[c, 1, 2] * out[3],
            r[c, 2, 0] * out[1] + r[c, 2, 1] * out[2] + r[c, 2, 2] * out[3])


@numba.njit(cache=True)
def _pinched(colliders, frames, near, out, wx, wy, wz, start, thickness):
    """Whether a particle at world point w [m], as the solver left it, is pinched between a bounded
    collider s (the body) and a larger one l (the level: bounding ball, 0 counts as infinite), and
    where it slides to (``_unpinch``): (pinched, x, y, z). It is when it lies in s's contact band
    (closer than its reach) and l's band, grown by s's band and by how deep it is inside s, and

    - it is inside s's shape itself (contact and CCD leave nothing there: the body sank onto it, or
      its neighbours pulled it under; its nearest face says nothing of the way out), or
    - s's surface there faces l's at more than 120° (under the body's sole), or
    - s's surface there stands across l's (within 60° of square: the foot of a side face), and the way
      out (``_exit``) leaves it by that face or along it: the cloth slides along the level with the
      particles under the body, instead of being held by the face while they slide away.

    A particle at the foot of a face the way out heads into is left to the contact (pushed out along
    the face's normal): cloth beside a standing body stays there. start: x_prev (tuple) [m];
    thickness: the cloth's [m]; out (4,): scratch."""
    col, f = colliders.value, frames.value
    bound, margin = f.bound, col.margin
    for s_at in range(near.shape[0]):
        s = near[s_at]
        if bound[s] == 0.0:
            continue
        reach_s = thickness + margin[s]
        ds, sx, sy, sz = _distance(col, f, out, s, wx, wy, wz, reach_s)
        if ds >= reach_s:
            continue
        slack = reach_s - min(ds, 0.0)
        for l_at in range(near.shape[0]):
            l = near[l_at]
            if l == s or 0.0 < bound[l] <= bound[s]:
                continue
            reach_l = thickness + margin[l]
            dl, lx, ly, lz = _distance(col, f, out, l, wx, wy, wz, reach_l + slack)
            if dl >= reach_l + slack:
                continue
            facing = sx * lx + sy * ly + sz * lz
            pinched = ds < 0.0 or facing < PINCH_COSINE
            if not pinched and facing < -PINCH_COSINE:
                ex, ey, ez = _exit(f, s, lx, ly, lz)
                pinched = ex * sx + ey * sy + ez * sz >= PINCH_SIDE
            if pinched:
                ux, uy, uz = _unpinch(col, f, out, s, l, (wx, wy, wz), start, thickness)
                return True, ux, uy, uz
    return False, wx, wy, wz


@numba.njit(cache=True)
def _facing(colliders, frames, near, out, c, wx, wy, wz, thickness, nx, ny, nz):
    """The first other collider (not both unbounded with c) whose contact reach world point w [m] is in
    and whose outward normal there faces c's, n (world, unit), at more than 120° (``PINCH_COSINE``);
    −1 if none. out (4,): scratch."""
    col, f = colliders.value, frames.value
    bound, margin = f.bound, col.margin
    for b_at in range(near.shape[0]):
        b = near[b_at]
        if b == c or (bound[b] == 0.0 and bound[c] == 0.0):
            continue
        reach_b = thickness + margin[b]
        d, bx, by, bz = _distance(col, f, out, b, wx, wy, wz, reach_b)
        if d < reach_b and nx * bx + ny * by + nz * bz < PINCH_COSINE:
            return b
    return -1


@numba.njit(cache=True)
def _exit(f, small, nx, ny, nz):
    """Unit direction [-] in which cloth pinched under collider ``small`` slides out, within the larger
    collider's surface (outward unit normal n there, world): from the body's centre toward the cloth's
    centre (f.centre), so every pinched particle of a cloth leaves the same way, as one piece (the
    cape under a hero's feet slides back out behind him, on the side it hangs from); the body's local
    x axis (else z) when the cloth's centre is right over the body's."""
    q = f.pos1[small]
    ex, ey, ez = f.centre[0] - q[0], f.centre[1] - q[1], f.centre[2] - q[2]
    along = ex * nx + ey * ny + ez * nz
    ex, ey, ez = ex - along * nx, ey - along * ny, ez - along * nz
    length = math.sqrt(ex * ex + ey * ey + ez * ez)
    if length < 1e-9:
        r = f.rot1[small]
        ex, ey, ez = r[0, 0], r[1, 0], r[2, 0]
        along = ex * nx + ey * ny + ez * nz
        ex, ey, ez = ex - along * nx, ey - along * ny, ez - along * nz
        length = math.sqrt(ex * ex + ey * ey + ez * ez)
        if length < 1e-9:
            ex, ey, ez = r[0, 2], r[1, 2], r[2, 2]
            length = 1.0
    return ex / length, ey / length, ez / length


@numba.njit(cache=True)
def _world_sdf(col, f, out, c, wx, wy, wz):
    """Signed distance [m] of world point w to collider c (end pose of the substep) and the outward
    unit normal in world coordinates: (d, nx, ny, nz). out (4,): scratch for ``sdf``."""
    return _distance(col, f, out, c, wx, wy, wz, np.inf)


@numba.njit(cache=True)
def _unpinch(col, f, out, c, b, w, start, thickness):
    """Free world point w [m] (a tuple) pinched between colliders c and b: put it on the larger one's
    surface (bounding-ball radius; 0, a plane or mesh, counts as infinite) if it is within its reach,
    then slide it within that surface (``_exit``) until it is the smaller one's reach (``thickness`` [m]
    of the cloth + its margin) outside it — by at most ``PINCH_SLIDE`` [m] of progress since the
    substep's start (start: x_prev, a tuple), the rest in the next substeps. Returns the new point; w
    unchanged when both are unbounded. col, f: the ``Colliders`` and ``Frames`` of the substep; out (4,)
    scratch."""
    wx, wy, wz = w
    bound = f.bound
    size_c = bound[c] if bound[c] > 0.0 else np.inf
    size_b = bound[b] if bound[b] > 0.0 else np.inf
    if size_c == np.inf and size_b == np.inf:
        return wx, wy, wz
    small, large = (c, b) if size_c <= size_b else (b, c)
    d, nx, ny, nz = _world_sdf(col, f, out, large, wx, wy, wz)
    reach = thickness + col.margin[large]
    if d < reach:                                    # onto the level's surface ...
        wx += nx * (reach - d)
        wy += ny * (reach - d)
        wz += nz * (reach - d)
    reach = thickness + col.margin[small]
    ds, sx, sy, sz = _world_sdf(col, f, out, small, wx, wy, wz)
    if ds >= reach:
        return wx, wy, wz
    ex, ey, ez = _exit(f, small, nx, ny, nz)         # ... then out along it
    # the body's nearest face, if it is on the way out's side: the shortest way, within the level's surface
    along = sx * nx + sy * ny + sz * nz
    tx, ty, tz = sx - along * nx, sy - along * ny, sz - along * nz
    m = math.sqrt(tx * tx + ty * ty + tz * tz)
    if m > 1e-3:
        tx, ty, tz = tx / m, ty / m, tz / m
        if tx * ex + ty * ey + tz * ez >= PINCH_NEAREST:
            back = (start[0] - wx) * tx + (start[1] - wy) * ty + (start[2] - wz) * tz
            hi = PINCH_SLIDE + max(back, 0.0)
            if _world_sdf(col, f, out, small, wx + hi * tx, wy + hi * ty, wz + hi * tz)[0] >= reach:
                return _bisect(col, f, out, small, wx, wy, wz, tx, ty, tz, hi, reach)
    # at most PINCH_SLIDE ahead of where it started the substep: the solver pulling it back (cloth that
    # wraps the body's corner, a hem held outside) cannot hold it under the body
    back = (start[0] - wx) * ex + (start[1] - wy) * ey + (start[2] - wz) * ez
    hi = PINCH_SLIDE + max(back, 0.0)
    if _world_sdf(col, f, out, small, wx + hi * ex, wy + hi * ey, wz + hi * ez)[0] < reach:
        return wx + hi * ex, wy + hi * ey, wz + hi * ez      # deep under it: this substep's share
    return _bisect(col, f, out, small, wx, wy, wz, ex, ey, ez, hi, reach)


@numba.njit(cache=True)
def _bisect(col, f, out, c, wx, wy, wz, ex, ey, ez, hi, reach):
    """w + t·e [m] with the least t in [0, hi] (to hi / 2^PINCH_STEPS) that is ``reach`` [m] or more
    outside collider c, given that w + hi·e is."""
    lo = 0.0
    for _ in range(PINCH_STEPS):                     # lo inside the body's reach, hi outside
        mid = 0.5 * (lo + hi)
        if _world_sdf(col, f, out, c, wx + mid * ex, wy + mid * ey, wz + mid * ez)[0] >= reach:
            hi = mid
        else:
            lo = mid
    return wx + hi * ex, wy + hi * ey, wz + hi * ez


@numba.njit(cache=True)
def _reduce(acc, impulse, impulse_point):
    """Add every range's impulses to the colliders' totals, in range order."""
    for chunk in range(acc.shape[0]):
        for c in range(acc.shape[1]):
            for a in range(3):
                impulse[c, a] += acc[chunk, c, a]
            for a in range(4):
                impulse_point[c, a] += acc[chunk, c, 3 + a]


def _collide(colliders, frames, near, inv_h, thickness, friction, mass, inv_mass, x_prev, x, contact):
    """Continuous collision, contact and friction of every free particle against every collider near it.

    colliders and frames: the held ``Colliders`` of the step and ``Frames`` (scratch), the substep's poses and its
    first ``near`` entries of ``Frames.near`` written by ``_touches`` this substep (not computed again here);
    inv_h [1/s]; thickness [m] and friction [-] of the cloth; mass, inv_mass (n,); x_prev, x (n, 3) [m]. Writes x,
    what each particle touched (contact (n, 4): ``Particles.contact``) and accumulates the momentum given to each
    collider in colliders' impulse (k, 3) [N·s] and impulse_point (k, 4).

    Particles are independent, so they are split into CHUNKS fixed ranges, each summing its own
    impulses, added up in range order afterwards: the same result whether the ranges run in turn or
    on all threads. One source, compiled twice (below): ``_collide_parallel`` runs the ranges on all
    threads (a large cloth spends a good share of its step here), ``_collide_serial``, the
    same code without ``parallel``, runs them in turn, for small cloths, where thread start-up costs
    more than it saves (``PARALLEL_MIN_PARTICLES``)."""
    col, f = colliders.value, frames.value
    cloth = Particles(x_prev, x, mass, inv_mass, thickness, friction, contact)
    centre = f.centre
    centre[:] = 0.0
    for p in range(x.shape[0]):
        for a in range(3):
            centre[a] += x[p, a]
    centre /= max(x.shape[0], 1)
    close = f.near[:near]
    acc = f.acc
    acc[:] = 0.0
    for chunk in prange(CHUNKS):         # a prange body takes the held structs (shared.held)
        _collide_range(chunk, close, colliders, frames, cloth, inv_h)
    _reduce(acc, col.impulse, col.impulse_point)


@numba.njit(cache=True)
def _touches(colliders, frames, a0, a1, thickness, friction, mass, inv_mass, x_prev, x, contact):
    """How many colliders are near the cloth this substep (a0, a1: its start and end as fractions of the step; the
    rest as the contact kernel takes them): the poses prepared (``_prepare``) and the near ones written to
    ``Frames.near`` (``_near_colliders``), which the contact kernel then reads. ``collide_environment`` calls that
    kernel only when there are any: a cloth clear of every collider (a flag blowing beside its pole, a tablecloth
    still falling toward the table) pays one pass over its particles for the box, and a first launch compiles the
    contact kernels, the longest to compile, only once something is near."""
    col, f = colliders.value, frames.value
    _prepare(col, f, a0, a1)
    cloth = Particles(x_prev, x, mass, inv_mass, thickness, friction, contact)
    return _near_colliders(cloth, col.shapes.kind, col.margin, f).shape[0]


def _keep_out(colliders, frames, inv_h, thickness, mass, inv_mass, x_prev, x, contact, slide, slack):
    """``keep_out``'s kernel for one cloth: each free particle (inverse mass > 0, not ``HELD``) within a near
    collider's contact reach (cloth thickness + collider thickness [m]) at the substep's end pose (``Frames``, as
    ``_touches`` prepared them this substep) is moved out along the outward normal by its depth, colliders in turn;
    the momentum m·Δx·(1/h) [N·s] is added to the collider's impulse and impulse_point. inv_h [1/s]; mass,
    inv_mass (n,); x_prev, x (n, 3) [m] (x written); contact (n, 5). Writes each pushed particle's outward normal
    into slide (n, 5) columns 0–2 (the contacts the limit then slides along). Only a particle deeper than ``slack``
    [m] inside the reach is pushed (to the reach). Returns how many pushes it made."""
    col, f = colliders.value, frames.value
    cloth = Particles(x_prev, x, mass, inv_mass, thickness, 0.0, contact)
    near = _near_colliders(cloth, col.shapes.kind, col.margin, f)
    out = f.distances[0]
    kind, params, margin = col.shapes.kind, col.shapes.params, col.margin
    bound, pos1, rot1 = f.bound, f.pos1, f.rot1
    pushes = 0
    for p in range(x.shape[0]):
        if inv_mass[p] == 0.0 or contact[p, 3] == HELD:
            continue
        for c_at in range(near.shape[0]):
            c = near[c_at]
            reach = thickness + margin[c]
            if _bound_at(kind, params, bound, pos1, rot1, c, x[p, 0], x[p, 1], x[p, 2], reach) >= reach - slack:
                continue                                     # the cheap test first (scalars: ``_bound_sdf``)
            ex, ey, ez = x[p, 0] - pos1[c, 0], x[p, 1] - pos1[c, 1], x[p, 2] - pos1[c, 2]
            lx = rot1[c, 0, 0] * ex + rot1[c, 1, 0] * ey + rot1[c, 2, 0] * ez     # local frame (end pose)
            ly = rot1[c, 0, 1] * ex + rot1[c, 1, 1] * ey + rot1[c, 2, 1] * ez
            lz = rot1[c, 0, 2] * ex + rot1[c, 1, 2] * ey + rot1[c, 2, 2] * ez
            k = kind[c]
            if is_basic(k):                                  # scalars (``_bound_sdf``'s note on reference counts)
                d, ax, ay, az = basic_sdf(k, params[c, 0], params[c, 1], params[c, 2], lx, ly, lz)
            else:
                sdf(col.shapes, c, lx, ly, lz, out)
                d, ax, ay, az = out[0], out[1], out[2], out[3]
            if d >= reach - slack:
                continue
            nx = rot1[c, 0, 0] * ax + rot1[c, 0, 1] * ay + rot1[c, 0, 2] * az     # the normal in world axes
            ny = rot1[c, 1, 0] * ax + rot1[c, 1, 1] * ay + rot1[c, 1, 2] * az
            nz = rot1[c, 2, 0] * ax + rot1[c, 2, 1] * ay + rot1[c, 2, 2] * az
            depth = reach - d
            x[p, 0] += nx * depth
            x[p, 1] += ny * depth
            x[p, 2] += nz * depth
            slide[p, 0], slide[p, 1], slide[p, 2] = nx, ny, nz
            j = mass[p] * depth * inv_h                      # |momentum| the collider receives [N·s], along −n
            col.impulse[c, 0] -= j * nx
            col.impulse[c, 1] -= j * ny
            col.impulse[c, 2] -= j * nz
            col.impulse_point[c, 0] += j * x[p, 0]
            col.impulse_point[c, 1] += j * x[p, 1]
            col.impulse_point[c, 2] += j * x[p, 2]
            col.impulse_point[c, 3] += j
            pushes += 1
    return pushes


def _compiled(py_func, name: str, namespace: dict | None = None, **options) -> numba.core.registry.CPUDispatcher:
    """``py_func`` compiled by numba (cached) under the name ``name``, reading its globals from ``namespace``
    (default: its module's): numba's on-disk cache files a kernel by its qualified name, not by its options or
    globals, so two builds of one source need names of their own."""
    func = FunctionType(py_func.__code__, py_func.__globals__ if namespace is None else namespace, name,
                        py_func.__defaults__, py_func.__closure__)
    func.__qualname__ = name
    func.__doc__ = py_func.__doc__
    return numba.njit(cache=True, **options)(func)


_collide_serial = _compiled(_collide, "_collide_serial")
_collide_parallel = _compiled(_collide, "_collide_parallel", parallel=True)
_COLLIDE = (_collide_serial, _collide_parallel)
"""The contact kernels for any collider set: (serial, parallel)."""

_SDF_CALLERS = ("_sweep", "_distance", "_world_sdf", "_bisect", "_unpinch", "_pinched", "_facing", "_collide_range")
"""The kernels that reach ``sdf``, callees first: what the basic-shapes variant compiles again."""


def _basic_variant() -> tuple[numba.core.registry.CPUDispatcher, numba.core.registry.CPUDispatcher]:
    """The contact kernels again, (serial, parallel), with ``shapes.basic_only_sdf`` in place of ``sdf``: built
    from the same source, in a copy of this module's namespace where each of ``_SDF_CALLERS`` is its own
    variant (named ``<name>_basic``, so numba caches it apart). A scene with no prism or mesh collider runs these
    and never compiles the prism and mesh code (``collide_environment`` picks them: ``ContactScratch.basic_only``)."""
    namespace = _BASIC_NAMESPACE
    namespace.update(globals())
    namespace["sdf"] = basic_only_sdf
    for name in _SDF_CALLERS:
        namespace[name] = _compiled(globals()[name].py_func, f"{name}_basic", namespace=namespace)
    return (_compiled(_collide, "_collide_serial_basic", namespace=namespace),
            _compiled(_collide, "_collide_parallel_basic", namespace=namespace, parallel=True))


_BASIC_NAMESPACE: dict = {}
"""The module's namespace with the basic-shapes variants of ``_SDF_CALLERS`` (``_basic_variant``)."""
_COLLIDE_BASIC = _basic_variant()
"""The contact kernels for collider sets of basic shapes only: (serial, parallel)."""

_KEEP_OUT = (_compiled(_keep_out, "_keep_out_basic", namespace=_BASIC_NAMESPACE), _compiled(_keep_out, "_keep_out"))
"""``keep_out``'s kernels: (basic shapes only, any collider set)."""

_hold_call, _touches_call, _collide_basic_call = hold, _touches, _COLLIDE_BASIC[0]
"""The Python call sites' names of ``hold``, ``_touches`` and the basic-shapes contact kernel (a cold launch binds them
to their NumPy stand-ins while a worker compiles the kernels: ``loom.systems.collision.cold``)."""
