"""Cusick drape test: how a fabric preset drapes, and whether it drapes the same at any mesh resolution.

The drape tester of Cusick (1968; the method of BS 5058 and ISO 9073-9): a 30 cm disc of fabric is clamped
between two 18 cm discs on a pedestal and left to hang under gravity; its shadow, seen from above, is traced.
The *drape coefficient* is

    DC = (A_shadow − A_pedestal) / (A_disc − A_pedestal),

1 for a stiff fabric that stays flat, near 0 for one that hangs straight down. Here the disc is a ``mesh.disc``
of ``rings`` rings (or a square grid cut to the disc), the clamped particles (radius ≤ 9 cm) are pinned, a
cylinder collider stands for the pedestal (its top one contact thickness, ``ClothMaterial.thickness``, below the
clamped disc, so the clamp and the contact agree), and after ``seconds`` of simulated time the shadow area is the
area of the polygon of the farthest point of the mesh (its triangle edges sampled) from the axis in each of
``ANGLE_BINS`` angular sectors (the silhouette of the hem, seen from above). Whether it had settled: the skirt's
speed at the end (fastest particle, frame to frame, ``speed_at_end_m_s``) and how much the coefficient moved over the
last ``SETTLE_WINDOW`` seconds (``dc_drift``).

By default the presets bend by dihedral angle with their physical rigidity (``bend_model="dihedral"``,
``ClothMaterial.bending_rigidity``, N·m; the mapping to each hinge's compliance:
``loom.systems.xpbd.constraints.hinge_compliance``, docs/materials.md), so a preset should drape alike on any mesh;
``--bend-model distance`` measures the presets as games get them by default (distance links, mesh-dependent).

Run: python -m loom.benchmarks cusick [--presets cotton denim silk] [--rings 10 20 40] [--mesh disc grid]
[--seconds 6] [--substeps 16] [--bend-model dihedral|distance]. One JSON line per configuration.
"""
from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Sequence

import numpy as np

from loom.components import Cloth, ClothMaterial, Collider, Cylinder, Pin, Transform
from loom.engine import App, mesh
from loom.systems import DefaultPlugins

DISC_RADIUS = 0.15
"""Radius of the fabric disc [m] (the 30 cm specimen)."""
PEDESTAL_RADIUS = 0.09
"""Radius of the clamping discs and the pedestal [m] (18 cm)."""
PEDESTAL_HEIGHT = 0.5
"""Height of the pedestal [m]: the skirt hangs free above the floor."""
ANGLE_BINS = 360
"""Angular sectors of the shadow's outline."""
EDGE_SAMPLES = 16
"""Points taken along each triangle edge for the outline."""
SETTLE_WINDOW = 1.0
"""Seconds before the end at which the coefficient is read a first time: ``dc_drift`` is its change since [s]."""


def specimen(rings: int, kind: str = "disc") -> mesh.Mesh:
    """The 30 cm specimen at the pedestal's top (y = 0): a ``mesh.disc`` of ``rings`` rings, or ("grid") a square
    grid of the same spacing (radius / rings) with the triangles outside the disc dropped."""
    if kind == "disc":
        return mesh.disc(DISC_RADIUS, rings, plane="xz")
    if kind != "grid":
        raise ValueError(f"cusick mesh = {kind!r}: expected 'disc' or 'grid'")
    n = 2 * rings + 1
    square = mesh.grid(n, n, 2 * DISC_RADIUS, 2 * DISC_RADIUS, plane="xz")
    radius = np.linalg.norm(square.positions[:, [0, 2]], axis=1)
    keep = (radius[square.triangles] <= DISC_RADIUS * (1 + 1e-9)).all(axis=1)
    used = np.unique(square.triangles[keep])
    index = np.full(square.positions.shape[0], -1)
    index[used] = np.arange(used.size)
    return mesh.from_triangles(square.positions[used], index[square.triangles[keep]], square.uv[used])


