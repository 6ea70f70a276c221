"""Constraints: pull predicted positions back to rest lengths, rest angles and tether bounds (XPBD).

Per substep of h, every cloth's constraints are projected ``iterations`` times, colour by colour:
- distance links (stretch, shear, distance bending): XPBD, Macklin et al. 2016 eqs. 17–18, with
  compliance α [m/N] scaled to α/h² so stiffness does not depend on the substep count; the
  distance form is Provot 1995's structural/shear/flexion springs and Fuhrmann 2003's
  constraints (eqs. 5–9: mass-weighted corrections that keep the centre of mass);
- yarns (``loom.systems.xpbd.yarns``): after each sweep's links and bends, every warp and weft line of
  stretch links takes one linearised XPBD step together (a tridiagonal system per line, block Gauss–Seidel
  across lines), so a correction crosses the cloth in one sweep;
- after the collisions (set ``ClothSet.SETTLE``): ``settle_yarns``, the yarns once more with this substep's
  contact normals, so what the contacts did to the links is taken out before the velocities are updated; then
  ``limit_links``, Provot 1995's deformation limit:
  ``distance_limits.DeformationLimits`` shortens every limited link longer than its bound until none is
  (a separate pass: clamping inside the XPBD projection was undone by later colours, leaving 11.6 % strain
  under a 10 % limit; the limit must travel from the pins across the sheet; and after the collisions,
  because a contact that moves a particle after the solve can overstretch its links again);
- dihedral bending (bend_model="dihedral", every preset): C = θ − θ₀ with the exact gradients of Bridson et
  al. 2003 §4 (robust at θ = 0, unlike the acos form of Müller et al. 2007), each hinge's compliance from the
  material's bending rigidity B [N·m] and its rest geometry (``hinge_compliance``: Grinspun et al. 2003's discrete
  shells weight), so a fabric bends alike at any mesh spacing;
- tethers (long-range attachments, Kim et al. 2012): a free particle may be no farther from each
  of its anchors than in the rest shape; one-sided, only the free particle moves.

Constraints of one colour share no particle, so the serial kernel and the parallel one (one source,
``_solve``, compiled twice) give bit-identical results. The parallel kernel is used when numba has more
than one thread and the cloth has at least ``PARALLEL_MIN_LINKS`` links (below that, thread start-up
costs more than it saves). The kernels read a cloth as one held ``ConstraintArrays``, built once per
cloth and rebuilt only when the cloth replaces an array.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np
from numba import prange

from loom.components import STRETCH, Cloth, ClothMaterial, Tearable
from loom.engine import App
from loom.launch.cold_kernels import called_from, python_twin
from loom.engine.persist import persistent
from loom.systems.shared.batch import Batch, batchable, revisions
from loom.systems.shared.distance_limits import DeformationLimits, LimitBatch
from loom.systems.shared.held import Held, hold
from loom.systems.shared.model_index import cloths_of, clothes_of
from loom.systems.shared.plan import Call, Plan, run
from loom.systems.xpbd.data import XPBDClothData, XPBDData, prune_torn
from loom.systems.xpbd.predict import MODEL
from loom.systems.xpbd.yarns import SCRATCH, Yarns, build_yarns, mark_heavy, remember_tension, solve_yarn_group, \
    touches

PARALLEL_MIN_LINKS = 20_000
"""Smallest link count solved by the parallel kernel when numba has more than one thread."""
_NO_COLORS = np.zeros(1, np.int32)            # colour offsets of an empty table


STRAIN_LIMIT_MAX_PASSES = 100
"""Most work of Provot's deformation limit per substep, in passes' worth of link checks
(``distance_limits.DeformationLimit``); it stops as soon as no stretch or shear link is over its limit,
so a substep ends with every one within (1 + limit) × rest unless this bound is reached (anchors farther
apart than the limit allows: reported by ``DeformationLimits.of(cloth)`` and the ``loom.limits`` log).
Measured, 300-step hangs of a compliant sheet (0.05 m/N, 2 kg/m², limit 10 %) from two corners: 1.0 / 1.1
passes' worth per substep on average with tethers at 32² / 64² (at most 2.5), 1.6 / 3.2 without (at most 21)."""


def solve_constraints(app: App, h: float) -> Plan:
    """Project every XPBD cloth's links, bend angles and tethers ``cloth.iterations`` times; returns the plan for the
    step's other substeps (``loom.systems.shared.plan``: the same kernel calls).

    Large cloths split each colour over the threads; two or more small ones go to one kernel
    call as a batch, a cloth per thread (``ConstraintBatch``)."""
    inv_h2 = 1.0 / (h * h)
    threads = app.step_threads
    parallel = threads > 1
    clothes = clothes_of(app, MODEL)
    tables = app.init_resource(ConstraintTables)
    if app.clock.substep_index == 0:
        tables.keep_only(clothes)
        tables.plain = {id(cloth) for _, cloth, tear in app.query(Cloth, Tearable) if tear.active}
    small = [cloth for cloth in clothes if cloth.link_count < PARALLEL_MIN_LINKS]
    batch = None
    calls: list[Call] = []
    if batchable(small, heavy=True, threads=threads):
        batch = app.init_resource(ConstraintBatch)
        if app.clock.substep_index == 0:
            batch.update(small, tables)
        calls.append((_solve_batch, (inv_h2, batch.iterations, batch.clothes)))
    for cloth in clothes:
        if batch is None or cloth.link_count >= PARALLEL_MIN_LINKS:
            calls.append((_sweep_kernel(cloth, parallel), (cloth.iterations, inv_h2, tables.get(cloth))))
    return run(calls)


