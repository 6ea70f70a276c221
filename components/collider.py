"""Collider: a rigid shape the cloth cannot enter, placed (and moved) by its entity's Transform.

Vocabulary after pymunk: a ``Collider`` holds one shape plus its contact parameters —
``thickness`` [m], the extra margin cloth keeps from its surface, and ``friction`` [-], mixed with
the cloth's own as √(μ_cloth·μ_collider). Shapes live in the entity's local frame:

    Plane(normal)            infinite half-space through the origin; cloth stays on the normal's side
    Sphere(radius)           ball centred on the origin
    Capsule(radius, half_length)   segment from (0, −h, 0) to (0, +h, 0) swept by a ball (a limb, a pole)
    Cylinder(radius, half_height)  flat-ended cylinder along local y (a round table top, a post)
    Cone(radius, half_height, top_radius)   capped cone along local y: ``radius`` at the base (y = −h),
                             ``top_radius`` at the top (y = +h; 0, the default: a pointed cone)
    Box(half_extents)        oriented box centred on the origin (a table top, a platform)
    Prism(polygon, half_depth)     convex polygon in the xy plane extruded ±half_depth along z
                             (a pymunk polygon in a 2D game)
    TriangleMesh(vertices, triangles)   static mesh, front = counter-clockwise side (a statue, a hull)

A shape's arrays (``Plane.normal``, ``Box.half_extents``, ``Prism.polygon``, a TriangleMesh's tables) are read-only:
assign a new value (checked) rather than writing into them. Move the Transform to move a collider: its motion over a
step gives the surface velocity that friction acts against, so cloth resting on a moving platform rides along.

The shape table: ``SHAPES`` is the one list of shapes. Each shape class declares, in its own body, everything the
rest of Loom needs of it (``Shape``): its kind code (its place in ``SHAPES``), how it is packed for the kernels
(``pack``: one row of ``ColliderSet.params``), its bounding ball and box (``extents``, packed with it, so no kernel
knows a shape's size), whether cloth at rest on it keeps the contact skin (``skin``), its triangles for the
renderers (``tessellate``) and what changes them (``look``). Its signed distance is one numba function in
``loom.systems.shared.shapes`` registered for the class (``distance_of``); docs/architecture.md, "Add a collider
shape", walks through the cone.
"""
from __future__ import annotations

import math
from abc import ABCMeta, abstractmethod
from dataclasses import dataclass, fields
from typing import Any, ClassVar

import numpy as np

from loom.components import _tessellation as tess
from loom.components._revision import Checked, Revisioned, checked_field
from loom.components._validate import Arr, Custom, Fixed, Flag, Instance, Offsets, Real, floats, frozen, indices, \
    length, show, unit_vector
from loom.engine.geometry import triangle_areas
from loom.engine.persist import persistent

NO_SKIN, ROUND, FLAT = 0, 1, 2
"""``Shape.skin``: whether a particle just beyond the contact reach of the shape at rest still touches it
(``loom.systems.collision.environment.CONTACT_SKIN``): never (NO_SKIN: planes, prisms, meshes); ROUND, always (a
convex round surface the solve slides cloth along: spheres, capsules, cylinders, cones); FLAT, while no two-way body
is near the cloth (boxes)."""

PLANE_EXTENT = 60.0
"""Half side [m] of the square drawn for an (infinite) Plane collider, around its Transform's position."""


