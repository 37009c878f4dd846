"""Sweeps: every row equals the scalar estimate field by field; the result's columns, filters and writers."""

import csv
import io

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import gpusizer
from gpusizer import calibration, catalog, cost, parallel, performance, readers
from gpusizer.cli import main
from gpusizer.readers import Measurement
from gpusizer.sweeper import AXES, estimate_row, sweep

MODELS = [m.id for m in catalog.models()]
GPUS = [g.id for g in catalog.gpus()]
WEIGHTS = [None, "bf16", "fp8", "int4", "nvfp4", "mxfp4", "q8_0", "q4_k_m"]
KV = [None, "bf16", "fp8"]
ENGINES = ["vllm", "sglang", "trtllm", "llama.cpp"]
PRICED = {"usd_per_gpu_hour", "usd_per_hour", "usd_per_million_tokens"}


def _axis_values(result, row):
    """The axis values of a flat row index (C order over the grid)."""
    at = np.unravel_index(row, tuple(len(v) for v in result.axes.values()))
    return {name: values[i] for (name, values), i in zip(result.axes.items(), at, strict=True)}


def _same(expected, got):
    if expected is None and isinstance(got, float):  # a number estimate does not know is NaN in a sweep's column
        return bool(np.isnan(got))
    if isinstance(expected, float) or isinstance(got, float):
        if np.isnan(expected):
            return bool(np.isnan(got))
        return expected == got or abs(got - expected) <= 1e-9 * abs(expected)
    return expected == got


def assert_rows_equal_estimates(result, **options):
    for row in range(len(result)):
        a = _axis_values(result, row)
        layout = {"layout": a["layout"]} if "layout" in a else {}  # a layout axis: the row's layout
        e = gpusizer.estimate(
            a["model"], a["gpu"], weights=a["weights"], kv_cache=a["kv_cache"], context=a["context"],
            concurrency=a["concurrency"], gpus=a["gpu_count"], engine=a["engine"], prompt=a.get("prompt"),
            **(options | layout),
        )
        expected = estimate_row(e)
        assert set(expected) == set(result.columns) - PRICED
        for name, value in expected.items():
            got = result.columns[name][row]
            got = got.item() if isinstance(got, np.generic) else got
            assert _same(value, got), (a, name, value, got)


def _some(values, most):
    return st.lists(st.sampled_from(values), min_size=1, max_size=most, unique=True)


@pytest.mark.filterwarnings("ignore:layout")  # heads that do not divide by the tensor-parallel degree
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(
    models=_some(MODELS, 2),
    gpus=_some(GPUS, 2),
    weights=_some(WEIGHTS, 2),
    kv_cache=_some(KV, 2),
    engine=_some(ENGINES, 2),
    gpu_count=_some([1, 2, 4, 8], 2),
    context=st.lists(st.integers(1, 300_000), min_size=1, max_size=2),
    concurrency=st.lists(st.integers(1, 512), min_size=1, max_size=2),
    prompt=st.none() | st.lists(st.integers(1, 200_000), min_size=1, max_size=2),
    layout=st.sampled_from(["tp", "tp", "pp", "layer"]),
)
def test_sweep_equals_estimate_field_by_field(models, gpus, weights, kv_cache, engine, gpu_count, context,
                                              concurrency, prompt, layout):
    axes = [models, gpus, weights, kv_cache, engine, gpu_count, context, concurrency, prompt or [None]]
    assume(np.prod([len(a) for a in axes]) <= 16)  # small grids: every row is checked against estimate()
    result = sweep(models, gpus, weights=weights, kv_cache=kv_cache, engine=engine, gpu_count=gpu_count,
                   context=context, concurrency=concurrency, prompt=prompt, layout=layout)
    assert len(result) == np.prod([len(v) for v in result.axes.values()])
    assert_rows_equal_estimates(result, layout=layout)


