"""Every collider shape measured: penetration after settling, tunnelling at speed, moving platforms."""
from __future__ import annotations

import math

import numpy as np
import pytest

from loom.components import Box, Capsule, Cloth, ClothMaterial, Collider, Plane, Prism, Transform, TriangleMesh
from loom.components.collider import SHAPES
from loom.engine import mesh
from shape_examples import example, reference

THICK = 0.01                                                  # cloth thickness [m]


def drop_sheet(app, n=32, height=0.6, **material):
    sheet = mesh.grid(n, n, 1.0, 1.0, center=(0.0, height, 0.0), plane="xz")
    cloth = Cloth.from_mesh(sheet, "cotton", thickness=THICK, **material)
    app.spawn(cloth)
    return cloth


@pytest.mark.parametrize("shape_class", SHAPES, ids=lambda s: s.__name__)
def test_sheet_dropped_on_shape_settles_with_penetration_below_one_percent(make_app, shape_class):
    shape = example(shape_class)                              # every shape of collider.SHAPES, about 0.3 m across
    distance = reference(shape)                               # its signed distance in NumPy (tests/shape_examples.py)
    name = shape_class.__name__
    app = make_app()
    position = (0.0, -0.3, 0.0) if shape_class is Plane else (0.0, 0.0, 0.0)
    rotation = Transform.from_axis_angle(position, (1.0, 0.0, 0.0), math.pi / 2).rotation \
        if shape_class is Capsule else np.eye(3)                # capsule lying along z
    app.spawn(Collider(shape), Transform(position=position, rotation=rotation))
    cloth = drop_sheet(app)
    transform = Transform(position=position, rotation=rotation)
    worst = 0.0
    for _ in range(150):
        app.step()
        local = transform.to_local(cloth.x)
        worst = max(worst, float(-(distance(local)).min()))     # depth inside the shape itself
    gap = distance(transform.to_local(cloth.x)) - THICK
    assert np.isfinite(cloth.x).all() and cloth.rejected_steps == 0
    assert worst < 0.01, f"{name}: particles went {worst * 1000:.2f} mm inside (edge 1 m: limit 10 mm)"
    assert gap.min() > -0.01, f"{name}: settled {-gap.min() * 1000:.2f} mm inside the thickness margin"
    assert gap.min() < 0.002, f"{name}: the sheet should rest on the shape, closest gap {gap.min():.4f} m"


def test_particle_at_20_m_per_s_does_not_pass_a_1_cm_box(make_app):
    app = make_app()
    app.spawn(Collider(Box((0.5, 0.5, 0.005))), Transform())          # 1 cm thick wall in the xy plane
    cloth = Cloth.from_particles([[0.0, 0.0, 0.5]], mass=0.01, links=np.zeros((0, 2), np.int32),
                                 material=ClothMaterial(damping=0.0, thickness=0.001))
    cloth.v[:] = (0.0, 0.0, -20.0)                                     # 20 m/s: 2.1 cm per substep
    app.spawn(cloth)
    for _ in range(10):
        app.step()
        assert cloth.x[0, 2] >= 0.005, f"particle tunnelled to z = {cloth.x[0, 2]:.4f} m"
    assert cloth.x[0, 2] == pytest.approx(0.006, abs=1e-9)


def test_friction_one_stops_sliding_where_friction_zero_slides(make_app):
    moved = {}
    for mu in (0.0, 1.0):
        app = make_app()
        slope = Transform.from_axis_angle((0.0, 0.0, 0.0), (0.0, 0.0, 1.0), math.radians(30.0))
        app.spawn(Collider(Box((2.0, 0.1, 2.0)), friction=mu), slope)
        sheet = mesh.grid(8, 8, 0.4, 0.4, plane="xz")
        cloth = Cloth.from_mesh(sheet, friction=mu, thickness=THICK)
        cloth.x[:] = slope.to_world(cloth.x + (0.0, 0.1 + THICK, 0.0))      # lying on the slope
        cloth.x_prev[:] = cloth.x
        app.spawn(cloth)
        start = cloth.x.mean(axis=0)
        app.step(60)
        moved[mu] = float(np.linalg.norm(cloth.x.mean(axis=0) - start))
    assert moved[0.0] > 0.5, f"frictionless sheet moved only {moved[0.0]:.3f} m in 1 s on a 30° slope"
    assert moved[1.0] < 1e-3, f"friction 1 (> tan 30°) should hold it; it moved {moved[1.0]:.5f} m"


