"""Wind and blowers measured against the force model: flat-plate drag, lift, Provot's viscous term, a flag, gusts."""
from __future__ import annotations

import math

import numpy as np
import pytest

from loom.components import Cloth, ClothMaterial, Gravity, Pin
from loom.components.wind import Blower, Wind
from loom.engine import mesh
from loom.systems.forces.wind import air_velocity, apply_wind, gust_factor

RHO, CD = 1.2, 1.0


def plate(app, n: int = 9, size: float = 1.0, density: float = 1.0, **grid_options) -> Cloth:
    """A flat size × size square plate (front +z unless a plane is given), spawned in app."""
    cloth = Cloth.from_mesh(mesh.grid(n, n, size, size, **grid_options), density=density)
    app.spawn(cloth)
    return cloth


def total_wind_force(app, cloth: Cloth) -> np.ndarray:
    """Run the wind system once on a cleared accumulator and return the summed force [N]."""
    cloth.force[:] = 0.0
    apply_wind(app, app.clock.dt)
    return cloth.force.sum(axis=0)


def test_drag_on_plate_facing_wind_is_half_rho_cd_area_speed_squared(make_app):
    app = make_app()
    cloth = plate(app, size=1.5)
    app.spawn(Wind(velocity=(0.0, 0.0, 8.0), drag_coefficient=CD, lift_coefficient=0.7, air_density=RHO))
    force = total_wind_force(app, cloth)
    expected = 0.5 * RHO * CD * 1.5**2 * 8.0**2                   # face-on: no lift, cos θ = 1
    assert force[2] == pytest.approx(expected, rel=1e-9), f"drag {force[2]:.6f} N, want {expected:.6f} N"
    assert np.allclose(force[:2], 0.0, atol=1e-9), f"sideways force {force[:2]} N on a plate facing the wind"


def test_plate_edge_on_to_wind_feels_no_force(make_app):
    app = make_app()
    cloth = plate(app)
    app.spawn(Wind(velocity=(8.0, 0.0, 0.0), lift_coefficient=0.7))
    force = total_wind_force(app, cloth)
    assert np.abs(force).max() < 1e-12, f"edge-on force {force} N, want 0"


def test_inclined_plate_gets_drag_cos_theta_along_normal_and_lift_across_the_flow(make_app):
    app = make_app()
    cloth = plate(app)                                             # normal +z, area 1 m²
    theta = math.radians(30.0)                                     # between normal and wind
    speed = 6.0
    u = speed * np.array([math.sin(theta), 0.0, math.cos(theta)])
    wind = app.spawn(Wind(velocity=u, drag_coefficient=CD, lift_coefficient=0.0, air_density=RHO))
    drag = total_wind_force(app, cloth)
    q = 0.5 * RHO * speed**2                                       # dynamic pressure [Pa]
    assert np.allclose(drag, [0.0, 0.0, q * CD * math.cos(theta)], rtol=1e-9, atol=1e-12), f"drag {drag} N"
    w = app.get(wind, Wind)
    w.drag_coefficient, w.lift_coefficient = 0.0, 0.8
    lift = total_wind_force(app, cloth)
    want = q * 0.8 * math.cos(theta) * math.sin(theta)
    assert abs(lift @ u) < 1e-9 * want * speed, f"lift {lift} N is not perpendicular to the flow"
    size = np.linalg.norm(lift)
    assert size == pytest.approx(want, rel=1e-9), f"|lift| {size:.6f} N, want {want:.6f} N"


def test_provot_viscous_force_on_plate_moving_through_still_air(make_app):
    app = make_app()
    cloth = plate(app, size=2.0, density=5.0)
    v = np.array([0.3, -0.4, 1.2])
    cloth.v[:] = v
    c_vi = 0.8                                                     # [N·s/m³]
    app.spawn(Wind(velocity=(0.0, 0.0, 0.0), drag_coefficient=0.0, lift_coefficient=0.0, viscosity=c_vi))
    force = total_wind_force(app, cloth)
    n = np.array([0.0, 0.0, 1.0])
    expected = c_vi * 4.0 * (n @ (0.0 - v)) * n                    # C·[n·(u − v)]·n with C = C_vi·A
    assert np.allclose(force, expected, rtol=1e-9, atol=1e-12), f"viscous force {force} N, want {expected} N"


def test_wind_never_drives_a_light_sheet_past_the_air_speed(make_app):
    # silk in a 15 m/s wind relaxes at ρ·C_D·U/density ≈ 300/s: explicit forces held over 1/60 s would
    # overshoot 5×; the stability cap must bring the sheet up to the wind speed without passing it
    app = make_app()
    app.insert_resource(Gravity((0.0, 0.0, 0.0)))
    cloth = Cloth.from_mesh(mesh.grid(6, 6, 0.5, 0.5), material=ClothMaterial.preset("silk", damping=0.0))
    app.spawn(cloth)
    app.spawn(Wind(velocity=(0.0, 0.0, 15.0), lift_coefficient=0.0))
    speeds = []
    for _ in range(30):
        app.step()
        speeds.append(cloth.v[:, 2].mean())
    assert max(speeds) <= 15.0 + 1e-9, f"sheet reached {max(speeds):.3f} m/s in a 15 m/s wind"
    assert speeds[-1] > 14.0, f"sheet only at {speeds[-1]:.3f} m/s after 0.5 s in a 15 m/s wind"
    assert np.all(np.diff(speeds) >= -1e-9), "the sheet's speed oscillated"


