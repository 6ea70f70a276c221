"""Snapshots and replays carry data, never code: crafted files are refused in one line, run nothing, change nothing.

Each crafted file has a correct header and SHA-256 (write_container computes them), so what it holds reaches the
decoder. Cases that could crash the process if a bad array slipped through to a kernel run in a subprocess."""
from __future__ import annotations

import io
import json
import os
import pickle
import stat
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pymunk
import pytest

from loom.components import Cloth, Pin, RigidBody2D, Space2D, Tearable
from loom.engine import App, Stage, mesh
from loom.files.replay import Recorder, ReplayError, load_replay, replay, save_replay
from loom.files.snapshot import (HEADER_SIZE, KIND_REPLAY, KIND_SNAPSHOT, SnapshotError, load_snapshot,
                                 read_container, save_snapshot, write_container)

CLOTH = "loom.components.cloth.Cloth"


# --- a small scene: a 6 x 6 sheet (36 particles) pinned at two corners, and a pymunk ball ----------------------
def build_small(app: App) -> None:
    """36-particle sheet pinned at its top corners, with a pymunk ball falling beside it."""
    space = pymunk.Space()
    space.gravity = (0.0, -9.81)
    app.insert_resource(Space2D(space))
    ball = pymunk.Body(0.3, pymunk.moment_for_circle(0.3, 0, 0.08))      # [kg]
    ball.position = (2.0, 1.3)
    space.add(ball, pymunk.Circle(ball, 0.08))
    app.spawn(RigidBody2D(ball, depth=0.5))
    sheet = mesh.grid(6, 6, 1.0, 1.0, center=(0.0, 1.0, 0.0), plane="xz")
    app.spawn(Cloth.from_mesh(sheet, "cotton"), Pin.corners(sheet, "top"))


@pytest.fixture
def small(make_app):
    def factory() -> App:
        app = make_app(substeps=4)
        build_small(app)
        return app
    return factory


def state_of(app: App) -> tuple[list[bytes], list[int], int]:
    """Cloth positions and velocities (bytes), entity ids and step index: what a refused load must not change."""
    data = [c.x.tobytes() + c.v.tobytes() for _, c in app.query(Cloth)]
    return data, sorted(app.entities()), app.clock.step_index


# --- crafting files --------------------------------------------------------------------------------------------
def unpack(path: Path, kind: bytes = KIND_SNAPSHOT) -> tuple[dict, dict[str, bytes]]:
    """(JSON document, other entries) of a valid file."""
    with zipfile.ZipFile(io.BytesIO(read_container(path, kind))) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    return json.loads(entries.pop("state.json")), entries


def pack(path: Path, document: dict, entries: dict[str, bytes], kind: bytes = KIND_SNAPSHOT,
         compression: int = zipfile.ZIP_STORED) -> None:
    """Write a crafted payload under a correct header and checksum."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        archive.writestr("state.json", json.dumps(document))
        for name, data in entries.items():
            archive.writestr(name, data)
    write_container(path, kind, buffer.getvalue())


def cloth_component(document: dict) -> dict:
    """The JSON entry of the first Cloth component: {"id", "c", "s"}."""
    for _, components in document["entities"]:
        for component in components:
            if component["c"] == CLOTH:
                return component
    raise AssertionError("no Cloth in the snapshot")


def cloth_field(document: dict, field: str) -> dict:
    """The JSON node of the first Cloth's attribute ``field``."""
    state = cloth_component(document)["s"]
    return state["v"][state["k"].index(field)]


def npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


