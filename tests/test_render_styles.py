"""Renderers draw each cloth with its own entity's ClothStyle unless a style is passed (issue 16, item 6).

The rule, for every draw entry point: the style passed, else the ClothStyle on the cloth's entity, else
``ClothStyle()``. Pixels are counted by colour: a pixel "is" a colour when it is that colour scaled by some
shade (Lambert with ambient), within a few levels.
"""
from __future__ import annotations

import os

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

import esper  # noqa: E402
import numpy as np  # noqa: E402
import pygame  # noqa: E402

from loom.components import Camera, Cloth  # noqa: E402
from loom.components.render import ClothStyle  # noqa: E402
from loom.engine import App, mesh  # noqa: E402
from loom.systems.render.soft import SoftRenderer  # noqa: E402

SIZE = (160, 120)
BACKGROUND = (30, 30, 30)
LIME = ClothStyle(front_color=(0.2, 0.9, 0.1), back_color=(0.2, 0.9, 0.1), texture=None)
PURPLE = ClothStyle(front_color=(0.7, 0.1, 0.9), back_color=(0.7, 0.1, 0.9), texture=None)
ORANGE = ClothStyle(front_color=(0.95, 0.55, 0.05), back_color=(0.95, 0.55, 0.05), texture=None)
ORTHO = Camera(target=(0.0, 0.0, 0.0), distance=3.0, pitch=0.0, orthographic=True, ortho_height=2.0)
ENOUGH = 1000
"""Pixels [px] a 0.8 × 0.8 m sheet covers is about 2300 at this camera; a style counts as drawn above this."""


def sheet(x: float = 0.0) -> Cloth:
    """A vertical 9×9 sheet, 0.8 × 0.8 m, facing the camera (+z), centred at (x, 0, 0) [m]."""
    return Cloth.from_mesh(mesh.grid(9, 9, 0.8, 0.8, center=(x, 0.0, 0.0)))


def canvas() -> pygame.Surface:
    surface = pygame.Surface(SIZE, depth=32)
    surface.fill(BACKGROUND)
    return surface


def pixels_like(surface: pygame.Surface, style: ClothStyle, columns: slice = slice(None)) -> int:
    """How many pixels (in the given x range) are the style's front colour times a shade in [0.2, 1]."""
    rgb = pygame.surfarray.array3d(surface)[columns].reshape(-1, 3).astype(float)
    colour = 255.0 * np.asarray(style.front_color, float)
    shade = rgb @ colour / (colour @ colour)
    residual = np.abs(rgb - shade[:, None] * colour).max(axis=1)
    return int(np.count_nonzero((residual <= 4.0) & (shade >= 0.2) & (shade <= 1.01)))


def test_a_cloth_drawn_alone_uses_its_entitys_style_and_a_passed_style_still_wins(new_app):
    app = new_app()
    cloth = sheet()
    app.spawn(cloth, LIME)
    renderer = SoftRenderer(SIZE)
    surface = canvas()
    renderer.draw(cloth, surface, ORTHO)
    assert pixels_like(surface, LIME) > ENOUGH, "the cloth's own lime ClothStyle was not used"
    assert pixels_like(surface, ClothStyle()) == 0, "drawn in the default style instead"
    for source in (cloth, [cloth], app):
        surface = canvas()
        renderer.draw(source, surface, ORTHO, style=ORANGE)
        assert pixels_like(surface, ORANGE) > ENOUGH, f"{type(source).__name__}: passed style not drawn"
        assert pixels_like(surface, LIME) == 0, f"{type(source).__name__}: entity style drawn over the passed one"


def test_a_list_of_cloths_each_keeps_its_own_style(new_app):
    app = new_app()
    left, right = sheet(-0.5), sheet(0.5)
    app.spawn(left, LIME)
    app.spawn(right, PURPLE)
    surface = canvas()
    SoftRenderer(SIZE).draw([cloth for _, cloth in app.query(Cloth)], surface, ORTHO)
    half = SIZE[0] // 2
    assert pixels_like(surface, LIME, slice(0, half)) > ENOUGH, "left sheet lost its lime style"
    assert pixels_like(surface, PURPLE, slice(half, None)) > ENOUGH, "right sheet lost its purple style"
    assert pixels_like(surface, LIME, slice(half, None)) == 0 and pixels_like(surface, PURPLE, slice(0, half)) == 0


def test_a_cloth_of_an_app_not_used_last_still_gets_its_style(new_app):
    first = new_app()
    cloth = sheet()
    first.spawn(cloth, PURPLE)
    second = new_app()
    second.spawn(sheet(0.5), LIME)
    esper.switch_world(second.world)                     # the caller's current world: the second App's
    surface = canvas()
    SoftRenderer(SIZE).draw(cloth, surface, ORTHO)
    assert pixels_like(surface, PURPLE) > ENOUGH, "the style on the first App's entity was not found"
    assert esper.current_world == second.world, "the lookup must leave esper's current world as it was"
    esper.switch_world("default")
    assert len(second.query(Cloth)) == 1
