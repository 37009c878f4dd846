"""Storage precisions: exact bits per weight, scale overhead included, and what each computes in.

One table, ``PRECISIONS``, gives every format gpusizer knows. Bits become bytes only through it
(``bytes_per_element``), never through ``bits // 8``.

Which tensors a format covers follows the published checkpoints (the rule ``covers_embeddings``):

* Hugging Face formats (fp8, int8, int4/AWQ/GPTQ, int4-g32, nvfp4, mxfp4) quantize the linear layers of the
  decoder blocks only. Embeddings, the LM head, norms, routers, biases and state-space parameters
  stay in the activation dtype (16-bit): DeepSeek-V3's FP8 checkpoint, gpt-oss's
  ``modules_to_not_convert`` and AutoAWQ's default all do this.
* GGUF types (q8_0 ... q2_k) quantize every 2-D tensor, embeddings and output included. The k-quant
  "mixes" (``_m``) keep some tensors at higher precision; their bits per weight are llama.cpp's
  published whole-file averages, so they already include that mix and the 1-D tensors.

Deliberate omissions: per-tensor FP8 scales and per-channel INT8 scales add under 0.01 bit per
weight and are ignored; GPTQ's ``g_idx`` (one int32 per input row) is ignored likewise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from gpusizer.catalog import Model, Record
from gpusizer.checks import instance

if TYPE_CHECKING:
    from gpusizer.architecture import ParameterCounts

__all__ = [
    "PRECISIONS",
    "Precision",
    "bytes_per_element",
    "kv_bytes_per_element",
    "names",
    "precision",
    "stored_applies",
    "stored_weight_bytes",
]


class Precision(Record):
    """One storage format."""

    name: str
    bits: float
    """Bits per stored element, scales and zero-points included. [bit]"""
    compute: Literal["fp32", "tf32", "fp16", "bf16", "fp8", "int8", "fp4"]
    """Precision the matrix multiplies run in on hardware that supports it natively."""
    weight_only: bool
    """True when activations stay 16-bit and weights are dequantized before the multiply."""
    covers_embeddings: bool = False
    """True when the format also stores embeddings and the LM head (GGUF)."""
    source: str


def _p(name: str, bits: float, compute: str, weight_only: bool, source: str, gguf: bool = False):
    """A precision of the table, built without validation: the first validation in a process costs about
    20 ms of ``gpusizer fit``; ``tests/test_precision.py`` validates every entry instead."""
    return Precision.model_construct(
        name=name,
        bits=float(bits),
        compute=compute,  # type: ignore[arg-type]
        weight_only=weight_only,
        covers_embeddings=gguf,
        source=source,
    )


_LLAMA_CPP = "ggml-org/llama.cpp:tools/quantize/README.md (bits per weight, Llama 2 7B table)"
_GGML = "ggml-org/llama.cpp:ggml/src/ggml-common.h (block layout)"

#: Every precision gpusizer knows, keyed by lower-case name.
PRECISIONS: dict[str, Precision] = {
    p.name: p
    for p in (
        _p("fp32", 32, "fp32", False, "IEEE 754 binary32"),
        _p("bf16", 16, "bf16", False, "bfloat16"),
        _p("fp16", 16, "fp16", False, "IEEE 754 binary16"),
        # E4M3 + one FP32 scale per 128x128 block: 8 + 32/16384 bits (DeepSeek-V3 quantization_config)
        _p("fp8", 8 + 32 / 16384, "fp8", False, "deepseek-ai/DeepSeek-V3 config.json weight_block_size [128, 128]"),
        _p("int8", 8, "int8", False, "W8A8 with per-channel scales (compressed-tensors); scales neglected"),
        # 4-bit values + FP16 scale + packed 4-bit zero per group of 128: 4 + (16 + 4)/128
        _p("int4", 4 + 20 / 128, "bf16", True, "AutoAWQ / GPTQ group size 128 (qweight, scales fp16, qzeros int4)"),
        # 4-bit values packed 8 to an int32 + one BF16 scale per 32 weights, symmetric (no zeros): 4 + 16/32
        _p("int4-g32", 4 + 16 / 32, "bf16", True, "compressed-tensors pack-quantized symmetric INT4, group 32, BF16 "
           "scales (moonshotai/Kimi-K2-Thinking, Kimi-K2.5: csabakecskemeti/DQ_int4-to-bf16_dequant:kernel.py "
           "(commit df5bbb54f7fd0dc662effa9135cb21c6b9a3f0ab) weight_packed int32, weight_scale BF16 [out, in/32])"),
        # E2M1 + one E4M3 scale per 16 elements: 4 + 8/16 (per-tensor FP32 scale neglected)
        _p("nvfp4", 4 + 8 / 16, "fp4", False, "NVIDIA NVFP4: E2M1 with FP8 E4M3 scale per 16 elements"),
        # E2M1 + one E8M0 scale per 32 elements: 4 + 8/32
        _p("mxfp4", 4 + 8 / 32, "fp4", False, "OCP Microscaling spec v1.0: MXFP4 block of 32, E8M0 scale"),
        _p("q8_0", 34 * 8 / 32, "bf16", True, _GGML + ": block_q8_0 = 32 int8 + fp16 scale (34 B)", True),
        _p("q6_k", 6.56, "bf16", True, _LLAMA_CPP, True),
        _p("q5_k_m", 5.68, "bf16", True, _LLAMA_CPP, True),
        _p("q4_k_m", 4.84, "bf16", True, _LLAMA_CPP, True),
        _p("q4_0", 18 * 8 / 32, "bf16", True, _GGML + ": block_q4_0 = 32 x 4 bit + fp16 scale (18 B)", True),
        _p("q3_k_m", 3.91, "bf16", True, _LLAMA_CPP, True),
        _p("q2_k", 3.35, "bf16", True, _LLAMA_CPP, True),
    )
}

#: Spellings users and configs write for the same format.
ALIASES: dict[str, str] = {
    "float32": "fp32",
    "f32": "fp32",
    "bfloat16": "bf16",
    "float16": "fp16",
    "f16": "fp16",
    "half": "fp16",
    "e4m3": "fp8",
    "fp8_e4m3": "fp8",
    "w8a8": "int8",
    "awq": "int4",
    "gptq": "int4",
    "w4a16": "int4",
    "int4_g32": "int4-g32",
    "fp4": "nvfp4",
    "q8": "q8_0",
    "q6_k_m": "q6_k",
    "q4_k": "q4_k_m",
    "q3_k": "q3_k_m",
}

KvPrecision = Literal["fp32", "bf16", "fp16", "fp8", "int8"]


def names() -> tuple[str, ...]:
    """Names of every known precision."""
    return tuple(PRECISIONS)


def precision(name: str | Precision, what: str = "precision") -> Precision:
    """Look up a precision by name or alias, case-insensitively; ``what`` names the argument in errors.

    Raises
    ------
    TypeError, ValueError
        Naming ``what`` and the known precisions when ``name`` is not a string or is unknown.
    """
    if isinstance(name, Precision):
        return name
    instance(name, what, (str, Precision))
    key = str(name).strip().lower().replace("-", "_")
    key = ALIASES.get(key, key)
    if key not in PRECISIONS:
        raise ValueError(f"unknown {what} {name!r}; known: {', '.join(PRECISIONS)}")
    return PRECISIONS[key]


def bytes_per_element(name: str | Precision) -> float:
    """Bytes one stored element takes, scale overhead included.

    Examples
    --------
    >>> bytes_per_element("bf16")
    2.0
    >>> bytes_per_element("mxfp4")
    0.53125
    """
    return precision(name).bits / 8


#: Bytes per cached key/value element. FP8 caches keep one scale per tensor or head, negligible.
KV_BYTES: dict[str, float] = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "fp8_e5m2": 1.0, "int8": 1.0}


def kv_bytes_per_element(name: str) -> float:
    """Bytes per KV-cache element for a cache dtype (``"fp8"``, ``"bf16"``, ...).

    Raises
    ------
    ValueError
        Naming the known cache dtypes when ``name`` is unknown.

    Examples
    --------
    >>> kv_bytes_per_element("fp8")
    1.0
    """
    instance(name, "kv_cache", str)
    key = name.strip().lower().replace("-", "_")
    key = {"auto": "bf16", "bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "fp8_e4m3": "fp8"}.get(key, key)
    if key not in KV_BYTES:
        raise ValueError(f"unknown kv_cache precision {name!r}; known: {', '.join(KV_BYTES)}")
    return KV_BYTES[key]


def stored_weight_bytes(
    counts: ParameterCounts,
    weights: str | Precision,
    experts: str | Precision | None = None,
    activation: str | Precision = "bf16",
    *,
    include_mtp: bool = False,
) -> float:
    r"""Bytes of a model's weights as a checkpoint in ``weights`` stores them.

    Parameters
    ----------
    counts : ParameterCounts
        From ``architecture.parameter_counts``. [param]
    weights : str
        Precision of the decoder's linear layers.
    experts : str, optional
        Precision of the routed experts when it differs (gpt-oss: ``"mxfp4"``).
    activation : str, optional
        Precision of everything a Hugging Face format leaves unquantized (embeddings, LM head,
        norms, biases, routers, vision tower).
    include_mtp : bool, optional
        Count the multi-token-prediction modules (loaded only for speculative decoding).

    Returns
    -------
    float
        :math:`(N_{lin} - N_u) b_w + N_{exp} b_e + (N_u + N_{emb} + N_{head}) b_t + (N_{vec} + N_{vis}) b_a`,
        with :math:`N_u` the linears the checkpoint leaves unquantized (``ParameterCounts.unquantized``) and
        :math:`b_t = b_a` (GGUF formats: :math:`b_w`, they store the embedding and head quantized too). [B]
    """
    w, a = precision(weights), precision(activation)
    e = precision(experts) if experts is not None else w
    table = w if w.covers_embeddings else a
    kept = counts.unquantized  # linears the checkpoint leaves at the activation dtype (modules_to_not_convert)
    linear = (counts.linear - kept) * w.bits + kept * table.bits + counts.experts * e.bits
    rest = (counts.embedding + counts.head) * table.bits + (counts.vector + counts.vision) * a.bits
    mtp = counts.mtp * w.bits if include_mtp else 0.0
    return (linear + rest + mtp) / 8


def stored_applies(
    model: Model, weights: str, expert_weights: str | None = None, activation: str | None = None
) -> bool:
    """Whether ``model.stored_weights`` (the bytes its files hold) are its weights at these precisions: it has
    them, and the precisions are the checkpoint's own (``Model.weights``, ``expert_weights``, ``activation_dtype``).

    >>> stored_applies(Model.model_construct(stored_weights=None), "bf16")
    False
    """
    if model.stored_weights is None:
        return False
    same = precision(weights).name == precision(model.weights).name
    experts = expert_weights == model.expert_weights or (expert_weights is None and model.expert_weights is None)
    act = activation is None or precision(activation).name == precision(model.activation_dtype).name
    return same and experts and act
