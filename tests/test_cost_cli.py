"""``gpusizer cost`` / ``gpusizer breakeven`` and the hosted-API footer of ``gpusizer shortlist``."""

import json

import pytest

from gpusizer.cli import main

SEVENTY = ["llama-3.1-70b", "h100", "--gpus", "2", "--weights", "fp8", "--prompt", "1000", "--output-tokens", "300"]


def test_help_has_examples(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["cost", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out and "gpusizer breakeven llama-3.1-70b" in out and "--exchange-rate" in out


def test_breakeven_text_rented(capsys):
    assert main(["breakeven", *SEVENTY, "--price", "2.69"]) == 0
    out = capsys.readouterr().out
    # 2 x 2.69 x 24 = 129.12 USD/day over (1000 x 0.13 + 300 x 0.40)/1300 USD/Mtok = 671.4M tokens/day
    assert "rented: 5.38 USD/h" in out and "break-even: 671.4M tokens/day" in out
    assert "deepinfra.com" in out


def test_cost_json_owned_in_euros(capsys):
    assert main(["cost", *SEVENTY, "--own", "--tokens-per-day", "50M", "--retries", "0.05", "--currency", "EUR",
                 "--exchange-rate", "0.92@2026-12-01", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["bill"]["mode"] == "own" and data["retries"] == 0.05
    assert data["breakeven"]["traffic_tokens_per_day"] == 50e6  # SI: 50M = 50,000,000
    assert data["usd_per_million_accepted_tokens"] == pytest.approx(data["usd_per_million_generated_tokens"] * 1.05)
    converted = data["currency"]["converted"]
    assert data["currency"]["as_of"] == "2026-12-01"
    assert converted["usd_per_hour"] == pytest.approx(0.92 * data["bill"]["usd_per_hour"])


def test_user_api_price_and_model_without_quotes(capsys):
    assert main(["cost", "gpt-oss-20b", "h100", "--price", "2"]) == 0
    assert "no hosted API price for gpt-oss-20b" in capsys.readouterr().out
    assert main(["cost", "gpt-oss-20b", "h100", "--price", "2", "--api-price", "0.05/0.20", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["breakeven"]["api"]["provider"] == "user"


@pytest.mark.parametrize("flags, message", [
    (["--currency", "EUR"], "--exchange-rate"),
    (["--electricity", "0.2"], "need --own"),
    (["--own", "--price", "2"], "--price is a rental price"),
    (["--currency", "EUR", "--exchange-rate", "0.92"], "RATE@YYYY-MM-DD"),
])
def test_flag_errors_name_the_flag(flags, message, capsys):
    assert main(["cost", "llama-3.1-8b", "h100", *flags]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("flags", [["--utilisation", "0"], ["--idle", "1"], ["--retries", "-1"], ["--pue", "0.9"],
                                   ["--api-price", "1"], ["--tokens-per-day", "lots"]])
def test_bad_values_are_usage_errors(flags):
    with pytest.raises(SystemExit) as exit_:
        main(["cost", "llama-3.1-8b", "h100", *flags])
    assert exit_.value.code == 2


def test_shortlist_shows_the_cheapest_hosted_price_and_the_breakeven(capsys):
    args = ["shortlist", "llama-3.1-8b", "--prompt", "1000", "--output-tokens", "300", "--rate", "2", "--ttft-p95",
            "1s", "--gpus", "h100", "--max-gpus", "1", "--simulate", "0", "--price", "h100-sxm=2.0"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "Hosted API: cheapest DeepInfra" in out and "breaks even at" in out
    assert main([*args, "--json"]) == 0
    api = json.loads(capsys.readouterr().out)["hosted_api"]
    # 1 x 2.0 x 24 = 48 USD/day over 0.055 USD/Mtok (DeepInfra, 0.055 in and out) = 872.7M tokens/day
    assert api["api"]["provider"] == "DeepInfra" and api["tokens_per_day"] == pytest.approx(48 / 0.055e-6)


def test_no_capacity_is_an_answer(capsys):
    assert main(["cost", "llama-3.1-405b", "rtx-4090", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["usd_per_million_accepted_tokens"] is None and data["breakeven"] is None
    assert "does not fit" in data["note"]
