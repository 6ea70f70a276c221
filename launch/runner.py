"""Command line of every Loom game: ``--headless --frames N --report json|text --threads N``.

Headless, the App steps N fixed frames and prints its report — one JSON line with ``--report
json`` — so tests, CI and baking use the same entry point as players. With no ``--headless``, a
window plugin that inserted a ``WindowRunner`` resource opens the window; with none, the run
stays headless and says so.

Output files: ``--screenshot out.png`` saves the last frame; ``--record out.gif`` (or ``.mp4``; both need the
record extra, ``pip install "loom-cloth[record]"``) records the run as it goes, a frame from the game's own
renderer every few steps (``--record-fps``, default 20: every 3rd step of a 60 Hz game; ``--record-scale 0.5``
halves the size). Every output path is checked before the first step (``check_output``): a bad one is one line
and exit status 1.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from loom.launch.compile_progress import compiles as compiled_so_far
from loom.launch.compile_progress import show_compile_progress
from loom.launch.record import DEFAULT_FPS, MAX_FPS, Recorder, record_problem
from loom.launch.step_boundary import install


HEADLESS_FRAMES = 300
"""Frames a headless run simulates when --frames is not given (5 s at 60 Hz)."""


@dataclass
class WindowRunner:
    """Resource a window plugin inserts: ``open(app, args, build)`` opens the window, calls ``build(app)`` (when not
    None) while it shows a loading view, runs the interactive loop and returns the report."""

    open: Callable[[Any, argparse.Namespace, Callable[[Any], Any] | None], dict[str, Any]]


def parser(prog: str | None = None) -> argparse.ArgumentParser:
    """Return the argument parser every game shares (games may add their own options to it)."""
    p = argparse.ArgumentParser(prog=prog, description="Run a Loom scene.")
    p.add_argument("--headless", action="store_true", help="no window: step --frames frames and report")
    p.add_argument("--frames", type=_frames, default=None,
                   help="fixed frames to simulate (headless default 300; in a window: run until closed)")
    p.add_argument("--report", choices=("json", "text"), default="text", help="report format (default text)")
    p.add_argument("--threads", type=_threads, default=None, metavar="N",
                   help="threads for Loom's parallel kernels, 1 … cores (default: measured as it runs, "
                   "App(threads=\"auto\"); results do not depend on it)")
    p.add_argument("--screenshot", metavar="PATH", help="save the last frame as a PNG (headless: drawn once after "
                   "stepping by the game's renderer plugin: GLRenderPlugin offscreen via EGL, or SoftRenderPlugin)")
    p.add_argument("--record", metavar="PATH", help="record the run as an animated GIF (PATH.gif) or an MP4 (PATH.mp4): "
                   "frames from the game's renderer, written as the run goes (needs pip install "
                   "\"loom-cloth[record]\")")
    p.add_argument("--record-fps", type=_record_fps, default=DEFAULT_FPS, metavar="FPS",
                   help=f"frames a second of --record, in (0, {MAX_FPS:g}] (default {DEFAULT_FPS:g}); rounded to a whole "
                   "number of fixed steps: a 60 Hz game records at 30, 20, 15, 12, 10 … fps")
    p.add_argument("--record-scale", type=_record_scale, default=1.0, metavar="S",
                   help="size factor of --record's frames, in (0, 1] (default 1; 0.5: half width and height, "
                   "box-filtered)")
    return p


def whole_number(option: str, minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number >= ``minimum``, else an error naming ``option`` and the text."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{option} = {text!r}: must be a whole number >= {minimum}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{option} = {value}: must be >= {minimum}")
        return value
    return parse


def number_in(option: str, low: float, high: float, what: str) -> Callable[[str], float]:
    """An argparse type: a number in (``low``, ``high``], else an error naming ``option`` and the text (``what``
    says what the number is)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{option} = {text!r}: must be a number in ({low:g}, {high:g}] "
                                             f"({what})") from None
        if not low < value <= high:                       # NaN fails too
            raise argparse.ArgumentTypeError(f"{option} = {text}: must be in ({low:g}, {high:g}] ({what})")
        return value
    return parse


_frames = whole_number("--frames", 0)
_threads = whole_number("--threads", 1)
_record_fps = number_in("--record-fps", 0.0, MAX_FPS, "frames per second; GIF delays are whole centiseconds and "
                        "browsers slow delays under 2 cs")
_record_scale = number_in("--record-scale", 0.0, 1.0, "a size factor: 0.5 is half the width and height")


OUTPUT_OPTIONS = ("screenshot", "record", "out")
"""Options naming a file a run writes; ``run_app`` checks each given one before the run (``check_output``)."""


def check_output(option: str, path: str | None) -> None:
    """Exit at once with one line (``loom: --option PATH: why``, status 1) when ``path`` cannot be written: its
    folder is missing or not a folder, it is a folder itself, or the folder is not writable; for ``record``,
    also an extension other than .gif and .mp4, or the record extra not installed (``record_problem``). None
    passes."""
    if path is None:
        return
    target = os.path.abspath(os.fspath(path))
    folder = os.path.dirname(target)
    if os.path.isdir(target):
        why = "is a folder, expected a file name"
    elif not os.path.exists(folder):
        why = f"no such folder {folder}"
    elif not os.path.isdir(folder):
        why = f"{folder} is not a folder"
    elif not os.access(folder, os.W_OK):
        why = f"cannot write in {folder}"
    elif option == "record" and (problem := record_problem(target)) is not None:
        why = problem
    else:
        return
    raise SystemExit(f"loom: --{option} {path}: {why}")


