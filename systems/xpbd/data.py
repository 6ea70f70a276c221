"""XPBD's own data per cloth: the Lagrange multipliers and the long-range tethers, kept by the model, not the Cloth.

A Cloth holds its topology, rest data and state, the same for every model. What the XPBD solver keeps per cloth
lives here, in the ``XPBDData`` resource: made for a cloth when XPBD first meets it (``refresh_tethers``, the
first system of a step that reads it), made anew when the cloth's topology changes (tearing: a new link table) and
dropped when the entity is despawned (``forget_on_despawn``). Read it with ``xpbd_data(app, entity)``.

Tethers (Kim et al. 2012, long-range attachments): each free particle may be no farther from its nearest pinned
particles than in the rest shape. They are built from the anchors (particles of inverse mass 0) and rebuilt when
the cloth's change signal (``Cloth.changes``) moved and the anchors are not those they were built for. A torn
cloth's tethers are pruned after each rebuild (``prune_torn``): a tether that crosses a crack or joins two pieces
would hold the crack shut or a torn-off flap in the air.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np

from loom.components import Cloth, Tearable
from loom.components._revision import Revisioned, checked_field
from loom.components._validate import Arr, Int, Offsets, length
from loom.engine import App
from loom.engine.persist import persistent


@persistent
@dataclass(eq=False)
class XPBDClothData(Revisioned):
    """One XPBD cloth's solver data (n particles, c links, b bend quads, m tethers), every field checked when
    assigned (``Checked``: a wrong shape, dtype or index raises ValueError naming XPBDClothData.field).

    The multipliers are written in place by the solve (reset every substep); the tether tables are read-only
    arrays replaced together by ``set_tethers`` (``revision`` moves, so held kernel structs rebuild). Made with
    ``XPBDClothData.of(cloth)``."""

    tether_anchor_mask: np.ndarray = checked_field(Arr(("n",), "b", readonly=True))
    """Which particles were anchors (inverse mass 0) when the tethers were built, (n,) bool."""
    link_lambda: np.ndarray = checked_field(Arr(("c",)))
    """XPBD Lagrange multipliers of the links [N·s²], (c,), colour order, reset every substep."""
    bend_lambda: np.ndarray = checked_field(Arr(("b",)))
    """XPBD multipliers of the bend quads, (b,), reset every substep."""
    tether_anchor: np.ndarray = checked_field(Arr(("m",), "i", count="n", readonly=True))
    """Pinned particle of each tether, (m,) int32, each particle's nearest first."""
    tether_offsets: np.ndarray = checked_field(Offsets("m", ("n1",)))
    """CSR offsets of each particle's tethers, (n + 1,) int32 (all zero until anchors are known)."""
    tether_length: np.ndarray = checked_field(Arr(("m",), low=0.0, unit=" [m]", readonly=True))
    """Rest distance of each tether [m], (m,)."""
    seen_changes: int = checked_field(Int(-1), -1)
    """The cloth's change signal (``Cloth.changes``) when the anchors were last compared (−1: never)."""
    topology: Any = field(default=None, repr=False)
    """The cloth's ``link_i`` this data was made for: another array means a new topology (tearing). Identity only."""

    @classmethod
    def of(cls, cloth: Cloth) -> XPBDClothData:
        """Fresh data for ``cloth``: multipliers at 0, no tethers (built at the first step that knows the anchors)."""
        n = cloth.particle_count
        return cls(tether_anchor_mask=np.zeros(n, np.bool_), link_lambda=np.zeros(cloth.link_count),
                   bend_lambda=np.zeros(cloth.bend_quads.shape[0]), tether_anchor=np.zeros(0, np.int32),
                   tether_offsets=np.zeros(n + 1, np.int32), tether_length=np.zeros(0), topology=cloth.link_i)

    def fits(self, cloth: Cloth) -> bool:
        """Whether this data was made for ``cloth``'s topology."""
        return self.topology is cloth.link_i

    def set_tethers(self, mask: np.ndarray, offsets: np.ndarray, anchor: np.ndarray, length: np.ndarray) -> None:
        """Replace the tether tables and the anchor mask they were built for, checked together (their sizes change
        together: all are stored, or none and a ValueError)."""
        self.assign(tether_anchor_mask=mask, tether_offsets=offsets, tether_anchor=anchor, tether_length=length)

    def check_for(self, cloth: Any, where: str) -> None:
        """Raise ValueError naming ``where`` unless this data's sizes are ``cloth``'s (n particles, c links, b bend
        quads) and every field passes its check (a snapshot's data, before use)."""
        self.check_state()
        sizes = (self.tether_anchor_mask.shape[0], self.link_lambda.shape[0], self.bend_lambda.shape[0])
        wanted = (cloth.x.shape[0], cloth.link_i.shape[0], cloth.bend_quads.shape[0])
        if sizes != wanted:
            raise ValueError(f"{where}: sized for {sizes} (particles, links, bend quads), the cloth has {wanted}")


