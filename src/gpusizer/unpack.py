"""Records to numbers: a catalogue model at its precisions as one record of numbers, and records of
numbers stacked into records of arrays.

``model_numbers(record, weights, expert_weights, kv_cache)`` is the one unpacker ``estimate``,
``speed`` and ``sweep`` share: the weight bytes each layout treats apart (``parallel.weight_parts``),
the streamed bytes and parameter counts of an engine step, the KV layout and the bytes per element
(``precision.bytes_per_element``: bits become bytes there, nowhere else). ``checkpoint_precisions``
fills the checkpoint's defaults. ``stack`` turns a list of such records into one record of arrays
(``sweep``), ``column`` and ``objects`` lay values over a broadcast grid by integer codes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, fields, is_dataclass
from functools import cache
from typing import Any, cast

import numpy as np

from gpusizer import architecture, catalog, memory, parallel
from gpusizer import precision as precisions

__all__ = ["ModelNumbers", "cell", "checkpoint_precisions", "column", "model_numbers", "objects", "stack", "unique"]


def checkpoint_precisions(
    record: catalog.Model, weights: str | None, kv_cache: str | None
) -> tuple[str, str | None, str]:
    """Names of the weight, routed-expert and KV-cache precisions, defaults filled from the checkpoint.

    ``weights`` None keeps the checkpoint's (``Model.weights`` and ``Model.expert_weights``); a given
    ``weights`` applies to the routed experts too. ``kv_cache`` None is the activation dtype.
    """
    if kv_cache is not None:
        precisions.kv_bytes_per_element(kv_cache)  # checks the name before any cache sees it
    w = precisions.precision(weights if weights is not None else record.weights, "weights").name
    experts = None if weights is not None or record.expert_weights is None else record.expert_weights
    return w, experts, kv_cache if kv_cache is not None else record.activation_dtype


@dataclass(frozen=True)
class ModelNumbers:
    """A model at one set of precisions, as the numbers its memory and its speed need."""

    num_layers: int
    hidden: int
    vocab: int
    ffn_width: int
    """FFN width a token passes through (``architecture.ffn_width_per_token``). [-]"""
    dense_params: float
    """Linear parameters outside the routed experts and the head. [-]"""
    head_params: float
    """LM-head parameters (a tied embedding counts as the head). [-]"""
    active_expert_params: float
    """Routed-expert parameters a token passes through. [-]"""
    dense_bytes: float
    """Linear weights outside the routed experts and the head, plus vectors, as streamed. [B]"""
    streamed_head_bytes: float
    """The LM head as streamed (a tied embedding once, as the head). [B]"""
    stored_bytes: float
    """Every weight as the checkpoint stores it (``precision.stored_weight_bytes``). [B]"""
    layer_bytes: float
    """Decoder layers without routed experts, embedding or head (``parallel.weight_parts``). [B]"""
    expert_bytes: float
    """Routed experts. [B]"""
    embedding_bytes: float
    """Embedding table as stored. [B]"""
    head_bytes: float
    """LM head as stored (0 when tied to the embedding). [B]"""
    replicated_bytes: float
    """Weights every tensor-parallel rank keeps whole: vectors, and MLA's down-projections. [B]"""
    num_experts: int
    experts_per_token: int
    moe_layers: int
    allreduce_layers: int
    """Tensor-parallel all-reduces per forward pass: one per mixer and one per dense or MoE FFN."""
    dense_ffn_layers: int
    """Layers with a dense FFN (all-reduced, not all-to-all'd, under expert parallelism)."""
    windows: tuple[tuple[float, int], ...]
    """``(window, layers)`` of the attention layers (``inf``: full attention). [token, -]"""
    heads: int
    decode_dims: tuple[int, int]
    """Query-key and value head dimensions in decode (MLA: absorbed). [-]"""
    prefill_dims: tuple[int, int]
    """Query-key and value head dimensions in prefill. [-]"""
    state_elements: float
    """Recurrent-state elements of the linear-attention and Mamba layers. [-]"""
    layout: architecture.KvLayout
    kv_bpe: float
    """KV-cache bytes per element. [B]"""
    act_bpe: float
    """Activation bytes per element. [B]"""
    limit: int
    """Longest context the model takes. [token]"""
    weights: precisions.Precision
    experts: precisions.Precision
    expert_width: int = 0
    """Intermediate width of one routed expert (0 without routed experts). [-]"""
    mxfp4_experts: bool = False
    """Whether the routed experts are stored in MXFP4 (which engines may pad: ``engines.padded_expert_share``)."""
    dispatch_bpe: float = 2.0
    """Bytes per element of the tokens an MoE dispatch sends (``dispatch_bytes_per_element``). [B]"""
    selected_keys: float = np.inf
    """Keys a query's attention reads under top-k sparse attention (``SparseAttention.index_topk``; ``inf``:
    dense attention). [token]"""
    index_width: int = 0
    """Sparse-attention indexer heads times head width, :math:`H_I d_I` (0: no indexer). [-]"""

