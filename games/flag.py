"""Flag: a 2 m × 1 m flag on a pole in gusty wind, and with --sail a sail held by its corners (Provot 1995).

Provot's two wind scenes: "a flag in a strong wind" — pinned along the hoist to a pole, streaming
and flapping in gusts — and "wind in a sail" — a sheet held only at its four corners, bellying out
(``--sail``). Wind acts per triangle (drag along the normal, lift across it; systems/forces/wind.py).

Run: python -m loom.games.flag [--sail] [--headless --frames 600 --report json] [--screenshot out.png]
Keys (window): right-drag orbit, wheel zoom, V views, W wind on/off, Esc quit.
"""
from __future__ import annotations

from collections.abc import Sequence

import pygame

from loom import GLRenderPlugin, WindowPlugin
from loom.components import Camera, Capsule, Cloth, ClothStyle, Collider, InputState, Pin, Transform, Wind
from loom.engine import App, Stage, mesh, parser, run_app
from loom.systems import DefaultPlugins

POLE_TOP = 3.0                # [m]
WIND = (6.0, 0.0, 1.0)        # [m/s]: a fresh breeze, slightly across
DT = 1 / 60
"""[s] per step. DT and SUBSTEPS are this game's step: main's App and ``python -m loom.files.bake`` use them."""
SUBSTEPS = 4
"""Per step. The flag in gusts over 600 frames, 4 substeps against 8 (2 sweeps each): the same
worst stretch (10 %, Provot's limit), flutter (0.102 against 0.106 m of spread across the wind) and
reach (0.90 against 0.88 m), no refused step, for 0.87 against 1.49 ms a frame."""


def build_scene(app: App, sail: bool = False) -> tuple[Cloth, Cloth | None]:
    """Spawn the pole, the flag (990 particles), with ``sail`` the sail, the wind and a camera; return
    (flag, sail or None)."""
    app.spawn(Collider(Capsule(0.04, POLE_TOP / 2)), Transform(position=(-1.04, POLE_TOP / 2, 0.0)))
    flag_mesh = mesh.grid(45, 22, 2.0, 1.0, center=(0.0, POLE_TOP - 0.5, 0.0))            # ≈ 1,000 particles
    flag = Cloth.from_mesh(flag_mesh, "denim", thickness=0.01, strain_limit=0.1)   # Provot: the whip
    app.spawn(flag, Pin.edge(flag_mesh, "left"), ClothStyle(front_color=(0.8, 0.1, 0.12),
                                                             back_color=(0.9, 0.85, 0.2)))
    held = None
    if sail:
        sail_mesh = mesh.grid(24, 24, 1.4, 1.4, center=(3.5, 1.2, 0.0))                   # [m]
        held = Cloth.from_mesh(sail_mesh, "denim")
        app.spawn(held, Pin.edge(sail_mesh, "corners"), ClothStyle(front_color=(0.92, 0.9, 0.82),
                                                                    back_color=(0.7, 0.68, 0.6)))
    app.spawn(Wind(velocity=WIND, gust=0.35, gust_period=2.5, turbulence=0.15, seed=7))
    app.spawn(Camera(target=(1.3, 2.0, 0.0) if sail else (0.2, 2.4, 0.0), distance=7.0 if sail else 4.5,
                     yaw=-0.35, pitch=0.15))
    app.add_system(toggle_wind, Stage.INPUT)
    return flag, held


def toggle_wind(app: App, dt: float) -> None:
    """W turns the wind off and on (window only)."""
    state = app.resources.get(InputState)
    if state is not None and pygame.K_w in state.keys_pressed:
        for _, wind in app.query(Wind):
            wind.active = not wind.active


def main(argv: Sequence[str] | None = None) -> dict:
    p = parser("python -m loom.games.flag")
    p.add_argument("--sail", action="store_true", help="add Provot's second scene: a sail held by its corners")
    args, _ = p.parse_known_args(argv)
    app = App(dt=DT, substeps=SUBSTEPS)
    app.add_plugin(DefaultPlugins)
    app.add_plugin(GLRenderPlugin(width=960, height=640))
    app.add_plugin(WindowPlugin(title="Loom — flag and sail" if args.sail else "Loom — flag"))
    build_scene(app, sail=args.sail)
    return run_app(app, argv, arg_parser=p)


if __name__ == "__main__":
    main()
