"""Schedule and plugins: stage order, before/after by system and set name, chains, cycles, replacing, disabling."""
from __future__ import annotations

import pytest

from loom.components import Cloth, Gravity
from loom.engine import App, PluginGroup, Stage, mesh
from loom.systems import ClothPlugin, ClothSet, DefaultPlugins

DT = 0.25                  # [s]: a binary fraction, so dt / substeps is exact and dt can be compared with ==
SUBSTEPS = 4


@pytest.fixture
def new_app(new_app):
    """The shared ``new_app`` (tests/conftest.py) with this file's binary-fraction dt and substeps."""

    def factory(**kwargs) -> App:
        return new_app(**{"dt": DT, "substeps": SUBSTEPS, **kwargs})

    return factory


def recorder(calls: list, name: str):
    """A system named ``name`` that appends (name, dt) to ``calls``."""
    def system(app: App, dt: float) -> None:
        calls.append((name, dt))
    system.__name__ = name
    return system


def names_run(calls: list) -> list[str]:
    return [name for name, _ in calls]


def abc_app(new_app, stage: Stage) -> tuple[App, list]:
    """An App with recorders "a", "b", "c" added to ``stage`` in that order, and their shared calls list."""
    app = new_app()
    calls: list = []
    for name in ("a", "b", "c"):
        app.add_system(recorder(calls, name), stage)
    return app, calls


# --- stages ---------------------------------------------------------------------------------------------------

def test_update_runs_every_stage_in_order_with_substeps_and_their_dt(new_app):
    app = new_app()
    calls: list = []
    for stage in reversed(Stage):                            # insertion order must not matter across stages
        app.add_system(recorder(calls, stage.name), stage)
    assert app.update(0.3) == 1                              # 0.3 s owes one step of 0.25 s
    h = DT / SUBSTEPS
    assert calls == [("INPUT", 0.3), ("PRE_STEP", DT), *[("SUBSTEP", h)] * SUBSTEPS, ("POST_STEP", DT),
                     ("RENDER", 0.3)]


def test_step_runs_only_the_fixed_step_stages(new_app):
    app = new_app()
    calls: list = []
    for stage in Stage:
        app.add_system(recorder(calls, stage.name), stage)
    app.step(2)
    one_step = [("PRE_STEP", DT), *[("SUBSTEP", DT / SUBSTEPS)] * SUBSTEPS, ("POST_STEP", DT)]
    assert calls == one_step * 2
    assert app.clock.step_index == 2


def test_update_with_no_step_owed_still_runs_input_and_render(new_app):
    app = new_app()
    calls: list = []
    for stage in Stage:
        app.add_system(recorder(calls, stage.name), stage)
    assert app.update(0.1) == 0
    assert calls == [("INPUT", 0.1), ("RENDER", 0.1)]


def test_substep_systems_see_the_substep_index(new_app):
    app = new_app()
    seen: list[int] = []
    app.add_system(lambda app, h: seen.append(app.clock.substep_index), Stage.SUBSTEP, name="watch")
    app.step(2)
    assert seen == [0, 1, 2, 3] * 2


# --- ordering inside a stage ------------------------------------------------------------------------------------

def test_insertion_order_breaks_ties(new_app):
    app = new_app()
    calls: list = []
    for name in ("c", "a", "b"):
        app.add_system(recorder(calls, name), Stage.SUBSTEP)
    assert app.schedule.names(Stage.SUBSTEP) == ["c", "a", "b"]
    app.step()
    assert names_run(calls) == ["c", "a", "b"] * SUBSTEPS


def test_before_and_after_a_system_name_reorder_systems(new_app):
    app = new_app()
    calls: list = []
    app.add_system(recorder(calls, "last"), Stage.PRE_STEP, after="b")
    app.add_system(recorder(calls, "a"), Stage.PRE_STEP)
    app.add_system(recorder(calls, "b"), Stage.PRE_STEP)
    app.add_system(recorder(calls, "first"), Stage.PRE_STEP, before="a")
    app.add_system(recorder(calls, "middle"), Stage.PRE_STEP, after="a", before="b")
    assert app.schedule.names(Stage.PRE_STEP) == ["first", "a", "middle", "b", "last"]
    app.step()
    assert names_run(calls) == ["first", "a", "middle", "b", "last"]


