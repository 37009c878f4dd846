r"""Serving under load: continuous batching, queueing, and the latency a request rate buys.

An engine that batches continuously (vLLM, SGLang, TensorRT-LLM) runs one *step* after another.
Each step decodes one token for every running sequence and fills the rest of its token budget
(``chunk_tokens``, vLLM's ``max_num_batched_tokens``) with prompt tokens of waiting requests, first
come first served. This module turns gpusizer's step model into the numbers a buyer needs:

* ``step_model`` tabulates, once per configuration, the step time of ``performance.speed`` as a
  function of the tokens in a step, the cached tokens the decodes read, and the prompt-dependent
  extra cost of prefill (attention over the prompt, the per-request fixed cost). Everything below
  interpolates in that table; nothing calls ``estimate`` per event.
* ``concurrency_curve``: the throughput-latency curve against concurrency (closed loop) until the KV
  pool runs out.
* ``load``: closed-form means and tails under an open Poisson load: a mean-field decode batch
  (Little's law), prefill interference on the time per output token, an M/G/1 prefill server with
  the residual of the step in progress for the time to first token, and an M/G/c wait for a
  sequence slot.
* ``simulate``: a seeded discrete-event simulation of the same scheduler, for p50/p95/p99 of TTFT,
  TPOT and end-to-end latency.
* ``max_rate``: the largest request rate that meets an ``SLO``, by bracketing on a rate grid and
  ``scipy.optimize.brentq``.

The first token is sampled by the step that finishes the prefill, as vLLM does; ``estimate``'s
``ttft_seconds_expected`` adds one decode step on top, so at zero load the TTFT here is one decode step
shorter.

Deliberate omissions: preemption (the scheduler reserves prompt + output tokens of KV cache when it
admits a request, TensorRT-LLM's ``GUARANTEED_NO_EVICT`` policy; vLLM admits optimistically and
preempts, so it holds up to ``(s + o) / (s + o/2)`` more sequences when memory binds), prefix
caching, speculative decoding, disaggregated prefill, and inter-token-latency percentiles (TPOT here
is the per-request mean, as ``vllm bench serve`` reports it). Sliding-window and recurrent layers
enter the step time through a linear KV-read cost fitted at the workload's mean context.

References
----------
.. [1] W. Kwon et al., "Efficient memory management for large language model serving with
   PagedAttention," SOSP 2023, arXiv:2309.06180.
.. [2] A. Agrawal et al., "Taming throughput-latency tradeoff in LLM inference with Sarathi-Serve,"
   OSDI 2024, arXiv:2403.02310.
.. [3] Y. Zhong et al., "DistServe: Disaggregating prefill and decoding for goodput-optimized large
   language model serving," OSDI 2024, arXiv:2401.09670.
.. [4] L. Kleinrock, *Queueing Systems, Volume 1: Theory*. Wiley, 1975, ch. 5 (M/G/1,
   Pollaczek-Khinchine).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from statistics import NormalDist
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpusizer.checks import positive_array, scalar_or_array

__all__ = [
    "DISTRIBUTIONS",
    "MAX_RATE_METHODS",
    "SLO",
    "Curve",
    "Load",
    "MaxRate",
    "Simulation",
    "StepModel",
    "Workload",
    "concurrency_curve",
    "length_quantiles",
    "load",
    "max_rate",
    "max_rate_methods",
    "sample_lengths",
    "simulate",
    "step_model",
    "step_seconds",
]


# --- workload and service-level objective ---------------------------------------------------------


def _fixed(u: np.ndarray, mean: float, cv: float) -> np.ndarray:
    return np.full_like(u, mean)


def _exponential(u: np.ndarray, mean: float, cv: float) -> np.ndarray:
    return -mean * np.log1p(-u)


def _lognormal(u: np.ndarray, mean: float, cv: float) -> np.ndarray:
    sigma = math.sqrt(math.log1p(cv * cv))
    normal = np.array([NormalDist().inv_cdf(x) for x in np.ravel(u)]).reshape(np.shape(u))
    return np.exp(math.log(mean) - sigma * sigma / 2 + sigma * normal)


def _uniform(u: np.ndarray, mean: float, cv: float) -> np.ndarray:
    return mean * (1 + cv * math.sqrt(3) * (2 * u - 1))


#: Length distributions by name: inverse CDFs ``ppf(u, mean, cv)``. ``cv`` (standard deviation over
#: mean) is used by ``lognormal`` and ``uniform``; ``exponential`` has cv 1, ``fixed`` cv 0.
DISTRIBUTIONS: dict[str, Callable[[np.ndarray, float, float], np.ndarray]] = {
    "fixed": _fixed,
    "exponential": _exponential,
    "lognormal": _lognormal,
    "uniform": _uniform,
}

Distribution = Literal["fixed", "exponential", "lognormal", "uniform"]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class Workload(_Record):
    """Traffic one deployment must serve: a request rate and the lengths of requests.

    >>> Workload(rate=5, prompt_tokens=2048, output_tokens=512).prompt_distribution
    'fixed'
    """

    rate: Annotated[float, Field(gt=0)]
    """Mean request arrival rate. [1/s]"""
    prompt_tokens: Annotated[float, Field(ge=1)]
    """Mean prompt length. [token]"""
    output_tokens: Annotated[float, Field(ge=1)]
    """Mean output length, first token included. [token]"""
    prompt_distribution: Distribution = "fixed"
    """Shape of the prompt-length distribution (see ``DISTRIBUTIONS``)."""
    output_distribution: Distribution = "fixed"
    """Shape of the output-length distribution."""
    prompt_cv: Annotated[float, Field(ge=0, le=4)] = 0.5
    """Coefficient of variation of prompt lengths for ``lognormal`` and ``uniform``. [-]"""
    output_cv: Annotated[float, Field(ge=0, le=4)] = 0.5
    """Coefficient of variation of output lengths for ``lognormal`` and ``uniform``. [-]"""
    burstiness: Annotated[float, Field(gt=0)] = 1.0
    """Shape of gamma-distributed inter-arrival times: 1 is Poisson, below 1 burstier (the
    ``--burstiness`` of ``vllm bench serve``). The closed forms assume 1. [-]"""

    @model_validator(mode="after")
    def _uniform_stays_positive(self) -> Workload:
        for name in ("prompt", "output"):
            if getattr(self, f"{name}_distribution") == "uniform" and getattr(self, f"{name}_cv") > 1 / math.sqrt(3):
                raise ValueError(f"{name}_cv must be <= 0.577 for a uniform distribution (lengths stay positive)")
        return self

    def at(self, rate: float) -> Workload:
        """The same traffic shape at another request rate."""
        return self.model_copy(update={"rate": float(rate)})


class SLO(_Record):
    """Latency targets a configuration must meet; ``None`` leaves a metric unconstrained.

    >>> SLO(ttft_p95=0.5, tpot_p95=0.05).quantile
    0.95
    """

    ttft_p95: Annotated[float, Field(gt=0)] | None = None
    """Time to first token at ``quantile``, queueing included. [s]"""
    tpot_p95: Annotated[float, Field(gt=0)] | None = None
    """Time per output token (a request's mean after its first token) at ``quantile``. [s]"""
    e2e_p95: Annotated[float, Field(gt=0)] | None = None
    """End-to-end latency at ``quantile``. [s]"""
    quantile: Annotated[float, Field(gt=0, lt=1)] = 0.95
    """Quantile the three targets apply to (0.95 unless stated, hence the field names). [-]"""

    @model_validator(mode="after")
    def _something(self) -> SLO:
        if self.ttft_p95 is None and self.tpot_p95 is None and self.e2e_p95 is None:
            raise ValueError("an SLO needs at least one of ttft_p95, tpot_p95, e2e_p95")
        return self


def length_quantiles(mean: float, distribution: str = "fixed", cv: float = 0.5, nodes: int = 32) -> np.ndarray:
    r"""Equal-weight quadrature nodes of a length distribution: its quantiles at :math:`(i + 1/2)/n`.

    The mean of any function of a length over the nodes approximates its expectation; the closed
    forms use them for :math:`E[S]` and :math:`E[S^2]` of service times that are not linear in length.

    Parameters
    ----------
    mean : float
        Mean length. [token]
    distribution : str
        A name of ``DISTRIBUTIONS``.
    cv : float
        Coefficient of variation (``lognormal``, ``uniform``). [-]
    nodes : int
        Number of nodes.

    Returns
    -------
    ndarray
        Whole token counts, at least 1, sorted. [token]

    Examples
    --------
    >>> length_quantiles(512, "fixed", nodes=3)
    array([512., 512., 512.])
    """
    u = (np.arange(nodes) + 0.5) / nodes
    return np.maximum(1.0, np.rint(_ppf(distribution)(u, mean, cv)))


def sample_lengths(mean: float, distribution: str, cv: float, size: int, rng: np.random.Generator) -> np.ndarray:
    """Random whole lengths (at least 1) drawn by inverse transform with ``rng``. [token]"""
    return np.maximum(1, np.rint(_ppf(distribution)(rng.random(size), mean, cv))).astype(np.int64)


def _ppf(distribution: str) -> Callable[[np.ndarray, float, float], np.ndarray]:
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"distribution must be one of {', '.join(DISTRIBUTIONS)}, got {distribution!r}")
    return DISTRIBUTIONS[distribution]


