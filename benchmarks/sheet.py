"""Sheet benchmark: an n×n hanging sheet through the real App and systems, one JSON line per n.

The scene (fixed, so numbers compare across machines and commits): a 1 m × 1 m grid of n×n
particles in the xy plane (y up), top two corners pinned, density 0.1 kg/m², gravity 9.81 m/s²,
dt = 1/60 s split into ``--substeps``, velocities × 0.99 per step, structural + shear (both
diagonals) + bend (two apart) distance links, structural compliance 0, ``--iters`` sweeps.

The yardstick: ``benchmarks/plain_xpbd.py``, a plain numba kernel written for this scene alone (structure of
arrays, float64, one thread) doing the same work per step (predict, sweeps, tethers, velocity update) with the
same operations, so its positions match the App's bit for bit (``plain_max_dx_m``, 0.0). The App and the plain
kernel start from the same state after the warm-up step and run in turn, in blocks of ``--block`` steps in one
process (the order flips every block), so a busy or drifting machine slows both alike:
- ``steps_per_s`` (the App, ``wall_s`` the sum of its blocks) and ``plain_steps_per_s``;
- ``ratio_to_plain``: the median over the blocks of plain time / App time (> 1: the App is faster);
- ``sweep_ns_per_projection`` / ``plain_sweep_ns_per_projection``: the constraint sweeps of one substep alone
  (the App's kernel on its held arrays against the plain sweep, from the same positions, alternating, the
  fastest of 31 each), ``sweep_ratio`` the plain time over the App's.
Results of past runs: docs/performance.md ("Moved from docstrings").
The plain kernel is always one thread (with --threads 2 the ratio is the parallel App against it). Its fields
are null where it would not do the same work (--sphere, a model other than xpbd, float32) or with --no-plain.

Run: python -m loom.benchmarks sheet --n 32 64 128 256 --substeps 4 --iters 10 --steps 120 [--tethers]
     [--sphere] [--threads 1|2] [--model xpbd] [--block 10] [--no-plain]
"""
from __future__ import annotations

import argparse
import json
import math
import time

import numba
import numpy as np

from loom.benchmarks.plain_xpbd import PlainSheet
from loom.benchmarks.stretch import stretch_over
from loom.components import (MODELS, PRECISIONS, STRETCH, Cloth, ClothMaterial, Collider, Pin, Sphere, Transform,
                             VerletSettings)
from loom.engine import App, mesh
from loom.systems import DefaultPlugins
from loom.systems.xpbd.constraints import ConstraintTables, _sweep_kernel
from loom.systems.xpbd.data import XPBDData

STRETCH_FRAMES = 30
"""Steps after the timed ones whose stretch is sampled (worst and p99 in the record)."""
SWEEP_REPEATS = 31
"""Timed sweeps of one substep, each of the App's kernel and of the plain one (the fastest in the record)."""


def build_sheet(app: App, n: int, *, iters: int, tethers: bool, model: str, dt: float, sphere: bool,
                precision: str = "float64") -> Cloth:
    """Spawn the benchmark sheet (and with ``sphere`` a 0.25 m ball pressing 3 cm into it from behind)."""
    sheet = mesh.grid(n, n, 1.0, 1.0)
    material = ClothMaterial(density=0.1, stretch_compliance=0.0, damping=-math.log(0.99) / dt)
    settings = VerletSettings(passes=iters) if model == "verlet" else None          # sweeps per substep
    cloth = Cloth.from_mesh(sheet, material, model=model, settings=settings, iterations=iters, tethers=tethers,
                            precision=precision)
    app.spawn(cloth, Pin.corners(sheet, "top"))
    if sphere:
        app.spawn(Collider(Sphere(0.25), friction=0.5), Transform(position=(0.0, -0.2, -0.22)))
    return cloth


