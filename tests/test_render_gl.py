"""The moderngl renderer: pixels where the simulation says the cloth is, in every view, offscreen (EGL) and in a
real X window (xvfb). Each test makes its own GL context and releases it."""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from loom.components import (Box, Camera, Capsule, Cloth, Collider, ColliderStyle, Cylinder, Pin, Plane, Prism, Prop,
                             Sphere, Transform)
from loom.components.render import ClothStyle, InputState, RenderSettings
from loom.engine import App, mesh
from loom.launch.runner import run_app
from loom.engine.window import FrameCapture
from loom.systems import DefaultPlugins
from loom.systems.render.gl import (GLRenderer, GLRenderPlugin, hud_rate, read_pixels, release_renderer, render_frame,
                                    tessellate)
from loom.systems.render.surface import vertex_normals
from loom.systems.render.window import orbit_camera
from shape_examples import every_shape

ROOT = Path(__file__).resolve().parent.parent
W, H = 320, 240
FRONT = (0.85, 0.2, 0.15)           # red family
BACK = (0.15, 0.3, 0.9)             # blue family


@pytest.fixture
def gl_app():
    """Return ``make(settings=None)``: an App with DefaultPlugins and an offscreen GLRenderPlugin (no HUD, no
    colliders, no sky unless asked: pixels are compared with the flat background); every renderer is released and
    every App closed at teardown."""
    apps: list[App] = []

    def make(settings: RenderSettings | None = None) -> App:
        app = App(dt=1 / 60, substeps=8)
        app.add_plugin(DefaultPlugins)
        app.insert_resource(settings or RenderSettings(hud=False, show_colliders=False, sky=False))
        app.add_plugin(GLRenderPlugin(W, H, headless=True))
        apps.append(app)
        return app

    yield make
    for app in apps:
        release_renderer(app)
        app.close()


def hanging_sheet(app: App, camera: Camera, seconds: float = 1.0) -> Cloth:
    """A 16 × 16, 1 m cotton sheet pinned by its far corners, simulated for ``seconds`` [s]."""
    sheet = mesh.grid(16, 16, 1.0, 1.0, center=(0.0, 1.0, 0.0), plane="xz")
    cloth = Cloth.from_mesh(sheet, "cotton")
    app.spawn(cloth, Pin.corners(sheet, "top"), ClothStyle(front_color=FRONT, back_color=BACK))
    app.spawn(camera)
    app.step(round(seconds * 60))
    return cloth


def sample(pixels: np.ndarray, camera: Camera, points: np.ndarray) -> np.ndarray:
    """RGB (k, 3) int of the pixels that world ``points`` (k, 3) project to."""
    p = camera.project(points, W, H)
    cols = np.clip(np.floor(p[:, 0]).astype(int), 0, W - 1)
    rows = np.clip(np.floor(p[:, 1]).astype(int), 0, H - 1)
    return pixels[rows, cols].astype(int)


def facing(cloth: Cloth, camera: Camera, sign: float) -> np.ndarray:
    """Indices of interior particles whose normal faces the camera (sign +1) or away from it (−1), not grazing."""
    n = vertex_normals(cloth.x, cloth.triangles)
    to_eye = camera.eye - cloth.x
    to_eye /= np.linalg.norm(to_eye, axis=1)[:, None]
    side = int(round(math.sqrt(cloth.particle_count)))
    row, col = np.divmod(np.arange(cloth.particle_count), side)
    interior = (row > 1) & (row < side - 2) & (col > 1) & (col < side - 2)
    return np.flatnonzero(interior & (sign * np.einsum("ij,ij->i", n, to_eye) > 0.3))


def background(app: App) -> np.ndarray:
    return np.round(app.resource(RenderSettings).background * 255).astype(int)


# --- offscreen (EGL) -------------------------------------------------------------------------------------------------
def test_frame_of_a_hanging_cloth_is_not_blank(gl_app):
    app = gl_app(RenderSettings(sky=False))                            # HUD and colliders on, a flat background
    hanging_sheet(app, Camera(target=(0.0, 0.5, -0.3), distance=2.2))
    pixels = read_pixels(app)
    assert pixels.shape == (H, W, 3) and pixels.dtype == np.uint8
    differs = (np.abs(pixels.astype(int) - background(app)).max(axis=2) > 10).mean()
    assert differs > 0.05, f"only {differs:.1%} of the pixels differ from the background"


