"""Decode and prefill speed of one model on one GPU type: composition only, no formula of its own.

``speed(model, gpu, ...)`` unpacks the catalogue records into numbers (``unpack``, ``configuration``),
counts the FLOPs and bytes of each operator class of an engine step (``step``, composed into decode
rounds and chunked prefills by ``passes``), times them at the datasheet peaks (the ceiling) and at
the efficiencies of ``data/efficiency.toml`` (the expected value), and attaches the p10-p90 band of
the regime. ``context``, ``concurrency`` and ``prompt`` broadcast like numpy arrays through every field.
``decode_numbers`` and ``prefill_numbers`` are the speed numbers of a configuration that ``estimate``
and ``sweep`` share.

``batch_throughput`` (a static batch: prefill of every prompt, then one decode step per output
token) and the calibration hooks ``predict`` and ``keys`` live in ``measurement`` and are re-exported
here.

Multi-GPU: ``layout`` (``gpusizer.parallel``) says how ``gpus`` GPUs share the model. Tensor
parallelism shards weights, KV heads and FLOPs and adds two all-reduces per layer, timed by the
algorithm the engine runs on that link (``interconnect``); pipeline stages run a micro-batch's layers
one after the other and hand activations on; expert parallelism divides the routed experts by expert,
waits for the busiest rank, and adds an all-to-all dispatch and combine per MoE layer when attention
is data parallel. ``split="layer"`` (llama.cpp's default) is the layout ``layer``: stages one after
the other, so a token takes as long as on one GPU holding every layer, plus one hop per boundary.
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np

from gpusizer import catalog, configuration, decode, efficiency, parallel, passes, prefill, roofline
from gpusizer.checks import integer_array, plain, scalar_or_array
from gpusizer.measurement import BatchThroughput, batch_throughput, keys, predict
from gpusizer.numeric import maximum, minimum, number, where

__all__ = [
    "PREFILL_UNKNOWN", "BatchThroughput", "Decode", "Prefill", "Speed", "band_factors", "batch_throughput",
    "decode_numbers", "keys", "predict", "prefill_numbers", "regime", "regimes", "speed", "speed_of",
]


@dataclass(frozen=True)
class Decode:
    """Decode speed. Rates are per user unless named aggregate; every field broadcasts."""

    context: Any
    """Tokens each sequence holds during the step. [token]"""
    concurrency: Any
    """Sequences decoded together. [-]"""
    ceiling_tokens_per_second: Any
    """Datasheet roofline: never exceeded. [token/s]"""
    expected_tokens_per_second: Any
    """With fitted efficiencies and fixed costs. [token/s]"""
    band: tuple[Any, Any]
    """p10 and p90 of ``expected_tokens_per_second`` from the fit's residuals in this regime. [token/s]"""
    ceiling_aggregate_tokens_per_second: Any
    """All sequences together, at the ceiling. [token/s]"""
    expected_aggregate_tokens_per_second: Any
    """All sequences together, expected. [token/s]"""
    tpot_seconds_ceiling: Any
    """Time per output token at the ceiling. [s]"""
    tpot_seconds_expected: Any
    """Time per output token, expected. [s]"""
    bound: Any
    """``"memory"`` or ``"compute"``: the side of the roofline that dominates the step."""
    weight_bytes: Any
    """Weights streamed per step and GPU (experts touched only; embedding gathered, not streamed). [B]"""
    kv_bytes: Any
    """KV cache and recurrent state read per step and GPU. [B]"""
    activation_bytes: Any
    """Activations moved per step and GPU. [B]"""
    flops: Any
    """FLOPs per step and GPU. [FLOP]"""
    arithmetic_intensity: Any
    """``flops / (weight + kv + activation bytes)``. [FLOP/B]"""
    experts_touched: Any
    """Distinct routed experts per MoE layer in a step (0 for dense models). [-]"""
    overhead_seconds: Any
    """Fixed per-layer and per-step costs plus all-reduces, expected. [s]"""
    allreduce_seconds: Any
    """One all-reduce, expected (0 on one GPU). [s]"""
    communication_seconds: Any
    """All collectives of the step, expected: all-reduces, MoE all-to-alls, pipeline hops. [s]"""
    scaling_efficiency: Any
    """Step time of one GPU of this type with unlimited memory over ``gpus`` times this one, expected. [-]"""
    regime: str
    """Regime of the band: ``decode, batch 1`` or ``decode, batch > 1`` (``decode`` when an array mixes
    both), with ``, tensor parallel`` or ``, layer split`` on several GPUs."""
    constants: str
    """Efficiency group used, ``engine/gpu_class/format``."""
    informed: bool
    """Whether measurements informed that group (else priors only, band widened)."""
    compute_rate_published: bool
    """False when the GPU has no published tensor rate: compute time is then not modelled."""
    layout: str = "tp1"
    """How the GPUs share the model (``gpusizer.parallel``)."""
    links: str = "none"
    """Link classes the step's collectives cross (``interconnect.link_class``)."""


