"""loom.vertex_buffers: a cloth's float32 vertex arrays for a game's own shader, refreshed in place, with a revision
that follows the triangle list through tearing. The moderngl recipe (docs/recipe-own-shader.md) is run by
tests/test_docs.py like every runnable snippet; here, that it is one, and what the arrays hold."""
from __future__ import annotations

import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import loom
from loom.systems.render import ClothSurface
from loom.systems.render.buffers import INTERLEAVED_FORMAT

ROOT = Path(__file__).resolve().parent.parent
DT = 1 / 60


def reference_normals(x: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Area-weighted unit vertex normals written out in NumPy: Σ cross(p1 − p0, p2 − p0) per vertex, normalised."""
    p0, p1, p2 = (x[triangles[:, k]] for k in range(3))
    face = np.cross(p1 - p0, p2 - p0)
    out = np.zeros_like(x)
    for k in range(3):
        np.add.at(out, triangles[:, k], face)
    return out / np.linalg.norm(out, axis=1)[:, None]


@pytest.fixture
def sheet_app(make_app):
    """An App with a 24 × 24, 1 m cotton sheet pinned by two corners, hanging in the xz plane at y = 1 m."""
    app = make_app(substeps=8)
    sheet = loom.mesh.grid(24, 24, 1.0, 1.0, center=(0.0, 1.0, 0.0), plane="xz")
    entity = app.spawn(loom.Cloth.from_mesh(sheet, "cotton"), loom.Pin.corners(sheet, "top"))
    return app, entity


def test_arrays_hold_the_cloth_as_float32_positions_normals_uv_and_uint32_triangles(sheet_app):
    app, entity = sheet_app
    app.step(20)                                             # a draped, curved sheet: normals vary
    cloth = app.get(entity, loom.Cloth)
    buf = loom.vertex_buffers(app, entity)
    n = cloth.particle_count
    assert (buf.position.dtype, buf.normal.dtype, buf.uv.dtype, buf.triangles.dtype) == \
        (np.float32, np.float32, np.float32, np.uint32)
    assert buf.position.shape == (n, 3) and buf.uv.shape == (n, 2) and buf.triangles.shape == cloth.triangles.shape
    assert all(a.flags.c_contiguous for a in (buf.position, buf.normal, buf.uv, buf.triangles))
    np.testing.assert_array_equal(buf.position, cloth.x.astype(np.float32))
    np.testing.assert_allclose(buf.normal, reference_normals(cloth.x, cloth.triangles), atol=1e-6)
    assert np.ptp(buf.normal[:, 1]) > 0.1, "the sheet should be curved after 20 steps"
    np.testing.assert_array_equal(buf.uv, cloth.rest_uv.astype(np.float32))
    np.testing.assert_array_equal(buf.triangles, cloth.triangles)
    assert buf.vertex_count == n and buf.index_count == 3 * cloth.triangles.shape[0]
    assert buf.revision == 0 and buf.interleaved is None


def test_refresh_rewrites_the_same_arrays_in_place_and_allocates_nothing(sheet_app):
    app, entity = sheet_app
    buf = loom.vertex_buffers(app, entity)
    cloth = app.get(entity, loom.Cloth)
    arrays = (buf.position, buf.normal, buf.uv, buf.triangles)
    before = buf.position.copy()
    app.step(10)
    assert buf.refresh() is False                            # same triangles: nothing to re-upload
    assert all(a is b for a, b in zip((buf.position, buf.normal, buf.uv, buf.triangles), arrays))
    assert not np.array_equal(buf.position, before), "refresh did not follow the falling sheet"
    np.testing.assert_array_equal(buf.position, cloth.x.astype(np.float32))
    np.testing.assert_allclose(buf.normal, reference_normals(cloth.x, cloth.triangles), atol=1e-6)
    assert buf.revision == 0
    buf.refresh()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        for _ in range(20):
            buf.refresh()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # One float32 (m, 3) temporary would be buf.position.nbytes (7.5 kB here): the peak allows a few Python objects
    assert peak < buf.position.nbytes / 4, f"20 refreshes peaked at {peak} bytes of new memory"


def test_interleaved_rows_are_position_normal_uv(sheet_app):
    app, entity = sheet_app
    buf = loom.vertex_buffers(app, entity, interleaved=True)
    app.step(5)
    buf.refresh()
    assert INTERLEAVED_FORMAT == "3f 3f 2f"
    assert buf.interleaved.shape == (buf.vertex_count, 8) and buf.interleaved.dtype == np.float32
    assert buf.interleaved.flags.c_contiguous
    np.testing.assert_array_equal(buf.interleaved[:, 0:3], buf.position)
    np.testing.assert_array_equal(buf.interleaved[:, 3:6], buf.normal)
    np.testing.assert_array_equal(buf.interleaved[:, 6:8], buf.uv)
    np.testing.assert_array_equal(buf.interleaved[:, 0:3], app.get(entity, loom.Cloth).x.astype(np.float32))


def test_revision_changes_exactly_when_tearing_changes_the_triangles(make_app):
    app = make_app(substeps=8)
    banner = loom.mesh.grid(16, 8, 1.0, 0.5, center=(0.0, 1.0, 0.0))
    left, right = banner.side("left"), banner.side("right")
    ends = np.concatenate([left, right])
    pin = loom.Pin(index=ends, target=banner.positions[ends])
    tear = loom.Tearable(tear_strain=0.5, tear_time=0.05)
    entity = app.spawn(loom.Cloth.from_mesh(banner), pin, tear)
    torn = []
    app.on("cloth_torn", lambda **event: torn.append(app.clock.step_index))
    buf = loom.vertex_buffers(app, entity, interleaved=True)
    changes = []
    for frame in range(60):
        target = pin.target.copy()
        target[left.size:, 0] += 1.0 * DT                   # the right edge pulled away at 1 m/s
        pin.target = target
        app.step()
        if buf.refresh():
            changes.append(frame)
    cloth = app.get(entity, loom.Cloth)
    assert tear.rebuilds >= 1 and len(torn) == tear.rebuilds, "the banner did not tear"
    assert buf.revision == tear.rebuilds == len(changes), (buf.revision, tear.rebuilds, changes)
    assert cloth.particle_count > banner.vertex_count
    assert buf.vertex_count == cloth.particle_count and buf.interleaved.shape == (cloth.particle_count, 8)
    np.testing.assert_array_equal(buf.triangles, cloth.triangles)
    np.testing.assert_array_equal(buf.position, cloth.x.astype(np.float32))
    np.testing.assert_array_equal(buf.uv, cloth.rest_uv.astype(np.float32))
    np.testing.assert_array_equal(buf.interleaved[:, 6:8], buf.uv)


def test_a_replaced_cloth_bumps_the_revision_and_a_despawned_one_raises_key_error(sheet_app):
    app, entity = sheet_app
    loose = app.spawn(loom.Cloth.from_mesh(loom.mesh.grid(4, 4, 1.0, 1.0)))
    buf = loom.vertex_buffers(app, loose)
    app.add_component(loose, loom.Cloth.from_mesh(loom.mesh.grid(6, 5, 1.0, 1.0)))
    assert buf.refresh() is True and buf.revision == 1 and buf.vertex_count == 30
    app.despawn(loose)
    with pytest.raises(KeyError, match=f"entity {loose}"):
        buf.refresh()


def test_subdivided_vertices_match_the_renderers_surface(sheet_app):
    app, entity = sheet_app
    app.step(10)
    cloth = app.get(entity, loom.Cloth)
    buf = loom.vertex_buffers(app, entity, levels=1)
    surface = ClothSurface(cloth, 1)
    surface.update(cloth)
    assert buf.vertex_count == surface.vertex_count > cloth.particle_count
    np.testing.assert_array_equal(buf.position, surface.x.astype(np.float32))
    np.testing.assert_array_equal(buf.triangles, surface.triangles)
    np.testing.assert_allclose(buf.normal, reference_normals(surface.x, surface.triangles), atol=1e-6)


def test_a_float32_cloth_works_too(make_app):
    app = make_app(substeps=8)
    sheet = loom.mesh.grid(8, 8, 1.0, 1.0, center=(0.0, 1.0, 0.0), plane="xz")
    entity = app.spawn(loom.Cloth.from_mesh(sheet, precision="float32"), loom.Pin.corners(sheet, "top"))
    app.step(5)
    buf = loom.vertex_buffers(app, entity)
    np.testing.assert_array_equal(buf.position, app.get(entity, loom.Cloth).x)


@pytest.mark.parametrize("kwargs,error,words", [
    ({"levels": 3}, ValueError, "levels = 3"), ({"levels": True}, ValueError, "levels = True"),
    ({"interleaved": 1}, TypeError, "interleaved = 1"), ({"entity": "cape"}, TypeError, "entity = 'cape'"),
    ({"entity": 10**6}, KeyError, "entity 1000000"),
])
def test_bad_arguments_are_refused_naming_them(sheet_app, kwargs, error, words):
    app, entity = sheet_app
    arguments = {"entity": entity, **kwargs}
    with pytest.raises(error, match=words.replace("(", r"\(")):
        loom.vertex_buffers(app, **arguments)


def test_the_recipe_is_a_runnable_snippet_linked_from_the_guides():
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from test_docs import SNIPPETS
    finally:
        sys.path.remove(str(ROOT / "tests"))
    recipes = [code for where, code in SNIPPETS if where.startswith("recipe-own-shader.md:")]
    assert len(recipes) == 1, "docs/recipe-own-shader.md needs one <!-- runnable --> block (tests/test_docs.py runs it)"
    code = recipes[0]
    for needed in ('backend="egl"', "loom.vertex_buffers(", "buf.refresh()", "buf.revision != uploaded",
                   "simple_framebuffer", "assert buf.revision >= 1 and cloth_pixels"):
        assert needed in code, f"the recipe lost {needed!r}"
    for page in ("index.md", "embedding.md"):
        assert "(recipe-own-shader.md)" in (ROOT / "docs" / page).read_text(encoding="utf-8"), page
    text = (ROOT / "docs" / "recipe-own-shader.md").read_text(encoding="utf-8")
    assert "pyglet" in text and "arcade" in text
