"""Loom's frame: App (world, resources, schedule, fixed-step clock), plugins, meshes, the runner.

engine/ imports neither systems/ nor games/ nor components/: the standard cloth pipeline is a
plugin group in ``systems``, and components import ``loom.engine.mesh`` for their constructors.
"""
from loom.engine import mesh
from loom.engine.app import App
from loom.engine.clock import FixedClock
from loom.engine.mesh import Mesh
from loom.engine.plugin import Plugin, PluginError, PluginGroup
from loom.engine.runner import HEADLESS_FRAMES, WindowRunner, parser, print_report, run_app
from loom.engine.schedule import Stage
from loom.engine.window import Window, WindowSettings

__all__ = ["HEADLESS_FRAMES", "App", "FixedClock", "Mesh", "Plugin", "PluginError", "PluginGroup", "Stage", "Window", "WindowRunner",
           "WindowSettings", "mesh", "parser", "print_report", "run_app"]
