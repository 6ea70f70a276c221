"""Platformer: a pygame + pymunk side-view game in pixels, its hero in a cloth cape, a flag and a banner in wind zones.

The game is an ordinary pygame platformer: its own window and fixed-step loop (an accumulator of GAME_DT =
1/60 s), a pymunk space in pixels with y down and gravity (0, +GRAVITY) px/s², a level and a hero drawn with
pygame.draw. Loom is a guest: one ``app.step()`` after each ``space.step(GAME_DT)`` (lockstep: Loom's dt is the
game's tick), and one ``SoftRenderer.draw`` into the game's own Surface between the level and the hero sprite,
so the cape hangs behind him. 1 m = 100 px. The flag (on its pole, right) and the banner (under its beam, left)
each sit in their own wind zone (``Wind(region=WindBox(...))``); the hero's cape is outside both, so it feels
neither.

Run: python -m loom.games.platformer [--headless] [--frames N] [--report json|text] [--screenshot out.png]
     [--record out.gif [--record-fps 20] [--record-scale 0.5]]   (the game's Surface, every 3rd tick at 20 fps)
Keys: ←/→ run, Space jump, Esc quit. Headless, a script plays (run right, jump, turn left, run, stand, jump
again, ...) for N frames (default HEADLESS_FRAMES) and the report is printed (one JSON line unless --report
text): the App's report plus the game's numbers (pymunk ticks, cape pixels, frames with a cape particle inside
the hero, flag motion, stretch, draw ms). ``--wind 0`` silences the zones (the cape must not change).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")          # before pygame's import: one JSON line
import pygame  # noqa: E402
import pymunk  # noqa: E402

import loom  # noqa: E402
from loom.launch import HEADLESS_FRAMES, check_outputs, open_recorder, parser, print_report  # noqa: E402

GAME_DT = 1 / 60
"""[s] the game's fixed tick: pymunk steps by it, and Loom takes exactly one step of it per tick."""
DT = GAME_DT
"""[s] Loom's step: the game's tick (``python -m loom.files.bake`` reads DT and SUBSTEPS)."""
SUBSTEPS = 6
SIZE = (960, 540)                                  # [px] the game's screen
PPM = 100.0                                        # [px/m] pixels per metre
GROUND_Y = 470                                     # [px] top of the ground (y down); world y = 0 m there
GRAVITY = 1600.0                                   # [px/s²] down (+y): snappier than 981, the cloth falls as fast
HERO_SIZE = (34, 62)                               # [px] the hero's collision box, width × height
HERO_DEPTH = 0.3                                   # [m] the hero's thickness toward the camera (cloth sees a box)
RUN_SPEED = 250.0                                  # [px/s]
RUN_ACCEL = 2400.0                                 # [px/s²] on the ground (less in the air)
JUMP_SPEED = 640.0                                 # [px/s] up: about 128 px high
MAX_TICKS = 4                                      # most ticks one rendered frame may catch up (a hitch drops time)
PLATFORMS = [(430, 590, 360), (600, 710, 270)]
"""Floating platforms (x0, x1, top y) [px]."""
POLE = (862, 120)                                  # [px] the flag pole's x and its top's y (its foot on the ground)
BEAM = (40, 300, 96)                               # [px] the banner's beam: x0, x1, y
FLAG_WIND = (7.0, 0.0, 1.5)                        # [m/s] the flag's zone: a fresh wind toward +x
BANNER_WIND = (1.2, 0.0, -1.8)                     # [m/s] the banner's zone: a breeze through the banner
WIND_EDGE = 0.1                                    # [m] the zones' soft edge
CAPE_COLOR = (0.8, 0.08, 0.1)                      # RGB in [0, 1]: the only red on screen (tests count it)
CAPE_BACK = (0.55, 0.05, 0.08)
SKY_TOP, SKY_BOTTOM = (96, 150, 214), (186, 218, 240)
GRASS, DIRT, DIRT_DARK = (88, 160, 64), (134, 96, 62), (108, 76, 50)
STONE, STONE_DARK = (150, 150, 160), (112, 112, 124)
WOOD, WOOD_DARK = (150, 108, 64), (110, 76, 44)
SUIT, SUIT_DARK, SKIN, BOOT, BELT = (52, 64, 140), (36, 44, 100), (240, 196, 160), (60, 40, 30), (220, 180, 60)

