"""Check the house rules of ``docs/architecture.md`` with ``ast``: import cycles, private reaches, sizes.

``python tools/structure.py [PATH]`` prints one line per violation under ``src/gpusizer`` (or PATH)
and exits 1 when there is any. ``tests/test_structure.py`` runs the same checks.

- an import cycle between modules, counting imports inside functions (``TYPE_CHECKING`` blocks are
  not imports at run time and are not counted);
- a private reach: a module that imports or uses another module's ``_name`` (dunder names allowed);
- a module over ``MAX_MODULE_LINES`` lines, a function over ``MAX_FUNCTION_LINES`` lines of code
  (docstring, comments and blank lines not counted).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

#: The layers of ``docs/architecture.md``, bottom first: a module may import its own layer and the
#: ones below. Entries are module names; a package's name covers its submodules.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("gpusizer.units", "gpusizer.checks", "gpusizer.numeric", "gpusizer.datafiles", "gpusizer.presentation",
              "gpusizer.currency", "gpusizer.progress")),
    ("records", ("gpusizer.catalog", "gpusizer.records", "gpusizer.hardware")),
    ("descriptions", ("gpusizer.architecture", "gpusizer.precision", "gpusizer.engine_defaults", "gpusizer.engines",
                      "gpusizer.efficiency")),
    ("physics", ("gpusizer.memory", "gpusizer.roofline", "gpusizer.decode", "gpusizer.prefill", "gpusizer.images",
                 "gpusizer.interconnect", "gpusizer.parallel", "gpusizer.dequant")),
    ("engine step", ("gpusizer.unpack", "gpusizer.step", "gpusizer.configuration", "gpusizer.passes",
                     "gpusizer.speculation")),
    ("speed and estimate", ("gpusizer.measurement", "gpusizer.performance", "gpusizer.prefix_cache", "gpusizer.lora",
                            "gpusizer.offload", "gpusizer.multimodal",
                            "gpusizer.estimator")),
    ("questions", ("gpusizer.layouts", "gpusizer.grid", "gpusizer.sweeper", "gpusizer.serving",
                   "gpusizer.serving.kv_transfer", "gpusizer.serving.disaggregation", "gpusizer.cost",
                   "gpusizer.sweeper.chunks", "gpusizer.sweeper.reduce", "gpusizer.sweeper.output",
                   "gpusizer.sweeper.distributed",
                   "gpusizer.comparison", "gpusizer.ownership", "gpusizer.hosted", "gpusizer.selfhost",
                   "gpusizer.shortlister", "gpusizer.calibration", "gpusizer.readers")),
    ("io and presentation", ("gpusizer.hf", "gpusizer.gguf", "gpusizer.commandline",
                             "gpusizer.display", "gpusizer.plot", "gpusizer.curve_plot",
                             "gpusizer.cli",
                             "gpusizer.commands", "gpusizer.web", "gpusizer")),
)
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60
ROOT = Path(__file__).resolve().parents[1] / "src" / "gpusizer"


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = ("gpusizer", *path.relative_to(root).with_suffix("").parts)
        out[".".join(parts).removesuffix(".__init__")] = path
    return out


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def _package(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def imports(name: str, path: Path, known: dict[str, Path]) -> Iterator[tuple[str, str, int]]:
    """(imported module, imported name or '', line) for every gpusizer import of one module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_lines(tree)
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("gpusizer"):
                    yield alias.name, "", node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = _package(name, path).split(".")
                package = package[: len(package) - node.level + 1]
                base = ".".join([*package, base] if base else package)
            if not base.startswith("gpusizer"):
                continue
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in known:
                    yield full, "", node.lineno
                else:
                    yield base, alias.name, node.lineno


def _owner(module: str, known: dict[str, Path]) -> str:
    while module not in known and "." in module:
        module = module.rpartition(".")[0]
    return module


def _is_private(text: str) -> bool:
    return text.startswith("_") and not (text.startswith("__") and text.endswith("__"))


