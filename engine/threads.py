"""Threads that are safe by default: Loom's parallel kernels on a machine that is busy with other things.

Loom's ``parallel=True`` kernels run on numba's threading layer; on Linux with numba's wheels that is
GNU OpenMP (libgomp). Left to itself, libgomp keeps each worker thread spinning on the CPU for a while
after every parallel loop, waiting for the next. On an idle machine that saves a wake-up; on a player's
machine where another process keeps the other core busy, the spinning worker and that process take
turns with the thread that has the real work, and a frame can cost many times what it costs on one
thread (issue 16: a cape 62.8 against 2.25 ms, a 64×64 drape 237 against 3.1 ms, two processes
spinning). With ``OMP_WAIT_POLICY=passive`` a worker sleeps as soon as its loop ends.

The policy, applied when ``loom.engine`` is first imported (before numba starts its threads):

- ``OMP_WAIT_POLICY=passive``, unless the environment already sets ``OMP_WAIT_POLICY`` or
  ``GOMP_SPINCOUNT`` (yours wins). It must be in the environment before libgomp is loaded: if numba's
  threads were started before Loom was imported, it cannot apply (``describe()`` says which is in effect).
- The thread count stays numba's: every core (``NUMBA_NUM_THREADS``), or ``App(threads=N)`` /
  ``app.set_threads(N)``, or a game's ``--threads N``. Small cloths stay on one thread anyway: each
  kernel's dispatcher goes parallel only above a work size (constraints from 20,000 links, collision
  from 500 particles, batches from two cloths).

The measured table (idle and loaded, per scene, per layer) is in docs/performance.md, "Threads".
"""
from __future__ import annotations

import os
from typing import Any

WAIT_POLICY = "passive"
"""OpenMP wait policy Loom sets when the environment names none (``OMP_WAIT_POLICY``)."""

USER_SETTINGS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
"""Environment variables that mean the user chose how OpenMP threads wait: Loom then sets nothing."""


def apply_policy(environ: Any = None) -> bool:
    """Set ``OMP_WAIT_POLICY=passive`` in ``environ`` (default ``os.environ``) unless one of
    ``USER_SETTINGS`` is already there; return whether it was set. Call before numba starts its threads."""
    environ = os.environ if environ is None else environ
    if any(name in environ for name in USER_SETTINGS):
        return False
    environ["OMP_WAIT_POLICY"] = WAIT_POLICY
    return True


def cores() -> int:
    """numba's largest thread count: ``NUMBA_NUM_THREADS`` (default: this machine's cores)."""
    import numba
    return int(numba.config.NUMBA_NUM_THREADS)


def set_threads(threads: int) -> None:
    """Run Loom's parallel kernels on ``threads`` threads (1 … ``cores()``); results do not depend on it.

    Raises ValueError naming the value when it is not a whole number in that range."""
    import numba
    top = cores()
    if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= top:
        raise ValueError(f"App.threads = {threads!r}: must be an integer in 1 … {top} "
                         "(this machine's cores, or NUMBA_NUM_THREADS)")
    numba.set_num_threads(threads)


def describe() -> dict[str, Any]:
    """The threading in effect, for reports and benchmark records: ``threads`` (numba's current count),
    ``threading_layer`` (``omp``, ``tbb`` or ``workqueue``; starts numba's threads if they are not yet),
    and ``wait_policy`` (``OMP_WAIT_POLICY`` as the environment has it, None if unset)."""
    import numba
    threads = numba.get_num_threads()                    # starts the threading layer if not yet started
    return {"threads": int(threads), "threading_layer": numba.threading_layer(),
            "wait_policy": os.environ.get("OMP_WAIT_POLICY")}
