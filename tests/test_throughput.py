"""``serving.throughput`` and ``gpusizer throughput``: offline, capacity within an SLO, latencies at a rate.

Values derived by hand from the step table (the offline rate is the batch times the per-sequence rate at
the cap), Little's law, the replica arithmetic, the order ceiling >= expected, a looser SLO never
lowering the capacity, the JSON contract and the one-line errors of the command.
"""

import json
import math

import pytest

from gpusizer import catalog, engines, serving
from gpusizer.cli import main
from gpusizer.serving import SLO, Workload, throughput

CHAT = Workload(rate=4, prompt_tokens=1024, output_tokens=256)
TARGETS = SLO(ttft_p95=0.5, tpot_p95=0.05)


@pytest.fixture(scope="module")
def one():
    return throughput("llama-3.1-8b", "h100-sxm", workload=CHAT, slo=TARGETS)


def test_budget_batch_by_hand():
    # C o / (o + s): 8192 * 1024 / 2048 = 4096; 8192 * 1024 / 8192 = 1024; 8192 * 100 / 8100 = 101.13...
    assert serving.budget_batch(8192, 1024, 1024) == 4096
    assert serving.budget_batch(8192, 7168, 1024) == 1024
    assert serving.budget_batch(8192, 8000, 100) == pytest.approx(8192 * 100 / 8100)


def test_offline_is_the_batch_times_the_per_sequence_rate_at_the_cap():
    # max_num_seqs 32 binds (the KV pool of an H100 holds ~400 sequences of 1280 tokens, the budget 6553):
    # X = 32 / TPOT(32) with TPOT(B) = a(B) + kappa B (s + o/2) + (B / o) S_m(s; B), read from the step table.
    t = throughput("llama-3.1-8b", "h100-sxm", workload=CHAT, max_sequences=32, latencies=False)
    assert t.offline.batch == 32 and t.offline.binding == "max-sequences" and t.max_sequences == 32
    profile = engines.engine("vllm").model_copy(update={"max_sequences": 32})
    longest = max(catalog.model("llama-3.1-8b").max_context, 4 * (1024 + 128))  # as throughput tabulates
    step = serving.step_model("llama-3.1-8b", "h100-sxm", engine=profile, context=1024 + 128, layout="tp1",
                              gpus=1, max_prompt=longest)
    s, o = 1024.0, 256.0
    tpot = (serving.step_seconds(step, 32) + step.kv_seconds * 32 * (s + o / 2)
            + 32 / o * float(serving.step_table.marginal_prefill_seconds(step, s, 32.0)))
    assert t.offline.tpot_seconds == pytest.approx(tpot, rel=1e-9)
    assert t.offline.tokens_per_second == pytest.approx(32 / tpot, rel=1e-9)
    assert t.offline.requests_per_second == pytest.approx(t.offline.tokens_per_second / o)  # Little's law


def test_token_budget_binds_long_prompts():
    # s = 4000, o = 40: C o / (o + s) = 8192 * 40 / 4040 = 81.1 sequences, below 1024 slots and the FP8 pool
    # (about 800k tokens: ~190 sequences of 4040 tokens)
    w = Workload(rate=1, prompt_tokens=4000, output_tokens=40)
    t = throughput("llama-3.1-8b", "h100-sxm", workload=w, kv_cache="fp8", max_sequences=1024, latencies=False)
    assert t.offline.binding == "token-budget" and t.max_concurrency > 150
    assert t.offline.batch == pytest.approx(8192 * 40 / 4040)


