"""Pieces every architecture reader shares: the standard keys, layer patterns, MoE blocks.

A reader returns ``Fields``, keyword arguments of :class:`~gpusizer.catalog.Model` with per-layer
lists ``layers`` and ``ffns`` still expanded; ``cycle`` folds them into the record's repeating pattern.
"""

from __future__ import annotations

from typing import Any

from gpusizer.catalog import MoE
from gpusizer.hf.section import LIMITS, Section, show

__all__ = [
    "Fields",
    "biases",
    "core_fields",
    "cycle",
    "dense_width",
    "first_dense",
    "listed_layers",
    "qwen_experts",
    "qwen_layers",
    "read_moe",
    "read_window",
    "sparse_layers",
    "uniform",
]


Fields = dict[str, Any]


_ESSENTIAL = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")


def cycle(kinds: list[str]) -> tuple[str, ...]:
    """The shortest prefix that, repeated cyclically, gives ``kinds``; the whole list unless it repeats twice.

    The period comes from the Knuth-Morris-Pratt failure function, in O(n).
    """
    fail = [0] * len(kinds)
    k = 0
    for i in range(1, len(kinds)):
        while k and kinds[i] != kinds[k]:
            k = fail[k - 1]
        k += kinds[i] == kinds[k]
        fail[i] = k
    period = len(kinds) - fail[-1] if kinds else 0
    return tuple(kinds[:period] if 2 * period <= len(kinds) else kinds)


_HF_LAYER_TYPES = {
    "full_attention": "full",
    "attention": "full",
    "sliding_attention": "sliding",
    "chunked_attention": "chunked",
    "linear_attention": "linear",
    "mamba": "mamba",
}


def listed_layers(cfg: Section, layers: int) -> list[str] | None:
    """The explicit ``layer_types`` list of newer configs, mapped to gpusizer's layer kinds."""
    listed = cfg.items("layer_types", LIMITS["layers"])
    if listed is None:
        return None
    if len(listed) != layers:
        raise ValueError(f"{cfg.name('layer_types')} has {len(listed)} entries for {layers} layers")
    kinds = []
    for entry in listed:
        if not isinstance(entry, str) or entry not in _HF_LAYER_TYPES:
            known = ", ".join(_HF_LAYER_TYPES)
            raise ValueError(f"{cfg.name('layer_types')}: unknown layer type {show(entry)}; known: {known}")
        kinds.append(_HF_LAYER_TYPES[entry])
    return kinds


def read_window(cfg: Section, max_context: int | None) -> int | None:
    """``sliding_window``, or None when absent or no shorter than the context (inert)."""
    window = cfg.opt("sliding_window", "context")
    if window is None or (max_context is not None and window >= max_context):
        return None
    return window


def qwen_layers(cfg: Section, core: Fields) -> tuple[list[str], int | None]:
    """Qwen2/3: with ``use_sliding_window``, layers from ``max_window_layers`` on are sliding."""
    listed = listed_layers(cfg, core["num_layers"])
    if listed is not None:
        return listed, read_window(cfg, core["max_context"]) if "sliding" in listed else None
    window = read_window(cfg, core["max_context"]) if cfg.flag("use_sliding_window", False) else None
    if window is None:
        return uniform("full", core), None
    first = cfg.integer("max_window_layers", "layers", default=28, low=0)
    return ["full" if i < first else "sliding" for i in range(core["num_layers"])], window


