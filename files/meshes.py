"""Mesh import and export: OBJ in (with UVs), OBJ and PLY out, numbered frame sequences for baking.

``load_obj`` reads a cloth panel or garment into a validated ``loom.engine.mesh.Mesh``: ``v`` positions [m], ``f``
faces (polygons are fan-triangulated: (0, 1, 2), (0, 2, 3), ...; negative, relative indices work), and ``vt``
coordinates referenced as ``f v/vt`` become ``Mesh.uv``. Everything else (``vn``, ``o``, ``g``, ``s``, ``usemtl``,
``mtllib``, ``l``, comments) is skipped. A malformed file raises ``ObjError`` (a ValueError) whose message is one
line naming the file, the line and the problem::

    ObjError: cloth.obj:17: face index 42 out of range (file has 30 vertices)

``save_obj``, ``save_ply`` and ``save_frame`` write atomically: the text goes to a temporary file in the target's
directory, which ``os.replace`` renames onto the target only once it is complete, so a crash or Ctrl-C never
leaves a half-written file (at worst a stale ``.name.tmp-*`` file that ``export_frames`` and the baker clean up).
OBJ floats are written with ``repr`` (shortest round-trip form), so ``load_obj(save_obj(...))`` gives back the same
float64 bits, at any finite size (1e300 m too: the zero-area check is scale-safe). Files get the permissions the
umask gives (not the temporary file's 0600); writing onto a device (/dev/null) writes into it, never replaces it;
an OSError names the target path. ``save_obj``'s object name is escaped onto one line, so it cannot add statements;
``load_obj`` skips a UTF-8 byte-order mark.

Note: ``Mesh.uv`` are material coordinates in metres (the implicit model measures stretch with them), while
modellers usually write texture coordinates in 0..1. Loom passes ``vt`` through unchanged; scale your UV layout to
metres in the modeller, or load with ``uv=False`` to get coordinates in metres from the best-fit plane.
"""
from __future__ import annotations

import dataclasses as _dataclasses
import math as _math
import os as _os
import re as _re
import unicodedata as _unicodedata
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from loom.engine import mesh as _mesh
from loom.files.atomic import write_atomic

__all__ = ["ObjError", "load_obj", "save_obj", "save_ply", "frame_path", "save_frame", "export_frames",
           "complete_frames", "remove_stale_temporaries", "FRAME_FORMATS"]

FRAME_FORMATS = ("obj", "ply")
"""File formats ``save_frame`` and ``export_frames`` write."""


class ObjError(ValueError):
    """A malformed OBJ file: the message is ``file:line: problem``, one line, no numpy traceback behind it."""


# --- OBJ in ----------------------------------------------------------------------------------------------------

