"""Readers of the measurement schema and of benchmark tool outputs (sample files in tests/data/bench)."""

import json
import warnings
from pathlib import Path

import pytest
from pydantic import ValidationError

from gpusizer import readers
from gpusizer.readers import Measurement

BENCH = Path(__file__).resolve().parent / "data" / "bench"
CALIBRATION = Path(__file__).resolve().parents[1] / "data" / "calibration"


def _row(**kw):
    data = dict(id="x", model="llama-3.1-8b", gpu="h100", metric="decode", value=100.0, output=128)
    return Measurement(**{**data, **kw})


# --- the schema -----------------------------------------------------------------------------------


def test_schema_csv_accepts_both_column_spellings_and_normalises_ids():
    rows = readers.read_csv(BENCH / "measurements.csv")
    assert [m.id for m in rows] == ["a", "b", "c"]
    a, b, c = rows
    assert a.gpu == "h100-sxm" and a.unit == "ms" and a.metric == "tpot"
    assert b.metric == "decode_aggregate" and b.concurrency == 16 and b.weights is None
    # measurements.csv's metric name: the unit defaults to ms, the engine to its class
    assert c.metric == "ttft" and c.unit == "ms" and c.engine == "sglang" and c.kv_cache == "fp8"


def test_schema_json_with_measurements_csv_column_names():
    j1, j2, j3 = readers.read_json(BENCH / "measurements.json")
    assert j1.unit == "tok/s" and j2.prompt == 4096
    assert (j3.gpus, j3.weights, j3.prompt, j3.output, j3.concurrency) == (2, "fp8", 1024, 1024, 64)
    assert j3.metric == "static_batch"


def test_csv_round_trip(tmp_path):
    rows = readers.read_csv(BENCH / "measurements.csv") + readers.read_json(BENCH / "measurements.json")
    path = tmp_path / "m.csv"
    path.write_text(readers.to_csv(rows))
    assert readers.read_csv(path) == rows


def test_defaults_fill_missing_columns(tmp_path):
    path = tmp_path / "few.csv"
    path.write_text("metric,value,output\ndecode,90,256\n")
    (m,) = readers.read_csv(path, model="qwen3-8b", gpu="l4", engine="llama.cpp")
    assert (m.model, m.gpu, m.engine, m.id) == ("qwen3-8b", "l4", "llama.cpp", "few.csv:1")


def test_shared_file_through_its_mapping():
    rows = readers.read_csv(CALIBRATION / "measurements.csv", mapping=CALIBRATION / "mapping.csv")
    assert len(rows) >= 30 and all(m.model and m.gpu for m in rows)
    m104 = next(m for m in rows if m.id == "m104")
    assert (m104.model, m104.gpu, m104.metric, m104.prompt, m104.weights) == (
        "llama-3.1-8b", "rtx-3090", "prefill", 512, "q4_k_m")


def test_unknown_ids_name_the_closest():
    with pytest.raises(KeyError, match=r"did you mean .*llama-3\.1-8b"):
        _row(model="llama-3.1-8bb")
    with pytest.raises(KeyError, match=r"did you mean .*h100"):
        _row(gpu="h10O-sxm")
    with pytest.raises(KeyError, match=r"llama-3\.1-70b"):
        readers.read_vllm(BENCH / "vllm_c1.json", model="llama-3.1-70", gpu="h100")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (dict(metric="tokens"), "metric must be one of"),
        (dict(unit="furlongs"), "unit must be one of"),
        (dict(unit="ms"), "is not a rate"),
        (dict(engine="tgi"), "engine must be one of"),
        (dict(weights="int3"), "int3"),
        (dict(metric="prefill", prompt=0), "prompt must be >= 1"),
        (dict(metric="static_batch", output=0), "output must be >= 1"),
        (dict(value=-1.0), "greater than 0"),
        (dict(gpus=0), "greater than or equal to 1"),
    ],
)
def test_invalid_rows_say_which_field(change, message):
    with pytest.raises((ValidationError, ValueError), match=message):
        _row(**change)


