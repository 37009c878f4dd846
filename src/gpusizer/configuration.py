"""A configuration's hardware and layout numbers: everything about it that no efficiency constant changes.

``setup(record, device, weights, expert_weights, kv_cache, gpus, engine, split, table)`` is one
configuration as a ``Setup`` of Python numbers; ``setups`` is the same for object arrays of records
that broadcast together (``sweep``), each distinct record or pair of records worked out once and
spread over the grid by integer codes. A ``Setup`` holds the model's numbers (``unpack``), the GPU's
bandwidth and tensor peaks at the precisions (``roofline.tensor_peak``), the layout's degrees
(``parallel.Layout``) and the achieved bandwidths and latency ratios of the links its collectives
cross (``interconnect``). ``constants`` picks its efficiency group (``efficiency.resolve``).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from typing import Any

import numpy as np

from gpusizer import catalog, efficiency, interconnect, parallel, roofline, unpack
from gpusizer import precision as precisions

__all__ = ["Setup", "constants", "layout_plan", "main_fabric", "resolve", "setup", "setups"]


@dataclass(frozen=True)
class Setup:
    """Everything about a configuration that does not depend on efficiency constants."""

    model: unpack.ModelNumbers
    gpus: int
    split: Any
    """How the GPUs share the model: a layout name or ``parallel.Layout`` (an object array of them in ``setups``
    with a layout per cell)."""
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
    """Ring-step latency on it; with ``tp_row_split``, the latency of one peer copy. [s]"""
    tp_latency: Any = 1.0
    """Its base latency over the fitted latency of ``fabric``. [-]"""
    tp_custom: Any = False
    """The engine runs its one-shot/two-shot all-reduce on it."""
    custom_max_bytes: Any = 0.0
    """Largest message of the custom all-reduce. [B]"""
    tp_row_split: Any = 0.0
    """Split matrix products per all-reduce site when tensor parallelism is a row split through the main
    GPU (llama.cpp; ``interconnect.EngineCollectives.row_split_products``); 0: all-reduces. [-]"""
    tp_issue: Any = 0.0
    """Host time to issue the next peer copy of a row split. [s]"""
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
    ep_nodes: Any = 1
    """Servers an expert-parallel group spans across the scale-out network (1 within one scale-up domain). [-]"""
    pipelined_prefill: Any = False
    """The engine overlaps a prompt's chunks across pipeline stages."""
    links: Any = ""
    """Link classes the layout's collectives cross, for reports."""
    dequant_above: Any = 0.0
    """Tokens per step above which the weights are dequantised to F16 for a cuBLAS GEMM (``gpusizer.dequant``;
    ``EngineEntry.dequantize_above`` where the weights are quantised on a CUDA/ROCm GPU), else 0. [token]"""
    dequant_peak: Any = 0.0
    """Peak of that FP16 GEMM (at the engine's accumulate precision). [FLOP/s]"""
    dequant_ratio: Any = 0.0
    """F16 bytes per stored byte of the dense weights (``dequant.dequant_pass_bytes``). [-]"""


#: The CUDA compute capability in a catalogue architecture (``"Blackwell (GB202, sm_120)"``: 120).
_SM = re.compile(r"sm_(\d+)")


def _weight_only(p: precisions.Precision, integer_matmul: bool, device: catalog.GPU) -> bool:
    """Whether ``p``'s weights are dequantised in the kernel: ``Precision.weight_only``, and FP4 formats (MXFP4,
    NVFP4) on an ``integer_matmul`` engine. llama.cpp runs GGML_TYPE_MXFP4 through ``mul_mat_q`` like its
    k-quants (ggml-org/llama.cpp b75c391 ggml/src/ggml-cuda/mmq.cu: ``ggml_cuda_should_use_mmq`` lists MXFP4,
    activations quantised to q8_1), so the INT8 rate applies, except MXFP4 on sm_120 and later (GeForce and
    workstation Blackwell), which takes the native FP4 MMA branch (``use_native_mxfp4``,
    ``blackwell_mma_available``: compute capability 12.0 and up; the datacenter sm_100/sm_103 parts do not)."""
    if p.weight_only or not (integer_matmul and p.compute == "fp4"):
        return p.weight_only
    found = _SM.search(device.architecture or "")
    return not (p.name == "mxfp4" and found is not None and int(found.group(1)) >= 120)


