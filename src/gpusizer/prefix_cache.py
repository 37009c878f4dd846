r"""Prefix caching: the KV of a prompt's cached prefix is reused, not recomputed, and shared blocks are held once.

Two inputs (``PrefixCaching``): a **hit rate** :math:`h`, the share of each prompt's tokens found in the cache
(earlier turns of a session, a document re-read), and a **shared prefix** of :math:`P` tokens that every
sequence starts with (a system prompt, an agent's tool list). A prompt of :math:`S` tokens then computes only
its last :math:`S - C` tokens (``cached_tokens``), whose attention still reads the :math:`C` cached ones
(``prefill.attention_pairs`` with ``prefix = C``), so prefill FLOPs, bytes and the time to first token fall, the
weights being streamed once per chunk of the uncached part. The shared prefix's blocks are referenced by every
sequence of a data-parallel group but held once in its KV pool (``pool_bytes``), so more sequences fit
(``max_concurrency``).

Engines share whole blocks: vLLM's automatic prefix caching hashes full blocks of ``block_size`` (16) tokens and
caps the hit at ``num_tokens - 1`` so that the last token is recomputed for its logits [1]_ (the hit is thus
``floor(min(hit, S - 1) / 16) * 16``); SGLang's RadixAttention matches token by token (``page_size`` 1) with the
same ``input_len - 1`` cap [2]_, [3]_; TensorRT-LLM reuses whole blocks of ``tokens_per_block`` (32). The
granularity is ``GRANULARITY[engine]`` unless given; on vLLM a hybrid model's is its attention block, raised to hold
one recurrent layer's state (``hybrid_block_tokens``: 1,056 tokens for Qwen3-Next with a bf16 cache) [4]_.

Deliberate omissions: eviction (a hit rate is an input; the cache is assumed to hold what it names), sliding-window
and recurrent layers share nothing (their state is per sequence; only full-attention and indexer caches are
counted as shared), and the cost of hashing blocks or walking the radix tree.

References
----------
.. [1] vllm-project/vllm@ace980e6de0540f49b0c63248437a1a7807590c1 vllm/v1/core/kv_cache_manager.py
   ``get_computed_blocks``: "When all tokens hit the cache, we must recompute the last token to obtain logits.
   Thus, set max_cache_hit_length to prompt_length - 1"; ``find_longest_cache_hit`` returns whole blocks.
.. [2] L. Zheng et al., "SGLang: Efficient execution of structured language model programs," arXiv:2312.07104,
   2024 (RadixAttention).
.. [3] sgl-project/sglang python/sglang/srt/managers/schedule_batch.py ``Req.adjust_max_prefix_ids``:
   ``max_prefix_len = input_len - 1``.
.. [4] vllm-project/vllm@1936cf3841edb9781b06c50fc4daf4bac9d3b23e vllm/model_executor/models/config.py
   ``HybridAttentionMambaModelConfig.verify_and_update_config``: ``attn_block_size = kernel_block_alignment_size *
   cdiv(mamba_page_size, kernel_block_alignment_size * attn_page_size_1_token)`` (alignment 16), logged as "Setting
   attention block size to N tokens to ensure that attention page size is >= mamba page size" (1056 for
   Qwen3.5-4B/9B with a bf16 cache on vLLM 0.16.1, 2096 for Qwen3.6-35B-A3B with an fp8 cache on vLLM 0.20.0: the
   values this gives for Qwen3-Next's layer shapes; those models' shapes were not checked).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpusizer import catalog, configuration, efficiency, memory, parallel, passes, performance, prefill, unpack
from gpusizer.checks import scalar_or_array
from gpusizer.numeric import ceil, floor, integer, maximum, minimum, number, where

__all__ = [
    "GRANULARITY", "PrefixCache", "PrefixCaching", "cache_prefix", "cached_tokens", "hybrid_block_tokens",
    "max_concurrency",
    "per_sequence_bytes", "pool_bytes", "session_hit_rate",
]

#: Tokens a cache hit is made of, by engine: vLLM ``block_size`` 16 (whole blocks), SGLang ``page_size`` 1
#: (token by token, RadixAttention), TensorRT-LLM ``tokens_per_block`` 32 (whole blocks), llama.cpp 1 (``cache_prompt``
#: reuses a slot's longest common prefix token by token). [token]
GRANULARITY = {"vllm": 16, "sglang": 1, "trtllm": 32, "trtllm-engine": 32, "llama.cpp": 1}


@dataclass(frozen=True)
class PrefixCaching:
    """What the cache holds: ``estimate(..., prefix=PrefixCaching(hit_rate=0.6))``."""

    hit_rate: float = 0.0
    """Share of each prompt's tokens found in the cache, in [0, 1]. [-]"""
    shared_tokens: int = 0
    """Tokens of a prefix every sequence shares (held once per KV pool, always hit). [token]"""
    granularity: int | None = None
    """Tokens a hit is made of; default ``GRANULARITY[engine]``. [token]"""


