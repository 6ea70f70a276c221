"""Python calls per step: how many Python functions of Loom's own code one fixed step calls.

A small cloth's frame is mostly Python around the kernels (a lookup, a wrapper, a run condition: each a Python
call): the count of those calls is a cost that does not drift with the machine's phase, so the scenes benchmark
prints it beside the times (``--calls``) and tests/test_benchmarks.py holds the cape's substeps to a bound.

What counts: every Python function whose code lives in a file under ``roots`` (by default Loom's package folder,
the benchmarks and tests left out) entered while the counted block runs, counted once per call — a generator or
a comprehension's generator once per creation, not once per resumption. A numba dispatcher's call into compiled
code counts once, under the Python function it compiled (numba reports it to the profiler as a call of that
function, ``sys.setprofile``); what the compiled code does inside counts nothing. Calls into code outside
``roots`` (esper, numpy, the standard library) count nothing themselves, but Loom's functions they call back count.

Counted with ``sys.setprofile`` (the ``call`` event), so the counted steps run several times slower than usual:
count, don't time, in the same block.
"""
from __future__ import annotations

import dis
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from types import CodeType, FrameType
from typing import Any

import loom

PACKAGE = os.path.dirname(os.path.abspath(loom.__file__))
"""Loom's package folder: the code whose calls are counted by default."""
NOT_LOOM = ("benchmarks", "tests")
"""Folders under ``PACKAGE`` left out by default: the measuring code and the tests are not Loom's step."""
TOP = 10
"""Callers named in ``calls_per_step``'s ``top``."""


def loom_files(roots: Iterable[str] = (PACKAGE,), leave_out: Iterable[str] = NOT_LOOM) -> Callable[[str], bool]:
    """A test on a code object's file name: True for a file under one of ``roots`` and under none of ``leave_out``
    (folder names relative to each root)."""
    prefixes = tuple(os.path.join(os.path.abspath(root), "") for root in roots)
    excluded = tuple(os.path.join(os.path.abspath(root), name, "") for root in roots for name in leave_out)

    def inside(filename: str) -> bool:
        return filename.startswith(prefixes) and not filename.startswith(excluded)
    return inside


def _first_offset(code: CodeType) -> int:
    """The byte offset at which a fresh call of ``code`` first reports itself to the profiler: its first RESUME
    (a generator's first resumption is there too; later resumptions are after it)."""
    for instruction in dis.get_instructions(code):
        if instruction.opname == "RESUME":
            return instruction.offset
    return 0


def _name(code: CodeType, root: str) -> str:
    """``loom.engine.app:App.query`` for a code object of ``root``'s package (its path as a module)."""
    path = os.path.relpath(code.co_filename, root)
    module = os.path.splitext(path)[0].replace(os.sep, ".")
    module = module[: -len(".__init__")] if module.endswith(".__init__") else module
    base = os.path.basename(os.path.abspath(root))
    prefix = "loom" if os.path.abspath(root) == PACKAGE else base
    return f"{prefix}.{module}:{getattr(code, 'co_qualname', code.co_name)}"


def count_calls(block: Callable[[], Any], *, roots: Iterable[str] = (PACKAGE,),
                leave_out: Iterable[str] = NOT_LOOM) -> Counter[str]:
    """Run ``block()`` and return how many times each function under ``roots`` was called meanwhile, by name
    (``package.module:Qualified.name``). Only the calling thread is counted (numba's worker threads run compiled
    code). Raises RuntimeError if a profiler is already installed (a debugger, cProfile): the two would not mix."""
    if sys.getprofile() is not None:
        raise RuntimeError("count_calls: a profiler is already installed (sys.getprofile()); run without it")
    roots = tuple(os.path.abspath(root) for root in roots)
    inside = loom_files(roots, leave_out)
    first: dict[CodeType, int | None] = {}                # None: not counted (a file outside roots)
    counts: Counter[CodeType] = Counter()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        start = first.get(code, -2)
        if start == -2:
            start = first[code] = _first_offset(code) if inside(code.co_filename) else None
        if start is not None and frame.f_lasti <= start:
            counts[code] += 1

    sys.setprofile(profile)
    try:
        block()
    finally:
        sys.setprofile(None)
    named: Counter[str] = Counter()
    for code, n in counts.items():
        root = next((r for r in roots if code.co_filename.startswith(os.path.join(r, ""))), roots[0])
        named[_name(code, root)] += n
    return named


def kernels(names: Iterable[str]) -> set[str]:
    """Those of ``names`` (as ``count_calls`` gives them) that are numba kernels: functions a numba dispatcher of
    an imported module compiled (looked up in the modules' globals, so a kernel rebound to its Python twin counts
    as Python)."""
    names = set(names)
    found = set()
    for module in list(sys.modules.values()):
        filename = getattr(module, "__file__", None)
        if not filename or not filename.startswith(PACKAGE):
            continue
        for value in list(vars(module).values()):
            py_func = getattr(value, "py_func", None)
            code = getattr(py_func, "__code__", None)
            if isinstance(code, CodeType) and code.co_filename.startswith(PACKAGE):
                name = _name(code, PACKAGE)
                if name in names:
                    found.add(name)
    return found


def calls_per_step(app: Any, steps: int = 10, *, top: int = TOP) -> dict[str, Any]:
    """Count the Python calls into Loom of ``steps`` more fixed steps of ``app``, each taken by its own
    ``app.step()`` as a game's frame does (warm: step the App at least once before, so no first-step set-up is
    counted), and return ``{"calls_per_step": total / steps, "kernel_calls_per_step": the kernel calls among them,
    "steps": steps, "top": {name: calls per step, ...}}`` with the ``top`` most called functions, most first.
    Raises ValueError for ``steps`` < 1."""
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"calls_per_step steps = {steps!r}: must be an integer >= 1")

    def frames() -> None:
        for _ in range(steps):
            app.step()
    counts = count_calls(frames)
    total = sum(counts.values())
    compiled = sum(counts[name] for name in kernels(counts))
    return {"calls_per_step": round(total / steps, 2), "kernel_calls_per_step": round(compiled / steps, 2),
            "steps": steps,
            "top": {name: round(n / steps, 2) for name, n in counts.most_common(top)}}
