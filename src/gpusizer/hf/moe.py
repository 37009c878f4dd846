"""Readers of the mixture-of-experts and hybrid decoders.

Qwen2-MoE/Qwen3-MoE, Qwen3-Next (linear attention), Mixtral, Llama 4, DeepSeek-V2/V3 and Kimi K2
(MLA), gpt-oss, GLM-4.5 and Nemotron-H (Mamba-2). Each takes the text ``Section`` of a config and
returns the ``Fields`` of a ``Model`` record.
"""

from __future__ import annotations

from gpusizer.catalog import MLA, LinearAttention, Mamba, SparseAttention
from gpusizer.hf.patterns import (
    Fields,
    biases,
    core_fields,
    dense_width,
    first_dense,
    listed_layers,
    qwen_experts,
    qwen_layers,
    read_moe,
    read_window,
    sparse_layers,
    uniform,
)
from gpusizer.hf.section import LIMITS, Section, show

__all__ = [
    "deepseek", "glm4_moe", "gpt_oss", "llama4_text", "mixtral", "nemotron_h", "qwen3_next", "qwen_moe",
    "sparse_attention",
]


def qwen_moe(cfg: Section, *, qwen3: bool) -> Fields:
    """Qwen2-MoE (with a gated shared expert, QKV bias) and Qwen3-MoE (qk-norm, no shared expert)."""
    core = core_fields(cfg)
    layers, window = qwen_layers(cfg, core)
    ffns = sparse_layers(cfg, core["num_layers"])
    moe = qwen_experts(cfg, shared=not qwen3)
    bias = biases(cfg) if qwen3 else {"qkv_bias": True}
    return {
        **core,
        **bias,
        "qk_norm": qwen3,
        "layers": layers,
        "sliding_window": window,
        "ffns": ffns,
        "moe": moe,
        "intermediate_size": dense_width(cfg, ffns),
    }


def qwen3_next(cfg: Section) -> Fields:
    """Qwen3-Next: Gated DeltaNet linear attention with a full layer every ``full_attention_interval``."""
    core = core_fields(cfg)
    layers = listed_layers(cfg, core["num_layers"])
    if layers is None:
        interval = cfg.integer("full_attention_interval", "small", default=4)
        layers = ["linear" if (i + 1) % interval else "full" for i in range(core["num_layers"])]
    linear = None
    if "linear" in layers:
        keys = (
            "linear_num_key_heads",
            "linear_num_value_heads",
            "linear_key_head_dim",
            "linear_value_head_dim",
            "linear_conv_kernel_dim",
        )
        cfg.require(*keys)
        heads_k, heads_v, dim_k, dim_v = (cfg.integer(k, "heads" if "num" in k else "head_dim") for k in keys[:4])
        linear = LinearAttention(
            num_key_heads=heads_k,
            num_value_heads=heads_v,
            key_head_dim=dim_k,
            value_head_dim=dim_v,
            conv_kernel=cfg.integer("linear_conv_kernel_dim", "small"),
        )
    ffns = sparse_layers(cfg, core["num_layers"])
    moe = qwen_experts(cfg, shared=True)
    return {
        **core,
        **biases(cfg),
        "qk_norm": True,
        "attention_output_gate": True,
        "layers": layers,
        "linear_attention": linear,
        "ffns": ffns,
        "moe": moe,
        "intermediate_size": dense_width(cfg, ffns),
    }


def mixtral(cfg: Section) -> Fields:
    """Mixtral: every layer MoE of ``num_local_experts``; ``sliding_window`` on every layer when set."""
    core = core_fields(cfg)
    fields = {**core, "ffns": uniform("moe", core), "moe": read_moe(cfg, "num_local_experts", "intermediate_size")}
    window = read_window(cfg, core["max_context"])
    if window is not None:
        fields.update(layers=uniform("sliding", core), sliding_window=window)
    return fields


