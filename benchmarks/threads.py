"""Threads benchmark: one thread, every core and "auto" (the default) side by side, idle or loaded.

For each scene, three Apps of it (``threads=1``, ``threads=cores``, ``threads="auto"``) are built in one
process and stepped in turn in blocks of ``--block`` steps, ``--blocks`` blocks each, so the machine's
drifts (large on a shared VM: separate processes differed by up to 50 %) hit all three alike. ``--load N``
keeps N other processes spinning meanwhile (1 keeps the other core of a 2-core machine busy). One JSON
line per scene: sim ms per step, median and p99, for each App, the count auto ended on and its trials.
docs/performance.md ("Threads") holds the table.

Run: python -m loom.benchmarks threads [--scene cape flag drape flags100] [--load N] [--blocks 12] [--block 25]
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

from loom.benchmarks.scenes import SCENES, _scene, background_load
from loom.engine import App
from loom.launch import threads
from loom.systems import DefaultPlugins


def run(name: str, *, blocks: int, block: int) -> dict:
    """Step the three Apps of scene ``name`` in turn; return the record."""
    substeps, build = _scene(name)
    apps: dict[str, App] = {}
    for key, count in (("one", 1), ("every_core", threads.cores()), ("auto", "auto")):
        app = App(dt=1 / 60, substeps=substeps, threads=count)
        app.add_plugin(DefaultPlugins)
        build(app)
        app.step(20)                                            # compiles, first contacts
        apps[key] = app
    times: dict[str, list[float]] = {key: [] for key in apps}
    for _ in range(blocks):
        for key, app in apps.items():
            for _ in range(block):
                start = time.perf_counter()
                app.step()
                times[key].append(time.perf_counter() - start)
    tuner = apps["auto"].tuner
    record = {"scene": name, "cores": threads.cores(), **{
        f"{key}_ms": [round(1000 * float(np.median(t)), 3), round(1000 * float(np.percentile(t, 99)), 3)]
        for key, t in times.items()}, "auto_ends_on": tuner.current, "auto_trials": tuner.trials}
    for app in apps.values():
        app.close()
    return record


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m loom.benchmarks threads", description=__doc__.splitlines()[0])
    p.add_argument("--scene", nargs="+", default=["cape", "flag", "drape", "flags100"], choices=SCENES)
    p.add_argument("--load", type=int, default=0, help="other processes kept spinning (default 0)")
    p.add_argument("--blocks", type=int, default=12, help="blocks per App (default 12)")
    p.add_argument("--block", type=int, default=25, help="steps per block (default 25)")
    args = p.parse_args(argv)
    if args.blocks < 1 or args.block < 1:
        p.error(f"--blocks {args.blocks} --block {args.block}: must be >= 1")
    with background_load(args.load):
        for name in args.scene:
            print(json.dumps(run(name, blocks=args.blocks, block=args.block) | {"load": args.load}), flush=True)


if __name__ == "__main__":
    main()
