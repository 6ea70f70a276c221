"""Tearing: overloaded links break after tear_time, the mesh splits into valid pieces that keep simulating."""
from __future__ import annotations

import numpy as np
import pytest

from loom.components import STRETCH, Cloth, Pin
from loom.components.tearing import Tearable
from loom.engine import mesh
from loom.systems.interaction.tearing import retopologize
from loom.systems.xpbd.data import xpbd_data

DT = 1 / 60


def pieces(triangles: np.ndarray, n: int) -> np.ndarray:
    """Piece label of each particle: particles of triangles sharing a vertex are one piece (plain BFS)."""
    label = np.full(n, -1)
    around: list[list[int]] = [[] for _ in range(n)]
    for t, tri in enumerate(triangles):
        for p in tri:
            around[p].append(t)
    for start in range(n):
        if label[start] >= 0:
            continue
        label[start] = start
        stack = [start]
        while stack:
            p = stack.pop()
            for t in around[p]:
                for q in triangles[t]:
                    if label[q] < 0:
                        label[q] = start
                        stack.append(q)
    return label


def assert_valid_mesh(cloth: Cloth, total_mass: float) -> None:
    """Indices in range, no degenerate triangle, links within their piece and near in the mesh, mass kept."""
    n, tri = cloth.particle_count, cloth.triangles
    assert tri.min() >= 0 and tri.max() < n, f"triangle index {tri.max()} out of range for {n} particles"
    assert np.all((tri[:, 0] != tri[:, 1]) & (tri[:, 1] != tri[:, 2]) & (tri[:, 0] != tri[:, 2])), "repeated vertex"
    r = cloth.rest_x
    area = 0.5 * np.linalg.norm(np.cross(r[tri[:, 1]] - r[tri[:, 0]], r[tri[:, 2]] - r[tri[:, 0]]), axis=1)
    assert area.min() > 1e-9, f"degenerate triangle of rest area {area.min():.3g} m²"
    assert np.bincount(tri.ravel(), minlength=n).min() > 0, "a particle is in no triangle"
    edges = {tuple(sorted(e)) for t in tri.tolist() for e in ((t[0], t[1]), (t[1], t[2]), (t[2], t[0]))}
    kinds = cloth.link_kind[cloth.link_order]
    pairs = [tuple(sorted(p)) for p in zip(cloth.link_i.tolist(), cloth.link_j.tolist())]
    stretch = [p for p, k in zip(pairs, kinds) if k == STRETCH]
    assert all(p in edges for p in stretch), "a stretch link whose particles share no triangle"
    neighbours: list[set[int]] = [set() for _ in range(n)]
    for a, b in edges:
        neighbours[a].add(b)
        neighbours[b].add(a)
    far = [p for p in pairs if p[1] not in neighbours[p[0]] and not neighbours[p[0]] & neighbours[p[1]]]
    assert not far, f"{len(far)} links join particles more than two triangle edges apart, e.g. {far[0]}"
    label = pieces(tri, n)
    assert all(label[a] == label[b] for a, b in pairs), "a link joins two separate pieces"
    assert cloth.total_mass == pytest.approx(total_mass, rel=1e-12), f"mass {cloth.total_mass} kg, was {total_mass}"
    assert (cloth.mass > 0).all() and np.allclose(cloth.base_inv_mass[cloth.base_inv_mass > 0],
                                                  1.0 / cloth.mass[cloth.base_inv_mass > 0], rtol=1e-12)


def test_sheet_pulled_apart_by_its_pinned_edges_tears_into_two_pieces_that_keep_simulating(make_app):
    app = make_app(substeps=8)
    sheet = mesh.grid(16, 8, 1.0, 0.5, center=(0.0, 1.0, 0.0))
    cloth = Cloth.from_mesh(sheet)
    left, right = sheet.side("left"), sheet.side("right")
    ends = np.concatenate([left, right])
    pin = Pin(index=ends, target=sheet.positions[ends])
    tear = Tearable(tear_strain=0.5, tear_time=0.05)
    entity = app.spawn(cloth, pin, tear)
    events = []
    app.on("cloth_torn", lambda **event: events.append(event))
    total_mass = cloth.total_mass
    for _ in range(60):                                          # right edge pulled away at 1 m/s
        pin.target[left.size:, 0] += 1.0 * DT
        app.step()
        if tear.rebuilds:
            break
    assert tear.rebuilds == 1 and events and events[0]["entity"] == entity, "the sheet did not tear"
    label = pieces(cloth.triangles, cloth.particle_count)
    assert np.unique(label).size == 2, f"{np.unique(label).size} pieces, want 2"
    assert np.unique(label[left]).size == 1 and np.unique(label[right]).size == 1
    assert label[left[0]] != label[right[0]], "the left and right edges are still joined"
    assert cloth.particle_count == sheet.vertex_count + tear.tears == sheet.vertex_count + 8, \
        f"{tear.tears} particles duplicated, want one column of 8"
    assert np.isfinite(cloth.x).all() and np.isfinite(cloth.v).all()
    assert_valid_mesh(cloth, total_mass)
    app.step(frames=60)
    assert np.isfinite(cloth.x).all(), "NaN after tearing"
    assert cloth.rejected_steps == 0, f"{cloth.rejected_steps} steps refused after tearing"
    tethers = xpbd_data(app, entity)
    owner = np.repeat(np.arange(cloth.particle_count), np.diff(tethers.tether_offsets))
    label = pieces(cloth.triangles, cloth.particle_count)
    assert np.all(label[owner] == label[tethers.tether_anchor]), "a tether still reaches across the tear"
    gap = cloth.x[right, 0].min() - cloth.x[left, 0].max()
    assert gap > 1.0, f"pieces only {gap:.3f} m apart"


