"""Faster loads of Loom's cached numba kernels: a warm launch skips numba's registry refresh.

Every Loom kernel is ``@numba.njit(cache=True)``: after the first launch its machine code comes from numba's
on-disk cache. numba, before loading any cached function, refreshes its whole target context: it imports and
registers every typing and lowering implementation it has (NumPy, linalg and, when SciPy is installed, its BLAS,
random, typed containers, …). That is about 0.3 s of a warm launch (0.55 s with SciPy installed), about a fifth
of it, spent on registries that only *compiling* needs. Compiling refreshes the context itself (numba's
``CompilerBase.__init__``), so a load can skip it.

``install()`` makes numba's ``Cache.load_overload`` do, for Loom's own kernels (functions defined in ``loom.*``
modules), only what loading machine code needs: the NRT (numba's reference-counted memory) initialised and the
hashing module's symbols registered — the only runtime symbols numba registers from a module that the refresh
imports; the rest are registered when the target context is created, and the parallel runtime's by the cached
function's own ``reload_init``. Other functions (a game's own kernels) load as numba always does.

``import loom.launch`` installs it. Set ``LOOM_FAST_KERNEL_LOAD=0`` to leave numba untouched. When numba's
cache class does not look the way this was written for (another numba version), nothing is changed.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

ENV_VAR = "LOOM_FAST_KERNEL_LOAD"
"""Environment variable: "0" turns the fast load off (numba's own load, with its refresh, for every kernel)."""

_original: Callable[..., Any] | None = None

miss_hooks: list[Callable[[Any], bool]] = []
"""Called as ``hook(cache)`` when a Loom kernel is not in numba's cache (``cache`` is numba's ``Cache`` of it); a
hook that returns True has seen it put there since (the compile-ahead worker finished compiling it,
``loom.launch.compile_ahead``), and the load is tried once more instead of compiling it a second time."""


load_hooks: list[Callable[[Any, Any], None]] = []
"""Called as ``hook(py_func, sig)`` after a Loom kernel's signature ``sig`` was loaded from numba's cache (the
later-kernels record, ``loom.launch.later_kernels``, notes the loads of a scene's later frames)."""


class NotCached(Exception):
    """Raised by a load inside ``only_cached()`` when the kernel is not in numba's cache: nothing is compiled."""


_flags = threading.local()                      # this thread's ``only_cached`` (a step boundary may load off the game's
                                                # thread while the game's own thread compiles: flags of its own)


@contextmanager
def only_cached(wait: bool = True) -> Iterator[None]:
    """Within it, ``dispatcher.compile(sig)`` of a Loom kernel loads it from numba's cache or raises ``NotCached``
    instead of compiling (the later-kernels list: an entry recorded before the code changed is skipped, not
    compiled at the next launch's first step). ``wait=False``: nor does it wait for the compile-ahead worker to
    finish it (``miss_hooks`` not called: a step boundary's load, which must cost milliseconds). Without the fast
    load (``installed()`` False), it changes nothing."""
    before = (getattr(_flags, "only", False), getattr(_flags, "no_wait", False))
    _flags.only, _flags.no_wait = True, before[1] or not wait
    try:
        yield
    finally:
        _flags.only, _flags.no_wait = before


def is_loom_function(py_func: Any) -> bool:
    """Whether ``py_func`` (a kernel's Python function, or None) is defined in a ``loom`` module."""
    module = getattr(py_func, "__module__", None) or ""
    return module == "loom" or module.startswith("loom.")


def _is_loom_kernel(cache: Any) -> bool:
    """Whether a numba ``Cache`` belongs to a function defined in a ``loom`` module."""
    return is_loom_function(getattr(cache, "_py_func", None))


def _fast_load_overload(self: Any, sig: Any, target_context: Any) -> Any:
    """``Cache.load_overload`` without the registry refresh, for Loom's kernels (see the module docstring)."""
    if not _is_loom_kernel(self):
        return _original(self, sig, target_context)
    from numba.core.runtime import rtsys
    import numba.cpython.hashing  # noqa: F401  (registers the _Py_HashSecret symbols hashing code links to)
    rtsys.initialize(target_context)
    with self._guard_against_spurious_io_errors():
        loaded = self._load_overload(sig, target_context)
    if loaded is None and not getattr(_flags, "no_wait", False) and any([hook(self) for hook in list(miss_hooks)]):
        with self._guard_against_spurious_io_errors():
            loaded = self._load_overload(sig, target_context)
    if loaded is None and getattr(_flags, "only", False):
        raise NotCached(self._py_func.__qualname__)
    if loaded is not None:
        from loom.launch.compile_progress import note_loaded
        note_loaded(self._py_func.__qualname__)
        for hook in list(load_hooks):
            hook(self._py_func, sig)
    return loaded


def install() -> bool:
    """Make numba load Loom's cached kernels without its registry refresh; return whether it is in effect.

    Idempotent. Returns False, changing nothing, when ``LOOM_FAST_KERNEL_LOAD=0`` or when numba's ``Cache``
    lacks the methods this relies on."""
    global _original
    if os.environ.get(ENV_VAR, "1").strip() == "0":
        return False
    from numba.core import caching
    cache = caching.Cache
    if _original is not None:
        return cache.load_overload is _fast_load_overload
    needed = ("load_overload", "_load_overload", "_guard_against_spurious_io_errors")
    if not all(callable(getattr(cache, name, None)) for name in needed):
        return False
    _original = cache.load_overload
    cache.load_overload = _fast_load_overload
    return True


def installed() -> bool:
    """Whether ``install()`` is in effect in this process."""
    from numba.core import caching
    return _original is not None and caching.Cache.load_overload is _fast_load_overload