def private_reaches(known: dict[str, Path]) -> Iterator[str]:
    """Uses of another module's private names (``from m import _x``, ``m._x``, ``gpusizer._m``)."""
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        local_modules = {}
        for target, imported, line in imports(name, path, known):
            own = _package(name, path)
            inside = target == own or target.startswith(own + ".") or own.startswith(target)
            private_module = any(_is_private(part) for part in target.split(".")[1:])
            if private_module and not (inside and target.rpartition(".")[0] == own):
                yield f"{path}:{line}: {name} imports private module {target}"
            if imported and _is_private(imported) and target != name:
                yield f"{path}:{line}: {name} imports {target}.{imported}"
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom | ast.Import):
                for alias in node.names:
                    local_modules[alias.asname or alias.name.rpartition(".")[2]] = alias.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and _is_private(node.attr)
                    and node.value.id in local_modules):
                target = local_modules[node.value.id]
                full = target if target.startswith("gpusizer") else f"gpusizer.{target}"
                if full in known and full != name:
                    yield f"{path}:{node.lineno}: {name} uses {full}.{node.attr}"


def cycles(known: dict[str, Path]) -> list[list[str]]:
    """Strongly connected groups of more than one module in the import graph (Tarjan)."""
    graph = {n: sorted({_owner(t, known) for t, _, _ in imports(n, p, known)} - {n}) for n, p in known.items()}
    # a package's __init__ importing its own submodules is not a cycle with them
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, ()):
            if nxt not in known:
                continue
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    sys.setrecursionlimit(10_000)
    for node in graph:
        if node not in index:
            visit(node)
    return found


def layer(module: str) -> int | None:
    """Index in ``LAYERS`` of the longest entry that names ``module`` or a package above it."""
    best: tuple[int, int] | None = None
    for index, (_, names) in enumerate(LAYERS):
        for entry in names:
            if module == entry or module.startswith(entry + "."):
                if best is None or len(entry) > best[0]:
                    best = (len(entry), index)
    return None if best is None else best[1]


def upward_imports(known: dict[str, Path]) -> Iterator[str]:
    """Imports of a module in a higher layer than the importer's."""
    for name, path in known.items():
        own = layer(name)
        for target, imported, line in imports(name, path, known):
            if target == "gpusizer" and imported.startswith("__"):
                continue  # ``__version__`` of the package is metadata, not a layer
            theirs = layer(_owner(target, known))
            if own is not None and theirs is not None and theirs > own:
                yield f"{path}:{line}: {name} imports {_owner(target, known)}"


def _code_lines(node: ast.AST, source: list[str]) -> int:
    body = getattr(node, "body", [])
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        body = body[1:]
    lines = set()
    for child in body:
        for line in range(child.lineno, (child.end_lineno or child.lineno) + 1):
            text = source[line - 1].strip()
            if text and not text.startswith("#"):
                lines.add(line)
    return len(lines)


def sizes(known: dict[str, Path]) -> Iterator[str]:
    """Modules over ``MAX_MODULE_LINES`` lines and functions over ``MAX_FUNCTION_LINES`` lines of code."""
    for name, path in known.items():
        text = path.read_text(encoding="utf-8")
        source = text.splitlines()
        if len(source) > MAX_MODULE_LINES:
            yield f"{path}: {name} has {len(source)} lines (> {MAX_MODULE_LINES})"
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = _code_lines(node, source)
                if n > MAX_FUNCTION_LINES:
                    yield f"{path}:{node.lineno}: {name}.{node.name} has {n} lines of code (> {MAX_FUNCTION_LINES})"


def violations(root: Path = ROOT) -> list[str]:
    known = modules(root)
    out = [f"import cycle: {' <-> '.join(group)}" for group in cycles(known)]
    out += [f"{name}: no layer in LAYERS" for name in known if layer(name) is None]
    return out + list(private_reaches(known)) + list(upward_imports(known)) + list(sizes(known))


if __name__ == "__main__":
    found = violations(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT)
    print("\n".join(found) or "no violations")
    sys.exit(1 if found else 0)
