"""Coupling: where cloth meets another physics engine — pymunk bodies as colliders, impulses back."""
from __future__ import annotations

from loom.engine import App, Stage
from loom.systems.coupling import cold, pymunk_bridge  # noqa: F401  (cold: the kernels' Python twins registered)
from loom.systems.coupling.pymunk_bridge import body_units
from loom.systems.sets import ClothSet


class PymunkPlugin:
    """pymunk bodies (RigidBody2D) as colliders, with impulses back to the bodies."""

    def build(self, app: App) -> None:
        app.on_despawn(lambda entity: pymunk_bridge.forget_body(app, entity))    # its pose and colliders go too
        # before the pins read a body's Transform (a cape rides on it) and before colliders are packed
        app.add_system(pymunk_bridge.sync_bodies, Stage.PRE_STEP, in_set=ClothSet.PIN_TARGETS,
                       before="prepare_pins")
        # two-way bodies take each substep's cloth impulse before the next substep's contacts (pymunk_bridge)
        app.add_system(pymunk_bridge.couple_bodies, Stage.SUBSTEP, in_set=ClothSet.COLLIDE,
                       before="collide_environment")
        app.add_system(pymunk_bridge.collect_impulses, Stage.POST_STEP, in_set=ClothSet.GUARD)


__all__ = ["PymunkPlugin", "body_units"]
