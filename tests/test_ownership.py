"""Cost of ownership, hosted API prices and the break-even: hand-derived values, the dated tables, properties."""

import datetime
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusizer import catalog, cost, hosted, ownership, selfhost

money = st.floats(0.01, 1e4, allow_nan=False, allow_infinity=False)
rate = st.floats(1.0, 1e6, allow_nan=False, allow_infinity=False)
share = st.floats(0.01, 1.0, allow_nan=False)
idle_share = st.floats(0.0, 0.99, allow_nan=False)
retry = st.floats(0.0, 3.0, allow_nan=False)


# --- formulas, by hand ---------------------------------------------------------------------------------


def test_straight_line_amortisation():
    # 35,040 USD over 4 years of 8,760 h: 35040 / 35040 h = 1.00 USD/h
    assert ownership.amortised_usd_per_hour(35040.0, 4) == pytest.approx(1.0)
    assert ownership.HOURS_PER_YEAR == 8760.0


def test_cost_of_capital_is_the_capital_recovery_factor():
    # 10,000 USD over 2 years at 10 %: A = 10000 * 0.1 / (1 - 1.1**-2) = 10000 * 0.1 / 0.173554 = 5761.905 USD/year
    assert ownership.amortised_usd_per_hour(10000.0, 2, 0.10) * 8760 == pytest.approx(5761.9048, rel=1e-6)
    # interest only raises the bill, and a tiny rate tends to the straight line
    assert ownership.amortised_usd_per_hour(10000.0, 2, 1e-9) == pytest.approx(10000 / 2 / 8760, rel=1e-6)


def test_electricity_and_hosting_by_hand():
    # 2 GPUs at 315 W, PUE 1.56, 0.0895 USD/kWh: 0.630 kW * 1.56 * 0.0895 = 0.0879606 USD/h
    assert ownership.electricity_usd_per_hour(315.0, 2, 0.0895, 1.56) == pytest.approx(0.0879606)
    # 1.4 kW at 184.06 USD/kW-month over 730 h: 257.684 / 730 = 0.352992 USD/h
    assert ownership.hosting_usd_per_hour(1.4, 184.06) == pytest.approx(0.3529918, rel=1e-6)


def test_accepted_token_cost_by_hand():
    # 3.6 USD/h for 1 GPU at 1000 tok/s is 1 USD/Mtok; load 0.5 and idle 0.5 leave 0.25 of the hours -> 4 USD;
    # 10 % retried tokens -> 4.4 USD per million delivered tokens
    assert ownership.usd_per_million_accepted_tokens(3.6, 1, 1000.0, 0.5, 0.5, 0.1) == pytest.approx(4.4)


def test_blended_price_and_breakeven_by_hand():
    # 1000 prompt at 0.13 + 300 output at 0.40 = 250 USD per 1300 Mtok -> 0.192308 USD/Mtok
    p = hosted.blended_usd_per_million_tokens(0.13, 0.40, 1000, 300)
    assert p == pytest.approx(250 / 1300)
    # 2 x 2.69 USD/h rented = 129.12 USD/day; 129.12 / 0.192308e-6 = 671.424M tokens/day
    assert hosted.breakeven_tokens_per_day(129.12, p) == pytest.approx(671.424e6)
    assert hosted.breakeven_tokens_per_day(10.0, 0.2, 0.3) == math.inf
    assert hosted.replicas_for(100.0, 40.0) == 3 and hosted.replicas_for(80.0, 40.0) == 2
    assert hosted.implied_utilisation(20.0, 40.0, 0.5) == pytest.approx(0.75)


def test_owned_bill_by_hand():
    # H100 SXM (700 W TDP), 2 GPUs, idle engine: 0.20 x 700 = 140 W each.
    # capital 2 x 8760 / 8760 = 2.0; electricity 0.280 kW x 1.5 x 0.10 = 0.042; hosting 2 x 0.7 kW x 730 / 730 = 1.4
    b = selfhost.bill("h100-sxm", 2, 0.0, own=selfhost.Owning(purchase_usd=8760.0, life_years=1, usd_per_kwh=0.10,
                                                              pue=1.5, usd_per_kw_month=730.0))
    assert (b.capital_usd_per_hour, b.electricity_usd_per_hour, b.hosting_usd_per_hour) == pytest.approx(
        (2.0, 0.042, 1.4))
    assert b.idle_usd_per_hour == pytest.approx(3.442)
    # busy all the time: 0.45 x 700 = 315 W each -> 0.630 x 1.5 x 0.1 = 0.0945
    assert b.full_usd_per_hour == pytest.approx(2.0 + 0.0945 + 1.4)
    assert b.usd_per_month == pytest.approx(3.442 * 730)


