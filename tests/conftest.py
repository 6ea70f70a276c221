"""Shared fixtures: headless Apps with the default pipeline, closed after each test."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("SDL_AUDIODRIVER", "dummy")

from loom.engine import App  # noqa: E402
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
