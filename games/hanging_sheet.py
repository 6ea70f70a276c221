"""Hanging sheet: a 1 m cotton tablecloth held by two corners, falling and swinging to rest.

The first scene of every cloth paper (Provot 1995's hanging cloth; Fuhrmann 2003 fig. 3): it
shows stretch (there should be none to see), swinging without jitter, and settling.

Run: python -m games.hanging_sheet [--headless --frames 300 --report json] [--n 32]
Headless it prints one report line: frames, particles, sim_ms_per_frame, max_strain, min_y, nan.
"""
from __future__ import annotations

from collections.abc import Sequence

from components import Cloth, Pin
from engine import App, mesh
from engine.runner import parser, run_app
from systems import DefaultPlugins


def build_scene(app: App, n: int = 32) -> int:
    """Spawn an n×n, 1 m × 1 m horizontal cotton sheet at 1 m height, pinned at its two far corners."""
    sheet = mesh.grid(n, n, 1.0, 1.0, center=(0.0, 1.0, 0.0), plane="xz")       # [m]
    return app.spawn(Cloth.from_mesh(sheet, "cotton"), Pin.corners(sheet, "top"))


def main(argv: Sequence[str] | None = None) -> dict:
    p = parser("python -m games.hanging_sheet")
    p.add_argument("--n", type=int, default=32, help="particles per side (default 32)")
    args, _ = p.parse_known_args(argv)
    if args.n < 2:
        p.error(f"--n = {args.n}: a sheet needs at least 2 particles per side")
    app = App(dt=1 / 60, substeps=16)
    app.add_plugin(DefaultPlugins)
    build_scene(app, n=args.n)
    return run_app(app, argv, arg_parser=p)


if __name__ == "__main__":
    main()
