"""Hanging sheet: a 1 m cotton tablecloth pegged by two corners to a washing line, falling and swaying in a breeze.

The first scene of every cloth paper (Provot 1995's hanging cloth; Fuhrmann 2003 fig. 3): a horizontal sheet
held by its two far corners falls and swings down. Here the pegs slide together along the line while it falls
(``GAP`` of the sheet's width apart after ``SLIDE`` seconds), so the top edge has slack: it sags between the
pegs and folds fall from them, and a light, gusty breeze keeps the folds moving. It shows stretch (there should
be none to see: the fabric stays within a few per cent), swinging without jitter, and folds.

Run: python -m loom.games.hanging_sheet [--headless --frames 300 --report json] [--n 32] [--model xpbd]
     [--screenshot out.png]
With a display (or under `xvfb-run -a`, or SDL_VIDEODRIVER=offscreen) it opens a window: right-drag orbits,
middle-drag pans, the wheel zooms, V cycles the views (shaded, normals, wireframe, strain, particles), H the
HUD, W the breeze on/off, Esc quits. Headless it prints one report line: frames, particles, sim_ms_per_frame,
max_strain, min_y, nan, top_sag (the pegged edge's middle below the pegs [m]); `--headless --screenshot out.png`
renders the last state offscreen with EGL.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pygame

from loom import GLRenderPlugin, WindowPlugin
from loom.components import (MODELS, Box, Camera, Cloth, ClothStyle, Cylinder, InputState, Pin, Plane, Prop,
                             Transform, Wind)
from loom.engine import App, Stage, mesh
from loom.launch import parser, run_app
from loom.systems import ClothSet, DefaultPlugins

DT = 1 / 60
"""[s] per step. DT and SUBSTEPS are this game's step: main's App and ``python -m loom.files.bake`` use them."""
SUBSTEPS = 16
SIZE = 1.0                    # [m] side of the sheet
HANG = 1.5                    # [m] height of the washing line (and of the sheet at the start)
GAP = 0.62                    # [-] the pegs end this fraction of the sheet's width apart: the top edge's slack
SLIDE = 0.75                  # [s] the pegs slide together over this time from the start (smoothly)
BREEZE = (0.45, 0.0, 1.1)     # [m/s]: a light air toward the camera, a little across; gusts and eddies on top
POST = 0.9                    # [m] the line's posts stand this far either side of the middle
STRAIN_LIMIT = 0.04
"""Provot 1995's deformation limit on the cotton [-] (``ClothMaterial.strain_limit``, his critical deformation
rate τc: no stretch or shear link longer than (1 + τc) × its rest length). Without it the folds the slack makes let
XPBD's two sweeps stretch links in the swag well past what woven cotton would; with it they stay within 4 %. More
sweeps would also do, at more cost (docs/performance.md, "Moved from docstrings")."""


@dataclass
class Line:
    """App resource: the sheet's entity, its two pegged corners and the pegs' props, for the pegs' slide."""

    sheet: int
    """Entity of the Cloth and its Pin (the two far corners)."""
    start: np.ndarray
    """The pegs' positions at the start [m], (2, 3): the flat sheet's far corners."""
    end: np.ndarray
    """The pegs' positions once slid together [m], (2, 3)."""
    pegs: tuple[int, int]
    """Entities of the two peg props (each follows its pin)."""
    top: np.ndarray
    """Particle indices of the sheet's pegged edge, peg to peg, (n,)."""


