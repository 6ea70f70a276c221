"""Schedule: the frame order written once, as data — ordered stages, systems ordered inside each.

A system is any callable ``system(app, dt)``; ``dt`` is the length of time the stage advances:
the real frame time for INPUT and RENDER, the fixed step for PRE_STEP and POST_STEP, the
substep ``h = dt / substeps`` for SUBSTEP. Inside a stage, systems run in the order they were
added unless ``before=`` / ``after=`` name other systems (or sets) of the same stage; the
order is resolved once, when the schedule changes, never per frame.
"""
from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

System = Callable[[Any, float], None]
Condition = Callable[[Any], bool]

CORE_PACKAGE = "loom.systems"
"""Where Loom's core pipeline defines its set handles (``ClothSet``): an unknown set from there means the core
plugins are missing. Only the name is known here; engine/ imports nothing of systems/."""


class Stage(enum.IntEnum):
    """The stages of one frame, in the order they run (see DESIGN.md, "Data flow of one frame").

    INPUT       once per rendered frame, before stepping: events into components.
    PRE_STEP    once per fixed step of dt: pin targets, wind, forces, state snapshot.
    SUBSTEP     S times per fixed step, each of h = dt/S: predict, pin, constrain, collide, update.
    POST_STEP   once per fixed step: checks, events, clearing accumulators.
    RENDER      once per rendered frame, after stepping.
    """

    INPUT = 0
    PRE_STEP = 1
    SUBSTEP = 2
    POST_STEP = 3
    RENDER = 4


_PRE, _SUB, _POST = Stage.PRE_STEP, Stage.SUBSTEP, Stage.POST_STEP


def system_name(system: System) -> str:
    """Return the name a system is ordered by: its ``name`` attribute, else its ``__name__``."""
    name = getattr(system, "name", None) or getattr(system, "__name__", None)
    if not isinstance(name, str) or not name:
        raise ValueError(f"system {system!r}: has no name; give it a __name__ or a name attribute")
    return name


@dataclass
class _Entry:
    name: str
    system: System
    sets: tuple[str, ...]
    before: tuple[str, ...]
    after: tuple[str, ...]
    enabled: bool = True
    run_if: Condition | None = None
    plugin: str | None = None

    def who(self) -> str:
        """The system's name, and the plugin that added it if one did (for error messages)."""
        return f"{self.name} (added by plugin {self.plugin})" if self.plugin else self.name


def _names(value: str | enum.Enum | Iterable[str | enum.Enum] | None,
           handles: dict[str, enum.Enum] | None = None) -> tuple[str, ...]:
    """The names of ``value``; set handles (enum members) given among them are kept in ``handles`` by name."""
    if value is None:
        return ()
    if isinstance(value, (str, enum.Enum)):
        value = (value,)
    value = tuple(value)
    if handles is not None:
        handles.update((v.name, v) for v in value if isinstance(v, enum.Enum))
    return tuple(v.name if isinstance(v, enum.Enum) else str(v) for v in value)


def _unknown_hint(name: str, handle: enum.Enum | None) -> str:
    """What to do about an unknown ordering name: for a set handle, which plugin to add."""
    if handle is None:
        return ""
    where = f"{type(handle).__name__}.{handle.name}"
    module = type(handle).__module__
    if module == CORE_PACKAGE or module.startswith(CORE_PACKAGE + "."):
        return (f"; {name!r} is {where}, a set of Loom's core pipeline, and no system of this App is in it: "
                f"add loom.DefaultPlugins (or the plugin that defines {where}) first, "
                f"e.g. app.add_plugin(loom.DefaultPlugins) before the App steps")
    return f"; {name!r} is {where} (from {module}): add the plugin that defines it first"


