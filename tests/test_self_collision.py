"""Self- and inter-cloth collision measured: closest non-neighbour pairs, edges through triangles."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial import cKDTree

from loom.components import Capsule, Cloth, Collider, Plane, Transform
from loom.components.cloth import STUCK
from loom.engine import mesh


def close_non_neighbour_pairs(x: np.ndarray, rest: np.ndarray, limit: float) -> np.ndarray:
    """Distances of particle pairs closer than ``limit`` whose rest distance is at least ``limit``."""
    pairs = cKDTree(x).query_pairs(limit, output_type="ndarray")
    if pairs.size == 0:
        return np.zeros(0)
    apart_at_rest = np.linalg.norm(rest[pairs[:, 0]] - rest[pairs[:, 1]], axis=1) >= limit
    return np.linalg.norm(x[pairs[apart_at_rest, 0]] - x[pairs[apart_at_rest, 1]], axis=1)


def edges_through_triangles(x: np.ndarray, triangles: np.ndarray, edges: np.ndarray) -> int:
    """Count (edge, triangle) pairs, sharing no vertex, where the edge segment crosses the triangle
    (Möller–Trumbore on every candidate pair near each other)."""
    centres = x[triangles].mean(axis=1)
    reach = np.linalg.norm(x[triangles] - centres[:, None], axis=2).max() + \
        np.linalg.norm(x[edges[:, 0]] - x[edges[:, 1]], axis=1).max()
    mids = 0.5 * (x[edges[:, 0]] + x[edges[:, 1]])
    candidates = cKDTree(centres).query_ball_point(mids, reach)
    e_idx = np.repeat(np.arange(len(edges)), [len(c) for c in candidates])
    t_idx = np.concatenate([np.asarray(c, dtype=np.int64) for c in candidates])
    share = (triangles[t_idx] == edges[e_idx, 0:1]).any(axis=1) | (triangles[t_idx] == edges[e_idx, 1:2]).any(axis=1)
    e_idx, t_idx = e_idx[~share], t_idx[~share]
    a, b = x[edges[e_idx, 0]], x[edges[e_idx, 1]]
    v0, v1, v2 = (x[triangles[t_idx, k]] for k in range(3))
    d = b - a
    e1, e2 = v1 - v0, v2 - v0
    h = np.cross(d, e2)
    det = np.einsum("ij,ij->i", e1, h)
    ok = np.abs(det) > 1e-14
    f = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
    s = a - v0
    u = f * np.einsum("ij,ij->i", s, h)
    q = np.cross(s, e1)
    v = f * np.einsum("ij,ij->i", d, q)
    t = f * np.einsum("ij,ij->i", e2, q)
    hit = ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (t >= 0) & (t <= 1)
    return int(hit.sum())


@pytest.mark.parametrize("scene", ["fold_over_bar", "heap"])
def test_48_sheet_dropped_onto_itself_keeps_thickness_and_never_crosses(make_app, scene):
    thickness = 0.025                                         # ≥ the 21 mm grid spacing: triangles cannot pass
    app = make_app()
    app.spawn(Collider(Plane()), Transform())
    if scene == "fold_over_bar":                              # half the sheet folds over a thin bar onto the rest
        app.spawn(Collider(Capsule(0.01, 1.0)), Transform.from_axis_angle((0.0, 0.3, 0.0), (1, 0, 0), math.pi / 2))
        sheet = mesh.grid(48, 48, 1.0, 1.0, center=(0.2, 0.5, 0.0), plane="xz")
    else:                                                     # hung by a corner, released: falls in a heap
        sheet = mesh.grid(48, 48, 1.0, 1.0, center=(0.0, 1.2, 0.0), plane="xy")
    cloth = Cloth.from_mesh(sheet, "silk", thickness=thickness, self_collision=True)
    app.spawn(cloth)
    worst_pairs = 0
    for _ in range(8):
        app.step(30)
        worst_pairs = max(worst_pairs, close_non_neighbour_pairs(cloth.x, cloth.rest_x, 0.9 * thickness).size)
    assert np.isfinite(cloth.x).all() and cloth.rejected_steps == 0
    close = close_non_neighbour_pairs(cloth.x, cloth.rest_x, 0.9 * thickness)
    assert close.size == 0, (f"{close.size} non-neighbour pairs closer than 0.9 × thickness at rest, min "
                             f"{close.min():.4f} m (up to {worst_pairs} while falling)")
    crossings = edges_through_triangles(cloth.x, cloth.triangles, sheet.edges)
    assert crossings == 0, f"{crossings} edges pass through triangles of the same cloth"
    layers = cloth.x[:, 1].max() - cloth.x[:, 1].min()
    assert layers > 1.5 * thickness, f"the sheet should lie in several layers, height span {layers:.3f} m"


def test_two_cloths_collide_with_each_other(make_app):
    app = make_app()
    app.spawn(Collider(Plane()), Transform())
    lower = Cloth.from_mesh(mesh.grid(16, 16, 0.6, 0.6, center=(0.0, 0.05, 0.0), plane="xz"), thickness=0.02,
                            self_collision=True)
    upper = Cloth.from_mesh(mesh.grid(16, 16, 0.6, 0.6, center=(0.05, 0.4, 0.02), plane="xz"), thickness=0.02,
                            self_collision=True)
    app.spawn(lower)
    app.spawn(upper)
    app.step(120)
    d, _ = cKDTree(lower.x).query(upper.x)
    assert d.min() >= 0.9 * 0.02, f"an upper particle is {d.min():.4f} m from the lower cloth"
    assert upper.x[:, 1].min() > lower.x[:, 1].max() - 1e-3, "the upper cloth should lie on top"


def test_self_collision_off_lets_a_sheet_pass_through_itself(make_app):
    """The control for the tests above: without the system, the heap interpenetrates. The sheet starts 0.1 mm
    off flat (seeded noise across it): dropped perfectly flat and upright, its yarns (line solves, issue 17) hold
    it standing on its lower edge, an unstable balance any imperfection topples; plain sweeps left it sagging."""
    app = make_app()
    app.spawn(Collider(Plane()), Transform())
    sheet = mesh.grid(32, 32, 1.0, 1.0, center=(0.0, 1.2, 0.0), plane="xy")
    cloth = Cloth.from_mesh(sheet, "silk", thickness=0.035)
    cloth.x[:, 2] += 1e-4 * np.random.default_rng(0).standard_normal(cloth.particle_count)
    app.spawn(cloth)
    app.step(240)
    assert close_non_neighbour_pairs(cloth.x, cloth.rest_x, 0.9 * 0.035).size > 0


@pytest.mark.parametrize("mode", ["triangle", "particle"])
def test_point_triangle_mode_stops_a_particle_at_a_coarse_triangle(make_app, mode):
    # A fixed 1 m triangle and a particle flying at its middle, far from every corner: particle
    # pairs cannot see the triangle's face ("particle" mode is the control); "triangle" mode must
    # stop the particle one thickness above it.
    app = make_app()
    x = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.25, 0.3, 0.25]]
    tri = Cloth(x=x, mass=[1.0, 1.0, 1.0, 1.0], inv_mass=[0.0, 0.0, 0.0, 1.0], links=np.zeros((0, 2), np.int32),
                link_kind=np.zeros(0, np.int8), triangles=[[0, 2, 1]], self_collision=True,
                self_collision_mode=mode, tethers=False)
    tri.v[3] = (0.0, -2.0, 0.0)
    app.spawn(tri)
    app.step(30)
    height = tri.x[3, 1]                                     # the triangle lies in y = 0, front +y
    if mode == "triangle":
        assert height == pytest.approx(tri.material.thickness, abs=1e-9), f"particle at y = {height:.5f} m"
    else:
        assert height < 0.0, "without point–triangle tests a lone particle passes a coarse triangle"


def brute_force_contacts(x: np.ndarray, rest: np.ndarray, cloth_of: np.ndarray, thickness: float) -> set:
    """Every touching pair (p < q) by the system's rule, from all pairs: closer than the thickness,
    or, for a cloth's own pairs whose rest distance is below it, than the rest distance."""
    pairs = cKDTree(x).query_pairs(thickness, output_type="ndarray")
    d2 = ((x[pairs[:, 0]] - x[pairs[:, 1]]) ** 2).sum(axis=1)
    r2 = ((rest[pairs[:, 0]] - rest[pairs[:, 1]]) ** 2).sum(axis=1)
    own = cloth_of[pairs[:, 0]] == cloth_of[pairs[:, 1]]
    touching = (d2 < np.where(own, np.minimum(r2, thickness ** 2), thickness ** 2)) & (d2 >= 1e-24)
    return {tuple(sorted(p)) for p in pairs[touching].tolist()}


