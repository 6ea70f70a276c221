"""Window loop: pygame events → InputState, ``app.update(real_dt)`` on a real clock, draw, flip; camera controls.

Opt-in: a game adds ``WindowPlugin()`` next to a renderer plugin (systems/render/gl.py). It inserts an
``loom.launch.runner.WindowRunner`` whose ``open(app, args)`` the shared command line calls when ``--headless``
is not given, so every game gets the same loop::

    each frame:  pygame events → InputState (mouse, buttons, keys this frame, wheel)
                 app.update(real_dt)   INPUT systems (orbit_camera, view_keys, the game's) → fixed steps → RENDER
                 pygame.display.flip() at most ``fps`` times a second

Controls (Stage.INPUT systems here, acting on the first ``Camera`` entity and on ``RenderSettings``):

    right-drag   orbit (yaw, pitch)            V   next view: shaded, normals, wireframe, strain, particles
    middle-drag  pan the target                H   HUD on/off
    wheel        zoom (distance × 0.9 a notch)  C   colliders on/off
    Esc, close   quit                          left button: free for the game (grab, blow …)

Command line: ``--frames N`` closes the window after N rendered frames (without it the window stays
until closed); ``--screenshot out.png`` saves the last frame; ``--record out.gif`` records the frames shown,
one every ``--record-fps`` period of simulated time (grabbed before the flip, like the screenshot; a slow
frame that owes several is held for as many periods, so the recording keeps the game's time). With no display
(no DISPLAY/WAYLAND_DISPLAY, SDL_VIDEODRIVER=dummy) or ``headless=True`` the run falls back to headless
(and ``--screenshot`` renders offscreen with EGL), saying so on stderr.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from typing import Any

from loom.components import Camera
from loom.components.render import InputState, RenderSettings
from loom.engine import App, Stage
from loom.launch import WindowRunner, show_compile_progress
from loom.launch.runner import frame_capture, open_recorder, run_headless
from loom.systems.render.between import StepBlend
from loom.engine.window import (FrameCapture, LoadingView, Window, WindowSettings, close_window, display_available,
                                open_window)

import pygame  # noqa: E402  (engine.window hid pygame's banner first)

ORBIT_RAD_PER_PX = 0.008
"""Camera turn per pixel of right-drag [rad/px]."""
ZOOM_PER_NOTCH = 0.9
"""Camera distance factor per wheel notch toward the scene [-]."""

__all__ = ["InputState", "WindowPlugin", "orbit_camera", "run_window", "view_keys"]


class WindowPlugin:
    """The interactive window: WindowRunner for the command line, InputState, camera orbit and view keys.

    title names the window; fps caps the frame rate [1/s] (the simulation keeps real time either way); interpolate
    (default True) draws between the last two steps in the window (``between.StepBlend``: a 60 Hz simulation moves
    smoothly on a faster display); False draws each step's state as it is."""

    def __init__(self, title: str | None = None, fps: float = 60.0, interpolate: bool = True) -> None:
        if not isinstance(interpolate, bool):
            raise TypeError(f"WindowPlugin interpolate = {interpolate!r}: expected True or False")
        self.title = title
        self.fps = float(fps)
        self.interpolate = interpolate

    def build(self, app: App) -> None:
        app.insert_resource(InputState(), replace=False)
        app.insert_resource(WindowRunner(open=lambda a, args, build=None: run_window(
            a, args, title=self.title, fps=self.fps, build=build, interpolate=self.interpolate)))
        app.add_system(orbit_camera, Stage.INPUT)
        app.add_system(view_keys, Stage.INPUT)


