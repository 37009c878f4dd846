r"""The three serving questions of one deployment in one call: ``throughput``.

``throughput(model, gpu, workload=..., slo=...)`` answers, for one replica and for the whole system
(replicas x GPUs), each as the expected value, the datasheet ceiling and the p10-p90 band of the speed fit:

* **offline**: output tokens per second of the saturated engine, as many sequences as the engine's caps
  allow (``max_num_seqs``, the KV pool, and the step's token budget ``max_num_batched_tokens`` shared by
  the decodes and the chunked prefills of the prompts that replace finished sequences);
* **capacity**: the largest request rate whose TTFT/TPOT/E2E quantiles meet an ``SLO`` (``max_rate``);
* **latency**: mean, p50, p95 and p99 of TTFT and TPOT at the workload's request rate (``load``, or
  ``simulate`` with ``method="simulation"``).

The engine's caps come from its profile (``engines.EngineProfile.max_sequences`` and ``batched_tokens``)
unless ``max_sequences`` or ``batched_tokens`` override them. The layout names one replica's split; a
data-parallel degree (``tp2xdp4``) is the number of replicas, each an engine of its own that receives
``1/replicas`` of the requests (a Poisson stream split at random stays Poisson).

Composition only: the step tables (``step_table``, expected and at the ceiling), the closed loop
(``curve``), the closed forms (``queueing``), the simulation and the capacity search (``capacity``);
the token budget of a saturated step is ``step_table.budget_batch``.

Deliberate omissions: as ``gpusizer.serving`` (preemption, prefix caching, speculative decoding,
disaggregated prefill); the offline state uses the mean lengths (a length distribution enters the
capacity and the latencies only); the ceiling and the band are always closed forms.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from gpusizer import catalog, checks, engines, parallel, unpack
from gpusizer.estimator import resolve_target
from gpusizer.serving.capacity import MAX_RATE_METHODS, max_rate, max_rates_coarse
from gpusizer.serving.curve import concurrency_curve
from gpusizer.serving.queueing import load
from gpusizer.serving.simulation import simulate
from gpusizer.serving.step_table import StepModel, batch_limit, budget_batch, cached_prompt_tokens, step_model
from gpusizer.serving.workload import SLO, Lengths, Workload

__all__ = ["Capacity", "Latency", "Offline", "Quantiles", "Throughput", "throughput"]

#: Quantiles every latency record reports. [-]
QUANTILES = (0.5, 0.95, 0.99)


@dataclass(frozen=True)
class Offline:
    """The saturated engine: every replica as full as its caps allow. System figures unless named."""

    batch: float
    """Sequences running together in one replica. [-]"""
    binding: str
    """What caps the batch: ``max-sequences``, ``kv-cache`` or ``token-budget``."""
    tpot_seconds: float
    """Time per output token at that batch, prefill interference included, expected. [s]"""
    requests_per_second: float
    """Requests the system completes, expected. [1/s]"""
    tokens_per_second: float
    """Output tokens per second of the system, expected. [token/s]"""
    tokens_per_second_ceiling: float
    """The same at the datasheet roofline: never exceeded. [token/s]"""
    tokens_per_second_band: tuple[float, float]
    """``tokens_per_second`` at the slow (p10) and fast (p90) ends of the speed band. [token/s]"""
    tokens_per_second_per_gpu: float
    """``tokens_per_second`` over all GPUs of the system. [token/s]"""
    tokens_per_second_per_gpu_ceiling: float
    """``tokens_per_second_ceiling`` over all GPUs of the system. [token/s]"""


@dataclass(frozen=True)
class Capacity:
    """The largest request rate within an SLO. System figures unless named."""

    requests_per_second: float
    """Largest rate meeting every target, expected; 0 when even a near-idle engine misses one. [1/s]"""
    requests_per_second_ceiling: float
    """The same with the datasheet-roofline step times. [1/s]"""
    requests_per_second_band: tuple[float, float]
    """At the slow (p10) and fast (p90) ends of the speed band. [1/s]"""
    tokens_per_second: float
    """Output tokens per second at that rate (rate x mean output). [token/s]"""
    tokens_per_second_ceiling: float
    """Output tokens per second at the ceiling's rate. [token/s]"""
    tokens_per_second_band: tuple[float, float]
    """Output tokens per second at the ends of the band. [token/s]"""
    tokens_per_second_per_gpu: float
    """``tokens_per_second`` over all GPUs of the system. [token/s]"""
    binding: str
    """What stops a higher rate (``MaxRate.binding``): ``ttft``, ``tpot``, ``e2e``, ``prefill``,
    ``kv-cache`` or ``max-sequences``."""
    batch: float
    """Mean sequences decoding in one replica at that rate. [-]"""
    method: str
    """``closed-form`` or ``simulation`` (the expected value; ceiling and band are closed forms)."""


