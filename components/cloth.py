"""Cloth: one piece of fabric — rest topology and constraint tables first, then the changing state.

Build one from a mesh (``Cloth.from_mesh(mesh.grid(32, 32, 1.0, 1.0), material="cotton")``) or
from bare particles and links (``Cloth.from_particles`` for ropes and pendulums). Systems read
and write the arrays in place; Python never loops over particles or constraints per step.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from loom.components._revision import FrozenFieldError, Revisioned, checked_field
from loom.components._validate import (Arr, Choice, Custom, Dims, FieldError, Flag, Instance, Int, Offsets, as_array,
                                       choice, floats, length, real, show)
from loom.components.material import ClothMaterial
from loom.components.models import MODEL_SPECS, SETTINGS, model_spec, settings_for
from loom.engine.coloring import color_order
from loom.engine.geometry import triangle_areas
from loom.engine.mesh import Mesh
from loom.engine.persist import persistent

MODELS = tuple(SETTINGS)
"""The built-in solvers a cloth can select with ``model=``: xpbd (default), verlet, mass_spring, implicit.
A plugin adds its own with ``loom.systems.registry.register_model`` (``MODEL_SPECS`` lists every known one);
each model's systems find their cloths through one index (``loom.systems.shared.model_index``)."""
STEP_MODELS = tuple(name for name, spec in MODEL_SPECS.items() if spec.whole_step)
"""Built-in models solved once per fixed step by one fused system; the substep systems skip them."""

SELF_COLLISION_MODES = ("particle", "triangle")
PRECISIONS = ("float64", "float32")
"""Storage choices of ``Cloth.precision``."""
STRETCH, SHEAR, BEND = 0, 1, 2
"""``link_kind`` codes: structural, shear and (distance) bending links."""
LINK_KINDS = ("stretch", "shear", "bend")
HELD = 2.0
"""``Cloth.contact`` column 3 of a particle squeezed out of a pinch this substep: after the collisions the yarns and
the stretch limit do not move it (its two colliders' normals do not fit in one column; moved along one, the yarn
pulled it back under the other: a particle squeezed out from under a box ended 1.5 mm inside it)."""
STUCK = 3.0
"""``Cloth.contact`` column 3 of a particle resting on a collider (``loom.systems.collision.environment.RESTING``)
that static friction held this substep (its slip within Coulomb's cone): after the collisions the yarns hold it
where friction put it against a pull up to the static friction its contact left unused (``Cloth.contact`` column 4)
and slide it by the excess of a larger one; the next substep's solve slides it along the surface like any resting
particle, and the stretch limit may slide it (a limit is hard, friction gives way). Why: without it the pass after
the collisions would slide resting particles along the surface with no friction at all (a tablecloth pulled by its
skirt creeps off the table); held against any pull, a cloth stretched where friction holds it stays stretched and
shakes (docs/models.md, "Creep on a table")."""


def _model(owner: str, name: str, state: Any, value: Any) -> str:
    """Cloth.model: a known model name, fixed once built (``Cloth.__setattr__`` names the way to switch)."""
    if not isinstance(value, str):
        raise FieldError(f"{owner}.{name} = {value!r}: expected a model name")
    model_spec(value)
    return value


def _precision(owner: str, name: str, state: Any, value: Any) -> str:
    """Cloth.precision: fixed once built (x, v, x_prev and force are stored in it)."""
    choice(owner, name, value, PRECISIONS)
    if value != state.get("precision", value):
        raise ValueError(f"{owner}.{name} = {value!r}: fixed when the cloth is built (its state arrays are "
                         f"{state['precision']}); build a new Cloth to change it")
    return value


def _settings(owner: str, name: str, state: Any, value: Any) -> Any:
    """Cloth.settings: an instance of the model's settings class (None: its defaults)."""
    return settings_for(state.get("model"), value)


