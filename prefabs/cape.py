"""loom.cape: a hero's cape in one call — a silk sheet facing the camera, pinned at the shoulders, turned with ``face``.

Made for a straight side view (``PixelSpace.camera``): the sheet lies in the screen plane (xy), with a slight
bow in depth so it is not a flat plane, just behind the hero's collision extrusion (so it never fights the
body it hangs from, and turning never drags it through him), and swings in the screen plane::

        shoulders[0]  shoulders[1]          facing +1 (right): the cape hangs behind his back
             ●━━━━━━━━━●   ◀ pinned row       face(-1): the row mirrors to the other side
            ╱           ╲                     (and back with face(+1)), rows keep their order,
           ╱   length    ╲                    so the cloth slides over instead of folding through
          ╱_______________╲                   itself
               width

    app.insert_resource(loom.PixelSpace(100, origin=(0, 470)))      # the game's pixels (y down)
    hero = app.spawn(loom.RigidBody2D(body, depth=0.3))             # the pymunk hero, a thin extrusion
    cape = loom.cape(app, hero)                                     # sized from his collision shapes
    ...
    cape.face(-1)                                                   # he turned left

Every default is overridable: ``shoulders`` (two points relative to the carrier), ``length``, ``width`` (of the
lower edge; wider than the shoulders flares the cape), ``resolution`` (nx, ny), ``material``, ``style`` and any
``Cloth.from_mesh`` option or material field (``damping=``, ``thickness=``, ``model=`` …).
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import pymunk

from loom.components import (Box, Cloth, ClothMaterial, ClothStyle, Collider, MaxDistance, Pin, PixelSpace, RigidBody2D,
                             Transform)
from loom.engine import App, Stage
from loom.prefabs import _shared, _units
from loom.systems import ClothSet
from loom.systems.coupling import body_units

CAPE_RESOLUTION = (9, 12)
"""Default particles across × down (108): few enough for a fraction of a millisecond per step
(docs/performance.md, "Moved from docstrings")."""
CAPE_STYLE = ClothStyle(front_color=(0.78, 0.09, 0.12), back_color=(0.5, 0.05, 0.1), texture=None, subdivision=1)
"""Default look: deep red, darker inside, no texture, one Loop subdivision level (smooth outline)."""
CAPE_DAMPING = 1.5
"""Default damping [1/s] (``ClothMaterial.damping``, of absolute velocity) of a cape made from a preset name: it trails behind a runner instead of swinging on."""
HERO_BOX = (-0.2, 0.2, -0.4, 0.4)
"""Local (x0, x1, y0, y1) [m] of the hero assumed when the carrier has no collision shape: 0.4 m × 0.8 m, centred."""
GAP = 0.03
"""Distance [m] between the hero's collision extrusion (its back face in z) and the cape's pinned row."""
BOW = 0.08
"""Depth of the sheet's bow [-], as a fraction of its lower width: enough that it is not a flat plane."""
REACH = 2.0
"""Default max distance of each particle from where it hangs straight down at rest, as a multiple of its rest distance
from the pinned row [-]: 2 lets an unstretched cape swing anywhere, streaming behind a runner or blown up over his
head (a smaller reach fights the wind and the run: 1.5 stretched the 3D demo's cape by 12 % in its headwind), and never
lets it be dragged further from him than that (a hero who teleports or dashes pulls it along at once)."""
BACKSTOP_RADIUS = 50.0
"""Radius [m] of the cape's backstop capsules (and half their length, along the hero's up): so large that each is a
flat wall within a fraction of a millimetre where the cape is — the plane of the hero's front face, which the cape
may not pass (``MaxDistance``)."""
TURN_TIME = 0.3
"""Default time [s] the pinned row takes to slide across when the hero turns (``Cape.turn_time``): a faster slide
stretches the cape's links more in a turn into a run (docs/performance.md, "Moved from docstrings")."""


