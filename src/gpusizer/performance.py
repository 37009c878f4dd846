"""Decode and prefill speed of one model on one GPU type: composition only, no formula of its own.

``speed(model, gpu, ...)`` unpacks the catalogue records into numbers (``architecture``,
``precision``), counts the FLOPs and bytes of each operator class of an engine step (``decode``,
``prefill``, ``roofline``), times them at the datasheet peaks (the ceiling) and at the efficiencies
of ``data/efficiency.toml`` (the expected value), and attaches the p10-p90 band of the regime.
``context``, ``concurrency`` and ``prompt`` broadcast like numpy arrays through every field.

``batch_throughput`` composes the same steps into a static batch (prefill of every prompt, then one
decode step per output token), the setting of offline benchmarks; ``predict`` maps a calibration
measurement onto these functions for ``efficiency.fit`` and the validation report.

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
from collections import Counter
from dataclasses import asdict, dataclass, fields, is_dataclass, replace
from functools import cache, lru_cache
from typing import Any, NamedTuple, cast

import numpy as np

from gpusizer import (
    architecture,
    catalog,
    datafiles,
    decode,
    efficiency,
    interconnect,
    memory,
    parallel,
    prefill,
    roofline,
)
from gpusizer import precision as precisions
from gpusizer.checks import cache_by_identity, integer_array, map_arrays, plain, scalar_or_array
from gpusizer.numeric import ceil, divide, every, maximum, minimum, number, where

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
    communication_seconds: Any
    """All collectives of the prefill, expected. [s]"""
    scaling_efficiency: Any
    """Prefill time of one GPU of this type with unlimited memory over ``gpus`` times this one. [-]"""
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
    allreduce_layers: int
    """Tensor-parallel all-reduces per forward pass: one per mixer and one per dense or MoE FFN."""
    dense_ffn_layers: int
    """Layers with a dense FFN (all-reduced, not all-to-all'd, under expert parallelism)."""
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
        replicated_bytes=parallel.weight_parts(record, weights, expert_weights, record.activation_dtype).replicated,
        num_experts=record.moe.num_experts if record.moe else 1,
        experts_per_token=record.moe.experts_per_token if record.moe else 1,
        moe_layers=sum(kind == "moe" for kind in record.ffns),
        allreduce_layers=sum(kind != "none" for kind in record.layers) + sum(kind != "none" for kind in record.ffns),
        dense_ffn_layers=sum(kind == "dense" for kind in record.ffns),
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
    tp: Any = 1
    """Tensor-parallel degree (``parallel.Layout``). [-]"""
    pp: Any = 1
    """Pipeline stages. [-]"""
    ep: Any = 1
    """Expert-parallel degree. [-]"""
    groups: Any = 1
    """Data-parallel groups sharing the concurrency: replicas x attention groups. [-]"""
    attention_dp: Any = 1
    """Data-parallel attention groups feeding one expert-parallel group. [-]"""
    sequential: Any = False
    """Stages run one after the other without micro-batches (llama.cpp layer split)."""
    tp_bus: Any = 1.0
    """Achieved bus bandwidth of the tensor-parallel link. [B/s]"""
    tp_hop: Any = 0.0
    """Ring-step latency on it. [s]"""
    tp_latency: Any = 1.0
    """Its base latency over the fitted latency of ``fabric``. [-]"""
    tp_custom: Any = False
    """The engine runs its one-shot/two-shot all-reduce on it."""
    custom_max_bytes: Any = 0.0
    """Largest message of the custom all-reduce. [B]"""
    pp_bandwidth: Any = 1.0
    """Achieved bandwidth between pipeline stages. [B/s]"""
    pp_latency: Any = 1.0
    """Base latency of a stage hop over the fitted latency of ``fabric``. [-]"""
    pp_hop: Any = 0.0
    """Extra latency of one stage hop. [s]"""
    ep_bandwidth: Any = 1.0
    """Achieved all-to-all bandwidth of the expert-parallel link. [B/s]"""
    ep_latency: Any = 1.0
    """Its base latency over the fitted latency of ``fabric``. [-]"""
    pipelined_prefill: Any = False
    """The engine overlaps a prompt's chunks across pipeline stages."""
    links: Any = ""
    """Link classes the layout's collectives cross, for reports."""


def _peak(rates: Any, p: precisions.Precision, integer_matmul: bool) -> tuple[float, str]:
    if integer_matmul and p.weight_only:
        return roofline.tensor_peak(rates, "int8")
    return roofline.tensor_peak(rates, p.compute)


@lru_cache(maxsize=256)
def _plan(split: str, gpus: int) -> parallel.Layout:
    """The layout a ``split`` (``tensor``, ``layer`` or a layout name) means on ``gpus`` GPUs."""
    return parallel.layout({"tensor": "tp", "layer": "layer"}.get(split, split), gpus)


def _roles(device: catalog.GPU, plan: parallel.Layout, scale_out: float | None = None) -> dict[str, Any]:
    """The links of a layout's collectives: tensor parallel, expert parallel, between stages, across a replica."""
    span = plan.group * plan.pp
    tp, ep, pp = (interconnect.link_class(device, n, scale_out_bandwidth=scale_out) for n in (plan.tp, plan.ep, span))
    main = tp if plan.tp > 1 else ep if plan.ep > 1 else pp
    return {"tp": tp, "ep": ep, "pp": pp, "main": main}


def _fabric(device: catalog.GPU, gpus: int, split: str = "tensor") -> tuple[str, float]:
    """Fitted fabric and line rate per direction of the link that carries most of the layout's traffic."""
    main = _roles(device, _plan(split, gpus))["main"]
    return main.fabric, main.bandwidth


def _layout_fields(
    device: catalog.GPU, gpus: int, engine: str, split: str, table: efficiency.Table, scale_out: float | None = None
) -> dict[str, Any]:
    """``_Setup``'s layout fields for one GPU type, GPU count and engine (``interconnect`` constants)."""
    plan = _plan(split, gpus)
    roles = _roles(device, plan, scale_out)
    fabrics = table.fabrics

    def bus(link: interconnect.Link) -> float:
        return link.bandwidth * (link.bandwidth_fraction or fabrics[link.fabric].bandwidth_fraction)

    def ratio(link: interconnect.Link) -> float:
        return fabrics[link.fabric].latency_seconds / fabrics[roles["main"].fabric].latency_seconds

    tp, ep, pp = roles["tp"], roles["ep"], roles["pp"]
    custom, limit = interconnect.custom_allreduce(efficiency.engine_class(engine), tp, plan.tp)
    collectives = interconnect.bundled().engines.get(efficiency.engine_class(engine))
    used = [f"tensor {tp.name}"] * (plan.tp > 1) + [f"expert {ep.name}"] * (plan.attention_dp > 1)
    used += [f"pipeline {pp.name}"] * (plan.pp > 1)
    return dict(
        tp=plan.tp, pp=plan.pp, ep=plan.ep, groups=plan.dp * plan.attention_dp, attention_dp=plan.attention_dp,
        sequential=plan.sequential, tp_bus=bus(tp), tp_hop=tp.hop_latency, tp_latency=ratio(tp), tp_custom=custom,
        custom_max_bytes=limit, pp_bandwidth=bus(pp), pp_latency=ratio(pp), pp_hop=pp.hop_latency,
        ep_bandwidth=ep.bandwidth * (ep.alltoall_fraction or ep.bandwidth_fraction
                                     or fabrics[ep.fabric].bandwidth_fraction),
        ep_latency=ratio(ep), pipelined_prefill=bool(collectives and collectives.pipelined_prefill),
        links=", ".join(used) or "none",
    )


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
    scale_out: float | None = None,
) -> _Setup:
    """One configuration's numbers: ``_setups`` of one record each, its fields as Python scalars."""
    numbers = _model(record, weights, expert_weights, kv_cache)
    s, _ = _setups(_cell(numbers), _cell(device), np.asarray(gpus), _cell(engine), split, table, scale_out)
    items = {f.name: getattr(s, f.name) for f in fields(s) if isinstance(getattr(s, f.name), np.ndarray | np.generic)}
    return replace(s, model=numbers, **{name: value.item() for name, value in items.items()})


