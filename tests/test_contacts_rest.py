"""Contacts hold and cloth rests (issue 44, items 7 and 3).

Item 7: no particle ends a step inside a collider, and the cloth's thickness margin (cloth thickness + collider
thickness: the contact reach) is kept to within 1 % of the cloth's thickness. Watched at the end of every step
before the guard (``before=ClothSet.GUARD``), so a step the guard would rewind is still seen, and measured with
the tests' own NumPy signed distances (tests/shape_examples.py, not the contact kernels'), at the
colliders' end-of-step poses (``ColliderSet.pose1``). The scenes are the cape game (600 frames: the cape against the
hero's two-way box and the level's ledges) and the drape game's tablecloth landing on its round table. The same
watch reads the warp and weft links against the stretch limit at each step's end: the contacts must not hold at
the limit's expense.

Item 3: default cotton (``ClothMaterial.preset("cotton")``, 16 substeps) dropped on a sphere, a box table and a
round table is still once settled: every particle's frame-to-frame speed |x(t) − x(t − dt)|/dt at most 1 mm/s in
every frame of the seventh second, with the cloth's sleep turned off (a sleeping cloth does not move at all) and
the sheet still on its table.
"""
from __future__ import annotations

import numpy as np
import pytest

from loom import components
from loom.components import STRETCH, Cloth, ClothMaterial, Collider, ColliderSet, Transform
from loom.components.collider import Box, Cylinder, Plane, Sphere
from loom.engine import App, Stage, mesh
from loom.games import cape, drape
from loom.systems.collision import KeepOutPlugin
from loom.systems.sets import ClothSet
from shape_examples import reference

SLEEP = getattr(components, "Sleep", None)
"""The sleep component, where the package has one: the rest tests turn it off (``Sleep(enabled=False)``), so a cloth
that stops because it was put to sleep (below its 50 mm/s threshold) does not count as still."""
MARGIN_TOLERANCE = 0.01
"""Deepest a particle may end a step inside its contact reach, as a share of the cloth's thickness [-] (item 7)."""
LIMIT_SLACK = 1e-9
"""Relative rounding a link may be over its stretch limit by [-] (the limit's own test: ``distance_limits.SLACK``)."""
REST_SPEED = 1e-3
"""Fastest a particle of a cloth at rest may move frame to frame [m/s] (item 3)."""


def _rotation(q: np.ndarray) -> np.ndarray:
    """Rotation matrix of the unit quaternion q = (w, x, y, z)."""
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def clearance(app: App, cloth: Cloth) -> float:
    """Least d − reach [m] over the cloth's free particles and every packed collider: d the signed distance to the
    collider's shape at its end-of-step pose, reach = cloth thickness + collider thickness (inf: no collider)."""
    packed = app.resources.get(ColliderSet)
    free = cloth.inv_mass > 0.0
    worst = np.inf
    if packed is None or not free.any():
        return worst
    for c in range(packed.count):
        local = (cloth.x[free] - packed.pose1[c, 4:]) @ _rotation(packed.pose1[c, :4])
        d = reference(app.get(int(packed.entities[c]), Collider).shape)(local)
        worst = min(worst, float(d.min()) - (cloth.material.thickness + float(packed.margin[c])))
    return worst


def over_limit(cloth: Cloth) -> float:
    """Largest l / ((1 + stretch_limit)·l₀) − 1 over the cloth's warp and weft links [-] (≤ 0: the limit holds;
    −inf: no stretch limit)."""
    if cloth.material.stretch_limit is None:
        return -np.inf
    stretch = cloth.link_kind[cloth.link_order] == STRETCH
    length = np.linalg.norm(cloth.x[cloth.link_i[stretch]] - cloth.x[cloth.link_j[stretch]], axis=1)
    return float((length / ((1.0 + cloth.material.stretch_limit) * cloth.link_rest[stretch])).max() - 1.0)


class ContactWatch:
    """POST_STEP, before the guard: the least clearance (``clearance``) of every cloth at the end of each step, and
    the most any warp or weft link is over its stretch limit then (``over_limit``): the contacts must not hold at
    the limit's expense."""

    def __init__(self, app: App) -> None:
        self.worst: list[float] = []
        self.over: list[float] = []
        app.add_system(self.record, Stage.POST_STEP, name="contact_watch", before=ClothSet.GUARD)

    def record(self, app: App, dt: float) -> None:
        self.worst.append(min((clearance(app, cloth) for _, cloth in app.query(Cloth)), default=np.inf))
        self.over.append(max((over_limit(cloth) for _, cloth in app.query(Cloth)), default=-np.inf))

    def check_limit(self) -> None:
        over = np.array(self.over)
        bad = np.flatnonzero(over > LIMIT_SLACK)
        if bad.size:
            raise OverLimit(f"{bad.size} of {over.size} steps ended with a warp or weft link over its stretch limit, "
                            f"by up to {over.max() * 100:.3f} % of the limit length (step {over.argmax() + 1})")

    def check(self, thickness: float) -> None:
        worst = np.array(self.worst)
        deep = np.flatnonzero(worst < -MARGIN_TOLERANCE * thickness)
        if deep.size:
            raise InsideReach(f"{deep.size} of {worst.size} steps ended with a particle inside its contact reach, "
                              f"worst {-worst.min() * 1000:.3f} mm (step {worst.argmin() + 1}), bound "
                              f"{MARGIN_TOLERANCE * thickness * 1000:.3f} mm")


