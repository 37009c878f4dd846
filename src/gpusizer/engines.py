r"""Serving engines as named memory-budget profiles.

Engines differ less in what they store than in how they split GPU memory between weights, their own
runtime and the KV-cache pool. Each profile is a frozen record; the rule that turns a budget into a
KV pool is a function chosen from ``KV_POOL_RULES`` by name (no if/elif on engine names), and the
memory fraction in force one chosen from ``engine_defaults.FRACTION_RULES``.

* ``vllm``: ``gpu_memory_utilization`` (0.9) of the GPU holds everything vLLM owns: weights, the
  activation peak of a profiling pass, non-torch memory (CUDA context, NCCL, cuBLAS) and CUDA
  graphs; what is left is the KV pool, in 16-token blocks.
* ``sglang``: ``mem_fraction_static`` of the memory free before the weights load (the device less its
  non-torch memory) holds weights and the KV pool; activations and graphs live in the rest. Its
  default follows the GPU memory and the tensor parallelism (``engine_defaults.sglang_mem_fraction_static``;
  ``fraction_rule="sglang_v04"`` for sglang 0.3-0.4's table).
* ``trtllm``: the KV pool is ``free_gpu_memory_fraction`` (0.9) of the memory still free after weights,
  the profiling pass's activations and runtime (``share_of_free_pool_bytes``). The PyTorch backend (the
  default from 1.0) profiles a forward pass.
* ``trtllm-engine`` (aliases ``trtllm-tensorrt``, ``trtllm-cpp``): the same rule under TensorRT-LLM's C++
  runtime, serving a TensorRT engine (``trtllm-build`` engines of 0.5-0.x, ``trtllm-serve --backend
  tensorrt`` today): the engine's device memory, which TensorRT planned for the build's ``max_num_tokens``
  (``engine_defaults.tensorrt_engine_activation_bytes``), is allocated before the pool; no PyTorch and no
  CUDA graphs in the budget.
* ``llama.cpp``: no fraction: the KV cache of ``context x parallel slots`` plus a compute buffer
  must fit in the device memory (on Apple unified memory, Metal's default working-set limit).

Deliberate omissions: prefix caching, and CPU offload of weights or KV (``offload``). Engine versions
enter where a default changed: a profile copy with another ``fraction_rule`` or sampler term.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from gpusizer.catalog import Record
from gpusizer.checks import instance, scalar_or_array
from gpusizer.numeric import maximum, minimum, number, where
from gpusizer.units import GiB

__all__ = [
    "ENGINES", "KV_POOL_RULES", "EngineProfile", "device_capacity", "engine", "kv_pool_bytes", "non_torch_bytes",
    "padded_expert_share", "padded_width", "share_of_free_pool_bytes", "static_share_pool_bytes", "vocabulary_on_gpu",
]


class EngineProfile(Record):
    """Memory defaults of one serving engine."""

    name: str
    kv_rule: Literal["share_of_total", "static_share", "share_of_free", "whole"]
    """How the KV pool follows from the budget; a key of ``KV_POOL_RULES``."""
    memory_fraction: float
    """The engine's memory fraction (``gpu_memory_utilization`` and the like) where ``fraction_rule`` is
    ``fixed``; SGLang's fallback when it cannot read the GPU memory otherwise. [-]"""
    block_size: int
    """Tokens per KV block; a sequence's cache is rounded up to whole blocks. [token]"""
    runtime_bytes: float
    """Non-torch memory on one GPU (CUDA context, cuBLAS workspaces), as vLLM's profile measures it. [B]"""
    runtime_bytes_multi_gpu: float
    """Extra non-torch memory per GPU for each other GPU of the layout (NCCL, custom all-reduce). [B]"""
    cuda_graph_bytes: float
    """Captured CUDA graphs, counted in the budget (vLLM from v0.21; 0 for engines that capture them
    outside it). [B]"""
    activation: Literal["vllm", "trtllm", "tensorrt", "llama.cpp"]
    """Which activation-peak formula applies (``trtllm``: TensorRT-LLM's PyTorch backend, vLLM's forward pass
    with the sampler of ``engine_defaults.trtllm_profile_requests``; ``tensorrt``: a TensorRT engine under
    TensorRT-LLM's C++ runtime, ``engine_defaults.tensorrt_engine_activation_bytes`` of ``batched_tokens``,
    the build's ``max_num_tokens``)."""
    batched_tokens: int
    """Tokens of the largest forward pass (``max_num_batched_tokens``, llama.cpp ``-ub``). [token]"""
    max_sequences: int
    """Sequences sampled in one step (``max_num_seqs``). [-]"""
    sampler_bytes_per_logit: float = 16.0
    """Bytes alive at the profile run's sampler peak per logit of ``min(max_sequences, batched_tokens)``
    requests (``memory.vllm_sampler_bytes``: 38 on vLLM 0.10-0.11's sort-based top-k/top-p, 4 on V0). [B]"""
    unified_memory_fraction: float = 1.0
    """Share of unified (CPU-shared) memory the GPU may wire by default. [-]"""
    mxfp4_hidden_multiple: int = 1
    """Multiple the engine rounds an MXFP4 routed expert's hidden width up to when it allocates it
    (``padded_expert_share``); 1: stored as the checkpoint stores it. [-]"""
    mxfp4_intermediate_multiple: int = 1
    """Multiple the engine rounds an MXFP4 routed expert's intermediate width per tensor-parallel rank up
    to. [-]"""
    input_embedding_on_host: bool = False
    """The token embedding stays in host memory, its rows gathered by the CPU, and the GPU holds the output
    layer (a tied embedding as its duplicate): llama.cpp's input layer, whose device is always the CPU. [bool]"""
    fraction_rule: Literal["fixed", "sglang", "sglang_v04"] = "fixed"
    """How the memory fraction in force follows from the GPU and the layout; a key of
    ``engine_defaults.FRACTION_RULES`` (``fixed``: ``memory_fraction`` as set)."""
    source: tuple[str, ...]


