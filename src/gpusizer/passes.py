"""Engine passes of one configuration: the steps of a decode round and of a chunked prefill, and their times.

``engine_step`` counts the FLOPs and bytes of one forward pass by operator class from a
``configuration.Setup`` with the formulas of ``gpusizer.step``; ``step_seconds`` times them on the
roofline (``roofline.roofline_time``) at the datasheet peaks or at fitted efficiencies
(``efficiency.Constants``), with fixed costs (``decode.overhead_seconds``) and collectives
(``interconnect``). ``decode_seconds`` and ``prefill_seconds`` compose passes into a round of
micro-batches and a prompt of chunks. Composition only: every formula is a public function elsewhere.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np

from gpusizer import configuration, decode, dequant, efficiency, interconnect, parallel, prefill, roofline
from gpusizer import step as formulas
from gpusizer.checks import map_arrays, scalar_or_array
from gpusizer.numeric import divide, every, where


class Step(NamedTuple):
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
    dequant_bytes: Any = 0.0
    """Traffic of dequantising the dense weights to F16 before a cuBLAS GEMM (``dequant.dequant_pass_bytes``). [B]"""


def engine_step(
    s: configuration.Setup, new: Any, before: Any, sequences: Any, *, head: Any, dims: tuple[int, int],
    routed: Any = None,
) -> Step:
    """One pass through every layer in which ``sequences`` sequences of one data-parallel group each add
    ``new`` tokens after ``before`` cached ones; ``routed`` tokens (default: those of every attention
    group of the expert-parallel group) reach each MoE layer. The formulas are ``gpusizer.step``'s."""
    m, tp, ep = s.model, s.tp, s.ep
    tokens = sequences * new
    routed = tokens * s.attention_dp if routed is None else routed
    k = m.experts_per_token
    dense = formulas.dense_weight_bytes(m.dense_bytes, m.streamed_head_bytes, head, m.replicated_bytes, tp)
    held = formulas.experts_held(m.num_experts, ep)
    share = formulas.expert_share(m.num_experts, ep, tp)
    experts = formulas.expert_weight_bytes(routed, m.expert_bytes, m.num_experts, k, share)
    moved = formulas.activation_bytes(tokens, m.num_layers, m.hidden, m.ffn_width, m.vocab, m.act_bpe, tp)
    load = formulas.busiest_rank_assignments(routed, k, ep, tp, held)
    active = tokens > 0
    cast = dequant.dequantised(tokens, s.dequant_above)  # the dequantise-then-GEMM path
    return Step(
        tokens=tokens,
        dense_flops=formulas.dense_flops(tokens, sequences * head, m.dense_params, m.head_params, tp),
        dense_bytes=where(active, where(cast, dequant.gemm_weight_bytes(dense, s.dequant_ratio), dense) + moved, 0.0),
        expert_flops=formulas.expert_flops(load, m.active_expert_params, k),
        expert_bytes=where(active, experts, 0.0),
        attention_flops=formulas.attention_flops(sequences, new, before, m.windows, m.heads, dims, m.state_elements,
                                                 tp, selected_keys=m.selected_keys, index_width=m.index_width),
        kv_bytes=where(active, formulas.kv_read_bytes(sequences, new, before, m.layout, m.kv_bpe, m.act_bpe, tp,
                                                      selected_keys=m.selected_keys), 0.0),
        activation_bytes=where(active, moved, 0.0),
        allreduce_bytes=formulas.allreduce_bytes(tokens, m.hidden, m.act_bpe),
        alltoall_bytes=formulas.alltoall_bytes(tokens, load, k, m.hidden, m.act_bpe, tp, ep, s.attention_dp,
                                              m.dispatch_bpe)
        * formulas.alltoall_node_share(k, ep, where(new > 1, s.ep_nodes, 1)),  # prefill: NVLink-forwarding kernels
        touched=formulas.experts_touched(routed, m.num_experts, k, m.moe_layers),
        dequant_bytes=where(active & cast, dequant.dequant_pass_bytes(dense, s.dequant_ratio), 0.0),
    )


