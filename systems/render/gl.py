"""GL renderer: the cloths, their colliders and a HUD drawn with moderngl (OpenGL 3.3 core), in a window or headless.

Opt-in (games add it; DefaultPlugins does not)::

    app.add_plugin(GLRenderPlugin(width=960, height=640))    # draw_scene joins Stage.RENDER
    app.add_plugin(WindowPlugin())                           # systems/render/window.py: the interactive loop
    app.spawn(Camera(target=(0, 0.6, 0), distance=2.5))      # components/camera.py; default Camera() if none

What one frame draws (``draw_scene``, once per rendered frame, after the fixed steps):

1. the colliders (every shape of ``collider.SHAPES``), tessellated once per shape
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

from loom.components import Camera, Cloth
from loom.components.collider import Plane
from loom.components.render import ClothStyle, RenderSettings
from loom.engine import App, Stage
from loom.engine.frame_stats import FrameStats
from loom.launch.cold_kernels import called_from, python_twin
from loom.engine.window import FrameCapture, LoadingView, Window, WindowSettings, create_gl_context, save_png
from loom.systems.render.between import StepBlend, add_step_blend
from loom.systems.render.solids import placed, visible_solids
from loom.systems.render.surface import ClothSurface

CLOTH_FLOATS = 9
"""Floats per cloth vertex in the vertex buffer: position (3) [m], normal (3), rest uv (2) [m], strain (1) [-]."""
HUD_SECONDS = 0.25
"""The HUD text is re-rendered at most this often [s] (pygame.font text is slow to make every frame)."""
WEAVE_FADE_TEXELS = (4.0, 10.0)
"""The weave texture (no mipmaps) fades from its threads to its mean colour as one pixel covers from 4 to 10 of its
texels (a 16-texel thread from 4 to 1.6 pixels wide): what a mipmap does at that range, without GL building one.
On Mesa's llvmpipe ``glGenerateMipmap`` compiles a shader in every process, 0.10-0.15 s of every launch."""
_MODES = {"shaded": 0, "normals": 1, "strain": 2, "wireframe": 3}

