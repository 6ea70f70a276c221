"""The prefabs' units and order: a helper's points and lengths are read in the units the App has at its first step.

``loom.cape`` and ``loom.flag`` take the game's pixels when the App has a ``PixelSpace``, metres otherwise. They
build their cloth at once (the handle's ``.cloth`` is there to read), in the units in force then, and each
records its arguments. One PRE_STEP system per App (``prefab_units``, before the guard saves the state) runs at
the first step after a helper was made, and whenever the App's PixelSpace resource is replaced:

- a helper whose units changed before its cloth was first stepped (a PixelSpace inserted after ``loom.cape``,
  as the guide once forbade) is rebuilt from its arguments in the App's units now, its carrier read where the
  first build found it — the cloth an earlier PixelSpace would have given, to the bit. Its Cloth and Pin objects
  are kept and take the new build's arrays (``transplant``), so handles and references to the components stay
  valid (arrays copied before the first step are the first build's);
- a helper whose units change after its cloth was stepped is refused: RuntimeError naming the order (its cloth
  hangs in the old units; a rebuild mid-game would throw away its motion);
- with no PixelSpace, points beyond PIXEL_SIZED_POINT metres or lengths beyond PIXEL_SIZED_LENGTH warn once per
  App and helper (``UnitsWarning`` naming PixelSpace): likely pixels taken for metres.

Between those events the system does not run (its condition: a helper pending, or another PixelSpace object).
"""
from __future__ import annotations

import weakref
from typing import Any, Protocol

from loom.components import PixelSpace
from loom.components.pixels import warn_units
from loom.engine import App, Stage
from loom.systems import ClothSet

PIXEL_SIZED_POINT = 100.0
"""Distance [m] from the origin beyond which a helper's point (a pole's top, a carrier) warns without PixelSpace."""
PIXEL_SIZED_LENGTH = 10.0
"""Length [m] beyond which a helper's size (a flag, a cape, the hero carrying it) warns without PixelSpace."""


class Helper(Protocol):
    """What a prefab handle offers the units system (``Cape``, ``Flag``)."""

    entity: int
    cloth: Any

    def _rebuild(self, pixels: PixelSpace | None) -> None:
        """Build the cloth again from the recorded arguments in ``pixels`` (or metres) and transplant it."""

    def _extent(self) -> tuple[str, float, str, float]:
        """(what, its farthest point's distance from the origin [m], what, its largest length [m]) as built."""


class Built:
    """One helper's record: the handle, the PixelSpace it was built in, and whether its cloth has been stepped."""

    def __init__(self, handle: Helper, pixels: PixelSpace | None, where: str) -> None:
        self.handle = handle
        self.pixels = pixels
        self.where = where
        self.stepped = False


class Registry:
    """An App's helpers (``Built``), those not yet stepped, and the PixelSpace the system last saw."""

    def __init__(self) -> None:
        self.built: list[Built] = []
        self.pending = False
        self.pixels: PixelSpace | None = None

    def due(self, app: App) -> bool:
        """The system's run_if: a helper not yet stepped, or the App's PixelSpace replaced."""
        return self.pending or app.resources.get(PixelSpace) is not self.pixels


_REGISTRIES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""App → a weak reference to its Registry (made with the first helper; the App's system holds it, so the
registry, which holds the handles and through them the App, never keeps an App alive from here)."""


def record(app: App, handle: Helper, pixels: PixelSpace | None, where: str) -> None:
    """Remember a helper just built in ``pixels`` (None: metres); add the App's units system with the first."""
    ref = _REGISTRIES.get(app)
    registry = None if ref is None else ref()
    if registry is None:
        registry = Registry()
        _REGISTRIES[app] = weakref.ref(registry)
        registry.pixels = app.resources.get(PixelSpace)
        before = "save_state" if "GuardPlugin" in app.plugins else None      # rebuilt before the guard copies it
        app.add_system(lambda app, dt: check_units(app, registry), Stage.PRE_STEP, name="prefab_units",
                       in_set=ClothSet.SAVE, before=before, run_if=registry.due)
    registry.built.append(Built(handle, pixels, where))
    registry.pending = True


def same(a: PixelSpace | None, b: PixelSpace | None) -> bool:
    """True if ``a`` and ``b`` read pixels alike (both None: metres)."""
    return a is b or (a is not None and a.same_units(b))


def check_units(app: App, registry: Registry) -> None:
    """PRE_STEP: rebuild helpers whose units changed before their first step, refuse a change after it, warn
    about pixel-sized metres; then mark them stepped."""
    pixels = app.resources.get(PixelSpace)
    alive = []
    for built in registry.built:
        handle = built.handle
        if app.try_get(handle.entity, type(handle.cloth)) is not handle.cloth:    # despawned or replaced
            continue
        alive.append(built)
        if not same(built.pixels, pixels):
            if built.stepped:
                raise RuntimeError(
                    f"{built.where} (entity {handle.entity}) was built {_units(built.pixels)} and the App's "
                    f"PixelSpace is now {_units(pixels)}: its cloth has been stepped in the old units. A helper's "
                    f"points and lengths are read in the App's units at its first step: insert the PixelSpace "
                    f"before the first step (before or after {built.where}), and keep it")
            handle._rebuild(pixels)
            built.pixels = pixels
        if not built.stepped and pixels is None:
            _warn_if_pixels(app, built)
        built.stepped = True
    registry.built = alive
    registry.pending = False
    registry.pixels = pixels


def _units(pixels: PixelSpace | None) -> str:
    """How a helper reads its inputs: 'in metres' or 'in pixels at N px/m'."""
    return "in metres (no PixelSpace)" if pixels is None else f"in pixels at {pixels.pixels_per_metre:g} px/m"


def _warn_if_pixels(app: App, built: Built) -> None:
    """UnitsWarning (once per App and kind) for a helper read in metres whose point or size looks like pixels."""
    point_what, far, length_what, size = built.handle._extent()
    fix = (f"the App has no PixelSpace, so {built.where} read metres: pixels? Insert "
           f"loom.PixelSpace(pixels_per_metre, origin=...) before the first step (before or after {built.where})")
    if far > PIXEL_SIZED_POINT:
        warn_units(app, f"{built.where} point", f"{built.where} (entity {built.handle.entity}): {point_what} is {far:.4g} m "
                                        f"from the origin; {fix}")
    if size > PIXEL_SIZED_LENGTH:
        warn_units(app, f"{built.where} length", f"{built.where} (entity {built.handle.entity}): {length_what} is "
                                         f"{size:.4g} m; {fix}")


def transplant(old: Any, new: Any) -> None:
    """Give component ``old`` everything ``new`` holds (same class), keeping ``old`` itself — the object the
    entity, the handle and the game hold — and counting it as a new revision (batches rebuild their lists)."""
    revision = old.__dict__.get("revision", 0) + new.__dict__.get("revision", 0) + 1
    old.__dict__.clear()
    old.__dict__.update(new.__dict__)
    object.__setattr__(old, "revision", revision)
