"""Write docs/api.md, Loom's API reference, from the code: its packages, modules and docstrings.

Run from anywhere: ``python docs/gen_api.py`` (``--check`` exits 1 if docs/api.md is out of date; the
test suite runs the same check in tests/test_docs.py). The reference cannot fall behind the code:

- the modules are found, not listed: each package in ``SECTIONS`` brings its own plain modules and
  every subpackage not listed elsewhere (``pkgutil``), so a new module appears on the next run;
- ``loom`` itself is its table of contents: every name of ``loom.__all__`` and the module it loads from;
- a package lists the names it exports from elsewhere, with links to where they are documented;
- every public class and function defined in a module: signature as written (read with ``ast``), the
  first paragraph of its docstring; a class adds every public attribute — its fields (dataclasses and
  NamedTuples, with the field docstrings that carry the units), its instance attributes (each
  ``self.name = …`` of its methods, with the docstring under it), its class attributes and properties —
  and its public methods, those of private base classes (``Checked``, ``Revisioned``) included; an enum
  (``Stage``, ``ClothSet``) lists its members in order; a constant with a docstring is listed, and a
  ``PluginGroup`` (``DefaultPlugins``) lists its members in build order with their docstrings;
- the exceptions: the types public calls raise and every Loom exception class (found, not listed).

Names starting with ``_`` are left out. Each module is imported (so a name must exist at run time).
"""
from __future__ import annotations

import ast
import enum
import importlib
import inspect
import pkgutil
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "api.md"

SECTIONS: list[tuple[str, list[str]]] = [
    ("The root package: `import loom`", ["loom"]),
    ("Engine: the App and its frame", ["loom.engine"]),
    ("Launch: the command line, the step boundary, compile-ahead, the recorder", ["loom.launch"]),
    ("Components: plain data", ["loom.components"]),
    ("Systems: the pipeline, its order, its plugins", ["loom.systems", "loom.systems.pipeline"]),
    ("Systems: the cloth models", ["loom.systems.xpbd", "loom.systems.models"]),
    ("Systems: collisions, forces, coupling, interaction", ["loom.systems.collision", "loom.systems.forces",
                                                             "loom.systems.coupling", "loom.systems.interaction"]),
    ("Systems: rendering and the window", ["loom.systems.render"]),
    ("Systems: shared kernels", ["loom.systems.shared"]),
    ("Prefabs: a cape, a flag, in one call", ["loom.prefabs"]),
    ("Files: meshes, bakes, snapshots, replays", ["loom.files"]),
]
"""(section title, packages) in the order the reference lists them; each package brings its modules."""

TOP_LEVEL = ("loom.engine", "loom.launch", "loom.components", "loom.systems", "loom.prefabs", "loom.files")
"""The root package's subpackages that the reference covers (games and benchmarks are programs, not API)."""


def anchor(module: str) -> str:
    """The heading anchor of a module's section (``## `loom.engine.app` `` → ``loomengineapp``)."""
    return module.replace(".", "")


def first_paragraph(doc: str | None) -> str:
    """The first paragraph of ``doc`` as one line ('' when there is none)."""
    if not doc:
        return ""
    paragraph = inspect.cleandoc(doc).split("\n\n")[0]
    return " ".join(line.strip() for line in paragraph.splitlines())


def rest_of(doc: str | None) -> str:
    """Everything after the first paragraph of ``doc`` ('' when there is nothing more)."""
    if not doc:
        return ""
    parts = inspect.cleandoc(doc).split("\n\n", 1)
    return parts[1].strip() if len(parts) > 1 else ""


def modules_of(package: str, listed: set[str]) -> list[str]:
    """``package`` and its modules, depth first: plain modules, then subpackages not listed elsewhere."""
    module = importlib.import_module(package)
    out = [package]
    if not hasattr(module, "__path__") or package == "loom":
        return out
    found = sorted(pkgutil.iter_modules(module.__path__), key=lambda m: (m.ispkg, m.name))
    for info in found:
        name = f"{package}.{info.name}"
        if info.name.startswith("_") or info.name == "__main__" or name in listed:
            continue
        out += modules_of(name, listed) if info.ispkg else [name]
    return out