def _cell(value: Any) -> np.ndarray:
    """A 0-d object array holding ``value`` (``np.asarray`` would unpack tuples and records)."""
    out = np.empty((), dtype=object)
    out[()] = value
    return out


def _unique(values: np.ndarray) -> tuple[list[Any], np.ndarray]:
    """Distinct entries of an object array in first-seen order, and each entry's index into them."""
    seen: dict[Any, int] = {}
    codes = [seen.setdefault(value, len(seen)) for value in values.flat]
    return list(seen), np.asarray(codes, dtype=np.intp).reshape(values.shape)


def _column(values: list[Any], codes: np.ndarray) -> np.ndarray:
    """``values[codes]``: one value per distinct record spread over the records' array shape."""
    array = np.asarray(values) if isinstance(values[0], int | float | np.number) else _objects(values)
    return array[codes]


def _objects(values: list[Any]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):  # element by element: numpy would unpack tuples
        out[i] = value
    return out


def _stack(records: list[Any], codes: np.ndarray) -> Any:
    """One record of arrays from records of numbers (``_Model``, ``KvLayout``, estimator's footprint):
    every field becomes ``values[codes]``. Variable-length groups (``windows``, ``KvLayout.windowed``:
    pairs of window and count) are padded with ``(1, 0)``, a group that counts for nothing."""
    first = records[0]
    names = list(cast(Any, first)._fields) if isinstance(first, tuple) else [f.name for f in fields(first)]
    out = {}
    for name in names:
        values = [getattr(record, name) for record in records]
        if hasattr(values[0], "_fields") or is_dataclass(values[0]):
            out[name] = _stack(values, codes)
        elif isinstance(values[0], tuple) and all(isinstance(v, tuple) and all(isinstance(p, tuple) for p in v)
                                                  for v in values):
            width = max(len(v) for v in values)
            padded = [v + ((1, 0),) * (width - len(v)) for v in values]
            out[name] = tuple(
                (_column([v[k][0] for v in padded], codes), _column([v[k][1] for v in padded], codes))
                for k in range(width)
            )
        elif isinstance(values[0], tuple):
            out[name] = tuple(_column(list(group), codes) for group in zip(*values, strict=True))
        else:
            out[name] = _column(values, codes)
    return type(first)(**out)


