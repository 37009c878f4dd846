"""Serving under load: queueing formulas, the discrete-event simulation, and the largest rate within an SLO.

Validation of the simulation against closed forms where both are exact (M/D/1 mean wait, M/M/1 sojourn
tail), determinism for a seed, convergence of its p99, agreement of the two event paths, and the
physical invariants of the closed forms (hypothesis).
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from gpusizer import serving
from gpusizer.serving import SLO, StepModel, Workload, simulation
from gpusizer.serving.step_table import prompt_extra_seconds


def synthetic(alpha=1e-4, floor=0.0, kappa=0.0, extra=0.0, chunk=4096, max_sequences=256, capacity=1e9):
    """A step model of numbers: a(n) = max(floor, alpha n) for n > 0, prompt extra linear in length."""
    grid = np.concatenate([[0.0], np.unique(np.rint(np.geomspace(1, max(chunk, max_sequences) + 1, 64)))])
    seconds = np.where(grid > 0, np.maximum(floor, alpha * grid), 0.0)
    prompts = np.array([0.0, 1e6])
    return StepModel(grid, seconds, np.zeros_like(grid, dtype=bool), kappa, prompts, np.array([0.0, extra * 1e6]),
                     chunk, max_sequences, capacity)


@pytest.fixture(scope="module")
def h100_70b():
    return serving.step_model("llama-3.1-70b", "h100-sxm", gpus=4, context=2560)


CHAT = Workload(rate=2, prompt_tokens=2048, output_tokens=512)


# --- records and inputs ---------------------------------------------------------------------------


def test_workload_and_slo_validate_with_the_parameter_named():
    with pytest.raises(ValueError, match="rate"):
        Workload(rate=0, prompt_tokens=10, output_tokens=10)
    with pytest.raises(ValueError, match="prompt_cv"):
        Workload(rate=1, prompt_tokens=10, output_tokens=10, prompt_distribution="uniform", prompt_cv=0.9)
    with pytest.raises(ValueError, match="at least one"):
        SLO()
    with pytest.raises(ValueError, match="ttft_p95"):
        SLO(ttft_p95=-1)
    assert Workload(rate=1, prompt_tokens=2, output_tokens=3).at(4).rate == 4


@pytest.mark.parametrize("distribution", sorted(serving.DISTRIBUTIONS))
def test_length_distributions_have_their_mean(distribution):
    nodes = serving.length_quantiles(1000, distribution, cv=0.5, nodes=400)
    draws = serving.sample_lengths(1000, distribution, 0.5, 100_000, np.random.default_rng(0))
    assert_allclose(nodes.mean(), 1000, rtol=0.02)
    assert_allclose(draws.mean(), 1000, rtol=0.02)
    assert draws.min() >= 1 and draws.dtype.kind == "i"


def test_unknown_distribution_is_named():
    with pytest.raises(ValueError, match="distribution must be one of"):
        serving.length_quantiles(10, "pareto")


def test_step_seconds_broadcasts_like_elementwise_calls(h100_70b):
    tokens = np.array([[1], [64], [2048]])
    kv = np.array([0.0, 1e5, 1e6])
    grid = serving.step_seconds(h100_70b, tokens, kv)
    assert grid.shape == (3, 3)
    for i in range(3):
        for j in range(3):
            assert grid[i, j] == pytest.approx(serving.step_seconds(h100_70b, int(tokens[i, 0]), float(kv[j])))


def test_step_model_reproduces_idle_prefill_and_decode(h100_70b):
    import gpusizer

    e = gpusizer.estimate("llama-3.1-70b", "h100-sxm", gpus=4, context=2048, prompt=2048)
    one = serving.step_seconds(h100_70b, 1, kv_tokens=2047)
    assert one == pytest.approx(e.decode.tpot_seconds_expected, rel=0.02)
    prefill = serving.step_seconds(h100_70b, 2048, prefill_seconds=prompt_extra_seconds(h100_70b, 2048))
    assert prefill == pytest.approx(e.prefill.seconds_expected, rel=0.02)


# --- the simulation against exact queueing results ------------------------------------------------


def md1_case(rho=0.7, service=0.1):
    """One prompt per step, one-token outputs, fixed prompts: an M/D/1 queue with service time D."""
    step = synthetic(alpha=service / 1000)
    return step, Workload(rate=rho / service, prompt_tokens=1000, output_tokens=1)


def test_md1_mean_wait_closed_form_and_simulation_agree_with_pollaczek_khinchine():
    rho, service = 0.7, 0.1
    step, workload = md1_case(rho, service)
    exact = service + rho * service / (2 * (1 - rho))  # D + W_q, W_q = rho D / (2 (1 - rho))
    closed = serving.load(step, workload, prefills_per_step=1)
    assert closed.ttft_mean == pytest.approx(exact, rel=1e-6)
    run = serving.simulate(step, workload, requests=400_000, seed=7, prefills_per_step=1)
    assert run.summary()["ttft_mean"] == pytest.approx(exact, rel=0.02)


def test_event_loop_equals_lindley_recursion():
    rng = np.random.default_rng(3)
    step = serving.step_model("llama-3.1-8b", "h100-sxm", context=2048)
    arrivals = np.cumsum(rng.exponential(1 / 8, 5000))
    prompts = np.minimum(serving.sample_lengths(1500, "lognormal", 0.6, 5000, rng), step.chunk_tokens)
    fast = simulation._single_server(step, arrivals, prompts)
    loop = simulation._events(step, arrivals, prompts, np.ones(5000, dtype=np.int64), 1, 10**6)
    assert_allclose(loop[0], fast[0], rtol=1e-12)
    assert loop[2]["busy"] == pytest.approx(fast[2]["busy"], rel=1e-9)


def mm1_case(rho=0.8):
    """Exponential prompts, time proportional to length, one prompt per step: M/M/1 (sojourn ~ Exp(mu - lambda))."""
    step = synthetic(alpha=1e-3, chunk=200_000)
    mean = 100.0
    workload = Workload(rate=rho / (mean * 1e-3), prompt_tokens=mean, output_tokens=1,
                        prompt_distribution="exponential")
    mu = 1 / (mean * 1e-3)
    return step, workload, math.log(100) / (mu - workload.rate)


def test_p99_converges_to_the_mm1_sojourn_quantile_as_the_run_grows():
    step, workload, exact = mm1_case(rho=0.6)
    spreads, errors = [], []
    for requests in (2_000, 20_000, 200_000, 1_000_000):
        p99 = [serving.simulate(step, workload, requests=requests, seed=seed, prefills_per_step=1)
               .percentile("ttft", 0.99) for seed in range(6)]
        spreads.append(np.std(p99) / exact)  # seed-to-seed scatter
        errors.append(abs(np.mean(p99) / exact - 1))
    assert spreads == sorted(spreads, reverse=True)
    assert spreads[-1] < 0.015 and errors[-1] < 0.015


def test_simulation_is_deterministic_for_a_seed(h100_70b):
    a = serving.simulate(h100_70b, CHAT, requests=300, seed=11)
    b = serving.simulate(h100_70b, CHAT, requests=300, seed=11)
    c = serving.simulate(h100_70b, CHAT, requests=300, seed=12)
    assert_allclose(a.ttft, b.ttft) and a.events == b.events
    assert not np.allclose(a.ttft, c.ttft)


def test_littles_law_holds_in_the_simulation(h100_70b):
    run = serving.simulate(h100_70b, CHAT, requests=3000, seed=2, warmup=0, cooldown=0)
    decoding = np.nansum(run.tpot * (CHAT.output_tokens - 1)) / run.duration
    assert run.mean_batch == pytest.approx(decoding, rel=0.03)


def test_closed_form_tracks_the_simulation_below_saturation(h100_70b):
    for rate in (1.0, 2.0, 3.0):
        run = serving.simulate(h100_70b, CHAT, rate=rate, requests=4000, seed=0).summary()
        point = serving.load(h100_70b, CHAT, rate)
        assert point.ttft_mean == pytest.approx(run["ttft_mean"], rel=0.15)
        assert point.tpot_mean == pytest.approx(run["tpot_mean"], rel=0.08)
        assert point.ttft_quantile == pytest.approx(run["ttft_p95"], rel=0.25)
        assert point.tpot_quantile == pytest.approx(run["tpot_p95"], rel=0.15)


def test_chunked_prefill_interference_lengthens_decode_steps(h100_70b):
    quiet = serving.simulate(h100_70b, CHAT.at(0.2), requests=400, seed=1).summary()["tpot_mean"]
    busy = serving.simulate(h100_70b, CHAT.at(3.0), requests=400, seed=1).summary()["tpot_mean"]
    idle_step = serving.step_seconds(h100_70b, 1, kv_tokens=2300)
    assert idle_step < quiet < busy


def test_requests_longer_than_the_pool_are_rejected_and_events_are_bounded():
    step = synthetic(alpha=1e-5, capacity=1500)
    workload = Workload(rate=5, prompt_tokens=1000, output_tokens=100, prompt_distribution="exponential")
    run = serving.simulate(step, workload, requests=500, seed=0)
    assert run.rejected > 0 and run.percentile("ttft", 0.5) == math.inf
    short = serving.simulate(step, workload.at(50), requests=500, seed=0, max_events=50)
    assert short.truncated and short.events == 50


# --- properties -----------------------------------------------------------------------------------


def roofline_step(floor, ridge, kappa, extra):
    """A memory-bound floor up to a ridge of ``ridge`` tokens per step, compute-bound beyond (real GPUs: 100-1000)."""
    return synthetic(alpha=floor / ridge, floor=floor, kappa=kappa, extra=extra)


steps = st.builds(roofline_step, floor=st.floats(2e-3, 5e-2), ridge=st.floats(64, 1024), kappa=st.floats(0, 1e-7),
                  extra=st.floats(0, 1e-6))
shapes = st.builds(Workload, rate=st.just(1.0), prompt_tokens=st.floats(64, 8000), output_tokens=st.floats(8, 2000),
                   prompt_distribution=st.sampled_from(["fixed", "exponential", "lognormal"]),
                   output_distribution=st.sampled_from(["fixed", "exponential"]))


@settings(max_examples=150, deadline=None)
@given(step=steps, workload=shapes, low=st.floats(0.01, 50), factor=st.floats(1.0, 3.0))
def test_raising_the_rate_never_lowers_closed_form_latency(step, workload, low, factor):
    a, b = serving.load(step, workload, low), serving.load(step, workload, low * factor)
    for name in ("ttft_mean", "ttft_quantile", "tpot_mean", "tpot_quantile", "e2e_mean", "e2e_quantile"):
        assert getattr(b, name) >= getattr(a, name) * (1 - 1e-9), name
    assert b.batch >= a.batch - 1e-9
    # ``busy`` (rho_prefill + rho_decode, an approximation) may dip by ~1e-6 near saturation: not asserted


@settings(max_examples=15, deadline=None)
@given(low=st.floats(0.5, 7.0), factor=st.floats(1.0, 2.0), seed=st.integers(0, 3))
def test_raising_the_rate_never_lowers_any_simulated_wait_of_a_plain_queue(low, factor, seed):
    step, workload = md1_case()
    a = serving.simulate(step, workload, rate=low, requests=2000, seed=seed, prefills_per_step=1)
    b = serving.simulate(step, workload, rate=low * factor, requests=2000, seed=seed, prefills_per_step=1)
    assert np.all(b.ttft >= a.ttft - 1e-12)  # common random numbers: every request waits at least as long


def test_raising_the_rate_never_lowers_simulated_mean_latency(h100_70b):
    means = [serving.simulate(h100_70b, CHAT, rate=r, requests=800, seed=5).summary()
             for r in (0.5, 1, 2, 3, 4, 6)]
    for metric in ("ttft_mean", "tpot_mean", "e2e_mean"):
        values = [m[metric] for m in means]
        assert values == sorted(values), metric


# --- the throughput-latency curve and the largest rate --------------------------------------------


def test_concurrency_curve_trades_latency_for_throughput(h100_70b):
    curve = serving.concurrency_curve(h100_70b, [1, 4, 16, 64, 256, 1024], prompt_tokens=2048, output_tokens=512)
    assert np.all(np.diff(curve.tpot_seconds) > 0)
    assert np.all(np.diff(curve.aggregate_tokens_per_second[:5]) > 0)
    assert curve.fits.tolist() == [True, True, True, True, False, False]
    # pooled tokens / 2,560 per sequence (H100: 79.22 GiB torch total); the profile peak is the forward pass
    # (0.75 GB per GPU), not forward + sampler (1.28 GB): 0.53 GB / (2,560 x 81,920 B) = 2.5 sequences more
    assert curve.max_concurrency == 178


def test_max_rate_solvers_agree_and_sit_on_the_boundary(h100_70b):
    slo = SLO(ttft_p95=0.5, tpot_p95=0.05)
    exact = serving.max_rate(h100_70b, CHAT, slo)
    grid = serving.max_rate(h100_70b, CHAT, slo, solver="grid")
    coarse = serving.max_rate(h100_70b, CHAT, slo, solver="coarse")
    assert grid.rate == pytest.approx(exact.rate, rel=1e-3)
    assert coarse.rate == pytest.approx(exact.rate, rel=0.03)
    assert serving.load(h100_70b, CHAT, exact.rate).ttft_quantile == pytest.approx(0.5, rel=1e-3)
    assert exact.binding == "ttft"
    simulated = serving.max_rate(h100_70b, CHAT, slo, method="simulation", requests=1500)
    assert simulated.rate == pytest.approx(exact.rate, rel=0.25)


def test_an_unreachable_slo_gives_rate_zero_and_names_the_binding_target(h100_70b):
    best = serving.max_rate(h100_70b, CHAT, SLO(tpot_p95=0.001), solver="grid")
    assert best.rate == 0 and best.binding == "tpot"
    with pytest.raises(ValueError, match="method must be one of"):
        serving.max_rate(h100_70b, CHAT, SLO(tpot_p95=0.05), method="guess")


def test_a_kv_bound_engine_saturates_on_the_pool():
    step = synthetic(alpha=1e-6, floor=0.01, capacity=20_000)
    point = serving.load(step, Workload(rate=50, prompt_tokens=500, output_tokens=500))
    assert not point.stable and point.limit == "kv-cache"
    best = serving.max_rate(step, Workload(rate=1, prompt_tokens=500, output_tokens=500), SLO(e2e_p95=1e3))
    assert best.binding == "kv-cache"
