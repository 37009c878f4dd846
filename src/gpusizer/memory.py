r"""Memory per GPU: weights, KV cache, activations and runtime, against a budget.

Pure functions of numbers that broadcast like numpy ufuncs: pass arrays of context and
concurrency (or of bytes per element, or of tensor-parallel degree) and get arrays back. Records
are unpacked by the caller (``gpusizer.estimate``).

Conventions: sizes in bytes [B], lengths in tokens [token]. ``context`` is what one sequence holds
(prompt + output, vLLM's ``max_model_len``); ``concurrency`` is the number of sequences resident at
once.

Deliberate omissions: allocator fragmentation beyond the engine's own margin, and prefix-cache
sharing between sequences (it only lowers KV use).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusizer.architecture import KvLayout
from gpusizer.checks import scalar_or_array
from gpusizer.numeric import ceil, divide, floor, integer, maximum, minimum, number, where

__all__ = [
    "cached_tokens",
    "headroom_bytes",
    "kv_cache_bytes",
    "kv_shard_fraction",
    "max_concurrency",
    "max_context",
    "pool_tokens",
    "sequence_cache_bytes",
    "shard_bytes",
    "vllm_activation_bytes",
    "weight_bytes",
]


def weight_bytes(params: Any, bytes_per_element: Any) -> Any:
    r"""Bytes of a group of weights stored at one precision.

    Parameters
    ----------
    params : array_like
        Number of parameters. [param]
    bytes_per_element : array_like
        Storage per parameter, scales included (``precision.bytes_per_element``). [B]

    Returns
    -------
    numeric
        :math:`M_W = N\,b_w`. [B]

    Examples
    --------
    >>> weight_bytes(8.03e9, 2.0)
    16060000000.0
    """
    return scalar_or_array(number(params) * number(bytes_per_element))


def cached_tokens(context: Any, window: Any = np.inf, block_size: Any = 1) -> Any:
    r"""Tokens one sequence keeps in a layer's cache: the context, capped at the window, in whole blocks.

    Parameters
    ----------
    context : array_like
        Tokens the sequence holds. [token]
    window : array_like, optional
        Attention window of the layer (``inf`` for full attention). [token]
    block_size : array_like, optional
        Paged-cache block (16 in vLLM); 1 for a contiguous cache. [token]

    Returns
    -------
    numeric
        :math:`\lceil \min(S, W) / b \rceil\, b`. [token]

    References
    ----------
    .. [1] W. Kwon et al., "Efficient memory management for large language model serving with
       PagedAttention," arXiv:2309.06180, 2023.

    Examples
    --------
    >>> cached_tokens(1000, block_size=16)
    1008.0
    >>> cached_tokens(32768, window=4096)
    4096.0
    """
    return scalar_or_array(_cached_tokens(number(context), number(window), number(block_size)))


def _cached_tokens(context: Any, window: Any, block_size: Any) -> Any:
    """``cached_tokens`` of ``number``s."""
    return ceil(minimum(context, window) / block_size) * block_size


def kv_cache_bytes(
    context: Any,
    concurrency: Any,
    elements_per_token: Any,
    bytes_per_element: Any,
    *,
    window: Any = np.inf,
    block_size: Any = 1,
) -> Any:
    r"""Bytes the key/value cache of a group of layers holds for ``concurrency`` sequences.

    Parameters
    ----------
    context : array_like
        Tokens each sequence holds. [token]
    concurrency : array_like
        Sequences resident at once. [-]
    elements_per_token : array_like
        Cached elements per token summed over the layers of the group: :math:`2 L n_{kv} d_h` for
        MHA/GQA/MQA, :math:`L (r_{kv} + d_r)` for MLA. [element/token]
    bytes_per_element : array_like
        2 for bf16/fp16, 1 for fp8. [B]
    window, block_size : array_like, optional
        See ``cached_tokens``. [token]

    Returns
    -------
    numeric
        :math:`M_{KV} = B\,\lceil \min(S, W)/b \rceil b\, e\, b_{kv}`. [B]

    Notes
    -----
    The factor 2 of keys and values is inside ``elements_per_token``; grouped-query attention
    enters through :math:`n_{kv}` (J. Ainslie et al., arXiv:2305.13245).

    Examples
    --------
    >>> kv_cache_bytes(4096, 1, elements_per_token=2 * 32 * 8 * 128, bytes_per_element=2)
    536870912.0
    """
    tokens = cached_tokens(context, window, block_size)
    return scalar_or_array(number(concurrency) * tokens * (number(elements_per_token) * number(bytes_per_element)))


def kv_shard_fraction(kv_heads: Any, tensor_parallel: Any) -> Any:
    r"""Share of a layer's KV cache that one tensor-parallel rank holds.

    Heads are split across ranks; when there are fewer KV heads than ranks, each rank keeps a whole
    head, so the cache is replicated. MLA's single latent (``kv_heads = 1``) lives on every rank.

    Returns
    -------
    numeric
        :math:`\lceil n_{kv}/t \rceil / n_{kv}`. [-]

    Examples
    --------
    >>> kv_shard_fraction(8, 4)
    0.25
    >>> kv_shard_fraction(8, 16)  # replicated: every rank keeps one of the 8 heads
    0.125
    >>> kv_shard_fraction(1, 8)  # MLA
    1.0
    """
    return scalar_or_array(_kv_shard_fraction(number(kv_heads), number(tensor_parallel)))


def _kv_shard_fraction(kv_heads: Any, tensor_parallel: Any) -> Any:
    """``kv_shard_fraction`` of ``number``s."""
    return ceil(kv_heads / tensor_parallel) / kv_heads


def shard_bytes(total: Any, replicated: Any, tensor_parallel: Any) -> Any:
    r"""Bytes per rank of a tensor split ``tensor_parallel`` ways, with a part replicated on every rank.

    Returns
    -------
    numeric
        :math:`(M - M_r)/t + M_r`. [B]

    References
    ----------
    .. [1] M. Shoeybi et al., "Megatron-LM," arXiv:1909.08053, 2019.

    Examples
    --------
    >>> shard_bytes(100.0, 10.0, 3)
    40.0
    """
    replicated = number(replicated)
    return scalar_or_array((number(total) - replicated) / number(tensor_parallel) + replicated)


def vllm_forward_activation_bytes(
    batched_tokens: Any, hidden: Any, ffn_width: Any, bytes_per_element: Any, tensor_parallel: Any = 1
) -> Any:
    r"""Torch peak above the weights of vLLM's profiling forward pass (``profile_run``'s dummy run).

    Parameters
    ----------
    batched_tokens : array_like
        Tokens of the profile batch: ``max_num_batched_tokens``, which is ``max_model_len`` when
        chunked prefill is off. [token]
    hidden, ffn_width : array_like
        Model width and the widest FFN intermediate a token produces (``k * d_expert`` plus shared
        for MoE). [-]
    bytes_per_element : array_like
        Activation dtype size. [B]
    tensor_parallel : array_like, optional
        The FFN intermediate is split across ranks. [-]

    Returns
    -------
    numeric
        :math:`T (3 d_{ff}/t + 3 d) b_a`: the gate/up output and its activation (the MLP's peak)
        beside three residual-width buffers. [B]

    Notes
    -----
    vllm-project/vllm ``vllm/v1/worker/gpu_model_runner.py`` ``profile_run`` runs the model once on
    ``max_num_batched_tokens`` tokens. Llama-3.1-8B (bf16) logs 2.07 GiB at 20,000 tokens and 2.99 GiB
    at 29,000 (vllm-project/vllm issue #10517): 107 KiB per token; this formula gives 108 KiB.

    Examples
    --------
    >>> round(vllm_forward_activation_bytes(20000, 4096, 14336, 2.0) / 2**30, 2)
    2.06
    """
    per_token = 3 * (number(ffn_width) / number(tensor_parallel)) + 3 * number(hidden)
    return scalar_or_array(number(batched_tokens) * per_token * number(bytes_per_element))


def vllm_sampler_bytes(batched_tokens: Any, max_sequences: Any, vocab: Any, bytes_per_logit: Any = 16.0) -> Any:
    r"""vLLM's dummy sampler run: the logits of every request a step may sample, and the sampler's copies.

    Parameters
    ----------
    batched_tokens : array_like
        ``max_num_batched_tokens``. [token]
    max_sequences : array_like
        ``max_num_seqs``. [-]
    vocab : array_like
        Vocabulary size. [-]
    bytes_per_logit : array_like, optional
        Bytes alive at the sampler's peak per element of the ``[requests, vocab]`` logits
        (``EngineProfile.sampler_bytes_per_logit``). [B]

    Returns
    -------
    numeric
        :math:`b_s \min(B_{max}, T) V`. [B]

    Notes
    -----
    vllm-project/vllm ``vllm/v1/worker/gpu_model_runner.py`` ``profile_run`` samples one token for each of
    ``min(max_num_seqs, max_num_batched_tokens)`` dummy requests (``_dummy_sampler_run``). What is alive at
    the peak depends on the sampler:

    * the PyTorch top-k/top-p path of vLLM 0.10-0.11 (``vllm/v1/sample/ops/topk_topp_sampler.py``
      ``apply_top_k_top_p``, ``logits.sort``): the bf16 logits (2 B), their float32 copy (4), the sorted
      values and int64 indices (4 + 8), the int64 ``arange`` the CUDA sort pairs them with (8) and cub's
      radix-sort double buffer (4 + 8): **38 B**;
    * a sampler that skips top-k/top-p while profiling (later V1 runners): 16 B, calibrated on
      kvcached#448 (Qwen2.5-0.5B, A100, 256 sequences, vocabulary 151,936: 0.59 GiB torch peak; this gives
      0.58 GiB);
    * V0: about one float32 copy, 4 B (vllm#10702, #13061: 0.10 and 0.19 GiB above the weights at 256 sequences).

    Examples
    --------
    >>> round(vllm_sampler_bytes(2048, 256, 151936) / 2**30, 2)
    0.58
    >>> round(vllm_sampler_bytes(8192, 1024, 201088, 38.0) / 2**30, 2)  # gpt-oss on vLLM 0.10
    7.29
    """
    requests = minimum(number(max_sequences), number(batched_tokens))
    return scalar_or_array(number(bytes_per_logit) * requests * number(vocab))


def vllm_activation_bytes(
    batched_tokens: Any,
    hidden: Any,
    ffn_width: Any,
    vocab: Any,
    max_sequences: Any,
    bytes_per_element: Any,
    tensor_parallel: Any = 1,
    bytes_per_logit: Any = 16.0,
) -> Any:
    r"""Activation peak of vLLM's profile run: the larger of the forward pass and the dummy sampler.

    Parameters
    ----------
    batched_tokens : array_like
        ``max_num_batched_tokens`` of the profile run. [token]
    hidden, ffn_width, vocab : array_like
        Model width, widest FFN intermediate a token produces, vocabulary. [-]
    max_sequences : array_like
        ``max_num_seqs``. [-]
    bytes_per_element : array_like
        Activation dtype size. [B]
    tensor_parallel : array_like, optional
        The FFN intermediate is split across ranks. [-]
    bytes_per_logit : array_like, optional
        See ``vllm_sampler_bytes``. [B]

    Returns
    -------
    numeric
        :math:`\max(M_{fwd}, M_{sampler})`: ``profile_run`` frees the forward pass's activations before it
        samples, so the "torch peak increase" of ``determine_available_memory`` (vllm-project/vllm
        ``vllm/v1/worker/gpu_worker.py``) is the larger of the two (vllm#10517: the forward pass alone). [B]

    Examples
    --------
    >>> round(vllm_activation_bytes(20000, 4096, 14336, 128256, 256, 2.0) / 2**30, 2)
    2.06
    """
    forward = vllm_forward_activation_bytes(batched_tokens, hidden, ffn_width, bytes_per_element, tensor_parallel)
    sampler = vllm_sampler_bytes(batched_tokens, max_sequences, vocab, bytes_per_logit)
    return scalar_or_array(maximum(number(forward), number(sampler)))


def headroom_bytes(budget: Any, *used: Any) -> Any:
    """Budget left after everything in ``used``; negative when it does not fit. [B]

    Examples
    --------
    >>> headroom_bytes(80e9, 40e9, 30e9)
    10000000000.0
    """
    total = 0.0
    for part in used:
        total = total + number(part)
    return scalar_or_array(number(budget) - total)


def max_concurrency(kv_budget: Any, bytes_per_sequence: Any) -> Any:
    r"""Sequences whose caches fit in ``kv_budget``: :math:`\lfloor M / m_{seq} \rfloor`, never negative.

    Examples
    --------
    >>> max_concurrency(10e9, 3e9)
    3
    """
    return scalar_or_array(integer(floor(divide(maximum(number(kv_budget), 0), number(bytes_per_sequence)))))


def sequence_cache_bytes(
    context: Any,
    layout: KvLayout,
    kv_bytes_per_element: Any,
    activation_bytes_per_element: Any = 2.0,
    *,
    block_size: Any = 1,
    tensor_parallel: Any = 1,
) -> Any:
    r"""Cache bytes of one sequence on one GPU, summed over every layer type of a model.

    Parameters
    ----------
    context : array_like
        Tokens the sequence holds. [token]
    layout : KvLayout
        From ``architecture.kv_layout``: full-attention elements per token, windowed groups,
        recurrent state and convolution state.
    kv_bytes_per_element, activation_bytes_per_element : array_like
        Cache dtype size; the convolution state is kept in the activation dtype. [B]
    block_size : array_like, optional
        Paged-cache block. [token]
    tensor_parallel : array_like, optional
        Attention caches split by KV head (replicated below one head per rank, see
        ``kv_shard_fraction``); recurrent states split by head. [-]

    Returns
    -------
    numeric
        :math:`f_{kv}\,b_{kv} \left(e_{full} \lceil S \rceil_b + \sum_w e_w \lceil \min(S, w) \rceil_b\right)
        + (M_{state} + e_{conv} b_a)/t + m_{idx} \lceil S \rceil_b` (:math:`m_{idx}`: ``KvLayout.indexed``). [B]
    """
    return scalar_or_array(_sequence_cache_bytes(
        number(context), layout, number(kv_bytes_per_element), number(activation_bytes_per_element),
        number(block_size), number(tensor_parallel),
    ))


def _sequence_cache_bytes(
    context: Any, layout: KvLayout, kv_bytes_per_element: Any, activation_bytes_per_element: Any, block_size: Any,
    tensor_parallel: Any,
) -> Any:
    """``sequence_cache_bytes`` of ``number``s."""
    attention = _cached_tokens(context, np.inf, block_size) * layout.full
    for window, elements in layout.windowed:
        attention = attention + _cached_tokens(context, window, block_size) * elements
    share = _kv_shard_fraction(layout.kv_heads, tensor_parallel)
    recurrent = (layout.state_bytes + layout.conv * activation_bytes_per_element) / tensor_parallel
    indexed = _cached_tokens(context, np.inf, block_size) * layout.indexed
    return attention * (share * kv_bytes_per_element) + recurrent + indexed


def pool_tokens(kv_budget: Any, bytes_per_sequence: Any, context: Any) -> Any:
    r"""Tokens of ``context``-long sequences that ``kv_budget`` holds: :math:`\lfloor M S / m_{seq}(S) \rfloor`.

    For a model with only full-attention layers this is the pool divided by the bytes per token,
    the figure vLLM logs as "GPU KV cache size: N tokens".

    Examples
    --------
    >>> pool_tokens(1e9, 2e8, 4096)
    20480
    """
    tokens = floor(divide(maximum(number(kv_budget), 0), number(bytes_per_sequence)) * number(context))
    return scalar_or_array(integer(tokens))


def max_context(
    kv_budget: Any,
    concurrency: Any,
    layout: KvLayout,
    kv_bytes_per_element: Any,
    activation_bytes_per_element: Any = 2.0,
    *,
    limit: Any = 2**24,
    block_size: Any = 1,
    tensor_parallel: Any = 1,
) -> Any:
    r"""Longest context (tokens per sequence) whose caches for ``concurrency`` sequences fit ``kv_budget``.

    ``sequence_cache_bytes`` is non-decreasing in the context, so a bisection over whole tokens
    (vectorised, 25 steps for ``limit = 2**24``) finds the exact largest fitting context; 0 when not
    even one token fits, ``limit`` when everything up to it does. ``limit`` (the model's longest
    context) broadcasts like the other arguments, so one call covers several models. One configuration
    (0-d arguments) is first tried in closed form past the windows (``_past_windows``), checked exactly.

    Returns
    -------
    numeric
        :math:`\max\{S \le S_{lim} : B\,m_{seq}(S) \le M_{KV}\}`. [token]
    """
    budget = number(kv_budget) * 1.0  # a float, like the costs it is compared with
    concurrency, kv_bytes_per_element = number(concurrency), number(kv_bytes_per_element)
    activation_bytes_per_element = number(activation_bytes_per_element)
    block_size, tensor_parallel = number(block_size), number(tensor_parallel)

    def cost(tokens: Any) -> Any:
        return concurrency * _sequence_cache_bytes(
            tokens, layout, kv_bytes_per_element, activation_bytes_per_element, block_size, tensor_parallel
        )

    limits = integer(number(limit))
    numbers = (budget, concurrency, tensor_parallel, kv_bytes_per_element, activation_bytes_per_element, limits)
    shapes = [getattr(x, "shape", ()) for x in numbers]
    shape = np.broadcast_shapes(*shapes) if any(shapes) else ()
    if shape == () and type(block_size) is not np.ndarray:
        found = _past_windows(cost, budget, limits, layout, block_size)
        if found is not None:
            return found
    # Python ints for one configuration (shape ()), arrays otherwise
    low = number(np.zeros(shape, dtype=np.int64))  # invariant: low == 0 or low fits
    high = number(np.full(shape, limits, dtype=np.int64))  # invariant: the answer is <= high
    for _ in range(int(np.max(limits)).bit_length()):  # more steps than an element needs change nothing
        middle = (low + high + 1) // 2
        ok = cost(middle) <= budget
        low = where(ok, middle, low)
        high = where(ok, high, middle - 1)
    return scalar_or_array(low)


def _past_windows(cost: Any, budget: float, limit: int, layout: KvLayout, block_size: Any) -> int | None:
    """``max_context`` of one configuration when the answer lies past every window: there the cache grows
    by the same bytes per block, so the answer is a whole number of blocks past the first block boundary
    beyond the windows. The candidate is checked against ``cost`` (it fits, one token more does not, or it
    is ``limit``), so rounding can only send the caller back to bisection (None), never change the answer;
    0 when not even one token fits."""
    block = int(block_size)
    if block != block_size or block < 1:
        return None
    widest = max((int(window) for window, _ in layout.windowed), default=1)
    start = -(-max(widest, 1) // block) * block
    base = cost(start)
    if start + block > limit or not base <= budget:  # the answer is within the windows, or is 0
        return None if cost(1) <= budget else 0  # (one token fits when ``start`` does: cost is non-decreasing)
    next_block = cost(start + block)
    blocks = floor((budget - base) / (next_block - base)) if next_block > base else np.inf
    candidate = int(min(limit, start + blocks * block))
    if not cost(candidate) <= budget:
        return None
    return candidate if candidate == limit or not cost(candidate + 1) <= budget else None