class Cape:
    """What ``loom.cape`` made: the cloth entity, its Cloth and Pin, the carrier entity and the way it faces."""

    def __init__(self, app: App, entity: int, cloth: Cloth, pin: Pin, attach_to: int, right: np.ndarray,
                 facing: int, limit: MaxDistance | None = None, reference: np.ndarray | None = None) -> None:
        self.app = app
        """The App the cape lives in."""
        self.entity = entity
        """The cape's entity (Cloth, Pin, ClothStyle)."""
        self.cloth = cloth
        """The Cloth: ``cape.cloth.x`` are the particle positions [m], (n, 3)."""
        self.pin = pin
        """The Pin holding its top row at the carrier (``cape.pin.release()`` drops the cape)."""
        self.attach_to = attach_to
        """The carrier entity (the hero's RigidBody2D or Transform entity)."""
        self._right = right                         # pin offsets [m] (k, 3) when facing right, left to right
        self.limit = limit
        """The cape's ``MaxDistance`` (max distance from where it hangs, and a backstop at the hero's front face), or
        None (``loom.cape(..., max_distance=False)``)."""
        self._reference = reference                 # the limit's layout (ny, nx, 5) facing right (``_place_limit``)
        self.facing = facing
        """+1 right, −1 left: the side the hero looks to (the cape hangs on the other)."""
        self.turn_time = TURN_TIME
        """Time [s] >= 0 the pinned row takes to slide across on ``face`` (0: within one step)."""
        self._turn: tuple[np.ndarray, np.ndarray] | None = None     # (offsets at the start, target) while turning
        self._turned = 0.0                                           # time [s] into the turn
        self._limit_turn: tuple[np.ndarray, np.ndarray] | None = None  # the limit's reference at the start, target
        self._args: dict[str, Any] = {}                              # loom.cape's arguments (rebuilt in new units)
        self._built_facing = facing
        self._reach: tuple[str, float, str, float] = ("", 0.0, "", 0.0)
        app.add_system(self._slide, Stage.PRE_STEP, name=f"turn_cape_{entity}", in_set=ClothSet.PIN_TARGETS,
                       before="prepare_pins", run_if=lambda _: self._turn is not None)

    def face(self, direction: int) -> None:
        """Turn the cape to the hero's ``direction``: +1 right, −1 left (the cape hangs on the other side).

        The pinned row's offsets mirror in x about the carrier; the particles keep their order along the row,
        which slides across over ``turn_time`` seconds of steps (eased in and out, a few steps: a cape yanked
        across in one step whips over the hero's head) and the cloth swings over after it — no particle is moved
        by hand. Facing the way it already faces does nothing; turning back mid-turn slides back from where the
        row is. Raises ValueError for a direction other than +1 or −1."""
        if isinstance(direction, bool) or not isinstance(direction, (int, float, np.integer, np.floating)) \
                or direction not in (1, -1):
            raise ValueError(f"Cape.face direction = {_shared.brief(direction)}: expected +1 (right) or -1 (left)")
        direction = int(direction)
        if direction != self.facing:
            self.facing = direction
            self._turn = (np.array(self.pin.offset, dtype=np.float64), _facing(self._right, direction))
            self._turned = 0.0
            self._turn_limit()

    def _slide(self, app: App, dt: float) -> None:
        """PRE_STEP, before the pins read their offsets, while turning: move the row ``dt`` further across."""
        start, target = self._turn
        self._turned += dt
        t = 1.0 if self.turn_time <= 0.0 else min(1.0, self._turned / self.turn_time)
        eased = t * t * (3.0 - 2.0 * t)                              # smoothstep: no kick at either end
        self.pin.offset = start + eased * (target - start)
        if self._limit_turn is not None:                             # the reference slides across with the row
            was, goal = self._limit_turn
            self.limit.reference = was + eased * (goal - was)
        if t >= 1.0:
            self._turn = None
            self._limit_turn = None

    def _turn_limit(self) -> None:
        """Start turning the MaxDistance round with the row: its reference slides to the mirrored layout with the
        pins; the backstop's normals turn to the new back at once and it is re-armed, so it holds each particle
        from when the particle has swung behind the hero's new front."""
        limit = self.limit
        if limit is None or self._reference is None:
            self._limit_turn = None
            return
        was = np.array(limit.reference, dtype=np.float64)
        goal = _place_limit(limit, self._reference, self.facing)      # distances and offsets of the new side
        limit.reference = was                                          # (the reference itself slides there)
        self._limit_turn = (was, goal)
        limit.normal = (-float(self.facing), 0.0, 0.0)
        limit.rearm()

    def _rebuild(self, pixels: PixelSpace | None) -> None:
        """Build the cape again from ``loom.cape``'s arguments read in ``pixels`` (None: metres), with the carrier
        where the first build found it and facing as built (a turn ``face`` asked for since goes on from there),
        and transplant the new Cloth and Pin into this cape's (prefabs/_units.py; before its first step)."""
        cloth, pin, offsets, self._reach, _, limit, reference = _build(self.app, pixels, self._built_facing,
                                                                        **self._args)
        pin.active = self.pin.active.copy()                           # a release before the first step stays
        _units.transplant(self.cloth, cloth)
        _units.transplant(self.pin, pin)
        if self.limit is not None and limit is not None:
            _units.transplant(self.limit, limit)
            self._reference = reference
        self._right = offsets
        if self._turn is not None:                                    # face() before the first step: the same turn
            self._turn = (np.array(self.pin.offset, dtype=np.float64), _facing(offsets, self.facing))
            self._turn_limit()

    def _extent(self) -> tuple[str, float, str, float]:
        """(its carrier's place, distance [m] from the origin, what its sizes are, the largest [m]) as built."""
        return self._reach

    def __repr__(self) -> str:
        return (f"Cape(entity={self.entity}, attach_to={self.attach_to}, particles={self.cloth.particle_count}, "
                f"facing={self.facing:+d})")


