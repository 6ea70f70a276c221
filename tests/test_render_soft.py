"""Software renderer: the cloth covers the pixels the camera puts it on, shaded by side, depth-tested, nothing else.

Everything draws into plain pygame Surfaces (no display: SDL's dummy drivers). Expected pixels come from
``Camera.project``, the same mapping games use, so these tests pin the renderer to the camera's convention.
"""
from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

import numpy as np  # noqa: E402
import pygame  # noqa: E402
import pytest  # noqa: E402

from loom.components import Camera, Cloth  # noqa: E402
from loom.components.render import ClothStyle, RenderSettings  # noqa: E402
from loom.engine import App, mesh  # noqa: E402
from loom.systems.render.soft import SoftRenderer, SoftRenderPlugin  # noqa: E402

SIZE = (160, 120)
BACKGROUND = (10, 200, 10)
RED = ClothStyle(front_color=(0.9, 0.1, 0.1), back_color=(0.1, 0.1, 0.9), texture=None)
BLUE = ClothStyle(front_color=(0.1, 0.1, 0.9), back_color=(0.1, 0.1, 0.9), texture=None)
ORTHO = Camera(target=(0.0, 0.0, 0.0), distance=3.0, pitch=0.0, orthographic=True, ortho_height=2.0)


def sheet(width: float = 1.0, height: float = 0.8, z: float = 0.0, n: int = 9) -> Cloth:
    """A vertical n×n sheet facing +z (toward the default camera) centred at (0, 0, z) [m]."""
    return Cloth.from_mesh(mesh.grid(n, n, width, height, center=(0.0, 0.0, z)))


def canvas(depth: int = 32) -> pygame.Surface:
    surface = pygame.Surface(SIZE, depth=depth)
    surface.fill(BACKGROUND)
    return surface


def rgb_at(surface: pygame.Surface, x: int, y: int) -> tuple[int, int, int]:
    return tuple(surface.get_at((x, y)))[:3]


def projected_box(cloth: Cloth, camera: Camera) -> tuple[float, float, float, float]:
    """(x0, y0, x1, y1) [px] of the projected particles."""
    p = camera.project(cloth.x, *SIZE)
    return p[:, 0].min(), p[:, 1].min(), p[:, 0].max(), p[:, 1].max()


def test_flat_sheet_facing_the_camera_covers_its_projected_rectangle():
    cloth, surface, renderer = sheet(), canvas(), SoftRenderer(SIZE)
    rect = renderer.draw(cloth, surface, ORTHO, style=RED)
    x0, y0, x1, y1 = projected_box(cloth, ORTHO)                  # 52..108 × 36..84 px for 1 × 0.8 m
    cx = np.arange(SIZE[0])[:, None] + 0.5                        # pixel centres
    cy = np.arange(SIZE[1])[None, :] + 0.5
    inside = (cx > x0 + 1) & (cx < x1 - 1) & (cy > y0 + 1) & (cy < y1 - 1)
    near = (cx >= x0 - 1) & (cx <= x1 + 1) & (cy >= y0 - 1) & (cy <= y1 + 1)
    covered = renderer.covered
    assert covered[inside].all(), f"{int((~covered[inside]).sum())} pixels inside the rectangle not covered"
    assert not covered[~near].any(), f"{int(covered[~near].sum())} pixels beyond the 1-pixel border covered"
    assert rect == pygame.Rect(int(math.ceil(x0 - 0.5)), int(math.ceil(y0 - 0.5)),
                               int(math.floor(x1 - 0.5)) - int(math.ceil(x0 - 0.5)) + 1,
                               int(math.floor(y1 - 0.5)) - int(math.ceil(y0 - 0.5)) + 1), f"changed rect {rect}"


def test_pixels_without_cloth_keep_the_game_background():
    cloth, surface, renderer = sheet(), canvas(), SoftRenderer(SIZE)
    before = pygame.surfarray.array3d(surface)
    renderer.draw(cloth, surface, ORTHO, style=RED)
    after = pygame.surfarray.array3d(surface)
    changed = (after != before).any(axis=2)
    assert np.array_equal(changed, renderer.covered), "the surface changed exactly where the cloth is"
    renderer.draw([], surface, ORTHO)                             # an empty frame draws nothing new
    assert np.array_equal(pygame.surfarray.array3d(surface), after)