class Touch:
    """Pickles to ``os.system("touch <marker>")``: what any unpickler would run."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def assert_refused(app: App, path: Path, marker: Path, match: str, kind: bytes = KIND_SNAPSHOT) -> str:
    """Loading ``path`` raises a one-line SnapshotError matching ``match``, runs nothing, changes nothing."""
    before = state_of(app)
    with pytest.raises(SnapshotError, match=match) as info:
        if kind == KIND_SNAPSHOT:
            load_snapshot(app, path)
        else:
            load_replay(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    assert not marker.exists(), "loading the file ran code"
    assert state_of(app) == before, "a refused load changed the App"
    return message


# --- (a) pickles are never read --------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", [KIND_SNAPSHOT, KIND_REPLAY], ids=["snapshot", "replay"])
@pytest.mark.parametrize("version", [1, 2])
def test_a_pickle_payload_that_runs_a_command_is_refused_and_runs_nothing(small, tmp_path, kind, version):
    marker = tmp_path / "pwned"
    payload = pickle.dumps({"entities": [], "resources": [Touch(marker)], "clock": {}, "log": Touch(marker)})
    path = tmp_path / "evil.loom"
    write_container(path, kind, payload)
    if version == 1:
        raw = bytearray(path.read_bytes())
        raw[8:12] = (1).to_bytes(4, "little")
        path.write_bytes(bytes(raw))
        match = "format version 1 files are pickle-based and no longer read"
    else:
        match = "refused to load: payload is not a Loom state zip"
    assert_refused(small(), path, marker, match, kind)


# --- (b) class names outside the table -------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["os.system", "builtins.eval", "types.FunctionType", "subprocess.Popen",
                                  "loom.components.cloth.np.load", "numpy.load"])
def test_a_class_name_outside_the_table_is_refused(small, tmp_path, name):
    marker = tmp_path / "pwned"
    path = tmp_path / "s.loom"
    app = small()
    app.step(3)
    save_snapshot(app, path)
    document, entries = unpack(path)
    component = cloth_component(document)
    component["c"] = name                                          # a component's class
    pack(path, document, entries)
    assert_refused(app, path, marker, rf"refused to load: class '{name}' is not a Loom component")
    component["c"] = CLOTH
    cloth_field(document, "x").clear()
    cloth_field(document, "x").update({"t": "obj", "c": name, "s": f"touch {marker}"})   # a nested value
    pack(path, document, entries)
    assert_refused(app, path, marker, rf"class '{name}' is not a Loom component")


def test_a_replay_naming_a_class_outside_the_table_is_refused(small, tmp_path):
    marker = tmp_path / "pwned"
    app = small()
    recorder = Recorder()
    app.add_plugin(recorder)
    app.step(3)
    path = tmp_path / "run.loomrec"
    save_replay(recorder.log, path)
    document, entries = unpack(path, KIND_REPLAY)
    document["value"]["c"] = "os.system"
    pack(path, document, entries, KIND_REPLAY)
    assert_refused(app, path, marker, "class 'os.system' is not a Loom component", KIND_REPLAY)


# --- (c) object arrays --------------------------------------------------------------------------------------------
def test_an_npy_entry_of_object_dtype_is_refused_and_never_unpickled(small, tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "s.loom"
    app = small()
    save_snapshot(app, path)
    document, entries = unpack(path)
    evil = np.empty(1, dtype=object)
    evil[0] = Touch(marker)
    entries[cloth_field(document, "x")["npy"]] = npy(evil)
    pack(path, document, entries)
    assert_refused(app, path, marker, r"dtype object is not plain numeric data")


# --- (d) oversized, lying, wrong-shaped, wrong-typed, non-finite arrays ----------------------------------------
def test_an_npy_header_declaring_more_data_than_present_is_refused(small, tmp_path):
    path = tmp_path / "s.loom"
    app = small()
    save_snapshot(app, path)
    document, entries = unpack(path)
    name = cloth_field(document, "x")["npy"]
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (10 ** 12, 3)})
    entries[name] = header.getvalue() + entries[name][-36 * 3 * 8:]
    pack(path, document, entries)
    assert_refused(app, path, tmp_path / "none", r"shape \(1000000000000, 3\) of float64 needs")


def test_a_zip_bomb_is_refused_before_decompressing(small, tmp_path):
    path = tmp_path / "s.loom"
    app = small()
    save_snapshot(app, path)
    document, entries = unpack(path)
    entries["bomb.npy"] = npy(np.zeros(8 * 1024 ** 2))                  # 64 MiB of zeros, deflates to ~64 KiB
    pack(path, document, entries, compression=zipfile.ZIP_DEFLATED)
    assert path.stat().st_size < 2 * 1024 ** 2
    assert_refused(app, path, tmp_path / "none", r"declares \d+ bytes uncompressed, more than")


BAD_ARRAYS = {
    "rows37": "np.zeros((37, 3))",
    "cols1": "np.zeros((36, 1))",
    "cols4": "np.zeros((36, 4))",
    "nan": "np.full((36, 3), np.nan)",
    "inf": "np.full((36, 3), np.inf)",
    "complex": "np.zeros((36, 3), complex)",
    "flat": "np.zeros(108)",
}


def test_wrong_shaped_typed_and_non_finite_arrays_are_refused_and_the_process_survives(tmp_path):
    """Each bad array replaces the cloth's x (and v, inv_mass) in a valid snapshot; the load must refuse it with
    a SnapshotError naming Cloth.<field>, and the App must still step to finite positions. In a subprocess: an
    array slipping through to a kernel could crash the process."""
    script = textwrap.dedent(f"""
        import io, json, sys, zipfile
        import numpy as np
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_snapshot_safety import build_small, cloth_field, pack, unpack
        from loom.components import Cloth
        from loom.engine import App
        from loom.files.snapshot import SnapshotError, load_snapshot, save_snapshot
        from loom.systems import DefaultPlugins
        from pathlib import Path

        def new():
            app = App(dt=1 / 60, substeps=4)
            app.add_plugin(DefaultPlugins)
            build_small(app)
            return app

        path = Path({str(tmp_path / "s.loom")!r})
        app = new()
        app.step(2)
        save_snapshot(app, path)
        document, entries = unpack(path)
        cases = {{name: eval(expr) for name, expr in {BAD_ARRAYS!r}.items()}}
        cases["short_inv_mass"] = ("inv_mass", np.ones(5))
        cases["string_v"] = ("v", "hello")
        cases["bool_x"] = ("x", np.zeros((36, 3), bool))
        target = new()
        before = target.query(Cloth)[0][1].x.copy()
        for name, case in cases.items():
            field, array = case if isinstance(case, tuple) else ("x", case)
            doc = json.loads(json.dumps(document))
            node = cloth_field(doc, field)
            node.clear()
            bad = dict(entries)
            if isinstance(array, str):
                node.update({{"t": "list", "v": [array]}})
            else:
                buffer = io.BytesIO()
                np.save(buffer, array)
                bad["bad.npy"] = buffer.getvalue()
                node.update({{"t": "array", "npy": "bad.npy"}})
            pack(path, doc, bad)
            try:
                load_snapshot(target, path)
            except SnapshotError as error:
                assert "\\n" not in str(error) and "Cloth." in str(error), str(error)
                print("refused", name, error)
            else:
                print("LOADED", name)
                continue
            target.step(2)
            x = target.query(Cloth)[0][1].x
            assert np.isfinite(x).all(), name
            assert target.query(Cloth)[0][1].rejected_steps == 0, name
        print("survived")
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "SDL_AUDIODRIVER": "dummy"})
    assert run.returncode == 0, f"the process died ({run.returncode}):\n{run.stdout}\n{run.stderr[-3000:]}"
    assert "survived" in run.stdout and "LOADED" not in run.stdout, run.stdout
    assert run.stdout.count("refused") == len(BAD_ARRAYS) + 3


