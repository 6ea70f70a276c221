"""Component and resource state is checked wherever it enters: on assignment, by ``check_state()`` and ``assign()``.

A wrong shape, dtype, a non-finite value or an out-of-range index assigned to any field of any component is
refused with one ValueError naming Class.field, the App keeps stepping, and the field keeps its old value.
The whole matrix runs in one subprocess, so a crash (a kernel reading out of bounds) fails the test instead
of killing pytest.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pymunk
import pytest

from loom.components import (Blower, Camera, Cloth, ClothStyle, Collider, Gravity, Grab, InputState, Pin,
                             RenderSettings, RigidBody2D, Space2D, Sphere, Tearable, Transform, TriangleMesh, Wind)
from loom.components._validate import FieldError, floats, indices, integer, real
from loom.components.inertia import Inertia
from loom.engine import mesh
from loom.systems.xpbd import XPBDClothData
from shape_examples import every_shape

SCENE = f"TESTS = {str(Path(__file__).parent)!r}" + """
import dataclasses, json, math, sys
import numpy as np, pymunk
from loom.components import *
from loom.components.inertia import Inertia
from loom.engine import App, mesh
from loom.systems import DefaultPlugins
from loom.systems.xpbd import xpbd_data

app = App(dt=1 / 60, substeps=4)
app.add_plugin(DefaultPlugins)
sheet = mesh.grid(6, 6, 0.5, 0.5)
cloth = Cloth.from_mesh(sheet, "cotton")
pin = Pin.corners(sheet, "top")
tear = Tearable(tear_strain=5.0)
style = ClothStyle()
inertia = Inertia(linear=0.5)
cloth_entity = app.spawn(cloth, pin, tear, style, inertia)
sys.path.insert(0, TESTS)
from shape_examples import every_shape
colliders = [Collider(s) for s in every_shape(0.3)]               # every shape of collider.SHAPES
transforms = [Transform(position=(0.0, -2.0 - k, 0.0)) for k in range(len(colliders))]
for c, t in zip(colliders, transforms):
    app.spawn(c, t)
wind, blower = Wind(velocity=(1.0, 0.0, 0.0)), Blower()
grab, camera = Grab(), Camera()
app.spawn(wind)
app.spawn(blower)
app.spawn(grab)
app.spawn(camera)
space = pymunk.Space()
body = pymunk.Body(1.0, 1.0)
body.position = (5.0, 5.0)
space.add(body, pymunk.Circle(body, 0.1))
rigid = RigidBody2D(body)
app.spawn(rigid)
app.insert_resource(Space2D(space))
app.insert_resource(RenderSettings())
app.insert_resource(InputState())
gravity = app.resource(Gravity)
app.step(2)
objects = [cloth, pin, tear, style, inertia, *colliders, *[c.shape for c in colliders], *transforms, wind, blower,
           grab, camera, rigid, app.resource(Space2D), app.resource(RenderSettings), app.resource(InputState),
           gravity, xpbd_data(app, cloth_entity)]
"""

MATRIX = SCENE + """
FREE_LENGTH = {("Tearable", "link_time"), ("Tearable", "piece"), ("Tearable", "torn"), ("Tearable", "crack"),
               ("Prism", "polygon")}
ALLOWS_INF = {("Cloth", "link_max")}
IDENTITY_ONLY = {("Tearable", "link_table"),   # compared with `is`, never read
                 ("XPBDClothData", "topology")}
UNBOUNDED = {("Pin", "index")}        # a pin does not know its cloth: the pin system checks it at the next step


