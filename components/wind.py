"""Wind and Blower: the air around the cloth — a steady, gusty, turbulent field and cones of blown air.

Both are plain data on their own entities; ``systems/forces/wind.py`` turns them into aerodynamic forces on
every cloth's triangles. Several Wind entities add their air velocities (the aerodynamic
coefficients of the first one, by entity id, apply); each active Blower adds its cone::

    app.spawn(Wind(velocity=(6.0, 0.0, 1.5), gust=0.3, turbulence=0.2, seed=7))   # [m/s], fractions
    app.spawn(Blower(speed=12.0, active=False))          # the input system points it and turns it on
    app.spawn(Wind(velocity=(4.0, 0.0, 0.0),                # a wind zone: blows only inside the box
                   region=WindBox(center=(3.0, 2.0, 0.0), half_size=(1.0, 1.0, 0.5), edge=0.2)))

Gusts and turbulence are deterministic functions of ``seed`` and simulated time: the same scene
gives the same flutter on every run (DESIGN.md, "Invariants").
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from loom.components._revision import Checked, checked_field
from loom.components._validate import Arr, Custom, Flag, Instance, Int, Real, unit_vector
from loom.components.transform import _rotation
from loom.engine.persist import persistent


@persistent
@dataclass(eq=False)
class WindBox(Checked):
    """A box-shaped wind zone (``Wind.region``): the wind blows at full strength deeper than ``edge`` inside
    the box, fades smoothly (smoothstep of depth/edge) to zero at its faces, and is absent outside.

    Depth is the distance to the nearest face, along the box's own axes. Move the zone by assigning
    ``center`` (e.g. each frame from a Transform); ``WindBox(center=(0, 2, 0), half_size=(1, 1, 0.5))``
    covers x in [−1, 1], y in [1, 3], z in [−0.5, 0.5] [m]."""

    center: Any = checked_field(Arr((3,), unit=" [m]"), (0.0, 0.0, 0.0))
    """Centre of the box in world space [m], shape (3,)."""
    half_size: Any = checked_field(Arr((3,), low=0.0, low_open=True, unit=" [m]"), (1.0, 1.0, 1.0))
    """Half-extents along the box's axes [m], shape (3,), each > 0."""
    rotation: Any = checked_field(Custom(_rotation), default_factory=lambda: np.eye(3))
    """Box-to-world rotation, shape (3, 3), orthonormal, det +1 (identity: axis-aligned)."""
    edge: float = checked_field(Real(0.0, unit=" [m]"), 0.0)
    """Width of the soft edge [m] in [0, min(half_size)]: 0 a hard edge, else the wind fades over this depth."""

    def _cross(self, owner: str, state: Mapping[str, Any]) -> None:
        """The soft edge fits inside the box (the centre gets the full wind)."""
        if state["edge"] > float(np.min(state["half_size"])):
            raise ValueError(f"{owner}.edge = {state['edge']!r}: must be <= the smallest half_size "
                             f"{float(np.min(state['half_size']))!r} [m]")


@persistent
@dataclass(eq=False)
class WindSphere(Checked):
    """A ball-shaped wind zone (``Wind.region``): full wind deeper than ``edge`` inside the sphere, a smooth
    fade to zero at its surface, none outside. Move it by assigning ``center``."""

    center: Any = checked_field(Arr((3,), unit=" [m]"), (0.0, 0.0, 0.0))
    """Centre of the sphere in world space [m], shape (3,)."""
    radius: float = checked_field(Real(0.0, low_open=True, unit=" [m]"), 1.0)
    """Radius [m] > 0."""
    edge: float = checked_field(Real(0.0, unit=" [m]"), 0.0)
    """Width of the soft edge [m] in [0, radius]: 0 a hard edge, else the wind fades over this depth."""

    def _cross(self, owner: str, state: Mapping[str, Any]) -> None:
        """The soft edge fits inside the sphere (the centre gets the full wind)."""
        if state["edge"] > state["radius"]:
            raise ValueError(f"{owner}.edge = {state['edge']!r}: must be <= radius {state['radius']!r} [m]")


_REGION = Instance((WindBox, WindSphere), "a WindBox, a WindSphere or None", optional=True)
"""Spec of ``Wind.region``."""