def prescribed_sheet(app, tear_time: float = 0.05) -> tuple[Cloth, Pin, Tearable, mesh.Mesh]:
    """A 5 × 3 sheet (0.25 m cells) held entirely by pins, so the test dictates every strain."""
    sheet = mesh.grid(5, 3, 1.0, 0.5)
    cloth = Cloth.from_mesh(sheet)
    everything = np.arange(sheet.vertex_count)
    pin = Pin(index=everything, target=sheet.positions.copy())
    tear = Tearable(tear_strain=0.5, tear_time=tear_time)
    app.spawn(cloth, pin, tear)
    return cloth, pin, tear, sheet


def test_link_breaks_only_after_being_overloaded_for_tear_time(make_app):
    app = make_app(substeps=2)
    cloth, pin, tear, sheet = prescribed_sheet(app, tear_time=3 * DT)
    right = np.array([sheet.index(c, r) for c in (3, 4) for r in range(3)])
    stretched, rest = sheet.positions[right] + [0.2, 0.0, 0.0], sheet.positions[right]
    cloth.self_collision = True                                   # size the collision buffers for 15 particles
    app.step()
    cloth.self_collision = False                                  # (its motion clamp would slow the pins)
    for overloaded in (True, True, False, True, True):           # two steps, relief, two steps: no tear
        pin.target[right] = stretched if overloaded else rest
        app.step()
    assert tear.rebuilds == 0, "a link broke before it had been overloaded for tear_time"
    app.step()                                                    # third overloaded step in a row
    assert tear.rebuilds == 1, "a link overloaded for tear_time did not break"
    assert np.unique(pieces(cloth.triangles, cloth.particle_count)).size == 2
    copies = np.arange(sheet.vertex_count, cloth.particle_count)
    assert copies.size == 3 and np.allclose(cloth.rest_x[copies, 0], cloth.rest_x[copies[0], 0]), \
        "the tear did not run along one grid column"
    assert np.isin(copies, pin.index).all() and (cloth.inv_mass[copies] == 0.0).all(), \
        "copies of pinned particles are not pinned"
    cloth.self_collision = True                                   # the buffers must follow the new count
    app.step(frames=2)
    assert np.isfinite(cloth.x).all() and cloth.rejected_steps == 0


def test_retopologize_copies_state_and_shares_mass_by_area(make_app):
    app = make_app()
    sheet = mesh.grid(3, 3, 1.0, 1.0)                              # centre particle 4, eight triangles around it
    cloth = Cloth.from_mesh(sheet, density=0.2)
    app.spawn(cloth)
    cloth.v[:] = np.arange(27.0).reshape(9, 3)
    total = cloth.total_mass
    tri = cloth.triangles.copy()
    rest = cloth.rest_x
    left_of_centre = (rest[tri].mean(axis=1)[:, 0] < 0.0) & (tri == 4).any(axis=1)
    tri[left_of_centre] = np.where(tri[left_of_centre] == 4, 9, tri[left_of_centre])
    origin, parent = retopologize(cloth, tri, np.array([4]))
    assert cloth.particle_count == 10 and origin.tolist() == list(range(9)) + [4]
    assert np.array_equal(cloth.x[9], cloth.x[4]) and np.array_equal(cloth.v[9], cloth.v[4])
    assert cloth.mass[4] == pytest.approx(cloth.mass[9]), "a symmetric split must halve the mass"
    assert cloth.total_mass == pytest.approx(total, rel=1e-12)
    assert parent.shape == (cloth.link_count,) and parent.max() < 1000
    assert_valid_mesh(cloth, total)


def test_tearable_rejects_bad_values():
    with pytest.raises(ValueError, match=r"Tearable\.tear_strain = 0\.0"):
        Tearable(tear_strain=0.0)
    with pytest.raises(ValueError, match=r"Tearable\.tear_time = -1\.0"):
        Tearable(tear_time=-1.0)
    with pytest.raises(ValueError, match=r"Tearable\.max_splits = 0"):
        Tearable(max_splits=0)
