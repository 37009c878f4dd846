r"""Cost and energy per token: dollars and joules from GPU-hours, throughput and a power model.

The money side is arithmetic on a price per GPU-hour: ``usd_per_million_tokens``,
``tokens_per_dollar``, ``usd_per_month``, and ``phase_usd_per_million_tokens``, which splits the
bill between input (prefill) and output (decode) tokens by the engine time each phase takes.
Prices come from the caller or from ``data/prices.toml``: dated quotes with their sources, from
which ``GpuPrice`` derives a min / typical / max (``prices``, ``price``).

The energy side is ``average_power`` (a GPU's mean draw between its idle and its serving power,
weighted by the share of time the engine runs steps) and ``joules_per_token``. The two fractions of
TDP come from measurements (``data/power.toml``), because TDP itself is the wrong average: a GPU
serving an LLM draws 25-75 % of it.

Deliberate omissions: egress, storage and CPU hosts (a GPU-hour is the whole price here), reserved-
capacity discounts beyond the quotes, and facility overhead other than a PUE factor.

References
----------
.. [1] R. Pope et al., "Efficiently scaling transformer inference," MLSys 2023, arXiv:2211.05102
   (cost per token from chip-seconds).
.. [2] SemiAnalysis InferenceX power readings, https://github.com/SemiAnalysisAI/InferenceX/issues/870
   and /issues/828.
"""

from __future__ import annotations

import datetime
import statistics
import tomllib
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from gpusizer import catalog, datafiles
from gpusizer import currency as money
from gpusizer.checks import instance, one_of, positive_array, scalar_or_array
from gpusizer.currency import Currency

__all__ = [
    "HOURS_PER_MONTH",
    "POWER_METHODS",
    "GpuPrice",
    "PowerFraction",
    "PowerModel",
    "PriceQuote",
    "average_power",
    "joules_per_token",
    "load_power",
    "load_prices",
    "phase_usd_per_million_tokens",
    "power_methods",
    "power_model",
    "price",
    "prices",
    "tokens_per_dollar",
    "unpriced",
    "usd_per_million_tokens",
    "usd_per_month",
]

#: Hours in an average month, 8760 / 12, the convention of cloud price pages (monthly = 730 h). [h]
HOURS_PER_MONTH = 730.0


# --- price records --------------------------------------------------------------------------------


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


Tier = Literal["on-demand", "reserved", "spot", "hyperscaler", "listed", "user"]


class PriceQuote(_Record):
    """One price of one GPU-hour, where and when it was read."""

    per_hour: Annotated[float, Field(gt=0)]
    """Price of one GPU for one hour, in ``currency`` (US dollars unless it says otherwise). [currency/h]"""
    tier: Tier
    """``on-demand``, ``reserved``, ``spot``, ``hyperscaler``, ``listed`` (disputed label) or ``user``."""
    provider: str
    source: str
    """Page the price was read from (URL), or ``"user"``."""
    as_of: datetime.date | None = None
    """Date the source gives for its price."""
    checked: datetime.date | None = None
    """Date the quote was copied into the table."""
    currency: Currency = "USD"
    """ISO 4217 code of the price (``gpusizer.currency.CODES``); a quote not in USD is kept but never converted: it is
    left out of ``min``, ``typical`` and ``max`` (``GpuPrice.excluded``)."""


#: Tiers each derived figure uses: spot (interruptible) and hyperscaler list prices are kept for
#: reference only.
TIERS_FOR = {
    "min": ("on-demand", "reserved", "listed", "user"),
    "typical": ("on-demand", "listed", "user"),
    "max": ("on-demand", "listed", "user"),
}