class OverLimit(AssertionError):
    """A step ended with a warp or weft link longer than (1 + stretch_limit) × rest: the one failure a known-bad case
    is marked xfail for."""


class InsideReach(AssertionError):
    """A step ended with a particle inside its contact reach: the one failure a known-bad case is marked xfail
    for (a refused step, or a scene that never reached its collider, still fails it)."""


def _cape_run(new_app, *, keep_out: bool) -> tuple:
    """The cape game's scene, 600 steps, watched (with the opt-in ``KeepOutPlugin`` when ``keep_out``)."""
    app = new_app(plugins=True, dt=cape.DT, substeps=cape.SUBSTEPS, threads=1)
    if keep_out:
        app.add_plugin(KeepOutPlugin)
    cloth, _ = cape.build_scene(app)
    watch = ContactWatch(app)
    app.step(600)
    assert cloth.rejected_steps == 0 and len(watch.worst) == 600
    return cloth, watch


def test_the_cape_never_ends_a_step_inside_the_hero_or_the_level_with_keep_out(new_app):
    """The cape game, 600 frames, with the last push-out (``KeepOutPlugin``): the cape against the hero's two-way box
    and the level never ends a step inside."""
    cloth, watch = _cape_run(new_app, keep_out=True)
    watch.check(cloth.material.thickness)


@pytest.mark.xfail(strict=True, raises=InsideReach, reason=(
    "issue 44 item 7: without the opt-in last push-out (KeepOutPlugin, not in DefaultPlugins: it fights the limit "
    "where colliders reach pinned particles), 80 of 600 steps end over the bound, the worst 15.2 mm inside the reach"))
def test_the_cape_never_ends_a_step_inside_the_hero_or_the_level_by_default(new_app):
    cloth, watch = _cape_run(new_app, keep_out=False)
    watch.check(cloth.material.thickness)


@pytest.mark.xfail(strict=True, raises=OverLimit, reason=(
    "issue 44 item 7: the opt-in last push-out (KeepOutPlugin, environment.keep_out) runs the limit again with the pushed particles sliding "
    "along their surfaces, then pushes once more; measured 5 of 600 steps ending with a link 4.49 % long against "
    "the cape's 2 % limit (2.44 % over the limit length; where surfaces hold a link's ends the limit cannot shorten "
    "it; more rounds of limit and push-out did worse)"))
def test_the_capes_contacts_hold_with_its_stretch_limit(new_app):
    """The cape game, 600 frames, with ``KeepOutPlugin``: at the end of every step no warp or weft link is over the
    stretch limit, with the contacts held (the test above)."""
    cloth, watch = _cape_run(new_app, keep_out=True)
    assert len(watch.over) == 600
    watch.check_limit()


def test_a_tablecloth_landing_on_its_table_keeps_its_thickness_margin(new_app):
    """The drape game's 48² tablecloth landing on its round table (and its ball), with ``KeepOutPlugin`` (without it
    23 of 120 steps ended over the bound, the worst 1.77 mm inside the 34 mm reach)."""
    app = new_app(plugins=True, dt=drape.DT, substeps=drape.SUBSTEPS, threads=1)
    app.add_plugin(KeepOutPlugin)
    cloth = drape.build_scene(app, n=48)
    watch = ContactWatch(app)
    app.step(120)                                           # it lands at about step 25 and settles
    assert min(watch.worst) < 2.0 * cloth.material.thickness   # it did reach the table
    watch.check(cloth.material.thickness)
    watch.check_limit()                                     # and the contacts held with the stretch limit
    assert cloth.rejected_steps == 0


