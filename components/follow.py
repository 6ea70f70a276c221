"""Follow: an entity's Transform carried by another entity's Transform (a collider on a figure's part, a bone).

Put ``Follow(target=part)`` next to a ``Collider`` and a ``Transform`` to make a capsule or a sphere of an animated
body: once a step, after the game has posed its character and before the colliders are packed
(``loom.systems.collision.follow``), the entity's Transform is set to the target's, composed with ``offset`` and
``rotation`` (the collider's place in the part's frame)::

    world position = R_target · offset + p_target        world rotation = R_target · rotation

A collider's velocity is its Transform's motion over the step (``ColliderSet.pose0`` → ``pose1``), so a following
collider gives the cloth the part's velocity for friction: a swinging arm drags the cloth it touches.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from loom.components._revision import Checked, checked_field
from loom.components._validate import Arr, Custom, Flag, Int
from loom.components.transform import _rotation
from loom.engine.persist import persistent


@persistent
@dataclass(eq=False)
class Follow(Checked):
    """This entity's Transform follows ``target``'s, at ``offset`` [m] and ``rotation`` in the target's frame."""

    target: int = checked_field(Int(1))
    """Entity whose Transform is followed (a figure's part, a hero, a bone)."""
    offset: Any = checked_field(Arr((3,), unit=" [m]"), (0.0, 0.0, 0.0))
    """Position [m] (3,) in the target's frame."""
    rotation: Any = checked_field(Custom(_rotation), default_factory=lambda: np.eye(3))
    """Rotation (3, 3) in the target's frame (orthonormal, det +1)."""
    active: bool = checked_field(Flag(), True)
    """False: the Transform is left where it is."""
