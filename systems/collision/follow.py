"""Colliders on an animated body: Transforms carried by other Transforms (``loom.components.Follow``), once a step.

PRE_STEP, after ``ClothSet.PIN_TARGETS`` (the game has moved its character, pymunk bodies are in their Transforms,
pins know their targets) and before ``ClothSet.FORCES`` (where ``gather_colliders`` packs every collider with its pose
at the step's start and end): each following entity's Transform is written in place,

    p = R_t · offset + p_t,    R = R_t · rotation        (t: the target's Transform)

so the packed collider ends the step where the part ends it, and the contact kernels, which interpolate the pose over
the substeps and take the surface's motion for friction (Fuhrmann et al. 2003 eqs. 19–21: the slip relative to the
surface), see the part's velocity. Python loops over the following entities (a character's dozen parts), never over
particles.
"""
from __future__ import annotations

import numpy as np

from loom.components import Transform
from loom.components.follow import Follow
from loom.engine import App, Stage
from loom.systems.sets import ClothSet


def _following(app: App) -> bool:
    """Run condition: some entity holds a Follow."""
    return bool(app.query(Follow))


def follow_targets(app: App, dt: float) -> None:
    """Set each active Follow's Transform from its target's Transform (in place: no array made per step). Raises
    ValueError naming the entity when the target has no Transform."""
    for entity, follow, transform in app.query(Follow, Transform):
        if not follow.active:
            continue
        target = app.try_get(follow.target, Transform)
        if target is None:
            raise ValueError(f"Follow on entity {entity}: target = {follow.target} has no Transform (despawned, or "
                             f"not a posed part?)")
        rotation, position = target.rotation, target.position
        offset = follow.offset
        for i in range(3):
            transform.position[i] = position[i] + rotation[i, 0] * offset[0] + rotation[i, 1] * offset[1] \
                + rotation[i, 2] * offset[2]
        np.matmul(rotation, follow.rotation, out=transform.rotation)


class FollowPlugin:
    """Transforms that follow other Transforms (``Follow``), between the pin targets and the colliders' packing."""

    def build(self, app: App) -> None:
        app.add_system(follow_targets, Stage.PRE_STEP, after=ClothSet.PIN_TARGETS, before=ClothSet.FORCES,
                       run_if=_following)
