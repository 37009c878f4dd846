"""Every script in examples/ runs to completion, and the figures it saves into $GPUSIZER_FIGURES are PNG images.

A script that names ``GPUSIZER_FIGURES`` must save at least one figure there (a ``noplot_`` prefix
would opt one out of plotting).
"""

import runpy
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(script, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("GPUSIZER_FIGURES", str(tmp_path))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)  # restored after a script that points it at its own cache
    try:
        runpy.run_path(str(script), run_name="__main__")
    finally:
        if "matplotlib.pyplot" in sys.modules:
            sys.modules["matplotlib.pyplot"].close("all")
    assert capsys.readouterr().out.strip()
    figures = sorted(tmp_path.glob("*.png"))
    if "GPUSIZER_FIGURES" in script.read_text(encoding="utf-8"):
        assert figures, f"{script.name} saved no figure into $GPUSIZER_FIGURES"
    for figure in figures:
        data = figure.read_bytes()
        assert data.startswith(PNG_SIGNATURE) and len(data) > 1000, figure.name