@persistent
@dataclass(eq=False)
class Wind(Checked):
    """A uniform air velocity [m/s] with gusts (in time) and turbulence (in space and time).

    The air velocity at point p and time t is
    ``u = velocity·(1 + gust·s(t)) + turbulence·|velocity|·w(p, t)``, where s and w are smooth
    seeded sums of sines bounded by 1 (``loom.systems.forces.wind.air_velocity`` evaluates it).
    The force model (quadratic pressure drag along the triangle normal, lift across the flow and
    Provot's linear viscous term) is documented in ``systems/forces/wind.py``.

    With a ``region`` (a ``WindBox`` or ``WindSphere``) the wind is a zone: its air velocity is scaled per
    particle by a weight, 1 inside, fading over the region's ``edge`` to 0 at its boundary, and a cloth wholly
    outside every zone (with no global Wind or Blower about) feels no aerodynamic force at all. Without a
    region it blows everywhere. Several Winds add up.
    """

    velocity: Any = checked_field(Arr((3,), unit=" [m/s]"), (5.0, 0.0, 0.0))
    """Mean air velocity [m/s], shape (3,): 3 m/s a breeze, 8 m/s a fresh wind, 15 m/s a gale."""
    gust: float = checked_field(Real(0.0, 1.0, unit=" [-] (a fraction in [0, 1])"), 0.0)
    """Gust strength [-] in [0, 1]: the mean speed swings between (1 − gust) and (1 + gust) times."""
    gust_period: float = checked_field(Real(0.0, low_open=True, unit=" [s]"), 2.0)
    """Typical time between gusts [s], > 0 (the gust sines have periods of 0.5 … 2 × this)."""
    turbulence: float = checked_field(Real(0.0, 1.0, unit=" [-] (a fraction of |velocity| in [0, 1])"), 0.0)
    """Turbulent fluctuation [-] in [0, 1], as a fraction of |velocity|; varies across the cloth
    (wavelengths 0.5 … 3 m) and in time, so a flag ripples instead of swinging as a board."""
    drag_coefficient: float = checked_field(Real(0.0, unit=" [-]"), 1.0)
    """C_D [-] >= 0 of the pressure force along the normal, ½·ρ·C_D·A·|u_rel|·(n·u_rel):
    about 1.2 for a solid square plate facing the flow, less for porous fabric."""
    lift_coefficient: float = checked_field(Real(0.0, unit=" [-]"), 0.2)
    """C_L [-] >= 0 of the force across the flow, ½·ρ·C_L·A·|u_rel|²·cos θ·sin θ (zero face-on
    and edge-on, largest at 45°): what makes a flag flutter rather than just lean."""
    viscosity: float = checked_field(Real(0.0, unit=" [N·s/m³]"), 0.0)
    """Provot 1995's linear viscous fluid coefficient per unit area [N·s/m³] >= 0: each triangle
    gets viscosity·A·[n·(u − v)]·n. 0 (default) leaves only the quadratic model."""
    air_density: float = checked_field(Real(0.0, low_open=True, unit=" [kg/m³]"), 1.2)
    """ρ [kg/m³] > 0; 1.2 is air at sea level and 20 °C (water: 1000)."""
    seed: int = checked_field(Int(0), 0)
    """Seed [-] >= 0 of the gust and turbulence phases; same seed, same wind."""
    active: bool = checked_field(Flag(), True)
    """False silences this wind (toggle it instead of removing the component)."""
    region: Any = checked_field(_REGION, None)
    """Where it blows: None everywhere, or a ``WindBox`` / ``WindSphere`` zone (world space [m])."""


@persistent
@dataclass(eq=False)
class Blower(Checked):
    """A cone of air blown from ``origin`` along ``direction``: a fan, a hair dryer, the player's breath.

    At a point a distance s along the axis and r off it, the air moves along ``direction`` at
    ``speed·(radius/R)²·(1 − (r/R)²)²`` for r < R = radius + s·tan(spread), else not at all:
    the jet widens with the spread angle and slows as it widens (its volume flow is kept), and
    fades smoothly to its rim. Nothing blows behind the origin. Schönberger §3.3 blows "from the
    position of the camera toward the cursor": ``loom.systems.interaction.picking.update_blower`` does that.
    """

    origin: Any = checked_field(Arr((3,), unit=" [m]"), (0.0, 0.0, 0.0))
    """Nozzle centre [m], shape (3,)."""
    direction: Any = checked_field(Custom(unit_vector), (0.0, 0.0, -1.0))
    """Blowing direction, shape (3,), normalised on construction and assignment (must not be zero)."""
    speed: float = checked_field(Real(0.0, unit=" [m/s]"), 10.0)
    """Air speed at the nozzle [m/s] >= 0."""
    radius: float = checked_field(Real(0.0, low_open=True, unit=" [m]"), 0.15)
    """Nozzle radius [m] > 0."""
    spread: float = checked_field(Real(0.0, 1.5, unit=" [rad] (half-angle)"), 0.15)
    """Half-angle of the cone [rad] in [0, 1.5]: 0 a straight tube of air, 0.15 (8.6°) a fan."""
    active: bool = checked_field(Flag(), False)
    """True while blowing (the input system turns it on while a key or button is held)."""
