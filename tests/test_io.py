"""Mesh import/export (files.meshes), headless baking with resume (files.bake), thickness export (files.thickness)."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from loom.engine import mesh
from loom.files import bake, thickness
from loom.files import meshes as io

REPO = Path(__file__).resolve().parents[1]


# --- OBJ round trip -------------------------------------------------------------------------------------------

def test_obj_round_trip_gives_back_the_same_positions_triangles_and_uv(tmp_path):
    sheet = mesh.grid(7, 5, 1.3, 0.7, center=(0.1, 2.0, -0.3), plane="xz")
    bent = sheet.positions + np.sin(sheet.positions[:, [2, 0, 1]] * 7.0) * 1e-3       # not round numbers
    path = io.save_obj(tmp_path / "sheet.obj", bent, sheet.triangles, uv=sheet.uv)
    loaded = io.load_obj(path)
    assert np.array_equal(loaded.positions, bent), "positions changed bits through OBJ"
    assert np.array_equal(loaded.triangles, sheet.triangles)
    assert np.array_equal(loaded.uv, sheet.uv), "uv changed bits through OBJ"


def test_obj_with_normals_and_without_uv_loads_with_best_fit_uv(tmp_path):
    disc = mesh.disc(0.5, 3)
    path = io.save_obj(tmp_path / "disc.obj", disc.positions, disc.triangles,
                       normals=np.tile([0.0, 1.0, 0.0], (disc.vertex_count, 1)), name="disc")
    loaded = io.load_obj(path)
    assert np.array_equal(loaded.positions, disc.positions) and np.array_equal(loaded.triangles, disc.triangles)
    assert np.allclose(loaded.uv.min(axis=0), 0.0)


def test_obj_polygons_are_fan_triangulated_and_relative_indices_resolve(tmp_path):
    path = tmp_path / "quad.obj"
    path.write_text("# a quad and a triangle\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 2 0 0\n"
                    "vt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\nvt 2 0\ng panel\ns off\n"
                    "f 1/1 2/2 3/3 4/4\nf -4/-4 -1/-1 -3/-3\n")
    loaded = io.load_obj(path)
    assert loaded.triangles.tolist() == [[0, 1, 2], [0, 2, 3], [1, 4, 2]]
    assert loaded.uv.tolist() == [[0, 0], [1, 0], [1, 1], [0, 1], [2, 0]]


_TRIANGLE = "v 0 0 0\nv 1 0 0\nv 0 1 0\n"
MALFORMED = {
    "bad index": (_TRIANGLE + "f 1 2 x\n", 4, "bad face index 'x'"),
    "index out of range": (_TRIANGLE + "f 1 2 42\n", 4, "face index 42 out of range (file has 3 vertices)"),
    "index zero": (_TRIANGLE + "f 0 1 2\n", 4, "face index 0 is invalid"),
    "nan coordinate": ("v 0 0 0\nv nan 0 0\nv 0 1 0\nf 1 2 3\n", 2, "non-finite coordinate 'nan'"),
    "inf coordinate": ("v 0 0 0\nv 1 0 0\nv 0 -inf 0\nf 1 2 3\n", 3, "non-finite coordinate '-inf'"),
    "unparsable number": ("v 0 0 0\nv 1 0 1.2.3\nv 0 1 0\nf 1 2 3\n", 2, "bad number '1.2.3'"),
    "too few coordinates": ("v 0 0 0\nv 1 0\nv 0 1 0\nf 1 2 3\n", 2, "vertex with 2 coordinates"),
    "missing faces": (_TRIANGLE + "# nothing else\n", 4, "no faces"),
    "face with 2 vertices": (_TRIANGLE + "f 1 2\n", 4, "face with 2 vertices, need at least 3"),
    "texture index out of range": (_TRIANGLE + "vt 0 0\nf 1/1 2/1 3/7\n", 5, "texture index 7 out of range"),
    "uv seam": (_TRIANGLE + "v 1 1 0\nvt 0 0\nvt 1 0\nvt 0 1\nvt 1 1\nvt 5 5\nf 1/1 2/2 3/3\nf 2/5 4/4 3/3\n",
                11, "vertex 2 has texture coordinate 5 here but 2 on line 10"),
    "unused vertex": ("v 0 0 0\nv 1 0 0\nv 9 9 9\nv 0 1 0\nf 1 2 4\n", 3, "vertex 3 is used by no face"),
    "degenerate face": (_TRIANGLE + "f 1 2 3\nf 1 1 2\n", 5, "degenerate triangle"),
    "inconsistent winding": (_TRIANGLE + "v 1 1 0\nf 1 2 3\nf 2 3 4\n", 6, "inconsistent winding"),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_malformed_obj_raises_one_line_naming_file_line_and_problem(tmp_path, case):
    text, line, problem = MALFORMED[case]
    path = tmp_path / "cloth.obj"
    path.write_text(text)
    with pytest.raises(io.ObjError) as caught:
        io.load_obj(path)
    message = str(caught.value)
    assert isinstance(caught.value, ValueError)
    assert "\n" not in message, f"not one line: {message!r}"
    assert message.startswith(f"{path}:{line}: "), f"{case}: {message!r} should name line {line}"
    assert problem in message, f"{case}: {message!r} lacks {problem!r}"
    assert caught.value.__suppress_context__ or caught.value.__context__ is None, "chained traceback behind it"


# --- PLY and frame sequences ----------------------------------------------------------------------------------

def _ply_header(path: Path) -> tuple[list[str], bytes]:
    data = path.read_bytes()
    head, body = data.split(b"end_header\n", 1)
    return head.decode("ascii").splitlines(), body


@pytest.mark.parametrize("binary", [False, True])
def test_ply_header_counts_match_the_mesh(tmp_path, binary):
    sheet = mesh.grid(5, 4, 1.0, 1.0)
    path = io.save_ply(tmp_path / "sheet.ply", sheet.positions, sheet.triangles, binary=binary)
    header, body = _ply_header(path)
    assert header[0] == "ply"
    assert header[1] == ("format binary_little_endian 1.0" if binary else "format ascii 1.0")
    assert "element vertex 20" in header and "element face 24" in header
    if binary:
        vertices = np.frombuffer(body[:20 * 24], dtype="<f8").reshape(20, 3)
        faces = np.frombuffer(body[20 * 24:], dtype=[("n", "u1"), ("i", "<i4", (3,))])
        assert np.array_equal(vertices, sheet.positions) and np.array_equal(faces["i"], sheet.triangles)
        assert (faces["n"] == 3).all()
    else:
        lines = body.decode().splitlines()
        assert len(lines) == 20 + 24 and lines[20] == "3 " + " ".join(map(str, sheet.triangles[0]))


def test_export_frames_writes_numbered_files_that_load_back(tmp_path):
    sheet = mesh.grid(4, 4, 1.0, 1.0)
    frames = [sheet.positions + (0.0, -0.1 * k, 0.0) for k in range(3)]
    paths = io.export_frames(tmp_path / "seq", frames, sheet.triangles, uv=sheet.uv)
    assert [p.name for p in paths] == ["frame_00000.obj", "frame_00001.obj", "frame_00002.obj"]
    assert io.complete_frames(tmp_path / "seq") == 3
    for k, path in enumerate(paths):
        assert np.array_equal(io.load_obj(path).positions, frames[k])


def test_a_save_interrupted_before_the_rename_leaves_the_old_file_intact(tmp_path, monkeypatch):
    sheet = mesh.grid(3, 3, 1.0, 1.0)
    path = io.save_obj(tmp_path / "a.obj", sheet.positions, sheet.triangles)
    before = path.read_bytes()

    def crash(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(io._os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        io.save_obj(path, sheet.positions * 2.0, sheet.triangles)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["a.obj"], "temporary file left behind"


def test_save_obj_rejects_nan_positions_naming_the_row(tmp_path):
    sheet = mesh.grid(3, 3, 1.0, 1.0)
    bad = sheet.positions.copy()
    bad[4, 1] = np.nan
    with pytest.raises(ValueError, match=r"save_obj.positions\[4\]"):
        io.save_obj(tmp_path / "bad.obj", bad, sheet.triangles)
    assert not list(tmp_path.iterdir())


# --- bake -----------------------------------------------------------------------------------------------------

BAKE = ["hanging_sheet", "--set", "n=8", "--quiet"]


@pytest.fixture(scope="module")
def reference_bake(tmp_path_factory):
    """An uninterrupted 20-frame bake of a small hanging sheet."""
    out = tmp_path_factory.mktemp("reference")
    assert bake.main([*BAKE, "--frames", "20", "--out", str(out)]) == 0
    return out


def _frames(directory: Path) -> list[bytes]:
    return [p.read_bytes() for p in sorted(directory.glob("frame_*.obj"))]


def test_bake_writes_frames_that_load_back_and_change_over_time(reference_bake):
    names = sorted(p.name for p in reference_bake.glob("frame_*"))
    assert names == [f"frame_{k:05d}.obj" for k in range(20)]
    first, last = io.load_obj(reference_bake / names[0]), io.load_obj(reference_bake / names[-1])
    assert first.vertex_count == 64 and first.triangle_count == 2 * 7 * 7
    drop = first.positions[:, 1].min() - last.positions[:, 1].min()
    assert drop > 0.05, f"the sheet fell only {drop:.3f} m in 20 frames"


@pytest.mark.parametrize("every", [0, 4], ids=["replay", "snapshot"])
def test_bake_resumed_after_fewer_frames_equals_an_uninterrupted_bake(tmp_path, reference_bake, every):
    args = [*BAKE, "--out", str(tmp_path), "--every", str(every)]
    assert bake.main([*args, "--frames", "10"]) == 0
    summary = bake.bake("hanging_sheet", 20, tmp_path, every=every, settings={"n": 8}, progress=None)
    assert summary["resumed_from"] == 10 and summary["written"] == 10
    assert summary["resume"] == ("replay" if every == 0 else "snapshot")
    assert _frames(tmp_path) == _frames(reference_bake), "resumed frames differ from the uninterrupted bake"


def test_bake_interrupted_mid_write_resumes_from_the_last_complete_frame(tmp_path, reference_bake, monkeypatch):
    real_replace, calls = os.replace, []

    def crash_on_the_eighth_frame(src, dst):
        if Path(dst).name.startswith("frame_"):
            calls.append(dst)
            if len(calls) == 8:                              # frame 7 fully written to its temp file, not renamed
                raise KeyboardInterrupt
        real_replace(src, dst)

    monkeypatch.setattr(io._os, "replace", crash_on_the_eighth_frame)
    assert bake.main([*BAKE, "--frames", "20", "--out", str(tmp_path), "--every", "5"]) == 130
    monkeypatch.setattr(io._os, "replace", real_replace)
    assert io.complete_frames(tmp_path) == 7 and not list(tmp_path.glob(".*tmp*"))
    summary = bake.bake("hanging_sheet", 20, tmp_path, every=5, settings={"n": 8}, progress=None)
    assert summary["resumed_from"] == 7
    assert _frames(tmp_path) == _frames(reference_bake)
    for path in sorted(tmp_path.glob("frame_*.obj")):
        io.load_obj(path)


def test_bake_refuses_to_resume_a_different_bake(tmp_path, reference_bake):
    with pytest.raises(ValueError, match="holds another bake"):
        bake.bake("hanging_sheet", 25, reference_bake, settings={"n": 9}, progress=None)


def test_bake_command_line_shows_a_progress_bar_and_writes_ply(tmp_path):
    result = subprocess.run([sys.executable, "-m", "loom.files.bake", "hanging_sheet", "--frames", "3", "--out",
                             str(tmp_path), "--format", "ply", "--set", "n=6"], cwd=REPO, capture_output=True,
                            timeout=120)                      # bytes: text mode would turn the \r into \n
    stderr = result.stderr.decode()
    assert result.returncode == 0, stderr
    assert "\r[" in stderr and "3/3 frames" in stderr and "ms/frame" in stderr, stderr
    header, _ = _ply_header(tmp_path / "frame_00002.ply")
    assert "element vertex 36" in header and "element face 50" in header


def test_bake_command_line_reports_an_unknown_game_in_one_line(tmp_path, capsys):
    assert bake.main(["no_such_game", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == ("loom bake: bake.game = 'no_such_game': "
                                               "no module loom.games.no_such_game")


def test_app_arguments_are_read_from_each_games_main():
    for name, substeps in [("hanging_sheet", 16), ("drape", 8), ("flag", 4)]:
        dt, found = bake._app_arguments(bake._import_game(name))
        assert (dt, found) == (1 / 60, substeps), name


# --- thickness ------------------------------------------------------------------------------------------------

T = 0.03           # [m]
H = T / 2          # [m], the default grid spacing


@pytest.fixture(scope="module")
def bent_sheet():
    """A 0.3 m × 0.25 m sheet bent into a parabola (0.018 m sag across), 6 × 5 particles."""
    sheet = mesh.grid(6, 5, 0.3, 0.25, plane="xz")
    x = sheet.positions.copy()
    x[:, 1] = 0.8 * x[:, 0] ** 2
    return x, sheet.triangles


def _brute_distance(points, positions, triangles, samples=40):
    """Distance [m] to a dense barycentric sampling of the triangles (an upper bound within ~edge/samples)."""
    s, t = np.meshgrid(np.linspace(0, 1, samples + 1), np.linspace(0, 1, samples + 1))
    keep = s + t <= 1.0
    w = np.stack([1 - s[keep] - t[keep], s[keep], t[keep]], axis=1)
    cloud = np.einsum("sk,tkc->tsc", w, positions[triangles]).reshape(-1, 3)
    return np.sqrt(((points[:, None, :] - cloud[None, :, :]) ** 2).sum(-1)).min(axis=1)


def _assert_closed_and_outward(vertices, faces):
    directed = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    _, uses = np.unique(np.sort(directed, axis=1), axis=0, return_counts=True)
    assert (uses == 2).all(), f"edges used {sorted(set(uses.tolist()))} times, want exactly 2"
    _, same_way = np.unique(directed, axis=0, return_counts=True)
    assert (same_way == 1).all(), "two triangles traverse an edge the same way: inconsistent orientation"
    p0, p1, p2 = (vertices[faces[:, k]] for k in range(3))
    volume = np.einsum("ij,ij->i", p0, np.cross(p1, p2)).sum() / 6.0
    assert volume > 0, f"signed volume {volume:g} m³: normals point inward"
    return len(vertices) - len(uses) + len(faces)             # Euler characteristic V − E + F


def test_closest_points_match_a_dense_sampling_of_the_cloth(bent_sheet):
    x, tri = bent_sheet
    rng = np.random.default_rng(3)
    points = x.mean(axis=0) + rng.uniform(-0.25, 0.25, (200, 3))
    exact = np.linalg.norm(points - thickness.closest_points(points, x, tri, reach=2 * T), axis=1)
    sampled = _brute_distance(points, x, tri)
    assert np.all(exact <= sampled + 1e-12) and np.all(sampled - exact < 2e-3), \
        f"closest points off by up to {np.max(sampled - exact):.2e} m"


def test_thickness_mesh_is_watertight_and_at_distance_t(bent_sheet):
    x, tri = bent_sheet
    field, origin = thickness.distance_field(x, tri, T, H)
    raw, faces = thickness.marching_tetrahedra(field - T, origin, H)
    assert _assert_closed_and_outward(raw, faces) == 2, "a thickened sheet is a sphere: V − E + F = 2"
    d_raw = np.linalg.norm(raw - thickness.closest_points(raw, x, tri), axis=1)
    assert np.abs(d_raw - T).max() <= H, f"raw vertices at {d_raw.min():.4f}..{d_raw.max():.4f} m, T = {T} m"

    vertices, faces2 = thickness.thicken(x, tri, T)              # smoothed and refitted: same topology
    assert np.array_equal(faces2, faces)
    assert _assert_closed_and_outward(vertices, faces2) == 2
    d = _brute_distance(vertices[::7], x, tri)
    assert np.abs(d - T).max() <= H, f"vertices at {d.min():.4f}..{d.max():.4f} m from the cloth, T = {T} m"
    d_exact = np.linalg.norm(vertices - thickness.closest_points(vertices, x, tri), axis=1)
    assert np.median(np.abs(d_exact - T)) < 1e-9, "refit should put vertices at distance T"


def test_knotted_variant_is_watertight_at_distance_t_from_the_vertices(bent_sheet):
    x, tri = bent_sheet
    t_knot = 0.05                                              # > spacing·√2/2: the knots join into one shell
    vertices, faces = thickness.thicken(x, tri, t_knot, mode="vertex", smooth_iterations=2)
    assert _assert_closed_and_outward(vertices, faces) == 2
    d = np.sqrt(((vertices[:, None, :] - x[None, :, :]) ** 2).sum(-1)).min(axis=1)
    assert np.abs(d - t_knot).max() <= t_knot / 2, f"{d.min():.4f}..{d.max():.4f} m from the vertices"


def test_simplified_thickness_mesh_is_smaller_and_still_at_distance_t(bent_sheet, tmp_path):
    x, tri = bent_sheet
    full, _ = thickness.thicken(x, tri, T)
    vertices, faces = thickness.save_thickened(tmp_path / "quilt.obj", x, tri, T, simplify_cell=T)
    assert len(vertices) < len(full) / 4, f"{len(vertices)} vertices after clustering, {len(full)} before"
    d = np.linalg.norm(vertices - thickness.closest_points(vertices, x, tri), axis=1)
    assert np.abs(d - T).max() <= H
    text = (tmp_path / "quilt.obj").read_text()
    assert text.count("\nv ") == len(vertices) and text.count("\nvn ") == len(vertices)
    assert text.count("\nf ") == len(faces)


def test_thicken_rejects_a_grid_coarser_than_half_the_thickness(bent_sheet):
    x, tri = bent_sheet
    with pytest.raises(ValueError, match=r"thicken.spacing = 0.02: must be <= thickness / 2"):
        thickness.thicken(x, tri, T, spacing=0.02)
    with pytest.raises(ValueError, match=r"thicken.thickness = -1"):
        thickness.thicken(x, tri, -1)


# --- files, done properly (issue 15): names, BOM, large coordinates, umask, OSErrors as one line ---------------

def test_an_object_name_cannot_add_lines_to_the_obj_file(tmp_path):
    sheet = mesh.grid(3, 3, 1.0, 1.0)
    hostile = "cloth\nv 9 9 9\rf 1 2 3\u2028vt 0 0\x85\x1c\ttab\\"
    path = io.save_obj(tmp_path / "named.obj", sheet.positions, sheet.triangles, name=hostile)
    lines = path.read_text(encoding="utf-8").splitlines()       # splitlines: every line break Python knows
    named = [line for line in lines if line.startswith("o ")]
    assert named == ["o cloth\\nv 9 9 9\\rf 1 2 3\\u2028vt 0 0\\x85\\x1c\\ttab\\\\"]
    loaded = io.load_obj(path)
    assert np.array_equal(loaded.positions, sheet.positions) and np.array_equal(loaded.triangles, sheet.triangles)
    with pytest.raises(ValueError, match=r"^save_obj.name = 42: must be a string or None$"):
        io.save_obj(tmp_path / "bad.obj", sheet.positions, sheet.triangles, name=42)


def test_obj_starting_with_a_utf8_byte_order_mark_loads(tmp_path):
    text = "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"                # the BOM sits right before the first 'v'
    (tmp_path / "bom.obj").write_bytes(b"\xef\xbb\xbf" + text.encode())
    (tmp_path / "plain.obj").write_bytes(text.encode())
    with_bom, plain = io.load_obj(tmp_path / "bom.obj"), io.load_obj(tmp_path / "plain.obj")
    assert with_bom.vertex_count == 3
    assert np.array_equal(with_bom.positions, plain.positions) and np.array_equal(with_bom.uv, plain.uv)


@pytest.mark.parametrize("scale", [1e300, 8e307, 3e150, 1e-3])
def test_large_finite_coordinates_round_trip_bit_exact(tmp_path, scale):
    sheet = mesh.grid(4, 3, 1.0, 0.7, plane="xz")
    positions = (sheet.positions + [0.25, 0.1, -0.3]) * scale
    path = io.save_obj(tmp_path / "far.obj", positions, sheet.triangles, uv=sheet.uv)
    loaded = io.load_obj(path)
    assert loaded.positions.tobytes() == positions.tobytes() and loaded.uv.tobytes() == sheet.uv.tobytes()
    no_uv = io.load_obj(path, uv=False)                         # best-fit uv computed without overflow
    assert no_uv.positions.tobytes() == positions.tobytes() and np.isfinite(no_uv.uv).all()
    assert np.ptp(no_uv.uv[:, 0]) == pytest.approx(1.0 * scale, rel=1e-12)
    ply = io.save_ply(tmp_path / "far.ply", positions, sheet.triangles)
    body = ply.read_text().split("end_header\n", 1)[1].splitlines()[:len(positions)]
    assert np.array_equal(np.array([[float(v) for v in row.split()] for row in body]), positions)


def test_a_really_flat_triangle_far_away_is_still_rejected(tmp_path):
    (tmp_path / "flat.obj").write_text("v 1e300 0 0\nv 2e300 0 0\nv 3e300 0 0\nf 1 2 3\n")
    with pytest.raises(io.ObjError, match=r"flat.obj:4: .*zero-area triangle"):
        io.load_obj(tmp_path / "flat.obj")


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o002])
def test_written_files_honour_the_umask(tmp_path, mask):
    sheet = mesh.grid(3, 3, 1.0, 1.0)
    old = os.umask(mask)
    try:
        written = [io.save_obj(tmp_path / "a.obj", sheet.positions, sheet.triangles),
                   io.save_ply(tmp_path / "a.ply", sheet.positions, sheet.triangles, binary=True),
                   *io.export_frames(tmp_path / "seq", [sheet.positions], sheet.triangles)]
        thickness.save_thickened(tmp_path / "thick.obj", sheet.positions, sheet.triangles, 0.2)
        written.append(tmp_path / "thick.obj")
    finally:
        os.umask(old)
    for path in written:
        assert oct(path.stat().st_mode & 0o777) == oct(0o666 & ~mask), path


def test_bake_files_honour_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        bake.bake("hanging_sheet", 2, tmp_path, every=1, settings={"n": 6}, progress=None)
    finally:
        os.umask(old)
    written = [tmp_path / bake.MANIFEST, tmp_path / "frame_00000.obj", tmp_path / ".resume" / bake.RECORDS]
    for path in written:
        assert oct(path.stat().st_mode & 0o777) == oct(0o640), path


def test_save_obj_into_a_missing_folder_names_the_target_not_a_temporary_file(tmp_path):
    sheet = mesh.grid(3, 3, 1.0, 1.0)
    target = tmp_path / "missing" / "a.obj"
    with pytest.raises(FileNotFoundError) as caught:
        io.save_obj(target, sheet.positions, sheet.triangles)
    assert caught.value.filename == str(target) and caught.value.strerror == "No such file or directory"


def test_writing_to_a_device_writes_into_it_and_never_replaces_it(tmp_path):
    sheet = mesh.grid(3, 3, 1.0, 1.0)
    before = os.stat("/dev/null")
    io.save_obj("/dev/null", sheet.positions, sheet.triangles)
    after = os.stat("/dev/null")
    assert (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)
    with pytest.raises(OSError, match="No space left on device") as caught:
        io.save_obj("/dev/full", sheet.positions, sheet.triangles)
    assert caught.value.filename == "/dev/full"


def _cli(module: str, *args: str, preexec=None) -> tuple[int, str]:
    """Run ``python -m module args`` in a child process; return (exit status, stderr)."""
    result = subprocess.run([sys.executable, "-m", module, *args], cwd=REPO, capture_output=True, text=True,
                            timeout=300, preexec_fn=preexec, env={**os.environ, "NUMBA_NUM_THREADS": "1"})
    return result.returncode, result.stderr


def _one_line(stderr: str) -> str:
    """The only line of stderr, asserting there is no traceback."""
    assert "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1, stderr
    return stderr.strip()


def test_bake_into_a_path_under_a_file_is_one_line_and_status_1(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    out = tmp_path / "file" / "bake"
    status, stderr = _cli("loom.files.bake", "hanging_sheet", "--frames", "2", "--quiet", "--out", str(out))
    assert status == 1 and _one_line(stderr) == f"loom bake: {out}: Not a directory"


def _without_permission_override() -> None:
    """Child setup: drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from the capability bounding set, so even root
    meets folder permissions after exec (prctl PR_CAPBSET_DROP = 24); a no-op need for an ordinary user."""
    if os.geteuid() != 0:
        return
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):                                   # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def test_bake_into_a_read_only_folder_is_one_line_and_status_1(tmp_path):
    read_only = tmp_path / "ro"
    read_only.mkdir()
    read_only.chmod(0o555)
    try:
        status, stderr = _cli("loom.files.bake", "hanging_sheet", "--frames", "2", "--quiet", "--out",
                              str(read_only), preexec=_without_permission_override)
        assert status == 1 and _one_line(stderr) == f"loom bake: {read_only / bake.MANIFEST}: Permission denied"
        assert not list(read_only.iterdir())
        status, stderr = _cli("loom.files.bake", "hanging_sheet", "--frames", "2", "--quiet", "--out",
                              str(read_only / "sub"), preexec=_without_permission_override)
        assert status == 1 and _one_line(stderr) == f"loom bake: {read_only / 'sub'}: Permission denied"
    finally:
        read_only.chmod(0o755)


def _small_file_limit() -> None:
    """Child setup: files may grow to 3000 bytes only (a full disk: a frame write fails with EFBIG)."""
    import resource
    resource.setrlimit(resource.RLIMIT_FSIZE, (3000, 3000))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def test_bake_onto_a_full_disk_is_one_line_and_status_1_and_resumes_later(tmp_path):
    status, stderr = _cli("loom.files.bake", "hanging_sheet", "--set", "n=8", "--frames", "3", "--quiet", "--out",
                          str(tmp_path), preexec=_small_file_limit)
    assert status == 1 and _one_line(stderr) == f"loom bake: {tmp_path / 'frame_00000.obj'}: File too large"
    assert not list(tmp_path.glob("frame_*")) and not list(tmp_path.glob(".*tmp*"))
    assert bake.main(["hanging_sheet", "--set", "n=8", "--frames", "3", "--quiet", "--out", str(tmp_path)]) == 0


def test_thickness_command_line_reports_file_errors_in_one_line(tmp_path):
    sheet = mesh.grid(4, 4, 0.3, 0.3, plane="xz")
    source = io.save_obj(tmp_path / "cloth.obj", sheet.positions, sheet.triangles)
    status, stderr = _cli("loom.files.thickness", str(source), "/dev/full", "--thickness", "0.05")
    assert status == 1 and _one_line(stderr) == "loom thickness: /dev/full: No space left on device"
    missing = tmp_path / "nope.obj"
    status, stderr = _cli("loom.files.thickness", str(missing), str(tmp_path / "t.obj"), "--thickness", "0.05")
    assert status == 1 and _one_line(stderr) == f"loom thickness: {missing}: No such file or directory"
    status, stderr = _cli("loom.files.thickness", str(source), str(source / "t.obj"), "--thickness", "0.05")
    assert status == 1 and _one_line(stderr) == f"loom thickness: {source / 't.obj'}: Not a directory"


def test_games_screenshot_into_an_impossible_path_is_one_line_and_status_1(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    target = tmp_path / "file" / "shot.png"
    status, stderr = _cli("loom.games", "hanging_sheet", "--n", "6", "--headless", "--frames", "1", "--screenshot",
                          str(target))
    assert status == 1, stderr
    line = _one_line(stderr)
    expected = f"loom: --screenshot {target}: {target.parent} is not a folder"   # checked before the run (runner.py)
    assert line == expected
    status, stderr = _cli("loom.games.hanging_sheet", "--n", "6", "--headless", "--frames", "1", "--screenshot",
                          str(target))                                  # the game's own module: the same line
    assert status == 1 and _one_line(stderr) == expected, stderr
