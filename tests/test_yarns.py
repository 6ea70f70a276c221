"""Yarns (systems/xpbd/yarns.py): how a cloth's stretch links are split into lines, and the exact line solve.

The solve is checked against the linear algebra it claims to do: one XPBD step on all of a yarn's links together,
(∇C W ∇Cᵀ + α̃) Δλ = −C − α̃λ, assembled densely here and solved by numpy; and against the case where that
linearisation is exact (a straight chain: one solve, every link at its rest length).
"""
from __future__ import annotations

import numba
import numpy as np
import pytest

from loom import components
from loom.components import STRETCH, Box, Cloth, Collider, Pin, Plane, Sphere, Transform
from loom.engine import App, mesh
from loom.systems import DefaultPlugins
from loom.systems.xpbd import yarns as Y


@numba.njit(error_model="numpy")
def _solve_all(yarns_range, particles, links, offsets, scratch, rest, compliance, inv_h2, inv_mass, contact, x, lam):
    for y in range(yarns_range[0], yarns_range[1]):
        Y.solve_yarn(y, particles, links, offsets, scratch, rest, compliance, inv_h2, inv_mass, contact, True, x, x,
                     lam)


def _yarns(cloth: Cloth) -> Y.Yarns:
    return Y.build_yarns(cloth.link_i, cloth.link_j, cloth.link_kind[cloth.link_order] == STRETCH, cloth.rest_x)


def _check_cover(cloth: Cloth, yarns: Y.Yarns) -> None:
    """Every stretch link in exactly one yarn, consecutive particles joined by the named link, no particle twice in
    a yarn, and no two yarns of a colour sharing a particle."""
    stretch = np.flatnonzero(cloth.link_kind[cloth.link_order] == STRETCH)
    used = yarns.links[yarns.links >= 0]
    assert np.array_equal(np.sort(used), stretch)
    for y in range(yarns.offsets.shape[0] - 1):
        p = yarns.particles[yarns.offsets[y]:yarns.offsets[y + 1]]
        k = yarns.links[yarns.offsets[y]:yarns.offsets[y + 1]]
        assert k[0] == -1 and np.unique(p).size == p.size
        for t in range(1, p.size):
            assert {int(cloth.link_i[k[t]]), int(cloth.link_j[k[t]])} == {int(p[t - 1]), int(p[t])}
    for c in range(yarns.color_offsets.shape[0] - 1):
        members = yarns.particles[yarns.offsets[yarns.color_offsets[c]]:yarns.offsets[yarns.color_offsets[c + 1]]]
        assert np.unique(members).size == members.size, f"colour {c} shares a particle"


def test_a_grid_splits_into_its_rows_and_columns_in_two_colours():
    sheet = mesh.grid(7, 5, 1.0, 0.6)
    cloth = Cloth.from_mesh(sheet)
    yarns = _yarns(cloth)
    _check_cover(cloth, yarns)
    lines = sorted(tuple(sorted(yarns.particles[yarns.offsets[y]:yarns.offsets[y + 1]].tolist()))
                   for y in range(yarns.offsets.shape[0] - 1))
    rows = [tuple(range(r * 7, r * 7 + 7)) for r in range(5)]
    columns = [tuple(range(c, 35, 7)) for c in range(7)]
    assert lines == sorted(rows + columns)
    assert yarns.color_offsets.tolist() == [0, 5, 12] or yarns.color_offsets.tolist() == [0, 7, 12]


@pytest.mark.parametrize("build", [lambda: mesh.disc(0.5, 6), lambda: mesh.strip(9, 1.0, 0.1),
                                   lambda: _perturbed_grid(), lambda: mesh.grid(2, 2, 0.1, 0.1)],
                         ids=["disc", "strip", "irregular", "one quad"])
def test_every_stretch_link_lies_in_exactly_one_yarn_on_any_mesh(build):
    cloth = Cloth.from_mesh(build())
    _check_cover(cloth, _yarns(cloth))


