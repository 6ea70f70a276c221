"""Moving pictures of a run, written as it goes: an animated GIF (Pillow) or an MP4 (imageio, bundled ffmpeg).

Every game's ``--record out.gif`` (``loom.launch.runner``) grabs a frame from the game's own renderer every
few fixed steps and hands it to a writer as it goes, so a long run never holds its frames in memory::

    with GifWriter("run.gif", fps=20, scale=0.5) as gif:       # 20 frames a second, half size
        for _ in range(100):
            app.step(3)                                        # 3 steps of 1/60 s = one frame of 1/20 s
            gif.add(capture.grab(app))                         # (h, w, 3) uint8, top row first

Both formats need Loom's optional ``record`` extra (``pip install "loom-cloth[record]"``: Pillow, imageio and
imageio-ffmpeg, whose wheel carries an ffmpeg program); without it a writer raises ``RecordExtraMissing`` and
``record_problem(path)`` says so before a game's first step.

The GIF (GIF89a, looping forever: the NETSCAPE2.0 extension) is streamed frame by frame through Pillow's GIF
encoder (``PIL.GifImagePlugin.getheader`` / ``getdata``: ``Image.save(save_all=True)``, and imageio's GIF
writer on top of it, hold every frame until the file closes):

- one global palette of 256 entries: ``ADAPTIVE_COLOURS`` chosen from the first frame by Pillow's median cut
  (cloth shading is smooth gradients of a few hues: an adaptive palette keeps them smooth where a fixed cube
  bands them), the 27 colours of ``LATTICE`` for colours that appear later, and one transparent entry;
- each pixel → its nearest palette entry (Pillow, no dithering);
- per frame, only the rectangle whose palette indices changed since the previous frame, its unchanged pixels
  transparent (a frame with nothing new is one transparent pixel: ~30 bytes).

Frame delays are whole centiseconds: a rate whose period is not one (30 fps: 3.33 cs) gets delays of
3, 3, 4 … cs so that the total time stays right. Browsers show delays under 2 cs as 10 cs, so
``MAX_FPS`` is 50. ``.mp4`` is H.264 (yuv420p) through imageio's ffmpeg plugin; ``record_problem(path)``
says at once when a path cannot be recorded (unknown extension, the record extra missing).
"""
from __future__ import annotations

import errno
import importlib.util
import math
import os
from collections.abc import Callable
from typing import Any

import numpy as np

DEFAULT_FPS = 20.0
"""Frames a second [1/s] a recording keeps by default: one frame every 3 steps of a 60 Hz game, 5 cs a frame."""
MAX_FPS = 50.0
"""Highest rate [1/s]: GIF delays are whole centiseconds, and browsers slow delays under 2 cs to 10 cs."""
EXTENSIONS = (".gif", ".mp4")
"""File name endings a recording can have: .gif (Pillow) or .mp4 (imageio and imageio-ffmpeg)."""
INSTALL = 'pip install "loom-cloth[record]"'
"""The command that installs what recording needs (Loom's ``record`` extra)."""
NEEDS = {".gif": ("PIL",), ".mp4": ("imageio", "imageio_ffmpeg")}
"""Modules each extension is written with (all in the ``record`` extra)."""
ADAPTIVE_COLOURS = 228
"""Palette entries chosen from the first frame; with the 27 lattice colours and the transparent one: 256."""
LATTICE = np.array([(r, g, b) for r in (0, 128, 255) for g in (0, 128, 255) for b in (0, 128, 255)], np.uint8)
"""27 colours over the RGB cube in the palette: the nearest for colours that appear after the first frame."""


class RecordExtraMissing(RuntimeError):
    """Recording needs Loom's optional ``record`` extra (Pillow, imageio, imageio-ffmpeg) and it is not installed;
    the message names the missing modules and ``pip install "loom-cloth[record]"``."""


