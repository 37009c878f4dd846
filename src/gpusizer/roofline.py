r"""The roofline: time of an operator from its FLOPs, its bytes and the machine's two peaks.

Hardware-agnostic pure functions of numbers that broadcast like numpy ufuncs. An operator class
(the weight GEMMs, the attention over the KV cache) takes at least as long as its arithmetic at the
peak rate and at least as long as its memory traffic at the peak bandwidth; gpusizer sums that
per-class bound over the classes of an engine step, which is tighter than one whole-model maximum.
The expected time adds the part of the shorter of the two that does not overlap the longer
(``overlapped_seconds``, [2]_); the ceiling overlaps them completely.
Derating by measured efficiencies is a separate, optional argument: the ceiling is the call with
efficiencies of 1.

Also here: the FLOP counts of the two operator classes every transformer step has (``gemm_flops``,
``attention_flops``), and ``tensor_peak``, which picks the datasheet rate a precision computes at.

Deliberate omissions: cache hierarchy (L2 reuse is absorbed by the measured efficiencies), and
vector-unit work such as norms and activations (folded into the per-layer fixed cost).

References
----------
.. [1] S. Williams, A. Waterman and D. Patterson, "Roofline: an insightful visual performance
   model for multicore architectures," Commun. ACM 52(4), 2009, doi:10.1145/1498765.1498785.
.. [2] G. Hager, J. Treibig, J. Habich and G. Wellein, "Exploring performance and power properties of
   modern multi-core chips via simple machine models," Concurrency Computat.: Pract. Exper. 28(2),
   2016, doi:10.1002/cpe.3180 (the Execution-Cache-Memory model: arithmetic and data transfers
   overlap only in part).
"""

from __future__ import annotations

from typing import Any

from gpusizer.checks import scalar_or_array
from gpusizer.numeric import divide, maximum, minimum, number

__all__ = [
    "COMPUTE_FALLBACK",
    "arithmetic_intensity",
    "attainable_flops",
    "attention_flops",
    "compute_bound",
    "gemm_flops",
    "indexer_flops",
    "overlapped_seconds",
    "ridge_point",
    "roofline_time",
    "tensor_peak",
]


def arithmetic_intensity(flops: Any, bytes_moved: Any) -> Any:
    r"""FLOPs per byte of memory traffic.

    Parameters
    ----------
    flops : array_like
        Arithmetic of the operator. [FLOP]
    bytes_moved : array_like
        Memory traffic of the operator. [B]

    Returns
    -------
    numeric
        :math:`I = F / Q`. [FLOP/B]

    Examples
    --------
    >>> arithmetic_intensity(2 * 8e9, 16e9)  # one token through a BF16 8B model
    1.0
    """
    return scalar_or_array(divide(number(flops), number(bytes_moved)))


def ridge_point(peak_flops: Any, bandwidth: Any) -> Any:
    r"""Arithmetic intensity at which an operator turns from memory- to compute-bound.

    Parameters
    ----------
    peak_flops : array_like
        Peak (or achieved) arithmetic rate. [FLOP/s]
    bandwidth : array_like
        Peak (or achieved) memory bandwidth. [B/s]

    Returns
    -------
    numeric
        :math:`I^* = P / \beta`. [FLOP/B]

    References
    ----------
    .. [1] S. Williams et al., Commun. ACM 52(4), 2009, doi:10.1145/1498765.1498785.

    Examples
    --------
    >>> ridge_point(989.5e12, 3.35e12)  # H100 SXM, BF16 dense
    295.3731343283582
    """
    return scalar_or_array(divide(number(peak_flops), number(bandwidth)))


def attainable_flops(intensity: Any, peak_flops: Any, bandwidth: Any) -> Any:
    r"""Highest arithmetic rate an operator of a given intensity can reach.

    Returns
    -------
    numeric
        :math:`\min(P, \beta I)`. [FLOP/s]

    Examples
    --------
    >>> attainable_flops([1.0, 1000.0], 989.5e12, 3.35e12)
    array([3.350e+12, 9.895e+14])
    """
    return scalar_or_array(minimum(number(peak_flops), number(bandwidth) * number(intensity)))