def _perturbed_grid() -> mesh.Mesh:
    rng = np.random.default_rng(3)
    sheet = mesh.grid(9, 9, 1.0, 1.0)
    positions = sheet.positions + rng.uniform(-0.04, 0.04, sheet.positions.shape) * np.array([1.0, 1.0, 0.0])
    return mesh.from_triangles(positions, sheet.triangles)


def test_a_disc_ring_is_not_closed_into_a_loop():
    """The outer ring of a disc turns 20° per link, straight enough to walk around: the walk must stop before it
    meets its own start (a yarn holding a particle twice would move it twice)."""
    cloth = Cloth.from_mesh(mesh.disc(0.5, 3))
    yarns = _yarns(cloth)
    _check_cover(cloth, yarns)
    assert max(np.diff(yarns.offsets)) <= 18


def _dense_step(x, inv_mass, normal, chain, rest, alpha, lam):
    """The step the yarn solve claims to take, done densely: Δλ from J W Jᵀ + α̃ with W_p = w_p (I − c cᵀ); each
    particle moves W_p g_p (g_p = its rows of Jᵀ Δλ), or w_p g_p if g_p points off its surface (c·g > 0: released).
    Returns (x, λ, released)."""
    m = len(chain) - 1
    grads = np.zeros((m, len(x), 3))
    c = np.zeros(m)
    for k in range(m):
        a, b = chain[k], chain[k + 1]
        d = x[b] - x[a]
        length = np.linalg.norm(d)
        grads[k, b], grads[k, a] = d / length, -d / length
        c[k] = length - rest[k]
    W = np.zeros((len(x), 3, 3))
    for p in range(len(x)):
        W[p] = inv_mass[p] * (np.eye(3) - np.outer(normal[p], normal[p]))
    A = np.einsum("kpi,pij,lpj->kl", grads, W, grads) + np.diag(alpha)
    dlam = np.linalg.solve(A, -c - alpha * lam)
    g = np.einsum("kpj,k->pj", grads, dlam)
    released = np.einsum("pj,pj->p", g, normal) > 0.0
    move = np.einsum("pij,pj->pi", W, g)
    move[released] = inv_mass[released, None] * g[released]
    return x + move, lam + dlam, released


@pytest.mark.parametrize("contact", [False, True], ids=["free", "resting on surfaces"])
def test_one_yarn_solve_is_the_exact_xpbd_step_of_all_its_links_together(contact):
    """A bent, stretched and compressed 12-link chain, one end pinned, some links compliant: positions and
    multipliers after one solve equal the dense solution of the same linear system to 1e-12 (rounding of a few
    hundred operations on values of order 1). With contact normals on some particles, those the solve pushes into
    their surface move only along it and keep their normal; those it pulls off are free and lose it."""
    rng = np.random.default_rng(13)                  # a draw with particles of both kinds (asserted below)
    n = 13
    chain = np.arange(n)
    rest_x = np.stack([np.linspace(0.0, 1.2, n), np.zeros(n), np.zeros(n)], axis=1)
    x = rest_x + rng.normal(0.0, 0.02, (n, 3))
    cloth = Cloth.from_particles(rest_x, 0.05, np.stack([chain[:-1], chain[1:]], axis=1))
    inv_mass = cloth.inv_mass.copy()
    inv_mass[0] = 0.0
    normal = np.zeros((n, 3))
    touching = [3, 4, 7, 9, 10] if contact else []
    for p in touching:
        v = rng.normal(size=3)
        normal[p] = v / np.linalg.norm(v)
    yarns = _yarns(cloth)
    assert yarns.offsets.tolist() == [0, n]
    order = yarns.particles
    k_of = yarns.links[1:]
    compliance = cloth.link_compliance.copy()
    compliance[k_of[::3]] = 1e-3
    lam = rng.normal(0.0, 1e-6, cloth.link_count)
    inv_h2 = 240.0 ** 2
    expected_x, expected_lam, released = _dense_step(x, inv_mass, normal, order, cloth.link_rest[k_of],
                                                     compliance[k_of] * inv_h2, lam[k_of])
    got_x, got_lam = x.copy(), lam.copy()
    touch = np.zeros((n, 5))                                 # normals of colliders at rest (column 3: 1.0)
    touch[:, :3] = normal
    touch[touching, 3] = 1.0
    _solve_all(np.array([0, 1]), yarns.particles, yarns.links, yarns.offsets, yarns.scratch, cloth.link_rest,
               compliance, inv_h2, inv_mass, touch, got_x, got_lam)
    got_normal = touch[:, :3]
    assert np.abs(got_x - expected_x).max() < 1e-12
    assert np.abs(got_lam[k_of] - expected_lam).max() < 1e-12 * max(1.0, np.abs(expected_lam).max())
    if contact:
        kept = [p for p in touching if not released[p]]
        gone = [p for p in touching if released[p]]
        assert kept and gone, "the test needs particles of both kinds"
        for p in kept:                                       # on its surface: no move along the normal
            assert abs((got_x[p] - x[p]) @ normal[p]) < 1e-12 and (got_normal[p] == normal[p]).all()
        assert not got_normal[gone].any()