SCRIPT = [(0, 0.0), (40, 1.0), (160, -1.0), (300, 0.0), (460, 1.0), (540, 0.0)]
"""(first frame, run direction) from that frame on: stand, run right, turn and run left, stand, run right, stand."""
JUMPS = (90, 230, 380, 500)
"""Frames at which the scripted player presses jump (running, running back, standing, running again)."""


def scripted_input(frame: int) -> tuple[float, bool]:
    """(run direction −1/0/1, jump pressed) of the headless script at ``frame``."""
    run = next(d for start, d in reversed(SCRIPT) if frame >= start)
    return run, frame in JUMPS


PIXELS = loom.PixelSpace(PPM, origin=(0.0, GROUND_Y))
"""This game's pixel space (an App resource): 1 m = 100 px, world y = 0 along the ground's top, y down."""


def to_metres(px: float, py: float) -> tuple[float, float]:
    """A game pixel (y down) → world (x, y) [m] (y up, 0 at the ground's top)."""
    x, y, _ = PIXELS.to_metres((px, py))
    return float(x), float(y)


# --- the frame's state, for reports and tests --------------------------------------------------------------------
@dataclass
class FrameState:
    """What one rendered frame left behind (arrays are copies)."""

    frame: int
    """Frames drawn so far (1 after the first)."""
    ticks: int
    """pymunk steps taken so far."""
    steps: int
    """Loom steps taken so far (equals ``ticks``: lockstep)."""
    hero: tuple[float, float]
    """The hero's centre [px], y down."""
    facing: int
    """+1 right, −1 left."""
    grounded: bool
    cape: np.ndarray
    """The cape's particle positions [m], (n, 3)."""
    cape_inside: int
    """Cape particles inside the hero's collision box (extruded HERO_DEPTH along z)."""
    flag_corner: np.ndarray
    """The flag's free lower corner [m], (3,)."""
    banner_corner: np.ndarray
    """The banner's lower right corner [m], (3,)."""
    cape_pixels: int
    """Pixels of the cape's red on the game's screen (0 when the frame was not drawn)."""


# --- the game ------------------------------------------------------------------------------------------------------
@dataclass
class Hero:
    """The player's body and what it is doing."""

    body: pymunk.Body
    shape: pymunk.Poly
    facing: int = 1
    grounded: bool = False
    run_phase: float = 0.0                          # [rad] leg swing of the run cycle


