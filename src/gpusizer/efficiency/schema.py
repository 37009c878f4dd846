"""The efficiency table's schema: its records, the fitted fields with their bounds, and the classes.

An efficiency constant applies to an *engine class* (``engine_class``), a *GPU class* (``gpu_class``:
``hbm``, ``gddr``, ``unified``) and a *weight format family* (``format_family``: ``16bit``, ``8bit``,
``fp4``, ``weight-only``). The records hold data only; ``gpusizer.efficiency.tables`` reads and
resolves them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

GPU_CLASSES = ("hbm", "gddr", "unified")
FORMAT_FAMILIES = ("16bit", "8bit", "fp4", "weight-only")
ANY = "*"

#: Fitted fields of each kind of entry.
FIELDS: dict[str, tuple[str, ...]] = {
    "engine": ("layer_seconds", "step_seconds", "request_seconds", "moe_layer_seconds", "overlap",
               "expert_compute"),
    "group": ("bandwidth", "compute", "decode_compute"),
    "fabric": ("latency_seconds",),
}

#: Physical bounds of every fitted constant, and the prior's width (standard deviation of its log).
BOUNDS: dict[str, tuple[float, float, float]] = {
    "bandwidth": (0.2, 0.95, 0.15),
    "compute": (0.02, 0.9, 0.35),
    "decode_compute": (0.01, 0.9, 0.6),
    "layer_seconds": (0.5e-6, 500e-6, 0.7),
    "step_seconds": (5e-6, 5e-3, 0.7),
    "request_seconds": (10e-6, 50e-3, 1.0),
    "moe_layer_seconds": (1e-6, 2e-3, 1.0),
    "overlap": (0.02, 1.0, 1.0),
    "expert_compute": (0.1, 1.0, 0.5),
    "latency_seconds": (2e-6, 500e-6, 0.7),
}


def gpu_class(memory_type: str | None) -> str:
    """GPU class from the catalogue's memory type: ``hbm``, ``gddr`` or ``unified``.

    Examples
    --------
    >>> gpu_class("GDDR6X"), gpu_class("LPDDR5 unified"), gpu_class("HBM3e")
    ('gddr', 'unified', 'hbm')
    """
    text = (memory_type or "").lower()
    if "unified" in text or "lpddr" in text:
        return "unified"
    if "gddr" in text:
        return "gddr"
    return "hbm"


def format_family(bits: float, compute: str, weight_only: bool, native: bool) -> str:
    """Weight format family: how the weight GEMMs run on a given GPU.

    Parameters
    ----------
    bits : float
        Bits per weight. [bit]
    compute : str
        ``Precision.compute``.
    weight_only : bool
        Activations stay 16-bit (AWQ, GPTQ, GGUF).
    native : bool
        The GPU has a tensor rate for ``compute``; if not, the weights are dequantized to 16-bit
        in the kernel, which is a weight-only format on that GPU.

    Examples
    --------
    >>> format_family(8.0, "fp8", False, native=True), format_family(8.0, "fp8", False, native=False)
    ('8bit', 'weight-only')
    """
    if bits >= 16:
        return "16bit"
    if weight_only or not native:
        return "weight-only"
    return "fp4" if compute == "fp4" else "8bit"


#: Other spellings of the engine classes; the ``trtllm-engine`` memory profile (TensorRT-LLM's C++ runtime with
#: a TensorRT engine, ``engines.ENGINES``) takes TensorRT-LLM's constants: no measurement here tells the two
#: runtimes' speeds apart.
ENGINE_ALIASES = {"llamacpp": "llama.cpp", "llama-cpp": "llama.cpp", "tensorrt-llm": "trtllm", "trt-llm": "trtllm",
                  "trtllm-engine": "trtllm", "trtllm-tensorrt": "trtllm", "trtllm-cpp": "trtllm"}


def engine_class(name: str) -> str:
    """The engine class a name stands for: lower case, aliases resolved (not checked against a table).

    Examples
    --------
    >>> engine_class("TensorRT-LLM"), engine_class("vLLM")
    ('trtllm', 'vllm')
    """
    return ENGINE_ALIASES.get(name.lower(), name.lower())


def engine_family(name: str) -> str:
    """The engine a class belongs to: the class without its build era (``llama.cpp@2024`` -> ``llama.cpp``).

    A class named ``ENGINE@ERA`` holds the fixed costs, kernel paths and fitted efficiency groups of that
    engine's builds of one era; a group it has none of (``tables.group``) and its collectives are the engine's.

    Examples
    --------
    >>> engine_family("llama.cpp@2024"), engine_family("llamacpp"), engine_family("vllm")
    ('llama.cpp', 'llama.cpp', 'vllm')
    """
    return engine_class(name).split("@", 1)[0]



# --- the table ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EngineEntry:
    """Constants of one engine class."""

    name: str
    layer_seconds: float
    """Fixed cost per layer and step. [s]"""
    step_seconds: float
    """Fixed cost per step (sampling, scheduling). [s]"""
    request_seconds: float
    """Fixed cost per prefill request. [s]"""
    kv_bandwidth: float
    """Achieved fraction of the bandwidth when reading the KV cache. [-]"""
    chunk_tokens: float
    """Tokens one engine step processes at most (prefill chunk). [token]"""
    integer_matmul: bool = False
    """Quantized GEMMs run on INT8 tensor cores (llama.cpp MMQ), so their peak is the INT8 rate; FP4 formats
    (MXFP4, NVFP4) are dequantised there too (``configuration.setups``)."""
    fp16_accumulate: bool = False
    """FP16 weight GEMMs accumulate in FP16 (cuBLAS ``CUBLAS_COMPUTE_16F``), so their peak is the FP16-accumulate
    rate where the GPU has one (``roofline.tensor_peak``; GeForce: twice the FP32-accumulate rate)."""
    dequantize_above: float = 0.0
    """Tokens per step above which an ``integer_matmul`` engine dequantises quantised weights to F16 and
    multiplies them with a cuBLAS FP16 GEMM instead of its integer kernel (``gpusizer.dequant``); 0: never. [token]"""
    moe_layer_seconds: float = 0.0
    """Extra fixed cost per MoE layer and step: routing, token permutation, grouped-GEMM tails. [s]"""
    overlap: float = 1.0
    """Share of the shorter of an operator's arithmetic and memory times hidden under the longer
    (``roofline.overlapped_seconds``): 1 is the roofline, 0 adds them. [-]"""
    expert_compute: float = 1.0
    """Routed-expert (grouped) GEMMs' compute efficiency over the dense GEMMs' (``step.expert_compute_efficiency``):
    1 runs them as dense ones. [-]"""
    source: str = ""
    prior: dict[str, float] = field(default_factory=dict)
    fitted: tuple[str, ...] = ()
    rows: tuple[str, ...] = ()


@dataclass(frozen=True)
class GroupEntry:
    """Constants of one engine class x GPU class x format family (``*`` matches any)."""

    engine: str
    gpu_class: str
    format: str
    bandwidth: float
    """Achieved fraction of the bandwidth when streaming weights :math:`\\eta_w`. [-]"""
    compute: float
    """Achieved fraction of the tensor peak in prefill GEMMs and attention :math:`\\mu`. [-]"""
    decode_compute: float
    """Achieved fraction of the tensor peak in decode GEMMs :math:`\\mu_{dec}`. [-]"""
    source: str = ""
    prior: dict[str, float] = field(default_factory=dict)
    fitted: tuple[str, ...] = ()
    rows: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.engine}/{self.gpu_class}/{self.format}"


@dataclass(frozen=True)
class FabricEntry:
    """All-reduce constants of one fabric."""

    name: str
    latency_seconds: float
    """Small-message all-reduce latency :math:`\\alpha`. [s]"""
    bandwidth_fraction: float
    """Achieved bus bandwidth over the link's per-direction bandwidth. [-]"""
    source: str = ""
    prior: dict[str, float] = field(default_factory=dict)
    fitted: tuple[str, ...] = ()
    rows: tuple[str, ...] = ()