def check_outputs(args: argparse.Namespace) -> None:
    """``check_output`` for every option of ``OUTPUT_OPTIONS`` that ``args`` has."""
    for option in OUTPUT_OPTIONS:
        check_output(option, getattr(args, option, None))


def run_app(app: Any, argv: Iterable[str] | None = None, *,
            arg_parser: argparse.ArgumentParser | None = None,
            build: Callable[[Any], Any] | None = None, compiles: int | None = None,
            kernels: str | os.PathLike | None = None) -> dict[str, Any]:
    """Parse ``argv`` (default: sys.argv[1:]), run ``app`` headless or windowed, print and return the report.

    ``build(app)``, when given, spawns the game's scene after the command line was checked and, in a window,
    after the window opened: a first launch compiles numba kernels while the scene is built, and the window
    shows a loading view meanwhile instead of appearing only once everything is compiled. ``compiles``: how
    many functions a first launch compiles before its first frame (the report's ``compiles`` of a cold run,
    ``python -m loom.benchmarks startup --runs cold``), so its progress says how far along it is. The report
    adds ``compiles``: the functions numba compiled in this process (0 on a warm launch). ``kernels``: the game's
    kernel list, for a first launch to compile on two cores (``loom.launch.compile_ahead``; None: one)."""
    p = arg_parser or parser()
    args = p.parse_args(None if argv is None else list(argv))
    check_outputs(args)                                    # a bad path is one line now, not after the run
    progress = show_compile_progress()
    progress.expect(compiles)
    if kernels is not None:                                # before the build: a first launch's other core
        from loom.launch import compile_ahead
        if compile_ahead.start(kernels) is not None:       # a first launch: say so now, and count both cores
            progress.elsewhere = compile_ahead.first_frame_ready
            progress.begin()
    install(app)                                           # threads "auto", later kernels, twins rebound
    if getattr(args, "threads", None) is not None:
        try:
            app.set_threads(args.threads)
        except ValueError as exc:                          # more than the machine's cores
            p.error(str(exc).replace("App.threads =", "--threads"))
    try:
        report = _run(app, args, build)
    except OSError as exc:                                 # a file the run writes (a screenshot): one line, exit 1
        path = f"{exc.filename}: " if exc.filename is not None else ""
        raise SystemExit(f"loom: {path}{exc.strerror or exc}") from None
    report["compiles"] = compiled_so_far()
    print_report(report, args.report)
    return report


def _run(app: Any, args: argparse.Namespace, build: Callable[[Any], Any] | None = None) -> dict[str, Any]:
    """Run ``app`` as ``args`` say (window or headless, frames, screenshot, recording), building its scene with
    ``build`` first when given, and return its report."""
    window = app.resources.get(WindowRunner)
    if not args.headless and window is not None:
        return window.open(app, args, build)
    if not args.headless:
        print("loom: no window plugin added; running headless", file=sys.stderr)
    return run_headless(app, args, build)


def frame_capture(app: Any, args: argparse.Namespace) -> Any:
    """The App's ``FrameCapture`` when ``--screenshot`` or ``--record`` needs one (None when neither is given);
    exits with one line when they are given and the game has no renderer that can capture a frame."""
    from loom.engine.window import FrameCapture
    wanted = [f"--{option}" for option in ("screenshot", "record") if getattr(args, option, None)]
    capture = app.resources.get(FrameCapture)
    if wanted and capture is None:
        raise SystemExit(f"loom: {' and '.join(wanted)} needs a renderer plugin that can capture a frame: add "
                         "loom.GLRenderPlugin() or loom.SoftRenderPlugin(surface) to the game")
    return capture if wanted else None


def open_recorder(args: argparse.Namespace, dt: float) -> Recorder | None:
    """The ``Recorder`` that ``--record`` asks for (None without it): ``--record-fps`` rounded to whole steps of
    ``dt`` [s], ``--record-scale``. Games with their own loop call ``recorder.record(time, grab)`` each frame."""
    path = getattr(args, "record", None)
    if not path:
        return None
    return Recorder(path, getattr(args, "record_fps", DEFAULT_FPS), getattr(args, "record_scale", 1.0), dt=dt)


def run_headless(app: Any, args: argparse.Namespace, build: Callable[[Any], Any] | None = None) -> dict[str, Any]:
    """Build the scene with ``build(app)`` when given, step ``--frames`` fixed frames (default HEADLESS_FRAMES)
    with no window and return the report: with ``--record``, a frame grabbed every ``steps_per_frame`` steps
    and written at once; with ``--screenshot``, the last state drawn once and saved. The window loop falls back
    to it when no window can open."""
    capture = frame_capture(app, args)
    if build is not None:
        build(app)
    frames = HEADLESS_FRAMES if args.frames is None else args.frames
    recorder = open_recorder(args, app.clock.dt)
    if recorder is None:
        app.step(frames)
    else:
        with recorder:                                           # closed (a playable file) even on an error
            done = 0
            while done + recorder.steps <= frames:              # frame k shows the state after k × steps steps
                app.step(recorder.steps)
                done += recorder.steps
                recorder.add(capture.grab(app))
            app.step(frames - done)
            if recorder.frames == 0:                            # a run shorter than one period: its last state
                recorder.add(capture.grab(app))
        print(recorder.summary(), file=sys.stderr)
    report = app.report()
    if getattr(args, "screenshot", None):
        capture.save(app, args.screenshot)
    return report


def print_report(report: dict[str, Any], fmt: str = "text") -> None:
    """Print ``report`` as one JSON line (``json``) or aligned ``key: value`` lines (``text``)."""
    if fmt == "json":
        print(json.dumps(report, sort_keys=False), flush=True)
    else:
        width = max((len(k) for k in report), default=0)
        for key, value in report.items():
            print(f"{key:<{width}}  {value}")