def settle_yarns(app: App, h: float) -> Plan:
    """After the collisions: every XPBD cloth's yarns (``Cloth.yarns``) once more, with this substep's contact normals.

    The environment and self-collision moved particles after the solve (a contact pushes a particle out along its
    normal and friction holds it back, lengthening its links); one more pass of each yarn, which slides resting
    particles along their surfaces and never into them, takes that stretch out before the velocities are updated.
    Measured on the 64² drapes at rest: the strain the collisions leave, 1.3–1.7 %, falls to 0.04–0.4 %; with it,
    one sweep per substep before the collisions does as well as two without it (docs/models.md, "Stiffness").
    Returns the plan for the step's other substeps (the same kernel calls)."""
    clothes = clothes_of(app, MODEL)
    inv_h2 = 1.0 / (h * h)
    tables = app.init_resource(ConstraintTables)
    small = [cloth for cloth in clothes if cloth.link_count < PARALLEL_MIN_LINKS]
    threads = app.step_threads
    batch = app.resources.get(ConstraintBatch) if batchable(small, heavy=True, threads=threads) else None
    calls: list[Call] = []
    if batch is not None:                          # set up by this step's solve: a cloth per thread
        calls.append((_yarns_batch, (inv_h2, batch.clothes)))
    parallel = threads > 1
    for cloth in clothes:
        if tables.uses_yarns(cloth) and (batch is None or cloth.link_count >= PARALLEL_MIN_LINKS):
            kernel = _yarns_parallel if parallel and cloth.link_count >= PARALLEL_MIN_LINKS else _yarns_serial_call
            calls.append((kernel, (inv_h2, tables.get(cloth))))
    return run(calls)


def limit_links(app: App, h: float) -> Plan:
    """Provot 1995's deformation limit, last in the substep (after the collisions and ``settle_yarns``): no stretch
    link of an XPBD cloth longer than (1 + material.stretch_limit) × rest, and with material.strain_limit no stretch
    or shear link longer than (1 + strain_limit) × rest (``Cloth.link_max``), whatever the solve and the contacts
    left; or the limit reports that it could not (``DeformationLimits.of(cloth)``, the ``loom.limits`` log).

    A cloth that can tear (an active ``Tearable``: ``ConstraintTables.plain``, refreshed by this step's solve) keeps
    only Provot's ``strain_limit``: it tears where a link stays overstretched, so the stretch limit, which would hold
    every link under the tear strain, is not applied. Returns the plan for the step's other substeps (the same
    limits on the same arrays)."""
    limits = None
    tearing = app.init_resource(ConstraintTables).plain
    work = []
    for cloth in clothes_of(app, MODEL):
        m = cloth.material
        if m.strain_limit is None and (m.stretch_limit is None or id(cloth) in tearing):
            continue
        limits = limits or app.init_resource(DeformationLimits)
        bounds = cloth.link_max if id(cloth) not in tearing else app.init_resource(ProvotBounds).get(cloth)
        work.append((cloth, limits.get(cloth, bounds)))
    if batchable([cloth for cloth, _ in work]):          # many cloths: one kernel call (``LimitBatch``)
        rows = [(limit, cloth.inv_mass, cloth.x, cloth.contact) for cloth, limit in work]
        return run([(app.init_resource(LimitBatch).apply_all, (rows, STRAIN_LIMIT_MAX_PASSES))])
    return run([(limit.apply, (STRAIN_LIMIT_MAX_PASSES, cloth.inv_mass, cloth.x, cloth.contact))
                for cloth, limit in work])


@persistent
class ProvotBounds:
    """Resource: each tearable cloth's link bounds with Provot's strain limit alone (no stretch limit), (c,) [m],
    kept while its link table and limit stay the same (the deformation limit rebuilds its tables for a new array).
    Snapshots save it empty (derived data)."""

    def __init__(self) -> None:
        self.by_cloth: dict[int, tuple] = {}

    def get(self, cloth: Cloth) -> np.ndarray:
        """``cloth``'s bounds: (1 + strain_limit) × rest for stretch and shear links, inf for bend links."""
        entry = self.by_cloth.get(id(cloth))
        if entry is None or entry[0] is not cloth.link_rest or entry[1] != cloth.material.strain_limit:
            entry = (cloth.link_rest, cloth.material.strain_limit, cloth.link_bounds(cloth.material.strain_limit))
            self.by_cloth[id(cloth)] = entry
        return entry[2]

    def __getstate__(self) -> dict:
        """Saved empty: a loaded world rebuilds the bounds at its first substep."""
        return {"by_cloth": {}}


def _sweep_kernel(cloth: Cloth, parallel: bool):
    """The kernel ``solve_constraints`` runs for ``cloth`` outside a batch (``parallel``: numba has more than one
    thread), called as ``kernel(iterations, 1/h², tables.get(cloth))``; the sheet benchmark
    times it alone against its plain reference."""
    return _solve_parallel if parallel and cloth.link_count >= PARALLEL_MIN_LINKS else _solve_serial_call


