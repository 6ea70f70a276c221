"""Max distance and backstop (issue 45, item 1): ``MaxDistance`` keeps each particle within its distance of an animated
reference and out of its backstop, late in every substep; ``loom.cape`` keeps a running 2D hero's cape behind him.

Each assertion is geometry: the particle against the sphere about its reference point, against the backstop ball,
against the hero's collision surface. Watchers run in POST_STEP before the guard.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import loom
from loom.components import Cloth, MaxDistance, Pin, Transform
from loom.engine import App, Stage, mesh
from loom.files.snapshot import load_snapshot, save_snapshot
from loom.systems import ClothSet

DT, SUBSTEPS = 1.0 / 60.0, 8
REACH = 0.06
"""[m] max distance of every free particle in the carried-sheet tests."""


def carried_sheet(limit: bool, *, backstop: bool = False, reach: float = REACH) -> tuple[App, Cloth, int, list[float]]:
    """A 0.5 m sheet hanging from a carrier that shakes sideways (±0.3 m at 2 Hz: 47 m/s² peaks), each free particle
    at most REACH from where it hangs at rest in the carrier's frame (``limit``), and with ``backstop`` a wall 1 cm
    on the +z side of the reference (normal −z, a 20 m ball). Returns the App, the cloth, the carrier and the list
    the watcher fills with each step's worst excess [m] over the limits (positive: broken)."""
    app = App(dt=DT, substeps=SUBSTEPS, threads=1).add_plugin(loom.DefaultPlugins)
    carrier = app.spawn(Transform(position=(0.0, 1.0, 0.0)))
    grid = mesh.grid(8, 8, 0.5, 0.5, center=(0.0, 0.75, 0.0), plane="xy")
    cloth = Cloth.from_mesh(grid)
    reference = grid.positions - (0.0, 1.0, 0.0)
    top = grid.side("top")
    parts = [cloth, Pin(index=top, attach_to=carrier, offset=reference[top])]
    radius, gap = 20.0, 0.01
    if limit:
        parts.append(MaxDistance(reference=reference, distance=reach, attach_to=carrier,
                                 normal=(0.0, 0.0, -1.0) if backstop else None,
                                 backstop_radius=radius if backstop else 0.0, backstop_offset=gap))
    app.spawn(*parts)
    excess: list[float] = []

    def shake(app: App, dt: float) -> None:
        t = app.clock.step_index * dt                                 # still in the first step
        app.get(carrier, Transform).position[0] = 0.3 * math.sin(2.0 * math.pi * 2.0 * t)
        app.get(carrier, Transform).position[2] = 0.1 * math.sin(2.0 * math.pi * 1.5 * t)

    def watch(app: App, dt: float) -> None:
        p = reference + app.get(carrier, Transform).position
        free = cloth.inv_mass > 0.0
        worst = float((np.linalg.norm(cloth.x - p, axis=1) - reach)[free].max())
        if backstop:                                                  # ball of R about p − n·(R + d), n = −z
            centre = p + np.array([0.0, 0.0, radius + gap])
            worst = max(worst, float((radius - np.linalg.norm(cloth.x - centre, axis=1))[free].max()))
        excess.append(worst)

    app.add_system(shake, Stage.PRE_STEP, in_set=ClothSet.PIN_TARGETS)
    app.add_system(watch, Stage.POST_STEP, before=ClothSet.GUARD)
    return app, cloth, carrier, excess


def test_every_particle_stays_within_its_max_distance_of_the_moving_reference():
    app, cloth, _, excess = carried_sheet(limit=True)
    app.step(120)
    assert max(excess) <= 1e-9 and cloth.rejected_steps == 0
    app_free, cloth_free, _, free = carried_sheet(limit=False)       # without it the shaken sheet strays further
    app_free.step(120)
    assert max(free) > 0.05 and cloth_free.rejected_steps == 0


def test_the_backstop_is_never_passed():
    app, cloth, _, excess = carried_sheet(limit=True, backstop=True)
    app.step(120)
    assert max(excess) <= 1e-9 and cloth.rejected_steps == 0


