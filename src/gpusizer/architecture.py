r"""Transformer anatomy from numbers: parameter counts and KV-cache elements per token.

Every block type has a small function that returns its parameters as two numbers, ``(matrix,
vector)``: *matrix* parameters are the 2-D weights of linear layers, which quantization formats
store at low precision; *vector* parameters are norms, biases, routing vectors, convolution and
state-space scalars, which checkpoints keep in 16-bit. ``parameter_counts`` walks a catalogue
``Model`` layer by layer with these functions; it adds no formula of its own.

The counts follow the Hugging Face weight layout (one tensor per projection). They are checked
against published totals in ``tests/test_architecture.py``.

Deliberate omissions: rotary tables and other non-persistent buffers (not parameters); the
vision encoder's pre-norm and any per-image-tile embeddings (under 0.01 % of the totals involved).
"""

from __future__ import annotations

from typing import NamedTuple

from gpusizer.catalog import MLA, LinearAttention, Mamba, Model, MoE, SparseAttention, Vision

__all__ = [
    "KvLayout",
    "ParameterCounts",
    "attention_params",
    "deltanet_params",
    "ffn_params",
    "ffn_width_per_token",
    "indexer_params",
    "kv_layout",
    "mamba2_params",
    "mla_params",
    "moe_params",
    "norm_params",
    "parameter_counts",
    "replicated_params",
    "vit_params",
]


class Split(NamedTuple):
    """Parameters of one block: 2-D linear weights and 1-D vectors."""

    matrix: int
    vector: int

    def __add__(self, other: object) -> Split:  # type: ignore[override]
        if not isinstance(other, Split):
            return NotImplemented
        return Split(self.matrix + other.matrix, self.vector + other.vector)

    def scaled(self, n: int) -> Split:
        return Split(self.matrix * n, self.vector * n)

    @property
    def total(self) -> int:
        return self.matrix + self.vector


ZERO = Split(0, 0)


def attention_params(
    hidden: int,
    num_heads: int,
    num_kv_heads: int,
    head_dim: int,
    *,
    qkv_bias: bool = False,
    o_bias: bool = False,
    qk_norm: bool = False,
    output_gate: bool = False,
    sinks: bool = False,
) -> Split:
    r"""Parameters of one multi-head / grouped-query / multi-query attention block.

    Parameters
    ----------
    hidden : int
        Model width :math:`d`. [-]
    num_heads, num_kv_heads, head_dim : int
        Query heads :math:`n_h`, key/value heads :math:`n_{kv}`, head width :math:`d_h`. [-]
    qkv_bias, o_bias : bool
        Biases on the Q/K/V and output projections.
    qk_norm : bool
        Per-head RMSNorm on queries and keys (two vectors of :math:`d_h`).
    output_gate : bool
        Queries projected twice as wide, the second half gating the output (Qwen3-Next).
    sinks : bool
        One learned sink logit per head (gpt-oss).

    Returns
    -------
    Split
        ``(matrix, vector)`` parameters. [param]

    Notes
    -----
    .. math:: P = d\,n_h d_h (1 + g) + 2\,d\,n_{kv} d_h + n_h d_h\,d

    with :math:`g = 1` for an output gate. GQA: J. Ainslie et al., arXiv:2305.13245.

    Examples
    --------
    >>> attention_params(4096, 32, 8, 128)  # Llama 3 8B: 4096*(4096+1024+1024) + 4096*4096
    Split(matrix=41943040, vector=0)
    """
    q_out = num_heads * head_dim * (2 if output_gate else 1)
    kv_out = 2 * num_kv_heads * head_dim
    matrix = hidden * (q_out + kv_out) + num_heads * head_dim * hidden
    vector = (
        (q_out + kv_out) * qkv_bias + hidden * o_bias + 2 * head_dim * qk_norm + num_heads * sinks
    )
    return Split(matrix, vector)