def test_every_architecture_and_device_kind_matches(rateless):
    # sliding windows (gemma-3), MLA (deepseek-v3), hybrid linear attention (qwen3-next), MoE with MXFP4
    # experts (gpt-oss); a GPU without published tensor rates (``rateless``: expected prefill None, NaN in the sweep)
    result = sweep(["gemma-3-27b", "deepseek-v3", "qwen3-next-80b-a3b", "gpt-oss-120b"],
                   ["h100-sxm", "apple-m3-ultra"], weights=[None, "q4_k_m"], gpu_count=[8, 1],
                   engine=["llama.cpp", "vllm"], context=[1, 40_000], concurrency=[3, 1])
    assert_rows_equal_estimates(result)


def test_expert_parallel_layout_matches():
    result = sweep(["qwen3-30b-a3b", "deepseek-v3"], ["h100", "mi300x"], gpu_count=[8, 16], concurrency=[1, 64],
                   layout="ep")
    assert set(result["parallel_layout"].tolist()) == {"ep8", "ep16"}
    assert_rows_equal_estimates(result, layout="ep")
    with pytest.raises(ValueError, match="layout"):
        sweep(["llama-3.1-8b"], ["h100"], gpu_count=[8], layout="ep")  # no experts to split
    with pytest.raises(ValueError, match="layout"):
        sweep(["llama-3.1-8b"], ["h100"], gpu_count=[2, 4], layout="tp2xpp2")  # 4 GPUs, not 2


DENSE_LAYOUTS = ["tp8", "tp4xpp2", "tp2xpp4", "pp8", "tp2xdp4", "layer8"]
MOE_LAYOUTS = ["tp8", "tp8+ep8", "ep8", "tp2+ep8", "ep4xpp2"]
LAYOUT_GPUS = ["h100-sxm", "mi300x", "l40s", "rtx-4090"]


@pytest.mark.filterwarnings("ignore:layout")  # heads that do not divide by the tensor-parallel degree
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(
    moe=st.booleans(),
    picks=st.data(),
    gpus=_some(LAYOUT_GPUS, 2),
    engine=_some(["vllm", "sglang", "trtllm"], 1),
    weights=_some([None, "fp8", "int4"], 1),
    context=st.lists(st.integers(1, 200_000), min_size=1, max_size=2),
    concurrency=st.lists(st.integers(1, 256), min_size=1, max_size=2),
    prompt=st.none() | st.lists(st.integers(1, 100_000), min_size=1, max_size=1),
)
def test_layout_axis_equals_estimate_field_by_field(moe, picks, gpus, engine, weights, context, concurrency, prompt):
    models = picks.draw(_some(["qwen3-30b-a3b", "deepseek-v3"], 2) if moe else _some(["llama-3.1-70b", "qwen3-32b"], 1))
    layouts = picks.draw(_some(MOE_LAYOUTS if moe else DENSE_LAYOUTS, 4))
    axes = [models, gpus, layouts, engine, weights, context, concurrency, prompt or [None]]
    assume(np.prod([len(a) for a in axes]) <= 24)
    result = sweep(models, gpus, gpu_count=8, layout=layouts, engine=engine, weights=weights, context=context,
                   concurrency=concurrency, prompt=prompt)
    assert list(result.axes)[:4] == ["model", "gpu", "gpu_count", "layout"]
    assert result.axes["layout"] == tuple(layouts)
    assert_rows_equal_estimates(result)


@pytest.mark.parametrize(("models", "layouts", "counts"), [
    (["llama-3.1-70b"], ["tp8", "tp4xpp2", "tp2xpp4", "pp8"], [8]),
    (["qwen3-30b-a3b", "deepseek-v3"], ["tp8", "tp8+ep8", "ep8"], [8]),
    (["llama-3.1-8b", "qwen3-32b"], ["tp", "pp", "dp", "layer"], [1, 2, 4]),  # bare kinds spread over each count
    (["qwen3-30b-a3b"], [parallel.Layout(tp=2, ep=4), "ep", parallel.Layout(ep=4)], [4]),
])
def test_layout_axis_rows_and_order(models, layouts, counts):
    result = sweep(models, ["h100-sxm", "mi300x", "l40s", "rtx-4090"], gpu_count=counts, layout=layouts,
                   context=[4096, 65536], concurrency=[1, 32])
    assert result.shape == (len(models), 4, len(counts), len(layouts), 1, 1, 1, 2, 2)
    names = result["parallel_layout"].reshape(result.shape)
    for i, n in enumerate(counts):
        for j, text in enumerate(layouts):
            assert set(names[:, :, i, j].ravel()) == {parallel.layout(text, n).name}
    assert_rows_equal_estimates(result)


