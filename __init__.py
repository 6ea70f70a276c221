"""Loom: cloth for Python game prototypes — capes, flags, banners, curtains — on esper, numba and moderngl.

A game writes ``import loom`` and little else::

    import loom

    app = loom.App(dt=1 / 60, substeps=16)
    app.add_plugin(loom.DefaultPlugins)                       # the whole cloth pipeline
    sheet = loom.mesh.grid(32, 32, 1.0, 1.0, center=(0, 1, 0), plane="xz")
    app.spawn(loom.Cloth.from_mesh(sheet, "cotton"), loom.Pin.corners(sheet, "top"))
    app.step(frames=60)

The everyday API, by where it lives:

=====================  ===========================================================================
the frame              ``App``, ``AppProcessor`` (Loom as one of the game's esper processors), ``Stage``,
                       ``Plugin``, ``PluginGroup``, ``PluginError``, ``FixedClock``, ``mesh`` (the mesh
                       builders), ``Mesh`` (``loom.engine``); ``WindowRunner`` (``loom.launch``)
errors                 ``FieldError`` (a ValueError), ``FrozenFieldError`` (a TypeError), ``UnitsWarning``
cloth                  ``Cloth``, ``ClothMaterial``, ``PRESETS``, ``Pin``, ``Transform``, ``Gravity``,
                       ``Tearable``; the models: ``MODELS``, ``VerletSettings``, ``MassSpringSettings``,
                       ``ImplicitSettings``
colliders              ``Collider``, ``Plane``, ``Sphere``, ``Capsule``, ``Cylinder``, ``Cone``, ``Box``, ``Prism``,
                       ``TriangleMesh``, ``RigidBody2D``, ``Space2D``
air and input          ``Wind`` (zones: ``WindBox``, ``WindSphere``), ``Blower``, ``Grab``, ``Camera``,
                       ``InputState``
looks                  ``ClothStyle``, ``ColliderStyle``, ``Prop``, ``RenderSettings`` (``loom.components``)
2D games               ``PixelSpace``, ``PixelCamera``, ``UnitsWarning`` (the game's pixels); ``cape``,
                       ``flag`` and their handles ``Cape``, ``Flag`` (``loom.prefabs``: one call each); a drawn
                       character, ``spawn_figure``, ``pose_figure``, ``Figure``
the pipeline           ``DefaultPlugins``, ``ClothSet`` (``loom.systems``: one subpackage per concern)
drawing                ``GLRenderPlugin``, ``SoftRenderer``, ``SoftRenderPlugin``, ``WindowPlugin``
                       (``loom.systems.render``); a game's own shader: ``vertex_buffers``,
                       ``VertexBuffers``
files                  ``load_obj``, ``save_obj``, ``save_snapshot``, ``load_snapshot`` (``loom.files``)
=====================  ===========================================================================

Subpackages: ``loom.engine`` (App, schedule, clock, plugins, meshes, window), ``loom.launch`` (the runner,
compile-ahead, the thread tuner, the recorder: the launch tooling), ``loom.components``
(plain data, validated), ``loom.systems`` (behaviour and numba kernels), ``loom.prefabs`` (cape, flag),
``loom.files`` (OBJ/PLY, bake, thickness, snapshots, replays), ``loom.games`` (``python -m loom.games``), ``loom.benchmarks``
(``python -m loom.benchmarks``). docs/architecture.md draws the layers, what each may import and one
frame; docs/api.md is the reference, generated from the code.

Names load on first use, so ``import loom`` costs nothing until a name is touched.
"""
from __future__ import annotations

import importlib as _importlib
from typing import Any as _Any

_PUBLIC: dict[str, str] = {
    # the frame
    "App": "loom.engine", "Stage": "loom.engine", "Plugin": "loom.engine", "PluginGroup": "loom.engine",
    "PluginError": "loom.engine", "FixedClock": "loom.engine", "Mesh": "loom.engine", "WindowRunner": "loom.launch",
    "AppProcessor": "loom.engine.app",
    # cloth
    "Cloth": "loom.components", "ClothMaterial": "loom.components", "Pin": "loom.components",
    "Transform": "loom.components", "Gravity": "loom.components", "Tearable": "loom.components",
    "MaxDistance": "loom.components", "StepBlend": "loom.systems.render.between", "Follow": "loom.components",
    "figure_colliders": "loom.prefabs",
    "Sleep": "loom.components", "SleepPlugin": "loom.systems.pipeline.sleep",
    "VerletSettings": "loom.components", "MassSpringSettings": "loom.components",
    "ImplicitSettings": "loom.components", "PRESETS": "loom.components", "MODELS": "loom.components",
    # colliders
    "Collider": "loom.components", "Plane": "loom.components", "Sphere": "loom.components",
    "Capsule": "loom.components", "Cylinder": "loom.components", "Cone": "loom.components", "Box": "loom.components",
    "Prism": "loom.components", "TriangleMesh": "loom.components", "RigidBody2D": "loom.components",
    "Space2D": "loom.components",
    # air, input, looks
    "Wind": "loom.components", "WindBox": "loom.components", "WindSphere": "loom.components",
    "Blower": "loom.components", "Grab": "loom.components",
    "Camera": "loom.components", "InputState": "loom.components", "ClothStyle": "loom.components",
    "ColliderStyle": "loom.components", "Prop": "loom.components", "RenderSettings": "loom.components",
    # a 2D game's pixels, and everyday cloth in one call
    "PixelSpace": "loom.components", "PixelCamera": "loom.components",
    "UnitsWarning": "loom.components", "FrozenFieldError": "loom.components", "FieldError": "loom.components",
    "cape": "loom.prefabs", "flag": "loom.prefabs", "Cape": "loom.prefabs",
    "Flag": "loom.prefabs", "Figure": "loom.prefabs", "spawn_figure": "loom.prefabs", "pose_figure": "loom.prefabs",
    # the pipeline
    "DefaultPlugins": "loom.systems", "ClothSet": "loom.systems", "KeepOutPlugin": "loom.systems",
    # drawing
    "GLRenderPlugin": "loom.systems.render.gl", "SoftRenderer": "loom.systems.render.soft",
    "SoftRenderPlugin": "loom.systems.render.soft", "WindowPlugin": "loom.systems.render.window",
    "vertex_buffers": "loom.systems.render.buffers", "VertexBuffers": "loom.systems.render.buffers",
    # files
    "load_obj": "loom.files.meshes", "save_obj": "loom.files.meshes",
    "save_snapshot": "loom.files.snapshot", "load_snapshot": "loom.files.snapshot",
}
_SUBMODULES = ("mesh",)            # loom.mesh is loom.engine.mesh: the mesh builders

__all__ = sorted([*_PUBLIC, *_SUBMODULES])


def __getattr__(name: str) -> _Any:
    """Load a public name from its module on first use (PEP 562) and keep it here. The first one imports
    ``loom.launch`` before it: its thread policy must be in the environment before numba starts its threads."""
    if name in _PUBLIC or name in _SUBMODULES:
        _importlib.import_module("loom.launch")
    if name in _PUBLIC:
        value = getattr(_importlib.import_module(_PUBLIC[name]), name)
    elif name in _SUBMODULES:
        value = _importlib.import_module(f"loom.engine.{name}")
    else:
        raise AttributeError(f"module 'loom' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