def _setups(
    numbers: np.ndarray, devices: np.ndarray, gpus: np.ndarray, engines: np.ndarray, split: str,
    table: efficiency.Table, scale_out: float | None = None,
) -> tuple[_Setup, efficiency.Constants]:
    """``_setup`` and its constants for arrays of records that broadcast together, every field an array.

    ``numbers`` (``_Model``), ``devices`` (``GPU``) and ``engines`` (engine names) are object arrays,
    ``gpus`` an integer array. What depends on a pair of records (a GPU's peak at a precision, the
    format family, the fabric, the efficiency group) is worked out once per distinct pair and spread
    over the broadcast shape by indexing: no loop over configurations.
    """
    models, m = _unique(numbers)
    parts, g = _unique(devices)
    names, e = _unique(engines)
    counts, n = _unique(np.asarray(gpus).astype(object))
    formats: dict[precisions.Precision, int] = {}
    for x in models:
        formats.setdefault(x.weights, len(formats))
        formats.setdefault(x.experts, len(formats))
    integer = _column([efficiency.resolve(table, x, "hbm", "16bit", "nvlink").integer_matmul for x in names], e)
    peak = np.empty((len(formats), len(parts), 2))
    family = np.empty(peak.shape, dtype=np.intp)
    families: dict[str, int] = {}
    for (i, p), (j, device), k in itertools.product(enumerate(formats), enumerate(parts), (0, 1)):
        peak[i, j, k], used = _peak(device.dense, p, bool(k))
        native = used == p.compute or p.compute in ("bf16", "fp16", "fp32")
        name = efficiency.format_family(p.bits, p.compute, p.weight_only, native)
        family[i, j, k] = families.setdefault(name, len(families))
    fabric = np.empty((len(parts), len(counts)), dtype=np.intp)
    link = np.empty(fabric.shape)
    fabrics: dict[str, int] = {}
    for (j, device), (q, count) in itertools.product(enumerate(parts), enumerate(counts)):
        name, link[j, q] = _fabric(device, int(count), split)
        fabric[j, q] = fabrics.setdefault(name, len(fabrics))
    layout = _layout_columns(names, parts, counts, (e, g, n), split, table, scale_out)
    classes: dict[str, int] = {}
    gpu_class = np.asarray([classes.setdefault(efficiency.gpu_class(d.memory_type), len(classes)) for d in parts])[g]
    main = [formats[x.experts if x.expert_bytes > x.dense_bytes else x.weights] for x in models]
    attention = np.asarray([[roofline.tensor_peak(d.dense, c)[0] for c in ("bf16", "fp8")] for d in parts])
    dense_peak = peak[_column([formats[x.weights] for x in models], m), g, integer.astype(np.intp)]
    group = family[_column(main, m), g, integer.astype(np.intp)]
    keys = np.broadcast_arrays(e, gpu_class, group, fabric[g, n])
    combos, inverse = np.unique(np.stack([k.ravel() for k in keys], axis=-1), axis=0, return_inverse=True)
    labels = list(classes), list(families), list(fabrics)
    resolved = [efficiency.resolve(table, names[a], labels[0][b], labels[1][c], labels[2][d]) for a, b, c, d in combos]
    where = inverse.reshape(keys[0].shape)
    columns: dict[str, Any] = {
        f.name: _column([getattr(r, f.name) for r in resolved], where) for f in fields(efficiency.Constants)
    }
    constants = efficiency.Constants(**columns)
    arrays: dict[str, Any] = dict(  # the fields of _Setup, as arrays
        model=_stack(models, m),
        gpus=np.asarray(gpus),
        split=split,
        engine=_column(names, e),
        bandwidth=_column([float(d.memory_bandwidth) for d in parts], g),
        dense_peak=dense_peak,
        expert_peak=peak[_column([formats[x.experts] for x in models], m), g, integer.astype(np.intp)],
        attention_peak=attention[g, _column([int(x.kv_bpe <= 1) for x in models], m)],
        link_bandwidth=link[g, n],
        gpu_class=_column(list(classes), gpu_class),
        family=_column(list(families), group),
        fabric=_column(list(fabrics), fabric[g, n]),
        published=np.isfinite(dense_peak),
        **layout,
    )
    return _Setup(**arrays), constants


