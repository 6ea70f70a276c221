"""Tearing: overstretched links break and the mesh splits there, duplicating particles along the tear.

Once per step (POST_STEP, last in ``ClothSet.GUARD``, so a refused step never tears) for each
cloth with an active ``Tearable``:

1. age: every stretch and shear link longer than (1 + tear_strain) × rest adds dt to its timer;
   any other link's timer restarts from 0. A link whose timer reaches ``tear_time`` breaks.
2. split (``_plan_splits``): each broken link (a, b), most strained first, cuts its mesh at one
   endpoint p with the plane through p perpendicular to the link, a crack across the pull: the
   triangles around p whose centroid lies on the other endpoint's side keep p, the others get
   a new copy of p (index n, n + 1, …). The plane and centroids are taken in the rest shape, so
   a grid tears along its grid lines however crumpled it is (the current shape mixed the two
   sides of a 16 × 8 sheet's crack at 200 % strain and left it joined). The endpoint already on
   a boundary (the sheet's edge or a crack's tip) is cut first, so cracks start at free edges and
   run on from their tips. A particle splits at most once per step and at most
   ``Tearable.max_splits`` particles per step (the other links break next step); a link whose
   endpoints cannot split (all triangles on one side) waits for the next overload.
3. rebuild (``retopologize``, once per step and cloth, never in a kernel): the state is copied to
   the copies (x, v, x_prev, force, rest_x, rest_uv); a split particle's mass is shared between its
   copies by the rest area each keeps (a third per triangle: Fuhrmann 2003 eq. 1), so the total
   mass is unchanged; inverse masses follow (a pinned or grabbed original stays at 0). Links are
   remapped: a link survives between a pair of copies of its endpoints only if the new triangles
   still join them as closely as the old ones did (same hop count over triangle edges, 1 or 2):
   a link along the crack is duplicated on both sides, one across it is dropped, and the rest of
   the cloth keeps its stencil (the grid's shear diagonals and bend links included). Bend quads
   are derived from the new triangles by ``loom.engine.mesh.from_triangles``; the Cloth constructor
   validates everything and re-colours the tables. Pins on the cloth hold both copies of a pinned
   particle.

Particle indices of the unsplit cloth stay valid (copies are appended), so Pins, Grabs and game
code keep pointing at the same particles. A rebuild is a new topology: it moves the cloth's change signal
(``Cloth.changed``), and a model's per-cloth data made for the old tables is made anew (``link_i`` and the
particle count are new; XPBD rebuilds its tethers then and prunes those that cross a crack, from the
``Tearable``'s ``crack`` and ``piece``: ``loom.systems.xpbd.data.prune_torn``). The App emits ``cloth_torn``
(entity, particles, links) after each rebuild.
"""
from __future__ import annotations

from collections.abc import Iterable

import numba
import numpy as np

from loom.components import BEND, Cloth, Pin
from loom.components.tearing import Tearable
from loom.engine import App, Stage, mesh
from loom.engine.geometry import triangle_areas
from loom.systems.sets import ClothSet

HOP_LIMIT = 2
"""Links whose endpoints are at most this many triangle edges apart are remapped by hop count;
longer links (rare: hand-made tables) survive only while neither endpoint has split."""


class TearingPlugin:
    """Break overloaded links and split the mesh after the guard."""

    def build(self, app: App) -> None:
        app.add_system(tear_cloths, Stage.POST_STEP, in_set=ClothSet.GUARD, after=ClothSet.GUARD)


