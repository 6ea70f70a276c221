"""A model from outside the package (tests/toy_model.py: symplectic Euler plus one distance projection per substep),
registered with ``register_model``, gets what the built-in models get without touching Loom's files: pins,
colliders, wind, the guard, and snapshots that resume bit for bit (its own per-cloth data declared ``@persistent``).
Also: ``loom.files`` names no system's internals; the table of classes a file may name is the registry.
"""
from __future__ import annotations

import ast
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import toy_model
from loom.components import Cloth, Collider, Gravity, Pin, Sphere, Transform, Wind
from loom.engine import App, mesh
from loom.engine.persist import name_of, persistent, persistent_classes
from loom.files.snapshot import SnapshotError, class_table, load_snapshot, save_snapshot
from loom.systems import DefaultPlugins, model_plugins
from loom.systems.pipeline.guard import Recovery
from toy_model import ToyCloth, ToyData

ROOT = Path(__file__).resolve().parent.parent
DT, SUBSTEPS = 1.0 / 60.0, 8


def toy_app() -> App:
    """An App with the default pipeline and the toy model's plugin."""
    app = App(dt=DT, substeps=SUBSTEPS)
    app.add_plugin(DefaultPlugins)
    app.add_plugin(model_plugins("toy"))
    return app


def toy_sheet(app: App, n: int = 10, center=(0.0, 1.0, 0.0), pinned: bool = True) -> tuple[int, Cloth, Pin | None]:
    """A horizontal n×n, 1 m toy sheet at ``center`` [m], pinned at its two far corners if ``pinned``."""
    sheet = mesh.grid(n, n, 1.0, 1.0, center=center, plane="xz")
    cloth = Cloth.from_mesh(sheet, model="toy")
    pin = Pin.corners(sheet, "top") if pinned else None
    entity = app.spawn(cloth, *([pin] if pin else []))
    return entity, cloth, pin


def stretch(cloth: Cloth) -> np.ndarray:
    """Each link's length over its rest length [-]."""
    return np.linalg.norm(cloth.x[cloth.link_i] - cloth.x[cloth.link_j], axis=1) / cloth.link_rest


def test_a_free_toy_cloth_without_links_falls_by_symplectic_eulers_discrete_formula():
    app = toy_app()
    x0 = np.array([[0.0, 5.0, 0.0], [1.0, 7.0, -2.0], [-3.0, 2.0, 0.5]])
    v0 = np.array([[1.0, 2.0, 0.0], [0.0, 0.0, 0.0], [-0.5, 3.0, 1.5]])
    cloth = Cloth.from_particles(x0, 0.1, np.zeros((0, 2), np.int32), model="toy")
    cloth.v[:] = v0
    app.spawn(cloth)
    frames = 45
    app.step(frames)
    g = np.asarray(app.resource(Gravity).acceleration)
    h, n = DT / SUBSTEPS, frames * SUBSTEPS
    t = n * h
    # symplectic Euler, v_k = v0 + k·h·g, x_n = x0 + h·Σ_{k=1..n} v_k = x0 + v0·t + ½·g·t² + ½·g·h·t
    symplectic = x0 + v0 * t + 0.5 * g * t * t + 0.5 * g * h * t
    explicit = x0 + v0 * t + 0.5 * g * t * t - 0.5 * g * h * t     # what explicit Euler would give
    np.testing.assert_allclose(cloth.x, symplectic, rtol=0, atol=1e-9)
    np.testing.assert_allclose(cloth.v, v0 + g * t, rtol=0, atol=1e-9)
    assert np.abs(explicit - symplectic).max() > 1e-2              # the check tells the two integrators apart


