"""Loom's components: plain data validated on construction (no behaviour, no system imports)."""
from components.cloth import BEND, MODELS, SHEAR, STRETCH, Cloth
from components.collider import Collider, Plane, Sphere
from components.gravity import Gravity
from components.material import PRESETS, ClothMaterial
from components.pin import Pin
from components.transform import Transform

__all__ = ["BEND", "MODELS", "PRESETS", "SHEAR", "STRETCH", "Cloth", "ClothMaterial", "Collider", "Gravity", "Pin",
           "Plane", "Sphere", "Transform"]
