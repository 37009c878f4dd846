"""Read a Hugging Face checkpoint's ``config.json`` into a :class:`~gpusizer.catalog.Model` record.

``from_hf_config`` accepts a path to a ``config.json``, a folder holding one, or an already parsed
mapping. From a folder (or beside a ``config.json``) it also reads ``hf_quant_config.json``
(NVIDIA ModelOpt) for the checkpoint precision; ``checkpoint_bytes`` reads the exact stored size
from ``model.safetensors.index.json`` (``metadata.total_size``) or a single ``model.safetensors``.

What is read
------------
The architectures of ``architectures()``: llama, mistral, mixtral, qwen2, qwen2_moe, qwen3,
qwen3_moe, qwen3_next, gemma, gemma2, gemma3 (and gemma3_text), phi3, cohere, falcon,
deepseek_v2, deepseek_v3, deepseek_v32, kimi_k2, gpt_oss, glm4_moe, llama4 (and llama4_text),
mistral3 and nemotron_h. Multimodal wrappers are read through ``text_config``; their
``vision_config`` becomes a ``Vision`` record whose ``projector_params`` come from the projector
shapes:

* gemma3: ``mm_input_projection`` (vision hidden x text hidden) + ``mm_soft_emb_norm`` (vision hidden);
* llama4: vision adapter MLP ``fc1`` (vision intermediate x projector_input_dim) + ``fc2``
  (projector_output_dim x projector_output_dim) + ``multi_modal_projector`` (vision_output_dim x
  text hidden), all without bias;
* mistral3: RMSNorm (vision hidden) + patch merger (vision hidden * spatial_merge_size**2 x vision
  hidden) + ``linear_1`` (vision hidden x text hidden) + ``linear_2`` (text hidden x text hidden),
  biases when ``multimodal_projector_bias``.

Keys a published config omits take the default of the matching ``transformers`` configuration class
(Gemma 3's text config relies on them for its head counts). Any other ``model_type`` is read from the
standard keys (``hidden_size``, ``num_hidden_layers``, ``num_attention_heads``, ``vocab_size``,
``intermediate_size``) as a Llama-like decoder, and one ``ConfigAssumptionWarning`` lists every
assumption made. Approximations the record cannot avoid are warned about the same way.

Precision: ``weights`` is the checkpoint's linear-layer precision, from ``quantization_config`` (or
``hf_quant_config.json``) when present, otherwise ``torch_dtype`` (``dtype`` in newer files; bf16
when absent). ``quantization_methods()`` lists the methods understood; any other raises.

Hostile input
-------------
Only ``ValueError`` (or ``FileNotFoundError`` for a missing path) ever leaves this module: files larger
than ``MAX_CONFIG_BYTES``, non-JSON, JSON that is not an object, wrong types (a string, bool or float
where an integer is needed), missing essential keys (all named at once), zero or negative sizes, and
sizes above ``LIMITS`` are rejected with a message naming the key. No list longer than
``LIMITS["layers"]`` is built, and a config whose rough parameter count exceeds ``MAX_PARAMS`` is
rejected, so parameter counts stay far inside the int64 range. Nothing in the folder is
imported or executed (``auto_map`` and ``trust_remote_code`` are ignored); there is no network access.

Deliberate omissions: rotary settings, logit soft-capping, attention temperature and other knobs that
change neither parameter counts nor cache sizes; DeepSeek-V3.2's sparse-attention indexer (warned);
Cohere's per-head LayerNorm on queries and keys is recorded as ``qk_norm`` (its weights are
``heads x head_dim`` rather than ``head_dim``).
"""

from __future__ import annotations

import datetime
import json
import reprlib
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gpusizer.catalog import MLA, LinearAttention, Mamba, Model, MoE, Vision

__all__ = [
    "LIMITS",
    "MAX_CONFIG_BYTES",
    "MAX_PARAMS",
    "ConfigAssumptionWarning",
    "architectures",
    "checkpoint_bytes",
    "from_hf_config",
    "quantization_methods",
]

#: Largest value accepted for each kind of size; anything larger is rejected as corrupt.
LIMITS: dict[str, int] = {
    "hidden": 2**20,  # hidden_size and other model widths
    "ffn": 2**22,  # FFN and expert intermediate widths
    "heads": 2**16,  # attention, key/value, linear-attention and Mamba heads
    "head_dim": 2**16,
    "layers": 10_000,  # decoder layers; also the longest per-layer list built
    "vocab": 2**24,
    "experts": 2**16,
    "context": 2**32,  # max_position_embeddings, sliding windows, attention chunks [token]
    "rank": 2**20,  # MLA ranks, SSM state size
    "small": 2**10,  # kernels, intervals, MTP layers, patch sizes, bits
}
#: Largest file read: config.json and hf_quant_config.json. [B]
MAX_CONFIG_BYTES = 16 * 2**20
#: Largest safetensors index read: it names every tensor, tens of thousands in large MoE checkpoints. [B]
MAX_INDEX_BYTES = 64 * 2**20
#: Largest accepted rough parameter count: 1000 times the largest published model. [param]
MAX_PARAMS = 10**15

_ESSENTIAL = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
_MISSING: Any = object()
_SHORT = reprlib.Repr()
_SHORT.maxstring, _SHORT.maxother = 40, 40


class ConfigAssumptionWarning(UserWarning):
    """An imported config needed assumptions or approximations; the message lists them all."""