class ConstraintArrays(NamedTuple):
    """One XPBD cloth as the solve kernels read it, held (``loom.systems.shared.held``): references to the
    cloth's own arrays, no copies."""

    link_i: np.ndarray
    """First particle of each link, (c,) int32, colour order."""
    link_j: np.ndarray
    """Second particle of each link, (c,) int32."""
    link_rest: np.ndarray
    """Rest length of each link, (c,) [m]."""
    link_compliance: np.ndarray
    """Compliance α of each link, (c,) [m/N]."""
    link_offsets: np.ndarray
    """First link of each colour, (colours + 1,)."""
    link_sweep_end: np.ndarray
    """End of each colour's links that the sweep projects, (colours,): the colour's end, or with yarns its first
    stretch link (stretch links come last in a colour, and the yarns solve them)."""
    bend_quads: np.ndarray
    """Dihedral bend quads (e0, e1, o0, o1), (b, 4), colour order."""
    bend_rest_angle: np.ndarray
    """Rest dihedral angle of each quad, (b,) [rad]."""
    bend_compliance: np.ndarray
    """Compliance α of each quad's hinge, (b,) [1/(N·m)] (``hinge_compliance``; (0,) unless bend_model="dihedral")."""
    bend_offsets: np.ndarray
    """First quad of each colour, (colours + 1,) (no colour unless bend_model="dihedral")."""
    tether_offsets: np.ndarray
    """Each particle's first tether, CSR, (n + 1,)."""
    tether_anchor: np.ndarray
    """Anchor particle of each tether, (m,)."""
    tether_length: np.ndarray
    """Longest allowed distance to the anchor, (m,) [m]."""
    inv_mass: np.ndarray
    """(n,) [1/kg]."""
    x: np.ndarray
    """Positions, (n, 3) [m]: written."""
    link_lambda: np.ndarray
    """XPBD multiplier of each link, (c,): written."""
    bend_lambda: np.ndarray
    """XPBD multiplier of each bend quad, (b,): written."""
    yarn_particles: np.ndarray
    """``Yarns.particles`` (systems/xpbd/yarns.py): each yarn's particles in order, (p,) int32."""
    yarn_links: np.ndarray
    """``Yarns.links``: the link into each yarn entry, (p,) int32 (−1 first)."""
    yarn_offsets: np.ndarray
    """``Yarns.offsets``: first entry of each yarn, (y + 1,) int64 ((1,): no yarn solve, ``cloth.yarns`` off)."""
    yarn_color_offsets: np.ndarray
    """``Yarns.color_offsets``: first yarn of each colour, (colours + 1,) int32."""
    yarn_scratch: np.ndarray
    """``Yarns.scratch``, (p, ``yarns.SCRATCH``): written."""
    contact: np.ndarray
    """``Cloth.contact``, (n, 5): particles touching a collider move along it in the yarn solve."""
    x_prev: np.ndarray
    """Positions at the substep's start, (n, 3) [m]: where a particle resting on a collider met its surface."""


_NO_HINGES = np.zeros(0)                      # hinge compliances of a cloth without dihedral bending


def hinge_compliance(rest_x: np.ndarray, quads: np.ndarray, material: ClothMaterial) -> np.ndarray:
    """XPBD compliance of each dihedral hinge, (b,) [1/(N·m)], for the quads (b, 4) (e0, e1, o0, o1) at rest
    positions ``rest_x`` (n, 3) [m]: ``material.bend_angle_compliance`` for every hinge if set (the expert override),
    else α_e = (A₁ + A₂) / (B·|e|²), B = ``material.bending_rigidity`` [N·m], |e| the hinge's rest edge, A₁, A₂ its
    two triangles' rest areas.

    Why: a plate of bending rigidity B bent to curvature κ stores B/2·κ² per unit area. The discrete shells'
    hinge energy (Grinspun et al. 2003, eq. 2: (θ − θ₀)²·|e|/h_e with h_e a third of the mean height of the two
    triangles, |e|/h_e = 3|e|²/(A₁ + A₂); Bergou et al. 2006's isometric bending, the same weight per edge)
    sums, over a mesh bent to a cylinder, to ∫κ² dA times a mesh factor: Σ |e|²θ²/(A₁ + A₂) = 1.09–1.14 ∫κ² dA on
    ``mesh.disc`` meshes (any direction) and 0.96–1.49 (1.23 on average over directions) on a triangulated grid
    (docs/materials.md, "Bending in physical units"). XPBD's constraint C = θ − θ₀ of compliance α stores
    C²/(2α), so α_e above gives Σ θ²/(2α_e) ≈ B/2 ∫κ² dA: a rigidity B, at any spacing (|e|²/A is
    dimensionless, so the hinge's α depends on its triangles' shapes, not their size)."""
    if material.bend_angle_compliance is not None:
        return np.full(quads.shape[0], float(material.bend_angle_compliance))
    if quads.shape[0] == 0:
        return _NO_HINGES
    e0, e1, o0, o1 = (rest_x[quads[:, k]] for k in range(4))
    edge = e1 - e0
    areas = 0.5 * (np.linalg.norm(np.cross(edge, o0 - e0), axis=1) + np.linalg.norm(np.cross(edge, o1 - e0), axis=1))
    length2 = np.einsum("ij,ij->i", edge, edge)
    return np.ascontiguousarray(areas / (material.bending_rigidity * np.maximum(length2, 1e-300)))


