"""Small-step XPBD baseline: the method a user would pick instead of Loom, compared at equal worst stretch.

The baseline is plain XPBD with small steps (Macklin et al. 2019, "Small steps in physics simulation": many
substeps, one iteration each): every substep predicts (v += h·g, x_prev = x, x += h·v), projects every distance
link once, colour by colour (a coloured Gauss–Seidel sweep, Macklin et al. 2016 eq. 18, α̃ = α/h²; stretch, shear
and the distance bending links, all of the cloth's links), then v = (x − x_prev)/h · exp(−damping·h). No yarns,
no tethers, no deformation limit, no App: one numba kernel on one thread, the cloth's own link tables, colours,
masses and compliances.

The comparison (one JSON line per n): a 1 m × 1 m cotton sheet (the ``cotton`` preset), n × n, released flat from
rest and pinned at the two corners of one edge (the sheet benchmark's scene, benchmarks/sheet.py, in cotton), for
``--steps`` steps of 1/60 s (the fall and the first swings). Loom runs it at its defaults (16 substeps, one sweep,
yarns, tethers, the preset's stretch limit) and its worst warp/weft stretch is read *before* the limit, at every
substep (``MeterPlugin``, systems/pipeline/meters.py). The baseline runs the same scene at 16, 32, 64 … substeps,
its worst stretch read at every substep after its sweep (it has no limit), until it is no worse than Loom's, then
bisects between the last two counts (to 1/``REFINE``): the fewest substeps at equal quality (``equal_substeps``).
Both are then timed over the same steps, meters off, in turn (Loom, the baseline, the baseline, Loom, so a machine
whose speed drifts slows both alike): ``loom_ms_per_step`` (the App, every system of a step) and
``baseline_ms_per_step`` (the kernel alone), each the best of its runs, and ``speedup`` = baseline / Loom (> 1:
Loom is faster at equal worst stretch). ``runs`` lists every substep count tried (worst and p99 stretch), and
``baseline_at_loom_substeps`` the baseline at Loom's 16 (with its cost).

Run: python -m loom.benchmarks small_steps [--n 32 64] [--steps 120] [--max-substeps 4096]
"""
from __future__ import annotations

import argparse
import json
import math
import time

import numba
import numpy as np

from loom.components import STRETCH, Cloth, Gravity, Pin
from loom.engine import App, mesh
from loom.systems import DefaultPlugins

LOOM_SUBSTEPS = 16
"""Loom's default substeps (``App``)."""
REFINE = 16
"""The search for equal quality stops when its bracket is within 1/REFINE of its lower end (or 1 substep)."""
HEIGHT = 0.5
"""Height of the flat sheet [m]."""
BINS = 10_000
"""Strain histogram bins over [0, 1) (p99 to 1e-4)."""


def build(app: App, n: int) -> Cloth:
    """Spawn the scene: a 1 m cotton sheet released flat at y = ``HEIGHT``, pinned at the corners of its far edge."""
    sheet = mesh.grid(n, n, 1.0, 1.0, center=(0.0, HEIGHT, 0.0), plane="xz")
    cloth = Cloth.from_mesh(sheet, "cotton")
    app.spawn(cloth, Pin.corners(sheet, "top"))
    return cloth


class Baseline:
    """The scene as the baseline kernel reads it: a Loom cloth's tables and inverse masses (its pins at 0), copied,
    and its initial positions ``x0`` [m]."""

    def __init__(self, cloth: Cloth, x0: np.ndarray, gravity: np.ndarray) -> None:
        self.x0 = np.array(x0, np.float64)
        self.inv_mass = cloth.inv_mass.copy()
        self.link_i = np.ascontiguousarray(cloth.link_i, np.int64)
        self.link_j = np.ascontiguousarray(cloth.link_j, np.int64)
        self.rest = cloth.link_rest.copy()
        self.compliance = cloth.link_compliance.copy()
        self.offsets = np.ascontiguousarray(cloth.link_color_offsets, np.int64)
        self.stretch = np.ascontiguousarray(cloth.link_kind[cloth.link_order] == STRETCH)
        self.damping = cloth.material.damping
        self.g = np.asarray(gravity, np.float64)

    def run(self, steps: int, substeps: int, dt: float, meter: bool) -> tuple[float, np.ndarray, np.ndarray]:
        """``steps`` steps of ``substeps`` from the initial state: (seconds, the strain histogram (``BINS``,) of the
        stretch links at every substep, and [worst strain]) — the last two empty unless ``meter``."""
        x = self.x0.copy()
        v = np.zeros_like(x)
        x_prev = np.empty_like(x)
        lam = np.zeros(self.rest.shape[0])
        hist = np.zeros(BINS, np.int64)
        worst = np.zeros(1)
        h = dt / substeps
        start = time.perf_counter()
        _steps(steps * substeps, h, math.exp(-self.damping * h), self.g[0], self.g[1], self.g[2], x, v, x_prev,
               self.inv_mass, self.link_i, self.link_j, self.rest, self.compliance, lam, self.offsets, self.stretch,
               meter, hist, worst)
        return time.perf_counter() - start, hist, worst


