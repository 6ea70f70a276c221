"""Stiffness benchmark: cost against stretch, per scene and solver setting — not throughput.

Real woven cotton stretches 1–3 % under its own weight; a setting that is fast but stretches like
rubber is wrong, not fast. For each scene and each setting (substeps × sweeps, optionally Provot's
deformation limit on the xpbd cloth) this runs the scene through the real App and prints one JSON line: the worst and 99th-percentile
stretch-link strain over every step of the run (``worst_pct``, ``p99_pct``), the worst over the last
``REST_STEPS`` (``rest_pct``: the cloth at rest), the deepest penetration of a collider beyond its
margin (``penetration_mm``) and the cost, ms per step on the threads asked for. A last line per scene
names the cheapest setting whose worst strain stays ≤ 2 % (``cheapest_2pct``).

Scenes (``SCENES``), all at dt = 1/60 s:
- ``hang``: a 64×64, 1 m cotton sheet pinned at its two top corners (Provot 1995 fig. 1's test);
- ``sphere``: a 64×64, 1 m sheet dropped 0.1 m onto a fixed ball of radius 0.3 m, nothing pinned;
- ``table``: the drape game (1.6 m tablecloth, round table, ball, self-collision), n = 64;
- ``pushed``: the sheet benchmark's pinned 64×64 sheet with tethers, a 0.25 m ball moving 0.15 m into it;
- ``cape``: the cape game's scripted run; strain reported separately inside the headwind zone
  (``wind_worst_pct``) and elsewhere.

A setting is ``SxI`` (S substeps, I sweeps per substep) or ``SxIL<pct>`` (the same with
``ClothMaterial(strain_limit=pct/100)``: Provot's limit, ``16x2L1`` for 1 %).

``--solver vbd`` runs the same scenes with Vertex Block Descent in XPBD's place (benchmarks/vbd.py: links
only, ``--vbd-stiffness`` [N/m] for inextensible links, ``--vbd-rho`` its Chebyshev acceleration).

Run: python -m loom.benchmarks stiffness [--scene sphere table] [--setting 16x2 64x1 16x2L2 ...] [--n 64]
     [--threads 1] [--solver xpbd|vbd] [--vbd-stiffness 1e4] [--vbd-rho 0]
"""
from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable

import numpy as np

from loom.benchmarks import vbd
from loom.components import STRETCH, Cloth, ClothMaterial, Collider, Pin, Sphere, Transform, Wind
from loom.engine import App, mesh
from loom.systems import DefaultPlugins

REST_STEPS = 30
"""The last steps of a run, whose worst strain is the strain at rest."""
SETTINGS = ("16x2", "32x1", "64x1", "128x1", "16x2L2", "32x1L2")
"""Default settings swept: substeps × sweeps per substep (the default is 16 × 2), L: Provot's limit [%]."""
SOLVERS = ("xpbd", "vbd")
"""``--solver``: Loom's XPBD, or Vertex Block Descent in its place (benchmarks/vbd.py)."""


def _sheet(n: int, size: float, centre: tuple[float, float, float], plane: str) -> mesh.Mesh:
    return mesh.grid(n, n, size, size, center=centre, plane=plane)


def hang(app: App, n: int) -> Callable[[int], None]:
    """A 1 m cotton sheet hanging from its two top corners."""
    sheet = _sheet(n, 1.0, (0.0, 0.0, 0.0), "xy")
    app.spawn(Cloth.from_mesh(sheet, "cotton"), Pin.corners(sheet, "top"))
    return lambda step: None


def sphere(app: App, n: int) -> Callable[[int], None]:
    """A 1 m sheet 0.1 m above a fixed ball of radius 0.3 m (its top at y = 0.3 m); nothing pinned."""
    app.spawn(Collider(Sphere(0.3), friction=0.6), Transform(position=(0.0, 0.0, 0.0)))
    sheet = _sheet(n, 1.0, (0.0, 0.4, 0.0), "xz")
    spacing = 1.0 / (n - 1)
    app.spawn(Cloth.from_mesh(sheet, "cotton", thickness=min(0.01, spacing / 2)))
    return lambda step: None