@dataclass
class Platformer:
    """The whole game: pymunk space, Loom App, hero, cloth handles, screen. Build with ``Platformer.create()``."""

    space: pymunk.Space
    app: loom.App
    hero: Hero
    screen: pygame.Surface
    renderer: loom.SoftRenderer
    camera: loom.Camera
    cape_handle: loom.Cape
    """The cape's handle (``loom.cape``): ``.cloth``, ``.pin``, ``.face(±1)``."""
    flag: loom.Cloth
    banner: loom.Cloth
    flag_corner: int
    banner_corner: int
    winds: list[loom.Wind]
    background: pygame.Surface
    ticks: int = 0
    """pymunk steps taken."""
    frame: int = 0
    """Frames drawn."""
    banked: float = 0.0
    """[s] wall time not yet paid out in ticks (``advance``)."""
    draw_s: float = 0.0
    hero_entity: int = 0
    """The hero's entity (RigidBody2D, and the Transform the bridge keeps on it: it carries the cape)."""

    # --- building ---------------------------------------------------------------------------------------------
    @classmethod
    def create(cls, screen: pygame.Surface, *, wind: float = 1.0) -> Platformer:
        """The game's App (dt: the game's tick) and its scene (``build_scene``); ``wind`` scales both zones' air [-]."""
        app = loom.App(dt=GAME_DT, substeps=SUBSTEPS).add_plugin(loom.DefaultPlugins)   # dt: the game's tick
        scene = build_scene(app, wind=wind)
        return cls(scene.space, app, scene.hero, screen, loom.SoftRenderer(SIZE), PIXELS.camera(SIZE), scene.cape,
                   scene.flag.cloth, scene.banner, scene.flag_corner, scene.banner_corner, scene.winds,
                   draw_background(SIZE), hero_entity=scene.hero_entity)

    # --- one tick, one frame ----------------------------------------------------------------------------------
    def tick(self, run: float, jump: bool) -> None:
        """One fixed game tick of GAME_DT: the hero's controls, ``space.step``, then exactly one Loom step."""
        hero, body = self.hero, self.hero.body
        hero.grounded = grounded(body)
        accel = RUN_ACCEL if hero.grounded else RUN_ACCEL * 0.5
        vx = body.velocity.x
        vx += max(-accel * GAME_DT, min(accel * GAME_DT, run * RUN_SPEED - vx))
        vy = -JUMP_SPEED if jump and hero.grounded else body.velocity.y
        body.velocity = (vx, vy)
        if run and int(math.copysign(1, run)) != hero.facing:
            hero.facing = int(math.copysign(1, run))
            self.cape_handle.face(hero.facing)               # the cape swings over to his back
        hero.run_phase = (hero.run_phase + abs(vx) * GAME_DT / 9.0) % (2 * math.pi) if hero.grounded else 0.0
        self.space.step(GAME_DT)
        self.app.step()
        self.ticks += 1

    @property
    def cape(self) -> loom.Cloth:
        """The hero's cape."""
        return self.cape_handle.cloth

    def advance(self, real_dt: float, run: float, jump: bool) -> int:
        """Bank ``real_dt`` [s] of wall time and pay it out in whole ticks of GAME_DT (at most MAX_TICKS: a hitch
        drops time instead of freezing the game); return the ticks taken. Each tick steps pymunk and Loom once."""
        self.banked = min(self.banked + real_dt, MAX_TICKS * GAME_DT)
        taken = 0
        while self.banked >= GAME_DT - 1e-12:
            self.tick(run, jump and taken == 0)                     # one press, one jump
            self.banked -= GAME_DT
            taken += 1
        return taken

    def draw(self) -> None:
        """The game's frame: background and level, then every cloth (SoftRenderer), then the hero on top."""
        screen = self.screen
        screen.blit(self.background, (0, 0))
        draw_level(screen)
        start = time.perf_counter()
        self.renderer.draw(self.app, screen, self.camera)
        self.draw_s += time.perf_counter() - start
        draw_hero(screen, self.hero)

    def state(self, drawn: bool) -> FrameState:
        """This frame's FrameState (``drawn``: count the cape's pixels on the screen)."""
        body = self.hero.body
        return FrameState(self.frame, self.ticks, self.app.clock.step_index, (body.position.x, body.position.y),
                          self.hero.facing, self.hero.grounded, self.cape.x.copy(), int(self.inside_hero().sum()),
                          self.flag.x[self.flag_corner].copy(), self.banner.x[self.banner_corner].copy(),
                          cape_pixels(self.screen) if drawn else 0)

    def inside_hero(self) -> np.ndarray:
        """Mask of cape particles inside the hero's collision box [m] (its HERO_DEPTH along z)."""
        cx, cy = to_metres(*self.hero.body.position)
        half = np.array([HERO_SIZE[0] / 2 / PPM, HERO_SIZE[1] / 2 / PPM, HERO_DEPTH / 2])
        return np.all(np.abs(self.cape.x - (cx, cy, 0.0)) < half, axis=1)


@dataclass
class Scene:
    """What ``build_scene`` made: the game's pymunk space and hero, and Loom's cloths and zones."""

    space: pymunk.Space
    hero: Hero
    hero_entity: int
    cape: loom.Cape
    flag: loom.Flag
    flag_corner: int
    banner: loom.Cloth
    banner_corner: int
    winds: list[loom.Wind]