def test_one_layout_keeps_the_columns_and_numbers_of_an_axis_of_one():
    one = sweep(["qwen3-30b-a3b"], ["h100", "l40s"], gpu_count=8, layout="tp8+ep8", concurrency=[1, 16])
    axis = sweep(["qwen3-30b-a3b"], ["h100", "l40s"], gpu_count=8, layout=["tp8+ep8"], concurrency=[1, 16])
    assert "layout" not in one.axes and axis.axes["layout"] == ("tp8+ep8",)
    assert list(one.columns) == list(axis.columns)
    for name in one.columns:
        assert one[name].tolist() == axis[name].tolist() or np.allclose(one[name], axis[name], equal_nan=True), name


def test_layout_axis_errors_name_the_layout():
    with pytest.raises(ValueError, match=r"layout 'tp4xpp2' uses 8 GPUs, but gpus=4"):
        sweep(["llama-3.1-70b"], ["h100"], gpu_count=[8, 4], layout=["tp", "tp4xpp2"])
    with pytest.raises(ValueError, match=r"layout 'ep8'.*no routed experts"):
        sweep(["llama-3.1-70b"], ["h100"], gpu_count=8, layout=["tp8", "ep8"])
    with pytest.raises(ValueError, match="at least one layout"):
        sweep(["llama-3.1-70b"], ["h100"], layout=[])
    with pytest.raises(TypeError, match="layout"):
        sweep(["llama-3.1-70b"], ["h100"], layout=8)
    with pytest.raises(TypeError, match="layout"):
        sweep(["llama-3.1-70b"], ["h100"], gpu_count=8, layout=["tp8", 8])
    with pytest.raises(ValueError, match="scale_out_bandwidth"):
        sweep(["llama-3.1-70b"], ["h100"], scale_out_bandwidth=0.0)


def test_scale_out_bandwidth_is_a_systems():
    # 16 GPUs of an 8-GPU HGX B300: the pipeline hop leaves the NVLink domain over the system's 800 Gb/s NICs
    nic = gpusizer.estimator.scale_out_bandwidth("hgx-b300-8x")
    assert nic == 100e9
    layouts = ["tp8xpp2", "ep8xpp2", "ep16"]
    result = sweep(["deepseek-v3"], ["b300"], gpu_count=16, layout=layouts, concurrency=64, scale_out_bandwidth=nic)
    default = sweep(["deepseek-v3"], ["b300"], gpu_count=16, layout=layouts, concurrency=64)
    assert (result["decode_expected_tokens_per_second"] > default["decode_expected_tokens_per_second"]).all()
    for row, layout in enumerate(result.axes["layout"]):
        e = gpusizer.estimate("deepseek-v3", "hgx-b300-8x", gpus=16, layout=layout, concurrency=64)
        for name, value in estimate_row(e).items():
            got = result.columns[name][row]
            assert _same(value, got.item() if isinstance(got, np.generic) else got), (layout, name)


def test_calibration_is_used_where_it_applies():
    rows = []
    for n, (model, metric, kw) in enumerate([("qwen3-8b", "decode", dict(prompt=512, output=256)),
                                             ("qwen3-32b", "decode", dict(prompt=512, output=256, weights="fp8")),
                                             ("qwen3-8b", "prefill", dict(prompt=4096))]):
        m = Measurement(id=f"own{n}", model=model, gpu="l40s", engine="vllm", metric=metric, value=1.0, **kw)
        rows.append(m.model_copy(update={"value": performance.predict(readers.to_case(m)) * 0.8}))
    slower = calibration.calibrate(rows)
    result = sweep(["qwen3-14b"], ["l40s", "h100"], engine=["vllm", "sglang"], gpu_count=[1, 2], context=[1024, 9000],
                   calibration=slower)
    assert_rows_equal_estimates(result, calibration=slower)
    plain = sweep(["qwen3-14b"], ["l40s", "h100"], engine=["vllm", "sglang"], gpu_count=[1, 2], context=[1024, 9000])
    calibrated = result["decode_expected_tokens_per_second"] != plain["decode_expected_tokens_per_second"]
    assert calibrated.any() and not calibrated[result["gpu"] == "h100-sxm"].any()  # only the L40S (GDDR) class


