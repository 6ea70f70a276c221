"""XPBD cloth measured against analytic answers: free fall, pendulum period, strain, pins, sag, determinism."""
from __future__ import annotations

import math

import numba
import numpy as np
import pytest

from loom.components import STRETCH, Cloth, ClothMaterial, Gravity, Pin, Transform
from loom.components.cloth import dihedral_angles
from loom.engine import mesh
from loom.systems.xpbd import constraints
from loom.systems.xpbd.constraints import _project_bend
from loom.systems.xpbd.data import xpbd_data

G = 9.81
STILL = ClothMaterial(damping=0.0)


def test_free_fall_matches_discrete_and_analytic_parabola(make_app):
    # Symplectic Euler over N substeps of h: x_N = x0 + v0·t + ½·g·t²·(1 + 1/N) exactly, i.e. its
    # error against the analytic parabola is exactly ½·|g|·h·t (first order in h).
    app = make_app(dt=1 / 60, substeps=4)
    v0 = np.array([1.5, 4.0, -0.5])
    cloth = Cloth.from_particles([[0.0, 2.0, 0.0]], mass=0.3, links=np.zeros((0, 2), np.int32), material=STILL)
    cloth.v[:] = v0
    app.spawn(cloth)
    app.step(frames=30)                                    # t = 0.5 s in N = 120 substeps
    t, n_sub = 0.5, 120
    h = t / n_sub
    g = np.array([0.0, -G, 0.0])
    analytic = np.array([0.0, 2.0, 0.0]) + v0 * t + 0.5 * g * t * t
    discrete = np.array([0.0, 2.0, 0.0]) + v0 * t + 0.5 * g * t * t * (1 + 1 / n_sub)
    assert np.allclose(cloth.x[0], discrete, rtol=0, atol=1e-12), f"x {cloth.x[0]} want {discrete}"
    error = abs(cloth.x[0, 1] - analytic[1])
    bound = 0.5 * G * h * t
    assert error == pytest.approx(bound, rel=1e-9), f"error {error:.3e} m, symplectic Euler's is {bound:.3e} m"
    assert np.allclose(cloth.v[0], v0 + g * t, atol=1e-9)


def test_pendulum_period_is_within_one_percent_of_small_angle_formula(make_app):
    app = make_app(dt=1 / 60, substeps=8)
    length, theta0 = 1.0, 0.05                             # [m], [rad]: small amplitude
    bob = [length * math.sin(theta0), -length * math.cos(theta0), 0.0]
    cloth = Cloth.from_particles([[0.0, 0.0, 0.0], bob], mass=0.5, links=[[0, 1]], material=STILL)
    app.spawn(cloth, Pin(index=[0]))
    times, xs = [], []
    for _ in range(600):                                   # 10 s, about five periods
        app.step()
        times.append(app.clock.time)
        xs.append(cloth.x[1, 0])
    xs = np.array(xs)
    times = np.array(times)
    up = np.flatnonzero((xs[:-1] < 0.0) & (xs[1:] >= 0.0))                 # upward zero crossings
    crossings = times[up] - xs[up] * (times[up + 1] - times[up]) / (xs[up + 1] - xs[up])
    period = float(np.mean(np.diff(crossings)))
    expected = 2 * math.pi * math.sqrt(length / G)
    assert len(crossings) >= 4
    assert abs(period / expected - 1) < 0.01, f"period {period:.4f} s, 2π√(L/g) = {expected:.4f} s"
    stretch = abs(np.linalg.norm(cloth.x[1] - cloth.x[0]) - length)
    assert stretch < 1e-9, f"rod length off by {stretch:.2e} m with compliance 0"