# --- typed, bounded access to one JSON object --------------------------------------------------------


def _show(value: Any) -> str:
    return f"{type(value).__name__} {_SHORT.repr(value)}"


class _Section:
    """One object of a config (top level, ``text_config``, ...) read with types and bounds checked.

    ``defaults`` are the transformers defaults of the section's configuration class; ``notes``
    collects assumptions and is shared by every section of one import.
    """

    def __init__(self, data: Mapping[str, Any], where: str, notes: list[str], defaults: Mapping[str, Any] = {}):
        self.data, self.where, self.notes, self.defaults = data, where, notes, defaults

    def raw(self, key: str) -> Any:
        return self.data[key] if key in self.data else self.defaults.get(key)

    def has(self, key: str) -> bool:
        return self.raw(key) is not None

    def name(self, key: str) -> str:
        return f"{self.where}.{key}"

    def require(self, *keys: str) -> None:
        missing = [key for key in keys if not self.has(key)]
        if missing:
            raise ValueError(f"{self.where} lacks essential keys: {', '.join(missing)}")

    def integer(self, key: str, limit: str, *, default: Any = _MISSING, low: int = 1) -> Any:
        value = self.raw(key)
        if value is None:
            if default is _MISSING:
                raise ValueError(f"{self.where} lacks essential keys: {key}")
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{self.name(key)} must be an integer, got {_show(value)}")
        if value < low:
            raise ValueError(f"{self.name(key)} must be >= {low}, got {value}")
        if value > LIMITS[limit]:
            raise ValueError(f"{self.name(key)} = {value} exceeds the sane bound {LIMITS[limit]}")
        return value

    def opt(self, key: str, limit: str, *, low: int = 1) -> int | None:
        return self.integer(key, limit, default=None, low=low)  # type: ignore[no-any-return]

    def flag(self, key: str, default: bool) -> bool:
        value = self.raw(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise ValueError(f"{self.name(key)} must be true or false, got {_show(value)}")
        return value

    def text(self, key: str, default: str | None = None) -> str | None:
        value = self.raw(key)
        if value is None:
            return default
        if not isinstance(value, str) or len(value) > 200:
            raise ValueError(f"{self.name(key)} must be a short string, got {_show(value)}")
        return value

    def items(self, key: str, limit: int) -> list[Any] | None:
        value = self.raw(key)
        if value is None:
            return None
        if not isinstance(value, list | tuple):
            raise ValueError(f"{self.name(key)} must be a list, got {_show(value)}")
        if len(value) > limit:
            raise ValueError(f"{self.name(key)} has {len(value)} entries, more than the bound {limit}")
        return list(value)

    def section(self, key: str, defaults: Mapping[str, Any] = {}) -> _Section | None:
        value = self.raw(key)
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise ValueError(f"{self.name(key)} must be an object, got {_show(value)}")
        return _Section(value, self.name(key), self.notes, defaults)


# --- layer patterns ----------------------------------------------------------------------------------


def _cycle(kinds: list[str]) -> tuple[str, ...]:
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


def _listed_layers(cfg: _Section, layers: int) -> list[str] | None:
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
            raise ValueError(f"{cfg.name('layer_types')}: unknown layer type {_show(entry)}; known: {known}")
        kinds.append(_HF_LAYER_TYPES[entry])
    return kinds


def _window(cfg: _Section, max_context: int | None) -> int | None:
    """``sliding_window``, or None when absent or no shorter than the context (inert)."""
    window = cfg.opt("sliding_window", "context")
    if window is None or (max_context is not None and window >= max_context):
        return None
    return window


# --- common pieces -----------------------------------------------------------------------------------


def _core(cfg: _Section, *extra: str, mla: bool = False) -> dict[str, Any]:
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


def _biases(cfg: _Section, *, o: bool = True) -> dict[str, bool]:
    bias = cfg.flag("attention_bias", False)
    return {"qkv_bias": bias, "o_bias": bias and o, "ffn_bias": cfg.flag("mlp_bias", False)}


def _uniform(kind: str, core: dict[str, Any]) -> list[str]:
    return [kind] * core["num_layers"]


def _sparse_layers(cfg: _Section, layers: int) -> list[str]:
    """Qwen-MoE rule: layer i is MoE unless listed in ``mlp_only_layers`` or off ``decoder_sparse_step``."""
    step = cfg.integer("decoder_sparse_step", "small", default=1)
    dense_only = cfg.items("mlp_only_layers", LIMITS["layers"]) or []
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in dense_only):
        raise ValueError(f"{cfg.name('mlp_only_layers')} must list layer indices")
    dense = set(dense_only)
    return ["moe" if i not in dense and (i + 1) % step == 0 else "dense" for i in range(layers)]


def _moe(cfg: _Section, experts: str, width: str, **extra: Any) -> MoE:
    cfg.require(experts, "num_experts_per_tok", width)
    num = cfg.integer(experts, "experts")
    top_k = cfg.integer("num_experts_per_tok", "experts")
    if top_k > num:
        raise ValueError(f"{cfg.name('num_experts_per_tok')} = {top_k} exceeds {experts} = {num}")
    return MoE(num_experts=num, experts_per_token=top_k, expert_intermediate_size=cfg.integer(width, "ffn"), **extra)