def llama4_text(cfg: Section) -> Fields:
    """Llama 4: chunked attention on RoPE layers, global attention on every 4th (NoPE) layer.

    Dense layers use ``intermediate_size_mlp``; experts and the one shared expert ``intermediate_size``.
    The query/key L2 norm has no weights, so ``qk_norm`` stays False.
    """
    core = core_fields(cfg, "intermediate_size")
    n = core["num_layers"]
    layers = listed_layers(cfg, n)
    if layers is None:
        rope = cfg.items("no_rope_layers", LIMITS["layers"])
        if rope:
            if len(rope) < n or not all(flag in (0, 1) for flag in rope[:n]):
                raise ValueError(f"{cfg.name('no_rope_layers')} must hold a 0 or 1 for each of {n} layers")
            layers = ["chunked" if flag else "full" for flag in rope[:n]]
        else:
            interval = cfg.integer("no_rope_layer_interval", "small", default=4)
            layers = ["chunked" if (i + 1) % interval else "full" for i in range(n)]
    moe_layers = cfg.items("moe_layers", LIMITS["layers"])
    if moe_layers is None:
        step = cfg.integer("interleave_moe_layer_step", "small", default=1)
        moe_layers = list(range(step - 1, n, step))
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in moe_layers):
        raise ValueError(f"{cfg.name('moe_layers')} must list layer indices")
    chosen = set(moe_layers)
    ffns = ["moe" if i in chosen else "dense" for i in range(n)]
    chunk = cfg.opt("attention_chunk_size", "context") if "chunked" in layers else None
    if "chunked" in layers and chunk is None:
        layers = ["full"] * n
    moe = read_moe(cfg, "num_local_experts", "intermediate_size", num_shared_experts=1)
    return {
        **core,
        **biases(cfg),
        "layers": layers,
        "attention_chunk_size": chunk,
        "ffns": ffns,
        "moe": moe,
        "intermediate_size": dense_width(cfg, ffns, key="intermediate_size_mlp"),
    }


