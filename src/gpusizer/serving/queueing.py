r"""Open loop in closed form: ``load`` gives means and tails of TTFT, TPOT and end-to-end latency.

A mean-field decode batch (Little's law), prefill interference on the time per output token, an M/G/1
prefill server with the residual of the step in progress for the time to first token, and an
Allen-Cunneen M/G/c wait for a sequence slot (Erlang C). The formulas are in ``load``'s Notes.

Deliberate omissions: non-Poisson arrivals (``Workload.burstiness`` is used by ``simulate`` only) and
preemption.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist
from typing import Any

import numpy as np

from gpusizer.checks import instance, positive_array, scalar_or_array
from gpusizer.serving.step_table import StepModel, marginal_prefill_seconds
from gpusizer.serving.workload import Lengths, Workload

__all__ = ["Load", "load"]


@dataclass(frozen=True)
class Load:
    """Closed-form state of an engine under Poisson load; arrays over ``rate``."""

    rate: Any
    """Request arrival rate. [1/s]"""
    stable: Any
    """Whether queues stay finite (prefill server below saturation and the batch within the KV pool). [bool]"""
    batch: Any
    """Mean sequences decoding, from Little's law. [-]"""
    tpot_mean: Any
    """Mean time per output token. [s]"""
    tpot_quantile: Any
    """Time per output token at ``quantile`` (normal approximation of the per-request mean). [s]"""
    ttft_mean: Any
    """Mean time to first token: M/G/1 wait plus the prefill's own steps. [s]"""
    ttft_quantile: Any
    """Time to first token at ``quantile`` (exponential tail of the wait plus the prefill). [s]"""
    e2e_mean: Any
    """Mean end-to-end latency. [s]"""
    e2e_quantile: Any
    """End-to-end latency at ``quantile`` (TTFT and decode quantiles added: an upper estimate). [s]"""
    prefill_utilisation: Any
    """Share of engine time spent on prompt tokens. [-]"""
    decode_utilisation: Any
    """Share of engine time spent on decode tokens. [-]"""
    busy: Any
    """Share of time the engine runs steps (the rest it idles). [-]"""
    quantile: float
    """Quantile of the ``*_quantile`` fields. [-]"""
    limit: Any
    """Why an unstable point is unstable: ``"prefill"``, ``"kv-cache"``, ``"max-sequences"``; ``""`` when stable."""
    compute_bound: Any
    """Whether a decode step at the mean batch is compute-bound. [bool]"""



def _solve_batch(step: StepModel, rate: np.ndarray, lengths: Lengths, fd: np.ndarray, fp: np.ndarray,
                 grid_points: int = 64) -> dict[str, Any]:
    """Mean-field decode batch: the smallest B with B = rate * E[o - 1] * TPOT(B), on a grid per rate."""
    s, o = lengths.prompt, lengths.output
    decode_steps = float(np.mean(o - 1))
    weight = np.maximum(o - 1, 0.0)
    held = float(np.sum(weight * (s.mean() + o))) / max(float(weight.sum()), 1e-12)
    context = float(s.mean() + np.sum(weight * o / 2) / max(float(weight.sum()), 1e-12))
    cap_kv = step.kv_capacity_tokens / max(held, 1.0)
    cap = min(float(step.max_sequences), cap_kv, step.chunk_tokens - 1.0)
    grid = np.concatenate([[0.0], np.geomspace(1e-3, max(cap, 1e-3), grid_points - 1)])
    lam = rate[:, None]
    decode = fd[:, None] * (np.interp(1 + grid, step.token_grid, step.token_seconds)
                            + step.kv_seconds * (1 + grid) * context)[None, :]
    marginal = marginal_prefill_seconds(step, s[None, None, :], 1 + grid[None, :, None], fd[:, None, None],
                                 fp[:, None, None])  # what a decoding request sees: one more decode in the step
    prefill = lam * np.mean(marginal, axis=-1)
    tpot = np.where(prefill < 1, decode / np.maximum(1 - prefill, 1e-12), np.inf)
    gap = lam * decode_steps * tpot - grid[None, :]
    below = gap <= 0
    found = below.any(axis=1)
    first = np.argmax(below, axis=1)
    rows = np.arange(len(rate))
    prev = np.maximum(first - 1, 0)
    g0, g1 = gap[rows, prev], gap[rows, first]
    finite = np.isfinite(g0) & np.isfinite(g1) & (g0 != g1) & (first > 0)
    with np.errstate(invalid="ignore"):
        frac = np.where(finite, g0 / np.where(finite, g0 - g1, 1.0), 1.0)
    batch = np.where(first > 0, grid[prev] + frac * (grid[first] - grid[prev]), 0.0)
    limit = np.where(found, "", np.where(cap == cap_kv, "kv-cache", "max-sequences"))
    if decode_steps == 0:  # every request ends at its first token: no decode phase
        batch, found, limit = np.zeros_like(rate), np.ones_like(rate, dtype=bool), np.full(rate.shape, "")
    return dict(batch=np.where(found, batch, cap), found=found, limit=limit, context=context,
                decode_steps=decode_steps, cap=cap)