def _qwen_experts(cfg: _Section, *, shared: bool) -> MoE:
    """Qwen's routed experts, with the gated shared expert of ``shared_expert_intermediate_size`` when the
    family has one (Qwen2-MoE, Qwen3-Next; Qwen3-MoE has none)."""
    width = cfg.integer("shared_expert_intermediate_size", "ffn", default=0, low=0) if shared else 0
    return _moe(
        cfg,
        "num_experts",
        "moe_intermediate_size",
        num_shared_experts=int(width > 0),
        shared_intermediate_size=width or None,
        shared_expert_gate=width > 0,
    )


def _dense_width(cfg: _Section, ffns: list[str], first_dense: int = 0, key: str = "intermediate_size") -> int | None:
    """FFN width of the dense layers, or None when every layer is MoE or has no FFN."""
    if "dense" not in ffns and not first_dense:
        return None
    cfg.require(key)
    return cfg.integer(key, "ffn")  # type: ignore[no-any-return]


# --- architectures -----------------------------------------------------------------------------------

Fields = dict[str, Any]


def _llama(cfg: _Section) -> Fields:
    core = _core(cfg, "intermediate_size")
    layers = _listed_layers(cfg, core["num_layers"]) or _uniform("full", core)
    window = _window(cfg, core["max_context"]) if "sliding" in layers else None
    return {
        **core,
        **_biases(cfg),
        "intermediate_size": cfg.integer("intermediate_size", "ffn"),
        "layers": layers,
        "sliding_window": window,
    }


def _mistral(cfg: _Section) -> Fields:
    """Mistral and Phi-3: ``sliding_window``, when set and shorter than the context, applies to every layer."""
    fields = _llama(cfg)
    window = _window(cfg, fields["max_context"])
    if window is not None and not cfg.has("layer_types"):
        fields.update(layers=_uniform("sliding", fields), sliding_window=window)
    return fields


def _qwen_layers(cfg: _Section, core: Fields) -> tuple[list[str], int | None]:
    """Qwen2/3: with ``use_sliding_window``, layers from ``max_window_layers`` on are sliding."""
    listed = _listed_layers(cfg, core["num_layers"])
    if listed is not None:
        return listed, _window(cfg, core["max_context"]) if "sliding" in listed else None
    window = _window(cfg, core["max_context"]) if cfg.flag("use_sliding_window", False) else None
    if window is None:
        return _uniform("full", core), None
    first = cfg.integer("max_window_layers", "layers", default=28, low=0)
    return ["full" if i < first else "sliding" for i in range(core["num_layers"])], window


def _qwen2(cfg: _Section) -> Fields:
    core = _core(cfg, "intermediate_size")
    layers, window = _qwen_layers(cfg, core)
    return {
        **core,
        "qkv_bias": True,
        "intermediate_size": cfg.integer("intermediate_size", "ffn"),
        "layers": layers,
        "sliding_window": window,
    }


def _qwen3(cfg: _Section) -> Fields:
    return {**_qwen2(cfg), **_biases(cfg), "qk_norm": True}


def _qwen_moe(cfg: _Section, *, qwen3: bool) -> Fields:
    core = _core(cfg)
    layers, window = _qwen_layers(cfg, core)
    ffns = _sparse_layers(cfg, core["num_layers"])
    moe = _qwen_experts(cfg, shared=not qwen3)
    biases = _biases(cfg) if qwen3 else {"qkv_bias": True}
    return {
        **core,
        **biases,
        "qk_norm": qwen3,
        "layers": layers,
        "sliding_window": window,
        "ffns": ffns,
        "moe": moe,
        "intermediate_size": _dense_width(cfg, ffns),
    }


def _qwen3_next(cfg: _Section) -> Fields:
    core = _core(cfg)
    layers = _listed_layers(cfg, core["num_layers"])
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
    ffns = _sparse_layers(cfg, core["num_layers"])
    moe = _qwen_experts(cfg, shared=True)
    return {
        **core,
        **_biases(cfg),
        "qk_norm": True,
        "attention_output_gate": True,
        "layers": layers,
        "linear_attention": linear,
        "ffns": ffns,
        "moe": moe,
        "intermediate_size": _dense_width(cfg, ffns),
    }


def _gemma(cfg: _Section) -> Fields:
    return _llama(cfg)


def _gemma2(cfg: _Section, *, every: int = 2, qk_norm: bool = False) -> Fields:
    """Gemma 2/3: four RMSNorms per layer; ``every``-th layer global, the others sliding."""
    core = _core(cfg, "intermediate_size")
    layers = _listed_layers(cfg, core["num_layers"])
    if layers is None:
        layers = ["sliding" if (i + 1) % every else "full" for i in range(core["num_layers"])]
    window = cfg.opt("sliding_window", "context") if "sliding" in layers else None
    if "sliding" in layers and window is None:
        raise ValueError(f"{cfg.where} lacks essential keys: sliding_window")
    return {
        **core,
        **_biases(cfg),
        "intermediate_size": cfg.integer("intermediate_size", "ffn"),
        "norms_per_layer": 4,
        "qk_norm": qk_norm,
        "layers": layers,
        "sliding_window": window,
    }


def _gemma3_text(cfg: _Section) -> Fields:
    every = cfg.integer("sliding_window_pattern", "small", default=6)
    return _gemma2(cfg, every=every, qk_norm=True)


def _phi3(cfg: _Section) -> Fields:
    return _mistral(cfg)


def _cohere(cfg: _Section) -> Fields:
    """Cohere: attention and FFN in parallel off one bias-free LayerNorm per layer."""
    return {**_llama(cfg), "norm": "layer_nobias", "norms_per_layer": 1, "qk_norm": cfg.flag("use_qk_norm", False)}


