r"""The load curve: throughput, TTFT and TPOT p50/p95/p99 against concurrency or request rate, and its knee.

``load_curve(model, gpu, workload=..., concurrency=[1, 2, 4, ...])`` (or ``rates=[...]``) evaluates the
closed forms of ``load`` along the load axis of one engine, finds the knee of the throughput curve
(``knee``) and, with an ``SLO``, the largest rate and concurrency within it (``max_rate``).

Both axes are one curve. Under a Poisson load :math:`\lambda` a request spends :math:`E2E(\lambda)` in the
engine (queueing, prefill and decode), so by Little's law the requests in flight, the *concurrency* a
benchmark client such as ``vllm bench serve --max-concurrency`` holds, are

.. math:: C(\lambda) = \lambda \, E[\mathrm{E2E}(\lambda)], \qquad X(\lambda) = \lambda\, o

with :math:`X` the output tokens per second. A concurrency :math:`C` is served at the rate where
:math:`C(\lambda) = C`, found on a dense geometric rate grid below the engine's saturated (offline) rate.
Concurrency beyond what the engine sustains still maps to a rate just below saturation: the extra requests
wait for a slot, as they would in a closed loop.

**The knee** (``knee``): the concurrency at which one more user adds less than ``fraction`` (default
one half) of the throughput a user gets on an idle engine,

.. math:: C^* = \min\{C : \mathrm{d}X/\mathrm{d}C < f\, X(C_0)/C_0\}

with :math:`C_0` the lightest load evaluated (the marginal-gain definition of a knee; for
:math:`X = aC/(1 + C/b)` it is :math:`C^* = b(1/\sqrt{f} - 1)`). Beyond it latency grows faster than
throughput: the "how many users before latency bends" of sizing guides.

Deliberate omissions: as ``gpusizer.serving`` (preemption, speculative decoding, disaggregated prefill);
one replica (a data-parallel layout is the same curve times the replicas); the expected values only (the
ceiling and band of ``throughput`` are not repeated per point).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gpusizer import catalog, checks, unpack
from gpusizer.estimator import resolve_target
from gpusizer.serving.capacity import max_rate
from gpusizer.serving.curve import concurrency_curve
from gpusizer.serving.queueing import load
from gpusizer.serving.step_table import StepModel, batch_limit, budget_batch, step_model
from gpusizer.serving.throughput import QUANTILES, Quantiles
from gpusizer.serving.workload import SLO, Lengths, Workload

__all__ = ["KNEE_FRACTION", "CurvePoint", "LoadCurve", "knee", "load_curve"]

KNEE_FRACTION = 0.5
"""Default ``fraction`` of ``knee``: one more user adds less than half an idle user's throughput. [-]"""

#: Concurrencies of ``gpusizer curve`` by default (powers of two, 1 to 256). [-]
DEFAULT_CONCURRENCY = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def knee(concurrency: Any, throughput: Any, fraction: float = KNEE_FRACTION) -> float | None:
    r"""The concurrency at which the marginal throughput of one more user falls below ``fraction`` of an idle user's.

    Parameters
    ----------
    concurrency : array_like
        Increasing concurrencies (requests in flight). [-]
    throughput : array_like
        Throughput at each (output tokens per second). [token/s]
    fraction : float
        :math:`f` in (0, 1). [-]

    Returns
    -------
    float or None
        :math:`C^* = \min\{C : \Delta X/\Delta C < f\,X_0/C_0\}`, the slopes of successive segments taken
        at their midpoints and the crossing interpolated linearly between them; the first concurrency when the
        first segment already falls below; None when no segment does (no knee within the range). [-]

    Examples
    --------
    >>> knee([1, 2, 3, 4], [10, 20, 24, 25])  # slopes 10, 4, 1 against 0.5 * 10: between 1.5 and 2.5
    2.333333333333333
    """
    c, x = np.asarray(concurrency, dtype=float), np.asarray(throughput, dtype=float)
    if c.ndim != 1 or c.shape != x.shape or len(c) < 2 or np.any(np.diff(c) <= 0) or c[0] <= 0:
        raise ValueError("knee: concurrency must be increasing, positive and as long as throughput (2 points or more)")
    if not 0 < fraction < 1:
        raise ValueError(f"knee: fraction must lie in (0, 1), got {fraction!r}")
    slope, middle = np.diff(x) / np.diff(c), (c[1:] + c[:-1]) / 2
    target = fraction * x[0] / c[0]
    below = slope < target
    if not below.any():
        return None
    i = int(np.argmax(below))
    if i == 0:
        return float(c[0])
    t = (slope[i - 1] - target) / (slope[i - 1] - slope[i])
    return float(middle[i - 1] + t * (middle[i] - middle[i - 1]))


