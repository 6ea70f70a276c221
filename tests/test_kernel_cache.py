"""loom.launch.kernel_cache: Loom's cached kernels load without numba's registry refresh, and nothing breaks.

Each case runs fresh Python processes on one empty numba cache directory: the first compiles (and caches) a Loom
kernel, the next loads it, as a warm launch does (``LOOM_COLD_PYTHON=0``: the colouring kernel compiles even on the
empty cache, where a small cloth is otherwise coloured in Python, loom.launch.cold_kernels).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_SCRIPT = """
import json, sys
import numpy as np
import loom.launch                                   # installs the fast load
from loom.launch import kernel_cache
from loom.engine.coloring import color_order
from loom.engine.mesh import grid

before = "numba.np.linalg" in sys.modules            # imported by numba's registry refresh, and by nothing else here
mesh = grid(6, 5, 1.0, 1.0)
order, offsets = color_order(mesh.stretch_links, mesh.vertex_count)
after_load = "numba.np.linalg" in sys.modules
links = mesh.stretch_links[order]
proper = all(len(set(links[offsets[c]:offsets[c + 1]].ravel())) == 2 * (offsets[c + 1] - offsets[c])
             for c in range(len(offsets) - 1))

import numba

@numba.njit(cache=False)
def norms(a):                                        # a game's own kernel, compiled after the fast load
    out = np.empty(a.shape[0])
    for i in range(a.shape[0]):
        out[i] = np.linalg.norm(a[i])
    return out

compiled = float(norms(np.array([[3.0, 4.0], [6.0, 8.0]])).sum())
print(json.dumps({"installed": kernel_cache.installed(), "linalg_before": before, "linalg_after_load": after_load,
                  "colours": len(offsets) - 1, "proper": proper, "compiled": compiled}))
"""


def _run(cache: Path, **env: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "NUMBA_CACHE_DIR": str(cache), "LOOM_COLD_PYTHON": "0", **env})
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_warm_launch_loads_loom_kernels_without_the_registry_refresh_and_later_compiles_still_work(tmp_path):
    """Cold, the colouring kernel compiles (numba refreshes its registries: numba.np.linalg is imported). Warm,
    it loads from the cache with the registries untouched, colours the grid properly (no two links of a colour
    share a particle), and a kernel compiled afterwards (np.linalg.norm, which needs the registries) still
    compiles and gives 5 + 10."""
    cold = _run(tmp_path)
    assert cold["installed"] and cold["linalg_after_load"], cold
    warm = _run(tmp_path)
    assert warm["installed"] and not warm["linalg_before"] and not warm["linalg_after_load"], warm
    assert warm["proper"] and warm["colours"] == cold["colours"] >= 2, warm
    assert warm["compiled"] == 15.0, warm


def test_the_fast_load_can_be_turned_off(tmp_path):
    """LOOM_FAST_KERNEL_LOAD=0: numba's own load, with its refresh, for every kernel; the same colours."""
    cold = _run(tmp_path)
    off = _run(tmp_path, LOOM_FAST_KERNEL_LOAD="0")
    assert not off["installed"] and off["linalg_after_load"], off
    assert off["proper"] and off["colours"] == cold["colours"] and off["compiled"] == 15.0, off
