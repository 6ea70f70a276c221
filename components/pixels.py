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

The game's gravity in its own units: ``PixelSpace(80, origin=(0, 470), gravity=900)`` (900 px/s² down the
screen; or a vector in the game's pixel axes, ``gravity=(0, 900)`` for pymunk's ``space.gravity`` with y down)
sets the App's ``Gravity`` resource to (0, −11.25, 0) m/s² at the start of each step after it changes (the
pymunk bridge of DefaultPlugins applies it). A side-scroller scrolls with its camera:
``pixels.camera(size, follow=hero_body)`` keeps the hero at the view's centre (x only unless ``follow_y``), and
``camera.scroll`` is the offset the game draws its own sprites at (``screen.blit(img, p − camera.scroll)``);
without ``follow``, assign ``camera.scroll`` (the game pixel at the view's top-left).

Order. ``loom.cape`` and ``loom.flag`` read their points and lengths in the units the App has at its first
step: inserting the PixelSpace before or after them (but before the first step) gives the same cloth. Without a
PixelSpace, inputs that look like pixels (a pole beyond 100 m, a body bigger than 10 m) warn once per App,
naming PixelSpace (``warn_units``); so does a ``Gravity`` that points up or is over 100 m/s² (px/s²?).
"""
from __future__ import annotations

import sys
import warnings
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from loom.components._revision import Revisioned, checked_field
from loom.components._validate import Arr, Custom, FieldError, Flag, Real, brief, integer, real
from loom.components.camera import Camera
from loom.components.transform import Transform
from loom.engine.persist import persistent

CAMERA_DISTANCE = 50.0
"""Distance [m] of ``PixelSpace.camera``'s eye from the plane z = 0: cloth between z = −49.5 and +49.5 m is drawn."""


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


def _gravity(owner: str, name: str, state: Any, value: Any) -> np.ndarray | None:
    """PixelSpace.gravity: None, a number g [px/s²] down the screen, or (gx, gy) [px/s²] in the game's pixel axes;
    stored as a read-only (2,) float array in the game's pixel axes."""
    if value is None:
        return None
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        g = real(owner, name, value, unit=" [px/s²]")
        down = 1.0 if state.get("y_down", True) else -1.0
        arr = np.array([0.0, down * g])
    else:
        arr = _points(f"{owner}.{name}", value, (2,))
        if arr.shape != (2,):
            raise ValueError(f"{owner}.{name}: shape {arr.shape}, expected a number or (gx, gy) [px/s²]")
        arr = arr.copy()
    arr.flags.writeable = False
    return arr


@persistent
@dataclass(eq=False)
class PixelSpace(Revisioned):
    """App resource: the game's pixel space — ``pixels_per_metre``, the ``origin`` pixel of world (0, 0), ``y_down``,
    and optionally the game's ``gravity`` in px/s² (sets the App's Gravity resource in m/s²)."""

    pixels_per_metre: float = checked_field(Real(0.0, low_open=True, unit=" [px/m]"), 100.0)
    """Game pixels per metre [px/m] > 0: 100 makes a 1.8 m hero 180 px tall."""
    origin: Any = checked_field(Arr((2,), unit=" [px]", readonly=True), (0.0, 0.0))
    """The game pixel [px], shape (2,), where world (0, 0) [m] lies (e.g. the top of the ground at x = 0)."""
    y_down: bool = checked_field(Flag(), True)
    """True: the game's pixel y grows downward (pygame, pymunk with gravity (0, +g)); False: upward."""
    gravity: Any = checked_field(Custom(_gravity), None)
    """The game's gravity [px/s²]: None (default) leaves the App's ``Gravity`` alone; a number g is g px/s² down
    the screen; a vector (gx, gy) is in the game's pixel axes (pymunk's ``space.gravity``). Stored as (2,) in the
    game's pixel axes; the pymunk bridge sets ``Gravity`` to ``gravity_metres()`` at the next step's start."""

    def gravity_metres(self) -> np.ndarray | None:
        """``gravity`` [px/s²] as Loom's acceleration [m/s²], (3,), y up (pixel y down flips its sign); None if unset.

        900 px/s² down the screen at 80 px/m is (0, −11.25, 0) m/s²."""
        if self.gravity is None:
            return None
        g = self.gravity
        return np.array([g[0] / self.pixels_per_metre, self.sign_y * g[1] / self.pixels_per_metre, 0.0])

    def same_units(self, other: PixelSpace | None) -> bool:
        """True if ``other`` maps pixels to metres as this one does (same scale, origin and y direction)."""
        return other is self or (isinstance(other, PixelSpace) and other.pixels_per_metre == self.pixels_per_metre
                                 and other.y_down == self.y_down and other.origin.tolist() == self.origin.tolist())

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
    def camera(self, size: tuple[int, int], *, follow: Any = None, scroll: Any = (0.0, 0.0),
               follow_y: bool = False) -> PixelCamera:
        """An orthographic straight side view (yaw 0, pitch 0) for a surface of ``size`` (w, h) [px] that draws
        every world point on the game pixel ``to_pixels`` gives, less the view's ``scroll`` (surface row
        ``h − py`` when y is up): a ``PixelCamera``.

        Scrolling (a side-scroller): ``follow`` a pymunk Body (its position in the game's pixels) or a Transform
        (metres, e.g. ``app.get(hero, loom.Transform)``) and the view keeps it at its centre, in x only unless
        ``follow_y`` (y then stays at ``scroll[1]``); without ``follow``, ``scroll`` (2,) [px] is the game pixel at
        the view's top-left, assigned whenever the game scrolls (``camera.scroll = (x, 0)``). Either way
        ``camera.scroll`` is the offset to draw the game's own sprites at. The eye looks down −z from
        CAMERA_DISTANCE in front of z = 0, so cloth with z in (−49.5, 49.5) m shows; the same camera serves every
        frame while the size stays (make a new one after a resize). Raises ValueError for a size that is not
        two whole numbers >= 1 or a bad scroll, TypeError for a ``follow`` without a position."""
        return PixelCamera(self, size, follow=follow, scroll=scroll, follow_y=follow_y)


class PixelCamera(Camera):
    """The Camera ``PixelSpace.camera`` makes: a straight side view of the game's pixels that scrolls with the
    game — it follows ``follow`` (a pymunk Body in the game's pixels, or a Transform in metres) or the ``scroll``
    offset the game assigns; ``target`` is recomputed from them whenever the view is read (``view``, ``eye``)."""

    def __init__(self, pixels: PixelSpace, size: tuple[int, int], *, follow: Any = None,
                 scroll: Any = (0.0, 0.0), follow_y: bool = False) -> None:
        if not isinstance(pixels, PixelSpace):
            raise TypeError(f"PixelCamera pixels = {brief(pixels)}: expected a loom.PixelSpace")
        w, h = _size(size)
        if follow is not None and not isinstance(follow, Transform) and not _pixel_point(follow):
            raise TypeError(f"PixelSpace.camera follow = {brief(follow)}: expected a pymunk Body (its position in "
                            f"the game's pixels), a loom.Transform (metres) or None")
        offset = _points("PixelSpace.camera scroll", scroll, (2,))
        if offset.shape != (2,):
            raise ValueError(f"PixelSpace.camera scroll: shape {offset.shape}, expected (2,) [px]")
        self.pixels = pixels
        """The PixelSpace whose pixels the view shows."""
        self.size = (w, h)
        """The surface size (w, h) [px] it was made for."""
        self.follow = follow
        """What the view keeps at its centre: a pymunk Body (game pixels), a Transform (metres), or None."""
        self.follow_y = bool(follow_y)
        """True: ``follow`` scrolls y too; False (a side-scroller): only x, y stays at the assigned scroll."""
        self._scroll = (float(offset[0]), float(offset[1]))
        self._shown: tuple[float, float] | None = None             # the scroll ``target`` was last computed for
        centre = pixels.to_metres((w / 2.0, h / 2.0))
        super().__init__(target=(centre[0], centre[1], 0.0), distance=CAMERA_DISTANCE, yaw=0.0, pitch=0.0,
                         near=0.5, far=2.0 * CAMERA_DISTANCE, orthographic=True,
                         ortho_height=h / pixels.pixels_per_metre)
        self._sync()

    @property
    def scroll(self) -> tuple[float, float]:
        """The game pixel [px] at the view's top-left (x, y): draw the game's own sprites at ``p − scroll``.
        Following, x (and y with ``follow_y``) puts ``follow`` at the view's centre; else as assigned."""
        if self.follow is None:
            return self._scroll
        if isinstance(self.follow, Transform):
            px, py = self.pixels.to_pixels(self.follow.position).tolist()
        else:
            px, py = float(self.follow.position[0]), float(self.follow.position[1])
        w, h = self.size
        return (px - w / 2.0, py - h / 2.0 if self.follow_y else self._scroll[1])

    @scroll.setter
    def scroll(self, value: Any) -> None:
        offset = _points("PixelCamera.scroll", value, (2,))
        if offset.shape != (2,):
            raise ValueError(f"PixelCamera.scroll: shape {offset.shape}, expected (2,) [px]")
        self._scroll = (float(offset[0]), float(offset[1]))

    def _sync(self) -> None:
        """Point ``target`` at the centre of the scrolled view (only when the scroll changed)."""
        sx, sy = shown = self.scroll
        if shown != self._shown and np.isfinite(shown).all():
            w, h = self.size
            centre = self.pixels.to_metres((sx + w / 2.0, sy + h / 2.0))
            self.target = (centre[0], centre[1], 0.0)
            self._shown = shown

    @property
    def eye(self) -> np.ndarray:
        """Eye position [m], (3,), in front of the scrolled view's centre."""
        self._sync()
        return Camera.eye.fget(self)

    def view(self) -> np.ndarray:
        """World → eye matrix (4, 4) of the scrolled view (``Camera.view``)."""
        self._sync()
        return super().view()


def _size(size: Any) -> tuple[int, int]:
    """(w, h) whole pixels >= 1, or ValueError naming PixelSpace.camera size."""
    if isinstance(size, (str, bytes)) or not hasattr(size, "__len__") or len(size) != 2:
        raise ValueError(f"PixelSpace.camera size = {brief(size)}: expected (width, height) in whole pixels >= 1")
    w, h = (integer("PixelSpace.camera", "size", v, low=1) for v in size)
    return w, h


def _pixel_point(obj: Any) -> bool:
    """True if ``obj`` has a 2D ``position`` (a pymunk Body, in the game's pixels)."""
    try:
        return len(obj.position) == 2
    except (AttributeError, TypeError):
        return False



# --- unit warnings ----------------------------------------------------------------------------------------------
class UnitsWarning(UserWarning):
    """A value that looks like pixels (px for m, px/s² for m/s², y down for y up) where Loom takes SI, y up."""


_WARNED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""App → the kinds of unit warning already given in it (each is given once per App)."""
_LOOM = Path(__file__).resolve().parents[1]
_INSIDE = tuple(str(_LOOM / d) for d in ("components", "engine", "systems", "prefabs", "files")) + \
    (str(_LOOM / "__init__.py"),)


def warn_units(app: Any, kind: str, message: str) -> bool:
    """``warnings.warn(message, UnitsWarning)`` the first time ``kind`` is met in ``app`` (once per App and kind),
    attributed to the first caller outside Loom (the game's line); returns True if it warned now."""
    seen = _WARNED.setdefault(app, set()) if app is not None else set()
    if kind in seen:
        return False
    seen.add(kind)
    warnings.warn(message, UnitsWarning, stacklevel=_outside_level())
    return True


def _outside_level() -> int:
    """The ``stacklevel`` of ``warn_units``' warning that names the first frame outside Loom's own modules."""
    frame, level = sys._getframe(2), 2                       # warn_units' caller: stacklevel 2 of its warn
    while frame is not None and (frame.f_code.co_filename.startswith(_INSIDE)       # Loom, or a Loom
                                 or frame.f_code.co_filename == "<string>"):        # dataclass's __init__
        frame, level = frame.f_back, level + 1
    return level if frame is not None else 2
