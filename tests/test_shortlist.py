"""The GPU shortlist: ranking, what is dropped and why, exports, the CLI, and the looser-SLO property."""

import csv
import importlib
import io
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpusizer
from gpusizer import serving
from gpusizer.cli import main
from gpusizer.serving import SLO, Workload

module = importlib.import_module("gpusizer.shortlister")
shortlist_command = importlib.import_module("gpusizer.commands.shortlist")

CHAT = Workload(rate=3, prompt_tokens=1024, output_tokens=256)
TARGETS = SLO(ttft_p95=0.5, tpot_p95=0.05)
SMALL = ["h100", "l40s", "rtx-4090", "a100-80gb-sxm"]


@pytest.fixture(scope="module")
def table():
    return module.shortlist("llama-3.1-8b", CHAT, TARGETS, gpus=SMALL, max_gpus=2, simulate=2, requests=600)


def test_rows_are_ranked_by_cost_and_meet_the_targets(table):
    costs = [row.usd_per_million_tokens for row in table]
    assert len(table) > 5 and costs == sorted(costs)
    for row in table:
        assert row.fits and row.max_rate > 0 and row.replicas == math.ceil(CHAT.rate / row.max_rate * (1 - 1e-9))
        assert row.max_rate_band[0] <= row.max_rate <= row.max_rate_band[1]
        assert row.usd_per_million_tokens_band[0] <= row.usd_per_million_tokens <= row.usd_per_million_tokens_band[1]
        assert row.joules_per_token_band[0] <= row.joules_per_token <= row.joules_per_token_band[1]
        if row.latency_method == "closed-form":  # each replica runs at or below its largest rate
            assert row.ttft <= TARGETS.ttft_p95 * 1.001 and row.tpot <= TARGETS.tpot_p95 * 1.001
    # the two cheapest carry the simulation's check beside their closed forms; the others none
    simulated = [not math.isnan(row.simulated_max_rate) for row in table]
    assert simulated[:2] == [True, True] and not any(simulated[2:])
    assert all(row.rate_method == "closed-form" and row.latency_method == "closed-form" for row in table)
    assert all(row.simulated_max_rate > 0 and row.simulated_ttft > 0 for row in table[:2])


def test_a_configurations_row_does_not_depend_on_which_rows_are_simulated(table):
    # issue 20: the same configuration's max rate moved (7.45 vs 8.86 req/s) with the rows --gpus/--max-gpus left
    # to simulate; now every row is its closed form, simulated or not, and a narrower search reproduces it
    row = table[0]
    alone = module.shortlist("llama-3.1-8b", CHAT, TARGETS, gpus=[row.gpu], max_gpus=row.gpus, simulate=0)
    same = [r for r in alone if (r.gpu, r.gpus, r.layout, r.weights) == (row.gpu, row.gpus, row.layout, row.weights)]
    assert len(same) == 1
    assert same[0].max_rate == row.max_rate and same[0].usd_per_million_tokens == row.usd_per_million_tokens
    assert math.isnan(same[0].simulated_max_rate)


def test_kv_limit_names_the_sequences_the_pool_holds_as_fit_counts_them():
    # issue 20: "KV cache full at 57 sequences" printed the mean decode batch; the limit is the pool's sequences
    # of prompt + output tokens, which estimate (gpusizer fit) counts at that context: 16,384 + 512 = 16,896
    # (at 8,192-token prompts the prefill queue binds first since the prefill refit of issue 16)
    w = Workload(rate=50, prompt_tokens=16384, output_tokens=512)
    t = module.shortlist("llama-3.1-8b", w, SLO(ttft_p95=60, tpot_p95=1.0), gpus=["l40s"], max_gpus=1,
                         weights=["fp8"], simulate=0)
    row = t[0]
    assert row.binding == "kv-cache"
    fit = gpusizer.estimate("llama-3.1-8b", "l40s", weights="fp8", context=16896)
    assert fit.max_concurrency == 14  # 247,389 pool tokens // 16,896
    assert row.bottleneck == "KV cache full: the pool holds 14 sequences of 16,896 tokens"
    assert row.batch < 14  # the mean decode batch, which the old words printed


