"""No in-place write kills the process: every public array of every component and resource, written in place with an
out-of-range, a negative, a NaN and a 1e308 value, then a step — in a subprocess, so a crash shows as a signal.

Each write either raises ValueError (rest data and index tables are read-only arrays), or the step raises a
documented error, or the step runs and leaves every cloth's state finite and sane (the guard restores a state
broken between steps and refuses an exploded step). The arrays are found by walking the attributes of every
component of a scene holding one of each kind (every model, pins world-fixed and carried, a grab, a tearable
cloth, every collider shape, wind zones, a blower, a pymunk body) and of every public resource (a type exported by
``loom``, ``loom.components`` or ``loom.systems``; systems' own scratch is not the game's to write), so a new field is
covered without touching this file. Cases are split over a few subprocesses (``GROUPS``); each prints one JSON
line per case, and the last case a dead process started is named.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

GROUPS = 3
"""Subprocesses the cases are dealt over (case k runs in group k % GROUPS)."""

DOCUMENTED = ("ValueError", "TypeError", "KeyError", "RuntimeError", "OSError", "FieldError")
"""Exception types a public call may raise (Loom's subclasses of them included)."""

CHILD = textwrap.dedent(r'''
    import json, math, os, sys, warnings, logging
    import numpy as np
    import pymunk
    import loom
    from loom import components as C
    from loom import systems as SYSTEMS
    from loom.components.inertia import Inertia
    from loom.components import (Blower, Cloth, Collider, Grab, Pin, RigidBody2D, Space2D, Tearable, Transform, Wind,
                                 WindBox, WindSphere)
    from loom.engine import mesh
    sys.path.insert(0, os.path.join(os.path.dirname(loom.__file__), "tests"))
    from shape_examples import every_shape

    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    GROUP, GROUPS = int(sys.argv[1]), int(sys.argv[2])
    DOCUMENTED = (ValueError, TypeError, KeyError, RuntimeError, OSError)

    def scene():
        """One of every kind of component on small cloths, stepped twice: (app, {label: object})."""
        app = loom.App(dt=1 / 60, substeps=4)
        app.add_plugin(loom.DefaultPlugins)
        space = pymunk.Space()
        space.gravity = (0.0, -9.81)
        body = pymunk.Body(1.0, 10.0)
        body.position = (0.3, -0.6)
        space.add(body, pymunk.Circle(body, 0.15))
        app.insert_resource(Space2D(space))
        app.spawn(RigidBody2D(body))
        carrier = app.spawn(Transform(position=(0.0, 1.0, 0.0)))
        objects = {}
        grid = mesh.grid(5, 5, 0.5, 0.5, center=(0.0, 0.5, 0.0), plane="xz")
        for k, model in enumerate(("xpbd", "verlet", "mass_spring", "implicit")):
            cloth = Cloth.from_mesh(grid, model=model)
            pin = Pin.edge(grid, "top") if k % 2 == 0 else Pin(grid.side("top"), attach_to=carrier)
            entity = app.spawn(cloth, pin, Inertia(frame=carrier))
            objects[f"Cloth[{model}]"] = cloth
            objects[f"Pin[{model}]"] = pin
            if model == "xpbd":
                tear = Tearable(tear_strain=0.3)
                app.add_component(entity, tear)
                objects["Tearable"] = tear
                grab = Grab(active=True, cloth=entity, particle=12, target=(0.0, 0.2, 0.1))
                app.spawn(grab)
                objects["Grab"] = grab
        rope = Cloth.from_particles([[0.0, 2.0, 0.0], [0.1, 2.0, 0.0], [0.2, 2.0, 0.0]], mass=0.01,
                                    links=[[0, 1], [1, 2]], self_collision=True, precision="float32")
        app.spawn(rope, Pin(index=[0]))
        objects["Cloth[float32 rope]"] = rope
        shapes = {type(shape).__name__: shape for shape in every_shape(0.6)}     # every shape of collider.SHAPES
        for k, (name, shape) in enumerate(shapes.items()):
            transform = Transform(position=(0.4 * k - 1.2, -0.3 if name != "Plane" else -2.0, 0.0))
            collider = Collider(shape)
            app.spawn(collider, transform)
            objects[f"Collider[{name}]"] = collider
            objects[f"{name}"] = shape
            objects[f"Transform[{name}]"] = transform
        box = WindBox(center=(0.0, 0.5, 0.0), half_size=(2.0, 2.0, 2.0), edge=0.1)
        ball = WindSphere(center=(0.0, 0.5, 0.0), radius=2.0)
        for label, wind in (("Wind[box]", Wind(velocity=(3.0, 0.0, 1.0), region=box, turbulence=0.2)),
                            ("Wind[sphere]", Wind(velocity=(0.0, 0.0, 2.0), region=ball, gust=0.3))):
            app.spawn(wind)
            objects[label] = wind
        objects["WindBox"], objects["WindSphere"] = box, ball
        blower = Blower(origin=(0.0, 0.5, 2.0), active=True)
        app.spawn(blower)
        objects["Blower"] = blower
        app.step(2)
        for entity, component in app.query(RigidBody2D):
            objects["RigidBody2D"] = component
        public = [getattr(module, name) for module in (loom, C, SYSTEMS)
                  for name in getattr(module, "__all__", dir(module))]
        public = {t for t in public if isinstance(t, type)}
        for resource_type, resource in app.resources.items():       # the public ones: a system's own scratch
            if resource_type in public:                             # is not the game's to write
                objects[f"resource {resource_type.__name__}"] = resource
        return app, objects

    def arrays(objects):
        """(label, attribute) of every public ndarray attribute of every object, and of every array in a public
        tuple attribute as ``name[k]`` (ColliderSet.mesh_arrays), sorted, deterministic."""
        found = []
        for label, obj in objects.items():
            for name, value in sorted(vars(obj).items()):
                if name.startswith("_"):
                    continue
                if isinstance(value, np.ndarray) and value.size:
                    found.append((label, name))
                elif isinstance(value, tuple):
                    found += [(label, f"{name}[{k}]") for k, item in enumerate(value)
                              if isinstance(item, np.ndarray) and item.size]
        return found

    def array_of(obj, name):
        """The array ``arrays`` named: an attribute, or ``name[k]``, the k-th item of a tuple attribute."""
        if name.endswith("]"):
            name, k = name[:-1].split("[")
            return getattr(obj, name)[int(k)]
        return getattr(obj, name)

    def values(arr):
        if arr.dtype.kind == "b":
            return {"true": True, "false": False}
        return {"out_of_range": 10**6, "negative": -1, "nan": math.nan, "huge": 1e308}

    def sane(app):
        for _, cloth in app.query(Cloth):
            if not (np.isfinite(cloth.x).all() and np.abs(cloth.x).max() <= 1e6 and np.abs(cloth.v).max() <= 1e4):
                return False
        return True

    app, objects = scene()
    cases = [(label, name, key) for label, name in arrays(objects)
             for key in values(array_of(objects[label], name))]
    print(json.dumps({"count": len(cases)}), flush=True)
    fresh = True
    for k, (label, name, key) in enumerate(cases):
        if k % GROUPS != GROUP:
            continue
        if not fresh:
            app, objects = scene()
        fresh = True
        print(json.dumps({"start": [label, name, key]}), flush=True)
        arr = array_of(objects[label], name)
        result = {"case": [label, name, key]}
        try:
            with np.errstate(all="ignore"):
                arr[...] = values(arr)[key]
        except ValueError:
            result["outcome"] = "write refused"
            result["read_only"] = not arr.flags.writeable
            print(json.dumps(result), flush=True)
            continue
        except (OverflowError, TypeError) as exc:     # numpy's own refusal of the value (1e308 into an int array)
            result["outcome"] = "write refused"
            result["read_only"] = not arr.flags.writeable
            print(json.dumps(result), flush=True)
            continue
        fresh = False
        try:
            with np.errstate(all="ignore"):
                app.step(2)
        except DOCUMENTED as exc:
            result["outcome"] = f"step refused ({type(exc).__name__})"
            result["message"] = str(exc)[:200]
        except Exception as exc:
            result["outcome"] = f"step raised {type(exc).__name__}: {str(exc)[:200]}"
        else:
            result["outcome"] = "stepped" if sane(app) else "stepped into an absurd state"
        print(json.dumps(result), flush=True)
    print(json.dumps({"end": GROUP}), flush=True)
''')


def _run(group: int) -> tuple[list[dict], subprocess.CompletedProcess]:
    env = {**os.environ, "LOOM_COMPILE_AHEAD": "0", "SDL_VIDEODRIVER": "offscreen", "SDL_AUDIODRIVER": "dummy"}
    done = subprocess.run([sys.executable, "-c", CHILD, str(group), str(GROUPS)], capture_output=True, text=True,
                          env=env, timeout=600)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return lines, done


@pytest.mark.parametrize("group", range(GROUPS))
def test_in_place_writes_into_every_public_array_never_kill_the_process(group):
    lines, done = _run(group)
    started = [line["start"] for line in lines if "start" in line]
    assert done.returncode == 0 and lines and "end" in lines[-1], (
        f"the process died (return code {done.returncode}) in case {started[-1] if started else None}:\n"
        f"{done.stderr[-3000:]}")
    results = [line for line in lines if "case" in line]
    assert results and len(results) == len(started)
    allowed = ("write refused", "stepped") + tuple(f"step refused ({name})" for name in DOCUMENTED)
    bad = [f"{r['case']}: {r['outcome']}" for r in results if r["outcome"] not in allowed]
    assert not bad, "\n".join(bad)


def test_the_index_tables_and_rest_data_refuse_in_place_writes():
    # the arrays kernels index with are read-only: the write itself raises, no step can see it
    import numpy as np

    from loom.components import Cloth, ColliderSet, Pin, Tearable, TriangleMesh
    from loom.engine import mesh
    from loom.systems.xpbd import XPBDClothData
    grid = mesh.grid(4, 4, 1.0, 1.0)
    cloth, pin, tear = Cloth.from_mesh(grid), Pin.edge(grid, "top"), Tearable()
    tri = TriangleMesh([[0, 0, 0], [1, 0, 0], [0, 0, 1]], [[0, 2, 1]])
    tables = [(cloth, name) for name in ("link_i", "link_j", "links", "triangles", "bend_quads", "link_order",
                                         "link_color_offsets", "bend_color_offsets", "link_max",
                                         "link_rest", "link_compliance", "rest_x", "mass", "base_inv_mass")]
    data = XPBDClothData.of(cloth)                                  # XPBD's own tables of the cloth
    tables += [(data, name) for name in ("tether_offsets", "tether_anchor", "tether_length", "tether_anchor_mask")]
    tables += [(pin, "index"), (tear, "piece"), (tear, "crack"), (tri, "triangles"), (tri, "cell_start"),
               (tri, "cell_triangles"), (tri, "grid_shape")]
    for owner, name in tables:
        arr = getattr(owner, name)
        assert not arr.flags.writeable, f"{type(owner).__name__}.{name} is writable"
        if arr.size:
            with pytest.raises(ValueError, match="read-only"):
                arr.reshape(-1)[0] = 10**6 if arr.dtype.kind in "iu" else -1.0
    packed = ColliderSet()                                          # the packed meshes kernels index with
    packed.pack_meshes([tri])
    for k, arr in enumerate(packed.mesh_arrays):
        assert not arr.flags.writeable, f"ColliderSet.mesh_arrays[{k}] is writable"
    for name in ("x", "v", "x_prev", "force", "inv_mass"):          # the state stays writable
        assert getattr(cloth, name).flags.writeable, name
    assert pin.target.flags.writeable                               # games move targets in place (README)
    # assignment of a new array stays allowed, is checked, and stores a read-only copy
    table = cloth.link_max * 2.0
    cloth.link_max = table
    assert not cloth.link_max.flags.writeable and cloth.link_max is not table and table.flags.writeable
    with pytest.raises(ValueError, match=r"Cloth\.link_max\[0\] = -1\.0"):
        cloth.link_max = np.full(cloth.link_count, -1.0)
    with pytest.raises(ValueError, match=r"Pin\.index"):
        pin.index = np.full(pin.count, -1)


SMALLER = textwrap.dedent(r'''
    import sys
    import loom
    from loom.components import Cloth, Pin
    from loom.engine import mesh
    model = sys.argv[1]
    app = loom.App(dt=1 / 60, substeps=4)
    app.add_plugin(loom.DefaultPlugins)
    big = mesh.grid(8, 8, 1.0, 1.0, center=(0.0, 1.0, 0.0), plane="xz")
    entity = app.spawn(Cloth.from_mesh(big, model=model), Pin.edge(big, "top"))
    app.step(2)
    app.add_component(entity, Cloth.from_mesh(mesh.grid(3, 3, 1.0, 1.0), model=model))
    try:
        app.step(3)
    except ValueError as exc:
        print("REFUSED", exc)
    else:
        print("STEPPED")
''')


@pytest.mark.parametrize("model", ["xpbd", "implicit"])
def test_a_pinned_cloth_replaced_by_a_smaller_one_is_refused_not_a_crash(model):
    # the Pin of an 8×8 cloth pins particles 56..63; the new 3×3 cloth has 9: the next step must say so, not
    # write past the new arrays (SIGSEGV, or "double free or corruption" for the implicit model)
    done = subprocess.run([sys.executable, "-c", SMALLER, model], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "LOOM_COMPILE_AHEAD": "0"})
    assert done.returncode == 0, f"return code {done.returncode}: {done.stderr[-2000:]}"
    assert "REFUSED Pin.index[0] = 56: out of range for a cloth of 9 particles" in done.stdout, done.stdout
    assert "the entity's Cloth was replaced" in done.stdout and "64 particles" in done.stdout
