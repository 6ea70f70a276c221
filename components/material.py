"""ClothMaterial: what a fabric is made of — areal density, compliances, damping, thickness, friction.

Compliance is XPBD's inverse stiffness (Macklin et al. 2016): 0 is perfectly stiff, larger is
softer. A distance constraint with compliance α [m/N] behaves like a spring of stiffness 1/α
[N/m]; XPBD divides α by h², so the material is the same at any substep count as far as the solve
converges (more substeps converge further: the cloth gets closer to the material, never farther).
Rough scale for a 1 m cloth at 30–60 particles a side: stretch 0 (woven cloth barely
stretches), shear 1e-3 (stiff) … 1 (woven cloth, the default). Bending, by default, is distance links across two
edges (``bend_compliance``, mesh-dependent). With ``bend_model="dihedral"`` it is the fabric's bending rigidity B
[N·m], as fabric testers measure it (KES-F, FAST): light silk 1 µN·m … denim 100 µN·m; each dihedral hinge's
compliance follows from B and the hinge's rest geometry, so a preset is the same fabric at any mesh resolution
(``bending_rigidity``; docs/materials.md, "Bending in physical units"). Stretch and shear links
keep one compliance per link at any spacing: in a 2D network a link of stiffness k gives the sheet a membrane
stiffness of order k [N/m] whatever its length, so a compliance is already per unit width.

A bare ``ClothMaterial()`` is the cotton preset without its stretch limit: inextensible warp and weft, soft
shear, no deformation limit. With the default 16 substeps and one sweep, a 64² sheet pinned at two corners and
pushed by a ball stretches at most 2 % with no limit to hold it (tests/test_xpbd_defaults.py), and no more at more
substeps. Stiff shear (1e-3, what a bare material had until issue 44) is a different fabric: with inextensible
stretch it makes every grid cell rigid, a grid of rigid cells cannot wrap a ball without stretching, and the better
the solve converges (more substeps) the more the stretch links give (docs/models.md, "Stiffness").
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from loom.components._revision import FrozenChecked, checked_field, frozen_fields
from loom.components._validate import Choice, Real, choice
from loom.engine.persist import persistent

BEND_MODELS = ("distance", "dihedral")

GF_CM2_PER_CM = 9.80665e-5
"""One gf·cm²/cm (the KES-F unit of bending rigidity) in N·m: 9.80665e-3 N × 1e-4 m² / 1e-2 m."""
SILK_BENDING_RIGIDITY = 0.01 * GF_CM2_PER_CM
"""The silk preset's ``bending_rigidity`` [N·m] (0.98 µN·m): a light silk (habutai, crêpe de chine), KES-F B ≈
0.005–0.05 gf·cm²/cm (docs/materials.md)."""
COTTON_BENDING_RIGIDITY = 0.1 * GF_CM2_PER_CM
"""The cotton preset's (and a bare ``ClothMaterial``'s) ``bending_rigidity`` [N·m] (9.8 µN·m): cotton shirting,
KES-F B ≈ 0.05–0.2 gf·cm²/cm (docs/materials.md)."""
DENIM_BENDING_RIGIDITY = 1.0 * GF_CM2_PER_CM
"""The denim preset's ``bending_rigidity`` [N·m] (98 µN·m): a mid-weight denim, KES-F B ≈ 0.5–3 gf·cm²/cm
(docs/materials.md)."""
LEATHER_BENDING_RIGIDITY = 5.0 * GF_CM2_PER_CM
"""The leather preset's ``bending_rigidity`` [N·m] (0.49 mN·m): a garment leather about 1 mm thick."""
RUBBER_BENDING_RIGIDITY = 1.7e-4
"""The rubber preset's ``bending_rigidity`` [N·m]: a 1 mm sheet of E ≈ 2 MPa, B = E·t³/12 (a plate's rigidity, per
unit width, Poisson's ratio neglected)."""


