"""Memory formulas: hand-derived values and physical invariants."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays, mutually_broadcastable_shapes

from gpusizer import memory
from gpusizer.architecture import KvLayout

# Llama 3.1 70B: 80 layers x 8 KV heads x 128 dims x (K and V) = 163,840 elements per token
LLAMA70 = KvLayout(full=2 * 80 * 8 * 128, windowed=(), state_bytes=0.0, conv=0, kv_heads=8)
# gpt-oss-120b: 18 full + 18 sliding(128) layers, 8 KV heads x 64 dims
GPT_OSS = KvLayout(full=18 * 2 * 8 * 64, windowed=((128, 18 * 2 * 8 * 64),), state_bytes=0.0, conv=0, kv_heads=8)


def test_llama70_kv_at_32k_by_16_in_fp8_is_80_gib():
    # 163,840 B/token x 32,768 tokens x 16 sequences = 85,899,345,920 B = 80 GiB
    assert memory.kv_cache_bytes(32768, 16, LLAMA70.full, 1.0) == 80 * 2**30
    assert memory.sequence_cache_bytes(32768, LLAMA70, 1.0) * 16 == 80 * 2**30


def test_sliding_window_layers_cap_at_the_window():
    # docs/methods.md#kv-cache-per-token: 18 full layers x 2,048 B/token;
    # 18 SWA layers capped at 128 tokens = 4.7 MB/sequence
    per_full_token = 18 * 2 * 8 * 64 * 2
    assert per_full_token == 36864
    at_8k = memory.sequence_cache_bytes(8192, GPT_OSS, 2.0)
    assert at_8k == per_full_token * 8192 + per_full_token * 128
    assert per_full_token * 128 == pytest.approx(4.7e6, rel=0.01)


def test_paged_blocks_round_each_sequence_up():
    # 1,000 tokens in 16-token blocks hold 63 blocks = 1,008 tokens
    assert memory.sequence_cache_bytes(1000, LLAMA70, 2.0, block_size=16) == 1008 * LLAMA70.full * 2


def test_tensor_parallel_splits_kv_heads_and_replicates_below_one_head():
    # 8 KV heads over 4 ranks: 2 heads each = 1/4; over 16 ranks each keeps 1 of 8 = 1/8, not 1/16
    assert memory.kv_shard_fraction(8, np.array([1, 2, 4, 8, 16])).tolist() == [1, 0.5, 0.25, 0.125, 0.125]
    mla = LLAMA70._replace(kv_heads=1)
    assert memory.sequence_cache_bytes(100, mla, 2.0, tensor_parallel=8) == memory.sequence_cache_bytes(100, mla, 2.0)


def test_recurrent_state_does_not_grow_with_context():
    ssm = KvLayout(full=0, windowed=(), state_bytes=1e6, conv=1000, kv_heads=2)
    assert memory.sequence_cache_bytes(10, ssm, 2.0) == memory.sequence_cache_bytes(100_000, ssm, 2.0) == 1e6 + 2000


def test_shard_bytes_hand_value():
    # 100 B of which 10 replicated over 3 ranks: 90/3 + 10
    assert memory.shard_bytes(100.0, 10.0, 3) == 40.0


def test_vllm_activation_peak_is_the_profiled_forward_pass_of_llama3_8b():
    # vllm#10517 (V0, RTX 3090, 256 sequences): peak_torch_memory less the 14.99 GiB of weights is
    # 17.06 - 14.99 = 2.07 GiB at 20,000 batched tokens and 17.98 - 14.99 = 2.99 GiB at 29,000: the forward
    # pass alone (108 KiB per token), the sampler's 256 x 128,256 logits peak afterwards and lower
    for tokens, logged in ((20000, 2.07), (29000, 2.99)):
        peak = memory.vllm_activation_bytes(tokens, 4096, 14336, 128256, 256, 2.0, 1, 4.0)
        assert peak / 2**30 == pytest.approx(logged, abs=0.05)


def test_max_context_is_the_exact_inverse():
    budget = 10e9
    best = memory.max_context(budget, 3, LLAMA70, 2.0, block_size=16)
    fits = 3 * memory.sequence_cache_bytes(best, LLAMA70, 2.0, block_size=16)
    over = 3 * memory.sequence_cache_bytes(best + 16, LLAMA70, 2.0, block_size=16)
    assert fits <= budget < over
    assert memory.max_context(-1.0, 1, LLAMA70, 2.0) == 0
    assert memory.max_context(1e30, 1, LLAMA70, 2.0, limit=131072) == 131072


@given(st.integers(1, 2**20), st.integers(1, 512))
def test_kv_monotone_in_context_and_concurrency(context, concurrency):
    here = memory.kv_cache_bytes(context, concurrency, LLAMA70.full, 2.0, block_size=16)
    assert memory.kv_cache_bytes(context + 1, concurrency, LLAMA70.full, 2.0, block_size=16) >= here
    assert memory.kv_cache_bytes(context, concurrency + 1, LLAMA70.full, 2.0, block_size=16) > here


@given(st.integers(1, 64), st.integers(1, 64))
def test_kv_linear_in_tokens_below_the_window(a, b):
    # below the 128-token window every layer holds every token: bytes are proportional to tokens
    total = memory.sequence_cache_bytes(a + b, GPT_OSS, 2.0)
    parts = memory.sequence_cache_bytes(a, GPT_OSS, 2.0) + memory.sequence_cache_bytes(b, GPT_OSS, 2.0)
    assert total == pytest.approx(parts)


@given(st.integers(1, 64), st.integers(1, 64))
def test_sharding_conserves_divisible_totals(tp_exponent, total):
    tp = 2 ** (tp_exponent % 4)
    assert memory.shard_bytes(float(total * tp), 0.0, tp) * tp == pytest.approx(total * tp)


@given(mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=4))
def test_arrays_equal_elementwise_scalars(shapes):
    context = np.arange(1, int(np.prod(shapes.input_shapes[0])) + 1).reshape(shapes.input_shapes[0]) * 997
    concurrency = np.arange(1, int(np.prod(shapes.input_shapes[1])) + 1).reshape(shapes.input_shapes[1])
    together = np.asarray(memory.kv_cache_bytes(context, concurrency, LLAMA70.full, 2.0, block_size=16))
    ctx_b, users_b = np.broadcast_arrays(context, concurrency)
    one_by_one = [memory.kv_cache_bytes(int(c), int(u), LLAMA70.full, 2.0, block_size=16)
                  for c, u in zip(ctx_b.ravel(), users_b.ravel(), strict=True)]
    assert together.shape == shapes.result_shape
    assert together.ravel().tolist() == one_by_one


@given(arrays(np.int64, st.integers(1, 5), elements=st.integers(1, 10**6)))
def test_scalar_in_scalar_out_array_in_array_out(context):
    assert isinstance(memory.cached_tokens(int(context[0]), 4096), float)
    assert isinstance(memory.cached_tokens(context, 4096), np.ndarray)
