"""Sleep: a cloth at rest stops being stepped until something could move it; off screen, it freezes.

Add it next to a Cloth to tune that cloth (``app.spawn(cloth, pin, Sleep(threshold=0.02))``), or insert one as an
App resource to set the defaults of every cloth without its own (``app.insert_resource(Sleep())`` turns sleep on,
``Sleep(offscreen=True)`` also freezes cloths off screen; without either, the sleep system gives every cloth
``Sleep(enabled=False)``: sleep is opt-in). The sleep system
(loom.systems.pipeline.sleep) gives each cloth that has none a copy of the App's, so ``app.get(entity, Sleep).state``
always tells the game what the cloth is doing; ``state`` is written by that system (and by a game that wakes one).
"""
from __future__ import annotations

from dataclasses import dataclass

from loom.components._revision import Checked, checked_field
from loom.components._validate import Choice, Flag, Int, Real
from loom.engine.persist import persistent

STATES = ("awake", "asleep", "frozen")
"""``Sleep.state``: stepped; at rest and not stepped until woken; off screen and not stepped until back in view."""


@persistent
@dataclass(eq=False)
class Sleep(Checked):
    """When a cloth sleeps: every particle's step-to-step speed below ``threshold`` [m/s] for ``steps`` steps."""

    enabled: bool = checked_field(Flag(), True)
    """False: the cloth never falls asleep (an asleep one wakes at the next step)."""
    threshold: float = checked_field(Real(0.0, low_open=True, unit=" [m/s]"), 0.05)
    """Speed [m/s] > 0 every particle must stay below, measured from step to step (|x(t) − x(t − dt)| / dt, not the
    last substep's velocity, which keeps a still cloth's jitter). 0.05 m/s: a hanging or draped cloth reaches it a
    few seconds after it settles (docs/sleep.md); a cloth still swinging or in wind stays far above it."""
    steps: int = checked_field(Int(1), 30)
    """Steps in a row [-] >= 1 below ``threshold`` before the cloth sleeps (30: half a second at 60 Hz, longer than
    the turn of a swing, when a swinging cloth is slow for a moment)."""
    reach: float = checked_field(Real(0.0, unit=" [m]"), 0.1)
    """Margin [m] >= 0 around the cloth's bound box: a collider that moves while its bounding ball is within it
    wakes the cloth (a step's travel is added to the ball, so a fast one is not missed)."""
    offscreen: bool = checked_field(Flag(), False)
    """True: the cloth is frozen (not stepped, its state kept) while its bound box is outside the view of the App's
    first Camera, and resumes from that state when it is back in view. No Camera: never frozen. Off by default: a
    frozen cloth also stops where it was moving, so a cloth that falls, blows or is carried into view from outside it
    would never arrive; turn it on for cloths that stay in place (banners along a level)."""
    state: str = checked_field(Choice(STATES), "awake")
    """"awake", "asleep" or "frozen" (``STATES``). Set by the sleep system; a game may write "awake" to wake the
    cloth or "asleep" to put it to sleep at the next step."""