#: The profiles, built without validation: the first validation in a process costs about 20 ms of
#: ``gpusizer fit``; ``tests/test_engines.py`` validates every profile instead.
ENGINES: dict[str, EngineProfile] = {
    p.name: p
    for p in (
        EngineProfile.model_construct(
            name="vllm",
            kv_rule="share_of_total",
            memory_fraction=0.9,
            block_size=16,
            runtime_bytes=0.2 * GiB,
            runtime_bytes_multi_gpu=0.79 * GiB,
            cuda_graph_bytes=0.3 * GiB,
            activation="vllm",
            batched_tokens=8192,
            max_sequences=256,
            mxfp4_hidden_multiple=256,
            mxfp4_intermediate_multiple=128,
            source=(
                "vllm-project/vllm docs: gpu_memory_utilization default 0.9, block_size 16",
                "vllm-project/vllm@007d50058a06 vllm/model_executor/layers/quantization/mxfp4.py "
                "Mxfp4MoEMethod.create_weights: Marlin pads hidden to 256, intermediate per rank to 128",
                "data/calibration/engine-memory-logs.csv: non-torch 0.11-0.35 GiB on one GPU (vllm#12126, "
                "#10517, #13061, kvcached#448), 5.68 GiB per rank at TP8 on H200 (vllm#10702): 0.79 GiB per peer",
                "vllm-project/vllm v0.21: CUDA graph memory profiled into the budget by default",
                "vllm-project/vllm PR #11349: CUDA graphs 0.17-0.36 GiB typical",
            ),
        ),
        EngineProfile.model_construct(
            name="sglang",
            kv_rule="static_share",
            memory_fraction=0.88,
            fraction_rule="sglang",
            block_size=1,
            runtime_bytes=1.0 * GiB,
            runtime_bytes_multi_gpu=0.79 * GiB,
            cuda_graph_bytes=0.5 * GiB,
            activation="vllm",
            batched_tokens=8192,
            max_sequences=256,
            source=(
                "sgl-project/sglang@031ed82d8b5e python/sglang/srt/arg_groups/memory_hook.py "
                "handle_gpu_memory_settings: default mem_fraction_static from GPU memory and tp_size "
                "(engine_defaults.sglang_mem_fraction_static); page_size 1",
                "sgl-project/sglang issue #8538: CUDA graph memory",
                "sgl-project/sglang@226149ac457b python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py "
                "profile_max_num_token: pool = free after loading - free before loading x (1 - mem_fraction_static)",
                "sgl-project/sglang@bafa16ec882f python/sglang/srt/layers/quantization/mxfp4.py create_weights: "
                "MXFP4 experts padded (256) only on SM100 with FlashInfer; as stored otherwise",
            ),
        ),
        EngineProfile.model_construct(
            name="trtllm",
            kv_rule="share_of_free",
            memory_fraction=0.9,
            block_size=32,
            runtime_bytes=1.0 * GiB,
            runtime_bytes_multi_gpu=0.79 * GiB,
            cuda_graph_bytes=0.3 * GiB,
            activation="trtllm",
            batched_tokens=8192,
            max_sequences=256,
            source=("NVIDIA/TensorRT-LLM docs: KvCacheConfig free_gpu_memory_fraction 0.9, tokens_per_block 32",
                    "NVIDIA/TensorRT-LLM@fcd3f3168280 tensorrt_llm/llmapi/llm_args.py KvCacheConfig."
                    "free_gpu_memory_fraction: 'The fraction of GPU memory fraction that should be allocated for the "
                    "KV cache. Default is 90%.'",
                    "NVIDIA/TensorRT-LLM@d8ae02caed59 tensorrt_llm/_torch/pyexecutor/_util.py KvCacheCreator: "
                    "KV = fraction x (total - peak of a profiling pass over max_num_tokens of dummy prompts)"),
        ),
        EngineProfile.model_construct(
            name="trtllm-engine",
            kv_rule="share_of_free",
            memory_fraction=0.9,
            block_size=32,
            runtime_bytes=0.4 * GiB,
            runtime_bytes_multi_gpu=0.79 * GiB,
            cuda_graph_bytes=0.0,
            activation="tensorrt",
            batched_tokens=8192,
            max_sequences=2048,
            source=("NVIDIA/TensorRT-LLM@879039f6d583 cpp/include/tensorrt_llm/executor/executor.h KvCacheConfig::"
                    "kDefaultGpuMemFraction = 0.9F: 'The fraction of GPU memory fraction that should be allocated "
                    "for the KV cache' of the memory free after the engine loads",
                    "NVIDIA/TensorRT-LLM@00209af149e7 tensorrt_llm/commands/serve.py: --backend tensorrt (alias trt) "
                    "builds a TensorRT engine with BuildConfig max_batch_size 2048, max_num_tokens 8192",
                    "NVIDIA/TensorRT-LLM@c20322ffd3dc tensorrt_llm/plugin/plugin.py PluginConfig.tokens_per_block 32",
                    "NVIDIA/TensorRT-LLM@0165bd7ac275 cpp/tensorrt_llm/runtime/tllmRuntime.cpp: the engine's device "
                    "memory (getDeviceMemorySizeV2) allocated at load, before the KV pool "
                    "(engine_defaults.tensorrt_engine_activation_bytes)",
                    "NVIDIA/TensorRT-LLM issue #1071: 1,843 MiB in use after a 1,516 MiB engine and cuBLAS init; "
                    "no PyTorch in the process: 0.4 GiB of CUDA context and cuBLAS, no CUDA graphs by default"),
        ),
        EngineProfile.model_construct(
            name="llama.cpp",
            kv_rule="whole",
            memory_fraction=1.0,
            block_size=256,
            runtime_bytes=0.4 * GiB,
            runtime_bytes_multi_gpu=0.0,
            cuda_graph_bytes=0.0,
            activation="llama.cpp",
            batched_tokens=512,
            max_sequences=1,
            unified_memory_fraction=0.75,
            input_embedding_on_host=True,
            source=(
                "ggml-org/llama.cpp: n_ctx padded to 256; -ub 512 default; KV f16 for n_ctx = context x parallel",
                "ggml-org/llama.cpp@a5410f046c01d01330c8a42f13b64a211fedf2c3:src/llama-model.cpp load_tensors: "
                "dev_input is always the CPU (token_embd in host memory); a missing output.weight is token_embd "
                "created again as TENSOR_DUPLICATED in the output layer's buffer",
                "ggml-org/llama.cpp PR #23604: bare CUDA context 107-555 MiB by GPU",
                "ggml-org/llama.cpp discussions: Metal recommendedMaxWorkingSetSize about 75 % of unified memory",
            ),
        ),
    )
}

