"""Property tests (hypothesis) over constructors and loaders: any input gives a valid, all-finite object
or a ValueError/TypeError naming the owner and field — never another exception, never a NaN inside.

Inputs: random shapes and dtypes, NaN/inf, empty arrays, out-of-range indices, duplicate and
degenerate triangles, non-manifold meshes. Examples are bounded (``EXAMPLES`` each) so the file
runs in seconds; ``derandomize`` keeps CI reproducible.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from loom.components import (Cloth, ClothMaterial, Collider, ImplicitSettings, MassSpringSettings, Pin, Transform,
                             VerletSettings, Wind)
from loom.components.collider import SHAPES
from loom.components.inertia import Inertia
from loom.engine import App, mesh
from loom.systems import DefaultPlugins
from shape_examples import ARGUMENTS

EXAMPLES = 40
bounded = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

HOSTILE_FLOATS = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64),
                           st.sampled_from([0.0, -0.0, 1e-300, -1.0, 1e300, math.nan, math.inf, -math.inf]))
SCALARS = st.one_of(HOSTILE_FLOATS, st.integers(-10, 10), st.booleans(), st.none(), st.text(max_size=3))
DTYPES = st.sampled_from([np.float64, np.float32, np.int64, np.int32, np.uint8, np.bool_, np.complex128, object])


def arrays_of(shape_strategy, elements=HOSTILE_FLOATS):
    """Arrays of a random dtype and shape from ``shape_strategy``, hostile values included."""
    @st.composite
    def build(draw):
        shape = draw(shape_strategy)
        values = draw(hnp.arrays(np.float64, shape, elements=elements))
        dtype = draw(DTYPES)
        with np.errstate(all="ignore"):
            try:
                return values.astype(dtype)
            except (OverflowError, ValueError):
                return values
    return build()


SHAPES_3 = st.one_of(st.tuples(st.integers(0, 12), st.just(3)), hnp.array_shapes(min_dims=0, max_dims=3, max_side=5))
SHAPES_ANY = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)


INF_ALLOWED = {"link_max"}
"""Fields where inf is documented data, not corruption (Cloth.link_max: inf where no strain limit applies)."""


def all_finite(obj) -> list[str]:
    """Names of the float fields of a dataclass instance that hold NaN or inf (empty if none)."""
    bad = []
    for f in dataclasses.fields(obj):
        if f.name in INF_ALLOWED:
            value = getattr(obj, f.name, None)
            if isinstance(value, np.ndarray) and np.isnan(value).any():
                bad.append(f.name)
            continue
        value = getattr(obj, f.name, None)
        if isinstance(value, np.ndarray) and value.dtype.kind == "f" and not np.isfinite(value).all():
            bad.append(f.name)
        elif isinstance(value, float) and not math.isfinite(value):
            bad.append(f.name)
    return bad


def outcome(build, owner: str):
    """Run ``build()``: return the object if valid and all finite; a ValueError/TypeError must name ``owner.``."""
    try:
        obj = build()
    except (ValueError, TypeError) as error:
        assert f"{owner}." in str(error) or f"{owner} " in str(error), f"error does not name {owner}: {error}"
        return None
    if dataclasses.is_dataclass(obj):
        assert not all_finite(obj), f"{owner}: non-finite fields {all_finite(obj)} accepted"
    return obj


# --- engine.mesh.from_triangles and Cloth.from_mesh -------------------------------------------------------

@st.composite
def triangle_soups(draw):
    """Positions and triangles: random counts, hostile values, duplicates, out-of-range and repeated indices."""
    n = draw(st.integers(0, 9))
    positions = draw(st.one_of(
        hnp.arrays(np.float64, (n, 3), elements=st.floats(-2.0, 2.0)),
        arrays_of(SHAPES_3)))
    t = draw(st.integers(0, 8))
    triangles = draw(st.one_of(
        hnp.arrays(np.int64, (t, 3), elements=st.integers(-1, n + 1)),
        hnp.arrays(np.int64, (t, 3), elements=st.integers(0, max(n - 1, 0))),
        arrays_of(SHAPES_3, elements=st.floats(-3, 12))))
    if draw(st.booleans()) and np.ndim(triangles) == 2 and len(triangles):
        triangles = np.concatenate([triangles, triangles[:1][:, ::-1]])          # a duplicate, reversed
    return positions, triangles


@bounded
@given(triangle_soups())
def test_from_triangles_builds_a_finite_mesh_or_names_the_field(soup):
    positions, triangles = soup
    m = outcome(lambda: mesh.from_triangles(positions, triangles), "from_triangles")
    if m is None:
        return
    assert np.isfinite(m.positions).all() and np.isfinite(m.uv).all()
    assert m.triangles.min() >= 0 and m.triangles.max() < m.positions.shape[0]
    cloth = outcome(lambda: Cloth.from_mesh(m, "cotton"), "Cloth")
    if cloth is not None:
        assert np.isfinite(cloth.mass).all() and (cloth.mass > 0).all() and np.isfinite(cloth.link_rest).all()


@bounded
@given(st.integers(3, 6), st.floats(0.2, 2.0), st.integers(0, 5))
def test_non_manifold_fans_build_and_step_without_nan(fins, size, seed):
    # ``fins`` triangles share the edge (0, 1): non-manifold beyond two; alternate windings stay consistent pairwise
    rng = np.random.default_rng(seed)
    positions = [[0.0, 0.0, 0.0], [0.0, size, 0.0]]
    triangles = []
    for k in range(fins):
        angle = 2.0 * math.pi * k / fins + 0.1 * rng.random()
        positions.append([size * math.cos(angle), 0.5 * size, size * math.sin(angle)])
        triangles.append([0, 1, k + 2] if k % 2 == 0 else [1, 0, k + 2])
    m = outcome(lambda: mesh.from_triangles(np.array(positions), np.array(triangles)), "from_triangles")
    if m is None:
        return
    cloth = Cloth.from_mesh(m, "silk")
    app = App(dt=1 / 60, substeps=4)
    try:
        app.add_plugin(DefaultPlugins)
        app.spawn(cloth, Pin(index=[0, 1]))
        app.step(10)
        assert np.isfinite(cloth.x).all() and np.isfinite(cloth.v).all()
        assert cloth.rejected_steps == 0
    finally:
        app.close()


# --- Cloth.from_particles and the direct constructor ----------------------------------------------------

@bounded
@given(arrays_of(SHAPES_3), st.one_of(SCALARS, arrays_of(SHAPES_ANY)),
       st.one_of(arrays_of(hnp.array_shapes(min_dims=1, max_dims=2, min_side=0, max_side=4),
                           elements=st.floats(-2, 12)),
                 hnp.arrays(np.int32, st.tuples(st.integers(0, 5), st.just(2)), elements=st.integers(-1, 12))),
       st.one_of(st.none(), arrays_of(SHAPES_ANY)))
def test_from_particles_builds_a_finite_cloth_or_names_the_field(positions, mass, links, inv_mass):
    outcome(lambda: Cloth.from_particles(positions, mass, links, inv_mass=inv_mass), "Cloth")


@bounded
@given(st.sampled_from(["xpbd", "verlet", "mass_spring", "implicit", "pbd", 3, None]),
       st.one_of(st.none(), st.sampled_from([VerletSettings(), MassSpringSettings(), ImplicitSettings(), "x"])),
       st.one_of(st.integers(-2, 4), SCALARS))
def test_cloth_model_settings_and_iterations_are_checked(model, model_settings, iterations):
    sheet = mesh.grid(3, 3, 1.0, 1.0)
    outcome(lambda: Cloth.from_mesh(sheet, "cotton", model=model, settings=model_settings,
                                    iterations=iterations), "Cloth")


# --- components ---------------------------------------------------------------------------------------

MATERIAL_FIELDS = ("density", "stretch_compliance", "shear_compliance", "bend_compliance", "bend_angle_compliance",
                   "damping", "thickness", "friction", "strain_limit")


@bounded
@given(st.dictionaries(st.sampled_from(MATERIAL_FIELDS + ("bend_model",)), SCALARS, max_size=4))
def test_cloth_material_is_finite_or_names_the_field(changes):
    material = outcome(lambda: ClothMaterial(**changes), "ClothMaterial")
    if material is not None:
        outcome(lambda: Cloth.from_mesh(mesh.grid(2, 2, 1.0, 1.0), material), "Cloth")


@bounded
@given(st.one_of(arrays_of(SHAPES_ANY), SCALARS), st.one_of(SCALARS, arrays_of(SHAPES_ANY)),
       st.one_of(SCALARS, st.floats(-1, 2)), st.one_of(SCALARS, st.integers(-3, 5)))
def test_wind_is_finite_or_names_the_field(velocity, gust, turbulence, seed):
    outcome(lambda: Wind(velocity=velocity, gust=gust, turbulence=turbulence, seed=seed), "Wind")


@bounded
@given(st.one_of(arrays_of(SHAPES_ANY, elements=st.floats(-3, 20)), SCALARS,
                 hnp.arrays(np.int64, st.integers(0, 5), elements=st.integers(-2, 20))),
       st.one_of(st.none(), arrays_of(SHAPES_3)), st.one_of(st.none(), arrays_of(SHAPES_ANY)))
def test_pin_is_finite_or_names_the_field(index, target, active):
    pin = outcome(lambda: Pin(index=index, target=target, active=active), "Pin")
    if pin is None:
        return
    app = App()
    try:
        app.add_plugin(DefaultPlugins)
        cloth = Cloth.from_mesh(mesh.grid(3, 3, 1.0, 1.0), "cotton")
        app.spawn(cloth, pin)
        try:
            app.step(2)
        except ValueError as error:                      # an index beyond the cloth: named when first stepped
            assert "Pin.index" in str(error), error
            return
        assert np.isfinite(cloth.x).all()
        assert cloth.rejected_steps == 0
    finally:
        app.close()


@bounded
@given(st.one_of(arrays_of(SHAPES_ANY), SCALARS), st.one_of(arrays_of(SHAPES_ANY), SCALARS,
                                                              st.just(np.diag([1.0, -1.0, 1.0]))))
def test_transform_is_finite_or_names_the_field(position, rotation):
    outcome(lambda: Transform(position=position, rotation=rotation), "Transform")


@bounded
@given(SCALARS, SCALARS)
def test_inertia_is_finite_or_names_the_field(linear, angular):
    outcome(lambda: Inertia(linear=linear, angular=angular), "Inertia")


SHAPE_ARRAYS = st.one_of(arrays_of(SHAPES_ANY), arrays_of(st.tuples(st.integers(0, 6), st.sampled_from([2, 3])),
                                                        elements=st.floats(-2, 2)))


@bounded
@given(st.sampled_from(SHAPES), st.data(), SCALARS, SCALARS)
def test_every_collider_shape_is_finite_or_names_the_field(shape_class, data, thickness, friction):
    arguments = {}                                            # each field of every shape of collider.SHAPES drawn
    for name, value in ARGUMENTS[shape_class].items():        # hostile: scalars, arrays, or a valid value
        hostile = SCALARS if np.ndim(value) == 0 else SHAPE_ARRAYS
        arguments[name] = data.draw(st.one_of(hostile, st.just(value)), label=name)
    shape = outcome(lambda: shape_class(**arguments), shape_class.__name__)
    if shape is not None:
        outcome(lambda: Collider(shape, thickness=thickness, friction=friction), "Collider")


@pytest.mark.parametrize("cls, fields", [
    (VerletSettings, ("drag", "stretch_max", "stretch_min", "bend_min", "passes")),
    (MassSpringSettings, ("integrator", "stretch_stiffness", "shear_stiffness", "bend_stiffness", "spring_damping",
                          "viscous_damping", "fluid_viscosity", "fluid_velocity", "strain_limit", "limit_passes")),
    (ImplicitSettings, ("stretch_stiffness", "shear_stiffness", "bend_stiffness", "stretch_damping", "b_u", "b_v",
                        "tolerance", "max_iterations", "max_stretch_change")),
])
@bounded
@given(data=st.data())
def test_model_settings_are_finite_or_name_the_field(cls, fields, data):
    changes = data.draw(st.dictionaries(st.sampled_from(fields), st.one_of(SCALARS, arrays_of(SHAPES_ANY)),
                                        max_size=3))
    outcome(lambda: cls(**changes), cls.__name__)
