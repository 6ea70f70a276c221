"""Collision: where cloth is kept out of colliders (``environment``) and out of itself (``self_collision``)."""
from __future__ import annotations

from loom.engine import App, Stage
from loom.systems.collision import environment, self_collision
from loom.systems.sets import ClothSet
from loom.systems.shared import conditions


class EnvironmentPlugin:
    """Collisions with every collider shape (moving, swept for fast particles), with Coulomb friction."""

    def build(self, app: App) -> None:
        app.add_system(environment.gather_colliders, Stage.PRE_STEP, in_set=ClothSet.FORCES)
        app.add_system(environment.collide_environment, Stage.SUBSTEP, in_set=ClothSet.COLLIDE)


class SelfCollisionPlugin:
    """Self- and inter-cloth particle collision for cloths with ``self_collision`` on."""

    def build(self, app: App) -> None:
        app.add_system(self_collision.collide_self, Stage.SUBSTEP, in_set=ClothSet.SELF_COLLIDE,
                       run_if=conditions.self_colliding)


__all__ = ["EnvironmentPlugin", "SelfCollisionPlugin"]
