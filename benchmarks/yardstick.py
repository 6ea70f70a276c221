"""The machine's speed at the moment a benchmark runs: one fixed piece of work, timed, to put beside its costs.

A cloud VM (this project's CI and its benchmark machine) runs in phases: the same code costs more or less
from one hour or day to the next (docs/performance.md). A cost alone cannot say whether the code or the machine
changed; a cost divided by the same machine's time for a fixed piece of work, measured in the same process, can.

The work: the sheet benchmark's naive loop (``benchmarks/naive_loop.py``, until issue 44 ``plain_xpbd.py``: one
numba kernel, one thread, float64, no App) stepping a 32 × 32 sheet hanging in its rest shape from its two top
corners (the sheet benchmark's scene before it was released flat: kept, so the work stays the same), 4 substeps ×
10 sweeps with tethers, one fixed step at a time. It never changes with Loom's code (it is the yardstick the solver
is measured against), its arrays fit in the cache as a game's cloth does, and a step lasts a few milliseconds.

``measure(samples)``: the median of ``samples`` single steps [ms], after two untimed steps (compile or load,
warm the caches). Call it before and after the work it stands beside, and put both in the record.
"""
from __future__ import annotations

import time

import numpy as np

from loom.benchmarks.naive_loop import NaiveSheet
from loom.benchmarks.sheet import build_sheet
from loom.engine import App
from loom.systems import DefaultPlugins

N = 32
"""Particles along each side of the yardstick's sheet."""
SUBSTEPS, SWEEPS = 4, 10
"""The sheet benchmark's defaults."""


def measure(samples: int = 31) -> float:
    """The median time of one step of the yardstick's naive kernel [ms] (module docstring), over ``samples``
    steps (≥ 1; ValueError otherwise)."""
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise ValueError(f"yardstick.measure(samples={samples!r}): must be an integer >= 1")
    dt = 1.0 / 60.0
    app = App(dt=dt, substeps=SUBSTEPS, threads=1)
    try:
        app.add_plugin(DefaultPlugins)
        cloth = build_sheet(app, N, iters=SWEEPS, tethers=True, model="xpbd", dt=dt, sphere=False, flat=False)
        app.step(1)                                        # the App builds the tables the copy reads
        naive = NaiveSheet.of(app, cloth)
    finally:
        app.close()
    naive.step(2)                                          # compile or load, caches warm
    times = np.empty(samples)
    for k in range(samples):
        start = time.perf_counter()
        naive.step(1)
        times[k] = time.perf_counter() - start
    return 1000.0 * float(np.median(times))