def mla_params(hidden: int, num_heads: int, mla: MLA) -> Split:
    r"""Parameters of one multi-head latent attention block (DeepSeek-V2/V3, Kimi K2).

    Notes
    -----
    Queries: :math:`d\,r_q + r_q\,n_h(d_n + d_r)` with a low-rank :math:`r_q` (or
    :math:`d\,n_h(d_n+d_r)` without); keys and values: :math:`d(r_{kv} + d_r) + r_{kv} n_h (d_n + d_v)`;
    output :math:`n_h d_v d`; RMSNorms on the two latents. DeepSeek-AI, "DeepSeek-V2",
    arXiv:2405.04434, section 2.1.

    Examples
    --------
    >>> from gpusizer.catalog import MLA
    >>> mla_params(7168, 128, MLA(q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128,
    ...                          qk_rope_head_dim=64, v_head_dim=128))
    Split(matrix=187105280, vector=2048)
    """
    qk_head = mla.qk_nope_head_dim + mla.qk_rope_head_dim
    if mla.q_lora_rank is None:
        query = Split(hidden * num_heads * qk_head, 0)
    else:
        query = Split(hidden * mla.q_lora_rank + mla.q_lora_rank * num_heads * qk_head, mla.q_lora_rank)
    kv = Split(
        hidden * (mla.kv_lora_rank + mla.qk_rope_head_dim)
        + mla.kv_lora_rank * num_heads * (mla.qk_nope_head_dim + mla.v_head_dim),
        mla.kv_lora_rank,
    )
    return query + kv + Split(num_heads * mla.v_head_dim * hidden, 0)


def indexer_params(hidden: int, query_rank: int, sparse: SparseAttention) -> Split:
    r"""Parameters of one lightning indexer of DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5): ``(matrix, vector)``.

    ``query_rank`` is the width its queries are projected from: MLA's query latent :math:`r_q` (``q_lora_rank``),
    or the model width :math:`d` without one; ``sparse`` gives :math:`H_I` heads of :math:`d_I`.

    Notes
    -----
    .. math:: P = r_q H_I d_I + d\,d_I + d\,H_I + 2 d_I

    Query projection ``wq_b`` from the query latent, one key ``wk`` shared by the heads, the head
    weights ``weights_proj``, and a LayerNorm (weight and bias) on the key:
    deepseek-ai/DeepSeek-V3.2-Exp:inference/model.py@6d8cb70dfdd6f37c83c5208105a3e2c8da117485 (``Indexer``).

    Examples
    --------
    >>> from gpusizer.catalog import SparseAttention
    >>> indexer_params(7168, 1536, SparseAttention(index_n_heads=64, index_head_dim=128, index_topk=2048))
    Split(matrix=13959168, vector=256)
    """
    heads, dim = sparse.index_n_heads, sparse.index_head_dim
    return Split(query_rank * heads * dim + hidden * dim + hidden * heads, 2 * dim)


def ffn_params(hidden: int, intermediate: int, *, gated: bool = True, bias: bool = False) -> Split:
    r"""Parameters of one feed-forward block.

    Notes
    -----
    Gated (SwiGLU, GeGLU): :math:`3\,d\,d_{ff}`; plain (GELU, ReLU²): :math:`2\,d\,d_{ff}`;
    biases add :math:`d_{ff}` per input projection and :math:`d` for the output. N. Shazeer,
    "GLU variants improve Transformer," arXiv:2002.05202.

    Examples
    --------
    >>> ffn_params(4096, 14336)  # Llama 3 8B
    Split(matrix=176160768, vector=0)
    """
    inputs = 2 if gated else 1
    return Split((inputs + 1) * hidden * intermediate, (inputs * intermediate + hidden) * bias)


def moe_params(hidden: int, moe: MoE, *, gated: bool = True) -> tuple[Split, Split]:
    r"""Parameters of one mixture-of-experts FFN: ``(always used, all routed experts)``.

    The first part is the router, the shared experts and their gate, used by every token; the
    second is the ``E`` routed experts, of which a token uses ``k``.

    Notes
    -----
    Router :math:`d E`; routed experts :math:`E \cdot P_{ffn}(d, d_e)`; shared experts one FFN of the
    summed shared width. N. Shazeer et al., arXiv:1701.06538; DeepSeekMoE, arXiv:2401.06066.
    """
    router = Split(0, hidden * moe.num_experts + moe.num_experts * (moe.router_bias + moe.score_correction_bias))
    shared = ZERO
    if moe.shared_width:
        shared = ffn_params(hidden, moe.shared_width, gated=gated) + Split(0, hidden * moe.shared_expert_gate)
    expert = ffn_params(hidden, moe.expert_intermediate_size, gated=gated, bias=moe.expert_bias)
    return router + shared, expert.scaled(moe.num_experts)


def deltanet_params(hidden: int, linear: LinearAttention) -> Split:
    r"""Parameters of one Gated DeltaNet linear-attention block (Qwen3-Next).

    Notes
    -----
    With key width :math:`K = h_k d_k` and value width :math:`V = h_v d_v`: input projections
    :math:`d(2K + 2V) + 2 d h_v` (q, k, v, z and the b, a gates), depthwise causal convolution
    :math:`(2K + V) \cdot k_{conv}`, per-head ``A_log`` and ``dt_bias``, a gated RMSNorm of
    :math:`d_v` and the output projection :math:`V d`. S. Yang et al., "Gated Delta Networks,"
    arXiv:2412.06464.
    """
    key = linear.num_key_heads * linear.key_head_dim
    value = linear.num_value_heads * linear.value_head_dim
    matrix = hidden * (2 * key + 2 * value) + hidden * 2 * linear.num_value_heads + value * hidden
    conv = (2 * key + value) * linear.conv_kernel
    return Split(matrix, conv + 2 * linear.num_value_heads + linear.value_head_dim)