def test_32_sheet_settles_under_one_percent_strain_with_default_settings(make_app, pinned_sheet):
    app = make_app()                                       # defaults: 1/60 s, 16 substeps, 2 sweeps, tethers
    cloth, _ = pinned_sheet(app)
    peak = 0.0
    for _ in range(1800):                                  # fall, swing and settle for 30 s: a swing
        app.step()                                         # decays as exp(−damping·t/2), 0.5 1/s for cotton
        peak = max(peak, float(cloth.strain(STRETCH).max()))
    settled = float(cloth.strain(STRETCH).max())
    assert settled < 0.01, f"max edge strain at rest {settled:.3%}, want < 1 %"
    assert peak < 0.02, f"max edge strain while swinging {peak:.3%}, want < 2 % (measured 1.4 %)"
    speed = float(np.linalg.norm(cloth.v, axis=1).max())
    assert speed < 0.05, f"after 30 s the sheet still moves at {speed:.3f} m/s"
    assert np.isfinite(cloth.x).all()
    assert cloth.rejected_steps == 0


def test_pinned_particles_sit_exactly_on_their_targets(make_app, pinned_sheet):
    app = make_app()
    cloth, pin = pinned_sheet(app, n=16)
    for _ in range(20):
        app.step()
        assert np.array_equal(cloth.x[pin.index], pin.target), "pinned particle left its target"
    pin.target[0] += [0.3, 0.1, 0.0]                         # move one target: reached exactly at step end
    app.step()
    assert np.array_equal(cloth.x[pin.index], pin.target)
    assert (cloth.inv_mass[pin.index] == 0.0).all()


def test_pin_attached_to_moving_transform_drags_cloth_along(make_app):
    app = make_app()
    sheet = mesh.grid(12, 12, 0.6, 0.6, center=(0.0, 1.0, 0.0))
    hero = app.spawn(Transform(position=(0.0, 1.3, 0.0)))
    cloth = Cloth.from_mesh(sheet)
    pin = Pin(index=sheet.side("top"), attach_to=hero)
    app.spawn(cloth, pin)
    carrier = app.get(hero, Transform)
    start = cloth.x.mean(axis=0)
    speed = 1.0                                            # [m/s] along +x
    for frame in range(120):
        carrier.position[0] = speed * (frame + 1) / 60
        app.step()
        assert np.array_equal(cloth.x[pin.index], carrier.to_world(pin.offset)), "pins off the moving frame"
    moved = cloth.x.mean(axis=0) - start
    assert moved[0] > 1.6, f"cloth centre moved {moved[0]:.3f} m of the carrier's 2 m"
    assert cloth.strain(STRETCH).max() < 0.01


def test_released_pin_lets_particle_fall_and_grab_restores_it(make_app, pinned_sheet):
    app = make_app()
    cloth, pin = pinned_sheet(app, n=8)
    app.step(30)
    pin.release(0)
    app.step(30)
    assert cloth.inv_mass[pin.index[0]] > 0.0
    assert cloth.x[pin.index[0], 1] < pin.target[0, 1] - 0.05, "released corner did not fall"
    pin.grab(0)
    app.step()
    assert np.array_equal(cloth.x[pin.index], pin.target)


def test_sag_of_compliant_sheet_is_independent_of_substep_count(make_app):
    # XPBD's α/h² scaling makes compliance a material property: the equilibrium sag of a
    # hammock must not depend on how finely each 1/60 s step is divided.
    sags = {}
    for substeps in (4, 16):
        app = make_app(substeps=substeps)
        sheet = mesh.grid(16, 16, 1.0, 1.0, plane="xz")
        material = ClothMaterial(density=1.0, stretch_compliance=2e-3, shear_compliance=2e-3, bend_compliance=10.0,
                                 damping=3.0)
        cloth = Cloth.from_mesh(sheet, material, tethers=False, iterations=20)
        app.spawn(cloth, Pin(index=np.concatenate([sheet.side("left"), sheet.side("right")])))
        app.step(600)
        assert np.abs(cloth.v).max() < 1e-4, "hammock has not come to rest"
        sags[substeps] = -float(cloth.x[:, 1].min())
    assert sags[4] > 0.02, f"sag {sags[4]:.4f} m: the sheet should sag visibly"
    assert abs(sags[4] / sags[16] - 1) < 0.05, f"sag {sags[4]:.5f} m at 4 substeps vs {sags[16]:.5f} m at 16"