# --- the step model -------------------------------------------------------------------------------


@dataclass(frozen=True)
class StepModel:
    r"""Engine step time as a table of numbers, built once per configuration by ``step_model``.

    A step that runs :math:`n` tokens (decodes plus prompt tokens) while the decodes read
    :math:`K` cached tokens takes

    .. math:: t = a(n) + \kappa K + \sum_{\text{chunks}} [e(p + c) - e(p)]

    where :math:`a` is ``token_seconds`` over ``token_grid``, :math:`\kappa` ``kv_seconds`` and
    :math:`e` ``prompt_seconds`` over ``prompt_grid`` (the prefill time of a prompt beyond
    :math:`a` of its chunks: attention over the prompt and the per-request fixed cost; it may be
    negative because :math:`a` computes the LM head for every token and a prefill only for the last).
    """

    token_grid: np.ndarray
    """Tokens per step where ``token_seconds`` is tabulated, starting at 0. [token]"""
    token_seconds: np.ndarray
    """Step time of that many single-token sequences with no cache to read, :math:`a(n)`. [s]"""
    compute_bound: np.ndarray
    """Whether the step of ``token_grid`` tokens is compute-bound at the datasheet peaks. [bool]"""
    kv_seconds: float
    """Time to read one cached token in a decode step, :math:`\\kappa`. [s/token]"""
    prompt_grid: np.ndarray
    """Prompt lengths where ``prompt_seconds`` is tabulated, starting at 0. [token]"""
    prompt_seconds: np.ndarray
    """Prefill time beyond ``token_seconds`` of its chunks, :math:`e(S)`. [s]"""
    chunk_tokens: int
    """Token budget of one step (decodes count against it). [token]"""
    max_sequences: int
    """Most sequences the engine runs at once (vLLM ``max_num_seqs``). [-]"""
    kv_capacity_tokens: float
    """Tokens the KV pool holds. [token]"""
    decode_band: tuple[float, float] = (1.0, 1.0)
    """Factors on decode step time at the p90 and p10 of speed (fast, slow). [-]"""
    prefill_band: tuple[float, float] = (1.0, 1.0)
    """Factors on prefill time at the fast and slow end of its band. [-]"""
    engine: str = ""
    """Engine profile the table was built for."""
    kv_cache: str = ""
    """KV-cache dtype."""
    layout: str = ""
    """How the GPUs share the model (``tp4``, ``pp2``; empty on one GPU)."""
    label: str = ""

    def scaled(self, decode: float, prefill: float | None = None) -> StepModel:
        """The same engine with decode step times times ``decode`` and prefill extras times ``prefill``."""
        prefill = decode if prefill is None else prefill
        return replace(self, token_seconds=self.token_seconds * decode, kv_seconds=self.kv_seconds * decode,
                       prompt_seconds=self.prompt_seconds * prefill)

    def bands(self) -> tuple[StepModel, StepModel]:
        """The engine at the fast and at the slow end of the speed bands."""
        return (self.scaled(self.decode_band[0], self.prefill_band[0]),
                self.scaled(self.decode_band[1], self.prefill_band[1]))


def step_seconds(step: StepModel, tokens: Any, kv_tokens: Any = 0.0, prefill_seconds: Any = 0.0) -> Any:
    r"""Duration of one engine step.

    Parameters
    ----------
    step : StepModel
        The configuration's step table.
    tokens : array_like
        Tokens in the step: one per decoding sequence plus the prompt tokens scheduled. [token]
    kv_tokens : array_like
        Cached tokens the decodes read, summed over sequences. [token]
    prefill_seconds : array_like
        Prompt-dependent extra of the prefill chunks in the step, :math:`e(p+c) - e(p)`. [s]

    Returns
    -------
    numeric
        Step time; 0 for an empty step. [s]

    Notes
    -----
    .. math:: t = a(n) + \kappa K + \Delta e

    Examples
    --------
    >>> s = StepModel(np.array([0, 1, 100]), np.array([0, 0.01, 0.02]), np.array([False] * 3), 1e-6,
    ...               np.array([0, 100]), np.array([0, 0.001]), 100, 8, 1e5)
    >>> round(step_seconds(s, 1, kv_tokens=1000), 6)
    0.011
    """
    time = np.interp(tokens, step.token_grid, step.token_seconds) + step.kv_seconds * np.asarray(kv_tokens)
    return scalar_or_array(time + np.asarray(prefill_seconds))


def _prompt_extra(step: StepModel, tokens: Any) -> Any:
    return np.interp(tokens, step.prompt_grid, step.prompt_seconds)


def step_model(
    model: Any,
    gpu: Any,
    *,
    weights: str | None = None,
    kv_cache: str | None = None,
    gpus: int | None = None,
    engine: str = "vllm",
    context: float = 4096,
    max_prompt: float | None = None,
    **options: Any,
) -> StepModel:
    r"""Tabulate a configuration's step time from ``performance.speed`` and its KV pool from ``estimate``.

    Three calls, each over an array: decode steps of :math:`n` sequences at context 1 give
    :math:`a(n)`; decode steps at context 1 and ``context`` give :math:`\kappa`; prefills of a grid of
    prompts give :math:`e(S)`. ``estimate`` at ``context`` gives the KV pool in tokens.

    Parameters
    ----------
    model, gpu : str or record
        Catalogue ids or records, as for ``estimate``.
    weights, kv_cache, gpus, engine
        As for ``estimate``.
    context : float
        Representative tokens per sequence (prompt + half the output is the mean a decode reads):
        where the KV-read cost is measured and the KV pool is counted. [token]
    max_prompt : float, optional
        Longest prompt to tabulate; default the model's maximum context (at least ``4 * context``). [token]
    **options
        Passed to ``estimate`` (``layout=`` where the estimator supports it).

    Returns
    -------
    StepModel

    Examples
    --------
    >>> s = step_model("llama-3.1-8b", "h100-sxm", context=2560)
    >>> s.chunk_tokens, s.max_sequences
    (8192, 256)
    >>> 0.005 < step_seconds(s, 1) < 0.02  # one decode of an 8B model on an H100
    True
    """
    from gpusizer import catalog, engines
    from gpusizer.estimator import estimate

    record = catalog.model(model)
    ctx = int(max(2, round(context)))
    longest = float(max_prompt) if max_prompt else float(max(record.max_context or 0, 4 * ctx))
    tokens, prompts = _axes(engines.engine(engine), longest)
    sized = estimate(record, gpu, weights=weights, kv_cache=kv_cache, context=np.array([[1], [ctx]]),
                     concurrency=tokens, prompt=prompts, gpus=gpus, engine=engine, **options)
    return _tables(record, sized, tokens, prompts, ctx)


def _grid(points: int, longest: float) -> np.ndarray:
    """``points`` distinct whole numbers from 1 to ``longest``, geometrically spaced where rounding allows."""
    if longest <= points:
        return np.arange(1, points + 1, dtype=np.int64)
    grid = np.unique(np.rint(np.geomspace(1, longest, points)))
    fill = np.setdiff1d(np.rint(np.linspace(1, longest, points)), grid)[: points - len(grid)]
    return np.sort(np.concatenate([grid, fill])).astype(np.int64)


