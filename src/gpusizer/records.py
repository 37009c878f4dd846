"""Catalogue records: frozen, validated data of accelerators, systems and model architectures.

Records hold data only: no importer, no presentation, no formula beyond expanding what is stored
(``Model.layers`` repeats the layer pattern, ``GPU.capacity`` picks the usable memory). Quantities
are written in the files as text with an explicit prefix (``"80 GB"`` is 80e9 bytes, ``"79.65 GiB"``
is 79.65 * 2**30) and become base-unit floats when a record is validated. Parameter totals are
``gpusizer.architecture.parameter_counts(model)``; a record from a Hugging Face config is
``gpusizer.hf.from_hf_config(...)``; ``repr``, ``str`` and the notebook HTML come from the renderers
``gpusizer.display`` registers in ``gpusizer.presentation``. Loading and lookup (``gpu("h200")``) are
in ``gpusizer.catalog``, which re-exports every class defined here.

Every record carries ``source`` and ``checked``. A figure the vendor did not publish stays ``None``:
nothing is derived from another precision's rate.

>>> Interconnect(description="PCIe 5.0 x16", pcie_generation=5).switched
False
"""

from __future__ import annotations

import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from gpusizer import units
from gpusizer.presentation import Presented

__all__ = [
    "GPU",
    "MLA",
    "RATE_PRECISIONS",
    "DenseRates",
    "FfnKind",
    "Interconnect",
    "LayerKind",
    "LinearAttention",
    "Mamba",
    "MoE",
    "Model",
    "Published",
    "Record",
    "SparseAttention",
    "StoredWeights",
    "System",
    "Vision",
]


class Record(BaseModel):
    """Base of every catalogue record: frozen, strict about unknown keys."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


def _quantity(unit: str) -> Any:
    return BeforeValidator(lambda value: None if value is None else units.parse(value, unit))


Bytes = Annotated[float, _quantity("B"), Field(gt=0)]
BytesPerSecond = Annotated[float, _quantity("B/s"), Field(gt=0)]
FlopsPerSecond = Annotated[float, _quantity("FLOP/s"), Field(gt=0)]
Watts = Annotated[float, _quantity("W"), Field(gt=0)]
BitsPerSecond = Annotated[float, _quantity("b/s"), Field(gt=0)]
PositiveInt = Annotated[int, Field(gt=0)]
NonNegativeInt = Annotated[int, Field(ge=0)]
NonNegativeFloat = Annotated[float, Field(ge=0)]
Sources = Annotated[tuple[str, ...], BeforeValidator(lambda v: (v,) if isinstance(v, str) else v)]

#: Precisions a datasheet quotes a dense tensor (or vector, for fp32) rate for.
RATE_PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8", "fp6", "fp4")


class DenseRates(Record):
    """Dense (no structured sparsity) peak throughput per precision; ``None`` when unpublished."""

    fp32: FlopsPerSecond | None = None
    """FP32 (non-tensor) peak. [FLOP/s]"""
    tf32: FlopsPerSecond | None = None
    """TF32 tensor peak, dense. [FLOP/s]"""
    fp16: FlopsPerSecond | None = None
    """FP16 tensor peak with FP32 accumulate, dense. [FLOP/s]"""
    fp16_acc16: FlopsPerSecond | None = None
    """FP16 tensor peak with FP16 accumulate, dense, where it differs from ``fp16`` (GeForce: twice). [FLOP/s]"""
    bf16: FlopsPerSecond | None = None
    """BF16 tensor peak with FP32 accumulate, dense. [FLOP/s]"""
    fp8: FlopsPerSecond | None = None
    """FP8 tensor peak with FP32 accumulate, dense. [FLOP/s]"""
    int8: FlopsPerSecond | None = None
    """INT8 tensor peak, dense. [OP/s]"""
    fp6: FlopsPerSecond | None = None
    """FP6 tensor peak, dense. [FLOP/s]"""
    fp4: FlopsPerSecond | None = None
    """FP4 tensor peak, dense, in the format named by ``GPU.fp4_format``. [FLOP/s]"""


class Interconnect(Record):
    """How one accelerator talks to its peers and its host."""

    description: str
    """The vendor's wording, e.g. ``"NVLink 4 (18 links) + NVSwitch (HGX)"``."""
    nvlink_generation: PositiveInt | None = None
    """NVLink generation (3, 4, 5, 6), ``None`` without NVLink."""
    bandwidth: BytesPerSecond | None = None
    """Scale-up bandwidth per GPU, both directions added, as vendors quote it. [B/s]"""
    switched: bool = False
    """True when a switch gives every pair of GPUs in the domain the full ``bandwidth``."""
    pcie_generation: PositiveInt | None = None
    """PCI Express generation of the host link."""
    pcie_lanes: PositiveInt | None = None
    """PCI Express lanes of the host link."""
    peer_to_peer: bool | None = None
    """Whether GPU-to-GPU transfers over PCIe work without the host (disabled on GeForce cards)."""


