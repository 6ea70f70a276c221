"""Solver settings per cloth model: how a cloth is stepped, apart from what it is made of.

``Cloth(model=...)`` picks the solver; ``Cloth(settings=...)`` tunes it with the matching class
below (None: its defaults). The fabric itself — density, thickness, friction — stays in
ClothMaterial and is shared by every model. XPBD needs no class here: its knobs are the
material's compliances and the cloth's ``iterations`` and ``tethers``.

``MODEL_SPECS`` is what components know of each model (settings class, whole-step or substepped,
float32, dihedral bends); ``register_settings`` adds a model, and ``loom.systems.registry.register_model``
calls it, so a plugin author's model is a name ``Cloth`` accepts without components importing systems.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loom.components._revision import FrozenChecked, checked_field, frozen_fields
from loom.components._validate import Arr, Choice, FieldError, Int, Real, choice
from loom.engine.persist import persistent

INTEGRATORS = ("explicit_euler", "symplectic_euler", "rk4", "verlet")
_LIMIT = Real(0.0, unit=" [-] (None turns it off)", optional=True)
"""A deformation limit [-] >= 0, or None (off)."""


@persistent
@frozen_fields
@dataclass(frozen=True)
class VerletSettings(FrozenChecked):
    """Constraint-based Verlet cloth (Fuhrmann et al. 2003 §3; Schönberger §3.2–3.3; Fisher "Verlet").

    Position Verlet x' = x + (x − x_prev)·drag + a·h², then ``passes`` relaxation passes that
    keep every structural/shear edge within [stretch_min, stretch_max] × rest length (eqs. 5–9)
    and every bending pair no shorter than bend_min × rest length."""

    drag: float = checked_field(Real(0.0, 1.0, low_open=True, unit=" [-]"), 0.99)
    """Fraction of velocity kept per 1/60 s [-] (0.99 gentle air, 0.97 thick air; 1 none).
    Applied per substep as drag^(60·h), so it does not depend on the substep count."""
    stretch_max: float = checked_field(Real(1.0, unit=" [-]"), 1.0)
    """d_max: an edge longer than stretch_max × rest is pulled back [-] (≥ 1; 1.1 allows 10 %)."""
    stretch_min: float = checked_field(Real(0.0, 1.0, low_open=True, unit=" [-]"), 1.0)
    """d_min: an edge shorter than stretch_min × rest is pushed apart [-] (≤ 1)."""
    bend_min: float = checked_field(Real(0.0, 1.0, low_open=True, unit=" [-]"), 0.9)
    """Too-short coefficient of bending pairs [-] (Fuhrmann: 0.8 limp … 1.0 stiff)."""
    passes: int = checked_field(Int(1), 4)
    """Relaxation passes over all constraints per substep."""


@persistent
@frozen_fields
@dataclass(frozen=True)
class MassSpringSettings(FrozenChecked):
    """Hooke springs with an explicit integrator (Provot 1995; Fisher "Mass-Spring Model").

    Forces: structural, shear and flexion springs k·(|Δx| − l₀) with spring damping along the
    spring, viscous damping −C_dis·v, gravity, and the viscous fluid force C_vi·[n·(u − v)]·n of
    air moving at ``fluid_velocity``. After each substep Provot's deformation limit shortens
    springs stretched beyond (1 + limit) × rest, in passes."""

    integrator: str = checked_field(Choice(INTEGRATORS), "symplectic_euler")
    """explicit_euler (unstable: energy grows), symplectic_euler (energy bounded), rk4 (4th order),
    verlet (position Verlet, 2nd order)."""
    stretch_stiffness: float = checked_field(Real(0.0, unit=" [N/m]"), 200.0)
    """Structural spring constant k [N/m]. Explicit stability needs h < 2·√(m/k) per particle."""
    shear_stiffness: float = checked_field(Real(0.0, unit=" [N/m]"), 50.0)
    """Shear spring constant [N/m]."""
    bend_stiffness: float = checked_field(Real(0.0, unit=" [N/m]"), 5.0)
    """Flexion spring constant [N/m]."""
    spring_damping: float = checked_field(Real(0.0, unit=" [N·s/m]"), 0.02)
    """Damping along each spring [N·s/m]: −c·((v_a − v_b)·n)·n."""
    viscous_damping: float = checked_field(Real(0.0, unit=" [N·s/m]"), 0.002)
    """C_dis [N·s/m]: force −C_dis·v on every particle (Provot)."""
    fluid_viscosity: float = checked_field(Real(0.0, unit=" [N·s/m]"), 0.0)
    """C_vi [N·s/m]: strength of the viscous fluid force on each particle along its normal."""
    fluid_velocity: tuple[float, float, float] = checked_field(Arr((3,), unit=" [m/s]"), (0.0, 0.0, 0.0))
    """u [m/s]: velocity of the surrounding air (wind)."""
    strain_limit: float | None = checked_field(_LIMIT, 0.1)
    """Provot's critical deformation rate τ_c for structural and shear springs [-]; None: off."""
    bend_strain_limit: float | None = checked_field(_LIMIT, None)
    """Limit for flexion springs [-] (optional in Provot); None: off."""
    limit_passes: int = checked_field(Int(0), 100)
    """Most work of the deformation limit per substep, in passes: it checks at most limit_passes × (limited
    springs) springs and stops as soon as none is over (1 + τ_c)·l₀, so a substep ends with every limited
    spring within it. Measured on 300-step hangs with the defaults: 1.8 (32²) and 3.5 (64²) passes' worth on
    average, at most 6.7; on the sheet benchmark's jittering 64² sheet 8.6, at most 14. A substep that
    reaches the bound (or whose anchors are farther apart than the limit allows) leaves springs over,
    counted in ``SpringState.limit_unmet`` and logged to ``loom.limits``.
    0: the limit off. (A fixed count of passes leaves springs over the limit: module docstring of
    ``loom.systems.shared.distance_limits``.)"""

    def __post_init__(self) -> None:
        self._check_fields()
        object.__setattr__(self, "fluid_velocity", tuple(float(v) for v in self.fluid_velocity))   # hashable