def _args(node: ast.FunctionDef, drop_first: bool) -> str:
    """The argument list as written, without the first one (self, cls) when ``drop_first``.

    Defaults align to the end of the positional arguments, so dropping the first one leaves them as they are."""
    args = node.args
    if drop_first:
        args = ast.arguments(posonlyargs=args.posonlyargs[1:], args=args.args if args.posonlyargs else args.args[1:],
                             vararg=args.vararg, kwonlyargs=args.kwonlyargs, kw_defaults=args.kw_defaults,
                             kwarg=args.kwarg, defaults=args.defaults)
    return ast.unparse(args)


def function_signature(node: ast.FunctionDef, *, method: bool = False) -> str:
    """``name(args) -> returns`` as written in the source (self/cls dropped for methods)."""
    returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
    return f"{node.name}({_args(node, method)}){returns}"


def _decorators(node: ast.AST) -> set[str]:
    names = set()
    for d in getattr(node, "decorator_list", []):
        target = d.func if isinstance(d, ast.Call) else d
        names.add(ast.unparse(target).split(".")[-1])
    return names


def _is_init_false(value: ast.expr | None) -> bool:
    return (isinstance(value, ast.Call) and ast.unparse(value.func).endswith("field")
            and any(k.arg == "init" and isinstance(k.value, ast.Constant) and k.value.value is False
                    for k in value.keywords))


def _field_default(value: ast.expr | None) -> str:
    """`` = default`` of a field as written: a plain value, ``field(default=…)``, or ``checked_field(spec, default)``
    (its second positional argument); `` = …`` for a ``default_factory``; '' for a required field."""
    if value is None:
        return ""
    if isinstance(value, ast.Call) and ast.unparse(value.func).endswith("field"):
        if ast.unparse(value.func).endswith("checked_field") and len(value.args) > 1:
            return f" = {ast.unparse(value.args[1])}"
        for k in value.keywords:
            if k.arg == "default":
                return f" = {ast.unparse(k.value)}"
            if k.arg == "default_factory":
                return " = …"
        return ""
    return f" = {ast.unparse(value)}"


def _docstring_after(body: list[ast.stmt], k: int) -> str | None:
    """The string literal right after statement k (the house's attribute docstring), or None."""
    if k + 1 < len(body) and isinstance(body[k + 1], ast.Expr) and isinstance(body[k + 1].value, ast.Constant) \
            and isinstance(body[k + 1].value.value, str):
        return body[k + 1].value.value
    return None


def class_fields(node: ast.ClassDef) -> list[tuple[str, str, bool]]:
    """[(``name: type = default``, docstring, in __init__)] of the annotated fields, in order."""
    out = []
    body = node.body
    for k, item in enumerate(body):
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) \
                and not item.target.id.startswith("_") and "ClassVar" not in ast.unparse(item.annotation):
            doc = first_paragraph(_docstring_after(body, k))
            text = f"{item.target.id}: {ast.unparse(item.annotation)}{_field_default(item.value)}"
            out.append((text, doc, not _is_init_false(item.value)))
    return out


def class_signature(node: ast.ClassDef) -> str:
    """``Name(args)``: the explicit __init__'s arguments, else a dataclass's init fields."""
    for item in node.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            return f"{node.name}({_args(item, True)})"
    if _has_fields(node):
        return f"{node.name}({', '.join(text for text, _, init in class_fields(node) if init)})"
    return node.name


def _has_fields(node: ast.ClassDef) -> bool:
    """A dataclass or a NamedTuple: its annotated class-level names are its constructor's fields."""
    return "dataclass" in _decorators(node) or any(ast.unparse(b).split(".")[-1] == "NamedTuple" for b in node.bases)


