"""MaxDistance: each particle kept within a distance of where an animated reference says it belongs, and behind a
backstop it may not pass (game engines' "max distance" and "backstop": Unity's ``ClothSkinningCoefficient``
maxDistance and collisionSphereDistance, NvCloth's motion and separation constraints, Chaos Cloth's MaxDistance and
Backstop).

The reference is the cloth's rest shape carried by something the game animates: ``reference`` (n, 3) [m] holds one
point per particle in the frame of ``attach_to``'s Transform (a hero, a figure part, a bone), or, with ``attach_to``
None, world points a game rewrites each frame (a skinned position array). Two limits act on each particle i, as a
position projection late in each substep, after the collisions (``loom.systems.collision.max_distance``):

    max distance   |x_i − p_i| ≤ r_i                        (r_i = ``distance[i]`` [m]; 0 pins it to p_i)
    backstop       x_i outside the ball of radius R about   c_i = p_i − n_i·(R + d_i)
                   (a capsule: the segment c_i ± a·L swept by that ball)

where p_i and n_i are the reference point and unit normal (``normal``, same frame) in the world at that substep,
R = ``backstop_radius``, d_i = ``backstop_offset[i]`` (the gap [m] between the reference point and the backstop's
surface, along −n_i; negative lets the backstop reach past the point), a = ``backstop_axis`` and L =
``backstop_half_length`` (0: a sphere). NvCloth's separation constraint is the sphere; a large radius (Unity: "large
w.r.t. the triangle size") makes it a wall under each particle, and a long capsule a wall that does not curve along
its axis. A particle inside its backstop when the backstop is switched on or turned round (``rearm``) is not flung
out: the backstop acts on it from when it is first outside. ``loom.cape`` gives its cape both (docs/guide-cape.md,
"Max distance and backstop").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from loom.components._revision import Checked, checked_field
from loom.components._validate import Arr, Custom, Flag, Int, Real, length, unit_vector
from loom.engine.persist import persistent

_DIMS = {"n": (length("reference"), "particles", "one per particle of the cloth: n = len(MaxDistance.reference)")}


def _per_particle(owner: str, name: str, state: Any, value: Any, *, low: float | None, finite: bool,
                  unit: str) -> np.ndarray:
    """A scalar (the same for every particle) or (n,) floats, stored as (n,) float64."""
    n = length("reference")(state)
    arr = np.asarray(value, dtype=np.float64) if not isinstance(value, (str, bytes)) else None
    if arr is None or arr.ndim > 1 or (arr.ndim == 1 and arr.shape[0] != n):
        raise ValueError(f"{owner}.{name} = {value!r}: expected a number or ({n},) numbers{unit}, one per particle")
    out = np.array(np.broadcast_to(arr, (n,)), dtype=np.float64)
    if np.isnan(out).any() or (finite and not np.isfinite(out).all()):
        raise ValueError(f"{owner}.{name}: must be {'finite ' if finite else ''}numbers{unit}, not NaN")
    if low is not None and (out < low).any():
        k = int(np.flatnonzero(out < low)[0])
        raise ValueError(f"{owner}.{name}[{k}] = {float(out[k])}: must be >= {low}{unit}")
    return out


def _distance(owner: str, name: str, state: Any, value: Any) -> np.ndarray:
    """MaxDistance.distance: a scalar or (n,) [m] >= 0; inf leaves a particle free."""
    return _per_particle(owner, name, state, value, low=0.0, finite=False, unit=" [m]")


def _offset(owner: str, name: str, state: Any, value: Any) -> np.ndarray:
    """MaxDistance.backstop_offset: a scalar or (n,) [m], finite."""
    return _per_particle(owner, name, state, value, low=None, finite=True, unit=" [m]")


def _normals(owner: str, name: str, state: Any, value: Any) -> np.ndarray | None:
    """MaxDistance.normal: (n, 3) unit vectors, or a single (3,) for every particle, or None."""
    if value is None:
        return None
    n = length("reference")(state)
    arr = np.asarray(value, dtype=np.float64)
    if arr.shape == (3,):
        arr = np.broadcast_to(arr, (n, 3))
    arr = np.array(Arr(("n", 3)).check(owner, name, state, arr, _DIMS))
    norms = np.linalg.norm(arr, axis=1)
    if (np.abs(norms - 1.0) > 1e-6).any():
        k = int(np.flatnonzero(np.abs(norms - 1.0) > 1e-6)[0])
        raise ValueError(f"{owner}.{name}[{k}] = {arr[k].tolist()}: normals must be unit vectors")
    return arr


@persistent
@dataclass(eq=False)
class MaxDistance(Checked):
    """Per-particle max distance from an animated reference, and a backstop sphere or capsule behind it."""

    _dims = _DIMS
    """n: the cloth's particles (``len(reference)``)."""
    reference: Any = checked_field(Arr(("n", 3), unit=" [m]"))
    """Where each particle belongs [m], (n, 3): in ``attach_to``'s frame, or world points (``attach_to`` None) the
    game may rewrite in place every frame (a skinned mesh)."""
    distance: Any = checked_field(Custom(_distance, ("n",)), np.inf)
    """Max distance [m] from the reference point, a number or (n,) weights >= 0: 0 pins the particle there, inf
    leaves it free."""
    attach_to: int | None = checked_field(Int(1, optional=True), None)
    """Entity whose Transform carries ``reference`` and ``normal`` (a hero, a figure part); None: world frame."""
    normal: Any = checked_field(Custom(_normals, ("n",)), None)
    """Backstop normals, (n, 3) unit (or one (3,) for all), same frame as ``reference``: from the body toward where
    the cloth may go (a cape: behind the hero). None: no backstop."""
    backstop_radius: float = checked_field(Real(0.0, unit=" [m]"), 0.0)
    """Radius R [m] of each particle's backstop ball (0: no backstop)."""
    backstop_offset: Any = checked_field(Custom(_offset, ("n",)), 0.0)
    """d [m], a number or (n,): the backstop's surface sits d behind the reference point along −normal (0: through
    it; negative: past it)."""
    backstop_axis: Any = checked_field(Custom(unit_vector), (0.0, 1.0, 0.0))
    """Unit axis (3,) of a capsule backstop, same frame as ``reference`` (used when ``backstop_half_length`` > 0)."""
    backstop_half_length: float = checked_field(Real(0.0, unit=" [m]"), 0.0)
    """Half length L [m] of the capsule backstop along ``backstop_axis`` (0: a sphere)."""
    active: bool = checked_field(Flag(), True)
    """Switch both limits off without removing the component."""
    backstop_active: bool = checked_field(Flag(), True)
    """Switch the backstop alone off (a cape turning round through its hero)."""

    world_start: np.ndarray = checked_field(Arr((None, 3), unit=" [m]"), default_factory=lambda: np.zeros((0, 3)),
                                            init=False, repr=False)
    """Reference points in the world at the start of the current step [m], (n, 3) (system scratch)."""
    world_end: np.ndarray = checked_field(Arr((None, 3), unit=" [m]"), default_factory=lambda: np.zeros((0, 3)),
                                          init=False, repr=False)
    """Reference points in the world at the end of the current step [m], (n, 3) (system scratch)."""
    normal_start: np.ndarray = checked_field(Arr((None, 3)), default_factory=lambda: np.zeros((0, 3)), init=False,
                                             repr=False)
    """World backstop normals at the step's start, (n, 3) (system scratch; (0, 3) without a backstop)."""
    normal_end: np.ndarray = checked_field(Arr((None, 3)), default_factory=lambda: np.zeros((0, 3)), init=False,
                                           repr=False)
    """World backstop normals at the step's end, (n, 3) (system scratch)."""
    axis_world: np.ndarray = checked_field(Arr((2, 3)), default_factory=lambda: np.zeros((2, 3)), init=False,
                                           repr=False)
    """World capsule axis at the step's start and end, (2, 3) (system scratch)."""
    armed: np.ndarray = checked_field(Arr((None,), "b"), default_factory=lambda: np.zeros(0, np.bool_), init=False,
                                      repr=False)
    """Per particle, (n,) bool: True once it has been outside its backstop since the backstop was (re)armed; the
    backstop pushes only armed particles, so one switched on or turned round with cloth inside it never flings
    that cloth out in one substep (``rearm()``)."""
    primed: bool = checked_field(Flag(), False, init=False, repr=False)
    """True once the system has placed the reference in the world (the next step starts where this one ended)."""

    def rearm(self) -> None:
        """Let the backstop act on each particle only from when it is next outside it (after turning the normals
        round, or switching the backstop on with cloth inside it): none is pushed through the backstop at once."""
        self.armed[:] = False

    @property
    def count(self) -> int:
        """Particles n."""
        return self.reference.shape[0]

    @property
    def has_backstop(self) -> bool:
        """True when a backstop acts: active, normals given and a radius > 0."""
        return self.active and self.backstop_active and self.normal is not None and self.backstop_radius > 0.0