_ALIASES = {"llamacpp": "llama.cpp", "llama-cpp": "llama.cpp", "tensorrt-llm": "trtllm", "trt-llm": "trtllm",
            "trtllm-tensorrt": "trtllm-engine", "trtllm-cpp": "trtllm-engine"}


def engine(name: str | EngineProfile) -> EngineProfile:
    """Look up an engine profile by name (``vllm``, ``sglang``, ``trtllm``, ``trtllm-engine``, ``llama.cpp``)
    or alias (``trtllm-tensorrt`` and ``trtllm-cpp`` for ``trtllm-engine``).

    Raises
    ------
    ValueError
        Naming the known engines when ``name`` is unknown.
    """
    if isinstance(name, EngineProfile):
        return name
    instance(name, "engine", (str, EngineProfile))
    key = _ALIASES.get(str(name).lower(), str(name).lower())
    if key not in ENGINES:
        raise ValueError(f"unknown engine {name!r}; known: {', '.join(ENGINES)}")
    return ENGINES[key]


def _share_of_total(capacity: Any, weights: Any, overhead: Any, fraction: Any, non_torch: Any) -> Any:
    return number(fraction) * number(capacity) - number(weights) - number(overhead)


def static_share_pool_bytes(capacity: Any, weights: Any, overhead: Any, fraction: Any, non_torch: Any) -> Any:
    r"""SGLang's KV pool on one GPU: the static fraction of the memory free *before* the weights load,
    less the weights; negative when the weights do not fit.

    SGLang measures the free memory :math:`T` at startup (the device capacity :math:`M` less the CUDA
    context, NCCL and other non-torch memory :math:`R`), loads the weights :math:`W`, measures the free
    memory again (:math:`T - W`) and keeps :math:`(1 - f)\,T` of it for activations and CUDA graphs:

    .. math:: P = (T - W) - (1 - f)\,T = f\,(M - R) - W

    Activations and graphs live in the slack :math:`(1 - f)(M - R)`; what of them spills out of it
    is taken from the pool (where SGLang would run out of memory at capture).

    Parameters
    ----------
    capacity : array_like
        GPU memory the driver reports, :math:`M`. [B]
    weights : array_like
        Weight bytes on this GPU, :math:`W`. [B]
    overhead : array_like
        Activation peak, CUDA graphs and non-torch memory on this GPU. [B]
    fraction : array_like
        ``mem_fraction_static``, :math:`f`. [-]
    non_torch : array_like
        The part of ``overhead`` already held before the weights load (CUDA context, NCCL),
        :math:`R`. [B]

    Returns
    -------
    numeric
        The KV pool, :math:`P`. [B]

    References
    ----------
    sgl-project/sglang@226149ac457b python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py
    ``profile_max_num_token``: ``rest_memory = available_gpu_memory - total_gpu_memory * (1 -
    mem_fraction_static)``, with ``total_gpu_memory`` the free memory measured before the model loads
    (sglang#39713: "Load weight begin. avail mem=77.24 GB" on an H100 of 79.22 GiB).

    Examples
    --------
    >>> static_share_pool_bytes(80e9, 16e9, 3e9, 0.88, 1e9)
    53520000000.0
    """
    capacity, fraction, non_torch = number(capacity), number(fraction), number(non_torch)
    before_load = capacity - non_torch
    spill = (1 - fraction) * before_load - (number(overhead) - non_torch)
    return fraction * before_load - number(weights) + minimum(spill, 0)