def test_cloth_pixels_sit_where_the_simulation_says_in_the_front_colour(gl_app):
    app = gl_app()
    camera = Camera(target=(0.0, 0.5, -0.3), distance=2.2, pitch=0.1)
    cloth = hanging_sheet(app, camera)
    front = facing(cloth, camera, +1.0)
    assert front.size > 50, f"only {front.size} interior particles face the camera"
    rgb = sample(read_pixels(app), camera, cloth.x[front])
    red = (rgb[:, 0] > 2 * rgb[:, 1:].max(axis=1)) & (rgb[:, 0] > 40)
    assert red.mean() > 0.97, f"{red.mean():.1%} of {front.size} particles show the front colour; e.g. {rgb[~red][:3]}"


def test_back_faces_use_the_back_colour(gl_app):
    app = gl_app()
    camera = Camera(target=(0.0, 0.5, -0.3), distance=2.2, yaw=math.pi, pitch=0.1)   # from behind
    cloth = hanging_sheet(app, camera)
    back = facing(cloth, camera, -1.0)
    assert back.size > 50, f"only {back.size} interior particles show their back to the camera"
    rgb = sample(read_pixels(app), camera, cloth.x[back])
    blue = (rgb[:, 2] > 2 * rgb[:, :2].max(axis=1)) & (rgb[:, 2] > 40)
    assert blue.mean() > 0.97, f"{blue.mean():.1%} of {back.size} particles show the back colour; e.g. {rgb[~blue][:3]}"


@pytest.mark.parametrize("plane, camera, expected", [
    ("xy", Camera(target=(0.0, 0.5, 0.0), distance=2.0, pitch=0.0), (127.5, 127.5, 255.0)),           # +z, front
    ("xy", Camera(target=(0.0, 0.5, 0.0), distance=2.0, yaw=math.pi, pitch=0.0), (127.5, 127.5, 255.0)),  # behind
    ("xz", Camera(target=(0.0, 0.5, 0.0), distance=2.0, pitch=1.2), (127.5, 255.0, 127.5)),           # +y, above
])
def test_normals_view_encodes_the_normal_as_rgb(gl_app, plane, camera, expected):
    # Fisher "Rendering": RGB = n · 0.5 + 0.5 of the front normal, seen from either side.
    app = gl_app(RenderSettings(view="normals", hud=False))
    sheet = mesh.grid(12, 12, 1.0, 1.0, center=(0.0, 0.5, 0.0), plane=plane)
    cloth = Cloth.from_mesh(sheet, "cotton")
    app.spawn(cloth, ClothStyle(subdivision=2))
    app.spawn(camera)
    interior = np.flatnonzero(np.abs(sheet.positions - (0.0, 0.5, 0.0)).max(axis=1) < 0.4)
    rgb = sample(read_pixels(app), camera, cloth.x[interior])
    error = np.abs(rgb - np.array(expected)).max()
    assert error <= 1.5, f"normals view off {expected} by up to {error} (8-bit rounding allows 0.5)"


def test_strain_view_is_red_when_stretched_and_blue_when_compressed(gl_app):
    app = gl_app(RenderSettings(view="strain", hud=False))
    camera = Camera(target=(0.0, 0.5, 0.0), distance=3.0, pitch=0.0)
    app.spawn(camera)
    for offset, factor in ((-0.7, 1.1), (0.7, 0.9)):                    # 10 % stretch left, 10 % compression right
        sheet = mesh.grid(8, 8, 0.8, 0.8, center=(0.0, 0.0, 0.0), plane="xy")
        cloth = Cloth.from_mesh(sheet, "cotton")
        cloth.x[:] = cloth.x * factor + (offset, 0.5, 0.0)
        app.spawn(cloth)
    left, right = sample(read_pixels(app), camera, np.array([[-0.7, 0.5, 0.0], [0.7, 0.5, 0.0]]))
    assert left[0] > 2 * max(left[1], left[2]), f"stretched cloth shows {left}, want red"
    assert right[2] > 2 * max(right[0], right[1]), f"compressed cloth shows {right}, want blue"


