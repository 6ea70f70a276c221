"""Cape: a 2D platformer hero on pymunk, with a cloth cape pinned at the shoulders.

The hero is a pymunk box that runs and jumps over platforms; the level and the hero are Loom
colliders through the pymunk bridge (extruded 0.4 m along z). He is drawn as a figure (loom.prefabs.figure:
head, torso, swinging arms and legs) that turns to face the way he runs. The cape — 20 × 30
particles, 0.5 m × 0.6 m — hangs from his shoulders on his back (pins carried by a ``Transform`` that
follows the body and turns with him), streams behind him when he runs, collides with his body and the
level, and billows in the wind zone. The camera looks from the side and a little behind, so the cape
is in view.

Run: python -m loom.games.cape [--headless --frames 600 --report json] [--screenshot out.png]
Keys: ←/→ run, Space/↑ jump, V views, Esc quit. Headless, a scripted run (right, jumps, back left) plays.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pygame
import pymunk

from loom import Figure, GLRenderPlugin, WindowPlugin, pose_figure, spawn_figure
from loom.components import (Camera, Cloth, ClothStyle, ColliderStyle, InputState, Pin, Plane, Prop, RenderSettings,
                             RigidBody2D, Space2D, Transform, Wind)
from loom.engine import App, Stage, Window, mesh
from loom.launch import parser, run_app
from loom.systems import ClothSet, DefaultPlugins

DT = 1 / 60
"""[s] per step. DT and SUBSTEPS are this game's step: main's App and ``python -m loom.files.bake`` use them."""
SUBSTEPS = 7
"""Substeps per step: 7 keeps the cape within its silk's 2 % stretch limit over the scripted run
(``python -m loom.benchmarks scenes --scene cape``); 8 cost more and stretch it no less
(docs/performance.md, "Moved from docstrings")."""
HERO_SIZE = (0.4, 0.8)        # [m] width, height
HERO_DEPTH = 0.4              # [m] extent along z of the hero's collider
CAPE_SIZE = (0.5, 0.6)        # [m] width, length: ends 0.1 m above the ground
RUN_SPEED = 3.0               # [m/s]
RUN_ACCELERATION = 25.0       # [m/s²]: 0.12 s from standing to a run (an instant turn yanks the cape)
JUMP_SPEED = 5.5              # [m/s]
PLATFORMS = [((-6.0, 0.0), (18.0, 0.0)), ((5.0, 1.0), (6.5, 1.0)), ((8.5, 1.5), (10.0, 1.5))]
"""Ground and two platforms, segment end points [m]; high enough to run under, low enough to jump onto."""
WIND_ZONES = [((11.0, 15.0), (-7.0, 1.0, 0.0))]
"""(x range [m], wind velocity [m/s]) where the air moves: a headwind past the second platform."""
TURN_RATE = 9.0
"""How fast the hero turns round [rad/s] (half a turn in 0.35 s): the cape swings round behind him."""
NECK = (-HERO_SIZE[0] / 2 - 0.015, HERO_SIZE[1] / 2 + 0.04)
"""Where the cape's top edge is held [m], in the hero's frame (x forward, y up): behind his shoulders and 4 cm
above his collision box, so the pins never enter the box as he turns round and the rows below them ride over
its top edge (closer, single links are pinched in the turn); the cape hangs down his back."""
CAMERA_YAW = -0.8
"""Camera yaw [rad] while the hero faces +x: from his side and a little behind him (mirrored when he faces −x)."""
GRASS = (0.34, 0.52, 0.25)
PATH = (0.58, 0.50, 0.40)
STONE = (0.60, 0.58, 0.55)


@dataclass
class Hero:
    """The player's intent this step: run direction (−1, 0, 1) and whether to jump."""

    body: pymunk.Body
    run: float = 0.0
    jump: bool = False
    scripted: bool = True
    """Headless: follow SCRIPT instead of the keyboard."""
    anchor: int = 0
    """Entity whose Transform carries the cape's pins: at the body, turned the way the hero faces."""
    yaw: float = 0.0
    """Which way the hero faces [rad] about +y: 0 is +x (right), −π is −x (left); he turns through −π/2,
    toward the camera, so the cape swings round behind him."""
    figure: Figure | None = None
    """The drawn character (loom.prefabs.figure)."""
    at: np.ndarray = field(default_factory=lambda: np.zeros(3))
    """Where his body is [m], (3,), rewritten each step for the figure."""


SCRIPT = [(0.0, 1.0, False), (1.2, 1.0, True), (1.3, 1.0, False), (2.6, 1.0, True), (2.7, 1.0, False),
          (5.5, -1.0, False), (6.5, -1.0, True), (6.6, -1.0, False), (9.8, 0.0, False)]
"""(time [s], run direction, jump) from that time on: run right jumping onto both platforms, turn
back under them, jump once more, stop in the open past them."""


