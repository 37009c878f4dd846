r"""Engine defaults chosen at startup from the GPU and the layout, as each engine's source chooses them.

* SGLang's ``mem_fraction_static`` when the command line does not set it: from the GPU memory and the
  tensor-parallel size. Two rules, by version (``FRACTION_RULES``): the reserved-memory heuristic of
  ``_handle_gpu_memory_settings`` (sglang 0.5 on, 2025-2026: ``sglang_mem_fraction_static``) and the
  tensor-parallel table of ``ServerArgs.__post_init__`` (sglang 0.3-0.4: ``sglang_v04_mem_fraction_static``).
* llama.cpp's compute buffer: the worst-case graph of one micro-batch, every token an output
  (``llama_cpp_compute_buffer_bytes``).
* TensorRT-LLM's PyTorch backend sizes the KV pool after a profiling forward pass over dummy requests
  (``trtllm_profile_requests``); the pool is ``free_gpu_memory_fraction`` of what that pass leaves free
  (``engines.KV_POOL_RULES["share_of_free"]``).
* TensorRT-LLM's C++ runtime (TensorRT engines) allocates the engine's device memory, sized by TensorRT's
  builder for the engine's largest token count, before it sizes the KV pool
  (``tensorrt_engine_activation_bytes``).

Deliberate omissions: SGLang's extra reserves for DP attention, speculative decoding, DeepEP all-to-all,
XPU scratch and multimodal models, and its post-capture KV sizing; TensorRT-LLM's beam width and
attention-DP copies of the dummy requests.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from gpusizer.checks import scalar_or_array
from gpusizer.numeric import ceil, maximum, minimum, number, where
from gpusizer.units import MiB

__all__ = [
    "FRACTION_RULES", "llama_cpp_compute_buffer_bytes", "memory_fraction", "sglang_chunked_prefill_size",
    "sglang_cuda_graph_max_bs", "sglang_mem_fraction_static", "sglang_prefill_graph_sizes",
    "sglang_reserved_memory_bytes", "sglang_v04_mem_fraction_static", "tensorrt_engine_activation_bytes",
    "trtllm_profile_requests",
]

#: SGLang's GPU-memory buckets [MiB] and, per bucket, the default chunked-prefill size [token] and the
#: decode CUDA-graph max batch below and from TP 4 (T4 class, A10/4090/5090, A100-40G/L40, H100/A100-80G,
#: H20/H200, B200/MI300).
_BUCKETS_MIB = np.array([20, 35, 60, 90, 160]) * 1024.0
_CHUNKED = np.array([2048, 4096, 4096, 8192, 8192, 16384])
_GRAPH_BS_SMALL_TP = np.array([8, 48, 32, 256, 256, 512])
_GRAPH_BS_LARGE_TP = np.array([8, 160, 160, 512, 512, 512])


#: SGLang's prefill CUDA-graph token sizes up to 4096; past it one every 512 from 4608.
_PREFILL_SIZES = np.array([*range(4, 33, 4), *range(48, 257, 16), *range(288, 513, 32), *range(576, 1025, 64),
                           *range(1280, 4097, 256)])


def _bucket(capacity: Any) -> Any:
    return np.searchsorted(_BUCKETS_MIB, np.asarray(capacity, dtype=float) / MiB, side="right")


def sglang_chunked_prefill_size(capacity: Any) -> Any:
    """SGLang's default ``chunked_prefill_size`` on a GPU of ``capacity`` bytes. [token]

    2048 under 20 GiB, 4096 under 60 GiB, 8192 under 160 GiB, 16384 from there.

    References
    ----------
    sgl-project/sglang, commit 031ed82d8b5e, ``python/sglang/srt/arg_groups/memory_hook.py``,
    ``handle_gpu_memory_settings``.

    Examples
    --------
    >>> sglang_chunked_prefill_size(79.22 * 2**30), sglang_chunked_prefill_size(192e9)
    (8192, 16384)
    """
    return scalar_or_array(_CHUNKED[_bucket(capacity)])


def sglang_cuda_graph_max_bs(capacity: Any, tensor_parallel: Any) -> Any:
    """SGLang's default decode ``cuda_graph_max_bs`` (``cuda_graph_config[decode].max_bs``). [-]

    By GPU memory, larger from tensor parallelism 4 on: 8; 48 or 160; 32 or 160; 256 or 512; 512.

    References
    ----------
    sgl-project/sglang, commit 031ed82d8b5e, ``python/sglang/srt/arg_groups/memory_hook.py``,
    ``handle_gpu_memory_settings``.

    Examples
    --------
    >>> sglang_cuda_graph_max_bs(79.22 * 2**30, 1), sglang_cuda_graph_max_bs(79.22 * 2**30, 4)
    (256, 512)
    """
    bucket = _bucket(capacity)
    return scalar_or_array(np.where(np.asarray(tensor_parallel) < 4, _GRAPH_BS_SMALL_TP[bucket],
                                    _GRAPH_BS_LARGE_TP[bucket]))


def sglang_prefill_graph_sizes(max_tokens: Any) -> Any:
    """How many prefill CUDA graphs SGLang captures up to ``max_tokens`` tokens (its default: the chunked-prefill
    size, on attention backends other than MLA). [-]

    References
    ----------
    sgl-project/sglang, commit 019667ad6ff5, ``python/sglang/srt/arg_groups/cuda_graph_hook.py``,
    ``generate_prefill_cuda_graph_batch_sizes``: 4-32 by 4, 48-256 by 16, 288-512 by 32, 576-1024 by 64,
    1280-4096 by 256, then by 512 from 4608.

    Examples
    --------
    >>> sglang_prefill_graph_sizes(8192), sglang_prefill_graph_sizes(4096)
    (58, 50)
    """
    m = np.asarray(max_tokens)
    beyond = np.where(m >= 4608, (m - 4608) // 512 + 1, 0)
    return scalar_or_array(np.searchsorted(_PREFILL_SIZES, m, side="right") + beyond)


def sglang_reserved_memory_bytes(
    capacity: Any, tensor_parallel: Any, *, pipeline_parallel: Any = 1, chunked_prefill: Any = None,
    cuda_graph_max_bs: Any = None, prefill_graph_sizes: Any = None,
) -> Any:
    r"""Memory SGLang keeps out of its static share for activations and CUDA graphs, by its heuristic.

    Parameters
    ----------
    capacity : array_like
        GPU memory, :math:`M` (SGLang reads nvidia-smi's ``memory.total``). [B]
    tensor_parallel, pipeline_parallel : array_like
        ``tp_size`` :math:`t` and ``pp_size`` :math:`p`. [-]
    chunked_prefill : array_like, optional
        ``--chunked-prefill-size`` :math:`c`; default ``sglang_chunked_prefill_size``. [token]
    cuda_graph_max_bs : array_like, optional
        ``--cuda-graph-max-bs`` :math:`b` (0 with CUDA graphs off); default ``sglang_cuda_graph_max_bs``. [-]
    prefill_graph_sizes : array_like, optional
        Captured prefill (piecewise) CUDA-graph sizes :math:`n_p`, 8 MiB each; default
        ``sglang_prefill_graph_sizes(c)``; 0 where they are off (SGLang before 2026). [-]

    Returns
    -------
    numeric
        In MiB, then bytes:

        .. math:: R = 512 + 1.5 \max(c, 2048) + 1024\,t\,p/8 + 2 b + 8 n_p,

        at least 10 GiB on GPUs of more than 60 GiB. [B]

    References
    ----------
    sgl-project/sglang, commit 031ed82d8b5e, ``python/sglang/srt/arg_groups/memory_hook.py``,
    ``handle_gpu_memory_settings`` and ``reserve_for_graph_mb`` (the same terms, less the prefill
    graphs, in ``server_args.py`` ``_handle_gpu_memory_settings`` of late 2025).

    Examples
    --------
    >>> sglang_reserved_memory_bytes(79.22 * 2**30, 1) / 2**20  # H100: 512 + 12288 + 128 + 512 + 58 x 8
    13904.0
    >>> sglang_reserved_memory_bytes(44.99 * 2**30, 1, prefill_graph_sizes=0) / 2**20  # L40S: 512 + 6144 + 128 + 64
    6848.0
    """
    chunk = sglang_chunked_prefill_size(capacity) if chunked_prefill is None else chunked_prefill
    graphs = sglang_cuda_graph_max_bs(capacity, tensor_parallel) if cuda_graph_max_bs is None else cuda_graph_max_bs
    prefill = sglang_prefill_graph_sizes(chunk) if prefill_graph_sizes is None else prefill_graph_sizes
    mib = (512 + 1.5 * maximum(number(chunk), 2048) + number(tensor_parallel) * number(pipeline_parallel) / 8 * 1024
           + 2 * number(graphs) + 8 * number(prefill))
    mib = where(number(capacity) > 60 * 1024 * MiB, maximum(mib, 10 * 1024), mib)
    return scalar_or_array(mib * MiB)


def sglang_mem_fraction_static(capacity: Any, tensor_parallel: Any, **reserve: Any) -> Any:
    r"""SGLang's default ``mem_fraction_static`` (sglang 0.5 on): the GPU memory less the reserve, as a share.

    .. math:: f = \mathrm{round}\!\left(\frac{M - R}{M}, 3\right)

    with :math:`R` from ``sglang_reserved_memory_bytes`` (its keywords pass through). [-]

    References
    ----------
    sgl-project/sglang, commit 031ed82d8b5e, ``python/sglang/srt/arg_groups/memory_hook.py``,
    ``handle_gpu_memory_settings``: ``round((gpu_mem - reserved_mem) / gpu_mem, 3)``, ``gpu_mem`` being
    nvidia-smi's ``memory.total`` (81,559 MiB on an H100 80GB, where the CUDA total gpusizer holds is
    81,121 MiB: the fraction comes out 0.001 lower). sgl-project/sglang PR #39713 logs 0.83 on an H100 at
    TP1 (81,559 MiB: 0.830); issue #29092 0.828 with the earlier prefill-graph list of 74 sizes.

    Examples
    --------
    >>> sglang_mem_fraction_static(79.22 * 2**30, 1)  # (81121 - 13904) / 81121 MiB
    0.829
    >>> sglang_mem_fraction_static(81559 * 2**20, 1)  # at nvidia-smi's total, as SGLang reads it
    0.83
    """
    share = 1 - number(sglang_reserved_memory_bytes(capacity, tensor_parallel, **reserve)) / number(capacity)
    return scalar_or_array(np.round(share, 3))


def sglang_v04_mem_fraction_static(tensor_parallel: Any) -> Any:
    """SGLang 0.3-0.4's default ``mem_fraction_static``: 0.88 at TP1, 0.87 from TP2, 0.85 from TP4, 0.81 from
    TP8, 0.79 from TP16. [-]

    References
    ----------
    sgl-project/sglang ``python/sglang/srt/server_args.py``, ``ServerArgs.__post_init__`` ("Set mem fraction
    static, which depends on the tensor parallelism size"), sglang 0.4 (the code index holds this version
    without its commit); the first table, sgl-project/sglang@469c63e54e7d, read 0.90, 0.85, 0.82, 0.80.

    Examples
    --------
    >>> sglang_v04_mem_fraction_static(1), sglang_v04_mem_fraction_static(8)
    (0.88, 0.81)
    """
    tp = np.asarray(tensor_parallel)
    share = np.select([tp >= 16, tp >= 8, tp >= 4, tp >= 2], [0.79, 0.81, 0.85, 0.87], 0.88)
    return scalar_or_array(share)


#: Rules from (capacity [B], tensor parallelism, the profile's fraction) to the memory fraction in force.
FRACTION_RULES: dict[str, Callable[[Any, Any, Any], Any]] = {
    "fixed": lambda capacity, tp, fraction: fraction,
    "sglang": lambda capacity, tp, fraction: sglang_mem_fraction_static(capacity, tp),
    "sglang_v04": lambda capacity, tp, fraction: sglang_v04_mem_fraction_static(tp),
}


def memory_fraction(rule: str, capacity: Any, tensor_parallel: Any, fraction: Any) -> Any:
    """The memory fraction an engine runs with: ``fraction`` itself (``fixed``), or the default its version
    chooses from the GPU memory and the tensor parallelism (``FRACTION_RULES``). [-]

    Raises
    ------
    ValueError
        Naming the known rules when ``rule`` is unknown.

    Examples
    --------
    >>> memory_fraction("fixed", 80e9, 1, 0.9), memory_fraction("sglang_v04", 80e9, 4, 0.9)
    (0.9, 0.85)
    """
    if rule not in FRACTION_RULES:
        raise ValueError(f"unknown fraction rule {rule!r}; known: {', '.join(FRACTION_RULES)}")
    return scalar_or_array(FRACTION_RULES[rule](capacity, tensor_parallel, fraction))


def trtllm_profile_requests(max_num_tokens: Any, max_seq_len: Any) -> Any:
    r"""Dummy context requests of TensorRT-LLM's KV-sizing forward pass (PyTorch backend). [-]

    ``KvCacheCreator`` fills ``max_num_tokens`` with prompts of ``max_seq_len - 1`` tokens, the last one
    shorter, each asking for one output token: the pass's logits and sampler work on this many requests.

    .. math:: n = \left\lceil \frac{T}{\min(T, \max(S - 1, 1))} \right\rceil

    References
    ----------
    NVIDIA/TensorRT-LLM, commit d8ae02caed59, ``tensorrt_llm/_torch/pyexecutor/_util.py``,
    ``KvCacheCreator._create_dummy_context_requests`` and ``_cal_max_tokens``: ``available_kv_mem =
    (total_gpu_memory - peak_memory + alloc_kv_tokens * kv_size_per_token) * fraction``.

    Examples
    --------
    >>> trtllm_profile_requests(23552, 157)  # TensorRT-LLM issue #6294: 150 prompts of 156 tokens and one of 152
    151.0
    >>> trtllm_profile_requests(8192, 131072)
    1.0
    """
    tokens = number(max_num_tokens)
    prompt = minimum(tokens, maximum(number(max_seq_len) - 1, 1))
    return scalar_or_array(ceil(tokens / prompt))


def tensorrt_engine_activation_bytes(
    max_num_tokens: Any, hidden: Any, ffn_width: Any, bytes_per_element: Any, tensor_parallel: Any = 1
) -> Any:
    r"""Device memory of a TensorRT-LLM engine (its activations), as the C++ runtime allocates it at load.

    Parameters
    ----------
    max_num_tokens : array_like
        Largest token count of the engine's optimisation profile: the build's ``max_num_tokens``, or
        ``max_batch_size x max_input_len`` where the build does not set it (TensorRT-LLM 0.5-0.7). [token]
    hidden, ffn_width : array_like
        Model width :math:`d` and the widest FFN intermediate a token produces :math:`d_{ff}`. [-]
    bytes_per_element : array_like
        Activation dtype size. [B]
    tensor_parallel : array_like, optional
        The FFN intermediate is split across ranks. [-]

    Returns
    -------
    numeric
        .. math:: T\,(2 d + 3 d_{ff}/t)\,b_a

        TensorRT plans one buffer for the engine's tensors at their largest shapes, reusing memory
        between tensors whose lifetimes do not overlap: one decoder layer's live set, the MLP's gate,
        up and gated products beside two residual-width tensors. Unlike a PyTorch profiling pass there
        is no sampler term (logits are I/O tensors the runtime allocates itself) and no third
        residual-width buffer. [B]

    Notes
    -----
    TensorRT-LLM issue #1716 (0.11.0.dev2024052800, ``benchmarks/python`` llama_7b: :math:`d` = 4,096,
    :math:`d_{ff}` = 11,008, fp16, ``max_batch_size`` 128 x ``max_input_len`` 1,024 = 131,072 tokens)
    logs "Allocated 10304.00 MiB for execution context memory"; this gives 131,072 x 41,216 x 2 B =
    10,304.00 MiB. The per-token factor is read from that log (TensorRT's planner is closed source): it
    is the only split of 41,216 elements into whole residual and FFN widths, and it is checked, not
    fitted, on TensorRT-LLM issue #224 (0.5, 51,200 tokens, KV tokens within 3 %).

    References
    ----------
    NVIDIA/TensorRT-LLM, commit 0165bd7ac275, ``cpp/tensorrt_llm/runtime/tllmRuntime.cpp``, ``TllmRuntime``
    constructor: ``mEngine->getDeviceMemorySizeV2()`` bytes allocated once when the engine loads ("[MemUsageChange]
    Allocated %.2f MiB for execution context memory") and shared by every execution context
    (``createExecutionContextWithoutDeviceMemory``); the 2023 file (0.5) does the same with
    ``getDeviceMemorySize()``, and its ``gptSession.cpp`` ``GptSession::setup`` creates the contexts before
    ``createKvCacheManager`` sizes the pool from the free memory (``KVCacheManager::getMaxNumTokens``, "Using %d
    tokens in paged KV cache");
    commit 5a211b915ae9, ``docs/source/reference/memory.md``: the activation size is about the max number of
    input tokens times a constant factor, the max number of input tokens being ``max_num_tokens`` or
    ``max_batch_size * max_input_len``; commit 05316d331336, ``benchmarks/python/build.py``:
    ``max_num_tokens = max_batch_size * max(max_input_len, max_beam_width)``.

    Examples
    --------
    >>> tensorrt_engine_activation_bytes(128 * 1024, 4096, 11008, 2.0) / 2**20  # TensorRT-LLM issue #1716
    10304.0
    """
    per_token = 2 * number(hidden) + 3 * number(ffn_width) / number(tensor_parallel)
    return scalar_or_array(number(max_num_tokens) * per_token * number(bytes_per_element))


def llama_cpp_compute_buffer_bytes(ubatch: Any, hidden: Any, ffn_width: Any, vocab: Any) -> Any:
    r"""llama.cpp's compute buffer on the device that runs the output layer, for one micro-batch.

    Parameters
    ----------
    ubatch : array_like
        Tokens of the reserved worst-case graph: ``min(n_ctx, n_ubatch)`` (``-ub``, 512 by default). [token]
    hidden, ffn_width, vocab : array_like
        Model width :math:`d`, widest FFN intermediate a token produces :math:`d_{ff}`, vocabulary :math:`V`. [-]

    Returns
    -------
    numeric
        .. math:: 4\,u \max(V + d,\; 3 d_{ff} + d)

        llama.cpp reserves the graph of a full micro-batch with every token an output, and ggml's
        allocator keeps a tensor only until its last use: the peak is the FP32 logits of all ``u``
        tokens beside the final normed hidden state (:math:`V + d`), unless a layer's SwiGLU step
        (gate, up and their product, beside the residual: :math:`3 d_{ff} + d`) is larger. [B]

    Notes
    -----
    Logged: gpt-oss-120b at ``-ub 1024`` (:math:`V` = 201,088, :math:`d` = 2,880) 796 MiB
    (ollama/ollama issue #16416; this gives 796.8 MiB); Llama-3-8B at ``-ub 512`` about 258 MiB (258.5).
    The SwiGLU term is the allocator's liveness argument, not fitted to a log.

    References
    ----------
    ggml-org/llama.cpp, commit 4c7103b96d72, ``src/llama-context.cpp``: the constructor reserves the
    prompt-processing graph with ``graph_reserve(n_tokens, n_seqs, n_tokens, ...)``, ``n_tokens =
    min(n_ctx, n_ubatch)`` and as many outputs as tokens.

    Examples
    --------
    >>> llama_cpp_compute_buffer_bytes(1024, 2880, 11520, 201088) / 2**20  # gpt-oss-120b
    796.75
    """
    u = number(ubatch)
    width = maximum(number(vocab) + number(hidden), 3 * number(ffn_width) + number(hidden))
    return scalar_or_array(4.0 * u * width)
