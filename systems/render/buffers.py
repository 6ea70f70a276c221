"""Vertex buffers: one cloth's float32 positions, normals and uv, ready for a game's own shader.

A 3D game that draws the cloth itself (its own moderngl, pyglet or arcade program) asks once per cloth
(``loom.vertex_buffers(app, entity)``) and calls ``refresh()`` each frame: the arrays are rewritten in place
(a numba kernel converts the float64 simulation to float32 and computes the normals; nothing is allocated),
so a game uploads the same arrays every frame. ``revision`` changes when the triangle list changes (tearing
splits the mesh, the entity's Cloth is replaced): only then does the game re-upload ``triangles`` and resize
its vertex buffer. When the App draws between steps (``between.StepBlend`` enabled: a renderer plugin in the window
loop), ``refresh`` writes the blended positions, as the built-in renderers draw. Topology changes are detected the
way the built-in renderers detect them (``ClothSurface.matches``). docs/recipe-own-shader.md draws a cloth this way
with moderngl.

Units: positions in metres in Loom's world frame, y up (a 2D game's ``PixelSpace`` is not applied); normals
unit length, towards the front (triangles counter-clockwise seen from the front); uv the rest material
coordinates in metres (divide by the cloth's size for a 0–1 texture).
"""
from __future__ import annotations

from typing import Any

import numba
import numpy as np

from loom.components import Cloth
from loom.engine import App
from loom.launch.cold_kernels import called_from, python_twin
from loom.systems.render.between import StepBlend
from loom.systems.render.surface import MAX_LEVELS, ClothSurface

INTERLEAVED_FORMAT = "3f 3f 2f"
"""The layout of one row of ``VertexBuffers.interleaved`` in moderngl's buffer-format notation: position (3
float32) [m], normal (3 float32), uv (2 float32) [m]; 32 bytes a vertex."""


class VertexBuffers:
    """One cloth's vertex arrays for a game's own renderer, refreshed in place: float32 positions, normals, uv and
    uint32 triangles, with a ``revision`` that changes when the triangles do.

    Made by ``vertex_buffers(app, entity)``. Each frame, after the simulation stepped, ``refresh()`` rewrites
    ``position``, ``normal`` (and ``interleaved``) in place; ``uv`` and ``triangles`` change only with the
    topology, and then ``revision`` goes up by one and every array is a new object of the new size.
    """

    def __init__(self, app: App, entity: int, *, levels: int = 0, interleaved: bool = False) -> None:
        if isinstance(entity, bool) or not isinstance(entity, (int, np.integer)):
            raise TypeError(f"vertex_buffers entity = {entity!r}: expected an entity id (int) holding a Cloth")
        if isinstance(levels, bool) or not isinstance(levels, (int, np.integer)) or not 0 <= levels <= MAX_LEVELS:
            raise ValueError(f"vertex_buffers levels = {levels!r}: must be 0, 1 or 2 (Loop subdivision levels)")
        if not isinstance(interleaved, bool):
            raise TypeError(f"vertex_buffers interleaved = {interleaved!r}: expected True or False")
        self.app = app
        """The App whose cloth is read."""
        self.entity = int(entity)
        """The cloth's entity."""
        self.levels = int(levels)
        """Loop subdivision levels 0–2 (each quadruples the triangles; 0: one vertex per particle)."""
        self.revision = -1
        """Topology revision: 0 after the first ``refresh``, one more each time the triangle list changed."""
        self.position = np.zeros((0, 3), np.float32)
        """Vertex positions (m, 3) float32 [m], Loom's world frame, y up; rewritten by every ``refresh``."""
        self.normal = np.zeros((0, 3), np.float32)
        """Unit vertex normals (m, 3) float32, area-weighted, towards the front; rewritten by every ``refresh``."""
        self.uv = np.zeros((0, 2), np.float32)
        """Rest material coordinates (m, 2) float32 [m] (``Cloth.rest_uv``); constant until ``revision`` changes."""
        self.triangles = np.zeros((0, 3), np.uint32)
        """Triangles (t, 3) uint32, counter-clockwise seen from the front; constant until ``revision`` changes."""
        self.interleaved: np.ndarray | None = None
        """With ``interleaved=True``: (m, 8) float32 rows position, normal, uv (``INTERLEAVED_FORMAT``) for a
        single vertex buffer, rewritten by every ``refresh``; else None."""
        self._interleave = interleaved
        self._packed = np.zeros((0, 8), np.float32)          # interleaved's storage, (0, 8) when not asked for
        self._surface: ClothSurface | None = None
        self._cloth: Cloth | None = None
        self.refresh()

    @property
    def vertex_count(self) -> int:
        """Vertices m (rows of ``position``)."""
        return self.position.shape[0]

    @property
    def index_count(self) -> int:
        """Indices to draw, 3 per triangle (``triangles.size``)."""
        return self.triangles.size

    def refresh(self) -> bool:
        """Rewrite ``position``, ``normal`` (and ``interleaved``) from the cloth's current particles, in place.

        Returns True when the triangle list changed since the last call (``revision`` went up: re-upload
        ``triangles`` and ``uv`` and resize the vertex buffer), else False. Raises KeyError if the entity is
        gone or holds no Cloth."""
        cloth = self.app.try_get(self.entity, Cloth)
        if cloth is None:
            raise KeyError(f"VertexBuffers.refresh: entity {self.entity} has no Cloth (despawned, or its Cloth "
                           f"was removed)")
        surface = self._surface
        changed = surface is None or cloth is not self._cloth or not surface.matches(cloth, self.levels)
        if changed:
            surface = self._rebuild(cloth)
        blend = self.app.resources.get(StepBlend)                 # between two steps, when the App draws so
        surface.update(cloth, x=cloth.x if blend is None else blend.positions(self.app, self.entity, cloth))
        _fill_vertices_call(surface.x, surface.normal, self.position, self.normal, self._packed)
        return changed

    def _rebuild(self, cloth: Cloth) -> ClothSurface:
        """New arrays for the cloth's current topology (once per topology, never per frame)."""
        surface = ClothSurface(cloth, self.levels if cloth.triangles.shape[0] else 0)
        m = surface.vertex_count
        self.position = np.zeros((m, 3), np.float32)
        self.normal = np.zeros((m, 3), np.float32)
        self.uv = np.ascontiguousarray(surface.uv, dtype=np.float32)
        self.triangles = np.ascontiguousarray(surface.triangles, dtype=np.uint32)
        self._packed = np.zeros((m if self._interleave else 0, 8), np.float32)
        if self._interleave:
            self._packed[:, 6:8] = self.uv
            self.interleaved = self._packed
        self._surface, self._cloth = surface, cloth
        self.revision += 1
        return surface


