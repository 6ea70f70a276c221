"""PixelSpace: a 2D game's pixels (y down) at the boundary, metres inside — points, the side-view camera, the
software renderer's pixels, and pymunk bodies read in pixels by the bridge (positions, angles, impulses back)."""
from __future__ import annotations

import math
import os

import numpy as np
import pymunk
import pytest

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")

import pygame  # noqa: E402

import loom  # noqa: E402

SPACES = [  # (pixels per metre, origin [px], surface size [px], y down)
    (100.0, (0.0, 470.0), (960, 540), True),
    (64.0, (320.0, 180.0), (640, 360), True),
    (37.5, (-12.0, 501.0), (333, 517), True),
    (100.0, (40.0, 20.0), (640, 360), False),
]


@pytest.mark.parametrize("ppm,origin,size,y_down", SPACES)
def test_to_metres_and_to_pixels_are_inverse_and_flip_y(ppm, origin, size, y_down):
    space = loom.PixelSpace(ppm, origin=origin, y_down=y_down)
    px = np.random.default_rng(1).uniform(-500, 1500, (50, 2))
    world = space.to_metres(px, z=0.25)
    assert world.shape == (50, 3) and np.all(world[:, 2] == 0.25)
    assert np.allclose(space.to_pixels(world), px, atol=1e-9)
    lower = space.to_metres((origin[0], origin[1] + ppm))            # one metre further down the screen in y-down
    assert np.allclose(lower, (0.0, -1.0 if y_down else 1.0, 0.0))
    assert space.metres(ppm * 1.5) == pytest.approx(1.5) and space.pixels(2.0) == pytest.approx(2 * ppm)


@pytest.mark.parametrize("ppm,origin,size,y_down", SPACES)
def test_side_camera_projects_world_points_onto_the_games_pixels(ppm, origin, size, y_down):
    space = loom.PixelSpace(ppm, origin=origin, y_down=y_down)
    camera = space.camera(size)
    w, h = size
    px = np.random.default_rng(2).uniform((0, 0), size, (200, 2))
    world = space.to_metres(px)
    world[:, 2] = np.random.default_rng(3).uniform(-3.0, 3.0, 200)    # depth never moves a pixel: orthographic
    drawn = camera.project(world, w, h)[:, :2]
    expected = px if y_down else np.stack([px[:, 0], h - px[:, 1]], axis=1)
    error = float(np.abs(drawn - expected).max())
    assert error < 1e-6, f"side camera is {error:.3g} px off the game's pixels"


@pytest.mark.parametrize("ppm,origin,size,y_down", SPACES)
def test_soft_renderer_draws_a_pinned_cloth_on_the_pixels_to_pixels_gives(ppm, origin, size, y_down):
    """A square pinned at all its particles, drawn with the PixelSpace's camera: the covered pixels span exactly the
    pixels its corners map to (within 1 px: a pixel is covered when its centre is inside a triangle)."""
    space = loom.PixelSpace(ppm, origin=origin, y_down=y_down)
    app = loom.App(substeps=2).add_plugin(loom.DefaultPlugins)
    app.insert_resource(space)
    w, h = size
    lo, hi = np.array([0.3 * w, 0.35 * h]), np.array([0.55 * w, 0.7 * h])           # the game's rectangle [px]
    corners = space.to_metres(np.array([lo, hi]))
    centre = corners.mean(axis=0)
    extent = np.abs(corners[1] - corners[0])
    sheet = loom.mesh.grid(6, 5, extent[0], extent[1], center=tuple(centre))
    cloth = loom.Cloth.from_mesh(sheet)
    app.spawn(cloth, loom.Pin(np.arange(cloth.particle_count)), loom.ClothStyle(texture=None))
    app.step(3)                                                                      # pinned: it stays put
    pygame.display.init()
    surface = pygame.Surface(size)
    renderer = loom.SoftRenderer(size)
    renderer.draw(app, surface, space.camera(size))
    xs, ys = np.nonzero(renderer.covered)
    drawn_lo, drawn_hi = np.array([xs.min(), ys.min()]), np.array([xs.max() + 1, ys.max() + 1])
    pixels = space.to_pixels(cloth.x)
    if not y_down:
        pixels[:, 1] = h - pixels[:, 1]
    want_lo, want_hi = pixels.min(axis=0), pixels.max(axis=0)
    assert np.abs(drawn_lo - want_lo).max() <= 1.0 and np.abs(drawn_hi - want_hi).max() <= 1.0, \
        f"drawn {drawn_lo}..{drawn_hi} px, to_pixels {want_lo}..{want_hi} px"
    app.close()


def test_pixel_space_rejects_bad_fields_naming_them():
    with pytest.raises(ValueError, match=r"PixelSpace\.pixels_per_metre = 0\.0"):
        loom.PixelSpace(0.0)
    with pytest.raises(ValueError, match=r"PixelSpace\.pixels_per_metre = -5\.0"):
        loom.PixelSpace(-5)
    with pytest.raises(ValueError, match=r"PixelSpace\.origin\[1\] = nan"):
        loom.PixelSpace(100, origin=(0.0, math.nan))
    with pytest.raises(ValueError, match=r"PixelSpace\.origin: shape \(3,\)"):
        loom.PixelSpace(100, origin=(0, 0, 0))
    with pytest.raises(ValueError, match=r"PixelSpace\.y_down"):
        loom.PixelSpace(100, y_down="down")
    space = loom.PixelSpace()
    with pytest.raises(ValueError, match=r"PixelSpace\.pixels_per_metre = inf"):
        space.pixels_per_metre = math.inf
    with pytest.raises(ValueError, match=r"PixelSpace\.camera"):
        space.camera((0, 360))
    with pytest.raises(ValueError, match=r"PixelSpace\.to_metres points_px: shape \(3,\)"):
        space.to_metres((1.0, 2.0, 3.0))
    with pytest.raises(ValueError, match=r"PixelSpace\.to_pixels points_m: contains non-finite"):
        space.to_pixels((1.0, math.inf, 0.0))


