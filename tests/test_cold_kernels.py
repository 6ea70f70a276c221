"""loom.launch.cold_kernels: a small cloth's set-up kernels run as Python on a cold launch, with the same results.

The twins are the kernels' own source run by the interpreter; these tests check that the integers and lengths
they return are the compiled kernels' to the bit (the cloth built either way is the same cloth), that a set-up
call site's stand-in runs the twin only when the compiled kernel would have to be compiled for a small problem,
and that a hot system's call site is rebound once, at a step boundary, never chosen per call.
"""
from __future__ import annotations

import numpy as np
import pytest

from loom.launch import cold_kernels
from loom.engine.coloring import _greedy_colors
from loom.engine.mesh import grid
from loom.systems.xpbd import yarns
from loom.systems.xpbd.constraints import _build_tethers


def _same(a, b) -> bool:
    a = a if isinstance(a, tuple) else (a,)
    b = b if isinstance(b, tuple) else (b,)
    return len(a) == len(b) and all(x.dtype == y.dtype and np.array_equal(x, y) for x, y in zip(a, b))


@pytest.fixture(scope="module")
def sheet():
    """A 24 × 17 cloth grid (its links, rest shape, stretch flags and the walk's start order)."""
    m = grid(24, 17, 1.2, 0.8)
    links = np.concatenate([m.stretch_links, m.shear_links])
    li = np.ascontiguousarray(links[:, 0], np.int32)
    lj = np.ascontiguousarray(links[:, 1], np.int32)
    stretch = np.zeros(li.shape[0], np.bool_)
    stretch[:m.stretch_links.shape[0]] = True          # the walk follows the stretch links only
    n = m.vertex_count
    degree = np.bincount(li[stretch], minlength=n) + np.bincount(lj[stretch], minlength=n)
    starts = np.argsort(degree, kind="stable").astype(np.int64)
    return li, lj, stretch, np.ascontiguousarray(m.positions, np.float64), starts, n


def test_the_yarn_walk_twin_returns_the_compiled_walk(sheet):
    li, lj, stretch, rest, starts, _ = sheet
    twin = cold_kernels._twins[yarns._walk]
    assert twin is not yarns._walk and not hasattr(twin, "signatures")      # plain Python, its callee too
    assert _same(twin(li, lj, stretch, rest, starts, yarns.STRAIGHT),
                 yarns._walk(li, lj, stretch, rest, starts, yarns.STRAIGHT))


def test_the_colouring_twin_returns_the_compiled_colours(sheet):
    li, lj, stretch, rest, starts, n = sheet
    particles, _, offsets = yarns._walk(li, lj, stretch, rest, starts, yarns.STRAIGHT)
    colors = _greedy_colors(particles, offsets, n)
    assert _same(cold_kernels._twins[_greedy_colors](particles, offsets, n), colors)
    assert colors.max() >= 1                                               # a real colouring, not all zero


def test_the_tether_twin_returns_the_compiled_tethers(sheet):
    *_, rest, _, n = sheet
    anchors = np.array([0, 7, 23, n - 1], np.int32)
    inv_mass = np.ones(n)
    inv_mass[anchors] = 0.0
    assert _same(cold_kernels._twins[_build_tethers](rest, anchors, inv_mass, 3),
                 _build_tethers(rest, anchors, inv_mass, 3))


def _tether_args(n: int) -> tuple:
    """Arguments of ``_build_tethers`` for a cloth of ``n`` particles (its size is the rest shape's rows)."""
    return np.zeros((n, 3)), np.array([0], np.int32), np.ones(n), 3


