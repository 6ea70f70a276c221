"""loom.engine.cold_kernels: a small cloth's set-up kernels run as Python on a cold launch, with the same results.

The twins are the kernels' own source run by the interpreter; these tests check that the integers and lengths
they return are the compiled kernels' to the bit (the cloth built either way is the same cloth), and that
``pick`` chooses the twin only when the compiled kernel would have to be compiled for a small problem.
"""
from __future__ import annotations

import numpy as np
import pytest

from loom.engine import cold_kernels
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


def test_pick_takes_the_twin_only_for_a_small_problem_not_yet_compiled(monkeypatch):
    kernel = _build_tethers
    twin = cold_kernels._twins[kernel]
    monkeypatch.setattr(cold_kernels, "cached", lambda k: False)
    monkeypatch.setattr(cold_kernels, "_ready", set())      # what pick found compiled before, forgotten
    compiled = bool(kernel.signatures)
    assert cold_kernels.pick(kernel, cold_kernels.PYTHON_MAX_SIZE + 1) is kernel
    assert cold_kernels.pick(kernel, 100) is (kernel if compiled else twin)
    monkeypatch.setattr(cold_kernels, "ENABLED", False)
    assert cold_kernels.pick(kernel, 100) is kernel
    monkeypatch.setattr(cold_kernels, "ENABLED", True)
    monkeypatch.setattr(type(kernel), "signatures", property(lambda self: []))
    monkeypatch.setattr(cold_kernels, "_ready", set())
    assert cold_kernels.pick(kernel, 100) is twin                          # not compiled, not cached: Python
    monkeypatch.setattr(cold_kernels, "cached", lambda k: True)
    assert cold_kernels.pick(kernel, 100) is kernel                        # on disk: loading it is cheap


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
        cold_kernels.pick(caller, 1)


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


def test_a_per_step_twin_runs_only_while_another_process_compiles_it(monkeypatch):
    """With no compile-ahead worker a per-step kernel compiles on its first call (its twin, called every substep
    for the rest of the game, would cost milliseconds a frame); while one runs, the twin stands in until the kernel
    is compiled here or cached."""
    import numba

    @numba.njit
    def scale(x):
        return 2.0 * x

    cold_kernels.python_twin(scale, per_step=True)
    monkeypatch.setattr(cold_kernels, "ENABLED", True)
    monkeypatch.setattr(cold_kernels, "_compiling", lambda: False)
    assert cold_kernels.pick(scale, 10) is scale
    cold_kernels.while_compiling(lambda: True)
    twin = cold_kernels.pick(scale, 10)
    assert twin is not scale and twin(3.0) == 6.0 and not scale.signatures
    assert cold_kernels.pick(scale, cold_kernels.PYTHON_MAX_SIZE + 1) is scale
    assert scale(3.0) == 6.0 and cold_kernels.pick(scale, 10) is scale                 # compiled here: itself