def cape(app: App, attach_to: int, *, shoulders: Any = None, length: float | None = None,
         width: float | None = None, resolution: tuple[int, int] | None = None,
         material: str | ClothMaterial = "silk", style: ClothStyle | None = None, facing: int = 1,
         max_distance: bool = True, **cloth_kwargs: Any) -> Cape:
    """Spawn a cape pinned at ``attach_to``'s shoulders and return its ``Cape`` handle (``.face(±1)`` turns it).

    attach_to: an entity with a RigidBody2D (the bridge keeps its Transform; one is added now if missing) or a
    Transform. Lengths and points are the game's pixels when the App has a PixelSpace at its first step (offsets
    from the carrier, y down), metres otherwise (y up): a PixelSpace inserted after this call but before the first
    step rebuilds the cape in it, the same Cloth and Pin objects with new arrays (prefabs/_units.py; a PixelSpace
    changed after the cape's first step raises RuntimeError at the next step). Without one, a carrier beyond 100 m
    or sizes over 10 m warn once (UnitsWarning: pixels?). Defaults come from the carrier's collision shapes (the
    RigidBody2D's pymunk shapes, else a Box Collider on the entity, else a 0.4 m × 0.8 m hero). Everything is
    given for the hero facing right; ``facing=-1`` and ``face(-1)`` mirror it:

    - shoulders (2, 2): the ends of the pinned top row, offsets from the carrier; default from his middle to a
      quarter of his width behind his back, a fifth of his height below the top of his box;
    - length: 0.7 × his height (the hem clears his feet); width: 1.35 × the shoulder span (it flares);
    - resolution (nx, ny) = CAPE_RESOLUTION; material "silk" (with damping CAPE_DAMPING); style CAPE_STYLE;
    - facing +1 (right) or −1 (left: the whole layout mirrored);
    - max_distance True: a ``MaxDistance`` on the cape (``Cape.limit``), its reference the cape hanging at rest on
      the carrier: each particle at most REACH × its rest distance from the pinned row away from where it hangs,
      and a backstop it may not pass at the plane of the hero's front face (capsules of BACKSTOP_RADIUS, normal
      toward his back): the cape hangs and streams free behind him and never swings in front of him. False: none.

    The sheet hangs in the xy plane (facing the camera, drawn two-sided) GAP behind the carrier's collision
    extrusion in z, bowed BOW × width deeper, so it collides with the level (make the hero's extrusion thinner
    than the level's: ``RigidBody2D(body, depth=0.3)`` against the default 1 m) but never with him. cloth_kwargs
    go to ``Cloth.from_mesh`` (``damping=``, ``thickness=``, ``model=``, ``iterations=`` …). Needs DefaultPlugins.
    Raises ValueError (TypeError for a wrong kind) naming the argument: an App without DefaultPlugins, an
    entity with neither RigidBody2D nor Transform, non-finite or non-positive sizes, coincident shoulders."""
    where = "loom.cape"
    app = _shared.checked_app(where, app)
    if facing not in (1, -1) or isinstance(facing, bool):
        raise ValueError(f"{where} facing = {_shared.brief(facing)}: expected +1 (right) or -1 (left)")
    look = _shared.style(where, style, CAPE_STYLE)
    pixels = app.resources.get(PixelSpace)
    if not isinstance(max_distance, bool):
        raise TypeError(f"{where} max_distance = {_shared.brief(max_distance)}: expected True or False")
    args = dict(attach_to=attach_to, shoulders=shoulders, length=length, width=width, resolution=resolution,
                material=material, cloth_kwargs=dict(cloth_kwargs))
    cloth, pin, offsets, extent, args["at"], limit, reference = _build(app, pixels, facing, **args)
    entity = app.spawn(cloth, pin, look, *([limit] if max_distance else []))
    handle = Cape(app, entity, cloth, pin, int(attach_to), offsets.copy(), facing,
                  limit if max_distance else None, reference)
    handle._args, handle._reach = args, extent
    _units.record(app, handle, pixels, where)
    return handle