def _layout_columns(
    names: list[str], parts: list[catalog.GPU], counts: list[Any], codes: tuple[np.ndarray, ...], split: str,
    table: efficiency.Table, scale_out: float | None = None,
) -> dict[str, np.ndarray]:
    """``_layout_fields`` per distinct engine, GPU and count, spread over the broadcast shape by ``codes``."""
    combos = itertools.product(enumerate(names), enumerate(parts), enumerate(counts))
    found = {(a, j, q): _layout_fields(device, int(count), name, split, table, scale_out)
             for (a, name), (j, device), (q, count) in combos}
    out = {}
    for key, first in found[0, 0, 0].items():
        grid = np.empty((len(names), len(parts), len(counts)), dtype=object)
        for index, values in found.items():
            grid[index] = values[key]
        picked = np.asarray(grid[codes], dtype=object)
        out[key] = picked if isinstance(first, str) else picked.astype(type(first))
    return out


# --- operator counts of one engine step -----------------------------------------------------------


class _Step(NamedTuple):
    """FLOPs and bytes of one forward pass on one GPU, by operator class (arrays)."""

    tokens: Any
    dense_flops: Any
    dense_bytes: Any
    expert_flops: Any
    expert_bytes: Any
    attention_flops: Any
    kv_bytes: Any
    activation_bytes: Any
    allreduce_bytes: Any
    """One tensor-parallel all-reduce, and what a pipeline stage hands to the next. [B]"""
    alltoall_bytes: Any
    """What the busiest GPU moves in one MoE dispatch (or combine), its own share excluded. [B]"""
    touched: Any


def _shards(s: _Setup) -> Any:
    return s.tp


def _step(
    s: _Setup, new: Any, before: Any, sequences: Any, *, head: Any, dims: tuple[int, int], routed: Any = None
) -> _Step:
    """One pass through every layer in which ``sequences`` sequences of one data-parallel group each add
    ``new`` tokens after ``before`` cached ones; ``routed`` tokens (default: those of every attention
    group of the expert-parallel group) reach each MoE layer."""
    m, tp, ep = s.model, s.tp, s.ep
    tokens = sequences * new
    routed = tokens * s.attention_dp if routed is None else routed
    pairs = sum(layers * prefill.attention_pairs(new, before, window) for window, layers in m.windows)
    attention = roofline.attention_flops(sequences * pairs, m.heads, *dims)
    attention = attention + prefill.recurrent_flops(tokens, m.state_elements)
    cache_read = memory.sequence_cache_bytes(before + new, m.layout, m.kv_bpe, m.act_bpe, tensor_parallel=tp)
    touched = decode.experts_touched(routed, m.num_experts, m.experts_per_token) * (m.moe_layers > 0)
    dense = memory.shard_bytes(m.dense_bytes + m.head_bytes * head, m.replicated_bytes, tp)
    held = ceil(m.num_experts / ep)  # whole experts on the busiest expert-parallel rank
    several = ep > 1
    share = where(several, held / m.num_experts, 1.0 / tp)
    experts = decode.streamed_weight_bytes(routed, 0.0, m.expert_bytes, m.num_experts, m.experts_per_token) * share
    moved = decode.activation_bytes(tokens, m.layers, m.hidden, m.ffn_width, m.vocab, m.act_bpe) / tp
    spread = routed * m.experts_per_token / tp
    load = spread if several is False else where(several, parallel.max_rank_load(routed, m.experts_per_token, ep, held),
                                                 spread)  # one configuration without expert parallelism: as spread
    sent = maximum(tokens * m.experts_per_token / tp, load)
    exchange = sent * m.hidden * m.act_bpe * (ep - 1.0) / ep
    active = tokens > 0
    return _Step(
        tokens=tokens,
        dense_flops=(roofline.gemm_flops(tokens, m.dense_params) + roofline.gemm_flops(sequences * head, m.head_params))
        / tp,
        dense_bytes=where(active, dense + moved, 0.0),
        expert_flops=2.0 * load * (m.active_expert_params / m.experts_per_token),
        expert_bytes=where(active, experts, 0.0),
        attention_flops=attention / tp,
        kv_bytes=where(active, sequences * cache_read, 0.0),
        activation_bytes=where(active, moved, 0.0),
        allreduce_bytes=tokens * m.hidden * m.act_bpe,
        alltoall_bytes=where(s.attention_dp > 1, exchange, 0.0),
        touched=touched,
    )


