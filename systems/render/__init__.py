"""Rendering: where cloth is drawn — ``gl`` (moderngl), ``soft`` (onto a pygame Surface), ``surface``
(normals, subdivision, strain colours both draw from), ``buffers`` (float32 vertex arrays for a game's own
shader), ``window`` (the interactive loop), ``between`` (drawing between the last two steps).

Rendering is opt-in, so the names below load on first use (PEP 562): ``from loom.systems.render import
SoftRenderer`` imports pygame but not moderngl, and a headless simulation imports neither.
"""
from __future__ import annotations

import importlib as _importlib
from typing import Any as _Any

_EXPORTS: dict[str, str] = {
    "GLRenderPlugin": "gl", "GLRenderer": "gl", "release_renderer": "gl", "save_screenshot": "gl",
    "SoftRenderer": "soft", "SoftRenderPlugin": "soft",
    "ClothSurface": "surface", "VertexBuffers": "buffers", "vertex_buffers": "buffers",
    "WindowPlugin": "window", "run_window": "window", "StepBlend": "between",
}

__all__ = ["ClothSurface", "GLRenderPlugin", "GLRenderer", "SoftRenderPlugin", "SoftRenderer", "StepBlend",
           "VertexBuffers", "WindowPlugin", "release_renderer", "run_window", "save_screenshot", "vertex_buffers"]


def __getattr__(name: str) -> _Any:
    """Load an exported name from its module on first use and keep it here."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'loom.systems.render' has no attribute {name!r}")
    value = getattr(_importlib.import_module(f"loom.systems.render.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