def test_axes_order_shape_and_columns():
    s = sweep(["llama-3.1-8b"], ["h100", "rtx-4090"], weights=["bf16", "fp8"], context=[4096, 32768],
              concurrency=[1, 8, 64])
    assert list(s.axes) == [a for a in AXES if a not in ("prompt", "layout")]
    assert s.shape == (1, 2, 1, 2, 1, 1, 2, 3) and len(s) == 24
    assert s["gpu"][:12].tolist() == ["h100-sxm"] * 12  # model slowest, concurrency fastest
    assert s["concurrency"][:3].tolist() == [1, 8, 64]
    for name in ("fits", "kv_pool_bytes", "max_concurrency", "max_context", "decode_ceiling_tokens_per_second",
                 "decode_expected_tokens_per_second", "decode_band_low", "decode_bound",
                 "prefill_seconds_expected", "prefill_ttft_seconds_expected"):
        assert s[name].shape == (24,)
    assert s["weights_bytes"].flags.writeable is False
    with pytest.raises(KeyError, match="decode_expected_tokens_per_second"):
        s["decode_expected_tokens_per_secnd"]
    assert "24 rows" in repr(s)


def test_checkpoint_defaults_resolve_per_model():
    s = sweep(["gpt-oss-120b", "deepseek-v3"], ["h200"])
    assert s["weights"].tolist() == ["bf16", "fp8"]
    assert s["expert_weights"].tolist() == ["mxfp4", None]
    assert s["kv_cache"].tolist() == ["bf16", "bf16"]


def test_filter_and_take():
    s = sweep(["llama-3.1-8b", "llama-3.1-70b"], ["h100", "rtx-4090"], gpu_count=[1, 2, 4], context=[8192, 65536])
    fits = s.filter(fits=True)
    assert fits["fits"].all() and len(fits) == int(s["fits"].sum())
    assert set(s.filter(gpu="rtx-4090")["gpu"]) == {"rtx-4090"}
    both = s.filter(s["context"] == 8192, model=["llama-3.1-70b"], gpu_count=(2, 4))
    assert len(both) == 4 and set(both["gpu_count"].tolist()) == {2, 4}
    assert both.take([1, 0])["gpu_count"].tolist() == both["gpu_count"][[1, 0]].tolist()
    with pytest.raises(ValueError, match="one boolean per row"):
        s.filter([True, False])
    assert len(s.filter(model="no-such-model")) == 0


def test_best_per_group():
    s = sweep(["llama-3.1-8b", "qwen3-32b", "llama-3.1-70b"], ["h100-sxm", "rtx-4090", "l4"], gpu_count=[1, 2, 4])
    cheapest = s.filter(fits=True).best(by=["gpu_count", "total_bytes"], per="model")
    assert cheapest["model"].tolist() == ["llama-3.1-70b", "llama-3.1-8b", "qwen3-32b"]
    fitting = s.filter(fits=True)
    for model, count, total in zip(cheapest["model"], cheapest["gpu_count"], cheapest["total_bytes"], strict=True):
        rows = fitting.filter(model=model)
        assert count == rows["gpu_count"].min()
        assert total == rows.filter(gpu_count=count)["total_bytes"].min()
    fastest = s.best(by="decode_expected_tokens_per_second", largest=True)
    assert len(fastest) == 1
    assert fastest["decode_expected_tokens_per_second"][0] == np.nanmax(s["decode_expected_tokens_per_second"])


def test_best_never_picks_nan(rateless):
    s = sweep(["llama-3.1-8b"], ["apple-m3-ultra", "h100"], context=[4096])
    assert np.isnan(s.filter(gpu="apple-m3-ultra")["prefill_seconds_expected"]).all()
    assert s.best(by="prefill_seconds_expected")["gpu"].tolist() == ["h100-sxm"]


