"""Drawing between steps (issue 45, item 5): both renderers draw (1 − α)·x_prev_step + α·x, α = clock.alpha.

A falling, pinned sheet is stepped by ``app.update`` with frame times that leave part of a step banked; a POST_STEP
system of the test records every step's end state, so the expected drawing is computed from the states themselves,
never from the renderer. The simulation is bit-identical with the blend on or off, and a frame allocates no NumPy
array more with it on.
"""
from __future__ import annotations

import os

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

import numpy as np  # noqa: E402
import pygame  # noqa: E402
import pytest  # noqa: E402

from loom.components import Camera, Cloth, Collider, Pin, Sphere, Transform  # noqa: E402
from loom.components.render import ClothStyle, RenderSettings  # noqa: E402
from loom.engine import App, Stage, mesh  # noqa: E402
from loom.systems import DefaultPlugins  # noqa: E402
from loom.systems.render.between import StepBlend  # noqa: E402
from loom.systems.render.soft import SoftRenderPlugin  # noqa: E402
from loom.systems.render.solids import placed, visible_solids  # noqa: E402

DT = 1.0 / 60.0
FRAMES = [DT * 1.3, DT * 0.4, DT * 0.7, DT * 2.45, DT * 0.1, DT * 0.9]
"""Real frame times [s] of a display faster and slower than the simulation: 0, 1 or 2 steps a frame, α varying."""
SPEED = 1.5
"""Speed of the moving collider [m/s] along +x."""


def scene(renderer: str | None, enabled: bool) -> tuple[App, Cloth, list[np.ndarray], list[np.ndarray], object]:
    """A 12×12 sheet pinned along its top edge, falling and swinging, a sphere collider moving at SPEED; the
    renderer ("soft", "gl" or None) and its StepBlend on or off. Returns the App, the cloth, the lists every step's
    end positions and the sphere's positions are appended to, and the soft plugin (or None)."""
    app = App(dt=DT, substeps=4, threads=1).add_plugin(DefaultPlugins)
    plugin = None
    if renderer == "soft":
        plugin = SoftRenderPlugin(pygame.Surface((160, 120)), Camera(target=(0.0, 0.6, 0.0), distance=3.0))
        app.add_plugin(plugin)
    elif renderer == "gl":
        from loom.systems.render.gl import GLRenderPlugin
        app.add_plugin(GLRenderPlugin(width=64, height=48, headless=True))
    if renderer is not None:
        app.resource(StepBlend).enabled = enabled
    grid = mesh.grid(12, 12, 0.8, 0.8, center=(0.0, 0.6, 0.0), plane="xy")
    cloth = Cloth.from_mesh(grid)
    cloth.x[:, 2] += 0.3 * (cloth.x[:, 1] - 0.6)              # tilted: it swings as it falls
    app.spawn(cloth, Pin.edge(grid, "top"), ClothStyle(subdivision=0, texture=None))
    ball = app.spawn(Collider(Sphere(0.05)), Transform(position=(-1.0, -1.0, 0.0)))
    states, balls = [cloth.x.copy()], [app.get(ball, Transform).position.copy()]

    def move_ball(app: App, dt: float) -> None:                # the game moves a collider each step
        app.get(ball, Transform).position[0] += SPEED * dt

    def record(app: App, dt: float) -> None:
        states.append(cloth.x.copy())
        balls.append(app.get(ball, Transform).position.copy())

    app.add_system(move_ball, Stage.PRE_STEP)
    app.add_system(record, Stage.POST_STEP)
    return app, cloth, states, balls, plugin


def _drawn_soft(plugin: SoftRenderPlugin, cloth: Cloth) -> np.ndarray:
    return plugin.renderer._surfaces[id(cloth)][1].x


@pytest.mark.parametrize("renderer", ["soft", "gl"])
def test_interpolated_drawing_lands_between_the_last_two_steps(renderer):
    if renderer == "gl":
        pytest.importorskip("moderngl")
    app, cloth, states, balls, plugin = scene(renderer, enabled=True)
    checked = 0
    for real_dt in FRAMES:
        app.update(real_dt)
        alpha = app.clock.alpha
        assert 0.0 < alpha < 1.0
        previous, now = states[-2], states[-1]
        expected = (1.0 - alpha) * previous + alpha * now
        assert np.abs(now - previous).max() > 1e-4                # the steps differ: the blend is visible
        if renderer == "soft":
            drawn = _drawn_soft(plugin, cloth)
            tol = 1e-12
        else:
            from loom.systems.render.gl import GLRenderer
            gpu = next(iter(app.resource(GLRenderer)._cloths.values()))
            drawn = gpu.packed[:, :3].astype(np.float64)
            tol = 1e-6 * (1.0 + np.abs(expected).max())           # float32 vertex buffer
        assert np.abs(drawn - expected).max() <= tol
        # every drawn particle on the segment between its two step positions, α of the way
        assert np.abs(drawn - now).max() > 1e-6 or alpha > 0.999
        solid = next(s for s in visible_solids(app, app.resource(RenderSettings))
                     if s.key[0] == "collider" and isinstance(s.shape, Sphere))
        matrix = placed(app, app.resource(StepBlend), solid)
        ball_expected = (1.0 - alpha) * balls[-2] + alpha * balls[-1]
        assert np.abs(matrix[:3, 3] - ball_expected).max() < 1e-12
        assert np.abs(matrix[:3, :3] - np.eye(3)).max() < 1e-12
        checked += 1
    assert checked == len(FRAMES) and cloth.rejected_steps == 0


def test_without_the_blend_the_last_step_is_drawn():
    app, cloth, states, _, plugin = scene("soft", enabled=False)
    for real_dt in FRAMES:
        app.update(real_dt)
        assert np.array_equal(_drawn_soft(plugin, cloth), states[-1])


def test_the_blend_leaves_the_simulation_bit_identical():
    runs = []
    for renderer, enabled in ((None, False), ("soft", True)):
        app, cloth, _, _, _ = scene(renderer, enabled)
        for real_dt in FRAMES * 3:
            app.update(real_dt)
        runs.append((cloth.x.tobytes(), cloth.v.tobytes(), app.clock.step_index))
    assert runs[0] == runs[1]


NUMPY_CONSTRUCTORS = ("zeros", "empty", "ones", "full", "array", "asarray", "ascontiguousarray", "zeros_like",
                      "empty_like", "full_like", "concatenate", "stack", "where", "copy", "exp", "cumsum")


def _constructor_calls(enabled: bool, monkeypatch) -> list[str]:
    """The NumPy constructors a steady run of FRAMES calls (after FRAMES once: scratch sized), soft renderer."""
    app, cloth, _, _, plugin = scene("soft", enabled=enabled)
    for real_dt in FRAMES:
        app.update(real_dt)
    calls: list[str] = []
    for name in NUMPY_CONSTRUCTORS:
        original = getattr(np, name)
        monkeypatch.setattr(np, name, lambda *a, _name=name, _f=original, **k: calls.append(_name) or _f(*a, **k))
    for real_dt in FRAMES:
        app.update(real_dt)
    monkeypatch.undo()
    assert bool(app.resource(StepBlend)._cloths) == enabled            # the blend was in use, or not
    return calls


def test_a_blended_frame_allocates_no_numpy_array_more(monkeypatch):
    """Blend on, a frame calls no more NumPy constructors than blend off (the camera's matrices are the same
    either way): the blend is written into kept arrays and the step's copy is in place."""
    assert sorted(_constructor_calls(True, monkeypatch)) == sorted(_constructor_calls(False, monkeypatch))
