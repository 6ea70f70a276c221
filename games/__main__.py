"""List Loom's demo games, or run one by name.

Run: python -m games                      one line per game: its name and what it shows
     python -m games NAME [options]       the same as python -m games.NAME [options]

A game is any module in games/ with a top-level ``main``; the list reads their source (first line of the
module docstring) without importing them, so listing is quick and has no side effects.
"""
from __future__ import annotations

import ast
import importlib
import sys
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
    if not args or args[0] in ("-l", "--list", "-h", "--help"):
        if args and args[0] in ("-h", "--help"):
            print(__doc__.strip().split("\n\n")[1] + "\n")
        width = max(map(len, games), default=0)
        for name, line in games.items():
            print(f"{name:<{width}}  {line}")
        return 0
    name, rest = args[0], args[1:]
    if name not in games:
        print(f"python -m games: no game {name!r}; the games are {', '.join(games)}", file=sys.stderr)
        return 2
    importlib.import_module(f"games.{name}").main(rest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
