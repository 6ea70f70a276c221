"""The game scenes read as cloth at once (issue 18): the flag's sail is rigged and fills with a belly, the hanging
sheet's top edge sags and its folds move from the first second, the idle sandbox moves, and its scripted tear
leaves no specks. Every check is a physical measurement of the games' own ``build_scene`` stepped headless
(no renderer, no timing).

Tolerances: the scenes are deterministic (seeded wind, fixed steps), so the margins below only absorb
floating-point differences between machines and small retunings; each is set well inside the measured value it
guards (quoted in the test's docstring) and well outside what the scene looked like before the issue."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from loom.components import SHEAR, Capsule, Cloth, Collider, Cylinder, Pin, Prop, Tearable, Transform, Wind
from loom.games import flag, hanging_sheet, sandbox


def kinetic_energy(cloth: Cloth) -> float:
    """½ Σ m v² [J] of the free particles."""
    return float(0.5 * (cloth.mass[:, None] * cloth.v ** 2).sum())


def worst_stretch(cloth: Cloth) -> float:
    """Largest relative elongation of a stretch (structural) link [-]."""
    return float(cloth.strain().max())


def edge_pieces(cloth: Cloth) -> np.ndarray:
    """Triangles per piece when triangles join only across a shared edge (a triangle hanging from the rest by a
    corner counts as a piece of its own): the sizes of what a viewer sees as separate shards, (k,)."""
    t = np.sort(cloth.triangles.astype(np.int64), axis=1)
    m = t.shape[0]
    edges = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [0, 2]]])
    key = edges[:, 0] * cloth.particle_count + edges[:, 1]
    owner = np.tile(np.arange(m), 3)
    order = np.argsort(key, kind="stable")
    key, owner = key[order], owner[order]
    shared = np.flatnonzero(key[1:] == key[:-1])
    graph = coo_matrix((np.ones(shared.size), (owner[shared], owner[shared + 1])), shape=(m, m))
    count, label = connected_components(graph, directed=False)
    return np.bincount(label, minlength=count)


def particle_pieces(cloth: Cloth) -> int:
    """Connected pieces of particles joined by triangle edges (as tests/test_games.py counts them)."""
    t = cloth.triangles
    rows = np.concatenate([t[:, 0], t[:, 1], t[:, 2]])
    cols = np.concatenate([t[:, 1], t[:, 2], t[:, 0]])
    n = cloth.particle_count
    return connected_components(coo_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n)), directed=False)[0]


# --- the flag's sail ---------------------------------------------------------------------------------------------
def sail_scene(make_app, wind: bool = True):
    app = make_app(substeps=flag.SUBSTEPS)
    flag_cloth, sail_cloth = flag.build_scene(app, sail=True)
    if not wind:
        for _, w in app.query(Wind):
            w.active = False
    return app, flag_cloth, sail_cloth, app.resource(flag.Sail)


def test_the_sail_fills_with_a_belly_deeper_than_8_percent_of_its_width(make_app):
    """The sail hangs from its yard with slack (clews tied 86 % of its height below it) and the breeze blows a belly
    into it: measured 23–24 % of its 1.5 m width from 2 s to 10 s (its gusts barely change a full sail), against
    12–15 % with the wind off (the slack alone sagging). Asserted: at least 8 % (the issue's bar) at every frame
    of the fourth second, and at least 1.3 × the calm sail's, so the belly is the wind's, not only the slack's.
    The canvas keeps to its Provot limit of 5 % (``SAIL_STRETCH``, plus 1e-3 for the solver), nothing NaN."""
    app, _, sail_cloth, sail = sail_scene(make_app)
    width = flag.SAIL[0]
    app.step(180)
    depths, stretch = [], []
    for _ in range(60):
        app.step()
        depths.append(flag.belly_depth(sail_cloth, sail.corners))
        stretch.append(worst_stretch(sail_cloth))
    assert np.isfinite(sail_cloth.x).all() and app.report()["rejected_steps"] == 0
    assert min(depths) >= 0.08 * width, f"the sail's belly is only {min(depths) / width:.1%} of its width"
    assert max(stretch) <= flag.SAIL_STRETCH + 1e-3, f"the sail's canvas stretched {max(stretch):.1%}"
    assert app.report()["sail_belly"] == pytest.approx(depths[-1] / width, abs=1e-4)

    calm_app, _, calm_cloth, calm_sail = sail_scene(make_app, wind=False)
    calm_app.step(240)
    calm = flag.belly_depth(calm_cloth, calm_sail.corners)
    assert min(depths) >= 1.3 * calm, f"windy belly {min(depths):.3f} m, calm {calm:.3f} m: the wind barely fills it"


def test_the_sail_is_rigged_ropes_end_at_its_tied_corners_and_it_stays_clear_of_the_mast(make_app):
    """The sail is visibly held: its head is pinned along the yard, and a rope prop (a thin Cylinder) ends within
    1 mm of each tied clew; while it fills, no sail particle comes within the mast's radius of the mast's axis."""
    app, _, sail_cloth, sail = sail_scene(make_app)
    pin = app.get(sail.entity, Pin)
    clews = sail.corners[2:]
    ends = []
    for entity, prop in app.query(Prop):
        if isinstance(prop.shape, Cylinder) and prop.shape.radius < 0.02:            # a rope
            t = app.get(entity, Transform)
            axis = t.rotation[:, 1] * prop.shape.half_height
            ends += [t.position + axis, t.position - axis]
    for clew in clews:
        target = pin.target[np.flatnonzero(pin.index == clew)[0]]
        gap = min(np.linalg.norm(end - target) for end in ends)
        assert gap < 1e-3, f"no rope ends at the clew {clew} (nearest {gap:.3f} m away)"
    mast = [(t.position, c.shape.radius) for _, c, t in app.query(Collider, Transform)
            if isinstance(c.shape, Capsule) and np.linalg.norm(t.position[[0, 2]] - flag.BOAT[::2]) < 1e-9]
    assert len(mast) == 1, "the boat has one mast collider"
    foot, radius = mast[0]
    for _ in range(120):
        app.step()
        off_axis = np.linalg.norm(sail_cloth.x[:, [0, 2]] - foot[[0, 2]], axis=1).min()
        assert off_axis > radius, f"a sail particle is {off_axis:.3f} m from the mast's axis"


def test_the_flag_still_streams_downwind_within_provots_limit(make_app):
    """The flag is unchanged by the new scenery: after 2 s of gusts its fly end reaches x = 0.89 m, 1.9 m downwind
    of the pole at x = −1.04 m (asserted > 0.6 m; limp it would hang at about −1 m), its worst stretch within its
    2 % stretch limit and its shear links within its 30 % Provot limit (``flag.FLAG_SHEAR``), exactly (the limits end
    every substep with no link beyond them)."""
    app = make_app(substeps=flag.SUBSTEPS)
    flag_cloth, sail_cloth = flag.build_scene(app)
    assert sail_cloth is None
    app.step(120)
    assert flag_cloth.x[:, 0].max() > 0.6, f"the flag reaches only x = {flag_cloth.x[:, 0].max():.2f} m"
    assert worst_stretch(flag_cloth) <= flag_cloth.material.stretch_limit + 1e-12
    assert flag_cloth.strain(SHEAR).max() <= flag.FLAG_SHEAR + 1e-12


# --- the hanging sheet -------------------------------------------------------------------------------------------
def test_the_hanging_sheet_sags_between_its_pegs_and_its_folds_move_from_the_first_second(make_app):
    """The pegs slide together to 62 % of the sheet's width in 0.75 s while it falls, so the top edge has slack.
    Measured (n = 32, 5 s): the edge's middle hangs 0.11–0.26 m below the pegs from 1 s on; the sheet's kinetic
    energy is 0.03–0.08 J from 0.15 s to 1 s and, in the breeze, never drops to rest (≥ 3e-4 J; a flat board at
    rest has 0); at 2 s it bulges 0.22 m out of its best-fit plane (folds; a flat card: 0); its worst stretch is
    4.0 % (Provot's limit on the cotton, ``STRAIN_LIMIT``; 3.7 % in the first second). Asserted: sag > 5 cm from 1 s on, energy
    > 1e-3 J at every frame from 0.15 s to 1 s and > 1e-5 J after, bulge > 3 cm at 2 s, stretch ≤ 5 % at every
    frame (the issue's bound for real fabric), nothing NaN."""
    app = make_app(substeps=hanging_sheet.SUBSTEPS)
    cloth = app.get(hanging_sheet.build_scene(app), Cloth)
    line = app.resource(hanging_sheet.Line)
    worst = 0.0
    for frame in range(1, 301):
        app.step()
        worst = max(worst, worst_stretch(cloth))
        energy = kinetic_energy(cloth)
        if 10 <= frame <= 60:
            assert energy > 1e-3, f"the sheet is still at frame {frame} ({energy:.2e} J)"
        elif frame > 60:
            assert energy > 1e-5, f"the sheet came to rest at frame {frame} ({energy:.2e} J)"
            assert hanging_sheet.top_sag(app) > 0.05, f"the top edge is taut at frame {frame}"
        if frame == 120:
            centred = cloth.x - cloth.x.mean(axis=0)
            normal = np.linalg.svd(centred, full_matrices=False)[2][2]
            bulge = np.abs(centred @ normal).max()
            assert bulge > 0.03, f"the sheet hangs flat as a card (bulge {bulge:.3f} m)"
    assert np.isfinite(cloth.x).all() and app.report()["rejected_steps"] == 0
    assert worst <= 0.05, f"the cotton stretched {worst:.1%}"
    pegs = app.get(line.sheet, Pin).target
    assert np.linalg.norm(pegs[0] - pegs[1]) == pytest.approx(hanging_sheet.GAP * hanging_sheet.SIZE)
    for peg, point in zip(line.pegs, pegs):                                   # the peg props sit on the pins
        assert np.linalg.norm(app.get(peg, Transform).position - point) < 0.02


# --- the sandbox -------------------------------------------------------------------------------------------------
def test_the_idle_sandbox_moves_and_its_top_edge_sags_before_anyone_touches_it(make_app):
    """Until the scripted player's first grab (1 s) nobody touches the sheet: its corners slide to 70 % of its
    width in 0.8 s and the breeze blows. Measured: kinetic energy 1.7e-3–1.9e-2 J from 0.1 s on, the top edge's
    middle 0.31 m off the straight line between its corners at 1 s (the breeze takes the slack back, 5 cm of it
    down), worst stretch 3.0 %. Asserted: energy > 1e-4 J from 0.25 s to 1 s (the old scene: exactly 0, a
    board), the top edge's middle > 10 cm off the line at 1 s, stretch ≤ 5 %. R hangs a fresh sheet, whose
    corners slide together again."""
    app = make_app(substeps=sandbox.SUBSTEPS)
    sandbox.build_scene(app)
    s = app.resource(sandbox.Sandbox)
    cloth = app.get(s.cloth, Cloth)
    top = s.sheet.side("top")
    corners = s.sheet.side("top_corners")
    worst = 0.0
    for frame in range(1, 60):
        app.step()
        worst = max(worst, worst_stretch(cloth))
        if frame >= 15:
            assert kinetic_energy(cloth) > 1e-4, f"the idle sandbox is still at frame {frame}"
    a, b, middle = cloth.x[corners[0]], cloth.x[corners[1]], cloth.x[top[top.size // 2]]
    along = (b - a) / np.linalg.norm(b - a)
    slack = np.linalg.norm((middle - a) - ((middle - a) @ along) * along)
    assert slack > 0.1, f"the top edge's middle is only {slack:.3f} m off the line between its corners"
    assert worst <= 0.05, f"the idle cotton stretched {worst:.1%}"
    apart = np.linalg.norm(cloth.x[corners[0]] - cloth.x[corners[1]])
    assert apart == pytest.approx(sandbox.GAP * sandbox.SIZE, abs=1e-9)

    sandbox.reset(app, s)
    fresh = app.get(s.cloth, Cloth)
    assert np.linalg.norm(fresh.x[corners[0]] - fresh.x[corners[1]]) == pytest.approx(sandbox.SIZE)
    app.step(round(sandbox.SLIDE / sandbox.DT) + 1)
    apart = np.linalg.norm(fresh.x[corners[0]] - fresh.x[corners[1]])
    assert apart == pytest.approx(sandbox.GAP * sandbox.SIZE, abs=1e-9), "after R the corners did not slide again"


def test_the_sandbox_scripted_tear_opens_the_sheet_without_specks(make_app):
    """The two scripted hands hold patches (the ring around each grabbed particle) and the crack runs one particle
    per step, so pulling the hem apart tears a slit into the sheet instead of ripping a speck out around each hand.
    Measured at 3.6 s: 63 particles torn, one piece (before: the sheet and two specks of 2 and 4 triangles that
    fell to the floor), 6 groups of at most 4 triangles joined to the rest by a corner only (before, with these
    hands but 16 splits a step: 33). Asserted: ≥ 20 torn, one piece, at most 12 such
    corner-hung shards; the hands' pins are all let go after the tear (only the two corners stay pinned)."""
    app = make_app(substeps=sandbox.SUBSTEPS)
    sandbox.build_scene(app)
    s = app.resource(sandbox.Sandbox)
    app.step(round(3.6 / sandbox.DT))
    cloth, tear, pin = app.get(s.cloth, Cloth), app.get(s.cloth, Tearable), app.get(s.cloth, Pin)
    assert tear.tears >= 20, f"the hands tore only {tear.tears} particles"
    assert particle_pieces(cloth) == 1, "a speck was ripped off the sheet"
    sizes = edge_pieces(cloth)
    shards = sizes[sizes <= 4]
    assert shards.size <= 12, f"{shards.size} shards of ≤ 4 triangles hang by a corner ({shards.sum()} triangles)"
    assert int(pin.active.sum()) == 2 and not s.grip_held, "the hands' grip pins were not let go"
    assert np.isfinite(cloth.x).all() and app.report()["rejected_steps"] == 0
