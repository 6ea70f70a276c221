"""Start-up benchmark: seconds from launching a game to its first simulated (and drawn) frame.

Each run is a fresh process, ``python -m loom.games.<game> --frames 1 --report json``, timed from launch to
exit, with SDL's offscreen video driver (an OpenGL window with no display; ``--headless`` skips the
window). "cold" points numba at an empty cache directory, so every kernel the first frame needs
compiles, as on a fresh machine; "warm" runs again on that cache (every later run). One JSON line
per run: game, cache, seconds (launch to exit), first_frame_s (launch to the first frame shown in the window;
null headless), first_output_s (launch to the first line on stderr: a cold launch's compile progress,
``loom.launch.show_compile_progress``; null when it printed none), first_frame_ms (the mean step: one step, where
cold compiles), compiles (functions numba compiled: a game's ``FIRST_LAUNCH_COMPILES`` is this, cold),
video_driver.

``--kernels N`` instead launches the game once on an empty cache, in an offscreen window (``--headless``: none,
so no renderer kernels) for ``--frames`` steps (default 60, so contact kernels compile too) and prints the N numba functions that took longest to compile, one JSON line
each: kernel (qualified name and module), seconds (its own compile, the functions it called left out),
compiles (signatures), then a total line (one process: no compile-ahead worker).

Every run may write and read Python's bytecode cache (``__pycache__``) even when ``PYTHONDONTWRITEBYTECODE`` is
set where the benchmark runs: a player's later launch reads its .pyc files (pip writes them at install), and
compiling Loom's sources again costs a launch about 0.13 s that no player pays twice.

``--busy`` keeps one core busy (a second Python process spinning) during the runs, as a game's machine is.
A cold launch compiles on two cores when the game has a kernel list (``loom.launch.compile_ahead``);
``--one-core`` turns that off (``LOOM_COMPILE_AHEAD=0``) for a before/after in one run.

Run: python -m loom.benchmarks startup [--game cape] [--runs cold warm] [--headless] [--busy] [--one-core]
                                       [--kernels 20 [--frames 60]]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GAMES = ("cape", "flag", "drape", "sandbox", "hanging_sheet")


def run(game: str, cache_dir: str | None, *, headless: bool, one_core: bool = False) -> dict:
    """Launch the game once with numba's cache in ``cache_dir`` (None: where it is); return the timing record.
    ``one_core``: no compile-ahead worker."""
    env = {**os.environ, "SDL_VIDEODRIVER": "offscreen", "SDL_AUDIODRIVER": "dummy"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)               # a player's Python keeps its .pyc files (see above)
    if one_core:
        env["LOOM_COMPILE_AHEAD"] = "0"
    if cache_dir:
        env["NUMBA_CACHE_DIR"] = cache_dir
    command = [sys.executable, "-m", f"games.{game}", "--frames", "1", "--report", "json"]
    if headless:
        command.append("--headless")
    launched = time.time()
    start = time.perf_counter()
    first_output = None
    errors = []
    with subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as process:
        for line in process.stderr:                     # stdout is one JSON line: it cannot fill its pipe
            if first_output is None:
                first_output = time.perf_counter() - start
            errors.append(line)
        stdout = process.stdout.read()
        code = process.wait(timeout=600)
    seconds = time.perf_counter() - start
    if code != 0:
        raise SystemExit(f"startup: {' '.join(command)} failed:\n{''.join(errors)[-2000:]}")
    report = json.loads(stdout.strip().splitlines()[-1])
    shown = report.get("first_frame_shown_unix")
    return {"game": game, "seconds": round(seconds, 3),
            "first_frame_s": None if shown is None else round(shown - launched, 3),
            "first_output_s": None if first_output is None else round(first_output, 3),
            "first_frame_ms": report.get("sim_ms_per_frame"), "compiles": report.get("compiles"),
            "video_driver": report.get("video_driver", "none")}


_KERNEL_TIMES = """
import json, runpy, sys, time
from numba.core import event

own, count, stack = {}, {}, []


