"""Software renderer: draw cloth onto a pygame Surface the game owns — shaded, depth-tested, no OpenGL.

For plain pygame games and headless tests (a ``pygame.Surface`` needs no display). Per frame, all in numba:
refresh each cloth's shared ``ClothSurface`` (systems/render/surface.py: Loop subdivision, vertex normals, strain),
project it with the Camera's matrices, shade two-sided Lambert — the front colour where the projected
triangle runs counter-clockwise as seen (its front faces the eye), the back colour otherwise — rasterize into
the renderer's own z-buffer (systems/render/soft_kernels.py), then copy only the pixels the cloth covers into
the game's surface. The background shows through everywhere else, and intersecting folds hide each other
per pixel (no painter's sort)::

    renderer = SoftRenderer(screen.get_size())
    while running:
        real_dt = clock.tick(60) / 1000
        app.update(real_dt)                       # INPUT, fixed steps, RENDER
        screen.fill(SKY); draw_level(screen)      # the game's own drawing
        renderer.draw(app, screen, camera)        # every Cloth, over what is there
        pygame.display.flip()

``SoftRenderPlugin(screen)`` does that ``draw`` in the RENDER stage instead (then draw the background before
``app.update``). What is drawn follows the same data as the GL renderer (components/render.py): each cloth
entity's ``ClothStyle`` (colours, checker or image texture — the default "weave" is drawn plain: its threads
are finer than a sprite-scale pixel and this rasterizer does not filter — subdivision, visible) and the App's
``RenderSettings`` (view shaded / normals / wireframe / strain / particles, light_direction, ambient,
strain_scale, point_size). ``background`` and ``hud`` are the game's business here: the game owns the surface;
``draw(..., solids=True)`` adds the App's props and (``show_colliders``) colliders, as the GL renderer draws them.
The normals view and Loop subdivision follow Fisher's notes ("Rendering"). What a frame
costs: docs/embedding.md.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import esper
import numpy as np
import pygame

from loom.components import Camera, Cloth
from loom.components.render import ClothStyle, RenderSettings
from loom.engine import App, Stage
from loom.engine.window import FrameCapture, save_png
from loom.systems.render import soft_kernels as _k
from loom.systems.render.between import StepBlend, add_step_blend
from loom.systems.render.solids import placed, visible_solids
from loom.systems.render.surface import ClothSurface
from loom.systems.shared.held import hold

_MODES = {"shaded": _k.SHADED, "normals": _k.NORMALS, "strain": _k.STRAIN, "wireframe": _k.FLAT}
WIRE_WIDTH = 0.6
"""Half-width [px] of the wireframe view's lines: pixels nearer than this to a triangle edge are drawn."""
PINNED_COLOR = np.array([1.0, 0.85, 0.1])
"""RGB in [0, 1] of pinned particles (inverse mass 0) in the particles view."""
_NO_IMAGE = np.zeros((1, 1, 3), np.uint8)
CLIP_INSET = 1e-9
"""How far inside the near and far planes solids are clipped (clip-space units), so the new corners project
inside the depth range despite rounding."""
_NO_UV_LO, _NO_UV_SPAN = np.zeros(2), np.ones(2)            # a solid's checker is in its own uv [m]


