"""Prefix caching in the serving model (``Workload.prefix_hit_rate``): the marginal prefill by hand, the
simulation's two paths agreeing with a cache, capacity rising with the hit rate, sessions, and the shortlist flag."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from gpusizer import prefix_cache, serving
from gpusizer.cli import main
from gpusizer.serving import SLO, StepModel, Workload, simulation
from gpusizer.serving.step_table import cached_prompt_tokens, marginal_prefill_seconds


def linear(alpha: float = 1e-4, extra: float = 1e-6, chunk: int = 4096) -> StepModel:
    """a(n) = alpha n, e(S) = extra S: a step model of numbers."""
    grid = np.arange(0.0, chunk + 2)
    return StepModel(grid, alpha * grid, np.zeros_like(grid, dtype=bool), 0.0, np.array([0.0, 1e6]),
                     np.array([0.0, extra * 1e6]), chunk, 256, 1e9)


def test_marginal_prefill_by_hand() -> None:
    # 1000-token prompt, half cached (token-granular engine ""): 500 computed in one chunk, a(500) = 0.05 s, and the
    # attention extra of the uncached part e(1000) - e(500) = 0.0005 s; uncached: 0.1 + 0.001
    step = linear()
    assert marginal_prefill_seconds(step, np.array([1000.0]), 0.0)[0] == pytest.approx(0.101)
    cached = replace(step, prefix_hit_rate=0.5)
    assert cached_prompt_tokens(cached, 1000) == 500
    assert marginal_prefill_seconds(cached, np.array([1000.0]), 0.0)[0] == pytest.approx(0.0505)
    # vLLM's 16-token blocks: 0.5 x 1000 = 500 -> 31 blocks = 496 tokens
    assert cached_prompt_tokens(replace(cached, engine="vllm"), 1000) == 496


def test_event_loop_equals_lindley_recursion_with_a_cache() -> None:
    rng = np.random.default_rng(5)
    step = replace(serving.step_model("llama-3.1-8b", "h100-sxm", context=2048), prefix_hit_rate=0.6)
    arrivals = np.cumsum(rng.exponential(1 / 8, 3000))
    prompts = np.minimum(serving.sample_lengths(1500, "lognormal", 0.6, 3000, rng), step.chunk_tokens)
    fast = simulation._single_server(step, arrivals, prompts)
    loop = simulation._events(step, arrivals, prompts, np.ones(3000, dtype=np.int64), 1, 10**6)
    assert_allclose(loop[0], fast[0], rtol=1e-12)
    plain = simulation._single_server(replace(step, prefix_hit_rate=0.0), arrivals, prompts)
    assert fast[2]["busy"] < plain[2]["busy"]  # the cache shortens every prefill


def test_capacity_rises_with_the_hit_rate() -> None:
    # Llama 3.1 8B on one H100, 8k prompts and 256 output tokens, p95 TTFT 500 ms: 1.05 req/s uncached, 4.67 at 80 %
    rates = [serving.throughput("llama-3.1-8b", "h100-sxm", workload=Workload(
        rate=1, prompt_tokens=8192, output_tokens=256, prefix_hit_rate=h), slo=SLO(ttft_p95=0.5),
        latencies=False).capacity.requests_per_second for h in (0.0, 0.5, 0.8)]
    assert rates[0] < rates[1] < rates[2]
    assert rates[2] / rates[0] > 3


def test_shortlist_takes_the_hit_rate(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["shortlist", "llama-3.1-8b", "--prompt", "8k", "--output-tokens", "256", "--rate", "3", "--ttft-p95",
            "500ms", "--gpus", "h100", "--max-gpus", "2", "--simulate", "0", "--json"]
    assert main(base) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main([*base, "--shared-prefix", "4k", "--prefix-cache", "0.8"]) == 0
    cached = json.loads(capsys.readouterr().out)
    assert plain["workload"]["prefix_hit_rate"] == 0.0 and cached["workload"]["prefix_hit_rate"] == 0.8
    assert cached["rows"][0]["usd_per_million_tokens"] <= plain["rows"][0]["usd_per_million_tokens"]


@settings(max_examples=50, deadline=None)
@given(turns=st.integers(1, 200), system=st.integers(0, 20_000), user=st.integers(1, 4000),
       output=st.integers(1, 4000))
def test_session_hit_rate_grows_with_the_turns(turns: int, system: int, user: int, output: int) -> None:
    now, mean = prefix_cache.session_hit_rate(turns, system, user, output)
    later, _ = prefix_cache.session_hit_rate(turns + 1, system, user, output)
    assert 0.0 <= now < 1.0 and now <= later
    assert now * mean == pytest.approx(mean - user)  # everything but the new message is cached


def test_session_turns_flag(capsys: pytest.CaptureFixture[str]) -> None:
    # 4 turns of a 200-token message and a 300-token answer after a 1000-token system prompt: mean prompt 1950,
    # hit rate 1 - 200 / 1950 (session_hit_rate by hand above)
    base = ["throughput", "llama-3.1-8b", "h100", "--prompt", "200", "--output-tokens", "300", "--ttft-p95", "500ms",
            "--json"]
    assert main([*base, "--shared-prefix", "1000", "--session-turns", "4"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["workload"]["prompt_tokens"] == 1950 and data["workload"]["prefix_hit_rate"] == pytest.approx(
        1 - 200 / 1950)
    assert main([*base, "--prompt", "1950"]) == 0  # the same mean prompt without the cache serves fewer requests
    plain = json.loads(capsys.readouterr().out)
    assert plain["capacity"]["requests_per_second"] < data["capacity"]["requests_per_second"]
