"""Render data: how a cloth looks (``ClothStyle``), how the scene is drawn (``RenderSettings``), and what the
player did this frame (``InputState``).

Plain data, validated on construction; the renderers (systems/render/gl.py, systems/render/soft.py) and the
window loop (systems/render/window.py) read and write it. Colours are linear RGB in [0, 1]. A cloth with no
ClothStyle is drawn with ``ClothStyle()``; an App with no RenderSettings with ``RenderSettings()``.

Views (``RenderSettings.view``), after Fisher's "Rendering" notes (seeds/fisher-cloth-notes.txt):

    shaded      two-sided Lambert lighting, front_color / back_color, optional texture on rest UVs
    normals     RGB = normal · 0.5 + 0.5 (Fisher's "normal xyz to vertex RGB" scheme: a +z sheet is
                (0.5, 0.5, 1), a +y sheet (0.5, 1, 0.5); inter-penetration shows as a colour jump)
    wireframe   the (subdivided) triangles as lines
    strain      per-vertex link strain as a heatmap: stretch red, compression blue, rest white
    particles   the simulated particles as points (pinned ones highlighted), no surface
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from loom.components._revision import Checked, checked_field
from loom.components.collider import SHAPES
from loom.components._validate import Choice, Custom, FieldError, Flag, Int, Real, brief, choice, floats, \
    integer, real, show, unit_vector
from loom.engine.persist import persistent

VIEWS = ("shaded", "normals", "wireframe", "strain", "particles")
"""Debug views ``RenderSettings.view`` may select, in the order the V key cycles them."""
TEXTURES = ("weave", "checker")
"""Named procedural textures ``ClothStyle.texture`` may select (besides None and an image array): "weave", a
plain-weave fabric of threads (the default: it reads as cloth at any distance), and "checker", squares that show
stretch and shear."""
SOLID_COLOR = (0.62, 0.62, 0.64)
"""RGB of a collider or prop with no colour of its own: neutral grey."""
FLOOR_COLOR = (0.46, 0.47, 0.49)
"""RGB of a Plane collider with no ColliderStyle (drawn with 0.5 m tiles for depth cues)."""


def _color(owner: str, name: str, value: Any) -> np.ndarray:
    """Return ``value`` as an RGB float64 (3,) array in [0, 1]."""
    rgb = floats(owner, name, value, (3,))
    bad = np.flatnonzero((rgb < 0.0) | (rgb > 1.0))
    if bad.size:
        k = int(bad[0])
        raise ValueError(f"{owner}.{name}[{k}] = {show(rgb[k])}: colour channels are in [0, 1] (linear RGB)")
    return rgb


def _texture(owner: str, name: str, state: Any, value: Any) -> Any:
    """ClothStyle.texture: "checker", None, or an (h, w, 3) uint8 image."""
    if isinstance(value, str) or value is None:
        return value if value is None else choice(owner, name, value, TEXTURES)
    try:
        image = np.asarray(value)
    except (TypeError, ValueError):
        raise FieldError(f"{owner}.{name} = {brief(value)}: expected an (h, w, 3) uint8 image, 'checker' or None") \
            from None
    if image.ndim != 3 or image.shape[2] != 3 or image.shape[0] < 1 or image.shape[1] < 1:
        raise ValueError(f"{owner}.{name}: shape {image.shape}, expected (h, w, 3) uint8, 'checker' or None")
    if image.dtype != np.uint8:
        raise ValueError(f"{owner}.{name}: dtype {image.dtype}, expected uint8 (0–255 per channel)")
    return np.ascontiguousarray(image)


def _flag(owner: str, name: str, state: Any, value: Any) -> bool:
    """True or False (numpy booleans accepted)."""
    if not isinstance(value, (bool, np.bool_)):
        raise FieldError(f"{owner}.{name} = {value!r}: must be True or False")
    return bool(value)


def _shape(owner: str, name: str, state: Any, value: Any) -> Any:
    """Prop.shape: one of the collider shapes."""
    if not isinstance(value, SHAPES):
        names = ", ".join(t.__name__ for t in SHAPES)
        raise FieldError(f"{owner}.{name} = {brief(value)}: expected a shape ({names})")
    return value


def _shadow_size(owner: str, name: str, state: Any, value: Any) -> int:
    """RenderSettings.shadow_size: 256–8192 texels."""
    size = integer(owner, name, value, low=256)
    if size > 8192:
        raise ValueError(f"{owner}.{name} = {size}: must be at most 8192 texels (a bigger map costs memory "
                         "and time for little gain)")
    return size


def _samples(owner: str, name: str, state: Any, value: Any) -> int:
    """RenderSettings.samples: 0–16 samples per pixel."""
    samples = integer(owner, name, value, low=0)
    if samples > 16:
        raise ValueError(f"{owner}.{name} = {samples}: must be 0–16 samples per pixel")
    return samples


def _subdivision(owner: str, name: str, state: Any, value: Any) -> int:
    """ClothStyle.subdivision: 0, 1 or 2 Loop levels."""
    levels = integer(owner, name, value, low=0)
    if levels > 2:
        raise ValueError(f"{owner}.{name} = {levels}: must be 0, 1 or 2 (each level quadruples the triangles)")
    return levels


def _colour(owner: str, name: str, state: Any, value: Any) -> np.ndarray:
    """An RGB colour (3,) in [0, 1]."""
    return _color(owner, name, value)


def _pair(kind: str) -> Custom:
    """A spec for a pair of finite reals ("real") or of integers >= 0 ("size"), stored as a tuple."""
    def check(owner: str, name: str, state: Any, value: Any) -> tuple:
        if not isinstance(value, (tuple, list, np.ndarray)) or len(value) != 2:
            raise FieldError(f"{owner}.{name} = {brief(value)}: expected a pair of numbers")
        if kind == "size":
            return tuple(integer(owner, name, v, low=0) for v in value)
        return tuple(real(owner, name, v, unit=" [px]") for v in value)
    return Custom(check)


def _keys(owner: str, name: str, state: Any, value: Any) -> set:
    """A set of integer codes (buttons, keys)."""
    if not isinstance(value, set):
        raise FieldError(f"{owner}.{name} = {brief(value)}: expected a set of integer codes")
    for code in value:
        integer(owner, name, code)
    return value


@persistent
@dataclass(eq=False)
class ClothStyle(Checked):
    """How one cloth entity is drawn: colours of its two sides, texture, smoothing and visibility.

    Add it to the cloth's entity (``app.spawn(cloth, pin, ClothStyle(front_color=(0.2, 0.4, 0.9)))``);
    change fields at any time (a new texture array is uploaded on the next frame)."""

    front_color: Any = checked_field(Custom(_colour), (0.85, 0.27, 0.22))
    """RGB in [0, 1] of the front side (where cross(p1 − p0, p2 − p0) points), (3,)."""
    back_color: Any = checked_field(Custom(_colour), (0.22, 0.42, 0.85))
    """RGB in [0, 1] of the back side, (3,)."""
    texture: Any = checked_field(Custom(_texture), "weave")
    """"weave" (a plain weave of threads, one repeat every ``weave_scale`` metres of rest UV), "checker"
    (squares of ``checker_scale`` metres), None (plain colours), or an image (h, w, 3) uint8, row 0 at the
    top, stretched over the cloth's rest-UV bounding box. The texture multiplies the side colour, so the two
    sides stay distinguishable."""
    checker_scale: float = checked_field(Real(0.0, low_open=True, unit=" [m]"), 0.1)
    """Side of one checker square [m] of rest material coordinates (``Cloth.rest_uv``)."""
    weave_scale: float = checked_field(Real(0.0, low_open=True, unit=" [m]"), 0.03)
    """Side of one repeat of the "weave" texture [m] of rest material coordinates (four threads each way)."""
    subdivision: int = checked_field(Custom(_subdivision), 1)
    """Loop subdivision levels drawn, 0–2 (Fisher "Rendering": one level already looks smooth on a 20×20
    grid; each level quadruples the triangles). Drawing only: the simulation is untouched."""
    visible: bool = checked_field(Flag(), True)
    """False hides the cloth (it still simulates)."""


@persistent
@dataclass(eq=False)
class RenderSettings(Checked):
    """App resource: what every renderer draws — the view, colliders, HUD, background and light.

    Insert your own before adding a renderer plugin to change the defaults
    (``app.insert_resource(RenderSettings(view="normals"))``); the window's keys change it live."""

    view: str = checked_field(Choice(VIEWS), "shaded")
    """One of ``VIEWS``: shaded, normals, wireframe, strain, particles."""
    show_colliders: bool = checked_field(Flag(), True)
    """Draw the colliders (planes, spheres, capsules, cylinders, boxes, prisms, meshes) in grey."""
    hud: bool = checked_field(Flag(), True)
    """Draw the heads-up text: FPS, particles, sim ms per frame, model, view."""
    background: Any = checked_field(Custom(_colour), (0.11, 0.12, 0.14))
    """Clear colour, RGB in [0, 1], (3,), when ``sky`` is False."""
    sky: bool = checked_field(Flag(), True)
    """Draw a sky behind the scene: ``horizon_color`` at the horizon to ``sky_color`` overhead, and fade
    distant surfaces into the horizon (haze) so a floor has no hard edge. False: a flat ``background``."""
    sky_color: Any = checked_field(Custom(_colour), (0.32, 0.50, 0.78))
    """RGB in [0, 1] of the sky overhead, (3,)."""
    horizon_color: Any = checked_field(Custom(_colour), (0.80, 0.84, 0.88))
    """RGB in [0, 1] of the sky at the horizon and of the haze, (3,)."""
    haze_distance: float = checked_field(Real(0.0, low_open=True, unit=" [m]"), 25.0)
    """Distance from the camera [m] at which surfaces have faded halfway into ``horizon_color``."""
    shadows: bool = checked_field(Flag(), True)
    """Cast shadows of cloths, colliders and props from the light onto everything (a shadow map)."""
    shadow_size: int = checked_field(Custom(_shadow_size), 2048)
    """Side of the shadow map [texels], 256–8192; it covers a square of about 1.6 camera distances
    around the camera's target, so bigger maps give sharper shadows at more cost."""
    samples: int = checked_field(Custom(_samples), 4)
    """Multisampling anti-aliasing: samples per pixel, 0 or 1 for none, up to the GL driver's maximum
    (clamped to it; llvmpipe allows 4)."""
    light_direction: Any = checked_field(Custom(unit_vector), (0.35, 0.8, 0.5))
    """Direction toward the (directional) light, world space, (3,), normalised on construction; default
    from above, to the right and in front of the default camera."""
    ambient: float = checked_field(Real(0.0, 1.0, unit=" (fraction of full light)"), 0.3)
    """Light that reaches every surface whatever its orientation, fraction of full [0, 1]."""
    strain_scale: float = checked_field(Real(0.0, low_open=True, unit=" [-]"), 0.02)
    """Strain [-] shown at full red (stretch) or full blue (compression) in the strain view; 0.02 = 2 %
    (XPBD cotton hangs at under 1 %: it shows pink where it strains most)."""
    point_size: float = checked_field(Real(0.0, low_open=True, unit=" [px]"), 5.0)
    """Diameter of a particle in the particles view [px]."""

    def next_view(self) -> str:
        """Switch to the next view of ``VIEWS`` (wrapping round) and return its name."""
        self.view = VIEWS[(VIEWS.index(self.view) + 1) % len(VIEWS)]
        return self.view


