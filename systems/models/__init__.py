"""The cloth models beside XPBD: ``verlet`` (Fuhrmann 2003), ``mass_spring`` (Provot 1995), ``implicit``
(Baraff & Witkin 1998)."""
from loom.systems.models.implicit import ImplicitPlugin
from loom.systems.models.mass_spring import MassSpringPlugin
from loom.systems.models.verlet import VerletPlugin

__all__ = ["ImplicitPlugin", "MassSpringPlugin", "VerletPlugin"]