def core_fields(cfg: Section, *extra: str, mla: bool = False) -> dict[str, Any]:
    """Model widths, head counts, context and embedding tying from the standard keys."""
    cfg.require(*_ESSENTIAL, *extra)
    hidden = cfg.integer("hidden_size", "hidden")
    heads = cfg.integer("num_attention_heads", "heads")
    kv_heads = cfg.integer("num_key_value_heads", "heads", default=heads)
    head_dim = cfg.opt("head_dim", "head_dim")
    if head_dim is None:
        if hidden % heads:
            raise ValueError(
                f"{cfg.where}: head_dim absent and hidden_size {hidden} is not a multiple of {heads} heads"
            )
        head_dim = hidden // heads
    if not mla and (kv_heads > heads or heads % kv_heads):
        raise ValueError(
            f"{cfg.where}: num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}"
        )
    return {
        "hidden_size": hidden,
        "num_layers": cfg.integer("num_hidden_layers", "layers"),
        "vocab_size": cfg.integer("vocab_size", "vocab"),
        "num_heads": heads,
        "num_kv_heads": kv_heads,
        "head_dim": head_dim,
        "max_context": cfg.opt("max_position_embeddings", "context"),
        "tie_embeddings": cfg.flag("tie_word_embeddings", False),
    }


def biases(cfg: Section, *, o: bool = True) -> dict[str, bool]:
    """Bias flags from ``attention_bias`` (QKV, and output projection when ``o``) and ``mlp_bias``."""
    bias = cfg.flag("attention_bias", False)
    return {"qkv_bias": bias, "o_bias": bias and o, "ffn_bias": cfg.flag("mlp_bias", False)}


def uniform(kind: str, core: dict[str, Any]) -> list[str]:
    """One ``kind`` for each of the ``num_layers`` layers of ``core``."""
    return [kind] * core["num_layers"]


def sparse_layers(cfg: Section, layers: int) -> list[str]:
    """Qwen-MoE rule: layer i is MoE unless listed in ``mlp_only_layers`` or off ``decoder_sparse_step``."""
    step = cfg.integer("decoder_sparse_step", "small", default=1)
    dense_only = cfg.items("mlp_only_layers", LIMITS["layers"]) or []
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in dense_only):
        raise ValueError(f"{cfg.name('mlp_only_layers')} must list layer indices")
    dense = set(dense_only)
    return ["moe" if i not in dense and (i + 1) % step == 0 else "dense" for i in range(layers)]


def first_dense(cfg: Section, layers: int) -> int:
    """``first_k_dense_replace``: leading layers with a dense FFN (DeepSeek, Kimi, GLM-4.5)."""
    first = cfg.integer("first_k_dense_replace", "layers", default=0, low=0)
    if first > layers:
        raise ValueError(f"{cfg.name('first_k_dense_replace')} = {first} exceeds num_hidden_layers = {layers}")
    return first


def read_moe(cfg: Section, experts: str, width: str, **extra: Any) -> MoE:
    """The routed experts: ``experts`` count, ``num_experts_per_tok`` and expert width key ``width``."""
    cfg.require(experts, "num_experts_per_tok", width)
    num = cfg.integer(experts, "experts")
    top_k = cfg.integer("num_experts_per_tok", "experts")
    if top_k > num:
        raise ValueError(f"{cfg.name('num_experts_per_tok')} = {top_k} exceeds {experts} = {num}")
    return MoE(num_experts=num, experts_per_token=top_k, expert_intermediate_size=cfg.integer(width, "ffn"), **extra)


def qwen_experts(cfg: Section, *, shared: bool) -> MoE:
    """Qwen's routed experts, with the gated shared expert of ``shared_expert_intermediate_size`` when the
    family has one (Qwen2-MoE, Qwen3-Next; Qwen3-MoE has none)."""
    width = cfg.integer("shared_expert_intermediate_size", "ffn", default=0, low=0) if shared else 0
    return read_moe(
        cfg,
        "num_experts",
        "moe_intermediate_size",
        num_shared_experts=int(width > 0),
        shared_intermediate_size=width or None,
        shared_expert_gate=width > 0,
    )


def dense_width(cfg: Section, ffns: list[str], first_dense: int = 0, key: str = "intermediate_size") -> int | None:
    """FFN width of the dense layers, or None when every layer is MoE or has no FFN."""
    if "dense" not in ffns and not first_dense:
        return None
    cfg.require(key)
    return cfg.integer(key, "ffn")  # type: ignore[no-any-return]
