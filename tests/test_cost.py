"""Cost and energy per token: reference arithmetic, the dated price table, power fractions, properties."""

import datetime
import math
import statistics

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpusizer
from gpusizer import cost

positive = st.floats(0.01, 1e4, allow_nan=False, allow_infinity=False)


# --- reference values -----------------------------------------------------------------------------


def test_cost_per_million_tokens_reference_values():
    # methods notes, section 7: $/Mtok = price * GPUs / (3600 * tokens/s * u) * 1e6
    assert cost.usd_per_million_tokens(2.49, 1, 1000.0) == pytest.approx(2.49 / 3.6)
    assert cost.usd_per_million_tokens(2.0, 8, 2000.0, utilisation=0.5) == pytest.approx(4.4444444)
    assert cost.tokens_per_dollar(3.6, 1, 1.0) == pytest.approx(1000.0)
    assert cost.usd_per_month(2.0, 8, replicas=2) == 2.0 * 8 * 2 * 730


def test_phase_split_recovers_the_whole_bill():
    bill, xin, xout = 12.0, 5000.0, 900.0
    cin, cout = cost.phase_usd_per_million_tokens(bill, xin, xout, 0.3, 0.6)
    assert (cin * xin + cout * xout) / 1e6 == pytest.approx(bill / 3600)
    assert cin / cout == pytest.approx((0.3 / xin) / (0.6 / xout))


def test_average_power_interpolates_between_measured_fractions():
    model = cost.power_model()
    assert cost.average_power(700.0, 0.0) == pytest.approx(700 * model.idle.typical)
    assert cost.average_power(700.0, 1.0) == pytest.approx(700 * model.serving.typical)
    assert cost.average_power(700.0, 1.0, method="linear-utilisation") == pytest.approx(700.0)
    assert cost.joules_per_token(315.0, 8, 2520.0) == pytest.approx(1.0)
    assert cost.joules_per_token(315.0, 8, 2520.0, pue=1.3) == pytest.approx(1.3)
    with pytest.raises(ValueError, match="busy"):
        cost.average_power(700.0, 1.5)
    with pytest.raises(ValueError, match="method must be one of"):
        cost.average_power(700.0, 0.5, method="tdp")
    assert cost.power_methods() == ("measured-fractions", "linear-utilisation")


def test_money_functions_validate_with_the_parameter_named():
    with pytest.raises(ValueError, match="usd_per_gpu_hour"):
        cost.usd_per_million_tokens(-1, 1, 10)
    with pytest.raises(ValueError, match="utilisation"):
        cost.usd_per_million_tokens(1, 1, 10, utilisation=1.5)


def test_money_and_energy_broadcast():
    prices = np.array([1.0, 2.0])[:, None]
    rates = np.array([100.0, 200.0, 400.0])
    grid = cost.usd_per_million_tokens(prices, 4, rates)
    assert grid.shape == (2, 3)
    assert grid[1, 2] == pytest.approx(cost.usd_per_million_tokens(2.0, 4, 400.0))
    assert cost.average_power(np.array([300.0, 700.0]), np.array([0.5, 1.0])).shape == (2,)


# --- the price table ------------------------------------------------------------------------------


def test_price_table_has_provenance_and_catalogue_ids():
    table = cost.load_prices()
    ids = {g.id for g in gpusizer.gpus()}
    for gpu_id, entry in table.items():
        assert gpu_id in ids
        for quote in entry.quotes:
            assert quote.source.startswith("https://")
            assert isinstance(quote.as_of, datetime.date) and isinstance(quote.checked, datetime.date)
            assert quote.as_of <= quote.checked
        assert entry.min <= entry.typical <= entry.max


def test_price_table_fingerprint():
    # A data edit shows up here as a reviewed change: GPUs, quotes, and the sum of all quoted prices.
    table = cost.load_prices()
    quotes = [q.per_hour for entry in table.values() for q in entry.quotes]
    # issue 18 added 4 GPUs and 9 quotes: B300 5.00 + 7.25, GB200 10.50 + 4.54, T4 0.20 + 0.76 + 0.35 + 0.50,
    # P40 0.11 (sum 29.21); its 2026-12-05 part added 9 GPUs and 18 quotes: A100 40GB 1.99 + 1.00, GH200 2.29 +
    # 6.50, A10 1.29, RTX A6000 1.09 + 0.50 + 0.35 + 0.40 + 0.82, A40 0.44, L40 1.25 + 1.00 + 0.70 + 0.80, RTX 3090 Ti
    # 0.25, RTX 4080 0.15, V100 PCIe 32GB 0.17 (sum 20.99)
    assert (len(table), len(quotes)) == (27, 77)
    assert sum(quotes) == pytest.approx(113.671 + 29.21 + 20.99, abs=1e-6)


