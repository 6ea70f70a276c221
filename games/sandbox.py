"""Sandbox: a hanging cloth to play with — grab, blow, tear, pin, and switch model and fabric live.

A 1 m square sheet hangs by two clips from a rail over a floor (Provot 1995's hanging cloth): the clips slide
together in its first ``SLIDE`` seconds, so the top edge has slack and folds hang from it, and a light gusty
breeze keeps it moving (W turns it off). Grabbing is Fuhrmann et al. 2003 §3 "User input" (the grabbed particle
gets infinite mass and follows the cursor at its depth; here the hand also holds the ring of particles around
it, ``grip``), blowing is Schönberger §3.3 (air from the camera toward the cursor), tearing breaks links
strained past 50 % for 0.05 s, one particle per step (systems/interaction/tearing.py).

Run: python -m loom.games.sandbox [--headless --frames 300 --report json] [--screenshot out.png]

Keys (window):
    left-drag    grab the cloth under the cursor         T      tearing on/off
    Space or B   blow from the camera toward the cursor  P      pin / unpin the particle under the cursor
    M            next model: xpbd → verlet → mass_spring → implicit (live, keeps pins, tears and motion)
    1 … 5        fabric: cotton, silk, denim, leather, rubber (live, the same way)
    R            reset the cloth (keeps model and fabric)              W      breeze on/off
    right-drag orbit · middle-drag pan · wheel zoom · V views · H HUD · C colliders · Esc quit

Headless, nobody holds the mouse, so a scripted player uses the same controls (``play_script``;
simulated time [s], a virtual 960 × 640 px window):
    1.0–2.0  left-drag the bottom-left corner 0.3 m left and 0.35 m up, then let go
    2.3–3.5  two hands take the bottom edge 0.35 m apart and pull 0.5 m outward each (in 0.8 s), hold, let go:
             a slit tears up from the hem between them
    3.7–4.4  hold Space with the cursor on the middle of the cloth
    4.6      press M: the cloth goes on as a verlet cloth
The report adds model, material, tearing, pieces (connected pieces of cloth), tears, pinned and held.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pygame

from loom import GLRenderPlugin, WindowPlugin
from loom.components import (MODELS, Blower, Box, Camera, Cloth, ClothMaterial, ClothStyle, Collider, Cylinder, Grab,
                             InputState, Pin, Plane, Prop, Tearable, Transform, Wind)
from loom.engine import App, Mesh, Stage, mesh
from loom.launch import parser, run_app
from loom.systems import ClothSet, DefaultPlugins
from loom.systems.interaction import pick_particle, update_blower, update_grab

SIDE = 32                     # particles per side of the sheet
SIZE = 1.0                    # [m]
HANG = 1.5                    # [m] height of the top edge
DT = 1 / 60
"""[s] per step. DT and SUBSTEPS are this game's step: main's App and ``python -m loom.files.bake`` use them."""
SUBSTEPS = 16                 # per step: mass_spring's explicit springs need h ≈ 1 ms at this mesh
MATERIAL_KEYS = (pygame.K_1, pygame.K_2, pygame.K_3, pygame.K_4, pygame.K_5)
MATERIALS = ("cotton", "silk", "denim", "leather", "rubber")
BLOWER_SPEED = 20.0           # [m/s] at the nozzle: ≈ 5 m/s at the cloth 2.5 m away
VIEW = (960, 640)             # [px] the window, and the scripted player's virtual one
DRAG, TEAR, BLOW, SWITCH = (1.0, 2.0), (2.3, 3.5), (3.7, 4.4), 4.6     # script times [s]
PULL = 0.8                    # [s] the hands pull apart for this long, then hold
HANDS = (10, 21, 0)           # columns of the two hands and their row (0: the bottom edge)
SPREAD = 0.5                  # [m] each hand pulls this far outward
SHEET_SHEAR = 1e-3
"""Shear compliance of the sandbox's fabrics [m/N] (``fabric``): tight weaves, stiffer in shear than the presets
(cotton 1 m/N), so pulling the sheet apart tears clean slits and flaps (the soft preset tears the scripted slit into
shards hanging by a corner, and its torn flaps keep tearing as they swing)."""
TEAR_STRAIN = 0.5             # [-] links stretched 50 % for TEAR_TIME break
TEAR_TIME = 0.05              # [s]
TEAR_SPLITS = 1
"""Particles a crack may split per step (Tearable.max_splits): one, so a crack runs on from its tip at 60
particles a second (≈ 2 m/s on this grid) instead of cutting many overloaded links at once, which left single
triangles dangling by a corner along a ragged edge."""
GAP = 0.7                     # [-] the top corners end this fraction of the sheet's width apart: the top edge's slack
SLIDE = 0.8                   # [s] they slide together over this time after the sheet is hung (smoothly)
BREEZE = (0.35, 0.0, -0.8)    # [m/s] a light air away from the camera, a little across; gusts and eddies on top
POST = 0.85                   # [m] the stand's posts stand this far either side of the middle
WOOD = (0.5, 0.36, 0.22)


@dataclass
class Sandbox:
    """App resource: the cloth's entity and mesh, the two hands and the blower, and the live choices."""

    cloth: int
    """Entity of the Cloth (with its Pin, Tearable and ClothStyle)."""
    sheet: Mesh
    """The mesh the cloth was made from (reset rebuilds from it)."""
    hand: int
    """Entity of the mouse's Grab."""
    other_hand: int
    """Entity of a second Grab (the scripted player's other hand)."""
    blower: int
    """Entity of the Blower."""
    material: str = "cotton"
    """Fabric preset in use."""
    clips: tuple[int, int] = (0, 0)
    """Entities of the two clips (props) that hold the top corners on the rail and slide with them."""
    hung_at: float = 0.0
    """Simulated time [s] the sheet was hung (the start, or the last reset): its corners slide together from then."""
    grip_held: dict[str, int] = field(default_factory=dict)
    """Per hand holding the sheet (its entity as text): the particle its Grab holds (``grip``)."""
    grip_uv: dict[str, np.ndarray] = field(default_factory=dict)
    """Per hand: rest positions (k, 2) [m] of the ring of particles around it that the hand holds too."""
    grip_offset: dict[str, np.ndarray] = field(default_factory=dict)
    """Per hand: where each of those is from the held particle [m], (k, 3), as taken."""


