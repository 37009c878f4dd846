"""Decode and prefill speed of one model on one GPU type: composition only, no formula of its own.

``speed(model, gpu, ...)`` unpacks the catalogue records into numbers (``architecture``,
``precision``), counts the FLOPs and bytes of each operator class of an engine step (``decode``,
``prefill``, ``roofline``), times them at the datasheet peaks (the ceiling) and at the efficiencies
of ``data/efficiency.toml`` (the expected value), and attaches the p10-p90 band of the regime.
``context``, ``concurrency`` and ``prompt`` broadcast like numpy arrays through every field.

``batch_throughput`` composes the same steps into a static batch (prefill of every prompt, then one
decode step per output token), the setting of offline benchmarks; ``predict`` maps a calibration
measurement onto these functions for ``efficiency.fit`` and the validation report.

Multi-GPU: ``split="tensor"`` shards weights, KV heads and FLOPs over ``gpus`` and adds two ring
all-reduces per layer; ``split="layer"`` (llama.cpp's default) runs the layers' stages one after the
other, so a token takes as long as on one GPU holding every layer, plus one hop per stage boundary.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from functools import cache
from typing import Any, NamedTuple

import numpy as np

from gpusizer import architecture, catalog, decode, efficiency, memory, prefill, roofline
from gpusizer import precision as precisions
from gpusizer._checks import integer_array, plain, scalar_or_array

__all__ = ["BatchThroughput", "Decode", "Prefill", "Speed", "batch_throughput", "keys", "predict", "speed"]


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
    regime: str
    """Regime of the band: ``decode, batch 1`` or ``decode, batch > 1`` (``decode`` when an array mixes
    both), with ``, tensor parallel`` or ``, layer split`` on several GPUs."""
    constants: str
    """Efficiency group used, ``engine/gpu_class/format``."""
    informed: bool
    """Whether measurements informed that group (else priors only, band widened)."""
    compute_rate_published: bool
    """False when the GPU has no published tensor rate: compute time is then not modelled."""


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
    """Expected; ``nan`` when the GPU publishes no tensor rate. [s]"""
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
    regime: str
    constants: str
    informed: bool
    compute_rate_published: bool


class Speed(NamedTuple):
    """``speed``'s answer; unpacks as ``decode, prefill = speed(...)``."""

    decode: Decode
    prefill: Prefill

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict; arrays become lists."""
        return {"decode": plain(asdict(self.decode)), "prefill": plain(asdict(self.prefill))}


# --- records to numbers ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Model:
    """A model at one set of precisions, as numbers."""

    layers: int
    hidden: int
    vocab: int
    ffn_width: int
    dense_params: float
    head_params: float
    active_expert_params: float
    dense_bytes: float
    head_bytes: float
    expert_bytes: float
    replicated_bytes: float
    num_experts: int
    experts_per_token: int
    moe_layers: int
    windows: tuple[tuple[float, int], ...]
    heads: int
    decode_dims: tuple[int, int]
    prefill_dims: tuple[int, int]
    state_elements: float
    layout: architecture.KvLayout
    kv_bpe: float
    act_bpe: float
    weights: precisions.Precision
    experts: precisions.Precision


@cache
def _model(record: catalog.Model, weights: str, expert_weights: str | None, kv_cache: str) -> _Model:
    counts = architecture.parameter_counts(record)
    w = precisions.precision(weights)
    e = precisions.precision(expert_weights) if expert_weights else w
    act = precisions.precision(record.activation_dtype)
    table = w if w.covers_embeddings else act
    head = counts.head or counts.embedding  # a tied embedding is streamed once, as the head
    windows: Counter[float] = Counter()
    state = 0.0
    for kind in record.layers:
        if kind == "full":
            windows[np.inf] += 1
        elif kind in ("sliding", "chunked"):
            window = record.sliding_window if kind == "sliding" else record.attention_chunk_size
            windows[float(window or 0)] += 1
        elif kind == "linear" and record.linear_attention is not None:
            lin = record.linear_attention
            state += lin.num_value_heads * lin.key_head_dim * lin.value_head_dim
        elif kind == "mamba" and record.mamba is not None:
            state += record.mamba.num_heads * record.mamba.head_dim * record.mamba.state_size
    mla = record.mla
    return _Model(
        layers=record.num_layers,
        hidden=record.hidden_size,
        vocab=record.vocab_size,
        ffn_width=architecture.ffn_width_per_token(record),
        dense_params=float(counts.linear),
        head_params=float(head),
        active_expert_params=float(counts.experts_active),
        dense_bytes=(counts.linear * w.bits + counts.vector * act.bits) / 8,
        head_bytes=head * table.bits / 8,
        expert_bytes=counts.experts * e.bits / 8,
        replicated_bytes=architecture.replicated_params(record) * act.bits / 8,
        num_experts=record.moe.num_experts if record.moe else 1,
        experts_per_token=record.moe.experts_per_token if record.moe else 1,
        moe_layers=sum(kind == "moe" for kind in record.ffns),
        windows=tuple(sorted(windows.items())),
        heads=record.num_heads,
        decode_dims=(mla.kv_lora_rank + mla.qk_rope_head_dim, mla.kv_lora_rank) if mla else (record.head_dim,) * 2,
        prefill_dims=(mla.qk_nope_head_dim + mla.qk_rope_head_dim, mla.v_head_dim) if mla else (record.head_dim,) * 2,
        state_elements=state,
        layout=architecture.kv_layout(record),
        kv_bpe=precisions.kv_bytes_per_element(kv_cache),
        act_bpe=act.bits / 8,
        weights=w,
        experts=e,
    )


#: Usable PCI Express bandwidth per lane and direction, by generation (128b/130b encoding). [B/s]
PCIE_LANE = {3: 0.985e9, 4: 1.969e9, 5: 3.938e9, 6: 7.563e9}


@dataclass(frozen=True)
class _Setup:
    """Everything about a configuration that does not depend on efficiency constants."""

    model: _Model
    gpus: int
    split: str
    engine: str
    bandwidth: float
    dense_peak: float
    expert_peak: float
    attention_peak: float
    link_bandwidth: float
    gpu_class: str
    family: str
    fabric: str
    published: bool


def _peak(rates: Any, p: precisions.Precision, integer_matmul: bool) -> tuple[float, str]:
    if integer_matmul and p.weight_only:
        return roofline.tensor_peak(rates, "int8")
    return roofline.tensor_peak(rates, p.compute)


def _fabric(device: catalog.GPU, gpus: int) -> tuple[str, float]:
    link = device.interconnect
    if link.nvlink_generation and link.bandwidth and gpus <= device.scale_up_domain:
        return "nvlink", link.bandwidth / 2
    lanes = PCIE_LANE.get(link.pcie_generation or 4, PCIE_LANE[4]) * (link.pcie_lanes or 16)
    return ("pcie-host" if link.peer_to_peer is False else "pcie"), lanes


def _setup(
    record: catalog.Model,
    device: catalog.GPU,
    weights: str,
    expert_weights: str | None,
    kv_cache: str,
    gpus: int,
    engine: str,
    split: str,
    table: efficiency.Table,
) -> _Setup:
    numbers = _model(record, weights, expert_weights, kv_cache)
    integer = efficiency.resolve(table, engine, "hbm", "16bit", "nvlink").integer_matmul
    dense_peak, dense_used = _peak(device.dense, numbers.weights, integer)
    expert_peak, expert_used = _peak(device.dense, numbers.experts, integer)
    attention_peak, _ = roofline.tensor_peak(device.dense, "fp8" if numbers.kv_bpe <= 1 else "bf16")
    main = numbers.experts if numbers.expert_bytes > numbers.dense_bytes else numbers.weights
    used = expert_used if main is numbers.experts else dense_used
    native = used == main.compute or main.compute in ("bf16", "fp16", "fp32")
    fabric, link = _fabric(device, gpus)
    return _Setup(
        model=numbers,
        gpus=gpus,
        split=split,
        engine=engine,
        bandwidth=device.memory_bandwidth,
        dense_peak=dense_peak,
        expert_peak=expert_peak,
        attention_peak=attention_peak,
        link_bandwidth=link,
        gpu_class=efficiency.gpu_class(device.memory_type),
        family=efficiency.format_family(main.bits, main.compute, main.weight_only, native),
        fabric=fabric,
        published=bool(np.isfinite(dense_peak)),
    )


# --- operator counts of one engine step -----------------------------------------------------------


class _Step(NamedTuple):
    """FLOPs and bytes of one engine step on one GPU, by operator class (arrays)."""

    tokens: Any
    dense_flops: Any
    dense_bytes: Any
    expert_flops: Any
    expert_bytes: Any
    attention_flops: Any
    kv_bytes: Any
    activation_bytes: Any
    allreduce_bytes: Any
    touched: Any


def _shards(s: _Setup) -> int:
    return s.gpus if s.split == "tensor" else 1


def _step(s: _Setup, new: Any, before: Any, sequences: Any, *, head: Any, dims: tuple[int, int]) -> _Step:
    """One step in which ``sequences`` sequences each add ``new`` tokens after ``before`` cached ones."""
    m, tp = s.model, _shards(s)
    tokens = np.multiply(sequences, new)
    pairs = sum(layers * prefill.attention_pairs(new, before, window) for window, layers in m.windows)
    attention = roofline.attention_flops(np.multiply(sequences, pairs), m.heads, *dims)
    attention = attention + prefill.recurrent_flops(tokens, m.state_elements)
    cache_read = memory.sequence_cache_bytes(np.add(before, new), m.layout, m.kv_bpe, m.act_bpe, tensor_parallel=tp)
    touched = decode.experts_touched(tokens, m.num_experts, m.experts_per_token) * (m.moe_layers > 0)
    dense = memory.shard_bytes(m.dense_bytes + m.head_bytes * np.asarray(head), m.replicated_bytes, tp)
    experts = decode.streamed_weight_bytes(tokens, 0.0, m.expert_bytes, m.num_experts, m.experts_per_token) / tp
    moved = decode.activation_bytes(tokens, m.layers, m.hidden, m.ffn_width, m.vocab, m.act_bpe) / tp
    active = tokens > 0
    return _Step(
        tokens=tokens,
        dense_flops=np.add(roofline.gemm_flops(tokens, m.dense_params),
                           roofline.gemm_flops(np.multiply(sequences, head), m.head_params)) / tp,
        dense_bytes=np.where(active, dense + moved, 0.0),
        expert_flops=roofline.gemm_flops(tokens, m.active_expert_params) / tp,
        expert_bytes=np.where(active, experts, 0.0),
        attention_flops=np.asarray(attention) / tp,
        kv_bytes=np.where(active, np.multiply(sequences, cache_read), 0.0),
        activation_bytes=np.where(active, moved, 0.0),
        allreduce_bytes=tokens * m.hidden * m.act_bpe,
        touched=touched,
    )


def _decode_step(s: _Setup, context: Any, concurrency: Any) -> _Step:
    return _step(s, 1, np.subtract(context, 1), concurrency, head=1, dims=s.model.decode_dims)


def _prefill_steps(s: _Setup, prompt: Any, chunk: float, prompts: Any = 1) -> _Step:
    sizes, before = prefill.chunk_tokens(prompt, chunk)
    last = (sizes > 0) & (np.add(before, sizes) >= np.asarray(prompt, dtype=float)[..., None])
    return _step(s, sizes, before, np.asarray(prompts)[..., None], head=last, dims=s.model.prefill_dims)


def _seconds(step: _Step, s: _Setup, c: efficiency.Constants | None, *, phase: str) -> Any:
    """Step time at the ceiling (``c`` None) or expected; phase ``decode`` or ``prefill``."""
    mu = 1.0 if c is None else (c.decode_compute if phase == "decode" else c.compute)
    eta = 1.0 if c is None else c.bandwidth
    eta_kv = 1.0 if c is None else c.kv_bandwidth
    mu_attention = 1.0 if c is None else c.compute
    operators = [
        roofline.roofline_time(step.dense_flops, step.dense_bytes, s.dense_peak, s.bandwidth,
                               compute_efficiency=mu, bandwidth_efficiency=eta),
        roofline.roofline_time(step.expert_flops, step.expert_bytes, s.expert_peak, s.bandwidth,
                               compute_efficiency=mu, bandwidth_efficiency=eta),
        roofline.roofline_time(step.attention_flops, step.kv_bytes, s.attention_peak, s.bandwidth,
                               compute_efficiency=mu_attention, bandwidth_efficiency=eta_kv),
    ]
    if c is None:
        return decode.step_seconds(operators)
    return decode.step_seconds(operators, _overhead(step, s, c))


def _allreduce(step: _Step, s: _Setup, c: efficiency.Constants) -> Any:
    gpus = s.gpus if s.split == "tensor" else 1
    return decode.allreduce_seconds(step.allreduce_bytes, gpus, s.link_bandwidth * c.bandwidth_fraction,
                                    c.latency_seconds)


def _overhead(step: _Step, s: _Setup, c: efficiency.Constants) -> Any:
    fixed = decode.overhead_seconds(s.model.layers, c.layer_seconds, c.step_seconds, _allreduce(step, s, c),
                                    moe_layers=s.model.moe_layers, moe_layer_seconds=c.moe_layer_seconds)
    hops = (s.gpus - 1) * c.latency_seconds if s.split == "layer" else 0.0
    return np.where(np.asarray(step.tokens) > 0, np.add(fixed, hops), 0.0)


def _bound_seconds(step: _Step, s: _Setup) -> tuple[Any, Any]:
    """Arithmetic and memory time of a step at the datasheet peaks."""
    compute = (np.divide(step.dense_flops, s.dense_peak) + np.divide(step.expert_flops, s.expert_peak)
               + np.divide(step.attention_flops, s.attention_peak))
    memory_ = (np.add(step.dense_bytes, step.expert_bytes) + step.kv_bytes) / s.bandwidth
    return compute, memory_


def _constants(s: _Setup, table: efficiency.Table) -> efficiency.Constants:
    return efficiency.resolve(table, s.engine, s.gpu_class, s.family, s.fabric)


def _regime(phase: str, s: _Setup, batch: str | None = None) -> str:
    parts = [phase] + ([batch] if batch else [])
    if s.gpus > 1:
        parts.append("layer split" if s.split == "layer" else "tensor parallel")
    return ", ".join(parts)


def _batch_regime(users: Any) -> str | None:
    single = np.asarray(users) == 1
    return "batch 1" if np.all(single) else "batch > 1" if not np.any(single) else None


def _bound_name(flag: Any) -> Any:
    return scalar_or_array(np.where(flag, "compute", "memory"))


# --- the public composition -----------------------------------------------------------------------


def _resolve(model: Any, gpu: Any, weights: str | None, expert_weights: str | None, kv_cache: str | None):
    record, device = catalog.model(model), catalog.gpu(gpu)
    w = precisions.precision(weights if weights is not None else record.weights).name
    if expert_weights is None and weights is None:
        expert_weights = record.expert_weights
    e = precisions.precision(expert_weights).name if expert_weights else None
    kv = kv_cache if kv_cache is not None else record.activation_dtype
    precisions.kv_bytes_per_element(kv)  # validates the name
    return record, device, w, e, kv


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
        ``"tensor"`` (tensor parallel) or ``"layer"`` (sequential layer stages, llama.cpp).
    chunk : float, optional
        Tokens per prefill step; default the engine's (vLLM 8192, llama.cpp 512).
    table : efficiency.Table, optional
        Efficiency constants; default ``data/efficiency.toml``.

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
    ctx = integer_array(context, "context", minimum=1)
    users = integer_array(concurrency, "concurrency", minimum=1)
    asked = integer_array(prompt if prompt is not None else context, "prompt", minimum=1)
    if chunk is not None and not chunk > 0:
        raise ValueError(f"chunk must be > 0 tokens, got {chunk!r}")
    record, device, w, e, kv = _resolve(model, gpu, weights, expert_weights, kv_cache)
    s = _setup(record, device, w, e, kv, count, engine, split, table)
    c = _constants(s, table)
    return Speed(_decode(s, c, table, ctx, users), _prefill(s, c, table, asked, users, chunk))


def _decode(s: _Setup, c: efficiency.Constants, table: efficiency.Table, ctx: Any, users: Any) -> Decode:
    step = _decode_step(s, ctx, users)
    ceiling, expected = _seconds(step, s, None, phase="decode"), _seconds(step, s, c, phase="decode")
    single = efficiency.band_factors(table, _regime("decode", s, "batch 1"), informed=c.informed)
    batched = efficiency.band_factors(table, _regime("decode", s, "batch > 1"), informed=c.informed)
    low = np.where(np.asarray(users) == 1, single[0], batched[0])
    high = np.where(np.asarray(users) == 1, single[1], batched[1])
    rate, top = decode.tokens_per_second(expected), decode.tokens_per_second(ceiling)
    weights = np.add(step.dense_bytes, step.expert_bytes) - step.activation_bytes
    flops = np.add(np.add(step.dense_flops, step.expert_flops), step.attention_flops)
    moved = np.add(np.add(step.dense_bytes, step.expert_bytes), step.kv_bytes)
    return Decode(
        context=scalar_or_array(ctx),
        concurrency=scalar_or_array(users),
        ceiling_tokens_per_second=top,
        expected_tokens_per_second=rate,
        band=(scalar_or_array(np.multiply(rate, low)), scalar_or_array(np.minimum(np.multiply(rate, high), top))),
        ceiling_aggregate_tokens_per_second=decode.aggregate_tokens_per_second(users, ceiling),
        expected_aggregate_tokens_per_second=decode.aggregate_tokens_per_second(users, expected),
        tpot_seconds_ceiling=ceiling,
        tpot_seconds_expected=expected,
        bound=_bound_name(np.greater(*_bound_seconds(step, s))),
        weight_bytes=scalar_or_array(weights),
        kv_bytes=scalar_or_array(step.kv_bytes),
        activation_bytes=scalar_or_array(step.activation_bytes),
        flops=scalar_or_array(flops),
        arithmetic_intensity=roofline.arithmetic_intensity(flops, moved),
        experts_touched=scalar_or_array(step.touched),
        overhead_seconds=scalar_or_array(_overhead(step, s, c)),
        allreduce_seconds=scalar_or_array(_allreduce(step, s, c)),
        regime=_regime("decode", s, _batch_regime(users)),
        constants=c.group,
        informed=c.informed,
        compute_rate_published=s.published,
    )


def _prefill(
    s: _Setup, c: efficiency.Constants, table: efficiency.Table, prompt: Any, users: Any, chunk: float | None
) -> Prefill:
    size = float(chunk) if chunk is not None else c.chunk_tokens
    steps = _prefill_steps(s, prompt, size)
    ceiling = prefill.chunked_seconds(_seconds(steps, s, None, phase="prefill"), steps.tokens)
    expected = prefill.chunked_seconds(_seconds(steps, s, c, phase="prefill"), steps.tokens, c.request_seconds)
    expected = np.where(s.published, expected, np.nan)
    first = _decode_step(s, prompt, users)
    ttft_top = prefill.time_to_first_token(ceiling, _seconds(first, s, None, phase="decode"))
    ttft = prefill.time_to_first_token(expected, _seconds(first, s, c, phase="decode"))
    low, high = efficiency.band_factors(table, _regime("prefill", s), informed=c.informed)
    flops = np.sum(np.add(np.add(steps.dense_flops, steps.expert_flops), steps.attention_flops), axis=-1)
    moved = np.sum(np.add(np.add(steps.dense_bytes, steps.expert_bytes), steps.kv_bytes), axis=-1)
    return Prefill(
        prompt=scalar_or_array(prompt),
        chunk_tokens=size,
        chunks=scalar_or_array(np.sum(steps.tokens > 0, axis=-1)),
        flops=scalar_or_array(flops),
        weight_bytes=scalar_or_array(
            np.sum(np.add(steps.dense_bytes, steps.expert_bytes) - steps.activation_bytes, axis=-1)
        ),
        bytes_moved=scalar_or_array(moved),
        arithmetic_intensity=roofline.arithmetic_intensity(flops, moved),
        seconds_ceiling=ceiling,
        seconds_expected=scalar_or_array(expected),
        band=(
            scalar_or_array(np.maximum(np.divide(expected, high), ceiling)),
            scalar_or_array(np.divide(expected, low)),
        ),
        tokens_per_second_ceiling=scalar_or_array(np.divide(prompt, ceiling)),
        tokens_per_second_expected=scalar_or_array(np.divide(prompt, expected)),
        ttft_seconds_ceiling=ttft_top,
        ttft_seconds_expected=scalar_or_array(ttft),
        ttft_band=(scalar_or_array(np.maximum(np.divide(ttft, high), ttft_top)), scalar_or_array(np.divide(ttft, low))),
        bound=_bound_name(np.greater(*(np.sum(t, axis=-1) for t in _bound_seconds(steps, s)))),
        regime=_regime("prefill", s),
        constants=c.group,
        informed=c.informed,
        compute_rate_published=s.published,
    )


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
    s: _Setup, c: efficiency.Constants | None, prompt: int, output: int, batch: int
) -> tuple[float, float]:
    steps = _prefill_steps(s, prompt, np.inf, batch)  # the whole batch's context phase at once
    fill = prefill.chunked_seconds(_seconds(steps, s, c, phase="prefill"), steps.tokens,
                                   0.0 if c is None else c.request_seconds)
    contexts = prompt + np.arange(1, max(output, 1))
    tail = _seconds(_decode_step(s, contexts, batch), s, c, phase="decode")
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
) -> BatchThroughput:
    """Output tokens per second of a static batch of ``batch`` requests of ``prompt`` + ``output`` tokens.

    The prompts are prefilled together in one step (static batching, as TensorRT-LLM's
    ``gptSessionBenchmark`` does), then ``output - 1`` decode steps follow,
    each at the batch's growing context; throughput is ``batch * output`` over the total time.

    Examples
    --------
    >>> b = batch_throughput("llama-2-7b", "a100-80gb-sxm", prompt=128, output=128, batch=64)
    >>> b.expected_tokens_per_second < b.ceiling_tokens_per_second
    True
    """
    table = table if table is not None else efficiency.bundled()
    record, device, w, e, kv = _resolve(model, gpu, weights, expert_weights, kv_cache)
    s = _setup(record, device, w, e, kv, gpus, engine, split, table)
    c = _constants(s, table)
    top = sum(_batch_seconds(s, None, prompt, output, batch))
    fill, tail = _batch_seconds(s, c, prompt, output, batch)
    tokens = batch * output
    return BatchThroughput(tokens / top, tokens / (fill + tail), tokens / (fill + tail) / gpus, fill, tail)


# --- calibration measurements ---------------------------------------------------------------------


@cache
def _case_setup(case: efficiency.Case) -> _Setup:
    record, device, w, e, kv = _resolve(case.model, case.gpu, case.weights or None, None, case.kv_cache)
    return _setup(record, device, w, e, kv, case.gpus, case.engine, case.split, _structure())


@cache
def _structure() -> efficiency.Table:
    """Table used for what the fit never changes (whether an engine multiplies in INT8)."""
    return efficiency.load(catalog._bundled("calibration/priors.toml"))


def keys(case: efficiency.Case) -> efficiency.Keys:
    """``(engine, gpu_class, format_family, fabric)`` of a measurement: the constants it informs."""
    s = _case_setup(case)
    return s.engine, s.gpu_class, s.family, s.fabric


@cache
def _case_steps(case: efficiency.Case) -> tuple[_Step, ...]:
    """The engine steps a measurement consists of; they do not depend on the fitted constants."""
    s = _case_setup(case)
    if case.metric in ("decode", "decode_aggregate"):
        return (_decode_step(s, max(case.prompt + case.output // 2, 1), case.batch),)
    if case.metric == "static_batch":
        contexts = case.prompt + np.arange(1, max(case.output, 1))
        return _prefill_steps(s, case.prompt, np.inf, case.batch), _decode_step(s, contexts, case.batch)
    chunk = _constants(s, _structure()).chunk_tokens
    return _prefill_steps(s, case.prompt, chunk), _decode_step(s, case.prompt, 1)


def predict(case: efficiency.Case, table: efficiency.Table | None = None, *, ceiling: bool = False) -> float:
    """What gpusizer predicts for a calibration measurement, in the units of ``case.value``.

    ``decode``: per-user tokens/s at the mean context of the generation; ``decode_aggregate``: all
    users; ``prefill``: prompt tokens/s; ``ttft``: prefill plus one decode step [s];
    ``static_batch``: output tokens/s per GPU of a static batch (``batch_throughput``).
    """
    s = _case_setup(case)
    c = None if ceiling else _constants(s, table if table is not None else efficiency.bundled())
    steps = _case_steps(case)
    if case.metric in ("decode", "decode_aggregate"):
        users = case.batch if case.metric == "decode_aggregate" else 1
        return float(users / _seconds(steps[0], s, c, phase="decode"))
    request = 0.0 if c is None else c.request_seconds
    fill = float(prefill.chunked_seconds(_seconds(steps[0], s, c, phase="prefill"), steps[0].tokens, request))
    tail = float(np.sum(_seconds(steps[1], s, c, phase="decode")))
    if case.metric == "prefill":
        return case.prompt / fill
    if case.metric == "ttft":
        return fill + tail
    if case.metric == "static_batch":
        return case.batch * case.output / (fill + tail) / case.gpus
    raise ValueError(f"metric {case.metric!r} is not predicted")
