"""games/platformer.py, the 2D pygame demo (issue 16, item 9): the game runs headless for 600 frames of scripted
input (run right, jump, turn left, run, stand, jump again) and

- the hero's cape shows on the game's own screen in every sampled frame (pixels of the cape's red, near the hero),
- no cape particle stays inside the hero's collision box for more than 2 consecutive frames,
- the flag in its wind zone moves, and the cape, outside both zones, does not feel them: the same game with the
  zones' air at 0 gives the cape the very same positions,
- pymunk and Loom stay in lockstep (one Loom step per pymunk step) after every frame, at any frame rate.

The 600-frame runs are shared by the tests (module fixtures); each measures the game's behaviour, never its time.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pygame
import pytest

from loom.games import platformer as game_module

ROOT = Path(__file__).resolve().parent.parent
FRAMES = 600
SAMPLE = 10
"""Every SAMPLE-th frame's screen is checked for the cape."""
CAPE_PIXELS = 150
"""Fewest pixels of the cape's red a sampled frame must show (the cape covers ~1000 px hanging flat)."""
NEAR_HERO = 90
"""[px] the cape's pixels are within this distance of the hero's centre (they are the cape, not the scenery)."""


def red_pixels(screen: pygame.Surface) -> np.ndarray:
    """(x, y) [px] of the screen's pixels in the cape's red: red 60 above green and blue (the test's own rule)."""
    rgb = pygame.surfarray.array3d(screen).astype(int)                     # (w, h, 3)
    mask = (rgb[..., 0] > rgb[..., 1] + 60) & (rgb[..., 0] > rgb[..., 2] + 60)
    return np.argwhere(mask)


def inside_box(points: np.ndarray, centre_px: tuple[float, float]) -> np.ndarray:
    """Mask of points [m] inside the hero's collision box: HERO_SIZE [px] around his centre, HERO_DEPTH [m] in z."""
    space = game_module.PIXELS
    centre = space.to_metres(centre_px)
    half = np.array([space.metres(game_module.HERO_SIZE[0] / 2), space.metres(game_module.HERO_SIZE[1] / 2),
                     game_module.HERO_DEPTH / 2])
    return np.all(np.abs(points - centre) < half, axis=1)


def in_region(points: np.ndarray, region) -> np.ndarray:
    """Mask of points [m] inside a WindBox (its rotation is the identity here)."""
    return np.all(np.abs(points - region.center) < region.half_size, axis=1)


@pytest.fixture(scope="module")
def windy():
    """The scripted game, 600 frames, zones blowing: (FrameStates, the red pixels of every SAMPLE-th frame, winds)."""
    game = game_module.open_game(wind=1.0)
    try:
        states, red, regions, zone_mask = [], {}, [w.region for w in game.winds], []
        for state in game_module.play(game, FRAMES):
            states.append(state)
            if state.frame % SAMPLE == 0:
                red[state.frame] = red_pixels(game.screen)
            zone_mask.append([in_region(state.cape, r).any() for r in regions])
        report = game_module.game_report(game, states)
    finally:
        game_module.close_game(game)
    return states, red, np.array(zone_mask), report


@pytest.fixture(scope="module")
def still():
    """The same scripted game with both zones' air at 0 (not drawn: only the cloth is compared)."""
    game = game_module.open_game(wind=0.0)
    try:
        return list(game_module.play(game, FRAMES, draw=False))
    finally:
        game_module.close_game(game)


def test_the_cape_shows_near_the_hero_in_every_sampled_frame(windy):
    states, red, _, _ = windy
    assert len(red) == FRAMES // SAMPLE
    for frame, pixels in red.items():
        hero = np.array(states[frame - 1].hero)
        near = pixels[np.linalg.norm(pixels - hero, axis=1) < NEAR_HERO]
        assert len(near) >= CAPE_PIXELS, (f"frame {frame}: only {len(near)} cape-red pixels near the hero at "
                                          f"{hero.round()} ({len(pixels)} on screen)")
        assert len(near) == len(pixels), f"frame {frame}: {len(pixels) - len(near)} red pixels far from the hero"


def test_the_script_runs_both_ways_jumps_and_turns(windy):
    states = windy[0]
    xs = np.array([s.hero[0] for s in states])
    facing = np.array([s.facing for s in states])
    airborne = np.array([not s.grounded for s in states])
    assert xs.max() - xs.min() > 300, f"the hero ran only {xs.max() - xs.min():.0f} px"
    assert (np.diff(facing) != 0).sum() >= 2, "the hero never turned around and back"
    takeoffs = (np.diff(airborne.astype(int)) == 1).sum()
    assert takeoffs >= len(game_module.JUMPS), f"{takeoffs} take-offs for {len(game_module.JUMPS)} jumps"


