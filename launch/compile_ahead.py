"""Compile ahead on the other core: a first launch compiles its kernels in two processes, not one.

A game's first launch on an empty numba cache compiles every kernel on its first call, one after another in the
game's own process: tens of seconds of a small game's first frame, and as much again when its first contacts
arrive (docs/performance.md, "Moved from docstrings"). The kernels a game compiles are the same every launch, so they
can be listed once: a *kernel list* (``record``) holds, for each numba function of Loom the game compiled, its module,
name and argument types, split into those of the first frame (the build, the first step and the first drawing) and those
of the next 60 frames (contacts, the coupling). ``start(path)`` launches a second process that compiles the list into
numba's on-disk cache, in the order that meets the game's own compiling halfway: the first frame's kernels from the last
to the first (the game compiles from the first), then the later ones from the last, then the kernels the game runs as
NumPy or Python on a cold launch (``loom.launch.cold_kernels``: the per-step ones, which it runs so only while the
worker is at work, then the set-up ones). The game loads each kernel the worker compiled before it needed it instead of
compiling it (numba looks in its cache first); nothing else is shared, so a stale or missing list only costs time. The
two processes mark the kernel each is compiling (a file per kernel in a temporary folder, gone once numba saved it): the
game, missing a kernel the worker is compiling, waits for it and loads it (``kernel_cache.miss_hooks``) instead of
compiling it a second time; the worker leaves a kernel the game is compiling for later.

A game without a kernel list (a user's own loop around a default ``App``) gets a *serving* worker instead
(``serve``, started by the App's step boundary, ``loom.launch.step_boundary``, when numba's cache holds none of
Loom's per-step kernels; ``LOOM_COLD_WORKER=0`` turns it off): each per-step call site's first call runs its NumPy
or Python stand-in and asks the worker for its kernel with that call's argument types (a request file in the
markers folder). The worker compiles the requests quickest first (``compile_seconds``: the prefabs' games' lists,
``DEFAULT_LISTS``, give each kernel's compile time, counted with every callee not yet compiled), so the game leaves
its stand-ins one by one as soon as it can; between requests it compiles those lists. At the end of the game's
first step its own core compiles too, for up to ``FIRST_FRAME_COMPILE`` seconds, the kernels whose stand-ins took
most of that step (``first_frame_compile``). The game loads each kernel at a step boundary once it is cached,
one a boundary (``cold_kernels.rebind``).

``start`` does nothing when every listed kernel is already in the cache (a warm launch pays two stat calls per
kernel), on a one-core machine, or with ``LOOM_COMPILE_AHEAD=0``; the worker exits with the game. The games pass
their list to ``run_app(kernels=...)``; ``loom.launch.compile_ahead.record("mygame", "mygame.kernels")`` writes one
for a game module with a ``main(argv)`` (about a minute and a half: two cold runs), ``python -m loom.games
--kernel-lists`` all of the demos'.

A list is a pickle of numba types: it is read with an unpickler that builds only numba types, NumPy-free
built-ins and named tuples of ``loom`` modules, never anything that runs code (``load``).
"""
from __future__ import annotations

import argparse
import atexit
import gc
import importlib
import io
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from numba.core import event

from loom.launch import cold_kernels
from loom.launch.kernel_cache import is_loom_function

COMMAND = "import sys; from loom.launch import compile_ahead; sys.exit(compile_ahead.main(sys.argv[1:]))"
"""Python source the worker's and the recorder's processes run (``python -c COMMAND work LIST``: ``main``)."""

ENV_VAR = "LOOM_COMPILE_AHEAD"
"""Environment variable: "0" turns the compile-ahead worker off."""

LATER_FRAMES = 60
"""Frames the second recording run takes: the kernels of the first contacts and the coupling compile in them."""

WAIT_LIMIT = 60.0
"""Longest the game waits for the worker to finish a kernel it needs [s] before compiling it itself; for each
kernel at most 2 s + 3 × the seconds its compile took when the list was recorded (a worker starved by a busy
machine is not waited for)."""

VERSION = 1
"""Format of a kernel list (a dict with this ``version``); another version is refused, never guessed at."""


@dataclass(frozen=True)
class Entry:
    """One compiled signature: the kernel's module and qualified name, its numba argument types, and the seconds
    its compile took when the list was recorded (its own, its callees' left out; not part of its identity)."""

    module: str
    qualname: str
    args: tuple
    seconds: float = field(default=0.0, compare=False)
    depth: int = field(default=0, compare=False)
    """How many Loom kernels were compiling around it (0: the game called it; 1: a kernel that one calls, …)."""


