"""Random sequences of Loom's public calls, run in a worker process: the interpreter and its worker (issue 42, item 7).

A sequence is a list of operations, each a JSON list ``[name, *arguments]`` of plain values (numbers, including
NaN, infinities and 2**63; strings; None; ``["j", re, im]`` for a complex number), so the parent (the
hypothesis test, tests/test_public_fuzz.py) can send it to a worker process and print it back as a
reproduction. ``run_sequence`` plays one sequence on fresh Apps and returns the rules it saw broken:

- a public call raised something other than ValueError, TypeError, KeyError, RuntimeError, OSError or a
  subclass of one defined in Loom (numpy's LinAlgError, numba's TypingError, ZeroDivisionError,
  FrozenInstanceError, IndexError … are not documented types), or raised with an empty message;
- a step or update that raised nothing and ran at least one step left a cloth with a non-finite or absurd
  (|x| > ABSURD m) position or a non-finite velocity;
- ``save_snapshot`` wrote a file that ``load_snapshot`` refuses, or whose load does not give the saved state
  back bit for bit (every component of every entity, the clock).

In-place writes into public arrays (``cloth.link_i[k] = v``) are plain numpy writes: whatever numpy raises
for them is numpy's business; what matters is that the next step neither kills the process nor leaves an
absurd state. The worker (``python tests/fuzz_calls.py``) reads one sequence per line on stdin and prints
``op <k>`` before each operation and ``done <json>`` after the sequence, so a signal or a hang is blamed on
the sequence and the operation running when it came.
"""
from __future__ import annotations

import json
import logging
import math
import os
import struct
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

ABSURD = 1e6
"""Largest |position| [m] a stepped cloth may hold (a sane world size; the guard treats beyond as exploded)."""
ALLOWED = (ValueError, TypeError, KeyError, RuntimeError, OSError)
"""The exception types a public call may raise (and Loom's subclasses of them)."""

# --- decoding values --------------------------------------------------------------------------------------
def value(v: Any) -> Any:
    """A JSON value back as the Python value it stands for (``["j", re, im]`` → complex; lists stay lists)."""
    if isinstance(v, list):
        if len(v) == 3 and v[0] == "j":
            return complex(v[1], v[2])
        return [value(x) for x in v]
    return v


def documented(error: BaseException) -> bool:
    """True if ``error`` is one of the documented types: an ALLOWED builtin itself or a Loom subclass of one."""
    kind = type(error)
    if kind in ALLOWED:
        return True
    return isinstance(error, ALLOWED) and kind.__module__.split(".")[0] == "loom"


# --- the state a snapshot must give back ---------------------------------------------------------------------
def _bits(obj: Any, path: str, out: dict[str, Any], seen: set[int], depth: int = 0) -> None:
    """Flatten ``obj`` into ``out``: path → bytes of arrays and floats, repr of other plain values."""
    import numpy as np
    if isinstance(obj, np.ndarray):
        out[path] = (obj.dtype.str, obj.shape, obj.tobytes())
    elif isinstance(obj, float):
        out[path] = struct.pack("<d", obj)
    elif isinstance(obj, (bool, int, str, bytes, type(None), np.generic)):
        out[path] = repr(obj)
    elif depth > 6 or id(obj) in seen:
        out[path] = type(obj).__name__
    elif isinstance(obj, (list, tuple)):
        seen.add(id(obj))
        out[path] = (type(obj).__name__, len(obj))
        for k, item in enumerate(obj):
            _bits(item, f"{path}[{k}]", out, seen, depth + 1)
    elif isinstance(obj, dict):
        seen.add(id(obj))
        for k, item in obj.items():
            _bits(item, f"{path}[{k!r}]", out, seen, depth + 1)
    elif hasattr(obj, "__dict__") and type(obj).__module__.split(".")[0] in ("loom", "__main__"):
        seen.add(id(obj))
        out[path] = type(obj).__name__
        for k, item in sorted(vars(obj).items()):
            if k not in ("revision", "bound"):          # assignment count, Pin's "checked" flag: a load resets both
                _bits(item, f"{path}.{k}", out, seen, depth + 1)
    else:
        out[path] = type(obj).__name__