@dataclass(frozen=True)
class PrefixCache:
    """A configuration with prefix caching. Per GPU unless named; arrays broadcast."""

    hit_rate_asked: float
    """``PrefixCaching.hit_rate``. [-]"""
    granularity: int
    """Tokens a hit is made of. [token]"""
    cached_tokens: Any
    """Prompt tokens read from the cache, whole units of ``granularity``, at most ``prompt - 1``. [token]"""
    computed_tokens: Any
    """Prompt tokens the prefill computes: at least 1. [token]"""
    hit_rate: Any
    """``cached_tokens / prompt``: what the engine would report. [-]"""
    shared_tokens: Any
    """Tokens of the shared prefix the pool holds once per data-parallel group. [token]"""
    shared_bytes: Any
    """Their KV bytes on one GPU. [B]"""
    kv_cache_bytes: Any
    """KV of ``concurrency`` sequences with the shared blocks counted once. [B]"""
    headroom_bytes: Any
    """``budget - total`` with that KV. [B]"""
    fits: Any
    """[bool]"""
    max_concurrency: Any
    """Sequences of ``context`` tokens the pools of the layout hold with the shared blocks counted once. [-]"""
    prefill_flops: Any
    """FLOPs of the prefill of the uncached tokens. [FLOP]"""
    prefill_seconds_ceiling: Any
    prefill_seconds_expected: Any
    """Prefill of the uncached tokens after the cached ones; None where the GPU's compute rate is unknown. [s]"""
    ttft_seconds_ceiling: Any
    ttft_seconds_expected: Any
    """Time to first token on an idle engine: the prefill above and the first decode step. [s]"""
    ttft_band: tuple[Any, Any]
    """p10-p90 of ``ttft_seconds_expected`` (the prefill band). [s]"""
    ttft_speedup: Any
    """Expected TTFT without caching over with it. [-]"""


# --- formulas --------------------------------------------------------------------------------------


def cached_tokens(prompt: Any, hit_rate: Any = 0.0, shared: Any = 0, granularity: Any = 1) -> Any:
    r"""Prompt tokens an engine reads from its prefix cache.

    .. math:: C = g \left\lfloor \min\!\left(\max(h S, P),\ S - 1\right) / g \right\rfloor

    ``prompt`` :math:`S` [token], ``hit_rate`` :math:`h` [-], ``shared`` prefix :math:`P` [token] (always hit),
    ``granularity`` :math:`g` [token]: whole blocks only, and never the whole prompt (the last token is recomputed
    for its logits: vLLM ``max_cache_hit_length = num_tokens - 1``, SGLang ``max_prefix_len = input_len - 1``;
    sources in the module's references). [token]

    Examples
    --------
    >>> cached_tokens(4096, 0.6, granularity=16)  # 2457.6 tokens: 153 whole blocks
    2448.0
    >>> cached_tokens(4096, 1.0, granularity=16), cached_tokens(4096, 1.0)  # 4095 -> 255 blocks; token-granular
    (4080.0, 4095.0)
    """
    s, g = number(prompt), number(granularity)
    hit = minimum(maximum(number(hit_rate) * s, number(shared)), s - 1.0)
    return scalar_or_array(g * floor(maximum(hit, 0.0) / g))