@dataclass(frozen=True)
class CurvePoint:
    """One point of the load curve; latencies None where the engine cannot sustain it (``reason`` says why)."""

    concurrency: float
    """Requests in flight, :math:`\\lambda E[E2E]` (Little's law). [-]"""
    rate: float
    """Request rate. [1/s]"""
    tokens_per_second: float | None
    """Output tokens per second of the engine, :math:`\\lambda o`. [token/s]"""
    tokens_per_second_per_user: float | None
    """One user's output tokens per second while decoding, 1 / mean TPOT. [token/s]"""
    batch: float | None
    """Mean sequences decoding together. [-]"""
    ttft: Quantiles | None
    """Time to first token, queueing included. [s]"""
    tpot: Quantiles | None
    """Time per output token. [s]"""
    meets_slo: bool | None
    """Whether every SLO target holds here; None without an SLO."""
    reason: str
    """Why the latencies are None (``"beyond saturation (kv-cache)"``); ``""`` otherwise."""


@dataclass(frozen=True)
class LoadCurve:
    """Throughput and latency of one engine along its load, its knee, and what an SLO allows."""

    model: str
    gpu: str
    engine: str
    weights: str
    kv_cache: str
    gpus: int
    workload: Workload
    slo: SLO | None
    axis: str
    """``concurrency`` or ``rate``: what the points were asked at."""
    points: tuple[CurvePoint, ...]
    max_concurrency: float
    """Sequences of the workload's length the KV pool and the engine's caps hold. [-]"""
    saturated_rate: float
    """Request rate of the saturated engine (``throughput``'s offline state). [1/s]"""
    saturated_tokens_per_second: float
    """Output tokens per second of the saturated engine. [token/s]"""
    knee_fraction: float
    """``fraction`` of ``knee``. [-]"""
    knee_concurrency: float | None
    """The knee (``knee``) on the dense curve; None when the curve has none. [-]"""
    knee_rate: float | None
    """Request rate at the knee. [1/s]"""
    knee_tokens_per_second: float | None
    """Output tokens per second at the knee. [token/s]"""
    slo_rate: float | None
    """Largest request rate meeting every SLO target (``max_rate``); None without an SLO. [1/s]"""
    slo_concurrency: float | None
    """Requests in flight at that rate. [-]"""
    slo_binding: str | None
    """What stops a higher rate (``MaxRate.binding``)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict (records as dicts)."""
        data: dict[str, Any] = checks.plain(self)
        return data


def _quantiles(step: StepModel, workload: Workload, rates: np.ndarray) -> tuple[list[Quantiles], list[Quantiles]]:
    points = [load(step, workload, rates, quantile=q) for q in QUANTILES]
    ttft = [Quantiles(float(points[0].ttft_mean[i]), *(float(p.ttft_quantile[i]) for p in points))
            for i in range(len(rates))]
    tpot = [Quantiles(float(points[0].tpot_mean[i]), *(float(p.tpot_quantile[i]) for p in points))
            for i in range(len(rates))]
    return ttft, tpot


