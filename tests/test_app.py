"""App: entities and components, separate worlds, resources, the fixed-step accumulator, events, the guard, run()."""
from __future__ import annotations

import gc
import json
import math

import esper
import numpy as np
import pytest

from loom.components import Cloth, ClothMaterial, Gravity, Pin, Transform
from loom.engine import App, Stage, mesh
from loom.systems import ClothSet, DefaultPlugins

DT = 1.0 / 60.0            # [s]


def small_cloth(**options) -> Cloth:
    """A 4×4 particle, 1 m square sheet (16 particles)."""
    return Cloth.from_mesh(mesh.grid(4, 4, 1.0, 1.0), **options)


# --- entities and components ------------------------------------------------------------------------------------

def test_spawn_returns_an_entity_whose_components_get_returns(new_app):
    app = new_app()
    where, pin = Transform(position=(1.0, 2.0, 3.0)), Pin(index=[0])
    entity = app.spawn(where, pin)
    assert app.get(entity, Transform) is where
    assert app.get(entity, Pin) is pin
    assert app.entities() == [entity]


def test_get_of_a_missing_component_raises_key_error_naming_the_type(new_app):
    app = new_app()
    entity = app.spawn(Transform())
    with pytest.raises(KeyError, match=rf"entity {entity} has no Pin component"):
        app.get(entity, Pin)


def test_try_get_returns_none_for_a_missing_component_or_entity(new_app):
    app = new_app()
    entity = app.spawn(Transform())
    assert app.try_get(entity, Pin) is None
    assert app.try_get(entity + 100, Transform) is None


def test_add_component_attaches_and_replaces_one_of_the_same_type(new_app):
    app = new_app()
    entity = app.spawn(Transform())
    pin = Pin(index=[2])
    app.add_component(entity, pin)
    assert app.get(entity, Pin) is pin
    moved = Transform(position=(0.0, 5.0, 0.0))
    app.add_component(entity, moved)
    assert app.get(entity, Transform) is moved
    assert [e for e, _ in app.query(Transform)] == [entity]


def test_remove_component_returns_it_and_detaches_it(new_app):
    app = new_app()
    where = Transform()
    entity = app.spawn(where, Pin(index=[0]))
    assert app.remove_component(entity, Transform) is where
    assert app.try_get(entity, Transform) is None
    assert app.query(Transform) == []
    with pytest.raises(KeyError, match="Transform"):
        app.remove_component(entity, Transform)


def test_query_returns_entities_holding_every_type_in_id_order(new_app):
    app = new_app()
    a = app.spawn(Transform(), Pin(index=[0]))
    b = app.spawn(Transform())
    c = app.spawn(Transform(), Pin(index=[1]))
    assert [e for e, _ in app.query(Transform)] == [a, b, c]
    assert [(e, type(t), type(p)) for e, t, p in app.query(Transform, Pin)] == [(a, Transform, Pin),
                                                                                (c, Transform, Pin)]


def test_despawn_deletes_the_entity_now(new_app):
    app = new_app()
    keep = app.spawn(Transform())
    gone = app.spawn(Transform())
    app.despawn(gone)
    assert app.entities() == [keep]
    assert app.try_get(gone, Transform) is None
    assert [e for e, _ in app.query(Transform)] == [keep]


def test_despawn_of_a_missing_entity_raises_key_error(new_app):
    app = new_app()
    entity = app.spawn(Transform())
    app.despawn(entity)
    with pytest.raises(KeyError, match=rf"despawn: entity {entity} does not exist"):
        app.despawn(entity)
    with pytest.raises(KeyError, match=r"despawn: entity 999 does not exist"):
        app.despawn(999)


# --- separate worlds ------------------------------------------------------------------------------------------------

def test_two_apps_do_not_see_each_others_entities_when_calls_interleave(new_app):
    a, b = new_app(), new_app()
    in_a = Transform(position=(1.0, 0.0, 0.0))
    ea = a.spawn(in_a)
    assert [t for _, t in a.query(Transform)] == [in_a]           # fills a's query cache
    in_b = Transform(position=(2.0, 0.0, 0.0))
    eb = b.spawn(in_b, Gravity())
    assert [t for _, t in a.query(Transform)] == [in_a]
    assert [t for _, t in b.query(Transform)] == [in_b]
    assert a.query(Gravity) == []
    assert ea == eb == 1                                          # each world numbers its own entities
    assert a.get(ea, Transform) is in_a and b.get(eb, Transform) is in_b
    second_a = a.spawn(Transform())
    assert [e for e, _ in a.query(Transform)] == [ea, second_a]
    assert [e for e, _ in b.query(Transform)] == [eb]
    b.despawn(eb)
    assert a.entities() == [ea, second_a]


