"""The frame a substepped model's plugin shares with the others: per-cloth scratch, three systems, what it saw.

A model such as Verlet or mass-spring keeps solver scratch per cloth entity (a ``ClothScratch``
subclass) and steps its cloths with a predict, a constrain and an update system each substep, run
only in steps where some cloth uses the model; ``add_substep_model`` registers all of that once. ``Seen``
follows a cloth's change signal (``Cloth.changes``) for a model that keeps history across steps.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from loom.components import Cloth
from loom.engine import App, Stage
from loom.engine.persist import persistent
from loom.systems.sets import ClothSet
from loom.systems.shared.conditions import uses_model
from loom.systems.shared.model_index import forget_on_despawn


@persistent
class ClothScratch:
    """Resource: one scratch object per cloth entity in ``states``, made by ``build(cloth)`` when the entity
    has none or its own is ``stale`` for the cloth; ``forget`` drops a despawned entity's (model_index.py)."""

    def __init__(self) -> None:
        self.states: dict[int, Any] = {}

    def get(self, entity: int, cloth: Cloth) -> Any:
        """Return ``entity``'s scratch, built if new or stale."""
        state = self.states.get(entity)
        if state is None or self.stale(state, cloth):
            state = self.states[entity] = self.build(cloth)
        return state

    def build(self, cloth: Cloth) -> Any:
        """New scratch for ``cloth`` (subclasses define it)."""
        raise NotImplementedError

    def stale(self, state: Any, cloth: Cloth) -> bool:
        """True when ``state`` no longer fits ``cloth`` and must be rebuilt (default: never)."""
        return False

    def forget(self, entity: int) -> None:
        """Drop a despawned entity's scratch."""
        self.states.pop(entity, None)


@persistent
class Seen:
    """What a model last saw of one cloth's change signal (``Cloth.changes``) and of the guard's refusals.

    A model that keeps history across steps (Verlet's x_prev at the step's start) asks ``refused(cloth)`` each
    step: the guard, refusing a step, restored x and v and set x_prev = x, and the model puts its history back."""

    def __init__(self, cloth: Cloth) -> None:
        self.changes = cloth.changes
        """``cloth.changes`` when last looked at."""
        self.rejected = cloth.rejected_steps
        """``cloth.rejected_steps`` then."""

    def moved(self, cloth: Cloth) -> bool:
        """Whether the change signal moved since the last call (pins, grabs, masses, topology, a refused step)."""
        if cloth.changes == self.changes:
            return False
        self.changes = cloth.changes
        return True

    def refused(self, cloth: Cloth) -> bool:
        """Whether the guard refused a step of ``cloth`` since the last call (checked only when the signal moved)."""
        if not self.moved(cloth) or cloth.rejected_steps == self.rejected:
            return False
        self.rejected = cloth.rejected_steps
        return True


def add_substep_model(app: App, model: str, scratch: type[ClothScratch], predict: Callable, constrain: Callable,
                      update: Callable) -> None:
    """Insert a ``scratch`` resource (unless the game did), forget its entries at despawn, and add ``predict``,
    ``constrain`` and ``update`` to ClothSet.PREDICT, CONSTRAIN and UPDATE of every substep, skipped in steps
    with no cloth of ``model``."""
    active = uses_model(model)
    app.insert_resource(scratch(), replace=False)
    forget_on_despawn(app, scratch)
    app.add_system(predict, Stage.SUBSTEP, in_set=ClothSet.PREDICT, run_if=active)
    app.add_system(constrain, Stage.SUBSTEP, in_set=ClothSet.CONSTRAIN, run_if=active)
    app.add_system(update, Stage.SUBSTEP, in_set=ClothSet.UPDATE, run_if=active)
