"""The layout search: ranking the layouts that fit (``best_layout``) and llama.cpp's uneven layer split."""

import itertools

import pytest

import gpusizer
from gpusizer import layouts, performance


def test_uneven_layer_split_follows_memory():
    assert layouts.layer_split(80, [24e9, 24e9, 48e9]) == (20, 20, 40)
    s = layouts.uneven_layer_split("llama-3.1-70b", ["rtx-4090", "a100-80gb-pcie"], weights="q4_k_m", context=4096)
    assert sum(s.layers) == 80 and s.layers[1] > 2 * s.layers[0]
    one = performance.speed("llama-3.1-70b", "a100-80gb-pcie", weights="q4_k_m", context=4096, engine="llama.cpp")
    four = performance.speed("llama-3.1-70b", "rtx-4090", weights="q4_k_m", context=4096, engine="llama.cpp")
    slowest = min(one.decode.expected_tokens_per_second, four.decode.expected_tokens_per_second)
    assert slowest <= s.tokens_per_second_expected * 1.0001  # between the two cards, minus the hop
    with pytest.raises(ValueError, match="memory"):
        layouts.layer_split(10, [1.0, 0.0])


def test_best_layout_ranks_only_what_fits():
    best = gpusizer.best_layout("llama-3.1-70b", "h100-sxm", 8, weights="fp8")
    assert best[0].layout == "tp8"
    assert all(c.headroom_bytes >= 0 and c.why for c in best)
    rates = [c.tokens_per_second for c in best]
    assert rates == sorted(rates, reverse=True) or all(
        float(f"{a:.3g}") >= float(f"{b:.3g}") for a, b in itertools.pairwise(rates))
    assert not gpusizer.best_layout("llama-3.1-405b", "rtx-4090", 2)  # nothing fits: an empty answer
    with pytest.raises(ValueError, match="objective"):
        gpusizer.best_layout("llama-3.1-8b", "h100-sxm", 2, objective="cost")


def test_best_layout_for_throughput_prefers_kv_room_on_moe():
    best = gpusizer.best_layout("deepseek-r1", "hgx-h200-8x", objective="throughput", context=16384)
    assert best[0].layout in ("ep8", "tp2+ep8", "tp4+ep8") and best[0].concurrency > 1
    cpp = gpusizer.best_layout("llama-3.1-70b", "rtx-4090", 4, weights="q4_k_m", engine="llama.cpp")
    assert {c.layout for c in cpp} <= {"tp4", "layer4"}


def _scalar_best_layout(model, gpu, gpus=None, *, objective="latency", **options):
    """``best_layout`` as one scalar ``estimate`` per candidate (its implementation before the layout axis)."""
    record = gpusizer.catalog.model(model)
    _, count = gpusizer.estimator.resolve_target(gpu, gpus)
    engine = options.get("engine", "vllm")
    entry = gpusizer.interconnect.bundled().engines.get(engine)
    choices = []
    for plan in gpusizer.parallel.candidates(record, count, kinds=entry.layouts):
        e = gpusizer.estimate(record, gpu, gpus=count, layout=plan, **options)
        if not e.fits:
            continue
        p, d, users = e.parallel, e.decode, int(e.concurrency)
        rate = float(d.expected_tokens_per_second)
        if objective == "throughput":
            users = max(1, min(int(e.max_concurrency),
                               gpusizer.engines.engine(engine).max_sequences * plan.dp * plan.attention_dp))
            full = gpusizer.estimate(record, gpu, gpus=count, layout=plan, **dict(options, concurrency=users))
            d, p = full.decode, full.parallel
            rate = float(d.expected_aggregate_tokens_per_second)
        unit = "tok/s per user" if objective == "latency" else f"tok/s for {users} users"
        why = (f"{rate:,.0f} {unit}; scaling efficiency {p.scaling_efficiency:.0%}, communication "
               f"{p.communication_share:.0%} of the step over {p.links}; {e.memory.headroom_bytes / 1e9:.0f} GB "
               f"free per GPU, KV for {int(e.max_concurrency)} sequences")
        choices.append(layouts.LayoutChoice(
            layout=plan.name, objective=objective, tokens_per_second=rate, concurrency=users,
            scaling_efficiency=float(p.scaling_efficiency), communication_share=float(p.communication_share),
            weights_bytes=float(e.memory.weights_bytes), headroom_bytes=float(e.memory.headroom_bytes),
            max_concurrency=int(e.max_concurrency), links=p.links, why=why))
    return sorted(choices, key=lambda c: (-float(f"{c.tokens_per_second:.3g}"), -c.max_concurrency))


@pytest.mark.parametrize(("args", "options"), [
    (("llama-3.1-70b", "h100-sxm", 8), {}),
    (("llama-3.1-70b", "h100-sxm", 8), {"objective": "throughput", "weights": "fp8", "context": 32768}),
    (("qwen3-235b-a22b", "h200", 8), {"objective": "throughput"}),
    (("qwen3-30b-a3b", "mi300x", 4), {"engine": "sglang", "concurrency": 8, "prompt": 2048}),
    (("deepseek-v3", "hgx-b300-8x", 16), {"context": 16384, "concurrency": 4}),  # beyond the NVLink domain: NICs
    (("deepseek-v3", "hgx-b300-8x", 16), {"objective": "throughput", "kv_cache": "fp8"}),
    (("llama-3.1-8b", "rtx-4090", 4), {"engine": "llama.cpp", "weights": "q4_k_m"}),
    (("gpt-oss-120b", "l40s", 4), {"engine": "trtllm", "objective": "throughput"}),
    (("llama-3.1-8b", "h100-sxm", 1), {}),
])
def test_best_layout_equals_one_estimate_per_candidate(args, options):
    got, expected = gpusizer.best_layout(*args, **options), _scalar_best_layout(*args, **options)
    assert [c.layout for c in got] == [c.layout for c in expected] and got
    for a, b in zip(got, expected, strict=True):
        assert a.why == b.why and a.links == b.links and a.concurrency == b.concurrency, (a, b)
        for name in ("tokens_per_second", "scaling_efficiency", "communication_share", "weights_bytes",
                     "headroom_bytes", "max_concurrency"):
            assert getattr(a, name) == pytest.approx(getattr(b, name), rel=1e-12), (a.layout, name)


def test_best_layout_options_are_scalars():
    with pytest.raises(TypeError, match="context"):
        gpusizer.best_layout("llama-3.1-8b", "h100-sxm", 2, context=[4096, 8192])
    with pytest.raises(TypeError, match="weights"):
        gpusizer.best_layout("llama-3.1-8b", "h100-sxm", 2, weights=["fp8"])
    with pytest.raises(TypeError, match="layout"):
        gpusizer.best_layout("llama-3.1-8b", "h100-sxm", 2, layout="tp2")