class Packing:
    """What ``gather_colliders`` hands each shape's ``pack``: the arrays several colliders share, which a shape may
    append to (a prism's outline, a mesh), and the mesh row of the collider being packed (−1: none)."""

    def __init__(self) -> None:
        self.polygons: list[np.ndarray] = []
        """Prism outlines (P_i, 2) [m], concatenated into ``ColliderSet.polygons``."""
        self.polygon_rows = 0
        """Rows of ``polygons`` so far."""
        self.meshes: list[TriangleMesh] = []
        """The TriangleMeshes, in ``ColliderSet.meshes`` order."""
        self.mesh = -1
        """The packed collider's row of ``meshes`` (set by ``add_mesh``; −1 for a shape with no mesh)."""

    def add_polygon(self, polygon: np.ndarray) -> int:
        """Append an outline (k, 2) [m]; return its first row in ``ColliderSet.polygons``."""
        first = self.polygon_rows
        self.polygons.append(polygon)
        self.polygon_rows += polygon.shape[0]
        return first

    def add_mesh(self, shape: TriangleMesh) -> int:
        """Append a mesh; it becomes the packed collider's ``mesh`` row, returned."""
        self.mesh = len(self.meshes)
        self.meshes.append(shape)
        return self.mesh


class Shape(Revisioned, metaclass=ABCMeta):
    """A collider shape's entry in the shape table (``SHAPES``): what every system needs of it, declared with it.

    A subclass is a ``@dataclass`` whose fields are declared with ``checked_field`` and implements ``pack``,
    ``extents`` and ``tessellate`` (a class missing one cannot be built); its signed distance is registered in
    ``loom.systems.shared.shapes`` (``distance_of``), checked when that module is imported. ``revision`` counts
    assignments to its fields (``Revisioned``): the colliders' packing repacks a shape only when it changed."""

    code: ClassVar[int] = -1
    """Kind code in ``ColliderSet.kind``: the class's place in ``SHAPES`` (set there)."""
    skin: ClassVar[int] = NO_SKIN
    """NO_SKIN, ROUND or FLAT: whether cloth resting on it keeps the contact skin."""
    basic: ClassVar[bool] = True
    """Its signed distance needs only its ``params`` row (``shapes.basic_sdf``); False for shapes that read shared
    arrays (a prism's outline, a mesh): the contact kernels compiled without them skip those."""

    @abstractmethod
    def pack(self, packing: Packing) -> tuple[float, float, float, float]:
        """Its row of ``ColliderSet.params``: the four numbers [m] its signed distance reads."""

    @abstractmethod
    def extents(self) -> tuple[float, float, float, float]:
        """(bound, ex, ey, ez) [m]: the radius of a ball about the local origin holding the shape (0: unbounded,
        then every particle is tested against it) and the half extents of a box along its local axes holding it
        (a plane: its normal)."""

    @abstractmethod
    def tessellate(self, segments: int = 32) -> np.ndarray:
        """Triangle list in the local frame, (3·t, 8) float64 rows of position [m], unit outward normal and uv
        [m], counter-clockwise seen from outside; ``segments`` around a round shape."""

    def look(self) -> tuple:
        """What its tessellation depends on: every field's value (a renderer tessellates again when it changes)."""
        return tuple(np.asarray(getattr(self, f.name), float).tobytes() for f in fields(self) if f.init)


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


def _vertices(owner: str, name: str, state: Any, value: Any) -> np.ndarray:
    """TriangleMesh.vertices: (v, 3) finite [m]."""
    return floats(owner, name, value, (None, 3), unit=" [m]")


def _triangles(owner: str, name: str, state: Any, value: Any) -> np.ndarray:
    """TriangleMesh.triangles: (t >= 1, 3) indices of vertices."""
    triangles = indices(owner, name, value, (None, 3), length("vertices")(state) or 0, count_label="vertices")
    if triangles.shape[0] == 0:
        raise ValueError(f"{owner}.{name}: shape (0, 3): a mesh needs at least one triangle")
    return triangles


def _cells_plus_one(state: Any) -> int | None:
    """Grid cells + 1 of a TriangleMesh (the length of its cell_start)."""
    shape = state.get("grid_shape")
    if not isinstance(shape, np.ndarray) or shape.shape != (3,):
        return None
    return int(np.prod(shape.astype(np.int64))) + 1


_METRES = Real(0.0, low_open=True, unit=" [m]")
"""A length [m] > 0."""
_GRID = "its search grid is binned from its triangles; build a new TriangleMesh"