def bad_arrays(owner, name, value):
    bad = [("extra axis", value[..., None]), ("strings", np.full(value.shape, "a")),
           ("complex", value.astype(complex)), ("objects", value.astype(object)), ("text", "abc"),
           ("ragged", [[1.0, 2.0], [3.0]])]
    if (owner, name) not in FREE_LENGTH and value.ndim:
        bad.append(("one row more", np.concatenate([value, value[:1]]) if value.shape[0] else
                    np.zeros((1,) + value.shape[1:], value.dtype)))
    if value.dtype.kind == "f" and value.size:
        for v in (math.nan,) if (owner, name) in ALLOWS_INF else (math.nan, math.inf, -math.inf):
            broken = value.copy()
            broken.flat[0] = v
            bad.append((f"{v}", broken))
    if value.dtype.kind in "iu" and value.size:
        for v in (-1, 10 ** 6) if (owner, name) not in UNBOUNDED and name not in ("piece", "crack", "link_color_offsets", "bend_color_offsets",
                                                "tether_offsets", "cell_start") else (-1,):
            broken = value.astype(np.int64)
            broken.flat[-1] = v
            bad.append((f"index {v}", broken))
    if value.dtype.kind == "b":
        bad.append(("integers", value.astype(np.int64) + 2))
    return bad


def bad_scalars(owner, name, value):
    if isinstance(value, bool):
        return [("text", "yes"), ("two", 2)]
    if isinstance(value, int):
        return [("text", "1"), ("float", 1.5), ("negative", -5)]
    if isinstance(value, float):
        return [("text", "1.0"), ("nan", math.nan), ("inf", math.inf), ("pair", (0.0, 1.0))]
    return []


summary = {"refused": 0, "accepted": [], "wrong_error": [], "changed": [], "fields": []}
for obj in objects:
    owner = type(obj).__name__
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if (owner, f.name) in IDENTITY_ONLY:
            continue
        if isinstance(value, np.ndarray):
            cases = bad_arrays(owner, f.name, value)
        elif value is None or isinstance(value, (str, list, set, tuple)) or not isinstance(value, (int, float)):
            continue
        else:
            cases = bad_scalars(owner, f.name, value)
        if not cases:
            continue
        summary["fields"].append(f"{owner}.{f.name}")
        for label, bad in cases:
            try:
                setattr(obj, f.name, bad)
            except ValueError as error:
                text = str(error)
                if f"{owner}.{f.name}" not in text or "\\n" in text:
                    summary["wrong_error"].append(f"{owner}.{f.name} {label}: {text}")
                summary["refused"] += 1
            except Exception as error:
                summary["wrong_error"].append(f"{owner}.{f.name} {label}: {type(error).__name__}: {error}")
            else:
                summary["accepted"].append(f"{owner}.{f.name} {label}")
            if getattr(obj, f.name) is not value:
                summary["changed"].append(f"{owner}.{f.name} {label}")
                object.__setattr__(obj, f.name, value)
            app.step(1)
summary["check_state"] = []
for obj in objects:                          # every object the steps left behind passes its whole-object check
    try:
        obj.check_state()
    except ValueError as error:
        summary["check_state"].append(str(error))
summary["finite"] = bool(np.isfinite(cloth.x).all())
summary["rejected_steps"] = cloth.rejected_steps
print(json.dumps(summary))
"""


def run(script: str) -> subprocess.CompletedProcess:
    """Run ``script`` in a fresh Python (a crash is a failed test, not a dead pytest)."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                          timeout=900, env={**__import__("os").environ, "SDL_AUDIODRIVER": "dummy"})


