"""The one installed package: what the wheel holds, that it works from a user's game folder, and who imports what.

Loom installs as one package, ``loom``, whose root is this repository (``package-dir = {"loom" = "."}``):
``engine/`` is ``loom.engine``, ``launch/`` is ``loom.launch``, ``systems/`` is ``loom.systems`` and so on. These tests keep it that way:

- the wheel holds ``loom/…`` only, with every subpackage, and the README's quick start runs from it in a fresh
  virtual environment, from a folder with its own ``components.py``, ``systems.py`` and ``engine/``;
- no module imports a bare top-level ``engine``, ``launch``, ``systems``, ``components``, ``games``, ``benchmarks``
  or ``files`` (they exist only inside the repository, never once installed);
- every import of ``loom.*`` follows the import rules (``RULES`` below; docs/architecture.md states the same), and
  the frame (``loom.engine``) loads none of the launch tooling (``loom.launch``) when imported;
- pyproject.toml lists exactly the folders that are packages, so none is left out of the wheel.
"""
from __future__ import annotations

import ast
import importlib
import json
import os
import re
import shutil
import site
import subprocess
import sys
import tomllib
import zipfile
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BARE = ("engine", "launch", "systems", "components", "games", "benchmarks", "files")
"""The repository's top-level folders: importable only as ``loom.<name>``."""
NOT_PACKAGES = ("tests", "docs", "examples", "scripts")
"""Top-level folders that are not part of the installed package."""
SKIP_PARTS = ("__pycache__", "build", "dist")


def _skipped(rel: Path) -> bool:
    return any(part in SKIP_PARTS or part.startswith(".") or part.endswith(".egg-info") for part in rel.parts)


@cache
def package_folders() -> dict[str, Path]:
    """Dotted name → folder of every package of ``loom`` in the repository: the folders with ``__init__.py``."""
    found = {}
    for init in ROOT.rglob("__init__.py"):
        rel = init.parent.relative_to(ROOT)
        if _skipped(rel) or (rel.parts and rel.parts[0] in NOT_PACKAGES):
            continue
        found[".".join(("loom", *rel.parts))] = init.parent
    return found


@cache
def loom_modules() -> dict[str, Path]:
    """Dotted name → file of every module of ``loom`` (packages by their ``__init__.py``)."""
    modules = {}
    for package, folder in package_folders().items():
        for path in folder.glob("*.py"):
            modules[package if path.name == "__init__.py" else f"{package}.{path.stem}"] = path
    return modules


def python_files() -> list[Path]:
    """Every Python file of the project: the package's modules, the root ``__init__.py``, examples, docs, tests."""
    files = {ROOT / "__init__.py"}
    for folder in (*BARE, "examples", "tests"):
        files |= {p for p in (ROOT / folder).rglob("*.py") if not _skipped(p.relative_to(ROOT))}
    files |= set((ROOT / "docs").glob("*.py")) | set((ROOT / "scripts").glob("*.py"))
    return sorted(files)


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


# --- a. the wheel ------------------------------------------------------------------------------------------------
def _build_wheel(tmp: Path) -> Path:
    """Build the repository's wheel from a copy of it (a build writes build/ and *.egg-info next to the sources,
    and other people work in this tree); return the wheel's path."""
    source = tmp / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", "__pycache__", "*.egg-info", "build", "dist",
                                                                ".pytest_cache", ".hypothesis", ".venv", "*.nbi",
                                                                "*.nbc"))
    wheels = tmp / "wheels"
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(source)],
                         capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, f"pip wheel failed:\n{out.stdout}\n{out.stderr}"
    built = sorted(wheels.glob("*.whl"))
    assert len(built) == 1, built
    return built[0]


def _quick_start() -> str:
    """The README's quick start: the first ```python block under "## Quick start"."""
    text = (ROOT / "README.md").read_text()
    assert "\n## Quick start" in text, "README.md has no '## Quick start' section"
    section = text.split("\n## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert blocks, "README.md's quick start has no ```python block"
    return blocks[0]


_DECOY = ("raise ImportError(\"Loom imported the game's own {name!r} (a bare top-level name): Loom's modules "
          "import loom.{name} only\")\n")


def _game_folder(folder: Path) -> None:
    """A user's game folder whose own modules have Loom's folder names (and an unrelated ``Gravity``)."""
    folder.mkdir()
    for name in BARE:
        path = folder / f"{name}.py" if name != "engine" else folder / "engine" / "__init__.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(_DECOY.format(name=name) + "\n\nclass Gravity:\n    \"\"\"The game's own, unrelated.\"\"\"\n")