def test_a_set_up_stand_in_takes_the_twin_only_for_a_small_problem_not_yet_compiled(monkeypatch):
    kernel = _build_tethers
    twin = cold_kernels._twins[kernel]
    stand_in = cold_kernels._SetUp(kernel)
    monkeypatch.setattr(cold_kernels, "cached", lambda k: False)
    compiled = bool(kernel.signatures)
    assert stand_in.chosen(*_tether_args(cold_kernels.PYTHON_MAX_SIZE + 1)) is kernel
    assert stand_in.chosen(*_tether_args(100)) is (kernel if compiled else twin)
    monkeypatch.setattr(cold_kernels, "ENABLED", False)
    assert stand_in.chosen(*_tether_args(100)) is kernel
    monkeypatch.setattr(cold_kernels, "ENABLED", True)
    monkeypatch.setattr(type(kernel), "signatures", property(lambda self: []))
    assert stand_in.chosen(*_tether_args(100)) is twin                     # not compiled, not cached: Python
    monkeypatch.setattr(cold_kernels, "cached", lambda k: True)
    assert stand_in.chosen(*_tether_args(100)) is kernel                   # on disk: loading it is cheap


def test_python_twin_refuses_what_is_not_a_kernel_or_an_unregistered_callee():
    with pytest.raises(TypeError, match="not a numba dispatcher"):
        cold_kernels.python_twin(len)
    import numba

    @numba.njit
    def helper(x):
        return x

    @numba.njit
    def caller(x):
        return helper(x)

    with pytest.raises(TypeError, match="callee 'helper'"):
        cold_kernels.python_twin(caller, helper)
    assert not cold_kernels.has_twin(caller)
    with pytest.raises(KeyError):
        cold_kernels.called_from(__name__, caller)


def _twin_and_kernel_agree(kernel, make_args) -> None:
    """``kernel``'s per-step twin (its source as Python, or its NumPy twin) and the compiled kernel, each on its own
    copy of the same arguments, return the same values and leave the same arrays, to the bit."""
    assert cold_kernels.is_per_step_kernel(kernel) and not cold_kernels.has_twin(yarns.solve_yarn)
    args_twin, args_kernel = make_args(), make_args()
    got, want = cold_kernels._twins[kernel](*args_twin), kernel(*args_kernel)
    assert np.array_equal(np.asarray(got, dtype=float), np.asarray(want, dtype=float), equal_nan=True), (got, want)
    flat = [a for arg in args_twin for a in (arg if isinstance(arg, tuple) else (arg,))]
    flat_kernel = [a for arg in args_kernel for a in (arg if isinstance(arg, tuple) else (arg,))]
    for a, b in zip(flat, flat_kernel):
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)


