"""Interaction: where a player acts on cloth — ``picking`` (grab, blow), ``tearing``, ``teleport``."""
from loom.systems.interaction.picking import PickingPlugin, pick_particle, update_blower, update_grab
from loom.systems.interaction.tearing import TearingPlugin
from loom.systems.interaction.teleport import TeleportPlugin

__all__ = ["PickingPlugin", "TearingPlugin", "TeleportPlugin", "pick_particle", "update_blower", "update_grab"]
