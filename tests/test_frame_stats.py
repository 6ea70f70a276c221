"""The HUD's numbers: frames per second and sim ms per step over the last second, the first step left out."""
from __future__ import annotations

import time

import pytest

from loom.engine import App, FrameStats, Stage
from loom.systems.render.gl import hud_rate

FRAME_SLEEP = 0.025
"""A frame's known cost [s] (40 FPS); the step's is STEP_SLEEP."""
STEP_SLEEP = 0.005


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
    """A game loop whose frames take 25 ms (one 5 ms step each) reads 40 FPS and 5 ms within 10 % (sleep
    overshoots by well under a millisecond a call), while the mean since the start carries a 1 s first step (the
    kernels' compile) that the HUD leaves out."""
    app = _sleeping_app(first_step_extra=1.0)
    started = time.perf_counter()
    while time.perf_counter() - started < 2.6:
        app.update(app.clock.dt)                        # one fixed step a frame, so a frame costs 25 ms
    report = app.report()
    assert report["recent_fps"] == pytest.approx(1 / FRAME_SLEEP, rel=0.10)
    assert report["recent_sim_ms_per_frame"] == pytest.approx(1000 * STEP_SLEEP, rel=0.10)
    assert report["sim_ms_per_frame"] > 2 * report["recent_sim_ms_per_frame"]   # the cumulative mean does not
    assert app.frame_stats.windowed and hud_rate(app.frame_stats).endswith("FPS")
    app.close()


def test_headless_steps_report_their_rate_not_zero():
    """A headless run (App.step, no frames rendered: what a --screenshot draws after) shows the steps per second
    it ran at: 5 ms steps give 200 steps/s within 10 %."""
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
