"""Revisioned: components that count assignments to their attributes (systems/shared/batch.py keys on it)."""
from __future__ import annotations

from typing import Any


class Revisioned:
    """Mixin: ``revision`` counts assignments to the instance's attributes (an array replaced, not one
    changed in place), so batches of many components (systems/shared/batch.py) know when to rebuild their
    references to its arrays."""

    revision: int = 0

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if name != "revision":
            object.__setattr__(self, "revision", self.__dict__.get("revision", 0) + 1)
