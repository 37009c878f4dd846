"""A safetensors checkpoint's weights as stored: every tensor put into the parts layouts treat apart.

``stored_weights`` sums the tensors that ``tensors.read_checkpoint`` read from the headers into the same
``StoredWeights`` a GGUF file gives (``gguf.stored_weights``), so that ``parallel.weight_parts`` and
``unpack.model_numbers`` size a Hugging Face checkpoint from its bytes at its own precision, exactly as a
GGUF file. The part of a tensor follows from its name, as transformers' modeling files name the modules
(checked 2026-12-05):

* ``embedding``: ``*embed_tokens.weight`` (``LlamaModel.embed_tokens``,
  huggingface/transformers@5dd4a63548857797727ae73eeb6a6e886ea02a3e:src/transformers/models/llama/modeling_llama.py;
  ``model.language_model.embed_tokens`` in the multimodal wrappers), ``wte``, ``word_embeddings`` (Falcon),
  ``tok_embeddings`` and ``embeddings`` (Nemotron-H's ``backbone.embeddings``);
* ``head``: ``lm_head.*`` (``LlamaForCausalLM.lm_head``; every tensor of it, the scales of a quantised head
  included) and ``embed_out`` (GPT-NeoX); when the config ties the embeddings a stored head is not loaded;
* ``experts``: ``*.experts.*``, one tensor per expert (``mlp.experts.E.gate_proj``, Mixtral's
  ``block_sparse_moe.experts.E.w1``) or fused over the experts (gpt-oss ``mlp.experts.gate_up_proj_blocks``,
  ``_scales`` and ``_bias``, huggingface/transformers@6edf5b311854175ff83c59179b3360beca1ceffc:
  src/transformers/models/gpt_oss/modeling_gpt_oss.py and its MXFP4 integration; Llama 4's
  ``feed_forward.experts.gate_up_proj``); shared experts (``shared_experts``, ``shared_expert``) and routers
  (``mlp.gate``) are per-layer weights;
* not loaded: multi-token-prediction modules, ``mtp.*`` (Qwen3-Next) or a decoder layer numbered at or past
  ``num_hidden_layers`` (DeepSeek-V3's ``model.layers.61``, which ``DeepseekV3Model`` ignores on load:
  ``_keys_to_ignore_on_load_unexpected = [r"model\\.layers\\.61.*"]``,
  huggingface/transformers@00b676f8f0489b88652a31d70751cc540dd06305:
  src/transformers/models/deepseek_v3/modeling_deepseek_v3.py); serving engines load them only for
  speculative decoding, as ``precision.stored_weight_bytes(include_mtp=False)`` counts;
* ``layers``: everything else, the vision tower and projector included (``vision_tower``, ``visual``,
  ``vision_model``, ``multi_modal_projector``, InternVL's ``mlp1``; ``LlavaModel.vision_tower`` and
  ``multi_modal_projector``, whose older checkpoints name the text model ``language_model.model`` and the head
  ``language_model.lm_head``: ``_checkpoint_conversion_mapping`` of
  huggingface/transformers@00d3cdbeaab26587a543f75df7997a53a6fb146b:src/transformers/models/llava/modeling_llava.py),
  of which tensors of at most one dimension (norms, biases, per-tensor scales) are ``replicated`` under tensor
  parallelism, as for GGUF.

``unquantized_found`` reads which decoder roles a quantised checkpoint stores in 16-bit
(``quantization.unquantized_parts`` of the 16-bit linear weights' module names), so that a role the
quantization config did not declare becomes visible and is counted in ``Model.unquantized_roles``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping

from gpusizer.catalog import Model, StoredWeights
from gpusizer.hf.quantization import unquantized_parts
from gpusizer.hf.tensors import SIXTEEN_BIT, CheckpointTensors, Tensor

__all__ = ["PARTS", "from_sums", "stored_weights", "tensor_part", "tensor_parts", "unquantized_found",
           "with_stored_weights"]

#: The parts ``tensor_part`` names: those of ``StoredWeights`` and ``not_loaded``.
PARTS = ("layers", "experts", "embedding", "head", "not_loaded")

_VISION = re.compile(r"(^|\.)(vision_tower|visual|vision_model|vision_encoder|multi_modal_projector|mm_projector|"
                     r"mlp1)\.")
_EMBEDDING = re.compile(r"(^|\.)(embed_tokens|wte|word_embeddings|tok_embeddings|embeddings)\.weight$")
_HEAD = re.compile(r"(^|\.)(lm_head|embed_out)\.")
_EXPERTS = re.compile(r"\.experts\.")
_MTP = re.compile(r"(^|\.)mtp[._]")
_LAYER = re.compile(r"(^|\.)layers\.(\d+)\.")


def tensor_part(name: str, num_layers: int, tied: bool = False) -> str:
    """The part of a checkpoint tensor by its name (``PARTS``; the module docstring gives the rules).

    >>> names = ("model.embed_tokens.weight", "lm_head.weight", "model.layers.1.mlp.experts.3.w1",
    ...          "model.layers.2.self_attn.q_proj.weight", "model.norm.weight")
    >>> print(*(tensor_part(n, 2) for n in names))
    embedding head experts not_loaded layers
    """
    if _VISION.search(name):
        return "layers"
    if _MTP.search(name) or ((layer := _LAYER.search(name)) is not None and int(layer[2]) >= num_layers):
        return "not_loaded"
    if _EMBEDDING.search(name):
        return "embedding"
    if _HEAD.search(name):
        return "not_loaded" if tied else "head"
    return "experts" if _EXPERTS.search(name) else "layers"


def tensor_parts(checkpoint: CheckpointTensors, record: Model) -> dict[str, int]:
    """Bytes of a checkpoint's tensors by ``PARTS``, with ``replicated`` (the 1-D and 0-D tensors of
    ``layers``) and ``by_dtype:<DTYPE>`` (the loaded bytes of each dtype). [B]"""
    parts: Counter[str] = Counter({part: 0 for part in (*PARTS, "replicated")})
    for t in checkpoint.tensors:
        part = tensor_part(t.name, record.num_layers, record.tie_embeddings)
        parts[part] += t.bytes
        parts["replicated"] += t.bytes if part == "layers" and len(t.shape) <= 1 else 0
        parts[f"by_dtype:{t.dtype}"] += t.bytes if part != "not_loaded" else 0
    return dict(parts)


def stored_weights(checkpoint: CheckpointTensors, record: Model) -> StoredWeights | None:
    r"""The bytes a safetensors checkpoint stores, by the parts layouts treat apart; None without headers.

    Parameters
    ----------
    checkpoint : CheckpointTensors
        ``tensors.read_checkpoint`` of the folder; with ``source`` ``"index"`` (no shard present) there is
        nothing to classify.
    record : Model
        The model its config describes (``num_layers`` tells the multi-token-prediction layers apart,
        ``tie_embeddings`` a head that is not loaded).

    Returns
    -------
    StoredWeights or None
        :math:`\sum_t` bytes of the tensors of each part (``tensor_part``), the modules serving does not load
        left out; ``by_type`` the safetensors dtypes of what is loaded, largest first. [B]
    """
    if checkpoint.source != "headers":
        return None
    parts = tensor_parts(checkpoint, record)
    by_type = {key.removeprefix("by_dtype:"): size for key, size in parts.items() if key.startswith("by_dtype:")}
    return from_sums(parts, by_type)


def from_sums(parts: Mapping[str, float], by_type: Mapping[str, int]) -> StoredWeights:
    """``StoredWeights`` of byte sums by part (its ``layers``, ``replicated``, ``experts``, ``embedding`` and
    ``head`` keys, 0 when absent; any other ignored) and by storage type, the types largest first, then by
    name; what a GGUF file (``gguf.stored_weights``) and a safetensors checkpoint (``stored_weights``) both
    build. [B]

    >>> from_sums({"layers": 10, "replicated": 1, "embedding": 4}, {"F32": 1, "Q4_K": 9, "F16": 4}).by_type
    (('Q4_K', 9), ('F16', 4), ('F32', 1))
    """
    return StoredWeights(
        layers=parts.get("layers", 0), replicated=parts.get("replicated", 0), experts=parts.get("experts", 0),
        embedding=parts.get("embedding", 0), head=parts.get("head", 0),
        by_type=tuple(sorted(by_type.items(), key=lambda item: (-item[1], item[0]))),
    )


def _sixteen_bit_linears(tensors: tuple[Tensor, ...], num_layers: int) -> list[str]:
    """Module names of the 16-bit weight matrices of the decoder layers (routed experts apart)."""
    return [t.name.removesuffix(".weight") for t in tensors
            if t.dtype in SIXTEEN_BIT and t.name.endswith(".weight") and len(t.shape) >= 2
            and tensor_part(t.name, num_layers) == "layers" and not _VISION.search(t.name)]


def unquantized_found(checkpoint: CheckpointTensors, record: Model) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The roles and layers a quantised checkpoint stores in 16-bit that its config does not declare.

    ``quantization.unquantized_parts`` of the module names of the decoder's 16-bit weight matrices (a role
    16-bit in every layer, else the layers where one is), less ``record.unquantized_roles`` and
    ``unquantized_layers``. Empty unless the checkpoint is quantised (``CheckpointTensors.quantised``) and its
    ``weights`` are (a format that quantises the routed experts only keeps the rest in 16-bit by design).

    >>> from gpusizer import catalog
    >>> unquantized_found(CheckpointTensors(0, "headers", 1), catalog.model("llama-3.1-8b"))
    ((), ())
    """
    if not checkpoint.quantised or record.weights == record.activation_dtype:
        return (), ()
    roles, layers = unquantized_parts(_sixteen_bit_linears(checkpoint.tensors, record.num_layers), record.num_layers)
    new_roles = tuple(r for r in roles if r not in record.unquantized_roles)
    covered = set(record.unquantized_layers)
    return new_roles, tuple(i for i in layers if i not in covered)


