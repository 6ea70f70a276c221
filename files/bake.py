"""Bake a game's cloth animation headless into a numbered OBJ or PLY sequence, resumably.

Run: python -m loom.files.bake <game> --frames N --out DIR [--format obj|ply] [--every K] [--set key=value ...]

``<game>`` is a game of ``loom.games`` (``hanging_sheet``, ``flag``, ``drape``, ``cape``, ...) or any dotted module
path with a ``build_scene(app, ...)``. A game declares its step as module constants ``DT`` [s] and ``SUBSTEPS``, the
ones its own ``main`` builds its App with; the baker builds the same App (``--substeps`` overrides SUBSTEPS) with
``loom.systems.DefaultPlugins`` and no renderer or window, calls ``build_scene(app, **settings)`` (``--set n=16``
passes ``n=16``), then steps N fixed frames. Frame k, ``DIR/frame_0000k.obj``, is the state after k + 1 steps:
every cloth with triangles, in entity order, concatenated into one mesh (OBJ with each particle's rest material
coordinate as ``vt``). Frames load back with ``loom.files.meshes.load_obj``. A progress bar goes to stderr::

    [#########.....................] 120/600 frames 3.2 ms/frame

Interruption and resume. Each frame is written atomically (temporary file + ``os.replace``, flushed to disk), then
its name, size [bytes] and SHA-256 are appended to the record ``DIR/.resume/frames.log`` (one line, flushed to disk):
a frame counts as done only once its record is durable. Re-running the same command continues after the last frame
m whose file matches its record; any later frame whose file is missing, has another size or checksum (a truncated
file, a file the bake did not write) or has no record is written again, the others are kept. The state to continue
from is rebuilt one of two ways:

- snapshot (``loom.files.snapshot``): every K frames (``--every K``, default 50; 0 turns it off) the world is saved
  to ``DIR/.resume/step_000050.snap`` and recorded in the same log; a resume loads the latest snapshot at or before
  frame m whose file matches its record (a snapshot the bake did not write, or one that fails to load, is skipped;
  a scene that cannot be saved falls back to replay);
- replay (``--every 0``, or no snapshot at or before frame m): the scene is rebuilt and re-simulated from the start
  up to frame m without writing.

Either way the continued frames equal those of an uninterrupted bake, byte for byte: Loom's stepping is
bit-identical run to run (same inputs, same thread count), and a step depends only on the state a snapshot holds
(tests/test_bake_resume.py kills a bake of every game mid-run and compares). An OSError (read-only or full disk, a
file where a folder should be) is one line on stderr naming the path and the reason, exit status 1.

``DIR/bake.json`` records the game, settings, dt, substeps and format; resuming into a directory baked with other
ones is refused rather than mixing two animations.
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import importlib
import json
import logging
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from loom.components import Cloth
from loom.engine import App
from loom.launch.runner import whole_number
from loom.files import meshes as _io
from loom.files.atomic import os_error_line, write_atomic
from loom.files.snapshot import load_snapshot, save_snapshot
from loom.systems import DefaultPlugins

__all__ = ["bake", "main", "DEFAULT_EVERY", "MANIFEST", "RECORDS"]

DEFAULT_EVERY = 50
"""Frames between resume snapshots (0: none, resume by replay)."""
MANIFEST = "bake.json"
"""Name of the file in the output directory that records what was baked."""
RECORDS = "frames.log"
"""Name of the file in ``DIR/.resume`` recording each finished frame's and snapshot's size and SHA-256."""
_log = logging.getLogger("loom")


def bake(game: str, frames: int, out: str | Path, *, fmt: str = "obj", every: int = DEFAULT_EVERY,
         settings: dict[str, Any] | None = None, substeps: int | None = None,
         progress: TextIO | None = sys.stderr) -> dict[str, Any]:
    """Bake ``frames`` frames of ``game`` into ``out`` (resuming a previous bake there) and return a summary.

    The summary holds game, frames, written (frames written by this call), resumed_from (first frame this call
    computed), resume ("snapshot", "replay" or "none"), dt, substeps and ms_per_frame. progress=None is silent.
    Raises ValueError for a bad option, a game without build_scene, DT or SUBSTEPS, or an output directory holding
    another bake; OSError naming the path for a file that cannot be written (read-only or full disk, a file where a
    folder should be). Frames and snapshots already on disk are trusted only if they match the bake's own record.
    """
    if isinstance(frames, bool) or not isinstance(frames, int) or frames < 0:
        raise ValueError(f"bake.frames = {frames!r}: must be an integer >= 0")
    if isinstance(every, bool) or not isinstance(every, int) or every < 0:
        raise ValueError(f"bake.every = {every!r}: must be an integer >= 0 (0: no resume snapshots)")
    if fmt not in _io.FRAME_FORMATS:
        raise ValueError(f"bake.format = {fmt!r}: expected one of {', '.join(_io.FRAME_FORMATS)}")
    settings = dict(settings or {})
    module = _import_game(game)
    dt, game_substeps = _app_arguments(module)
    substeps = game_substeps if substeps is None else substeps
    snapshots = every > 0                                     # off for good once a scene cannot be saved

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    resume_dir = out / ".resume"
    _io.remove_stale_temporaries(out)
    if resume_dir.is_dir():
        _io.remove_stale_temporaries(resume_dir)
    _check_manifest(out, {"game": game, "format": fmt, "settings": settings, "dt": dt, "substeps": substeps})
    resume_dir.mkdir(exist_ok=True)
    records = _Records(out, resume_dir / RECORDS)

    done = _done_frames(out, fmt, frames, records)
    app = _build_app(module, dt, substeps, settings)
    bar = _Progress(frames, progress)
    summary = {"game": game, "frames": frames, "written": 0, "resumed_from": done, "resume": "none",
               "dt": dt, "substeps": substeps, "ms_per_frame": 0.0}
    try:
        start_step = 0
        if done and snapshots:
            start_step = _load_latest_snapshot(app, resume_dir, done, records)
        if done:
            summary["resume"] = "snapshot" if start_step else "replay"
        for step in range(start_step, done):                 # re-simulate, writing nothing
            app.step(1)
            bar.update(step + 1, note="replay")
        elapsed = 0.0
        for k in range(done, frames):
            tick = time.perf_counter()
            app.step(1)
            elapsed += time.perf_counter() - tick
            target = _io.frame_path(out, k, fmt)
            if k == done or not records.matches(target):    # keep later frames a previous run completed
                positions, triangles, uv = _gather(app, game)
                records.add(_io.save_frame(out, k, positions, triangles, fmt=fmt, uv=uv))
                summary["written"] += 1
            if snapshots and (k + 1) % every == 0:
                snap = resume_dir / f"step_{k + 1:06d}.snap"
                try:
                    save_snapshot(app, snap)
                except ValueError as error:                   # a scene that cannot be saved: resume by replay
                    _log.warning("bake: no more resume snapshots (%s); a resume will replay from the start",
                                 error)
                    snapshots = False
                else:
                    records.add(snap)
            bar.update(k + 1, ms=1000.0 * elapsed / (k + 1 - done))
        summary["ms_per_frame"] = round(1000.0 * elapsed / max(frames - done, 1), 4)
    finally:
        bar.close()
        app.close()
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: parse argv, bake, print one summary line on stdout; return the exit status."""
    p = argparse.ArgumentParser(prog="python -m loom.files.bake", description="Bake a Loom game headless into a "
                                "frame_00000.obj ... sequence; re-run the same command to resume.")
    p.add_argument("game", help="game in loom.games (hanging_sheet, flag, drape, cape, ...) or a dotted module path")
    p.add_argument("--frames", type=whole_number("--frames", 0), default=300, help="frames to bake (default 300)")
    p.add_argument("--out", required=True, help="output directory (created if needed)")
    p.add_argument("--format", choices=_io.FRAME_FORMATS, default="obj", help="frame format (default obj)")
    p.add_argument("--every", type=whole_number("--every", 0), default=DEFAULT_EVERY,
                   help=f"frames between resume snapshots (default {DEFAULT_EVERY}; 0: none, resume by replay)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", type=_setting,
                   help="keyword for the game's build_scene, e.g. --set n=16 (repeatable)")
    p.add_argument("--substeps", type=whole_number("--substeps", 1), default=None,
                   help="substeps per frame (default: the game's SUBSTEPS)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    args = p.parse_args(None if argv is None else list(argv))
    try:
        summary = bake(args.game, args.frames, args.out, fmt=args.format, every=args.every,
                       settings=dict(args.set), substeps=args.substeps,
                       progress=None if args.quiet else sys.stderr)
    except ValueError as error:
        print(f"loom bake: {error}", file=sys.stderr)
        return 2
    except OSError as error:                                  # read-only or full disk, a file where a folder goes
        print(f"loom bake: {os_error_line(error)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        out = Path(args.out)
        done = _done_frames(out, args.format, args.frames, _Records(out, out / ".resume" / RECORDS))
        print(f"loom bake: interrupted; re-run the same command to resume from frame {done}", file=sys.stderr)
        return 130
    print(json.dumps(summary), flush=True)
    return 0


# --- private: the game -----------------------------------------------------------------------------------------

def _import_game(game: str) -> Any:
    """The game module (``loom.games.<game>`` for a bare name); raise ValueError if missing or without build_scene."""
    if not isinstance(game, str) or not game:
        raise ValueError(f"bake.game = {game!r}: expected a game name such as hanging_sheet")
    name = game if "." in game else f"loom.games.{game}"
    try:
        module = importlib.import_module(name)                # the user names the game: a lookup by name
    except ModuleNotFoundError as error:
        if error.name is not None and name.startswith(error.name):
            raise ValueError(f"bake.game = {game!r}: no module {name}") from None
        raise
    if not callable(getattr(module, "build_scene", None)):
        raise ValueError(f"bake.game = {game!r}: {name} has no build_scene(app, ...) to bake")
    return module


def _build_app(module: Any, dt: float, substeps: int, settings: dict[str, Any]) -> App:
    """Headless App with the default pipeline and the game's scene (no renderer, no window)."""
    app = App(dt=dt, substeps=substeps)
    try:
        app.add_plugin(DefaultPlugins)
        try:
            module.build_scene(app, **settings)
        except TypeError as error:
            if settings and "argument" in str(error):
                raise ValueError(f"bake --set {', '.join(settings)}: {module.__name__}.build_scene: {error}") from None
            raise
    except BaseException:
        app.close()
        raise
    return app


def _app_arguments(module: Any) -> tuple[float, int]:
    """(dt [s], substeps) the game declares as its module constants ``DT`` and ``SUBSTEPS`` (its main's App uses
    them too); raise ValueError if either is missing or not a positive number."""
    dt, substeps = getattr(module, "DT", None), getattr(module, "SUBSTEPS", None)
    if isinstance(dt, bool) or not isinstance(dt, (int, float)) or not dt > 0 \
            or isinstance(substeps, bool) or not isinstance(substeps, int) or substeps < 1:
        raise ValueError(f"bake.game: {module.__name__} declares DT = {dt!r} and SUBSTEPS = {substeps!r}; a game to "
                         f"bake needs DT > 0 [s] and SUBSTEPS >= 1, the values its main builds its App with")
    return float(dt), substeps


def _gather(app: App, game: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions (n, 3), triangles (t, 3) and rest uv (n, 2) of every cloth with triangles, concatenated."""
    positions, triangles, uv, offset = [], [], [], 0
    for _, cloth in app.query(Cloth):
        if cloth.triangles.shape[0] == 0:                    # ropes: no faces to export
            continue
        positions.append(cloth.x)
        triangles.append(cloth.triangles.astype(np.int64) + offset)
        uv.append(cloth.rest_uv)
        offset += cloth.x.shape[0]
    if not triangles:
        raise ValueError(f"bake.game = {game!r}: the scene has no cloth with triangles to export")
    return np.concatenate(positions), np.concatenate(triangles), np.concatenate(uv)


# --- private: resume -------------------------------------------------------------------------------------------

def _load_latest_snapshot(app: App, resume_dir: Path, done: int, records: _Records) -> int:
    """Load the latest snapshot taken at or before step ``done`` that this bake wrote (its file matches its record)
    and that loads, into app; return its step (0: none).

    A snapshot without a matching record (planted, truncated, rewritten) is skipped unread; one that fails to load
    (from another Loom) is skipped with a warning; load_snapshot leaves the App unchanged then, so the next older
    one, or a replay from the start, takes over."""
    steps = sorted((int(p.stem[5:]), p) for p in resume_dir.glob("step_*.snap") if p.stem[5:].isdigit())
    for step, path in reversed([(s, p) for s, p in steps if s <= done]):
        if not records.matches(path):
            _log.warning("bake: skipping resume snapshot %s: not recorded by this bake, or changed since", path)
            continue
        try:
            load_snapshot(app, path)
        except (ValueError, OSError) as error:                # SnapshotError is a ValueError
            _log.warning("bake: skipping resume snapshot: %s", error)
            continue
        return step
    return 0


def _done_frames(out: Path, fmt: str, frames: int, records: _Records) -> int:
    """Frames 0, 1, ... (at most ``frames``) whose files match their records: where a resume continues."""
    done = 0
    while done < frames and records.matches(_io.frame_path(out, done, fmt)):
        done += 1
    return done


class _Records:
    """The bake's record of finished files: ``DIR/.resume/frames.log``, one line ``name size sha256`` per file.

    A line is appended and flushed to disk after its file was written (atomically, flushed) and is read back only
    if it is whole (ends in a newline, three well-formed fields), so a kill at any moment leaves at worst a file
    without a record, which the resume writes again. The last record of a name wins."""

    def __init__(self, out: Path, path: Path) -> None:
        self.out, self.path = out, path
        self.known: dict[str, tuple[int, str]] = {}
        try:
            text = path.read_bytes().decode("ascii", errors="replace")
        except FileNotFoundError:
            return
        for line in text.split("\n")[:-1]:                  # the piece after the last newline is torn or empty
            fields = line.split(" ")
            if len(fields) == 3 and fields[1].isdigit() and len(fields[2]) == 64 \
                    and all(c in "0123456789abcdef" for c in fields[2]):
                self.known[fields[0]] = (int(fields[1]), fields[2])
        if text and not text.endswith("\n"):                # end a torn line, so the next record starts whole
            self._append("\n")

    def matches(self, path: Path) -> bool:
        """Whether ``path`` exists with the size and SHA-256 recorded for it."""
        expected = self.known.get(self._name(path))
        if expected is None:
            return False
        try:
            if path.stat().st_size != expected[0]:
                return False
            return _sha256(path) == expected[1]
        except OSError:
            return False

    def add(self, path: Path) -> None:
        """Record ``path``'s current size and SHA-256 (after it was written and flushed)."""
        size, digest = path.stat().st_size, _sha256(path)
        self._append(f"{self._name(path)} {size} {digest}\n")
        self.known[self._name(path)] = (size, digest)

    def _name(self, path: Path) -> str:
        return path.relative_to(self.out).as_posix()

    def _append(self, line: str) -> None:
        try:
            with open(self.path, "ab") as handle:
                handle.write(line.encode("ascii"))
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as error:
            raise OSError(error.errno, error.strerror, str(self.path)) from None


def _sha256(path: Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _check_manifest(out: Path, record: dict[str, Any]) -> None:
    """Write out/bake.json, or raise ValueError if it records a different bake (game, settings, dt, ...)."""
    record = json.loads(json.dumps(record, default=repr))    # tuples → lists, as they read back
    path = out / MANIFEST
    if path.is_file():
        try:
            previous = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            previous = None
        if previous != record:
            raise ValueError(f"{out} holds another bake ({path.name}: {json.dumps(previous)}); this one is "
                             f"{json.dumps(record)}: choose another --out or delete that directory")
        return
    if any(out.glob("frame_*.*")):
        raise ValueError(f"{out} holds frames but no {MANIFEST}: choose another --out or delete them")
    write_atomic(path, (json.dumps(record, indent=1) + "\n").encode("utf-8"))


# --- private: command line and progress ------------------------------------------------------------------------

def _setting(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"--set {text!r}: expected KEY=VALUE, e.g. n=16")
    try:
        return key, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return key, value                                     # a bare word: a string (--set model=verlet)


class _Progress:
    """Plain-text progress bar on a stream: ``\\r[####....] 120/600 frames 3.2 ms/frame``, redrawn ≤ 10×/s."""

    WIDTH = 30

    def __init__(self, total: int, stream: TextIO | None) -> None:
        self.total, self.stream, self.last, self.drawn = total, stream, 0.0, False

    def update(self, done: int, *, ms: float | None = None, note: str = "") -> None:
        if self.stream is None:
            return
        now = time.perf_counter()
        if done < self.total and now - self.last < 0.1:
            return
        self.last = now
        filled = self.WIDTH * done // max(self.total, 1)
        rate = f" {ms:.1f} ms/frame" if ms is not None else ""
        self.stream.write(f"\r[{'#' * filled}{'.' * (self.WIDTH - filled)}] {done}/{self.total} frames{rate}"
                          f"{' ' + note if note else ''}   ")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.stream is not None and self.drawn:
            self.stream.write("\n")
            self.stream.flush()


if __name__ == "__main__":
    sys.exit(main())
