"""The load curve (``serving.load_curve``): the knee by hand, Little's law, the SLO limit, and ``gpusizer curve``."""

import csv
import io
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusizer import cli
from gpusizer.serving import SLO, Workload, load
from gpusizer.serving.load_curve import knee, load_curve
from gpusizer.serving.step_table import step_model

W = Workload(rate=1, prompt_tokens=1024, output_tokens=256)
TARGETS = SLO(ttft_p95=0.5, tpot_p95=0.05)


def test_knee_of_four_points_by_hand():
    # X0/C0 = 10, target 0.5 x 10 = 5; slopes 10, 4, 1 at C = 1.5, 2.5, 3.5; the crossing of 5 between the first
    # two: 1.5 + (10 - 5) / (10 - 4) = 2.3333
    assert knee([1, 2, 3, 4], [10, 20, 24, 25]) == pytest.approx(1.5 + 5 / 6)
    # f = 0.2 (target 2): slopes 10, 4, 1 cross 2 between 2.5 and 3.5 at 2.5 + (4 - 2) / (4 - 1) = 3.1667
    assert knee([1, 2, 3, 4], [10, 20, 24, 25], fraction=0.2) == pytest.approx(2.5 + 2 / 3)


def test_knee_of_a_saturating_curve_by_hand():
    # X = a C / (1 + C/b): dX/dC = a / (1 + C/b)^2 = f a at C* = b (1/sqrt(f) - 1): 4.142 for b = 10, f = 0.5;
    # 10 for f = 0.25
    c = np.linspace(0.001, 100, 100001)
    x = 100 * c / (1 + c / 10)
    assert knee(c, x, 0.5) == pytest.approx(10 * (2**0.5 - 1), rel=1e-3)
    assert knee(c, x, 0.25) == pytest.approx(10.0, rel=1e-3)


def test_no_knee_and_an_immediate_knee():
    assert knee([1, 2, 4], [5, 10, 20]) is None  # linear: every added user adds as much as the first
    assert knee([1, 2, 4], [10, 11, 11.5]) == 1.0  # the first added user already adds under half
    with pytest.raises(ValueError, match="increasing"):
        knee([2, 1], [1, 2])
    with pytest.raises(ValueError, match="fraction"):
        knee([1, 2], [1, 2], fraction=1.5)


@settings(max_examples=40, deadline=None)
@given(st.floats(0.5, 50), st.floats(1e-3, 1e3), st.floats(0.05, 0.95))
def test_knee_is_scale_free_and_inside_the_range(b, scale, f):
    c = np.geomspace(0.01, 1000, 2000)
    x = c / (1 + c / b)
    found = knee(c, x, f)
    assert found == pytest.approx(knee(c * 1.0, x * scale, f), rel=1e-9)  # throughput units do not move it
    assert found is not None and c[0] <= found <= c[-1]
    assert found == pytest.approx(b * (1 / np.sqrt(f) - 1), rel=2e-2, abs=0.02)


@pytest.fixture(scope="module")
def curve():
    return load_curve("llama-3.1-8b", "h100-sxm", workload=W, slo=TARGETS, concurrency=[1, 2, 4, 8, 16, 32, 64, 128])


def test_points_obey_littles_law_and_the_closed_form(curve):
    step = step_model("llama-3.1-8b", "h100-sxm", context=1024 + 128, max_prompt=131072)
    for p in curve.points:
        state = load(step, W, p.rate, quantile=0.5)
        # Little's law: requests in flight = rate x mean end-to-end latency (interpolated on 400 rates: 1 %)
        assert p.concurrency == pytest.approx(p.rate * float(state.e2e_mean), rel=0.01)
        assert p.tokens_per_second == pytest.approx(p.rate * 256)  # X = lambda o
        assert p.ttft.p50 == pytest.approx(float(state.ttft_quantile))
        assert p.ttft.p50 <= p.ttft.p95 <= p.ttft.p99 and p.tpot.p50 <= p.tpot.p95 <= p.tpot.p99
    tokens = [p.tokens_per_second for p in curve.points]
    assert np.all(np.diff(tokens) > 0) and np.all(np.diff([p.tpot.p50 for p in curve.points]) > 0)
    assert tokens[-1] < curve.saturated_tokens_per_second


def test_both_axes_are_one_curve(curve):
    by_rate = load_curve("llama-3.1-8b", "h100-sxm", workload=W, rates=[p.rate for p in curve.points])
    assert by_rate.axis == "rate"
    for a, b in zip(curve.points, by_rate.points, strict=True):
        assert b.concurrency == pytest.approx(a.concurrency, rel=0.01)
        assert b.tpot.p99 == pytest.approx(a.tpot.p99) and b.meets_slo is None
    assert by_rate.knee_concurrency == pytest.approx(curve.knee_concurrency)


def test_slo_limit_and_knee(curve):
    assert curve.slo_rate > 0 and curve.slo_binding in ("ttft", "tpot")
    for p in curve.points:  # the points within the limit meet the targets, those well past it do not
        if p.concurrency < 0.95 * curve.slo_concurrency:
            assert p.meets_slo
        elif p.concurrency > 1.05 * curve.slo_concurrency:
            assert not p.meets_slo
    # the knee: between the lightest and the heaviest point, with its rate below saturation
    assert 1 < curve.knee_concurrency < 128 and curve.knee_rate < curve.saturated_rate
    assert curve.knee_tokens_per_second == pytest.approx(curve.knee_rate * 256)


def test_rates_beyond_saturation_have_no_latency(curve):
    past = load_curve("llama-3.1-8b", "h100-sxm", workload=W, rates=[curve.saturated_rate * 1.5])
    point = past.points[0]
    assert point.ttft is None and point.tokens_per_second is None and point.reason.startswith("beyond saturation")
    assert "NaN" not in json.dumps(past.to_dict())


def test_cli_table_json_csv_and_plot(tmp_path, capsys):
    base = ["curve", "llama-3.1-8b", "h100", "--concurrency", "1,8,64", "--ttft-p95", "500ms", "--tpot-p95", "50ms"]
    assert cli.main(base) == 0
    out = capsys.readouterr().out
    assert "knee:" in out and "within SLO" in out
    assert cli.main([*base, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [round(p["concurrency"]) for p in data["points"]] == [1, 8, 64] and data["knee_concurrency"] > 1
    assert cli.main([*base, "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 3 and float(rows[1]["tpot_p95_ms"]) == pytest.approx(data["points"][1]["tpot"]["p95"] * 1e3,
                                                                              rel=1e-5)
    figure = tmp_path / "curve.png"
    assert cli.main([*base, "--plot", str(figure)]) == 0
    assert figure.read_bytes().startswith(b"\x89PNG")
    capsys.readouterr()
    with pytest.raises(SystemExit):
        cli.main(["curve", "--help"])
    assert "gpusizer curve llama-3.1-8b h100" in capsys.readouterr().out