def _is_loom(dispatcher: Any) -> bool:
    return is_loom_function(getattr(dispatcher, "py_func", None))


class _Recorder(event.Listener):
    """numba compile-event listener: the ``Entry`` of every Loom kernel compiled, callees first."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self._stack: list[list] = []                # [start, callees' seconds, a Loom kernel?] of each compile

    def on_start(self, ev: Any) -> None:
        self._stack.append([time.perf_counter(), 0.0, _is_loom(ev.data["dispatcher"])])

    def on_end(self, ev: Any) -> None:
        start, callees, loom = self._stack.pop()
        took = time.perf_counter() - start
        if self._stack:
            self._stack[-1][1] += took
        if loom:
            f = ev.data["dispatcher"].py_func
            depth = sum(1 for frame in self._stack if frame[2])
            entry = Entry(f.__module__, f.__qualname__, tuple(ev.data["args"]), round(took - callees, 3), depth)
            if entry not in self.entries:
                self.entries.append(entry)


def _rows(entries: Sequence[Entry]) -> list[tuple]:
    """``entries`` as the plain tuples a kernel list pickles (``Entry(*row)`` builds one back)."""
    return [(e.module, e.qualname, e.args, e.seconds, e.depth) for e in entries]


def _record_run(game: str, argv: list[str], out: str) -> None:
    """In this process (an empty cache): run ``game``'s ``main(argv)`` and pickle the entries it compiled."""
    cold_kernels.ENABLED = False                 # the set-up kernels compile too, so the list holds them
    recorder = _Recorder()
    event.register("numba:compile", recorder)
    try:
        importlib.import_module(game).main(argv)
    except SystemExit as exc:
        if exc.code not in (None, 0):
            raise
    Path(out).write_bytes(pickle.dumps(_rows(recorder.entries)))


def record(game: str, path: str | os.PathLike, *, frames: int = LATER_FRAMES) -> dict[str, int]:
    """Write the kernel list of ``game`` (a module with ``main(argv)``, e.g. ``"loom.games.cape"``) to ``path``:
    two headless runs, each in its own process on an empty numba cache: one frame with a screenshot (the first
    frame's kernels, the renderer's included), then ``frames`` frames (the later ones). Returns the counts."""
    runs = {}
    with tempfile.TemporaryDirectory(prefix="loom-kernel-list-") as folder:
        for name, argv in (("first", ["--frames", "1", "--screenshot", str(Path(folder) / "frame.png")]),
                           ("later", ["--frames", str(frames)])):
            cache, out = Path(folder) / f"cache-{name}", Path(folder) / f"{name}.pickle"
            env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), ENV_VAR: "0", "SDL_AUDIODRIVER": "dummy"}
            subprocess.run([sys.executable, "-c", COMMAND, "_record", game, str(out), "--", "--headless", "--report",
                            "json", *argv], env=env, check=True, capture_output=True)
            runs[name] = [Entry(*row) for row in _safe_loads(out.read_bytes())]
    first = runs["first"]
    later = [e for e in runs["later"] if e not in first]     # (a callee of a dropped caller keeps its depth)
    data = {"version": VERSION, "game": game, "first": _rows(first), "later": _rows(later)}
    Path(path).write_bytes(pickle.dumps(data))
    return {"first": len(first), "later": len(later)}


class _TypesOnly(pickle.Unpickler):
    """Builds numba types, tuples of them and Loom's named tuples; refuses every other global."""

    def find_class(self, module: str, name: str) -> Any:
        from numba.core import types
        if (module, name) in (("copyreg", "_reconstructor"), ("builtins", "object"),
                              ("numba.core.types.abstract", "_type_reconstructor")):
            return super().find_class(module, name)
        if module.startswith("numba.core.types.") or module == "loom" or module.startswith("loom."):
            found = getattr(sys.modules.get(module) or importlib.import_module(module), name, None)
            if isinstance(found, type) and (issubclass(found, types.Type)
                                            or (issubclass(found, tuple) and hasattr(found, "_fields"))):
                return found
        raise pickle.UnpicklingError(f"kernel list: {module}.{name} is not a numba type or a Loom named tuple")


def _safe_loads(data: bytes) -> Any:
    return _TypesOnly(io.BytesIO(data)).load()


