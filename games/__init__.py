"""Loom's demo games: each runs as ``python -m games.<name>`` and headless with ``--headless``."""