def load(step: StepModel, workload: Workload, rate: Any = None, *, quantile: float = 0.95,
         prefills_per_step: int | None = None, decode_scale: Any = 1.0, prefill_scale: Any = 1.0) -> Load:
    r"""Closed-form latency of ``workload`` (at ``rate``, default its own) on one engine.

    Parameters
    ----------
    step : StepModel
        The configuration's step table (``step_model``).
    workload : Workload
        Request lengths; its ``rate`` unless ``rate`` is given.
    rate : array_like, optional
        Request rates to evaluate. [1/s]
    quantile : float
        Quantile of the ``*_quantile`` fields. [-]
    prefills_per_step : int, optional
        Most prompts one step carries, as in ``simulate``; 1 removes the bulk term.
    decode_scale, prefill_scale : array_like
        Factors on decode step times and on prompt extras (the speed band, ``StepModel.decode_band``);
        they broadcast with ``rate``. [-]

    Returns
    -------
    Load
        Arrays over ``rate``; unstable points have infinite latencies.

    Notes
    -----
    Decode (mean field). A decoding request shares each step with :math:`B` others, so its step costs
    :math:`d = a(1+B) + \kappa (1+B) \bar c` (:math:`\bar c` the mean context). Each prompt adds its
    marginal time :math:`S_m(s; n) = \sum_j [a(n + c_j) - a(n)] + e(s)` to the steps it shares with
    :math:`n` decodes (chunked-prefill interference [1]_: in the memory-bound plateau it rides almost
    free). With :math:`\rho_t = \lambda E[S_m(s; 1+B)]`:

    .. math:: \mathrm{TPOT} = \frac{d}{1 - \rho_t}, \qquad B = \lambda\, E[o - 1]\, \mathrm{TPOT}

    solved for the smallest :math:`B` (Little's law). A request's TPOT varies with the arrivals during
    its life :math:`(o-1)\,\mathrm{TPOT}`, each adding :math:`S_m/(o-1) + d'(B)` (its prefill, one more
    sequence in the batch): :math:`\mathrm{Var} = \lambda\,\mathrm{TPOT}\,(o-1)\,E[(S_m/(o-1) + d')^2]
    /(1-\rho_t)^2`; the quantile is the normal one.

    Time to first token. An arrival waits for the rest of the step in progress (a decode-only step,
    length :math:`d_B = a(B) + \kappa B \bar c`, a share :math:`\pi` of time; or a step carrying a
    prompt, :math:`d_B + S_m`, a share :math:`\rho_m`), then for the prompt work queued ahead. With
    :math:`\tilde S = S_m + (s/C') d_B` (its share of the decodes in the steps it fills,
    :math:`C' = C - B` the prompt budget) and :math:`\tilde\rho = \lambda E[\tilde S]`, the
    Pollaczek-Khinchine form with residuals [3]_:

    .. math:: W = \frac{\pi d_B / 2 + \rho_m E[(d_B + S_m)^2] / (2 E[d_B + S_m])}{1 - \tilde\rho}, \qquad
              \mathrm{TTFT} = (1 + \rho_p) W + E[S_m + \lceil s/C' \rceil d_B] + W_{slot}

    The factor :math:`1 + \rho_p` counts prompts that arrive during the wait and join the same step;
    :math:`W_{slot}` is the Allen-Cunneen M/G/c wait for one of the :math:`c` sequence slots (engine
    limit or KV pool), negligible far below them. The first token is sampled by the step that ends the
    prefill. With no decode phase and one prompt per step this is exactly M/D/1 for a fixed prompt, the
    form DistServe uses for a prefill instance [2]_. The quantile treats the wait as a mixture: zero,
    uniform on :math:`[0, d_B/(1-\tilde\rho)]` (weight :math:`\pi`) or exponential with mean
    :math:`E[(d_B+S_m)^2]/(2E[d_B+S_m](1-\tilde\rho))` (weight :math:`\rho_m`).

    The engine is stable while :math:`\tilde\rho < 1`, :math:`\rho_t < 1` and the batch fits the KV pool
    and the sequence limit (the capacity bound of Nie, Si and Zhou, arXiv:2605.04595). Against
    ``simulate`` these means agree within a few percent and the p95 within about 15 % below
    saturation (``docs/serving.md``).

    References
    ----------
    .. [1] A. Agrawal et al., "Taming throughput-latency tradeoff in LLM inference with Sarathi-Serve,"
       OSDI 2024, arXiv:2403.02310.
    .. [2] Y. Zhong et al., "DistServe: Disaggregating prefill and decoding for goodput-optimized large
       language model serving," OSDI 2024, arXiv:2401.09670.
    .. [3] L. Kleinrock, *Queueing Systems, Volume 1: Theory*. Wiley, 1975, ch. 5 (M/G/1,
       Pollaczek-Khinchine).

    Examples
    --------
    >>> from gpusizer.serving import step_model
    >>> s = step_model("llama-3.1-8b", "h100-sxm", context=2560)
    >>> w = Workload(rate=2, prompt_tokens=2048, output_tokens=512)
    >>> point = load(s, w)
    >>> bool(point.stable), point.ttft_mean < point.ttft_quantile
    (True, True)
    """
    instance(step, "step", StepModel)
    instance(workload, "workload", Workload)
    if not 0 < quantile < 1:
        raise ValueError(f"quantile must be between 0 and 1, got {quantile!r}")
    lam, fd, fp = np.broadcast_arrays(positive_array(workload.rate if rate is None else rate, "rate"),
                                      positive_array(decode_scale, "decode_scale"),
                                      positive_array(prefill_scale, "prefill_scale"))
    shape = lam.shape
    lam, fd, fp = lam.ravel(), fd.ravel(), fp.ravel()
    lengths = Lengths.of(workload)
    service = _service(step, lam, lengths, fd, fp)
    position = quantile * len(lengths.prompt) - 0.5  # nodes sit at quantiles (i + 1/2) / n
    ttft_mean, ttft_q = _first_token(service, lengths, quantile, position, prefills_per_step)
    tpot, tpot_q = _per_token(step, service, lengths.output, quantile)
    e2e_mean, e2e_q = _end_to_end(service, lengths.output, position, (ttft_mean, ttft_q), (tpot, tpot_q))
    limit = np.where(service.stable, "", np.where(service.found, "prefill", service.limit))
    bound = np.interp(service.batch, step.token_grid, step.compute_bound.astype(float)) >= 0.5

    def out(value: np.ndarray) -> Any:
        return scalar_or_array(np.reshape(value, shape))

    return Load(
        rate=out(lam), stable=out(service.stable), batch=out(service.batch), tpot_mean=out(tpot),
        tpot_quantile=out(tpot_q), ttft_mean=out(ttft_mean), ttft_quantile=out(ttft_q), e2e_mean=out(e2e_mean),
        e2e_quantile=out(e2e_q), prefill_utilisation=out(np.minimum(service.rho_p, 1.0)),
        decode_utilisation=out(service.rho_dec), busy=out(service.busy), quantile=quantile, limit=out(limit),
        compute_bound=out(bound),
    )


