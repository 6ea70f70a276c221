"""Loom's components: plain data validated on construction (no behaviour, no system imports)."""
from loom.components._revision import FrozenFieldError
from loom.components._validate import FieldError
from loom.components.camera import Camera
from loom.components.cloth import BEND, MODELS, PRECISIONS, SHEAR, STEP_MODELS, STRETCH, Cloth
from loom.components.collider import (Box, Capsule, Collider, ColliderSet, Cone, Cylinder, Plane, Prism, Sphere,
                                 TriangleMesh)
from loom.components.grab import Grab
from loom.components.follow import Follow
from loom.components.gravity import Gravity
from loom.components.material import PRESETS, ClothMaterial
from loom.components.max_distance import MaxDistance
from loom.components.models import INTEGRATORS, SETTINGS, ImplicitSettings, MassSpringSettings, VerletSettings
from loom.components.pin import Pin
from loom.components.pixels import PixelCamera, PixelSpace, UnitsWarning
from loom.components.render import ClothStyle, ColliderStyle, InputState, Prop, RenderSettings
from loom.components.rigid_body import RigidBody2D, Space2D
from loom.components.sleep import Sleep
from loom.components.tearing import Tearable
from loom.components.transform import Transform
from loom.components.wind import Blower, Wind, WindBox, WindSphere

__all__ = [
    "BEND", "Blower", "Box", "Camera", "Capsule", "Cloth", "ClothMaterial", "ClothStyle", "Collider", "ColliderSet",
    "ColliderStyle", "Cone", "Cylinder", "FieldError", "Follow", "FrozenFieldError", "Grab", "Gravity", "INTEGRATORS",
    "ImplicitSettings", "InputState", "MODELS", "MassSpringSettings", "MaxDistance", "PRECISIONS", "PRESETS", "Pin",
    "PixelCamera",
    "PixelSpace", "Plane", "Prism", "Prop", "RenderSettings", "RigidBody2D", "SETTINGS", "SHEAR", "STEP_MODELS",
    "STRETCH", "Sleep", "Space2D", "Sphere", "Tearable", "Transform", "TriangleMesh", "UnitsWarning", "VerletSettings",
    "Wind", "WindBox", "WindSphere",
]
