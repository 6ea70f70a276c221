"""What a HUD shows: frames per second and simulation ms per step over the last second of wall time.

``App.report()``'s ``sim_ms_per_frame`` is the mean since the start, so it carries the first step's kernel
compile or cache load for the whole run (seconds of compiling averaged into every frame). ``FrameStats`` keeps
only the last ``RECENT_SECONDS``: each rendered frame (``App.update``) and each fixed step with its duration;
the App's first step (which loads the kernels from the cache or compiles them) and any step during which
numba compiled something (the step boundary says so: ``loom.engine.boundary``) are never counted.
"""
from __future__ import annotations

from collections import deque

RECENT_SECONDS = 1.0
"""Wall time the HUD's numbers average over [s]."""


class FrameStats:
    """Rendered frames and fixed steps of the last ``seconds`` of wall time (``time.perf_counter`` stamps)."""

    def __init__(self, seconds: float = RECENT_SECONDS) -> None:
        if not seconds > 0.0:
            raise ValueError(f"FrameStats.seconds = {seconds!r}: must be > 0 [s]")
        self.seconds = float(seconds)
        self._frames: deque[float] = deque()
        self._steps: deque[tuple[float, float]] = deque()

    def frame(self, now: float) -> None:
        """A rendered frame began at ``now`` [s]."""
        self._frames.append(now)
        self._forget(now)

    def step(self, now: float, seconds: float) -> None:
        """A fixed step ended at ``now`` [s] after ``seconds`` [s] of work."""
        self._steps.append((now, seconds))
        self._forget(now)

    def _forget(self, now: float) -> None:
        horizon = now - self.seconds
        while self._frames and self._frames[0] < horizon:
            self._frames.popleft()
        while self._steps and self._steps[0][0] < horizon:
            self._steps.popleft()

    @property
    def windowed(self) -> bool:
        """True when frames are being rendered (App.update), False in a headless run of App.step."""
        return len(self._frames) >= 2

    @property
    def fps(self) -> float:
        """Rendered frames per second over the last second; headless (no frames), fixed steps per second of
        wall time; 0.0 before two are recorded."""
        stamps = self._frames if self.windowed else [end for end, _ in self._steps]
        if len(stamps) < 2 or stamps[-1] <= stamps[0]:
            return 0.0
        return (len(stamps) - 1) / (stamps[-1] - stamps[0])

    @property
    def sim_ms_per_step(self) -> float:
        """Mean wall time of the fixed steps of the last second [ms]; 0.0 when none."""
        if not self._steps:
            return 0.0
        return 1000.0 * sum(seconds for _, seconds in self._steps) / len(self._steps)
