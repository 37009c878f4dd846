r"""Hosted APIs: public per-million-token prices of the open models, and the traffic at which self-hosting
becomes the cheaper of the two.

``data/api-prices.toml`` holds dated, sourced quotes (input and output priced separately) per catalogue
model; ``api_prices``, ``quotes`` and ``cheapest`` read them. ``blended_usd_per_million_tokens`` prices the
prompt/output mix of a workload; ``breakeven_tokens_per_day`` is where a self-hosted deployment's day,
a fixed bill plus a cost per token, equals the API's:

.. math:: F + v T = p T \quad\Rightarrow\quad T^* = \frac{F}{p - v}

(:math:`F` the deployment's bill per day, :math:`v` its cost per token that grows with traffic, the
electricity above idle of an owned one, :math:`p` the API's blended price per token; no break-even when
:math:`p \le v`). Retried requests are paid on both sides. ``replicas_for`` sizes a self-hosted fleet for a
traffic.

Deliberate omissions: volume discounts, batch and cached-input tiers, rate limits, and the API's latency
(compare speeds with ``serving``).
"""

from __future__ import annotations

import datetime
import tomllib
from functools import cache
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from gpusizer import catalog, datafiles
from gpusizer import currency as money
from gpusizer.checks import non_negative_array, positive_array, scalar_or_array
from gpusizer.currency import Currency

__all__ = [
    "SECONDS_PER_DAY",
    "ApiPrice",
    "ModelApiPrices",
    "api_prices",
    "blended_usd_per_million_tokens",
    "breakeven_tokens_per_day",
    "cheapest",
    "implied_utilisation",
    "load_api_prices",
    "quotes",
    "replicas_for",
]

#: Seconds in a day. [s]
SECONDS_PER_DAY = 86400.0


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class ApiPrice(_Record):
    """One provider's price of one model, input and output tokens apart."""

    provider: str
    input_usd: Annotated[float, Field(ge=0)]
    """Price of a million input (prompt) tokens. [USD/Mtoken]"""
    output_usd: Annotated[float, Field(ge=0)]
    """Price of a million output (generated) tokens. [USD/Mtoken]"""
    source: str
    """Pricing page (URL), or ``"user"``."""
    precision: str | None = None
    """Weight precision the page names (``fp8``, ``bf16``), when it names one."""
    as_of: datetime.date | None = None
    """Date the page gives for its prices."""
    checked: datetime.date | None = None
    """Date the price was copied into the table."""
    currency: Currency = "USD"
    """ISO 4217 code of both prices (``gpusizer.currency.CODES``); a quote not in USD is kept in ``quotes`` but
    never converted: ``cheapest`` and every break-even leave it out (``gpusizer.currency.excluded_reason``)."""

    def blended(self, prompt_tokens: Any, output_tokens: Any) -> Any:
        """``blended_usd_per_million_tokens`` of this price at a prompt/output mix. [USD/Mtoken]"""
        return blended_usd_per_million_tokens(self.input_usd, self.output_usd, prompt_tokens, output_tokens)


class ModelApiPrices(_Record):
    """Every quote of one catalogue model."""

    id: str
    quotes: tuple[ApiPrice, ...] = Field(min_length=1)


def load_api_prices(path: str | Path | None = None) -> dict[str, ModelApiPrices]:
    """Read and validate an API price table (the bundled ``data/api-prices.toml`` when ``path`` is None)."""
    source = datafiles.bundled("api-prices.toml") if path is None else Path(path)
    data = tomllib.loads(datafiles.read_text(source, what="API price table"))
    out: dict[str, ModelApiPrices] = {}
    for entry in data.get("model", []):
        record = ModelApiPrices.model_validate(entry)
        if record.id in out:
            raise ValueError(f"duplicate API price entry for model {record.id!r}")
        out[record.id] = record
    return out


@cache
def api_prices() -> dict[str, ModelApiPrices]:
    """The bundled API price table."""
    return load_api_prices()


def quotes(model: Any) -> tuple[ApiPrice, ...]:
    """The bundled quotes of ``model`` (a catalogue id or record); empty when no page was found for it.

    >>> len(quotes("llama-3.1-70b")) >= 1, quotes("gpt-oss-20b")
    (True, ())
    """
    record = api_prices().get(catalog.model(model).id)
    return () if record is None else record.quotes


