"""What the prefabs share: argument checks that name the argument, pixel-or-metre lengths, and the sheet builder."""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from loom.components import ClothStyle, PixelSpace
from loom.components._validate import brief
from loom.engine import App, mesh


def checked_app(where: str, app: Any) -> App:
    """``app`` if it is an App with DefaultPlugins' pin system, else TypeError/ValueError naming ``where``."""
    if not isinstance(app, App):
        raise TypeError(f"{where} app = {brief(app)}: expected a loom.App")
    if "PinPlugin" not in app.plugins:
        raise ValueError(f"{where} app: add loom.DefaultPlugins first (app.add_plugin(loom.DefaultPlugins)); "
                         f"the prefab's pins need its pin system")
    return app


def number(where: str, name: str, value: Any, *, positive: bool = True) -> float:
    """``value`` as a finite float (> 0 when ``positive``), else ValueError naming ``where name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{where} {name} = {brief(value)}: expected a real number")
    value = float(value)
    if not math.isfinite(value) or (positive and value <= 0.0):
        raise ValueError(f"{where} {name} = {value!r}: must be finite{' and > 0' if positive else ''}")
    return value


def length(where: str, name: str, value: Any, pixels: PixelSpace | None) -> float:
    """A length > 0 given in the game's pixels (with a PixelSpace) or metres, in metres."""
    value = number(where, name, value)
    return value / pixels.pixels_per_metre if pixels is not None else value


def points(where: str, name: str, value: Any, count: int) -> np.ndarray:
    """``value`` as a finite (count, 2) float array, else ValueError naming ``where name``."""
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{where} {name} = {brief(value)}: expected {count} (x, y) point"
                        f"{'s' if count > 1 else ''}") from None
    shape = (count, 2) if count > 1 else (2,)
    if arr.shape != shape:
        raise ValueError(f"{where} {name}: shape {arr.shape}, expected {shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{where} {name} = {brief(arr.tolist())}: must be finite")
    return arr


def local_offsets(points_px: np.ndarray, pixels: PixelSpace | None) -> np.ndarray:
    """Offsets (…, 2) from a carrier in the game's pixels (y down) or metres → local metres, y up."""
    if pixels is None:
        return points_px
    return points_px * (1.0 / pixels.pixels_per_metre, pixels.sign_y / pixels.pixels_per_metre)


def resolution(where: str, value: Any) -> tuple[int, int]:
    """(nx, ny) particles, each an integer >= 2, else ValueError naming ``where resolution``."""
    try:
        nx, ny = value
    except (TypeError, ValueError):
        raise ValueError(f"{where} resolution = {brief(value)}: expected (nx, ny) particles, each >= 2") from None
    for v in (nx, ny):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 2:
            raise ValueError(f"{where} resolution = {brief(value)}: expected (nx, ny) particles, each an integer >= 2")
    if nx * ny > 20_000:
        raise ValueError(f"{where} resolution = {brief(value)}: {nx * ny} particles is more than a prefab's 20,000")
    return int(nx), int(ny)


def style(where: str, value: Any, default: ClothStyle) -> ClothStyle:
    """``value`` if a ClothStyle, ``default`` if None, else TypeError naming ``where style``."""
    if value is None:
        return default
    if not isinstance(value, ClothStyle):
        raise TypeError(f"{where} style = {brief(value)}: expected a loom.ClothStyle or None")
    return value


def sheet(layout: np.ndarray) -> mesh.Mesh:
    """A grid mesh whose particles sit at ``layout`` (ny, nx, 3) [m] (row 0 at the bottom, columns left to right;
    front +z where columns run toward +x and rows toward +y), with rest material coordinates from its xy."""
    ny, nx, _ = layout.shape
    base = mesh.grid(nx, ny, 1.0, 1.0)
    positions = layout.reshape(-1, 3)
    uv = positions[:, :2] - positions[:, :2].min(axis=0)
    return dataclasses.replace(base, positions=positions, uv=uv)


def quad_layout(top_left: np.ndarray, top_right: np.ndarray, bottom_left: np.ndarray, bottom_right: np.ndarray,
                nx: int, ny: int) -> np.ndarray:
    """(ny, nx, 3) points of a bilinear patch between four corners (3,) [m]; row ny − 1 is the top edge."""
    u = np.linspace(0.0, 1.0, nx)[None, :, None]
    v = np.linspace(0.0, 1.0, ny)[:, None, None]
    top = top_left + u * (top_right - top_left)
    bottom = bottom_left + u * (bottom_right - bottom_left)
    return bottom + v * (top - bottom)
