"""Moving pictures: the GIF and MP4 writers (launch/record.py), every game's ``--record``, and the docs' loops.

Pillow decodes the GIFs (``load``: each frame composited as a viewer shows it, its delay, and the file's loop
count); pygame's GIF loader (SDL_image, ``pygame.image.load_animation``) is the independent decoder in the round
trip test and for the docs' loops. imageio's ffmpeg reader decodes the MP4s.

Quantization budget (``test_frames_round_trip_with_their_delays_and_colours``): the palette holds 228 colours
chosen from the first frame by a median cut, the 27 of a 3×3×3 lattice and the transparent entry; each pixel gets
its nearest entry. A median-cut entry is the mean of its box of colours, so a pixel is off by at most its box's
spread: a few levels on smooth shading with ~2,000 colours for 228 boxes. So: mean error <= 3 levels, 99 % of
channel values within 12, none beyond 24.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import imageio.v2 as imageio
import numpy as np
import pygame
import pytest
from PIL import Image, ImageSequence

from loom.launch import record
from loom.launch.record import (FfmpegWriter, GifWriter, Recorder, RecordExtraMissing, downscale, open_video,
                                steps_per_frame)
from loom.launch.runner import check_output, parser

ROOT = Path(__file__).resolve().parent.parent
BUDGET_BYTES = 2_000_000
"""Largest a loop of the docs may be [bytes]."""
ENV = dict(os.environ, SDL_AUDIODRIVER="dummy", SDL_VIDEODRIVER="offscreen", PYGAME_HIDE_SUPPORT_PROMPT="1")
INSTALL = 'pip install "loom-cloth[record]"'


def load(path: Path) -> list[tuple[np.ndarray, float]]:
    """The frames of a GIF as Pillow decodes them: [(pixels (h, w, 3) int, delay [ms])]."""
    with Image.open(path) as gif:
        return [(np.asarray(frame.convert("RGB")).astype(int), frame.info["duration"])
                for frame in ImageSequence.Iterator(gif)]


def loop_count(path: Path) -> int | None:
    """The GIF's NETSCAPE2.0 loop count (0: forever; None: no extension, played once)."""
    with Image.open(path) as gif:
        return gif.info.get("loop")


def load_mp4(path: Path) -> tuple[list[np.ndarray], float]:
    """The frames of an MP4 as imageio's ffmpeg reader decodes them, and its rate [1/s]."""
    with imageio.get_reader(path, format="FFMPEG") as reader:
        return [np.asarray(frame) for frame in reader], reader.get_meta_data()["fps"]


