"""Embed Loom in your own pygame loop: a rectangle hero runs and jumps, and its cape is cloth.

The game owns the window, the loop, the clock and the drawing order. Loom only simulates
(``app.update(real_dt)`` once per frame) and draws the cape into the game's own Surface with the
software renderer, after the sky and before the hero, so the cape hangs behind him. The cape
(``loom.cape``) is a sheet in the screen plane, just behind the hero in depth, its top row pinned to the
hero's Transform from his middle to behind his back: move the Transform and the cape follows; it hangs on
the side he turns away from (``cape.face``). The camera is a straight side view, so the sheet is seen face on
(a sheet spanning depth would be seen edge on and hide behind him). See docs/embedding.md.

Run: python -m loom.games.embed_surface [--headless] [--frames N] [--report json|text] [--screenshot out.png]
Keys: ←/→ run, Space jump, Esc quit. In a window it runs until closed, or for N frames with --frames N.
Headless (SDL's dummy video driver, no window) the hero follows a script for N frames (default 300) and the
report is printed (one JSON line unless --report text): the App's report (frames, particles, nan …) plus
hero_x [m], cloth_px (pixels the cape covers), draw_ms. --screenshot saves the game's own Surface, as drawn
on the last frame, as a PNG (headless too); --record out.gif records that Surface as the game runs (a frame
every --record-fps period of simulated time, default 20 fps; --record-scale 0.5 halves it).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence

from loom.components import Camera, Transform
from loom.engine import App
from loom.launch import HEADLESS_FRAMES, check_outputs, open_recorder, parser, print_report
from loom.systems import DefaultPlugins

os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")          # before pygame's import: one JSON line
import pygame  # noqa: E402

from loom import Cape, SoftRenderer, cape  # noqa: E402

DT = 1 / 60
"""[s] per step. DT and SUBSTEPS are this game's step: main's App and ``python -m loom.files.bake`` use them."""
SUBSTEPS = 8
SIZE = (640, 360)                                    # [px]
HERO_W, HERO_H = 0.4, 0.7                            # [m]
SPEED, ACCEL, JUMP, GRAVITY = 3.0, 6.0, 4.0, 9.81   # [m/s], [m/s²], [m/s], [m/s²]
CAPE_LENGTH, CAPE_WIDTH = 0.6, 0.6                   # [m]: to just above his knees; the hem flares past his back
SHOULDERS = ((0.0, HERO_H - 0.1), (-0.32, HERO_H - 0.1))
"""[m] The cape's pinned row, from the hero's feet, facing right: his middle → behind his back (0.12 m past it)."""
CAMERA = Camera(target=(0.75, 1.0, 0.0), distance=5.0, yaw=0.0, pitch=0.0, orthographic=True, ortho_height=2.5)
"""A straight side view (yaw 0, pitch 0): the game's x right, y up; 2.5 m of world fill the screen's height."""
GROUND_PX = round(CAMERA.project((0.0, 0.0, 0.0), *SIZE)[1])                   # pixel row of y = 0


def build_scene(app: App) -> tuple[Transform, Cape]:
    """Spawn the hero (a Transform at his feet) and his cape: ``loom.cape`` pinned across his shoulders, in metres
    (no PixelSpace here: the game maps metres to pixels with CAMERA), facing right."""
    hero_id = app.spawn(hero := Transform.from_2d(0.0, 0.0))
    return hero, cape(app, hero_id, shoulders=SHOULDERS, length=CAPE_LENGTH, width=CAPE_WIDTH)


def read_keys(frame: int, headless: bool) -> tuple[float, bool, bool]:
    """(run direction −1/0/1, jump, quit). Headless, a script: right 0.75 s, left 1.5 s, stand; two jumps."""
    if headless:
        return (1.0 if frame < 45 else -1.0 if frame < 135 else 0.0), frame in (30, 100), False
    quit_ = any(e.type == pygame.QUIT or (e.type == pygame.KEYDOWN and e.key == pygame.K_ESCAPE)
                for e in pygame.event.get())
    keys = pygame.key.get_pressed()
    return keys[pygame.K_RIGHT] - keys[pygame.K_LEFT], keys[pygame.K_SPACE], quit_


def hero_rect(hero: Transform) -> pygame.Rect:
    """The hero's rectangle in pixels, from the camera's projection of two opposite corners."""
    x, y = hero.position[0], hero.position[1]
    (x0, y0, _), (x1, y1, _) = CAMERA.project([(x - HERO_W / 2, y + HERO_H, 0), (x + HERO_W / 2, y, 0)], *SIZE)
    return pygame.Rect(round(x0), round(y0), round(x1 - x0), round(y1 - y0))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The shared game options; --report defaults to json headless (one line for scripts), text in a window."""
    p = parser("python -m loom.games.embed_surface")
    p.set_defaults(report=None)
    args = p.parse_args(None if argv is None else list(argv))
    args.report = args.report or ("json" if args.headless else "text")
    return args