@cache  # records are frozen and hashable
def model_numbers(record: catalog.Model, weights: str, expert_weights: str | None, kv_cache: str) -> ModelNumbers:
    """The numbers of ``record`` at its weight, routed-expert and KV-cache precisions (names)."""
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
    parts = parallel.weight_parts(record, weights, expert_weights, record.activation_dtype)
    act_bpe = precisions.bytes_per_element(act)
    return ModelNumbers(
        num_layers=record.num_layers,
        hidden=record.hidden_size,
        vocab=record.vocab_size,
        ffn_width=architecture.ffn_width_per_token(record),
        dense_params=float(counts.linear),
        head_params=float(head),
        active_expert_params=float(counts.experts_active),
        **_weight_bytes(record, counts, (w, table, act), expert_weights, parts),
        layer_bytes=parts.layers,
        expert_bytes=parts.experts,
        embedding_bytes=parts.embedding,
        head_bytes=parts.head,
        replicated_bytes=parts.replicated,
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
        act_bpe=act_bpe,
        limit=record.max_context or 2**24,
        weights=w,
        experts=e,
        expert_width=record.moe.expert_intermediate_size if record.moe else 0,
        mxfp4_experts=e.name == "mxfp4" and record.moe is not None,
        dispatch_bpe=dispatch_bytes_per_element(e, act_bpe), **sparse_numbers(record),
    )


def _weight_bytes(
    record: catalog.Model, counts: architecture.ParameterCounts, formats: tuple[precisions.Precision, ...],
    expert_weights: str | None, parts: parallel.WeightParts,
) -> dict[str, Any]:
    """``dense_bytes``, ``streamed_head_bytes`` and ``stored_bytes`` of ``ModelNumbers``: as the files store
    them when ``precision.stored_applies`` (a tied embedding streamed once, as the head), else counted.
    ``formats``: the weights', the embedding table's and the activations' precisions."""
    w, table, act = formats
    if precisions.stored_applies(record, w.name, expert_weights, record.activation_dtype):
        return {
            "dense_bytes": parts.layers,
            "streamed_head_bytes": parts.head or parts.embedding,
            "stored_bytes": parts.layers + parts.experts + parts.embedding + parts.head,
        }
    head = counts.head or counts.embedding  # a tied embedding is streamed once, as the head
    return {
        "dense_bytes": memory.weight_bytes(counts.linear - counts.unquantized, precisions.bytes_per_element(w))
        + memory.weight_bytes(counts.unquantized, precisions.bytes_per_element(table))
        + memory.weight_bytes(counts.vector, precisions.bytes_per_element(act)),
        "streamed_head_bytes": memory.weight_bytes(head, precisions.bytes_per_element(table)),
        "stored_bytes": precisions.stored_weight_bytes(counts, w, expert_weights, record.activation_dtype),
    }