@persistent
@frozen_fields
@dataclass(frozen=True)
class ImplicitSettings(FrozenChecked):
    """Baraff & Witkin 1998 implicit cloth: condition forces, backward Euler, filtered PCG (§3–7).

    Stiffnesses multiply the energies E = ½·k·C·C of the stretch (eq. 10), shear and bend
    conditions; each condition has damping d = −k_d·(∂C/∂x)·Ċ (eq. 11)."""

    stretch_stiffness: float = checked_field(Real(0.0), 5000.0)
    """k of the stretch condition [N/m]."""
    shear_stiffness: float = checked_field(Real(0.0), 500.0)
    """k of the shear condition [N/m]."""
    bend_stiffness: float = checked_field(Real(0.0), 1e-3)
    """k_u of the bend condition [N·m]: stiffness against folds whose crease runs along u (§4.3)."""
    bend_stiffness_v: float | None = checked_field(Real(0.0, unit=" [N·m]", optional=True), None)
    """k_v [N·m] for creases along v; None: the same as ``bend_stiffness`` (isotropic). A shared edge
    at an angle gets (k_u·Δu² + k_v·Δv²)/(Δu² + Δv²) (Baraff & Witkin §4.3): corduroy is stiff one way."""
    stretch_damping: float = checked_field(Real(0.0), 2.0)
    """k_d of the stretch condition [N·s/m]."""
    shear_damping: float = checked_field(Real(0.0), 0.2)
    """k_d of the shear condition [N·s/m]."""
    bend_damping: float = checked_field(Real(0.0), 1e-5)
    """k_d of the bend condition [N·m·s]."""
    b_u: float = checked_field(Real(0.0, low_open=True, unit=" [-]"), 1.0)
    """Rest stretch along u (eq. 10): < 1 shrinks, > 1 lengthens the cloth along u (a cuff) [-]."""
    b_v: float = checked_field(Real(0.0, low_open=True, unit=" [-]"), 1.0)
    """Rest stretch along v (eq. 10) [-]."""
    tolerance: float = checked_field(Real(0.0, 1.0, low_open=True, unit=" [-]"), 1e-3)
    """ε of the modified PCG (§5.3) [-]: stop when the filtered residual's norm² falls below
    ε²·‖filtered b‖². 1e-3 gives the same hanging-sheet strain as 1e-6 in 192 instead of 323
    iterations per solve at 32×32; at 64×64, 1e-6 reaches the 500-iteration cap."""
    max_iterations: int = checked_field(Int(1), 500)
    """Cap on PCG iterations per solve."""
    adaptive: bool = True
    """Adaptive step size (§7): halve and retry a step whose stretch changes drastically."""
    max_stretch_change: float = checked_field(Real(0.0, low_open=True, unit=" [-]"), 0.1)
    """A step whose per-triangle stretch condition changes by more than this is rejected (§7) [-]."""


