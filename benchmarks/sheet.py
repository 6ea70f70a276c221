"""Sheet benchmark: an n×n hanging sheet through the real App and systems, one JSON line per n.

The scene (fixed, so numbers compare across machines and commits): a 1 m × 1 m grid of n×n
particles in the xy plane (y up), top two corners pinned, density 0.1 kg/m², gravity 9.81 m/s²,
dt = 1/60 s split into ``--substeps``, velocities × 0.99 per step, structural + shear (both
diagonals) + bend (two apart) distance links, structural compliance 0, ``--iters`` sweeps.

Run: python -m loom.benchmarks sheet --n 32 64 128 256 --substeps 4 --iters 10 --steps 120 [--tethers]
     [--sphere] [--threads 1|2] [--model xpbd]
"""
from __future__ import annotations

import argparse
import json
import math
import time

from loom.benchmarks.stretch import stretch_over
from loom.components import (MODELS, PRECISIONS, STRETCH, Cloth, ClothMaterial, Collider, Pin, Sphere, Transform,
                             VerletSettings)
from loom.engine import App, mesh
from loom.systems import DefaultPlugins

STRETCH_FRAMES = 30
"""Steps after the timed ones whose stretch is sampled (worst and p99 in the record)."""


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
        sphere: bool = False, precision: str = "float64") -> dict:
    """Time ``steps`` fixed steps of the n×n sheet after one warm-up step; return the JSON record."""
    dt = 1.0 / 60.0
    app = App(dt=dt, substeps=substeps, threads=threads)
    app.add_plugin(DefaultPlugins)
    cloth = build_sheet(app, n, iters=iters, tethers=tethers, model=model, dt=dt, sphere=sphere, precision=precision)
    start = time.perf_counter()
    app.step(1)                                    # compile (or load cached kernels) and first step
    warmup = time.perf_counter() - start
    start = time.perf_counter()
    app.step(steps)
    wall = time.perf_counter() - start
    constraints = cloth.constraint_count
    final_max_stretch = round(float(cloth.strain(STRETCH).max()), 6)   # at the end of the timed steps
    stretch = stretch_over(app, STRETCH_FRAMES)          # after the timed steps, outside the timer
    record = {
        "impl": f"loom-{model}-{'parallel' if threads > 1 else 'serial'}",
        "n": n,
        "particles": cloth.particle_count,
        "constraints": constraints,
        "tethers": int(cloth.tether_anchor.shape[0]),
        "sphere": sphere,
        "precision": precision,
        "threads": threads,
        "substeps": substeps,
        "iters": iters,
        "steps": steps,
        "wall_s": round(wall, 4),
        "steps_per_s": round(steps / wall, 2),
        "constraint_projections_per_s": round(constraints * iters * substeps * steps / wall),
        "final_max_stretch": final_max_stretch,
        **stretch,
        "rejected_steps": cloth.rejected_steps,
        "warmup_s": round(warmup, 3),
    }
    app.close()
    return record


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
    args = p.parse_args(argv)
    for n in args.n:
        if n < 2:
            p.error(f"--n {n}: a sheet needs at least 2 particles per side")
        print(json.dumps(run(n, substeps=args.substeps, iters=args.iters, steps=args.steps, tethers=args.tethers,
                             threads=args.threads, model=args.model, sphere=args.sphere,
                             precision=args.precision)), flush=True)


if __name__ == "__main__":
    main()
