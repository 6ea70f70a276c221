"""The per-step kernels' NumPy stand-ins (systems/xpbd/cold.py, systems/shared/cold_held.py), which run only while a
compile worker compiles the kernels on an empty cache (``loom.launch.cold_kernels``).

The prediction and velocity update are the kernels' formulas: the same numbers to the bit. The constraint solve
and the yarns' settle pass are a different algorithm (Jacobi sweeps), so they are held to physical bounds instead:
a hanging sheet's stretch links stay within 1.1 × rest with no deformation limit, a sheet dropped on a sphere rests
on it (no particle inside it), no step is refused; and a scene switched from stand-ins to the kernels mid-run
steps on without a jump. No test here starts a worker: the stand-ins are bound as a worker would bind them
(``while_compiling``) with every kernel reported not ready.
"""
from __future__ import annotations

import numba
import numpy as np
import pytest

from loom.components import STRETCH, Cloth, Collider, Pin, Sphere, Transform
from loom.engine import App, mesh
from loom.launch import cold_kernels
from loom.systems import DefaultPlugins
from loom.systems.shared.cold_held import PyHeld
from loom.systems.shared.held import hold
from loom.systems.xpbd import cold, constraints, predict

G = 9.81
DT = 1.0 / 60.0


@pytest.fixture
def stand_ins(monkeypatch):
    """Bind every per-step call site to its stand-in, as a running worker would on an empty cache; ``running[0] =
    False`` makes the next step boundary rebind the kernels (the worker stopped)."""
    running = [True]
    monkeypatch.setattr(cold_kernels, "ENABLED", True)
    monkeypatch.setattr(cold_kernels, "_bound", [])
    monkeypatch.setattr(cold_kernels, "ready", lambda kernel: not running[0])
    cold_kernels.while_compiling(lambda: running[0])
    yield running
    cold_kernels.unbind()
    cold_kernels.while_compiling(lambda: False)


def test_the_prediction_and_update_stand_ins_give_the_kernels_numbers():
    rng = np.random.default_rng(7)
    n = 60
    inv_mass = rng.random(n)
    inv_mass[:4] = 0.0                                     # pinned particles keep their velocity
    force, x, v = rng.normal(size=(n, 3)), rng.normal(size=(n, 3)), rng.normal(size=(n, 3))
    a = [x.copy(), v.copy(), np.zeros((n, 3))]
    b = [x.copy(), v.copy(), np.zeros((n, 3))]
    predict._predict(inv_mass, force, 0.0, -G, 0.0, 1 / 960, *a)
    cold.predict_numpy(inv_mass, force, 0.0, -G, 0.0, 1 / 960, *b)
    assert all(np.array_equal(p, q) for p, q in zip(a, b))
    v1, v2 = v.copy(), v.copy()
    predict._update(x, a[2], 960.0, 0.995, v1)
    cold.update_numpy(x, a[2], 960.0, 0.995, v2)
    assert np.array_equal(v1, v2)


@numba.njit
def _scaled_sum(held):
    value = held.value
    value.force[0, 0] += 1.0
    return (value.force[:, 0] * value.mass).sum()


def _aero(n: int):
    """A Loom namedtuple to hold (never one of a test module: ``hold`` is cached, and numba's cache index of it
    would then name a module other processes cannot import)."""
    from loom.systems.forces.wind import AIR_ROWS, AeroArrays
    return AeroArrays(np.zeros((0, 3), np.int32), np.zeros((n, 3)), np.zeros((n, 3)), np.full(n, 2.0),
                      np.zeros((n, 3)), np.zeros((n, 3)), np.zeros(n), np.zeros((AIR_ROWS, n)))


def test_a_compiled_kernel_takes_a_py_held_as_the_held_struct():
    """A ``PyHeld`` made while ``hold`` was bound to it stays in a system's tables; a compiled kernel rebound later
    takes it as the ``Held`` it stands for: the same numba type (no second compile), the same arrays, written in
    place."""
    value = _aero(3)
    assert _scaled_sum(hold(value)) == 2.0 and value.force[0, 0] == 1.0
    py = PyHeld(value)
    assert py._numba_type_ == numba.typeof(hold(value))
    assert _scaled_sum(py) == 4.0 and value.force[0, 0] == 2.0 and len(_scaled_sum.signatures) == 1


