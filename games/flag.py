"""Flag: a 2 m × 1 m flag on a pole in gusty wind, and with --sail a boat's square sail filling in it (Provot 1995).

Provot's two wind scenes: "a flag in a strong wind" — pinned along the hoist to a pole, streaming
and flapping in gusts — and "wind in a sail" (``--sail``): a square sail laced along its head to a yard
on a boat's mast, its two lower corners tied down by ropes, with some slack, so the wind blows a belly
into it. Wind acts per triangle (drag along the normal, lift across it; systems/forces/wind.py).

Run: python -m loom.games.flag [--sail] [--headless --frames 600 --report json] [--screenshot out.png]
Keys (window): right-drag orbit, wheel zoom, V views, W wind on/off, Esc quit.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pygame

from loom import GLRenderPlugin, WindowPlugin
from loom.components import (Box, Camera, Capsule, Cloth, ClothStyle, Collider, ColliderStyle, Cylinder, InputState,
                             Pin, Plane, Prism, Prop, Sphere, Transform, Wind)
from loom.engine import App, Stage, mesh
from loom.launch import parser, run_app
from loom.systems import DefaultPlugins

POLE_TOP = 3.0                # [m]
WIND = (6.0, 0.0, 1.0)        # [m/s]: a fresh breeze, slightly across
DT = 1 / 60
"""[s] per step. DT and SUBSTEPS are this game's step: main's App and ``python -m loom.files.bake`` use them."""
SUBSTEPS = 4
"""Per step: 4 substeps of 2 sweeps stretch, flutter and reach in the gusts as 8 do, with no refused step, for
less (docs/performance.md, "Moved from docstrings")."""

BOAT = (-3.9, 0.0, 0.4)        # [m] the boat's keel under the mast, on the beach
HEADING = -0.45               # [rad] the boat's turn about y: its sail faces (cos 0.45, 0, sin 0.45) downwind
DECK = 0.42                   # [m] height of the deck above the sand
MAST_TOP = 3.05               # [m]
YARD = 2.55                   # [m] height of the yard the sail's head is laced to
SAIL = (1.5, 1.4)             # [m] the sail's width (along the yard) and height, as cut
SAIL_GRID = (24, 22)          # particles across and down: 528
SLACK = 0.86                  # [-] the clews are tied this fraction of the sail's height below the yard
TIE_IN = 0.94                 # [-] and this fraction of its half-width out from the middle
SAG_OUT = 0.25                # [m] and this far downwind of the yard
SAIL_STRETCH = 0.05
"""Provot's limit on the sail's canvas [-] (his critical deformation rate τc: no stretch or shear link longer than
(1 + τc) × its rest length). Provot's own 10 % is rubbery for sailcloth; 5 % gives the same belly at the same cost,
a tighter limit costs more for a sail that looks the same (docs/performance.md, "Moved from docstrings")."""
WOOD, DARK_WOOD, ROPE = (0.55, 0.38, 0.22), (0.36, 0.23, 0.14), (0.78, 0.68, 0.48)
SAND = (0.80, 0.72, 0.53)


@dataclass
class Sail:
    """App resource (with ``--sail``): the sail's entity and the four corners its belly is measured against."""

    entity: int
    """Entity of the sail's Cloth and Pin."""
    corners: np.ndarray
    """Particle indices of the head's two ends and the two tied clews, (4,)."""


FLAG_SHEAR = 0.3
"""The flag's Provot limit [-] (``ClothMaterial.strain_limit``: its stretch and shear links at most 30 % long; the
denim's stretch limit, 1.2 %, holds its stretch links tighter): where woven cloth's yarns lock in shear, so the
whipping fly's cells do not collapse. Not tighter: with shear links limited near 10 %, the gusts keep them at the
limit and its corrections along them stretch the yarns to the stretch limit, at more cost; at 0.3 the stretch
stays lower, the frame cheaper (docs/performance.md, "Moved from docstrings")."""


