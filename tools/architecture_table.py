"""Print the "Every module" table of docs/architecture.md: each module's layer, size and summary.

``python tools/architecture_table.py`` prints the tables; ``--write`` puts them in place of the tables of
docs/architecture.md (everything from "### 0." on). ``tests/test_structure.py`` checks that
docs/architecture.md names every module.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

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


DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def write(doc: Path = DOC) -> None:
    """Replace the tables of ``doc`` (from its first "### 0." heading to the end) with ``tables()``."""
    text = doc.read_text(encoding="utf-8")
    doc.write_text(text[: text.index("\n### 0. ")] + tables(), encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write()
    else:
        print(tables(), end="")