def _hanging_sheet(app: App, n: int = 14, **options) -> tuple[int, Cloth]:
    sheet = mesh.grid(n, n, 0.7, 0.7, center=(0.0, 1.0, 0.0), plane="xy")
    cloth = Cloth.from_mesh(sheet, "cotton", **options)
    return app.spawn(cloth, Pin.edge(sheet, "top")), cloth


def _stretch(cloth: Cloth) -> float:
    """Largest length / rest of the cloth's stretch links [-]."""
    d = cloth.x[cloth.link_i] - cloth.x[cloth.link_j]
    ratio = np.sqrt((d * d).sum(axis=1)) / cloth.link_rest
    return float(ratio[cloth.link_kind[cloth.link_order] == STRETCH].max())


def test_the_solve_stand_ins_keep_a_hanging_sheet_within_1_1_rest_with_no_limit(stand_ins):
    """Jacobi sweeps instead of the coloured Gauss–Seidel and the yarns' line solve, the sheet's deformation limit
    and tethers off so the stand-ins alone hold it: every stretch link within 1.1 × rest at every step of 2 s of
    swinging from a pinned edge, no step refused, and it hangs down (it is solved, not frozen)."""
    app = App(dt=DT, substeps=8, threads=1).add_plugin(DefaultPlugins)
    try:
        _, cloth = _hanging_sheet(app, stretch_limit=None, strain_limit=None, tethers=False)
        cloth.x[:, 2] += 0.3 * (cloth.rest_x[:, 1] - 1.35)         # start tilted: it swings
        top = cloth.x[:, 1].max()
        worst = 0.0
        for _ in range(120):
            app.step(1)
            assert cold_kernels.bound_to(constraints.__name__, "_solve_serial_call") is cold.solve_numpy
            worst = max(worst, _stretch(cloth))
        assert worst <= 1.1, f"stretch {worst:.3f} × rest"
        assert cloth.rejected_steps == 0
        assert cloth.x[:, 1].min() < top - 0.6                     # hanging its length down from the pins
    finally:
        app.close()


def test_a_sheet_dropped_on_a_sphere_rests_on_it_with_the_stand_ins(stand_ins):
    """The contacts (compiled) and the stand-ins' settle pass, which keeps no correction into a contact's surface:
    a sheet dropped on a ball ends on it, no particle deeper inside than the cloth's thickness, no step refused."""
    app = App(dt=DT, substeps=8, threads=1).add_plugin(DefaultPlugins)
    try:
        radius = 0.3
        app.spawn(Collider(Sphere(radius)), Transform(position=(0.0, 0.0, 0.0)))
        sheet = mesh.grid(14, 14, 0.9, 0.9, center=(0.0, 0.45, 0.0), plane="xz")
        cloth = Cloth.from_mesh(sheet, "cotton")
        app.spawn(cloth)
        for _ in range(90):
            app.step(1)
            depth = radius - np.linalg.norm(cloth.x, axis=1)
            assert depth.max() <= cloth.material.thickness, f"a particle {depth.max() * 1000:.1f} mm inside the sphere"
        assert cloth.rejected_steps == 0
        top = int(np.argmin(np.linalg.norm(cloth.rest_x - cloth.rest_x.mean(axis=0), axis=1)))
        assert abs(np.linalg.norm(cloth.x[top]) - radius) < 0.05     # its middle rests on the top of the ball
    finally:
        app.close()


def test_a_scene_switched_from_stand_ins_to_kernels_mid_run_steps_on_without_a_jump(stand_ins):
    """A swinging sheet on the stand-ins for 1 s, then the worker 'stops': the next step boundary rebinds the
    kernels (the ``PyHeld``s in the tables go to the compiled solve) and it steps on: no step refused, the step
    across the switch moves no particle faster than the swing's fastest before it plus what gravity adds in a
    step, and the call sites are the kernels again."""
    app = App(dt=DT, substeps=8, threads=1).add_plugin(DefaultPlugins)
    try:
        _, cloth = _hanging_sheet(app)
        cloth.x[:, 2] += 0.3 * (cloth.rest_x[:, 1] - 1.35)
        fastest = 0.0
        for _ in range(60):
            before = cloth.x.copy()
            app.step(1)
            fastest = max(fastest, float(np.linalg.norm(cloth.x - before, axis=1).max()) / DT)
        assert cold_kernels.bound_to(constraints.__name__, "_solve_serial_call") is cold.solve_numpy
        stand_ins[0] = False                                       # the worker stopped: kernels at the boundary
        for step in range(30):
            before = cloth.x.copy()
            app.step(1)
            speed = float(np.linalg.norm(cloth.x - before, axis=1).max()) / DT
            assert speed <= fastest + 2 * G * DT, f"step {step} after the switch: {speed:.2f} m/s"
        assert cold_kernels.bound_to(constraints.__name__, "_solve_serial_call") is None
        assert cold_kernels.bound_to(constraints.__name__, "_hold_call") is None
        assert cold_kernels.bound_to(predict.__name__, "_predict_call") is None
        assert cloth.rejected_steps == 0 and _stretch(cloth) <= 1.1
    finally:
        app.close()


