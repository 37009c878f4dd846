"""Engine defaults by hand: SGLang's mem_fraction_static, TensorRT-LLM's profiling requests, llama.cpp's
compute buffer (gpusizer.engine_defaults), and how estimate, fit --json and from-cmd use them."""

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gpusizer
from gpusizer import cli, engine_defaults, engines
from gpusizer.commandline import parse, predict
from gpusizer.commandline.startup import sglang_fraction

MiB = 2.0**20
H100 = 79.22 * 2**30  # the CUDA total gpusizer's h100-sxm holds: 81,121.28 MiB
H100_SMI = 81559 * MiB  # nvidia-smi's memory.total, which SGLang reads


def test_prefill_graph_sizes_count_the_capture_list():
    # 4-32 by 4 (8), 48-256 by 16 (14), 288-512 by 32 (8), 576-1024 by 64 (8), 1280-4096 by 256 (12) = 50;
    # then 4608, 5120, ..., 8192: 8 more
    assert engine_defaults.sglang_prefill_graph_sizes(4096) == 50
    assert engine_defaults.sglang_prefill_graph_sizes(8192) == 58
    assert engine_defaults.sglang_prefill_graph_sizes(3) == 0
    assert engine_defaults.sglang_prefill_graph_sizes(4) == 1


@pytest.mark.parametrize(
    ("capacity", "tp", "reserved_mib"),
    [
        (H100, 1, 512 + 1.5 * 8192 + 1 / 8 * 1024 + 2 * 256 + 8 * 58),  # 13,904
        (H100, 4, 512 + 1.5 * 8192 + 4 / 8 * 1024 + 2 * 512 + 8 * 58),  # 14,800
        (44.99 * 2**30, 1, 512 + 1.5 * 4096 + 128 + 2 * 32 + 8 * 50),  # L40S bucket (35-60 GiB): 7,248
        (23.55 * 2**30, 1, 512 + 1.5 * 4096 + 128 + 2 * 48 + 8 * 50),  # RTX 4090 bucket (20-35 GiB): 7,280
        (192e9, 8, 512 + 1.5 * 16384 + 1024 + 2 * 512 + 8 * 74),  # MI300X bucket (over 160 GiB): 27,728
    ],
)
def test_sglang_reserve_by_hand(capacity, tp, reserved_mib):
    assert engine_defaults.sglang_reserved_memory_bytes(capacity, tp) == pytest.approx(reserved_mib * MiB)


def test_sglang_reserve_is_at_least_10_gib_above_60_gib():
    # no graphs, 2048-token chunks: 512 + 3072 + 128 = 3,712 MiB, raised to the 10,240 MiB floor on an H200
    assert engine_defaults.sglang_reserved_memory_bytes(
        139.72 * 2**30, 1, chunked_prefill=2048, cuda_graph_max_bs=0, prefill_graph_sizes=0) == 10240 * MiB
    # under 60 GiB no floor
    assert engine_defaults.sglang_reserved_memory_bytes(
        44.99 * 2**30, 1, chunked_prefill=2048, cuda_graph_max_bs=0, prefill_graph_sizes=0) == 3712 * MiB


def test_sglang_fraction_reproduces_the_logged_defaults():
    # sgl-project/sglang PR #39713 (2026-09, H100, TP1): "mem_fraction_static=0.83 (default)":
    # (81,559 - 13,904) / 81,559 = 0.8295 -> 0.83
    assert engine_defaults.sglang_mem_fraction_static(H100_SMI, 1) == 0.83
    # sgl-project/sglang issue #29092 (2026-06, H100, Qwen3-32B): "0.828"; the prefill-graph list then had 74
    # sizes up to 8192: (81,559 - 14,032) / 81,559 = 0.8280
    assert engine_defaults.sglang_mem_fraction_static(H100_SMI, 1, prefill_graph_sizes=74) == 0.828
    # at the CUDA total gpusizer holds: (81,121.28 - 13,904) / 81,121.28 = 0.8286
    assert engine_defaults.sglang_mem_fraction_static(H100, 1) == 0.829
    assert engine_defaults.sglang_mem_fraction_static(H100, 4) == 0.818  # (81,121.28 - 14,800) / 81,121.28


def test_sglang_v04_table():
    # sglang 0.4 ServerArgs.__post_init__: 0.88 / 0.87 / 0.85 / 0.81 / 0.79 from TP 1 / 2 / 4 / 8 / 16
    assert [engine_defaults.sglang_v04_mem_fraction_static(tp) for tp in (1, 2, 3, 4, 8, 16, 32)] == [
        0.88, 0.87, 0.87, 0.85, 0.81, 0.79, 0.79]