def roofline_time(
    flops: Any,
    bytes_moved: Any,
    peak_flops: Any,
    bandwidth: Any,
    *,
    compute_efficiency: Any = 1.0,
    bandwidth_efficiency: Any = 1.0,
    overlap: Any = 1.0,
) -> Any:
    r"""Time of an operator class: the slower of its arithmetic and its memory traffic, plus the part
    of the faster that does not overlap (``overlapped_seconds``).

    Parameters
    ----------
    flops : array_like
        Arithmetic. [FLOP]
    bytes_moved : array_like
        Memory traffic. [B]
    peak_flops : array_like
        Datasheet peak at the precision the operator computes in; ``inf`` when unpublished (the
        arithmetic then costs nothing, which keeps the result a lower bound). [FLOP/s]
    bandwidth : array_like
        Datasheet memory bandwidth. [B/s]
    compute_efficiency, bandwidth_efficiency : array_like, optional
        Achieved fractions of the two peaks, in (0, 1]; 1 gives the roofline ceiling. [-]
    overlap : array_like, optional
        Share of the shorter of the two times hidden under the longer (``overlapped_seconds``); 1, the
        default, is the roofline ceiling. [-]

    Returns
    -------
    numeric
        :math:`t = \max(t_c, t_m) + (1 - \omega)\min(t_c, t_m)` with :math:`t_c = F / (\mu P)` and
        :math:`t_m = Q / (\eta \beta)`. [s]

    References
    ----------
    .. [1] S. Williams et al., Commun. ACM 52(4), 2009, doi:10.1145/1498765.1498785.

    Examples
    --------
    >>> roofline_time(2 * 8e9, 16e9, 989.5e12, 3.35e12)  # memory-bound: 16 GB at 3.35 TB/s
    0.004776119402985075
    >>> roofline_time(2 * 8e9, 16e9, 989.5e12, 3.35e12, bandwidth_efficiency=0.8)
    0.005970149253731343
    """
    compute = divide(number(flops), number(peak_flops) * number(compute_efficiency))
    memory = number(bytes_moved) / (number(bandwidth) * number(bandwidth_efficiency))
    return overlapped_seconds(compute, memory, overlap)


def overlapped_seconds(compute_seconds: Any, memory_seconds: Any, overlap: Any = 1.0) -> Any:
    r"""Time of an operator whose arithmetic and memory traffic overlap only in part.

    Parameters
    ----------
    compute_seconds : array_like
        Time of the arithmetic alone (FLOPs over the achieved rate). [s]
    memory_seconds : array_like
        Time of the memory traffic alone (bytes over the achieved bandwidth). [s]
    overlap : array_like, optional
        Fraction of the shorter of the two hidden under the longer, in [0, 1]: 1 is the roofline
        (perfect overlap, the ceiling), 0 runs them one after the other. [-]

    Returns
    -------
    numeric
        :math:`t = \max(t_c, t_m) + (1 - \omega)\min(t_c, t_m)`, between :math:`\max(t_c, t_m)`
        and :math:`t_c + t_m`. [s]

    Notes
    -----
    The roofline [1]_ assumes that arithmetic and memory traffic overlap completely, which makes it an
    upper bound on speed. The Execution-Cache-Memory model [2]_ splits a kernel's time into parts that
    overlap and parts that do not; :math:`\omega` is the share of the shorter time that is hidden.
    In an LLM engine step the weight GEMMs stream their weights while the tensor cores work only in
    part: a decode step of a large batch is seen to cost about the weight-streaming time *plus* the
    arithmetic (TensorRT-LLM's MLPerf batches, ``docs/methods.md#decode-step``), which is
    :math:`\omega` near 0; single-stream decode, where :math:`t_c \ll t_m`, does not depend on it.

    References
    ----------
    .. [1] S. Williams et al., Commun. ACM 52(4), 2009, doi:10.1145/1498765.1498785.
    .. [2] G. Hager, J. Treibig, J. Habich and G. Wellein, "Exploring performance and power properties
       of modern multi-core chips via simple machine models," Concurrency Computat.: Pract. Exper.
       28(2), 2016, doi:10.1002/cpe.3180.

    Examples
    --------
    >>> overlapped_seconds(0.003, 0.004)  # the roofline: the slower of the two
    0.004
    >>> overlapped_seconds(0.003, 0.004, overlap=0.0)  # one after the other
    0.007
    >>> overlapped_seconds(0.003, 0.004, overlap=0.5)
    0.0055
    """
    if type(compute_seconds) is float and type(memory_seconds) is float and type(overlap) is float:
        return maximum(compute_seconds, memory_seconds) + (1.0 - overlap) * minimum(compute_seconds, memory_seconds)
    c, m, w = number(compute_seconds), number(memory_seconds), number(overlap)
    return scalar_or_array(maximum(c, m) + (1.0 - w) * minimum(c, m))