def test_particles_and_wireframe_views_draw_the_cloth(gl_app):
    app = gl_app()
    camera = Camera(target=(0.0, 0.5, 0.0), distance=2.0, pitch=0.0)
    app.spawn(Cloth.from_mesh(mesh.grid(10, 10, 1.0, 1.0, center=(0.0, 0.5, 0.0)), "cotton"), camera)
    settings = app.resource(RenderSettings)
    drawn = {}
    for view in ("shaded", "wireframe", "particles"):
        settings.view = view
        render_frame(app)
        drawn[view] = (np.abs(read_pixels(app).astype(int) - background(app)).max(axis=2) > 10).mean()
    assert drawn["shaded"] > drawn["wireframe"] > 0.005 and drawn["shaded"] > drawn["particles"] > 0.002, drawn


def test_vertex_buffers_are_updated_in_place_and_subdivision_quadruples_triangles(gl_app):
    app = gl_app()
    sheet = mesh.grid(8, 8, 1.0, 1.0, center=(0.0, 0.5, 0.0))
    cloth = Cloth.from_mesh(sheet, "cotton")
    entity = app.spawn(cloth, ClothStyle(subdivision=2))
    render_frame(app)
    gpu = app.resource(GLRenderer)._cloths[entity]
    vbo, vao = gpu.vbo, gpu.vao
    assert gpu.ibo.size == 16 * sheet.triangle_count * 3 * 4, "2 levels: 16× the triangles, uint32 indices"
    cloth.x[:, 2] += 0.1
    render_frame(app)
    gpu = app.resource(GLRenderer)._cloths[entity]
    assert gpu.vbo is vbo and gpu.vao is vao, "a moving cloth must reuse its GL buffers"
    assert np.allclose(gpu.packed[:, 2], 0.1, atol=1e-6), "positions written into the preallocated array"


def test_every_collider_shape_is_drawn_where_its_transform_puts_it(gl_app):
    app = gl_app(RenderSettings(hud=False, sky=False))
    camera = Camera(target=(0.0, 0.4, 0.0), distance=3.2, pitch=0.35)
    app.spawn(camera)
    app.spawn(Collider(Plane()), Transform())
    centres = [(-1.0, 0.4, 0.0), (-0.5, 0.4, 0.0), (0.0, 0.4, 0.0), (0.5, 0.4, 0.0), (1.0, 0.4, 0.0), (0.0, 0.4, 0.8),
               (-0.75, 0.95, 0.0), (0.75, 0.95, 0.0)]
    shapes = [s for s in every_shape(0.5) if not isinstance(s, Plane)]      # every shape of collider.SHAPES but the
    assert len(shapes) <= len(centres)                                      # floor's, about 0.15 m across
    for centre, shape in zip(centres, shapes):
        app.spawn(Collider(shape), Transform(position=centre))
    rgb = sample(read_pixels(app), camera, np.array(centres))
    grey = (rgb.max(axis=1) - rgb.min(axis=1) < 12) & (np.abs(rgb - background(app)).max(axis=1) > 20)
    missing = [type(s).__name__ for s, g in zip(shapes, grey) if not g]
    assert grey.all(), f"collider centres show {rgb.tolist()}; not grey: {missing}"


@pytest.mark.parametrize("shape", [*every_shape(), Sphere(0.3), Capsule(0.2, 0.3), Cylinder(0.2, 0.4),
                                   Box((0.1, 0.2, 0.3)), Prism([[0.0, 0.0], [1.0, 0.0], [0.5, 0.8]], 0.2),
                                   Plane((0.0, 0.0, 1.0))])
def test_tessellated_colliders_face_outward(shape):
    rows = tessellate(shape).reshape(-1, 3, 8)
    p, n = rows[:, :, :3], rows[:, :, 3:6]
    face = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    assert (np.einsum("ij,ij->i", face, n.sum(axis=1)) > 0).all(), "a triangle winds clockwise about its normal"
    if isinstance(shape, Sphere):
        assert np.allclose(np.linalg.norm(p, axis=2), 0.3)


# --- command line: --screenshot --------------------------------------------------------------------------------------
def test_headless_screenshot_without_a_gl_renderer_fails_clearly(make_app, tmp_path):
    app = make_app()
    with pytest.raises(SystemExit, match="GLRenderPlugin"):
        run_app(app, ["--headless", "--frames", "1", "--screenshot", str(tmp_path / "out.png")])


