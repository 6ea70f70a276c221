"""Collider: a rigid shape the cloth cannot enter, placed (and moved) by its entity's Transform.

Vocabulary after pymunk: a ``Collider`` holds one shape plus its contact parameters —
``thickness`` [m], the extra margin cloth keeps from its surface, and ``friction`` [-], mixed with
the cloth's own as √(μ_cloth·μ_collider). Shapes live in the entity's local frame:

    Plane(normal)            infinite half-space through the origin; cloth stays on the normal's side
    Sphere(radius)           ball centred on the origin
    Capsule(radius, half_length)   segment from (0, −h, 0) to (0, +h, 0) swept by a ball (a limb, a pole)
    Cylinder(radius, half_height)  flat-ended cylinder along local y (a round table top, a post)
    Box(half_extents)        oriented box centred on the origin (a table top, a platform)
    Prism(polygon, half_depth)     convex polygon in the xy plane extruded ±half_depth along z
                             (a pymunk polygon in a 2D game)
    TriangleMesh(vertices, triangles)   static mesh, front = counter-clockwise side (a statue, a hull)

A shape's arrays (``Plane.normal``, ``Box.half_extents``, ``Prism.polygon``, a TriangleMesh's tables) are read-only:
assign a new value (checked) rather than writing into them. Move the Transform to move a collider: its motion over a step gives the surface velocity that
friction acts against, so cloth resting on a moving platform rides along.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from loom.components._revision import Checked
from loom.components._validate import Arr, Custom, FieldError, Fixed, Flag, Instance, Offsets, Real, floats, indices, \
    length, real, show, unit_vector
from loom.engine.geometry import triangle_areas


@dataclass(eq=False)
class Plane(Checked):
    """An infinite plane through the Transform's position; cloth stays on the side ``normal`` points to."""

    normal: Any = (0.0, 1.0, 0.0)
    """Local normal (3,), normalised on construction; default +y: a floor."""

    def __post_init__(self) -> None:
        self.normal = unit_vector("Plane", "normal", {}, self.normal)


@dataclass(eq=False)
class Sphere(Checked):
    """A ball of ``radius`` [m] centred on the Transform's position."""

    radius: float

    def __post_init__(self) -> None:
        self.radius = real("Sphere", "radius", self.radius, low=0.0, low_open=True, unit=" [m]")


@dataclass(eq=False)
class Capsule(Checked):
    """A segment along local y from −half_length to +half_length [m], swept by a ball of ``radius`` [m]."""

    radius: float
    half_length: float

    def __post_init__(self) -> None:
        self.radius = real("Capsule", "radius", self.radius, low=0.0, low_open=True, unit=" [m]")
        self.half_length = real("Capsule", "half_length", self.half_length, low=0.0, unit=" [m]")


@dataclass(eq=False)
class Cylinder(Checked):
    """A flat-ended cylinder of ``radius`` [m] along local y from −half_height to +half_height [m]."""

    radius: float
    half_height: float

    def __post_init__(self) -> None:
        self.radius = real("Cylinder", "radius", self.radius, low=0.0, low_open=True, unit=" [m]")
        self.half_height = real("Cylinder", "half_height", self.half_height, low=0.0, low_open=True, unit=" [m]")


@dataclass(eq=False)
class Box(Checked):
    """An oriented box with ``half_extents`` (3,) [m] along its local axes, centred on the origin."""

    half_extents: Any

    def __post_init__(self) -> None:
        self.half_extents = floats("Box", "half_extents", self.half_extents, (3,), unit=" [m]")
        bad = np.flatnonzero(self.half_extents <= 0.0)
        if bad.size:
            k = int(bad[0])
            raise ValueError(f"Box.half_extents[{k}] = {show(self.half_extents[k])}: must be > 0 [m]")


@dataclass(eq=False)
class Prism(Checked):
    """A convex polygon (k, 2) [m] in the local xy plane, counter-clockwise, extruded ±half_depth along z."""

    polygon: Any
    half_depth: float = 0.5

    def __post_init__(self) -> None:
        self.polygon = _polygon("Prism", "polygon", {}, self.polygon)
        self.half_depth = real("Prism", "half_depth", self.half_depth, low=0.0, low_open=True, unit=" [m]")


