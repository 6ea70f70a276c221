"""Batches: many small cloths through one kernel call, each cloth's own arrays, no copies.

A system that calls a kernel per cloth pays a Python call and a numba dispatch (3–10 µs) per cloth
per substep: 100 flags of 16×16 at 8 substeps spent more there than in the physics. A ``Batch``
holds numba typed lists of the cloths' arrays (references to the component's own arrays), so a
kernel loops over the cloths itself (``prange``: a cloth per thread, the same result on any
thread count). The lists are rebuilt only when the key changes: ``revisions`` of the components
involved (a component counts assignments to its attributes, so a cloth spawned or despawned, torn,
or given new tethers changes it; arrays changed in place do not). Substep systems check at
substep 0 only: no substep system replaces arrays.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numba
import numpy as np
from numba.typed import List

from loom.engine.persist import persistent

BATCH_MIN_CLOTHS = 12
"""Fewest cloths a light kernel (integration, pins, checks) batches on one thread. A batched call costs
about 3.8 µs more to set up (the typed lists) and saves about 0.25 µs of dispatch per cloth, so it
pays from about a dozen cloths on (docs/performance.md, "Moved from docstrings"). On threads, the
batch also spreads the cloths over them."""


def batchable(clothes: Sequence[Any], *, heavy: bool = False, threads: int | None = None) -> bool:
    """Whether a system should batch ``clothes``: all with float64 state (a typed list holds one array
    type; a world with float32 cloths runs them one call each) and enough of them — BATCH_MIN_CLOTHS,
    or for a ``heavy`` kernel (the constraint solve, wind) two as soon as there are threads to share
    them (two heavy cloths already gain from a cloth per thread). ``threads``: the step's
    thread count (``App.step_threads``; None: ask numba)."""
    minimum = 2 if heavy and (numba.get_num_threads() if threads is None else threads) > 1 else BATCH_MIN_CLOTHS
    return len(clothes) >= minimum and all(c.precision == "float64" for c in clothes)


@persistent
class Batch:
    """Typed lists of per-cloth arrays, one list per column of the rows given to ``update``."""

    def __init__(self) -> None:
        self.key: tuple[int, ...] = ()
        self.lists: tuple[List, ...] = ()

    def update(self, key: tuple, rows: Callable[[], Sequence[Sequence[np.ndarray]]]) -> tuple[List, ...]:
        """Return the lists for ``key``, rebuilt from ``rows()`` (one row of arrays per cloth, the
        same columns in each) only when the key differs from the last one."""
        if key != self.key:
            self.key = key
            built = rows()
            self.lists = tuple(_typed_list([row[k] for row in built]) for k in range(len(built[0])))
        return self.lists


def revisions(components: Iterable[Any]) -> tuple[tuple[Any, int], ...]:
    """Key of a batch over ``components``: each one (compared by identity; held, so a despawned one's
    id cannot pass for a new component's) and its assignment count (``revision``)."""
    return tuple((c, c.revision) for c in components)


def _typed_list(arrays: list[np.ndarray]) -> List:
    """A numba typed List holding ``arrays`` (references, not copies)."""
    out = List()
    for a in arrays:
        out.append(a)
    return out
