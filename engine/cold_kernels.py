"""Set-up kernels that run as Python on a cold launch: a small cloth is built without seconds of compiling.

A few kernels run when a cloth is built or its anchors change (its yarns, its colours, its tethers), not every
step. On a first launch numba compiles each of them on its first call, 1–1.6 s apiece on a 2-core VM: about 5 s
of the cape's first frame. Their Python source builds the 600-particle cape in about 0.15 s. ``pick(kernel,
size)`` returns the compiled kernel when it costs nothing to get (compiled in this process, or in numba's
on-disk cache) or the problem is large (``size`` above ``PYTHON_MAX_SIZE``), else the kernel's Python twin,
registered with ``python_twin``. The compile-ahead worker (``loom.engine.compile_ahead``) compiles these kernels
last, for the next call and the next launch; ``python -m loom.games --precompile`` compiles them at once.

The twin is the kernel's own source run by the interpreter (``py_func``), its calls to other registered kernels
going to their twins: one source, the same integers out (set-up kernels are integer graph walks and
distances, bit-identical either way).
"""
from __future__ import annotations

import os
from collections.abc import Callable
from types import FunctionType
from typing import Any

PYTHON_MAX_SIZE = 2500
"""Largest problem [elements: a cloth's particles] a cold set-up kernel runs as Python (50 × 50: about 0.5 s of
Python for the slowest, the colouring, against 1.3 s of compiling it)."""

ENABLED = os.environ.get("LOOM_COLD_PYTHON", "1").strip() != "0"
"""False (environment ``LOOM_COLD_PYTHON=0``): ``pick`` always returns the compiled kernel. ``--precompile`` and
the kernel lists' recorder set it, so that the cache, and the list, hold these kernels too."""

_twins: dict[Any, Callable[..., Any]] = {}


def python_twin(kernel: Any, *callees: Any) -> Any:
    """Register ``kernel`` (a numba dispatcher) as a set-up kernel with a Python twin: its ``py_func`` with
    ``callees`` (dispatchers it calls) replaced by their own twins, registered before it. Returns ``kernel``.
    Raises TypeError for something that is not a numba dispatcher or a callee that is not registered."""
    py_func = getattr(kernel, "py_func", None)
    if not isinstance(py_func, FunctionType):
        raise TypeError(f"python_twin: {kernel!r} is not a numba dispatcher")
    namespace = dict(py_func.__globals__)
    for callee in callees:
        if callee not in _twins:
            raise TypeError(f"python_twin: callee {getattr(callee, '__name__', callee)!r} of "
                            f"{py_func.__qualname__} is not registered")
        namespace[callee.py_func.__name__] = _twins[callee]
    twin = FunctionType(py_func.__code__, namespace, py_func.__name__, py_func.__defaults__, py_func.__closure__)
    twin.__qualname__ = py_func.__qualname__
    twin.__doc__ = py_func.__doc__
    _twins[kernel] = twin
    return kernel


def is_set_up_kernel(kernel: Any) -> bool:
    """Whether ``kernel`` was registered with ``python_twin``."""
    return kernel in _twins


def cached(kernel: Any) -> bool:
    """Whether numba's on-disk cache holds an index for ``kernel`` (compiled by an earlier launch or the
    compile-ahead worker): loading it takes milliseconds. False when the cache's layout is not the one this
    was written for (another numba version)."""
    index = getattr(getattr(getattr(kernel, "_cache", None), "_cache_file", None), "_index_path", None)
    return isinstance(index, str) and os.path.exists(index)


def pick(kernel: Any, size: int) -> Callable[..., Any]:
    """``kernel`` itself when it is compiled in this process or cached on disk, when ``size`` (the problem's
    particles) is above ``PYTHON_MAX_SIZE`` or when ``ENABLED`` is False; else its Python twin (module
    docstring). Raises KeyError for a kernel ``python_twin`` never registered."""
    twin = _twins[kernel]
    if not ENABLED or size > PYTHON_MAX_SIZE or kernel.signatures or cached(kernel):
        return kernel
    return twin