@pytest.mark.parametrize("threads", [1, 2])
def test_pair_list_and_escapees_find_exactly_the_touching_pairs(make_app, monkeypatch, threads):
    # The list is built at one crumple; then every particle drifts by a common shift plus up to a
    # quarter thickness (stays listed), and one in ten jumps up to two thicknesses (escapees, found
    # by search). The contacts of that pass must be the brute-force set, pair for pair.
    from loom.systems.collision import self_collision

    monkeypatch.setattr(self_collision, "REBUILD_FRACTION", 1.0)            # no rebuild at the second pass
    t = 0.02
    app = make_app(threads=threads)
    rng = np.random.default_rng(7)
    clothes = [Cloth.from_mesh(mesh.grid(20, 20, 19 * t, 19 * t, plane="xz"), thickness=t, self_collision=True)
               for _ in range(2)]
    for cloth in clothes:
        app.spawn(cloth)
    n = sum(c.particle_count for c in clothes)
    before = rng.uniform(0.0, 8 * t, (n, 3))                                # the crumple at the build
    shift = np.array([0.4, -0.9, 0.2]) * t                                  # common drift: learnt at a middle pass
    after = before + shift + rng.uniform(-0.14 * t, 0.14 * t, (n, 3))
    jump = rng.random(n) < 0.1
    after[jump] += rng.uniform(-2 * t, 2 * t, (int(jump.sum()), 3))
    buffers = self_collision.SelfCollisionBuffers()
    builds = []
    for substep, positions in enumerate((before, before + 0.5 * shift, after)):
        for k, cloth in enumerate(clothes):
            cloth.x[:] = cloth.x_prev[:] = positions[400 * k:400 * (k + 1)]    # no motion to clamp
        app.clock.substep_index = substep            # three substeps of one step: a step's first builds the list
        self_collision.collide_self(app, 1 / 960)
        buffers = app.resource(self_collision.SelfCollisionBuffers)
        builds.append(int(buffers.builds[0]))
    assert builds[2] == builds[0], "the list should be built once, at the first pass"
    assert 20 < buffers.moved.sum() < n // 4, "escapees should be the jumpers, the rest listed"
    found = [tuple(sorted(buffers.pair[s])) for c in range(self_collision.CHUNKS)
             for s in range(buffers.first_slot[c], buffers.last_slot[c])]
    assert len(found) == len(set(found)), "a pair was found twice"
    rest = np.concatenate([c.rest_x for c in clothes])
    expected = brute_force_contacts(after, rest, np.repeat([0, 1], 400), t)
    assert len(expected) > 500
    assert set(found) == expected