def test_two_runs_are_bit_identical(make_app, pinned_sheet):
    results = []
    for _ in range(2):
        app = make_app()
        cloth, _ = pinned_sheet(app, n=24)
        app.step(90)
        results.append(cloth.x.copy())
    assert np.array_equal(results[0], results[1])


def test_parallel_solver_matches_serial_bit_for_bit(make_app, monkeypatch, pinned_sheet):
    # Colours share no particle, so splitting a colour over threads cannot change the result.
    out = {}
    previous = numba.get_num_threads()
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            monkeypatch.setattr(constraints, "PARALLEL_MIN_LINKS", 0)
            app = make_app()
            cloth, _ = pinned_sheet(app, n=20, bend_model="dihedral")
            app.step(30)
            out[threads] = cloth.x.copy()
    finally:
        numba.set_num_threads(previous)
    assert np.array_equal(out[1], out[2])


def test_internal_constraints_keep_the_centre_of_mass_of_a_free_cloth(make_app):
    # Fuhrmann 2003 eqs. 6–9: mass-weighted corrections move the centre of mass not at all.
    app = make_app()
    app.insert_resource(Gravity((0.0, 0.0, 0.0)))
    sheet = mesh.disc(0.5, 6)
    cloth = Cloth.from_mesh(sheet, "cotton", damping=0.0)
    rng = np.random.default_rng(7)
    cloth.x += rng.normal(scale=0.02, size=cloth.x.shape)          # crumple: every constraint violated
    app.spawn(cloth)
    com0 = cloth.mass @ cloth.x / cloth.total_mass
    app.step(60)
    com = cloth.mass @ cloth.x / cloth.total_mass
    assert np.abs(com - com0).max() < 1e-12, f"centre of mass drifted {np.abs(com - com0).max():.2e} m"
    assert cloth.strain(STRETCH).max() < 0.02


def test_tethers_hold_every_particle_near_rest_distance_of_its_anchors(make_app, pinned_sheet):
    # A particle's two tethers are projected one after the other, nearest first, so the nearest
    # can be left a little violated; the last projected one holds exactly, and no particle may
    # stray beyond any tether by more than a third of the grid spacing (≈ 7 mm here).
    app = make_app(substeps=2)
    # the tethers alone: the yarns' pass after the collisions and the stretch limit run after them and would move
    # particles after the last projection
    cloth, pin = pinned_sheet(app, n=48, iterations=2, yarns=False, stretch_limit=None)
    app.step(60)
    data = xpbd_data(app, next(e for e, c in app.query(Cloth) if c is cloth))      # XPBD's own data of the cloth
    assert data.tether_anchor.size == 2 * (cloth.particle_count - 2)
    p = np.repeat(np.arange(cloth.particle_count), np.diff(data.tether_offsets))
    excess = np.linalg.norm(cloth.x[p] - cloth.x[data.tether_anchor], axis=1) - data.tether_length
    spacing = 1.0 / 47
    assert excess.max() < spacing / 3, f"a particle is {excess.max() * 1000:.2f} mm beyond its tether"
    last = data.tether_offsets[1:][np.diff(data.tether_offsets) > 0] - 1     # each particle's last tether
    assert excess[last].max() <= 1e-12, "the last projected tether must hold exactly"