# --- argument checks -------------------------------------------------------------------------------------------------
def _check_fps(fps: Any, name: str) -> float:
    """``fps`` as a float if it is a finite rate in (0, MAX_FPS] [1/s]; else ValueError naming ``name``."""
    if isinstance(fps, bool) or not isinstance(fps, (int, float, np.integer, np.floating)) \
            or not math.isfinite(fps) or not 0.0 < fps <= MAX_FPS:
        raise ValueError(f"{name} = {fps!r}: must be a number of frames per second in (0, {MAX_FPS:g}] "
                         "(GIF delays are whole centiseconds; browsers slow delays under 2 cs)")
    return float(fps)


def _check_scale(scale: Any, name: str) -> float:
    """``scale`` as a float if it is a finite factor in (0, 1]; else ValueError naming ``name``."""
    if isinstance(scale, bool) or not isinstance(scale, (int, float, np.integer, np.floating)) \
            or not math.isfinite(scale) or not 0.0 < scale <= 1.0:
        raise ValueError(f"{name} = {scale!r}: must be a size factor in (0, 1] (0.5: half the width and height)")
    return float(scale)


def _check_frame(frame: Any, name: str) -> np.ndarray:
    """``frame`` as a C-contiguous (h, w, 3) uint8 array; else ValueError naming ``name``."""
    if not isinstance(frame, np.ndarray) or frame.ndim != 3 or frame.shape[2] != 3 or frame.dtype != np.uint8 \
            or frame.shape[0] < 1 or frame.shape[1] < 1:
        shape = getattr(frame, "shape", None)
        dtype = getattr(frame, "dtype", type(frame).__name__)
        raise ValueError(f"{name}: shape {shape} dtype {dtype}, expected (h, w, 3) uint8 pixels, top row first")
    return np.ascontiguousarray(frame)


def _missing(ext: str) -> list[str]:
    """The modules of ``NEEDS[ext]`` that cannot be imported here (found without importing them)."""
    return [name for name in NEEDS.get(ext, ()) if importlib.util.find_spec(name) is None]


def _extra_missing(ext: str, missing: list[str]) -> str:
    """The one line saying that ``ext`` needs the record extra, naming what is missing and the install command."""
    return (f"{ext} needs {', '.join(missing)}, not installed here: {INSTALL} (Loom's record extra: Pillow, "
            "imageio, imageio-ffmpeg)")


def _require(ext: str, name: str) -> None:
    """Raise ``RecordExtraMissing`` naming ``name`` (a writer) when a module ``ext`` needs is not installed."""
    missing = _missing(ext)
    if missing:
        raise RecordExtraMissing(f"{name}: {_extra_missing(ext, missing)}")


def record_problem(path: str | os.PathLike) -> str | None:
    """Why ``path`` cannot be recorded here (an unknown extension; the ``record`` extra, or for .mp4 its ffmpeg
    program, missing), or None. Cheap: it imports nothing unless the extension is .mp4 and the extra is there."""
    ext = os.path.splitext(os.fspath(path))[1].lower()
    if ext not in EXTENSIONS:
        what = f"unknown extension {ext!r}" if ext else "no extension"
        return f"{what}: a recording is {' or '.join(EXTENSIONS)} (an animated GIF, or an MP4 through ffmpeg)"
    missing = _missing(ext)
    if missing:
        return _extra_missing(ext, missing)
    if ext == ".mp4":
        try:
            _ffmpeg_program()
        except OSError as error:
            return error.strerror
    return None


def _ffmpeg_program() -> str:
    """The ffmpeg program imageio-ffmpeg runs (its wheel's own, or ``IMAGEIO_FFMPEG_EXE``); OSError if none."""
    import imageio_ffmpeg
    try:
        return imageio_ffmpeg.get_ffmpeg_exe()
    except RuntimeError as error:                     # a platform its wheels carry no program for
        raise OSError(errno.ENOENT, f".mp4 needs an ffmpeg program and imageio-ffmpeg found none ({error}); "
                      "set IMAGEIO_FFMPEG_EXE to one, or record a .gif") from None