def cheapest(model: Any, prompt_tokens: float, output_tokens: float) -> ApiPrice | None:
    """The US-dollar quote of ``model`` with the lowest blended price at the mix; None when it has none.

    >>> cheapest("llama-3.1-70b", 1000, 300).provider
    'DeepInfra (Meta-Llama-3.1-70B-Instruct-Turbo)'
    """
    found = [q for q in quotes(model) if money.excluded_reason(q.currency) is None]  # USD quotes only
    return min(found, key=lambda q: (float(q.blended(prompt_tokens, output_tokens)), q.provider)) if found else None


def blended_usd_per_million_tokens(input_usd: Any, output_usd: Any, prompt_tokens: Any, output_tokens: Any) -> Any:
    r"""API price of a million tokens of a prompt/output mix: :math:`p = (s\,p_{in} + o\,p_{out})/(s + o)`.

    Parameters
    ----------
    input_usd, output_usd : array_like
        Prices of a million input and of a million output tokens. [USD/Mtoken]
    prompt_tokens, output_tokens : array_like
        Mean prompt and output tokens of a request (only their ratio matters). [token]

    Examples
    --------
    >>> round(blended_usd_per_million_tokens(0.13, 0.40, 1000, 300), 6)
    0.192308
    """
    s = positive_array(prompt_tokens, "prompt_tokens")
    o = positive_array(output_tokens, "output_tokens")
    pin = non_negative_array(input_usd, "input_usd")
    pout = non_negative_array(output_usd, "output_usd")
    return scalar_or_array((s * pin + o * pout) / (s + o))


def breakeven_tokens_per_day(fixed_usd_per_day: Any, api_usd_per_million_tokens: Any,
                             variable_usd_per_million_tokens: Any = 0.0) -> Any:
    r"""Traffic at which a self-hosted day costs what the API charges for it: :math:`T^* = 10^6 F/(p - v)`.

    Parameters
    ----------
    fixed_usd_per_day : array_like
        Self-hosted bill per day whatever the traffic (rent, or capital, hosting and idle power). [USD]
    api_usd_per_million_tokens : array_like
        The API's blended price (``blended_usd_per_million_tokens``). [USD/Mtoken]
    variable_usd_per_million_tokens : array_like
        Self-hosted cost that grows with the traffic (electricity above idle). [USD/Mtoken]

    Returns
    -------
    numeric
        Tokens (prompt + output) per day above which self-hosting is cheaper; ``inf`` when the API's price
        does not exceed ``variable`` (self-hosting never catches up). [token/day]

    Examples
    --------
    >>> breakeven_tokens_per_day(100.0, 0.5)
    200000000.0
    >>> breakeven_tokens_per_day(100.0, 0.5, 0.5)
    inf
    """
    fixed = non_negative_array(fixed_usd_per_day, "fixed_usd_per_day")
    margin = (non_negative_array(api_usd_per_million_tokens, "api_usd_per_million_tokens")
              - non_negative_array(variable_usd_per_million_tokens, "variable_usd_per_million_tokens"))
    with np.errstate(divide="ignore", invalid="ignore"):
        return scalar_or_array(np.where(margin > 0, 1e6 * fixed / np.where(margin > 0, margin, 1.0), np.inf))


def replicas_for(tokens_per_day: Any, capacity_tokens_per_day: Any) -> Any:
    r"""Replicas that serve a traffic: :math:`\max(1, \lceil T / K \rceil)`. [-]

    >>> replicas_for(50e6, 20e6), replicas_for(1.0, 20e6)
    (3, 1)
    """
    capacity = positive_array(capacity_tokens_per_day, "capacity_tokens_per_day")
    need = non_negative_array(tokens_per_day, "tokens_per_day") / capacity
    return scalar_or_array(np.maximum(1, np.ceil(need * (1 - 1e-12))).astype(int))


def implied_utilisation(tokens_per_day: Any, capacity_tokens_per_day: Any, retries: Any = 0.0) -> Any:
    r"""Share of a deployment's capacity a traffic uses, retried tokens included: :math:`T (1 + \rho) / K`. [-]

    Above 1 one deployment cannot serve the traffic.

    >>> implied_utilisation(10e6, 40e6, retries=0.2)
    0.3
    """
    rho = non_negative_array(retries, "retries")
    return scalar_or_array(non_negative_array(tokens_per_day, "tokens_per_day") * (1 + rho)
                           / positive_array(capacity_tokens_per_day, "capacity_tokens_per_day"))