@dataclass(frozen=True)
class Quantiles:
    """Mean and quantiles of one latency over requests. [s]"""

    mean: float
    p50: float
    p95: float
    p99: float


@dataclass(frozen=True)
class Latency:
    """TTFT and TPOT at a request rate; infinite where the engine cannot keep up (``stable`` False)."""

    rate: float
    """Request rate of the whole system. [1/s]"""
    rate_per_replica: float
    """Request rate each replica receives. [1/s]"""
    stable: bool
    """Whether the queues stay finite at that rate (closed form)."""
    limit: str
    """Why an unstable rate is unstable (``prefill``, ``kv-cache``, ``max-sequences``); ``""`` when stable."""
    batch: float
    """Mean sequences decoding in one replica (Little's law). [-]"""
    load: float
    """Request rate over the offline (saturated) rate, :math:`\\lambda o / X_{off}`: near 1 the latencies grow as
    :math:`1/(1 - \\rho)`, so a few percent of error in the engine's speed moves them by tens of percent
    (``docs/throughput.md#step-time-against-the-batch-and-latency-at-a-rate``). [-]"""
    ttft: Quantiles
    """Time to first token, queueing included, expected. [s]"""
    tpot: Quantiles
    """Time per output token (a request's mean after its first token), expected. [s]"""
    ttft_ceiling: Quantiles
    """TTFT with the datasheet-roofline step times: a lower bound. [s]"""
    tpot_ceiling: Quantiles
    """TPOT with the datasheet-roofline step times: a lower bound. [s]"""
    ttft_band: tuple[Quantiles, Quantiles]
    """TTFT at the fast (p90 of speed) and slow (p10) ends of the speed band. [s]"""
    tpot_band: tuple[Quantiles, Quantiles]
    """TPOT at the fast and slow ends of the speed band. [s]"""
    method: str
    """``closed-form`` or ``simulation`` (the expected values; ceiling and band are closed forms)."""