def test_each_app_has_its_own_esper_world_and_close_deletes_it(new_app):
    a, b = new_app(), new_app()
    assert a.world != b.world
    assert {a.world, b.world} <= set(esper.list_worlds())
    a.spawn(Transform())
    a.close()
    assert a.world not in esper.list_worlds()
    assert b.world in esper.list_worlds()
    b.spawn(Transform())                                           # b still works after a closed
    assert len(b.entities()) == 1


# --- resources --------------------------------------------------------------------------------------------------------

def test_insert_resource_stores_one_per_type(new_app):
    app = new_app()
    first = Gravity((0.0, -1.0, 0.0))
    assert app.insert_resource(first) is first
    assert app.resource(Gravity) is first
    second = Gravity((0.0, -2.0, 0.0))
    assert app.insert_resource(second) is second
    assert app.resource(Gravity) is second


def test_insert_resource_without_replace_keeps_the_existing_one(new_app):
    app = new_app()
    first = app.insert_resource(Gravity((0.0, -1.0, 0.0)))
    assert app.insert_resource(Gravity(), replace=False) is first
    assert app.resource(Gravity) is first


def test_a_missing_resource_raises_key_error_naming_the_type(new_app):
    with pytest.raises(KeyError, match=r"no Gravity resource; insert one with insert_resource"):
        new_app().resource(Gravity)


def test_default_plugins_insert_standard_gravity(new_app):
    app = new_app(plugins=True)
    assert app.resource(Gravity).acceleration.tolist() == [0.0, -9.81, 0.0]


def test_gravity_inserted_before_the_plugins_survives_and_drives_the_cloth(new_app):
    app = new_app(substeps=4)
    moon = app.insert_resource(Gravity((0.0, -1.62, 0.0)))
    app.add_plugin(DefaultPlugins)
    assert app.resource(Gravity) is moon
    ball = Cloth.from_particles([[0.0, 0.0, 0.0]], 1.0, [], material=ClothMaterial(damping=0.0))
    app.spawn(ball)
    app.step()
    # symplectic Euler: v grows by g·h each substep, so after one step v = g·dt up to rounding of (x − x_prev)/h
    assert ball.v[0, 1] == pytest.approx(-1.62 * DT, rel=1e-9), f"v_y = {ball.v[0, 1]} m/s"


# --- the fixed-step accumulator ---------------------------------------------------------------------------------

def step_dts(app: App) -> list[float]:
    """Record the dt of every fixed step the App takes (a PRE_STEP system)."""
    dts: list[float] = []
    app.add_system(lambda app, dt: dts.append(dt), Stage.PRE_STEP, name="record_step")
    return dts


def test_update_of_one_step_takes_one_step_of_dt(new_app):
    app = new_app(dt=DT)
    dts = step_dts(app)
    assert app.update(DT) == 1
    assert dts == [DT]
    assert app.clock.step_index == 1 and app.clock.time == DT
    assert 0.0 <= app.clock.accumulator < app.clock.dt


def test_half_steps_bank_time_until_a_whole_step_is_owed(new_app):
    app = new_app(dt=DT)
    dts = step_dts(app)
    assert app.update(0.5 * DT) == 0
    assert app.clock.accumulator == pytest.approx(0.5 * DT)
    assert app.update(0.5 * DT) == 1
    assert dts == [DT]
    assert 0.0 <= app.clock.accumulator < app.clock.dt


def test_a_hitch_takes_at_most_max_steps_and_drops_the_rest(new_app):
    app = new_app(dt=DT)
    dts = step_dts(app)
    assert app.clock.max_steps == 4
    assert app.update(1.0) == 4
    assert dts == [DT] * 4
    assert app.clock.dropped == pytest.approx(1.0 - 4 * DT, abs=DT), f"dropped {app.clock.dropped} s"
    assert 0.0 <= app.clock.accumulator < app.clock.dt
    dropped = app.clock.dropped
    assert app.update(1.0) == 4
    assert app.clock.dropped > dropped
    assert app.clock.step_index == 8


def test_the_accumulator_stays_within_one_step_over_many_frame_times(new_app):
    app = new_app(dt=DT, max_steps=3)
    for k in range(200):
        real_dt = (0.0, 0.004, 0.0167, 0.02, 0.033, 0.1, 0.5)[k % 7]       # [s], jittery frame times
        steps = app.update(real_dt)
        assert 0 <= steps <= 3
        assert 0.0 <= app.clock.accumulator < app.clock.dt, f"frame {k}: accumulator {app.clock.accumulator} s"
    assert 0.0 <= app.clock.alpha < 1.0


# --- events -----------------------------------------------------------------------------------------------------------