def build_scene(app: loom.App, *, wind: float = 1.0) -> Scene:
    """The level and the hero in a pymunk space (pixels, y down), and in ``app`` (with DefaultPlugins): the pixel
    space, the level and hero as RigidBody2D, the cape, the flag, the banner and their wind zones (``wind`` scales
    their air [-]). The game steps the space itself (``Platformer.tick``); ``python -m loom.files.bake platformer``
    calls this alone, so there the hero stands still while the cloths move."""
    space = pymunk.Space()
    space.gravity = (0.0, GRAVITY)                                      # [px/s²] y down
    for a, b, r in level_segments():
        seg = pymunk.Segment(space.static_body, a, b, r)
        seg.friction = 1.0
        space.add(seg)
    body = pymunk.Body(70.0, math.inf)                                   # 70 kg, never tips over
    body.position = (200.0, GROUND_Y - HERO_SIZE[1] / 2)
    shape = pymunk.Poly.create_box(body, HERO_SIZE, radius=1.0)
    shape.friction = 0.0                                                 # the game sets its run speed
    space.add(body, shape)
    hero = Hero(body, shape)
    app.insert_resource(loom.PixelSpace(PPM, origin=PIXELS.origin))       # bodies read in the game's pixels
    app.insert_resource(loom.Gravity((0.0, -GRAVITY / PPM, 0.0)))     # the cloth falls like the hero
    app.insert_resource(loom.RenderSettings(light_direction=(0.3, 0.45, 0.84), ambient=0.35))  # lit from the front
    app.spawn(loom.RigidBody2D(space.static_body, depth=1.2, friction=0.8))   # the level: cloth lands on it
    hero_entity, cape = add_cape(app, hero)
    flag_handle, flag_corner = add_flag(app)
    banner, banner_corner = add_banner(app)
    winds = add_wind_zones(app, flag_handle, wind)
    return Scene(space, hero, hero_entity, cape, flag_handle, flag_corner, banner, banner_corner, winds)


def level_segments() -> list[tuple[tuple[float, float], tuple[float, float], float]]:
    """The static level as pymunk segments (a, b, radius) [px]: ground, the screen's side walls, the platforms."""
    w, h = SIZE
    segs = [((-50.0, GROUND_Y + 25.0), (w + 50.0, GROUND_Y + 25.0), 25.0),        # ground: top at GROUND_Y
            ((-10.0, -400.0), (-10.0, GROUND_Y), 10.0), ((w + 10.0, -400.0), (w + 10.0, GROUND_Y), 10.0)]
    segs += [((x0 + 8.0, y + 8.0), (x1 - 8.0, y + 8.0), 8.0) for x0, x1, y in PLATFORMS]   # 16 px thick slabs
    return segs


def grounded(body: pymunk.Body) -> bool:
    """True if the body stands on something: a contact below its centre whose normal is mostly vertical."""
    found = []

    def check(arbiter: pymunk.Arbiter) -> None:
        points = arbiter.contact_point_set
        if abs(points.normal.y) > 0.7 and any(p.point_a.y > body.position.y + HERO_SIZE[1] / 2 - 4 or
                                               p.point_b.y > body.position.y + HERO_SIZE[1] / 2 - 4
                                               for p in points.points):
            found.append(True)
    body.each_arbiter(check)
    return bool(found) and body.velocity.y > -1.0


# --- Loom: cloths, zones, colliders (the existing API; pixels converted here) -----------------------------------
CAPE_LENGTH, CAPE_WIDTH = 50.0, 44.0                 # [px] the cape's length and the width of its hem


def add_cape(app: loom.App, hero: Hero) -> tuple[int, loom.Cape]:
    """The hero as a RigidBody2D (read in the game's pixels; the bridge keeps a Transform on his entity, which
    carries the pins) and his cape from ``loom.cape``: facing the camera, pinned at his shoulders just behind his
    collision extrusion; returns (hero entity, the cape's handle)."""
    entity = app.spawn(loom.RigidBody2D(hero.body, depth=HERO_DEPTH, friction=0.3))
    handle = loom.cape(app, entity, length=CAPE_LENGTH, width=CAPE_WIDTH,
                       style=loom.ClothStyle(front_color=CAPE_COLOR, back_color=CAPE_BACK, texture=None))
    return entity, handle


FLAG_SIZE = (90.0, 56.0)                             # [px] the flag's width (fly) × height (hoist)
FLAG_RESOLUTION = (16, 10)                          # particles along × down


def add_flag(app: loom.App) -> tuple[loom.Flag, int]:
    """The flag from ``loom.flag``: its left edge pinned down the pole from its top, the sheet facing the camera;
    returns its handle and its free lower corner (the fly's foot)."""
    handle = loom.flag(app, POLE, size=FLAG_SIZE, resolution=FLAG_RESOLUTION, style=loom.ClothStyle(
        front_color=(0.98, 0.8, 0.2), back_color=(0.9, 0.7, 0.15), texture="checker", checker_scale=0.15,
        subdivision=1))
    nx = FLAG_RESOLUTION[0]
    return handle, nx - 1                                                   # row 0 is the bottom: its last column


