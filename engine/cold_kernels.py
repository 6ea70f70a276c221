"""Set-up kernels that run as Python on a cold launch: a small cloth is built without seconds of compiling.

A few kernels run when a cloth is built or its anchors change (its yarns, its colours, its tethers), not every
step. On a first launch numba compiles each of them on its first call, seconds apiece and a large share
of a small cloth's first frame, while their Python source builds a small cloth in a fraction of a second
(docs/performance.md, "Moved from docstrings"). ``pick(kernel,
size)`` returns the compiled kernel when it costs nothing to get (compiled in this process, or in numba's
on-disk cache) or the problem is large (``size`` above ``PYTHON_MAX_SIZE``), else the kernel's Python twin,
registered with ``python_twin``. The compile-ahead worker (``loom.engine.compile_ahead``) compiles these kernels
last, for the next call and the next launch; ``python -m loom.games --precompile`` compiles them at once.

The twin is the kernel's own source run by the interpreter (``py_func``), its calls to other registered kernels
going to their twins: one source, the same integers out (set-up kernels are integer graph walks and
distances, bit-identical either way).

Small per-step kernels (the step guard's checks, the deformation limit's length check, the pins, the renderer's
normals, Loop subdivision and vertex packing) have twins too, registered with ``per_step=True`` (a NumPy function
where the source loops over links or triangles): they run only while the compile-ahead worker is running
(``while_compiling``), which compiles them after the first frame's and the contacts' kernels; the next call after
it saved one loads the compiled kernel, so a first launch's first frame does not wait for them. Without a worker (one
core, ``LOOM_COMPILE_AHEAD=0``) they compile on their first call as before: a twin called every substep for the whole
game would cost milliseconds a frame. """
from __future__ import annotations

import os
from collections.abc import Callable
from types import FunctionType
from typing import Any

PYTHON_MAX_SIZE = 2500
"""Largest problem [elements: a cloth's particles] a cold set-up kernel runs as Python (50 × 50: about 0.5 s of
Python for the slowest, the colouring, against 1.3 s of compiling it)."""

ENABLED = os.environ.get("LOOM_COLD_PYTHON", "1").strip() != "0"
"""False (environment ``LOOM_COLD_PYTHON=0``): ``pick`` always returns the compiled kernel, and the contact system
runs its kernel even for a cloth clear of every collider (``environment.collide_environment``). ``--precompile`` and
the kernel lists' recorder set it, so that the cache, and the list, hold these kernels too."""

_twins: dict[Any, Callable[..., Any]] = {}
_per_step: set[Any] = set()
_ready: set[Any] = set()            # compiled in this process or cached: pick returns them at once
_compiling: Callable[[], bool] = lambda: False


def python_twin(kernel: Any, *callees: Any, per_step: bool = False, twin: Callable[..., Any] | None = None) -> Any:
    """Register ``kernel`` (a numba dispatcher) as a set-up kernel with a Python twin: its ``py_func`` with
    ``callees`` (dispatchers it calls) replaced by their own twins, registered before it; ``per_step``: a kernel
    called every step, whose twin runs only while another process compiles it (``while_compiling``); ``twin``: a
    NumPy function with the kernel's arguments and results, used instead of the source (a loop over thousands of
    links every substep is too slow as Python; NumPy's array operations are not). Returns
    ``kernel``. Raises TypeError for something that is not a numba dispatcher or a callee that is not
    registered."""
    py_func = getattr(kernel, "py_func", None)
    if not isinstance(py_func, FunctionType):
        raise TypeError(f"python_twin: {kernel!r} is not a numba dispatcher")
    namespace = dict(py_func.__globals__)
    for callee in callees:
        if callee not in _twins:
            raise TypeError(f"python_twin: callee {getattr(callee, '__name__', callee)!r} of "
                            f"{py_func.__qualname__} is not registered")
        namespace[callee.py_func.__name__] = _twins[callee]
    if twin is None:
        twin = FunctionType(py_func.__code__, namespace, py_func.__name__, py_func.__defaults__, py_func.__closure__)
        twin.__qualname__ = py_func.__qualname__
        twin.__doc__ = py_func.__doc__
    _twins[kernel] = twin
    if per_step:
        _per_step.add(kernel)
    return kernel


def while_compiling(running: Callable[[], bool]) -> None:
    """Per-step twins run while ``running()`` is true: the compile-ahead worker, which will compile them, is at
    work (``loom.engine.compile_ahead.start`` sets it)."""
    global _compiling
    _compiling = running


def has_twin(kernel: Any) -> bool:
    """Whether ``kernel`` was registered with ``python_twin`` (a set-up or a per-step kernel)."""
    return kernel in _twins


def is_per_step_kernel(kernel: Any) -> bool:
    """Whether ``kernel`` was registered with ``python_twin(..., per_step=True)``."""
    return kernel in _per_step


def cached(kernel: Any) -> bool:
    """Whether numba's on-disk cache holds an index for ``kernel`` (compiled by an earlier launch or the
    compile-ahead worker): loading it takes milliseconds. False when the cache's layout is not the one this
    was written for (another numba version)."""
    index = getattr(getattr(getattr(kernel, "_cache", None), "_cache_file", None), "_index_path", None)
    return isinstance(index, str) and os.path.exists(index)


def pick(kernel: Any, size: int) -> Callable[..., Any]:
    """``kernel`` itself when it is compiled in this process or cached on disk, when ``size`` (the problem's
    particles) is above ``PYTHON_MAX_SIZE``, when ``ENABLED`` is False, or for a per-step kernel when no other
    process is compiling it; else its Python twin (module docstring). Raises KeyError for a kernel
    ``python_twin`` never registered."""
    if kernel in _ready:                              # a per-step call site pays a set lookup from then on
        return kernel
    twin = _twins[kernel]
    if kernel.signatures or cached(kernel):
        _ready.add(kernel)
        return kernel
    if not ENABLED or size > PYTHON_MAX_SIZE or (kernel in _per_step and not _compiling()):
        return kernel
    return twin
