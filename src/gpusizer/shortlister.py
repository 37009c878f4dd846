r"""The buying question: which configuration serves my traffic within my latency targets at the lowest cost.

``shortlist(model, workload, slo)`` sweeps the catalogue (GPU x count x layout x weight precision),
drops what does not fit or cannot meet the ``SLO`` at any rate, and ranks the rest by the cost of a
million tokens of the workload: each configuration is replicated until the replicas together
sustain the workload's rate within the SLO (``serving.max_rate``), and the bill of those replicas is
divided by the tokens they serve. Every row carries the largest rate one replica sustains, what
binds it, dollars per million input / output / all tokens, joules per token, the latencies at the
workload, and the uncertainty band (speed band of the efficiency fit x price range of the quotes).

The sweep is two-stage. Every candidate is screened with the closed forms of ``serving.load``
(milliseconds each); the ``simulate`` cheapest are then re-solved with the discrete-event simulation
(``serving.simulate``), whose tails are the ones to trust, and the table is re-ranked. Rows say which
method produced their numbers.

Composition only: the physics lives in ``serving``, ``cost``, ``estimator`` and ``performance``.

Deliberate omissions: mixed fleets (one GPU type per answer), disaggregated prefill/decode, and
spot or reserved pricing beyond the quotes in ``data/prices.toml``.
"""

from __future__ import annotations

import csv
import functools
import inspect
import io
import math
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from gpusizer import catalog, cost, serving
from gpusizer.checks import plain
from gpusizer.serving import SLO, Workload

__all__ = ["SLO", "Dropped", "Row", "Shortlist", "Workload", "shortlist"]


