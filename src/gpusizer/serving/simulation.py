r"""A seeded discrete-event simulation of the continuous-batching scheduler: ``simulate``.

Arrivals are gamma-distributed gaps (Poisson at ``burstiness`` 1), lengths are drawn by inverse
transform, and the event loop advances runs of identical decode-only steps in one iteration. One-prompt
steps of one-token outputs take a vectorised path (Lindley's recursion).

Deliberate omissions: preemption, prefix caching and inter-token-latency percentiles (TPOT is the
per-request mean, as ``vllm bench serve`` reports it).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpusizer import progress
from gpusizer.checks import count, instance, positive_array, scalar_or_array
from gpusizer.serving.step_table import StepModel, cached_prompt_tokens, prompt_extra_seconds
from gpusizer.serving.workload import Workload, sample_lengths

__all__ = ["Simulation", "simulate"]


@dataclass(frozen=True)
class Simulation:
    """Per-request latencies of a simulated run, and what the engine did. Times in seconds."""

    rate: float
    """Offered request rate. [1/s]"""
    seed: int
    requests: int
    """Requests simulated (warm-up included). [-]"""
    measured: np.ndarray = field(repr=False)
    """Indices of the requests the statistics use (after warm-up, before cool-down)."""
    ttft: np.ndarray = field(repr=False)
    """Time to first token of every request (nan if rejected or unfinished). [s]"""
    tpot: np.ndarray = field(repr=False)
    """Mean time per output token after the first (nan for one-token outputs). [s]"""
    e2e: np.ndarray = field(repr=False)
    """End-to-end latency. [s]"""
    rejected: int
    """Requests longer than the whole KV pool: never served. [-]"""
    events: int
    """Loop iterations (mixed steps and decode segments). [-]"""
    truncated: bool
    """Whether ``max_events`` stopped the run before every request finished."""
    duration: float
    """Simulated time until the last request finished. [s]"""
    busy: float
    """Share of time spent running steps. [-]"""
    prefill_busy: float
    """Share of time spent in steps that carried prompt tokens. [-]"""
    mean_batch: float
    """Time-averaged sequences decoding. [-]"""
    output_tokens_per_second: float
    """Output tokens generated per second of simulated time. [token/s]"""

    def percentile(self, metric: str, q: Any) -> Any:
        """Quantile ``q`` (0-1) of ``"ttft"``, ``"tpot"`` or ``"e2e"`` over measured requests; inf when any
        measured request was never served. [s]"""
        values = getattr(self, metric)[self.measured]
        if np.isnan(values).all():
            return scalar_or_array(np.full(np.shape(q), np.nan))
        if metric != "tpot" and np.isnan(values).any():
            return scalar_or_array(np.full(np.shape(q), np.inf))
        return scalar_or_array(np.nanquantile(values, q))

    def summary(self) -> dict[str, float]:
        """Mean, p50, p95 and p99 of each metric. [s]"""
        out: dict[str, float] = {}
        for metric in ("ttft", "tpot", "e2e"):
            values = getattr(self, metric)[self.measured]
            out[f"{metric}_mean"] = float(np.nanmean(values)) if not np.isnan(values).all() else math.nan
            for q in (50, 95, 99):
                out[f"{metric}_p{q}"] = float(self.percentile(metric, q / 100))
        return out


def _arrivals(workload: Workload, size: int, rng: np.random.Generator, rate: float) -> np.ndarray:
    shape = workload.burstiness
    gaps = rng.gamma(shape, 1.0 / shape, size) / rate
    return np.cumsum(gaps)


def simulate(
    step: StepModel,
    workload: Workload,
    *,
    requests: int = 2000,
    seed: int = 0,
    rate: float | None = None,
    warmup: float = 0.1,
    cooldown: float = 0.05,
    prefills_per_step: int | None = None,
    max_events: int | None = None,
) -> Simulation:
    r"""Seeded discrete-event simulation of a continuous-batching engine under ``workload``.

    Each step decodes one token for every running sequence, then gives its remaining token budget
    (``chunk_tokens`` minus the decodes) to waiting prompts, first come first served, splitting the
    last one into a chunk; a request is admitted when its prompt + output fit in the free KV pool and
    the engine runs fewer than ``max_sequences``. A step lasts ``step_seconds`` of its tokens, its
    decodes' cached tokens and its chunks' prompt extras, so decodes that share a step with a prefill
    chunk see the longer step. Runs of identical decode-only steps between events are advanced in one
    iteration (their times form an arithmetic series), so the loop costs a few iterations per request.
    The event loop reports ``("simulation", requests finished, requests)`` to ``gpusizer.progress``
    every 4,096 iterations and at its end (a progress bar of the command line; nothing otherwise).

    Parameters
    ----------
    step : StepModel
        The configuration (``step_model``).
    workload : Workload
        Arrival process and length distributions.
    requests : int
        Requests to simulate. [-]
    seed : int
        Seed of ``numpy.random.default_rng``: arrivals and lengths; the same seed gives the same run,
        and the same uniforms scaled to another ``rate`` (common random numbers).
    rate : float, optional
        Request rate; default ``workload.rate``. [1/s]
    warmup, cooldown : float
        Shares of the requests, in arrival order, left out of the statistics at the start and the end. [-]
    prefills_per_step : int, optional
        Most prompts one step may carry; default no limit (1 makes the prefill server a plain FCFS queue).
    max_events : int, optional
        Bound on loop iterations; default ``50 * requests``. The run stops there and is ``truncated``.

    Returns
    -------
    Simulation

    Examples
    --------
    >>> from gpusizer.serving import step_model
    >>> s = step_model("llama-3.1-8b", "h100-sxm", context=2560)
    >>> run = simulate(s, Workload(rate=4, prompt_tokens=2048, output_tokens=256), requests=500, seed=1)
    >>> run.truncated, run.rejected
    (False, 0)
    >>> run.percentile("ttft", 0.5) < run.percentile("ttft", 0.99)
    True
    """
    instance(step, "step", StepModel)
    instance(workload, "workload", Workload)
    count(requests, "requests", minimum=1)
    count(seed, "seed", minimum=0)
    if not (0 <= warmup < 1 and 0 <= cooldown < 1 and warmup + cooldown < 1):
        raise ValueError(f"warmup and cooldown must be shares in [0, 1) summing below 1, got {warmup}, {cooldown}")
    if prefills_per_step is not None and prefills_per_step < 1:
        raise ValueError(f"prefills_per_step must be >= 1, got {prefills_per_step!r}")
    offered = float(positive_array(workload.rate if rate is None else rate, "rate"))
    rng = np.random.default_rng(seed)
    arrivals = _arrivals(workload, requests, rng, offered)
    prompts = sample_lengths(workload.prompt_tokens, workload.prompt_distribution, workload.prompt_cv, requests, rng)
    outputs = sample_lengths(workload.output_tokens, workload.output_distribution, workload.output_cv, requests, rng)
    limit = 50 * requests if max_events is None else int(max_events)
    if prefills_per_step == 1 and int(outputs.max()) == 1 and int(prompts.max()) <= step.chunk_tokens:
        result = _single_server(step, arrivals, prompts)
    else:
        result = _events(step, arrivals, prompts, outputs, prefills_per_step or requests, limit)
    first, finish, stats = result
    lo, hi = int(warmup * requests), max(math.ceil((1 - cooldown) * requests), int(warmup * requests) + 1)
    measured = np.arange(lo, min(hi, requests))
    ttft = first - arrivals
    e2e = finish - arrivals
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(outputs > 1, (finish - first) / (outputs - 1), np.nan)
    return Simulation(rate=offered, seed=seed, requests=requests, measured=measured, ttft=ttft, tpot=tpot, e2e=e2e,
                      **stats)


def _single_server(step: StepModel, arrivals: np.ndarray, prompts: np.ndarray) -> tuple[Any, Any, dict[str, Any]]:
    r"""Vectorised FCFS single server (one prompt per step, one-token outputs): Lindley's recursion.

    :math:`D_n = \max(D_{n-1}, A_n) + S_n` unrolls to :math:`D_n = C_n + \max_{k \le n}(A_k - C_{k-1})`
    with :math:`C` the cumulative service, one ``maximum.accumulate``.
    """
    cached = cached_prompt_tokens(step, prompts)  # the prefix cache's tokens: attended to, not computed
    service = (np.interp(prompts - cached, step.token_grid, step.token_seconds) + prompt_extra_seconds(step, prompts)
               - prompt_extra_seconds(step, cached))
    total = np.cumsum(service)
    departures = total + np.maximum.accumulate(arrivals - (total - service))
    duration = float(departures[-1])
    busy = float(total[-1]) / duration
    stats = dict(rejected=0, events=len(arrivals), truncated=False, duration=duration, busy=busy, prefill_busy=busy,
                 mean_batch=0.0, output_tokens_per_second=len(arrivals) / duration)
    return departures, departures.copy(), stats


@dataclass(slots=True)
class _Run:
    """State of one event-loop run: the step table as lists, the requests, and the engine's counters.

    Plain Python floats and lists: numpy scalars would cost more than the work.
    """

    a: list[float]
    """Step time of ``n`` tokens with no cache, ``a[n]``. [s]"""
    extra: list[float]
    """Prompt extra ``e(p)`` for every whole ``p`` up to the longest prompt. [s]"""
    kappa: float
    """Time to read one cached token. [s/token]"""
    chunk: int
    """Token budget of a step. [token]"""
    max_seqs: int
    """Sequence limit. [-]"""
    capacity: float
    """Tokens the KV pool holds. [token]"""
    per_step: int
    """Most prompts one step carries. [-]"""
    arr: list[float]
    """Arrival times. [s]"""
    s_len: list[int]
    """Prompt lengths. [token]"""
    o_len: list[int]
    """Output lengths. [token]"""
    need: list[int]
    """KV tokens a request reserves, prompt + output. [token]"""
    first: list[float]
    """Time of each request's first token (nan until then). [s]"""
    finish: list[float]
    """Time each request finished (nan until then). [s]"""
    waiting: deque[int] = field(default_factory=deque)
    """Requests waiting for (the rest of) their prefill, first come first served."""
    heap: list[tuple[int, int]] = field(default_factory=list)
    """Decoding requests as (step index of their last token, request)."""
    t: float = 0.0
    """Simulated time. [s]"""
    nxt: int = 0
    """Next request to arrive."""
    step_index: int = 0
    """Steps run so far."""
    batch: int = 0
    """Sequences decoding."""
    offset: int = 0
    """Sum over decoding sequences of (prompt - step of first token): cached tokens = offset + batch * step."""
    reserved: float = 0.0
    """KV tokens reserved by admitted requests. [token]"""
    progress: int = 0
    """Prompt tokens already prefilled of ``waiting[0]``. [token]"""
    head_admitted: bool = False
    """Whether ``waiting[0]`` holds its KV reservation."""
    rejected: int = 0
    """Requests longer than the whole pool."""
    events: int = 0
    """Loop iterations so far."""
    busy: float = 0.0
    """Time spent running steps. [s]"""
    prefill_busy: float = 0.0
    """Time spent in steps that carried prompt tokens. [s]"""
    batch_time: float = 0.0
    """Integral of the decode batch over time. [s]"""
    done: int = 0
    """Requests finished."""
    cached: list[int] = field(default_factory=list)
    """Prompt tokens each request finds in the prefix cache (``step_table.cached_prompt_tokens``). [token]"""