XPBDClothData._dims = {
    "n": (length("tether_anchor_mask"), "particles", "the particle count is fixed by the cloth's topology"),
    "n1": (length("tether_anchor_mask", plus=1), "particles + 1", "one offset per particle, plus one"),
    "c": (length("link_lambda"), "links", "the link count is fixed by the cloth's topology"),
    "b": (length("bend_lambda"), "bend quads", "the bend quad count is fixed by the cloth's topology"),
    "m": (length("tether_anchor"), "tethers", "the tether count changes only with its tables: "
          "data.set_tethers(mask, offsets, anchor, length)"),
}


@persistent
class XPBDData:
    """Resource: each XPBD cloth's ``XPBDClothData`` by entity, made when the model meets the cloth and dropped when
    the entity is despawned (``forget``). Saved by snapshots (the tethers of a torn cloth cannot be derived again)."""

    def __init__(self) -> None:
        self.by_entity: dict[int, XPBDClothData] = {}
        self.by_cloth: dict[int, XPBDClothData] = {}
        """The same data by ``id(cloth)``, for systems that see the components alone (derived: not saved)."""

    def get(self, entity: int, cloth: Cloth) -> XPBDClothData:
        """``entity``'s data, made if new or made for another topology."""
        data = self.by_entity.get(entity)
        if data is None or not data.fits(cloth):
            if data is not None:                         # a new topology or another Cloth: the old data goes
                self.forget(entity)
            data = self.by_entity[entity] = XPBDClothData.of(cloth)
        self.by_cloth[id(cloth)] = data
        return data

    def of(self, cloth: Cloth) -> XPBDClothData:
        """The data of a cloth this step's ``refresh_tethers`` met. Raises RuntimeError for another."""
        data = self.by_cloth.get(id(cloth))
        if data is None or not data.fits(cloth):
            raise RuntimeError("XPBD data of a cloth the model has not met this step: step the App (refresh_tethers "
                               "makes each XPBD cloth's data in PRE_STEP) before calling the XPBD solve systems")
        return data

    def forget(self, entity: int) -> None:
        """Drop a despawned entity's data."""
        data = self.by_entity.pop(entity, None)
        if data is not None:
            self.by_cloth = {k: d for k, d in self.by_cloth.items() if d is not data}

    def check_state(self, clothes: dict[int, Any]) -> None:
        """Check a snapshot's data against the loaded cloths (``clothes``: entity → Cloth); raise ValueError. An
        entry made for another Cloth than the entity's (a component replaced after the data was made: ``topology``
        is not that cloth's ``link_i``, which the file shares by reference) is dropped: the next step makes it
        anew, as it would have without the save."""
        if type(self.by_entity) is not dict:
            raise ValueError("XPBDData.by_entity: expected a dict")
        kept = {}
        for entity, data in self.by_entity.items():
            if type(data) is not XPBDClothData:
                raise ValueError(f"XPBDData.by_entity[{str(entity)[:20]}]: expected XPBDClothData")
            cloth = clothes.get(entity)
            if cloth is not None and data.topology is cloth.link_i:
                data.check_for(cloth, f"XPBDData.by_entity[{entity}]")
                kept[entity] = data
        self.by_entity = kept
        self.by_cloth = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"by_entity": self.by_entity, "by_cloth": {}}


