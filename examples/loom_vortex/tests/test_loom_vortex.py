"""loom-vortex's own tests: the vortex swirls cloth, a seam closes — through a plain App(plugins="auto")."""
from __future__ import annotations

import numpy as np
import pytest

from loom.components import Cloth, Gravity
from loom.engine import App, mesh
from loom.systems import DefaultPlugins

import loom_vortex


@pytest.fixture
def app():
    """An App with the installed plugins (this package among them) and Loom's default pipeline."""
    app = App(plugins="auto")
    app.add_plugin(DefaultPlugins)
    app.insert_resource(Gravity((0.0, 0.0, 0.0)))
    yield app
    app.close()


def test_sewing_closes_a_seam_between_two_edges(app):
    sheet = mesh.grid(12, 12, 1.0, 1.0, plane="xz")
    cloth = Cloth.from_mesh(sheet, "cotton", tethers=False)
    left, right = sheet.side("left"), sheet.side("right")
    app.spawn(cloth, loom_vortex.Seam(np.stack([left, right], axis=1), compliance=0.0))
    gap0 = float(np.linalg.norm(cloth.x[left] - cloth.x[right], axis=1).max())
    app.step(240)
    gap = float(np.linalg.norm(cloth.x[left] - cloth.x[right], axis=1).max())
    assert gap < 0.02 * gap0, f"seam still {gap:.4f} m open (started at {gap0:.3f} m)"
    assert np.isfinite(cloth.x).all()


def test_vortex_swirls_a_particle_around_its_axis(app):
    cloth = Cloth.from_particles([[0.5, 0.0, 0.0]], mass=0.1, links=np.zeros((0, 2), np.int32))
    app.spawn(cloth)
    app.spawn(loom_vortex.Vortex(center=(0, 0, 0), axis=(0, 1, 0), strength=4.0, pull=0.0, radius=2.0))
    app.step(10)
    # axis × r for r along +x and axis +y points along −z: the particle starts swirling that way
    assert cloth.v[0, 2] < -0.05 and abs(cloth.v[0, 1]) < 1e-12


def test_bad_vortex_and_seam_inputs_name_the_field():
    with pytest.raises(ValueError, match=r"Vortex\.radius = -1"):
        loom_vortex.Vortex(radius=-1)
    with pytest.raises(ValueError, match=r"Vortex\.axis"):
        loom_vortex.Vortex(axis=(0, 0, 0))
    with pytest.raises(ValueError, match=r"Seam\.pairs"):
        loom_vortex.Seam([[1, 1]])