def frame_limit(args: argparse.Namespace) -> int | None:
    """Frames to run: --frames N, else HEADLESS_FRAMES headless, else None (a window runs until closed)."""
    if args.frames is not None:
        return args.frames
    return HEADLESS_FRAMES if args.headless else None


def save_screenshot(screen: pygame.Surface, path: str) -> None:
    """Save the game's own Surface as a PNG at path; an unwritable path exits with one line (like the runner)."""
    try:
        pygame.image.save(screen, path)
    except (OSError, pygame.error) as exc:
        raise SystemExit(f"loom: {path}: {exc}") from None


def main(argv: Sequence[str] | None = None) -> dict:
    """Run the game as the command line says and return (and print) its report."""
    args = parse_args(argv)
    check_outputs(args)                                                            # a bad path: one line, now
    limit = frame_limit(args)
    if args.headless:
        os.environ["SDL_VIDEODRIVER"] = "dummy"                                    # plain surfaces, no window
    pygame.display.init()                                                          # video only: no audio
    screen = pygame.display.set_mode(SIZE)
    app = App(dt=DT, substeps=SUBSTEPS).add_plugin(DefaultPlugins)
    hero, hero_cape = build_scene(app)
    renderer, clock = SoftRenderer(SIZE), pygame.time.Clock()
    frame, vx, vy, draw_s, quit_ = 0, 0.0, 0.0, 0.0, False                    # [m/s], [m/s], [s]
    recorder = open_recorder(args, DT)                                             # --record: this Surface
    while not quit_ and (limit is None or frame < limit):
        real_dt = DT if args.headless else min(clock.tick(60) / 1000, 0.1)    # [s]
        run, jump, quit_ = read_keys(frame, args.headless)
        on_ground = hero.position[1] <= 0.0
        vy = JUMP if jump and on_ground else 0.0 if on_ground else vy - GRAVITY * real_dt
        vx += max(-ACCEL * real_dt, min(ACCEL * real_dt, run * SPEED - vx))       # speed up, slow down
        if run and run != hero_cape.facing:
            hero_cape.face(1 if run > 0 else -1)                                   # he turned: so does the cape
        hero.position[0] += vx * real_dt                                           # the pins follow
        hero.position[1] = max(0.0, hero.position[1] + vy * real_dt)
        app.update(real_dt)                                                        # INPUT, fixed steps, RENDER
        screen.fill((150, 190, 230))                                               # sky, then ground
        pygame.draw.rect(screen, (80, 120, 60), (0, GROUND_PX, SIZE[0], SIZE[1] - GROUND_PX))
        start = time.perf_counter()
        renderer.draw(app, screen, CAMERA)                                         # the cape, behind ...
        draw_s += time.perf_counter() - start
        pygame.draw.rect(screen, (40, 40, 60), hero_rect(hero))                    # ... the hero
        if recorder is not None:                                                   # by simulated time
            recorder.record(app.clock.time, lambda: screen)
        pygame.display.flip()
        frame += 1
    report = app.report() | {"hero_x": round(float(hero.position[0]), 4), "cloth_px": int(renderer.covered.sum()),
                             "draw_ms": round(1000 * draw_s / max(frame, 1), 3)}
    try:
        if args.screenshot:
            save_screenshot(screen, args.screenshot)
        if recorder is not None:
            recorder.close(last=lambda: screen)                    # shorter than one period: the last
            print(recorder.summary(), file=sys.stderr)
    finally:
        pygame.quit()
    print_report(report, args.report)
    return report


if __name__ == "__main__":
    main()