def test_every_bad_assignment_to_every_field_is_refused_and_the_app_keeps_stepping():
    result = run(MATRIX)
    assert result.returncode == 0, f"the process died ({result.returncode}): {result.stderr[-2000:]}"
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["accepted"] == [], summary["accepted"][:40]
    assert summary["wrong_error"] == [], summary["wrong_error"][:10]
    assert summary["changed"] == [], summary["changed"]
    assert summary["finite"] and summary["rejected_steps"] == 0
    assert summary["check_state"] == []
    for field in ("Cloth.x", "Cloth.v", "Cloth.x_prev", "Cloth.force", "Cloth.mass", "Cloth.inv_mass",
                  "Cloth.base_inv_mass", "Cloth.rest_x", "Cloth.rest_uv", "Cloth.triangles", "Cloth.links",
                  "Cloth.link_i", "Cloth.link_j", "Cloth.link_rest", "Cloth.link_compliance", "Cloth.link_max",
                  "Cloth.link_order", "Cloth.link_kind", "Cloth.link_color_offsets", "Cloth.bend_quads",
                  "Cloth.bend_rest_angle", "Cloth.bend_color_offsets", "XPBDClothData.link_lambda",
                  "XPBDClothData.bend_lambda", "XPBDClothData.tether_offsets", "XPBDClothData.tether_anchor",
                  "XPBDClothData.tether_length", "XPBDClothData.tether_anchor_mask", "XPBDClothData.seen_changes",
                  "Cloth.iterations", "Cloth.rejected_steps", "Cloth.changes", "Pin.index", "Pin.target", "Pin.active",
                  "Pin.step_start", "Collider.friction", "Sphere.radius", "Box.half_extents", "Prism.polygon",
                  "TriangleMesh.vertices", "TriangleMesh.cell_start", "Transform.position", "Transform.rotation",
                  "Wind.velocity", "Wind.gust", "Blower.direction", "Grab.target", "Grab.particle", "Camera.target",
                  "Camera.far", "Inertia.frame_rotation", "Tearable.crack", "Tearable.link_time",
                  "RigidBody2D.depth", "ClothStyle.front_color", "RenderSettings.ambient", "InputState.wheel",
                  "Gravity.acceleration"):
        assert field in summary["fields"], f"{field} was not exercised"
    assert summary["refused"] > 400


def test_the_crashes_of_the_issue_are_refused_in_a_live_process():
    script = SCENE + """
out = []
for bad in (np.zeros((37, 3)), np.zeros((36, 1)), np.zeros((36, 4))):
    try:
        cloth.x = bad
    except ValueError as error:
        out.append(str(error))
for name, bad in (("inv_mass", np.ones(3)), ("mass", np.ones(3)), ("force", np.zeros((2, 3)))):
    try:
        setattr(cloth, name, bad)
    except ValueError as error:
        out.append(str(error))
for bad in ((0.0, -9.81), "down"):
    try:
        gravity.acceleration = bad
    except ValueError as error:
        out.append(str(error))
app.step(5)
print(json.dumps({"errors": out, "finite": bool(np.isfinite(cloth.x).all())}))
"""
    result = run(script)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert len(report["errors"]) == 8 and report["finite"]
    assert report["errors"][0] == ("Cloth.x: shape (37, 3), expected (36, 3) (the particle count is fixed by the "
                                   "cloth's topology)")
    assert report["errors"][-2].startswith("Gravity.acceleration: shape (2,), expected (3,)")
    assert report["errors"][-1].startswith("Gravity.acceleration = 'down': expected an array of real numbers")


# --- messages, in process -------------------------------------------------------------------------------------

def sheet_cloth(**options) -> Cloth:
    return Cloth.from_mesh(mesh.grid(6, 6, 0.5, 0.5), "cotton", **options)


def test_a_wrong_assignment_names_class_field_shape_and_expectation_and_keeps_the_old_array():
    cloth = sheet_cloth()
    before, revision = cloth.x, cloth.revision
    with pytest.raises(ValueError, match=r"^Cloth\.x: shape \(36, 4\), expected \(36, 3\)"):
        cloth.x = np.zeros((36, 4))
    with pytest.raises(ValueError, match=r"^Cloth\.v\[5\] = \[nan, 0\., 0\.\]: must be finite \[m/s\]$"):
        v = np.zeros((36, 3))
        v[5, 0] = np.nan
        cloth.v = v
    with pytest.raises(ValueError, match=r"^Cloth\.link_j\[3\] = 36: out of range for 36 particles"):
        j = cloth.link_j.copy()
        j[3] = 36
        cloth.link_j = j
    with pytest.raises(ValueError, match=r"^Cloth\.link_kind\[0\] = 3: must be >= 0 and <= 2"):
        cloth.link_kind = np.full(cloth.links.shape[0], 3)
    data = XPBDClothData.of(cloth)                  # XPBD's own data of the cloth: checked the same way
    with pytest.raises(ValueError, match=r"^XPBDClothData\.tether_offsets = .*expected offsets rising from 0"):
        data.tether_offsets = np.arange(37, dtype=np.int32)
    with pytest.raises(ValueError, match=r"^Cloth\.precision = 'float32': fixed when the cloth is built"):
        cloth.precision = "float32"
    with pytest.raises(ValueError, match=r"^Cloth\.iterations = 0: must be >= 1"):
        cloth.iterations = 0
    assert cloth.x is before and cloth.revision == revision