@dataclass
class Schedule:
    """Systems per stage, ordered by insertion and by ``before``/``after`` constraints.

    Names are system names or set names (``in_set=``); a set name orders every system in it.
    Raises ValueError for a duplicate system name in one stage, an unknown name in
    ``before``/``after``, or a cycle — when the stage is next resolved.
    """

    _entries: dict[Stage, list[_Entry]] = field(default_factory=lambda: {s: [] for s in Stage})
    _order: dict[Stage, tuple[System, ...]] = field(default_factory=dict)
    _set_order: dict[Stage, list[tuple[str, ...]]] = field(default_factory=lambda: {s: [] for s in Stage})
    _resolved_names: dict[Stage, list[str]] = field(default_factory=dict)
    _handles: dict[str, enum.Enum] = field(default_factory=dict)
    _step_runs: tuple = ()

    def add(self, stage: Stage, system: System, *, name: str | None = None,
            in_set: str | enum.Enum | Iterable[str | enum.Enum] | None = None,
            before: str | enum.Enum | Iterable[str | enum.Enum] | None = None,
            after: str | enum.Enum | Iterable[str | enum.Enum] | None = None,
            run_if: Condition | None = None, plugin: str | None = None) -> None:
        """Add ``system`` to ``stage``; raise ValueError if its name is already taken there.

        ``plugin`` names the plugin adding it, for error messages."""
        stage = Stage(stage)
        if not callable(system):
            raise TypeError(f"add_system: {system!r} is not callable; a system is a callable (app, dt)")
        if run_if is not None and not callable(run_if):
            raise TypeError(f"add_system: run_if={run_if!r} is not callable; a condition is a callable (app) -> bool")
        key = name or system_name(system)
        if any(e.name == key for e in self._entries[stage]):
            raise ValueError(f"add_system: a system named {key!r} is already in stage {stage.name}; "
                             f"pass name= to add a second one, or replace_system to swap it")
        self._entries[stage].append(_Entry(key, system, _names(in_set, self._handles), _names(before, self._handles),
                                           _names(after, self._handles), run_if=run_if, plugin=plugin))
        self._order.pop(stage, None)

    def replace(self, stage: Stage, name: str, system: System, run_if: Condition | None = None) -> None:
        """Swap the system registered as ``name`` in ``stage`` for ``system``, keeping its order; the
        old system's run_if condition goes with it (``run_if`` gives the new one its own)."""
        entry = self._find(Stage(stage), name)
        entry.system = system
        entry.run_if = run_if
        self._order.pop(Stage(stage), None)

    def remove(self, stage: Stage, name: str) -> None:
        """Remove the system registered as ``name`` from ``stage``; raise ValueError if absent."""
        stage = Stage(stage)
        self._entries[stage].remove(self._find(stage, name))
        self._order.pop(stage, None)

    def set_enabled(self, stage: Stage, name: str, enabled: bool) -> None:
        """Turn a system off (or back on) without losing its place in the order."""
        self._find(Stage(stage), name).enabled = bool(enabled)
        self._order.pop(Stage(stage), None)

    def configure_sets(self, stage: Stage, *sets: str | enum.Enum, chain: bool = True) -> None:
        """Declare that the named sets run in the given order inside ``stage`` (Bevy's ``chain``)."""
        names = _names(sets, self._handles)
        if chain and len(names) > 1:
            self._set_order[Stage(stage)].append(names)
        self._order.pop(Stage(stage), None)

    def names(self, stage: Stage) -> list[str]:
        """Return the system names of ``stage`` in the order they run."""
        self.systems(stage)
        return list(self._resolved_names[Stage(stage)])

    def systems(self, stage: Stage) -> tuple[System, ...]:
        """Return the enabled systems of ``stage`` in run order (resolved once, then cached)."""
        return tuple(system for system, _ in self.runs(stage))

    def runs(self, stage: Stage) -> tuple[tuple[System, Condition | None], ...]:
        """Return (system, run_if condition or None) of each enabled system of ``stage``, in run order."""
        stage = Stage(stage)
        order = self._order.get(stage)
        if order is None:
            entries = self._resolve(stage)
            self._resolved_names[stage] = [e.name for e in entries]
            order = self._order[stage] = tuple((e.system, e.run_if) for e in entries if e.enabled)
        return order

    def step_runs(self) -> tuple[tuple[tuple[System, Condition | None], ...], ...]:
        """``runs`` of PRE_STEP, SUBSTEP and POST_STEP, the stages of a fixed step: one call per ``App.step``
        instead of three (kept until the schedule changes; each stage's tuple is the one ``runs`` returns)."""
        found, order = self._step_runs, self._order
        if not found or order.get(_PRE) is not found[0] or order.get(_SUB) is not found[1] \
                or order.get(_POST) is not found[2]:               # a stage changed (its order was dropped)
            found = self._step_runs = (self.runs(_PRE), self.runs(_SUB), self.runs(_POST))
        return found

    def _find(self, stage: Stage, name: str) -> _Entry:
        for e in self._entries[stage]:
            if e.name == name:
                return e
        known = ", ".join(e.name for e in self._entries[stage]) or "none"
        raise ValueError(f"no system named {name!r} in stage {stage.name} (systems there: {known})")

    def _resolve(self, stage: Stage) -> list[_Entry]:
        """Topologically sort the stage's systems; stable (insertion order breaks ties)."""
        entries = self._entries[stage]
        members: dict[str, list[int]] = {}
        for k, e in enumerate(entries):
            members.setdefault(e.name, []).append(k)
            for s in e.sets:
                members.setdefault(s, []).append(k)
        edges: set[tuple[int, int]] = set()

        def link(first: str, then: str, who: str) -> None:
            for name in (first, then):
                if name not in members:
                    raise ValueError(f"stage {stage.name}: {who} orders against unknown system or set "
                                     f"{name!r} (known: {', '.join(sorted(members)) or 'none'})"
                                     f"{_unknown_hint(name, self._handles.get(name))}")
            for a in members[first]:
                for b in members[then]:
                    if a != b:
                        edges.add((a, b))

        for e in entries:
            for other in e.before:
                link(e.name, other, e.who())
            for other in e.after:
                link(other, e.name, e.who())
        for chain in self._set_order[stage]:
            present = [s for s in chain if s in members]
            for first, then in zip(present, present[1:]):
                link(first, then, f"set chain {chain}")
        indegree = [0] * len(entries)
        successors: list[list[int]] = [[] for _ in entries]
        for a, b in sorted(edges):
            successors[a].append(b)
            indegree[b] += 1
        ready = [k for k in range(len(entries)) if indegree[k] == 0]
        out: list[int] = []
        while ready:
            k = min(ready)                     # insertion order breaks ties: deterministic
            ready.remove(k)
            out.append(k)
            for b in successors[k]:
                indegree[b] -= 1
                if indegree[b] == 0:
                    ready.append(b)
        if len(out) != len(entries):
            stuck = ", ".join(entries[k].name for k in range(len(entries)) if k not in out)
            raise ValueError(f"stage {stage.name}: before/after constraints form a cycle among: {stuck}")
        return [entries[k] for k in out]