@numba.njit(cache=True, error_model="numpy")
def _steps(count, h, decay, gx, gy, gz, x, v, x_prev, inv_mass, link_i, link_j, rest, compliance, lam, offsets,
           stretch, meter, hist, worst):
    """``count`` substeps of h [s]: predict, one coloured Gauss–Seidel XPBD sweep of every link, velocity update
    (module docstring); with ``meter``, every stretch link's strain after the sweep into ``hist`` (bins of 1e-4
    over [0, 1)) and ``worst``. x, v, x_prev (n, 3) [m, m/s] written; λ (c,) written."""
    n = x.shape[0]
    inv_h = 1.0 / h
    inv_h2 = inv_h * inv_h
    for _ in range(count):
        for p in range(n):
            if inv_mass[p] > 0.0:
                v[p, 0] += h * gx
                v[p, 1] += h * gy
                v[p, 2] += h * gz
            for c in range(3):
                x_prev[p, c] = x[p, c]
                x[p, c] += h * v[p, c]
        lam[:] = 0.0
        for colour in range(offsets.shape[0] - 1):
            for k in range(offsets[colour], offsets[colour + 1]):
                a = link_i[k]
                b = link_j[k]
                wa = inv_mass[a]
                wb = inv_mass[b]
                if wa + wb == 0.0:
                    continue
                dx = x[a, 0] - x[b, 0]
                dy = x[a, 1] - x[b, 1]
                dz = x[a, 2] - x[b, 2]
                length = math.sqrt(dx * dx + dy * dy + dz * dz)
                if length < 1e-12:
                    continue
                alpha = compliance[k] * inv_h2
                dlam = (rest[k] - length - alpha * lam[k]) / (wa + wb + alpha)
                lam[k] += dlam
                s = dlam / length
                x[a, 0] += wa * s * dx
                x[a, 1] += wa * s * dy
                x[a, 2] += wa * s * dz
                x[b, 0] -= wb * s * dx
                x[b, 1] -= wb * s * dy
                x[b, 2] -= wb * s * dz
        if meter:
            for k in range(link_i.shape[0]):
                if stretch[k]:
                    a = link_i[k]
                    b = link_j[k]
                    dx = x[a, 0] - x[b, 0]
                    dy = x[a, 1] - x[b, 1]
                    dz = x[a, 2] - x[b, 2]
                    strain = math.sqrt(dx * dx + dy * dy + dz * dz) / rest[k] - 1.0
                    worst[0] = max(worst[0], strain)
                    hist[min(max(int(strain * hist.shape[0]), 0), hist.shape[0] - 1)] += 1
        for p in range(n):
            for c in range(3):
                v[p, c] = (x[p, c] - x_prev[p, c]) * inv_h * decay


def _p99(hist: np.ndarray) -> float:
    """The 99th percentile of a strain histogram over [0, 1) [-] (the upper edge of its bin)."""
    cumulative = np.cumsum(hist)
    return float(np.searchsorted(cumulative, 0.99 * cumulative[-1]) + 1) / hist.shape[0]