def hybrid_block_tokens(state_bytes: Any, kv_bytes_per_token: Any, alignment: Any = 16) -> Any:
    r"""vLLM's attention block of a hybrid (attention + recurrent) model: the fewest tokens, in multiples of the
    kernel's ``alignment``, whose attention page holds one layer's recurrent state, so that both kinds share one
    page size [4]_:

    .. math:: b = a \left\lceil \frac{M_{state}}{a\, m_{token}} \right\rceil

    ``state_bytes`` :math:`M_{state}` of one recurrent layer (its SSM and convolution state) [B],
    ``kv_bytes_per_token`` :math:`m_{token}` of one attention layer [B]. Prefix hits are whole such blocks. [token]

    Examples
    --------
    >>> hybrid_block_tokens(2_146_304, 2048), hybrid_block_tokens(2_146_304, 1024)  # bf16 and fp8 KV
    (1056, 2096)
    """
    a = number(alignment)
    return scalar_or_array(integer(a * ceil(number(state_bytes) / (a * number(kv_bytes_per_token)))))


def pool_bytes(sequences: Any, per_sequence: Any, shared: Any) -> Any:
    r"""KV bytes of ``sequences`` sequences that share a prefix of ``shared`` bytes, held once:
    :math:`M = m_{sh} + N (m - m_{sh})` for :math:`N \ge 1`, 0 for none. [B]

    >>> pool_bytes(4, 1000.0, 600.0)  # 600 + 4 x 400
    2200.0
    """
    n, m, sh = number(sequences), number(per_sequence), number(shared)
    return scalar_or_array(where(n > 0, sh + n * (m - sh), 0.0))


def max_concurrency(pool: Any, per_sequence: Any, shared: Any) -> Any:
    r"""Sequences a pool of ``pool`` bytes holds when each needs ``per_sequence`` bytes of which ``shared`` are a
    prefix held once: :math:`\lfloor (M - m_{sh}) / (m - m_{sh}) \rfloor` (``memory.max_concurrency``). [-]

    >>> max_concurrency(10_000.0, 1000.0, 600.0)  # (10000 - 600) / 400
    23
    """
    sh = number(shared)
    return memory.max_concurrency(number(pool) - sh, number(per_sequence) - sh)


def session_hit_rate(turns: Any, system: Any, user: Any, output: Any) -> tuple[Any, Any]:
    r"""Token hit rate and mean prompt of a multi-turn session whose earlier turns stay cached.

    Turn :math:`i = 1..T` sends the system prompt :math:`P`, the :math:`i - 1` earlier exchanges of
    :math:`u + o` tokens (the user's message and the model's answer) and a new message of :math:`u`:
    :math:`S_i = P + (i - 1)(u + o) + u`, of which :math:`C_i = P + (i - 1)(u + o)` are cached (the system prompt
    being shared with other sessions). Then

    .. math:: h = \frac{\sum_i C_i}{\sum_i S_i} = 1 - \frac{T u}{T P + T u + (u + o) T (T - 1)/2},
       \qquad \bar S = P + u + (u + o)(T - 1)/2

    ``turns`` :math:`T` [-], ``system`` :math:`P`, ``user`` :math:`u`, ``output`` :math:`o` [token]; returns
    ``(h, mean prompt)`` [-, token].

    Examples
    --------
    >>> session_hit_rate(4, 1000, 200, 300)  # prompts 1200, 1700, 2200, 2700: 1 - 800 / 7800
    (0.8974358974358975, 1950.0)
    """
    t, p, u, o = number(turns), number(system), number(user), number(output)
    mean = p + u + (u + o) * (t - 1.0) / 2.0
    return scalar_or_array(1.0 - u / mean), scalar_or_array(mean)


# --- composition -----------------------------------------------------------------------------------