def load(path: str | os.PathLike) -> tuple[list[Entry], list[Entry]]:
    """Read a kernel list: (first frame's entries, later entries), each in the order the game compiled them.
    Raises ValueError naming the file for anything that is not a kernel list of this ``VERSION``."""
    try:
        data = _safe_loads(Path(path).read_bytes())
    except (pickle.UnpicklingError, EOFError, ImportError, AttributeError, TypeError, ValueError) as exc:
        raise ValueError(f"kernel list {path}: not readable ({exc})") from None
    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise ValueError(f"kernel list {path}: not a version {VERSION} kernel list")
    try:
        return tuple([Entry(m, q, tuple(a), float(t), int(d)) for m, q, a, t, d in data[part]]
                     for part in ("first", "later"))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"kernel list {path}: malformed ({exc})") from None


def worker_order(first: Sequence[Entry], later: Sequence[Entry], set_up: set[tuple[str, str]],
                 per_step: set[tuple[str, str]] = frozenset()) -> list[Entry]:
    """The worker's order (module docstring): the first frame's kernels from the last to the first, then the later
    ones from the last call to the first, then the per-step kernels the game runs as NumPy or Python meanwhile
    (``(module, qualname)`` in ``per_step``), the set-up kernels (in ``set_up``) at the end: a per-step twin costs
    the game a few milliseconds a frame, while the contact tree the game meets in its next frames stalls it until
    compiled, so the contact tree comes first.

    A list holds each call tree in the order numba finished compiling it (callees first, ``depth`` telling which
    kernel called which). For the later kernels (the contacts: one call tree of 14 kernels)
    the worker takes the trees and each one's callees from the last, but still a callee before its caller: each
    kernel it finishes is in the cache on its own, so the game, compiling the same tree from its first callee on,
    never waits for the whole tree, only for the kernel under way (taken caller first, the game would wait for the
    worker's whole contact tree). The first frame's are taken plainly last to first: its trees are small, and
    its largest kernels (the solver's) come early to the worker that way (faster than mirrored or longest first:
    docs/performance.md, "Moved from docstrings")."""
    order = list(reversed(first)) + [e for e in _mirrored(later) if e not in first]
    twins = set_up | per_step
    return ([e for e in order if (e.module, e.qualname) not in twins]
            + [e for e in order if (e.module, e.qualname) in per_step]
            + [e for e in order if (e.module, e.qualname) in set_up - per_step])


UNKNOWN_SECONDS = 5.0
"""[s] what a serving worker takes a requested kernel missing from its lists to cost to compile (its order only)."""


def _cost(e: Entry, own: dict[tuple[str, str], float]) -> float:
    """``compile_seconds`` of the entry's kernel (``UNKNOWN_SECONDS`` when not known)."""
    kernel = cold_kernels.kernel_named(e.module, e.qualname)
    seconds = compile_seconds(kernel, own) if hasattr(kernel, "py_func") else None
    return UNKNOWN_SECONDS if seconds is None else seconds


def own_seconds(entries: Sequence[Entry]) -> dict[tuple[str, str], float]:
    """Seconds each listed kernel took to compile on its own, callees left out [s], by (module, qualname) (the
    longest of its signatures)."""
    own: dict[tuple[str, str], float] = {}
    for e in entries:
        key = (e.module, e.qualname)
        own[key] = max(own.get(key, 0.0), e.seconds)
    return own


def compile_seconds(kernel: Any, own: dict[tuple[str, str], float]) -> float | None:
    """What compiling ``kernel`` would cost now [s]: the ``own`` seconds of it and of every kernel it calls, directly
    or not (the numba dispatchers its source names), that is not compiled here or cached; None when it is missing
    from ``own`` (its cost is unknown). A list gives a callee's seconds only in the first tree that compiled it: a
    kernel whose tree there is small may still call a large one (the yarns' pass after the collisions calls the
    solve's yarn groups), which this counts."""
    total = 0.0
    seen: set[int] = set()
    stack = [kernel]
    while stack:
        k = stack.pop()
        if id(k) in seen:
            continue
        seen.add(id(k))
        f = k.py_func
        seconds = own.get((f.__module__, f.__qualname__))
        if seconds is None:
            if k is kernel:
                return None
            seconds = 0.0                              # (an unlisted callee: a helper too small to list)
        if not (k.signatures or cold_kernels.cached(k)):
            total += seconds
        names = f.__globals__
        stack += [v for name in f.__code__.co_names if hasattr(v := names.get(name), "py_func")
                  and hasattr(v, "signatures")]
    return total


