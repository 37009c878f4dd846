"""Prefix caching (gpusizer.prefix_cache): the formulas by hand, the composition against the uncached estimate,
the CLI, and the invariants the issue names (0 % hit is no caching, TTFT never rises with the hit rate, at least
one token is computed, a shared block is held once)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusizer import estimate, prefix_cache
from gpusizer.cli import main
from gpusizer.prefix_cache import PrefixCaching

LLAMA = dict(context=8192, concurrency=16)


def test_cached_tokens_by_hand() -> None:
    # vLLM, 16-token blocks: 0.6 x 4096 = 2457.6 -> 153 whole blocks = 2448 tokens
    assert prefix_cache.cached_tokens(4096, 0.6, granularity=16) == 2448.0
    # everything hit: capped at S - 1 = 4095 -> 255 blocks = 4080 (vLLM recomputes the last block); SGLang 4095
    assert prefix_cache.cached_tokens(4096, 1.0, granularity=16) == 4080.0
    assert prefix_cache.cached_tokens(4096, 1.0, granularity=1) == 4095.0
    # a shared prefix of 1000 tokens and a lower hit rate: the prefix is always hit, 62 blocks = 992
    assert prefix_cache.cached_tokens(4096, 0.1, shared=1000, granularity=16) == 992.0
    assert prefix_cache.cached_tokens(1, 1.0) == 0.0  # a one-token prompt computes its token


def test_pool_by_hand() -> None:
    # 4 sequences of 1000 bytes sharing 600: 600 + 4 x 400 = 2200; a pool of 10,000 holds (10000 - 600) / 400 = 23
    assert prefix_cache.pool_bytes(4, 1000.0, 600.0) == 2200.0
    assert prefix_cache.max_concurrency(10_000.0, 1000.0, 600.0) == 23
    assert prefix_cache.max_concurrency(10_000.0, 1000.0, 0.0) == 10  # nothing shared: 10000 / 1000


def test_session_hit_rate_by_hand() -> None:
    # 4 turns, system 1000, user 200, answer 300: prompts 1200, 1700, 2200, 2700 (sum 7800), new tokens 4 x 200
    rate, mean = prefix_cache.session_hit_rate(4, 1000, 200, 300)
    assert rate == pytest.approx(1 - 800 / 7800) and mean == 1950.0
    assert prefix_cache.session_hit_rate(1, 0, 200, 300)[0] == 0.0  # one turn, no system prompt: nothing cached


def test_llama_8b_shared_prefix_by_hand() -> None:
    # Llama 3.1 8B KV in bf16: 2 x 8 heads x 128 x 32 layers x 2 B = 131,072 B per token; a 4096-token prefix is
    # 536,870,912 B, a sequence of 8192 is 1,073,741,824 B. 16 sequences: 0.537e9 + 16 x 0.537e9 = 9,126,805,504 B.
    e = estimate("llama-3.1-8b", "h100-sxm", prefix=PrefixCaching(shared_tokens=4096), **LLAMA)
    p = e.prefix_cache
    assert p.shared_tokens == 4096 and p.shared_bytes == 536_870_912
    assert p.kv_cache_bytes == 536_870_912 * 17
    pool = e.kv_pool_bytes
    assert p.max_concurrency == int((pool - 536_870_912) // 536_870_912)  # (M - m_sh) / (m - m_sh)
    assert p.max_concurrency >= 2 * e.max_concurrency - 1


def test_llama_8b_prefill_flops_by_hand() -> None:
    # hit 0.6 of 8192: 4912 cached (307 blocks). The uncached prefill saves the weight GEMMs of those tokens,
    # 2 x 6,979,321,856 linear parameters (32 layers x (2 x 4096^2 + 2 x 4096 x 1024 + 3 x 4096 x 14336)), and their
    # own causal attention, C (C + 1) / 2 pairs of 32 layers x 2 x 32 heads x (128 + 128) = 524,288 FLOP each.
    e = estimate("llama-3.1-8b", "h100-sxm", prefix=PrefixCaching(hit_rate=0.6), **LLAMA)
    c = 4912
    assert e.prefix_cache.cached_tokens == c and e.prefix_cache.computed_tokens == 8192 - c
    saved = 2 * 6_979_321_856 * c + 524_288 * c * (c + 1) / 2
    assert e.prefill.flops - e.prefix_cache.prefill_flops == pytest.approx(saved, rel=1e-12)
    assert e.prefix_cache.ttft_seconds_expected < e.prefill.ttft_seconds_expected


def test_zero_hit_is_no_caching_exactly() -> None:
    e = estimate("llama-3.1-8b", "h100-sxm", prefix=PrefixCaching(), **LLAMA)
    p = e.prefix_cache
    assert p.cached_tokens == 0 and p.ttft_speedup == 1.0
    assert p.ttft_seconds_expected == e.prefill.ttft_seconds_expected
    assert p.ttft_seconds_ceiling == e.prefill.ttft_seconds_ceiling
    assert p.prefill_flops == e.prefill.flops
    assert p.kv_cache_bytes == e.memory.kv_cache_bytes and p.max_concurrency == e.max_concurrency


def test_arrays_broadcast_and_bad_input() -> None:
    e = estimate("llama-3.1-8b", "h100-sxm", context=np.array([2048, 8192]), prompt=np.array([1024, 4096]),
                 prefix=PrefixCaching(hit_rate=0.5, shared_tokens=512))
    assert list(e.prefix_cache.cached_tokens) == [512.0, 2048.0]
    assert np.all(e.prefix_cache.ttft_seconds_expected < e.prefill.ttft_seconds_expected)
    with pytest.raises(ValueError, match="hit_rate"):
        estimate("llama-3.1-8b", "h100-sxm", prefix=PrefixCaching(hit_rate=1.5))
    with pytest.raises(ValueError, match="shared_tokens"):
        estimate("llama-3.1-8b", "h100-sxm", prefix=PrefixCaching(shared_tokens=-1))
    with pytest.raises(TypeError, match="prefix"):
        estimate("llama-3.1-8b", "h100-sxm", prefix=0.6)  # type: ignore[arg-type]


def test_cli_fit_prefix_cache(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fit", "llama-3.1-8b", "h100-sxm", "--concurrency", "16", "--prefix-cache", "0.6",
                 "--shared-prefix", "4k", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["prefix_cache"]
    assert data["cached_tokens"] == 4912 and data["shared_tokens"] == 4096 and data["granularity"] == 16
    assert main(["fit", "llama-3.1-8b", "h100-sxm", "--engine", "sglang", "--prefix-cache", "0.6"]) == 0
    assert "4,915 of 8,192 prompt tokens cached" in capsys.readouterr().out  # token-granular: floor(4915.2)


@settings(max_examples=30, deadline=None)
@given(prompt=st.integers(1, 200_000), low=st.floats(0, 1), high=st.floats(0, 1), shared=st.integers(0, 300_000),
       granularity=st.sampled_from([1, 16, 32, 256]))
def test_cached_tokens_invariants(prompt: int, low: float, high: float, shared: int, granularity: int) -> None:
    a, b = sorted((low, high))
    ca = prefix_cache.cached_tokens(prompt, a, shared, granularity)
    cb = prefix_cache.cached_tokens(prompt, b, shared, granularity)
    assert 0 <= ca <= cb <= prompt - 1  # a higher hit never caches less; at least one token is computed
    assert ca % granularity == 0  # whole blocks only
    assert prefix_cache.cached_tokens(prompt, 0.0, 0, granularity) == 0


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 4096), per=st.floats(1.0, 1e9), share=st.floats(0, 0.99), pool=st.floats(0, 1e12))
def test_a_shared_block_is_held_once(n: int, per: float, share: float, pool: float) -> None:
    shared = per * share  # a prefix is at most S - 1 tokens: always less than the sequence
    held = prefix_cache.pool_bytes(n, per, shared)
    assert held == pytest.approx(n * per - (n - 1) * shared)  # n references, one copy
    assert held >= per - 1e-6 * per and held <= n * per * (1 + 1e-12)  # never below one sequence, never above n
    assert prefix_cache.max_concurrency(pool, per, shared) >= prefix_cache.max_concurrency(pool, per, 0.0)


@settings(max_examples=8, deadline=None)
@given(low=st.floats(0, 1), high=st.floats(0, 1), prompt=st.integers(16, 16384))
def test_ttft_never_rises_with_the_hit_rate(low: float, high: float, prompt: int) -> None:
    a, b = sorted((low, high))
    ttft = [estimate("llama-3.1-8b", "h100-sxm", context=16384, prompt=prompt,
                     prefix=PrefixCaching(hit_rate=h)).prefix_cache.ttft_seconds_expected for h in (0.0, a, b)]
    assert ttft[0] >= ttft[1] * (1 - 1e-12) and ttft[1] >= ttft[2] * (1 - 1e-12)


def test_no_nan_where_the_compute_rate_is_unknown() -> None:
    # a GPU without a published matrix rate: the expected prefill is None (as Estimate.prefill's), never NaN
    from gpusizer import catalog, lora

    device = catalog.gpu("apple-m3-max")
    bare = device.model_copy(update=dict(id="bare", dense=type(device.dense)()))
    e = estimate("llama-3.1-8b", bare, engine="llama.cpp", context=4096, prefix=PrefixCaching(hit_rate=0.5),
                 lora=lora.LoRA(adapters=1))
    assert e.prefill.unknown is not None
    p = e.prefix_cache
    assert p.prefill_seconds_expected is None and p.ttft_seconds_expected is None and p.ttft_speedup is None
    assert p.ttft_seconds_ceiling < e.prefill.ttft_seconds_ceiling and p.cached_tokens == 2048  # llama.cpp: 1 token
    assert not np.isnan(e.lora.step_seconds_expected) and e.lora.buffer_bytes > 0


@settings(max_examples=12, deadline=None)
@given(context=st.integers(1, 131072), concurrency=st.integers(1, 512),
       engine=st.sampled_from(["vllm", "sglang", "trtllm", "llama.cpp"]), share=st.floats(0, 1))
def test_zero_hit_equals_no_caching_everywhere(context: int, concurrency: int, engine: str, share: float) -> None:
    prompt = max(1, int(context * share))
    e = estimate("llama-3.1-8b", "h100-sxm", context=context, concurrency=concurrency, prompt=prompt, engine=engine,
                 prefix=PrefixCaching(hit_rate=0.0, shared_tokens=0))
    p = e.prefix_cache
    assert p.cached_tokens == 0 and p.computed_tokens == prompt
    assert (p.ttft_seconds_expected, p.ttft_seconds_ceiling, p.prefill_flops) == (
        e.prefill.ttft_seconds_expected, e.prefill.ttft_seconds_ceiling, e.prefill.flops)
    assert (p.kv_cache_bytes, p.max_concurrency, p.fits) == (e.memory.kv_cache_bytes, e.max_concurrency, e.fits)


def test_hybrid_block_by_hand() -> None:
    # Qwen3-Next-80B-A3B: one Gated DeltaNet layer holds 32 value heads x 128 x 128 fp32 = 2,097,152 B of state and
    # a convolution state of 3 x (2 x 16 x 128 + 32 x 128) = 24,576 bf16 elements = 49,152 B: 2,146,304 B. A full
    # attention layer holds 2 x 2 heads x 256 = 1,024 elements per token: 2,048 B in bf16, 1,024 in fp8. vLLM:
    # 16 x ceil(2,146,304 / (16 x 2,048)) = 16 x 66 = 1,056 tokens; in fp8, 16 x 131 = 2,096 (the values vLLM logs
    # for Qwen3.5-4B/9B with a bf16 cache and Qwen3.6-35B-A3B with fp8, of the same Gated DeltaNet family).
    assert prefix_cache.hybrid_block_tokens(2_146_304, 2048) == 1056
    assert prefix_cache.hybrid_block_tokens(2_146_304, 1024) == 2096
    e = estimate("qwen3-next-80b-a3b", "h100-sxm", gpus=2, context=8192, kv_cache="fp8",
                 prefix=PrefixCaching(hit_rate=0.6))
    assert e.prefix_cache.granularity == 2096 and e.prefix_cache.cached_tokens == 2 * 2096  # 4915 -> 2 blocks
    sglang = estimate("qwen3-next-80b-a3b", "h100-sxm", gpus=2, context=8192, engine="sglang",
                      prefix=PrefixCaching(hit_rate=0.6))
    assert sglang.prefix_cache.granularity == 1
