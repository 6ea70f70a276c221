"""Plans (``App.add_system``, loom.systems.shared.plan): a SUBSTEP system may return a callable that runs in its place
at the step's other substeps; the XPBD systems return the kernel calls they found at the first substep, and a world
stepped with their plans ends exactly where one stepped without them does."""
from __future__ import annotations

import numpy as np
import pytest

from loom import App, Cloth, DefaultPlugins, Pin, Wind
from loom.engine import Stage, mesh
from loom.systems.shared.batch import BATCH_MIN_CLOTHS


def test_a_returned_plan_runs_at_the_other_substeps_and_the_system_again_at_the_next_step():
    calls = []

    def plan(app: App, h: float) -> None:
        calls.append(("plan", app.clock.step_index, app.clock.substep_index))

    def system(app: App, h: float):
        calls.append(("system", app.clock.step_index, app.clock.substep_index))
        return plan

    def plain(app: App, h: float):
        calls.append(("plain", app.clock.step_index, app.clock.substep_index))
        return 42                                              # not callable: ignored, called every substep

    app = App(dt=1 / 60, substeps=3)
    app.add_system(system, Stage.SUBSTEP)
    app.add_system(plain, Stage.SUBSTEP, after="system")
    app.step(2)
    assert calls == [("system", 0, 0), ("plain", 0, 0), ("plan", 0, 1), ("plain", 0, 1), ("plan", 0, 2),
                     ("plain", 0, 2),
                     ("system", 1, 0), ("plain", 1, 0), ("plan", 1, 1), ("plain", 1, 1), ("plan", 1, 2),
                     ("plain", 1, 2)]
    calls.clear()
    app.plans = False                                          # plans off: the system at every substep
    app.step(1)
    assert calls == [("system", 2, 0), ("plain", 2, 0), ("system", 2, 1), ("plain", 2, 1), ("system", 2, 2),
                     ("plain", 2, 2)]
    app.close()


def test_a_plan_is_timed_under_its_systems_name_when_profiling():
    def plan(app: App, h: float) -> None:
        pass

    def system(app: App, h: float):
        return plan

    app = App(dt=1 / 60, substeps=4)
    app.add_system(system, Stage.SUBSTEP)
    app.profiling = True
    seen = []
    original = app._timed_as

    def counting(p, name):                                     # the plan is wrapped once a step, named as its system
        seen.append(name)
        return original(p, name)

    app._timed_as = counting
    app.step(3)
    assert seen == ["system"] * 3 and app.system_seconds["system"] > 0.0
    app.close()


def _flags(app: App) -> None:
    """Small flags in gusts, two more than the batched kernels need (``BATCH_MIN_CLOTHS``, 12: fourteen)."""
    for k in range(BATCH_MIN_CLOTHS + 2):
        flag = mesh.grid(8, 6, 0.4, 0.3, center=(0.6 * k, 1.0, 0.0))
        app.spawn(Cloth.from_mesh(flag, "cotton"), Pin.edge(flag, "left"))
    app.spawn(Wind(velocity=(5.0, 0.0, 1.0), gust=0.3, turbulence=0.2, seed=2))


@pytest.mark.parametrize("scene", ["cape", "flags"])
def test_the_xpbd_systems_plans_step_a_world_exactly_as_the_systems_do(scene):
    """The cape game (pins carried by a pymunk hero, two-way contacts with his box, the level, the stretch limit,
    yarns) and fourteen flags (the batched kernels): 40 steps with the systems' plans and 40 with every system
    called at every substep end at the same positions and velocities, to the bit."""
    def build(plans: bool) -> App:
        app = App(dt=1 / 60, substeps=5, threads=1)
        app.add_plugin(DefaultPlugins)
        if scene == "cape":
            from loom.games import cape
            cape.build_scene(app)
        else:
            _flags(app)
        app.plans = plans                                      # False: every system at every substep
        return app

    results = []
    for plans in (True, False):
        app = build(plans)
        app.step(40)
        results.append([(c.x.copy(), c.v.copy()) for _, c in app.query(Cloth)])
        assert all(c.rejected_steps == 0 for _, c in app.query(Cloth))
        app.close()
    with_plans, without = results
    assert len(with_plans) == len(without) > 0
    for (x0, v0), (x1, v1) in zip(with_plans, without):
        assert np.array_equal(x0, x1) and np.array_equal(v0, v1)
        assert np.isfinite(x0).all()
