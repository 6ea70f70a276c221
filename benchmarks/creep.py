"""Creep benchmark: does a tablecloth stay on the table? The drape game's scene, its cloth's drift over time.

A tablecloth that rests on a table must stay put: real cloth does, held by friction (docs/models.md, "Creep on a
table": what made Loom's creep and what holds it). This runs the drape game's scene
(``drape.build_scene``: round table, ball, self-colliding tablecloth) for ``--seconds`` of game time and prints one
JSON line every ``--every`` seconds: the time [s], how far the cloth's centre of mass has moved horizontally since
it settled (``--settle`` s after the drop) [cm], the 90th percentile of its particles' speeds [m/s] (a cloth at
rest is at about 0.002), the worst and p99 stretch-edge strain [%] and the ms per step so far; then a summary line
(``"summary": true``) with the drift at the end, the largest drift, the drift per minute over the run after the
settle, and the steps the guard refused.

``--cloth yarns`` is the game's cloth (yarns, the stiffness benchmark's table scene), ``plain`` Loom's older cloth
(plain sweeps, no stretch limit), ``plain-limit`` plain sweeps with a 2 % stretch limit.

Run: python -m loom.benchmarks creep [--n 48] [--substeps 8] [--seconds 60] [--cloth yarns|plain|plain-limit]
                                     [--settle 8] [--every 10] [--threads 1]
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

from loom.components import STRETCH, Cloth
from loom.engine import App
from loom.games import drape
from loom.systems import DefaultPlugins

CLOTHS = ("yarns", "plain", "plain-limit")
"""``--cloth`` choices (module docstring)."""


def _record(t: float, cloth: Cloth, settled: np.ndarray | None, elapsed: float, steps: int) -> dict:
    centre = cloth.x.mean(axis=0)
    drift = 0.0 if settled is None else float(np.hypot(*(centre - settled)[[0, 2]]))
    strain = cloth.strain(STRETCH)
    return {"t_s": round(t, 3), "drift_cm": round(100.0 * drift, 3),
            "p90_speed_m_s": round(float(np.percentile(np.linalg.norm(cloth.v, axis=1), 90)), 4),
            "stretch_worst_pct": round(100.0 * float(strain.max()), 3),
            "stretch_p99_pct": round(100.0 * float(np.percentile(strain, 99)), 3),
            "ms_per_step": round(1000.0 * elapsed / max(steps, 1), 3)}


def run(n: int, *, seconds: float, substeps: int, cloth_kind: str, settle: float, every: float,
        threads: int) -> list[dict]:
    """Run the scene and return its records (the per-interval ones, then the summary)."""
    if cloth_kind not in CLOTHS:
        raise ValueError(f"--cloth {cloth_kind!r}: expected one of {', '.join(CLOTHS)}")
    if not (seconds > 0 and 0 <= settle < seconds and every > 0):
        raise ValueError(f"--seconds {seconds}, --settle {settle}, --every {every}: need 0 <= settle < seconds, "
                         "every > 0")
    app = App(dt=1 / 60, substeps=substeps, threads=threads)
    app.add_plugin(DefaultPlugins)
    cloth = drape.build_scene(app, n=n, yarns=cloth_kind == "yarns")
    if cloth_kind == "plain-limit":
        cloth.material = cloth.material.replace(stretch_limit=0.02)
    steps, settle_step, every_steps = round(seconds * 60), round(settle * 60), max(1, round(every * 60))
    records, elapsed, worst = [], 0.0, 0.0
    settled = cloth.x.mean(axis=0).copy() if settle_step == 0 else None
    for step in range(1, steps + 1):
        start = time.perf_counter()
        app.step(1)
        elapsed += time.perf_counter() - start
        if step == settle_step:
            settled = cloth.x.mean(axis=0).copy()
        if step % every_steps == 0 or step == steps:
            record = _record(step / 60, cloth, settled, elapsed, step)
            worst = max(worst, record["drift_cm"])
            records.append(record)
    last = records[-1]
    minutes = (steps - settle_step) / 3600
    records.append({"summary": True, "n": n, "substeps": substeps, "cloth": cloth_kind, "seconds": seconds,
                    "settle_s": settle, "drift_cm": last["drift_cm"], "drift_max_cm": worst,
                    "drift_cm_per_min": round(last["drift_cm"] / minutes, 3) if minutes > 0 else 0.0,
                    "p90_speed_m_s": last["p90_speed_m_s"], "stretch_worst_pct": last["stretch_worst_pct"],
                    "stretch_p99_pct": last["stretch_p99_pct"], "ms_per_step": last["ms_per_step"],
                    "rejected_steps": int(cloth.rejected_steps)})
    app.close()
    return records


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m loom.benchmarks creep", description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=48, help="particles per side of the tablecloth")
    p.add_argument("--substeps", type=int, default=8)
    p.add_argument("--seconds", type=float, default=60.0, help="game time to run [s]")
    p.add_argument("--cloth", choices=CLOTHS, default="yarns")
    p.add_argument("--settle", type=float, default=8.0, help="drift is measured from this time on [s]")
    p.add_argument("--every", type=float, default=10.0, help="a record every this many seconds [s]")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    try:
        records = run(args.n, seconds=args.seconds, substeps=args.substeps, cloth_kind=args.cloth,
                      settle=args.settle, every=args.every, threads=args.threads)
    except ValueError as exc:
        p.error(str(exc))
    for record in records:
        print(json.dumps(record), flush=True)
