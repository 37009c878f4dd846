"""MkDocs hooks (``hooks`` in mkdocs.yml): build-time content that must never go stale.

``<!-- gallery -->`` in a page becomes a table of every ``examples/*.py`` script with the first line
of its docstring, so a new example appears in the documentation without editing any page.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
MARKER = "<!-- gallery -->"


def gallery() -> str:
    """A Markdown table: script and the title line of its docstring, in file-name order."""
    rows = ["| script | what it answers |", "| --- | --- |"]
    for script in sorted(EXAMPLES.glob("*.py")):
        doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8"))) or ""
        title = doc.strip().splitlines()[0].replace("|", "\\|") if doc.strip() else ""
        rows.append(f"| `examples/{script.name}` | {title} |")
    return "\n".join(rows)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    return markdown.replace(MARKER, gallery()) if MARKER in markdown else markdown