def _micro_batches(s: _Setup, concurrency: Any) -> tuple[Any, Any, Any]:
    """Sequences of the busiest data-parallel group's larger and smaller micro-batches, and the share of
    its micro-batches that are the larger (one micro-batch without pipeline stages)."""
    group = parallel.sequences_per_group(concurrency, s.groups)
    count = parallel.micro_batches(group, s.pp, s.sequential)
    small = group // count
    extra = group - small * count
    return small + (extra > 0), small, where(extra > 0, extra / count, 1.0)


class _DecodeSteps(NamedTuple):
    """The passes of the busiest group's larger and smaller micro-batches (``small`` None when every
    micro-batch is the larger), and the share of its micro-batches that are the larger."""

    large: _Step
    small: _Step | None
    share: Any


def _decode_steps(s: _Setup, context: Any, concurrency: Any) -> _DecodeSteps:
    large, small, share = _micro_batches(s, concurrency)
    before = context - 1
    first = _step(s, 1, before, large, head=1, dims=s.model.decode_dims)
    if every(share == 1.0):
        return _DecodeSteps(first, None, share)
    return _DecodeSteps(first, _step(s, 1, before, small, head=1, dims=s.model.decode_dims), share)


def _decode_step(s: _Setup, context: Any, concurrency: Any) -> _Step:
    """The pass of the busiest group's larger micro-batch."""
    return _decode_steps(s, context, concurrency).large


def _decode_seconds(
    s: _Setup,
    c: efficiency.Constants | None,
    context: Any,
    concurrency: Any,
    steps: _DecodeSteps | None = None,
    overhead: Any = None,
) -> Any:
    """Time per output token. With pipeline stages each stage works through every micro-batch in turn,
    so a round (one token for every sequence) lasts the mean pass of the micro-batches in flight.
    ``steps`` (``_decode_steps(s, context, concurrency)``) and ``overhead`` (``_overhead`` of
    ``steps.large``): when the caller has them."""
    large, small, share = steps if steps is not None else _decode_steps(s, context, concurrency)
    seconds = _seconds(large, s, c, phase="decode", overhead=overhead)
    if small is None:
        return seconds
    rest = _seconds(small, s, c, phase="decode")
    return share * seconds + (1.0 - share) * rest


_ONE_GPU: dict[str, Any] = dict(tp=1, pp=1, ep=1, groups=1, attention_dp=1, sequential=False)


def _single(s: _Setup) -> _Setup:
    """The same configuration on one GPU with unlimited memory: the reference of scaling efficiency."""
    return _single_of_one(s) if type(s.tp) is int else replace(s, **_ONE_GPU)


@cache_by_identity  # one configuration's reference, kept with it: ``replace`` of a setup costs about 10 us
def _single_of_one(s: _Setup) -> _Setup:
    return replace(s, **_ONE_GPU)


def _is_single(s: _Setup) -> bool:
    """Whether ``s`` is its own ``_single`` reference (a scalar setup on one GPU), so need not be rerun."""
    return type(s.tp) is int and s.tp == s.pp == s.ep == s.groups == s.attention_dp == 1 and s.sequential is False