@pytest.mark.parametrize("broken", [None, "nan", "stretch"])
def test_the_step_guards_twins_return_the_compiled_checks(sheet, broken):
    from loom.systems.pipeline import guard
    li, lj, _, rest, _, n = sheet

    def args():
        x = rest + np.linspace(0.0, 1e-3, n)[:, None]
        v = np.full((n, 3), 0.25)
        if broken == "nan":
            v[n // 2, 1] = np.nan
        if broken == "stretch":
            x[li[40]] += (0.0, 0.5, 0.0)
        saved = (np.zeros((n, 3)), np.zeros((n, 3)), np.zeros((n, 3)))
        link_rest = np.linalg.norm(rest[li] - rest[lj], axis=1)
        return (x, v, x - 0.01), (li, lj, link_rest), np.ones(n), saved, (1e4, 1e3, 1.5)

    _twin_and_kernel_agree(guard._first_bad, args)
    _twin_and_kernel_agree(guard._check_and_save, lambda: (*args()[0], *args()[3]))


def test_the_limit_pin_and_render_twins_return_the_compiled_kernels(sheet):
    from loom.engine.geometry import vertex_normals_into
    from loom.engine.mesh import grid as make_grid
    from loom.systems.pipeline import pins
    from loom.systems.render import gl, surface
    from loom.systems.shared import distance_limits
    from loom.systems.xpbd import constraints
    li, lj, _, rest, _, n = sheet
    bent = rest + np.stack([np.zeros(n), 0.05 * np.sin(7.0 * rest[:, 0]), 0.03 * rest[:, 1]], axis=1)
    hi = 1.001 * np.linalg.norm(rest[li] - rest[lj], axis=1)
    _twin_and_kernel_agree(distance_limits._count_over, lambda: (li, lj, hi, bent.copy()))
    _twin_and_kernel_agree(distance_limits._count_over, lambda: (li, lj, hi, rest.copy()))          # none over
    inv_mass = np.ones(n)
    inv_mass[[0, 5]] = 0.0
    _twin_and_kernel_agree(distance_limits._anchors_changed, lambda: (inv_mass, np.zeros(n, np.bool_)))
    _twin_and_kernel_agree(distance_limits._anchors_changed, lambda: (inv_mass, inv_mass == 0.0))
    _twin_and_kernel_agree(constraints._anchors_changed, lambda: (inv_mass, np.zeros(n, np.bool_)))
    _twin_and_kernel_agree(constraints._anchors_changed, lambda: (inv_mass, inv_mass == 0.0))
    index = np.array([0, 3, 9], np.int32)
    active = np.array([True, False, True])
    end = np.arange(9.0).reshape(3, 3)
    _twin_and_kernel_agree(pins._move_pins, lambda: (index, active, bent[index], end, 0.375, bent.copy()))
    _twin_and_kernel_agree(pins._flags_changed, lambda: (active, np.array([True, True, True])))
    _twin_and_kernel_agree(pins._hold, lambda: (index, active, bent, inv_mass.copy(), np.zeros((3, 3)), inv_mass.copy()))
    turn = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    _twin_and_kernel_agree(pins._carry, lambda: (turn, np.array([0.1, 0.2, 0.3]), end.copy(), np.zeros((3, 3))))
    triangles = np.ascontiguousarray(make_grid(24, 17, 1.2, 0.8).triangles, np.int32)
    twin_normals, normals = np.zeros((n, 3)), np.zeros((n, 3))
    cold_kernels._twins[vertex_normals_into](triangles, bent, twin_normals)
    vertex_normals_into(triangles, bent, normals)
    assert np.abs(twin_normals - normals).max() < 1e-12 and np.allclose(np.linalg.norm(normals, axis=1), 1.0)
    weights = np.array([0.5, 0.5, 1.0, 0.25, 0.75])
    csr = (np.array([0, 2, 3, 5]), np.array([0, 1, 2, 3, 4]), weights)
    _twin_and_kernel_agree(surface._apply_csr, lambda: (*csr, bent[:5].copy(), np.zeros((3, 3))))
    _twin_and_kernel_agree(gl._pack_vertices, lambda: (bent, bent * 0.5, rest[:, :2].copy(), np.linspace(0, 1, n),
                                                      np.zeros((n, 9), np.float32)))


@pytest.fixture
def hot_module(monkeypatch):
    """A module ``loom_test_hot`` whose Python code calls a per-step kernel ``scale`` through its own name for it,
    ``scale_call``, declared with ``called_from``; the registry's call sites and bindings are this test's own."""
    import sys
    import types

    import numba
    module = types.ModuleType("loom_test_hot")
    exec("import numba\n@numba.njit\ndef scale(x):\n    return 2.0 * x\n"
         "def hot(x):\n    return scale_call(x)\nscale_call = scale\n", module.__dict__)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    for name in ("_sites", "_bound"):
        monkeypatch.setattr(cold_kernels, name, [])
    monkeypatch.setattr(cold_kernels, "_timing", [True])                     # (a first step not yet over)
    monkeypatch.setattr(cold_kernels, "ENABLED", True)
    monkeypatch.setattr(cold_kernels, "_compiling", lambda: False)
    assert isinstance(module.scale, numba.core.registry.CPUDispatcher)
    cold_kernels.python_twin(module.scale, per_step=True)
    return module


def test_a_per_step_twin_runs_only_while_another_process_compiles_it(hot_module):
    """With no compile-ahead worker a per-step kernel compiles on its first call (its twin, called every substep
    for the rest of the game, would cost milliseconds a frame); while one runs, the call site is bound to the twin
    until the kernel is compiled here or cached, and a large scene rebinds it to the kernel at once."""
    scale = hot_module.scale
    cold_kernels.called_from(hot_module.__name__, scale)
    assert hot_module.scale_call is scale                                  # no worker: the kernel itself
    running = [True]
    cold_kernels.while_compiling(lambda: running[0])
    twin = hot_module.scale_call
    assert twin is not scale and twin is cold_kernels.twin_of(scale) and hot_module.hot(3.0) == 6.0
    assert hot_module.scale is scale                                       # the kernel's own name: the kernel
    assert not scale.signatures and cold_kernels.bound_to(hot_module.__name__, "scale_call") is twin
    assert cold_kernels.rebind(large=False) == 0 and hot_module.scale_call is twin     # not ready: still the twin
    assert cold_kernels.rebind(large=True) == 1 and hot_module.scale_call is scale     # a large scene: the kernel
    cold_kernels.while_compiling(lambda: running[0])
    assert hot_module.scale_call is twin
    assert scale(3.0) == 6.0 and hot_module.scale_call is twin             # compiled here: rebound at the boundary
    assert cold_kernels.rebind() == 1 and hot_module.scale_call is scale and not cold_kernels._bound
    assert cold_kernels.rebind() == 0


def test_a_per_step_twin_is_rebound_when_the_worker_stops(hot_module, monkeypatch):
    scale = hot_module.scale
    monkeypatch.setattr(cold_kernels, "cached", lambda kernel: False)
    running = [True]
    cold_kernels.called_from(hot_module.__name__, scale)
    cold_kernels.while_compiling(lambda: running[0])
    assert hot_module.scale_call is not scale
    running[0] = False                                                     # the worker ended (or was stopped)
    assert cold_kernels.rebind() == 1 and hot_module.scale_call is scale and not scale.signatures


def test_called_from_refuses_a_name_numba_calls_and_a_set_up_kernel_without_size(hot_module):
    import numba
    del hot_module.scale_call
    with pytest.raises(TypeError, match="needs a name of scale of its own"):     # the kernel's own name: never
        cold_kernels.called_from(hot_module.__name__, hot_module.scale)
    hot_module.scale_call = hot_module.scale
    exec("@numba.njit\ndef twice(x):\n    return scale_call(scale_call(x))\n", hot_module.__dict__)
    with pytest.raises(TypeError, match="needs a name of scale of its own"):     # numba calls that one
        cold_kernels.called_from(hot_module.__name__, hot_module.scale)
    del hot_module.twice
    cold_kernels.called_from(hot_module.__name__, hot_module.scale)
    assert [site[1] for site in cold_kernels._sites] == ["scale_call"]

    @numba.njit
    def set_up(n):
        return n
    hot_module.set_up = hot_module.set_up_call = set_up
    cold_kernels.python_twin(set_up)
    with pytest.raises(TypeError, match="has no size"):
        cold_kernels.called_from(hot_module.__name__, set_up)


def _hot_modules() -> dict[str, list[str]]:
    """Every module that declared call sites with ``called_from``, with the kernels' own names."""
    import loom.systems  # noqa: F401  (every system, and the launch tooling)
    import loom.systems.render.buffers  # noqa: F401
    import loom.systems.render.gl  # noqa: F401
    found: dict[str, list[str]] = {}
    for namespace, _, kernel in cold_kernels._sites:
        found.setdefault(namespace["__name__"], []).append(kernel.py_func.__name__)
    return found


def test_no_hot_system_chooses_a_kernel_per_call():
    """The kernels with twins are called through the names the launch tooling rebinds (``<kernel>_call``), never
    chosen per call: no module outside loom.launch has a ``pick`` (or any other chooser of cold_kernels), and no
    Python function of a module with call sites calls such a kernel by its own name (that call would never be
    rebound)."""
    import ast
    from pathlib import Path

    import loom
    root = Path(loom.__file__).parent
    hot = _hot_modules()
    assert {"loom.systems.pipeline.pins", "loom.systems.pipeline.guard", "loom.systems.shared.distance_limits",
            "loom.systems.xpbd.constraints", "loom.systems.xpbd.yarns", "loom.systems.render.gl",
            "loom.systems.render.surface", "loom.systems.render.buffers", "loom.engine.coloring"} <= set(hot)
    assert not hasattr(cold_kernels, "pick")
    bad = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] in ("launch", "tests", "docs", "examples", "build") or "__pycache__" in rel.parts:
            continue
        module = ".".join(("loom", *rel.with_suffix("").parts)).removesuffix(".__init__")
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if getattr(node, "id", None) == "pick" or getattr(node, "attr", None) == "pick":
                bad.append(f"{rel}:{node.lineno}: pick")
        own = set(hot.get(module, ()))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef) \
                    or any("njit" in ast.unparse(d) for d in function.decorator_list):
                continue
            for call in ast.walk(function):
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in own:
                    bad.append(f"{rel}:{call.lineno}: {function.name} calls {call.func.id} itself, not its _call name")
    assert not bad, "\n".join(bad)


