"""Plugins: a ``build(app)`` that adds systems, resources and reporters — the unit of extension.

A plugin is any object with ``build(app)``, or a plain function ``fn(app)``. A ``PluginGroup``
bundles plugins so a game adds the whole default pipeline in one line and can leave members out.
Installed packages offer plugins through the ``loom.plugins`` entry-point group (in their
pyproject.toml: ``[project.entry-points."loom.plugins"] vortex = "loom_vortex:VortexPlugin"``); an
App picks them up only when asked (``App(plugins="auto")`` or ``app.add_plugins_from_entry_points()``).
"""
from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from importlib import metadata
from typing import Any, Protocol, runtime_checkable

ENTRY_POINT_GROUP = "loom.plugins"
"""Entry-point group scanned for installed Loom plugins."""


class PluginError(RuntimeError):
    """A plugin could not be loaded or built; the message names it and its entry point."""


@runtime_checkable
class Plugin(Protocol):
    """Anything with ``build(app)``: registers systems, resources and reporters, and does nothing else."""

    def build(self, app: Any) -> None:
        """Register this plugin's systems and resources on ``app``."""


PluginLike = Plugin | Callable[[Any], None] | type


def plugin_name(plugin: PluginLike) -> str:
    """Return the name a plugin is known by: its class name, or a function's ``__name__``."""
    if isinstance(plugin, type):
        return plugin.__name__
    if hasattr(plugin, "build"):
        return type(plugin).__name__
    return getattr(plugin, "__name__", repr(plugin))


class PluginGroup:
    """An ordered bundle of plugins; ``without("Name")`` drops a member (to replace it with your own)."""

    def __init__(self, *plugins: PluginLike) -> None:
        self.plugins: tuple[PluginLike, ...] = plugins

    def without(self, *names: str) -> PluginGroup:
        """Return a copy of this group without the plugins named (class or function names).

        Raises ValueError for a name that is not a member."""
        members = [plugin_name(p) for p in self.plugins]
        for name in names:
            if name not in members:
                raise ValueError(f"{type(self).__name__}.without: no member named {name!r} "
                                 f"(members: {', '.join(members)})")
        return PluginGroup(*(p for p in self.plugins if plugin_name(p) not in names))

    def disable(self, *names: str) -> PluginGroup:
        """Return a copy of this group with the named members switched off (same as ``without``)."""
        return self.without(*names)

    def members(self) -> list[str]:
        """Return the member plugin names, in build order."""
        return [plugin_name(p) for p in self.plugins]

    def build(self, app: Any) -> None:
        """Add every member to ``app`` in order."""
        for plugin in self.plugins:
            app.add_plugin(plugin)


def build_plugin(plugin: PluginLike, app: Any) -> None:
    """Call ``plugin.build(app)`` (instantiating a plugin class first) or ``plugin(app)``."""
    if isinstance(plugin, type):
        plugin = plugin()
    build = getattr(plugin, "build", None)
    if callable(build):
        build(app)
    elif callable(plugin):
        plugin(app)
    else:
        raise TypeError(f"add_plugin: {plugin!r} is neither a plugin (with build(app)) nor a function (app)")



def entry_point_plugins(group: str = ENTRY_POINT_GROUP) -> list[tuple[str, PluginLike]]:
    """Load every plugin registered under ``group``; return [(entry-point name, plugin), …] sorted by name.

    Raises PluginError naming the first plugin whose import fails: its entry point, the distribution that
    declares it and the file its module was loaded from (the module path when no file is found)."""
    found = sorted(metadata.entry_points(group=group), key=lambda ep: ep.name)
    loaded = []
    for ep in found:
        try:
            loaded.append((ep.name, ep.load()))
        except Exception as error:                       # any import-time failure of a third-party plugin
            raise PluginError(f"loom plugin {ep.name!r} ({ep.value}) failed to import: "
                              f"{type(error).__name__}: {error}\n{_describe_entry_point(ep, group)}") from error
    return loaded


def _describe_entry_point(ep: Any, group: str) -> str:
    """Where an entry point comes from: its declaration, its distribution, the file of its module."""
    module = getattr(ep, "module", None) or str(ep.value).split(":", 1)[0].strip()
    dist = getattr(ep, "dist", None)
    if dist is not None:
        distribution = f"{getattr(dist, 'name', None) or dist.metadata['Name']} {dist.version}"
    else:
        distribution = "unknown (the entry point names no installed distribution)"
    origin = _module_file(module)
    return (f"  entry point: {ep.name} = {ep.value} (group {getattr(ep, 'group', None) or group})\n"
            f"  distribution: {distribution}\n"
            f"  loaded from: {origin or f'module {module} (no file found for it)'}")


def _module_file(module: str) -> str | None:
    """The file ``module`` is (or would be) loaded from, found without running any code; None if none is."""
    loaded = sys.modules.get(module)
    if getattr(loaded, "__file__", None):
        return loaded.__file__
    parent = module.rpartition(".")[0]
    if parent and parent not in sys.modules:             # finding a submodule would import its package
        return _module_file(parent)
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    return spec.origin if spec is not None and spec.has_location else None
