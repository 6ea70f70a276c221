"""Threads that are safe by default: Loom's parallel kernels on a machine that is busy with other things.

Loom's ``parallel=True`` kernels run on numba's threading layer; on Linux with numba's wheels that is
GNU OpenMP (libgomp). Left to itself, libgomp keeps each worker thread spinning on the CPU for a while
after every parallel loop, waiting for the next. On an idle machine that saves a wake-up; on a player's
machine where another process keeps the other core busy, the spinning worker and that process take
turns with the thread that has the real work, and a frame can cost many times what it costs on one
thread (docs/performance.md, "Threads"). With ``OMP_WAIT_POLICY=passive`` a worker sleeps as soon as its loop ends, and
every loop then waits for it to wake: two threads lost to one on large cloths even on an idle machine.

The policy, applied when ``loom.launch`` is first imported (before numba starts its threads):

- ``GOMP_SPINCOUNT=10000`` (``SPIN_COUNT``: a worker spins a short while, a thirtieth of libgomp's default,
  then sleeps), unless the environment already sets ``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT`` (yours wins).
  It must be in the environment before libgomp is loaded: if numba's threads were started before Loom was
  imported, it cannot apply (``describe()`` says which is in effect).
- The thread count is measured, not assumed (``App(threads="auto")``, the default): an App's steps run
  on one thread, and now and then a few steps try every core (``ThreadTuner``); the faster by median
  wins until the next trial. Whether a second thread pays depends on the machine and what else runs on it
  (each parallel loop may wait for a sleeping vCPU to wake): only timing on the player's machine, as the game
  runs, tells. ``App(threads=N)`` / ``app.set_threads(N)`` / a game's ``--threads N`` fix the count instead.
  Small scenes stay on one thread whatever the count (``MIN_PARTICLES``): fewer particles in all than that, an
  App's steps run its serial kernels and numba's thread count is left alone, so neither a trial nor a fixed
  ``threads=2`` costs a small scene anything (threads cost small cloths more than they save when the other core
  is busy: docs/performance.md, "Threads"). Above it each kernel's dispatcher still goes parallel only above its
  own work size (constraints from 20,000 links, collision from 2,000 particles, batches from two cloths).
- A trial never stalls the game: it starts only when the machine had a core free since the tuner last looked
  (``idle_cores``, from /proc/stat), never in a launch whose first step compiled (a cold cache: its parallel
  kernels would compile inside a frame), and a trial step costing more than ``TRIAL_ABORT`` × the current median
  ends it.

The measured table (idle and loaded, per scene, per layer) is in docs/performance.md, "Threads".
"""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

SPIN_COUNT = "10000"
"""How long an idle OpenMP worker spins before it sleeps, in libgomp's spin iterations (``GOMP_SPINCOUNT``), set
when the environment names no policy. libgomp's own default is 300,000, and it spins only 1,000 when it has more
threads than CPUs.

Why not sleep at once (``OMP_WAIT_POLICY=passive``): every parallel loop then waits for a sleeping worker to
wake, and the solver runs one loop per colour (12 a sweep on a grid, 2 for the yarns), so two threads lose to one
on large cloths even on an idle machine, and the thread tuner never chooses them. What a short spin costs: with a
fixed two threads (``App(threads=2)``) and another process busy, the worker's spin takes the core the step needs.
The default, ``threads="auto"``, times that and stays on one thread then, so a player's default is never slower
than one thread, and faster where a second core is free (docs/performance.md, "Threads")."""

USER_SETTINGS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
"""Environment variables that mean the user chose how OpenMP threads wait: Loom then sets nothing."""


def apply_policy(environ: Any = None) -> bool:
    """Set ``GOMP_SPINCOUNT`` to ``SPIN_COUNT`` in ``environ`` (default ``os.environ``) unless one of
    ``USER_SETTINGS`` is already there; return whether it was set. Call before numba starts its threads."""
    environ = os.environ if environ is None else environ
    if any(name in environ for name in USER_SETTINGS):
        return False
    environ["GOMP_SPINCOUNT"] = SPIN_COUNT
    return True


