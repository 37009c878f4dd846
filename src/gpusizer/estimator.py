"""The orchestrator: compose the physics modules into one frozen answer. No formula lives here.

``estimate(model, gpu, ...)`` looks up the records, unpacks them into numbers (``unpack``), calls
``memory``, ``engines`` and ``performance``, and keeps every intermediate in a
frozen ``Estimate``. ``context`` and ``concurrency`` may be arrays: every field then broadcasts.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from gpusizer import (
    catalog,
    checks,
    efficiency,
    engine_defaults,
    engines,
    memory,
    multimodal,
    parallel,
    performance,
    speculation,
    unpack,
)
from gpusizer import lora as adapters
from gpusizer import offload as offloading
from gpusizer import prefix_cache as caching
from gpusizer.checks import cache_by_identity, instance, integer_array, plain, scalar_or_array
from gpusizer.numeric import maximum, minimum, number, where
from gpusizer.presentation import Presented

if TYPE_CHECKING:  # for the annotation only: estimate applies a calibration through efficiency.calibrated_table
    from gpusizer import calibration as _calibration

__all__ = [
    "Estimate", "MemoryBreakdown", "ParallelBreakdown", "engine_capacity", "estimate", "memory_numbers",
    "parallel_numbers", "resolve_target", "scale_out_bandwidth",
]


@dataclass(frozen=True)
class MemoryBreakdown:
    """Memory of one GPU, by component. Every field is in bytes [B]; arrays when inputs were arrays."""

    weights_bytes: Any
    """Weights stored on this GPU (its tensor-parallel shard plus replicated tensors)."""
    kv_cache_bytes: Any
    """KV cache (and recurrent state) of ``concurrency`` sequences of ``context`` tokens."""
    activation_bytes: Any
    """Activation peak of the engine's largest forward pass (vLLM profile, llama.cpp compute buffer)."""
    runtime_bytes: Any
    """CUDA context, communication buffers and CUDA graphs."""
    total_bytes: Any
    """Sum of the four components above."""
    capacity_bytes: Any
    """Memory of the GPU as the driver reports it (or the engine's share of unified memory)."""
    budget_bytes: Any
    """What the engine lets the four components use (``gpu_memory_utilization x capacity`` for vLLM)."""
    headroom_bytes: Any
    """``budget - total``: negative when it does not fit."""


@dataclass(frozen=True)
class ParallelBreakdown:
    """How the GPUs share the model (``gpusizer.parallel``) and what the split costs. Arrays broadcast."""

    layout: str
    """Canonical layout name (``tp8``, ``tp2xpp2``, ``tp8+ep8``, ``layer4``)."""
    gpus: int
    """GPUs of the layout. [-]"""
    tensor_parallel: int
    pipeline_parallel: int
    expert_parallel: int
    """1 when routed experts are split like every other matrix. [-]"""
    data_parallel: int
    """Independent replicas. [-]"""
    attention_data_parallel: int
    """Data-parallel attention groups per expert-parallel group. [-]"""
    links: str
    """Link classes the collectives cross (``interconnect.link_class``)."""
    scaling_efficiency: Any
    """Decode step of one GPU of this type with unlimited memory over ``gpus`` times this one's. [-]"""
    prefill_scaling_efficiency: Any
    """The same for the prefill of ``prompt``. [-]"""
    communication_seconds_per_step: Any
    """All-reduces, all-to-alls and pipeline hops of one decode step, expected. [s]"""
    communication_share: Any
    """``communication_seconds_per_step`` over the time per output token. [-]"""
    reference_tokens_per_second: Any
    """Per-user decode rate of the single unlimited-memory GPU, expected. [token/s]"""
    speedup: Any
    """Per-user decode rate over the reference's: ``gpus * scaling_efficiency``. [-]"""