def test_headless_screenshot_renders_one_offscreen_frame(gl_app, tmp_path, capsys):
    import pygame
    app = gl_app(RenderSettings(sky=False))
    hanging_sheet(app, Camera(target=(0.0, 0.5, -0.3), distance=2.2), seconds=0.0)
    out = tmp_path / "shot.png"
    assert FrameCapture in app.resources
    report = run_app(app, ["--headless", "--frames", "20", "--screenshot", str(out), "--report", "json"])
    assert report["frames"] == 20 and out.exists()
    image = pygame.surfarray.array3d(pygame.image.load(str(out))).transpose(1, 0, 2)
    assert image.shape == (H, W, 3)
    assert (np.abs(image.astype(int) - background(app)).max(axis=2) > 10).mean() > 0.05


def test_a_bad_screenshot_path_stops_the_run_before_its_first_step(make_app, tmp_path):
    """A missing folder, a path that is a folder: one line naming the option and the path, nothing stepped."""
    app = make_app()
    for path, why in ((tmp_path / "no" / "out.png", f"no such folder {tmp_path / 'no'}"),
                      (tmp_path, "is a folder, expected a file name")):
        with pytest.raises(SystemExit) as stop:
            run_app(app, ["--headless", "--frames", "5", "--screenshot", str(path)])
        assert str(stop.value) == f"loom: --screenshot {path}: {why}"
        assert app.clock.step_index == 0


def test_headless_screenshot_hud_shows_the_measured_step_rate_not_zero(gl_app, tmp_path):
    """The HUD of a headless screenshot reads the steps per second the run measured (issue 18: it read 0.0 FPS)."""
    app = gl_app(RenderSettings(hud=True))
    hanging_sheet(app, Camera(target=(0.0, 0.5, -0.3), distance=2.2), seconds=0.0)
    app.step(20)
    rate = hud_rate(app.frame_stats)
    assert rate.endswith("steps/s headless") and float(rate.split()[0]) > 0.0
    assert app.report()["recent_sim_ms_per_frame"] > 0.0


# --- window: camera controls, the loop, and a real X window under xvfb ------------------------------------------
def test_right_drag_orbits_and_wheel_zooms_the_camera(make_app):
    app = make_app()
    camera = Camera(distance=3.0, yaw=0.0, pitch=0.2)
    app.spawn(camera)
    state = app.insert_resource(InputState(size=(W, H)))
    state.buttons.add(3)
    state.mouse_delta = (10.0, -5.0)
    state.wheel = 1.0
    orbit_camera(app, 1 / 60)
    assert camera.yaw == pytest.approx(2 * math.pi - 0.08) and camera.pitch == pytest.approx(0.16)
    assert camera.distance == pytest.approx(2.7)


_WINDOW_SCRIPT = """
import json, sys
import pygame
from loom.components import Camera
from loom.components.render import InputState, RenderSettings
from loom.engine import App, Stage
from loom.launch.runner import run_app
from loom.games.hanging_sheet import build_scene
from loom.systems import DefaultPlugins
from loom.systems.render.gl import GLRenderPlugin
from loom.systems.render.window import WindowPlugin

app = App(substeps=4)
app.add_plugin(DefaultPlugins)
app.add_plugin(GLRenderPlugin(320, 240))
app.add_plugin(WindowPlugin())
build_scene(app, 8)
camera = app.query(Camera)[0][1]
yaw = camera.yaw

def player(app, dt):          # frame 1: right-drag 20 px and press V; frame 3: Esc
    frame = app.resource(InputState).frame
    post = lambda kind, **kw: pygame.event.post(pygame.event.Event(kind, **kw))
    if frame == 1:
        post(pygame.MOUSEBUTTONDOWN, button=3, pos=(10, 10))
        post(pygame.MOUSEMOTION, pos=(30, 10), rel=(20, 0), buttons=(0, 0, 1))
        post(pygame.KEYDOWN, key=pygame.K_v, mod=0, unicode="v", scancode=0)
    if frame == 3:
        post(pygame.KEYDOWN, key=pygame.K_ESCAPE, mod=0, unicode="", scancode=0)

app.add_system(player, Stage.INPUT)
report = run_app(app, ["--frames", "100", "--screenshot", sys.argv[1], "--report", "json"])
print(json.dumps({"yaw_change": camera.yaw - yaw, "view": app.resource(RenderSettings).view}))
"""