BANNER_SIZE = (1.1, 0.95)                            # [m]


def add_banner(app: loom.App) -> tuple[loom.Cloth, int]:
    """A banner facing the camera, hanging from the beam by its top edge; returns it and its lower right corner."""
    x0, x1, y = BEAM
    cx, top = to_metres((x0 + x1) / 2, y + 6)
    w, h = BANNER_SIZE
    sheet = loom.mesh.grid(14, 12, w, h, center=(cx, top - h / 2, 0.0), plane="xy")
    cloth = loom.Cloth.from_mesh(sheet, "cotton", thickness=0.005)
    app.spawn(cloth, loom.Pin.edge(sheet, "top"),
              loom.ClothStyle(front_color=(0.25, 0.62, 0.5), back_color=(0.16, 0.45, 0.36), texture="checker",
                              checker_scale=0.275, subdivision=0))
    return cloth, int(sheet.side("bottom_corners")[1])


def banner_zone() -> loom.WindBox:
    """The banner's wind zone [m]: around the banner under its beam."""
    x0, x1, y = BEAM
    a = to_metres(x0 - 30, y - 20)
    b = to_metres(x1 + 30, y + 150)
    return loom.WindBox(center=((a[0] + b[0]) / 2, (a[1] + b[1]) / 2, 0.0),
                        half_size=((b[0] - a[0]) / 2, (a[1] - b[1]) / 2, 0.8), edge=WIND_EDGE)


def add_wind_zones(app: loom.App, flag: loom.Flag, strength: float) -> list[loom.Wind]:
    """The flag's zone (``Flag.wind_zone``: a box around the flag's reach) and the banner's (a Wind with a WindBox
    region), each blowing only there; ``strength`` scales their air [-] (0: still)."""
    flag_air = flag.wind_zone(np.multiply(FLAG_WIND, strength), gust=0.3, turbulence=0.35, seed=5)
    banner_air = loom.Wind(velocity=np.multiply(BANNER_WIND, strength), gust=0.5, gust_period=3.0, turbulence=0.3,
                           seed=9, region=banner_zone())
    app.spawn(banner_air)
    return [flag_air, banner_air]


# --- drawing (pygame, pixels) -------------------------------------------------------------------------------------
def draw_background(size: tuple[int, int]) -> pygame.Surface:
    """The sky (a vertical gradient), distant hills and a few clouds, drawn once."""
    w, h = size
    surface = pygame.Surface(size)
    for y in range(h):
        t = y / (h - 1)
        pygame.draw.line(surface, [round(a + (b - a) * t) for a, b in zip(SKY_TOP, SKY_BOTTOM)], (0, y), (w, y))
    for cx, r, colour in ((150, 260, (150, 190, 150)), (520, 320, (136, 180, 140)), (860, 240, (150, 190, 150))):
        pygame.draw.circle(surface, colour, (cx, GROUND_Y + r - 120), r)
    for cx, cy in ((380, 70), (640, 130), (120, 250)):
        for dx, dy, r in ((-24, 6, 18), (0, 0, 24), (24, 6, 18)):
            pygame.draw.circle(surface, (250, 252, 255), (cx + dx, cy + dy), r)
    return surface


def draw_level(screen: pygame.Surface) -> None:
    """Ground, platforms, the flag pole and the banner's beam."""
    w, h = SIZE
    pygame.draw.rect(screen, DIRT, (0, GROUND_Y, w, h - GROUND_Y))
    for x in range(0, w, 48):
        pygame.draw.rect(screen, DIRT_DARK, (x + (12 if x % 96 else 30), GROUND_Y + 28, 10, 6))
    pygame.draw.rect(screen, GRASS, (0, GROUND_Y, w, 10))
    for x0, x1, y in PLATFORMS:
        pygame.draw.rect(screen, STONE, (x0, y, x1 - x0, 16))
        for x in range(x0, x1, 32):
            pygame.draw.line(screen, STONE_DARK, (x, y), (x, y + 15))
        pygame.draw.rect(screen, STONE_DARK, (x0, y, x1 - x0, 16), 2)
        pygame.draw.rect(screen, GRASS, (x0, y, x1 - x0, 4))
    px, top = POLE
    pygame.draw.rect(screen, (90, 90, 96), (px - 3, top, 6, GROUND_Y - top))
    pygame.draw.circle(screen, BELT, (px, top - 4), 6)
    x0, x1, y = BEAM
    for x in (x0 + 14, x1 - 14):
        pygame.draw.rect(screen, WOOD_DARK, (x - 5, y, 10, GROUND_Y - y))
    pygame.draw.rect(screen, WOOD, (x0, y - 4, x1 - x0, 12))
    pygame.draw.rect(screen, WOOD_DARK, (x0, y - 4, x1 - x0, 12), 2)