class SoftRenderer:
    """Draws cloths into pygame Surfaces of one size; keeps its buffers and per-cloth surfaces between frames.

    size (w, h) [px] must match every surface drawn to (``resize`` for a new window size). After ``draw``:
    ``color`` (w, h) uint32 0xAARRGGBB and ``depth`` (w, h) float32 in [0, 1] (inf where no cloth) hold the
    frame, indexed [x, y] like ``pygame.surfarray``; ``covered`` is the cloth's pixel mask.
    """

    def __init__(self, size: tuple[int, int]) -> None:
        self._overlay: pygame.Surface | None = None
        self._surfaces: dict[int, tuple] = {}        # id(cloth) → (cloth, ClothSurface, uv_lo, uv_span)
        self._screen = np.empty((0, 4))                # projected vertices, grown to the largest cloth
        self._valid = np.empty(0, np.bool_)
        self._default_style = ClothStyle()             # made once: validation costs more than a small cloth
        self._default_settings = RenderSettings()
        self._solids: dict[tuple[str, int], tuple] = {}  # solid key → (shape, its look, _SolidMesh)
        self.resize(size)

    def resize(self, size: tuple[int, int]) -> None:
        """Reallocate the buffers for surfaces of ``size`` (w, h) [px], each >= 1."""
        try:
            w, h = (int(v) for v in size)
            ok = (w, h) == tuple(size) and w >= 1 and h >= 1
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ValueError(f"SoftRenderer.size = {size!r}: expected (width, height) in whole pixels >= 1")
        self.size = (w, h)
        """Surface size (w, h) [px] this renderer draws to (``resize`` changes it)."""
        self.color = np.zeros((w, h), np.uint32, order="F")      # x contiguous, like a surface's rows
        """The last frame's cloth pixels (w, h) uint32 0xAARRGGBB, indexed [x, y] like ``pygame.surfarray``."""
        self.depth = np.full((w, h), _k.DEPTH_CLEAR, np.float32, order="F")
        """The last frame's depth (w, h) float32 in [0, 1], inf where no cloth, indexed [x, y]."""
        self._bbox = np.array([w, h, -1, -1], np.int64)          # drawn pixels, inclusive; empty when x1 < x0
        self._target = hold(_k.RasterTarget(self.color, self.depth, self._bbox))
        self._overlay = None

    @property
    def covered(self) -> np.ndarray:
        """Pixels the last ``draw`` covered with cloth, (w, h) bool."""
        return self.depth <= 1.0

    def draw(self, app_or_clothes: App | Cloth | Iterable[Cloth], surface: pygame.Surface, camera: Camera,
             *, style: ClothStyle | None = None, settings: RenderSettings | None = None,
             solids: bool = False) -> pygame.Rect:
        """Draw every cloth of an App (or the Cloth or cloths given) onto ``surface`` as seen by ``camera``.

        Each cloth's style, in order: ``style`` if passed (it wins for every cloth); else the ClothStyle
        component on the cloth's entity — for an App its own entities, for a bare Cloth or cloths the entity
        holding that Cloth object in whichever App (esper world) has it (``entity_styles``); else
        ``ClothStyle()``. settings: default the App's RenderSettings resource, else ``RenderSettings()``.
        ``solids=True`` (an App only) also draws its Props and, when ``settings.show_colliders``, its active
        colliders, shaded in their colours with the cloth in one depth buffer, as the GL renderer does
        (``solids.visible_solids``); off by default, for a game that draws its own bodies. Returns the rectangle of
        pixels changed (empty when nothing is visible), for ``pygame.display.update(rect)``. Raises ValueError if
        the surface size is not the renderer's, TypeError for a wrong kind of argument."""
        if not isinstance(surface, pygame.Surface):
            raise TypeError(f"SoftRenderer.draw surface = {surface!r}: expected a pygame.Surface")
        if surface.get_size() != self.size:
            raise ValueError(f"SoftRenderer.draw surface size = {surface.get_size()}: the renderer was made "
                             f"for {self.size}; call resize({surface.get_size()}) first")
        if not isinstance(camera, Camera):
            raise TypeError(f"SoftRenderer.draw camera = {camera!r}: expected a components.Camera")
        if settings is None:
            found = app_or_clothes.resources.get(RenderSettings) if isinstance(app_or_clothes, App) else None
            settings = found or self._default_settings
        w, h = self.size
        mvp = camera.projection(w / h) @ camera.view()
        _k.clear(self._bbox, self.color, self.depth)
        surfaces = {}
        blend = app_or_clothes.resources.get(StepBlend) if isinstance(app_or_clothes, App) else None
        for entity, cloth, cloth_style in self._gather(app_or_clothes, style):
            if not cloth_style.visible:
                continue
            x = cloth.x if blend is None or entity is None else blend.positions(app_or_clothes, entity, cloth)
            if settings.view == "particles":
                self._draw_particles(cloth, cloth_style, settings, mvp, x)
                if id(cloth) in self._surfaces:                        # keep it for the next shaded frame
                    surfaces[id(cloth)] = self._surfaces[id(cloth)]
            elif cloth.triangles.shape[0]:                             # ropes show in the particles view only
                surfaces[id(cloth)] = self._draw_surface(cloth, cloth_style, settings, mvp, x)
        self._surfaces = surfaces                                      # forget cloths no longer drawn
        if solids:
            if not isinstance(app_or_clothes, App):
                raise TypeError(f"SoftRenderer.draw solids=True: draws an App's colliders and props; got "
                                f"{type(app_or_clothes).__name__}, pass the App")
            self._draw_solids(app_or_clothes, settings, mvp)
        x0, y0, x1, y1 = (int(v) for v in self._bbox)
        if x1 < x0:
            return pygame.Rect(0, 0, 0, 0)
        rect = pygame.Rect(x0, y0, x1 - x0 + 1, y1 - y0 + 1)
        self._composite(surface, rect)
        return rect

    # --- per frame ---------------------------------------------------------------------------------
    def _gather(self, source: Any, style: ClothStyle | None) -> list[tuple[int | None, Cloth, ClothStyle]]:
        """[(entity, cloth, style)] to draw (entity None for bare Cloths), each style by the rule: the ``style``
        passed, else the ClothStyle on the cloth's entity (found in the App given, or for bare Cloths in the esper
        world that holds them), else ``ClothStyle()``."""
        default = self._default_style
        if isinstance(source, App):
            return [(entity, cloth, style or source.try_get(entity, ClothStyle) or default)
                    for entity, cloth in source.query(Cloth)]
        if isinstance(source, Cloth):
            clothes = [source]
        elif isinstance(source, Iterable) and not isinstance(source, (str, bytes)):
            clothes = list(source)
            for i, cloth in enumerate(clothes):
                if not isinstance(cloth, Cloth):
                    raise TypeError(f"SoftRenderer.draw clothes[{i}] = {cloth!r}: expected a Cloth")
        else:
            raise TypeError(f"SoftRenderer.draw app_or_clothes = {source!r}: expected an App, a Cloth or Cloths")
        if style is not None:
            return [(None, cloth, style) for cloth in clothes]
        return [(None, cloth, found or default) for cloth, found in zip(clothes, entity_styles(clothes))]

    def _draw_surface(self, cloth: Cloth, style: ClothStyle, settings: RenderSettings, mvp: np.ndarray,
                      x: np.ndarray) -> tuple:
        """Refresh the cloth's ClothSurface (kept while its topology and subdivision last) from positions ``x``
        (n, 3) [m] (``cloth.x``, or between two steps), project and rasterize it; return its cache entry (cloth,
        surface, uv_lo, uv_span)."""
        entry = self._surfaces.get(id(cloth))
        if entry is None or entry[0] is not cloth or not entry[1].matches(cloth, style.subdivision):
            fine = ClothSurface(cloth, style.subdivision)
            uv_lo = fine.uv.min(axis=0)
            entry = (cloth, fine, uv_lo, np.maximum(fine.uv.max(axis=0) - uv_lo, 1e-9))
        _, fine, uv_lo, uv_span = entry
        view = settings.view
        fine.update(cloth, strain=view == "strain", x=x)
        screen, valid = self._scratch_for(fine.vertex_count)
        _k.project_points(fine.x, mvp, self.size[0], self.size[1], screen, valid)
        texture = style.texture
        kind = _k.NO_TEXTURE if texture is None or isinstance(texture, str) and texture == "weave" or view != "shaded" else \
            _k.CHECKER if isinstance(texture, str) else _k.IMAGE         # "weave": plain here (threads are finer
                                                                          # than sprite-scale pixels, no filtering)
        mesh = hold(_k.RasterMesh(screen, valid, fine.normal, fine.uv, fine.strain, fine.triangles))
        image = texture if kind == _k.IMAGE else _NO_IMAGE
        textured = hold(_k.RasterTexture(kind, float(style.checker_scale), image, uv_lo, uv_span))
        _k.rasterize(mesh, settings.light_direction, style.front_color, style.back_color, settings.ambient,
                     _MODES[view], settings.strain_scale, textured, WIRE_WIDTH if view == "wireframe" else 0.0,
                     self._target)
        return entry

    def _draw_particles(self, cloth: Cloth, style: ClothStyle, settings: RenderSettings, mvp: np.ndarray,
                        x: np.ndarray) -> None:
        """Splat the cloth's particles (at ``x`` (n, 3) [m]) as squares of ``settings.point_size`` px, pinned ones
        in PINNED_COLOR."""
        screen, valid = self._scratch_for(cloth.particle_count)
        _k.project_points(x, mvp, self.size[0], self.size[1], screen, valid)
        _k.splat_points(screen, valid, cloth.inv_mass, settings.point_size, style.front_color, PINNED_COLOR,
                        self._target)

    def _draw_solids(self, app: App, settings: RenderSettings, mvp: np.ndarray) -> None:
        """Place, project and rasterize every solid of ``visible_solids`` (tessellated again only when its shape
        or sizes change); forget the tessellations of gone ones."""
        kept = {}
        for solid in visible_solids(app, settings):
            entry = self._solids.get(solid.key)
            look = solid.shape.look()
            if entry is None or entry[0] is not solid.shape or entry[1] != look:
                entry = (solid.shape, look, _SolidMesh(solid.shape.tessellate()))
            kept[solid.key] = entry
            mesh = entry[2]
            mesh.place(placed(app, app.resources.get(StepBlend), solid))
            x, normal, uv = clip_triangles(mesh.x, mesh.normal, mesh.uv, mvp)
            screen, valid = self._scratch_for(x.shape[0])
            _k.project_points(x, mvp, self.size[0], self.size[1], screen, valid)
            color = np.asarray(solid.color, np.float64)
            texture = _k.RasterTexture(_k.CHECKER if solid.tiles > 0 else _k.NO_TEXTURE, float(solid.tiles),
                                       _NO_IMAGE, _NO_UV_LO, _NO_UV_SPAN)
            triangles = mesh.triangles if x is mesh.x else _triangle_list(x.shape[0])
            strain = mesh.strain if x is mesh.x else np.zeros(x.shape[0])
            _k.rasterize(hold(_k.RasterMesh(screen, valid, normal, uv, strain, triangles)),
                         settings.light_direction, color, color, settings.ambient, _k.SHADED, settings.strain_scale,
                         hold(texture), 0.0, self._target)
        self._solids = kept

    def _scratch_for(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Projected points (n, 4) and their validity (n,): views of buffers grown to the largest n seen."""
        if self._valid.shape[0] < n:
            self._screen, self._valid = np.empty((n, 4)), np.empty(n, np.bool_)
        return self._screen[:n], self._valid[:n]

    def _composite(self, surface: pygame.Surface, rect: pygame.Rect) -> None:
        """Copy the covered pixels inside ``rect`` into ``surface`` (32-bit: in place; else via an overlay)."""
        target = surface
        if surface.get_bytesize() != 4:                          # 8/16/24-bit: repack through a 32-bit overlay
            if self._overlay is None:
                self._overlay = pygame.Surface(self.size, pygame.SRCALPHA, 32)
            target = self._overlay
            target.fill((0, 0, 0, 0), rect)
        masks = target.get_masks()
        shifts = [(m & -m).bit_length() - 1 if m else 0 for m in masks[:3]]
        pixels = pygame.surfarray.pixels2d(target)               # locks target until deleted
        try:
            _k.composite(self.color, self.depth, self._bbox, shifts[0], shifts[1], shifts[2], masks[3], pixels)
        finally:
            del pixels
        if target is not surface:
            surface.blit(target, rect, area=rect)


class _SolidMesh:
    """A solid's tessellation (``collider.Shape.tessellate``, a triangle list in its local frame) and its world
    positions and normals, rewritten in place each frame (``place``)."""

    def __init__(self, rows: np.ndarray) -> None:
        self.local = np.ascontiguousarray(rows[:, :6])
        """Local positions [m] and unit normals, (3·t, 6)."""
        self.uv = np.ascontiguousarray(rows[:, 6:8])
        """The tessellation's uv [m] (a plane's checker), (3·t, 2)."""
        n = rows.shape[0]
        self.triangles = _triangle_list(n)
        self.x = np.empty((n, 3))
        self.normal = np.empty((n, 3))
        self.strain = np.zeros(n)

    def place(self, model: np.ndarray) -> None:
        """World positions and normals under the 4×4 rigid ``model`` matrix (rotation and translation)."""
        rotation = model[:3, :3].T
        np.matmul(self.local[:, :3], rotation, out=self.x)
        self.x += model[:3, 3]
        np.matmul(self.local[:, 3:], rotation, out=self.normal)


def _triangle_list(n: int) -> np.ndarray:
    """The triangles (n/3, 3) int32 of a triangle list of n corners, read-only like a ClothSurface's (one type
    for the rasterizer: no second compile)."""
    triangles = np.arange(n, dtype=np.int32).reshape(-1, 3)
    triangles.flags.writeable = False
    return triangles


def clip_triangles(x: np.ndarray, normal: np.ndarray, uv: np.ndarray,
                   mvp: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Clip a triangle list (x (3·t, 3) [m], unit normals, uv) against the view's near and far planes (clip
    space: −w ≤ z ≤ w; Sutherland & Hodgman 1974), so a large solid reaching behind the eye (a floor's 120 m
    square) keeps its visible part instead of losing every triangle with a vertex out of range (the rasterizer
    drops those). Returns the arrays unchanged when nothing crosses, else new triangle lists (a triangle cut by
    a plane becomes one or two). Attributes are interpolated linearly in world space."""
    if x.shape[0] == 0:
        return x, normal, uv
    h = x @ mvp[2:4, :3].T + mvp[2:4, 3]                        # clip z and w of every vertex
    if (h[:, 1] + h[:, 0]).min() > CLIP_INSET and (h[:, 1] - h[:, 0]).min() > CLIP_INSET:
        return x, normal, uv                                    # (a solid inside the view: nothing to cut)
    rows = np.concatenate([x, normal, uv], axis=1).reshape(-1, 3, 8)
    for sign in (1.0, -1.0):                                    # w + z ≥ 0 (near), w − z ≥ 0 (far)
        plane = mvp[3] + sign * mvp[2]
        rows = _clip_by(rows, rows[..., :3].reshape(-1, 3) @ plane[:3] + plane[3] - CLIP_INSET)
    flat = rows.reshape(-1, 8)
    normals = flat[:, 3:6] / np.maximum(np.linalg.norm(flat[:, 3:6], axis=1, keepdims=True), 1e-12)
    return np.ascontiguousarray(flat[:, :3]), np.ascontiguousarray(normals), np.ascontiguousarray(flat[:, 6:8])