def test_prices_add_cost_columns():
    s = sweep(["llama-3.1-8b"], ["h100", "rtx-4090", "a10g"], gpu_count=[1, 2], concurrency=[16],
              prices={"h100": 2.5})
    h100 = s.filter(gpu="h100-sxm")
    assert h100["usd_per_gpu_hour"].tolist() == [2.5, 2.5]
    assert h100["usd_per_hour"].tolist() == [2.5, 5.0]
    tokens_per_hour = h100["decode_expected_aggregate_tokens_per_second"] * 3600
    np.testing.assert_allclose(h100["usd_per_million_tokens"], h100["usd_per_hour"] / tokens_per_hour * 1e6)
    assert s.filter(gpu="rtx-4090")["usd_per_gpu_hour"][0] == cost.price("rtx-4090")  # the table's
    assert np.isnan(s.filter(gpu="a10g")["usd_per_hour"]).all()  # no price anywhere
    assert "usd_per_hour" not in sweep(["llama-3.1-8b"], ["h100"]).columns


def test_csv_round_trip(tmp_path):
    s = sweep(["gpt-oss-20b"], ["rtx-4090"], context=[4096, 8192], concurrency=[1, 4])
    path = tmp_path / "grid.csv"
    s.to_csv(path, block=3)
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4 and list(rows[0]) == list(s.columns)
    assert [int(r["context"]) for r in rows] == s["context"].tolist()
    assert float(rows[3]["decode_expected_tokens_per_second"]) == s["decode_expected_tokens_per_second"][3]
    assert rows[0]["expert_weights"] == "mxfp4" and rows[0]["fits"] in ("True", "False")


def test_to_pandas():
    pandas = pytest.importorskip("pandas")
    frame = sweep(["llama-3.1-8b"], ["h100"], concurrency=[1, 2]).to_pandas()
    assert isinstance(frame, pandas.DataFrame) and frame.shape[0] == 2


def test_to_parquet(tmp_path):
    pytest.importorskip("pyarrow")
    import pyarrow.parquet

    sweep(["llama-3.1-8b"], ["h100"], concurrency=[1, 2]).to_parquet(tmp_path / "grid.parquet")
    assert pyarrow.parquet.read_table(tmp_path / "grid.parquet").num_rows == 2


def test_invalid_axes_raise_clear_errors():
    with pytest.raises(KeyError, match="llama"):
        sweep(["llama-3.1-8"], ["h100"])
    with pytest.raises(ValueError, match="context"):
        sweep(["llama-3.1-8b"], ["h100"], context=[0])
    with pytest.raises(ValueError, match="gpu_count"):
        sweep(["llama-3.1-8b"], ["h100"], gpu_count=[1.5])
    with pytest.raises(ValueError, match="engine"):
        sweep(["llama-3.1-8b"], ["h100"], engine=["vllmm"])


def test_cli_writes_csv(tmp_path, capsys):
    out = tmp_path / "grid.csv"
    assert main(["sweep", "--models", "llama-3.1-8b,qwen3-32b", "--gpus", "h100,rtx-4090", "--weights", "bf16,fp8",
                 "--context", "4k,32k", "--concurrency", "1,8,64", "-o", str(out)]) == 0
    assert "48 rows" in capsys.readouterr().out
    with open(out, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 48 and {r["context"] for r in rows} == {"4096", "32768"}


def test_cli_stdout_columns_and_fits(capsys):
    assert main(["sweep", "--models", "llama-3.1-70b", "--gpus", "h100", "--gpu-count", "1,2",
                 "--columns", "gpu_count,fits", "--fits"]) == 0
    assert capsys.readouterr().out.strip().splitlines() == ["gpu_count,fits", "2,True"]
    assert main(["sweep", "--models", "llama-3.1-8b", "--gpus", "h100", "--columns", "fit"]) == 2
    assert "fits" in capsys.readouterr().err


def test_csv_to_open_file():
    buffer = io.StringIO()
    sweep(["llama-3.1-8b"], ["h100"]).to_csv(buffer)
    assert buffer.getvalue().startswith("model,gpu,")