def test_a_refused_load_leaves_the_app_exactly_as_it_was(small, tmp_path):
    path = tmp_path / "s.loom"
    app = small()
    app.step(5)
    save_snapshot(app, path)
    app.step(5)
    document, entries = unpack(path)
    entries[cloth_field(document, "v")["npy"]] = npy(np.full((36, 3), np.nan))
    pack(path, document, entries)
    cloth = app.query(Cloth)[0][1]
    x_object = cloth.x
    assert_refused(app, path, tmp_path / "none", r"invalid state: Cloth\.v")
    assert app.query(Cloth)[0][1] is cloth and cloth.x is x_object
    app.step(2)
    assert np.isfinite(cloth.x).all()
    assert cloth.rejected_steps == 0


def test_an_unknown_format_version_1_snapshot_is_refused_even_with_a_valid_zip(small, tmp_path):
    path = tmp_path / "s.loom"
    save_snapshot(small(), path)
    raw = bytearray(path.read_bytes())
    raw[8:12] = (1).to_bytes(4, "little")
    path.write_bytes(bytes(raw))
    with pytest.raises(SnapshotError, match="pickle-based and no longer read"):
        load_snapshot(small(), path)


# --- data round trips: pymunk explicit state, tearing, shared objects -----------------------------------------
def pymunk_scene() -> pymunk.Space:
    """Two bodies, a box, a circle, a static floor and four kinds of constraint, after 20 steps."""
    space = pymunk.Space()
    space.gravity = (0.0, -9.81)
    space.damping = 0.9
    a = pymunk.Body(1.0, 10.0)
    a.position = (0.0, 2.0)
    b = pymunk.Body(2.0, 5.0)
    b.position = (1.0, 2.5)
    box = pymunk.Poly.create_box(b, (0.2, 0.1))
    box.friction = 0.7
    box.filter = pymunk.ShapeFilter(group=3, categories=0b10)
    floor = pymunk.Segment(space.static_body, (-5, 0), (5, 0), 0.05)
    floor.elasticity = 0.4
    space.add(a, b, pymunk.Circle(a, 0.1, (0.01, 0.0)), box, floor,
              pymunk.DampedSpring(a, b, (0, 0), (0, 0), 1.0, 40.0, 0.5),
              pymunk.PinJoint(a, space.static_body, (0, 0), (0, 3)),
              pymunk.SimpleMotor(a, b, 0.3), pymunk.GearJoint(a, b, 0.0, 2.0))
    for _ in range(20):
        space.step(1 / 60)
    return space