def compute_bound(flops: Any, bytes_moved: Any, peak_flops: Any, bandwidth: Any) -> Any:
    """Whether the arithmetic takes longer than the memory traffic at the two peaks. [bool]

    Examples
    --------
    >>> compute_bound([2e9, 2e12], 1e9, 1e14, 1e12)
    array([False,  True])
    """
    return scalar_or_array(divide(number(flops), number(peak_flops)) > number(bytes_moved) / number(bandwidth))


def gemm_flops(tokens: Any, params: Any) -> Any:
    r"""FLOPs of multiplying ``tokens`` activations by weight matrices holding ``params`` entries.

    Parameters
    ----------
    tokens : array_like
        Rows of the activation matrix (tokens in the step). [token]
    params : array_like
        Weight-matrix entries each token is multiplied by. [param]

    Returns
    -------
    numeric
        :math:`2\,T\,N` (one multiply and one add per weight and token). [FLOP]

    References
    ----------
    .. [1] J. Kaplan et al., "Scaling laws for neural language models," arXiv:2001.08361, 2020.

    Examples
    --------
    >>> gemm_flops(1, 6.98e9)
    13960000000.0
    """
    return scalar_or_array(2.0 * (number(tokens) * number(params)))


def indexer_flops(pairs: Any, index_width: Any) -> Any:
    r"""FLOPs of a sparse-attention lightning indexer scoring ``pairs`` (query, key) pairs.

    Parameters
    ----------
    pairs : array_like
        (query, key) pairs the indexer scores: every cached key of each query's layer. [-]
    index_width : array_like
        Indexer heads times head width :math:`H_I d_I`. [-]

    Returns
    -------
    numeric
        :math:`2\,H_I d_I\,\Pi`: one dot product of :math:`d_I` per head and pair (the official kernel
        runs it in FP8; the ReLU and the weighted sum over heads, :math:`3 H_I` per pair, are left out). [FLOP]

    References
    ----------
    .. [1] DeepSeek-AI, "DeepSeek-V3.2-Exp: boosting long-context efficiency with DeepSeek Sparse
       Attention," 2025, section 2.1; ``fp8_index`` in
       deepseek-ai/DeepSeek-V3.2-Exp:inference/model.py@6d8cb70dfdd6f37c83c5208105a3e2c8da117485.

    Examples
    --------
    >>> float(indexer_flops(131072, 64 * 128))  # one query over 128K keys: 2 x 8192 x 131072
    2147483648.0
    """
    return scalar_or_array(2.0 * number(index_width) * number(pairs))


