"""What an App does between two fixed steps so the game's frame never stalls: the thread count, the later kernels.

``App._steps`` calls ``before_step`` before each fixed step and ``after_step`` after it:

- before the App's first step, the kernels its scene loaded after its first frame at an earlier launch are
  loaded (``loom.engine.later_kernels``): the first frame pays, the frames after it load nothing;
- the thread count: 1 for a scene under ``threads.MIN_PARTICLES`` particles (its serial kernels, numba's count
  left alone) whatever ``threads`` says; else the fixed count or the tuner's. A launch whose first step compiled
  (a cold cache) runs no thread trial: the parallel kernels would compile inside a frame;
- after each step, the tuner gets its time and the later kernels' record is kept up to date.

The scene's size is asked of ``threads.work_probes`` (``loom.systems`` counts the cloths' particles) at the
first step and then every ``SIZE_EVERY`` steps: a cloth spawned mid-game gets its threads within a second.
"""
from __future__ import annotations

import weakref
from typing import Any

from loom.engine import later_kernels, threads
from loom.engine.compile_progress import loom_compiles

SIZE_EVERY = 60
"""Steps between two looks at the scene's size (``threads.work``)."""


class _State:
    __slots__ = ("small", "next_look", "compiled_before", "later")

    def __init__(self) -> None:
        self.small = True
        self.next_look = 0
        self.compiled_before = -1
        self.later = later_kernels.Record()


_states: weakref.WeakKeyDictionary[Any, _State] = weakref.WeakKeyDictionary()


def before_step(app: Any, tuner: threads.ThreadTuner | None) -> int:
    """Prepare ``app``'s next fixed step; return the thread count it runs on (module docstring)."""
    state = _states.get(app)
    if state is None:
        state = _states[app] = _State()
    index = app.clock.step_index
    if index == 0 and state.compiled_before < 0:
        state.compiled_before = loom_compiles()
        later_kernels.prepare(app)
    if index >= state.next_look:
        state.next_look = index + SIZE_EVERY
        state.small = threads.work(app) < threads.MIN_PARTICLES
        if tuner is not None:
            tuner.allow(not state.small and tuner.allowed_launch)
    if state.small:
        return 1
    return app.threads if tuner is None else tuner.count()


def after_step(app: Any, tuner: threads.ThreadTuner | None, seconds: float) -> None:
    """Account ``app``'s step that took ``seconds`` [s] (the tuner, the later kernels' record)."""
    state = _states.get(app)
    if state is None:                                 # no before_step (not an App's own step): nothing to account
        return
    if tuner is not None:
        if app.clock.step_index == 1 and loom_compiles() > state.compiled_before >= 0:
            tuner.allowed_launch = False              # a cold launch: no trial (its kernels would compile mid-game)
            tuner.allow(False)
        tuner.record(seconds)
    later_kernels.after_step(app, state.later)
