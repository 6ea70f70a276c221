"""loom.launch.compile_ahead: the demos' kernel lists match what they compile, the worker fills numba's cache with
them, a list is read without running code, and a warm launch starts no worker.

The kernel lists are recorded (``python -m loom.games --kernel-lists``); ``test_each_list_is_what_its_game_compiles``
fails when a kernel's signature changed since, and names the regeneration command.
"""
from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loom.launch import compile_ahead
from loom.launch.compile_ahead import Entry
from loom.games.__main__ import find_games, kernel_list

ROOT = Path(__file__).resolve().parent.parent
GAMES = [g for g in ("cape", "flag", "drape", "hanging_sheet", "sandbox")]


def test_every_demo_has_a_kernel_list():
    assert set(GAMES) <= set(find_games())
    for game in GAMES:
        first, later = compile_ahead.load(kernel_list(game))
        assert len(first) >= 10, game                       # the build and the first step's kernels at least
        assert all(e.module.startswith("loom.") for e in first + later)


_CHECK = """
import json, sys
import loom.games.{game} as game
from loom.launch import compile_ahead
from loom.games.__main__ import kernel_list
game.main(["--headless", "--frames", "1", "--report", "json"])
first, _ = compile_ahead.load(kernel_list("{game}"))
found = compile_ahead._dispatchers()
absent = [f"{{e.module}}.{{e.qualname}}" for e in first if (e.module, e.qualname) not in found
          or (e.depth == 0 and e.args not in found[(e.module, e.qualname)].overloads)]
print(json.dumps(absent))
"""