# --- system --------------------------------------------------------------------------------------
def tear_cloths(app: App, dt: float) -> None:
    """Age overloaded links, break those overloaded for ``tear_time`` and rebuild each torn cloth once."""
    for entity, cloth, tear in app.query(Cloth, Tearable):
        if not tear.active or cloth.triangles.shape[0] == 0:
            continue
        if tear.link_table is not cloth.link_i:          # new cloth or new tables: fresh timers
            tear.link_time = np.zeros(cloth.link_count)
            tear.link_table = cloth.link_i
        broken = _age_links(cloth.link_i, cloth.link_j, cloth.link_rest, cloth.link_kind, cloth.link_order, cloth.x,
                            tear.tear_strain, tear.tear_time, dt, tear.link_time)
        if broken == 0:
            continue
        ready = np.flatnonzero(tear.link_time >= tear.tear_time - 1e-12 * dt)
        ready = ready[tear.link_time[ready] > 0.0]
        strain = (np.linalg.norm(cloth.x[cloth.link_i[ready]] - cloth.x[cloth.link_j[ready]], axis=1)
                  / cloth.link_rest[ready])
        ready = ready[np.argsort(-strain, kind="stable")]            # most strained first
        tri = cloth.triangles
        order = np.argsort(tri.ravel(), kind="stable")
        offsets = np.zeros(cloth.particle_count + 1, np.int64)
        np.cumsum(np.bincount(tri.ravel(), minlength=cloth.particle_count), out=offsets[1:])
        triangles, source, used = _plan_splits(cloth.link_i[ready], cloth.link_j[ready], tri, cloth.rest_x, offsets,
                                               (order // 3).astype(np.int32),
                                               _boundary_mask(tri, cloth.particle_count), tear.max_splits)
        ready = ready[:used]                    # links past the cap stay ready for the next step
        tear.link_time[ready] = 0.0             # broken: relieved by a split, or waits to overload again
        if source.size == 0:
            continue
        pin = app.try_get(entity, Pin)
        n_old = cloth.particle_count
        _, parent = retopologize(cloth, triangles, source, pins=() if pin is None else (pin,))
        _remember_tear(tear, cloth, source, n_old, parent)
        app.emit("cloth_torn", entity=entity, particles=int(source.size), links=int(ready.size))


def _remember_tear(tear: Tearable, cloth: Cloth, source: np.ndarray, n_old: int, parent: np.ndarray) -> None:
    """Carry the link timers over to the rebuilt links and record torn particles, crack faces and pieces."""
    tear.link_time = tear.link_time[parent]
    tear.link_table = cloth.link_i
    torn = np.ones(cloth.particle_count, np.bool_)
    torn[:n_old] = tear.torn if tear.torn.shape[0] == n_old else False
    torn[source] = True
    tear.torn = torn
    tear.crack = _crack_edges(cloth.triangles, torn)
    tear.piece = _pieces(cloth.triangles, cloth.particle_count)
    tear.tears += int(source.size)
    tear.rebuilds += 1


def retopologize(cloth: Cloth, triangles: np.ndarray, source: np.ndarray, *, pins: Iterable[Pin] = ()
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Rebuild ``cloth`` in place for new ``triangles`` over n + m particles, particle n + k a copy of ``source[k]``.

    triangles (t', 3) int (the old triangles with some corners renumbered to copies); source (m,)
    int, the particle each copy duplicates (n = the cloth's particle count before). Copies take
    the state of their source; a split particle's mass is shared by the rest area each copy keeps;
    links are remapped by hop count (module docstring); bend quads and colour tables are derived
    anew and validated by the Cloth constructor (ValueError if the new mesh is invalid). Each Pin in
    ``pins`` (the cloth's own) also holds the copies of its particles. The cloth's change signal moves
    (``Cloth.changed``): each model remakes what it keeps for the old topology (XPBD its tethers).
    Returns (origin (n + m,) int64: the old particle each new one comes from; parent (c',) int64:
    for each new link, in the new colour order, the old link it continues, in the old colour order)."""
    n = cloth.particle_count
    source = np.ascontiguousarray(source, dtype=np.int64).reshape(-1)
    if source.size and (source.min() < 0 or source.max() >= n):
        raise ValueError(f"retopologize source: indices {source.min()}..{source.max()} out of range for {n} particles")
    origin = np.concatenate([np.arange(n), source])
    total = origin.size
    tri = np.ascontiguousarray(triangles, dtype=np.int32)
    if tri.ndim != 2 or tri.shape[1] != 3 or tri.size == 0 or tri.min() < 0 or tri.max() >= total:
        raise ValueError(f"retopologize triangles: shape {tri.shape}, expected (t, 3) indices in 0..{total - 1}")
    unused = np.flatnonzero(np.bincount(tri.ravel(), minlength=total) == 0)
    if unused.size:
        raise ValueError(f"retopologize: particle {int(unused[0])} is in no triangle; tearing needs every particle "
                         f"in a triangle (build the cloth with Cloth.from_mesh)")
    rest_x = cloth.rest_x[origin]
    rest_uv = cloth.rest_uv[origin]

    # mass: each copy keeps the share of its source's mass that its triangles' rest area carries
    third = triangle_areas(rest_x, tri) / 3.0
    corner = np.bincount(tri.ravel(), weights=np.repeat(third, 3), minlength=total)
    family = np.bincount(origin, weights=corner, minlength=n)[origin]
    members = np.bincount(origin, minlength=n)[origin]
    share = np.where(family > 0.0, corner / np.where(family > 0.0, family, 1.0), 1.0 / members)
    mass = cloth.mass[origin] * share
    base_old = cloth.base_inv_mass[origin]
    base = np.where(base_old == 0.0, 0.0, 1.0 / mass)
    inv_mass = base.copy()
    held = cloth.inv_mass == 0.0                                   # pinned or grabbed originals stay held
    inv_mass[:n][held] = 0.0

    # links: keep a pair of copies only if the new mesh joins them as closely as the old one did
    old_off, old_nbr = _adjacency(cloth.triangles, n)
    new_off, new_nbr = _adjacency(tri, total)
    copy_order = np.argsort(source, kind="stable")
    copy_off = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(source, minlength=n), out=copy_off[1:])
    copies = (n + copy_order).astype(np.int64)
    links, parent = _remap_links(cloth.links, old_off, old_nbr, new_off, new_nbr, copy_off, copies, HOP_LIMIT)
    kinds = cloth.link_kind[parent]
    quads = mesh.from_triangles(rest_x, tri, uv=rest_uv).bend_quads

    fresh = Cloth(x=cloth.x[origin], mass=mass, links=links, link_kind=kinds, triangles=tri, bend_quads=quads,
                  rest_x=rest_x, rest_uv=rest_uv, inv_mass=inv_mass, material=cloth.material, model=cloth.model,
                  settings=cloth.settings, iterations=cloth.iterations, tethers=cloth.tethers,
                  tether_count=cloth.tether_count, yarns=cloth.yarns, self_collision=cloth.self_collision,
                  self_collision_mode=cloth.self_collision_mode)
    v, x_prev, force = cloth.v[origin], cloth.x_prev[origin], cloth.force[origin]
    old_colour = np.empty(cloth.link_count, np.int64)
    old_colour[cloth.link_order] = np.arange(cloth.link_count)
    rejected, changes = cloth.rejected_steps, cloth.changes
    vars(cloth).update(vars(fresh))                                 # same component object, new tables
    vars(cloth)["changes"] = changes
    cloth.rejected_steps = rejected
    cloth.v, cloth.x_prev, cloth.force, cloth.base_inv_mass = v, x_prev, force, base
    for pin in pins:
        _extend_pin(pin, source, n)
        cloth.inv_mass[pin.index[pin.active]] = 0.0
    cloth.changed()                                                 # a new topology: every model follows
    return origin, old_colour[parent[cloth.link_order]]


def _extend_pin(pin: Pin, source: np.ndarray, n: int) -> None:
    """Append to ``pin`` every copy (index n + k) of a particle it pins, with the same target and state."""
    slot = np.full(n, -1, np.int64)
    valid = pin.index < n
    slot[pin.index[valid]] = np.flatnonzero(valid)
    rows = slot[source]
    picked = np.flatnonzero(rows >= 0)
    if picked.size == 0:
        return
    rows = rows[picked]
    grown = {name: np.concatenate([getattr(pin, name), getattr(pin, name)[rows]])
             for name in ("active", "active_before", "step_start", "step_end", "target", "offset")
             if getattr(pin, name) is not None}
    pin.assign(index=np.ascontiguousarray(np.concatenate([pin.index, (n + picked).astype(np.int32)])),
               **grown)                                             # the per-pin arrays grow together


def _adjacency(triangles: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR (offsets (n + 1,), sorted neighbours) of the particle graph of the triangle edges."""
    t = triangles.astype(np.int64)
    a = np.concatenate([t[:, 0], t[:, 1], t[:, 2], t[:, 1], t[:, 2], t[:, 0]])
    b = np.concatenate([t[:, 1], t[:, 2], t[:, 0], t[:, 0], t[:, 1], t[:, 2]])
    key = np.unique(a * n + b)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(key // n, minlength=n), out=offsets[1:])
    return offsets, key % n


def _crack_edges(triangles: np.ndarray, torn: np.ndarray) -> np.ndarray:
    """Boundary edges (k, 2) int32 whose two particles are torn: the faces of the cracks."""
    n = torn.shape[0]
    t = triangles.astype(np.int64)
    a = np.concatenate([t[:, 0], t[:, 1], t[:, 2]])
    b = np.concatenate([t[:, 1], t[:, 2], t[:, 0]])
    key, count = np.unique(np.minimum(a, b) * n + np.maximum(a, b), return_counts=True)
    rim = key[count == 1]
    edges = np.stack([rim // n, rim % n], axis=1)
    return np.ascontiguousarray(edges[torn[edges[:, 0]] & torn[edges[:, 1]]], dtype=np.int32)


def _boundary_mask(triangles: np.ndarray, n: int) -> np.ndarray:
    """(n,) bool: particles on an edge used by a single triangle (the sheet's rim, a crack's faces)."""
    t = triangles.astype(np.int64)
    a = np.concatenate([t[:, 0], t[:, 1], t[:, 2]])
    b = np.concatenate([t[:, 1], t[:, 2], t[:, 0]])
    key, count = np.unique(np.minimum(a, b) * n + np.maximum(a, b), return_counts=True)
    rim = key[count == 1]
    mask = np.zeros(n, np.bool_)
    mask[rim // n] = True
    mask[rim % n] = True
    return mask


# --- kernels: private, arrays in, arrays out -----------------------------------------------------
@numba.njit(cache=True)
def _pieces(triangles, n):
    """Connected piece label of each particle, (n,) int32: particles sharing a triangle are joined
    (union–find with path halving); labels are the smallest particle index of each piece."""
    parent = np.arange(n)
    for t in range(triangles.shape[0]):
        for c in range(1, 3):
            a = triangles[t, 0]
            b = triangles[t, c]
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            while parent[b] != b:
                parent[b] = parent[parent[b]]
                b = parent[b]
            if a < b:
                parent[b] = a
            elif b < a:
                parent[a] = b
    label = np.empty(n, np.int32)
    for p in range(n):
        r = p
        while parent[r] != r:
            r = parent[r]
        label[p] = r
    return label


@numba.njit(cache=True)
def _age_links(link_i, link_j, link_rest, link_kind, link_order, x, tear_strain, tear_time, dt, link_time):
    """Add dt [s] to the timer of every stretch or shear link longer than (1 + tear_strain)·rest,
    restart the others; return how many timers reached tear_time [s].

    link_* (c,) colour order; link_kind indexed through link_order (original order); x (n, 3) [m].
    Writes link_time (c,) [s]."""
    limit = 1.0 + tear_strain
    ready = 0
    for k in range(link_i.shape[0]):
        if link_kind[link_order[k]] == BEND:              # bend links bend, they do not tear
            link_time[k] = 0.0
            continue
        a = link_i[k]
        b = link_j[k]
        dx = x[a, 0] - x[b, 0]
        dy = x[a, 1] - x[b, 1]
        dz = x[a, 2] - x[b, 2]
        if dx * dx + dy * dy + dz * dz > (limit * link_rest[k]) ** 2:
            link_time[k] += dt
            if link_time[k] >= tear_time - 1e-12 * dt:
                ready += 1
        else:
            link_time[k] = 0.0
    return ready


@numba.njit(cache=True)
def _plan_splits(link_a, link_b, triangles, x, tri_offsets, tri_list, boundary, max_splits):
    """Split one endpoint of each broken link (a, b) by the plane through it perpendicular to the link.

    link_a, link_b (k,) int32, most strained first; triangles (t, 3) int32; x (n, 3) [m];
    tri_offsets (n + 1,), tri_list: the triangles around each particle (CSR); boundary (n,) bool;
    max_splits >= 1. Returns (new triangles (t, 3) int32 with the moved corners renumbered,
    source (m,) int64: the particle copy n + k duplicates, used: how many links were processed,
    all of them unless max_splits stopped it). Each particle splits at most once; an endpoint on
    the boundary is tried first; a side with no triangle means no split there."""
    n = x.shape[0]
    out = triangles.copy()
    source = np.empty(link_a.shape[0], np.int64)
    done = np.zeros(n, np.bool_)
    m = 0
    used = link_a.shape[0]
    for k in range(link_a.shape[0]):
        if m == max_splits:
            used = k
            break
        a = link_a[k]
        b = link_b[k]
        if boundary[b] and not boundary[a]:
            a, b = b, a
        for attempt in range(2):
            p = a if attempt == 0 else b
            q = b if attempt == 0 else a
            if done[p]:
                continue
            dx = x[q, 0] - x[p, 0]
            dy = x[q, 1] - x[p, 1]
            dz = x[q, 2] - x[p, 2]
            keep = 0
            move = 0
            for e in range(tri_offsets[p], tri_offsets[p + 1]):
                if _toward(triangles, tri_list[e], x, p, dx, dy, dz) >= 0.0:
                    keep += 1
                else:
                    move += 1
            if keep == 0 or move == 0:
                continue
            for e in range(tri_offsets[p], tri_offsets[p + 1]):
                t = tri_list[e]
                if _toward(triangles, t, x, p, dx, dy, dz) < 0.0:
                    for c in range(3):
                        if out[t, c] == p:
                            out[t, c] = n + m
            done[p] = True
            source[m] = p
            m += 1
            break
    return out, source[:m], used


@numba.njit(cache=True)
def _toward(triangles, t, x, p, dx, dy, dz):
    """Σ over triangle t's corners of (corner − x_p)·d: ≥ 0 when t lies on the side of p that d points to."""
    s = 0.0
    for c in range(3):
        r = triangles[t, c]
        s += (x[r, 0] - x[p, 0]) * dx + (x[r, 1] - x[p, 1]) * dy + (x[r, 2] - x[p, 2]) * dz
    return s


@numba.njit(cache=True)
def _hops(offsets, nbr, a, b, limit):
    """Edges between particles a and b in the CSR graph (sorted neighbours), or limit + 1 if more than limit (<= 2)."""
    if a == b:
        return 0
    for e in range(offsets[a], offsets[a + 1]):
        if nbr[e] == b:
            return 1
    if limit >= 2:
        i = offsets[a]
        j = offsets[b]
        while i < offsets[a + 1] and j < offsets[b + 1]:       # a shared neighbour: merge sorted lists
            if nbr[i] == nbr[j]:
                return 2
            if nbr[i] < nbr[j]:
                i += 1
            else:
                j += 1
    return limit + 1


@numba.njit(cache=True)
def _remap_links(links, old_off, old_nbr, new_off, new_nbr, copy_off, copies, limit):
    """Carry each old link (a, b) over to the pairs of copies of a and b the new mesh joins as closely.

    links (c, 2) original order; old_*, new_* CSR particle graphs; copy_off (n + 1,), copies: the new
    particles duplicating each old one. A link within ``limit`` hops keeps every pair (a', b') of
    {a} ∪ copies(a), {b} ∪ copies(b) at the same hop count in the new graph; a longer one keeps
    (a, b) only if neither endpoint has copies. Returns (links (c', 2) int32, parent (c',) int64)."""
    cap = 0
    for k in range(links.shape[0]):
        cap += (1 + copy_off[links[k, 0] + 1] - copy_off[links[k, 0]]) * (
            1 + copy_off[links[k, 1] + 1] - copy_off[links[k, 1]])
    out = np.empty((cap, 2), np.int32)
    parent = np.empty(cap, np.int64)
    m = 0
    for k in range(links.shape[0]):
        a = links[k, 0]
        b = links[k, 1]
        old = _hops(old_off, old_nbr, a, b, limit)
        na = copy_off[a + 1] - copy_off[a]
        nb = copy_off[b + 1] - copy_off[b]
        if old > limit:
            if na == 0 and nb == 0:
                out[m, 0] = a
                out[m, 1] = b
                parent[m] = k
                m += 1
            continue
        for i in range(na + 1):
            ca = a if i == 0 else copies[copy_off[a] + i - 1]
            for j in range(nb + 1):
                cb = b if j == 0 else copies[copy_off[b] + j - 1]
                if _hops(new_off, new_nbr, ca, cb, limit) == old:
                    out[m, 0] = ca
                    out[m, 1] = cb
                    parent[m] = k
                    m += 1
    return out[:m], parent[:m]