def test_tethers_cure_super_elastic_sag_at_high_resolution(make_app, pinned_sheet):
    # Provot 1995's super-elastic effect: few plain Gauss–Seidel sweeps on a fine sheet stretch it like rubber
    # (no yarns and no stretch limit here: either would hide the effect).
    stretch = {}
    for tethers in (False, True):
        app = make_app(substeps=4)
        cloth, _ = pinned_sheet(app, n=48, tethers=tethers, yarns=False, iterations=3, stretch_limit=None)
        app.step(90)
        stretch[tethers] = float(cloth.strain(STRETCH).max())
    assert stretch[False] > 0.05, f"expected visible super-elastic stretch, got {stretch[False]:.2%}"
    assert stretch[True] < stretch[False] / 4, f"tethers: {stretch[True]:.2%} vs {stretch[False]:.2%} without"


def test_yarns_cure_super_elastic_sag_without_tethers(make_app):
    # A 48² curtain hung by its whole top edge, no tethers and no stretch limit, 4 substeps × 3 sweeps: plain sweeps
    # stretch it like rubber; with yarns each column is solved as one line from its pinned top, so it hangs at its
    # rest length (the sheet of the test above, hung by two corners only, has a top edge that cannot sag without
    # stretching: no solver keeps that inextensible, which is what the tethers' or the limit's slack is for).
    stretch = {}
    for yarns in (False, True):
        app = make_app(substeps=4)
        sheet = mesh.grid(48, 48, 1.0, 1.0, plane="xy")
        cloth = Cloth.from_mesh(sheet, "cotton", tethers=False, yarns=yarns, iterations=3, stretch_limit=None)
        app.spawn(cloth, Pin(index=sheet.side("top")))
        app.step(90)
        stretch[yarns] = float(cloth.strain(STRETCH).max())
    assert stretch[False] > 0.05, f"expected visible super-elastic stretch, got {stretch[False]:.2%}"
    assert stretch[True] < 0.005, f"yarns: {stretch[True]:.3%} (plain sweeps {stretch[False]:.2%})"


def test_provot_strain_limit_caps_a_stretchy_cloth(make_app, pinned_sheet):
    stretch = {}
    for limit in (None, 0.1):
        app = make_app()
        material = ClothMaterial(density=2.0, stretch_compliance=0.05, shear_compliance=0.05, strain_limit=limit)
        cloth, _ = pinned_sheet(app, n=16, material=material, tethers=False)
        app.step(120)
        stretch[limit] = float(cloth.strain(STRETCH).max())
    assert stretch[None] > 0.2, f"without the limit the rubber sheet should stretch far, got {stretch[None]:.2%}"
    # The limit's corrections run until no link is over (distance_limits.limit_lengths); 20 fixed passes
    # left 10.26 % here. 1e-9 allows for Cloth.strain's rounding (tests/test_provot_limit.py).
    assert stretch[0.1] <= 0.1 + 1e-9, f"with a 10 % limit, max strain {stretch[0.1]:.12%}"


def test_dihedral_angle_is_signed_and_zero_when_flat():
    quad = np.array([[0, 1, 2, 3]], np.int32)
    for fold in (0.0, 0.4, -0.7, 2.5):
        # edge along x; o0 on +y side in the z = 0 plane, o1 on −y folded by `fold` about the edge
        x = np.array([[0.0, 0, 0], [1.0, 0, 0], [0.5, 1.0, 0], [0.5, -math.cos(fold), math.sin(fold)]])
        assert abs(abs(dihedral_angles(x, quad)[0]) - fold * np.sign(fold)) < 1e-12