def _venv_seeing_our_packages(venv: Path) -> Path:
    """Make a fresh virtual environment at ``venv`` that sees the packages this interpreter sees; return its python.

    ``--system-site-packages`` is not that: it shows the *base* interpreter's site-packages, and when the suite
    itself runs inside a virtual environment (the README's set-up) the base has none of Loom's dependencies.
    Instead the new environment gets a ``.pth`` file naming this interpreter's site directories (a venv's own,
    the base's when it shows them, the user's), appended to its ``sys.path`` after its own site-packages, so a
    package installed into it wins over ours. Only the directories are added: the ``.pth`` files inside them
    are not run, so an editable install of loom there plants no import hook in the new environment."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    own = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    ours = [*site.getsitepackages(), *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])]
    seen = [d for d in dict.fromkeys(ours) if Path(d).is_dir() and Path(d).resolve() != Path(own).resolve()]
    Path(own, "_loom_test_outer_site.pth").write_text("".join(f"{d}\n" for d in seen))
    return python


def test_the_wheel_holds_loom_only_and_the_quick_start_runs_from_it_in_a_fresh_venv(tmp_path):
    wheel = _build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        top_level = [n for n in names if n.endswith(".dist-info/top_level.txt")]
        declared = archive.read(top_level[0]).decode().split() if top_level else ["loom"]
    tops = {name.split("/", 1)[0] for name in names}
    dist_info = {t for t in tops if t.endswith(".dist-info")}
    assert len(dist_info) == 1 and tops - dist_info == {"loom"}, f"the wheel's top-level entries: {sorted(tops)}"
    assert not tops & {*BARE, *NOT_PACKAGES}
    assert declared == ["loom"], f"top_level.txt names {declared}"
    in_wheel = {".".join(n.split("/")[:-1]) for n in names if n.startswith("loom/") and n.endswith("/__init__.py")}
    assert in_wheel == set(package_folders()), (f"missing from the wheel: {sorted(set(package_folders()) - in_wheel)}; "
                                                f"not in the repository: {sorted(in_wheel - set(package_folders()))}")
    modules = {"loom/" + path.relative_to(ROOT).as_posix() for path in loom_modules().values()}
    assert modules <= set(names), f"modules missing from the wheel: {sorted(modules - set(names))}"

    venv = tmp_path / "venv"
    python = _venv_seeing_our_packages(venv)
    out = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q",
                          str(wheel)], capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, f"installing the wheel failed:\n{out.stdout}\n{out.stderr}"

    game = tmp_path / "my_game"
    _game_folder(game)
    (game / "quick_start.py").write_text(
        _quick_start() + "\n\nimport json as _json, sys as _sys\nimport loom as _loom\n"
        "print('LAYOUT', _json.dumps({'loom': _loom.__file__, 'modules': sorted(_sys.modules),\n"
        "    'finders': [getattr(f, '__module__', '') + '.' + getattr(f, '__qualname__', type(f).__qualname__)\n"
        "                for f in _sys.meta_path]}))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    out = subprocess.run([str(python), "quick_start.py"], cwd=game, capture_output=True, text=True, timeout=300,
                         env={**env, "SDL_AUDIODRIVER": "dummy"})
    assert out.returncode == 0, f"the README's quick start failed in a fresh venv:\n{out.stderr}"
    assert "(1024, 3)" in out.stdout, out.stdout
    layout = json.loads(out.stdout.split("LAYOUT ", 1)[1])
    loom_file = Path(layout["loom"]).resolve()
    # an editable install of loom may sit in the site directories the venv sees too (its hook is not run there,
    # and were it run, it would come after the PathFinder that finds the venv's copy); the venv's copy must win
    assert loom_file.is_relative_to(venv.resolve()), (f"loom came from {loom_file}, not the venv's wheel "
                                                      f"(meta path: {layout['finders']})")
    assert not loom_file.is_relative_to(ROOT)
    assert not set(layout["modules"]) & set(BARE), "a bare top-level Loom folder name was imported"


# --- b. no bare top-level imports ---------------------------------------------------------------------------------
def _imports(tree: ast.AST):
    """Yield (line, imported module, source text) for every import in ``tree``, nested ones included; an
    ``importlib.import_module("x")`` or ``__import__("x")`` with a constant name counts as an import of x."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, 0, f"import {alias.name}", None
        elif isinstance(node, ast.ImportFrom):
            dots = "." * node.level
            for alias in node.names:
                yield node.lineno, node.module or "", node.level, f"from {dots}{node.module or ''} import {alias.name}", \
                    alias.name
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and ((isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                   or (isinstance(node.func, ast.Name) and node.func.id in ("import_module", "__import__")))):
            yield node.lineno, node.args[0].value, 0, ast.unparse(node), None


