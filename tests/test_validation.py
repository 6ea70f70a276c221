"""Boundary checks of every constructor: bad input raises ValueError/TypeError naming Owner.field and the value."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from loom.components import PRESETS, Cloth, ClothMaterial, Gravity, Pin, Transform
from loom.engine import App, FixedClock, mesh

NO_LINKS = np.zeros((0, 2), np.int32)
NO_KINDS = np.zeros(0, np.int8)
MATERIAL_FIELDS = ("density", "stretch_compliance", "shear_compliance", "bend_compliance",
                   "bend_angle_compliance", "damping", "thickness", "friction", "strain_limit")
POSITIVE_FIELDS = ("density", "thickness")                  # must be > 0; the others >= 0


def line(n: int) -> np.ndarray:
    """n particles 0.1 m apart along x [m], (n, 3)."""
    x = np.zeros((n, 3))
    x[:, 0] = 0.1 * np.arange(n)
    return x


def ones_but(k: int, value: float, n: int = 20) -> np.ndarray:
    """n ones (a per-particle mass or inverse mass) with entry k set to ``value``."""
    values = np.ones(n)
    values[k] = value
    return values


def bare_cloth(n: int = 20, **fields) -> Cloth:
    """A cloth of n free particles on a line, no links, built with the direct constructor."""
    options = dict(x=line(n), mass=np.ones(n), links=NO_LINKS, link_kind=NO_KINDS)
    options.update(fields)
    return Cloth(**options)


# --- Cloth: particles -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_cloth_rejects_non_finite_positions(bad):
    x = line(5)
    x[2, 1] = bad
    with pytest.raises(ValueError, match=rf"Cloth\.x\[2\] = \[.*{re.escape(str(bad))}.*\]: must be finite"):
        bare_cloth(5, x=x)
    with pytest.raises(ValueError, match=rf"Cloth\.x\[2\] = \[.*{re.escape(str(bad))}.*\]: must be finite"):
        Cloth.from_particles(x, 1.0, [[0, 1]])


@pytest.mark.parametrize("shape", [(4, 2), (4,), (4, 3, 1)])
def test_cloth_rejects_positions_of_the_wrong_shape(shape):
    with pytest.raises(ValueError, match=r"Cloth\.x: shape .*expected \(n, 3\)"):
        Cloth.from_particles(np.zeros(shape), 1.0, [])


def test_cloth_rejects_an_empty_particle_array():
    with pytest.raises(ValueError, match=r"Cloth\.x: shape \(0, 3\): a cloth needs at least one particle"):
        Cloth.from_particles(np.zeros((0, 3)), 1.0, [])
    with pytest.raises(ValueError, match=r"Cloth\.x: shape \(0, 3\)"):
        Cloth(x=np.zeros((0, 3)), mass=np.zeros(0), links=NO_LINKS, link_kind=NO_KINDS)


@pytest.mark.parametrize("bad", [0.0, -1.0])
def test_cloth_rejects_a_mass_that_is_not_positive(bad):
    with pytest.raises(ValueError, match=rf"Cloth\.mass\[4\] = {re.escape(repr(bad))}: must be > 0"):
        bare_cloth(mass=ones_but(4, bad))


def test_cloth_from_particles_rejects_a_single_mass_that_is_not_positive():
    with pytest.raises(ValueError, match=r"Cloth\.mass = -2\.0: must be > 0"):
        Cloth.from_particles(line(3), -2.0, [[0, 1]])


def test_cloth_rejects_a_nan_mass():
    with pytest.raises(ValueError, match=r"Cloth\.mass\[6\] = nan: must be finite"):
        bare_cloth(mass=ones_but(6, math.nan))


def test_cloth_rejects_masses_of_the_wrong_length():
    with pytest.raises(ValueError, match=r"Cloth\.mass: shape \(19,\), expected \(20,\)"):
        bare_cloth(mass=np.ones(19))


def test_cloth_rejects_a_mass_so_small_its_inverse_overflows():
    # 1e-320 kg passes "> 0" but 1 / 1e-320 = inf: the cloth would hold an infinite inverse mass.
    with pytest.raises(ValueError, match=r"Cloth\.(inv_)?mass\[2\] = "):
        bare_cloth(mass=ones_but(2, 1e-320))


def test_cloth_rejects_negative_inverse_mass():
    with pytest.raises(ValueError, match=r"Cloth\.inv_mass\[17\] = -0\.5: must be >= 0"):
        bare_cloth(inv_mass=ones_but(17, -0.5))


def test_cloth_accepts_zero_inverse_mass_as_a_fixed_particle():
    cloth = bare_cloth(inv_mass=ones_but(0, 0.0))
    assert cloth.inv_mass[0] == 0.0 and cloth.base_inv_mass[0] == 0.0


def test_cloth_rejects_a_nan_inverse_mass():
    with pytest.raises(ValueError, match=r"Cloth\.inv_mass\[3\] = nan: must be finite"):
        bare_cloth(inv_mass=ones_but(3, math.nan))


# --- Cloth: triangles and links ---------------------------------------------------------------------------------

def test_cloth_rejects_a_triangle_index_out_of_range():
    with pytest.raises(ValueError, match=r"Cloth\.triangles\[1\] = \[ *0, *1, *20\]: out of range for 20 particles"):
        bare_cloth(triangles=[[0, 1, 2], [0, 1, 20]])
    with pytest.raises(ValueError, match=r"Cloth\.triangles\[0\] = \[ *-1, *1, *2\]: out of range"):
        bare_cloth(triangles=[[-1, 1, 2]])


def test_cloth_rejects_a_triangle_with_a_repeated_vertex():
    x = line(4)
    x[3] = (0.0, 1.0, 0.0)
    with pytest.raises(ValueError, match=r"Cloth\.triangles\[1\] = \[0, 3, 3\]: degenerate triangle"):
        bare_cloth(4, x=x, triangles=[[0, 1, 3], [0, 3, 3]])


def test_cloth_rejects_a_zero_area_triangle():
    # particles 0, 1, 2 lie on one line: the triangle has no area in the rest shape
    with pytest.raises(ValueError, match=r"Cloth\.triangles\[0\] = \[0, 1, 2\]: zero-area triangle"):
        bare_cloth(triangles=[[0, 1, 2]])


def test_cloth_rejects_float_triangles():
    with pytest.raises(TypeError, match=r"Cloth\.triangles: expected integer indices, got dtype float64"):
        bare_cloth(triangles=[[0.0, 1.0, 2.0]])


def test_cloth_rejects_a_link_index_out_of_range():
    with pytest.raises(ValueError, match=r"Cloth\.links\[1\] = \[ *0, *25\]: out of range for 20 particles"):
        Cloth.from_particles(line(20), 1.0, [[0, 1], [0, 25]])
    with pytest.raises(ValueError, match=r"Cloth\.links\[0\] = \[ *-1, *2\]: out of range"):
        Cloth.from_particles(line(20), 1.0, [[-1, 2]])


def test_cloth_rejects_a_link_joining_a_particle_to_itself():
    with pytest.raises(ValueError, match=r"Cloth\.links\[1\] = \[3, 3\]: a link needs two different particles"):
        Cloth.from_particles(line(5), 1.0, [[0, 1], [3, 3]])


def test_cloth_rejects_a_link_of_zero_rest_length():
    x = line(3)
    x[2] = x[1]                                                # particles 1 and 2 coincide
    with pytest.raises(ValueError, match=r"Cloth\.links\[1\] = \[1, 2\]: rest length 0 m"):
        Cloth.from_particles(x, 1.0, [[0, 1], [1, 2]])


def test_cloth_rejects_float_links():
    with pytest.raises(TypeError, match=r"Cloth\.links: expected integer indices"):
        Cloth.from_particles(line(3), 1.0, [[0.0, 1.0]])


@pytest.mark.parametrize("kind", [3, -1])
def test_cloth_rejects_an_unknown_link_kind(kind):
    with pytest.raises(ValueError, match=rf"Cloth\.link_kind\[1\] = {kind}: expected 0 stretch, 1 shear, 2 bend"):
        bare_cloth(links=[[0, 1], [1, 2]], link_kind=[0, kind])


def test_cloth_rejects_link_kinds_of_the_wrong_length_or_type():
    with pytest.raises(ValueError, match=r"Cloth\.link_kind: shape \(2,\) dtype int64, expected \(1,\)"):
        bare_cloth(links=[[0, 1]], link_kind=np.array([0, 0], np.int64))
    with pytest.raises(ValueError, match=r"Cloth\.link_kind: shape \(1,\) dtype float64"):
        bare_cloth(links=[[0, 1]], link_kind=[0.5])


# --- Cloth: solver options and material -------------------------------------------------------------------------

def test_cloth_rejects_an_unknown_model():
    with pytest.raises(ValueError, match=r"Cloth\.model = 'pbd': expected one of xpbd"):
        bare_cloth(model="pbd")
    with pytest.raises(ValueError, match=r"Cloth\.model = 'pbd': expected one of xpbd"):
        Cloth.from_mesh(mesh.grid(4, 4, 1.0, 1.0), model="pbd")


def test_cloth_rejects_zero_iterations():
    with pytest.raises(ValueError, match=r"Cloth\.iterations = 0: must be >= 1"):
        bare_cloth(iterations=0)
    with pytest.raises(ValueError, match=r"Cloth\.iterations = 0: must be >= 1"):
        Cloth.from_mesh(mesh.grid(4, 4, 1.0, 1.0), iterations=0)


@pytest.mark.parametrize("bad", [True, 2.0])
def test_cloth_rejects_iterations_that_are_not_an_integer(bad):
    with pytest.raises(TypeError, match=rf"Cloth\.iterations = {bad!r}: must be an integer"):
        bare_cloth(iterations=bad)


def test_cloth_rejects_a_material_that_is_not_a_cloth_material():
    with pytest.raises(TypeError, match=r"Cloth\.material = 'silk': expected a ClothMaterial"):
        bare_cloth(material="silk")
    with pytest.raises(TypeError, match=r"Cloth\.material = \{'density': 0\.2\}: expected a ClothMaterial"):
        Cloth.from_particles(line(3), 1.0, [[0, 1]], material={"density": 0.2})


def test_cloth_from_mesh_rejects_an_unknown_preset_name():
    with pytest.raises(ValueError, match=r"ClothMaterial\.preset = 'wool': expected one of cotton, silk"):
        Cloth.from_mesh(mesh.grid(4, 4, 1.0, 1.0), "wool")


def test_cloth_from_mesh_validates_material_overrides():
    with pytest.raises(ValueError, match=r"ClothMaterial\.damping = -1\.0: must be >= 0"):
        Cloth.from_mesh(mesh.grid(4, 4, 1.0, 1.0), "silk", damping=-1.0)
    cloth = Cloth.from_mesh(mesh.grid(4, 4, 1.0, 1.0), ClothMaterial(), damping=0.0)
    assert cloth.material.damping == 0.0


def test_cloth_from_mesh_rejects_something_that_is_not_a_mesh():
    with pytest.raises(TypeError, match=r"Cloth\.from_mesh mesh = 'grid': expected an engine\.mesh\.Mesh"):
        Cloth.from_mesh("grid")


# --- ClothMaterial ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("field", MATERIAL_FIELDS)
@pytest.mark.parametrize(("bad", "error", "why"), [
    (-1.0, ValueError, r"must be >=? 0"),
    (math.nan, ValueError, r"must be finite"),
    (math.inf, ValueError, r"must be finite"),
    (-math.inf, ValueError, r"must be finite"),
    (True, TypeError, r"must be a real number"),
    ("0.1", TypeError, r"must be a real number"),
])
def test_cloth_material_rejects_a_bad_number_naming_the_field(field, bad, error, why):
    with pytest.raises(error, match=rf"ClothMaterial\.{field} = {re.escape(repr(bad))}: {why}"):
        ClothMaterial(**{field: bad})


@pytest.mark.parametrize("field", POSITIVE_FIELDS)
def test_cloth_material_rejects_zero_density_and_thickness(field):
    with pytest.raises(ValueError, match=rf"ClothMaterial\.{field} = 0\.0: must be > 0"):
        ClothMaterial(**{field: 0.0})


@pytest.mark.parametrize("field", sorted(set(MATERIAL_FIELDS) - set(POSITIVE_FIELDS)))
def test_cloth_material_accepts_zero_for_fields_that_may_be_zero(field):
    assert getattr(ClothMaterial(**{field: 0.0}), field) == 0.0


def test_cloth_material_rejects_an_unknown_bend_model():
    with pytest.raises(ValueError, match=r"ClothMaterial\.bend_model = 'angle': expected one of distance, dihedral"):
        ClothMaterial(bend_model="angle")


def test_cloth_material_rejects_a_negative_strain_limit_and_none_turns_it_off():
    with pytest.raises(ValueError, match=r"ClothMaterial\.strain_limit = -0\.1: must be >= 0"):
        ClothMaterial(strain_limit=-0.1)
    assert ClothMaterial(strain_limit=None).strain_limit is None


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_constructs_and_builds_a_cloth(name):
    material = ClothMaterial.preset(name)
    assert material == PRESETS[name]
    cloth = Cloth.from_mesh(mesh.grid(4, 4, 1.0, 1.0), name)
    assert cloth.material == material


def test_preset_overrides_replace_only_the_fields_given():
    denim = ClothMaterial.preset("denim", damping=0.0)
    assert denim.damping == 0.0
    assert denim.density == PRESETS["denim"].density
    assert PRESETS["denim"].damping == 0.8                          # the preset itself is untouched


def test_preset_overrides_are_validated():
    with pytest.raises(ValueError, match=r"ClothMaterial\.density = -0\.4: must be > 0"):
        ClothMaterial.preset("denim", density=-0.4)


def test_unknown_preset_name_lists_the_presets():
    with pytest.raises(ValueError, match=r"ClothMaterial\.preset = 'tweed': expected one of cotton, silk, denim"):
        ClothMaterial.preset("tweed")


# --- Pin ------------------------------------------------------------------------------------------------------------

def test_pin_rejects_an_empty_index_array():
    with pytest.raises(ValueError, match=r"Pin\.index: shape \(0,\), expected \(k,\) with k >= 1"):
        Pin(index=np.zeros(0, np.int32))


def test_pin_rejects_an_empty_index_list():
    # [] is float64 to numpy; Cloth's index checks treat an empty list as integers, so should Pin
    with pytest.raises(ValueError, match=r"Pin\.index: shape \(0,\), expected \(k,\) with k >= 1"):
        Pin(index=[])


def test_pin_rejects_float_indices():
    with pytest.raises(TypeError, match=r"Pin\.index: expected integer particle indices, got dtype float64"):
        Pin(index=[0.0, 1.0])


def test_pin_rejects_a_negative_index():
    with pytest.raises(ValueError, match=r"Pin\.index\[1\] = -2: particle indices are >= 0"):
        Pin(index=[1, -2])


def test_pin_rejects_a_duplicate_index():
    with pytest.raises(ValueError, match=r"Pin\.index: particle 1 is pinned twice"):
        Pin(index=[1, 2, 1])


def test_pin_rejects_a_two_dimensional_index():
    with pytest.raises(ValueError, match=r"Pin\.index: shape \(1, 2\), expected \(k,\)"):
        Pin(index=[[1, 2]])


def test_pin_accepts_a_single_integer_index():
    assert Pin(index=3).index.tolist() == [3]


def test_pin_rejects_targets_of_the_wrong_shape():
    with pytest.raises(ValueError, match=r"Pin\.target: shape \(1, 3\), expected \(2, 3\)"):
        Pin(index=[1, 2], target=[[0.0, 0.0, 0.0]])


def test_pin_rejects_a_nan_target():
    with pytest.raises(ValueError, match=r"Pin\.target\[1\] = \[nan, .*\]: must be finite"):
        Pin(index=[1, 2], target=[[0.0, 0.0, 0.0], [math.nan, 0.0, 0.0]])


def test_pin_rejects_an_offset_without_attach_to():
    with pytest.raises(ValueError, match=r"Pin\.offset: given without attach_to"):
        Pin(index=[1, 2], offset=[[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])


def test_pin_rejects_an_active_mask_of_the_wrong_shape_or_dtype():
    with pytest.raises(ValueError, match=r"Pin\.active: shape \(1,\) dtype bool, expected \(2,\) bool"):
        Pin(index=[1, 2], active=[True])
    with pytest.raises(ValueError, match=r"Pin\.active: shape \(2,\) dtype int64, expected \(2,\) bool"):
        Pin(index=[1, 2], active=np.array([1, 0], np.int64))


def test_pin_index_out_of_range_raises_when_the_app_first_steps(make_app):
    app = make_app()
    app.spawn(Cloth.from_mesh(mesh.grid(4, 4, 1.0, 1.0)), Pin(index=[0, 99]))     # fine until bound to the cloth
    with pytest.raises(ValueError, match=r"Pin\.index\[1\] = 99: out of range for a cloth of 16 particles"):
        app.step()


def test_pin_attached_to_an_entity_without_transform_raises_naming_attach_to(make_app):
    app = make_app()
    carrier = app.spawn()                                               # an entity with no Transform
    app.spawn(Cloth.from_mesh(mesh.grid(4, 4, 1.0, 1.0)), Pin(index=[0, 3], attach_to=carrier))
    with pytest.raises(ValueError, match=rf"Pin\.attach_to = {carrier}: that entity has no Transform"):
        app.step()


# --- Transform and Gravity -------------------------------------------------------------------------------------------

def test_transform_rejects_a_non_orthonormal_rotation():
    with pytest.raises(ValueError, match=r"Transform\.rotation = .*must be a rotation matrix.*off identity by 3"):
        Transform(rotation=np.diag([2.0, 1.0, 1.0]))


def test_transform_rejects_a_reflection():
    with pytest.raises(ValueError, match=r"Transform\.rotation = \[\[1\.0, 0\.0, 0\.0\], .*-1\.0\]\]: must be a "
                                         r"rotation matrix \(orthonormal, det \+1\)"):
        Transform(rotation=np.diag([1.0, 1.0, -1.0]))


def test_transform_rejects_a_nan_position():
    with pytest.raises(ValueError, match=r"Transform\.position\[1\] = nan: must be finite"):
        Transform(position=(0.0, math.nan, 0.0))


def test_transform_from_axis_angle_rejects_a_zero_axis():
    with pytest.raises(ValueError, match=r"Transform\.axis = \[0, 0, 0\]: the rotation axis must be non-zero"):
        Transform.from_axis_angle((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 1.0)


def test_transform_from_axis_angle_builds_a_proper_rotation():
    t = Transform.from_axis_angle((1.0, 2.0, 3.0), (0.0, 0.0, 2.0), math.pi / 2)
    assert np.allclose(t.to_world((1.0, 0.0, 0.0)), (1.0, 3.0, 3.0))       # +x turns to +y about +z


def test_gravity_rejects_nan():
    with pytest.raises(ValueError, match=r"Gravity\.acceleration\[1\] = nan: must be finite"):
        Gravity((0.0, math.nan, 0.0))


def test_gravity_rejects_the_wrong_shape():
    with pytest.raises(ValueError, match=r"Gravity\.acceleration: shape \(2,\), expected \(3,\)"):
        Gravity((0.0, -9.81))


# --- FixedClock and App -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", [0.0, -1 / 60, math.nan, math.inf, 1.5])
def test_clock_and_app_reject_a_bad_time_step(dt):
    with pytest.raises(ValueError, match=rf"App\.dt = {re.escape(repr(dt))}: must be a finite time step in \(0, 1\]"):
        FixedClock(dt=dt)
    with pytest.raises(ValueError, match=rf"App\.dt = {re.escape(repr(dt))}"):
        App(dt=dt)


def test_clock_accepts_a_time_step_of_exactly_one_second():
    assert FixedClock(dt=1.0).dt == 1.0


@pytest.mark.parametrize("substeps", [0, -2, 1.5, True])
def test_app_rejects_bad_substeps(substeps):
    with pytest.raises(ValueError, match=rf"App\.substeps = {re.escape(repr(substeps))}: must be an integer >= 1"):
        App(substeps=substeps)


@pytest.mark.parametrize("max_steps", [0, 2.0])
def test_app_rejects_bad_max_steps(max_steps):
    with pytest.raises(ValueError, match=rf"App\.max_steps = {re.escape(repr(max_steps))}: must be an integer >= 1"):
        FixedClock(max_steps=max_steps)


@pytest.mark.parametrize("real_dt", [-1, -1e-9, math.nan, math.inf, "0.1"])
def test_app_update_rejects_a_bad_frame_time(real_dt):
    app = App()
    try:
        with pytest.raises(ValueError, match=rf"App\.update real_dt = {re.escape(repr(real_dt))}: must be a finite"):
            app.update(real_dt)
        assert app.clock.accumulator == 0.0 and app.clock.step_index == 0
    finally:
        app.close()


@pytest.mark.parametrize("frames", [-1, 1.0, True])
def test_app_step_rejects_a_bad_frame_count(frames):
    app = App()
    try:
        with pytest.raises(ValueError, match=rf"App\.step frames = {re.escape(repr(frames))}: must be an integer >= 0"):
            app.step(frames)
    finally:
        app.close()


@pytest.mark.parametrize("threads", [0, 99, -1, 1.0])
def test_app_rejects_a_thread_count_outside_the_available_cores(threads):
    with pytest.raises(ValueError, match=rf"App\.threads = {re.escape(repr(threads))}: must be an integer in 1"):
        App(threads=threads)


# --- properties -------------------------------------------------------------------------------------------------

SPECIALS = st.sampled_from([math.nan, math.inf, -math.inf])
COORDINATES = st.floats(-1e3, 1e3) | SPECIALS                   # [m]


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 20).flatmap(lambda n: hnp.arrays(np.float64, (n, 3), elements=COORDINATES)))
def test_from_particles_never_constructs_holding_a_non_finite_value(x):
    n = x.shape[0]
    chain = [[k, k + 1] for k in range(n - 1)]
    try:
        cloth = Cloth.from_particles(x, 1.0, chain)
    except (ValueError, TypeError) as error:
        assert str(error).startswith("Cloth."), str(error)
        return
    for name in ("x", "rest_x", "v", "x_prev", "mass", "inv_mass", "link_rest"):
        values = getattr(cloth, name)
        assert np.isfinite(values).all(), f"Cloth.{name} holds {values!r}"
    assert np.array_equal(cloth.x, x)


@settings(max_examples=50, deadline=None)
@given(hnp.arrays(np.float64, (10, 3), elements=st.floats(-10.0, 10.0)),
       st.integers(1, 6).flatmap(lambda t: hnp.arrays(np.int64, (t, 3), elements=st.integers(-3, 12))))
def test_cloth_triangles_are_in_range_and_distinct_or_rejected(x, triangles):
    try:
        cloth = Cloth(x=x, mass=np.ones(10), links=NO_LINKS, link_kind=NO_KINDS, triangles=triangles)
    except (ValueError, TypeError) as error:
        assert str(error).startswith("Cloth."), str(error)
        return
    t = cloth.triangles
    assert ((t >= 0) & (t < 10)).all(), t
    assert ((t[:, 0] != t[:, 1]) & (t[:, 1] != t[:, 2]) & (t[:, 0] != t[:, 2])).all(), t
    assert np.array_equal(t, triangles)


MATERIAL_VALUES = st.floats(allow_nan=True, allow_infinity=True) | st.floats(-2.0, 2.0)


@settings(max_examples=50, deadline=None)
@given(st.dictionaries(st.sampled_from(MATERIAL_FIELDS), MATERIAL_VALUES, min_size=1))
def test_cloth_material_is_finite_and_in_range_or_names_a_bad_field(fields):
    def bad(name: str, value: float) -> bool:
        return not math.isfinite(value) or value < 0.0 or (name in POSITIVE_FIELDS and value == 0.0)

    wrong = {name for name, value in fields.items() if bad(name, value)}
    try:
        material = ClothMaterial(**fields)
    except (ValueError, TypeError) as error:
        found = re.match(r"ClothMaterial\.(\w+) = ", str(error))
        assert found and found.group(1) in wrong, f"{error} (bad fields: {sorted(wrong)})"
        return
    assert not wrong, f"ClothMaterial accepted {fields}"
    for name in MATERIAL_FIELDS:
        value = getattr(material, name)
        if value is not None:
            assert not bad(name, value), f"ClothMaterial.{name} = {value!r}"
