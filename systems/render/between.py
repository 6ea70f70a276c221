"""Drawing between steps: renderers draw the state interpolated between the last two fixed steps.

The clock pays real time out in whole steps of ``dt`` and banks the rest (``FixedClock.accumulator``): a 60 Hz
simulation shown on a 144 Hz display would otherwise repeat a frame two or three times and then jump. Following
Fiedler ("Fix Your Timestep!", the clock's own reference), what is drawn is the blend of the state at the end of
the previous step and the state now, by the fraction of a step banked but not simulated, α = accumulator / dt
(``FixedClock.alpha``, in [0, 1)):

    x_drawn = (1 − α)·x_prev_step + α·x                                                    [m]

so the picture runs at most one step (1/60 s) behind the simulation and moves smoothly at any display rate. It is
drawing only: the simulation never reads what is drawn, so its results are bit-identical with it on or off.

``StepBlend`` (a resource both renderer plugins insert, off by default; ``WindowPlugin`` turns it on in the window
loop) remembers, at the start of every step (PRE_STEP, ``ClothSet.SAVE``, before anything moves a particle), each
cloth's positions and each drawn solid's Transform (colliders and props: a figure's parts, a hero's collider), into
arrays kept from step to step: ``remember_step_start`` copies in place, and ``positions`` blends into a kept array,
so a frame allocates nothing more with it on. A cloth whose particles changed (torn, replaced) or that did not
exist at the last step's start is drawn where it is; so is everything after ``app.step(n)`` outside ``update``
(α is then whatever the last ``update`` banked: turn the blend off to draw exact step states, as the headless
runner does).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from loom.components import Cloth, Collider, Transform
from loom.components.render import Prop
from loom.engine import App, Stage
from loom.systems.sets import ClothSet


@dataclass(eq=False)
class _Memory:
    """One cloth's positions at the start of the step that made the current ones."""

    cloth: Any
    prev: np.ndarray                  # (n, 3) [m]: x at the start of step ``step``
    drawn: np.ndarray                 # (n, 3) [m]: the blend, rewritten each frame
    step: int                         # clock.step_index when ``prev`` was copied


@dataclass(eq=False)
class _Pose:
    """One solid's Transform at the start of the step that made the current one."""

    transform: Any
    position: np.ndarray              # (3,) [m]
    rotation: np.ndarray              # (3, 3)
    step: int


@dataclass(eq=False)
class StepBlend:
    """Resource: whether renderers draw between steps, and what they blend from (kept from step to step).

    ``enabled`` False (the default for a renderer plugin alone) draws every cloth and solid where the last step
    left it; True draws them at (1 − α)·previous + α·current with α = ``app.clock.alpha``. The window loop
    (``WindowPlugin(interpolate=True)``, the default) turns it on."""

    enabled: bool = False
    """Draw between the last two steps (True) or the last step's state (False)."""
    _cloths: dict[int, _Memory] = field(default_factory=dict, repr=False)
    _poses: dict[int, _Pose] = field(default_factory=dict, repr=False)

    def positions(self, app: App, entity: int, cloth: Cloth) -> np.ndarray:
        """The positions (n, 3) [m] to draw ``entity``'s cloth at: the blend when enabled and the cloth was there at
        the last step's start with the same particles, else ``cloth.x`` itself. The blend is written in place into
        an array kept for the cloth (valid until the next call for it)."""
        memory = self._cloths.get(entity) if self.enabled else None
        if memory is None or memory.cloth is not cloth or memory.step != app.clock.step_index - 1 \
                or memory.prev.shape != cloth.x.shape:
            return cloth.x
        out = memory.drawn
        np.subtract(cloth.x, memory.prev, out=out)           # prev + α·(x − prev) = (1 − α)·prev + α·x
        out *= app.clock.alpha
        out += memory.prev
        return out

    def placement(self, app: App, entity: int, transform: Transform | None, out: np.ndarray) -> np.ndarray:
        """Write the 4×4 local → world matrix to draw ``entity``'s solid with into ``out`` (4, 4) and return it:
        position blended linearly, rotation blended and made orthonormal again (Gram–Schmidt on its columns; the
        current rotation when the blend degenerates, a half turn within one step); ``transform`` itself when not
        enabled or the solid was not remembered at the last step's start. None: the identity."""
        out[:] = 0.0
        out[3, 3] = 1.0
        if transform is None:
            out[0, 0] = out[1, 1] = out[2, 2] = 1.0
            return out
        pose = self._poses.get(entity) if self.enabled else None
        if pose is None or pose.transform is not transform or pose.step != app.clock.step_index - 1:
            out[:3, :3] = transform.rotation
            out[:3, 3] = transform.position
            return out
        a = app.clock.alpha
        out[:3, 3] = pose.position + a * (transform.position - pose.position)
        r = out[:3, :3]
        r[:] = pose.rotation + a * (transform.rotation - pose.rotation)
        c0, c1 = r[:, 0], r[:, 1]
        n0 = float(np.sqrt(c0 @ c0))
        c1 -= (c0 @ c1) / max(n0 * n0, 1e-300) * c0
        n1 = float(np.sqrt(c1 @ c1))
        if n0 < 0.5 or n1 < 0.5:                             # a turn near π within one step: no blend
            r[:] = transform.rotation
            return out
        c0 /= n0
        c1 /= n1
        r[:, 2] = np.cross(c0, c1)
        return out


def remember_step_start(app: App, dt: float) -> None:
    """PRE_STEP (``ClothSet.SAVE``, while StepBlend is enabled): copy every cloth's positions and every collider's
    and prop's Transform, in place into the arrays kept for them, as the state the coming step starts from."""
    blend = app.resource(StepBlend)
    step = app.clock.step_index
    cloths, poses = blend._cloths, blend._poses
    for entity, cloth in app.query(Cloth):
        memory = cloths.get(entity)
        if memory is None or memory.prev.shape != cloth.x.shape:
            memory = cloths[entity] = _Memory(cloth, np.empty_like(cloth.x), np.empty_like(cloth.x), step)
        np.copyto(memory.prev, cloth.x)
        memory.cloth, memory.step = cloth, step
    for kind in (Collider, Prop):
        for entity, _, transform in app.query(kind, Transform):
            pose = poses.get(entity)
            if pose is None:
                pose = poses[entity] = _Pose(transform, np.empty(3), np.empty((3, 3)), step)
            np.copyto(pose.position, transform.position)
            np.copyto(pose.rotation, transform.rotation)
            pose.transform, pose.step = transform, step
    if len(cloths) > len(app.query(Cloth)):                  # despawned cloths: forget them (rare)
        alive = {entity for entity, _ in app.query(Cloth)}
        for entity in [e for e in cloths if e not in alive]:
            del cloths[entity]
    if len(poses) > 4 * max(len(app.query(Transform)), 16):  # despawned solids: forget them now and then
        alive = {entity for entity, _ in app.query(Transform)}
        for entity in [e for e in poses if e not in alive]:
            del poses[entity]


def _blending(app: App) -> bool:
    blend = app.resources.get(StepBlend)
    return blend is not None and blend.enabled


def add_step_blend(app: App) -> StepBlend:
    """Insert the StepBlend resource (kept if the game inserted one) and ``remember_step_start`` once, however many
    renderer plugins call it; return the resource in force."""
    blend = app.insert_resource(StepBlend(), replace=False)
    if "remember_step_start" not in app.schedule.names(Stage.PRE_STEP):
        app.add_system(remember_step_start, Stage.PRE_STEP, in_set=ClothSet.SAVE, run_if=_blending)
    return blend