def _statement_lists(node: ast.AST) -> list[list[ast.stmt]]:
    """Every statement list inside ``node`` (function bodies, if/for/with/try blocks), outermost first."""
    out = []
    for child in ast.walk(node):
        for key in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(child, key, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                out.append(block)
    return out


def _self_targets(statement: ast.stmt, me: str) -> list[str]:
    """Public names ``me.name`` assigned by ``statement`` (``me.a = …``, ``me.a: T = …``, ``me.a, me.b = …``)."""
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, ast.AnnAssign):
        targets = [statement.target]
    else:
        return []
    names = []
    for target in targets:
        for item in (target.elts if isinstance(target, ast.Tuple) else [target]):
            if isinstance(item, ast.Attribute) and isinstance(item.value, ast.Name) and item.value.id == me \
                    and not item.attr.startswith("_"):
                names.append(item.attr)
    return names


def instance_attributes(node: ast.ClassDef) -> list[tuple[str, str]]:
    """[(name, docstring)] of the public attributes the class's methods assign on ``self``: ``__init__``'s
    first, then the other methods' in source order; each documented by the string under its first
    documented assignment ('' when none is)."""
    methods = [item for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
               and item.args.args and "staticmethod" not in _decorators(item)
               and "classmethod" not in _decorators(item)]
    methods.sort(key=lambda m: m.name not in ("__init__", "__post_init__"))
    found: dict[str, str] = {}
    for method in methods:
        me = method.args.args[0].arg
        for block in _statement_lists(method):
            for k, statement in enumerate(block):
                for name in _self_targets(statement, me):
                    doc = first_paragraph(_docstring_after(block, k))
                    if not found.get(name):
                        found[name] = doc
    return list(found.items())


def class_attributes(node: ast.ClassDef) -> list[tuple[str, str]]:
    """[(``name: type = value`` as written, docstring)] of the public class-level names of a class that is not a
    dataclass or NamedTuple (annotated ones, ClassVar included, and plain assignments)."""
    out = []
    for k, item in enumerate(node.body):
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            name = item.target.id
            text = f"{name}: {ast.unparse(item.annotation)}{_field_default(item.value)}"
        elif isinstance(item, ast.Assign) and len(item.targets) == 1 and isinstance(item.targets[0], ast.Name):
            name = item.targets[0].id
            value = ast.unparse(item.value)
            text = f"{name} = {value}" if len(value) <= 60 and "\n" not in value else name
        else:
            continue
        if not name.startswith("_"):
            out.append((text, first_paragraph(_docstring_after(node.body, k))))
    return out


def private_bases(cls: object) -> list[tuple[type, ast.ClassDef]]:
    """(class, its ``ast`` node) of each base of ``cls`` that the reference does not document by itself (a
    ``_private`` class or one in a ``_private`` module of loom): their public members are listed with ``cls``."""
    out = []
    for base in getattr(cls, "__mro__", ())[1:]:
        module = getattr(base, "__module__", "") or ""
        if not module.startswith("loom.") or not any(part.startswith("_") for part in
                                                     [*module.split("."), base.__name__]):
            continue
        try:
            tree = ast.parse(inspect.getsource(base))
        except (OSError, TypeError):
            continue
        node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == base.__name__), None)
        if node is not None:
            out.append((base, node))
    return out


def document_enum(cls: type[enum.Enum], node: ast.ClassDef, lines: list[str]) -> None:
    """An enum: its members in order with their values, then the rest of its docstring as written."""
    lines += [f"### `{node.name}`", ""]
    doc = ast.get_docstring(node)
    if first_paragraph(doc):
        lines += [first_paragraph(doc), ""]
    lines += ["Members, in order: " + ", ".join(f"`{m.name}` ({m.value!r})" for m in cls) + ".", ""]
    more = rest_of(doc)
    if more:
        lines += ["```text", more, "```", ""]


