"""The README's set-up commands and CI stay in step."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    setup = text.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", setup, flags=re.S)]


def test_readme_has_exactly_two_setup_commands():
    commands = readme_commands()
    assert len(commands) == 2, commands
    assert all("\n" not in c for c in commands), "each set-up command is one line to copy"


def test_ci_runs_the_readme_test_command_verbatim():
    test_command = readme_commands()[1]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test_command in ci, f"{test_command!r} is not a line of .ci/run"


def test_main_demo_runs_headless_and_reports(tmp_path):
    demo = readme_commands()[0].split("&&", 1)[1].strip().split()
    assert demo[:2] == ["python", "-m"] and demo[2].startswith("loom.games.")
    out = subprocess.run([sys.executable, "-m", demo[2], *demo[3:], "--headless", "--frames", "120",
                          "--report", "json"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "SDL_AUDIODRIVER": "dummy"})
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["frames"] == 120 and report["particles"] > 0 and report["nan"] is False
    assert report["rejected_steps"] == 0
