"""Loom's demo games: each runs as ``python -m loom.games.<name>`` and headless with ``--headless``.

Importing the package turns on numba's compile progress on stderr (``loom.launch.show_compile_progress``): a
first launch, with nothing cached yet, says what it compiles instead of staying silent; a warm one prints nothing.
"""
import os as _os

_os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")    # stdout carries the JSON reports, not a banner

from loom.launch import show_compile_progress as _show_compile_progress  # noqa: E402

_show_compile_progress()
