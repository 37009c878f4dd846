"""Print the "Every module" table of docs/architecture.md: each module's layer, size and summary.

``python tools/architecture_table.py`` prints the tables; ``tests/test_structure.py`` checks that
docs/architecture.md names every module.
"""

from __future__ import annotations

import ast

import structure


def summary(text: str) -> str:
    """The first paragraph of a docstring, on one line."""
    return " ".join(text.strip().split("\n\n")[0].split()).replace("|", "/")


def tables() -> str:
    known = structure.modules()
    lines = []
    for index, (name, _) in enumerate(structure.LAYERS):
        lines += [f"\n### {index}. {name}\n", "| module | lines | what it holds |", "|---|---:|---|"]
        for module in sorted(m for m in known if structure.layer(m) == index):
            source = known[module].read_text(encoding="utf-8")
            doc = summary(ast.get_docstring(ast.parse(source)) or "")
            lines.append(f"| `{module}` | {len(source.splitlines())} | {doc} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(tables(), end="")