def _mirrored(entries: Sequence[Entry]) -> list[Entry]:
    """Call trees given in post-order with depths, visited last child first, each callee before its caller."""
    pending: list[tuple[Entry, list]] = []            # (entry, its children) not yet given a caller
    for e in entries:
        children = []
        while pending and pending[-1][0].depth > e.depth:
            children.insert(0, pending.pop())
        pending.append((e, children))
    out: list[Entry] = []

    def visit(node: tuple[Entry, list]) -> None:
        for child in reversed(node[1]):
            visit(child)
        out.append(node[0])

    for root in reversed(pending):
        visit(root)
    return out


def _dispatchers() -> dict[tuple[str, str], Any]:
    """Every numba dispatcher of a Loom module alive in this process, by (module, qualified name): those of
    module attributes and those a module built under another name (the contact kernels' basic variants). The test
    is on ``type(d)``: ``isinstance`` on a dead weak proxy among the heap's objects raises ReferenceError."""
    from numba.core.registry import CPUDispatcher
    return {(d.py_func.__module__, d.py_func.__qualname__): d for d in gc.get_objects()
            if issubclass(type(d), CPUDispatcher) and _is_loom(d)}


def missing(entries: Sequence[Entry]) -> int:
    """How many of ``entries`` name a kernel of an imported module (an attribute of it) that numba's on-disk
    cache has no index for: what a launch would compile."""
    count = 0
    for e in entries:
        kernel = cold_kernels.kernel_named(e.module, e.qualname)       # its name may be bound to a twin
        if kernel is not None and hasattr(kernel, "py_func") and not cold_kernels.ready(kernel):
            count += 1
    return count


def first_frame_ready() -> float | None:
    """Fraction of the running worker's list's first-frame kernels that are ready, 0–1: compiled in this process or
    in numba's on-disk cache (by either process); kernels with a twin the game runs meanwhile left out. None
    when no worker runs. The loading view's bar shows it (``CompileProgress.elsewhere``): this process's own
    compiles are only part of a first launch's with a worker."""
    if not _running():
        return None
    ready = total = 0
    for e in _first_frame:
        kernel = cold_kernels.kernel_named(e.module, e.qualname)
        if kernel is not None and cold_kernels.ENABLED and cold_kernels.has_twin(kernel):
            continue                                  # a twin stands in for it (set-up or per-step)
        total += 1
        if kernel is not None and (kernel.signatures or cold_kernels.cached(kernel)):
            ready += 1
    return ready / total if total else 1.0


def _name(py_func: Any) -> str:
    """A kernel's mark file name: its module and qualified name."""
    return f"{py_func.__module__}.{py_func.__qualname__}".replace(os.sep, "_")


class _Marks(event.Listener):
    """Marks each Loom kernel this process starts compiling: a file ``prefix + name`` in ``folder``, removed
    once numba saved the kernel to its cache (``_unmark_on_save``)."""

    def __init__(self, folder: Path, prefix: str) -> None:
        self.folder, self.prefix = folder, prefix

    def on_start(self, ev: Any) -> None:
        dispatcher = ev.data["dispatcher"]
        if _is_loom(dispatcher):
            try:
                (self.folder / (self.prefix + _name(dispatcher.py_func))).touch()
            except OSError:                        # the folder is gone (the worker ended): nothing to tell
                pass

    def on_end(self, ev: Any) -> None:
        pass


def _unmark_on_save(marks: _Marks) -> None:
    """Make numba's cache remove this process's mark of a Loom kernel (in ``marks.folder``, which a later worker
    may change) once it has saved it."""
    from numba.core import caching
    save = caching.Cache.save_overload

    def save_overload(self: Any, sig: Any, data: Any) -> None:
        try:
            save(self, sig, data)
        finally:
            py_func = getattr(self, "_py_func", None)
            if py_func is not None:
                try:
                    (marks.folder / (marks.prefix + _name(py_func))).unlink(missing_ok=True)
                except OSError:
                    pass

    caching.Cache.save_overload = save_overload