def draw_hero(screen: pygame.Surface, hero: Hero) -> None:
    """The hero sprite at his body's box: boots, legs swinging when running, suit, belt, head with an eye."""
    x, y = hero.body.position
    w, h = HERO_SIZE
    left, top, f = round(x - w / 2), round(y - h / 2), hero.facing
    swing = math.sin(hero.run_phase) * 5 if hero.grounded else 0.0
    for side, phase in ((-1, swing), (1, -swing)):                                 # legs and boots
        lx = round(x + side * 7 - 4 + phase)
        pygame.draw.rect(screen, SUIT_DARK, (lx, top + h - 20, 9, 16))
        pygame.draw.rect(screen, BOOT, (lx - (1 if f < 0 else 0), top + h - 6, 11, 6))
    pygame.draw.rect(screen, SUIT, (left + 2, top + 22, w - 4, h - 40), border_radius=4)   # body
    pygame.draw.rect(screen, BELT, (left + 2, top + h - 24, w - 4, 4))
    arm = round(x - f * 4 - 3 - swing * 0.6)
    pygame.draw.rect(screen, SUIT_DARK, (arm, top + 26, 7, 18), border_radius=3)
    pygame.draw.circle(screen, SKIN, (round(x + f * 2), top + 12), 12)                     # head
    pygame.draw.rect(screen, SUIT_DARK, (round(x + f * 2) - 12, top, 24, 7), border_top_left_radius=10,
                     border_top_right_radius=10)                                            # hood / hair
    pygame.draw.circle(screen, (30, 30, 40), (round(x + f * 8), top + 11), 2)             # eye, on his front


def cape_pixels(screen: pygame.Surface) -> int:
    """Pixels of the screen in the cape's red: red well above green and blue (nothing else in the game is)."""
    rgb = pygame.surfarray.pixels3d(screen)
    try:
        r, g, b = (rgb[..., i].astype(np.int16) for i in range(3))
        return int(((r > g + 60) & (r > b + 60)).sum())
    finally:
        del rgb


# --- running it -------------------------------------------------------------------------------------------------
def open_game(*, window: bool = False, wind: float = 1.0) -> Platformer:
    """Start pygame's display and build the game: a window (``window``) or, headless, a plain Surface (SDL's
    dummy driver). ``wind`` scales both zones' air [-] (0: still). Close with ``close_game``."""
    if not window:
        os.environ["SDL_VIDEODRIVER"] = "dummy"
    pygame.display.init()                                                          # video only: no audio
    screen = pygame.display.set_mode(SIZE)
    if window:
        pygame.display.set_caption("Loom — platformer (←/→ run, Space jump, Esc quit)")
    return Platformer.create(screen, wind=wind)


def close_game(game: Platformer) -> None:
    """Close the App and pygame's display."""
    game.app.close()
    pygame.quit()


def play(game: Platformer, frames: int | None, *, window: bool = False, draw: bool = True,
         screenshots: dict[int, str] | None = None) -> Iterator[FrameState]:
    """Run the game, yielding each frame's FrameState after it is drawn.

    Headless (``window`` False): one tick per frame, the SCRIPT plays. In a window: the keyboard, and the real
    clock banked in an accumulator paid out in GAME_DT ticks (at most MAX_TICKS a frame). ``frames`` None: until
    Esc or the window closes. ``draw`` False skips drawing (headless only). ``screenshots`` {frame: path} saves
    the screen after those frames (1-based)."""
    clock = pygame.time.Clock()
    while frames is None or game.frame < frames:
        if window:
            if any(e.type == pygame.QUIT or (e.type == pygame.KEYDOWN and e.key == pygame.K_ESCAPE)
                   for e in pygame.event.get()):
                return
            keys = pygame.key.get_pressed()
            game.advance(clock.tick(60) / 1000, float(keys[pygame.K_RIGHT] - keys[pygame.K_LEFT]),
                         bool(keys[pygame.K_SPACE]))
        else:
            game.tick(*scripted_input(game.frame))
        game.frame += 1
        drawn = draw or window
        if drawn:
            game.draw()
            if window:
                pygame.display.flip()
        if screenshots and game.frame in screenshots:
            save_screenshot(game.screen, screenshots[game.frame])
        yield game.state(drawn)


