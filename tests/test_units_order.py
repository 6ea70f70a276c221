"""Units and order at a 2D game's boundary (issue 42, item 4): a PixelSpace inserted before or after the helpers
gives the same cape and flag; pixel-sized inputs without a PixelSpace warn once, naming it; Gravity in px/s² (or
pointing up) warns; PixelSpace(gravity=...) sets Gravity in m/s², y up; PixelSpace.camera scrolls (follow or an
offset) so a side-scroller never sets camera.target by hand."""
from __future__ import annotations

import warnings

import numpy as np
import pymunk
import pytest

import loom
from loom.components.pixels import UnitsWarning

PPM, GROUND_Y = 100.0, 470.0                   # [px/m], [px]: the pixel row of world y = 0
HERO_PX = (36.0, 80.0)                         # [px] the hero's box (0.36 m × 0.8 m at 100 px/m)
TICK = 1.0 / 60.0


def hero_scene(order: str | None, *, face_left: bool = False):
    """A pymunk hero in a y-down pixel world standing on the ground, ``loom.cape`` on him and a ``loom.flag`` with
    its wind zone; the PixelSpace inserted "before" the helpers, "after" them (before the first step) or not at all
    (None). Returns (app, space, body, hero entity, cape, flag, wind)."""
    app = loom.App(threads=1).add_plugin(loom.DefaultPlugins)
    space = pymunk.Space()
    space.gravity = (0.0, 981.0)                                                 # [px/s²] y down
    ground = pymunk.Segment(space.static_body, (-2000.0, GROUND_Y + 10.0), (4000.0, GROUND_Y + 10.0), 10.0)
    ground.friction = 1.0
    body = pymunk.Body(70.0, float("inf"))
    body.position = (300.0, GROUND_Y - HERO_PX[1] / 2)
    space.add(ground, body, pymunk.Poly.create_box(body, HERO_PX))
    pixels = loom.PixelSpace(PPM, origin=(0.0, GROUND_Y))
    if order == "before":
        app.insert_resource(pixels)
    app.spawn(loom.RigidBody2D(space.static_body, depth=1.2))
    hero = app.spawn(loom.RigidBody2D(body, depth=0.3))
    cape = loom.cape(app, hero)
    if face_left:
        cape.face(-1)
    flag = loom.flag(app, (800.0, 170.0))
    wind = flag.wind_zone((5.0, 0.0, 1.0))
    if order == "after":
        app.insert_resource(pixels)
    return app, space, body, hero, cape, flag, wind


def run(scene, ticks: int) -> None:
    """The game's fixed-step loop: pymunk, then one Loom step, per tick; the hero walks right at 120 px/s."""
    app, space, body = scene[:3]
    for _ in range(ticks):
        body.velocity = (120.0, body.velocity.y)
        space.step(TICK)
        app.step(dt=TICK)


@pytest.mark.parametrize("face_left", [False, True])
def test_pixelspace_after_the_helpers_gives_the_same_sane_cape_and_flag_as_before(face_left):
    early, late = hero_scene("before", face_left=face_left), hero_scene("after", face_left=face_left)
    run(early, 90)
    run(late, 90)
    for a, b in ((early[4], late[4]), (early[5], late[5])):
        assert b.cloth.rejected_steps == 0, "the late PixelSpace made the guard refuse steps"
        assert np.isfinite(b.cloth.x).all()
        assert np.array_equal(a.cloth.x, b.cloth.x), "the order of PixelSpace and the helpers changed the cloth"
    pixels = late[0].resource(loom.PixelSpace)
    hero_m = pixels.to_metres(tuple(late[2].position))
    cape = late[4].cloth.x
    # the cape hangs from his shoulders: every particle within his height (0.8 m) plus the cape's length of him
    assert np.abs(cape[:, :2] - hero_m[:2]).max() < 1.6, f"cape far from the hero: {cape.mean(axis=0)} vs {hero_m}"
    top = pixels.to_metres((800.0, 170.0))
    flag = late[5]
    assert np.allclose(flag.hoist_top, top) and flag.size == pytest.approx((1.0, 0.6))   # FLAG_SIZE, metres
    assert np.allclose(flag.cloth.x[flag.pin.index, :2].max(axis=0), top[:2], atol=1e-6)
    assert np.allclose(late[6].region.center, early[6].region.center), "the wind zone stayed at the old place"