def _falcon(cfg: _Section) -> Fields:
    """Falcon: fused QKV, plain GELU MLP of ``ffn_hidden_size`` (4 x hidden), LayerNorms with bias."""
    core = _core(cfg)
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


def _mixtral(cfg: _Section) -> Fields:
    core = _core(cfg)
    fields = {**core, "ffns": _uniform("moe", core), "moe": _moe(cfg, "num_local_experts", "intermediate_size")}
    window = _window(cfg, core["max_context"])
    if window is not None:
        fields.update(layers=_uniform("sliding", core), sliding_window=window)
    return fields


def _llama4_text(cfg: _Section) -> Fields:
    """Llama 4: chunked attention on RoPE layers, global attention on every 4th (NoPE) layer.

    Dense layers use ``intermediate_size_mlp``; experts and the one shared expert ``intermediate_size``.
    The query/key L2 norm has no weights, so ``qk_norm`` stays False.
    """
    core = _core(cfg, "intermediate_size")
    n = core["num_layers"]
    layers = _listed_layers(cfg, n)
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
    moe = _moe(cfg, "num_local_experts", "intermediate_size", num_shared_experts=1)
    return {
        **core,
        **_biases(cfg),
        "layers": layers,
        "attention_chunk_size": chunk,
        "ffns": ffns,
        "moe": moe,
        "intermediate_size": _dense_width(cfg, ffns, key="intermediate_size_mlp"),
    }


def _first_dense(cfg: _Section, layers: int) -> int:
    """``first_k_dense_replace``: leading layers with a dense FFN (DeepSeek, Kimi, GLM-4.5)."""
    first = cfg.integer("first_k_dense_replace", "layers", default=0, low=0)
    if first > layers:
        raise ValueError(f"{cfg.name('first_k_dense_replace')} = {first} exceeds num_hidden_layers = {layers}")
    return first


def _deepseek(cfg: _Section) -> Fields:
    """DeepSeek-V2/V3, Kimi K2: MLA, ``first_k_dense_replace`` dense layers, MoE every ``moe_layer_freq``."""
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
    core = _core(cfg, mla=True)
    core["head_dim"] = mla.qk_nope_head_dim + mla.qk_rope_head_dim
    n = core["num_layers"]
    freq = cfg.integer("moe_layer_freq", "small", default=1)
    ffns = ["moe" if i % freq == 0 else "dense" for i in range(n)]
    first = _first_dense(cfg, n)
    moe = _moe(
        cfg,
        "n_routed_experts",
        "moe_intermediate_size",
        num_shared_experts=cfg.integer("n_shared_experts", "experts", default=0, low=0),
        score_correction_bias=cfg.text("topk_method") == "noaux_tc",
    )
    if cfg.has("index_n_heads"):
        cfg.notes.append(
            "DeepSeek sparse-attention indexer (index_n_heads, index_head_dim) not counted: "
            "its weights and its per-token key cache are left out"
        )
    return {
        **core,
        **_biases(cfg),
        "mla": mla,
        "ffns": ffns,
        "first_dense_layers": first,
        "moe": moe,
        "intermediate_size": _dense_width(cfg, ffns, first),
        "mtp_layers": cfg.integer("num_nextn_predict_layers", "small", default=0, low=0),
    }


_DEEPSEEK_V3 = {"topk_method": "noaux_tc"}


def _gpt_oss(cfg: _Section) -> Fields:
    """gpt-oss: alternating sliding/full layers, attention sinks, biased experts and router."""
    core = _core(cfg)
    layers = _listed_layers(cfg, core["num_layers"])
    if layers is None:
        layers = ["sliding" if (i + 1) % 2 else "full" for i in range(core["num_layers"])]
    window = cfg.integer("sliding_window", "context") if "sliding" in layers else None
    moe = _moe(cfg, "num_local_experts", "intermediate_size", router_bias=True, expert_bias=True)
    return {
        **core,
        **_biases(cfg),
        "attention_sinks": True,
        "layers": layers,
        "sliding_window": window,
        "ffns": _uniform("moe", core),
        "moe": moe,
    }


def _glm4_moe(cfg: _Section) -> Fields:
    """GLM-4.5: QKV bias, optional qk-norm, ``first_k_dense_replace`` dense layers, one MTP layer."""
    core = _core(cfg)
    n = core["num_layers"]
    first = _first_dense(cfg, n)
    moe = _moe(
        cfg,
        "n_routed_experts",
        "moe_intermediate_size",
        num_shared_experts=cfg.integer("n_shared_experts", "experts", default=0, low=0),
        score_correction_bias=True,
    )
    ffns = _uniform("moe", core)
    return {
        **core,
        **_biases(cfg, o=False),
        "qk_norm": cfg.flag("use_qk_norm", False),
        "ffns": ffns,
        "first_dense_layers": first,
        "moe": moe,
        "intermediate_size": _dense_width(cfg, ffns, first),
        "mtp_layers": cfg.integer("num_nextn_predict_layers", "small", default=0, low=0),
    }


_NEMOTRON_BLOCKS = {"M": ("mamba", "none"), "*": ("full", "none"), "E": ("none", "moe"), "-": ("none", "dense")}
_SSM_BYTES = {"float32": 4.0, "bfloat16": 2.0, "float16": 2.0}


