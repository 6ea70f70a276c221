"""Fixed-step games: a game that steps pymunk by its own tick calls ``app.step(dt=TICK)`` after each
``space.step(TICK)``, and Loom stays in lockstep with the bodies at any frame rate — where
``app.update(real_dt)`` once per frame leaves the cape behind the hero inside each frame and then
jerks it forward several ticks' worth in one step."""
from __future__ import annotations

import math

import numpy as np
import pymunk
import pytest

import loom
from loom.engine import Stage

TICK = 1.0 / 60.0          # the game's physics step [s]
SCALE = 100.0              # px per metre
RUN = 150.0                # hero speed [px/s] (1.5 m/s)
MAX_TICKS = 8              # the game's own catch-up cap per frame


class Game:
    """A pymunk platformer in pixels (y up): a ground, a box hero that runs right and jumps, a cape
    pinned at the hero's back. The game owns the space and steps it; Loom has no Space2D."""

    def __init__(self, app: loom.App) -> None:
        self.space = pymunk.Space()
        self.space.gravity = (0.0, -981.0)
        ground = pymunk.Segment(self.space.static_body, (-1000, 0), (5000, 0), 2.0)
        ground.friction = 1.0
        self.hero = pymunk.Body(70.0, math.inf)
        self.hero.position = (0.0, 37.0)
        box = pymunk.Poly.create_box(self.hero, (40, 70))
        box.friction = 0.0                                   # the game drives vx itself
        self.space.add(ground, self.hero, box)
        self.app = app
        app.spawn(loom.RigidBody2D(self.space.static_body, scale=SCALE))
        self.hero_id = app.spawn(loom.RigidBody2D(self.hero, scale=SCALE, depth=0.4), loom.Transform())
        cape = loom.mesh.grid(6, 8, 0.4, 0.6, center=(-0.25, 0.42, 0.0), plane="yz")
        self.top = cape.side("top")
        self.cloth = loom.Cloth.from_mesh(cape, "silk")
        app.spawn(self.cloth, loom.Pin.edge(cape, "top", attach_to=self.hero_id))
        self.ticks = 0
        self.offset = None                                   # pinned particle − body [m], measured at tick 1

    def control(self) -> None:
        """Run right; jump once a second when on the ground."""
        vy = self.hero.velocity.y
        if self.ticks % 60 == 30 and abs(vy) < 1.0 and self.hero.position.y < 40.0:
            vy = 420.0
        self.hero.velocity = (RUN, vy)

    def body(self) -> np.ndarray:
        """The hero's position [m] (3,)."""
        return np.array([self.hero.position.x / SCALE, self.hero.position.y / SCALE, 0.0])

    def pinned(self) -> np.ndarray:
        """The first pinned cape particle [m] (3,)."""
        return self.cloth.x[self.top[0]].copy()

    def gap(self) -> float:
        """How far the pinned particle is from the hero's attach point now [m]."""
        if self.offset is None:
            self.offset = self.pinned() - self.body()
        return float(np.linalg.norm(self.pinned() - (self.body() + self.offset)))


def frame_times(fps: float, frames: int, seed: int) -> np.ndarray:
    """Real frame times [s] at ``fps`` with ±30 % jitter and an occasional 3× hitch."""
    rng = np.random.default_rng(seed)
    dt = (1.0 / fps) * rng.uniform(0.7, 1.3, frames)
    dt[rng.random(frames) < 0.03] *= 3.0
    return dt