def _check(spec: PrefixCaching, engine: str) -> int:
    """The granularity of a checked ``spec``."""
    if not isinstance(spec, PrefixCaching):
        raise TypeError(f"prefix must be a prefix_cache.PrefixCaching, got {type(spec).__name__}")
    if isinstance(spec.hit_rate, bool) or not isinstance(spec.hit_rate, int | float) or not 0 <= spec.hit_rate <= 1:
        raise ValueError(f"prefix: hit_rate must be a number in [0, 1], got {spec.hit_rate!r}")
    if type(spec.shared_tokens) is not int or spec.shared_tokens < 0:
        raise ValueError(f"prefix: shared_tokens must be a whole number >= 0, got {spec.shared_tokens!r}")
    g = GRANULARITY.get(engine, 1) if spec.granularity is None else spec.granularity
    if type(g) is not int or g < 1:
        raise ValueError(f"prefix: granularity must be a whole number >= 1, got {g!r}")
    return g


def cache_prefix(
    record: catalog.Model, device: catalog.GPU, weights: str, experts: str | None, kv: str, gpus: int, engine: Any,
    plan: parallel.Layout, table: efficiency.Table, scale_out: float | None, ctx: Any, users: Any, asked: Any,
    spec: PrefixCaching, speed: performance.Speed, numbers: unpack.ModelNumbers, sizes: dict[str, Any],
) -> PrefixCache:
    """Prefix caching of one configuration (``estimator.estimate``'s ``prefix=``): ``speed`` is its plain decode and
    prefill, ``numbers`` its model numbers, ``sizes`` its memory numbers (``estimator.memory_numbers``), ``asked``
    its prompt (None: the context); the rest as ``performance.speed_of`` takes them."""
    g = _check(spec, engine.name)
    if spec.granularity is None and engine.name == "vllm":
        g = max(g, _hybrid_block(record, numbers))
    prompt = ctx if asked is None else asked
    cached = cached_tokens(prompt, spec.hit_rate, spec.shared_tokens, g)
    shared = cached_tokens(prompt, 0.0, spec.shared_tokens, g)
    timing = _prefill(record, device, weights, experts, kv, gpus, engine.name, plan, table, scale_out, prompt, users,
                      cached, speed, asked is None)
    memory_ = _pool(numbers, engine, plan, ctx, users, shared, sizes)
    return PrefixCache(
        hit_rate_asked=float(spec.hit_rate), granularity=g, cached_tokens=cached,
        computed_tokens=scalar_or_array(number(prompt) - cached), hit_rate=scalar_or_array(cached / number(prompt)),
        shared_tokens=shared, **memory_, **timing,
    )


def _hybrid_block(record: catalog.Model, f: unpack.ModelNumbers) -> int:
    """vLLM's attention block of a hybrid model (``hybrid_block_tokens`` of one recurrent layer's state and one
    attention layer's bytes per token); 0 for a model without both kinds of layer."""
    attention = sum(kind == "full" for kind in record.layers)
    recurrent = sum(kind in ("linear", "mamba") for kind in record.layers)
    if not (attention and recurrent and f.layout.full and f.layout.state_bytes):
        return 0
    state = (f.layout.state_bytes + f.layout.conv * f.act_bpe) / recurrent
    return int(hybrid_block_tokens(state, f.layout.full * f.kv_bpe / attention))


