"""Embed Loom in your own pygame loop: a rectangle hero runs and jumps, and its cape is cloth.

The game owns the window, the loop, the clock and the drawing order. Loom only simulates
(``app.update(real_dt)`` once per frame) and draws the cape into the game's own Surface with the
software renderer, after the sky and before the hero, so the cape hangs behind him. The cape's top
edge is pinned to the hero's Transform: move the Transform and the cape follows. See docs/embedding.md.

Run: python -m loom.games.embed_surface [--headless --frames 300] · Keys: ←/→ run, Space jump, Esc quit
Headless (SDL's dummy video driver, no window) the hero follows a script and one JSON line is printed:
the App's report (frames, particles, nan …) plus hero_x [m], cloth_px (pixels the cape covers), draw_ms.
"""
from __future__ import annotations

import os
import time
from collections.abc import Sequence

from loom.components import Camera, Cloth, ClothStyle, Pin, Transform
from loom.engine import App, mesh, parser, print_report
from loom.systems import DefaultPlugins

os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")          # before pygame's import: one JSON line
import pygame  # noqa: E402

from loom import SoftRenderer  # noqa: E402

DT = 1 / 60
"""[s] per step. DT and SUBSTEPS are this game's step: main's App and ``python -m loom.files.bake`` use them."""
SUBSTEPS = 8
SIZE = (640, 360)                                    # [px]
HERO_W, HERO_H = 0.4, 0.7                            # [m]
SPEED, ACCEL, JUMP, GRAVITY = 3.0, 6.0, 4.0, 9.81   # [m/s], [m/s²], [m/s], [m/s²]
CAMERA = Camera(target=(0.0, 1.2, 0.0), distance=5.0, yaw=0.6, pitch=0.0, orthographic=True, ortho_height=3.0)
GROUND_PX = round(CAMERA.project((0.0, 0.0, 0.0), *SIZE)[1])                   # pixel row of y = 0


def build_scene(app: App) -> tuple[Transform, Cloth]:
    """Spawn the hero (a Transform at his feet) and a 0.5 m wide, 0.65 m long cape pinned across his shoulders."""
    hero_id = app.spawn(hero := Transform.from_2d(0.0, 0.0))
    flat = mesh.grid(8, 12, 0.5, 0.65, center=(0.0, HERO_H - 0.325, 0.0))        # top edge at shoulder height
    turned = flat.positions[:, [2, 1, 0]] * (1.0, 1.0, -1.0)                      # 90° about y: spans z, faces +x
    cape = mesh.from_triangles(turned, flat.triangles, uv=flat.uv)                # so it can swing back and forth
    cloth = Cloth.from_mesh(cape, "silk", damping=3.0)                            # [1/s]: still air drags it
    app.spawn(cloth, Pin(flat.side("top"), attach_to=hero_id), ClothStyle(texture=None))
    return hero, cloth


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


def main(argv: Sequence[str] | None = None) -> dict:
    args = parser("python -m loom.games.embed_surface").parse_args(argv)
    if args.headless:
        os.environ["SDL_VIDEODRIVER"] = "dummy"                                    # plain surfaces, no window
    pygame.display.init()                                                          # video only: no audio
    screen = pygame.display.set_mode(SIZE)
    app = App(dt=DT, substeps=SUBSTEPS).add_plugin(DefaultPlugins)
    hero, _ = build_scene(app)
    renderer, clock = SoftRenderer(SIZE), pygame.time.Clock()
    frame, vx, vy, draw_s, quit_ = 0, 0.0, 0.0, 0.0, False                    # [m/s], [m/s], [s]
    while not quit_ and (frame < args.frames or not args.headless):
        real_dt = DT if args.headless else min(clock.tick(60) / 1000, 0.1)    # [s]
        run, jump, quit_ = read_keys(frame, args.headless)
        on_ground = hero.position[1] <= 0.0
        vy = JUMP if jump and on_ground else 0.0 if on_ground else vy - GRAVITY * real_dt
        vx += max(-ACCEL * real_dt, min(ACCEL * real_dt, run * SPEED - vx))       # speed up, slow down
        hero.position[0] += vx * real_dt                                           # the pins follow
        hero.position[1] = max(0.0, hero.position[1] + vy * real_dt)
        app.update(real_dt)                                                        # INPUT, fixed steps, RENDER
        screen.fill((150, 190, 230))                                               # sky, then ground
        pygame.draw.rect(screen, (80, 120, 60), (0, GROUND_PX, SIZE[0], SIZE[1] - GROUND_PX))
        start = time.perf_counter()
        renderer.draw(app, screen, CAMERA)                                         # the cape, behind ...
        draw_s += time.perf_counter() - start
        pygame.draw.rect(screen, (40, 40, 60), hero_rect(hero))                    # ... the hero
        pygame.display.flip()
        frame += 1
    report = app.report() | {"hero_x": round(float(hero.position[0]), 4), "cloth_px": int(renderer.covered.sum()),
                             "draw_ms": round(1000 * draw_s / max(frame, 1), 3)}
    pygame.quit()
    print_report(report, "json" if args.headless else args.report)
    return report


if __name__ == "__main__":
    main()