def _nemotron_h(cfg: _Section) -> Fields:
    """Nemotron-H: one block per layer, a Mamba-2 mixer (M), attention (*), MoE (E) or MLP (-)."""
    core = _core(cfg, "hybrid_override_pattern")
    pattern = cfg.text("hybrid_override_pattern") or ""
    if len(pattern) != core["num_layers"] or not set(pattern) <= set(_NEMOTRON_BLOCKS):
        raise ValueError(
            f"{cfg.name('hybrid_override_pattern')} must hold one of M * E - for each of "
            f"{core['num_layers']} layers, got {_show(pattern)}"
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
        moe = _moe(
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
        **_biases(cfg),
        "ffn_gated": False,
        "norms_per_layer": 1,
        "layers": layers,
        "ffns": ffns,
        "mamba": mamba,
        "moe": moe,
        "intermediate_size": _dense_width(cfg, ffns),
    }


def _generic(cfg: _Section) -> Fields:
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
        fields = _llama(cfg)
    else:
        width = "moe_intermediate_size" if cfg.has("moe_intermediate_size") else "intermediate_size"
        notes.append(f"every layer taken as MoE ({experts} experts of width {width}), no shared expert")
        core = _core(cfg)
        fields = {**core, **_biases(cfg), "ffns": _uniform("moe", core), "moe": _moe(cfg, experts, width)}
        listed = _listed_layers(cfg, core["num_layers"])
        if listed:
            fields.update(layers=listed, sliding_window=_window(cfg, core["max_context"]))
    if "sliding" in fields.get("layers", ()) and fields.get("sliding_window") is None:
        raise ValueError(f"{cfg.where} lacks essential keys: sliding_window")
    if cfg.has("kv_lora_rank") or cfg.has("hybrid_override_pattern") or cfg.has("linear_num_key_heads"):
        notes.append("MLA, state-space or linear-attention keys present but not understood: layers read as attention")
    return fields


#: transformers defaults of the keys published configs omit, per ``model_type``.
_DEFAULTS: dict[str, dict[str, Any]] = {
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
    "deepseek_v2": {"topk_method": "greedy"},
}

#: Importer of each known ``model_type``.
_ARCHITECTURES: dict[str, Callable[[_Section], Fields]] = {
    "llama": _llama,
    "mistral": _mistral,
    "mixtral": _mixtral,
    "qwen2": _qwen2,
    "qwen2_moe": lambda cfg: _qwen_moe(cfg, qwen3=False),
    "qwen3": _qwen3,
    "qwen3_moe": lambda cfg: _qwen_moe(cfg, qwen3=True),
    "qwen3_next": _qwen3_next,
    "gemma": _gemma,
    "gemma2": _gemma2,
    "gemma3_text": _gemma3_text,
    "phi3": _phi3,
    "cohere": _cohere,
    "falcon": _falcon,
    "llama4_text": _llama4_text,
    "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek,
    "deepseek_v32": _deepseek,
    "kimi_k2": _deepseek,
    "gpt_oss": _gpt_oss,
    "glm4_moe": _glm4_moe,
    "nemotron_h": _nemotron_h,
}


# --- vision towers of multimodal wrappers ------------------------------------------------------------


def _vit(vision: _Section, *, class_token: bool, projector: int) -> Vision:
    vision.require("hidden_size", "num_hidden_layers", "intermediate_size", "patch_size", "image_size")
    patch, image = vision.integer("patch_size", "small"), vision.integer("image_size", "head_dim")
    if patch > image:
        raise ValueError(f"{vision.name('patch_size')} = {patch} exceeds image_size = {image}")
    return Vision(
        hidden_size=vision.integer("hidden_size", "hidden"),
        num_layers=vision.integer("num_hidden_layers", "layers"),
        intermediate_size=vision.integer("intermediate_size", "ffn"),
        patch_size=patch,
        image_size=image,
        num_channels=vision.integer("num_channels", "small", default=3),
        class_token=class_token,
        projector_params=projector,
    )


def _siglip(vision: _Section, top: _Section, text_hidden: int) -> Vision:
    """Gemma 3: SigLIP; projector = mm_input_projection (w x d) + mm_soft_emb_norm (w)."""
    width = vision.integer("hidden_size", "hidden")
    return _vit(vision, class_token=False, projector=width * text_hidden + width)


def _llama4_vision(vision: _Section, top: _Section, text_hidden: int) -> Vision:
    """Llama 4: adapter fc1 (f x p_in) + fc2 (p_out x p_out) + projector (v_out x d), no biases."""
    vision.require("intermediate_size", "projector_input_dim", "projector_output_dim", "vision_output_dim")
    inner = vision.integer("intermediate_size", "ffn")
    p_in, p_out = vision.integer("projector_input_dim", "ffn"), vision.integer("projector_output_dim", "ffn")
    projector = inner * p_in + p_out * p_out + vision.integer("vision_output_dim", "ffn") * text_hidden
    return _vit(vision, class_token=True, projector=projector)


def _pixtral(vision: _Section, top: _Section, text_hidden: int) -> Vision:
    """Mistral 3: RMSNorm (w) + patch merger (w s^2 x w) + linear_1 (w x d) + linear_2 (d x d)."""
    width = vision.integer("hidden_size", "hidden")
    merge = top.integer("spatial_merge_size", "small", default=2)
    bias = top.flag("multimodal_projector_bias", False)
    projector = width + width * merge**2 * width + (width + bias) * text_hidden + (text_hidden + bias) * text_hidden
    top.notes.append(
        "Pixtral vision tower counted as a ViT (plain GELU MLP, LayerNorm); it uses a gated MLP "
        "and RMSNorm, about a quarter more parameters"
    )
    return _vit(vision, class_token=False, projector=projector)


#: Multimodal wrappers: text model_type and vision reader.
_WRAPPERS: dict[str, tuple[str, Callable[[_Section, _Section, int], Vision]]] = {
    "gemma3": ("gemma3_text", _siglip),
    "llama4": ("llama4_text", _llama4_vision),
    "mistral3": ("mistral", _pixtral),
}


# --- precision ---------------------------------------------------------------------------------------

_DTYPES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "float32": "fp32",
    "bf16": "bf16",
    "fp16": "fp16",
    "fp32": "fp32",
    "half": "fp16",
    "float": "fp32",
}