@dataclass(frozen=True)
class _Service:
    """What ``load`` knows about the engine at each rate before any latency: arrays over the (flattened)
    rates, ``[rate, node]`` over the prompt nodes. Names follow the Notes of ``load``."""

    lam: np.ndarray
    """Request rate, :math:`\\lambda`. [1/s]"""
    fd: np.ndarray
    """Factor on decode step times. [-]"""
    batch: np.ndarray
    """Mean-field decode batch, :math:`B`. [-]"""
    found: np.ndarray
    """Whether the batch equation has a root below the slot limit. [bool]"""
    limit: np.ndarray
    """``kv-cache`` or ``max-sequences`` where it has none. [-]"""
    decode_steps: float
    """Mean decode steps of a request, :math:`E[o - 1]`. [-]"""
    cap: float
    """Sequence slots (engine limit, KV pool, budget). [-]"""
    context: float
    """Mean context a decode reads, :math:`\\bar c`. [token]"""
    marginal: np.ndarray
    """:math:`S_m(s; B)`, a prompt's time in steps holding :math:`B` decodes. [s]"""
    tagged: np.ndarray
    """:math:`S_m(s; 1 + B)`, as a decoding request sees it. [s]"""
    rho_p: np.ndarray
    """:math:`\\rho_p = \\lambda E[S_m(s; B)]`. [-]"""
    rho_t: np.ndarray
    """:math:`\\rho_t = \\lambda E[S_m(s; 1 + B)]`. [-]"""
    tpot: np.ndarray
    """Mean time per output token, :math:`d / (1 - \\rho_t)`. [s]"""
    others: np.ndarray
    """Decode-only step of the batch, :math:`d_B`. [s]"""
    budget: np.ndarray
    """Prompt budget of a step, :math:`C' = C - B` (at least 1), shape ``[rate, 1]``. [token]"""
    own: np.ndarray
    """A prompt's own steps, :math:`S_m + \\lceil s/C' \\rceil d_B`. [s]"""
    rho: np.ndarray
    """Prefill-server load :math:`\\tilde\\rho = \\lambda E[\\tilde S]`. [-]"""
    rho_dec: np.ndarray
    """Share of time on decode tokens. [-]"""
    busy: np.ndarray
    """Share of time running steps. [-]"""
    stable: np.ndarray
    """Whether the queues stay finite. [bool]"""