def _start(step: StepModel, arrivals: np.ndarray, prompts: np.ndarray, outputs: np.ndarray, per_step: int) -> _Run:
    """An idle engine with the step table as lists and no request arrived."""
    n = len(arrivals)
    top = int(step.token_grid[-1])
    a = np.interp(np.arange(top + 1), step.token_grid, step.token_seconds).tolist()
    longest = int(prompts.max())
    extra = prompt_extra_seconds(step, np.arange(longest + 1)).tolist()
    arr, s_len, o_len = arrivals.tolist(), prompts.tolist(), outputs.tolist()
    return _Run(a=a, extra=extra, kappa=step.kv_seconds, chunk=step.chunk_tokens, max_seqs=step.max_sequences,
                capacity=step.kv_capacity_tokens, per_step=per_step, arr=arr, s_len=s_len, o_len=o_len,
                need=[s_len[i] + o_len[i] for i in range(n)], first=[math.nan] * n, finish=[math.nan] * n,
                cached=np.asarray(cached_prompt_tokens(step, prompts), dtype=np.int64).tolist())


def _finish_through(run: _Run, last: int, now: float) -> None:
    """Retire the decoding requests whose last token is in a step up to ``last``, at time ``now``."""
    heap = run.heap
    while heap and heap[0][0] <= last:
        end, i = heapq.heappop(heap)
        run.finish[i] = now
        run.batch -= 1
        run.offset -= run.s_len[i] - (end - run.o_len[i] + 1)
        run.reserved -= run.need[i]
        run.done += 1