@dataclass(frozen=True, repr=False)  # repr, str and HTML: gpusizer.presentation
class Estimate(Presented):
    """Everything gpusizer knows about one configuration. Units in brackets; arrays broadcast."""

    model: str
    gpu: str
    engine: str
    gpus: int
    """GPUs the model is split over (``parallel`` says how). [-]"""
    weights: str
    """Precision of the linear weights."""
    expert_weights: str | None
    """Precision of the routed experts where it differs."""
    kv_cache: str
    """KV-cache dtype."""
    context: Any
    """Tokens each sequence holds. [token]"""
    concurrency: Any
    """Sequences resident at once. [-]"""
    memory: MemoryBreakdown
    fits: Any
    """Whether everything fits on every GPU. [bool]"""
    kv_pool_bytes: Any
    """KV pool the engine allocates per GPU; 0 when the weights and overheads leave none. [B]"""
    kv_pool_deficit_bytes: Any
    """How far the weights and overheads exceed the engine's budget per GPU, before any KV cache; 0 when
    they leave a pool. [B]"""
    kv_pool_tokens: Any
    """Tokens of ``context``-long sequences the KV pools of the whole layout hold. [token]"""
    max_concurrency: Any
    """Sequences of ``context`` tokens the KV pools of the whole layout hold. [-]"""
    max_context: Any
    """Longest context at ``concurrency`` that fits, capped at the model's maximum. [token]"""
    context_exceeds_model_max: Any
    """Whether ``context`` is longer than the model's maximum context (its ``max_position_embeddings``);
    the sizes are then extrapolated past what the model was trained for. [bool]"""
    memory_fraction: Any
    """The engine's memory fraction in force on this GPU and layout (``gpu_memory_utilization``,
    ``mem_fraction_static``, ``free_gpu_memory_fraction``; ``engine_defaults.memory_fraction``). [-]"""
    host_weights_bytes: Any
    """Weights the engine keeps in host memory, outside ``memory``: llama.cpp's token embedding (its
    ``CPU_Mapped model buffer``; ``engines.vocabulary_on_gpu``), once per deployment; 0 elsewhere. [B]"""
    decode: performance.Decode
    """Decode speed of the next token when every sequence holds ``context`` tokens."""
    prefill: performance.Prefill
    """Prefill of one ``prompt`` and its time to first token."""
    parallel: ParallelBreakdown | None = None
    """Layout, links, scaling efficiency and communication share (always set by ``estimate``)."""
    gpu_name: str = ""
    """The GPU's name (``GPU.name``: a custom record's as well as the catalogue's)."""
    speculation: speculation.Speculation | None = None
    """Speculative decoding (``estimate(..., speculative=...)``; ``gpusizer.speculation``); None when off."""
    prefix_cache: caching.PrefixCache | None = None
    """Prefix caching (``estimate(..., prefix=...)``; ``gpusizer.prefix_cache``); None when off."""
    lora: adapters.Adapters | None = None
    images: multimodal.ImageLoad | None = None
    """Images in every request (``estimate(..., images=...)``; ``gpusizer.multimodal``): their tokens are in
    ``context``, the KV cache, ``max_concurrency`` and ``prefill``; the encoder time and TTFT with it are here."""
    """LoRA adapters (``estimate(..., lora=...)``; ``gpusizer.lora``); None when off."""
    offload: offloading.Offloaded | None = None
    """CPU/RAM offload (``estimate(..., offload=...)``; ``gpusizer.offload``); None when off."""

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict; arrays become lists, sizes in bytes become integers; ``speculation``, ``prefix_cache``
        ``lora`` and ``offload`` only when on."""
        data = plain(asdict(self))
        for name in ("speculation", "prefix_cache", "lora", "offload", "images"):
            if getattr(self, name) is None:
                del data[name]
        return data


def resolve_target(gpu: str | catalog.GPU | catalog.System, gpus: int | None) -> tuple[catalog.GPU, int]:
    """A GPU record and GPU count from a GPU id, alias or system id (``hgx-h200-8x`` means 8 x H200)."""
    system = _system(gpu)
    if system is not None:
        return catalog.gpu(system.gpu), system.gpu_count if gpus is None else gpus
    return catalog.gpu(cast(Any, gpu)), 1 if gpus is None else gpus


def estimate(
    model: str | catalog.Model, gpu: str | catalog.GPU | catalog.System, *, weights: str | None = None,
    kv_cache: str | None = None, context: Any = 8192, concurrency: Any = 1, prompt: Any = None,
    gpus: int | None = None, engine: str | engines.EngineProfile = "vllm", layout: str | parallel.Layout = "tp",
    calibration: _calibration.Calibration | None = None, speculative: speculation.Speculative | None = None,
    prefix: caching.PrefixCaching | None = None, lora: adapters.LoRA | None = None,
    offload: offloading.Offload | None = None, images: multimodal.Images | None = None,
) -> Estimate:
    """Size one model on one GPU type: memory per GPU, fit, KV pool and its limits.

    Parameters
    ----------
    model : str or Model
        Catalogue id (``"llama-3.1-70b"``) or a record (``hf.from_hf_config``).
    gpu : str or GPU or System
        Catalogue id or alias (``"h200"``), or a system (``"hgx-h200-8x"``).
    weights : str, optional
        Precision of the linear weights (``"fp8"``, ``"int4"``, ``"q4_k_m"``...); default: the
        published checkpoint's (``Model.weights`` and ``Model.expert_weights``).
    kv_cache : str, optional
        KV-cache dtype; default: the model's activation dtype, as engines do.
    context : array_like of int
        Tokens each sequence holds (prompt + output; vLLM's ``max_model_len``). [token]
    concurrency : array_like of int
        Sequences resident at once. [-]
    prompt : array_like of int, optional
        Prompt tokens of the request whose prefill and TTFT are reported; default ``context``. [token]
    gpus : int, optional
        GPUs the model is split over; default the system's GPU count, the count an explicit
        ``layout`` names (``"tp2xpp2"``: 4), else 1.
    engine : str
        ``"vllm"``, ``"sglang"``, ``"trtllm"``, ``"trtllm-engine"`` or ``"llama.cpp"``.
    layout : str or parallel.Layout
        How the GPUs share the model (``gpusizer.parallel``): ``"tp"`` (tensor parallel over all of
        them, the default), ``"pp"``, ``"ep"``, ``"layer"``, or degrees such as ``"tp2xpp2"``,
        ``"tp8+ep8"``, ``"tp4xdp2"``. ``gpusizer.best_layout`` ranks the ones that fit.
    calibration : Calibration, optional
        Your own calibration (``gpusizer.calibrate``): where it covers this engine class and GPU class,
        the speed, its efficiency constants and its p10-p90 band are the calibrated ones.
    speculative : speculation.Speculative, optional
        Speculative decoding (a draft model, an EAGLE head or the model's MTP module, ``gpusizer.speculation``):
        ``Estimate.speculation`` then holds the accepted-token rates, the speedup, the draft's memory and the
        concurrency beyond which speculation stops paying; ``decode`` stays the plain decode.
    prefix : prefix_cache.PrefixCaching, optional
        Prefix caching (a hit rate and/or a prefix every sequence shares, ``gpusizer.prefix_cache``):
        ``Estimate.prefix_cache`` then holds the cached and computed prompt tokens, the prefill and TTFT of the
        uncached part, and the KV pool with the shared blocks held once; ``prefill`` stays the uncached prefill.
    lora : lora.LoRA, optional
        LoRA adapters served with the model (``gpusizer.lora``): ``Estimate.lora`` then holds the engine's
        adapter buffers per GPU, the KV pool left, and the decode step with the adapters' kernels.
    offload : offload.Offload, optional
        Weights in system RAM (llama.cpp ``-ngl``/``--n-cpu-moe``, vLLM ``--cpu-offload-gb``, ``gpusizer.offload``):
        ``Estimate.offload`` then holds the GPU/host split, the GPU's fit with it and the decode step bounded by
        the host's memory bandwidth or PCIe; ``fits``, ``memory`` and ``decode`` stay those without offload.
    images : multimodal.Images, optional
        Images (or a video) in every request to a vision-language model (``gpusizer.multimodal``): their tokens
        by the model's published rule are added to ``context`` (and to ``prompt`` when given), hence to the KV
        cache, ``max_concurrency`` and the prefill; ``Estimate.images`` holds the tokens, the encoder's FLOPs and
        seconds, the TTFT with the encoder, and the vision weights.

    Returns
    -------
    Estimate
        Frozen; "does not fit" is ``fits == False``, never an exception.

    Raises
    ------
    KeyError
        Unknown model or GPU id (the message names the closest ids).
    TypeError
        An argument of the wrong type (``gpu=None``, ``gpus=[1, 2]``, ``calibration="x"``), naming it.
    ValueError
        Negative or fractional context or concurrency, a context or prompt over ``checks.MAX_TOKENS``
        (16,777,216), more than ``checks.MAX_GPUS`` GPUs, unknown precision or engine, or a layout that
        does not match ``gpus`` or the model (more stages than layers, expert parallelism without
        experts). Attention heads that do not divide by the tensor-parallel degree only warn.

    Examples
    --------
    >>> e = estimate("llama-3.1-8b", "h100-sxm", context=8192, concurrency=1)
    >>> e.fits, round(e.memory.weights_bytes / 1e9, 2)
    (True, 16.06)
    """
    record = catalog.model(model)
    instance(gpu, "gpu", (str, catalog.GPU, catalog.System))
    if calibration is not None:
        efficiency.check_calibration(calibration)
    bare = isinstance(layout, str) and layout.strip().lower() in ("tp", "pp", "ep", "dp", "layer")
    system = _system(gpu)
    if gpus is None and system is None and not bare:
        gpus = parallel.layout(layout).gpus  # an explicit layout on a bare GPU says how many
    device, count = resolve_target(gpu, gpus)
    count = checks.count(count, "gpus", maximum=checks.MAX_GPUS)
    ctx = number(integer_array(context, "context", minimum=1, maximum=checks.MAX_TOKENS))
    users = number(integer_array(concurrency, "concurrency", minimum=1))
    asked = None if prompt is None else number(integer_array(prompt, "prompt", minimum=1, maximum=checks.MAX_TOKENS))
    shown = _shown(record, images)
    if shown[1]:  # whole tokens: the context stays an integer
        ctx, asked = ctx + int(shown[1]), None if asked is None else asked + int(shown[1])
    profile = engines.engine(engine)
    plan = parallel.layout(layout, count)
    parallel.check(plan, record, heads=False)
    if record.num_heads % plan.tp:
        warnings.warn(f"layout {plan.name!r}: the {record.num_heads} attention heads of {record.id} do not divide by "
                      f"{plan.tp}, which engines refuse; see gpusizer.best_layout", stacklevel=2)
    w, experts, kv_name = unpack.checkpoint_precisions(record, weights, kv_cache)
    numbers = unpack.model_numbers(record, w, experts, kv_name)
    sizes = memory_numbers(numbers, profile, engine_capacity(device, profile), count, ctx, users, plan)
    table = efficiency.bundled() if calibration is None else _calibrated(calibration, profile.name, device)
    nic = scale_out_bandwidth(system)
    decode, prefill = performance.speed_of(
        record, device, w, experts, kv_name, count, profile.name, plan, table, nic, ctx, users, asked, None)
    config = (record, device, w, experts, kv_name, count, profile, plan, table, nic, ctx, users)
    speculated = None if speculative is None else speculation.speculate(*config, speculative, decode, sizes)
    cached = None if prefix is None else caching.cache_prefix(
        *config, asked, prefix, performance.Speed(decode, prefill), numbers, sizes)
    adapted = None if lora is None else adapters.adapt(*config, lora, decode, numbers, sizes)
    offloaded = None if offload is None else offloading.offload(
        device, profile, count, numbers, sizes, decode, prefill, ctx, users, offload)
    return Estimate(
        model=record.id,
        gpu=device.id,
        gpu_name=device.name,
        engine=profile.name,
        gpus=count,
        weights=w,
        expert_weights=experts,
        kv_cache=kv_name,
        context=scalar_or_array(ctx),
        concurrency=scalar_or_array(users),
        memory=MemoryBreakdown(**{f.name: sizes.pop(f.name) for f in fields(MemoryBreakdown)}),
        **sizes,
        decode=decode,
        prefill=prefill,
        parallel=_parallel_breakdown(plan, decode, prefill),
        speculation=speculated,
        prefix_cache=cached,
        lora=adapted,
        offload=offloaded,
        images=None if images is None else multimodal.encode(record, images, *shown, prefill, numbers.act_bpe),
    )


def _shown(record: catalog.Model, images: Any) -> tuple[str, float, float]:
    """The rule, tokens and patches of ``images`` per request (none without them)."""
    if images is None:
        return "none", 0.0, 0.0
    instance(images, "images", multimodal.Images)
    return multimodal.image_tokens(record, images)


def _system(target: Any) -> catalog.System | None:
    """The system a target names (an id or alias: ``catalog.find_system``), None for a GPU."""
    return catalog.find_system(target)


@cache_by_identity  # one table per calibration, engine and GPU: the speed caches key on the table's identity
def _calibrated(calibration: _calibration.Calibration, engine: str, device: catalog.GPU) -> Any:
    """The efficiency table a calibration gives ``engine`` on ``device`` (``efficiency.calibrated_table``)."""
    gpu_class = efficiency.gpu_class(device.memory_type)
    return efficiency.calibrated_table(efficiency.bundled(), calibration, engine, gpu_class)


def scale_out_bandwidth(target: str | catalog.GPU | catalog.System | None) -> float | None:
    """NIC bandwidth per GPU and direction of a target that is a system (its ``scale_out_bandwidth`` over 8 bits
    per byte), None for a bare GPU or a system without the figure. [B/s]

    Examples
    --------
    >>> scale_out_bandwidth("hgx-h200-8x"), scale_out_bandwidth("h200")
    (50000000000.0, None)
    """
    system = target if target is None or isinstance(target, catalog.System) else _system(target)
    if system is not None and system.scale_out_bandwidth:
        return system.scale_out_bandwidth / 8
    return None


def _parallel_breakdown(
    plan: parallel.Layout, decode: performance.Decode, prefill: performance.Prefill
) -> ParallelBreakdown:
    """The layout and what it costs, from the decode and prefill records."""
    links = decode.links if plan.gpus > 1 else "none"
    numbers = parallel_numbers(plan, plan.gpus, links, vars(decode), prefill.scaling_efficiency)
    return ParallelBreakdown(layout=plan.name, gpus=plan.gpus, **numbers)


def parallel_numbers(
    plan: Any, gpus: Any, links: Any, decode: Mapping[str, Any], prefill_scaling_efficiency: Any
) -> dict[str, Any]:
    """The fields of ``ParallelBreakdown`` but ``layout`` and ``gpus`` (shared by ``estimate`` and ``sweep``).

    ``plan`` is the layout (``parallel.Layout``, or any record of its ``tp``, ``pp``, ``ep``, ``dp`` and
    ``attention_dp``), ``gpus`` its GPU count [-], ``links`` the link classes its collectives cross and
    ``decode`` the fields of ``performance.Decode`` (``performance.decode_numbers``); numbers, or arrays
    that broadcast. The speedup is ``gpus * scaling_efficiency``.
    """
    speedup = gpus * decode["scaling_efficiency"]
    return dict(
        tensor_parallel=plan.tp,
        pipeline_parallel=plan.pp,
        expert_parallel=plan.ep,
        data_parallel=plan.dp,
        attention_data_parallel=plan.attention_dp,
        links=links,
        scaling_efficiency=decode["scaling_efficiency"],
        prefill_scaling_efficiency=prefill_scaling_efficiency,
        communication_seconds_per_step=decode["communication_seconds"],
        communication_share=scalar_or_array(decode["communication_seconds"] / decode["tpot_seconds_expected"]),
        reference_tokens_per_second=scalar_or_array(decode["expected_tokens_per_second"] / speedup),
        speedup=scalar_or_array(speedup),
    )


# --- the memory numbers of a configuration ------------------------------------------------------
# ``estimate`` and ``sweep`` share these: a model's numbers, an engine profile and a capacity are numbers for
# one configuration, or records of arrays (``sweep``) that broadcast over many.


def engine_capacity(device: catalog.GPU, profile: engines.EngineProfile) -> float:
    """Memory the engine may use on one such GPU (``engines.device_capacity``). [B]"""
    unified = "unified" in (device.memory_type or "").lower()
    return engines.device_capacity(device.capacity, unified, profile)


#: Activation peak of an engine's largest forward pass, by ``EngineProfile.activation``: ``(model numbers, profile,
#: tensor parallelism, context) -> bytes``; TensorRT-LLM's PyTorch pass samples ``trtllm_profile_requests`` prompts. [B]
_ACTIVATION: dict[str, Callable[[unpack.ModelNumbers, Any, Any, Any], Any]] = {
    "vllm": lambda f, e, count, ctx: memory.vllm_activation_bytes(
        e.batched_tokens, f.hidden, f.ffn_width, f.vocab, e.max_sequences, f.act_bpe, count,
        e.sampler_bytes_per_logit,
    ),
    "trtllm": lambda f, e, count, ctx: memory.vllm_activation_bytes(
        e.batched_tokens, f.hidden, f.ffn_width, f.vocab,
        engine_defaults.trtllm_profile_requests(e.batched_tokens, ctx), f.act_bpe, count, e.sampler_bytes_per_logit),
    "tensorrt": lambda f, e, count, ctx: engine_defaults.tensorrt_engine_activation_bytes(
        e.batched_tokens, f.hidden, f.ffn_width, f.act_bpe, count),
    "llama.cpp": lambda f, e, count, ctx: engine_defaults.llama_cpp_compute_buffer_bytes(
        minimum(e.batched_tokens, number(ctx) * e.max_sequences), f.hidden, f.ffn_width, f.vocab
    ),
}


def _by_name(name: Any, value: Callable[[str], Any]) -> Any:
    """``value(name)``; for an array of names, every element takes the value of its own name."""
    if isinstance(name, str):
        return value(name)
    out: Any = np.nan
    for key in dict.fromkeys(np.asarray(name).flat):
        out = np.where(name == key, value(key), out)
    return out


def memory_numbers(
    f: unpack.ModelNumbers, e: Any, capacity_bytes: Any, count: Any, ctx: Any, users: Any, plan: Any = None
) -> dict[str, Any]:
    """The memory numbers of a configuration: the fields of ``Estimate``'s breakdown per GPU, the KV pool
    and its limits (shared by ``estimate`` and ``sweep``).

    ``f`` a model's numbers (``unpack.model_numbers``, or ``unpack.stack`` of them), ``e`` an engine
    profile (or any record with its fields), ``capacity_bytes`` [B],
    ``count`` GPUs, ``ctx`` [token] and ``users``: numbers, or arrays that broadcast. ``plan`` is the
    layout (``parallel.Layout``, or any record of its ``tp``, ``pp``, ``ep``, ``dp`` and
    ``attention_dp`` as arrays); without one the ``count`` GPUs are tensor parallel. Per GPU: the
    busiest rank's weights (``parallel.weights_per_gpu``), the KV cache of its stage's layers for the
    sequences of its data-parallel group; the pool and concurrency limits count every group.
    """
    tp, pp, ep, groups = (count, 1, 1, 1) if plan is None else (plan.tp, plan.pp, plan.ep, plan.dp * plan.attention_dp)
    expert_bytes = f.expert_bytes
    if f.mxfp4_experts is not False:  # MXFP4 experts, as the engine allocates them
        padding = engines.padded_expert_share(
            f.hidden, maximum(f.expert_width, 1), where(ep > 1, 1, tp), e.mxfp4_hidden_multiple,
            e.mxfp4_intermediate_multiple,
        )
        expert_bytes = f.expert_bytes * where(f.mxfp4_experts, padding, 1.0)
    vocabulary = engines.vocabulary_on_gpu(f.embedding_bytes, f.head_bytes, f.streamed_head_bytes,
                                           e.input_embedding_on_host)  # llama.cpp: token_embd on the host
    weight_bytes = parallel.weights_per_gpu(f.layer_bytes, f.replicated_bytes, expert_bytes, *vocabulary,
                                            num_layers=f.num_layers, num_experts=f.num_experts, tp=tp, pp=pp, ep=ep)
    activation = _by_name(e.activation, lambda kind: _ACTIVATION[kind](f, e, tp, ctx))
    non_torch = engines.non_torch_bytes(e.runtime_bytes, e.runtime_bytes_multi_gpu, count)
    runtime = non_torch + e.cuda_graph_bytes
    fraction = _by_name(e.fraction_rule, lambda rule: engine_defaults.memory_fraction(
        rule, capacity_bytes, tp, e.memory_fraction))
    pool = _by_name(e.kv_rule, lambda rule: engines.kv_pool_bytes(
        capacity_bytes, weight_bytes, activation + runtime, rule=rule, fraction=fraction,
        non_torch=non_torch,
    ))
    cache = dict(block_size=e.block_size, tensor_parallel=tp)
    stage = parallel.stage_fraction(f.num_layers, pp)  # exactly 1.0 without pipeline stages
    per_sequence = memory.sequence_cache_bytes(ctx, f.layout, f.kv_bpe, f.act_bpe, **cache) * stage
    resident = parallel.sequences_per_group(users, groups)
    kv_bytes = resident * per_sequence
    headroom = memory.headroom_bytes(pool, kv_bytes)
    return dict(
        weights_bytes=weight_bytes,
        kv_cache_bytes=scalar_or_array(kv_bytes),
        activation_bytes=activation,
        runtime_bytes=runtime,
        total_bytes=scalar_or_array(weight_bytes + activation + runtime + kv_bytes),
        capacity_bytes=capacity_bytes,
        budget_bytes=weight_bytes + activation + runtime + pool,
        headroom_bytes=headroom,
        fits=scalar_or_array(headroom >= 0),
        kv_pool_bytes=maximum(pool, 0.0),
        kv_pool_deficit_bytes=maximum(0.0 - pool, 0.0),
        kv_pool_tokens=scalar_or_array(memory.pool_tokens(pool, per_sequence, ctx) * groups),
        max_concurrency=scalar_or_array(memory.max_concurrency(pool, per_sequence) * groups),
        max_context=memory.max_context(pool / stage, resident, f.layout, f.kv_bpe, f.act_bpe, limit=f.limit, **cache),
        context_exceeds_model_max=scalar_or_array(number(ctx) > f.limit),
        memory_fraction=fraction,
        host_weights_bytes=scalar_or_array(number(f.embedding_bytes) - vocabulary[0]),  # what the GPU does not hold
    )
