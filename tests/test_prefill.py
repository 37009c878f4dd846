"""Prefill: pair counts, chunks, and how the time scales with the prompt."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusizer import catalog, performance, prefill


@given(st.integers(0, 60), st.integers(0, 60), st.integers(1, 80))
def test_attention_pairs_equal_the_brute_force_count(tokens, prefix, window):
    brute = sum(min(p + 1, window) for p in range(prefix, prefix + tokens))
    assert prefill.attention_pairs(tokens, prefix, window) == brute
    full = sum(p + 1 for p in range(prefix, prefix + tokens))
    assert prefill.attention_pairs(tokens, prefix) == full


def test_chunks_lay_out_the_prompt():
    sizes, before = prefill.chunk_tokens([1200, 100], 512)
    assert sizes.tolist() == [[512, 512, 176], [100, 0, 0]]
    assert before.tolist() == [[0, 512, 1024], [0, 512, 1024]]
    assert prefill.chunked_seconds([[1.0, 1.0, 0.5], [0.2, 9.0, 9.0]], sizes, 0.1) == pytest.approx([2.6, 0.3])


def ceiling(prompt, model="llama-3.1-8b", gpu="h100-sxm", **kw):
    return performance.speed(model, gpu, context=1, prompt=prompt, chunk=np.inf, **kw).prefill.seconds_ceiling


def test_short_prompts_scale_linearly_long_ones_quadratically():
    # Llama 3.1 8B: attention adds 32*4*4096*S^2/2 FLOPs to 2*7.5e9*S: 2% at 1K tokens, 18x at 1M
    short = ceiling(np.array([1024, 2048]))
    assert short[1] / short[0] == pytest.approx(2.0, rel=0.03)
    long = ceiling(np.array([2**20, 2**21]))
    assert long[1] / long[0] == pytest.approx(4.0, rel=0.06)


def test_prefill_never_beats_reading_the_weights_once():
    gpu = catalog.gpu("h100-sxm")
    p = performance.speed("llama-3.1-8b", gpu, context=1, prompt=np.array([1, 16, 64])).prefill
    weights = (6979321856 + 525336576 + 266240) * 2  # linear + LM head + vectors, BF16
    assert np.all(p.seconds_ceiling >= weights / gpu.memory_bandwidth)


def test_chunks_below_the_ridge_reread_the_weights_and_cost_more():
    # RTX 4090 BF16 ridge: 165.2e12 / 1.008e12 = 164 FLOP/B, i.e. about 164 tokens per weight byte pair
    kw = dict(context=1, prompt=8192)
    whole, above, below = (performance.speed("llama-3.1-8b", "rtx-4090", chunk=c, **kw).prefill
                           for c in (np.inf, 512, 64))
    assert (whole.chunks, above.chunks, below.chunks) == (1, 16, 128)
    assert above.flops == pytest.approx(whole.flops) == below.flops  # the same arithmetic
    assert above.seconds_ceiling == pytest.approx(whole.seconds_ceiling, rel=1e-9)  # still compute-bound
    assert below.seconds_ceiling > 1.2 * whole.seconds_ceiling  # each 64-token chunk waits for the weights
    assert below.seconds_expected > above.seconds_expected > whole.seconds_expected


def test_ttft_is_prefill_plus_the_first_decode_step():
    d, p = performance.speed("llama-3.1-8b", "h100-sxm", context=2048, prompt=2048)
    assert p.ttft_seconds_expected == pytest.approx(p.seconds_expected + d.tpot_seconds_expected)
    assert p.ttft_seconds_ceiling == pytest.approx(p.seconds_ceiling + d.tpot_seconds_ceiling)


def test_mla_prefill_runs_in_mha_mode():
    # DeepSeek-V3: 61 layers x 2 x 128 heads x (192 + 128) FLOPs per pair, S(S+1)/2 pairs
    s = 4096
    p = performance.speed("deepseek-v3", "h200-sxm", context=1, prompt=s, gpus=8, chunk=np.inf).prefill
    m = catalog.model("deepseek-v3")
    from gpusizer import architecture

    counts = architecture.parameter_counts(m)
    gemm = 2 * s * (counts.linear + counts.experts_active) + 2 * counts.head
    attention = 61 * 2 * 128 * (192 + 128) * s * (s + 1) / 2
    assert p.flops * 8 == pytest.approx(gemm + attention, rel=1e-9)


def test_sliding_window_layers_grow_linearly():
    # gpt-oss-120b: 18 sliding layers (window 128) + 18 full; attention of the sliding half is linear in S
    from gpusizer import architecture

    m = catalog.model("gpt-oss-120b")
    counts = architecture.parameter_counts(m)
    per_pair = 2 * m.num_heads * 2 * m.head_dim
    for s in (4096, 8192):
        flops = performance.speed(m, "h100-sxm", context=1, prompt=s, chunk=np.inf).prefill.flops
        gemm = 2 * s * (counts.linear + counts.experts_active) + 2 * counts.head
        full = 18 * per_pair * s * (s + 1) / 2
        sliding = 18 * per_pair * (128 * 129 / 2 + (s - 128) * 128)  # capped at the window
        assert flops == pytest.approx(gemm + full + sliding, rel=1e-12)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 300_000), st.sampled_from(["llama-3.1-8b", "qwen3-30b-a3b", "gpt-oss-120b"]))
def test_expected_prefill_is_never_faster_than_the_ceiling(prompt, model):
    p = performance.speed(model, "h100-sxm", context=1, prompt=prompt).prefill
    assert p.seconds_expected >= p.seconds_ceiling
    assert p.band[0] <= p.seconds_expected <= p.band[1]
