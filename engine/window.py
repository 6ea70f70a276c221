"""Window and GL context creation: a pygame window (OPENGL | DOUBLEBUF) or a standalone EGL context headless.

Renderers never call pygame or EGL set-up themselves; they ask this module, which knows the platform's
quirks and turns failures into errors that say what to install or set:

    ===========================  ====================================================================
    where                        what works
    ===========================  ====================================================================
    a desktop (X11, Wayland,     ``open_window`` → a real window; ``create_gl_context(window=True)``
    macOS, Windows)              picks up its context
    no display, Linux            ``create_gl_context(window=False)``: standalone EGL (Mesa llvmpipe
                                 on a machine with no GPU; apt: libegl1 libgl1 libegl-mesa0
                                 libgl1-mesa-dri)
    SDL_VIDEODRIVER=offscreen    a pygame OPENGL "window" with no X server (EGL underneath)
    xvfb-run -a python …         a real X11 window on a virtual display (apt: xvfb xauth)
    SDL_VIDEODRIVER=dummy        no OpenGL at all: windows fail; use EGL headless
    ===========================  ====================================================================

Resources defined here (engine/ knows no renderer, so renderers and the window loop meet through them):
``WindowSettings`` (size, title, GL or not, headless), ``Window`` (the open window) and ``FrameCapture``
(how to save a screenshot; the runner's ``--screenshot`` uses it headless).
"""
from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")    # keep `--report json` the only stdout line

GL_REQUIRE = 330
"""OpenGL version every Loom GL renderer needs (GLSL 330 core)."""

_EGL_HINT = ("install the EGL/Mesa libraries (Debian/Ubuntu: apt-get install -y libegl1 libgl1 libegl-mesa0 "
             "libgl1-mesa-dri, or run bash scripts/install.sh)")
_WINDOW_HINT = ("run under a display: set DISPLAY (X11) or WAYLAND_DISPLAY, wrap the command in `xvfb-run -a` "
                "(apt-get install -y xvfb xauth), or set SDL_VIDEODRIVER=offscreen for a window with no "
                "X server (SDL_VIDEODRIVER=dummy has no OpenGL)")


