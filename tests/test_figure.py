"""The drawn character (loom.spawn_figure, loom.pose_figure): Props placed on the body, facing its yaw, legs
swinging in a stride while it runs and tucked in the air; it never collides."""
from __future__ import annotations

import math

import numpy as np

import loom
from loom.components import Collider, Prop, Transform
from loom.engine import App


def parts(app: App, figure: loom.Figure) -> dict[str, np.ndarray]:
    return {name: app.get(entity, Transform).position.copy() for name, entity in figure.parts.items()}


def test_a_figure_is_props_on_its_body_facing_its_yaw():
    app = App()
    figure = loom.spawn_figure(app, (1.0, 0.45, 0.0))
    assert all(app.try_get(e, Prop) is not None and app.try_get(e, Collider) is None for e in figure.parts.values())
    at = parts(app, figure)
    assert at["head"][1] > at["torso"][1] > at["left_leg"][1], "head above torso above legs"
    assert at["left_eye"][0] > at["head"][0], "facing +x at yaw 0: the eyes are on the +x side of the head"
    loom.pose_figure(app, figure, np.array([1.0, 0.45, 0.0]), -math.pi, 0.0, False, 0.0)
    at = parts(app, figure)
    assert at["left_eye"][0] < at["head"][0], "turned to yaw -pi it faces -x"
    loom.pose_figure(app, figure, np.array([1.0, 0.45, 0.0]), -math.pi / 2, 0.0, False, 0.0)
    at = parts(app, figure)
    assert at["left_eye"][2] > at["head"][2] + 0.05, "half turned (yaw -pi/2) it faces +z, the camera's side"
    app.close()


def test_running_swings_the_legs_in_a_stride_and_a_jump_tucks_them():
    app = App()
    figure = loom.spawn_figure(app, (0.0, 0.45, 0.0))
    position, dt, swings = np.array([0.0, 0.45, 0.0]), 1 / 60, []
    for _ in range(60):                                          # 1 s at 3 m/s: 3 m, about 5.5 half strides
        position = position + (3.0 * dt, 0.0, 0.0)
        loom.pose_figure(app, figure, position, 0.0, 3.0, False, dt)
        at = parts(app, figure)
        swings.append(at["left_leg"][0] - at["right_leg"][0])  # + left leg ahead, − behind
    swings = np.array(swings[10:])
    assert swings.max() > 0.1 and swings.min() < -0.1, f"legs swing only {swings.min():.3f} … {swings.max():.3f} m"
    assert np.count_nonzero(np.diff(np.sign(swings))) >= 4, "the legs cross over at every stride"
    for _ in range(30):
        loom.pose_figure(app, figure, position, 0.0, 3.0, True, dt)
    at = parts(app, figure)
    assert at["left_leg"][0] - at["right_leg"][0] > 0.1, "in the air the front leg stays forward"
    app.close()


def test_every_part_is_placed_by_the_body_turn_lean_and_its_swing_exactly():
    """``pose_figure``'s one kernel call gives each part the rotation turn(yaw)·lean·swing(angle) and the centre
    position + turn·lean·(joint + swing·offset) (the matrices built here with NumPy, to rounding), and every
    rotation is proper and orthonormal."""
    from loom.prefabs import figure as fig

    def about_z(a: float) -> np.ndarray:
        c, s = math.cos(a), math.sin(a)
        return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    rng = np.random.default_rng(7)
    n = len(fig.PARTS)
    centres, rotations = np.zeros((n, 3)), np.zeros((n, 3, 3))
    for _ in range(20):
        yaw, lean, position = rng.uniform(-4, 4), rng.uniform(-0.2, 0.2), rng.normal(size=3)
        angles = rng.uniform(-2, 2, n)
        fig._pose_parts(yaw, lean, angles, position, fig._JOINTS, fig._OFFSETS, centres, rotations)
        body = fig.yaw_matrix(yaw) @ about_z(lean)
        for k in range(n):
            swing = about_z(angles[k])
            assert np.allclose(rotations[k], body @ swing, atol=1e-14, rtol=0.0)
            expected = position + body @ (fig._JOINTS[k] + swing @ fig._OFFSETS[k])
            assert np.allclose(centres[k], expected, atol=1e-14, rtol=0.0)
            assert np.allclose(rotations[k] @ rotations[k].T, np.eye(3), atol=1e-14)
            assert abs(np.linalg.det(rotations[k]) - 1.0) < 1e-14


def test_a_part_whose_transform_is_replaced_or_removed_is_posed_by_the_new_one_or_skipped():
    """``pose_figure`` keeps the parts' Transforms between steps (found again when a component is added or removed
    anywhere, or the parts change): a Transform replaced on a part is the one posed next, a part without one is
    skipped, and a part moved to another entity is posed there."""
    app = App()
    figure = loom.spawn_figure(app, (0.0, 0.45, 0.0))
    here = np.array([2.0, 0.45, 0.0])
    loom.pose_figure(app, figure, here, 0.0, 0.0, False, 0.0)
    head = figure.parts["head"]
    old = app.get(head, Transform)
    new = Transform(position=(9.0, 9.0, 9.0))
    app.add_component(head, new)                                 # replaced between steps
    loom.pose_figure(app, figure, here + (1.0, 0.0, 0.0), 0.0, 0.0, False, 0.0)
    assert abs(new.position[0] - 3.0) < 0.1 and abs(old.position[0] - 2.0) < 0.1, (new.position, old.position)
    app.remove_component(figure.parts["torso"], Transform)       # no Transform: skipped
    loom.pose_figure(app, figure, here, 0.0, 0.0, False, 0.0)
    assert abs(new.position[0] - 2.0) < 0.1
    moved = app.spawn(Transform())
    figure.parts["belt"] = moved                                  # the part is another entity now
    loom.pose_figure(app, figure, here + (0.0, 1.0, 0.0), 0.0, 0.0, False, 0.0)
    assert abs(app.get(moved, Transform).position[1] - 1.47) < 0.01, app.get(moved, Transform).position
    app.close()
