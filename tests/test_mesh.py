"""Tests for engine.mesh: builders, derived topology, masses (Fuhrmann et al. 2003 eq. 1) and input validation."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loom.engine import mesh
from loom.engine.mesh import Mesh

SQUARE = np.array([(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (1.0, 1.0, 0.0), (0.0, 1.0, 0.0)])   # [m]
SQUARE_TRIANGLES = np.array([[0, 1, 2], [0, 2, 3]])


def _normals(m: Mesh) -> np.ndarray:
    p, t = m.positions, m.triangles
    return np.cross(p[t[:, 1]] - p[t[:, 0]], p[t[:, 2]] - p[t[:, 0]])


def _rotations(triangles: np.ndarray) -> set[tuple[int, int, int]]:
    """Every cyclic rotation of every triangle: (a, b, c) is in the set iff it has the same winding as a row."""
    out = set()
    for a, b, c in triangles.tolist():
        out |= {(a, b, c), (b, c, a), (c, a, b)}
    return out


def _edge_use_counts(m: Mesh) -> dict[tuple[int, int], int]:
    counts: dict[tuple[int, int], int] = {}
    for tri in m.triangles.tolist():
        for a, b in ((tri[0], tri[1]), (tri[1], tri[2]), (tri[2], tri[0])):
            key = (min(a, b), max(a, b))
            counts[key] = counts.get(key, 0) + 1
    return counts


# --- grid ------------------------------------------------------------------------------------------------------

def test_grid_of_4_by_4_has_the_expected_counts():
    m = mesh.grid(4, 4, 1.0, 1.0)
    assert (m.vertex_count, m.triangle_count) == (16, 18)
    assert (len(m.stretch_links), len(m.shear_links), len(m.bend_links)) == (24, 18, 16)
    assert len(m.edges) == 24 + 9                          # stretch links plus one diagonal per quad
    assert len(m.bend_quads) == 33 - 12                    # interior edges: all but the 12 boundary edges
    assert m.grid_shape == (4, 4)


def test_grid_edges_are_stretch_links_plus_one_diagonal_per_quad():
    m = mesh.grid(5, 3, 2.0, 1.0)
    edges = set(map(tuple, m.edges.tolist()))
    shear = m.shear_links.reshape(-1, 2, 2)                # per quad: both diagonals
    diagonals = [next(tuple(d) for d in quad.tolist() if tuple(d) in edges) for quad in shear]
    assert edges == set(map(tuple, m.stretch_links.tolist())) | set(diagonals)
    assert m.edges.tolist() == sorted(m.edges.tolist())


def test_grid_link_tables_follow_the_documented_order():
    m = mesh.grid(3, 3, 1.0, 1.0)
    assert m.stretch_links.tolist() == [[0, 1], [1, 2], [3, 4], [4, 5], [6, 7], [7, 8],
                                        [0, 3], [1, 4], [2, 5], [3, 6], [4, 7], [5, 8]]
    assert m.shear_links.tolist() == [[0, 4], [1, 3], [1, 5], [2, 4], [3, 7], [4, 6], [4, 8], [5, 7]]
    assert m.bend_links.tolist() == [[0, 2], [3, 5], [6, 8], [0, 6], [1, 7], [2, 8]]


def test_grid_triangles_alternate_diagonals_in_a_checkerboard():
    m = mesh.grid(3, 3, 1.0, 1.0)
    # quads (0,0) and (1,1) are even: diagonal (c,r)-(c+1,r+1); quads (1,0) and (0,1) use the other one
    assert m.triangles.tolist() == [[0, 1, 4], [0, 4, 3], [1, 2, 4], [2, 5, 4],
                                    [3, 4, 6], [4, 7, 6], [4, 5, 8], [4, 8, 7]]


def test_grid_positions_and_uv_run_from_the_lower_left_corner():
    m = mesh.grid(3, 2, 2.0, 1.0, center=(1.0, 2.0, 3.0))
    assert np.allclose(m.positions, [(0, 1.5, 3), (1, 1.5, 3), (2, 1.5, 3), (0, 2.5, 3), (1, 2.5, 3), (2, 2.5, 3)])
    assert np.allclose(m.uv, [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1)])
    flat = mesh.grid(3, 2, 2.0, 1.0, center=(1.0, 2.0, 3.0), plane="xz")
    assert np.allclose(flat.positions[:, 1], 2.0)
    assert np.allclose(flat.positions[:, 2], [3.5, 3.5, 3.5, 2.5, 2.5, 2.5])   # row 0 on the +z side
    assert np.allclose(flat.uv, m.uv)


def test_yz_grid_is_a_vertical_sheet_facing_plus_x_with_the_xy_uv():
    m = mesh.grid(3, 2, 2.0, 1.0, center=(1.0, 2.0, 3.0), plane="yz")
    assert np.all(m.positions[:, 0] == 1.0), "every particle at x = center x"
    assert np.allclose(m.positions[:, 1], [1.5, 1.5, 1.5, 2.5, 2.5, 2.5])       # row 0 at the bottom
    assert np.allclose(m.positions[:, 2], [4.0, 3.0, 2.0, 4.0, 3.0, 2.0])       # columns run toward -z
    assert np.allclose(m.uv, mesh.grid(3, 2, 2.0, 1.0).uv)
    assert m.uv.min(axis=0).tolist() == [0.0, 0.0] and np.allclose(m.uv.max(axis=0), [2.0, 1.0])
    assert np.allclose(m.positions[m.side("top"), 1], 2.5) and m.side("top").tolist() == [3, 4, 5]
    assert np.allclose(_normals(m).sum(axis=0) / np.linalg.norm(_normals(m).sum(axis=0)), (1, 0, 0))


def test_yz_grid_is_the_xy_grid_turned_a_quarter_turn_about_y():
    flat, side = mesh.grid(5, 4, 1.2, 0.8, plane="xy"), mesh.grid(5, 4, 1.2, 0.8, plane="yz")
    quarter = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])    # +90° about y: x → -z, z → +x
    assert np.allclose(flat.positions @ quarter.T, side.positions, atol=1e-12)
    assert np.array_equal(flat.triangles, side.triangles) and np.array_equal(flat.edges, side.edges)


@pytest.mark.parametrize("build, front", [
    (lambda: mesh.grid(6, 4, 1.5, 1.0), (0, 0, 1)),
    (lambda: mesh.grid(5, 7, 1.0, 2.0, plane="xz"), (0, 1, 0)),
    (lambda: mesh.strip(9, 2.0, 0.1), (0, 0, 1)),
    (lambda: mesh.disc(1.0, 4), (0, 1, 0)),
    (lambda: mesh.disc(0.5, 3, plane="xy"), (0, 0, 1)),
    (lambda: mesh.grid(4, 6, 0.5, 0.65, plane="yz"), (1, 0, 0)),
], ids=["grid-xy", "grid-xz", "strip", "disc-xz", "disc-xy", "grid-yz"])
def test_every_triangle_is_counter_clockwise_seen_from_the_front(build, front):
    normals = _normals(build())
    unit = normals / np.linalg.norm(normals, axis=1, keepdims=True)
    assert np.allclose(unit, front, atol=1e-12), f"worst normal {unit[np.argmin(unit @ front)]}, want {front}"


def test_grid_masses_sum_to_density_times_area():
    m = mesh.grid(7, 5, 1.2, 0.8)
    masses = m.vertex_masses(0.25)                        # [kg/m²]
    assert masses.shape == (35,)
    assert math.isclose(masses.sum(), 0.25 * 1.2 * 0.8, rel_tol=1e-12), f"{masses.sum()} kg"
    assert np.allclose(m.triangle_areas(), 1.2 * 0.8 / m.triangle_count)


def test_grid_corner_masses_follow_the_alternating_diagonals():
    # 4 x 4 grid, quad area 1/9 m². Bottom-left and top-right corners touch an even quad's diagonal, so both
    # of its triangles: mass = density * 2 * (area/2) / 3; the other two corners touch one triangle only.
    m = mesh.grid(4, 4, 1.0, 1.0)
    quad = 1.0 / 9.0
    masses = m.vertex_masses(3.0)[m.side("corners")]
    assert np.allclose(masses, [3.0 * quad / 3, 3.0 * quad / 6, 3.0 * quad / 6, 3.0 * quad / 3], rtol=1e-12)


def test_grid_interior_masses_alternate_with_the_diagonals():
    # With checkerboard diagonals an interior particle with (col + row) even ends all four quads' diagonals and
    # touches 8 triangles (4/3 of a quad's area); its odd neighbours touch 4 (2/3). Together they average one quad.
    m = mesh.grid(6, 6, 1.0, 1.0)
    quad = 1.0 / 25.0                                     # [m²]
    masses = m.vertex_masses(1.0).reshape(6, 6)[1:-1, 1:-1]
    row, col = np.mgrid[1:5, 1:5]
    expected = np.where((row + col) % 2 == 0, 4.0 / 3.0, 2.0 / 3.0) * quad
    assert np.allclose(masses, expected, rtol=1e-12), masses


def test_strip_is_a_two_row_grid_along_x():
    s = mesh.strip(10, 3.0, 0.2)
    g = mesh.grid(10, 2, 3.0, 0.2)
    assert s.grid_shape == (10, 2)
    for field in ("positions", "triangles", "uv", "edges", "bend_quads", "stretch_links", "shear_links",
                  "bend_links"):
        assert np.array_equal(getattr(s, field), getattr(g, field)), field
    assert np.ptp(s.positions[:, 0]) == pytest.approx(3.0)


# --- disc ------------------------------------------------------------------------------------------------------

def test_disc_has_hexagonal_rings_at_even_radii():
    m = mesh.disc(2.0, 3, center=(0.0, 1.0, 0.0))
    assert (m.vertex_count, m.triangle_count) == (1 + 6 + 12 + 18, 6 * 9)
    radius = np.hypot(m.positions[:, 0], m.positions[:, 2])
    assert np.allclose(radius[0], 0.0) and np.allclose(m.positions[:, 1], 1.0)
    assert np.allclose(radius[1:7], 2.0 / 3) and np.allclose(radius[7:19], 4.0 / 3) and np.allclose(radius[19:], 2.0)
    assert np.allclose(m.positions[1], (2.0 / 3, 1.0, 0.0))                  # angle starts at 0 (+x)
    assert m.grid_shape is None and m.shear_links.shape == (0, 2)
    assert np.array_equal(m.stretch_links, m.edges) and np.array_equal(m.bend_links, m.bend_pairs)
    assert np.allclose(m.uv[0], (2.0, 2.0))                                  # centre of a 4 m bounding box


def test_disc_masses_sum_to_density_times_polygon_area():
    rings, radius, density = 5, 0.7, 0.3
    m = mesh.disc(radius, rings)
    sides = 6 * rings                                     # the outer ring is a regular polygon
    polygon = 0.5 * sides * radius**2 * math.sin(2 * math.pi / sides)
    total = m.vertex_masses(density).sum()
    assert math.isclose(total, density * polygon, rel_tol=1e-12), f"{total} kg, want {density * polygon} kg"


def test_disc_edges_are_used_by_one_or_two_triangles():
    m = mesh.disc(1.0, 4)
    counts = _edge_use_counts(m)
    assert set(counts.values()) == {1, 2}
    assert sum(c == 1 for c in counts.values()) == 6 * 4                       # boundary: the outer ring
    assert m.vertex_count - len(m.edges) + m.triangle_count == 1


# --- bend topology ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("build", [
    lambda: mesh.grid(5, 4, 1.0, 1.0),
    lambda: mesh.grid(4, 6, 1.0, 1.0, plane="xz"),
    lambda: mesh.disc(1.0, 3),
    lambda: mesh.from_triangles(SQUARE, SQUARE_TRIANGLES),
], ids=["grid-xy", "grid-xz", "disc", "square"])
def test_bend_quads_are_wound_like_their_triangles(build):
    m = build()
    wound = _rotations(m.triangles)
    for e0, e1, o0, o1 in m.bend_quads.tolist():
        assert (e0, e1, o0) in wound and (e1, e0, o1) in wound, (e0, e1, o0, o1)
    interior = sorted(k for k, c in _edge_use_counts(m).items() if c == 2)
    assert [tuple(sorted(q[:2])) for q in m.bend_quads.tolist()] == interior   # one row per interior edge, in order


def test_bend_pairs_are_the_sorted_unique_opposite_vertices_of_bend_quads():
    m = mesh.grid(4, 4, 1.0, 1.0)
    expected = sorted({tuple(sorted(q[2:])) for q in m.bend_quads.tolist()})
    assert m.bend_pairs.tolist() == [list(p) for p in expected]
    assert len(m.bend_pairs) == 17                        # 21 quads: 4 pairs repeat around valence-4 vertices


# --- side and index --------------------------------------------------------------------------------------------

def test_side_lists_particles_in_order_along_each_side():
    m = mesh.grid(4, 3, 1.0, 1.0)
    assert m.side("left").tolist() == [0, 4, 8]
    assert m.side("right").tolist() == [3, 7, 11]
    assert m.side("bottom").tolist() == [0, 1, 2, 3]
    assert m.side("top").tolist() == [8, 9, 10, 11]
    assert m.side("top_corners").tolist() == [8, 11]
    assert m.side("bottom_corners").tolist() == [0, 3]
    assert m.side("corners").tolist() == [0, 3, 8, 11]
    assert m.side("top").dtype == np.int32
    assert np.all(m.positions[m.side("top"), 1] == m.positions[:, 1].max())


def test_index_is_row_major_from_the_lower_left():
    m = mesh.grid(4, 3, 1.0, 1.0)
    assert m.index(0, 0) == 0 and m.index(3, 0) == 3 and m.index(1, 2) == 9
    assert np.allclose(m.positions[m.index(3, 2)], m.positions.max(axis=0))


def test_side_rejects_unknown_names_and_non_grid_meshes():
    with pytest.raises(ValueError, match=r"Mesh.side\('middle'\).*left, right, top, bottom"):
        mesh.grid(3, 3, 1.0, 1.0).side("middle")
    with pytest.raises(ValueError, match=r"Mesh.side\('left'\).*grid"):
        mesh.disc(1.0, 2).side("left")


def test_index_rejects_out_of_range_columns_and_rows():
    m = mesh.grid(4, 3, 1.0, 1.0)
    with pytest.raises(ValueError, match=r"Mesh.index.col = 4: expected an integer in 0..3"):
        m.index(4, 0)
    with pytest.raises(ValueError, match=r"Mesh.index.row = -1: expected an integer in 0..2"):
        m.index(0, -1)
    with pytest.raises(ValueError, match=r"Mesh.index\(0, 0\).*grid"):
        mesh.from_triangles(SQUARE, SQUARE_TRIANGLES).index(0, 0)


# --- from_triangles --------------------------------------------------------------------------------------------

def test_from_triangles_square_has_five_edges_and_one_bend_pair():
    m = mesh.from_triangles(SQUARE, SQUARE_TRIANGLES)
    assert m.edges.tolist() == [[0, 1], [0, 2], [0, 3], [1, 2], [2, 3]]
    assert m.bend_pairs.tolist() == [[1, 3]]
    assert m.bend_quads.tolist() == [[2, 0, 1, 3]]
    assert np.array_equal(m.stretch_links, m.edges) and np.array_equal(m.bend_links, m.bend_pairs)
    assert m.shear_links.shape == (0, 2) and m.grid_shape is None
    assert np.allclose(m.vertex_masses(1.0), [1 / 3, 1 / 6, 1 / 3, 1 / 6])


def test_from_triangles_projects_a_planar_mesh_isometrically_into_uv():
    tilt = np.array([[1.0, 0.0, 0.0], [0.0, 0.6, -0.8], [0.0, 0.8, 0.6]])      # rotation about x
    g = mesh.grid(4, 3, 1.5, 1.0)
    m = mesh.from_triangles(g.positions @ tilt.T + (5.0, 1.0, -2.0), g.triangles)
    for a, b in m.edges.tolist():
        assert math.isclose(np.linalg.norm(m.uv[a] - m.uv[b]), np.linalg.norm(g.uv[a] - g.uv[b]), rel_tol=1e-9)
    assert np.allclose(m.uv.min(axis=0), 0.0)
    u, v = m.uv[m.triangles[:, 1]] - m.uv[m.triangles[:, 0]], m.uv[m.triangles[:, 2]] - m.uv[m.triangles[:, 0]]
    assert np.all(u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0] > 0), "uv triangles should stay counter-clockwise"


def test_from_triangles_keeps_given_uv_and_copies_inputs():
    positions, uv = SQUARE.copy(), SQUARE[:, :2] * 2.0
    m = mesh.from_triangles(positions, SQUARE_TRIANGLES.astype(np.int64), uv)
    positions[0] = 9.0
    assert np.array_equal(m.uv, uv) and np.array_equal(m.positions, SQUARE)
    assert m.triangles.dtype == np.int32


def test_from_triangles_gives_no_bend_quad_to_a_non_manifold_edge():
    positions = [(0, 0, 0), (1, 0, 0), (0.5, 1, 0), (0.5, -1, 0), (0.5, 0, 1)]   # three fins on edge 0-1
    m = mesh.from_triangles(positions, [[0, 1, 2], [1, 0, 3], [0, 1, 4]])
    assert [0, 1] in m.edges.tolist()
    assert m.bend_quads.shape == (0, 4) and m.bend_pairs.shape == (0, 2)


def test_from_triangles_rejects_inconsistent_winding():
    with pytest.raises(ValueError, match=r"triangles\[0\] = \[0, 1, 2\] and triangles\[1\] = \[0, 3, 2\].*winding"):
        mesh.from_triangles(SQUARE, [[0, 1, 2], [0, 3, 2]])


@pytest.mark.parametrize("positions, triangles, uv, message", [
    (SQUARE, [[3, 3, 1]], None, r"from_triangles.triangles\[0\] = \[3, 3, 1\]: degenerate triangle \(repeated"),
    (SQUARE, [[0, 1, 2], [0, 2, 3], [0, 3, 3]], None, r"triangles\[2\] = \[0, 3, 3\]: degenerate"),
    (SQUARE, [[0, 1, 2], [0, 2, 99]], None,
     r"from_triangles.triangles\[1\] = \[0, 2, 99\]: index out of range for 4 positions"),
    (SQUARE, [[0, 1, 2], [0, 2, -1]], None, r"triangles\[1\] = \[0, 2, -1\]: index out of range"),
    ([(0, 0, 0), (1, 0, 0), (2, 0, 0), (0, 1, 0)], [[0, 1, 3], [0, 1, 2]], None,
     r"from_triangles.triangles\[1\] = \[0, 1, 2\]: zero-area triangle"),
    ([(0, 0, 0), (1, 0, 0), (0, 1, 0), (float("nan"), 0, 0)], [[0, 1, 2]], None,
     r"from_triangles.positions\[3\] = \[nan, 0, 0\]: must be finite \[m\]"),
    ([(0, 0, 0), (1, 0, 0), (0, 1, 0), (5, 5, 5)], [[0, 1, 2]], None,
     r"from_triangles.positions\[3\]: not used by any triangle"),
    (SQUARE, [[0, 1, 2], [0, 2, 3], [2, 0, 1]], None,
     r"triangles\[0\] = \[0, 1, 2\] and triangles\[2\] = \[2, 0, 1\]: duplicate triangle"),
    (SQUARE, [[0.0, 1.0, 2.0]], None, r"from_triangles.triangles: dtype float64, expected an integer array"),
    (SQUARE, [[True, False, True]], None, r"from_triangles.triangles: dtype bool"),
    (SQUARE, [0, 1, 2], None, r"from_triangles.triangles: shape \(3,\), expected \(t, 3\)"),
    (SQUARE, np.zeros((0, 3), int), None, r"from_triangles.triangles: empty"),
    (np.zeros((0, 3)), [[0, 1, 2]], None, r"from_triangles.positions: empty"),
    (SQUARE[:, :2], [[0, 1, 2]], None, r"from_triangles.positions: shape \(4, 2\), expected \(n, 3\)"),
    ([("a", "b", "c")], [[0, 1, 2]], None, r"from_triangles.positions: dtype <U1, expected real numbers"),
    (SQUARE, SQUARE_TRIANGLES, np.zeros((4, 3)), r"from_triangles.uv: shape \(4, 3\), expected \(4, 2\)"),
    (SQUARE, SQUARE_TRIANGLES, [(0, 0), (1, 0), (1, np.inf), (0, 1)],
     r"from_triangles.uv\[2\] = \[1, inf\]: must be finite"),
], ids=["repeated-vertex", "repeated-vertex-later-row", "index-too-big", "index-negative", "zero-area",
        "nan-position", "unused-position", "duplicate", "float-triangles", "bool-triangles", "flat-triangles",
        "no-triangles", "no-positions", "2d-positions", "string-positions", "uv-shape", "uv-inf"])
def test_from_triangles_rejects_bad_input_naming_the_field(positions, triangles, uv, message):
    with pytest.raises(ValueError, match=message):
        mesh.from_triangles(positions, triangles, uv)


# --- validation of the grid builders ---------------------------------------------------------------------------

@pytest.mark.parametrize("call, message", [
    (lambda: mesh.grid(1, 4, 1.0, 1.0), r"grid.nx = 1: need at least 2 particles per side"),
    (lambda: mesh.grid(4, 0, 1.0, 1.0), r"grid.ny = 0: need at least 2 particles per side"),
    (lambda: mesh.grid(2.5, 4, 1.0, 1.0), r"grid.nx = 2.5: must be an integer"),
    (lambda: mesh.grid(True, 4, 1.0, 1.0), r"grid.nx = True: must be an integer"),
    (lambda: mesh.grid(4, 4, 0.0, 1.0), r"grid.width = 0.0: must be finite and > 0 \[m\]"),
    (lambda: mesh.grid(4, 4, 1.0, float("nan")), r"grid.height = nan: must be finite and > 0"),
    (lambda: mesh.grid(4, 4, 1.0, -2.0), r"grid.height = -2.0"),
    (lambda: mesh.grid(4, 4, 1.0, 1.0, plane="zy"), r"grid.plane = 'zy': expected one of xy, xz, yz"),
    (lambda: mesh.grid(4, 4, 1.0, 1.0, center=(0.0, 0.0)), r"grid.center = \(0.0, 0.0\): expected 3 finite"),
    (lambda: mesh.grid(4, 4, 1.0, 1.0, center=(0.0, np.inf, 0.0)), r"grid.center = .*expected 3 finite"),
    (lambda: mesh.strip(1, 1.0, 0.1), r"strip.count = 1: need at least 2"),
    (lambda: mesh.strip(5, 1.0, -0.1), r"strip.width = -0.1: must be finite and > 0"),
    (lambda: mesh.disc(1.0, 0), r"disc.rings = 0: need at least 1 ring"),
    (lambda: mesh.disc(float("inf"), 3), r"disc.radius = inf: must be finite and > 0"),
    (lambda: mesh.disc(1.0, 3, plane="x"), r"disc.plane = 'x'"),
], ids=["nx-1", "ny-0", "nx-float", "nx-bool", "width-0", "height-nan", "height-negative", "plane", "center-2d",
        "center-inf", "strip-count", "strip-width", "disc-rings", "disc-radius", "disc-plane"])
def test_builders_reject_bad_parameters_naming_the_field(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("density", [0.0, -1.0, float("nan"), float("inf"), True])
def test_vertex_masses_rejects_density_that_is_not_finite_and_positive(density):
    with pytest.raises(ValueError, match=r"Mesh.vertex_masses.density = .*: must be finite and > 0 \[kg/m²\]"):
        mesh.grid(3, 3, 1.0, 1.0).vertex_masses(density)


# --- the Mesh component ----------------------------------------------------------------------------------------

def test_mesh_arrays_are_read_only_contiguous_and_typed():
    m = mesh.grid(4, 3, 1.0, 1.0)
    for field in ("positions", "uv"):
        array = getattr(m, field)
        assert array.dtype == np.float64 and array.flags.c_contiguous and not array.flags.writeable, field
    for field in ("triangles", "edges", "bend_pairs", "bend_quads", "stretch_links", "shear_links", "bend_links"):
        array = getattr(m, field)
        assert array.dtype == np.int32 and array.flags.c_contiguous and not array.flags.writeable, field
    with pytest.raises(ValueError):
        m.positions[0, 0] = 1.0


def test_mesh_constructor_rejects_wrong_dtypes_and_indices():
    m = mesh.from_triangles(SQUARE, SQUARE_TRIANGLES)
    fields = {name: getattr(m, name) for name in ("positions", "triangles", "uv", "edges", "bend_pairs",
                                                   "bend_quads", "stretch_links", "shear_links", "bend_links")}
    with pytest.raises(ValueError, match=r"Mesh.triangles: dtype int64, expected int32"):
        Mesh(**{**fields, "triangles": m.triangles.astype(np.int64)})
    with pytest.raises(ValueError, match=r"Mesh.edges: indices 0..4 out of range for 4 positions"):
        Mesh(**{**fields, "edges": np.array([[0, 4]], np.int32)})


# --- properties ------------------------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(nx=st.integers(2, 12), ny=st.integers(2, 12), plane=st.sampled_from(["xy", "xz", "yz"]))
def test_random_grids_are_manifold_discs(nx, ny, plane):
    m = mesh.grid(nx, ny, 1.0, 0.5, plane=plane)
    counts = _edge_use_counts(m)
    assert sorted(counts) == [tuple(e) for e in m.edges.tolist()]
    assert set(counts.values()) <= {1, 2}
    assert sum(c == 1 for c in counts.values()) == 2 * (nx - 1) + 2 * (ny - 1)
    assert m.vertex_count - len(m.edges) + m.triangle_count == 1                 # Euler characteristic of a disc
    assert len(m.bend_quads) == sum(c == 2 for c in counts.values())
    assert math.isclose(m.vertex_masses(2.0).sum(), 2.0 * 0.5, rel_tol=1e-12)