def _methods(node: ast.ClassDef, origin: str = "") -> list[tuple[str, str, str, str]]:
    """[(name, ``signature``, label, docstring)] of the public methods and properties of a class body; ``origin``
    (a private base's name) is added to the label."""
    out: list[tuple[str, str, str, str]] = []
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and not item.name.startswith("_"):
            if item.name in {name for name, *_ in out}:                 # a property's setter: listed once
                continue
            kind = _decorators(item) & {"property", "classmethod", "staticmethod"}
            if "property" in kind:
                signature, label = item.name, "property"
            else:
                label = next(iter(kind), "")
                signature = function_signature(item, method=label != "staticmethod")
            label = ", ".join(filter(None, [label, f"from `{origin}`" if origin else ""]))
            out.append((item.name, signature, label, first_paragraph(ast.get_docstring(item))))
    return out


def document_class(node: ast.ClassDef, lines: list[str], cls: object = None) -> None:
    if isinstance(cls, type) and issubclass(cls, enum.Enum):
        document_enum(cls, node, lines)
        return
    lines += [f"### `{class_signature(node)}`", ""]
    doc = first_paragraph(ast.get_docstring(node))
    if doc:
        lines += [doc, ""]
    fields = class_fields(node) if _has_fields(node) else []
    members = _methods(node)
    bases = private_bases(cls)
    for base, base_node in bases:
        members += [m for m in _methods(base_node, base.__name__) if m[0] not in {n for n, *_ in members}]
    taken = {text.split(":")[0] for text, _, _ in fields} | {name for name, *_ in members}
    attributes: list[tuple[str, str]] = []
    for origin, body in [("", node), *[(base.__name__, base_node) for base, base_node in bases]]:
        tag = f" *(from `{origin}`)*" if origin else ""
        if not _has_fields(body):
            own = class_attributes(body)
        else:                                        # the class's own fields are listed above, a base's here
            own = [(text, field_doc) for text, field_doc, _ in class_fields(body)] if origin else []
        for text, attribute_doc in own + instance_attributes(body):
            name = text.split(":")[0].split(" =")[0]
            if name in taken:
                continue
            taken.add(name)
            attributes.append((f"`{text}`{tag}", attribute_doc))
    if fields:
        lines.append("Fields:")
        lines.append("")
        for text, field_doc, init in fields:
            note = "" if init else " *(derived)*"
            lines.append(f"- `{text}`{note}" + (f" — {field_doc}" if field_doc else ""))
        lines.append("")
    if attributes:
        lines.append("Attributes:")
        lines.append("")
        for text, attribute_doc in attributes:
            lines.append(f"- {text}" + (f" — {attribute_doc}" if attribute_doc else ""))
        lines.append("")
    if members:
        lines.append("Members:")
        lines.append("")
        for _, signature, label, member_doc in members:
            tag = f" *({label})*" if label else ""
            lines.append(f"- `{signature}`{tag}" + (f" — {member_doc}" if member_doc else ""))
        lines.append("")


def home(obj: object) -> str:
    """The module that defines ``obj`` (for links), or '' when it has none."""
    return getattr(obj, "__module__", None) or (obj.__name__ if isinstance(obj, ModuleType) else "")


def _set_names(value: object) -> str:
    """``in_set``/``before``/``after`` as written: enum members by name, several joined by ', '."""
    if value is None:
        return ""
    values = value if isinstance(value, (list, tuple, set)) else [value]
    return ", ".join(v.name if isinstance(v, enum.Enum) else str(v) for v in values)


def plugin_systems(group: object) -> tuple[dict[str, list[dict[str, str]]], object]:
    """Build ``group`` into a fresh App, recording which member adds which system; return
    ({plugin name: [{name, stage, set, before, after, run_if}, …]}, the App)."""
    from loom.engine import App, Stage
    from loom.engine.plugin import plugin_name
    from loom.engine.schedule import system_name

    app = App()
    added: dict[str, list[dict[str, str]]] = {}
    building = [""]
    original = app.add_system

    def recording(system, stage=Stage.SUBSTEP, *, name=None, in_set=None, before=None, after=None, run_if=None):
        added.setdefault(building[0], []).append(
            {"name": name or system_name(system), "stage": Stage(stage).name, "set": _set_names(in_set),
             "before": _set_names(before), "after": _set_names(after), "run_if": "yes" if run_if else ""})
        return original(system, stage, name=name, in_set=in_set, before=before, after=after, run_if=run_if)

    app.add_system = recording
    for plugin in group.plugins:
        building[0] = plugin_name(plugin)
        app.add_plugin(plugin)
    return added, app


