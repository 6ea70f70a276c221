"""Dissipation benchmark: how much momentum, angular momentum and energy XPBD cloth loses, and to what.

A game's cloth loses energy in two ways. ``ClothMaterial.damping`` [1/s] scales every particle's velocity by
exp(−damping·h) each substep (systems/xpbd/predict.py): it damps *absolute* velocity, so a cloth flying through
still air loses momentum as if the air moved with the world, and a cloth at rest in a moving frame would too.
XPBD itself loses energy: the velocity is what the positions did, v = (x − x_prev)/h, after the projections
removed the part of the predicted move that stretched a constraint (Macklin et al. 2016, 2019: the dissipation
shrinks with the substep); the stretch limit and the contacts remove more. Figures: docs/physics.md, "Damping and
dissipation". Air drag relative to the air comes from a ``Wind`` (velocity 0 for still air), not from damping.

Scenes (one JSON line each; every cloth n × n, 1 m, the ``cotton`` preset, the App's defaults otherwise: 16
substeps, one sweep, yarns, tethers, the preset's stretch limit; dt = 1/60 s):
- ``drift``: no gravity, nothing pinned, every particle moving at 1 m/s along x: linear momentum lost by each
  second (``momentum_lost_pct``), with the preset's damping and with none, beside 1 − exp(−damping·t)
  (``expected_from_damping_pct``);
- ``spin``: no gravity, nothing pinned, damping 0, the sheet turning rigidly at ``--omega`` rad/s about its normal
  (``spin``) and about an axis in its plane (``tumble``): kinetic energy, the compliant links' stored energy and
  the angular momentum about the centre of mass, lost per second;
- ``swing``: gravity 9.81 m/s², the sheet released flat (horizontal) from rest, pinned at the two corners of one
  edge, with damping 0 and with the preset's: total energy (kinetic + gravitational + the compliant links'
  stored energy, C²/2α per link of compliance α > 0) lost by each second, in J and as a share of the largest
  kinetic energy reached (``lost_pct_of_peak_kinetic``).

Every record has ``rejected_steps`` (the guard refused no step if 0). Run:
python -m loom.benchmarks dissipation [--scene drift spin swing] [--n 32] [--seconds 3] [--omega 6.283]
     [--substeps 16]
"""
from __future__ import annotations

import argparse
import json
import math

import numpy as np

from loom.components import Cloth, Gravity, Pin
from loom.engine import App, mesh
from loom.systems import DefaultPlugins

SCENES = ("drift", "spin", "swing")
SUBSTEPS = 16
"""The App's default substeps (``--substeps`` changes it: the dissipation shrinks with the substep)."""
HEIGHT = 1.0
"""Height of the sheet's plane above y = 0 [m] (the gravitational energy's zero)."""


def _app(gravity: bool, substeps: int) -> App:
    app = App(dt=1 / 60, substeps=substeps, threads=1)
    app.insert_resource(Gravity((0.0, -9.81, 0.0) if gravity else (0.0, 0.0, 0.0)))
    app.add_plugin(DefaultPlugins)
    return app


def _sheet(app: App, n: int, *, damping: float | None, pinned: bool) -> Cloth:
    """A horizontal 1 m cotton sheet at y = ``HEIGHT`` (damping None: the preset's), pinned at the corners of one
    edge if ``pinned``."""
    sheet = mesh.grid(n, n, 1.0, 1.0, center=(0.0, HEIGHT, 0.0), plane="xz")
    changes = {} if damping is None else {"damping": damping}
    cloth = Cloth.from_mesh(sheet, "cotton", **changes)
    if pinned:
        app.spawn(cloth, Pin.corners(sheet, "top"))
    else:
        app.spawn(cloth)
    return cloth


def stored_energy(cloth: Cloth) -> float:
    """Elastic energy in the compliant links [J]: Σ C²/(2α) over links of compliance α > 0, C = length − rest
    (XPBD's potential U = ½ Cᵀ α⁻¹ C, Macklin et al. 2016 eq. 4); inextensible links (α = 0) store none."""
    soft = cloth.link_compliance > 0.0
    d = cloth.x[cloth.link_i[soft]] - cloth.x[cloth.link_j[soft]]
    c = np.linalg.norm(d, axis=1) - cloth.link_rest[soft]
    return float(np.sum(c * c / (2.0 * cloth.link_compliance[soft])))


def kinetic_energy(cloth: Cloth) -> float:
    """½ Σ m v² [J]."""
    return float(0.5 * np.sum(cloth.mass * np.sum(cloth.v * cloth.v, axis=1)))


def momentum(cloth: Cloth) -> np.ndarray:
    """Σ m v (3,) [kg·m/s]."""
    return (cloth.mass[:, None] * cloth.v).sum(axis=0)


def angular_momentum(cloth: Cloth) -> np.ndarray:
    """Σ m (x − x_c) × (v − v_c) about the centre of mass (3,) [kg·m²/s]."""
    m = cloth.mass[:, None]
    xc = (m * cloth.x).sum(axis=0) / m.sum()
    vc = (m * cloth.v).sum(axis=0) / m.sum()
    return (m * np.cross(cloth.x - xc, cloth.v - vc)).sum(axis=0)


def _seconds_run(app: App, seconds: float, probe) -> list:
    """Step ``app`` for ``seconds`` (whole steps), calling ``probe()`` at the start and after each second;
    returns the probes."""
    per_second = round(1.0 / app.clock.dt)
    values = [probe()]
    for _ in range(int(round(seconds))):
        app.step(per_second)
        values.append(probe())
    return values