_NO_YARNS = (np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(1, np.int64), np.zeros(1, np.int32),
             np.zeros((0, SCRATCH)))


def _constraint_arrays(cloth: Cloth, data: XPBDClothData, yarns_on: bool) -> tuple[Held, Yarns | None]:
    """``cloth``'s current arrays and XPBD's ``data`` of it (multipliers, tethers) as a held ``ConstraintArrays``
    (its bend quads only for bend_model="dihedral", its yarns only with ``yarns_on``: built here, whenever the
    tables are rebuilt), and the ``Yarns`` it holds (None without yarns: ``mark_heavy`` marks them again when the
    inverse masses change in place)."""
    bend_offsets = cloth.bend_color_offsets if cloth.material.bend_model == "dihedral" else _NO_COLORS
    yarns, built = _NO_YARNS, None
    offsets = cloth.link_color_offsets
    sweep_end = offsets[1:].astype(np.int64)
    if yarns_on:
        stretch = cloth.link_kind[cloth.link_order] == STRETCH
        built = build_yarns(cloth.link_i, cloth.link_j, stretch, cloth.rest_x)
        mark_heavy(built, cloth.inv_mass)
        yarns = tuple(built)
        colour = np.repeat(np.arange(offsets.shape[0] - 1), np.diff(offsets))
        sweep_end = offsets[:-1] + np.bincount(colour[~stretch], minlength=offsets.shape[0] - 1)
    dihedral = cloth.material.bend_model == "dihedral"
    bend_compliance = hinge_compliance(cloth.rest_x, cloth.bend_quads, cloth.material) if dihedral else _NO_HINGES
    return _hold_call(ConstraintArrays(cloth.link_i, cloth.link_j, cloth.link_rest, cloth.link_compliance, offsets,
                                 np.ascontiguousarray(sweep_end, np.int64), cloth.bend_quads, cloth.bend_rest_angle,
                                 bend_compliance, bend_offsets,
                                 data.tether_offsets, data.tether_anchor, data.tether_length,
                                 cloth.inv_mass, cloth.x, data.link_lambda, data.bend_lambda, *yarns,
                                 cloth.contact, cloth.x_prev)), built


@persistent
class ConstraintTables:
    """Resource: each XPBD cloth's held ``ConstraintArrays``, rebuilt only when the cloth has replaced an array
    (its ``revision``; a snapshot load, which restores the revision with new arrays, by ``x``'s identity), its
    XPBD data has new tether tables (``XPBDClothData.revision``), or it changed bend model or ``yarns``; arrays
    changed in place need nothing, save the inverse masses the heavy yarns follow (``Cloth.changes``). Snapshots save
    it empty (derived data)."""

    def __init__(self) -> None:
        self.by_cloth: dict[int, list] = {}
        self.data: XPBDData | None = None
        """The App's ``XPBDData`` (set by ``refresh_tethers`` each step): each cloth's multipliers and tethers."""
        self.plain: set[int] = set()
        """ids of the cloths solved without yarns this step although ``cloth.yarns`` is on: those that can tear (an
        active ``Tearable``; refreshed at each step's first substep). A cloth tears where links stay overstretched;
        the yarns' line solve fights that and throws the torn edge about (the sandbox's tear: 50 m/s)."""

    def uses_yarns(self, cloth: Cloth) -> bool:
        """Whether ``cloth``'s stretch links are solved as yarns this step."""
        return cloth.yarns and id(cloth) not in self.plain

    def get(self, cloth: Cloth) -> Held:
        """``cloth``'s held ``ConstraintArrays``, up to date (RuntimeError before the App's first step)."""
        if self.data is None:
            raise RuntimeError("ConstraintTables.get: step the App first (refresh_tethers binds the XPBD data)")
        data = self.data.of(cloth)
        entry = self.by_cloth.get(id(cloth))
        options = (cloth.material.bend_model, self.uses_yarns(cloth))
        if entry is None or entry[0] is not cloth or entry[1] != cloth.revision or entry[2] is not cloth.x \
                or entry[3] != options or entry[5] is not cloth.x_prev or entry[6] is not data \
                or entry[7] != data.revision:
            held, yarns = _constraint_arrays(cloth, data, options[1])
            entry = [cloth, cloth.revision, cloth.x, options, held, cloth.x_prev, data, data.revision, yarns,
                     cloth.changes]
            self.by_cloth[id(cloth)] = entry
        elif entry[9] != cloth.changes:                  # pins, grabs or masses changed in place: the heavy yarns
            entry[9] = cloth.changes                     # follow the inverse masses (``yarns.mark_heavy``)
            if entry[8] is not None:
                mark_heavy(entry[8], cloth.inv_mass)
        return entry[4]

    def tables_key(self, cloth: Cloth) -> tuple:
        """What the held arrays of ``cloth`` depend on beyond its ``revision``: bend model, yarns, its XPBD data."""
        data = self.data.of(cloth)
        return cloth.material.bend_model, self.uses_yarns(cloth), id(data), data.revision

    def keep_only(self, clothes: list[Cloth]) -> None:
        """Forget the structs of cloths not in ``clothes`` (despawned), so their arrays can be freed."""
        if len(self.by_cloth) > len(clothes):
            kept = {id(c) for c in clothes}
            self.by_cloth = {k: entry for k, entry in self.by_cloth.items() if k in kept}

    def __getstate__(self) -> dict:
        """Saved empty: held structs do not pickle, and a loaded world rebuilds them at its first step."""
        return {"by_cloth": {}, "plain": set(), "data": None}


