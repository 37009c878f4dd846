"""Price records carry an ISO 4217 currency; non-USD quotes are kept but never converted into USD figures."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gpusizer import cost, currency, hosted, selfhost
from gpusizer.cli import main


def test_every_bundled_price_is_in_us_dollars():
    # data/prices.toml and data/api-prices.toml: "in US dollars" (their headers); no record states another currency
    assert all(q.currency == "USD" for entry in cost.load_prices().values() for q in entry.quotes)
    assert all(q.currency == "USD" for entry in hosted.load_api_prices().values() for q in entry.quotes)
    assert all(not entry.excluded and entry.currency == "USD" for entry in cost.load_prices().values())


@pytest.mark.parametrize("code", ["usd", "XYZ", "US", "", "EURO"])
def test_currency_must_be_an_iso_4217_code(code):
    with pytest.raises(ValidationError, match="ISO 4217"):
        cost.PriceQuote(usd_per_hour=1.0, tier="on-demand", provider="p", source="s", currency=code)
    with pytest.raises(ValidationError, match="ISO 4217"):
        hosted.ApiPrice(provider="p", input_usd=0.1, output_usd=0.2, source="s", currency=code)


def quote(value: float, code: str = "USD") -> cost.PriceQuote:
    return cost.PriceQuote(usd_per_hour=value, tier="on-demand", provider="p", source="s", currency=code)


def test_non_usd_quotes_are_excluded_from_the_derived_figures_with_a_reason():
    # USD quotes 2.0, 3.0, 4.0 -> min 2, median 3, max 4; the 15.0 CNY quote is neither converted nor counted
    entry = cost.GpuPrice(id="x", quotes=(quote(2.0), quote(3.0), quote(4.0), quote(15.0, "CNY")))
    assert (entry.min, entry.typical, entry.max) == (2.0, 3.0, 4.0)
    (left, reason), = entry.excluded
    assert left.currency == "CNY" and "does not convert" in reason and entry.currency == "USD"
    only = cost.GpuPrice(id="y", quotes=(quote(15.0, "CNY"),))
    with pytest.raises(ValueError, match=r"in USD.*CNY are not converted"):
        _ = only.typical
    assert currency.excluded_reason("USD") is None


def test_cheapest_api_quote_skips_other_currencies(monkeypatch):
    # a 0.01/0.01 EUR quote would be the cheapest if read as dollars; the USD 0.1/0.2 one is picked
    table = {"llama-3.1-8b": hosted.ModelApiPrices(id="llama-3.1-8b", quotes=(
        hosted.ApiPrice(provider="eu", input_usd=0.01, output_usd=0.01, source="s", currency="EUR"),
        hosted.ApiPrice(provider="us", input_usd=0.1, output_usd=0.2, source="s")))}
    monkeypatch.setattr(hosted, "api_prices", lambda: table)
    assert hosted.cheapest("llama-3.1-8b", 1000, 300).provider == "us"
    assert len(hosted.quotes("llama-3.1-8b")) == 2  # kept in the table
    euro = table["llama-3.1-8b"].quotes[0]
    with pytest.raises(ValueError, match="EUR"):
        selfhost.breakeven(euro, 1000, 300, idle_usd_per_hour=5.0, full_usd_per_hour=5.0, capacity_tokens_per_day=5e8)


def test_cost_output_names_the_currency_of_the_api_price(capsys):
    assert main(["cost", "llama-3.1-8b", "h100", "--price", "2.49", "--api-price", "0.05/0.08"]) == 0
    assert "0.05/0.08 USD per million input/output tokens" in capsys.readouterr().out
    assert main(["cost", "llama-3.1-8b", "h100", "--price", "2.49", "--api-price", "0.05/0.08", "--json"]) == 0
    assert '"currency": "USD"' in capsys.readouterr().out
