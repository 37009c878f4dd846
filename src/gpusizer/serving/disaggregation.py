r"""Disaggregated prefill and decode (xPyD): prefill instances hand each request's KV cache to decode instances.

DistServe, Splitwise, Mooncake, vLLM's disaggregated prefill and SGLang's PD disaggregation run prompts and
decodes on separate pools: :math:`x` prefill instances (each its own layout) compute the prompts, send the KV
cache over a link (NVLink inside a node, an RDMA NIC between nodes), and :math:`y` decode instances decode.
Prefill never interferes with decode steps, at the price of the transfer and of GPUs split between two pools.
``disaggregated`` composes the serving closed forms per pool; ``disaggregation_ratio`` searches the smallest
:math:`x`, :math:`y` that meet an SLO at a rate. ``docs/disaggregation.md`` has the formulas and references.

* Prefill pool: each instance is an engine whose requests end at their first token (``load`` with one output
  token, an M/G/1 prefill server), receiving :math:`\lambda/x`.
* Transfer: the KV of the prompt as stored on the busiest GPU of either side (``prefix_cache.per_sequence_bytes``:
  tensor-parallel shares, MLA latents replicated as stored, recurrent states), one send per GPU over its own
  link (``interconnect.p2p_seconds``), whole or layer by layer overlapping the prefill (``exposed_transfer_seconds``).
* Decode pool: each instance receives :math:`\lambda/y` requests whose prompt is already cached (a prefix hit
  rate of 1: the engine recomputes only its last block, as a full prefix-cache hit does), so its first step and
  TPOT come from ``load`` with almost no prefill interference.

Composition only; the formulas are in ``queueing.load``, ``interconnect.p2p_seconds``, ``memory`` and
``exposed_transfer_seconds``. Deliberate omissions: queueing on the link (its utilisation is reported and a
link above 1 is unstable), KV-pool pressure on prefill instances while transfers are in flight, re-sharding
costs between different layouts beyond the larger per-GPU share, and prefix caches on the decode side.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import numpy as np

from gpusizer import catalog, checks, engines, interconnect, parallel, unpack
from gpusizer.estimator import resolve_target
from gpusizer.serving.capacity import max_rate
from gpusizer.serving.kv_transfer import KvLink, exposed_transfer_seconds, kv_link, kv_transfer_bytes
from gpusizer.serving.queueing import load
from gpusizer.serving.step_table import StepModel, marginal_prefill_seconds, step_model
from gpusizer.serving.throughput import QUANTILES, Quantiles, throughput
from gpusizer.serving.workload import SLO, Lengths, Workload

__all__ = ["Comparison", "Disaggregated", "Pool", "Ratio", "Transfer", "disaggregated", "disaggregation_ratio"]

@dataclass(frozen=True)
class Transfer:
    """The KV hand-off of one request."""

    link: KvLink
    bytes_per_gpu: float
    """Bytes the busiest GPU of either pool sends or receives. [B]"""
    bytes_per_request: float
    """The prompt's KV over every GPU of a prefill instance. [B]"""
    seconds: float
    """The whole send at the achieved bandwidth: the time the link is busy. [s]"""
    seconds_ceiling: float
    """The same at the line rate. [s]"""
    exposed_seconds: float
    """What it adds to the TTFT (``exposed_transfer_seconds``). [s]"""
    exposed_seconds_ceiling: float
    """The same at the line rate and ceiling prefill. [s]"""
    layerwise: bool
    utilisation: float
    """Share of time each prefill GPU's link is busy at the workload's rate. [-]"""


@dataclass(frozen=True)
class Pool:
    """One pool of identical instances."""

    role: str
    """``prefill`` or ``decode``."""
    layout: str
    instances: int
    gpus_per_instance: int
    gpus: int
    rate_per_instance: float
    """Requests each instance receives at the workload's rate. [1/s]"""
    utilisation: float
    """Share of time an instance runs steps at that rate (1 when saturated). [-]"""
    batch: float
    """Mean sequences decoding in one instance (0 in the prefill pool). [-]"""
    kv_capacity_tokens: float
    """Tokens one instance's KV pool holds. [token]"""
    ttft_mean: float
    """This pool's part of the mean TTFT: queue and prefill (prefill pool), the wait for a step and the first step
    (decode pool); inf where unstable. [s]"""
    max_rate: float | None
    """Largest system rate the pool sustains within its part of the SLO (prefill: the TTFT target less the
    transfer and the idle decode pool's first step; decode: the TPOT target); None without that target. [1/s]"""
    binding: str
    """What limits ``max_rate`` (``MaxRate.binding``), or why it is None."""