def _arrive(run: _Run) -> None:
    """Queue the requests that arrived by now; reject those the whole pool cannot hold."""
    n = len(run.arr)
    while run.nxt < n and run.arr[run.nxt] <= run.t:
        if run.need[run.nxt] > run.capacity:
            run.rejected += 1
        else:
            run.waiting.append(run.nxt)
        run.nxt += 1


def _schedulable(run: _Run) -> bool:
    """Whether the head of the queue can put prompt tokens into the next step."""
    if not (run.waiting and run.chunk - run.batch > 0):
        return False
    head = run.waiting[0]
    return run.head_admitted or (run.reserved + run.need[head] <= run.capacity and run.batch < run.max_seqs)


def _fill(run: _Run) -> tuple[int, float, list[int]]:
    """Give the step's budget left by the decodes to waiting prompts, first come first served, admitting each
    when its reservation fits: the prompt tokens taken, their prefill extra [s] and the prompts completed."""
    waiting, extra, s_len = run.waiting, run.extra, run.s_len
    budget, tokens, added, taken = run.chunk - run.batch, 0, 0.0, 0
    completed: list[int] = []
    while waiting and tokens < budget and taken < run.per_step:
        i = waiting[0]
        if not run.head_admitted:
            if run.reserved + run.need[i] > run.capacity or run.batch + len(completed) >= run.max_seqs:
                break
            run.reserved += run.need[i]
            run.head_admitted = True
            run.progress = run.cached[i]  # the prefill starts after the prefix cache's tokens
        progress = run.progress
        take = min(budget - tokens, s_len[i] - progress)
        added += extra[progress + take] - extra[progress]
        tokens += take
        taken += 1
        if progress + take == s_len[i]:
            completed.append(waiting.popleft())
            run.progress, run.head_admitted = 0, False
        else:
            run.progress = progress + take
    return tokens, added, completed


