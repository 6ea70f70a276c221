"""The model registry: which plugin steps each cloth model, in one table.

``Cloth(model=name)`` selects a model; this module maps the name to the plugins whose systems step
cloths of that model. The four built in: ``xpbd`` (``loom.systems.xpbd``: IntegrationPlugin,
ConstraintPlugin), ``verlet``, ``mass_spring`` and ``implicit`` (``loom.systems.models``). A model's
systems find their cloths with ``loom.systems.shared.model_index.cloths_of(app, name)`` (one index,
no string compares) and keep what they need per cloth in a resource with ``forget(entity)``,
registered with ``forget_on_despawn`` so it leaves with the cloth (XPBD's multipliers and tethers:
``loom.systems.xpbd.data.XPBDData``; Verlet's and mass-spring's tables: ``ClothScratch``). The pipeline
around every model (``loom.systems.pipeline``) places pins, clears forces after each step and guards
the state; a model follows the cloth's change signal, ``Cloth.changes`` (pins, grabs, masses, a new
topology, a refused step: ``loom.systems.shared.substep_model.Seen``), instead of polling.

Your own model::

    class ToyPlugin:                               # its systems move the "toy" cloths
        def build(self, app):
            app.add_system(step_toy, Stage.SUBSTEP, in_set=ClothSet.PREDICT, run_if=uses_model("toy"))

    register_model("toy", ToyPlugin)               # Cloth(model="toy") is now accepted
    app.add_plugin(DefaultPlugins)
    app.add_plugin(model_plugins("toy"))
    app.spawn(Cloth.from_mesh(sheet, model="toy"))

``register_model`` tells the components the model's settings class and traits (``ModelSpec``)
through ``loom.components.models.register_settings``: components never import systems.
"""
from __future__ import annotations

from dataclasses import dataclass

from loom.components.models import MODEL_SPECS, ModelSpec, register_settings
from loom.engine import PluginGroup
from loom.engine.plugin import PluginLike, plugin_name
from loom.systems.models import ImplicitPlugin, MassSpringPlugin, VerletPlugin
from loom.systems.xpbd import ConstraintPlugin, IntegrationPlugin


@dataclass(frozen=True)
class ModelEntry:
    """One registered model: its name, the plugins that step it, what components know of it."""

    name: str
    plugins: tuple[PluginLike, ...]
    spec: ModelSpec


_MODELS: dict[str, ModelEntry] = {}


def register_model(name: str, *plugins: PluginLike, settings: type | None = None, whole_step: bool = False,
                   float32: bool = False, dihedral: str = "never") -> ModelEntry:
    """Register a cloth model: ``name`` → ``plugins`` (added by ``app.add_plugin(model_plugins(name))``).

    settings: the class of ``Cloth.settings`` (None: the model takes none); whole_step: solved once per
    fixed step instead of per substep (``Cloth.substepped`` is then False and pins, colliders and
    self-collision leave it to the model); float32: its kernels take ``precision="float32"``; dihedral:
    "never", "always" or "material" (whether it solves the bend quads; ``Cloth.constraint_count``).
    Registering a name again raises ValueError, unless with the same plugins and spec."""
    if not plugins:
        raise ValueError(f"register_model {name!r}: give the plugin(s) whose systems step its cloths")
    spec = ModelSpec(settings=settings, whole_step=whole_step, float32=float32, dihedral=dihedral)
    return _add(name, plugins, spec)


def _add(name: str, plugins: tuple[PluginLike, ...], spec: ModelSpec) -> ModelEntry:
    entry = ModelEntry(name, tuple(plugins), spec)
    known = _MODELS.get(name)
    if known is not None:
        if known == entry:
            return known
        names = ", ".join(plugin_name(p) for p in known.plugins)
        raise ValueError(f"register_model: model {name!r} is already registered (plugins {names})")
    register_settings(name, spec)                  # ValueError for a bad name or a conflicting spec
    _MODELS[name] = entry
    return entry


def model_names() -> tuple[str, ...]:
    """Names of the registered models: the four built in, then yours, in registration order."""
    return tuple(_MODELS)


def model_entry(name: str) -> ModelEntry:
    """The registry entry of ``name``. Raises ValueError naming the known models."""
    entry = _MODELS.get(name) if isinstance(name, str) else None
    if entry is None:
        raise ValueError(f"model = {name!r}: not a registered model; known: {', '.join(_MODELS)}")
    return entry


def model_plugins(name: str) -> PluginGroup:
    """The plugins that step ``name``'s cloths, as one group to ``app.add_plugin``."""
    return PluginGroup(*model_entry(name).plugins)


for _name, _plugins in (("xpbd", (IntegrationPlugin, ConstraintPlugin)), ("verlet", (VerletPlugin,)),
                        ("mass_spring", (MassSpringPlugin,)), ("implicit", (ImplicitPlugin,))):
    _add(_name, _plugins, MODEL_SPECS[_name])      # components know the built-ins' specs already

__all__ = ["ModelEntry", "model_entry", "model_names", "model_plugins", "register_model"]
