"""Environment collisions measured: penetration depth, resting height, Coulomb friction on a slope."""
from __future__ import annotations

import math

import numpy as np
import pytest

from loom.components import Cloth, ClothMaterial, Collider, Pin, Plane, Sphere, Transform
from loom.engine import mesh
from shape_examples import every_shape


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
    """No particle ever comes within the collider's margin of the ball, and none more than a quarter of the
    cloth's thickness inside the thickness it keeps from it. The contacts put every particle they touch exactly on
    the ball grown by margin + thickness (the steps ended there to 1e-12 m before yarns); since then the yarns'
    second pass (``settle_yarns``) runs after the contacts and slides touching particles along the surface
    (outward, on a ball) but may pull a particle that touched nothing this substep toward it: measured 2.0 mm of
    the 10 mm thickness, at the line where the sheet leaves the ball, never within the 5 mm margin."""
    app = make_app()
    app.spawn(Collider(Sphere(0.3), thickness=0.005), Transform(position=(0.0, 0.0, 0.0)))
    sheet = mesh.grid(24, 24, 1.2, 1.2, center=(0.0, 0.5, 0.0), plane="xz")
    cloth = Cloth.from_mesh(sheet)
    app.spawn(cloth)
    for _ in range(90):
        app.step()
        gap = np.linalg.norm(cloth.x, axis=1) - (0.3 + 0.005 + cloth.material.thickness)
        assert gap.min() >= -0.25 * cloth.material.thickness, f"penetration {-gap.min():.3e} m"
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


def test_a_particle_friction_holds_keeps_the_static_friction_it_did_not_use_for_the_pass_after_the_collisions(make_app):
    """On a 20° slope (μ = 0.5) each substep of h presses the resting particle g·cosθ·h² into the surface and pulls it
    g·sinθ·h² along it: static friction holds it (``STUCK``) with μ·g·cosθ·h² − g·sinθ·h² of its budget unused,
    which the contact leaves in ``Cloth.contact`` column 4 (negative) for the yarns' pass after the collisions
    (docs/physics.md, "Friction with yarns"): how hard that pass may pull the particle before it slides."""
    from loom.components.cloth import STUCK
    from loom.engine import Stage
    app = make_app()
    theta = math.radians(20.0)
    normal = slope(app, theta, friction=0.5)
    cloth = particle(app, normal * 0.01, friction=0.5)
    seen = []
    app.add_system(lambda app, h: seen.append(cloth.contact[0].copy()), Stage.SUBSTEP, after="collide_environment",
                   before="settle_yarns", name="peek")
    app.step(10)
    h = app.clock.h
    left = 9.81 * (0.5 * math.cos(theta) - math.sin(theta)) * h * h
    assert all(c[3] == STUCK for c in seen[1:])
    assert all(-c[4] == pytest.approx(left, rel=1e-9) for c in seen[1:]), [c[4] for c in seen[:3]]
    assert cloth.contact[0, 4] == 0.0                            # spent by that pass: the next solve starts at 0


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


def _cloth_over_shapes(make_app, *, prism: bool):
    """A 16×16 sheet dropped on a box, a sphere and a capsule on a floor (and a prism, when asked): 40 steps."""
    from loom.components import Box, Capsule, Prism

    app = make_app(substeps=8)
    app.spawn(Collider(Plane()), Transform())
    app.spawn(Collider(Box((0.2, 0.15, 0.2))), Transform(position=(-0.25, 0.15, 0.0)))
    app.spawn(Collider(Sphere(0.15)), Transform(position=(0.25, 0.2, 0.1)))
    app.spawn(Collider(Capsule(0.06, 0.2)), Transform.from_axis_angle((0.1, 0.1, -0.3), (0.0, 0.0, 1.0), 1.2))
    if prism:
        app.spawn(Collider(Prism([(-0.1, 0.0), (0.1, 0.0), (0.0, 0.2)], 0.3)), Transform(position=(0.0, 0.0, 0.35)))
    cloth = Cloth.from_mesh(mesh.grid(16, 16, 1.0, 1.0, center=(0.0, 0.45, 0.0), plane="xz"))
    app.spawn(cloth)
    app.step(40)
    return cloth.x.copy()


