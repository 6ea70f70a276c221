"""loom.flag: a flag on a pole in one call — a cotton sheet facing the camera, its left edge (the hoist) pinned.

Made for a straight side view (``PixelSpace.camera``): the sheet lies in the screen plane (xy) with a slight
ripple in depth (a perfectly flat sheet edge-on to the wind would feel no force), hanging from the pole's top
to the right. ``Flag.wind_zone(velocity)`` adds a Wind that blows only around the flag, so a hero's cape
elsewhere does not feel it::

    flag = loom.flag(app, (850, 120))                  # the pole's top, in the game's pixels
    flag.wind_zone((6.0, 0.0, 1.0))                    # [m/s]: blows here only

Every default is overridable: ``size`` (width, height), ``resolution`` (nx, ny), ``material``, ``style`` and any
``Cloth.from_mesh`` option or material field.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from loom.components import Cloth, ClothMaterial, ClothStyle, Pin, PixelSpace, Wind, WindBox
from loom.engine import App
from loom.prefabs import _shared, _units

FLAG_SIZE = (1.0, 0.6)
"""Default width × height [m] (100 × 60 px at 100 px/m)."""
FLAG_RESOLUTION = (16, 10)
"""Default particles along × down (160): few enough for a fraction of a millisecond per step
(docs/performance.md, "Moved from docstrings")."""
FLAG_STYLE = ClothStyle(front_color=(0.95, 0.78, 0.18), back_color=(0.85, 0.66, 0.12), texture=None, subdivision=1)
"""Default look: golden yellow both sides (a touch darker behind), no texture, one Loop subdivision level."""
RIPPLE = 0.03
"""Depth of the sheet's initial ripple [-], as a fraction of its width."""


class Flag:
    """What ``loom.flag`` made: the cloth entity, its Cloth and Pin, and where it hangs (metres)."""

    def __init__(self, app: App, entity: int, cloth: Cloth, pin: Pin, hoist_top: np.ndarray, size: tuple[float, float]):
        self.app = app
        self.entity = entity
        """The flag's entity (Cloth, Pin, ClothStyle)."""
        self.cloth = cloth
        """The Cloth: ``flag.cloth.x`` are the particle positions [m], (n, 3)."""
        self.pin = pin
        """The Pin holding the hoist (its left edge) at fixed world points."""
        self.hoist_top = hoist_top
        """World point [m], (3,), of the hoist's top (the pole's top)."""
        self.size = size
        """(width, height) [m]."""
        self._args: dict[str, Any] = {}                               # loom.flag's arguments (rebuilt in new units)
        self._winds: list[Wind] = []                                  # made by wind_zone: re-zoned on a rebuild

    def wind_zone(self, velocity: Any, *, gust: float = 0.3, turbulence: float = 0.2, **wind: Any) -> Wind:
        """Spawn and return a Wind of ``velocity`` [m/s] (3,) that blows only in a box around the flag's reach.

        The box (``WindBox``) spans a flag's width beyond the pole on both sides, from above the pole's top to
        below the flag's lower edge, with a soft edge of a tenth of the width: the flag streams inside it,
        whichever way the wind blows, and cloth outside (a hero's cape) feels nothing. gust and turbulence as
        ``Wind``'s; other Wind fields by keyword (``seed=``, ``drag_coefficient=`` …). A flag rebuilt in new units
        before its first step (a PixelSpace inserted after ``loom.flag``) moves its zones with it."""
        air = Wind(velocity=velocity, gust=gust, turbulence=turbulence, region=self._zone(), **wind)
        self.app.spawn(air)
        self._winds.append(air)
        return air

    def _zone(self) -> WindBox:
        """The WindBox around the flag's reach (``wind_zone``)."""
        w, h = self.size
        x, y, z = self.hoist_top
        return WindBox(center=(x, y - 0.5 * h, z), half_size=(1.15 * w, 0.5 * h + 0.45 * w, 0.6 * w), edge=0.1 * w)

    def _rebuild(self, pixels: PixelSpace | None) -> None:
        """Build the flag again from ``loom.flag``'s arguments read in ``pixels`` (None: metres), transplant the new
        Cloth and Pin into this flag's and move its wind zones (prefabs/_units.py; before its first step)."""
        cloth, pin, self.hoist_top, self.size = _build(pixels, **self._args)
        pin.active = self.pin.active.copy()
        _units.transplant(self.cloth, cloth)
        _units.transplant(self.pin, pin)
        for air in self._winds:
            air.region = self._zone()

    def _extent(self) -> tuple[str, float, str, float]:
        """(its pole's top, its distance [m] from the origin, its size, the larger side [m]) as built."""
        x, y, _ = self.hoist_top
        w, h = self.size
        return (f"its pole_top ({x:.4g}, {y:.4g})", float(np.linalg.norm(self.hoist_top)),
                f"its size {w:.4g} × {h:.4g}", float(max(w, h)))

    def __repr__(self) -> str:
        return f"Flag(entity={self.entity}, particles={self.cloth.particle_count}, size={self.size})"


