"""Static batches and calibration measurements: ``batch_throughput``, and ``predict`` / ``keys``, the hooks
``efficiency.fit``, ``calibration`` and the validation report use (re-exported by ``performance``).

A static batch prefills every prompt in one step, then decodes one step per output token at the
batch's growing context (TensorRT-LLM's ``gptSessionBenchmark``). ``predict`` maps a calibration
measurement onto the same passes (``gpusizer.passes``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from gpusizer import catalog, configuration, datafiles, efficiency, parallel, passes

__all__ = ["BatchThroughput", "batch_throughput", "keys", "predict"]


@dataclass(frozen=True)
class BatchThroughput:
    """Output throughput of a static batch: prefill every prompt, then decode every output token."""

    ceiling_tokens_per_second: float
    """All GPUs together, datasheet roofline. [token/s]"""
    expected_tokens_per_second: float
    """All GPUs together, expected. [token/s]"""
    expected_tokens_per_second_per_gpu: float
    """Expected, divided by the GPUs. [token/s]"""
    prefill_seconds_expected: float
    """Prefill of the whole batch. [s]"""
    decode_seconds_expected: float
    """All decode steps. [s]"""


def _batch_seconds(
    s: configuration.Setup, c: efficiency.Constants | None, prompt: int, output: int, batch: int
) -> tuple[float, float]:
    steps = passes.prefill_steps(s, prompt, np.inf, batch)  # the whole batch's context phase at once
    fill = passes.prefill_seconds(steps, s, c, s, 0.0 if c is None else c.request_seconds)
    contexts = prompt + np.arange(1, max(output, 1))
    tail = passes.decode_seconds(s, c, contexts, batch)
    return float(fill), float(np.sum(tail))


def batch_throughput(
    model: str | catalog.Model,
    gpu: str | catalog.GPU,
    *,
    prompt: int,
    output: int,
    batch: int,
    weights: str | None = None,
    expert_weights: str | None = None,
    kv_cache: str | None = None,
    gpus: int = 1,
    engine: str = "trtllm",
    split: str = "tensor",
    table: efficiency.Table | None = None,
    layout: str | parallel.Layout | None = None,
) -> BatchThroughput:
    """Output tokens per second of a static batch of ``batch`` requests of ``prompt`` + ``output`` tokens.

    The prompts are prefilled together in one step (static batching, as TensorRT-LLM's
    ``gptSessionBenchmark`` does), then ``output - 1`` decode steps follow,
    each at the batch's growing context; throughput is ``batch * output`` over the total time.
    ``layout`` (``gpusizer.parallel``) overrides ``split``; with pipeline stages the batch decodes
    as micro-batches in flight.

    Examples
    --------
    >>> b = batch_throughput("llama-2-7b", "a100-80gb-sxm", prompt=128, output=128, batch=64)
    >>> b.expected_tokens_per_second < b.ceiling_tokens_per_second
    True
    """
    table = table if table is not None else efficiency.bundled()
    record, device, w, e, kv = configuration.resolve(model, gpu, weights, expert_weights, kv_cache)
    plan = configuration.layout_plan(split, gpus) if layout is None else parallel.layout(layout, gpus)
    parallel.check(plan, record, heads=False)
    s = configuration.setup(record, device, w, e, kv, gpus, engine, plan.name, table)
    c = configuration.constants(s, table)
    top = sum(_batch_seconds(s, None, prompt, output, batch))
    fill, tail = _batch_seconds(s, c, prompt, output, batch)
    tokens = batch * output
    return BatchThroughput(tokens / top, tokens / (fill + tail), tokens / (fill + tail) / gpus, fill, tail)


# --- calibration measurements ---------------------------------------------------------------------


@cache
def _case_setup(case: efficiency.Case) -> configuration.Setup:
    record, device, w, e, kv = configuration.resolve(case.model, case.gpu, case.weights or None,
                                                     case.expert_weights or None, case.kv_cache)
    link = device.interconnect
    if case.host_pcie is not None and link is not None and (link.pcie_generation or 0) > case.host_pcie:
        device = device.model_copy(update={"interconnect": link.model_copy(update={"pcie_generation": case.host_pcie})})
    return configuration.setup(record, device, w, e, kv, case.gpus, case.engine, case.split, _structure())


@cache
def _structure() -> efficiency.Table:
    """Table used for what the fit never changes (whether an engine multiplies in INT8)."""
    return efficiency.load(datafiles.bundled("calibration/priors.toml"))


def keys(case: efficiency.Case) -> efficiency.Keys:
    """``(engine, gpu_class, format_family, fabric)`` of a measurement: the constants it informs."""
    s = _case_setup(case)
    return s.engine, s.gpu_class, s.family, s.fabric


@cache
def _case_steps(case: efficiency.Case) -> tuple[passes.Step, ...]:
    """The engine steps a measurement consists of; they do not depend on the fitted constants."""
    s = _case_setup(case)
    if case.metric in ("decode", "decode_aggregate"):
        return (passes.decode_step(s, max(case.prompt + case.output // 2, 1), case.batch),)
    if case.metric == "offline":
        return (passes.saturated_step(s, case.prompt, case.output, case.batch),)
    if case.metric == "static_batch":
        contexts = case.prompt + np.arange(1, max(case.output, 1))
        return passes.prefill_steps(s, case.prompt, np.inf, case.batch), passes.decode_step(s, contexts, case.batch)
    chunk = configuration.constants(s, _structure()).chunk_tokens
    return passes.prefill_steps(s, case.prompt, chunk), passes.decode_step(s, case.prompt, 1)


def predict(case: efficiency.Case, table: efficiency.Table | None = None, *, ceiling: bool = False) -> float:
    """What gpusizer predicts for a calibration measurement, in the units of ``case.value``.

    ``decode``: per-user tokens/s at the mean context of the generation; ``decode_aggregate``: all
    users; ``prefill``: prompt tokens/s; ``ttft``: prefill plus one decode step [s];
    ``static_batch``: output tokens/s per GPU of a static batch (``batch_throughput``); ``offline``:
    output tokens/s per GPU of a saturated continuous-batching engine holding ``case.batch`` sequences
    (``passes.saturated_step`` plus the per-request cost of the prompts it admits).
    """
    s = _case_setup(case)
    c = None if ceiling else configuration.constants(s, table if table is not None else efficiency.bundled())
    steps = _case_steps(case)
    if case.metric in ("decode", "decode_aggregate"):
        users = case.batch if case.metric == "decode_aggregate" else 1
        return float(users / passes.step_seconds(steps[0], s, c, phase="decode"))
    request = 0.0 if c is None else c.request_seconds
    if case.metric == "offline":
        step = float(passes.step_seconds(steps[0], s, c, phase="decode")) + case.batch / case.output * request
        return case.batch / step / case.gpus
    fill = float(passes.prefill_seconds(steps[0], s, c, s, request))
    tail = float(np.sum(passes.step_seconds(steps[1], s, c, phase="decode")))
    if case.metric == "prefill":
        return case.prompt / fill
    if case.metric == "ttft":
        return fill + tail
    if case.metric == "static_batch":
        return case.batch * case.output / (fill + tail) / case.gpus
    raise ValueError(f"metric {case.metric!r} is not predicted")