def _dtype(sections: list[_Section]) -> str:
    for section in sections:
        for key in ("dtype", "torch_dtype"):
            name = section.text(key)
            if name is not None and name != "auto":
                if name not in _DTYPES:
                    raise ValueError(f"{section.name(key)}: unknown dtype {name!r}; known: {', '.join(_DTYPES)}")
                return _DTYPES[name]
    return "bf16"


def _int_bits(qc: _Section) -> tuple[str, str]:
    """AWQ / GPTQ: 4- or 8-bit integer weights (``bits``, AutoAWQ's ``w_bit``)."""
    bits = qc.integer("bits" if qc.has("bits") else "w_bit", "small")
    table = {4: "int4", 8: "int8"}
    if bits not in table:
        raise ValueError(f"{qc.where}: {bits}-bit integer weights are not supported; known: 4, 8")
    return table[bits], "all"


def _fp8(qc: _Section) -> tuple[str, str]:
    return "fp8", "all"


def _mxfp4(qc: _Section) -> tuple[str, str]:
    """MXFP4 (gpt-oss): transformers quantizes the MoE experts only; attention, router, embeddings stay 16-bit."""
    return "mxfp4", "experts"


_MODELOPT_ALGOS = {
    "FP8": "fp8",
    "FP8_BLOCK_SCALES": "fp8",
    "FP8_PER_CHANNEL_PER_TOKEN": "fp8",
    "NVFP4": "nvfp4",
    "W4A16_AWQ": "int4",
    "W4A8_AWQ": "int4",
    "W8A8_SQ_PER_CHANNEL": "int8",
    "MXFP4": "mxfp4",
}


def _modelopt(qc: _Section) -> tuple[str, str]:
    """NVIDIA ModelOpt: ``quant_algo`` at the top or under ``quantization`` (hf_quant_config.json)."""
    inner = qc.section("quantization")
    source = inner if inner is not None and inner.has("quant_algo") else qc
    algo = source.text("quant_algo")
    if algo not in _MODELOPT_ALGOS:
        raise ValueError(
            f"{source.name('quant_algo')}: unknown ModelOpt algorithm {algo!r}; known: {', '.join(_MODELOPT_ALGOS)}"
        )
    return _MODELOPT_ALGOS[algo], "all"


_CT_TYPES = {("float", 8): "fp8", ("int", 8): "int8", ("int", 4): "int4"}
_CT_FP4_GROUPS = {16: "nvfp4", 32: "mxfp4"}


def _ct_group(group: _Section) -> str:
    weights = group.section("weights")
    if weights is None:
        raise ValueError(f"{group.where} lacks essential keys: weights")
    kind, bits = weights.text("type") or "int", weights.integer("num_bits", "small")
    if (kind, bits) == ("float", 4):
        size = weights.opt("group_size", "small")
        if size not in _CT_FP4_GROUPS:
            raise ValueError(f"{weights.where}: 4-bit float weights need group_size 16 (nvfp4) or 32 (mxfp4)")
        return _CT_FP4_GROUPS[size]
    if (kind, bits) not in _CT_TYPES:
        known = ", ".join(f"{k} {b}-bit" for k, b in (*_CT_TYPES, ("float", 4)))
        raise ValueError(f"{weights.where}: {kind} {bits}-bit weights are not supported; known: {known}")
    return _CT_TYPES[(kind, bits)]


def _compressed_tensors(qc: _Section) -> tuple[str, str]:
    """compressed-tensors (llm-compressor): each of ``config_groups`` gives its weights' type and bits."""
    groups = qc.section("config_groups")
    if groups is None or not groups.data:
        raise ValueError(f"{qc.where} lacks essential keys: config_groups")
    if len(groups.data) > 64:
        raise ValueError(f"{groups.where} has more than 64 groups")
    found = []
    for name in groups.data:
        group = groups.section(name) if isinstance(name, str) else None
        if group is None:
            raise ValueError(f"{groups.where}: group {_show(name)} must be an object")
        found.append(_ct_group(group))
    if len(set(found)) > 1:
        qc.notes.append(f"compressed-tensors groups use {', '.join(found)}: weights taken as {found[0]} (first group)")
    return found[0], "all"


#: Reader of each ``quant_method``: returns the precision and whether it covers all linear layers or experts only.
_QUANT_METHODS: dict[str, Callable[[_Section], tuple[str, str]]] = {
    "fp8": _fp8,
    "fbgemm_fp8": _fp8,
    "awq": _int_bits,
    "gptq": _int_bits,
    "mxfp4": _mxfp4,
    "modelopt": _modelopt,
    "compressed-tensors": _compressed_tensors,
}