@given(st.lists(st.floats(8, 300), min_size=1, max_size=5), st.sampled_from([1, 2, 4, 8]))
def test_fraction_broadcasts_like_its_scalars(gib, tp):
    capacity = np.array(gib) * 2**30
    array = engine_defaults.sglang_mem_fraction_static(capacity, tp)
    assert list(np.atleast_1d(array)) == [engine_defaults.sglang_mem_fraction_static(c, tp) for c in capacity]
    assert np.all((np.atleast_1d(array) > 0) & (np.atleast_1d(array) < 1))


def test_memory_fraction_dispatch():
    assert engine_defaults.memory_fraction("fixed", H100, 1, 0.93) == 0.93
    assert engine_defaults.memory_fraction("sglang", H100, 1, 0.5) == 0.829
    with pytest.raises(ValueError, match="sglang_v04"):
        engine_defaults.memory_fraction("sglang9", H100, 1, 0.9)
    for profile in engines.ENGINES.values():
        assert profile.fraction_rule in engine_defaults.FRACTION_RULES


def test_trtllm_profile_requests_by_hand():
    # TensorRT-LLM#6294: max_num_tokens 23,552, max_seq_len 157: prompts of 156 tokens, 150 x 156 = 23,400,
    # one of 152 more
    assert engine_defaults.trtllm_profile_requests(23552, 157) == 151
    assert engine_defaults.trtllm_profile_requests(8192, 8192) == 2  # 8,191 + 1
    assert engine_defaults.trtllm_profile_requests(2048, 1) == 2048  # one-token prompts


def test_tensorrt_engine_activation_reproduces_the_logged_device_memory():
    # TensorRT-LLM#1716 (0.11.0.dev2024052800, benchmarks/python llama_7b, fp16): max_num_tokens = 128 x 1,024
    # = 131,072; "Allocated 10304.00 MiB for execution context memory". Per token 2 x 4,096 + 3 x 11,008 =
    # 41,216 elements x 2 B = 82,432 B; x 131,072 / 2^20 = 10,304
    assert engine_defaults.tensorrt_engine_activation_bytes(131072, 4096, 11008, 2.0) / MiB == 10304.0
    # TensorRT-LLM#224 (0.5 build.py defaults): 25 x 2,048 = 51,200 tokens x 82,432 B = 4,220,518,400 B
    assert engine_defaults.tensorrt_engine_activation_bytes(25 * 2048, 4096, 11008, 2.0) == 4_220_518_400


def test_tensorrt_engine_activation_splits_only_the_ffn():
    # Llama-2-70B shape at TP4, 8,192 tokens: 8,192 x (2 x 8,192 + 3 x 28,672 / 4) x 2 B = 8,192 x 37,888 x 2
    assert engine_defaults.tensorrt_engine_activation_bytes(8192, 8192, 28672, 2.0, 4) == 8192 * 37888 * 2


@given(tokens=st.integers(1, 2**20), hidden=st.integers(1, 2**15), ffn=st.integers(1, 2**17),
       tp=st.sampled_from([1, 2, 4, 8]))
def test_tensorrt_engine_holds_less_than_a_pytorch_forward_pass(tokens, hidden, ffn, tp):
    # TensorRT's planner keeps one residual-width buffer fewer than vLLM's profiling pass, and both are
    # linear in the token count
    engine = engine_defaults.tensorrt_engine_activation_bytes(tokens, hidden, ffn, 2.0, tp)
    torch = gpusizer.memory.vllm_forward_activation_bytes(tokens, hidden, ffn, 2.0, tp)
    assert torch - engine == pytest.approx(tokens * hidden * 2.0)
    assert engine_defaults.tensorrt_engine_activation_bytes(2 * tokens, hidden, ffn, 2.0, tp) == pytest.approx(
        2 * engine)


