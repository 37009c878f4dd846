r"""Self-host or call an API: the all-in bill of one deployment, rented or owned, its cost per (accepted) token,
and the traffic at which it beats the cheapest hosted price.

``Owning`` gathers the inputs of an owned deployment (each ``None`` takes the dated default of
``data/ownership.toml``); ``bill`` prices one deployment per hour at an engine busy share, rented or owned;
``compare`` loads the deployment with ``serving.throughput`` at a prompt/output mix and answers the
questions of a guide: cost per token and per accepted token at a utilisation, and the break-even traffic
against a hosted API with the utilisation that traffic implies.

Composition only: the formulas live in ``cost``, ``ownership``, ``hosted`` and ``serving``.

Deliberate omissions: capacity is the offline (saturated) throughput, or the largest rate within an
``SLO`` when one is given; with ``speculative`` the output rate is scaled by the speedup ``estimate``
reports at the offline batch (``Estimate.speculation.speedup``), prompt time unchanged, so it is an upper
bound of the speculative capacity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gpusizer import catalog, cost, estimator, hosted, ownership, serving, speculation
from gpusizer import currency as money
from gpusizer.serving import SLO, Workload

__all__ = ["Bill", "BreakEven", "Comparison", "Owning", "bill", "breakeven", "compare", "rented_breakeven"]


class Owning(BaseModel):
    """Inputs of an owned deployment; ``None`` takes the default of ``data/ownership.toml``."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    purchase_usd: Annotated[float, Field(gt=0)] | None = None
    """Price of one GPU (the median purchase quote). [USD]"""
    life_years: Annotated[float, Field(gt=0)] | None = None
    """Years it is paid off over (the default life policy). [year]"""
    cost_of_capital: Annotated[float, Field(ge=0)] = 0.0
    """Yearly interest rate of the money; 0 is the straight line. [1/year]"""
    usd_per_kwh: Annotated[float, Field(gt=0)] | None = None
    """Price of electricity (the default region's). [USD/kWh]"""
    pue: Annotated[float, Field(ge=1)] | None = None
    """Facility power usage effectiveness (the default survey's). [-]"""
    colocation: str | None = None
    """Id of a colocation rate of ``data/ownership.toml`` (the default one)."""
    usd_per_kw_month: Annotated[float, Field(ge=0)] | None = None
    """Hosting rate per kW of committed power, replacing ``colocation``; 0 for a room already paid for.
    [USD/(kW month)]"""
    hosting_kw: Annotated[float, Field(gt=0)] | None = None
    """Committed power hosted at a per-kW rate (the GPUs' TDP). [kW]"""
    rack_units: Annotated[int, Field(gt=0)] | None = None
    """Rack units hosted at a per-cabinet rate. [U]"""


@dataclass(frozen=True)
class Bill:
    """What one deployment of ``gpus`` GPUs costs per hour, rented or owned. [USD/h] unless named."""

    mode: Literal["rent", "own"]
    gpus: int
    usd_per_hour: float
    """At the busy share asked for."""
    idle_usd_per_hour: float
    """With no traffic (rent, or capital, hosting and idle electricity)."""
    full_usd_per_hour: float
    """With the engine busy all the time."""
    usd_per_month: float
    """``usd_per_hour`` over ``cost.HOURS_PER_MONTH``. [USD]"""
    capital_usd_per_hour: float | None = None
    electricity_usd_per_hour: float | None = None
    hosting_usd_per_hour: float | None = None
    sources: dict[str, str] = field(default_factory=dict)
    """Where each figure comes from."""


def _hosting(device: catalog.GPU, gpus: int, owning: Owning, table: ownership.OwnershipTable) -> tuple[float, str]:
    if owning.usd_per_kw_month is not None:
        rate, what = owning.usd_per_kw_month, "user rate per kW-month"
    else:
        record = table.colocation[owning.colocation] if owning.colocation else table.default("colocation")
        if record.usd_per_rack_unit_month is not None:
            if owning.rack_units is None:
                raise ValueError(f"colocation {record.id!r} is priced per cabinet: pass rack_units")
            return (float(ownership.hosting_usd_per_hour(owning.rack_units, record.usd_per_rack_unit_month)),
                    f"{owning.rack_units} U at {record.usd_per_rack_unit_month:.2f} USD/U-month ({record.basis}; "
                    f"{record.source})")
        rate, what = float(record.usd_per_kw_month or 0.0), f"{record.basis}; {record.source}"
    if owning.hosting_kw is None and device.tdp is None:
        raise ValueError(f"{device.id} has no TDP: pass hosting_kw")
    kw = owning.hosting_kw if owning.hosting_kw is not None else float(device.tdp or 0.0) * gpus / 1000.0
    return float(ownership.hosting_usd_per_hour(kw, rate)), f"{kw:.2f} kW at {rate:.2f} USD/kW-month ({what})"


