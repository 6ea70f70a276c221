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
    result = _run_snippet(code, tmp_path)
    assert result.returncode == 0, f"docs/{where} failed:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"


def _run_snippet(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """Run ``code`` as a user would: the installed ``loom`` only (the repository folder is not on the path,
    so a bare ``import engine`` fails as it does once installed), offscreen SDL, dummy audio."""
    env = dict(os.environ, SDL_VIDEODRIVER="offscreen", SDL_AUDIODRIVER="dummy", PYGAME_HIDE_SUPPORT_PROMPT="1")
    script = tmp_path / "snippet.py"
    script.write_text(code, encoding="utf-8")
    return subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=SNIPPET_SECONDS)


def _readme_quick_start() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Quick start"):]
    return re.search(r"^```python\n(.*?)^```", section, re.S | re.M).group(1)


def test_readme_quick_start_runs(tmp_path):
    code = _readme_quick_start()
    assert code.startswith("import loom\n"), "the README's quick start starts with `import loom`"
    result = _run_snippet(code, tmp_path)
    assert result.returncode == 0, f"README quick start failed:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"


def test_snippets_take_everyday_names_from_loom():
    """A name the root package offers (``loom.Cloth``, ``loom.mesh`` …) is written ``loom.Name`` in every doc
    snippet and in the README, never imported from a deep module; deep imports are for advanced names only."""
    import loom
    deep = re.compile(r"^from (loom\.[\w.]+) import \(?([\w, ]+)", re.M)
    blocks = [(where, code) for where, code in SNIPPETS]
    for page in sorted(DOCS.glob("*.md")) + [ROOT / "README.md"]:
        text = page.read_text(encoding="utf-8")
        blocks += [(page.name, m.group(1)) for m in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M)]
    bad = []
    for where, code in blocks:
        for module, names in deep.findall(code):
            everyday = [n.strip() for n in names.split(",") if n.strip() in loom.__all__]
            if everyday:
                bad.append(f"{where}: from {module} import {', '.join(everyday)} (use loom.{everyday[0]})")
    assert not bad, "\n".join(bad)


def test_api_reference_is_up_to_date():
    sys.path.insert(0, str(DOCS))
    try:
        import gen_api
    finally:
        sys.path.remove(str(DOCS))
    current = (DOCS / "api.md").read_text(encoding="utf-8")
    assert current == gen_api.render(), "docs/api.md is out of date with the docstrings: run python docs/gen_api.py"


def _api_text() -> str:
    return (DOCS / "api.md").read_text(encoding="utf-8")


def test_every_default_plugin_is_in_the_api_reference():
    """Each member of DefaultPlugins has its own entry (heading and docstring) and its line in the members list."""
    import inspect

    from loom import DefaultPlugins
    api = _api_text()
    assert len(DefaultPlugins.members()) == len(DefaultPlugins.plugins)
    for plugin in DefaultPlugins.plugins:
        name = plugin.__name__
        assert re.search(rf"^### `{name}[(`]", api, re.M), f"docs/api.md has no entry for {name}"
        assert re.search(rf"^- `{name}` \(", api, re.M), f"docs/api.md's DefaultPlugins list lacks {name}"
        doc = inspect.cleandoc(plugin.__doc__ or "").split("\n\n")[0]
        assert doc and " ".join(doc.split()) in api, f"docs/api.md lacks {name}'s docstring"


def test_api_reference_covers_the_public_packages():
    """``loom`` and its names, every subpackage of loom.systems, the enums' members, loom.files."""
    import pkgutil

    import loom
    import loom.systems
    api = _api_text()
    packages = ["loom", "loom.engine", "loom.launch", "loom.components", "loom.systems", "loom.systems.sets",
                "loom.files"]
    packages += [f"loom.systems.{m.name}" for m in pkgutil.iter_modules(loom.systems.__path__)]
    for package in packages:
        assert f"## `{package}`\n" in api, f"docs/api.md has no section for {package}"
    for name in loom.__all__:
        assert f"| `loom.{name}` |" in api, f"docs/api.md's table of `import loom` lacks loom.{name}"
    for enum_type in (loom.Stage, loom.ClothSet):
        members = ", ".join(f"`{m.name}` ({m.value!r})" for m in enum_type)
        assert f"Members, in order: {members}." in api, f"docs/api.md does not list {enum_type.__name__}'s members"


def test_architecture_is_linked_and_states_the_import_rules():
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    for page in (DOCS / "index.md", ROOT / "README.md"):
        assert "architecture.md" in page.read_text(encoding="utf-8"), f"{page.name} does not link architecture.md"
    rows = {line.split("|")[1].strip().split(" ")[0] for line in text.splitlines() if line.startswith("| `loom")}
    expected = {"`loom.engine`", "`loom.launch`", "`loom.components`", "`loom.systems.sets`,", "`loom.systems.<concern>`",
                "`loom.systems`", "`loom.prefabs`", "`loom.files`", "`loom.games`", "`loom.benchmarks`", "`loom`"}
    assert rows == expected, f"docs/architecture.md's import-rule rows: {sorted(rows)}"
    for heading in ("## One frame", "## Add a system", "## Add a collider shape", "## Add a cloth model"):
        assert heading in text, f"docs/architecture.md has no '{heading}'"


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
