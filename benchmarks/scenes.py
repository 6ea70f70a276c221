"""Scene benchmark: the games' scenes headless, whole frames timed — what a player's CPU pays.

For each scene, 600 fixed frames are timed one by one (median and p99 of the simulation time per
frame, no profiling overhead), then 120 more frames run with per-system timing for the breakdown
(ms per frame by group: integration, constraints, environment, self_collision, pins, wind,
bodies, other). Then as many frames again are each also drawn offscreen by the moderngl renderer
(EGL), adding the cloth surface's ``normals`` (Loop subdivision and smooth normals) and ``upload``
(packing and writing the vertex buffers) to the breakdown, and render_ms_median. The drawing runs
after the timed frames, not between them: without a GPU, Mesa's llvmpipe rasterises on the same two
cores, on threads that keep running after the draw call returns, and slows the next simulated
frame; a laptop's GPU does not. ``--no-render`` skips it.
One JSON line per scene; ``--profile`` also prints a per-system table to stderr.

Python calls per step (``--calls``): after the timed frames, ``CALL_STEPS`` more steps are counted (not timed: the
counter slows them) with ``benchmarks/calls.py``; the record gets ``calls_per_step`` (every call of a function of
Loom's package, the game's own systems under loom.games included, each kernel call once), ``kernel_calls_per_step``
(the numba kernels' share of them) and ``calls_top`` (the most called functions, calls per step each).

Meters (``--meters``): after the timed record, the scene is built again and run for 1 + frames frames, untimed, with
``loom.systems.pipeline.meters.MeterPlugin``; the record gets ``meters``: warp/weft stretch before the deformation
limit at every substep (worst, p99), the worst shear-link stretch and triangle angle change [rad], the triangle
area ratio (min, p1), the share of substeps in which the limit moved a particle and its largest move [m], the
fastest particle's step-to-step speed over the last second [m/s], and the metered run's ``rejected_steps``.

What the cloths cost the game: the same scene is built again with its cloths despawned (the game's own systems, its
pymunk world, colliders and every Loom system still running, on nothing to simulate) and as many frames timed;
``no_cloth_ms_median`` is that frame's median and ``cloth_ms_median`` the difference, what adding the cloths to the
game costs a frame (with ``cloth_per_yardstick``). The cape game's frame also poses its hero's figure, follows him
with the camera and steps his pymunk world, none of it the cape's.

The machine's speed: ``yardstick_ms`` is the mean of two measurements of a fixed piece of work (``yardstick``:
one step of the sheet benchmark's naive loop on a 32² sheet), one before the scene is built and one after its timed
frames, and ``sim_per_yardstick`` the scene's median frame over it: a cloud VM runs in phases of different speed,
and that ratio compares runs made in different phases.

Threads: by default each scene runs on the App's default thread count, what a player gets
(``loom.launch.threads``); ``--threads N`` sets it. ``--load N`` keeps N other processes spinning for the
whole run (default with no N: one per core but one — the other cores kept busy, as on a player's
machine running something else); each record names the threads, threading layer, OpenMP wait
policy and the load it ran under.

Sleep (``--scene sleep``): 20 still flags of 16×16 without wind, stepped until every one sleeps (``loom.Sleep``),
then timed asleep against a twin App with sleep off, awake, in the same minute (``sleeping``): ms per frame of each,
the steps they took to fall asleep, and with ``--calls`` the Python calls per step of each.

Run: python -m loom.benchmarks scenes [--scene cape flag drape flags100] [--frames 600] [--threads N]
     [--load [N]] [--profile] [--no-render] [--calls] [--meters]
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import numpy as np

from loom.components import Cloth, Pin, Wind
from loom.engine import App, Stage, mesh
from loom.launch import threads as thread_policy
from loom.benchmarks import yardstick
from loom.benchmarks.calls import calls_per_step
from loom.benchmarks.stretch import StretchMeter
from loom.systems import DefaultPlugins

GROUPS = {
    "predict_positions": "integration", "update_velocities": "integration", "predict_verlet": "integration",
    "update_verlet_velocities": "integration", "integrate_springs": "integration",
    "update_spring_velocities": "integration", "clear_forces": "integration",
    "solve_constraints": "constraints", "relax_verlet_links": "constraints", "limit_spring_deformation": "constraints",
    "settle_yarns": "constraints", "limit_links": "constraints",
    "refresh_tethers": "constraints", "step_implicit": "constraints",
    "collide_environment": "environment", "gather_colliders": "environment",
    "collide_self": "self_collision",
    "prepare_pins": "pins", "pin_particles": "pins", "hold_grabs": "pins", "move_grabs": "pins",
    "apply_wind": "wind",
    "sync_bodies": "bodies", "couple_bodies": "bodies", "collect_impulses": "bodies",
}


FLAGS100_SUBSTEPS = 4
FLAGS100_ITERATIONS = 1
"""A crowd of small background flags: 4 substeps of one sweep (a quarter of the cape's 8 × 2)."""


def _flags100(app: App) -> list[Cloth]:
    """100 flags of 16×16 particles (0.6 m × 0.4 m) on a 10 × 10 grid of poles, in gusty wind."""
    clothes = []
    for k in range(100):
        centre = (1.0 * (k % 10), 1.0 + 0.8 * (k // 10), 0.0)
        flag = mesh.grid(16, 16, 0.6, 0.4, center=centre)
        cloth = Cloth.from_mesh(flag, "cotton", iterations=FLAGS100_ITERATIONS)
        app.spawn(cloth, Pin.edge(flag, "left"))
        clothes.append(cloth)
    app.spawn(Wind(velocity=(6.0, 0.0, 1.0), gust=0.3, turbulence=0.2, seed=5))
    return clothes


SLEEP_FLAGS = 20
"""Flags of the ``sleep`` scene: 16×16 particles each, as in flags100, without wind."""
SLEEP_SETTLE = 1800
"""Most steps the ``sleep`` scene is given for every flag to fall asleep (30 s at 60 Hz)."""


def _flags_still(app: App) -> list[Cloth]:
    """SLEEP_FLAGS flags of 16×16 particles (0.6 m × 0.4 m) on poles in a row, no wind: they settle and sleep."""
    clothes = []
    for k in range(SLEEP_FLAGS):
        flag = mesh.grid(16, 16, 0.6, 0.4, center=(1.0 * (k % 10), 1.0 + 0.8 * (k // 10), 0.0))
        cloth = Cloth.from_mesh(flag, "cotton", iterations=FLAGS100_ITERATIONS)
        app.spawn(cloth, Pin.edge(flag, "left"))
        clothes.append(cloth)
    return clothes


def sleeping(*, frames: int, threads: int | None = None, calls: bool = False) -> dict:
    """The ``sleep`` scene's record: SLEEP_FLAGS still flags stepped until all sleep (``loom.Sleep()`` as the App's
    default: the default settings, turned on), then ``frames`` frames timed asleep, against a twin App with sleep off (``Sleep(enabled=False)`` as its
    App default) stepped as many steps and timed the same way, awake. ``steps_to_sleep``: steps until the last flag
    slept; ``asleep_share``: the flags asleep during the timed frames; ``*_calls_per_step`` with ``calls``."""
    from loom.components import Sleep
    apps = {}
    for mode in ("asleep", "awake"):
        app = App(dt=1 / 60, substeps=FLAGS100_SUBSTEPS, threads=threads)
        app.insert_resource(Sleep(enabled=mode == "asleep"))             # sleep is opt-in: on for one App only
        app.add_plugin(DefaultPlugins)
        _flags_still(app)
        apps[mode] = app
    asleep, awake = apps["asleep"], apps["awake"]
    settled = SLEEP_SETTLE
    for step in range(SLEEP_SETTLE):
        asleep.step(1)
        if all(sleep.state == "asleep" for _, sleep in asleep.query(Sleep)):
            settled = step + 1
            break
    awake.step(settled)
    times = {mode: _frame_times(app, frames) for mode, app in apps.items()}     # both timed in the same minute
    states = [sleep.state for _, sleep in asleep.query(Sleep)]
    record = {
        "scene": "sleep", "cloths": SLEEP_FLAGS, "particles": SLEEP_FLAGS * 256, "frames": frames,
        "substeps": FLAGS100_SUBSTEPS, "threads": threads if threads is not None else "auto",
        "steps_to_sleep": settled, "asleep_share": round(states.count("asleep") / len(states), 3),
        "awake_ms_median": round(1000 * float(np.median(times["awake"])), 4),
        "asleep_ms_median": round(1000 * float(np.median(times["asleep"])), 4),
        "asleep_per_awake": round(float(np.median(times["asleep"]) / np.median(times["awake"])), 4),
        "rejected_steps": asleep.report()["rejected_steps"] + awake.report()["rejected_steps"],
    }
    if calls:
        for mode, app in apps.items():
            record[f"{mode}_calls_per_step"] = calls_per_step(app, CALL_STEPS)["calls_per_step"]
    for app in apps.values():
        app.close()
    return record


def _scene(name: str) -> tuple[int, Callable[[App], object]]:
    """(substeps, build) for a scene name; the games are imported only when asked for."""
    if name == "cape":
        from loom.games import cape
        return cape.SUBSTEPS, cape.build_scene
    if name == "flag":
        from loom.games import flag
        return flag.SUBSTEPS, flag.build_scene
    if name == "drape":
        from loom.games import drape
        return drape.SUBSTEPS, lambda app: drape.build_scene(app, n=64)
    if name == "sandbox":
        from loom.games import sandbox
        return 16, sandbox.build_scene
    if name == "flags100":
        return FLAGS100_SUBSTEPS, _flags100
    if name == "sleep":
        return FLAGS100_SUBSTEPS, _flags_still
    raise ValueError(f"--scene {name!r}: expected one of {', '.join(SCENES)}")


SCENES = ("cape", "flag", "drape", "sandbox", "flags100", "sleep")
BREAKDOWN = ("integration", "constraints", "environment", "self_collision", "pins", "wind", "bodies", "other")
"""Groups of ``ms_per_frame`` (with ``normals`` and ``upload`` from the drawn frames)."""


CALL_STEPS = 20
"""Steps counted for ``--calls`` (after the timed ones)."""


SPINNER = ("import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    for _ in range(100000):\n"
           "        pass\n")
"""A busy background process: spins until its parent (the benchmark) is gone, even if that was killed."""


@contextlib.contextmanager
def background_load(processes: int) -> Iterator[list[subprocess.Popen]]:
    """Keep ``processes`` other Python processes spinning (100 % of a core each) while the block runs;
    yields them, and kills and reaps them when the block ends (or raises)."""
    if isinstance(processes, bool) or not isinstance(processes, int) or processes < 0:
        raise ValueError(f"load = {processes!r}: must be a whole number of processes >= 0")
    spinners = [subprocess.Popen([sys.executable, "-c", SPINNER]) for _ in range(processes)]
    try:
        if spinners:
            time.sleep(0.3)                              # let them start spinning before the timed frames
        yield spinners
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def run(name: str, *, frames: int, threads: int | None = None, profile: bool = False, render: bool = True,
        load: int = 0, calls: bool = False, meters: bool = False) -> dict:
    """Time ``frames`` frames of scene ``name`` (see the module's docstring) and return its JSON record.

    threads: the App's thread count (None: the App's default); load: processes kept spinning meanwhile; calls:
    also count the Python calls per step (``calls_per_step``, ``calls_top``); meters: also run the scene again,
    untimed, with ``MeterPlugin`` (``meters``: see ``metered``)."""
    with background_load(load):
        record = _run(name, frames=frames, threads=threads, profile=profile, render=render, calls=calls)
    record["load"] = load
    if meters:
        record["meters"] = metered(name, frames=frames, threads=threads)
    return record


def metered(name: str, *, frames: int, threads: int | None = None) -> dict:
    """Scene ``name`` run again for 1 + ``frames`` frames, untimed, with the meters on
    (``loom.systems.pipeline.meters``): the whole run from the first frame, fall included. Over every XPBD cloth: the
    worst of each number (the smallest for area ratios; ``limit_active_share`` the largest cloth's share), and
    ``rejected_steps`` of the metered run."""
    from loom.systems.pipeline.meters import MeterPlugin, Meters
    substeps, build = _scene(name)
    app = App(dt=1 / 60, substeps=substeps, threads=threads)
    app.add_plugin(DefaultPlugins)
    app.add_plugin(MeterPlugin())
    build(app)
    app.step(1 + frames)
    records = [cloth_meters.record() for cloth_meters in app.resource(Meters).cloths.values()]
    rejected = app.report()["rejected_steps"]
    app.close()
    if not records:
        return {"rejected_steps": rejected}
    low = ("area_ratio_min", "area_ratio_p1")
    out = {key: round((min if key in low else max)(r[key] for r in records), 6)
           for key in records[0] if key not in ("substeps", "steps")}
    out["rejected_steps"] = rejected
    return out


def _run(name: str, *, frames: int, threads: int | None, profile: bool, render: bool, calls: bool = False) -> dict:
    substeps, build = _scene(name)
    yardstick_before = yardstick.measure()
    app = App(dt=1 / 60, substeps=substeps, threads=threads)
    app.add_plugin(DefaultPlugins)
    renderer = None
    if render:                                           # draws nothing until RENDER runs (phase 3)
        from loom.systems.render.gl import GLRenderer, GLRenderPlugin
        app.add_plugin(GLRenderPlugin(width=640, height=360, headless=True))
        renderer = app.resource(GLRenderer)
    build(app)
    start = time.perf_counter()
    app.step(1)                                          # compile or load cached kernels
    warmup = time.perf_counter() - start
    stretch = StretchMeter()                             # 1: the simulation alone, frame by frame
    times = _frame_times(app, frames, stretch.sample)
    machine = 0.5 * (yardstick_before + yardstick.measure())
    counted = calls_per_step(app, CALL_STEPS) if calls else None
    bare = _without_cloths(build, substeps, threads, frames)
    app.profiling = True                                 # 2: the per-system breakdown
    profiled = max(frames // 5, 1)
    app.step(profiled)
    app.profiling = False
    groups = dict.fromkeys(BREAKDOWN, 0.0)               # every group, 0 where no system of it ran
    for system, seconds in app.system_seconds.items():
        group = GROUPS.get(system, "other")
        groups[group] = groups.get(group, 0.0) + seconds
    breakdown = {g: round(1000 * s / profiled, 3) for g, s in sorted(groups.items())}
    drawn = np.empty(profiled)
    if renderer is not None:                             # 3: each frame also drawn offscreen
        app.step(1)
        app.run_stage(Stage.RENDER, 1 / 60)              # the context, programs and buffers
        before = dict(renderer.seconds)
        for f in range(profiled):
            app.step(1)
            t0 = time.perf_counter()
            app.run_stage(Stage.RENDER, 1 / 60)
            drawn[f] = time.perf_counter() - t0
        for part in ("normals", "upload"):
            breakdown[part] = round(1000 * (renderer.seconds[part] - before[part]) / profiled, 3)
    if profile:
        print(f"{name}: ms per frame by system ({profiled} frames)", file=sys.stderr)
        for system, seconds in sorted(app.system_seconds.items(), key=lambda kv: -kv[1]):
            print(f"  {system:<28} {1000 * seconds / profiled:8.3f}", file=sys.stderr)
        for part in ("normals", "upload"):
            if part in breakdown:
                print(f"  {part + ' (render)':<28} {breakdown[part]:8.3f}", file=sys.stderr)
    report = app.report()
    record = {
        "scene": name, "particles": report["particles"], "cloths": report["cloths"], "frames": frames,
        "substeps": substeps, **thread_policy.describe(),
        "threads": app.threads if app.tuner is None else f"auto:{app.tuner.current}",
        "thread_trials": 0 if app.tuner is None else app.tuner.trials,
        "sim_ms_median": round(1000 * float(np.median(times)), 3),
        "sim_ms_p99": round(1000 * float(np.percentile(times, 99)), 3),
        "yardstick_ms": round(machine, 3),
        "sim_per_yardstick": round(1000 * float(np.median(times)) / machine, 4),
        "no_cloth_ms_median": round(1000 * bare, 3),
        "cloth_ms_median": round(1000 * (float(np.median(times)) - bare), 3),
        "cloth_per_yardstick": round(1000 * (float(np.median(times)) - bare) / machine, 4),
        **stretch.record(),
        "ms_per_frame": breakdown,
        **({"render_ms_median": round(1000 * float(np.median(drawn)), 3)} if renderer is not None else {}),
        "warmup_s": round(warmup, 3), "nan": report["nan"], "rejected_steps": report["rejected_steps"],
        **({"calls_per_step": counted["calls_per_step"], "kernel_calls_per_step": counted["kernel_calls_per_step"],
            "calls_top": counted["top"]} if counted else {}),
    }
    app.close()
    return record


def _without_cloths(build: Callable[[App], object], substeps: int, threads: int | None, frames: int) -> float:
    """The median frame [s] of the scene built by ``build`` with every Cloth entity despawned (its pins with it):
    what the game costs without its cloths, Loom's systems still in the schedule."""
    app = App(dt=1 / 60, substeps=substeps, threads=threads)
    app.add_plugin(DefaultPlugins)
    build(app)
    for entity, _ in list(app.query(Cloth)):
        app.despawn(entity)
    app.step(1)
    times = _frame_times(app, frames)
    app.close()
    return float(np.median(times))


def _frame_times(app: App, frames: int, after: Callable[[App], object] | None = None) -> np.ndarray:
    """Each of ``frames`` steps of ``app`` timed alone [s], (frames,); ``after(app)`` runs after each, outside the
    timer (the stretch meter's sample)."""
    times = np.empty(frames)
    for f in range(frames):
        t0 = time.perf_counter()
        app.step(1)
        times[f] = time.perf_counter() - t0
        if after is not None:
            after(app)
    return times


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m loom.benchmarks scenes", description=__doc__.splitlines()[0])
    p.add_argument("--scene", nargs="+", default=["cape", "flag", "drape", "flags100"], choices=SCENES)
    p.add_argument("--frames", type=int, default=600)
    p.add_argument("--threads", type=int, default=None,
                   help="the App's thread count, 1 … cores (default: the App's default, what a player gets)")
    p.add_argument("--load", type=int, nargs="?", default=0, const=max(1, (os.cpu_count() or 2) - 1), metavar="N",
                   help="keep N other processes spinning during the run (no N: one per core but one)")
    p.add_argument("--profile", action="store_true", help="print a per-system table to stderr")
    p.add_argument("--no-render", action="store_true",
                   help="skip the drawn frames (and so the normals and upload of the breakdown)")
    p.add_argument("--calls", action="store_true",
                   help="also count Loom's Python calls per step (calls_per_step and the top callers, calls_top)")
    p.add_argument("--meters", action="store_true",
                   help="also run each scene again, untimed, with the meters on (stretch before the limit, shear, "
                        "area, limit activity, speed: the \"meters\" field)")
    args = p.parse_args(argv)
    if args.frames < 1:
        p.error(f"--frames {args.frames}: must be >= 1")
    cores = thread_policy.cores()
    if args.threads is not None and not 1 <= args.threads <= cores:
        p.error(f"--threads {args.threads}: must be in 1 … {cores} (this machine's cores, NUMBA_NUM_THREADS)")
    if args.load < 0:
        p.error(f"--load {args.load}: must be >= 0 processes")
    for name in args.scene:
        if name == "sleep":                              # its own record: asleep against awake (``sleeping``)
            print(json.dumps(sleeping(frames=args.frames, threads=args.threads, calls=args.calls)), flush=True)
            continue
        print(json.dumps(run(name, frames=args.frames, threads=args.threads, profile=args.profile,
                             render=not args.no_render, load=args.load, calls=args.calls,
                             meters=args.meters)), flush=True)
