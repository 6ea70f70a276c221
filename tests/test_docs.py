"""The docs never rot: every runnable snippet in docs/*.md runs, the API reference matches the code, links resolve.

A snippet is runnable when the line right before its ```python fence is ``<!-- runnable -->``. Each one runs
in a fresh interpreter (a fresh namespace and a fresh pygame/GL state) from the repository root, with SDL's
offscreen video driver (software surfaces and, through EGL, OpenGL windows work with no display) and the
dummy audio driver. Snippets bound their loops (``for frame in range(90)``), so none waits for a player.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
RUNNABLE = re.compile(r"^<!-- runnable -->\n```python\n(.*?)^```", re.S | re.M)
SNIPPET_SECONDS = 60
"""Time limit of one snippet [s] (they take 2–5 s each; the limit only stops a runaway loop)."""


def runnable_snippets() -> list[tuple[str, str]]:
    """[(``file.md:line``, code)] for every runnable block of every docs/*.md, in file order."""
    found = []
    for page in sorted(DOCS.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for match in RUNNABLE.finditer(text):
            line = text.count("\n", 0, match.start(1)) + 1
            found.append((f"{page.name}:{line}", match.group(1)))
    return found


SNIPPETS = runnable_snippets()


def test_the_guides_have_runnable_snippets():
    pages = {where.split(":")[0] for where, _ in SNIPPETS}
    for page in ("quickstart.md", "concepts.md", "guide-cape.md", "guide-flag.md", "plugins.md", "models.md",
                 "materials.md", "embedding.md"):
        assert page in pages, f"docs/{page} has no <!-- runnable --> python block"


def test_runnable_marker_is_always_followed_by_a_python_fence():
    for page in sorted(DOCS.glob("*.md")):
        lines = page.read_text(encoding="utf-8").splitlines()
        for k, line in enumerate(lines):
            if line.strip() == "<!-- runnable -->":
                nxt = lines[k + 1] if k + 1 < len(lines) else ""
                assert nxt == "```python", f"docs/{page.name}:{k + 1}: <!-- runnable --> followed by {nxt!r}"


def _install_example_plugin() -> None:
    """docs/plugins.md imports the worked plugin package: install it like tests/test_plugins.py does."""
    from importlib import metadata
    if not {"vortex", "sewing"} <= {ep.name for ep in metadata.entry_points(group="loom.plugins")}:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "-e",
                        str(ROOT / "examples" / "loom_vortex")], check=True)


@pytest.mark.parametrize("where,code", SNIPPETS, ids=[where for where, _ in SNIPPETS])
def test_runnable_snippet_runs(where, code, tmp_path):
    if "loom_vortex" in code:
        _install_example_plugin()
    env = dict(os.environ, SDL_VIDEODRIVER="offscreen", SDL_AUDIODRIVER="dummy", PYGAME_HIDE_SUPPORT_PROMPT="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    script = tmp_path / "snippet.py"
    script.write_text(code, encoding="utf-8")
    result = subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=SNIPPET_SECONDS)
    assert result.returncode == 0, f"docs/{where} failed:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"


def test_api_reference_is_up_to_date():
    sys.path.insert(0, str(DOCS))
    try:
        import gen_api
    finally:
        sys.path.remove(str(DOCS))
    current = (DOCS / "api.md").read_text(encoding="utf-8")
    assert current == gen_api.render(), "docs/api.md is out of date with the docstrings: run python docs/gen_api.py"


def test_relative_links_and_images_resolve():
    link = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
    pages = sorted(DOCS.glob("*.md")) + [ROOT / "README.md"]
    for page in pages:
        for target in link.findall(page.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            assert (page.parent / target).exists(), f"{page.relative_to(ROOT)}: link to missing {target}"


def test_images_are_small_pngs():
    images = sorted((DOCS / "images").glob("*.png"))
    assert images, "docs/images has no pictures"
    for image in images:
        head = image.read_bytes()[:24]
        assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{image.name} is not a PNG"
        width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
        assert width <= 960 and height <= 640, f"{image.name} is {width}×{height}, larger than 960×640"