def _pair_case(resting_only: bool) -> tuple:
    """A disc's yarns (lines of 2–18 links, three colours) with every kind of particle on them: pinned ones, two
    pinned taut (a yarn projected link by link), contact normals at rest and moving, friction-held (``STUCK``),
    squeezed out of a pinch (``HELD``) and touching a two-way body (−1); positions stretched and shaken."""
    from loom.components.cloth import HELD, STUCK
    rng = np.random.default_rng(5)
    cloth = Cloth.from_mesh(mesh.disc(0.5, 8))
    yarns = _yarns(cloth)
    n = cloth.particle_count
    x = cloth.rest_x * 1.03 + rng.normal(0.0, 0.004, (n, 3))
    inv_mass = cloth.inv_mass.copy()
    inv_mass[rng.choice(n, 6, replace=False)] = 0.0
    longest = int(np.argmax(np.diff(yarns.offsets)))             # a yarn pinned at both ends, pulled taut
    ends = yarns.particles[[yarns.offsets[longest], yarns.offsets[longest + 1] - 1]]
    inv_mass[ends] = 0.0
    x[ends[1]] = x[ends[0]] + (x[ends[1]] - x[ends[0]]) * 1.2
    contact = np.zeros((n, 5))
    normal = rng.normal(size=(n, 3))
    contact[:, :3] = normal / np.linalg.norm(normal, axis=1, keepdims=True)
    kind = rng.choice([0.0, 0.0, 1.0, STUCK, STUCK, -1.0, 0.0], n)
    kind[rng.choice(n, 3, replace=False)] = HELD                 # a few: most yarns friction holds, some not
    contact[:, 3] = kind
    contact[kind == 0.0, :3] = 0.0                               # nothing touched: no normal
    contact[kind == -1.0, :3] = 0.0
    contact[:, 4] = rng.uniform(0.0, 1e-4, n) * (kind != 0.0)
    lam = rng.normal(0.0, 1e-6, cloth.link_count)
    compliance = cloth.link_compliance.copy()
    compliance[::4] = 1e-3
    return yarns, cloth.link_rest, compliance, inv_mass, contact, x, cloth.rest_x * 1.03, lam


@pytest.mark.parametrize("resting_only", [True, False], ids=["the substep's solve", "after the collisions"])
@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_yarns_solved_side_by_side_are_bit_for_bit_each_solved_alone(resting_only, size):
    """``solve_yarn_group`` (the solves' call: up to four yarns of a colour, their eliminations interleaved, their
    back substitutions two at a time) leaves positions, multipliers and contacts exactly as ``solve_yarn`` of each in
    turn, for groups of every size and yarns of every length and kind (free, resting, friction-held, pinched,
    touching a two-way body, taut between pins), a colour's last group smaller where its yarns do not divide evenly.
    Exact, not within a tolerance: the same operations in the same order."""
    yarns, rest, compliance, inv_mass, contact, x, x_prev, lam = _pair_case(resting_only)
    inv_h2 = 240.0 ** 2
    alone = [contact.copy(), x.copy(), lam.copy()]
    grouped = [contact.copy(), x.copy(), lam.copy()]
    counts = set()
    for c in range(yarns.color_offsets.shape[0] - 1):
        start, end = int(yarns.color_offsets[c]), int(yarns.color_offsets[c + 1])
        for y in range(start, end):
            Y.solve_yarn(y, yarns.particles, yarns.links, yarns.offsets, yarns.scratch, rest, compliance, inv_h2,
                         inv_mass, alone[0], resting_only, alone[1], x_prev, alone[2])
        for y in range(start, end, size):
            count = min(size, end - y)
            counts.add(count)
            Y.solve_yarn_group(y, count, yarns.particles, yarns.links, yarns.offsets, yarns.scratch, rest, compliance,
                               inv_h2, inv_mass, grouped[0], resting_only, True, grouped[1], x_prev, grouped[2])
    assert size in counts, f"the case needs a colour of at least {size} yarns"
    assert size == 1 or len(counts) > 1, "the case needs a colour whose last group is smaller"
    assert not np.array_equal(alone[1], x), "the solve moved nothing"
    for got, want in zip(grouped, alone):
        assert np.array_equal(got, want)