def load_obj(path: str | _os.PathLike, *, uv: bool = True) -> _mesh.Mesh:
    """Read a cloth mesh from a Wavefront OBJ file and return it as a validated ``Mesh``.

    Faces with more than three corners are fan-triangulated in file order. With uv=True (default) and ``vt``
    coordinates referenced by the faces, they become ``Mesh.uv`` (passed through as is, see the module note);
    a vertex referenced with two different coordinates (a UV seam) is an error, because a particle has one material
    coordinate: split the seam in the modeller or pass uv=False. Without ``vt`` (or with uv=False) the mesh gets
    ``from_triangles``'s best-fit-plane coordinates [m].

    Raises ObjError (a ValueError) naming file and line for: an unparsable number, too few coordinates, a NaN or
    infinite coordinate, a face with fewer than 3 corners, a malformed or zero or out-of-range index, a vertex no face
    uses, faces mixing corners with and without ``vt``, a UV seam, no faces at all, and every check of
    ``loom.engine.mesh.from_triangles`` (degenerate, duplicate, zero-area or inconsistently wound triangles).
    Raises OSError if the file cannot be read.
    """
    name = _os.fspath(path)
    with open(path, encoding="utf-8-sig", errors="replace") as handle:    # -sig: a leading byte-order mark is skipped
        text = handle.read()

    positions: list[tuple[float, float, float]] = []
    vertex_lines: list[int] = []
    coords: list[tuple[float, float]] = []
    triangles: list[tuple[int, int, int]] = []
    triangle_uv: list[tuple[int, int, int]] = []
    triangle_lines: list[int] = []
    with_uv = without_uv = 0                             # line of the first face corner of each kind (0 = none)
    line_number = 0
    for line_number, raw in enumerate(text.splitlines(), start=1):
        fields = raw.split("#", 1)[0].split()
        if not fields:
            continue
        keyword = fields[0]
        if keyword == "v":
            positions.append(_parse_numbers(name, line_number, fields, 3, "vertex", "v x y z"))
            vertex_lines.append(line_number)
        elif keyword == "vt":
            coords.append(_parse_numbers(name, line_number, fields, 2, "texture coordinate", "vt u v"))
        elif keyword == "f":
            corners = fields[1:]
            if len(corners) < 3:
                raise ObjError(f"{name}:{line_number}: face with {len(corners)} "
                               f"{'vertex' if len(corners) == 1 else 'vertices'}, need at least 3")
            v_idx, t_idx = [], []
            for corner in corners:
                v, t = _parse_corner(name, line_number, corner, len(positions), len(coords))
                v_idx.append(v)
                t_idx.append(t)
            if any(t is None for t in t_idx):
                without_uv = without_uv or line_number
            if any(t is not None for t in t_idx):
                with_uv = with_uv or line_number
            for k in range(1, len(corners) - 1):                # fan: (0, k, k + 1)
                triangles.append((v_idx[0], v_idx[k], v_idx[k + 1]))
                triangle_uv.append((t_idx[0], t_idx[k], t_idx[k + 1]))
                triangle_lines.append(line_number)
        # every other statement (vn, o, g, s, usemtl, mtllib, l, p, ...) carries nothing a cloth needs

    if not triangles:
        raise ObjError(f"{name}:{line_number}: end of file and no faces ('f' lines); a cloth mesh needs at least "
                       "one triangle")
    tri = np.asarray(triangles, dtype=np.int64)
    used = np.bincount(tri.ravel(), minlength=len(positions))
    unused = np.flatnonzero(used == 0)
    if unused.size:
        k = int(unused[0])
        raise ObjError(f"{name}:{vertex_lines[k]}: vertex {k + 1} is used by no face; a cloth has no loose "
                       "particles (delete it)")

    uv_array = None
    if uv and with_uv:
        if without_uv:
            raise ObjError(f"{name}:{without_uv}: face corner without a texture coordinate, but the face on line "
                           f"{with_uv} has them; give every corner v/vt or none (or load with uv=False)")
        uv_array = _per_vertex_uv(name, tri, np.asarray(triangle_uv, dtype=np.int64),
                                  np.asarray(coords, dtype=np.float64), triangle_lines)
    try:
        return _scale_safe_mesh(np.asarray(positions, dtype=np.float64), tri, uv_array)
    except ValueError as error:                          # map the mesh's "triangles[k]" back to a file line
        message = str(error)
        found = _re.findall(r"triangles\[(\d+)\]", message)    # the last one named is the offending one
        where = f"{name}:{triangle_lines[int(found[-1])]}" if found else name
        if found:
            message = message.replace("from_triangles.", "") + " (triangles and vertices counted from 0)"
        raise ObjError(f"{where}: {message}") from None


def _scale_safe_mesh(positions: np.ndarray, triangles: np.ndarray, uv: np.ndarray | None) -> _mesh.Mesh:
    """``from_triangles`` for coordinates of any finite size: the same mesh, with the same position bits.

    Areas and the bounding-box diagonal square the coordinates, which overflows to inf past about 1e77 m (and
    past 1e154 m ``from_triangles`` calls every triangle zero-area). Such a mesh is checked scaled by a
    power of two (exact: only the exponents change) to a largest coordinate below 1, where the relative zero-area
    test is the one a metre-sized mesh gets; the Mesh then gets the original positions back, and its best-fit uv
    (when the file has none) is scaled back by the same power of two.
    """
    largest = float(np.abs(positions).max()) if positions.size else 0.0
    if largest <= _SCALE_SAFE:
        return _mesh.from_triangles(positions, triangles, uv)
    factor = _math.ldexp(1.0, -_math.frexp(largest)[1])          # 2**-e: largest * factor in [0.5, 1)
    checked = _mesh.from_triangles(positions * factor, triangles, uv)
    back = checked.uv if uv is not None else checked.uv / factor
    if not np.isfinite(back).all():
        raise ValueError(f"from_triangles.positions: spread over more than {np.finfo(np.float64).max:g} m, so "
                         "the best-fit uv overflows; give the file vt coordinates or scale the mesh down")
    return _dataclasses.replace(checked, positions=positions, uv=back)


