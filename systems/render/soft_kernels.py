"""Software rasterizer kernels: project, shade and z-buffer cloth triangles into (w, h) pixel buffers.

Used by ``systems/render/soft.py``; kept apart so the API file reads as API (Newton's solver/kernels split).
Normals, Loop subdivision and per-vertex strain come from the shared ``systems/render/surface.py`` (``ClothSurface``).
Buffers are indexed [x, y] like ``pygame.surfarray`` (x right, y down, pixel centres at +0.5) and laid out
like a surface's pixels (Fortran order: x contiguous), so every kernel walks rows outer, x inner. Colours
come in as RGB in [0, 1] and are stored packed 0xAARRGGBB; ``composite`` repacks them into the target
surface's channel layout. Every kernel takes arrays, scalars and the structs below, writes only the arrays it
names last, and never raises: a triangle with a non-finite or clipped vertex is skipped. The structs group
arrays that travel together: ``RasterTarget`` the renderer's buffers, ``RasterMesh`` one projected cloth,
``RasterTexture`` its texture (named tuples, held: ``loom.systems.shared.held``; one argument each).
"""
from __future__ import annotations

import math

from typing import NamedTuple

import numba
import numpy as np

DEPTH_CLEAR = np.float32(np.inf)
"""Depth of a pixel no cloth covers (every drawn depth is in [0, 1])."""
SHADED, NORMALS, STRAIN, FLAT = 0, 1, 2, 3
"""``rasterize`` colour modes, as in the GL renderer's cloth shader (systems/render/gl.py): side colour ×
texture × two-sided Lambert; RGB = front normal · 0.5 + 0.5; lit strain heatmap (light grey at rest, red
stretched, blue compressed); unlit side colour (the wireframe view)."""
NO_TEXTURE, CHECKER, IMAGE = 0, 1, 2
"""``rasterize`` texture kinds (ClothStyle.texture None, "checker", an image)."""
CHECKER_DARK = 191.0 / 255.0
"""Brightness of the dark checker squares relative to the light ones [-] (the GL renderer's 2×2 texture)."""
STRAIN_REST = np.array([0.95, 0.95, 0.95])
STRAIN_STRETCH = np.array([0.9, 0.08, 0.05])
STRAIN_COMPRESS = np.array([0.1, 0.25, 0.95])
"""Strain heatmap colours, RGB in [0, 1]: at rest, at +strain_scale and at −strain_scale (as the GL shader)."""


class RasterTarget(NamedTuple):
    """The buffers every kernel draws into (held: ``loom.systems.shared.held``)."""

    color: np.ndarray
    """(w, h) uint32 0xAARRGGBB."""
    depth: np.ndarray
    """(w, h) float32 in [0, 1]; DEPTH_CLEAR where no cloth is."""
    bbox: np.ndarray
    """(4,) int64 [x0, y0, x1, y1]: inclusive pixel bounds of everything written (empty when x1 < x0)."""


class RasterMesh(NamedTuple):
    """One cloth surface as ``rasterize`` reads it (held)."""

    screen: np.ndarray
    """Projected vertices, (n, 4) (``project_points``)."""
    valid: np.ndarray
    """Drawable vertices, (n,) bool (``project_points``)."""
    normals: np.ndarray
    """Unit vertex normals, (n, 3)."""
    uv: np.ndarray
    """Rest material coordinates, (n, 2) [m]."""
    strain: np.ndarray
    """Strain per vertex, (n,) [-]."""
    triangles: np.ndarray
    """(t, 3) int, counter-clockwise from the front."""


class RasterTexture(NamedTuple):
    """What multiplies the SHADED colour (held)."""

    kind: int
    """NO_TEXTURE, CHECKER or IMAGE."""
    checker_scale: float
    """Side of a checker square [m] of rest uv (the dark ones at CHECKER_DARK)."""
    image: np.ndarray
    """(h, w, 3) uint8, row 0 at the top, nearest texel."""
    uv_lo: np.ndarray
    """Rest uv at the image's bottom-left corner, (2,) [m]."""
    uv_span: np.ndarray
    """Rest uv extent the image is stretched over, (2,) [m]."""


