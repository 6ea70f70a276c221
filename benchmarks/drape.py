"""Drape benchmark: the drape game's scene (tablecloth on yarns, round table, ball, self-collision) per n.

Prints one JSON line per n: particles, steps, steps_per_s, sim_ms_per_step and the per-system
breakdown in ms per step (constraints, self_collision, environment, integration, pins, other),
and how many times the self-collision pair list was built (``list_builds``; the system runs once per substep).

Run: python -m loom.benchmarks drape --n 64 128 [--steps 120] [--threads 1|2] [--substeps 8]
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

from loom.benchmarks.stretch import stretch_over
from loom.engine import App
from loom.games import drape
from loom.systems import DefaultPlugins
from loom.systems.collision.self_collision import SelfCollisionBuffers

GROUPS = {"solve_constraints": "constraints", "settle_yarns": "constraints", "limit_links": "constraints",
          "collide_self": "self_collision",
          "collide_environment": "environment", "gather_colliders": "environment",
          "predict_positions": "integration", "update_velocities": "integration",
          "prepare_pins": "pins", "pin_particles": "pins"}

STRETCH_FRAMES = 30
"""Steps after the timed ones whose stretch is sampled (worst and p99 in the record)."""


def run(n: int, *, steps: int, threads: int, substeps: int) -> dict:
    app = App(dt=1 / 60, substeps=substeps, threads=threads)
    app.add_plugin(DefaultPlugins)
    cloth = drape.build_scene(app, n=n)
    start = time.perf_counter()
    app.step(1)
    warmup = time.perf_counter() - start
    app.profiling = True
    builds = int(app.resource(SelfCollisionBuffers).builds[0])
    start = time.perf_counter()
    app.step(steps)
    wall = time.perf_counter() - start
    breakdown: dict[str, float] = {}
    for name, seconds in app.system_seconds.items():
        group = GROUPS.get(name, "other")
        breakdown[group] = breakdown.get(group, 0.0) + seconds
    app.profiling = False
    stretch = stretch_over(app, STRETCH_FRAMES)          # after the timed steps, outside the timer
    record = {
        "scene": "drape", "n": n, "particles": cloth.particle_count, "threads": threads, "substeps": substeps,
        "steps": steps, "wall_s": round(wall, 3), "steps_per_s": round(steps / wall, 2),
        "sim_ms_per_step": round(1000 * wall / steps, 3),
        "ms_per_step": {k: round(1000 * v / steps, 3) for k, v in sorted(breakdown.items())},
        **stretch,
        "list_builds": int(app.resource(SelfCollisionBuffers).builds[0]) - builds,
        "warmup_s": round(warmup, 3), "nan": bool(not np.isfinite(cloth.x).all()),
    }
    app.close()
    return record


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m loom.benchmarks drape", description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, nargs="+", default=[64, 128])
    p.add_argument("--steps", type=int, default=120)
    p.add_argument("--threads", type=int, choices=(1, 2), default=2)
    p.add_argument("--substeps", type=int, default=drape.SUBSTEPS)
    args = p.parse_args(argv)
    for n in args.n:
        if n < 2:
            p.error(f"--n {n}: a cloth needs at least 2 particles per side")
        print(json.dumps(run(n, steps=args.steps, threads=args.threads, substeps=args.substeps)), flush=True)
