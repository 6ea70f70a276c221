"""The benchmarks print the JSON they promise (no speed is asserted here: speed lives in the notes)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from loom import App, DefaultPlugins
from loom.components import Cloth

ROOT = Path(__file__).resolve().parent.parent
SHEET_KEYS = {"impl", "n", "particles", "constraints", "steps", "wall_s", "steps_per_s",
              "constraint_projections_per_s", "final_max_stretch", "warmup_s"}
NAIVE_KEYS = {"naive_steps_per_s", "ratio_to_naive", "naive_max_dx_m", "sweep_ns_per_projection",
              "naive_sweep_ns_per_projection", "sweep_ratio"}


def run_benchmark(*args: str) -> list[dict]:
    out = subprocess.run([sys.executable, "-m", "loom.benchmarks", *args], cwd=ROOT, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def test_sheet_benchmark_prints_one_json_line_per_size():
    records = run_benchmark("sheet", "--n", "8", "12", "--substeps", "2", "--iters", "3", "--steps", "5",
                            "--tethers", "--sphere", "--threads", "2")
    assert [r["n"] for r in records] == [8, 12]
    for r in records:
        assert SHEET_KEYS | NAIVE_KEYS <= set(r), (SHEET_KEYS | NAIVE_KEYS) - set(r)
        assert r["particles"] == r["n"] ** 2
        assert r["constraint_projections_per_s"] > 0 and r["steps"] == 5 and r["sphere"] is True
        assert 0.0 <= r["final_max_stretch"] < 1.0
        assert all(r[key] is None for key in NAIVE_KEYS), r      # the naive loop has no sphere: not the same work


def test_sheet_benchmark_runs_its_naive_loop_alongside_with_the_same_physics():
    (r,) = run_benchmark("sheet", "--n", "8", "--substeps", "2", "--iters", "3", "--steps", "5", "--block", "2",
                         "--tethers")
    assert r["tethers"] > 0 and r["sphere"] is False
    assert r["naive_steps_per_s"] > 0.0 and r["ratio_to_naive"] > 0.0 and r["sweep_ratio"] > 0.0
    assert r["sweep_ns_per_projection"] > 0.0 and r["naive_sweep_ns_per_projection"] > 0.0
    assert r["naive_max_dx_m"] < 1e-9                        # the same operations: 0.0 in practice
    assert r["meters"]["rejected_steps"] == 0 and r["rejected_steps"] == 0
    assert r["meters"]["steps"] == 6                          # the metered run: the warm-up step and the 5 timed
    (bare,) = run_benchmark("sheet", "--n", "4", "--steps", "2", "--no-naive")
    assert all(bare[key] is None for key in NAIVE_KEYS), bare


def _fall_of_the_free_edge(build) -> tuple[np.ndarray, float, np.ndarray]:
    """Build a scene with ``build(app)`` (returning its cloth), step 0.2 s: (heights at the start [m], how far the
    lowest particle of the edge opposite the pins fell [m], the pinned particles' largest move [m])."""
    app = App(dt=1 / 60, substeps=8)
    app.add_plugin(DefaultPlugins)
    cloth = build(app)
    start = cloth.x.copy()
    app.step(1)
    pinned = cloth.inv_mass == 0.0
    across = np.abs(start[:, 2] - start[pinned][0, 2])          # distance from the pinned edge [m]
    far = across >= across.max() - 1e-9
    app.step(11)
    fell = float((start[far, 1] - cloth.x[far, 1]).min())
    moved = float(np.abs(cloth.x[pinned] - start[pinned]).max())
    assert cloth.rejected_steps == 0
    app.close()
    return start[:, 1], fell, moved


def test_the_sheet_and_hang_scenes_are_released_flat_and_fall():
    """Issue 44: both start horizontal (every particle at one height), pinned at two corners, and the edge opposite
    the pins falls freely at first: after 0.2 s at least 0.9 × ½·g·t² (nothing holds it; an inextensible hinged
    sheet's free edge falls no slower than free fall at first). The old scenes started vertical, at equilibrium."""
    from loom.benchmarks import sheet, stiffness

    def the_sheet(app: App) -> Cloth:
        return sheet.build_sheet(app, 12, iters=1, tethers=True, model="xpbd", dt=1 / 60, sphere=False)

    def the_hang(app: App) -> Cloth:
        stiffness.hang(app, 12)
        return next(c for _, c in app.query(Cloth))
    free_fall = 0.5 * 9.81 * 0.2 ** 2
    for build in (the_sheet, the_hang):
        heights, fell, moved = _fall_of_the_free_edge(build)
        assert np.ptp(heights) == 0.0, build
        assert fell >= 0.9 * free_fall and moved == 0.0, (build, fell, free_fall, moved)


def test_dissipation_benchmark_measures_damping_against_its_exponential_and_xpbds_loss_against_the_substep():
    """Physical references. Drift: with nothing pinned and no gravity only damping changes momentum, and it scales
    every velocity by exp(−damping·h) per substep, so the momentum lost by t is 1 − exp(−damping·t) (63.2 % at
    2 s for damping 0.5 /s), and with damping 0 none is lost (XPBD's mass-weighted corrections conserve momentum,
    Fuhrmann 2003 eqs. 6–9). Spin (damping 0): XPBD's numerical dissipation is first order in the substep h: twice
    the substeps, about half the loss of angular momentum (within 15 %); none is gained. Swing: a passive cloth
    gains no energy (within 1 % of its peak kinetic energy), and damping takes more than none."""
    drift, spin, swing = (run_benchmark("dissipation", "--scene", scene, "--n", "8", "--seconds", "2")[0]
                          for scene in ("drift", "spin", "swing"))
    damped, free = drift["preset_damping"], drift["no_damping"]
    rate = damped["damping_per_s"]
    assert rate > 0.0 and damped["rejected_steps"] == free["rejected_steps"] == 0
    for t, lost in enumerate(damped["momentum_lost_pct"], start=1):
        assert abs(lost - 100.0 * (1.0 - np.exp(-rate * t))) < 0.05, (t, lost)
    assert all(abs(lost) < 1e-6 for lost in free["momentum_lost_pct"]), free
    (finer,) = run_benchmark("dissipation", "--scene", "spin", "--n", "8", "--seconds", "2", "--substeps", "32")
    for axis in ("spin", "tumble"):
        coarse, fine = spin[axis]["angular_momentum_lost_pct"][-1], finer[axis]["angular_momentum_lost_pct"][-1]
        assert coarse > 0.0 and abs(fine / coarse - 0.5) < 0.15 * 0.5, (axis, coarse, fine)
        assert min(spin[axis]["energy_lost_pct"]) >= 0.0 and spin[axis]["rejected_steps"] == 0
    for label in ("no_damping", "preset_damping"):
        assert min(swing[label]["lost_pct_of_peak_kinetic"]) >= -1.0 and swing[label]["rejected_steps"] == 0
    assert swing["preset_damping"]["energy_lost_J"][-1] > swing["no_damping"]["energy_lost_J"][-1]


def test_small_steps_benchmark_finds_the_baselines_substeps_at_loom_s_worst_stretch():
    """The baseline's substep count at equal quality is the fewest of those tried whose worst stretch is no more
    than Loom's (before the limit); every count below it tried is worse (a bracket), and both costs are reported."""
    (r,) = run_benchmark("small_steps", "--n", "8", "--steps", "20", "--max-substeps", "256")
    assert r["loom_rejected_steps"] == 0 and r["loom_ms_per_step"] > 0.0
    equal, target = r["equal_substeps"], r["loom_worst_before_limit_pct"]
    assert equal is not None and 16 <= equal <= 256 and r["baseline_worst_pct"] <= target
    below = [run for run in r["runs"] if run["substeps"] < equal]
    assert all(run["worst_pct"] > target for run in below), r["runs"]
    from loom.benchmarks.small_steps import REFINE
    assert equal == 16 or any(run["substeps"] >= equal - max(1, equal // REFINE) for run in below)   # bisected
    assert r["baseline_ms_per_step"] > 0.0
    assert abs(r["speedup"] - r["baseline_ms_per_step"] / r["loom_ms_per_step"]) <= 0.01 + 1e-3 * r["speedup"]
    assert r["baseline_at_loom_substeps"]["substeps"] == 16 and r["baseline_at_loom_substeps"]["ms_per_step"] > 0.0


def test_sheet_benchmark_rejects_a_one_particle_sheet():
    out = subprocess.run([sys.executable, "-m", "loom.benchmarks", "sheet", "--n", "1"], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 2 and "--n 1" in out.stderr


def test_benchmark_stdout_is_only_json_lines():
    out = subprocess.run([sys.executable, "-m", "loom.benchmarks", "sheet", "--n", "4", "--steps", "2"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    lines = [line for line in out.stdout.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("{"), out.stdout


def test_startup_benchmark_times_a_warm_launch_to_the_first_frame():
    (record,) = run_benchmark("startup", "--runs", "warm", "--headless")
    assert record["game"] == "cape" and record["cache"] == "warm"
    assert record["seconds"] > 0.0 and record["first_frame_ms"] > 0.0 and record["video_driver"] == "none"
    assert record["first_output_s"] is None or 0.0 < record["first_output_s"] <= record["seconds"]


def test_startup_benchmark_lists_the_kernels_a_cold_launch_compiles_longest():
    """``--kernels``: an empty cache, so the hanging sheet's first frames compile its kernels, the renderer's
    too, in an offscreen window (about 15 s); the longest own compile times come first, and the total covers
    them. The total's compile events are what the game's ``FIRST_LAUNCH_COMPILES`` expects, within 25 % (the
    loading view's progress bar is a fraction of it: an estimate that must not drift far as kernels change)."""
    from loom.games import hanging_sheet
    from loom.games.__main__ import PRECOMPILE_FRAMES

    *top, total = run_benchmark("startup", "--kernels", "3", "--game", "hanging_sheet", "--frames",
                                str(PRECOMPILE_FRAMES))
    assert len(top) == 3 and total["kernel"] == "(all)" and total["compiles"] >= total["functions"] >= 3
    assert abs(total["compiles"] - hanging_sheet.FIRST_LAUNCH_COMPILES) <= 0.25 * hanging_sheet.FIRST_LAUNCH_COMPILES
    seconds = [record["seconds"] for record in top]
    assert seconds == sorted(seconds, reverse=True) and seconds[-1] > 0.0
    assert sum(seconds) <= total["seconds"] + 1e-6 <= total["run_s"] + 1e-3
    assert all(" (loom." in record["kernel"] or " (numba." in record["kernel"] for record in top), top


def test_scenes_benchmark_prints_times_and_the_breakdown_per_scene():
    cape, flags = run_benchmark("scenes", "--scene", "cape", "flags100", "--frames", "5")
    assert cape["scene"] == "cape" and cape["particles"] == 600 and cape["cloths"] == 1
    assert flags["scene"] == "flags100" and flags["cloths"] == 100 and flags["particles"] == 100 * 16 * 16
    for record in (cape, flags):
        assert 0.0 < record["sim_ms_median"] <= record["sim_ms_p99"]
        assert record["yardstick_ms"] > 0.0
        assert abs(record["sim_per_yardstick"] - record["sim_ms_median"] / record["yardstick_ms"]) < 1e-3
        assert record["no_cloth_ms_median"] > 0.0          # the scene without its cloths: what the cloths cost
        assert abs(record["cloth_ms_median"] - (record["sim_ms_median"] - record["no_cloth_ms_median"])) < 2e-3
        assert abs(record["cloth_per_yardstick"] - record["cloth_ms_median"] / record["yardstick_ms"]) < 1e-3
        assert set(record["ms_per_frame"]) == {"integration", "constraints", "environment", "self_collision", "pins",
                                               "wind", "bodies", "other", "normals", "upload"}
        assert record["ms_per_frame"]["normals"] > 0.0 and record["render_ms_median"] > 0.0
        assert record["nan"] is False and record["rejected_steps"] == 0
    assert "wind" in flags["ms_per_frame"] and "environment" in cape["ms_per_frame"]
    (bare,) = run_benchmark("scenes", "--scene", "cape", "--frames", "2", "--no-render")
    assert "normals" not in bare["ms_per_frame"] and "render_ms_median" not in bare


def test_the_scenes_baseline_runs_the_scene_built_as_the_game_builds_it_without_its_cloths():
    """``cloth_ms_median`` is the frame less ``_without_cloths``: the same build (its systems, bodies and colliders),
    every Cloth entity despawned before the timed frames, each of them stepped."""
    from loom.benchmarks import scenes
    from loom.engine import Stage, mesh

    seen = []

    def build(app: App) -> None:
        app.spawn(Cloth.from_mesh(mesh.grid(4, 4, 1.0, 1.0)))
        app.spawn(Cloth.from_mesh(mesh.grid(3, 3, 1.0, 1.0)))
        app.add_system(lambda app, dt: seen.append(len(app.query(Cloth))), Stage.POST_STEP, name="count")

    assert scenes._without_cloths(build, 2, 1, 3) > 0.0
    assert seen == [0, 0, 0, 0]                                   # the warm-up step and three timed ones


def test_stretch_meter_reports_the_worst_and_p99_stretch_of_the_sampled_links():
    from loom.benchmarks.stretch import StretchMeter
    from loom.components import STRETCH, Cloth
    from loom.engine import App, mesh

    app = App()
    sheet = mesh.grid(6, 6, 1.0, 1.0)
    cloth = Cloth.from_mesh(sheet)
    app.spawn(cloth)
    meter = StretchMeter()
    meter.sample(app)                                         # at rest: no stretch
    cloth.x[:, 0] *= 1.02                                     # 2 % along x: the x links stretch 2 %, y ones 0
    meter.sample(app)
    record = meter.record()
    strain = cloth.strain(STRETCH)
    assert abs(record["stretch_worst_pct"] - 100.0 * strain.max()) < 1e-3
    assert abs(record["stretch_worst_pct"] - 2.0) < 1e-3
    links = strain.size
    expected_p99 = np.percentile(np.concatenate([np.zeros(links), strain]), 99)
    assert abs(record["stretch_p99_pct"] - 100.0 * expected_p99) < 1e-3
    app.close()


def test_sheet_and_scene_benchmarks_report_the_stretch_next_to_the_cost():
    (sheet,) = run_benchmark("sheet", "--n", "8", "--substeps", "2", "--iters", "3", "--steps", "5")
    (cape,) = run_benchmark("scenes", "--scene", "cape", "--frames", "5", "--no-render")
    for record in (sheet, cape):
        assert 0.0 <= record["stretch_p99_pct"] <= record["stretch_worst_pct"] < 100.0, record


def test_stiffness_benchmark_reports_strain_and_cost_per_setting_and_the_cheapest_under_2_percent():
    """One record per (scene, setting) with the worst, p99 and at-rest strain, penetration and cost, then the
    cheapest setting whose worst strain is ≤ 2 % (or null). Shape only: speed is never asserted in tests."""
    records = run_benchmark("stiffness", "--scene", "hang", "sphere", "--setting", "4x1", "4x2L2", "--n", "8", "--steps", "40")
    runs = [r for r in records if "setting" in r]
    assert [(r["scene"], r["setting"]) for r in runs] == [("hang", "4x1"), ("hang", "4x2L2"), ("sphere", "4x1"),
                                                          ("sphere", "4x2L2")]
    for r in runs:
        assert {"worst_pct", "p99_pct", "rest_pct", "penetration_mm", "ms_per_step", "yardstick_ms"} <= set(r)
        assert r["yardstick_ms"] > 0.0
        assert r["p99_pct"] <= r["worst_pct"] and r["rest_pct"] <= r["worst_pct"] and not r["nan"]
    assert runs[1]["strain_limit"] == 0.02 and runs[0]["strain_limit"] is None
    summary = [r for r in records if "cheapest_2pct" in r]
    assert [s["scene"] for s in summary] == ["hang", "sphere"]
    for s in summary:
        ok = [r for r in runs if r["scene"] == s["scene"] and r["worst_pct"] <= 2.0]
        assert (s["cheapest_2pct"] is None) == (not ok)


def test_stiffness_benchmark_leaves_its_own_strain_measurement_out_of_the_cost(monkeypatch):
    """The pre-limit strain is measured by a system inside the timed step; its time is taken out of
    ``ms_per_step``. A strain that takes 30 ms (patched) against an 8² sheet's step of well under 1 ms: the cost
    counted stays under 30 ms if the measurement is left out, and would be over it if not (one per step)."""
    import time

    from loom.benchmarks import stiffness
    original = Cloth.strain

    def slow_strain(self, kind=None):
        time.sleep(0.03)
        return original(self, kind)
    monkeypatch.setattr(Cloth, "strain", slow_strain)
    record = stiffness.run("hang", "2x1", n=8, threads=1, steps=32)
    assert 0.0 < record["ms_per_step"] < 30.0, record["ms_per_step"]


def test_stiffness_benchmarks_t_option_turns_the_tethers_off():
    """``SxIt`` parses to no tethers, and the cloth the benchmark configures with it has none: a 16² sheet hanging from
    two corners builds tethers by default (two a free particle) and none with ``t``, the rest of the setting equal."""
    from loom.benchmarks import stiffness
    from loom.systems.xpbd import xpbd_data
    assert stiffness.parse_setting("4x1t") == stiffness.Setting(4, 1, None, tethers=False)
    assert stiffness.parse_setting("4x1").tethers
    counts = {}
    for setting in ("4x1", "4x1t"):
        app = App(dt=1 / 60, substeps=4)
        app.add_plugin(DefaultPlugins)
        stiffness.hang(app, 16)
        for _, cloth in app.query(Cloth):
            stiffness._configure(cloth, stiffness.parse_setting(setting))
        app.step(2)
        counts[setting] = sum(xpbd_data(app, e).tether_anchor.shape[0] for e, _ in app.query(Cloth))
    assert counts["4x1"] == 2 * (16 * 16 - 2) and counts["4x1t"] == 0, counts


def test_stiffness_benchmark_rejects_a_malformed_setting():
    out = subprocess.run([sys.executable, "-m", "loom.benchmarks", "stiffness", "--setting", "16by2"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "16by2" in out.stderr and "substeps x sweeps" in out.stderr


def test_vbd_newton_step_lands_on_the_minimum_of_the_incremental_potential():
    """A free particle below a pinned one on a stretched vertical link: G(x) = m/(2h²)(x − y)² + ½k(L − l₀)² is
    quadratic along the link, so one VBD vertex step (a 3×3 Newton step) must land exactly on its minimum
    x = (m/h²·y + k·(p − l₀)) / (m/h² + k) (p the pinned particle's height). Tolerance 1e-12 m: float64
    rounding of a handful of operations on values of order 1."""
    from loom.benchmarks import vbd
    m, k, h, rest = 0.02, 500.0, 1 / 240, 0.1
    y = np.array([[0.0, 1.0, 0.0], [0.0, 0.8, 0.0]])          # predicted: the link stretched to 0.2 m
    cloth = Cloth(x=y.copy(), rest_x=np.array([[0.0, 1.0, 0.0], [0.0, 1.0 - rest, 0.0]]), mass=np.array([m, m]),
                  links=np.array([[0, 1]]), link_kind=np.array([0]))
    rest = cloth.link_rest[0]                                   # 0.1 m to rounding
    cloth.inv_mass[0] = 0.0                                     # pinned top
    blocks = vbd.VertexBlocks(cloth, stiffness=k)
    x = y.copy()
    vbd.vbd_iterate(1, 1 / h**2, 0.0, x, y, cloth.inv_mass, (blocks.mass, blocks.offsets, blocks.neighbour,
                    blocks.rest, blocks.k, blocks.vertices, blocks.colour_offsets), blocks.history)
    expected = (m / h**2 * 0.8 + k * (1.0 - rest)) / (m / h**2 + k)
    assert abs(x[1, 1] - expected) < 1e-12 and x[1, 0] == 0.0 and x[1, 2] == 0.0
    assert (x[0] == y[0]).all()                                 # the pinned particle stays


def test_stiffness_benchmark_runs_the_vbd_solver_in_xpbds_place():
    """``--solver vbd`` runs the same scene through the same pipeline with VBD as the constraint system: the
    record names it, the 8² sheet lands on the ball without NaN and without going through it, and a bad
    Chebyshev rho is one clear error naming the value."""
    records = run_benchmark("stiffness", "--scene", "sphere", "--setting", "8x2", "--n", "8", "--steps", "40",
                            "--solver", "vbd")
    run = [r for r in records if "setting" in r][0]
    assert run["solver"] == "vbd" and run["vbd_stiffness"] == 1e4 and not run["nan"]
    assert run["penetration_mm"] == 0.0 and run["p99_pct"] <= run["worst_pct"] < 100.0
    out = subprocess.run([sys.executable, "-m", "loom.benchmarks", "stiffness", "--solver", "vbd", "--vbd-rho", "1.5"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "rho = 1.5" in out.stderr


def test_creep_benchmark_reports_the_tablecloths_drift_and_stretch_over_time():
    """One line a second and a summary (no drift is asserted here: physics tests measure friction, the notes
    the creep). The drift starts at the settle time, the summary repeats the last line's figures."""
    *lines, summary = run_benchmark("creep", "--n", "12", "--seconds", "2", "--settle", "1", "--every", "1",
                                    "--cloth", "plain")
    assert [line["t_s"] for line in lines] == [1.0, 2.0] and lines[0]["drift_cm"] == 0.0
    for line in lines:
        assert set(line) == {"t_s", "drift_cm", "p90_speed_m_s", "stretch_worst_pct", "stretch_p99_pct",
                             "ms_per_step"}
        assert line["drift_cm"] >= 0.0 and line["p90_speed_m_s"] >= 0.0 and line["ms_per_step"] > 0.0
    assert summary["summary"] is True and summary["cloth"] == "plain" and summary["rejected_steps"] == 0
    assert summary["drift_cm"] == lines[-1]["drift_cm"] <= summary["drift_max_cm"]
    assert summary["stretch_worst_pct"] == lines[-1]["stretch_worst_pct"]


def test_creep_benchmark_rejects_a_settle_time_after_the_run():
    out = subprocess.run([sys.executable, "-m", "loom.benchmarks", "creep", "--seconds", "2", "--settle", "3"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 2 and "--settle 3" in out.stderr and out.stdout == ""


def test_yardstick_rejects_a_sample_count_below_one():
    from loom.benchmarks import yardstick

    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="samples"):
            yardstick.measure(bad)


HITCH_KEYS = {"scene", "cache", "load", "frames", "threads", "first_frame_s", "first_step_ms", "median_ms", "p99_ms",
              "max_ms", "max_frame", "over_2x_median", "over_goal", "goal_ms", "worst", "loadavg"}


def test_hitches_benchmark_times_a_users_loop_frame_by_frame_in_its_own_process():
    records = run_benchmark("hitches", "--scene", "capeflag", "--cache", "warm", "--load", "idle", "--frames", "40")
    assert len(records) == 1
    r = records[0]
    assert set(r) == HITCH_KEYS and (r["scene"], r["cache"], r["load"], r["frames"]) == ("capeflag", "warm", "idle", 40)
    assert 0 < r["median_ms"] <= r["p99_ms"] and r["max_ms"] >= r["median_ms"] and 3 <= r["max_frame"] < 40
    assert r["first_frame_s"] > r["first_step_ms"] / 1000 > 0          # launch to the first frame's end
    assert r["goal_ms"] >= 4.0 and r["goal_ms"] >= 3 * r["median_ms"] - 0.01
    assert len(r["worst"]) == 5 and all(1 <= k < 40 for k, _ in r["worst"])


def test_hitches_benchmark_refuses_too_few_frames():
    out = subprocess.run([sys.executable, "-m", "loom.benchmarks", "hitches", "--frames", "2"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "--frames 2" in out.stderr


# --- Python calls per step (benchmarks/calls.py, scenes --calls) ------------------------------------------------
def _leaf(k: int) -> int:
    return k + 1


def _branch(n: int) -> int:
    total = sum(_leaf(k) for k in range(n))                   # one generator, resumed n + 1 times: one call
    return total + sorted([3, 1, 2], key=_leaf)[0]            # called back from C (sorted): three calls


def test_the_call_counter_counts_each_call_of_a_function_under_its_roots_once():
    """Counted by hand: the lambda once, ``_branch`` once, its generator once (not once per resumption), ``_leaf``
    4 + 3 times, the numba kernel once per call (compiled before; numba reports its call to the profiler); the
    standard library's Python code (json) is outside the roots and counts nothing."""
    import numba

    from loom.benchmarks.calls import count_calls

    def plus_one(x: float) -> float:
        return x + 1.0

    kernel = numba.njit(plus_one)
    kernel(0.0)                                                         # compiled outside the count
    here = str(Path(__file__).resolve().parent)
    counts = count_calls(lambda: (_branch(4), kernel(1.0), kernel(2.0), json.dumps({"a": [1, 2]})),
                         roots=(here,), leave_out=())
    name = "tests.test_benchmarks:"
    local = f"{name}test_the_call_counter_counts_each_call_of_a_function_under_its_roots_once.<locals>."
    assert counts == {f"{local}<lambda>": 1, f"{local}plus_one": 2, f"{name}_branch": 1,
                      f"{name}_branch.<locals>.<genexpr>": 1, f"{name}_leaf": 7}
    assert count_calls(lambda: _branch(4)) == {}                        # by default the tests are not Loom's


def test_a_later_substep_calls_a_replays_kernels_directly_and_a_shared_condition_once_per_stage():
    """Plans are the substeps' one execution path: a replay's kernels are called by the App itself (two per substep,
    nothing for the replay or the empty plan), and a run condition two systems share is asked once per step."""
    from loom.benchmarks.calls import PACKAGE, count_calls
    from loom.engine import Stage
    from loom.systems.shared.plan import nothing, run

    def ready(app: App) -> bool:
        return True

    def system(app: App, h: float):
        return run([(_leaf, (1,)), (_leaf, (2,))])

    def idle(app: App, h: float):
        return nothing

    app = App(dt=1 / 60, substeps=4, threads=1)
    app.add_system(system, Stage.SUBSTEP, run_if=ready)
    app.add_system(idle, Stage.SUBSTEP, run_if=ready, after="system")
    app.step(1)
    counts = count_calls(lambda: app.step(1), roots=(PACKAGE,), leave_out=("benchmarks",))
    app.close()
    prefix = "loom.tests.test_benchmarks:"
    local = "test_a_later_substep_calls_a_replays_kernels_directly_and_a_shared_condition_once_per_stage.<locals>."
    assert counts[prefix + "_leaf"] == 2 * 4 and counts[prefix + local + "system"] == 1
    assert counts[prefix + local + "idle"] == 1 and counts[prefix + local + "ready"] == 1
    assert counts["loom.systems.shared.plan:replay.<locals>.plan"] == 0 and counts["loom.systems.shared.plan:nothing"] == 0


LOOKUPS = ("loom.engine.app:App.query", "loom.engine.app:App.init_resource", "loom.engine.app:App.resource",
           "loom.engine.app:App.get", "loom.engine.app:App.try_get", "loom.engine.app:App._due",
           "loom.systems.shared.model_index:cloths_of", "loom.systems.shared.model_index:clothes_of",
           "loom.systems.shared.model_index:cloth_index", "loom.systems.shared.batch:batchable")
"""The lookups a system makes (world, resources, model index, batches, run conditions): paid once a step."""


def test_the_capes_lookups_are_paid_once_a_step_and_a_later_substep_calls_kernels_and_a_call_per_system():
    """The cape game's scene, one step counted from the same state with its 7 substeps and with 14: the 7 extra
    substeps make no lookup (``LOOKUPS``), and each makes, besides its kernels, at most one Python call per
    SUBSTEP system (a plan that works out its substep's part, or a helper of a replayed call)."""
    from loom.benchmarks.calls import count_calls, kernels
    from loom.engine import Stage
    from loom.games import cape

    def counted(substeps: int):
        app = App(dt=cape.DT, substeps=cape.SUBSTEPS, threads=1)
        app.add_plugin(DefaultPlugins)
        cape.build_scene(app)
        app.step(3)
        app.clock.substeps = substeps
        counts = count_calls(lambda: app.step(1))
        systems = len(app._due(app.schedule.runs(Stage.SUBSTEP)))
        app.close()
        return counts, systems

    (base, systems), (more, _) = counted(cape.SUBSTEPS), counted(2 * cape.SUBSTEPS)
    extra = more - base
    assert sum(base[name] for name in LOOKUPS) > 0                      # the lookups are there, once a step
    assert all(more[name] == base[name] for name in LOOKUPS), {name: (base[name], more[name]) for name in LOOKUPS}
    compiled = kernels(extra)
    python = sum(n for name, n in extra.items() if name not in compiled)
    assert sum(extra[name] for name in compiled) >= cape.SUBSTEPS * 4   # predict, solve, pins, update at least
    assert python <= cape.SUBSTEPS * systems, (python, systems, extra)


def test_scenes_benchmarks_calls_option_prints_the_python_calls_per_step_and_the_top_callers():
    (record,) = run_benchmark("scenes", "--scene", "cape", "--frames", "2", "--no-render", "--calls")
    top = record["calls_top"]
    assert 0 < record["kernel_calls_per_step"] < record["calls_per_step"]
    assert 0 < len(top) <= 10 and list(top.values()) == sorted(top.values(), reverse=True)
    assert sum(top.values()) <= record["calls_per_step"] + 1e-6
    assert "loom.engine.app:App.query" in top                          # names are module:qualified name
    (plain,) = run_benchmark("scenes", "--scene", "cape", "--frames", "2", "--no-render")
    assert "calls_per_step" not in plain and "calls_top" not in plain
