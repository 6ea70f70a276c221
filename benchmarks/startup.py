"""Start-up benchmark: seconds from launching a game to its first simulated (and drawn) frame.

Each run is a fresh process, ``python -m loom.games.<game> --frames 1 --report json``, timed from launch to
exit, with SDL's offscreen video driver (an OpenGL window with no display; ``--headless`` skips the
window). "cold" points numba at an empty cache directory, so every kernel the first frame needs
compiles, as on a fresh machine; "warm" runs again on that cache (every later run). One JSON line
per run: game, cache, seconds, first_output_s (launch to the first line on stderr: a cold launch's compile
progress, ``loom.engine.show_compile_progress``; null when it printed none), first_frame_ms (the mean step:
one step, where cold compiles), video_driver.

Run: python -m loom.benchmarks startup [--game cape] [--runs cold warm] [--headless]
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


def run(game: str, cache_dir: str | None, *, headless: bool) -> dict:
    """Launch the game once with numba's cache in ``cache_dir`` (None: where it is); return the timing record."""
    env = {**os.environ, "SDL_VIDEODRIVER": "offscreen", "SDL_AUDIODRIVER": "dummy"}
    if cache_dir:
        env["NUMBA_CACHE_DIR"] = cache_dir
    command = [sys.executable, "-m", f"games.{game}", "--frames", "1", "--report", "json"]
    if headless:
        command.append("--headless")
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
    return {"game": game, "seconds": round(seconds, 3),
            "first_output_s": None if first_output is None else round(first_output, 3),
            "first_frame_ms": report.get("sim_ms_per_frame"),
            "video_driver": report.get("video_driver", "none")}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m loom.benchmarks startup", description=__doc__.splitlines()[0])
    p.add_argument("--game", choices=GAMES, default="cape")
    p.add_argument("--runs", nargs="+", choices=("cold", "warm"), default=["cold", "warm"],
                   help="cold: an empty numba cache; warm: the cache as it is (after cold: the one cold filled)")
    p.add_argument("--headless", action="store_true", help="no window, the simulation only")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="loom-numba-") as empty:
        for cache in args.runs:
            directory = empty if cache == "cold" or "cold" in args.runs else None
            record = run(args.game, directory, headless=args.headless)
            print(json.dumps({**record, "cache": cache}), flush=True)