def _polygon(owner: str, name: str, state: Any, value: Any) -> np.ndarray:
    """Prism.polygon: a convex polygon (k >= 3, 2) [m] of non-zero area, stored counter-clockwise."""
    poly = floats(owner, name, value, (None, 2), unit=" [m]")
    if poly.shape[0] < 3:
        raise ValueError(f"{owner}.{name}: {poly.shape[0]} vertices, a polygon needs at least 3")
    edges = np.roll(poly, -1, axis=0) - poly
    cross = edges[:, 0] * np.roll(edges, -1, axis=0)[:, 1] - edges[:, 1] * np.roll(edges, -1, axis=0)[:, 0]
    if (cross < -1e-12).any() and (cross > 1e-12).any():
        raise ValueError(f"{owner}.{name} = {show(poly)}: must be convex")
    if cross.sum() < 0.0:                        # clockwise given: make it counter-clockwise
        poly = poly[::-1].copy()
    if abs(cross.sum()) < 1e-12:
        raise ValueError(f"{owner}.{name} = {show(poly)}: has zero area")
    return np.ascontiguousarray(poly)


@dataclass(eq=False)
class TriangleMesh(Checked):
    """A static triangle mesh in local coordinates; cloth is kept on the front (counter-clockwise) side.

    A uniform grid over the triangles (cell ≈ the mean triangle size) is built once here, so a
    query touches only the triangles near a particle (Baraff & Witkin §6 use a bounding-box tree;
    a grid is simpler and as fast for the roughly uniform meshes games use)."""

    vertices: Any
    triangles: Any
    cell_size: float = field(init=False, repr=False, default=0.0)
    """Grid cell edge [m]."""
    grid_origin: np.ndarray = field(init=False, repr=False)
    """Lower corner of the grid [m], (3,)."""
    grid_shape: np.ndarray = field(init=False, repr=False)
    """Cells per axis, (3,) int64."""
    cell_start: np.ndarray = field(init=False, repr=False)
    """CSR offsets of each cell's triangle list, (cells + 1,) int64."""
    cell_triangles: np.ndarray = field(init=False, repr=False)
    """Triangle indices by cell, int32."""

    def __post_init__(self) -> None:
        self.vertices = floats("TriangleMesh", "vertices", self.vertices, (None, 3), unit=" [m]")
        self.triangles = indices("TriangleMesh", "triangles", self.triangles, (None, 3), self.vertices.shape[0],
                                 count_label="vertices")
        if self.triangles.shape[0] == 0:
            raise ValueError("TriangleMesh.triangles: shape (0, 3): a mesh needs at least one triangle")
        v, t = self.vertices, self.triangles
        area = triangle_areas(v, t)
        flat = np.flatnonzero(area <= 1e-14)
        if flat.size:
            k = int(flat[0])
            raise ValueError(f"TriangleMesh.triangles[{k}] = {t[k].tolist()}: zero-area triangle")
        self.cell_size = max(float(np.sqrt(area.mean()) * 1.5), 1e-3)
        lo = v.min(axis=0) - self.cell_size
        hi = v.max(axis=0) + self.cell_size
        self.grid_origin = lo
        self.grid_shape = np.maximum(np.ceil((hi - lo) / self.cell_size).astype(np.int64), 1)
        self.cell_start, self.cell_triangles = _bin_triangles(v, t, lo, self.cell_size, self.grid_shape)


