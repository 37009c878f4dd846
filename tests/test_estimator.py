"""The orchestrator: the flagship question by hand, invariants, and errors that name the parameter."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpusizer
from gpusizer import architecture, estimate, precision

GiB = 2**30


def test_flagship_llama70b_fp8_on_h200_by_hand():
    e = estimate("llama-3.1-70b", "h200", weights="fp8", kv_cache="fp8", context=32768, concurrency=16)
    # weights: 68,451,041,280 linear params x (8 + 32/16384)/8 B + (2 x 1,050,673,152 embedding/head
    # + 1,318,912 norm) params x 2 B = 68,467,752,960 + 4,205,330,432 = 72,673,083,392 B
    assert e.memory.weights_bytes == pytest.approx(72_673_083_392, abs=1)
    # KV: 2 x 80 layers x 8 heads x 128 x 1 B = 163,840 B/token; x 32,768 x 16 = 80 GiB
    assert e.memory.kv_cache_bytes == 80 * GiB
    # activation peak: the larger of forward 8192 x (3 x 28,672 + 3 x 8,192) x 2 B = 1,811,939,328 B and
    # sampler 16 x min(256, 8192) x 128,256 = 525,336,576 B (the profile run samples after the forward pass)
    assert e.memory.activation_bytes == pytest.approx(1_811_939_328)
    # runtime: 0.2 GiB non-torch + 0.3 GiB CUDA graphs (counted in the budget from vLLM v0.21)
    assert e.memory.runtime_bytes == pytest.approx(0.5 * GiB)
    # H200: torch reports 139.72 GiB (vllm#10702); vLLM may use 0.9 of it
    assert e.memory.capacity_bytes == pytest.approx(139.72 * GiB)
    assert e.memory.budget_bytes == pytest.approx(0.9 * 139.72 * GiB)
    pool = 0.9 * 139.72 * GiB - 72_673_083_392 - 1_811_939_328 - 0.5 * GiB
    assert e.kv_pool_bytes == pytest.approx(pool)
    assert e.memory.headroom_bytes == pytest.approx(pool - 80 * GiB)
    assert not e.fits  # 16 x 32K needs 80 GiB of KV, the pool is 55.9 GiB
    assert e.max_concurrency == int(pool // (163_840 * 32768)) == 11
    assert e.kv_pool_tokens == int(pool // 163_840)
    # at 16 sequences the longest context is the pool / 16 / 163,840 B, in whole 16-token blocks
    assert e.max_context == int(pool / 16 / 163_840) // 16 * 16


def test_fits_with_fewer_sequences_and_on_two_gpus():
    assert estimate("llama-3.1-70b", "h200", weights="fp8", kv_cache="fp8", context=32768, concurrency=11).fits
    assert estimate("llama-3.1-70b", "h200", weights="fp8", kv_cache="fp8", context=32768, concurrency=16, gpus=2).fits


def test_defaults_follow_the_checkpoint():
    assert estimate("deepseek-v3", "h200", gpus=8).weights == "fp8"
    oss = estimate("gpt-oss-120b", "h100")
    assert (oss.weights, oss.expert_weights, oss.kv_cache) == ("bf16", "mxfp4", "bf16")
    # gpt-oss-120b model card: 60.8 GiB checkpoint; MXFP4 experts + BF16 rest. SGLang on Hopper allocates
    # the experts as stored; vLLM pads them (engines.padded_expert_share, tests/test_engine_logs.py)
    stored = estimate("gpt-oss-120b", "h100", engine="sglang").memory.weights_bytes
    assert stored / GiB == pytest.approx(60.8, rel=0.03)
    assert oss.memory.weights_bytes > stored


def test_system_target_means_its_gpus():
    e = estimate("deepseek-r1", "hgx-h200-8x")
    assert (e.gpu, e.gpus) == ("h200-sxm", 8)


def test_mla_cache_is_replicated_on_every_rank():
    one = estimate("deepseek-v3", "h200", context=4096, gpus=1)
    eight = estimate("deepseek-v3", "h200", context=4096, gpus=8)
    # 61 layers x (512 + 64) x 2 B = 70,272 B/token, whole on every rank
    assert one.memory.kv_cache_bytes == eight.memory.kv_cache_bytes == 70_272 * 4096


def test_llama_cpp_profile_has_no_utilisation_cap():
    e = estimate("llama-3.1-8b", "rtx-4090", weights="q4_k_m", engine="llama.cpp", context=8192)
    assert e.memory.budget_bytes == pytest.approx(e.memory.capacity_bytes)
    # Q4_K_M covers embeddings too: 8.03e9 params x 4.84 bits, less the token embedding (128,256 x 4,096
    # params) that llama.cpp keeps in host memory
    params = architecture.parameter_counts(gpusizer.model("llama-3.1-8b")).total
    assert e.memory.weights_bytes == pytest.approx((params - 128_256 * 4_096) * 4.84 / 8, rel=1e-3)


def test_arrays_broadcast_like_scalars():
    ctx = np.array([1024, 8192, 32768])
    users = np.array([[1], [8], [64]])
    e = estimate("qwen3-32b", "h100", context=ctx, concurrency=users)
    assert e.fits.shape == (3, 3)
    for i in range(3):
        for j in range(3):
            one = estimate("qwen3-32b", "h100", context=int(ctx[j]), concurrency=int(users[i, 0]))
            assert one.memory.total_bytes == e.memory.total_bytes[i, j]
            assert one.fits == e.fits[i, j]
            assert one.max_context == e.max_context[i, 0]


MODELS = [
    "llama-3.1-8b", "gemma-3-27b", "gpt-oss-20b", "qwen3-next-80b-a3b", "deepseek-v2-lite", "nemotron-3-nano-30b-a3b",
]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(MODELS), st.integers(1, 2**17), st.integers(1, 256))
def test_memory_monotone_and_fit_inherited_by_smaller_concurrency(name, context, users):
    e = estimate(name, "h100", context=context, concurrency=users)
    more_ctx = estimate(name, "h100", context=context + 1, concurrency=users)
    more_users = estimate(name, "h100", context=context, concurrency=users + 1)
    assert more_ctx.memory.total_bytes >= e.memory.total_bytes
    assert more_users.memory.total_bytes >= e.memory.total_bytes
    if e.fits:
        assert estimate(name, "h100", context=context, concurrency=max(users - 1, 1)).fits


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(MODELS), st.sampled_from([1, 2, 4, 8]))
def test_tensor_parallel_conserves_weight_bytes(name, tp):
    record = gpusizer.model(name)
    e = estimate(record, "h100", gpus=tp, engine="sglang")  # vLLM pads MXFP4 experts (engines.padded_expert_share)
    replicated = architecture.replicated_params(record) * 2
    total = precision.stored_weight_bytes(architecture.parameter_counts(record), record.weights,
                                          record.expert_weights, record.activation_dtype)
    assert (e.memory.weights_bytes - replicated) * tp == pytest.approx(total - replicated)
    assert e.memory.weights_bytes <= estimate(record, "h100", gpus=1, engine="sglang").memory.weights_bytes


def test_quantising_weights_never_increases_memory():
    sizes = [estimate("qwen3-32b", "h100", weights=w).memory.weights_bytes for w in ("bf16", "fp8", "int4", "q2_k")]
    assert sizes == sorted(sizes, reverse=True)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"context": -1}, "context must be >= 1"),
        ({"context": 1.5}, "context must be a whole number"),
        ({"concurrency": 0}, "concurrency must be >= 1"),
        ({"weights": "fp5"}, "unknown weights 'fp5'"),
        ({"kv_cache": "int3"}, "kv_cache"),
        ({"engine": "ollama9"}, "unknown engine"),
        ({"gpus": 0}, "gpus must be >= 1"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message):
        estimate("llama-3.1-8b", "h100", **kwargs)


def test_unknown_ids_suggest_the_closest():
    with pytest.raises(KeyError, match=r"llama-3\.1-8b"):
        estimate("llama-3.1-8", "h100")
    with pytest.raises(KeyError, match="h100"):
        estimate("llama-3.1-8b", "h1000")


def test_does_not_fit_is_an_answer():
    e = estimate("llama-3.1-405b", "rtx-4090")
    assert not e.fits and e.memory.headroom_bytes < 0 and e.max_concurrency == 0 and e.max_context == 0


def _types(value):
    """The nested Python types of an estimate's fields (``to_dict`` keeps scalars as they are)."""
    if isinstance(value, dict):
        return {key: _types(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_types(item) for item in value]
    return type(value).__name__


@pytest.mark.parametrize("gpus", [1, 8])
@pytest.mark.parametrize("context", [np.int64(8192), np.asarray(8192), 8192.0, np.float32(8192)])
def test_every_kind_of_scalar_input_gives_the_same_plain_python_estimate(context, gpus):
    # One configuration runs on Python numbers whatever kind of scalar it came in as: numpy scalars,
    # 0-d arrays and whole floats give the same values and the same Python types, field by field.
    reference = estimate("llama-3.1-70b", "h200", context=8192, concurrency=4, gpus=gpus)
    other = estimate("llama-3.1-70b", "h200", context=context, concurrency=np.int32(4), gpus=gpus)
    assert other.to_dict() == reference.to_dict()
    assert _types(dataclasses.asdict(other)) == _types(dataclasses.asdict(reference))
    assert not any(isinstance(v, np.generic | np.ndarray) for v in dataclasses.asdict(other.decode).values())
