"""Hitch benchmark: a user's own fixed-step loop, every frame timed — the frames a player sees stall.

A game calls ``app.step(dt=TICK)`` once per tick of its own loop (docs/embedding.md, "Fixed-step games"); a median
says nothing of the one frame that stalls it (a kernel compiled, loaded or a thread count tried mid-game). Each
configuration runs in its own process (``python -c``, so numba's cache and threads start afresh) for ``--frames``
frames, each frame timed alone (the game's whole tick: its pymunk step and Loom's step). Scenes:

- ``capeflag``: a pymunk hero in a pixel world (``PixelSpace``, 100 px/m, y down), ``loom.cape`` on him, a
  ``loom.flag`` in wind, a default ``loom.App`` with ``DefaultPlugins``; the hero runs right and left, jumping;
- ``drape``: the drape game's 64² scene (``loom.games.drape``);
- ``flags100``: 100 flags of 16² (the scenes benchmark's ``flags100``).

``--cache``: ``warm`` runs on numba's cache as it is (filled first by an untimed run of the scene, ``WARM_UP_FRAMES``);
``cold`` points ``NUMBA_CACHE_DIR`` at a fresh empty folder, as on a player's first launch. ``--load``: ``idle``, or
``busy`` (one other process spinning: ``scenes.background_load``). One JSON line per configuration: scene, cache,
load, frames, threads (the App's count at the end), first_frame_s (launch of the process to the end of the first
simulated frame), first_step_ms (that frame alone), median_ms, p99_ms, max_ms and max_frame (the worst frame after
frame 3, its index), over_2x_median (frames after frame 3 over twice the median), over_goal (frames after frame 3
over the goal: warm, max(4 ms, 3 × median); cold, 50 ms), worst (the five worst frames after the first, [index,
ms]) and the machine's ``loadavg`` (1 minute) when the configuration began.

Run: python -m loom.benchmarks hitches [--scene capeflag drape flags100] [--cache warm cold] [--load idle busy]
     [--frames 1200] [--threads auto|N]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np

from loom.benchmarks.scenes import background_load

SCENES = ("capeflag", "drape", "flags100")
TICK = 1 / 60
"""[s] the user's fixed tick."""
PPM = 100.0
"""[px/m] the capeflag game's pixels per metre."""
GROUND_Y = 470.0
"""[px] the top of the capeflag game's ground (y down)."""
WARM_GOAL_MS = 4.0
"""[ms] a warm frame after frame 3 counts as a hitch above max(this, 3 × median)."""
WARM_UP_FRAMES = 300
"""Frames of the untimed run that fills numba's cache before a warm configuration (past the thread tuner's first
trials, so their kernels are cached too, as after a player's first session)."""
COLD_GOAL_MS = 50.0
"""[ms] a cold frame after the first counts as a hitch above this."""