def test_pins_hold_the_toy_sheet_and_one_projection_per_substep_keeps_links_within_ten_percent():
    app = toy_app()
    _, cloth, pin = toy_sheet(app)
    start = cloth.x.copy()
    app.step(90)
    np.testing.assert_allclose(cloth.x[pin.index], pin.target, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(cloth.x[pin.index], start[pin.index])
    assert start[:, 1].mean() - cloth.x[:, 1].mean() > 0.2         # the rest of it fell
    assert stretch(cloth).max() <= 1.1
    assert np.isfinite(cloth.x).all() and cloth.rejected_steps == 0


def test_the_toy_models_data_comes_with_its_cloth_and_leaves_with_it():
    app = toy_app()
    first, _, _ = toy_sheet(app)
    second, cloth, _ = toy_sheet(app, center=(3.0, 1.0, 0.0))
    app.step(2)
    data = app.resource(ToyData).by_entity
    assert sorted(data) == [first, second] and data[second].x_int.shape == cloth.x.shape
    app.despawn(first)
    assert sorted(data) == [second]


@pytest.mark.parametrize("collider", [True, False])
def test_a_sphere_collider_holds_the_falling_toy_sheet(collider):
    app = toy_app()
    radius, centre = 0.3, np.array([0.0, 0.0, 0.0])
    if collider:
        app.spawn(Collider(Sphere(radius)), Transform(position=tuple(centre)))
    _, cloth, _ = toy_sheet(app, n=12, center=(0.0, 0.5, 0.0), pinned=False)
    app.step(60)
    distance = np.linalg.norm(cloth.x - centre, axis=1)
    if collider:
        assert distance.min() >= radius                            # no particle inside the sphere
        assert cloth.x[:, 1].max() > radius                        # draped over it, not fallen past it
    else:
        assert cloth.x[:, 1].max() < -1.0                          # the same sheet falls through empty space


def test_wind_pushes_the_toy_sheet_downwind():
    shifts = {}
    for blowing in (False, True):
        app = toy_app()
        _, cloth, _ = toy_sheet(app)
        if blowing:
            app.spawn(Wind(velocity=(6.0, 0.0, 0.0)))
        start = cloth.x.copy()
        app.step(60)
        shifts[blowing] = (cloth.x - start)[:, 0].mean()
    assert shifts[True] > 0.02                                     # along the wind, by centimetres,
    assert shifts[True] > 50 * abs(shifts[False])                  # where the still sheet drifts by a fraction of
                                                                   # a mm (the Gauss-Seidel order is not symmetric)


def _twin_runs(first: int, then: int, harm) -> dict[bool, tuple[App, Cloth]]:
    """Two pinned toy sheets stepped ``first`` steps, the second then harmed by ``harm(app, cloth)``, both stepped
    ``then`` more: App and cloth by whether it was harmed."""
    logging.getLogger("loom.guard").setLevel(logging.ERROR)
    runs = {}
    for harmed in (False, True):
        app = toy_app()
        _, cloth, _ = toy_sheet(app)
        app.step(first)
        if harmed:
            harm(app, cloth)
        app.step(then)
        runs[harmed] = app, cloth
    return runs


def _poisoned_runs(poison) -> dict[bool, np.ndarray]:
    """Final x of a pinned toy sheet after 13 + 20 steps, and after 13 steps, one step poisoned by ``poison(cloth)``
    (refused by the guard) and 20 more."""
    def refused_step(app: App, cloth: Cloth) -> None:
        before = cloth.x.copy()
        poison(cloth)
        app.step()
        assert cloth.rejected_steps == 1
        np.testing.assert_array_equal(cloth.x, before)             # the refused step undone

    runs = _twin_runs(13, 20, refused_step)
    for refused, (_, cloth) in runs.items():
        assert cloth.rejected_steps == int(refused)
    return {refused: cloth.x.copy() for refused, (_, cloth) in runs.items()}


@pytest.mark.parametrize("poison", ["nan", "explosion"])
def test_the_guard_refuses_a_bad_toy_step_and_the_retry_costs_exactly_that_step(poison):
    def poisoned(cloth: Cloth) -> None:                            # a force for this step only (cleared after it)
        cloth.force[7, 1] = np.nan if poison == "nan" else 1e12    # 1e12 N: far beyond the guard's MAX_SPEED
    runs = _poisoned_runs(poisoned)
    np.testing.assert_array_equal(runs[True], runs[False])


def test_the_guard_restores_a_toy_state_exploded_between_steps():
    def explode(app: App, cloth: Cloth) -> None:
        cloth.x[3] = 1e7                                           # 10 000 km: an exploded state

    runs = _twin_runs(10, 10, explode)
    for written, (app, cloth) in runs.items():
        assert np.abs(cloth.x).max() < 10.0
        assert app.resource(Recovery).restores == int(written)
        assert cloth.rejected_steps == 0
    np.testing.assert_array_equal(runs[True][1].x, runs[False][1].x)   # continued as if nothing had been written


def _full_scene(app: App) -> tuple[int, Cloth]:
    """A pinned toy sheet in a gusty wind with a sphere under it."""
    app.spawn(Collider(Sphere(0.25)), Transform(position=(0.0, 0.55, 0.2)))
    app.spawn(Wind(velocity=(3.0, 0.0, 1.0), gust=0.5, turbulence=0.3, seed=4))
    entity, cloth, _ = toy_sheet(app, n=12)
    return entity, cloth


def test_a_toy_snapshot_resumes_bit_for_bit_with_the_models_own_data(tmp_path, caplog):
    path = tmp_path / "toy.loom"
    app = toy_app()
    entity, cloth = _full_scene(app)
    app.step(30)
    with caplog.at_level(logging.DEBUG):
        save_snapshot(app, path)
    assert not [r for r in caplog.records if "ToyData" in r.getMessage()]   # saved, not skipped
    app.step(40)

    resumed = toy_app()
    entity2, cloth2 = _full_scene(resumed)
    assert entity2 == entity
    load_snapshot(resumed, path)
    loaded = resumed.get(entity, Cloth)
    data = resumed.resource(ToyData).by_entity[entity]             # the model's data came from the file
    assert type(data) is ToyCloth and data.cloth is loaded
    np.testing.assert_array_equal(data.rest, cloth.link_rest)
    resumed.step(40)
    assert np.abs(cloth.x - cloth.x[0]).max() > 0.05               # it moved: the comparison means something
    np.testing.assert_array_equal(loaded.x, cloth.x)
    np.testing.assert_array_equal(loaded.v, cloth.v)


def test_toy_data_that_does_not_fit_its_cloth_is_refused_before_a_file_is_written(tmp_path):
    app = toy_app()
    entity, cloth, _ = toy_sheet(app)
    app.step(3)
    app.resource(ToyData).by_entity[entity].rest = np.ones(cloth.link_count - 1)   # one link short
    with pytest.raises(SnapshotError, match=r"ToyData.by_entity\[\d+\].rest"):
        save_snapshot(app, tmp_path / "bad.loom")
    assert not (tmp_path / "bad.loom").exists()


def test_the_toy_models_classes_are_in_the_table_a_file_may_name():
    names = class_table(None).by_name
    assert names[name_of(ToyData)] is ToyData and names[name_of(ToyCloth)] is ToyCloth
    assert {ToyData, ToyCloth} <= set(persistent_classes())
    assert toy_model.MODEL == "toy"


def test_persistent_returns_the_class_itself_and_refuses_what_is_not_a_class():
    class Local:
        pass
    assert persistent(Local) is Local and class_table(None).lookup(name_of(Local)) is Local
    with pytest.raises(TypeError, match="not a class"):
        persistent(Local())


# --- files/ and the registry ---------------------------------------------------------------------------------------
def _system_internals(path: Path) -> list[str]:
    """The ``loom.systems.<concern>.<module>`` (or deeper) modules ``path`` imports, and names imported from a
    ``loom.systems.<concern>`` package (its internals by another route)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("loom.systems.")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("loom.systems."):
                found.append(node.module)
            elif node.module == "loom.systems":
                found += [f"loom.systems.{a.name}" for a in node.names if a.name[0].islower()
                          and a.name not in ("model_names", "model_plugins", "register_model")]
    return found


def test_files_import_no_systems_internals():
    imports = {p.name: _system_internals(p) for p in sorted((ROOT / "files").glob("*.py"))}
    assert len(imports) >= 8                                         # the files package was found
    assert not {name: found for name, found in imports.items() if found}


def test_the_ast_check_finds_a_systems_internal(tmp_path):
    """The check above can fail: it sees each way of importing a system's module, and lets the registry pass."""
    probe = tmp_path / "probe.py"
    probe.write_text("import loom.systems\nfrom loom.engine.persist import persistent_classes\n"
                     "from loom.systems import DefaultPlugins, register_model\n"
                     "def f():\n    from loom.systems.models import verlet\n    import loom.systems.pipeline.guard\n"
                     "    from loom.systems import xpbd\n")
    assert _system_internals(probe) == ["loom.systems.models", "loom.systems.pipeline.guard", "loom.systems.xpbd"]


_FRESH = """
import importlib, json, pkgutil, sys
from loom.files.snapshot import class_table
before = sorted(m for m in sys.modules if m.startswith("loom.systems."))
table = sorted(class_table(None).by_name)
import loom
for info in pkgutil.walk_packages(loom.__path__, "loom."):
    parts = info.name.split(".")
    if parts[1] not in ("games", "benchmarks", "tests", "docs", "examples", "scripts") and parts[-1] != "__main__":
        importlib.import_module(info.name)
from loom.engine.persist import name_of, persistent_classes
print(json.dumps([before, table, sorted(name_of(c) for c in persistent_classes())]))
"""


def test_a_program_that_imports_only_loom_files_knows_every_persistent_class_of_loom():
    """The table a fresh program builds holds every class any module of Loom declares persistent, though it
    imported no system module itself (a file may name a class whose module nothing imported yet)."""
    out = subprocess.run([sys.executable, "-c", _FRESH], capture_output=True, text=True, timeout=600,
                         cwd=ROOT.parent, env={**os.environ, "SDL_VIDEODRIVER": "offscreen",
                                               "SDL_AUDIODRIVER": "dummy"})
    assert out.returncode == 0, out.stderr[-2000:]
    before, table, everything = json.loads(out.stdout.strip().splitlines()[-1])
    assert not [m for m in before if m.count(".") >= 3]             # no system module was imported beforehand
    assert len(everything) >= 60 and "loom.components.cloth.Cloth" in table
    assert not set(everything) - set(table)