@dataclass(eq=False)
class WindowSettings:
    """App resource: the window (or offscreen image) a renderer wants — size [px], title, GL, headless.

    A renderer plugin inserts one (``replace=False``: a game's own wins); the window loop opens the
    window it describes."""

    width: int = 960
    """Width [px], >= 16."""
    height: int = 640
    """Height [px], >= 16."""
    title: str = "Loom"
    """Window caption."""
    opengl: bool = True
    """True: an OPENGL | DOUBLEBUF window for a GL renderer; False: a plain pygame surface (software)."""
    headless: bool | None = None
    """True: never open a window, render offscreen with EGL; False: require a window; None: a window when
    one is open, else EGL offscreen."""

    def __post_init__(self) -> None:
        for name in ("width", "height"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 16 <= value <= 16384:
                raise ValueError(f"WindowSettings.{name} = {value!r}: must be an integer in 16 … 16384 [px]")
            setattr(self, name, int(value))
        if not isinstance(self.title, str):
            raise ValueError(f"WindowSettings.title = {self.title!r}: must be a string")
        if self.headless not in (None, True, False):
            raise ValueError(f"WindowSettings.headless = {self.headless!r}: must be None, True or False")
        self.opengl = bool(self.opengl)


@dataclass(eq=False)
class Window:
    """App resource: an open pygame window — its surface, size [px] and SDL video driver ("x11", "offscreen" …)."""

    surface: Any
    """The pygame display surface (blit onto it when ``opengl`` is False)."""
    width: int
    """Width [px]."""
    height: int
    """Height [px]."""
    driver: str
    """SDL video driver in use: "x11", "wayland", "offscreen", "windows", "cocoa" …"""
    opengl: bool
    """True when the window has an OpenGL context (``create_gl_context(window=True)`` finds it)."""


@dataclass(eq=False)
class FrameCapture:
    """App resource a renderer inserts: ``save(app, path)`` renders the current state once and writes a PNG;
    ``grab(app)`` renders it once and returns the pixels, (h, w, 3) uint8, top row first.

    ``loom.launch.runner`` uses them for ``--screenshot PATH`` and ``--record PATH``."""

    save: Callable[[Any, str], None]
    grab: Callable[[Any], np.ndarray]


@dataclass
class LoadingView:
    """App resource a renderer inserts: ``draw(app, lines, fraction)`` draws a plain frame with those lines of
    text and, when ``fraction`` (0–1) is not None, a progress bar that full (the window loop shows it while the
    scene is built and kernels compile on a first launch); the loop flips it."""

    draw: Callable[[Any, list[str], float | None], None]


def display_available() -> tuple[bool, str]:
    """Return (True, driver) if a window can open here, else (False, why not and what to do)."""
    driver = os.environ.get("SDL_VIDEODRIVER", "").strip().lower()
    if driver == "dummy":
        return False, f"SDL_VIDEODRIVER=dummy has no OpenGL; {_WINDOW_HINT}"
    if driver:
        return True, driver
    if sys.platform in ("win32", "darwin"):
        return True, sys.platform
    if os.environ.get("WAYLAND_DISPLAY"):
        return True, "wayland"
    if os.environ.get("DISPLAY"):
        return True, "x11"
    return False, f"no DISPLAY or WAYLAND_DISPLAY set; {_WINDOW_HINT}"


def open_window(settings: WindowSettings) -> Window:
    """Open the pygame window ``settings`` describes (an OpenGL 3.3 core context when ``settings.opengl``).

    Raises RuntimeError saying how to get a display when none is available or SDL refuses."""
    ok, why = display_available()
    if not ok:
        raise RuntimeError(f"loom: cannot open a window: {why}")
    import pygame
    try:
        pygame.display.init()
        flags = 0
        if settings.opengl:
            gl = pygame.display.gl_set_attribute
            gl(pygame.GL_CONTEXT_MAJOR_VERSION, 3)
            gl(pygame.GL_CONTEXT_MINOR_VERSION, 3)
            gl(pygame.GL_CONTEXT_PROFILE_MASK, pygame.GL_CONTEXT_PROFILE_CORE)
            gl(pygame.GL_CONTEXT_FORWARD_COMPATIBLE_FLAG, 1)      # macOS only gives core contexts this way
            gl(pygame.GL_DEPTH_SIZE, 24)
            gl(pygame.GL_DOUBLEBUFFER, 1)
            flags = pygame.OPENGL | pygame.DOUBLEBUF
        surface = pygame.display.set_mode((settings.width, settings.height), flags)
        pygame.display.set_caption(settings.title)
    except pygame.error as error:
        pygame.display.quit()
        raise RuntimeError(f"loom: SDL could not open a {settings.width}×{settings.height} "
                           f"{'OpenGL ' if settings.opengl else ''}window ({error}); {_WINDOW_HINT}") from None
    width, height = surface.get_size()
    return Window(surface=surface, width=width, height=height, driver=pygame.display.get_driver(),
                  opengl=settings.opengl)


def close_window() -> None:
    """Close the pygame window (safe to call when none is open)."""
    import pygame
    if pygame.display.get_init():
        pygame.display.quit()


def create_gl_context(*, window: bool) -> Any:
    """Return a moderngl context: the open window's (``window=True``) or a standalone headless one.

    Headless on Linux this is EGL (no X server needed; Mesa llvmpipe without a GPU). Requires OpenGL
    3.3 (``GL_REQUIRE``). Raises RuntimeError naming what to install or set when GL is unavailable."""
    try:
        import moderngl
    except ImportError as error:                      # pragma: no cover - a dependency of loom-cloth
        raise RuntimeError(f"loom: moderngl is not installed ({error}); pip install -e .") from None
    try:
        if window:
            return moderngl.create_context(require=GL_REQUIRE)
        if sys.platform.startswith("linux"):
            return moderngl.create_context(standalone=True, backend="egl", require=GL_REQUIRE)
        return moderngl.create_context(standalone=True, require=GL_REQUIRE)
    except Exception as error:    # moderngl/glcontext raise plain Exceptions for missing libraries
        if window:
            raise RuntimeError(f"loom: no OpenGL {GL_REQUIRE // 100}.{GL_REQUIRE % 100 // 10} context in the "
                               f"window ({error}); {_WINDOW_HINT}") from None
        raise RuntimeError(f"loom: no headless OpenGL {GL_REQUIRE // 100}.{GL_REQUIRE % 100 // 10} context "
                           f"({error}); {_EGL_HINT}") from None


def save_png(path: str | os.PathLike, pixels: np.ndarray) -> None:
    """Write ``pixels`` (h, w, 3) uint8, top row first, to ``path`` as a PNG (no display needed)."""
    rgb = np.ascontiguousarray(pixels)
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
        raise ValueError(f"save_png pixels: shape {rgb.shape} dtype {rgb.dtype}, expected (h, w, 3) uint8")
    import pygame
    image = pygame.image.frombuffer(rgb.tobytes(), (rgb.shape[1], rgb.shape[0]), "RGB")
    target = os.fspath(path)
    folder = os.path.dirname(target) or "."
    if not os.path.isdir(folder):                         # pygame says only "Couldn't open ..." for these
        reason = errno.ENOTDIR if os.path.exists(folder) else errno.ENOENT
        raise OSError(reason, os.strerror(reason), target)
    try:
        pygame.image.save(image, target)
    except pygame.error as exc:                           # unwritable folder, full disk: an OSError naming the path
        raise OSError(errno.EIO, str(exc) or "cannot write the PNG", target) from None
