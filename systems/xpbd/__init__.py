"""XPBD, the default model: where its predict, constraint and update steps happen.

- ``predict``: symplectic Euler prediction, velocity update with damping (the pipeline clears the forces:
  ``loom.systems.pipeline.forces``).
- ``constraints``: links, dihedral bending and long-range tethers colour by colour, yarns line by line
  (``yarns``); after the collisions, the yarns once more and Provot's limit.
- ``data``: what XPBD keeps per cloth (its multipliers and tethers, ``XPBDData``), made when the model meets a
  cloth, made anew for a new topology, dropped with the entity; read it with ``xpbd_data(app, entity)``.
- ``XPBDPlugin`` = ``IntegrationPlugin`` + ``ConstraintPlugin``.
"""
from __future__ import annotations

from loom.engine import App, Stage
from loom.systems.sets import ClothSet
from loom.systems.shared.model_index import forget_on_despawn
from loom.systems.xpbd import cold, constraints, predict  # noqa: F401  (cold: the kernels' stand-ins registered)
from loom.systems.xpbd.data import XPBDClothData, XPBDData, xpbd_data


class IntegrationPlugin:
    """Symplectic Euler prediction, velocity update with damping."""

    def build(self, app: App) -> None:
        app.add_system(predict.predict_positions, Stage.SUBSTEP, in_set=ClothSet.PREDICT)
        app.add_system(predict.update_velocities, Stage.SUBSTEP, in_set=ClothSet.UPDATE)


class ConstraintPlugin:
    """XPBD links, dihedral bending, yarns and tethers; after the collisions, the yarns again and Provot's limit."""

    def build(self, app: App) -> None:
        forget_on_despawn(app, XPBDData)
        app.add_system(constraints.refresh_tethers, Stage.PRE_STEP, in_set=ClothSet.TETHERS)
        app.add_system(constraints.solve_constraints, Stage.SUBSTEP, in_set=ClothSet.CONSTRAIN)
        app.add_system(constraints.settle_yarns, Stage.SUBSTEP, in_set=ClothSet.SETTLE)
        app.add_system(constraints.limit_links, Stage.SUBSTEP, in_set=ClothSet.SETTLE, after="settle_yarns")


__all__ = ["ConstraintPlugin", "IntegrationPlugin", "XPBDClothData", "XPBDData", "xpbd_data"]