def test_flag_pinned_along_its_left_edge_streams_downwind(make_app):
    def flag(wind: Wind | None) -> tuple[float, float]:
        app = make_app(substeps=8)
        sheet = mesh.grid(20, 10, 2.0, 1.0, center=(1.0, 0.0, 0.0))   # pole at x = 0, front +z
        cloth = Cloth.from_mesh(sheet)
        app.spawn(cloth, Pin.edge(sheet, "left"))
        if wind is not None:
            app.spawn(wind)
        app.step(frames=120)
        free = np.ones(cloth.particle_count, bool)
        free[sheet.side("left")] = False
        x = cloth.x
        tri = cloth.triangles
        normal = np.cross(x[tri[:, 1]] - x[tri[:, 0]], x[tri[:, 2]] - x[tri[:, 0]])
        normal /= np.linalg.norm(normal, axis=1)[:, None]
        assert cloth.rejected_steps == 0
        return float(x[free, 2].mean()), float(np.abs(normal[:, 2]).mean())

    calm_z, _ = flag(None)
    windy_z, facing = flag(Wind(velocity=(0.0, 0.0, 8.0), gust=0.3, turbulence=0.2, seed=4))
    # a flag that streams lies along the wind: its free particles ~1 m downwind, normals across the wind
    assert abs(calm_z) < 1e-6, f"calm flag moved {calm_z:.3g} m along z"
    assert windy_z > 0.8, f"flag's free particles only {windy_z:.3f} m downwind, want > 0.8 m of its 2 m"
    assert facing < 0.4, f"mean |n·ŵ| = {facing:.3f}: the flag still faces the wind"


def test_gusty_wind_is_bit_identical_across_runs_and_varies_in_time(make_app):
    def run(seed: int) -> np.ndarray:
        app = make_app(substeps=4)
        sheet = mesh.grid(10, 6, 1.0, 0.6)
        cloth = Cloth.from_mesh(sheet)
        app.spawn(cloth, Pin.edge(sheet, "left"))
        app.spawn(Wind(velocity=(1.0, 0.0, 6.0), gust=0.5, gust_period=0.5, turbulence=0.4, seed=seed))
        app.step(frames=40)
        return cloth.x.copy()

    first, second, other = run(11), run(11), run(12)
    assert np.array_equal(first, second), "same seed, different positions"
    assert not np.array_equal(first, other), "a different seed gave the same wind"
    wind = Wind(velocity=(5.0, 0.0, 0.0), gust=0.5, gust_period=2.0, turbulence=0.3, seed=3)
    factors = np.array([gust_factor(wind, t) for t in np.linspace(0.0, 10.0, 201)])
    assert factors.min() >= 0.5 - 1e-12 and factors.max() <= 1.5 + 1e-12, "gust factor outside 1 ± gust"
    assert factors.max() - factors.min() > 0.3, f"gusts barely vary: {factors.min():.3f} … {factors.max():.3f}"
    points = np.array([[0.0, 0.0, 0.0], [0.7, 0.2, 0.0]])
    u0, u1 = air_velocity([wind], [], points, 1.0), air_velocity([wind], [], points, 1.5)
    assert not np.allclose(u0[0], u0[1]), "turbulence does not vary in space"
    assert not np.allclose(u0, u1), "the air does not change in time"
    assert np.all(np.linalg.norm(u0 - 5.0 * gust_factor(wind, 1.0) * np.array([1, 0, 0]), axis=1) <= 0.3 * 5.0 + 1e-12)


def test_blower_cone_blows_along_its_axis_and_fades_outside():
    blower = Blower(origin=(0.0, 1.0, 2.0), direction=(0.0, 0.0, -2.0), speed=10.0, radius=0.2, spread=0.1,
                    active=True)
    at = np.array([[0.0, 1.0, 2.0 - 1e-9],        # nozzle: full speed along -z
                   [0.0, 1.0, 1.0],               # 1 m out: slowed by (r / R)²
                   [0.0, 1.0, 3.0],               # behind the nozzle: still air
                   [1.0, 1.0, 1.0]])              # outside the cone
    u = air_velocity([], [blower], at, 0.0)
    rim = 0.2 + math.tan(0.1)
    assert np.allclose(u[0], [0.0, 0.0, -10.0], atol=1e-6)
    assert np.allclose(u[1], [0.0, 0.0, -10.0 * (0.2 / rim) ** 2], rtol=1e-12)
    assert np.allclose(u[2:], 0.0)


def test_wind_and_blower_reject_bad_values():
    with pytest.raises(ValueError, match=r"Wind\.gust = 1\.5"):
        Wind(gust=1.5)
    with pytest.raises(ValueError, match=r"Wind\.gust_period = 0\.0"):
        Wind(gust_period=0.0)
    with pytest.raises(ValueError, match=r"Wind\.velocity\[1\] = nan"):
        Wind(velocity=(1.0, float("nan"), 0.0))
    with pytest.raises(ValueError, match=r"Wind\.seed = -1"):
        Wind(seed=-1)
    with pytest.raises(ValueError, match=r"Blower\.direction"):
        Blower(direction=(0.0, 0.0, 0.0))
    with pytest.raises(ValueError, match=r"Blower\.radius = 0\.0"):
        Blower(radius=0.0)