def _axes(profile: Any, longest: float) -> tuple[np.ndarray, np.ndarray]:
    """Tokens per step (1 to the budget or the sequence limit) and prompt lengths (1 to ``longest``) where the
    step table is tabulated: two grids of one length, so that one ``estimate`` broadcasts them together."""
    top = max(int(profile.batched_tokens), int(profile.max_sequences)) + 1
    tokens = np.unique(np.rint(np.geomspace(1, top, 48))).astype(np.int64)
    return tokens, _grid(len(tokens), max(longest, 2.0))


def _tables(record: Any, sized: Any, tokens: np.ndarray, prompts: np.ndarray, ctx: int) -> StepModel:
    """The step table of an ``estimate`` at ``context=[[1], [ctx]]``, ``concurrency=tokens``, ``prompt=prompts``:
    decode of ``n`` sequences at context 1 and ``ctx`` (rows), prefill of the prompt grid."""
    from gpusizer import engines

    profile = engines.engine(sized.engine)
    count = sized.gpus
    chunk = int(profile.batched_tokens)
    decode, fill = sized.decode, sized.prefill
    plan = getattr(sized, "parallel", None)
    both = np.broadcast_to(np.asarray(decode.tpot_seconds_expected, dtype=float), (2, len(tokens)))
    a = np.concatenate([[0.0], both[0]])
    grid = np.concatenate([[0], tokens])
    reference = int(np.searchsorted(tokens, 16))
    kappa = max(float(both[1, reference] - both[0, reference]) / (tokens[reference] * (ctx - 1)), 0.0)
    full = np.interp(chunk, grid, a) * (prompts // chunk)
    rest = np.where(prompts % chunk > 0, np.interp(prompts % chunk, grid, a), 0.0)
    extra = np.asarray(fill.seconds_expected, dtype=float) - full - rest
    batched = int(np.searchsorted(tokens, 32))  # the band of batched decode, the serving regime
    decode_rate = float(np.broadcast_to(decode.expected_tokens_per_second, both.shape)[0, batched])
    low, high = (float(np.broadcast_to(b, both.shape)[0, batched]) for b in decode.band)
    p_expected = float(np.asarray(fill.seconds_expected).ravel()[-1])
    p_low, p_high = (float(np.asarray(b).ravel()[-1]) for b in fill.band)
    return StepModel(
        token_grid=grid.astype(float),
        token_seconds=a,
        compute_bound=np.concatenate([[False], np.broadcast_to(decode.bound, both.shape)[0] == "compute"]),
        kv_seconds=kappa,
        prompt_grid=np.concatenate([[0.0], prompts.astype(float)]),
        prompt_seconds=np.concatenate([[0.0], extra]),
        chunk_tokens=chunk,
        max_sequences=int(profile.max_sequences),
        kv_capacity_tokens=float(np.broadcast_to(sized.kv_pool_tokens, both.shape)[1, 0]),
        decode_band=(decode_rate / high if high > 0 else 1.0, decode_rate / low if low > 0 else 1.0),
        prefill_band=(p_low / p_expected if p_expected > 0 else 1.0, p_high / p_expected if p_expected > 0 else 1.0),
        engine=profile.name,
        kv_cache=sized.kv_cache,
        layout=plan.layout if plan is not None else (f"tp{count}" if count > 1 else ""),
        label=f"{record.id} on {count} x {sized.gpu} ({sized.weights}, {profile.name})",
    )


# --- closed loop: throughput against concurrency --------------------------------------------------


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
    >>> s = step_model("llama-3.1-8b", "h100-sxm", context=2560)
    >>> c = concurrency_curve(s, [1, 8, 64], prompt_tokens=2048, output_tokens=512)
    >>> bool(np.all(np.diff(c.aggregate_tokens_per_second) > 0))
    True
    """
    users = positive_array(concurrency, "concurrency")
    s, o = float(prompt_tokens), float(output_tokens)
    mean_context = s + o / 2
    marginal = _marginal_prefill(step, np.array([s]), users[..., None])[..., 0]
    tpot = np.interp(users, step.token_grid, step.token_seconds) + step.kv_seconds * users * mean_context
    tpot = tpot + users / o * marginal
    limit = _batch_limit(step, s + o)
    return Curve(users, tpot, 1 / tpot, users / tpot, users <= limit, int(limit))


def _batch_limit(step: StepModel, tokens_per_sequence: float) -> float:
    """Most sequences that fit: the KV pool over tokens per sequence, the engine limit, the budget."""
    return float(min(step.max_sequences, step.kv_capacity_tokens // max(tokens_per_sequence, 1),
                     step.chunk_tokens - 1))


def _marginal_prefill(step: StepModel, prompt: np.ndarray, batch: Any, fd: Any = 1.0, fp: Any = 1.0) -> np.ndarray:
    r"""Time a prompt adds to the steps it shares with ``batch`` decodes: :math:`\sum_j [a(B+c_j) - a(B)] + e(S)`,
    with decode times scaled by ``fd`` and prompt extras by ``fp``."""
    batch = np.asarray(batch, dtype=float)
    budget = np.maximum(step.chunk_tokens - batch, 1.0)
    full = np.floor(prompt / budget)
    rest = prompt - full * budget
    base = np.interp(batch, step.token_grid, step.token_seconds)
    whole = np.interp(batch + budget, step.token_grid, step.token_seconds) - base
    part = np.where(rest > 0, np.interp(batch + rest, step.token_grid, step.token_seconds) - base, 0.0)
    return fd * (full * whole + part) + fp * _prompt_extra(step, prompt)


# --- open loop: closed-form means and tails -------------------------------------------------------


@dataclass(frozen=True)
class Load:
    """Closed-form state of an engine under Poisson load; arrays over ``rate``."""

    rate: Any
    """Request arrival rate. [1/s]"""
    stable: Any
    """Whether queues stay finite (prefill server below saturation and the batch within the KV pool). [bool]"""
    batch: Any
    """Mean sequences decoding, from Little's law. [-]"""
    tpot_mean: Any
    """Mean time per output token. [s]"""
    tpot_quantile: Any
    """Time per output token at ``quantile`` (normal approximation of the per-request mean). [s]"""
    ttft_mean: Any
    """Mean time to first token: M/G/1 wait plus the prefill's own steps. [s]"""
    ttft_quantile: Any
    """Time to first token at ``quantile`` (exponential tail of the wait plus the prefill). [s]"""
    e2e_mean: Any
    """Mean end-to-end latency. [s]"""
    e2e_quantile: Any
    """End-to-end latency at ``quantile`` (TTFT and decode quantiles added: an upper estimate). [s]"""
    prefill_utilisation: Any
    """Share of engine time spent on prompt tokens. [-]"""
    decode_utilisation: Any
    """Share of engine time spent on decode tokens. [-]"""
    busy: Any
    """Share of time the engine runs steps (the rest it idles). [-]"""
    quantile: float
    """Quantile of the ``*_quantile`` fields. [-]"""
    limit: Any
    """Why an unstable point is unstable: ``"prefill"``, ``"kv-cache"``, ``"max-sequences"``; ``""`` when stable."""
    compute_bound: Any
    """Whether a decode step at the mean batch is compute-bound. [bool]"""


@dataclass(frozen=True)
class _Lengths:
    prompt: np.ndarray
    output: np.ndarray

    @classmethod
    def of(cls, workload: Workload, nodes: int = 24) -> _Lengths:
        return _lengths(workload, nodes)


@lru_cache(maxsize=64)
def _lengths(workload: Workload, nodes: int) -> _Lengths:
    """Quadrature nodes of a workload's lengths; one node is exact for a fixed length (cached: a sweep
    asks for the same nodes thousands of times)."""
    prompt = 1 if workload.prompt_distribution == "fixed" else nodes
    output = 1 if workload.output_distribution == "fixed" else nodes
    return _Lengths(
        length_quantiles(workload.prompt_tokens, workload.prompt_distribution, workload.prompt_cv, prompt),
        length_quantiles(workload.output_tokens, workload.output_distribution, workload.output_cv, output),
    )


def _solve_batch(step: StepModel, rate: np.ndarray, lengths: _Lengths, fd: np.ndarray, fp: np.ndarray,
                 grid_points: int = 64) -> dict[str, Any]:
    """Mean-field decode batch: the smallest B with B = rate * E[o - 1] * TPOT(B), on a grid per rate."""
    s, o = lengths.prompt, lengths.output
    decode_steps = float(np.mean(o - 1))
    weight = np.maximum(o - 1, 0.0)
    held = float(np.sum(weight * (s.mean() + o))) / max(float(weight.sum()), 1e-12)
    context = float(s.mean() + np.sum(weight * o / 2) / max(float(weight.sum()), 1e-12))
    cap_kv = step.kv_capacity_tokens / max(held, 1.0)
    cap = min(float(step.max_sequences), cap_kv, step.chunk_tokens - 1.0)
    grid = np.concatenate([[0.0], np.geomspace(1e-3, max(cap, 1e-3), grid_points - 1)])
    lam = rate[:, None]
    decode = fd[:, None] * (np.interp(1 + grid, step.token_grid, step.token_seconds)
                            + step.kv_seconds * (1 + grid) * context)[None, :]
    marginal = _marginal_prefill(step, s[None, None, :], 1 + grid[None, :, None], fd[:, None, None],
                                 fp[:, None, None])  # what a decoding request sees: one more decode in the step
    prefill = lam * np.mean(marginal, axis=-1)
    tpot = np.where(prefill < 1, decode / np.maximum(1 - prefill, 1e-12), np.inf)
    gap = lam * decode_steps * tpot - grid[None, :]
    below = gap <= 0
    found = below.any(axis=1)
    first = np.argmax(below, axis=1)
    rows = np.arange(len(rate))
    prev = np.maximum(first - 1, 0)
    g0, g1 = gap[rows, prev], gap[rows, first]
    finite = np.isfinite(g0) & np.isfinite(g1) & (g0 != g1) & (first > 0)
    with np.errstate(invalid="ignore"):
        frac = np.where(finite, g0 / np.where(finite, g0 - g1, 1.0), 1.0)
    batch = np.where(first > 0, grid[prev] + frac * (grid[first] - grid[prev]), 0.0)
    limit = np.where(found, "", np.where(cap == cap_kv, "kv-cache", "max-sequences"))
    if decode_steps == 0:  # every request ends at its first token: no decode phase
        batch, found, limit = np.zeros_like(rate), np.ones_like(rate, dtype=bool), np.full(rate.shape, "")
    return dict(batch=np.where(found, batch, cap), found=found, limit=limit, context=context,
                decode_steps=decode_steps, cap=cap)


def load(step: StepModel, workload: Workload, rate: Any = None, *, quantile: float = 0.95,
         prefills_per_step: int | None = None, decode_scale: Any = 1.0, prefill_scale: Any = 1.0) -> Load:
    r"""Closed-form latency of ``workload`` (at ``rate``, default its own) on one engine.

    Parameters
    ----------
    step : StepModel
        The configuration's step table (``step_model``).
    workload : Workload
        Request lengths; its ``rate`` unless ``rate`` is given.
    rate : array_like, optional
        Request rates to evaluate. [1/s]
    quantile : float
        Quantile of the ``*_quantile`` fields. [-]
    prefills_per_step : int, optional
        Most prompts one step carries, as in ``simulate``; 1 removes the bulk term.
    decode_scale, prefill_scale : array_like
        Factors on decode step times and on prompt extras (the speed band, ``StepModel.decode_band``);
        they broadcast with ``rate``. [-]

    Returns
    -------
    Load
        Arrays over ``rate``; unstable points have infinite latencies.

    Notes
    -----
    Decode (mean field). A decoding request shares each step with :math:`B` others, so its step costs
    :math:`d = a(1+B) + \kappa (1+B) \bar c` (:math:`\bar c` the mean context). Each prompt adds its
    marginal time :math:`S_m(s; n) = \sum_j [a(n + c_j) - a(n)] + e(s)` to the steps it shares with
    :math:`n` decodes (chunked-prefill interference [2]_: in the memory-bound plateau it rides almost
    free). With :math:`\rho_t = \lambda E[S_m(s; 1+B)]`:

    .. math:: \mathrm{TPOT} = \frac{d}{1 - \rho_t}, \qquad B = \lambda\, E[o - 1]\, \mathrm{TPOT}

    solved for the smallest :math:`B` (Little's law). A request's TPOT varies with the arrivals during
    its life :math:`(o-1)\,\mathrm{TPOT}`, each adding :math:`S_m/(o-1) + d'(B)` (its prefill, one more
    sequence in the batch): :math:`\mathrm{Var} = \lambda\,\mathrm{TPOT}\,(o-1)\,E[(S_m/(o-1) + d')^2]
    /(1-\rho_t)^2`; the quantile is the normal one.

    Time to first token. An arrival waits for the rest of the step in progress (a decode-only step,
    length :math:`d_B = a(B) + \kappa B \bar c`, a share :math:`\pi` of time; or a step carrying a
    prompt, :math:`d_B + S_m`, a share :math:`\rho_m`), then for the prompt work queued ahead. With
    :math:`\tilde S = S_m + (s/C') d_B` (its share of the decodes in the steps it fills,
    :math:`C' = C - B` the prompt budget) and :math:`\tilde\rho = \lambda E[\tilde S]`, the
    Pollaczek-Khinchine form with residuals [4]_:

    .. math:: W = \frac{\pi d_B / 2 + \rho_m E[(d_B + S_m)^2] / (2 E[d_B + S_m])}{1 - \tilde\rho}, \qquad
              \mathrm{TTFT} = (1 + \rho_p) W + E[S_m + \lceil s/C' \rceil d_B] + W_{slot}

    The factor :math:`1 + \rho_p` counts prompts that arrive during the wait and join the same step;
    :math:`W_{slot}` is the Allen-Cunneen M/G/c wait for one of the :math:`c` sequence slots (engine
    limit or KV pool), negligible far below them. The first token is sampled by the step that ends the
    prefill. With no decode phase and one prompt per step this is exactly M/D/1 for a fixed prompt, the
    form DistServe uses for a prefill instance [3]_. The quantile treats the wait as a mixture: zero,
    uniform on :math:`[0, d_B/(1-\tilde\rho)]` (weight :math:`\pi`) or exponential with mean
    :math:`E[(d_B+S_m)^2]/(2E[d_B+S_m](1-\tilde\rho))` (weight :math:`\rho_m`).

    The engine is stable while :math:`\tilde\rho < 1`, :math:`\rho_t < 1` and the batch fits the KV pool
    and the sequence limit (the capacity bound of Nie, Si and Zhou, arXiv:2605.04595). Against
    ``simulate`` these means agree within a few percent and the p95 within about 15 % below
    saturation (``docs/serving.md``).

    Examples
    --------
    >>> s = step_model("llama-3.1-8b", "h100-sxm", context=2560)
    >>> w = Workload(rate=2, prompt_tokens=2048, output_tokens=512)
    >>> point = load(s, w)
    >>> bool(point.stable), point.ttft_mean < point.ttft_quantile
    (True, True)
    """
    if not 0 < quantile < 1:
        raise ValueError(f"quantile must be between 0 and 1, got {quantile!r}")
    lam, fd, fp = np.broadcast_arrays(positive_array(workload.rate if rate is None else rate, "rate"),
                                      positive_array(decode_scale, "decode_scale"),
                                      positive_array(prefill_scale, "prefill_scale"))
    shape = lam.shape
    lam, fd, fp = lam.ravel(), fd.ravel(), fp.ravel()
    lengths = _Lengths.of(workload)
    s, o = lengths.prompt, lengths.output
    solved = _solve_batch(step, lam, lengths, fd, fp)
    batch, context = solved["batch"], solved["context"]
    b = batch[:, None]
    marginal = _marginal_prefill(step, s[None, :], b, fd[:, None], fp[:, None])  # a step holding B decodes
    tagged = _marginal_prefill(step, s[None, :], 1 + b, fd[:, None], fp[:, None])  # ... and one more, ours
    rho_p = lam * marginal.mean(axis=1)
    rho_t = lam * tagged.mean(axis=1)
    decode = fd * (np.interp(1 + batch, step.token_grid, step.token_seconds) + step.kv_seconds * (1 + batch) * context)
    tpot = np.where(rho_t < 1, decode / np.maximum(1 - rho_t, 1e-12), np.inf)
    others = fd * (np.interp(batch, step.token_grid, step.token_seconds) + step.kv_seconds * batch * context)
    budget = np.maximum(step.chunk_tokens - batch, 1.0)[:, None]
    served = marginal + s[None, :] / budget * others[:, None]
    own = marginal + np.ceil(s[None, :] / budget) * others[:, None]
    rho = lam * served.mean(axis=1)
    rho_dec = np.minimum(lam * solved["decode_steps"] * decode / (1 + batch), 1.0)
    busy = np.minimum(rho_p + rho_dec, 1.0)
    stable = solved["found"] & (rho < 1) & (rho_t < 1)
    free = np.maximum(1 - rho, 1e-12)
    # An arrival waits for the rest of the step in progress, a decode-only step (length d_B, a share pi of
    # time) or a step carrying a prompt (d_B + S_m, a share rho_m), then for the prompt work queued ahead.
    mixed = others[:, None] + marginal
    rho_m = np.minimum(lam * mixed.mean(axis=1), busy)
    pi = np.clip(busy - rho_m, 0.0, 1.0)
    spread_m = np.mean(mixed**2, axis=1) / (2 * np.maximum(mixed.mean(axis=1), 1e-300))
    wait = (pi * others / 2 + rho_m * spread_m) / free
    # Prompts that arrive while one waits join its step when the budget has room for them.
    room = np.clip((budget[:, 0] - s.mean()) / s.mean(), 0.0, 1.0) * (prefills_per_step != 1)
    bulk = 1 + np.minimum(rho_p, 1.0) * room
    ttft_mean = np.where(stable, bulk * wait + own.mean(axis=1), np.inf)
    tail = _mixture_quantile(quantile, pi, others / free, rho_m, spread_m / free)
    position = quantile * len(s) - 0.5  # nodes sit at quantiles (i + 1/2) / n
    ttft_q = np.where(stable, bulk * tail + _at_node(own, position), np.inf)
    # Waiting for a sequence slot (engine limit or KV pool): M/G/c with c slots held for a whole request.
    held = own.mean(axis=1) + solved["decode_steps"] * np.where(np.isfinite(tpot), tpot, 0.0)
    variation = np.var(o - 1) / max(float(np.mean(o - 1)) ** 2, 1e-300) if solved["decode_steps"] else 0.0
    slot_mean, slot_q = _slot_wait(np.floor(solved["cap"]), batch, held, variation, quantile)
    ttft_mean = ttft_mean + slot_mean
    ttft_q = ttft_q + slot_q
    decoding = o >= 2
    z = NormalDist().inv_cdf(quantile)
    slope = fd * (np.interp(2 + batch, step.token_grid, step.token_seconds)
                  - np.interp(1 + batch, step.token_grid, step.token_seconds) + step.kv_seconds * context)
    if decoding.any():
        steps = o[decoding] - 1
        effect = tagged[:, :, None] / steps[None, None, :] + slope[:, None, None]
        spread = np.sqrt(lam * tpot * np.mean(steps[None, None, :] * effect**2, axis=(1, 2)))
        spread = spread / np.maximum(1 - rho_t, 1e-12)
    else:
        spread = np.zeros_like(lam)
    tpot_q = np.where(stable & decoding.any(), tpot + z * spread, np.inf)
    tpot = np.where(stable & decoding.any(), tpot, np.inf)
    if not decoding.any():
        tpot, tpot_q = np.full_like(lam, np.nan), np.full_like(lam, np.nan)
    steps_mean = solved["decode_steps"]
    steps_q = float(_at_node(o[None, :] - 1, position)[0])
    with np.errstate(over="ignore", invalid="ignore"):
        e2e_mean = np.where(stable, ttft_mean + steps_mean * np.nan_to_num(tpot, nan=0.0, posinf=np.inf), np.inf)
        e2e_q = np.where(stable, ttft_q + steps_q * np.nan_to_num(tpot_q, nan=0.0, posinf=np.inf), np.inf)
    limit = np.where(stable, "", np.where(solved["found"], "prefill", solved["limit"]))
    bound = np.interp(batch, step.token_grid, step.compute_bound.astype(float)) >= 0.5

    def out(value: np.ndarray) -> Any:
        return scalar_or_array(np.reshape(value, shape))

    return Load(
        rate=out(lam), stable=out(stable), batch=out(batch), tpot_mean=out(tpot), tpot_quantile=out(tpot_q),
        ttft_mean=out(ttft_mean), ttft_quantile=out(ttft_q), e2e_mean=out(e2e_mean), e2e_quantile=out(e2e_q),
        prefill_utilisation=out(np.minimum(rho_p, 1.0)), decode_utilisation=out(rho_dec), busy=out(busy),
        quantile=quantile, limit=out(limit), compute_bound=out(bound),
    )


@lru_cache(maxsize=32)
def _log_factorials(servers: int) -> np.ndarray:
    return np.array([math.lgamma(k + 1) for k in range(servers + 1)])


def _erlang_c(servers: float, load: np.ndarray) -> np.ndarray:
    """Probability that an arrival waits in M/M/c with ``servers`` servers and offered ``load`` (Erlang C).

    Erlang B is the Poisson(load) probability of ``servers`` given at most ``servers`` (one vectorised
    log-space sum); Erlang C follows as :math:`B / (1 - \rho (1 - B))`; 1 at or beyond saturation.
    """
    c = int(servers)
    a = np.maximum(np.asarray(load, dtype=float), 1e-300)
    k = np.arange(c + 1)
    log_terms = k * np.log(a)[..., None] - _log_factorials(c)
    log_terms -= log_terms.max(axis=-1, keepdims=True)
    terms = np.exp(log_terms)
    blocked = terms[..., -1] / terms.sum(axis=-1)
    busy = a / c
    return np.where(busy < 1, np.clip(blocked / (1 - busy * (1 - blocked)), 0.0, 1.0), 1.0)


def _slot_wait(servers: float, load: np.ndarray, held: np.ndarray, variation: float, quantile: float
               ) -> tuple[np.ndarray, np.ndarray]:
    r"""Mean and quantile of the wait for one of ``servers`` sequence slots (Allen-Cunneen M/G/c).

    .. math:: W = \frac{C(c, a)}{c - a}\,\bar T\,\frac{1 + c_v^2}{2}, \qquad
              P(W > t) \approx C\,e^{-t (c - a) / (\bar T (1 + c_v^2)/2)}

    Negligible when the engine runs far below its slots (hundreds for vLLM); it dominates an engine
    that serves one sequence at a time (llama.cpp's server with one slot).
    """
    waiting = np.zeros_like(load)
    # Erlang C is below 1e-9 unless the load comes within a few standard deviations of the slots.
    near = (load > servers - 8 * math.sqrt(servers) - 1) & (servers >= 1)
    if near.any():
        waiting[near] = _erlang_c(servers, load[near])
    scale = held * (1 + variation) / 2 / np.maximum(servers - load, 1e-12)
    mean = waiting * scale
    tail = np.where(waiting > 1 - quantile, scale * np.log(np.maximum(waiting, 1e-300) / (1 - quantile)), 0.0)
    return mean, tail


def _mixture_quantile(q: float, uniform_weight: Any, uniform_width: Any, exponential_weight: Any,
                      exponential_mean: Any, iterations: int = 30) -> np.ndarray:
    r"""Quantile ``q`` of a wait that is 0, uniform on :math:`[0, u]` or exponential with mean :math:`m`.

    Solves :math:`w_u (1 - t/u)^+ + w_e e^{-t/m} = 1 - q`. Beyond :math:`u` only the exponential term is
    left, so :math:`t = m \ln(w_e / (1 - q))` when that is at least :math:`u`; otherwise a vectorised
    bisection on :math:`[0, u]` (the left side falls with :math:`t`). 0 when the weights sum to at most
    :math:`1 - q`.
    """
    wu, u, we, m = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (uniform_weight, uniform_width,
                                                                              exponential_weight, exponential_mean)))
    target = 1 - q
    beyond = m * np.log(np.maximum(we, 1e-300) / target)
    out = np.where(wu + we > target, np.maximum(beyond, 0.0), 0.0)
    inside = (wu + we > target) & (beyond < u)
    if inside.any():
        wu_, u_, we_, m_ = wu[inside], np.maximum(u[inside], 1e-300), we[inside], np.maximum(m[inside], 1e-300)
        lo, hi = np.zeros_like(u_), u_.copy()
        for _ in range(iterations):
            mid = (lo + hi) / 2
            above = wu_ * (1 - mid / u_) + we_ * np.exp(-mid / m_) > target
            lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
        out = out.copy()
        out[inside] = hi
    return out