def build_scene(app: App) -> tuple[Cloth, Hero]:
    """Spawn the level, the hero and his cape; return (cape, hero)."""
    space = pymunk.Space()
    space.gravity = (0.0, -9.81)
    app.insert_resource(Space2D(space))
    for a, b in PLATFORMS:
        segment = pymunk.Segment(space.static_body, a, b, 0.05)
        segment.friction = 0.9
        space.add(segment)
    app.spawn(RigidBody2D(space.static_body, depth=1.2, friction=0.8))
    body = pymunk.Body(70.0, math.inf)                                   # 70 kg, never tips over
    body.position = (0.0, HERO_SIZE[1] / 2 + 0.05)
    box = pymunk.Poly.create_box(body, HERO_SIZE)
    box.friction = 0.9
    space.add(body, box)
    hero = Hero(body)
    app.spawn(RigidBody2D(body, depth=HERO_DEPTH, friction=0.3), Transform.from_2d(*body.position), hero)
    centre = np.array([*body.position, 0.0])
    hero.anchor = app.spawn(Transform(position=centre))
    # the cape's top edge runs across his back just behind the neck (the body frame's z), and it hangs down
    cape_mesh = mesh.grid(20, 30, *CAPE_SIZE, plane="yz",
                          center=centre + (NECK[0], NECK[1] - CAPE_SIZE[1] / 2, 0.0))
    shoulders = cape_mesh.side("top")
    offsets = cape_mesh.positions[shoulders] - centre
    cape = Cloth.from_mesh(cape_mesh, "silk", thickness=0.01)
    app.spawn(cape, Pin(index=shoulders, attach_to=hero.anchor, offset=offsets),
              ClothStyle(front_color=(0.78, 0.10, 0.12), back_color=(0.55, 0.06, 0.10), subdivision=1))
    hero.figure = spawn_figure(app, tuple(centre))
    app.spawn(Prop(Plane((0.0, 1.0, 0.0)), color=GRASS, tiles=1.0), Transform(position=(0.0, -0.02, 0.0)))
    app.spawn(Wind(velocity=(0.0, 0.0, 0.0), gust=0.3, turbulence=0.2, seed=3, active=False))
    app.spawn(Camera(target=(0.0, 1.0, 0.0), distance=3.6, yaw=CAMERA_YAW, pitch=0.22, fov_y=math.radians(50.0)))   # side, a little
                                                                                               # behind him
    looks = app.insert_resource(RenderSettings(), replace=False)        # the renderer's, if one was added
    looks.light_direction = (-0.35, 0.8, 0.45)                           # from behind the camera, left: shadows
                                                                         # fall to the right, in view
    app.add_system(read_keys, Stage.INPUT)
    app.add_system(follow_hero, Stage.POST_STEP)                      # headless screenshots follow too
    app.add_system(control_hero, Stage.PRE_STEP, in_set=ClothSet.PIN_TARGETS, before="sync_bodies")
    app.add_system(carry_cape, Stage.PRE_STEP, in_set=ClothSet.PIN_TARGETS, after="sync_bodies")
    app.add_system(style_level, Stage.POST_STEP)
    app.add_system(animate_hero, Stage.POST_STEP)
    app.add_system(blow_in_zones, Stage.PRE_STEP, in_set=ClothSet.PIN_TARGETS)           # before the wind acts
    app.add_reporter(cape_report)
    return cape, hero


def read_keys(app: App, dt: float) -> None:
    """In a window, the keyboard drives the hero (the headless run follows SCRIPT)."""
    state = app.resources.get(InputState)
    if app.resources.get(Window) is None or state is None:
        return
    for _, hero in app.query(Hero):
        hero.scripted = False
        hero.run = float(pygame.K_RIGHT in state.keys) - float(pygame.K_LEFT in state.keys)
        hero.jump = bool({pygame.K_SPACE, pygame.K_UP} & state.keys)


def follow_hero(app: App, dt: float) -> None:
    """Keep the camera on the hero, a little ahead of him, and swing it round behind his back (CAMERA_YAW on the
    side away from where he faces) so the cape stays in view whichever way he runs."""
    follow = 1.0 - math.exp(-dt / 0.6)                                    # 0.6 s to swing round
    for _, hero in app.query(Hero):
        for _, camera in app.query(Camera):
            ahead = 0.25 * hero.body.velocity.x
            camera.target[:2] = (hero.body.position.x + ahead, max(hero.body.position.y + 0.1, 0.55))
            camera.yaw += (CAMERA_YAW * math.cos(hero.yaw) - camera.yaw) * follow


def carry_cape(app: App, dt: float) -> None:
    """Turn the hero toward the way he runs and move the cape's pin frame with him (after pymunk moved him)."""
    for _, hero in app.query(Hero):
        if hero.run > 0.0:
            goal = 0.0
        elif hero.run < 0.0:
            goal = -math.pi
        else:
            goal = hero.yaw
        hero.yaw += max(-TURN_RATE * dt, min(TURN_RATE * dt, goal - hero.yaw))
        anchor = app.try_get(hero.anchor, Transform)
        if anchor is not None:                                            # in place: no array made each step
            anchor.position[0], anchor.position[1] = hero.body.position.x, hero.body.position.y
            c, s = math.cos(hero.yaw), math.sin(hero.yaw)                 # a turn by yaw about +y
            anchor.rotation[0, 0], anchor.rotation[0, 2], anchor.rotation[2, 0], anchor.rotation[2, 2] = c, s, -s, c