def _prefill_steps(s: _Setup, prompt: Any, chunk: float, prompts: Any = 1) -> _Step:
    sizes: Any
    before: Any
    if type(prompt) is int and prompt <= chunk:  # one prompt of one chunk: no chunk axis to lay out
        sizes, before = float(prompt), 0.0
    else:
        sizes, before = prefill.chunk_tokens(prompt, chunk)
    last = (sizes > 0) & (before + sizes >= _along_chunks(prompt))
    asked = _along_chunks(prompts)
    group = parallel.sequences_per_group(asked, s.groups)
    replica = parallel.sequences_per_group(asked, s.groups // s.attention_dp)
    return _step(s, sizes, before, group, head=last, dims=s.model.prefill_dims, routed=sizes * replica)


def _prefill_seconds(
    steps: _Step,
    s: _Setup,
    c: efficiency.Constants | None,
    layout: _Setup,
    request: Any = 0.0,
    overhead: Any = None,
) -> Any:
    """Prefill time from its chunk steps: one after the other, or flowing through the pipeline stages when
    the engine overlaps them (``layout``: the setup without the chunk axis; ``overhead``: ``_overhead``
    of the steps when the caller has it)."""
    seconds = _seconds(steps, s, c, phase="prefill", overhead=overhead)
    times = where(steps.tokens > 0, seconds, 0.0)
    overlap = layout.pipelined_prefill & (layout.pp > 1)
    chunked = prefill.chunked_seconds(times, steps.tokens, request)
    if overlap is False:  # one configuration that does not overlap: no pipelined schedule to work out
        return chunked
    return scalar_or_array(where(overlap, parallel.pipelined_seconds(times, layout.pp) + request, chunked))


def _seconds(step: _Step, s: _Setup, c: efficiency.Constants | None, *, phase: str, overhead: Any = None) -> Any:
    """Step time at the ceiling (``c`` None) or expected; phase ``decode`` or ``prefill``; ``overhead``:
    ``_overhead`` of the step when the caller has it."""
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
    return decode.step_seconds(operators, _overhead(step, s, c) if overhead is None else overhead)


def _allreduce(step: _Step, s: _Setup, c: efficiency.Constants) -> Any:
    """One tensor-parallel all-reduce of the step, by the algorithm the engine runs on the link."""
    if _is_single(s):  # one GPU: nothing to reduce (every term below is 0)
        return 0.0
    return interconnect.engine_allreduce_seconds(step.allreduce_bytes, s.tp, s.tp_bus, c.latency_seconds * s.tp_latency,
                                                 s.tp_hop, custom=s.tp_custom, custom_max_bytes=s.custom_max_bytes)


def _communication(step: _Step, s: _Setup, c: efficiency.Constants, allreduce: Any = None) -> Any:
    """All collectives of a pass: all-reduces per mixer and FFN (the MoE FFN's only when every GPU sees
    every token), a dispatch and a combine per MoE layer under data-parallel attention, and a hop per
    stage boundary (``allreduce``: ``_allreduce`` of the step when the caller has it)."""
    if _is_single(s):  # one GPU: no collective (every term below is 0)
        return 0.0
    m = s.model
    spread = s.attention_dp > 1
    allreduces = where(spread, m.allreduce_layers - m.moe_layers, m.allreduce_layers)
    alpha = c.latency_seconds
    exchange = interconnect.alltoall_seconds(step.alltoall_bytes, s.ep, s.ep_bandwidth, alpha * s.ep_latency)
    hop = interconnect.p2p_seconds(step.allreduce_bytes, s.pp_bandwidth, c.latency_seconds * s.pp_latency + s.pp_hop)
    allreduce = _allreduce(step, s, c) if allreduce is None else allreduce
    total = allreduces * allreduce + where(spread, 2 * m.moe_layers, 0) * exchange
    total = total + (s.pp - 1) * hop
    return where(step.tokens > 0, total, 0.0)


def _overhead(step: _Step, s: _Setup, c: efficiency.Constants, communication: Any = None) -> Any:
    """Fixed costs and collectives of a pass (``communication``: ``_communication`` when the caller has it)."""
    communication = _communication(step, s, c) if communication is None else communication
    fixed = decode.overhead_seconds(s.model.layers, c.layer_seconds, c.step_seconds,
                                    moe_layers=s.model.moe_layers, moe_layer_seconds=c.moe_layer_seconds)
    return where(step.tokens > 0, fixed + communication, 0.0)


def _bound_seconds(step: _Step, s: _Setup) -> tuple[Any, Any]:
    """Arithmetic and memory time of a step at the datasheet peaks."""
    compute = (divide(step.dense_flops, s.dense_peak) + divide(step.expert_flops, s.expert_peak)
               + divide(step.attention_flops, s.attention_peak))
    memory_ = (step.dense_bytes + step.expert_bytes + step.kv_bytes) / s.bandwidth
    return compute, memory_


def _constants(s: _Setup, table: efficiency.Table) -> efficiency.Constants:
    return efficiency.resolve(table, s.engine, s.gpu_class, s.family, s.fabric)


def _parallelism(plan: parallel.Layout) -> str:
    """The regime name of a multi-GPU layout (bands fall back to the coarser regime where unmeasured)."""
    if plan.sequential:
        return "layer split"
    if plan.ep > 1:
        return "expert parallel"
    if plan.pp > 1:
        return "pipeline parallel"
    return "tensor parallel" if plan.tp > 1 else "data parallel"


def _regime(phase: str, s: _Setup, batch: str | None = None) -> str:
    parts = [phase] + ([batch] if batch else [])
    if s.gpus > 1:
        parts.append(_parallelism(_plan(s.split, int(s.gpus))))
    return ", ".join(parts)


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
    plan = _plan(split, count) if layout is None else parallel.layout(layout, count)
    ctx = number(integer_array(context, "context", minimum=1))
    users = number(integer_array(concurrency, "concurrency", minimum=1))
    asked = None if prompt is None else number(integer_array(prompt, "prompt", minimum=1))
    if chunk is not None and not chunk > 0:
        raise ValueError(f"chunk must be > 0 tokens, got {chunk!r}")
    record, device, w, e, kv = _resolve(model, gpu, weights, expert_weights, kv_cache)
    parallel.check(plan, record, heads=False)
    return _speed(record, device, w, e, kv, count, engine, plan, table, scale_out, ctx, users, asked, chunk)


def _speed(
    record: catalog.Model, device: catalog.GPU, weights: str, expert_weights: str | None, kv_cache: str, gpus: int,
    engine: str, plan: parallel.Layout, table: efficiency.Table, scale_out: float | None, context: Any,
    concurrency: Any, prompt: Any, chunk: float | None,
) -> Speed:
    """``speed`` of arguments already checked and resolved (``estimate`` has them); ``prompt`` None: ``context``."""
    s, c = _configured(record, device, weights, expert_weights, kv_cache, gpus, engine, plan.name, table, scale_out)
    d = _decode(s, c, table, context, concurrency)
    if prompt is None:  # the prompt is the context: its first decode step is the step above
        return Speed(d, _prefill(s, c, table, context, concurrency, chunk, (d.tpot_seconds_ceiling,
                                                                          d.tpot_seconds_expected)))
    return Speed(d, _prefill(s, c, table, prompt, concurrency, chunk))


@cache_by_identity
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
) -> tuple[_Setup, efficiency.Constants]:
    """``_setup`` and its constants, cached per configuration of records (records and table by identity)."""
    s = _setup(record, device, weights, expert_weights, kv_cache, gpus, engine, split, table, scale_out)
    return s, _constants(s, table)