def test_the_contact_watch_sees_a_particle_pushed_into_a_collider(make_app):
    """The watch can fail: a system after the substeps that puts one particle 5 mm inside a sphere."""
    app = make_app()
    app.spawn(Collider(Sphere(0.3)), Transform(position=(0.0, 0.0, 0.0)))
    cloth = Cloth.from_mesh(mesh.grid(8, 8, 0.5, 0.5, center=(0.0, 1.0, 0.0), plane="xz"), "cotton")
    app.spawn(cloth)

    def sabotage(app: App, dt: float) -> None:
        cloth.x[0] = (0.0, 0.295, 0.0)

    app.add_system(sabotage, Stage.POST_STEP, before="contact_watch")
    watch = ContactWatch(app)
    app.step(3)
    assert max(watch.worst) == pytest.approx(-0.005 - cloth.material.thickness)
    with pytest.raises(InsideReach, match="inside its contact reach"):
        watch.check(cloth.material.thickness)


TABLES = {
    "sphere": (Sphere(0.3), (0.0, 0.35, 0.0), 0.65, 1.2),
    "box": (Box((0.4, 0.375, 0.4)), (0.0, 0.375, 0.0), 0.75, 1.2),
    "round": (Cylinder(0.5, 0.015), (0.0, 0.735, 0.0), 0.75, 1.2),
}
"""Scene → (shape, its centre [m], height of its top [m], sheet side [m]): a ball 5 cm above the floor (no wedge
between them), a box table and a round table 3 cm thick, each 0.75 m high at most, on a floor."""


def resting_speeds(app: App, table: str, n: int, side: float | None = None) -> tuple[np.ndarray, Cloth]:
    """Drop an n×n default cotton sheet (``side`` [m], default the scene's) 0.1 m above ``table`` (TABLES, friction
    0.6, on a floor) and return the fastest frame-to-frame particle speed [m/s] of each frame of the seventh second,
    and the cloth."""
    shape, centre, top, default_side = TABLES[table]
    side = default_side if side is None else side
    app.spawn(Collider(Plane(), friction=0.6), Transform())
    app.spawn(Collider(shape, friction=0.6), Transform(position=centre))
    cloth = Cloth.from_mesh(mesh.grid(n, n, side, side, center=(0.0, top + 0.1, 0.0), plane="xz"),
                            ClothMaterial.preset("cotton"))
    app.spawn(cloth, *([] if SLEEP is None else [SLEEP(enabled=False)]))   # the physics at rest, not a sleep
    app.step(360)                                           # 6 s: dropped and settled
    speeds = []
    for _ in range(60):
        before = cloth.x.copy()
        app.step(1)
        speeds.append(float(np.linalg.norm(cloth.x - before, axis=1).max()) / app.clock.dt)
    return np.array(speeds), cloth


class StillMoving(AssertionError):
    """A resting cloth faster than ``REST_SPEED``: the one failure a known-bad case is marked xfail for."""


class SlidOff(AssertionError):
    """The sheet no longer lies on its table: not the failure the rest tests are marked xfail for."""


def _still(table: str, measured: str) -> pytest.ParameterSet:
    return pytest.param(table, marks=pytest.mark.xfail(strict=True, raises=StillMoving, reason=(
        f"issue 44 item 3: measured {measured} in the seventh second (32², 16 substeps, one thread)")))


@pytest.mark.parametrize("table", [
    _still("sphere", "56.1 mm/s: the skirt between ball and floor swings, its peak speed decaying at the damping "
                     "rate, exp(-0.5 t) (6.5 mm/s with damping 1.5 /s and KeepOutPlugin)"),
    _still("box", "22.9 mm/s: the skirt along the box's sides"),
    _still("round", "297 mm/s: the skirt's folds still swing and settle (42 mm/s with damping 1.5 /s and "
                    "KeepOutPlugin)")])
def test_cotton_dropped_on_a_table_is_still_after_six_seconds(make_app, table):
    app = make_app(threads=1)
    speeds, cloth = resting_speeds(app, table, 32)
    assert cloth.rejected_steps == 0
    assert np.isfinite(speeds).all()
    top = TABLES[table][2]
    if not cloth.x[:, 1].max() >= top:                      # a sheet lying on the floor is still, but not this test
        raise SlidOff(f"{table}: the sheet slid off onto the floor (highest particle {cloth.x[:, 1].max():.3f} m, the "
                      f"top {top} m)")
    if not speeds.max() <= REST_SPEED:
        raise StillMoving(f"{table}: the fastest particle moved {speeds.max() * 1000:.2f} mm/s "
                          f"(frame {speeds.argmax() + 1} of 60), bound {REST_SPEED * 1000:g} mm/s")


@pytest.mark.parametrize("table", ["box", "round"])
def test_a_sheet_lying_within_the_table_top_is_still_after_six_seconds(make_app, table):
    """The control: a 0.6 m sheet that lands inside the top (no rim, no skirt) rests exactly (friction holds it)."""
    app = make_app(threads=1)
    speeds, cloth = resting_speeds(app, table, 32, side=0.6)
    assert cloth.rejected_steps == 0
    assert speeds.max() <= REST_SPEED