def test_self_collision_is_bit_identical_on_one_and_two_threads(make_app):
    # A 24×24 sheet falls in a heap: the list is built many times and escapees are searched for
    # between builds; fixed chunks and lanes must move it alike on any thread count, bit for bit.
    from loom.systems.collision import self_collision

    out, builds = {}, {}
    for threads in (1, 2):
        app = make_app(threads=threads)
        app.spawn(Collider(Plane()), Transform())
        cloth = Cloth.from_mesh(mesh.grid(24, 24, 0.5, 0.5, center=(0.0, 0.6, 0.0), plane="xy"), "silk",
                                thickness=0.025, self_collision=True)
        app.spawn(cloth)
        app.step(60)
        out[threads] = cloth.x.copy()
        builds[threads] = int(app.resource(self_collision.SelfCollisionBuffers).builds[0])
    assert builds[1] == builds[2] > 5
    assert np.array_equal(out[1], out[2])


def test_a_layer_pressing_on_cloth_held_by_static_friction_moves_only_itself(make_app):
    """A 5 × 5 patch lies still on a rough floor (friction 1: static friction holds every particle, ``STUCK``);
    a second patch is put half a thickness above it and a third of a thickness to the side, overlapping it.
    Self- and inter-cloth collision pushes the pair apart, and the held layer is the floor's to keep: the patch
    on the floor does not move along it (to 1e-9 m), the upper one is pushed clear (at least 0.9 thickness
    apart). Before, the push was shared by inverse mass, so the floor's patch slid a third of the push sideways
    each substep: a tablecloth's folds pushed the cloth on the table top along it, and with the yarns (which
    never undo a friction-held slide) it crept off the table in a minute (docs/models.md, "creep on a table")."""
    thickness = 0.01
    app = make_app(substeps=4)
    app.spawn(Collider(Plane(), friction=1.0), Transform())
    below_sheet = mesh.grid(5, 5, 0.04, 0.04, center=(0.0, thickness, 0.0), plane="xz")
    below = Cloth.from_mesh(below_sheet, "cotton", thickness=thickness, self_collision=True)
    above_sheet = mesh.grid(5, 5, 0.04, 0.04, center=(thickness / 3, 1.5 * thickness, 0.0), plane="xz")
    above = Cloth.from_mesh(above_sheet, "cotton", thickness=thickness, self_collision=True)
    app.spawn(below)
    app.spawn(above)
    start = below.x.copy()
    app.step(1)
    assert np.abs(below.x[:, [0, 2]] - start[:, [0, 2]]).max() < 1e-9, "the held layer slid along the floor"
    gaps = np.linalg.norm(above.x[:, None, :] - below.x[None, :, :], axis=2).min()
    assert gaps > 0.9 * thickness, f"the upper layer is still {gaps / thickness:.2f} thickness from the lower"


