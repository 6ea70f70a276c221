"""The App's one hook between fixed steps: what runs before and after each, outside the schedule.

``App._steps`` is the schedule loop; the launch tooling (``loom.launch``: the thread tuner, the kernels rebound
when they are ready, the later kernels) plugs into it through ``App.step_boundary``, an object with the two
methods below, and the frame imports none of it. With no step boundary (None, an App without ``DefaultPlugins``
or ``loom.launch.LaunchPlugin``), every step runs with ``App.step_threads`` = 1, numba's thread count untouched,
and every step after the first counts in ``App.frame_stats``.
"""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class StepBoundary(Protocol):
    """Called by the App around each fixed step (``App.step_boundary``)."""

    def before_step(self, app: Any) -> int:
        """Prepare ``app``'s next fixed step; return the thread count it runs on (1 … cores): the App sets numba's
        count to it for the step (restoring numba's own after ``step``/``update``) and ``app.step_threads``."""

    def after_step(self, app: Any, seconds: float) -> bool:
        """Account ``app``'s step that took ``seconds`` [s] of wall time; return whether it counts in the HUD's
        numbers (``App.frame_stats``: False for a step that compiled or loaded kernels)."""
