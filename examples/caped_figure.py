"""A caped figure walking in circles: colliders on an animated body, a max distance and a backstop (issue 45).

The figure (``loom.spawn_figure``) is posed every step by the game; ``loom.figure_colliders`` gives its torso, head,
arms and legs colliders that follow the parts (``loom.Follow``: the parts' motion is the friction's surface velocity);
the cape hangs from a Transform at his shoulders and carries a ``loom.MaxDistance``: at most twice its rest distance
from the pinned row away from where it hangs, and a backstop wall at his back it may not pass. The run prints how
close the cape came to entering him (never: the distance stays >= 0) and, with ``--screenshot``, draws the last
frame (GL, offscreen).

Run: python examples/caped_figure.py [--steps 300] [--screenshot out.png]
"""
from __future__ import annotations

import argparse
import math

import numpy as np

import loom
from loom.components import Transform
from loom.prefabs.figure import COLLIDING_PARTS, PARTS, yaw_matrix

RADIUS, SPEED = 1.5, 2.0                  # [m] the circle walked, [m/s]
BACK = -0.2                               # [m] his back, x in his frame (the figure's 0.4 m box)


def main(argv: list[str] | None = None) -> dict:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--steps", type=int, default=300)
    args.add_argument("--screenshot", default=None)
    options = args.parse_args(argv)

    app = loom.App(dt=1 / 60, substeps=8, threads=1).add_plugin(loom.DefaultPlugins)
    centre = np.array([0.0, 0.45, 0.0])                        # where he starts, facing +x
    figure = loom.spawn_figure(app, tuple(centre))
    loom.figure_colliders(app, figure, thickness=0.005)
    shoulders = app.spawn(Transform(position=centre))
    sheet = loom.mesh.grid(12, 16, 0.4, 0.5, plane="yz", center=centre + (-0.22, 0.2, 0.0))   # behind his back
    rest = sheet.positions - centre                                                        # in his frame
    top = sheet.side("top")
    below = rest[:, 1].max() - rest[:, 1]
    cape = loom.Cloth.from_mesh(sheet, "silk", thickness=0.01)
    app.spawn(cape, loom.Pin(index=top, attach_to=shoulders, offset=rest[top]),
              loom.MaxDistance(reference=rest, distance=2.0 * below, attach_to=shoulders, normal=(-1.0, 0.0, 0.0),
                               backstop_radius=50.0, backstop_offset=BACK - rest[:, 0], backstop_axis=(0.0, 1.0, 0.0),
                               backstop_half_length=50.0),
              loom.ClothStyle(front_color=(0.7, 0.1, 0.15), back_color=(0.45, 0.05, 0.1), subdivision=1))
    at = centre.copy()

    def walk(app: loom.App, dt: float) -> None:
        """Walk round a circle of RADIUS from the origin, starting toward +x and turning toward +z, facing the way he
        goes; the cape's frame goes with him."""
        angle = SPEED * (app.clock.step_index + 1) * dt / RADIUS
        at[0], at[2] = RADIUS * math.sin(angle), RADIUS * (1.0 - math.cos(angle))
        yaw = -angle                                               # his +x along the path, (cos a, 0, sin a)
        loom.pose_figure(app, figure, at, yaw, SPEED, False, dt)
        carrier = app.get(shoulders, Transform)
        carrier.position[:] = at
        yaw_matrix(yaw, out=carrier.rotation)

    app.add_system(walk, loom.Stage.PRE_STEP, in_set=loom.ClothSet.PIN_TARGETS, before="prepare_pins")
    app.step(options.steps)
    closest = min(_distance(PARTS[name][0], app.get(figure.parts[name], Transform).to_local(cape.x))
                  for name in COLLIDING_PARTS)
    report = {"steps": options.steps, "closest_to_body_m": round(closest, 4), "rejected_steps": cape.rejected_steps}
    print(report)
    if options.screenshot:
        from loom.systems.render.gl import GLRenderPlugin, save_screenshot
        app.add_plugin(GLRenderPlugin(width=640, height=480, headless=True))
        app.spawn(loom.Camera(target=(0.0, 0.6, RADIUS), distance=5.0, pitch=0.5))
        save_screenshot(app, options.screenshot)
    return report


def _distance(shape, p: np.ndarray) -> float:
    """The smallest signed distance [m] of local points p (n, 3) to a sphere, capsule or box (negative inside)."""
    if isinstance(shape, loom.Sphere):
        return float((np.linalg.norm(p, axis=1) - shape.radius).min())
    if isinstance(shape, loom.Capsule):
        q = p.copy()
        q[:, 1] -= np.clip(q[:, 1], -shape.half_length, shape.half_length)
        return float((np.linalg.norm(q, axis=1) - shape.radius).min())
    d = np.abs(p) - shape.half_extents
    outside = np.linalg.norm(np.maximum(d, 0.0), axis=1)
    return float((outside + np.minimum(d.max(axis=1), 0.0)).min())


if __name__ == "__main__":
    main()