def test_the_wind_stand_in_gives_the_kernels_forces_to_rounding():
    """The same model in array form (module docstring of systems/forces/cold.py): a flag's wind forces, with
    turbulence, a zone and a blower, within 1e-9 N + 1e-5 of the kernel's (its waves a series to 1e-6)."""
    from loom.components import Blower, Wind, WindSphere
    from loom.systems.forces import cold as wind_cold, wind
    sheet = mesh.grid(9, 7, 0.8, 0.5, center=(0.0, 1.0, 0.0), plane="xy")
    cloth = Cloth.from_mesh(sheet, "cotton")
    rng = np.random.default_rng(5)
    cloth.x[:] += rng.normal(scale=0.05, size=cloth.x.shape)
    cloth.v[:] = rng.normal(scale=0.5, size=cloth.v.shape)
    winds = [Wind(velocity=(5.0, 0.0, 1.0), gust=0.3, turbulence=0.4, seed=3),
             Wind(velocity=(0.0, 0.0, 3.0), region=WindSphere(center=(0.2, 1.0, 0.0), radius=0.4, edge=0.2))]
    blowers = [Blower(origin=(-1.0, 1.0, 0.3), direction=(1.0, 0.0, 0.0), speed=6.0, radius=0.2)]
    packed = wind._pack(winds, blowers, 0.7)
    coefficients = (1.2, 1.0, 0.3, 0.05, DT)
    forces = []
    for kernel in (wind._aero_forces, wind_cold.aero_numpy):
        cloth.force[:] = 0.0
        n = cloth.particle_count
        value = wind.AeroArrays(cloth.triangles, cloth.x, cloth.v, cloth.mass, cloth.force, np.zeros((n, 3)),
                                np.zeros(n), np.zeros((wind.AIR_ROWS, n)))
        kernel(hold(value) if kernel is wind._aero_forces else PyHeld(value), *packed, 0.7, *coefficients)
        forces.append(cloth.force.copy())
    assert np.abs(forces[0]).max() > 0.01                                   # a real wind
    assert np.allclose(forces[1], forces[0], rtol=1e-5, atol=1e-9)


def test_the_limit_stand_in_takes_most_of_a_soft_sheets_stretch_out(stand_ins):
    """Provot's limit as a stand-in (systems/shared/cold_limits.py: every over-long link shortened at once, a few
    passes): a soft sheet (stretch compliance 3e-3 m/N, no tethers, no yarns) hanging from an edge, on the solve's
    stand-in, stretches past 1.1 × rest without a limit; with a 2 % stretch limit on the limit's stand-in it stays
    within 1.1 × rest and keeps less than half of that excess. No step refused."""
    worst = {}
    for limit in (None, 0.02):
        app = App(dt=DT, substeps=8, threads=1).add_plugin(DefaultPlugins)
        try:
            _, cloth = _hanging_sheet(app, stretch_limit=limit, strain_limit=None, tethers=False, yarns=False,
                                      stretch_compliance=3e-3)
            worst[limit] = 0.0
            for _ in range(120):
                app.step(1)
                worst[limit] = max(worst[limit], _stretch(cloth))
            assert cloth.rejected_steps == 0
            assert cold_kernels.bound_to("loom.systems.shared.distance_limits", "_limit_substep_call") is not None
        finally:
            app.close()
    assert worst[None] > 1.1, worst
    assert worst[0.02] <= 1.1 and worst[0.02] - 1.0 < 0.5 * (worst[None] - 1.0), worst