def test_a_pymunk_space_is_rebuilt_as_pymunk_itself_restores_it():
    """Explicit state (no pickle) restores what pymunk's own pickling does: both copies then step identically."""
    from loom.files.state_format import ClassTable, Decoder, Encoder
    space = pymunk_scene()
    encoder = Encoder(ClassTable())
    data = encoder.finish({"value": encoder.encode(space)})
    decoder = Decoder(data, ClassTable())
    ours = decoder.decode(decoder.document["value"])
    theirs = pickle.loads(pickle.dumps(space))
    assert [type(c).__name__ for c in ours.constraints] == ["DampedSpring", "PinJoint", "SimpleMotor", "GearJoint"]
    assert [s.filter for s in ours.shapes] == [s.filter for s in space.shapes]
    assert [s._hashid for s in ours.shapes] == [s._hashid for s in space.shapes]
    assert list(ours.shapes)[2].body is ours.static_body and ours.damping == 0.9
    for _ in range(30):
        ours.step(1 / 60)
        theirs.step(1 / 60)
    assert [(b.position, b.velocity, b.angle, b.angular_velocity) for b in ours.bodies] == \
        [(b.position, b.velocity, b.angle, b.angular_velocity) for b in theirs.bodies]


def test_a_torn_cloth_resumes_bit_identically(make_app, tmp_path):
    """Saved after the sheet tore (particle count and topology changed), the resumed run matches bit for bit."""
    sheet = mesh.grid(16, 8, 1.0, 0.5, center=(0.0, 1.0, 0.0))
    left, right = sheet.side("left"), sheet.side("right")
    ends = np.concatenate([left, right])

    def pull(app: App, dt: float) -> None:
        for _, pin in app.query(Pin):
            pin.target[left.size:, 0] += 1.0 * dt                  # right edge pulled away at 1 m/s

    def build(app: App) -> Tearable:
        tear = Tearable(tear_strain=0.5, tear_time=0.05)
        app.spawn(Cloth.from_mesh(sheet), Pin(index=ends, target=sheet.positions[ends]), tear)
        app.add_system(pull, Stage.PRE_STEP)
        return tear

    a = make_app(substeps=8)
    tear = build(a)
    for _ in range(80):
        a.step()
        if tear.rebuilds:
            break
    assert tear.rebuilds == 1, "the sheet did not tear"
    a.step(3)
    save_snapshot(a, tmp_path / "s.loom")
    a.step(20)
    b = make_app(substeps=8)
    build(b)
    load_snapshot(b, tmp_path / "s.loom")
    b.step(20)
    (_, ca), (_, cb) = a.query(Cloth)[0], b.query(Cloth)[0]
    assert ca.particle_count == cb.particle_count > sheet.vertex_count
    assert np.array_equal(ca.triangles, cb.triangles) and np.array_equal(ca.x, cb.x)


def test_a_snapshot_holds_no_pickle_and_a_json_document(small, tmp_path):
    path = tmp_path / "s.loom"
    save_snapshot(small(), path)
    with zipfile.ZipFile(io.BytesIO(path.read_bytes()[HEADER_SIZE:])) as archive:
        names = archive.namelist()
        assert names[0] == "state.json" and all(n.endswith(".npy") for n in names[1:])
        for name in names[1:]:
            np.load(io.BytesIO(archive.read(name)), allow_pickle=False)