def _decode(s: _Setup, c: efficiency.Constants, table: efficiency.Table, ctx: Any, users: Any) -> Decode:
    bands = tuple(_bands(table, "decode", s, c, batch) for batch in ("batch 1", "batch > 1"))
    return Decode(
        **_decode_numbers(s, c, bands, ctx, users),
        regime=_regime("decode", s, _batch_regime(users)),
        constants=c.group,
        informed=c.informed,
        compute_rate_published=s.published,
        layout=_plan(s.split, int(s.gpus)).name,
        links=s.links,
    )


def _bands(table: efficiency.Table, phase: str, s: _Setup, c: efficiency.Constants, batch: str | None = None) -> Any:
    """``(low, high)`` band factors of a phase; arrays where ``s.gpus`` and ``c.informed`` are (``_setups``)."""
    if not isinstance(c.informed, np.ndarray):
        return efficiency.band_factors(table, _regime(phase, s, batch), informed=c.informed)
    low = high = np.ones(np.broadcast_shapes(np.shape(s.gpus), c.informed.shape))
    for count, informed in itertools.product(np.unique(s.gpus), (False, True)):
        pick = (s.gpus == count) & (c.informed == informed)
        factors = efficiency.band_factors(table, _regime(phase, replace(s, gpus=int(count)), batch), informed=informed)
        low, high = np.where(pick, factors[0], low), np.where(pick, factors[1], high)
    return low, high


def _decode_numbers(s: _Setup, c: efficiency.Constants, bands: Any, ctx: Any, users: Any) -> dict[str, Any]:
    """The numeric fields of ``Decode``. ``s`` and ``c`` may hold arrays (``_setups``); ``bands`` are the
    ``(low, high)`` factors at batch 1 and at batch > 1."""
    single, batched = bands
    steps = _decode_steps(s, ctx, users)
    step = steps.large
    allreduce = _allreduce(step, s, c)
    communication = _communication(step, s, c, allreduce)
    overhead = _overhead(step, s, c, communication)
    ceiling = _decode_seconds(s, None, ctx, users, steps)
    expected = _decode_seconds(s, c, ctx, users, steps, overhead)
    reference = expected if _is_single(s) else _decode_seconds(_single(s), c, ctx, users)
    one = users == 1
    low, high = where(one, single[0], batched[0]), where(one, single[1], batched[1])
    rate, top = decode.tokens_per_second(expected), decode.tokens_per_second(ceiling)
    weights = step.dense_bytes + step.expert_bytes - step.activation_bytes
    flops = step.dense_flops + step.expert_flops + step.attention_flops
    moved = step.dense_bytes + step.expert_bytes + step.kv_bytes
    compute, memory_ = _bound_seconds(step, s)
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
    s: _Setup,
    c: efficiency.Constants,
    table: efficiency.Table,
    prompt: Any,
    users: Any,
    chunk: float | None,
    first: tuple[Any, Any] | None = None,
) -> Prefill:
    return Prefill(
        **_prefill_numbers(s, c, _bands(table, "prefill", s, c), prompt, users, chunk, first),
        regime=_regime("prefill", s),
        constants=c.group,
        informed=c.informed,
        compute_rate_published=s.published,
    )