def test_the_three_answers_are_ordered_and_consistent(one):
    o, c, lat = one.offline, one.capacity, one.latency
    assert o.tokens_per_second_band[0] <= o.tokens_per_second <= o.tokens_per_second_band[1]
    assert o.tokens_per_second < o.tokens_per_second_ceiling
    assert c.requests_per_second_band[0] <= c.requests_per_second <= c.requests_per_second_band[1]
    assert c.requests_per_second <= c.requests_per_second_ceiling
    assert c.tokens_per_second == pytest.approx(c.requests_per_second * CHAT.output_tokens)
    assert c.tokens_per_second <= o.tokens_per_second * 1.001  # an SLO never serves more than the saturated engine
    assert c.binding in ("ttft", "tpot")
    assert lat.stable and lat.ttft.p50 <= lat.ttft.p95 <= lat.ttft.p99 and lat.tpot.p50 <= lat.tpot.p99
    assert lat.ttft_ceiling.p50 <= lat.ttft.p50 and lat.tpot_ceiling.mean <= lat.tpot.mean
    assert lat.ttft_band[0].p50 <= lat.ttft.p50 <= lat.ttft_band[1].p50
    # Little's law of the mean field: B = lambda E[o - 1] TPOT
    assert lat.batch == pytest.approx(lat.rate_per_replica * (CHAT.output_tokens - 1) * lat.tpot.mean, rel=0.02)


def test_replicas_multiply_a_replica_and_per_gpu_divides():
    single = throughput("llama-3.1-8b", "h100-sxm", workload=CHAT, slo=TARGETS)
    four = throughput("llama-3.1-8b", "h100-sxm", gpus=4, layout="tp1xdp4", workload=CHAT.at(16), slo=TARGETS)
    assert (four.replicas, four.gpus_per_replica, four.gpus, four.layout) == (4, 1, 4, "tp1")
    assert four.offline.tokens_per_second == pytest.approx(4 * single.offline.tokens_per_second)
    assert four.offline.tokens_per_second_per_gpu == pytest.approx(single.offline.tokens_per_second_per_gpu)
    assert four.capacity.requests_per_second == pytest.approx(4 * single.capacity.requests_per_second, rel=1e-6)
    # 16 req/s on four replicas is 4 req/s on each: the latencies of one replica at 4 req/s
    assert four.latency.rate_per_replica == 4 and four.latency.ttft.p99 == pytest.approx(single.latency.ttft.p99)
    assert throughput("llama-3.1-8b", "h100-sxm", layout="tp1xdp4", workload=CHAT, latencies=False).gpus == 4


@pytest.mark.parametrize("looser", [SLO(ttft_p95=1.0, tpot_p95=0.05), SLO(ttft_p95=0.5, tpot_p95=0.1),
                                    SLO(ttft_p95=0.5, tpot_p95=0.05, quantile=0.9)])
def test_a_looser_slo_never_lowers_the_capacity(one, looser):
    t = throughput("llama-3.1-8b", "h100-sxm", workload=CHAT, slo=looser, latencies=False)
    assert t.capacity.requests_per_second >= one.capacity.requests_per_second * (1 - 1e-6)


def test_an_unstable_rate_has_infinite_latencies_and_says_why(one):
    rate = 2 * one.offline.requests_per_second
    t = throughput("llama-3.1-8b", "h100-sxm", workload=CHAT.at(rate))
    assert not t.latency.stable and t.latency.limit in ("prefill", "kv-cache", "max-sequences")
    assert math.isinf(t.latency.ttft.p50) and math.isinf(t.latency.tpot.p99)
    assert t.to_dict()["latency"]["ttft"]["p50"] == math.inf


def test_simulation_method_and_options():
    t = throughput("llama-3.1-8b", "h100-sxm", workload=CHAT, slo=TARGETS, method="simulation", requests=400)
    assert t.capacity.method == "simulation" and t.latency.method == "simulation"
    assert 0 < t.latency.ttft.p50 < t.latency.ttft.p99
    with pytest.raises(ValueError, match="method"):
        throughput("llama-3.1-8b", "h100-sxm", workload=CHAT, method="guess")
    with pytest.raises(ValueError, match="max_sequences"):
        throughput("llama-3.1-8b", "h100-sxm", workload=CHAT, max_sequences=0)
    with pytest.raises(TypeError, match="workload"):
        throughput("llama-3.1-8b", "h100-sxm", workload=None)


