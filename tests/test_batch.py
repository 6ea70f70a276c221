"""Batches (systems/shared/batch.py): many small cloths in one kernel call give each cloth exactly the motion
it has alone, and follow arrays a component replaces (pins released, tethers rebuilt, a cloth torn out)."""
from __future__ import annotations

import numba
import numpy as np
import pytest

from loom.components import Cloth, Pin, Wind
from loom.engine import mesh
from loom.launch import threads as engine_threads
from loom.systems.shared.batch import BATCH_MIN_CLOTHS, Batch, revisions
from loom.systems.shared.distance_limits import DeformationLimits, LimitBatch
from loom.systems.xpbd.constraints import ConstraintBatch
from loom.systems.xpbd.data import xpbd_data
from loom.systems.xpbd.predict import IntegrationBatch


def _flag(k: int, material: str = "cotton") -> tuple[Cloth, Pin, mesh.Mesh]:
    sheet = mesh.grid(8, 6, 0.6, 0.4, center=(1.0 * k, 1.0, 0.0))
    cloth = Cloth.from_mesh(sheet, material, iterations=1 + k % 2)
    return cloth, Pin.edge(sheet, "left"), sheet


def _world(make_app, flags: list[int], threads: int = 1):
    app = make_app(substeps=4, threads=threads)
    app.spawn(Wind(velocity=(5.0, 0.0, 1.0), gust=0.3, turbulence=0.2, seed=3))
    made = []
    for k in flags:
        cloth, pin, _ = _flag(k, "silk" if k == 1 else "cotton")
        entity = app.spawn(cloth, pin)
        made.append((entity, cloth, pin))
    return app, made


@pytest.mark.parametrize("threads, count", [(1, 14), (2, 3)])
def test_a_batch_moves_each_cloth_exactly_as_alone(make_app, monkeypatch, threads, count):
    """14 cloths batch every kernel on one thread; 3 batch the heavy ones (constraints, wind) on two (the scene is
    small, so the thread floor ``MIN_PARTICLES`` is lowered for the test: small scenes otherwise stay on one)."""
    if threads > numba.config.NUMBA_NUM_THREADS:
        pytest.skip("needs 2 threads")
    monkeypatch.setattr(engine_threads, "MIN_PARTICLES", 0)
    together, made = _world(make_app, list(range(count)), threads=threads)
    together.step(30)
    assert together.resources.get(ConstraintBatch) is not None          # the batched path ran
    assert (together.resources.get(IntegrationBatch) is not None) == (count >= BATCH_MIN_CLOTHS)
    assert (together.resources.get(LimitBatch) is not None) == (count >= BATCH_MIN_CLOTHS)   # the stretch limit
    for k in (0, 1, count - 1):
        alone, ((_, single, _),) = _world(make_app, [k])
        alone.step(30)
        assert np.array_equal(made[k][1].x, single.x), f"cloth {k} differs batched"
        batched, own = (app.resource(DeformationLimits).of(c) for app, c in ((together, made[k][1]), (alone, single)))
        assert (batched.passes, batched.over, batched.excess, batched.stretch, batched.unmet) == \
            (own.passes, own.over, own.excess, own.stretch, own.unmet), f"cloth {k}'s limit report differs batched"


def test_a_batch_follows_released_pins_and_rebuilt_tethers(make_app):
    together, made = _world(make_app, list(range(BATCH_MIN_CLOTHS)))
    alone, ((_, single, single_pin),) = _world(make_app, [2])
    for app in (together, alone):
        app.step(10)
    made[2][2].release()                  # inverse masses change in place, tethers are rebuilt (new arrays)
    single_pin.release()
    old_tethers = xpbd_data(together, made[2][0]).tether_anchor
    for app in (together, alone):
        app.step(20)
    assert xpbd_data(together, made[2][0]).tether_anchor is not old_tethers
    assert np.array_equal(made[2][1].x, single.x)
    assert made[2][1].x[:, 1].min() < 0.5            # released: it fell


def test_a_batch_follows_a_despawned_cloth(make_app):
    together, made = _world(make_app, list(range(BATCH_MIN_CLOTHS + 1)))
    together.step(5)
    together.despawn(made[1][0])
    together.step(5)                                  # lists rebuilt without it (it would be stale otherwise)
    frozen = made[1][1].x.copy()
    together.step(5)
    assert np.array_equal(made[1][1].x, frozen)
    assert np.isfinite(made[0][1].x).all() and np.isfinite(made[2][1].x).all()
    assert made[0][1].rejected_steps == made[2][1].rejected_steps == 0


def test_batch_rebuilds_only_when_the_key_changes():
    cloth, _, _ = _flag(0)
    built = []

    def rows():
        built.append(1)
        return [(cloth.x, cloth.v)]

    batch = Batch()
    first = batch.update(revisions([cloth]), rows)
    assert batch.update(revisions([cloth]), rows) is first and len(built) == 1
    cloth.x[:] += 1.0                                 # in place: same arrays, same key
    assert batch.update(revisions([cloth]), rows) is first
    cloth.v = np.zeros_like(cloth.v)                  # replaced: the key moves, the lists follow
    lists = batch.update(revisions([cloth]), rows)
    assert len(built) == 2 and lists[1][0] is cloth.v


def test_a_batch_follows_a_cloth_replaced_by_a_new_one(make_app):
    """A despawned cloth's replacement (same shape, same revision count) gets its own arrays batched."""
    together, made = _world(make_app, list(range(BATCH_MIN_CLOTHS)))
    together.step(3)
    entity, old, pin = made[4]
    together.despawn(entity)
    fresh, fresh_pin, _ = _flag(4)
    together.spawn(fresh, fresh_pin)
    del old
    start = fresh.x.copy()
    together.step(5)
    assert np.abs(fresh.x - start).max() > 1e-3                       # the new cloth moves


def test_a_batched_world_resumes_from_a_snapshot_bit_identically(make_app, tmp_path):
    """Every batch resource (the stretch limit's too) saves empty and is built again at the next substep: a world
    of BATCH_MIN_CLOTHS flags saved mid-run and loaded into a fresh App goes on exactly as the one never stopped."""
    from loom.files.snapshot import load_snapshot, save_snapshot

    path = tmp_path / "flags.loom"
    first, made = _world(make_app, list(range(BATCH_MIN_CLOTHS)))
    first.step(15)
    assert first.resources.get(LimitBatch) is not None
    save_snapshot(first, path)
    first.step(15)
    second, again = _world(make_app, list(range(BATCH_MIN_CLOTHS)))
    load_snapshot(second, path)
    second.step(15)
    for (_, a, _), (_, b, _) in zip(made, again, strict=True):
        assert np.array_equal(a.x, b.x)