@dataclass(frozen=True)
class Comparison:
    """The aggregated deployment on the same GPUs (``serving.throughput``), against the disaggregated one."""

    layout: str
    """The aggregated replicas (``tp1xdp4``)."""
    gpus: int
    requests_per_second: float
    """Aggregated largest rate within the SLO. [1/s]"""
    requests_per_second_ceiling: float
    disaggregated_requests_per_second: float
    speedup: float | None
    """Disaggregated over aggregated rate; None when the aggregated one serves nothing within the SLO. [-]"""
    winner: str
    """``disaggregated``, ``aggregated`` or ``tie`` (within 2 %)."""


@dataclass(frozen=True)
class Disaggregated:
    """An xPyD deployment: latencies at a rate, its largest rate within an SLO, and the aggregated alternative."""

    model: str
    gpu: str
    engine: str
    weights: str
    kv_cache: str
    name: str
    """``1p3d``: prefill and decode instances."""
    gpus: int
    workload: Workload
    slo: SLO | None
    prefill: Pool
    decode: Pool
    transfer: Transfer
    stable: bool
    limit: str
    """Why an unstable rate is unstable (``prefill``, ``kv-link``, ``kv-cache``, ``max-sequences``); ``""``."""
    ttft: Quantiles
    """Prefill queue and prefill + exposed transfer + first decode step (quantiles added: an upper estimate). [s]"""
    ttft_ceiling: Quantiles
    tpot: Quantiles
    """The decode pool's time per output token. [s]"""
    tpot_ceiling: Quantiles
    capacity: float | None
    """Largest system rate meeting every target; None without an SLO. [1/s]"""
    capacity_ceiling: float | None
    capacity_binding: str
    tokens_per_second_per_gpu: float | None
    """``capacity`` x mean output over all GPUs. [token/s]"""
    aggregated: Comparison | None

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict (records as dicts, tuples as lists); infinities stay floats."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Workload | SLO):
                value = value.model_dump()
            elif value is not None and hasattr(value, "__dataclass_fields__"):
                value = asdict(value)
            out[f.name] = checks.plain(value)
        return out


@dataclass(frozen=True)
class _Setup:
    """Everything rate-independent: the four step tables, the pools' workloads and the transfer of a request."""

    prefill: tuple[StepModel, StepModel]
    decode: tuple[StepModel, StepModel]
    prompts: Workload
    """The workload as a prefill instance sees it: one output token."""
    workload: Workload
    prefill_plan: parallel.Layout
    decode_plan: parallel.Layout
    bytes_per_gpu: float
    exposed: tuple[float, float]
    """Exposed transfer, expected and ceiling. [s]"""
    busy: tuple[float, float]
    """Whole transfer, expected and ceiling. [s]"""
    link: KvLink
    layerwise: bool


def _setup(record: catalog.Model, gpu: Any, workload: Workload, prefill_layout: Any, decode_layout: Any,
           link: str | KvLink, layerwise: bool, engine: Any, weights: str | None, kv_cache: str | None) -> _Setup:
    profile = engines.engine(engine)
    plans = [layout if isinstance(layout, parallel.Layout) else parallel.layout(layout)
             for layout in (prefill_layout, decode_layout)]
    s, o = float(workload.prompt_tokens), float(workload.output_tokens)
    longest = float(max(record.max_context or 0, 4 * (s + o / 2), Lengths.of(workload).prompt.max()))

    def tables(plan: parallel.Layout, context: float, hit: float) -> tuple[StepModel, StepModel]:
        made = (step_model(record, gpu, weights=weights, kv_cache=kv_cache, gpus=plan.gpus, engine=profile,
                           context=context, max_prompt=longest, ceiling=top, layout=plan) for top in (False, True))
        return tuple(replace(t, prefix_hit_rate=hit) for t in made)  # type: ignore[return-value]

    prefill = tables(plans[0], s + 1, workload.prefix_hit_rate)
    decode = tables(plans[1], s + o / 2, 1.0)  # the prompt arrives cached: only its last block is recomputed
    prompts = workload.model_copy(update={"output_tokens": 1.0, "output_distribution": "fixed"})
    moved = float(max(kv_transfer_bytes(record, s, layout=p, kv_cache=kv_cache, weights=weights, engine=profile)
                      for p in plans))
    chosen = link if isinstance(link, KvLink) else kv_link(link, gpu)
    layers = record.num_layers if layerwise else 1
    compute = [float(np.mean(marginal_prefill_seconds(t, Lengths.of(workload).prompt, 0.0))) for t in prefill]
    exposed = (float(exposed_transfer_seconds(moved, chosen.bandwidth, chosen.latency, compute[0], layers)),
               float(exposed_transfer_seconds(moved, chosen.bandwidth_ceiling, chosen.latency_ceiling, compute[1],
                                              layers)))
    busy = (float(interconnect.p2p_seconds(moved, chosen.bandwidth, chosen.latency)),
            float(interconnect.p2p_seconds(moved, chosen.bandwidth_ceiling, chosen.latency_ceiling)))
    return _Setup(prefill, decode, prompts, workload, plans[0], plans[1], moved, exposed, busy, chosen, layerwise)


