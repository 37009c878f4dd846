"""A GGUF model's metadata as a Hugging Face-like config, read by ``hf.from_hf_config`` into a ``Model``.

llama.cpp writes the architecture under ``general.architecture`` and its hyperparameters under
``{arch}.*`` (ggml-org/ggml:docs/gguf.md "LLM" keys; ggml-org/llama.cpp:src/llama-arch.cpp ``LLM_KV_*``,
checked 2026-12-05). ``ARCHITECTURES`` maps each GGUF architecture read to the ``model_type`` whose
``hf`` reader builds the record, and ``KEYS`` each ``{arch}.`` key to the config key it stands for.
The vocabulary is the rows of ``token_embd.weight`` (else the length of ``tokenizer.ggml.tokens``),
embeddings are tied when there is no ``output.weight``, and biases follow the tensors present.
Any other architecture is refused (a ``ValueError`` listing those read), never guessed.

Precision: ``general.file_type`` names the llama.cpp quantisation mix (``LlamaFileType``); those the
catalogue has a precision for (``FILE_TYPES``) keep their name, any other is labelled with the catalogue
GGUF precision nearest its bits per weight, and says so in the record's notes. The label sets the
kernels' compute precision only: the weights are sized from the tensors' own bytes
(``Model.stored_weights``). llama.cpp computes and caches keys and values in F16 by default, so the
activation dtype is ``fp16``.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

from gpusizer import precision
from gpusizer.catalog import Model
from gpusizer.gguf.files import read_parts, stored_weights, tensor_part
from gpusizer.gguf.header import Header, Skipped
from gpusizer.hf import ConfigAssumptionWarning, from_hf_config

__all__ = ["ARCHITECTURES", "FILE_TYPES", "KEYS", "from_gguf", "hf_config"]

#: GGUF ``general.architecture`` -> ``(model_type, key of the routed-expert count)`` of the ``hf`` reader.
ARCHITECTURES: dict[str, tuple[str, str]] = {
    "llama": ("llama", "num_local_experts"),  # Mixtral is llama with experts
    "qwen2": ("qwen2", "num_experts"),
    "qwen2moe": ("qwen2_moe", "num_experts"),
    "qwen3": ("qwen3", "num_experts"),
    "qwen3moe": ("qwen3_moe", "num_experts"),
    "gemma": ("gemma", "num_experts"),
    "gemma2": ("gemma2", "num_experts"),
    "gemma3": ("gemma3_text", "num_experts"),
    "phi3": ("phi3", "num_experts"),
    "gpt-oss": ("gpt_oss", "num_local_experts"),
    "deepseek2": ("deepseek_v3", "n_routed_experts"),
}

#: ``{arch}.`` key -> the Hugging Face config key it stands for (``EXPERTS``: the reader's expert count key).
KEYS: dict[str, str] = {
    "context_length": "max_position_embeddings",
    "block_count": "num_hidden_layers",
    "embedding_length": "hidden_size",
    "feed_forward_length": "intermediate_size",
    "attention.head_count": "num_attention_heads",
    "attention.head_count_kv": "num_key_value_heads",
    "attention.key_length": "head_dim",
    "attention.sliding_window": "sliding_window",
    "expert_count": "EXPERTS",
    "expert_used_count": "num_experts_per_tok",
    "expert_feed_forward_length": "moe_intermediate_size",
    "expert_shared_feed_forward_length": "shared_expert_intermediate_size",
    "expert_shared_count": "n_shared_experts",
    "leading_dense_block_count": "first_k_dense_replace",
    "attention.q_lora_rank": "q_lora_rank",
    "attention.kv_lora_rank": "kv_lora_rank",
}

#: ``general.file_type`` (llama.cpp ``llama_ftype``) -> catalogue precision of the same name.
FILE_TYPES: dict[int, str] = {
    0: "fp32", 1: "fp16", 2: "q4_0", 7: "q8_0", 10: "q2_k", 12: "q3_k_m", 15: "q4_k_m", 17: "q5_k_m", 18: "q6_k",
    32: "bf16",
}


def _vocab(header: Header, tensors: dict[str, Any]) -> Any:
    """Rows of ``token_embd.weight``, else the length of ``tokenizer.ggml.tokens``, else None."""
    embedding = tensors.get("token_embd.weight")
    if embedding is not None and len(embedding.dims) == 2:
        return embedding.dims[1]
    tokens = header.metadata.get("tokenizer.ggml.tokens")
    return tokens.length if isinstance(tokens, Skipped) else len(tokens) if isinstance(tokens, list) else None


def _deepseek(meta: dict[str, Any], arch: str, config: dict[str, Any]) -> None:
    """MLA head widths: ``rope.dimension_count`` is the rotary part; the ``_mla`` lengths (newer files store
    the absorbed widths as ``key_length``/``value_length``) or the plain ones give the per-head widths."""
    rope = meta.get(f"{arch}.rope.dimension_count")
    key = meta.get(f"{arch}.attention.key_length_mla", meta.get(f"{arch}.attention.key_length"))
    value = meta.get(f"{arch}.attention.value_length_mla", meta.get(f"{arch}.attention.value_length"))
    config.pop("head_dim", None)
    config.update(qk_rope_head_dim=rope, qk_nope_head_dim=key - rope if isinstance(key, int) and isinstance(rope, int)
                  else key, v_head_dim=value)
    if meta.get(f"{arch}.expert_gating_func") == 1:  # softmax gating: DeepSeek-V2
        config["model_type"] = "deepseek_v2"


def hf_config(headers: tuple[Header, ...]) -> dict[str, Any]:
    """The Hugging Face-like config of a GGUF model (``KEYS``, ``ARCHITECTURES``): the metadata of its first
    part, the tensors of every part.

    Raises
    ------
    ValueError
        Naming the file, when ``general.architecture`` is missing or not one of ``ARCHITECTURES``.
    """
    header = headers[0]
    meta, label = header.metadata, str(header.path)
    arch = meta.get("general.architecture")
    if not isinstance(arch, str) or arch not in ARCHITECTURES:
        raise ValueError(f"{label}: GGUF architecture {arch!r} is not one gpusizer reads; "
                         f"known: {', '.join(sorted(ARCHITECTURES))}")
    model_type, experts = ARCHITECTURES[arch]
    config: dict[str, Any] = {"model_type": model_type}
    for key, hf_key in KEYS.items():
        if f"{arch}.{key}" in meta:
            config[experts if hf_key == "EXPERTS" else hf_key] = meta[f"{arch}.{key}"]
    if not config.get(experts):  # expert_count 0: a dense model
        config.pop(experts, None)
    elif model_type == "llama":
        config["model_type"] = "mixtral"
    if model_type == "gpt_oss":  # its reader takes the expert width as intermediate_size
        config["intermediate_size"] = config.pop("moe_intermediate_size", None)
    if model_type.startswith("deepseek"):
        _deepseek(meta, arch, config)
    tensors = {t.name: t for h in headers for t in h.tensors}
    config["vocab_size"] = _vocab(header, tensors)
    config["tie_word_embeddings"] = "output.weight" not in tensors and "token_embd.weight" in tensors
    config["attention_bias"] = any(f"blk.0.attn_{p}.bias" in tensors for p in ("q", "qkv"))
    config["mlp_bias"] = "blk.0.ffn_up.bias" in tensors
    out = {key: value for key, value in config.items() if value is not None}
    if model_type.startswith("deepseek"):
        out["q_lora_rank"] = out.get("q_lora_rank") or None  # 0 or absent: no query compression (V2-Lite)
    return out


def _precisions(headers: tuple[Header, ...], file_type: Any) -> tuple[str, str | None, list[str]]:
    """``Model.weights``, ``expert_weights`` and notes from ``general.file_type``: ``FILE_TYPES``, else the
    nearest catalogue GGUF precision to the bits per weight of the 2-D tensors outside the routed experts."""
    tensors = [t for h in headers for t in h.tensors if len(t.dims) > 1]
    experts = [t for t in tensors if tensor_part(t) == "experts"]
    mxfp4 = "mxfp4" if experts and all(t.type_name == "MXFP4" for t in experts) else None
    if isinstance(file_type, int) and not isinstance(file_type, bool) and file_type in FILE_TYPES:
        return FILE_TYPES[file_type], mxfp4, []
    dense = [t for t in tensors if tensor_part(t) != "experts"] or tensors
    elements = sum(math.prod(t.dims) for t in dense)
    bits = 8 * sum(t.nbytes for t in dense) / elements if elements else 16.0
    known = [p for p in precision.PRECISIONS.values() if p.covers_embeddings or p.name in ("fp16", "fp32")]
    nearest = min(known, key=lambda p: abs(p.bits - bits))
    if abs(nearest.bits - bits) < 1e-9:  # exactly a catalogue format (an F16 file without general.file_type)
        return nearest.name, mxfp4, []
    note = (f"general.file_type {file_type!r}: labelled {nearest.name}, the catalogue precision nearest its "
            f"{bits:.2f} bits per weight; its weights are sized from the tensors' own bytes")
    return nearest.name, mxfp4, [note]


def from_gguf(path: str | Path, *, id: str | None = None, name: str | None = None) -> Model:
    """Build a ``Model`` record from a GGUF file (and the other parts of a split model beside it).

    Parameters
    ----------
    path : str or Path
        A ``.gguf`` file, or any part of a split model (``NAME-00001-of-00003.gguf``).
    id : str, optional
        Record id; default the file name without the split suffix and ``.gguf``, lower case.
    name : str, optional
        Display name; default ``general.name``, else ``id``.

    Returns
    -------
    Model
        The architecture (``hf.from_hf_config`` of ``hf_config``), with ``stored_weights`` the bytes the
        tensors store (``files.stored_weights``), ``activation_dtype`` ``fp16`` and ``source`` the files.

    Raises
    ------
    FileNotFoundError
        When ``path`` does not exist.
    ValueError
        Naming the file: a malformed or hostile header (``header.read_header``), a missing split part,
        an architecture not read, or metadata that does not describe a valid model.

    Warns
    -----
    ConfigAssumptionWarning
        Once, listing every assumption: a ``general.file_type`` labelled by the nearest precision, and
        those of ``hf.from_hf_config``.
    """
    headers = read_parts(path)
    first = headers[0]
    config = hf_config(headers)
    weights, experts, notes = _precisions(headers, first.metadata.get("general.file_type"))
    config.update(torch_dtype="float16")
    stem = first.path.name.removesuffix(".gguf")
    record_id = id or (stem.rsplit("-", 3)[0] if len(headers) > 1 else stem).lower()
    general = first.metadata.get("general.name")
    display = name or (general if isinstance(general, str) and 0 < len(general) < 200 else record_id)
    base = from_hf_config(config, id=record_id, name=display)
    files = ", ".join(str(h.path) for h in headers)
    update = {"weights": weights, "expert_weights": experts, "activation_dtype": "fp16",
              "stored_weights": stored_weights(headers), "source": (f"GGUF: {files}",),
              "notes": "; ".join(filter(None, [base.notes, *notes]))}
    record = Model.model_validate({**base.model_dump(), **update})
    if notes:
        warnings.warn(f"{first.path}: assumptions made: " + "; ".join(notes), ConfigAssumptionWarning, stacklevel=2)
    return record
