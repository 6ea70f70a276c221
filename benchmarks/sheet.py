"""Sheet benchmark: an n×n sheet released flat through the real App and systems, one JSON line per n.

The scene (fixed, so numbers compare across machines and commits): a 1 m × 1 m grid of n×n particles released
flat (horizontal, in the xz plane at y = 0.5 m, from rest), pinned at the two corners of one edge, so it falls
and swings down about them; density 0.1 kg/m², gravity 9.81 m/s², dt = 1/60 s split into ``--substeps``,
velocities × 0.99 per step, structural + shear (both diagonals) + bend (two apart) distance links, structural
compliance 0, ``--iters`` sweeps. (Until issue 44 it started vertical in its rest shape, pinned at the top
corners: with tethers that is already the equilibrium, and its 0.0 % stretch said nothing.)

The naive loop: ``benchmarks/naive_loop.py``, Loom's own algorithm written out again as a plain numba kernel for
this scene alone (structure of arrays, float64, one thread) doing the same work per step (predict, sweeps, tethers,
velocity update) with the same operations, so its positions match the App's bit for bit (``naive_max_dx_m``, 0.0).
It is not a baseline a user would choose (that comparison, at equal stretch, is ``benchmarks/small_steps.py``); it
measures what Loom's systems and kernel layout cost against the same arithmetic written plainly. The App and the
naive kernel start from the same state after the warm-up step and run in turn, in blocks of ``--block`` steps in
one process (the order flips every block), so a busy or drifting machine slows both alike:
- ``steps_per_s`` (the App, ``wall_s`` the sum of its blocks) and ``naive_steps_per_s``;
- ``ratio_to_naive``: the median over the blocks of naive time / App time (> 1: the App is faster);
- ``sweep_ns_per_projection`` / ``naive_sweep_ns_per_projection``: the constraint sweeps of one substep alone
  (the App's kernel on its held arrays against the naive sweep, from the same positions, alternating, the
  fastest of 31 each), ``sweep_ratio`` the naive time over the App's.
Results of past runs: docs/performance.md ("Moved from docstrings"; there under the old names ``ratio_to_plain``,
``plain_*`` and benchmarks/plain_xpbd.py). The naive kernel is always one thread (with --threads 2 the ratio is the
parallel App against it). Its fields are null where it would not do the same work (--sphere, a model other than
xpbd, float32) or with --no-naive.

Stretch: ``stretch_worst_pct`` / ``stretch_p99_pct`` sample the ``STRETCH_FRAMES`` steps after the timed ones;
for xpbd, ``meters`` is the whole run again from the release, untimed, with ``MeterPlugin``
(systems/pipeline/meters.py: warp/weft stretch before the deformation limit at every substep, shear, triangle
areas, the limit's activity).

Run: python -m loom.benchmarks sheet --n 32 64 128 256 --substeps 4 --iters 10 --steps 120 [--tethers]
     [--sphere] [--threads 1|2] [--model xpbd] [--block 10] [--no-naive]
"""
from __future__ import annotations

import argparse
import json
import math
import time

import numba
import numpy as np

from loom.benchmarks.naive_loop import NaiveSheet
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
"""Timed sweeps of one substep, each of the App's kernel and of the naive one (the fastest in the record)."""
HEIGHT = 0.5
"""Height of the flat sheet's plane [m]: its pinned edge hangs from there."""