_LOADING_SCRIPT = """
import json, sys
import numba
import numpy as np
from loom.engine import App
from loom.launch.runner import run_app
from loom.engine.window import LoadingView
from loom.games.hanging_sheet import build_scene
from loom.systems import DefaultPlugins
from loom.systems.render.gl import GLRenderer, GLRenderPlugin
from loom.systems.render.window import WindowPlugin

app = App(substeps=4)
app.add_plugin(DefaultPlugins)
app.add_plugin(GLRenderPlugin(320, 240))
app.add_plugin(WindowPlugin(title="loading test"))
seen = []
shown = app.resource(LoadingView).draw

def white(app):
    return int((app.resource(GLRenderer).read_pixels().min(axis=2) > 200).sum())

def watch(app, lines, fraction=None):        # the real view, and what it said and drew
    bar = None
    if fraction is not None:                 # the bar's fill: the same view drawn empty, then full
        shown(app, lines, 0.0)
        empty = white(app)
        shown(app, lines, 1.0)
        bar = white(app) - empty
    shown(app, lines, fraction)
    seen.append({"lines": lines, "built": bool(app.query(__import__("loom").Cloth)), "fraction": fraction,
                 "text_pixels": white(app), "bar_fill_pixels": bar})

app.resource(LoadingView).draw = watch

@numba.njit(cache=False)
def fresh_kernel(x):                         # compiles inside build: a first launch's compile, in small
    return x * 3

def build(app):
    fresh_kernel(2)
    build_scene(app, 8)

run_app(app, ["--frames", "3", "--report", "json"], build=build, compiles=2)
print(json.dumps(seen))
"""


