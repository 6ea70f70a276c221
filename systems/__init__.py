"""Loom's standard systems, each a plugin; ``DefaultPlugins`` is the whole cloth pipeline.

Order your own systems against the public sets in ``ClothSet``::

    app.add_system(apply_buoyancy, Stage.SUBSTEP, after=ClothSet.PREDICT, before=ClothSet.CONSTRAIN)
"""
from __future__ import annotations

from components import Gravity
from engine import App, PluginGroup, Stage
from systems import conditions, constraints, environment, guard, integration, pins, pymunk_bridge, self_collision
from systems.implicit import ImplicitPlugin
from systems.mass_spring import MassSpringPlugin
from systems.picking import PickingPlugin
from systems.report import cloth_report
from systems.sets import POST_STEP_SETS, PRE_STEP_SETS, SUBSTEP_SETS, ClothSet
from systems.tearing import TearingPlugin
from systems.teleport import TeleportPlugin
from systems.verlet import VerletPlugin
from systems.wind import WindPlugin


class ClothPlugin:
    """The ordered sets of the pipeline, the gravity default and the cloth report."""

    def build(self, app: App) -> None:
        app.configure_sets(Stage.PRE_STEP, *PRE_STEP_SETS)
        app.configure_sets(Stage.SUBSTEP, *SUBSTEP_SETS)
        app.configure_sets(Stage.POST_STEP, *POST_STEP_SETS)
        app.insert_resource(Gravity(), replace=False)
        app.add_reporter(cloth_report)


class IntegrationPlugin:
    """Symplectic Euler prediction, velocity update with damping, force clearing."""

    def build(self, app: App) -> None:
        app.add_system(integration.predict_positions, Stage.SUBSTEP, in_set=ClothSet.PREDICT)
        app.add_system(integration.update_velocities, Stage.SUBSTEP, in_set=ClothSet.UPDATE)
        app.add_system(integration.clear_forces, Stage.POST_STEP, in_set=ClothSet.CLEAR)


class PinPlugin:
    """Pin targets per step, pinned particles per substep."""

    def build(self, app: App) -> None:
        app.add_system(pins.prepare_pins, Stage.PRE_STEP, in_set=ClothSet.PIN_TARGETS)
        app.add_system(pins.pin_particles, Stage.SUBSTEP, in_set=ClothSet.PIN)


class ConstraintPlugin:
    """XPBD links, dihedral bending, Provot limit and tethers."""

    def build(self, app: App) -> None:
        app.add_system(constraints.refresh_tethers, Stage.PRE_STEP, in_set=ClothSet.TETHERS)
        app.add_system(constraints.solve_constraints, Stage.SUBSTEP, in_set=ClothSet.CONSTRAIN)


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


class PymunkPlugin:
    """pymunk bodies (RigidBody2D) as colliders, with impulses back to the bodies."""

    def build(self, app: App) -> None:
        # before the pins read a body's Transform (a cape rides on it) and before colliders are packed
        app.add_system(pymunk_bridge.sync_bodies, Stage.PRE_STEP, in_set=ClothSet.PIN_TARGETS,
                       before=pins.prepare_pins.__name__)
        app.add_system(pymunk_bridge.collect_impulses, Stage.POST_STEP, in_set=ClothSet.GUARD)


class GuardPlugin:
    """Refuse and report a step that would write NaN or inf."""

    def build(self, app: App) -> None:
        app.add_system(guard.save_state, Stage.PRE_STEP, in_set=ClothSet.SAVE)
        app.add_system(guard.reject_non_finite, Stage.POST_STEP, in_set=ClothSet.GUARD)


DefaultPlugins = PluginGroup(ClothPlugin, IntegrationPlugin, PinPlugin, ConstraintPlugin, EnvironmentPlugin,
                             SelfCollisionPlugin, PymunkPlugin, GuardPlugin, VerletPlugin, MassSpringPlugin,
                             ImplicitPlugin,
                             WindPlugin, PickingPlugin, TearingPlugin, TeleportPlugin)
"""The standard pipeline; ``DefaultPlugins.without("GuardPlugin")`` leaves a member out."""

__all__ = ["ClothPlugin", "ClothSet", "ConstraintPlugin", "DefaultPlugins", "EnvironmentPlugin", "GuardPlugin",
           "ImplicitPlugin", "IntegrationPlugin", "MassSpringPlugin", "PinPlugin", "PymunkPlugin",
           "SelfCollisionPlugin", "VerletPlugin"]