def test_front_faces_get_the_front_colour_and_back_faces_the_back_colour():
    cloth, renderer = sheet(), SoftRenderer(SIZE)
    light = RenderSettings().light_direction
    ambient = RenderSettings().ambient
    centre = (SIZE[0] // 2, SIZE[1] // 2)
    for yaw, rgb, normal in ((0.0, RED.front_color, (0, 0, 1)), (math.pi, RED.back_color, (0, 0, -1))):
        surface = canvas()
        camera = Camera(target=(0.0, 0.0, 0.0), distance=3.0, yaw=yaw, pitch=0.0, orthographic=True)
        renderer.draw(cloth, surface, camera, style=RED)
        shade = ambient + (1 - ambient) * max(0.0, float(np.dot(normal, light)))   # two-sided Lambert
        expected = np.round(255 * rgb * shade)
        got = np.array(rgb_at(surface, *centre))
        assert np.abs(got - expected).max() <= 1, f"yaw {yaw:.2f}: pixel {got}, expected {expected}"


def test_a_nearer_cloth_hides_a_farther_one_whatever_the_drawing_order():
    centre = (SIZE[0] // 2, SIZE[1] // 2)
    for order in ((0.0, -0.5), (-0.5, 0.0)):
        app = App()
        for z in order:                                           # red in front (z = 0), blue behind
            app.spawn(sheet(z=z), RED if z == 0.0 else BLUE)
        surface = canvas()
        SoftRenderer(SIZE).draw(app, surface, ORTHO)
        r, g, b = rgb_at(surface, *centre)
        assert r > 3 * b, f"spawn order {order}: centre pixel {(r, g, b)} should be the near red sheet"
        app.close()


def test_intersecting_sheets_hide_each_other_per_pixel():
    flat = sheet()                                                # z = 0
    tilted = Cloth.from_mesh(mesh.grid(9, 9, 1.0, 0.8))
    tilted.x[:, 2] = 0.5 * tilted.x[:, 0]                         # z = x/2: behind on the left, in front on the right
    app = App()
    app.spawn(flat, RED)
    app.spawn(tilted, BLUE)
    surface = canvas()
    SoftRenderer(SIZE).draw(app, surface, ORTHO)
    left = ORTHO.project((-0.3, 0.0, 0.0), *SIZE)
    right = ORTHO.project((0.3, 0.0, 0.0), *SIZE)
    lr, _, lb = rgb_at(surface, int(left[0]), int(left[1]))
    rr, _, rb = rgb_at(surface, int(right[0]), int(right[1]))
    assert lr > 3 * lb, f"left of the crossing the flat red sheet is nearer; pixel red {lr} blue {lb}"
    assert rb > 3 * rr, f"right of the crossing the tilted blue sheet is nearer; pixel red {rr} blue {rb}"
    app.close()


def test_perspective_covers_the_pixel_of_every_interior_particle_at_its_depth():
    cloth = sheet(n=12)
    cloth.x[:, 2] += 0.1 * np.sin(4 * cloth.x[:, 0])             # a gentle wave, no particle hides another
    camera = Camera(target=(0.0, 0.0, 0.0), distance=2.5, yaw=0.4, pitch=0.3)
    renderer = SoftRenderer(SIZE)
    renderer.draw(cloth, canvas(), camera, style=RED)
    p = camera.project(cloth.x, *SIZE)
    interior = mesh.grid(12, 12, 1.0, 0.8)
    edge = np.unique(np.concatenate([interior.side(s) for s in ("left", "right", "top", "bottom")]))
    keep = np.setdiff1d(np.arange(cloth.particle_count), edge)
    px, py = p[keep, 0].astype(int), p[keep, 1].astype(int)
    assert renderer.covered[px, py].all(), f"{int((~renderer.covered[px, py]).sum())} particles' pixels empty"
    depth_error = np.abs(renderer.depth[px, py] - p[keep, 2]).max()
    assert depth_error < 1e-3, f"z-buffer differs from Camera.project depth by {depth_error:.2g}"


def test_24_bit_and_alpha_surfaces_get_the_same_cloth_pixels():
    cloth = sheet()
    surfaces = [canvas(32), canvas(24)]
    for surface in surfaces:
        SoftRenderer(SIZE).draw(cloth, surface, ORTHO, style=RED)
    a, b = (pygame.surfarray.array3d(s) for s in surfaces)
    assert np.array_equal(a, b), f"{int((a != b).any(axis=2).sum())} pixels differ"
    layer = pygame.Surface(SIZE, pygame.SRCALPHA)                 # a transparent layer the game blits later
    renderer = SoftRenderer(SIZE)
    renderer.draw(cloth, layer, ORTHO, style=RED)
    alpha = pygame.surfarray.array_alpha(layer)
    assert np.array_equal(alpha == 255, renderer.covered) and not alpha[~renderer.covered].any()


def test_debug_views_colour_by_normal_strain_edges_and_particles():
    cloth, renderer, centre = sheet(), SoftRenderer(SIZE), (SIZE[0] // 2 + 3, SIZE[1] // 2 + 2)
    surface = canvas()
    renderer.draw(cloth, surface, ORTHO, settings=RenderSettings(view="normals"))
    assert rgb_at(surface, *centre) == (128, 128, 255), "normal (0, 0, 1) shows as RGB n/2 + 1/2"
    settings = RenderSettings(view="strain")
    shade = settings.ambient + (1 - settings.ambient) * settings.light_direction[2]
    renderer.draw(cloth, surface, ORTHO, settings=settings)
    grey = round(255 * 0.95 * shade)
    assert rgb_at(surface, *centre) == (grey, grey, grey), "a sheet at rest shows light grey (lit) in the strain view"
    cloth.x[:, 0] *= 1.1                                          # 10 % stretch: beyond strain_scale 5 %
    renderer.draw(cloth, surface, ORTHO, settings=settings)
    r, g, b = rgb_at(surface, *centre)
    assert r > 3 * g and r > 3 * b, f"a stretched sheet shows red in the strain view, got {(r, g, b)}"
    cloth = sheet()
    coarse = sheet(n=4)                                           # cells of about 18 px
    renderer.draw(coarse, canvas(), ORTHO)
    filled = int(renderer.covered.sum())
    renderer.draw(coarse, canvas(), ORTHO, settings=RenderSettings(view="wireframe"))
    lines = int(renderer.covered.sum())
    assert 0.1 * filled < lines < 0.6 * filled, f"wireframe covers {lines} px of the filled {filled}"
    renderer.draw(cloth, canvas(), ORTHO, settings=RenderSettings(view="particles"))
    p = ORTHO.project(cloth.x, *SIZE)
    assert renderer.covered[p[:, 0].astype(int).clip(0, SIZE[0] - 1), p[:, 1].astype(int).clip(0, SIZE[1] - 1)].all()


def test_an_image_texture_is_stretched_over_the_rest_uv_box():
    image = np.array([[[255, 0, 0], [0, 0, 255]]], np.uint8)    # one row: red texel left, blue texel right
    style = ClothStyle(front_color=(1.0, 1.0, 1.0), texture=image, subdivision=0)
    surface = canvas()
    SoftRenderer(SIZE).draw(sheet(), surface, ORTHO, style=style)
    left, right = (ORTHO.project((x, 0.0, 0.0), *SIZE).astype(int) for x in (-0.25, 0.25))
    lr, _, lb = rgb_at(surface, left[0], left[1])
    rr, _, rb = rgb_at(surface, right[0], right[1])
    assert lr > 0 and lb == 0 and rb > 0 and rr == 0, f"left {(lr, lb)} should be red, right {(rr, rb)} blue"


def test_invisible_cloth_and_empty_meshes_draw_nothing():
    renderer = SoftRenderer(SIZE)
    rect = renderer.draw(sheet(), canvas(), ORTHO, style=ClothStyle(visible=False))
    assert rect.width == 0 and not renderer.covered.any()


def test_wrong_surface_size_raises_value_error_naming_both_sizes():
    renderer = SoftRenderer(SIZE)
    with pytest.raises(ValueError, match=r"surface size = \(100, 100\).*\(160, 120\)"):
        renderer.draw(sheet(), pygame.Surface((100, 100)), ORTHO)
    with pytest.raises(ValueError, match="SoftRenderer.size"):
        SoftRenderer((0, 10))
    with pytest.raises(TypeError, match="expected an App, a Cloth or Cloths"):
        renderer.draw(42, canvas(), ORTHO)


def test_plugin_draws_every_cloth_in_the_render_stage(make_app):
    app = make_app(substeps=2)
    surface = canvas()
    plugin = SoftRenderPlugin(surface, ORTHO)
    app.add_plugin(plugin)
    app.spawn(sheet(), RED)
    app.update(1 / 60)
    assert plugin.last_rect.width > 0 and plugin.renderer.covered.sum() > 1000, "the sheet was drawn"
    assert rgb_at(surface, 2, 2) == BACKGROUND


def test_embed_surface_runs_headless_and_reports_json_without_nan():
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, SDL_VIDEODRIVER="dummy", SDL_AUDIODRIVER="dummy")
    run = subprocess.run([sys.executable, "-m", "loom.games.embed_surface", "--headless", "--frames", "90"],
                         cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["frames"] == 90 and report["nan"] is False, report
    numbers = [v for v in report.values() if isinstance(v, float)]
    assert all(math.isfinite(v) for v in numbers), report
    assert report["cloth_px"] > 100, f"the cape covers {report['cloth_px']} px"


def test_runnable_snippets_of_the_embedding_guide_run_headless():
    root = Path(__file__).resolve().parents[1]
    guide = (root / "docs" / "embedding.md").read_text()
    snippets = re.findall(r"<!-- runnable -->\n```python\n(.*?)```", guide, re.S)
    assert snippets, "docs/embedding.md marks its headless snippets with <!-- runnable -->"
    env = dict(os.environ, SDL_VIDEODRIVER="dummy", SDL_AUDIODRIVER="dummy")
    for snippet in snippets:
        run = subprocess.run([sys.executable, "-c", snippet], cwd=root, env=env, capture_output=True, text=True,
                             timeout=120)
        assert run.returncode == 0, f"snippet failed:\n{snippet}\n{run.stderr[-2000:]}"


def test_a_headless_run_with_the_soft_renderer_saves_its_screenshot(tmp_path, capsys):
    """``--screenshot`` works for a game that draws with SoftRenderPlugin, not only with the GL renderer:
    the PNG is the plugin's surface with the cloth drawn on it (before, the runner refused: "needs a GL renderer")."""
    from loom import App, Cloth, DefaultPlugins, Pin, SoftRenderPlugin, mesh
    from loom.components import Camera
    surface = pygame.Surface((160, 120))
    surface.fill((0, 0, 0))
    app = App(dt=1 / 60, substeps=4).add_plugin(DefaultPlugins)
    app.add_plugin(SoftRenderPlugin(surface, Camera(target=(0.0, 0.5, 0.0), distance=3.0, pitch=0.0)))
    sheet = mesh.grid(8, 8, 1.0, 1.0, center=(0.0, 0.5, 0.0))
    app.spawn(Cloth.from_mesh(sheet, "cotton"), Pin.edge(sheet, "top"))
    out = tmp_path / "shot.png"
    app.run(["--headless", "--frames", "3", "--report", "json", "--screenshot", str(out)])
    assert app.clock.step_index == 3
    image = pygame.image.load(str(out))
    assert image.get_size() == (160, 120)
    lit = np.count_nonzero(pygame.surfarray.array3d(image).sum(axis=2))
    assert lit > 1000, f"only {lit} non-black pixels: the cloth was not drawn into the screenshot"


# --- solids: the App's colliders and props ------------------------------------------------------------------------
def _silhouette(shape, position, camera, depth_samples: int = 121) -> np.ndarray:
    """(w, h) bool: pixels whose orthographic ray (along the camera's −z) meets ``shape`` placed at ``position``,
    from the tests' own NumPy signed distance (shape_examples.reference), never Loom's kernels or tessellation."""
    from shape_examples import reference
    distance = reference(shape)
    w, h = SIZE
    half_h = camera.ortho_height / 2
    half_w = half_h * w / h
    px = (np.arange(w) + 0.5) / w * 2 * half_w - half_w + camera.target[0]
    py = half_h - (np.arange(h) + 0.5) / h * 2 * half_h + camera.target[1]
    z = np.linspace(-1.0, 1.0, depth_samples)
    X, Y, Z = np.meshgrid(px, py, z, indexing="ij")
    local = np.stack([X, Y, Z], axis=-1) - np.asarray(position)
    return (distance(local.reshape(-1, 3)).reshape(w, h, depth_samples) <= 0.0).any(axis=2)


def _shifted(mask: np.ndarray, combine) -> np.ndarray:
    """``mask`` combined with its four one-pixel shifts: eroded (np.logical_and) or grown (np.logical_or)."""
    out = mask.copy()
    padded = np.pad(mask, 1, mode="edge")
    for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        out = combine(out, padded[1 + dx:padded.shape[0] - 1 + dx, 1 + dy:padded.shape[1] - 1 + dy])
    return out


def test_solids_draw_every_collider_shape_where_its_surface_is_seen():
    from shape_examples import every_shape

    from loom.components import Collider, Transform
    from loom.components.collider import Plane
    for shape in every_shape(1.0):
        if isinstance(shape, Plane):
            continue                                              # seen edge-on by this camera: the next test
        app = App()
        position = (0.1, -0.05, 0.0)
        app.spawn(Collider(shape), Transform(position=position))
        renderer = SoftRenderer(SIZE)
        assert renderer.draw(app, canvas(), ORTHO).width == 0     # off by default: the game draws its bodies
        surface = canvas()
        renderer.draw(app, surface, ORTHO, solids=True)
        seen = _silhouette(shape, position, ORTHO)
        covered = renderer.covered
        # a pixel is 2/120 m: the 32-segment tessellation and the sampled reference may differ by one pixel
        inner, grown = _shifted(seen, np.logical_and), _shifted(seen, np.logical_or)
        name = type(shape).__name__
        assert inner.sum() > 100, name
        assert covered[inner].all(), f"{name}: {int((~covered[inner]).sum())} pixels of its silhouette not drawn"
        assert not covered[~grown].any(), f"{name}: {int(covered[~grown].sum())} pixels drawn outside its silhouette"
        r, g, b = rgb_at(surface, *np.argwhere(inner)[len(np.argwhere(inner)) // 2])
        assert (r, g, b) != BACKGROUND and abs(r - g) < 40 and abs(g - b) < 40, f"{name}: {(r, g, b)} is not grey"
        app.close()


def test_solids_follow_the_settings_the_styles_and_the_depth_buffer():
    from loom.components import Collider, Sphere, Transform
    from loom.components.collider import Plane
    from loom.components.render import ColliderStyle, Prop
    centre = (SIZE[0] // 2, SIZE[1] // 2)
    app = App()
    ball = app.spawn(Collider(Sphere(0.3)), Transform(position=(0.0, 0.0, 0.5)),
                     ColliderStyle(color=(0.9, 0.1, 0.1)))               # in front of the sheet
    app.spawn(sheet(z=0.0), BLUE)
    renderer, surface = SoftRenderer(SIZE), canvas()
    renderer.draw(app, surface, ORTHO, solids=True)
    r, g, b = rgb_at(surface, *centre)
    assert r > 3 * b, f"the red ball in front of the sheet should hide it: {(r, g, b)}"
    corner = (int(SIZE[0] * 0.38), int(SIZE[1] * 0.38))                  # on the sheet, beside the ball
    r, g, b = rgb_at(surface, *corner)
    assert b > 3 * r, f"the sheet beside the ball: {(r, g, b)}"
    app.add_component(ball, Transform(position=(0.0, 0.0, -0.5)))         # behind the sheet: hidden
    surface = canvas()
    renderer.draw(app, surface, ORTHO, solids=True)
    r, g, b = rgb_at(surface, *centre)
    assert b > 3 * r, f"the sheet in front of the ball: {(r, g, b)}"
    hidden = RenderSettings(show_colliders=False)                         # colliders off, props stay
    app.spawn(Prop(Sphere(0.2), color=(0.1, 0.9, 0.1)), Transform(position=(0.0, 0.0, 0.8)))
    surface = canvas()
    renderer.draw(app, surface, ORTHO, settings=hidden, solids=True)
    r, g, b = rgb_at(surface, *centre)
    assert g > 3 * r and g > 3 * b, f"the green prop in front: {(r, g, b)}"
    floor = App()
    floor.spawn(Collider(Plane((0.0, 0.0, 1.0))), Transform(position=(0.0, 0.0, -0.2)))   # a wall facing the eye
    surface = canvas()
    renderer.draw(floor, surface, ORTHO, solids=True)
    assert renderer.covered.all(), "a plane facing the camera covers the whole view"
    ground = App()                                                        # a floor seen in perspective: its
    ground.spawn(Collider(Plane((0.0, 1.0, 0.0))), Transform(position=(0.0, -0.5, 0.0)))   # square reaches behind
    eye = Camera(target=(0.0, 0.0, 0.0), distance=4.0, pitch=0.2)        # the eye, clipped, not dropped
    renderer.draw(ground, canvas(), eye, solids=True)
    below = eye.project(np.array([[0.0, -0.5, 0.0]]), *SIZE)[0]
    assert renderer.covered[:, int(below[1]):].all(), "the floor covers the view below its centre"
    assert not renderer.covered[:, 0].any(), "the sky above the horizon stays the game's"
    ground.close()
    with pytest.raises(TypeError, match="solids=True"):
        renderer.draw(sheet(), canvas(), ORTHO, solids=True)
    app.close()
    floor.close()