def test_basic_shapes_run_the_kernels_without_prism_and_mesh_code_and_get_the_same_positions(make_app, monkeypatch):
    """A scene of planes, boxes, spheres and capsules runs the contact kernels compiled with ``basic_only_sdf``
    (no prism or mesh code to compile on a first launch); forced onto the general kernels, it ends bit for bit
    where it did, since both evaluate the same basic_sdf. A scene with a prism runs the general kernels."""
    from loom.systems.collision import environment

    calls = []

    def spied(name, kernels):                          # (serial, parallel), each noting its name when called
        def wrap(kernel):
            def spy(*args):
                calls.append(name)
                return kernel(*args)
            return spy
        return tuple(wrap(kernel) for kernel in kernels)

    monkeypatch.setattr(environment, "_COLLIDE_BASIC", spied("basic", environment._COLLIDE_BASIC))
    monkeypatch.setattr(environment, "_collide_basic_call", environment._COLLIDE_BASIC[0])   # (its call site's name)
    monkeypatch.setattr(environment, "_COLLIDE", spied("general", environment._COLLIDE))
    basic = _cloth_over_shapes(make_app, prism=False)
    assert calls and set(calls) == {"basic"}, set(calls)
    assert basic[:, 1].min() > 0.0 and np.ptp(basic[:, 1]) > 0.1, "the sheet should drape over the shapes"
    calls.clear()
    monkeypatch.setattr(environment, "_COLLIDE_BASIC", environment._COLLIDE)
    monkeypatch.setattr(environment, "_collide_basic_call", environment._COLLIDE[0])
    general = _cloth_over_shapes(make_app, prism=False)
    assert set(calls) == {"general"} and np.array_equal(basic, general)
    calls.clear()
    _cloth_over_shapes(make_app, prism=True)
    assert set(calls) == {"general"}


def _rotation(rng: np.random.Generator) -> np.ndarray:
    q = rng.normal(size=4)
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _packed(app):
    """(this step's colliders as the contact kernel reads them, their ``Shapes``): ``gather_colliders``' packing,
    unheld."""
    from loom.components import ColliderSet
    from loom.systems.collision import environment as env
    from loom.systems.shared.shapes import Shapes
    env.gather_colliders(app, 1.0 / 60.0)
    packed = app.resources[ColliderSet]
    shapes = Shapes(packed.kind, packed.params, packed.polygons, packed.mesh, *packed.mesh_arrays)
    return env.Colliders(shapes, packed.margin, packed.friction, packed.pose0, packed.pose1, packed.impulse,
                         packed.impulse_point, packed.two_way, packed.bound, packed.extents, packed.skin), shapes


def _near_after_prepare(app, points: np.ndarray, thickness: float) -> list[np.ndarray]:
    """For each point, the colliders the contact kernel's cull (``environment._near_colliders``) keeps for a
    one-particle cloth there (at rest: x = x_prev), with this step's colliders."""
    from loom.systems.collision import environment as env
    col, _ = _packed(app)
    k = col.margin.shape[0]
    frames = env.Frames(np.zeros((k, 3, 3)), np.zeros((k, 3, 3)), np.zeros((k, 3)), np.zeros((k, 3)), np.zeros(k),
                        np.zeros((k, 3)), np.zeros(k), np.zeros(k, np.int64), np.zeros((env.CHUNKS, k, 7)),
                        np.zeros((env.CHUNKS, 4)), np.zeros(3), np.zeros((env.CHUNKS, k, 7)))
    env._prepare(col, frames, 0.0, 1.0)
    kept = []
    for point in points:
        x = np.array([point], float)
        cloth = env.Particles(x, x.copy(), np.ones(1), np.ones(1), thickness, 0.5, np.zeros((1, 5)))
        kept.append(env._near_colliders(cloth, col.shapes.kind, col.margin, frames).copy())
    return kept