@numba.njit(cache=True)
def project_points(x, mvp, width, height, screen, valid):
    """Project world points to pixels, with the depth and the 1/w that perspective-correct interpolation needs.

    x (n, 3) [m]; mvp (4, 4) clip-from-world matrix (Camera.projection(aspect) @ Camera.view()); width, height
    [px]. Writes screen (n, 4): x right [px], y down [px], depth in [0, 1] (as ``Camera.project``), 1/w_clip;
    and valid (n,) bool: False where the point lies behind the eye, outside the near/far range, or is not
    finite. A triangle with such a vertex is not drawn (no clipping: cloth crossing the near plane loses
    those triangles).
    """
    for i in range(x.shape[0]):
        p0, p1, p2 = x[i, 0], x[i, 1], x[i, 2]
        cx = mvp[0, 0] * p0 + mvp[0, 1] * p1 + mvp[0, 2] * p2 + mvp[0, 3]
        cy = mvp[1, 0] * p0 + mvp[1, 1] * p1 + mvp[1, 2] * p2 + mvp[1, 3]
        cz = mvp[2, 0] * p0 + mvp[2, 1] * p1 + mvp[2, 2] * p2 + mvp[2, 3]
        cw = mvp[3, 0] * p0 + mvp[3, 1] * p1 + mvp[3, 2] * p2 + mvp[3, 3]
        ok = cw > 1e-12 and math.isfinite(cx) and math.isfinite(cy) and math.isfinite(cz)
        if ok:
            inv = 1.0 / cw
            nz = cz * inv
            ok = -1.0 <= nz <= 1.0
            screen[i, 0] = (cx * inv + 1.0) * 0.5 * width
            screen[i, 1] = (1.0 - cy * inv) * 0.5 * height
            screen[i, 2] = (nz + 1.0) * 0.5
            screen[i, 3] = inv
        valid[i] = ok


@numba.njit(cache=True)
def _pack(r, g, b):
    """0xFFRRGGBB of a colour in [0, 1] per channel (clamped)."""
    ri = min(255, max(0, int(r * 255.0 + 0.5)))
    gi = min(255, max(0, int(g * 255.0 + 0.5)))
    bi = min(255, max(0, int(b * 255.0 + 0.5)))
    return np.uint32(0xFF000000 | (ri << 16) | (gi << 8) | bi)


@numba.njit(cache=True)
def _corner_color(mode, i, sign, normals, strain, light, side, ambient, strain_scale, out):
    """Colour (3,) in [0, 1] of vertex i for one triangle in ``mode`` → out.

    sign is +1 for a front-facing triangle, −1 for a back-facing one: lighting turns the normal toward the eye."""
    if mode == NORMALS:
        for ch in range(3):
            out[ch] = 0.5 + 0.5 * normals[i, ch]
        return
    if mode == FLAT:
        for ch in range(3):
            out[ch] = side[ch]
        return
    d = normals[i, 0] * light[0] + normals[i, 1] * light[1] + normals[i, 2] * light[2]
    shade = ambient + (1.0 - ambient) * max(0.0, sign * d)
    if mode == STRAIN:
        t = strain[i] / strain_scale
        t = min(1.0, max(-1.0, t)) if math.isfinite(t) else 0.0
        end = STRAIN_STRETCH if t >= 0.0 else STRAIN_COMPRESS
        t = abs(t)
        for ch in range(3):
            out[ch] = ((1.0 - t) * STRAIN_REST[ch] + t * end[ch]) * shade
        return
    for ch in range(3):
        out[ch] = side[ch] * shade