def _quantization(sections: list[_Section], hf_quant: _Section | None) -> tuple[str, str] | None:
    for section in sections:
        qc = section.section("quantization_config")
        if qc is not None:
            method = qc.text("quant_method")
            if method is None or method.lower() not in _QUANT_METHODS:
                raise ValueError(
                    f"{qc.name('quant_method')}: unknown quantization method {method!r}; "
                    f"known: {', '.join(_QUANT_METHODS)}"
                )
            return _QUANT_METHODS[method.lower()](qc)
    if hf_quant is not None:
        return _modelopt(hf_quant)
    return None


# --- reading files -----------------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"JSON constant {name} is not a number")


def _read_json(path: Path, limit: int = MAX_CONFIG_BYTES) -> Any:
    """Parse one JSON file of at most ``limit`` bytes with the standard library."""
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    if not path.is_file():
        raise ValueError(f"{path} is not a regular file")
    if path.stat().st_size > limit:
        raise ValueError(f"{path} is larger than {limit} bytes; not a config file")
    with path.open("rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{path} is larger than {limit} bytes; not a config file")
    try:
        return json.loads(data.decode("utf-8-sig"), parse_constant=_reject_constant)
    except UnicodeDecodeError as error:
        raise ValueError(f"{path} is not UTF-8 text: {error}") from None
    except RecursionError:
        raise ValueError(f"{path} nests JSON too deeply") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON: {error}") from None


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"{where} must hold a JSON object, got {_show(value)}")
    return value


def _locate(source: str | Path | Mapping[str, Any]) -> tuple[Mapping[str, Any], Path | None, str]:
    """The config mapping, the checkpoint folder (None for a mapping) and a label for messages."""
    if isinstance(source, Mapping):
        return source, None, "config"
    if not isinstance(source, str | Path):
        raise ValueError(f"source must be a path or a mapping, got {_show(source)}")
    path = Path(source)
    if path.is_dir():
        path = path / "config.json"
    return _object(_read_json(path), str(path)), path.parent, str(path)


# --- assembly ----------------------------------------------------------------------------------------


def _rough_params(f: Fields) -> int:
    """A generous upper bound on the parameter count, to reject absurd shapes before anything multiplies them."""
    d, moe = f["hidden_size"], f.get("moe")
    width = max(f["num_heads"], f["num_kv_heads"]) * f["head_dim"] + d
    ffn = (f.get("intermediate_size") or 0) + (
        moe.num_experts * moe.expert_intermediate_size + moe.shared_width if moe else 0
    )
    mla = f.get("mla")
    if mla is not None:
        width += (mla.q_lora_rank or 0) + mla.kv_lora_rank + f["num_heads"] * (mla.qk_nope_head_dim + mla.v_head_dim)
    for block in (f.get("mamba"), f.get("linear_attention")):
        if block is not None:
            width += 4 * sum(v for v in block.model_dump().values() if isinstance(v, int))
    per_layer = 6 * d * width + 3 * d * ffn
    vision = f.get("vision")
    extra = vision.num_layers * 12 * vision.hidden_size**2 + vision.projector_params if vision else 0
    return (f["num_layers"] + f.get("mtp_layers", 0)) * per_layer + 2 * f["vocab_size"] * d + extra


def _fields(top: _Section, hf_quant: _Section | None) -> Fields:
    """Architecture fields of ``Model`` for the config ``top``, wrappers and precision included."""
    model_type = top.text("model_type")
    wrapper = _WRAPPERS.get(model_type or "")
    inner = top.section("text_config")
    if inner is not None:
        model_type = inner.text("model_type") or (wrapper[0] if wrapper else None)
    text = _Section((inner or top).data, (inner or top).where, top.notes, _DEFAULTS.get(model_type or "", {}))
    build = _ARCHITECTURES.get(model_type or "")
    if build is None:
        top.notes.insert(
            0,
            f"model_type {model_type!r} is not one gpusizer knows ({', '.join(sorted(_ARCHITECTURES))}); "
            "read as a Llama-like decoder from the standard keys",
        )
        build = _generic
    fields = build(text)
    vision = top.section("vision_config") if inner is not None else None
    if vision is not None:
        if wrapper is None:
            top.notes.append(f"vision tower of {top.text('model_type')!r} not counted (vision_config ignored)")
        else:
            fields["vision"] = wrapper[1](vision, top, fields["hidden_size"])
    activation = _dtype([top, text])
    fields.update(activation_dtype=activation, weights=activation)
    quant = _quantization([top, text], hf_quant)
    if quant is not None:
        precision, scope = quant
        fields["expert_weights" if scope == "experts" and fields.get("moe") else "weights"] = precision
    return fields


def _record(fields: Fields, where: str) -> Fields:
    """Turn per-layer lists into the shortest repeating pattern and drop unset optional fields."""
    layers = fields.pop("layers", None) or ["full"] * fields["num_layers"]
    if "sliding" in layers and fields.get("sliding_window") is None:
        raise ValueError(f"{where}: sliding layers need a sliding_window shorter than max_position_embeddings")
    ffns = fields.pop("ffns", None) or ["dense"] * fields["num_layers"]
    fields["layer_types"], fields["ffn_types"] = _cycle(layers), _cycle(ffns)
    return {key: value for key, value in fields.items() if value is not None}


