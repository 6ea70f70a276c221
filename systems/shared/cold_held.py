"""A held namedtuple made without numba: the stand-in of ``held.hold`` while a compile worker compiles it.

``loom.launch.cold_kernels`` binds a module's Python call of ``hold`` to ``PyHeld`` while the compile-ahead worker
compiles the kernels (an empty numba cache), so the NumPy stand-ins of the kernels that take a held struct read its
``value`` in Python. A ``PyHeld`` stays where a system keeps it (its tables) after the kernels are rebound, and a
compiled kernel takes it as the held struct it stands for: numba types it by ``_numba_type_`` (``HeldType`` of the
value's type, the type ``hold`` returns) and unboxes it by ``_meminfo``, that of the struct ``hold`` makes of the
value on the first such call (once; loaded from numba's cache by then).
"""
from __future__ import annotations

from typing import Any

import numba

from loom.launch.cold_kernels import python_twin, request_types
from loom.systems.shared.held import Held, HeldType, hold


class PyHeld:
    """``hold(value)`` without compiling: ``value`` readable from Python; a compiled kernel takes it as the
    ``Held`` of ``value`` (module docstring)."""

    __slots__ = ("value", "_type", "_real")

    def __init__(self, value: Any) -> None:
        self.value = value
        self._type = None
        self._real: Held | None = None
        request_types(hold, (numba.typeof(value),))   # the worker compiles ``hold`` for this namedtuple too

    @property
    def _numba_type_(self) -> HeldType:
        """The numba type of ``hold(value)``."""
        if self._type is None:
            self._type = HeldType([("value", numba.typeof(self.value))])
        return self._type

    @property
    def _meminfo(self) -> Any:
        """The held struct's memory, made by the compiled ``hold`` at the first call of a compiled kernel."""
        if self._real is None:
            self._real = hold(self.value)
        return self._real._meminfo


def value_of(held: Any) -> Any:
    """The namedtuple ``held`` holds, for a NumPy stand-in (a ``PyHeld``; a compiled ``Held`` cannot be read from
    Python: TypeError naming the cause)."""
    try:
        return held.value
    except AttributeError:
        raise TypeError("a NumPy stand-in was given a compiled Held: hold() was not bound to PyHeld "
                        "(called_from of the module that holds it)") from None


python_twin(hold, per_step=True, twin=PyHeld, last=True)