@numba.njit(cache=True)
def rasterize(mesh, light, front_rgb, back_rgb, ambient, mode, strain_scale, texture, wire_width, target):
    """Draw triangles with a depth test: two-sided Lambert in the front or back colour, or a debug view.

    mesh: a held ``RasterMesh``; light (3,) unit world direction toward the light; front_rgb, back_rgb (3,) in
    [0, 1]; ambient [-]: shade = ambient + (1 − ambient)·max(0, n·l) with n turned toward the eye. mode
    SHADED, NORMALS, STRAIN (strain_scale [-]: the strain shown at full red or blue) or FLAT. texture: a
    held ``RasterTexture``, multiplies the SHADED colour; wire_width [px]: when > 0 draw only the pixels nearer
    than this to an edge (wireframe), else fill. target: a held ``RasterTarget``.

    A triangle is front-facing when its projected corners run clockwise in y-down pixels (counter-clockwise
    as the eye sees them), i.e. its signed pixel area is negative. Colours are computed at the corners and
    interpolated (Gouraud; the GL renderer lights per pixel), perspective-correctly (weights × 1/w) like the
    texture coordinates. A pixel is drawn
    when its centre lies inside or on the triangle (no gaps between neighbours; a shared edge may be written
    twice, at equal depth) and its depth — affine in screen space, exact for NDC depth under perspective —
    is below depth[x, y]. Writes the target's color and depth, and grows its bbox.
    Experiments (cape + flag benchmark, interleaved A/B): edge lengths only for the wireframe saved 10 % at
    subdivision 1 and 28 % at 2; rejecting triangles with no pixel centre *before* the corner colours was
    25–40 % slower (kept after); 1-D row views of depth and color were 10–20 % slower (unlike ``composite``).
    """
    screen, valid, normals, uv, strain, triangles = mesh.value
    texture_kind, checker_scale, image, uv_lo, uv_span = texture.value
    color, depth, bbox = target.value
    width, height = color.shape[0], color.shape[1]
    rgb = np.empty((3, 3))                               # corner × channel
    tex = np.zeros((3, 2))                               # corner × (texture column, row) or (u, v) / scale
    image_w, image_h = image.shape[1], image.shape[0]
    for k in range(triangles.shape[0]):
        a, b, c = triangles[k, 0], triangles[k, 1], triangles[k, 2]
        if not (valid[a] and valid[b] and valid[c]):
            continue
        area = (screen[b, 0] - screen[a, 0]) * (screen[c, 1] - screen[a, 1]) \
            - (screen[b, 1] - screen[a, 1]) * (screen[c, 0] - screen[a, 0])
        if abs(area) < 1e-12:
            continue                                     # edge-on: covers no pixel centre
        front = area < 0.0
        if front:                                        # reorder to positive area for the edge tests
            b, c = c, b
            area = -area
        side = front_rgb if front else back_rgb
        sign = 1.0 if front else -1.0
        for v, i in enumerate((a, b, c)):
            _corner_color(mode, i, sign, normals, strain, light, side, ambient, strain_scale, rgb[v])
            if texture_kind == CHECKER:
                tex[v, 0], tex[v, 1] = uv[i, 0] / checker_scale, uv[i, 1] / checker_scale
            elif texture_kind == IMAGE:
                tex[v, 0] = (uv[i, 0] - uv_lo[0]) / uv_span[0] * image_w
                tex[v, 1] = (1.0 - (uv[i, 1] - uv_lo[1]) / uv_span[1]) * image_h
        ax, ay, az, aw = screen[a, 0], screen[a, 1], screen[a, 2], screen[a, 3]
        bx, by, bz, bw = screen[b, 0], screen[b, 1], screen[b, 2], screen[b, 3]
        cx, cy, cz, cw = screen[c, 0], screen[c, 1], screen[c, 2], screen[c, 3]
        # pixels whose centre (px + 0.5) can lie in the triangle, clamped to the buffer
        x0 = max(0, int(math.ceil(min(ax, bx, cx) - 0.5)))
        x1 = min(width - 1, int(math.floor(max(ax, bx, cx) - 0.5)))
        y0 = max(0, int(math.ceil(min(ay, by, cy) - 0.5)))
        y1 = min(height - 1, int(math.floor(max(ay, by, cy) - 0.5)))
        if x0 > x1 or y0 > y1:
            continue                                     # off screen, or too small to hold a pixel centre
        inv_area = 1.0 / area
        # 1 / edge length [1/px]: edge value × this = distance from that edge [px] (single-pass wireframe)
        la = lb = lc = 0.0
        if wire_width > 0.0:
            la = 1.0 / max(math.hypot(cx - bx, cy - by), 1e-12)
            lb = 1.0 / max(math.hypot(ax - cx, ay - cy), 1e-12)
            lc = 1.0 / max(math.hypot(bx - ax, by - ay), 1e-12)
        # edge values at the first pixel centre of each row, then stepped by their x slopes
        dwa, dwb, dwc = -(cy - by), -(ay - cy), -(by - ay)
        drawn = False
        for py in range(y0, y1 + 1):                     # rows outer: x is the contiguous axis
            fx, fy = x0 + 0.5, py + 0.5
            wa = (cx - bx) * (fy - by) - (cy - by) * (fx - bx)
            wb = (ax - cx) * (fy - cy) - (ay - cy) * (fx - cx)
            wc = (bx - ax) * (fy - ay) - (by - ay) * (fx - ax)
            for px in range(x0, x1 + 1):
                if wa >= 0.0 and wb >= 0.0 and wc >= 0.0 and (
                        wire_width <= 0.0 or min(wa * la, wb * lb, wc * lc) < wire_width):
                    z = (wa * az + wb * bz + wc * cz) * inv_area
                    if z < depth[px, py]:
                        depth[px, py] = z
                        drawn = True
                        qa, qb, qc = wa * aw, wb * bw, wc * cw        # perspective-correct weights
                        q = 1.0 / (qa + qb + qc)
                        qa, qb, qc = qa * q, qb * q, qc * q
                        r = qa * rgb[0, 0] + qb * rgb[1, 0] + qc * rgb[2, 0]
                        g = qa * rgb[0, 1] + qb * rgb[1, 1] + qc * rgb[2, 1]
                        bl = qa * rgb[0, 2] + qb * rgb[1, 2] + qc * rgb[2, 2]
                        if texture_kind != NO_TEXTURE:
                            s = qa * tex[0, 0] + qb * tex[1, 0] + qc * tex[2, 0]
                            t = qa * tex[0, 1] + qb * tex[1, 1] + qc * tex[2, 1]
                            if texture_kind == CHECKER:
                                if (int(math.floor(s)) + int(math.floor(t))) & 1:
                                    r, g, bl = r * CHECKER_DARK, g * CHECKER_DARK, bl * CHECKER_DARK
                            else:
                                col = min(image_w - 1, max(0, int(s)))
                                row = min(image_h - 1, max(0, int(t)))
                                r *= image[row, col, 0] * (1.0 / 255.0)
                                g *= image[row, col, 1] * (1.0 / 255.0)
                                bl *= image[row, col, 2] * (1.0 / 255.0)
                        color[px, py] = _pack(r, g, bl)
                wa += dwa
                wb += dwb
                wc += dwc
        if drawn:
            bbox[0] = min(bbox[0], x0)
            bbox[1] = min(bbox[1], y0)
            bbox[2] = max(bbox[2], x1)
            bbox[3] = max(bbox[3], y1)


