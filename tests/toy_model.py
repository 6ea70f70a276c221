"""A cloth model written the way a game or a library outside Loom would write one: the "toy" model.

Each substep of h, for the cloths with ``model="toy"``:

- PREDICT: symplectic Euler on every free particle (inverse mass w > 0),
  v ← v + h·(g + w·f), then x ← x + h·v; x_prev ← x at the substep's start (the collision system's sweep
  start). Pinned particles (w = 0) are left to the pin system.
- CONSTRAIN: one Gauss–Seidel projection of every distance link onto its rest length, corrections weighted by
  inverse mass (Müller et al. 2007, "Position Based Dynamics", eq. 9 with stiffness 1).
- UPDATE: v ← v + (x − x_int)/h, x_int the positions right after integrating: velocities follow what the
  projection, the pins and the colliders did to the positions, and a particle nothing corrected keeps the
  integrator's velocity exactly.

It uses only Loom's public API (``loom.components``, ``loom.engine`` with its ``persistent``, ``loom.systems``):
``register_model`` makes ``Cloth(model="toy")`` valid, the systems go into the public ``ClothSet`` sets, its
per-cloth data lives in its own resource (``ToyData``, dropped with the entity through ``App.on_despawn``)
whose classes are declared ``@persistent`` so that snapshots hold them.
"""
from __future__ import annotations

import numba
import numpy as np

from loom.components import Cloth, Gravity
from loom.engine import App, Stage, persistent
from loom.systems import ClothSet, register_model

MODEL = "toy"
"""The ``Cloth.model`` name of the toy model."""


@persistent
class ToyCloth:
    """The toy model's data for one cloth: the rest length [m] of each of the cloth's links, (c,) (read from the
    cloth when it is first stepped), and the positions right after integrating, ``x_int`` [m] (n, 3)."""

    def __init__(self, cloth: Cloth) -> None:
        self.cloth = cloth
        """The component this data was built for (a replaced Cloth on the entity gets new data)."""
        self.rest = np.array(cloth.link_rest, dtype=np.float64)
        self.x_int = cloth.x.astype(np.float64)

    def check(self, cloth: Cloth, entity: int) -> None:
        """ValueError unless this data fits ``cloth`` (what a snapshot must hold before the kernels read it)."""
        rest, x_int = self.rest, self.x_int
        if not (isinstance(rest, np.ndarray) and rest.dtype == np.float64 and rest.shape == cloth.link_i.shape
                and np.isfinite(rest).all() and (rest > 0).all()):
            raise ValueError(f"ToyData.by_entity[{entity}].rest: expected {cloth.link_i.shape[0]} finite rest "
                             f"lengths > 0 [m], float64")
        if not (isinstance(x_int, np.ndarray) and x_int.dtype == np.float64 and x_int.shape == cloth.x.shape):
            raise ValueError(f"ToyData.by_entity[{entity}].x_int: expected {cloth.x.shape} float64 [m]")


@persistent
class ToyData:
    """Resource: the toy model's ``ToyCloth`` of each cloth entity, dropped when the entity is despawned."""

    def __init__(self) -> None:
        self.by_entity: dict[int, ToyCloth] = {}

    def get(self, entity: int, cloth: Cloth) -> ToyCloth:
        """``entity``'s data, built for ``cloth`` if it has none yet, had another Cloth or another topology (a
        tear adds particles and links)."""
        data = self.by_entity.get(entity)
        if data is None or data.cloth is not cloth or data.rest.shape != cloth.link_i.shape \
                or data.x_int.shape != cloth.x.shape:
            data = self.by_entity[entity] = ToyCloth(cloth)
        return data

    def forget(self, entity: int) -> None:
        """Drop a despawned entity's data."""
        self.by_entity.pop(entity, None)

    def check_state(self, clothes: dict[int, Cloth]) -> None:
        """Snapshot loading: ValueError unless each entry is a ``ToyCloth`` fitting the loaded cloth of its entity
        (``clothes``: entity → Cloth as loaded), so no array a kernel indexes comes unchecked from a file."""
        if type(self.by_entity) is not dict:
            raise ValueError("ToyData.by_entity: expected a dict of entity → ToyCloth")
        for entity, data in self.by_entity.items():
            cloth = clothes.get(entity)
            if type(data) is not ToyCloth or cloth is None:
                raise ValueError(f"ToyData.by_entity[{entity!r}]: not the toy data of a loaded cloth")
            data.check(cloth, entity)