class _Indices(Arr):
    """A read-only table of particle indices, shape ``shape`` int32, each in [0, n); a table of real numbers is
    refused as not integer indices (naming its dtype and values)."""

    def __init__(self, shape: tuple[int | str | None, ...]) -> None:
        super().__init__(shape, "i", count="n", readonly=True)

    def check(self, owner: str, name: str, state: Mapping[str, Any], value: Any, dims: Dims) -> Any:
        arr = as_array(owner, name, value, "integer indices")
        if arr.size and arr.dtype.kind not in "iu":
            raise FieldError(f"{owner}.{name}: expected integer indices, got dtype {arr.dtype} ({show(arr)})")
        return super().check(owner, name, state, arr, dims)


class _LinkKinds(Arr):
    """Cloth.link_kind: (c,) int8 codes 0 stretch, 1 shear, 2 bend, read-only. While the cloth is built (no
    colour-ordered link table yet, so c is not fixed) the kinds are checked against the links given with them and a
    wrong one is named by the kinds a link may have."""

    def __init__(self) -> None:
        super().__init__(("c",), "i", dtype=np.int8, low=0, high=2, readonly=True)

    def check(self, owner: str, name: str, state: Mapping[str, Any], value: Any, dims: Dims) -> Any:
        if dims["c"][0](state) is None:
            count = length("links")(state)
            kinds = as_array(owner, name, value, f"({count},) integers 0 stretch, 1 shear, 2 bend")
            if kinds.shape != (count,) or (kinds.size and kinds.dtype.kind not in "iu"):
                raise ValueError(f"{owner}.{name}: shape {kinds.shape} dtype {kinds.dtype}, expected ({count},) "
                                 f"integers 0 stretch, 1 shear, 2 bend")
            bad = np.flatnonzero((kinds < 0) | (kinds > 2))
            if bad.size:
                k = int(bad[0])
                raise ValueError(f"{owner}.{name}[{k}] = {int(kinds[k])}: expected 0 stretch, 1 shear, 2 bend")
            value = kinds
        return super().check(owner, name, state, value, dims)