def test_the_window_shows_a_loading_view_while_the_scene_builds_and_kernels_compile():
    """run_app(build=...) opens the window first: a loading view is drawn before the scene exists, and again with
    the compile progress (the kernel's name) while numba compiles inside build. With ``compiles=2`` expected, the
    first compile reads "1 of about 2" and fills half the bar: the bar drawn full whitens at least 1000 more
    pixels than drawn empty (it is 280 px wide at 320 px, 10 px high inside its outline)."""
    env = dict(os.environ, SDL_VIDEODRIVER="offscreen", SDL_AUDIODRIVER="dummy")
    run = subprocess.run([sys.executable, "-c", _LOADING_SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert seen and not seen[0]["built"] and seen[0]["lines"] == ["loading test: loading"], seen[:1]
    assert any("fresh_kernel" in " ".join(view["lines"]) for view in seen), [v["lines"] for v in seen]
    assert all(view["text_pixels"] > 100 for view in seen), "the loading view's text was not drawn"
    compiling = [view for view in seen if view["fraction"] is not None]
    assert compiling and compiling[0]["fraction"] == 0.5, seen
    assert "1 of about 2 compiled (50 %)" in compiling[0]["lines"][1], compiling[0]
    assert compiling[0]["bar_fill_pixels"] > 1000, compiling[0]


def test_window_loop_turns_events_into_input_orbits_and_quits_on_escape(tmp_path):
    # SDL's offscreen driver gives an OpenGL window with no X server: the whole loop, events included.
    out = tmp_path / "quit.png"
    env = dict(os.environ, SDL_VIDEODRIVER="offscreen", SDL_AUDIODRIVER="dummy")
    run = subprocess.run([sys.executable, "-c", _WINDOW_SCRIPT, str(out)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.strip().splitlines()
    report, after = json.loads(lines[-2]), json.loads(lines[-1])
    assert report["video_driver"] == "offscreen" and report["rendered_frames"] == 4, report   # Esc on frame 4
    assert after["yaw_change"] == pytest.approx(-20 * 0.008) and after["view"] == "normals", after
    assert out.exists(), "--screenshot saves the last frame when the player quits"


def test_real_window_under_xvfb_saves_a_screenshot_that_is_not_blank(tmp_path):
    import pygame
    xvfb = shutil.which("xvfb-run")
    assert xvfb, "xvfb-run is missing: run `bash scripts/install.sh` (apt-get install -y xvfb xauth)"
    out = tmp_path / "window.png"
    env = {k: v for k, v in os.environ.items() if k not in ("SDL_VIDEODRIVER", "DISPLAY", "WAYLAND_DISPLAY")}
    env["SDL_AUDIODRIVER"] = "dummy"
    run = subprocess.run([xvfb, "-a", sys.executable, "-m", "loom.games.hanging_sheet", "--n", "16", "--frames", "30",
                          "--screenshot", str(out), "--report", "json"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["video_driver"] == "x11" and report["rendered_frames"] == 30, report
    image = pygame.surfarray.array3d(pygame.image.load(str(out))).transpose(1, 0, 2)
    assert image.shape == (640, 960, 3)
    edge = np.median(image[:, :48].astype(int), axis=1, keepdims=True)   # sky and floor at the left edge, by row
    differs = (np.abs(image.astype(int) - edge).max(axis=2) > 30).mean()
    assert differs > 0.05, f"only {differs:.1%} of the window's pixels differ from the sky and floor at its edge"


def test_missing_gl_says_what_to_install_and_dummy_video_has_no_window(monkeypatch):
    import moderngl

    from loom.engine.window import create_gl_context, display_available

    def no_egl(*args, **kwargs):
        raise Exception("libEGL.so: cannot open shared object file")
    monkeypatch.setattr(moderngl, "create_context", no_egl)
    with pytest.raises(RuntimeError, match="libegl1 libgl1 libegl-mesa0 libgl1-mesa-dri"):
        create_gl_context(window=False)
    with pytest.raises(RuntimeError, match="xvfb-run -a"):
        create_gl_context(window=True)
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    ok, why = display_available()
    assert not ok and "SDL_VIDEODRIVER=offscreen" in why


# --- validation -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("make, message", [
    (lambda: ClothStyle(subdivision=3), "ClothStyle.subdivision = 3"),
    (lambda: ClothStyle(front_color=(1.2, 0.0, 0.0)), r"ClothStyle.front_color\[0\] = 1.2"),
    (lambda: ClothStyle(texture="plaid"), "ClothStyle.texture = 'plaid'"),
    (lambda: ClothStyle(texture=np.zeros((4, 4), np.uint8)), r"ClothStyle.texture: shape \(4, 4\)"),
    (lambda: ClothStyle(checker_scale=0.0), "ClothStyle.checker_scale = 0.0"),
    (lambda: RenderSettings(view="xray"), "RenderSettings.view = 'xray'"),
    (lambda: RenderSettings(light_direction=(0, 0, 0)), r"RenderSettings.light_direction = \[0.0, 0.0, 0.0\]"),
    (lambda: RenderSettings(background=(0.1, float("nan"), 0.1)), r"RenderSettings.background\[1\] = nan"),
    (lambda: RenderSettings(samples=32), "RenderSettings.samples = 32"),
    (lambda: RenderSettings(shadow_size=100), "RenderSettings.shadow_size = 100"),
    (lambda: RenderSettings(sky="yes"), "RenderSettings.sky = 'yes'"),
    (lambda: RenderSettings(sky_color=(0.0, 2.0, 0.0)), r"RenderSettings.sky_color\[1\] = 2.0"),
    (lambda: RenderSettings(haze_distance=0.0), "RenderSettings.haze_distance = 0.0"),
    (lambda: ClothStyle(weave_scale=-1.0), "ClothStyle.weave_scale = -1.0"),
    (lambda: Prop("pole"), "Prop.shape = 'pole': expected a shape"),
    (lambda: Prop(Sphere(0.1), color=(0.5, 0.5)), "Prop.color"),
    (lambda: ColliderStyle(visible=1), "ColliderStyle.visible = 1"),
    (lambda: ColliderStyle(tiles=-0.5), "ColliderStyle.tiles = -0.5"),
])
def test_render_components_reject_bad_values_naming_the_field(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_render_settings_refuse_a_bad_assignment_and_keep_the_old_value():
    settings = RenderSettings()
    with pytest.raises(ValueError, match="RenderSettings.samples = -1"):
        settings.samples = -1
    with pytest.raises(ValueError, match="RenderSettings.shadows = 'on'"):
        settings.shadows = "on"
    assert settings.samples == 4 and settings.shadows is True


# --- the look: sky, shadows, multisampling, props, collider styles, the weave ---------------------------------------
def test_the_sky_is_blue_overhead_and_pale_at_the_horizon(gl_app):
    app = gl_app(RenderSettings(hud=False, show_colliders=False))
    app.spawn(Camera(target=(0.0, 1.0, 0.0), distance=3.0, pitch=-0.35))        # looking up a little
    pixels = read_pixels(app).astype(int)
    top, bottom = pixels[2, W // 2], pixels[-3, W // 2]
    settings = app.resource(RenderSettings)
    assert top[2] > top[0] + 40, f"the sky overhead is {top}, want blue (sky_color {settings.sky_color})"
    assert bottom.min() > 150 and abs(bottom[2] - bottom[0]) < 40, f"the horizon is {bottom}, want pale"


def shadow_scene(gl_app, shadows: bool) -> tuple[np.ndarray, Camera]:
    """A floor seen from above with a 0.3 m ball held 0.5 m over it, lit from 45° to the right: the ball's shadow
    falls 0.5 m to the left of it, where the camera sees the floor."""
    app = gl_app(RenderSettings(hud=False, sky=False, shadows=shadows, light_direction=(1.0, 1.0, 0.0), ambient=0.3))
    camera = Camera(target=(0.0, 0.0, 0.0), distance=3.0, pitch=1.45)
    app.spawn(camera)
    app.spawn(Collider(Plane()), Transform())
    app.spawn(Prop(Sphere(0.3), color=(0.9, 0.9, 0.9)), Transform(position=(0.6, 0.5, 0.0)))
    return read_pixels(app).astype(int), camera


def test_a_prop_casts_a_shadow_on_the_floor_below_it(gl_app):
    """The floor in the ball's shadow is darker than the floor beside it: ambient light only (0.3 of full)
    against 0.3 + 0.7 · cos 45° = 0.79, so < 0.5× with the shadow map, and equal (±10 %) without."""
    lit, camera = shadow_scene(gl_app, shadows=True)
    unlit, _ = shadow_scene(gl_app, shadows=False)
    under, beside = np.array([[0.1, 0.0, 0.05], [-0.9, 0.0, 0.05]])          # floor points, same tile colour
    for pixels, expect in ((lit, "shadowed"), (unlit, "lit")):
        a, b = sample(pixels, camera, np.array([under, beside])).sum(axis=1)
        if expect == "shadowed":
            assert a < 0.5 * b, f"floor under the ball {a}, beside it {b}: no shadow"
        else:
            assert abs(a - b) < 0.1 * b, f"without shadows the floor under the ball {a} differs from beside {b}"


def test_props_are_drawn_in_their_colour_and_never_collide(gl_app):
    app = gl_app()
    camera = Camera(target=(0.0, 0.5, 0.0), distance=2.0, pitch=0.0)
    app.spawn(camera)
    app.spawn(Prop(Box((0.3, 0.3, 0.3)), color=(0.1, 0.8, 0.1)), Transform(position=(0.0, 0.5, 0.0)))
    sheet = mesh.grid(8, 8, 0.4, 0.4, center=(0.0, 1.2, 0.0), plane="xz")
    cloth = Cloth.from_mesh(sheet, "cotton")
    app.spawn(cloth)
    app.step(40)                                        # 0.67 s of free fall: 2.2 m, straight through the box
    rgb = sample(read_pixels(app), camera, np.array([[0.0, 0.5, 0.3]]))[0]
    assert rgb[1] > 2 * max(rgb[0], rgb[2]), f"the green prop shows {rgb}"
    assert cloth.x[:, 1].max() < 0.2 - 0.3, "a prop must not hold the cloth up (props never collide)"


def test_collider_style_colours_or_hides_a_collider(gl_app):
    app = gl_app(RenderSettings(hud=False, sky=False))
    camera = Camera(target=(0.0, 0.5, 0.0), distance=2.0, pitch=0.0)
    app.spawn(camera)
    shown = app.spawn(Collider(Sphere(0.2)), Transform(position=(-0.4, 0.5, 0.0)), ColliderStyle(color=(0.1, 0.1, 0.9)))
    app.spawn(Collider(Sphere(0.2)), Transform(position=(0.4, 0.5, 0.0)), ColliderStyle(visible=False))
    left, right = sample(read_pixels(app), camera, np.array([[-0.4, 0.5, 0.2], [0.4, 0.5, 0.2]]))
    assert left[2] > 2 * max(left[0], left[1]), f"the styled collider shows {left}, want blue"
    assert np.abs(right - background(app)).max() <= 10, f"the hidden collider shows {right}"
    app.get(shown, ColliderStyle).visible = False
    render_frame(app)
    left = sample(read_pixels(app), camera, np.array([[-0.4, 0.5, 0.2]]))[0]
    assert np.abs(left - background(app)).max() <= 10, "hiding a collider takes effect on the next frame"


def test_multisampling_blends_the_pixels_along_an_edge(gl_app):
    """A white box on black: with 4 samples the pixels its edge crosses take intermediate greys (0.25, 0.5,
    0.75 of white); with none every pixel is the box's colour or black."""
    greys = {}
    for samples in (0, 4):
        app = gl_app(RenderSettings(hud=False, sky=False, shadows=False, samples=samples, background=(0.0, 0.0, 0.0),
                                    ambient=1.0))
        app.spawn(Camera(target=(0.0, 0.0, 0.0), distance=3.0, yaw=0.3, pitch=0.0))
        app.spawn(Prop(Box((0.5, 0.5, 0.5)), color=(1.0, 1.0, 1.0)), Transform.from_axis_angle((0, 0, 0), (0, 0, 1), 0.4))
        pixels = read_pixels(app).astype(int).max(axis=2)
        greys[samples] = int(((pixels > 30) & (pixels < 220)).sum())
    assert greys[0] == 0 and greys[4] > 100, f"pixels with intermediate greys: {greys}"


def weave_patch(gl_app, weave_scale: float, texture: str | None = "weave") -> np.ndarray:
    """RGB (k, 3) int of the pixels inside a flat 1 m square of white cloth held still 3 m in front of the camera,
    drawn with the weave repeating every ``weave_scale`` metres (or ``texture``; flat light: no shadows)."""
    app = gl_app(RenderSettings(hud=False, sky=False, shadows=False, ambient=1.0, samples=0, show_colliders=False))
    camera = Camera(target=(0.0, 0.0, 0.0), distance=3.0, pitch=0.0)
    app.spawn(camera)
    sheet = mesh.grid(8, 8, 1.0, 1.0, center=(0.0, 0.0, 0.0), plane="xy")
    cloth = Cloth.from_mesh(sheet, "cotton")
    app.spawn(cloth, Pin(index=np.arange(cloth.particle_count)),
              ClothStyle(front_color=(1.0, 1.0, 1.0), back_color=(1.0, 1.0, 1.0), texture=texture,
                         weave_scale=weave_scale))
    app.step(1)
    grid = np.linspace(-0.3, 0.3, 25)
    points = np.array([[x, y, 0.0] for x in grid for y in grid])
    return sample(read_pixels(app), camera, points)


def test_a_minified_weave_fades_to_its_mean_colour_instead_of_aliasing(gl_app):
    """The weave texture has no mipmaps (``gl.WEAVE_FADE_TEXELS``: building them costs every launch 0.1 s on
    llvmpipe); its threads fade to their mean as they shrink. A pixel here covers about 1 cm of cloth. Close up (a
    40 cm repeat: a thread 10 px wide, 1.6 texels a pixel) the threads show: the patch's pixels vary by tens of
    levels. Minified (a 5 mm repeat: some 130 texels a pixel) a plain texture lookup would pick a texel at random
    per pixel (the same spread, moiré); faded, the patch is even (spread under 3 levels: flat light) and its
    brightness is the weave's mean times the plain cloth's, as a mipmap's would be (within 3 %)."""
    from loom.systems.render.gl import weave_image
    close = weave_patch(gl_app, 0.4)[:, 0]
    far = weave_patch(gl_app, 0.005)[:, 0]
    assert close.std() > 10, f"close up the weave's threads should show: spread {close.std():.1f} levels"
    assert far.std() < 3, f"a minified weave should be even, not aliased: spread {far.std():.1f} levels"
    expect = weave_patch(gl_app, 0.005, texture=None)[:, 0].mean() * weave_image()[:, :, 0].mean() / 255.0
    assert abs(far.mean() - expect) < 0.03 * expect, f"minified weave {far.mean():.1f}, want its mean {expect:.1f}"


def test_the_default_cloth_texture_is_a_weave_of_threads():
    from loom.systems.render.gl import weave_image
    assert ClothStyle().texture == "weave"
    image = weave_image().astype(int)[:, :, 0]
    assert image.shape == (64, 64) and 100 <= image.min() and image.max() >= 230
    rows = image.mean(axis=1)                            # threads: brightness rises and falls every 16 texels
    assert rows.max() - rows.min() > 10