def xpbd_data(app: App, entity: int) -> XPBDClothData:
    """The XPBD solver data of ``entity``'s cloth (multipliers, tethers): made at the first step the cloth takes.
    Raises KeyError if the entity has no XPBD cloth that has stepped."""
    store = app.resources.get(XPBDData)
    data = None if store is None else store.by_entity.get(entity)
    cloth = app.try_get(entity, Cloth)
    if data is None or cloth is None or not data.fits(cloth):
        raise KeyError(f"xpbd_data: entity {entity} has no XPBD cloth data (no Cloth of model 'xpbd', or it has "
                       f"not stepped yet)")
    return data


def prune_torn(data: XPBDClothData, cloth: Cloth, tear: Tearable | None) -> None:
    """Drop the tethers of a torn cloth that reach across a crack or into another piece (after each rebuild of them).

    The tethers measure straight rest distances to the nearest anchors, blind to tears: a flap torn off would stay
    tethered to the pins of the piece it left and hang in the air, and a half-open crack would be held shut. A
    tether survives if its straight segment in rest material coordinates (``rest_uv``) touches no crack face
    (``Tearable.crack``) and its ends lie in the same piece (``Tearable.piece``). A cloth not torn: nothing."""
    n = cloth.particle_count
    if tear is None or tear.torn.shape[0] != n:
        return
    uv = cloth.rest_uv
    crack = tear.crack if np.ptp(uv, axis=0).min() > 0.0 else tear.crack[:0]     # read-only either way
    keep = _clear_tethers(data.tether_offsets, data.tether_anchor, uv, tear.piece, crack)
    owner = np.repeat(np.arange(n), np.diff(data.tether_offsets))
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(np.bincount(owner[keep], minlength=n), out=offsets[1:])
    data.set_tethers(data.tether_anchor_mask, offsets, data.tether_anchor[keep], data.tether_length[keep])


# --- kernels: private, arrays in, arrays out -----------------------------------------------------
@numba.njit(cache=True)
def _within(px, py, ax, ay, bx, by):
    """True if point p lies in the bounding box of segment ab (1e-12 m slack)."""
    return (min(ax, bx) - 1e-12 <= px <= max(ax, bx) + 1e-12) and (min(ay, by) - 1e-12 <= py <= max(ay, by) + 1e-12)


@numba.njit(cache=True)
def _segments_meet(ax, ay, bx, by, cx, cy, dx, dy, eps):
    """True if the closed 2D segments ab and cd share a point (touching counts), within eps [m²]."""
    d1 = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax)
    d2 = (bx - ax) * (dy - ay) - (by - ay) * (dx - ax)
    d3 = (dx - cx) * (ay - cy) - (dy - cy) * (ax - cx)
    d4 = (dx - cx) * (by - cy) - (dy - cy) * (bx - cx)
    if ((d1 > eps and d2 < -eps) or (d1 < -eps and d2 > eps)) and \
            ((d3 > eps and d4 < -eps) or (d3 < -eps and d4 > eps)):
        return True                                       # proper crossing
    return ((abs(d1) <= eps and _within(cx, cy, ax, ay, bx, by))      # an endpoint on the other segment
            or (abs(d2) <= eps and _within(dx, dy, ax, ay, bx, by))
            or (abs(d3) <= eps and _within(ax, ay, cx, cy, dx, dy))
            or (abs(d4) <= eps and _within(bx, by, cx, cy, dx, dy)))


@numba.njit(cache=True)
def _clear_tethers(offsets, anchor, uv, piece, crack):
    """(m,) bool: tether (p, anchor) is kept if p and its anchor share a piece and the rest segment
    uv[p]–uv[anchor] (uv (n, 2) [m]) meets no crack edge (k, 2)."""
    keep = np.ones(anchor.shape[0], np.bool_)
    for p in range(offsets.shape[0] - 1):
        for t in range(offsets[p], offsets[p + 1]):
            a = anchor[t]
            if piece[p] != piece[a]:
                keep[t] = False
                continue
            px = uv[p, 0]
            py = uv[p, 1]
            qx = uv[a, 0]
            qy = uv[a, 1]
            eps = 1e-12 * ((qx - px) ** 2 + (qy - py) ** 2 + 1e-12)
            for e in range(crack.shape[0]):
                i = crack[e, 0]
                j = crack[e, 1]
                if _segments_meet(px, py, qx, qy, uv[i, 0], uv[i, 1], uv[j, 0], uv[j, 1], eps):
                    keep[t] = False
                    break
    return keep