def test_no_module_imports_a_bare_top_level_loom_folder():
    bad = []
    for path in python_files():
        for line, module, level, text, _ in _imports(ast.parse(path.read_text(), str(path))):
            if level == 0 and module.split(".", 1)[0] in BARE:
                bad.append(f"{_rel(path)}:{line}: {text}")
    assert not bad, ("bare top-level imports (write loom.engine, loom.systems, … — the bare names do not exist "
                     "once installed):\n" + "\n".join(bad))


# --- c. the import rules ------------------------------------------------------------------------------------------
LOWER = ("loom.engine", "loom.launch", "loom.components", "loom.systems.sets", "loom.systems.shared")
RULES: dict[str, tuple[str, ...] | None] = {
    "loom.engine": ("loom.engine",),
    "loom.launch": ("loom.engine", "loom.launch"),
    "loom.components": ("loom.engine", "loom.components"),
    "loom.systems.sets": LOWER,
    "loom.systems.shared": LOWER,
    # a concern (loom.systems.<concern>): LOWER and itself, added in _allowed
    # loom.systems' __init__ and loom.systems.registry: any loom.systems.*, over what every system uses
    "loom.systems": ("loom.engine", "loom.launch", "loom.components", "loom.systems"),
    "loom.files": None,                # anything in loom
    "loom.benchmarks": None,
    "loom": None,                      # the lazy table of contents
    "loom.games": (),                  # the public API only: _public_import
    "loom.prefabs": ("loom.engine", "loom.components", "loom.systems", "loom.prefabs"),
}
"""Who may import what inside loom (the lead's table; docs/architecture.md states the same): a rule names the
packages whose modules (and subpackages) a module may import; None allows anything in loom."""

LAZY_FORWARDS = {("loom.engine", "loom.launch"), ("loom.engine.app", "loom.launch.runner")}
"""(importer, module) imports outside the rules, allowed inside a function only (loaded on first use, never when
the importer is): ``loom.engine``'s PEP 562 forward of the runner's old names (``loom.engine.run_app`` …) and
``App.run``, which runs the shared command line."""


def _concerns() -> set[str]:
    return {name.split(".")[2] for name in package_folders()
            if name.count(".") == 2 and name.startswith("loom.systems.") and name != "loom.systems.shared"}


def rule_of(module: str) -> str:
    """The row of the rules a module of loom falls under, by its path."""
    parts = module.split(".")
    if len(parts) == 1:
        return "loom"
    if parts[1] != "systems":
        return f"loom.{parts[1]}"
    if len(parts) == 2 or parts[2] == "registry":
        return "loom.systems"
    return f"loom.systems.{parts[2]}"


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


@cache
def _exported(package: str) -> frozenset[str]:
    """The package-level names of a package: its ``__init__``'s ``__all__`` (a literal, else the imported value)."""
    tree = ast.parse(loom_modules()[package].read_text())
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) \
            else []
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
            try:
                return frozenset(ast.literal_eval(node.value))
            except ValueError:
                return frozenset(importlib.import_module(package).__all__)
    return frozenset(name for node in tree.body for name in _bound(node) if not name.startswith("_"))