def _owned(device: catalog.GPU, gpus: int, busy: float, owning: Owning) -> Bill:
    table = ownership.ownership_table()
    price, price_source = ((owning.purchase_usd, "user") if owning.purchase_usd is not None
                           else ownership.purchase_price(device))
    if price is None:
        raise KeyError(price_source)
    if device.tdp is None:
        raise ValueError(f"{device.id} has no TDP in the catalogue: its electricity cannot be priced")
    life = owning.life_years or table.default("life").years
    kwh = owning.usd_per_kwh or table.default("electricity").usd_per_kwh
    pue = owning.pue or table.default("pue").value
    capital = float(ownership.amortised_usd_per_hour(price, life, owning.cost_of_capital)) * gpus
    hosting, hosting_source = _hosting(device, gpus, owning, table)

    def power(share: float) -> float:
        return float(ownership.electricity_usd_per_hour(cost.average_power(device.tdp, share), gpus, kwh, pue))

    at = power(busy)
    return Bill(
        mode="own", gpus=gpus, usd_per_hour=capital + at + hosting, idle_usd_per_hour=capital + power(0.0) + hosting,
        full_usd_per_hour=capital + power(1.0) + hosting,
        usd_per_month=float(cost.usd_per_month((capital + at + hosting) / gpus, gpus)),
        capital_usd_per_hour=capital, electricity_usd_per_hour=at, hosting_usd_per_hour=hosting,
        sources={"purchase": f"{price:,.0f} USD per GPU ({price_source})",
                 "life": f"{life:g} years" + ("" if owning.life_years else f" ({table.default('life').basis})"),
                 "cost_of_capital": f"{owning.cost_of_capital:g} per year",
                 "electricity": f"{kwh:.4f} USD/kWh" + ("" if owning.usd_per_kwh else
                                                         f" ({table.default('electricity').basis})"),
                 "pue": f"{pue:g}" + ("" if owning.pue else f" ({table.default('pue').basis})"),
                 "hosting": hosting_source},
    )


def bill(gpu: Any, gpus: int, busy: float = 1.0, *, own: Owning | None = None,
         usd_per_gpu_hour: float | None = None) -> Bill:
    """Hourly bill of one deployment: owned when ``own`` is given, else rented at ``usd_per_gpu_hour`` (default
    the typical quote of ``data/prices.toml``).

    Parameters
    ----------
    gpu : str or GPU
        Catalogue id, alias or record.
    gpus : int
        GPUs of the deployment. [-]
    busy : float
        Share of time the engine runs steps (drives the electricity of an owned deployment). [-]

    Raises
    ------
    KeyError
        No purchase quote (owned) or no rental price (rented) for the GPU, naming it.

    Examples
    --------
    >>> bill("h100-sxm", 2, usd_per_gpu_hour=2.0).usd_per_month
    2920.0
    >>> b = bill("h100-sxm", 2, own=Owning(purchase_usd=8760.0, life_years=1, usd_per_kwh=0.1, pue=1.5,
    ...      usd_per_kw_month=730.0), busy=0.0)
    >>> round(b.capital_usd_per_hour, 6), round(b.electricity_usd_per_hour, 6), round(b.hosting_usd_per_hour, 6)
    (2.0, 0.042, 1.4)
    """
    device = catalog.gpu(gpu)
    if not 0.0 <= busy <= 1.0:
        raise ValueError(f"busy must be between 0 and 1, got {busy!r}")
    if own is not None:
        return _owned(device, gpus, busy, own)
    hourly = cost.price(device) if usd_per_gpu_hour is None else float(usd_per_gpu_hour)
    total = hourly * gpus
    return Bill(mode="rent", gpus=gpus, usd_per_hour=total, idle_usd_per_hour=total, full_usd_per_hour=total,
                usd_per_month=float(cost.usd_per_month(hourly, gpus)),
                sources={"rent": f"{hourly:.2f} USD per GPU-hour" + (" (user)" if usd_per_gpu_hour else
                                                                      " (typical of data/prices.toml)")})