def test_a_good_assignment_is_converted_to_the_kernels_dtype_and_counted():
    cloth = sheet_cloth()
    revision = cloth.revision
    cloth.x = cloth.x.tolist()
    assert cloth.x.dtype == np.float64 and cloth.x.flags.c_contiguous and cloth.revision == revision + 1
    cloth.link_i = cloth.link_i.astype(np.int64)
    assert cloth.link_i.dtype == np.int32
    cloth.force = np.asfortranarray(np.ones((36, 3)))
    assert cloth.force.flags.c_contiguous
    light = sheet_cloth(precision="float32")
    light.v = np.ones((36, 3))
    assert light.v.dtype == np.float32
    with pytest.raises(ValueError, match=r"^Cloth\.x\[0\] = \[inf, .*must be finite"):
        light.x = np.full((36, 3), 1e300)                  # finite in float64, inf once stored as float32


def test_resources_are_checked_on_assignment():
    gravity = Gravity()
    with pytest.raises(ValueError, match=r"^Gravity\.acceleration: shape \(2,\), expected \(3,\)"):
        gravity.acceleration = (0.0, -9.81)
    with pytest.raises(ValueError, match=r"^Gravity\.acceleration = 'down'"):
        gravity.acceleration = "down"
    gravity.acceleration = (0, -1.62, 0)
    assert gravity.acceleration.dtype == np.float64
    wind = Wind()
    with pytest.raises(ValueError, match=r"^Wind\.gust = 1\.5: must be <= 1\.0"):
        wind.gust = 1.5
    with pytest.raises(ValueError, match=r"^Wind\.seed = 'x': must be an integer"):
        wind.seed = "x"
    camera = Camera()
    with pytest.raises(ValueError, match=r"^Camera\.far = 0\.01: must be > 0\.05"):
        camera.far = 0.01
    with pytest.raises(ValueError, match=r"^Camera\.near = 200\.0: must be < far"):
        camera.near = 200.0
    settings = RenderSettings()
    with pytest.raises(ValueError, match=r"^RenderSettings\.view = 'x-ray': expected one of"):
        settings.view = "x-ray"
    settings.title = "free attributes outside the table are not checked"


def test_pin_target_is_one_row_per_index_never_broadcast():
    pin = Pin(index=[0, 1], target=np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"^Pin\.target: shape \(5, 3\), expected \(2, 3\)"):
        pin.target = np.zeros((5, 3))
    with pytest.raises(ValueError, match=r"^Pin\.target: shape \(3,\), expected \(2, 3\)"):
        pin.target = (0.0, 1.0, 0.0)
    with pytest.raises(ValueError, match=r"^Pin\.target: shape \(3,\), expected \(2, 3\)"):
        Pin(index=[0, 1], target=(0.0, 1.0, 0.0))
    single = Pin(index=[4], target=(0.0, 1.0, 0.0))          # one pinned particle: one point is its row
    assert single.target.shape == (1, 3)
    single.target = (1.0, 2.0, 3.0)
    assert single.target.tolist() == [[1.0, 2.0, 3.0]]


def test_pin_index_is_checked_and_rebound_to_its_cloth():
    pin = Pin(index=[0, 1])
    pin.bound = True
    with pytest.raises(ValueError, match=r"^Pin\.index: expected integer particle indices, got dtype float64"):
        pin.index = [0.0, 1.0]
    with pytest.raises(ValueError, match=r"^Pin\.index: particle 1 is pinned twice"):
        pin.index = [1, 1]
    with pytest.raises(ValueError, match=r"^Pin\.index: shape \(3,\), expected \(2,\)"):
        pin.index = [0, 1, 2]
    assert pin.bound
    pin.index = [3, 4]
    assert not pin.bound, "new indices must be checked against the cloth by the pin system"


