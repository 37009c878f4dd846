r"""The time of the collectives that cross the links between GPUs: pure functions of numbers.

They broadcast like numpy ufuncs: the time of an all-reduce by each algorithm engines use (ring,
one-shot, two-shot), of a point-to-point send between pipeline stages and of an expert-parallel
all-to-all. Which link a group of GPUs uses, and its constants, is ``gpusizer.interconnect.links``.
The formulas and their sources: ``docs/methods.md``, section "Collectives".

Every collective has the form latency + bytes / bandwidth:

.. math::

   t_{ring} &= \alpha + 2(n-1)\,h + 2\frac{n-1}{n}\frac{m}{\beta} \\
   t_{1shot} &= \alpha + (n-1)\frac{m}{\beta} \\
   t_{2shot} &= 2\alpha + 2\frac{n-1}{n}\frac{m}{\beta}

with :math:`\alpha` the base latency of one collective on the fabric (fitted, ``data/efficiency.toml``),
:math:`h` NCCL's per-step hop latency (1 us over PCIe with peer-to-peer, 2.5 us staged through host
memory: ``data/interconnect.toml``), :math:`m` the message and :math:`\beta` the achieved bus
bandwidth (nccl-tests ``busbw`` convention: a ring moves :math:`2(n-1)/n\,m` bytes per GPU). The
one-shot kernel reads every peer's whole buffer in one synchronisation step (best for the KB-sized
messages of decode); the two-shot kernel reduce-scatters then all-gathers over direct peer links (two
steps, ring traffic); NCCL's ring pays a hop per step. An engine with a custom all-reduce uses the
faster of its two kernels below its size limit and NCCL above it; without one (or without peer
access) it uses the ring.

llama.cpp's row split (``--split-mode row``) has no all-reduce: every split matrix product sends its
input row from the main GPU to the other :math:`n-1` GPUs and copies their output slices back, one
asynchronous ``cudaMemcpyPeer`` each way per GPU on that GPU's stream, then the main GPU waits on
their events:

.. math::

   t_{row} = \alpha + 2\left[h_c + (n-2)\,h_i\right] + (n-1)\left(1 + \tfrac{1}{n}\right)\frac{m}{\beta}

with :math:`h_c` the latency of one peer copy (about 14 us when the driver stages it through host
memory) and :math:`h_i` the host's cost of issuing the next one (about 6 us), both from CUDA's
``p2pBandwidthLatencyTest`` (``data/interconnect.toml``): the copies to different GPUs overlap but
leave the host one after the other. It is paid once per split matrix: seven per Llama layer where
Megatron pays two all-reduces.

Deliberate omissions: NCCL's tree and NVLS (NVLink SHARP) algorithms, protocol switching (LL, LL128,
Simple), congestion between concurrent collectives.

References
----------
.. [1] M. Shoeybi et al., "Megatron-LM," arXiv:1909.08053, 2019 (two all-reduces per layer).
.. [2] NVIDIA, nccl-tests doc/PERFORMANCE.md (algorithm and bus bandwidth).
.. [3] NVIDIA/nccl, src/graph/tuning.cc (latency = base + steps x hop).
.. [4] vllm-project/vllm, csrc/custom_all_reduce.cuh (one-stage and two-stage kernels).
.. [5] deepseek-ai/DeepEP, README (dispatch and combine bottleneck bandwidths).
.. [6] ggml-org/llama.cpp@00108827, ggml/src/ggml-cuda/ggml-cuda.cu, ``ggml_cuda_op_mul_mat``
   (split weights: src1 to every device, dst slices back to the main device, events).
"""

from __future__ import annotations

from typing import Any

from gpusizer.checks import scalar_or_array
from gpusizer.numeric import divide, maximum, minimum, number, where

__all__ = [
    "ALLREDUCE_METHODS",
    "allreduce_methods",
    "allreduce_seconds",
    "alltoall_seconds",
    "engine_allreduce_seconds",
    "one_shot_allreduce_seconds",
    "p2p_seconds",
    "ring_allreduce_seconds",
    "row_split_seconds",
    "two_shot_allreduce_seconds",
]


