r"""LoRA adapters served with a model: their memory, the engine's slots and the decode step with them.

An adapter of rank :math:`r` on a matrix of :math:`d_{in} \times d_{out}` adds :math:`A` (:math:`r \times d_{in}`)
and :math:`B` (:math:`d_{out} \times r`): :math:`r (d_{in} + d_{out})` parameters per targeted matrix per layer
(``matrix_params``) [1]_. vLLM allocates, at start-up, buffers for ``max_loras`` adapters at ``max_lora_rank`` over
every supported module of the targets, in the model's dtype, and keeps up to ``max_cpu_loras`` adapters in host
memory [2]_; a column-parallel matrix (``q``, ``k``, ``v``, ``gate``, ``up``) keeps :math:`A` whole and splits
:math:`B`'s output over the tensor-parallel ranks, a row-parallel one (``o``, ``down``) splits :math:`A`'s input
and keeps :math:`B` whole (``sharded_params``). The buffers are loaded with the weights, so the KV pool shrinks by
them.

A decode step then runs the batched multi-adapter kernels (Punica's SGMV/BGMV [3]_, S-LoRA's [4]_): each token
goes through its own adapter's :math:`A` and :math:`B` (:math:`2 r (d_{in} + d_{out})` FLOPs per matrix: tiny) and
the step reads the buffers of every adapter its batch touches (``decode.experts_touched`` with one adapter per
sequence, uniform over the adapters in use, at most ``max_loras``): the extra time is their roofline time at the
fitted bandwidth (``roofline.roofline_time``).

Deliberate omissions: LoRA on routed experts, embeddings and the LM head (``lm_head``/``embed_tokens`` targets),
MLA attention (``q_a``/``kv_a`` projections), the prefill's extra arithmetic, adapter swaps between host and GPU,
and the kernels' launches and low efficiency at LoRA shapes: the step overhead is a lower bound (vLLM PR #11267
measures -34 % output throughput with one rank-8 adapter on V0 where this predicts -0.1 %; docs/prefix-caching.md).

References
----------
.. [1] E. Hu et al., "LoRA: Low-rank adaptation of large language models," arXiv:2106.09685, 2021.
.. [2] vllm-project/vllm@01235a494f173b84814002c8382137e379371b07 vllm/lora/layers/base_linear.py
   ``create_lora_weights``: ``lora_a_stacked`` (max_loras, 1, max_lora_rank, input_size) and ``lora_b_stacked``
   (max_loras, 1, output_size, max_lora_rank) in ``lora_dtype`` per slice; vllm@0163de2b7c0f18544063d4beeb71d4069110be30
   vllm/lora/layers/column_parallel_linear.py (q/k/v and gate/up slices, output split by tensor parallelism);
   vllm@01230b40128e570a58e54e75f7e55c4d5cd9246d vllm/config/lora.py (``max_loras`` 1, ``max_lora_rank`` 16,
   ``max_cpu_loras`` defaults to ``max_loras``, ``lora_dtype`` auto: the model's dtype).
.. [3] L. Chen et al., "Punica: Multi-tenant LoRA serving," arXiv:2310.18547, 2023.
.. [4] Y. Sheng et al., "S-LoRA: Serving thousands of concurrent LoRA adapters," arXiv:2311.03285, 2023.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpusizer import (
    catalog,
    configuration,
    decode,
    efficiency,
    engines,
    memory,
    parallel,
    prefix_cache,
    roofline,
    unpack,
)
from gpusizer import precision as precisions
from gpusizer.checks import scalar_or_array
from gpusizer.numeric import maximum, minimum, number

__all__ = ["MODULES", "ROW_PARALLEL", "VLLM_RANKS", "Adapters", "LoRA", "adapt", "matrix_params", "module_shapes",
           "sharded_params"]

#: Target modules (PEFT's names without ``_proj``); ``all`` is every one (PEFT ``target_modules="all-linear"``).
MODULES = ("q", "k", "v", "o", "gate", "up", "down")

#: Ranks vLLM accepts for ``--max-lora-rank`` (``MaxLoRARanks`` of vllm/config/lora.py, the commit above). [-]
VLLM_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)

#: Row-parallel modules: their input is split over tensor-parallel ranks, the rest split their output.
ROW_PARALLEL = ("o", "down")


@dataclass(frozen=True)
class LoRA:
    """Adapters an engine serves: ``estimate(..., lora=LoRA(adapters=4, rank=16))``."""

    adapters: int = 1
    """Adapters the traffic uses, uniformly. [-]"""
    rank: int = 16
    """``max_lora_rank``: every buffer is allocated at it. [-]"""
    targets: tuple[str, ...] = MODULES
    """Targeted modules, of ``MODULES``; default all linear ones."""
    max_loras: int | None = None
    """Adapter slots on the GPU (vLLM ``--max-loras``); default ``adapters``. [-]"""
    max_cpu_loras: int | None = None
    """Adapters cached in host memory (vLLM ``--max-cpu-loras``); default ``max(adapters, max_loras)``. [-]"""


@dataclass(frozen=True)
class Adapters:
    """A configuration with LoRA adapters. Per GPU unless named; arrays broadcast."""

    adapters: int
    rank: int
    targets: tuple[str, ...]
    max_loras: int
    max_cpu_loras: int
    adapter_params: float
    """Parameters of one adapter at ``rank`` over every targeted matrix of every layer. [param]"""
    adapter_bytes: float
    """One adapter in the model's dtype (its file, give or take metadata). [B]"""
    buffer_bytes: Any
    """The engine's adapter buffers on one GPU: ``max_loras`` slots of the busiest rank. [B]"""
    host_bytes: float
    """``max_cpu_loras`` adapters in host memory. [B]"""
    kv_pool_bytes: Any
    """KV pool left once the buffers are loaded. [B]"""
    headroom_bytes: Any
    fits: Any
    """[bool]"""
    max_concurrency: Any
    """Sequences of ``context`` tokens the pools of the layout hold with the buffers loaded. [-]"""
    adapters_touched: Any
    """Expected distinct adapters a decode step of the busiest data-parallel group reads. [-]"""
    step_bytes: Any
    """Adapter bytes one decode step reads on one GPU. [B]"""
    step_flops: Any
    """Adapter FLOPs of one decode step on one GPU. [FLOP]"""
    step_seconds_ceiling: Any
    step_seconds_expected: Any
    """Time the adapters' bytes and FLOPs add to a decode step at the fitted efficiencies: a lower bound (kernel
    launches not counted). [s]"""
    tpot_seconds_expected: Any
    """Decode step with the adapters. [s]"""
    expected_tokens_per_second: Any
    """Per user with the adapters. [token/s]"""
    expected_aggregate_tokens_per_second: Any
    slowdown: Any
    """Decode step with the adapters over without. [-]"""


