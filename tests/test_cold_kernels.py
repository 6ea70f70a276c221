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
    compiled = bool(kernel.signatures)
    assert cold_kernels.pick(kernel, cold_kernels.PYTHON_MAX_SIZE + 1) is kernel
    assert cold_kernels.pick(kernel, 100) is (kernel if compiled else twin)
    monkeypatch.setattr(cold_kernels, "ENABLED", False)
    assert cold_kernels.pick(kernel, 100) is kernel
    monkeypatch.setattr(cold_kernels, "ENABLED", True)
    monkeypatch.setattr(type(kernel), "signatures", property(lambda self: []))
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
    assert not cold_kernels.is_set_up_kernel(caller)
    with pytest.raises(KeyError):
        cold_kernels.pick(caller, 1)