def test_owned_bill_takes_the_dated_defaults():
    table = ownership.ownership_table()
    b = selfhost.bill("h100-sxm", 1, 1.0, own=selfhost.Owning())
    # median of 25,000 and 30,000 over the default life
    expected = 27500.0 / (table.default("life").years * 8760)
    assert b.capital_usd_per_hour == pytest.approx(expected)
    assert "Raymond James" in b.sources["purchase"] and "CBRE" in b.sources["hosting"]


def test_rack_unit_hosting():
    # 42U cabinet at 500 USD/month; 4 U -> 4 x 500/42 / 730 USD/h
    b = selfhost.bill("rtx-4090", 1, 0.0, own=selfhost.Owning(colocation="cabinet-low", rack_units=4))
    assert b.hosting_usd_per_hour == pytest.approx(4 * 500 / 42 / 730)
    with pytest.raises(ValueError, match="rack_units"):
        selfhost.bill("rtx-4090", 1, 0.0, own=selfhost.Owning(colocation="cabinet-low"))


def test_a_gpu_without_a_purchase_quote_has_none():
    price, reason = ownership.purchase_price("l4")
    assert price is None and "--purchase-price" in reason
    with pytest.raises(KeyError, match="no purchase quote for l4"):
        selfhost.bill("l4", 1, own=selfhost.Owning())


def test_exchange_rate():
    eur = ownership.exchange_rate("eur", "0.92@2026-12-01")
    assert (eur.currency, eur.per_usd, eur.as_of) == ("EUR", 0.92, datetime.date(2026, 12, 1))
    assert eur.convert(50.0) == pytest.approx(46.0)
    for bad in ("0.92", "abc@2026-12-01", "0.92@2026-13-01", "-1@2026-12-01"):
        with pytest.raises(ValueError):
            ownership.exchange_rate("EUR", bad)
    with pytest.raises(ValueError):
        ownership.exchange_rate("EURO", "0.92@2026-12-01")


@pytest.mark.parametrize("call", [
    lambda: ownership.effective_utilisation(0.0, 0.0), lambda: ownership.effective_utilisation(1.2, 0.0),
    lambda: ownership.effective_utilisation(1.0, 1.0), lambda: ownership.usd_per_million_accepted_tokens(1, 1, 1,
                                                                                                       retries=-0.1),
    lambda: ownership.amortised_usd_per_hour(1000, 4, -0.1), lambda: ownership.electricity_usd_per_hour(300, 1, 0.1,
                                                                                                        0.9),
])
def test_bad_factors_are_refused(call):
    with pytest.raises(ValueError):
        call()


# --- the dated tables --------------------------------------------------------------------------------------


def test_every_default_is_sourced_and_dated():
    table = ownership.ownership_table()
    for section in ("pue", "electricity", "colocation", "life"):
        assert table.default(section).source.startswith("https://")
        for record in getattr(table, section).values():
            assert record.source.startswith("https://") and record.checked <= datetime.date(2026, 12, 3)
    for gpu, record in table.purchases.items():
        catalog.gpu(gpu)  # a catalogue id
        assert all(q.source.startswith("https://") and q.checked for q in record.quotes)


def test_every_api_quote_is_sourced_and_names_a_catalogue_model():
    for model, record in hosted.api_prices().items():
        assert catalog.model(model).id == model
        assert all(q.source.startswith("https://") and q.checked for q in record.quotes)


def test_published_figures_are_as_read():
    table = ownership.ownership_table()
    assert table.pue["uptime-2023"].value == 1.58  # Uptime Institute, industry average 2023
    assert table.colocation["cbre-na-h2-2024"].usd_per_kw_month == 184.06  # CBRE H2 2024, 250-500 kW
    assert table.electricity["us-virginia-commercial"].usd_per_kwh == 0.0895  # EIA 2023, 8.95 cents/kWh
    assert table.purchases["rtx-5090"].typical == 1999.0  # NVIDIA CES 2025 MSRP


def test_duplicates_and_bad_records_are_refused(tmp_path):
    path = tmp_path / "api.toml"
    entry = '[[model]]\nid = "llama-3.1-8b"\nquotes = [{provider = "x", input_usd = 1, output_usd = 1, source = "u"}]\n'
    path.write_text(entry * 2)
    with pytest.raises(ValueError, match="duplicate"):
        hosted.load_api_prices(path)
    with pytest.raises(ValueError, match="usd_per_kw_month"):
        ownership.ColocationRate(id="x", basis="b", source="s", checked=datetime.date(2026, 1, 1))


def test_cheapest_quote_is_the_lowest_blended_price():
    quotes = hosted.quotes("gpt-oss-120b")
    best = hosted.cheapest("gpt-oss-120b", 1000, 300)
    assert best is not None and best.blended(1000, 300) == min(q.blended(1000, 300) for q in quotes)
    assert hosted.cheapest("gpt-oss-20b", 1000, 300) is None


# --- the composed answer -----------------------------------------------------------------------------------