def build_scene(app: App, sail: bool = False) -> tuple[Cloth, Cloth | None]:
    """Spawn the beach, the pole, the flag (990 particles), with ``sail`` the boat and its sail, the wind and a
    camera; return (flag, sail or None)."""
    app.spawn(Prop(Plane(), color=SAND, tiles=1.0), Transform())                 # the beach: scenery, no collisions
    app.spawn(Collider(Capsule(0.04, POLE_TOP / 2)), Transform(position=(-1.04, POLE_TOP / 2, 0.0)),
              ColliderStyle(color=(0.85, 0.86, 0.88)))                             # a white flagpole
    app.spawn(Prop(Sphere(0.07), color=(0.9, 0.75, 0.25)), Transform(position=(-1.04, POLE_TOP + 0.08, 0.0)))
    app.spawn(Prop(Cylinder(0.16, 0.06), color=(0.55, 0.55, 0.57)), Transform(position=(-1.04, 0.06, 0.0)))
    flag_mesh = mesh.grid(45, 22, 2.0, 1.0, center=(0.0, POLE_TOP - 0.5, 0.0))            # ≈ 1,000 particles
    flag = Cloth.from_mesh(flag_mesh, "denim", thickness=0.01, strain_limit=FLAG_SHEAR)   # Provot: the whip
    app.spawn(flag, Pin.edge(flag_mesh, "left"), ClothStyle(front_color=(0.8, 0.1, 0.12),
                                                             back_color=(0.9, 0.85, 0.2)))
    held = None
    if sail:
        held = app.get(build_sail(app).entity, Cloth)
    app.spawn(Wind(velocity=WIND, gust=0.35, gust_period=2.5, turbulence=0.15, seed=7))
    app.spawn(Camera(target=(-1.5, 1.6, 0.1) if sail else (0.2, 2.4, 0.0), distance=7.0 if sail else 4.5,
                     yaw=0.05 if sail else -0.35, pitch=0.12 if sail else 0.15))
    app.add_system(toggle_wind, Stage.INPUT)
    return flag, held


def build_sail(app: App) -> Sail:
    """Spawn the boat (hull, deck, mast, yard, stays and sheets as props; the mast also a collider) and the sail.

    The rig is built in the boat's frame (x forward, y up, z to port) and turned ``HEADING`` about y: the yard
    runs along z, the sail hangs forward (+x, downwind) of it. Its head is pinned along the yard, its two lower
    corners (the clews) are tied ``SLACK`` of its height below the yard and ``SAG_OUT`` forward, so the cloth has
    slack to fill. It starts in that loose shape and the wind blows the belly into it within about a second."""
    turn = Transform.from_axis_angle(BOAT, (0.0, 1.0, 0.0), HEADING)
    at = turn.to_world                                       # boat frame → world [m]
    width, height = SAIL
    # the hull: a punt's side profile (long gunwale, shorter keel) extruded across the beam, and its deck
    hull = Prism(np.array([[-0.8, 0.0], [0.8, 0.0], [1.15, DECK], [-1.15, DECK]]), half_depth=0.42)
    app.spawn(Prop(hull, color=DARK_WOOD), Transform(position=BOAT, rotation=turn.rotation))
    app.spawn(Prop(Box((1.17, 0.025, 0.44)), color=WOOD), Transform(position=at((0.0, DECK, 0.0)),
                                                                     rotation=turn.rotation))
    mast_half = (MAST_TOP - DECK) / 2
    app.spawn(Collider(Capsule(0.045, mast_half)), Transform(position=at((0.0, DECK + mast_half, 0.0))),
              ColliderStyle(color=WOOD))
    yard_x = 0.09                                            # the yard hangs just forward of the mast
    yard = Transform.from_axis_angle(at((yard_x, YARD, 0.0)), (1.0, 0.0, 0.0), math.pi / 2)
    app.spawn(Prop(Cylinder(0.03, width / 2 + 0.12), color=WOOD),
              Transform(position=yard.position, rotation=turn.rotation @ yard.rotation))
    sheet = mesh.grid(*SAIL_GRID, width, height, center=(yard_x, YARD - height / 2, 0.0), plane="yz")
    cloth = Cloth.from_mesh(sheet, "denim", thickness=0.01, strain_limit=SAIL_STRETCH)
    loose = loose_sail(sheet.positions, yard_x)             # boat frame
    shaped = at(loose)
    cloth.x[:] = shaped
    cloth.x_prev[:] = shaped
    head, clews = sheet.side("top"), sheet.side("bottom_corners")
    pins = np.concatenate([head, clews])
    entity = app.spawn(cloth, Pin(index=pins, target=shaped[pins]),
                       ClothStyle(front_color=(1.0, 1.0, 1.0), back_color=(0.9, 0.9, 0.9), texture=stripes()))
    # rigging: stays from the masthead to the stern and both sides (none forward: the sail fills there), lifts to
    # the yard's ends, and the sheets that tie the clews down to the deck
    top = at((0.0, MAST_TOP - 0.05, 0.0))
    for end in ((-1.1, DECK, 0.0), (-0.3, DECK, 0.42), (-0.3, DECK, -0.42)):
        rope(app, top, at(end))
    for side in (1.0, -1.0):
        rope(app, top, at((yard_x, YARD, side * (width / 2 + 0.1))))
    for clew in clews:
        rope(app, shaped[clew], at((0.95, DECK, np.sign(loose[clew, 2]) * 0.4)))
    sail = app.insert_resource(Sail(entity, np.concatenate([head[[0, -1]], clews])))
    app.add_reporter(sail_report)
    return sail