def build_scene(app: App, n: int = 32, model: str = "xpbd") -> int:
    """Spawn an n×n, 1 m × 1 m horizontal cotton sheet at the washing line's height, pegged at its two far
    corners, the line, the lawn, the breeze and a camera; return the sheet's entity.

    ``model`` picks the solver (xpbd, verlet, mass_spring, implicit) with its default settings."""
    sheet = mesh.grid(n, n, SIZE, SIZE, center=(0.0, HANG, 0.0), plane="xz")       # [m]
    pin = Pin.corners(sheet, "top")                                                # the far edge: z = −SIZE / 2
    cloth = Cloth.from_mesh(sheet, "cotton", model=model, strain_limit=STRAIN_LIMIT)
    entity = app.spawn(cloth, pin, ClothStyle(front_color=(1.0, 1.0, 1.0), back_color=(0.88, 0.88, 0.88),
                                              texture=gingham()))
    start = pin.target.copy()
    end = start * np.array([GAP, 1.0, 1.0])                                       # x toward the middle
    line_z = float(start[0, 2])
    app.spawn(Prop(Plane(), color=(0.36, 0.52, 0.26), tiles=0.5), Transform())    # the lawn: scenery only
    for side in (-1.0, 1.0):                                                       # posts and the line
        app.spawn(Prop(Cylinder(0.03, (HANG + 0.15) / 2), color=(0.5, 0.36, 0.22)),
                  Transform(position=(side * POST, (HANG + 0.15) / 2, line_z)))
    app.spawn(Prop(Cylinder(0.005, POST), color=(0.9, 0.9, 0.88)),
              Transform.from_axis_angle((0.0, HANG + 0.012, line_z), (0.0, 0.0, 1.0), np.pi / 2))
    pegs = tuple(app.spawn(Prop(Box((0.008, 0.035, 0.012)), color=(0.85, 0.62, 0.3)),
                           Transform(position=start[k] + (0.0, 0.01, 0.0))) for k in range(2))
    app.insert_resource(Line(entity, start, end, pegs, sheet.side("top")))
    app.add_reporter(sag_report)
    app.add_system(slide_pegs, Stage.PRE_STEP, before=ClothSet.SAVE)               # before the pins read targets
    app.spawn(Wind(velocity=BREEZE, gust=0.5, gust_period=3.0, turbulence=0.4, seed=3))
    app.add_system(toggle_breeze, Stage.INPUT)
    app.spawn(Camera(target=(0.0, 1.0, -0.35), distance=2.3, yaw=0.35, pitch=0.16))   # [m], [rad]; for windows
    return entity


def gingham(squares: int = 12, px: int = 16) -> np.ndarray:
    """A red gingham tablecloth as an image (h, w, 3) uint8: white, pink where a red band crosses, red where two do."""
    band = (np.arange(squares * px) // px) % 2
    reds = band[:, None] + band[None, :]                                       # 0, 1 or 2 red bands
    colors = np.array([(245, 242, 236), (226, 150, 146), (196, 42, 48)], np.uint8)
    return np.ascontiguousarray(colors[reds])


def peg_positions(t: float, line: Line) -> np.ndarray:
    """Where the pegs are at time ``t`` [s] (2, 3) [m]: from ``start`` to ``end`` by a smoothstep over SLIDE."""
    u = min(max(t / SLIDE, 0.0), 1.0)
    u = u * u * (3.0 - 2.0 * u)
    return line.start + u * (line.end - line.start)


def slide_pegs(app: App, dt: float) -> None:
    """PRE_STEP: move the two pins (and their peg props) to where the pegs are at the end of this step."""
    line = app.resource(Line)
    t = app.clock.time + dt
    if t > SLIDE + dt:                                     # slid together: the pins stay put
        return
    where = peg_positions(t, line)
    pin = app.get(line.sheet, Pin)
    pin.target = where
    for peg, point in zip(line.pegs, where):
        app.get(peg, Transform).position = point + (0.0, 0.01, 0.0)


def top_sag(app: App) -> float:
    """How far the middle of the pegged edge hangs below the pegs [m] (0 for a taut edge)."""
    line = app.resource(Line)
    cloth = app.get(line.sheet, Cloth)
    middle = line.top[line.top.size // 2]
    return float(app.get(line.sheet, Pin).target[:, 1].mean() - cloth.x[middle, 1])


def sag_report(app: App) -> dict:
    """The report's ``top_sag`` [m]: the pegged edge's middle below the pegs."""
    return {"top_sag": round(top_sag(app), 4)}


def toggle_breeze(app: App, dt: float) -> None:
    """W turns the breeze off and on (window only)."""
    state = app.resources.get(InputState)
    if state is not None and pygame.K_w in state.keys_pressed:
        for _, wind in app.query(Wind):
            wind.active = not wind.active


FIRST_LAUNCH_COMPILES = 46
"""Functions numba compiles in a first launch's first 10 frames (an empty cache, a window, one process): the
loading view's progress is a fraction of it (kernels the compile-ahead worker compiled count as they load).
Measured with the startup benchmark's ``--kernels`` total (``compiles``).
"""

KERNELS = Path(__file__).resolve().parent / "kernels" / "hanging_sheet.pickle"
"""The kernel list a first launch compiles on a second core (``loom.launch.compile_ahead``; regenerate with
``python -m loom.games --kernel-lists``)."""


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
    return run_app(app, argv, arg_parser=p, build=lambda a: build_scene(a, n=args.n, model=args.model),
                   compiles=FIRST_LAUNCH_COMPILES, kernels=KERNELS)


if __name__ == "__main__":
    main()