def _plugin_group_lines(name: str, group: object, lines: list[str]) -> None:
    """A PluginGroup constant: its members in build order (docstring, home, systems added), then the
    frame it builds: every stage's systems in run order with their set and plugin."""
    from loom.engine import Stage

    members = group.members()
    added, app = plugin_systems(group)
    lines += [f"### `{name}`: {len(members)} plugins", ""]
    lines += [f"`{name}.members()`, in build order, with the systems each adds (stage, set):", ""]
    for plugin in group.plugins:
        where = home(plugin)
        label = getattr(plugin, "__name__", type(plugin).__name__)
        systems = "; ".join(f"`{s['name']}` ({s['stage']}" + (f", {s['set']}" if s["set"] else "") + ")"
                            for s in added.get(label, []))
        lines.append(f"- `{label}` ([`{where}`](#{anchor(where)})) — {first_paragraph(inspect.getdoc(plugin))}"
                     + (f" Adds {systems}." if systems else " Adds no system."))
    lines += ["", f"The frame `{name}` builds, stage by stage in run order (`app.schedule.names(stage)`; "
              "*run_if*: skipped for a whole step when its condition is false):", "",
              "| stage | system | set | before / after | plugin |", "|---|---|---|---|---|"]
    owner = {s["name"]: (plugin, s) for plugin, systems in added.items() for s in systems}
    for stage in Stage:
        for system in app.schedule.names(stage):
            plugin, s = owner[system]
            order = " ".join(filter(None, [f"before {s['before']}" if s["before"] else "",
                                           f"after {s['after']}" if s["after"] else ""]))
            tag = " *run_if*" if s["run_if"] else ""
            lines.append(f"| {stage.name} | `{system}`{tag} | {s['set']} | {order} | `{plugin}` |")
    lines.append("")
    app.close()


def constants(module: ModuleType, tree: ast.Module) -> list[tuple[str, str, str]]:
    """[(name, value as written or '', docstring)] of the public module-level names with a docstring."""
    out = []
    body = tree.body
    public = getattr(module, "__all__", None)
    for k, node in enumerate(body):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            name, value = node.target.id, node.value
        else:
            continue
        doc = _docstring_after(body, k)
        if name.startswith("_") or doc is None or (public is not None and name not in public):
            continue
        text = ast.unparse(value)
        out.append((name, text if len(text) <= 60 and "\n" not in text else "", doc))
    return out


def defining_module(package: str, name: str) -> tuple[str, str]:
    """(module, docstring) of the module under ``package`` that assigns the constant ``name`` at top level."""
    for module in [package] + modules_of(package, set()):
        path = Path(inspect.getsourcefile(importlib.import_module(module)))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for k, node in enumerate(tree.body):
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return module, _docstring_after(tree.body, k) or ""
    return package, ""


def document_root(module: ModuleType, lines: list[str]) -> None:
    """``loom``: every name it offers, what it is, and the module that documents it."""
    table: dict[str, str] = getattr(module, "_PUBLIC", {})
    lines += ["| name | what | documented in |", "|---|---|---|"]
    for name in module.__all__:
        obj = getattr(module, name)
        if isinstance(obj, ModuleType):
            where, what = obj.__name__, first_paragraph(obj.__doc__)
        elif inspect.isclass(obj) or inspect.isfunction(obj):
            where, what = home(obj), first_paragraph(inspect.getdoc(obj))
        else:                                            # a constant: documented where it is assigned
            where, doc = defining_module(table.get(name, "loom"), name)
            what = f"`{type(obj).__name__}`: {first_paragraph(doc)}".rstrip(": ")
        lines.append(f"| `loom.{name}` | {what.replace('|', '/')} | [`{where}`](#{anchor(where)}) |")
    lines += ["", "Subpackages: " + ", ".join(f"[`{p}`](#{anchor(p)})" for p in TOP_LEVEL)
              + "; `loom.games` and `loom.benchmarks` are programs (`python -m loom.games`, "
              "`python -m loom.benchmarks`).", ""]