def share_of_free_pool_bytes(capacity: Any, weights: Any, overhead: Any, fraction: Any, non_torch: Any = 0.0) -> Any:
    r"""TensorRT-LLM's KV pool on one GPU: ``free_gpu_memory_fraction`` of the memory a profiling pass
    leaves free; negative (the whole shortfall) when nothing is free.

    .. math:: P = f\,(M - W - O)

    Parameters
    ----------
    capacity : array_like
        GPU memory the driver reports, :math:`M` (``torch.cuda.mem_get_info`` total). [B]
    weights : array_like
        Weight bytes on this GPU, :math:`W`. [B]
    overhead : array_like
        Activation peak of the profiling pass plus non-torch memory (CUDA context, NCCL, graphs), :math:`O`. [B]
    fraction : array_like
        ``free_gpu_memory_fraction``, :math:`f`. [-]
    non_torch : array_like, optional
        Not read (the rules of ``KV_POOL_RULES`` share one signature). [B]

    Returns
    -------
    numeric
        The KV pool, :math:`P`. [B]

    References
    ----------
    NVIDIA/TensorRT-LLM, commit d8ae02caed59, ``tensorrt_llm/_torch/pyexecutor/_util.py``,
    ``KvCacheCreator._cal_max_tokens``: ``(total_gpu_memory - peak_memory + alloc_kv_tokens *
    kv_size_per_token) * fraction``, the peak being the weights, the pass's torch peak and non-torch
    memory; the C++ runtime (0.5-0.8) takes the same fraction of the free memory after the engine and
    its execution context load (NVIDIA/TensorRT-LLM issue #224, #1400).

    Examples
    --------
    >>> share_of_free_pool_bytes(80e9, 16e9, 4e9, 0.9)
    54000000000.0
    """
    free = number(capacity) - number(weights) - number(overhead)
    return where(free > 0, number(fraction) * free, free)


