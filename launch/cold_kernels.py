"""Kernels that run as Python or NumPy on a cold launch, rebound to the compiled kernel once it is ready.

A few kernels run when a cloth is built or its anchors change (its yarns, its colours, its tethers), not every
step. On a first launch numba compiles each of them on its first call, seconds apiece and a large share
of a small cloth's first frame, while their Python source builds a small cloth in a fraction of a second
(docs/performance.md, "Moved from docstrings"). Small per-step kernels (the step guard's checks, the deformation
limit's length check, the pins, the renderer's normals, Loop subdivision and vertex packing) have twins too (a
NumPy function where the source loops over links or triangles): the compile-ahead worker
(``loom.launch.compile_ahead``) compiles them after the first frame's and the contacts' kernels, so a first
launch's first frame does not wait for them.

The large per-step kernels have *stand-ins* too, NumPy functions next to the kernels they stand in for
(``loom.systems.xpbd.cold``: the prediction, the velocity update, the constraint solve and the yarns' settle pass;
``loom.systems.forces.cold``: the wind; ``loom.systems.shared.cold_limits``: the deformation limit;
``loom.systems.collision.cold``: the contacts and the max distance; ``loom.systems.coupling.cold``: the pymunk
bridge, as its own source; ``loom.systems.shared.cold_held``: ``hold``, whose ``PyHeld`` the others read). A
stand-in need not be its kernel's algorithm (the solve is Jacobi XPBD over the links, not the coloured Gauss–Seidel
and the yarns' line solve) but writes the same arrays with the same meaning, and keeps the cloth within physical
bounds (tests/test_cold_stand_ins.py). So **a launch on an empty cache with a compile worker
runs its first seconds on stand-ins, and its motion then differs from a warm launch's**; determinism (bit-exact
runs) holds between warm launches and wherever no stand-in runs: ``LOOM_COLD_PYTHON=0``, no worker (one core,
``LOOM_COMPILE_AHEAD=0``, ``LOOM_COLD_WORKER=0``), and the tests (their ``conftest`` sets ``LOOM_COLD_WORKER=0``).

Nothing is chosen per call in a hot system. A module whose code calls a kernel declares it once,
``called_from(__name__, kernel, ...)``, and then calls the kernel through a module-level name of its own
(``_walk_call = _walk``; the kernel's own name stays the kernel). This module *binds* that name:

- a set-up kernel (``python_twin(kernel, size=...)``), when it is neither compiled in this process nor in numba's
  on-disk cache (``cached``), is bound at once to a stand-in that runs the twin for a problem of at most
  ``PYTHON_MAX_SIZE`` particles and the kernel for a larger one (a set-up call, once per build: its size is read
  from the call's arguments);
- a per-step kernel (``python_twin(kernel, per_step=True)``) is bound to its twin only while the compile-ahead
  worker compiles it (``while_compiling``): without a worker (one core, ``LOOM_COMPILE_AHEAD=0``) it compiles on
  its first call as before, since a twin called every substep for the whole game would cost milliseconds a frame;
  with a *serving* worker (``compile_ahead.serve``: an App's own, for a game without a kernel list) the site's
  first call asks the worker for its kernel with that call's argument types (``request``), then calls the twin;
- a per-step kernel registered ``last`` (``hold``: its stand-in makes what the module's other stand-ins read) is
  rebound only once no other site of its module is on a twin;
- ``rebind`` (called by an App's step boundary, ``loom.launch.step_boundary``, before each step) puts the
  compiled dispatcher back, once, when the kernel is ready (compiled here, or in numba's cache: loading it takes
  milliseconds: at most ``LOADS_PER_BOUNDARY`` loads a boundary, so no frame pays for several, and never waiting
  for the worker), when the worker stopped, or for a per-step kernel when the scene is large. A module whose
  kernels take ``hold``'s stand-in (``PyHeld``) is rebound only once ``hold`` is loaded for every type its
  stand-ins asked for (``request_types``): a compiled kernel given a ``PyHeld`` makes the held struct with it,
  which would otherwise compile in the game's frame. From then on the call site calls the dispatcher with no
  lookup at all.

The twin is the kernel's own source run by the interpreter (``py_func``), its calls to other registered kernels
going to their twins: one source, the same integers out (set-up kernels are integer graph walks and
distances, bit-identical either way). A name a numba function of the same module uses is never bound
(``called_from`` refuses it): numba would meet a Python function where it expects a kernel.
"""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from types import FunctionType
from typing import Any