@pytest.mark.parametrize("fps", [20, 30, 60, 144])
def test_app_step_per_tick_keeps_pymunk_and_loom_in_lockstep_at_any_frame_rate(make_app, fps):
    app = make_app(dt=1.0 / 30.0, substeps=8)          # on purpose not the tick: app.step(dt=) sets it
    game = Game(app)
    accumulator, gaps, moves, jumped = 0.0, [], [], False
    for real_dt in frame_times(fps, int(3 * fps), seed=fps):
        accumulator += real_dt
        taken = 0
        while accumulator >= TICK and taken < MAX_TICKS:       # the game's own fixed-step loop
            game.control()
            before = game.pinned()
            game.space.step(TICK)
            app.step(dt=TICK)                                 # exactly one Loom step with pymunk
            game.ticks += 1
            taken += 1
            accumulator -= TICK
            gaps.append(game.gap())
            moves.append(game.pinned()[0] - before[0])
            jumped |= game.hero.position.y > 60.0
        assert app.clock.step_index == game.ticks, f"{fps} fps: Loom took {app.clock.step_index} steps, " \
                                                   f"the game {game.ticks} ticks"
    assert app.clock.dt == TICK
    assert jumped and game.hero.position.x > 0.9 * RUN * game.ticks * TICK
    assert game.ticks >= 170                                  # ~3 s of game time at every frame rate
    # the cape's pinned particle is on the hero's attach point after every tick (bit-close), and it
    # moves the hero's distance each tick: no frame-rate pattern in what the cloth sees (a pattern moves it
    # 0 or 3 ticks' worth; the cape's contacts push the hero by micrometres within a tick, two-way)
    assert max(gaps) < 1e-9, f"{fps} fps: pinned particle off the hero by {max(gaps):.2e} m"
    moves = np.array(moves[1:])
    assert np.allclose(moves, RUN / SCALE * TICK, rtol=1e-3), f"{fps} fps: pin moves {moves.min()}…{moves.max()} m"


def test_app_update_per_frame_at_20_fps_leaves_the_cape_behind_then_jerks_it(make_app):
    """The old recipe: the game ticks pymunk, then ``app.update(real_dt)`` once per frame. Inside a frame
    the cape waits where the last frame left it (behind the hero), then Loom's first step moves the pin
    three ticks' worth at once and the next ones not at all."""
    app = make_app(dt=TICK, substeps=8)
    game = Game(app)
    moves, last = [], [None]

    def record(app, dt):                                      # the pinned particle's move per Loom step
        now = game.pinned()
        if last[0] is not None:
            moves.append(now[0] - last[0][0])
        last[0] = now
    app.add_system(record, Stage.POST_STEP)
    accumulator, gaps, counts = 0.0, [], []
    for real_dt in frame_times(20, 60, seed=20):
        accumulator += real_dt
        taken = 0
        while accumulator >= TICK and taken < MAX_TICKS:
            game.control()
            game.space.step(TICK)
            game.ticks += 1
            taken += 1
            accumulator -= TICK
            if app.clock.step_index:
                gaps.append(game.gap())
        app.update(real_dt)
        counts.append(app.clock.step_index - game.ticks)
    step = RUN / SCALE * TICK                                 # the hero's move per tick [m]
    # during a frame's ticks the cape is up to a whole frame behind the hero
    assert max(gaps) > 2.5 * step, f"the cape kept up with the hero ({max(gaps):.4f} m)"
    # and what the cloth sees is a jerk: a step moving the pin ~3 ticks, then steps not moving it
    moves = np.array(moves)
    assert moves.max() > 2.5 * step and np.sum(moves < 0.1 * step) > 20
    # the hitches (3 frames' time) owe more steps than max_steps = 4: Loom drops time the game keeps
    assert counts[-1] < 0, f"step counts {counts[-1]}"


def test_app_step_dt_is_validated_and_a_bad_one_changes_nothing(make_app):
    app = make_app(dt=TICK, substeps=4)
    for bad in (0.0, -TICK, math.nan, math.inf, 1.5, True, "0.02"):
        with pytest.raises(ValueError, match=r"App\.step dt = .*: must be a finite time step in \(0, 1\] \[s\]"):
            app.step(dt=bad)
    assert app.clock.dt == TICK and app.clock.step_index == 0
    app.step(2, dt=0.02)
    assert app.clock.dt == 0.02 and app.clock.step_index == 2 and app.clock.h == pytest.approx(0.005)
    assert app.clock.time == pytest.approx(0.04)


def test_app_step_with_dt_from_inside_a_step_raises_and_keeps_the_dt(make_app):
    app = make_app(dt=TICK, substeps=2)
    errors = []

    def nested(app, dt):
        try:
            app.step(dt=0.05)
        except RuntimeError as error:
            errors.append(str(error))
    app.add_system(nested, Stage.POST_STEP)
    app.step(dt=TICK)
    assert errors and "inside a step" in errors[0]
    assert app.clock.dt == TICK
