"""Bake resume as a user hits it: a bake killed with SIGKILL mid-run and run again gives the same bytes as one that
never stopped, for every game; frames and snapshots on disk that the bake did not write (truncated, replaced,
planted) are written again or skipped, never trusted (files.bake, issue 15)."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loom.files import bake
from loom.games.__main__ import find_games

REPO = Path(__file__).resolve().parents[1]
FRAMES, EVERY, KILL_AFTER = 30, 8, 18
"""Frames per bake, frames between resume snapshots, frames on disk before the SIGKILL (past two snapshots)."""
SMALL = {"hanging_sheet": ["--set", "n=10"], "drape": ["--set", "n=14"]}
"""--set options that keep a game's bake small (the others have no size knob and are small already)."""
SLOW_BAKE = """
import sys, time
from loom.files import bake, meshes
save_frame = meshes.save_frame
def slow_save_frame(*args, **kwargs):    # the frame is on disk, its record not yet: the kill lands here or mid-step
    path = save_frame(*args, **kwargs)
    time.sleep(0.04)
    return path
meshes.save_frame = slow_save_frame
sys.exit(bake.main(sys.argv[1:]))
"""


def _env() -> dict[str, str]:
    """Child environment: one numba thread (the machine is shared; stepping is thread-count independent)."""
    return {**os.environ, "NUMBA_NUM_THREADS": "1", "SDL_AUDIODRIVER": "dummy"}


def _bake_args(game: str, out: Path) -> list[str]:
    return [game, *SMALL.get(game, []), "--frames", str(FRAMES), "--every", str(EVERY), "--quiet", "--out", str(out)]


def _run_bake(game: str, out: Path) -> dict:
    """Bake in a child process to the end; return its summary line."""
    result = subprocess.run([sys.executable, "-m", "loom.files.bake", *_bake_args(game, out)], cwd=REPO,
                            env=_env(), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def _kill_mid_run(game: str, out: Path) -> None:
    """Start a (slowed) bake and SIGKILL it once KILL_AFTER frame files are on disk."""
    child = subprocess.Popen([sys.executable, "-c", SLOW_BAKE, *_bake_args(game, out)], cwd=REPO, env=_env(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    try:
        while len(list(out.glob("frame_*.obj"))) < KILL_AFTER:
            assert child.poll() is None, f"the bake ended before the kill: {child.stderr.read().decode()}"
            assert time.monotonic() < deadline, "the bake wrote too few frames in time"
            time.sleep(0.005)
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL
    assert len(list(out.glob("frame_*.obj"))) < FRAMES, "the kill came after the last frame"


def _frame_bytes(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.glob("frame_*"))}


GAMES = sorted(find_games())


def test_every_game_is_baked_here():
    assert {"hanging_sheet", "flag", "drape", "cape"} <= set(GAMES)


@pytest.mark.parametrize("game", GAMES)
def test_a_bake_killed_mid_run_resumes_byte_identical_to_an_uninterrupted_one(tmp_path, game):
    reference, killed = tmp_path / "reference", tmp_path / "killed"
    assert _run_bake(game, reference)["written"] == FRAMES
    _kill_mid_run(game, killed)
    summary = _run_bake(game, killed)
    assert summary["resume"] == "snapshot", summary              # continued from a snapshot, not from the start
    assert EVERY <= summary["resumed_from"] < FRAMES
    resumed, expected = _frame_bytes(killed), _frame_bytes(reference)
    assert sorted(resumed) == sorted(expected)
    differing = [name for name in expected if resumed[name] != expected[name]]
    assert not differing, f"{game}: resumed frames differ from the uninterrupted bake: {differing}"
    assert (killed / bake.MANIFEST).read_bytes() == (reference / bake.MANIFEST).read_bytes()


# --- files on disk the bake did not write ----------------------------------------------------------------------

SHEET = {"n": 8}


def _bake(out: Path, frames: int) -> dict:
    return bake.bake("hanging_sheet", frames, out, every=4, settings=SHEET, progress=None)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """An uninterrupted 12-frame bake of a small hanging sheet (snapshots every 4 frames)."""
    out = tmp_path_factory.mktemp("reference")
    _bake(out, 12)
    return out


def test_a_truncated_or_replaced_frame_is_written_again(tmp_path, reference):
    shutil.copytree(reference, tmp_path, dirs_exist_ok=True)
    truncated, replaced = tmp_path / "frame_00005.obj", tmp_path / "frame_00009.obj"
    truncated.write_bytes(truncated.read_bytes()[:200])           # a kill mid-write on a filesystem without rename
    replaced.write_bytes((tmp_path / "frame_00000.obj").read_bytes())   # same size class, other bytes
    summary = _bake(tmp_path, 12)
    assert summary["resumed_from"] == 5 and summary["written"] == 2, summary   # only frames 5 and 9 rewritten
    assert _frame_bytes(tmp_path) == _frame_bytes(reference)


def test_a_frame_without_a_record_is_written_again(tmp_path, reference):
    _bake(tmp_path, 6)
    foreign = (reference / "frame_00002.obj").read_bytes()
    for k in (6, 7):                                              # complete-looking frames the bake never wrote
        (tmp_path / f"frame_{k:05d}.obj").write_bytes(foreign)
    summary = _bake(tmp_path, 12)
    assert summary["resumed_from"] == 6 and summary["written"] == 6, summary
    assert _frame_bytes(tmp_path) == _frame_bytes(reference)


def test_a_torn_record_counts_its_frame_as_not_done(tmp_path, reference):
    _bake(tmp_path, 6)
    log = tmp_path / ".resume" / bake.RECORDS
    text = log.read_bytes()
    log.write_bytes(text[:-20])                                   # the last record (frame 5) cut mid-line
    summary = _bake(tmp_path, 12)
    assert summary["resumed_from"] == 5, summary
    assert _frame_bytes(tmp_path) == _frame_bytes(reference)


def test_a_snapshot_the_bake_did_not_write_is_never_loaded(tmp_path, reference):
    _bake(tmp_path, 10)
    resume = tmp_path / ".resume"
    # a valid snapshot of another moment, planted as the newest: loading it would change every later frame
    shutil.copyfile(resume / "step_000004.snap", resume / "step_000009.snap")
    shutil.copyfile(resume / "step_000004.snap", resume / "step_000008.snap")   # replaces the bake's own
    summary = _bake(tmp_path, 12)
    assert summary["resume"] == "snapshot" and summary["resumed_from"] == 10, summary
    assert _frame_bytes(tmp_path) == _frame_bytes(reference)
