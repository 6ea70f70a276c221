"""Which solids a renderer draws: the App's visible Props and, when ``RenderSettings.show_colliders``, its active
colliders, each with its shape, placement and colour — one rule for the GL and the software renderer.

A solid is drawn from its shape's tessellation in the shape table (``collider.Shape.tessellate``, local frame),
placed by its entity's Transform (none: the world origin). A collider's colour comes from its ``ColliderStyle``,
else grey (a plane: the floor colour with a 0.5 m checker).
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from loom.components import Collider, Transform
from loom.components.collider import Plane
from loom.components.render import FLOOR_COLOR, SOLID_COLOR, ColliderStyle, Prop, RenderSettings
from loom.engine import App


class Solid(NamedTuple):
    """One solid to draw this frame."""

    key: tuple[str, int]
    """("collider" or "prop", entity): what a renderer keeps its tessellation under between frames."""
    shape: Any
    """The shape (an entry of ``collider.SHAPES``)."""
    transform: Transform | None
    """Its placement (None: the world origin)."""
    color: tuple[float, float, float]
    """RGB in [0, 1]."""
    tiles: float
    """Side of a checker square [m] (0: plain)."""


def visible_solids(app: App, settings: RenderSettings) -> list[Solid]:
    """Every visible Prop of ``app`` and, when ``settings.show_colliders``, every active collider whose
    ColliderStyle (if any) is visible, in query order."""
    items = []
    if settings.show_colliders:
        for entity, collider in app.query(Collider):
            style = app.try_get(entity, ColliderStyle)
            if not collider.active or style is not None and not style.visible:
                continue
            if style is None:
                color, tiles = (FLOOR_COLOR, 0.5) if isinstance(collider.shape, Plane) else (SOLID_COLOR, 0.0)
            else:
                color, tiles = tuple(style.color), style.tiles
            items.append(Solid(("collider", entity), collider.shape, app.try_get(entity, Transform), color, tiles))
    for entity, prop in app.query(Prop):
        if prop.visible:
            items.append(Solid(("prop", entity), prop.shape, app.try_get(entity, Transform), tuple(prop.color),
                               prop.tiles))
    return items


def model_matrix(transform: Transform | None) -> np.ndarray:
    """The 4×4 local → world matrix of a Transform (identity for None)."""
    model = np.eye(4)
    if transform is not None:
        model[:3, :3] = transform.rotation
        model[:3, 3] = transform.position
    return model


def placed(app: App, blend: Any, solid: Solid) -> np.ndarray:
    """The 4×4 local → world matrix a solid is drawn with this frame: its Transform's (``model_matrix``), or with
    ``blend`` (the App's ``between.StepBlend``, or None) enabled, its placement between the last two steps."""
    if blend is None or not blend.enabled:
        return model_matrix(solid.transform)
    return blend.placement(app, solid.key[1], solid.transform, np.empty((4, 4)))