@dataclass(frozen=True)
class Throughput:
    """What one deployment serves: offline, within an SLO, and the latencies at a rate."""

    model: str
    gpu: str
    engine: str
    weights: str
    kv_cache: str
    layout: str
    """One replica's layout (``tp2``; ``tp1`` on one GPU)."""
    gpus_per_replica: int
    replicas: int
    gpus: int
    """All GPUs of the system, ``gpus_per_replica * replicas``. [-]"""
    workload: Workload
    slo: SLO | None
    max_sequences: int
    """Sequence limit of one replica (``max_num_seqs``). [-]"""
    batched_tokens: int
    """Token budget of one step (``max_num_batched_tokens``). [token]"""
    kv_capacity_tokens: float
    """Tokens one replica's KV pool holds. [token]"""
    max_concurrency: float
    """Most sequences of the workload's mean length one replica holds (``batch_limit``). [-]"""
    offline: Offline
    capacity: Capacity | None
    """``None`` without an SLO."""
    latency: Latency | None
    """``None`` when ``latencies=False``."""

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict (records as dicts, tuples as lists); infinities stay floats."""
        data: dict[str, Any] = checks.plain(self)
        return data


def _profile(engine: Any, max_sequences: int | None, batched_tokens: int | None) -> engines.EngineProfile:
    """The engine profile with its caps replaced where given."""
    profile = engines.engine(engine)
    update: dict[str, int] = {}
    if max_sequences is not None:
        update["max_sequences"] = checks.count(max_sequences, "max_sequences", maximum=checks.MAX_TOKENS)
    if batched_tokens is not None:
        update["batched_tokens"] = checks.count(batched_tokens, "batched_tokens", maximum=checks.MAX_TOKENS)
    return profile.model_copy(update=update) if update else profile


def _cap(step: StepModel, tokens_per_sequence: float) -> str:
    """Which limit of ``batch_limit`` binds."""
    kv = step.kv_capacity_tokens // max(tokens_per_sequence, 1)
    if step.max_sequences <= min(kv, step.chunk_tokens - 1):
        return "max-sequences"
    return "kv-cache" if kv <= step.chunk_tokens - 1 else "token-budget"


def _offline(step: StepModel, top: StepModel, workload: Workload, replicas: int, gpus: int) -> Offline:
    """The saturated batch of one replica and the system's output rate at it."""
    s, o = float(workload.prompt_tokens), float(workload.output_tokens)
    computed = s - float(cached_prompt_tokens(step, s))  # the prompt tokens a step computes (prefix cache hits aside)
    limit, budget = batch_limit(step, s + o), float(budget_batch(step.chunk_tokens, computed, o))
    batch = min(limit, budget)
    binding = "token-budget" if budget < limit else _cap(step, s + o)

    def rate(table: StepModel) -> tuple[float, float]:
        if batch <= 0:
            return 0.0, math.inf
        c = concurrency_curve(table, [batch], prompt_tokens=s, output_tokens=o)
        return replicas * float(c.aggregate_tokens_per_second[0]), float(c.tpot_seconds[0])

    expected, tpot = rate(step)
    ceiling = rate(top)[0]
    fast, slow = step.bands()
    return Offline(batch=batch, binding=binding, tpot_seconds=tpot, requests_per_second=expected / o,
                   tokens_per_second=expected, tokens_per_second_ceiling=ceiling,
                   tokens_per_second_band=(rate(slow)[0], rate(fast)[0]), tokens_per_second_per_gpu=expected / gpus,
                   tokens_per_second_per_gpu_ceiling=ceiling / gpus)


def _capacity(step: StepModel, top: StepModel, workload: Workload, slo: SLO, replicas: int, gpus: int,
              method: str, options: dict[str, Any]) -> Capacity:
    """``max_rate`` of one replica, its ceiling and band, scaled to the system."""
    best = max_rate(step, workload, slo, method=method, **options)
    ceiling = max_rate(top, workload, slo).rate
    slow, fast = max_rates_coarse(step, workload, slo, [(step.decode_band[1], step.prefill_band[1]),
                                                       (step.decode_band[0], step.prefill_band[0])])
    band = (min(slow.rate, best.rate) * replicas, max(fast.rate, best.rate) * replicas)
    o = float(workload.output_tokens)
    rate = best.rate * replicas
    return Capacity(requests_per_second=rate, requests_per_second_ceiling=ceiling * replicas,
                    requests_per_second_band=band, tokens_per_second=rate * o,
                    tokens_per_second_ceiling=ceiling * replicas * o, tokens_per_second_band=(band[0] * o, band[1] * o),
                    tokens_per_second_per_gpu=rate * o / gpus, binding=best.binding, batch=best.batch,
                    method=best.method)


def _closed_form(table: StepModel, workload: Workload, rate: float) -> tuple[Quantiles, Quantiles]:
    """TTFT and TPOT mean and quantiles from ``load``."""
    points = [load(table, workload, rate, quantile=q) for q in QUANTILES]
    first = points[0]
    return (Quantiles(float(first.ttft_mean), *(float(p.ttft_quantile) for p in points)),
            Quantiles(float(first.tpot_mean), *(float(p.tpot_quantile) for p in points)))