# --- shaders (GLSL 330 core) -------------------------------------------------------------------------------------
_LIGHTING = """
uniform vec3 u_light;            // unit, toward the light, world space
uniform float u_ambient;         // fraction of full light that reaches every surface
uniform vec3 u_eye;              // camera position [m]
uniform vec3 u_sky;              // sky colour overhead (tints light from above)
uniform vec3 u_horizon;          // haze colour
uniform float u_haze;            // distance [m] at which surfaces fade halfway into the haze; 0: none
uniform int u_shadows;           // 1: sample the shadow map
uniform float u_shadow_texel;    // shadow map texel [m]
uniform mat4 u_light_proj;       // world -> light clip space
uniform sampler2DShadow u_shadow_map;

float sun_visible(vec3 world, vec3 n_lit) {
    if (u_shadows == 0) return 1.0;
    vec4 p = u_light_proj * vec4(world + n_lit * (1.5 * u_shadow_texel), 1.0);
    vec3 q = p.xyz / p.w * 0.5 + 0.5;
    if (q.x <= 0.0 || q.x >= 1.0 || q.y <= 0.0 || q.y >= 1.0 || q.z >= 1.0) return 1.0;
    float texel = 1.0 / float(textureSize(u_shadow_map, 0).x);
    float sum = 0.0;                                  // 8 taps of hardware 2x2 PCF on a ring: a soft edge
    for (int k = 0; k < 8; ++k) {
        float a = 0.785398 * float(k) + 0.3;
        sum += texture(u_shadow_map, vec3(q.xy + 1.6 * texel * vec2(cos(a), sin(a)), q.z - 0.0005));
    }
    return sum / 8.0;
}

vec3 shade(vec3 base, vec3 n, vec3 world, float wrap, float shine) {
    // Wrapped Lambert (soft terminator, as light scatters into fabric), shadowed sun, sky-tinted ambient, and a
    // faint Blinn highlight of strength ``shine``.
    float ndl = dot(n, u_light);
    float diffuse = max((ndl + wrap) / (1.0 + wrap), 0.0);
    float sun = diffuse > 0.0 ? sun_visible(world, ndl >= 0.0 ? n : -n) : 0.0;
    vec3 sky_tint = mix(vec3(0.78, 0.74, 0.70), mix(vec3(1.0), u_sky * 1.6, 0.18), n.y * 0.5 + 0.5);
    vec3 c = base * (u_ambient * sky_tint + (1.0 - u_ambient) * diffuse * sun * vec3(1.0, 0.97, 0.92));
    if (shine > 0.0) {
        vec3 h = normalize(u_light + normalize(u_eye - world));
        c += shine * pow(max(dot(n, h), 0.0), 24.0) * sun;
    }
    return c;
}

vec3 hazed(vec3 c, vec3 world) {
    if (u_haze <= 0.0) return c;
    float d = length(world - u_eye) / u_haze;
    return mix(c, u_horizon, 1.0 - exp2(-d * d));
}
"""
_CLOTH_VS = """
#version 330 core
uniform mat4 u_view_proj;
in vec3 in_position;
in vec3 in_normal;
in vec2 in_uv;
in float in_strain;
out vec3 v_world;
out vec3 v_normal;
out vec2 v_uv;
out float v_strain;
void main() {
    v_world = in_position;
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
uniform sampler2D u_texture;
uniform vec2 u_uv_scale;         // texture coordinate = rest uv [m] * scale + offset
uniform vec2 u_uv_offset;
uniform vec3 u_texture_fade;     // x, y: the texture's size in texels; z: 1 fades it to u_texture_mean when minified
uniform vec3 u_texture_mean;     // the texture's mean colour
uniform float u_strain_scale;    // strain shown at full colour [-]
in vec3 v_world;
in vec3 v_normal;
in vec2 v_uv;
in float v_strain;
out vec4 f_color;
""" + _LIGHTING + """
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
        f_color = vec4(shade(c, side_n, v_world, 0.0, 0.0), 1.0);
        return;
    }
    vec3 base = gl_FrontFacing ? u_front : u_back;
    if (u_mode == 3) {
        f_color = vec4(base, 1.0);
        return;
    }
    vec2 st = v_uv * u_uv_scale + u_uv_offset;
    vec3 texel = texture(u_texture, st).rgb;
    if (u_texture_fade.z > 0.0) {            // the weave has no mipmaps: its threads fade to their mean as they
        vec2 footprint = fwidth(st * u_texture_fade.xy);   // shrink below a few pixels (texels per pixel)
        float fade = smoothstep(WEAVE_FADE_START, WEAVE_FADE_END, max(footprint.x, footprint.y));
        texel = mix(texel, u_texture_mean, fade);
    }
    base *= texel;
    vec3 c = shade(base, side_n, v_world, 0.35, 0.0);
    float rim = pow(1.0 - abs(dot(side_n, normalize(u_eye - v_world))), 3.0);   // fabric sheen at grazing angles
    c += 0.12 * rim * base * u_horizon;
    f_color = vec4(hazed(c, v_world), 1.0);
}
"""
_SOLID_VS = """
#version 330 core
uniform mat4 u_view_proj;
uniform mat4 u_model;            // rotation and translation only (Transform)
in vec3 in_position;
in vec3 in_normal;
in vec2 in_uv;
out vec3 v_world;
out vec3 v_normal;
out vec2 v_uv;
void main() {
    vec4 world = u_model * vec4(in_position, 1.0);
    v_world = world.xyz;
    v_normal = mat3(u_model) * in_normal;
    v_uv = in_uv;
    gl_Position = u_view_proj * world;
}
"""
_SOLID_FS = """
#version 330 core
uniform vec3 u_color;
uniform float u_checker;         // tile side [m] on in_uv, 0 for none
in vec3 v_world;
in vec3 v_normal;
in vec2 v_uv;
out vec4 f_color;
""" + _LIGHTING + """
void main() {
    float len = length(v_normal);
    vec3 n = len > 0.0 ? v_normal / len : vec3(0.0, 1.0, 0.0);
    n = gl_FrontFacing ? n : -n;
    vec3 base = u_color;
    if (u_checker > 0.0) {
        vec2 cell = floor(v_uv / u_checker);
        base *= mod(cell.x + cell.y, 2.0) < 0.5 ? 1.0 : 0.9;
    }
    vec3 c = shade(base, n, v_world, 0.0, 0.08);
    f_color = vec4(hazed(c, v_world), 1.0);
}
"""
_DEPTH_VS = """
#version 330 core
uniform mat4 u_light_proj;
uniform mat4 u_model;
in vec3 in_position;
void main() {
    gl_Position = u_light_proj * u_model * vec4(in_position, 1.0);
}
"""
_DEPTH_FS = """
#version 330 core
void main() {
}
"""
_SKY_VS = """
#version 330 core
in vec2 in_position;             // a triangle covering the screen, normalised device coordinates
out vec2 v_ndc;
void main() {
    v_ndc = in_position;
    gl_Position = vec4(in_position, 0.9999, 1.0);
}
"""
_SKY_FS = """
#version 330 core
uniform mat4 u_inverse_view_proj;
uniform vec3 u_eye;
uniform vec3 u_sky;
uniform vec3 u_horizon;
uniform vec3 u_light;
in vec2 v_ndc;
out vec4 f_color;
void main() {
    vec4 far = u_inverse_view_proj * vec4(v_ndc, 1.0, 1.0);
    vec3 dir = normalize(far.xyz / far.w - u_eye);
    float up = dir.y;
    vec3 c = up >= 0.0 ? mix(u_horizon, u_sky, pow(smoothstep(0.0, 0.75, up), 0.7))
                       : mix(u_horizon, u_horizon * 0.82, smoothstep(0.0, -0.4, up));
    c += vec3(1.0, 0.95, 0.85) * 0.25 * pow(max(dot(dir, u_light), 0.0), 32.0);   // glow round the sun
    f_color = vec4(c, 1.0);
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
    depth_vao: Any
    points_vbo: Any
    points_vao: Any
    image: Any = None             # the ClothStyle.texture array last uploaded (identity decides re-upload)
    image_texture: Any = None
    uv_box: tuple[float, float, float, float] = (0.0, 0.0, 1.0, 1.0)

    def release(self) -> None:
        for obj in (self.vao, self.depth_vao, self.points_vao, self.vbo, self.ibo, self.points_vbo,
                    self.image_texture):
            if obj is not None:
                obj.release()


@dataclass(eq=False)
class _SolidGPU:
    """One collider shape tessellated in its local frame: a non-indexed triangle list (pos, normal, uv)."""

    shape: Any
    signature: tuple
    vbo: Any
    vao: Any
    depth_vao: Any

    def release(self) -> None:
        self.vao.release()
        self.depth_vao.release()
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
    _solids: dict[tuple[str, int], _SolidGPU] = field(default_factory=dict, repr=False)
    _textures: dict[str, Any] = field(default_factory=dict, repr=False)
    _hud: dict[str, Any] = field(default_factory=dict, repr=False)
    _fonts: dict[str, Any] = field(default_factory=dict, repr=False)

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
            "cloth": ctx.program(vertex_shader=_CLOTH_VS, fragment_shader=_cloth_fragment_shader()),
            "solid": ctx.program(vertex_shader=_SOLID_VS, fragment_shader=_SOLID_FS),
            "points": ctx.program(vertex_shader=_POINTS_VS, fragment_shader=_POINTS_FS),
            "hud": ctx.program(vertex_shader=_HUD_VS, fragment_shader=_HUD_FS),
            "depth": ctx.program(vertex_shader=_DEPTH_VS, fragment_shader=_DEPTH_FS),
            "sky": ctx.program(vertex_shader=_SKY_VS, fragment_shader=_SKY_FS),
        }
        checker = np.array([[255, 191], [191, 255]], np.uint8)[:, :, None].repeat(3, axis=2)
        self._textures["checker"] = _texture(ctx, checker, nearest=True, repeat=True)
        weave = weave_image()
        self._textures["weave"] = _texture(ctx, weave, nearest=False, repeat=True, mipmaps=False)
        self._weave_fade = (float(weave.shape[1]), float(weave.shape[0]), 1.0)    # the shader's u_texture_fade
        self._weave_mean = tuple(float(c) for c in weave.reshape(-1, 3).mean(axis=0) / 255.0)
        self._textures["white"] = _texture(ctx, np.full((1, 1, 3), 255, np.uint8), nearest=True, repeat=True)
        sky = np.array([[-1.0, -1.0], [3.0, -1.0], [-1.0, 3.0]], np.float32)
        self._textures["sky_vbo"] = ctx.buffer(sky.tobytes())
        self._textures["sky_vao"] = ctx.vertex_array(self._programs["sky"], [(self._textures["sky_vbo"], "2f",
                                                                                  "in_position")])

    def render(self, app: App, dt: float = 0.0) -> None:
        """Draw the scene once into ``target`` (creating the context on the first call): the shadow map, then
        sky, colliders, props and cloths into a multisampled framebuffer resolved into ``target``, then the HUD.
        The HUD's FPS comes from ``app.frame_stats``, not from dt [s]."""
        self.ensure_context(app)
        settings = app.resources.get(RenderSettings) or RenderSettings()
        ctx = self.ctx
        cameras = app.query(Camera)
        camera = cameras[0][1] if cameras else self.default_camera
        view_proj = camera.projection(self.width / self.height) @ camera.view()
        matrix = _gl_matrix(view_proj)
        solids = self._solid_items(app, settings)
        cloths = self._update_cloths(app, settings)
        shadows = settings.shadows and settings.view not in ("normals", "particles")
        light_proj, texel = self._draw_shadow_map(settings, camera, solids, cloths) if shadows else (np.eye(4), 0.0)
        frame = self._frame_buffer(settings)
        frame.use()
        if settings.sky:
            frame.clear(*settings.horizon_color, 1.0, depth=1.0)
        else:
            frame.clear(*settings.background, 1.0, depth=1.0)
        ctx.disable(moderngl.CULL_FACE | moderngl.BLEND)
        if settings.sky and settings.view != "normals":
            self._draw_sky(settings, camera, view_proj)
        ctx.enable(moderngl.DEPTH_TEST | moderngl.PROGRAM_POINT_SIZE)
        for name in ("cloth", "solid"):
            self._set_lighting(self._programs[name], settings, camera, light_proj, texel, shadows)
        self._draw_solids(solids, matrix)
        self._draw_cloths(cloths, settings, matrix)
        if frame is not self.target:                                    # resolve the samples into the target
            if self.windowed:                                           # the window's formats differ: resolve
                resolved = self._textures["resolved"]                   # into our own first, then copy colour
                ctx.copy_framebuffer(resolved, frame)
                ctx.copy_framebuffer(self.target, resolved)
            else:
                ctx.copy_framebuffer(self.target, frame)
            self.target.use()
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

    # --- frame: multisampling, sky, lighting, shadow map -----------------------------------------------------------
    def _frame_buffer(self, settings: RenderSettings) -> Any:
        """The framebuffer the scene is drawn into: a multisampled one of ``settings.samples`` (clamped to the
        driver's maximum), rebuilt when that changes, or ``target`` itself with no multisampling."""
        samples = min(settings.samples, self.ctx.max_samples)
        if samples <= 1:
            return self.target
        if self._textures.get("msaa_samples") != samples:
            for name in ("msaa", "msaa_color", "msaa_depth", "resolved", "resolved_color"):
                old = self._textures.pop(name, None)
                if old is not None:
                    old.release()
            size = (self.width, self.height)
            color = self.ctx.renderbuffer(size, 4, samples=samples)
            depth = self.ctx.depth_renderbuffer(size, samples=samples)
            self._textures.update(msaa=self.ctx.framebuffer(color_attachments=[color], depth_attachment=depth),
                                  msaa_color=color, msaa_depth=depth, msaa_samples=samples)
            if self.windowed:                    # colour only: a blit into the window with depth is refused
                resolved = self.ctx.renderbuffer(size, 4)
                self._textures.update(resolved=self.ctx.framebuffer(color_attachments=[resolved]),
                                      resolved_color=resolved)
        return self._textures["msaa"]

    def _draw_sky(self, settings: RenderSettings, camera: Camera, view_proj: np.ndarray) -> None:
        """The sky gradient behind everything (depth test off, so it writes no depth)."""
        self.ctx.disable(moderngl.DEPTH_TEST)
        prog = self._programs["sky"]
        prog["u_inverse_view_proj"].write(_gl_matrix(np.linalg.inv(view_proj)))
        _set(prog, "u_eye", tuple(camera.eye))
        _set(prog, "u_sky", tuple(settings.sky_color))
        _set(prog, "u_horizon", tuple(settings.horizon_color))
        _set(prog, "u_light", tuple(settings.light_direction))
        self._textures["sky_vao"].render(moderngl.TRIANGLES)

    def _set_lighting(self, prog: Any, settings: RenderSettings, camera: Camera, light_proj: np.ndarray,
                      texel: float, shadows: bool) -> None:
        """The uniforms of the shared lighting code (_LIGHTING) of one program."""
        _set(prog, "u_light", tuple(settings.light_direction))
        _set(prog, "u_ambient", settings.ambient)
        _set(prog, "u_eye", tuple(camera.eye))
        _set(prog, "u_sky", tuple(settings.sky_color) if settings.sky else (0.6, 0.6, 0.6))
        _set(prog, "u_horizon", tuple(settings.horizon_color) if settings.sky else tuple(settings.background))
        _set(prog, "u_haze", settings.haze_distance if settings.sky else 0.0)
        _set(prog, "u_shadows", 1 if shadows else 0)
        _set(prog, "u_shadow_texel", texel)
        uniform = prog.get("u_light_proj", None)
        if uniform is not None:
            uniform.write(_gl_matrix(light_proj))
        if shadows:
            self._textures["shadow_map"].use(location=1)
        _set(prog, "u_shadow_map", 1)

    def _draw_shadow_map(self, settings: RenderSettings, camera: Camera, solids: list, cloths: list
                         ) -> tuple[np.ndarray, float]:
        """Render the depth of every cloth, collider and prop as seen from the light into the shadow map; return
        the world → light clip matrix and the map's texel size [m]. The map covers a square of side
        1.6 × the camera's distance (at least 3 m) around the camera's target, snapped to whole texels so the
        shadows do not shimmer as the camera moves."""
        size = settings.shadow_size
        if self._textures.get("shadow_size") != size:
            for name in ("shadow_fbo", "shadow_map"):
                old = self._textures.pop(name, None)
                if old is not None:
                    old.release()
            depth = self.ctx.depth_texture((size, size))
            depth.compare_func = "<="
            depth.filter = (moderngl.LINEAR, moderngl.LINEAR)
            depth.repeat_x = depth.repeat_y = False
            self._textures.update(shadow_map=depth, shadow_size=size,
                                  shadow_fbo=self.ctx.framebuffer(depth_attachment=depth))
        half = max(1.5, 0.8 * camera.distance)
        light_proj = _light_projection(np.asarray(settings.light_direction, float), np.asarray(camera.target, float),
                                       half, size)
        fbo = self._textures["shadow_fbo"]
        fbo.use()
        fbo.clear(depth=1.0)
        ctx = self.ctx
        ctx.enable(moderngl.DEPTH_TEST)
        ctx.disable(moderngl.CULL_FACE | moderngl.BLEND)
        prog = self._programs["depth"]
        prog["u_light_proj"].write(_gl_matrix(light_proj))
        ctx.polygon_offset = (1.5, 2.0)
        for gpu, model, _, _ in solids:
            if not isinstance(gpu.shape, Plane):                           # the floor receives, never casts
                prog["u_model"].write(model)
                gpu.depth_vao.render(moderngl.TRIANGLES)
        prog["u_model"].write(_gl_matrix(np.eye(4)))
        for gpu, _ in cloths:
            gpu.depth_vao.render(moderngl.TRIANGLES)
        ctx.polygon_offset = (0.0, 0.0)
        return light_proj, 2.0 * half / size

    # --- cloths --------------------------------------------------------------------------------------------------
    def _update_cloths(self, app: App, settings: RenderSettings) -> list[tuple[_ClothGPU, ClothStyle]]:
        """Bring every visible cloth's vertex buffer up to date (subdivided surface, normals, strain) and return
        (GL objects, style) of each to draw; free the buffers of despawned cloths."""
        seen, out = set(), []
        blend = app.resources.get(StepBlend)
        for entity, cloth in app.query(Cloth):
            style = app.try_get(entity, ClothStyle) or self.default_style
            seen.add(entity)
            if not style.visible or cloth.triangles.shape[0] == 0 and settings.view != "particles":
                continue
            gpu = self._cloth_gpu(entity, cloth, style)
            x = cloth.x if blend is None else blend.positions(app, entity, cloth)     # between two steps
            if settings.view == "particles":
                _pack_points(x, cloth.inv_mass, gpu.points)
                gpu.points_vbo.write(gpu.points)
            else:
                start = time.perf_counter()
                gpu.surface.update(cloth, strain=settings.view == "strain", x=x)
                packed = time.perf_counter()
                surface = gpu.surface
                _pack_vertices_call(surface.x, surface.normal, surface.uv, surface.strain, gpu.packed)
                gpu.vbo.write(gpu.packed)
                self.seconds["normals"] += packed - start
                self.seconds["upload"] += time.perf_counter() - packed
            out.append((gpu, style))
        for entity in [e for e in self._cloths if e not in seen]:       # despawned cloths
            self._cloths.pop(entity).release()
        return out

    def _draw_cloths(self, cloths: list[tuple[_ClothGPU, ClothStyle]], settings: RenderSettings,
                     matrix: bytes) -> None:
        """Draw the cloths ``_update_cloths`` prepared, each with its own style, in the current view."""
        cloth_prog, points_prog = self._programs["cloth"], self._programs["points"]
        cloth_prog["u_view_proj"].write(matrix)
        points_prog["u_view_proj"].write(matrix)
        for gpu, style in cloths:
            if settings.view == "particles":
                _set(points_prog, "u_point_size", settings.point_size)
                _set(points_prog, "u_color", tuple(style.front_color))
                _set(points_prog, "u_pinned_color", (1.0, 0.85, 0.1))
                gpu.points_vao.render(moderngl.POINTS)
                continue
            texture, scale, offset = self._cloth_texture(gpu, style)
            texture.use(location=0)
            weave = texture is self._textures["weave"]
            _set(cloth_prog, "u_texture_fade", self._weave_fade if weave else (1.0, 1.0, 0.0))
            _set(cloth_prog, "u_texture_mean", self._weave_mean)
            _set(cloth_prog, "u_mode", _MODES[settings.view])
            _set(cloth_prog, "u_front", tuple(style.front_color))
            _set(cloth_prog, "u_back", tuple(style.back_color))
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
        depth_vao = ctx.vertex_array(self._programs["depth"], [(vbo, f"3f {4 * (CLOTH_FLOATS - 3)}x", "in_position")],
                                     index_buffer=ibo, index_element_size=4)
        points_vbo = ctx.buffer(reserve=points.nbytes, dynamic=True)
        points_vao = ctx.vertex_array(self._programs["points"], [(points_vbo, "3f 1f", "in_position", "in_pinned")])
        uv = surface.uv
        lo, hi = (uv.min(axis=0), uv.max(axis=0)) if uv.size else (np.zeros(2), np.ones(2))
        gpu = _ClothGPU(surface=surface, packed=packed, points=points, vbo=vbo, ibo=ibo, vao=vao,
                        depth_vao=depth_vao, points_vbo=points_vbo, points_vao=points_vao,
                        uv_box=(float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1])))
        self._cloths[entity] = gpu
        return gpu

    def _cloth_texture(self, gpu: _ClothGPU, style: ClothStyle) -> tuple[Any, tuple, tuple]:
        """Texture, uv scale and offset for a style: the weave repeating every weave_scale metres, checker squares
        of checker_scale metres, an image over the rest-UV box (uploaded once per array), or plain white."""
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
        if style.texture == "weave":
            scale = 1.0 / style.weave_scale
            return self._textures["weave"], (scale, scale), (0.0, 0.0)
        return self._textures["white"], (1.0, 1.0), (0.0, 0.0)

    # --- colliders and props -------------------------------------------------------------------------------------
    def _solid_items(self, app: App, settings: RenderSettings) -> list[tuple[_SolidGPU, bytes, tuple, float]]:
        """(mesh, model matrix, colour, tile side [m]) of every solid to draw (``solids.visible_solids``); free the
        meshes of gone ones."""
        solids = visible_solids(app, settings)
        blend = app.resources.get(StepBlend)
        items = [(self._solid_gpu(solid.key, solid.shape), _gl_matrix(placed(app, blend, solid)), solid.color,
                  solid.tiles) for solid in solids]
        seen = {solid.key for solid in solids}
        for key in [k for k in self._solids if k not in seen]:
            self._solids.pop(key).release()
        return items

    def _draw_solids(self, items: list[tuple[_SolidGPU, bytes, tuple, float]], matrix: bytes) -> None:
        prog = self._programs["solid"]
        prog["u_view_proj"].write(matrix)
        for gpu, model, color, tiles in items:
            prog["u_model"].write(model)
            _set(prog, "u_color", color)
            _set(prog, "u_checker", tiles)
            gpu.vao.render(moderngl.TRIANGLES)

    def _solid_gpu(self, key: tuple[str, int], shape: Any) -> _SolidGPU:
        """Return the mesh of a collider or prop, tessellating it when the shape or its sizes changed."""
        gpu = self._solids.get(key)
        signature = shape.look()
        if gpu is not None and gpu.shape is shape and gpu.signature == signature:
            return gpu
        if gpu is not None:
            gpu.release()
        vertices = tessellate(shape)
        vbo = self.ctx.buffer(vertices.astype(np.float32).tobytes())
        vao = self.ctx.vertex_array(self._programs["solid"], [(vbo, "3f 3f 2f", "in_position", "in_normal", "in_uv")])
        depth_vao = self.ctx.vertex_array(self._programs["depth"], [(vbo, "3f 20x", "in_position")])
        gpu = _SolidGPU(shape=shape, signature=signature, vbo=vbo, vao=vao, depth_vao=depth_vao)
        self._solids[key] = gpu
        return gpu

    # --- loading view --------------------------------------------------------------------------------------------
    def draw_message(self, app: App, lines: list[str], fraction: float | None = None) -> None:
        """Draw a plain frame with ``lines`` of text centred on it (the window's loading view while numba compiles
        on a first launch): the sky's colours, no scene, no stepping; under the text, when ``fraction`` is not
        None, a progress bar filled that far (clamped to 0–1). Creates the context if needed."""
        import pygame
        self.ensure_context(app)
        settings = app.resources.get(RenderSettings) or RenderSettings()
        self.target.use()
        top = settings.sky_color if settings.sky else settings.background
        self.target.clear(*top, 1.0, depth=1.0)
        pygame.font.init()
        font = self._fonts.get("message") or pygame.font.Font(None, 30)
        self._fonts["message"] = font
        rendered = [font.render(line, True, (245, 245, 245)) for line in lines]
        width = max((r.get_width() for r in rendered), default=1) + 40
        bar = 0 if fraction is None else 28
        height = 36 * len(rendered) + 24 + bar
        surface = pygame.Surface((width, height), pygame.SRCALPHA)
        surface.fill((0, 0, 0, 110))
        for k, text in enumerate(rendered):
            surface.blit(text, ((width - text.get_width()) // 2, 14 + 36 * k))
        if fraction is not None:                         # the bar: an outline, filled as far as compiling got
            outline = pygame.Rect(20, height - bar - 4, width - 40, 16)
            pygame.draw.rect(surface, (245, 245, 245, 255), outline, 2)
            filled = outline.inflate(-6, -6)
            filled.width = round(filled.width * min(max(float(fraction), 0.0), 1.0))
            pygame.draw.rect(surface, (245, 245, 245, 255), filled)
        texture = self.ctx.texture((width, height), 4, pygame.image.tobytes(surface, "RGBA", True))
        w, h = 2.0 * width / self.width, 2.0 * height / self.height
        quad = np.array([[-w / 2, -h / 2, 0, 0], [w / 2, -h / 2, 1, 0], [-w / 2, h / 2, 0, 1], [w / 2, h / 2, 1, 1]],
                        np.float32)
        vbo = self.ctx.buffer(quad.tobytes())
        vao = self.ctx.vertex_array(self._programs["hud"], [(vbo, "2f 2f", "in_position", "in_uv")])
        self._draw_overlay(texture, vao)
        for obj in (vao, vbo, texture):                  # a loading view is drawn a few times: nothing is kept
            obj.release()

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
        self._draw_overlay(hud["texture"], hud["vao"])

    def _draw_overlay(self, texture: Any, vao: Any) -> None:
        """Blend an RGBA ``texture`` over the frame through ``vao``, a screen quad of the HUD program (the HUD,
        the loading view's text box): no depth test while it draws, restored after."""
        self.ctx.disable(moderngl.DEPTH_TEST)
        self.ctx.enable(moderngl.BLEND)
        self.ctx.blend_func = moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA
        texture.use(location=0)
        _set(self._programs["hud"], "u_texture", 0)
        vao.render(moderngl.TRIANGLE_STRIP)
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


def grab_frame(app: App) -> np.ndarray:
    """Draw the current state once without the HUD and return it, (h, w, 3) uint8, top row first
    (``FrameCapture.grab``: ``--record``'s frames are the scene, not the debugging text)."""
    settings = app.resources.get(RenderSettings)
    hud = settings is not None and settings.hud
    if hud:
        settings.hud = False
    try:
        render_frame(app)
    finally:
        if hud:
            settings.hud = True
    return app.resource(GLRenderer).read_pixels()


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
        app.insert_resource(FrameCapture(save=save_screenshot, grab=grab_frame))
        app.insert_resource(LoadingView(draw=lambda a, lines, fraction=None:
                                         a.resource(GLRenderer).draw_message(a, lines, fraction)))
        app.add_system(draw_scene, Stage.RENDER)
        add_step_blend(app)                              # drawing between steps (on in the window loop)
        app.on("window_closing", lambda **_: release_renderer(app))


# --- collider tessellation (once per shape) -------------------------------------------------------------------------
def tessellate(shape: Any, segments: int = 32) -> np.ndarray:
    """Triangle list of a collider shape in its local frame, from its entry of the shape table
    (``collider.Shape.tessellate``): (3·t, 8) float64 rows of position [m], unit normal, uv [m] (planes: in-plane
    coordinates for the floor checker; a square of ±``collider.PLANE_EXTENT``)."""
    return shape.tessellate(segments)


def weave_image(threads: int = 4, texels: int = 16, seed: int = 7) -> np.ndarray:
    """The "weave" texture: a plain weave of ``threads`` warp and weft threads per repeat, ``texels`` texels
    each, as an (h, w, 3) uint8 image of brightness about 0.45–1 (it multiplies the cloth's colour).

    Each thread is a rounded ridge (brightest along its middle); warp and weft pass over each other
    alternately, the one on top drawn whole, and each thread gets a slight random shade (yarns vary)."""
    rng = np.random.default_rng(seed)
    side = threads * texels
    t = (np.arange(side) + 0.5) / texels                          # thread coordinate
    index, frac = np.floor(t).astype(int), t - np.floor(t)
    ridge = np.sin(np.pi * frac) ** 0.6                           # 0 at the gaps between threads, 1 on top
    shade_warp = 0.92 + 0.08 * rng.random(threads)
    shade_weft = 0.92 + 0.08 * rng.random(threads)
    warp = (0.62 + 0.38 * ridge)[None, :] * shade_warp[index][None, :]        # threads along v, varying in u
    weft = (0.62 + 0.38 * ridge)[:, None] * shade_weft[index][:, None]        # threads along u, varying in v
    warp_on_top = (index[:, None] + index[None, :]) % 2 == 0
    along = np.sin(np.pi * frac)                                   # a thread dips where it goes under
    warp = warp * (0.85 + 0.15 * along[:, None])
    weft = weft * (0.85 + 0.15 * along[None, :])
    value = np.where(warp_on_top, warp, weft)
    value *= 0.97 + 0.03 * rng.random((side, side))               # fibre noise
    rgb = np.clip(value * 255.0, 0.0, 255.0).astype(np.uint8)
    return np.repeat(rgb[:, :, None], 3, axis=2)


def _gl_matrix(matrix: np.ndarray) -> bytes:
    """A row-major 4×4 matrix as the column-major float32 bytes GL uniforms take."""
    return np.ascontiguousarray(np.asarray(matrix).T, dtype=np.float32).tobytes()


def _light_projection(light: np.ndarray, center: np.ndarray, half: float, size: int) -> np.ndarray:
    """World → clip matrix of an orthographic view along ``-light`` (unit, toward the light) covering a square
    of ±``half`` [m] around ``center`` and ±(half + 20) m of depth, its centre snapped to whole texels of a
    ``size``² map so shadows keep still while the camera moves."""
    up = np.array([0.0, 1.0, 0.0]) if abs(light[1]) < 0.95 else np.array([0.0, 0.0, 1.0])
    right = np.cross(up, light)
    right /= np.linalg.norm(right)
    top = np.cross(light, right)
    basis = np.stack([right, top, light])                          # rows: light-space x, y, z
    texel = 2.0 * half / size
    local = basis @ center
    local[:2] = np.round(local[:2] / texel) * texel
    depth = half + 20.0
    view = np.eye(4)
    view[:3, :3] = basis
    view[:3, 3] = -local
    proj = np.diag([1.0 / half, 1.0 / half, -1.0 / depth, 1.0])   # z: +depth (toward the light) → −1 (near)
    return proj @ view


def _cloth_fragment_shader() -> str:
    """The cloth's fragment shader with ``WEAVE_FADE_TEXELS`` written in."""
    start, end = WEAVE_FADE_TEXELS
    return _CLOTH_FS.replace("WEAVE_FADE_START", f"{start:.3f}").replace("WEAVE_FADE_END", f"{end:.3f}")


def _texture(ctx: Any, image: np.ndarray, *, nearest: bool, repeat: bool, mipmaps: bool = True) -> Any:
    """Upload an (h, w, 3) uint8 image (row 0 at texture v = 0) as an RGB texture: nearest texels, or linear and
    (``mipmaps``) trilinear."""
    image = np.ascontiguousarray(image, dtype=np.uint8)
    texture = ctx.texture((image.shape[1], image.shape[0]), 3, image.tobytes(), alignment=1)
    texture.repeat_x = texture.repeat_y = repeat
    if nearest:
        texture.filter = (moderngl.NEAREST, moderngl.NEAREST)
    elif mipmaps:
        texture.build_mipmaps()
        texture.filter = (moderngl.LINEAR_MIPMAP_LINEAR, moderngl.LINEAR)
    else:
        texture.filter = (moderngl.LINEAR, moderngl.LINEAR)
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



def _pack_vertices_numpy(x, normal, uv, strain, out):
    """``_pack_vertices`` in NumPy: its twin while the compile-ahead worker compiles it (``cold_kernels``)."""
    out[:, 0:3] = x
    out[:, 3:6] = normal
    out[:, 6:8] = uv
    out[:, 8] = strain


python_twin(_pack_vertices, per_step=True, twin=_pack_vertices_numpy)
_pack_vertices_call = _pack_vertices                 # the Python call site's name
called_from(__name__, _pack_vertices)
