"""Run conditions (``add_system(..., run_if=...)``): skip a system for the whole step when it has nothing to do.

A substep system costs a query and a Python call even with nothing to do; with 13 substep systems
and 8 substeps that is about 100 calls per frame, 0.1 ms of the cape game's 1 ms. The conditions
here are checked once per step (after PRE_STEP, so a cloth switched to another model or a grab
taken in PRE_STEP counts at once).
"""
from __future__ import annotations

from collections.abc import Callable

from loom.components import Cloth
from loom.engine import App
from loom.systems.shared.model_index import cloths_of


_USES: dict[str, Callable[[App], bool]] = {}


def uses_model(model: str) -> Callable[[App], bool]:
    """Condition: some Cloth in the world uses ``model`` ("verlet", …); asks the model index (model_index.py).

    One condition per model name: the systems of a model share it, so the App asks it once per stage and step."""
    condition = _USES.get(model)
    if condition is None:
        def condition(app: App) -> bool:
            return bool(cloths_of(app, model))
        condition.__name__ = f"uses_{model}"
        _USES[model] = condition
    return condition


def self_colliding(app: App) -> bool:
    """Condition: some substepped Cloth has self-collision on."""
    return any(cloth.self_collision and cloth.substepped for _, cloth in app.query(Cloth))