@dataclass(frozen=True)
class Row:
    """One configuration that meets the SLO, priced for the workload. Units in brackets."""

    gpu: str
    """Catalogue id of the GPU."""
    gpu_name: str
    gpus: int
    """GPUs per replica. [-]"""
    layout: str
    """How a replica splits the model over its GPUs (``tp``: tensor parallel)."""
    weights: str
    """Precision of the weights."""
    kv_cache: str
    engine: str
    fits: bool
    """Whether the model and one request of the workload fit (always True in ``rows``)."""
    max_rate: float
    """Largest request rate one replica sustains within the SLO. [1/s]"""
    max_rate_band: tuple[float, float]
    """``max_rate`` at the slow and at the fast end of the speed band. [1/s]"""
    rate_method: str
    """``simulation`` or ``closed-form``."""
    binding: str
    """What stops a higher rate: ``ttft``, ``tpot``, ``e2e``, ``kv-cache``, ``max-sequences``, ``prefill``."""
    bottleneck: str
    """``binding`` in words, with the side of the roofline that limits decode."""
    replicas: int
    """Replicas needed for the workload's rate. [-]"""
    usd_per_gpu_hour: float
    """Price of one GPU-hour used. [USD/h]"""
    price_band: tuple[float, float]
    """Lowest and highest price of the quotes. [USD/h]"""
    usd_per_hour: float
    """All replicas together. [USD/h]"""
    usd_per_month: float
    """All replicas for 730 hours. [USD]"""
    usd_per_million_tokens: float
    """Bill over prompt + output tokens served at the workload's rate. [USD/Mtoken]"""
    usd_per_million_tokens_band: tuple[float, float]
    """At the low price and fast end, and at the high price and slow end. [USD/Mtoken]"""
    usd_per_million_input_tokens: float
    """Share of the bill spent on prefill, per prompt token. [USD/Mtoken]"""
    usd_per_million_output_tokens: float
    """Share of the bill spent on decode, per output token. [USD/Mtoken]"""
    tokens_per_dollar: float
    """Prompt + output tokens per dollar at the workload. [token/USD]"""
    joules_per_token: float
    """GPU energy per prompt + output token at the workload. [J/token]"""
    joules_per_token_band: tuple[float, float]
    """With the low and the high power fractions of ``data/power.toml``. [J/token]"""
    joules_per_output_token: float
    """GPU energy per output token. [J/token]"""
    ttft: float
    """Time to first token at the SLO quantile, at the rate each replica receives. [s]"""
    tpot: float
    """Time per output token at the SLO quantile. [s]"""
    e2e: float
    """End-to-end latency at the SLO quantile. [s]"""
    latency_method: str
    """``simulation`` or ``closed-form``."""
    busy: float
    """Share of time each replica runs engine steps at the workload. [-]"""
    batch: float
    """Mean sequences decoding per replica at the workload. [-]"""

    @property
    def configuration(self) -> str:
        """``"2 x h100-sxm tp, fp8"``."""
        split = f" {self.layout}" if self.gpus > 1 else ""
        return f"{self.gpus} x {self.gpu}{split}, {self.weights}"

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (bands as two-element lists), with ``configuration``."""
        return {"configuration": self.configuration, **plain(asdict(self))}


@dataclass(frozen=True)
class Dropped:
    """A configuration left out, and why."""

    gpu: str
    gpus: int
    layout: str
    weights: str
    reason: str
    """``does not fit: ...``, ``misses the SLO: ...`` or ``no speed model: ...``."""


@dataclass(frozen=True)
class Shortlist:
    """Ranked configurations (cheapest first) and the ones dropped. Iterating yields rows."""

    model: str
    workload: Workload
    slo: SLO
    rows: tuple[Row, ...]
    dropped: tuple[Dropped, ...]
    price_source: str
    """Where the GPU-hour prices came from."""

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[Row]:
        return iter(self.rows)

    def __getitem__(self, index: int) -> Row:
        return self.rows[index]

    def configurations(self) -> set[tuple[str, int, str, str]]:
        """``(gpu, gpus, layout, weights)`` of every row."""
        return {(r.gpu, r.gpus, r.layout, r.weights) for r in self.rows}

    def to_dicts(self) -> list[dict[str, Any]]:
        """One plain dict per row, in rank order."""
        return [{"rank": i + 1, **row.to_dict()} for i, row in enumerate(self.rows)]

    def to_csv(self) -> str:
        """The rows as CSV text (bands split into ``_low`` / ``_high`` columns)."""
        records = []
        for row in self.to_dicts():
            flat: dict[str, Any] = {}
            for key, value in row.items():
                if isinstance(value, list):
                    flat[f"{key}_low"], flat[f"{key}_high"] = value
                else:
                    flat[key] = value
            records.append(flat)
        out = io.StringIO()
        names = list(records[0]) if records else ["rank", "configuration"]
        writer = csv.DictWriter(out, fieldnames=names, lineterminator="\n")
        writer.writeheader()
        writer.writerows(records)
        return out.getvalue()


# --- the sweep ------------------------------------------------------------------------------------


def _counts(max_gpus: int) -> list[int]:
    counts = [2**k for k in range(8) if 2**k <= max_gpus]
    return counts + ([max_gpus] if max_gpus not in counts else [])


def _layouts(requested: Sequence[str] | None, record: catalog.Model) -> tuple[tuple[str, ...], bool]:
    """Layouts to sweep and whether ``estimate`` takes ``layout=`` (older versions did not)."""
    from gpusizer.estimator import estimate

    supported = "layout" in inspect.signature(estimate).parameters
    if not supported:
        if requested and set(requested) - {"tp"}:
            raise ValueError(f"layouts other than 'tp' need estimate(layout=...); got {list(requested)}")
        return ("tp",), False
    if requested:
        return tuple(requested), True
    return ("tp", "pp", "tp+ep") if record.moe is not None else ("tp", "pp"), True


def _swept(layout: str, device: catalog.GPU, requested: bool) -> bool:
    """Whether a layout is worth a full evaluation on ``device``: by default pipeline layouts only where no
    NVLink joins the GPUs (there they avoid all-reduces over PCIe; on NVLink tensor parallelism gives the
    lower per-token latency a latency target asks for). Layouts the caller names are always swept."""
    return requested or layout != "pp" or not device.interconnect.nvlink_generation


def _layout_name(layout: str, count: int) -> str:
    """A bare ``tp+ep`` spelled with degrees (``tp4+ep4``); other names pass through."""
    return f"tp{count}+ep{count}" if layout == "tp+ep" else layout


def _precisions(record: catalog.Model, weights: Sequence[str] | None) -> list[str | None]:
    from gpusizer import precision

    if weights:
        return [precision.precision(w).name for w in weights]
    names: list[str | None] = [None]
    default = record.weights
    for candidate in ("fp8", "int4"):
        if candidate != default and precision.precision(candidate).bits < precision.precision(default).bits:
            names.append(candidate)
    return names


def _bottleneck(best: serving.MaxRate, step: serving.StepModel) -> str:
    side = "compute" if best.compute_bound else "bandwidth"
    words = {
        "ttft": "TTFT: prefill queue" if step.max_sequences > 4 else
                f"TTFT: waiting for one of {step.max_sequences} sequence slots",
        "tpot": f"TPOT: {side}-bound decode at batch {best.batch:.0f}",
        "e2e": f"end-to-end latency ({side}-bound decode)",
        "kv-cache": f"KV cache full at {best.batch:.0f} sequences",
        "max-sequences": f"engine limit of {step.max_sequences} sequences",
        "prefill": "prefill compute saturated",
    }
    return words.get(best.binding, best.binding)


@dataclass(frozen=True)
class _Candidate:
    device: catalog.GPU
    gpus: int
    layout: str
    weights: str | None
    step: serving.StepModel


def _drop(device: catalog.GPU, gpus: int, layout: str, weights: str | None, record: catalog.Model,
          reason: str) -> Dropped:
    return Dropped(device.id, gpus, layout, weights or record.weights, reason)


def _floors(record: catalog.Model, weights: str | None, size: float, device: catalog.GPU, count: int,
            layout: str, workload: Workload) -> tuple[float, float]:
    """Lower bounds on the unloaded TPOT and TTFT: the active weights streamed once per step at the datasheet
    bandwidth, and the prompt's linear FLOPs at the datasheet rate of the precision the matmuls can use. A
    pipeline passes every stage in turn, so its GPUs do not divide these times. The roofline ceiling is never
    beaten, so a target below a floor cannot be met at any rate. [s]"""
    from gpusizer import precision

    counts = _parameter_counts(record)
    active = counts.linear + counts.experts_active
    stored = counts.linear + counts.experts + counts.embedding + counts.head
    shards = 1 if layout in ("pp", "layer") else count
    tpot = size * active / max(stored, 1) / shards / device.memory_bandwidth
    p = precision.precision(weights if weights is not None else record.weights)
    usable = {p.compute, "int8"} if p.weight_only else {p.compute}
    named = [getattr(device.dense, name, None) for name in usable]
    rates: list[float] = [r for r in named if r] or [r for r in device.dense.model_dump().values() if r]
    prompt = float(serving._Lengths.of(workload).prompt.min())
    ttft = 2 * active * prompt / shards / max(rates) if rates else 0.0
    return tpot, ttft


@functools.lru_cache(maxsize=16)
def _parameter_counts(record: catalog.Model) -> Any:
    from gpusizer import architecture

    return architecture.parameter_counts(record)


def _unloaded_miss(sized: Any, slo: SLO, prompts: np.ndarray, shortest: float) -> str:
    """Which target the shortest request on an idle engine already misses (``estimate``'s expected speed), or
    ``""``.

    An idle engine is the best case of every quantile, so such a configuration cannot meet the SLO at any
    rate; skipping it saves its step table. TPOT is read at the full request length (the closed form uses
    the mean context, a few microseconds less), hence the 5 % margin."""
    tpot = float(np.broadcast_to(sized.decode.tpot_seconds_expected, (2, len(prompts)))[1, 0])
    # the prefill step samples the first token
    ttft = float(np.interp(shortest, prompts, np.asarray(sized.prefill.seconds_expected, dtype=float)))
    if slo.tpot_p95 is not None and tpot > 1.05 * slo.tpot_p95:
        return f"TPOT {tpot * 1e3:.0f} ms on an idle engine"
    if slo.ttft_p95 is not None and ttft > slo.ttft_p95:
        return f"TTFT {ttft * 1e3:.0f} ms on an idle engine"
    return ""


def _weight_bytes(record: catalog.Model, weights: str | None) -> float:
    """Bytes of the stored weights at ``weights`` (all GPUs together), for a quick memory screen."""
    from gpusizer import precision

    counts = _parameter_counts(record)
    w = precision.precision(weights if weights is not None else record.weights)
    experts = None if weights is not None or record.expert_weights is None else record.expert_weights
    return float(precision.stored_weight_bytes(counts, w, experts, record.activation_dtype))


def _candidates(
    record: catalog.Model, devices: Sequence[catalog.GPU], counts: Sequence[int], layouts: Sequence[str],
    supports_layout: bool, requested: bool, precisions: Sequence[str | None], workload: Workload, slo: SLO,
    engine: str,
) -> tuple[list[_Candidate], list[Dropped]]:
    """Every configuration that fits one request and is not ruled out by a latency floor, with its step table.

    Cheap exact screens come first (weights plus the engine's fixed memory against the budget, the
    roofline floors of ``_floors`` against the targets); only the survivors cost an ``estimate``."""
    from gpusizer import engines
    from gpusizer.estimator import estimate

    profile = engines.engine(engine)
    kept: list[_Candidate] = []
    dropped: list[Dropped] = []
    nodes = serving._Lengths.of(workload)
    longest = float(nodes.prompt[-1] + nodes.output[-1])
    context = workload.prompt_tokens + workload.output_tokens
    sizes = {w: _weight_bytes(record, w) for w in precisions}
    tokens, prompts = serving._axes(profile, float(nodes.prompt[-1]))
    for device in devices:
        for weights in precisions:
            for count in counts:
                fixed = profile.runtime_bytes + profile.cuda_graph_bytes + profile.runtime_bytes_multi_gpu * (count > 1)
                budget = device.capacity * profile.memory_fraction
                for layout in layouts if count > 1 else layouts[:1]:
                    if not _swept(layout, device, requested):
                        continue
                    tpot_floor, ttft_floor = _floors(record, weights, sizes[weights], device, count, layout, workload)

                    def drop(reason: str, device: catalog.GPU = device, count: int = count, layout: str = layout,
                             weights: str | None = weights) -> None:
                        dropped.append(_drop(device, count, layout, weights, record, reason))

                    if sizes[weights] / count + fixed > budget:
                        drop(f"does not fit: weights need {sizes[weights] / count / 1e9:.0f} GB per GPU and the "
                             f"runtime {fixed / 1e9:.1f} GB; the engine may use {budget / 1e9:.0f} GB")
                        continue
                    if slo.tpot_p95 is not None and tpot_floor > slo.tpot_p95:
                        drop(f"misses the SLO even unloaded: streaming the weights takes at least "
                             f"{tpot_floor * 1e3:.0f} ms per token")
                        continue
                    if slo.ttft_p95 is not None and ttft_floor > slo.ttft_p95:
                        drop(f"misses the SLO even unloaded: the prompt needs at least {ttft_floor * 1e3:.0f} ms "
                             f"of compute")
                        continue
                    options: dict[str, Any] = {"layout": _layout_name(layout, count)} if supports_layout else {}
                    try:
                        with warnings.catch_warnings(record=True) as caught:
                            warnings.simplefilter("always")
                            sized = estimate(record, device, weights=weights, gpus=count, engine=engine,
                                             context=np.array([[1], [int(context)]]), concurrency=tokens,
                                             prompt=prompts, **options)
                    except ValueError as error:
                        drop(f"no speed model: {error}")
                        continue
                    if caught:  # e.g. attention heads that do not divide by the tensor-parallel degree
                        drop(f"layout refused: {caught[0].message}")
                        continue
                    pool = float(np.broadcast_to(sized.kv_pool_tokens, (2, len(tokens)))[1, 0])
                    if pool < longest:
                        drop(f"does not fit: the KV pool holds {pool:,.0f} tokens, a request needs up to "
                             f"{longest:,.0f}")
                        continue
                    slow = _unloaded_miss(sized, slo, prompts, float(nodes.prompt[0]))
                    if slow:
                        drop(f"misses the SLO even unloaded: {slow}")
                        continue
                    step = serving._tables(record, sized, tokens, prompts, int(context))
                    if not np.all(np.isfinite(step.prompt_seconds)):
                        drop("no speed model: the GPU publishes no tensor rate for prefill")
                    else:
                        kept.append(_Candidate(device, count, layout, weights, step))
    return kept, dropped


def _fleet(gpus: int, rate: float, capacity: float) -> int:
    """GPUs of the replicas that serve ``rate`` when one sustains ``capacity`` (0 when it sustains nothing)."""
    return gpus * max(1, math.ceil(rate / capacity * (1 - 1e-9))) if capacity > 0 else 0


def _money(price: cost.GpuPrice | None, gpus: int, workload: Workload, best: float, band: tuple[float, float],
           point: serving.Load) -> dict[str, Any]:
    """Price fields of a row: bill, cost per million tokens and its band, input/output split."""
    if price is None:
        nan = math.nan
        return dict(usd_per_gpu_hour=nan, price_band=(nan, nan), usd_per_hour=nan, usd_per_month=nan,
                    usd_per_million_tokens=nan, usd_per_million_tokens_band=(nan, nan),
                    usd_per_million_input_tokens=nan, usd_per_million_output_tokens=nan, tokens_per_dollar=nan)
    tokens = workload.rate * (workload.prompt_tokens + workload.output_tokens)
    fleet = _fleet(gpus, workload.rate, best)
    per_hour = price.typical * fleet
    cin, cout = cost.phase_usd_per_million_tokens(per_hour, workload.rate * workload.prompt_tokens,
                                                  workload.rate * workload.output_tokens,
                                                  point.prefill_utilisation, point.decode_utilisation)
    slow, fast = _fleet(gpus, workload.rate, band[0]), _fleet(gpus, workload.rate, band[1])
    mtok = float(cost.usd_per_million_tokens(price.typical, fleet, tokens))
    return dict(
        usd_per_gpu_hour=price.typical, price_band=(price.min, price.max), usd_per_hour=per_hour,
        usd_per_month=float(cost.usd_per_month(price.typical, fleet)), usd_per_million_tokens=mtok,
        usd_per_million_tokens_band=(float(cost.usd_per_million_tokens(price.min, fast, tokens)),
                                     float(cost.usd_per_million_tokens(price.max, slow, tokens)) if slow else math.inf),
        usd_per_million_input_tokens=float(cin), usd_per_million_output_tokens=float(cout),
        tokens_per_dollar=float(cost.tokens_per_dollar(price.typical, fleet, tokens)),
    )


def _energy(device: catalog.GPU, gpus: int, workload: Workload, busy: float) -> dict[str, Any]:
    """Energy fields of a row, from the measured power fractions of ``data/power.toml``."""
    if device.tdp is None:
        return dict(joules_per_token=math.nan, joules_per_token_band=(math.nan, math.nan),
                    joules_per_output_token=math.nan)
    fractions = cost.power_model()
    tokens = workload.rate * (workload.prompt_tokens + workload.output_tokens)

    def joules(idle: float, serving_: float, per: float) -> float:
        watts = cost.average_power(device.tdp, busy, idle_fraction=idle, serving_fraction=serving_)
        return float(cost.joules_per_token(watts, gpus, per))

    typical = (fractions.idle.typical, fractions.serving.typical)
    return dict(
        joules_per_token=joules(*typical, tokens),
        joules_per_token_band=(joules(fractions.idle.low, fractions.serving.low, tokens),
                               joules(fractions.idle.high, fractions.serving.high, tokens)),
        joules_per_output_token=joules(*typical, workload.rate * workload.output_tokens),
    )


def _price_row(
    c: _Candidate, record: catalog.Model, workload: Workload, slo: SLO, best: serving.MaxRate,
    band: tuple[float, float], price: cost.GpuPrice | None, latency: tuple[float, float, float] | None,
) -> Row:
    """Replicas, money and energy of one configuration at the workload."""
    replicas = _fleet(1, workload.rate, best.rate)
    point = serving.load(c.step, workload.at(workload.rate / replicas), quantile=slo.quantile)
    ttft, tpot, e2e = latency if latency is not None else (
        float(point.ttft_quantile), float(point.tpot_quantile), float(point.e2e_quantile))
    return Row(
        gpu=c.device.id, gpu_name=c.device.name, gpus=c.gpus, layout=c.step.layout or c.layout,
        weights=c.weights or record.weights, kv_cache=c.step.kv_cache, engine=c.step.engine, fits=True,
        max_rate=best.rate, max_rate_band=band, rate_method=best.method, binding=best.binding,
        bottleneck=_bottleneck(best, c.step), replicas=replicas,
        **_money(price, c.gpus, workload, best.rate, band, point),
        **_energy(c.device, c.gpus * replicas, workload, float(point.busy)),
        ttft=ttft, tpot=tpot, e2e=e2e, latency_method="simulation" if latency is not None else "closed-form",
        busy=float(point.busy), batch=float(point.batch),
    )


def _rank(rows: list[tuple[Row, _Candidate]]) -> list[tuple[Row, _Candidate]]:
    def key(item: tuple[Row, _Candidate]) -> tuple[float, float, str]:
        row = item[0]
        money = row.usd_per_million_tokens
        return (money if math.isfinite(money) else math.inf, -row.max_rate, row.configuration)

    return sorted(rows, key=key)


def _simulated(c: _Candidate, workload: Workload, slo: SLO, requests: int, seed: int
               ) -> tuple[serving.MaxRate, tuple[float, float, float]]:
    best = serving.max_rate(c.step, workload, slo, method="simulation", requests=requests, seed=seed)
    replicas = max(1, math.ceil(workload.rate / best.rate * (1 - 1e-9))) if best.rate > 0 else 1
    run = serving.simulate(c.step, workload, rate=workload.rate / replicas, requests=requests, seed=seed)
    q = slo.quantile
    return best, (float(run.percentile("ttft", q)), float(run.percentile("tpot", q)), float(run.percentile("e2e", q)))


def shortlist(
    model: str | catalog.Model,
    workload: Workload,
    slo: SLO,
    *,
    gpus: Sequence[str] | None = None,
    max_gpus: int = 8,
    prices: Mapping[str, float] | None = None,
    weights: Sequence[str] | None = None,
    layouts: Sequence[str] | None = None,
    engine: str = "vllm",
    simulate: int = 3,
    requests: int = 1000,
    seed: int = 0,
) -> Shortlist:
    r"""Rank the configurations that serve ``workload`` within ``slo`` by cost per token.

    Parameters
    ----------
    model : str or Model
        Catalogue id or record.
    workload : Workload
        Request rate and lengths.
    slo : SLO
        Latency targets.
    gpus : sequence of str, optional
        GPUs to consider (ids or aliases); default every GPU with a price (bundled or in ``prices``).
    max_gpus : int
        Largest GPU count per replica; counts are the powers of two up to it. [-]
    prices : mapping, optional
        USD per GPU-hour by GPU id or alias, replacing the indicative table.
    weights : sequence of str, optional
        Weight precisions to sweep; default the checkpoint's, plus ``fp8`` and ``int4`` where smaller.
    layouts : sequence of str, optional
        Multi-GPU layouts (``tp``, ``pp``, ...) where ``estimate`` supports ``layout=``; default all.
    engine : str
        Engine profile (``vllm``, ``sglang``, ``trtllm``).
    simulate : int
        How many of the cheapest rows to re-solve with the discrete-event simulation (0: none).
    requests, seed : int
        Size and seed of each simulated run.

    Returns
    -------
    Shortlist
        Rows cheapest first; ``dropped`` lists what does not fit or cannot meet the SLO, and why.

    Notes
    -----
    For a row with per-replica capacity :math:`\lambda^*` (``serving.max_rate``), the workload's rate
    :math:`\lambda` needs :math:`r = \lceil \lambda / \lambda^* \rceil` replicas of :math:`n` GPUs at
    price :math:`p`, and a million tokens cost

    .. math:: c = \frac{p\, n\, r}{3600\, \lambda\, (\bar s + \bar o)} 10^6

    Ties go to the larger :math:`\lambda^*` (more headroom).

    Examples
    --------
    >>> w = Workload(rate=2, prompt_tokens=1024, output_tokens=256)
    >>> table = shortlist("llama-3.1-8b", w, SLO(ttft_p95=0.5, tpot_p95=0.05), gpus=["h100", "l40s"],
    ...                   max_gpus=1, simulate=0)
    >>> len(table) > 0 and table[0].usd_per_million_tokens <= table[-1].usd_per_million_tokens
    True
    """
    record = catalog.model(model)
    if max_gpus < 1:
        raise ValueError(f"max_gpus must be >= 1, got {max_gpus!r}")
    if simulate < 0:
        raise ValueError(f"simulate must be >= 0, got {simulate!r}")
    table = cost.prices(prices)
    devices = [catalog.gpu(g) for g in gpus] if gpus is not None else [catalog.gpu(g) for g in table]
    devices = list({d.id: d for d in devices}.values())
    chosen, supports_layout = _layouts(layouts, record)
    candidates, dropped = _candidates(record, devices, _counts(max_gpus), chosen, supports_layout,
                                      layouts is not None, _precisions(record, weights), workload, slo, engine)
    rows: list[tuple[Row, _Candidate]] = []
    for c in candidates:
        fast, slow = c.step.decode_band[0], c.step.prefill_band[0]
        best, slowest, fastest = serving._max_rates_coarse(
            c.step, workload, slo, [(1.0, 1.0), (c.step.decode_band[1], c.step.prefill_band[1]), (fast, slow)])
        if best.rate <= 0:
            dropped.append(_drop(c.device, c.gpus, c.layout, c.weights, record,
                                 f"misses the SLO even unloaded: {_bottleneck(best, c.step)}"))
            continue
        band = (min(slowest.rate, best.rate), max(fastest.rate, best.rate))
        rows.append((_price_row(c, record, workload, slo, best, band, table.get(c.device.id), None), c))
    rows = _rank(rows)
    for i in range(min(simulate, len(rows))):
        row, c = rows[i]
        best, latency = _simulated(c, workload, slo, requests, seed)
        if best.rate <= 0:
            best = replace(best, rate=row.max_rate * 1e-3)
        rows[i] = (_price_row(c, record, workload, slo, best, row.max_rate_band, table.get(c.device.id), latency), c)
    rows = _rank(rows)
    source = "user prices" if prices else "typical of data/prices.toml"
    if prices:
        source = "user prices for " + ", ".join(sorted(catalog.gpu(g).id for g in prices)) + "; else " + \
                 "typical of data/prices.toml"
    return Shortlist(record.id, workload, slo, tuple(r for r, _ in rows), tuple(dropped), source)
