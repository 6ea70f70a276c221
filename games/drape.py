"""Drape: a tablecloth dropped over a round table with a ball on it (Fuhrmann 2003 fig. 2; Baraff & Witkin fig. 1).

Self-collision is on, so the overhanging cloth folds onto itself without crossing. B cycles the
bending stiffness (stiff, medium, limp) and M the model (xpbd → verlet → mass_spring → implicit),
live: the tablecloth is rebuilt where it is, moving as it was, so the same fall can finish in another
fabric or solver.

Run: python -m loom.games.drape [--headless --frames 300 --report json] [--n 48] [--model xpbd] [--screenshot out.png]
Keys (window): B bending, M model, right-drag orbit, middle-drag pan, wheel zoom, V views, H HUD, Esc quit.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pygame

from loom import GLRenderPlugin, WindowPlugin
from loom.components import (MODELS, SETTINGS, Camera, Cloth, ClothMaterial, ClothStyle, Collider, Cylinder,
                             InputState, Plane, Sphere, Transform)
from loom.engine import App, Mesh, Stage, mesh
from loom.launch import parser, run_app
from loom.systems import DefaultPlugins

TABLE_RADIUS = 0.5           # [m]
TABLE_HEIGHT = 0.75          # [m], top surface
CLOTH_SIZE = 1.6             # [m], square
DT = 1 / 60
"""[s] per step. DT and SUBSTEPS are this game's step: main's App and ``python -m loom.files.bake`` use them."""
SUBSTEPS = 8                 # per step: a slow drape needs fewer than a flag
BENDING = {"stiff": 0.005, "medium": 0.5, "limp": 10.0}
"""bend_compliance [m/N] of each B level (xpbd; medium is cotton's)."""
MODEL_BENDING = {"verlet": ("bend_min", (1.0, 0.9, 0.8)), "mass_spring": ("bend_stiffness", (20.0, 5.0, 0.5)),
                 "implicit": ("bend_stiffness", (1e-2, 1e-3, 1e-4))}
"""The same three levels for the other models, in their own settings: Fuhrmann's d_min of bending pairs [-],
Provot's flexion spring [N/m], Baraff & Witkin's bend condition [N·m] (the middle value is each default)."""


@dataclass
class Drape:
    """App resource: the tablecloth's entity and mesh, and the bending level in use."""

    cloth: int
    """Entity of the tablecloth."""
    sheet: Mesh
    """The mesh it was made from."""
    bending: str = "medium"
    """Key of BENDING."""
    yarns: bool = True
    """``Cloth.yarns`` of the tablecloth (``build_scene``)."""


def build_scene(app: App, n: int = 64, model: str = "xpbd", yarns: bool = True) -> Cloth:
    """Spawn floor, round table, a ball on it and an n×n tablecloth 0.35 m above; return the cloth.

    ``yarns``: the tablecloth's ``Cloth.yarns`` (with cotton's stretch limit, 1.2 %). On: at n = 48 the tablecloth
    drapes within the stretch limit at rest and stays on the table. Off: Loom's older cloth (plain sweeps, two per
    substep, no stretch limit), cheaper a step but stretched several per cent at rest (docs/models.md, "Creep on a
    table"; ``python -m loom.benchmarks creep``; numbers in docs/performance.md, "Moved from docstrings")."""
    app.spawn(Collider(Plane(), friction=0.6), Transform())
    table_top = Transform(position=(0.0, TABLE_HEIGHT - 0.015, 0.0))
    app.spawn(Collider(Cylinder(TABLE_RADIUS, 0.015), friction=0.6), table_top)   # a 3 cm thick round top
    app.spawn(Collider(Sphere(0.15), friction=0.6), Transform(position=(0.15, TABLE_HEIGHT + 0.15, -0.1)))
    sheet = mesh.grid(n, n, CLOTH_SIZE, CLOTH_SIZE, center=(0.0, TABLE_HEIGHT + 0.35, 0.0), plane="xz")
    cloth = tablecloth(sheet, model, "medium", yarns)
    entity = app.spawn(cloth, ClothStyle(front_color=(0.92, 0.9, 0.86), back_color=(0.75, 0.2, 0.2),
                                         checker_scale=0.2))
    app.spawn(Camera(target=(0.0, 0.5, 0.0), distance=2.7, yaw=0.5, pitch=0.4))       # [m], [rad]
    app.insert_resource(Drape(entity, sheet, yarns=yarns))
    app.add_system(switch_keys, Stage.INPUT)
    app.add_reporter(drape_report)
    return cloth


def tablecloth(sheet: Mesh, model: str, bending: str, yarns: bool = True) -> Cloth:
    """A self-colliding cotton cloth on ``sheet`` for ``model``, with the ``bending`` level of BENDING; without
    ``yarns``, Loom's cloth before them (plain sweeps, two per substep, no stretch limit: ``build_scene``)."""
    spacing = CLOTH_SIZE / (sheet.grid_shape[0] - 1)
    settings = None
    if model in MODEL_BENDING:
        knob, values = MODEL_BENDING[model]
        settings = SETTINGS[model](**{knob: values[list(BENDING).index(bending)]})
    material = ClothMaterial.preset("cotton", bend_compliance=BENDING[bending])
    if not yarns:
        material = material.replace(stretch_limit=None)
    return Cloth.from_mesh(sheet, material, model=model, settings=settings, thickness=max(spacing, 0.005),
                           self_collision=True, yarns=yarns, iterations=1 if yarns else 2)


def switch_keys(app: App, dt: float) -> None:
    """B: next bending level; M: next model. Either rebuilds the tablecloth where it is, as it moves."""
    state = app.resources.get(InputState)
    if state is None or not state.keys_pressed:
        return
    drape = app.resource(Drape)
    old = app.get(drape.cloth, Cloth)
    model = old.model
    if pygame.K_b in state.keys_pressed:
        levels = list(BENDING)
        drape.bending = levels[(levels.index(drape.bending) + 1) % len(levels)]
    if pygame.K_m in state.keys_pressed:
        model = MODELS[(MODELS.index(model) + 1) % len(MODELS)]
    if model == old.model and old.material.bend_compliance == BENDING[drape.bending]:
        return
    cloth = tablecloth(drape.sheet, model, drape.bending, drape.yarns)
    cloth.x[:], cloth.v[:], cloth.x_prev[:] = old.x, old.v, old.x_prev
    app.add_component(drape.cloth, cloth)                   # on a key press, not per frame


def drape_report(app: App) -> dict:
    """The tablecloth's model and bending level."""
    drape = app.resource(Drape)
    return {"model": app.get(drape.cloth, Cloth).model, "bending": drape.bending}


FIRST_LAUNCH_COMPILES = 87
"""Functions numba compiles in a first launch's first 10 frames (an empty cache, a window, one process): the
loading view's progress is a fraction of it (kernels the compile-ahead worker compiled count as they load).
Measured with the startup benchmark's ``--kernels`` total (``compiles``).
"""

KERNELS = Path(__file__).resolve().parent / "kernels" / "drape.pickle"
"""The kernel list a first launch compiles on a second core (``loom.launch.compile_ahead``; regenerate with
``python -m loom.games --kernel-lists``)."""


def main(argv: Sequence[str] | None = None) -> dict:
    p = parser("python -m loom.games.drape")
    p.add_argument("--n", type=int, default=48, help="cloth particles per side (default 48)")
    p.add_argument("--model", choices=MODELS, default="xpbd")
    args, _ = p.parse_known_args(argv)
    if args.n < 2:
        p.error(f"--n = {args.n}: a cloth needs at least 2 particles per side")
    app = App(dt=DT, substeps=SUBSTEPS)
    app.add_plugin(DefaultPlugins)
    app.add_plugin(GLRenderPlugin(width=960, height=640))
    app.add_plugin(WindowPlugin(title="Loom — drape: B bending · M model"))
    return run_app(app, argv, arg_parser=p, build=lambda a: build_scene(a, n=args.n, model=args.model),
                   compiles=FIRST_LAUNCH_COMPILES, kernels=KERNELS)


if __name__ == "__main__":
    main()
