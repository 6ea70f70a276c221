"""The README's set-up: the steps from a fresh machine, its two set-up commands, and CI in step with them.

A newcomer copies the Set-up section's blocks in order: the first gets the code and a virtual environment
(clone, enter the folder, make and activate the venv with the Python that pyproject.toml requires); then
exactly two one-line commands: install and run the main demo, install everything and run the test suite
(``.ci/run`` runs that second one verbatim)."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def setup_section() -> str:
    """The README's "## Set-up" section, up to the next heading of its level."""
    text = (ROOT / "README.md").read_text()
    assert "## Set-up" in text, "README.md has no '## Set-up' section"
    return text.split("## Set-up", 1)[1].split("\n## ", 1)[0]


def setup_blocks() -> list[str]:
    """Every ```sh block of the Set-up section, in order, stripped."""
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", setup_section(), flags=re.S)]


def fresh_machine_steps() -> list[list[str]]:
    """The first block's lines, each split into words as the shell would (a ``<placeholder>`` is one word)."""
    blocks = setup_blocks()
    assert blocks, "the Set-up section has no ```sh block"
    return [shlex.split(re.sub(r"<[^>]*>", "PLACEHOLDER", line)) for line in blocks[0].splitlines()]


def readme_commands() -> list[str]:
    """The set-up commands after the fresh-machine steps: [install and run the demo, install and run the tests]."""
    return setup_blocks()[1:]


def test_readme_starts_from_a_fresh_machine_clone_enter_make_and_activate_a_venv():
    steps = fresh_machine_steps()
    assert len(steps) == 4, f"clone, cd, make the venv, activate it: {steps}"
    clone, cd, make, activate = steps
    assert clone[:2] == ["git", "clone"] and len(clone) == 4, f"the code is cloned into a named folder: {clone}"
    assert cd == ["cd", clone[3]], f"the clone's folder ({clone[3]}) is then entered: {cd}"
    assert make[:3] == ["python3", "-m", "venv"] and len(make) == 4, f"a venv is made: {make}"
    assert activate in ([".", f"{make[3]}/bin/activate"], ["source", f"{make[3]}/bin/activate"]), \
        f"the venv made ({make[3]}) is activated: {activate}"
    assert f"/{make[3]}/" in (ROOT / ".gitignore").read_text().splitlines(), "the venv's folder is git-ignored"


def test_readme_names_the_python_that_pyproject_requires():
    required = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert required.startswith(">="), required
    version = required[2:]
    assert f"Python {version} or newer" in setup_section(), f"the Set-up section does not say Python {version} or newer"
    assert sys.version_info >= tuple(int(v) for v in version.split(".")), "this suite runs on the Python it requires"


def test_the_readme_venv_steps_run_and_give_a_venv_python(tmp_path):
    """The block's venv lines, run by bash as written (the clone replaced by an empty folder of the same name):
    afterwards ``python`` is the venv's, at the version pyproject.toml requires."""
    lines = setup_blocks()[0].splitlines()
    folder = fresh_machine_steps()[0][3]
    script = "\n".join(["set -e", f"mkdir {shlex.quote(folder)}", *lines[1:],
                        "python -c 'import sys; print(sys.prefix); print(sys.version_info >= (3, 11))'"])
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME", "PYTHONPATH")}
    out = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    prefix, new_enough = out.stdout.split()
    venv = fresh_machine_steps()[2][3]
    assert Path(prefix).resolve() == (tmp_path / folder / venv).resolve(), prefix
    assert new_enough == "True"


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
    assert report["frames"] == 120 and report["nan"] is False
    assert report["rejected_steps"] == 0
