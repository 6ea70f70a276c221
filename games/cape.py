"""Cape: a 2D platformer hero on pymunk, with a cloth cape pinned at the shoulders.

The hero is a pymunk box that runs and jumps over platforms; the level and the hero are Loom
colliders through the pymunk bridge (extruded 0.4 m along z). The cape — 20 × 30 particles,
0.5 m × 0.6 m — hangs from the hero's shoulders (pins carried by the hero's Transform), flows
behind him, collides with his body and the level, and billows in the wind zones.

Run: python -m loom.games.cape [--headless --frames 600 --report json] [--screenshot out.png]
Keys: ←/→ run, Space/↑ jump, V views, Esc quit. Headless, a scripted run (right, jumps, back left) plays.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pygame
import pymunk

from loom import GLRenderPlugin, WindowPlugin
from loom.components import Camera, Cloth, ClothStyle, InputState, Pin, RigidBody2D, Space2D, Transform, Wind
from loom.engine import App, Stage, Window, mesh, parser, run_app
from loom.systems import ClothSet, DefaultPlugins

DT = 1 / 60
"""[s] per step. DT and SUBSTEPS are this game's step: main's App and ``python -m loom.files.bake`` use them."""
SUBSTEPS = 8
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


@dataclass
class Hero:
    """The player's intent this step: run direction (−1, 0, 1) and whether to jump."""

    body: pymunk.Body
    run: float = 0.0
    jump: bool = False
    scripted: bool = True
    """Headless: follow SCRIPT instead of the keyboard."""


SCRIPT = [(0.0, 1.0, False), (1.2, 1.0, True), (1.3, 1.0, False), (2.6, 1.0, True), (2.7, 1.0, False),
          (5.5, -1.0, False), (6.5, -1.0, True), (6.6, -1.0, False), (9.0, 0.0, False)]
"""(time [s], run direction, jump) from that time on: run right jumping onto both platforms, turn
back under them, jump once more, stop."""


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
    hero_entity = app.spawn(RigidBody2D(body, depth=HERO_DEPTH, friction=0.3), Transform.from_2d(*body.position),
                            hero)
    # the cape hangs from the shoulders, 0.1 m below the top of the head, just behind the body
    shoulder = (0.0, HERO_SIZE[1] / 2 - 0.1 - CAPE_SIZE[1] / 2, -HERO_DEPTH / 2 - 0.03)   # [m] from the hero
    cape_mesh = mesh.grid(20, 30, *CAPE_SIZE, center=np.add(shoulder, (*body.position, 0.0)), plane="xy")
    shoulders = cape_mesh.side("top")
    offsets = cape_mesh.positions[shoulders] - (*body.position, 0.0)
    cape = Cloth.from_mesh(cape_mesh, "silk", thickness=0.01)
    app.spawn(cape, Pin(index=shoulders, attach_to=hero_entity, offset=offsets),
              ClothStyle(front_color=(0.75, 0.08, 0.1), back_color=(0.35, 0.05, 0.3), subdivision=1))
    app.spawn(Wind(velocity=(0.0, 0.0, 0.0), gust=0.3, turbulence=0.2, seed=3, active=False))
    app.spawn(Camera(target=(0.0, 1.0, 0.0), distance=5.0, yaw=-0.45, pitch=0.18))   # side view, turned
                                                                                         # to show the cape
    app.add_system(read_keys, Stage.INPUT)
    app.add_system(follow_hero, Stage.POST_STEP)                      # headless screenshots follow too
    app.add_system(control_hero, Stage.PRE_STEP, in_set=ClothSet.PIN_TARGETS, before="sync_bodies")
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
    """Keep the side-view camera on the hero."""
    for _, hero in app.query(Hero):
        for _, camera in app.query(Camera):
            camera.target[:2] = (hero.body.position.x, max(hero.body.position.y, 1.0))


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
    body.each_arbiter(lambda arbiter: normals.append(arbiter.contact_point_set.normal.y))
    return any(abs(n) > 0.7 for n in normals)


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


def main(argv: Sequence[str] | None = None) -> dict:
    app = App(dt=DT, substeps=SUBSTEPS)
    app.add_plugin(DefaultPlugins)
    app.add_plugin(GLRenderPlugin(width=960, height=540))
    app.add_plugin(WindowPlugin(title="Loom — cape"))
    build_scene(app)
    return run_app(app, argv, arg_parser=parser("python -m loom.games.cape"))


if __name__ == "__main__":
    main()