def _at_node(values: np.ndarray, position: float) -> np.ndarray:
    """Linear interpolation along the last axis at a fractional node index, clipped to the nodes."""
    values = np.atleast_2d(values)
    last = values.shape[-1] - 1
    x = min(max(position, 0.0), float(last))
    lo = math.floor(x)
    hi = min(lo + 1, last)
    return values[..., lo] + (x - lo) * (values[..., hi] - values[..., lo])


# --- discrete-event simulation --------------------------------------------------------------------


@dataclass(frozen=True)
class Simulation:
    """Per-request latencies of a simulated run, and what the engine did. Times in seconds."""

    rate: float
    """Offered request rate. [1/s]"""
    seed: int
    requests: int
    """Requests simulated (warm-up included). [-]"""
    measured: np.ndarray = field(repr=False)
    """Indices of the requests the statistics use (after warm-up, before cool-down)."""
    ttft: np.ndarray = field(repr=False)
    """Time to first token of every request (nan if rejected or unfinished). [s]"""
    tpot: np.ndarray = field(repr=False)
    """Mean time per output token after the first (nan for one-token outputs). [s]"""
    e2e: np.ndarray = field(repr=False)
    """End-to-end latency. [s]"""
    rejected: int
    """Requests longer than the whole KV pool: never served. [-]"""
    events: int
    """Loop iterations (mixed steps and decode segments). [-]"""
    truncated: bool
    """Whether ``max_events`` stopped the run before every request finished."""
    duration: float
    """Simulated time until the last request finished. [s]"""
    busy: float
    """Share of time spent running steps. [-]"""
    prefill_busy: float
    """Share of time spent in steps that carried prompt tokens. [-]"""
    mean_batch: float
    """Time-averaged sequences decoding. [-]"""
    output_tokens_per_second: float
    """Output tokens generated per second of simulated time. [token/s]"""

    def percentile(self, metric: str, q: Any) -> Any:
        """Quantile ``q`` (0-1) of ``"ttft"``, ``"tpot"`` or ``"e2e"`` over measured requests; inf when any
        measured request was never served. [s]"""
        values = getattr(self, metric)[self.measured]
        if np.isnan(values).all():
            return scalar_or_array(np.full(np.shape(q), np.nan))
        if metric != "tpot" and np.isnan(values).any():
            return scalar_or_array(np.full(np.shape(q), np.inf))
        return scalar_or_array(np.nanquantile(values, q))

    def summary(self) -> dict[str, float]:
        """Mean, p50, p95 and p99 of each metric. [s]"""
        out: dict[str, float] = {}
        for metric in ("ttft", "tpot", "e2e"):
            values = getattr(self, metric)[self.measured]
            out[f"{metric}_mean"] = float(np.nanmean(values)) if not np.isnan(values).all() else math.nan
            for q in (50, 95, 99):
                out[f"{metric}_p{q}"] = float(self.percentile(metric, q / 100))
        return out


