"""The architecture table: the reader and the transformers defaults of each known ``model_type``.

Any other ``model_type`` is read by ``generic`` as a Llama-like decoder, every assumption noted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpusizer.hf import dense, moe
from gpusizer.hf.patterns import Fields, biases, core_fields, listed_layers, read_moe, read_window, uniform
from gpusizer.hf.section import Section

__all__ = ["ARCHITECTURES", "DEFAULTS", "generic"]


def generic(cfg: Section) -> Fields:
    """An unknown ``model_type``: a Llama-like decoder from the standard keys, every assumption noted."""
    notes = cfg.notes
    for key, meaning in (
        ("num_key_value_heads", "num_attention_heads (multi-head attention)"),
        ("head_dim", "hidden_size / num_attention_heads"),
        ("tie_word_embeddings", "false (separate LM head)"),
    ):
        if not cfg.has(key):
            notes.append(f"{key} absent: taken as {meaning}")
    notes.append("FFN taken as gated (SwiGLU, three matrices), norms as RMSNorm, two per layer")
    experts = next((k for k in ("num_local_experts", "num_experts", "n_routed_experts") if cfg.has(k)), None)
    if experts is None:
        fields = dense.llama(cfg)
    else:
        width = "moe_intermediate_size" if cfg.has("moe_intermediate_size") else "intermediate_size"
        notes.append(f"every layer taken as MoE ({experts} experts of width {width}), no shared expert")
        core = core_fields(cfg)
        fields = {**core, **biases(cfg), "ffns": uniform("moe", core), "moe": read_moe(cfg, experts, width)}
        listed = listed_layers(cfg, core["num_layers"])
        if listed:
            fields.update(layers=listed, sliding_window=read_window(cfg, core["max_context"]))
    if "sliding" in fields.get("layers", ()) and fields.get("sliding_window") is None:
        raise ValueError(f"{cfg.where} lacks essential keys: sliding_window")
    if cfg.has("kv_lora_rank") or cfg.has("hybrid_override_pattern") or cfg.has("linear_num_key_heads"):
        notes.append("MLA, state-space or linear-attention keys present but not understood: layers read as attention")
    return fields


_DEEPSEEK_V3 = {"topk_method": "noaux_tc"}


#: transformers defaults of the keys published configs omit, per ``model_type``.
DEFAULTS: dict[str, dict[str, Any]] = {
    "llama": {"max_position_embeddings": 2048},
    "mistral": {"max_position_embeddings": 131072, "sliding_window": 4096},
    "mixtral": {"max_position_embeddings": 131072},
    "qwen2": {"max_position_embeddings": 32768},
    "qwen3": {"max_position_embeddings": 32768, "head_dim": 128},
    "phi3": {"max_position_embeddings": 4096},
    "gemma": {"tie_word_embeddings": True, "head_dim": 256, "max_position_embeddings": 8192},
    "gemma2": {"tie_word_embeddings": True, "head_dim": 256, "max_position_embeddings": 8192, "sliding_window": 4096},
    "gemma3_text": {
        "tie_word_embeddings": True,
        "vocab_size": 262208,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "max_position_embeddings": 131072,
        "sliding_window": 4096,
    },
    "cohere": {"tie_word_embeddings": True, "max_position_embeddings": 8192},
    "falcon": {"tie_word_embeddings": True, "max_position_embeddings": 2048},
    "glm4_moe": {"max_position_embeddings": 131072},
    "gpt_oss": {"max_position_embeddings": 131072, "sliding_window": 128, "attention_bias": True},
    "llama4_text": {"max_position_embeddings": 131072, "attention_chunk_size": 8192, "intermediate_size_mlp": 16384},
    "deepseek_v3": _DEEPSEEK_V3,
    "deepseek_v32": _DEEPSEEK_V3,
    "kimi_k2": _DEEPSEEK_V3,
    "glm_moe_dsa": _DEEPSEEK_V3,
    "deepseek_v2": {"topk_method": "greedy"},
}


#: Importer of each known ``model_type``.
ARCHITECTURES: dict[str, Callable[[Section], Fields]] = {
    "llama": dense.llama,
    "mistral": dense.mistral,
    "mixtral": moe.mixtral,
    "qwen2": dense.qwen2,
    "qwen2_moe": lambda cfg: moe.qwen_moe(cfg, qwen3=False),
    "qwen3": dense.qwen3,
    "qwen3_moe": lambda cfg: moe.qwen_moe(cfg, qwen3=True),
    "qwen3_next": moe.qwen3_next,
    "gemma": dense.gemma,
    "gemma2": dense.gemma2,
    "gemma3_text": dense.gemma3_text,
    "phi3": dense.phi3,
    "cohere": dense.cohere,
    "falcon": dense.falcon,
    "llama4_text": moe.llama4_text,
    "deepseek_v2": moe.deepseek,
    "deepseek_v3": moe.deepseek,
    "deepseek_v32": moe.deepseek,
    "kimi_k2": moe.deepseek,
    "glm_moe_dsa": moe.deepseek,
    "gpt_oss": moe.gpt_oss,
    "glm4_moe": moe.glm4_moe,
    "nemotron_h": moe.nemotron_h,
}