def test_a_hot_systems_twin_is_replaced_by_its_kernel_at_the_next_step_boundary(monkeypatch):
    """A simulated cold launch: the compile-ahead worker is at work and the pins' kernels are not ready, so their
    call sites are bound to the twins; the worker caches ``_hold`` during step 1; the App's step boundary rebinds it
    before step 2 (not in the middle of step 1), leaves ``_move_pins`` on its twin until the worker stops, and the
    cloth moves to the bit as it does with the compiled kernels."""
    from loom.components import Cloth, Pin
    from loom.engine import App, Stage, mesh
    from loom.systems import DefaultPlugins
    from loom.systems.pipeline import pins

    def run(cold: bool) -> tuple[np.ndarray, list]:
        not_ready = {pins._hold, pins._move_pins} if cold else set()
        running = [cold]
        monkeypatch.setattr(cold_kernels, "ready", lambda kernel: kernel not in not_ready)
        monkeypatch.setattr(cold_kernels, "_compiling", lambda: False)
        monkeypatch.setattr(cold_kernels, "_bound", [])
        seen = []
        app = App(dt=1 / 60, substeps=4, threads=1)
        app.add_plugin(DefaultPlugins)
        sheet = mesh.grid(10, 10, 0.5, 0.5, center=(0.0, 1.0, 0.0))
        entity = app.spawn(Cloth.from_mesh(sheet, "cotton"), Pin.edge(sheet, "top"))

        def watch(app: App, dt: float) -> None:
            seen.append((app.clock.step_index, pins._hold_call is pins._hold, pins._move_pins_call is pins._move_pins))

        def worker(app: App, dt: float) -> None:
            if app.clock.step_index == 1:
                not_ready.discard(pins._hold)               # the worker saved _hold to the cache during step 1
                watch(app, dt)
            if app.clock.step_index == 2:
                running[0] = False                          # and it ended during step 2
        app.add_system(watch, Stage.PRE_STEP, name="watch")
        app.add_system(worker, Stage.POST_STEP, name="worker", after="clear_forces")
        try:
            cold_kernels.while_compiling(lambda: running[0])
            app.step(5)
            return app.get(entity, Cloth).x.copy(), seen
        finally:
            cold_kernels.unbind()
            app.close()

    warm_x, warm_seen = run(cold=False)
    cold_x, cold_seen = run(cold=True)
    assert warm_seen == [(0, True, True), (1, True, True), (1, True, True), (2, True, True), (3, True, True),
                         (4, True, True)]
    assert cold_seen == [(0, False, False), (1, False, False), (1, False, False),     # cached during step 1: not
                         (2, True, False), (3, True, True), (4, True, True)]          # rebound inside it
    assert pins._hold_call is pins._hold and pins._move_pins_call is pins._move_pins
    assert np.array_equal(cold_x, warm_x)


