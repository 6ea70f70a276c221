"""The HUD's numbers: frames per second and sim ms per step over the last second, the first step left out."""
from __future__ import annotations

import time

import pytest

from loom.engine import App, FrameStats, Stage
from loom.systems.render.gl import hud_rate

FRAME_SLEEP = 0.040
"""A frame's known cost [s] (25 FPS); the step's is STEP_SLEEP (long enough that sleep's overshoot, under a
millisecond even on a loaded machine, stays well inside the 10 % the issue allows)."""
STEP_SLEEP = 0.010


def _sleeping_app(first_step_extra: float) -> App:
    app = App(dt=1 / 60, substeps=1, threads=1)
    first = {"left": first_step_extra}

    def work(app: App, dt: float) -> None:              # a fixed step of known cost, the first one much longer
        time.sleep(STEP_SLEEP + first["left"])
        first["left"] = 0.0

    def draw(app: App, dt: float) -> None:              # the rest of a rendered frame
        time.sleep(FRAME_SLEEP - STEP_SLEEP)

    app.add_system(work, Stage.PRE_STEP)
    app.add_system(draw, Stage.RENDER)
    return app


def test_hud_reports_the_fps_and_step_cost_of_the_last_second_without_the_first_steps_compile():
    """A game loop whose frames take 40 ms (one 10 ms step each) reads 25 FPS and 10 ms within 10 %, while the mean since the start carries a 1 s first step (the
    kernels' compile) that the HUD leaves out."""
    app = _sleeping_app(first_step_extra=1.0)
    started = time.perf_counter()
    while time.perf_counter() - started < 2.6:
        app.update(app.clock.dt)                        # one fixed step a frame, so a frame costs 40 ms
    report = app.report()
    assert report["recent_fps"] == pytest.approx(1 / FRAME_SLEEP, rel=0.10)
    assert report["recent_sim_ms_per_frame"] == pytest.approx(1000 * STEP_SLEEP, rel=0.10)
    assert report["sim_ms_per_frame"] > 2 * report["recent_sim_ms_per_frame"]   # the cumulative mean does not
    assert app.frame_stats.windowed and hud_rate(app.frame_stats).endswith("FPS")
    app.close()


def test_headless_steps_report_their_rate_not_zero():
    """A headless run (App.step, no frames rendered: what a --screenshot draws after) shows the steps per second
    it ran at: 10 ms steps give 100 steps/s within 10 %."""
    app = _sleeping_app(first_step_extra=0.0)
    app.step(60)
    assert not app.frame_stats.windowed
    assert app.frame_stats.fps == pytest.approx(1 / STEP_SLEEP, rel=0.10)
    assert hud_rate(app.frame_stats).endswith("steps/s headless") and not hud_rate(app.frame_stats).startswith("0")
    app.close()


def test_frame_stats_forget_what_is_older_than_their_window():
    stats = FrameStats(seconds=1.0)
    for k in range(10):
        stats.step(0.1 * k, 0.5)
    stats.step(5.0, 0.002)                              # the old slow steps are past the 1 s window
    assert stats.sim_ms_per_step == pytest.approx(2.0)
    assert stats.fps == 0.0                             # one step: no rate yet
    with pytest.raises(ValueError, match="seconds = 0"):
        FrameStats(seconds=0)


def test_a_step_that_compiles_is_left_out_and_the_compile_is_reported(capsys):
    """A kernel first called in step 5 compiles there (numba's compile event): that step is not in the HUD's
    numbers, and the compile progress line names the kernel on stderr; a warm call reports nothing."""
    import io

    import numba

    from loom.launch.compile_progress import CompileProgress, compiles
    from numba.core import event

    @numba.njit(cache=False)
    def fresh_kernel(x):
        return x * 3

    from loom.launch import LaunchPlugin
    app = _sleeping_app(first_step_extra=0.0)
    app.add_plugin(LaunchPlugin)                        # its step boundary tells the App which steps compiled

    def late(app: App, dt: float) -> None:
        if app.clock.step_index == 5:
            fresh_kernel(2)
            time.sleep(0.3)                             # the compile's time, as the HUD must not see it

    app.add_system(late, Stage.PRE_STEP)
    stream = io.StringIO()
    progress = CompileProgress(stream, interval=0.0)
    before = compiles()
    with event.install_listener("numba:compile", progress):
        app.step(10)
        fresh_kernel(4)                                 # compiled already: no event
    assert compiles() > before and progress.count == compiles() - before
    assert "compiling numba kernels" in stream.getvalue() and "fresh_kernel" in stream.getvalue()
    assert app.frame_stats.sim_ms_per_step < 2000 * STEP_SLEEP        # with the 300 ms step: over 37 ms
    app.close()


def test_compile_progress_says_how_far_along_an_expected_count_is():
    """``expect(n)``: the lines read "k of about n compiled (p %)" counted from the expect() call, and the
    fraction stops at 0.99 when more compile than expected (the count is an estimate); a bad count is a
    ValueError naming it."""
    import io

    import numba
    import numpy as np

    from loom.launch.compile_progress import CompileProgress
    from numba.core import event

    @numba.njit(cache=False)
    def first(x):
        return x + 1

    @numba.njit(cache=False)
    def second(x):
        return x + 2

    stream = io.StringIO()
    progress = CompileProgress(stream, interval=0.0)
    assert progress.fraction() is None and progress.progress_text() == "0 compiled"
    with event.install_listener("numba:compile", progress):
        first(1)
        progress.expect(4)
        assert progress.fraction() == 0.0
        second(1)
        assert progress.fraction() == 0.25 and progress.progress_text() == "1 of about 4 compiled (25 %)"
        first(1.5)                               # a new signature: another compile
        second(2.5)
        second(np.float32(1.0))
        second(np.int8(1))
    assert progress.fraction() == 0.99
    assert "1 of about 4 compiled (25 %)" in stream.getvalue()
    for bad in (0, -3, 2.5, True, "10"):
        with pytest.raises(ValueError, match="expected compiles"):
            progress.expect(bad)


def test_compile_progress_counts_the_other_cores_kernels_and_a_cold_launch_says_so_at_once():
    """With a compile-ahead worker (``elsewhere``: the first frame's kernels ready in either process) the bar
    shows the larger share, and the lines say both; ``begin()`` writes the first line before any compile."""
    import io

    from loom.launch.compile_progress import CompileProgress

    stream = io.StringIO()
    progress = CompileProgress(stream, interval=0.0)
    progress.begin()
    assert "compiling numba kernels" in stream.getvalue() and progress.count == 0
    progress.begin()
    assert stream.getvalue().count("compiling numba kernels") == 1
    progress.expect(40)
    ready = [0.5]
    progress.elsewhere = lambda: ready[0]
    progress.advance(0.0, "now", "k")
    assert progress.fraction() == 0.5 and progress.progress_text() == "1 compiled here, first frame 50 % ready"
    ready[0] = None                               # the worker ended: this process's count again
    assert progress.fraction() == 1 / 40 and progress.progress_text() == "1 of about 40 compiled (2 %)"
    ready[0] = 1.0
    assert progress.fraction() == 0.99