# --- writing: missing folder, umask ----------------------------------------------------------------------------
def test_saving_into_a_missing_folder_names_the_path(small, tmp_path):
    path = tmp_path / "missing" / "s.loom"
    with pytest.raises(SnapshotError, match=rf"{path}: cannot write: folder .*missing does not exist") as info:
        save_snapshot(small(), path)
    assert ".tmp" not in str(info.value)


def test_written_files_honour_the_umask(small, tmp_path):
    old = os.umask(0o027)
    try:
        save_snapshot(small(), tmp_path / "s.loom")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "s.loom").stat().st_mode) == 0o640


# --- replay values are checked before they are applied --------------------------------------------------------
def recorded_log(small):
    app = small()
    recorder = Recorder()
    app.add_plugin(recorder)
    pin = app.query(Pin)[0][1]
    app.step()
    for k in range(6):
        pin.target[:, 0] += 0.01
        app.step()
    return recorder.log


@pytest.mark.parametrize("bad", ["nan_target", "wrong_shape_target", "nan_body", "string_body"])
def test_a_bad_value_in_a_replay_log_names_step_entity_class_and_path(small, tmp_path, bad):
    log = recorded_log(small)
    step = 3
    pin_entry = next(e for e in log.steps[step] if e[1] == "Pin" and e[2] == "target")
    entity = pin_entry[0]
    if bad == "nan_target":
        entry = (entity, "Pin", "target", np.full_like(pin_entry[3], np.nan))
    elif bad == "wrong_shape_target":
        entry = (entity, "Pin", "target", np.zeros((5, 3)))
    else:
        body_entity = small().query(RigidBody2D)[0][0]
        value = (float("nan"), 1.0) if bad == "nan_body" else "up"
        entity, entry = body_entity, (body_entity, "RigidBody2D", "body.position", value)
    log.steps[step] = [e for e in log.steps[step] if e[:3] != entry[:3]] + [entry]
    save_replay(log, tmp_path / "run.loomrec")
    loaded = load_replay(tmp_path / "run.loomrec")
    path = entry[2]
    with pytest.raises(ReplayError, match=rf"replay step {step}: entity {entity} {entry[1]}\.{path} = ") as info:
        replay(loaded, small(), verify=False)
    assert "\n" not in str(info.value)


def test_a_replay_log_with_a_malformed_structure_is_refused(small, tmp_path):
    log = recorded_log(small)
    log.steps[2].append((1, "Pin", "__class__", 0))
    save_replay(log, tmp_path / "run.loomrec")
    with pytest.raises(SnapshotError, match=r"invalid replay log: .*path '__class__' is not a dotted public"):
        load_replay(tmp_path / "run.loomrec")