def _peak(device: catalog.GPU, p: precisions.Precision, integer_matmul: bool,
          fp16_accumulate: bool = False) -> tuple[float, str]:
    """Peak of ``p``'s weight GEMMs on an engine's kernel path: the INT8 rate for weights an ``integer_matmul``
    engine dequantises (``_weight_only``), the FP16-accumulate rate for an ``fp16_accumulate`` engine's FP16
    weights (llama.cpp: ``ggml_cuda_op_mul_mat_cublas`` multiplies F16 weights with ``CUBLAS_COMPUTE_16F`` at the
    default precision on NVIDIA, ggml-org/llama.cpp:ggml/src/ggml-cuda/ggml-cuda.cu at commit f6d77a1), else
    ``p.compute``'s."""
    if integer_matmul and _weight_only(p, integer_matmul, device):
        return roofline.tensor_peak(device.dense, "int8")
    return roofline.tensor_peak(device.dense, p.compute, "fp16" if fp16_accumulate else "fp32")


@lru_cache(maxsize=256)
def layout_plan(split: str | parallel.Layout, gpus: int) -> parallel.Layout:
    """The layout a ``split`` (``tensor``, ``layer``, a layout name or a ``parallel.Layout``) means on ``gpus`` GPUs."""
    return parallel.layout({"tensor": "tp", "layer": "layer"}.get(split, split) if isinstance(split, str) else split,
                           gpus)


def layout_plans(split: Any, gpus: Any) -> np.ndarray:
    """``layout_plan`` of every cell: ``split`` (one split, or an object array of them) and ``gpus`` (integers)
    broadcast together, as an object array of ``parallel.Layout``."""
    splits = unpack.cell(split) if isinstance(split, str | parallel.Layout) else np.asarray(split, dtype=object)
    split_cells, count_cells = np.broadcast_arrays(splits, np.asarray(gpus, dtype=object))
    out = np.empty(split_cells.size, dtype=object)
    for i, (text, n) in enumerate(zip(split_cells.flat, count_cells.flat, strict=True)):
        out[i] = layout_plan(text, int(n))
    return out.reshape(split_cells.shape)


@lru_cache(maxsize=4096)  # records and layouts are frozen; a sweep of many layouts asks twice per GPU and layout
def _roles(device: catalog.GPU, plan: parallel.Layout, scale_out: float | None = None) -> dict[str, Any]:
    """The links of a layout's collectives: tensor parallel, expert parallel, between stages, across a replica
    (shared between callers: read only)."""
    span = plan.group * plan.pp
    tp, ep, pp = (interconnect.link_class(device, n, scale_out_bandwidth=scale_out) for n in (plan.tp, plan.ep, span))
    main = tp if plan.tp > 1 else ep if plan.ep > 1 else pp
    return {"tp": tp, "ep": ep, "pp": pp, "main": main}


def _collectives(engine: str) -> interconnect.EngineCollectives | None:
    """The collective algorithms of an engine: its era class's own, else its engine's, else None."""
    engines, name = interconnect.bundled().engines, efficiency.engine_class(engine)
    return engines.get(name if name in engines else efficiency.engine_family(name))


def main_fabric(
    device: catalog.GPU, gpus: int, split: str | parallel.Layout = "tensor", engine: str | None = None
) -> tuple[str, float]:
    """Fitted fabric and line rate per direction of the link that carries most of the layout's traffic.

    An ``engine`` whose tensor parallelism is a row split with its own base latency
    (``interconnect.EngineCollectives.row_split_fabric``) takes that fabric, on any link.
    """
    plan = layout_plan(split, gpus)
    main = _roles(device, plan)["main"]
    collectives = _collectives(engine) if engine is not None and plan.tp > 1 else None
    return (collectives and collectives.row_split_fabric) or main.fabric, main.bandwidth