def scene(k: int, h: int = 160, w: int = 240) -> np.ndarray:
    """Frame ``k`` of a rendered-looking scene: a sky graded in both directions, a shaded floor checker, and a red
    cloth with smooth Lambert-like shading (every shade in every frame) that slides and waves with k."""
    y, x = np.mgrid[0:h, 0:w].astype(float)
    t = y / h
    f = np.stack([150 + 80 * t + 30 * x / w, 180 + 60 * t, 230 + 20 * t - 30 * x / w], -1)
    floor = y > 0.6 * h
    check = (x // 20 + y // 10) % 2 == 0
    f[floor] = np.where(check[floor, None], [120, 110, 95], [150, 140, 120]) * (0.7 + 0.3 * t[floor, None])
    cx = 80 + 6 * k
    cloth = (np.abs(x - cx) < 60) & (np.abs(y - 70 + 6 * np.sin(x / 15 + k)) < 35)
    shade = 0.2 + 0.8 * (0.5 + 0.5 * np.cos((x - cx) / 12 + 0.4 * k))
    f[cloth] = (np.array([200, 30, 35]) * shade[..., None])[cloth]
    return np.clip(np.rint(f), 0, 255).astype(np.uint8)


CUBE = np.array([(r, g, b) for r in range(0, 256, 51) for g in range(0, 256, 51) for b in range(0, 256, 51)], np.uint8)
"""216 colours 51 levels apart: a palette of them is exact, and each lies in its own lookup cell."""


# --- the writer ------------------------------------------------------------------------------------------------------
def test_frames_round_trip_with_their_delays_and_colours(tmp_path):
    frames = [scene(k) for k in range(15)]
    assert len(np.unique(frames[0].reshape(-1, 3), axis=0)) > 1000          # more colours than the palette
    out = tmp_path / "scene.gif"
    with GifWriter(out, fps=20) as gif:
        for frame in frames:
            gif.add(frame)
    decoded = load(out)
    assert len(decoded) == 15 and all(delay == 50 for _, delay in decoded)   # 20 fps: 5 cs a frame
    assert loop_count(out) == 0                                               # forever
    for (pixels, _), frame in zip(decoded, frames):
        error = np.abs(pixels - frame)
        assert pixels.shape == frame.shape
        assert error.mean() <= 3 and np.percentile(error, 99) <= 12 and error.max() <= 24, \
            (error.mean(), np.percentile(error, 99), error.max())
    by_pygame = pygame.image.load_animation(str(out))                         # another decoder agrees
    assert [delay for _, delay in by_pygame] == [50] * 15
    last = pygame.surfarray.array3d(by_pygame[-1][0]).transpose(1, 0, 2).astype(int)
    assert np.array_equal(last, decoded[-1][0])


def test_loop_counts_other_than_forever(tmp_path):
    out = tmp_path / "twice.gif"
    with GifWriter(out, loop=2) as gif:
        gif.add(scene(0, 16, 24))
        gif.add(scene(1, 16, 24))
    assert loop_count(out) == 2 and len(load(out)) == 2


def test_a_rate_that_is_not_whole_centiseconds_keeps_its_total_time(tmp_path):
    out = tmp_path / "thirty.gif"
    with GifWriter(out, fps=30) as gif:
        for k in range(9):
            gif.add(scene(k, 32, 48))
        gif.add(scene(9, 32, 48), frames=3)                                   # held for three periods
    delays = [delay for _, delay in load(out)]
    assert delays == [30, 40, 30, 30, 40, 30, 30, 40, 30, 100]                # 3.33 cs a frame on average
    assert sum(delays) == 12 * 1000 / 30


def test_well_separated_colours_and_the_transparent_diff_round_trip_exactly(tmp_path):
    rng = np.random.default_rng(1)
    first = CUBE[rng.integers(0, 216, (90, 120))]
    second = first.copy()
    second[30:50, 70:100] = CUBE[rng.integers(0, 216, (20, 30))]            # a patch changes
    third = second.copy()
    third[::7, ::5] = CUBE[rng.integers(0, 216, third[::7, ::5].shape[:2])]   # scattered pixels change
    frames = [first, second, second, third, first]
    out = tmp_path / "exact.gif"
    with GifWriter(out, fps=10) as gif:
        for frame in frames:
            gif.add(frame)
    decoded = load(out)
    assert len(decoded) == 5
    for (pixels, delay), frame in zip(decoded, frames):
        assert delay == 100 and np.array_equal(pixels, frame)


def test_a_frame_that_does_not_change_is_stored_tiny_and_a_small_change_small(tmp_path):
    frame = scene(0, 240, 360)
    sizes = []
    for count in (1, 2):
        out = tmp_path / f"still{count}.gif"
        with GifWriter(out) as gif:
            for _ in range(count):
                gif.add(frame)
        sizes.append(out.stat().st_size)
    assert sizes[1] - sizes[0] <= 40, sizes                                   # one transparent pixel and its header
    moved = frame.copy()
    moved[100:110, 200:212] = (250, 250, 20)
    out = tmp_path / "moved.gif"
    with GifWriter(out) as gif:
        gif.add(frame)
        gif.add(moved)
    assert out.stat().st_size - sizes[0] <= 120                               # a 12 × 10 px rectangle
    decoded = load(out)
    assert len(decoded) == 2                                                  # a colour the first frame lacks:
    assert np.abs(decoded[1][0][100:110, 200:212] - (250, 250, 20)).max() <= 64   # a lattice colour, <= 64 off
    assert np.array_equal(decoded[1][0][:100], decoded[0][0][:100])          # the rest as it was


def test_a_long_run_is_written_as_it_goes(tmp_path):
    """Streaming: the file grows with every frame added (nothing is held until close), and the writer keeps only
    the last frame's palette indices, whatever the length of the run."""
    out = tmp_path / "long.gif"
    sizes = []
    with GifWriter(out) as gif:
        for k in range(60):
            gif.add(scene(k % 12, 48, 64))
            gif._file.flush()
            sizes.append(out.stat().st_size)
            held = [value.nbytes for value in vars(gif).values() if isinstance(value, np.ndarray)]
            assert sum(held) <= 48 * 64 + 256 * 3, held                      # one frame of indices, the palette
    assert all(b > a for a, b in zip(sizes, sizes[1:]))                       # every frame already on disk
    assert len(load(out)) == 60


def test_downscale_is_a_box_filter():
    rng = np.random.default_rng(4)
    frame = rng.integers(0, 256, (60, 90, 3)).astype(np.uint8)
    half = downscale(frame, 0.5)
    assert half.shape == (30, 45, 3)
    assert np.abs(half - frame.reshape(30, 2, 45, 2, 3).mean(axis=(1, 3))).max() <= 0.5
    assert downscale(frame, 1.0) is frame
    odd = downscale(frame, 0.37)                                              # fractional cells, weighted edges
    assert odd.shape == (22, 33, 3) and abs(odd.mean() - frame.mean()) < 1.0
    assert np.all(downscale(np.full((50, 70, 3), 77, np.uint8), 0.37) == 77)


def test_scale_shrinks_every_frame_and_sizes_must_agree(tmp_path):
    out = tmp_path / "half.gif"
    with GifWriter(out, scale=0.5) as gif:
        gif.add(scene(0, 64, 96))
        with pytest.raises(ValueError, match=r"GifWriter.add frame: 40×20 px after scaling, but the recording is "
                                             r"48×32 px"):
            gif.add(scene(0, 40, 80))
    assert [pixels.shape for pixels, _ in load(out)] == [(32, 48, 3)]


@pytest.mark.parametrize("kwargs,message", [
    ({"fps": 0}, r"GifWriter fps = 0: must be a number of frames per second in \(0, 50\]"),
    ({"fps": 60}, r"GifWriter fps = 60: must be"),
    ({"fps": float("nan")}, r"GifWriter fps = nan: must be"),
    ({"scale": 0}, r"GifWriter scale = 0: must be a size factor in \(0, 1\]"),
    ({"scale": 2.0}, r"GifWriter scale = 2.0: must be"),
    ({"loop": -1}, r"GifWriter loop = -1: must be a whole number in 0 … 65535"),
])
def test_writer_arguments_are_checked_naming_the_field_and_value(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        GifWriter(tmp_path / "x.gif", **kwargs)
    assert not (tmp_path / "x.gif").exists()


def test_recorder_arguments_are_checked_naming_the_field_and_value(tmp_path):
    with pytest.raises(ValueError, match=r"Recorder fps = 0: must be a number of frames per second"):
        Recorder(tmp_path / "x.gif", 0)
    with pytest.raises(ValueError, match=r"Recorder dt = 0: must be the game's fixed step"):
        Recorder(tmp_path / "x.gif", 20, dt=0)
    with pytest.raises(ValueError, match=r"open_video path = '.*x\.avi': unknown extension '\.avi'"):
        Recorder(tmp_path / "x.avi")
    assert not list(tmp_path.iterdir())


def test_bad_frames_are_refused_naming_what_was_given(tmp_path):
    with GifWriter(tmp_path / "x.gif") as gif:
        with pytest.raises(ValueError, match=r"GifWriter.add frame: shape \(4, 4\) dtype uint8, expected \(h, w, 3\)"):
            gif.add(np.zeros((4, 4), np.uint8))
        with pytest.raises(ValueError, match=r"shape \(4, 4, 3\) dtype float64"):
            gif.add(np.zeros((4, 4, 3)))
        with pytest.raises(ValueError, match=r"GifWriter.add frames = 0: must be a whole number >= 1"):
            gif.add(np.zeros((4, 4, 3), np.uint8), frames=0)
        gif.add(np.zeros((4, 4, 3), np.uint8))
    with pytest.raises(RuntimeError, match="after close"):
        gif.add(np.zeros((4, 4, 3), np.uint8))


def test_closing_with_no_frame_leaves_no_file(tmp_path):
    GifWriter(tmp_path / "empty.gif").close()
    assert not (tmp_path / "empty.gif").exists()


def test_steps_per_frame_and_the_recorder_keep_simulated_time(tmp_path):
    assert [steps_per_frame(1 / 60, fps) for fps in (30, 20, 15, 25, 12, 0.5)] == [2, 3, 4, 2, 5, 120]
    assert steps_per_frame(1 / 60, 50) == 2 and steps_per_frame(1 / 30, 50) == 1     # never above 50 fps
    recorder = Recorder(tmp_path / "r.gif", 20, dt=1 / 60)
    assert recorder.steps == 3 and recorder.fps == pytest.approx(20)
    owed = [recorder.due(step / 60) for step in range(1, 13)]
    assert owed == [0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1]
    assert recorder.due(22 / 60) == 3 and recorder.due(22 / 60) == 0          # a slow frame owes several
    recorder.close()


def test_mp4_records_with_the_bundled_ffmpeg(tmp_path):
    assert record.record_problem(tmp_path / "x.mp4") is None
    out = tmp_path / "run.mp4"
    frames = [scene(k, 64, 96) for k in range(5)]
    with FfmpegWriter(out, fps=20, scale=0.5) as video:
        for frame in frames[:4]:
            video.add(frame)
        video.add(frames[4], frames=2)                                        # held for two periods
    decoded, fps = load_mp4(out)
    assert fps == pytest.approx(20) and len(decoded) == 6
    assert all(pixels.shape == (32, 48, 3) for pixels in decoded)            # 48 × 32 after scaling
    expected = [downscale(frame, 0.5) for frame in frames] + [downscale(frames[4], 0.5)]
    for pixels, frame in zip(decoded, expected):                             # H.264, yuv420p: lossy, but close
        assert np.abs(pixels.astype(int) - frame).mean() <= 10


def test_an_odd_size_mp4_is_padded_by_one_pixel(tmp_path):
    out = tmp_path / "odd.mp4"
    with open_video(out, fps=10) as video:
        video.add(scene(0, 33, 47))
    decoded, _ = load_mp4(out)
    assert len(decoded) == 1 and decoded[0].shape == (34, 48, 3)


def test_without_the_record_extra_the_writers_say_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)                            # as if Pillow were not installed
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)
    assert record.record_problem(tmp_path / "x.gif") == (f".gif needs PIL, not installed here: {INSTALL} (Loom's "
                                                         "record extra: Pillow, imageio, imageio-ffmpeg)")
    assert record.record_problem(tmp_path / "x.mp4").startswith(f".mp4 needs imageio_ffmpeg, not installed here: "
                                                                f"{INSTALL}")
    with pytest.raises(RecordExtraMissing, match=r"^GifWriter: \.gif needs PIL, .*loom-cloth\[record\]"):
        GifWriter(tmp_path / "x.gif")
    with pytest.raises(RuntimeError, match=r"^FfmpegWriter: \.mp4 needs imageio_ffmpeg"):
        Recorder(tmp_path / "x.mp4")
    assert not list(tmp_path.iterdir())