class GpuPrice(_Record):
    """Quotes for one GPU and the three figures derived from them (min, median, max)."""

    id: str
    """Catalogue id of the GPU."""
    quotes: tuple[PriceQuote, ...] = Field(min_length=1)

    @property
    def currency(self) -> str:
        """The currency of ``min``, ``typical`` and ``max``: always US dollars (``gpusizer.currency.BASE``)."""
        return money.BASE

    @property
    def currencies(self) -> tuple[str, ...]:
        """ISO 4217 codes of the on-demand, listed or user quotes (a typical price derives in each): USD first."""
        return tuple(sorted({q.currency for q in self.quotes if q.tier in TIERS_FOR["typical"]},
                            key=lambda c: (c != money.BASE, c)))

    @property
    def in_usd(self) -> bool:
        """Whether ``min``, ``typical`` and ``max`` exist; if not, every US-dollar figure treats the GPU as unpriced."""
        return money.BASE in self.currencies

    @property
    def excluded(self) -> tuple[tuple[PriceQuote, str], ...]:
        """Quotes left out of every derived figure for their currency, each with the reason."""
        return tuple((q, reason) for q in self.quotes if (reason := money.excluded_reason(q.currency)))

    def figure(self, level: str, code: str = money.BASE) -> float:
        """``min``, ``typical`` or ``max`` of the quotes in ``code`` alone, never converted (else ValueError). [code/h]

        Examples
        --------
        >>> q = dict(tier="on-demand", provider="p", source="s", currency="CNY")
        >>> GpuPrice(id="x", quotes=(PriceQuote(per_hour=6.0, **q), PriceQuote(per_hour=8.0, **q))
        ...          ).figure("typical", "CNY")
        7.0
        """
        one_of(level, "level", tuple(TIERS_FOR))
        values = [q.per_hour for q in self.quotes if q.tier in TIERS_FOR[level] and q.currency == money.check(code)]
        if not values:
            others = sorted({q.currency for q in self.quotes} - {code})
            left = f" (quotes in {', '.join(others)} are not converted)" if others else ""
            raise ValueError(f"{self.id}: no on-demand, listed or user quote in {code} to derive a {level} price "
                             f"from{left}")
        return {"min": min, "max": max}.get(level, lambda v: float(statistics.median(v)))(values)

    @property
    def min(self) -> float:
        """Lowest on-demand, reserved or listed quote in US dollars. [USD/h]"""
        return self.figure("min")

    @property
    def typical(self) -> float:
        """Median of the on-demand and listed quotes in US dollars. [USD/h]"""
        return self.figure("typical")

    @property
    def max(self) -> float:
        """Highest on-demand or listed quote in US dollars. [USD/h]"""
        return self.figure("max")

    @classmethod
    def user(cls, gpu_id: str, usd_per_hour: float) -> GpuPrice:
        """A price the user states: min, typical and max are that price."""
        return cls(id=gpu_id, quotes=(PriceQuote(per_hour=usd_per_hour, tier="user", provider="user",
                                                 source="user"),))


def load_prices(path: str | Path | None = None) -> dict[str, GpuPrice]:
    """Read and validate a price table (the bundled ``data/prices.toml`` when ``path`` is None)."""
    source = datafiles.bundled("prices.toml") if path is None else Path(path)
    data = tomllib.loads(datafiles.read_text(source, what="price table"))
    out: dict[str, GpuPrice] = {}
    for entry in data.get("gpu", []):
        record = GpuPrice.model_validate(entry)
        if record.id in out:
            raise ValueError(f"duplicate price entry for gpu {record.id!r}")
        if not record.currencies:  # every entry must yield a typical price, in USD or in its quotes' currency
            raise ValueError(f"{record.id}: no on-demand, listed or user quote to derive a typical price from")
        out[record.id] = record
    return out


@cache
def _bundled_prices() -> dict[str, GpuPrice]:
    return load_prices()


def prices(overrides: Mapping[str, float] | None = None) -> dict[str, GpuPrice]:
    """The bundled price table with ``overrides`` (GPU id or alias -> USD per GPU-hour) replacing entries.

    Raises
    ------
    KeyError
        An override names an unknown GPU.
    ValueError
        An override is not a positive number.

    Examples
    --------
    >>> table = prices({"h100": 2.0})
    >>> table["h100-sxm"].typical, table["h100-sxm"].quotes[0].tier
    (2.0, 'user')
    """
    if overrides is not None:
        instance(overrides, "overrides", Mapping)
    table = dict(_bundled_prices())
    for name, value in (overrides or {}).items():
        gpu_id = catalog.gpu(name).id
        amount = float(positive_array(value, f"price of {name}"))
        table[gpu_id] = GpuPrice.user(gpu_id, amount)
    return table


