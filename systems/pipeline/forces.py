"""Force clearing: every cloth's external force accumulator back to zero after each step, whatever its model.

Writers (wind, coupling, a game's own forces) add to ``Cloth.force`` [N] during a step; the models read it when
they integrate. Clearing it belongs to the pipeline, not to a model: it runs once per step in ``ClothSet.CLEAR``
(POST_STEP, after the guard) for every cloth.
"""
from __future__ import annotations

import numba

from loom.components import Cloth
from loom.engine import App
from loom.engine.persist import persistent
from loom.systems.shared.batch import Batch, batchable, revisions


def clear_forces(app: App, dt: float) -> None:
    """Zero the external force accumulators [N] of every cloth after each step (writers add to them every step)."""
    clothes = [cloth for _, cloth in app.query(Cloth)]
    if batchable(clothes):
        batch = app.init_resource(ForceBatch)
        _zero_batch(*batch.update(revisions(clothes), lambda: [(c.force,) for c in clothes]))
        return
    for cloth in clothes:
        cloth.force.fill(0.0)


@persistent
class ForceBatch(Batch):
    """Resource: every cloth's force accumulator as one batch, zeroed in one call."""


@numba.njit(cache=True)
def _zero_batch(arrays):
    """Fill every array of a batch with 0."""
    for c in range(len(arrays)):
        arrays[c][:] = 0.0
