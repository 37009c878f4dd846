"""Speculative decoding (gpusizer.speculation): the formulas by hand, the draft records against their
published sizes, the composition against the plain decode, and the invariants the issue names."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusizer import architecture, catalog, estimate, passes, precision, speculation
from gpusizer.cli import main
from gpusizer.speculation import Speculative


def test_iid_expected_tokens_by_hand() -> None:
    # 1 + 0.8 + 0.8^2 + 0.8^3 = 1 + 0.8 + 0.64 + 0.512 = 2.952 (Leviathan et al. eq. 1)
    assert speculation.iid_expected_tokens(0.8, 3) == pytest.approx(2.952)
    assert speculation.iid_expected_tokens(1.0, 4) == 5.0  # every draft accepted: k + 1
    assert speculation.iid_expected_tokens(0.0, 4) == 1.0  # none: the verify step's own token


def test_per_position_expected_tokens_by_hand() -> None:
    # 1 + 0.9 + 0.9*0.5 + 0.9*0.5*0.2 = 1 + 0.9 + 0.45 + 0.09 = 2.44
    assert speculation.expected_tokens((0.9, 0.5, 0.2)) == pytest.approx(2.44)


def test_mtp_defaults_reproduce_their_sources() -> None:
    # DeepSeek-V3 report: second-token acceptance 85-90 %; nebius/MTP-DeepSeek-V3-0324: the original module reused
    # over k = 7 positions yields 3.20 tokens per step at temperature 0 and 3.09 at temperature 1.
    expected, low, high = speculation.rates("mtp", 7)
    assert expected[0] == 0.875 and low[0] == 0.85 and high[0] == 0.90
    assert speculation.expected_tokens(expected) == pytest.approx(3.20, abs=0.01)
    assert speculation.expected_tokens(low) == pytest.approx(3.07, abs=0.03)  # near the 3.09 at temperature 1


def test_round_and_speedup_by_hand() -> None:
    # 3 draft steps of 1 ms and a 12 ms verify step: 15 ms; 2.952 tokens in 15 ms against 1 token in 10 ms: 1.968x
    assert speculation.round_seconds(0.001, 3, 0.012) == pytest.approx(0.015)
    assert speculation.speedup(2.952, 0.010, 0.015) == pytest.approx(1.968)


def test_break_even_by_hand() -> None:
    # 3 / (1 + B/10) >= 1 while B <= 20; a gain always below 1 never pays; one always above pays at the limit
    assert speculation.break_even_concurrency(lambda b: 3.0 / (1.0 + b / 10.0)) == 20
    assert speculation.break_even_concurrency(lambda b: 0.5 + 0 * b) == 0
    assert speculation.break_even_concurrency(lambda b: 2.0 + 0 * b, limit=64) == 64


def test_eagle3_head_of_llama_8b_by_hand() -> None:
    # One decoder layer: attention 4096 x (4096 + 2 x 1024) + 4096 x 4096 = 41,943,040, SwiGLU 3 x 4096 x 14,336 =
    # 176,160,768, two norms 8,192; fc over three hidden states 3 x 4096^2 = 50,331,648; q/k/v read 2d instead of
    # d: 4096 x (32 + 16) x 128 = 25,165,824; own 32,000-token head 131,072,000; final norm 4,096.
    # 424,685,568 parameters x 2 bytes (BF16 head) = 849,371,136 B.
    e = estimate("llama-3.1-8b", "h100-sxm", speculative=Speculative("eagle"))
    assert e.speculation.draft_weights_bytes == pytest.approx(849_371_136, rel=1e-6)
    # its KV: 1 layer x 2 x 8 heads x 128 x 2 B = 4,096 B per token, x 8,192 tokens = 33,554,432 B
    assert e.speculation.draft_kv_cache_bytes == 33_554_432


def test_eagle2_head_shares_the_target_head() -> None:
    # EAGLE-1/2: the same layer (218,112,000 with its norms) and fc 2 x 4096^2 = 33,554,432, plus the final norm,
    # and the target's LM head: 251,670,528 x 2 B = 503,341,056 B.
    e = estimate("llama-3.1-8b", "h100-sxm", speculative=Speculative("eagle", eagle_version=2))
    assert e.speculation.draft_weights_bytes == pytest.approx(503_341_056, rel=1e-6)


def test_mtp_module_of_deepseek_v3_against_its_count() -> None:
    # architecture counts the MTP module (a decoder layer, eh_proj and norms) at 11.61e9 parameters; the checkpoint
    # card's "14B MTP module weights" add its own copies of the embedding and head (2 x 0.927e9 = 1.85e9).
    counts = architecture.parameter_counts(catalog.model("deepseek-v3"))
    assert (counts.mtp + 2 * counts.embedding) / 1e9 == pytest.approx(14, abs=0.6)
    e = estimate("deepseek-v3", "b200", gpus=8, speculative=Speculative("mtp"))
    fp8 = precision.bytes_per_element("fp8")
    # TP8 shards the module; vectors and MLA down-projections stay whole on every rank (+1.2 %)
    assert 8 * e.speculation.draft_weights_bytes == pytest.approx(counts.mtp * fp8, rel=0.02)


def test_speedup_is_taken_against_the_plain_decode() -> None:
    # One GPU, no pipeline: the plain step of speculation is the Decode record's step, so that accepted tokens per
    # second = tokens per step / round time = Decode rate x speedup.
    e = estimate("llama-3.1-70b", "h100-sxm", gpus=4, concurrency=8, speculative=Speculative("draft",
                                                                                           draft="llama-3.2-1b"))
    s = e.speculation
    assert s.speedup == pytest.approx(s.tokens_per_step * e.decode.tpot_seconds_expected / s.round_seconds)
    assert s.expected_tokens_per_second == pytest.approx(s.tokens_per_step / s.round_seconds)
    assert s.expected_aggregate_tokens_per_second == pytest.approx(8 * s.expected_tokens_per_second)


def test_draft_model_stops_paying_at_large_batch() -> None:
    spec = Speculative("draft", draft="llama-3.2-1b")
    e = estimate("llama-3.1-70b", "h100-sxm", gpus=4, context=2048, speculative=spec)
    limit = e.speculation.break_even_concurrency
    assert 1 < limit < speculation.BREAK_EVEN_LIMIT
    at = estimate("llama-3.1-70b", "h100-sxm", gpus=4, context=2048, concurrency=limit, speculative=spec)
    past = estimate("llama-3.1-70b", "h100-sxm", gpus=4, context=2048, concurrency=limit + 1, speculative=spec)
    assert at.speculation.speedup >= 1.0 > past.speculation.speedup


def test_off_by_default_and_left_out_of_the_dict() -> None:
    e = estimate("llama-3.1-8b", "h100-sxm")
    assert e.speculation is None and "speculation" not in e.to_dict()


@pytest.mark.parametrize(("spec", "message"), [
    (Speculative("mtp"), "no MTP module"),
    (Speculative("draft"), "needs draft="),
    (Speculative("medusa"), "method must be one of"),
    (Speculative("eagle", draft_tokens=0), "draft_tokens"),
    (Speculative("eagle", draft_tokens=3, acceptance=(0.9, 0.8)), "2 rates for 3 draft tokens"),
    (Speculative("eagle", acceptance=1.5), r"\[0, 1\]"),
])
def test_bad_speculation_names_the_parameter(spec: Speculative, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        estimate("llama-3.1-8b", "h100-sxm", speculative=spec)


def test_a_speculative_that_is_not_a_record() -> None:
    with pytest.raises(TypeError, match="speculative"):
        estimate("llama-3.1-8b", "h100-sxm", speculative="mtp")  # type: ignore[arg-type]


rates_ = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@given(st.lists(rates_, min_size=1, max_size=16))
def test_never_more_than_k_plus_one_tokens(acceptance: list[float]) -> None:
    tokens = speculation.expected_tokens(acceptance)
    assert 1.0 <= tokens <= len(acceptance) + 1 + 1e-12


@given(rates_, st.integers(min_value=1, max_value=16))
def test_iid_is_the_per_position_sum(alpha: float, k: int) -> None:
    assert speculation.iid_expected_tokens(alpha, k) == pytest.approx(speculation.expected_tokens([alpha] * k))


@settings(max_examples=15, deadline=None)
@given(st.sampled_from(["eagle", "mtp"]), st.integers(min_value=1, max_value=6), rates_,
       st.sampled_from([1, 8, 64]))
def test_estimate_never_claims_more_than_k_plus_one(method: str, k: int, alpha: float, users: int) -> None:
    model, gpu, gpus = ("deepseek-v3", "b200", 8) if method == "mtp" else ("llama-3.1-8b", "h100-sxm", 1)
    e = estimate(model, gpu, gpus=gpus, concurrency=users, context=4096,
                 speculative=Speculative(method, draft_tokens=k, acceptance=alpha))
    s = e.speculation
    assert 1.0 <= s.tokens_per_step <= k + 1
    # a round is at least the verify step, which is at least the plain step: no more than k + 1 times the rate
    assert s.round_seconds >= s.verify_step_seconds >= passes.decode_seconds(*_setup(model, gpu, gpus), 4096, users)
    assert s.expected_tokens_per_second <= (k + 1) * e.decode.expected_tokens_per_second * (1 + 1e-9)
    # the draft only adds memory
    assert s.max_concurrency <= e.max_concurrency and (e.fits or not s.fits)


def _setup(model: str, gpu: str, gpus: int) -> tuple:
    from gpusizer import configuration, efficiency

    record = catalog.model(model)
    table = efficiency.bundled()
    s = configuration.setup(record, catalog.gpu(gpu), record.weights, record.expert_weights, record.activation_dtype,
                            gpus, "vllm", f"tp{gpus}", table)
    return s, configuration.constants(s, table)


def test_cli_fit_speculative_mtp_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fit", "deepseek-v3", "b200", "--gpus", "8", "--speculative", "mtp", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    s = data["speculation"]
    assert s["method"] == "mtp" and s["draft_tokens"] == 1 and s["acceptance"] == [0.875]
    # cost is inverse to the aggregate rate: accepted-token cost = plain cost / speedup
    assert s["usd_per_million_accepted_tokens"] == pytest.approx(s["usd_per_million_tokens_without"] / s["speedup"])


def test_cli_fit_speculative_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fit", "llama-3.1-70b", "h100-sxm", "--gpus", "4", "--speculative", "draft", "--draft",
                 "llama-3.2-1b", "--draft-tokens", "4", "--acceptance", "0.8"]) == 0
    out = capsys.readouterr().out
    assert "Speculative decoding: draft, llama-3.2-1b, k = 4, acceptance 0.8, 0.8, 0.8, 0.8" in out
    assert "tokens per verify step 3.36" in out  # 1 + 0.8 + 0.64 + 0.512 + 0.4096 = 3.3616


def test_cli_draft_needs_its_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fit", "llama-3.1-70b", "h100-sxm", "--speculative", "draft"]) == 2
    assert "--draft MODEL" in capsys.readouterr().err
    assert main(["fit", "llama-3.1-70b", "h100-sxm", "--acceptance", "0.7"]) == 2
    assert "need --speculative" in capsys.readouterr().err


def test_shortlist_ranks_by_the_speculative_throughput() -> None:
    from gpusizer.serving import SLO, Workload
    from gpusizer.shortlister import shortlist

    workload, slo = Workload(rate=20, prompt_tokens=2048, output_tokens=512), SLO(ttft_p95=0.3, tpot_p95=0.03)
    common = dict(gpus=["h100-sxm"], max_gpus=1, weights=["fp8"], simulate=0)
    plain = shortlist("llama-3.1-8b", workload, slo, **common)[0]
    fast = shortlist("llama-3.1-8b", workload, slo, speculative=Speculative("eagle"), **common)[0]
    # the same configuration decodes about twice as fast per token: it serves more requests per replica and
    # the workload's million tokens cost less
    assert fast.configuration == plain.configuration
    assert fast.max_rate > plain.max_rate and fast.usd_per_million_tokens < plain.usd_per_million_tokens


@pytest.mark.parametrize(("model", "gpu", "gpus", "spec"), [
    ("deepseek-v3", "h200", 8, Speculative("mtp", draft_tokens=3)),
    ("glm-4.5", "b200", 8, Speculative("mtp")),
    ("llama-3.1-8b", "apple-m3-max", 1, Speculative("eagle")),
    ("llama-3.1-70b", "rtx-4090", 1, Speculative("draft", draft="llama-3.2-1b")),  # does not fit: still no NaN
])
def test_no_nan_in_a_speculation(model: str, gpu: str, gpus: int, spec: Speculative) -> None:
    import math

    s = estimate(model, gpu, gpus=gpus, concurrency=8, context=4096, speculative=spec).speculation
    for name, value in vars(s).items():
        for item in value if isinstance(value, tuple) else (value,):
            assert not (isinstance(item, float) and not math.isfinite(item)), (name, item)