@dataclass(frozen=True)
class BreakEven:
    """A self-hosted deployment against one API price at a prompt/output mix. Traffic in prompt + output tokens."""

    api: hosted.ApiPrice
    api_usd_per_million_tokens: float
    """Its blended price at the mix. [USD/Mtoken]"""
    tokens_per_day: float
    """Traffic above which self-hosting is cheaper; ``inf`` when it never is. [token/day]"""
    requests_per_second: float
    """The same traffic in requests. [1/s]"""
    utilisation: float
    """Share of one deployment's capacity that traffic uses; above 1 one deployment cannot serve it. [-]"""
    note: str = ""
    traffic_tokens_per_day: float | None = None
    """A traffic asked about. [token/day]"""
    replicas: int | None = None
    """Deployments that serve it."""
    self_usd_per_day: float | None = None
    api_usd_per_day: float | None = None
    cheaper: str | None = None
    """``self-host`` or ``api`` at ``traffic_tokens_per_day``."""


def breakeven(quote: hosted.ApiPrice, prompt_tokens: float, output_tokens: float, *, idle_usd_per_hour: float,
              full_usd_per_hour: float, capacity_tokens_per_day: float, saturated_tokens_per_day: float | None = None,
              retries: float = 0.0, tokens_per_day: float | None = None) -> BreakEven:
    r"""Where one deployment's day, :math:`F + v T`, equals the API's, :math:`p T`.

    ``hosted.breakeven_tokens_per_day`` solves it; ``hosted.implied_utilisation`` gives the load it implies.

    Parameters
    ----------
    quote : hosted.ApiPrice
        The API price, in US dollars (a quote in another currency raises ``ValueError``: it is never converted).
    prompt_tokens, output_tokens : float
        Mean lengths of a request (the mix). [token]
    idle_usd_per_hour, full_usd_per_hour : float
        The deployment's bill with no traffic and with the engine busy all the time (equal when rented). [USD/h]
    capacity_tokens_per_day : float
        Tokens one deployment serves per day (offline, or within an SLO). [token/day]
    saturated_tokens_per_day : float, optional
        Tokens per day of the engine busy all day (default ``capacity_tokens_per_day``). [token/day]
    retries : float
        Tokens generated again per delivered token; paid on both sides. [-]
    tokens_per_day : float, optional
        A traffic to price both ways (``replicas`` deployments of ``hosted.replicas_for``). [token/day]

    Notes
    -----
    :math:`F = 24\,C_{idle}`, :math:`v = 24 (C_{full} - C_{idle})(1 + \rho) / K_{sat}` and :math:`p (1 + \rho)`.

    Examples
    --------
    >>> q = hosted.ApiPrice(provider="x", input_usd=0.5, output_usd=0.5, source="user")
    >>> b = breakeven(q, 1000, 300, idle_usd_per_hour=5.0, full_usd_per_hour=5.0, capacity_tokens_per_day=5e8)
    >>> b.tokens_per_day, b.utilisation
    (240000000.0, 0.48)
    """
    reason = money.excluded_reason(quote.currency)
    if reason is not None:
        raise ValueError(f"quote: the API price of {quote.provider!r} is {reason}; state it in USD")
    s, o = float(prompt_tokens), float(output_tokens)
    saturated = capacity_tokens_per_day if saturated_tokens_per_day is None else saturated_tokens_per_day
    fixed = idle_usd_per_hour * 24.0
    variable = (full_usd_per_hour - idle_usd_per_hour) * 24.0 * 1e6 / saturated * (1 + retries)
    price = float(quote.blended(s, o))
    api_price = price * (1 + retries)
    tokens = float(hosted.breakeven_tokens_per_day(fixed, api_price, variable))
    used = float(hosted.implied_utilisation(tokens, capacity_tokens_per_day, retries)) if math.isfinite(tokens) \
        else math.inf
    extra: dict[str, Any] = {}
    if tokens_per_day is not None:
        replicas = int(hosted.replicas_for(tokens_per_day * (1 + retries), capacity_tokens_per_day))
        mine = replicas * fixed + variable * tokens_per_day / 1e6
        theirs = api_price * tokens_per_day / 1e6
        extra = dict(traffic_tokens_per_day=float(tokens_per_day), replicas=replicas, self_usd_per_day=mine,
                     api_usd_per_day=theirs, cheaper="self-host" if mine < theirs else "api")
    return BreakEven(
        api=quote, api_usd_per_million_tokens=price, tokens_per_day=tokens,
        requests_per_second=tokens / (s + o) / hosted.SECONDS_PER_DAY, utilisation=used,
        note="" if used <= 1 else "at full load this deployment costs more per token than the API: self-hosting it "
        "is never cheaper", **extra,
    )