DIHEDRAL_USES = ("never", "always", "material")
"""When a model solves the dihedral bend quads: never, always, or when ``material.bend_model == "dihedral"``."""


@persistent
@dataclass(frozen=True)
class ModelSpec:
    """What a Cloth needs to know about its model (the systems that step it live in ``loom.systems.registry``)."""

    settings: type | None = None
    """Class of ``Cloth.settings`` (None: the model takes none)."""
    whole_step: bool = False
    """True: solved once per fixed step (PRE_STEP), so the substep systems (pins, colliders) skip it."""
    float32: bool = False
    """True: the model's kernels accept ``precision="float32"`` state."""
    dihedral: str = "never"
    """When it solves the dihedral bend quads (``DIHEDRAL_USES``); counts in ``Cloth.constraint_count``."""

    def __post_init__(self) -> None:
        o = "ModelSpec"
        if self.settings is not None and not isinstance(self.settings, type):
            raise FieldError(f"{o}.settings = {self.settings!r}: expected a class or None")
        choice(o, "dihedral", self.dihedral, DIHEDRAL_USES)


MODEL_SPECS: dict[str, ModelSpec] = {
    "xpbd": ModelSpec(float32=True, dihedral="material"),
    "verlet": ModelSpec(VerletSettings),
    "mass_spring": ModelSpec(MassSpringSettings),
    "implicit": ModelSpec(ImplicitSettings, whole_step=True, dihedral="always"),
}
"""Every model a Cloth accepts, by name: the four built in, then those ``register_settings`` added."""
SETTINGS: dict[str, type | None] = {name: spec.settings for name, spec in MODEL_SPECS.items()}
"""Settings class of each model (None: the model has none); kept in step with ``MODEL_SPECS``."""


def register_settings(model: str, spec: ModelSpec) -> None:
    """Make ``model`` a name ``Cloth(model=...)`` accepts, with its settings class and traits.

    Called by ``loom.systems.registry.register_model`` (components never import systems). Registering
    the same spec again is a no-op; another spec under a known name raises ValueError."""
    if not isinstance(model, str) or not model.isidentifier():
        raise ValueError(f"register_settings model = {model!r}: expected a name like 'my_model'")
    if not isinstance(spec, ModelSpec):
        raise FieldError(f"register_settings spec = {spec!r}: expected a ModelSpec")
    known = MODEL_SPECS.get(model)
    if known is not None and known != spec:
        raise ValueError(f"register_settings: model {model!r} is already known with {known}")
    MODEL_SPECS[model] = spec
    SETTINGS[model] = spec.settings


def model_spec(model: str) -> ModelSpec:
    """The spec of a known ``model``. Raises ValueError naming the known models."""
    if not isinstance(model, str) or model not in MODEL_SPECS:
        choice("Cloth", "model", model, tuple(MODEL_SPECS))
    return MODEL_SPECS[model]


def settings_for(model: str, settings: Any) -> Any:
    """Return ``settings`` checked against ``model`` (its class's defaults when None). Raises FieldError."""
    cls = model_spec(model).settings
    if cls is None:
        if settings is not None:
            raise FieldError(f"Cloth.settings = {settings!r}: model {model!r} takes no settings (leave it None; "
                            f"xpbd is tuned with ClothMaterial compliances, iterations and tethers)")
        return None
    if settings is None:
        return cls()
    if not isinstance(settings, cls):
        raise FieldError(f"Cloth.settings = {settings!r}: model {model!r} expects {cls.__name__}")
    return settings


__all__ = ["DIHEDRAL_USES", "INTEGRATORS", "MODEL_SPECS", "SETTINGS", "ImplicitSettings", "MassSpringSettings",
           "ModelSpec", "VerletSettings", "model_spec", "register_settings", "settings_for"]