def run(n: int, *, substeps: int, iters: int, steps: int, tethers: bool, threads: int, model: str,
        sphere: bool = False, precision: str = "float64", plain: bool = True, block: int = 10) -> dict:
    """Time ``steps`` fixed steps of the n×n sheet after one warm-up step, in blocks of ``block`` steps taken
    in turn with the plain reference kernel where it does the same work; return the JSON record."""
    dt = 1.0 / 60.0
    app = App(dt=dt, substeps=substeps, threads=threads)
    app.add_plugin(DefaultPlugins)
    cloth = build_sheet(app, n, iters=iters, tethers=tethers, model=model, dt=dt, sphere=sphere, precision=precision)
    start = time.perf_counter()
    app.step(1)                                    # compile (or load cached kernels) and first step
    warmup = time.perf_counter() - start
    reference = None
    if plain and model == "xpbd" and not sphere and precision == "float64":
        reference = PlainSheet.of(app, cloth)      # the same state as the App's after its warm-up step
        reference.step(0)                          # compile (or load) the plain kernel
    app_times, plain_times = _interleaved(app, reference, steps, block)
    wall = sum(app_times)
    constraints = cloth.constraint_count
    final_max_stretch = round(float(cloth.strain(STRETCH).max()), 6)   # at the end of the timed steps
    comparison = _compare(app, cloth, reference, steps, app_times, plain_times, threads)
    stretch = stretch_over(app, STRETCH_FRAMES)          # after the timed steps, outside the timer
    record = {
        "impl": f"loom-{model}-{'parallel' if threads > 1 else 'serial'}",
        "n": n,
        "particles": cloth.particle_count,
        "constraints": constraints,
        "tethers": int(app.resource(XPBDData).of(cloth).tether_anchor.shape[0]) if model == "xpbd" else 0,
        "sphere": sphere,
        "precision": precision,
        "threads": threads,
        "substeps": substeps,
        "iters": iters,
        "steps": steps,
        "wall_s": round(wall, 4),
        "steps_per_s": round(steps / wall, 2),
        "constraint_projections_per_s": round(constraints * iters * substeps * steps / wall),
        **comparison,
        "final_max_stretch": final_max_stretch,
        **stretch,
        "rejected_steps": cloth.rejected_steps,
        "warmup_s": round(warmup, 3),
    }
    app.close()
    return record


def _interleaved(app: App, reference: PlainSheet | None, steps: int, block: int) -> tuple[list[float], list[float]]:
    """Step the App and the plain sheet ``steps`` steps each, in turn, ``block`` at a time (the one that goes
    first alternates); return the wall time of each block, App's and plain's."""
    app_times: list[float] = []
    plain_times: list[float] = []
    done = 0
    while done < steps:
        count = min(block, steps - done)
        runs = [(app.step, app_times)] if reference is None else [(app.step, app_times), (reference.step, plain_times)]
        for stepper, times in runs if len(app_times) % 2 == 0 else runs[::-1]:
            start = time.perf_counter()
            stepper(count)
            times.append(time.perf_counter() - start)
        done += count
    return app_times, plain_times


def _compare(app: App, cloth: Cloth, reference: PlainSheet | None, steps: int, app_times: list[float],
             plain_times: list[float], threads: int) -> dict:
    """The plain fields of the record: steps/s, ratio, largest position difference, and the sweeps alone
    (``_sweeps``); all None without a reference."""
    keys = ("plain_steps_per_s", "ratio_to_plain", "plain_max_dx_m", "sweep_ns_per_projection",
            "plain_sweep_ns_per_projection", "sweep_ratio")
    if reference is None:
        return dict.fromkeys(keys)
    ratio = float(np.median(np.array(plain_times) / np.array(app_times)))
    max_dx = float(np.abs(cloth.x - reference.positions()).max())
    sweep_ns, plain_sweep_ns, sweep_ratio = _sweeps(app, cloth, reference, threads)
    return dict(zip(keys, (round(steps / sum(plain_times), 2), round(ratio, 3), max_dx, round(sweep_ns, 3),
                           round(plain_sweep_ns, 3), round(sweep_ratio, 3))))