def test_a_set_up_stand_in_is_bound_at_import_and_costs_no_step_without_a_worker(hot_module, monkeypatch):
    """A cold set-up kernel's call site gets its stand-in when its module declares it; with no worker to make the
    kernel ready, the first step boundary stops watching it (no per-step cost), and the stand-in still runs the
    kernel for a large problem and once it is ready."""
    import numba
    exec("@numba.njit\ndef walk(n):\n    return n + 1\nwalk_call = walk\n", hot_module.__dict__)
    walk = hot_module.walk
    monkeypatch.setattr(cold_kernels, "cached", lambda kernel: False)
    cold_kernels.python_twin(walk, size=lambda n: n)
    cold_kernels.called_from(hot_module.__name__, walk)
    stand_in = hot_module.walk_call
    assert isinstance(stand_in, cold_kernels._SetUp) and cold_kernels._bound and hot_module.walk is walk
    assert stand_in(5) == 6 and not walk.signatures                          # small: its twin, nothing compiled
    assert cold_kernels.rebind() == 0 and not cold_kernels._bound and hot_module.walk_call is stand_in
    assert stand_in.chosen(cold_kernels.PYTHON_MAX_SIZE + 1) is walk
    assert stand_in(cold_kernels.PYTHON_MAX_SIZE + 1) == cold_kernels.PYTHON_MAX_SIZE + 2 and walk.signatures
    assert stand_in.chosen(5) is walk                                       # compiled here now: the kernel


