"""The pymunk bridge's kernels as Python twins, run only while a compile worker compiles the kernels.

On an empty numba cache with a compile worker at work (``loom.launch.compile_ahead``), ``loom.launch.cold_kernels``
binds the bridge's Python call sites (``_begin_rows_call``, ``_couple_substep_call``, ``_couple_end_call`` and its
``hold``) to the kernels' own source run by the interpreter, and rebinds them to the compiled kernels at a step
boundary once they are ready. The kernels loop over a handful of rows (a body's shapes), so their source as Python
costs microseconds a substep: one source, the same numbers. Without a worker nothing here runs.
"""
from __future__ import annotations

from loom.launch.cold_kernels import called_from, python_twin
from loom.systems.coupling import pymunk_bridge as bridge
from loom.systems.shared import cold_held  # noqa: F401  (``hold``'s stand-in registered)
from loom.systems.shared.held import hold

python_twin(bridge._angle, per_step=True)
python_twin(bridge._nlerp, per_step=True)
python_twin(bridge._centre, bridge._nlerp, bridge._angle, per_step=True)
python_twin(bridge._path_velocity, per_step=True)
python_twin(bridge._advance, bridge._path_velocity, per_step=True)
python_twin(bridge._take, bridge._centre, per_step=True)
python_twin(bridge._pose, bridge._nlerp, bridge._centre, per_step=True)
python_twin(bridge._move, bridge._path_velocity, bridge._pose, per_step=True)
python_twin(bridge._begin_rows, bridge._angle, per_step=True)
python_twin(bridge._couple_substep, bridge._advance, bridge._take, bridge._move, per_step=True)
python_twin(bridge._couple_end, bridge._advance, bridge._take, per_step=True)
called_from(bridge.__name__, hold, bridge._begin_rows, bridge._couple_substep, bridge._couple_end)
