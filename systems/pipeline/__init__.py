"""The pipeline's frame around every model: ordered sets, gravity, pins, the NaN guard and the report.

- ``ClothPlugin``: the ordered sets of ``ClothSet`` in their stages, the ``Gravity`` default, the report, and
  force clearing after each step for every model (``forces.clear_forces``).
- ``PinPlugin``: pin targets per step (``pins.prepare_pins``), pinned particles per substep.
- ``GuardPlugin``: refuse and recover a step that would write NaN or inf (``guard``).
"""
from __future__ import annotations

from loom.components import Gravity
from loom.engine import App, Stage
from loom.systems.pipeline import forces, guard, pins
from loom.systems.pipeline.report import cloth_report
from loom.systems.shared.model_index import forget_on_despawn
from loom.systems.sets import POST_STEP_SETS, PRE_STEP_SETS, SUBSTEP_SETS, ClothSet


class ClothPlugin:
    """The ordered sets of the pipeline, the gravity default, the cloth report and force clearing."""

    def build(self, app: App) -> None:
        app.configure_sets(Stage.PRE_STEP, *PRE_STEP_SETS)
        app.configure_sets(Stage.SUBSTEP, *SUBSTEP_SETS)
        app.configure_sets(Stage.POST_STEP, *POST_STEP_SETS)
        app.insert_resource(Gravity(), replace=False)
        app.add_reporter(cloth_report)
        app.add_system(forces.clear_forces, Stage.POST_STEP, in_set=ClothSet.CLEAR)


class PinPlugin:
    """Pin targets per step, pinned particles per substep."""

    def build(self, app: App) -> None:
        app.add_system(pins.prepare_pins, Stage.PRE_STEP, in_set=ClothSet.PIN_TARGETS)
        app.add_system(pins.pin_particles, Stage.SUBSTEP, in_set=ClothSet.PIN)


class GuardPlugin:
    """Refuse and report a step that would write NaN or inf."""

    def build(self, app: App) -> None:
        forget_on_despawn(app, guard.StepSnapshot)
        forget_on_despawn(app, guard.Recovery)
        app.add_system(guard.save_state, Stage.PRE_STEP, in_set=ClothSet.SAVE)
        app.add_system(guard.reject_non_finite, Stage.POST_STEP, in_set=ClothSet.GUARD)


__all__ = ["ClothPlugin", "GuardPlugin", "PinPlugin"]
