"""Held: a namedtuple of arrays behind one pointer, so a kernel called from Python takes many arrays cheaply.

Kernels group their arrays in ``typing.NamedTuple``s (a reader sees ``colliders.margin``, not the
25th argument). Passed from Python as they are, numba would type such a tuple field by field on every
call; held in a structref (``hold``, once whenever the arrays change) it is one pointer, and its arrays
are not unboxed either (no NRT wrapper per array). A kernel reads ``held.value``. A held call costs about
what a structref with fields of its own costs, less than the arrays as separate arguments and much less than a
NamedTuple (docs/performance.md, "Moved from docstrings"). It is the one way loom packs a kernel's arguments.

Inside a ``parallel=True`` kernel, pass the held struct itself into ``prange`` bodies: numba's parfors
accept a structref there, but not a namedtuple that is nested or was read from a struct.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numba
from numba.core import types
from numba.experimental import structref


@structref.register
class HeldType(types.StructRef):
    """Numba type of ``Held``: one field, ``value``, of the held namedtuple's type."""


class Held(structref.StructRefProxy):
    """A namedtuple held for kernels (``hold``); read ``value`` inside a kernel, not from Python."""


structref.define_proxy(Held, HeldType, ["value"])


@numba.njit(cache=True)
def hold(value):
    """Hold the namedtuple ``value`` for kernels (compiled and cached per namedtuple type, unlike ``Held(...)``
    called from Python, which compiles its constructor in every process)."""
    return Held(value)


class HeldByArrays:
    """The last two held structs, found again by the identity of the arrays they hold (``get``): holding a namedtuple
    costs about 10 µs, and a system that swaps two sets of arrays every step (a start and an end pose) holds each set
    once. A held struct keeps its arrays alive, so their ids cannot be reused while it is kept."""

    def __init__(self) -> None:
        self._by_ids: dict[tuple[int, ...], Any] = {}

    def get(self, arrays: tuple, build: Callable[[], Any], holder: Callable[[Any], Any] = hold) -> Any:
        """The held ``build()`` (a namedtuple of exactly ``arrays``), held anew only when these arrays are not among
        the last two sets. ``holder``: what holds it, the calling module's own name for ``hold`` (which a cold
        launch binds to a stand-in: ``loom.systems.shared.cold_held``)."""
        key = tuple(map(id, arrays))
        found = self._by_ids.get(key)
        if found is None:
            if len(self._by_ids) > 1:
                self._by_ids.clear()
            found = self._by_ids[key] = holder(build())
        return found