def _arrivals(workload: Workload, size: int, rng: np.random.Generator, rate: float) -> np.ndarray:
    shape = workload.burstiness
    gaps = rng.gamma(shape, 1.0 / shape, size) / rate
    return np.cumsum(gaps)


def simulate(
    step: StepModel,
    workload: Workload,
    *,
    requests: int = 2000,
    seed: int = 0,
    rate: float | None = None,
    warmup: float = 0.1,
    cooldown: float = 0.05,
    prefills_per_step: int | None = None,
    max_events: int | None = None,
) -> Simulation:
    r"""Seeded discrete-event simulation of a continuous-batching engine under ``workload``.

    Each step decodes one token for every running sequence, then gives its remaining token budget
    (``chunk_tokens`` minus the decodes) to waiting prompts, first come first served, splitting the
    last one into a chunk; a request is admitted when its prompt + output fit in the free KV pool and
    the engine runs fewer than ``max_sequences``. A step lasts ``step_seconds`` of its tokens, its
    decodes' cached tokens and its chunks' prompt extras, so decodes that share a step with a prefill
    chunk see the longer step. Runs of identical decode-only steps between events are advanced in one
    iteration (their times form an arithmetic series), so the loop costs a few iterations per request.

    Parameters
    ----------
    step : StepModel
        The configuration (``step_model``).
    workload : Workload
        Arrival process and length distributions.
    requests : int
        Requests to simulate. [-]
    seed : int
        Seed of ``numpy.random.default_rng``: arrivals and lengths; the same seed gives the same run,
        and the same uniforms scaled to another ``rate`` (common random numbers).
    rate : float, optional
        Request rate; default ``workload.rate``. [1/s]
    warmup, cooldown : float
        Shares of the requests, in arrival order, left out of the statistics at the start and the end. [-]
    prefills_per_step : int, optional
        Most prompts one step may carry; default no limit (1 makes the prefill server a plain FCFS queue).
    max_events : int, optional
        Bound on loop iterations; default ``50 * requests``. The run stops there and is ``truncated``.

    Returns
    -------
    Simulation

    Examples
    --------
    >>> s = step_model("llama-3.1-8b", "h100-sxm", context=2560)
    >>> run = simulate(s, Workload(rate=4, prompt_tokens=2048, output_tokens=256), requests=500, seed=1)
    >>> run.truncated, run.rejected
    (False, 0)
    >>> run.percentile("ttft", 0.5) < run.percentile("ttft", 0.99)
    True
    """
    if requests < 1:
        raise ValueError(f"requests must be >= 1, got {requests!r}")
    if not (0 <= warmup < 1 and 0 <= cooldown < 1 and warmup + cooldown < 1):
        raise ValueError(f"warmup and cooldown must be shares in [0, 1) summing below 1, got {warmup}, {cooldown}")
    if prefills_per_step is not None and prefills_per_step < 1:
        raise ValueError(f"prefills_per_step must be >= 1, got {prefills_per_step!r}")
    offered = float(positive_array(workload.rate if rate is None else rate, "rate"))
    rng = np.random.default_rng(seed)
    arrivals = _arrivals(workload, requests, rng, offered)
    prompts = sample_lengths(workload.prompt_tokens, workload.prompt_distribution, workload.prompt_cv, requests, rng)
    outputs = sample_lengths(workload.output_tokens, workload.output_distribution, workload.output_cv, requests, rng)
    limit = 50 * requests if max_events is None else int(max_events)
    if prefills_per_step == 1 and int(outputs.max()) == 1 and int(prompts.max()) <= step.chunk_tokens:
        result = _single_server(step, arrivals, prompts)
    else:
        result = _events(step, arrivals, prompts, outputs, prefills_per_step or requests, limit)
    first, finish, stats = result
    lo, hi = int(warmup * requests), max(math.ceil((1 - cooldown) * requests), int(warmup * requests) + 1)
    measured = np.arange(lo, min(hi, requests))
    ttft = first - arrivals
    e2e = finish - arrivals
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(outputs > 1, (finish - first) / (outputs - 1), np.nan)
    return Simulation(rate=offered, seed=seed, requests=requests, measured=measured, ttft=ttft, tpot=tpot, e2e=e2e,
                      **stats)