def _service(step: StepModel, lam: np.ndarray, lengths: Lengths, fd: np.ndarray, fp: np.ndarray) -> _Service:
    """Decode batch, step times and utilisations at each rate (the first paragraph of ``load``'s Notes)."""
    s = lengths.prompt
    solved = _solve_batch(step, lam, lengths, fd, fp)
    batch, context = solved["batch"], solved["context"]
    b = batch[:, None]
    marginal = marginal_prefill_seconds(step, s[None, :], b, fd[:, None], fp[:, None])  # a step holding B decodes
    tagged = marginal_prefill_seconds(step, s[None, :], 1 + b, fd[:, None], fp[:, None])  # ... and one more, ours
    rho_p = lam * marginal.mean(axis=1)
    rho_t = lam * tagged.mean(axis=1)
    decode = fd * (np.interp(1 + batch, step.token_grid, step.token_seconds) + step.kv_seconds * (1 + batch) * context)
    tpot = np.where(rho_t < 1, decode / np.maximum(1 - rho_t, 1e-12), np.inf)
    others = fd * (np.interp(batch, step.token_grid, step.token_seconds) + step.kv_seconds * batch * context)
    budget = np.maximum(step.chunk_tokens - batch, 1.0)[:, None]
    served = marginal + s[None, :] / budget * others[:, None]
    own = marginal + np.ceil(s[None, :] / budget) * others[:, None]
    rho = lam * served.mean(axis=1)
    rho_dec = np.minimum(lam * solved["decode_steps"] * decode / (1 + batch), 1.0)
    busy = np.minimum(rho_p + rho_dec, 1.0)
    stable = solved["found"] & (rho < 1) & (rho_t < 1)
    return _Service(lam=lam, fd=fd, batch=batch, found=solved["found"], limit=solved["limit"],
                    decode_steps=solved["decode_steps"], cap=solved["cap"], context=context, marginal=marginal,
                    tagged=tagged, rho_p=rho_p, rho_t=rho_t, tpot=tpot, others=others, budget=budget, own=own, rho=rho,
                    rho_dec=rho_dec, busy=busy, stable=stable)