def test_the_contact_cull_keeps_every_collider_a_particle_touches_and_drops_a_long_pole_beside_a_flag(make_app):
    """The contact kernel tests a cloth's particles only against the colliders near it (``_near_colliders``): those
    whose bounding ball and whose box at their pose (world axes, ``Frames.extent``), each grown by the contact
    reach, touch the box around the cloth; a plane when that box reaches within the reach of it. Never wrong: for
    every shape of ``collider.SHAPES`` (and a long capsule, flat ones), each turned at random, every one of 400
    points within (1 +
    ``CONTACT_SKIN``) × the reach of its surface (by its own signed distance, a plane's below it too) keeps it. And
    tight: a particle 5 cm beside a 3 m flagpole, well inside the pole's 1.54 m bounding ball, does not keep it
    (before the box test it did, and the flag game's contact kernel tested every particle against the pole every
    substep), nor does one 5 cm above a floor (before, a plane was always near)."""
    from loom.components import Box, Capsule, Cylinder, Prism
    from loom.systems.collision.environment import CONTACT_SKIN
    from loom.systems.shared.shapes import sdf
    rng = np.random.default_rng(11)
    shapes = [*every_shape(), Sphere(0.3), Capsule(0.1, 0.6), Cylinder(0.4, 0.05), Box((0.5, 0.05, 0.2)),
              Prism(np.array([[0.0, 0.0], [0.6, 0.0], [0.1, 0.3]]), 0.15)]        # and long, flat, thin ones
    thickness, margin = 0.01, 0.005
    reach = (thickness + margin) * (1.0 + CONTACT_SKIN)
    out = np.zeros(4)
    for shape in shapes:
        app = make_app()
        rotation, position = _rotation(rng), rng.uniform(-1.0, 1.0, 3)
        app.spawn(Collider(shape, thickness=margin), Transform(position=position, rotation=rotation))
        _, packed_shapes = _packed(app)
        points = []
        while len(points) < 400:                             # points near the surface, by its own distance
            local = rng.uniform(-0.8, 0.8, 3)
            sdf(packed_shapes, 0, *local, out)
            if out[0] < reach:
                points.append(position + rotation @ local)
        kept = _near_after_prepare(app, np.array(points), thickness)
        assert all(0 in k for k in kept), f"{type(shape).__name__}: a touching particle lost its collider"
    app = make_app()
    app.spawn(Collider(Capsule(0.04, 1.5), thickness=margin), Transform(position=(-1.04, 1.5, 0.0)))
    beside, touching = _near_after_prepare(app, np.array([[-0.95, 2.5, 0.0], [-0.99, 2.5, 0.0]]), thickness)
    assert beside.size == 0 and touching.tolist() == [0]
    app = make_app()
    app.spawn(Collider(Plane(), thickness=margin), Transform())
    above, touching, under = _near_after_prepare(app, np.array([[0.3, 0.05, 0.1], [0.3, 0.014, 0.1],
                                                                [0.3, -0.2, 0.1]]), thickness)
    assert above.size == 0 and touching.tolist() == [0] and under.tolist() == [0]


def test_a_cloth_clear_of_every_collider_skips_the_contact_kernel_and_keeps_no_stale_contact(make_app):
    """``collide_environment`` runs the contact kernel only when a collider is near the cloth (``_touches``); a cloth
    clear of them all still ends the substep with no contact left from an earlier one (what the kernel writes for a
    particle touching nothing), and lands on the floor as before once it gets there."""
    from loom.systems.collision import environment as env
    app = make_app()
    app.spawn(Collider(Plane()), Transform())
    sheet = mesh.grid(8, 8, 0.5, 0.5, center=(0.0, 0.3, 0.0), plane="xz")
    cloth = Cloth.from_mesh(sheet, thickness=0.01)
    app.spawn(cloth)
    calls = []
    kernels, site = env._COLLIDE_BASIC, env._collide_basic_call

    def counted(*args):
        calls.append(1)
        return kernels[0](*args)
    env._COLLIDE_BASIC, env._collide_basic_call = (counted, counted), counted     # (the serial one's call site too)
    try:
        cloth.contact[:, :3] = (0.0, 1.0, 0.0)              # stale: as if it had touched something
        cloth.contact[:, 3] = 1.0
        app.step(1)
        assert calls == [] and not cloth.contact.any()
        app.step(60)                                         # falls 0.29 m: on the floor within a second
    finally:
        env._COLLIDE_BASIC, env._collide_basic_call = kernels, site
    assert calls and np.allclose(cloth.x[:, 1], 0.01, atol=1e-6) and (cloth.contact[:, 1] == 1.0).all()
