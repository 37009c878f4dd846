"""Price records carry an ISO 4217 currency; non-USD quotes are kept but never converted into USD figures."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from pydantic import ValidationError

from gpusizer import cost, currency, hosted, ownership, selfhost
from gpusizer.cli import main


def test_every_bundled_price_is_in_us_dollars():
    # data/prices.toml and data/api-prices.toml: "in US dollars" (their headers); no record states another currency
    assert all(q.currency == "USD" for entry in cost.load_prices().values() for q in entry.quotes)
    assert all(q.currency == "USD" for entry in hosted.load_api_prices().values() for q in entry.quotes)
    assert all(not entry.excluded and entry.currency == "USD" for entry in cost.load_prices().values())


@pytest.mark.parametrize("code", ["usd", "XYZ", "US", "", "EURO"])
def test_currency_must_be_an_iso_4217_code(code):
    with pytest.raises(ValidationError, match="ISO 4217"):
        cost.PriceQuote(per_hour=1.0, tier="on-demand", provider="p", source="s", currency=code)
    with pytest.raises(ValidationError, match="ISO 4217"):
        hosted.ApiPrice(provider="p", input_usd=0.1, output_usd=0.2, source="s", currency=code)


def quote(value: float, code: str = "USD") -> cost.PriceQuote:
    return cost.PriceQuote(per_hour=value, tier="on-demand", provider="p", source="s", currency=code)


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


def cny_only_table(monkeypatch):
    """The bundled price table with an H20 entry quoted only in CNY (6.0 and 8.0 per hour, invented for the test)."""
    table = dict(cost.prices())
    table["h20"] = cost.GpuPrice(id="h20", quotes=(quote(6.0, "CNY"), quote(8.0, "CNY")))
    real = cost.prices
    monkeypatch.setattr(cost, "prices", lambda overrides=None: {**table, **real(overrides)} if overrides else table)
    return table


def test_an_entry_priced_only_in_another_currency_loads_and_keeps_its_figures(tmp_path):
    path = tmp_path / "prices.toml"
    path.write_text('[[gpu]]\nid = "h20"\nquotes = [\n'
                    '  { per_hour = 6.0, tier = "on-demand", provider = "a", source = "s", currency = "CNY" },\n'
                    '  { per_hour = 9.0, tier = "on-demand", provider = "b", source = "s", currency = "CNY" },\n'
                    '  { per_hour = 4.0, tier = "reserved", provider = "c", source = "s", currency = "CNY" },\n]\n')
    entry = cost.load_prices(path)["h20"]
    # CNY figures from the CNY quotes alone: min over on-demand + reserved = 4.0, median of 6 and 9 = 7.5, max 9.0
    assert [entry.figure(level, "CNY") for level in ("min", "typical", "max")] == [4.0, 7.5, 9.0]
    assert entry.currencies == ("CNY",) and not entry.in_usd and entry.currency == "USD"
    with pytest.raises(ValueError, match="CNY are not converted"):
        _ = entry.typical
    with pytest.raises(ValueError, match="level"):
        entry.figure("median", "CNY")


def test_an_entry_without_any_typical_quote_still_fails_to_load(tmp_path):
    path = tmp_path / "prices.toml"
    path.write_text('[[gpu]]\nid = "h20"\nquotes = [{ per_hour = 1.0, tier = "spot", provider = "a", '
                    'source = "s", currency = "CNY" }]\n')
    with pytest.raises(ValueError, match="h20: no on-demand, listed or user quote"):
        cost.load_prices(path)


def test_a_usd_figure_treats_a_card_priced_only_in_cny_as_unpriced(monkeypatch):
    cny_only_table(monkeypatch)
    with pytest.raises(KeyError, match=r"h20 is priced only in CNY: .*does not convert it to USD.*pass one in USD"):
        cost.price("h20")
    assert cost.price("h20", overrides={"h20": 1.5}) == 1.5  # a user's USD price replaces it
    with pytest.raises(KeyError, match="priced only in CNY"):
        selfhost.bill("h20", 1)


def test_sweep_leaves_the_cost_of_a_cny_only_card_missing(monkeypatch):
    from gpusizer import sweep

    cny_only_table(monkeypatch)
    s = sweep(["llama-3.1-8b"], ["h20", "h100-sxm"], prices=True)
    h20, h100 = s.filter(gpu="h20"), s.filter(gpu="h100-sxm")
    for column in ("usd_per_gpu_hour", "usd_per_hour", "usd_per_million_tokens"):
        assert np.isnan(h20[column]).all() and np.isfinite(h100[column]).all(), column
    # a missing figure is an empty CSV field, never the text "nan"
    out = io.StringIO()
    s.to_csv(out)
    assert "nan" not in out.getvalue().lower()


def test_cost_command_says_why_a_cny_only_card_has_no_usd_price(monkeypatch, capsys):
    cny_only_table(monkeypatch)
    assert main(["cost", "llama-3.1-8b", "h20"]) != 0
    err = capsys.readouterr().err
    assert "priced only in CNY" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_gpus_command_shows_a_price_in_its_currency(monkeypatch, capsys):
    cny_only_table(monkeypatch)
    assert main(["gpus"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line.strip()}
    assert rows["h20"].rstrip().endswith("7.00 CNY")  # median of 6.0 and 8.0 CNY, not converted
    assert main(["gpus", "--json"]) == 0
    got = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    assert (got["h20"]["rent_per_hour"], got["h20"]["rent_currency"]) == (7.0, "CNY")
    assert got["rtx-6000-ada"]["rent_per_hour"] is None


def test_the_old_usd_names_of_a_quote_amount_are_refused_with_the_new_name(tmp_path):
    # a quote's amount is in its `currency`, so it is `per_hour` / `amount`, never `usd_per_hour` / `usd`
    path = tmp_path / "prices.toml"
    path.write_text('[[gpu]]\nid = "h20"\nquotes = [{ usd_per_hour = 6.0, tier = "on-demand", provider = "a", '
                    'source = "s", currency = "CNY" }]\n')
    with pytest.raises(ValidationError, match=r"(?s)per_hour\n  Field required.*usd_per_hour\n  Extra inputs"):
        cost.load_prices(path)
    with pytest.raises(ValidationError, match=r"(?s)amount\n  Field required.*usd\n  Extra inputs"):
        ownership.PurchaseQuote.model_validate({"usd": 1.0, "kind": "msrp", "provider": "p", "source": "s"})
    bought = ownership.PurchaseQuote(amount=9.0e4, kind="retail", provider="p", source="s", currency="CNY")
    assert bought.amount == 9.0e4
    assert quote(15.0, "CNY").per_hour == 15.0