def _first_token(sv: _Service, lengths: Lengths, quantile: float, position: float,
                 prefills_per_step: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Mean and quantile of the time to first token: the residual-step wait, the prompt's own steps and the
    wait for a sequence slot (the second paragraph of ``load``'s Notes). [s]"""
    s, o, lam = lengths.prompt, lengths.output, sv.lam
    free = np.maximum(1 - sv.rho, 1e-12)
    # An arrival waits for the rest of the step in progress, a decode-only step (length d_B, a share pi of
    # time) or a step carrying a prompt (d_B + S_m, a share rho_m), then for the prompt work queued ahead.
    mixed = sv.others[:, None] + sv.marginal
    rho_m = np.minimum(lam * mixed.mean(axis=1), sv.busy)
    pi = np.clip(sv.busy - rho_m, 0.0, 1.0)
    spread_m = np.mean(mixed**2, axis=1) / (2 * np.maximum(mixed.mean(axis=1), 1e-300))
    wait = (pi * sv.others / 2 + rho_m * spread_m) / free
    # Prompts that arrive while one waits join its step when the budget has room for them.
    room = np.clip((sv.budget[:, 0] - s.mean()) / s.mean(), 0.0, 1.0) * (prefills_per_step != 1)
    bulk = 1 + np.minimum(sv.rho_p, 1.0) * room
    ttft_mean = np.where(sv.stable, bulk * wait + sv.own.mean(axis=1), np.inf)
    tail = _mixture_quantile(quantile, pi, sv.others / free, rho_m, spread_m / free)
    ttft_q = np.where(sv.stable, bulk * tail + _at_node(sv.own, position), np.inf)
    # Waiting for a sequence slot (engine limit or KV pool): M/G/c with c slots held for a whole request.
    held = sv.own.mean(axis=1) + sv.decode_steps * np.where(np.isfinite(sv.tpot), sv.tpot, 0.0)
    variation = np.var(o - 1) / max(float(np.mean(o - 1)) ** 2, 1e-300) if sv.decode_steps else 0.0
    slot_mean, slot_q = _slot_wait(np.floor(sv.cap), sv.batch, held, variation, quantile)
    return ttft_mean + slot_mean, ttft_q + slot_q


def _per_token(step: StepModel, sv: _Service, output: np.ndarray, quantile: float) -> tuple[np.ndarray, np.ndarray]:
    """Mean and quantile (normal) of the time per output token; inf where unstable, nan with no decode. [s]"""
    lam, batch, tpot = sv.lam, sv.batch, sv.tpot
    decoding = output >= 2
    z = NormalDist().inv_cdf(quantile)
    fd, context = sv.fd, sv.context
    slope = fd * (np.interp(2 + batch, step.token_grid, step.token_seconds)
                  - np.interp(1 + batch, step.token_grid, step.token_seconds) + step.kv_seconds * context)
    if decoding.any():
        steps = output[decoding] - 1
        effect = sv.tagged[:, :, None] / steps[None, None, :] + slope[:, None, None]
        spread = np.sqrt(lam * tpot * np.mean(steps[None, None, :] * effect**2, axis=(1, 2)))
        spread = spread / np.maximum(1 - sv.rho_t, 1e-12)
    else:
        spread = np.zeros_like(lam)
    with np.errstate(invalid="ignore"):  # z = 0 (the median) times an infinite spread where unstable
        tpot_q = np.where(sv.stable & decoding.any(), tpot + z * spread, np.inf)
    tpot = np.where(sv.stable & decoding.any(), tpot, np.inf)
    if not decoding.any():
        tpot, tpot_q = np.full_like(lam, np.nan), np.full_like(lam, np.nan)
    return tpot, tpot_q


def _end_to_end(sv: _Service, output: np.ndarray, position: float, ttft: tuple[np.ndarray, np.ndarray],
                tpot: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Mean and quantile of end-to-end latency: TTFT plus decode steps times TPOT, quantiles added. [s]"""
    steps_q = float(_at_node(output[None, :] - 1, position)[0])
    with np.errstate(over="ignore", invalid="ignore"):
        e2e_mean = np.where(sv.stable, ttft[0] + sv.decode_steps * np.nan_to_num(tpot[0], nan=0.0, posinf=np.inf),
                            np.inf)
        e2e_q = np.where(sv.stable, ttft[1] + steps_q * np.nan_to_num(tpot[1], nan=0.0, posinf=np.inf), np.inf)
    return e2e_mean, e2e_q


@lru_cache(maxsize=32)
def _log_factorials(servers: int) -> np.ndarray:
    return np.array([math.lgamma(k + 1) for k in range(servers + 1)])


def _erlang_c(servers: float, load: np.ndarray) -> np.ndarray:
    """Probability that an arrival waits in M/M/c with ``servers`` servers and offered ``load`` (Erlang C).

    Erlang B is the Poisson(load) probability of ``servers`` given at most ``servers`` (one vectorised
    log-space sum); Erlang C follows as :math:`B / (1 - \rho (1 - B))`; 1 at or beyond saturation.
    """
    c = int(servers)
    a = np.maximum(np.asarray(load, dtype=float), 1e-300)
    k = np.arange(c + 1)
    log_terms = k * np.log(a)[..., None] - _log_factorials(c)
    log_terms -= log_terms.max(axis=-1, keepdims=True)
    terms = np.exp(log_terms)
    blocked = terms[..., -1] / terms.sum(axis=-1)
    busy = a / c
    return np.where(busy < 1, np.clip(blocked / (1 - busy * (1 - blocked)), 0.0, 1.0), 1.0)


def _slot_wait(servers: float, load: np.ndarray, held: np.ndarray, variation: float, quantile: float
               ) -> tuple[np.ndarray, np.ndarray]:
    r"""Mean and quantile of the wait for one of ``servers`` sequence slots (Allen-Cunneen M/G/c).

    .. math:: W = \frac{C(c, a)}{c - a}\,\bar T\,\frac{1 + c_v^2}{2}, \qquad
              P(W > t) \approx C\,e^{-t (c - a) / (\bar T (1 + c_v^2)/2)}

    Negligible when the engine runs far below its slots (hundreds for vLLM); it dominates an engine
    that serves one sequence at a time (llama.cpp's server with one slot).
    """
    waiting = np.zeros_like(load)
    # Erlang C is below 1e-9 unless the load comes within a few standard deviations of the slots.
    near = (load > servers - 8 * math.sqrt(servers) - 1) & (servers >= 1)
    if near.any():
        waiting[near] = _erlang_c(servers, load[near])
    scale = held * (1 + variation) / 2 / np.maximum(servers - load, 1e-12)
    mean = waiting * scale
    tail = np.where(waiting > 1 - quantile, scale * np.log(np.maximum(waiting, 1e-300) / (1 - quantile)), 0.0)
    return mean, tail


def _mixture_quantile(q: float, uniform_weight: Any, uniform_width: Any, exponential_weight: Any,
                      exponential_mean: Any, iterations: int = 30) -> np.ndarray:
    r"""Quantile ``q`` of a wait that is 0, uniform on :math:`[0, u]` or exponential with mean :math:`m`.

    Solves :math:`w_u (1 - t/u)^+ + w_e e^{-t/m} = 1 - q`. Beyond :math:`u` only the exponential term is
    left, so :math:`t = m \ln(w_e / (1 - q))` when that is at least :math:`u`; otherwise a vectorised
    bisection on :math:`[0, u]` (the left side falls with :math:`t`). 0 when the weights sum to at most
    :math:`1 - q`.
    """
    wu, u, we, m = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (uniform_weight, uniform_width,
                                                                              exponential_weight, exponential_mean)))
    target = 1 - q
    beyond = m * np.log(np.maximum(we, 1e-300) / target)
    out = np.where(wu + we > target, np.maximum(beyond, 0.0), 0.0)
    inside = (wu + we > target) & (beyond < u)
    if inside.any():
        wu_, u_, we_, m_ = wu[inside], np.maximum(u[inside], 1e-300), we[inside], np.maximum(m[inside], 1e-300)
        lo, hi = np.zeros_like(u_), u_.copy()
        for _ in range(iterations):
            mid = (lo + hi) / 2
            above = wu_ * (1 - mid / u_) + we_ * np.exp(-mid / m_) > target
            lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
        out = out.copy()
        out[inside] = hi
    return out


def _at_node(values: np.ndarray, position: float) -> np.ndarray:
    """Linear interpolation along the last axis at a fractional node index, clipped to the nodes."""
    values = np.atleast_2d(values)
    last = values.shape[-1] - 1
    x = min(max(position, 0.0), float(last))
    lo = math.floor(x)
    hi = min(lo + 1, last)
    return values[..., lo] + (x - lo) * (values[..., hi] - values[..., lo])