@dataclass(frozen=True)
class Comparison:
    """One deployment's cost per (accepted) token and its break-even against a hosted API. Money in USD."""

    model: str
    gpu: str
    gpus: int
    prompt_tokens: float
    output_tokens: float
    capacity_tokens_per_day: float
    """Prompt + output tokens one deployment serves per day at capacity (offline, or within the SLO)."""
    capacity_output_tokens_per_second: float
    """Output tokens per second at capacity (speculation included). [token/s]"""
    capacity_method: str
    """``offline``, ``slo`` or either with ``+speculative``."""
    bill: Bill
    """At the effective utilisation."""
    utilisation: float
    idle: float
    retries: float
    usd_per_million_tokens: float
    """Prompt and output tokens, at the effective utilisation, retries not counted. [USD/Mtoken]"""
    usd_per_million_generated_tokens: float
    """Output tokens generated, retried ones included. [USD/Mtoken]"""
    usd_per_million_accepted_tokens: float
    """Output tokens delivered (retried ones paid, not delivered). [USD/Mtoken]"""
    breakeven: BreakEven | None
    """Against the cheapest API quote at the mix (or the one given); None without any."""
    note: str = ""


def _capacity(model: Any, gpu: Any, workload: Workload, slo: SLO | None, speculative: Any,
              options: dict[str, Any]) -> tuple[float, float, float, str, int]:
    """(requests/s, output tokens/s, engine busy share, method, GPUs) of one deployment at capacity."""
    t = serving.throughput(model, gpu, workload=workload, slo=slo, latencies=False, **options)
    rate, out, method = t.offline.requests_per_second, t.offline.tokens_per_second, "offline"
    busy = 1.0
    if t.capacity is not None:
        busy = float(hosted.implied_utilisation(t.capacity.requests_per_second, max(rate, 1e-300)))
        rate, out, method = t.capacity.requests_per_second, t.capacity.tokens_per_second, "slo"
    if speculative is not None:
        est = estimator.estimate(model, gpu, gpus=t.gpus, engine=options.get("engine", "vllm"),
                                 weights=options.get("weights"), kv_cache=options.get("kv_cache"),
                                 concurrency=max(1, round(t.offline.batch)),
                                 context=int(workload.prompt_tokens + workload.output_tokens / 2),
                                 speculative=speculative)
        gain = float(est.speculation.speedup) if est.speculation is not None and bool(est.speculation.fits) else 1.0
        rate, out, method = rate * gain, out * gain, method + "+speculative"
    return rate, out, min(busy, 1.0), method, t.gpus