_SCALE_SAFE = 2.0 ** 200
"""Largest coordinate [m] checked unscaled (about 1.6e60): the squared length of a cross product of two edges
grows as the fourth power of the coordinates and overflows float64 past about 1e77 m."""


def _parse_numbers(name: str, line: int, fields: list[str], count: int, what: str,
                   form: str) -> tuple[float, ...]:
    """The first ``count`` numbers after the keyword, finite; raise ObjError naming the line otherwise."""
    if len(fields) - 1 < count:
        raise ObjError(f"{name}:{line}: {what} with {len(fields) - 1} coordinates, expected '{form}'")
    values = []
    for text in fields[1:count + 1]:
        try:
            value = float(text)
        except ValueError:
            raise ObjError(f"{name}:{line}: bad number {text!r} in {what}, expected '{form}'") from None
        if not _math.isfinite(value):
            raise ObjError(f"{name}:{line}: {what} has a non-finite coordinate {text!r}; coordinates must be finite")
        values.append(value)
    return tuple(values)


def _parse_corner(name: str, line: int, corner: str, vertex_count: int,
                  coord_count: int) -> tuple[int, int | None]:
    """Zero-based (vertex, texture coordinate or None) of one face corner ``v``, ``v/vt``, ``v//vn``, ``v/vt/vn``."""
    parts = corner.split("/")
    if len(parts) > 3 or not parts[0]:
        raise ObjError(f"{name}:{line}: bad face corner {corner!r}, expected v, v/vt, v//vn or v/vt/vn")
    vertex = _resolve(name, line, parts[0], vertex_count, "face index", "vertices")
    coord = None
    if len(parts) >= 2 and parts[1]:
        coord = _resolve(name, line, parts[1], coord_count, "texture index", "texture coordinates")
    return vertex, coord


def _resolve(name: str, line: int, text: str, count: int, what: str, plural: str) -> int:
    """Zero-based index of an OBJ index (1-based, or negative = relative to the end so far)."""
    try:
        index = int(text)
    except ValueError:
        raise ObjError(f"{name}:{line}: bad {what} {text!r}, expected a whole number") from None
    if index == 0:
        raise ObjError(f"{name}:{line}: {what} 0 is invalid (OBJ indices start at 1)")
    resolved = index - 1 if index > 0 else count + index
    if not 0 <= resolved < count:
        so_far = "" if index > 0 else " so far"
        raise ObjError(f"{name}:{line}: {what} {index} out of range (file has {count} {plural}{so_far})")
    return resolved


def _per_vertex_uv(name: str, tri: np.ndarray, tri_uv: np.ndarray, coords: np.ndarray,
                   triangle_lines: list[int]) -> np.ndarray:
    """(n, 2) coordinates, one per vertex; raise ObjError at the first vertex referenced with two different ones."""
    n = int(tri.max()) + 1
    vertex, coord = tri.ravel(), tri_uv.ravel()
    first = np.full(n, -1, dtype=np.int64)
    first[vertex[::-1]] = np.arange(vertex.size)[::-1]       # earliest corner of each vertex
    chosen = coords[coord[first]]
    differs = np.flatnonzero((coords[coord] != chosen[vertex]).any(axis=1))
    if differs.size:
        c = int(differs[0])
        v, a, b = int(vertex[c]), int(coord[first[vertex[c]]]), int(coord[c])
        raise ObjError(f"{name}:{triangle_lines[c // 3]}: vertex {v + 1} has texture coordinate {b + 1} here but "
                       f"{a + 1} on line {triangle_lines[first[v] // 3]} (a UV seam); a particle has one material "
                       "coordinate: split the seam in the modeller or load with uv=False")
    return chosen


# --- OBJ and PLY out -------------------------------------------------------------------------------------------

