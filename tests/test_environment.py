"""Environment collisions measured: penetration depth, resting height, Coulomb friction on a slope."""
from __future__ import annotations

import math

import numpy as np
import pytest

from loom.components import Cloth, ClothMaterial, Collider, Pin, Plane, Sphere, Transform
from loom.engine import mesh


def particle(app, position, *, friction: float = 0.5, thickness: float = 0.01) -> Cloth:
    cloth = Cloth.from_particles([position], mass=0.1, links=np.zeros((0, 2), np.int32),
                                 material=ClothMaterial(damping=0.0, friction=friction, thickness=thickness))
    app.spawn(cloth)
    return cloth


def test_sheet_dropped_on_floor_rests_at_its_thickness(make_app):
    app = make_app()
    app.spawn(Collider(Plane()), Transform())
    sheet = mesh.grid(16, 16, 1.0, 1.0, center=(0.0, 0.5, 0.0), plane="xz")
    cloth = Cloth.from_mesh(sheet, thickness=0.02)
    app.spawn(cloth)
    app.step(120)
    lowest = float(cloth.x[:, 1].min())
    assert lowest >= 0.02 - 1e-12, f"sheet sank to y = {lowest:.6f} m below its 0.02 m thickness"
    assert np.allclose(cloth.x[:, 1], 0.02, atol=1e-9), "a flat sheet on the floor should lie flat"
    assert np.abs(cloth.v).max() < 1e-6


def test_sheet_draped_over_sphere_never_enters_it(make_app):
    app = make_app()
    app.spawn(Collider(Sphere(0.3), thickness=0.005), Transform(position=(0.0, 0.0, 0.0)))
    sheet = mesh.grid(24, 24, 1.2, 1.2, center=(0.0, 0.5, 0.0), plane="xz")
    cloth = Cloth.from_mesh(sheet)
    app.spawn(cloth)
    for _ in range(90):
        app.step()
        gap = np.linalg.norm(cloth.x, axis=1) - (0.3 + 0.005 + cloth.material.thickness)
        assert gap.min() >= -1e-12, f"penetration {-gap.min():.3e} m"
    assert cloth.x[:, 1].max() > 0.3, "the sheet should hang over the top of the ball"
    assert cloth.x[:, 1].min() < 0.0, "its edges should drape down the sides"


def slope(app, angle: float, friction: float):
    axis_angle = Transform.from_axis_angle((0.0, 0.0, 0.0), (0.0, 0.0, 1.0), angle)
    app.spawn(Collider(Plane((0.0, 1.0, 0.0)), friction=friction), axis_angle)
    normal = axis_angle.rotation @ np.array([0.0, 1.0, 0.0])
    return normal


@pytest.mark.parametrize("mu", [0.1, 0.25])
def test_particle_slides_down_slope_with_coulomb_acceleration(make_app, mu):
    # Position-based Coulomb friction is exact here: each substep gravity presses the particle
    # g·cosθ·h² into the slope, and kinetic friction cuts its slip by μ times that depth, so the
    # particle accelerates at g(sinθ − μ·cosθ) along the slope.
    app = make_app()
    theta = math.radians(25.0)
    normal = slope(app, theta, friction=mu)
    cloth = particle(app, normal * 0.01, friction=mu)                  # resting on the surface
    downhill = np.array([-math.cos(theta), -math.sin(theta), 0.0])
    app.step(60)                                                      # 1 s
    speed = float(cloth.v[0] @ downhill)
    expected = 9.81 * (math.sin(theta) - mu * math.cos(theta)) * 1.0
    assert speed == pytest.approx(expected, rel=0.01), f"{speed:.4f} m/s after 1 s, Coulomb gives {expected:.4f}"
    assert abs(float((cloth.x[0]) @ normal) - 0.01) < 1e-9, "particle left the surface"


def test_particle_sticks_on_slope_below_its_friction_angle(make_app):
    app = make_app()
    theta = math.radians(20.0)                                        # tan 20° = 0.36 < μ = 0.5
    normal = slope(app, theta, friction=0.5)
    cloth = particle(app, normal * 0.01, friction=0.5)
    start = cloth.x[0].copy()
    app.step(120)
    assert np.linalg.norm(cloth.x[0] - start) < 1e-9, "static friction should hold the particle"


def test_collider_rejects_bad_shapes_and_values():
    with pytest.raises(ValueError, match=r"Sphere\.radius = -1\.0"):
        Sphere(-1.0)
    with pytest.raises(ValueError, match=r"Plane\.normal = \[0\.0, 0\.0, 0\.0\]"):
        Plane((0.0, 0.0, 0.0))
    with pytest.raises(TypeError, match=r"Collider\.shape"):
        Collider("ball")
    with pytest.raises(ValueError, match=r"Collider\.friction = -0\.2"):
        Collider(Sphere(1.0), friction=-0.2)
    with pytest.raises(ValueError, match=r"Collider\.thickness = nan"):
        Collider(Sphere(1.0), thickness=float("nan"))


def test_pinned_particles_ignore_colliders(make_app):
    app = make_app()
    app.spawn(Collider(Sphere(0.5)), Transform())
    sheet = mesh.grid(8, 8, 1.0, 1.0, plane="xz")
    cloth = Cloth.from_mesh(sheet)
    pin = Pin.corners(sheet, "top")
    app.spawn(cloth, pin)
    app.step(10)
    assert np.array_equal(cloth.x[pin.index], pin.target)
