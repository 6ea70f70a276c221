"""Stiffness benchmark: cost against stretch, per scene and solver setting — not throughput.

Real woven cotton stretches 1–3 % under its own weight; a setting that is fast but stretches like
rubber is wrong, not fast. For each scene and each setting (substeps × sweeps, optionally Provot's
deformation limit on the xpbd cloth) this runs the scene through the real App and prints one JSON line: the worst and 99th-percentile
stretch-link strain over every step of the run (``worst_pct``, ``p99_pct``), the worst over the last
``REST_STEPS`` (``rest_pct``: the cloth at rest), the deepest penetration of a collider beyond its
margin (``penetration_mm``) and the cost, ms per step on the threads asked for (without the time of the
benchmark's own strain measurements inside the step). A last line per scene
names the cheapest setting whose worst strain stays ≤ 2 % (``cheapest_2pct``).

Scenes (``SCENES``), all at dt = 1/60 s:
- ``hang``: a 64×64, 1 m cotton sheet released flat (horizontal, from rest) pinned at the two corners of one edge
  (Provot 1995 fig. 1's test): it falls, swings and comes to hang (until issue 44 it started hanging in its rest
  shape, already at equilibrium with tethers: 0.0 % said nothing);
- ``sphere``: a 64×64, 1 m sheet dropped 0.1 m onto a fixed ball of radius 0.3 m, nothing pinned;
- ``table``: the drape game (1.6 m tablecloth, round table, ball, self-collision), n = 64;
- ``pushed``: a 64×64 sheet of the sheet benchmark's material hanging in its rest shape from its top corners, with
  tethers, a 0.25 m ball moving 0.15 m into it;
- ``cape``: the cape game's scripted run; strain reported separately inside the headwind zone
  (``wind_worst_pct``) and elsewhere.

A setting is ``SxI`` (S substeps, I sweeps per substep, the cloth's own options otherwise: yarns on, the material's
stretch limit) followed by any of: ``g`` plain Gauss–Seidel sweeps (``Cloth.yarns`` off), ``u`` no stretch limit
(``ClothMaterial.stretch_limit=None``), ``S<pct>`` a stretch limit of pct %, ``L<pct>`` Provot's limit on stretch and
shear links (``strain_limit``), ``K<α>`` shear compliance α [m/N], ``t`` no tethers (``Cloth.tethers`` off).
``16x1`` is the default cloth; ``16x2guK0.001`` is Loom's older cloth, without yarns (plain sweeps, no limit,
stiff shear, two sweeps).

Besides the strain a player sees (after every system of the step), each record gives the strain the solve and the
collisions leave, after the second pass of the yarns and before the stretch limit runs (``pre_limit_worst_pct``,
``pre_limit_p99_pct``, at each step's last substep) and the limit's work (``limit_passes``: link checks per limited link per substep, 1.0 = one check each):
what the solver does and what the limit catches. The summary line names the cheapest setting with worst strain ≤ 2 %
both after the limit (``cheapest_2pct``) and before it (``cheapest_2pct_before_limit``).

``yardstick_ms``: the machine's speed around each run (``benchmarks/yardstick.py``, as in the scenes benchmark):
compare ``ms_per_step`` across runs made on a VM in different phases by their ratio to it.

``--solver vbd`` runs the same scenes with Vertex Block Descent in XPBD's place (benchmarks/vbd.py: links
only, ``--vbd-stiffness`` [N/m] for inextensible links, ``--vbd-rho`` its Chebyshev acceleration).

Run: python -m loom.benchmarks stiffness [--scene sphere table] [--setting 16x2 64x1 16x2gu ...] [--n 64]
     [--threads 1] [--solver xpbd|vbd] [--vbd-stiffness 1e4] [--vbd-rho 0]
"""
from __future__ import annotations

import argparse
import json
import math
import re
import time
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from loom.benchmarks import vbd, yardstick
from loom.components import STRETCH, Cloth, ClothMaterial, Collider, Pin, Sphere, Transform, Wind
from loom.engine import App, Stage, mesh
from loom.systems import DefaultPlugins
from loom.systems.sets import ClothSet
from loom.systems.shared.distance_limits import DeformationLimits

REST_STEPS = 30
"""The last steps of a run, whose worst strain is the strain at rest."""
SETTINGS = ("16x1", "8x1", "8x2", "16x2", "32x1", "16x1u", "16x1g", "16x2guK0.001", "32x1guK0.001",
            "64x1guK0.001")
"""Default settings swept (``parse_setting``): the default cloth (16 × 1) and cheaper or dearer, without its limit,
without yarns, and Loom's older cloth (plain sweeps, no limit, stiff shear; 16 × 2 was its default) at
16 × 2, 32 × 1 and 64 × 1."""
SOLVERS = ("xpbd", "vbd")
"""``--solver``: Loom's XPBD, or Vertex Block Descent in its place (benchmarks/vbd.py)."""


