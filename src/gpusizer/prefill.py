r"""Prefill: the forward pass over a prompt, and the time to the first token.

Pure functions of numbers that broadcast like numpy ufuncs. Prefill FLOPs are the weight GEMMs,
:math:`2 N_{act}` per token (the LM head only for the last token of the prompt), plus causal
attention, which grows with the square of the prompt in full-attention layers and linearly in
sliding-window layers:

.. math::

   F_{prefill}(S, P) = 2 N_{act} S + 2 d V + \sum_{layers} 2 n_h (d_{qk} + d_v)\,\Pi(S, P, W)

with :math:`\Pi` the (query, key) pairs of ``attention_pairs``. Engines split long prompts into
chunks (vLLM ``max_num_batched_tokens``, llama.cpp ``-ub``); each chunk is an engine step of its own
that streams the weights again and attends to the chunks before it (Sarathi-Serve), so the prefill
time is a sum over chunk steps, each a per-operator roofline, never faster than reading the weights
once per chunk. ``chunk_tokens`` lays the chunks out along a trailing axis for that sum.

Deliberate omissions: queueing (TTFT here is for an idle engine), prefix caching (pass the cached
prefix as ``prefix``), and tokenisation or network time.

References
----------
.. [1] A. Agrawal et al., "Taming throughput-latency tradeoff in LLM inference with Sarathi-Serve,"
   arXiv:2403.02310, 2024.
.. [2] T. Dao, "FlashAttention-2," arXiv:2307.08691, 2023 (causal tiles skipped).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gpusizer.checks import scalar_or_array
from gpusizer.numeric import ceil, divide, maximum, minimum, number, where

__all__ = [
    "attention_pairs",
    "chunk_count",
    "chunk_tokens",
    "chunked_seconds",
    "prefill_flops",
    "recurrent_flops",
    "time_to_first_token",
]


def attention_pairs(tokens: Any, prefix: Any = 0, window: Any = np.inf) -> Any:
    r"""(query, key) pairs that ``tokens`` new tokens attend to in one causal attention layer.

    Parameters
    ----------
    tokens : array_like
        New tokens :math:`S` (the prompt or chunk; 1 for a decode step). [token]
    prefix : array_like, optional
        Tokens already in the cache before them :math:`P`. [token]
    window : array_like, optional
        Keys a query sees, itself included :math:`W` (``inf`` for full attention). [token]

    Returns
    -------
    numeric
        :math:`\Pi = \sum_{x=P+1}^{P+S} \min(x, W)`; for full attention
        :math:`S P + S(S+1)/2`. [-]

    Examples
    --------
    >>> attention_pairs(4)  # 1 + 2 + 3 + 4
    10.0
    >>> attention_pairs(1, prefix=4095)  # one decode step at context 4096
    4096.0
    >>> attention_pairs(8192, window=4096)  # 4096 * 4097 / 2 + 4096 * 4096
    25167872.0
    """
    s, w = number(tokens), number(window)
    first = number(prefix) + 1.0
    below = minimum(maximum(w - first + 1.0, 0.0), s)  # keys x <= W: every query of them sees x keys
    rising = below * first + below * (below - 1.0) / 2.0
    capped = (s - below) * where(abs(w) < math.inf, w, 0.0)  # the rest see W keys (none if W is inf)
    return scalar_or_array(rising + capped)


def recurrent_flops(tokens: Any, state_elements: Any) -> Any:
    r"""FLOPs of the state updates of linear-attention and state-space layers.

    Parameters
    ----------
    tokens : array_like
        Tokens processed. [token]
    state_elements : array_like
        Recurrent-state elements per sequence, summed over layers. [-]

    Returns
    -------
    numeric
        :math:`6\,S\,n_{state}`: decay, rank-one update and read-out, two FLOPs each per state
        element (Gated DeltaNet, Mamba-2; their projections are counted as GEMMs). [FLOP]

    References
    ----------
    .. [1] S. Yang et al., "Gated Delta Networks," arXiv:2412.06464, 2024.

    Examples
    --------
    >>> recurrent_flops(10, 1000)
    60000.0
    """
    return scalar_or_array(6.0 * (number(tokens) * number(state_elements)) * 1.0)


def prefill_flops(prompt: Any, linear_params: Any, head_params: Any, attention: Any = 0.0) -> Any:
    r"""FLOPs of one prompt's forward pass.

    Parameters
    ----------
    prompt : array_like
        Prompt tokens :math:`S`. [token]
    linear_params : array_like
        Matrix parameters a token uses, LM head excluded (routed experts: the active ones). [param]
    head_params : array_like
        LM head; engines compute logits for the last prompt token only. [param]
    attention : array_like, optional
        Attention (``roofline.attention_flops``) and recurrent FLOPs of the prompt. [FLOP]

    Returns
    -------
    numeric
        :math:`2 N S + 2 N_{head} + F_{attn}`. [FLOP]

    References
    ----------
    .. [1] J. Kaplan et al., arXiv:2001.08361, 2020.

    Examples
    --------
    >>> prefill_flops(1000, 7e9, 5e8)
    14001000000000.0
    """
    return scalar_or_array(2.0 * (number(prompt) * number(linear_params)) + 2.0 * number(head_params)
                           + number(attention))


def chunk_count(prompt: Any, chunk: Any = np.inf) -> int:
    r"""Chunks the longest prompt takes: :math:`n = \max(1, \max \lceil S/c \rceil)`. [-]

    Examples
    --------
    >>> chunk_count([1200, 100], 512), chunk_count(1200), chunk_count(0, 512)
    (3, 1, 1)
    """
    count = ceil(divide(number(prompt), number(chunk)))
    return max(int(np.max(count, initial=1.0) if type(count) is np.ndarray else count), 1)


def chunk_tokens(
    prompt: Any, chunk: Any = np.inf, prefix: Any = 0, *, first: int = 0, count: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    r"""Lay a prompt's chunks out along a new trailing axis: their sizes and the tokens before each.

    Parameters
    ----------
    prompt : array_like
        Prompt tokens :math:`S`. [token]
    chunk : array_like, optional
        Largest chunk the engine processes in one step :math:`c` (``inf``: the whole prompt). [token]
    prefix : array_like, optional
        Tokens cached before the prompt. [token]
    first, count : int, optional
        Lay out only chunks ``first`` to ``first + count - 1`` (default all :math:`n`), so that a long
        prompt can be evaluated a block of chunks at a time in bounded memory. [-]

    Returns
    -------
    tokens, before : ndarray
        Shape ``broadcast(prompt, chunk, prefix).shape + (n,)`` with :math:`n` = ``chunk_count``:
        chunk :math:`j` holds :math:`\min(c, S - j c)` tokens (0 past the prompt's end) after
        :math:`P + j c` tokens. [token]

    Examples
    --------
    >>> chunk_tokens(1200, 512)
    (array([512., 512., 176.]), array([   0.,  512., 1024.]))
    >>> chunk_tokens(1200, 512, first=2, count=5)
    (array([176.]), array([1024.]))
    """
    s, c, p = number(prompt), number(chunk), number(prefix)
    if type(s) is np.ndarray or type(c) is np.ndarray or type(p) is np.ndarray:  # chunks along a new last axis
        s, c, p = (x[..., None] for x in np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (s, c, p))))
    n = chunk_count(s, c)
    j = np.arange(first, n if count is None else min(n, first + count), dtype=float)
    c_ = where(abs(c) < math.inf, c, maximum(s, 1.0))
    starts = j * c_
    return minimum(maximum(s - starts, 0.0), c_), p + starts


def chunked_seconds(chunk_step_seconds: Any, tokens: Any, request_seconds: Any = 0.0) -> Any:
    r"""Prefill time as the sum of its chunk steps, plus a fixed cost per request.

    Parameters
    ----------
    chunk_step_seconds : array_like
        Time of each chunk step along the trailing axis (``chunk_tokens`` layout); a scalar is a
        prompt of one chunk. [s]
    tokens : array_like
        Tokens of each chunk; steps of 0 tokens are padding and cost nothing. [token]
    request_seconds : array_like, optional
        Per-request fixed cost (scheduling, input preparation) :math:`t_{req}`. [s]

    Returns
    -------
    numeric
        :math:`\sum_j t_j + t_{req}`. [s]

    Examples
    --------
    >>> chunked_seconds([0.1, 0.1, 0.05], [512, 512, 176])
    0.25
    >>> chunked_seconds(0.1, 512, request_seconds=0.01)
    0.11
    """
    steps = where(number(tokens) > 0, number(chunk_step_seconds), 0.0)
    total = np.add.reduce(steps, axis=-1) if type(steps) is np.ndarray else steps
    return scalar_or_array(total + number(request_seconds))


def time_to_first_token(prefill_seconds: Any, first_step_seconds: Any, queue_seconds: Any = 0.0) -> Any:
    r"""Time from a request's arrival to its first output token.

    Parameters
    ----------
    prefill_seconds : array_like
        Prefill of the prompt. [s]
    first_step_seconds : array_like
        The first decode step, in which the new sequence joins the running batch. [s]
    queue_seconds : array_like, optional
        Waiting before prefill starts (0 for an idle engine). [s]

    Returns
    -------
    numeric
        :math:`TTFT = W_q + t_{prefill} + t_{step}`. [s]

    Examples
    --------
    >>> time_to_first_token(0.120, 0.015)
    0.135
    """
    return scalar_or_array(number(queue_seconds) + number(prefill_seconds) + number(first_step_seconds))
