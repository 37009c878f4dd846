r"""Cost of owning GPUs, all in: the purchase amortised over a life, electricity times PUE, hosting; and the
cost of an accepted token under utilisation, idle time and retries, in any currency.

An owned deployment costs per hour

.. math:: C = \underbrace{\frac{n P}{8760}\,\frac{r}{1 - (1 + r)^{-L}}}_{\text{capital}}
          + \underbrace{\frac{\bar W n\,\mathrm{PUE}}{1000}\,e}_{\text{electricity}}
          + \underbrace{\frac{k\,h}{730}}_{\text{hosting}}

(:math:`P` purchase price per GPU, :math:`L` life in years, :math:`r` yearly cost of capital, the straight
line :math:`nP/(8760 L)` at :math:`r = 0`; :math:`\bar W` the mean draw of one GPU from ``cost.average_power``,
:math:`e` the price of a kWh; :math:`k` kW (or rack units) hosted at :math:`h` per kW-month (or per rack
unit-month)). A rented one costs its GPU-hour price. Either bill becomes a price per token with
``cost.usd_per_million_tokens`` at the *effective utilisation* :math:`u(1 - i)` (load :math:`u` while
serving, share :math:`i` of paid hours idle), and a price per *accepted* (delivered output) token by the
factor :math:`1 + \rho` of retries (the tokens of retried requests are paid and thrown away).

Defaults (purchase quotes, PUE, electricity, colocation, life) come from ``data/ownership.toml``, each with
its source and date; a GPU without a purchase quote has none (``None`` with a reason, never a guess).
Money is in US dollars; ``ExchangeRate`` converts any figure at a rate and a date the user states (no
network).

Deliberate omissions: staff, networking, host CPUs and storage (add them to the purchase price or the
hosting rate), taxes, residual (resale) value, and price changes over the life.

References
----------
.. [1] Capital recovery factor (equivalent annual cost of an investment), e.g. R. Brealey, S. Myers and
   F. Allen, *Principles of Corporate Finance*, ch. 6 (equivalent annual annuities).
.. [2] The Green Grid, "PUE: a comprehensive examination of the metric," White Paper 49 (2012).
"""

from __future__ import annotations

import datetime
import re
import statistics
import tomllib
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpusizer import catalog, cost, datafiles
from gpusizer import currency as money
from gpusizer.checks import non_negative_array, positive_array, scalar_or_array
from gpusizer.currency import Currency

__all__ = [
    "HOURS_PER_YEAR",
    "ColocationRate",
    "ElectricityPrice",
    "ExchangeRate",
    "GpuPurchase",
    "LifePolicy",
    "OwnershipTable",
    "PueSurvey",
    "PurchaseQuote",
    "amortised_usd_per_hour",
    "effective_utilisation",
    "electricity_usd_per_hour",
    "exchange_rate",
    "hosting_usd_per_hour",
    "load_ownership",
    "ownership_table",
    "purchase_price",
    "usd_per_million_accepted_tokens",
]

#: Hours in a year, 12 x ``cost.HOURS_PER_MONTH`` (365 days). [h]
HOURS_PER_YEAR = 12 * cost.HOURS_PER_MONTH


# --- records --------------------------------------------------------------------------------------


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class _Sourced(_Record):
    id: str
    basis: str
    """What the figure is and how it follows from the source."""
    source: str
    """Page the figure was read from (URL)."""
    as_of: datetime.date | None = None
    """Date the source gives for its figure."""
    checked: datetime.date
    """Date the figure was copied into the table."""


class PurchaseQuote(_Record):
    """One purchase price of one GPU, where and when it was read."""

    amount: Annotated[float, Field(gt=0)]
    """Price of one GPU (card or module), in ``currency`` (US dollars unless it says otherwise). [currency]"""
    kind: Literal["msrp", "estimate", "retail", "user"]
    """``msrp`` (vendor launch price), ``estimate`` (analyst or press figure), ``retail`` (a listing) or ``user``."""
    provider: str
    source: str
    as_of: datetime.date | None = None
    checked: datetime.date | None = None
    currency: Currency = "USD"
    """ISO 4217 code of the price; a quote not in USD is kept but never converted: ``typical`` leaves it out."""