def table(app: App, n: int) -> Callable[[int], None]:
    """The drape game's scene (round table, ball, self-colliding tablecloth)."""
    from loom.games import drape
    drape.build_scene(app, n=n)
    return lambda step: None


def pushed(app: App, n: int) -> Callable[[int], None]:
    """The sheet benchmark's pinned sheet; a 0.25 m ball starts just behind it and moves 0.15 m into it."""
    sheet = _sheet(n, 1.0, (0.0, 0.0, 0.0), "xy")
    material = ClothMaterial(density=0.1, stretch_compliance=0.0, damping=-math.log(0.99) * 60.0)
    app.spawn(Cloth.from_mesh(sheet, material), Pin.corners(sheet, "top"))
    ball = Transform(position=(0.0, -0.2, -0.25 - 0.011))
    app.spawn(Collider(Sphere(0.25), friction=0.5), ball)

    def drive(step: int) -> None:
        # settle 60 steps, push 0.15 m over 60 steps (0.15 m/s), hold
        t = min(max(step - 60, 0), 60) / 60.0
        ball.position = (0.0, -0.2, -0.261 + 0.15 * t)
    return drive


def cape(app: App, n: int) -> Callable[[int], None]:
    """The cape game's scripted run (headwind zone at 11 m ≤ x ≤ 15 m)."""
    from loom.games import cape as game
    game.build_scene(app)
    return lambda step: None


SCENES: dict[str, tuple[Callable[[App, int], Callable[[int], None]], int]] = {
    "hang": (hang, 240), "sphere": (sphere, 180), "table": (table, 240), "pushed": (pushed, 180),
    "cape": (cape, 570)}
"""Scene name → (builder, steps)."""


def _penetration(app: App) -> float:
    """Deepest particle inside a sphere collider beyond its margin and the cloth's thickness [m]."""
    deepest = 0.0
    for _, col, tr in app.query(Collider, Transform):
        if not isinstance(col.shape, Sphere):
            continue
        for _, cloth in app.query(Cloth):
            d = np.linalg.norm(cloth.x - tr.position, axis=1)
            reach = col.shape.radius + col.thickness + cloth.material.thickness
            deepest = max(deepest, float((reach - d).max()) - cloth.material.thickness)
    return max(deepest, 0.0)


def parse_setting(setting: str) -> tuple[int, int, float | None]:
    """``"16x2"`` → (16, 2, None); ``"16x2L1.5"`` → (16, 2, 0.015). ValueError naming the text otherwise."""
    head, _, limit = setting.partition("L")
    parts = head.split("x")
    try:
        substeps, iterations = int(parts[0]), int(parts[1])
        strain_limit = float(limit) / 100.0 if limit else None
        if len(parts) != 2 or substeps < 1 or iterations < 1 or (strain_limit is not None and not
                                                                     0.0 <= strain_limit < 10.0):
            raise ValueError
    except (ValueError, IndexError):
        raise ValueError(f"setting {setting!r}: expected substeps x sweeps with an optional limit in %, "
                         f"e.g. 16x2 or 16x2L1") from None
    return substeps, iterations, strain_limit