def _capeflag(threads: str | int) -> Callable[[int], None]:
    """The capeflag scene (module docstring); returns the game's tick: ``tick(frame)`` steps pymunk and Loom once."""
    import pymunk

    import loom
    space = pymunk.Space()
    space.gravity = (0.0, 981.0)                                        # [px/s²] y down
    ground = pymunk.Segment(space.static_body, (-2000.0, GROUND_Y + 10.0), (4000.0, GROUND_Y + 10.0), 10.0)
    ground.friction = 1.0
    hero = pymunk.Body(70.0, math.inf)
    hero.position = (300.0, GROUND_Y - 31.0)
    box = pymunk.Poly.create_box(hero, (34, 62), radius=1.0)
    box.friction = 0.0
    space.add(ground, hero, box)
    app = loom.App(dt=TICK, threads=threads).add_plugin(loom.DefaultPlugins)
    app.insert_resource(loom.PixelSpace(PPM, origin=(0.0, GROUND_Y)))
    app.spawn(loom.RigidBody2D(space.static_body, depth=1.2))
    hero_id = app.spawn(loom.RigidBody2D(hero, depth=0.3))
    cape = loom.cape(app, hero_id)
    loom.flag(app, (800.0, 170.0))
    app.spawn(loom.Wind(velocity=(5.0, 0.0, 1.0), gust=0.3, seed=3))

    def tick(frame: int) -> None:
        run = 1.0 if (frame // 240) % 2 == 0 else -1.0                  # 4 s right, 4 s left, ...
        vy = -500.0 if frame % 90 == 45 and abs(hero.velocity.y) < 1.0 else hero.velocity.y
        hero.velocity = (200.0 * run, vy)
        if int(run) != cape.facing:
            cape.face(int(run))
        space.step(TICK)
        app.step(dt=TICK)
    tick.app = app                                                      # type: ignore[attr-defined]
    return tick


def _loom_scene(name: str, threads: str | int) -> Callable[[int], None]:
    """The scenes benchmark's ``name`` in a default App with DefaultPlugins; returns its tick (one ``app.step``)."""
    import loom
    from loom.benchmarks.scenes import _scene
    substeps, build = _scene(name)
    app = loom.App(dt=TICK, substeps=substeps, threads=threads).add_plugin(loom.DefaultPlugins)
    build(app)

    def tick(frame: int) -> None:
        app.step(dt=TICK)
    tick.app = app                                                      # type: ignore[attr-defined]
    return tick


def child(scene: str, frames: int, threads: str, launched: float) -> dict:
    """In the configuration's own process: build ``scene``, time ``frames`` ticks one by one, return the record's
    numbers (``launched``: the process's launch, ``time.time()``)."""
    count: str | int = threads if threads == "auto" else int(threads)
    tick = _capeflag(count) if scene == "capeflag" else _loom_scene(scene, count)
    times = np.empty(frames)
    first_done = 0.0
    for f in range(frames):
        t0 = time.perf_counter()
        tick(f)
        times[f] = time.perf_counter() - t0
        if f == 0:
            first_done = time.time()
    app = tick.app                                                      # type: ignore[attr-defined]
    threads_end = app.threads if app.tuner is None else f"auto:{app.tuner.current}"
    app.close()
    return {"first_frame_s": round(first_done - launched, 3), "times": times.tolist(), "threads": threads_end}


_CHILD = ("import json, sys; from loom.benchmarks import hitches; "
          "print(json.dumps(hitches.child(sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4]))))")


def run(scene: str, *, cache: str, load: str, frames: int, threads: str = "auto") -> dict:
    """One configuration in its own process (module docstring); returns its JSON record."""
    if scene not in SCENES:
        raise ValueError(f"hitches scene = {scene!r}: expected one of {', '.join(SCENES)}")
    env = {**os.environ, "SDL_VIDEODRIVER": "offscreen", "SDL_AUDIODRIVER": "dummy"}
    with tempfile.TemporaryDirectory(prefix="loom-hitches-") as empty:
        if cache == "cold":
            env["NUMBA_CACHE_DIR"] = empty
        else:                                                           # fill the cache outside the timed run
            _launch(scene, min(frames, WARM_UP_FRAMES), threads, env)
        with background_load(1 if load == "busy" else 0):
            loadavg = os.getloadavg()[0]
            out = _launch(scene, frames, threads, env)
    times = 1000.0 * np.asarray(out["times"])
    median = float(np.median(times))
    later = times[3:] if times.size > 3 else times[:0]
    goal = COLD_GOAL_MS if cache == "cold" else max(WARM_GOAL_MS, 3.0 * median)
    worst = sorted(range(1, times.size), key=lambda k: -times[k])[:5]
    return {"scene": scene, "cache": cache, "load": load, "frames": frames, "threads": out["threads"],
            "first_frame_s": out["first_frame_s"], "first_step_ms": round(float(times[0]), 1),
            "median_ms": round(median, 3), "p99_ms": round(float(np.percentile(times, 99)), 3),
            "max_ms": round(float(later.max()), 2) if later.size else None,
            "max_frame": int(3 + np.argmax(later)) if later.size else None,
            "over_2x_median": int((later > 2.0 * median).sum()), "over_goal": int((later > goal).sum()),
            "goal_ms": round(goal, 2), "worst": [[k, round(float(times[k]), 2)] for k in worst],
            "loadavg": round(loadavg, 2)}


def _launch(scene: str, frames: int, threads: str, env: dict) -> dict:
    """Run ``child`` in a fresh Python process; its record, or SystemExit with the end of its stderr."""
    command = [sys.executable, "-c", _CHILD, scene, str(frames), threads, repr(time.time())]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"hitches: {scene} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m loom.benchmarks hitches", description=__doc__.splitlines()[0])
    p.add_argument("--scene", nargs="+", choices=SCENES, default=list(SCENES))
    p.add_argument("--cache", nargs="+", choices=("warm", "cold"), default=["warm", "cold"])
    p.add_argument("--load", nargs="+", choices=("idle", "busy"), default=["idle", "busy"])
    p.add_argument("--frames", type=int, default=1200)
    p.add_argument("--threads", default="auto", help="the App's threads: auto (default, a player's) or 1 … cores")
    args = p.parse_args(argv)
    if args.frames < 4:
        p.error(f"--frames {args.frames}: must be >= 4")
    if args.threads != "auto" and not (args.threads.isdigit() and int(args.threads) >= 1):
        p.error(f"--threads {args.threads!r}: auto or a whole number >= 1")
    for scene in args.scene:
        for cache in args.cache:
            for load in args.load:
                print(json.dumps(run(scene, cache=cache, load=load, frames=args.frames, threads=args.threads)),
                      flush=True)