def _clip_by(tris: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Triangles (t, 3, 8) of vertex rows clipped to d ≥ 0 (d: (3·t,) the plane's value at each vertex)."""
    d = d.reshape(-1, 3)
    inside = d >= 0.0
    count = inside.sum(axis=1)
    keep = [tris[count == 3]]
    one, two = count == 1, count == 2
    if one.any():                                   # one corner in: the triangle shrinks to it
        a = np.argmax(inside[one], axis=1)
        keep.append(_cut(tris[one], d[one], a, lone=True))
    if two.any():                                   # two corners in: a quad, two triangles
        a = np.argmin(inside[two], axis=1)
        keep.append(_cut(tris[two], d[two], a, lone=False))
    return np.concatenate(keep) if len(keep) > 1 else keep[0]


def _cut(tris: np.ndarray, d: np.ndarray, a: np.ndarray, lone: bool) -> np.ndarray:
    """Cut each triangle at its edges from corner ``a`` (the lone corner on its side of the plane), keeping the
    corner's side when ``lone``, else the other two corners' side (as two triangles); winding kept."""
    k = np.arange(tris.shape[0])
    b, c = (a + 1) % 3, (a + 2) % 3
    pa, pb, pc = tris[k, a], tris[k, b], tris[k, c]
    da, db, dc = d[k, a][:, None], d[k, b][:, None], d[k, c][:, None]
    ab = pa + (pb - pa) * (da / (da - db))            # where the edges from a cross the plane
    ac = pa + (pc - pa) * (da / (da - dc))
    if lone:
        return np.stack([pa, ab, ac], axis=1)
    return np.concatenate([np.stack([ab, pb, pc], axis=1), np.stack([ab, pc, ac], axis=1)])


# --- style lookup --------------------------------------------------------------------------------------
def entity_styles(clothes: list[Cloth]) -> list[ClothStyle | None]:
    """The ClothStyle on each cloth's entity (None where it has none or is in no world), found by identity.

    A bare Cloth does not know its App, so each esper world is searched for the entity holding that very
    Cloth object: the current world first (inside an App's RENDER stage, or a game with ``App(world=...)``
    in its own world: one cached query, no switch), then the others (an App's private world: Loom's calls leave the
    caller's world current), switching back to the caller's world before returning, also on an exception.
    One cached query per world searched per call, nothing per particle."""
    found: list[ClothStyle | None] = [None] * len(clothes)
    wanted: dict[int, list[int]] = {}                 # id(cloth) → its places in ``clothes`` (held: ids stay valid)
    for i, cloth in enumerate(clothes):
        wanted.setdefault(id(cloth), []).append(i)
    current = esper.current_world
    try:
        for world in [current, *(w for w in esper.list_worlds() if w != current)]:
            if not wanted:
                break
            if world != esper.current_world:
                esper.switch_world(world)
            for entity, cloth in esper.get_component(Cloth):
                places = wanted.pop(id(cloth), None)
                if places is not None:
                    style = esper.try_component(entity, ClothStyle)
                    for i in places:
                        found[i] = style
    finally:
        if esper.current_world != current:
            esper.switch_world(current)
    return found


# --- plugin --------------------------------------------------------------------------------------------
class SoftRenderPlugin:
    """Draw every Cloth onto ``surface`` once per frame in the RENDER stage (system ``draw_cloth_soft``).

    camera: the Camera to draw with; None: the first entity with a Camera component, else ``Camera()`` (as
    the GL renderer chooses). style overrides every cloth's ClothStyle; ``solids=True`` draws the App's props and
    colliders too (``SoftRenderer.draw``). The renderer is
    ``plugin.renderer``; the rectangle drawn last frame ``plugin.last_rect``. RENDER runs at the end of
    ``app.update``, so draw the game's background before calling it."""

    def __init__(self, surface: pygame.Surface, camera: Camera | None = None, *,
                 style: ClothStyle | None = None, solids: bool = False) -> None:
        if not isinstance(surface, pygame.Surface):
            raise TypeError(f"SoftRenderPlugin surface = {surface!r}: expected a pygame.Surface")
        self.surface = surface
        self.camera = camera
        self.style = style
        self.solids = bool(solids)
        self.renderer = SoftRenderer(surface.get_size())
        self.last_rect = pygame.Rect(0, 0, 0, 0)
        self._default_camera = Camera()

    def build(self, app: App) -> None:
        app.insert_resource(RenderSettings(), replace=False)
        app.add_system(self.draw_cloth, Stage.RENDER, name="draw_cloth_soft")
        add_step_blend(app)                              # drawing between steps (on in the window loop)
        app.insert_resource(FrameCapture(save=self.save_frame, grab=self.grab_frame), replace=False)   # --screenshot, headless

    def grab_frame(self, app: App) -> np.ndarray:
        """Draw the current state onto the plugin's surface and return it, (h, w, 3) uint8, top row first."""
        self.draw_cloth(app, 0.0)
        return np.ascontiguousarray(pygame.surfarray.pixels3d(self.surface).transpose(1, 0, 2))

    def save_frame(self, app: App, path: str) -> None:
        """Draw the current state onto the plugin's surface and write it to ``path`` as a PNG (OSError naming
        the path if it cannot be written): what ``--screenshot`` saves when the game renders with this plugin."""
        save_png(path, self.grab_frame(app))

    def draw_cloth(self, app: App, dt: float) -> None:
        """Draw the App's cloths onto the plugin's surface (dt, the real frame time, is unused)."""
        camera = self.camera or next((c for _, c in app.query(Camera)), None) or self._default_camera
        self.last_rect = self.renderer.draw(app, self.surface, camera, style=self.style, solids=self.solids)
