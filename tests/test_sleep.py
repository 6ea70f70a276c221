"""Sleep and off-screen freezing (issue 45, items 3 and 4): a still cloth sleeps, a moving one never does; each
wake-up; a sleeping or frozen cloth resumes exactly where it stopped; a snapshot keeps the sleep; an awake scene
is bit-identical with and without the sleep system."""
from __future__ import annotations

import numpy as np
import pytest

import loom
from loom.components import Camera, Cloth, Collider, Grab, Gravity, Pin, Sleep, Sphere, Transform, Wind
from loom.engine import App, mesh
from loom.systems import DefaultPlugins
from loom.systems.pipeline.sleep import SleepData, wake

SETTLE = 900
"""Steps (15 s at 60 Hz) a hanging flag is given to fall asleep; it does in about 8 s (docs/sleep.md)."""


def flag_app(*, plugins=DefaultPlugins, **sleep) -> tuple[App, int, Cloth]:
    """A 12 × 12 flag (0.6 m × 0.4 m) hanging from its left edge, 4 substeps, its own Sleep if given."""
    app = App(dt=1 / 60, substeps=4, threads=1)
    app.add_plugin(plugins)
    grid = mesh.grid(12, 12, 0.6, 0.4, center=(0.0, 1.0, 0.0))
    cloth = Cloth.from_mesh(grid, "cotton")
    parts = [cloth, Pin.edge(grid, "left"), Sleep(**sleep)]
    entity = app.spawn(*parts)
    return app, entity, cloth


def asleep_flag(**sleep) -> tuple[App, int, Cloth]:
    """``flag_app`` stepped until its cloth sleeps (fails if it does not within SETTLE steps)."""
    app, entity, cloth = flag_app(**sleep)
    for _ in range(SETTLE):
        app.step(1)
        if app.get(entity, Sleep).state == "asleep":
            return app, entity, cloth
    raise AssertionError(f"the hanging flag did not fall asleep in {SETTLE} steps")


def state(app: App, entity: int) -> str:
    return app.get(entity, Sleep).state


def test_a_still_cloth_falls_asleep_and_is_then_not_stepped_at_all():
    app, entity, cloth = asleep_flag()
    assert entity in app.resting and cloth.rejected_steps == 0
    x, v, x_prev = cloth.x.copy(), cloth.v.copy(), cloth.x_prev.copy()
    app.step(120)
    assert state(app, entity) == "asleep"
    assert np.array_equal(cloth.x, x) and np.array_equal(cloth.v, v) and np.array_equal(cloth.x_prev, x_prev)


def test_a_cloth_asleep_is_at_rest_a_hanging_flag_under_gravity():
    """At sleep the cloth hangs: its lowest free particle is at most its width below the pin line (0.2 m top to
    centre line) and every particle moved less than threshold·dt in the last step (the definition's test)."""
    app, entity, cloth = asleep_flag()
    sleep = app.get(entity, Sleep)
    before = cloth.x.copy()
    wake(app, entity)
    app.step(1)
    assert np.sqrt(((cloth.x - before) ** 2).sum(axis=1)).max() < sleep.threshold / 60 * 1.5
    assert cloth.x[:, 0].max() < 0.3 + 1e-9 and cloth.rejected_steps == 0   # hangs from the pole at x = −0.3


def test_a_cloth_in_wind_and_a_swinging_cloth_never_fall_asleep():
    """A 1 m/s breeze keeps the flag's fastest particle at 0.3 m/s or more in every half second (6× the threshold;
    docs/sleep.md): it never sleeps; nor does a sheet swinging from one corner."""
    app, entity, cloth = flag_app()
    app.spawn(Wind(velocity=(1.0, 0.0, 0.5)))
    states = set()
    for _ in range(SETTLE):
        app.step(1)
        states.add(state(app, entity))
    assert states == {"awake"} and cloth.rejected_steps == 0
    swing, entity, cloth = flag_app()                         # released level, pinned at one corner: it swings
    swing.get(entity, Pin).active[1:] = False
    for _ in range(240):
        swing.step(1)
        assert state(swing, entity) == "awake"


def test_sleep_is_opt_in_and_off_at_the_app_level_and_per_cloth():
    app = App(dt=1 / 60, substeps=4, threads=1).add_plugin(DefaultPlugins)                  # no Sleep given: off
    grid = mesh.grid(12, 12, 0.6, 0.4, center=(0.0, 1.0, 0.0))
    entity = app.spawn(Cloth.from_mesh(grid, "cotton"), Pin.edge(grid, "left"))
    app.step(SETTLE)
    assert state(app, entity) == "awake" and not app.resting
    app = App(dt=1 / 60, substeps=4, threads=1)
    app.insert_resource(Sleep(enabled=False))
    app.add_plugin(DefaultPlugins)
    grid = mesh.grid(12, 12, 0.6, 0.4, center=(0.0, 1.0, 0.0))
    entity = app.spawn(Cloth.from_mesh(grid, "cotton"), Pin.edge(grid, "left"))
    app.step(SETTLE)
    assert state(app, entity) == "awake" and not app.resting
    app, entity, _ = flag_app(enabled=False)
    app.step(SETTLE)
    assert state(app, entity) == "awake"


