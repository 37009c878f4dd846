"""Read a Hugging Face checkpoint's ``config.json`` into a :class:`~gpusizer.catalog.Model` record.

``from_hf_config`` accepts a path to a ``config.json``, a folder holding one, or an already parsed
mapping. From a folder (or beside a ``config.json``) it also reads ``hf_quant_config.json``
(NVIDIA ModelOpt) for the checkpoint precision. ``read_checkpoint`` reads every tensor's dtype, shape
and stored bytes from the safetensors headers (``tensors``), ``checkpoint_bytes`` their total and
``cross_check`` compares it with the bytes the config implies; ``with_stored_weights`` gives the record its
``stored_weights`` (every tensor in the parts layouts treat apart, ``stored``), which size its weights at the
checkpoint's own precision as for a GGUF file. ``snapshot_folder`` finds a repo id
(``ORG/NAME``) in the local Hugging Face cache, offline (``cache``).

What is read
------------
The architectures of ``architectures()``: llama, mistral, mixtral, qwen2, qwen2_moe, qwen3,
qwen3_moe, qwen3_next, gemma, gemma2, gemma3 (and gemma3_text), phi3, cohere, falcon,
deepseek_v2, deepseek_v3, deepseek_v32, kimi_k2, gpt_oss, glm4_moe, llama4 (and llama4_text),
mistral3, qwen2_5_vl, qwen3_vl, internvl_chat (and transformers' internvl), llava, llava_next and
nemotron_h. DeepSeek Sparse Attention (``index_n_heads``, ``index_head_dim``, ``index_topk``) becomes a
``SparseAttention`` record. Multimodal wrappers are read through ``text_config`` (InternVL's ``llm_config``);
their ``vision_config`` becomes a ``Vision`` record whose ``projector_params`` come from the projector shapes
(``vision`` documents each):

* gemma3: ``mm_input_projection`` (vision hidden x text hidden) + ``mm_soft_emb_norm`` (vision hidden);
* llama4: vision adapter MLP ``fc1`` (vision intermediate x projector_input_dim) + ``fc2``
  (projector_output_dim x projector_output_dim) + ``multi_modal_projector`` (vision_output_dim x
  text hidden), all without bias;
* mistral3: RMSNorm (vision hidden) + patch merger (vision hidden * spatial_merge_size**2 x vision
  hidden) + ``linear_1`` (vision hidden x text hidden) + ``linear_2`` (text hidden x text hidden),
  biases when ``multimodal_projector_bias``;
* internvl_chat: ``mlp1`` = LayerNorm (vision hidden / downsample_ratio**2) + two biased Linears to and at
  text hidden; llava / llava_next: two biased Linears (vision hidden x text hidden, text x text).

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

Package layout
--------------
``section`` (bounded JSON reading, ``Section``), ``patterns`` (pieces the readers share), ``dense`` and
``moe`` (one reader per architecture), ``model_types`` (the table of readers and transformers
defaults, the generic reader), ``vision`` (towers of multimodal wrappers), ``quantization``
(precision), ``tensors`` (safetensors headers), ``stored`` (their bytes by part), ``cache`` (the local
Hugging Face cache), ``checkpoint`` (the entry points). Import the public names from ``gpusizer.hf``.

Deliberate omissions: rotary settings, logit soft-capping, attention temperature and other knobs that
change neither parameter counts nor cache sizes;
Cohere's per-head LayerNorm on queries and keys is recorded as ``qk_norm`` (its weights are
``heads x head_dim`` rather than ``head_dim``).
"""

from gpusizer.hf.cache import NotCachedError, cache_folder, parse_repo_id, snapshot_folder
from gpusizer.hf.checkpoint import (
    MAX_PARAMS,
    STORED_TOLERANCE,
    StoredBytesWarning,
    architectures,
    checkpoint_bytes,
    cross_check,
    from_hf_config,
)
from gpusizer.hf.quantization import quantization_methods
from gpusizer.hf.section import LIMITS, MAX_CONFIG_BYTES, MAX_INDEX_BYTES, ConfigAssumptionWarning
from gpusizer.hf.stored import stored_weights, tensor_part, tensor_parts, unquantized_found, with_stored_weights
from gpusizer.hf.tensors import MAX_HEADER_BYTES, CheckpointTensors, Tensor, kept_16bit, read_checkpoint, read_header

__all__ = [
    "LIMITS",
    "MAX_CONFIG_BYTES",
    "MAX_HEADER_BYTES",
    "MAX_INDEX_BYTES",
    "MAX_PARAMS",
    "STORED_TOLERANCE",
    "CheckpointTensors",
    "ConfigAssumptionWarning",
    "NotCachedError",
    "StoredBytesWarning",
    "Tensor",
    "architectures",
    "cache_folder",
    "checkpoint_bytes",
    "cross_check",
    "from_hf_config",
    "kept_16bit",
    "parse_repo_id",
    "quantization_methods",
    "read_checkpoint",
    "read_header",
    "snapshot_folder",
    "stored_weights",
    "tensor_part",
    "tensor_parts",
    "unquantized_found",
    "with_stored_weights",
]