def test_mp4_without_an_ffmpeg_program_is_an_oserror_naming_the_path(tmp_path, monkeypatch):
    import imageio_ffmpeg

    def none() -> str:
        raise RuntimeError("No ffmpeg exe could be found.")
    monkeypatch.setattr(imageio_ffmpeg, "get_ffmpeg_exe", none)
    assert record.record_problem(tmp_path / "x.mp4").startswith(".mp4 needs an ffmpeg program and imageio-ffmpeg "
                                                                "found none (No ffmpeg exe could be found.)")
    with pytest.raises(OSError, match=r"imageio-ffmpeg found none .*x\.mp4") as error:
        FfmpegWriter(tmp_path / "x.mp4")
    assert error.value.filename == str(tmp_path / "x.mp4")


# --- every game's --record -----------------------------------------------------------------------------------------
def _game(module: str, *args: str, without: str = "", timeout: float = 240) -> subprocess.CompletedProcess:
    """Run game ``module`` with ``args``; ``without``: modules (comma separated) to hide, as if not installed."""
    hide = ("import runpy, sys; sys.modules.update(dict.fromkeys(filter(None, sys.argv[1].split(',')))); "
            "sys.argv = sys.argv[2:]; runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)")
    return subprocess.run([sys.executable, "-c", hide, without, module, *args], cwd=ROOT, env=ENV,
                          capture_output=True, text=True, timeout=timeout)


