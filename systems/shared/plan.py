"""Plans: what a substep system returns to run cheaper at the rest of a step's substeps (``App.add_system``).

The App runs a SUBSTEP system at each step's first substep; a system that returns a callable ``plan(app, h)`` is
replaced by it for the step's other substeps. Loom's XPBD systems return plans that call the kernels they found at
the first substep with the arrays they found there: the lookups in between (the model index, resources, batches,
held tables) would otherwise run at every substep, a large share of a small cloth's frame (docs/performance.md,
"Stop 40").
A plan relies on what a step leaves as it is: the entities and their components (added and removed at the step's
end), the arrays they hold (Loom replaces a cloth's arrays between steps: a tear's re-mesh, a snapshot load), the
resources and the materials; what it reads from arrays (positions, pin targets, gravity's vector) it reads at each
call.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

Call = tuple[Callable[..., Any], tuple]
"""A kernel and the arguments it is called with: ``kernel(*args)``."""
Plan = Callable[[Any, float], None]
"""A substep system's plan: called as ``plan(app, h)`` at the step's other substeps."""


def replay(calls: list[Call]) -> Plan:
    """The plan that calls each ``kernel(*args)`` of ``calls`` in order (their arguments the same at every substep)."""
    def plan(app: Any, h: float) -> None:
        for kernel, args in calls:
            kernel(*args)
    return plan


def run(calls: list[Call]) -> Plan:
    """Call each ``kernel(*args)`` of ``calls`` now (the system's own substep) and return ``replay(calls)``."""
    for kernel, args in calls:
        kernel(*args)
    return replay(calls)


def nothing(app: Any, h: float) -> None:
    """The plan of a system with nothing to do for the rest of the step."""
