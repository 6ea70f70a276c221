"""Shared fixtures: headless Apps with the default pipeline, closed after each test, and scenes several\nmodel tests build (a pinned sheet, a run with one refused step)."""
from __future__ import annotations

import logging
import os
from collections.abc import Callable

import numpy as np
import pytest

os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("LOOM_COLD_WORKER", "0")   # no App starts a compile worker: no stand-in changes a test's motion

from loom.components import Cloth, Pin  # noqa: E402
from loom.engine import App, mesh  # noqa: E402
from loom.systems import DefaultPlugins  # noqa: E402


@pytest.fixture
def new_app():
    """Return ``new_app(plugins=False, **kw)``: an App (with DefaultPlugins if asked), closed at teardown."""
    apps: list[App] = []

    def factory(plugins: bool = False, **kwargs) -> App:
        app = App(**kwargs)
        if plugins:
            app.add_plugin(DefaultPlugins)
        apps.append(app)
        return app

    yield factory
    for app in apps:
        app.close()


@pytest.fixture
def make_app(new_app):
    """Return ``make_app(dt=1/60, substeps=16, **kw)``: an App with DefaultPlugins, closed at teardown."""

    def factory(dt: float = 1.0 / 60.0, substeps: int = 16, **kwargs) -> App:
        return new_app(plugins=True, dt=dt, substeps=substeps, **kwargs)

    return factory


def _pinned_sheet(app: App, n: int = 32, *, center=(0.0, 0.0, 0.0), **cloth_options) -> tuple[Cloth, Pin]:
    sheet = mesh.grid(n, n, 1.0, 1.0, center=center, plane="xz")
    cloth = Cloth.from_mesh(sheet, **cloth_options)
    pin = Pin.corners(sheet, "top")
    app.spawn(cloth, pin)
    return cloth, pin


@pytest.fixture
def pinned_sheet():
    """Return ``pinned_sheet(app, n=32, center=(0, 0, 0), **cloth_options)``: spawn a horizontal n×n, 1 m sheet
    centred at ``center`` [m] (``Cloth.from_mesh`` options: model, settings, material …) pinned at its two far
    corners; it returns (cloth, pin)."""
    return _pinned_sheet


def _refusal_runs(scene: Callable[[], tuple[App, Cloth]], poisoned: tuple[int, int]) -> dict[bool, np.ndarray]:
    logging.getLogger("loom.guard").setLevel(logging.ERROR)
    runs = {}
    for refuse in (False, True):
        app, cloth = scene()
        app.step(13)
        if refuse:
            cloth.force[poisoned] = np.nan                          # poisons this step only
            app.step()
            assert cloth.rejected_steps == 1
        app.step(20)
        runs[refuse] = cloth.x.copy()
    return runs


@pytest.fixture
def refusal_runs():
    """Return ``refusal_runs(scene, (particle, axis))``: final positions {False: after 13 + 20 steps, True: after
    13 steps, one the guard refuses (a NaN force on that particle's axis; asserted refused) and 20 more};
    ``scene()`` builds a fresh (app, cloth) for each run. A refusal costs one step: the two should be equal."""
    return _refusal_runs


def _resumed(scene: Callable[[], App], path, first: int, then: int) -> tuple[App, App]:
    """Two runs of ``scene()``: one stepped ``first`` steps, saved to ``path`` and stepped ``then`` more; a second
    built afresh, loaded from ``path`` and stepped ``then`` steps. Returns (uninterrupted, resumed)."""
    from loom.files.snapshot import load_snapshot, save_snapshot
    a = scene()
    a.step(first)
    save_snapshot(a, path)
    a.step(then)
    b = scene()
    load_snapshot(b, path)
    b.step(then)
    return a, b


@pytest.fixture
def resumed_runs():
    """``resumed_runs(scene, path, first, then)``: an uninterrupted and a snapshot-resumed run (``_resumed``)."""
    return _resumed
