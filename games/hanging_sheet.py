"""Hanging sheet: a 1 m cotton tablecloth held by two corners, falling and swinging to rest.

The first scene of every cloth paper (Provot 1995's hanging cloth; Fuhrmann 2003 fig. 3): it
shows stretch (there should be none to see), swinging without jitter, and settling.

Run: python -m loom.games.hanging_sheet [--headless --frames 300 --report json] [--n 32] [--model xpbd]
     [--screenshot out.png]
With a display (or under `xvfb-run -a`, or SDL_VIDEODRIVER=offscreen) it opens a window: right-drag orbits,
middle-drag pans, the wheel zooms, V cycles the views (shaded, normals, wireframe, strain, particles), H the
HUD, Esc quits. Headless it prints one report line: frames, particles, sim_ms_per_frame, max_strain, min_y,
nan; `--headless --screenshot out.png` renders the last state offscreen with EGL.
"""
from __future__ import annotations

from collections.abc import Sequence

from loom import GLRenderPlugin, WindowPlugin
from loom.components import MODELS, Camera, Cloth, Pin
from loom.engine import App, mesh, parser, run_app
from loom.systems import DefaultPlugins

DT = 1 / 60
"""[s] per step. DT and SUBSTEPS are this game's step: main's App and ``python -m loom.files.bake`` use them."""
SUBSTEPS = 16


def build_scene(app: App, n: int = 32, model: str = "xpbd") -> int:
    """Spawn an n×n, 1 m × 1 m horizontal cotton sheet at 1 m height, pinned at its two far corners, and a camera.

    ``model`` picks the solver (xpbd, verlet, mass_spring, implicit) with its default settings."""
    sheet = mesh.grid(n, n, 1.0, 1.0, center=(0.0, 1.0, 0.0), plane="xz")       # [m]
    entity = app.spawn(Cloth.from_mesh(sheet, "cotton", model=model), Pin.corners(sheet, "top"))
    app.spawn(Camera(target=(0.0, 0.55, -0.3), distance=2.4, yaw=0.35, pitch=0.2))   # [m], [rad]; for windows
    return entity


def main(argv: Sequence[str] | None = None) -> dict:
    p = parser("python -m loom.games.hanging_sheet")
    p.add_argument("--n", type=int, default=32, help="particles per side (default 32)")
    p.add_argument("--model", choices=MODELS, default="xpbd", help="cloth solver (default xpbd)")
    args, _ = p.parse_known_args(argv)
    if args.n < 2:
        p.error(f"--n = {args.n}: a sheet needs at least 2 particles per side")
    app = App(dt=DT, substeps=SUBSTEPS)
    app.add_plugin(DefaultPlugins)
    app.add_plugin(GLRenderPlugin(width=960, height=640))      # opt-in renderer: no GL until a frame is drawn
    app.add_plugin(WindowPlugin(title="Loom: hanging sheet"))
    build_scene(app, n=args.n, model=args.model)
    return run_app(app, argv, arg_parser=p)


if __name__ == "__main__":
    main()