def build_scene(app: App) -> Cloth:
    """Spawn the floor, the sheet hanging from its top corners, two hands, a blower and a camera; return the cloth."""
    app.spawn(Collider(Plane(), friction=0.6), Transform())
    sheet = mesh.grid(SIDE, SIDE, SIZE, SIZE, center=(0.0, HANG - SIZE / 2, 0.0))       # vertical, facing +z
    cloth = Cloth.from_mesh(sheet, fabric("cotton"), iterations=SHEET_ITERATIONS)
    entity = app.spawn(cloth, hanging_pin(sheet), Tearable(tear_strain=TEAR_STRAIN, tear_time=TEAR_TIME,
                                                                 max_splits=TEAR_SPLITS),
                       ClothStyle(front_color=(0.9, 0.55, 0.15), back_color=(0.25, 0.45, 0.8)))
    hand, other_hand = app.spawn(Grab()), app.spawn(Grab())
    blower = app.spawn(Blower(speed=BLOWER_SPEED, radius=0.25, spread=0.1))     # [m/s], [m], [rad]
    app.spawn(Wind(velocity=BREEZE, gust=0.5, gust_period=3.0, turbulence=0.4, seed=5))
    app.spawn(Camera(target=(0.0, 1.0, 0.0), distance=2.6, yaw=0.3, pitch=0.15))
    half = (HANG + 0.08) / 2                                   # the stand: two posts and a rail (props: no contact)
    for side in (-1.0, 1.0):
        app.spawn(Prop(Cylinder(0.025, half), color=WOOD), Transform(position=(side * POST, half, 0.0)))
    app.spawn(Prop(Cylinder(0.012, POST), color=(0.7, 0.7, 0.72)),
              Transform.from_axis_angle((0.0, HANG + 0.03, 0.0), (0.0, 0.0, 1.0), np.pi / 2))
    clips = tuple(app.spawn(Prop(Box((0.01, 0.03, 0.014)), color=(0.25, 0.25, 0.28)),
                            Transform(position=sheet.positions[corner] + (0.0, 0.02, 0.0)))
                  for corner in sheet.side("top_corners"))
    app.insert_resource(Sandbox(entity, sheet, hand, other_hand, blower, clips=clips))
    app.insert_resource(Script())
    app.add_system(read_input, Stage.INPUT)
    app.add_system(play_script, Stage.PRE_STEP, before=ClothSet.SAVE)    # before the guard saves the state
    app.add_system(hang, Stage.PRE_STEP, before=ClothSet.SAVE)
    app.add_system(grip, Stage.PRE_STEP, before=ClothSet.SAVE, after="play_script")
    app.add_reporter(sandbox_report)
    return cloth


