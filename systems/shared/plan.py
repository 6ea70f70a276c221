"""Plans: what a substep system returns for the rest of a step's substeps (``App.add_system``).

Every SUBSTEP system runs once at a step's first substep and returns its plan for the step's other substeps; the
plan is the one way a substep system runs after that. A replay (``run``, ``replay``: the kernels it found at the
first substep with the arrays it found there) is data: the App splices its ``calls`` into one list with the other
systems' and calls each ``kernel(*args)`` itself, so a substep costs one Python call per kernel and nothing per
system. A plan that must compute something per substep (the fraction of the step a pin target is interpolated at,
the contact pre-test) is a callable ``plan(app, h)``; ``nothing`` is the empty replay. The lookups in between (the
model index, resources, batches, held tables) run once per step instead of once per substep.
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
    """The plan that calls each ``kernel(*args)`` of ``calls`` in order (their arguments the same at every substep).

    Its ``calls`` attribute holds the list: the App calls the kernels itself (``App.add_system``), so the plan adds
    no Python call of its own per substep; called directly, it does the same."""
    def plan(app: Any, h: float) -> None:
        for kernel, args in calls:
            kernel(*args)
    plan.calls = calls                                    # type: ignore[attr-defined]
    return plan


def run(calls: list[Call]) -> Plan:
    """Call each ``kernel(*args)`` of ``calls`` now (the system's own substep) and return ``replay(calls)``."""
    for kernel, args in calls:
        kernel(*args)
    return replay(calls)


def nothing(app: Any, h: float) -> None:
    """The plan of a system with nothing to do for the rest of the step (an empty replay: the App calls nothing)."""


nothing.calls = ()                                        # type: ignore[attr-defined]