def _build(app: App, pixels: PixelSpace | None, facing: int, *, attach_to: Any, shoulders: Any,
           length: float | None, width: float | None, resolution: tuple[int, int] | None,
           material: str | ClothMaterial, cloth_kwargs: dict[str, Any], at: tuple | None = None
           ) -> tuple[Cloth, Pin, np.ndarray, tuple, tuple, MaxDistance, np.ndarray]:
    """The cape's Cloth and Pin for ``cape``'s arguments read in ``pixels`` (None: metres) with the carrier
    ``at`` its pose then (None: now), the pinned row's offsets facing right [m] (k, 3), its extent for the units
    check (``_units.Helper._extent``), the carrier's pose it read (``_carrier``), its MaxDistance and that limit's
    reference facing right [m] (ny, nx, 3)."""
    where = "loom.cape"
    carrier, box, half_depth, at = _carrier(app, attach_to, pixels, at)
    x0, x1, y0, y1 = box
    w, h = x1 - x0, y1 - y0
    if shoulders is None:
        top = np.array([[0.5 * (x0 + x1), y1 - 0.2 * h], [x0 - 0.25 * w, y1 - 0.2 * h]])
    else:
        top = _shared.local_offsets(_shared.points(where, "shoulders", shoulders, 2), pixels)
    top = top[np.argsort(top[:, 0], kind="stable")]
    span = float(np.linalg.norm(top[1] - top[0]))
    if span <= 1e-6:
        raise ValueError(f"{where} shoulders = {_shared.brief(np.asarray(shoulders).tolist())}: the two points "
                         f"must differ (they are the ends of the pinned row)")
    length = 0.7 * h if length is None else _shared.length(where, "length", length, pixels)
    width = 1.35 * span if width is None else _shared.length(where, "width", width, pixels)
    nx, ny = _shared.resolution(where, CAPE_RESOLUTION if resolution is None else resolution)

    mid = top.mean(axis=0)
    z = -(half_depth + GAP)
    corners = [np.array([*top[0], z]), np.array([*top[1], z]),
               np.array([mid[0] - width / 2, mid[1] - length, z]), np.array([mid[0] + width / 2, mid[1] - length, z])]
    right = _shared.quad_layout(*corners, nx, ny)                                    # local [m], facing right
    right[..., 2] -= BOW * width * np.sin(np.linspace(0.0, math.pi, nx))[None, :]   # bowed away from the hero
    local = right if facing == 1 else right[:, ::-1] * (-1.0, 1.0, 1.0)
    world = local @ carrier.rotation.T + carrier.position
    sheet = _shared.sheet(world)
    cloth_kwargs = dict(cloth_kwargs)
    if isinstance(material, str) and "damping" not in cloth_kwargs:
        cloth_kwargs["damping"] = CAPE_DAMPING
    cloth = Cloth.from_mesh(sheet, material, **cloth_kwargs)
    row = sheet.side("top")
    offsets = right[-1]                                                              # (nx, 3) the pinned row
    pin = Pin(row, attach_to=int(attach_to), offset=_facing(offsets, facing))
    cx, cy = float(carrier.position[0]), float(carrier.position[1])
    extent = (f"its carrier (entity {int(attach_to)}) at ({cx:.4g}, {cy:.4g})", float(np.hypot(cx, cy)),
              "its length, width or the hero's box", float(max(length, width, w, h)))
    # max distance and backstop (MaxDistance): from where each particle hangs at rest on the carrier, at most REACH ×
    # its rest distance from the pinned row (same column); the backstop's wall at the front face x1 (facing right:
    # c = p + x̂·(R + d) puts it at x = p_x + d, so d = x1 − p_x; mirrored, the same d puts it at x0 = −x1 facing
    # left), capsules along the carrier's up
    hang = right.copy()
    hang[..., 0] = right[-1][None, :, 0]                                             # straight down from the row
    hang[..., 2] = right[-1][None, :, 2]
    below = np.linalg.norm(right - right[-1][None, :, :], axis=2)                    # (ny, nx) [m]
    front = float(x1)                                                                # never in front of his face
    layout = np.concatenate([hang, REACH * below[..., None], front - hang[..., :1]], axis=2)   # (ny, nx, 5)
    limit = MaxDistance(reference=np.zeros((nx * ny, 3)), attach_to=int(attach_to), normal=(-float(facing), 0.0, 0.0),
                        backstop_radius=BACKSTOP_RADIUS, backstop_axis=(0.0, 1.0, 0.0),
                        backstop_half_length=BACKSTOP_RADIUS)
    _place_limit(limit, layout, facing)
    return cloth, pin, offsets.copy(), extent, at, limit, layout