class Timer(event.Listener):                       # numba's compile events nest: a callee compiles inside its caller
    def on_start(self, ev):
        f = ev.data["dispatcher"].py_func
        stack.append([f"{f.__qualname__} ({f.__module__})", time.perf_counter(), 0.0])

    def on_end(self, ev):
        name, start, children = stack.pop()
        took = time.perf_counter() - start
        own[name] = own.get(name, 0.0) + took - children
        count[name] = count.get(name, 0) + 1
        if stack:
            stack[-1][2] += took


event.register("numba:compile", Timer())
start = time.perf_counter()
sys.argv = [sys.argv[1], *(["--headless"] if sys.argv[3] == "headless" else []), "--frames", sys.argv[2],
            "--report", "json"]
try:
    runpy.run_module("loom.games." + sys.argv[0], run_name="__main__")
except SystemExit:
    pass
print(json.dumps({"total_s": time.perf_counter() - start, "kernels": [[k, v, count[k]] for k, v in own.items()]}))
"""


def kernel_times(game: str, frames: int, top: int, *, headless: bool = True) -> list[dict]:
    """Compile time of each numba function a cold launch of ``game`` compiles in ``frames`` steps (an empty cache;
    headless, or in an offscreen window, so the renderer's kernels compile too): the ``top`` longest, then a
    total record (functions, their compile events, seconds)."""
    with tempfile.TemporaryDirectory(prefix="loom-numba-") as empty:
        env = {**os.environ, "SDL_VIDEODRIVER": "offscreen", "SDL_AUDIODRIVER": "dummy", "NUMBA_CACHE_DIR": empty,
               "LOOM_COMPILE_AHEAD": "0"}                 # every kernel compiled here, where it is timed
        run_ = subprocess.run([sys.executable, "-c", _KERNEL_TIMES, game, str(frames),
                               "headless" if headless else "window"], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=900)
    if run_.returncode != 0:
        raise SystemExit(f"startup --kernels: the {game} run failed:\n{run_.stderr[-2000:]}")
    data = json.loads(run_.stdout.strip().splitlines()[-1])
    kernels = sorted(data["kernels"], key=lambda row: -row[1])
    records = [{"game": game, "kernel": name, "seconds": round(seconds, 3), "compiles": n}
               for name, seconds, n in kernels[:top]]
    records.append({"game": game, "kernel": "(all)", "functions": len(kernels),
                    "compiles": sum(row[2] for row in kernels),
                    "seconds": round(sum(row[1] for row in kernels), 3), "run_s": round(data["total_s"], 3)})
    return records


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m loom.benchmarks startup", description=__doc__.splitlines()[0])
    p.add_argument("--game", choices=GAMES, default="cape")
    p.add_argument("--runs", nargs="+", choices=("cold", "warm"), default=["cold", "warm"],
                   help="cold: an empty numba cache; warm: the cache as it is (after cold: the one cold filled)")
    p.add_argument("--headless", action="store_true", help="no window, the simulation only")
    p.add_argument("--kernels", type=int, metavar="N", default=None,
                   help="instead: the N numba functions a cold launch spends longest compiling (own time)")
    p.add_argument("--frames", type=int, default=60, help="steps of the --kernels run (default 60)")
    p.add_argument("--busy", action="store_true", help="keep one core busy during the runs")
    p.add_argument("--one-core", action="store_true", help="no compile-ahead worker (LOOM_COMPILE_AHEAD=0)")
    args = p.parse_args(argv)
    if args.kernels is not None:
        if args.kernels < 1 or args.frames < 1:
            p.error(f"--kernels = {args.kernels}, --frames = {args.frames}: both must be >= 1")
        for record in kernel_times(args.game, args.frames, args.kernels, headless=args.headless):
            print(json.dumps(record), flush=True)
        return
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.busy else None
    try:
        with tempfile.TemporaryDirectory(prefix="loom-numba-") as empty:
            for cache in args.runs:
                directory = empty if cache == "cold" or "cold" in args.runs else None
                record = run(args.game, directory, headless=args.headless, one_core=args.one_core)
                print(json.dumps({**record, "cache": cache, "busy": args.busy,
                                  "compile_ahead": not args.one_core}), flush=True)
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