class GpuPurchase(_Record):
    """Purchase quotes of one GPU; ``typical`` is their median."""

    id: str
    """Catalogue id of the GPU."""
    quotes: tuple[PurchaseQuote, ...] = Field(min_length=1)

    @property
    def typical(self) -> float:
        """Median of the US-dollar quotes; ``ValueError`` when every quote is in another currency. [USD]"""
        values = [q.amount for q in self.quotes if q.currency == money.BASE]
        if not values:
            others = ", ".join(sorted({q.currency for q in self.quotes}))
            raise ValueError(f"{self.id}: no purchase quote in USD (quotes in {others} are not converted)")
        return float(statistics.median(values))


class PueSurvey(_Sourced):
    """A facility power usage effectiveness from a survey."""

    value: Annotated[float, Field(ge=1)]
    """Total facility power over IT power. [-]"""


class ElectricityPrice(_Sourced):
    """An average price of electricity in one region and sector."""

    usd_per_kwh: Annotated[float, Field(gt=0)]
    """[USD/kWh]"""
    currency: Currency = "USD"
    """ISO 4217 code of the price; only US dollars are accepted, since the bill is computed in US dollars."""


class ColocationRate(_Sourced):
    """A colocation rate: per kW of committed IT power per month, or per cabinet per month."""

    usd_per_kw_month: Annotated[float, Field(gt=0)] | None = None
    """[USD/(kW month)]"""
    usd_per_cabinet_month: Annotated[float, Field(gt=0)] | None = None
    """[USD/month]"""
    cabinet_rack_units: Annotated[int, Field(gt=0)] | None = None
    """Rack units of that cabinet. [U]"""
    currency: Currency = "USD"
    """ISO 4217 code of the rate; only US dollars are accepted, since the bill is computed in US dollars."""

    @model_validator(mode="after")
    def _one_kind(self) -> ColocationRate:
        per_kw = self.usd_per_kw_month is not None
        per_cabinet = self.usd_per_cabinet_month is not None and self.cabinet_rack_units is not None
        if per_kw == per_cabinet:
            raise ValueError(f"colocation rate {self.id!r}: give usd_per_kw_month, or usd_per_cabinet_month and "
                             "cabinet_rack_units")
        return self

    @property
    def usd_per_rack_unit_month(self) -> float | None:
        """The cabinet's rate shared by its rack units; None for a per-kW rate. [USD/(U month)]"""
        if self.usd_per_cabinet_month is None or self.cabinet_rack_units is None:
            return None
        return self.usd_per_cabinet_month / self.cabinet_rack_units


class LifePolicy(_Sourced):
    """A straight-line depreciation life disclosed by a GPU operator."""

    years: Annotated[float, Field(gt=0)]
    """[year]"""


class OwnershipTable(_Record):
    """``data/ownership.toml``: every default of the cost of ownership, keyed by id, and the default ids."""

    purchases: dict[str, GpuPurchase]
    pue: dict[str, PueSurvey]
    electricity: dict[str, ElectricityPrice]
    colocation: dict[str, ColocationRate]
    life: dict[str, LifePolicy]
    defaults: dict[str, str]
    """Default record id of ``pue``, ``electricity``, ``colocation`` and ``life``."""

    @model_validator(mode="after")
    def _defaults_exist(self) -> OwnershipTable:
        for section in ("pue", "electricity", "colocation", "life"):
            name = self.defaults.get(section)
            if name not in getattr(self, section):
                raise ValueError(f"{section}: default {name!r} is not one of its records")
        for section in ("electricity", "colocation"):
            for key, record in getattr(self, section).items():
                if (reason := money.excluded_reason(record.currency)) is not None:
                    raise ValueError(f"{section} {key!r} is {reason}; record it in USD")
        for record in self.purchases.values():
            record.typical  # noqa: B018 - every purchase entry must yield a USD price
        return self

    def default(self, section: str) -> Any:
        """The default record of ``section`` (``pue``, ``electricity``, ``colocation`` or ``life``)."""
        return getattr(self, section)[self.defaults[section]]


