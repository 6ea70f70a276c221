"""Batches: many small cloths through one kernel call, each cloth's own arrays, no copies.

A system that calls a kernel per cloth pays a Python call and a numba dispatch (3–10 µs) per cloth
per substep: 100 flags of 16×16 at 8 substeps spent more there than in the physics. A ``Batch``
holds numba typed lists of the cloths' arrays (references to the component's own arrays), so a
kernel loops over the cloths itself (``prange``: a cloth per thread, the same result on any
thread count). The lists are rebuilt only when an array is replaced (a cloth spawned or
despawned, torn, its tethers refreshed); systems check once per step, at substep 0, because no
substep system replaces arrays.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba.typed import List

BATCH_MIN_CLOTHS = 2
"""Fewest cloths a system batches (one cloth calls its kernel directly)."""


class Batch:
    """Typed lists of per-cloth arrays, one list per column of the rows given to ``update``."""

    def __init__(self) -> None:
        self.key: tuple[int, ...] = ()
        self.lists: tuple[List, ...] = ()

    def update(self, rows: Sequence[Sequence[np.ndarray]]) -> tuple[List, ...]:
        """Point the batch at ``rows`` (one row of arrays per cloth, the same columns in each) and
        return its lists; they are rebuilt only if some array is not the one held before."""
        key = tuple(id(a) for row in rows for a in row)
        if key != self.key:
            self.key = key
            self.lists = tuple(_typed_list([row[k] for row in rows]) for k in range(len(rows[0])))
        return self.lists


def _typed_list(arrays: list[np.ndarray]) -> List:
    """A numba typed List holding ``arrays`` (references, not copies)."""
    out = List()
    for a in arrays:
        out.append(a)
    return out