def test_before_and_after_accept_several_names(new_app):
    app = new_app()
    calls: list = []
    app.add_system(recorder(calls, "x"), Stage.PRE_STEP, after=["a", "b"])
    app.add_system(recorder(calls, "b"), Stage.PRE_STEP)
    app.add_system(recorder(calls, "a"), Stage.PRE_STEP)
    assert app.schedule.names(Stage.PRE_STEP) == ["b", "a", "x"]


def test_before_and_after_a_set_name_order_against_every_member(new_app):
    app = new_app()
    calls: list = []
    app.add_system(recorder(calls, "after_physics"), Stage.SUBSTEP, after="physics")
    app.add_system(recorder(calls, "p1"), Stage.SUBSTEP, in_set="physics")
    app.add_system(recorder(calls, "other"), Stage.SUBSTEP)
    app.add_system(recorder(calls, "p2"), Stage.SUBSTEP, in_set="physics")
    app.add_system(recorder(calls, "before_physics"), Stage.SUBSTEP, before="physics")
    order = app.schedule.names(Stage.SUBSTEP)
    assert order.index("before_physics") < order.index("p1") < order.index("p2") < order.index("after_physics")
    assert order == ["other", "before_physics", "p1", "p2", "after_physics"]   # "other" is free: it goes first


def test_configure_sets_chains_sets_in_the_order_given(new_app):
    app = new_app()
    calls: list = []
    app.add_system(recorder(calls, "draw"), Stage.RENDER, in_set="late")
    app.add_system(recorder(calls, "move"), Stage.RENDER, in_set="early")
    app.add_system(recorder(calls, "blend"), Stage.RENDER, in_set="middle")
    app.configure_sets(Stage.RENDER, "early", "middle", "late")
    assert app.schedule.names(Stage.RENDER) == ["move", "blend", "draw"]
    app.update(0.0)
    assert names_run(calls) == ["move", "blend", "draw"]


def test_configure_sets_skips_sets_with_no_members(new_app):
    app = new_app()
    app.add_system(recorder([], "b"), Stage.PRE_STEP, in_set="B")
    app.add_system(recorder([], "a"), Stage.PRE_STEP, in_set="A")
    app.configure_sets(Stage.PRE_STEP, "A", "EMPTY", "B")
    assert app.schedule.names(Stage.PRE_STEP) == ["a", "b"]


def test_configure_sets_without_chain_imposes_no_order(new_app):
    app = new_app()
    app.add_system(recorder([], "b"), Stage.PRE_STEP, in_set="B")
    app.add_system(recorder([], "a"), Stage.PRE_STEP, in_set="A")
    app.configure_sets(Stage.PRE_STEP, "A", "B", chain=False)
    assert app.schedule.names(Stage.PRE_STEP) == ["b", "a"]


def test_an_unknown_name_raises_when_the_stage_runs(new_app):
    app = new_app()
    app.add_system(recorder([], "mover"), Stage.SUBSTEP, after="ghost")      # not checked yet: plugins come in any order
    with pytest.raises(ValueError, match=r"stage SUBSTEP: mover orders against unknown system or set 'ghost'"):
        app.step()
    with pytest.raises(ValueError, match=r"'ghost' \(known: mover\)"):
        app.schedule.names(Stage.SUBSTEP)


def test_a_name_resolved_later_by_a_plugin_is_accepted(new_app):
    app = new_app()
    app.add_system(recorder([], "mover"), Stage.SUBSTEP, after="ghost")
    app.add_system(recorder([], "ghost"), Stage.SUBSTEP)
    assert app.schedule.names(Stage.SUBSTEP) == ["ghost", "mover"]