def price(gpu: Any, level: str = "typical", overrides: Mapping[str, float] | None = None, *,
          how: str | None = None) -> float:
    """USD per GPU-hour of ``gpu`` at ``level`` (``min``, ``typical`` or ``max``).

    Raises
    ------
    KeyError
        The GPU has no US-dollar price: none, or quotes only in another currency (the message says which, and
        how to pass one: ``how`` when given, as the CLI names its flag, else this library's arguments).

    Examples
    --------
    >>> price("h100-sxm", overrides={"h100-sxm": 2.49})
    2.49
    """
    one_of(level, "level", tuple(TIERS_FOR))
    gpu_id = catalog.gpu(gpu).id
    table = prices(overrides)
    if gpu_id not in table or not table[gpu_id].in_usd:
        codes = table[gpu_id].currencies if gpu_id in table else ()
        why = f"{gpu_id} is priced only in {', '.join(codes)}: {money.excluded_reason(codes[0])}" if codes else \
            f"no price for gpu {gpu_id!r}"
        how = how or f"overrides={{{gpu_id!r}: 2.0}}, or usd_per_gpu_hour=2.0 in selfhost.bill/compare"
        raise KeyError(f"{why}; pass one in USD per GPU-hour (e.g. {how}); priced in USD: "
                       f"{', '.join(sorted(g for g, r in table.items() if r.in_usd))}")
    return float(getattr(table[gpu_id], level))


def unpriced() -> tuple[str, ...]:
    """Catalogue GPUs without a bundled rental price in any currency, in catalogue order.

    These cards had no public, dated per-GPU-hour price when ``data/prices.toml`` was compiled;
    pass a price for them (``prices({gpu: usd_per_hour})``, ``--price gpu=USD``). A card priced only in
    another currency is not listed, but has no US-dollar price either (``GpuPrice.in_usd``).

    Examples
    --------
    >>> "h100-sxm" in unpriced(), "h20" in unpriced()
    (False, True)
    """
    table = _bundled_prices()
    return tuple(g.id for g in catalog.gpus() if g.id not in table)


# --- money ----------------------------------------------------------------------------------------


def usd_per_million_tokens(usd_per_gpu_hour: Any, gpus: Any, tokens_per_second: Any, utilisation: Any = 1.0) -> Any:
    r"""Price of a million tokens from a GPU-hour price and a sustained throughput.

    Parameters
    ----------
    usd_per_gpu_hour : array_like
        Price of one GPU for one hour. [USD/h]
    gpus : array_like
        GPUs paid for. [-]
    tokens_per_second : array_like
        Tokens served per second while the GPUs work at the modelled load. [token/s]
    utilisation : array_like
        Share of the paid hours spent at that load (idle hours cost the same). [-]

    Returns
    -------
    numeric
        Cost of :math:`10^6` tokens. [USD/Mtoken]

    Notes
    -----
    .. math:: c = \frac{p \, n}{3600 \, X \, u} \times 10^6

    with :math:`p` the GPU-hour price, :math:`n` the GPUs, :math:`X` the throughput and :math:`u` the
    utilisation of paid time [1]_.

    Examples
    --------
    >>> round(usd_per_million_tokens(2.49, 1, 1000.0), 4)
    0.6917
    """
    price_ = positive_array(usd_per_gpu_hour, "usd_per_gpu_hour")
    used = positive_array(utilisation, "utilisation")
    if np.any(used > 1):
        raise ValueError(f"utilisation must be <= 1, got {utilisation!r}")
    rate = np.asarray(tokens_per_second, dtype=float)
    with np.errstate(divide="ignore"):
        return scalar_or_array(price_ * positive_array(gpus, "gpus") / (3600.0 * rate * used) * 1e6)


