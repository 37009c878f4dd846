"""Closed loop: continuous-batching throughput and time per output token against concurrency.

Deliberate omissions: queueing (a closed loop has none; see ``queueing.load`` for an open load).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gpusizer.checks import instance, positive_array
from gpusizer.serving.step_table import StepModel, batch_limit, marginal_prefill_seconds

__all__ = ["Curve", "concurrency_curve"]


@dataclass(frozen=True)
class Curve:
    """Continuous-batching throughput-latency curve against concurrency (closed loop)."""

    concurrency: np.ndarray
    """Sequences decoding together. [-]"""
    tpot_seconds: np.ndarray
    """Time per output token, prefill interference included. [s]"""
    tokens_per_second: np.ndarray
    """Output tokens per second per user, ``1 / tpot``. [token/s]"""
    aggregate_tokens_per_second: np.ndarray
    """Output tokens per second of all users together. [token/s]"""
    fits: np.ndarray
    """Whether the KV pool (and the engine's sequence limit) holds that many sequences. [bool]"""
    max_concurrency: int
    """Most sequences of the workload's length the engine holds. [-]"""


def concurrency_curve(step: StepModel, concurrency: Any, *, prompt_tokens: float, output_tokens: float) -> Curve:
    r"""Time per output token and aggregate throughput of ``concurrency`` users in a closed loop.

    Each user sends a prompt of ``prompt_tokens``, reads ``output_tokens`` and sends the next; a
    decode step carries the sequences' KV reads and, on average, :math:`B/o` users' prefills.

    Notes
    -----
    .. math:: \mathrm{TPOT}(B) = a(B) + \kappa B \bar c + \frac{B}{o} S(s; B), \qquad
              X(B) = B / \mathrm{TPOT}(B)

    with :math:`\bar c = s + o/2` the mean context and :math:`S` the marginal prefill time
    (``load``). Beyond ``max_concurrency`` the numbers continue the formula and ``fits`` is False.

    Examples
    --------
    >>> from gpusizer.serving import step_model
    >>> s = step_model("llama-3.1-8b", "h100-sxm", context=2560)
    >>> c = concurrency_curve(s, [1, 8, 64], prompt_tokens=2048, output_tokens=512)
    >>> bool(np.all(np.diff(c.aggregate_tokens_per_second) > 0))
    True
    """
    instance(step, "step", StepModel)
    users = positive_array(concurrency, "concurrency")
    s, o = float(prompt_tokens), float(output_tokens)
    mean_context = s + o / 2
    marginal = marginal_prefill_seconds(step, np.array([s]), users[..., None])[..., 0]
    tpot = np.interp(users, step.token_grid, step.token_seconds) + step.kv_seconds * users * mean_context
    tpot = tpot + users / o * marginal
    limit = batch_limit(step, s + o)
    return Curve(users, tpot, 1 / tpot, users / tpot, users <= limit, int(limit))