def _sheet(n: int, size: float, centre: tuple[float, float, float], plane: str) -> mesh.Mesh:
    return mesh.grid(n, n, size, size, center=centre, plane=plane)


def hang(app: App, n: int) -> Callable[[int], None]:
    """A 1 m cotton sheet released flat at y = 0 from rest, pinned at the corners of its far edge: it swings down."""
    sheet = _sheet(n, 1.0, (0.0, 0.0, 0.0), "xz")
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
    drape.build_scene(app, n=n, yarns=True)
    return lambda step: None


def pushed(app: App, n: int) -> Callable[[int], None]:
    """The sheet benchmark's material, hanging in its rest shape from its top corners; a 0.25 m ball starts just
    behind it and moves 0.15 m into it."""
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


_SETTING = re.compile(r"^(\d+)x(\d+)((?:[gut]|[SLK][0-9.eE+-]+)*)$")
_OPTION = re.compile(r"[gut]|[SLK][0-9.eE+-]+")


class Setting(NamedTuple):
    """A parsed ``--setting`` (``parse_setting``)."""

    substeps: int
    iterations: int
    strain_limit: float | None
    """Provot's limit on stretch and shear links [-] (``L``), or None."""
    yarns: bool = True
    """False: plain Gauss–Seidel sweeps (``g``)."""
    stretch_limit: float | None | str = "material"
    """The stretch limit [-] (``S``), None (``u``), or "material": the cloth's own."""
    shear_compliance: float | None = None
    """Shear compliance [m/N] (``K``), or None: the cloth's own."""
    tethers: bool = True
    """False: no tethers (``t``), whatever the cloth's own ``tethers``."""


def parse_setting(setting: str) -> Setting:
    """``"16x2"`` → Setting(16, 2, None); ``"16x2L1.5"`` → strain limit 0.015; ``"16x2guK0.001"`` → plain sweeps, no
    stretch limit, shear compliance 1e-3 m/N. ValueError naming the text otherwise."""
    try:
        match = _SETTING.match(setting)
        if match is None:
            raise ValueError
        values: dict = {}
        for option in _OPTION.findall(match.group(3)):
            if option == "g":
                values["yarns"] = False
            elif option == "u":
                values["stretch_limit"] = None
            elif option == "t":
                values["tethers"] = False
            else:
                number = float(option[1:])
                if not (math.isfinite(number) and 0.0 <= number):
                    raise ValueError
                key = {"S": "stretch_limit", "L": "strain_limit", "K": "shear_compliance"}[option[0]]
                values[key] = number / 100.0 if option[0] in "SL" else number
        parsed = Setting(int(match.group(1)), int(match.group(2)), values.pop("strain_limit", None), **values)
        if parsed.substeps < 1 or parsed.iterations < 1 or (parsed.strain_limit is not None
                                                             and parsed.strain_limit >= 10):
            raise ValueError
    except ValueError:
        raise ValueError(f"setting {setting!r}: expected substeps x sweeps, then any of g (plain sweeps), u (no "
                         f"stretch limit), t (no tethers), S<pct>, L<pct>, K<shear compliance>, e.g. 16x2, 16x2L1 or "
                         f"16x2guK0.001") from None
    return parsed


def _configure(cloth: Cloth, setting: Setting) -> None:
    """Apply ``setting``'s sweeps and options to ``cloth``."""
    cloth.iterations = setting.iterations
    cloth.yarns = setting.yarns
    if not setting.tethers:
        cloth.tethers = False
    changes: dict = {}
    if setting.strain_limit is not None:
        changes["strain_limit"] = setting.strain_limit
    if setting.stretch_limit != "material":
        changes["stretch_limit"] = setting.stretch_limit
    if setting.shear_compliance is not None:
        changes["shear_compliance"] = setting.shear_compliance
    if changes:
        cloth.material = cloth.material.replace(**changes)


class _BeforeLimit:
    """Systems around the stretch limit: the strain each step's last substep leaves before it, and its work.

    They run inside the timed steps, so they time themselves (``spent`` [s]) and ``run`` takes that out of the
    step's cost: measuring every link's strain is a sizeable share of a large cloth's step."""

    def __init__(self, app: App) -> None:
        self.strains: list[np.ndarray] = []
        self.passes: list[float] = []
        self.spent = 0.0
        app.add_system(self.measure, Stage.SUBSTEP, after="settle_yarns", before="limit_links")
        app.add_system(self.count, Stage.SUBSTEP, after=ClothSet.SETTLE, before=ClothSet.UPDATE)

    def measure(self, app: App, h: float) -> None:
        start = time.perf_counter()
        if app.clock.substep_index == app.clock.substeps - 1:
            self.strains.append(np.concatenate([c.strain(STRETCH) for _, c in app.query(Cloth)]))
        self.spent += time.perf_counter() - start

    def count(self, app: App, h: float) -> None:
        start = time.perf_counter()
        limits = app.resources.get(DeformationLimits)
        for _, cloth in app.query(Cloth):
            limit = None if limits is None else limits.of(cloth)
            if limit is not None:
                self.passes.append(limit.passes)
        self.spent += time.perf_counter() - start