@persistent
class ConstraintBatch:
    """Resource: the small XPBD cloths as one batch (systems/shared/batch.py), solved a cloth per thread."""

    def __init__(self) -> None:
        self.batch = Batch()
        self.clothes = None
        """Typed list of the cloths' held ``ConstraintArrays``."""
        self.iterations = np.zeros(0, np.int64)

    def update(self, clothes: list[Cloth], tables: ConstraintTables) -> None:
        """Point the batch at ``clothes``; iterations are re-read every step (the hinges' compliances are in the held
        arrays, rebuilt with the material)."""
        key = (revisions(clothes), tuple(tables.tables_key(c) for c in clothes))
        (self.clothes,) = self.batch.update(key, lambda: [(tables.get(c),) for c in clothes])
        if self.iterations.shape[0] != len(clothes):
            self.iterations = np.zeros(len(clothes), np.int64)
        for k, c in enumerate(clothes):                  # re-read every step: the game may change them
            self.iterations[k] = c.iterations

    def __getstate__(self) -> dict:
        """Saved empty: typed lists do not pickle, and a loaded world rebuilds the batch at its first step."""
        return {"batch": Batch(), "clothes": None, "iterations": np.zeros(0, np.int64)}


def refresh_tethers(app: App, dt: float) -> None:
    """Make each XPBD cloth's solver data when the model first meets it (``XPBDData``); rebuild a cloth's tethers
    when its change signal (``Cloth.changes``) moved and its anchors (particles of inverse mass 0) are not those the
    tethers were built for, then prune a torn cloth's (``data.prune_torn``)."""
    store = app.init_resource(XPBDData)
    app.init_resource(ConstraintTables).data = store     # the substep systems' held arrays read it
    for entity, cloth in cloths_of(app, MODEL):
        data = store.get(entity, cloth)
        if not cloth.tethers or data.seen_changes == cloth.changes:
            continue
        data.seen_changes = cloth.changes
        if not _anchors_changed_call(cloth.inv_mass, data.tether_anchor_mask):
            continue
        anchors = cloth.inv_mass == 0.0
        offsets, anchor, length = _build_tethers_call(cloth.rest_x, np.flatnonzero(anchors).astype(np.int32),
                                                 cloth.inv_mass, cloth.tether_count)
        data.set_tethers(anchors, offsets, anchor, length)          # sizes change together
        prune_torn(data, cloth, app.try_get(entity, Tearable))


