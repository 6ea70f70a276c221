"""Moving pictures of a run: an animated GIF writer (written here, no imaging library) and an MP4 pipe to ffmpeg.

Every game's ``--record out.gif`` (``loom.engine.runner``) grabs a frame from the game's own renderer every
few fixed steps and hands it to a writer as it goes, so a long run never holds its frames in memory::

    with GifWriter("run.gif", fps=20, scale=0.5) as gif:       # 20 frames a second, half size
        for _ in range(100):
            app.step(3)                                        # 3 steps of 1/60 s = one frame of 1/20 s
            gif.add(capture.grab(app))                         # (h, w, 3) uint8, top row first

The GIF (GIF89a, looping forever: the NETSCAPE2.0 extension):

- one global palette of 256 entries: ``ADAPTIVE_COLOURS`` chosen from the first frame(s) by a variance
  median cut (split the box of colours with the largest squared error where the two halves' error is
  least) refined by k-means, plus a 3×3×3 lattice over the RGB cube for colours that appear later, and
  one transparent entry. Cloth shading is smooth gradients of a few hues: an adaptive palette keeps them
  smooth where a fixed 3-3-2 cube bands them;
- pixel → palette index through a 32×32×32 lookup table (the nearest entry to each cell's centre);
- per frame, only the rectangle that changed since the previous one, with its unchanged pixels
  transparent when that compresses smaller (a frame with nothing new is one transparent pixel: ~30 bytes);
- LZW in a numba kernel (12-bit codes, a clear code when the 4096-entry table is full).

Frame delays are whole centiseconds: a rate whose period is not one (30 fps: 3.33 cs) gets delays of
3, 3, 4 … cs so that the total time stays right. Browsers show delays under 2 cs as 10 cs, so
``MAX_FPS`` is 50. ``.mp4`` pipes raw RGB frames to the ``ffmpeg`` program (H.264, yuv420p) when it is on
PATH; ``record_problem(path)`` says at once when a path cannot be recorded (unknown extension, no ffmpeg).
"""
from __future__ import annotations

import errno
import heapq
import math
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from typing import Any

import numba
import numpy as np

DEFAULT_FPS = 20.0
"""Frames a second [1/s] a recording keeps by default: one frame every 3 steps of a 60 Hz game, 5 cs a frame."""
MAX_FPS = 50.0
"""Highest rate [1/s]: GIF delays are whole centiseconds, and browsers slow delays under 2 cs to 10 cs."""
EXTENSIONS = (".gif", ".mp4")
"""File name endings a recording can have: .gif (written here) or .mp4 (ffmpeg)."""
ADAPTIVE_COLOURS = 228
"""Palette entries chosen from the frames; with the 27 lattice colours and the transparent one: 256."""
TRANSPARENT = 255
"""Palette index of the transparent entry (pixels unchanged since the previous frame)."""
LUT_BITS = 5
"""Bits per channel of the pixel → palette index lookup table: 32×32×32 cells, each 8 levels wide."""
_LATTICE = np.array([(r, g, b) for r in (0, 128, 255) for g in (0, 128, 255) for b in (0, 128, 255)], np.float64)


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


def record_problem(path: str | os.PathLike) -> str | None:
    """Why ``path`` cannot be recorded here (an unknown extension; .mp4 with no ffmpeg on PATH), or None."""
    ext = os.path.splitext(os.fspath(path))[1].lower()
    if ext not in EXTENSIONS:
        what = f"unknown extension {ext!r}" if ext else "no extension"
        return f"{what}: a recording is {' or '.join(EXTENSIONS)} (an animated GIF, or an MP4 through ffmpeg)"
    if ext == ".mp4" and shutil.which("ffmpeg") is None:
        return ".mp4 needs the ffmpeg program on PATH and there is none: install ffmpeg, or record a .gif"
    return None


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


