"""Persistent classes: the component, resource and value classes a snapshot may hold, registered where they are defined.

A class that lives in an App's world (a component, a resource a system creates, a value inside one) declares
itself persistent with ``@persistent`` next to its definition; ``loom.files`` builds the table of classes a
state file may name from this registry (and the classes a game passes as ``trusted=``), so a plugin's model,
shape or system is snapshotted and resumed without editing ``loom.files``. The registry only maps names to
classes the program imported itself: a file never makes anything import or run.

``loom.files`` imports Loom's own packages before it reads the registry (components, the mesh, every built-in
plugin through ``loom.systems``, prefabs, replay logs), so their classes are known even to a program that has not
imported the modules defining them. A plugin outside Loom decorates its classes in its own module, which the
program that adds the plugin to an App has imported. In a game's own esper world a snapshot holds the components
of persistent classes only (Loom's part); a game's own classes stay the game's unless it declares them here.
"""
from __future__ import annotations

from typing import TypeVar

T = TypeVar("T", bound=type)

_REGISTERED: dict[str, type] = {}


def name_of(cls: type) -> str:
    """The name a class is registered and written under: ``module.qualname``."""
    return f"{cls.__module__}.{cls.__qualname__}"


def persistent(cls: T) -> T:
    """Class decorator: ``cls`` may be saved in and loaded from a snapshot (registered under ``name_of(cls)``).
    Returns ``cls`` unchanged; a module reloaded registers its new class in the old one's place. Raises TypeError
    for something that is not a class."""
    if not isinstance(cls, type):
        raise TypeError(f"persistent: {cls!r} is not a class")
    _REGISTERED[name_of(cls)] = cls
    return cls


def persistent_classes() -> tuple[type, ...]:
    """Every class registered with ``persistent`` so far, in registration order."""
    return tuple(_REGISTERED.values())