@pytest.mark.parametrize("resting_only", [True, False], ids=["the substep's solve", "after the collisions"])
def test_a_cloth_touching_nothing_is_solved_by_the_copy_without_contact_tests_to_the_bit(resting_only):
    """With no contact (``touches`` False) ``solve_yarn_group`` runs its copy compiled without the contact tests
    (normals 0, mobilities the inverse masses, no products by them); on the pair case's disc with every contact
    cleared it leaves positions,
    multipliers and contacts exactly as the copy with the tests (``touching`` True), pins and a taut yarn included.
    ``touches`` itself: False on cleared contacts, True for one particle resting on a collider at rest, and for one
    touching a moving collider (a normal, column 3 = 0) only after the collisions."""
    yarns, rest, compliance, inv_mass, contact, x, x_prev, lam = _pair_case(resting_only)
    contact[:] = 0.0
    assert not Y.touches(contact, resting_only)
    inv_h2 = 240.0 ** 2
    runs = {touching: [contact.copy(), x.copy(), lam.copy()] for touching in (True, False)}
    for touching, (c, xs, ls) in runs.items():
        for colour in range(yarns.color_offsets.shape[0] - 1):
            start, end = int(yarns.color_offsets[colour]), int(yarns.color_offsets[colour + 1])
            for y in range(start, end, 4):
                Y.solve_yarn_group(y, min(4, end - y), yarns.particles, yarns.links, yarns.offsets, yarns.scratch,
                                   rest, compliance, inv_h2, inv_mass, c, resting_only, touching, xs, x_prev, ls)
    assert not np.array_equal(runs[False][1], x), "the solve moved nothing"
    for got, want in zip(runs[False], runs[True]):
        assert np.array_equal(got, want)
    moving = contact.copy()
    moving[7, :3] = (0.0, 1.0, 0.0)                       # a moving collider's normal: column 3 stays 0
    assert Y.touches(moving, False) and not Y.touches(moving, True)
    resting = contact.copy()
    resting[7] = (0.0, 1.0, 0.0, 1.0, 0.0)
    assert Y.touches(resting, True) and Y.touches(resting, False)


def test_one_solve_puts_a_straight_hanging_chain_at_rest_length_where_sweeps_do_not():
    """A 40-link vertical chain pinned at the top, stretched 1 % along itself (no tethers): the linearisation is
    exact for a straight chain, so one step of one yarn solve leaves every link at its rest length (1e-12
    relative); one plain Gauss–Seidel sweep leaves it stretched."""
    n = 41
    rest_x = np.stack([np.zeros(n), -np.linspace(0.0, 1.0, n), np.zeros(n)], axis=1)
    links = np.stack([np.arange(n - 1), np.arange(1, n)], axis=1)
    results = {}
    for yarns in (True, False):
        app = App(dt=1 / 60, substeps=1)
        app.add_plugin(DefaultPlugins)
        cloth = Cloth.from_particles(rest_x, 0.01, links, iterations=1, yarns=yarns, tethers=False)
        cloth.x = rest_x * 1.01
        app.spawn(cloth, Pin(index=[0], target=rest_x[:1]))
        cloth.material = cloth.material.replace(stretch_limit=None, damping=0.0)
        app.step(1)
        results[yarns] = cloth.strain().max()
    assert results[True] < 1e-12
    assert results[False] > 1e-3