@dataclass(frozen=True)
class Band:
    """p10 and p90 of measured/expected in one regime."""

    regime: str
    low: float
    """10th percentile of measured / expected. [-]"""
    high: float
    """90th percentile of measured / expected. [-]"""
    rows: int
    method: str = ""


@dataclass(frozen=True)
class Table:
    """Every efficiency constant, as loaded from a file."""

    engines: dict[str, EngineEntry]
    groups: tuple[GroupEntry, ...]
    fabrics: dict[str, FabricEntry]
    bands: dict[str, Band] = field(default_factory=dict)
    fit: dict[str, Any] = field(default_factory=dict)

    def __hash__(self) -> int:
        return id(self)


@dataclass(frozen=True)
class Constants:
    """The constants that apply to one engine, GPU class, format family and fabric."""

    bandwidth: float
    compute: float
    decode_compute: float
    kv_bandwidth: float
    layer_seconds: float
    step_seconds: float
    request_seconds: float
    moe_layer_seconds: float
    overlap: float
    expert_compute: float
    chunk_tokens: float
    integer_matmul: bool
    latency_seconds: float
    bandwidth_fraction: float
    group: str
    """Key of the group entry used (``engine/gpu_class/format``)."""
    informed: bool
    """Whether measurements informed the group's constants (else priors only: widen the band)."""
    fp16_accumulate: bool = False
    """``EngineEntry.fp16_accumulate`` of the engine."""
    dequantize_above: float = 0.0
    """``EngineEntry.dequantize_above`` of the engine. [token]"""
    dequant_compute: float = 1.0
    """Prefill compute efficiency of the dequantise-then-GEMM path: the engine's ``16bit`` group's, as it runs
    the same cuBLAS FP16 GEMM as F16 weights (``gpusizer.dequant``). [-]"""