def mixed_step(decodes: Step, prompts: Step) -> Step:
    """One engine step that carries the decodes of ``decodes`` and the prompt chunks of ``prompts``
    (chunked prefill, Sarathi-Serve arXiv:2403.02310): the two share one weight stream, so the weights are
    read once and the activations, FLOPs, KV reads and collectives of both add up; the routed experts
    read are the larger of the two passes' (a lower bound on their union)."""
    weights = decodes.dense_bytes - decodes.activation_bytes
    return Step(
        tokens=decodes.tokens + prompts.tokens,
        dense_flops=decodes.dense_flops + prompts.dense_flops,
        dense_bytes=weights + decodes.activation_bytes + prompts.activation_bytes,
        expert_flops=decodes.expert_flops + prompts.expert_flops,
        expert_bytes=np.maximum(decodes.expert_bytes, prompts.expert_bytes),
        attention_flops=decodes.attention_flops + prompts.attention_flops,
        kv_bytes=decodes.kv_bytes + prompts.kv_bytes,
        activation_bytes=decodes.activation_bytes + prompts.activation_bytes,
        allreduce_bytes=decodes.allreduce_bytes + prompts.allreduce_bytes,
        alltoall_bytes=decodes.alltoall_bytes + prompts.alltoall_bytes,
        touched=np.maximum(decodes.touched, prompts.touched),
        dequant_bytes=np.maximum(decodes.dequant_bytes, prompts.dequant_bytes),
    )


def saturated_step(s: configuration.Setup, prompt: Any, output: Any, batch: Any) -> Step:
    """The mean step of a saturated continuous-batching engine holding ``batch`` sequences of ``prompt`` +
    ``output`` tokens: ``batch`` decodes at the mean context ``prompt + output / 2`` and, as a sequence
    leaves every ``output`` steps, ``batch / output`` new prompts prefilled in the same step
    (``serving.concurrency_curve``'s closed loop, its prompts in one chunk)."""
    decodes = decode_step(s, prompt + output / 2, batch)
    prompts = engine_step(s, prompt, 0.0, batch / output, head=1, dims=s.model.prefill_dims)
    return mixed_step(decodes, prompts)


def _micro_batches(s: configuration.Setup, concurrency: Any) -> tuple[Any, Any, Any]:
    """Sequences of the busiest data-parallel group's larger and smaller micro-batches, and the share of
    its micro-batches that are the larger (one micro-batch without pipeline stages)."""
    group = parallel.sequences_per_group(concurrency, s.groups)
    count = parallel.micro_batches(group, s.pp, s.sequential)
    return formulas.micro_batch_sizes(group, count)


class DecodeSteps(NamedTuple):
    """The passes of the busiest group's larger and smaller micro-batches (``small`` None when every
    micro-batch is the larger), and the share of its micro-batches that are the larger."""

    large: Step
    small: Step | None
    share: Any


def decode_steps(s: configuration.Setup, context: Any, concurrency: Any) -> DecodeSteps:
    large, small, share = _micro_batches(s, concurrency)
    before = context - 1
    first = engine_step(s, 1, before, large, head=1, dims=s.model.decode_dims)
    if every(share == 1.0):
        return DecodeSteps(first, None, share)
    return DecodeSteps(first, engine_step(s, 1, before, small, head=1, dims=s.model.decode_dims), share)


def decode_step(s: configuration.Setup, context: Any, concurrency: Any) -> Step:
    """The pass of the busiest group's larger micro-batch."""
    return decode_steps(s, context, concurrency).large


def decode_seconds(
    s: configuration.Setup,
    c: efficiency.Constants | None,
    context: Any,
    concurrency: Any,
    steps: DecodeSteps | None = None,
    overhead: Any = None,
) -> Any:
    """Time per output token. With pipeline stages each stage works through every micro-batch in turn,
    so a round (one token for every sequence) lasts the mean pass of the micro-batches in flight.
    ``steps`` (``decode_steps(s, context, concurrency)``) and ``overhead`` (``overhead_seconds`` of
    ``steps.large``): when the caller has them."""
    large, small, share = steps if steps is not None else decode_steps(s, context, concurrency)
    seconds = step_seconds(large, s, c, phase="decode", overhead=overhead)
    if small is None:
        return seconds
    rest = step_seconds(small, s, c, phase="decode")
    return share * seconds + (1.0 - share) * rest


_ONE_GPU: dict[str, Any] = dict(tp=1, pp=1, ep=1, groups=1, attention_dp=1, sequential=False)


def single_gpu(s: configuration.Setup) -> configuration.Setup:
    """The same configuration on one GPU with unlimited memory: the reference of scaling efficiency."""
    return replace(s, **_ONE_GPU)


