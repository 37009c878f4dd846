"""Plots: each one is drawn into a temporary folder as a non-empty PNG, draws the library's numbers, honours ``ax=``."""

import subprocess
import sys

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import gpusizer  # noqa: E402
from gpusizer import plot  # noqa: E402

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
FLAGSHIP = dict(weights="fp8", kv_cache="fp8", context=32768, concurrency=16)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _memory(ax):
    one = gpusizer.estimate("llama-3.1-70b", "h200", **FLAGSHIP)
    two = gpusizer.estimate("llama-3.1-70b", "h200", gpus=2, **FLAGSHIP)
    return plot.memory_breakdown([one, two], ax=ax)


def _concurrency(ax):
    contexts = 2 ** np.arange(10, 18)
    sweeps = [gpusizer.estimate("llama-3.1-8b", gpu, context=contexts) for gpu in ("l40s", "h100")]
    return plot.concurrency_vs_context(sweeps, ax=ax)


def _roofline(ax):
    e = gpusizer.estimate("llama-3.1-8b", "h100", context=4096, concurrency=np.array([1, 16]))
    return plot.roofline("h100", [e.decode, e.prefill], ax=ax)


def _throughput(ax):
    users = np.array([1, 4, 16, 64])
    e = gpusizer.estimate("llama-3.1-8b", "h100", context=8192, concurrency=users)
    return plot.throughput_vs_latency(e.decode.tpot_seconds_expected, e.decode.expected_aggregate_tokens_per_second,
                                      load=users, label="8B on H100", slo=0.02, ax=ax)


def _cost(ax):
    targets = np.array([0.01, 0.02, 0.05])
    return plot.cost_vs_slo(targets, {"a": [np.nan, 2.0, 1.0], "b": [3.0, 1.5, 1.5]}, unit="GPU-h/Mtok", ax=ax)


PLOTS = {"memory_breakdown": _memory, "concurrency_vs_context": _concurrency, "roofline": _roofline,
         "throughput_vs_latency": _throughput, "cost_vs_slo": _cost}


@pytest.mark.parametrize("name", PLOTS)
def test_plot_is_a_non_empty_image(name, tmp_path):
    ax = PLOTS[name](None)
    path = tmp_path / f"{name}.png"
    ax.figure.savefig(path, dpi=60)
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 2000
    image = matplotlib.image.imread(path)
    assert image.shape[0] > 100 and image.shape[1] > 100
    assert image[..., :3].std() > 0.01  # not a blank canvas


@pytest.mark.parametrize("name", PLOTS)
def test_plot_draws_on_the_axes_it_is_given(name):
    _, ax = plt.subplots()
    assert PLOTS[name](ax) is ax


def test_memory_bars_are_the_breakdown_and_capacity_lines_the_capacity():
    e = gpusizer.estimate("llama-3.1-70b", "h200", **FLAGSHIP)
    ax = plot.memory_breakdown(e, unit="GiB")
    heights = sorted(p.get_height() for p in ax.patches)
    m = e.memory
    parts = [m.weights_bytes, m.kv_cache_bytes, m.activation_bytes, m.runtime_bytes]
    np.testing.assert_allclose(heights, sorted(np.divide(parts, 2**30)))
    capacity = ax.collections[0].get_segments()[0]
    assert capacity[0][1] == pytest.approx(m.capacity_bytes / 2**30)


def test_a_sweep_gives_one_bar_per_point_and_labels_must_match():
    e = gpusizer.estimate("llama-3.1-8b", "h100", context=np.array([4096, 32768]), concurrency=np.array([[1], [8]]))
    ax = plot.memory_breakdown(e)
    assert len(ax.get_xticklabels()) == 4 and len(ax.patches) == 4 * len(plot.MEMORY_PARTS)
    with pytest.raises(ValueError, match="one per bar"):
        plot.memory_breakdown(e, labels=["only one"])


def test_a_bare_breakdown_per_gpu_is_a_bar_each():
    e = gpusizer.estimate("llama-3.1-70b", "h100", gpus=2, **FLAGSHIP)
    ax = plot.memory_breakdown([e.memory, e.memory])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["GPU 0", "GPU 1"]


def test_concurrency_curve_is_the_estimate():
    contexts = 2 ** np.arange(12, 16)
    e = gpusizer.estimate("llama-3.1-8b", "h100", context=contexts)
    x, y = plot.concurrency_vs_context(e).lines[0].get_data()
    np.testing.assert_array_equal(x, contexts)
    np.testing.assert_array_equal(y, e.max_concurrency)


def test_throughput_curve_is_in_milliseconds_and_checks_its_points():
    ax = plot.throughput_vs_latency([0.01, 0.02], [100.0, 150.0])
    np.testing.assert_allclose(ax.lines[0].get_xdata(), [10.0, 20.0])
    with pytest.raises(ValueError, match="same points"):
        plot.throughput_vs_latency([0.01, 0.02], [100.0])