class GPU(Presented, Record):
    """One accelerator as a datasheet describes it."""

    id: str
    """Catalogue id, lower-case with dashes (``h100-sxm``)."""
    vendor: str
    name: str
    aliases: tuple[str, ...] = ()
    """Other names, matched case-insensitively (``H100``, ``4090``)."""
    architecture: str | None = None
    launch_year: int | None = None
    status: str | None = None
    form_factor: str | None = None
    memory: Bytes
    """Memory capacity as the vendor states it (``"80 GB"``, ``"96 GiB"``). [B]"""
    memory_usable: Bytes | None = None
    """Capacity the driver reports (``nvidia-smi memory.total``) where known. [B]"""
    memory_type: str | None = None
    memory_bandwidth: BytesPerSecond
    """Peak DRAM/HBM bandwidth from the datasheet. [B/s]"""
    l2_cache: Bytes | None = None
    """L2 (or last-level) cache. [B]"""
    dense: DenseRates = Field(default_factory=DenseRates)  # a factory: builds no validator at import
    """Dense peak rates per precision."""
    fp4_format: str | None = None
    """FP4 format behind ``dense.fp4`` (NVFP4, MXFP4)."""
    native_fp8: bool = False
    """Tensor cores compute in FP8."""
    native_fp4: bool = False
    """Tensor cores compute in FP4."""
    native_int4: bool | None = None
    """Tensor cores compute in INT4; ``None`` if unknown."""
    interconnect: Interconnect
    scale_up_domain: PositiveInt = 1
    """Largest number of GPUs joined by the scale-up fabric."""
    tdp: Watts | None = None
    """Board or module power limit. [W]"""
    ecc: str | None = None
    mig: bool | None = None
    derived_fields: tuple[str, ...] = ()
    """Fields computed from another published figure rather than read from a datasheet."""
    confidence: Literal["high", "medium", "low"] = "medium"
    source: Sources
    """Where the figures were read (URL or document, page or table)."""
    checked: datetime.date
    """When the figures were last checked against the source."""
    notes: str = ""

    @property
    def capacity(self) -> float:
        """Memory a program can allocate: the driver-reported size where known, else the stated one. [B]"""
        return self.memory_usable if self.memory_usable is not None else self.memory

    @model_validator(mode="after")
    def _usable_below_stated(self) -> GPU:
        if self.memory_usable is not None and self.memory_usable > self.memory * 1.1:
            raise ValueError(f"{self.id}: memory_usable exceeds the stated memory by more than 10%")
        return self


class System(Presented, Record):
    """A multi-GPU product (HGX board, NVL72 rack) built from one catalogue GPU."""

    id: str
    name: str
    vendor: str
    gpu: str
    """Catalogue id of the GPU the system is built from."""
    gpu_count: PositiveInt
    total_memory: Bytes | None = None
    """HBM of all GPUs together. [B]"""
    aggregate_bandwidth: BytesPerSecond | None = None
    """HBM bandwidth of all GPUs together. [B/s]"""
    scale_up_fabric: str | None = None
    scale_up_bandwidth: BytesPerSecond | None = None
    """Scale-up bandwidth per GPU, both directions. [B/s]"""
    scale_out_bandwidth: BitsPerSecond | None = None
    """Scale-out network per GPU, one direction, as NICs are rated. [b/s]"""
    scale_out_nic: str | None = None
    power: Watts | None = None
    status: str | None = None
    confidence: Literal["high", "medium", "low"] = "medium"
    source: Sources
    checked: datetime.date
    notes: str = ""


# --- models ---------------------------------------------------------------------------------------

LayerKind = Literal["full", "sliding", "chunked", "linear", "mamba", "none"]
FfnKind = Literal["dense", "moe", "none"]


