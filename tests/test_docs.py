"""Documentation: the site builds in strict mode, every page is in the navigation, generated pages are current."""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _tool(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_catalogue_pages_are_up_to_date():
    for path, text in _tool("catalogue_tables").pages().items():
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.name} is out of date: run python tools/catalogue_tables.py"
        )


def test_every_page_is_in_the_navigation():
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    listed = set(re.findall(r":\s*([\w./-]+\.md)\s*$", config, flags=re.MULTILINE))
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert pages - listed == set(), "add these pages to nav in mkdocs.yml"
    assert listed - pages == set(), "nav names pages that do not exist"


def test_the_gallery_lists_every_example_with_its_title():
    hooks = _tool("mkdocs_hooks")
    page = hooks.on_page_markdown((DOCS / "getting-started.md").read_text(encoding="utf-8"))
    assert hooks.MARKER not in page
    for script in sorted((ROOT / "examples").glob("*.py")):
        assert f"| `examples/{script.name}` | " in page
        assert f"| `examples/{script.name}` |  |" not in page, f"{script.name} needs a docstring title"


def test_docs_build_in_strict_mode(tmp_path):
    for module in ("mkdocs", "mkdocstrings", "mkdocstrings_handlers.python"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed: pip install -e '.[test]' installs the docs toolchain")
    site = tmp_path / "site"
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
         "--site-dir", str(site)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    reference = (site / "api" / "memory" / "index.html").read_text(encoding="utf-8")
    assert "kv_cache_bytes" in reference and "Parameters" in reference  # docstrings rendered, numpy style
    assert ":math:" not in reference  # reStructuredText roles rewritten for Markdown
    assert (site / "catalogue-gpus" / "index.html").exists()
    assert "examples/flagship_fit.py" in (site / "getting-started" / "index.html").read_text(encoding="utf-8")