def test_no_cape_particle_stays_inside_the_hero_for_more_than_two_frames(windy):
    states = windy[0]
    inside = [int(inside_box(s.cape, s.hero).sum()) for s in states]
    run = longest = 0
    for count in inside:
        run = run + 1 if count else 0
        longest = max(longest, run)
    assert longest <= 2, f"cape particles inside the hero for {longest} frames in a row (worst {max(inside)})"
    assert [s.cape_inside for s in states] == inside, "the game's own count disagrees with the test's"


def test_the_flag_in_its_zone_moves_and_the_cape_outside_both_zones_does_not_feel_them(windy, still):
    states, _, cape_in_zone, _ = windy
    assert not cape_in_zone.any(), f"the cape entered a wind zone at frame {int(np.argmax(cape_in_zone.any(1))) + 1}"
    late = slice(FRAMES // 2, None)                                   # after the flag has settled into the wind
    corner = np.array([s.flag_corner for s in states])[late]
    calm = np.array([s.flag_corner for s in still])[late]
    path = np.linalg.norm(np.diff(corner, axis=0), axis=1).sum()
    spread = np.linalg.norm(corner.std(axis=0))
    assert spread > 0.02 and path > 1.0, f"the flag's corner hardly moves: spread {spread:.4f} m, path {path:.3f} m"
    pole_x = game_module.PIXELS.to_metres(game_module.POLE)[0]
    width = game_module.PIXELS.metres(game_module.FLAG_SIZE[0])
    streams, hangs = corner[:, 0].mean() - pole_x, calm[:, 0].mean() - pole_x
    assert streams > 0.6 * width > 0.3 * width > hangs, (f"the flag's fly should stream out in the wind and hang "
                                                         f"without: {streams:.3f} m vs {hangs:.3f} m from the pole")
    banner = np.array([s.banner_corner for s in states])[late]
    assert np.linalg.norm(banner.std(axis=0)) > 0.01, "the banner in its zone does not move"
    for windy_state, still_state in zip(states, still):
        assert np.array_equal(windy_state.cape, still_state.cape), (
            f"frame {windy_state.frame}: the cape moved differently with the zones blowing "
            f"(max {np.abs(windy_state.cape - still_state.cape).max():.3g} m)")


def test_pymunk_and_loom_step_in_lockstep_after_every_frame(windy):
    states, _, _, report = windy
    for s in states:
        assert s.ticks == s.steps == s.frame, f"frame {s.frame}: pymunk {s.ticks} ticks, Loom {s.steps} steps"
    assert report["lockstep"] and report["ticks"] == report["frames"] == FRAMES and report["nan"] is False, report


def test_lockstep_holds_at_any_frame_rate():
    """Frames of 1/144 s, 1/30 s and hitches: the accumulator pays whole ticks; each takes one Loom step."""
    game = game_module.open_game()
    try:
        rng = np.random.default_rng(3)
        dts = np.concatenate([np.full(40, 1 / 144), np.full(20, 1 / 30), rng.uniform(0.0, 0.12, 40)])
        owed = 0
        for i, dt in enumerate(dts):
            taken = game.advance(float(dt), 1.0 if i < 60 else -1.0, i == 30)
            assert 0 <= taken <= game_module.MAX_TICKS
            owed += taken
            steps = game.app.clock.step_index
            assert game.ticks == steps == owed, f"frame {i}: pymunk {game.ticks} ticks, Loom {steps} steps"
        assert owed > 60 and np.isfinite(game.cape.x).all()
        assert game.cape.rejected_steps == 0
    finally:
        game_module.close_game(game)


def test_command_line_headless_report_and_screenshot(tmp_path):
    out = tmp_path / "platformer.png"
    run = subprocess.run([sys.executable, "-m", "loom.games.platformer", "--headless", "--frames", "40", "--report",
                          "json", "--screenshot", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=240,
                         env=dict(os.environ, SDL_AUDIODRIVER="dummy"))
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["frames"] == report["ticks"] == 40 and report["nan"] is False and report["lockstep"], report
    assert pygame.image.load(str(out)).get_size() == game_module.SIZE
    assert len(red_pixels(pygame.image.load(str(out)))) >= CAPE_PIXELS
