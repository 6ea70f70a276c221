"""The per-step kernels' NumPy stand-ins (systems/xpbd/cold.py, systems/shared/cold_held.py, systems/collision/cold.py,
systems/coupling/cold.py), which run only while a compile worker compiles the kernels on an empty cache
(``loom.launch.cold_kernels``).

The prediction and velocity update are the kernels' formulas: the same numbers to the bit. The constraint solve
and the yarns' settle pass are a different algorithm (Jacobi sweeps), so they are held to physical bounds instead:
a hanging sheet's stretch links stay within 1.1 × rest with no deformation limit, a sheet dropped on a sphere rests
on it (no particle inside it), no step is refused; and a scene switched from stand-ins to the kernels mid-run
steps on without a jump. The contacts' push and friction, the max distance, the colliders' preparation and the
shapes' distances give the kernels' numbers where the kernels neither sweep nor pinch; the coupling's twins are the
kernels' own source. No test here starts a worker: the stand-ins are bound as a worker would bind them
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
    """The contacts' stand-in (push and friction, no sweeps) and the settle pass's, which keeps no correction into a
    contact's surface: a sheet dropped on a ball ends on it, no particle deeper inside than the cloth's thickness, no
    step refused."""
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


# --- the collisions' and the coupling's stand-ins (systems/collision/cold.py, systems/coupling/cold.py) -----------

@pytest.fixture
def only_twins(monkeypatch):
    """``only_twins(*kernels)``: bind the call sites of just these kernels (and ``hold``'s, which their stand-ins
    read) to their stand-ins, as a running worker would while it compiles them; every other site calls its kernel."""
    def bind(*kernels):
        not_ready = set(kernels) | {hold}
        monkeypatch.setattr(cold_kernels, "ENABLED", True)
        monkeypatch.setattr(cold_kernels, "_bound", [])
        monkeypatch.setattr(cold_kernels, "ready", lambda kernel: kernel not in not_ready)
        cold_kernels.while_compiling(lambda: True)
    yield bind
    cold_kernels.unbind()
    cold_kernels.while_compiling(lambda: False)


def _local_points(rng: np.random.Generator, n: int = 400) -> np.ndarray:
    """Points about a 0.3 m shape: inside, outside, on its axes and planes of symmetry (ties in the kernels'
    branches)."""
    p = rng.uniform(-0.6, 0.6, size=(n, 3))
    p[: n // 8, [0, 2]] = 0.0                                   # on the y axis
    p[n // 8: n // 4, 1] = 0.0                                  # in the middle plane
    p[n // 4: n // 3] *= 0.2                                    # deep inside
    return p


def test_each_basic_shapes_numpy_distance_gives_its_kernels_distance_and_normal():
    """The contact stand-in's signed distances (``numpy_distance_of``, or the kernel's source point by point for a
    shape without one) against each basic shape's numba kernel, at points inside, outside and on its axes: the same
    distance and outward normal to 1e-12."""
    from loom.components.collider import SHAPES, Packing
    from loom.systems.collision import cold as collision_cold
    from loom.systems.shared import shapes
    from tests.shape_examples import example
    rng = np.random.default_rng(11)
    basic = [shape for shape in SHAPES if shape.basic]
    assert len(basic) >= 6
    for shape_class in basic:
        shape = example(shape_class)
        a, b, c, _ = shape.pack(Packing())
        p = _local_points(rng)
        got = np.stack(collision_cold.numpy_sdf(shape_class, a, b, c, p[:, 0], p[:, 1], p[:, 2]), axis=1)
        kernel = shapes._DISTANCES[shape_class]
        want = np.array([kernel(a, b, c, *point) for point in p])
        assert np.allclose(got, want, rtol=0.0, atol=1e-12), shape_class.__name__
        assert (got[:, 0] < 0).any() and (got[:, 0] > 0).any(), shape_class.__name__      # both sides met


def test_the_colliders_prepared_and_found_near_by_numpy_are_the_kernels():
    """``prepare_numpy`` and ``near_numpy`` against the kernels' own source (``environment._prepare``,
    ``_near_colliders``) on random poses, planes and bounded shapes and cloths: the same poses, boxes and motion
    bounds, the same near colliders, in 200 random scenes."""
    from types import SimpleNamespace

    from loom.components.collider import PLANE
    from loom.systems.collision import cold as collision_cold, environment
    rng = np.random.default_rng(3)
    k = 6

    def frames():
        return SimpleNamespace(rot0=np.zeros((k, 3, 3)), rot1=np.zeros((k, 3, 3)), pos0=np.zeros((k, 3)),
                               pos1=np.zeros((k, 3)), bound=np.zeros(k), extent=np.zeros((k, 3)), motion=np.zeros(k),
                               near=np.zeros(k, np.int64))
    found_any = False
    for _ in range(200):
        q0, q1 = rng.normal(size=(k, 4)), rng.normal(size=(k, 4))
        pose0 = np.concatenate((q0 / np.linalg.norm(q0, axis=1)[:, None], rng.normal(size=(k, 3))), axis=1)
        moved = pose0[:, 4:] + 0.01 * rng.normal(size=(k, 3))
        pose1 = np.concatenate((q1 / np.linalg.norm(q1, axis=1)[:, None], moved), axis=1)
        kind = rng.integers(0, 5, k).astype(np.int32)
        extents = np.abs(rng.normal(size=(k, 3)))
        normal = rng.normal(size=(k, 3))
        extents[kind == PLANE] = (normal / np.linalg.norm(normal, axis=1)[:, None])[kind == PLANE]
        col = SimpleNamespace(shapes=SimpleNamespace(kind=kind), pose0=pose0, pose1=pose1,
                              bound=np.abs(rng.normal(size=k)) * (rng.random(k) > 0.2), extents=extents)
        mine, theirs = frames(), frames()
        collision_cold.prepare_numpy(col, mine, 0.25, 0.5)
        environment._prepare.py_func(col, theirs, 0.25, 0.5)
        for name in ("rot0", "rot1", "pos0", "pos1", "bound", "extent", "motion"):
            assert np.allclose(getattr(mine, name), getattr(theirs, name), rtol=0.0, atol=1e-12), name
        x = rng.normal(size=(40, 3))
        cloth = SimpleNamespace(x_prev=x + 0.01 * rng.normal(size=x.shape), x=x,
                                inv_mass=np.where(rng.random(40) > 0.1, 1.0, 0.0), thickness=0.01)
        margin = 0.01 * rng.random(k)
        count = collision_cold.near_numpy(cloth.inv_mass, cloth.x_prev, x, 0.01, kind, margin, mine)
        want = environment._near_colliders.py_func(cloth, kind, margin, theirs)
        assert mine.near[:count].tolist() == want.tolist()
        found_any = found_any or 0 < count < k
    assert found_any                                                   # some scenes found some colliders near


def _sheet_on_a_ball(app: App) -> Cloth:
    """A sheet laid over a ball of radius 0.3 m and a box beside it, sinking 4 mm into both and sliding sideways at
    0.3 m/s (friction meets a real slip), one-way colliders; returns the cloth."""
    from loom.components import Box
    app.spawn(Collider(Sphere(0.3), friction=0.6), Transform(position=(0.0, 0.0, 0.0)))
    app.spawn(Collider(Box((0.2, 0.1, 0.2)), friction=0.4), Transform(position=(0.55, 0.1, 0.0)))
    sheet = mesh.grid(12, 12, 1.2, 0.8, center=(0.2, 0.3 + 0.01 - 0.004, 0.0), plane="xz")
    cloth = Cloth.from_mesh(sheet, "cotton")
    app.spawn(cloth)
    cloth.x[:, 1] = np.maximum(cloth.x[:, 1], np.sqrt(np.maximum(0.09 - cloth.x[:, 0] ** 2 - cloth.x[:, 2] ** 2,
                                                                   0.0)) + 0.006)
    cloth.x[np.abs(cloth.x[:, 0] - 0.55) < 0.2, 1] = 0.2 + 0.006
    cloth.v[:, 0] = 0.3
    return cloth


def test_the_contact_stand_in_gives_the_kernels_push_and_friction(only_twins):
    """The contact kernel's push (Fuhrmann 2003 eq. 18) and Coulomb friction (eqs. 19–21) without its swept paths
    and pinches (none happens here: slow particles, no surfaces facing each other): a sheet sinking into a ball and a
    box while sliding, stepped once with the contacts' stand-ins and once with the kernels, every other kernel
    compiled: the same positions, contacts and collider impulses to 1e-9, and the sheet was pushed."""
    from loom.components import ColliderSet
    from loom.systems.collision import cold as collision_cold, environment
    results = []
    for twins in (False, True):
        if twins:
            only_twins(environment._touches, environment._COLLIDE_BASIC[0])
        app = App(dt=DT, substeps=4, threads=1).add_plugin(DefaultPlugins)
        try:
            cloth = _sheet_on_a_ball(app)
            before = cloth.x.copy()
            app.step(1)
            if twins:
                bound = cold_kernels.bound_to(environment.__name__, "_collide_basic_call")
                assert bound is collision_cold.collide_numpy
            results.append((before, cloth.x.copy(), cloth.contact.copy(), app.resource(ColliderSet).impulse.copy()))
            assert cloth.rejected_steps == 0
        finally:
            app.close()
    (before, x0, c0, j0), (_, x1, c1, j1) = results
    assert np.abs(j0).max() > 1e-4 and np.abs(x0 - before).max() > 1e-3   # real contacts
    assert np.allclose(x1, x0, rtol=0.0, atol=1e-9)
    assert np.allclose(c1, c0, rtol=0.0, atol=1e-9)
    assert np.allclose(j1, j0, rtol=0.0, atol=1e-9)


def test_the_max_distance_stand_in_gives_the_kernels_numbers():
    """``project_numpy`` against ``max_distance._project`` on random particles, references, distances (some 0:
    pinned to the reference), normals and a capsule backstop, some particles armed, some fixed: the same positions
    and arming to 1e-12."""
    from loom.systems.collision import cold as collision_cold, max_distance
    rng = np.random.default_rng(4)
    n = 300
    for half_length in (0.0, 0.1):
        x = rng.normal(scale=0.3, size=(n, 3))
        inv_mass = np.where(rng.random(n) > 0.1, 1.0, 0.0)
        start, end = rng.normal(scale=0.2, size=(n, 3)), rng.normal(scale=0.2, size=(n, 3))
        distance = np.where(rng.random(n) > 0.1, rng.uniform(0.0, 0.4, n), 0.0)
        ns, ne = rng.normal(size=(n, 3)), rng.normal(size=(n, 3))
        ns[:5] = ne[:5] = 0.0                                           # no normal: no backstop there
        offset = rng.uniform(0.0, 0.05, n)
        axis = rng.normal(size=(2, 3))
        armed = rng.random(n) > 0.5
        out = [(x.copy(), armed.copy()) for _ in range(2)]
        for (xs, arm), f in zip(out, (max_distance._project, collision_cold.project_numpy)):
            f(xs, inv_mass, start, end, distance, ns, ne, offset, 0.25, axis, half_length, arm, 0.75)
        assert np.allclose(out[1][0], out[0][0], rtol=0.0, atol=1e-12)
        assert np.array_equal(out[1][1], out[0][1])
        assert np.abs(out[0][0] - x).max() > 0.01                       # it projected some


def test_the_coupling_twins_give_the_kernels_body_motion(only_twins):
    """The pymunk bridge's kernels as Python (their own source: systems/coupling/cold.py): a ball dropped on a cloth
    bed (tests/test_pymunk_bridge.py's trampoline) with the coupling's twins and with its kernels, every other kernel
    compiled: the ball's path is the same to 1e-9 over 50 steps, through its landing."""
    from loom.systems.coupling import pymunk_bridge
    from tests.test_pymunk_bridge import trampoline
    paths = []
    for twins in (False, True):
        if twins:
            only_twins(pymunk_bridge._begin_rows, pymunk_bridge._couple_substep, pymunk_bridge._couple_end)
        app = App(dt=DT, substeps=4, threads=1).add_plugin(DefaultPlugins)
        try:
            ball, cloth, step = trampoline(app, height=0.25)
            path = []
            for _ in range(50):
                step()
                path.append((ball.position.y, ball.velocity.y))
            if twins:
                assert cold_kernels.bound_to(pymunk_bridge.__name__, "_couple_substep_call") is not None
            assert cloth.rejected_steps == 0
            paths.append(np.array(path))
        finally:
            app.close()
    assert paths[0][:, 1].min() < -1.0 and paths[0][-1, 1] > paths[0][:, 1].min() + 0.5   # it fell and was caught
    assert np.allclose(paths[1], paths[0], rtol=0.0, atol=1e-9)