def compare(
    model: Any, gpu: Any, *, prompt_tokens: float = 1024, output_tokens: float = 256, gpus: int | None = None,
    layout: str = "tp", engine: str = "vllm", weights: str | None = None, kv_cache: str | None = None,
    workload: Workload | None = None, slo: SLO | None = None, own: Owning | None = None,
    usd_per_gpu_hour: float | None = None, api: hosted.ApiPrice | None = None, tokens_per_day: float | None = None,
    utilisation: float = 1.0, idle: float = 0.0, retries: float = 0.0,
    speculative: speculation.Speculative | None = None,
) -> Comparison:
    r"""Cost per (accepted) token of one deployment and its break-even against a hosted API.

    The deployment is loaded with ``serving.throughput`` (``workload``, or fixed ``prompt_tokens`` and
    ``output_tokens``) and billed with ``bill`` at its busy share times ``ownership.effective_utilisation``;
    ``breakeven`` compares it with ``api`` (default ``hosted.cheapest`` at the mix).

    Examples
    --------
    >>> c = compare("llama-3.1-8b", "h100-sxm", prompt_tokens=1000, output_tokens=300, usd_per_gpu_hour=2.0)
    >>> c.usd_per_million_accepted_tokens >= c.usd_per_million_generated_tokens
    True
    >>> b = c.breakeven
    >>> abs(c.bill.idle_usd_per_hour * 24 - b.api_usd_per_million_tokens * b.tokens_per_day / 1e6) < 1e-9
    True
    """
    load = workload if workload is not None else Workload(rate=1.0, prompt_tokens=prompt_tokens,
                                                          output_tokens=output_tokens)
    s, o = float(load.prompt_tokens), float(load.output_tokens)
    options = {"gpus": gpus, "layout": layout, "engine": engine, "weights": weights, "kv_cache": kv_cache}
    rate, out, busy, method, count = _capacity(model, gpu, load, slo, speculative, options)
    device, _ = estimator.resolve_target(gpu, gpus)  # a system id names its GPU
    share = float(ownership.effective_utilisation(utilisation, idle))
    paid = bill(device, count, busy * share, own=own, usd_per_gpu_hour=usd_per_gpu_hour)
    per_gpu = paid.usd_per_hour / count
    capacity = rate * (s + o) * hosted.SECONDS_PER_DAY
    name = catalog.model(model).id
    quote = api if api is not None else hosted.cheapest(model, s, o)
    note = "" if quote is not None else f"no hosted API price for {name} in data/api-prices.toml"
    if capacity <= 0:
        quote, note = None, "the deployment serves no traffic (the model does not fit, or no rate meets the targets)"
    versus = None if quote is None else breakeven(
        quote, s, o, idle_usd_per_hour=paid.idle_usd_per_hour, full_usd_per_hour=paid.full_usd_per_hour,
        capacity_tokens_per_day=capacity, saturated_tokens_per_day=capacity / max(busy, 1e-300), retries=retries,
        tokens_per_day=tokens_per_day)
    return Comparison(
        model=name, gpu=device.id, gpus=count, prompt_tokens=s, output_tokens=o,
        capacity_tokens_per_day=capacity, capacity_output_tokens_per_second=out, capacity_method=method,
        bill=paid, utilisation=utilisation, idle=idle, retries=retries,
        usd_per_million_tokens=float(cost.usd_per_million_tokens(per_gpu, count, rate * (s + o), share)),
        usd_per_million_generated_tokens=float(cost.usd_per_million_tokens(per_gpu, count, out, share)),
        usd_per_million_accepted_tokens=float(ownership.usd_per_million_accepted_tokens(
            per_gpu, count, out, utilisation, idle, retries)),
        breakeven=versus, note=note,
    )


def rented_breakeven(model: Any, workload: Workload, usd_per_gpu_hour: float, gpus: int,
                     max_rate: float) -> BreakEven | None:
    """``breakeven`` of a rented replica (a shortlist row: ``gpus`` GPUs at ``usd_per_gpu_hour`` serving up to
    ``max_rate`` requests/s) against the cheapest API quote, at the workload's traffic; None without a quote,
    a price or a capacity.

    >>> w = Workload(rate=1.0, prompt_tokens=1000, output_tokens=300)
    >>> b = rented_breakeven("llama-3.1-70b", w, 2.0, 2, 5.0)
    >>> round(b.tokens_per_day / 1e6, 1), b.cheaper
    (499.2, 'api')
    """
    s, o = float(workload.prompt_tokens), float(workload.output_tokens)
    quote = hosted.cheapest(model, s, o)
    if quote is None or not (math.isfinite(usd_per_gpu_hour) and max_rate > 0):
        return None
    hourly = usd_per_gpu_hour * gpus
    return breakeven(quote, s, o, idle_usd_per_hour=hourly, full_usd_per_hour=hourly,
                     capacity_tokens_per_day=max_rate * (s + o) * hosted.SECONDS_PER_DAY,
                     tokens_per_day=workload.rate * (s + o) * hosted.SECONDS_PER_DAY)