def tokens_per_dollar(usd_per_gpu_hour: Any, gpus: Any, tokens_per_second: Any, utilisation: Any = 1.0) -> Any:
    r"""Tokens one dollar buys: :math:`3600\,X\,u / (p\,n)`. [token/USD]

    Examples
    --------
    >>> tokens_per_dollar(3.6, 1, 1.0)
    1000.0
    """
    return scalar_or_array(1e6 / np.asarray(usd_per_million_tokens(usd_per_gpu_hour, gpus, tokens_per_second,
                                                                   utilisation)))


def usd_per_month(usd_per_gpu_hour: Any, gpus: Any, replicas: Any = 1, hours: Any = HOURS_PER_MONTH) -> Any:
    r"""Rent of ``replicas`` deployments of ``gpus`` GPUs for a month: :math:`p\,n\,r\,h`. [USD]

    Examples
    --------
    >>> usd_per_month(2.0, 8, replicas=2)
    23360.0
    """
    paid = positive_array(usd_per_gpu_hour, "usd_per_gpu_hour") * positive_array(gpus, "gpus")
    return scalar_or_array(paid * np.asarray(replicas) * np.asarray(hours, dtype=float))


def phase_usd_per_million_tokens(
    usd_per_hour: Any, input_tokens_per_second: Any, output_tokens_per_second: Any, prefill_share: Any,
    decode_share: Any,
) -> tuple[Any, Any]:
    r"""Input and output prices that split a deployment's bill by the engine time of each phase.

    Parameters
    ----------
    usd_per_hour : array_like
        Price of the whole deployment for one hour. [USD/h]
    input_tokens_per_second, output_tokens_per_second : array_like
        Prompt and generated tokens served per second. [token/s]
    prefill_share, decode_share : array_like
        Shares of engine time spent on prompt and on decode tokens (``serving.load``). Idle time is
        shared in the same proportion. [-]

    Returns
    -------
    tuple
        ``(input, output)`` cost of :math:`10^6` tokens of each kind. [USD/Mtoken]

    Notes
    -----
    .. math:: c_{in} = \frac{P}{3600 X_{in}} \frac{\rho_p}{\rho_p + \rho_d} 10^6, \qquad
              c_{out} = \frac{P}{3600 X_{out}} \frac{\rho_d}{\rho_p + \rho_d} 10^6

    Examples
    --------
    >>> phase_usd_per_million_tokens(3.6, 1000.0, 100.0, 0.25, 0.75)
    (0.25, 7.5)
    """
    p = np.asarray(prefill_share, dtype=float)
    d = np.asarray(decode_share, dtype=float)
    per_second = positive_array(usd_per_hour, "usd_per_hour") / 3600.0
    total = np.maximum(p + d, 1e-300)
    with np.errstate(divide="ignore", invalid="ignore"):
        cin = per_second * (p / total) / np.asarray(input_tokens_per_second, dtype=float) * 1e6
        cout = per_second * (d / total) / np.asarray(output_tokens_per_second, dtype=float) * 1e6
    return scalar_or_array(cin), scalar_or_array(cout)


# --- energy ---------------------------------------------------------------------------------------


class PowerFraction(_Record):
    """A GPU's draw in one state as a fraction of its TDP, with a band and its provenance."""

    typical: Annotated[float, Field(gt=0, le=1)]
    low: Annotated[float, Field(gt=0, le=1)]
    high: Annotated[float, Field(gt=0, le=1)]
    basis: str
    """How the fractions follow from the sources."""
    source: tuple[str, ...]
    as_of: datetime.date
    checked: datetime.date


class PowerModel(_Record):
    """Idle and serving power fractions of TDP (``data/power.toml``)."""

    idle: PowerFraction
    serving: PowerFraction


def load_power(path: str | Path | None = None) -> PowerModel:
    """Read the power fractions (the bundled ``data/power.toml`` when ``path`` is None)."""
    source = datafiles.bundled("power.toml") if path is None else Path(path)
    return PowerModel.model_validate(tomllib.loads(datafiles.read_text(source, what="power table")))