# --- kernels: private, arrays in, arrays out ----------------------------------------------------
@numba.njit(cache=True, inline="always", error_model="numpy")
def _project_bend(q, quads, rest_angle, alpha, inv_mass, x, lam):
    """One XPBD projection of dihedral quad q: C = θ − θ₀ (Bridson et al. 2003 §4 gradients).

    quads (b, 4): shared edge e0, e1 then opposite o0 (of triangle e0 e1 o0), o1 (of e1 e0 o1).
    θ = atan2((N0 × N1)·ê, N0·N1); ∂θ/∂o0 = −|E| N0/|N0|², ∂θ/∂o1 = −|E| N1/|N1|², and the edge
    terms from the projections of the opposite vertices on the edge; the four sum to zero.
    Inlined into ``_solve`` (numba's ``inline="always"``): called, each projection paid a call that passes its arrays
    as loose arguments, which made the dihedral sweep several times the distance links' (docs/performance.md)."""
    e0 = np.uint64(quads[q, 0])                  # unsigned: no wraparound test per access
    e1 = np.uint64(quads[q, 1])
    o0 = np.uint64(quads[q, 2])
    o1 = np.uint64(quads[q, 3])
    w0 = inv_mass[e0]
    w1 = inv_mass[e1]
    w2 = inv_mass[o0]
    w3 = inv_mass[o1]
    if w0 + w1 + w2 + w3 == 0.0:
        return
    ex = x[e1, 0] - x[e0, 0]
    ey = x[e1, 1] - x[e0, 1]
    ez = x[e1, 2] - x[e0, 2]
    elen = math.sqrt(ex * ex + ey * ey + ez * ez)
    if elen < 1e-12:
        return
    # N0 = E × (o0 − e0), N1 = (e0 − e1) × (o1 − e1) = (o1 − e1) × E
    ax = x[o0, 0] - x[e0, 0]
    ay = x[o0, 1] - x[e0, 1]
    az = x[o0, 2] - x[e0, 2]
    bx = x[o1, 0] - x[e1, 0]
    by = x[o1, 1] - x[e1, 1]
    bz = x[o1, 2] - x[e1, 2]
    n0x = ey * az - ez * ay
    n0y = ez * ax - ex * az
    n0z = ex * ay - ey * ax
    n1x = by * ez - bz * ey
    n1y = bz * ex - bx * ez
    n1z = bx * ey - by * ex
    n0sq = n0x * n0x + n0y * n0y + n0z * n0z
    n1sq = n1x * n1x + n1y * n1y + n1z * n1z
    if n0sq < 1e-24 or n1sq < 1e-24:
        return
    cx = n0y * n1z - n0z * n1y
    cy = n0z * n1x - n0x * n1z
    cz = n0x * n1y - n0y * n1x
    sin_t = (cx * ex + cy * ey + cz * ez) / elen
    cos_t = n0x * n1x + n0y * n1y + n0z * n1z
    if sin_t == 0.0 and cos_t < 0.0:             # folded flat onto itself: no side to unfold to (atan2 would pick
        return                                   # one by the sign of a zero), so a planar cloth stays planar
    c = math.atan2(sin_t, cos_t) - rest_angle[q]
    if c > math.pi:
        c -= 2.0 * math.pi
    elif c < -math.pi:
        c += 2.0 * math.pi
    # gradient of θ: g_o0 = −|E| N0/|N0|², g_o1 = −|E| N1/|N1|²
    f0 = -elen / n0sq
    f1 = -elen / n1sq
    # edge parameters of the opposite vertices: s = (o − e0)·E/|E|², t = (o − e1)·E/|E|²...
    inv_e2 = 1.0 / (elen * elen)
    s0 = (ax * ex + ay * ey + az * ez) * inv_e2                       # o0 along E from e0
    s1 = ((x[o1, 0] - x[e0, 0]) * ex + (x[o1, 1] - x[e0, 1]) * ey + (x[o1, 2] - x[e0, 2]) * ez) * inv_e2
    # g_e0 = −(1 − s0)·g_o0 − (1 − s1)·g_o1 ; g_e1 = −s0·g_o0 − s1·g_o1
    g2x = f0 * n0x
    g2y = f0 * n0y
    g2z = f0 * n0z
    g3x = f1 * n1x
    g3y = f1 * n1y
    g3z = f1 * n1z
    g0x = -(1.0 - s0) * g2x - (1.0 - s1) * g3x
    g0y = -(1.0 - s0) * g2y - (1.0 - s1) * g3y
    g0z = -(1.0 - s0) * g2z - (1.0 - s1) * g3z
    g1x = -s0 * g2x - s1 * g3x
    g1y = -s0 * g2y - s1 * g3y
    g1z = -s0 * g2z - s1 * g3z
    denom = (w0 * (g0x * g0x + g0y * g0y + g0z * g0z) + w1 * (g1x * g1x + g1y * g1y + g1z * g1z)
             + w2 * (g2x * g2x + g2y * g2y + g2z * g2z) + w3 * (g3x * g3x + g3y * g3y + g3z * g3z) + alpha)
    if denom < 1e-24:
        return
    dlam = (-c - alpha * lam[q]) / denom
    lam[q] += dlam
    x[e0, 0] += w0 * g0x * dlam
    x[e0, 1] += w0 * g0y * dlam
    x[e0, 2] += w0 * g0z * dlam
    x[e1, 0] += w1 * g1x * dlam
    x[e1, 1] += w1 * g1y * dlam
    x[e1, 2] += w1 * g1z * dlam
    x[o0, 0] += w2 * g2x * dlam
    x[o0, 1] += w2 * g2y * dlam
    x[o0, 2] += w2 * g2z * dlam
    x[o1, 0] += w3 * g3x * dlam
    x[o1, 1] += w3 * g3y * dlam
    x[o1, 2] += w3 * g3z * dlam


