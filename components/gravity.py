"""Gravity: the world's uniform gravitational acceleration, held as an App resource."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loom.components._revision import Checked
from loom.components._validate import Arr, floats


@dataclass(eq=False)
class Gravity(Checked):
    """Uniform acceleration [m/s²], shape (3,); default (0, −9.81, 0): y is up.

    Insert your own before adding the plugins to change it: ``app.insert_resource(Gravity((0, -1.62, 0)))``."""

    acceleration: Any = (0.0, -9.81, 0.0)

    def __post_init__(self) -> None:
        self.acceleration = floats("Gravity", "acceleration", self.acceleration, (3,), unit=" [m/s²]")


Gravity._fields = {"acceleration": Arr((3,), unit=" [m/s²]")}