def run(scene: str, setting: str, *, n: int, threads: int, steps: int | None = None, solver: str = "xpbd",
        vbd_stiffness: float = vbd.STIFFNESS, vbd_rho: float = 0.0) -> dict:
    """Run ``scene`` under ``setting`` (``parse_setting``) for ``steps`` (None: the scene's own) with ``solver``
    (xpbd, or vbd: ``vbd.use_vbd`` with ``vbd_stiffness`` and ``vbd_rho``); return the JSON record."""
    chosen = parse_setting(setting)
    build, scene_steps = SCENES[scene]
    steps = scene_steps if steps is None else max(steps, REST_STEPS + 2)
    app = App(dt=1 / 60, substeps=chosen.substeps, threads=threads)
    app.add_plugin(DefaultPlugins)
    if solver == "vbd":
        vbd.use_vbd(app, stiffness=vbd_stiffness, rho=vbd_rho)
    elif solver != "xpbd":
        raise ValueError(f"solver = {solver!r}: expected one of {', '.join(SOLVERS)}")
    drive = build(app, n)
    for _, cloth in app.query(Cloth):
        _configure(cloth, chosen)
    before_limit = _BeforeLimit(app)
    drive(0)
    app.step(1)                                     # compile or load kernels outside the timer
    before_limit.strains.clear()
    strains: list[np.ndarray] = []
    wind: list[np.ndarray] = []
    rest = 0.0
    penetration = 0.0
    elapsed = 0.0
    for step in range(1, steps):
        drive(step)
        start, measuring = time.perf_counter(), before_limit.spent
        app.step(1)
        elapsed += time.perf_counter() - start - (before_limit.spent - measuring)
        strain = np.concatenate([c.strain(STRETCH) for _, c in app.query(Cloth)])
        blowing = any(w.active and np.linalg.norm(w.velocity) > 0 for _, w in app.query(Wind))
        (wind if blowing else strains).append(strain)
        if step >= steps - REST_STEPS:
            rest = max(rest, float(strain.max()))
        penetration = max(penetration, _penetration(app))
    nan = any(not np.isfinite(c.x).all() for _, c in app.query(Cloth))
    app.close()
    calm = np.concatenate(strains) if strains else np.zeros(1)
    pre = np.concatenate(before_limit.strains) if before_limit.strains else np.zeros(1)
    stretch_limit = cloth.material.stretch_limit
    record = {"scene": scene, "n": n, "setting": setting, "solver": solver, "substeps": chosen.substeps,
              "iterations": chosen.iterations, "yarns": chosen.yarns, "stretch_limit": stretch_limit,
              "strain_limit": chosen.strain_limit, "shear_compliance": cloth.material.shear_compliance,
              "threads": threads, "steps": steps - 1, "ms_per_step": round(1000 * elapsed / (steps - 1), 3),
              "worst_pct": round(100 * float(calm.max()), 3), "p99_pct": round(100 * float(np.percentile(calm, 99)), 3),
              "rest_pct": round(100 * rest, 3), "pre_limit_worst_pct": round(100 * float(pre.max()), 3),
              "pre_limit_p99_pct": round(100 * float(np.percentile(pre, 99)), 3),
              "limit_passes": round(float(np.mean(before_limit.passes)), 3) if before_limit.passes else 0.0,
              "penetration_mm": round(1000 * penetration, 2), "nan": nan}
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
            before = yardstick.measure()
            record = run(scene, setting, n=args.n, threads=args.threads, steps=args.steps, solver=args.solver,
                         vbd_stiffness=args.vbd_stiffness, vbd_rho=args.vbd_rho)
            record["yardstick_ms"] = round(0.5 * (before + yardstick.measure()), 3)   # the machine's speed then
            records.append(record)
            print(json.dumps(record), flush=True)
        summary: dict = {"scene": scene}
        for key, worst in (("cheapest_2pct", "worst_pct"), ("cheapest_2pct_before_limit", "pre_limit_worst_pct")):
            ok = [r for r in records if r[worst] <= 2.0 and r["worst_pct"] <= 2.0 and not r["nan"]]
            best = min(ok, key=lambda r: r["ms_per_step"]) if ok else None
            summary[key] = best["setting"] if best else None
            summary[key.replace("cheapest", "ms_per_step")] = best["ms_per_step"] if best else None
        print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
