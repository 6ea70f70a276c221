"""Loom's standard systems, each a plugin; ``DefaultPlugins`` is the whole cloth pipeline.

Where a thing happens:

==================  ==============================================================================
``pipeline``        sets, gravity, pins, the NaN guard, the report (``ClothPlugin``, ``PinPlugin``,
                    ``GuardPlugin``)
``xpbd``            the default model: predict, constraints, tethers, update
``models``          verlet, mass_spring, implicit (whole cloth models beside XPBD)
``collision``       colliders (``environment``) and self-collision
``forces``          wind
``coupling``        pymunk bodies
``interaction``     picking (grab, blow), tearing, teleport
``render``          GL and software renderers, surfaces, the window loop (opt-in)
``shared``          kernels more than one concern uses (batches, distance limits, shapes, the index of
                    cloths by model)
``sets``            ``ClothSet``: the public ordering handles
``registry``        model name → the plugins that step it (``register_model`` for your own model)
==================  ==============================================================================

Order your own systems against the public sets in ``ClothSet``::

    app.add_system(apply_buoyancy, Stage.SUBSTEP, after=ClothSet.PREDICT, before=ClothSet.CONSTRAIN)
"""
from __future__ import annotations

from loom.engine import PluginGroup
from loom.launch import LaunchPlugin
from loom.systems.collision import EnvironmentPlugin, KeepOutPlugin, SelfCollisionPlugin
from loom.systems.collision.follow import FollowPlugin
from loom.systems.collision.max_distance import MaxDistancePlugin
from loom.systems.coupling import PymunkPlugin
from loom.systems.forces import WindPlugin
from loom.systems.interaction import PickingPlugin, TearingPlugin, TeleportPlugin
from loom.systems.models import ImplicitPlugin, MassSpringPlugin, VerletPlugin
from loom.systems.pipeline import ClothPlugin, GuardPlugin, PinPlugin
from loom.systems.pipeline.sleep import SleepPlugin
from loom.systems.registry import model_names, model_plugins, register_model
from loom.systems.sets import ClothSet
from loom.systems.xpbd import ConstraintPlugin, IntegrationPlugin

_OTHER_MODELS = [plugin for name in model_names() if name != "xpbd" for plugin in model_plugins(name).plugins]
DefaultPlugins = PluginGroup(ClothPlugin, IntegrationPlugin, PinPlugin, ConstraintPlugin, EnvironmentPlugin,
                             SelfCollisionPlugin, FollowPlugin, MaxDistancePlugin, PymunkPlugin, SleepPlugin,
                             GuardPlugin, *_OTHER_MODELS,
                             WindPlugin, PickingPlugin, TearingPlugin, TeleportPlugin, LaunchPlugin)
"""The standard pipeline: the frame, XPBD (the default model, its two plugins around PinPlugin as ever), and
the other built-in models from the registry, and the launch tooling's step boundary (``LaunchPlugin``: threads
"auto", kernels rebound once ready); ``DefaultPlugins.without("GuardPlugin")`` leaves a member out.
A model registered later is not in it: ``app.add_plugin(model_plugins("mine"))``."""

__all__ = ["ClothPlugin", "ClothSet", "ConstraintPlugin", "DefaultPlugins", "EnvironmentPlugin", "FollowPlugin", "KeepOutPlugin",
           "GuardPlugin", "ImplicitPlugin", "IntegrationPlugin", "LaunchPlugin", "MassSpringPlugin",
           "MaxDistancePlugin", "PickingPlugin", "PinPlugin", "PymunkPlugin", "SelfCollisionPlugin", "SleepPlugin", "TearingPlugin",
           "TeleportPlugin", "VerletPlugin", "WindPlugin", "model_names", "model_plugins", "register_model"]
