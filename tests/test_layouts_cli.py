"""``gpusizer layouts`` and the layout options of ``gpusizer fit``."""

import json

from gpusizer.cli import main


def test_layouts_ranks_what_fits(capsys):
    assert main(["layouts", "llama-3.1-70b", "h100", "--gpus", "8", "--weights", "fp8"]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.strip()[:2].rstrip(".").isdigit()]
    assert lines[0].split()[1] == "tp8"
    assert "scaling efficiency" in lines[0] and "nvlink-switch" in lines[0]


def test_layouts_json(capsys):
    assert main(["layouts", "deepseek-r1", "hgx-h200-8x", "--objective", "throughput", "--context", "16k",
                 "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and {"layout", "why", "tokens_per_second", "scaling_efficiency"} <= set(rows[0])
    assert rows[0]["objective"] == "throughput"


def test_layouts_says_when_nothing_fits(capsys):
    assert main(["layouts", "llama-3.1-405b", "rtx-4090", "--gpus", "2"]) == 0
    assert "No layout fits" in capsys.readouterr().out


def test_fit_with_a_layout(capsys):
    assert main(["fit", "llama-3.1-70b", "h100", "--gpus", "4", "--layout", "tp2xpp2", "--weights", "fp8",
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["parallel"]
    assert data["layout"] == "tp2xpp2"
    assert 0 < data["scaling_efficiency"] <= 1
    assert data["communication_seconds_per_step"] > 0
    assert main(["fit", "llama-3.1-70b", "h100", "--gpus", "4", "--weights", "fp8"]) == 0
    assert "parallel     tp4 over tensor nvlink-switch" in capsys.readouterr().out


def test_fit_rejects_a_layout_that_does_not_match(capsys):
    assert main(["fit", "llama-3.1-70b", "h100", "--gpus", "8", "--layout", "tp2xpp2"]) == 2
    err = capsys.readouterr().err
    assert "gpusizer: error" in err and "layout" in err
