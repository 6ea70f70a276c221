"""GL renderer: the cloths, their colliders and a HUD drawn with moderngl (OpenGL 3.3 core), in a window or headless.

Opt-in (games add it; DefaultPlugins does not)::

    app.add_plugin(GLRenderPlugin(width=960, height=640))    # draw_scene joins Stage.RENDER
    app.add_plugin(WindowPlugin())                           # systems/render/window.py: the interactive loop
    app.spawn(Camera(target=(0, 0.6, 0), distance=2.5))      # components/camera.py; default Camera() if none

What one frame draws (``draw_scene``, once per rendered frame, after the fixed steps):

1. the colliders (Plane, Sphere, Capsule, Cylinder, Box, Prism, TriangleMesh), tessellated once per shape
   and placed by their Transform each frame (``RenderSettings.show_colliders``);
2. every visible cloth in the view ``RenderSettings.view`` selects (components/render.py): shaded two-sided
   (front/back colour × checker or image texture on rest UVs), normals as RGB (Fisher "Rendering"),
   wireframe, strain heatmap, or particles as points. Loop subdivision and smooth normals come from
   systems/render/surface.py; each cloth owns one vertex buffer, preallocated and updated in place with
   ``buffer.write`` of a preallocated float32 array — no GL object is created per frame;
3. the HUD: FPS and sim ms per step over the last second (``App.frame_stats``: the first step's compile left
   out; headless, fixed steps per second), particles and model, rendered with pygame.font into one
   fixed-size texture four times a second.

Where it draws: into the window's back buffer when a ``Window`` resource with OpenGL is open (the window
loop flips it), else into an offscreen framebuffer of a standalone EGL context (tests, ``--screenshot``).
``read_pixels(app)`` returns the last frame as (h, w, 3) uint8, top row first.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import moderngl
import numba
import numpy as np

from loom.components import Camera, Cloth, Collider, Transform
from loom.components.collider import Box, Capsule, Cylinder, Plane, Prism, Sphere, TriangleMesh
from loom.components.render import ClothStyle, RenderSettings
from loom.engine import App, Stage
from loom.engine.frame_stats import FrameStats
from loom.engine.geometry import grid_triangles
from loom.engine.window import FrameCapture, Window, WindowSettings, create_gl_context, save_png
from loom.systems.render.surface import ClothSurface

CLOTH_FLOATS = 9
"""Floats per cloth vertex in the vertex buffer: position (3) [m], normal (3), rest uv (2) [m], strain (1) [-]."""
HUD_SECONDS = 0.25
"""The HUD text is re-rendered at most this often [s] (pygame.font text is slow to make every frame)."""
PLANE_EXTENT = 6.0
"""Half side [m] of the square drawn for an (infinite) Plane collider, around its Transform's position."""
COLLIDER_COLOR = (0.62, 0.63, 0.66)
"""RGB of solid colliders."""
FLOOR_COLOR = (0.42, 0.44, 0.48)
"""RGB of planes (drawn with a 0.5 m checker for depth cues)."""
_MODES = {"shaded": 0, "normals": 1, "strain": 2, "wireframe": 3}