# --- the pymunk bridge in pixel mode ------------------------------------------------------------------------------
def pixel_app(make_app, origin=(0.0, 500.0)):
    app = make_app(substeps=8)
    pixels = app.insert_resource(loom.PixelSpace(100.0, origin=origin))
    return app, pixels


def test_bridge_reads_a_y_down_body_in_pixels_and_keeps_its_transform(make_app):
    app, pixels = pixel_app(make_app)
    space = pymunk.Space()
    space.gravity = (0.0, 981.0)                                          # [px/s²] down the screen
    app.insert_resource(loom.Space2D(space))
    body = pymunk.Body(1.0, math.inf)
    body.position = (320.0, 100.0)
    space.add(body, pymunk.Poly.create_box(body, (40.0, 80.0)))
    entity = app.spawn(loom.RigidBody2D(body, depth=0.3))
    rigid = app.get(entity, loom.RigidBody2D)
    assert rigid.scale is None
    app.step()
    transform = app.get(entity, loom.Transform)                           # added by the bridge
    for _ in range(20):
        app.step()
        assert np.allclose(transform.position, (*pixels.to_metres(tuple(body.position))[:2], 0.0), atol=1e-12)
    assert body.position.y > 100.0 and transform.position[1] < 4.0, "it falls down the screen, down in metres"
    box = app.get(rigid.shape_entities[0], loom.Collider).shape
    assert np.allclose(box.half_extents, (0.2, 0.4, 0.15)), "40 × 80 px is 0.4 × 0.8 m"
    body.angle = 0.3                                                       # clockwise on a y-down screen
    app.step()
    turned = transform.rotation @ (1.0, 0.0, 0.0)
    assert np.allclose(turned, (math.cos(0.3), -math.sin(0.3), 0.0)), f"local x turned to {turned}"


def test_a_pin_attached_to_a_pixel_body_rides_at_its_pixel_offset(make_app):
    app, pixels = pixel_app(make_app)
    body = pymunk.Body(body_type=pymunk.Body.KINEMATIC)
    body.position = (200.0, 300.0)
    pymunk.Space().add(body, pymunk.Circle(body, 10.0))
    entity = app.spawn(loom.RigidBody2D(body, depth=0.2))
    sheet = loom.mesh.grid(5, 5, 0.3, 0.3, center=(*pixels.to_metres((200.0, 330.0))[:2], -0.3))
    cloth = loom.Cloth.from_mesh(sheet, "silk")
    top = sheet.side("top")
    offsets = np.zeros((top.size, 3))
    offsets[:, 0] = np.linspace(-0.15, 0.15, top.size)
    offsets[:, 1] = -0.15                                                   # 15 px below the centre (y up in metres)
    offsets[:, 2] = -0.3
    app.spawn(cloth, loom.Pin(top, attach_to=entity, offset=offsets))      # no Transform spawned: the bridge's
    for frame in range(30):
        body.position = (200.0 + 5.0 * frame, 300.0)                       # the game moves it, in pixels
        app.step()
    drawn = pixels.to_pixels(cloth.x[top])
    want = np.stack([body.position.x + 100.0 * offsets[:, 0], np.full(top.size, body.position.y + 15.0)], axis=1)
    assert np.abs(drawn - want).max() < 1e-6, f"pins at {drawn[[0, -1]]} px, want {want[[0, -1]]} px"


def test_cloth_impulses_go_back_to_a_y_down_body_as_pixels(make_app):
    """A ball dropped (down the screen) on a pinned cloth bed bounces back up the screen: the impulse's y is flipped."""
    app, pixels = pixel_app(make_app)
    space = pymunk.Space()
    space.gravity = (0.0, 981.0)
    app.insert_resource(loom.Space2D(space))
    ball = pymunk.Body(0.3, pymunk.moment_for_circle(0.3, 0, 8.0))
    ball.position = tuple(pixels.to_pixels((0.0, 0.4)))
    space.add(ball, pymunk.Circle(ball, 8.0))
    app.spawn(loom.RigidBody2D(ball, depth=1.2))
    sheet = loom.mesh.grid(20, 20, 1.0, 1.0, plane="xz")
    material = loom.ClothMaterial(density=0.05, stretch_compliance=5e-3, shear_compliance=5e-3, damping=0.05,
                                  thickness=0.01)
    cloth = loom.Cloth.from_mesh(sheet, material, tethers=False)
    app.spawn(cloth, loom.Pin.edge(sheet, "corners"))
    vy = []
    for _ in range(90):
        app.step()
        vy.append(ball.velocity.y)
    vy = np.array(vy)
    impact = int(np.argmax(vy))                                             # fastest down the screen
    assert vy[impact] > 200.0, f"the ball should fall fast onto the cloth, max vy {vy[impact]:.0f} px/s"
    rebound = float(vy[impact:].min())
    assert rebound < -50.0, f"the ball never bounced up the screen: min vy after impact {rebound:.0f} px/s"
    assert rebound > -1.2 * vy[impact], f"rebound {rebound:.0f} px/s for an impact at {vy[impact]:.0f} px/s"