def _wait_for_worker(cache: Any) -> bool:
    """``kernel_cache`` miss hook of the game: when the worker is compiling the kernel of ``cache`` (numba's
    ``Cache``), wait until it saved it (or stopped, or ``WAIT_LIMIT``); True when it did."""
    py_func = getattr(cache, "_py_func", None)
    if _markers is None or _worker is None or py_func is None:
        return False
    mark = _markers / ("w-" + _name(py_func))
    recorded = _recorded.get((py_func.__module__, py_func.__qualname__), 1.0)
    deadline = time.monotonic() + min(WAIT_LIMIT, 2.0 + 3.0 * recorded)   # a starved worker: compile it here
    waited = False
    while mark.exists() and _worker.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
        waited = True
    return waited and not mark.exists()


_worker: subprocess.Popen | None = None
_markers: Path | None = None
_marks: _Marks | None = None
"""The game's marks listener, installed with the first worker (a later worker gets a folder of its own)."""
_recorded: dict[tuple[str, str], float] = {}
_first_frame: list[Entry] = []            # the running worker's first-frame entries (first_frame_ready)


def start(path: str | os.PathLike | None) -> subprocess.Popen | None:
    """Start the compile-ahead worker on kernel list ``path`` unless it has nothing to do (module docstring);
    return it (None when not started). It inherits the environment (``NUMBA_CACHE_DIR``) and ends with this
    process. A list that cannot be read starts nothing: one line on stderr, the launch goes on."""
    global _worker, _markers, _marks
    if path is None or os.environ.get(ENV_VAR, "1").strip() == "0" or (os.cpu_count() or 1) < 2:
        return None
    if _worker is not None and _worker.poll() is None:
        return _worker
    try:
        first, later = load(path)
    except (OSError, ValueError) as exc:
        print(f"loom: compile ahead: {exc}", file=sys.stderr)
        return None
    if not missing(first + later):
        return None
    _recorded.update({(e.module, e.qualname): e.seconds for e in first + later})
    _first_frame[:] = list(dict.fromkeys(first))
    _launch("work", str(path))
    cold_kernels.while_compiling(_running)
    return _worker


