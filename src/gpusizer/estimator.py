"""The orchestrator: compose the physics modules into one frozen answer. No formula lives here.

``estimate(model, gpu, ...)`` looks up the records, unpacks them into numbers, calls
``architecture``, ``precision``, ``memory`` and ``engines``, and keeps every intermediate in a
frozen ``Estimate``. ``context`` and ``concurrency`` may be arrays: every field then broadcasts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from gpusizer import architecture, catalog, engines, memory, performance, precision
from gpusizer._checks import integer_array, plain, scalar_or_array

__all__ = ["Estimate", "MemoryBreakdown", "estimate", "resolve_target"]


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
class Estimate:
    """Everything gpusizer knows about one configuration. Units in brackets; arrays broadcast."""

    model: str
    gpu: str
    engine: str
    gpus: int
    """GPUs, tensor parallel. [-]"""
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
    """KV pool the engine allocates per GPU. [B]"""
    kv_pool_tokens: Any
    """Tokens of ``context``-long sequences the KV pool holds. [token]"""
    max_concurrency: Any
    """Sequences of ``context`` tokens the KV pool holds. [-]"""
    max_context: Any
    """Longest context at ``concurrency`` that fits, capped at the model's maximum. [token]"""
    decode: performance.Decode
    """Decode speed of the next token when every sequence holds ``context`` tokens."""
    prefill: performance.Prefill
    """Prefill of one ``prompt`` and its time to first token."""

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict; arrays become lists, sizes in bytes become integers."""
        return plain(asdict(self))


def resolve_target(gpu: str | catalog.GPU | catalog.System, gpus: int | None) -> tuple[catalog.GPU, int]:
    """A GPU record and GPU count from a GPU id, alias or system id (``hgx-h200-8x`` means 8 x H200)."""
    if isinstance(gpu, str) and gpu.lower() in {s.id for s in catalog.systems()}:
        gpu = catalog.system(gpu)
    if isinstance(gpu, catalog.System):
        return catalog.gpu(gpu.gpu), gpu.gpu_count if gpus is None else gpus
    return catalog.gpu(gpu), 1 if gpus is None else gpus


def estimate(
    model: str | catalog.Model,
    gpu: str | catalog.GPU | catalog.System,
    *,
    weights: str | None = None,
    kv_cache: str | None = None,
    context: Any = 8192,
    concurrency: Any = 1,
    prompt: Any = None,
    gpus: int | None = None,
    engine: str | engines.EngineProfile = "vllm",
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
        GPUs in tensor parallel; default 1, or the system's GPU count.
    engine : str
        ``"vllm"``, ``"sglang"``, ``"trtllm"`` or ``"llama.cpp"``.

    Returns
    -------
    Estimate
        Frozen; "does not fit" is ``fits == False``, never an exception.

    Raises
    ------
    KeyError
        Unknown model or GPU id (the message names the closest ids).
    ValueError
        Negative or fractional context or concurrency, unknown precision or engine.

    Examples
    --------
    >>> e = estimate("llama-3.1-8b", "h100-sxm", context=8192, concurrency=1)
    >>> e.fits, round(e.memory.weights_bytes / 1e9, 2)
    (True, 16.06)
    """
    record = catalog.model(model)
    device, count = resolve_target(gpu, gpus)
    count = int(integer_array(count, "gpus", minimum=1))
    ctx = integer_array(context, "context", minimum=1)
    users = integer_array(concurrency, "concurrency", minimum=1)
    profile = engines.engine(engine)

    w = precision.precision(weights if weights is not None else record.weights)
    experts = None if weights is not None or record.expert_weights is None else record.expert_weights
    kv_name = kv_cache if kv_cache is not None else record.activation_dtype
    kv_bpe = precision.kv_bytes_per_element(kv_name)
    act_bpe = precision.bytes_per_element(record.activation_dtype)

    counts = architecture.parameter_counts(record)
    stored = precision.stored_weight_bytes(counts, w, experts, record.activation_dtype)
    replicated = architecture.replicated_params(record) * act_bpe
    weight_bytes = memory.shard_bytes(stored, replicated, count)

    activation = _activation_bytes(record, profile, act_bpe, count)
    runtime = profile.runtime_bytes + profile.cuda_graph_bytes + profile.runtime_bytes_multi_gpu * (count > 1)
    unified = "unified" in (device.memory_type or "").lower()
    capacity = engines.device_capacity(device.capacity, unified, profile)
    pool = engines.kv_pool_bytes(
        capacity, weight_bytes, activation + runtime, rule=profile.kv_rule, fraction=profile.memory_fraction
    )

    layout = architecture.kv_layout(record)
    cache = dict(block_size=profile.block_size, tensor_parallel=count)
    per_sequence = memory.sequence_cache_bytes(ctx, layout, kv_bpe, act_bpe, **cache)
    kv_bytes = np.multiply(users, per_sequence)
    headroom = memory.headroom_bytes(pool, kv_bytes)
    limit = record.max_context or 2**24
    total = np.add(weight_bytes + activation + runtime, kv_bytes)
    fitting = memory.max_concurrency(pool, per_sequence)
    decode, prefill = performance.speed(
        record, device, weights=w.name, expert_weights=experts, kv_cache=kv_name, context=ctx,
        concurrency=users, prompt=prompt, gpus=count, engine=profile.name,
    )
    return Estimate(
        model=record.id,
        gpu=device.id,
        engine=profile.name,
        gpus=count,
        weights=w.name,
        expert_weights=experts,
        kv_cache=kv_name,
        context=scalar_or_array(ctx),
        concurrency=scalar_or_array(users),
        memory=MemoryBreakdown(
            weights_bytes=weight_bytes,
            kv_cache_bytes=scalar_or_array(kv_bytes),
            activation_bytes=activation,
            runtime_bytes=runtime,
            total_bytes=scalar_or_array(total),
            capacity_bytes=capacity,
            budget_bytes=weight_bytes + activation + runtime + pool,
            headroom_bytes=headroom,
        ),
        fits=scalar_or_array(np.asarray(headroom) >= 0),
        kv_pool_bytes=pool,
        kv_pool_tokens=memory.pool_tokens(pool, per_sequence, ctx),
        max_concurrency=fitting,
        max_context=memory.max_context(pool, users, layout, kv_bpe, act_bpe, limit=limit, **cache),
        decode=decode,
        prefill=prefill,
    )


def _activation_bytes(record: catalog.Model, profile: engines.EngineProfile, act_bpe: float, count: int) -> float:
    width = architecture.ffn_width_per_token(record)
    formulas = {
        "vllm": lambda: memory.vllm_activation_bytes(
            profile.batched_tokens, record.hidden_size, width, record.vocab_size, profile.max_sequences, act_bpe, count
        ),
        "llama.cpp": lambda: memory.llama_cpp_compute_buffer_bytes(
            profile.batched_tokens, record.hidden_size, width, record.vocab_size
        ),
    }
    return float(formulas[profile.activation]())