@numba.njit(inline="always", error_model="numpy")
def _solve(iterations, inv_h2, held):
    """``iterations`` Gauss–Seidel sweeps over colours of links, then bend quads, then tethers.

    Each link k is one XPBD distance projection (Macklin et al. 2016 eq. 18): Δλ = (l₀ − l − α̃λ) /
    (w_a + w_b + α̃) with α̃ = α/h², x_a += w_a·n·Δλ, x_b −= w_b·n·Δλ, n the unit direction b→a
    (Fuhrmann 2003 eqs. 6–9: mass weighting keeps the centre of mass).
    held: the cloth's held ``ConstraintArrays`` (each bend quad's compliance [1/(N·m)] in it); writes x (n, 3) [m] and the
    multipliers, which restart from 0 every substep (the last substep's tension of a heavy yarn's links kept first,
    for its geometric stiffness: ``yarns.remember_tension``).

    Tethers (one-sided, anchor fixed) run on every second sweep ending with the last: every sweep
    cost 14 % of the n = 128 step, once per substep let max strain rise from 0.16 % to 0.9 %,
    every second sweep keeps 0.16 %.

    The link projection is written out in the loop, not called: neither numba's IR inlining of a helper nor an
    LLVM-inlined call is reliably as fast as the loop written out (docs/performance.md, "Moved from docstrings").

    Particle, link and tether indices are made unsigned (``np.uint64``) before they index: numba tests a
    signed index for wraparound (negative counts from the end) at every access (the link tables by k, the
    particles by a and b), a compare and a select with the array's length in a register or spilled;
    unsigned, the loop is plain loads and stores. ``error_model="numpy"`` (here, on the two wrappers and
    ``_project_bend``) drops the ZeroDivisionError test before each division; every divisor is tested
    positive first, so nothing else changes, and results are bit-identical (same operations, same order).
    Timings and the layouts compared: docs/performance.md, "Moved from docstrings" (``python -m loom.benchmarks
    sheet``).

    One source for both kernels: inlined into ``_solve_serial`` its ``prange`` loops run as plain
    loops; into ``_solve_parallel`` (parallel=True) each colour's loop is split over the threads.
    Two thin wrappers, not one function compiled twice: numba's cache keys an entry by function and
    signature, not by flags, so the two compilations would overwrite each other."""
    arrays = held.value
    link_i = arrays.link_i
    link_j = arrays.link_j
    link_rest = arrays.link_rest
    link_compliance = arrays.link_compliance
    link_offsets = arrays.link_offsets
    link_sweep_end = arrays.link_sweep_end
    quads = arrays.bend_quads
    rest_angle = arrays.bend_rest_angle
    bend_compliance = arrays.bend_compliance
    bend_offsets = arrays.bend_offsets
    tether_offsets = arrays.tether_offsets
    tether_anchor = arrays.tether_anchor
    tether_length = arrays.tether_length
    inv_mass = arrays.inv_mass
    x = arrays.x
    link_lambda = arrays.link_lambda
    bend_lambda = arrays.bend_lambda
    remember_tension(arrays.yarn_offsets, arrays.yarn_links, arrays.yarn_scratch, link_lambda, link_rest)
    link_lambda[:] = 0.0
    bend_lambda[:] = 0.0
    for it in range(iterations):
        for c in range(link_offsets.shape[0] - 1):
            for kk in prange(link_offsets[c], link_sweep_end[c]):
                k = np.uint64(kk)                         # unsigned indices: no wraparound test per access
                a = np.uint64(link_i[k])
                b = np.uint64(link_j[k])
                wa = inv_mass[a]
                wb = inv_mass[b]
                w = wa + wb
                if w == 0.0:
                    continue
                dx = x[a, 0] - x[b, 0]
                dy = x[a, 1] - x[b, 1]
                dz = x[a, 2] - x[b, 2]
                length = math.sqrt(dx * dx + dy * dy + dz * dz)
                if length < 1e-12:
                    continue
                alpha = link_compliance[k] * inv_h2
                dlam = (link_rest[k] - length - alpha * link_lambda[k]) / (w + alpha)
                link_lambda[k] += dlam
                s = dlam / length
                x[a, 0] += wa * s * dx
                x[a, 1] += wa * s * dy
                x[a, 2] += wa * s * dz
                x[b, 0] -= wb * s * dx
                x[b, 1] -= wb * s * dy
                x[b, 2] -= wb * s * dz
        for c in range(bend_offsets.shape[0] - 1):
            for q in prange(bend_offsets[c], bend_offsets[c + 1]):
                _project_bend(q, quads, rest_angle, bend_compliance[q] * inv_h2, inv_mass, x, bend_lambda)
        _sweep_yarns(inv_h2, arrays, True)                   # each yarn's stretch links solved together
        if tether_anchor.shape[0] > 0 and (iterations - 1 - it) % 2 == 0:
            for p in prange(x.shape[0]):
                if inv_mass[p] == 0.0:
                    continue
                for tt in range(tether_offsets[p], tether_offsets[p + 1]):
                    t = np.uint64(tt)
                    a = np.uint64(tether_anchor[t])
                    dx = x[p, 0] - x[a, 0]
                    dy = x[p, 1] - x[a, 1]
                    dz = x[p, 2] - x[a, 2]
                    dist = math.sqrt(dx * dx + dy * dy + dz * dz)
                    if dist > tether_length[t]:          # one-sided: only a too-far particle moves
                        s = tether_length[t] / dist
                        x[p, 0] = x[a, 0] + dx * s
                        x[p, 1] = x[a, 1] + dy * s
                        x[p, 2] = x[a, 2] + dz * s