def longest_run(flags: Sequence[bool]) -> int:
    """The longest run of consecutive True values."""
    best = current = 0
    for flag in flags:
        current = current + 1 if flag else 0
        best = max(best, current)
    return best


def game_report(game: Platformer, states: Sequence[FrameState]) -> dict:
    """The App's report plus the game's: ticks, cape pixels, cape inside the hero, flag motion, stretch, draw ms."""
    pixels = [s.cape_pixels for s in states]
    corner = np.array([s.flag_corner for s in states]) if states else np.zeros((1, 3))
    motion = np.linalg.norm(np.diff(corner, axis=0), axis=1) if len(corner) > 1 else np.zeros(1)

    def stretch(cloth: loom.Cloth) -> tuple[float, float]:
        s = cloth.strain()
        return round(float(s.max()), 4), round(float(np.percentile(s, 99)), 4)

    report = game.app.report()
    report.update({
        "ticks": game.ticks, "frames_drawn": game.frame,
        "lockstep": all(s.ticks == s.steps for s in states),
        "cape_px_min": int(min(pixels, default=0)), "cape_px_median": int(np.median(pixels)) if pixels else 0,
        "cape_inside_frames": sum(s.cape_inside > 0 for s in states),
        "cape_inside_longest": longest_run([s.cape_inside > 0 for s in states]),
        "flag_corner_path_m": round(float(motion.sum()), 4),
        "flag_corner_spread_m": round(float(np.linalg.norm(corner.std(axis=0))), 4),
        "cape_stretch_max": stretch(game.cape)[0], "cape_stretch_p99": stretch(game.cape)[1],
        "flag_stretch_max": stretch(game.flag)[0], "flag_stretch_p99": stretch(game.flag)[1],
        "hero_x_px": round(float(game.hero.body.position.x), 2),
        "draw_ms": round(1000 * game.draw_s / max(game.frame, 1), 3),
    })
    return report


def save_screenshot(screen: pygame.Surface, path: str) -> None:
    """Save the game's Surface as a PNG at path; an unwritable path exits with one line (like the runner)."""
    try:
        pygame.image.save(screen, path)
    except (OSError, pygame.error) as exc:
        raise SystemExit(f"loom: {path}: {exc}") from None


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The shared game options plus --wind; --report defaults to json headless, text in a window."""
    p = parser("python -m loom.games.platformer")
    p.add_argument("--wind", type=float, default=1.0, help="scale of both wind zones' air (0: still; default 1)")
    p.set_defaults(report=None)
    args = p.parse_args(None if argv is None else list(argv))
    args.report = args.report or ("json" if args.headless else "text")
    return args


def main(argv: Sequence[str] | None = None) -> dict:
    """Run the game as the command line says; print and return its report."""
    args = parse_args(argv)
    check_outputs(args)                                                            # a bad path: one line, now
    frames = args.frames if args.frames is not None else HEADLESS_FRAMES if args.headless else None
    game = open_game(window=not args.headless, wind=args.wind)
    recorder = None
    try:
        recorder = open_recorder(args, GAME_DT)                                    # --record: the game's Surface
        states = []
        for state in play(game, frames, window=not args.headless):
            states.append(state)
            if recorder is not None:                                               # by game time: ticks × GAME_DT
                recorder.record(game.ticks * GAME_DT, lambda: game.screen)
        report = game_report(game, states)
        if args.screenshot:
            save_screenshot(game.screen, args.screenshot)
        if recorder is not None and recorder.frames == 0:                         # shorter than one period
            recorder.add(game.screen)
    finally:
        if recorder is not None:
            recorder.close()
        close_game(game)
    if recorder is not None:
        print(recorder.summary(), file=sys.stderr)
    print_report(report, args.report)
    return report


if __name__ == "__main__":
    main()
