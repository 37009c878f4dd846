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