class MoE(Record):
    """Mixture-of-experts feed-forward layers."""

    num_experts: PositiveInt
    """Routed experts per MoE layer."""
    experts_per_token: PositiveInt
    """Routed experts each token uses (top-k)."""
    expert_intermediate_size: PositiveInt
    """FFN width of one routed expert."""
    num_shared_experts: NonNegativeInt = 0
    """Experts every token uses."""
    shared_intermediate_size: PositiveInt | None = None
    """Total FFN width of the shared experts; default ``num_shared_experts * expert_intermediate_size``."""
    router_bias: bool = False
    """The router (gate) has a bias vector."""
    expert_bias: bool = False
    """Expert projections have biases (gpt-oss)."""
    score_correction_bias: bool = False
    """A per-expert routing bias vector (DeepSeek-V3 ``e_score_correction_bias``)."""
    shared_expert_gate: bool = False
    """A scalar sigmoid gate on the shared expert (Qwen2-MoE, Qwen3-Next)."""

    @model_validator(mode="after")
    def _top_k_within_experts(self) -> MoE:
        if self.experts_per_token > self.num_experts:
            raise ValueError("experts_per_token must not exceed num_experts")
        return self

    @property
    def shared_width(self) -> int:
        """Total FFN width of the shared experts."""
        if self.shared_intermediate_size is not None:
            return self.shared_intermediate_size if self.num_shared_experts else 0
        return self.num_shared_experts * self.expert_intermediate_size


class MLA(Record):
    """Multi-head latent attention (DeepSeek-V2/V3, Kimi K2): the cache holds one latent per token."""

    q_lora_rank: PositiveInt | None = None
    """Rank of the query down-projection; ``None`` projects queries directly."""
    kv_lora_rank: PositiveInt
    """Width of the compressed KV latent."""
    qk_nope_head_dim: PositiveInt
    qk_rope_head_dim: PositiveInt
    v_head_dim: PositiveInt


class LinearAttention(Record):
    """Gated DeltaNet linear-attention layers (Qwen3-Next): a fixed-size state per sequence."""

    num_key_heads: PositiveInt
    num_value_heads: PositiveInt
    key_head_dim: PositiveInt
    value_head_dim: PositiveInt
    conv_kernel: PositiveInt
    state_bytes_per_element: float = 4.0
    """Engines keep the recurrent state in FP32. [B]"""


class SparseAttention(Record):
    """Top-k sparse attention with a lightning indexer (DeepSeek Sparse Attention, DeepSeek-V3.2; GLM-5).

    Each query scores every cached key with a small multi-head indexer, then the main attention
    attends to the ``index_topk`` best keys only. The indexer keeps its own key per token and layer.
    deepseek-ai/DeepSeek-V3.2-Exp:inference/model.py@6d8cb70dfdd6f37c83c5208105a3e2c8da117485 (``Indexer``).
    """

    index_n_heads: PositiveInt
    """Indexer query heads :math:`H_I`."""
    index_head_dim: PositiveInt
    """Indexer head width :math:`d_I` (also the width of its single cached key)."""
    index_topk: PositiveInt
    """Keys each query's main attention attends to :math:`k`. [token]"""
    index_cache_bytes_per_element: Annotated[float, Field(gt=0)] = 1.03125
    """Indexer key cache per element: FP8 plus one FP32 scale per 128 elements (``k_cache`` and
    ``k_scale_cache`` of the official inference code). [B]"""


class Mamba(Record):
    """Mamba-2 state-space layers (Nemotron-H): a fixed-size state per sequence."""

    num_heads: PositiveInt
    head_dim: PositiveInt
    state_size: PositiveInt
    """SSM state dimension ``d_state``."""
    n_groups: PositiveInt
    conv_kernel: PositiveInt
    conv_bias: bool = True
    proj_bias: bool = False
    state_bytes_per_element: float = 4.0
    """``mamba_ssm_cache_dtype`` float32 in the published configs. [B]"""


