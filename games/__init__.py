"""Loom's demo games: each runs as ``python -m loom.games.<name>`` and headless with ``--headless``."""
import os as _os

_os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")    # stdout carries the JSON reports, not a banner