def _single_server(step: StepModel, arrivals: np.ndarray, prompts: np.ndarray) -> tuple[Any, Any, dict[str, Any]]:
    r"""Vectorised FCFS single server (one prompt per step, one-token outputs): Lindley's recursion.

    :math:`D_n = \max(D_{n-1}, A_n) + S_n` unrolls to :math:`D_n = C_n + \max_{k \le n}(A_k - C_{k-1})`
    with :math:`C` the cumulative service, one ``maximum.accumulate``.
    """
    service = np.interp(prompts, step.token_grid, step.token_seconds) + _prompt_extra(step, prompts)
    total = np.cumsum(service)
    departures = total + np.maximum.accumulate(arrivals - (total - service))
    duration = float(departures[-1])
    busy = float(total[-1]) / duration
    stats = dict(rejected=0, events=len(arrivals), truncated=False, duration=duration, busy=busy, prefill_busy=busy,
                 mean_batch=0.0, output_tokens_per_second=len(arrivals) / duration)
    return departures, departures.copy(), stats


def _events(
    step: StepModel,
    arrivals: np.ndarray,
    prompts: np.ndarray,
    outputs: np.ndarray,
    per_step: int,
    max_events: int,
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """The event loop. Plain Python floats and lists: numpy scalars would cost more than the work."""
    n = len(arrivals)
    top = int(step.token_grid[-1])
    a = np.interp(np.arange(top + 1), step.token_grid, step.token_seconds).tolist()
    longest = int(prompts.max())
    extra = _prompt_extra(step, np.arange(longest + 1)).tolist()
    kappa, chunk, max_seqs, capacity = step.kv_seconds, step.chunk_tokens, step.max_sequences, step.kv_capacity_tokens
    arr, s_len, o_len = arrivals.tolist(), prompts.tolist(), outputs.tolist()
    first, finish = [math.nan] * n, [math.nan] * n
    need = [s_len[i] + o_len[i] for i in range(n)]
    waiting: deque[int] = deque()
    heap: list[tuple[int, int]] = []
    t = 0.0
    nxt = 0
    step_index = 0
    batch = 0  # sequences decoding
    offset = 0  # sum over decoding sequences of (prompt - step of first token): cached tokens = offset + batch * step
    reserved = 0.0
    progress = 0  # prompt tokens already prefilled of waiting[0]
    head_admitted = False
    rejected = events = 0
    busy = prefill_busy = batch_time = 0.0
    done = 0

    def finish_through(last: int, now: float) -> None:
        nonlocal batch, offset, reserved, done
        while heap and heap[0][0] <= last:
            end, i = heapq.heappop(heap)
            finish[i] = now
            batch -= 1
            offset -= s_len[i] - (end - o_len[i] + 1)
            reserved -= need[i]
            done += 1

    while done + rejected < n and events < max_events:
        events += 1
        while nxt < n and arr[nxt] <= t:
            if need[nxt] > capacity:
                rejected += 1
            else:
                waiting.append(nxt)
            nxt += 1
        schedulable = False
        if waiting and chunk - batch > 0:
            head = waiting[0]
            schedulable = head_admitted or (reserved + need[head] <= capacity and batch < max_seqs)
        if schedulable:
            budget, tokens, added, taken = chunk - batch, 0, 0.0, 0
            completed: list[int] = []
            while waiting and tokens < budget and taken < per_step:
                i = waiting[0]
                if not head_admitted:
                    if reserved + need[i] > capacity or batch + len(completed) >= max_seqs:
                        break
                    reserved += need[i]
                    head_admitted = True
                take = min(budget - tokens, s_len[i] - progress)
                added += extra[progress + take] - extra[progress]
                tokens += take
                taken += 1
                if progress + take == s_len[i]:
                    completed.append(waiting.popleft())
                    progress, head_admitted = 0, False
                else:
                    progress += take
            dt = a[batch + tokens] + kappa * (offset + batch * step_index) + added
            dt = max(dt, a[1])
            t += dt
            busy += dt
            prefill_busy += dt
            batch_time += batch * dt
            finish_through(step_index, t)
            for i in completed:
                first[i] = t
                if o_len[i] == 1:
                    finish[i] = t
                    reserved -= need[i]
                    done += 1
                else:
                    heapq.heappush(heap, (step_index + o_len[i] - 1, i))
                    batch += 1
                    offset += s_len[i] - step_index
            step_index += 1
            continue
        if batch == 0:
            if nxt >= n:
                break  # only requests the pool can never hold are left
            t = max(t, arr[nxt])
            continue
        # A run of identical decode-only steps until the next finish or the step after the next arrival.
        alpha, kv0 = a[batch], offset + batch * step_index
        k = heap[0][0] - step_index + 1
        can_admit = not waiting and nxt < n and chunk - batch > 0
        if can_admit:
            gap = arr[nxt] - t
            c2, c1 = kappa * batch / 2, alpha + kappa * kv0 - kappa * batch / 2
            needed = gap / c1 if c2 <= 0 else (-c1 + math.sqrt(c1 * c1 + 4 * c2 * gap)) / (2 * c2)
            k = min(k, max(1, math.ceil(needed - 1e-9)))
        dt = k * alpha + kappa * (k * kv0 + batch * k * (k - 1) / 2)
        t += dt
        busy += dt
        batch_time += batch * dt
        step_index += k
        finish_through(step_index - 1, t)
    duration = max(t, 1e-12)
    generated = float(np.sum(outputs[~np.isnan(np.asarray(finish))]))
    stats = dict(rejected=rejected, events=events, truncated=done + rejected < n, duration=duration,
                 busy=busy / duration, prefill_busy=prefill_busy / duration, mean_batch=batch_time / duration,
                 output_tokens_per_second=generated / duration)
    return np.asarray(first), np.asarray(finish), stats


# --- the largest rate that meets an SLO -----------------------------------------------------------


@dataclass(frozen=True)
class MaxRate:
    """The largest request rate one engine serves within an SLO."""

    rate: float
    """Largest rate meeting every target; 0 when even a near-idle engine misses one. [1/s]"""
    binding: str
    """What stops a higher rate: ``ttft``, ``tpot``, ``e2e`` (a target), or ``prefill``, ``kv-cache``,
    ``max-sequences`` (the engine saturates before any target binds)."""
    method: str
    """``closed-form`` or ``simulation``."""
    evaluations: int
    """Latency evaluations the search used. [-]"""
    compute_bound: bool
    """Whether decode steps at that rate are compute-bound (else bandwidth-bound)."""
    batch: float
    """Mean sequences decoding at that rate. [-]"""


def _ratios(slo: SLO, ttft: Any, tpot: Any, e2e: Any) -> dict[str, Any]:
    out = {}
    for name, target, value in (("ttft", slo.ttft_p95, ttft), ("tpot", slo.tpot_p95, tpot), ("e2e", slo.e2e_p95, e2e)):
        if target is not None:
            out[name] = np.where(np.isnan(value), 0.0, np.asarray(value, dtype=float) / target)
    return out


def _closed_form_excess(step: StepModel, workload: Workload, slo: SLO, rate: Any, **scales: Any
                        ) -> tuple[np.ndarray, Load]:
    point = load(step, workload, rate, quantile=slo.quantile, **scales)
    ratios = _ratios(slo, point.ttft_quantile, point.tpot_quantile, point.e2e_quantile)
    worst = np.max(np.stack([np.broadcast_to(r, np.shape(point.rate)) for r in ratios.values()]), axis=0)
    return np.where(np.asarray(point.stable), worst - 1.0, np.inf), point


def _rate_ceiling(step: StepModel, workload: Workload) -> float:
    """A rate no engine state can sustain: the prefill or decode capacity with no waiting at all."""
    lengths = _Lengths.of(workload)
    prefill = float(np.mean(_marginal_prefill(step, lengths.prompt, 0.0)))
    decode_steps = float(np.mean(lengths.output - 1))
    cap = _batch_limit(step, float(lengths.prompt.mean() + lengths.output.mean()))
    per_token = (np.interp(max(cap, 1.0), step.token_grid, step.token_seconds) / max(cap, 1.0)
                 + step.kv_seconds * float(lengths.prompt.mean()))
    bounds = [1.0 / prefill] if prefill > 0 else []
    if decode_steps > 0:
        bounds.append(1.0 / (decode_steps * per_token))
    return 1.5 * min(bounds) if bounds else 1e6


def _binding_of(slo: SLO, point: Load, index: int) -> str:
    """The constraint that fails first at ``point.rate[index]``."""
    if not bool(np.ravel(point.stable)[index]):
        return str(np.ravel(point.limit)[index])
    ratios = _ratios(slo, *(np.ravel(v)[index] for v in (point.ttft_quantile, point.tpot_quantile,
                                                         point.e2e_quantile)))
    return max(ratios, key=lambda name: float(ratios[name]))


def _binding(step: StepModel, workload: Workload, slo: SLO, rate: float, method: str, **sim: Any) -> tuple[str, Any]:
    point = load(step, workload, rate, quantile=slo.quantile)
    if method == "closed-form":
        return _binding_of(slo, point, 0), point
    run = simulate(step, workload, rate=rate, **sim)
    q = slo.quantile
    ratios = _ratios(slo, run.percentile("ttft", q), run.percentile("tpot", q), run.percentile("e2e", q))
    return max(ratios, key=lambda name: float(ratios[name])), point


def _crossing(grid: np.ndarray, values: np.ndarray) -> tuple[int, float]:
    """Index of the first positive value and the linear interpolation of the zero before it."""
    over = values > 0
    if not over.any():
        return len(grid) - 1, float(grid[-1])
    i = max(int(np.argmax(over)), 1)
    a, b, ea, eb = float(grid[i - 1]), float(grid[i]), float(values[i - 1]), float(values[i])
    return i, (a + (b - a) * (-ea) / (eb - ea) if eb > ea and ea <= 0 and eb < 1e6 else a)


def _max_rates_coarse(step: StepModel, workload: Workload, slo: SLO, scales: Any, points: int = 48
                      ) -> list[MaxRate]:
    """Largest rates for several speed scalings at once: one ``load`` over scalings x a rate grid, and linear
    interpolation of the first crossing (about 1 % from the exact root; a sweep's fast path)."""
    factors = np.asarray(scales, dtype=float).reshape(-1, 2)
    top = _rate_ceiling(step, workload) / float(factors.min())
    grid = np.geomspace(top * 1e-4, top, points)
    excess, point = _closed_form_excess(step, workload, slo, grid[None, :], decode_scale=factors[:, :1],
                                        prefill_scale=factors[:, 1:])
    excess = np.minimum(np.asarray(excess, dtype=float), 1e6).reshape(len(factors), points)
    out = []
    batches = np.reshape(point.batch, excess.shape)
    for row, values in enumerate(excess):
        i, rate = _crossing(grid, values)
        here = row * points + (0 if values[0] > 0 else i)
        batch = float(np.interp(rate, grid[max(i - 1, 0):i + 1], batches[row, max(i - 1, 0):i + 1]))
        out.append(MaxRate(0.0 if values[0] > 0 else rate, _binding_of(slo, point, here), "closed-form", points,
                           bool(np.ravel(point.compute_bound)[here]), batch))
    return out


def _max_rate_closed_form(step: StepModel, workload: Workload, slo: SLO, *, solver: str = "brentq",
                          **_: Any) -> MaxRate:
    if solver not in ("brentq", "grid", "coarse"):
        raise ValueError(f"solver must be 'brentq', 'grid' or 'coarse', got {solver!r}")
    coarse = _max_rates_coarse(step, workload, slo, [(1.0, 1.0)])[0]
    if solver == "coarse" or coarse.rate == 0:
        return coarse
    top = _rate_ceiling(step, workload)
    grid = np.geomspace(top * 1e-4, top, 48)

    def evaluate(rate: Any) -> tuple[np.ndarray, Load]:
        excess, point = _closed_form_excess(step, workload, slo, rate)
        return np.minimum(np.asarray(excess, dtype=float), 1e6), point

    i = int(np.searchsorted(grid, coarse.rate))  # the coarse rate lies in the bracket [grid[i-1], grid[i])
    lo, hi = float(grid[max(i - 1, 0)]), float(grid[min(i + 1, len(grid) - 1)])
    evaluations = coarse.evaluations
    if solver == "brentq":
        from scipy.optimize import brentq

        if float(evaluate(np.array([hi]))[0][0]) <= 0:
            return coarse
        rate, result = brentq(lambda x: float(evaluate(np.array([x]))[0][0]), lo, hi, xtol=lo * 1e-5, rtol=1e-6,
                              full_output=True)
        evaluations += result.function_calls + 1
        name, point = _binding(step, workload, slo, rate * 1.001, "closed-form")
        here = 0
    else:
        fine = np.geomspace(lo, hi, 24)
        values, point = evaluate(fine)
        evaluations += len(fine)
        here, rate = _crossing(fine, values)
        name = _binding_of(slo, point, here)
    return MaxRate(rate, name, "closed-form", evaluations, bool(np.ravel(point.compute_bound)[here]),
                   float(np.ravel(point.batch)[here]))


def _max_rate_simulation(
    step: StepModel, workload: Workload, slo: SLO, *, requests: int = 1500, seed: int = 0, tolerance: float = 0.02,
    **_: Any,
) -> MaxRate:
    """Bisection on the simulated quantiles, bracketed from the closed form (common random numbers). A rate the
    closed form finds unstable fails outright: a finite run cannot show a queue that grows without bound."""
    guess = _max_rate_closed_form(step, workload, slo, solver="coarse")
    q = slo.quantile
    evaluations = 0
    failed: dict[str, Any] = {}

    def excess(rate: float) -> float:
        nonlocal evaluations, failed
        evaluations += 1
        point = load(step, workload, rate, quantile=q)
        if not point.stable:  # a finite run of an overloaded engine can still finish inside loose targets
            failed = {"binding": str(point.limit), "batch": float(point.batch)}
            return math.inf
        run = simulate(step, workload, rate=rate, requests=requests, seed=seed)
        ratios = _ratios(slo, run.percentile("ttft", q), run.percentile("tpot", q), run.percentile("e2e", q))
        worst = max(ratios, key=lambda name: float(ratios[name]))
        if float(ratios[worst]) > 1:
            failed = {"binding": worst, "batch": run.mean_batch}
        return float(ratios[worst]) - 1.0

    start = guess.rate if guess.rate > 0 else _rate_ceiling(step, workload) * 1e-3
    lo = hi = start
    if excess(start) <= 0:
        hi = start * 1.1
        while excess(hi) <= 0 and hi < 1e3 * start:
            lo, hi = hi, hi * 1.25
    else:
        lo = start / 1.1
        while excess(lo) > 0 and lo > start * 1e-4:
            hi, lo = lo, lo / 1.25
        if lo <= start * 1e-4:
            return MaxRate(0.0, failed.get("binding", guess.binding), "simulation", evaluations, guess.compute_bound,
                           0.0)
    while hi - lo > tolerance * lo:
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if excess(mid) <= 0 else (lo, mid)
    point = load(step, workload, lo, quantile=q)
    return MaxRate(lo, failed.get("binding", guess.binding), "simulation", evaluations, bool(point.compute_bound),
                   float(point.batch))


#: Ways to find the largest rate within an SLO, by name.
MAX_RATE_METHODS: dict[str, Callable[..., MaxRate]] = {
    "closed-form": _max_rate_closed_form,
    "simulation": _max_rate_simulation,
}


def max_rate_methods() -> tuple[str, ...]:
    """Names accepted by ``max_rate(method=...)``."""
    return tuple(MAX_RATE_METHODS)


def max_rate(step: StepModel, workload: Workload, slo: SLO, *, method: str = "closed-form", **options: Any) -> MaxRate:
    r"""The largest request rate one engine serves with every ``slo`` target met.

    Latency quantiles rise with the rate, so the answer is the first crossing of
    :math:`g(\lambda) = \max_m q_m(\lambda)/T_m - 1` from below. ``closed-form`` evaluates ``load`` on a
    geometric grid of 40 rates below the engine's capacity, then refines the first crossing with
    ``scipy.optimize.brentq``. ``simulation`` starts there and bisects on ``simulate`` quantiles
    (``requests``, ``seed``, ``tolerance`` as options), with the same random numbers at every rate.

    Parameters
    ----------
    step : StepModel
    workload : Workload
        Request shape (its ``rate`` is ignored).
    slo : SLO
    method : str
        ``"closed-form"`` or ``"simulation"`` (``max_rate_methods()``).

    Returns
    -------
    MaxRate

    Examples
    --------
    >>> s = step_model("llama-3.1-8b", "h100-sxm", context=2560)
    >>> w = Workload(rate=1, prompt_tokens=2048, output_tokens=512)
    >>> best = max_rate(s, w, SLO(ttft_p95=0.5, tpot_p95=0.05))
    >>> best.rate > 1, best.binding in ("ttft", "tpot")
    (True, True)
    """
    if method not in MAX_RATE_METHODS:
        raise ValueError(f"method must be one of {', '.join(MAX_RATE_METHODS)}, got {method!r}")
    return MAX_RATE_METHODS[method](step, workload, slo, **options)
