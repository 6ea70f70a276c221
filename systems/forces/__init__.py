"""Forces: where external forces on cloth are computed (``wind``: Wind and Blower air on every triangle)."""
from loom.systems.forces import cold  # noqa: F401  (the wind kernel's NumPy stand-in registered)
from loom.systems.forces.wind import WindPlugin

__all__ = ["WindPlugin"]