def steps_per_frame(dt: float, fps: float) -> int:
    """Fixed steps of ``dt`` [s] between recorded frames for about ``fps`` [1/s]: the nearest whole number, >= 1,
    and enough that the rate stays <= MAX_FPS.

    The recording's true rate is then 1 / (steps × dt): 60 Hz steps give 30, 20, 15, 12, 10 … fps."""
    fps = _check_fps(fps, "fps")
    if isinstance(dt, bool) or not isinstance(dt, (int, float)) or not math.isfinite(dt) or dt <= 0.0:
        raise ValueError(f"dt = {dt!r}: must be a finite step > 0 [s]")
    fewest = math.ceil(1.0 / (MAX_FPS * dt) - 1e-9)
    return max(1, fewest, round(1.0 / (fps * dt)))


# --- downscaling ------------------------------------------------------------------------------------------------------
def scaled_size(width: int, height: int, scale: float) -> tuple[int, int]:
    """(width, height) [px] of a ``width`` × ``height`` frame scaled by ``scale``, each at least 1 px."""
    return max(1, round(width * scale)), max(1, round(height * scale))


def downscale(frame: np.ndarray, scale: float) -> np.ndarray:
    """``frame`` (h, w, 3) uint8 shrunk by ``scale`` in (0, 1] with a box filter (each output pixel the mean of
    the input area it covers, fractional edges weighted); scale 1 returns ``frame`` itself."""
    frame = _check_frame(frame, "downscale frame")
    scale = _check_scale(scale, "downscale scale")
    h, w = frame.shape[:2]
    ow, oh = scaled_size(w, h, scale)
    if (oh, ow) == (h, w):
        return frame
    if h % oh == 0 and w % ow == 0:                                   # whole blocks (0.5, 0.25 …): integer sums
        fy, fx = h // oh, w // ow
        total = np.zeros((oh, ow, 3), np.uint32)
        for dy in range(fy):                                          # fy × fx strided views, not per pixel
            for dx in range(fx):
                total += frame[dy::fy, dx::fx]
        return ((total + fy * fx // 2) // (fy * fx)).astype(np.uint8)
    out = _area_mean(_area_mean(frame.astype(np.float64), oh, 0), ow, 1)
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def _area_mean(values: np.ndarray, size: int, axis: int) -> np.ndarray:
    """Box-filter ``values`` along ``axis`` down to ``size`` samples: the exact mean over each output cell."""
    n = values.shape[axis]
    total = np.concatenate([np.zeros_like(np.take(values, [0], axis=axis)), np.cumsum(values, axis=axis)], axis=axis)
    edges = np.arange(size + 1) * (n / size)                          # output cell edges in input pixels
    i = np.minimum(np.floor(edges).astype(np.int64), n - 1)
    frac = edges - i
    shape = [1] * values.ndim
    shape[axis] = size + 1
    at = np.take(total, i, axis=axis) + frac.reshape(shape) * np.take(values, i, axis=axis)   # integral up to edge
    return np.diff(at, axis=axis) * (size / n)


# --- writers ------------------------------------------------------------------------------------------------------------
class VideoWriter:
    """What both writers (``GifWriter``, ``FfmpegWriter``) share: the rate [1/s], the downscaling, ``add(frame)``,
    the frame count, ``close()`` and the ``with`` block that calls it."""

    def __init__(self, path: str | os.PathLike, fps: float, scale: float) -> None:
        self.path = os.fspath(path)
        self.fps = _check_fps(fps, f"{type(self).__name__} fps")
        """Frames a second [1/s]."""
        self.scale = _check_scale(scale, f"{type(self).__name__} scale")
        """Size factor applied to every frame, in (0, 1]."""
        self.frames = 0
        """Frame periods written so far (a frame added with ``frames=3`` counts 3)."""
        self.size: tuple[int, int] | None = None
        """(width, height) [px] of the written frames, after scaling; None before the first."""
        self.closed = False

    def add(self, frame: np.ndarray | Any, frames: int = 1) -> None:
        """Append ``frame`` — (h, w, 3) uint8 pixels, top row first, or a pygame Surface — shown for ``frames``
        frame periods (1 / fps each).

        Every frame must have the first one's size. Raises ValueError for a bad frame, RuntimeError after close."""
        if self.closed:
            raise RuntimeError(f"{type(self).__name__}.add after close(): {self.path} is finished")
        if isinstance(frames, bool) or not isinstance(frames, (int, np.integer)) or frames < 1:
            raise ValueError(f"{type(self).__name__}.add frames = {frames!r}: must be a whole number >= 1")
        if not isinstance(frame, np.ndarray) and hasattr(frame, "get_size") and hasattr(frame, "get_bitsize"):
            frame = surface_pixels(frame)                              # a game's own pygame Surface
        frame = downscale(_check_frame(frame, f"{type(self).__name__}.add frame"), self.scale)
        size = (frame.shape[1], frame.shape[0])
        if self.size is None:
            self.size = size
        elif size != self.size:
            raise ValueError(f"{type(self).__name__}.add frame: {size[0]}×{size[1]} px after scaling, but the "
                             f"recording is {self.size[0]}×{self.size[1]} px (every frame must have the same size)")
        self._write(frame, int(frames))
        self.frames += int(frames)

    def _write(self, frame: np.ndarray, frames: int) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Finish the file (safe to call twice)."""
        raise NotImplementedError

    def __enter__(self) -> VideoWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class GifWriter(VideoWriter):
    """An animated GIF written frame by frame with Pillow: ``add(frame)`` appends one, ``close()`` finishes it.

    ``fps`` [1/s] in (0, 50]; ``scale`` in (0, 1] shrinks every frame (box filter); ``loop`` 0 plays forever,
    else that many times. Each frame is written when it is added (only the previous frame's palette indices are
    kept). Closing with no frame added removes the file. Raises ``RecordExtraMissing`` without Pillow; file
    errors are OSErrors naming the path."""

    def __init__(self, path: str | os.PathLike, fps: float = DEFAULT_FPS, scale: float = 1.0, *,
                 loop: int = 0) -> None:
        super().__init__(path, fps, scale)
        if isinstance(loop, bool) or not isinstance(loop, (int, np.integer)) or not 0 <= loop <= 65535:
            raise ValueError(f"GifWriter loop = {loop!r}: must be a whole number in 0 … 65535 (0: forever)")
        _require(".gif", "GifWriter")
        self.loop = int(loop)
        self.palette: np.ndarray | None = None
        """(m, 3) uint8 once the first frame came: its adaptive colours, then the lattice; index m is transparent."""
        self._paletted: Any = None                         # a Pillow "P" image holding the palette
        self._previous: np.ndarray | None = None           # palette indices of what is on screen now
        self._periods = 0                                  # frame periods written: for the delays
        self._file = open(self.path, "wb")                 # noqa: SIM115  (closed by close())

    def _delay(self, frames: int) -> int:
        """Delay [cs] of the next frame shown for ``frames`` periods: rounded so the running total stays right."""
        start = round(100 * self._periods / self.fps)
        self._periods += frames
        return max(1, min(65535, round(100 * self._periods / self.fps) - start))

    def _write(self, frame: np.ndarray, frames: int) -> None:
        """Map ``frame`` to the palette, write the rectangle that changed (unchanged pixels transparent)."""
        from PIL import GifImagePlugin, Image
        image = Image.fromarray(frame)
        if self.palette is None:                                            # the first frame: choose the palette
            adaptive = image.quantize(colors=ADAPTIVE_COLOURS, method=Image.Quantize.MEDIANCUT,
                                      dither=Image.Dither.NONE)
            self.palette = np.concatenate([np.asarray(adaptive.getpalette(), np.uint8).reshape(-1, 3), LATTICE])
            self._paletted = Image.new("P", (1, 1))
            self._paletted.putpalette(self.palette.tobytes())
        index = np.asarray(image.quantize(palette=self._paletted, dither=Image.Dither.NONE))
        previous, self._previous = self._previous, index
        transparent = self.palette.shape[0]
        params: dict[str, Any] = {"duration": 10 * self._delay(frames), "disposal": 1}   # [ms]; keep what is under
        if previous is None:                                                # the first frame: all of it
            x0, y0, patch = 0, 0, index
        else:
            changed = index != previous
            rows, cols = np.flatnonzero(changed.any(axis=1)), np.flatnonzero(changed.any(axis=0))
            if rows.size == 0:                                              # nothing new: one transparent pixel
                y0, y1, x0, x1 = 0, 1, 0, 1
            else:
                y0, y1, x0, x1 = int(rows[0]), int(rows[-1]) + 1, int(cols[0]), int(cols[-1]) + 1
            patch = np.where(changed[y0:y1, x0:x1], index[y0:y1, x0:x1], np.uint8(transparent))
            params["transparency"] = transparent
        paletted = Image.frombytes("P", (patch.shape[1], patch.shape[0]), np.ascontiguousarray(patch).tobytes())
        paletted.putpalette(self.palette.tobytes() + b"\0\0\0")
        if previous is None:
            header, _ = GifImagePlugin.getheader(paletted, info={"loop": self.loop})
            self._file.write(b"".join(header))
        self._file.write(b"".join(GifImagePlugin.getdata(paletted, (x0, y0), **params)))

    def close(self) -> None:
        """Write the trailer and close the file (safe to call twice); with no frame written, remove it."""
        if self.closed:
            return
        self.closed = True
        try:
            if self._previous is not None:
                self._file.write(b"\x3b")
        finally:
            self._file.close()
        if self._previous is None:                                          # nothing recorded
            os.remove(self.path)


class FfmpegWriter(VideoWriter):
    """An MP4 (H.264, yuv420p) written as it goes by imageio's ffmpeg plugin, with the ffmpeg program that the
    imageio-ffmpeg wheel carries (no system ffmpeg needed).

    ``fps`` [1/s] in (0, 50], ``scale`` in (0, 1]; ffmpeg starts on the first frame (odd sizes are padded by one
    pixel). Raises ``RecordExtraMissing`` without imageio or imageio-ffmpeg, OSError naming the path when ffmpeg
    is missing or fails."""

    def __init__(self, path: str | os.PathLike, fps: float = DEFAULT_FPS, scale: float = 1.0) -> None:
        super().__init__(path, fps, scale)
        _require(".mp4", "FfmpegWriter")
        try:
            self.program = _ffmpeg_program()
            """The ffmpeg program that encodes the file."""
        except OSError as error:
            raise OSError(error.errno, error.strerror, self.path) from None
        self._writer: Any = None

    def _write(self, frame: np.ndarray, frames: int) -> None:
        import imageio.v2 as imageio
        try:
            if self._writer is None:
                self._writer = imageio.get_writer(
                    self.path, format="FFMPEG", mode="I", fps=self.fps, codec="libx264", pixelformat="yuv420p",
                    quality=None, macro_block_size=1, ffmpeg_log_level="error",
                    output_params=["-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2", "-movflags", "+faststart"])
            for _ in range(frames):
                self._writer.append_data(frame)
        except (OSError, RuntimeError) as error:
            self._fail(error)

    def _fail(self, error: Exception) -> None:
        """Raise OSError naming the path with ffmpeg's message (its last line)."""
        lines = str(error).strip().splitlines()
        raise OSError(errno.EIO, f"ffmpeg failed: {lines[-1] if lines else type(error).__name__}",
                      self.path) from error

    def close(self) -> None:
        """Let ffmpeg finish the file (OSError with its message if it failed)."""
        if self.closed:
            return
        self.closed = True
        writer, self._writer = self._writer, None
        if writer is not None:
            try:
                writer.close()
            except (OSError, RuntimeError) as error:
                self._fail(error)


def open_video(path: str | os.PathLike, fps: float = DEFAULT_FPS, scale: float = 1.0) -> GifWriter | FfmpegWriter:
    """A writer for ``path`` by its extension: ``GifWriter`` for .gif, ``FfmpegWriter`` for .mp4; ValueError
    naming the path for another extension (``record_problem``), ``RecordExtraMissing`` without the record extra."""
    ext = os.path.splitext(os.fspath(path))[1].lower()
    if ext == ".gif":
        return GifWriter(path, fps, scale)
    if ext == ".mp4":
        return FfmpegWriter(path, fps, scale)
    raise ValueError(f"open_video path = {os.fspath(path)!r}: {record_problem(path)}")


class Recorder:
    """``--record`` for a loop that keeps its own clock: a frame every ``steps_per_frame(dt, fps)`` steps of
    simulated time, whatever the real frame rate.

    Each rendered frame, ``due(time)`` says how many recording frames are owed at simulated ``time`` [s];
    when it is not 0, ``add(pixels, owed)`` writes the frame on screen for that many periods. ``fps`` [1/s]
    is rounded to a whole number of steps of ``dt`` [s] (``fps`` then holds the rate in use)."""

    def __init__(self, path: str | os.PathLike, fps: float = DEFAULT_FPS, scale: float = 1.0, *,
                 dt: float = 1 / 60) -> None:
        fps = _check_fps(fps, "Recorder fps")
        if isinstance(dt, bool) or not isinstance(dt, (int, float)) or not math.isfinite(dt) or not 0.0 < dt <= 1.0:
            raise ValueError(f"Recorder dt = {dt!r}: must be the game's fixed step, a finite time in (0, 1] [s]")
        self.steps = steps_per_frame(dt, fps)
        """Fixed steps between frames."""
        self.period = self.steps * dt
        """Simulated time between frames [s]."""
        self.fps = 1.0 / self.period
        """Frames a second [1/s] of the recording."""
        self.video = open_video(path, self.fps, scale)
        self._owed = 0

    @property
    def frames(self) -> int:
        """Frame periods recorded so far."""
        return self.video.frames

    def due(self, time: float) -> int:
        """Frames owed at simulated ``time`` [s] since the last ``due`` (0, 1, or more after a slow frame)."""
        owed = math.floor(time / self.period + 1e-6)
        count, self._owed = max(0, owed - self._owed), max(owed, self._owed)
        return count

    def add(self, frame: np.ndarray | Any, frames: int = 1) -> None:
        """Write ``frame`` ((h, w, 3) uint8, top row first, or a pygame Surface) for ``frames`` periods."""
        self.video.add(frame, frames)

    def record(self, time: float, grab: Callable[[], np.ndarray | Any]) -> int:
        """``add(grab(), due(time))`` when a frame is owed; return the frames owed (grab is called only then)."""
        owed = self.due(time)
        if owed:
            self.add(grab(), owed)
        return owed

    def close(self, last: Callable[[], np.ndarray | Any] | None = None) -> None:
        """Finish the file; with nothing recorded yet, first add ``last()`` (the state at the end) if given."""
        try:
            if self.video.frames == 0 and last is not None and not self.video.closed:
                self.add(last())
        finally:
            self.video.close()

    def summary(self) -> str:
        """One line for stderr: frames, rate, size and where."""
        width, height = self.video.size or (0, 0)
        size = os.path.getsize(self.video.path) if os.path.exists(self.video.path) else 0
        return (f"loom: recorded {self.video.frames} frames at {self.fps:.4g} fps, {width}×{height} px, "
                f"{size / 1e6:.2f} MB: {self.video.path}")

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def surface_pixels(surface: Any) -> np.ndarray:
    """A pygame Surface's pixels as (h, w, 3) uint8, top row first (a copy): what a software game records."""
    import pygame
    return np.ascontiguousarray(pygame.surfarray.array3d(surface).transpose(1, 0, 2))
