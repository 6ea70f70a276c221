"""Loom's components: plain data validated on construction (no behaviour, no system imports)."""
from components.camera import Camera
from components.cloth import BEND, MODELS, SHEAR, STEP_MODELS, STRETCH, Cloth
from components.collider import (Box, Capsule, Collider, ColliderSet, Cylinder, Plane, Prism, Sphere,
                                 TriangleMesh)
from components.gravity import Gravity
from components.material import PRESETS, ClothMaterial
from components.models import INTEGRATORS, ImplicitSettings, MassSpringSettings, VerletSettings
from components.pin import Pin
from components.rigid_body import RigidBody2D, Space2D
from components.transform import Transform

__all__ = [
    "BEND", "INTEGRATORS", "MODELS", "PRESETS", "SHEAR", "STEP_MODELS", "STRETCH",
    "Box", "Camera", "Capsule", "Cloth", "ClothMaterial", "Collider", "ColliderSet", "Cylinder", "Gravity",
    "ImplicitSettings", "MassSpringSettings", "Pin", "Plane", "Prism", "RigidBody2D", "Space2D", "Sphere",
    "Transform", "TriangleMesh", "VerletSettings",
]
