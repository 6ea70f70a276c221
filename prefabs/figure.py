"""A drawn character: head, torso, arms and legs as Loom Props, animated as it runs and jumps (``loom.prefabs``).

Simple shapes (a sphere, boxes, capsules) that the GL renderer draws with shadows. Props never collide:
``figure_colliders(app, figure)`` gives the body's parts colliders of the same shapes that follow them
(``loom.Follow``), so cloth collides with the animated body, with each part's velocity for friction. Each step
``pose_figure(app, figure, position, yaw, speed, airborne, dt)`` places every part from the character's position,
the way it faces (a yaw about +y, 0 facing +x) and how fast it runs: legs and arms swing opposite each other with a
stride of ``STRIDE`` metres, tuck up in the air, and rest at a slight sway when it stands.

Sizes are for a 0.4 m × 0.8 m × 0.4 m collision box centred on the body's position (the cape game's hero):
the legs fill its lower half, the torso its upper half, the head sits above it.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import numba
import numpy as np

from loom.components import Box, Capsule, Collider, ColliderStyle, Follow, Prop, Sphere, Transform
from loom.engine import App
from loom.engine.persist import persistent

STRIDE = 0.55
"""Distance run per half cycle of the legs [m]."""
SWING = 0.75
"""Leg swing at full running speed [rad] either side of hanging straight."""
SKIN = (0.86, 0.64, 0.50)
TUNIC = (0.16, 0.30, 0.55)
TROUSERS = (0.22, 0.20, 0.22)
BELT = (0.40, 0.26, 0.12)
HAIR = (0.25, 0.15, 0.08)
EYES = (0.08, 0.06, 0.05)

# part name → (shape, colour, joint in the body frame [m], offset of the part's centre from its joint [m]):
# the body frame is x forward, y up, z to the left, origin at the collision box's centre.
PARTS = {
    "torso": (Box((0.19, 0.2, 0.19)), TUNIC, (0.0, 0.2, 0.0), (0.0, 0.0, 0.0)),
    "belt": (Box((0.195, 0.035, 0.195)), BELT, (0.0, 0.02, 0.0), (0.0, 0.0, 0.0)),
    "head": (Sphere(0.12), SKIN, (0.0, 0.53, 0.0), (0.0, 0.0, 0.0)),
    "hair": (Sphere(0.115), HAIR, (0.0, 0.53, 0.0), (-0.025, 0.03, 0.0)),
    "left_eye": (Sphere(0.02), EYES, (0.0, 0.53, 0.0), (0.105, 0.02, 0.045)),
    "right_eye": (Sphere(0.02), EYES, (0.0, 0.53, 0.0), (0.105, 0.02, -0.045)),
    "left_leg": (Capsule(0.07, 0.13), TROUSERS, (0.0, -0.01, 0.1), (0.0, -0.2, 0.0)),
    "right_leg": (Capsule(0.07, 0.13), TROUSERS, (0.0, -0.01, -0.1), (0.0, -0.2, 0.0)),
    "left_arm": (Capsule(0.055, 0.12), TUNIC, (0.0, 0.34, 0.245), (0.0, -0.17, 0.0)),
    "right_arm": (Capsule(0.055, 0.12), TUNIC, (0.0, 0.34, -0.245), (0.0, -0.17, 0.0)),
}


@persistent
@dataclass
class Figure:
    """The entities of one character's parts and its animation state."""

    parts: dict[str, int]
    """Part name → entity (Prop + Transform)."""
    phase: float = 0.0
    """Stride phase [rad]: advances by π every STRIDE metres run."""
    time: float = 0.0
    """Seconds since spawned (idle sway) [s]."""
    swing: dict[str, float] = field(default_factory=dict)
    """Part name → its current swing about the body's z axis [rad] (smoothed)."""
    _found: tuple = field(default=(None, (), ()), repr=False, compare=False)
    """``pose_figure``'s parts' Transforms, (``App.query(Transform)`` list, part entities, Transforms or None in
    ``_NAMES`` order): found again when a component was added or removed anywhere (esper's list is then a new one)
    or the parts changed, not looked up part by part every step."""