def test_a_serving_workers_stand_in_asks_for_its_kernel_once_with_the_calls_types(hot_module):
    """With a worker that compiles what it is asked (``compile_ahead.serve``), a per-step call site's first call
    asks for its kernel with that call's numba argument types; through the first step every call is timed
    (``first_cost``), then the site calls the plain twin (no wrapper per call); the kernel is asked for once."""
    import numba
    scale = hot_module.scale
    asked = []
    cold_kernels.called_from(hot_module.__name__, scale)
    cold_kernels.while_compiling(lambda: True, lambda kernel, types: asked.append((kernel, types)))
    try:
        assert isinstance(hot_module.scale_call, cold_kernels._Requesting)
        assert hot_module.hot(np.arange(3.0)).tolist() == [0.0, 2.0, 4.0]
        assert asked == [(scale, (numba.typeof(np.arange(3.0)),))] and not scale.signatures
        hot_module.hot(np.arange(3.0))
        assert len(asked) == 1 and cold_kernels.first_cost[scale] > 0.0
        cold_kernels.first_step_done()
        assert hot_module.scale_call is cold_kernels.twin_of(scale)
        hot_module.hot(np.arange(3.0))
        assert len(asked) == 1
    finally:
        cold_kernels.first_cost.pop(scale, None)
        cold_kernels._requested.pop(scale, None)
        cold_kernels.while_compiling(lambda: False)