def test_dihedral_projection_is_a_newton_step_on_the_angle():
    # With the exact gradient, one XPBD projection of C = θ − θ₀ (compliance 0) removes C to first
    # order, so the residual is second order: a wrong or mis-signed gradient fails this at once.
    quad = np.array([[0, 1, 2, 3]], np.int32)
    rest = np.array([0.3])
    inv_mass = np.array([1.0, 2.0, 0.5, 1.5])
    for fold in (0.35, 0.25):
        x = np.array([[0.0, 0, 0], [1.0, 0, 0], [0.5, 1.0, 0], [0.5, -math.cos(fold), math.sin(fold)]])
        before = dihedral_angles(x, quad)[0] - rest[0]
        com0 = (x / inv_mass[:, None]).sum(axis=0)
        _project_bend(0, quad, rest, 0.0, inv_mass, x, np.zeros(1))
        after = dihedral_angles(x, quad)[0] - rest[0]
        assert abs(after) < 0.05 * abs(before), f"|C| {abs(before):.4f} → {abs(after):.4f} rad"
        com = (x / inv_mass[:, None]).sum(axis=0)
        assert np.abs(com - com0).max() < 1e-12, "bending moved the centre of mass"


def test_dihedral_bending_sheet_hangs_without_stretch_or_nan(make_app, pinned_sheet):
    app = make_app()
    cloth, _ = pinned_sheet(app, n=16, bend_model="dihedral")
    assert cloth.bend_quads.shape[0] > 0
    app.step(120)
    assert np.isfinite(cloth.x).all() and cloth.rejected_steps == 0
    assert cloth.strain(STRETCH).max() < 0.01


def test_float32_state_hangs_where_float64_does(make_app):
    """Cloth(precision="float32") stores x, x_prev, v and force in float32; kernels compute in float64.
    At rest it sits where float64 does to float32's resolution; swinging, rounding at each store adds
    up to millimetres in 2 s (a float64 run started 1e-7 m off differs by 0.1 mm).

    The sheet is stiff in shear (1e-3): the offset at rest is a rounding force over the stiffness that
    resists it, so cotton's soft shear (1) sits a few float32 steps further (2.7e-6 m measured), which is
    the same resolution scaled by a softer spring, not a precision loss in the kernels."""
    material = ClothMaterial.preset("cotton", shear_compliance=1e-3)
    for plane, bound in (("xy", 2e-6), ("xz", 1e-2)):            # hanging at rest; swinging down from flat
        sheets = []
        for precision in ("float64", "float32"):
            app = make_app(substeps=8)
            sheet = mesh.grid(16, 16, 1.0, 1.0, center=(0.0, 1.5, 0.0), plane=plane)
            cloth = Cloth.from_mesh(sheet, material, precision=precision)
            app.spawn(cloth, Pin.edge(sheet, "top"))
            app.step(120)
            assert cloth.x.dtype == np.dtype(precision) and cloth.v.dtype == np.dtype(precision)
            sheets.append(cloth)
        wide, narrow = sheets
        assert np.abs(wide.x - narrow.x).max() < bound, plane
        assert abs(wide.strain(STRETCH).max() - narrow.strain(STRETCH).max()) < 1e-3
    assert narrow.x[:, 1].min() < 1.0                                   # the flat one did swing down


def test_float32_cloths_run_beside_float64_ones_unbatched(make_app):
    app = make_app(substeps=4)
    clothes = []
    for k, precision in enumerate(("float64", "float32", "float64")):
        sheet = mesh.grid(6, 6, 0.5, 0.5, center=(1.0 * k, 1.0, 0.0), plane="xz")
        cloth = Cloth.from_mesh(sheet, "cotton", precision=precision, self_collision=True)
        app.spawn(cloth, Pin.edge(sheet, "top"))
        clothes.append(cloth)
    app.step(30)
    assert all(np.isfinite(c.x).all() and c.x[:, 1].min() < 0.8 for c in clothes)
    assert all(c.rejected_steps == 0 for c in clothes)
    assert clothes[1].x.dtype == np.float32


def test_float32_is_for_xpbd_only():
    with pytest.raises(ValueError, match="precision"):
        Cloth.from_mesh(mesh.grid(4, 4, 1.0, 1.0), "cotton", model="verlet", precision="float32")
    with pytest.raises(ValueError, match="precision"):
        Cloth.from_mesh(mesh.grid(4, 4, 1.0, 1.0), "cotton", precision="float16")
