"""The demo games: each runs from its command line and reports no NaN, each GL game draws a frame that is not blank,
``python -m loom.games`` lists them, the sandbox's scripted player grabs, blows, tears and switches model, its keys and the
drape's keys rebuild the cloth where it is, and the cape's hero runs 600 frames with no cape particle inside him.

Most checks call a game's ``main(argv)`` (it returns the report) or its ``build_scene`` in this process; only the
command-line test starts subprocesses, all at once."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pygame
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from loom.components import MODELS, Blower, Camera, Cloth, ClothMaterial, Grab, InputState, Pin, Tearable
from loom.components.render import RenderSettings
from loom.engine import Stage
from loom.games import cape, drape, sandbox
from loom.games.__main__ import find_games
from loom.games.__main__ import main as games_main

ROOT = Path(__file__).resolve().parent.parent
GAMES = [g for g in ("hanging_sheet", "flag", "cape", "drape", "sandbox", "embed_surface", "platformer")
         if (ROOT / "games" / f"{g}.py").exists()]
GL_GAMES = [g for g in GAMES if "GLRenderPlugin" in (ROOT / "games" / f"{g}.py").read_text(encoding="utf-8")]
SMALL = {"hanging_sheet": ["--n", "12"], "drape": ["--n", "20"]}
"""Smaller meshes where a game takes --n: these tests check the wiring, not the physics."""
DT = 1 / 60


def pieces(cloth: Cloth) -> int:
    """Connected pieces of a cloth: particles joined by triangle edges (scipy's graph components)."""
    t = cloth.triangles
    rows = np.concatenate([t[:, 0], t[:, 1], t[:, 2]])
    cols = np.concatenate([t[:, 1], t[:, 2], t[:, 0]])
    n = cloth.particle_count
    graph = coo_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n))
    return connected_components(graph, directed=False)[0]


def press(app, *keys, mouse=(0.0, 0.0), size=sandbox.VIEW) -> None:
    """One rendered frame of input with ``keys`` pressed, the cursor at ``mouse`` [px]: runs Stage.INPUT only."""
    state = app.resources.get(InputState) or app.insert_resource(InputState())
    state.begin_frame()
    state.size, state.mouse = size, mouse
    state.keys_pressed.update(keys)
    app.run_stage(Stage.INPUT, DT)


# --- every game, from its command line -------------------------------------------------------------------------------
def test_every_game_runs_headless_from_its_command_line_and_reports_no_nan():
    env = dict(os.environ, SDL_AUDIODRIVER="dummy")
    runs = {g: subprocess.Popen([sys.executable, "-m", f"games.{g}", "--headless", "--frames", "60", "--report", "json",
                                 *SMALL.get(g, [])], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for g in GAMES}
    for game, run in runs.items():
        out, err = run.communicate(timeout=240)
        assert run.returncode == 0, f"{game}: exit {run.returncode}\n{err[-2000:]}"
        report = json.loads(out.strip().splitlines()[-1])                  # the one JSON line
        assert report["frames"] == 60 and report["nan"] is False, f"{game}: {report}"
        assert report["sim_ms_per_frame"] > 0.0, f"{game}: no sim time per frame in {report}"


@pytest.mark.parametrize("game", GL_GAMES)
def test_a_frame_of_each_gl_game_rendered_offscreen_is_not_blank(game, tmp_path):
    module = __import__(f"games.{game}", fromlist=["main"])
    out = tmp_path / f"{game}.png"
    report = module.main(["--headless", "--frames", "30", "--screenshot", str(out), "--report", "json",
                          *SMALL.get(game, [])])
    assert report["frames"] == 30 and not report["nan"], report
    image = pygame.surfarray.array3d(pygame.image.load(str(out))).transpose(1, 0, 2).astype(int)
    rows = np.median(image, axis=1, keepdims=True)                  # the sky and the floor vary row by row only
    drawn = (np.abs(image - rows).max(axis=2) > 30).mean()
    assert drawn > 0.03, f"{game}: only {drawn:.1%} of the screenshot stands out from its row (sky, floor)"


def test_python_m_games_lists_every_game_with_the_first_line_of_its_docstring():
    run = subprocess.run([sys.executable, "-m", "loom.games"], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, SDL_AUDIODRIVER="dummy"))
    assert run.returncode == 0, run.stderr
    lines = run.stdout.strip().splitlines()
    listed = {line.split()[0]: line.split(None, 1)[1] for line in lines}
    assert set(GAMES) <= set(listed) and len(lines) == len(listed), run.stdout
    for game in GAMES:
        module = __import__(f"games.{game}", fromlist=["main"])
        assert callable(module.main) and listed[game] == module.__doc__.strip().splitlines()[0]
    assert set(find_games()) == set(listed)


