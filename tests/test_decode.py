"""Decode: hand-derived ceilings, MoE expert counts and the monotonicity a step time must have."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusizer import catalog, decode, interconnect, performance

# Llama 3.1 8B, BF16 (architecture.parameter_counts): 6,979,321,856 linear + 525,336,576 LM head
# + 266,240 norm parameters, 2 bytes each; the 525M-row input embedding is gathered, not streamed.
LLAMA8_STREAMED = (6979321856 + 525336576 + 266240) * 2


def test_dense_bf16_ceiling_at_batch_1_is_bandwidth_over_streamed_bytes():
    h100 = catalog.gpu("h100-sxm")
    d = performance.speed("llama-3.1-8b", h100, context=1, concurrency=1).decode
    assert d.weight_bytes == LLAMA8_STREAMED
    kv = 2 * 32 * 8 * 128 * 2  # one token: K and V, 32 layers, 8 KV heads of 128, BF16
    activations = decode.activation_bytes(1, 32, 4096, 14336, 128256, 2)
    assert d.kv_bytes == kv and d.activation_bytes == activations
    assert d.ceiling_tokens_per_second == pytest.approx(h100.memory_bandwidth / (LLAMA8_STREAMED + kv + activations),
                                                        rel=1e-12)
    assert d.bound == "memory"
    # the embedding table would add 7 % if it were (wrongly) streamed
    assert 525336576 * 2 / LLAMA8_STREAMED == pytest.approx(0.07, abs=0.005)


def test_tied_embedding_is_streamed_once_as_the_head():
    m = catalog.model("gemma-3-27b")
    assert m.tie_embeddings
    d = performance.speed(m, "h100-sxm", context=1).decode
    from gpusizer import architecture

    c = architecture.parameter_counts(m)
    assert d.weight_bytes == (c.linear + c.embedding + c.vector) * 2


def test_experts_touched_matches_the_methods_table():
    # docs/methods.md#experts-touched-per-step:
    # DeepSeek-V3 (256, 8): 8, 57, 163, 252; gpt-oss-120b (128, 4): 4, 29, 82, 126
    assert decode.experts_touched([1, 8, 32, 128], 256, 8) == pytest.approx([8, 57, 163, 252], abs=0.6)
    assert decode.experts_touched([1, 8, 32, 128], 128, 4) == pytest.approx([4, 29, 82, 126], abs=0.6)


def test_moe_bytes_grow_with_batch_until_every_expert_is_touched():
    from gpusizer import architecture

    m = catalog.model("qwen3-30b-a3b")
    c = architecture.parameter_counts(m)
    batch = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096])
    d = performance.speed(m, "h100-sxm", context=1, concurrency=batch).decode
    assert np.all(np.diff(d.weight_bytes)[:8] > 0) and np.all(np.diff(d.weight_bytes) >= 0)
    every = (c.linear + c.head + c.vector + c.experts) * 2
    one = (c.linear + c.head + c.vector + c.experts_active) * 2
    assert d.weight_bytes[0] == pytest.approx(one, rel=1e-9)  # batch 1: k of E experts per layer
    assert d.weight_bytes[-1] == pytest.approx(every, rel=1e-6)  # saturated
    assert d.experts_touched[-1] == pytest.approx(128)


def test_sliding_window_and_state_space_caches_stop_growing():
    gpt = performance.speed("gpt-oss-120b", "h100-sxm", context=np.array([4096, 8192])).decode
    # 18 full layers grow by 4096 tokens x 18 x 2 x 8 x 64 elements x 2 B; sliding layers stay at 128 tokens
    assert np.diff(gpt.kv_bytes)[0] == 4096 * 18 * 2 * 8 * 64 * 2
    nxt = performance.speed("qwen3-next-80b-a3b", "h100-sxm", context=np.array([4096, 8192])).decode
    assert np.diff(nxt.kv_bytes)[0] == 4096 * 12 * 2 * 2 * 256 * 2  # only the 12 attention layers grow


def test_weight_only_quantization_computes_in_16_bit():
    # INT4 (AWQ) weights: a quarter of the bytes, but the GEMMs run at the BF16 rate, so the ridge batch
    # falls 4x and large batches turn compute-bound earlier than FP8 does
    kw = dict(context=1, concurrency=np.array([1, 512]))
    int4 = performance.speed("llama-3.1-70b", "h100-sxm", weights="int4", **kw).decode
    fp8 = performance.speed("llama-3.1-70b", "h100-sxm", weights="fp8", **kw).decode
    assert int4.ceiling_tokens_per_second[0] > fp8.ceiling_tokens_per_second[0]  # fewer bytes at batch 1
    assert int4.ceiling_aggregate_tokens_per_second[1] < fp8.ceiling_aggregate_tokens_per_second[1]
    assert list(int4.bound) == ["memory", "compute"]


def test_tensor_parallel_adds_allreduces_and_splits_bytes():
    one, two = (performance.speed("llama-3.1-70b", "h100-sxm", context=1, gpus=g).decode for g in (1, 2))
    assert one.allreduce_seconds == 0 and two.allreduce_seconds > 0
    assert two.weight_bytes == pytest.approx(one.weight_bytes / 2, rel=1e-3)
    assert interconnect.ring_allreduce_seconds(16384, 1, 1e11, 1e-5) == 0  # one GPU: no all-reduce


def test_layer_split_is_no_faster_than_one_gpu():
    one = performance.speed("llama-3.1-70b", "rtx-4090", weights="q4_k_m", engine="llama.cpp", context=512).decode
    four = performance.speed("llama-3.1-70b", "rtx-4090", weights="q4_k_m", engine="llama.cpp", context=512,
                             gpus=4, split="layer").decode
    assert four.ceiling_tokens_per_second == pytest.approx(one.ceiling_tokens_per_second)
    assert four.expected_tokens_per_second < one.expected_tokens_per_second


def test_unknown_engine_and_split_raise_naming_the_choices():
    with pytest.raises(ValueError, match="known: vllm"):
        performance.speed("llama-3.1-8b", "h100-sxm", engine="tgi")
    with pytest.raises(ValueError, match="split"):
        performance.speed("llama-3.1-8b", "h100-sxm", split="pipeline")
    with pytest.raises(ValueError, match="concurrency"):
        performance.speed("llama-3.1-8b", "h100-sxm", concurrency=0)


MODELS = ["llama-3.1-8b", "qwen3-30b-a3b", "gpt-oss-120b", "deepseek-v3", "qwen3-next-80b-a3b", "gemma-3-27b"]
GPUS = ["h100-sxm", "rtx-4090", "b200", "apple-m3-max", "a100-80gb-sxm", "l40s"]
config = st.fixed_dictionaries({
    "model": st.sampled_from(MODELS),
    "gpu": st.sampled_from(GPUS),
    "weights": st.sampled_from([None, "fp8", "int4", "q4_k_m", "nvfp4"]),
    "engine": st.sampled_from(["vllm", "sglang", "trtllm", "llama.cpp", "mlc", "eager"]),
    "gpus": st.sampled_from([1, 2, 8]),
})


@settings(max_examples=40, deadline=None)
@given(config, st.lists(st.integers(1, 2048), min_size=2, max_size=5), st.integers(1, 200_000))
def test_batch_properties(cfg, batches, context):
    batch = np.sort(np.array(batches))
    d = performance.speed(**cfg, context=context, concurrency=batch).decode
    assert np.all(d.expected_tokens_per_second <= d.ceiling_tokens_per_second)
    assert np.all(d.band[0] <= d.expected_tokens_per_second)
    assert np.all(d.band[1] <= d.ceiling_tokens_per_second * (1 + 1e-12))
    assert np.all(np.diff(d.expected_aggregate_tokens_per_second) >= -1e-9 * d.expected_aggregate_tokens_per_second[1:])
    assert np.all(np.diff(d.ceiling_aggregate_tokens_per_second) >= -1e-9 * d.ceiling_aggregate_tokens_per_second[1:])
    assert np.all(np.diff(d.expected_tokens_per_second) <= 1e-9 * d.expected_tokens_per_second[1:])
    assert np.all(np.diff(d.ceiling_tokens_per_second) <= 1e-9 * d.ceiling_tokens_per_second[1:])


@settings(max_examples=30, deadline=None)
@given(config, st.lists(st.integers(1, 500_000), min_size=2, max_size=5), st.integers(1, 512))
def test_per_user_speed_never_rises_with_context(cfg, contexts, batch):
    d = performance.speed(**cfg, context=np.sort(np.array(contexts)), concurrency=batch).decode
    assert np.all(np.diff(d.expected_tokens_per_second) <= 1e-9 * d.expected_tokens_per_second[1:])
    assert np.all(np.diff(d.ceiling_tokens_per_second) <= 1e-9 * d.ceiling_tokens_per_second[1:])
    assert np.all(d.tpot_seconds_expected >= d.tpot_seconds_ceiling)


def test_array_inputs_equal_elementwise_scalars():
    ctx, users = np.array([[1], [4096], [65536]]), np.array([1, 16, 256])
    d, p = performance.speed("qwen3-30b-a3b", "h100-sxm", context=ctx, concurrency=users, prompt=ctx)
    assert d.expected_tokens_per_second.shape == (3, 3)
    for i, j in np.ndindex(3, 3):
        ds, ps = performance.speed("qwen3-30b-a3b", "h100-sxm", context=int(ctx[i, 0]), concurrency=int(users[j]),
                                   prompt=int(ctx[i, 0]))
        assert d.expected_tokens_per_second[i, j] == pytest.approx(ds.expected_tokens_per_second, rel=1e-12)
        assert d.band[1][i, j] == pytest.approx(ds.band[1], rel=1e-12)
        assert p.ttft_seconds_expected[i, j] == pytest.approx(ps.ttft_seconds_expected, rel=1e-12)
        assert d.bound[i, j] == ds.bound
    assert isinstance(ds.expected_tokens_per_second, float)


def test_to_dict_is_plain():
    out = performance.speed("llama-3.1-8b", "h100-sxm", context=[1, 2]).to_dict()
    assert isinstance(out["decode"]["expected_tokens_per_second"], list)
    assert isinstance(out["decode"]["band"][0], list)


def test_static_batch_throughput_is_below_its_ceiling():
    b = performance.batch_throughput("llama-2-7b", "a100-80gb-sxm", prompt=128, output=128, batch=384)
    assert b.expected_tokens_per_second < b.ceiling_tokens_per_second
    assert b.prefill_seconds_expected > 0 and b.decode_seconds_expected > b.prefill_seconds_expected
