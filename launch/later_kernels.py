"""Kernels a scene needs after its first frame, loaded before it: no cache load or compile in the middle of play.

A scene's first step loads (or compiles) its kernels, but not all of them: the first contact with a pymunk body
(frame 1 in a game whose bodies are synced after a step), the deformation limit's first overstretch (frame 5 of
the cape) and a thread trial's parallel kernels each load theirs when they first happen, inside the
game's frame: a visible stall on a warm cache, seconds of compiling on a cold one. Which kernels those are is only known
by running the scene, so it is recorded: after an App's first step, every Loom kernel signature loaded from numba's
cache or compiled is appended to the scene's *later list*, a small file in numba's cache folder (``NUMBA_CACHE_DIR``,
else ``launch/__pycache__``) named after the scene (the program and the App's systems). At the next launch, the App's
first step (``prepare``) loads every kernel of that list first: the first frame pays for them and the frames after it
load nothing. An empty cache has no list (it lives with the cache); an entry whose kernel is not in the cache
(the code changed since it was recorded) is skipped, never compiled at the first step; at most
``MAX_ENTRIES`` are kept (the newest).

``LOOM_LATER_KERNELS=0`` turns recording and loading off.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import sys
from pathlib import Path
from typing import Any

from numba.core import event

from loom.launch import cold_kernels, kernel_cache
from loom.launch.compile_ahead import Entry, _dispatchers, _rows, _safe_loads

ENV_VAR = "LOOM_LATER_KERNELS"
"""Environment variable: "0" turns the later lists off."""
MAX_ENTRIES = 64
"""Most signatures a later list keeps (the newest): a program running many scenes (a test suite) loads at most
these at a first step."""
FOLDER = "loom-later-kernels"
"""Subfolder of numba's cache folder holding the later lists."""

_recording = False                       # an App is past its first step: a kernel loaded now is "later"
_seen: list[Entry] = []                  # later signatures met in this process, in order


ENABLED = os.environ.get(ENV_VAR, "1").strip() != "0"
"""Whether later lists are recorded and loaded (``LOOM_LATER_KERNELS`` is not "0" at import)."""


def folder() -> Path:
    """Where the later lists live: ``<numba's cache folder>/loom-later-kernels``."""
    import numba
    base = numba.config.CACHE_DIR or str(Path(__file__).resolve().parent / "__pycache__")
    return Path(base) / FOLDER


def scene_key(app: Any) -> str:
    """A name for ``app``'s scene: a hash of the program (``sys.argv[0]``) and the names of its systems."""
    from loom.engine.schedule import Stage
    names = sorted({getattr(s, "name", None) or getattr(s, "__name__", "?")
                    for stage in Stage for s, _ in app.schedule.runs(stage)})
    text = "\n".join([os.path.basename(sys.argv[0] if sys.argv and sys.argv[0] else "-"), *names])
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def _note(entry: Entry) -> None:
    if _recording and entry not in _seen:
        _seen.append(entry)


def _on_load(py_func: Any, sig: Any) -> None:
    _note(Entry(py_func.__module__, py_func.__qualname__, tuple(sig)))


class _Compiles(event.Listener):
    """Notes each Loom kernel signature compiled while an App is past its first step."""

    def on_start(self, ev: Any) -> None:
        py_func = getattr(ev.data["dispatcher"], "py_func", None)
        if _recording and kernel_cache.is_loom_function(py_func):
            _note(Entry(py_func.__module__, py_func.__qualname__, tuple(ev.data["args"])))

    def on_end(self, ev: Any) -> None:
        pass


_installed = False


def _install() -> None:
    global _installed
    if not _installed:
        _installed = True
        kernel_cache.load_hooks.append(_on_load)
        event.register("numba:compile", _Compiles())


def read(path: Path) -> list[Entry]:
    """The entries of the later list ``path`` ([] when it is missing or unreadable: it only saves time)."""
    try:
        return [Entry(m, q, tuple(a), float(t), int(d)) for m, q, a, t, d in _safe_loads(path.read_bytes())]
    except (OSError, pickle.UnpicklingError, EOFError, ImportError, AttributeError, TypeError, ValueError):
        return []


class Record:
    """One App's part in the later lists (held by ``loom.launch.step_boundary`` with the App's other per-step
    state, so it goes with the App)."""

    __slots__ = ("saved",)

    def __init__(self) -> None:
        self.saved: int | None = None
        """How many of the process's later signatures the App's scene list holds (None before its first step)."""


def prepare(app: Any) -> int:
    """Before ``app``'s first step (``step_boundary`` calls it once per App): load every kernel of its scene's
    later list (module docstring) that numba's cache holds; returns the signatures loaded."""
    if not ENABLED:
        return 0
    _install()
    entries = read(folder() / f"{scene_key(app)}.pickle")
    found: dict[tuple[str, str], Any] | None = None
    done = 0
    for e in entries:
        kernel = cold_kernels.kernel_named(e.module, e.qualname)     # its name may be bound to a twin
        if not hasattr(kernel, "overloads"):
            if found is None:
                found = _dispatchers()               # kernels not bound to a module name (contact variants)
            kernel = found.get((e.module, e.qualname))
        if kernel is None or e.args in kernel.overloads:
            continue
        try:
            with kernel_cache.only_cached():         # loaded from numba's cache, never compiled here
                kernel.compile(e.args)
            done += 1
        except Exception:                            # a stale entry (the kernel changed since it was recorded:
            continue                                 # not in the cache, or its types are gone)
    return done


def after_step(app: Any, record: Record) -> None:
    """After one of ``app``'s steps (``record``: its part): from its first on, record the kernels loaded later;
    save its scene's list when new ones were met (a file write only then)."""
    global _recording
    if not ENABLED or record.saved == len(_seen):
        return                                       # (one comparison a step: nothing new since the last save)
    _recording = True
    if record.saved is None:
        record.saved = 0
        return
    record.saved = len(_seen)
    path = folder() / f"{scene_key(app)}.pickle"
    merged = [e for e in read(path) if e not in _seen] + _seen
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(pickle.dumps(_rows(merged[-MAX_ENTRIES:])))
        os.replace(tmp, path)
    except OSError:                                  # a read-only cache folder: nothing recorded
        pass