def test_a_cycle_raises_naming_the_systems_in_it(new_app):
    app = new_app()
    app.add_system(recorder([], "free"), Stage.POST_STEP)
    app.add_system(recorder([], "a"), Stage.POST_STEP, before="b")
    app.add_system(recorder([], "b"), Stage.POST_STEP, before="c")
    app.add_system(recorder([], "c"), Stage.POST_STEP, before="a")
    with pytest.raises(ValueError, match=r"stage POST_STEP: before/after constraints form a cycle among: a, b, c$"):
        app.step()


def test_a_cycle_through_a_set_chain_raises(new_app):
    app = new_app()
    app.add_system(recorder([], "x"), Stage.PRE_STEP, in_set="A")
    app.add_system(recorder([], "y"), Stage.PRE_STEP, in_set="B", before="x")
    app.configure_sets(Stage.PRE_STEP, "A", "B")
    with pytest.raises(ValueError, match=r"cycle among: x, y"):
        app.schedule.names(Stage.PRE_STEP)


def test_a_duplicate_name_in_one_stage_raises(new_app):
    app = new_app()
    app.add_system(recorder([], "solve"), Stage.SUBSTEP)
    with pytest.raises(ValueError, match=r"add_system: a system named 'solve' is already in stage SUBSTEP"):
        app.add_system(recorder([], "solve"), Stage.SUBSTEP)
    app.add_system(recorder([], "solve"), Stage.POST_STEP)                # another stage is another namespace
    app.add_system(recorder([], "solve"), Stage.SUBSTEP, name="solve_again")
    assert app.schedule.names(Stage.SUBSTEP) == ["solve", "solve_again"]


def test_two_unnamed_lambdas_collide_and_name_separates_them(new_app):
    app = new_app()
    app.add_system(lambda app, dt: None, Stage.RENDER)
    assert app.schedule.names(Stage.RENDER) == ["<lambda>"]
    with pytest.raises(ValueError, match=r"a system named '<lambda>' is already in stage RENDER; pass name="):
        app.add_system(lambda app, dt: None, Stage.RENDER)
    app.add_system(lambda app, dt: None, Stage.RENDER, name="hud")
    assert app.schedule.names(Stage.RENDER) == ["<lambda>", "hud"]


def test_adding_something_not_callable_raises_type_error(new_app):
    with pytest.raises(TypeError, match=r"add_system: 42 is not callable"):
        new_app().add_system(42, Stage.SUBSTEP)


def test_replace_system_keeps_its_place(new_app):
    app, calls = abc_app(new_app, Stage.PRE_STEP)
    app.step()
    app.replace_system("b", recorder(calls, "B2"), Stage.PRE_STEP)
    assert app.schedule.names(Stage.PRE_STEP) == ["a", "b", "c"]        # ordered by its registered name
    calls.clear()
    app.step()
    assert names_run(calls) == ["a", "B2", "c"]


def test_replace_system_of_an_unknown_name_raises_listing_the_stage(new_app):
    app = new_app()
    app.add_system(recorder([], "a"), Stage.PRE_STEP)
    with pytest.raises(ValueError, match=r"no system named 'zz' in stage PRE_STEP \(systems there: a\)"):
        app.replace_system("zz", recorder([], "zz"), Stage.PRE_STEP)


def test_a_disabled_system_is_skipped_and_keeps_its_place(new_app):
    app, calls = abc_app(new_app, Stage.POST_STEP)
    app.step()
    app.schedule.set_enabled(Stage.POST_STEP, "b", False)
    app.step()
    app.schedule.set_enabled(Stage.POST_STEP, "b", True)
    app.step()
    assert names_run(calls) == ["a", "b", "c", "a", "c", "a", "b", "c"]


def test_removing_a_system_drops_it_from_the_order(new_app):
    app = new_app()
    for name in ("a", "b", "c"):
        app.add_system(recorder([], name), Stage.POST_STEP)
    app.schedule.remove(Stage.POST_STEP, "b")
    assert app.schedule.names(Stage.POST_STEP) == ["a", "c"]


# --- ordering against the cloth pipeline ------------------------------------------------------------------------