def test_cost_frontier_is_the_cheapest_option_and_shapes_are_checked():
    ax = plot.cost_vs_slo([0.01, 0.02], [[np.nan, 2.0], [3.0, 1.5]], labels=["a", "b"])
    cheapest = ax.lines[-1]
    assert cheapest.get_label() == "cheapest"
    np.testing.assert_allclose(cheapest.get_ydata(), [3.0, 1.5])
    with pytest.raises(ValueError, match="options x"):
        plot.cost_vs_slo([0.01, 0.02, 0.05], {"a": [1.0, 2.0]})


@pytest.mark.parametrize("name", PLOTS)
def test_missing_matplotlib_names_the_extra(name, monkeypatch):
    for module in ("matplotlib", "matplotlib.pyplot", "matplotlib.ticker"):
        monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ImportError, match=r"pip install 'gpusizer\[plot\]'"):
        PLOTS[name](None)


def test_importing_plot_does_not_import_matplotlib():
    code = "import sys, gpusizer.plot; assert 'matplotlib' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


# --- issue 20: plots a newcomer can read ------------------------------------------------------------------


def test_roofline_draws_every_published_roof_so_an_fp8_point_sits_under_its_own():
    e = gpusizer.estimate("llama-3.1-8b", "h100", weights="fp8", kv_cache="fp8", context=4096,
                          concurrency=np.array([1, 64, 256]))
    ax = plot.roofline("h100", [e])
    roofs = [line.get_label() for line in ax.lines]
    assert roofs == ["H100 SXM: bf16 roof", "H100 SXM: fp8 roof"]  # H100 SXM publishes no FP4 rate
    labels = ax.get_legend_handles_labels()[1]
    assert "llama-3.1-8b fp8 decode expected" in labels and "llama-3.1-8b fp8 prefill ceiling" in labels
    highest = ax.lines[-1]  # the fp8 roof: min(989.5e12 x 2, 3.35e12 x intensity)
    for collection in ax.collections:
        for x, y in collection.get_offsets():
            assert y <= np.interp(x, highest.get_xdata(), highest.get_ydata()) * (1 + 1e-6)


def test_cost_axis_has_enough_labels_and_the_cheapest_line_leaves_its_option_visible():
    ax = plot.cost_vs_slo([0.02, 0.03, 0.05], {"a": [0.40, 0.25, 0.15], "b": [0.36, 0.30, 0.20]})
    plt.gcf().canvas.draw()
    shown = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert len(shown) >= 3, shown  # 0.15 to 0.40 is less than a decade: five round values, not one or two
    cheapest = ax.lines[-1]
    assert cheapest.get_label() == "cheapest" and cheapest.get_linestyle() == "--" and cheapest.get_linewidth() == 1
    np.testing.assert_allclose(cheapest.get_ydata(), [0.36, 0.25, 0.15])


def test_one_slo_label_when_curves_are_overlaid():
    ax = plot.throughput_vs_latency([0.01, 0.02], [100.0, 150.0], label="h100", slo=0.03)
    plot.throughput_vs_latency([0.015, 0.025], [80.0, 120.0], label="l40s", slo=0.03, ax=ax)
    assert ax.get_legend_handles_labels()[1] == ["h100", "TPOT target 30 ms", "l40s"]


def test_throughput_plot_takes_a_concurrency_curve_directly():
    from gpusizer import serving

    step = serving.step_model("llama-3.1-8b", "h100", context=2048)
    curve = serving.concurrency_curve(step, [1, 8, 32], prompt_tokens=1024, output_tokens=256)
    ax = plot.throughput_vs_latency(curve)
    np.testing.assert_allclose(ax.lines[0].get_xdata(), curve.tpot_seconds * 1e3)
    np.testing.assert_allclose(ax.lines[0].get_ydata(), curve.aggregate_tokens_per_second)
    assert [t.get_text() for t in ax.texts] == ["1", "8", "32"]  # each point marked with its concurrency


def test_cost_plot_takes_one_shortlist_per_target_directly():
    targets = [0.03, 0.06]
    w = gpusizer.Workload(rate=1, prompt_tokens=512, output_tokens=128)
    tables = [gpusizer.shortlist("llama-3.1-8b", w, gpusizer.SLO(tpot_p95=t), gpus=["h100", "l40s"], max_gpus=1,
                                 weights=["bf16"], simulate=0) for t in targets]
    ax = plot.cost_vs_slo(targets, tables, frontier=False)
    for table in tables:
        for row in table:
            line = next(line for line in ax.lines if line.get_label() == row.configuration)
            assert row.usd_per_million_tokens in line.get_ydata()
