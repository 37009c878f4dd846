"""Engines side by side (``comparison.compare_engines``, ``gpusizer compare``): the pool rules by hand, the reasons."""

import json

import pytest

from gpusizer import cli, comparison, engines, estimate


@pytest.fixture(scope="module")
def rows():
    return {r.engine: r for r in comparison.compare_engines("llama-3.1-8b", "h100-sxm", concurrency=16)}


def test_pools_follow_each_rule_by_hand(rows):
    m = estimate("llama-3.1-8b", "h100-sxm").memory
    capacity, weights = m.capacity_bytes, m.weights_bytes  # 85.06 GB reported, 16.06 GB of BF16 weights
    vllm, trt = rows["vllm"], rows["trtllm"]
    # vLLM: 0.9 M - W - O = 0.9 x 85,061,827,297 - 16,060,522,496 - 1,442,840,576 = 59,052,281,496 B
    assert vllm.kv_pool_bytes == pytest.approx(0.9 * capacity - weights - vllm.overhead_bytes)
    assert vllm.kv_pool_bytes == pytest.approx(59_052_281_495.552)
    # TensorRT-LLM: 0.9 (M - W - O)
    assert trt.kv_pool_bytes == pytest.approx(0.9 * (capacity - weights - trt.overhead_bytes))
    # llama.cpp: M - W - O, no fraction, its W without the token embedding it keeps in host memory:
    # 128,256 x 4,096 x 2 B = 1,050,673,152 B less
    cpp = rows["llama.cpp"]
    assert cpp.kv_pool_bytes == pytest.approx(capacity - (weights - 1_050_673_152) - cpp.overhead_bytes)
    # SGLang: f (M - R) - W with R its non-torch memory (1 GiB in the profile), overheads inside (1 - f)(M - R);
    # f its default on an H100 at TP1: (81,121.28 - 13,904) / 81,121.28 MiB = 0.829 (engine_defaults)
    sgl = rows["sglang"]
    assert sgl.memory_fraction == 0.829
    assert sgl.kv_pool_bytes == pytest.approx(0.829 * (capacity - 2**30) - weights)


def test_reasons_come_from_the_profiles(rows):
    assert rows["vllm"].reasons == ()
    sgl = rows["sglang"].reasons
    assert "memory fraction: 0.829 against 0.9 (vllm)" in sgl
    assert "KV block (tokens): 1 against 16 (vllm)" in sgl
    assert any(r.startswith("sequences per step: 1 against 256") for r in rows["llama.cpp"].reasons)
    assert any(r.startswith("speed: efficiency constants trtllm/") for r in rows["trtllm"].reasons)
    for name, row in rows.items():
        assert row.formula == comparison.RULE_FORMULAS[engines.engine(name).kv_rule]
        assert row.sources == engines.engine(name).source


def test_running_sequences_are_capped_by_the_engine(rows):
    # llama.cpp's profile runs one slot (max_sequences 1); the others run the 16 asked (pool holds 54)
    assert rows["llama.cpp"].concurrency == 1 and rows["vllm"].concurrency == 16
    single = estimate("llama-3.1-8b", "h100-sxm", engine="llama.cpp", concurrency=1)
    assert rows["llama.cpp"].decode_tokens_per_second == pytest.approx(
        float(single.decode.expected_aggregate_tokens_per_second))


def test_cli_table_and_json(capsys):
    assert cli.main(["compare", "llama-3.1-8b", "h100", "--concurrency", "16"]) == 0
    out = capsys.readouterr().out
    assert "share_of_total" in out and "memory fraction: 0.829 against 0.9 (vllm)" in out
    assert cli.main(["compare", "llama-3.1-8b", "h100", "--engines", "sglang,vllm", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [e["engine"] for e in data["engines"]] == ["sglang", "vllm"]
    assert data["engines"][1]["reasons"][0].endswith("(sglang)")
    assert isinstance(data["engines"][0]["kv_pool_bytes"], float | int)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["compare", "llama-3.1-8b", "h100", "--engines", "tgi"])
    assert exit_.value.code == 2 and "unknown engine 'tgi'; known: vllm" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["compare", "--help"])
    assert "gpusizer compare llama-3.1-8b h100" in capsys.readouterr().out