def _launch(*command: str) -> None:
    """Start the worker process (``main(command + (pid, markers))``) with a fresh markers folder, and register this
    process's compile marks, cache hook and exit handler (once)."""
    global _worker, _markers, _marks
    from loom.launch import kernel_cache
    _markers = Path(tempfile.mkdtemp(prefix="loom-compiling-"))
    _worker = subprocess.Popen([sys.executable, "-c", COMMAND, *command, str(os.getpid()), str(_markers)],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if _marks is None:
        _marks = _Marks(_markers, "m-")
        event.register("numba:compile", _marks)
        _unmark_on_save(_marks)
        kernel_cache.miss_hooks.append(_wait_for_worker)
        atexit.register(stop)
    _marks.folder = _markers


SERVE_ENV = "LOOM_COLD_WORKER"
"""Environment variable: "0" keeps an App from starting a serving worker itself (``serve``): every kernel then
compiles in the game's frame at its first call, and a first launch is as deterministic as a warm one; unset or "1"
(the default) it starts one on an empty cache. The tests set "0": a unit test's motion must not depend on the
state of numba's cache."""

POLL = 0.02
"""[s] how often a serving worker looks for new requests."""

_served = 0                               # requests written to the serving worker


def serve() -> subprocess.Popen | None:
    """Start a *serving* worker for a game without a kernel list (an App with ``LaunchPlugin``, on its first step
    on an empty cache: ``loom.launch.step_boundary``): it compiles what the game asks for, in order, while the
    game runs its per-step kernels' stand-ins (``cold_kernels.while_compiling``: each call site's first call asks
    for its kernel with that call's argument types). Nothing is started (None) with ``LOOM_COLD_WORKER=0``, with
    ``LOOM_COMPILE_AHEAD=0`` or ``LOOM_COLD_PYTHON=0``, on a one-core machine, when a worker already runs, or when
    numba's cache holds some per-step kernel with a stand-in and every one the prefabs' games' lists name (a warm
    cache; one a short first session left half filled, its worker ended with the game, starts one). The worker ends
    with the game."""
    if (os.environ.get(SERVE_ENV, "1").strip() == "0" or os.environ.get(ENV_VAR, "1").strip() == "0"
            or not cold_kernels.ENABLED or (os.cpu_count() or 1) < 2 or _running()
            or not (cold_kernels.cold_per_step() or _listed_per_step_missing())):
        return None
    _first_frame.clear()
    _launch("serve")
    cold_kernels.while_compiling(_running, _request)
    _warm_numba()
    return _worker


def _warm_numba() -> None:
    """Fill numba's typing and target registries now, while the scene is built: the first kernel loaded from the
    cache at a step boundary would otherwise pay for it (about 40 ms of one frame on a 2-core machine, against
    2–6 ms for each load after it)."""
    from numba.core.registry import cpu_target
    cpu_target.typing_context.refresh()
    cpu_target.target_context.refresh()


def _seconds_from_env(name: str, default: float) -> float:
    """A non-negative number of seconds from environment variable ``name`` (``default`` when unset or not one)."""
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if value >= 0.0 else default


FIRST_FRAME_COMPILE = _seconds_from_env("LOOM_FIRST_FRAME_COMPILE", 3.5)
"""[s] how long a game with a serving worker may compile kernels itself at the end of its first step, beside the
worker (``first_frame_compile``; environment ``LOOM_FIRST_FRAME_COMPILE``, 0: none): its first frame then comes
about 3.5 s later, within the 5 s a first launch may take on an idle 2-core machine, and its next frames run fewer
stand-ins (the worst of them 28–45 ms against 47–48 ms without, docs/performance.md, "Hitches")."""


def first_frame_compile(budget: float = FIRST_FRAME_COMPILE) -> list[str]:
    """At the end of a serving worker's game's first step: compile here, beside the worker (which takes the quickest
    first), the kernels whose stand-ins took most of that step (``cold_kernels.first_cost``: every call, so a solve
    called each substep outweighs the wind called once a step), each whose compile time with its callees
    (``compile_seconds``, from ``default_lists``) fits what is left of ``budget`` [s]; a kernel missing from the lists
    (its cost unknown), one the worker has cached and ``hold`` (its stand-in's types are the worker's) are skipped.
    Why: the frames after the first run on stand-ins until the worker is done (a minute or more), and those of a
    cloth just spawned, falling and settling, are the slowest; the game's own core is free while its first frame is
    allowed to take seconds. Then numba's garbage is collected and the survivors frozen (``gc.freeze``). Returns the
    names compiled. Every call site still timing its calls goes to its plain stand-in (``first_step_done``), with a
    worker or not."""
    cold_kernels.first_step_done()
    if budget <= 0.0 or not _running() or cold_kernels._requester is None:
        return []
    first, later = _default_entries()
    own = own_seconds(first + later)
    began = time.perf_counter()
    done = []
    spent = cold_kernels.first_cost                 # [s] each stand-in's share of the first step
    for kernel in sorted(spent, key=lambda k: -spent[k]):
        types = cold_kernels._requested.get(kernel)
        f = kernel.py_func
        seconds = compile_seconds(kernel, own)
        left = budget - (time.perf_counter() - began)
        if types is None or seconds is None or seconds > left or cold_kernels.ready(kernel) \
                or cold_kernels.is_last(kernel):
            continue
        try:
            kernel.compile(types)
        except Exception:                  # types it does not take: it stays on its stand-in
            continue
        done.append(f.__qualname__)
    if done:                               # numba's compile leaves a heap of long-lived objects that every full
        gc.collect()                       # collection would scan again mid-game (60 ms a frame): collected now,
        gc.freeze()                        # in the first frame, and the survivors kept out of later collections
    return done


def _listed_per_step_missing() -> bool:
    """Whether a per-step kernel with a stand-in that ``default_lists`` name is not in numba's cache."""
    first, later = _default_entries()
    for e in first + later:
        kernel = cold_kernels.kernel_named(e.module, e.qualname)
        if hasattr(kernel, "py_func") and cold_kernels.is_per_step_kernel(kernel) and not cold_kernels.ready(kernel):
            return True
    return False


def _request(kernel: Any, types: tuple) -> None:
    """Ask the serving worker for ``kernel`` with numba argument ``types``: a request file in the markers folder
    (written whole, then renamed: the worker never reads half of one)."""
    global _served
    if _markers is None or not _running():
        return
    f = kernel.py_func
    _served += 1
    path = _markers / f"q-{_served:06d}.pickle"
    try:
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(pickle.dumps(_rows([Entry(f.__module__, f.__qualname__, tuple(types))])))
        os.replace(tmp, path)
    except OSError:                       # the folder is gone (the worker ended): the game compiles it itself
        pass


DEFAULT_LISTS = ("cape", "flag")
"""The demos' kernel lists a serving worker compiles after the game's requests: those of the prefabs' games."""


def default_lists() -> list[Path]:
    """The kernel lists a serving worker compiles after the game's requests: ``DEFAULT_LISTS`` (``games/kernels``), whose
    kernels (the solve, the wind, the contacts, the coupling, the limit) an everyday scene meets in its first
    frames. A kernel the game never calls costs the worker's core only."""
    folder = Path(__file__).resolve().parent.parent / "games" / "kernels"
    return [folder / f"{name}.pickle" for name in DEFAULT_LISTS if (folder / f"{name}.pickle").exists()]


def _default_entries() -> tuple[list[Entry], list[Entry]]:
    """The entries of ``default_lists``, (first frame's, later), each once (a list that cannot be read is left out)."""
    first: list[Entry] = []
    later: list[Entry] = []
    for path in default_lists():
        try:
            f, l = load(path)
        except (OSError, ValueError):
            continue
        first += [e for e in f if e not in first]
        later += [e for e in l if e not in later and e not in first]
    return first, later


def serving(parent: int, markers: str | os.PathLike) -> int:
    """The serving worker: compile each request (``_request``) in the order made, and between requests the entries
    of ``default_lists`` in ``worker_order`` (the first frames' kernels at the game's priority, the rest niced),
    until ``parent`` exits; an entry the game is compiling (its mark) is put off. Returns how many it compiled."""
    folder = Path(markers)
    marks = _Marks(folder, "w-")
    event.register("numba:compile", marks)
    _unmark_on_save(marks)
    first, later = _default_entries()
    found, set_up, per_step = _kernels_of(first + later)          # (the modules the requests name, too, while
    listed = [e for e in worker_order(first, later, set_up, per_step)   # the game builds its scene)
              if (e.module, e.qualname) not in set_up | per_step]
    own = own_seconds(first + later)
    asked: list[Entry] = []
    first_frame = set(first)
    seen: set[str] = set()
    put_off: set[Entry] = set()
    niced = False
    done = 0
    log = os.environ.get(LOG_ENV)
    while os.getppid() == parent:
        try:
            names = sorted(p.name for p in folder.glob("q-*.pickle") if p.name not in seen)
        except OSError:
            break
        for name in names:
            seen.add(name)
            try:
                asked += [Entry(*row) for row in _safe_loads((folder / name).read_bytes())]
            except (OSError, pickle.UnpicklingError, EOFError, ImportError, AttributeError, TypeError, ValueError):
                continue
        queue: list[Entry] = []
        if asked:                          # the quickest to compile first: the game leaves its stand-ins soonest
            asked.sort(key=lambda e: _cost(e, own))
            queue = [asked.pop(0)]
        if not queue:
            if not listed:
                time.sleep(POLL)
                continue
            entry = listed.pop(0)
            if not niced and entry not in first_frame:
                niced = _lower_priority()
            queue = [entry]
        for e in queue:
            kernel = cold_kernels.kernel_named(e.module, e.qualname)
            if not hasattr(kernel, "overloads"):
                try:
                    importlib.import_module(e.module)
                except ImportError:
                    continue
                kernel = cold_kernels.kernel_named(e.module, e.qualname)
                if not hasattr(kernel, "overloads"):
                    kernel = _dispatchers().get((e.module, e.qualname))
            if kernel is None or e.args in kernel.overloads:     # (a cached kernel for other types is compiled:
                continue                                          # ``hold`` has one signature per namedtuple)
            if e not in put_off and (folder / ("m-" + _name(kernel.py_func))).exists():   # the game compiles it
                put_off.add(e)
                listed.append(e)
                continue
            began = time.perf_counter()
            try:
                kernel.compile(e.args)
                done += 1
            except Exception:              # types the kernel does not take: the game keeps its stand-in
                continue
            _log(log, f"{time.time():.3f} {time.perf_counter() - began:7.3f} s {e.module}.{e.qualname}")
    return done


LOG_ENV = "LOOM_WORKER_LOG"
"""Environment variable: a file a serving worker appends a line to for each kernel it compiled or loaded (time,
seconds, name): to see what a cold launch waits for."""


def _log(path: str | None, line: str) -> None:
    """Append ``line`` to the file ``path`` (``LOG_ENV``; None: nothing), never failing."""
    if path:
        try:
            with open(path, "a") as out:
                out.write(line + "\n")
        except OSError:
            pass


def _running() -> bool:
    """Whether the worker is at work (``cold_kernels``' per-step twins run meanwhile)."""
    return _worker is not None and _worker.poll() is None


def stop() -> None:
    """End the worker, if one runs (at exit: a worker's cache files are whole; numba writes each at once)."""
    global _worker, _markers
    if _worker is not None and _worker.poll() is None:
        _worker.terminate()
        try:
            _worker.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            _worker.kill()
    _worker = None
    if _markers is not None:
        shutil.rmtree(_markers, ignore_errors=True)
    _markers = None


def _lower_priority() -> bool:
    """Run at a lower priority from now on (past the first frame's kernels: the game is running); True."""
    try:
        os.nice(10)
    except OSError:
        pass
    return True


def _kernels_of(entries: list[Entry]) -> tuple[dict, set, set]:
    """Import the modules ``entries`` name; return Loom's dispatchers by (module, qualname), and the keys of those
    with a set-up twin and of those with a per-step stand-in."""
    for module in dict.fromkeys(e.module for e in entries):
        try:
            importlib.import_module(module)
        except ImportError:
            pass
    found = _dispatchers()
    set_up = {key for key, d in found.items() if cold_kernels.has_twin(d) and not cold_kernels.is_per_step_kernel(d)}
    per_step = {key for key, d in found.items() if cold_kernels.is_per_step_kernel(d)}
    return found, set_up, per_step


def work(path: str | os.PathLike, parent: int | None = None, markers: str | os.PathLike | None = None) -> int:
    """The worker: compile every entry of kernel list ``path`` not yet in the cache, in ``worker_order``: the
    first frame's at the game's priority (on a busy machine a lower one would starve it), the later ones at a
    lower priority (the game is running by then); stop when ``parent`` (a process id) has exited.
    ``markers``: the folder where both processes mark what they compile (the module docstring); an entry the
    game is compiling is put off to the end. Returns how many it compiled."""
    folder = None if markers is None else Path(markers)
    if folder is not None:
        marks = _Marks(folder, "w-")
        event.register("numba:compile", marks)
        _unmark_on_save(marks)
    first, later = load(path)
    found, set_up, per_step = _kernels_of(first + later)
    done = 0
    queue = worker_order(first, later, set_up, per_step)
    put_off: set[Entry] = set()
    first_frame = set(first)
    niced = False
    while queue:
        entry = queue.pop(0)
        if parent is not None and os.getppid() != parent:
            break
        if not niced and entry not in first_frame:
            niced = _lower_priority()
        kernel = found.get((entry.module, entry.qualname))
        if kernel is None or entry.args in kernel.overloads or cold_kernels.cached(kernel):
            continue
        if (folder is not None and entry not in put_off
                and (folder / ("m-" + _name(kernel.py_func))).exists()):    # the game compiles it now
            put_off.add(entry)
            queue.append(entry)
            continue
        try:
            kernel.compile(entry.args)
            done += 1
        except Exception:                  # a stale entry (the kernel changed since the list was recorded)
            continue
    return done


def main(argv: Sequence[str] | None = None) -> int:
    """The command line of the worker and recorder processes (``work LIST [PARENT MARKS]``, ``record GAME OUT``)."""
    p = argparse.ArgumentParser(prog="compile_ahead", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("record", help="write a game's kernel list (two cold runs)")
    r.add_argument("game", help="module with main(argv), e.g. loom.games.cape")
    r.add_argument("out", help="the kernel list to write")
    r.add_argument("--frames", type=int, default=LATER_FRAMES, help=f"frames of the later run ({LATER_FRAMES})")
    w = sub.add_parser("work", help="compile a kernel list into numba's cache (what start() runs)")
    w.add_argument("list")
    w.add_argument("parent", nargs="?", type=int, default=None)
    w.add_argument("markers", nargs="?", default=None)
    s = sub.add_parser("serve", help="compile what the game asks for (what serve() runs)")
    s.add_argument("parent", type=int)
    s.add_argument("markers")
    i = sub.add_parser("_record")
    i.add_argument("game")
    i.add_argument("out")
    i.add_argument("rest", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    if args.command == "record":
        if args.frames < 1:
            p.error(f"--frames = {args.frames}: must be >= 1")
        print(record(args.game, args.out, frames=args.frames))
    elif args.command == "work":
        work(args.list, args.parent, args.markers)
    elif args.command == "serve":
        serving(args.parent, args.markers)
    else:
        _record_run(args.game, [a for a in args.rest if a != "--"], args.out)
    return 0