def test_a_user_system_orders_between_cloth_sets(new_app):
    app = new_app()
    app.add_plugin(DefaultPlugins)
    app.spawn(Cloth.from_mesh(mesh.grid(4, 4, 1.0, 1.0)))
    seen: list[float] = []

    def apply_buoyancy(app: App, h: float) -> None:
        seen.append(h)

    app.add_system(apply_buoyancy, Stage.SUBSTEP, after=ClothSet.PREDICT, before=ClothSet.CONSTRAIN)
    order = app.schedule.names(Stage.SUBSTEP)
    assert order.index("predict_positions") < order.index("apply_buoyancy") < order.index("solve_constraints")
    assert order.index("apply_buoyancy") < order.index("collide_environment") < order.index("update_velocities")
    app.step()
    assert seen == [DT / SUBSTEPS] * SUBSTEPS


def test_default_pipeline_runs_in_the_documented_set_order(new_app):
    # ClothSet's documented order; other systems may sit between these, never out of order
    app = new_app()
    app.add_plugin(DefaultPlugins)

    def in_order(stage, names):
        order = app.schedule.names(stage)
        positions = [order.index(n) for n in names]
        assert positions == sorted(positions), f"{stage.name}: {order}"

    in_order(Stage.PRE_STEP, ["save_state", "sync_bodies", "prepare_pins", "refresh_tethers", "gather_colliders",
                              "step_implicit"])
    in_order(Stage.SUBSTEP, ["predict_positions", "pin_particles", "solve_constraints", "collide_environment",
                             "collide_self", "update_velocities"])
    in_order(Stage.POST_STEP, ["reject_non_finite", "clear_forces"])


# --- plugins ---------------------------------------------------------------------------------------------------------

def test_plugin_group_without_drops_the_member(new_app):
    group = DefaultPlugins.without("GuardPlugin")
    assert "GuardPlugin" not in group.members()
    assert group.members() == [m for m in DefaultPlugins.members() if m != "GuardPlugin"]
    app = new_app()
    app.add_plugin(group)
    assert "GuardPlugin" not in app.plugins
    assert "save_state" not in app.schedule.names(Stage.PRE_STEP)
    assert "reject_non_finite" not in app.schedule.names(Stage.POST_STEP)


def test_plugin_group_without_an_unknown_name_raises_listing_members():
    with pytest.raises(ValueError, match=r"PluginGroup\.without: no member named 'Nope' \(members: ClothPlugin, "
                                         r"IntegrationPlugin, PinPlugin, ConstraintPlugin, .*GuardPlugin.*\)"):
        DefaultPlugins.without("Nope")


def test_adding_the_same_plugin_twice_raises(new_app):
    app = new_app()
    app.add_plugin(ClothPlugin)
    with pytest.raises(ValueError, match=r"add_plugin: ClothPlugin is already added to this App"):
        app.add_plugin(ClothPlugin())                   # an instance is the same plugin as its class
    with pytest.raises(ValueError, match=r"ClothPlugin is already added"):
        app.add_plugin(DefaultPlugins)


def test_a_plain_function_is_a_plugin(new_app):
    app = new_app()
    calls: list = []

    def moon_plugin(app: App) -> None:
        app.insert_resource(Gravity((0.0, -1.62, 0.0)))
        app.add_system(recorder(calls, "tick"), Stage.PRE_STEP)

    app.add_plugin(moon_plugin)
    assert app.plugins == ["moon_plugin"]
    assert app.resource(Gravity).acceleration.tolist() == [0.0, -1.62, 0.0]
    app.step()
    assert calls == [("tick", DT)]
    with pytest.raises(ValueError, match=r"moon_plugin is already added"):
        app.add_plugin(moon_plugin)


def test_a_group_of_plugins_is_built_in_order(new_app):
    app = new_app()
    order: list[str] = []

    def first(app: App) -> None:
        order.append("first")

    def second(app: App) -> None:
        order.append("second")

    app.add_plugin(PluginGroup(second, first))
    assert order == ["second", "first"] and app.plugins == ["second", "first"]