def _meets(step: StepModel, workload: Workload, rates: np.ndarray, slo: SLO | None) -> list[bool | None]:
    if slo is None:
        return [None] * len(rates)
    q = load(step, workload, rates, quantile=slo.quantile)
    ok = np.asarray(q.stable, dtype=bool)
    for target, value in ((slo.ttft_p95, q.ttft_quantile), (slo.tpot_p95, q.tpot_quantile),
                          (slo.e2e_p95, q.e2e_quantile)):
        if target is not None:
            ok &= np.asarray(value, dtype=float) <= target
    return [bool(v) for v in ok]


def _points(step: StepModel, workload: Workload, slo: SLO | None, rates: np.ndarray, users: np.ndarray | None
            ) -> tuple[CurvePoint, ...]:
    """The curve at ``rates`` (0 where a concurrency could not be placed); ``users``: the concurrencies asked."""
    o = float(workload.output_tokens)
    served = np.where(rates > 0, rates, 1.0)
    state = load(step, workload, served, quantile=0.5)
    ttft, tpot = _quantiles(step, workload, served)
    meets = _meets(step, workload, served, slo)
    out = []
    for i, rate in enumerate(rates):
        stable = bool(state.stable[i]) and rate > 0
        reason = "" if stable else f"beyond saturation ({state.limit[i] or 'prefill'})"
        c = float(users[i]) if users is not None else float(rate * state.e2e_mean[i]) if stable else float("inf")
        out.append(CurvePoint(
            concurrency=c, rate=float(rate), tokens_per_second=float(rate * o) if stable else None,
            tokens_per_second_per_user=1 / tpot[i].mean if stable else None,
            batch=float(state.batch[i]) if stable else None, ttft=ttft[i] if stable else None,
            tpot=tpot[i] if stable else None, meets_slo=meets[i] if stable else (None if slo is None else False),
            reason=reason))
    return tuple(out)


def _saturated(step: StepModel, workload: Workload) -> float:
    """Output tokens per second of the saturated engine (``throughput``'s offline batch). [token/s]"""
    s, o = float(workload.prompt_tokens), float(workload.output_tokens)
    batch = min(batch_limit(step, s + o), float(budget_batch(step.chunk_tokens, s, o)))
    if batch <= 0:
        return 0.0
    return float(concurrency_curve(step, [batch], prompt_tokens=s, output_tokens=o).aggregate_tokens_per_second[0])


def _dense(step: StepModel, workload: Workload, saturated_rate: float, points: int = 400
           ) -> tuple[np.ndarray, np.ndarray]:
    """Rates below saturation and their concurrency :math:`\\lambda E[E2E]`, stable points only."""
    rates = saturated_rate * (1 - np.geomspace(1, 1e-4, points))  # dense near saturation, where C grows fastest
    rates = rates[rates > 0]
    state = load(step, workload, rates, quantile=0.5)
    c = rates * np.asarray(state.e2e_mean, dtype=float)
    keep = np.asarray(state.stable, dtype=bool) & np.isfinite(c)
    rates, c = rates[keep], c[keep]
    increasing = np.concatenate([[True], np.diff(c) > 0])
    return rates[increasing], c[increasing]