def toy_cloths(app: App) -> list[tuple[int, Cloth]]:
    """The (entity, cloth) rows of the toy model's cloths."""
    return [(e, c) for e, c in app.query(Cloth) if c.model == MODEL]


def uses_toy(app: App) -> bool:
    """Run condition: some cloth uses the toy model."""
    return any(c.model == MODEL for _, c in app.query(Cloth))


def predict_toy(app: App, h: float) -> None:
    """Symplectic Euler over a substep of h [s]: v += h·(g + w·f), x += h·v for free particles."""
    g = app.resource(Gravity).acceleration
    data = app.resource(ToyData)
    for entity, cloth in toy_cloths(app):
        toy = data.get(entity, cloth)
        _symplectic_euler(cloth.inv_mass, cloth.force, g[0], g[1], g[2], h, cloth.x, cloth.v, cloth.x_prev)
        np.copyto(toy.x_int, cloth.x)


def project_toy_links(app: App, h: float) -> None:
    """One mass-weighted Gauss–Seidel projection of every link onto its rest length."""
    data = app.resource(ToyData)
    for entity, cloth in toy_cloths(app):
        toy = data.get(entity, cloth)
        _project(cloth.link_i, cloth.link_j, toy.rest, cloth.inv_mass, cloth.x)


def update_toy_velocities(app: App, h: float) -> None:
    """v += (x − x_int)/h: the velocity of the corrections made after integrating."""
    data = app.resource(ToyData)
    for entity, cloth in toy_cloths(app):
        _follow(cloth.x, data.get(entity, cloth).x_int, 1.0 / h, cloth.v)


class ToyPlugin:
    """The toy model's systems in PREDICT, CONSTRAIN and UPDATE of every substep, and its per-cloth data."""

    def build(self, app: App) -> None:
        app.insert_resource(ToyData(), replace=False)

        def forget(entity: int) -> None:
            data = app.resources.get(ToyData)
            if data is not None:
                data.forget(entity)

        app.on_despawn(forget)
        app.add_system(predict_toy, Stage.SUBSTEP, in_set=ClothSet.PREDICT, run_if=uses_toy)
        app.add_system(project_toy_links, Stage.SUBSTEP, in_set=ClothSet.CONSTRAIN, run_if=uses_toy)
        app.add_system(update_toy_velocities, Stage.SUBSTEP, in_set=ClothSet.UPDATE, run_if=uses_toy)


register_model(MODEL, ToyPlugin)


# --- kernels -----------------------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _symplectic_euler(inv_mass, force, gx, gy, gz, h, x, v, x_prev):
    """x_prev ← x; for w > 0: v ← v + h·(g + w·f), x ← x + h·v. inv_mass (n,) [1/kg], force (n, 3) [N],
    g [m/s²], h [s]; writes x, x_prev (n, 3) [m] and v (n, 3) [m/s]."""
    g = np.array((gx, gy, gz))
    x_prev[:] = x
    for p in np.flatnonzero(inv_mass > 0.0):
        v[p] += h * (g + inv_mass[p] * force[p])
        x[p] += h * v[p]


@numba.njit(cache=True)
def _project(link_i, link_j, rest, inv_mass, x):
    """One Gauss–Seidel pass: each link (i, j) of rest length r moved to |x_i − x_j| = r, x_i by
    −w_i/(w_i + w_j)·(l − r)·d̂ and x_j by +w_j/(w_i + w_j)·(l − r)·d̂, where l = |x_i − x_j| and
    d̂ = (x_i − x_j)/l. link_i, link_j (c,) int; rest (c,) [m]; inv_mass (n,) [1/kg]; writes x (n, 3) [m]."""
    for i, j, r in zip(link_i, link_j, rest):
        w = inv_mass[i] + inv_mass[j]
        d = x[i] - x[j]
        length = np.sqrt(np.sum(d * d))
        if w > 0.0 and length >= 1e-12:
            d *= (length - r) / (w * length)
            x[i] -= inv_mass[i] * d
            x[j] += inv_mass[j] * d


@numba.njit(cache=True)
def _follow(x, x_int, inv_h, v):
    """v += (x − x_int)/h. x, x_int (n, 3) [m]; 1/h [1/s]; writes v (n, 3) [m/s]."""
    for p in range(x.shape[0]):
        for c in range(3):
            v[p, c] += (x[p, c] - x_int[p, c]) * inv_h