def _keyed(records: list[Any], kind: Any, what: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for entry in records:
        record = kind.model_validate(entry)
        key = getattr(record, "id")  # noqa: B009 - every keyed record has an id
        if key in out:
            raise ValueError(f"duplicate {what} entry {key!r}")
        out[key] = record
    return out


def load_ownership(path: str | Path | None = None) -> OwnershipTable:
    """Read and validate an ownership table (the bundled ``data/ownership.toml`` when ``path`` is None)."""
    source = datafiles.bundled("ownership.toml") if path is None else Path(path)
    data = tomllib.loads(datafiles.read_text(source, what="ownership table"))
    sections = {"pue": ("survey", PueSurvey), "electricity": ("price", ElectricityPrice),
                "colocation": ("rate", ColocationRate), "life": ("policy", LifePolicy)}
    tables = {name: data.get(name, {}) for name in sections}
    return OwnershipTable(
        purchases=_keyed(data.get("purchase", []), GpuPurchase, "purchase"),
        **{name: _keyed(tables[name].get(key, []), kind, name) for name, (key, kind) in sections.items()},
        defaults={name: tables[name].get("default", "") for name in sections},
    )


@cache
def ownership_table() -> OwnershipTable:
    """The bundled ownership table."""
    return load_ownership()


def purchase_price(gpu: Any) -> tuple[float | None, str]:
    """Typical purchase price of one ``gpu`` (median of its quotes) and where it comes from.

    Returns ``(None, reason)`` for a GPU without a quote: nothing is estimated.

    Examples
    --------
    >>> purchase_price("h100-sxm")[0]
    27500.0
    >>> purchase_price("l4")[0] is None
    True
    """
    gpu_id = catalog.gpu(gpu).id
    record = ownership_table().purchases.get(gpu_id)
    if record is None:
        return None, f"no purchase quote for {gpu_id} in data/ownership.toml; pass one (--purchase-price USD)"
    return record.typical, "; ".join(f"{q.amount:,.0f} {q.currency} {q.kind}, {q.provider}" for q in record.quotes)


# --- formulas -------------------------------------------------------------------------------------


def amortised_usd_per_hour(purchase_usd: Any, life_years: Any, cost_of_capital: Any = 0.0) -> Any:
    r"""Capital cost of one GPU per hour: its price spread over its life, with interest.

    Parameters
    ----------
    purchase_usd : array_like
        Price of one GPU. [USD]
    life_years : array_like
        Years of service it is paid off over. [year]
    cost_of_capital : array_like
        Yearly interest rate of the money (0 gives the straight line). [1/year]

    Returns
    -------
    numeric
        :math:`\frac{P}{8760}\,\frac{r}{1-(1+r)^{-L}}`, and :math:`P/(8760 L)` at :math:`r = 0` [1]_. [USD/h]

    Examples
    --------
    >>> amortised_usd_per_hour(8760.0, 4)
    0.25
    >>> round(amortised_usd_per_hour(8760.0, 1, 0.10), 6)
    1.1
    """
    price = positive_array(purchase_usd, "purchase_usd")
    life = positive_array(life_years, "life_years")
    rate = non_negative_array(cost_of_capital, "cost_of_capital")
    # 1 - (1 + r)^-L as -expm1(-L log1p(r)); below r L = 1e-6 the series 1/L + r (L + 1)/(2 L) (error ~ (r L)^2)
    small = rate * life < 1e-6
    paid_off = np.where(small, 1.0, -np.expm1(-life * np.log1p(rate)))
    factor = np.where(small, 1 / life + rate * (life + 1) / (2 * life), rate / paid_off)
    return scalar_or_array(price * factor / HOURS_PER_YEAR)


def electricity_usd_per_hour(watts: Any, gpus: Any, usd_per_kwh: Any, pue: Any = 1.0) -> Any:
    r"""Electricity bill per hour of ``gpus`` GPUs drawing ``watts`` each: :math:`W n\,\mathrm{PUE}\,e/1000`. [USD/h]

    ``watts`` is a mean draw (``cost.average_power``); ``pue`` adds the facility's cooling and losses [2]_.

    Examples
    --------
    >>> round(electricity_usd_per_hour(315.0, 8, 0.10, pue=1.5), 4)
    0.378
    """
    pue_ = non_negative_array(pue, "pue")
    if np.any(pue_ < 1):
        raise ValueError(f"pue must be >= 1, got {pue!r}")
    energy = positive_array(watts, "watts") * positive_array(gpus, "gpus") * pue_ / 1000.0
    return scalar_or_array(energy * positive_array(usd_per_kwh, "usd_per_kwh"))


def hosting_usd_per_hour(amount: Any, usd_per_month: Any) -> Any:
    r"""Hosting rent per hour of ``amount`` kW (or rack units) at ``usd_per_month`` each: :math:`k h / 730`. [USD/h]

    A rate of 0 is hosting at home or in a room already paid for.

    Examples
    --------
    >>> hosting_usd_per_hour(5.6, 184.06) * 730
    1030.736
    """
    rent = non_negative_array(usd_per_month, "usd_per_month")
    return scalar_or_array(positive_array(amount, "amount") * rent / cost.HOURS_PER_MONTH)


def effective_utilisation(utilisation: Any = 1.0, idle: Any = 0.0) -> Any:
    r"""Share of paid hours at the modelled load: :math:`u (1 - i)`. [-]

    Parameters
    ----------
    utilisation : array_like
        Mean load while the deployment serves, as a share of the modelled throughput, in (0, 1]. [-]
    idle : array_like
        Share of paid hours with no traffic at all (nights, weekends, standby), in [0, 1). [-]

    Examples
    --------
    >>> effective_utilisation(0.8, 0.25)
    0.6000000000000001
    """
    u = non_negative_array(utilisation, "utilisation")
    i = non_negative_array(idle, "idle")
    if np.any(~((u > 0) & (u <= 1))):
        raise ValueError(f"utilisation must be in (0, 1], got {utilisation!r}")
    if np.any(~((i >= 0) & (i < 1))):
        raise ValueError(f"idle must be in [0, 1), got {idle!r}")
    return scalar_or_array(u * (1 - i))


def usd_per_million_accepted_tokens(
    usd_per_gpu_hour: Any, gpus: Any, tokens_per_second: Any, utilisation: Any = 1.0, idle: Any = 0.0,
    retries: Any = 0.0,
) -> Any:
    r"""Price of a million delivered tokens, retried ones paid but not delivered.

    Parameters
    ----------
    usd_per_gpu_hour, gpus, tokens_per_second
        As for ``cost.usd_per_million_tokens`` (rented or owned GPU-hour, GPUs, tokens generated per second
        at the modelled load; output tokens alone for a price per accepted output token).
    utilisation, idle : array_like
        ``effective_utilisation``'s load while serving and idle share of paid hours. [-]
    retries : array_like
        Tokens generated again per delivered token (a failed request's tokens, retried), >= 0. [-]

    Returns
    -------
    numeric
        :math:`(1 + \rho)\,c(p, n, X, u(1 - i))` with :math:`c` = ``cost.usd_per_million_tokens``. With
        ``utilisation=1``, ``idle=0``, ``retries=0`` it is :math:`c(p, n, X)`. [USD/Mtoken]

    Examples
    --------
    >>> round(usd_per_million_accepted_tokens(3.6, 1, 1000.0, retries=0.25), 6)
    1.25
    """
    rho = non_negative_array(retries, "retries")
    share = effective_utilisation(utilisation, idle)
    return scalar_or_array(np.asarray(cost.usd_per_million_tokens(usd_per_gpu_hour, gpus, tokens_per_second,
                                                                  share)) * (1 + rho))


# --- currency -------------------------------------------------------------------------------------


class ExchangeRate(_Record):
    """Units of ``currency`` per US dollar on the date the user read it (no network: the user states it)."""

    currency: Annotated[str, Field(pattern=r"^[A-Z]{3}$")]
    """ISO 4217 code, e.g. ``EUR``."""
    per_usd: Annotated[float, Field(gt=0)]
    """Units of ``currency`` one US dollar buys. [currency/USD]"""
    as_of: datetime.date
    """Date of the rate."""

    def convert(self, usd: Any) -> Any:
        """``usd`` in ``currency``: :math:`x\\,q`."""
        return scalar_or_array(np.asarray(usd, dtype=float) * self.per_usd)


def exchange_rate(currency: str, text: str) -> ExchangeRate:
    """An ``ExchangeRate`` from ``RATE@YYYY-MM-DD`` (``0.92@2026-12-01``: 0.92 ``currency`` per USD that day).

    Raises
    ------
    ValueError
        The text is not a positive rate and an ISO date, or the currency is not a three-letter code.

    Examples
    --------
    >>> exchange_rate("eur", "0.92@2026-12-01").convert(100.0)
    92.0
    """
    match = re.fullmatch(r"\s*([0-9.eE+-]+)\s*@\s*(\d{4}-\d{2}-\d{2})\s*", str(text))
    if match is None:
        raise ValueError(f"exchange rate must be RATE@YYYY-MM-DD such as 0.92@2026-12-01, got {text!r}")
    try:
        rate, day = float(match.group(1)), datetime.date.fromisoformat(match.group(2))
    except ValueError as error:
        raise ValueError(f"exchange rate {text!r}: {error}") from None
    return ExchangeRate(currency=str(currency).strip().upper(), per_usd=rate, as_of=day)
