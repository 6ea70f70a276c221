"""Plugins: a ``build(app)`` that adds systems, resources and reporters — the unit of extension.

A plugin is any object with ``build(app)``, or a plain function ``fn(app)``. A ``PluginGroup``
bundles plugins so a game adds the whole default pipeline in one line and can leave members out.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable


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

