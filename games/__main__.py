"""List Loom's demo games, or run one by name.

Run: python -m loom.games                      one line per game: its name and what it shows
     python -m loom.games NAME [options]       the same as python -m loom.games.NAME [options]
     python -m loom.games --kernel-lists       record each game's kernel list (games/kernels/, for a first
                                          launch to compile on two cores: loom.launch.compile_ahead)
     python -m loom.games --precompile         run every game (and every cloth model) headless for ten
                                          frames, with a screenshot, so numba's cache holds their
                                          kernels: the next launch of any of them is warm (about 1.1 s
                                          to the cape's first frame against 25 s cold on a 2-core Xeon
                                          VM, benchmarks/startup.py); scripts/install.sh runs it

A game is any module in games/ with a top-level ``main``; the list reads their source (first line of the
module docstring) without importing them, so listing is quick and has no side effects.
"""
from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

_HERE = Path(__file__).resolve().parent


def find_games() -> dict[str, str]:
    """Return {name: first docstring line} of every module in games/ with a top-level ``main``, by name."""
    found: dict[str, str] = {}
    for path in sorted(_HERE.glob("*.py")):
        if path.stem.startswith("_"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        if any(isinstance(node, ast.FunctionDef) and node.name == "main" for node in tree.body):
            doc = (ast.get_docstring(tree) or "").strip()
            found[path.stem] = doc.splitlines()[0] if doc else ""
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """List the games (no arguments, -l, --list) or run ``NAME`` with the remaining arguments; return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    games = find_games()
    if args and args[0] == "--precompile":
        return precompile(games)
    if args and args[0] == "--kernel-lists":
        return kernel_lists(games)
    if not args or args[0] in ("-l", "--list", "-h", "--help"):
        if args and args[0] in ("-h", "--help"):
            print(__doc__.strip().split("\n\n")[1] + "\n")
        width = max(map(len, games), default=0)
        for name, line in games.items():
            print(f"{name:<{width}}  {line}")
        return 0
    name, rest = args[0], args[1:]
    if name not in games:
        print(f"python -m loom.games: no game {name!r}; the games are {', '.join(games)}", file=sys.stderr)
        return 2
    importlib.import_module(f"loom.games.{name}").main(rest)     # a file error exits 1 in one line (runner)
    return 0


PRECOMPILE_EXTRA = (("hanging_sheet", "--model", "verlet"), ("hanging_sheet", "--model", "mass_spring"),
                    ("hanging_sheet", "--model", "implicit"))
"""Runs besides each game's default one: the other cloth models' kernels."""


PRECOMPILE_FRAMES = 10
"""Frames each precompile run takes: contacts begin in the first few, and their kernels compile then."""


def precompile(games: dict[str, str]) -> int:
    """Run each game headless for ``PRECOMPILE_FRAMES`` frames in its own process, saving a screenshot (so the
    renderer's kernels compile too) into a temporary folder, filling numba's on-disk cache, then compile what
    each game's kernel list holds beyond that (``loom.launch.compile_ahead``: a first launch then starts no
    worker); print one line per run with its seconds; return 1 if any run failed."""
    failed = 0
    env = {**os.environ, "LOOM_COLD_PYTHON": "0", "LOOM_COMPILE_AHEAD": "0"}   # set-up kernels compiled too
    for name, *options in [(name,) for name in games] + list(PRECOMPILE_EXTRA):
        start = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="loom-precompile-") as folder:
            out = subprocess.run([sys.executable, "-m", f"loom.games.{name}", *options, "--headless", "--frames",
                                  str(PRECOMPILE_FRAMES), "--screenshot", str(Path(folder) / "frame.png"),
                                  "--report", "json"], capture_output=True, text=True, env=env)
        status = "ok" if out.returncode == 0 else f"failed: {out.stderr.strip().splitlines()[-1:]}"
        failed += out.returncode != 0
        print(f"{' '.join([name, *options]):<34} {time.perf_counter() - start:6.1f} s  {status}", flush=True)
    from loom.launch import compile_ahead
    for name in games:                      # what the kernel lists hold beyond ten frames (later contacts)
        if kernel_list(name).exists():
            start = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", compile_ahead.COMMAND, "work", str(kernel_list(name))],
                                 capture_output=True, text=True, env=env)
            status = "ok" if out.returncode == 0 else f"failed: {out.stderr.strip().splitlines()[-1:]}"
            failed += out.returncode != 0
            print(f"{name + ' kernel list':<34} {time.perf_counter() - start:6.1f} s  {status}", flush=True)
    return 1 if failed else 0


def kernel_list(game: str) -> Path:
    """``games/kernels/<game>.pickle``: the kernel list of ``game`` (each game's ``KERNELS``)."""
    return _HERE / "kernels" / f"{game}.pickle"


def kernel_lists(games: dict[str, str]) -> int:
    """Record the kernel list of every game that passes one to ``run_app`` into games/kernels/
    (``loom.launch.compile_ahead.record``: two cold runs each, about a minute and a half a game); print one line
    per game; return 1 if any failed."""
    from loom.launch import compile_ahead
    failed = 0
    for name in [g for g in games if "KERNELS = " in (_HERE / f"{g}.py").read_text(encoding="utf-8")]:
        start = time.perf_counter()
        try:
            counts = compile_ahead.record(f"loom.games.{name}", kernel_list(name))
            status = f"{counts['first']} first-frame and {counts['later']} later kernels"
        except subprocess.CalledProcessError as exc:
            failed += 1
            status = f"failed: {exc.stderr.decode(errors='replace').strip().splitlines()[-1:]}"
        print(f"{name:<16} {time.perf_counter() - start:6.1f} s  {status}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
