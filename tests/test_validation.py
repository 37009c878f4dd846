"""The validation report: regenerated from the calibration data, accurate enough, never above a ceiling."""

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _validation():
    spec = importlib.util.spec_from_file_location("validation", ROOT / "tools" / "validation.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def test_report_is_up_to_date(tmp_path):
    validation = _validation()
    shipped = (ROOT / "docs" / "validation.md").read_text(encoding="utf-8")
    assert validation.report(plot_name="validation.png") == shipped, "run: python tools/validation.py"
    markdown, _ = validation.write(tmp_path)
    assert markdown.exists()


def test_single_stream_decode_median_error_at_most_15_percent():
    rows, _ = _validation().rows()
    errors = [r.error for r in rows if r.case.use == "fit" and r.case.metric == "decode" and r.case.batch == 1]
    assert len(errors) >= 20
    assert np.median(np.abs(errors)) <= 0.15
    # Issue 16's target: single-stream decode stays <= 8 %; measured 6.2 % over 60 rows: the 26 rows of other
    # engines and 2023-24 llama.cpp builds 5.1 % (as before the build eras), 20 rows of 2025 builds 8.2 % (one model
    # and GPU measured 167-222 tok/s across three months of them), 14 rows of 2026 builds 4.4 %. With the rows of the
    # third session (vLLM on an RTX A6000, a 0.6B F16 and Apple M-series rows of 2025-26 builds): 5.5 % over 77 rows;
    # other engines and 2023-24 builds 4.7 % (33), 2025 builds 9.1 % (25), 2026 builds 5.1 % (19).
    assert np.median(np.abs(errors)) <= 0.07
    earlier = [r.error for r in rows if r.case.use == "fit" and r.case.metric == "decode" and r.case.batch == 1
               and r.case.engine not in ("llama.cpp", "llama.cpp@2025")]
    assert np.median(np.abs(earlier)) <= 0.06


def test_no_measurement_beats_its_ceiling():
    rows, _ = _validation().rows()
    over = [(r.case.id, r.case.value, r.ceiling) for r in rows if r.over_ceiling]
    assert not over
    assert all(r.expected <= r.ceiling if not r.is_time else r.expected >= r.ceiling for r in rows)


def test_excluded_rows_say_why():
    _, excluded = _validation().rows()
    assert excluded and all(c.reason for c in excluded)


def _serving():
    return _validation().sibling("validation_serving")


def test_every_serving_row_is_predicted_or_says_why():
    serving = _serving()
    found, excluded = serving.rows()
    assert len(found) + len(excluded) == 43  # every row of data/calibration/serving-measurements.csv
    assert all(c.reason for c in excluded)
    assert not [r.case.id for r in found if r.over_ceiling]
    assert all(r.low <= r.expected <= r.high for r in found if math.isfinite(r.expected))


def test_serving_medians_are_finite_and_below_the_measured_baseline():
    # Baseline with the constants of data/efficiency.toml fitted 2026-12-02 (before the Offline rows reached the
    # fit) and an assumed MLPerf mean input of 256 tokens: median APE offline_tok_s 25.3 % (15 rows),
    # server_tok_s 19.4 % (8), ttft_ms_median 86.4 % (9), tpot_ms_median 84.6 % (7), output_tok_s_aggregate
    # 7.6 % (4); at matched load TTFT 78.6 %, TPOT 78.7 %. Measured now (9 Offline rows and 3 Little's-law Server
    # points fitted, partial-overlap roofline): offline 12.4 %, server 11.5 %, ttft 78.1 %, tpot 77.0 %,
    # output_tok_s_aggregate 13.2 %; matched load TTFT 78.0 %, TPOT 73.4 %.
    # With the B200/MI300X caps from their Server runs' Little's-law occupancy (issue 15 follow-up): offline
    # 13.1 %, server 11.5 %, ttft 77.7 %, tpot 76.3 %, aggregate 13.2 %; matched load TTFT 77.4 %, TPOT 72.6 %.
    # With the expert-GEMM efficiency (step.expert_compute_efficiency) and Mixtral m032/m036 in the fit (issue 15):
    # offline 6.8 %, server 10.3 %, ttft 75.7 %, tpot 76.3 %, aggregate 13.1 %; matched load TTFT 76.8 %,
    # TPOT 69.8 %. With the vLLM BF16/4-bit RTX A6000 rows in the fit (issue 16, third session; vLLM's fixed cost per
    # layer 15.0 -> 13.7 us): offline 6.9 %, server 10.3 %, ttft 75.6 %, tpot 78.3 %, aggregate 13.1 %; matched load
    # TTFT 76.7 %, TPOT 69.7 %. Ceilings slightly above.
    ceilings = {"offline_tok_s": 8, "server_tok_s": 12, "ttft_ms_median": 77, "tpot_ms_median": 79,
                "output_tok_s_aggregate": 14, "ttft_ms_median, matched load": 78, "tpot_ms_median, matched load": 72}
    stats = _serving().medians(_serving().rows()[0])
    assert set(stats) == set(ceilings)
    for metric, (n, median, _, coverage) in stats.items():
        assert n >= 4 and math.isfinite(median) and median <= ceilings[metric], (metric, median)
        assert math.isnan(coverage) or 0 <= coverage <= 1


def test_leave_one_source_out_predicts_every_fitted_row_without_its_source():
    validation = _validation()
    loso = validation.leave_one_source_out()
    fitted = [r for r in validation.rows()[0] if r.case.use == "fit"]
    assert {r.case.id for r in fitted} == set(loso)
    assert all(r.loso_error is not None and math.isfinite(r.loso_error) for r in fitted)
    # 3 calibration sources, 4 MLPerf v4.1 submitters (NVIDIA, Dell, AMD, Fujitsu), 16 sources of 2025-26
    # llama.cpp builds (6 pull requests, 4 commenters of discussion #15396, 3 benchmark pages, 3 benchmark files of
    # one repository at three commits), and of the third session of 2026-12-05 Red Hat AI's vLLM model cards (one
    # label for the seven rows of one campaign), 2 more pull requests (#16630, #24216) and 4 Apple M-series pages
    # (geerlingguy/beowulf-ai-cluster issue #17, geerlingguy/ai-benchmarks' README at two commits, chenxigary's
    # README): each held out whole
    assert len(validation.by_source(fitted)) == 30


def test_held_out_band_coverage_at_least_the_measured_floor():
    # Bands from leave-one-source-out residuals (tools/fit_efficiency.py): measured 82 % of held-out rows inside
    # their p10-p90 band (57 % before the expert-GEMM efficiency of issue 15), 98 % of fitted rows. Target
    # 75-85 %; the misses are biased regimes (H100 PCIe/NVL TP2, llama.cpp batches > 5), not band width.
    # Issue 16 added 26 held-out llama.cpp pp512 rows (h421-h446, other builds than the fitted May 2024 one):
    # 62 % of them inside their band (the Dec 2023 CUDA build runs 7B prompts 40-100 % slower), the earlier
    # held-out rows 86 %, all 74 %.
    rows, _ = _validation().rows()
    held = [r for r in rows if r.case.use == "holdout"]
    assert np.mean([r.in_band for r in held if not r.case.id.startswith("h4")]) >= 0.8
    assert np.mean([r.in_band for r in held]) >= 0.7


def test_every_published_serving_row_is_predicted_or_says_why():
    found, excluded = _serving().public_rows()
    assert len(found) + len(excluded) == 56  # every row of data/calibration/public-serving-measurements.csv
    assert all(reason for *_, reason in excluded)
    assert not [r.id for r in found if r.over_ceiling]
    assert all(math.isfinite(r.expected) and r.expected > 0 for r in found)


def test_published_moe_rows_under_expert_parallelism_within_the_measured_medians():
    # Held-out rows (none is fitted). Before the DeepEP all-to-all rules (FP8/NVFP4 dispatch, BF16 combine;
    # node-deduplicated scale-out dispatch in prefill), with the constants of 2026-12-03: median APE of the 15
    # MoE rows under expert parallelism 22.9 % (H100 EP32 prefill 60-63 % low), of all 33 MoE rows 23.1 %.
    # After: 13.0 % and 18.8 %.
    stats = _serving().public_medians(_serving().public_rows()[0])
    assert stats["MoE rows, expert parallel"][0] == 15 and stats["MoE rows, expert parallel"][1] <= 14
    assert stats["MoE rows"][0] == 33 and stats["MoE rows"][1] <= 20


def test_p50_rows_name_their_load_beside_the_measured_one():
    # m008 (H100 SXM x8, TP2 x DP4, p50 TPOT): the Server row m006 measured 21,606 tok/s over 290 output
    # tokens = 74.5 req/s, the Offline row m005 24,525 tok/s, so the measured load is 21,606 / 24,525 = 0.88;
    # gpusizer's offline answer is 24,030 tok/s (82.9 req/s): load 74.5 / 82.9 = 0.90 at the measured rate.
    found, _ = _serving().rows()
    row = next(r for r in found if r.case.id == "m008")
    assert row.binding.endswith("load 0.90, measured 0.88"), row.binding
    assert math.isclose(row.case.load, 21606.0 / 24525.0, rel_tol=1e-4)


def test_overlap_profile_pins_the_serving_engines_and_restores_the_bounds():
    spec = importlib.util.spec_from_file_location("serving_overlap", ROOT / "tools" / "serving_overlap.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    from gpusizer import efficiency

    before = efficiency.BOUNDS["overlap"]
    with tool.pinned_overlap(0.05) as priors:
        assert priors.engines["trtllm"].overlap == priors.engines["vllm"].overlap == 0.05
        assert priors.engines["llama.cpp"].overlap == 0.5  # the other engines keep their prior
        low, high, _ = efficiency.BOUNDS["overlap"]
        assert math.isclose(low, 0.05 * 0.999) and high == 1.0
    assert efficiency.BOUNDS["overlap"] == before


def test_measurement_condition_is_read_and_checked(tmp_path):
    from gpusizer import efficiency

    cases = {c.id: c for c in efficiency.load_cases(ROOT / "data/calibration/holdout.csv",
                                                  ROOT / "data/calibration/mapping.csv")}
    # XiongjieDai's December 2023 tables: ./main, one cold run per process (18 CUDA + 6 Metal rows)
    assert sorted(i for i, c in cases.items() if c.condition == "cold") == [f"h{n}" for n in range(421, 445)]
    assert cases["h447"].condition == "warm"  # llama-bench pp512, ggml-org/llama.cpp PR #4766
    assert cases["hr01"].condition == ""  # decode rows of the same tables: not stated
    header = ("id,gpu,gpu_count,model,weight_precision,engine,input_len,output_len,concurrency_or_batch,metric,"
              "value,unit")
    bad = tmp_path / "m.csv"
    bad.write_text(f"{header},condition\nx1,RTX 4090,1,m,F16,llama.cpp,512,0,1,prefill_tok_s,1,tok/s,lukewarm\n")
    with pytest.raises(ValueError, match="condition of measurement 'x1'"):
        efficiency.load_cases(bad, ROOT / "data/calibration/mapping.csv")


def test_prefill_classes_partition_the_single_gpu_prefill_rows():
    validation = _validation()
    found, _ = validation.rows()
    stats = validation.prefill_by_condition(found)
    single = [r for r in found if r.case.metric == "prefill" and r.case.gpus == 1]
    for use in ("fit", "holdout"):
        n = sum(1 for r in single if r.case.use == use)
        assert stats["warm or not stated"][use][0] + stats["cold"][use][0] == stats["all"][use][0] == n
    assert stats["cold"]["holdout"][0] == 24 and stats["cold, CUDA"]["holdout"][0] == 18
    assert stats["cold"]["fit"][0] == 0  # the fit never sees a cold row
    # the issue-16 target (15 %), judged on the warm class the model predicts: held out 8.3 % over 12 rows,
    # leave-one-out 13.1 %, leave-one-source-out 14.9 % (2026-12-05)
    assert stats["warm or not stated"]["holdout"][1] <= 15.0
    assert stats["warm or not stated"]["loo"][1] <= 15.0
    assert stats["warm or not stated"]["loso"][1] <= 15.0