def _bin_triangles(v: np.ndarray, t: np.ndarray, origin: np.ndarray, cell: float,
                   shape: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """List each triangle in every grid cell its bounding box (grown by one cell) overlaps (CSR)."""
    tri_lo = np.floor((v[t].min(axis=1) - origin) / cell).astype(np.int64) - 1
    tri_hi = np.floor((v[t].max(axis=1) - origin) / cell).astype(np.int64) + 1
    tri_lo = np.clip(tri_lo, 0, shape - 1)
    tri_hi = np.clip(tri_hi, 0, shape - 1)
    cells, tris = [], []
    for k in range(t.shape[0]):                      # once per mesh, at construction
        ix, iy, iz = np.meshgrid(*(np.arange(tri_lo[k, a], tri_hi[k, a] + 1) for a in range(3)), indexing="ij")
        flat = (ix * shape[1] + iy) * shape[2] + iz
        cells.append(flat.ravel())
        tris.append(np.full(flat.size, k, np.int32))
    cell_ids = np.concatenate(cells)
    tri_ids = np.concatenate(tris)
    order = np.argsort(cell_ids, kind="stable")
    counts = np.bincount(cell_ids, minlength=int(np.prod(shape)))
    start = np.zeros(counts.size + 1, np.int64)
    np.cumsum(counts, out=start[1:])
    return start, np.ascontiguousarray(tri_ids[order])


SHAPES = (Plane, Sphere, Capsule, Box, Prism, TriangleMesh, Cylinder)
PLANE, SPHERE, CAPSULE, BOX, PRISM, MESH, CYLINDER = range(7)
"""Shape codes used in ``ColliderSet.kind``."""


@dataclass(eq=False)
class Collider(Checked):
    """A shape cloth collides with, with its contact margin and friction; needs a Transform on the entity."""

    shape: Any
    """One of Plane, Sphere, Capsule, Cylinder, Box, Prism, TriangleMesh."""
    thickness: float = 0.0
    """Extra margin [m] kept between cloth and surface, added to the cloth's own thickness."""
    friction: float = 0.5
    """Coulomb friction coefficient [-]: 0 ice, 0.3 polished wood, 0.6 cloth on wood, 1 rubber."""
    active: bool = True
    """Switch the collider off without removing the component (components are not added per frame)."""
    two_way: bool = False
    """The collider's body gives way to the cloth (a two-way pymunk body; the bridge sets it): the cloth solve may
    press cloth into it and the contact's push back out is the body's impulse, so the yarns are not solved again
    after the collisions where they touch it. False (static and moving level geometry): a particle touching it
    slides along it in the yarn solve and the stretch limit, never into it (``Cloth.contact``)."""

    def __post_init__(self) -> None:
        if not isinstance(self.shape, SHAPES):
            raise FieldError(f"Collider.shape = {self.shape!r}: expected one of "
                            f"{', '.join(s.__name__ for s in SHAPES)}")
        self.thickness = real("Collider", "thickness", self.thickness, low=0.0, unit=" [m]")
        self.friction = real("Collider", "friction", self.friction, low=0.0, unit=" [-]")
        self.active = bool(self.active)
        self.two_way = bool(self.two_way)


def _vertices(owner: str, name: str, state: Any, value: Any) -> np.ndarray:
    """TriangleMesh.vertices: (v, 3) finite [m]."""
    return floats(owner, name, value, (None, 3), unit=" [m]")


def _triangles(owner: str, name: str, state: Any, value: Any) -> np.ndarray:
    """TriangleMesh.triangles: (t >= 1, 3) indices of vertices."""
    return indices(owner, name, value, (None, 3), length("vertices")(state) or 0, count_label="vertices")


def _cells_plus_one(state: Any) -> int | None:
    """Grid cells + 1 of a TriangleMesh (the length of its cell_start)."""
    shape = state.get("grid_shape")
    if not isinstance(shape, np.ndarray) or shape.shape != (3,):
        return None
    return int(np.prod(shape.astype(np.int64))) + 1


Plane._fields = {"normal": Custom(unit_vector, readonly=True)}
Sphere._fields = {"radius": Real(0.0, low_open=True, unit=" [m]")}
Capsule._fields = {"radius": Real(0.0, low_open=True, unit=" [m]"), "half_length": Real(0.0, unit=" [m]")}
Cylinder._fields = {"radius": Real(0.0, low_open=True, unit=" [m]"),
                    "half_height": Real(0.0, low_open=True, unit=" [m]")}
Box._fields = {"half_extents": Arr((3,), low=0.0, low_open=True, unit=" [m]", readonly=True)}
Prism._fields = {"polygon": Custom(_polygon, readonly=True), "half_depth": Real(0.0, low_open=True, unit=" [m]")}
TriangleMesh._dims = {
    "t": (length("triangles"), "triangles", "fixed when the mesh is built"),
    "ct": (length("cell_triangles"), "grid entries", "fixed when the mesh is built"),
    "cells1": (_cells_plus_one, "grid cells + 1", "one offset per grid cell, plus one"),
}
_GRID = "its search grid is binned from its triangles; build a new TriangleMesh"
TriangleMesh._fields = {
    "vertices": Fixed(Custom(_vertices, readonly=True), _GRID),
    "triangles": Fixed(Custom(_triangles, readonly=True), _GRID),
    "cell_size": Fixed(Real(0.0, low_open=True, unit=" [m]"), _GRID),
    "grid_origin": Fixed(Arr((3,), unit=" [m]", readonly=True), _GRID),
    "grid_shape": Fixed(Arr((3,), "i", dtype=np.int64, low=1, high=1 << 20, readonly=True), _GRID),
    "cell_triangles": Fixed(Arr(("ct",), "i", count="t", readonly=True), _GRID),
    "cell_start": Fixed(Offsets("ct", ("cells1",), dtype=np.int64), _GRID),
}
Collider._fields = {
    "shape": Instance(SHAPES, "one of " + ", ".join(s.__name__ for s in SHAPES)),
    "thickness": Real(0.0, unit=" [m]"),
    "friction": Real(0.0, unit=" [-]"),
    "active": Flag(),
    "two_way": Flag(),
}


def rotation_to_quaternion(r: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Unit quaternion (w, x, y, z) of a rotation matrix (3, 3) (Shepperd's method, stable for any angle),
    written into ``out`` (4,) when given (no allocation) and returned."""
    if out is None:
        out = np.empty(4)
    out[:] = quaternion_of(r)
    return out


def quaternion_of(r: np.ndarray) -> tuple[float, float, float, float]:
    """``rotation_to_quaternion``'s unit quaternion (w, x, y, z) as Python floats (the matrix read once: a
    collider's pose is packed every step)."""
    (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = r.tolist()
    tr = r00 + r11 + r22
    if tr > 0.0:
        s = math.sqrt(tr + 1.0) * 2.0
        q = (0.25 * s, (r21 - r12) / s, (r02 - r20) / s, (r10 - r01) / s)
    elif r00 > r11 and r00 > r22:
        s = math.sqrt(1.0 + r00 - r11 - r22) * 2.0
        q = ((r21 - r12) / s, 0.25 * s, (r01 + r10) / s, (r02 + r20) / s)
    elif r11 > r22:
        s = math.sqrt(1.0 + r11 - r00 - r22) * 2.0
        q = ((r02 - r20) / s, (r01 + r10) / s, 0.25 * s, (r12 + r21) / s)
    else:
        s = math.sqrt(1.0 + r22 - r00 - r11) * 2.0
        q = ((r10 - r01) / s, (r02 + r20) / s, (r12 + r21) / s, 0.25 * s)
    norm = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    return q[0] / norm, q[1] / norm, q[2] / norm, q[3] / norm


class ColliderSet:
    """App resource: every active Collider packed into flat arrays once per step, for any model's kernels.

    Unified table, one row per collider (``entities`` gives its entity):
      kind (k,) int32 shape code; params (k, 4) shape sizes [m] (sphere r; capsule r, h; cylinder r, h;
      box hx, hy, hz; prism half_depth, first polygon row, polygon rows); margin (k,) [m]; friction (k,) [-];
      pose0, pose1 (k, 7): quaternion (w, x, y, z) and position [m] at the start and end of the step
      (kernels interpolate them per substep); mesh (k,) int32 index into the mesh lists, −1 for none;
      polygons (P, 2) [m] all prism polygons; meshes and mesh_arrays, the TriangleMeshes and their
      concatenated vertices, triangles and grids; impulse (k, 3) [N·s] and impulse_point (k, 4)
      (Σ|J|·point, Σ|J|) that cloth contacts of every model (substepped and implicit) pushed into each
      collider this step (two-way coupling); two_way (k,) bool, ``Collider.two_way``; touching, the collider
      entities cloth touched in the last step (for ``collision_started`` events)."""

    def __init__(self) -> None:
        self.entities = np.zeros(0, np.int64)
        self.kind = np.zeros(0, np.int32)
        self.params = np.zeros((0, 4))
        self.margin = np.zeros(0)
        self.friction = np.zeros(0)
        self.two_way = np.zeros(0, np.bool_)
        self.pose0 = np.zeros((0, 7))
        self.pose1 = np.zeros((0, 7))
        self.mesh = np.zeros(0, np.int32)
        self.polygons = np.zeros((0, 2))
        self.meshes: list[TriangleMesh] = []
        self.mesh_arrays: tuple[np.ndarray, ...] | None = None
        self.impulse = np.zeros((0, 3))
        self.impulse_point = np.zeros((0, 4))
        self.touching: set[int] = set()

    @property
    def count(self) -> int:
        """Number of packed colliders."""
        return self.kind.shape[0]
