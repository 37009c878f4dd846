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

from gpusizer.checks import positive_array, scalar_or_array
from gpusizer.serving.step_table import StepModel, prompt_extra_seconds
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
    if requests < 1:
        raise ValueError(f"requests must be >= 1, got {requests!r}")
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
    service = np.interp(prompts, step.token_grid, step.token_seconds) + prompt_extra_seconds(step, prompts)
    total = np.cumsum(service)
    departures = total + np.maximum.accumulate(arrivals - (total - service))
    duration = float(departures[-1])
    busy = float(total[-1]) / duration
    stats = dict(rejected=0, events=len(arrivals), truncated=False, duration=duration, busy=busy, prefill_busy=busy,
                 mean_batch=0.0, output_tokens_per_second=len(arrivals) / duration)
    return departures, departures.copy(), stats


def _events(
    step: StepModel,
    arrivals: np.ndarray,
    prompts: np.ndarray,
    outputs: np.ndarray,
    per_step: int,
    max_events: int,
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """The event loop. Plain Python floats and lists: numpy scalars would cost more than the work."""
    n = len(arrivals)
    top = int(step.token_grid[-1])
    a = np.interp(np.arange(top + 1), step.token_grid, step.token_seconds).tolist()
    longest = int(prompts.max())
    extra = prompt_extra_seconds(step, np.arange(longest + 1)).tolist()
    kappa, chunk, max_seqs, capacity = step.kv_seconds, step.chunk_tokens, step.max_sequences, step.kv_capacity_tokens
    arr, s_len, o_len = arrivals.tolist(), prompts.tolist(), outputs.tolist()
    first, finish = [math.nan] * n, [math.nan] * n
    need = [s_len[i] + o_len[i] for i in range(n)]
    waiting: deque[int] = deque()
    heap: list[tuple[int, int]] = []
    t = 0.0
    nxt = 0
    step_index = 0
    batch = 0  # sequences decoding
    offset = 0  # sum over decoding sequences of (prompt - step of first token): cached tokens = offset + batch * step
    reserved = 0.0
    progress = 0  # prompt tokens already prefilled of waiting[0]
    head_admitted = False
    rejected = events = 0
    busy = prefill_busy = batch_time = 0.0
    done = 0

    def finish_through(last: int, now: float) -> None:
        nonlocal batch, offset, reserved, done
        while heap and heap[0][0] <= last:
            end, i = heapq.heappop(heap)
            finish[i] = now
            batch -= 1
            offset -= s_len[i] - (end - o_len[i] + 1)
            reserved -= need[i]
            done += 1

    while done + rejected < n and events < max_events:
        events += 1
        while nxt < n and arr[nxt] <= t:
            if need[nxt] > capacity:
                rejected += 1
            else:
                waiting.append(nxt)
            nxt += 1
        schedulable = False
        if waiting and chunk - batch > 0:
            head = waiting[0]
            schedulable = head_admitted or (reserved + need[head] <= capacity and batch < max_seqs)
        if schedulable:
            budget, tokens, added, taken = chunk - batch, 0, 0.0, 0
            completed: list[int] = []
            while waiting and tokens < budget and taken < per_step:
                i = waiting[0]
                if not head_admitted:
                    if reserved + need[i] > capacity or batch + len(completed) >= max_seqs:
                        break
                    reserved += need[i]
                    head_admitted = True
                take = min(budget - tokens, s_len[i] - progress)
                added += extra[progress + take] - extra[progress]
                tokens += take
                taken += 1
                if progress + take == s_len[i]:
                    completed.append(waiting.popleft())
                    progress, head_admitted = 0, False
                else:
                    progress += take
            dt = a[batch + tokens] + kappa * (offset + batch * step_index) + added
            dt = max(dt, a[1])
            t += dt
            busy += dt
            prefill_busy += dt
            batch_time += batch * dt
            finish_through(step_index, t)
            for i in completed:
                first[i] = t
                if o_len[i] == 1:
                    finish[i] = t
                    reserved -= need[i]
                    done += 1
                else:
                    heapq.heappush(heap, (step_index + o_len[i] - 1, i))
                    batch += 1
                    offset += s_len[i] - step_index
            step_index += 1
            continue
        if batch == 0:
            if nxt >= n:
                break  # only requests the pool can never hold are left
            t = max(t, arr[nxt])
            continue
        # A run of identical decode-only steps until the next finish or the step after the next arrival.
        alpha, kv0 = a[batch], offset + batch * step_index
        k = heap[0][0] - step_index + 1
        can_admit = not waiting and nxt < n and chunk - batch > 0
        if can_admit:
            gap = arr[nxt] - t
            c2, c1 = kappa * batch / 2, alpha + kappa * kv0 - kappa * batch / 2
            needed = gap / c1 if c2 <= 0 else (-c1 + math.sqrt(c1 * c1 + 4 * c2 * gap)) / (2 * c2)
            k = min(k, max(1, math.ceil(needed - 1e-9)))
        dt = k * alpha + kappa * (k * kv0 + batch * k * (k - 1) / 2)
        t += dt
        busy += dt
        batch_time += batch * dt
        step_index += k
        finish_through(step_index - 1, t)
    duration = max(t, 1e-12)
    generated = float(np.sum(outputs[~np.isnan(np.asarray(finish))]))
    stats = dict(rejected=rejected, events=events, truncated=done + rejected < n, duration=duration,
                 busy=busy / duration, prefill_busy=prefill_busy / duration, mean_batch=batch_time / duration,
                 output_tokens_per_second=generated / duration)
    return np.asarray(first), np.asarray(finish), stats
