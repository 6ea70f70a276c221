"""Prefabs: everyday cloth in one call — ``loom.cape`` on a hero, ``loom.flag`` on a pole — built from the public
components with defaults that read well in a straight 2D side view; every default overridable. And a drawn
character to wear a cape in 3D (``spawn_figure``, ``pose_figure``: Props, animated as it runs and jumps).

Each helper spawns ordinary entities (Cloth, Pin, ClothStyle) and returns a small handle (``Cape``, ``Flag``)
with ``.entity`` and ``.cloth``; nothing here runs per step. Lengths and points are the game's pixels when the
App has a ``PixelSpace`` at its first step (inserted before or after the helper), metres otherwise; without one,
pixel-sized values warn once (prefabs/_units.py).
"""
from __future__ import annotations

from loom.prefabs.cape import Cape, cape
from loom.prefabs.figure import Figure, figure_colliders, pose_figure, spawn_figure
from loom.prefabs.flag import Flag, flag

__all__ = ["Cape", "Figure", "Flag", "cape", "figure_colliders", "flag", "pose_figure", "spawn_figure"]