def saved_state(app: Any) -> dict[str, Any]:
    """Every component of every entity of ``app`` and its clock, flattened to bytes (what a load must restore)."""
    import esper
    out: dict[str, Any] = {}
    seen: set[int] = set()
    before = esper.current_world
    esper.switch_world(app.world)
    try:
        for entity in sorted(esper.get_entities()):
            for component in esper.components_for_entity(entity):
                _bits(component, f"entity {entity} {type(component).__name__}", out, seen)
    finally:
        esper.switch_world(before)
    clock = app.clock
    for name in ("dt", "substeps", "max_steps", "accumulator", "step_index", "substep_index", "dropped"):
        _bits(getattr(clock, name), f"clock.{name}", out, seen)
    return out


def first_difference(a: dict[str, Any], b: dict[str, Any]) -> str | None:
    """The first path whose value differs between two ``saved_state``s (or is in one only), or None."""
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            return key
    return None


# --- the interpreter -------------------------------------------------------------------------------------------
class Run:
    """One sequence's world: the App, the entities it made, a folder for snapshots, the rules broken."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.app: Any = None
        self.apps: list[Any] = []
        self.cloths: list[int] = []
        self.others: list[int] = []
        self.broken: list[str] = []

    # helpers
    def cloth_entity(self, k: Any) -> int | None:
        import loom
        live = [e for e in self.cloths if self.app.try_get(e, loom.Cloth) is not None]
        return live[int(k) % len(live)] if live and isinstance(k, int) else None

    def component(self, kind: str, k: Any) -> Any:
        import loom
        entity = self.cloth_entity(k)
        if entity is None:
            return None
        if kind == "material":
            return self.app.get(entity, loom.Cloth).material
        if kind == "XPBDClothData":                     # XPBD's own data of the cloth (after its first step)
            from loom.systems.xpbd import xpbd_data
            try:
                return xpbd_data(self.app, entity)
            except KeyError:
                return None
        return self.app.try_get(entity, getattr(loom, kind))

    def new_app(self, dt: Any, substeps: Any) -> None:
        import loom
        app = loom.App(dt=dt, substeps=substeps, threads=1)
        app.add_plugin(loom.DefaultPlugins)
        self.app = app
        self.apps.append(app)
        self.cloths, self.others = [], []

    def check_state(self, what: str) -> None:
        """Rule 2: no NaN and no absurd position after a step that raised nothing."""
        import loom
        import numpy as np
        for entity, cloth in self.app.query(loom.Cloth):
            for name in ("x", "v", "x_prev"):
                arr = getattr(cloth, name)
                if not np.isfinite(arr).all():
                    self.broken.append(f"{what}: cloth {entity} has a non-finite {name} after a step that raised "
                                       f"nothing")
                    return
            top = float(np.abs(cloth.x).max()) if cloth.x.size else 0.0
            if top > ABSURD:
                self.broken.append(f"{what}: cloth {entity} at |x| = {top:g} m after a step that raised nothing")
                return

    def snapshot(self, what: str) -> None:
        """Rule 3: save, then load into the same App: refused at save (documented), or loaded back bit for bit."""
        import loom
        path = self.folder / "fuzz.loom"
        state = saved_state(self.app)
        loom.save_snapshot(self.app, path)              # a refusal here is checked as any call's error is
        try:
            loom.load_snapshot(self.app, path)
        except Exception as error:
            self.broken.append(f"{what}: save_snapshot wrote a file load_snapshot refuses: "
                               f"{type(error).__name__}: {error}")
            return
        differs = first_difference(state, saved_state(self.app))
        if differs is not None:
            self.broken.append(f"{what}: the snapshot did not load back bit for bit: {differs}")

    # operations: each may raise; the caller checks what
    def op(self, name: str, args: list[Any]) -> None:
        import numpy as np

        import loom
        from loom.systems.interaction.picking import pick_particle, update_grab
        from loom.systems.interaction.teleport import teleport
        app = self.app
        a = [value(x) for x in args]
        if name == "app":
            self.new_app(a[0], a[1])
        elif name == "cloth":
            nx, ny, model, material, pinned, height = a
            sheet = loom.mesh.grid(nx, ny, 1.0, 1.0, center=(0.0, height, 0.0), plane="xz")
            cloth = loom.Cloth.from_mesh(sheet, material, model=model)
            parts = [cloth, loom.Pin.corners(sheet, "top")] if pinned else [cloth]
            self.cloths.append(app.spawn(*parts))
        elif name == "many":                            # enough cloths for the batched kernels (BATCH_MIN_CLOTHS)
            count, model = a
            for k in range(count):
                sheet = loom.mesh.grid(3, 3, 0.3, 0.3, center=(0.5 * k, 1.0, 0.0), plane="xz")
                self.cloths.append(app.spawn(loom.Cloth.from_mesh(sheet, model=model), loom.Pin.corners(sheet, "top")))
        elif name == "flag":
            flag = loom.flag(app, a[0], size=a[1])
            self.cloths.append(flag.entity)
        elif name == "cape":
            hero = app.spawn(loom.Transform(position=a[0]))
            self.others.append(hero)
            self.cloths.append(loom.cape(app, hero).entity)
        elif name == "collider":
            kind, size, position, twice = a
            shape = {"sphere": lambda: loom.Sphere(size), "box": lambda: loom.Box([size, size, size]),
                     "plane": lambda: loom.Plane(), "capsule": lambda: loom.Capsule(size, size)}[kind]()
            collider = loom.Collider(shape)
            self.others.append(app.spawn(collider, loom.Transform(position=position)))
            if twice:                                   # the same Collider object on a second entity
                self.others.append(app.spawn(collider, loom.Transform(position=position)))
        elif name == "wind":
            self.others.append(app.spawn(loom.Wind(velocity=a[0], gust=a[1])))
        elif name == "step":
            frames, dt = a
            before = app.clock.step_index
            app.step(frames) if dt is None else app.step(frames, dt=dt)
            if app.clock.step_index > before:
                self.check_state(f"step({frames!r}, dt={dt!r})")
        elif name == "update":
            if app.update(a[0]):
                self.check_state(f"update({a[0]!r})")
        elif name == "clock":
            setattr(app.clock, a[0], a[1])
        elif name == "threads":
            app.set_threads(a[0])
        elif name == "grab":
            k, particle, target, active = a
            entity = self.cloth_entity(k)
            grab = loom.Grab(active=active, cloth=entity, particle=particle, target=target)
            self.others.append(app.spawn(grab))
        elif name == "update_grab":
            mx, my, width, height, pressed = a
            update_grab(app, loom.Camera(), mx, my, width, height, pressed)
        elif name == "pick":
            pick_particle(app, a[0], a[1], a[2])
        elif name == "teleport":
            k, translation, angle = a
            entity = self.cloth_entity(k)
            rotation = None
            if angle is not None:
                c, s = math.cos(angle), math.sin(angle)
                rotation = [[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]
            teleport(app, entity if entity is not None else 10**6, translation, rotation)
        elif name == "tear":
            entity = self.cloth_entity(a[0])
            if entity is not None:
                app.add_component(entity, loom.Tearable(tear_strain=a[1]))
        elif name == "write":                           # in place: numpy's own errors are not Loom's
            kind, k, field, index, v = a
            target = self.component(kind, k)
            arr = None if target is None else getattr(target, field, None)
            if isinstance(arr, np.ndarray) and arr.size:
                flat = arr.reshape(-1) if arr.flags.c_contiguous else None
                try:
                    if flat is not None:
                        flat[int(index) % flat.size] = v
                except Exception:                       # noqa: BLE001 - numpy refusing a write is fine
                    pass
        elif name == "assign":
            kind, k, field, v = a
            target = self.component(kind, k)
            if target is not None:
                setattr(target, field, np.asarray(v) if isinstance(v, list) else v)
        elif name == "replace_cloth":                   # a smaller Cloth on an entity that may hold a Pin
            entity = self.cloth_entity(a[0])
            if entity is not None:
                sheet = loom.mesh.grid(a[1], a[1], 0.5, 0.5, plane="xz")
                app.add_component(entity, loom.Cloth.from_mesh(sheet, model=a[2]))
        elif name == "remove":
            entity = self.cloth_entity(a[0])
            if entity is not None:
                app.remove_component(entity, getattr(loom, a[1]))
        elif name == "despawn":
            entity = self.cloth_entity(a[0])
            app.despawn(entity if entity is not None else 10**6)
        elif name == "resource":
            kind, v = a
            resource = {"str": lambda: "a plain string", "gravity": lambda: loom.Gravity(v),
                        "dict": lambda: {"level": 1}, "int": lambda: 7}[kind]()
            app.insert_resource(resource)
        elif name == "save":
            self.snapshot("save_snapshot")
        elif name == "load_garbage":
            path = self.folder / "garbage.loom"
            path.write_bytes(b"LOOMSNAP" + bytes(a[0] % 256 for _ in range(80)))
            loom.load_snapshot(app, path)
        else:
            raise AssertionError(f"unknown operation {name}")


def run_sequence(ops: list[list[Any]], folder: Path, progress: Any = None) -> list[str]:
    """Play ``ops`` (the first makes the App) and return the rules broken, each naming the operation."""
    run = Run(folder)
    try:
        for k, (name, *args) in enumerate(ops):
            if progress is not None:
                progress(k)
            if run.app is None and name != "app":
                continue
            try:
                run.op(name, args)
            except Exception as error:              # noqa: BLE001 - the rule being checked
                if name == "write":
                    continue
                if not documented(error):
                    run.broken.append(f"op {k} {name}{tuple(args)!r}: undocumented {type(error).__module__}."
                                      f"{type(error).__qualname__}: {str(error)[:300]}")
                elif not str(error).strip():
                    run.broken.append(f"op {k} {name}{tuple(args)!r}: {type(error).__name__} with an empty message")
            if run.broken:
                break
    finally:
        for app in run.apps:
            try:
                app.close()
            except Exception:                           # noqa: BLE001
                pass
    return run.broken


def reproduction(ops: list[list[Any]]) -> str:
    """``ops`` as the Python lines a reader can paste (one operation per line, the interpreter's names)."""
    return "\n".join(f"    {json.dumps(op)}," for op in ops)


def worker() -> None:
    """Read sequences (one JSON list a line) from stdin; print ``op k`` before each operation, ``done <json>`` after."""
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    out = sys.stdout

    def progress(k: int) -> None:
        out.write(f"op {k}\n")
        out.flush()

    with tempfile.TemporaryDirectory() as folder:
        out.write("ready\n")
        out.flush()
        for line in sys.stdin:
            ops = json.loads(line)
            broken = run_sequence(ops, Path(folder), progress)
            out.write("done " + json.dumps(broken) + "\n")
            out.flush()


# --- the parent's side ------------------------------------------------------------------------------------------
class Worker:
    """A worker process playing sequences one at a time; restarted after a sequence kills or hangs it."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.process: Any = None
        self.lines: Any = None

    def _start(self) -> None:
        import queue
        import subprocess
        import threading
        env = {**os.environ, "SDL_VIDEODRIVER": "offscreen", "SDL_AUDIODRIVER": "dummy"}
        self.errors = tempfile.TemporaryFile("w+")     # a file, not a pipe: a chatty worker never blocks
        self.process = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self.errors, text=True, env=env)
        self.lines = queue.Queue()
        stream, lines = self.process.stdout, self.lines

        def pump() -> None:
            for line in stream:
                lines.put(line.rstrip("\n"))
            lines.put(None)
        threading.Thread(target=pump, daemon=True).start()
        self._expect("ready", 120.0)

    def _expect(self, word: str, timeout: float) -> str:
        import queue
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(word) from None
        if line is None:
            raise EOFError(word)
        return line

    def play(self, ops: list[list[Any]]) -> list[str]:
        """The rules ``ops`` broke, with a killed or hung worker blamed on the operation it was running."""
        if self.process is None or self.process.poll() is not None:
            self._start()
        self.process.stdin.write(json.dumps(ops) + "\n")
        self.process.stdin.flush()
        current = -1
        while True:
            try:
                line = self._expect("done", self.timeout)
            except TimeoutError:
                self.close()
                return [f"hung: op {current} {ops[current] if current >= 0 else ''} ran over {self.timeout:g} s"]
            except EOFError:
                code = self.process.wait()
                self.errors.seek(0)
                tail = self.errors.read()[-600:]
                self.process = None
                return [f"worker killed (exit {code}) in op {current} {ops[current] if current >= 0 else ''}: "
                        f"{tail.strip()}"]
            if line.startswith("op "):
                current = int(line[3:])
            elif line.startswith("done "):
                return json.loads(line[5:])

    def close(self) -> None:
        """End the worker (killed if it does not leave when its stdin closes)."""
        if self.process is None:
            return
        try:
            self.process.stdin.close()
            self.process.wait(timeout=10)
        except Exception:                               # noqa: BLE001 - a hung worker
            self.process.kill()
            self.process.wait()
        self.process = None


if __name__ == "__main__":
    os.environ.setdefault("SDL_VIDEODRIVER", "offscreen")
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    worker()