class Vision(Record):
    """A ViT-style vision encoder and its projector, counted where the published total includes it."""

    hidden_size: PositiveInt
    num_layers: PositiveInt
    intermediate_size: PositiveInt
    patch_size: PositiveInt
    image_size: PositiveInt
    num_channels: PositiveInt = 3
    class_token: bool = False
    projector_params: NonNegativeInt = 0
    """Parameters of the vision-to-text projector, computed by the importer from its shapes."""
    gated_mlp: bool = False
    """Gated MLP (three matrices, with biases: Qwen2.5-VL) rather than two."""
    norm: Literal["layer", "rms"] = "layer"
    """LayerNorm (weight and bias) or RMSNorm (weight) in each block."""
    temporal_patch_size: PositiveInt = 1
    """Frames per patch of the patch embedding (Qwen-VL's Conv3d: 2)."""
    position_embeddings: bool = True
    """A learned embedding per patch position (SigLIP, Llama 4); False for rotary towers (Qwen2.5-VL)."""
    patch_bias: bool = True
    """Bias of the patch embedding."""
    final_norm: bool = True
    """A LayerNorm after the last block (Qwen2.5-VL's sits in the merger, counted in ``projector_params``)."""
    pre_norm: bool = False
    """A LayerNorm before the first block (CLIP's ``pre_layrnorm``, in LLaVA)."""
    layer_scale: bool = False
    """Two learned per-channel scales per block (InternViT's ``ls1`` and ``ls2``: ``2w`` parameters)."""
    grid_pinpoints: tuple[tuple[PositiveInt, PositiveInt], ...] | None = None
    """LLaVA-NeXT's anyres canvases (height, width) (``image_grid_pinpoints``); None elsewhere. [px]"""
    spatial_merge_size: PositiveInt = 1
    """Patches per side merged into one LLM token: Qwen-VL's merger and Mistral 3's patch merger (2), Llama 4's
    pixel shuffle of ratio 1/2 (2); 1 where each patch is a token or the rule is fixed (Gemma 3). [-]"""


class Published(Record):
    """The publisher's own parameter count and the convention it follows."""

    total: Annotated[float, Field(gt=0)] | None = None
    """Published total parameters. [param]"""
    active: Annotated[float, Field(gt=0)] | None = None
    """Published active parameters per token (MoE). [param]"""
    text: str = ""
    """The published wording."""
    exact: bool = False
    """True when the figure is exact (a table of counts), False for a rounded label like "70B"."""
    includes_vision: bool = False
    includes_mtp: bool = False
    active_includes_embedding: bool = True
    active_includes_head: bool = True
    source: Sources = ()


class StoredWeights(Record):
    """A model's weights as its files store them, in the parts layouts treat apart (``parallel.WeightParts``),
    read from the files' tensor headers (a GGUF file: ``gpusizer.gguf``; safetensors: ``hf.with_stored_weights``).
    Sizing at the checkpoint's own precision uses these bytes instead of counting parameters times bits."""

    layers: NonNegativeFloat
    """Decoder layers without routed experts, embedding or head; vectors included. [B]"""
    replicated: NonNegativeFloat
    """The part of ``layers`` every tensor-parallel rank keeps whole (1-D tensors). [B]"""
    experts: NonNegativeFloat = 0.0
    """Routed experts. [B]"""
    embedding: NonNegativeFloat
    """Token embedding table. [B]"""
    head: NonNegativeFloat = 0.0
    """LM head (0 when tied to the embedding). [B]"""
    by_type: tuple[tuple[str, int], ...] = ()
    """Bytes by storage type (ggml ``("Q4_K", 3_900_000_000)`` or safetensors ``("I32", ...)``), largest first:
    the files' quant mix. [B]"""