def test_unknown_column_is_an_error(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("id,model,gpu,metric,value,colour\na,llama-3.1-8b,h100,decode,10,red\n")
    with pytest.raises(ValueError, match="unknown column 'colour'"):
        readers.read_csv(path)


def test_case_units():
    tpot = readers.to_case(_row(metric="tpot", value=8.0, unit="ms"))
    assert tpot.metric == "decode" and tpot.value == pytest.approx(125.0)
    ttft = readers.to_case(_row(metric="ttft", value=250, unit="ms", prompt=1000))
    assert ttft.value == pytest.approx(0.25)
    system = readers.to_case(_row(metric="static_batch", value=8000, gpus=4, prompt=128, concurrency=64))
    per_gpu = readers.to_case(_row(metric="static_batch", value=2000, unit="tok/s/gpu", gpus=4, prompt=128))
    assert system.value == per_gpu.value == 2000
    back = readers.from_case(system)
    assert readers.to_case(back).value == pytest.approx(system.value)


# --- vLLM -----------------------------------------------------------------------------------------


def test_vllm_single_stream_gives_tpot_and_ttft():
    tpot, ttft = readers.read_vllm(BENCH / "vllm_c1.json", model="llama-3.1-8b", gpu="h100")
    assert (tpot.metric, tpot.value, tpot.unit, tpot.concurrency) == ("tpot", 6.70, "ms", 1)
    assert (tpot.prompt, tpot.output) == (1024, 256)  # 32768 / 32 and 8192 / 32
    assert (ttft.metric, ttft.value) == ("ttft", 30.8)
    assert "meta-llama/Llama-3.1-8B-Instruct" in tpot.source


def test_vllm_under_load_gives_tpot_only():
    (tpot,) = readers.read_vllm(BENCH / "vllm_c16.json", model="llama-3.1-8b", gpu="h100")
    assert tpot.concurrency == 16 and tpot.value == 14.4


def test_vllm_without_max_concurrency_uses_littles_law(tmp_path):
    (tpot,) = readers.read_vllm(BENCH / "vllm_rate.json", model="llama-3.1-8b", gpu="h100")
    assert tpot.concurrency == round(3.937 * 3.630)
    data = json.loads((BENCH / "vllm_rate.json").read_text())
    del data["mean_e2el_ms"]
    (tmp_path / "r.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match="concurrency="):
        readers.read_vllm(tmp_path / "r.json", model="llama-3.1-8b", gpu="h100")
    (given,) = readers.read_vllm(tmp_path / "r.json", model="llama-3.1-8b", gpu="h100", concurrency=12)
    assert given.concurrency == 12


# --- llama-bench ----------------------------------------------------------------------------------


def test_llama_bench_json():
    pp, tg = readers.read_llama_bench(BENCH / "llama_bench.json", model="llama-3.1-8b", gpu="rtx-4090")
    assert (pp.metric, pp.prompt, pp.value, pp.weights, pp.engine) == ("prefill", 512, 11006.24, "q4_k_m", "llama.cpp")
    assert (tg.metric, tg.prompt, tg.output, tg.concurrency, tg.gpus) == ("decode", 0, 128, 1, 1)


def test_llama_bench_jsonl_depth_and_skipped_mixed_test():
    with pytest.warns(UserWarning, match=r"pp512\+tg128"):
        (tg,) = readers.read_llama_bench(BENCH / "llama_bench.jsonl", model="llama-3.1-8b", gpu="rtx-4090")
    assert (tg.prompt, tg.output, tg.weights, tg.id) == (4096, 128, "fp16", "llama_bench:1:tg128@d4096")


def test_llama_bench_csv_two_gpus_layer_split():
    pp, tg = readers.read_llama_bench(BENCH / "llama_bench.csv", model="llama-3.1-70b", gpu="rtx-6000-ada")
    assert (pp.gpus, tg.gpus, tg.split, tg.value) == (2, 2, "layer", 18.37)


def test_llama_bench_markdown_repeats_blank_cells():
    with pytest.warns(UserWarning, match="not modelled"):
        pp, tg = readers.read_llama_bench(BENCH / "llama_bench.md", model="llama-3.1-8b", gpu="rtx-4090")
    assert (pp.value, tg.value, tg.weights) == (9921.51, 102.36, "q8_0")


def test_llama_bench_unknown_file_type_asks_for_weights(tmp_path):
    text = (BENCH / "llama_bench.json").read_text().replace("Q4_K - Medium", "IQ4_XS - 4.25 bpw")
    (tmp_path / "b.json").write_text(text)
    with pytest.raises(ValueError, match="weights="):
        readers.read_llama_bench(tmp_path / "b.json", model="llama-3.1-8b", gpu="rtx-4090")
    rows = readers.read_llama_bench(tmp_path / "b.json", model="llama-3.1-8b", gpu="rtx-4090", weights="int4")
    assert {m.weights for m in rows} == {"int4"}


def test_llama_bench_partial_offload_is_skipped(tmp_path):
    text = (BENCH / "llama_bench.json").read_text().replace('"n_gpu_layers": 99', '"n_gpu_layers": 20')
    (tmp_path / "b.json").write_text(text)
    with pytest.warns(UserWarning, match="offload"):
        assert readers.read_llama_bench(tmp_path / "b.json", model="llama-3.1-8b", gpu="rtx-4090") == []


# --- MLPerf ---------------------------------------------------------------------------------------


def test_mlperf_server():
    (tpot,) = readers.read_mlperf(BENCH / "mlperf_server_summary.txt", model="llama-2-70b", gpu="h100",
                                  gpus=8, prompt=294, output=294)
    assert tpot.metric == "tpot" and tpot.value == pytest.approx(35.812233)
    assert tpot.concurrency == round(14.87 * 10.762115049)  # Little's law


def test_mlperf_offline_needs_the_batch():
    path = BENCH / "mlperf_offline_summary.txt"
    with pytest.raises(ValueError, match="concurrency="):
        readers.read_mlperf(path, model="llama-2-70b", gpu="h100", gpus=8, prompt=294, output=294)
    (row,) = readers.read_mlperf(path, model="llama-2-70b", gpu="h100", gpus=8, prompt=294, output=294,
                                 concurrency=512)
    assert row.metric == "static_batch" and readers.to_case(row).value == pytest.approx(6182.40 / 8)


def test_mlperf_invalid_run_warns(tmp_path):
    text = (BENCH / "mlperf_server_summary.txt").read_text().replace("Result is : VALID", "Result is : INVALID")
    (tmp_path / "s.txt").write_text(text)
    with pytest.warns(UserWarning, match="INVALID"):
        readers.read_mlperf(tmp_path / "s.txt", model="llama-2-70b", gpu="h100", gpus=8, prompt=294, output=294)


# --- any file -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("measurements.csv", "csv"),
        ("measurements.json", "json"),
        ("vllm_c1.json", "vllm"),
        ("llama_bench.json", "llama-bench"),
        ("llama_bench.jsonl", "llama-bench"),
        ("llama_bench.csv", "llama-bench"),
        ("llama_bench.md", "llama-bench"),
        ("mlperf_server_summary.txt", "mlperf"),
    ],
)
def test_detect_format(name, expected):
    assert readers.detect_format(BENCH / name) == expected


def test_read_dispatches_and_rejects_unknown_formats(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = readers.read(BENCH / "llama_bench.md", model="llama-3.1-8b", gpu="rtx-4090")
    assert len(rows) == 2
    with pytest.raises(ValueError, match="format must be one of"):
        readers.read(BENCH / "measurements.csv", format="excel")
    (tmp_path / "x.txt").write_text("hello\n")
    with pytest.raises(ValueError, match="not recognised"):
        readers.read(tmp_path / "x.txt")


def test_cli_lists_the_reader_formats():
    from gpusizer.commands import calibrate as command

    assert tuple(sorted(readers.FORMATS)) == command.FORMATS