def test_footer_has_no_stray_separator():
    # issue 20: with nothing dropped the footer ended in "; ."
    assert shortlist_command.footer_dropped("") == "none dropped"
    w = Workload(rate=0.05, prompt_tokens=512, output_tokens=64)
    t = module.shortlist("llama-3.1-8b", w, SLO(ttft_p95=5), gpus=["h100"], max_gpus=1, weights=["bf16"], simulate=0)
    text = shortlist_command.text(t)
    assert "; ." not in text and "(1 shown); none dropped." in text


def test_dropped_configurations_say_why(table):
    kinds = {d.reason.split(":")[0] for d in table.dropped}
    assert kinds <= {"does not fit", "misses the SLO even unloaded", "layout refused", "no speed model"}
    assert all(d.gpu in {"h100-sxm", "l40s", "rtx-4090", "a100-80gb-sxm"} for d in table.dropped)
    assert not {(d.gpu, d.gpus, d.weights) for d in table.dropped if d.layout == "tp"} & {
        (r.gpu, r.gpus, r.weights) for r in table if r.layout.startswith("tp")}


def test_exports_round_trip(table):
    dicts = table.to_dicts()
    assert dicts[0]["rank"] == 1 and dicts[0]["configuration"] == table[0].configuration
    json.dumps(dicts)
    rows = list(csv.DictReader(io.StringIO(table.to_csv())))
    assert len(rows) == len(table)
    assert float(rows[0]["usd_per_million_tokens"]) == pytest.approx(table[0].usd_per_million_tokens)
    assert {"max_rate_band_low", "max_rate_band_high", "bottleneck", "joules_per_token"} <= set(rows[0])


def test_user_prices_change_the_ranking_inputs():
    cheap = module.shortlist("llama-3.1-8b", CHAT, TARGETS, gpus=["h100"], max_gpus=1, simulate=0,
                             prices={"h100": 0.5})
    assert cheap[0].usd_per_gpu_hour == 0.5 and cheap[0].price_band == (0.5, 0.5)
    assert "user prices for h100-sxm" in cheap.price_source
    with pytest.raises(KeyError, match="unknown gpu"):
        module.shortlist("llama-3.1-8b", CHAT, TARGETS, gpus=["h1000"], simulate=0)


def test_does_not_fit_is_an_answer():
    empty = module.shortlist("llama-3.1-405b", CHAT, TARGETS, gpus=["l4"], max_gpus=2, simulate=0)
    assert len(empty) == 0 and empty.to_csv().startswith("rank,configuration")
    assert all(d.reason.startswith("does not fit") for d in empty.dropped)


def test_unpriced_gpus_rank_last_with_missing_money():
    rows = module.shortlist("llama-3.1-8b", CHAT, TARGETS, gpus=["h100", "gb300"], max_gpus=1, simulate=0)
    last = rows[-1]  # (the B300 was the unpriced example until issue 18 gave it a price)
    assert last.gpu == "gb300" and math.isnan(last.usd_per_million_tokens) and last.max_rate > 0


def test_package_attribute_is_the_function_whatever_was_imported_first():
    assert gpusizer.shortlist is module.shortlist
    direct = gpusizer.shortlist("llama-3.1-8b", CHAT, TARGETS, gpus=["h100"], max_gpus=1, simulate=0)
    assert direct[0].gpu == "h100-sxm"


