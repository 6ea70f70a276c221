"""Surface kernels shared by the renderers: smooth normals, Loop subdivision, per-vertex strain (systems/render/surface.py)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from loom.components import Cloth
from loom.engine import mesh
from loom.systems.render.surface import ClothSurface, loop_stencil, subdivide, vertex_normals, vertex_strain


def bent_onto_cylinder(nx: int, radius: float) -> tuple[mesh.Mesh, np.ndarray, float]:
    """A grid of nx columns spanning half a cylinder of ``radius`` [m] (axis y); return (flat mesh, bent x, edge)."""
    width = math.pi * radius
    sheet = mesh.grid(nx, 9, width, 0.6)
    theta = sheet.positions[:, 0] / radius
    bent = np.stack([radius * np.sin(theta), sheet.positions[:, 1], radius * np.cos(theta)], axis=1)
    return sheet, bent, width / (nx - 1)


def test_one_level_quadruples_triangles_and_adds_one_vertex_per_edge():
    sheet = mesh.grid(7, 5, 1.0, 1.0)
    one = loop_stencil(sheet.triangles, sheet.positions, 1)
    two = loop_stencil(sheet.triangles, sheet.positions, 2)
    assert one.triangles.shape == (4 * sheet.triangle_count, 3)
    assert two.triangles.shape == (16 * sheet.triangle_count, 3)
    assert one.vertex_count == sheet.vertex_count + sheet.edges.shape[0]
    assert loop_stencil(sheet.triangles, sheet.positions, 0).vertex_count == sheet.vertex_count


def test_every_stencil_row_is_an_affine_combination():
    sheet = mesh.disc(1.0, 4)
    stencil = loop_stencil(sheet.triangles, sheet.positions, 2)
    sums = np.add.reduceat(stencil.weights, stencil.indptr[:-1])
    assert np.abs(sums - 1.0).max() < 1e-14, f"row sums off 1 by {np.abs(sums - 1.0).max():.2e}"


def test_loop_rules_on_a_hexagonal_fan():
    # Centre (interior, valence 6): β = 1/16, so 10/16 of itself; interior spoke edges 3/8, 3/8, 1/8, 1/8;
    # rim edges are boundary midpoints; rim vertices turn 60° > CORNER_ANGLE, so they are corners and stay.
    fan = mesh.disc(1.0, 1)
    rng = np.random.default_rng(3)
    x = rng.normal(size=(7, 3))
    stencil = loop_stencil(fan.triangles, fan.positions, 1)
    fine = subdivide(stencil, x)
    assert np.allclose(fine[0], 10 / 16 * x[0] + x[1:].sum(axis=0) / 16, atol=1e-14)
    assert np.array_equal(fine[1:7], x[1:7])
    for row in range(7, stencil.vertex_count):
        cols = stencil.indices[stencil.indptr[row]:stencil.indptr[row + 1]]
        weights = stencil.weights[stencil.indptr[row]:stencil.indptr[row + 1]]
        if 0 in cols:                                            # a spoke: interior edge
            assert sorted(weights) == [0.125, 0.125, 0.375, 0.375], (cols, weights)
        else:                                                    # a rim edge: boundary midpoint
            assert sorted(weights) == [0.5, 0.5], (cols, weights)


@pytest.mark.parametrize("levels, bound", [(1, 0.014), (2, 0.0175)])
def test_subdivided_cylinder_stays_within_two_percent_of_an_edge_of_the_surface(levels, bound):
    # Half a cylinder of R = 0.5 m in 30 segments (6° each, edge h = 5.2 cm). A B-spline through points on a
    # circle shrinks inward by ≈ h²/(8R) after one step and ≈ h²/(6R) in the limit, i.e. 1.31 % and 1.75 % of
    # h here; measured: 1.309 % (1 level) and 1.676 % (2 levels). Corners and straight boundaries stay exact.
    radius = 0.5
    sheet, bent, edge = bent_onto_cylinder(31, radius)
    stencil = loop_stencil(sheet.triangles, sheet.positions, levels)
    fine = subdivide(stencil, bent)
    deviation = np.abs(np.hypot(fine[:, 0], fine[:, 2]) - radius).max() / edge
    assert deviation < bound, f"{levels} level(s): {deviation:.4%} of an edge off the cylinder, bound {bound:.2%}"


def test_subdivided_flat_sheet_stays_exactly_planar():
    sheet = mesh.grid(12, 9, 1.2, 0.9)
    stencil = loop_stencil(sheet.triangles, sheet.positions, 2)
    fine = subdivide(stencil, sheet.positions)
    assert np.array_equal(fine[:, 2], np.zeros(stencil.vertex_count)), "a z = 0 sheet left its plane"
    rotation = np.linalg.qr(np.random.default_rng(1).normal(size=(3, 3)))[0]
    tilted = sheet.positions @ rotation.T + (0.3, 1.7, -2.0)
    normal = rotation[:, 2]
    fine = subdivide(stencil, tilted)
    off = np.abs((fine - (0.3, 1.7, -2.0)) @ normal).max()
    assert off < 1e-12, f"tilted sheet: {off:.2e} m off its plane (rounding only)"


def test_normals_of_a_flat_grid_are_exactly_the_plane_normal():
    vertical = mesh.grid(9, 7, 1.0, 1.0, plane="xy")
    horizontal = mesh.grid(9, 7, 1.0, 1.0, center=(0.0, 1.0, 0.0), plane="xz")
    assert np.array_equal(vertex_normals(vertical.positions, vertical.triangles), np.tile([0.0, 0.0, 1.0], (63, 1)))
    assert np.array_equal(vertex_normals(horizontal.positions, horizontal.triangles), np.tile([0.0, 1.0, 0.0], (63, 1)))


def test_normals_kernel_matches_numpy_area_weighted_reference():
    sheet = mesh.grid(10, 8, 1.0, 1.0)
    x = sheet.positions + np.random.default_rng(7).normal(scale=0.05, size=sheet.positions.shape)
    t = sheet.triangles
    face = np.cross(x[t[:, 1]] - x[t[:, 0]], x[t[:, 2]] - x[t[:, 0]])      # length 2·area: area weighting
    reference = np.zeros_like(x)
    for k in range(3):
        np.add.at(reference, t[:, k], face)
    reference /= np.linalg.norm(reference, axis=1)[:, None]
    got = vertex_normals(x, t)
    assert np.abs(got - reference).max() < 1e-12, f"max difference {np.abs(got - reference).max():.2e}"


def test_uniformly_stretched_sheet_has_that_strain_at_every_particle():
    sheet = mesh.grid(6, 5, 1.0, 1.0)
    cloth = Cloth.from_mesh(sheet, "cotton")
    stretched = cloth.x * 1.1                                            # every length × 1.1
    use = cloth.link_kind[cloth.link_order] == 0
    strain = vertex_strain(stretched, cloth.link_i, cloth.link_j, cloth.link_rest, use)
    assert np.allclose(strain, 0.1, atol=1e-12), f"strain {strain.min():.6f}..{strain.max():.6f}, want 0.1"


def test_cloth_surface_refreshes_in_place_and_notices_new_topology():
    sheet = mesh.grid(8, 8, 1.0, 1.0, center=(0.0, 1.0, 0.0), plane="xz")
    cloth = Cloth.from_mesh(sheet, "cotton")
    surface = ClothSurface(cloth, 1)
    x_buffer, normal_buffer = surface.x, surface.normal
    cloth.x[:, 1] += 0.25
    surface.update(cloth, strain=True)
    assert surface.x is x_buffer and surface.normal is normal_buffer, "update must write the preallocated arrays"
    assert np.allclose(surface.x[:, 1], 1.25) and np.allclose(surface.normal, (0.0, 1.0, 0.0))
    assert np.allclose(surface.strain, 0.0, atol=1e-12)
    assert surface.matches(cloth, 1) and not surface.matches(cloth, 2)
    cloth.triangles = cloth.triangles.copy()                             # tearing rebuilds the table
    assert not surface.matches(cloth, 1)