# --- property: mutated files load exactly or fail in one line; never a crash, never code ------------------------
PROPERTY = '''
import io, json, os, sys, zipfile
from pathlib import Path
import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st
sys.path.insert(0, TESTS)
from test_snapshot_safety import build_small, pack, unpack
from loom.components import Cloth
from loom.engine import App
from loom.files.snapshot import HEADER_SIZE, KIND_SNAPSHOT, SnapshotError, load_snapshot, save_snapshot, write_container
from loom.systems import DefaultPlugins

WORK = Path(WORK)
MARKER = WORK / "pwned"
SOURCE = WORK / "source.loom"
TARGET = WORK / "mutated.loom"


def new():
    app = App(dt=1 / 60, substeps=4)
    app.add_plugin(DefaultPlugins)
    build_small(app)
    return app


source = new()
source.step(4)
save_snapshot(source, SOURCE)
source.close()
DOCUMENT, ENTRIES = unpack(SOURCE)
PAYLOAD = SOURCE.read_bytes()[HEADER_SIZE:]


def nodes(value, path=()):
    """Every (path, value) inside the JSON document."""
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from nodes(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from nodes(item, path + (index,))


PATHS = [p for p, _ in nodes(DOCUMENT) if p]
REPLACEMENTS = [None, True, -1, 0, 2 ** 40, 1e308, -0.0, "os.system", f"touch {MARKER}", [], {},
                {"t": "obj", "c": "builtins.eval", "s": f"__import__('os').system('touch {MARKER}')"},
                {"t": "ref", "r": 10 ** 6}, {"t": "float", "v": "nan"}, {"t": "array", "npy": "missing.npy"},
                {"t": "list", "v": [1, 2, 3]}, "loom.components.cloth.Cloth", {"t": "space"}]


OUTCOMES = {"refused": 0, "loaded": 0}


def check(path):
    """Load into a fresh App: success (then finite steps) or a one-line SnapshotError; count which."""
    outcome = load_once(path)
    OUTCOMES[outcome] += 1


def load_once(path):
    app = new()
    try:
        try:
            load_snapshot(app, path)
        except SnapshotError as error:
            assert "\\n" not in str(error), str(error)
            return "refused"
        app.step(2)
        for _, cloth in app.query(Cloth):
            assert np.isfinite(cloth.x).all(), "non-finite positions after a successful load"
            assert cloth.rejected_steps == 0, "a step refused after a successful load"
        return "loaded"
    finally:
        app.close()
        assert not MARKER.exists(), "a mutated file ran code"


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(st.integers(0, len(PAYLOAD) - 1), st.integers(1, 255))
def flip_bytes(index, mask):
    payload = bytearray(PAYLOAD)
    payload[index] ^= mask
    write_container(TARGET, KIND_SNAPSHOT, bytes(payload))
    check(TARGET)


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(st.sampled_from(sorted(ENTRIES)), st.sampled_from(["drop_row", "add_row", "flatten", "transpose",
                                                          "add_axis", "empty", "as_int", "as_float32"]))
def reshape_array(name, how):
    array = np.load(io.BytesIO(ENTRIES[name]), allow_pickle=False)
    if how == "drop_row":
        array = array[:-1]
    elif how == "add_row":
        array = np.concatenate([array, array[-1:]]) if array.ndim and array.shape[0] else np.zeros(1, array.dtype)
    elif how == "flatten":
        array = array.reshape(-1)
    elif how == "transpose":
        array = np.ascontiguousarray(array.T)
    elif how == "add_axis":
        array = array[..., None]
    elif how == "empty":
        array = np.zeros((0,) + array.shape[1:], array.dtype)
    elif how == "as_int":
        array = array.astype(np.int64)
    else:
        array = array.astype(np.float32)
    buffer = io.BytesIO()
    np.save(buffer, array)
    pack(TARGET, DOCUMENT, {**ENTRIES, name: buffer.getvalue()})
    check(TARGET)


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(st.sampled_from(PATHS), st.sampled_from(REPLACEMENTS))
def replace_json(path, replacement):
    document = json.loads(json.dumps(DOCUMENT))
    parent = document
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = json.loads(json.dumps(replacement))
    pack(TARGET, document, ENTRIES)
    check(TARGET)


flip_bytes()
reshape_array()
replace_json()
print("property held", OUTCOMES)
assert OUTCOMES["refused"] and OUTCOMES["loaded"], OUTCOMES

# an unmutated copy loads bit-exactly: the same positions as the source App after the same steps
pack(TARGET, DOCUMENT, ENTRIES)
a, b = new(), new()
a.step(4)
load_snapshot(b, TARGET)
assert all(np.array_equal(ca.x, cb.x) for (_, ca), (_, cb) in zip(a.query(Cloth), b.query(Cloth), strict=True))
'''


def test_mutated_snapshots_load_exactly_or_fail_in_one_line_never_crash_never_run_code(tmp_path):
    """hypothesis mutates a valid snapshot (payload bytes with the checksum fixed, array shapes and dtypes, JSON
    fields); each mutated file must load (and then step to finite positions) or raise SnapshotError. Run in a
    subprocess, so a crash fails the test instead of killing the suite."""
    script = f"TESTS = {str(Path(__file__).parent)!r}\nWORK = {str(tmp_path)!r}\nEXAMPLES = 30\n" + PROPERTY
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "SDL_AUDIODRIVER": "dummy"})
    assert run.returncode == 0, f"exit status {run.returncode}:\n{run.stdout[-2000:]}\n{run.stderr[-4000:]}"
    assert "property held" in run.stdout
    assert not (tmp_path / "pwned").exists()