PYTHON_MAX_SIZE = 2500
"""Largest problem [elements: a cloth's particles] a cold set-up kernel runs as Python (50 × 50: about 0.5 s of
Python for the slowest, the colouring, against 1.3 s of compiling it); a scene of more particles rebinds the
per-step twins to their kernels at its first step."""

ENABLED = os.environ.get("LOOM_COLD_PYTHON", "1").strip() != "0"
"""False (environment ``LOOM_COLD_PYTHON=0``): no name is bound to a twin, and the contact system runs its kernel
even for a cloth clear of every collider (``environment.collide_environment``). ``--precompile`` and the kernel
lists' recorder set it, so that the cache, and the list, hold these kernels too."""

_twins: dict[Any, Callable[..., Any]] = {}
_per_step: set[Any] = set()
_last: set[Any] = set()                             # kernels whose sites are rebound after their module's others
_sizes: dict[Any, Callable[..., int]] = {}
_by_name: dict[tuple[str, str], Any] = {}          # (module, qualname) → dispatcher, whatever its name is bound to
_sites: list[tuple[dict[str, Any], str, Any]] = []  # (module globals, name, kernel) of every call site
_bound: list[tuple[dict[str, Any], str, Any]] = []  # the call sites bound to a twin or stand-in that ``rebind`` watches
_compiling: Callable[[], bool] = lambda: False
_requester: Callable[[Any, tuple], None] | None = None   # asks the worker for a kernel (``while_compiling``)
_requested: dict[Any, tuple | None] = {}            # kernel → the numba argument types its first call asked for
_asked: set[tuple[Any, tuple]] = set()              # (kernel, types) asked of the worker by ``request_types``
first_cost: dict[Any, float] = {}
"""Per kernel, what its stand-in's calls took in a serving worker's game's first step [s], all its call sites
together (``_Requesting``): the first frame's compile (``compile_ahead.first_frame_compile``) weighs by it."""

LOADS_PER_BOUNDARY = 1
"""Most kernels ``rebind`` loads from numba's cache at one step boundary (a load costs milliseconds: spread over
the boundaries, no frame pays for several)."""