def matrix_params(rank: Any, d_in: Any, d_out: Any) -> Any:
    r"""Parameters of one adapter on one matrix: :math:`r (d_{in} + d_{out})` (Hu et al., arXiv:2106.09685). [param]

    >>> matrix_params(16, 4096, 14336)  # Llama 3.1 8B up_proj
    294912
    """
    return scalar_or_array(number(rank) * (number(d_in) + number(d_out)))


def sharded_params(rank: Any, d_in: Any, d_out: Any, tp: Any, row: Any) -> Any:
    r"""Parameters of one adapter slot on one matrix on one tensor-parallel rank (vLLM's layout, see the module):
    :math:`r (d_{in} + d_{out}/t)` for a column-parallel matrix, :math:`r (d_{in}/t + d_{out})` for a row-parallel
    one. [param]

    >>> sharded_params(16, 4096, 4096, 2, False), sharded_params(16, 4096, 4096, 2, True)
    (98304.0, 98304.0)
    """
    r, i, o, t = number(rank), number(d_in), number(d_out), number(tp)
    return scalar_or_array(r * (i / t + o) if row else r * (i + o / t))


def module_shapes(record: catalog.Model, targets: tuple[str, ...]) -> list[tuple[str, int, int, int]]:
    """``(module, d_in, d_out, layers)`` of every targeted module: the attention projections of the softmax-attention
    layers, the dense FFN's of the dense-FFN layers."""
    unknown = [t for t in targets if t not in MODULES]
    if unknown or not targets:
        raise ValueError(f"lora: targets must be some of {', '.join(MODULES)}, got {targets!r}")
    attention = sum(kind in ("full", "sliding", "chunked") for kind in record.layers)
    dense = sum(kind == "dense" for kind in record.ffns)
    if attention and record.mla is not None and set(targets) & {"q", "k", "v", "o"}:
        raise ValueError(f"lora: LoRA on the MLA attention of {record.id} is not modelled; target gate,up,down")
    d, q, kv = record.hidden_size, record.num_heads * record.head_dim, record.num_kv_heads * record.head_dim
    ffn = record.intermediate_size or 0
    mlp = dense * (ffn > 0)
    shapes = {"q": (d, q, attention), "k": (d, kv, attention), "v": (d, kv, attention), "o": (q, d, attention),
              "gate": (d, ffn, mlp), "up": (d, ffn, mlp), "down": (ffn, d, mlp)}
    return [(t, *shapes[t]) for t in MODULES if t in targets and shapes[t][2]]


