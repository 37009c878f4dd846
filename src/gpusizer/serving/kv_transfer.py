r"""The KV hand-off of disaggregated serving: which link, how many bytes, and how long it adds to the TTFT.

``kv_link`` names a link (the GPU's NVLink, an RDMA NIC of ``data/interconnect.toml``'s scale-out class, or a
bandwidth) with its achieved and line-rate bandwidth and latency, as ``interconnect.link_class`` and the fitted
fabrics of ``data/efficiency.toml`` give them; ``kv_transfer_bytes`` is one prompt's KV cache on the busiest GPU
of a layout (``prefix_cache.per_sequence_bytes``); ``exposed_transfer_seconds`` is the time the transfer adds
after the prefill, whole or layer by layer. ``docs/disaggregation.md`` has the derivations.

Deliberate omissions: the transfer engine's own overheads (NIXL, Mooncake Transfer Engine: memory
registration, block gathering) beyond one latency per send; several NICs per GPU (give the summed bandwidth).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gpusizer import catalog, checks, efficiency, engines, interconnect, parallel, prefix_cache, units, unpack
from gpusizer.checks import scalar_or_array
from gpusizer.estimator import resolve_target, scale_out_bandwidth
from gpusizer.numeric import maximum, number

__all__ = ["LINKS", "KvLink", "exposed_transfer_seconds", "kv_link", "kv_transfer_bytes"]

_NIC = re.compile(r"^(?:rdma|ib|roce|nic)-(\d+(?:\.\d+)?)g$")
#: Named links of ``kv_link`` besides ``rdma-<N>g`` (an RDMA NIC of N Gb/s per GPU) and a bandwidth.
LINKS = ("auto", "nvlink", "intra-node", "rdma-400g", "rdma-800g")


@dataclass(frozen=True)
class KvLink:
    """The link one GPU sends its share of a request's KV cache over."""

    name: str
    """As asked (``rdma-400g``, ``nvlink``, ``50GB/s``)."""
    kind: str
    """Link class of ``interconnect.link_class`` (``scale-out``, ``nvlink-switch``...) or ``given``."""
    bandwidth: float
    """Achieved bandwidth per GPU and direction: line rate x the class's (else its fabric's) fraction. [B/s]"""
    bandwidth_ceiling: float
    """Line rate per GPU and direction. [B/s]"""
    latency: float
    """Latency of one send: the fabric's fitted latency plus the class's hop latency. [s]"""
    latency_ceiling: float
    """The class's hop latency alone. [s]"""


def kv_link(link: str, gpu: str | catalog.GPU | catalog.System, *, latency: float | None = None) -> KvLink:
    """The link named ``link`` for GPUs of type ``gpu``.

    ``nvlink`` (the GPU's scale-up fabric; refused without one), ``intra-node`` (whatever joins two GPUs of one
    server), ``auto`` (the scale-out NIC: a system's ``scale_out_bandwidth``, else ``data/interconnect.toml``'s
    400 Gb/s ConnectX-7 default), ``rdma-<N>g`` / ``ib-<N>g`` / ``roce-<N>g`` (an N Gb/s NIC per GPU on the
    scale-out class), or a bandwidth such as ``50GB/s`` or ``400Gb/s`` (achieved and line rate alike, with
    the scale-out latency unless ``latency`` [s] is given).

    Examples
    --------
    >>> link = kv_link("rdma-400g", "h100-sxm")
    >>> link.kind, link.bandwidth_ceiling / 1e9, round(link.bandwidth / 1e9)
    ('scale-out', 50.0, 45)
    >>> kv_link("50GB/s", "h100-sxm", latency=0.0).bandwidth
    50000000000.0
    """
    device, _ = resolve_target(gpu, None)
    text = checks.instance(link, "link", str).strip().lower()
    far = 10**6  # a span beyond any scale-up domain: the scale-out network
    nic = _NIC.match(text)
    if text in ("nvlink", "intra-node"):
        cls = interconnect.link_class(device, 2)
        if text == "nvlink" and not cls.scale_up:
            raise ValueError(f"link: {device.id} has no NVLink or other scale-up fabric ({cls.name}); use "
                             "intra-node or an RDMA NIC such as rdma-400g")
    elif text in ("auto", "scale-out"):
        cls = interconnect.link_class(device, far, scale_out_bandwidth=scale_out_bandwidth(gpu))
    elif nic:
        cls = interconnect.link_class(device, far, scale_out_bandwidth=float(nic[1]) * 1e9 / 8)
    else:
        try:
            rate = float(units.parse(link, "B/s"))
        except (ValueError, TypeError, KeyError) as error:
            raise ValueError(f"link: one of {', '.join(LINKS)}, rdma-<N>g or a bandwidth such as 50GB/s; "
                             f"got {link!r}") from error
        if not rate > 0:
            raise ValueError(f"link: the bandwidth must be > 0, got {link!r}")
        base = kv_link("auto", device)
        lat = base.latency if latency is None else float(checks.non_negative_array(latency, "latency"))
        return KvLink(link, "given", rate, rate, lat, base.latency_ceiling if latency is None else lat)
    fabric = efficiency.bundled().fabrics[cls.fabric]
    achieved = cls.bandwidth * (cls.bandwidth_fraction or fabric.bandwidth_fraction)
    given = None if latency is None else float(checks.non_negative_array(latency, "latency"))
    lat = fabric.latency_seconds + cls.hop_latency if given is None else given
    return KvLink(link, cls.name, achieved, cls.bandwidth, lat, cls.hop_latency if latency is None else lat)