@settings(max_examples=8, deadline=None)
@given(ttft=st.floats(0.1, 2.0), tpot=st.floats(0.01, 0.2), looser=st.floats(1.0, 4.0), which=st.integers(0, 2))
def test_a_looser_slo_never_shrinks_the_shortlist(ttft, tpot, looser, which):
    tight = SLO(ttft_p95=ttft, tpot_p95=tpot)
    loose = SLO(ttft_p95=ttft * (looser if which != 1 else 1), tpot_p95=tpot * (looser if which != 0 else 1))
    kwargs = dict(gpus=["h100", "l40s", "rtx-4090"], max_gpus=2, simulate=0)
    a = module.shortlist("qwen3-8b", CHAT, tight, **kwargs)
    b = module.shortlist("qwen3-8b", CHAT, loose, **kwargs)
    assert a.configurations() <= b.configurations()
    rates = {row.configuration: row.max_rate for row in b}
    for row in a:
        assert rates[row.configuration] >= row.max_rate * (1 - 1e-9)


# --- command line ---------------------------------------------------------------------------------

FLAGSHIP = ["shortlist", "llama-3.1-70b", "--prompt", "2k", "--output", "512", "--rate", "5", "--ttft-p95", "500ms",
            "--tpot-p95", "50ms"]


def test_cli_flagship_text(capsys):
    assert main([*FLAGSHIP, "--price", "h100-sxm=2.49", "--top", "5"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("llama-3.1-70b: 5 req/s, 2,048 prompt + 512 output tokens")
    assert "TTFT p95 <= 500 ms, TPOT p95 <= 50 ms" in out and "user prices for h100-sxm" in out
    assert "configurations meet the targets (5 shown" in out


def test_cli_json_and_csv(capsys):
    base = ["shortlist", "llama-3.1-8b", "--rate", "2", "--ttft-p95", "0.5s", "--tpot-p95", "50ms", "--gpus",
            "h100,l40s", "--max-gpus", "1", "--simulate", "0"]
    assert main([*base, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["slo"]["ttft_p95"] == 0.5 and data["rows"][0]["rank"] == 1
    assert main([*base, "--csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("rank,configuration") and len(lines) == len(data["rows"]) + 1


def test_cli_rejects_bad_durations_and_prices(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["shortlist", "llama-3.1-8b", "--rate", "2", "--ttft-p95", "fast"])
    assert exit_.value.code == 2 and "duration" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["shortlist", "llama-3.1-8b", "--rate", "2", "--tpot-p95", "50ms", "--price", "h100"])
    assert main(["shortlist", "llama-3.1-8b", "--rate", "2"]) == 2  # an SLO needs a target
    assert "at least one" in capsys.readouterr().err


def test_workload_distributions_reach_the_sweep():
    w = Workload(rate=2, prompt_tokens=1024, output_tokens=256, prompt_distribution="lognormal",
                 output_distribution="exponential", prompt_cv=0.8)
    rows = module.shortlist("llama-3.1-8b", w, TARGETS, gpus=["h100"], max_gpus=1, simulate=1, requests=500)
    fixed = module.shortlist("llama-3.1-8b", w.model_copy(update={"prompt_distribution": "fixed",
                                                                  "output_distribution": "fixed"}),
                             TARGETS, gpus=["h100"], max_gpus=1, simulate=0)
    assert rows[0].max_rate != fixed[0].max_rate
    assert serving.max_rate_methods() == ("closed-form", "simulation")


@pytest.mark.parametrize(("model", "options"), [
    ("llama-3.1-8b", {"gpus": SMALL, "max_gpus": 4}),
    ("qwen3-30b-a3b", {"gpus": ["h100", "l40s"], "max_gpus": 4, "weights": ["bf16", "fp8"]}),
    ("gemma-3-27b", {"gpus": ["h100", "l40s"], "max_gpus": 8, "layouts": ["tp", "pp", "tp2xpp2"]}),
])
def test_the_swept_step_tables_equal_one_estimate_per_configuration(monkeypatch, model, options):
    from gpusizer.shortlister import screen

    swept = module.shortlist(model, CHAT, TARGETS, simulate=0, **options)
    monkeypatch.setattr(screen, "_swept_numbers", lambda s, keys: {})  # every configuration through estimate
    one_by_one = module.shortlist(model, CHAT, TARGETS, simulate=0, **options)
    assert swept.rows == one_by_one.rows and swept.dropped == one_by_one.dropped
    assert len(swept.rows) > 0