class Model(Presented, Record):
    """A transformer (or hybrid) language model described by its architecture."""

    id: str
    name: str
    family: str
    hf_repo: str | None = None
    hidden_size: PositiveInt
    num_layers: PositiveInt
    vocab_size: PositiveInt
    tie_embeddings: bool = False
    num_heads: PositiveInt
    num_kv_heads: PositiveInt
    head_dim: PositiveInt
    intermediate_size: PositiveInt | None = None
    """FFN width of the dense layers."""
    ffn_gated: bool = True
    """Gated FFN (SwiGLU/GeGLU, three matrices) or plain (two matrices)."""
    ffn_bias: bool = False
    qkv_bias: bool = False
    o_bias: bool = False
    qk_norm: bool = False
    """Per-head RMSNorm on queries and keys (Qwen3, Gemma 3)."""
    attention_output_gate: bool = False
    """Queries are projected twice as wide to gate the attention output (Qwen3-Next)."""
    attention_sinks: bool = False
    """One learned softmax-bias scalar per head and layer (gpt-oss); holds no KV."""
    norm: Literal["rms", "layer", "layer_nobias"] = "rms"
    norms_per_layer: NonNegativeInt = 2
    fused_qkv: bool = False
    """Falcon-style fused projection for MQA: informational, counted like separate projections."""
    layer_types: tuple[LayerKind, ...] = ("full",)
    """Mixer of each layer; a shorter tuple repeats cyclically over ``num_layers``."""
    ffn_types: tuple[FfnKind, ...] = ("dense",)
    """FFN of each layer; a shorter tuple repeats cyclically over ``num_layers``."""
    first_dense_layers: NonNegativeInt = 0
    """Leading layers whose FFN is dense whatever ``ffn_types`` says (DeepSeek ``first_k_dense_replace``)."""
    sliding_window: PositiveInt | None = None
    """Tokens a sliding-window layer attends to."""
    attention_chunk_size: PositiveInt | None = None
    """Tokens a chunked-attention layer attends to (Llama 4)."""
    moe: MoE | None = None
    mla: MLA | None = None
    linear_attention: LinearAttention | None = None
    mamba: Mamba | None = None
    sparse_attention: SparseAttention | None = None
    """Top-k sparse attention on every attention layer (DeepSeek Sparse Attention); None: dense."""
    mtp_layers: NonNegativeInt = 0
    """Multi-token-prediction modules stored in the checkpoint (each a full decoder layer)."""
    vision: Vision | None = None
    max_context: PositiveInt | None = None
    """``max_position_embeddings``. [token]"""
    weights: str = "bf16"
    """Precision of the published checkpoint's linear weights (a key of ``precision.PRECISIONS``)."""
    expert_weights: str | None = None
    """Precision of the routed experts when it differs from ``weights`` (gpt-oss MXFP4)."""
    unquantized_roles: tuple[Literal["attention", "ffn"], ...] = ()
    """Linear weights the checkpoint keeps at the activation dtype in every layer although ``weights``
    quantizes the rest (its ``modules_to_not_convert`` / ``ignore``): the mixers' projections
    (``attention``) or the dense FFN and shared experts (``ffn``)."""
    unquantized_layers: tuple[NonNegativeInt, ...] = ()
    """Decoder layers (0-based) whose non-routed linear weights all stay at the activation dtype (Meta's
    FP8 Llama 3.1 405B: the first and the last)."""
    activation_dtype: str = "bf16"
    """Activation dtype (``torch_dtype``); the default KV-cache precision."""
    stored_weights: StoredWeights | None = None
    """The weights as the checkpoint's files store them (a GGUF file's tensors), used instead of
    parameters times bits when sizing at ``weights`` and ``expert_weights``; None: computed."""
    published: Published = Field(default_factory=Published)
    source: Sources
    checked: datetime.date
    notes: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> Model:
        if self.mla is None and self.num_heads % self.num_kv_heads:
            raise ValueError(f"{self.id}: num_heads must be a multiple of num_kv_heads")
        needs = {
            "sliding": self.sliding_window,
            "chunked": self.attention_chunk_size,
            "linear": self.linear_attention,
            "mamba": self.mamba,
        }
        for kind, value in needs.items():
            if kind in self.layer_types and value is None:
                raise ValueError(f"{self.id}: layer type {kind!r} needs its parameters")
        if "moe" in self.ffn_types and self.moe is None:
            raise ValueError(f"{self.id}: ffn type 'moe' needs a [moe] table")
        if "dense" in self.ffn_types + (("dense",) if self.first_dense_layers else ()):
            if self.intermediate_size is None:
                raise ValueError(f"{self.id}: dense FFN layers need intermediate_size")
        if len(self.layer_types) > self.num_layers or len(self.ffn_types) > self.num_layers:
            raise ValueError(f"{self.id}: layer pattern longer than num_layers")
        if any(layer >= self.num_layers for layer in self.unquantized_layers):
            raise ValueError(f"{self.id}: unquantized_layers names a layer past num_layers")
        return self

    @property
    def layers(self) -> tuple[LayerKind, ...]:
        """Mixer kind of every layer, pattern expanded to ``num_layers``."""
        pattern = self.layer_types
        return tuple(pattern[i % len(pattern)] for i in range(self.num_layers))

    @property
    def ffns(self) -> tuple[FfnKind, ...]:
        """FFN kind of every layer, pattern expanded and the leading dense layers applied."""
        pattern = self.ffn_types
        return tuple(
            "dense" if i < self.first_dense_layers else pattern[i % len(pattern)]
            for i in range(self.num_layers)
        )
