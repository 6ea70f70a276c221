"""PixelSpace: a 2D game's pixels, stated once — pixels per metre, where world (0, 0) lies, and y down.

A pygame game lives in pixels with y down; Loom lives in metres with y up. Insert one PixelSpace as an App
resource and the boundary speaks the game's pixels: ``RigidBody2D`` bodies are read in pixels (their ``scale``
left at None), ``loom.cape`` / ``loom.flag`` take pixel sizes and points, and ``PixelSpace.camera(size)`` is
the straight side view whose pixels are exactly the game's::

    game pixels (y down)                     Loom (metres, y up, z toward the viewer)
    origin ──▶ x                               y
      │                                        ▲
      ▼ y        (px, py) ──to_metres──▶       │   ((px − ox) / ppm, (oy − py) / ppm, z)
                                               └──▶ x

    app.insert_resource(loom.PixelSpace(100.0, origin=(0.0, 470.0)))   # 1 m = 100 px, world y = 0 at py = 470
    camera = app.resource(loom.PixelSpace).camera(screen.get_size())   # draws cloth onto the game's own pixels

With ``y_down=False`` the game's pixels have y up (pymunk's default, drawn with pymunk.pygame_util's flip):
``to_pixels`` then returns y-up pixels and ``camera`` draws them at surface row ``height − py``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from loom.components._revision import Checked
from loom.components._validate import Arr, FieldError, Flag, Real, brief, integer, real
from loom.components.camera import Camera

CAMERA_DISTANCE = 50.0
"""Distance [m] of ``PixelSpace.camera``'s eye from the plane z = 0: cloth between z = −49.5 and +49.5 m is drawn."""


@dataclass(eq=False)
class PixelSpace(Checked):
    """App resource: the game's pixel space — ``pixels_per_metre``, the ``origin`` pixel of world (0, 0), ``y_down``."""

    pixels_per_metre: float = 100.0
    """Game pixels per metre [px/m] > 0: 100 makes a 1.8 m hero 180 px tall."""
    origin: Any = (0.0, 0.0)
    """The game pixel [px], shape (2,), where world (0, 0) [m] lies (e.g. the top of the ground at x = 0)."""
    y_down: bool = True
    """True: the game's pixel y grows downward (pygame, pymunk with gravity (0, +g)); False: upward."""

    def __post_init__(self) -> None:
        self.check_state()                        # every field of PixelSpace._fields

    @property
    def sign_y(self) -> float:
        """−1.0 when the game's y is down (pixel y and world y point opposite ways), +1.0 when it is up."""
        return -1.0 if self.y_down else 1.0

    # --- points --------------------------------------------------------------------------------------------
    def to_metres(self, points_px: Any, z: float = 0.0) -> np.ndarray:
        """World points [m], shape (..., 3), of game pixels ``points_px`` [px], shape (..., 2), placed at depth z [m]."""
        p = _points("PixelSpace.to_metres points_px", points_px, (2,))
        z = real("PixelSpace.to_metres", "z", z, unit=" [m]")
        out = np.empty(p.shape[:-1] + (3,))
        out[..., 0] = (p[..., 0] - self.origin[0]) / self.pixels_per_metre
        out[..., 1] = self.sign_y * (p[..., 1] - self.origin[1]) / self.pixels_per_metre
        out[..., 2] = z
        return out

    def to_pixels(self, points_m: Any) -> np.ndarray:
        """Game pixels [px], shape (..., 2), of world points ``points_m`` [m], shape (..., 3) or (..., 2) (z ignored)."""
        p = _points("PixelSpace.to_pixels points_m", points_m, (2, 3))
        out = np.empty(p.shape[:-1] + (2,))
        out[..., 0] = self.origin[0] + p[..., 0] * self.pixels_per_metre
        out[..., 1] = self.origin[1] + self.sign_y * p[..., 1] * self.pixels_per_metre
        return out

    # --- lengths -------------------------------------------------------------------------------------------
    def metres(self, length_px: float) -> float:
        """A length of ``length_px`` game pixels in metres (any sign; no y flip: a length, not a point)."""
        return real("PixelSpace.metres", "length_px", length_px, unit=" [px]") / self.pixels_per_metre

    def pixels(self, length_m: float) -> float:
        """A length of ``length_m`` metres in game pixels (any sign; no y flip: a length, not a point)."""
        return real("PixelSpace.pixels", "length_m", length_m, unit=" [m]") * self.pixels_per_metre

    # --- drawing -------------------------------------------------------------------------------------------
    def camera(self, size: tuple[int, int]) -> Camera:
        """An orthographic straight side view (yaw 0, pitch 0) for a surface of ``size`` (w, h) [px] that draws
        every world point on the game pixel ``to_pixels`` gives (surface row ``h − py`` when y is up).

        The eye looks down −z from CAMERA_DISTANCE in front of z = 0, so cloth with z in (−49.5, 49.5) m shows;
        the same camera serves every frame while the size stays (make a new one after a resize). Raises ValueError
        for a size that is not two whole numbers >= 1."""
        w, h = _size(size)
        centre = self.to_metres((w / 2.0, h / 2.0))
        return Camera(target=(centre[0], centre[1], 0.0), distance=CAMERA_DISTANCE, yaw=0.0, pitch=0.0,
                      near=0.5, far=2.0 * CAMERA_DISTANCE, orthographic=True,
                      ortho_height=h / self.pixels_per_metre)


def _points(where: str, value: Any, widths: tuple[int, ...]) -> np.ndarray:
    """``value`` as a float64 array whose last axis has one of ``widths``, all finite; ValueError naming ``where``."""
    if isinstance(value, (str, bytes)):
        raise FieldError(f"{where} = {brief(value)}: expected real numbers of shape (..., {'|'.join(map(str, widths))})")
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise FieldError(f"{where} = {brief(value)}: expected real numbers of shape "
                         f"(..., {'|'.join(map(str, widths))})") from None
    if arr.ndim == 0 or arr.shape[-1] not in widths:
        raise ValueError(f"{where}: shape {arr.shape}, expected (..., {' or '.join(map(str, widths))})")
    if not np.isfinite(arr).all():
        raise ValueError(f"{where}: contains non-finite values ({brief(arr[~np.isfinite(arr)][:3].tolist())})")
    return arr


def _size(size: Any) -> tuple[int, int]:
    """(w, h) whole pixels >= 1, or ValueError naming PixelSpace.camera size."""
    if isinstance(size, (str, bytes)) or not hasattr(size, "__len__") or len(size) != 2:
        raise ValueError(f"PixelSpace.camera size = {brief(size)}: expected (width, height) in whole pixels >= 1")
    w, h = (integer("PixelSpace.camera", "size", v, low=1) for v in size)
    return w, h


PixelSpace._fields = {
    "pixels_per_metre": Real(0.0, low_open=True, unit=" [px/m]"),
    "origin": Arr((2,), unit=" [px]"),
    "y_down": Flag(),
}
