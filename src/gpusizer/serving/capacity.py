r"""Capacity within an SLO: ``max_rate``, the largest request rate that meets every target.

``max_rates_coarse`` evaluates ``load`` on a rate grid for several speed scalings at once (a sweep's fast
path); the ``closed-form`` method refines its crossing with ``scipy.optimize.brentq``, the ``simulation``
method bisects on ``simulate`` quantiles. ``MAX_RATE_METHODS`` lists them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpusizer.checks import instance, one_of
from gpusizer.serving.queueing import Load, load
from gpusizer.serving.simulation import simulate
from gpusizer.serving.step_table import StepModel, batch_limit, marginal_prefill_seconds
from gpusizer.serving.workload import SLO, Lengths, Workload

__all__ = ["MAX_RATE_METHODS", "MaxRate", "max_rate", "max_rate_methods", "max_rates_coarse"]


@dataclass(frozen=True)
class MaxRate:
    """The largest request rate one engine serves within an SLO."""

    rate: float
    """Largest rate meeting every target; 0 when even a near-idle engine misses one. [1/s]"""
    binding: str
    """What stops a higher rate: ``ttft``, ``tpot``, ``e2e`` (a target), or ``prefill``, ``kv-cache``,
    ``max-sequences`` (the engine saturates before any target binds)."""
    method: str
    """``closed-form`` or ``simulation``."""
    evaluations: int
    """Latency evaluations the search used. [-]"""
    compute_bound: bool
    """Whether decode steps at that rate are compute-bound (else bandwidth-bound)."""
    batch: float
    """Mean sequences decoding at that rate. [-]"""


def _ratios(slo: SLO, ttft: Any, tpot: Any, e2e: Any) -> dict[str, Any]:
    out = {}
    for name, target, value in (("ttft", slo.ttft_p95, ttft), ("tpot", slo.tpot_p95, tpot), ("e2e", slo.e2e_p95, e2e)):
        if target is not None:
            out[name] = np.where(np.isnan(value), 0.0, np.asarray(value, dtype=float) / target)
    return out


def _closed_form_excess(step: StepModel, workload: Workload, slo: SLO, rate: Any, **scales: Any
                        ) -> tuple[np.ndarray, Load]:
    point = load(step, workload, rate, quantile=slo.quantile, **scales)
    ratios = _ratios(slo, point.ttft_quantile, point.tpot_quantile, point.e2e_quantile)
    worst = np.max(np.stack([np.broadcast_to(r, np.shape(point.rate)) for r in ratios.values()]), axis=0)
    return np.where(np.asarray(point.stable), worst - 1.0, np.inf), point


def _rate_ceiling(step: StepModel, workload: Workload) -> float:
    """A rate no engine state can sustain: the prefill or decode capacity with no waiting at all."""
    lengths = Lengths.of(workload)
    prefill = float(np.mean(marginal_prefill_seconds(step, lengths.prompt, 0.0)))
    decode_steps = float(np.mean(lengths.output - 1))
    cap = batch_limit(step, float(lengths.prompt.mean() + lengths.output.mean()))
    per_token = (np.interp(max(cap, 1.0), step.token_grid, step.token_seconds) / max(cap, 1.0)
                 + step.kv_seconds * float(lengths.prompt.mean()))
    bounds = [1.0 / prefill] if prefill > 0 else []
    if decode_steps > 0:
        bounds.append(1.0 / (decode_steps * per_token))
    return 1.5 * min(bounds) if bounds else 1e6


def _binding_of(slo: SLO, point: Load, index: int) -> str:
    """The constraint that fails first at ``point.rate[index]``."""
    if not bool(np.ravel(point.stable)[index]):
        return str(np.ravel(point.limit)[index])
    ratios = _ratios(slo, *(np.ravel(v)[index] for v in (point.ttft_quantile, point.tpot_quantile,
                                                         point.e2e_quantile)))
    return max(ratios, key=lambda name: float(ratios[name]))


def _binding(step: StepModel, workload: Workload, slo: SLO, rate: float, method: str, **sim: Any) -> tuple[str, Any]:
    point = load(step, workload, rate, quantile=slo.quantile)
    if method == "closed-form":
        return _binding_of(slo, point, 0), point
    run = simulate(step, workload, rate=rate, **sim)
    q = slo.quantile
    ratios = _ratios(slo, run.percentile("ttft", q), run.percentile("tpot", q), run.percentile("e2e", q))
    return max(ratios, key=lambda name: float(ratios[name])), point


def _crossing(grid: np.ndarray, values: np.ndarray) -> tuple[int, float]:
    """Index of the first positive value and the linear interpolation of the zero before it."""
    over = values > 0
    if not over.any():
        return len(grid) - 1, float(grid[-1])
    i = max(int(np.argmax(over)), 1)
    a, b, ea, eb = float(grid[i - 1]), float(grid[i]), float(values[i - 1]), float(values[i])
    return i, (a + (b - a) * (-ea) / (eb - ea) if eb > ea and ea <= 0 and eb < 1e6 else a)


def max_rates_coarse(step: StepModel, workload: Workload, slo: SLO, scales: Any, points: int = 48
                      ) -> list[MaxRate]:
    r"""Largest rates within ``slo`` for several speed scalings of one engine at once.

    One ``load`` over scalings x a geometric grid of ``points`` rates, from :math:`10^{-4}` of a ceiling
    no engine state sustains up to it, and linear interpolation of the first crossing of
    :math:`g(\lambda) = \max_m q_m(\lambda)/T_m - 1` (about 1 % from the exact root): the fast path of a
    sweep, and the start of ``max_rate``.

    Parameters
    ----------
    step : StepModel
        The configuration's step table.
    workload : Workload
        Request shape (its ``rate`` is ignored).
    slo : SLO
        Latency targets.
    scales : array_like
        Pairs ``(decode_scale, prefill_scale)`` of factors on decode step times and prompt extras, shape
        ``(k, 2)``: ``(1, 1)`` is the table as built; ``StepModel.decode_band`` and ``prefill_band`` hold the
        factors at the ends of the speed band. [-]
    points : int
        Rates on the grid. [-]

    Returns
    -------
    list of MaxRate
        One per pair, in order; ``method`` is ``closed-form`` and ``evaluations`` is ``points``. A rate of 0
        means even the lowest rate of the grid misses a target.

    Examples
    --------
    >>> from gpusizer.serving import step_model
    >>> s = step_model("llama-3.1-8b", "h100-sxm", context=2560)
    >>> w = Workload(rate=1, prompt_tokens=2048, output_tokens=512)
    >>> fast, slow = max_rates_coarse(s, w, SLO(ttft_p95=0.5, tpot_p95=0.05), [(1.0, 1.0), (1.5, 1.5)])
    >>> fast.rate > slow.rate > 0
    True
    """
    factors = np.asarray(scales, dtype=float).reshape(-1, 2)
    top = _rate_ceiling(step, workload) / float(factors.min())
    grid = np.geomspace(top * 1e-4, top, points)
    excess, point = _closed_form_excess(step, workload, slo, grid[None, :], decode_scale=factors[:, :1],
                                        prefill_scale=factors[:, 1:])
    excess = np.minimum(np.asarray(excess, dtype=float), 1e6).reshape(len(factors), points)
    out = []
    batches = np.reshape(point.batch, excess.shape)
    for row, values in enumerate(excess):
        i, rate = _crossing(grid, values)
        here = row * points + (0 if values[0] > 0 else i)
        batch = float(np.interp(rate, grid[max(i - 1, 0):i + 1], batches[row, max(i - 1, 0):i + 1]))
        out.append(MaxRate(0.0 if values[0] > 0 else rate, _binding_of(slo, point, here), "closed-form", points,
                           bool(np.ravel(point.compute_bound)[here]), batch))
    return out


def _max_rate_closed_form(step: StepModel, workload: Workload, slo: SLO, *, solver: str = "brentq",
                          **_: Any) -> MaxRate:
    if solver not in ("brentq", "grid", "coarse"):
        raise ValueError(f"solver must be 'brentq', 'grid' or 'coarse', got {solver!r}")
    coarse = max_rates_coarse(step, workload, slo, [(1.0, 1.0)])[0]
    if solver == "coarse" or coarse.rate == 0:
        return coarse
    top = _rate_ceiling(step, workload)
    grid = np.geomspace(top * 1e-4, top, 48)

    def evaluate(rate: Any) -> tuple[np.ndarray, Load]:
        excess, point = _closed_form_excess(step, workload, slo, rate)
        return np.minimum(np.asarray(excess, dtype=float), 1e6), point

    i = int(np.searchsorted(grid, coarse.rate))  # the coarse rate lies in the bracket [grid[i-1], grid[i])
    lo, hi = float(grid[max(i - 1, 0)]), float(grid[min(i + 1, len(grid) - 1)])
    evaluations = coarse.evaluations
    if solver == "brentq":
        from scipy.optimize import brentq

        if float(evaluate(np.array([hi]))[0][0]) <= 0:
            return coarse
        rate, result = brentq(lambda x: float(evaluate(np.array([x]))[0][0]), lo, hi, xtol=lo * 1e-5, rtol=1e-6,
                              full_output=True)
        evaluations += result.function_calls + 1
        name, point = _binding(step, workload, slo, rate * 1.001, "closed-form")
        here = 0
    else:
        fine = np.geomspace(lo, hi, 24)
        values, point = evaluate(fine)
        evaluations += len(fine)
        here, rate = _crossing(fine, values)
        name = _binding_of(slo, point, here)
    return MaxRate(rate, name, "closed-form", evaluations, bool(np.ravel(point.compute_bound)[here]),
                   float(np.ravel(point.batch)[here]))


def _max_rate_simulation(
    step: StepModel, workload: Workload, slo: SLO, *, requests: int = 1500, seed: int = 0, tolerance: float = 0.02,
    **_: Any,
) -> MaxRate:
    """Bisection on the simulated quantiles, bracketed from the closed form (common random numbers). A rate the
    closed form finds unstable fails outright: a finite run cannot show a queue that grows without bound."""
    guess = _max_rate_closed_form(step, workload, slo, solver="coarse")
    q = slo.quantile
    evaluations = 0
    failed: dict[str, Any] = {}

    def excess(rate: float) -> float:
        nonlocal evaluations, failed
        evaluations += 1
        point = load(step, workload, rate, quantile=q)
        if not point.stable:  # a finite run of an overloaded engine can still finish inside loose targets
            failed = {"binding": str(point.limit), "batch": float(point.batch)}
            return math.inf
        run = simulate(step, workload, rate=rate, requests=requests, seed=seed)
        ratios = _ratios(slo, run.percentile("ttft", q), run.percentile("tpot", q), run.percentile("e2e", q))
        worst = max(ratios, key=lambda name: float(ratios[name]))
        if float(ratios[worst]) > 1:
            failed = {"binding": worst, "batch": run.mean_batch}
        return float(ratios[worst]) - 1.0

    start = guess.rate if guess.rate > 0 else _rate_ceiling(step, workload) * 1e-3
    lo = hi = start
    if excess(start) <= 0:
        hi = start * 1.1
        while excess(hi) <= 0 and hi < 1e3 * start:
            lo, hi = hi, hi * 1.25
    else:
        lo = start / 1.1
        while excess(lo) > 0 and lo > start * 1e-4:
            hi, lo = lo, lo / 1.25
        if lo <= start * 1e-4:
            return MaxRate(0.0, failed.get("binding", guess.binding), "simulation", evaluations, guess.compute_bound,
                           0.0)
    while hi - lo > tolerance * lo:
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if excess(mid) <= 0 else (lo, mid)
    point = load(step, workload, lo, quantile=q)
    return MaxRate(lo, failed.get("binding", guess.binding), "simulation", evaluations, bool(point.compute_bound),
                   float(point.batch))


#: Ways to find the largest rate within an SLO, by name.
MAX_RATE_METHODS: dict[str, Callable[..., MaxRate]] = {
    "closed-form": _max_rate_closed_form,
    "simulation": _max_rate_simulation,
}


def max_rate_methods() -> tuple[str, ...]:
    """Names accepted by ``max_rate(method=...)``."""
    return tuple(MAX_RATE_METHODS)


def max_rate(step: StepModel, workload: Workload, slo: SLO, *, method: str = "closed-form", **options: Any) -> MaxRate:
    r"""The largest request rate one engine serves with every ``slo`` target met.

    Latency quantiles rise with the rate, so the answer is the first crossing of
    :math:`g(\lambda) = \max_m q_m(\lambda)/T_m - 1` from below. ``closed-form`` evaluates ``load`` on a
    geometric grid of 48 rates (``max_rates_coarse``) below the engine's capacity, then refines the first crossing with
    ``scipy.optimize.brentq``. ``simulation`` starts there and bisects on ``simulate`` quantiles
    (``requests``, ``seed``, ``tolerance`` as options), with the same random numbers at every rate.

    Parameters
    ----------
    step : StepModel
    workload : Workload
        Request shape (its ``rate`` is ignored).
    slo : SLO
    method : str
        ``"closed-form"`` or ``"simulation"`` (``max_rate_methods()``).

    Returns
    -------
    MaxRate

    Examples
    --------
    >>> from gpusizer.serving import step_model
    >>> s = step_model("llama-3.1-8b", "h100-sxm", context=2560)
    >>> w = Workload(rate=1, prompt_tokens=2048, output_tokens=512)
    >>> best = max_rate(s, w, SLO(ttft_p95=0.5, tpot_p95=0.05))
    >>> best.rate > 1, best.binding in ("ttft", "tpot")
    (True, True)
    """
    instance(step, "step", StepModel)
    instance(workload, "workload", Workload)
    instance(slo, "slo", SLO)
    one_of(method, "method", tuple(MAX_RATE_METHODS))
    return MAX_RATE_METHODS[method](step, workload, slo, **options)
