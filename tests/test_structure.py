"""The house rules of ``docs/architecture.md``, checked with ``ast`` (``tools/structure.py``; issue 13).

No import cycle (imports inside functions count), no module using another module's ``_private``
names, no module over 500 lines, no function over 60 lines of code, and imports that run down the
layers of ``docs/architecture.md`` only.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import structure  # noqa: E402

KNOWN = structure.modules()


def test_no_import_cycle() -> None:
    assert structure.cycles(KNOWN) == []


def test_no_private_reach() -> None:
    assert list(structure.private_reaches(KNOWN)) == []


def test_no_module_or_function_too_long() -> None:
    assert list(structure.sizes(KNOWN)) == []


def test_imports_run_down_the_layers() -> None:
    assert list(structure.upward_imports(KNOWN)) == []


def test_every_module_has_a_layer() -> None:
    assert [name for name in KNOWN if structure.layer(name) is None] == []


def test_the_checks_see_what_they_forbid(tmp_path: Path) -> None:
    package = tmp_path / "gpusizer"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "units.py").write_text("def f():\n    from gpusizer import cli\n    return cli._hidden\n")
    (package / "cli.py").write_text("from gpusizer import units\n_hidden = 1\n" + "x = 1\n" * 500)
    known = structure.modules(package)
    assert structure.cycles(known) == [["gpusizer.cli", "gpusizer.units"]]
    def said(found: object) -> list[str]:
        return [v.split(": ", 1)[1] for v in found]  # type: ignore[attr-defined]

    assert said(structure.private_reaches(known)) == ["gpusizer.units uses gpusizer.cli._hidden"]
    assert said(structure.sizes(known)) == ["gpusizer.cli has 502 lines (> 500)"]
    assert said(structure.upward_imports(known)) == ["gpusizer.units imports gpusizer.cli"]


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_module_docstring(name: str) -> None:
    import ast

    assert ast.get_docstring(ast.parse(KNOWN[name].read_text(encoding="utf-8"))), name


def test_the_architecture_page_names_every_module() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert [name for name in KNOWN if f"`{name}`" not in page] == []