def test_a_woken_cloth_resumes_exactly_where_it_stopped():
    """A cloth the game puts to sleep for 40 steps continues as one never paused: step k after waking is bit for bit
    step k after the pause began in a twin App (x and v kept as they were: sleep is a pause)."""
    paused, entity, cloth = flag_app()
    twin, _, other = flag_app()
    paused.step(30)
    twin.step(30)
    paused.get(entity, Sleep).state = "asleep"
    paused.step(40)
    assert state(paused, entity) == "asleep"
    wake(paused, entity)
    for _ in range(20):
        paused.step(1)
        twin.step(1)
    assert np.array_equal(cloth.x, other.x) and np.array_equal(cloth.v, other.v)


def test_a_collider_coming_within_reach_wakes_the_cloth_and_one_far_away_does_not():
    app, entity, cloth = asleep_flag()
    far = Transform(position=(5.0, 1.0, 0.0))
    ball = app.spawn(Collider(Sphere(0.1)), far)
    app.step(1)                                                 # a new collider, 4.6 m away
    far.position = (4.0, 1.0, 0.0)
    app.step(1)
    assert state(app, entity) == "asleep"
    far.position = (0.0, 1.0, 0.3)                             # 0.3 m in front of the flag: its ball 0.2 m off the box
    app.step(1)
    assert state(app, entity) == "awake" and entity not in app.resting
    app.despawn(ball)


def test_a_collider_taken_away_from_under_a_cloth_wakes_it():
    app = App(dt=1 / 60, substeps=4, threads=1)
    app.add_plugin(DefaultPlugins)
    ball = app.spawn(Collider(Sphere(0.3)), Transform(position=(0.0, 0.0, 0.0)))
    sheet = Cloth.from_mesh(mesh.grid(10, 10, 0.8, 0.8, center=(0.0, 0.4, 0.0), plane="xz"), "cotton")
    entity = app.spawn(sheet, Sleep())
    for _ in range(SETTLE):
        app.step(1)
        if state(app, entity) == "asleep":
            break
    assert state(app, entity) == "asleep" and sheet.rejected_steps == 0
    app.despawn(ball)
    app.step(1)
    assert state(app, entity) == "awake"
    app.step(30)
    assert sheet.v[:, 1].mean() < -1.0                        # falling again: g·t = 4.9 m/s after 0.5 s, some drag


def test_moving_the_pin_target_or_the_pins_carrier_wakes_the_cloth():
    app, entity, cloth = asleep_flag()
    pin = app.get(entity, Pin)
    pin.target = np.asarray(pin.target) + (0.0, 0.05, 0.0)
    app.step(1)
    assert state(app, entity) == "awake"
    app = App(dt=1 / 60, substeps=4, threads=1)
    app.add_plugin(DefaultPlugins)
    pole = Transform(position=(0.0, 1.0, 0.0))
    carrier = app.spawn(pole)
    grid = mesh.grid(12, 12, 0.6, 0.4, center=(0.0, 1.0, 0.0))
    entity = app.spawn(Cloth.from_mesh(grid, "cotton"), Pin.edge(grid, "left", attach_to=carrier), Sleep())
    for _ in range(SETTLE):
        app.step(1)
        if state(app, entity) == "asleep":
            break
    assert state(app, entity) == "asleep"
    app.step(10)
    assert state(app, entity) == "asleep"                     # the carrier still: asleep
    pole.position = (0.1, 1.0, 0.0)
    app.step(1)
    assert state(app, entity) == "awake"


def test_wind_or_gravity_changing_wakes_the_cloth():
    app, entity, _ = asleep_flag()
    app.spawn(Wind(velocity=(3.0, 0.0, 0.0)))
    app.step(1)
    assert state(app, entity) == "awake"
    app, entity, _ = asleep_flag()
    app.insert_resource(Gravity((0.0, -9.81, 1.0)))
    app.step(1)
    assert state(app, entity) == "awake"


def test_a_grab_wakes_the_cloth_and_moves_it():
    app, entity, cloth = asleep_flag()
    corner = int(np.argmax(cloth.x[:, 0] - cloth.x[:, 1]))      # the free lower corner
    target = cloth.x[corner] + (0.0, 0.0, 0.2)
    app.spawn(Grab(active=True, cloth=entity, particle=corner, target=target))
    app.step(1)                                                 # awake in the grab's first step, held on target
    assert state(app, entity) == "awake"
    assert np.linalg.norm(cloth.x[corner] - target) < 1e-9 and cloth.rejected_steps == 0