# --- shaders (GLSL 330 core) -------------------------------------------------------------------------------------
_CLOTH_VS = """
#version 330 core
uniform mat4 u_view_proj;
in vec3 in_position;
in vec3 in_normal;
in vec2 in_uv;
in float in_strain;
out vec3 v_normal;
out vec2 v_uv;
out float v_strain;
void main() {
    v_normal = in_normal;
    v_uv = in_uv;
    v_strain = in_strain;
    gl_Position = u_view_proj * vec4(in_position, 1.0);
}
"""
_CLOTH_FS = """
#version 330 core
uniform int u_mode;              // 0 shaded, 1 normals, 2 strain, 3 flat (wireframe)
uniform vec3 u_front;
uniform vec3 u_back;
uniform vec3 u_light;            // unit, toward the light, world space
uniform float u_ambient;
uniform sampler2D u_texture;
uniform vec2 u_uv_scale;         // texture coordinate = rest uv [m] * scale + offset
uniform vec2 u_uv_offset;
uniform float u_strain_scale;    // strain shown at full colour [-]
in vec3 v_normal;
in vec2 v_uv;
in float v_strain;
out vec4 f_color;

vec3 lit(vec3 base, vec3 n) {
    return base * (u_ambient + (1.0 - u_ambient) * max(dot(n, u_light), 0.0));
}

void main() {
    float len = length(v_normal);
    vec3 n = len > 0.0 ? v_normal / len : vec3(0.0, 1.0, 0.0);
    if (u_mode == 1) {                       // Fisher: normal xyz as RGB, the front normal on both sides
        f_color = vec4(n * 0.5 + 0.5, 1.0);
        return;
    }
    vec3 side_n = gl_FrontFacing ? n : -n;   // two-sided lighting: the back side faces the other way
    if (u_mode == 2) {                       // stretch red, rest white, compression blue
        float s = clamp(v_strain / u_strain_scale, -1.0, 1.0);
        vec3 c = s >= 0.0 ? mix(vec3(0.95), vec3(0.9, 0.08, 0.05), s)
                          : mix(vec3(0.95), vec3(0.1, 0.25, 0.95), -s);
        f_color = vec4(lit(c, side_n), 1.0);
        return;
    }
    vec3 base = gl_FrontFacing ? u_front : u_back;
    if (u_mode == 3) {
        f_color = vec4(base, 1.0);
        return;
    }
    base *= texture(u_texture, v_uv * u_uv_scale + u_uv_offset).rgb;
    f_color = vec4(lit(base, side_n), 1.0);
}
"""
_SOLID_VS = """
#version 330 core
uniform mat4 u_view_proj;
uniform mat4 u_model;            // rotation and translation only (Transform)
in vec3 in_position;
in vec3 in_normal;
in vec2 in_uv;
out vec3 v_normal;
out vec2 v_uv;
void main() {
    v_normal = mat3(u_model) * in_normal;
    v_uv = in_uv;
    gl_Position = u_view_proj * u_model * vec4(in_position, 1.0);
}
"""
_SOLID_FS = """
#version 330 core
uniform vec3 u_color;
uniform vec3 u_light;
uniform float u_ambient;
uniform float u_checker;         // checker cell [m] on in_uv, 0 for none
in vec3 v_normal;
in vec2 v_uv;
out vec4 f_color;
void main() {
    float len = length(v_normal);
    vec3 n = len > 0.0 ? v_normal / len : vec3(0.0, 1.0, 0.0);
    n = gl_FrontFacing ? n : -n;
    vec3 base = u_color;
    if (u_checker > 0.0) {
        vec2 cell = floor(v_uv / u_checker);
        base *= mod(cell.x + cell.y, 2.0) < 0.5 ? 1.0 : 0.85;
    }
    f_color = vec4(base * (u_ambient + (1.0 - u_ambient) * max(dot(n, u_light), 0.0)), 1.0);
}
"""
_POINTS_VS = """
#version 330 core
uniform mat4 u_view_proj;
uniform float u_point_size;
in vec3 in_position;
in float in_pinned;
out float v_pinned;
void main() {
    v_pinned = in_pinned;
    gl_Position = u_view_proj * vec4(in_position, 1.0);
    gl_PointSize = u_point_size;
}
"""
_POINTS_FS = """
#version 330 core
uniform vec3 u_color;
uniform vec3 u_pinned_color;
in float v_pinned;
out vec4 f_color;
void main() {
    vec2 p = gl_PointCoord * 2.0 - 1.0;
    if (dot(p, p) > 1.0) discard;             // round points
    f_color = vec4(v_pinned > 0.5 ? u_pinned_color : u_color, 1.0);
}
"""
_HUD_VS = """
#version 330 core
in vec2 in_position;             // normalised device coordinates
in vec2 in_uv;
out vec2 v_uv;
void main() {
    v_uv = in_uv;
    gl_Position = vec4(in_position, 0.0, 1.0);
}
"""
_HUD_FS = """
#version 330 core
uniform sampler2D u_texture;
in vec2 v_uv;
out vec4 f_color;
void main() {
    f_color = texture(u_texture, v_uv);
}
"""


# --- resource -----------------------------------------------------------------------------------------------------
@dataclass(eq=False)
class _ClothGPU:
    """One cloth's surface cache and GL objects (rebuilt only when its topology or subdivision changes)."""

    surface: ClothSurface
    packed: np.ndarray            # (m, CLOTH_FLOATS) float32, written into vbo every frame
    points: np.ndarray            # (n, 4) float32: particle position, pinned flag
    vbo: Any
    ibo: Any
    vao: Any
    points_vbo: Any
    points_vao: Any
    image: Any = None             # the ClothStyle.texture array last uploaded (identity decides re-upload)
    image_texture: Any = None
    uv_box: tuple[float, float, float, float] = (0.0, 0.0, 1.0, 1.0)

    def release(self) -> None:
        for obj in (self.vao, self.points_vao, self.vbo, self.ibo, self.points_vbo, self.image_texture):
            if obj is not None:
                obj.release()