def animate_hero(app: App, dt: float) -> None:
    """Pose the hero's figure: facing his yaw, legs and arms swinging with his speed, tucked in the air."""
    for _, hero in app.query(Hero):
        if hero.figure is not None:
            body = hero.body
            hero.at[0], hero.at[1] = body.position.x, body.position.y
            pose_figure(app, hero.figure, hero.at, hero.yaw, body.velocity.x, not _grounded(body), dt)


def style_level(app: App, dt: float) -> None:
    """Once the pymunk bridge made colliders of the level and the hero: a path and stone ledges, and the hero's
    box hidden (the figure shows him)."""
    for _, rigid in app.query(RigidBody2D):
        for entity, shape in zip(rigid.shape_entities, rigid.shapes):
            if app.try_get(entity, ColliderStyle) is not None:
                continue
            if rigid.body.body_type == pymunk.Body.STATIC:
                ground = isinstance(shape, pymunk.Segment) and shape.a.y <= 0.0 and shape.b.y <= 0.0
                app.add_component(entity, ColliderStyle(color=PATH if ground else STONE))
            else:
                app.add_component(entity, ColliderStyle(visible=False))


def blow_in_zones(app: App, dt: float) -> None:
    """The wind blows while the hero is inside a wind zone."""
    for _, hero in app.query(Hero):
        x = hero.body.position.x
        zone = next((velocity for (x0, x1), velocity in WIND_ZONES if x0 <= x <= x1), None)
        for _, wind in app.query(Wind):
            wind.active = zone is not None
            if zone is not None:
                wind.velocity[:] = zone


def control_hero(app: App, dt: float) -> None:
    """Turn the hero's intent (script or keys) into pymunk velocity: run, and jump when grounded."""
    for _, hero in app.query(Hero):
        if hero.scripted:
            t = app.clock.time
            _, hero.run, hero.jump = max((row for row in SCRIPT if row[0] <= t + 1e-9), key=lambda row: row[0])
        body = hero.body
        change = hero.run * RUN_SPEED - body.velocity.x
        step = max(-RUN_ACCELERATION * dt, min(RUN_ACCELERATION * dt, change))
        body.velocity = (body.velocity.x + step, body.velocity.y)
        if hero.jump and _grounded(body):
            body.velocity = (body.velocity.x, JUMP_SPEED)


def _grounded(body: pymunk.Body) -> bool:
    """True if the body rests on something below it (a contact whose normal points up)."""
    normals: list[float] = []
    body.each_arbiter(lambda arbiter: normals.append(arbiter.normal.y))    # the contact normal (half the cost of
    return any(abs(n) > 0.7 for n in normals)                              # building its contact point set)


def cape_report(app: App) -> dict:
    """Hero position and how many cape particles are inside the hero's body beyond the margin."""
    out: dict = {}
    for _, hero in app.query(Hero):
        out["hero_x"] = round(hero.body.position.x, 4)
        out["hero_y"] = round(hero.body.position.y, 4)
        out["cape_inside_hero"] = int(inside_hero(app, hero).sum())
    return out


def inside_hero(app: App, hero: Hero, margin: float = 0.0) -> np.ndarray:
    """Mask of cape particles inside the hero's box (shrunk by ``margin`` [m]) — a penetration check."""
    half = np.array([HERO_SIZE[0] / 2, HERO_SIZE[1] / 2, HERO_DEPTH / 2]) - margin
    centre = np.array([hero.body.position.x, hero.body.position.y, 0.0])
    masks = [np.all(np.abs(cloth.x - centre) < half, axis=1) for _, cloth in app.query(Cloth)]
    return np.concatenate(masks) if masks else np.zeros(0, bool)


FIRST_LAUNCH_COMPILES = 71
"""Functions numba compiles in a first launch's first 10 frames (an empty cache, a window, one process): the
loading view's progress is a fraction of it (kernels the compile-ahead worker compiled count as they load).
Measured with the startup benchmark's ``--kernels`` total (``compiles``).
"""

KERNELS = Path(__file__).resolve().parent / "kernels" / "cape.pickle"
"""The kernel list a first launch compiles on a second core (``loom.launch.compile_ahead``; regenerate with
``python -m loom.games --kernel-lists``)."""


def main(argv: Sequence[str] | None = None) -> dict:
    app = App(dt=DT, substeps=SUBSTEPS)
    app.add_plugin(DefaultPlugins)
    app.add_plugin(GLRenderPlugin(width=960, height=540))
    app.add_plugin(WindowPlugin(title="Loom — cape"))
    return run_app(app, argv, arg_parser=parser("python -m loom.games.cape"), build=build_scene,
                   compiles=FIRST_LAUNCH_COMPILES, kernels=KERNELS)


if __name__ == "__main__":
    main()