def test_python_m_games_runs_a_game_by_name_and_refuses_an_unknown_one(capsys):
    assert games_main(["hanging_sheet", "--headless", "--frames", "3", "--n", "6", "--report", "json"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["frames"] == 3
    assert games_main(["no_such_game"]) == 2
    assert "no game 'no_such_game'" in capsys.readouterr().err


# --- sandbox ---------------------------------------------------------------------------------------------------------
def test_sandbox_script_grabs_a_corner_tears_the_sheet_blows_it_and_switches_model_without_nan(make_app):
    app = make_app(substeps=sandbox.SUBSTEPS)
    sandbox.build_scene(app)
    s = app.resource(sandbox.Sandbox)
    hand, blower = app.get(s.hand, Grab), app.get(s.blower, Blower)
    corner = s.sheet.index(0, 0)
    steps = lambda seconds: round(seconds / DT) - app.clock.step_index          # noqa: E731 (steps until then)

    app.step(steps(sandbox.DRAG[0]))
    cloth = app.get(s.cloth, Cloth)
    start = cloth.x[corner].copy()
    for _ in range(steps(sandbox.DRAG[1])):                                    # held: infinite mass, follows
        app.step()
        assert (hand.held_cloth, hand.held_particle) == (s.cloth, corner), "the scripted hand did not take the corner"
        assert cloth.inv_mass[corner] == 0.0, "a held particle must have infinite mass"
    moved = np.linalg.norm(cloth.x[corner] - start)
    assert moved > 0.3, f"the dragged corner moved only {moved:.3f} m"
    app.step()
    assert hand.held_cloth is None, "the hand did not let go"
    assert cloth.inv_mass[corner] == cloth.base_inv_mass[corner] > 0.0, "release did not restore the corner's mass"

    assert pieces(cloth) == 1
    app.step(steps(sandbox.TEAR[1]) + 1)                                        # two hands pull apart, let go
    torn = pieces(cloth)                                                       # the hands hold patches: no specks
    assert app.get(s.cloth, Tearable).tears >= 20, "pulling two grabbed patches apart did not tear the sheet open"
    assert app.get(s.cloth, Tearable).tears > 0 and hand.held_cloth is None

    app.step(steps(sandbox.BLOW[0]))
    before = cloth.x.mean(axis=0)
    app.step()
    assert blower.active, "Space held: the blower should blow"
    app.step(steps(sandbox.BLOW[1]))
    pushed = (cloth.x.mean(axis=0) - before) @ blower.direction
    assert pushed > 0.1, f"the blower pushed the cloth only {pushed:.3f} m along its axis"
    app.step()
    assert not blower.active

    count = cloth.particle_count
    app.step(steps(sandbox.SWITCH + 0.5))
    switched = app.get(s.cloth, Cloth)
    assert switched is not cloth and switched.model == "verlet", f"M left the model at {switched.model}"
    assert switched.particle_count == count and pieces(switched) == torn, "the new model lost the tears"
    report = app.report()
    assert report["nan"] is False and report["rejected_steps"] == 0, report
    assert (report["model"], report["pieces"], report["pinned"]) == ("verlet", torn, 2), report


def test_sandbox_keys_pin_toggle_tearing_cycle_models_and_fabrics_and_reset(make_app):
    app = make_app(substeps=sandbox.SUBSTEPS)
    sandbox.build_scene(app)
    s = app.resource(sandbox.Sandbox)
    app.step(30)
    cloth, pin, camera = app.get(s.cloth, Cloth), app.get(s.cloth, Pin), app.query(Camera)[0][1]
    middle = s.sheet.index(16, 16)
    cursor = tuple(camera.project(cloth.x[middle], *sandbox.VIEW)[:2])
    press(app, pygame.K_p, mouse=cursor)
    where = cloth.x[middle].copy()
    app.step(10)
    assert pin.active[middle] and cloth.inv_mass[middle] == 0.0, "P did not pin the particle under the cursor"
    assert np.allclose(cloth.x[middle], where), "a particle pinned with P must stay where it was pinned"
    press(app, pygame.K_p, mouse=tuple(camera.project(cloth.x[middle], *sandbox.VIEW)[:2]))
    app.step()
    assert not pin.active[middle] and cloth.inv_mass[middle] == cloth.base_inv_mass[middle], "P did not unpin it"

    state = app.resource(InputState)                                          # left button down: grab
    cursor = tuple(camera.project(cloth.x[middle], *sandbox.VIEW)[:2])
    state.buttons.add(1)
    state.keys.add(pygame.K_SPACE)
    press(app, mouse=cursor)
    app.step()
    hand = app.get(s.hand, Grab)
    assert (hand.held_cloth, hand.held_particle) == (s.cloth, middle) and cloth.inv_mass[middle] == 0.0
    assert app.get(s.blower, Blower).active, "Space held: the blower should blow"
    state.buttons.clear()
    state.keys.clear()
    press(app, mouse=cursor)
    app.step()
    assert hand.held_cloth is None and cloth.inv_mass[middle] == cloth.base_inv_mass[middle]
    assert not app.get(s.blower, Blower).active

    tear = app.get(s.cloth, Tearable)
    press(app, pygame.K_t)
    assert not tear.active
    press(app, pygame.K_t)
    assert tear.active

    for model in (*MODELS[1:], MODELS[0]):                                   # xpbd → verlet → … → xpbd
        old = app.get(s.cloth, Cloth)
        press(app, pygame.K_m)
        new = app.get(s.cloth, Cloth)
        assert new.model == model and np.array_equal(new.x, old.x) and np.array_equal(new.v, old.v)
        app.step(5)
        assert np.isfinite(new.x).all() and new.rejected_steps == 0, f"{model}: {app.report()}"
        assert (new.inv_mass[s.sheet.side("top_corners")] == 0.0).all(), f"{model}: the pins let go"
    for key, name in zip(sandbox.MATERIAL_KEYS, sandbox.MATERIALS):
        total = app.get(s.cloth, Cloth).total_mass / app.get(s.cloth, Cloth).material.density    # area [m²]
        press(app, key)
        new = app.get(s.cloth, Cloth)
        assert new.material.density == ClothMaterial.preset(name).density and s.material == name
        assert new.total_mass == pytest.approx(total * new.material.density, rel=1e-12)
        app.step(5)
        assert np.isfinite(new.x).all(), name
        assert new.rejected_steps == 0, name

    app.get(s.cloth, Cloth).x[:, 0] += 0.5                                      # somewhere else
    press(app, pygame.K_r)
    fresh = app.get(s.cloth, Cloth)
    assert np.array_equal(fresh.x, s.sheet.positions), "R did not hang a fresh sheet"
    assert fresh.material == ClothMaterial.preset("rubber") and fresh.model == "xpbd", "R keeps fabric and model"
    assert int(app.get(s.cloth, Pin).active.sum()) == 2


# --- drape -----------------------------------------------------------------------------------------------------------
def test_drape_keys_cycle_bending_and_models_rebuilding_the_cloth_where_it_is(make_app):
    app = make_app(substeps=drape.SUBSTEPS)
    first = drape.build_scene(app, n=16)
    d = app.resource(drape.Drape)
    assert app.get(d.cloth, Cloth) is first and d.bending == "medium"
    app.step(20)
    for level in ("limp", "stiff", "medium"):
        old = app.get(d.cloth, Cloth)
        press(app, pygame.K_b)
        new = app.get(d.cloth, Cloth)
        assert d.bending == level and new.material.bend_compliance == drape.BENDING[level]
        assert np.array_equal(new.x, old.x) and np.array_equal(new.v, old.v), "B must keep positions and velocities"
    for model in (*MODELS[1:], MODELS[0]):
        old = app.get(d.cloth, Cloth)
        press(app, pygame.K_m)
        new = app.get(d.cloth, Cloth)
        assert new.model == model and new.self_collision, model
        assert np.array_equal(new.x, old.x) and np.array_equal(new.v, old.v), "M must keep positions and velocities"
        app.step(10)
        assert np.isfinite(new.x).all() and new.rejected_steps == 0, f"{model}: {app.report()}"
    assert app.report()["model"] == "xpbd"


# --- cape ------------------------------------------------------------------------------------------------------------
def test_cape_hero_runs_600_frames_and_no_cape_particle_stays_inside_him(make_app):
    """600 frames of the cape game: the hero travels, nothing goes NaN, and no cape particle is inside him at two
    frames in a row, nor more than 10 at a frame. Before the stretch limit ran after the collisions (issue 17)
    none ever was; the limit may pull a particle touching the two-way hero into him (his surface gives way: the
    cloth's push back is his impulse), and the next contact puts it out: measured 2 particles at frame 336 and 8
    at frame 391 (a jump backward in the headwind), each for one frame."""
    app = make_app(substeps=8)                                               # as games/cape.py's main
    cloth, hero = cape.build_scene(app)
    xs, inside = [], []
    for _ in range(600):
        app.step()
        xs.append(hero.body.position.x)
        inside.append(int(cape.inside_hero(app, hero).sum()))
    travelled = max(xs) - min(xs)
    assert travelled > 5.0, f"the hero's x spans only {travelled:.2f} m in 600 frames"
    worst = int(np.argmax(inside))
    assert inside[worst] <= 10, f"{inside[worst]} cape particles inside the hero at frame {worst + 1}"
    twice = [f + 1 for f in range(1, 600) if inside[f] and inside[f - 1]]
    assert not twice, f"cape particles inside the hero two frames in a row, ending at frames {twice}"
    report = app.report()
    assert report["nan"] is False and np.isfinite(cloth.x).all(), report
    assert report["rejected_steps"] == 0 and cloth.rejected_steps == 0, report
    assert report["cape_inside_hero"] == 0 and report["frames"] == 600 and report["sim_ms_per_frame"] > 0.0, report


@pytest.mark.parametrize("model", MODELS)
def test_hanging_sheet_runs_every_model(model):
    from loom.games import hanging_sheet
    report = hanging_sheet.main(["--headless", "--frames", "60", "--report", "json", "--n", "16", "--model", model])
    assert report["nan"] is False and report["rejected_steps"] == 0 and report["frames"] == 60
    assert report["max_strain"] < 0.5, f"{model}: max strain {report['max_strain']:.3f}"


def test_precompile_runs_each_game_headless_and_reports_it(capsys, monkeypatch):
    from loom.games import __main__ as lister
    monkeypatch.setattr(lister, "PRECOMPILE_EXTRA", (("hanging_sheet", "--model", "verlet"),))
    assert lister.precompile({"hanging_sheet": ""}) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("  ")[0].strip() for line in lines] == ["hanging_sheet", "hanging_sheet --model verlet",
                                                              "hanging_sheet kernel list"]
    assert all(line.endswith("ok") for line in lines)
