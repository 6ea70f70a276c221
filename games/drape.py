"""Drape: a tablecloth dropped over a round table with a ball on it (Fuhrmann 2003 fig. 2; Baraff & Witkin fig. 1).

Self-collision is on, so the overhanging cloth folds onto itself without crossing.

Run: python -m games.drape [--headless --frames 300 --report json] [--n 64] [--model xpbd]
"""
from __future__ import annotations

from collections.abc import Sequence

from components import MODELS, Cloth, Collider, Cylinder, Plane, Sphere, Transform
from engine import App, mesh
from engine.runner import parser, run_app
from systems import DefaultPlugins

TABLE_RADIUS = 0.5           # [m]
TABLE_HEIGHT = 0.75          # [m], top surface
CLOTH_SIZE = 1.6             # [m], square
SUBSTEPS = 8                 # per 1/60 s step: a slow drape needs fewer than a flag


def build_scene(app: App, n: int = 64, model: str = "xpbd") -> Cloth:
    """Spawn floor, round table, a ball on it and an n×n tablecloth 0.3 m above; return the cloth."""
    app.spawn(Collider(Plane(), friction=0.6), Transform())
    table_top = Transform(position=(0.0, TABLE_HEIGHT - 0.015, 0.0))
    app.spawn(Collider(Cylinder(TABLE_RADIUS, 0.015), friction=0.6), table_top)   # a 3 cm thick round top
    app.spawn(Collider(Sphere(0.15), friction=0.6), Transform(position=(0.15, TABLE_HEIGHT + 0.15, -0.1)))
    spacing = CLOTH_SIZE / (n - 1)
    sheet = mesh.grid(n, n, CLOTH_SIZE, CLOTH_SIZE, center=(0.0, TABLE_HEIGHT + 0.35, 0.0), plane="xz")
    cloth = Cloth.from_mesh(sheet, "cotton", model=model, thickness=max(spacing, 0.005), self_collision=True)
    app.spawn(cloth)
    return cloth


def main(argv: Sequence[str] | None = None) -> dict:
    p = parser("python -m games.drape")
    p.add_argument("--n", type=int, default=64, help="cloth particles per side (default 64)")
    p.add_argument("--model", choices=MODELS, default="xpbd")
    args, _ = p.parse_known_args(argv)
    if args.n < 2:
        p.error(f"--n = {args.n}: a cloth needs at least 2 particles per side")
    app = App(dt=1 / 60, substeps=SUBSTEPS)
    app.add_plugin(DefaultPlugins)
    build_scene(app, n=args.n, model=args.model)
    return run_app(app, argv, arg_parser=p)


if __name__ == "__main__":
    main()