def test_in_triangle_mode_a_fold_pressing_on_its_friction_held_half_moves_only_itself(make_app):
    """The same in ``self_collision_mode="triangle"`` (each particle against its own cloth's triangles): a 6 × 8
    strip's first four rows lie on the floor, held by static friction (``Cloth.contact`` column 3 ``STUCK``, as the
    contacts leave them), its other four are folded back over them, half a thickness up and a third of a thickness
    along. One self-collision pass (``collide_self``, called as a substep would) pushes the fold off the held rows and
    leaves them where they are, to 1e-9 m; the fold moves. Before, the triangle pass used the cloth's own inverse
    masses and pushed the held rows too (0.36 mm here, in the one pass)."""
    from loom.systems.collision import self_collision

    thickness = 0.01
    app = make_app(substeps=4)
    sheet = mesh.grid(6, 8, 0.05, 0.07, center=(0.0, thickness, 0.0), plane="xz")
    cloth = Cloth.from_mesh(sheet, "cotton", thickness=thickness, self_collision=True,
                            self_collision_mode="triangle")
    app.spawn(cloth)
    app.step(1)                                          # spawned and packed; now the state is set by hand
    z = np.round(sheet.positions[:, 2], 9)
    rows = np.unique(z)
    fold = z >= rows[4]
    x = sheet.positions.astype(np.float64).copy()
    x[:, 1] = thickness
    x[fold, 2] = 2 * rows[3] - z[fold] + (rows[4] - rows[3]) / 2 + thickness / 3   # mirrored back over rows 0-3
    x[fold, 1] = 1.5 * thickness
    cloth.x[:] = cloth.x_prev[:] = x
    cloth.contact[:] = 0.0
    cloth.contact[~fold, 1] = 1.0
    cloth.contact[~fold, 3] = STUCK
    self_collision.collide_self(app, 1.0 / 240.0)
    assert np.abs(cloth.x[~fold] - x[~fold]).max() < 1e-9, "the held rows moved"
    assert np.abs(cloth.x[fold] - x[fold]).max() > 0.1 * thickness, "the fold should be pushed off"