def document_module(name: str, lines: list[str]) -> None:
    module = importlib.import_module(name)
    path = Path(inspect.getsourcefile(module))
    tree = ast.parse(path.read_text(encoding="utf-8"))
    source = path.relative_to(ROOT).as_posix()
    lines += [f"## `{name}`", "", f"Source: [`{source}`](../{source})", ""]
    doc = ast.get_docstring(tree)
    if first_paragraph(doc):
        lines += [first_paragraph(doc), ""]
    is_package = path.name == "__init__.py"
    if is_package and name != "loom" and rest_of(doc):
        lines += ["```text", rest_of(doc), "```", ""]
    if name == "loom":
        document_root(module, lines)
        return
    public = getattr(module, "__all__", None)
    defined = set()
    functions = []
    for node in tree.body:
        if not isinstance(node, (ast.ClassDef, ast.FunctionDef)) or node.name.startswith("_"):
            continue
        if public is not None and node.name not in public:
            continue
        if not hasattr(module, node.name):
            raise AttributeError(f"{name}.{node.name} is in the source but not importable")
        defined.add(node.name)
        if isinstance(node, ast.ClassDef):
            document_class(node, lines, getattr(module, node.name))
        else:
            functions.append(node)
    if functions:
        lines += ["Functions:", ""]
        for node in functions:
            doc = first_paragraph(ast.get_docstring(node))
            lines.append(f"- `{function_signature(node)}`" + (f" — {doc}" if doc else ""))
        lines.append("")
    plain = []
    for const, value, const_doc in constants(module, tree):
        obj = getattr(module, const)
        if hasattr(obj, "members") and hasattr(obj, "plugins"):
            _plugin_group_lines(const, obj, lines)
        else:
            plain.append(f"- `{const}`" + (f" = `{value}`" if value else "") + f" — {first_paragraph(const_doc)}")
        defined.add(const)
    if plain:
        lines += ["Constants:", ""] + plain + [""]
    if is_package and public:
        exported = []
        for export in public:
            if export in defined:
                continue
            obj = getattr(module, export)
            if isinstance(obj, ModuleType):
                where = obj.__name__
            elif inspect.isclass(obj) or callable(obj):
                where = home(obj)
            else:                                        # a constant: the module that assigns it
                where = defining_module(name, export)[0]
            exported.append(f"[`{export}`](#{anchor(where)})")
        if exported:
            lines += ["Exports, documented with their modules: " + ", ".join(exported) + ".", ""]


BUILTIN_ERRORS: list[tuple[str, str]] = [
    ("ValueError", "a value Loom refuses: out of range, of the wrong shape, not finite, an unknown name (a preset, "
                   "a model, a view), a file whose content cannot be read; the message names `Class.field` or the "
                   "argument and the value"),
    ("TypeError", "a value of the wrong kind (a string where a number goes, an object where an entity id or a "
                  "plugin goes); the message names the argument and what it expects"),
    ("KeyError", "an entity, component or resource that does not exist (`app.get`, `app.resource`, `app.despawn`, "
                 "a `VertexBuffers` whose cloth was despawned); the message names the entity or the type"),
    ("RuntimeError", "a call the current state forbids: an App used after `close()` or stepped from inside its own "
                     "step, a plugin that cannot build, no OpenGL context (the message says what to install or "
                     "set)"),
    ("OSError", "a file that cannot be opened, read or written (snapshots, OBJ/PLY, recordings), as the system "
                "reports it, with the path"),
]
"""The exception types a public call may raise, each with when (the reference's "Exceptions" section)."""