def is_single_gpu(s: configuration.Setup) -> bool:
    """Whether ``s`` is its own ``single_gpu`` reference (a scalar setup on one GPU), so need not be rerun."""
    return type(s.tp) is int and s.tp == s.pp == s.ep == s.groups == s.attention_dp == 1 and s.sequential is False


def prefill_steps(
    s: configuration.Setup, prompt: Any, chunk: float, prompts: Any = 1, chunks: tuple[int, int | None] = (0, None),
    prefix: Any = 0,
) -> Step:
    """The chunk steps of a prompt along a trailing axis; ``chunks`` = ``(first, count)`` lays out only
    that block of them (``prefill.chunk_tokens``); ``prefix`` tokens are cached before the prompt."""
    sizes: Any
    before: Any
    first, count = chunks
    if type(prompt) is int and prompt <= chunk and first == 0 and type(prefix) is int:  # one chunk: no chunk axis
        sizes, before = float(prompt), float(prefix)
    else:
        sizes, before = prefill.chunk_tokens(prompt, chunk, prefix, first=first, count=count)
    last = (sizes > 0) & (before + sizes >= along_chunks(prompt) + along_chunks(prefix))
    asked = along_chunks(prompts)
    group = parallel.sequences_per_group(asked, s.groups)
    replica = parallel.sequences_per_group(asked, s.groups // s.attention_dp)
    return engine_step(s, sizes, before, group, head=last, dims=s.model.prefill_dims, routed=sizes * replica)


#: Elements (configurations times chunks) one block of chunk steps may hold: the memory of a prefill is
#: bounded whatever the prompt's length, a long prompt being evaluated a block of chunks at a time.
CHUNK_BLOCK_ELEMENTS = 2**18


def chunk_blocks(prompt: Any, chunk: Any, elements: int = 1) -> list[tuple[int, int | None]]:
    """``(first, count)`` blocks of a prompt's chunks (``prefill_steps``' ``chunks``) such that ``elements``
    configurations times ``count`` chunks stay within ``CHUNK_BLOCK_ELEMENTS``; one block when they fit."""
    n = prefill.chunk_count(prompt, chunk)
    per = max(1, CHUNK_BLOCK_ELEMENTS // max(1, elements))
    return [(0, None)] if n <= per else [(j, per) for j in range(0, n, per)]


def prefill_times(
    steps: Step, s: configuration.Setup, c: efficiency.Constants | None, overhead: Any = None
) -> tuple[Any, Any]:
    """The sum and the longest of the chunk steps' times (``prefill.chunked_seconds`` without the
    per-request cost; ``overhead``: ``overhead_seconds`` of the steps when the caller has it)."""
    seconds = step_seconds(steps, s, c, phase="prefill", overhead=overhead)
    times = where(steps.tokens > 0, seconds, 0.0)
    longest = times.max(axis=-1, initial=0.0) if type(times) is np.ndarray else times
    return prefill.chunked_seconds(times, steps.tokens), longest


def prefill_schedule(total: Any, longest: Any, layout: configuration.Setup, request: Any = 0.0) -> Any:
    """Prefill time from the sum and the longest of its chunk steps (``prefill_times``, added over blocks):
    one after the other, or flowing through the pipeline stages when the engine overlaps them (``layout``:
    the setup without the chunk axis), plus the per-request cost."""
    chunked = total + request  # prefill.chunked_seconds' sum, its chunks summed a block at a time
    overlap = layout.pipelined_prefill & (layout.pp > 1)
    if overlap is False:  # one configuration that does not overlap: no pipelined schedule to work out
        return scalar_or_array(chunked)
    return scalar_or_array(where(overlap, parallel.pipelined_seconds(total, layout.pp, longest) + request, chunked))


def prefill_sums(
    sx: configuration.Setup, cx: efficiency.Constants, one: configuration.Setup | None, prompt: Any, size: Any,
    elements: int = 1, prefix: Any = 0,
) -> dict[str, Any]:
    """What a prefill's numbers add up over its chunk steps, a block of chunks at a time (``chunk_blocks``
    for ``elements`` configurations): the sum and the longest step time at the ceiling (``ceiling``,
    ``ceiling_longest``), expected (``expected``...) and on the one-GPU reference ``one`` (``reference``...;
    the expected ones when ``one`` is None); ``flops``, ``moved``, ``weights`` (bytes), ``chunks``,
    ``compute`` and ``memory`` (bound times) and ``communication`` per configuration; ``prefix`` tokens are cached
    before the prompt (``gpusizer.prefix_cache``)."""
    sums: dict[str, Any] = {}
    for block in chunk_blocks(prompt, size, elements):  # one block unless the prompt is very long
        part = _prefill_block(sx, cx, one, prompt, size, block, prefix)
        sums = part if not sums else {k: (np.maximum if k.endswith("longest") else np.add)(sums[k], v)
                                      for k, v in part.items()}
    return sums


def _prefill_block(
    sx: configuration.Setup, cx: efficiency.Constants, one: configuration.Setup | None, prompt: Any,
    size: Any, block: tuple[int, int | None], prefix: Any = 0,
) -> dict[str, Any]:
    """The sums over one block of a prompt's chunk steps (and the longest step) that ``prefill_numbers``
    adds up: times at the ceiling, expected and on the one-GPU reference, FLOPs, bytes and bound times."""
    steps = prefill_steps(sx, prompt, size, chunks=block, prefix=prefix)
    ceiling = prefill_times(steps, sx, None)
    communication = communication_seconds(steps, sx, cx)
    overhead = overhead_seconds(steps, sx, cx, communication)
    expected = prefill_times(steps, sx, cx, overhead)
    reference = expected if one is None else prefill_times(prefill_steps(one, prompt, size, chunks=block,
                                                                         prefix=prefix), one, cx)
    compute, memory_ = (over_chunks(t) for t in bound_seconds(steps, sx))
    return dict(
        ceiling=ceiling[0], ceiling_longest=ceiling[1], expected=expected[0], expected_longest=expected[1],
        reference=reference[0], reference_longest=reference[1],
        flops=over_chunks(steps.dense_flops + steps.expert_flops + steps.attention_flops),
        moved=over_chunks(steps.dense_bytes + steps.expert_bytes + steps.kv_bytes),
        weights=over_chunks(steps.dense_bytes + steps.expert_bytes - steps.activation_bytes),
        chunks=over_chunks(1 * (steps.tokens > 0)), compute=compute, memory=memory_,
        communication=over_chunks(communication),
    )


def elements(s: configuration.Setup, c: efficiency.Constants, *values: Any) -> int:
    """Configurations the arrays of a setup, its constants and ``values`` broadcast to. [-]"""
    shapes = [np.shape(v) for v in values]
    shapes += [v.shape for r in (s, c, s.model) for v in vars(r).values() if type(v) is np.ndarray]
    return math.prod(np.broadcast_shapes(*shapes))


def prefill_seconds(
    steps: Step,
    s: configuration.Setup,
    c: efficiency.Constants | None,
    layout: configuration.Setup,
    request: Any = 0.0,
    overhead: Any = None,
) -> Any:
    """Prefill time from all of its chunk steps (``prefill_times`` then ``prefill_schedule``)."""
    return prefill_schedule(*prefill_times(steps, s, c, overhead), layout, request)


def step_seconds(
    step: Step, s: configuration.Setup, c: efficiency.Constants | None, *, phase: str, overhead: Any = None
) -> Any:
    """Step time at the ceiling (``c`` None) or expected; phase ``decode`` or ``prefill``; ``overhead``:
    ``overhead_seconds`` of the step when the caller has it."""
    cast = dequant.dequantised(step.tokens, s.dequant_above)  # quantised weights through the F16 cuBLAS GEMM
    mu = 1.0 if c is None else (c.decode_compute if phase == "decode" else c.compute)
    eta = 1.0 if c is None else c.bandwidth
    eta_kv = 1.0 if c is None else c.kv_bandwidth
    mu_attention = 1.0 if c is None else where(cast, c.dequant_compute, c.compute)
    mu_expert = mu if c is None else formulas.expert_compute_efficiency(mu, c.expert_compute)
    mu = mu if c is None or phase == "decode" else where(cast, c.dequant_compute, mu)
    overlap = 1.0 if c is None else c.overlap  # the ceiling overlaps arithmetic and traffic completely
    dense_peak = where(cast, s.dequant_peak, s.dense_peak)
    operators = [
        roofline.roofline_time(step.dense_flops, step.dense_bytes, dense_peak, s.bandwidth,
                               compute_efficiency=mu, bandwidth_efficiency=eta, overlap=overlap),
        divide(step.dequant_bytes, (1.0 if c is None else dequant.STREAM_EFFICIENCY) * s.bandwidth),  # own kernel
        roofline.roofline_time(step.expert_flops, step.expert_bytes, s.expert_peak, s.bandwidth,
                               compute_efficiency=mu_expert, bandwidth_efficiency=eta, overlap=overlap),
        roofline.roofline_time(step.attention_flops, step.kv_bytes, s.attention_peak, s.bandwidth,
                               compute_efficiency=mu_attention, bandwidth_efficiency=eta_kv, overlap=overlap),
    ]
    if c is None:
        return decode.step_seconds(operators)
    return decode.step_seconds(operators, overhead_seconds(step, s, c) if overhead is None else overhead)


def allreduce_seconds(step: Step, s: configuration.Setup, c: efficiency.Constants) -> Any:
    """One tensor-parallel all-reduce of the step, by the algorithm the engine runs on the link."""
    if is_single_gpu(s):  # one GPU: nothing to reduce (every term below is 0)
        return 0.0
    return interconnect.engine_allreduce_seconds(step.allreduce_bytes, s.tp, s.tp_bus, c.latency_seconds * s.tp_latency,
                                                 s.tp_hop, custom=s.tp_custom, custom_max_bytes=s.custom_max_bytes,
                                                 row_split=s.tp_row_split, issue_latency=s.tp_issue)


def communication_seconds(step: Step, s: configuration.Setup, c: efficiency.Constants, allreduce: Any = None) -> Any:
    """All collectives of a pass: all-reduces per mixer and FFN (the MoE FFN's only when every GPU sees
    every token), a dispatch and a combine per MoE layer under data-parallel attention, and a hop per
    stage boundary (``allreduce``: ``allreduce_seconds`` of the step when the caller has it)."""
    if is_single_gpu(s):  # one GPU: no collective (every term below is 0)
        return 0.0
    m = s.model
    alpha = c.latency_seconds
    exchange = interconnect.alltoall_seconds(step.alltoall_bytes, s.ep, s.ep_bandwidth, alpha * s.ep_latency)
    hop = interconnect.p2p_seconds(step.allreduce_bytes, s.pp_bandwidth, c.latency_seconds * s.pp_latency + s.pp_hop)
    allreduce = allreduce_seconds(step, s, c) if allreduce is None else allreduce
    total = formulas.collective_seconds(
        formulas.allreduce_count(m.allreduce_layers, m.moe_layers, s.attention_dp), allreduce,
        formulas.alltoall_count(m.moe_layers, s.attention_dp), exchange, formulas.pipeline_hops(s.pp), hop,
    )
    return where(step.tokens > 0, total, 0.0)


def overhead_seconds(step: Step, s: configuration.Setup, c: efficiency.Constants, communication: Any = None) -> Any:
    """Fixed costs and collectives of a pass (``communication``: ``communication_seconds`` when the caller has it)."""
    communication = communication_seconds(step, s, c) if communication is None else communication
    fixed = decode.overhead_seconds(s.model.num_layers, c.layer_seconds, c.step_seconds,
                                    moe_layers=s.model.moe_layers, moe_layer_seconds=c.moe_layer_seconds)
    return where(step.tokens > 0, fixed + communication, 0.0)


def bound_seconds(step: Step, s: configuration.Setup) -> tuple[Any, Any]:
    """Arithmetic and memory time of a step at the datasheet peaks."""
    dense_peak = where(dequant.dequantised(step.tokens, s.dequant_above), s.dequant_peak, s.dense_peak)
    compute = (divide(step.dense_flops, dense_peak) + divide(step.expert_flops, s.expert_peak)
               + divide(step.attention_flops, s.attention_peak))
    memory_ = (step.dense_bytes + step.expert_bytes + step.kv_bytes + step.dequant_bytes) / s.bandwidth
    return compute, memory_



def along_chunks(value: Any) -> Any:
    """``value`` with a trailing axis on every array, to broadcast against ``prefill.chunk_tokens``' chunks."""
    return map_arrays(lambda array: array[..., None], value)


def over_chunks(value: Any) -> Any:
    """Sum over the trailing chunk axis of ``prefill.chunk_tokens``; a scalar is a prompt of one chunk."""
    return scalar_or_array(value.sum(axis=-1)) if type(value) is np.ndarray else value