def test_a_pin_index_past_the_cloth_is_refused_at_the_next_step(make_app):
    app = make_app(substeps=2)
    cloth = sheet_cloth()
    pin = Pin(index=[0, 5])
    app.spawn(cloth, pin)
    app.step(1)
    pin.index = [0, 36]
    with pytest.raises(ValueError, match=r"Pin\.index\[1\] = 36: out of range for a cloth of 36 particles"):
        app.step(1)


def test_assign_changes_sizes_together_all_or_nothing():
    pin = Pin(index=[0, 1], target=np.zeros((2, 3)))
    revision, index = pin.revision, pin.index
    with pytest.raises(ValueError, match=r"^Pin\.target: shape \(2, 3\), expected \(3, 3\)"):
        pin.assign(index=[0, 1, 2], active=np.ones(3, bool), active_before=np.ones(3, bool),
                   step_start=np.zeros((3, 3)), step_end=np.zeros((3, 3)))
    assert pin.index is index and pin.revision == revision
    pin.assign(index=[0, 1, 2], target=np.ones((3, 3)), active=np.ones(3, bool), active_before=np.ones(3, bool),
               step_start=np.zeros((3, 3)), step_end=np.zeros((3, 3)))
    assert pin.count == 3 and pin.revision == revision + 1
    cloth = sheet_cloth()
    data = XPBDClothData.of(cloth)
    with pytest.raises(ValueError, match=r"^XPBDClothData\.tether_anchor\[0\] = 99: out of range for 36 particles"):
        data.assign(tether_offsets=np.r_[0, np.ones(36, np.int32)], tether_anchor=[99], tether_length=[0.1])
    data.assign(tether_offsets=np.r_[0, np.ones(36, np.int32)], tether_anchor=[3], tether_length=[0.1])
    assert data.tether_anchor.tolist() == [3] and data.tether_offsets.dtype == np.int32
    with pytest.raises(ValueError, match=r"^Cloth\.nonsense: not a checked field"):
        cloth.assign(nonsense=1)


# --- boundary TypeErrors are ValueErrors naming the field -----------------------------------------------------

def test_type_errors_at_the_boundary_are_value_errors_naming_the_field():
    for build, field in ((lambda: Pin(index=[0.0, 1.0]), "Pin.index"), (lambda: Collider("ball"), "Collider.shape"),
                         (lambda: real("Sphere", "radius", "1"), "Sphere.radius"),
                         (lambda: integer("Cloth", "iterations", 2.5), "Cloth.iterations"),
                         (lambda: floats("Gravity", "acceleration", "down", (3,)), "Gravity.acceleration"),
                         (lambda: floats("Gravity", "acceleration", [1j, 0, 0], (3,)), "Gravity.acceleration"),
                         (lambda: indices("Cloth", "links", [[0.5, 1.0]], (None, 2), 4), "Cloth.links"),
                         (lambda: indices("Cloth", "links", [[0], [1, 2]], (None, 2), 4), "Cloth.links"),
                         (lambda: RigidBody2D("ball"), "RigidBody2D.body"),
                         (lambda: Cloth.from_mesh(mesh.grid(3, 3, 1.0, 1.0), model="verlet", settings=3),
                          "Cloth.settings")):
        with pytest.raises(ValueError) as caught:
            build()
        assert isinstance(caught.value, FieldError) and isinstance(caught.value, TypeError)
        assert str(caught.value).startswith(field) and "\n" not in str(caught.value)


# --- check_state: the whole object, after its __dict__ was filled directly ---------------------------------------

def corrupted(obj, name, value):
    """``obj`` with ``name`` set behind the checks, as a file loader filling ``__dict__`` would."""
    object.__setattr__(obj, name, value)
    return obj