def loom_exceptions() -> list[tuple[type, str]]:
    """[(exception class, defining module)] of every exception class defined in Loom's packages (``TOP_LEVEL``,
    private modules included), sorted by name: found by importing each module, never listed by hand."""
    found: dict[str, tuple[type, str]] = {}
    for package in TOP_LEVEL:
        root = importlib.import_module(package)
        names = [package] + [info.name for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}.")
                             if not info.name.endswith("__main__")]
        for name in names:
            module = importlib.import_module(name)
            for obj in vars(module).values():
                if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == name:
                    found[f"{obj.__name__} {name}"] = (obj, name)
    return sorted(found.values(), key=lambda item: (item[0].__name__, item[1]))


def document_exceptions(lines: list[str]) -> None:
    """The "Exceptions" section: the built-in types public calls raise, then every Loom subclass of them."""
    lines += ["# Exceptions", "",
              "A public call of Loom raises only these built-in types, or Loom's own subclasses of them, and each "
              "message names the field or the likely cause. Anything else escaping a public call (a numba "
              "typing error, `ZeroDivisionError`, `OverflowError`, `numpy.linalg.LinAlgError`, …) is a bug: "
              "please report it.", "",
              "| type | raised for |", "|---|---|"]
    lines += [f"| `{name}` | {when} |" for name, when in BUILTIN_ERRORS]
    found = loom_exceptions()
    errors = [(cls, module) for cls, module in found if not issubclass(cls, Warning)]
    warned = [(cls, module) for cls, module in found if issubclass(cls, Warning)]
    lines += ["", "Loom's exception classes (each is also one of the types above, so `except ValueError` catches "
              "`SnapshotError`):", ""]
    _exception_table(errors, "raised for", lines)
    if warned:
        lines += ["Loom's warning classes (issued with `warnings.warn`, never raised: the call goes on; "
                  "`warnings.simplefilter(\"error\", …)` turns them into exceptions):", ""]
        _exception_table(warned, "issued for", lines)


def _exception_table(classes: list[tuple[type, str]], when: str, lines: list[str]) -> None:
    lines += [f"| class | subclass of | {when} | defined in |", "|---|---|---|---|"]
    for cls, module in classes:
        bases = ", ".join(f"`{base.__name__}`" for base in cls.__bases__)
        source = Path(inspect.getsourcefile(cls)).relative_to(ROOT).as_posix()
        where = f"[`{module}`](#{anchor(module)})" if not any(p.startswith("_") for p in module.split(".")) \
            else f"`{module}` ([source](../{source}))"
        lines.append(f"| `{cls.__name__}` | {bases} | {first_paragraph(inspect.getdoc(cls)).replace('|', '/')} "
                     f"| {where} |")
    lines.append("")


def render() -> str:
    """Return the text of docs/api.md."""
    listed = {package for _, packages in SECTIONS for package in packages}
    sections = [(title, [m for p in packages for m in modules_of(p, listed)]) for title, packages in SECTIONS]
    lines = ["# API reference", "",
             "<!-- Generated by `python docs/gen_api.py` from the code: edit the code, then rerun it. -->", "",
             "Every public module of Loom, with each public class and function: its signature as written and "
             "the first paragraph of its docstring. Units are in square brackets, SI throughout (metres, seconds, "
             "kilograms, y up). Everyday names are one import away (`import loom`, then `loom.App`, "
             "`loom.Cloth`, …; the first table). How the packages fit together: [architecture](architecture.md). "
             "Back to the [contents](index.md).", ""]
    lines += ["| section | modules |", "|---|---|"]
    for title, modules in sections:
        links = ", ".join(f"[`{m}`](#{anchor(m)})" for m in modules)
        lines.append(f"| {title} | {links} |")
    lines += ["| [Exceptions](#exceptions) | the types public calls raise; Loom's exception classes |", ""]
    for title, modules in sections:
        lines += [f"# {title}", ""]
        for name in modules:
            document_module(name, lines)
    document_exceptions(lines)
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    text = render()
    if "--check" in argv:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            print("docs/api.md is out of date: run python docs/gen_api.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)} ({text.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
