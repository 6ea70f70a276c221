"""Progress while numba compiles: a first launch says what it prepares instead of going silent for 20 s.

Loom's kernels are compiled on their first call and cached on disk (``cache=True``); a launch with an empty
cache spends most of its first seconds there. ``show_compile_progress()`` listens to numba's compile events
(``numba.core.event``, "numba:compile": fired for each function compiled, never for a cache load, so a warm
launch prints nothing) and writes a line to stderr when compiling starts and then at most every
``INTERVAL`` seconds: how many functions are compiled so far, the seconds spent, and the one compiling now.
A window loop adds a hook (``CompileProgress.hooks``) to show the same in its title bar and loading view.

How far along: ``expect(n)`` says how many functions the launch is expected to compile before its first frame
(a game's ``FIRST_LAUNCH_COMPILES``, measured by ``python -m loom.benchmarks startup --runs cold``, which prints
``compiles``); the lines then read "23 of about 62 (37 %)" and ``fraction()`` feeds the loading view's bar. The
count is an estimate, not a promise (other options compile other code), so the fraction stops at 99 % until the
first frame is drawn.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

from numba.core import event

INTERVAL = 1.0
"""Seconds between two progress lines [s] (the first is printed at once)."""


class CompileProgress(event.Listener):
    """numba compile-event listener: counts the functions compiled and reports them, throttled."""

    def __init__(self, stream: TextIO | None = None, interval: float = INTERVAL) -> None:
        self.stream = stream
        self.interval = interval
        self.count = 0
        """Functions compiled since this listener was installed."""
        self.started: float | None = None
        self._last = -float("inf")
        self.hooks: list[Callable[[int, float, str], None]] = []
        """Called as hook(count, seconds, name) with every progress line (a window sets its caption)."""
        self.expected: int | None = None
        """Functions expected to compile from ``expect()`` on (None: unknown, no fraction)."""
        self.elsewhere: Callable[[], float | None] | None = None
        """How far along the first frame's kernels are counting another process's compiles, 0–1 or None
        (``loom.launch.compile_ahead.first_frame_ready``, set by ``run_app`` when its worker runs)."""
        self._base = 0

    def expect(self, count: int | None) -> None:
        """Expect ``count`` functions to compile from now on (None: unknown); ``fraction()`` counts from here.
        Raises ValueError for a count that is not a positive integer."""
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
            raise ValueError(f"expected compiles = {count!r}: must be a positive integer or None")
        self.expected = count
        self._base = self.count

    def fraction(self) -> float | None:
        """How far along the expected compiles are, 0–0.99 (None when nothing is expected); with ``elsewhere``,
        the larger of this process's share and the first frame's kernels ready."""
        return self._fraction(self.elsewhere() if self.elsewhere is not None else None)

    def _fraction(self, ready: float | None) -> float | None:
        """``fraction()`` with ``elsewhere``'s value ``ready`` already read (it stats a file per kernel)."""
        if self.expected is None and ready is None:
            return None
        own = (self.count - self._base) / self.expected if self.expected is not None else 0.0
        return min(max(own, ready or 0.0), 0.99)

    def begin(self) -> None:
        """Say a first launch's compiling has begun (the first line) before its first compile event: a launch
        that knows it is cold (its compile-ahead worker started) says so at once."""
        if self.started is None:
            self.started = time.perf_counter()
            self._write("loom: compiling numba kernels (first launch only: they are cached for the next)")

    def progress_text(self) -> str:
        """"23 compiled" or, with an expectation, "23 of about 62 compiled (37 %)"."""
        done = self.count - self._base if self.expected is not None else self.count
        ready = self.elsewhere() if self.elsewhere is not None else None
        if ready is not None:
            state = "ready" if ready >= 1.0 else f"{100.0 * self._fraction(ready):.0f} % ready"
            return f"{done} compiled here, first frame {state}"
        if self.expected is None:
            return f"{done} compiled"
        return f"{done} of about {self.expected} compiled ({100.0 * self.fraction():.0f} %)"

    def on_start(self, ev: event.Event) -> None:
        now = time.perf_counter()
        self.begin()
        dispatcher = (ev.data or {}).get("dispatcher")
        self.advance(now, "now", getattr(getattr(dispatcher, "py_func", None), "__qualname__", "?"))

    def advance(self, now: float, what: str, name: str) -> None:
        """Count one more function prepared (``what``: "now" compiling, or "loaded") and report it, throttled."""
        self.count += 1
        if now - self._last >= self.interval:
            self._last = now
            seconds = now - self.started
            self._write(f"loom:   {self.progress_text()}, {seconds:.1f} s; {what} {name}")
            for hook in list(self.hooks):
                hook(self.count, seconds, name)

    def on_end(self, ev: event.Event) -> None:
        pass

    def _write(self, line: str) -> None:
        stream = self.stream or sys.stderr
        print(line, file=stream, flush=True)


class _Counter(event.Listener):
    """Counts every function numba compiles in this process (``compiles()``) and, apart, Loom's own kernels
    (``loom_compiles()``), installed at import."""

    count = 0
    loom = 0

    def on_start(self, ev: event.Event) -> None:
        self.count += 1
        module = getattr(getattr((ev.data or {}).get("dispatcher"), "py_func", None), "__module__", None) or ""
        if module == "loom" or module.startswith("loom."):
            self.loom += 1

    def on_end(self, ev: event.Event) -> None:
        pass


_counter = _Counter()
event.register("numba:compile", _counter)
_listener: CompileProgress | None = None


def note_loaded(name: str) -> None:
    """A Loom kernel was loaded from numba's cache: during a first launch (after a compile began) it counts as
    one more function prepared, for the kernels the compile-ahead worker compiled (``loom.launch.compile_ahead``)
    to move the progress on too. A warm launch (nothing compiled yet) is left silent."""
    if _listener is not None and _listener.started is not None:
        _listener.advance(time.perf_counter(), "loaded", name)


def compiles() -> int:
    """Functions numba has compiled in this process so far (cache loads not counted): the App leaves a step
    during which this grew out of its HUD numbers (``FrameStats``)."""
    return _counter.count


def loom_compiles() -> int:
    """Loom kernels numba has compiled in this process so far (cache loads not counted; nor numba's own helpers,
    such as the typed list's, which it compiles anew in every process, warm cache or not): growth during a step
    means the cache was cold for it."""
    return _counter.loom


def show_compile_progress(stream: TextIO | None = None) -> CompileProgress:
    """Report numba compiles on ``stream`` (default stderr) from now on; returns the listener. Calling it again
    returns the same listener (one line per event, however many games or runners ask)."""
    global _listener
    if _listener is None:
        _listener = CompileProgress(stream)
        event.register("numba:compile", _listener)
    elif stream is not None:
        _listener.stream = stream
    return _listener