def test_system_ids_and_ceilings_of_a_bigger_deployment():
    t = throughput("llama-3.1-70b", "hgx-h200-8x", layout="tp2xdp4", weights="fp8", engine="trtllm",
                   workload=CHAT.at(20), latencies=False)
    assert (t.gpus, t.replicas, t.layout, t.engine) == (8, 4, "tp2", "trtllm")
    assert t.offline.tokens_per_second_per_gpu == pytest.approx(t.offline.tokens_per_second / 8)
    assert t.offline.tokens_per_second_per_gpu_ceiling > t.offline.tokens_per_second_per_gpu


# --- the command ----------------------------------------------------------------------------------------


def test_cli_json_contract(capsys):
    assert main(["throughput", "llama-3.1-8b", "h100", "--prompt", "1k", "--output", "256", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["capacity"] is None and data["latency"] is None and data["slo"] is None
    assert data["workload"]["rate"] is None and data["workload"]["prompt_tokens"] == 1024
    assert set(data["offline"]) >= {"tokens_per_second", "tokens_per_second_ceiling", "tokens_per_second_band",
                                    "tokens_per_second_per_gpu", "batch", "binding", "requests_per_second"}
    assert (data["gpus"], data["replicas"], data["max_sequences"], data["batched_tokens"]) == (1, 1, 256, 8192)


def test_cli_json_is_strict_where_the_rate_is_unstable(capsys):
    args = ["throughput", "llama-3.1-8b", "h100", "--rate", "500", "--ttft-p95", "500ms", "--tpot-p95", "50ms",
            "--max-seqs", "64", "--json"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "Infinity" not in out and "NaN" not in out
    data = json.loads(out)
    assert data["latency"]["stable"] is False and data["latency"]["ttft"]["p50"] is None
    assert data["capacity"]["requests_per_second"] > 0 and data["max_sequences"] == 64


def test_cli_text(capsys):
    assert main(["throughput", "llama-3.1-8b", "h100", "--gpus", "2", "--layout", "tp1xdp2", "--rate", "4",
                 "--ttft-p95", "500ms"]) == 0
    out = capsys.readouterr().out
    assert "2 x tp1" in out and "offline" in out and "within SLO" in out and "TTFT p50/p95/p99" in out


@pytest.mark.parametrize("args, words", [
    (["--rate", "-1"], "argument --rate: must be a positive number"),
    (["--rate", "abc"], "argument --rate: expected a number"),
    (["--ttft-p95", "0ms"], "argument --ttft-p95"),
    (["--quantile", "1"], "argument --quantile: must be between 0 and 1"),
    (["--max-seqs", "0"], "argument --max-seqs"),
    (["--gpus", "3", "--layout", "tp2"], "layout 'tp2' uses 2 GPUs, but gpus=3"),
    (["--engine", "nope"], "unknown engine"),
])
def test_cli_errors_are_one_line_with_status_2(args, words, capsys):
    try:
        status = main(["throughput", "llama-3.1-8b", "h100", *args])
    except SystemExit as exit_:  # argparse's own errors
        status = exit_.code
    assert status == 2
    err = capsys.readouterr().err
    assert err.startswith("gpusizer: error:") and words in err and err.count("\n") == 1


def test_cli_unknown_model_and_context(capsys):
    assert main(["throughput", "llama-9", "h100"]) == 2
    assert "llama" in capsys.readouterr().err
    assert main(["throughput", "llama-2-7b", "h100", "--prompt", "4k", "--output", "1k"]) == 2
    assert "--allow-beyond-max-context" in capsys.readouterr().err


def test_latency_load_is_the_rate_over_the_offline_rate():
    # load = lambda / (X_off / o): the system rate over the requests per second the saturated system completes,
    # which is its output tok/s over the mean output (Little's law); twice the rate doubles it.
    w = Workload(rate=4, prompt_tokens=1024, output_tokens=256)
    t = throughput("llama-3.1-8b", "h100-sxm", workload=w)
    assert t.latency.load == pytest.approx(4 / (t.offline.tokens_per_second / 256), rel=1e-12)
    doubled = throughput("llama-3.1-8b", "h100-sxm", workload=w.model_copy(update={"rate": 8}))
    assert doubled.latency.load == pytest.approx(2 * t.latency.load, rel=1e-12)
    assert 0 < t.latency.load < 1 and t.latency.stable
