"""pymunk bridge: a 2D game's rigid bodies as cloth colliders, with two-way impulses.

PRE_STEP (before colliders are gathered): apply the impulses cloth gave each RigidBody2D in the
last step, step the Space2D (if Loom owns stepping), then set each shape's collider Transform from
its body's position and angle — so the cloth sees the body move from where it was to where it is
now across the step's substeps. A Transform on the RigidBody2D's own entity follows the body too,
so pins can ride on it (a cape on a hero). POST_STEP: read the momentum the cloth contacts pushed into each
shape (``ColliderSet.impulse``, accumulated by the environment system) and queue it on the body.
Despawning a RigidBody2D's entity despawns the collider entities made for its shapes (``forget_body``);
removing its body from the pymunk Space stays the game's job.
"""
from __future__ import annotations

import math
import weakref

import numpy as np
import pymunk

from loom.components import Box, Capsule, Collider, ColliderSet, Prism, Transform
from loom.components.rigid_body import RigidBody2D, Space2D
from loom.engine import App

_Z_UP = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])   # local y → world z (capsule axis)


def sync_bodies(app: App, dt: float) -> None:
    """Apply queued cloth impulses, step the space, and move every shape's collider to its body."""
    poses = app.init_resource(BodyPoses)
    for entity, rigid in app.query(RigidBody2D):
        if not rigid.shape_entities:
            _bind(app, rigid)
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
        pose = (body.position.x, body.position.y, body.angle, rigid.scale, rigid.z)
        if poses.last.get(entity) == pose:           # resting or static: its colliders are where they were
            continue
        poses.last[entity] = pose
        own = app.try_get(entity, Transform)
        if own is not None:                          # the body's own Transform: carries pins (a cape)
            own.position[:] = (body.position.x / rigid.scale, body.position.y / rigid.scale, rigid.z)
            c, s = math.cos(body.angle), math.sin(body.angle)
            own.rotation[:] = ((c, -s, 0.0), (s, c, 0.0), (0.0, 0.0, 1.0))
        for entity, shape in zip(rigid.shape_entities, rigid.shapes):
            transform = app.get(entity, Transform)
            centre, angle = _shape_pose(rigid, shape)
            transform.position[:] = (centre[0], centre[1], rigid.z)
            c, s = math.cos(angle), math.sin(angle)
            if isinstance(shape, pymunk.Circle):                # turn · _Z_UP: the capsule axis along z
                transform.rotation[:] = ((c, 0.0, s), (s, 0.0, -c), (0.0, 1.0, 0.0))
            else:
                transform.rotation[:] = ((c, -s, 0.0), (s, c, 0.0), (0.0, 0.0, 1.0))


def collect_impulses(app: App, dt: float) -> None:
    """Queue on each two-way body the momentum the cloth gave its shapes this step (in pymunk units)."""
    packed = app.resources.get(ColliderSet)
    if packed is None or packed.count == 0:
        return
    row_of = {int(e): r for r, e in enumerate(packed.entities)}
    for _, rigid in app.query(RigidBody2D):
        if not rigid.two_way:
            continue
        for entity in rigid.shape_entities:
            r = row_of.get(entity)
            if r is None or packed.impulse_point[r, 3] == 0.0:
                continue
            j = packed.impulse[r]
            point = packed.impulse_point[r, :3] / packed.impulse_point[r, 3]
            rigid.pending_impulse.append((j[0] * rigid.scale, j[1] * rigid.scale,
                                          point[0] * rigid.scale, point[1] * rigid.scale))


def _bind(app: App, rigid: RigidBody2D) -> None:
    """Create one collider entity per shape of the body (once: components are not added per frame).

    pymunk keeps a body's shapes in a set; the order is fixed here, on the component, so a snapshot
    pairs every shape with its collider again (an order recomputed from ids would not survive a load)."""
    rigid.shapes = list(rigid.body.shapes)
    for shape in rigid.shapes:
        s = rigid.scale
        margin = rigid.thickness
        if isinstance(shape, pymunk.Circle):
            geometry = Capsule(shape.radius / s, rigid.depth / 2)
        elif isinstance(shape, pymunk.Segment):
            length = (shape.b - shape.a).length / s
            radius = shape.radius / s
            geometry = Box((length / 2 + radius, max(radius, 1e-3), rigid.depth / 2))
        elif isinstance(shape, pymunk.Poly):
            vertices = np.array([tuple(v) for v in shape.get_vertices()]) / s
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
        centre, angle = _shape_pose(rigid, shape)
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


def _shape_pose(rigid: RigidBody2D, shape: pymunk.Shape) -> tuple[tuple[float, float], float]:
    """World centre [m] and angle [rad] of a shape's collider frame."""
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
    return (centre[0] / rigid.scale, centre[1] / rigid.scale), angle


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