#: Rules from budget to KV pool: ``rule(capacity, weights, overhead, fraction, non_torch) -> pool`` [B].
KV_POOL_RULES: dict[str, Callable[[Any, Any, Any, Any, Any], Any]] = {
    "share_of_total": _share_of_total,
    "static_share": static_share_pool_bytes,
    "share_of_free": share_of_free_pool_bytes,
    "whole": _share_of_total,  # llama.cpp: vLLM's rule at its profile's fraction, 1
}


def kv_pool_bytes(
    capacity: Any, weights: Any, overhead: Any, *, rule: str, fraction: Any, non_torch: Any = 0.0
) -> Any:
    r"""Bytes an engine leaves for the KV cache on one GPU; negative when the weights do not fit.

    Parameters
    ----------
    capacity : array_like
        GPU memory the driver reports. [B]
    weights : array_like
        Weight bytes on this GPU. [B]
    overhead : array_like
        Activation peak plus runtime memory on this GPU. [B]
    rule : str
        A key of ``KV_POOL_RULES``.
    fraction : array_like
        The engine's memory fraction. [-]
    non_torch : array_like
        The part of ``overhead`` held before the weights load (CUDA context, NCCL); only
        ``static_share`` reads it. [B]

    Returns
    -------
    numeric
        ``share_of_total``: :math:`f M - W - O` (vLLM); ``static_share``: :math:`f (M - R) - W`, less any
        overhead that spills out of :math:`(1-f)(M - R)` (SGLang, ``static_share_pool_bytes``);
        ``share_of_free``: :math:`f (M - W - O)` (TensorRT-LLM, ``share_of_free_pool_bytes``); ``whole``:
        :math:`M - W - O` (llama.cpp). [B]

    Examples
    --------
    >>> kv_pool_bytes(80e9, 16e9, 2e9, rule="share_of_total", fraction=0.9)
    54000000000.0
    """
    if rule not in KV_POOL_RULES:
        raise ValueError(f"unknown kv rule {rule!r}; known: {', '.join(KV_POOL_RULES)}")
    return scalar_or_array(KV_POOL_RULES[rule](capacity, weights, overhead, fraction, non_torch))


def device_capacity(capacity: Any, unified_memory: bool, profile: EngineProfile) -> Any:
    """Memory the engine may use on one device: all of a discrete GPU, or the engine's default share
    of unified memory (Metal wires about 75 % of an Apple SoC's memory for the GPU). [B]

    Examples
    --------
    >>> device_capacity(128e9, True, engine("llama.cpp"))
    96000000000.0
    """
    share = profile.unified_memory_fraction if unified_memory else 1.0
    return scalar_or_array(number(capacity) * share)


def non_torch_bytes(single_gpu: Any, per_peer: Any, gpus: Any) -> Any:
    r"""Non-torch memory per GPU: the single-GPU part plus a share for every other GPU of the layout.

    Parameters
    ----------
    single_gpu : array_like
        ``EngineProfile.runtime_bytes``. [B]
    per_peer : array_like
        ``EngineProfile.runtime_bytes_multi_gpu``. [B]
    gpus : array_like
        GPUs of the layout. [-]

    Returns
    -------
    numeric
        :math:`R_1 + R_p \min(n - 1, 7)`: NCCL and custom all-reduce buffers grow with the peers of
        an 8-GPU node (larger layouts are counted as one node's peers). vLLM logs 0.11-0.35 GiB at one
        or two GPUs and 5.68 GiB per rank at TP8 on H200 (vllm-project/vllm issue #10702). [B]

    Examples
    --------
    >>> non_torch_bytes(0.2, 0.79, 8)
    5.73
    """
    return scalar_or_array(number(single_gpu) + number(per_peer) * minimum(maximum(number(gpus) - 1, 0), 7))


