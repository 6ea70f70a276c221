"""Regenerate the moving pictures in docs/media/ with every game's own ``--record`` (headless, EGL).

Run from anywhere: ``python docs/gen_gallery.py [--only NAME ...]``. Each loop is one headless run of a game,
recorded from its first step by the game's own renderer (offscreen GL; the platformer's own pygame Surface):

    python -m loom.games.GAME [options] --headless --frames N --record docs/media/NAME.gif \\
        --record-fps FPS --record-scale SCALE

3–5 s of simulated time each, about 480 px wide, and at most ``BUDGET_BYTES`` (2.0 MB) a file: a loop over
budget stops the script with a line saying which (lower its fps, scale or seconds in ``LOOPS``). docs/gallery.md
shows them, the README opens with the cape; tests/test_record.py checks that each one named there exists,
loads, moves (more than 10 frames) and is within budget. Takes about 70 s on a 2-core VM (numba's cache
warm). SDL_VIDEODRIVER defaults to ``offscreen`` here.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MEDIA = ROOT / "docs" / "media"
BUDGET_BYTES = 2_000_000
"""Largest a loop may be [bytes] (2.0 MB): the README and the gallery load them all."""


@dataclass(frozen=True)
class Loop:
    """One loop of the gallery: which game, with which options, for how long, how large."""

    game: str
    """Module of loom.games."""
    seconds: float
    """Simulated time recorded [s] (the game's steps are 1/60 s)."""
    options: tuple[str, ...] = ()
    """The game's own options."""
    fps: float = 20.0
    """Frames a second of the loop [1/s]."""
    scale: float = 0.5
    """Size factor of the game's frames (0.5: a 960 px game is 480 px wide)."""

    def command(self, out: Path) -> list[str]:
        """The command line that records this loop into ``out``."""
        frames = round(self.seconds * 60)
        return [sys.executable, "-m", f"loom.games.{self.game}", *self.options, "--headless", "--frames", str(frames),
                "--record", str(out), "--record-fps", f"{self.fps:g}", "--record-scale", f"{self.scale:g}",
                "--report", "json"]


LOOPS = {
    "cape": Loop("cape", 5.0),                                   # run right, jump onto both platforms, into the wind
    "flag": Loop("flag", 4.0, ("--sail",)),                      # the flag streaming, the sail bellying
    "drape": Loop("drape", 4.0),                                 # the tablecloth falls over the table and the ball
    "hanging_sheet": Loop("hanging_sheet", 3.0),                 # a sheet held by two corners falls and swings
    "sandbox": Loop("sandbox", 5.0),                             # the scripted player drags, tears, blows, switches
    "platformer": Loop("platformer", 5.0),                       # the pygame platformer: cape, flag, banner
}
"""Name (docs/media/NAME.gif) → its loop."""


def record(name: str) -> tuple[int, float]:
    """Record ``LOOPS[name]`` into docs/media/NAME.gif; return (its size [bytes], the seconds it took).

    Raises SystemExit with one line when the game fails or the file is over budget."""
    loop = LOOPS[name]
    out = MEDIA / f"{name}.gif"
    start = time.perf_counter()
    run = subprocess.run(loop.command(out), cwd=ROOT, capture_output=True, text=True)
    took = time.perf_counter() - start
    if run.returncode != 0:
        raise SystemExit(f"gen_gallery: {name}: {' '.join(loop.command(out)[1:])} failed:\n{run.stderr[-2000:]}")
    size = out.stat().st_size
    if size > BUDGET_BYTES:
        raise SystemExit(f"gen_gallery: {out.relative_to(ROOT)} is {size / 1e6:.2f} MB, over the "
                         f"{BUDGET_BYTES / 1e6:.1f} MB budget: lower its fps, scale or seconds in LOOPS")
    return size, took


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python docs/gen_gallery.py", description=__doc__.splitlines()[0])
    p.add_argument("--only", nargs="+", choices=sorted(LOOPS), metavar="NAME",
                   help=f"regenerate only these loops ({', '.join(LOOPS)})")
    args = p.parse_args(argv)
    os.environ.setdefault("SDL_VIDEODRIVER", "offscreen")
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    MEDIA.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    for name in args.only or LOOPS:
        size, took = record(name)
        print(f"{name:<14} {size / 1e6:5.2f} MB  {took:5.1f} s  docs/media/{name}.gif", flush=True)
    print(f"done in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