@persistent
@dataclass(eq=False)
class ColliderStyle(Checked):
    """How a collider entity is drawn by the GL renderer: its colour, floor tiles, or not at all.

    Add it to the collider's entity (``app.spawn(Collider(Box(...)), Transform(...), ColliderStyle(visible=False))``
    hides a collider that a character model already shows). Without one, planes are drawn in ``FLOOR_COLOR``
    with 0.5 m tiles and every other shape in ``SOLID_COLOR``."""

    color: Any = checked_field(Custom(_colour), SOLID_COLOR)
    """RGB in [0, 1], (3,)."""
    tiles: float = checked_field(Real(0.0, unit=" [m]"), 0.0)
    """Side of the floor tiles drawn on a Plane [m] (alternate tiles 10 % darker); 0 for none."""
    visible: bool = checked_field(Custom(_flag), True)
    """False draws nothing (the collider still collides)."""


@persistent
@dataclass(eq=False)
class Prop(Checked):
    """A solid that is drawn and never collided with: scenery and character parts (a mast, a rope, a head).

    ``shape`` is any collider shape (``collider.SHAPES``: Plane, Sphere, Capsule, Cylinder, Cone, Box, ...) in the
    entity's local frame; the entity's ``Transform`` places it (none: at the origin). Cloth passes through
    a prop; give it a ``Collider`` as well to make cloth rest on it::

        app.spawn(Prop(Cylinder(0.03, 1.5), color=(0.45, 0.3, 0.18)), Transform(position=(0.0, 1.5, 0.0)))
    """

    shape: Any = checked_field(Custom(_shape))
    """The shape drawn [m], a collider shape of loom.components.collider."""
    color: Any = checked_field(Custom(_colour), SOLID_COLOR)
    """RGB in [0, 1], (3,)."""
    tiles: float = checked_field(Real(0.0, unit=" [m]"), 0.0)
    """Side of the tiles drawn on a Plane shape [m]; 0 for none."""
    visible: bool = checked_field(Custom(_flag), True)
    """False hides it."""


