"""Loom's frame: App (world, resources, schedule, fixed-step clock), plugins, meshes, the runner.

engine/ imports neither systems/ nor games/ nor components/: the standard cloth pipeline is a
plugin group in ``systems``, and components import ``engine.mesh`` for their constructors.
"""
from engine import mesh
from engine.app import App
from engine.clock import FixedClock
from engine.mesh import Mesh
from engine.plugin import Plugin, PluginError, PluginGroup
from engine.runner import WindowRunner
from engine.schedule import Stage

__all__ = ["App", "FixedClock", "Mesh", "Plugin", "PluginError", "PluginGroup", "Stage", "WindowRunner", "mesh"]