def build_sheet(app: App, n: int, *, iters: int, tethers: bool, model: str, dt: float, sphere: bool,
                precision: str = "float64", flat: bool = True) -> Cloth:
    """Spawn the benchmark sheet: released ``flat`` (horizontal at y = ``HEIGHT``, pinned at the corners of its far
    edge, z = −0.5 m), or, with ``flat`` False, vertical in its rest shape pinned at its top corners (the yardstick's
    fixed work). With ``sphere`` a 0.25 m ball 0.22 m behind the plane the sheet hangs in, which the swing and the
    hanging sheet press 3 cm into."""
    if flat:
        sheet = mesh.grid(n, n, 1.0, 1.0, center=(0.0, HEIGHT, 0.0), plane="xz")
        hang_z = -0.5                                       # the pinned edge: the sheet hangs in the plane z = −0.5
    else:
        sheet = mesh.grid(n, n, 1.0, 1.0)
        hang_z = 0.0
    material = ClothMaterial(density=0.1, stretch_compliance=0.0, damping=-math.log(0.99) / dt)
    settings = VerletSettings(passes=iters) if model == "verlet" else None          # sweeps per substep
    cloth = Cloth.from_mesh(sheet, material, model=model, settings=settings, iterations=iters, tethers=tethers,
                            precision=precision)
    app.spawn(cloth, Pin.corners(sheet, "top"))
    if sphere:
        app.spawn(Collider(Sphere(0.25), friction=0.5), Transform(position=(0.0, -0.2, hang_z - 0.22)))
    return cloth


def run(n: int, *, substeps: int, iters: int, steps: int, tethers: bool, threads: int, model: str,
        sphere: bool = False, precision: str = "float64", naive: bool = True, block: int = 10) -> dict:
    """Time ``steps`` fixed steps of the n×n sheet after one warm-up step, in blocks of ``block`` steps taken
    in turn with the naive loop where it does the same work; return the JSON record."""
    dt = 1.0 / 60.0
    app = App(dt=dt, substeps=substeps, threads=threads)
    app.add_plugin(DefaultPlugins)
    cloth = build_sheet(app, n, iters=iters, tethers=tethers, model=model, dt=dt, sphere=sphere, precision=precision)
    start = time.perf_counter()
    app.step(1)                                    # compile (or load cached kernels) and first step
    warmup = time.perf_counter() - start
    reference = None
    if naive and model == "xpbd" and not sphere and precision == "float64":
        reference = NaiveSheet.of(app, cloth)      # the same state as the App's after its warm-up step
        reference.step(0)                          # compile (or load) the naive kernel
    app_times, naive_times = _interleaved(app, reference, steps, block)
    wall = sum(app_times)
    constraints = cloth.constraint_count
    final_max_stretch = round(float(cloth.strain(STRETCH).max()), 6)   # at the end of the timed steps
    comparison = _compare(app, cloth, reference, steps, app_times, naive_times, threads)
    stretch = stretch_over(app, STRETCH_FRAMES)          # after the timed steps, outside the timer
    rejected = cloth.rejected_steps
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
        "rejected_steps": rejected,
        "warmup_s": round(warmup, 3),
    }
    app.close()
    if model == "xpbd":
        record["meters"] = metered(n, substeps=substeps, iters=iters, steps=steps, tethers=tethers, threads=threads,
                                   sphere=sphere, precision=precision)
    return record


def metered(n: int, *, substeps: int, iters: int, steps: int, tethers: bool, threads: int, sphere: bool,
            precision: str) -> dict:
    """The same scene run again from the release for 1 + ``steps`` steps, untimed, with ``MeterPlugin``: its
    ``ClothMeters.record()`` (strains [-], areas [-], angles [rad], moves [m], speeds [m/s]) and ``rejected_steps``."""
    from loom.systems.pipeline.meters import MeterPlugin, Meters
    dt = 1.0 / 60.0
    app = App(dt=dt, substeps=substeps, threads=threads)
    app.add_plugin(DefaultPlugins)
    app.add_plugin(MeterPlugin())
    cloth = build_sheet(app, n, iters=iters, tethers=tethers, model="xpbd", dt=dt, sphere=sphere, precision=precision)
    app.step(1 + steps)
    (meters,) = app.resource(Meters).cloths.values()
    record = {key: round(value, 6) if isinstance(value, float) else value for key, value in meters.record().items()}
    record["rejected_steps"] = cloth.rejected_steps
    app.close()
    return record