def test_the_late_cape_keeps_its_objects_and_a_release_made_before_the_first_step():
    app, space, body, hero, cape, flag, _ = hero_scene("after")
    cloth, pin = cape.cloth, cape.pin
    flag.pin.release(0)
    run((app, space, body), 30)
    assert app.get(cape.entity, loom.Cloth) is cloth and app.get(cape.entity, loom.Pin) is pin
    assert not flag.pin.active[0] and flag.pin.active[1:].all()
    assert cloth.rejected_steps == 0 and flag.cloth.rejected_steps == 0
    hero_m = app.resource(loom.PixelSpace).to_metres(tuple(body.position))
    assert np.abs(cloth.x[:, :2] - hero_m[:2]).max() < 1.6


def test_a_pixelspace_changed_after_the_first_step_is_refused_naming_the_order():
    untouched, scene = hero_scene("before"), hero_scene("before")
    run(untouched, 4)
    run(scene, 2)
    scene[0].insert_resource(loom.PixelSpace(PPM, origin=(0.0, GROUND_Y)))     # an equal one: nothing changes
    run(scene, 2)
    assert np.array_equal(untouched[4].cloth.x, scene[4].cloth.x)
    scene[0].insert_resource(loom.PixelSpace(50.0, origin=(0.0, GROUND_Y)))
    with pytest.raises(RuntimeError, match="before the first step"):
        scene[0].step()


def caught(action) -> list[warnings.WarningMessage]:
    """The UnitsWarnings ``action()`` gives."""
    with warnings.catch_warnings(record=True) as found:
        warnings.simplefilter("always")
        action()
    return [w for w in found if issubclass(w.category, UnitsWarning)]


def test_pixel_sized_inputs_without_a_pixelspace_warn_once_naming_it():
    scene = {}

    def build_and_step():
        scene["s"] = hero_scene(None)
        loom.flag(scene["s"][0], (900.0, 170.0))                 # a second flag in pixels: no second warning
        run(scene["s"], 3)
    found = caught(build_and_step)
    texts = [str(w.message) for w in found]
    assert all("PixelSpace" in t for t in texts), texts
    assert sum("loom.flag" in t and "pole_top (800, 170)" in t for t in texts) == 1, texts    # the pole at 800 m
    assert sum("RigidBody2D" in t and "36 × 80 m" in t for t in texts) == 1, texts            # the 36 × 80 px hero
    assert sum("loom.cape" in t for t in texts) >= 1, texts
    assert len(texts) == len(set(texts)), "a warning repeated"
    assert all(w.filename == __file__ for w in found), [w.filename for w in found]           # the game's line
    assert caught(lambda: run(scene["s"], 5)) == [], "warned again on later steps"
    metres_scene_quietly()


def metres_scene_quietly() -> None:
    """The same kind of scene in metres, no PixelSpace: nothing warns."""

    def metres_scene():
        app = loom.App(threads=1).add_plugin(loom.DefaultPlugins)
        space = pymunk.Space()
        space.gravity = (0.0, -9.81)
        body = pymunk.Body(70.0, float("inf"))
        body.position = (2.0, 1.0)
        space.add(body, pymunk.Poly.create_box(body, (0.4, 0.8)))
        hero = app.spawn(loom.RigidBody2D(body, depth=0.3))
        loom.cape(app, hero)
        loom.flag(app, (5.0, 2.5), size=(1.2, 0.8))
        app.insert_resource(loom.Gravity((0.0, -9.81, 0.0)))
        for _ in range(3):
            space.step(TICK)
            app.step()
    assert caught(metres_scene) == []



@pytest.mark.parametrize("acceleration,why", [((0.0, 981.0, 0.0), "points up"), ((0.0, -981.0, 0.0), "Earth's"),
                                              ((0.0, 9.81, 0.0), "points up")])
def test_gravity_in_pixels_or_pointing_up_warns_naming_pixelspace(acceleration, why):
    found = caught(lambda: loom.Gravity(acceleration))
    assert len(found) == 1 and "PixelSpace" in str(found[0].message) and why in str(found[0].message)
    assert found[0].filename == __file__
    for plausible in ((0.0, -9.81, 0.0), (0.0, -1.62, 0.0), (0.0, 0.0, 0.0), (0.5, -24.8, 0.0)):
        assert caught(lambda: loom.Gravity(plausible)) == [], plausible


@pytest.mark.parametrize("gravity,y_down", [(900.0, True), ((0.0, 900.0), True), (900.0, False),
                                            ((0.0, -900.0), False)])
def test_pixelspace_gravity_in_px_per_s2_sets_gravity_in_metres_y_up(gravity, y_down):
    app = loom.App(threads=1).add_plugin(loom.DefaultPlugins)
    app.insert_resource(loom.PixelSpace(80.0, origin=(0.0, 470.0), y_down=y_down, gravity=gravity))
    app.step()
    assert np.array_equal(app.resource(loom.Gravity).acceleration, (0.0, -900.0 / 80.0, 0.0))   # −11.25 m/s²
    app.resource(loom.PixelSpace).gravity = 450.0                     # the game changes it: the next step follows
    app.step()
    assert np.array_equal(app.resource(loom.Gravity).acceleration, (0.0, -450.0 / 80.0, 0.0))


