"""Loom's components: plain data validated on construction (no behaviour, no system imports)."""
from components.camera import Camera
from components.cloth import BEND, MODELS, PRECISIONS, SHEAR, STEP_MODELS, STRETCH, Cloth
from components.collider import (Box, Capsule, Collider, ColliderSet, Cylinder, Plane, Prism, Sphere,
                                 TriangleMesh)
from components.grab import Grab
from components.gravity import Gravity
from components.material import PRESETS, ClothMaterial
from components.models import INTEGRATORS, ImplicitSettings, MassSpringSettings, VerletSettings
from components.pin import Pin
from components.render import ClothStyle, InputState, RenderSettings
from components.rigid_body import RigidBody2D, Space2D
from components.tearing import Tearable
from components.transform import Transform
from components.wind import Blower, Wind

__all__ = [
    "BEND", "INTEGRATORS", "MODELS", "PRECISIONS", "PRESETS", "SHEAR", "STEP_MODELS", "STRETCH",
    "Blower", "Box", "Camera", "Capsule", "Cloth", "ClothMaterial", "ClothStyle", "Collider", "ColliderSet",
    "Cylinder", "Grab", "Gravity", "ImplicitSettings", "InputState", "MassSpringSettings", "Pin", "Plane",
    "Prism", "RenderSettings", "RigidBody2D", "Space2D", "Sphere", "Tearable", "Transform", "TriangleMesh",
    "VerletSettings", "Wind",
]