def _interleaved(app: App, reference: NaiveSheet | None, steps: int, block: int) -> tuple[list[float], list[float]]:
    """Step the App and the naive sheet ``steps`` steps each, in turn, ``block`` at a time (the one that goes
    first alternates); return the wall time of each block, App's and the naive loop's."""
    app_times: list[float] = []
    naive_times: list[float] = []
    done = 0
    while done < steps:
        count = min(block, steps - done)
        runs = [(app.step, app_times)] if reference is None else [(app.step, app_times), (reference.step, naive_times)]
        for stepper, times in runs if len(app_times) % 2 == 0 else runs[::-1]:
            start = time.perf_counter()
            stepper(count)
            times.append(time.perf_counter() - start)
        done += count
    return app_times, naive_times


NAIVE_KEYS = ("naive_steps_per_s", "ratio_to_naive", "naive_max_dx_m", "sweep_ns_per_projection",
              "naive_sweep_ns_per_projection", "sweep_ratio")
"""The record's fields from the naive loop (null without it)."""


def _compare(app: App, cloth: Cloth, reference: NaiveSheet | None, steps: int, app_times: list[float],
             naive_times: list[float], threads: int) -> dict:
    """The naive loop's fields of the record: steps/s, ratio, largest position difference, and the sweeps alone
    (``_sweeps``); all None without it."""
    if reference is None:
        return dict.fromkeys(NAIVE_KEYS)
    ratio = float(np.median(np.array(naive_times) / np.array(app_times)))
    max_dx = float(np.abs(cloth.x - reference.positions()).max())
    sweep_ns, naive_sweep_ns, sweep_ratio = _sweeps(app, cloth, reference, threads)
    return dict(zip(NAIVE_KEYS, (round(steps / sum(naive_times), 2), round(ratio, 3), max_dx, round(sweep_ns, 3),
                                 round(naive_sweep_ns, 3), round(sweep_ratio, 3))))


def _sweeps(app: App, cloth: Cloth, reference: NaiveSheet, threads: int) -> tuple[float, float, float]:
    """One substep's sweeps alone: ns per constraint projection of the App's kernel (the one
    ``solve_constraints`` picks, on the App's held arrays) and of the naive one, from the same positions, in
    turn (the one that goes first alternates), the fastest of ``SWEEP_REPEATS`` each, and their ratio (naive
    over App). The fastest, not the median: on a shared VM any one sweep may lose the core.
    The cloth's positions and multipliers are restored afterwards."""
    data = app.resource(XPBDData).of(cloth)                    # XPBD's multipliers of the cloth
    x0, link_lambda, bend_lambda = cloth.x.copy(), data.link_lambda.copy(), data.bend_lambda.copy()
    held = app.init_resource(ConstraintTables).get(cloth)
    kernel = _sweep_kernel(cloth, threads > 1)
    inv_h2 = 1.0 / (app.clock.h * app.clock.h)

    def ours() -> float:
        cloth.x[:] = x0
        start = time.perf_counter()
        kernel(cloth.iterations, inv_h2, held)
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
                naive_time = theirs()
                app_time = ours()
            else:
                app_time = ours()
                naive_time = theirs()
            pairs.append((app_time, naive_time))
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
                   help="steps per timed block (the App and the naive loop alternate)")
    p.add_argument("--no-naive", dest="naive", action="store_false",
                   help="skip the naive loop (its fields are null)")
    args = p.parse_args(argv)
    if args.block < 1:
        p.error(f"--block {args.block}: at least 1 step per block")
    for n in args.n:
        if n < 2:
            p.error(f"--n {n}: a sheet needs at least 2 particles per side")
        print(json.dumps(run(n, substeps=args.substeps, iters=args.iters, steps=args.steps, tethers=args.tethers,
                             threads=args.threads, model=args.model, sphere=args.sphere,
                             precision=args.precision, naive=args.naive, block=args.block)), flush=True)


if __name__ == "__main__":
    main()