def python_twin(kernel: Any, *callees: Any, per_step: bool = False, twin: Callable[..., Any] | None = None,
                size: Callable[..., int] | None = None, last: bool = False) -> Any:
    """Register ``kernel`` (a numba dispatcher) with a Python twin: its ``py_func`` with ``callees`` (dispatchers
    it calls) replaced by their own twins, registered before it; ``per_step``: a kernel called every step, whose
    twin stands in only while another process compiles it (``while_compiling``); ``twin``: a NumPy function with
    the kernel's arguments and results, used instead of the source (a loop over thousands of links every substep
    is too slow as Python; NumPy's array operations are not); ``size``: for a set-up kernel, the problem's size
    [particles] from the call's arguments (``PYTHON_MAX_SIZE``); ``last``: a per-step kernel whose twin makes
    what other twins of the calling module read (``held.hold``'s ``PyHeld``), so a call site of it is rebound only
    once no other site of that module is bound to a twin. Returns ``kernel``. Registering binds no name:
    ``called_from`` does. Raises TypeError for something that is not a numba dispatcher or a callee that is not
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
    _by_name[(py_func.__module__, py_func.__qualname__)] = kernel
    if per_step:
        _per_step.add(kernel)
    if last:
        _last.add(kernel)
    if size is not None:
        _sizes[kernel] = size
    return kernel


class _SetUp:
    """A cold set-up kernel's stand-in: its twin for a problem of at most ``PYTHON_MAX_SIZE``, the kernel (compiled
    on that call) for a larger one or once it is ready. Called once per build, never per step."""

    __slots__ = ("kernel", "twin", "size")

    def __init__(self, kernel: Any) -> None:
        self.kernel, self.twin, self.size = kernel, _twins[kernel], _sizes[kernel]

    def chosen(self, *args: Any) -> Callable[..., Any]:
        """What a call with ``args`` runs: the kernel when it is ready, the problem large or ``ENABLED`` False,
        else the twin."""
        if not ENABLED or self.size(*args) > PYTHON_MAX_SIZE or ready(self.kernel):
            return self.kernel
        return self.twin

    def __call__(self, *args: Any) -> Any:
        return self.chosen(*args)(*args)


def called_from(module: str, *kernels: Any) -> None:
    """Declare that the Python code of ``module`` (its ``__name__``) calls each of ``kernels`` (registered with
    ``python_twin``) through a module-level name of its own, ``<kernel>_call = <kernel>``: every name of the module
    bound to the kernel other than the kernel's own. Those names are what this module rebinds; the kernel's own
    name stays the dispatcher (numba functions and tests call it). A cold set-up kernel's names are bound to its
    stand-in now (module docstring). Raises KeyError for an unregistered kernel or a module that is not imported,
    TypeError for a set-up kernel without ``size``, or a kernel with no such name or one a numba function of the
    module calls (it would meet a Python function)."""
    namespace = sys.modules[module].__dict__
    numba_names = {name for value in list(namespace.values()) if hasattr(value, "py_func")
                   for name in getattr(getattr(value.py_func, "__code__", None), "co_names", ())}
    for kernel in kernels:
        if kernel not in _twins:
            raise KeyError(f"called_from: {getattr(kernel, '__name__', kernel)!r} has no twin (python_twin first)")
        qualname = kernel.py_func.__qualname__
        own = kernel.py_func.__name__
        names = [name for name, value in namespace.items() if value is kernel and name != own]
        if not names or any(name in numba_names for name in names):
            raise TypeError(f"called_from: {module} needs a name of {qualname} of its own for its Python call sites, "
                            f"that no numba function calls ({own}_call = {own}): the kernel's name stays the kernel")
        if kernel not in _per_step and kernel not in _sizes:
            raise TypeError(f"called_from: set-up kernel {qualname} has no size (python_twin(..., size=...))")
        for name in names:
            site = (namespace, name, kernel)
            _sites.append(site)
            if ENABLED and kernel not in _per_step and not ready(kernel):
                _bind(site, _SetUp(kernel))
            elif ENABLED and kernel in _per_step and _compiling() and not ready(kernel):
                _bind(site, _twins[kernel])
    if ENABLED and _compiling():
        _bind_holders()


def _bind(site: tuple[dict[str, Any], str, Any], stand_in: Callable[..., Any]) -> None:
    namespace, name, _ = site
    namespace[name] = stand_in
    if site not in _bound:
        _bound.append(site)


class _Requesting:
    """A per-step call site's stand-in while a serving worker runs, until it is called: its first call asks the worker
    for the kernel with the call's argument types (``_requester``). In the game's first step every call runs the
    twin and adds its time to ``first_cost`` (``first_step_done`` then binds the site to the plain twin); after it,
    the first call binds the plain twin at once."""

    __slots__ = ("site",)

    def __init__(self, site: tuple[dict[str, Any], str, Any]) -> None:
        self.site = site

    def __call__(self, *args: Any) -> Any:
        namespace, name, kernel = self.site
        if kernel not in _requested:
            request(kernel, args)
        if not _timing[0]:
            namespace[name] = _twins[kernel]
            return _twins[kernel](*args)
        began = time.perf_counter()
        try:
            return _twins[kernel](*args)
        finally:
            first_cost[kernel] = first_cost.get(kernel, 0.0) + time.perf_counter() - began


_timing = [True]
"""Whether the game's first step is under way (``_Requesting`` times the stand-ins' calls)."""


def first_step_done() -> None:
    """The game's first step is over: every call site on its ``_Requesting`` stand-in that was called (they timed the
    first step's calls) is bound to its plain twin; one not yet called binds it at its first call, having asked the
    worker for its kernel."""
    _timing[0] = False
    for namespace, name, kernel in _bound:
        if isinstance(namespace[name], _Requesting) and kernel in _requested:
            namespace[name] = _twins[kernel]


def request(kernel: Any, args: tuple) -> None:
    """Ask the serving worker (if any) to compile ``kernel`` for the numba types of ``args`` (once per kernel)."""
    if kernel in _requested:
        return
    try:
        types = tuple(kernel.typeof_pyval(a) for a in args)
    except Exception:                               # an argument numba cannot type: the kernel compiles when rebound
        _requested[kernel] = None
        return
    _requested[kernel] = types
    if _requester is not None:
        _requester(kernel, types)


def request_types(kernel: Any, types: tuple) -> None:
    """Ask the serving worker (if any) to compile ``kernel`` for numba argument ``types`` too (once per types): a
    kernel compiled for several types (``held.hold``, one per namedtuple) whose stand-in meets each of them."""
    if (kernel, types) in _asked:
        return
    _asked.add((kernel, types))
    _requested.setdefault(kernel, types)
    if _requester is not None and _compiling():
        _requester(kernel, types)


def while_compiling(running: Callable[[], bool], requester: Callable[[Any, tuple], None] | None = None) -> None:
    """The compile-ahead worker started (``loom.launch.compile_ahead.start`` or ``serve``): while ``running()`` is
    true, bind every per-step call site whose kernel is not ready to its twin (``rebind`` puts the kernels back).
    ``requester(kernel, types)``: a worker that compiles what it is asked (``serve``): each site's first call asks
    it for its kernel with that call's numba argument types."""
    global _compiling, _requester
    _compiling = running
    _requester = requester
    if not ENABLED or not running():
        return
    for site in _sites:
        if site[2] in _per_step and not ready(site[2]):
            _bind(site, _twins[site[2]] if requester is None else _Requesting(site))
    _bind_holders()