def stripes(count: int = 7) -> np.ndarray:
    """The sail's cloth: ``count`` vertical stripes, cream and rust red, as an image (h, w, 3) uint8 (the stripes
    bend with the belly, so its curve shows at a glance)."""
    colors = np.array([(238, 228, 204), (176, 62, 42)], np.uint8)
    columns = (np.arange(count * 16) // 16) % 2
    return np.ascontiguousarray(np.broadcast_to(colors[columns], (8, count * 16, 3)))


def loose_sail(rest: np.ndarray, yard_x: float) -> np.ndarray:
    """The sail's particles [m, boat frame] hung from the yard with its clews tied in (``SLACK``, ``TIE_IN``,
    ``SAG_OUT``): the rest grid squeezed toward the head, each row slid forward in proportion to its depth."""
    width, height = SAIL
    down = (YARD - rest[:, 1]) / height                      # 0 at the head … 1 at the foot
    x = rest.copy()
    x[:, 0] = yard_x + SAG_OUT * down
    x[:, 1] = YARD - SLACK * height * down
    x[:, 2] = rest[:, 2] * (1.0 - (1.0 - TIE_IN) * down)
    return x


def belly_depth(cloth: Cloth, corners: np.ndarray) -> float:
    """The sail's depth [m]: the largest distance of its particles from the plane that best fits its four
    corners (the two ends of the head and the two clews; a least-squares plane, exact when they are coplanar)."""
    points = cloth.x[corners]
    middle = points.mean(axis=0)
    normal = np.linalg.svd(points - middle)[2][2]
    return float(np.abs((cloth.x - middle) @ normal).max())


def sail_report(app: App) -> dict:
    """The sail's belly now, as a fraction of its width (``belly_depth`` / SAIL[0])."""
    sail = app.resource(Sail)
    return {"sail_belly": round(belly_depth(app.get(sail.entity, Cloth), sail.corners) / SAIL[0], 4)}


def rope(app: App, a, b, radius: float = 0.008, color=ROPE) -> int:
    """Spawn a straight rope from ``a`` to ``b`` [m]: a thin Cylinder prop, its y axis turned onto b − a."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    d = b - a
    length = float(np.linalg.norm(d))
    axis = np.cross((0.0, 1.0, 0.0), d)
    middle = (a + b) / 2
    if np.linalg.norm(axis) < 1e-9 * length:                 # already along ±y
        transform = Transform.from_axis_angle(middle, (1.0, 0.0, 0.0), 0.0 if d[1] > 0 else math.pi)
    else:
        transform = Transform.from_axis_angle(middle, axis, math.acos(np.clip(d[1] / length, -1.0, 1.0)))
    return app.spawn(Prop(Cylinder(radius, length / 2), color=color), transform)


def toggle_wind(app: App, dt: float) -> None:
    """W turns the wind off and on (window only)."""
    state = app.resources.get(InputState)
    if state is not None and pygame.K_w in state.keys_pressed:
        for _, wind in app.query(Wind):
            wind.active = not wind.active


FIRST_LAUNCH_COMPILES = 69
"""Functions numba compiles in a first launch's first 10 frames (an empty cache, a window, one process): the
loading view's progress is a fraction of it (kernels the compile-ahead worker compiled count as they load).
Measured with the startup benchmark's ``--kernels`` total (``compiles``).
"""

KERNELS = Path(__file__).resolve().parent / "kernels" / "flag.pickle"
"""The kernel list a first launch compiles on a second core (``loom.launch.compile_ahead``; regenerate with
``python -m loom.games --kernel-lists``)."""


def main(argv: Sequence[str] | None = None) -> dict:
    p = parser("python -m loom.games.flag")
    p.add_argument("--sail", action="store_true", help="add Provot's second scene: a boat's sail filling in the wind")
    args, _ = p.parse_known_args(argv)
    app = App(dt=DT, substeps=SUBSTEPS)
    app.add_plugin(DefaultPlugins)
    app.add_plugin(GLRenderPlugin(width=960, height=640))
    app.add_plugin(WindowPlugin(title="Loom — flag and sail" if args.sail else "Loom — flag"))
    return run_app(app, argv, arg_parser=p, build=lambda a: build_scene(a, sail=args.sail),
                   compiles=FIRST_LAUNCH_COMPILES, kernels=KERNELS)


if __name__ == "__main__":
    main()