def _latencies(setup: _Setup, x: Any, y: Any, rate: Any, quantile: float, top: int = 0) -> dict[str, Any]:
    """TTFT, TPOT and E2E at ``quantile`` for ``x`` prefill and ``y`` decode instances (arrays broadcast). [s]"""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    with np.errstate(invalid="ignore"):  # no decode steps in the prefill pool: 0 x inf inside the batch solve
        p = load(setup.prefill[top], setup.prompts, rate / x, quantile=quantile)
    d = load(setup.decode[top], setup.workload, rate / y, quantile=quantile)
    link = rate / x * setup.busy[top]
    stable = np.asarray(p.stable) & np.asarray(d.stable) & (link < 1)
    limit = np.where(~np.asarray(p.stable), "prefill", np.where(link >= 1, "kv-link",
                                                                np.where(np.asarray(d.stable), "", d.limit)))
    first = np.asarray(p.ttft_quantile) + setup.exposed[top]
    with np.errstate(invalid="ignore"):
        out = dict(ttft=first + d.ttft_quantile, tpot=np.asarray(d.tpot_quantile, dtype=float),
                   e2e=first + d.e2e_quantile, ttft_mean=np.asarray(p.ttft_mean) + setup.exposed[top] + d.ttft_mean,
                   tpot_mean=np.asarray(d.tpot_mean, dtype=float))
    out = {k: np.where(stable, v, math.inf) for k, v in out.items()}
    return dict(out, stable=stable, limit=limit, prefill=p, decode=d, link=link)