def test_comparison_rented_matches_todays_cost():
    c = selfhost.compare("llama-3.1-8b", "h100-sxm", prompt_tokens=1000, output_tokens=300, usd_per_gpu_hour=2.0)
    out = c.capacity_output_tokens_per_second
    assert c.usd_per_million_accepted_tokens == pytest.approx(cost.usd_per_million_tokens(2.0, 1, out))
    assert c.breakeven is not None and c.breakeven.api.provider == hosted.cheapest("llama-3.1-8b", 1000, 300).provider


def test_comparison_at_a_traffic_prices_both_ways():
    c = selfhost.compare("llama-3.1-70b", "h100-sxm", gpus=2, weights="fp8", prompt_tokens=1000, output_tokens=300,
                         usd_per_gpu_hour=2.69, tokens_per_day=50e6)
    b = c.breakeven
    # one deployment (capacity above 50M/day): 2 x 2.69 x 24 = 129.12 USD/day; API 50 x 250/1300 = 9.615 USD/day
    assert b.replicas == 1 and b.self_usd_per_day == pytest.approx(129.12)
    assert b.api_usd_per_day == pytest.approx(50 * 250 / 1300) and b.cheaper == "api"


def test_speculation_raises_the_capacity_and_lowers_the_accepted_token_cost():
    from gpusizer import speculation

    plain = selfhost.compare("llama-3.1-8b", "h100-sxm", usd_per_gpu_hour=2.0, prompt_tokens=1000, output_tokens=300)
    spec = selfhost.compare("llama-3.1-8b", "h100-sxm", usd_per_gpu_hour=2.0, prompt_tokens=1000, output_tokens=300,
                            speculative=speculation.Speculative("eagle"))
    assert spec.capacity_method == "offline+speculative"
    gain = spec.capacity_output_tokens_per_second / plain.capacity_output_tokens_per_second
    assert spec.usd_per_million_accepted_tokens == pytest.approx(plain.usd_per_million_accepted_tokens / gain)


# --- properties ---------------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(money, st.integers(1, 64), rate)
def test_no_idle_no_retries_full_utilisation_is_todays_cost(price, gpus, tokens):
    assert ownership.usd_per_million_accepted_tokens(price, gpus, tokens, 1.0, 0.0, 0.0) == pytest.approx(
        cost.usd_per_million_tokens(price, gpus, tokens), rel=1e-12)


@settings(max_examples=200, deadline=None)
@given(money, st.integers(1, 64), rate, share, idle_share, retry)
def test_an_accepted_token_costs_at_least_a_generated_one(price, gpus, tokens, u, i, r):
    generated = cost.usd_per_million_tokens(price, gpus, tokens, ownership.effective_utilisation(u, i))
    assert ownership.usd_per_million_accepted_tokens(price, gpus, tokens, u, i, r) >= generated * (1 - 1e-12)


@settings(max_examples=200, deadline=None)
@given(money, money, st.floats(0.0, 5.0), st.floats(0.0, 5.0), st.floats(1, 1e5), st.floats(1, 1e5), retry,
       st.floats(1e6, 1e12))
def test_breakeven_is_where_the_two_costs_are_equal(idle, extra, pin, pout, s, o, r, capacity):
    quote = hosted.ApiPrice(provider="p", input_usd=pin, output_usd=pout, source="user")
    b = selfhost.breakeven(quote, s, o, idle_usd_per_hour=idle, full_usd_per_hour=idle + extra,
                           capacity_tokens_per_day=capacity, retries=r)
    if not math.isfinite(b.tokens_per_day):
        return
    t = b.tokens_per_day
    variable = extra * 24 * 1e6 / capacity * (1 + r)
    mine = idle * 24 + variable * t / 1e6
    theirs = b.api_usd_per_million_tokens * (1 + r) * t / 1e6
    assert abs(mine - theirs) <= 1e-9 * max(mine, theirs)


@settings(max_examples=100, deadline=None)
@given(st.floats(1.0, 1e6), st.floats(0.5, 10.0), st.floats(0.0, 0.3))
def test_amortisation_grows_with_interest_and_shrinks_with_life(price, life, r):
    assert ownership.amortised_usd_per_hour(price, life, r) >= ownership.amortised_usd_per_hour(price, life) * (
        1 - 1e-12)
    assert ownership.amortised_usd_per_hour(price, life + 1, r) < ownership.amortised_usd_per_hour(price, life, r)


@pytest.mark.parametrize("call, name", [
    (lambda: ownership.effective_utilisation("most", 0.0), "utilisation"),
    (lambda: ownership.usd_per_million_accepted_tokens(1, 1, 1, retries="some"), "retries"),
    (lambda: ownership.amortised_usd_per_hour(1000, 4, "low"), "cost_of_capital"),
    (lambda: hosted.blended_usd_per_million_tokens("cheap", 1, 1, 1), "input_usd"),
    (lambda: hosted.breakeven_tokens_per_day(-1.0, 1.0), "fixed_usd_per_day"),
])
def test_errors_name_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()