def _default_id(config: Mapping[str, Any], folder: Path | None) -> str:
    if folder is not None and folder.parent.name == "snapshots" and folder.parent.parent.name.startswith("models--"):
        return folder.parent.parent.name.rsplit("--", 1)[-1].lower()  # Hugging Face cache: models--org--name
    if folder is not None and folder.name:
        return folder.name.lower()
    named = config.get("_name_or_path")
    if isinstance(named, str) and named.strip() and len(named) < 200:
        return named.rstrip("/").rsplit("/", 1)[-1].lower()
    kind = config.get("model_type")
    return kind if isinstance(kind, str) and kind and len(kind) < 100 else "imported-model"


def from_hf_config(source: str | Path | Mapping[str, Any], *, id: str | None = None, name: str | None = None) -> Model:
    """Build a ``Model`` record from a Hugging Face ``config.json``.

    Parameters
    ----------
    source : str, Path or Mapping
        A path to a ``config.json``, a checkpoint folder holding one, or the parsed mapping. Beside a
        file, ``hf_quant_config.json`` is read too when present.
    id : str, optional
        Record id; default the folder name, else the last part of ``_name_or_path``, else
        ``model_type``.
    name : str, optional
        Display name; default ``id``.

    Returns
    -------
    Model
        The architecture, with ``family`` set to the ``model_type``, ``source`` to the path read and
        ``checked`` to today. ``published`` is left empty.

    Raises
    ------
    FileNotFoundError
        When the path, or ``config.json`` in the folder, does not exist.
    ValueError
        For anything that is not a usable config: the message names the key and the problem.

    Warns
    -----
    ConfigAssumptionWarning
        Once, listing every assumption, for an unknown ``model_type`` or an approximated part.

    Examples
    --------
    >>> m = from_hf_config({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
    ...                     "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
    ...                     "intermediate_size": 14336, "max_position_embeddings": 131072,
    ...                     "torch_dtype": "bfloat16"}, id="llama-3.1-8b")
    >>> m.num_kv_heads, m.head_dim, m.weights, m.layer_types
    (8, 128, 'bf16', ('full',))
    """
    config, folder, label = _locate(source)
    notes: list[str] = []
    top = _Section(_object(config, label), label, notes)
    hf_quant = None
    if folder is not None and (folder / "hf_quant_config.json").exists():
        path = folder / "hf_quant_config.json"
        hf_quant = _Section(_object(_read_json(path), str(path)), str(path), notes)
    fields = _record(_fields(top, hf_quant), label)
    if _rough_params(fields) > MAX_PARAMS:
        raise ValueError(f"{label} describes more than {MAX_PARAMS:.0e} parameters; not a real model")
    model_type = config.get("model_type")
    record_id = id if id is not None else _default_id(config, folder)
    meta = {
        "id": record_id,
        "name": name if name is not None else record_id,
        "family": model_type if isinstance(model_type, str) and model_type else "unknown",
        "source": (f"Hugging Face config.json: {label}",),
        "checked": datetime.date.today(),
        "notes": "; ".join(notes),
    }
    try:
        record = Model(**meta, **fields)
    except ValidationError as error:
        raise ValueError(f"{label} does not describe a valid model: {error}") from None
    if notes:
        warnings.warn(f"{label}: assumptions made: " + "; ".join(notes), ConfigAssumptionWarning, stacklevel=2)
    return record


def checkpoint_bytes(folder: str | Path) -> int | None:
    """Exact bytes of the tensors a checkpoint folder stores, or None when it holds no safetensors.

    Parameters
    ----------
    folder : str or Path
        A checkpoint folder (a path to a file in it is taken as its folder).

    Returns
    -------
    int or None
        ``metadata.total_size`` of ``model.safetensors.index.json`` (or ``pytorch_model.bin.index.json``),
        else the tensor bytes of a single ``model.safetensors`` (file size less its JSON header). [B]

    Raises
    ------
    FileNotFoundError
        When ``folder`` does not exist.
    ValueError
        When an index or header is malformed.
    """
    path = Path(folder)
    if not path.exists():
        raise FileNotFoundError(f"no such folder: {path}")
    if path.is_file():
        path = path.parent
    for index in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        if (path / index).exists():
            data = _object(_read_json(path / index, MAX_INDEX_BYTES), index)
            meta = _Section(data, index, []).section("metadata")
            if meta is None:
                raise ValueError(f"{path / index} lacks essential keys: metadata.total_size")
            total = meta.raw("total_size")
            if isinstance(total, bool) or not isinstance(total, int) or not 0 < total < 2**53:
                raise ValueError(f"{meta.name('total_size')} must be a positive integer, got {_show(total)}")
            return total
    single = path / "model.safetensors"
    if single.is_file():
        size = single.stat().st_size
        with single.open("rb") as handle:
            head = handle.read(8)
        header = int.from_bytes(head, "little") if len(head) == 8 else -1
        if not 0 <= header <= size - 8:
            raise ValueError(f"{single} has no valid safetensors header")
        return size - 8 - header
    return None


def architectures() -> tuple[str, ...]:
    """Every ``model_type`` read without assumptions, multimodal wrappers included."""
    return tuple(sorted((*_ARCHITECTURES, *_WRAPPERS)))


def quantization_methods() -> tuple[str, ...]:
    """Every ``quantization_config.quant_method`` understood."""
    return tuple(_QUANT_METHODS)