def test_check_state_refuses_a_corrupted_dict():
    cloth = sheet_cloth()
    offsets = cloth.link_color_offsets.copy()
    offsets[-1] += 1
    broken = {
        r"^Cloth\.x: shape \(37, 3\), expected \(36, 3\)": corrupted(sheet_cloth(), "x", np.zeros((37, 3))),
        r"^Cloth\.link_i\[0\] = 40: out of range for 36 particles":
            corrupted(sheet_cloth(), "link_i", np.full(cloth.link_count, 40, np.int32)),
        r"^Cloth\.link_color_offsets = .*expected offsets rising from 0 to \d+ \(the links\)":
            corrupted(sheet_cloth(), "link_color_offsets", offsets),
        r"^XPBDClothData\.tether_offsets: shape \(36,\), expected \(37,\)":
            corrupted(XPBDClothData.of(sheet_cloth()), "tether_offsets", np.zeros(36, np.int32)),
        r"^Cloth\.model = 'warp': expected one of": corrupted(sheet_cloth(), "model", "warp"),
        r"^Cloth\.mass\[0\] = -1\.0: must be > 0\.0": corrupted(sheet_cloth(), "mass", -np.ones(36)),
        r"^Pin\.target: shape \(3, 3\), expected \(2, 3\)": corrupted(Pin(index=[0, 1]), "target", np.zeros((3, 3))),
        r"^Pin\.offset: given without attach_to": corrupted(Pin(index=[0, 1]), "offset", np.zeros((2, 3))),
        r"^Gravity\.acceleration = 'down'": corrupted(Gravity(), "acceleration", "down"),
        r"^Transform\.rotation = .*must be a rotation matrix": corrupted(Transform(), "rotation", np.ones((3, 3))),
        r"^Tearable\.crack: particle 7 out of range for 0 particles":
            corrupted(Tearable(), "crack", np.array([[0, 7]], np.int32)),
        r"^TriangleMesh\.cell_triangles\[0\] = 5: out of range for 1 triangles":
            corrupted(TriangleMesh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]]), "cell_triangles",
                      np.array([5], np.int32)),
        r"^Sphere\.radius = -1\.0: must be > 0\.0": corrupted(Sphere(1.0), "radius", -1.0),
        r"^Grab\.active = True with Grab\.cloth = None": corrupted(Grab(), "active", True),
        r"^Cloth\.rejected_steps: missing": (lambda c: (c.__dict__.pop("rejected_steps"), c)[1])(sheet_cloth()),
    }
    for pattern, obj in broken.items():
        with pytest.raises(ValueError, match=pattern):
            obj.check_state()


def test_check_state_passes_on_every_fresh_component_and_converts_plain_data():
    pymunk_body = pymunk.Body(1.0, 1.0)
    for obj in (sheet_cloth(), sheet_cloth(model="implicit"), sheet_cloth(precision="float32"),
                Pin(index=[0, 1]), Tearable(), Inertia(), Grab(), Camera(), Wind(), Blower(), Gravity(),
                Transform(), ClothStyle(), RenderSettings(), InputState(), RigidBody2D(pymunk_body),
                Space2D(pymunk.Space()), Collider(Sphere(1.0)), *every_shape(), XPBDClothData.of(sheet_cloth())):
        obj.check_state()
    cloth = corrupted(sheet_cloth(), "x", sheet_cloth().x.tolist())
    cloth.check_state()
    assert isinstance(cloth.x, np.ndarray) and cloth.x.dtype == np.float64
    pin = Pin(index=[0, 1])
    pin.bound = True
    pin.check_state()
    assert not pin.bound, "indices read from outside are re-checked against the cloth before a kernel sees them"


def test_check_state_covers_frozen_materials_and_settings():
    cloth = sheet_cloth(model="verlet")
    corrupted(cloth.material, "density", -1.0)
    with pytest.raises(ValueError, match=r"^ClothMaterial\.density = -1\.0"):
        cloth.material.check_state()
    settings = cloth.settings
    name = next(f for f in type(settings).__dataclass_fields__ if isinstance(getattr(settings, f), float))
    corrupted(settings, name, float("nan"))
    with pytest.raises(ValueError, match=rf"^VerletSettings\.{name} = nan"):
        settings.check_state()
