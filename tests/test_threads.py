"""Threads are safe by default (issue 16, problem 1): the wait policy, the knob, and results on any thread count.

No timing is asserted here: the measured table is in docs/performance.md ("Threads"), from
``python -m loom.benchmarks scenes --load``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

from loom.components import Cloth, Pin
from loom.engine import App, Stage, mesh
from loom.launch import LaunchPlugin, parser, run_app, threads
from loom.systems import DefaultPlugins

ROOT = Path(__file__).resolve().parent.parent
TWO_THREADS = pytest.mark.skipif(threads.cores() < 2, reason="needs 2 cores (NUMBA_NUM_THREADS >= 2)")


def _fresh(code: str, **env: str) -> dict:
    """Run ``code`` in a new interpreter (numba's threads not started) with ``env`` over an environment
    cleared of the OpenMP settings; return the JSON it prints last."""
    base = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**base, **env}, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


DESCRIBE = ("import json, loom.launch\nfrom loom.engine import App\nApp(threads=1)\n"
            "print(json.dumps(loom.launch.threads.describe()))")


def test_importing_loom_makes_idle_openmp_threads_spin_briefly_then_sleep():
    record = _fresh(DESCRIBE)
    assert record["spin_count"] == threads.SPIN_COUNT == "10000" and record["wait_policy"] is None
    assert record["threading_layer"] in ("omp", "tbb", "workqueue") and record["threads"] >= 1


def test_lazy_import_loom_applies_the_policy_before_the_first_app():
    record = _fresh("import json, os, loom\nloom.App(threads=1)\n"
                    "print(json.dumps({'s': os.environ.get('GOMP_SPINCOUNT')}))")
    assert record == {"s": "10000"}


@pytest.mark.parametrize("name, value", [("OMP_WAIT_POLICY", "passive"), ("GOMP_SPINCOUNT", "0")])
def test_a_users_own_openmp_setting_wins(name, value):
    record = _fresh(DESCRIBE, **{name: value})
    assert record["wait_policy"] == ("passive" if name == "OMP_WAIT_POLICY" else None)
    assert record["spin_count"] == ("0" if name == "GOMP_SPINCOUNT" else None)


def test_apply_policy_sets_the_spin_count_only_when_the_environment_names_no_policy():
    environ: dict[str, str] = {}
    assert threads.apply_policy(environ) is True and environ == {"GOMP_SPINCOUNT": "10000"}
    for user in ({"OMP_WAIT_POLICY": "active"}, {"GOMP_SPINCOUNT": "0"}):
        mine = dict(user)
        assert threads.apply_policy(mine) is False and mine == user


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True, 10_000])
def test_threads_outside_one_to_cores_are_refused_naming_the_value(bad):
    with pytest.raises(ValueError, match=r"App\.threads = .*: must be an integer in 1 … \d+"):
        App(threads=bad)


def _drape(n_threads: int, steps: int) -> np.ndarray:
    """A 64×64 self-colliding drape (23,938 links, 4,096 particles: every threaded kernel path) and two
    small flags (a batch), ``steps`` steps on ``n_threads`` threads; return every particle's position."""
    from loom.games import drape
    app = App(dt=1 / 60, substeps=4, threads=n_threads)
    app.add_plugin(DefaultPlugins)
    drape.build_scene(app, n=64)
    for k in range(2):
        flag = mesh.grid(12, 8, 0.6, 0.4, center=(3.0 + k, 1.5, 0.0))
        app.spawn(Cloth.from_mesh(flag, "cotton"), Pin.edge(flag, "left"))
    app.step(steps)
    x = np.concatenate([c.x.copy() for _, c in app.query(Cloth)])
    app.close()
    return x


@TWO_THREADS
def test_results_are_bit_identical_on_one_and_two_threads():
    before = numba.get_num_threads()
    try:
        one, two = _drape(1, 12), _drape(2, 12)
    finally:
        numba.set_num_threads(before)
    assert one.shape == two.shape and np.isfinite(one).all()
    assert np.array_equal(one, two), f"largest difference {np.abs(one - two).max():.3g} m"


def test_a_games_threads_option_fixes_the_apps_thread_count_for_its_steps_only():
    seen = []
    app = App(dt=1 / 60, substeps=2)
    app.add_system(lambda a, dt: seen.append(numba.get_num_threads()), Stage.PRE_STEP, name="count_threads")
    before = numba.get_num_threads()
    try:
        run_app(app, ["--headless", "--frames", "3", "--threads", "1", "--report", "json"])
        assert app.threads == 1 and app.tuner is None and seen == [1, 1, 1]
        assert numba.get_num_threads() == before, "the App's count leaked into numba's own setting"
    finally:
        app.close()


@pytest.fixture
def big_and_idle(monkeypatch):
    """The scene counts as big enough for threads (``threads.work``) and the machine as idle (a core idle between
    the tuner's looks at /proc/stat)."""
    monkeypatch.setattr(threads, "work_probes", [lambda app: threads.MIN_PARTICLES])
    _cpu(monkeypatch, idle_share=0.5)


def _cpu(monkeypatch, idle_share: float) -> None:
    """/proc/stat as the tuner reads it: each look 1 s later, ``idle_share`` of the machine's time idle."""
    clock = [0.0, 0.0]

    def sample():
        clock[0] += idle_share
        clock[1] += 1.0
        return tuple(clock)
    monkeypatch.setattr(threads, "cpu_times", sample)


def test_auto_threads_is_the_default_and_its_steps_run_on_the_tuners_count(big_and_idle):
    seen = []
    app = App(dt=1 / 60, substeps=2)
    app.add_plugin(LaunchPlugin)                         # the step boundary (DefaultPlugins and run_app add it)
    app.add_system(lambda a, dt: seen.append((numba.get_num_threads(), a.tuner.count())), Stage.PRE_STEP,
                   name="count_threads")
    try:
        assert app.threads is None and isinstance(app.tuner, threads.ThreadTuner)
        app.step(threads.FIRST_TRIAL + 2 * threads.TRIAL_STEPS)
        assert all(used == chosen for used, chosen in seen)
        assert app.tuner.trials >= 1 or threads.cores() < 2
    finally:
        app.close()


def _feed(tuner: threads.ThreadTuner, cost: dict[int, float], steps: int) -> list[int]:
    """Run ``steps`` steps whose time is ``cost[count]`` [s]; return the count each step ran on."""
    used = []
    for _ in range(steps):
        count = tuner.count()
        used.append(count)
        tuner.record(cost[count])
    return used


def test_the_tuner_switches_to_every_core_when_that_is_faster_and_back_when_it_is_not(big_and_idle):
    tuner = threads.ThreadTuner(2)
    used = _feed(tuner, {1: 0.010, 2: 0.006}, 200)
    assert used[0] == 1 and tuner.current == 2 and used[-30:] == [2] * 30
    used = _feed(tuner, {1: 0.010, 2: 0.030}, 600)            # the machine got busy: threads now cost 3x
    assert tuner.current == 1 and used.count(2) < 20       # noticed within a few steps, not the next trial


def test_a_tuner_on_a_machine_where_threads_never_pay_tries_them_rarely_and_briefly(big_and_idle):
    tuner = threads.ThreadTuner(2)
    used = _feed(tuner, {1: 0.010, 2: 0.035}, 20_000)
    assert tuner.current == 1
    assert used.count(2) <= tuner.trials and tuner.trials < 12      # each trial aborts after one slow step
    assert tuner.hold == threads.HOLD_STEPS[1]


def test_a_trial_step_costing_more_than_one_and_a_half_medians_ends_the_trial(big_and_idle):
    tuner = threads.ThreadTuner(2)
    used = _feed(tuner, {1: 0.010, 2: 0.016}, 2000)         # 1.6x: one step of each trial, never eight
    assert tuner.trials >= 1 and used.count(2) == tuner.trials and tuner.current == 1


def test_no_trial_starts_while_every_core_is_busy(big_and_idle, monkeypatch):
    _cpu(monkeypatch, idle_share=0.0)                    # the game and one other process: 2 cores busy
    tuner = threads.ThreadTuner(2)
    assert set(_feed(tuner, {1: 0.010, 2: 0.006}, 1000)) == {1} and tuner.trials == 0
    _cpu(monkeypatch, idle_share=0.5)                    # the other process ended: one core idle
    used = _feed(tuner, {1: 0.010, 2: 0.006}, 100)
    assert tuner.current == 2 and used[-10:] == [2] * 10


def _particles_of_cloths(app: App) -> int:
    return sum(c.particle_count for _, c in app.query(Cloth))


@TWO_THREADS
@pytest.mark.parametrize("count", [2, "auto"])
def test_a_small_scene_runs_on_one_thread_whatever_the_count(count, monkeypatch):
    """A cape-sized cloth (and a flag) on ``threads=2`` or "auto": every step on one thread, serial kernels, no
    trial (issue 42: two small cloths batched a cloth per thread cost 7.6 against 0.6 ms with a core busy)."""
    _cpu(monkeypatch, idle_share=0.5)
    seen = []
    app = App(dt=1 / 60, substeps=2, threads=count)
    app.add_plugin(DefaultPlugins)
    for k in range(2):
        sheet = mesh.grid(20, 20, 0.6, 0.6, center=(k, 1.0, 0.0))             # 400 particles each
        app.spawn(Cloth.from_mesh(sheet, "cotton"), Pin.edge(sheet, "top"))
    app.add_system(lambda a, dt: seen.append((numba.get_num_threads(), a.step_threads)), Stage.PRE_STEP,
                   name="count_threads")
    try:
        assert 0 < _particles_of_cloths(app) < threads.MIN_PARTICLES
        app.step(threads.FIRST_TRIAL + 2 * threads.TRIAL_STEPS)
        assert set(seen) == {(1, 1)}
        assert app.tuner is None or app.tuner.trials == 0
    finally:
        app.close()


@TWO_THREADS
def test_a_big_scene_still_gets_its_fixed_thread_count():
    seen = []
    app = App(dt=1 / 60, substeps=1, threads=2)
    app.add_plugin(DefaultPlugins)
    sheet = mesh.grid(48, 48, 1.0, 1.0, center=(0.0, 1.0, 0.0))                # 2,304 particles
    app.spawn(Cloth.from_mesh(sheet, "cotton"), Pin.edge(sheet, "top"))
    app.add_system(lambda a, dt: seen.append((numba.get_num_threads(), a.step_threads)), Stage.PRE_STEP,
                   name="count_threads")
    try:
        assert _particles_of_cloths(app) >= threads.MIN_PARTICLES
        app.step(2)
        assert set(seen) == {(2, 2)}
    finally:
        app.close()


def test_a_tuner_with_one_core_always_runs_one_thread():
    tuner = threads.ThreadTuner(1)
    assert set(_feed(tuner, {1: 0.01}, 500)) == {1} and tuner.trials == 0


@pytest.mark.parametrize("text", ["0", "two", str(10_000)])
def test_a_games_threads_option_refuses_a_bad_count(text, capsys):
    app = App(dt=1 / 60, substeps=2)
    with pytest.raises(SystemExit) as exit_:
        run_app(app, ["--headless", "--frames", "1", "--threads", text])
    assert exit_.value.code == 2 and "--threads" in capsys.readouterr().err
    app.close()
    assert "--threads" in parser().format_help()


def test_scenes_benchmark_load_records_the_load_threads_layer_and_wait_policy():
    out = subprocess.run([sys.executable, "-m", "loom.benchmarks", "scenes", "--scene", "cape", "--frames", "3",
                          "--no-render", "--load", "--threads", "1"], cwd=ROOT, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    (record,) = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    assert record["scene"] == "cape" and record["load"] == max(1, (os.cpu_count() or 2) - 1)
    assert record["threads"] == 1 and record["threading_layer"] in ("omp", "tbb", "workqueue")
    assert record["wait_policy"] == os.environ.get("OMP_WAIT_POLICY")
    assert record["spin_count"] == os.environ.get("GOMP_SPINCOUNT", threads.SPIN_COUNT)
    assert 0.0 < record["sim_ms_median"] <= record["sim_ms_p99"] and "stretch_worst_pct" in record


def test_scenes_benchmark_refuses_a_bad_load_or_thread_count():
    for args in (["--load", "-1"], ["--threads", "0"]):
        out = subprocess.run([sys.executable, "-m", "loom.benchmarks", "scenes", "--scene", "cape", "--frames", "1",
                              *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert out.returncode == 2 and args[0] in out.stderr, out.stderr


def test_background_load_spins_while_the_block_runs_and_stops_after():
    from loom.benchmarks.scenes import background_load
    with background_load(2) as spinners:
        assert len(spinners) == 2 and all(s.poll() is None for s in spinners)
    assert all(s.poll() is not None for s in spinners)
    with pytest.raises(ValueError, match=r"load = -1: must be a whole number"):
        with background_load(-1):
            pass


def test_threads_benchmark_steps_one_every_core_and_auto_side_by_side():
    out = subprocess.run([sys.executable, "-m", "loom.benchmarks", "threads", "--scene", "flag", "--blocks", "2",
                          "--block", "3"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    (record,) = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    assert record["scene"] == "flag" and record["load"] == 0 and record["auto_ends_on"] in (1, record["cores"])
    for key in ("one_ms", "every_core_ms", "auto_ms"):
        median, p99 = record[key]
        assert 0.0 < median <= p99, record


def test_a_warm_launch_whose_first_step_compiles_only_numbas_own_helpers_still_tries_threads(big_and_idle):
    """numba compiles some helpers (its typed list's) anew in every process, warm cache or not: only a Loom kernel
    compiled in the first step marks a cold launch (100 flags batch in typed lists: with the helpers counted, a
    warm launch never tried a second thread and ran at 24 against 14 ms a frame)."""
    import numba

    @numba.njit                                          # not a Loom kernel: this test module's own
    def helper(k):
        return k + 1

    app = App(dt=1 / 60, substeps=2)
    app.add_plugin(LaunchPlugin)
    app.add_system(lambda a, dt: helper(a.clock.step_index) if a.clock.step_index == 0 else None, Stage.PRE_STEP,
                   name="compile_a_helper")
    try:
        app.step(threads.FIRST_TRIAL + 2 * threads.TRIAL_STEPS)
        assert helper.signatures, "the helper was not compiled in the first step"
        assert app.tuner.allowed_launch
        assert app.tuner.trials >= 1 or threads.cores() < 2
    finally:
        app.close()