def test_a_tear_wakes_the_cloth():
    from loom.systems.interaction.tearing import retopologize
    app, entity, cloth = asleep_flag()
    n = cloth.particle_count
    triangles = cloth.triangles.copy()
    shared = np.bincount(triangles.ravel(), minlength=n) >= 2
    corner = int(np.argmax(np.where(shared, cloth.x[:, 0] - cloth.x[:, 1], -np.inf)))   # near the free corner
    first = int(np.flatnonzero((triangles == corner).any(axis=1))[0])
    triangles[first][triangles[first] == corner] = n            # one triangle gets a copy of the particle: a split
    retopologize(cloth, triangles, np.array([corner]), pins=[app.get(entity, Pin)])
    app.step(1)
    assert state(app, entity) == "awake" and cloth.particle_count == n + 1


def test_a_cloth_off_screen_stays_stepped_by_default():
    """Freezing off screen is opt-in: a cloth outside the view keeps falling (it may be on its way into view)."""
    app, entity, cloth = flag_app()
    app.spawn(Camera(target=(0.0, 1.0, -10.0), distance=3.0, pitch=0.0))      # looking away from the flag
    x = cloth.x.copy()
    app.step(5)
    assert state(app, entity) == "awake" and not np.array_equal(cloth.x, x) and cloth.rejected_steps == 0


def test_a_cloth_off_screen_is_frozen_and_resumes_without_a_jump():
    """Looking away freezes the swinging flag (its state kept bit for bit); looking back resumes it exactly as a
    twin that never froze continues (time shifted by the frozen steps)."""
    app, entity, cloth = flag_app(offscreen=True)
    twin, _, other = flag_app(offscreen=True)
    camera = Camera(target=(0.0, 1.0, 0.0), distance=3.0, pitch=0.0)
    app.spawn(camera)
    app.step(20)
    twin.step(20)
    assert state(app, entity) == "awake"
    camera.target = (0.0, 1.0, -10.0)                            # looking away: the flag 7 m behind the eye
    x = cloth.x.copy()
    app.step(31)                                                # frozen from this step's start: not stepped
    assert np.array_equal(cloth.x, x) and state(app, entity) == "frozen"
    camera.target = (0.0, 1.0, 0.0)
    for _ in range(20):
        app.step(1)
        twin.step(1)
    assert state(app, entity) == "awake"
    assert np.array_equal(cloth.x, other.x) and np.array_equal(cloth.v, other.v) and cloth.rejected_steps == 0


def test_a_snapshot_keeps_the_sleep_and_resumes_bit_exact(tmp_path):
    """Saved while the flag is settling (quiet for half its steps), a loaded App falls asleep at the same step as the
    original, stays asleep, wakes alike when the pin moves, and stays bit-identical."""
    from loom.files.snapshot import load_snapshot, save_snapshot
    first, entity, _ = asleep_flag()
    falls = first.clock.step_index                              # the step count at which the flag fell asleep
    app, entity, cloth = flag_app()
    app.step(falls - Sleep().steps // 2)                        # half its quiet steps counted, none yet to undo
    save_snapshot(app, tmp_path / "settling.loom")
    loaded, _, _ = flag_app()
    load_snapshot(loaded, tmp_path / "settling.loom")
    twins = (app, loaded)
    for _ in range(SETTLE):
        for a in twins:
            a.step(1)
        assert state(app, entity) == state(loaded, entity)
        if state(app, entity) == "asleep":
            break
    assert state(loaded, entity) == "asleep" and entity in loaded.resting
    save_snapshot(app, tmp_path / "asleep.loom")
    again, _, _ = flag_app()
    load_snapshot(again, tmp_path / "asleep.loom")
    twins = (app, loaded, again)
    for a in twins:
        a.step(5)
        pin = a.get(entity, Pin)
        pin.target = np.asarray(pin.target) + (0.0, 0.02, 0.0)     # wake all three alike
        a.step(30)
    assert all(state(a, entity) == "awake" for a in twins)
    for a in (loaded, again):
        got = a.get(entity, Cloth)
        assert np.array_equal(got.x, cloth.x) and np.array_equal(got.v, cloth.v)


def test_an_awake_scene_is_bit_identical_with_and_without_the_sleep_system():
    def run(plugins):
        app, entity, cloth = flag_app(plugins=plugins)
        app.spawn(Wind(velocity=(4.0, 0.0, 1.0), gust=0.3, turbulence=0.2, seed=3))
        app.spawn(Camera(target=(0.0, 1.0, 0.0)))
        app.step(300)
        return cloth
    with_sleep, without = run(DefaultPlugins), run(DefaultPlugins.without("SleepPlugin"))
    assert np.array_equal(with_sleep.x, without.x) and np.array_equal(with_sleep.v, without.v)


def test_the_sleep_state_is_readable_and_the_scratch_leaves_with_the_entity():
    app, entity, _ = asleep_flag()
    assert isinstance(app.get(entity, loom.Sleep), Sleep)
    app.despawn(entity)
    app.step(1)
    data = app.resource(SleepData)
    assert entity not in data.last and entity not in data.held and not app.resting