def _along_chunks(value: Any) -> Any:
    """``value`` with a trailing axis on every array, to broadcast against ``prefill.chunk_tokens``' chunks."""
    return map_arrays(lambda array: array[..., None], value)


def _over_chunks(value: Any) -> Any:
    """Sum over the trailing chunk axis of ``prefill.chunk_tokens``; a scalar is a prompt of one chunk."""
    return scalar_or_array(value.sum(axis=-1)) if type(value) is np.ndarray else value


def _prefill_numbers(
    s: _Setup,
    c: efficiency.Constants,
    bands: Any,
    prompt: Any,
    users: Any,
    chunk: float | None,
    first: tuple[Any, Any] | None = None,
) -> dict[str, Any]:
    """The numeric fields of ``Prefill``. ``s`` and ``c`` may hold arrays (``_setups``); ``first`` is the
    ceiling and expected time of the first decode step when the caller has them (``prompt == context``)."""
    size = float(chunk) if chunk is not None else c.chunk_tokens
    arrays = isinstance(s.dense_peak, np.ndarray)
    sx, cx = (_along_chunks(s), _along_chunks(c)) if arrays else (s, c)  # chunks lie along a trailing axis
    steps = _prefill_steps(sx, prompt, size)
    ceiling = _prefill_seconds(steps, sx, None, s)
    communication = _communication(steps, sx, cx)
    expected = _prefill_seconds(steps, sx, cx, s, c.request_seconds, _overhead(steps, sx, cx, communication))
    alone = expected if _is_single(s) else _prefill_seconds(
        _prefill_steps(_single(sx), prompt, size), _single(sx), cx, _single(s), c.request_seconds
    )
    expected = where(s.published, expected, np.nan)
    if first is None:
        first = _decode_seconds(s, None, prompt, users), _decode_seconds(s, c, prompt, users)
    ttft_top = prefill.time_to_first_token(ceiling, first[0])
    ttft = prefill.time_to_first_token(expected, first[1])
    low, high = bands
    flops = _over_chunks(steps.dense_flops + steps.expert_flops + steps.attention_flops)
    moved = _over_chunks(steps.dense_bytes + steps.expert_bytes + steps.kv_bytes)
    compute, memory_ = (_over_chunks(t) for t in _bound_seconds(steps, sx))
    return dict(
        prompt=scalar_or_array(prompt),
        chunk_tokens=size,
        chunks=_over_chunks(1 * (steps.tokens > 0)),
        flops=flops,
        weight_bytes=_over_chunks(steps.dense_bytes + steps.expert_bytes - steps.activation_bytes),
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
        bound=_bound_name(compute > memory_),
        communication_seconds=_over_chunks(communication),
        scaling_efficiency=scalar_or_array(parallel.scaling_efficiency(alone, expected, s.gpus)),
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
    fill = _prefill_seconds(steps, s, c, s, 0.0 if c is None else c.request_seconds)
    contexts = prompt + np.arange(1, max(output, 1))
    tail = _decode_seconds(s, c, contexts, batch)
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
    record, device, w, e, kv = _resolve(model, gpu, weights, expert_weights, kv_cache)
    plan = _plan(split, gpus) if layout is None else parallel.layout(layout, gpus)
    parallel.check(plan, record, heads=False)
    s = _setup(record, device, w, e, kv, gpus, engine, plan.name, table)
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
    return efficiency.load(datafiles.bundled("calibration/priors.toml"))


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
    fill = float(_prefill_seconds(steps[0], s, c, s, request))
    tail = float(np.sum(_seconds(steps[1], s, c, phase="decode")))
    if case.metric == "prefill":
        return case.prompt / fill
    if case.metric == "ttft":
        return fill + tail
    if case.metric == "static_batch":
        return case.batch * case.output / (fill + tail) / case.gpus
    raise ValueError(f"metric {case.metric!r} is not predicted")
