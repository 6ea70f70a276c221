"""Gravity: the world's uniform gravitational acceleration, held as an App resource."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from loom.components._revision import Checked, checked_field
from loom.components._validate import Arr
from loom.components.pixels import warn_units
from loom.engine.persist import persistent

IMPLAUSIBLE = 100.0
"""Gravity [m/s²] above which ``Gravity`` warns: likely px/s² (Earth's is 9.81; Jupiter's 24.8)."""


@persistent
@dataclass(eq=False)
class Gravity(Checked):
    """Uniform acceleration [m/s²], shape (3,); default (0, −9.81, 0): y is up.

    Insert your own before adding the plugins to change it: ``app.insert_resource(Gravity((0, -1.62, 0)))``. One
    that points up or exceeds IMPLAUSIBLE m/s² is taken but warns (UnitsWarning, naming PixelSpace): a 2D game's
    px/s² with y down belong in ``PixelSpace(..., gravity=...)``, which sets this resource in m/s²."""

    acceleration: Any = checked_field(Arr((3,), unit=" [m/s²]"), (0.0, -9.81, 0.0))
    """Acceleration (3,) [m/s²], finite; y is up."""

    def __post_init__(self) -> None:
        self._check_new()
        _warn_if_pixels(self.acceleration)


def _warn_if_pixels(g: np.ndarray) -> None:
    """Warn (UnitsWarning) for an acceleration [m/s²] that points up or is over IMPLAUSIBLE: px/s², y down?"""
    size = float(np.linalg.norm(g))
    up, big = g[1] > 0.0, size > IMPLAUSIBLE
    if not (up or big):
        return
    what = " and ".join((["points up (Loom's y is up: Earth's gravity is (0, -9.81, 0))"] if up else [])
                        + ([f"is {size / 9.81:.0f}× Earth's 9.81 m/s²"] if big else []))
    warn_units(None, "gravity", f"Gravity acceleration = {tuple(round(float(v), 6) for v in g)} m/s² {what}: "
               f"a 2D game's px/s² with y down? Give the game's gravity to loom.PixelSpace(pixels_per_metre, "
               f"gravity=...) (it sets Gravity in m/s², y up), or pass m/s² with y up")