@persistent
@frozen_fields
@dataclass(frozen=True)
class ClothMaterial(FrozenChecked):
    """Fabric parameters, validated on construction; pick a preset with ``ClothMaterial.preset("denim")``."""

    density: float = checked_field(Real(0.0, low_open=True, unit=" [kg/m²]"), 0.15)
    """Areal density [kg/m²]: particle masses are density × one third of adjacent triangle areas
    (Fuhrmann 2003 eq. 1). Cotton shirting ≈ 0.15, denim ≈ 0.4, leather ≈ 0.9."""
    stretch_compliance: float = checked_field(Real(0.0, unit=" [m/N]"), 0.0)
    """Compliance of structural links [m/N]; 0 = inextensible (woven cloth)."""
    shear_compliance: float = checked_field(Real(0.0, unit=" [m/N]"), 1.0)
    """Compliance of shear (diagonal) links [m/N]. Woven cloth shears far more easily than it stretches (its
    yarns turn at their crossings), and a mesh cannot fold finer than its spacing, so where real cloth forms
    small folds (over a ball, at a table's rim) the mesh must shear instead; stiff shear locks a draped grid
    and leaves it stretched, the more so at more substeps (module docstring, docs/models.md). The default is
    soft, as the woven presets are (cotton 1, silk and denim 0.3, leather 0.03); 1e-3 (rubber) is stiff."""
    bending_rigidity: float = checked_field(Real(0.0, low_open=True, unit=" [N·m]"), COTTON_BENDING_RIGIDITY)
    """Bending rigidity B [N·m] (moment per unit width per unit curvature, N·m²/m): what the KES-F bending tester
    (KES-FB2) and FAST-2 measure, the same at any mesh resolution. KES-F reports it in gf·cm²/cm: 1 gf·cm²/cm =
    9.80665e-5 N·m (98 µN·m); FAST in µN·m. Light silk ≈ 0.5–5 µN·m, cotton shirting ≈ 5–20, denim ≈ 50–300 (docs/materials.md,
    with the sources). With bend_model="dihedral" each hinge (edge e between triangles of areas A₁, A₂ at rest)
    gets the compliance α_e = (A₁ + A₂) / (B·|e|²) (the discrete-shells hinge of Grinspun et al. 2003 and Bergou et
    al. 2006: its energy θ²/(2α_e) sums to B/2 ∫κ² dA, ``loom.systems.xpbd.constraints.hinge_compliance``)."""
    bend_angle_compliance: float | None = checked_field(Real(0.0, unit=" [1/(N·m)] (None: from bending_rigidity)",
                                                             optional=True), None)
    """Expert override of the dihedral hinges' compliance α [1/(N·m), rad²/J] (bend_model="dihedral"): one α for every
    hinge, whatever its size, as Loom did before bending_rigidity (a hinge's stiffness then depends on the mesh's
    triangle shapes, not on its spacing). None (the default, every preset): per hinge from ``bending_rigidity``."""
    bend_compliance: float = checked_field(Real(0.0, unit=" [m/N]"), 0.5)
    """Compliance of distance bending links [m/N], used only with bend_model="distance" (the legacy model, an expert
    choice): a link across two edges resists a fold only to second order in its angle (its length changes by
    ≈ l·θ²/8), so no compliance makes it a bending rigidity, and the same value drapes limper on a finer mesh
    (docs/materials.md, "Bending in physical units")."""
    bend_model: str = checked_field(Choice(BEND_MODELS), "distance")
    """"distance" (the default, every preset): links across two edges (Provot's flexion springs, Fuhrmann's bending
    pairs) of compliance ``bend_compliance``, mesh-dependent, and understood by every cloth model; "dihedral": the
    angle between adjacent triangles (Müller et al. 2007; Bridson et al. 2003 gradients), each hinge's compliance from
    ``bending_rigidity``: the same fabric at any resolution, XPBD only, and about 3 × the distance links' solve cost
    (docs/materials.md, "Bending in physical units")."""
    damping: float = checked_field(Real(0.0, unit=" [1/s]"), 0.5)
    """Linear velocity damping [1/s]: velocities shrink by exp(-damping·h) each substep, absolute velocity, not
    velocity relative to the air (for air drag, a ``Wind``; docs/physics.md, "Damping and dissipation").
    0 keeps all energy; 0.6 ≈ the seeds' "× 0.99 per 1/60 s frame"."""
    thickness: float = checked_field(Real(0.0, low_open=True, unit=" [m]"), 0.01)
    """Collision thickness [m]: how far cloth keeps from colliders and from itself."""
    friction: float = checked_field(Real(0.0, unit=" [-]"), 0.5)
    """Coulomb friction coefficient [-] against colliders and itself: 0 ice, 0.3 silk, 0.6 cotton, 1 rubber."""
    strain_limit: float | None = checked_field(Real(0.0, unit=" [-] (None turns it off)", optional=True), None)
    """Provot 1995 deformation limit [-]: structural and shear links never exceed (1 + limit) × rest
    length (0.1 = 10 %) at the end of a substep; None turns it off. Useful with a compliant stretch."""
    stretch_limit: float | None = checked_field(Real(0.0, unit=" [-] (None turns it off)", optional=True), None)
    """Longest a structural (warp or weft) link may be at the end of a substep, beyond its rest length [-]:
    Provot 1995's deformation limit on the stretch links alone (woven yarns lock at a few %), run after the
    collisions, so nothing a contact does in a substep leaves a link longer. The woven presets (cotton, silk,
    denim, leather) set 0.012 to 0.02 (``COTTON_STRETCH_LIMIT``, ``WOVEN_STRETCH_LIMIT``): their solve keeps cloth
    far below it (docs/models.md) and it catches the few links a violent contact overstretches. None (a bare
    ClothMaterial, rubber): off, for cloth meant to stretch with its stretch compliance (a limit below that stretch
    would fight it every substep). A cloth that can tear ignores it and keeps only ``strain_limit``
    (``loom.systems.xpbd.constraints.limit_links``)."""

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> ClothMaterial:
        """Return the named preset (cotton, silk, denim, leather, rubber), with ``overrides`` applied.

        ``preset(name, bend_model="dihedral")`` is the same fabric with its bending in physical units
        (``bending_rigidity``). Raises ValueError for an unknown name."""
        choice("ClothMaterial", "preset", name, tuple(PRESETS))
        return dataclasses.replace(PRESETS[name], **overrides)

    def replace(self, **changes: Any) -> ClothMaterial:
        """Return a copy with ``changes`` (validated like the constructor)."""
        return dataclasses.replace(self, **changes)


