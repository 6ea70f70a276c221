"""Forces: where external forces on cloth are computed (``wind``: Wind and Blower air on every triangle)."""
from loom.systems.forces.wind import WindPlugin

__all__ = ["WindPlugin"]