@dataclass(eq=False)
class _SolidGPU:
    """One collider shape tessellated in its local frame: a non-indexed triangle list (pos, normal, uv)."""

    shape: Any
    signature: tuple
    vbo: Any
    vao: Any

    def release(self) -> None:
        self.vao.release()
        self.vbo.release()


@dataclass(eq=False)
class GLRenderer:
    """App resource: the moderngl context, shader programs, per-cloth and per-collider buffers, the HUD.

    Created empty by ``GLRenderPlugin``; the context is made on the first frame drawn (the window's if a
    ``Window`` with OpenGL is open, else a standalone EGL one of ``WindowSettings`` size), so adding the
    plugin costs nothing in a headless run that never draws. ``release()`` frees every GL object."""

    ctx: Any = None
    """moderngl.Context, None until the first frame."""
    target: Any = None
    """Framebuffer drawn into: the window's screen or an offscreen one."""
    width: int = 0
    """Drawing size [px]."""
    height: int = 0
    """Drawing size [px]."""
    windowed: bool = False
    """True when drawing into a window's back buffer."""
    frames: int = 0
    """Frames drawn so far."""
    default_camera: Camera = field(default_factory=Camera)
    """The camera used when the scene has no Camera entity."""
    default_style: ClothStyle = field(default_factory=ClothStyle)
    """The style of cloths with no ClothStyle component (each cloth is drawn with its entity's ClothStyle,
    else this; the GL renderer draws only whole Apps, so there is no per-call style to pass)."""
    seconds: dict[str, float] = field(default_factory=lambda: {"normals": 0.0, "upload": 0.0})
    """Time spent so far [s] on the cloths' surfaces (subdivision and smooth normals, numba) and on their
    uploads (packing the vertex rows and writing the buffers), for benchmarks/scenes.py's breakdown."""
    _programs: dict[str, Any] = field(default_factory=dict, repr=False)
    _cloths: dict[int, _ClothGPU] = field(default_factory=dict, repr=False)
    _solids: dict[int, _SolidGPU] = field(default_factory=dict, repr=False)
    _textures: dict[str, Any] = field(default_factory=dict, repr=False)
    _hud: dict[str, Any] = field(default_factory=dict, repr=False)

    def ensure_context(self, app: App) -> None:
        """Create the context, target, programs and shared textures if not yet done (first frame)."""
        if self.ctx is not None:
            return
        settings = app.resources.get(WindowSettings) or WindowSettings()
        window = app.resources.get(Window)
        use_window = window is not None and window.opengl and settings.headless is not True
        if settings.headless is False and not use_window:
            raise RuntimeError("loom: GLRenderPlugin(headless=False) draws into a window, and none is open: add "
                               "loom.systems.render.window.WindowPlugin and run without --headless, or use "
                               "headless=None to fall back to offscreen EGL")
        self.ctx = ctx = create_gl_context(window=use_window)
        self.windowed = use_window
        if use_window:
            self.width, self.height = window.width, window.height
            self.target = ctx.screen
        else:
            self.width, self.height = settings.width, settings.height
            self.target = ctx.simple_framebuffer((self.width, self.height), components=4)
        self._programs = {
            "cloth": ctx.program(vertex_shader=_CLOTH_VS, fragment_shader=_CLOTH_FS),
            "solid": ctx.program(vertex_shader=_SOLID_VS, fragment_shader=_SOLID_FS),
            "points": ctx.program(vertex_shader=_POINTS_VS, fragment_shader=_POINTS_FS),
            "hud": ctx.program(vertex_shader=_HUD_VS, fragment_shader=_HUD_FS),
        }
        checker = np.array([[255, 191], [191, 255]], np.uint8)[:, :, None].repeat(3, axis=2)
        self._textures["checker"] = _texture(ctx, checker, nearest=True, repeat=True)
        self._textures["white"] = _texture(ctx, np.full((1, 1, 3), 255, np.uint8), nearest=True, repeat=True)

    def render(self, app: App, dt: float = 0.0) -> None:
        """Draw the scene once into ``target`` (creating the context on the first call); the HUD's FPS comes from
        ``app.frame_stats``, not from dt [s]."""
        self.ensure_context(app)
        settings = app.resources.get(RenderSettings) or RenderSettings()
        ctx = self.ctx
        self.target.use()
        self.target.clear(*settings.background, 1.0, depth=1.0)
        ctx.enable(moderngl.DEPTH_TEST | moderngl.PROGRAM_POINT_SIZE)
        ctx.disable(moderngl.CULL_FACE | moderngl.BLEND)
        cameras = app.query(Camera)
        camera = cameras[0][1] if cameras else self.default_camera
        view_proj = camera.projection(self.width / self.height) @ camera.view()
        matrix = np.ascontiguousarray(view_proj.T, dtype=np.float32).tobytes()   # row-major → GL column-major
        if settings.show_colliders:
            self._draw_colliders(app, settings, matrix)
        self._draw_cloths(app, settings, matrix)
        if settings.hud:
            self._draw_hud(app, settings, dt)
        self.frames += 1

    def read_pixels(self) -> np.ndarray:
        """Return the last frame drawn as (h, w, 3) uint8, top row first (GL reads bottom row first)."""
        if self.target is None:
            raise RuntimeError("GLRenderer.read_pixels: nothing drawn yet; call render_frame(app) first")
        data = self.target.read(viewport=(0, 0, self.width, self.height), components=3, alignment=1)
        return np.frombuffer(data, np.uint8).reshape(self.height, self.width, 3)[::-1].copy()

    def release(self) -> None:
        """Free every GL object and the context (the resource can draw again: it re-creates them)."""
        for item in (*self._cloths.values(), *self._solids.values()):
            item.release()
        for obj in (*self._textures.values(), *self._programs.values(), *self._hud.values()):
            if hasattr(obj, "release"):
                obj.release()
        if self.target is not None and not self.windowed:
            self.target.release()
        if self.ctx is not None:
            self.ctx.release()
        self._cloths.clear()
        self._solids.clear()
        self._textures.clear()
        self._programs.clear()
        self._hud.clear()
        self.ctx = self.target = None
        self.frames = 0

    # --- cloths --------------------------------------------------------------------------------------------------
    def _draw_cloths(self, app: App, settings: RenderSettings, matrix: bytes) -> None:
        """Draw every Cloth entity with its own ClothStyle, else ``default_style``; free buffers of gone ones."""
        seen = set()
        cloth_prog, points_prog = self._programs["cloth"], self._programs["points"]
        cloth_prog["u_view_proj"].write(matrix)
        points_prog["u_view_proj"].write(matrix)
        for entity, cloth in app.query(Cloth):
            style = app.try_get(entity, ClothStyle) or self.default_style
            seen.add(entity)
            if not style.visible or cloth.triangles.shape[0] == 0 and settings.view != "particles":
                continue
            gpu = self._cloth_gpu(entity, cloth, style)
            if settings.view == "particles":
                _pack_points(cloth.x, cloth.inv_mass, gpu.points)
                gpu.points_vbo.write(gpu.points)
                _set(points_prog, "u_point_size", settings.point_size)
                _set(points_prog, "u_color", tuple(style.front_color))
                _set(points_prog, "u_pinned_color", (1.0, 0.85, 0.1))
                gpu.points_vao.render(moderngl.POINTS)
                continue
            start = time.perf_counter()
            gpu.surface.update(cloth, strain=settings.view == "strain")
            packed = time.perf_counter()
            _pack_vertices(gpu.surface.x, gpu.surface.normal, gpu.surface.uv, gpu.surface.strain, gpu.packed)
            gpu.vbo.write(gpu.packed)
            self.seconds["normals"] += packed - start
            self.seconds["upload"] += time.perf_counter() - packed
            texture, scale, offset = self._cloth_texture(gpu, style)
            texture.use(location=0)
            _set(cloth_prog, "u_mode", _MODES[settings.view])
            _set(cloth_prog, "u_front", tuple(style.front_color))
            _set(cloth_prog, "u_back", tuple(style.back_color))
            _set(cloth_prog, "u_light", tuple(settings.light_direction))
            _set(cloth_prog, "u_ambient", settings.ambient)
            _set(cloth_prog, "u_texture", 0)
            _set(cloth_prog, "u_uv_scale", scale)
            _set(cloth_prog, "u_uv_offset", offset)
            _set(cloth_prog, "u_strain_scale", settings.strain_scale)
            if settings.view == "wireframe":
                self.ctx.wireframe = True
                gpu.vao.render(moderngl.TRIANGLES)
                self.ctx.wireframe = False
            else:
                gpu.vao.render(moderngl.TRIANGLES)
        for entity in [e for e in self._cloths if e not in seen]:       # despawned cloths
            self._cloths.pop(entity).release()

    def _cloth_gpu(self, entity: int, cloth: Cloth, style: ClothStyle) -> _ClothGPU:
        """Return the entity's GL objects, building them (once per topology and subdivision level)."""
        gpu = self._cloths.get(entity)
        levels = style.subdivision if cloth.triangles.shape[0] else 0
        if gpu is not None and gpu.surface.matches(cloth, levels):
            return gpu
        if gpu is not None:
            gpu.release()
        ctx = self.ctx
        surface = ClothSurface(cloth, levels)
        packed = np.zeros((surface.vertex_count, CLOTH_FLOATS), np.float32)
        points = np.zeros((cloth.x.shape[0], 4), np.float32)
        vbo = ctx.buffer(reserve=packed.nbytes, dynamic=True)
        triangles = surface.triangles if surface.triangles.size else np.zeros((1, 3), np.int32)
        ibo = ctx.buffer(np.ascontiguousarray(triangles, dtype=np.uint32))
        vao = ctx.vertex_array(self._programs["cloth"],
                               [(vbo, "3f 3f 2f 1f", "in_position", "in_normal", "in_uv", "in_strain")],
                               index_buffer=ibo, index_element_size=4)
        points_vbo = ctx.buffer(reserve=points.nbytes, dynamic=True)
        points_vao = ctx.vertex_array(self._programs["points"], [(points_vbo, "3f 1f", "in_position", "in_pinned")])
        uv = surface.uv
        lo, hi = (uv.min(axis=0), uv.max(axis=0)) if uv.size else (np.zeros(2), np.ones(2))
        gpu = _ClothGPU(surface=surface, packed=packed, points=points, vbo=vbo, ibo=ibo, vao=vao,
                        points_vbo=points_vbo, points_vao=points_vao,
                        uv_box=(float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1])))
        self._cloths[entity] = gpu
        return gpu

    def _cloth_texture(self, gpu: _ClothGPU, style: ClothStyle) -> tuple[Any, tuple, tuple]:
        """Texture, uv scale and offset for a style: checker squares of checker_scale metres, an image over the
        rest-UV box (uploaded once per array), or plain white."""
        if isinstance(style.texture, np.ndarray):
            if gpu.image is not style.texture:
                if gpu.image_texture is not None:
                    gpu.image_texture.release()
                gpu.image_texture = _texture(self.ctx, style.texture[::-1], nearest=False, repeat=False)
                gpu.image = style.texture
            u0, v0, u1, v1 = gpu.uv_box
            su, sv = 1.0 / max(u1 - u0, 1e-9), 1.0 / max(v1 - v0, 1e-9)
            return gpu.image_texture, (su, sv), (-u0 * su, -v0 * sv)
        if style.texture == "checker":
            scale = 0.5 / style.checker_scale            # one texel of the 2×2 texture = checker_scale metres
            return self._textures["checker"], (scale, scale), (0.0, 0.0)
        return self._textures["white"], (1.0, 1.0), (0.0, 0.0)

    # --- colliders -----------------------------------------------------------------------------------------------
    def _draw_colliders(self, app: App, settings: RenderSettings, matrix: bytes) -> None:
        prog = self._programs["solid"]
        prog["u_view_proj"].write(matrix)
        _set(prog, "u_light", tuple(settings.light_direction))
        _set(prog, "u_ambient", settings.ambient)
        seen = set()
        for entity, collider, transform in app.query(Collider, Transform):
            seen.add(entity)
            if not collider.active:
                continue
            gpu = self._solid_gpu(entity, collider.shape)
            model = np.eye(4)
            model[:3, :3] = transform.rotation
            model[:3, 3] = transform.position
            prog["u_model"].write(np.ascontiguousarray(model.T, dtype=np.float32).tobytes())
            is_plane = isinstance(collider.shape, Plane)
            _set(prog, "u_color", FLOOR_COLOR if is_plane else COLLIDER_COLOR)
            _set(prog, "u_checker", 0.5 if is_plane else 0.0)
            gpu.vao.render(moderngl.TRIANGLES)
        for entity in [e for e in self._solids if e not in seen]:
            self._solids.pop(entity).release()

    def _solid_gpu(self, entity: int, shape: Any) -> _SolidGPU:
        """Return the entity's collider mesh, tessellating it when the shape or its sizes changed."""
        gpu = self._solids.get(entity)
        signature = _shape_signature(shape)
        if gpu is not None and gpu.shape is shape and gpu.signature == signature:
            return gpu
        if gpu is not None:
            gpu.release()
        vertices = tessellate(shape)
        vbo = self.ctx.buffer(vertices.astype(np.float32).tobytes())
        vao = self.ctx.vertex_array(self._programs["solid"], [(vbo, "3f 3f 2f", "in_position", "in_normal", "in_uv")])
        gpu = _SolidGPU(shape=shape, signature=signature, vbo=vbo, vao=vao)
        self._solids[entity] = gpu
        return gpu

    # --- HUD -----------------------------------------------------------------------------------------------------
    def _draw_hud(self, app: App, settings: RenderSettings, dt: float) -> None:
        import pygame
        hud = self._hud
        if not hud:
            pygame.font.init()
            width, height = min(self.width, 760), 48
            hud["font"] = pygame.font.Font(None, 20)
            hud["surface"] = pygame.Surface((width, height), pygame.SRCALPHA)
            hud["texture"] = self.ctx.texture((width, height), 4)
            hud["texture"].filter = (moderngl.NEAREST, moderngl.NEAREST)
            x0, y1 = -1.0 + 8 * 2 / self.width, 1.0 - 8 * 2 / self.height
            x1, y0 = x0 + width * 2 / self.width, y1 - height * 2 / self.height
            quad = np.array([[x0, y0, 0, 0], [x1, y0, 1, 0], [x0, y1, 0, 1], [x1, y1, 1, 1]], np.float32)
            hud["vbo"] = self.ctx.buffer(quad.tobytes())
            hud["vao"] = self.ctx.vertex_array(self._programs["hud"], [(hud["vbo"], "2f 2f", "in_position", "in_uv")])
            hud["age"] = math.inf
        hud["age"] += dt
        if hud["age"] >= HUD_SECONDS or dt == 0.0:
            hud["age"] = 0.0
            self._write_hud_text(app, settings)
        self.ctx.disable(moderngl.DEPTH_TEST)
        self.ctx.enable(moderngl.BLEND)
        self.ctx.blend_func = moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA
        hud["texture"].use(location=0)
        _set(self._programs["hud"], "u_texture", 0)
        hud["vao"].render(moderngl.TRIANGLE_STRIP)
        self.ctx.disable(moderngl.BLEND)
        self.ctx.enable(moderngl.DEPTH_TEST)

    def _write_hud_text(self, app: App, settings: RenderSettings) -> None:
        import pygame
        hud = self._hud
        report = app.report()
        models = sorted({cloth.model for _, cloth in app.query(Cloth)}) or ["-"]
        lines = (f"{hud_rate(app.frame_stats)}   {report.get('particles', 0)} particles   "
                 f"sim {app.frame_stats.sim_ms_per_step:.2f} ms/frame   model {', '.join(models)}",
                 f"view {settings.view}   [V] view  [H] HUD  [C] colliders  right-drag orbit  "
                 f"middle-drag pan  wheel zoom  [Esc] quit")
        surface = hud["surface"]
        surface.fill((0, 0, 0, 150))
        for k, line in enumerate(lines):
            surface.blit(hud["font"].render(line, True, (235, 235, 235)), (8, 5 + 20 * k))
        hud["texture"].write(pygame.image.tobytes(surface, "RGBA", True))