def _mixed_step(run: _Run) -> None:
    """One step of every decode plus prompt tokens; prompts it completes sample their first token."""
    tokens, added, completed = _fill(run)
    batch = run.batch
    dt = run.a[batch + tokens] + run.kappa * (run.offset + batch * run.step_index) + added
    dt = max(dt, run.a[1])
    run.t += dt
    run.busy += dt
    run.prefill_busy += dt
    run.batch_time += batch * dt
    _finish_through(run, run.step_index, run.t)
    for i in completed:
        run.first[i] = run.t
        if run.o_len[i] == 1:
            run.finish[i] = run.t
            run.reserved -= run.need[i]
            run.done += 1
        else:
            heapq.heappush(run.heap, (run.step_index + run.o_len[i] - 1, i))
            run.batch += 1
            run.offset += run.s_len[i] - run.step_index
    run.step_index += 1


def _decode_run(run: _Run) -> None:
    """A run of identical decode-only steps until the next finish or the step after the next arrival.

    Step :math:`j` of the run lasts :math:`a(B) + \\kappa (K_0 + B j)`, so :math:`k` steps last
    :math:`k\\,a(B) + \\kappa (k K_0 + B k (k-1)/2)`; the run stops at the first step that ends after the
    next arrival (a root of that quadratic) when that arrival could be admitted.
    """
    batch, kappa, step_index = run.batch, run.kappa, run.step_index
    alpha, kv0 = run.a[batch], run.offset + batch * step_index
    k = run.heap[0][0] - step_index + 1
    can_admit = not run.waiting and run.nxt < len(run.arr) and run.chunk - batch > 0
    if can_admit:
        gap = run.arr[run.nxt] - run.t
        c2, c1 = kappa * batch / 2, alpha + kappa * kv0 - kappa * batch / 2
        needed = gap / c1 if c2 <= 0 else (-c1 + math.sqrt(c1 * c1 + 4 * c2 * gap)) / (2 * c2)
        k = min(k, max(1, math.ceil(needed - 1e-9)))
    dt = k * alpha + kappa * (k * kv0 + batch * k * (k - 1) / 2)
    run.t += dt
    run.busy += dt
    run.batch_time += batch * dt
    run.step_index += k
    _finish_through(run, run.step_index - 1, run.t)


def _events(
    step: StepModel,
    arrivals: np.ndarray,
    prompts: np.ndarray,
    outputs: np.ndarray,
    per_step: int,
    max_events: int,
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """The event loop: mixed steps while a prompt can be scheduled, else runs of decode-only steps, else a jump
    to the next arrival; at most ``max_events`` iterations. First-token and finish times [s], and statistics."""
    run = _start(step, arrivals, prompts, outputs, per_step)
    n = len(arrivals)
    while run.done + run.rejected < n and run.events < max_events:
        run.events += 1
        if not run.events % 4096:
            progress.report("simulation", run.done + run.rejected, n)
        _arrive(run)
        if _schedulable(run):
            _mixed_step(run)
        elif run.batch > 0:
            _decode_run(run)
        elif run.nxt >= n:
            break  # only requests the pool can never hold are left
        else:
            run.t = max(run.t, run.arr[run.nxt])
    progress.report("simulation", n, n)
    duration = max(run.t, 1e-12)
    generated = float(np.sum(outputs[~np.isnan(np.asarray(run.finish))]))
    stats = dict(rejected=run.rejected, events=run.events, truncated=run.done + run.rejected < n, duration=duration,
                 busy=run.busy / duration, prefill_busy=run.prefill_busy / duration,
                 mean_batch=run.batch_time / duration, output_tokens_per_second=generated / duration)
    return np.asarray(run.first), np.asarray(run.finish), stats