def deepseek(cfg: Section) -> Fields:
    """DeepSeek-V2/V3/V3.2, Kimi K2, GLM-5 (``glm_moe_dsa``): MLA, ``first_k_dense_replace`` dense layers,
    MoE every ``moe_layer_freq``, DeepSeek Sparse Attention when the config has an indexer."""
    cfg.require("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "n_routed_experts")
    if "q_lora_rank" not in cfg.data:
        raise ValueError(f"{cfg.where} lacks essential keys: q_lora_rank (null for no query compression)")
    mla = MLA(
        q_lora_rank=cfg.opt("q_lora_rank", "rank"),
        kv_lora_rank=cfg.integer("kv_lora_rank", "rank"),
        qk_nope_head_dim=cfg.integer("qk_nope_head_dim", "head_dim"),
        qk_rope_head_dim=cfg.integer("qk_rope_head_dim", "head_dim"),
        v_head_dim=cfg.integer("v_head_dim", "head_dim"),
    )
    core = core_fields(cfg, mla=True)
    core["head_dim"] = mla.qk_nope_head_dim + mla.qk_rope_head_dim
    n = core["num_layers"]
    freq = cfg.integer("moe_layer_freq", "small", default=1)
    ffns = ["moe" if i % freq == 0 else "dense" for i in range(n)]
    first = first_dense(cfg, n)
    moe = read_moe(
        cfg,
        "n_routed_experts",
        "moe_intermediate_size",
        num_shared_experts=cfg.integer("n_shared_experts", "experts", default=0, low=0),
        score_correction_bias=cfg.text("topk_method") == "noaux_tc",
    )
    return {
        **core,
        **biases(cfg),
        "mla": mla,
        "ffns": ffns,
        "first_dense_layers": first,
        "moe": moe,
        "intermediate_size": dense_width(cfg, ffns, first),
        "mtp_layers": cfg.integer("num_nextn_predict_layers", "small", default=0, low=0),
        "sparse_attention": sparse_attention(cfg),
    }


def sparse_attention(cfg: Section) -> SparseAttention | None:
    """DeepSeek Sparse Attention from ``index_n_heads``, ``index_head_dim`` and ``index_topk`` (DeepSeek-V3.2,
    GLM-5); None when the config has no indexer."""
    keys = ("index_n_heads", "index_head_dim", "index_topk")
    if not any(cfg.has(key) for key in keys):
        return None
    cfg.require(*keys)
    return SparseAttention(
        index_n_heads=cfg.integer("index_n_heads", "heads"),
        index_head_dim=cfg.integer("index_head_dim", "head_dim"),
        index_topk=cfg.integer("index_topk", "context"),
    )


def gpt_oss(cfg: Section) -> Fields:
    """gpt-oss: alternating sliding/full layers, attention sinks, biased experts and router."""
    core = core_fields(cfg)
    layers = listed_layers(cfg, core["num_layers"])
    if layers is None:
        layers = ["sliding" if (i + 1) % 2 else "full" for i in range(core["num_layers"])]
    window = cfg.integer("sliding_window", "context") if "sliding" in layers else None
    moe = read_moe(cfg, "num_local_experts", "intermediate_size", router_bias=True, expert_bias=True)
    return {
        **core,
        **biases(cfg),
        "attention_sinks": True,
        "layers": layers,
        "sliding_window": window,
        "ffns": uniform("moe", core),
        "moe": moe,
    }


def glm4_moe(cfg: Section) -> Fields:
    """GLM-4.5: QKV bias, optional qk-norm, ``first_k_dense_replace`` dense layers, one MTP layer."""
    core = core_fields(cfg)
    n = core["num_layers"]
    first = first_dense(cfg, n)
    moe = read_moe(
        cfg,
        "n_routed_experts",
        "moe_intermediate_size",
        num_shared_experts=cfg.integer("n_shared_experts", "experts", default=0, low=0),
        score_correction_bias=True,
    )
    ffns = uniform("moe", core)
    return {
        **core,
        **biases(cfg, o=False),
        "qk_norm": cfg.flag("use_qk_norm", False),
        "ffns": ffns,
        "first_dense_layers": first,
        "moe": moe,
        "intermediate_size": dense_width(cfg, ffns, first),
        "mtp_layers": cfg.integer("num_nextn_predict_layers", "small", default=0, low=0),
    }


_NEMOTRON_BLOCKS = {"M": ("mamba", "none"), "*": ("full", "none"), "E": ("none", "moe"), "-": ("none", "dense")}
_SSM_BYTES = {"float32": 4.0, "bfloat16": 2.0, "float16": 2.0}


def nemotron_h(cfg: Section) -> Fields:
    """Nemotron-H: one block per layer, a Mamba-2 mixer (M), attention (*), MoE (E) or MLP (-)."""
    core = core_fields(cfg, "hybrid_override_pattern")
    pattern = cfg.text("hybrid_override_pattern") or ""
    if len(pattern) != core["num_layers"] or not set(pattern) <= set(_NEMOTRON_BLOCKS):
        raise ValueError(
            f"{cfg.name('hybrid_override_pattern')} must hold one of M * E - for each of "
            f"{core['num_layers']} layers, got {show(pattern)}"
        )
    layers = [_NEMOTRON_BLOCKS[c][0] for c in pattern]
    ffns = [_NEMOTRON_BLOCKS[c][1] for c in pattern]
    mamba = None
    if "M" in pattern:
        cfg.require("mamba_num_heads", "mamba_head_dim", "ssm_state_size", "n_groups", "conv_kernel")
        dtype = cfg.text("mamba_ssm_cache_dtype", "float32")
        if dtype not in _SSM_BYTES:
            raise ValueError(
                f"{cfg.name('mamba_ssm_cache_dtype')}: unknown dtype {dtype!r}; known: {', '.join(_SSM_BYTES)}"
            )
        mamba = Mamba(
            num_heads=cfg.integer("mamba_num_heads", "heads"),
            head_dim=cfg.integer("mamba_head_dim", "head_dim"),
            state_size=cfg.integer("ssm_state_size", "rank"),
            n_groups=cfg.integer("n_groups", "heads"),
            conv_kernel=cfg.integer("conv_kernel", "small"),
            conv_bias=cfg.flag("use_conv_bias", True),
            proj_bias=cfg.flag("mamba_proj_bias", False),
            state_bytes_per_element=_SSM_BYTES[dtype],
        )
    moe = None
    if "E" in pattern:
        shared = cfg.integer("n_shared_experts", "experts", default=0, low=0)
        width = cfg.opt("moe_shared_expert_intermediate_size", "ffn")
        moe = read_moe(
            cfg,
            "n_routed_experts",
            "moe_intermediate_size",
            num_shared_experts=shared,
            shared_intermediate_size=width if shared else None,
            score_correction_bias=True,
        )
        if cfg.has("moe_latent_size"):
            cfg.notes.append(
                "moe_latent_size: the latent projections around the experts are not counted and the "
                "experts are counted at full hidden width"
            )
    return {
        **core,
        **biases(cfg),
        "ffn_gated": False,
        "norms_per_layer": 1,
        "layers": layers,
        "ffns": ffns,
        "mamba": mamba,
        "moe": moe,
        "intermediate_size": dense_width(cfg, ffns),
    }