def test_a_torn_cloth_solves_its_new_yarns():
    """Tearing rebuilds the link tables; the yarns follow (every stretch link of the torn cloth in one yarn)."""
    from loom.components import Tearable
    app = App(dt=1 / 60, substeps=8)
    app.add_plugin(DefaultPlugins)
    sheet = mesh.grid(12, 12, 1.0, 1.0)
    cloth = Cloth.from_mesh(sheet)
    pin = Pin.corners(sheet, "top")
    app.spawn(cloth, pin, Tearable(tear_strain=0.01, tear_time=0.0))
    pin.target[1] += (0.6, 0.0, 0.0)                         # pull one corner away: the sheet tears
    app.step(30)
    assert cloth.particle_count > 144
    _check_cover(cloth, _yarns(cloth))
    assert np.isfinite(cloth.x).all()
    assert cloth.rejected_steps == 0


def test_a_rope_pinned_taut_between_two_points_swings_no_faster_than_plain_sweeps():
    """A 47-link rope whose pins are exactly its rest length apart cannot sag without stretching: its yarn is
    overstretched between two fixed particles, and no solve has an answer. The exact one jerked the rope about
    (10 m/s); the yarn is projected link by link instead (``yarns.TAUT``), as plain sweeps do, so over its second
    second it moves no faster than the plain sweeps' rope (0.9 m/s) with a 1.5× margin, and no more stretched than
    it (2.3 %) plus 1 %."""
    n = 48
    rest_x = np.stack([np.linspace(0.0, 1.0, n), np.zeros(n), np.zeros(n)], axis=1)
    links = np.stack([np.arange(n - 1), np.arange(1, n)], axis=1)
    results = {}
    for yarns in (False, True):
        app = App(dt=1 / 60, substeps=16)
        app.add_plugin(DefaultPlugins)
        cloth = Cloth.from_particles(rest_x, 0.001, links, iterations=2, tethers=False, yarns=yarns)
        app.spawn(cloth, Pin(index=[0, n - 1], target=rest_x[[0, -1]]))
        fastest = 0.0
        for step in range(120):
            app.step()
            if step >= 60:
                fastest = max(fastest, float(np.abs(cloth.v).max()))
        results[yarns] = (fastest, float(cloth.strain().max()))
    assert results[True][0] <= 1.5 * results[False][0], results
    assert results[True][1] <= results[False][1] + 0.01, results


def test_contact_normals_are_cleared_when_the_last_collider_goes():
    """``Cloth.contact`` holds what each particle touched in the last substep: with every collider despawned it is
    all zero from the next step (a stale normal would keep the yarns holding particles on a surface that is gone)."""
    from loom.components import Collider, Sphere, Transform
    from loom.engine import App, mesh
    from loom.systems import DefaultPlugins

    app = App(dt=1 / 60, substeps=4).add_plugin(DefaultPlugins)
    ball = app.spawn(Collider(Sphere(0.3)), Transform())
    sheet = mesh.grid(12, 12, 1.0, 1.0, center=(0.0, 0.32, 0.0), plane="xz")
    cloth = Cloth.from_mesh(sheet, "cotton")
    app.spawn(cloth)
    app.step(10)
    assert np.abs(cloth.contact[:, :3]).sum(axis=1).max() > 0.9          # resting on the ball: unit normals
    app.despawn(ball)
    app.step(1)                                    # the step in which it went (despawns apply at its end)
    app.step(1)
    assert not cloth.contact.any()
    app.close()