def _excess(setup: _Setup, x: Any, y: Any, rate: Any, slo: SLO, top: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Worst latency over its target, less 1 (positive: missed), and the name of the worst (or the limit)."""
    point = _latencies(setup, x, y, rate, slo.quantile, top)
    targets = [(n, t) for n, t in (("ttft", slo.ttft_p95), ("tpot", slo.tpot_p95), ("e2e", slo.e2e_p95)) if t]
    ratios = np.stack([np.nan_to_num(point[n] / t, nan=0.0) for n, t in targets])
    names = np.asarray([n for n, _ in targets])[np.argmax(ratios, axis=0)]
    return np.where(point["stable"], ratios.max(axis=0) - 1.0, np.inf), np.where(point["stable"], names,
                                                                                  point["limit"])


def _capacity(setup: _Setup, x: int, y: int, slo: SLO, top: int = 0) -> tuple[float, str]:
    """Largest system rate meeting ``slo``: a geometric grid below the prefill pool's saturation, then bisection."""
    prefill = float(np.mean(marginal_prefill_seconds(setup.prefill[top], Lengths.of(setup.prompts).prompt, 0.0)))
    ceiling = 1.5 * x / max(prefill, setup.busy[top], 1e-9)
    grid = np.geomspace(ceiling * 1e-6, ceiling, 64)
    values = np.asarray(_excess(setup, x, y, grid, slo, top)[0], dtype=float)
    if values[0] > 0:
        return 0.0, str(_excess(setup, x, y, float(grid[0]), slo, top)[1])
    i = int(np.argmax(values > 0)) if (values > 0).any() else len(grid) - 1
    lo, hi = float(grid[max(i - 1, 0)]), float(grid[i])
    for _ in range(40):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if float(_excess(setup, x, y, mid, slo, top)[0]) <= 0 else (lo, mid)
    return lo, str(_excess(setup, x, y, hi, slo, top)[1])


def _quantiles(setup: _Setup, x: int, y: int, rate: float, top: int) -> tuple[Quantiles, Quantiles, dict[str, Any]]:
    points = [_latencies(setup, x, y, rate, q, top) for q in QUANTILES]
    ttft = Quantiles(float(points[0]["ttft_mean"]), *(float(p["ttft"]) for p in points))
    tpot = Quantiles(float(points[0]["tpot_mean"]), *(float(p["tpot"]) for p in points))
    return ttft, tpot, points[0]


def _pools(setup: _Setup, x: int, y: int, slo: SLO | None, at: dict[str, Any]) -> tuple[Pool, Pool]:
    """The two pools at the workload's rate, each with its largest rate within its part of the SLO."""
    rate = setup.workload.rate
    limits: list[tuple[float | None, str]] = [(None, "no TTFT target"), (None, "no TPOT target")]
    if slo is not None and slo.ttft_p95 is not None:
        idle = float(_latencies(setup, x, y, rate * 1e-6, slo.quantile)["decode"].ttft_quantile)
        budget = slo.ttft_p95 - setup.exposed[0] - idle
        with np.errstate(invalid="ignore"):  # as in ``_latencies``
            best = max_rate(setup.prefill[0], setup.prompts, SLO(ttft_p95=budget, quantile=slo.quantile)) \
                if budget > 0 else None
        limits[0] = (best.rate * x, best.binding) if best else (0.0, "transfer and first decode step exceed TTFT")
    if slo is not None and slo.tpot_p95 is not None:
        best = max_rate(setup.decode[0], setup.workload, SLO(tpot_p95=slo.tpot_p95, quantile=slo.quantile))
        limits[1] = (best.rate * y, best.binding)
    p, d = at["prefill"], at["decode"]
    return (Pool("prefill", setup.prefill_plan.name, x, setup.prefill_plan.gpus, x * setup.prefill_plan.gpus,
                 rate / x, float(min(p.busy, 1.0)), 0.0, setup.prefill[0].kv_capacity_tokens, float(p.ttft_mean),
                 *limits[0]),
            Pool("decode", setup.decode_plan.name, y, setup.decode_plan.gpus, y * setup.decode_plan.gpus,
                 rate / y, float(min(d.busy, 1.0)), float(d.batch), setup.decode[0].kv_capacity_tokens,
                 float(d.ttft_mean), *limits[1]))


def _instances(gpus: int, plan: parallel.Layout, name: str) -> int:
    count = checks.count(gpus, name, maximum=checks.MAX_GPUS)
    if count % plan.gpus:
        raise ValueError(f"{name}: {count} GPUs is not a whole number of {plan.name} instances ({plan.gpus} each)")
    return count // plan.gpus


def disaggregated(
    model: str | catalog.Model,
    gpu: str | catalog.GPU | catalog.System,
    *,
    workload: Workload,
    slo: SLO | None = None,
    prefill_gpus: int = 1,
    decode_gpus: int = 1,
    prefill_layout: str | parallel.Layout = "tp1",
    decode_layout: str | parallel.Layout = "tp1",
    link: str | KvLink = "auto",
    layerwise: bool = False,
    engine: str | engines.EngineProfile = "vllm",
    weights: str | None = None,
    kv_cache: str | None = None,
    compare: bool = True,
) -> Disaggregated:
    r"""An xPyD deployment of ``model``: latencies at ``workload.rate``, capacity within ``slo``, and the
    aggregated deployment on the same GPUs.

    Parameters
    ----------
    model, gpu : str or record
        As for ``serving.throughput``.
    workload : Workload
        Lengths and the system's request rate.
    slo : SLO, optional
        Targets of ``capacity``, of each pool's ``max_rate`` and of the comparison.
    prefill_gpus, decode_gpus : int
        GPUs of each pool: whole numbers of instances of ``prefill_layout`` and ``decode_layout``. [-]
    prefill_layout, decode_layout : str or parallel.Layout
        One instance's split (``tp1``, ``tp2``, ``tp8+ep8``...).
    link : str or KvLink
        ``kv_link``'s names: ``auto`` (the scale-out NIC), ``nvlink``, ``rdma-400g``, ``50GB/s``...
    layerwise : bool
        Send each layer's KV as soon as it is computed, overlapping the prefill (``exposed_transfer_seconds``).
    engine, weights, kv_cache
        As for ``serving.throughput``.
    compare : bool
        Whether to run ``serving.throughput`` on the same GPUs (replicas of ``decode_layout``) with ``slo``.

    Returns
    -------
    Disaggregated

    Notes
    -----
    With :math:`x` prefill and :math:`y` decode instances at rate :math:`\lambda`,

    .. math:: \mathrm{TTFT}_q = W^P_q(\lambda/x) + T_{xfer} + W^D_q(\lambda/y), \qquad
              \mathrm{TPOT}_q = \mathrm{TPOT}^D_q(\lambda/y)

    where :math:`W^P` is ``load``'s TTFT of a prefill instance (queue and prefill, one output token),
    :math:`T_{xfer}` the exposed transfer and :math:`W^D` the decode instance's TTFT of a cached prompt (the
    wait for the step in progress and its first step). Quantiles are added, an upper estimate. The link is
    stable while :math:`\lambda/x \cdot (\alpha + m/\beta) < 1`.

    Examples
    --------
    >>> w = Workload(rate=4, prompt_tokens=2048, output_tokens=256)
    >>> d = disaggregated("llama-3.1-8b", "h100-sxm", workload=w, slo=SLO(ttft_p95=1.0, tpot_p95=0.03),
    ...                   prefill_gpus=1, decode_gpus=3, link="rdma-400g")
    >>> d.name, d.ttft.p50 > d.transfer.exposed_seconds, d.capacity > d.workload.rate
    ('1p3d', True, True)
    """
    record = catalog.model(model)
    checks.instance(workload, "workload", Workload)
    if slo is not None:
        checks.instance(slo, "slo", SLO)
    setup = _setup(record, gpu, workload, prefill_layout, decode_layout, link, bool(layerwise), engine, weights,
                   kv_cache)
    x = _instances(prefill_gpus, setup.prefill_plan, "prefill_gpus")
    y = _instances(decode_gpus, setup.decode_plan, "decode_gpus")
    ttft, tpot, at = _quantiles(setup, x, y, workload.rate, 0)
    ttft_top, tpot_top, _ = _quantiles(setup, x, y, workload.rate, 1)
    total = x * setup.prefill_plan.gpus + y * setup.decode_plan.gpus
    capacity = top = None
    binding = "no SLO"
    if slo is not None:
        capacity, binding = _capacity(setup, x, y, slo)
        top = _capacity(setup, x, y, slo, 1)[0]
    w, _, kv = unpack.checkpoint_precisions(record, weights, kv_cache)
    transfer = Transfer(setup.link, setup.bytes_per_gpu, setup.bytes_per_gpu * setup.prefill_plan.gpus,
                        setup.busy[0], setup.busy[1], setup.exposed[0], setup.exposed[1], setup.layerwise,
                        float(np.minimum(at["link"], 1.0)))
    prefill, decode = _pools(setup, x, y, slo, at)
    comparison = _compare(record, gpu, workload, slo, setup.decode_plan, total, capacity, engine, weights,
                          kv_cache) if compare and slo is not None and capacity is not None else None
    return Disaggregated(
        model=record.id, gpu=resolve_target(gpu, None)[0].id, engine=setup.decode[0].engine, weights=w,
        kv_cache=setup.decode[0].kv_cache or kv, name=f"{x}p{y}d", gpus=total, workload=workload, slo=slo,
        prefill=prefill, decode=decode, transfer=transfer, stable=bool(at["stable"]), limit=str(at["limit"]),
        ttft=ttft, ttft_ceiling=ttft_top, tpot=tpot, tpot_ceiling=tpot_top, capacity=capacity,
        capacity_ceiling=top, capacity_binding=binding,
        tokens_per_second_per_gpu=None if capacity is None else capacity * workload.output_tokens / total,
        aggregated=comparison,
    )


def _compare(record: catalog.Model, gpu: Any, workload: Workload, slo: SLO, plan: parallel.Layout, total: int,
             rate: float, engine: Any, weights: str | None, kv_cache: str | None) -> Comparison | None:
    """``serving.throughput`` of ``total // plan.gpus`` replicas of ``plan`` within ``slo``; None if none fits."""
    replicas = total // plan.gpus
    if replicas < 1:
        return None
    layout = f"{plan.name}xdp{replicas}" if replicas > 1 else plan.name
    agg = throughput(record, gpu, workload=workload, slo=slo, gpus=replicas * plan.gpus, layout=layout,
                     engine=engine, weights=weights, kv_cache=kv_cache, latencies=False)
    if agg.capacity is None:
        return None
    base = agg.capacity.requests_per_second
    speedup = rate / base if base > 0 else None
    winner = "tie" if speedup is not None and abs(speedup - 1) <= 0.02 else \
        "disaggregated" if speedup is None or speedup > 1 else "aggregated"
    if speedup is None and rate == 0:
        winner = "tie"
    return Comparison(layout, replicas * plan.gpus, base, agg.capacity.requests_per_second_ceiling, rate, speedup,
                      winner)


@dataclass(frozen=True)
class Ratio:
    """The fewest GPUs of an xPyD deployment that meets an SLO at a rate."""

    feasible: bool
    """Whether any pair within the search bound meets the SLO (the fields below are then that pair)."""
    name: str
    """``2p3d``; ``""`` when none is feasible."""
    prefill_instances: int
    decode_instances: int
    gpus: int
    ratio: float
    """Prefill GPUs over decode GPUs. [-]"""
    ttft: float
    """TTFT at the SLO's quantile there. [s]"""
    tpot: float
    """TPOT at the SLO's quantile there. [s]"""
    searched: int
    """Pairs evaluated: every ``(x, y)`` with ``1 <= x, y <= max_instances``. [-]"""


def disaggregation_ratio(
    model: str | catalog.Model,
    gpu: str | catalog.GPU | catalog.System,
    *,
    workload: Workload,
    slo: SLO,
    prefill_layout: str | parallel.Layout = "tp1",
    decode_layout: str | parallel.Layout = "tp1",
    link: str | KvLink = "auto",
    layerwise: bool = False,
    max_instances: int = 16,
    engine: str | engines.EngineProfile = "vllm",
    weights: str | None = None,
    kv_cache: str | None = None,
) -> Ratio:
    r"""The pair :math:`(x, y)` with the fewest GPUs :math:`x g_P + y g_D` that meets ``slo`` at ``workload.rate``.

    A bounded exhaustive search: one ``load`` per pool over :math:`1..N` instances (``max_instances``), every
    pair combined as in ``disaggregated``; ties go to fewer prefill GPUs. Not feasible is an answer
    (``feasible`` False), not an error.

    Examples
    --------
    >>> w = Workload(rate=6, prompt_tokens=2048, output_tokens=256)
    >>> r = disaggregation_ratio("llama-3.1-8b", "h100-sxm", workload=w, slo=SLO(ttft_p95=0.5, tpot_p95=0.02),
    ...                          max_instances=8)
    >>> r.feasible, r.prefill_instances >= 1, r.gpus == r.prefill_instances + r.decode_instances
    (True, True, True)
    """
    record = catalog.model(model)
    checks.instance(workload, "workload", Workload)
    checks.instance(slo, "slo", SLO)
    bound = checks.count(max_instances, "max_instances", maximum=256)
    setup = _setup(record, gpu, workload, prefill_layout, decode_layout, link, bool(layerwise), engine, weights,
                   kv_cache)
    n = np.arange(1, bound + 1, dtype=float)
    x, y = n[:, None], n[None, :]
    excess, _ = _excess(setup, x, y, workload.rate, slo)
    gpus = x * setup.prefill_plan.gpus + y * setup.decode_plan.gpus
    cost = np.where(excess <= 0, gpus + x * setup.prefill_plan.gpus / (4.0 * gpus.max()), np.inf)
    if not np.isfinite(cost).any():
        return Ratio(False, "", 0, 0, 0, 0.0, math.inf, math.inf, bound * bound)
    i, j = np.unravel_index(int(np.argmin(cost)), cost.shape)
    point = _latencies(setup, i + 1, j + 1, workload.rate, slo.quantile)
    return Ratio(True, f"{i + 1}p{j + 1}d", int(i + 1), int(j + 1), int(gpus[i, j]),
                 float((i + 1) * setup.prefill_plan.gpus / ((j + 1) * setup.decode_plan.gpus)),
                 float(point["ttft"]), float(point["tpot"]), bound * bound)
