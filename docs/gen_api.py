"""Write docs/api.md, Loom's API reference, from the docstrings of its public modules.

Run from anywhere: ``python docs/gen_api.py`` (``--check`` exits 1 if docs/api.md is out of date; the
test suite runs the same check in tests/test_docs.py). For every module in ``MODULES``, in source order:
the module's first paragraph, then each public class and function with its signature and the first
paragraph of its docstring; a class also lists its fields (dataclasses, with the field docstrings that
carry the units), properties and public methods. Names starting with ``_`` and names a module imports
from elsewhere are left out. The module is imported (so a name must exist at run time) and its source is
read with ``ast`` (so signatures are shown as written, and field docstrings are found).
"""
from __future__ import annotations

import ast
import importlib
import inspect
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "api.md"

MODULES: list[tuple[str, list[str]]] = [
    ("Engine: the App and its frame", ["loom.engine.app", "loom.engine.schedule", "loom.engine.clock", "loom.engine.plugin"]),
    ("Engine: meshes, windows, the command line", ["loom.engine.mesh", "loom.engine.window", "loom.engine.runner"]),
    ("Components: plain data", ["loom.components.cloth", "loom.components.material", "loom.components.models", "loom.components.pin",
                                "loom.components.transform", "loom.components.collider", "loom.components.rigid_body",
                                "loom.components.wind", "loom.components.grab", "loom.components.tearing", "loom.components.gravity",
                                "loom.components.camera", "loom.components.render"]),
    ("Systems: the pipeline and its plugins", ["systems", "loom.systems.sets"]),
    ("Systems: rendering and the window", ["loom.systems.render.soft", "loom.systems.render.gl", "loom.systems.render.window"]),
]
"""(section title, modules) in the order the reference lists them."""


def first_paragraph(doc: str | None) -> str:
    """The first paragraph of ``doc`` as one line ('' when there is none)."""
    if not doc:
        return ""
    paragraph = inspect.cleandoc(doc).split("\n\n")[0]
    return " ".join(line.strip() for line in paragraph.splitlines())


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
    if value is None:
        return ""
    if isinstance(value, ast.Call) and ast.unparse(value.func).endswith("field"):
        for k in value.keywords:
            if k.arg == "default":
                return f" = {ast.unparse(k.value)}"
            if k.arg == "default_factory":
                return " = …"
        return ""
    return f" = {ast.unparse(value)}"


def class_fields(node: ast.ClassDef) -> list[tuple[str, str, bool]]:
    """[(``name: type = default``, docstring, in __init__)] of the annotated fields, in order."""
    out = []
    body = node.body
    for k, item in enumerate(body):
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) \
                and not item.target.id.startswith("_"):
            doc = ""
            if k + 1 < len(body) and isinstance(body[k + 1], ast.Expr) \
                    and isinstance(body[k + 1].value, ast.Constant) and isinstance(body[k + 1].value.value, str):
                doc = first_paragraph(body[k + 1].value.value)
            text = f"{item.target.id}: {ast.unparse(item.annotation)}{_field_default(item.value)}"
            out.append((text, doc, not _is_init_false(item.value)))
    return out


def class_signature(node: ast.ClassDef) -> str:
    """``Name(args)``: the explicit __init__'s arguments, else a dataclass's init fields."""
    for item in node.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            return f"{node.name}({_args(item, True)})"
    if "dataclass" in _decorators(node):
        return f"{node.name}({', '.join(text for text, _, init in class_fields(node) if init)})"
    return node.name


def document_class(node: ast.ClassDef, lines: list[str]) -> None:
    lines += [f"### `{class_signature(node)}`", ""]
    doc = first_paragraph(ast.get_docstring(node))
    if doc:
        lines += [doc, ""]
    is_dataclass = "dataclass" in _decorators(node)
    fields = class_fields(node) if is_dataclass else []
    members = []
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and not item.name.startswith("_"):
            kind = _decorators(item) & {"property", "classmethod", "staticmethod"}
            if "property" in kind:
                members.append((f"{item.name}", "property", first_paragraph(ast.get_docstring(item))))
            else:
                label = next(iter(kind), "")
                members.append((function_signature(item, method=label != "staticmethod"), label,
                                first_paragraph(ast.get_docstring(item))))
    if fields:
        lines.append("Fields:")
        lines.append("")
        for text, doc, init in fields:
            note = "" if init else " *(derived)*"
            lines.append(f"- `{text}`{note}" + (f" — {doc}" if doc else ""))
        lines.append("")
    if members:
        lines.append("Members:")
        lines.append("")
        for signature, label, doc in members:
            tag = f" *({label})*" if label else ""
            lines.append(f"- `{signature}`{tag}" + (f" — {doc}" if doc else ""))
        lines.append("")


def document_module(name: str, lines: list[str]) -> None:
    module = importlib.import_module(name)
    path = Path(inspect.getsourcefile(module))
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lines += [f"## `{name}`", "", f"Source: [`{path.relative_to(ROOT).as_posix()}`]"
              f"(../{path.relative_to(ROOT).as_posix()})", ""]
    doc = first_paragraph(ast.get_docstring(tree))
    if doc:
        lines += [doc, ""]
    public = getattr(module, "__all__", None)
    functions = []
    for node in tree.body:
        if not isinstance(node, (ast.ClassDef, ast.FunctionDef)) or node.name.startswith("_"):
            continue
        if public is not None and node.name not in public:
            continue
        if not hasattr(module, node.name):
            raise AttributeError(f"{name}.{node.name} is in the source but not importable")
        if isinstance(node, ast.ClassDef):
            document_class(node, lines)
        else:
            functions.append(node)
    if functions:
        lines += ["Functions:", ""]
        for node in functions:
            doc = first_paragraph(ast.get_docstring(node))
            lines.append(f"- `{function_signature(node)}`" + (f" — {doc}" if doc else ""))
        lines.append("")


def render() -> str:
    """Return the text of docs/api.md."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    lines = ["# API reference", "",
             "<!-- Generated by `python docs/gen_api.py` from the docstrings: edit the code, then rerun it. -->", "",
             "Every public class and function of Loom's public modules, with its signature as written and the "
             "first paragraph of its docstring. Units are in square brackets, SI throughout (metres, seconds, "
             "kilograms, y up). Back to the [contents](index.md).", ""]
    lines += ["| section | modules |", "|---|---|"]
    for title, modules in MODULES:
        links = ", ".join(f"[`{m}`](#{m.replace('.', '')})" for m in modules)
        lines.append(f"| {title} | {links} |")
    lines.append("")
    for title, modules in MODULES:
        lines += [f"# {title}", ""]
        for name in modules:
            document_module(name, lines)
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