@persistent
@dataclass(eq=False)
class InputState(Checked):
    """App resource: this frame's mouse, keys and wheel, filled by the window loop before Stage.INPUT.

    Systems in Stage.INPUT read it (camera orbit, grabbing, blowing) and never see pygame events.
    Pixel coordinates are pygame's: x right, y down, (0, 0) the top-left corner of the window::

        (0, 0) ───▶ x
          │
          ▼ y          (size[0], size[1]) bottom-right

    Buttons are numbered as pygame numbers them: 1 left, 2 middle, 3 right. Keys are pygame key codes
    (``pygame.K_r``). Headless, it stays at rest (nothing pressed), so INPUT systems do nothing."""

    mouse: tuple[float, float] = checked_field(_pair("real"), (0.0, 0.0))
    """Pointer position [px] (x right, y down)."""
    mouse_delta: tuple[float, float] = checked_field(_pair("real"), (0.0, 0.0))
    """Pointer motion since the previous frame [px]."""
    buttons: set[int] = checked_field(Custom(_keys), default_factory=set)
    """Mouse buttons held down now (1 left, 2 middle, 3 right)."""
    buttons_pressed: set[int] = checked_field(Custom(_keys), default_factory=set)
    """Mouse buttons that went down this frame."""
    buttons_released: set[int] = checked_field(Custom(_keys), default_factory=set)
    """Mouse buttons that went up this frame."""
    keys: set[int] = checked_field(Custom(_keys), default_factory=set)
    """Keys held down now (pygame key codes)."""
    keys_pressed: set[int] = checked_field(Custom(_keys), default_factory=set)
    """Keys that went down this frame (pygame key codes)."""
    wheel: float = checked_field(Real(), 0.0)
    """Wheel notches this frame; > 0 rolled away from the player (zoom in)."""
    size: tuple[int, int] = checked_field(_pair("size"), (0, 0))
    """Window size [px] (width, height); (0, 0) headless."""
    frame: int = checked_field(Int(0), 0)
    """Rendered frames so far (the window loop counts them)."""

    def begin_frame(self) -> None:
        """Forget this-frame events (pressed, released, wheel, motion); held buttons and keys stay."""
        self.buttons_pressed.clear()
        self.buttons_released.clear()
        self.keys_pressed.clear()
        self.wheel = 0.0
        self.mouse_delta = (0.0, 0.0)