def test_estimate_with_a_tensorrt_engine_reproduces_issue_224():
    # TensorRT-LLM#224: Llama-2-7B fp16 on an A10 (24e9 B), 0.95 of the memory free after the engine loads,
    # 10,718 tokens logged. By hand: weights 6,738,415,616 x 2 B; engine device memory 4,220,518,400 B
    # (above); C++ runtime 0.4 GiB; pool = 0.95 x (24e9 - 13,476,831,232 - 4,220,518,400 - 0.4 x 2^30)
    # = 5,579,495,956 B; at 524,288 B a token (32 x 2 x 32 x 128 x 2 B): 10,642 tokens, 0.7 % under the log
    profile = engines.engine("trtllm-engine").model_copy(update={
        "memory_fraction": 0.95, "batched_tokens": 25 * 2048, "max_sequences": 25})
    engines.EngineProfile.model_validate(profile.model_dump())
    r = gpusizer.estimate("llama-2-7b", "a10", engine=profile, context=6144, weights="fp16", kv_cache="fp16")
    assert r.memory.activation_bytes == 4_220_518_400
    pool = 0.95 * (24e9 - 6_738_415_616 * 2 - 4_220_518_400 - 0.4 * 2**30)
    assert r.kv_pool_bytes == pytest.approx(pool)
    assert r.kv_pool_tokens == int(pool // 524288) == 10642
    assert abs(r.kv_pool_tokens - 10718) / 10718 < 0.01


def test_trtllm_engine_profile_and_its_aliases():
    profile = engines.engine("trtllm-engine")
    assert engines.engine("trtllm-cpp") is profile and engines.engine("TRTLLM-TensorRT") is profile
    # executor.h KvCacheConfig::kDefaultGpuMemFraction 0.9; BuildConfig max_num_tokens 8192, max_batch_size 2048;
    # PluginConfig.tokens_per_block 32; no PyTorch, no CUDA graphs: 0.4 GiB of CUDA context and cuBLAS
    assert (profile.kv_rule, profile.memory_fraction, profile.activation) == ("share_of_free", 0.9, "tensorrt")
    assert (profile.batched_tokens, profile.max_sequences, profile.block_size) == (8192, 2048, 32)
    assert (profile.runtime_bytes, profile.cuda_graph_bytes) == (0.4 * 2**30, 0.0)
    # its speed is TensorRT-LLM's: the same efficiency class, so the same decode as the PyTorch profile
    assert gpusizer.efficiency.engine_class("trtllm-engine") == "trtllm"


def test_fit_json_with_the_trtllm_engine_profile(capsys):
    # Llama-2-7B fp16 on an A10 (24e9 B) at the defaults: engine 8,192 x (2 x 4,096 + 3 x 11,008) x 2 B
    # = 675,282,944 B; pool = 0.9 x (24e9 - 13,476,831,232 - 675,282,944 - 429,496,729.6) = 8,476,550,185 B;
    # at 524,288 B a token: 16,167 tokens
    assert cli.main(["fit", "llama-2-7b", "a10", "--engine", "trtllm-engine", "--weights", "fp16",
                     "--context", "4096", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["engine"] == "trtllm-engine" and data["memory_fraction"] == 0.9
    assert data["memory"]["activation_bytes"] == 675_282_944
    assert data["kv_pool_bytes"] == round(0.9 * (24e9 - 13_476_831_232 - 675_282_944 - 0.4 * 2**30))
    assert data["kv_pool_tokens"] == 16167
    terms = data["engine_memory"]  # named as the C++ runtime logs them
    assert terms["execution_context_memory_bytes"] == 675_282_944
    assert terms["max_tokens_in_paged_kv_cache"] == 16167 and terms["free_gpu_memory_fraction"] == 0.9


def test_from_cmd_backend_tensorrt_reproduces_issue_224(capsys):
    # TensorRT-LLM#224's build (max_batch_size 25 x max_input_len 2,048 = 51,200 tokens, fraction 0.95) as a
    # trtllm-serve line: the same 10,642 tokens as the estimate above and tools/engine_memory.py
    line = ("trtllm-serve meta-llama/Llama-2-7b-hf --backend tensorrt --max_seq_len 6144 --max_batch_size 25 "
            "--max_num_tokens 51200 --kv_cache_free_gpu_memory_fraction 0.95 --port 8000")
    p = predict(parse(line), "a10")
    assert p.inputs["engine"].name == "trtllm-engine" and p.inputs["engine"].batched_tokens == 51200
    assert p.startup["kv_cache_tokens"] == 10642
    # 4,220,518,400 B = 4,025.00 MiB of engine device memory, logged before the pool
    assert p.lines[0] == "[MemUsageChange] Allocated 4025.00 MiB for execution context memory."
    assert p.lines[1].endswith("paged KV cache (10,642).")
    assert p.command.ignored_flags == ("--port 8000",)
    # the PyTorch backend stays the default: the same line without --backend is the trtllm profile
    assert predict(parse(line.replace("--backend tensorrt ", "")), "a10").inputs["engine"].name == "trtllm"
    assert predict(parse(line.replace("tensorrt", "trt")), "a10").inputs["engine"].name == "trtllm-engine"
    assert cli.main(["from-cmd", "--gpu", "a10", "--json", line + " --mystery 1"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["engine"], data["profile"]) == ("trtllm", "trtllm-engine")
    assert data["unknown_flags"] == ["--mystery 1"] and data["startup"]["kv_cache_tokens"] == 10642
    with pytest.raises(ValueError, match="--backend: 'onnx' is not a trtllm-serve backend"):
        predict(parse("trtllm-serve meta-llama/Llama-2-7b-hf --backend onnx"), "a10")
    assert cli.main(["from-cmd", "--gpu", "a10", "trtllm-serve meta-llama/Llama-2-7b-hf --backend onnx"]) == 2
    assert "--backend: 'onnx'" in capsys.readouterr().err


def test_compare_lists_the_trtllm_engine_profile(capsys):
    assert cli.main(["compare", "llama-2-7b", "a10", "--weights", "fp16", "--context", "4096"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    row = next(r for r in rows if r[:1] == ["trtllm-engine"])
    assert row[1:3] == ["share_of_free", "0.9"] and row[6] == "16,167"  # the fit above


def test_llama_cpp_compute_buffer_by_hand():
    # ollama#16416, gpt-oss-120b at -ub 1024: "796" MiB; 4 x 1024 x (201,088 + 2,880) B = 796.75 MiB
    assert engine_defaults.llama_cpp_compute_buffer_bytes(1024, 2880, 11520, 201088) == 4 * 1024 * 203968
    # Llama-3-8B at -ub 512: 4 x 512 x (128,256 + 4,096) = 258.5 MiB
    assert engine_defaults.llama_cpp_compute_buffer_bytes(512, 4096, 14336, 128256) / MiB == 258.5
    # small vocabulary, wide FFN (Llama-2-70B shape): the SwiGLU step, 4 x 512 x (3 x 28,672 + 8,192)
    assert engine_defaults.llama_cpp_compute_buffer_bytes(512, 8192, 28672, 32000) == 4 * 512 * 94208


def test_estimate_uses_the_fraction_in_force():
    sglang = gpusizer.estimate("llama-3.1-8b", "h100-sxm", engine="sglang", context=8192)
    assert sglang.memory_fraction == 0.829
    tp4 = gpusizer.estimate("llama-3.1-70b", "h100-sxm", gpus=4, engine="sglang", context=8192)
    assert tp4.memory_fraction == 0.818
    fixed = engines.engine("sglang").model_copy(update={"memory_fraction": 0.93, "fraction_rule": "fixed"})
    assert gpusizer.estimate("llama-3.1-8b", "h100-sxm", engine=fixed, context=8192).memory_fraction == 0.93
    assert gpusizer.estimate("llama-3.1-8b", "h100-sxm", engine="vllm", context=8192).memory_fraction == 0.9


def test_fit_json_names_the_fraction_as_each_engine_does():
    for engine, name, value in (("vllm", "gpu_memory_utilization", 0.9), ("sglang", "mem_fraction_static", 0.829),
                                ("trtllm", "free_gpu_memory_fraction", 0.9)):
        result = gpusizer.estimate("llama-3.1-8b", "h100-sxm", engine=engine, context=8192)
        terms = cli.fit_json(result)["engine_memory"]
        assert terms[name] == value and terms["memory_fraction"] == value


def test_from_cmd_sglang_default_fraction_follows_its_flags():
    assert sglang_fraction({}, H100, 1, 1) == 0.829
    # --cuda-graph-max-bs 32: 512 + 12,288 + 128 + 64 + 464 = 13,456 MiB -> (81,121.28 - 13,456) / 81,121.28
    assert sglang_fraction({"cuda_graph_max_bs": 32}, H100, 1, 1) == 0.834
    # --chunked-prefill-size 4096: 512 + 6,144 + 128 + 512 + 400 = 7,696, raised to 10,240 -> 0.874
    assert sglang_fraction({"batched_tokens": 4096}, H100, 1, 1) == 0.874
    given_fraction = predict(parse("python -m sglang.launch_server --model-path Qwen/Qwen3-8B "
                                   "--mem-fraction-static 0.7"), "h100-sxm")
    assert given_fraction.estimate.memory_fraction == 0.7
    default = predict(parse("python -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 4"), "h100-sxm")
    assert default.estimate.memory_fraction == 0.818


def test_sweep_takes_the_trtllm_engine_profile(capsys):
    # the vectorised grid gives the scalar fit's pool (16,167 tokens above) and trtllm's speed constants
    assert cli.main(["sweep", "--models", "llama-2-7b", "--gpus", "a10", "--engine", "trtllm,trtllm-engine",
                     "--weights", "fp16", "--context", "4096", "--columns",
                     "engine,kv_pool_tokens,activation_bytes,decode_expected_tokens_per_second"]) == 0
    rows = [line.split(",") for line in capsys.readouterr().out.splitlines()[1:]]
    assert [r[0] for r in rows] == ["trtllm", "trtllm-engine"]
    assert rows[1][1:3] == ["16167", "675282944"] and rows[0][3] == rows[1][3]
