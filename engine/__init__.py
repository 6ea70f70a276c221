"""Loom's frame: App (world, resources, schedule, fixed-step clock), plugins, meshes, the runner.

engine/ imports neither systems/ nor games/ nor components/: the standard cloth pipeline is a
plugin group in ``systems``, and components import ``loom.engine.mesh`` for their constructors.

Importing it first applies the thread policy (``loom.engine.threads``: ``GOMP_SPINCOUNT=10000`` unless
set), before anything can start numba's threads: every loom subpackage imports ``loom.engine`` first. It also
makes numba load Loom's cached kernels without its registry refresh (``loom.engine.kernel_cache``: a warm
launch about 0.3 s sooner).
"""
from loom.engine import kernel_cache, threads
threads.apply_policy()
kernel_cache.install()

from loom.engine import compile_ahead, mesh  # noqa: E402  (after the thread policy)
from loom.engine.app import App
from loom.engine.clock import FixedClock
from loom.engine.compile_progress import show_compile_progress
from loom.engine.frame_stats import FrameStats
from loom.engine.mesh import Mesh
from loom.engine.plugin import Plugin, PluginError, PluginGroup
from loom.engine.runner import (HEADLESS_FRAMES, WindowRunner, check_outputs, open_recorder, parser, print_report,
                                 run_app)
from loom.engine.schedule import Stage
from loom.engine.window import Window, WindowSettings

__all__ = ["HEADLESS_FRAMES", "App", "FixedClock", "FrameStats", "Mesh", "Plugin", "PluginError", "PluginGroup", "Stage", "Window", "WindowRunner",
           "WindowSettings", "check_outputs", "compile_ahead", "mesh", "open_recorder", "parser", "print_report",
           "run_app", "show_compile_progress"]