def vertex_buffers(app: App, entity: int, *, levels: int = 0, interleaved: bool = False) -> VertexBuffers:
    """Return float32 vertex arrays of ``entity``'s cloth for a game's own shader, filled now; call their
    ``refresh()`` each frame.

    levels: Loop subdivision levels 0–2 (smoother cloth, 4^levels × the triangles); interleaved: also keep an
    (m, 8) float32 array in ``INTERLEAVED_FORMAT`` for one vertex buffer. Positions in metres, y up. Raises
    KeyError if the entity holds no Cloth, TypeError or ValueError naming a bad argument."""
    return VertexBuffers(app, entity, levels=levels, interleaved=interleaved)


@numba.njit(cache=True)
def _fill_vertices(x, normal, position32, normal32, packed):
    """position32, normal32 (m, 3) float32 ← x, normal (m, 3) float64; rows of packed (m, 8) float32 (or (0, 8):
    skipped) columns 0–5 ← position, normal."""
    for v in range(position32.shape[0]):
        for c in range(3):
            position32[v, c] = x[v, c]
            normal32[v, c] = normal[v, c]
    if packed.shape[0] > 0:
        for v in range(packed.shape[0]):
            for c in range(3):
                packed[v, c] = position32[v, c]
                packed[v, 3 + c] = normal32[v, c]


def _fill_vertices_numpy(x: Any, normal: Any, position32: Any, normal32: Any, packed: Any) -> None:
    """``_fill_vertices`` in NumPy: its twin while the compile-ahead worker compiles it (``cold_kernels``)."""
    position32[:] = x
    normal32[:] = normal
    if packed.shape[0] > 0:
        packed[:, 0:3] = position32
        packed[:, 3:6] = normal32


python_twin(_fill_vertices, per_step=True, twin=_fill_vertices_numpy)
_fill_vertices_call = _fill_vertices                 # the Python call site's name
called_from(__name__, _fill_vertices)
