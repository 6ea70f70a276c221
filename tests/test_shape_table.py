"""The shape table: every shape of ``collider.SHAPES`` walked and held to the same requirements.

For each shape: its kernel signed distance against an independent NumPy reference (tests/shape_examples.py), a small
cloth dropped on it coming to rest outside it, its tessellation on its surface, a bit-exact snapshot round trip, and
every constructor field validated. A shape added to the table without its example there fails
``test_every_shape_has_an_example``.
"""
from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import numpy as np
import pytest

import loom
from loom.components import Cloth, Collider, ColliderSet, Prop, Transform
from loom.components.collider import SHAPES, Capsule, Cone, Plane, Shape, TriangleMesh
from loom.engine import mesh
from loom.systems.collision.environment import gather_colliders
from loom.systems.render.gl import tessellate
from loom.systems.shared import shapes as kernels
from shape_examples import ARGUMENTS, example, reference

ROOT = Path(__file__).resolve().parents[1]
THICK = 0.01                                                  # cloth thickness [m]
EXAMPLES = [example(s) for s in SHAPES] + [Cone(0.3, 0.2, top_radius=0.1),      # a frustum
                                           Cone(0.1, 0.25, top_radius=0.3)]     # wider at the top
NAMES = [s.__name__ for s in SHAPES] + ["Cone-frustum", "Cone-inverted"]


def test_every_shape_has_an_example():
    assert set(ARGUMENTS) == set(SHAPES), "a shape of collider.SHAPES needs its example in tests/shape_examples.py"
    assert [s.code for s in SHAPES] == list(range(len(SHAPES)))
    for shape in EXAMPLES:
        reference(shape)


def _kernel_distance(shape: Shape, points: np.ndarray, new_app) -> tuple[np.ndarray, np.ndarray]:
    """The kernels' signed distance and normal at local points, the collider packed by ``gather_colliders``."""
    app = new_app()
    app.spawn(Collider(shape), Transform())
    gather_colliders(app, 1.0 / 60.0)
    packed = app.resource(ColliderSet)
    assert packed.kind.tolist() == [type(shape).code]
    table_of = kernels.Shapes(packed.kind, packed.params, packed.polygons, packed.mesh, *packed.mesh_arrays)
    out = np.zeros(4)
    result = np.zeros((len(points), 4))
    for i, (x, y, z) in enumerate(points):
        kernels.sdf(table_of, 0, x, y, z, out)
        result[i] = out
    return result[:, 0], result[:, 1:]