def ring_allreduce_seconds(
    message_bytes: Any, gpus: Any, bus_bandwidth: Any, latency: Any, hop_latency: Any = 0.0
) -> Any:
    r"""Time of one ring all-reduce (NCCL) of ``message_bytes`` over ``gpus`` GPUs; 0 on one GPU.

    Parameters
    ----------
    message_bytes : array_like
        Bytes reduced (decode: :math:`B\,d\,b_a`). [B]
    gpus : array_like
        GPUs in the group :math:`n`. [-]
    bus_bandwidth : array_like
        Achieved bus bandwidth :math:`\beta` (nccl-tests ``busbw``). [B/s]
    latency : array_like
        Base latency of one collective :math:`\alpha`. [s]
    hop_latency : array_like, optional
        Latency of each of the :math:`2(n-1)` ring steps :math:`h`. [s]

    Returns
    -------
    numeric
        :math:`\alpha + 2(n-1)h + 2\frac{n-1}{n}\frac{m}{\beta}` for :math:`n > 1`, else 0. [s]

    References
    ----------
    .. [1] NVIDIA, nccl-tests doc/PERFORMANCE.md; NVIDIA/nccl src/graph/tuning.cc.

    Examples
    --------
    >>> ring_allreduce_seconds(16384, [1, 2, 8], 370e9, 8e-6)
    array([0.0e+00, 8.044e-06, 8.077e-06])
    >>> ring_allreduce_seconds(16384, 8, 370e9, 8e-6, hop_latency=0.47e-6)  # + 14 hops
    1.4657e-05
    """
    n = number(gpus)
    transfer = divide(number(message_bytes), number(bus_bandwidth))
    ring = 2.0 * (n - 1.0) * number(hop_latency) + divide(2.0 * (n - 1.0), n) * transfer
    return scalar_or_array(where(n > 1, number(latency) + ring, 0.0))


def one_shot_allreduce_seconds(message_bytes: Any, gpus: Any, bus_bandwidth: Any, latency: Any) -> Any:
    r"""Time of a one-shot all-reduce: every GPU reads every peer's whole buffer, then reduces locally.

    Parameters are those of ``ring_allreduce_seconds``.

    Returns
    -------
    numeric
        :math:`\alpha + (n-1)\frac{m}{\beta}` for :math:`n > 1`, else 0: one synchronisation step,
        :math:`(n-1)\,m` bytes into each GPU. [s]

    References
    ----------
    .. [1] vllm-project/vllm, csrc/custom_all_reduce.cuh, ``cross_device_reduce_1stage``.

    Examples
    --------
    >>> one_shot_allreduce_seconds(16384, 8, 370e9, 8e-6)
    8.31e-06
    """
    n = number(gpus)
    t = number(latency) + (n - 1.0) * divide(number(message_bytes), number(bus_bandwidth))
    return scalar_or_array(where(n > 1, t, 0.0))


def two_shot_allreduce_seconds(message_bytes: Any, gpus: Any, bus_bandwidth: Any, latency: Any) -> Any:
    r"""Time of a two-shot all-reduce: reduce-scatter, then all-gather, over direct peer links.

    Parameters are those of ``ring_allreduce_seconds``.

    Returns
    -------
    numeric
        :math:`2\alpha + 2\frac{n-1}{n}\frac{m}{\beta}` for :math:`n > 1`, else 0: two synchronisation
        steps and the traffic of a ring. [s]

    References
    ----------
    .. [1] vllm-project/vllm, csrc/custom_all_reduce.cuh, ``cross_device_reduce_2stage``.

    Examples
    --------
    >>> two_shot_allreduce_seconds(16384, 8, 370e9, 8e-6)
    1.6077e-05
    """
    n = number(gpus)
    t = 2.0 * number(latency) + divide(2.0 * (n - 1.0), n) * divide(number(message_bytes), number(bus_bandwidth))
    return scalar_or_array(where(n > 1, t, 0.0))