@pytest.mark.parametrize("game", ["cape", "flag"])
def test_each_list_is_what_its_game_compiles(game):
    """A warm headless first frame (the CI cache is full) with the set-up kernels compiled: each of the list's
    first-frame entries names a Loom kernel, and each the game calls itself (depth 0) was used with the argument
    types the list holds. (A callee's code comes inside its caller's cached code, so a warm run does not load it
    on its own; the renderer's kernels, which a headless run without a screenshot does not use, are left out.)"""
    env = {**os.environ, "SDL_AUDIODRIVER": "dummy", "LOOM_COLD_PYTHON": "0", "LOOM_COMPILE_AHEAD": "0"}
    out = subprocess.run([sys.executable, "-c", _CHECK.format(game=game)], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    absent = [name for name in json.loads(out.stdout.strip().splitlines()[-1]) if ".render." not in name
              and not name.startswith("loom.engine.geometry.")]
    assert absent == [], f"stale kernel list games/kernels/{game}.pickle (python -m loom.games --kernel-lists): {absent}"


def test_the_worker_fills_an_empty_cache_with_the_list(tmp_path):
    """Two small kernels of the cape's list, compiled by the worker process into an empty cache directory: a
    fresh process then finds both in the cache, and loads rather than compiles them."""
    first, later = compile_ahead.load(kernel_list("cape"))
    picked = [e for e in first if e.qualname in ("_predict", "_update")]
    assert len(picked) == 2
    small = tmp_path / "small.pickle"
    small.write_bytes(pickle.dumps({"version": compile_ahead.VERSION, "game": "test",
                                    "first": [(e.module, e.qualname, e.args, e.seconds, e.depth) for e in picked],
                                    "later": []}))
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    subprocess.run([sys.executable, "-c", compile_ahead.COMMAND, "work", str(small)], env=env, check=True,
                   timeout=300)
    check = ("import json; from loom.launch import compile_ahead, cold_kernels; import loom.systems.xpbd.predict as p; "
             "from loom.launch.compile_progress import compiles; first, _ = compile_ahead.load(%r); "
             "found = compile_ahead._dispatchers(); k = [found[(e.module, e.qualname)] for e in first]; "
             "cached = [cold_kernels.cached(d) for d in k]; [d.compile(e.args) for d, e in zip(k, first)]; "
             "print(json.dumps([cached, compiles()]))" % str(small))
    out = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    cached, compiled = json.loads(out.stdout.strip().splitlines()[-1])
    assert cached == [True, True] and compiled == 0


def test_a_warm_launch_starts_no_worker_and_the_switch_turns_it_off(monkeypatch):
    import loom.games.cape  # noqa: F401  (its kernels' modules imported)
    first, later = compile_ahead.load(kernel_list("cape"))
    monkeypatch.setattr(compile_ahead, "missing", lambda entries: 0)
    assert compile_ahead.start(kernel_list("cape")) is None                   # everything cached: nothing to do
    monkeypatch.setattr(compile_ahead, "missing", lambda entries: len(entries))
    monkeypatch.setenv(compile_ahead.ENV_VAR, "0")
    assert compile_ahead.start(kernel_list("cape")) is None
    assert compile_ahead.start(None) is None


def test_the_worker_meets_the_game_halfway():
    a, b, c, d, e = (Entry("loom.x", name, (), 1.0) for name in "abcde")
    order = compile_ahead.worker_order([a, b, c], [d, e, Entry("loom.x", "a", (), 9.0)], {("loom.x", "b")})
    assert order == [c, a, e, d, b]            # first frame last to first, then the later ones, set-up kernels last
    order = compile_ahead.worker_order([a, b, c], [d, e], {("loom.x", "b")}, {("loom.x", "c")})
    assert order == [a, e, d, c, b]            # a per-step kernel the game runs as NumPy meanwhile: after them all


def test_the_worker_takes_each_call_tree_from_its_last_callee_and_a_callee_before_its_caller():
    """Later kernels' trees as recorded (post-order: numba finishes a callee before its caller): root R calls A
    (which calls A1, A2) and B; then root S. The game meets R, A, A1 first; the worker starts at S, then B, A2, A1,
    A, R."""
    def e(name, depth):
        return Entry("loom.x", name, (), 1.0, depth)
    recorded = [e("A1", 2), e("A2", 2), e("A", 1), e("B", 1), e("R", 0), e("S", 0)]
    order = [x.qualname for x in compile_ahead.worker_order([], recorded, set())]
    assert order == ["S", "B", "A2", "A1", "A", "R"]                      # the later kernels' trees


def test_a_list_that_would_run_code_is_refused(tmp_path):
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    bad = tmp_path / "bad.pickle"
    bad.write_bytes(pickle.dumps({"version": compile_ahead.VERSION, "first": [Evil()], "later": []}))
    with pytest.raises(ValueError, match="bad.pickle: not readable.*posix.system|bad.pickle: not readable.*os.system"):
        compile_ahead.load(bad)
    old = tmp_path / "old.pickle"
    old.write_bytes(pickle.dumps({"version": 0, "first": [], "later": []}))
    with pytest.raises(ValueError, match="not a version 1 kernel list"):
        compile_ahead.load(old)
    assert compile_ahead.start(tmp_path / "none.pickle") is None              # unreadable: the launch goes on


def test_the_game_waits_for_a_kernel_the_worker_is_compiling(tmp_path, monkeypatch):
    """The miss hook waits while the worker's mark of the kernel exists and says whether the worker saved it (the
    game then loads it); with no mark, or a worker that stopped, it returns False at once (the game compiles)."""
    import threading

    from loom.systems.xpbd import predict

    class Running:
        alive = True

        def poll(self):
            return None if self.alive else 1

    cache = type("Cache", (), {"_py_func": predict._predict.py_func})()
    worker = Running()
    monkeypatch.setattr(compile_ahead, "_markers", tmp_path)
    monkeypatch.setattr(compile_ahead, "_worker", worker)
    assert compile_ahead._wait_for_worker(cache) is False                   # not being compiled: compile it
    mark = tmp_path / ("w-" + compile_ahead._name(predict._predict.py_func))
    mark.touch()
    threading.Timer(0.2, mark.unlink).start()                               # the worker saves it 0.2 s later
    assert compile_ahead._wait_for_worker(cache) is True
    mark.touch()
    worker.alive = False
    assert compile_ahead._wait_for_worker(cache) is False                   # the worker is gone: do not wait


def test_a_kernel_loaded_during_a_first_launch_moves_the_progress_on(monkeypatch):
    """What the worker compiled the game loads: during a first launch that counts as one more function prepared
    and is reported; on a warm launch (nothing compiled yet) a load stays silent."""
    import io

    from loom.launch import compile_progress
    stream = io.StringIO()
    listener = compile_progress.CompileProgress(stream, interval=0.0)
    monkeypatch.setattr(compile_progress, "_listener", listener)
    compile_progress.note_loaded("solve_yarn")
    assert listener.count == 0 and stream.getvalue() == ""                   # warm: silent
    listener.started = 0.0
    listener.expect(4)
    compile_progress.note_loaded("solve_yarn")
    assert listener.count == 1 and "1 of about 4 compiled (25 %)" in stream.getvalue()
    assert stream.getvalue().rstrip().endswith("loaded solve_yarn")


def test_a_second_worker_in_one_process_reuses_the_game_s_marks(monkeypatch, tmp_path):
    """Two launches in one process (a first worker ended, something still missing): one listener and one miss
    hook, marking into the newest worker's folder; stop() removes the folder and forgets the worker."""
    import loom.games.cape  # noqa: F401
    from loom.launch import kernel_cache
    from loom.games.__main__ import kernel_list

    class Ended:
        def __init__(self, *args, **kwargs):
            self.args = args

        def poll(self):
            return 0

    monkeypatch.setattr(compile_ahead.subprocess, "Popen", Ended)
    monkeypatch.setattr(compile_ahead, "missing", lambda entries: 1)
    monkeypatch.setattr(compile_ahead, "_marks", None)
    monkeypatch.setattr(kernel_cache, "miss_hooks", [])
    monkeypatch.delenv(compile_ahead.ENV_VAR, raising=False)
    from numba.core import caching
    monkeypatch.setattr(caching.Cache, "save_overload", caching.Cache.save_overload)
    first = compile_ahead.start(kernel_list("cape"))
    folder = compile_ahead._markers
    marks = compile_ahead._marks
    second = compile_ahead.start(kernel_list("cape"))
    try:
        assert first is not second and compile_ahead._marks is marks and marks.folder == compile_ahead._markers
        assert compile_ahead._markers != folder and kernel_cache.miss_hooks == [compile_ahead._wait_for_worker]
        assert second.args[0][1:3] == ["-c", compile_ahead.COMMAND]
    finally:
        compile_ahead.stop()
        shutil_rm = __import__("shutil").rmtree
        shutil_rm(folder, ignore_errors=True)
    assert compile_ahead._worker is None and compile_ahead._markers is None
    from numba.core import event
    event.unregister("numba:compile", marks)


def test_the_first_frames_progress_counts_what_either_process_has_ready(monkeypatch):
    """``first_frame_ready``: the share of the worker's first-frame kernels compiled here or cached (by either
    process), a twin's kernel left out; None with no worker running."""
    from loom.launch import cold_kernels
    from loom.systems.xpbd import predict

    entries = [Entry("loom.systems.xpbd.predict", "_predict_batch", (), 0.2),
               Entry("loom.systems.xpbd.predict", "no_such_kernel", (), 0.2),
               Entry("loom.engine.geometry", "vertex_normals_into", (), 0.9)]      # a per-step twin: left out
    monkeypatch.setattr(compile_ahead, "_first_frame", entries)
    monkeypatch.setattr(cold_kernels, "ENABLED", True)
    monkeypatch.setattr(compile_ahead, "_running", lambda: False)
    assert compile_ahead.first_frame_ready() is None
    monkeypatch.setattr(compile_ahead, "_running", lambda: True)
    monkeypatch.setattr(cold_kernels, "cached", lambda kernel: kernel is predict._predict_batch)
    assert compile_ahead.first_frame_ready() == 0.5


_LATER = """
import json, numpy as np
from loom.engine import App, Stage, geometry
from loom.launch import LaunchPlugin
kernel = geometry.vertex_normals_into
tri = np.array([[0, 1, 2]], dtype=np.int32)
x = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]])
out = np.zeros((3, 3))
ready = []

def late(app, dt):                                   # a kernel first needed at the third step (a first contact)
    ready.append(len(kernel.overloads))
    if app.clock.step_index == 2:
        kernel(tri, x, out)

app = App(dt=1 / 60, substeps=1, threads=1)
app.add_plugin(LaunchPlugin)                         # its step boundary loads the later kernels
app.add_system(late, Stage.PRE_STEP, name="late")
app.step(5)
print(json.dumps({"ready": ready, "normal": out[0].tolist()}))
"""


def _launch_later(folder, env: dict) -> dict:
    """Run ``_LATER`` in a fresh process (cwd ``folder``, environment ``env``); return its JSON line."""
    out = subprocess.run([sys.executable, "-c", _LATER], cwd=folder, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def test_kernels_a_scene_needed_after_its_first_frame_load_before_it_at_the_next_launch(tmp_path):
    """Issue 42: a kernel first called at a later step loads (or compiles) inside that frame once; from the next
    launch on (the same cache) the first step loads it, and no later frame does (``loom.launch.later_kernels``)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    first, second = _launch_later(tmp_path, env), _launch_later(tmp_path, env)
    assert first["ready"] == [0, 0, 0, 1, 1]                 # the first launch: compiled in step 2
    assert second["ready"] == [1, 1, 1, 1, 1]                # the next: loaded before the first step's systems
    assert second["normal"] == first["normal"] == [0.0, 0.0, 1.0]
    assert list((tmp_path / "cache" / "loom-later-kernels").glob("*.pickle"))
    off = subprocess.run([sys.executable, "-c", _LATER], cwd=tmp_path, env={**env, "LOOM_LATER_KERNELS": "0"},
                         capture_output=True, text=True, timeout=300)
    assert json.loads(off.stdout.splitlines()[-1])["ready"] == [0, 0, 0, 1, 1]


def test_a_later_list_entry_missing_from_the_cache_is_skipped_not_compiled_at_the_first_step(tmp_path):
    """A later list recorded before the code changed names kernels numba's cache no longer holds: the first step
    loads only what is cached and compiles none of it (a stale list would make every launch pay a compile at its
    first step, and the thread tuner take a warm launch for a cold one); the kernel compiles where it is needed."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}

    def launch() -> dict:
        return _launch_later(tmp_path, env)

    assert launch()["ready"] == [0, 0, 0, 1, 1]
    stale = list((tmp_path / "cache").rglob("geometry.vertex_normals_into*"))
    assert stale
    for path in stale:                                          # as after an edit of the kernel's source
        path.unlink()
    assert launch()["ready"] == [0, 0, 0, 1, 1]                 # not compiled at the first step: at step 2, as needed
    assert launch()["ready"] == [1, 1, 1, 1, 1]                 # cached again, the next launch loads it first


_SERVED = """import numba
from loom.launch import cold_kernels


@numba.njit(cache=True)
def triple(x):
    return 3.0 * x


def hot(x):
    return triple_call(x)


triple_call = triple
cold_kernels.python_twin(triple, per_step=True)
cold_kernels.called_from(__name__, triple)
"""


def test_a_serving_worker_compiles_what_the_game_asks_for_and_the_game_loads_it(tmp_path, monkeypatch):
    """An App's own worker on an empty cache (``serve``; here forced, the suite's cache being warm): the first call
    of a per-step call site runs its twin and asks the worker for the kernel with that call's types; the worker
    compiles it into numba's cache; the next step boundary loads it (a cache hit, never a compile here) and
    rebinds the site. Without ``LOOM_COLD_WORKER`` (the suite's default) nothing is started."""
    import importlib

    import numpy as np

    from loom.launch import cold_kernels
    name = f"loom_test_served_{os.getpid()}"
    (tmp_path / f"{name}.py").write_text(_SERVED)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setattr(cold_kernels, "ENABLED", True)
    monkeypatch.setattr(cold_kernels, "cold_per_step", lambda: True)
    monkeypatch.setenv(compile_ahead.SERVE_ENV, "0")
    assert compile_ahead.serve() is None                               # the tests' default: no worker
    monkeypatch.setenv(compile_ahead.SERVE_ENV, "1")
    module = importlib.import_module(name)
    triple = module.triple
    try:
        worker = compile_ahead.serve()
        assert worker is not None and compile_ahead._running()
        assert isinstance(module.triple_call, cold_kernels._Requesting)
        assert module.hot(np.ones(2)).tolist() == [3.0, 3.0] and not triple.signatures     # the twin ran
        deadline = time.monotonic() + 120
        while not cold_kernels.cached(triple) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert cold_kernels.cached(triple), "the worker did not compile the requested kernel"
        while module.triple_call is not triple and time.monotonic() < deadline:
            cold_kernels.rebind()                                      # a step boundary
            time.sleep(0.05)
        assert module.triple_call is triple and triple.signatures
        assert sum(triple.stats.cache_hits.values()) == 1 and not sum(triple.stats.cache_misses.values())
    finally:
        compile_ahead.stop()
        cold_kernels.unbind()
        cold_kernels.while_compiling(lambda: False)
        cold_kernels._requested.pop(triple, None)


_TREE = """
import numba

@numba.njit
def leaf(x):
    return x + 1.0

@numba.njit
def middle(x):
    return leaf(x) * 2.0

@numba.njit
def root(x):
    return middle(x) - leaf(x)

@numba.njit
def other(x):
    return leaf(x)
"""


def _tree_module(tmp_path, monkeypatch, tag: str):
    """A module of four kernels, ``root`` → ``middle`` → ``leaf`` and ``other`` → ``leaf``, none compiled yet."""
    import importlib
    name = f"loom_test_tree_{tag}_{os.getpid()}"
    (tmp_path / f"{name}.py").write_text(_TREE)
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module(name)


def test_a_kernels_compile_cost_counts_every_callee_not_yet_compiled(tmp_path, monkeypatch):
    """A kernel list gives a callee's seconds only in the first call tree that compiled it, so a kernel whose tree
    there is small may still call a large one (the yarns' pass after the collisions calls the solve's yarn groups: 0.9
    s as listed, 17 s to compile first). ``compile_seconds`` follows the source's calls: a kernel's own seconds plus
    those of every callee not compiled here or cached; None for a kernel the lists do not name."""
    m = _tree_module(tmp_path, monkeypatch, "cost")
    own = {(m.__name__, "leaf"): 5.0, (m.__name__, "middle"): 1.0, (m.__name__, "root"): 0.5,
           (m.__name__, "other"): 0.25}
    assert compile_ahead.compile_seconds(m.root, own) == pytest.approx(6.5)
    assert compile_ahead.compile_seconds(m.other, own) == pytest.approx(5.25)
    m.leaf(1.0)                                                         # compiled here: costs nothing any more
    assert compile_ahead.compile_seconds(m.root, own) == pytest.approx(1.5)
    assert compile_ahead.compile_seconds(m.other, own) == pytest.approx(0.25)
    assert compile_ahead.compile_seconds(m.root, {}) is None


def test_the_first_frame_compiles_the_costliest_stand_ins_kernels_that_fit_its_budget(tmp_path, monkeypatch):
    """At the end of a serving worker's game's first step the game's own core compiles, beside the worker (which
    takes the quickest first), the requested kernels whose stand-ins took most of that step, each only if its
    compile cost fits what is left of the budget: a kernel that takes too long stays a stand-in (the worker's), the
    next costliest that fits is compiled; nothing without a serving worker."""
    import numba

    from loom.launch import cold_kernels
    m = _tree_module(tmp_path, monkeypatch, "first")
    own = {(m.__name__, "leaf"): 0.01, (m.__name__, "middle"): 0.01, (m.__name__, "root"): 60.0,
           (m.__name__, "other"): 1.0}
    types = (numba.float64,)
    monkeypatch.setattr(compile_ahead, "default_lists", lambda: [])
    monkeypatch.setattr(compile_ahead, "own_seconds", lambda entries: own)
    monkeypatch.setattr(cold_kernels, "first_cost", {m.root: 0.9, m.other: 0.5, m.middle: 0.1, m.leaf: 0.1})
    monkeypatch.setattr(cold_kernels, "_requested", {m.root: types, m.other: types, m.leaf: types})
    frozen = []
    monkeypatch.setattr(compile_ahead.gc, "freeze", lambda: frozen.append(True))
    assert compile_ahead.first_frame_compile(3.0) == []                # no serving worker: nothing
    monkeypatch.setattr(compile_ahead, "_running", lambda: True)
    monkeypatch.setattr(cold_kernels, "_requester", lambda kernel, types: None)
    assert compile_ahead.first_frame_compile(3.0) == ["other"]         # root's 60 s do not fit in 3 s; other's 1 s
    assert m.other.signatures and m.leaf.signatures                    # first, leaf with it (its callee): ready
    assert not m.root.signatures and not m.middle.signatures
    assert frozen                                                      # the compile's heap kept out of later GCs
    assert compile_ahead.first_frame_compile(3.0) == []                # other is ready now