def padded_width(width: Any, multiple: Any) -> Any:
    r"""``width`` rounded up to a whole number of ``multiple`` (vLLM's ``round_up``). [-]

    :math:`\lceil w / m \rceil m`.

    Examples
    --------
    >>> padded_width(2880, 256), padded_width(2880, 128), padded_width(2880, 1)
    (3072, 2944, 2880)
    """
    return scalar_or_array(-(-number(width) // number(multiple)) * number(multiple))


def padded_expert_share(
    hidden: Any, intermediate: Any, split: Any, hidden_multiple: Any, intermediate_multiple: Any
) -> Any:
    r"""How much larger an engine allocates a routed expert than the checkpoint stores it, when it pads
    the expert's widths for its kernels. [-]

    An expert's gate-up and down projections (and their block scales) both hold
    :math:`\propto h \cdot d` bytes, so padding the hidden width :math:`h` and the intermediate width per
    rank :math:`d_s = \lceil d/s \rceil` scales them by

    .. math:: \frac{\lceil h / m_h \rceil m_h}{h} \cdot \frac{\lceil d_s / m_d \rceil m_d}{d_s}

    (biases, under 0.1 % of gpt-oss's expert bytes, are left out).

    Parameters
    ----------
    hidden : array_like
        Model hidden width :math:`h`. [-]
    intermediate : array_like
        An expert's intermediate width :math:`d`. [-]
    split : array_like
        Ranks the intermediate width is split over (tensor parallelism; 1 under expert parallelism). [-]
    hidden_multiple, intermediate_multiple : array_like
        The engine's multiples :math:`m_h` and :math:`m_d` (``EngineProfile.mxfp4_hidden_multiple``). [-]

    Returns
    -------
    array_like
        The factor, at least 1. [-]

    References
    ----------
    vllm-project/vllm, commit 007d50058a06, ``vllm/model_executor/layers/quantization/mxfp4.py``,
    ``Mxfp4MoEMethod.create_weights``: the MXFP4 expert tensors are allocated at
    ``round_up(hidden_size, m_h)`` and ``round_up(intermediate_size_per_partition, m_d)``; Marlin
    (Ampere, and Hopper in vLLM 0.10) 256 and 128, FlashInfer TRT-LLM-gen (Blackwell) 256 and 256,
    FlashInfer CUTLASS 128 and 128, Triton 1 and 64.

    Examples
    --------
    >>> round(padded_expert_share(2880, 2880, 1, 256, 128), 4)  # gpt-oss on vLLM's Marlin backend
    1.0904
    >>> padded_expert_share(4096, 1408, 1, 256, 128)
    1.0
    """
    h, part = number(hidden), -(-number(intermediate) // number(split))  # whole columns per rank
    return scalar_or_array(padded_width(h, hidden_multiple) / h
                           * padded_width(part, intermediate_multiple) / part)


def vocabulary_on_gpu(embedding_bytes: Any, head_bytes: Any, output_bytes: Any, input_on_host: Any) -> tuple[Any, Any]:
    r"""The token embedding and LM head a GPU holds, :math:`(W_{emb}, W_{head})` as stored, or
    :math:`(0, W_{out})` where the engine keeps the input embedding in host memory
    (``EngineProfile.input_embedding_on_host``: llama.cpp).

    ``embedding_bytes`` and ``head_bytes`` (0 when tied) as stored, ``output_bytes`` :math:`W_{out}` the output
    layer as the engine holds it: the head, or a tied embedding's duplicate (llama.cpp creates a missing
    ``output.weight`` from ``token_embd`` again, ``TENSOR_DUPLICATED``, in the output layer's buffer:
    ggml-org/llama.cpp@a5410f046c01d01330c8a42f13b64a211fedf2c3:src/llama-model.cpp ``load_tensors``, whose
    ``dev_input`` is always the CPU). [B]

    >>> vocabulary_on_gpu(10.0, 0.0, 10.0, True), vocabulary_on_gpu(10.0, 12.0, 12.0, False)
    ((0.0, 10.0), (10.0, 12.0))
    """
    return (scalar_or_array(where(input_on_host, 0.0, number(embedding_bytes))),
            scalar_or_array(where(input_on_host, number(output_bytes), number(head_bytes))))