def _samples(seed: int, scale: float = 0.45, n: int = 400) -> np.ndarray:
    rng = np.random.default_rng(seed)
    points = rng.uniform(-scale, scale, (n, 3))
    points[: n // 4, 0] = 0.0                                  # on the axis of round shapes, on symmetry planes
    points[: n // 8, 2] = 0.0
    return points


@pytest.mark.parametrize("shape", EXAMPLES, ids=NAMES)
def test_kernel_distance_matches_an_independent_reference(shape, new_app):
    points = _samples(type(shape).code)
    d, n = _kernel_distance(shape, points, new_app)
    distance = reference(shape)
    expected = distance(points)
    np.testing.assert_allclose(d, expected, atol=1e-9, err_msg=f"{type(shape).__name__}: signed distance")
    np.testing.assert_allclose(np.linalg.norm(n, axis=1), 1.0, atol=1e-9)
    foot = points - d[:, None] * n                             # stepping back along the normal lands on the surface
    unique = ~((np.hypot(points[:, 0], points[:, 2]) == 0.0) & isinstance(shape, Capsule))   # (not the core
    np.testing.assert_allclose(distance(foot[unique]), 0.0, atol=1e-9,      # segment: every way out is nearest)
                               err_msg=f"{type(shape).__name__}: normal")


@pytest.mark.parametrize("shape_class", SHAPES, ids=lambda s: s.__name__)
def test_cloth_dropped_on_every_shape_rests_outside_it(shape_class, make_app):
    shape = example(shape_class)
    distance = reference(shape)
    app = make_app()
    position = np.array([0.0, -0.25, 0.0]) if shape_class is Plane else np.zeros(3)
    app.spawn(Collider(shape, friction=0.6), Transform(position=position))
    if shape_class is not Plane:                                # a floor under it, for cloth sliding off
        app.spawn(Collider(Plane()), Transform(position=(0.0, -0.6, 0.0)))
    sheet = mesh.grid(14, 14, 0.8, 0.8, center=(0.03, 0.45, -0.02), plane="xz")
    cloth = Cloth.from_mesh(sheet, "cotton", thickness=THICK)
    app.spawn(cloth)
    links = np.asarray(sheet.stretch_links)
    rest = np.linalg.norm(sheet.positions[links[:, 0]] - sheet.positions[links[:, 1]], axis=1)
    worst = np.inf                                              # the smallest signed distance to the shape [m]
    for _ in range(120):
        app.step()
        worst = min(worst, float(distance(cloth.x - position).min()))
    lengths = np.linalg.norm(cloth.x[links[:, 0]] - cloth.x[links[:, 1]], axis=1)
    assert np.isfinite(cloth.x).all() and cloth.rejected_steps == 0
    assert worst > -2e-3, f"{shape_class.__name__}: a particle went {-worst * 1000:.2f} mm inside"
    assert (lengths / rest).max() <= 1.1, f"{shape_class.__name__}: links stretched {(lengths / rest).max():.2f}×"
    assert worst < 2.0 * THICK, f"{shape_class.__name__}: the cloth never reached the shape"
    assert np.abs(cloth.v).max() < 0.5, "at rest after two seconds"


@pytest.mark.parametrize("shape", EXAMPLES, ids=NAMES)
def test_tessellation_lies_on_the_surface_and_faces_out(shape):
    distance = reference(shape)
    rows = tessellate(shape)                                    # what the GL renderer draws
    assert rows.shape[0] >= 3 and rows.shape[0] % 3 == 0 and rows.shape[1] == 8
    np.testing.assert_allclose(distance(rows[:, :3]), 0.0, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(rows[:, 3:6], axis=1), 1.0, atol=1e-9)
    if not isinstance(shape, Plane):                            # a little way out along the normal is outside
        assert (distance(rows[:, :3] + 1e-3 * rows[:, 3:6]) > 0.0).all()


@pytest.mark.parametrize("shape_class", SHAPES, ids=lambda s: s.__name__)
def test_look_changes_with_every_field(shape_class):
    arguments = ARGUMENTS[shape_class]
    shape = shape_class(**arguments)
    before = shape.look()
    assert before == shape.look()
    if shape_class is TriangleMesh:                             # fixed when built: a new mesh is a new look
        assert TriangleMesh(**arguments).look() != before
        return
    for name, value in arguments.items():
        changed = shape_class(**{**arguments, name: np.asarray(value, float) * 1.1 + 0.05})
        assert changed.look() != before, f"{shape_class.__name__}.{name} does not change the tessellation key"


@pytest.mark.parametrize("shape_class", SHAPES, ids=lambda s: s.__name__)
def test_snapshot_round_trip_of_every_shape_is_bit_exact(shape_class, make_app, tmp_path, resumed_runs):
    arguments = ARGUMENTS[shape_class]

    def scene():
        app = make_app()
        app.spawn(Collider(shape_class(**arguments), friction=0.4), Transform(position=(0.0, -0.1, 0.0)))
        app.spawn(Cloth.from_mesh(mesh.grid(8, 8, 0.5, 0.5, center=(0.0, 0.35, 0.0), plane="xz"),
                                  thickness=THICK))
        return app

    a, b = resumed_runs(scene, tmp_path / "s.loom", 20, 20)
    [(_, ca)], [(_, cb)] = list(a.query(Cloth)), list(b.query(Cloth))
    assert np.array_equal(ca.x, cb.x) and np.array_equal(ca.v, cb.v)
    [(_, sa)], [(_, sb)] = list(a.query(Collider)), list(b.query(Collider))
    assert type(sb.shape) is shape_class
    for field in dataclasses.fields(shape_class):
        assert np.array_equal(np.asarray(getattr(sa.shape, field.name)), np.asarray(getattr(sb.shape, field.name)))


def _bad_values(value):
    """Values no shape field takes: a string, NaN (of the field's shape), a negative size."""
    arr = np.asarray(value, float)
    return ["nope", np.full(arr.shape, np.nan) if arr.ndim else math.nan, -arr if arr.ndim == 0 else None]


@pytest.mark.parametrize("shape_class", SHAPES, ids=lambda s: s.__name__)
def test_every_constructor_field_is_validated(shape_class):
    arguments = ARGUMENTS[shape_class]
    init = [f.name for f in dataclasses.fields(shape_class) if f.init]
    assert set(init) <= set(shape_class._fields), "every constructor field is a checked field"
    shape_class(**arguments)
    for name in init:
        value = arguments.get(name, getattr(shape_class(**arguments), name))
        for bad in _bad_values(value):
            if bad is None:
                continue
            if name == "top_radius" or shape_class is Capsule and name == "half_length":
                bad = -1.0 if not isinstance(bad, str) else bad        # 0 allowed, below refused
            elif isinstance(bad, float) and bad == 0.0:
                continue
            with pytest.raises(ValueError, match=rf"^{shape_class.__name__}\.{name}"):
                shape_class(**{**arguments, name: bad})
            built = shape_class(**arguments)
            with pytest.raises(ValueError, match=rf"^{shape_class.__name__}\.{name}"):
                setattr(built, name, bad)
            assert np.array_equal(np.asarray(getattr(built, name)), np.asarray(getattr(shape_class(**arguments),
                                                                                        name)))


@pytest.mark.parametrize("shape_class", SHAPES, ids=lambda s: s.__name__)
def test_collider_and_prop_take_every_shape_and_loom_exports_it(shape_class):
    shape = example(shape_class)
    assert Collider(shape).shape is shape and Prop(shape).shape is shape
    assert getattr(loom, shape_class.__name__) is shape_class
    assert getattr(loom.components, shape_class.__name__) is shape_class


def test_an_unknown_kind_is_refused_not_taken_for_another_shape():
    assert math.isnan(kernels.basic_sdf(len(SHAPES) + 3, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0)[0])
    assert not kernels.is_basic(len(SHAPES) + 3)
    shapes = kernels.Shapes(np.array([len(SHAPES) + 3], np.int32), np.ones((1, 4)), np.zeros((0, 2)),
                            np.full(1, -1, np.int32), np.zeros((0, 3)), np.zeros((0, 3), np.int32), np.zeros((0, 10)),
                            np.zeros(1, np.int64), np.zeros(0, np.int32))
    out = np.zeros(4)
    kernels.sdf(shapes, 0, 0.0, 0.0, 0.0, out)
    assert math.isnan(out[0])
    with pytest.raises(ValueError, match=r"^Collider\.shape"):
        Collider("a cone")


def test_a_shape_without_its_table_entry_or_distance_is_refused(monkeypatch):
    @dataclasses.dataclass(eq=False)
    class Half(Shape):                                          # no pack, extents or tessellate
        radius: float = 1.0

    with pytest.raises(TypeError, match="abstract"):
        Half()
    monkeypatch.setattr(kernels, "_DISTANCES", {k: v for k, v in kernels._DISTANCES.items() if k is not Cone})
    with pytest.raises(RuntimeError, match="Cone"):
        kernels._dispatch()


def _doc_section() -> str:
    text = (ROOT / "docs" / "architecture.md").read_text()
    return text[text.index("## Add a collider shape"):text.index("## Add a cloth model")]


def test_the_add_a_shape_example_is_the_code_and_runs(make_app):
    blocks = re.findall(r"```python\n(.*?)```", _doc_section(), re.S)
    assert len(blocks) == 3
    entry, distance, use = blocks
    source = (ROOT / "components" / "collider.py").read_text()
    assert entry.strip() in source, "the doc's table entry is components/collider.py's Cone"
    assert distance.rstrip().endswith("...")                   # its head: the decorators, signature, docstring
    assert distance.rstrip()[:-3].strip() in (ROOT / "systems" / "shared" / "shapes.py").read_text()
    app = make_app()
    namespace = {"app": app, "loom": loom}
    exec(use, namespace)
    [(_, collider)] = list(app.query(Collider))
    assert type(collider.shape) is Cone and collider.shape.code == SHAPES.index(Cone) == len(SHAPES) - 1
    [(_, prop)] = list(app.query(Prop))
    assert prop.shape.top_radius == 0.05
    app.step(2)