def row_split_seconds(
    message_bytes: Any, gpus: Any, bandwidth: Any, latency: Any, copy_latency: Any, issue_latency: Any = None
) -> Any:
    r"""Time of the exchange around one row-split matrix product (llama.cpp ``--split-mode row``); 0 on one GPU.

    Parameters
    ----------
    message_bytes : array_like
        Bytes of the input rows, and of the whole output (decode: :math:`B\,d\,b_a`). [B]
    gpus : array_like
        GPUs sharing the matrix :math:`n`. [-]
    bandwidth : array_like
        Achieved bandwidth of one peer copy :math:`\beta`. [B/s]
    latency : array_like
        Base latency :math:`\alpha` (the main GPU's wait on the others' events, extra launches). [s]
    copy_latency : array_like
        Latency of one ``cudaMemcpyPeer`` :math:`h_c`. [s]
    issue_latency : array_like, optional
        Host time to issue the next asynchronous copy :math:`h_i`; default :math:`h_c` (copies in series). [s]

    Returns
    -------
    numeric
        :math:`\alpha + 2[h_c + (n-2)h_i] + (n-1)(1 + 1/n)\,m/\beta` for :math:`n > 1`, else 0: the main GPU
        sends the input to :math:`n-1` GPUs and receives :math:`n-1` output slices of :math:`m/n`; in each
        direction the last copy leaves :math:`(n-2)h_i` after the first and lands :math:`h_c` later. [s]

    References
    ----------
    .. [1] ggml-org/llama.cpp@00108827, ggml/src/ggml-cuda/ggml-cuda.cu, ``ggml_cuda_op_mul_mat``.

    Examples
    --------
    >>> row_split_seconds(16384, [1, 2, 6], 6.3e9, 30e-6, 14e-6)  # in series: 30 + 2(n-1)14 us + copies
    array([0.00000000e+00, 6.19009524e-05, 1.85170370e-04])
    >>> row_split_seconds(16384, 6, 6.3e9, 30e-6, 14e-6, 6e-6)  # 30 + 2(14 + 4 x 6) us + 5 x 7/6 x 2.6 us
    0.00012117037037037038
    """
    n, h = number(gpus), number(copy_latency)
    issue = h if issue_latency is None else number(issue_latency)
    copies = (n - 1.0) * (1.0 + divide(1.0, n)) * divide(number(message_bytes), number(bandwidth))
    t = number(latency) + 2.0 * (h + maximum(n - 2.0, 0.0) * issue) + copies
    return scalar_or_array(where(n > 1, t, 0.0))


#: All-reduce algorithms by name (``allreduce_seconds(..., method=name)``).
ALLREDUCE_METHODS = {
    "ring": ring_allreduce_seconds,
    "one_shot": one_shot_allreduce_seconds,
    "two_shot": two_shot_allreduce_seconds,
}


def allreduce_methods() -> tuple[str, ...]:
    """Names of the all-reduce algorithms, for ``allreduce_seconds(method=...)``.

    Examples
    --------
    >>> allreduce_methods()
    ('ring', 'one_shot', 'two_shot')
    """
    return tuple(ALLREDUCE_METHODS)


def allreduce_seconds(
    message_bytes: Any, gpus: Any, bus_bandwidth: Any, latency: Any, *, method: str = "ring", hop_latency: Any = 0.0
) -> Any:
    """Time of one all-reduce by the named algorithm (``allreduce_methods()``). [s]

    Raises
    ------
    ValueError
        Naming the known methods when ``method`` is unknown.

    Examples
    --------
    >>> allreduce_seconds(16384, 2, 370e9, 8e-6, method="one_shot")
    8.044e-06
    """
    if method not in ALLREDUCE_METHODS:
        raise ValueError(f"method must be one of {', '.join(ALLREDUCE_METHODS)}, got {method!r}")
    if method == "ring":
        return ring_allreduce_seconds(message_bytes, gpus, bus_bandwidth, latency, hop_latency)
    return ALLREDUCE_METHODS[method](message_bytes, gpus, bus_bandwidth, latency)