def _bind_holders() -> None:
    """Bind the ``last`` kernels' sites (``hold``) of every module with a per-step site on a twin to their stand-ins,
    ready or not: a stand-in reads the ``PyHeld`` that ``hold``'s stand-in makes, never a compiled ``Held`` (a cache
    that a short first session left half filled holds ``hold`` but not every kernel that takes what it makes)."""
    modules = [site[0] for site in _bound if site[2] in _per_step and site[2] not in _last]
    for site in _sites:
        if site[2] in _last and site not in _bound and any(site[0] is namespace for namespace in modules):
            _bind(site, _twins[site[2]])


def rebind(large: bool = False) -> int:
    """At a step boundary: put the compiled dispatcher back at each bound call site whose kernel is ready (compiled
    here, or cached: loaded here first, at most ``LOADS_PER_BOUNDARY`` a boundary; a ``last`` kernel's once its
    module's other sites are rebound), and at every per-step one when the worker stopped or ``large`` (the scene has
    more than ``PYTHON_MAX_SIZE`` particles); return how many were rebound. A set-up stand-in no worker will make ready stays
    (it asks at each build) but is no longer looked at. With nothing bound it costs one test."""
    if not _bound:
        return 0
    compiling = _compiling()
    done = loads = 0
    holders = _holders_loaded(compiling)
    if holders is None:                             # it loaded one of ``hold``'s types this boundary
        holders, loads = False, 1
    for site in list(_bound):
        namespace, name, kernel = site
        per_step = kernel in _per_step
        if kernel in _last and any(other[0] is namespace and other[2] in _per_step and other[2] not in _last
                                   for other in _bound):
            continue                                # its module's other twins still read what its twin makes
        if per_step and not holders and not large and kernel not in _last and _holds_here(namespace):
            continue                                # its kernel would make, or wait for, a ``hold`` mid-frame
        if per_step and (large or not compiling):
            pass
        elif not ready(kernel):
            if not compiling:
                _bound.remove(site)
            continue
        elif not kernel.signatures:                 # in the cache, not yet here: load it, a few per boundary
            if loads >= LOADS_PER_BOUNDARY:
                continue
            loads += 1
            if not _load(kernel):
                continue
        namespace[name] = kernel
        _bound.remove(site)
        done += 1
    return done


def _index_path(kernel: Any) -> str | None:
    """The path of numba's on-disk cache index of ``kernel`` (None when the cache's layout is not the one this was
    written for: another numba version)."""
    index = getattr(getattr(getattr(kernel, "_cache", None), "_cache_file", None), "_index_path", None)
    return index if isinstance(index, str) else None


def _index_stamp(kernel: Any) -> int | None:
    """The mtime [ns] of numba's cache index of ``kernel`` (None: none)."""
    index = _index_path(kernel)
    try:
        return os.stat(index).st_mtime_ns if index is not None else None
    except OSError:
        return None


def _holders_loaded(compiling: bool) -> bool | None:
    """Whether every type a ``last`` kernel (``hold``) was asked for by its stand-ins (``request_types``) is loaded
    in this process: a compiled kernel given a ``PyHeld`` makes the held struct with it, and one not loaded would be
    compiled, or waited for from the worker, in the middle of a frame. Loads one that is in numba's cache and returns
    None when it did (the boundary's load). True once the worker stopped (nothing more will come)."""
    missing = [(kernel, types) for kernel, types in _asked if kernel in _last and types not in kernel.overloads]
    if not missing or not compiling:
        return True
    kernel, types = missing[0]
    stamp = _index_stamp(kernel)
    if stamp is None or _probed.get((kernel, types)) == stamp:
        return False                                # nothing new in the cache since the last look
    _probed[(kernel, types)] = stamp
    from loom.launch import kernel_cache
    try:
        with kernel_cache.only_cached(wait=False):
            kernel.compile(types)
    except Exception:                               # not in the cache yet: the worker is at it
        return False
    return None if len(missing) > 1 else True