def _bound(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [t.id for t in targets if isinstance(t, ast.Name)]
    return []


def public_packages() -> set[str]:
    """The packages a game may import names from: loom and the package level of its subpackages."""
    return {"loom", "loom.engine", "loom.launch", "loom.components", "loom.systems", "loom.files",
            *(f"loom.systems.{c}" for c in _concerns())}


def _public_import(module: str, name: str | None) -> str | None:
    """Why a game's import is not of the public API, or None if it is."""
    if module not in public_packages():
        return f"{module} is a deep module; import from {', '.join(sorted(public_packages()))}"
    if name is not None:
        if name.startswith("_"):
            return f"{name} is private"
        if name != "*" and name not in _exported(module):
            return f"{name} is not a package-level name of {module} (its __all__)"
    return None


def _resolve(importer: str, is_package: bool, module: str, level: int) -> str:
    """The absolute name of a (possibly relative) import made by ``importer``."""
    if level == 0:
        return module
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def violations() -> list[str]:
    """Every import of loom.* that its module's rule does not allow, as 'file:line: import — why'."""
    bad = []
    modules = loom_modules()
    concerns = _concerns()
    for importer, path in sorted(modules.items()):
        rule = rule_of(importer)
        if rule not in RULES and rule.removeprefix("loom.systems.") not in concerns:
            bad.append(f"{_rel(path)}: {importer} falls under no import rule ({rule}); add one to the rules")
            continue
        tree = ast.parse(path.read_text(), str(path))
        in_functions = {id(node) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                        for node in ast.walk(f)}
        lazy = {node.lineno for node in ast.walk(tree) if id(node) in in_functions
                and isinstance(node, (ast.Import, ast.ImportFrom, ast.Call))}
        for line, module, level, text, name in _imports(tree):
            module = _resolve(importer, path.name == "__init__.py", module, level)
            if not _within(module, "loom"):
                continue
            if (importer, module) in LAZY_FORWARDS and line in lazy:
                continue
            target = f"{module}.{name}" if name and f"{module}.{name}" in modules else module
            if rule == "loom.games":
                why = _public_import(module, name)
                if why:
                    bad.append(f"{_rel(path)}:{line}: {text} — loom.games uses the public API only: {why}")
                continue
            allowed = RULES.get(rule, (*LOWER, rule))
            if allowed is not None and not any(_within(target, p) for p in allowed):
                bad.append(f"{_rel(path)}:{line}: {text} — {rule} may import only {', '.join(allowed)}")
    return bad


def test_every_import_inside_loom_follows_the_import_rules():
    bad = violations()
    assert not bad, "imports that break the import rules (docs/architecture.md):\n" + "\n".join(bad)


def test_the_rule_check_catches_what_it_should():
    """The checker itself: a concern importing another concern, engine importing components, a game importing a
    deep module or a private name — each is refused; the allowed shapes pass."""
    concerns = sorted(_concerns())
    assert {"pipeline", "xpbd", "models", "collision", "render"} <= set(concerns)
    assert rule_of("loom.systems.models.implicit.solver") == "loom.systems.models"
    assert rule_of("loom.systems.registry") == rule_of("loom.systems") == "loom.systems"
    assert rule_of("loom.systems.shared.batch") == "loom.systems.shared"
    assert _public_import("loom.systems.render.gl", "GLRenderPlugin") is not None
    assert _public_import("loom.engine", "_private") is not None
    assert _public_import("loom.engine", "App") is None and _public_import("loom", "GLRenderPlugin") is None
    assert _public_import("loom.systems.render", "GLRenderPlugin") is None
    assert _resolve("loom.systems.models.verlet", False, "shared", 2) == "loom.systems.shared"
    assert _resolve("loom.systems.models", True, "verlet", 1) == "loom.systems.models.verlet"
    assert rule_of("loom.launch.step_boundary") == "loom.launch"
    assert not any(_within("loom.launch.runner", p) for p in RULES["loom.engine"])      # the frame: no launch code
    assert not any(_within("loom.systems.xpbd", p) for p in RULES["loom.launch"])      # launch: the frame only


# --- d. pyproject lists every package ----------------------------------------------------------------------------
def test_pyproject_lists_exactly_the_folders_that_are_packages():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setuptools["package-dir"] == {"loom": "."}
    listed = setuptools["packages"]
    assert len(listed) == len(set(listed)), f"listed twice: {sorted({p for p in listed if listed.count(p) > 1})}"
    folders = set(package_folders())
    assert set(listed) == folders, (f"folders with __init__.py missing from pyproject.toml's packages: "
                                    f"{sorted(folders - set(listed))}; listed but not a package folder: "
                                    f"{sorted(set(listed) - folders)}")


def test_importing_the_frame_loads_no_launch_tooling():
    """``import loom.engine`` (and an App stepped with a system of its own) loads nothing of ``loom.launch``: the
    frame knows its step boundary only as a hook; ``loom.engine.run_app`` still loads the runner on first use."""
    code = ("import sys, loom.engine\n"
            "app = loom.engine.App(dt=0.01, substeps=2)\n"
            "app.add_system(lambda a, dt: None, loom.engine.Stage.PRE_STEP, name='noop')\n"
            "app.step(3)\n"
            "before = sorted(m for m in sys.modules if m.startswith('loom.launch'))\n"
            "run_app = loom.engine.run_app\n"
            "print(before, run_app.__module__, app.step_boundary is None, app.step_threads)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT.parent, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]", "loom.launch.runner", "True", "1"], out.stdout