def _layout_fields(
    device: catalog.GPU, plan: parallel.Layout, engine: str, table: efficiency.Table, scale_out: float | None = None
) -> dict[str, Any]:
    """``Setup``'s layout fields for one GPU type, layout and engine (``interconnect`` constants)."""
    roles = _roles(device, plan, scale_out)
    fabrics = table.fabrics
    base = fabrics[main_fabric(device, plan.gpus, plan, engine)[0]].latency_seconds

    def bus(link: interconnect.Link) -> float:
        return link.bandwidth * (link.bandwidth_fraction or fabrics[link.fabric].bandwidth_fraction)

    def ratio(link: interconnect.Link) -> float:
        return fabrics[link.fabric].latency_seconds / base

    tp, ep, pp = roles["tp"], roles["ep"], roles["pp"]
    collectives = _collectives(engine)
    custom, limit = interconnect.custom_allreduce(collectives.name if collectives else engine, tp, plan.tp)
    row_split = float(collectives.row_split_products) if collectives and plan.tp > 1 else 0.0
    used = [f"tensor {tp.name}"] * (plan.tp > 1) + [f"expert {ep.name}"] * (plan.attention_dp > 1)
    used += [f"pipeline {pp.name}"] * (plan.pp > 1)
    return dict(
        tp=plan.tp, pp=plan.pp, ep=plan.ep, groups=plan.dp * plan.attention_dp, attention_dp=plan.attention_dp,
        sequential=plan.sequential, tp_bus=bus(tp), tp_hop=tp.copy_latency if row_split else tp.hop_latency,
        tp_latency=1.0 if row_split else ratio(tp), tp_custom=custom, custom_max_bytes=limit, tp_row_split=row_split,
        tp_issue=tp.copy_issue,
        pp_bandwidth=bus(pp), pp_latency=ratio(pp), pp_hop=pp.hop_latency,
        ep_bandwidth=ep.bandwidth * (ep.alltoall_fraction or ep.bandwidth_fraction
                                     or fabrics[ep.fabric].bandwidth_fraction),
        ep_latency=ratio(ep), ep_nodes=_servers(device, plan.ep) if ep.name == "scale-out" else 1,
        pipelined_prefill=bool(collectives and collectives.pipelined_prefill),
        links=", ".join(used) or "none",
    )