def flag(app: App, pole_top: Any, *, size: Any = None, resolution: tuple[int, int] | None = None,
         material: str | ClothMaterial = "cotton", style: ClothStyle | None = None, **cloth_kwargs: Any) -> Flag:
    """Spawn a flag whose left edge (the hoist) is pinned down the pole from ``pole_top`` and return its ``Flag``.

    pole_top: (x, y) in the game's pixels when the App has a PixelSpace at its first step, else (x, y) or
    (x, y, z) [m]. size (width, height), pixels or metres likewise, default FLAG_SIZE metres; resolution (nx, ny)
    particles, default FLAG_RESOLUTION; material "cotton"; style FLAG_STYLE; cloth_kwargs go to
    ``Cloth.from_mesh`` (``damping=``, ``strain_limit=``, ``model=`` …). The flag extends to the right (+x) in
    the screen plane; wind turns it. Needs DefaultPlugins. A PixelSpace inserted after this call but before the first step rebuilds the flag in it
    (the same Cloth and Pin objects with new arrays; prefabs/_units.py); without one, a pole beyond 100 m or a
    side over 10 m warns once (UnitsWarning: pixels?). Raises ValueError (TypeError for a wrong kind) naming the
    argument."""
    where = "loom.flag"
    app = _shared.checked_app(where, app)
    look = _shared.style(where, style, FLAG_STYLE)
    pixels = app.resources.get(PixelSpace)
    args = dict(pole_top=pole_top, size=size, resolution=resolution, material=material,
                cloth_kwargs=dict(cloth_kwargs))
    cloth, pin, top, (w, h) = _build(pixels, **args)
    entity = app.spawn(cloth, pin, look)
    handle = Flag(app, entity, cloth, pin, top, (w, h))
    handle._args = args
    _units.record(app, handle, pixels, where)
    return handle


def _build(pixels: PixelSpace | None, *, pole_top: Any, size: Any, resolution: tuple[int, int] | None,
           material: str | ClothMaterial, cloth_kwargs: dict[str, Any]
           ) -> tuple[Cloth, Pin, np.ndarray, tuple[float, float]]:
    """The flag's Cloth and Pin for ``flag``'s arguments read in ``pixels`` (None: metres), the hoist's top [m]
    (3,) and (width, height) [m]."""
    where = "loom.flag"
    if pixels is not None:
        top = pixels.to_metres(_shared.points(where, "pole_top", pole_top, 1))
    else:
        top = _point3(where, pole_top)
    if size is None:
        w, h = FLAG_SIZE
    else:
        try:
            sw, sh = size
        except (TypeError, ValueError):
            raise ValueError(f"{where} size = {_shared.brief(size)}: expected (width, height)") from None
        w, h = (_shared.length(where, name, v, pixels) for name, v in (("size[0]", sw), ("size[1]", sh)))
    nx, ny = _shared.resolution(where, FLAG_RESOLUTION if resolution is None else resolution)

    x, y, z = top
    corners = [np.array(c) for c in ((x, y, z), (x + w, y, z), (x, y - h, z), (x + w, y - h, z))]
    layout = _shared.quad_layout(*corners, nx, ny)
    u = np.linspace(0.0, 1.0, nx)[None, :]
    layout[..., 2] += RIPPLE * w * u * np.sin(2.0 * math.pi * u)           # none at the hoist, growing to the fly
    sheet = _shared.sheet(layout)
    cloth = Cloth.from_mesh(sheet, material, **cloth_kwargs)
    pin = Pin.edge(sheet, "left")
    return cloth, pin, np.asarray(top, dtype=np.float64), (w, h)


def _point3(where: str, value: Any) -> np.ndarray:
    """A finite (x, y) (z = 0) or (x, y, z) point [m] as (3,), else ValueError naming ``where pole_top``."""
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{where} pole_top = {_shared.brief(value)}: expected (x, y) or (x, y, z) [m]") from None
    if arr.shape == (2,):
        arr = np.append(arr, 0.0)
    if arr.shape != (3,) or not np.isfinite(arr).all():
        raise ValueError(f"{where} pole_top = {_shared.brief(value)}: expected a finite (x, y) or (x, y, z) [m]")
    return arr
