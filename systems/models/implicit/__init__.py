"""Implicit cloth (Baraff & Witkin 1998): ``solver`` (the step), ``forces`` (§4 conditions and derivatives),
``constraints`` (§5 filter), ``block_sparse`` (3×3 block matrices and the filtered PCG)."""
from loom.systems.models.implicit.solver import ImplicitPlugin

__all__ = ["ImplicitPlugin"]