def mamba2_params(hidden: int, mamba: Mamba) -> Split:
    r"""Parameters of one Mamba-2 mixer block (Nemotron-H).

    Notes
    -----
    With inner width :math:`I = h\,p` and convolution width :math:`C = I + 2 g N`: input projection
    :math:`d(I + C + h)`, depthwise convolution :math:`C k` (+ :math:`C` bias), ``A_log``, ``D`` and
    ``dt_bias`` of :math:`h` each, a gated RMSNorm of :math:`I` and the output projection :math:`I d`.
    T. Dao and A. Gu, "Transformers are SSMs," arXiv:2405.21060.
    """
    inner = mamba.num_heads * mamba.head_dim
    conv = inner + 2 * mamba.n_groups * mamba.state_size
    in_out = inner + conv + mamba.num_heads
    matrix = hidden * in_out + inner * hidden
    vector = conv * mamba.conv_kernel + conv * mamba.conv_bias + 3 * mamba.num_heads + inner
    return Split(matrix, vector + (in_out + hidden) * mamba.proj_bias)


def norm_params(hidden: int, kind: str) -> int:
    """Parameters of one normalisation layer: RMSNorm and bias-free LayerNorm ``d``, LayerNorm ``2d``."""
    return 2 * hidden if kind == "layer" else hidden


