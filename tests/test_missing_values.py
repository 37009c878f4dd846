"""Issue 14, values: no NaN answers, missing figures missing visibly, pools clamped, limits named.

Every estimate of a valid configuration has only finite numbers, or None where a figure is missing
(with the reason next to it); ``kv_pool_bytes`` never goes negative; a context past the model's
maximum is flagged; the memory of a prefill does not grow with the prompt.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpusizer
from gpusizer import checks, passes, performance
from gpusizer.cli import main

MODELS = [m.id for m in gpusizer.models()]
GPUS = [g.id for g in gpusizer.gpus()]
APPLE = [g for g in GPUS if g.startswith("apple-")]
#: The fields a GPU without a published matrix rate leaves None (``Prefill.unknown`` says why).
NEEDS_RATE = {"prefill.seconds_expected", "prefill.band.0", "prefill.band.1", "prefill.tokens_per_second_expected",
              "prefill.ttft_seconds_expected", "prefill.ttft_band.0", "prefill.ttft_band.1",
              "prefill.scaling_efficiency", "parallel.prefill_scaling_efficiency"}
#: Fields that are None by design: no separate expert precision, no reason when nothing is missing, no
#: speculation, prefix caching or LoRA unless asked for (and no note when its break-even needs none).
OPTIONAL = {"expert_weights", "prefill.unknown", "speculation", "speculation.break_even_note", "prefix_cache", "lora",
            "offload", "images"}


def leaves(value, path=""):
    """(dotted path, value) of every number, string, bool or None in an estimate (tuples by index)."""
    if dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            yield from leaves(getattr(value, f.name), f"{path}.{f.name}" if path else f.name)
    elif isinstance(value, tuple):
        for i, item in enumerate(value):
            yield from leaves(item, f"{path}.{i}")
    elif isinstance(value, np.ndarray):
        for item in value.ravel().tolist():
            yield path, item
    else:
        yield path, value


def assert_no_nan(e) -> None:
    published = e.prefill.compute_rate_published
    for path, value in leaves(e):
        if value is None:
            assert path in OPTIONAL or (path in NEEDS_RATE and not published), (e.model, e.gpu, path)
        elif isinstance(value, float):
            assert math.isfinite(value), (e.model, e.gpu, path, value)
    assert (e.prefill.unknown is None) == bool(published)


def test_no_field_of_any_catalogue_model_on_any_catalogue_gpu_is_nan():
    # 48 models x 54 GPUs x 2 concurrencies, at 4k context (or the model's maximum if shorter)
    for name in MODELS:
        model = gpusizer.model(name)
        for gpu in GPUS:
            for users in (1, 8):
                assert_no_nan(gpusizer.estimate(model, gpu, context=min(4096, model.max_context), concurrency=users))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=st.sampled_from(MODELS), gpu=st.sampled_from(GPUS), engine=st.sampled_from(["vllm", "sglang",
       "trtllm", "llama.cpp"]), gpus=st.sampled_from([1, 2, 4, 8]), context=st.integers(1, 2**20),
       concurrency=st.integers(1, 4096), prompt=st.none() | st.integers(1, 2**20))
def test_no_estimate_of_a_valid_configuration_is_nan(model, gpu, engine, gpus, context, concurrency, prompt):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # heads that do not divide by the tensor-parallel degree
        assert_no_nan(gpusizer.estimate(model, gpu, engine=engine, gpus=gpus, context=context,
                                        concurrency=concurrency, prompt=prompt))


# --- a GPU without a published matrix rate ------------------------------------------------------


@pytest.mark.parametrize("gpu", APPLE)
def test_apple_prefill_is_a_number_from_the_shader_alu_rate(gpu):
    # every Apple GPU of the catalogue now carries its FP16 rate (philipturner/metal-benchmarks), so
    # prefill is estimated, never unknown; decode stays memory-bound
    e = gpusizer.estimate("llama-3.1-8b", gpu, context=4096)
    p = e.prefill
    assert p.compute_rate_published and p.unknown is None
    assert p.seconds_expected > p.seconds_ceiling > 0 and p.band[0] <= p.seconds_expected <= p.band[1]
    # the ceiling is at least the FLOPs at the FP16 rate and the weights over the bandwidth
    assert p.seconds_ceiling >= p.flops / gpusizer.gpu(gpu).dense.fp16 * (1 - 1e-9)
    assert p.seconds_ceiling >= e.memory.weights_bytes / gpusizer.gpu(gpu).memory_bandwidth
    assert e.decode.expected_tokens_per_second > 0


def test_apple_rates_are_alu_count_times_clock():
    # philipturner/metal-benchmarks dc2adc6: 128 FP32 ALUs per core x 2 FLOP per FMA x clock, FP16 at the
    # same rate: M1 Max 32 cores x 256 x 1.296 GHz = 10.617 TFLOPS; M2 Ultra 76 x 256 x 1.398 GHz = 27.2
    for gpu, cores, ghz in (("apple-m1-max", 32, 1.296), ("apple-m2-ultra", 76, 1.398)):
        d = gpusizer.gpu(gpu).dense
        assert d.fp16 == d.fp32 == pytest.approx(cores * 256 * ghz * 1e9, rel=1e-3)


def test_a_gpu_without_a_matrix_rate_has_unknown_prefill_and_keeps_its_ceiling(rateless):
    e = gpusizer.estimate("llama-3.1-8b", "apple-m3-max", context=4096)
    p = e.prefill
    assert not p.compute_rate_published and p.unknown == performance.PREFILL_UNKNOWN
    assert p.seconds_expected is None and p.band == (None, None) and p.ttft_seconds_expected is None
    # the ceiling streams the weights once per chunk: 4096 tokens are one chunk of vLLM's 8192
    assert p.seconds_ceiling >= e.memory.weights_bytes / gpusizer.gpu("apple-m3-max").memory_bandwidth
    assert e.decode.expected_tokens_per_second > 0  # decode needs no matrix rate: memory-bound


def test_unknown_prefill_is_null_in_json_and_explained_in_text(capsys, rateless):
    assert main(["fit", "llama-3.1-8b", "apple-m3-max", "--json"]) == 0
    out = capsys.readouterr().out
    assert "NaN" not in out
    prefill = json.loads(out)["prefill"]
    assert prefill["seconds_expected"] is None and prefill["unknown"] == performance.PREFILL_UNKNOWN
    assert main(["fit", "llama-3.1-8b", "apple-m3-max"]) == 0
    assert "prefill      unknown for 8,192 prompt tokens: no published dense matrix" in capsys.readouterr().out


def test_a_sweep_writes_an_unknown_number_as_an_empty_csv_field(capsys, rateless):
    assert main(["sweep", "--models", "llama-3.1-8b", "--gpus", "apple-m3-max,h100", "--context", "4k",
                 "--columns", "gpu,prefill_seconds_expected,prefill_unknown"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == f"apple-m3-max,,\"{performance.PREFILL_UNKNOWN}\""  # quoted: the reason has a comma
    assert lines[2].startswith("h100-sxm,0.") and lines[2].endswith(",")
    assert "nan" not in "\n".join(lines)


def test_derived_tensor_rates_follow_the_whitepaper_ratios():
    # Ada whitepaper, Appendix A, RTX 4080: 780 AI TOPS (FP8, sparse, FP16 accumulate); dense with FP32
    # accumulate FP8 194.9 and FP16 97.5 TFLOPS, i.e. AI TOPS / 4 and / 8 on GeForce. NVIDIA: 4080 SUPER
    # 836, 4070 Ti SUPER 706, 4060 Ti 353 AI TOPS.
    for gpu, tops in (("rtx-4080-super", 836), ("rtx-4070-ti-super", 706)):
        d = gpusizer.gpu(gpu).dense
        assert (d.fp8, d.fp16, d.bf16) == pytest.approx((tops / 4 * 1e12, tops / 8 * 1e12, tops / 8 * 1e12))
    d = gpusizer.gpu("rtx-4060-ti-16gb").dense  # 353 / 8 = 44.125, recorded as 44.1 (= 2 x its 22 TFLOPS FP32)
    assert (d.fp8, d.fp16) == pytest.approx((88.25e12, 44.1e12))
    # GA102 GeForce: FP32-accumulate at half the FP16-accumulate rate; 3090 Ti "320 Tensor TFLOPS" (sparse,
    # FP16 accumulate) -> 80 dense, twice its 40 TFLOPS FP32 as on the RTX 3090 (35.6 -> 71)
    assert gpusizer.gpu("rtx-3090-ti").dense.fp16 == pytest.approx(80e12)
    # RTX A5000 datasheet 222.2 TFLOPS with sparsity -> 111.1 dense (A6000: 309.7 -> 154.8, 4 x FP32)
    assert gpusizer.gpu("rtx-a5000").dense.bf16 == pytest.approx(111.1e12)


# --- the KV pool and the model's maximum context ---------------------------------------------------


def test_kv_pool_is_clamped_at_zero_and_the_deficit_reported_separately():
    e = gpusizer.estimate("llama-3.1-70b", "rtx-4090")  # 141 GB of BF16 weights on a 24 GB card
    m = e.memory
    assert e.kv_pool_bytes == 0 and not e.fits and e.max_concurrency == 0
    # the budget is what the engine lets weights, activations, runtime and pool use, so the deficit is
    # what the three exceed it by
    assert e.kv_pool_deficit_bytes == pytest.approx(m.weights_bytes + m.activation_bytes + m.runtime_bytes
                                                    - m.budget_bytes, rel=1e-12)
    assert e.kv_pool_deficit_bytes > 100e9
    fits = gpusizer.estimate("llama-3.1-8b", "h100-sxm")
    assert fits.kv_pool_deficit_bytes == 0 and fits.kv_pool_bytes == pytest.approx(
        fits.memory.budget_bytes - fits.memory.weights_bytes - fits.memory.activation_bytes
        - fits.memory.runtime_bytes, rel=1e-12)


def test_context_past_the_model_maximum_is_flagged_everywhere():
    assert gpusizer.estimate("llama-2-7b", "h100", context=4096).context_exceeds_model_max is False
    assert gpusizer.estimate("llama-2-7b", "h100", context=4097).context_exceeds_model_max is True
    flags = gpusizer.estimate("llama-2-7b", "h100", context=np.array([4096, 16384])).context_exceeds_model_max
    assert flags.tolist() == [False, True]
    s = gpusizer.sweep(["llama-2-7b", "llama-3.1-8b"], ["h100"], context=[4096, 16384])
    assert s["context_exceeds_model_max"].tolist() == [False, True, False, False]


def test_a_shortlist_flags_requests_longer_than_the_model_maximum(capsys):
    from gpusizer.serving import SLO, Workload
    from gpusizer.shortlister import shortlist

    long = shortlist("llama-2-7b", Workload(rate=1, prompt_tokens=4000, output_tokens=200), SLO(ttft_p95=5),
                     gpus=["h100"], max_gpus=1, simulate=0)
    short = shortlist("llama-2-7b", Workload(rate=1, prompt_tokens=2000, output_tokens=200), SLO(ttft_p95=5),
                      gpus=["h100"], max_gpus=1, simulate=0)
    assert (long.context_exceeds_model_max, short.context_exceeds_model_max) == (True, False)
    assert main(["shortlist", "llama-2-7b", "--prompt", "4000", "--output", "200", "--rate", "1", "--ttft-p95",
                 "5s", "--gpus", "h100", "--max-gpus", "1", "--simulate", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["context_exceeds_model_max"] is True


# --- bounded memory of a prefill ---------------------------------------------------------------------


@pytest.mark.parametrize("kwargs", [
    dict(model="llama-3.1-8b", gpu="h100", engine="llama.cpp", context=40_000),
    dict(model="gemma-3-27b", gpu="h100", context=np.array([9000, 70_000]), concurrency=np.array([[1], [4]])),
    dict(model="llama-3.1-70b", gpu="h100", gpus=4, layout="pp", context=50_000),  # pipelined chunks
    dict(model="qwen3-30b-a3b", gpu="h100", gpus=2, layout="tp2", engine="sglang", context=30_000, prompt=25_000),
])
def test_a_prefill_evaluated_a_block_of_chunks_at_a_time_equals_all_at_once(monkeypatch, kwargs):
    kwargs = dict(kwargs)
    model, gpu = kwargs.pop("model"), kwargs.pop("gpu")
    whole = gpusizer.estimate(model, gpu, **kwargs).prefill
    monkeypatch.setattr(passes, "CHUNK_BLOCK_ELEMENTS", 3)  # blocks of 3 chunks (1 with arrays)
    blocks = gpusizer.estimate(model, gpu, **kwargs).prefill
    for (path, a), (_, b) in zip(leaves(whole), leaves(blocks), strict=True):
        assert a == pytest.approx(b, rel=1e-12) if isinstance(a, float) else a == b, path


def test_chunk_blocks_bound_the_elements_of_one_block():
    assert passes.chunk_blocks(10_000, 512) == [(0, None)]  # 20 chunks of one configuration: one block
    blocks = passes.chunk_blocks(checks.MAX_TOKENS, 512, elements=2**16)  # 32,768 chunks x 65,536 rows
    assert blocks[:2] == [(0, 4), (4, 4)] and len(blocks) == 8192  # 2**18 elements / 2**16 rows = 4 chunks
    assert passes.chunk_blocks(checks.MAX_TOKENS, 512, elements=10**7)[1] == (1, 1)  # never fewer than one


def test_the_longest_prompt_on_the_smallest_chunk_answers():
    e = gpusizer.estimate("llama-3.1-8b", "h100", engine="llama.cpp", context=checks.MAX_TOKENS,
                          concurrency=1)
    assert e.prefill.chunks == checks.MAX_TOKENS // 512 == 32_768
    assert e.context_exceeds_model_max  # Llama 3.1: 131,072


# --- the Python API names what it refuses -------------------------------------------------------------


@pytest.mark.parametrize(("call", "error", "words"), [
    (lambda: gpusizer.estimate("llama-3.1-8b", None), TypeError, "gpu must be"),
    (lambda: gpusizer.estimate("llama-3.1-8b", "h100", gpus=[1, 2]), TypeError, "gpus must be"),
    (lambda: gpusizer.estimate("llama-3.1-8b", "h100", gpus=2.5), TypeError, "gpus must be"),
    (lambda: gpusizer.estimate("llama-3.1-8b", "h100", gpus=5000), ValueError, "gpus must be >= 1 and <= 4096"),
    (lambda: gpusizer.estimate("llama-3.1-8b", "h100", calibration="x"), TypeError, "calibration must be"),
    (lambda: gpusizer.estimate("llama-3.1-8b", "h100", context=2**24 + 1), ValueError,
     "context must be <= 16,777,216"),
    (lambda: gpusizer.estimate("llama-3.1-8b", "h100", prompt=10**12), ValueError, "prompt must be <="),
    (lambda: gpusizer.sweep(["llama-3.1-8b"], ["h100"], calibration=3), TypeError, "calibration must be"),
    (lambda: gpusizer.sweep(["llama-3.1-8b"], ["h100"], prices="x"), TypeError, "prices must be"),
    (lambda: gpusizer.sweep(["llama-3.1-8b"], ["h100"], context=range(1, 3001), concurrency=range(1, 3001)),
     ValueError, "more than the limit of 5,000,000"),
    (lambda: gpusizer.sweep(["llama-3.1-8b"], ["h100"], gpu_count=[1, 8192]), ValueError, "gpu_count must be <="),
])
def test_the_api_names_the_argument_it_refuses(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_sweep_refuses_a_grid_whose_prefills_take_too_many_chunk_steps(capsys):
    # 54 GPUs x 32,768 chunks of 512 tokens (llama.cpp) at 16M tokens = 1.77M steps: within the limit;
    # 48 models x 54 GPUs x 32,768 = 84.9M: over MAX_PREFILL_STEPS (50M)
    argv = ["sweep", "--engine", "llama.cpp", "--context", "16M", "--columns", "gpu"]
    assert main(argv) == 2
    assert "MAX_PREFILL_STEPS" in capsys.readouterr().err


# Every keyword of the public entry points, given a value of the wrong kind, is refused with an error that
# names it (issue 14: "every public function validates its arguments ... naming the parameter").
_WRONG = [None, "x", -1, 2.5, [1, 2], float("nan"), 10**9]
_ENTRY_POINTS = {
    "estimate": (lambda **kw: gpusizer.estimate("llama-3.1-8b", "h100", **kw),
                 ["weights", "kv_cache", "context", "concurrency", "prompt", "gpus", "engine", "layout"]),
    "sweep": (lambda **kw: gpusizer.sweep(["llama-3.1-8b"], ["h100"], **kw),
              ["weights", "kv_cache", "context", "concurrency", "gpu_count", "engine", "prompt", "layout"]),
    "best_layout": (lambda **kw: gpusizer.best_layout("llama-3.1-8b", "h100", 2, **kw),
                    ["objective", "context", "concurrency", "engine"]),
}


@pytest.mark.parametrize("entry", sorted(_ENTRY_POINTS))
def test_every_keyword_of_an_entry_point_is_named_when_refused(entry):
    call, keywords = _ENTRY_POINTS[entry]
    for keyword in keywords:
        for value in _WRONG:
            try:
                call(**{keyword: value})
            except (TypeError, ValueError, KeyError) as error:
                assert keyword in str(error) or keyword.replace("_", " ") in str(error), (keyword, value, error)
            # a value of the right kind after all (None: the default; 10**9 sequences: "does not fit") is fine


def _no_constant(name):
    raise AssertionError(f"JSON holds {name}")  # NaN, Infinity or -Infinity: not JSON, and never an answer


@pytest.mark.parametrize("model", ["llama-3.1-8b", "llama-3.1-70b"])
def test_fit_prefill_decode_and_ttft_are_finite_or_explicitly_missing_on_every_catalogue_gpu(capsys, model):
    # issue 16: `gpusizer fit` and `--json` over the whole GPU catalogue (a card the model does not fit on still
    # answers): each headline number is a finite number, or null with the reason next to it
    for gpu in GPUS:
        code = main(["fit", model, gpu, "--json"])
        data = json.loads(capsys.readouterr().out, parse_constant=_no_constant)
        assert code in (0, 1), gpu
        prefill, decode = data["prefill"], data["decode"]
        for value in (decode["expected_tokens_per_second"], decode["ceiling_tokens_per_second"],
                      decode["tpot_seconds_expected"], prefill["tokens_per_second_ceiling"],
                      prefill["ttft_seconds_ceiling"]):
            assert isinstance(value, float) and math.isfinite(value) and value > 0, (gpu, value)
        missing = [prefill[k] is None for k in ("tokens_per_second_expected", "ttft_seconds_expected")]
        assert missing in ([False, False], [True, True]), gpu
        assert (prefill["unknown"] is not None) == missing[0], gpu
        if not missing[0]:
            assert math.isfinite(prefill["tokens_per_second_expected"]), gpu
            assert math.isfinite(prefill["ttft_seconds_expected"]), gpu
        main(["fit", model, gpu])
        text = capsys.readouterr().out.lower()
        assert not re.search(r"\bnan\b|\binf\b", text), gpu