def loom_run(n: int, steps: int, *, meter: bool) -> tuple[float, dict, Baseline, np.ndarray]:
    """Loom at its defaults on the scene for 1 + ``steps`` steps (the first untimed: kernels compiled or loaded),
    with ``MeterPlugin`` if ``meter``: (seconds of the timed steps, the meters' record ({} without) and
    ``rejected_steps``, the scene as the baseline reads it, the App's gravity [m/s²])."""
    from loom.systems.pipeline.meters import MeterPlugin, Meters
    app = App(dt=1 / 60, substeps=LOOM_SUBSTEPS, threads=1)
    app.add_plugin(DefaultPlugins)
    if meter:
        app.add_plugin(MeterPlugin())
    cloth = build(app, n)
    gravity = np.array(app.resource(Gravity).acceleration, np.float64)
    x0 = cloth.x.copy()                              # the initial state, before the first step
    app.step(1)
    baseline = Baseline(cloth, x0, gravity)          # pinned particles' inverse masses are 0 from the first step
    start = time.perf_counter()
    app.step(steps)
    seconds = time.perf_counter() - start
    record = dict(app.resource(Meters).cloths[next(iter(app.resource(Meters).cloths))].record()) if meter else {}
    record["rejected_steps"] = cloth.rejected_steps
    app.close()
    return seconds, record, baseline, gravity


def compare(n: int, *, steps: int, max_substeps: int) -> dict:
    """The JSON record for an n × n sheet (module docstring)."""
    dt = 1 / 60
    _, meters, baseline, _ = loom_run(n, steps, meter=True)
    target = meters["stretch_before_limit_worst"]
    baseline.run(1, 1, dt, True)                   # compile or load the kernel
    runs: dict[int, dict] = {}

    def metered(substeps: int) -> bool:
        _, hist, worst = baseline.run(1 + steps, substeps, dt, True)
        runs[substeps] = {"substeps": substeps, "worst_pct": round(100 * float(worst[0]), 3),
                          "p99_pct": round(100 * _p99(hist), 3)}
        return bool(worst[0] <= target)

    loom_times: list[float] = []

    def timed(substeps: int) -> dict:
        """The baseline at ``substeps`` and Loom, timed in turn (Loom, baseline, baseline, Loom), the best of each."""
        times = []
        for k in range(4):
            if k in (0, 3):
                loom_times.append(loom_run(n, steps, meter=False)[0])
            else:
                times.append(baseline.run(1 + steps, substeps, dt, False)[0] * steps / (1 + steps))
        runs[substeps]["ms_per_step"] = round(1000 * min(times) / steps, 3)
        return runs[substeps]

    low, high = 0, LOOM_SUBSTEPS
    while high <= max_substeps and not metered(high):
        low, high = high, 2 * high
    equal = None
    if high <= max_substeps:
        while high - low > max(1, low // REFINE):
            middle = (low + high) // 2
            low, high = (low, middle) if metered(middle) else (middle, high)
        equal = timed(high)
    at_loom = timed(LOOM_SUBSTEPS)
    loom_ms = 1000 * min(loom_times) / steps
    return {"n": n, "particles": n * n, "steps": steps, "threads": 1,
            "loom_substeps": LOOM_SUBSTEPS, "loom_worst_before_limit_pct": round(100 * target, 3),
            "loom_p99_before_limit_pct": round(100 * meters["stretch_before_limit_p99"], 3),
            "loom_ms_per_step": round(loom_ms, 3), "loom_rejected_steps": meters["rejected_steps"],
            "equal_substeps": equal["substeps"] if equal else None,
            "baseline_worst_pct": equal["worst_pct"] if equal else None,
            "baseline_p99_pct": equal["p99_pct"] if equal else None,
            "baseline_ms_per_step": equal["ms_per_step"] if equal else None,
            "speedup": round(equal["ms_per_step"] / loom_ms, 2) if equal else None,
            "baseline_at_loom_substeps": at_loom, "runs": [runs[k] for k in sorted(runs)]}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m loom.benchmarks small_steps", description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, nargs="+", default=[32, 64], help="particles per side")
    p.add_argument("--steps", type=int, default=120, help="steps of 1/60 s after the release (metered and timed)")
    p.add_argument("--max-substeps", type=int, default=4096, help="the most substeps the baseline tries")
    args = p.parse_args(argv)
    for n in args.n:
        if n < 3:
            p.error(f"--n {n}: a sheet needs at least 3 particles per side")
    if args.steps < 1:
        p.error(f"--steps {args.steps}: at least 1")
    if args.max_substeps < LOOM_SUBSTEPS:
        p.error(f"--max-substeps {args.max_substeps}: at least {LOOM_SUBSTEPS}")
    for n in args.n:
        print(json.dumps(compare(n, steps=args.steps, max_substeps=args.max_substeps)), flush=True)


if __name__ == "__main__":
    main()