def drape_coefficient(x: np.ndarray, triangles: np.ndarray) -> float:
    """DC of draped positions x (n, 3) [m] of a mesh of ``triangles`` (t, 3), around the y axis: the shadow is the
    polygon through the point farthest from the axis in each of ``ANGLE_BINS`` sectors, over points taken along
    every triangle edge (``EDGE_SAMPLES`` each, so a coarse hem's long edges leave no sector empty)."""
    a, b = x[triangles].reshape(-1, 3), x[np.roll(triangles, -1, axis=1)].reshape(-1, 3)
    t = np.linspace(0.0, 1.0, EDGE_SAMPLES)[:, None, None]
    points = (a + t * (b - a)).reshape(-1, 3)
    r = np.hypot(points[:, 0], points[:, 2])
    angle = np.arctan2(points[:, 2], points[:, 0]) + math.pi
    sector = (angle / (2 * math.pi) * ANGLE_BINS).astype(np.int64) % ANGLE_BINS
    outline = np.full(ANGLE_BINS, PEDESTAL_RADIUS)        # (the clamped disc's rim at least)
    np.maximum.at(outline, sector, r)
    step = 2 * math.pi / ANGLE_BINS
    shadow = 0.5 * math.sin(step) * float((outline * np.roll(outline, -1)).sum())
    pedestal, disc = math.pi * PEDESTAL_RADIUS ** 2, math.pi * DISC_RADIUS ** 2
    return (shadow - pedestal) / (disc - pedestal)


def run(preset: str, rings: int, *, kind: str = "disc", seconds: float = 6.0, substeps: int = 16,
        threads: int = 1, bend_model: str = "dihedral") -> dict:
    """One Cusick test (module docstring) of ``preset`` bending by ``bend_model``; returns its JSON record."""
    app = App(dt=1 / 60, substeps=substeps, threads=threads).add_plugin(DefaultPlugins)
    try:
        material = ClothMaterial.preset(preset, bend_model=bend_model)
        app.spawn(Collider(Cylinder(PEDESTAL_RADIUS, PEDESTAL_HEIGHT / 2)),     # its top one contact thickness
                  Transform(position=(0.0, -PEDESTAL_HEIGHT / 2 - material.thickness, 0.0)))   # below the clamp
        cloth = Cloth.from_mesh(specimen(rings, kind), material)
        clamped = np.flatnonzero(np.hypot(cloth.x[:, 0], cloth.x[:, 2]) <= PEDESTAL_RADIUS + 1e-9)
        app.spawn(cloth, Pin(index=clamped))
        steps = int(round(seconds * 60))
        window = min(int(round(SETTLE_WINDOW * 60)), steps - 1)
        start = time.perf_counter()
        app.step(steps - window)
        earlier = drape_coefficient(cloth.x, cloth.triangles)
        app.step(window - 1)
        before = cloth.x.copy()
        app.step(1)
        elapsed = time.perf_counter() - start
        speed = float(np.linalg.norm(cloth.x - before, axis=1).max() * 60)
        return {"preset": preset, "mesh": kind, "rings": rings, "particles": cloth.particle_count,
                "seconds": seconds, "substeps": substeps, "drape_coefficient": round(drape_coefficient(cloth.x, cloth.triangles), 4),
                "dc_drift": round(drape_coefficient(cloth.x, cloth.triangles) - earlier, 4),
                "lowest_m": round(float(cloth.x[:, 1].min()), 4), "speed_at_end_m_s": round(speed, 4),
                "rejected_steps": int(cloth.rejected_steps), "ms_per_step": round(1e3 * elapsed / steps, 3)}
    finally:
        app.close()


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m loom.benchmarks cusick", description=__doc__.splitlines()[0])
    p.add_argument("--presets", nargs="+", default=["silk", "cotton", "denim"])
    p.add_argument("--rings", nargs="+", type=int, default=[10, 20, 40])
    p.add_argument("--mesh", nargs="+", choices=("disc", "grid"), default=["disc"])
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--substeps", type=int, default=16)
    p.add_argument("--bend-model", choices=("dihedral", "distance"), default="dihedral")
    args = p.parse_args(argv)
    for kind in args.mesh:
        for preset in args.presets:
            for rings in args.rings:
                print(json.dumps(run(preset, rings, kind=kind, seconds=args.seconds, substeps=args.substeps,
                                     bend_model=args.bend_model)),
                      flush=True)


if __name__ == "__main__":
    main()