def _servers(device: catalog.GPU, gpus: int) -> int:
    """Servers ``gpus`` GPUs fill: one per scale-up domain, or per ``node_gpus`` when that is larger
    (``interconnect.link_class``'s node). [-]"""
    return -(-gpus // max(device.scale_up_domain, interconnect.bundled().node_gpus))


def setup(
    record: catalog.Model,
    device: catalog.GPU,
    weights: str,
    expert_weights: str | None,
    kv_cache: str,
    gpus: int,
    engine: str,
    split: str | parallel.Layout,
    table: efficiency.Table,
    scale_out: float | None = None,
) -> Setup:
    """One configuration's numbers: ``setups`` of one record each, its fields as Python scalars."""
    numbers = unpack.model_numbers(record, weights, expert_weights, kv_cache)
    cells = unpack.cell(numbers), unpack.cell(device), np.asarray(gpus), unpack.cell(engine)
    s, _ = setups(*cells, split, table, scale_out)
    items = {f.name: getattr(s, f.name) for f in fields(s) if isinstance(getattr(s, f.name), np.ndarray | np.generic)}
    return replace(s, model=numbers, **{name: value.item() for name, value in items.items()})



def setups(
    numbers: np.ndarray, devices: np.ndarray, gpus: np.ndarray, engines: np.ndarray, split: Any,
    table: efficiency.Table, scale_out: float | None = None,
) -> tuple[Setup, efficiency.Constants]:
    """``setup`` and its constants for arrays of records that broadcast together, every field an array.

    ``numbers`` (``unpack.ModelNumbers``), ``devices`` (``GPU``) and ``engines`` (engine names) are object arrays,
    ``gpus`` an integer array; ``split`` one split for every cell (``layout_plan``) or an object array of them
    that broadcasts with ``gpus`` (a layout axis). What depends on a pair of records (a GPU's peak at a
    precision, the format family, the fabric of a GPU's layout, the efficiency group) is worked out once per
    distinct pair and spread over the broadcast shape by indexing: no loop over configurations.
    """
    models, m = unpack.unique(numbers)
    parts, g = unpack.unique(devices)
    names, e = unpack.unique(engines)
    plans, n = unpack.unique(layout_plans(split, gpus))
    formats: dict[precisions.Precision, int] = {}
    for x in models:
        formats.setdefault(x.weights, len(formats))
        formats.setdefault(x.experts, len(formats))
    engine_constants = [efficiency.resolve(table, x, "hbm", "16bit", "nvlink") for x in names]
    path = unpack.column([c.integer_matmul + 2 * c.fp16_accumulate for c in engine_constants], e)  # kernel path
    peak = np.empty((len(formats), len(parts), 4))
    family = np.empty(peak.shape, dtype=np.intp)
    families: dict[str, int] = {}
    for (i, p), (j, device), k in itertools.product(enumerate(formats), enumerate(parts), range(4)):
        peak[i, j, k], used = _peak(device, p, bool(k & 1), bool(k & 2))
        native = used == p.compute or p.compute in ("bf16", "fp16", "fp32")
        name = efficiency.format_family(p.bits, p.compute, _weight_only(p, bool(k & 1), device), native)
        family[i, j, k] = families.setdefault(name, len(families))
    fabric = np.empty((len(names), len(parts), len(plans)), dtype=np.intp)
    link = np.empty(fabric.shape[1:])
    fabrics: dict[str, int] = {}
    for (a, name), (j, device), (q, plan) in itertools.product(enumerate(names), enumerate(parts), enumerate(plans)):
        used, link[j, q] = main_fabric(device, plan.gpus, plan, name)
        fabric[a, j, q] = fabrics.setdefault(used, len(fabrics))
    layout = _layout_columns(names, parts, plans, (e, g, n), table, scale_out)
    layout.update(_dequant_columns(models, parts, engine_constants, (m, g, e)))
    classes: dict[str, int] = {}
    gpu_class = np.asarray([classes.setdefault(efficiency.gpu_class(d.memory_type), len(classes)) for d in parts])[g]
    main = [formats[x.experts if x.expert_bytes > x.dense_bytes else x.weights] for x in models]
    attention = np.asarray([[roofline.tensor_peak(d.dense, c)[0] for c in ("bf16", "fp8")] for d in parts])
    dense_peak = peak[unpack.column([formats[x.weights] for x in models], m), g, path.astype(np.intp)]
    group = family[unpack.column(main, m), g, path.astype(np.intp)]
    keys = np.broadcast_arrays(e, gpu_class, group, fabric[e, g, n])
    combos, inverse = np.unique(np.stack([k.ravel() for k in keys], axis=-1), axis=0, return_inverse=True)
    labels = list(classes), list(families), list(fabrics)
    resolved = [efficiency.resolve(table, names[a], labels[0][b], labels[1][c], labels[2][d]) for a, b, c, d in combos]
    where = inverse.reshape(keys[0].shape)
    columns: dict[str, Any] = {
        f.name: unpack.column([getattr(r, f.name) for r in resolved], where) for f in fields(efficiency.Constants)
    }
    constants = efficiency.Constants(**columns)
    arrays: dict[str, Any] = dict(  # the fields of Setup, as arrays
        model=unpack.stack(models, m),
        gpus=np.asarray(gpus),
        split=split,
        engine=unpack.column(names, e),
        bandwidth=unpack.column([float(d.memory_bandwidth) for d in parts], g),
        dense_peak=dense_peak,
        expert_peak=peak[unpack.column([formats[x.experts] for x in models], m), g, path.astype(np.intp)],
        attention_peak=attention[g, unpack.column([int(x.kv_bpe <= 1) for x in models], m)],
        link_bandwidth=link[g, n],
        gpu_class=unpack.column(list(classes), gpu_class),
        family=unpack.column(list(families), group),
        fabric=unpack.column(list(fabrics), fabric[e, g, n]),
        published=np.isfinite(dense_peak),
        **layout,
    )
    return Setup(**arrays), constants


def _dequant_columns(
    models: list[Any], parts: list[catalog.GPU], engine_constants: list[efficiency.Constants],
    codes: tuple[np.ndarray, ...],
) -> dict[str, np.ndarray]:
    """``Setup``'s dequantise-then-GEMM fields (``gpusizer.dequant``) per distinct model, GPU and engine: the
    GGUF-quantised dense weights (``Precision.covers_embeddings``) of an ``integer_matmul`` engine with
    ``dequantize_above`` on a GPU with tensor cores (not Apple's unified-memory GPUs, whose Metal kernels
    dequantise inside the GEMM; not MXFP4/NVFP4, which llama.cpp gained after PR #8075 and multiplies with
    ``mul_mat_q``)."""
    above = np.zeros((len(models), len(parts), len(engine_constants)))
    peak, ratio = np.zeros(above.shape), np.zeros(above.shape)
    for (i, x), (j, device), (k, c) in itertools.product(enumerate(models), enumerate(parts),
                                                         enumerate(engine_constants)):
        p = x.weights
        if (c.integer_matmul and c.dequantize_above > 0 and p.weight_only and p.covers_embeddings
                and efficiency.gpu_class(device.memory_type) != "unified"):
            above[i, j, k] = c.dequantize_above
            peak[i, j, k] = roofline.tensor_peak(device.dense, "fp16", "fp16" if c.fp16_accumulate else "fp32")[0]
            ratio[i, j, k] = 16.0 / p.bits
    return {"dequant_above": above[codes], "dequant_peak": peak[codes], "dequant_ratio": ratio[codes]}


def _layout_columns(
    names: list[str], parts: list[catalog.GPU], plans: list[parallel.Layout], codes: tuple[np.ndarray, ...],
    table: efficiency.Table, scale_out: float | None = None,
) -> dict[str, np.ndarray]:
    """``_layout_fields`` per distinct engine, GPU and layout, spread over the broadcast shape by ``codes``."""
    combos = itertools.product(enumerate(names), enumerate(parts), enumerate(plans))
    found = {(a, j, q): _layout_fields(device, plan, name, table, scale_out)
             for (a, name), (j, device), (q, plan) in combos}
    out = {}
    for key, first in found[0, 0, 0].items():
        grid = np.empty((len(names), len(parts), len(plans)), dtype=object)
        for index, values in found.items():
            grid[index] = values[key]
        picked = np.asarray(grid[codes], dtype=object)
        out[key] = picked if isinstance(first, str) else picked.astype(type(first))
    return out


def constants(s: Setup, table: efficiency.Table) -> efficiency.Constants:
    """The efficiency constants of a setup's group (``efficiency.resolve``): engine, GPU class, format, fabric."""
    return efficiency.resolve(table, s.engine, s.gpu_class, s.family, s.fabric)



def resolve(
    model: Any, gpu: Any, weights: str | None, expert_weights: str | None, kv_cache: str | None
) -> tuple[catalog.Model, catalog.GPU, str, str | None, str]:
    """Records and precision names of ``speed``'s arguments, checkpoint defaults filled in and names checked."""
    record, device = catalog.model(model), catalog.gpu(gpu)
    w = precisions.precision(weights if weights is not None else record.weights).name
    if expert_weights is None and weights is None:
        expert_weights = record.expert_weights
    e = precisions.precision(expert_weights).name if expert_weights else None
    kv = kv_cache if kv_cache is not None else record.activation_dtype
    precisions.kv_bytes_per_element(kv)  # validates the name
    return record, device, w, e, kv