def vit_params(vision: Vision) -> int:
    r"""Parameters of a ViT vision encoder (SigLIP-So400m in Gemma 3: 417M published) plus its projector.

    Notes
    -----
    Patch embedding :math:`C p^2 w + w`, one position embedding per patch (and class token), per layer attention
    :math:`4(w^2 + w)`, MLP :math:`2 w f + f + w` and two LayerNorms :math:`4w`; a final LayerNorm :math:`2w`
    (arXiv:2010.11929); CLIP's pre-LayerNorm; InternViT's layer scales :math:`2w` a block. Qwen2.5-VL:
    :math:`C t p^2 w` patches, gated MLP :math:`3wf+2f+w`.

    Examples
    --------
    >>> from gpusizer.catalog import Vision
    >>> vit_params(Vision(hidden_size=1152, num_layers=27, intermediate_size=4304, patch_size=14, image_size=896))
    416866032
    """
    v, w, f = vision, vision.hidden_size, vision.intermediate_size
    patches = ((v.image_size // v.patch_size) ** 2 + v.class_token) * v.position_embeddings
    embed = v.num_channels * v.temporal_patch_size * v.patch_size**2 * w + w * v.patch_bias + patches * w
    mlp = 3 * w * f + 2 * f + w if v.gated_mlp else 2 * w * f + f + w
    layer, final = 4 * (w * w + w) + mlp + 2 * (norm_params(w, v.norm) + w * v.layer_scale), v.final_norm + v.pre_norm
    return embed + w * v.class_token + v.num_layers * layer + norm_params(w, v.norm) * final + v.projector_params


class ParameterCounts(NamedTuple):
    """Parameters of a model by role. [param]"""

    embedding: int
    """Input embedding table."""
    head: int
    """Output (LM head) matrix; 0 when tied to the embedding."""
    linear: int
    """2-D weights of the decoder blocks used by every token (attention, dense FFN, shared experts)."""
    experts: int
    """Weights of all routed experts (biases included)."""
    experts_active: int
    """Routed-expert weights one token uses: ``experts * k / E``."""
    vector: int
    """Norms, biases, routers, convolution and state-space parameters of the main model."""
    mtp: int
    """Multi-token-prediction modules (not used by plain decoding)."""
    vision: int
    """Vision encoder and projector."""
    unquantized: int = 0
    """The part of ``linear`` the checkpoint keeps at the activation dtype (``Model.unquantized_roles``
    and ``Model.unquantized_layers``)."""

    @property
    def main(self) -> int:
        """The text model alone: no MTP, no vision. [param]"""
        return self.embedding + self.head + self.linear + self.experts + self.vector

    @property
    def total(self) -> int:
        """Everything the checkpoint stores. [param]"""
        return self.main + self.mtp + self.vision

    @property
    def active(self) -> int:
        """Parameters one token touches in the main model, embedding and head included. [param]"""
        return self.embedding + self.head + self.linear + self.experts_active + self.vector


def _indexer(model: Model, kind: str) -> Split:
    sparse = model.sparse_attention
    if sparse is None or kind not in ("full", "sliding", "chunked"):
        return ZERO
    rank = model.mla.q_lora_rank if model.mla is not None else None
    return indexer_params(model.hidden_size, rank or model.hidden_size, sparse)


def _mixer(model: Model, kind: str) -> Split:
    return _attention(model, kind) + _indexer(model, kind)


def _attention(model: Model, kind: str) -> Split:
    if kind in ("full", "sliding", "chunked"):
        if model.mla is not None:
            return mla_params(model.hidden_size, model.num_heads, model.mla)
        return attention_params(
            model.hidden_size,
            model.num_heads,
            model.num_kv_heads,
            model.head_dim,
            qkv_bias=model.qkv_bias,
            o_bias=model.o_bias,
            qk_norm=model.qk_norm,
            output_gate=model.attention_output_gate,
            sinks=model.attention_sinks,
        )
    if kind == "linear" and model.linear_attention is not None:
        return deltanet_params(model.hidden_size, model.linear_attention)
    if kind == "mamba" and model.mamba is not None:
        return mamba2_params(model.hidden_size, model.mamba)
    return ZERO


def _ffn(model: Model, kind: str) -> tuple[Split, Split]:
    if kind == "dense" and model.intermediate_size is not None:
        dense = ffn_params(model.hidden_size, model.intermediate_size, gated=model.ffn_gated, bias=model.ffn_bias)
        return dense, ZERO
    if kind == "moe" and model.moe is not None:
        return moe_params(model.hidden_size, model.moe, gated=model.ffn_gated)
    return ZERO, ZERO


def _layer(model: Model, mixer: str, ffn: str) -> tuple[Split, Split]:
    always, routed = _ffn(model, ffn)
    norms = Split(0, model.norms_per_layer * norm_params(model.hidden_size, model.norm))
    return _mixer(model, mixer) + always + norms, routed


def parameter_counts(model: Model) -> ParameterCounts:
    """Count a model's parameters by role, layer by layer.

    Parameters
    ----------
    model : Model
        A catalogue record.

    Returns
    -------
    ParameterCounts
        Embedding, head, per-token linear weights, routed experts (all and active), vectors, MTP
        modules and vision encoder, and the linear weights the checkpoint leaves unquantized. [param]
    """
    d = model.hidden_size
    linear, vector, experts, unquantized = 0, norm_params(d, model.norm), 0, 0
    roles, whole = set(model.unquantized_roles), set(model.unquantized_layers)
    for index, (mixer, ffn) in enumerate(zip(model.layers, model.ffns, strict=True)):
        always, routed = _layer(model, mixer, ffn)
        linear, vector, experts = linear + always.matrix, vector + always.vector, experts + routed.total
        if index in whole or roles:
            kept = _mixer(model, mixer).matrix if index in whole or "attention" in roles else 0
            kept += _ffn(model, ffn)[0].matrix if index in whole or "ffn" in roles else 0
            unquantized += kept
    active = 0
    if model.moe is not None:
        active = experts * model.moe.experts_per_token // model.moe.num_experts
    embedding = model.vocab_size * d
    mtp = 0
    if model.mtp_layers:
        # DeepSeek-V3 MTP module: one decoder layer like the last one, plus enorm, hnorm, the
        # 2d -> d projection eh_proj and a final norm; embedding and head are shared.
        always, routed = _layer(model, model.layers[-1], model.ffns[-1])
        mtp = model.mtp_layers * (always.total + routed.total + 2 * d * d + 3 * norm_params(d, model.norm))
    return ParameterCounts(
        embedding=embedding,
        head=0 if model.tie_embeddings else embedding,
        linear=linear,
        experts=experts,
        experts_active=active,
        vector=vector,
        mtp=mtp,
        vision=vit_params(model.vision) if model.vision is not None else 0,
        unquantized=unquantized,
    )


class KvLayout(NamedTuple):
    """What a model caches per sequence, in elements (multiply by bytes per element for bytes).

    ``full`` elements are held for every token of the context; ``windowed`` elements only for the last
    ``window`` tokens; the recurrent state of linear-attention and SSM layers (``state_bytes``) and
    their convolution state (``conv`` elements, in the activation dtype) once per sequence.
    """

    full: int
    """Elements per token in layers that attend to the whole context. [element/token]"""
    windowed: tuple[tuple[int, int], ...]
    """``(window, elements per token)`` for sliding-window and chunked layers. [token, element/token]"""
    state_bytes: float
    """Recurrent state per sequence, kept in FP32 by engines. [B]"""
    conv: int
    """Convolution-state elements per sequence. [element]"""
    kv_heads: int
    """Key/value heads per layer (1 for MLA, whose latent is shared by all heads)."""
    indexed: float = 0.0
    """Sparse-attention indexer keys per token, summed over layers, at their own precision; every
    tensor-parallel rank holds them whole (the indexer is replicated). [B/token]"""


def _kv_elements(model: Model) -> int:
    if model.mla is not None:
        return model.mla.kv_lora_rank + model.mla.qk_rope_head_dim
    return 2 * model.num_kv_heads * model.head_dim


def kv_layout(model: Model) -> KvLayout:
    r"""The KV-cache layout of a model, by layer type.

    Notes
    -----
    MHA/GQA/MQA layers hold :math:`2\,n_{kv} d_h` elements per token; MLA layers hold the latent and
    the shared rotary key, :math:`r_{kv} + d_r` (DeepSeek-V2, arXiv:2405.04434); sliding-window and
    chunked layers hold at most their window; Gated DeltaNet layers hold an
    :math:`h_v \times d_k \times d_v` state and Mamba-2 layers an :math:`h \times p \times N` state,
    plus :math:`(k_{conv} - 1)` columns of convolution input, whatever the context. Sparse attention
    (DeepSeek Sparse Attention) stores every token's latent or keys as dense attention does, and its
    indexer adds one key of :math:`d_I` elements per token and layer at
    ``index_cache_bytes_per_element`` (FP8 with one FP32 scale per 128: 132 B at :math:`d_I = 128`;
    ``k_cache`` and ``k_scale_cache`` of deepseek-ai/DeepSeek-V3.2-Exp:inference/model.py@6d8cb70d).
    """
    per_token = _kv_elements(model)
    full, windows = 0, dict[int | None, int]()
    state, conv = 0.0, 0
    for kind in model.layers:
        if kind == "full":
            full += per_token
        elif kind in ("sliding", "chunked"):
            window = model.sliding_window if kind == "sliding" else model.attention_chunk_size
            windows[window] = windows.get(window, 0) + per_token
        elif kind == "linear" and model.linear_attention is not None:
            lin = model.linear_attention
            state += lin.num_value_heads * lin.key_head_dim * lin.value_head_dim * lin.state_bytes_per_element
            key = lin.num_key_heads * lin.key_head_dim
            conv += (lin.conv_kernel - 1) * (2 * key + lin.num_value_heads * lin.value_head_dim)
        elif kind == "mamba" and model.mamba is not None:
            m = model.mamba
            state += m.num_heads * m.head_dim * m.state_size * m.state_bytes_per_element
            conv += (m.conv_kernel - 1) * (m.num_heads * m.head_dim + 2 * m.n_groups * m.state_size)
    kv_heads = 1 if model.mla is not None else model.num_kv_heads
    indexed = 0.0
    if model.sparse_attention is not None:
        sparse = model.sparse_attention
        layers = sum(kind in ("full", "sliding", "chunked") for kind in model.layers)
        indexed = layers * sparse.index_head_dim * sparse.index_cache_bytes_per_element
    windowed = tuple(sorted((w, e) for w, e in windows.items() if w))
    return KvLayout(full, windowed, state, conv, kv_heads, indexed)


def replicated_params(model: Model) -> int:
    """Parameters every tensor-parallel rank keeps whole: vectors (norms, biases, routers), MLA's
    down-projections to the query and KV latents, which vLLM and SGLang do not shard, and the sparse-
    attention indexers' matrices (replicated ``Linear`` layers in DeepSeek's inference code). [param]"""
    counts = parameter_counts(model)
    indexers = sum(_indexer(model, kind).matrix for kind in model.layers)
    mla = model.mla
    if mla is None:
        return counts.vector + indexers
    attention_layers = sum(kind in ("full", "sliding", "chunked") for kind in model.layers)
    down = model.hidden_size * ((mla.q_lora_rank or 0) + mla.kv_lora_rank + mla.qk_rope_head_dim)
    return counts.vector + indexers + attention_layers * down


def ffn_width_per_token(model: Model) -> int:
    """Widest FFN intermediate one token produces in any layer: ``d_ff`` for dense layers,
    ``k * d_expert`` plus the shared width for MoE layers. [-]"""
    widths = [model.intermediate_size or 0]
    if model.moe is not None:
        widths.append(model.moe.experts_per_token * model.moe.expert_intermediate_size + model.moe.shared_width)
    return max(widths)