def test_the_flag_records_its_headless_run(tmp_path):
    out = tmp_path / "flag.gif"
    run = _game("loom.games.flag", "--headless", "--frames", "60", "--record", str(out), "--record-scale", "0.5",
                "--report", "json")
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout.strip().splitlines()[-1])["frames"] == 60
    decoded = load(out)
    assert len(decoded) == 20                                                 # 60 steps, one frame every 3
    assert all(pixels.shape == (320, 480, 3) and delay == 50 for pixels, delay in decoded)
    assert np.abs(decoded[-1][0] - decoded[0][0]).max(axis=2).mean() > 0.01  # the flag moved
    assert "recorded 20 frames at 20 fps, 480×320 px" in run.stderr


def test_a_game_records_in_its_window_too(tmp_path):
    out = tmp_path / "window.gif"                                             # SDL's offscreen driver: a GL window
    run = _game("loom.games.hanging_sheet", "--n", "8", "--frames", "12", "--record", str(out), "--record-fps", "30",
                "--record-scale", "0.25", "--report", "json")
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["video_driver"] == "offscreen" and report["rendered_frames"] == 12, report
    decoded = load(out)
    assert decoded and decoded[0][0].shape == (160, 240, 3)
    assert sum(delay for _, delay in decoded) == pytest.approx(1000 * (report["frames"] // 2) / 30, abs=5)


@pytest.mark.parametrize("game,size", [("platformer", (270, 480, 3)), ("embed_surface", (180, 320, 3))])
def test_games_with_their_own_loop_record_their_own_surface(tmp_path, game, size):
    out = tmp_path / f"{game}.gif"
    run = _game(f"loom.games.{game}", "--headless", "--frames", "30", "--record", str(out), "--record-scale", "0.5",
                "--report", "json")
    assert run.returncode == 0, run.stderr[-2000:]
    decoded = load(out)
    assert len(decoded) == 10 and all(pixels.shape == size and delay == 50 for pixels, delay in decoded)


def test_record_mp4_from_a_game(tmp_path):
    out = tmp_path / "sheet.mp4"
    run = _game("loom.games.hanging_sheet", "--n", "6", "--headless", "--frames", "6", "--record", str(out),
                "--record-scale", "0.25")
    assert run.returncode == 0, run.stderr[-2000:]
    decoded, fps = load_mp4(out)                                              # 6 steps: 2 frames of 240 × 160
    assert len(decoded) == 2 and decoded[0].shape == (160, 240, 3) and fps == pytest.approx(20)
    assert "recorded 2 frames at 20 fps, 240×160 px" in run.stderr


def _one_line(stderr: str) -> str:
    assert "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1, stderr
    return stderr.strip()


def test_an_unknown_extension_is_one_line_before_the_run(tmp_path):
    for name, what in (("run.avi", "unknown extension '.avi'"), ("run", "no extension")):
        out = tmp_path / name
        run = _game("loom.games.hanging_sheet", "--n", "6", "--headless", "--frames", "100000", "--record", str(out),
                    timeout=60)                                               # checked before 100 000 steps
        assert run.returncode == 1
        assert _one_line(run.stderr) == (f"loom: --record {out}: {what}: a recording is .gif or .mp4 (an animated "
                                         "GIF, or an MP4 through ffmpeg)")
        assert not out.exists()


@pytest.mark.parametrize("name,hidden,line", [
    ("run.gif", "PIL", f".gif needs PIL, not installed here: {INSTALL} (Loom's record extra: Pillow, imageio, "
                       "imageio-ffmpeg)"),
    ("run.mp4", "imageio,imageio_ffmpeg", f".mp4 needs imageio, imageio_ffmpeg, not installed here: {INSTALL} "
                                          "(Loom's record extra: Pillow, imageio, imageio-ffmpeg)"),
])
def test_without_the_record_extra_a_game_says_what_to_install_before_the_run(tmp_path, name, hidden, line):
    out = tmp_path / name
    run = _game("loom.games.hanging_sheet", "--n", "6", "--headless", "--frames", "100000", "--record", str(out),
                without=hidden, timeout=60)                                   # checked before 100 000 steps
    assert run.returncode == 1
    assert _one_line(run.stderr) == f"loom: --record {out}: {line}"
    assert not out.exists()


def test_the_platformer_checks_its_record_path_before_the_run(tmp_path):
    out = tmp_path / "run.webm"
    run = _game("loom.games.platformer", "--headless", "--frames", "100000", "--record", str(out), timeout=60)
    assert run.returncode == 1 and _one_line(run.stderr).startswith(f"loom: --record {out}: unknown extension")


@pytest.mark.parametrize("args,line", [
    (["--record-fps", "0"], "--record-fps = 0: must be in (0, 50] (frames per second; GIF delays are whole "
                            "centiseconds and browsers slow delays under 2 cs)"),
    (["--record-fps", "fast"], "--record-fps = 'fast': must be a number in (0, 50]"),
    (["--record-fps", "120"], "--record-fps = 120: must be in (0, 50]"),
    (["--record-scale", "0"], "--record-scale = 0: must be in (0, 1] (a size factor: 0.5 is half the width and "
                              "height)"),
    (["--record-scale", "2"], "--record-scale = 2: must be in (0, 1]"),
])
def test_bad_record_fps_and_scale_are_a_usage_error_naming_option_and_value(args, line, capsys):
    with pytest.raises(SystemExit) as exit_info:
        parser("python -m loom.games.flag").parse_args(["--record", "x.gif", *args])
    assert exit_info.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(f"python -m loom.games.flag: error: argument {args[0]}: {line}"), last


def test_record_options_default_to_20_fps_full_size():
    args = parser().parse_args(["--record", "x.gif"])
    assert (args.record, args.record_fps, args.record_scale) == ("x.gif", 20.0, 1.0)


def test_check_output_knows_the_record_extensions(tmp_path):
    check_output("record", str(tmp_path / "ok.gif"))
    check_output("screenshot", str(tmp_path / "shot.png"))                     # only --record has extensions
    with pytest.raises(SystemExit, match=r"^loom: --record .*x\.png: unknown extension '\.png'"):
        check_output("record", str(tmp_path / "x.png"))


# --- the docs' loops -------------------------------------------------------------------------------------------------
def _loops() -> list[tuple[str, Path]]:
    """(page, GIF) for every GIF the gallery page and the README show."""
    found = []
    for page in (ROOT / "docs" / "gallery.md", ROOT / "README.md"):
        for target in re.findall(r"!\[[^\]]*\]\(([^)\s]+\.gif)\)", page.read_text(encoding="utf-8")):
            found.append((page.name, (page.parent / target).resolve()))
    return found


def test_the_readme_opens_with_the_cape_loop():
    lines = [line for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines() if line.strip()]
    assert lines[0] == "# Loom" and lines[1] == "![Loom cape demo](docs/media/cape.gif)", lines[:2]


def test_the_gallery_shows_every_game_moving():
    shown = {path.stem for page, path in _loops() if page == "gallery.md"}
    assert {"cape", "flag", "drape", "hanging_sheet", "sandbox", "platformer"} <= shown, shown
    assert "gallery.md" in (ROOT / "docs" / "index.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("page,path", _loops(), ids=[f"{page}:{path.name}" for page, path in _loops()])
def test_each_loop_exists_loads_moves_and_is_within_budget(page, path):
    assert path.is_file(), f"{page} shows {path}, which does not exist: run python docs/gen_gallery.py"
    size = path.stat().st_size
    assert size <= BUDGET_BYTES, f"{path.name} is {size / 1e6:.2f} MB, over the {BUDGET_BYTES / 1e6:.1f} MB budget"
    frames = pygame.image.load_animation(str(path))
    assert len(frames) > 10, f"{path.name} has {len(frames)} frames"
    first = pygame.surfarray.array3d(frames[0][0]).astype(int)
    assert any(np.abs(pygame.surfarray.array3d(s).astype(int) - first).max() > 20 for s, _ in frames[1:]), \
        f"{path.name} does not move"