@dataclass(frozen=True)
class Prefill:
    """Prefill speed of one prompt on an idle engine, and the time to first token."""

    prompt: Any
    """Prompt tokens. [token]"""
    chunk_tokens: float
    """Largest chunk per engine step. [token]"""
    chunks: Any
    """Engine steps the prompt takes. [-]"""
    flops: Any
    """FLOPs per GPU. [FLOP]"""
    weight_bytes: Any
    """Weights streamed per GPU, summed over chunks. [B]"""
    bytes_moved: Any
    """Weights, KV cache and activations moved per GPU, summed over chunks. [B]"""
    arithmetic_intensity: Any
    """``flops / bytes_moved``. [FLOP/B]"""
    seconds_ceiling: Any
    """Datasheet roofline. [s]"""
    seconds_expected: Any
    """Expected; None when the GPU publishes no matrix rate (``unknown``). [s]"""
    band: tuple[Any, Any]
    """p10 and p90 of ``seconds_expected``. [s]"""
    tokens_per_second_ceiling: Any
    """``prompt / seconds_ceiling``. [token/s]"""
    tokens_per_second_expected: Any
    """``prompt / seconds_expected``. [token/s]"""
    ttft_seconds_ceiling: Any
    """Prefill plus the first decode step, at the ceiling. [s]"""
    ttft_seconds_expected: Any
    """Prefill plus the first decode step, expected. [s]"""
    ttft_band: tuple[Any, Any]
    """p10 and p90 of ``ttft_seconds_expected``. [s]"""
    bound: Any
    """``"memory"`` or ``"compute"``."""
    communication_seconds: Any
    """All collectives of the prefill, expected. [s]"""
    scaling_efficiency: Any
    """Prefill time of one GPU of this type with unlimited memory over ``gpus`` times this one. [-]"""
    regime: str
    constants: str
    informed: bool
    compute_rate_published: bool
    unknown: str | None = None
    """Why the expected prefill, its band, TTFT and scaling are None (a GPU whose vendor publishes no
    matrix rate: compute time cannot be modelled, only the memory-bound ceiling); None when known."""


#: Why ``Prefill``'s expected fields are None on a GPU without a published matrix rate.
PREFILL_UNKNOWN = "no published dense matrix (tensor) rate for this GPU, so prefill compute is not modelled"

#: The fields of ``Prefill`` that need the GPU's compute rate (None when it publishes none).
_NEEDS_COMPUTE_RATE = ("seconds_expected", "band", "tokens_per_second_expected", "ttft_seconds_expected",
                      "ttft_band", "scaling_efficiency")