def spawn_figure(app: App, position: tuple[float, float, float]) -> Figure:
    """Spawn the parts at ``position`` [m] (the collision box's centre), facing +x; return the Figure."""
    parts = {}
    for name, (shape, colour, _, _) in PARTS.items():
        parts[name] = app.spawn(Prop(shape, color=colour), Transform(position=position))
    figure = Figure(parts)
    pose_figure(app, figure, np.asarray(position, float), 0.0, 0.0, False, 0.0)
    return figure


COLLIDING_PARTS = ("torso", "head", "left_leg", "right_leg", "left_arm", "right_arm")
"""The parts ``figure_colliders`` gives colliders by default: the body's volume (the belt, hair and eyes lie inside or
on it)."""


def figure_colliders(app: App, figure: Figure, parts: tuple[str, ...] = COLLIDING_PARTS, *, thickness: float = 0.0,
                     friction: float = 0.5) -> dict[str, int]:
    """Spawn a hidden collider of each part's own shape that follows the part (``Follow``: its Transform is the
    part's every step before the colliders are packed, so its velocity is the part's); return part name → collider
    entity. ``thickness`` [m] and ``friction`` [-] as ``Collider``'s. Raises KeyError naming an unknown part."""
    out = {}
    for name in parts:
        if name not in figure.parts:
            raise KeyError(f"figure_colliders parts: {name!r} is not a part of the figure (parts: "
                           f"{', '.join(figure.parts)})")
        entity = figure.parts[name]
        part = app.get(entity, Transform)
        shape = copy.deepcopy(PARTS[name][0])
        out[name] = app.spawn(Collider(shape, thickness=thickness, friction=friction),
                              Transform(position=part.position.copy(), rotation=part.rotation.copy()),
                              Follow(target=entity), ColliderStyle(visible=False))
    return out


def yaw_matrix(yaw: float, out: np.ndarray | None = None) -> np.ndarray:
    """Rotation by ``yaw`` [rad] about +y (0 keeps +x forward; −π/2 turns +x to +z), written into ``out``
    (3, 3) when given (no allocation: a game may call it every step). ``_pose_parts`` builds the same turn inline."""
    c, s = math.cos(yaw), math.sin(yaw)
    out = np.empty((3, 3)) if out is None else out
    out[0, 0], out[0, 1], out[0, 2] = c, 0.0, s
    out[1, 0], out[1, 1], out[1, 2] = 0.0, 1.0, 0.0
    out[2, 0], out[2, 1], out[2, 2] = -s, 0.0, c
    return out


_NAMES = tuple(PARTS)
_JOINTS = np.array([PARTS[name][2] for name in _NAMES], float)       # (parts, 3) [m], body frame
_OFFSETS = np.array([PARTS[name][3] for name in _NAMES], float)      # (parts, 3) [m], from each joint
_P = len(_NAMES)
_WORK = (np.zeros(_P), np.zeros((_P, 3)), np.zeros((_P, 3, 3)))
"""``pose_figure``'s work arrays (the parts' swings, their centres in the world and their rotations): it allocates
nothing, as the whole step (tests/test_allocations.py). One figure is posed at a time."""


