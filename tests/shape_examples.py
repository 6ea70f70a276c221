"""Every collider shape as the tests use it: an example of each shape of ``collider.SHAPES`` and an independent
NumPy reference of its signed distance (written here, never calling Loom's kernels).

The tests that mean "every shape" build their shapes from ``every_shape`` (a shape added to the table without its
entry here fails tests/test_shape_table.py's ``test_every_shape_has_an_example``).
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from loom.components.collider import SHAPES, Box, Capsule, Cone, Cylinder, Plane, Prism, Shape, Sphere, TriangleMesh

_CUBE_V = np.array([[x, y, z] for x in (-0.3, 0.3) for y in (-0.2, 0.2) for z in (-0.25, 0.25)])
_CUBE_T = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                    [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])
"""A closed box mesh (half extents 0.3, 0.2, 0.25 m), counter-clockwise seen from outside."""
_HEXAGON = np.array([[0.3 * math.cos(a), 0.3 * math.sin(a)] for a in np.linspace(0, 2 * math.pi, 7)[:-1]])

ARGUMENTS: dict[type[Shape], dict] = {
    Plane: dict(normal=(0.0, 1.0, 0.0)),
    Sphere: dict(radius=0.3),
    Capsule: dict(radius=0.15, half_length=0.25),
    Box: dict(half_extents=(0.3, 0.2, 0.25)),
    Prism: dict(polygon=_HEXAGON, half_depth=0.2),
    TriangleMesh: dict(vertices=_CUBE_V, triangles=_CUBE_T),
    Cylinder: dict(radius=0.3, half_height=0.15),
    Cone: dict(radius=0.35, half_height=0.2),
}
"""Valid constructor arguments of each shape, about 0.3 m across."""
_UNSCALED = ("normal", "triangles")


def example(shape_class: type[Shape], scale: float = 1.0) -> Shape:
    """A shape of ``shape_class`` from ``ARGUMENTS``, its lengths times ``scale``."""
    arguments = {name: value if name in _UNSCALED else np.asarray(value, float) * scale
                 for name, value in ARGUMENTS[shape_class].items()}
    return shape_class(**{k: float(v) if np.ndim(v) == 0 and k not in _UNSCALED else v for k, v in arguments.items()})


def every_shape(scale: float = 1.0) -> list[Shape]:
    """One example of every shape of ``collider.SHAPES``, in table order."""
    return [example(shape_class, scale) for shape_class in SHAPES]


# --- independent references: signed distance [m] of local points (n, 3), negative inside -------------------------
def _box(p: np.ndarray, half: np.ndarray) -> np.ndarray:
    q = np.abs(p) - half
    return np.linalg.norm(np.maximum(q, 0.0), axis=1) + np.minimum(q.max(axis=1), 0.0)


def _segments_2d(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance of 2D points p (n, 2) to the nearest of the segments a[i]–b[i] (m, 2)."""
    ab = b - a
    ap = p[:, None, :] - a[None, :, :]
    length2 = np.maximum((ab * ab).sum(axis=1), 1e-300)
    t = np.clip((ap * ab[None]).sum(axis=2) / length2, 0.0, 1.0)
    closest = a[None] + t[..., None] * ab[None]
    return np.linalg.norm(p[:, None, :] - closest, axis=2).min(axis=1)


def _convex_2d(p: np.ndarray, poly: np.ndarray) -> np.ndarray:
    """Signed distance to a convex counter-clockwise polygon: ± the distance to its boundary."""
    a, b = poly, np.roll(poly, -1, axis=0)
    edge = b - a
    outward = np.stack([edge[:, 1], -edge[:, 0]], axis=1)
    inside = (((p[:, None, :] - a[None]) * outward[None]).sum(axis=2) <= 0.0).all(axis=1)
    d = _segments_2d(p, a, b)
    return np.where(inside, -d, d)


def _extruded(d2: np.ndarray, along: np.ndarray, half: float) -> np.ndarray:
    """Exact signed distance of a 2D region of signed distance d2 extruded ±half along an axis."""
    q = np.stack([d2, np.abs(along) - half], axis=1)
    return np.linalg.norm(np.maximum(q, 0.0), axis=1) + np.minimum(q.max(axis=1), 0.0)


def _round(p: np.ndarray, section: list[tuple[float, float]]) -> np.ndarray:
    """A convex solid of revolution about y whose meridian section (ρ, y) is the convex polygon ``section``: the 3D
    distance is the distance in the plane through the axis."""
    return _convex_2d(np.stack([np.hypot(p[:, 0], p[:, 2]), p[:, 1]], axis=1), np.array(section))


def _capsule(p: np.ndarray, r: float, h: float) -> np.ndarray:
    core = np.stack([0.0 * p[:, 0], np.clip(p[:, 1], -h, h), 0.0 * p[:, 0]], axis=1)
    return np.linalg.norm(p - core, axis=1) - r


def _cone(p: np.ndarray, r0: float, r1: float, h: float) -> np.ndarray:
    # the meridian section on both sides of the axis, counter-clockwise; a pointed cone's is a triangle
    return _round(p, [(-r0, -h), (r0, -h), (r1, h), (-r1, h)] if r1 > 0 else [(-r0, -h), (r0, -h), (0.0, h)])


def reference(shape: Shape) -> Callable[[np.ndarray], np.ndarray]:
    """The signed distance [m] of local points (n, 3) to ``shape``, negative inside, in NumPy."""
    if isinstance(shape, Plane):
        return lambda p: p @ shape.normal
    if isinstance(shape, Sphere):
        return lambda p: np.linalg.norm(p, axis=1) - shape.radius
    if isinstance(shape, Capsule):
        return lambda p: _capsule(p, shape.radius, shape.half_length)
    if isinstance(shape, Box):
        return lambda p: _box(p, shape.half_extents)
    if isinstance(shape, Prism):
        return lambda p: _extruded(_convex_2d(p[:, :2], shape.polygon), p[:, 2], shape.half_depth)
    if isinstance(shape, TriangleMesh):          # the examples' meshes are closed axis-aligned boxes
        lo, hi = shape.vertices.min(axis=0), shape.vertices.max(axis=0)
        return lambda p: _box(p - (lo + hi) / 2, (hi - lo) / 2)
    if isinstance(shape, Cylinder):
        return lambda p: _extruded(np.hypot(p[:, 0], p[:, 2]) - shape.radius, p[:, 1], shape.half_height)
    if isinstance(shape, Cone):
        return lambda p: _cone(p, shape.radius, shape.top_radius, shape.half_height)
    raise KeyError(f"no reference distance for {type(shape).__name__}: add one to tests/shape_examples.py")
