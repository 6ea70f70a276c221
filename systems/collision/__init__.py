"""Collision: where cloth is kept out of colliders (``environment``) and out of itself (``self_collision``)."""
from __future__ import annotations

from loom.engine import App, Stage
from loom.systems.collision import cold, environment, self_collision  # noqa: F401  (cold: the stand-ins registered)
from loom.systems.sets import ClothSet
from loom.systems.shared import conditions


class EnvironmentPlugin:
    """Collisions with every collider shape (moving, swept for fast particles), with Coulomb friction."""

    def build(self, app: App) -> None:
        app.add_system(environment.gather_colliders, Stage.PRE_STEP, in_set=ClothSet.FORCES)
        app.add_system(environment.collide_environment, Stage.SUBSTEP, in_set=ClothSet.COLLIDE)


class KeepOutPlugin:
    """Opt-in: ``environment.keep_out``, a last position pass in every substep (after ``ClothSet.SETTLE``, before
    ``ClothSet.UPDATE``) so that no step ends with a particle inside a collider: push out, the deformation limit once
    more with the pushed particles sliding, push out what is still deep. Not in ``DefaultPlugins``: where a collider
    reaches particles that pins hold (a figure's arm at a cape's pinned shoulders), no position satisfies the pins,
    the collider and the limit, and the last push-out then leaves links stretched far past the limit (10–28 % in a
    few steps of the cape game), worse to see than the few millimetres inside it saves (docs/physics.md,
    "Contacts hold")."""

    def build(self, app: App) -> None:
        app.add_system(environment.keep_out, Stage.SUBSTEP, after=ClothSet.SETTLE, before=ClothSet.UPDATE)


class SelfCollisionPlugin:
    """Self- and inter-cloth particle collision for cloths with ``self_collision`` on."""

    def build(self, app: App) -> None:
        app.add_system(self_collision.collide_self, Stage.SUBSTEP, in_set=ClothSet.SELF_COLLIDE,
                       run_if=conditions.self_colliding)


__all__ = ["EnvironmentPlugin", "KeepOutPlugin", "SelfCollisionPlugin"]