def test_zero_distance_pins_each_particle_to_its_reference():
    app = App(dt=DT, substeps=4, threads=1).add_plugin(loom.DefaultPlugins)
    grid = mesh.grid(5, 5, 0.4, 0.4, center=(0.0, 1.0, 0.0), plane="xy")
    cloth = Cloth.from_mesh(grid)
    skinned = grid.positions.copy()                                   # a "skinned" world array the game rewrites
    app.spawn(cloth, MaxDistance(reference=skinned, distance=0.0))
    limit = app.query(MaxDistance)[0][1]
    for k in range(30):
        limit.reference[:, 1] = 1.0 + 0.01 * k                        # the game animates it in place
        app.step()
        assert np.abs(cloth.x - limit.reference).max() <= 1e-12
    assert cloth.rejected_steps == 0


def test_a_snapshot_with_max_distance_resumes_bit_identically(tmp_path):
    path = tmp_path / "limited.loom"
    a, cloth_a, _, _ = carried_sheet(limit=True, backstop=True, reach=0.004)     # the limit acts at every step
    a.step(30)
    save_snapshot(a, path)
    a.step(30)
    b, cloth_b, _, _ = carried_sheet(limit=True, backstop=True, reach=0.004)
    load_snapshot(b, path)
    b.step(30)
    cloth_b = b.query(Cloth)[0][1]
    assert np.array_equal(cloth_a.x, cloth_b.x) and np.array_equal(cloth_a.v, cloth_b.v)
    la, lb = a.query(MaxDistance)[0][1], b.query(MaxDistance)[0][1]
    assert np.array_equal(la.world_end, lb.world_end) and np.array_equal(la.armed, lb.armed)


def test_max_distance_fields_are_validated():
    with pytest.raises(ValueError, match="distance"):
        MaxDistance(reference=np.zeros((3, 3)), distance=-0.1)
    with pytest.raises(ValueError, match="distance"):
        MaxDistance(reference=np.zeros((3, 3)), distance=[0.1, 0.2])
    with pytest.raises(ValueError, match="normal"):
        MaxDistance(reference=np.zeros((3, 3)), normal=(0.0, 2.0, 0.0))


# --- the 2D platformer's cape (loom.cape's defaults) ------------------------------------------------------------
TURN_FRAMES = 30
"""Frames after the hero turns round that are not judged: the pinned row slides across in ``Cape.turn_time``
(0.3 s, 18 frames) and the cloth swings over after it — it passes in front of him by design."""


def _ahead_of_hero(active: bool) -> tuple[float, float, int]:
    """Run the platformer's scripted 600 frames with its cape's MaxDistance on or off; return the furthest [px] any
    cape particle was in front of the hero's collision surface (his box's half width plus its rounding), outside and
    inside the turns, and the cape's rejected steps."""
    from loom.games import platformer as game_module
    game = game_module.open_game(wind=1.0)
    game.cape_handle.limit.active = active
    front = game_module.HERO_SIZE[0] / 2 + game.hero.shape.radius
    worst, worst_turning, facing, turned = -math.inf, -math.inf, None, -10 ** 6
    try:
        for state in game_module.play(game, 600, draw=False):
            if facing is not None and state.facing != facing:
                turned = state.frame
            facing = state.facing
            ahead = float((state.facing * (game_module.PIXELS.to_pixels(state.cape)[:, 0] - state.hero[0])).max()
                          - front)
            if state.frame - turned > TURN_FRAMES:
                worst = max(worst, ahead)
            else:
                worst_turning = max(worst_turning, ahead)
        rejected = game.cape.rejected_steps
    finally:
        game_module.close_game(game)
    return worst, worst_turning, rejected


def test_the_platformer_cape_never_swings_in_front_of_the_running_hero():
    worst, _, rejected = _ahead_of_hero(True)
    assert worst <= 0.01 and rejected == 0                            # [px]: at most on his surface
    free, _, _ = _ahead_of_hero(False)                                # the same run without it: in front after landings
    assert free > 5.0