# --- systems, functions, plugin ------------------------------------------------------------------------------------
def hud_rate(stats: FrameStats) -> str:
    """The HUD's rate over the last second: "59.6 FPS" in a window, "412 steps/s headless" when the App was
    stepped with no frames rendered (a headless screenshot)."""
    if stats.windowed:
        return f"{stats.fps:5.1f} FPS"
    return f"{stats.fps:.0f} steps/s headless"


def draw_scene(app: App, dt: float) -> None:
    """Draw the scene (Stage.RENDER): colliders, cloths in the current view, HUD; dt [s] is the real frame time."""
    app.resource(GLRenderer).render(app, dt)


def render_frame(app: App) -> None:
    """Draw the current state once without stepping (screenshots, tests)."""
    app.resource(GLRenderer).render(app, 0.0)


def read_pixels(app: App) -> np.ndarray:
    """Return the last frame drawn as (h, w, 3) uint8, top row first; draws one first if none was."""
    renderer = app.resource(GLRenderer)
    if renderer.frames == 0:
        renderer.render(app, 0.0)
    return renderer.read_pixels()


def save_screenshot(app: App, path: str) -> None:
    """Draw the current state and write it to ``path`` as a PNG (the runner's ``--screenshot``)."""
    render_frame(app)
    save_png(path, app.resource(GLRenderer).read_pixels())