@pytest.mark.parametrize("mode", ["particle", "triangle"])
@pytest.mark.parametrize("substeps", [8, 16])
@pytest.mark.parametrize("damped", [False, True])
def test_a_self_colliding_sheet_touching_nothing_falls_at_g(make_app, mode, substeps, damped):
    """Issue 44 item 4: the anti-tunnelling clamp bounds each particle's motion besides the motion all share, so
    a sheet in free fall is not slowed (the clamp of the absolute motion held it to 0.29 g·t at 8 substeps, 0.59 at
    16). Reference, from the integrator (symplectic Euler, then v = (x − x_prev)/h · D with D = exp(−d·h) per
    substep of h): v_k+1 = (v_k + g·h)·D, so after n substeps v_n = g·h·D·(1 − Dⁿ)/(1 − D), which is g·n·h when
    d = 0. The pair list is built once a step: the fall is the drift the list is kept across (``_common_motion``)."""
    from loom.components import Gravity
    from loom.systems.collision import self_collision

    app = make_app(substeps=substeps)
    sheet = mesh.grid(32, 32, 1.0, 1.0, center=(0.0, 10.0, 0.0), plane="xz")
    options = {} if damped else {"damping": 0.0}
    cloth = Cloth.from_mesh(sheet, "cotton", self_collision=True, self_collision_mode=mode, **options)
    app.spawn(cloth)
    steps = 30
    app.step(steps)
    g = app.resource(Gravity).acceleration[1]
    h, n = 1.0 / 60.0 / substeps, steps * substeps
    decay = math.exp(-cloth.material.damping * h)
    expected = g * n * h if decay == 1.0 else g * h * decay * (1.0 - decay ** n) / (1.0 - decay)
    assert cloth.v[:, 1].mean() == pytest.approx(expected, rel=0.01)
    assert np.abs(cloth.v[:, [0, 2]]).max() < 1e-9, "a free fall has no sideways motion"
    assert cloth.rejected_steps == 0
    assert int(app.resource(self_collision.SelfCollisionBuffers).builds[0]) == steps, "one list build a step"


@pytest.mark.parametrize("substeps", [8, 16])
def test_the_drape_dropped_from_high_up_never_crosses_itself(make_app, substeps):
    """The drape game's 64² self-colliding tablecloth, lifted 1.5 m: it reaches the table at 6 m/s (the old clamp
    held it to 3.6 m/s at 8 substeps), piles and folds over the edge; no edge may pass through a triangle at any
    check, no two non-neighbour particles may end closer than 0.9 thickness, no step may be rejected."""
    from loom.games import drape

    app = make_app(dt=drape.DT, substeps=substeps)
    cloth = drape.build_scene(app, n=64)
    cloth.x[:, 1] += 1.5
    cloth.x_prev[:, 1] += 1.5
    edges = app.resource(drape.Drape).sheet.edges
    for check in range(1, 7):
        app.step(30)
        crossings = edges_through_triangles(cloth.x, cloth.triangles, edges)
        assert crossings == 0, f"{crossings} edges pass through triangles at step {30 * check}"
    assert cloth.x[:, 1].min() < drape.TABLE_HEIGHT - 0.3, "the cloth should hang over the table's edge"
    close = close_non_neighbour_pairs(cloth.x, cloth.rest_x, 0.9 * cloth.material.thickness)
    assert close.size == 0, f"{close.size} non-neighbour pairs closer than 0.9 × thickness"
    assert cloth.rejected_steps == 0


def test_a_sheet_thrown_at_a_friction_held_sheet_does_not_pass_through_it(make_app):
    """The clamp's common motion counts the particles the contacts hold (inverse mass 0 in the pass): a sheet
    thrown down at 60 m/s (62 mm a substep, three times its 20 mm thickness) onto a sheet that static friction
    holds on the floor shares no motion with it, so its motion is clamped as before and it lands on top. Counting
    only the movable particles, the thrown sheet's fall was common and unclamped: it passed through and lay on the
    floor beside the held sheet's particles."""
    thickness = 0.02
    app = make_app()
    app.spawn(Collider(Plane(), friction=1.0), Transform())
    below = Cloth.from_mesh(mesh.grid(16, 16, 0.3, 0.3, center=(0.0, thickness, 0.0), plane="xz"), "cotton",
                            thickness=thickness, self_collision=True)
    above = Cloth.from_mesh(mesh.grid(16, 16, 0.3, 0.3, center=(0.01, 0.15, 0.01), plane="xz"), "cotton",
                            thickness=thickness, self_collision=True)
    app.spawn(below)
    app.step(5)
    assert (below.contact[:, 3] == STUCK).all(), "the lower sheet should be held by static friction"
    above.v[:, 1] = -60.0
    app.spawn(above)
    app.step(10)
    assert above.x[:, 1].min() > below.x[:, 1].max() + 0.9 * thickness, "the thrown sheet should lie on top"
    assert above.rejected_steps == 0 and below.rejected_steps == 0