def test_event_handlers_are_held_strongly_and_receive_the_payload(new_app):
    app = new_app()
    received: list[dict] = []
    app.on("x", lambda **payload: received.append(payload))        # esper would drop this weakly held lambda
    gc.collect()
    app.emit("x", entity=3, force=1.5)
    app.emit("y", ignored=True)
    assert received == [{"entity": 3, "force": 1.5}]


def test_every_handler_of_an_event_is_called_in_order(new_app):
    app = new_app()
    calls: list[str] = []
    app.on("hit", lambda **_: calls.append("first"))
    app.on("hit", lambda **_: calls.append("second"))
    app.emit("hit")
    assert calls == ["first", "second"]


# --- the guard ----------------------------------------------------------------------------------------------------------

def test_a_step_that_writes_nan_is_refused_restored_and_reported(new_app):
    app = new_app(plugins=True, substeps=4)
    cloth = small_cloth()
    entity = app.spawn(cloth)
    app.step()                                                    # one good step: v is no longer zero
    poison = {"on": True}

    def write_nan(app: App, h: float) -> None:
        # only in the last substep, so the NaN cannot spread through the constraints to other particles
        if poison["on"] and app.clock.substep_index == app.clock.substeps - 1:
            app.get(entity, Cloth).x[3] = np.nan

    app.add_system(write_nan, Stage.SUBSTEP, after=ClothSet.CONSTRAIN)
    rejected: list[dict] = []
    app.on("step_rejected", lambda **payload: rejected.append(payload))
    x0, v0 = cloth.x.copy(), cloth.v.copy()
    assert np.abs(v0).max() > 0.0

    app.step()

    assert np.isfinite(cloth.x).all() and np.isfinite(cloth.v).all()
    assert np.array_equal(cloth.x, x0) and np.array_equal(cloth.v, v0)
    assert np.array_equal(cloth.x_prev, x0)
    assert cloth.rejected_steps == 1
    assert rejected == [{"entity": entity, "step": 1, "particle": 3}]

    poison["on"] = False                                          # the next step retries from the restored state
    app.step()
    assert np.isfinite(cloth.x).all() and cloth.rejected_steps == 1
    assert cloth.x[:, 1].mean() < x0[:, 1].mean()                 # and the cloth falls on


def test_without_the_guard_a_nan_step_is_kept(new_app):
    app = new_app(substeps=2)
    app.add_plugin(DefaultPlugins.without("GuardPlugin"))
    cloth = small_cloth()
    app.spawn(cloth)
    app.add_system(lambda app, h: cloth.x.__setitem__(3, np.nan), Stage.SUBSTEP, name="write_nan",
                   after=ClothSet.UPDATE)
    app.step()
    assert np.isnan(cloth.x[3]).all() and cloth.rejected_steps == 0


# --- run() --------------------------------------------------------------------------------------------------------------

def test_run_headless_prints_one_json_report_line(new_app, capsys):
    app = new_app(plugins=True)
    app.spawn(small_cloth(), Pin.corners(mesh.grid(4, 4, 1.0, 1.0), "top"))
    report = app.run(["--headless", "--frames", "5", "--report", "json"])
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert len(lines) == 1, out
    printed = json.loads(lines[0])
    assert printed == report
    assert printed["frames"] == 5
    assert printed["particles"] == 16
    assert printed["nan"] is False
    assert isinstance(printed["max_strain"], float) and math.isfinite(printed["max_strain"])
    assert isinstance(printed["min_y"], float) and printed["min_y"] < 0.5      # the free corners sagged
    assert app.clock.step_index == 5


def test_run_with_a_negative_frame_count_exits_with_a_usage_error(new_app, capsys):
    app = new_app(plugins=True)
    with pytest.raises(SystemExit) as exit_info:
        app.run(["--headless", "--frames", "-1"])
    assert exit_info.value.code == 2
    assert "--frames = -1: must be >= 0" in capsys.readouterr().err
    assert app.clock.step_index == 0


def test_run_without_headless_and_no_window_plugin_stays_headless(new_app, capsys):
    app = new_app(plugins=True)
    app.run(["--frames", "2", "--report", "text"])
    captured = capsys.readouterr()
    assert "running headless" in captured.err
    assert "frames" in captured.out and app.clock.step_index == 2


def test_a_query_of_several_types_is_flattened_once_per_change(new_app):
    app = new_app()
    a = app.spawn(Transform(), Gravity())
    first = app.query(Transform, Gravity)
    assert app.query(Transform, Gravity) is first and first[0][0] == a        # no new list per call
    b = app.spawn(Transform(), Gravity())
    second = app.query(Transform, Gravity)
    assert second is not first and [row[0] for row in second] == [a, b]      # a change rebuilds it