def test_sheet_on_moving_platform_follows_it(make_app):
    app = make_app()
    platform = Transform(position=(0.0, 0.0, 0.0))
    app.spawn(Collider(Box((1.0, 0.05, 1.0)), friction=0.8), platform)
    cloth = Cloth.from_mesh(mesh.grid(8, 8, 0.5, 0.5, center=(0.0, 0.05 + THICK, 0.0), plane="xz"),
                            thickness=THICK, friction=0.8)
    app.spawn(cloth)
    app.step(10)                                                       # settle onto it
    start = cloth.x.mean(axis=0)
    for frame in range(60):                                            # 0.5 m/s along +x for 1 s
        platform.position[0] = 0.5 * (frame + 1) / 60
        app.step()
    shift = cloth.x.mean(axis=0) - start
    # The platform starts at 0.5 m/s at once: the sheet slips under kinetic friction μ·g until it
    # catches up, losing v²/(2μg) = 15.9 mm, then rides along (static friction).
    expected = 0.5 - 0.5 ** 2 / (2 * 0.8 * 9.81)
    assert shift[0] == pytest.approx(expected, abs=1e-3), f"sheet moved {shift[0]:.4f} m, Coulomb gives {expected:.4f}"
    assert abs(cloth.x[:, 1].min() - (0.05 + THICK)) < 1e-3


def test_rotating_prism_and_mesh_keep_cloth_out(make_app):
    app = make_app()
    square = np.array([[-0.3, -0.3], [0.3, -0.3], [0.3, 0.3], [-0.3, 0.3]])
    app.spawn(Collider(Prism(square, half_depth=0.6)), Transform.from_2d(0.0, 0.0, 0.3))
    ground = mesh.grid(6, 6, 4.0, 4.0, plane="xz")
    app.spawn(Collider(TriangleMesh(ground.positions, ground.triangles)), Transform(position=(0.0, -0.5, 0.0)))
    cloth = drop_sheet(app, n=20, height=0.8)
    app.step(150)
    assert np.isfinite(cloth.x).all()
    assert cloth.rejected_steps == 0
    assert cloth.x[:, 1].min() > -0.5 + THICK - 1e-3, f"sheet went through the mesh floor: {cloth.x[:, 1].min():.4f}"
    local = Transform.from_2d(0.0, 0.0, 0.3).to_local(cloth.x)
    inside = (np.abs(local[:, 0]) < 0.3 - 1e-3) & (np.abs(local[:, 1]) < 0.3 - 1e-3) & (np.abs(local[:, 2]) < 0.6)
    assert not inside.any(), "particles inside the prism"


def test_shapes_reject_bad_sizes():
    with pytest.raises(ValueError, match=r"Capsule\.radius = 0\.0"):
        Capsule(0.0, 1.0)
    with pytest.raises(ValueError, match=r"Box\.half_extents\[1\] = -1\.0"):
        Box((1.0, -1.0, 1.0))
    with pytest.raises(ValueError, match=r"Prism\.polygon.*convex"):
        Prism([[0, 0], [1, 0], [0.2, 0.2], [0, 1]])
    with pytest.raises(ValueError, match=r"TriangleMesh\.triangles\[0\] = \[0, 1, 5\]: out of range"):
        TriangleMesh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 5]])


def test_particle_resting_on_a_box_can_be_pulled_off_it_fast(make_app):
    # regression: the swept test used to stop a particle leaving the surface margin at t = 0
    app = make_app()
    app.spawn(Collider(Box((1.0, 0.05, 1.0))), Transform())
    cloth = Cloth.from_particles([[0.0, 0.05 + THICK, 0.0]], mass=0.01, links=np.zeros((0, 2), np.int32),
                                 material=ClothMaterial(damping=0.0, thickness=THICK))
    cloth.v[:] = (8.0, 0.0, 0.0)                                     # 1.7 cm per substep along the top
    app.spawn(cloth)
    app.step(6)
    assert cloth.x[0, 0] > 0.5, f"particle stuck on the box at x = {cloth.x[0, 0]:.3f} m"
    cloth.v[:] = (0.0, -8.0, 0.0)                                    # and pulled down off the far edge…
    cloth.x[0] = (1.5, 0.0, 0.0)
    cloth.x_prev[0] = cloth.x[0]
    cloth.v[:] = (0.0, 8.0, 0.0)                                     # …up past the side: no snag
    app.step(6)
    assert cloth.x[0, 1] > 0.4, f"particle snagged at y = {cloth.x[0, 1]:.3f} m"