def test_adding_something_that_is_not_a_plugin_raises_type_error(new_app):
    with pytest.raises(TypeError, match=r"add_plugin: 42 is neither a plugin"):
        new_app().add_plugin(42)


# --- run conditions -------------------------------------------------------------------------------------------

def test_run_if_is_checked_once_per_step_after_pre_step(new_app):
    app = new_app()
    calls: list = []
    checks: list = []
    state = {"on": False}

    def switch_on(app: App, dt: float) -> None:              # PRE_STEP decides for this step's substeps
        state["on"] = app.clock.step_index == 1

    def condition(app: App) -> bool:
        checks.append(app.clock.step_index)
        return state["on"]

    app.add_system(switch_on, Stage.PRE_STEP)
    app.add_system(recorder(calls, "sub"), Stage.SUBSTEP, run_if=condition)
    app.step(3)
    assert calls == [("sub", DT / SUBSTEPS)] * SUBSTEPS          # all substeps of step 1, none of 0 and 2
    assert checks == [0, 1, 2]                                   # one check per step, not per substep


def test_run_if_applies_to_input_and_render(new_app):
    app = new_app()
    calls: list = []
    app.add_system(recorder(calls, "render"), Stage.RENDER, run_if=lambda app: False)
    app.add_system(recorder(calls, "input"), Stage.INPUT, run_if=lambda app: True)
    app.update(0.0)
    assert names_run(calls) == ["input"]


def test_run_if_must_be_callable(new_app):
    with pytest.raises(TypeError, match="run_if"):
        new_app().add_system(recorder([], "s"), Stage.SUBSTEP, run_if=True)


def test_replace_system_drops_the_old_condition(new_app):
    app = new_app()
    calls: list = []
    app.add_system(recorder(calls, "old"), Stage.SUBSTEP, name="slot", run_if=lambda app: False)
    app.replace_system("slot", recorder(calls, "new"))
    app.step(1)
    assert names_run(calls) == ["new"] * SUBSTEPS


def test_model_systems_are_skipped_without_a_cloth_of_their_model(new_app):
    app = new_app().add_plugin(DefaultPlugins)
    app.spawn(Cloth.from_mesh(mesh.grid(4, 4, 1.0, 1.0)))            # xpbd
    app.profiling = True
    app.step(1)
    assert "solve_constraints" in app.system_seconds
    assert not {"predict_verlet", "integrate_springs", "collide_self", "move_grabs"} & set(app.system_seconds)
    app.spawn(Cloth.from_mesh(mesh.grid(4, 4, 1.0, 1.0), model="verlet"))
    app.step(1)
    assert "predict_verlet" in app.system_seconds


def test_an_unknown_core_set_says_the_core_plugins_are_missing(new_app):
    app = new_app()

    def sewing(app: App) -> None:
        app.add_system(recorder([], "sew"), Stage.SUBSTEP, after=ClothSet.PIN)

    app.add_plugin(sewing)
    with pytest.raises(ValueError) as info:
        app.step()
    message = str(info.value)
    assert message.startswith("stage SUBSTEP: sew (added by plugin sewing) orders against unknown system or set "
                              "'PIN' (known: sew)")
    assert "'PIN' is ClothSet.PIN, a set of Loom's core pipeline" in message
    assert "add loom.DefaultPlugins (or the plugin that defines ClothSet.PIN) first" in message
    app.add_plugin(DefaultPlugins)
    order = app.schedule.names(Stage.SUBSTEP)
    assert order.index("pin_particles") < order.index("sew")


def test_an_unknown_set_of_another_package_names_its_handle(new_app):
    import enum

    class MySet(enum.Enum):
        SPLASH = "splash"

    app = new_app()
    app.add_system(recorder([], "ripple"), Stage.SUBSTEP, after=MySet.SPLASH)
    with pytest.raises(ValueError) as info:
        app.step()
    assert f"'SPLASH' is MySet.SPLASH (from {MySet.__module__}): add the plugin that defines it first" in str(info.value)
    assert "core pipeline" not in str(info.value)