def test_a_cloth_under_pixelspace_gravity_falls_like_the_games_pymunk_body():
    """900 px/s² at 80 px/m: a free sheet falls ½ g t² pixels in t, as the game's pymunk body does (within its
    Euler step's lag of n(n − 1)/2 against n²/2 steps' worth)."""
    app = loom.App(threads=1).add_plugin(loom.DefaultPlugins)
    pixels = app.insert_resource(loom.PixelSpace(80.0, origin=(0.0, 470.0), gravity=900.0))
    sheet = loom.mesh.grid(4, 4, 0.3, 0.3, center=(2.0, 3.0, 0.0), plane="xy")
    cloth = loom.Cloth.from_mesh(sheet, "cotton", damping=0.0)
    app.spawn(cloth)
    space = pymunk.Space()
    space.gravity = (0.0, 900.0)
    body = pymunk.Body(1.0, float("inf"))
    body.position = tuple(pixels.to_pixels(cloth.x.mean(axis=0)))
    space.add(body, pymunk.Circle(body, 1.0))
    start = body.position.y
    for _ in range(30):
        space.step(TICK)
        app.step(dt=TICK)
    fell_body = body.position.y - start                                # [px] down the screen
    fell_cloth = pixels.to_pixels(cloth.x.mean(axis=0))[1] - start
    assert fell_cloth == pytest.approx(0.5 * 900.0 * 0.5 ** 2, rel=0.02)  # ½ g t² after 0.5 s: 112.5 px
    assert fell_cloth == pytest.approx(fell_body, rel=0.05)


SIZE = (800, 480)


def test_camera_follows_a_pymunk_body_so_it_stays_at_the_views_centre():
    pixels = loom.PixelSpace(PPM, origin=(0.0, GROUND_Y))
    body = pymunk.Body(1.0, 1.0)
    body.position = (250.0, 300.0)
    camera = pixels.camera(SIZE, follow=body)
    for x in (250.0, 1250.0, 5321.5):
        body.position = (x, 300.0)
        assert camera.scroll == pytest.approx((x - SIZE[0] / 2, 0.0))
        drawn = camera.project(pixels.to_metres(tuple(body.position)), *SIZE)[:2]
        assert drawn == pytest.approx((SIZE[0] / 2, 300.0), abs=1e-6)      # x centred, y as the game draws it
        sprite = np.array([x + 20.0, 260.0])                                # the game's own sprite, drawn at p − scroll
        assert camera.project(pixels.to_metres(sprite), *SIZE)[:2] == pytest.approx(sprite - camera.scroll, abs=1e-6)


def test_camera_follows_a_transform_in_metres_and_y_too_when_asked():
    pixels = loom.PixelSpace(PPM, origin=(0.0, GROUND_Y))
    hero = loom.Transform.from_2d(12.0, 3.0)
    camera = pixels.camera(SIZE, follow=hero, follow_y=True)
    hero.position[:2] = (30.0, 5.0)
    drawn = camera.project(hero.position, *SIZE)[:2]
    assert drawn == pytest.approx((SIZE[0] / 2, SIZE[1] / 2), abs=1e-6)


@pytest.mark.parametrize("y_down", [True, False])
def test_camera_scroll_offset_shifts_every_pixel_by_it(y_down):
    pixels = loom.PixelSpace(64.0, origin=(320.0, 180.0), y_down=y_down)
    camera = pixels.camera(SIZE)
    px = np.random.default_rng(4).uniform((0, 0), (3000, 480), (50, 2))
    camera.scroll = (1700.0, 35.0)
    drawn = camera.project(pixels.to_metres(px), *SIZE)[:, :2]
    shifted = px - (1700.0, 35.0)
    expected = shifted if y_down else np.stack([shifted[:, 0], SIZE[1] - shifted[:, 1]], axis=1)
    assert np.abs(drawn - expected).max() < 1e-6


def test_camera_scroll_and_follow_refuse_bad_values():
    pixels = loom.PixelSpace(PPM)
    with pytest.raises(TypeError, match="follow"):
        pixels.camera(SIZE, follow="hero")
    camera = pixels.camera(SIZE)
    with pytest.raises(ValueError, match="scroll"):
        camera.scroll = (float("nan"), 0.0)
    with pytest.raises(ValueError, match="gravity"):
        loom.PixelSpace(PPM, gravity=(0.0, float("inf")))
