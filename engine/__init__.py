"""Loom's frame: App (world, resources, schedule, fixed-step clock, its step boundary), plugins, meshes, window.

engine/ imports neither systems/ nor games/ nor components/ nor the launch tooling (``loom.launch``: the runner,
compile-ahead, the thread tuner, the recorder): the standard cloth pipeline is a plugin group in ``systems``,
components import ``loom.engine.mesh`` for their constructors, and the launch tooling plugs into the App through
its one hook, ``App.step_boundary`` (``loom.engine.boundary``).

The runner's names that lived here before ``loom.launch`` existed (``run_app``, ``parser``, ``WindowRunner``, …)
still load from here, from ``loom.launch`` on first use (``_MOVED``): ``import loom.engine`` alone loads none of it.
"""
from __future__ import annotations

import importlib as _importlib
from typing import Any as _Any

from loom.engine import mesh
from loom.engine.app import App
from loom.engine.boundary import StepBoundary
from loom.engine.clock import FixedClock
from loom.engine.frame_stats import FrameStats
from loom.engine.mesh import Mesh
from loom.engine.persist import persistent
from loom.engine.plugin import Plugin, PluginError, PluginGroup
from loom.engine.schedule import Stage
from loom.engine.window import Window, WindowSettings

_MOVED = ("HEADLESS_FRAMES", "WindowRunner", "check_outputs", "compile_ahead", "open_recorder", "parser",
          "print_report", "run_app", "show_compile_progress", "threads")
"""Names of the launch tooling (``loom.launch``) that old code imports from ``loom.engine``."""

__all__ = ["App", "FixedClock", "FrameStats", "Mesh", "Plugin", "PluginError", "PluginGroup", "Stage", "StepBoundary",
           "Window", "WindowSettings", "mesh", "persistent"]


def __getattr__(name: str) -> _Any:
    """Load a name of ``_MOVED`` from ``loom.launch`` on first use (PEP 562)."""
    if name not in _MOVED:
        raise AttributeError(f"module 'loom.engine' has no attribute {name!r}")
    value = getattr(_importlib.import_module("loom.launch"), name)
    globals()[name] = value
    return value
