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

Interruption and resume. Each frame is written atomically (temporary file + ``os.replace``), so a crash or Ctrl-C
never leaves a half-written frame. Re-running the same command continues after the last complete frame: frames
0..m-1 that exist are kept, never rewritten. The state to continue from is rebuilt one of two ways:

- snapshot (``loom.files.snapshot``): every K frames (``--every K``, default 50; 0 turns it off) the world is saved
  to ``DIR/.resume/step_000050.snap``; a resume loads the latest snapshot at or before frame m and re-simulates the
  few frames after it (a snapshot that fails to load is skipped; a scene that cannot be saved falls back to replay;
  see loom.files.snapshot for what it captures — pymunk's contact cache is not, so a rigid-body game such as cape
  continues close to, not bit-identical with, the uninterrupted run; use --every 0 there);
- replay (``--every 0``, or no snapshot at or before frame m): the scene is rebuilt and re-simulated from the start
  up to frame m without writing. Loom's stepping is bit-identical run to run (same inputs, same thread count), so
  the continued frames equal those of an uninterrupted bake, bit for bit.

``DIR/bake.json`` records the game, settings, dt, substeps and format; resuming into a directory baked with other
ones is refused rather than mixing two animations.
"""
from __future__ import annotations

import argparse
import ast
import importlib
import json
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from loom.components import Cloth
from loom.engine import App
from loom.files import meshes as _io
from loom.files.snapshot import load_snapshot, save_snapshot
from loom.systems import DefaultPlugins

__all__ = ["bake", "main", "DEFAULT_EVERY", "MANIFEST"]

DEFAULT_EVERY = 50
"""Frames between resume snapshots (0: none, resume by replay)."""
MANIFEST = "bake.json"
"""Name of the file in the output directory that records what was baked."""
_log = logging.getLogger("loom")


def bake(game: str, frames: int, out: str | Path, *, fmt: str = "obj", every: int = DEFAULT_EVERY,
         settings: dict[str, Any] | None = None, substeps: int | None = None,
         progress: TextIO | None = sys.stderr) -> dict[str, Any]:
    """Bake ``frames`` frames of ``game`` into ``out`` (resuming a previous bake there) and return a summary.

    The summary holds game, frames, written (frames written by this call), resumed_from (first frame this call
    computed), resume ("snapshot", "replay" or "none"), dt, substeps and ms_per_frame. progress=None is silent.
    Raises ValueError for a bad option, a game without build_scene, DT or SUBSTEPS, or an output directory holding
    another bake.
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

    done = min(_io.complete_frames(out, fmt), frames)
    app = _build_app(module, dt, substeps, settings)
    bar = _Progress(frames, progress)
    summary = {"game": game, "frames": frames, "written": 0, "resumed_from": done, "resume": "none",
               "dt": dt, "substeps": substeps, "ms_per_frame": 0.0}
    try:
        start_step = 0
        if done and snapshots:
            start_step = _load_latest_snapshot(app, resume_dir, done)
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
            if not _io.frame_path(out, k, fmt).is_file():     # skip frames a previous run completed
                positions, triangles, uv = _gather(app, game)
                _io.save_frame(out, k, positions, triangles, fmt=fmt, uv=uv)
                summary["written"] += 1
            if snapshots and (k + 1) % every == 0:
                resume_dir.mkdir(exist_ok=True)
                try:
                    save_snapshot(app, resume_dir / f"step_{k + 1:06d}.snap")
                except ValueError as error:                   # a scene that cannot be saved: resume by replay
                    _log.warning("bake: no more resume snapshots (%s); a resume will replay from the start",
                                 error)
                    snapshots = False
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
    p.add_argument("--frames", type=_count("--frames", 0), default=300, help="frames to bake (default 300)")
    p.add_argument("--out", required=True, help="output directory (created if needed)")
    p.add_argument("--format", choices=_io.FRAME_FORMATS, default="obj", help="frame format (default obj)")
    p.add_argument("--every", type=_count("--every", 0), default=DEFAULT_EVERY,
                   help=f"frames between resume snapshots (default {DEFAULT_EVERY}; 0: none, resume by replay)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", type=_setting,
                   help="keyword for the game's build_scene, e.g. --set n=16 (repeatable)")
    p.add_argument("--substeps", type=_count("--substeps", 1), default=None,
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
    except KeyboardInterrupt:
        print(f"loom bake: interrupted; re-run the same command to resume from frame "
              f"{_io.complete_frames(args.out, args.format)}", file=sys.stderr)
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

def _load_latest_snapshot(app: App, resume_dir: Path, done: int) -> int:
    """Load the latest readable snapshot taken at or before step ``done`` into app; return its step (0: none).

    A snapshot that fails to load (corrupt, truncated, from another Loom) is skipped with a warning; load_snapshot
    leaves the App unchanged then, so the next older one, or a replay from the start, takes over."""
    steps = sorted((int(p.stem[5:]), p) for p in resume_dir.glob("step_*.snap") if p.stem[5:].isdigit())
    for step, path in reversed([(s, p) for s, p in steps if s <= done]):
        try:
            load_snapshot(app, path)
        except ValueError as error:                           # SnapshotError is a ValueError
            _log.warning("bake: skipping resume snapshot: %s", error)
            continue
        return step
    return 0


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
    _io._write_atomic(path, (json.dumps(record, indent=1) + "\n").encode("utf-8"))


# --- private: command line and progress ------------------------------------------------------------------------

def _count(option: str, minimum: int) -> Any:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{option} = {text!r}: must be a whole number >= {minimum}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{option} = {value}: must be >= {minimum}")
        return value
    return parse


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
