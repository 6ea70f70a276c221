"""Command line of every Loom game: ``--headless --frames N --report json|text --threads N``.

Headless, the App steps N fixed frames and prints its report — one JSON line with ``--report
json`` — so tests, CI and baking use the same entry point as players. With no ``--headless``, a
window plugin that inserted a ``WindowRunner`` resource opens the window; with none, the run
stays headless and says so.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any


HEADLESS_FRAMES = 300
"""Frames a headless run simulates when --frames is not given (5 s at 60 Hz)."""


@dataclass
class WindowRunner:
    """Resource a window plugin inserts: ``open(app, args)`` runs the interactive loop and returns the report."""

    open: Callable[[Any, argparse.Namespace], dict[str, Any]]


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


_frames = whole_number("--frames", 0)
_threads = whole_number("--threads", 1)


OUTPUT_OPTIONS = ("screenshot", "record", "out")
"""Options naming a file a run writes; ``run_app`` checks each given one before the run (``check_output``)."""


def check_output(option: str, path: str | None) -> None:
    """Exit at once with one line (``loom: --option PATH: why``, status 1) when ``path`` cannot be written: its
    folder is missing or not a folder, it is a folder itself, or the folder is not writable. None passes."""
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
    else:
        return
    raise SystemExit(f"loom: --{option} {path}: {why}")


def check_outputs(args: argparse.Namespace) -> None:
    """``check_output`` for every option of ``OUTPUT_OPTIONS`` that ``args`` has."""
    for option in OUTPUT_OPTIONS:
        check_output(option, getattr(args, option, None))


def run_app(app: Any, argv: Iterable[str] | None = None, *,
            arg_parser: argparse.ArgumentParser | None = None) -> dict[str, Any]:
    """Parse ``argv`` (default: sys.argv[1:]), run ``app`` headless or windowed, print and return the report."""
    p = arg_parser or parser()
    args = p.parse_args(None if argv is None else list(argv))
    check_outputs(args)                                    # a bad path is one line now, not after the run
    if getattr(args, "threads", None) is not None:
        try:
            app.set_threads(args.threads)
        except ValueError as exc:                          # more than the machine's cores
            p.error(str(exc).replace("App.threads =", "--threads"))
    try:
        report = _run(app, args)
    except OSError as exc:                                 # a file the run writes (a screenshot): one line, exit 1
        path = f"{exc.filename}: " if exc.filename is not None else ""
        raise SystemExit(f"loom: {path}{exc.strerror or exc}") from None
    print_report(report, args.report)
    return report


def _run(app: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Run ``app`` as ``args`` say (window or headless, frames, screenshot) and return its report."""
    window = app.resources.get(WindowRunner)
    if not args.headless and window is not None:
        report = window.open(app, args)
    else:
        if not args.headless:
            print("loom: no window plugin added; running headless", file=sys.stderr)
        screenshot = getattr(args, "screenshot", None)
        if screenshot:
            from loom.engine.window import FrameCapture
            capture = app.resources.get(FrameCapture)
            if capture is None:
                raise SystemExit("loom: --screenshot needs a renderer plugin that can save a frame: add "
                                 "loom.GLRenderPlugin() or loom.SoftRenderPlugin(surface) to the game")
        app.step(HEADLESS_FRAMES if args.frames is None else args.frames)
        report = app.report()
        if screenshot:
            capture.save(app, screenshot)
    return report


def print_report(report: dict[str, Any], fmt: str = "text") -> None:
    """Print ``report`` as one JSON line (``json``) or aligned ``key: value`` lines (``text``)."""
    if fmt == "json":
        print(json.dumps(report, sort_keys=False), flush=True)
    else:
        width = max((len(k) for k in report), default=0)
        for key, value in report.items():
            print(f"{key:<{width}}  {value}")
