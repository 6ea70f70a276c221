"""Entry point: ``python -m loom.benchmarks sheet --n 64 128 ...`` (``--help`` lists the benchmarks)."""
from __future__ import annotations

import argparse
import sys

from loom.benchmarks import (creep, cusick, dissipation, drape, hitches, scenes, sheet, small_steps, startup,
                             stiffness, threads)

BENCHMARKS = {"creep": creep, "cusick": cusick, "dissipation": dissipation, "drape": drape, "hitches": hitches,
              "scenes": scenes, "sheet": sheet, "small_steps": small_steps, "startup": startup, "stiffness": stiffness,
              "threads": threads}


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in BENCHMARKS:
        p = argparse.ArgumentParser(prog="python -m loom.benchmarks",
                                    description="Loom benchmarks; each prints JSON lines.")
        p.add_argument("benchmark", choices=sorted(BENCHMARKS))
        p.parse_args(argv[:1])
        return
    BENCHMARKS[argv[0]].main(argv[1:])


if __name__ == "__main__":
    main()