def _taut_chain(two_way_at: int | None) -> tuple[np.ndarray, np.ndarray]:
    """A 6-particle yarn along x whose first two particles are fixed exactly a rest length (0.1 m) apart, a taut
    stretch that sends the yarn link by link, and whose free links are 20 % long; particle ``two_way_at`` touches
    a two-way body (``Cloth.contact`` column 3 = −1). Solved once after the collisions (not ``resting_only``):
    returns (positions before, after)."""
    n = 6
    x = np.zeros((n, 3))
    x[:, 0] = [0.0, 0.1, 0.22, 0.34, 0.46, 0.58]
    before = x.copy()
    particles = np.arange(n, dtype=np.int32)
    links = np.array([-1, 0, 1, 2, 3, 4], np.int32)             # link t joins particles t and t + 1
    offsets = np.array([0, n], np.int64)
    scratch = np.zeros((n, Y.SCRATCH))
    rest = np.full(n - 1, 0.1)
    inv_mass = np.array([0.0, 0.0, 1.0, 1.0, 1.0, 1.0])
    contact = np.zeros((n, 5))
    if two_way_at is not None:
        contact[two_way_at, 3] = -1.0
    Y.solve_yarn(0, particles, links, offsets, scratch, rest, np.zeros(n - 1), 1.0e4, inv_mass, contact, False, x,
                 x, np.zeros(n - 1))
    return before, x


def test_a_taut_yarn_touching_a_two_way_body_further_on_is_left_where_the_contacts_put_it():
    """The row pass stops at the taut stretch (nothing after it is needed to project link by link) but still looks
    at the particles after it for a two-way body: a yarn touching one is left alone after the collisions (the
    body's ball-on-a-bed rule in ``solve_yarn``), wherever along the yarn the touching particle is."""
    before, after = _taut_chain(None)
    assert np.abs(after - before).max() > 0.01                  # no body: projected link by link
    for at in (2, 4, 5):
        before, after = _taut_chain(at)
        assert np.array_equal(after, before), at