def _prefill(
    record: catalog.Model, device: catalog.GPU, weights: str, experts: str | None, kv: str, gpus: int, engine: str,
    plan: parallel.Layout, table: efficiency.Table, scale_out: float | None, prompt: Any, users: Any, cached: Any,
    speed: performance.Speed, at_context: bool,
) -> dict[str, Any]:
    """The prefill of the uncached tokens after the cached ones and its TTFT, composed as
    ``performance.prefill_numbers`` composes the plain one (``passes.prefill_sums`` with ``prefix``)."""
    s = configuration.setup(record, device, weights, experts, kv, gpus, engine, plan, table, scale_out)
    c = configuration.constants(s, table)
    computed = scalar_or_array(number(prompt) - cached)
    if type(computed) is float and computed.is_integer() and type(prompt) is int:
        computed, cached = int(computed), int(cached)  # the scalar path of passes.prefill_steps, as without caching
    size = c.chunk_tokens
    sums = passes.prefill_sums(s, c, None, computed, size, passes.elements(s, c, prompt, users, cached),
                               prefix=cached)
    ceiling = passes.prefill_schedule(sums["ceiling"], sums["ceiling_longest"], s)
    expected = passes.prefill_schedule(sums["expected"], sums["expected_longest"], s, c.request_seconds)
    d = speed.decode
    if at_context:  # the prompt is the context: its first decode step is the decode's
        first = d.tpot_seconds_ceiling, d.tpot_seconds_expected
    else:
        first = passes.decode_seconds(s, None, prompt, users), passes.decode_seconds(s, c, prompt, users)
    top = prefill.time_to_first_token(ceiling, first[0])
    if not s.published:  # as the plain prefill: no expected time without the GPU's compute rate
        return dict(prefill_flops=sums["flops"], prefill_seconds_ceiling=ceiling, prefill_seconds_expected=None,
                    ttft_seconds_ceiling=top, ttft_seconds_expected=None, ttft_band=(None, None), ttft_speedup=None)
    ttft = prefill.time_to_first_token(expected, first[1])
    low, high = performance.band_factors(table, "prefill", s, c)
    return dict(
        prefill_flops=sums["flops"], prefill_seconds_ceiling=ceiling, prefill_seconds_expected=expected,
        ttft_seconds_ceiling=top, ttft_seconds_expected=ttft,
        ttft_band=(scalar_or_array(maximum(ttft / high, top)), scalar_or_array(ttft / low)),
        ttft_speedup=scalar_or_array(speed.prefill.ttft_seconds_expected / ttft),
    )


def per_sequence_bytes(f: unpack.ModelNumbers, engine: Any, plan: parallel.Layout, ctx: Any) -> Any:
    """Cache bytes of one sequence of ``ctx`` tokens on the busiest GPU, as ``estimator.memory_numbers`` counts them
    (``memory.sequence_cache_bytes`` of its stage's layers, in the engine's blocks). [B]"""
    stage = parallel.stage_fraction(f.num_layers, plan.pp)
    return memory.sequence_cache_bytes(ctx, f.layout, f.kv_bpe, f.act_bpe, block_size=engine.block_size,
                                       tensor_parallel=plan.tp) * stage


def _pool(
    f: unpack.ModelNumbers, engine: Any, plan: parallel.Layout, ctx: Any, users: Any, shared: Any,
    sizes: dict[str, Any],
) -> dict[str, Any]:
    """The KV of ``users`` sequences with the ``shared`` prefix tokens held once per data-parallel group, and the
    concurrency the pools hold, as ``estimator.memory_numbers`` counts them without sharing."""
    cache = dict(block_size=engine.block_size, tensor_parallel=plan.tp)
    stage = parallel.stage_fraction(f.num_layers, plan.pp)
    per_sequence = per_sequence_bytes(f, engine, plan, ctx)
    attention_only = f.layout._replace(windowed=(), state_bytes=0.0, conv=0)  # what sequences can share
    held = memory.sequence_cache_bytes(shared, attention_only, f.kv_bpe, f.act_bpe, **cache) * stage
    groups = plan.dp * plan.attention_dp
    kv = pool_bytes(parallel.sequences_per_group(users, groups), per_sequence, held)
    pool = sizes["kv_pool_bytes"] - sizes["kv_pool_deficit_bytes"]
    headroom = memory.headroom_bytes(pool, kv)
    return dict(
        shared_bytes=scalar_or_array(held), kv_cache_bytes=kv, headroom_bytes=headroom,
        fits=scalar_or_array(headroom >= 0),
        max_concurrency=scalar_or_array(max_concurrency(pool, per_sequence, held) * groups),
    )