# --- INPUT systems ---------------------------------------------------------------------------------------------------
def orbit_camera(app: App, dt: float) -> None:
    """Orbit (right-drag), pan (middle-drag) and zoom (wheel) the first Camera entity from InputState."""
    state = app.resources.get(InputState)
    cameras = app.query(Camera)
    if state is None or not cameras or state.size[1] == 0:
        return
    camera = cameras[0][1]
    dx, dy = state.mouse_delta
    if 3 in state.buttons and (dx or dy):
        camera.yaw = (camera.yaw - dx * ORBIT_RAD_PER_PX) % (2.0 * math.pi)
        camera.pitch = min(max(camera.pitch + dy * ORBIT_RAD_PER_PX, -1.55), 1.55)
    if 2 in state.buttons and (dx or dy):
        view = camera.view()
        metres_per_px = 2.0 * camera.distance * math.tan(camera.fov_y / 2) / state.size[1]
        if camera.orthographic:
            metres_per_px = camera.ortho_height / state.size[1]
        camera.target = camera.target + (-dx * view[0, :3] + dy * view[1, :3]) * metres_per_px
    if state.wheel:
        distance = camera.distance * ZOOM_PER_NOTCH ** state.wheel
        camera.distance = min(max(distance, 2.0 * camera.near), 0.5 * camera.far)
        camera.ortho_height = min(max(camera.ortho_height * ZOOM_PER_NOTCH ** state.wheel, 0.01), camera.far)


def view_keys(app: App, dt: float) -> None:
    """V cycles RenderSettings.view, H toggles the HUD, C the colliders."""
    state = app.resources.get(InputState)
    settings = app.resources.get(RenderSettings)
    if state is None or settings is None or not state.keys_pressed:
        return
    if pygame.K_v in state.keys_pressed:
        settings.next_view()
    if pygame.K_h in state.keys_pressed:
        settings.hud = not settings.hud
    if pygame.K_c in state.keys_pressed:
        settings.show_colliders = not settings.show_colliders