@numba.njit(cache=True)
def splat_points(screen, valid, inv_mass, size, rgb, pinned_rgb, target):
    """Draw each particle as a depth-tested square of ``size`` [px], pinned ones (inv_mass 0) in pinned_rgb.

    screen (n, 4), valid (n,) from ``project_points``; inv_mass (n,) [1/kg]; rgb, pinned_rgb (3,) in [0, 1].
    Writes the held ``RasterTarget``'s color and depth and grows its bbox like ``rasterize``."""
    color, depth, bbox = target.value
    width, height = color.shape[0], color.shape[1]
    half = 0.5 * size
    for i in range(screen.shape[0]):
        if not valid[i]:
            continue
        x0 = max(0, int(math.ceil(screen[i, 0] - half - 0.5)))
        x1 = min(width - 1, int(math.floor(screen[i, 0] + half - 0.5)))
        y0 = max(0, int(math.ceil(screen[i, 1] - half - 0.5)))
        y1 = min(height - 1, int(math.floor(screen[i, 1] + half - 0.5)))
        if x0 > x1 or y0 > y1:
            continue
        z = screen[i, 2]
        src = pinned_rgb if inv_mass[i] == 0.0 else rgb
        packed = _pack(src[0], src[1], src[2])
        for py in range(y0, y1 + 1):
            for px in range(x0, x1 + 1):
                if z < depth[px, py]:
                    depth[px, py] = z
                    color[px, py] = packed
        bbox[0] = min(bbox[0], x0)
        bbox[1] = min(bbox[1], y0)
        bbox[2] = max(bbox[2], x1)
        bbox[3] = max(bbox[3], y1)


@numba.njit(cache=True)
def clear(bbox, color, depth):
    """Reset the pixels inside bbox (4,) [x0, y0, x1, y1] (inclusive; empty when x1 < x0) to no cloth.

    Writes color (w, h) uint32 = 0 and depth (w, h) float32 = inf there, then bbox = empty."""
    for py in range(bbox[1], bbox[3] + 1):             # row slices: numba fills them like memset (7× a loop)
        color[bbox[0]:bbox[2] + 1, py] = 0
        depth[bbox[0]:bbox[2] + 1, py] = np.inf
    bbox[0], bbox[1] = color.shape[0], color.shape[1]
    bbox[2], bbox[3] = -1, -1


@numba.njit(cache=True)
def composite(color, depth, bbox, r_shift, g_shift, b_shift, alpha_mask, target):
    """Copy the covered pixels (finite depth) inside bbox into a 32-bit surface's pixels; leave the rest.

    color (w, h) uint32 0xAARRGGBB; depth (w, h) float32; bbox (4,) int64 inclusive; r/g/b_shift [bit]: where
    the surface keeps each 8-bit channel; alpha_mask: the surface's alpha bits (set opaque), 0 if it has none.
    Writes target (w, h) uint32 (a ``pygame.surfarray.pixels2d`` view): the game's background stays where
    no cloth is — the depth buffer is the alpha key."""
    x0, x1 = bbox[0], bbox[2] + 1
    for py in range(bbox[1], bbox[3] + 1):             # 1-D row views: twice as fast as 2-D indexing
        d, c, t = depth[x0:x1, py], color[x0:x1, py], target[x0:x1, py]
        for i in range(d.shape[0]):
            if d[i] <= 1.0:
                argb = np.int64(c[i])
                t[i] = np.uint32(((argb >> 16) & 0xFF) << r_shift | ((argb >> 8) & 0xFF) << g_shift
                                 | (argb & 0xFF) << b_shift | alpha_mask)
