"""Checkpoint precision: ``torch_dtype``/``dtype`` and the ``quantization_config`` methods.

Methods: fp8 (and fbgemm_fp8), AWQ/GPTQ integer bits, MXFP4 (experts only), NVIDIA ModelOpt
(``quant_algo``, also from ``hf_quant_config.json``) and compressed-tensors (``config_groups``).
The modules a config leaves unquantized (``modules_to_not_convert``, ``ignore``, ``exclude_modules``...)
become the record's ``unquantized_roles`` and ``unquantized_layers`` (``unquantized_parts``).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable

from gpusizer.hf.section import Section, show

__all__ = [
    "excluded_modules", "modelopt", "quantization_methods", "read_dtype", "read_quantization", "unquantized_parts",
]


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


def read_dtype(sections: list[Section]) -> str:
    """Checkpoint dtype from the first section with ``dtype``/``torch_dtype`` (not ``auto``); bf16 when absent."""
    for section in sections:
        for key in ("dtype", "torch_dtype"):
            name = section.text(key)
            if name is not None and name != "auto":
                if name not in _DTYPES:
                    raise ValueError(f"{section.name(key)}: unknown dtype {name!r}; known: {', '.join(_DTYPES)}")
                return _DTYPES[name]
    return "bf16"


def _int_bits(qc: Section) -> tuple[str, str]:
    """AWQ / GPTQ: 4- or 8-bit integer weights (``bits``, AutoAWQ's ``w_bit``)."""
    bits = qc.integer("bits" if qc.has("bits") else "w_bit", "small")
    table = {4: "int4", 8: "int8"}
    if bits not in table:
        raise ValueError(f"{qc.where}: {bits}-bit integer weights are not supported; known: 4, 8")
    return table[bits], "all"


def _fp8(qc: Section) -> tuple[str, str]:
    """FP8 (``fp8``, ``fbgemm_fp8``): every linear layer."""
    return "fp8", "all"


def _mxfp4(qc: Section) -> tuple[str, str]:
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


def modelopt(qc: Section) -> tuple[str, str]:
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


def _ct_group(group: Section) -> str:
    """Precision of one compressed-tensors group from its ``weights`` type, bits and group size."""
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
    if (kind, bits) == ("int", 4) and weights.opt("group_size", "small") == 32 and weights.flag("symmetric", False):
        return "int4-g32"  # Kimi K2-Thinking / K2.5: one BF16 scale per 32 weights, 4.5 bits (not g128's 4.156)
    return _CT_TYPES[(kind, bits)]


def _compressed_tensors(qc: Section) -> tuple[str, str]:
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
            raise ValueError(f"{groups.where}: group {show(name)} must be an object")
        found.append(_ct_group(group))
    if len(set(found)) > 1:
        qc.notes.append(f"compressed-tensors groups use {', '.join(found)}: weights taken as {found[0]} (first group)")
    return found[0], "all"


#: Reader of each ``quant_method``: returns the precision and whether it covers all linear layers or experts only.
_QUANT_METHODS: dict[str, Callable[[Section], tuple[str, str]]] = {
    "fp8": _fp8,
    "fbgemm_fp8": _fp8,
    "awq": _int_bits,
    "gptq": _int_bits,
    "mxfp4": _mxfp4,
    "modelopt": modelopt,
    "compressed-tensors": _compressed_tensors,
}


def read_quantization(sections: list[Section], hf_quant: Section | None) -> tuple[str, str] | None:
    """(precision, "all" or "experts") from ``quantization_config`` or ``hf_quant_config.json``; None if absent."""
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
        return modelopt(hf_quant)
    return None


def quantization_methods() -> tuple[str, ...]:
    """Every ``quantization_config.quant_method`` understood."""
    return tuple(_QUANT_METHODS)


#: Keys that list the modules a quantization config leaves in the checkpoint dtype, by method: transformers'
#: ``modules_to_not_convert`` (fbgemm_fp8, fp8, mxfp4, awq, bitsandbytes), compressed-tensors' ``ignore``,
#: ModelOpt's ``exclude_modules`` and the ``ignored_layers`` some fp8 exporters write.
_EXCLUDE_KEYS = ("modules_to_not_convert", "ignore", "exclude_modules", "ignored_layers")
#: A Llama-style module name of each role in layer ``{i}``; a role is excluded in a layer when any matches.
#: ``ffn`` (``Model.unquantized_roles``: the dense FFN and the shared experts) also names the shared experts of an
#: MoE layer as huggingface/transformers names them: ``mlp.shared_experts`` (``DeepseekV3MoE``,
#: @00b676f8f0489b88652a31d70751cc540dd06305:src/transformers/models/deepseek_v3/modeling_deepseek_v3.py) and
#: ``mlp.shared_expert`` (``Qwen2MoeSparseMoeBlock``, @00a3f9386614dde0dc41cf4e9b8d0abd3af0671d:
#: src/transformers/models/qwen2_moe/modeling_qwen2_moe.py), each a gate/up/down MLP. The router ``mlp.gate``
#: (those two and ``Qwen3MoeSparseMoeBlock``, @00d4b3d2142cb4ced2f51b90614b5d26bc045015:
#: src/transformers/models/qwen3_moe/modeling_qwen3_moe.py) and Qwen2-MoE's ``mlp.shared_expert_gate`` are no
#: role: ``architecture.moe_params`` counts them as vectors, sized at the activation dtype whatever the format.
_FFN = ("gate_proj", "up_proj", "down_proj")
_ROLE_MODULES = {
    "attention": ("model.layers.{i}.self_attn.q_proj", "model.layers.{i}.self_attn.k_proj",
                  "model.layers.{i}.self_attn.v_proj", "model.layers.{i}.self_attn.o_proj"),
    "ffn": tuple(f"model.layers.{{i}}.mlp.{block}{p}" for block in ("", "shared_experts.", "shared_expert.")
                 for p in _FFN),
}


def excluded_modules(sections: list[Section], hf_quant: Section | None) -> list[str]:
    """Module patterns the first ``quantization_config`` (or ``hf_quant_config.json``) leaves unquantized."""
    configs = [qc for qc in (s.section("quantization_config") for s in sections) if qc is not None][:1]
    if not configs and hf_quant is not None:
        inner = hf_quant.section("quantization")
        configs = [inner if inner is not None else hf_quant]
    found: list[str] = []
    for qc in configs:
        for key in _EXCLUDE_KEYS:
            for entry in qc.items(key, 100_000) or []:
                if not isinstance(entry, str) or len(entry) > 300:
                    raise ValueError(f"{qc.name(key)} entries must be short strings, got {show(entry)}")
                found.append(entry)
    return found


def _matches(pattern: str, module: str) -> bool:
    """Whether a module name is excluded by one entry: ``re:`` regex (compressed-tensors), glob, or the
    module itself or a parent of it (``model.layers.0.self_attn`` covers its projections)."""
    if pattern.startswith("re:"):
        try:
            return re.match(pattern[3:], module) is not None
        except re.error as error:
            raise ValueError(f"exclusion pattern {pattern!r} is not a regular expression: {error}") from None
    if "*" in pattern or "?" in pattern:
        return fnmatch.fnmatchcase(module, pattern) or fnmatch.fnmatchcase(module, pattern + ".*")
    return module == pattern or module.startswith(pattern + ".") or module.endswith("." + pattern)


def unquantized_parts(patterns: list[str], num_layers: int) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """``(unquantized_roles, unquantized_layers)`` of a model from its excluded module patterns.

    A role (``attention``: the mixer's projections; ``ffn``: the dense FFN or an MoE layer's shared experts)
    excluded in every layer is a role; the layers where some role is excluded otherwise are listed whole.
    Embeddings, the LM head, routers (``mlp.gate``, ``mlp.shared_expert_gate``) and norms are left in the
    activation dtype by every Hugging Face format anyway, and routed experts follow ``expert_weights``, so their
    entries change nothing.

    Examples
    --------
    >>> unquantized_parts(["model.layers.*.self_attn", "lm_head"], 4)
    (('attention',), ())
    >>> unquantized_parts(["model.layers.0.mlp.down_proj", "model.layers.3.mlp.up_proj"], 4)
    ((), (0, 3))
    >>> unquantized_parts([f"model.layers.{i}.mlp.{m}" for i in range(2) for m in ("gate", "shared_expert")], 2)
    (('ffn',), ())
    """
    if not patterns:
        return (), ()
    excluded = {
        role: [any(_matches(p, m.format(i=i)) for p in patterns for m in modules) for i in range(num_layers)]
        for role, modules in _ROLE_MODULES.items()
    }
    roles = tuple(role for role, layers in excluded.items() if all(layers))
    layers = tuple(i for i in range(num_layers) if any(excluded[r][i] for r in excluded if r not in roles))
    return roles, layers