@numba.njit(cache=True)
def _pose_parts(yaw, lean, angles, position, joints, offsets, centres, rotations):
    """Every part's centre [m] and rotation for a body at ``position`` facing ``yaw`` [rad] (about +y) and leaning
    ``lean`` [rad] (about its z): body = turn(yaw)·lean; a part swung by ``angles[k]`` about the body's z at its
    joint has rotation body·swing and centre position + body·(joint + swing·offset). One call for the whole figure,
    about half the cost of the same products as NumPy calls (docs/performance.md, "Moved from docstrings")."""
    cy, sy = math.cos(yaw), math.sin(yaw)
    cl, sl = math.cos(lean), math.sin(lean)
    # turn = [[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]], lean = [[cl, -sl, 0], [sl, cl, 0], [0, 0, 1]]
    b00, b01, b02 = cy * cl, -cy * sl, sy
    b10, b11, b12 = sl, cl, 0.0
    b20, b21, b22 = -sy * cl, sy * sl, cy
    for k in range(angles.shape[0]):
        ca, sa = math.cos(angles[k]), math.sin(angles[k])
        px = joints[k, 0] + ca * offsets[k, 0] - sa * offsets[k, 1]
        py = joints[k, 1] + sa * offsets[k, 0] + ca * offsets[k, 1]
        pz = joints[k, 2] + offsets[k, 2]
        centres[k, 0] = position[0] + b00 * px + b01 * py + b02 * pz
        centres[k, 1] = position[1] + b10 * px + b11 * py + b12 * pz
        centres[k, 2] = position[2] + b20 * px + b21 * py + b22 * pz
        # body · [[ca, -sa, 0], [sa, ca, 0], [0, 0, 1]]
        rotations[k, 0, 0], rotations[k, 0, 1], rotations[k, 0, 2] = b00 * ca + b01 * sa, b01 * ca - b00 * sa, b02
        rotations[k, 1, 0], rotations[k, 1, 1], rotations[k, 1, 2] = b10 * ca + b11 * sa, b11 * ca - b10 * sa, b12
        rotations[k, 2, 0], rotations[k, 2, 1], rotations[k, 2, 2] = b20 * ca + b21 * sa, b21 * ca - b20 * sa, b22


def pose_figure(app: App, figure: Figure, position: np.ndarray, yaw: float, speed: float, airborne: bool,
                dt: float) -> None:
    """Place every part for a body at ``position`` [m] facing ``yaw`` [rad], running at ``speed`` [m/s]
    (its size), in the air or not, ``dt`` [s] after the last pose. Writes the parts' Transforms in place.

    It runs every step: the parts' rotations and positions are computed together, one kernel call for the whole
    figure (``_pose_parts``; one NumPy call per part per operation would be a visible share of a small game's
    frame)."""
    figure.time += dt
    run = min(abs(speed) / 3.0, 1.0)
    figure.phase += abs(speed) * dt * math.pi / STRIDE
    stride = SWING * run * math.sin(figure.phase)
    sway = 0.04 * (1.0 - run) * math.sin(2.0 * math.pi * 0.5 * figure.time)
    if airborne:
        target = {"left_leg": 0.55, "right_leg": -0.35, "left_arm": -1.2, "right_arm": 0.9}
    else:
        target = {"left_leg": stride, "right_leg": -stride, "left_arm": -0.8 * stride + sway,
                  "right_arm": 0.8 * stride - sway}
    blend = 1.0 if dt == 0.0 else 1.0 - math.exp(-dt / 0.06)            # 60 ms to follow a new pose
    angles, centres, rotations = _WORK
    for k, name in enumerate(_NAMES):
        angle = figure.swing.get(name, 0.0)
        angle += (target.get(name, 0.0) - angle) * blend
        figure.swing[name] = angle
        angles[k] = angle
    _pose_parts(yaw, -0.12 * run, angles, position, _JOINTS, _OFFSETS, centres, rotations)   # lean into the run
    for k, transform in enumerate(_transforms(app, figure)):
        if transform is not None:
            transform.position[:] = centres[k]
            transform.rotation[:] = rotations[k]


def _transforms(app: App, figure: Figure) -> tuple[Transform | None, ...]:
    """The Transform of each part in ``_NAMES`` order (None: no such part, or it has none), kept in ``figure._found``
    while ``App.query(Transform)`` returns the same list (no component added or removed anywhere since) and the parts
    are the same entities: a part's Transform replaced during a step is posed from the step after, when the
    replacement is applied. Kept, not looked up: eleven ``App.try_get`` a step are a fifth of ``pose_figure``'s cost."""
    source = app.query(Transform)
    entities = tuple(map(figure.parts.get, _NAMES))
    found = figure._found
    if found[0] is not source or found[1] != entities:
        transforms = tuple(None if e is None else app.try_get(e, Transform) for e in entities)
        found = figure._found = (source, entities, transforms)
    return found[2]