# --- palette ----------------------------------------------------------------------------------------------------------
def build_palette(pixels: np.ndarray, colours: int = ADAPTIVE_COLOURS) -> np.ndarray:
    """Choose up to ``colours`` RGB entries for ``pixels`` (..., 3) uint8: variance median cut, then k-means.

    Returns (m, 3) uint8 with m <= colours (the distinct colours themselves when there are no more)."""
    rgb = np.asarray(pixels, np.uint8).reshape(-1, 3)
    if rgb.shape[0] > 262_144:                                        # a sample is enough for the palette
        rgb = rgb[:: -(-rgb.shape[0] // 262_144)]
    packed = (rgb[:, 0].astype(np.int32) << 16) | (rgb[:, 1].astype(np.int32) << 8) | rgb[:, 2]
    unique, counts = np.unique(packed, return_counts=True)
    cols = np.stack([(unique >> 16) & 255, (unique >> 8) & 255, unique & 255], axis=1).astype(np.float64)
    weights = counts.astype(np.float64)
    if cols.shape[0] <= colours:
        return cols.astype(np.uint8)
    centres = _median_cut(cols, weights, colours)
    for _ in range(3):                                                # Lloyd's iterations, weighted by count
        centres = _kmeans_step(cols, weights, centres)
    return np.clip(np.rint(centres), 0, 255).astype(np.uint8)


def _box(cols: np.ndarray, weights: np.ndarray, members: np.ndarray) -> tuple[float, int, np.ndarray]:
    """(-squared error, id, members) of a box: the heap entry of the median cut."""
    c, w = cols[members], weights[members]
    mean = (w[:, None] * c).sum(axis=0) / w.sum()
    return -float((w[:, None] * (c - mean) ** 2).sum()), int(members[0]), members


def _median_cut(cols: np.ndarray, weights: np.ndarray, colours: int) -> np.ndarray:
    """Split boxes of distinct colours until there are ``colours``: always the box of largest weighted squared
    error, across its axis of largest error, where the two halves' summed error is least; return the means."""
    heap = [_box(cols, weights, np.arange(cols.shape[0]))]
    done = []
    while heap and len(heap) + len(done) < colours:
        error, _, members = heapq.heappop(heap)
        if members.size < 2 or error >= 0.0:
            done.append(members)
            continue
        c, w = cols[members], weights[members]
        mean = (w[:, None] * c).sum(axis=0) / w.sum()
        axis = int(np.argmax((w[:, None] * (c - mean) ** 2).sum(axis=0)))
        order = np.argsort(c[:, axis], kind="stable")
        c, w, members = c[order], w[order], members[order]
        cw = np.cumsum(w)[:-1]                                        # split after k: left = [0, k]
        s1 = np.cumsum(w[:, None] * c, axis=0)[:-1]
        s2 = np.cumsum(w[:, None] * c * c, axis=0)[:-1]
        t1, t2, tw = (w[:, None] * c).sum(axis=0), (w[:, None] * c * c).sum(axis=0), w.sum()
        left = (s2 - s1 * s1 / cw[:, None]).sum(axis=1)
        right = ((t2 - s2) - (t1 - s1) ** 2 / (tw - cw)[:, None]).sum(axis=1)
        k = int(np.argmin(left + right)) + 1
        for half in (members[:k], members[k:]):
            heapq.heappush(heap, _box(cols, weights, half))
    boxes = done + [members for _, _, members in heap]
    return np.array([(weights[b, None] * cols[b]).sum(axis=0) / weights[b].sum() for b in boxes])


@numba.njit(cache=True)
def _nearest(points, palette):
    """Index of the nearest row of ``palette`` (m, 3) float64 for each row of ``points`` (n, 3) float64."""
    n, m = points.shape[0], palette.shape[0]
    out = np.empty(n, np.int64)
    for i in range(n):
        best, best_d = 0, np.inf
        for j in range(m):
            d0 = points[i, 0] - palette[j, 0]
            d1 = points[i, 1] - palette[j, 1]
            d2 = points[i, 2] - palette[j, 2]
            d = d0 * d0 + d1 * d1 + d2 * d2
            if d < best_d:
                best, best_d = j, d
        out[i] = best
    return out


def _kmeans_step(cols: np.ndarray, weights: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """One Lloyd iteration: each centre moves to the weighted mean of the colours nearest to it (kept if none)."""
    label = _nearest(cols, centres)
    total = np.bincount(label, weights, minlength=centres.shape[0])
    moved = centres.copy()
    for axis in range(3):
        sums = np.bincount(label, weights * cols[:, axis], minlength=centres.shape[0])
        moved[:, axis] = np.where(total > 0, sums / np.maximum(total, 1e-300), centres[:, axis])
    return moved


def palette_lut(palette: np.ndarray) -> np.ndarray:
    """The 32×32×32 lookup table, flattened (r5·1024 + g5·32 + b5 → index): each cell's nearest palette entry."""
    levels = np.arange(1 << LUT_BITS) * (256 >> LUT_BITS) + (128 >> LUT_BITS) - 0.5   # cell centres
    grid = np.stack(np.meshgrid(levels, levels, levels, indexing="ij"), axis=-1).reshape(-1, 3)
    return _nearest(grid, np.asarray(palette, np.float64)).astype(np.uint8)


def quantize(frame: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """Palette indices (h, w) uint8 of ``frame`` (h, w, 3) uint8 through ``lut`` (``palette_lut``)."""
    shift = 8 - LUT_BITS
    r, g, b = (frame[..., k] >> shift for k in range(3))
    cell = (r.astype(np.intp) << (2 * LUT_BITS)) | (g.astype(np.intp) << LUT_BITS) | b
    return lut[cell]


# --- LZW ---------------------------------------------------------------------------------------------------------------
@numba.njit(cache=True, inline="always")
def _put(out, acc, bits, pos, code, size):
    """Append ``code`` of ``size`` bits to the bit accumulator ``acc`` (holding ``bits`` bits) and flush whole
    bytes into ``out`` from ``pos``; return the new (acc, bits, pos)."""
    acc |= np.uint64(code) << np.uint64(bits)
    bits += size
    while bits >= 8:
        out[pos] = np.uint8(acc & np.uint64(255))
        acc >>= np.uint64(8)
        bits -= 8
        pos += 1
    return acc, bits, pos


@numba.njit(cache=True)
def lzw_encode(indices, min_code_size):
    """GIF's LZW of ``indices`` (n,) uint8 (each < 2**min_code_size) with codes of min_code_size + 1 … 12 bits,
    least significant bit first; returns the bytes (uint8 array, before splitting into sub-blocks).

    Starts with a clear code; when the table is full (code 4095 given) it sends a clear code and starts over.
    The code width grows when the next code to assign reaches 2**width, after the code just sent: exactly
    when a decoder, one entry behind, widens (GIF89a appendix F)."""
    n = indices.size
    clear = 1 << min_code_size
    eoi = clear + 1
    out = np.zeros(2 * n + 64, np.uint8)
    child = np.full((4096, clear), -1, np.int16)          # child[prefix code, next index] → code, or -1
    made_prefix = np.zeros(4096, np.int32)                # where each assigned code sits in child (to reset)
    made_char = np.zeros(4096, np.int32)
    size = min_code_size + 1
    next_code = eoi + 1
    acc = np.uint64(0)
    bits = 0
    pos = 0
    acc, bits, pos = _put(out, acc, bits, pos, clear, size)   # the clear code first
    prefix = np.int64(indices[0])
    for i in range(1, n):
        c = np.int64(indices[i])
        code = child[prefix, c]
        if code >= 0:
            prefix = np.int64(code)
            continue
        acc, bits, pos = _put(out, acc, bits, pos, prefix, size)   # send the longest known string
        if next_code < 4096:
            if next_code == (1 << size):
                size += 1
            child[prefix, c] = next_code
            made_prefix[next_code] = prefix
            made_char[next_code] = c
            next_code += 1
        else:                                             # table full: clear, start over
            acc, bits, pos = _put(out, acc, bits, pos, clear, size)
            for k in range(eoi + 1, 4096):
                child[made_prefix[k], made_char[k]] = -1
            size = min_code_size + 1
            next_code = eoi + 1
        prefix = c
    acc |= np.uint64(prefix) << np.uint64(bits)
    bits += size
    if next_code == (1 << size) and size < 12:            # the decoder adds an entry after this code and widens
        size += 1
    acc |= np.uint64(eoi) << np.uint64(bits)
    bits += size
    while bits > 0:
        out[pos] = np.uint8(acc & np.uint64(255))
        acc >>= np.uint64(8)
        bits -= 8
        pos += 1
    return out[:pos]


@numba.njit(cache=True)
def _sub_blocks(data):
    """``data`` split into GIF sub-blocks (a length byte, up to 255 bytes) and the terminating empty block."""
    n = data.size
    blocks = (n + 254) // 255
    out = np.empty(n + blocks + 1, np.uint8)
    pos = 0
    for b in range(blocks):
        start = b * 255
        length = min(255, n - start)
        out[pos] = length
        for i in range(length):                    # a loop: an array-to-slice copy compiles numba's shape-error
            out[pos + 1 + i] = data[start + i]     # formatting (seconds of a first launch)
        pos += 1 + length
    out[pos] = 0
    return out


def _u16(value: int) -> bytes:
    return int(value).to_bytes(2, "little")


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
    """An animated GIF written frame by frame: ``add(frame)`` appends one, ``close()`` finishes the file.

    ``fps`` [1/s] in (0, 50]; ``scale`` in (0, 1] shrinks every frame (box filter); ``loop`` 0 plays forever,
    else that many times; the palette comes from the first ``palette_frames`` frames (held until then).
    Closing with no frame added removes the file. File errors are OSErrors naming the path."""

    def __init__(self, path: str | os.PathLike, fps: float = DEFAULT_FPS, scale: float = 1.0, *, loop: int = 0,
                 palette_frames: int = 1) -> None:
        super().__init__(path, fps, scale)
        if isinstance(loop, bool) or not isinstance(loop, (int, np.integer)) or not 0 <= loop <= 65535:
            raise ValueError(f"GifWriter loop = {loop!r}: must be a whole number in 0 … 65535 (0: forever)")
        if isinstance(palette_frames, bool) or not isinstance(palette_frames, (int, np.integer)) or palette_frames < 1:
            raise ValueError(f"GifWriter palette_frames = {palette_frames!r}: must be a whole number >= 1")
        self.loop = int(loop)
        self.palette_frames = int(palette_frames)
        self.palette: np.ndarray | None = None
        """(256, 3) uint8, once chosen: the adaptive colours, the lattice, the transparent entry last."""
        self._lut: np.ndarray | None = None
        self._previous: np.ndarray | None = None          # palette indices of what is on screen now
        self._held: list[tuple[np.ndarray, int]] = []
        self._periods = 0                                  # frame periods written: for the delays
        self._file = open(self.path, "wb")                 # noqa: SIM115  (closed by close())

    def _write(self, frame: np.ndarray, frames: int) -> None:
        if self.palette is None:
            self._held.append((frame.copy(), frames))                    # the caller may reuse its buffer
            if len(self._held) >= self.palette_frames:
                self._start()
            return
        self._frame(frame, frames)

    def _start(self) -> None:
        """Choose the palette from the held frames, write the header and the held frames."""
        sample = np.concatenate([f.reshape(-1, 3) for f, _ in self._held])
        adaptive = build_palette(sample, ADAPTIVE_COLOURS)
        colours = np.concatenate([adaptive, _LATTICE.astype(np.uint8)])
        self._lut = palette_lut(colours)
        palette = np.zeros((256, 3), np.uint8)
        palette[:colours.shape[0]] = colours
        self.palette = palette
        width, height = self.size
        head = bytearray(b"GIF89a")
        head += _u16(width) + _u16(height) + bytes([0xF7, 0, 0])          # global table of 2**(7+1) entries
        head += palette.tobytes()
        head += b"\x21\xff\x0bNETSCAPE2.0\x03\x01" + _u16(self.loop) + b"\x00"
        self._file.write(bytes(head))
        held, self._held = self._held, []
        for frame, frames in held:
            self._frame(frame, frames)

    def _delay(self, frames: int) -> int:
        """Delay [cs] of the next frame shown for ``frames`` periods: rounded so the running total stays right."""
        start = round(100 * self._periods / self.fps)
        self._periods += frames
        return max(1, min(65535, round(100 * self._periods / self.fps) - start))

    def _frame(self, frame: np.ndarray, frames: int) -> None:
        """Quantize ``frame``, keep the rectangle that changed, write it (transparent where unchanged if smaller)."""
        index = quantize(frame, self._lut)
        previous, self._previous = self._previous, index
        if previous is None:                                               # the first frame: all of it
            self._emit(0, 0, index, lzw_encode(index.ravel(), 8), False, frames)
            return
        changed = index != previous
        rows, cols = np.flatnonzero(changed.any(axis=1)), np.flatnonzero(changed.any(axis=0))
        if rows.size == 0:                                                 # nothing new: one transparent pixel
            still = np.full((1, 1), TRANSPARENT, np.uint8)
            self._emit(0, 0, still, lzw_encode(still.ravel(), 8), True, frames)
            return
        y0, y1, x0, x1 = int(rows[0]), int(rows[-1]) + 1, int(cols[0]), int(cols[-1]) + 1
        patch = np.ascontiguousarray(index[y0:y1, x0:x1])
        keyed = np.where(changed[y0:y1, x0:x1], patch, np.uint8(TRANSPARENT))
        data, keyed_data = lzw_encode(patch.ravel(), 8), lzw_encode(keyed.ravel(), 8)
        if keyed_data.size < data.size:
            self._emit(x0, y0, keyed, keyed_data, True, frames)
        else:
            self._emit(x0, y0, patch, data, False, frames)

    def _emit(self, x0: int, y0: int, patch: np.ndarray, data: np.ndarray, transparent: bool, frames: int) -> None:
        """Write one frame: graphic control extension (delay, keep what is under it, transparency), image
        descriptor of ``patch`` at (x0, y0) [px], its LZW ``data`` in sub-blocks."""
        h, w = patch.shape
        block = bytearray(b"\x21\xf9\x04")
        block += bytes([(1 << 2) | int(transparent)]) + _u16(self._delay(frames)) + bytes([TRANSPARENT, 0])
        block += b"\x2c" + _u16(x0) + _u16(y0) + _u16(w) + _u16(h) + b"\x00"
        block += b"\x08"                                                          # LZW minimum code size
        self._file.write(bytes(block))
        self._file.write(_sub_blocks(data).tobytes())

    def close(self) -> None:
        """Write the held frames (if fewer than palette_frames came) and the trailer, and close the file."""
        if self.closed:
            return
        self.closed = True
        try:
            if self._held:
                self._start()
            if self.palette is not None:
                self._file.write(b"\x3b")
        finally:
            self._file.close()
        if self.palette is None:                                               # nothing recorded
            os.remove(self.path)


class FfmpegWriter(VideoWriter):
    """An MP4 (H.264, yuv420p) made by the ``ffmpeg`` program from raw RGB frames piped to it.

    ``fps`` [1/s] in (0, 50], ``scale`` in (0, 1]; ffmpeg starts on the first frame (odd sizes are padded by
    one pixel). Raises OSError naming the path when ffmpeg is missing or fails."""

    def __init__(self, path: str | os.PathLike, fps: float = DEFAULT_FPS, scale: float = 1.0) -> None:
        super().__init__(path, fps, scale)
        self.program = shutil.which("ffmpeg")
        if self.program is None:
            raise OSError(errno.ENOENT, ".mp4 needs the ffmpeg program on PATH; install ffmpeg, or record a .gif",
                          self.path)
        self._process: subprocess.Popen | None = None
        self._log = tempfile.TemporaryFile()

    def _write(self, frame: np.ndarray, frames: int) -> None:
        if self._process is None:
            width, height = self.size
            command = [self.program, "-hide_banner", "-loglevel", "error", "-y", "-f", "rawvideo",
                       "-pix_fmt", "rgb24", "-s", f"{width}x{height}", "-framerate", f"{self.fps:.6g}", "-i", "-",
                       "-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2", "-c:v", "libx264", "-pix_fmt", "yuv420p",
                       "-movflags", "+faststart", self.path]
            self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                             stderr=self._log)
        data = frame.tobytes()
        try:
            for _ in range(frames):
                self._process.stdin.write(data)
        except BrokenPipeError:
            self._finish()

    def _finish(self) -> None:
        """Close ffmpeg's input, wait for it, and raise OSError with its last line if it failed."""
        process, self._process = self._process, None
        if process is None:
            return
        try:
            process.stdin.close()
        except BrokenPipeError:
            pass
        status = process.wait()
        if status != 0:
            self._log.seek(0)
            lines = self._log.read().decode(errors="replace").strip().splitlines()
            raise OSError(errno.EIO, f"ffmpeg failed (exit {status}): {lines[-1] if lines else 'no message'}",
                          self.path)

    def close(self) -> None:
        """Let ffmpeg finish the file (OSError with its message if it failed)."""
        if self.closed:
            return
        self.closed = True
        try:
            self._finish()
        finally:
            self._log.close()


def open_video(path: str | os.PathLike, fps: float = DEFAULT_FPS, scale: float = 1.0) -> GifWriter | FfmpegWriter:
    """A writer for ``path`` by its extension: ``GifWriter`` for .gif, ``FfmpegWriter`` for .mp4; ValueError
    naming the path for another extension (``record_problem``)."""
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