def engine_allreduce_seconds(
    message_bytes: Any,
    gpus: Any,
    bus_bandwidth: Any,
    latency: Any,
    hop_latency: Any = 0.0,
    *,
    custom: Any = False,
    custom_max_bytes: Any = 0.0,
    row_split: Any = 0.0,
    issue_latency: Any = None,
) -> Any:
    r"""Time of the all-reduce an engine runs: its custom kernels when it can, else NCCL's ring, or the
    row-split exchanges that stand in for it.

    Parameters
    ----------
    message_bytes, gpus, bus_bandwidth, latency, hop_latency : array_like
        As in ``ring_allreduce_seconds``; with ``row_split``, ``hop_latency`` is the peer-copy latency.
    custom : array_like of bool, optional
        The engine has a one-shot/two-shot custom all-reduce for this group and link.
    custom_max_bytes : array_like, optional
        Messages at or above this size go to NCCL (vLLM: 8 MiB). [B]
    row_split : array_like, optional
        Split matrix products per all-reduce site of a Megatron layer whose outputs gather on the main
        GPU (llama.cpp row split: 3.5, seven matrices per Llama layer); 0: an all-reduce. [-]
    issue_latency : array_like, optional
        Host time to issue the next peer copy of a row split (``row_split_seconds``). [s]

    Returns
    -------
    numeric
        ``row_split`` :math:`\times\, t_{row}` (``row_split_seconds``) where ``row_split`` > 0; else
        :math:`\min(t_{1shot}, t_{2shot})` where custom and :math:`m <` ``custom_max_bytes``,
        else :math:`t_{ring}`. [s]

    Notes
    -----
    Taking the faster kernel stands for the engines' size thresholds: with :math:`\alpha` = 7.7 us
    and :math:`\beta` = 360 GB/s the crossover for 8 GPUs is 0.5 MB, where vLLM switches at 256 KiB.

    Examples
    --------
    >>> engine_allreduce_seconds([16384, 64e6], 8, 370e9, 8e-6, 0.47e-6, custom=True, custom_max_bytes=2**23)
    array([8.30996757e-06, 3.17282703e-04])
    >>> engine_allreduce_seconds(16384, 2, 6.3e9, 30e-6, 14e-6, row_split=3.5)  # 3.5 x row_split_seconds
    0.00021665333333333335
    """
    m, n, beta, alpha = number(message_bytes), number(gpus), number(bus_bandwidth), number(latency)
    small = number(custom) & (m < number(custom_max_bytes))
    fast = minimum(one_shot_allreduce_seconds(m, n, beta, alpha), two_shot_allreduce_seconds(m, n, beta, alpha))
    reduce = where(small, fast, ring_allreduce_seconds(m, n, beta, alpha, hop_latency))
    products = number(row_split)
    rows = products * row_split_seconds(m, n, beta, alpha, hop_latency, issue_latency)
    return scalar_or_array(where(products > 0, rows, reduce))


def p2p_seconds(message_bytes: Any, bandwidth: Any, latency: Any) -> Any:
    r"""Time of one point-to-point send (a pipeline stage handing its activations to the next).

    Parameters
    ----------
    message_bytes : array_like
        Bytes sent (decode: :math:`B\,d\,b_a`). [B]
    bandwidth : array_like
        Achieved link bandwidth, one direction. [B/s]
    latency : array_like
        Latency of the transfer. [s]

    Returns
    -------
    numeric
        :math:`\alpha + m/\beta`. [s]

    Examples
    --------
    >>> p2p_seconds(16384, 20e9, 20e-6)
    2.08192e-05
    """
    return scalar_or_array(number(latency) + divide(number(message_bytes), number(bandwidth)))


def alltoall_seconds(send_bytes: Any, gpus: Any, bandwidth: Any, latency: Any) -> Any:
    r"""Time of one all-to-all (MoE dispatch or combine) in which the busiest GPU moves ``send_bytes``.

    Parameters
    ----------
    send_bytes : array_like
        Bytes the busiest GPU sends to (or receives from) the other ranks, its own share excluded. [B]
    gpus : array_like
        GPUs in the expert-parallel group :math:`n`. [-]
    bandwidth : array_like
        Achieved all-to-all bandwidth per GPU, one direction (DeepEP "bottleneck bandwidth"). [B/s]
    latency : array_like
        Latency of the collective. [s]

    Returns
    -------
    numeric
        :math:`\alpha + m_{max}/\beta_{a2a}` for :math:`n > 1`, else 0. [s]

    References
    ----------
    .. [1] deepseek-ai/DeepEP, README (dispatch and combine bottleneck bandwidths).

    Examples
    --------
    >>> alltoall_seconds(7 / 8 * 128 * 8 * 7168, [1, 8], 45e9, 10e-6)
    array([0.        , 0.00015272])
    """
    t = number(latency) + divide(number(send_bytes), number(bandwidth))
    return scalar_or_array(where(number(gpus) > 1, t, 0.0))