def hanging_pin(sheet: Mesh) -> Pin:
    """One Pin over every particle, holding only the top corners: P toggles the others' ``active`` flags."""
    every = np.arange(sheet.vertex_count)
    return Pin(index=every, target=sheet.positions, active=np.isin(every, sheet.side("top_corners")))


def hang(app: App, dt: float) -> None:
    """PRE_STEP: for ``SLIDE`` seconds after the sheet is hung, slide its two top-corner pins toward each other
    (a smoothstep from the flat sheet's corners to ``GAP`` of its width apart): the top edge gets its slack."""
    s = app.resource(Sandbox)
    u = (app.clock.time + dt - s.hung_at) / SLIDE
    if not 0.0 < u <= 1.0 + dt / SLIDE:
        return
    u = min(u, 1.0)
    u = u * u * (3.0 - 2.0 * u)
    pin = app.get(s.cloth, Pin)
    corners = s.sheet.side("top_corners")
    start = s.sheet.positions[corners]
    where = start + u * (GAP - 1.0) * start * np.array([1.0, 0.0, 0.0])      # x toward the middle (x = 0)
    target = pin.target.copy()
    for corner, point in zip(corners, where):
        target[pin.index == corner] = point                               # a torn corner's copies too
    pin.target = target
    for clip, point in zip(s.clips, where):
        app.get(clip, Transform).position = point + (0.0, 0.02, 0.0)


def grip(app: App, dt: float) -> None:
    """PRE_STEP, after the input: a hand holds a patch, not a point. While a Grab holds a particle of the sheet,
    the particles that share a triangle with it (and their copies, if the cloth tears there) are pinned too,
    through the sheet's every-particle Pin, carried rigidly with it; letting go frees them again.

    A Grab holds one particle; all of a pull's force then meets in the few links around it, and tearing
    (50 % for 0.05 s) cut those first, ripping out a speck of two to four triangles that hung in the hand and
    then lay on the floor. Holding the ring around it spreads the pull over the ring's outer links."""
    s = app.resource(Sandbox)
    hands = (s.hand, s.other_hand)
    if not s.grip_held and not any(app.get(hand, Grab).active for hand in hands):
        return                                                            # no hand on the cloth: nothing to do
    cloth, pin = app.get(s.cloth, Cloth), app.get(s.cloth, Pin)
    target, active = pin.target.copy(), pin.active.copy()
    for hand in hands:
        g, key = app.get(hand, Grab), str(hand)
        holding = g.active and g.cloth == s.cloth and g.particle < cloth.particle_count
        if key in s.grip_held and (not holding or s.grip_held[key] != g.particle):
            active[_ring_rows(pin, cloth, s.grip_uv[key])[0]] = False     # let go of the ring
            del s.grip_held[key], s.grip_uv[key], s.grip_offset[key]
        if not holding:
            continue
        if key not in s.grip_held:                                        # take hold of the ring around it
            ring = np.unique(cloth.triangles[(cloth.triangles == g.particle).any(axis=1)])
            free = np.isin(ring, pin.index[~active])                          # not those pinned already (P)
            ring = ring[(ring != g.particle) & free]
            s.grip_held[key] = int(g.particle)
            s.grip_uv[key] = cloth.rest_uv[ring]
            s.grip_offset[key] = cloth.x[ring] - cloth.x[g.particle]
        rows, member = _ring_rows(pin, cloth, s.grip_uv[key])
        active[rows] = True
        target[rows] = g.target + s.grip_offset[key][member]
    if not (np.array_equal(active, pin.active) and np.array_equal(target, pin.target)):
        pin.target = target
        pin.active = active