def release_renderer(app: App) -> None:
    """Free the App's GL renderer objects and context (call before closing the App or its window)."""
    renderer = app.resources.get(GLRenderer)
    if renderer is not None:
        renderer.release()


class GLRenderPlugin:
    """The moderngl renderer: a GLRenderer resource, draw_scene in Stage.RENDER, screenshots for the runner.

    width, height [px] size the window or offscreen image; headless None draws into a window when one is
    open and offscreen (EGL) otherwise, True always offscreen, False only into a window."""

    def __init__(self, width: int = 960, height: int = 640, headless: bool | None = None) -> None:
        self.settings = WindowSettings(width=width, height=height, opengl=True, headless=headless)

    def build(self, app: App) -> None:
        app.insert_resource(self.settings, replace=False)
        app.insert_resource(RenderSettings(), replace=False)
        app.insert_resource(GLRenderer())
        app.insert_resource(FrameCapture(save=save_screenshot))
        app.add_system(draw_scene, Stage.RENDER)
        app.on("window_closing", lambda **_: release_renderer(app))


# --- collider tessellation (once per shape) -------------------------------------------------------------------------
def tessellate(shape: Any, segments: int = 32) -> np.ndarray:
    """Triangle list of a collider shape in its local frame: (3·t, 8) float64 rows of position [m], unit normal,
    uv [m] (planes: in-plane coordinates for the floor checker). Plane: a square of ±PLANE_EXTENT."""
    if isinstance(shape, Plane):
        n = np.asarray(shape.normal, float)
        t1 = np.cross(n, (1.0, 0.0, 0.0) if abs(n[0]) < 0.9 else (0.0, 0.0, 1.0))
        t1 /= np.linalg.norm(t1)
        t2 = np.cross(n, t1)
        e = PLANE_EXTENT
        corners = [(-e, -e), (e, -e), (e, e), (-e, e)]
        pos = np.array([a * t1 + b * t2 for a, b in corners])
        uv = np.array(corners, float)
        tri = np.array([[0, 1, 2], [0, 2, 3]])
        return _oriented(pos[tri].reshape(-1, 3), np.tile(n, (6, 1)), uv[tri].reshape(-1, 2))
    if isinstance(shape, Sphere):
        phi = np.linspace(0.0, math.pi, segments // 2 + 1)
        return _lathe(shape.radius * np.sin(phi), shape.radius * np.cos(phi), np.sin(phi), np.cos(phi), segments)
    if isinstance(shape, Capsule):
        r, h = shape.radius, shape.half_length
        top = np.linspace(0.0, math.pi / 2, segments // 4 + 1)
        bottom = np.linspace(math.pi / 2, math.pi, segments // 4 + 1)
        phi = np.concatenate([top, bottom])
        y = r * np.cos(phi) + np.concatenate([np.full(top.size, h), np.full(bottom.size, -h)])
        return _lathe(r * np.sin(phi), y, np.sin(phi), np.cos(phi), segments)
    if isinstance(shape, Cylinder):
        r, h = shape.radius, shape.half_height
        return _lathe(np.array([0.0, r, r, r, r, 0.0]), np.array([h, h, h, -h, -h, -h]),
                      np.array([0.0, 0.0, 1.0, 1.0, 0.0, 0.0]), np.array([1.0, 1.0, 0.0, 0.0, -1.0, -1.0]), segments)
    if isinstance(shape, Box):
        pos, nrm = [], []
        for axis in range(3):
            for sign in (-1.0, 1.0):
                n = np.zeros(3)
                n[axis] = sign
                u, v = np.eye(3)[(axis + 1) % 3], np.eye(3)[(axis + 2) % 3]
                c = n * shape.half_extents[axis]
                hu, hv = u * shape.half_extents[(axis + 1) % 3], v * shape.half_extents[(axis + 2) % 3]
                quad = [c - hu - hv, c + hu - hv, c + hu + hv, c - hu + hv]
                pos += [quad[0], quad[1], quad[2], quad[0], quad[2], quad[3]]
                nrm += [n] * 6
        return _oriented(np.array(pos), np.array(nrm), np.zeros((len(pos), 2)))
    if isinstance(shape, Prism):
        poly, d = shape.polygon, shape.half_depth
        k = poly.shape[0]
        pos, nrm = [], []
        for i in range(1, k - 1):                                 # caps: fans (the polygon is convex)
            for z, sign in ((d, 1.0), (-d, -1.0)):
                pos += [(*poly[0], z), (*poly[i], z), (*poly[i + 1], z)]
                nrm += [(0.0, 0.0, sign)] * 3
        for i in range(k):                                        # sides: outward = right of a CCW edge
            a, b = poly[i], poly[(i + 1) % k]
            edge = b - a
            n = np.array([edge[1], -edge[0], 0.0]) / np.linalg.norm(edge)
            pos += [(*a, -d), (*b, -d), (*b, d), (*a, -d), (*b, d), (*a, d)]
            nrm += [n] * 6
        return _oriented(np.array(pos, float), np.array(nrm, float), np.zeros((len(pos), 2)))
    if isinstance(shape, TriangleMesh):
        corners = shape.vertices[shape.triangles]                        # (t, 3, 3)
        face = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
        face /= np.linalg.norm(face, axis=1)[:, None]
        return np.concatenate([corners.reshape(-1, 3), np.repeat(face, 3, axis=0),
                               np.zeros((corners.shape[0] * 3, 2))], axis=1)
    raise TypeError(f"tessellate: unknown collider shape {shape!r}")


def _lathe(radius: np.ndarray, y: np.ndarray, normal_r: np.ndarray, normal_y: np.ndarray, segments: int) -> np.ndarray:
    """Revolve a profile (radius [m], y [m] and the profile normal's radial and y parts, top to bottom) about y."""
    theta = np.linspace(0.0, 2.0 * math.pi, segments + 1)
    s, c = np.sin(theta)[None, :], np.cos(theta)[None, :]
    pos = np.stack([radius[:, None] * s, np.broadcast_to(y[:, None], (y.size, theta.size)), radius[:, None] * c], -1)
    nrm = np.stack([normal_r[:, None] * s, np.broadcast_to(normal_y[:, None], (y.size, theta.size)),
                    normal_r[:, None] * c], -1)
    tri = grid_triangles(theta.size, y.size, checkerboard=False)      # vertex (row i, angle j): i·theta.size + j
    pos, nrm = pos.reshape(-1, 3), nrm.reshape(-1, 3)
    return _oriented(pos[tri].reshape(-1, 3), nrm[tri].reshape(-1, 3), np.zeros((tri.size, 2)))


def _oriented(pos: np.ndarray, nrm: np.ndarray, uv: np.ndarray) -> np.ndarray:
    """Rows (pos, normal, uv) of a triangle list with every triangle turned counter-clockwise about its normal
    (so gl_FrontFacing is the outside), degenerate triangles dropped."""
    p = pos.reshape(-1, 3, 3)
    face = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    facing = np.einsum("ij,ij->i", face, nrm.reshape(-1, 3, 3).sum(axis=1))
    rows = np.concatenate([pos, nrm, uv], axis=1).reshape(-1, 3, 8)
    flip = facing < 0.0
    rows[flip] = rows[flip][:, ::-1]
    keep = np.linalg.norm(face, axis=1) > 1e-12
    return np.ascontiguousarray(rows[keep].reshape(-1, 8))


def _shape_signature(shape: Any) -> tuple:
    """The sizes a tessellation depends on (a changed radius re-tessellates)."""
    if isinstance(shape, TriangleMesh):
        return (id(shape.vertices), id(shape.triangles))
    values = []
    for name in ("normal", "radius", "half_length", "half_height", "half_extents", "polygon", "half_depth"):
        value = getattr(shape, name, None)
        if value is not None:
            values.append(np.asarray(value, float).tobytes())
    return tuple(values)


def _texture(ctx: Any, image: np.ndarray, *, nearest: bool, repeat: bool) -> Any:
    """Upload an (h, w, 3) uint8 image (row 0 at texture v = 0) as an RGB texture."""
    image = np.ascontiguousarray(image, dtype=np.uint8)
    texture = ctx.texture((image.shape[1], image.shape[0]), 3, image.tobytes(), alignment=1)
    texture.repeat_x = texture.repeat_y = repeat
    if nearest:
        texture.filter = (moderngl.NEAREST, moderngl.NEAREST)
    else:
        texture.build_mipmaps()
        texture.filter = (moderngl.LINEAR_MIPMAP_LINEAR, moderngl.LINEAR)
    return texture


def _set(program: Any, name: str, value: Any) -> None:
    """Set a uniform if the compiled program kept it (drivers drop unused ones)."""
    uniform = program.get(name, None)
    if uniform is not None:
        uniform.value = value


# --- kernels: private, arrays in, arrays out -------------------------------------------------------------------------
@numba.njit(cache=True)
def _pack_vertices(x, normal, uv, strain, out):
    """Interleave position (m, 3) [m], normal (m, 3), rest uv (m, 2) [m] and strain (m,) [-] into out (m, 9) float32."""
    for v in range(out.shape[0]):
        for c in range(3):
            out[v, c] = x[v, c]
            out[v, 3 + c] = normal[v, c]
        out[v, 6] = uv[v, 0]
        out[v, 7] = uv[v, 1]
        out[v, 8] = strain[v]


@numba.njit(cache=True)
def _pack_points(x, inv_mass, out):
    """Particle position (n, 3) [m] and pinned flag (inv_mass == 0) into out (n, 4) float32."""
    for v in range(out.shape[0]):
        for c in range(3):
            out[v, c] = x[v, c]
        out[v, 3] = 1.0 if inv_mass[v] == 0.0 else 0.0