def save_obj(path: str | _os.PathLike, positions: np.ndarray, triangles: np.ndarray,
             uv: np.ndarray | None = None, normals: np.ndarray | None = None, *, name: str | None = None) -> Path:
    """Write a triangle mesh as Wavefront OBJ, atomically, and return the path.

    positions (n, 3) [m]; triangles (t, 3) integer indices into them (written 1-based); uv (n, 2) written as ``vt``
    and normals (n, 3) as ``vn``, one per vertex, with faces ``a/a/a``. name (a string) adds an ``o name`` line,
    escaped so it stays one line: a backslash becomes ``\\\\``, a line break ``\\n``/``\\r``, a tab ``\\t`` and
    any other control or line-separator character ``\\xHH``/``\\uHHHH`` (a name cannot add statements to the file).
    Floats use their shortest round-trip form, so ``load_obj`` reads back the same bits. Raises ValueError naming
    save_obj.<field> for a bad shape, non-finite value, index out of range or a name that is not a string.
    """
    pos, tri, uv_a, nrm = _check_export("save_obj", positions, triangles, uv=uv, normals=normals)
    if name is not None and not isinstance(name, str):
        raise ValueError(f"save_obj.name = {name!r}: must be a string or None")
    lines = ["# Loom cloth mesh", f"# {pos.shape[0]} vertices, {tri.shape[0]} triangles"]
    if name:
        lines.append(f"o {_escape_name(name)}")
    lines += [f"v {x!r} {y!r} {z!r}" for x, y, z in pos.tolist()]
    if uv_a is not None:
        lines += [f"vt {u!r} {v!r}" for u, v in uv_a.tolist()]
    if nrm is not None:
        lines += [f"vn {x!r} {y!r} {z!r}" for x, y, z in nrm.tolist()]
    one = (tri + 1).tolist()
    if uv_a is not None and nrm is not None:
        lines += [f"f {a}/{a}/{a} {b}/{b}/{b} {c}/{c}/{c}" for a, b, c in one]
    elif uv_a is not None:
        lines += [f"f {a}/{a} {b}/{b} {c}/{c}" for a, b, c in one]
    elif nrm is not None:
        lines += [f"f {a}//{a} {b}//{b} {c}//{c}" for a, b, c in one]
    else:
        lines += [f"f {a} {b} {c}" for a, b, c in one]
    return write_atomic(path, ("\n".join(lines) + "\n").encode("utf-8"))


def _escape_name(name: str) -> str:
    """``name`` as one line of text: ``\\`` → ``\\\\``, newline → ``\\n``, return → ``\\r``, tab → ``\\t``, any
    other control, surrogate or line/paragraph-separator character → ``\\xHH`` or ``\\uHHHH`` (what
    ``str.splitlines`` breaks on is among them), so an object name written into a file cannot start a new statement."""
    out = []
    for char in name:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif _unicodedata.category(char) in ("Cc", "Zl", "Zp", "Cs"):
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
        else:
            out.append(char)
    return "".join(out)


_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def save_ply(path: str | _os.PathLike, positions: np.ndarray, triangles: np.ndarray, *,
             binary: bool = False) -> Path:
    """Write a triangle mesh as Stanford PLY (ASCII, or little-endian binary with binary=True), atomically.

    Vertices are ``double x, y, z`` [m] (exact float64), faces ``list uchar int vertex_indices``. Raises ValueError
    naming save_ply.<field> for a bad shape, non-finite value or index out of range.
    """
    pos, tri, _, _ = _check_export("save_ply", positions, triangles)
    n, t = pos.shape[0], tri.shape[0]
    header = ("ply\n" + ("format binary_little_endian 1.0\n" if binary else "format ascii 1.0\n")
              + "comment Loom cloth mesh\n"
              + f"element vertex {n}\nproperty double x\nproperty double y\nproperty double z\n"
              + f"element face {t}\nproperty list uchar int vertex_indices\nend_header\n").encode("ascii")
    if binary:
        faces = np.empty(t, dtype=[("count", "u1"), ("index", "<i4", (3,))])
        faces["count"], faces["index"] = 3, tri
        body = pos.astype("<f8").tobytes() + faces.tobytes()
    else:
        body = ("\n".join([f"{x!r} {y!r} {z!r}" for x, y, z in pos.tolist()]
                          + [f"3 {a} {b} {c}" for a, b, c in tri.tolist()]) + "\n").encode("ascii")
    return write_atomic(path, header + body)


