"""Regenerate the pictures in docs/images/ with the games' own ``--screenshot`` (headless, EGL).

Run from the repository root: ``python docs/gen_images.py [--only NAME ...]``. Every picture is one
frame after ``--frames`` fixed steps (offscreen GL; the platformer's own pygame Surface), 960×640 or smaller:

- ``hanging_sheet``, ``flag``, ``cape``, ``sandbox``, ``platformer``:
  ``python -m loom.games.NAME --headless --frames N --screenshot PATH``
  (the flag with ``--sail``); ``NAME_moments``: every game at several frames (``MOMENTS``), ``NAME_fFFF.png``
  (docs/gallery.md's stills);
- ``drape``: the drape game's own scene (``loom.games.drape.build_scene``, n = 48) with the GL renderer added,
  through the same runner and ``--screenshot`` (the drape game itself has no renderer);
- ``model_NAME``: the hanging sheet scene (``loom.games.hanging_sheet.build_scene``) with ``model=NAME``,
  through the runner's ``--screenshot`` (the hanging-sheet game always uses xpbd);
- ``platformer``: the 2D platformer's own ``--screenshot`` (its pygame Surface, software renderer), frame 240:
  the hero jumping left, his cape flowing, the flag and the banner in their wind zones.

Takes about a minute on a 2-core VM. SDL_VIDEODRIVER defaults to ``offscreen`` here.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMAGES = ROOT / "docs" / "images"
GAMES = {"hanging_sheet": 240, "flag": 240, "cape": 150, "sandbox": 270, "platformer": 240}
"""Game → frames simulated before the screenshot."""
GAME_OPTIONS = {"flag": ("--sail",)}
"""Game → extra command-line options of its screenshot (the flag picture shows both of Provot's wind scenes)."""
MODELS = ("xpbd", "verlet", "mass_spring", "implicit")
MOMENTS = {"cape": (60, 180, 300), "flag": (30, 240), "hanging_sheet": (30, 150), "sandbox": (60, 220),
           "platformer": (60, 150), "drape": (40, 180)}
"""Game → frames of its ``NAME_fFFF.png`` pictures at several moments (docs/guide-cape.md, docs/guide-flag.md)."""


def game_screenshot(name: str, frames: int, path: Path | None = None) -> None:
    """Run ``python -m loom.games.NAME --headless --frames N --screenshot docs/images/NAME.png`` (or ``path``)."""
    cmd = [sys.executable, "-m", f"games.{name}", *GAME_OPTIONS.get(name, ()), "--headless", "--frames", str(frames),
           "--screenshot", str(path or IMAGES / f"{name}.png")]
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)


def scene_screenshot(build, path: Path, frames: int, size: tuple[int, int] = (960, 640), substeps: int = 16) -> None:
    """Build a scene with DefaultPlugins and the GL renderer, then run the runner's ``--screenshot``."""
    from loom.engine import App
    from loom.launch.runner import run_app
    from loom.systems import DefaultPlugins
    from loom.systems.render.gl import GLRenderPlugin, release_renderer

    app = App(dt=1 / 60, substeps=substeps)
    app.add_plugin(DefaultPlugins)
    app.add_plugin(GLRenderPlugin(*size, headless=True))
    build(app)
    with open(os.devnull, "w") as quiet:
        stdout, sys.stdout = sys.stdout, quiet
        try:
            run_app(app, ["--headless", "--frames", str(frames), "--screenshot", str(path)])
        finally:
            sys.stdout = stdout
    release_renderer(app)
    app.close()


def drape_screenshot(frames: int = 180, path: Path | None = None) -> None:
    from loom.components import Camera
    from loom.games import drape

    def build(app):
        drape.build_scene(app, n=48)
        app.spawn(Camera(target=(0.0, 0.55, 0.0), distance=2.6, yaw=0.5, pitch=0.35))
    scene_screenshot(build, path or IMAGES / "drape.png", frames=frames, substeps=drape.SUBSTEPS)


def model_screenshot(model: str) -> None:
    """The hanging sheet (32×32 cotton, two corners pinned) stepped by ``model``, after 2 s."""
    from loom.components import Camera, Cloth, Pin
    from loom.engine import mesh

    def build(app):
        sheet = mesh.grid(32, 32, 1.0, 1.0, center=(0.0, 1.0, 0.0), plane="xz")
        app.spawn(Cloth.from_mesh(sheet, "cotton", model=model), Pin.corners(sheet, "top"))
        app.spawn(Camera(target=(0.0, 0.55, -0.3), distance=2.4, yaw=0.35, pitch=0.2))
    scene_screenshot(build, IMAGES / f"model_{model}.png", frames=120, size=(480, 320))


def main(argv: list[str] | None = None) -> None:
    jobs = {name: (lambda n=name, f=frames: game_screenshot(n, f)) for name, frames in GAMES.items()}
    jobs["drape"] = drape_screenshot
    for name, moments in MOMENTS.items():
        shoot = drape_screenshot if name == "drape" else (lambda f, path, n=name: game_screenshot(n, f, path))
        jobs[f"{name}_moments"] = (lambda n=name, ms=moments, shoot=shoot: [shoot(f, IMAGES / f"{n}_f{f:03d}.png")
                                                                            for f in ms])
    jobs.update({f"model_{m}": (lambda m=m: model_screenshot(m)) for m in MODELS})
    p = argparse.ArgumentParser(prog="python docs/gen_images.py", description=__doc__.splitlines()[0])
    p.add_argument("--only", nargs="+", choices=sorted(jobs), help="regenerate only these pictures")
    args = p.parse_args(argv)
    os.environ.setdefault("SDL_VIDEODRIVER", "offscreen")
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    IMAGES.mkdir(parents=True, exist_ok=True)
    for name in args.only or jobs:
        jobs[name]()
        print(f"done: {name}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