def test_rebind_loads_at_most_loads_per_boundary_kernels_at_a_step_boundary(hot_module, monkeypatch):
    """Kernels the worker put in the cache are loaded at the boundaries, ``LOADS_PER_BOUNDARY`` at a time (a load
    costs milliseconds: no frame pays for all of them); a kernel compiled here already is rebound without a load."""
    import numba
    kernels = []
    for k in range(3):
        exec(f"@numba.njit\ndef k{k}(x):\n    return x + {k}\nk{k}_call = k{k}\n", hot_module.__dict__)
        kernels.append(hot_module.__dict__[f"k{k}"])
        cold_kernels.python_twin(kernels[-1], per_step=True)
    cold_kernels.called_from(hot_module.__name__, *kernels)
    cold_kernels.while_compiling(lambda: True)
    loaded = []
    monkeypatch.setattr(cold_kernels, "cached", lambda kernel: True)           # the worker finished all three
    monkeypatch.setattr(cold_kernels, "_load", lambda kernel: loaded.append(kernel) or True)
    kernels[2](1.0)                                                            # this one is compiled here already
    assert cold_kernels.LOADS_PER_BOUNDARY == 1
    assert cold_kernels.rebind() == 2 and loaded == [kernels[0]]               # k0 loaded, k2 without a load
    assert cold_kernels.rebind() == 1 and loaded == kernels[:2] and not cold_kernels._bound
    assert all(hot_module.__dict__[f"k{k}_call"] is kernels[k] for k in range(3))
    cold_kernels.while_compiling(lambda: False)


def test_a_last_kernels_site_is_rebound_after_its_modules_other_sites(hot_module, monkeypatch):
    """``hold``'s stand-in (``PyHeld``) makes what the module's other stand-ins read: its site waits until they are
    all rebound, so a stand-in is never handed a compiled struct it cannot read."""
    import numba
    exec("@numba.njit\ndef make(x):\n    return x\nmake_call = make\n", hot_module.__dict__)
    make, scale = hot_module.make, hot_module.scale
    cold_kernels.python_twin(make, per_step=True, last=True)
    cold_kernels.called_from(hot_module.__name__, make, scale)
    not_ready = {make, scale}
    monkeypatch.setattr(cold_kernels, "ready", lambda kernel: kernel not in not_ready)
    cold_kernels.while_compiling(lambda: True)
    make(1.0)                                                                  # compiled here: ready
    not_ready.discard(make)
    assert cold_kernels.rebind() == 0 and hot_module.make_call is not make      # scale's twin still bound
    not_ready.discard(scale)
    scale(1.0)
    cold_kernels.rebind()
    assert hot_module.scale_call is scale
    cold_kernels.rebind()
    assert hot_module.make_call is make and not cold_kernels._bound
    cold_kernels.while_compiling(lambda: False)


def test_a_set_up_site_in_the_module_does_not_hold_back_a_last_kernels_site(hot_module, monkeypatch):
    """A set-up kernel's stand-in stays bound for the whole game (it asks at each build): it reads nothing ``hold``'s
    stand-in makes, so once the module's per-step sites are rebound the ``last`` site is rebound too (before, a
    module with a set-up site, XPBD's constraints with their tethers, kept its ``hold`` on ``PyHeld`` for good)."""
    import numba
    exec("@numba.njit\ndef make(x):\n    return x\nmake_call = make\n"
         "@numba.njit\ndef build(n):\n    return n\nbuild_call = build\n", hot_module.__dict__)
    make, build = hot_module.make, hot_module.build
    cold_kernels.python_twin(make, per_step=True, last=True)
    cold_kernels.python_twin(build, size=lambda n: n)
    not_ready = {make, build}
    monkeypatch.setattr(cold_kernels, "ready", lambda kernel: kernel not in not_ready)
    cold_kernels.called_from(hot_module.__name__, make, build)
    cold_kernels.while_compiling(lambda: True)
    assert hot_module.make_call is not make and hot_module.build_call is not build
    not_ready.discard(make)
    make(1.0)
    cold_kernels.rebind()
    assert hot_module.make_call is make                                       # the set-up site did not hold it
    assert hot_module.build_call is not build                                  # (still its stand-in)
    cold_kernels.while_compiling(lambda: False)