def _sweeps(app: App, cloth: Cloth, reference: PlainSheet, threads: int) -> tuple[float, float, float]:
    """One substep's sweeps alone: ns per constraint projection of the App's kernel (the one
    ``solve_constraints`` picks, on the App's held arrays) and of the plain one, from the same positions, in
    turn (the one that goes first alternates), the fastest of ``SWEEP_REPEATS`` each, and their ratio (plain
    over App). The fastest, not the median: on a shared VM any one sweep may lose the core.
    The cloth's positions and multipliers are restored afterwards."""
    data = app.resource(XPBDData).of(cloth)                    # XPBD's multipliers of the cloth
    x0, link_lambda, bend_lambda = cloth.x.copy(), data.link_lambda.copy(), data.bend_lambda.copy()
    held = app.init_resource(ConstraintTables).get(cloth)
    kernel = _sweep_kernel(cloth, threads > 1)
    inv_h2 = 1.0 / (app.clock.h * app.clock.h)
    bend = cloth.material.bend_angle_compliance

    def ours() -> float:
        cloth.x[:] = x0
        start = time.perf_counter()
        kernel(cloth.iterations, inv_h2, bend, held)
        return time.perf_counter() - start

    def theirs() -> float:
        reference.x[:], reference.y[:], reference.z[:] = x0[:, 0], x0[:, 1], x0[:, 2]
        start = time.perf_counter()
        reference.sweep()
        return time.perf_counter() - start

    numba_threads = numba.get_num_threads()
    numba.set_num_threads(threads)
    pairs = []
    try:
        for k in range(SWEEP_REPEATS):
            if k % 2:
                plain_time = theirs()
                app_time = ours()
            else:
                app_time = ours()
                plain_time = theirs()
            pairs.append((app_time, plain_time))
    finally:
        numba.set_num_threads(numba_threads)
        cloth.x[:], data.link_lambda[:], data.bend_lambda[:] = x0, link_lambda, bend_lambda
    fastest = np.array(pairs).min(axis=0)
    per_projection = 1e9 / (cloth.constraint_count * cloth.iterations)
    return per_projection * float(fastest[0]), per_projection * float(fastest[1]), float(fastest[1] / fastest[0])


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m loom.benchmarks sheet", description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, nargs="+", default=[32, 64, 128], help="grid sizes (particles per side)")
    p.add_argument("--substeps", type=int, default=4)
    p.add_argument("--iters", type=int, default=10,
                   help="constraint sweeps per substep (XPBD iterations, Verlet relaxation passes)")
    p.add_argument("--steps", type=int, default=120, help="timed fixed steps of 1/60 s")
    p.add_argument("--tethers", action="store_true", help="long-range attachments to the pinned corners")
    p.add_argument("--sphere", action="store_true", help="a 0.25 m ball pressing 3 cm into the sheet from behind")
    p.add_argument("--threads", type=int, choices=(1, 2), default=1)
    p.add_argument("--model", choices=MODELS, default="xpbd")
    p.add_argument("--precision", choices=PRECISIONS, default="float64", help="particle state storage (xpbd)")
    p.add_argument("--block", type=int, default=10,
                   help="steps per timed block (the App and the plain kernel alternate)")
    p.add_argument("--no-plain", dest="plain", action="store_false",
                   help="skip the plain reference kernel (its fields are null)")
    args = p.parse_args(argv)
    if args.block < 1:
        p.error(f"--block {args.block}: at least 1 step per block")
    for n in args.n:
        if n < 2:
            p.error(f"--n {n}: a sheet needs at least 2 particles per side")
        print(json.dumps(run(n, substeps=args.substeps, iters=args.iters, steps=args.steps, tethers=args.tethers,
                             threads=args.threads, model=args.model, sphere=args.sphere,
                             precision=args.precision, plain=args.plain, block=args.block)), flush=True)


if __name__ == "__main__":
    main()
