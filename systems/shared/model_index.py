"""The one place a cloth's model is looked up, and per-cloth scratch that leaves with its entity.

A model's systems ask ``cloths_of(app, "verlet")`` for their ``[(entity, cloth), ...]`` (entity order,
like ``App.query``) or ``clothes_of(app, "verlet")`` for the components alone, instead of filtering
every cloth with a string compare; the run condition ``uses_model`` (conditions.py) asks the same
index. The index is an App resource rebuilt only when the world's components change: esper drops
its query cache on every add and remove, so ``App.query(Cloth)`` then returns a new list and the
index compares that list's identity — a lookup between changes is two dict reads. While a step leaves cloths out
(asleep or frozen off screen: ``App.rest``), ``App.query(Cloth)`` is the list without them, so the index groups
the cloths the step processes: a model's systems skip resting cloths without knowing of sleep. A cloth's model
is fixed once built (``Cloth.model``), so nothing else can move a cloth from one model to another.

Scratch a system keeps per entity (a model's tables, the guard's snapshot, wind accumulators, a
body's last pose) lives in a resource with a ``forget(entity)`` method; ``forget_on_despawn``
calls it whenever ``App.despawn`` deletes an entity, so spawning and despawning cloths leaves no
entries behind (tests/test_model_seam.py). A Cloth replaced on a living entity (a model switch)
keeps at most one stale entry per entity and model until the entity goes: the scratch checks the
component it was built for and rebuilds.
"""
from __future__ import annotations

from typing import Any

import esper

from loom.components import Cloth
from loom.engine import App
from loom.launch import threads
from loom.engine.persist import persistent

_NO_ROWS: list[tuple[int, Cloth]] = []
_NO_CLOTHES: list[Cloth] = []


@persistent
class ClothIndex:
    """Resource: the live cloths grouped by model, rebuilt when ``App.query(Cloth)`` returns a new list.

    Not saved in snapshots (its state is derived): a loaded App rebuilds it at the first lookup."""

    def __init__(self) -> None:
        self.source: list | None = None
        """The ``App.query(Cloth)`` list the groups were built from (held: its identity is the key)."""
        self.rows: dict[str, list[tuple[int, Cloth]]] = {}
        """(entity, cloth) rows of each model in use, entity order."""
        self.clothes: dict[str, list[Cloth]] = {}
        """The same cloths without their entities."""

    def refresh(self, source: list[tuple[int, Cloth]]) -> None:
        """Group ``source`` (``App.query(Cloth)``) by model."""
        rows: dict[str, list[tuple[int, Cloth]]] = {}
        for row in source:
            rows.setdefault(row[1].model, []).append(row)
        self.source = source
        self.rows = rows
        self.clothes = {model: [cloth for _, cloth in found] for model, found in rows.items()}

    def __getstate__(self) -> dict[str, Any]:
        return {"source": None, "rows": {}, "clothes": {}}


def cloth_index(app: App) -> ClothIndex:
    """The App's ClothIndex, brought up to date with its world."""
    index = app.resources.get(ClothIndex)
    source = app.query(Cloth)
    if index is None or source is not index.source:
        index = _refreshed(app, source)
    return index


def _refreshed(app: App, source: list[tuple[int, Cloth]]) -> ClothIndex:
    """The App's ClothIndex (made if it has none) grouped anew from ``source`` (``App.query(Cloth)``)."""
    index = app.init_resource(ClothIndex)
    index.refresh(source)
    return index


def cloths_of(app: App, model: str) -> list[tuple[int, Cloth]]:
    """``[(entity, cloth), ...]`` of the cloths whose model is ``model``, entity order. Shared: read it, don't
    change it (valid until a component is added or removed). ``cloth_index`` written out: systems ask it every
    step, and each Python call of a lookup counts (benchmarks/calls.py): in the App's world with no cloth resting
    (asleep or frozen: ``App.rest``), ``App.query(Cloth)`` is esper's own list, read here without the call."""
    index = app.resources.get(ClothIndex)
    source = esper.get_component(Cloth) if esper.current_world == app.world and not app.resting else app.query(Cloth)
    if index is None or source is not index.source:
        index = _refreshed(app, source)
    return index.rows.get(model, _NO_ROWS)


def clothes_of(app: App, model: str) -> list[Cloth]:
    """The Cloth components whose model is ``model``, entity order. Shared like ``cloths_of`` (and written out
    like it)."""
    index = app.resources.get(ClothIndex)
    source = esper.get_component(Cloth) if esper.current_world == app.world and not app.resting else app.query(Cloth)
    if index is None or source is not index.source:
        index = _refreshed(app, source)
    return index.clothes.get(model, _NO_CLOTHES)


def models_in_use(app: App) -> list[str]:
    """Names of the models at least one cloth of the App's world uses, in order of first use."""
    return list(cloth_index(app).rows)


def forget_on_despawn(app: App, resource_type: type) -> None:
    """Call ``forget(entity)`` of the App's ``resource_type`` resource whenever an entity is despawned.

    The resource is looked up at each despawn (skipped when absent), so one a game inserted itself,
    replaced, or a snapshot restored is served as well. Call once per App (from a plugin's build)."""
    def forget(entity: int) -> None:
        resource = app.resources.get(resource_type)
        if resource is not None:
            resource.forget(entity)
    forget.__name__ = f"forget_{resource_type.__name__}"
    app.on_despawn(forget)


def particles(app: App) -> int:
    """The particles of the App's cloths: the work its parallel kernels would share (``loom.launch.threads.work``:
    a scene under ``MIN_PARTICLES`` runs on one thread)."""
    return sum(cloth.particle_count for _, cloth in cloth_index(app).source or ())


threads.work_probes.append(particles)