def load_curve(
    model: str | catalog.Model,
    gpu: str | catalog.GPU | catalog.System,
    *,
    workload: Workload,
    slo: SLO | None = None,
    concurrency: Any = None,
    rates: Any = None,
    gpus: int | None = None,
    engine: Any = "vllm",
    weights: str | None = None,
    kv_cache: str | None = None,
    knee_fraction: float = KNEE_FRACTION,
) -> LoadCurve:
    r"""Throughput, TTFT and TPOT (mean, p50, p95, p99) of one engine along its load, the knee and the SLO limit.

    Parameters
    ----------
    model, gpu : str or record
        As for ``estimate`` (a custom GPU as ``"rtx-4090:memory=48GB"`` or ``catalog.gpu_with``).
    workload : Workload
        Request lengths (its ``rate`` is not used).
    slo : SLO, optional
        Targets: each point says whether it meets them, and ``slo_rate``/``slo_concurrency`` are the largest.
    concurrency : array_like, optional
        Requests in flight to evaluate (default 1, 2, 4, ..., 256). [-]
    rates : array_like, optional
        Request rates to evaluate instead. [1/s]
    gpus, engine, weights, kv_cache
        As for ``throughput`` (one replica of ``gpus`` GPUs in tensor parallel).
    knee_fraction : float
        ``knee``'s fraction. [-]

    Returns
    -------
    LoadCurve

    Notes
    -----
    Each point is ``load`` at its rate; a concurrency :math:`C` is placed at the rate with
    :math:`\lambda\,E[E2E](\lambda) = C` (module docstring), so the two axes give the same numbers at the
    same load. The knee is ``knee`` on the dense curve of 400 rates below saturation.

    Examples
    --------
    >>> w = Workload(rate=1, prompt_tokens=1024, output_tokens=256)
    >>> c = load_curve("llama-3.1-8b", "h100-sxm", workload=w, concurrency=[1, 8, 64])
    >>> [round(p.concurrency) for p in c.points]
    [1, 8, 64]
    >>> c.points[0].tpot.p50 < c.points[2].tpot.p50 and c.knee_concurrency > 1
    True
    """
    if concurrency is not None and rates is not None:
        raise ValueError("load_curve: give concurrency or rates, not both")
    checks.instance(workload, "workload", Workload)
    if slo is not None:
        checks.instance(slo, "slo", SLO)
    record = catalog.model(model)
    s, o = float(workload.prompt_tokens), float(workload.output_tokens)
    longest = float(max(record.max_context or 0, 4 * (s + o / 2), Lengths.of(workload).prompt.max()))
    step = step_model(record, gpu, weights=weights, kv_cache=kv_cache, gpus=gpus, engine=engine, context=s + o / 2,
                      max_prompt=longest)
    saturated = _saturated(step, workload)
    dense_rates, dense_c = _dense(step, workload, saturated / o) if saturated > 0 else (np.zeros(0), np.zeros(0))
    users = None
    if rates is not None:
        axis, asked = "rate", checks.positive_array(rates, "rates").ravel()
    else:
        axis = "concurrency"
        users = checks.positive_array(DEFAULT_CONCURRENCY if concurrency is None else concurrency,
                                      "concurrency").ravel()
        inside = (users >= dense_c[0]) & (users <= dense_c[-1]) if len(dense_c) else np.zeros(users.shape, bool)
        asked = np.where(inside, np.interp(users, dense_c, dense_rates) if len(dense_c) else 0.0, 0.0)
    at_knee = knee(dense_c, dense_rates * o, knee_fraction) if len(dense_c) >= 2 else None
    best = max_rate(step, workload, slo) if slo is not None else None
    slo_c = None
    if best is not None and best.rate > 0:
        slo_c = float(best.rate * load(step, workload, best.rate, quantile=0.5).e2e_mean)
    knee_rate = None if at_knee is None else float(np.interp(at_knee, dense_c, dense_rates))
    w, _, kv = unpack.checkpoint_precisions(record, weights, kv_cache)
    return LoadCurve(
        model=record.id, gpu=resolve_target(gpu, gpus)[0].id,
        engine=step.engine or str(engine), weights=w, kv_cache=step.kv_cache or kv,
        gpus=resolve_target(gpu, gpus)[1], workload=workload, slo=slo, axis=axis,
        points=_points(step, workload, slo, asked, users), max_concurrency=float(batch_limit(step, s + o)),
        saturated_rate=saturated / o, saturated_tokens_per_second=saturated, knee_fraction=knee_fraction,
        knee_concurrency=at_knee, knee_rate=knee_rate,
        knee_tokens_per_second=None if knee_rate is None else knee_rate * o,
        slo_rate=None if best is None else best.rate, slo_concurrency=slo_c,
        slo_binding=None if best is None else best.binding)
