"""Shared fixtures: headless Apps with the default pipeline, closed after each test."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("SDL_AUDIODRIVER", "dummy")

from engine import App  # noqa: E402
from systems import DefaultPlugins  # noqa: E402


@pytest.fixture
def make_app():
    """Return ``make_app(dt=1/60, substeps=16, **kw)``: an App with DefaultPlugins, closed at teardown."""
    apps: list[App] = []

    def factory(dt: float = 1.0 / 60.0, substeps: int = 16, **kwargs) -> App:
        app = App(dt=dt, substeps=substeps, **kwargs)
        app.add_plugin(DefaultPlugins)
        apps.append(app)
        return app

    yield factory
    for app in apps:
        app.close()