def test_derived_prices_follow_the_documented_rule():
    entry = cost.load_prices()["h100-sxm"]
    on_demand = [q.per_hour for q in entry.quotes if q.tier in ("on-demand", "listed")]
    assert entry.typical == statistics.median(on_demand) == 2.69
    assert entry.min == 1.49  # the reserved 1.85 is above it; the 1.52 spot quote does not count
    assert entry.max == 3.49


def test_user_prices_override_by_alias_and_unknown_gpus_are_named():
    table = cost.prices({"H100": 2.0, "4090": 0.5})
    assert table["h100-sxm"].typical == 2.0 and table["rtx-4090"].quotes[0].tier == "user"
    assert cost.price("h200", "max") == cost.load_prices()["h200-sxm"].max
    with pytest.raises(KeyError, match="no price for gpu 'gb300'"):
        cost.price("gb300")
    with pytest.raises(KeyError, match="unknown gpu"):
        cost.prices({"h1000": 1.0})


def test_a_missing_price_says_how_to_pass_one_in_the_library_and_in_the_cli(capsys):
    from gpusizer.cli import main

    # gb300 has no bundled quote (data/prices.toml); the library names its own arguments, never a flag
    with pytest.raises(KeyError) as error:
        cost.price("gb300")
    message = error.value.args[0]
    assert "overrides={'gb300': 2.0}" in message and "usd_per_gpu_hour=2.0" in message and "--" not in message
    assert "h100-sxm" in message.split("priced in USD: ")[1]
    # the CLI names its flags and no Python syntax: one line, exit 2 (usage), no traceback
    assert main(["cost", "llama-3.1-8b", "gb300"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("gpusizer: error: no price for gpu 'gb300'; pass one in USD per GPU-hour (e.g. --price 2.0")
    assert "{" not in err and "overrides" not in err and len(err.splitlines()) == 1
    # a system id names its GPU: 8 x b200 is priced (data/prices.toml), so the check passes on to the answer
    assert main(["cost", "llama-3.1-8b", "hgx-b200-8x", "--json"]) == 0
    with pytest.raises(ValueError, match="price of h100"):
        cost.prices({"h100": -2})


def test_power_fractions_have_provenance():
    model = cost.power_model()
    for fraction in (model.idle, model.serving):
        assert fraction.low <= fraction.typical <= fraction.high
        assert all(s.startswith("https://github.com/") for s in fraction.source)
    assert model.idle.high < model.serving.high


# --- properties -----------------------------------------------------------------------------------


@settings(max_examples=200)
@given(price=positive, gpus=st.integers(1, 72), rate=positive, low=st.floats(0.01, 0.99), step=st.floats(1e-3, 0.5))
def test_cost_per_token_falls_as_utilisation_rises(price, gpus, rate, low, step):
    high = min(low + step, 1.0)
    assert cost.usd_per_million_tokens(price, gpus, rate, high) < cost.usd_per_million_tokens(price, gpus, rate, low)


@settings(max_examples=200)
@given(price=positive, gpus=st.integers(1, 72), rate=positive, factor=st.floats(1.01, 100))
def test_cost_per_token_falls_as_throughput_rises_and_scales_with_the_bill(price, gpus, rate, factor):
    base = cost.usd_per_million_tokens(price, gpus, rate)
    assert cost.usd_per_million_tokens(price, gpus, rate * factor) < base
    assert cost.usd_per_million_tokens(price * factor, gpus, rate) == pytest.approx(base * factor)
    assert cost.tokens_per_dollar(price, gpus, rate) * base == pytest.approx(1e6)


@settings(max_examples=100)
@given(tdp=st.floats(50, 2000), a=st.floats(0, 1), b=st.floats(0, 1))
def test_power_never_falls_as_the_engine_gets_busier(tdp, a, b):
    lo, hi = sorted((a, b))
    assert cost.average_power(tdp, hi) >= cost.average_power(tdp, lo)
    assert cost.average_power(tdp, hi) <= tdp


def test_cost_per_token_of_a_configuration_falls_as_its_load_rises():
    from gpusizer import serving

    step = serving.step_model("llama-3.1-8b", "h100-sxm", context=2560)
    workload = serving.Workload(rate=1, prompt_tokens=2048, output_tokens=512)
    previous = math.inf
    for rate in (0.5, 1, 2, 4, 8):
        point = serving.load(step, workload, rate)
        tokens = rate * (workload.prompt_tokens + workload.output_tokens)
        cin, cout = cost.phase_usd_per_million_tokens(2.69, rate * 2048, rate * 512, point.prefill_utilisation,
                                                      point.decode_utilisation)
        blended = cost.usd_per_million_tokens(2.69, 1, tokens)
        assert blended < previous and cin > 0 and cout > 0
        previous = blended
