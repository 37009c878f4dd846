"""Every script in examples/ runs to completion (a ``noplot_`` prefix would opt one out of plotting)."""

import runpy
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(script, capsys, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    runpy.run_path(str(script), run_name="__main__")
    assert capsys.readouterr().out.strip()