# --- frame sequences -------------------------------------------------------------------------------------------

def frame_path(directory: str | _os.PathLike, index: int, fmt: str = "obj") -> Path:
    """Path of frame ``index`` in a sequence: ``directory/frame_00042.obj`` (five digits, more past 99,999)."""
    return Path(directory) / f"frame_{index:05d}.{_check_format(fmt)}"


def save_frame(directory: str | _os.PathLike, index: int, positions: np.ndarray, triangles: np.ndarray, *,
               fmt: str = "obj", uv: np.ndarray | None = None) -> Path:
    """Write one frame of a sequence atomically (OBJ with optional ``vt``, or PLY) and return its path."""
    target = frame_path(directory, index, fmt)
    if fmt == "obj":
        return save_obj(target, positions, triangles, uv=uv)
    return save_ply(target, positions, triangles)


def export_frames(directory: str | _os.PathLike, frames: Iterable[np.ndarray], triangles: np.ndarray, *,
                  fmt: str = "obj", uv: np.ndarray | None = None, start: int = 0) -> list[Path]:
    """Write each (n, 3) position array of ``frames`` [m] as frame start, start + 1, ... and return the paths.

    Creates ``directory`` if needed and removes stale temporary files an interrupted export left there. Every frame
    shares ``triangles`` (t, 3) and ``uv`` (n, 2, OBJ only). Each file is written atomically.
    """
    _check_format(fmt)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(directory)
    return [save_frame(directory, start + k, x, triangles, fmt=fmt, uv=uv) for k, x in enumerate(frames)]


def complete_frames(directory: str | _os.PathLike, fmt: str = "obj") -> int:
    """Number of frames 0, 1, 2, ... present without a gap in ``directory`` (all complete: writes are atomic)."""
    count = 0
    while frame_path(directory, count, fmt).is_file():
        count += 1
    return count


def remove_stale_temporaries(directory: str | _os.PathLike) -> int:
    """Delete the ``.*.tmp-*`` files that interrupted atomic writes left in ``directory``; return how many."""
    removed = 0
    for stale in Path(directory).glob(".*.tmp-*"):
        stale.unlink(missing_ok=True)
        removed += 1
    return removed


# --- private ---------------------------------------------------------------------------------------------------

def _check_format(fmt: str) -> str:
    if fmt not in FRAME_FORMATS:
        raise ValueError(f"format = {fmt!r}: expected one of {', '.join(FRAME_FORMATS)}")
    return fmt


def _check_export(where: str, positions: object, triangles: object, *, uv: object = None,
                  normals: object = None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Validated float64 positions (n, 3), int64 triangles (t, 3) in range, optional uv (n, 2), normals (n, 3)."""
    pos = _real_table(where, "positions", positions, 3, None)
    n = pos.shape[0]
    tri = np.asarray(triangles)
    if tri.ndim != 2 or tri.shape[1] != 3 or (tri.size and tri.dtype.kind not in "iu"):
        raise ValueError(f"{where}.triangles: shape {tri.shape}, dtype {tri.dtype}; expected (t, 3) integers")
    tri = tri.astype(np.int64)
    bad = np.flatnonzero(((tri < 0) | (tri >= n)).any(axis=1))
    if bad.size:
        k = int(bad[0])
        raise ValueError(f"{where}.triangles[{k}] = {tri[k].tolist()}: index out of range for {n} positions")
    uv_a = None if uv is None else _real_table(where, "uv", uv, 2, n)
    nrm = None if normals is None else _real_table(where, "normals", normals, 3, n)
    return pos, tri, uv_a, nrm


def _real_table(where: str, field: str, value: object, width: int, rows: int | None) -> np.ndarray:
    array = np.asarray(value)
    if array.ndim != 2 or array.shape[1] != width or (rows is not None and array.shape[0] != rows) \
            or array.dtype.kind not in "iuf":
        raise ValueError(f"{where}.{field}: shape {array.shape}, dtype {array.dtype}; expected "
                         f"({rows if rows is not None else 'n'}, {width}) real numbers")
    array = np.asarray(array, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(array).all(axis=1))
    if bad.size:
        k = int(bad[0])
        raise ValueError(f"{where}.{field}[{k}] = {array[k].tolist()}: must be finite")
    return array