@persistent
@dataclass(eq=False)
class Cloth(Revisioned):
    """A cloth's particles, constraint tables and state, validated on construction.

    Every array is C-contiguous float64 (positions, masses) or int32 (indices). Link tables are
    stored in colour order (see ``loom.engine.coloring``): ``link_color_offsets[c]:link_color_offsets[c+1]``
    is colour c, whose links share no particle.

    Fields come in three groups — Newton's split of rest data (Model) from changing data (State), kept in
    one component so ``cloth.x``, ``cloth.v``, ``cloth.inv_mass`` stay where games and kernels read them:
    the constructor inputs (``x`` and ``inv_mass`` are also state); derived rest data, which no step
    changes (colour-ordered links, rest lengths and angles, ``base_inv_mass``; tearing rebuilds them
    whole: a new topology); the state a step changes (``x``, ``v``, ``x_prev``, ``force``, ``contact``;
    ``inv_mass`` where pins and grabs hold particles), with the two counters every model reads (``changes``,
    ``rejected_steps``). What a model keeps per cloth (XPBD's multipliers and tethers, Verlet's and mass-spring's
    tables) is not here: the model makes it when a cloth of it appears and drops it with the entity
    (``loom.systems.xpbd.xpbd_data``, ``loom.systems.shared.model_index``).

    ``changes`` is the one signal that tells every model that pins, grabs, masses or the topology changed or that
    the guard refused a step: whoever changes them calls ``cloth.changed()`` (pins, grabs and tearing do;
    assigning ``inv_mass``, ``base_inv_mass``, ``mass`` or ``rejected_steps`` counts by itself), and a model
    that keeps something derived from them compares ``changes`` with the value it last saw. A game that writes
    ``inv_mass`` in place calls ``cloth.changed()`` after it.

    Every field is checked when assigned (``cloth.x = ...``): shape against the particle, link, bend-quad and
    triangle counts (fixed by the topology), dtype converted to what kernels take, finite
    floats, indices in range — else one ValueError naming Cloth.field. Fields that change together go through
    ``cloth.assign(...)``; ``check_state()`` re-checks the whole object.
    Rest data and index tables (``mass``, ``rest_x``, ``rest_uv``, ``links``, ``link_kind``, ``triangles``,
    ``bend_quads``, the colour-ordered link tables and offsets, ``bend_rest_angle``, ``base_inv_mass``) are
    read-only arrays: an in-place write (``cloth.link_i[0] = 10**6``) raises ValueError, so no
    kernel reads an unchecked index; assign a new array instead (checked). The state (``x``, ``v``, ``x_prev``,
    ``force``, ``contact``, ``inv_mass``) stays writable: the guard checks x, v and x_prev
    before each step (non-finite or beyond ±1e6 m restores the last good state) and refuses a step that leaves
    them non-finite or exploded.
    """

    # --- constructor inputs ---------------------------------------------------------------------
    x: np.ndarray = checked_field(Arr(("n", 3), dtype="state", unit=" [m]"))
    """Particle positions [m], shape (n, 3); also the rest shape unless ``rest_x`` is given."""
    mass: np.ndarray = checked_field(Arr(("n",), low=0.0, low_open=True, unit=" [kg]", readonly=True))
    """Particle masses [kg], shape (n,), each > 0."""
    links: np.ndarray = checked_field(_Indices(("c", 2)))
    """Distance constraints as particle pairs, shape (c, 2) int; rest lengths come from ``rest_x``."""
    link_kind: np.ndarray = checked_field(_LinkKinds())
    """Kind of each link, shape (c,): 0 stretch, 1 shear, 2 bend (selects its compliance)."""
    triangles: np.ndarray = checked_field(_Indices(("t", 3)), default_factory=lambda: np.zeros((0, 3), np.int32))
    """Triangles (t, 3) int, counter-clockwise seen from the front (rendering, wind, collisions)."""
    bend_quads: np.ndarray = checked_field(_Indices(("b", 4)), default_factory=lambda: np.zeros((0, 4), np.int32))
    """Dihedral bending elements (b, 4) int: shared edge (e0, e1), then opposite vertices (o0, o1)."""
    rest_x: np.ndarray | None = checked_field(Arr(("n", 3), unit=" [m]", readonly=True), None)
    """Rest positions [m], shape (n, 3); default: a copy of ``x``."""
    rest_uv: np.ndarray | None = checked_field(Arr(("n", 2), unit=" [m]", readonly=True), None)
    """Rest material coordinates [m], shape (n, 2) (texture and anisotropy); default: zeros."""
    inv_mass: np.ndarray | None = checked_field(Arr(("n",), low=0.0, unit=" [1/kg]"), None)
    """Inverse masses [1/kg], shape (n,), >= 0; 0 fixes a particle for good. Default: 1/mass."""
    material: ClothMaterial = checked_field(Instance(ClothMaterial, "a ClothMaterial"), default_factory=ClothMaterial)
    """Fabric parameters (density, compliances, damping, thickness, friction)."""
    model: str = checked_field(Custom(_model), "xpbd")
    """Solver that steps this cloth: a built-in one of ``MODELS`` or a registered one (``MODEL_SPECS``);
    fixed once built (replace the component to switch)."""
    settings: Any = checked_field(Custom(_settings), None)
    """The model's settings (VerletSettings, MassSpringSettings, ImplicitSettings); None: defaults."""
    iterations: int = checked_field(Int(1), 1)
    """Constraint sweeps per substep [-] (XPBD: each a Gauss–Seidel pass over the links and bend quads, then the
    yarns; after the collisions the yarns run once more). With the default 16 substeps, 1 keeps a 64² sheet draped
    over a ball or a table within 2 % while it lands and 0.1–0.5 % at rest (docs/models.md, "Stiffness").
    Raise substeps before sweeps."""
    tethers: bool = checked_field(Flag(), True)
    """Long-range attachments (Kim et al. 2012): no particle drifts farther from its pinned
    particles than in the rest shape. Cures super-elastic sag at high resolution for little cost."""
    tether_count: int = checked_field(Int(1), 2)
    """Pinned particles each free particle is tethered to (the nearest in rest space)."""
    yarns: bool = checked_field(Flag(), True)
    """XPBD: solve each warp and weft line of stretch links exactly, a tridiagonal system per line, after every
    sweep (``loom.systems.xpbd.yarns``): a correction crosses the cloth in one sweep instead of one link per
    sweep, so cloth that hangs from a contact or carries a load stays within a few % stretch. False: plain
    Gauss–Seidel sweeps (cheaper per sweep, much stretchier where the cloth is not pinned)."""
    self_collision: bool = checked_field(Flag(), False)
    """Keep this cloth's particles ``material.thickness`` apart from each other and from other
    self-colliding cloths (systems/collision/self_collision.py). Costs about as much as the constraint solve."""
    self_collision_mode: str = checked_field(Choice(SELF_COLLISION_MODES), "particle")
    """"particle": particle pairs only (fine meshes, spacing ≤ thickness); "triangle": also keep
    particles off non-incident triangles (coarse meshes)."""
    precision: str = checked_field(Custom(_precision), "float64")
    """Storage of the changing particle state (x, x_prev, v, force): "float64", or "float32" for
    half the memory traffic (XPBD only; rest data, masses and constraint tables stay float64, and
    kernels compute in float64). Accuracy and speed are measured in docs/physics.md."""

    # --- derived rest data (Model: coloured constraint tables; no step changes them) ------------
    link_order: np.ndarray = checked_field(
        Arr(("c",), "i", dtype=np.int64, count="c", readonly=True), init=False, repr=False)
    """Colour order of the links: ``link_i == links[link_order, 0]``, (c,) int64."""
    link_i: np.ndarray = checked_field(Arr(("c",), "i", count="n", readonly=True), init=False, repr=False)
    """First particle of each link, (c,) int32, colour order."""
    link_j: np.ndarray = checked_field(Arr(("c",), "i", count="n", readonly=True), init=False, repr=False)
    """Second particle of each link, (c,) int32, colour order."""
    link_rest: np.ndarray = checked_field(
        Arr(("c",), low=0.0, low_open=True, unit=" [m]", readonly=True), init=False, repr=False)
    """Rest length of each link [m], (c,)."""
    link_compliance: np.ndarray = checked_field(
        Arr(("c",), low=0.0, unit=" [m/N]", readonly=True), init=False, repr=False)
    """Compliance of each link [m/N], (c,), from the material by kind."""
    link_max: np.ndarray = checked_field(
        Arr(("c",), finite=False, low=0.0, low_open=True, unit=" [m]", readonly=True), init=False, repr=False)
    """Provot strain-limit length of each link [m], (c,); inf where no limit applies."""
    link_color_offsets: np.ndarray = checked_field(Offsets("c"), init=False, repr=False)
    """Colour slices of the link tables, (colors + 1,) int32; within a colour, stretch links come last."""
    bend_rest_angle: np.ndarray = checked_field(Arr(("b",), unit=" [rad]", readonly=True), init=False, repr=False)
    """Rest dihedral angle of each bend quad [rad], (b,), colour order."""
    bend_color_offsets: np.ndarray = checked_field(Offsets("b"), init=False, repr=False)
    """Colour slices of ``bend_quads``, (colors + 1,) int32."""
    base_inv_mass: np.ndarray = checked_field(
        Arr(("n",), low=0.0, unit=" [1/kg]", readonly=True), init=False, repr=False)
    """Inverse masses with no pins [1/kg], (n,); pins set ``inv_mass`` to 0 and release back to this."""

    # --- state (State: what a step changes, with x and inv_mass above) --------------------------
    v: np.ndarray = checked_field(Arr(("n", 3), dtype="state", unit=" [m/s]"), init=False, repr=False)
    """Particle velocities [m/s], (n, 3)."""
    x_prev: np.ndarray = checked_field(Arr(("n", 3), dtype="state", unit=" [m]"), init=False, repr=False)
    """Positions at the start of the last substep [m], (n, 3)."""
    force: np.ndarray = checked_field(Arr(("n", 3), dtype="state", unit=" [N]"), init=False, repr=False)
    """External forces for this step [N], (n, 3): wind and user forces add here; cleared after each step."""
    contact: np.ndarray = checked_field(Arr(("n", 5), unit=" [-]"), init=False, repr=False)
    """What each particle touched in the last substep, (n, 5): the collider's outward unit normal (columns 0–2, [-])
    and in column 3 1.0 if that collider was at rest (moved less than a tenth of the contact reach), 0.0 if it moved;
    −1.0 and no normal if it touched only two-way bodies (``Collider.two_way``: they give way, and the contact's push
    back is their impulse); 2.0 and no normal if the particle was squeezed out of a pinch; 3.0 if it rests and
    static friction held it; all zero where it touched nothing; column 4: how far [m] the substep's solve would
    have moved it into the surface it rests on (the surface took that push: friction's budget in the collisions),
    then, after the collisions, minus the static friction a ``STUCK`` particle has left [m] (μ·N less its slip: how
    far the yarns' pass after the collisions may pull it before it slides; that pass sets the column back to 0).
    Written by environment collision. XPBD's yarn solve and stretch limit let such a particle slide along the
    surface but not into it: right after the collisions, and in the next substep's solve for a collider at rest
    (a moving one may have left), so a yarn pulled over a table's rim is not pulled into the rim by the solve and
    pushed back out by the contact (which left the links at the rim 2–3 % long every substep). After the collisions a
    yarn touching a two-way body is not solved again, and a squeezed-out particle does not move."""

    # --- counters every model reads ---------------------------------------------------------------
    changes: int = checked_field(Int(0), init=False, default=0)
    """The change signal: counts the changes a model must follow — pins or grabs taking or letting go of particles,
    masses or inverse masses assigned, a new topology (tearing), a step the guard refused (``changed()``). A model
    keeps the value it last saw and refreshes what it derived (XPBD's tethers, Verlet's retry) when it moved."""
    rejected_steps: int = checked_field(Int(0), init=False, default=0)
    """Steps refused because they would have written NaN or inf (the state was restored)."""

    _check_first = ("precision", "model", "rest_x", "link_i")
    """Checked before the other fields (``check_state``, ``assign``): the fields that fix the state dtype, the
    settings class and the shape symbols n and c, so every other field is checked against converted values."""

    def __post_init__(self) -> None:
        """Check each constructor input with its declared spec (``_given``; the fields that fix the state dtype,
        the model and the particle count first), fill the defaults (``rest_x`` a copy of ``x``, ``rest_uv`` zeros,
        ``inv_mass`` 1/mass), then derive the colour-ordered link and bend tables and the zeroed state."""
        self.precision = self._given("precision")
        self.model = self._given("model")
        self.settings = self._given("settings")
        if self.precision == "float32" and not MODEL_SPECS[self.model].float32:
            raise ValueError(f"Cloth.precision = 'float32' with model = {self.model!r}: float32 state is "
                             f"for models whose kernels take it (xpbd; ModelSpec.float32)")
        positions = self.x
        if self.rest_x is not None:
            self.rest_x = self._given("rest_x")           # a given rest shape fixes the particle count n
        self.x = self._given("x")                         # stored in the precision's dtype
        n = self.x.shape[0]
        if n == 0:
            raise ValueError("Cloth.x: shape (0, 3): a cloth needs at least one particle")
        if self.rest_x is None:
            self.rest_x = self._given("rest_x", positions)    # float64, whatever the state's precision
        self.mass = self._given("mass")
        self.rest_uv = np.zeros((n, 2)) if self.rest_uv is None else self._given("rest_uv")
        if self.inv_mass is None:
            with np.errstate(over="ignore"):
                self.inv_mass = 1.0 / self.mass
            huge = np.flatnonzero(~np.isfinite(self.inv_mass))
            if huge.size:
                k = int(huge[0])
                raise ValueError(f"Cloth.mass[{k}] = {show(self.mass[k])}: so small its inverse overflows [kg]")
        else:
            self.inv_mass = self._given("inv_mass")
        self.base_inv_mass = self.inv_mass.copy()
        self.triangles = self._given("triangles")
        _check_triangles(self.triangles, self.rest_x)
        self.links = self._given("links")
        self.link_kind = self._given("link_kind")         # against the links given with it
        quads = self._given("bend_quads")
        for name in ("material", "iterations", "tether_count", "tethers", "yarns", "self_collision",
                     "self_collision_mode"):
            setattr(self, name, self._given(name))
        self._build_links(self.links, self.link_kind)
        self._build_bends(quads)
        self.v = np.zeros_like(self.x)
        self.x_prev = self.x.copy()
        self.force = np.zeros_like(self.x)
        self.contact = np.zeros((n, 5))
        self.__dict__["changes"] = 0                      # the assignments above built the cloth: no change yet

    def _given(self, name: str, value: Any = None) -> Any:
        """``value`` (None: the field as given to the constructor) checked and converted by the field's declared
        spec against the fields checked before it (its own given value fixes no shape symbol); an array that is
        still the caller's own is returned as a copy, so the cloth owns its arrays."""
        given = self.__dict__[name] if value is None else value
        state = {key: item for key, item in self.__dict__.items() if key != name}
        spec = self._fields[name]
        checked = spec.check("Cloth", name, state, given, self._dims)
        return checked.copy() if checked is given and isinstance(checked, np.ndarray) and not spec.readonly \
            else checked

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "model" and "model" in self.__dict__ and value != self.__dict__["model"]:
            raise FrozenFieldError(f"Cloth.model = {value!r}: a cloth's model is fixed when it is built (its "
                                   f"settings and the systems' index of cloths by model follow it); to switch, replace "
                                   f"the component: app.add_component(entity, Cloth.from_mesh(..., model={value!r}))")
        super().__setattr__(name, value)
        if name == "material" and "link_compliance" in self.__dict__:
            self._link_material()
        elif name in _SIGNALLED and "changes" in self.__dict__:
            self.changed()

    def changed(self) -> None:
        """Tell every model that pins, grabs, masses or the topology of this cloth changed, or that the guard
        refused a step: ``changes`` moves on (``revision`` does not: no array was replaced). Pins, grabs and
        tearing call it; a game that writes ``inv_mass`` in place calls it after the write."""
        self.__dict__["changes"] = self.__dict__.get("changes", 0) + 1

    def _link_material(self) -> None:
        """Each link's compliance and limit from the material by kind, both new read-only arrays (``material`` was
        just assigned, so the cloth's ``revision`` moved and the solvers' held tables and the deformation limit
        rebuild for them). Runs when the cloth is built and whenever ``material`` is assigned, so a fabric switched
        live behaves as built."""
        m = self.material
        kinds = self.link_kind[self.link_order]
        compliance = np.array([m.stretch_compliance, m.shear_compliance, m.bend_compliance])[kinds]
        compliance.flags.writeable = False
        object.__setattr__(self, "link_compliance", compliance)
        link_max = self.link_bounds(m.strain_limit, m.stretch_limit)
        link_max.flags.writeable = False
        object.__setattr__(self, "link_max", link_max)

    def link_bounds(self, strain_limit: float | None, stretch_limit: float | None = None) -> np.ndarray:
        """Longest each link may be [m], (c,), colour order: (1 + strain_limit) × rest for stretch and shear links,
        (1 + stretch_limit) × rest for stretch links if shorter, inf for bend links and where a limit is None
        (``link_max`` is this for the material's two limits)."""
        kinds = self.link_kind[self.link_order]
        limit = np.array([min(_limit(strain_limit), _limit(stretch_limit)), _limit(strain_limit), np.inf])
        return np.ascontiguousarray(self.link_rest * limit[kinds])

    def _build_links(self, links: np.ndarray, kinds: np.ndarray) -> None:
        """Derive rest lengths, compliances and strain limits, then store the links in colour order."""
        same = np.flatnonzero(links[:, 0] == links[:, 1])
        if same.size:
            k = int(same[0])
            raise ValueError(f"Cloth.links[{k}] = {links[k].tolist()}: a link needs two different particles")
        rest = np.linalg.norm(self.rest_x[links[:, 0]] - self.rest_x[links[:, 1]], axis=1)
        zero = np.flatnonzero(rest <= 1e-9)
        if zero.size:
            k = int(zero[0])
            raise ValueError(f"Cloth.links[{k}] = {links[k].tolist()}: rest length {rest[k]:.3g} m; "
                             f"particles of a link must not coincide in the rest shape")
        order, self.link_color_offsets = color_order(links, self.particle_count)
        # inside each colour the stretch links come last, so a solve that takes them in yarns
        # (loom.systems.xpbd.yarns) sweeps each colour's other links as one slice
        colour = np.repeat(np.arange(self.link_color_offsets.shape[0] - 1), np.diff(self.link_color_offsets))
        order = order[np.lexsort((kinds[order] == STRETCH, colour))]
        self.link_order = order
        self.link_i = np.ascontiguousarray(links[order, 0])
        self.link_j = np.ascontiguousarray(links[order, 1])
        self.link_rest = np.ascontiguousarray(rest[order])
        self._link_material()

    def _build_bends(self, quads: np.ndarray) -> None:
        """Colour the dihedral bend quads and measure their rest angles (used by bend_model="dihedral"
        and by the implicit model's bend condition)."""
        order, self.bend_color_offsets = color_order(quads, self.particle_count)
        self.bend_quads = np.ascontiguousarray(quads[order])
        self.bend_rest_angle = dihedral_angles(self.rest_x, self.bend_quads)

    # --- constructors ---------------------------------------------------------------------------
    @classmethod
    def from_mesh(cls, mesh: Mesh, material: ClothMaterial | str = "cotton", *, model: str = "xpbd",
                  settings: Any = None, iterations: int = 1, tethers: bool = True, yarns: bool = True,
                  self_collision: bool = False, self_collision_mode: str = "particle", precision: str = "float64",
                  **material_changes: Any) -> Cloth:
        """Build a cloth from ``mesh``: masses by Fuhrmann 2003 eq. 1, links from the mesh's
        stretch, shear and bend tables (bend quads for ``bend_model="dihedral"``).

        ``material`` is a ClothMaterial or a preset name; keyword ``material_changes`` override
        its fields (``Cloth.from_mesh(m, "silk", density=0.1, damping=0.0)``)."""
        if not isinstance(mesh, Mesh):
            raise TypeError(f"Cloth.from_mesh mesh = {mesh!r}: expected an engine.mesh.Mesh")
        if isinstance(material, str):
            material = ClothMaterial.preset(material, **material_changes)
        elif material_changes:
            material = material.replace(**material_changes)
        if mesh.triangle_count == 0:
            raise ValueError("Cloth.from_mesh: the mesh has no triangles; use Cloth.from_particles for ropes")
        tables = [mesh.stretch_links, mesh.shear_links]
        if material.bend_model == "distance":
            tables.append(mesh.bend_links)
        links = np.concatenate(tables).astype(np.int32)
        kinds = np.concatenate([np.full(len(t), k, np.int8) for k, t in enumerate(tables)])
        return cls(x=mesh.positions, mass=mesh.vertex_masses(material.density), links=links, link_kind=kinds,
                   triangles=mesh.triangles, bend_quads=mesh.bend_quads, rest_uv=mesh.uv, material=material,
                   model=model, settings=settings, iterations=iterations, tethers=tethers, yarns=yarns,
                   self_collision=self_collision, self_collision_mode=self_collision_mode, precision=precision)

    @classmethod
    def from_particles(cls, positions: Any, mass: Any, links: Any, *, material: ClothMaterial | None = None,
                       inv_mass: Any = None, **options: Any) -> Cloth:
        """Build a cloth of bare particles joined by stretch links (ropes, chains, a pendulum).

        positions (n, 3) [m]; mass (n,) [kg] or one number for all; links (c, 2) particle pairs."""
        x = floats("Cloth", "x", positions, (None, 3), unit=" [m]")
        if np.ndim(mass) == 0:                            # one mass for every particle
            m = np.full(x.shape[0], real("Cloth", "mass", mass, low=0.0, low_open=True, unit=" [kg]"))
        else:
            m = floats("Cloth", "mass", mass, (x.shape[0],), unit=" [kg]")
        links = np.asarray(links)
        kinds = np.zeros(links.shape[0] if links.ndim else 0, np.int8)
        return cls(x=x, mass=m, links=links.reshape(-1, 2) if links.size == 0 else links, link_kind=kinds,
                   inv_mass=inv_mass, material=material or ClothMaterial(), **options)

    # --- read-only properties -----------------------------------------------------------------------
    @property
    def particle_count(self) -> int:
        """Number of particles n."""
        return self.x.shape[0]

    @property
    def substepped(self) -> bool:
        """True if this cloth's model runs in the SUBSTEP stage (all but the whole-step implicit solver)."""
        return not MODEL_SPECS[self.model].whole_step

    @property
    def link_count(self) -> int:
        """Number of distance constraints c (stretch + shear + distance bend)."""
        return self.link_i.shape[0]

    @property
    def constraint_count(self) -> int:
        """Constraints the model projects per sweep: distance links, plus the dihedral bend quads where
        the model uses them (xpbd with bend_model="dihedral", implicit); tethers excluded."""
        use = MODEL_SPECS[self.model].dihedral
        dihedral = use == "always" or (use == "material" and self.material.bend_model == "dihedral")
        return self.link_i.shape[0] + (self.bend_quads.shape[0] if dihedral else 0)

    @property
    def total_mass(self) -> float:
        """Sum of particle masses [kg]."""
        return float(self.mass.sum())

    def strain(self, kind: int | None = STRETCH) -> np.ndarray:
        """Relative elongation (length / rest − 1) of each link of ``kind`` (None: every link), colour order."""
        d = np.linalg.norm(self.x[self.link_i] - self.x[self.link_j], axis=1) / self.link_rest - 1.0
        if kind is None:
            return d
        return d[self.link_kind[self.link_order] == kind]