def sparse_numbers(record: catalog.Model) -> dict[str, Any]:
    """``selected_keys`` and ``index_width`` of ``ModelNumbers`` (``inf`` and 0 for dense attention)."""
    sparse = record.sparse_attention
    if sparse is None:
        return {"selected_keys": np.inf, "index_width": 0}
    return {"selected_keys": float(sparse.index_topk), "index_width": sparse.index_n_heads * sparse.index_head_dim}


#: Expert formats whose engines quantise the tokens to the experts' input format before the MoE dispatch:
#: DeepEP's kernels dispatch FP8 and combine BF16 (deepseek-ai/DeepEP:docs/legacy.md@0297fc80, "FP8
#: dispatching and BF16 combining", as SGLang and vLLM run them for block-FP8 checkpoints); NVFP4 is fused into
#: the dispatch for W4A4 experts ("halves traffic": lmsys.org/blog/2025-09-25-gb200-part-2; vLLM "NVFP4 MoE
#: dispatch": blog.vllm.ai 2026-02-03). MXFP4 (gpt-oss) runs with 16-bit activations on Hopper (W4A16), so
#: its dispatch stays at the activation precision.
QUANTISED_DISPATCH = ("fp8", "nvfp4")


def dispatch_bytes_per_element(experts: precisions.Precision, act_bpe: float) -> float:
    """Bytes per element of a dispatched token: the experts' format (with its scales) when its engines quantise
    the tokens before the dispatch (``QUANTISED_DISPATCH``), else the activations'; the combine returns expert
    outputs at the activation precision. [B]"""
    return min(precisions.bytes_per_element(experts), act_bpe) if experts.name in QUANTISED_DISPATCH else act_bpe



def cell(value: Any) -> np.ndarray:
    """A 0-d object array holding ``value`` (``np.asarray`` would unpack tuples and records)."""
    out = np.empty((), dtype=object)
    out[()] = value
    return out


def unique(values: np.ndarray) -> tuple[list[Any], np.ndarray]:
    """Distinct entries of an object array in first-seen order, and each entry's index into them."""
    seen: dict[Any, int] = {}
    codes = [seen.setdefault(value, len(seen)) for value in values.flat]
    return list(seen), np.asarray(codes, dtype=np.intp).reshape(values.shape)


def column(values: list[Any], codes: np.ndarray) -> np.ndarray:
    """``values[codes]``: one value per distinct record spread over the records' array shape."""
    array = np.asarray(values) if isinstance(values[0], int | float | np.number) else objects(values)
    return array[codes]


def objects(values: Sequence[Any]) -> np.ndarray:
    """A 1-d object array of ``values``, each kept whole."""
    out = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):  # element by element: numpy would unpack tuples
        out[i] = value
    return out


def stack(records: list[Any], codes: np.ndarray) -> Any:
    """One record of arrays from records of numbers (``ModelNumbers``, ``KvLayout``):
    every field becomes ``values[codes]``. Variable-length groups (``windows``, ``KvLayout.windowed``:
    pairs of window and count) are padded with ``(1, 0)``, a group that counts for nothing."""
    first = records[0]
    names = list(cast(Any, first)._fields) if isinstance(first, tuple) else [f.name for f in fields(first)]
    out = {}
    for name in names:
        values = [getattr(record, name) for record in records]
        if hasattr(values[0], "_fields") or is_dataclass(values[0]):
            out[name] = stack(values, codes)
        elif isinstance(values[0], tuple) and all(isinstance(v, tuple) and all(isinstance(p, tuple) for p in v)
                                                  for v in values):
            width = max(len(v) for v in values)
            padded = [v + ((1, 0),) * (width - len(v)) for v in values]
            out[name] = tuple(
                (column([v[k][0] for v in padded], codes), column([v[k][1] for v in padded], codes))
                for k in range(width)
            )
        elif isinstance(values[0], tuple):
            out[name] = tuple(column(list(group), codes) for group in zip(*values, strict=True))
        else:
            out[name] = column(values, codes)
    return type(first)(**out)


