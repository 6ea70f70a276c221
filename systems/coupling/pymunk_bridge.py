"""pymunk bridge: a 2D game's rigid bodies as cloth colliders, with two-way impulses.

PRE_STEP (before colliders are gathered): apply the impulses cloth gave each RigidBody2D in the
last step, step the Space2D (if Loom owns stepping), then set each shape's collider Transform from
its body's position and angle — so the cloth sees the body move from where it was to where it is
now across the step's substeps. The RigidBody2D's own entity gets a Transform when the bridge first sees
it (if it has none: added once, never per frame), which then follows the body every step before the pins
read it, so pins ride on it (``Pin(attach_to=body_entity)``, a cape on a hero). POST_STEP: read the momentum
the cloth contacts pushed into each shape (``ColliderSet.impulse``, accumulated by the environment system)
and queue it on the body.

Units (components/rigid_body.py): a body whose ``scale`` is None is read in the App's ``PixelSpace`` when it
has one — pixels, y down: a point (px, py) is ((px − ox)/ppm, (oy − py)/ppm) [m], an angle a is −a, and
impulses go back as pixels with y flipped — else with scale 1 and y up; an explicit scale keeps y up.
Despawning a RigidBody2D's entity despawns the collider entities made for its shapes (``forget_body``);
removing its body from the pymunk Space stays the game's job.
"""
from __future__ import annotations

import math
import weakref

import numpy as np
import pymunk

from loom.components import Box, Capsule, Collider, ColliderSet, PixelSpace, Prism, Transform
from loom.components.rigid_body import RigidBody2D, Space2D
from loom.engine import App

_Z_UP = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])   # local y → world z (capsule axis)


def sync_bodies(app: App, dt: float) -> None:
    """Apply queued cloth impulses, step the space, and move every body's Transform and shape colliders to it."""
    poses = app.init_resource(BodyPoses)
    pixels = app.resources.get(PixelSpace)
    for entity, rigid in app.query(RigidBody2D):
        if not rigid.shape_entities:
            _bind(app, entity, rigid, body_units(rigid, pixels))
            poses.colliders[entity] = rigid.shape_entities
        if rigid.two_way and rigid.body.body_type == pymunk.Body.DYNAMIC:
            for jx, jy, px, py in rigid.pending_impulse:
                rigid.body.apply_impulse_at_world_point((jx, jy), (px, py))
        rigid.pending_impulse.clear()
    space = app.resources.get(Space2D)
    if space is not None and space.step:
        space.space.step(dt)
    for entity, rigid in app.query(RigidBody2D):
        body = rigid.body
        frame = body_units(rigid, pixels)
        pose = (body.position.x, body.position.y, body.angle, rigid.z, *frame)
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


def _to_units(frame: Units, point) -> tuple[float, float]:
    """A world point (x, y) [m] → pymunk units (the inverse of ``_to_metres``)."""
    scale, ox, oy, sign = frame
    return ox + point[0] * scale, oy + sign * point[1] * scale


def _turn_z(angle: float) -> tuple[tuple[float, float, float], ...]:
    """Rotation matrix rows of a turn by ``angle`` [rad] about +z (counter-clockwise, y up)."""
    c, s = math.cos(angle), math.sin(angle)
    return ((c, -s, 0.0), (s, c, 0.0), (0.0, 0.0, 1.0))


def collect_impulses(app: App, dt: float) -> None:
    """Queue on each two-way body the momentum the cloth gave its shapes this step (in pymunk units)."""
    packed = app.resources.get(ColliderSet)
    if packed is None or packed.count == 0:
        return
    row_of = {int(e): r for r, e in enumerate(packed.entities)}
    pixels = app.resources.get(PixelSpace)
    for _, rigid in app.query(RigidBody2D):
        if not rigid.two_way:
            continue
        frame = body_units(rigid, pixels)
        scale, sign = frame[0], frame[3]
        for entity in rigid.shape_entities:
            r = row_of.get(entity)
            if r is None or packed.impulse_point[r, 3] == 0.0:
                continue
            j = packed.impulse[r]                                            # [N·s] → mass · units/s
            point = _to_units(frame, packed.impulse_point[r, :2] / packed.impulse_point[r, 3])
            rigid.pending_impulse.append((j[0] * scale, sign * j[1] * scale, point[0], point[1]))


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
        collider = Collider(geometry, thickness=margin, friction=friction)
        centre, angle = _shape_pose(rigid, shape, frame)
        rigid.shape_entities.append(app.spawn(collider, Transform.from_2d(centre[0], centre[1], angle, rigid.z)))


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
    operations, where a general prism walks every edge (the cape's hero cost 0.5 ms a frame as one)."""
    if vertices.shape[0] != 4:
        return None
    lo, hi = vertices.min(axis=0), vertices.max(axis=0)
    corners = {(float(x), float(y)) for x in (lo[0], hi[0]) for y in (lo[1], hi[1])}
    snapped = {(float(x), float(y)) for x, y in vertices}
    if len(corners) != 4 or not all(min(abs(cx - x) + abs(cy - y) for x, y in snapped) < 1e-9 for cx, cy in corners):
        return None
    return (hi[0] - lo[0]) / 2, (hi[1] - lo[1]) / 2