_SIGNALLED = frozenset(("inv_mass", "base_inv_mass", "mass", "rejected_steps"))
"""Fields whose assignment counts as a change (``Cloth.changed``)."""
_TOPOLOGY = "build a new Cloth to change the mesh"
Cloth._dims = {
    "n": (length("rest_x"), "particles", "the particle count is fixed by the cloth's topology"),
    "c": (length("link_i"), "links", f"the link count is fixed by the cloth's topology; {_TOPOLOGY}"),
    "b": (length("bend_quads"), "bend quads", f"the bend quad count is fixed by the cloth's topology; {_TOPOLOGY}"),
    "t": (length("triangles"), "triangles", f"the triangle count is fixed by the cloth's topology; {_TOPOLOGY}"),
}


def _check_triangles(triangles: np.ndarray, rest_x: np.ndarray) -> None:
    """Raise ValueError for a triangle with a repeated vertex or zero rest area."""
    if triangles.shape[0] == 0:
        return
    t = triangles
    repeated = np.flatnonzero((t[:, 0] == t[:, 1]) | (t[:, 1] == t[:, 2]) | (t[:, 0] == t[:, 2]))
    if repeated.size:
        k = int(repeated[0])
        raise ValueError(f"Cloth.triangles[{k}] = {t[k].tolist()}: degenerate triangle (repeated vertex)")
    flat = np.flatnonzero(triangle_areas(rest_x, t) <= 1e-14)
    if flat.size:
        k = int(flat[0])
        raise ValueError(f"Cloth.triangles[{k}] = {t[k].tolist()}: zero-area triangle in the rest shape")


def dihedral_angles(x: np.ndarray, quads: np.ndarray) -> np.ndarray:
    """Signed dihedral angle [rad] of each quad (e0, e1, o0, o1) at positions ``x`` (n, 3); 0 when flat.

    θ = atan2((n0 × n1) · ê, n0 · n1) with n0 the normal of (e0, e1, o0) and n1 of (e1, e0, o1),
    ê the unit shared edge e1 − e0 (Bridson et al. 2003, §4)."""
    if quads.shape[0] == 0:
        return np.zeros(0)
    e0, e1, o0, o1 = (x[quads[:, k]] for k in range(4))
    edge = e1 - e0
    n0 = np.cross(edge, o0 - e0)
    n1 = np.cross(e0 - e1, o1 - e1)
    unit = edge / np.linalg.norm(edge, axis=1)[:, None]
    sin = np.einsum("ij,ij->i", np.cross(n0, n1), unit)
    cos = np.einsum("ij,ij->i", n0, n1)
    return np.arctan2(sin, cos)


def _limit(fraction: float | None) -> float:
    """A link's longest length as a multiple of its rest length [-] for a limit ``fraction`` (None: no limit)."""
    return np.inf if fraction is None else 1.0 + fraction