_probed: dict[tuple[Any, tuple], int] = {}          # (kernel, types) → the cache index's mtime when last tried


def _holds_here(namespace: dict[str, Any]) -> bool:
    """Whether the module of ``namespace`` calls a ``last`` kernel (``hold``) through a call site: its kernels take
    what its stand-in made (``PyHeld``)."""
    return any(site[0] is namespace and site[2] in _last for site in _sites)


def _load(kernel: Any) -> bool:
    """Load ``kernel`` from numba's cache for the argument types its first call asked for (``request``), never
    compiling it; True when it is loaded or no types were asked (it loads at its first call). The other call sites
    of the kernel see ``kernel.signatures`` and are rebound without a load."""
    types = _requested.get(kernel)
    if types is None:
        return True
    from loom.launch import kernel_cache
    try:
        with kernel_cache.only_cached(wait=False):
            kernel.compile(types)
    except Exception:                               # not loadable (another signature, a stale index): keep the twin
        return False
    return True


def unbind() -> None:
    """Put every call site's dispatcher back (tests; a run that turns ``ENABLED`` off)."""
    for namespace, name, kernel in _sites:
        namespace[name] = kernel
    _bound.clear()


def bound_to(module: str, name: str) -> Callable[..., Any] | None:
    """What the call site ``module.name`` is bound to now when it is not its kernel (a twin, a set-up stand-in);
    None when it calls the kernel."""
    for namespace, site_name, kernel in _sites:
        if site_name == name and namespace is sys.modules[module].__dict__ and namespace[name] is not kernel:
            return namespace[name]
    return None


def kernel_named(module: str, qualname: str) -> Any:
    """The numba dispatcher ``module.qualname`` even while its name is bound to a twin; None if there is none."""
    kernel = _by_name.get((module, qualname))
    if kernel is not None:
        return kernel
    return getattr(sys.modules.get(module), qualname, None)


def twin_of(kernel: Any) -> Callable[..., Any]:
    """``kernel``'s twin (KeyError when ``python_twin`` never registered it)."""
    return _twins[kernel]


def ready(kernel: Any) -> bool:
    """Whether calling ``kernel`` costs no compile: it is compiled in this process or cached on disk."""
    return bool(kernel.signatures) or cached(kernel)


def cold_per_step() -> bool:
    """Whether numba's cache is empty of Loom's per-step kernels: not one with a stand-in that some module calls is
    ready (a warm cache that lacks only some, a renderer's never drawn, is not cold)."""
    kernels = {kernel for _, _, kernel in _sites if kernel in _per_step}
    return bool(kernels) and not any(ready(kernel) for kernel in kernels)


def has_twin(kernel: Any) -> bool:
    """Whether ``kernel`` was registered with ``python_twin`` (a set-up or a per-step kernel)."""
    return kernel in _twins


def is_last(kernel: Any) -> bool:
    """Whether ``kernel`` was registered ``last`` (``hold``: its stand-in makes what the other stand-ins read)."""
    return kernel in _last


def is_per_step_kernel(kernel: Any) -> bool:
    """Whether ``kernel`` was registered with ``python_twin(..., per_step=True)``."""
    return kernel in _per_step


def cached(kernel: Any) -> bool:
    """Whether numba's on-disk cache holds an index for ``kernel`` (compiled by an earlier launch or the
    compile-ahead worker): loading it takes milliseconds. False when the cache's layout is not the one this
    was written for (another numba version)."""
    index = _index_path(kernel)
    return index is not None and os.path.exists(index)


def _frame_kernels() -> None:
    """Register the frame's own kernels (engine/ imports no launch code, so launch registers them): the colouring,
    a set-up kernel that ``color_groups`` calls, and the vertex normals, a per-step kernel (the renderer's surface
    declares its call site)."""
    from loom.engine import coloring, geometry
    python_twin(coloring._greedy_colors, size=lambda particles, offsets, particle_count: particle_count)
    called_from(coloring.__name__, coloring._greedy_colors)
    python_twin(geometry.vertex_normals_into, per_step=True, twin=geometry._vertex_normals_numpy)


_frame_kernels()