def _check(spec: LoRA) -> tuple[int, int]:
    """``(max_loras, max_cpu_loras)`` of a checked ``spec``."""
    if not isinstance(spec, LoRA):
        raise TypeError(f"lora must be a lora.LoRA, got {type(spec).__name__}")
    for name in ("adapters", "rank"):
        value = getattr(spec, name)
        if type(value) is not int or value < (0 if name == "adapters" else 1):
            raise ValueError(f"lora: {name} must be a whole number >= {0 if name == 'adapters' else 1}, got {value!r}")
    slots = spec.adapters if spec.max_loras is None else spec.max_loras
    cpu = max(spec.adapters, slots) if spec.max_cpu_loras is None else spec.max_cpu_loras
    if type(slots) is not int or slots < 0 or type(cpu) is not int or cpu < slots:
        raise ValueError(f"lora: max_loras must be >= 0 and max_cpu_loras >= max_loras, got {slots!r}, {cpu!r}")
    return slots, cpu


def adapt(
    record: catalog.Model, device: catalog.GPU, weights: str, experts: str | None, kv: str, gpus: int, engine: Any,
    plan: parallel.Layout, table: efficiency.Table, scale_out: float | None, ctx: Any, users: Any, spec: LoRA,
    speed: Any, numbers: unpack.ModelNumbers, sizes: dict[str, Any],
) -> Adapters:
    """LoRA adapters on one configuration (``estimator.estimate``'s ``lora=``): ``speed`` its plain decode
    (``performance.Decode``), ``numbers`` its model numbers, ``sizes`` its memory numbers; the rest as
    ``performance.speed_of`` takes them."""
    slots, cpu = _check(spec)
    if engine.name == "vllm" and spec.rank not in VLLM_RANKS:
        raise ValueError(f"lora: vLLM's max_lora_rank is one of {', '.join(map(str, VLLM_RANKS))}, got {spec.rank}")
    targets = tuple(spec.targets)
    shapes = module_shapes(record, targets)
    bpe = precisions.bytes_per_element(record.activation_dtype)
    whole = float(sum(matrix_params(spec.rank, i, o) * n for _, i, o, n in shapes))
    stage = parallel.stage_fraction(record.num_layers, plan.pp)
    per_gpu = sum(sharded_params(spec.rank, i, o, plan.tp, name in ROW_PARALLEL) * n for name, i, o, n in shapes)
    slot_bytes = memory.weight_bytes(per_gpu * stage, bpe)
    buffers = scalar_or_array(slot_bytes * slots)
    non_torch = engines.non_torch_bytes(engine.runtime_bytes, engine.runtime_bytes_multi_gpu, gpus)
    pool = engines.kv_pool_bytes(sizes["capacity_bytes"], sizes["weights_bytes"] + buffers,
                                 sizes["activation_bytes"] + sizes["runtime_bytes"], rule=engine.kv_rule,
                                 fraction=sizes["memory_fraction"], non_torch=non_torch)
    per_sequence = prefix_cache.per_sequence_bytes(numbers, engine, plan, ctx)
    groups = plan.dp * plan.attention_dp
    group = parallel.sequences_per_group(users, groups)
    headroom = memory.headroom_bytes(pool, group * per_sequence)
    touched = minimum(decode.experts_touched(group, max(spec.adapters, 1), 1), slots) * (spec.adapters > 0)
    flops = 2.0 * group * per_gpu * stage * (spec.adapters > 0)
    read = touched * slot_bytes
    s = configuration.setup(record, device, weights, experts, kv, gpus, engine.name, plan, table, scale_out)
    c = configuration.constants(s, table)
    top = roofline.roofline_time(flops, read, s.attention_peak, s.bandwidth)
    extra = roofline.roofline_time(flops, read, s.attention_peak, s.bandwidth, compute_efficiency=c.compute,
                                   bandwidth_efficiency=c.bandwidth, overlap=c.overlap)
    tpot = speed.tpot_seconds_expected + extra
    return Adapters(
        adapters=spec.adapters, rank=spec.rank, targets=targets, max_loras=slots, max_cpu_loras=cpu,
        adapter_params=whole, adapter_bytes=float(memory.weight_bytes(whole, bpe)), buffer_bytes=buffers,
        host_bytes=float(memory.weight_bytes(whole, bpe)) * cpu * (spec.adapters > 0),
        kv_pool_bytes=maximum(pool, 0.0), headroom_bytes=headroom, fits=scalar_or_array(headroom >= 0),
        max_concurrency=scalar_or_array(memory.max_concurrency(pool, per_sequence) * groups),
        adapters_touched=scalar_or_array(touched), step_bytes=scalar_or_array(read), step_flops=scalar_or_array(flops),
        step_seconds_ceiling=scalar_or_array(top), step_seconds_expected=scalar_or_array(extra),
        tpot_seconds_expected=scalar_or_array(tpot),
        expected_tokens_per_second=decode.tokens_per_second(tpot),
        expected_aggregate_tokens_per_second=decode.aggregate_tokens_per_second(users, tpot),
        slowdown=scalar_or_array(tpot / speed.tpot_seconds_expected),
    )