def _ring_rows(pin: Pin, cloth: Cloth, uv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``pin`` whose particle is one of a hand's ring, found by rest position ``uv`` (k, 2) [m] so a copy
    made by a tear is found with its original; and which ring member each row is."""
    same = (cloth.rest_uv[pin.index][:, None, :] == uv[None, :, :]).all(axis=2)     # (rows, k)
    rows = np.flatnonzero(same.any(axis=1))
    return rows, same[rows].argmax(axis=1)


# --- input: the same actions for a player and for the script -------------------------------------
def read_input(app: App, dt: float) -> None:
    """Stage.INPUT: play the window's mouse and keys (headless, the window has no size and this does nothing)."""
    state = app.resources.get(InputState)
    if state is not None and state.size[0] > 0:
        play(app, state)


def play(app: App, state: InputState) -> None:
    """Turn one frame of input into actions: grab, blow, and the keys T, P, M, 1–5 and R."""
    s = app.resource(Sandbox)
    camera = app.query(Camera)[0][1]
    (mx, my), (w, h) = state.mouse, state.size
    update_grab(app, camera, mx, my, w, h, pressed=1 in state.buttons, grab=s.hand)
    blowing = pygame.K_SPACE in state.keys or pygame.K_b in state.keys
    update_blower(app, camera, mx, my, w, h, blowing=blowing, blower=s.blower)
    pressed = state.keys_pressed
    if pygame.K_t in pressed:
        tear = app.get(s.cloth, Tearable)
        tear.active = not tear.active
    if pygame.K_p in pressed:
        toggle_pin(app, s, *camera.ray(mx, my, w, h))
    if pygame.K_m in pressed:
        model = app.get(s.cloth, Cloth).model
        switch_cloth(app, s, model=MODELS[(MODELS.index(model) + 1) % len(MODELS)])
    for key, name in zip(MATERIAL_KEYS, MATERIALS):
        if key in pressed:
            switch_cloth(app, s, material=name)
    if pygame.K_r in pressed:
        reset(app, s)
    if pygame.K_w in pressed:
        for _, wind in app.query(Wind):
            wind.active = not wind.active


def toggle_pin(app: App, s: Sandbox, origin: np.ndarray, direction: np.ndarray) -> int | None:
    """Pin the particle under the ray where it is, or unpin it if pinned; return it (None if the ray misses)."""
    hit = pick_particle(app, origin, direction, radius=app.get(s.hand, Grab).radius)
    if hit is None or hit[0] != s.cloth:
        return None
    p = hit[1]
    pin, cloth = app.get(s.cloth, Pin), app.get(s.cloth, Cloth)
    k = int(np.flatnonzero(pin.index == p)[0])            # the Pin covers every particle, copies from tears too
    if not pin.active[k]:
        pin.target[k] = cloth.x[p]
    pin.active[k] = not pin.active[k]
    return p


def switch_cloth(app: App, s: Sandbox, *, model: str | None = None, material: str | None = None) -> Cloth:
    """Replace the Cloth by one of another model or fabric, with the same particles, tears, motion and pins."""
    old = app.get(s.cloth, Cloth)
    s.material = material or s.material
    cloth = remade(old, fabric(s.material), model or old.model)
    app.add_component(s.cloth, cloth)                       # on a key press, not per frame
    return cloth


SHEET_ITERATIONS = 2
"""Sweeps per substep of the sandbox's sheet: it can tear, and a cloth that can tear is solved with plain sweeps,
not yarns (``ConstraintTables.plain``), so it takes two: one leaves the idle sheet hanging visibly stretched."""


def fabric(name: str) -> ClothMaterial:
    """The sandbox's fabric ``name``: the preset, woven tight (``SHEET_SHEAR``)."""
    return ClothMaterial.preset(name, shear_compliance=SHEET_SHEAR)


def remade(cloth: Cloth, material: ClothMaterial, model: str) -> Cloth:
    """Return a Cloth with ``cloth``'s topology (tears included), rest shape and motion, in ``material`` and ``model``.

    Cloth.from_mesh's twin for a cloth that may have torn (its mesh is no longer the grid it came from):
    masses scale with the density, as Fuhrmann 2003 eq. 1 does."""
    fresh = Cloth(x=cloth.x.copy(), mass=cloth.mass * (material.density / cloth.material.density),
                  links=cloth.links, link_kind=cloth.link_kind, triangles=cloth.triangles,
                  bend_quads=cloth.bend_quads, rest_x=cloth.rest_x, rest_uv=cloth.rest_uv, material=material,
                  model=model, iterations=cloth.iterations, tethers=cloth.tethers)
    fresh.v[:] = cloth.v
    fresh.x_prev[:] = cloth.x_prev
    fresh.rejected_steps = cloth.rejected_steps
    return fresh


def reset(app: App, s: Sandbox) -> None:
    """Hang a fresh, untorn sheet from its top corners again (they slide together again), in the current model and
    fabric; let go of it."""
    model = app.get(s.cloth, Cloth).model
    app.add_component(s.cloth, Cloth.from_mesh(s.sheet, fabric(s.material), model=model, iterations=SHEET_ITERATIONS))
    app.add_component(s.cloth, hanging_pin(s.sheet))
    tearing = app.get(s.cloth, Tearable).active
    app.add_component(s.cloth, Tearable(tear_strain=TEAR_STRAIN, tear_time=TEAR_TIME,
                                                max_splits=TEAR_SPLITS, active=tearing))
    for entity in (s.hand, s.other_hand):
        app.get(entity, Grab).active = False
    app.get(s.blower, Blower).active = False
    app.resource(Script).start.clear()
    for held in (s.grip_held, s.grip_uv, s.grip_offset):
        held.clear()
    s.hung_at = app.clock.time


# --- the scripted player (headless) ----------------------------------------------------------------
@dataclass
class Script:
    """App resource: the scripted player's input and where each hand took hold [m]."""

    input: InputState = field(default_factory=lambda: InputState(size=VIEW))
    """The virtual mouse and keyboard ``play`` reads."""
    start: dict[str, np.ndarray] = field(default_factory=dict)
    """Position of the particle each hand took [m], by hand name."""


def play_script(app: App, dt: float) -> None:
    """PRE_STEP, headless only: act out the docstring's script through ``play`` and the second hand."""
    window = app.resources.get(InputState)
    if window is not None and window.size[0] > 0:
        return                                             # a player is at the window
    s, script = app.resource(Sandbox), app.resource(Script)
    cloth, camera = app.get(s.cloth, Cloth), app.query(Camera)[0][1]
    t, state = app.clock.time + 1e-9, script.input
    state.begin_frame()
    state.buttons.clear()
    state.keys.clear()
    other = None                                           # the second hand's cursor [px] while it holds
    if DRAG[0] <= t < DRAG[1]:
        state.buttons.add(1)
        state.mouse = _cursor(script, camera, cloth, "corner", s.sheet.index(0, 0), (-0.3, 0.35, 0.0),
                              (t - DRAG[0]) / (DRAG[1] - DRAG[0]))
    elif TEAR[0] <= t < TEAR[1]:
        pull = min((t - TEAR[0]) / PULL, 1.0)
        left, right = s.sheet.index(HANDS[0], HANDS[2]), s.sheet.index(HANDS[1], HANDS[2])
        state.buttons.add(1)
        state.mouse = _cursor(script, camera, cloth, "left", left, (-SPREAD, 0.0, 0.0), pull)
        other = _cursor(script, camera, cloth, "right", right, (SPREAD, 0.0, 0.0), pull)
    elif BLOW[0] <= t < BLOW[1]:
        state.keys.add(pygame.K_SPACE)
        state.mouse = tuple(camera.project(cloth.x.mean(axis=0), *VIEW)[:2])
    if SWITCH <= t < SWITCH + dt:
        state.keys_pressed.add(pygame.K_m)
    update_grab(app, camera, *(other or (0.0, 0.0)), *VIEW, pressed=other is not None, grab=s.other_hand)
    play(app, state)


def _cursor(script: Script, camera: Camera, cloth: Cloth, hand: str, particle: int, offset: tuple, u: float
            ) -> tuple[float, float]:
    """Pixel of the point ``u`` (0…1) of the way from where ``hand`` took ``particle`` to there + ``offset`` [m]."""
    start = script.start.setdefault(hand, cloth.x[particle].copy())
    x, y, _ = camera.project(start + u * np.asarray(offset), *VIEW)
    return float(x), float(y)


# --- report --------------------------------------------------------------------------------------
def sandbox_report(app: App) -> dict:
    """Model, fabric, tearing on/off, connected pieces, particles added by tears, active pins, held particles."""
    s = app.resource(Sandbox)
    cloth, tear, pin = app.get(s.cloth, Cloth), app.get(s.cloth, Tearable), app.get(s.cloth, Pin)
    pieces = len(np.unique(tear.piece)) if tear.piece.shape[0] == cloth.particle_count else 1
    held = [g.held_particle for e in (s.hand, s.other_hand) if (g := app.get(e, Grab)).held_cloth is not None]
    return {"model": cloth.model, "material": s.material, "tearing": tear.active, "pieces": pieces,
            "tears": tear.tears, "pinned": int(pin.active.sum()), "held": held}


FIRST_LAUNCH_COMPILES = 56
"""Functions numba compiles in a first launch's first 10 frames (an empty cache, a window, one process): the
loading view's progress is a fraction of it (kernels the compile-ahead worker compiled count as they load).
Measured with the startup benchmark's ``--kernels`` total (``compiles``).
"""

KERNELS = Path(__file__).resolve().parent / "kernels" / "sandbox.pickle"
"""The kernel list a first launch compiles on a second core (``loom.launch.compile_ahead``; regenerate with
``python -m loom.games --kernel-lists``)."""


def main(argv: Sequence[str] | None = None) -> dict:
    app = App(dt=DT, substeps=SUBSTEPS)
    app.add_plugin(DefaultPlugins)
    app.add_plugin(GLRenderPlugin(*VIEW))
    app.add_plugin(WindowPlugin(title="Loom — sandbox: drag grab · Space blow · T tear · P pin · M model · "
                                      "1–5 fabric · R reset"))
    return run_app(app, argv, arg_parser=parser("python -m loom.games.sandbox"), build=build_scene,
                   compiles=FIRST_LAUNCH_COMPILES, kernels=KERNELS)


if __name__ == "__main__":
    main()