def _simulated(table: StepModel, workload: Workload, rate: float, options: dict[str, Any]
               ) -> tuple[Quantiles, Quantiles]:
    """TTFT and TPOT mean and quantiles of one seeded ``simulate`` run."""
    run = simulate(table, workload, rate=rate, **options).summary()
    return (Quantiles(run["ttft_mean"], run["ttft_p50"], run["ttft_p95"], run["ttft_p99"]),
            Quantiles(run["tpot_mean"], run["tpot_p50"], run["tpot_p95"], run["tpot_p99"]))


def _latency(step: StepModel, top: StepModel, workload: Workload, replicas: int, method: str,
             options: dict[str, Any], offline: Offline) -> Latency:
    """Latency quantiles at the workload's rate, each replica receiving its share; ``offline`` gives the load."""
    per = workload.rate / replicas
    point = load(step, workload, per, quantile=0.5)
    stable = bool(point.stable)
    if method == "simulation" and stable:
        ttft, tpot = _simulated(step, workload, per, options)
    else:
        ttft, tpot = _closed_form(step, workload, per)
    fast, slow = step.bands()
    bands = [_closed_form(table, workload, per) for table in (fast, slow)]
    ttft_top, tpot_top = _closed_form(top, workload, per)
    return Latency(rate=float(workload.rate), rate_per_replica=per, stable=stable, limit=str(point.limit),
                   batch=float(point.batch), load=_load(workload.rate, offline.requests_per_second), ttft=ttft,
                   tpot=tpot, ttft_ceiling=ttft_top, tpot_ceiling=tpot_top,
                   ttft_band=(bands[0][0], bands[1][0]), tpot_band=(bands[0][1], bands[1][1]),
                   method=method if stable else "closed-form")


def _load(rate: float, saturated: float) -> float:
    r"""Request rate over the saturated one, :math:`\rho = \lambda / \lambda_{off}` (inf when nothing is served). [-]

    Examples
    --------
    >>> _load(9.0, 10.0)
    0.9
    """
    return rate / saturated if saturated > 0 else math.inf


def _replica(plan: parallel.Layout) -> parallel.Layout:
    """One replica of a layout: the layout without its data-parallel degree."""
    return replace(plan, dp=1)


