r"""Decode: one engine step that produces one token for each of ``concurrency`` sequences.

Pure functions of numbers that broadcast like numpy ufuncs. A decode step streams the weights it
touches once, whatever the batch (the input embedding table is gathered row by row, so it is not
streamed unless tied to the LM head), reads every sequence's own KV cache (sliding-window layers
capped at their window, state-space layers a fixed state), and moves a few activations. Its time is
the per-operator-class roofline (``roofline.roofline_time``) summed, plus fixed costs per layer and per
step that no bandwidth or FLOP rate explains (kernel launches and tails, sampling, scheduling, the
routing of MoE layers) and, with tensor parallelism, two all-reduces per layer.

.. math::

   t_{step} = \sum_{ops} \max\left(\frac{F_{op}}{\mu P_{op}}, \frac{Q_{op}}{\eta_{op} \beta}\right)
              + L\,(t_{layer} + 2\,t_{AR}) + L_{moe} t_{moe} + t_0

The ceiling is the same sum with :math:`\mu = \eta = 1` and no fixed or communication cost.

Deliberate omissions: speculative decoding (accepted tokens per step > 1), prefill chunks sharing
the step (``gpusizer.prefill`` models them as steps of their own), and routing skew (the expert count
assumes uniform, independent routing). Collectives other than the ring all-reduce (one-shot and
two-shot all-reduce, pipeline hops, expert-parallel all-to-all) live in ``gpusizer.interconnect``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from gpusizer.checks import scalar_or_array
from gpusizer.numeric import divide, number

__all__ = [
    "activation_bytes",
    "aggregate_tokens_per_second",
    "experts_touched",
    "overhead_seconds",
    "step_seconds",
    "streamed_weight_bytes",
    "tokens_per_second",
]


def experts_touched(tokens: Any, num_experts: Any, experts_per_token: Any) -> Any:
    r"""Expected distinct routed experts a step of ``tokens`` tokens uses in one MoE layer.

    Parameters
    ----------
    tokens : array_like
        Tokens routed in the step (the batch in decode, the chunk in prefill). [token]
    num_experts : array_like
        Routed experts per layer :math:`E`. [-]
    experts_per_token : array_like
        Experts each token picks :math:`k`. [-]

    Returns
    -------
    numeric
        :math:`E\left(1 - (1 - k/E)^T\right)`, for uniform and independent routing. [-]

    Notes
    -----
    Real routers are skewed, so at small :math:`T` this over-estimates the distinct experts (a
    conservative choice for speed). Values for DeepSeek-V3 (256, 8): 8, 57, 163, 252 at
    :math:`T` = 1, 8, 32, 128 (docs/methods.md#experts-touched-per-step).

    Examples
    --------
    >>> experts_touched([1, 8, 32, 128], 256, 8).round(0)
    array([  8.,  57., 163., 252.])
    """
    experts = number(num_experts)
    share = divide(number(experts_per_token), experts)
    return scalar_or_array(experts * (1.0 - _power(1.0 - share, number(tokens))))


def _power(base: Any, exponent: Any) -> Any:
    """``np.power``: ``base ** exponent``, with numpy's ``nan`` or ``inf`` where Python gives a complex
    number (a negative base) or raises (zero to a negative power, overflow)."""
    try:
        result = base ** exponent
    except (ZeroDivisionError, OverflowError):
        return float(np.power(base, exponent))
    return result if type(result) is not complex else float(np.power(base, exponent))


def streamed_weight_bytes(
    tokens: Any, dense_bytes: Any, expert_bytes: Any = 0.0, num_experts: Any = 1, experts_per_token: Any = 1
) -> Any:
    r"""Weight bytes one forward step streams from memory.

    Parameters
    ----------
    tokens : array_like
        Tokens in the step. [token]
    dense_bytes : array_like
        Weights every token uses: attention, dense FFN, shared experts, LM head (and the input
        embedding only when it is tied to the head). [B]
    expert_bytes : array_like, optional
        All routed experts of all MoE layers. [B]
    num_experts, experts_per_token : array_like, optional
        :math:`E` and :math:`k` of the MoE layers. [-]

    Returns
    -------
    numeric
        :math:`W_{dense} + W_{experts} \cdot E_{touched}(T)/E`. [B]

    Examples
    --------
    >>> streamed_weight_bytes(1, 15.0e9)  # Llama 3.1 8B in BF16
    15000000000.0
    >>> streamed_weight_bytes([1, 1000], 1e9, 64e9, num_experts=128, experts_per_token=8)
    array([5.e+09, 6.5e+10])
    """
    experts = number(num_experts)
    share = divide(experts_touched(tokens, experts, experts_per_token), experts)
    return scalar_or_array(number(dense_bytes) + number(expert_bytes) * share)


def activation_bytes(
    tokens: Any, num_layers: Any, hidden: Any, ffn_width: Any, vocab: Any, bytes_per_element: Any
) -> Any:
    r"""Activation traffic of one step: the inputs and outputs of every projection, and the logits.

    Parameters
    ----------
    tokens : array_like
        Tokens in the step. [token]
    num_layers, hidden, ffn_width, vocab : array_like
        :math:`L`, :math:`d`, the FFN width one token produces (:math:`d_{ff}`, or
        :math:`k d_e` plus the shared width for MoE) and :math:`V`. [-]
    bytes_per_element : array_like
        Activation dtype size. [B]

    Returns
    -------
    numeric
        :math:`T\left(L (10\,d + 3\,d_{ff})\,b_a + 4 V\right)`: per layer the residual stream read
        and written around both blocks, Q/K/V/O in and out (:math:`\approx 10 d`), gate/up/down
        (:math:`3 d_{ff}`); FP32 logits once. [B]

    Examples
    --------
    >>> activation_bytes(1, 32, 4096, 14336, 128256, 2)  # Llama 3.1 8B, one token: 5.9 MB
    5886976.0
    """
    per_layer = (10.0 * number(hidden) + 3.0 * number(ffn_width)) * number(bytes_per_element)
    return scalar_or_array(number(tokens) * (number(num_layers) * per_layer + 4.0 * number(vocab)))


def overhead_seconds(
    num_layers: Any,
    layer_seconds: Any,
    step_seconds: Any,
    allreduce: Any = 0.0,
    *,
    allreduces_per_layer: Any = 2,
    moe_layers: Any = 0,
    moe_layer_seconds: Any = 0.0,
) -> Any:
    r"""Fixed cost of one engine step that no bandwidth or FLOP rate explains.

    Parameters
    ----------
    num_layers : array_like
        Decoder layers :math:`L` (on this GPU's pipeline stage). [-]
    layer_seconds : array_like
        Per layer: kernel launches and tails, norms, rotary embedding. [s]
    step_seconds : array_like
        Per step: sampling, scheduling, host synchronisation. [s]
    allreduce : array_like, optional
        Time of one all-reduce (``interconnect.allreduce_seconds``). [s]
    allreduces_per_layer : array_like, optional
        2 for Megatron-style tensor parallelism (after attention and after the FFN). [-]
    moe_layers : array_like, optional
        Layers whose FFN is a mixture of experts :math:`L_{moe}`. [-]
    moe_layer_seconds : array_like, optional
        Extra cost of an MoE layer: router, top-k, token permutation and grouped-GEMM tails. [s]

    Returns
    -------
    numeric
        :math:`L\,(t_{layer} + n_{AR} t_{AR}) + L_{moe} t_{moe} + t_0`. [s]

    Examples
    --------
    >>> overhead_seconds(32, 10e-6, 50e-6)
    0.00037
    """
    per_layer = number(layer_seconds) + number(allreduces_per_layer) * number(allreduce)
    moe = number(moe_layers) * number(moe_layer_seconds)
    return scalar_or_array(number(num_layers) * per_layer + moe + number(step_seconds))


def step_seconds(operator_seconds: Iterable[Any], overhead: Any = 0.0) -> Any:
    r"""Time of one engine step: the operator classes one after the other, plus the fixed cost.

    Parameters
    ----------
    operator_seconds : iterable of array_like
        ``roofline.roofline_time`` of each operator class (dense GEMMs, expert GEMMs, attention). [s]
    overhead : array_like, optional
        ``overhead_seconds``. [s]

    Returns
    -------
    numeric
        :math:`\sum_{op} t_{op} + t_{fixed}`. [s]

    Examples
    --------
    >>> step_seconds([0.004, 0.001], 0.0005)
    0.0055
    """
    total = number(overhead) * 1.0  # a float, whatever the inputs
    for seconds in operator_seconds:
        total = total + number(seconds)
    return scalar_or_array(total)


def tokens_per_second(step: Any) -> Any:
    """Tokens each sequence receives per second: one per step, :math:`1/t_{step}`. [token/s]

    Examples
    --------
    >>> tokens_per_second(0.02)
    50.0
    """
    return scalar_or_array(divide(1.0, number(step)))


def aggregate_tokens_per_second(concurrency: Any, step: Any) -> Any:
    """Tokens all ``concurrency`` sequences receive per second: :math:`B/t_{step}`. [token/s]

    Examples
    --------
    >>> aggregate_tokens_per_second(64, 0.04)
    1600.0
    """
    return scalar_or_array(divide(number(concurrency), number(step)))
