"""The substep hot path allocates nothing: each kernel's only NRT allocations are the wrappers numba makes
for the arrays passed in (one per ndarray argument, freed on return); scratch lives in resources."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = r'''
import numpy as np
from numba.core.runtime import rtsys
from loom.components import Cloth, Collider, Pin, Sphere, Transform, Wind
from loom.engine import App, Stage, mesh
from loom.systems import DefaultPlugins

app = App(dt=1 / 60, substeps=4, threads=1).add_plugin(DefaultPlugins)
sheet = mesh.grid(24, 24, 1.0, 1.0, center=(0.0, 1.0, 0.0), plane="xz")
app.spawn(Cloth.from_mesh(sheet, "cotton", self_collision=True), Pin.edge(sheet, "top"))
app.spawn(Collider(Sphere(0.3)), Transform(position=(0.0, 0.72, 0.0)))   # under the sheet: contacts from the start
app.spawn(Wind(velocity=(0.0, 0.0, 2.0), turbulence=0.2))
app.step(5)                                         # compile, size every scratch array

import numba
from numba.core.registry import CPUDispatcher
calls = {}
original = CPUDispatcher.__call__


def counted(self, *args, **kwargs):                 # kernels called from Python: count their array arguments
    before = rtsys.get_allocation_stats().alloc
    out = original(self, *args, **kwargs)
    packed = [b for a in args if isinstance(a, tuple) for b in a]      # arrays packed in tuples: a wrapper each
    arrays = sum(isinstance(a, np.ndarray) for a in [*args, *packed])
    name = self.py_func.__name__
    extra = rtsys.get_allocation_stats().alloc - before - arrays
    calls[name] = max(calls.get(name, 0), extra)
    return out


CPUDispatcher.__call__ = counted
app.step(3)
for name in ("_predict", "_update", "_solve_serial", "_touches", "_collide_serial_basic", "_pass", "_apply_contacts",
             "_move_pins", "_aero_forces", "_first_bad"):
    print(name, calls[name])
'''


def test_substep_kernels_allocate_nothing_but_their_argument_wrappers():
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "NUMBA_NRT_STATS": "1", "SDL_AUDIODRIVER": "dummy"})
    assert out.returncode == 0, out.stderr[-3000:]
    extra = {line.split()[0]: int(line.split()[1]) for line in out.stdout.splitlines()}
    assert extra == {name: 0 for name in extra}, extra


NUMPY_CONSTRUCTORS = ("zeros", "empty", "ones", "full", "array", "asarray", "ascontiguousarray", "zeros_like",
                      "empty_like", "full_like", "concatenate", "stack", "where", "copy", "exp", "cumsum")


@pytest.mark.parametrize("scene", ["cape", "flags100"])
def test_a_steady_frame_allocates_no_numpy_array(scene, monkeypatch):
    """After the first frames (scratch sized, batches built), stepping calls no numpy constructor: the
    cape (pymunk bodies, carried pins, wind zones, colliders) and 100 flags (every batch, gusty wind)."""
    from loom.benchmarks.scenes import _scene
    from loom.engine import App
    from loom.systems import DefaultPlugins

    substeps, build = _scene(scene)
    app = App(dt=1 / 60, substeps=substeps, threads=1).add_plugin(DefaultPlugins)
    build(app)
    app.step(3)
    calls = []
    for name in NUMPY_CONSTRUCTORS:
        original = getattr(np, name)
        monkeypatch.setattr(np, name, lambda *a, _name=name, _f=original, **k: calls.append(_name) or _f(*a, **k))
    app.step(3)
    monkeypatch.undo()
    app.close()
    assert calls == []