TRIAL_STEPS = 8
"""Steps a trial of the other thread count lasts (it stops at once if a step costs ``ABORT`` × the current median)."""
FIRST_TRIAL = 30
"""Steps before the first trial (after the first steps' numba compiles)."""
HOLD_STEPS = (120, 7200)
"""Steps between trials: the shortest, after a switch, doubling after every trial lost up to the longest
(2 s … 2 min at 60 Hz), so a machine where threads never pay costs one trial step in thousands."""
ABORT = 2.0
"""A median on the current count this many times the last trial's starts a trial at once (the player started
something: the other count may now be faster)."""
TRIAL_ABORT = 1.5
"""A trial step costing more than this many times the current median ends the trial (a busy machine: one slow
step, never the eight)."""
MIN_PARTICLES = 2000
"""Fewest particles, all the App's cloths together, for which its steps use more than one thread (trials, or a
fixed count). Serial below it: on small cloths (the cape, 600; the flag, 990) threads cost more than they save,
and much more with the other core busy; large ones (a 64² drape, 100 flags) gain (docs/performance.md, "Threads").
2,000 is also where the contact kernels' own dispatcher goes parallel."""
FREE_CORE = 0.5
"""A trial starts only when the machine's cores were idle this much in all (a core's fraction, summed) over the
steps since the tuner last looked (``idle_cores``): room for the second thread now, not an average of the last
minute that still counts a finished compile or the game's own earlier threads."""
WIN = 0.85
"""The other count wins when its median step is below this fraction of the current one."""


class ThreadTuner:
    """Chooses, for one App, between one thread and every core by timing its own steps now and then.

    ``count()`` is the thread count for the next step; ``record(seconds)`` reports how long it took. Steps
    run on ``current`` (1 to begin with); every ``hold`` steps the other count runs ``TRIAL_STEPS`` steps
    and wins if its median is below ``WIN`` × the median of the last steps on ``current``. Results do not
    depend on the count (bit-identical positions), so switching is invisible except in time."""

    def __init__(self, top: int) -> None:
        self.top = int(top)
        """The largest count tried (numba's cores)."""
        self.current = 1
        """The count steps run on outside trials."""
        self.hold = HOLD_STEPS[0]
        """Steps until the next trial once this one ends [steps]."""
        self.trials = 0
        """Trials run so far (for reports)."""
        self._until = FIRST_TRIAL                      # steps left before the next trial
        self._recent: list[float] = []                 # last step times on ``current`` [s]
        self._trial: list[float] | None = None         # step times of the running trial [s]
        self._reference = float("inf")                 # median on ``current`` when the last trial ended [s]
        self._cpu_sample: tuple[float, float] | None = None   # (idle, total) CPU seconds at the last look
        self.allowed_launch = True
        """False in a launch whose first step compiled (a cold cache): no trial for the rest of it."""
        self.allowed = True
        """False while the App's scene is too small to gain from threads (``MIN_PARTICLES``) or the launch was
        cold: ``count()`` is 1 and no trial starts (``allow``)."""

    def allow(self, allowed: bool) -> None:
        """Let trials and a count above 1 happen (True) or not (False: the scene is small, the launch cold); a
        running trial is dropped, and the current count's times start afresh."""
        if allowed != self.allowed:
            self.allowed = allowed
            self._trial = None
            self._recent = []
            self._until = max(self._until, TRIAL_STEPS)

    def count(self) -> int:
        """Thread count for the next step (1 while not ``allowed``)."""
        if not self.allowed:
            return 1
        if self._trial is not None:
            return self.top + 1 - self.current          # the other of 1 and top
        return self.current

    def record(self, seconds: float) -> None:
        """Account one step that took ``seconds`` [s] on ``count()`` threads."""
        if self.top < 2 or not self.allowed:
            return
        if self._trial is None:
            self._recent.append(seconds)
            if len(self._recent) > 2 * TRIAL_STEPS:
                del self._recent[0]
            self._until -= 1
            if len(self._recent) >= TRIAL_STEPS and (
                    self._until <= 0 or _median(self._recent) > ABORT * self._reference):
                if self._core_free():
                    self._trial = []                    # due, or the current count got much slower: try now
                else:
                    self._until = TRIAL_STEPS           # every core busy: look again a few steps on
            return
        self._trial.append(seconds)
        base = _median(self._recent)
        if seconds > TRIAL_ABORT * base:
            self._end(won=False)
        elif len(self._trial) >= TRIAL_STEPS:
            self._end(won=_median(self._trial) < WIN * base)

    def _core_free(self) -> bool:
        """Whether the cores were idle at least ``FREE_CORE`` since the last look (``idle_cores``): room for a
        second thread. The first look only starts the measurement (False: look again ``TRIAL_STEPS`` on); True
        where idle time cannot be read. Only a trial that would leave one thread asks (two threads now: the trial
        is one)."""
        if self.current != 1:
            return True
        sample, self._cpu_sample = self._cpu_sample, cpu_times()
        if self._cpu_sample is None:
            return True
        if sample is None:
            return False
        return idle_cores(sample, self._cpu_sample) >= FREE_CORE

    def _end(self, *, won: bool) -> None:
        self.trials += 1
        if won:
            self.current = self.top + 1 - self.current
            self._recent = list(self._trial or [])
            self.hold = HOLD_STEPS[0]
        else:
            self.hold = min(2 * self.hold, HOLD_STEPS[1])
        self._trial = None
        self._until = self.hold
        self._reference = _median(self._recent)


