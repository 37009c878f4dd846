"""Readers of the dense decoders: Llama, Mistral, Qwen2/3, Gemma 1/2/3, Phi-3, Cohere, Falcon.

Each takes the text ``Section`` of a config and returns the ``Fields`` of a ``Model`` record.
"""

from __future__ import annotations

from gpusizer.hf.patterns import (
    Fields,
    biases,
    core_fields,
    listed_layers,
    qwen_layers,
    read_window,
    uniform,
)
from gpusizer.hf.section import Section

__all__ = ["cohere", "falcon", "gemma", "gemma2", "gemma3_text", "llama", "mistral", "phi3", "qwen2", "qwen3"]


def llama(cfg: Section) -> Fields:
    """Llama 2/3: standard keys; ``layer_types`` may list sliding layers."""
    core = core_fields(cfg, "intermediate_size")
    layers = listed_layers(cfg, core["num_layers"]) or uniform("full", core)
    window = read_window(cfg, core["max_context"]) if "sliding" in layers else None
    return {
        **core,
        **biases(cfg),
        "intermediate_size": cfg.integer("intermediate_size", "ffn"),
        "layers": layers,
        "sliding_window": window,
    }


def mistral(cfg: Section) -> Fields:
    """Mistral and Phi-3: ``sliding_window``, when set and shorter than the context, applies to every layer."""
    fields = llama(cfg)
    window = read_window(cfg, fields["max_context"])
    if window is not None and not cfg.has("layer_types"):
        fields.update(layers=uniform("sliding", fields), sliding_window=window)
    return fields


def qwen2(cfg: Section) -> Fields:
    """Qwen2/2.5: QKV bias, sliding layers from ``max_window_layers`` when ``use_sliding_window``."""
    core = core_fields(cfg, "intermediate_size")
    layers, window = qwen_layers(cfg, core)
    return {
        **core,
        "qkv_bias": True,
        "intermediate_size": cfg.integer("intermediate_size", "ffn"),
        "layers": layers,
        "sliding_window": window,
    }


def qwen3(cfg: Section) -> Fields:
    """Qwen3: Qwen2 with per-head RMSNorm on queries and keys and configurable attention bias."""
    return {**qwen2(cfg), **biases(cfg), "qk_norm": True}


def gemma(cfg: Section) -> Fields:
    """Gemma 1: a Llama-like decoder (its defaults tie the embeddings)."""
    return llama(cfg)


def gemma2(cfg: Section, *, every: int = 2, qk_norm: bool = False) -> Fields:
    """Gemma 2/3: four RMSNorms per layer; ``every``-th layer global, the others sliding."""
    core = core_fields(cfg, "intermediate_size")
    layers = listed_layers(cfg, core["num_layers"])
    if layers is None:
        layers = ["sliding" if (i + 1) % every else "full" for i in range(core["num_layers"])]
    window = cfg.opt("sliding_window", "context") if "sliding" in layers else None
    if "sliding" in layers and window is None:
        raise ValueError(f"{cfg.where} lacks essential keys: sliding_window")
    return {
        **core,
        **biases(cfg),
        "intermediate_size": cfg.integer("intermediate_size", "ffn"),
        "norms_per_layer": 4,
        "qk_norm": qk_norm,
        "layers": layers,
        "sliding_window": window,
    }


def gemma3_text(cfg: Section) -> Fields:
    """Gemma 3 text model: every ``sliding_window_pattern``-th layer global, qk-norm."""
    every = cfg.integer("sliding_window_pattern", "small", default=6)
    return gemma2(cfg, every=every, qk_norm=True)


def phi3(cfg: Section) -> Fields:
    """Phi-3: read as Mistral (``sliding_window`` on every layer when shorter than the context)."""
    return mistral(cfg)


def cohere(cfg: Section) -> Fields:
    """Cohere: attention and FFN in parallel off one bias-free LayerNorm per layer."""
    return {**llama(cfg), "norm": "layer_nobias", "norms_per_layer": 1, "qk_norm": cfg.flag("use_qk_norm", False)}


def falcon(cfg: Section) -> Fields:
    """Falcon: fused QKV, plain GELU MLP of ``ffn_hidden_size`` (4 x hidden), LayerNorms with bias."""
    core = core_fields(cfg)
    new = cfg.flag("new_decoder_architecture", False)
    if new:
        kv_heads = cfg.integer("num_kv_heads", "heads", default=core["num_heads"])
        norms = cfg.integer("num_ln_in_parallel_attn", "small", default=2)
    else:
        kv_heads = 1 if cfg.flag("multi_query", True) else core["num_heads"]
        norms = 1 if cfg.flag("parallel_attn", True) else 2
    if core["num_heads"] % kv_heads:
        raise ValueError(f"{cfg.where}: num_attention_heads is not a multiple of num_kv_heads {kv_heads}")
    bias = cfg.flag("bias", False)
    width = cfg.integer("ffn_hidden_size", "ffn", default=4 * core["hidden_size"])
    return {
        **core,
        "num_kv_heads": kv_heads,
        "intermediate_size": width,
        "ffn_gated": False,
        "qkv_bias": bias,
        "o_bias": bias,
        "ffn_bias": bias,
        "norm": "layer",
        "norms_per_layer": norms,
        "fused_qkv": True,
    }