def _floor_chain(left: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A 7-particle yarn on the floor y = 0 (contact normal +y, at rest), links 0.13, 0.07, then 12 cm each (rest 0.1),
    solved once after the collisions, particles 0 and 2 ``STUCK`` with ``left`` [m] of static friction left over
    from their contact (``Cloth.contact`` column 4 holds −left). Returns (positions before, after, after with nothing
    held: the same yarn with every particle merely resting)."""
    from loom.components.cloth import STUCK
    x = np.zeros((7, 3))
    x[:, 0] = [0.0, 0.13, 0.2, 0.32, 0.44, 0.56, 0.68]
    results = []
    for held in (True, False):
        contact = np.zeros((7, 5))
        contact[:, 1] = 1.0
        contact[:, 3] = 1.0
        if held:
            contact[[0, 2], 3] = STUCK
            contact[[0, 2], 4] = -left
        got = x.copy()
        Y.solve_yarn(0, np.arange(7, dtype=np.int32), np.array([-1, 0, 1, 2, 3, 4, 5], np.int32),
                     np.array([0, 7], np.int64), np.zeros((7, Y.SCRATCH)), np.full(6, 0.1), np.zeros(6), 1.0e4,
                     np.ones(7), contact, False, got, x.copy(), np.zeros(6))
        results.append(got)
    return x, results[0], results[1]


@pytest.mark.parametrize("left", [1.0, 0.004, 0.0], ids=["ample", "less than the pull", "none"])
def test_after_the_collisions_friction_holds_a_particle_against_a_pull_it_can_bear_and_lets_the_excess_slide(left):
    """After the collisions a particle static friction holds (``STUCK``) takes part in its yarns' solve, and its move is
    then cut by the static friction its contact left (``Cloth.contact`` column 4): a pull it can bear moves it not at
    all, a larger one slides it by the excess (kinetic), Coulomb's law on the pass after the collisions. The other
    particles move as if nothing were held (their moves come from the multipliers, not from the held particles'
    positions), bit for bit. Before stop 36 a friction-held particle was fixed in that pass whatever pulled it: a
    tablecloth stretched where friction held it stayed stretched, and the two families of yarns, each solved line by line
    with those ends fixed, pulled the free particles between them one way and the other every substep (the 128² drape
    game's cloth beside its ball: 0.4–0.7 m/s of jitter, 270 links over 1.5 %; docs/models.md, "Friction after the
    collisions")."""
    before, held, free = _floor_chain(left)
    others = [1, 3, 4, 5, 6]
    assert np.array_equal(held[others], free[others])
    pull = np.linalg.norm(free[[0, 2]] - before[[0, 2]], axis=1)
    assert (pull > 0.005).all()                                  # the pulls the cases are measured against
    share = np.where(pull <= left, 0.0, 1.0 - left / pull)
    assert np.allclose(held[[0, 2]], before[[0, 2]] + share[:, None] * (free[[0, 2]] - before[[0, 2]]), rtol=0.0,
                       atol=1e-15)
    if left == 1.0:
        assert np.array_equal(held[[0, 2]], before[[0, 2]])     # held where friction put them
    assert np.array_equal(held[:, 1:], before[:, 1:])            # along the floor only


def _resting_link(lift: float, rest: float) -> tuple[np.ndarray, np.ndarray]:
    """One link from a fixed particle at (−0.1, −0.05, 0) m (a skirt's weight below a table's rim) to a particle
    resting on the floor y = 0 (contact normal +y, at rest), where it met the floor at the substep's start
    (x_prev y = 0) and which the sweeps before the yarns have lifted by ``lift`` [m]. One substep's solve
    (``resting_only``) of a link of rest length ``rest`` [m]: returns (positions, contact) after it."""
    x = np.array([[-0.1, -0.05, 0.0], [0.0, lift, 0.0]])
    x_prev = np.array([[-0.1, -0.05, 0.0], [0.0, 0.0, 0.0]])
    contact = np.zeros((2, 5))
    contact[1] = (0.0, 1.0, 0.0, 1.0, 0.0)
    Y.solve_yarn(0, np.array([0, 1], np.int32), np.array([-1, 0], np.int32), np.array([0, 2], np.int64),
                 np.zeros((2, Y.SCRATCH)), np.array([rest]), np.zeros(1), 1.0e4, np.array([0.0, 1.0]), contact,
                 True, x, x_prev, np.zeros(1))
    return x, contact


def test_a_resting_particle_lifted_in_the_substep_is_pulled_back_down_to_its_surface_and_no_further():
    """A particle resting on a surface moves only along it in the substep's solve; but the sweeps before the yarns
    (bend and shear links) may have lifted it off, and then its yarn pulls it back down as far as where it met the
    surface at the substep's start (x_prev), no further: the rest of the pull is the surface's push (``Cloth.contact``
    column 4, friction's budget). Left hovering instead, it dropped out of contact, fell back in the next substep and
    was pushed out again: the tablecloth's rim chattered at 0.3 m/s at rest (the test below). Exact to rounding: the
    move into the surface is the lift itself."""
    x, contact = _resting_link(0.002, 0.05)                  # pulled hard: 11 cm long, 5 cm at rest
    assert x[1, 1] == pytest.approx(0.0, abs=1e-15)           # back on its surface, not below
    assert x[1, 0] < -1e-3                                     # and slid along it toward the pull
    assert contact[1, 3] == 1.0 and contact[1, 4] > 0.0        # still resting; the surface took the rest
    flat, flat_contact = _resting_link(0.0, 0.05)             # not lifted: no move into the surface at all
    assert flat[1, 1] == 0.0 and flat_contact[1, 4] > 0.0
    gentle, gentle_contact = _resting_link(0.002, 0.1117)    # a pull of 0.1 mm: it moves down by it, freely
    assert 0.0 < gentle[1, 1] < 0.002 and gentle_contact[1, 4] == 0.0


class RimChatters(AssertionError):
    """A resting tablecloth faster than 1 mm/s: the one failure the rim test is marked xfail for."""


@pytest.mark.xfail(strict=True, raises=RimChatters, reason=(
    "issue 44 item 3: the tablecloth still moves; measured 52.7 mm/s frame to frame in the fifteenth second (the "
    "substep velocity cloth.v peaks at 0.18 m/s)"))
def test_a_tablecloth_on_a_round_table_settles_without_chattering_at_the_rim():
    """The drape game's round table without its ball, a 24 × 24 tablecloth on yarns, no self-collision, settled for
    14 s: over the next second no particle moves faster than 1 mm/s frame to frame, |x(t) − x(t − dt)|/dt over every
    particle (issue 44 item 3: cloth at rest is still). What still moves is where the cloth bends over the rim, its
    particles leaving and re-meeting the table every substep (docs/models.md, "Creep on a table"), and the skirt.
    No step may be refused."""
    from loom.games import drape
    app = App(dt=1.0 / 60.0, substeps=8, threads=1).add_plugin(DefaultPlugins)
    cloth = drape.build_scene(app, n=24, yarns=True)
    cloth.self_collision = False
    for entity, collider in list(app.query(Collider)):
        if isinstance(collider.shape, Sphere):
            app.despawn(entity)
    sleep = getattr(components, "Sleep", None)           # the physics at rest, not a sleep (where there is one)
    if sleep is not None:
        for entity, _ in list(app.query(Cloth)):
            app.add_component(entity, sleep(enabled=False))
    app.step(14 * 60)
    peak = 0.0
    for _ in range(60):
        before = cloth.x.copy()
        app.step(1)
        peak = max(peak, float(np.linalg.norm(cloth.x - before, axis=1).max()) / app.clock.dt)
    app.close()
    assert cloth.rejected_steps == 0
    if peak > 1e-3:
        raise RimChatters(f"fastest particle {peak * 1000:.3g} mm/s frame to frame after 14 s at rest (bound 1 mm/s)")


def test_the_drape_games_tablecloth_on_yarns_stays_on_the_table():
    """The drape game's scene (round table, ball, self-colliding tablecloth, 8 substeps) at n = 24 on yarns: from 8 s,
    when it has settled, to 30 s its centre of mass moves under 3 mm (measured 0.7 mm; 21 mm before, when the pass
    after the collisions slid friction-held particles across the table and a particle a hair beyond a curved
    surface's reach counted as free: docs/models.md, "Creep on a table"). Real cloth on a table stays put."""
    from loom.games import drape
    app = App(dt=1.0 / 60.0, substeps=8, threads=1).add_plugin(DefaultPlugins)
    cloth = drape.build_scene(app, n=24, yarns=True)
    app.step(8 * 60)
    settled = cloth.x.mean(axis=0)
    app.step(22 * 60)
    drift = float(np.hypot(*(cloth.x.mean(axis=0) - settled)[[0, 2]]))
    app.close()
    assert drift < 0.003


def test_a_tablecloth_on_a_box_table_stays_put_and_comes_nearly_to_rest():
    """A 40 × 30 cotton cloth dropped on a 0.9 × 0.6 m box table (8 substeps, no two-way body near): from 10 s to 25 s
    its centre moves under 1 mm and the 90th percentile of its particles' speeds, sampled each second, has a median
    under 0.02 m/s (measured 0.04 mm and 0.0135 m/s). Before stop 38 boxes had no contact skin
    (``environment.CONTACT_SKIN``): particles a hair beyond the top's reach counted as free, the pass after the
    collisions pulled them in and the next substep pushed them out, and the cloth walked 5.8 mm (p90 0.034 m/s).
    Not zero: particles along the top's long edges still move at up to 0.16 m/s (docs/models.md, "Creep on a
    table")."""
    app = App(dt=1.0 / 60.0, substeps=8, threads=1).add_plugin(DefaultPlugins)
    app.spawn(Collider(Plane(), friction=0.6), Transform())
    app.spawn(Collider(Box((0.45, 0.02, 0.3)), friction=0.6), Transform(position=(0.0, 0.73, 0.0)))
    cloth = Cloth.from_mesh(mesh.grid(40, 30, 1.3, 1.0, center=(0.0, 0.95, 0.0), plane="xz"), "cotton", thickness=0.01)
    app.spawn(cloth)
    app.step(10 * 60)
    settled = cloth.x.mean(axis=0)
    p90 = []
    for _ in range(15):
        app.step(60)
        p90.append(float(np.percentile(np.linalg.norm(cloth.v, axis=1), 90)))
    drift = float(np.hypot(*(cloth.x.mean(axis=0) - settled)[[0, 2]]))
    app.close()
    assert drift < 0.001, f"the cloth's centre moved {drift * 1000:.2f} mm"
    assert np.median(p90) < 0.02, f"p90 speed {np.median(p90):.4f} m/s"