@numba.njit(inline="always", error_model="numpy")
def _sweep_yarns(inv_h2, arrays, resting_only):
    """Every yarn of a cloth (``arrays``: its ``ConstraintArrays``) once, colour by colour (``yarns.solve_yarn``;
    ``resting_only``: only contacts with colliders at rest hold particles, as in a substep's solve), four yarns of a
    colour a call (``yarns.solve_yarn_group``: their dependent chains side by side); each colour's groups split over
    the threads where the caller is parallel. ``solve_yarn_group`` is called, not inlined: one compile serves
    ``_solve_*`` and ``_yarns_*`` (inlined into both, a cold launch would compile it twice), and a call per four
    yarns (tens of links) costs next to nothing."""
    colors = arrays.yarn_color_offsets
    particles, links, offsets, scratch = arrays.yarn_particles, arrays.yarn_links, arrays.yarn_offsets, \
        arrays.yarn_scratch
    link_rest, link_compliance, inv_mass = arrays.link_rest, arrays.link_compliance, arrays.inv_mass
    contact, x, link_lambda, x_prev = arrays.contact, arrays.x, arrays.link_lambda, arrays.x_prev
    count = colors.shape[0] - 1
    resting = bool(resting_only)                      # not a literal: one compile of solve_yarn_group for both uses
    touching = touches(contact, resting)              # nothing touches: the copy without contact tests
    for step in range(count):
        c = step if resting_only else count - 1 - step
        start, end = np.int64(colors[c]), np.int64(colors[c + 1])
        for group in prange((end - start + 3) // 4):         # four yarns a call: their chains side by side
            y = start + 4 * np.int64(group)
            solve_yarn_group(y, min(end - y, np.int64(4)), particles, links, offsets, scratch, link_rest,
                             link_compliance, inv_h2, inv_mass, contact, resting, touching, x, x_prev, link_lambda)


@numba.njit(cache=True, error_model="numpy")
def _yarns_serial(inv_h2, held):
    """``_sweep_yarns`` of the held ``ConstraintArrays`` on the calling thread, after the collisions (``settle_yarns``:
    every contact of this substep holds its particle, friction as far as it can); then ``Cloth.contact`` column 4 (the
    static friction the contacts left) back to 0, where the next substep's solve counts its push into surfaces."""
    _sweep_yarns(inv_h2, held.value, False)
    held.value.contact[:, 4] = 0.0


@numba.njit(cache=True, parallel=True, error_model="numpy")
def _yarns_parallel(inv_h2, held):
    """``_yarns_serial`` with each colour's yarns split over the threads (the same result, bit for bit)."""
    _sweep_yarns(inv_h2, held.value, False)
    held.value.contact[:, 4] = 0.0      # here, not in the inlined ``_sweep_yarns``: there the parallel kernel's
    #                                     result came to depend on the thread count (a 64² drape, 1 against 2 threads)


@numba.njit(cache=True, parallel=True)
def _yarns_batch(inv_h2, clothes):
    """``_yarns_serial`` for each cloth of a batch (a typed list of held ``ConstraintArrays``), a cloth per thread."""
    for k in prange(len(clothes)):
        _yarns_serial(inv_h2, clothes[np.int64(k)])


@numba.njit(cache=True, error_model="numpy")
def _solve_serial(iterations, inv_h2, held):
    """``_solve`` on the calling thread."""
    _solve(iterations, inv_h2, held)


@numba.njit(cache=True, parallel=True, error_model="numpy")
def _solve_parallel(iterations, inv_h2, held):
    """``_solve`` with each colour's links, bend quads and the tethers split over the threads (the same
    result, bit for bit: a colour's constraints share no particle)."""
    _solve(iterations, inv_h2, held)


@numba.njit(cache=True, parallel=True)
def _solve_batch(inv_h2, iterations, clothes):
    """``_solve_serial`` for each cloth of a batch (``clothes``, a typed list of held ``ConstraintArrays``;
    iterations (k,) per cloth), the cloths spread over the threads. Cloths share
    nothing, so the result is the same on any thread count; on one thread the parallel launch costs
    about 1 % over a plain loop, so there is no serial twin."""
    for k in prange(iterations.shape[0]):
        c = np.int64(k)                          # typed lists take signed indices; prange's are unsigned
        _solve_serial(iterations[c], inv_h2, clothes[c])


@numba.njit(cache=True)
def _anchors_changed(inv_mass, mask):
    """Whether the particles of inverse mass 0 differ from ``mask`` (n,) bool (the tethers' anchors)."""
    for p in range(mask.shape[0]):
        if (inv_mass[p] == 0.0) != mask[p]:
            return True
    return False


@numba.njit(cache=True)
def _build_tethers(rest_x, anchors, inv_mass, count):
    """Tether each free particle to its ``count`` nearest anchors in the rest shape (Kim et al. 2012).

    rest_x (n, 3) [m]; anchors (P,) int32. Returns CSR (offsets (n + 1,) int32, anchor (m,) int32,
    length (m,) [m] = rest distance). Each particle's nearest anchor comes first, its farthest last:
    the reverse order held the near tether exactly but doubled the worst edge strain of a 32×32
    sheet at default settings (0.8 % → 1.7 %). Straight-line rest distance is exact for flat convex panels
    and never longer than the geodesic, so a tether never forces a stretch."""
    n = rest_x.shape[0]
    per = min(count, anchors.shape[0])
    offsets = np.zeros(n + 1, np.int32)
    for p in range(n):
        offsets[p + 1] = offsets[p] + (per if inv_mass[p] > 0.0 else 0)
    anchor = np.empty(offsets[n], np.int32)
    length = np.empty(offsets[n])
    dist = np.empty(anchors.shape[0])
    for p in range(n):
        if inv_mass[p] == 0.0:
            continue
        for a in range(anchors.shape[0]):
            q = anchors[a]
            dist[a] = math.sqrt((rest_x[p, 0] - rest_x[q, 0]) ** 2 + (rest_x[p, 1] - rest_x[q, 1]) ** 2
                                + (rest_x[p, 2] - rest_x[q, 2]) ** 2)
        for t in range(per):                      # the `per` nearest, nearest first
            best = -1
            for a in range(anchors.shape[0]):
                if dist[a] >= 0.0 and (best < 0 or dist[a] < dist[best]):
                    best = a
            anchor[offsets[p] + t] = anchors[best]
            length[offsets[p] + t] = dist[best]
            dist[best] = -1.0
    return offsets, anchor, length


python_twin(_build_tethers, size=lambda rest_x, *args: rest_x.shape[0])   # Python for a small cloth on a cold launch


def _anchors_changed_numpy(inv_mass, mask):
    """``_anchors_changed`` in NumPy: its twin while the compile-ahead worker compiles it (``cold_kernels``)."""
    return bool(((inv_mass == 0.0) != mask).any())


python_twin(_anchors_changed, per_step=True, twin=_anchors_changed_numpy)
_build_tethers_call, _anchors_changed_call = _build_tethers, _anchors_changed   # the Python call sites' names
_hold_call, _solve_serial_call, _yarns_serial_call = hold, _solve_serial, _yarns_serial   # (loom.systems.xpbd.cold)
called_from(__name__, _build_tethers, _anchors_changed)