def _place_limit(limit: MaxDistance, layout: np.ndarray, facing: int) -> np.ndarray:
    """Give ``limit`` the cape's reference, distances and backstop offsets for ``facing`` from ``layout`` (ny, nx, 5)
    (reference x, y, z [m], distance [m], offset [m] facing right: the particles of a left-facing sheet run in the
    mirrored order, so each column's numbers go with it); return the reference (n, 3) for that facing."""
    rows = layout if facing == 1 else layout[:, ::-1]
    reference = rows[..., :3].reshape(-1, 3) * ((1.0, 1.0, 1.0) if facing == 1 else (-1.0, 1.0, 1.0))
    limit.assign(reference=reference, distance=rows[..., 3].reshape(-1), backstop_offset=rows[..., 4].reshape(-1))
    return reference

def _facing(right: np.ndarray, direction: int) -> np.ndarray:
    """Pin offsets (k, 3) for ``direction``: the right-facing row, or its mirror in x with the order kept
    left to right (particle i takes the mirror of particle k − 1 − i's place)."""
    return right.copy() if direction == 1 else right[::-1] * (-1.0, 1.0, 1.0)


def _carrier(app: App, entity: Any, pixels: PixelSpace | None, at: tuple | None = None
             ) -> tuple[Any, tuple[float, ...], float, tuple]:
    """The carrier's Transform (its position and rotation), its collision box (x0, x1, y0, y1) in its local metres,
    the half depth [m] of its collision extrusion (0 for a bare Transform) and its pose as read: ``at`` if given
    (a rebuild reads the carrier where the first build found it), else now — a body's (x, y, angle) in pymunk
    units, a Transform's (position, rotation) copies."""
    where = "loom.cape"
    if isinstance(entity, bool) or not isinstance(entity, (int, np.integer)):
        raise TypeError(f"{where} attach_to = {_shared.brief(entity)}: expected an entity id (int)")
    entity = int(entity)
    rigid = app.try_get(entity, RigidBody2D)
    transform = app.try_get(entity, Transform)
    if rigid is not None:
        if "PymunkPlugin" not in app.plugins:
            raise ValueError(f"{where} attach_to = {entity}: a RigidBody2D needs the pymunk bridge (DefaultPlugins)")
        scale, ox, oy, sign = body_units(rigid, pixels)
        body = rigid.body
        at = (body.position.x, body.position.y, body.angle) if at is None else at
        x, y = (at[0] - ox) / scale, sign * (at[1] - oy) / scale
        pose = Transform.from_2d(x, y, sign * at[2], rigid.z)
        if transform is None:                                  # set-up time: added once, never per frame
            app.add_component(entity, pose)
            transform = pose
        else:                                                  # where the bridge will put it at the first step
            transform.position = pose.position
            transform.rotation = pose.rotation
        corners = _shape_points(body) * (1.0 / scale, sign / scale)
        if corners.size:
            box = (corners[:, 0].min(), corners[:, 0].max(), corners[:, 1].min(), corners[:, 1].max())
        else:
            box = HERO_BOX
        return transform, tuple(float(v) for v in box), rigid.depth / 2 + rigid.thickness, at
    if transform is None:
        raise ValueError(f"{where} attach_to = {entity}: that entity has no Transform or RigidBody2D to carry the "
                         f"cape")
    if at is None:
        at = (np.array(transform.position, dtype=np.float64), np.array(transform.rotation, dtype=np.float64))
    pose = _Pose(*at)
    collider = app.try_get(entity, Collider)
    if collider is not None and isinstance(collider.shape, Box):
        hx, hy, hz = collider.shape.half_extents
        return pose, (-hx, hx, -hy, hy), hz + collider.thickness, at
    return pose, HERO_BOX, 0.0, at


class _Pose(NamedTuple):
    """A carrier Transform's position [m] (3,) and rotation (3, 3) as the cape read them."""

    position: np.ndarray
    rotation: np.ndarray


def _shape_points(body: Any) -> np.ndarray:
    """Local points (p, 2) in pymunk units bounding the body's shapes (polygon corners, circle and segment ends
    widened by their radius)."""
    out: list[tuple[float, float]] = []
    for shape in body.shapes:
        r = shape.radius
        if isinstance(shape, pymunk.Poly):
            centres = [tuple(v) for v in shape.get_vertices()]
        elif isinstance(shape, pymunk.Circle):
            centres = [tuple(shape.offset)]
        elif isinstance(shape, pymunk.Segment):
            centres = [tuple(shape.a), tuple(shape.b)]
        else:
            continue
        out += [(cx + dx * r, cy + dy * r) for cx, cy in centres for dx in (-1, 1) for dy in (-1, 1)]
    return np.array(out).reshape(-1, 2)