def test_a_py_held_asks_the_worker_for_hold_of_its_own_type_once(monkeypatch):
    """``hold`` compiles once per namedtuple type: each ``PyHeld`` of a new type asks the serving worker for that
    type (a kernel's first call asks only once, for its first types), so the worker compiles every ``hold`` the
    kernels will need when they come back, and none compiles in the game's frame."""
    import numba

    from loom.systems.forces.wind import AeroArrays
    from loom.systems.collision.environment import Frames
    from loom.systems.shared.cold_held import PyHeld
    from loom.systems.shared.held import hold
    asked = []
    monkeypatch.setattr(cold_kernels, "_asked", set())
    monkeypatch.setattr(cold_kernels, "_requested", {})
    cold_kernels.while_compiling(lambda: True, lambda kernel, types: asked.append((kernel, types)))
    try:
        n = 3
        aero = AeroArrays(np.zeros((0, 3), np.int32), np.zeros((n, 3)), np.zeros((n, 3)), np.ones(n),
                          np.zeros((n, 3)), np.zeros((n, 3)), np.zeros(n), np.zeros((6, n)))
        PyHeld(aero)
        PyHeld(aero._replace(mass=np.full(n, 2.0)))                            # the same type: not again
        other = Frames(*(np.zeros(n) for _ in Frames._fields))
        PyHeld(other)
        assert asked == [(hold, (numba.typeof(aero),)), (hold, (numba.typeof(other),))]
    finally:
        cold_kernels.while_compiling(lambda: False)


def test_a_module_with_a_stand_in_gets_hold_s_stand_in_even_when_hold_is_cached(hot_module, monkeypatch):
    """A cache a short first session left half filled holds ``hold`` but not every kernel that takes what it makes: a
    module with a call site on a stand-in has its ``hold`` site bound to ``hold``'s stand-in too, so its stand-ins are
    never handed a compiled struct they cannot read (before, the second launch of such a game raised TypeError in its
    first step); the site goes back to ``hold`` once the module's other sites have."""
    import numba
    exec("@numba.njit\ndef make(x):\n    return x\nmake_call = make\n", hot_module.__dict__)
    make, scale = hot_module.make, hot_module.scale
    cold_kernels.python_twin(make, per_step=True, last=True)
    cold_kernels.called_from(hot_module.__name__, make, scale)
    not_ready = {scale}                                                        # hold cached, the kernel not
    monkeypatch.setattr(cold_kernels, "ready", lambda kernel: kernel not in not_ready)
    cold_kernels.while_compiling(lambda: True)
    assert hot_module.scale_call is cold_kernels.twin_of(scale)
    assert hot_module.make_call is cold_kernels.twin_of(make)                  # bound, though ready
    make(1.0)
    not_ready.clear()
    scale(1.0)
    cold_kernels.rebind()
    cold_kernels.rebind()
    assert hot_module.scale_call is scale and hot_module.make_call is make and not cold_kernels._bound
    cold_kernels.while_compiling(lambda: False)


def test_a_site_first_called_after_the_first_step_still_asks_for_its_kernel(hot_module):
    """A call site the first step never reached (the coupling before the hero lands on the cape) keeps its requesting
    stand-in through ``first_step_done``: its first call, later, still asks the worker for its kernel (else the worker
    never compiles it and the game stays on the stand-in), then binds the plain twin."""
    import numba
    scale = hot_module.scale
    asked = []
    cold_kernels.called_from(hot_module.__name__, scale)
    cold_kernels.while_compiling(lambda: True, lambda kernel, types: asked.append((kernel, types)))
    try:
        cold_kernels.first_step_done()                                         # not called in the first step
        assert isinstance(hot_module.scale_call, cold_kernels._Requesting) and not asked
        assert hot_module.hot(np.arange(2.0)).tolist() == [0.0, 2.0]
        assert asked == [(scale, (numba.typeof(np.arange(2.0)),))]
        assert hot_module.scale_call is cold_kernels.twin_of(scale) and scale not in cold_kernels.first_cost
    finally:
        cold_kernels._requested.pop(scale, None)
        cold_kernels.while_compiling(lambda: False)