def kv_transfer_bytes(model: str | catalog.Model, prompt_tokens: Any, *, layout: str | parallel.Layout = "tp1",
                      kv_cache: str | None = None, weights: str | None = None,
                      engine: str | engines.EngineProfile = "vllm") -> Any:
    r"""Bytes of one prompt's KV cache that the busiest GPU of ``layout`` holds, hence sends. [B]

    ``prefix_cache.per_sequence_bytes``: :math:`f_{kv} b_{kv} e\,\lceil S \rceil_b` summed over layer types, with
    :math:`f_{kv} = \lceil n_{kv}/t \rceil / n_{kv}` the tensor-parallel share (an MLA latent is held whole by
    every rank, as stored) and the stage's share of the layers under pipeline parallelism.

    Examples
    --------
    >>> kv_transfer_bytes("llama-3.1-8b", 4096) / 2**20  # 4096 x 32 layers x 2 x 8 heads x 128 x 2 B
    512.0
    >>> kv_transfer_bytes("llama-3.1-8b", 4096, layout="tp2") / 2**20
    256.0
    """
    record = catalog.model(model)
    w, experts, kv = unpack.checkpoint_precisions(record, weights, kv_cache)
    numbers = unpack.model_numbers(record, w, experts, kv)
    plan = layout if isinstance(layout, parallel.Layout) else parallel.layout(layout)
    return prefix_cache.per_sequence_bytes(numbers, engines.engine(engine), plan, number(prompt_tokens))


def exposed_transfer_seconds(kv_bytes: Any, bandwidth: Any, latency: Any, prefill_seconds: Any = 0.0,
                             layers: Any = 1) -> Any:
    r"""Time the KV transfer adds after the prefill ends. [s]

    Parameters
    ----------
    kv_bytes : array_like
        Bytes one GPU sends (``kv_transfer_bytes``). [B]
    bandwidth, latency : array_like
        The link's bandwidth per GPU and direction [B/s] and the latency of one send [s].
    prefill_seconds : array_like
        The prefill's compute time, which a layer-wise transfer overlaps. [s]
    layers : array_like
        1: the whole cache is sent after the prefill (vLLM's NIXL connector); :math:`L`: each layer's cache is
        sent as soon as the layer is computed (Mooncake's and LMCache's layer-wise mode). [-]

    Returns
    -------
    numeric
        A two-stage pipeline of :math:`L` layers, compute :math:`c = T_p/L` then send
        :math:`x = \alpha + m/(L\beta)` (``interconnect.p2p_seconds``) per layer: the last send ends
        :math:`x + (L - 1)\max(x - c, 0)` after the prefill; :math:`\alpha + m/\beta` for :math:`L = 1`. [s]

    Examples
    --------
    >>> round(exposed_transfer_seconds(2**29, 50e9, 0.0) * 1e3, 2)  # 512 MiB over 50 GB/s
    10.74
    >>> round(exposed_transfer_seconds(2**29, 50e9, 0.0, prefill_seconds=0.3, layers=32) * 1e3, 3)  # hidden
    0.336
    """
    steps = maximum(number(layers), 1.0)
    send = number(interconnect.p2p_seconds(number(kv_bytes) / steps, bandwidth, latency))
    compute = number(prefill_seconds) / steps
    return scalar_or_array(send + (steps - 1) * maximum(send - compute, 0.0))
