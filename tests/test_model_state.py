"""Cloth as model / state / solver data: the Cloth holds topology, rest data and state; each model keeps its own
per-cloth data (XPBD's multipliers and tethers) made when it meets the cloth and dropped with the entity; the
pipeline clears every model's forces; one change signal (``Cloth.changes``) tells every model that pins, grabs,
masses or the topology changed, or that the guard refused a step."""
from __future__ import annotations

import dataclasses
import logging

import numpy as np

from loom import load_snapshot, save_snapshot
from loom.components import Cloth, Grab, Pin, VerletSettings
from loom.engine import App, mesh
from loom.systems import ClothPlugin, GuardPlugin, PinPlugin, model_plugins
from loom.systems.xpbd import XPBDData, xpbd_data

SOLVER_FIELDS = ("link_lambda", "bend_lambda", "tether_offsets", "tether_anchor", "tether_length",
                 "tether_anchor_mask")


def _sheet(app: App, n: int = 8, **options) -> tuple[int, Cloth, Pin]:
    sheet = mesh.grid(n, n, 1.0, 1.0, plane="xz")
    cloth = Cloth.from_mesh(sheet, **options)
    pin = Pin.corners(sheet, "top")
    return app.spawn(cloth, pin), cloth, pin


def test_the_cloth_holds_no_solver_data_xpbd_makes_its_own_and_drops_it_at_despawn(make_app):
    app = make_app(substeps=4)
    entity, cloth, _ = _sheet(app)
    verlet, _, _ = _sheet(app, model="verlet", settings=VerletSettings())
    fields = {f.name for f in dataclasses.fields(Cloth)}
    assert not fields & set(SOLVER_FIELDS), f"XPBD's data on every Cloth: {sorted(fields & set(SOLVER_FIELDS))}"
    app.step(2)
    data = xpbd_data(app, entity)
    assert data.link_lambda.shape == (cloth.link_count,) and data.bend_lambda.shape == (cloth.bend_quads.shape[0],)
    assert data.tether_anchor.size == 2 * (cloth.particle_count - 2), "two tethers per free particle, to the corners"
    assert set(app.resource(XPBDData).by_entity) == {entity}, "a Verlet cloth got XPBD data"
    app.despawn(entity)
    app.step()
    assert app.resource(XPBDData).by_entity == {}, "the despawned cloth's XPBD data was kept"


def test_every_change_a_model_follows_moves_the_change_signal_and_only_it(make_app):
    logging.getLogger("loom.guard").setLevel(logging.ERROR)
    app = make_app(substeps=2)
    entity, cloth, pin = _sheet(app)
    assert cloth.changes == 0
    app.step()
    bound = cloth.changes
    assert bound > 0, "binding the pin (new anchors) did not move the signal"
    app.step(3)
    assert cloth.changes == bound, "steady pins moved the signal"
    before = cloth.changes
    pin.active[0] = False
    app.step()
    assert cloth.changes > before, "a pin let go and the signal stayed"
    before = cloth.changes
    grab = app.get(app.spawn(Grab(active=True, cloth=entity, particle=20, target=cloth.x[20])), Grab)
    app.step()
    assert cloth.changes > before, "a grab took a particle and the signal stayed"
    before = cloth.changes
    app.step(2)
    assert cloth.changes == before, "a steady grab moved the signal"
    grab.active = False
    app.step()
    assert cloth.changes > before, "a grab let go and the signal stayed"
    before, revision = cloth.changes, cloth.revision
    cloth.inv_mass = cloth.inv_mass.copy()
    assert cloth.changes == before + 1, "assigning inverse masses is a change"
    cloth.changed()
    assert cloth.changes == before + 2 and cloth.revision == revision + 1, "changed() replaced no array"
    before = cloth.changes
    cloth.force[5, 1] = np.nan                          # the guard refuses this step
    app.step()
    assert cloth.rejected_steps == 1 and cloth.changes > before, "a refused step did not move the signal"


def test_xpbd_rebuilds_its_tethers_when_the_signal_moves(make_app):
    app = make_app(substeps=2)
    entity, cloth, _ = _sheet(app)
    app.step()
    assert xpbd_data(app, entity).tether_anchor.size == 2 * (cloth.particle_count - 2)
    cloth.inv_mass[cloth.particle_count // 2] = 0.0     # a game fixes a middle particle in place ...
    cloth.changed()                                     # ... and says so
    app.step()
    data = xpbd_data(app, entity)
    assert data.tether_anchor_mask.sum() == 3 and data.tether_anchor.size == 2 * (cloth.particle_count - 3)


def test_the_pipeline_clears_the_forces_of_a_model_without_xpbd():
    app = App(dt=1 / 60, substeps=2)
    for plugin in (ClothPlugin, PinPlugin, GuardPlugin, model_plugins("verlet")):
        app.add_plugin(plugin)
    _, cloth, _ = _sheet(app, model="verlet", settings=VerletSettings())
    cloth.force[:, 0] = 1.0
    app.step()
    assert not cloth.force.any(), "a Verlet cloth's forces were not cleared after the step"
    app.close()


def test_xpbd_data_is_saved_and_resumed_bit_exactly(make_app, tmp_path):
    def scene() -> tuple[App, int, Cloth, Pin]:
        app = make_app(substeps=4)
        return (app, *_sheet(app))

    app, entity, cloth, pin = scene()
    app.step(5)
    pin.active[0] = False                                # the tethers are rebuilt for one anchor
    app.step(5)
    path = tmp_path / "xpbd.loom"
    save_snapshot(app, path)
    saved = {name: getattr(xpbd_data(app, entity), name).copy() for name in SOLVER_FIELDS}
    seen = xpbd_data(app, entity).seen_changes
    app.step(10)
    other, entity2, cloth2, _ = scene()
    load_snapshot(other, path)
    loaded = other.resource(XPBDData).by_entity[entity2]
    for name in SOLVER_FIELDS:
        assert np.array_equal(getattr(loaded, name), saved[name]), name
    assert loaded.seen_changes == seen
    other.step(10)
    cloth2 = other.get(entity2, Cloth)
    assert np.array_equal(cloth2.x, cloth.x) and np.array_equal(cloth2.v, cloth.v)


def test_a_snapshot_taken_after_the_cloth_was_replaced_resumes_bit_exactly(make_app, tmp_path):
    # XPBD's data of the replaced cloth is stale (made for another topology): the file may hold it, the load drops
    # it, and the next step makes the new cloth's data as the uninterrupted run does
    def scene() -> tuple[App, int]:
        app = make_app(substeps=4)
        entity, _, _ = _sheet(app, n=8)
        return app, entity

    app, entity = scene()
    app.step(3)
    sheet = mesh.grid(6, 6, 1.0, 1.0, plane="xz")
    app.add_component(entity, Cloth.from_mesh(sheet))
    app.add_component(entity, Pin.corners(sheet, "top"))
    path = tmp_path / "replaced.loom"
    save_snapshot(app, path)
    other, _ = scene()
    load_snapshot(other, path)
    assert entity not in other.resource(XPBDData).by_entity, "stale XPBD data was loaded for the new cloth"
    app.step(10)
    other.step(10)
    mine, theirs = app.get(entity, Cloth), other.get(entity, Cloth)
    assert mine.particle_count == 36 and np.array_equal(mine.x, theirs.x) and np.array_equal(mine.v, theirs.v)
    assert np.array_equal(xpbd_data(app, entity).tether_anchor, xpbd_data(other, entity).tether_anchor)
