"""The shortlist's search: price every screened candidate at the workload, rank, check the cheapest.

Each candidate of ``shortlister.screen`` is loaded with the closed forms of ``serving`` (the largest
rate within the SLO and its band), replicated until the replicas serve the workload's rate, priced
(``cost``) and ranked by cost per million tokens; the ``simulate`` cheapest are checked with the
discrete-event simulation (``Row.simulated_*``, beside the closed forms, which alone rank and price).
Composition only: the physics lives in ``serving``, ``cost``, ``estimator`` and ``performance``.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from gpusizer import catalog, checks, cost, serving
from gpusizer.serving import SLO, Workload
from gpusizer.shortlister import screen
from gpusizer.shortlister.screen import Candidate
from gpusizer.shortlister.table import Row, Shortlist

__all__ = ["shortlist"]


def _bottleneck(best: serving.MaxRate, step: serving.StepModel, workload: Workload) -> str:
    """``best.binding`` in words. ``kv-cache`` names what the pool holds: sequences of the workload's mean
    prompt + output tokens, as ``gpusizer fit`` counts them at that context (not the mean decode batch)."""
    side = "compute" if best.compute_bound else "bandwidth"
    request = workload.prompt_tokens + workload.output_tokens
    words = {
        "ttft": "TTFT: prefill queue" if step.max_sequences > 4 else
                f"TTFT: waiting for one of {step.max_sequences} sequence slots",
        "tpot": f"TPOT: {side}-bound decode at batch {best.batch:.0f}",
        "e2e": f"end-to-end latency ({side}-bound decode)",
        "kv-cache": f"KV cache full: the pool holds {int(step.kv_capacity_tokens // request):,} sequences of "
                    f"{request:,.0f} tokens",
        "max-sequences": f"engine limit of {step.max_sequences} sequences",
        "prefill": "prefill compute saturated",
    }
    return words.get(best.binding, best.binding)


def _fleet(gpus: int, rate: float, capacity: float) -> int:
    """GPUs of the replicas that serve ``rate`` when one sustains ``capacity`` (0 when it sustains nothing)."""
    return gpus * max(1, math.ceil(rate / capacity * (1 - 1e-9))) if capacity > 0 else 0


def _money(price: cost.GpuPrice | None, gpus: int, workload: Workload, best: float, band: tuple[float, float],
           point: serving.Load) -> dict[str, Any]:
    """Price fields of a row: bill, cost per million tokens and its band, input/output split."""
    if price is None or not price.in_usd:  # a price only in another currency is never converted to USD
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
    c: Candidate, record: catalog.Model, workload: Workload, slo: SLO, best: serving.MaxRate,
    band: tuple[float, float], price: cost.GpuPrice | None,
) -> Row:
    """Replicas, money and energy of one configuration at the workload (closed forms only, so that a row's
    figures depend on its configuration alone, never on which other rows ``simulate`` picks)."""
    replicas = _fleet(1, workload.rate, best.rate)
    point = serving.load(c.step, workload.at(workload.rate / replicas), quantile=slo.quantile)
    ttft, tpot, e2e = float(point.ttft_quantile), float(point.tpot_quantile), float(point.e2e_quantile)
    return Row(
        gpu=c.device.id, gpu_name=c.device.name, gpus=c.gpus, layout=c.step.layout or c.layout,
        weights=c.weights or record.weights, kv_cache=c.step.kv_cache, engine=c.step.engine, fits=True,
        max_rate=best.rate, max_rate_band=band, rate_method=best.method, binding=best.binding,
        bottleneck=_bottleneck(best, c.step, workload), replicas=replicas,
        **_money(price, c.gpus, workload, best.rate, band, point),
        **_energy(c.device, c.gpus * replicas, workload, float(point.busy)),
        ttft=ttft, tpot=tpot, e2e=e2e, latency_method="closed-form",
        busy=float(point.busy), batch=float(point.batch),
    )


def _rank(rows: list[tuple[Row, Candidate]]) -> list[tuple[Row, Candidate]]:
    def key(item: tuple[Row, Candidate]) -> tuple[float, float, str]:
        row = item[0]
        money = row.usd_per_million_tokens
        return (money if math.isfinite(money) else math.inf, -row.max_rate, row.configuration)

    return sorted(rows, key=key)


def _simulated(row: Row, c: Candidate, workload: Workload, slo: SLO, requests: int, seed: int) -> Row:
    """``row`` with the discrete-event simulation's check beside its closed forms: the largest rate within the
    SLO, and the latencies at the rate each of ``row.replicas`` replicas receives."""
    best = serving.max_rate(c.step, workload, slo, method="simulation", requests=requests, seed=seed)
    run = serving.simulate(c.step, workload, rate=workload.rate / row.replicas, requests=requests, seed=seed)
    q = slo.quantile
    return replace(row, simulated_max_rate=best.rate, simulated_ttft=float(run.percentile("ttft", q)),
                   simulated_tpot=float(run.percentile("tpot", q)), simulated_e2e=float(run.percentile("e2e", q)))


def _check_arguments(workload: Any, slo: Any, gpus: Any, max_gpus: Any, prices: Any, weights: Any, layouts: Any,
                     engine: Any, simulate: Any, requests: Any, seed: Any) -> None:
    """``TypeError``/``ValueError`` naming the first of ``shortlist``'s arguments that is malformed."""
    checks.instance(workload, "workload", Workload)
    checks.instance(slo, "slo", SLO)
    checks.names(gpus, "gpus")
    checks.names(weights, "weights")
    checks.names(layouts, "layouts")
    checks.count(max_gpus, "max_gpus", minimum=1, maximum=checks.MAX_GPUS)
    if prices is not None:
        checks.instance(prices, "prices", Mapping)
    checks.instance(engine, "engine", str)
    checks.count(simulate, "simulate", minimum=0)
    checks.count(requests, "requests", minimum=1, maximum=10**7)
    checks.count(seed, "seed", minimum=0)


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
    speculative: Any = None,
    offload: Any = None,
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
        GPUs to consider (ids or aliases); default every GPU with a US-dollar price (bundled or in ``prices``).
    max_gpus : int
        Largest GPU count per replica; counts are the powers of two up to it. [-]
    prices : mapping, optional
        USD per GPU-hour by GPU id or alias, replacing the indicative table.
    weights : sequence of str, optional
        Weight precisions to sweep; default the checkpoint's, plus ``fp8`` and ``int4`` where smaller.
    layouts : sequence of str, optional
        Multi-GPU layouts (``tp``, ``pp``, ``tp+ep``, or spelled out as ``estimate`` takes them); default
        ``tp`` and ``pp``, and ``tp+ep`` for a mixture of experts.
    engine : str
        Engine profile (``vllm``, ``sglang``, ``trtllm``).
    simulate : int
        How many of the cheapest rows to check with the discrete-event simulation (0: none): their
        ``simulated_*`` fields; every other field of every row is the closed form, so a configuration's
        figures do not depend on which rows are simulated.
    requests, seed : int
        Size and seed of each simulated run.
    speculative : speculation.Speculative, optional
        Speculative decoding: every configuration decodes at its accepted-token rate
        (``Estimate.speculation``), so rows rank by the speculative throughput.
    offload : offload.Offload, optional
        CPU/RAM offload (one GPU per replica, ``gpusizer.offload``): configurations whose weights exceed the GPU
        are kept with the split, and decode, prefill and the KV pool are the offloaded ones.

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
    _check_arguments(workload, slo, gpus, max_gpus, prices, weights, layouts, engine, simulate, requests, seed)
    table = cost.prices(prices)
    usd = [g for g, r in table.items() if r.in_usd]  # a price only in another currency is no USD price
    devices = [catalog.gpu(g) for g in (gpus if gpus is not None else usd)]
    devices = list({d.id: d for d in devices}.values())
    candidates, dropped = screen.candidates(record, devices, screen.counts(max_gpus), screen.layouts(layouts, record),
                                            layouts is not None, screen.precisions(record, weights), workload, slo,
                                            engine, speculative, offload)
    rows: list[tuple[Row, Candidate]] = []
    for c in candidates:
        fast, slow = c.step.decode_band[0], c.step.prefill_band[0]
        best, slowest, fastest = serving.max_rates_coarse(
            c.step, workload, slo, [(1.0, 1.0), (c.step.decode_band[1], c.step.prefill_band[1]), (fast, slow)])
        if best.rate <= 0:
            dropped.append(screen.dropped(c.device, c.gpus, c.layout, c.weights, record,
                                          f"misses the SLO even unloaded: {_bottleneck(best, c.step, workload)}"))
            continue
        band = (min(slowest.rate, best.rate), max(fastest.rate, best.rate))
        rows.append((_price_row(c, record, workload, slo, best, band, table.get(c.device.id)), c))
    rows = _rank(rows)
    for i in range(min(simulate, len(rows))):
        row, c = rows[i]
        rows[i] = (_simulated(row, c, workload, slo, requests, seed), c)
    source = "user prices" if prices else "typical of data/prices.toml"
    if prices:
        source = "user prices for " + ", ".join(sorted(catalog.gpu(g).id for g in prices)) + "; else " + \
                 "typical of data/prices.toml"
    longest = record.max_context is not None and workload.prompt_tokens + workload.output_tokens > record.max_context
    return Shortlist(record.id, workload, slo, tuple(r for r, _ in rows), tuple(dropped), source, bool(longest))
