"""Picking: a ray picks the particle under the cursor, dragging moves it exactly, release restores its mass."""
from __future__ import annotations

import numpy as np
import pytest

from loom.components import Camera, Cloth, Pin
from loom.components.grab import Grab
from loom.components.wind import Blower
from loom.engine import mesh
from loom.systems.interaction.picking import pick_particle, update_blower, update_grab

W, H = 800, 600                                                     # viewport [px]


def curtain(app) -> tuple[Cloth, mesh.Mesh, int]:
    """A 1 m curtain hanging from its top corners, centred 1 m up; returns (cloth, mesh, entity)."""
    sheet = mesh.grid(16, 16, 1.0, 1.0, center=(0.0, 1.0, 0.0))
    cloth = Cloth.from_mesh(sheet)
    entity = app.spawn(cloth, Pin.corners(sheet, "top"))
    return cloth, sheet, entity


def test_ray_through_a_projected_particle_picks_that_particle(make_app):
    app = make_app()
    cloth, sheet, entity = curtain(app)
    camera = Camera(target=(0.0, 1.0, 0.0), distance=3.0, yaw=0.4, pitch=0.3)
    for col, row in [(8, 5), (0, 0), (15, 14), (3, 11)]:
        p = sheet.index(col, row)
        px, py, _ = camera.project(cloth.x[p], W, H)
        origin, direction = camera.ray(px, py, W, H)
        hit = pick_particle(app, origin, direction, radius=0.02)
        assert hit is not None and hit[:2] == (entity, p), f"picked {hit}, want particle {p} of entity {entity}"
        assert hit[2] == pytest.approx(np.linalg.norm(cloth.x[p] - origin), rel=1e-9)


def test_ray_that_misses_the_cloth_picks_nothing(make_app):
    app = make_app()
    curtain(app)
    camera = Camera(target=(0.0, 1.0, 0.0), distance=3.0)
    assert pick_particle(app, *camera.ray(5.0, 5.0, W, H), radius=0.02) is None


def test_front_layer_is_picked_through_a_fold(make_app):
    app = make_app()
    back = Cloth.from_mesh(mesh.grid(4, 4, 1.0, 1.0, center=(0.0, 1.0, -0.1)))
    front = Cloth.from_mesh(mesh.grid(4, 4, 1.0, 1.0, center=(0.004, 1.0, 0.0)))   # nudged off the ray
    app.spawn(back)
    near = app.spawn(front)
    hit = pick_particle(app, np.array([1.0 / 6.0, 1.0 + 1.0 / 6.0, 3.0]), np.array([0.0, 0.0, -1.0]), radius=0.02)
    assert hit is not None and hit[0] == near, f"picked {hit}: the back layer, through the front one"


def test_dragging_moves_the_particle_exactly_to_the_target_and_the_cloth_follows(make_app):
    app = make_app(substeps=8)
    cloth, sheet, entity = curtain(app)
    camera = Camera(target=(0.0, 1.0, 0.0), distance=3.0, yaw=0.2, pitch=0.1)
    p, neighbour = sheet.index(8, 4), sheet.index(8, 3)
    px, py, _ = camera.project(cloth.x[p], W, H)
    grab = update_grab(app, camera, px, py, W, H, pressed=True)
    assert grab.active and (grab.cloth, grab.particle) == (entity, p)
    before = cloth.x[neighbour].copy()
    for frame in range(30):                                          # drag right and up for 0.5 s
        update_grab(app, camera, px + 6.0 * frame, py - 3.0 * frame, W, H, pressed=True)
        app.step()
        assert np.array_equal(cloth.x[p], grab.target), f"frame {frame}: {cloth.x[p]} is not on {grab.target}"
        assert cloth.inv_mass[p] == 0.0
    moved = np.linalg.norm(cloth.x[neighbour] - before)
    assert moved > 0.2, f"the neighbour moved only {moved:.3f} m while its neighbour was dragged"
    update_grab(app, camera, px, py, W, H, pressed=False)
    app.step()
    assert not grab.active and grab.held_cloth is None
    assert cloth.inv_mass[p] == cloth.base_inv_mass[p] > 0.0, "release did not restore the particle's mass"
    assert cloth.rejected_steps == 0


def test_releasing_a_grabbed_pinned_particle_leaves_it_pinned(make_app):
    app = make_app(substeps=4)
    cloth, sheet, entity = curtain(app)
    corner = sheet.side("top_corners")[0]
    target = cloth.x[corner].copy()
    grab = app.get(app.spawn(Grab(active=True, cloth=entity, particle=int(corner), target=target + [0.0, 0.0, 0.2])),
                   Grab)
    app.step(frames=5)
    assert np.array_equal(cloth.x[corner], grab.target), "the grab did not override the pin while held"
    grab.active = False
    app.step(frames=1)
    assert cloth.inv_mass[corner] == 0.0, "release gave a pinned particle its mass back"
    assert np.allclose(cloth.x[corner], target), "the pin did not take its particle back"


def test_blower_points_from_the_camera_toward_the_cursor(make_app):
    app = make_app()
    camera = Camera(target=(0.0, 1.0, 0.0), distance=3.0, yaw=0.5, pitch=0.2)
    blower = update_blower(app, camera, W / 2, H / 2, W, H, blowing=True)
    assert blower.active and len(app.query(Blower)) == 1
    toward = camera.target - camera.eye
    assert np.allclose(blower.direction, toward / np.linalg.norm(toward), atol=1e-9)
    off_line = np.cross(blower.origin - camera.eye, blower.direction)
    assert np.allclose(off_line, 0.0, atol=1e-9), f"nozzle {off_line} m off the eye's line through the cursor"
    update_blower(app, camera, W / 2, H / 2, W, H, blowing=False)
    assert not blower.active


def test_grab_and_pick_reject_bad_values(make_app):
    with pytest.raises(ValueError, match=r"Grab\.radius = 0\.0"):
        Grab(radius=0.0)
    with pytest.raises(ValueError, match=r"Grab\.active = True with Grab\.cloth = None"):
        Grab(active=True)
    with pytest.raises(ValueError, match=r"Grab\.particle = -2"):
        Grab(particle=-2)
    app = make_app()
    with pytest.raises(ValueError, match="direction"):
        pick_particle(app, np.zeros(3), np.zeros(3), 0.1)
    cloth, _, entity = curtain(app)
    app.spawn(Grab(active=True, cloth=entity, particle=cloth.particle_count))
    with pytest.raises(ValueError, match=rf"Grab\.particle = {cloth.particle_count}: out of range"):
        app.step()