def attention_flops(pairs: Any, heads: Any, qk_dim: Any, v_dim: Any) -> Any:
    r"""FLOPs of the attention scores and the weighted sum of values over query-key pairs.

    Parameters
    ----------
    pairs : array_like
        (query, key) pairs attended, summed over the layers of the group. [-]
    heads : array_like
        Query heads. [-]
    qk_dim, v_dim : array_like
        Width of the query/key dot product and of a value, per head: :math:`d_h` and :math:`d_h`
        for MHA/GQA; for MLA :math:`d_{nope} + d_{rope}` and :math:`d_v` in prefill ("MHA mode") and
        :math:`r_{kv} + d_{rope}` and :math:`r_{kv}` in decode (absorbed weights). [-]

    Returns
    -------
    numeric
        :math:`2\,n_h (d_{qk} + d_v)\,\Pi`; :math:`4\,n_h d_h \Pi` for MHA/GQA. [FLOP]

    References
    ----------
    .. [1] R. Pope et al., "Efficiently scaling Transformer inference," arXiv:2211.05102, 2022.
    .. [2] DeepSeek-AI, "DeepSeek-V2," arXiv:2405.04434, 2024 (MLA).

    Examples
    --------
    >>> attention_flops(1000, 32, 128, 128)
    16384000.0
    """
    return scalar_or_array(2.0 * (number(heads) * (number(qk_dim) + number(v_dim))) * number(pairs))


#: Rates a compute precision may use, best first. A precision the GPU has no rate for is dequantized
#: and multiplied in 16-bit (vLLM's Marlin kernels run FP8 weights as W8A16 on Ampere, MXFP4 as W4A16
#: on Hopper).
COMPUTE_FALLBACK: dict[str, tuple[str, ...]] = {
    "fp4": ("fp4", "bf16", "fp16"),
    "fp8": ("fp8", "bf16", "fp16"),
    "int8": ("int8", "bf16", "fp16"),
    "bf16": ("bf16", "fp16"),
    "fp16": ("fp16", "bf16"),
    "tf32": ("tf32", "fp32"),
    "fp32": ("fp32",),
}


def tensor_peak(rates: Any, compute: str, accumulate: str = "fp32") -> tuple[float, str]:
    """Dense peak a GPU computes ``compute`` at, and the precision actually used.

    Parameters
    ----------
    rates : DenseRates or mapping
        The catalogue's dense rates (attributes or keys ``fp4``, ``fp8``, ``bf16``...). [FLOP/s]
    compute : str
        Precision the multiply would run in (``Precision.compute``).
    accumulate : str, optional
        Precision the kernel accumulates in: ``"fp16"`` for an FP16 GEMM with FP16 accumulation
        (cuBLAS ``CUBLAS_COMPUTE_16F``) takes the ``fp16_acc16`` rate where one is published
        (GeForce runs it at twice the FP32-accumulate rate, NVIDIA Ada whitepaper Appendix A).

    Returns
    -------
    (float, str)
        The first published rate of ``COMPUTE_FALLBACK[compute]`` and its precision; ``(inf,
        "none")`` when the vendor publishes none, so a roofline stays an upper bound on speed.
        [FLOP/s]

    Raises
    ------
    ValueError
        For an unknown compute precision.

    Examples
    --------
    >>> tensor_peak({"bf16": 312e12, "fp16": 312e12}, "fp8")  # A100: FP8 weights run as W8A16
    (312000000000000.0, 'bf16')
    >>> tensor_peak({"fp16": 165.2e12, "fp16_acc16": 330.3e12}, "fp16", "fp16")  # RTX 4090
    (330300000000000.0, 'fp16_acc16')
    """
    if compute not in COMPUTE_FALLBACK:
        raise ValueError(f"compute must be one of {', '.join(COMPUTE_FALLBACK)}, got {compute!r}")
    if accumulate not in ("fp16", "fp32"):
        raise ValueError(f"accumulate must be 'fp16' or 'fp32', got {accumulate!r}")
    names = COMPUTE_FALLBACK[compute]
    if accumulate == "fp16" and compute == "fp16":
        names = ("fp16_acc16", *names)
    for name in names:
        value = rates.get(name) if isinstance(rates, dict) else getattr(rates, name, None)
        if value:
            return float(value), name
    return float("inf"), "none"