def cpu_times() -> tuple[float, float] | None:
    """(idle, total) seconds of all cores since boot, from /proc/stat (Linux); None where it cannot be read."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = stat.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    ticks = [float(f) for f in fields[1:8]]            # user nice system idle iowait irq softirq
    return ticks[3] + ticks[4], sum(ticks)


def idle_cores(before: tuple[float, float], after: tuple[float, float]) -> float:
    """Cores idle between two ``cpu_times`` samples, summed (0 … cores): 1.0 on a 2-core machine whose game keeps
    one core busy and nothing else runs; 0 with no time between the samples."""
    idle, total = after[0] - before[0], after[1] - before[1]
    if total <= 0:
        return 0.0
    return cores() * idle / total


work_probes: list[Callable[[Any], int]] = []
"""Functions of an App returning the particles its parallel kernels would share; ``loom.systems`` adds the
cloths' count (``loom.systems.shared.model_index``). Summed by ``work``."""


def work(app: Any) -> int:
    """The particles of ``app``'s scene, as ``work_probes`` count them (0 with none: one thread)."""
    return sum(int(probe(app)) for probe in work_probes)


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def cores() -> int:
    """numba's largest thread count: ``NUMBA_NUM_THREADS`` (default: this machine's cores)."""
    import numba
    return int(numba.config.NUMBA_NUM_THREADS)


def describe() -> dict[str, Any]:
    """The threading in effect, for reports and benchmark records: ``threads`` (numba's current count),
    ``threading_layer`` (``omp``, ``tbb`` or ``workqueue``; starts numba's threads if they are not yet),
    ``wait_policy`` (``OMP_WAIT_POLICY`` as the environment has it, None if unset) and ``spin_count``
    (``GOMP_SPINCOUNT`` likewise)."""
    import numba
    threads = numba.get_num_threads()                    # starts the threading layer if not yet started
    return {"threads": int(threads), "threading_layer": numba.threading_layer(),
            "wait_policy": os.environ.get("OMP_WAIT_POLICY"), "spin_count": os.environ.get("GOMP_SPINCOUNT")}
