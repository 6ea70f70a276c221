"""pymunk bodies as cloth colliders: a ball bounces on a cloth trampoline; one-way mode does not push."""
from __future__ import annotations

import numpy as np
import pymunk
import pytest

from loom.components import Cloth, ClothMaterial, Pin, RigidBody2D, Space2D
from loom.engine import mesh


def trampoline(app, two_way=True):
    space = pymunk.Space()
    space.gravity = (0.0, -9.81)
    app.insert_resource(Space2D(space))
    ball = pymunk.Body(0.3, pymunk.moment_for_circle(0.3, 0, 0.08))          # [kg]: heavier than the bed
    ball.position = (0.0, 0.4)
    circle = pymunk.Circle(ball, 0.08)
    circle.friction = 0.3
    space.add(ball, circle)
    app.spawn(RigidBody2D(ball, depth=1.2, two_way=two_way))
    sheet = mesh.grid(20, 20, 1.0, 1.0, plane="xz")
    material = ClothMaterial(density=0.05, stretch_compliance=5e-3, shear_compliance=5e-3, damping=0.05,
                             thickness=0.01)                                 # a light, springy bed
    cloth = Cloth.from_mesh(sheet, material, tethers=False)
    app.spawn(cloth, Pin.edge(sheet, "corners"))
    return ball, cloth


def test_ball_dropped_on_cloth_trampoline_rebounds_and_cloth_deforms(make_app):
    app = make_app()
    ball, cloth = trampoline(app)
    vy, lowest_cloth = [], 0.0
    for _ in range(90):
        app.step()
        vy.append(ball.velocity.y)
        lowest_cloth = min(lowest_cloth, float(cloth.x[:, 1].min()))
    vy = np.array(vy)
    impact = int(np.argmin(vy))
    assert vy[impact] < -2.0, f"ball should fall fast onto the cloth, min vy {vy[impact]:.2f} m/s"
    rebound = float(vy[impact:].max())
    assert rebound > 0.5, f"ball never rebounded: max vy after the impact {rebound:.3f} m/s"
    # explicit coupling lags one step and gave back 3.54 m/s for a 3.42 m/s impact: bound the gain
    assert rebound < 1.2 * -vy[impact], f"rebound {rebound:.2f} m/s for an impact at {-vy[impact]:.2f} m/s"
    assert lowest_cloth < -0.02, f"cloth should sag under the ball, lowest point {lowest_cloth:.3f} m"
    assert np.isfinite(cloth.x).all()


def test_one_way_body_is_not_pushed_by_cloth(make_app):
    app = make_app()
    ball, cloth = trampoline(app, two_way=False)
    app.step(60)
    assert ball.position.y < -1.0, f"a one-way ball falls through its own physics, y = {ball.position.y:.3f}"
    assert cloth.x[:, 1].min() < -0.02, "the cloth still reacts to the ball"


def test_rigid_body_rejects_a_non_body():
    with pytest.raises(TypeError, match=r"RigidBody2D\.body"):
        RigidBody2D("ball")
    with pytest.raises(ValueError, match=r"RigidBody2D\.scale = 0\.0"):
        RigidBody2D(pymunk.Body(1, 1), scale=0.0)


def test_a_pymunk_box_becomes_a_box_collider_and_other_polygons_prisms(make_app):
    from loom.components import Box, Collider, Prism, Transform
    app = make_app()
    body = pymunk.Body(1.0, 1.0)
    body.position = (2.0, 1.0)
    crate = pymunk.Poly.create_box(body, (0.4, 0.8))
    wedge = pymunk.Poly(body, [(0, 0), (1, 0), (0, 1)])
    space = pymunk.Space()
    space.add(body, crate, wedge)
    rigid = RigidBody2D(body, depth=0.5)
    app.spawn(rigid)
    app.step()
    kinds = {type(app.get(e, Collider).shape) for e in rigid.shape_entities}
    assert kinds == {Box, Prism}
    box_entity = next(e for e in rigid.shape_entities if isinstance(app.get(e, Collider).shape, Box))
    assert np.allclose(app.get(box_entity, Collider).shape.half_extents, (0.2, 0.4, 0.25))
    assert np.allclose(app.get(box_entity, Transform).position, (2.0, 1.0, 0.0))