@persistent
@dataclass(eq=False)
class Plane(Shape):
    """An infinite plane through the Transform's position; cloth stays on the side ``normal`` points to."""

    normal: Any = checked_field(Custom(unit_vector, readonly=True), (0.0, 1.0, 0.0))
    """Local normal (3,), normalised on construction; default +y: a floor."""

    def pack(self, packing: Packing) -> tuple[float, float, float, float]:
        return (*self.normal.tolist(), 0.0)

    def extents(self) -> tuple[float, float, float, float]:
        return (0.0, *self.normal.tolist())

    def tessellate(self, segments: int = 32) -> np.ndarray:
        """A square of ±PLANE_EXTENT [m], uv its in-plane coordinates (a floor's checker)."""
        return tess.square(self.normal, PLANE_EXTENT)


@persistent
@dataclass(eq=False)
class Sphere(Shape):
    """A ball of ``radius`` [m] centred on the Transform's position."""

    radius: float = checked_field(_METRES)
    """Radius [m] > 0."""
    skin: ClassVar[int] = ROUND

    def pack(self, packing: Packing) -> tuple[float, float, float, float]:
        return self.radius, 0.0, 0.0, 0.0

    def extents(self) -> tuple[float, float, float, float]:
        r = self.radius
        return r, r, r, r

    def tessellate(self, segments: int = 32) -> np.ndarray:
        phi = np.linspace(0.0, math.pi, segments // 2 + 1)
        return tess.lathe(self.radius * np.sin(phi), self.radius * np.cos(phi), np.sin(phi), np.cos(phi), segments)


@persistent
@dataclass(eq=False)
class Capsule(Shape):
    """A segment along local y from −half_length to +half_length [m], swept by a ball of ``radius`` [m]."""

    radius: float = checked_field(_METRES)
    """Radius [m] > 0 of the swept ball."""
    half_length: float = checked_field(Real(0.0, unit=" [m]"))
    """Half length [m] >= 0 of the segment (0: a sphere)."""
    skin: ClassVar[int] = ROUND

    def pack(self, packing: Packing) -> tuple[float, float, float, float]:
        return self.radius, self.half_length, 0.0, 0.0

    def extents(self) -> tuple[float, float, float, float]:
        r, h = self.radius, self.half_length
        return r + h, r, h + r, r

    def tessellate(self, segments: int = 32) -> np.ndarray:
        r, h = self.radius, self.half_length
        top = np.linspace(0.0, math.pi / 2, segments // 4 + 1)
        bottom = np.linspace(math.pi / 2, math.pi, segments // 4 + 1)
        phi = np.concatenate([top, bottom])
        y = r * np.cos(phi) + np.concatenate([np.full(top.size, h), np.full(bottom.size, -h)])
        return tess.lathe(r * np.sin(phi), y, np.sin(phi), np.cos(phi), segments)


@persistent
@dataclass(eq=False)
class Cylinder(Shape):
    """A flat-ended cylinder of ``radius`` [m] along local y from −half_height to +half_height [m]."""

    radius: float = checked_field(_METRES)
    """Radius [m] > 0."""
    half_height: float = checked_field(_METRES)
    """Half height [m] > 0: the flat ends are at y = ±half_height."""
    skin: ClassVar[int] = ROUND

    def pack(self, packing: Packing) -> tuple[float, float, float, float]:
        return self.radius, self.half_height, 0.0, 0.0

    def extents(self) -> tuple[float, float, float, float]:
        r, h = self.radius, self.half_height
        return r + h, r, h, r

    def tessellate(self, segments: int = 32) -> np.ndarray:
        r, h = self.radius, self.half_height
        return tess.lathe(np.array([0.0, r, r, r, r, 0.0]), np.array([h, h, h, -h, -h, -h]),
                          np.array([0.0, 0.0, 1.0, 1.0, 0.0, 0.0]), np.array([1.0, 1.0, 0.0, 0.0, -1.0, -1.0]),
                          segments)


@persistent
@dataclass(eq=False)
class Cone(Shape):
    """A capped cone along local y: a disc of ``radius`` [m] at the base (y = −half_height), one of ``top_radius``
    [m] at the top (y = +half_height; 0, the default, a pointed cone), joined by a straight slanted side. Its
    signed distance is exact (``loom.systems.shared.shapes.cone_sdf``)."""

    radius: float = checked_field(_METRES)
    """Base radius [m] > 0, at y = −half_height."""
    half_height: float = checked_field(_METRES)
    """Half height [m] > 0: base at y = −half_height, top at +half_height."""
    top_radius: float = checked_field(Real(0.0, unit=" [m]"), 0.0)
    """Top radius [m] >= 0 at y = +half_height (0: a pointed cone, its apex there)."""
    skin: ClassVar[int] = ROUND

    def pack(self, packing: Packing) -> tuple[float, float, float, float]:
        return self.radius, self.top_radius, self.half_height, 0.0

    def extents(self) -> tuple[float, float, float, float]:
        wide, h = max(self.radius, self.top_radius), self.half_height
        return math.sqrt(wide * wide + h * h), wide, h, wide

    def tessellate(self, segments: int = 32) -> np.ndarray:
        r0, r1, h = self.radius, self.top_radius, self.half_height
        side = math.hypot(2.0 * h, r0 - r1)
        nr, ny = 2.0 * h / side, (r0 - r1) / side                  # the slanted side's outward normal
        return tess.lathe(np.array([0.0, r1, r1, r0, r0, 0.0]), np.array([h, h, h, -h, -h, -h]),
                          np.array([0.0, 0.0, nr, nr, 0.0, 0.0]), np.array([1.0, 1.0, ny, ny, -1.0, -1.0]), segments)


@persistent
@dataclass(eq=False)
class Box(Shape):
    """An oriented box with ``half_extents`` (3,) [m] along its local axes, centred on the origin."""

    half_extents: Any = checked_field(Arr((3,), low=0.0, low_open=True, unit=" [m]", readonly=True))
    """Half extents (3,) [m], each > 0."""
    skin: ClassVar[int] = FLAT

    def pack(self, packing: Packing) -> tuple[float, float, float, float]:
        return (*self.half_extents.tolist(), 0.0)

    def extents(self) -> tuple[float, float, float, float]:
        a, b, c = self.half_extents.tolist()
        return math.sqrt(a * a + b * b + c * c), a, b, c

    def tessellate(self, segments: int = 32) -> np.ndarray:
        return tess.box(self.half_extents)


@persistent
@dataclass(eq=False)
class Prism(Shape):
    """A convex polygon (k, 2) [m] in the local xy plane, counter-clockwise, extruded ±half_depth along z."""

    polygon: Any = checked_field(Custom(_polygon, readonly=True))
    """Outline (k >= 3, 2) [m], convex, of non-zero area; stored counter-clockwise."""
    half_depth: float = checked_field(_METRES, 0.5)
    """Half depth [m] > 0 along local z."""
    basic: ClassVar[bool] = False

    def pack(self, packing: Packing) -> tuple[float, float, float, float]:
        return self.half_depth, packing.add_polygon(self.polygon), self.polygon.shape[0], 0.0

    def extents(self) -> tuple[float, float, float, float]:
        far = 0.0
        for x, y in self.polygon.tolist():
            far = max(far, x * x + y * y)
        d = self.half_depth
        return math.sqrt(far + d * d), math.sqrt(far), math.sqrt(far), d

    def tessellate(self, segments: int = 32) -> np.ndarray:
        return tess.prism(self.polygon, self.half_depth)


@persistent
@dataclass(eq=False)
class TriangleMesh(Shape):
    """A static triangle mesh in local coordinates; cloth is kept on the front (counter-clockwise) side.

    A uniform grid over the triangles (cell ≈ the mean triangle size) is built once here, so a
    query touches only the triangles near a particle (Baraff & Witkin §6 use a bounding-box tree;
    a grid is simpler and as fast for the roughly uniform meshes games use)."""

    vertices: Any = checked_field(Fixed(Custom(_vertices, readonly=True), _GRID))
    """Vertices (v, 3) [m]."""
    triangles: Any = checked_field(Fixed(Custom(_triangles, readonly=True), _GRID))
    """Triangles (t >= 1, 3) int32 rows of vertices, counter-clockwise seen from the front."""
    cell_size: float = checked_field(Fixed(_METRES, _GRID), 0.0, init=False, repr=False)
    """Grid cell edge [m]."""
    grid_origin: np.ndarray = checked_field(Fixed(Arr((3,), unit=" [m]", readonly=True), _GRID), init=False,
                                            repr=False)
    """Lower corner of the grid [m], (3,)."""
    grid_shape: np.ndarray = checked_field(Fixed(Arr((3,), "i", dtype=np.int64, low=1, high=1 << 20, readonly=True),
                                                 _GRID), init=False, repr=False)
    """Cells per axis, (3,) int64."""
    cell_triangles: np.ndarray = checked_field(Fixed(Arr(("ct",), "i", count="t", readonly=True), _GRID),
                                               init=False, repr=False)
    """Triangle indices by cell, int32."""
    cell_start: np.ndarray = checked_field(Fixed(Offsets("ct", ("cells1",), dtype=np.int64), _GRID), init=False,
                                           repr=False)
    """CSR offsets of each cell's triangle list, (cells + 1,) int64."""
    basic: ClassVar[bool] = False

    def __post_init__(self) -> None:
        self.vertices = _vertices("TriangleMesh", "vertices", {}, self.vertices)          # the fields' own checks,
        self.triangles = _triangles("TriangleMesh", "triangles", self.__dict__, self.triangles)   # before the grid
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

    def pack(self, packing: Packing) -> tuple[float, float, float, float]:
        packing.add_mesh(self)
        return 0.0, 0.0, 0.0, 0.0

    def extents(self) -> tuple[float, float, float, float]:
        """Unbounded for the contact kernels (its grid bounds it: a query outside finds no triangle)."""
        return 0.0, 0.0, 0.0, 0.0

    def tessellate(self, segments: int = 32) -> np.ndarray:
        return tess.triangles(self.vertices, self.triangles)

    def look(self) -> tuple:
        """Its vertex and triangle arrays (read-only: a change is a new array)."""
        return id(self.vertices), id(self.triangles)


TriangleMesh._dims = {
    "t": (length("triangles"), "triangles", "fixed when the mesh is built"),
    "ct": (length("cell_triangles"), "grid entries", "fixed when the mesh is built"),
    "cells1": (_cells_plus_one, "grid cells + 1", "one offset per grid cell, plus one"),
}


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


SHAPES: tuple[type[Shape], ...] = (Plane, Sphere, Capsule, Box, Prism, TriangleMesh, Cylinder, Cone)
"""The shape table: every collider shape, each one's kind code its place here (append a new shape at the end)."""
for _code, _shape in enumerate(SHAPES):
    _shape.code = _code
PLANE, BOX, PRISM, MESH = Plane.code, Box.code, Prism.code, TriangleMesh.code
"""Kind codes the contact kernels name: a plane's half-space, a box's own bound, the shapes of shared arrays."""


@persistent
@dataclass(eq=False)
class Collider(Checked):
    """A shape cloth collides with, with its contact margin and friction; needs a Transform on the entity."""

    shape: Any = checked_field(Instance(SHAPES, "one of " + ", ".join(s.__name__ for s in SHAPES)))
    """One of ``SHAPES``: Plane, Sphere, Capsule, Box, Prism, TriangleMesh, Cylinder, Cone."""
    thickness: float = checked_field(Real(0.0, unit=" [m]"), 0.0)
    """Extra margin [m] kept between cloth and surface, added to the cloth's own thickness."""
    friction: float = checked_field(Real(0.0, unit=" [-]"), 0.5)
    """Coulomb friction coefficient [-]: 0 ice, 0.3 polished wood, 0.6 cloth on wood, 1 rubber."""
    active: bool = checked_field(Flag(), True)
    """Switch the collider off without removing the component (components are not added per frame)."""
    two_way: bool = checked_field(Flag(), False)
    """The collider's body gives way to the cloth (a two-way pymunk body; the bridge sets it): the cloth solve may
    press cloth into it and the contact's push back out is the body's impulse, so the yarns are not solved again
    after the collisions where they touch it. False (static and moving level geometry): a particle touching it
    slides along it in the yarn solve and the stretch limit, never into it (``Cloth.contact``)."""


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


@persistent
class ColliderSet:
    """App resource: every active Collider packed into flat arrays once per step, for any model's kernels.

    Unified table, one row per collider (``entities`` gives its entity):
      kind (k,) int32 shape code (``Shape.code``); params (k, 4) shape sizes [m] (``Shape.pack``); bound (k,) [m]
      and extents (k, 3) [m], its bounding ball's radius (0: unbounded) and local half extents (a plane: its normal;
      ``Shape.extents``); skin (k,) int8, ``Shape.skin``; margin (k,) [m]; friction (k,) [-];
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
        self.bound = np.zeros(0)
        self.extents = np.zeros((0, 3))
        self.skin = np.zeros(0, np.int8)
        self.margin = np.zeros(0)
        self.friction = np.zeros(0)
        self.two_way = np.zeros(0, np.bool_)
        self.pose0 = np.zeros((0, 7))
        self.pose1 = np.zeros((0, 7))
        self.mesh = np.zeros(0, np.int32)
        self.polygons = np.zeros((0, 2))
        self.meshes: list[TriangleMesh] = []
        self.mesh_arrays: tuple[np.ndarray, ...] | None = None
        """Read-only (``pack_meshes``): the meshes' triangle and grid indices are never written in place."""
        self.impulse = np.zeros((0, 3))
        self.impulse_point = np.zeros((0, 4))
        self.touching: set[int] = set()

    @property
    def count(self) -> int:
        """Number of packed colliders."""
        return self.kind.shape[0]

    def pack_meshes(self, meshes: list[TriangleMesh]) -> None:
        """Keep ``meshes`` and their concatenated vertices [m], triangles, grids (origin [m], cell size [m], shape,
        offsets), cell starts and cell triangles as ``mesh_arrays``, each read-only: a kernel reads those indices
        unchecked, so an in-place write must not reach it. Called when the set of meshes changes (they are static)."""
        info = np.zeros((len(meshes), 10))
        verts, tris, cells = [np.zeros((0, 3))], [np.zeros((0, 3), np.int32)], [np.zeros(0, np.int32)]
        starts = [] if meshes else [np.zeros(1, np.int64)]           # no mesh: one empty cell start
        v_off = t_off = s_off = c_off = 0
        for k, m in enumerate(meshes):
            info[k] = (*m.grid_origin, m.cell_size, *m.grid_shape, t_off, s_off, c_off)
            verts.append(m.vertices)
            tris.append(m.triangles + v_off)
            starts.append(m.cell_start)
            cells.append(m.cell_triangles)
            v_off += m.vertices.shape[0]
            t_off += m.triangles.shape[0]
            s_off += m.cell_start.shape[0]
            c_off += m.cell_triangles.shape[0]
        self.meshes = meshes
        self.mesh_arrays = tuple(frozen(a) for a in (
            np.concatenate(verts).astype(np.float64), np.concatenate(tris).astype(np.int32), info,
            np.concatenate(starts).astype(np.int64), np.concatenate(cells).astype(np.int32)))