WOVEN_STRETCH_LIMIT = 0.02
"""The silk and leather presets' ``stretch_limit`` [-]: woven yarns lock at 1–3 %."""
COTTON_STRETCH_LIMIT = 0.012
"""The cotton and denim presets' ``stretch_limit`` [-] (cotton yarns, the low end of woven cloth's 1–3 %). Links
whose two ends friction holds rest at the limit (docs/models.md, "What holds the 128² rim"), so a tight limit keeps a
resting tablecloth tight, for the same cost as 2 %. Silk keeps 2 %: a silk cape at 1.2 % is pressed into its hero, a
two-way body the limit may push into (docs/performance.md, "Moved from docstrings")."""

PRESETS: dict[str, ClothMaterial] = {
    "cotton": ClothMaterial(bending_rigidity=COTTON_BENDING_RIGIDITY, shear_compliance=1.0,
                            stretch_limit=COTTON_STRETCH_LIMIT),
    "silk": ClothMaterial(density=0.06, bending_rigidity=SILK_BENDING_RIGIDITY, shear_compliance=0.3,
                          bend_compliance=5.0, damping=0.3, thickness=0.006, friction=0.3,
                          stretch_limit=WOVEN_STRETCH_LIMIT),
    "denim": ClothMaterial(density=0.4, bending_rigidity=DENIM_BENDING_RIGIDITY, shear_compliance=0.3,
                           bend_compliance=0.05, damping=0.8, thickness=0.012, friction=0.6,
                           stretch_limit=COTTON_STRETCH_LIMIT),
    "leather": ClothMaterial(density=0.9, bending_rigidity=LEATHER_BENDING_RIGIDITY, shear_compliance=0.03,
                             bend_compliance=5e-3, damping=1.0, thickness=0.015, friction=0.7,
                             stretch_limit=WOVEN_STRETCH_LIMIT),
    "rubber": ClothMaterial(density=1.2, bending_rigidity=RUBBER_BENDING_RIGIDITY, stretch_compliance=1e-3,
                            shear_compliance=1e-3, bend_compliance=0.02, damping=0.4, thickness=0.01, friction=1.0,
                            strain_limit=0.5),
}
"""Named fabrics for games; tune from the closest one with ``ClothMaterial.preset(name, **changes)``."""