def drift(n: int, seconds: float, substeps: int = SUBSTEPS, **_: float) -> dict:
    """Linear momentum of a free sheet moving at 1 m/s in zero gravity, with the preset's damping and without."""
    record: dict = {"scene": "drift", "n": n, "seconds": seconds, "substeps": substeps}
    for label, damping in (("preset_damping", None), ("no_damping", 0.0)):
        app = _app(gravity=False, substeps=substeps)
        cloth = _sheet(app, n, damping=damping, pinned=False)
        cloth.v[:] = (1.0, 0.0, 0.0)
        p = _seconds_run(app, seconds, lambda c=cloth: float(momentum(c)[0]))
        rate = cloth.material.damping
        record[label] = {"damping_per_s": rate,
                         "momentum_lost_pct": [round(100.0 * (1.0 - v / p[0]), 2) for v in p[1:]],
                         "expected_from_damping_pct": [round(100.0 * (1.0 - math.exp(-rate * t)), 2)
                                                       for t in range(1, len(p))],
                         "rejected_steps": cloth.rejected_steps}
        app.close()
    return record


def spin(n: int, seconds: float, substeps: int = SUBSTEPS, omega: float = 2 * math.pi, **_: float) -> dict:
    """Energy and angular momentum of a free sheet turning rigidly, damping 0, zero gravity."""
    record: dict = {"scene": "spin", "n": n, "seconds": seconds, "substeps": substeps, "omega_rad_s": omega}
    for label, axis in (("spin", (0.0, 1.0, 0.0)), ("tumble", (1.0, 0.0, 0.0))):
        app = _app(gravity=False, substeps=substeps)
        cloth = _sheet(app, n, damping=0.0, pinned=False)
        centre = cloth.x.mean(axis=0)
        cloth.v[:] = np.cross(omega * np.asarray(axis), cloth.x - centre)

        def probe(c: Cloth = cloth, a: np.ndarray = np.asarray(axis)) -> tuple[float, float]:
            return kinetic_energy(c) + stored_energy(c), float(angular_momentum(c) @ a)
        values = _seconds_run(app, seconds, probe)
        e0, l0 = values[0]
        record[label] = {"energy_J": round(e0, 6), "angular_momentum_kg_m2_s": round(l0, 6),
                         "energy_lost_pct": [round(100.0 * (1.0 - e / e0), 2) for e, _ in values[1:]],
                         "angular_momentum_lost_pct": [round(100.0 * (1.0 - a / l0), 2) for _, a in values[1:]],
                         "rejected_steps": cloth.rejected_steps}
        app.close()
    return record


def swing(n: int, seconds: float, substeps: int = SUBSTEPS, **_: float) -> dict:
    """Total energy of a sheet released flat, pinned at two corners, with damping 0 and with the preset's."""
    record: dict = {"scene": "swing", "n": n, "seconds": seconds, "substeps": substeps}
    for label, damping in (("no_damping", 0.0), ("preset_damping", None)):
        app = _app(gravity=True, substeps=substeps)
        cloth = _sheet(app, n, damping=damping, pinned=True)
        g = -app.resource(Gravity).acceleration[1]
        peak = [0.0]

        def probe(c: Cloth = cloth) -> float:
            return kinetic_energy(c) + float(np.sum(c.mass * g * c.x[:, 1])) + stored_energy(c)

        def stepper(steps: int, a: App = app, c: Cloth = cloth) -> None:
            for _ in range(steps):
                a.step(1)
                peak[0] = max(peak[0], kinetic_energy(c))
        per_second = round(1.0 / app.clock.dt)
        energy = [probe()]
        for _ in range(int(round(seconds))):
            stepper(per_second)
            energy.append(probe())
        lost = [energy[0] - e for e in energy[1:]]
        record[label] = {"damping_per_s": cloth.material.damping, "peak_kinetic_J": round(peak[0], 6),
                         "energy_lost_J": [round(v, 6) for v in lost],
                         "lost_pct_of_peak_kinetic": [round(100.0 * v / peak[0], 1) for v in lost],
                         "rejected_steps": cloth.rejected_steps}
        app.close()
    return record


RUNS = {"drift": drift, "spin": spin, "swing": swing}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m loom.benchmarks dissipation", description=__doc__.splitlines()[0])
    p.add_argument("--scene", nargs="+", choices=SCENES, default=list(SCENES))
    p.add_argument("--n", type=int, default=32, help="particles per side")
    p.add_argument("--seconds", type=int, default=3, help="simulated seconds (a line of figures per second)")
    p.add_argument("--omega", type=float, default=2 * math.pi, help="spin: angular velocity [rad/s]")
    p.add_argument("--substeps", type=int, default=SUBSTEPS, help="substeps per 1/60 s step")
    args = p.parse_args(argv)
    if args.n < 2:
        p.error(f"--n {args.n}: a sheet needs at least 2 particles per side")
    if args.seconds < 1:
        p.error(f"--seconds {args.seconds}: at least 1")
    if args.substeps < 1:
        p.error(f"--substeps {args.substeps}: at least 1")
    if not (math.isfinite(args.omega) and args.omega > 0.0):
        p.error(f"--omega {args.omega}: a finite angular velocity > 0 [rad/s]")
    for scene in args.scene:
        record = RUNS[scene](args.n, float(args.seconds), substeps=args.substeps, omega=args.omega)
        print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