# --- the loop -------------------------------------------------------------------------------------------------
def run_window(app: App, args: argparse.Namespace, *, title: str | None = None, fps: float = 60.0,
               build: Callable[[App], Any] | None = None, interpolate: bool = True) -> dict[str, Any]:
    """Run the interactive loop until Esc, the close button or ``--frames``; return the App's report.

    ``interpolate`` turns on the renderer's drawing between steps (``between.StepBlend``) while the window is open,
    and restores the setting the App had when it closes (a headless run draws exact step states).

    ``build(app)``, when given, is called once the window is open, while a loading view is drawn in it; on a
    first launch the view says how many kernels numba has compiled so far and which one now (until the first
    frame, whose compiles it shows too).

    Falls back to a headless run (``run_headless``: an offscreen ``--screenshot`` and ``--record``) when no
    display is available. Raises RuntimeError when a display exists but SDL cannot open an OpenGL window on it."""
    settings = app.resources.get(WindowSettings) or WindowSettings()
    if title is not None:
        settings.title = title
    screenshot = getattr(args, "screenshot", None)
    capture = frame_capture(app, args)                    # --screenshot/--record with no renderer: one line
    ok, why = display_available()
    if settings.headless is True or not ok:
        reason = "the renderer is headless" if settings.headless is True else why
        print(f"loom: no window ({reason}); running headless", file=sys.stderr)
        return run_headless(app, args, build)
    if app.resources.get(FrameCapture) is None:
        print("loom: no renderer plugin added; the window will stay blank "
              "(add loom.systems.render.GLRenderPlugin())", file=sys.stderr)
    window = open_window(settings)
    app.insert_resource(window)
    blend = app.resources.get(StepBlend)                 # the renderer plugin's; None without one
    blended = None if blend is None else blend.enabled
    if blend is not None and interpolate:
        blend.enabled = True
    progress = show_compile_progress()                   # a first launch compiles in the first frames: say so
    compiling = [False]

    loading = app.resources.get(LoadingView)

    def caption(count: int, seconds: float, name: str) -> None:
        done = progress.progress_text()
        pygame.display.set_caption(f"{settings.title} — compiling kernels (first launch): {done}, {seconds:.0f} s")
        if loading is not None:
            loading.draw(app, ["Loom: preparing the cloth kernels (first launch only; they are cached)",
                               f"{done} in {seconds:.0f} s: now {name}"], progress.fraction())
            pygame.display.flip()
        pygame.event.pump()                               # keep the window responsive meanwhile
        compiling[0] = True

    progress.hooks.append(caption)
    state = app.resource(InputState) if InputState in app.resources else app.insert_resource(InputState())
    state.size = (window.width, window.height)
    limit = args.frames
    clock = pygame.time.Clock()
    frames = 0
    last = time.perf_counter() - 1.0 / fps
    recorder = None
    first_shown = None
    try:
        if loading is not None:                            # drawn at once: the window is never blank
            loading.draw(app, [f"{settings.title}: loading"], None)
            pygame.display.flip()
        if build is not None:                              # a failed build still closes the window below
            build(app)
            last = time.perf_counter() - 1.0 / fps         # loading is not game time: the first frame is one step
        recorder = open_recorder(args, app.clock.dt)
        while limit is None or frames < limit:
            state.begin_frame()
            if not _poll_events(state):
                break
            now = time.perf_counter()
            app.update(now - last)
            last = now
            if compiling[0]:
                pygame.display.set_caption(settings.title)    # compiled: the title is the game's again
                compiling[0] = False
            frames += 1
            state.frame = frames
            if recorder is not None:                       # before the flip, like the screenshot
                recorder.record(app.clock.time, lambda: capture.grab(app))
            if screenshot and limit is not None and frames == limit:
                capture.save(app, screenshot)              # before the flip: the back buffer is still ours
                screenshot = None
            pygame.display.flip()
            if frames == 1:
                first_shown = time.time()                  # the startup benchmark's launch-to-first-frame
            clock.tick(fps)
        if screenshot:                                     # closed by the player: save what they saw last
            capture.save(app, screenshot)
        if recorder is not None and recorder.frames == 0:  # closed within one period: what they saw last
            recorder.add(capture.grab(app))
    finally:
        if recorder is not None:
            recorder.close()                               # while the GL context still exists
            print(recorder.summary(), file=sys.stderr)
        progress.hooks.remove(caption)
        app.emit("window_closing")                        # renderers free their GL objects while it exists
        del app.resources[Window]
        if blend is not None:
            blend.enabled = blended
        state.size = (0, 0)
        close_window()
    report = app.report()
    report.update(rendered_frames=frames, video_driver=window.driver, first_frame_shown_unix=first_shown)
    return report


def _poll_events(state: InputState) -> bool:
    """Move this frame's pygame events into ``state``; return False when the player asked to quit."""
    running = True
    dx = dy = 0.0
    for event in pygame.event.get():
        kind = event.type
        if kind == pygame.QUIT:
            running = False
        elif kind == pygame.KEYDOWN:
            if event.key == pygame.K_ESCAPE:
                running = False
            state.keys.add(event.key)
            state.keys_pressed.add(event.key)
        elif kind == pygame.KEYUP:
            state.keys.discard(event.key)
        elif kind == pygame.MOUSEMOTION:
            state.mouse = (float(event.pos[0]), float(event.pos[1]))
            dx += event.rel[0]
            dy += event.rel[1]
        elif kind == pygame.MOUSEBUTTONDOWN and event.button in (1, 2, 3):
            state.buttons.add(event.button)
            state.buttons_pressed.add(event.button)
            state.mouse = (float(event.pos[0]), float(event.pos[1]))
        elif kind == pygame.MOUSEBUTTONUP and event.button in (1, 2, 3):
            state.buttons.discard(event.button)
            state.buttons_released.add(event.button)
        elif kind == pygame.MOUSEWHEEL:
            state.wheel += float(getattr(event, "precise_y", event.y))
        elif kind == pygame.WINDOWFOCUSLOST:
            state.buttons.clear()
            state.keys.clear()
    state.mouse_delta = (dx, dy)
    return running
