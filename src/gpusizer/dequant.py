"""Dequantise-then-GEMM: llama.cpp's cuBLAS path for quantised weights at large batch.

llama.cpp builds before ggml-org/llama.cpp PR #8075 (merged 2024-06-24: "use MMQ instead of cuBLAS by
default") multiply quantised weights by a batch of more than ``MMQ_MAX_BATCH_SIZE`` = 32 tokens on GPUs
with FP16 tensor cores by first dequantising each weight matrix to F16 into a scratch buffer
(``to_fp16_cuda``), then running a cuBLAS FP16 GEMM on it (ggerganov/llama.cpp:ggml-cuda.cu at commit
005de59, ``ggml_cuda_mul_mat``: with ``CUDA_USE_TENSOR_CORES`` the MMQ kernels only up to
``MMQ_MAX_BATCH_SIZE`` tokens, else ``ggml_cuda_op_mul_mat_cublas``; the December 2023 builds 1671-1691
behind the held-out rows log ``CUDA_USE_TENSOR_CORES: yes``). Each step therefore pays a memory-bound
pass that reads the quantised weights and writes them as F16, and the GEMM runs at the FP16 tensor rate and
reads F16 weights. Every llama.cpp measurement in ``data/calibration`` (builds of December 2023 to May 2024)
ran this path.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["F16_BYTES", "STREAM_EFFICIENCY", "dequant_pass_bytes", "dequantised", "gemm_weight_bytes"]

#: Bytes of one F16 element, the scratch format of the dequantised weights. [B]
F16_BYTES = 2.0

#: Achieved bandwidth fraction of the dequantise pass, a pure streaming kernel (read blocks, write halves): the
#: top of the kernel-level streaming ceiling of docs/methods.md#measured-bandwidth-efficiency, 83-90 % of the
#: datasheet (FlashMLA 3,000 of 3,350 GB/s, deepseek-ai/FlashMLA:README.md; gpt-fast's A100 "empirical peak"
#: 1,700 of 2,039 GB/s, pytorch-labs/gpt-fast:README.md). Fixed, not fitted: no row isolates the pass. [-]
STREAM_EFFICIENCY = 0.9


def dequantised(tokens: Any, above: Any) -> Any:
    r"""Whether a step of ``tokens`` tokens takes the dequantise-then-GEMM path.

    Parameters
    ----------
    tokens : array_like
        Tokens of the step on one GPU. [token]
    above : array_like
        The engine's threshold (``EngineEntry.dequantize_above``); 0 where the path does not apply. [token]

    Returns
    -------
    bool or ndarray
        :math:`a > 0 \land T > a`.

    References
    ----------
    .. [1] ggerganov/llama.cpp:ggml-cuda.cu at commit 005de59, ``ggml_cuda_mul_mat`` (``MMQ_MAX_BATCH_SIZE`` 32).
    """
    return np.logical_and(np.asarray(above) > 0, np.asarray(tokens) > np.asarray(above))


def dequant_pass_bytes(weight_bytes: Any, f16_ratio: Any) -> Any:
    r"""Traffic of dequantising weights to F16: the quantised weights read once, their F16 copy written.

    Parameters
    ----------
    weight_bytes : array_like
        Quantised weights the step multiplies, as stored. [B]
    f16_ratio : array_like
        F16 bytes per stored byte of the format, :math:`16 / b` for :math:`b` stored bits per weight. [-]

    Returns
    -------
    numeric
        :math:`Q_{dq} = M\,(1 + r)`. [B]

    Notes
    -----
    Q4_0 (4.5 bits, r = 3.56) on Llama 2 7B (6.5e9 weights, 3.66 GB): 16.7 GB per step, 18 ms at 0.9 x 1,008
    GB/s on an RTX 4090, the gap between its Q4_0 and F16 ``pp512`` (7,980 and 11,048 tok/s: 64.2 and 46.3
    ms, ggml-org/llama.cpp PR #4766, January 2024).

    References
    ----------
    .. [1] ggerganov/llama.cpp:ggml-cuda.cu at commit 005de59, ``ggml_cuda_op_mul_mat_cublas`` (``to_fp16_cuda``
       into a pool buffer of halves).
    """
    return weight_bytes * (1.0 + f16_ratio)


def gemm_weight_bytes(weight_bytes: Any, f16_ratio: Any) -> Any:
    r"""Weights the FP16 GEMM reads after dequantisation: the F16 copy.

    Parameters
    ----------
    weight_bytes : array_like
        Quantised weights, as stored. [B]
    f16_ratio : array_like
        F16 bytes per stored byte (``dequant_pass_bytes``). [-]

    Returns
    -------
    numeric
        :math:`M\,r`. [B]

    References
    ----------
    .. [1] ggerganov/llama.cpp:ggml-cuda.cu at commit 005de59, ``ggml_cuda_op_mul_mat_cublas``.
    """
    return weight_bytes * f16_ratio