def with_stored_weights(record: Model, checkpoint: CheckpointTensors | None) -> Model:
    """``record`` with its checkpoint's ``stored_weights`` (the headers named last in ``source``) and the 16-bit
    roles and layers the headers show beyond the config (``unquantized_found``, merged into
    ``unquantized_roles``/``unquantized_layers`` and named in ``notes``); ``record`` itself when the checkpoint
    has no headers to read.

    >>> from gpusizer import catalog
    >>> with_stored_weights(catalog.model("llama-3.1-8b"), None).stored_weights is None
    True
    """
    stored = None if checkpoint is None else stored_weights(checkpoint, record)
    if checkpoint is None or stored is None:
        return record
    roles, layers = unquantized_found(checkpoint, record)
    files = f"{checkpoint.files} file{'s' * (checkpoint.files != 1)}"
    update: dict[str, object] = {"stored_weights": stored,
                                 "source": (*record.source, f"safetensors headers: {files} beside the config")}
    if roles or layers:
        update["unquantized_roles"] = (*record.unquantized_roles, *roles)
        update["unquantized_layers"] = tuple(sorted({*record.unquantized_layers, *layers}))
        found = ", ".join([*(f"{r} in every layer" for r in roles), *([f"layers {list(layers)}"] if layers else [])])
        update["notes"] = "; ".join(filter(None, [record.notes, f"the safetensors headers keep {found} in 16-bit, "
                                                                "which the quantization config does not declare"]))
    return Model.model_validate({**record.model_dump(), **update})
