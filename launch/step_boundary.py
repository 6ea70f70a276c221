"""What an App does between two fixed steps so the game's frame never stalls: the thread count, the kernels.

``LaunchBoundary`` is the App's step boundary (``loom.engine.boundary.StepBoundary``, the one hook ``App._steps``
calls): ``install(app)`` gives an App one (``LaunchPlugin``, which ``DefaultPlugins`` holds, and ``run_app`` call
it), and on an empty numba cache starts the App's own compile worker (``compile_ahead.serve``; not with
``LOOM_COLD_WORKER=0``): the per-step kernels run as their NumPy stand-ins until it has compiled them, and at the
end of the first step the game's own core compiles the costliest of them for a few seconds
(``compile_ahead.first_frame_compile``). Before each fixed step:

- before the App's first step, the kernels its scene loaded after its first frame at an earlier launch are
  loaded (``loom.launch.later_kernels``): the first frame pays, the frames after it load nothing;
- the kernels bound to their Python or NumPy twins on a cold launch are rebound to the compiled ones that are
  ready (``loom.launch.cold_kernels.rebind``: once each, never chosen per call);
- the thread count: 1 for a scene under ``threads.MIN_PARTICLES`` particles (its serial kernels, numba's count
  left alone) whatever ``app.threads`` says; else the fixed count or the tuner's. A launch whose first step
  compiled (a cold cache) runs no thread trial: the parallel kernels would compile inside a frame.

After each step the tuner gets its time, the later kernels' record is kept up to date, and the step counts in the
HUD's numbers (``App.frame_stats``) unless numba compiled something during it.

The scene's size is asked of ``threads.work_probes`` (``loom.systems`` counts the cloths' particles) at the
first step and then every ``SIZE_EVERY`` steps: a cloth spawned mid-game gets its threads within a second.
"""
from __future__ import annotations

from typing import Any

from loom.launch import cold_kernels, compile_ahead, later_kernels, threads
from loom.launch.compile_progress import compiles, loom_compiles

SIZE_EVERY = 60
"""Steps between two looks at the scene's size (``threads.work``)."""


class LaunchBoundary:
    """One App's step boundary: its thread tuner, its size, its part in the later kernels (module docstring)."""

    __slots__ = ("tuner", "small", "large", "next_look", "compiled_before", "compiled", "later")

    def __init__(self, app: Any) -> None:
        self.tuner: threads.ThreadTuner | None = threads.ThreadTuner(threads.cores()) if app.threads is None \
            else None
        """The measuring thread chooser while ``app.threads`` is None ("auto"), else None."""
        self.small = True
        """The scene has fewer than ``threads.MIN_PARTICLES`` particles: one thread."""
        self.large = False
        """The scene has more than ``cold_kernels.PYTHON_MAX_SIZE`` particles: no per-step twin."""
        self.next_look = 0
        self.compiled_before = -1                   # Loom kernels compiled before the first step (-1: not yet)
        self.compiled = 0                           # numba compiles before the current step
        self.later = later_kernels.Record()

    def before_step(self, app: Any) -> int:
        """Prepare ``app``'s next fixed step; return the thread count it runs on (module docstring)."""
        index = app.clock.step_index
        if index == 0 and self.compiled_before < 0:
            self.compiled_before = loom_compiles()
            later_kernels.prepare(app)
            compile_ahead.serve()                  # an empty cache: the per-step kernels compiled on the other core
        tuner = self.tuner
        if (app.threads is None) != (tuner is not None):            # app.set_threads changed "auto" and a count
            tuner = self.tuner = threads.ThreadTuner(threads.cores()) if app.threads is None else None
            self.next_look = index
        if index >= self.next_look:
            self.next_look = index + SIZE_EVERY
            work = threads.work(app)
            self.small = work < threads.MIN_PARTICLES
            self.large = work > cold_kernels.PYTHON_MAX_SIZE
            if tuner is not None:
                tuner.allow(not self.small and tuner.allowed_launch)
        if cold_kernels._bound:                    # a cold launch's call sites still on their twins: rebind the ready
            cold_kernels.rebind(self.large)
        self.compiled = compiles()
        if self.small:
            return 1
        return app.threads if tuner is None else tuner.count()

    def after_step(self, app: Any, seconds: float) -> bool:
        """Account ``app``'s step that took ``seconds`` [s] (the tuner, the later kernels' record); return whether
        it counts in the HUD's numbers (False when numba compiled during it)."""
        if app.clock.step_index == 1:
            compile_ahead.first_frame_compile()     # a serving worker's game: its first frame's own core compiles too
        tuner = self.tuner
        if tuner is not None:
            if app.clock.step_index == 1 and loom_compiles() > self.compiled_before >= 0:
                tuner.allowed_launch = False        # a cold launch: no trial (its kernels would compile mid-game)
                tuner.allow(False)
            tuner.record(seconds)
        later_kernels.after_step(app, self.later)
        return compiles() == self.compiled


def install(app: Any) -> LaunchBoundary:
    """Give ``app`` a ``LaunchBoundary`` unless it has one (of any kind); return the one it has."""
    if app.step_boundary is None:
        app.step_boundary = LaunchBoundary(app)
        compile_ahead.serve()                      # an empty cache: the other core compiles while the scene builds
    return app.step_boundary


class LaunchPlugin:
    """Plugin: gives the App its ``LaunchBoundary`` (threads "auto", later kernels, twins rebound; module docstring).
    ``DefaultPlugins`` holds it and ``run_app`` adds it, so a game built with ``App(...)`` and ``DefaultPlugins``
    gets it; an App without it runs every step on one thread (``App.step_threads``) and leaves numba's count
    alone."""

    def build(self, app: Any) -> None:
        """Install the step boundary on ``app`` (nothing if it has one)."""
        install(app)