def run(scene: str, setting: str, *, n: int, threads: int, steps: int | None = None, solver: str = "xpbd",
        vbd_stiffness: float = vbd.STIFFNESS, vbd_rho: float = 0.0) -> dict:
    """Run ``scene`` under ``setting`` (``parse_setting``) for ``steps`` (None: the scene's own) with ``solver``
    (xpbd, or vbd: ``vbd.use_vbd`` with ``vbd_stiffness`` and ``vbd_rho``); return the JSON record."""
    substeps, iterations, strain_limit = parse_setting(setting)
    build, scene_steps = SCENES[scene]
    steps = scene_steps if steps is None else max(steps, REST_STEPS + 2)
    app = App(dt=1 / 60, substeps=substeps, threads=threads)
    app.add_plugin(DefaultPlugins)
    if solver == "vbd":
        vbd.use_vbd(app, stiffness=vbd_stiffness, rho=vbd_rho)
    elif solver != "xpbd":
        raise ValueError(f"solver = {solver!r}: expected one of {', '.join(SOLVERS)}")
    drive = build(app, n)
    for _, cloth in app.query(Cloth):
        cloth.iterations = iterations
        if strain_limit is not None:
            cloth.material = cloth.material.replace(strain_limit=strain_limit)
    drive(0)
    app.step(1)                                     # compile or load kernels outside the timer
    strains: list[np.ndarray] = []
    wind: list[np.ndarray] = []
    rest = 0.0
    penetration = 0.0
    elapsed = 0.0
    for step in range(1, steps):
        drive(step)
        start = time.perf_counter()
        app.step(1)
        elapsed += time.perf_counter() - start
        strain = np.concatenate([c.strain(STRETCH) for _, c in app.query(Cloth)])
        blowing = any(w.active and np.linalg.norm(w.velocity) > 0 for _, w in app.query(Wind))
        (wind if blowing else strains).append(strain)
        if step >= steps - REST_STEPS:
            rest = max(rest, float(strain.max()))
        penetration = max(penetration, _penetration(app))
    nan = any(not np.isfinite(c.x).all() for _, c in app.query(Cloth))
    app.close()
    calm = np.concatenate(strains) if strains else np.zeros(1)
    record = {"scene": scene, "n": n, "setting": setting, "solver": solver, "substeps": substeps, "iterations": iterations,
              "strain_limit": strain_limit, "threads": threads, "steps": steps - 1,
              "ms_per_step": round(1000 * elapsed / (steps - 1), 3),
              "worst_pct": round(100 * float(calm.max()), 3), "p99_pct": round(100 * float(np.percentile(calm, 99)), 3),
              "rest_pct": round(100 * rest, 3), "penetration_mm": round(1000 * penetration, 2), "nan": nan}
    if solver == "vbd":
        record.update(vbd_stiffness=vbd_stiffness, vbd_rho=vbd_rho)
    if wind:
        blown = np.concatenate(wind)
        record["wind_worst_pct"] = round(100 * float(blown.max()), 3)
        record["wind_p99_pct"] = round(100 * float(np.percentile(blown, 99)), 3)
    return record


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m loom.benchmarks stiffness", description=__doc__.splitlines()[0])
    p.add_argument("--scene", nargs="+", choices=sorted(SCENES), default=list(SCENES))
    p.add_argument("--setting", nargs="+", default=list(SETTINGS), help="substeps x sweeps, e.g. 16x2")
    p.add_argument("--n", type=int, default=64, help="particles per side (hang, sphere, table, pushed)")
    p.add_argument("--threads", type=int, choices=(1, 2), default=1)
    p.add_argument("--steps", type=int, default=None, help="steps per run (default: each scene's own)")
    p.add_argument("--solver", choices=SOLVERS, default="xpbd", help="vbd: Vertex Block Descent (benchmarks/vbd.py)")
    p.add_argument("--vbd-stiffness", type=float, default=vbd.STIFFNESS, help="VBD: inextensible links' k [N/m]")
    p.add_argument("--vbd-rho", type=float, default=0.0, help="VBD: Chebyshev rho in [0, 1), 0 off")
    args = p.parse_args(argv)
    try:
        vbd.VBDSolver(args.vbd_stiffness, args.vbd_rho)
    except ValueError as e:
        p.error(str(e))
    if args.n < 4:
        p.error(f"--n {args.n}: a sheet needs at least 4 particles per side")
    for setting in args.setting:
        try:
            parse_setting(setting)
        except ValueError as e:
            p.error(f"--setting: {e}")
    for scene in args.scene:
        records = []
        for setting in args.setting:
            record = run(scene, setting, n=args.n, threads=args.threads, steps=args.steps, solver=args.solver,
                         vbd_stiffness=args.vbd_stiffness, vbd_rho=args.vbd_rho)
            records.append(record)
            print(json.dumps(record), flush=True)
        ok = [r for r in records if r["worst_pct"] <= 2.0 and not r["nan"]]
        best = min(ok, key=lambda r: r["ms_per_step"]) if ok else None
        print(json.dumps({"scene": scene, "cheapest_2pct": best["setting"] if best else None,
                          "ms_per_step": best["ms_per_step"] if best else None}), flush=True)


if __name__ == "__main__":
    main()
