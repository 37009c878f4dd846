"""Engine memory profiles: the KV-pool rules by hand."""

import pytest

from gpusizer import engines

GB = 1e9


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ("share_of_total", 0.9 * 80 - 16 - 2),  # vLLM: 0.9 x 80 GB holds everything
        ("static_share", 0.9 * 80 - 16),  # SGLang: weights + KV in 0.9 x 80; 2 GB overhead fits in the other 8
        ("share_of_free", 0.9 * (80 - 16 - 2)),  # TensorRT-LLM: 0.9 of what is free after loading
        ("whole", 80 - 16 - 2),  # llama.cpp with fraction 1
    ],
)
def test_kv_pool_rules(rule, expected):
    fraction = 1.0 if rule == "whole" else 0.9
    assert engines.kv_pool_bytes(80 * GB, 16 * GB, 2 * GB, rule=rule, fraction=fraction) == pytest.approx(expected * GB)


def test_static_share_charges_overhead_that_spills_out_of_the_rest():
    # 10 GB overhead, only 8 GB outside the static share: 2 GB come out of the pool
    pool = engines.kv_pool_bytes(80 * GB, 16 * GB, 10 * GB, rule="static_share", fraction=0.9)
    assert pool == pytest.approx((72 - 16 - 2) * GB)


def test_every_profile_is_sourced_and_uses_a_known_rule():
    for profile in engines.ENGINES.values():
        assert profile.source and profile.kv_rule in engines.KV_POOL_RULES
    assert engines.engine("vllm").memory_fraction == 0.9 and engines.engine("vllm").block_size == 16


def test_unknown_engine_names_the_known_ones():
    with pytest.raises(ValueError, match="vllm"):
        engines.engine("ollama9")
    assert engines.engine("TRT-LLM").name == "trtllm"


@pytest.mark.parametrize("name", list(engines.ENGINES))
def test_profiles_built_without_validation_pass_it_unchanged(name):
    # ENGINES skips validation at import (model_construct); validating each profile must change nothing,
    # the Python type of every field included (an int where a float is declared would leak into results).
    profile = engines.ENGINES[name]
    again = engines.EngineProfile.model_validate(profile.model_dump())
    assert again == profile
    assert {k: type(v) for k, v in dict(again).items()} == {k: type(v) for k, v in dict(profile).items()}


def test_static_share_takes_the_fraction_of_the_memory_free_before_loading():
    # sgl-project/sglang@226149ac457b model_runner_kv_cache_mixin.py profile_max_num_token:
    # rest = free_after_load - free_before_load x (1 - f); free_before_load = 80 - 2 GB non-torch
    pool = engines.kv_pool_bytes(80 * GB, 16 * GB, 3 * GB, rule="static_share", fraction=0.9, non_torch=2 * GB)
    assert pool == pytest.approx((0.9 * 78 - 16) * GB)
    assert engines.static_share_pool_bytes(80 * GB, 16 * GB, 3 * GB, 0.9, 2 * GB) == pytest.approx(pool)
    # 10 GB of activations and graphs against a 7.8 GB slack: 2.2 GB come out of the pool
    spilled = engines.static_share_pool_bytes(80 * GB, 16 * GB, 12 * GB, 0.9, 2 * GB)
    assert spilled == pytest.approx((0.9 * 78 - 16 - 2.2) * GB)