class Speed(NamedTuple):
    """``speed``'s answer; unpacks as ``decode, prefill = speed(...)``."""

    decode: Decode
    prefill: Prefill

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict; arrays become lists."""
        return {"decode": plain(asdict(self.decode)), "prefill": plain(asdict(self.prefill))}


def _parallelism(plan: parallel.Layout | configuration.Setup) -> str:
    """The regime name of a layout's (or a scalar setup's) degrees; bands fall back to coarser regimes."""
    if plan.sequential:
        return "layer split"
    if plan.ep > 1:
        return "expert parallel"
    if plan.pp > 1:
        return "pipeline parallel"
    return "tensor parallel" if plan.tp > 1 else "data parallel"


def regime(phase: str, s: configuration.Setup | parallel.Layout, batch: str | None = None) -> str:
    """The regime of a scalar setup (or of a layout), which picks its band: phase, batch, and its parallelism."""
    parts = [phase] + ([batch] if batch else [])
    if s.gpus > 1:
        parts.append(_parallelism(s))
    return ", ".join(parts)


def regimes(phase: str, s: configuration.Setup, batch: str | None = None) -> np.ndarray:
    """``regime`` of every cell of an array setup (``configuration.setups``), as an object array: one call per
    distinct set of degrees above 1 (all a regime reads), on a layout of degrees 1 and 2 with that set."""
    dp = np.asarray(s.groups) // np.asarray(s.attention_dp)
    above = np.broadcast_arrays(*(np.asarray(d) > 1 for d in (s.tp, s.pp, s.ep, dp)), np.asarray(s.sequential))
    kinds, where_ = np.unique(np.stack(above, axis=-1).astype(np.intp) @ (1 << np.arange(5)), return_inverse=True)
    found = [regime(phase, parallel.Layout(tp=1 + (k & 1), pp=1 + (k >> 1 & 1), ep=1 + (k >> 2 & 1),
                                           dp=1 + (k >> 3 & 1), sequential=k > 15), batch) for k in kinds.tolist()]
    return np.asarray(found, dtype=object)[where_.reshape(above[0].shape)]


def _batch_regime(users: Any) -> str | None:
    single = users == 1
    if type(single) is bool:
        return "batch 1" if single else "batch > 1"
    return "batch 1" if np.all(single) else "batch > 1" if not np.any(single) else None


def _bound_name(flag: Any) -> Any:
    if type(flag) is bool or type(flag) is np.bool_:
        return "compute" if flag else "memory"
    return scalar_or_array(np.where(flag, "compute", "memory"))


# --- the public composition -----------------------------------------------------------------------


def speed(
    model: str | catalog.Model,
    gpu: str | catalog.GPU,
    *,
    weights: str | None = None,
    expert_weights: str | None = None,
    kv_cache: str | None = None,
    context: Any = 8192,
    concurrency: Any = 1,
    prompt: Any = None,
    gpus: int = 1,
    engine: str = "vllm",
    split: str = "tensor",
    chunk: float | None = None,
    table: efficiency.Table | None = None,
    layout: str | parallel.Layout | None = None,
    scale_out: float | None = None,
) -> Speed:
    """Decode and prefill speed of ``model`` on ``gpus`` GPUs of type ``gpu``.

    Parameters
    ----------
    model, gpu : str or record
        Catalogue ids (or aliases) or records.
    weights : str, optional
        Precision of the linear weights; default the published checkpoint's.
    expert_weights : str, optional
        Precision of the routed experts; default the checkpoint's when ``weights`` is not given,
        else ``weights``.
    kv_cache : str, optional
        KV-cache dtype; default the activation dtype.
    context : array_like of int
        Tokens each sequence holds while decoding. [token]
    concurrency : array_like of int
        Sequences decoded together. [-]
    prompt : array_like of int, optional
        Prompt tokens of the request whose TTFT is reported; default ``context``. Its first decode
        step runs at ``concurrency``, so ``prompt`` and ``concurrency`` (like ``context`` and
        ``concurrency``) must broadcast together. [token]
    gpus : int
        GPUs serving one model replica. [-]
    engine : str
        Engine class: ``vllm``, ``sglang``, ``trtllm``, ``llama.cpp``, ``mlc`` or ``eager``.
    split : str
        ``"tensor"`` (tensor parallel) or ``"layer"`` (sequential layer stages, llama.cpp); the
        layouts ``tp`` and ``layer``.
    chunk : float, optional
        Tokens per prefill step; default the engine's (vLLM 8192, llama.cpp 512).
    table : efficiency.Table, optional
        Efficiency constants; default ``data/efficiency.toml``.
    layout : str or parallel.Layout, optional
        How the ``gpus`` GPUs share the model (``tp``, ``tp2xpp2``, ``tp8+ep8``...; ``gpusizer.parallel``);
        overrides ``split``.
    scale_out : float, optional
        Scale-out bandwidth per GPU and direction, for layouts larger than the scale-up domain;
        default one 400 Gb/s NIC per GPU. [B/s]

    Returns
    -------
    Speed
        ``(decode, prefill)``: frozen records of ceilings, expected values and bands.

    Raises
    ------
    KeyError
        Unknown model or GPU.
    ValueError
        Non-positive or fractional lengths or chunk, unknown precision, engine or split.

    Examples
    --------
    >>> d, p = speed("llama-3.1-8b", "h100-sxm", context=1, concurrency=1)
    >>> round(d.ceiling_tokens_per_second)  # 3.35 TB/s over 15.01 GB of weights and a few MB more
    223
    >>> d.expected_tokens_per_second < d.ceiling_tokens_per_second
    True
    """
    table = table if table is not None else efficiency.bundled()
    if split not in ("tensor", "layer"):
        raise ValueError(f"split must be 'tensor' or 'layer', got {split!r}")
    count = int(integer_array(gpus, "gpus", minimum=1))
    plan = configuration.layout_plan(split, count) if layout is None else parallel.layout(layout, count)
    ctx = number(integer_array(context, "context", minimum=1))
    users = number(integer_array(concurrency, "concurrency", minimum=1))
    asked = None if prompt is None else number(integer_array(prompt, "prompt", minimum=1))
    if chunk is not None and not chunk > 0:
        raise ValueError(f"chunk must be > 0 tokens, got {chunk!r}")
    record, device, w, e, kv = configuration.resolve(model, gpu, weights, expert_weights, kv_cache)
    parallel.check(plan, record, heads=False)
    return speed_of(record, device, w, e, kv, count, engine, plan, table, scale_out, ctx, users, asked, chunk)


def speed_of(
    record: catalog.Model, device: catalog.GPU, weights: str, expert_weights: str | None, kv_cache: str, gpus: int,
    engine: str, plan: parallel.Layout, table: efficiency.Table, scale_out: float | None, context: Any,
    concurrency: Any, prompt: Any, chunk: float | None,
) -> Speed:
    """``speed`` of arguments already checked and resolved (``estimate`` has them); ``prompt`` None: ``context``."""
    s, c, alone = _configured(record, device, weights, expert_weights, kv_cache, gpus, engine, plan.name, table,
                              scale_out)
    d = _decode(s, c, table, context, concurrency, alone)
    if prompt is None:  # the prompt is the context: its first decode step is the step above
        first = d.tpot_seconds_ceiling, d.tpot_seconds_expected
        return Speed(d, _prefill(s, c, table, context, concurrency, chunk, first, alone))
    return Speed(d, _prefill(s, c, table, prompt, concurrency, chunk, None, alone))


@lru_cache(maxsize=4096)
def _configured(
    record: catalog.Model,
    device: catalog.GPU,
    weights: str,
    expert_weights: str | None,
    kv_cache: str,
    gpus: int,
    engine: str,
    split: str,
    table: efficiency.Table,
    scale_out: float | None = None,
) -> tuple[configuration.Setup, efficiency.Constants, configuration.Setup]:
    """``configuration.setup``, its constants and its one-GPU reference (``passes.single_gpu``), cached per
    configuration: records are frozen, and a table is one object per calibration."""
    s = configuration.setup(record, device, weights, expert_weights, kv_cache, gpus, engine, split, table, scale_out)
    return s, configuration.constants(s, table), passes.single_gpu(s)


def _decode(
    s: configuration.Setup, c: efficiency.Constants, table: efficiency.Table, ctx: Any, users: Any,
    alone: configuration.Setup | None = None,
) -> Decode:
    bands = tuple(band_factors(table, "decode", s, c, batch) for batch in ("batch 1", "batch > 1"))
    return Decode(
        **decode_numbers(s, c, bands, ctx, users, alone),
        regime=regime("decode", s, _batch_regime(users)),
        constants=c.group,
        informed=c.informed,
        compute_rate_published=s.published,
        layout=configuration.layout_plan(s.split, int(s.gpus)).name,
        links=s.links,
    )


def band_factors(
    table: efficiency.Table, phase: str, s: configuration.Setup, c: efficiency.Constants, batch: str | None = None
) -> Any:
    """``(low, high)`` band factors of a phase (``efficiency.band_factors``) in ``regime``; arrays where ``s.gpus``
    and ``c.informed`` are (``configuration.setups``)."""
    if not isinstance(c.informed, np.ndarray):
        return efficiency.band_factors(table, regime(phase, s, batch), informed=c.informed)
    names = regimes(phase, s, batch)
    low = high = np.ones(np.broadcast_shapes(names.shape, c.informed.shape))
    for name, informed in itertools.product(sorted(set(names.flat)), (False, True)):
        pick = (names == name) & (c.informed == informed)
        factors = efficiency.band_factors(table, name, informed=informed)
        low, high = np.where(pick, factors[0], low), np.where(pick, factors[1], high)
    return low, high


def decode_numbers(
    s: configuration.Setup, c: efficiency.Constants, bands: Any, ctx: Any, users: Any,
    alone: configuration.Setup | None = None,
) -> dict[str, Any]:
    """The speed numbers of a configuration's decode: the numeric fields of ``Decode`` (shared by ``speed``,
    ``estimate`` and ``sweep``). ``s`` and ``c`` may hold arrays (``configuration.setups``); ``bands`` are the
    ``(low, high)`` factors at batch 1 and at batch > 1 (``band_factors``); ``alone`` is ``s``'s one-GPU
    reference (``passes.single_gpu``) when the caller has it."""
    single, batched = bands
    steps = passes.decode_steps(s, ctx, users)
    step = steps.large
    allreduce = passes.allreduce_seconds(step, s, c)
    communication = passes.communication_seconds(step, s, c, allreduce)
    overhead = passes.overhead_seconds(step, s, c, communication)
    ceiling = passes.decode_seconds(s, None, ctx, users, steps)
    expected = passes.decode_seconds(s, c, ctx, users, steps, overhead)
    one = alone if alone is not None else passes.single_gpu(s)
    reference = expected if passes.is_single_gpu(s) else passes.decode_seconds(one, c, ctx, users)
    one = users == 1
    low, high = where(one, single[0], batched[0]), where(one, single[1], batched[1])
    rate, top = decode.tokens_per_second(expected), decode.tokens_per_second(ceiling)
    weights = step.dense_bytes + step.expert_bytes - step.activation_bytes
    flops = step.dense_flops + step.expert_flops + step.attention_flops
    moved = step.dense_bytes + step.expert_bytes + step.kv_bytes
    compute, memory_ = passes.bound_seconds(step, s)
    return dict(
        context=scalar_or_array(ctx),
        concurrency=scalar_or_array(users),
        ceiling_tokens_per_second=top,
        expected_tokens_per_second=rate,
        band=(scalar_or_array(rate * low), scalar_or_array(minimum(rate * high, top))),
        ceiling_aggregate_tokens_per_second=decode.aggregate_tokens_per_second(users, ceiling),
        expected_aggregate_tokens_per_second=decode.aggregate_tokens_per_second(users, expected),
        tpot_seconds_ceiling=ceiling,
        tpot_seconds_expected=expected,
        bound=_bound_name(compute > memory_),
        weight_bytes=scalar_or_array(weights),
        kv_bytes=scalar_or_array(step.kv_bytes),
        activation_bytes=scalar_or_array(step.activation_bytes),
        flops=scalar_or_array(flops),
        arithmetic_intensity=roofline.arithmetic_intensity(flops, moved),
        experts_touched=scalar_or_array(step.touched),
        overhead_seconds=scalar_or_array(overhead),
        allreduce_seconds=scalar_or_array(allreduce),
        communication_seconds=scalar_or_array(communication),
        scaling_efficiency=scalar_or_array(parallel.scaling_efficiency(reference, expected, s.gpus)),
    )


def _prefill(
    s: configuration.Setup,
    c: efficiency.Constants,
    table: efficiency.Table,
    prompt: Any,
    users: Any,
    chunk: float | None,
    first: tuple[Any, Any] | None = None,
    alone: configuration.Setup | None = None,
) -> Prefill:
    numbers = prefill_numbers(s, c, band_factors(table, "prefill", s, c), prompt, users, chunk, first, alone)
    unknown = None
    if not s.published:  # one GPU: every row of the prefill lacks the same rate
        unknown = PREFILL_UNKNOWN
        numbers.update({name: (None, None) if name.endswith("band") else None for name in _NEEDS_COMPUTE_RATE})
    return Prefill(
        **numbers,
        regime=regime("prefill", s),
        constants=c.group,
        informed=c.informed,
        compute_rate_published=s.published,
        unknown=unknown,
    )


def prefill_numbers(
    s: configuration.Setup,
    c: efficiency.Constants,
    bands: Any,
    prompt: Any,
    users: Any,
    chunk: float | None,
    first: tuple[Any, Any] | None = None,
    alone: configuration.Setup | None = None,
) -> dict[str, Any]:
    """The speed numbers of a configuration's prefill: the numeric fields of ``Prefill`` (shared by ``speed``,
    ``estimate`` and ``sweep``). ``s`` and ``c`` may hold arrays (``configuration.setups``); ``first`` is the
    ceiling and expected time of the first decode step when the caller has them (``prompt == context``);
    ``alone`` is the one-GPU reference of a scalar ``s`` (``passes.single_gpu``) when the caller has it."""
    size = float(chunk) if chunk is not None else c.chunk_tokens
    arrays = isinstance(s.dense_peak, np.ndarray)
    sx, cx = (passes.along_chunks(s), passes.along_chunks(c)) if arrays else (s, c)  # chunks lie along a trailing axis
    one, one_s = (alone, alone) if alone is not None else (passes.single_gpu(sx), passes.single_gpu(s))
    single = passes.is_single_gpu(s)
    elements = passes.elements(s, c, prompt, users) if arrays or type(prompt) is not int else 1
    sums = passes.prefill_sums(sx, cx, one if not single else None, prompt, size, elements)
    ceiling = passes.prefill_schedule(sums["ceiling"], sums["ceiling_longest"], s)
    expected = passes.prefill_schedule(sums["expected"], sums["expected_longest"], s, c.request_seconds)
    reference = expected if single else passes.prefill_schedule(
        sums["reference"], sums["reference_longest"], one_s, c.request_seconds)
    expected = where(s.published, expected, np.nan)
    if first is None:
        first = passes.decode_seconds(s, None, prompt, users), passes.decode_seconds(s, c, prompt, users)
    ttft_top = prefill.time_to_first_token(ceiling, first[0])
    ttft = prefill.time_to_first_token(expected, first[1])
    low, high = bands
    flops, moved = sums["flops"], sums["moved"]
    return dict(
        prompt=scalar_or_array(prompt),
        chunk_tokens=size,
        chunks=sums["chunks"],
        flops=flops,
        weight_bytes=sums["weights"],
        bytes_moved=moved,
        arithmetic_intensity=roofline.arithmetic_intensity(flops, moved),
        seconds_ceiling=ceiling,
        seconds_expected=scalar_or_array(expected),
        band=(scalar_or_array(maximum(expected / high, ceiling)), scalar_or_array(expected / low)),
        tokens_per_second_ceiling=scalar_or_array(prompt / ceiling),
        tokens_per_second_expected=scalar_or_array(prompt / expected),
        ttft_seconds_ceiling=ttft_top,
        ttft_seconds_expected=scalar_or_array(ttft),
        ttft_band=(scalar_or_array(maximum(ttft / high, ttft_top)), scalar_or_array(ttft / low)),
        bound=_bound_name(sums["compute"] > sums["memory"]),
        communication_seconds=sums["communication"],
        scaling_efficiency=scalar_or_array(parallel.scaling_efficiency(reference, expected, s.gpus)),
    )