@cache
def power_model() -> PowerModel:
    """The bundled power fractions."""
    return load_power()


def _measured_fractions(tdp: Any, busy: Any, idle_fraction: Any, serving_fraction: Any) -> Any:
    return np.asarray(tdp) * (idle_fraction + (np.asarray(serving_fraction) - idle_fraction) * np.asarray(busy))


def _linear_utilisation(tdp: Any, busy: Any, idle_fraction: Any, serving_fraction: Any) -> Any:
    return np.asarray(tdp) * (idle_fraction + (1 - np.asarray(idle_fraction)) * np.asarray(busy))


#: Average-power models by name. ``measured-fractions`` interpolates between measured idle and
#: serving draws; ``linear-utilisation`` is the textbook :math:`P_{idle} + (TDP - P_{idle})\,u`,
#: which reaches TDP at full load and so overstates serving power by about 2x.
POWER_METHODS: dict[str, Callable[..., Any]] = {
    "measured-fractions": _measured_fractions,
    "linear-utilisation": _linear_utilisation,
}


def power_methods() -> tuple[str, ...]:
    """Names accepted by ``average_power(method=...)``."""
    return tuple(POWER_METHODS)


def average_power(tdp: Any, busy: Any, *, idle_fraction: Any = None, serving_fraction: Any = None,
                  method: str = "measured-fractions") -> Any:
    r"""Mean electrical power of one GPU serving an LLM.

    Parameters
    ----------
    tdp : array_like
        Board or module power limit (``GPU.tdp``). [W]
    busy : array_like
        Share of time the engine runs steps (``serving.load(...).busy``). [-]
    idle_fraction, serving_fraction : array_like, optional
        Draw with the model loaded and no request, and while serving continuously, as fractions of
        TDP; default the typical values of ``data/power.toml`` (0.20 and 0.45). [-]
    method : str
        ``"measured-fractions"`` or ``"linear-utilisation"`` (``power_methods()``).

    Returns
    -------
    numeric
        Average power per GPU. [W]

    Notes
    -----
    .. math:: P = TDP\,[f_{idle} + (f_{serve} - f_{idle})\,\beta]

    with :math:`\beta` the busy share. Measured serving draws are 25-75 % of TDP [2]_, not TDP.

    Examples
    --------
    >>> average_power(700.0, 1.0)
    315.0
    >>> average_power(700.0, 0.0)
    140.0
    """
    if method not in POWER_METHODS:
        raise ValueError(f"method must be one of {', '.join(POWER_METHODS)}, got {method!r}")
    model = power_model()
    idle = model.idle.typical if idle_fraction is None else idle_fraction
    serve = model.serving.typical if serving_fraction is None else serving_fraction
    share = np.asarray(busy, dtype=float)
    if np.any((share < 0) | (share > 1)):
        raise ValueError(f"busy must be between 0 and 1, got {busy!r}")
    return scalar_or_array(POWER_METHODS[method](positive_array(tdp, "tdp"), share, idle, serve))


def joules_per_token(power: Any, gpus: Any, tokens_per_second: Any, pue: Any = 1.0) -> Any:
    r"""Energy per token: :math:`E = P\,n\,\mathrm{PUE} / X`. [J/token]

    Parameters
    ----------
    power : array_like
        Average power of one GPU (``average_power``). [W]
    gpus : array_like
        GPUs drawing it. [-]
    tokens_per_second : array_like
        Tokens served per second. [token/s]
    pue : array_like
        Facility power usage effectiveness; 1 counts the GPUs alone. [-]

    Examples
    --------
    >>> joules_per_token(315.0, 8, 2520.0)
    1.0
    """
    with np.errstate(divide="ignore"):
        return scalar_or_array(np.asarray(power, dtype=float) * np.asarray(gpus) * np.asarray(pue, dtype=float)
                               / np.asarray(tokens_per_second, dtype=float))