def throughput(
    model: str | catalog.Model,
    gpu: str | catalog.GPU | catalog.System,
    *,
    workload: Workload,
    slo: SLO | None = None,
    gpus: int | None = None,
    layout: str | parallel.Layout = "tp",
    engine: str | engines.EngineProfile = "vllm",
    weights: str | None = None,
    kv_cache: str | None = None,
    max_sequences: int | None = None,
    batched_tokens: int | None = None,
    latencies: bool = True,
    method: str = "closed-form",
    requests: int = 2000,
    seed: int = 0,
) -> Throughput:
    r"""Offline throughput, the largest rate within ``slo`` and the latencies at ``workload.rate``.

    Parameters
    ----------
    model, gpu : str or record
        Catalogue ids or records, as for ``estimate`` (a system id such as ``hgx-h200-8x`` gives its GPUs).
    workload : Workload
        Mean lengths and their distributions; its ``rate`` is the system's request rate of ``latency``.
    slo : SLO, optional
        Latency targets of ``capacity``; without one ``capacity`` is ``None``.
    gpus : int, optional
        All GPUs of the system; default 1, the system's, or the count the layout names.
    layout : str or parallel.Layout
        How the GPUs share the model (``gpusizer.parallel``): ``tp`` uses them all for one replica;
        ``tp2xdp4`` is four replicas of ``tp2``.
    engine : str or EngineProfile
        Engine profile: its memory rules and caps.
    weights, kv_cache : str, optional
        Precisions, as for ``estimate``.
    max_sequences, batched_tokens : int, optional
        Replace the profile's ``max_sequences`` (``max_num_seqs``) and ``batched_tokens``
        (``max_num_batched_tokens``); the activation peak and the KV pool follow them. [-], [token]
    latencies : bool
        Whether to compute ``latency`` at ``workload.rate``.
    method : str
        ``closed-form`` or ``simulation`` (``max_rate_methods()``) for the expected capacity and latencies.
    requests, seed : int
        Size and seed of each simulated run (``method="simulation"``).

    Returns
    -------
    Throughput

    Notes
    -----
    Offline, one replica holds :math:`B = \min(N_{seq}, \lfloor K/(s+o) \rfloor, C - 1, C o/(o+s))`
    sequences (the last, ``budget_batch``: each step also prefills the prompts replacing the sequences
    that finished). Each step yields one token per sequence, so with the closed-loop step time of
    ``concurrency_curve``

    .. math:: X = r \frac{B}{\mathrm{TPOT}(B)}, \qquad
              \mathrm{TPOT}(B) = a(B) + \kappa B \bar c + \frac{B}{o} S_m(s; B)

    for :math:`r` replicas; by Little's law the system completes :math:`X/o` requests per second.
    The capacity is :math:`r\,\lambda^*` with :math:`\lambda^*` one replica's ``max_rate``, and its
    output rate :math:`r \lambda^* o`; ``latency`` loads each replica with :math:`\lambda / r`.

    Examples
    --------
    >>> w = Workload(rate=8, prompt_tokens=1024, output_tokens=256)
    >>> t = throughput("llama-3.1-8b", "h100-sxm", workload=w, slo=SLO(ttft_p95=0.5, tpot_p95=0.05))
    >>> t.offline.tokens_per_second < t.offline.tokens_per_second_ceiling
    True
    >>> t.capacity.tokens_per_second < t.offline.tokens_per_second
    True
    >>> t.latency.ttft.p50 < t.latency.ttft.p99
    True
    """
    record = catalog.model(model)
    checks.instance(workload, "workload", Workload)
    if slo is not None:
        checks.instance(slo, "slo", SLO)
    checks.one_of(method, "method", tuple(MAX_RATE_METHODS))
    options = {"requests": checks.count(requests, "requests", maximum=10**7), "seed": checks.count(seed, "seed",
                                                                                                   minimum=0)}
    profile = _profile(engine, max_sequences, batched_tokens)
    device, count = resolve_target(gpu, gpus)
    if gpus is None and count == 1 and not _bare(layout):
        count = parallel.layout(layout).gpus  # an explicit layout on a bare GPU says how many
    count = checks.count(count, "gpus", maximum=checks.MAX_GPUS)
    plan = parallel.layout(layout, count)
    replica, replicas = _replica(plan), plan.dp
    s, o = float(workload.prompt_tokens), float(workload.output_tokens)
    longest = float(max(record.max_context or 0, 4 * (s + o / 2), Lengths.of(workload).prompt.max()))
    step, top = (step_model(record, gpu, weights=weights, kv_cache=kv_cache, gpus=replica.gpus, engine=profile,
                            context=s + o / 2, max_prompt=longest, ceiling=ceiling, layout=replica)
                 for ceiling in (False, True))
    if workload.prefix_hit_rate:
        step, top = (replace(t, prefix_hit_rate=workload.prefix_hit_rate) for t in (step, top))
    w, _, kv = unpack.checkpoint_precisions(record, weights, kv_cache)
    offline = _offline(step, top, workload, replicas, count)
    return Throughput(
        model=record.id, gpu=device.id, engine=profile.name, weights=w, kv_cache=step.kv_cache or kv,
        layout=replica.name, gpus_per_replica=replica.gpus, replicas=replicas, gpus=count, workload=workload, slo=slo,
        max_sequences=step.max_sequences, batched_tokens=step.chunk_tokens, kv_capacity_tokens=step.kv_capacity_tokens,
        max_concurrency=batch_limit(step, s + o), offline=offline,
        capacity=None if slo is None else _capacity(step, top, workload, slo, replicas, count, method, options),
        latency=_latency(step, top, workload, replicas, method, options, offline) if latencies else None,
    )


def _bare(layout: str | parallel.Layout) -> bool:
    """Whether a layout is a bare name (``tp``, ``pp``...) that takes every GPU given."""
    return isinstance(layout, str) and layout.strip().lower() in ("tp", "pp", "ep", "dp", "layer")
