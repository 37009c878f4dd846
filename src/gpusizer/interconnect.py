r"""Links between GPUs and the time of the collectives that cross them.

Two halves. The first is pure functions of numbers that broadcast like numpy ufuncs: the time of an
all-reduce by each algorithm engines use (ring, one-shot, two-shot), of a point-to-point send between
pipeline stages and of an expert-parallel all-to-all. The second reads ``data/interconnect.toml``
(lazily, once) and says which *link class* joins a group of GPUs of one catalogue type: NVLink
through a switch, a rack-scale NVLink domain, an NVLink bridge, another switchless scale-up mesh,
PCI Express with or without peer-to-peer, or the scale-out network between nodes.

Every collective has the form latency + bytes / bandwidth:

.. math::

   t_{ring} &= \alpha + 2(n-1)\,h + 2\frac{n-1}{n}\frac{m}{\beta} \\
   t_{1shot} &= \alpha + (n-1)\frac{m}{\beta} \\
   t_{2shot} &= 2\alpha + 2\frac{n-1}{n}\frac{m}{\beta}

with :math:`\alpha` the base latency of one collective on the fabric (fitted, ``data/efficiency.toml``),
:math:`h` NCCL's per-step hop latency, :math:`m` the message and :math:`\beta` the achieved bus
bandwidth (nccl-tests ``busbw`` convention: a ring moves :math:`2(n-1)/n\,m` bytes per GPU). The
one-shot kernel reads every peer's whole buffer in one synchronisation step (best for the KB-sized
messages of decode); the two-shot kernel reduce-scatters then all-gathers over direct peer links (two
steps, ring traffic); NCCL's ring pays a hop per step. An engine with a custom all-reduce uses the
faster of its two kernels below its size limit and NCCL above it; without one (or without peer
access) it uses the ring.

Deliberate omissions: NCCL's tree and NVLS (NVLink SHARP) algorithms, protocol switching (LL, LL128,
Simple), congestion between concurrent collectives, and topology inside a PCIe tree (switch vs root
complex, NUMA): each link class has one bandwidth and one latency.

References
----------
.. [1] M. Shoeybi et al., "Megatron-LM," arXiv:1909.08053, 2019 (two all-reduces per layer).
.. [2] NVIDIA, nccl-tests doc/PERFORMANCE.md (algorithm and bus bandwidth).
.. [3] NVIDIA/nccl, src/graph/tuning.cc (latency = base + steps x hop).
.. [4] vllm-project/vllm, csrc/custom_all_reduce.cuh (one-stage and two-stage kernels).
"""

from __future__ import annotations

import dataclasses
import datetime
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from gpusizer import datafiles, units
from gpusizer.catalog import GPU
from gpusizer.checks import scalar_or_array
from gpusizer.numeric import divide, minimum, number, where

__all__ = [
    "ALLREDUCE_METHODS",
    "EngineCollectives",
    "Link",
    "LinkClass",
    "Table",
    "allreduce_methods",
    "allreduce_seconds",
    "alltoall_seconds",
    "bundled",
    "custom_allreduce",
    "engine_allreduce_seconds",
    "link_class",
    "load",
    "one_shot_allreduce_seconds",
    "p2p_seconds",
    "ring_allreduce_seconds",
    "two_shot_allreduce_seconds",
]


# --- collectives: pure functions of numbers -------------------------------------------------------


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
) -> Any:
    r"""Time of the all-reduce an engine runs: its custom kernels when it can, else NCCL's ring.

    Parameters
    ----------
    message_bytes, gpus, bus_bandwidth, latency, hop_latency : array_like
        As in ``ring_allreduce_seconds``.
    custom : array_like of bool, optional
        The engine has a one-shot/two-shot custom all-reduce for this group and link.
    custom_max_bytes : array_like, optional
        Messages at or above this size go to NCCL (vLLM: 8 MiB). [B]

    Returns
    -------
    numeric
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
    """
    m, n, beta, alpha = number(message_bytes), number(gpus), number(bus_bandwidth), number(latency)
    small = number(custom) & (m < number(custom_max_bytes))
    fast = minimum(one_shot_allreduce_seconds(m, n, beta, alpha), two_shot_allreduce_seconds(m, n, beta, alpha))
    return scalar_or_array(where(small, fast, ring_allreduce_seconds(m, n, beta, alpha, hop_latency)))


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


# --- link classes: data -------------------------------------------------------------------------


@dataclass(frozen=True)
class LinkClass:
    """Constants of one kind of link (``[[link]]`` of ``data/interconnect.toml``)."""

    name: str
    description: str
    fabric: str
    """Fitted fabric of ``data/efficiency.toml`` whose latency and bandwidth fraction apply; ``*``:
    the fabric inside the node (scale-out)."""
    hop_latency_seconds: float
    """Latency of one ring step (NCCL ``hwLat``, LL protocol). [s]"""
    peer_access: bool
    """GPUs read and write each other's memory (needed by one-shot/two-shot kernels)."""
    bandwidth_fraction: float | None = None
    """Achieved bus bandwidth over the line rate where measured for this class; else the fabric's. [-]"""
    alltoall_fraction: float | None = None
    """Achieved all-to-all bandwidth over the line rate; else the bus-bandwidth fraction. [-]"""
    default_bandwidth: float | None = None
    """Line rate per GPU and direction when the target does not give one (scale-out NIC). [B/s]"""
    source: tuple[str, ...] = ()


@dataclass(frozen=True)
class EngineCollectives:
    """Which collective algorithms an engine class runs (``[[engine]]`` of ``data/interconnect.toml``)."""

    name: str
    custom_allreduce_max_gpus: int
    """Largest group on a scale-up fabric with the one-shot/two-shot kernels (0: NCCL only). [-]"""
    custom_allreduce_pcie_max_gpus: int
    """Largest group on PCIe with peer access with those kernels. [-]"""
    custom_allreduce_max_bytes: float
    """Messages at or above this size go to NCCL. [B]"""
    pipelined_prefill: bool
    """Chunks of one prompt flow through pipeline stages concurrently."""
    layouts: tuple[str, ...] = ("tp", "pp", "ep", "dp")
    """Kinds of parallelism the engine offers (``parallel.candidates``)."""
    source: tuple[str, ...] = ()


@dataclass(frozen=True)
class Table:
    """Everything in ``data/interconnect.toml``."""

    links: dict[str, LinkClass]
    engines: dict[str, EngineCollectives]
    lane_bandwidth: dict[int, float]
    """Usable PCI Express bandwidth per lane and direction, by generation. [B/s]"""
    default_pcie_generation: int
    default_pcie_lanes: int
    node_gpus: int
    """GPUs one PCIe server holds; a larger PCIe layout crosses the scale-out network. [-]"""
    checked: datetime.date | None = None

    def __hash__(self) -> int:
        return id(self)


def _tuple(value: Any) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def load(path: str | Path | None = None) -> Table:
    """Read an interconnect table (``data/interconnect.toml`` when ``path`` is None).

    Raises
    ------
    ValueError
        On unknown keys, naming them.
    """
    source = datafiles.bundled("interconnect.toml") if path is None else Path(path)
    data = tomllib.loads(source.read_text(encoding="utf-8"))
    links = {}
    for entry in data.get("link", []):
        entry = dict(entry)
        if "default_bandwidth" in entry:
            entry["default_bandwidth"] = units.parse(entry["default_bandwidth"], "b/s") / 8
        links[entry["name"]] = _record(LinkClass, entry)
    engines = {}
    for entry in data.get("engine", []):
        entry = dict(entry, custom_allreduce_max_bytes=units.parse(entry["custom_allreduce_max_bytes"], "B"))
        engines[entry["name"]] = _record(EngineCollectives, entry)
    pcie = data["pcie"]
    lanes = {int(k): units.parse(v, "B/s") for k, v in pcie["lane_bandwidth"].items()}
    return Table(links, engines, lanes, int(pcie["default_generation"]), int(pcie["default_lanes"]),
                 int(pcie["node_gpus"]), data.get("checked"))


def _record(kind: type, data: dict[str, Any]) -> Any:
    names = {f.name for f in dataclasses.fields(kind)}
    unknown = set(data) - names
    if unknown:
        raise ValueError(f"unknown interconnect keys {sorted(unknown)} in {kind.__name__}")
    return kind(**{k: _tuple(v) if k in ("source", "layouts") else v for k, v in data.items()})


@cache
def bundled() -> Table:
    """The bundled table (read and validated once per process)."""
    return load()


# --- which link joins a group of GPUs -------------------------------------------------------------


@dataclass(frozen=True)
class Link:
    """The link class that joins ``span`` GPUs of one type, with its line rate."""

    name: str
    """Link class (``nvlink-switch``, ``pcie-host``, ``scale-out``...)."""
    fabric: str
    """Fitted fabric of ``data/efficiency.toml`` (``nvlink``, ``pcie``, ``pcie-host``)."""
    bandwidth: float
    """Line rate per GPU and direction. [B/s]"""
    hop_latency: float
    """Latency of one ring step. [s]"""
    bandwidth_fraction: float | None
    """Class-specific achieved bus-bandwidth fraction, or None for the fabric's. [-]"""
    alltoall_fraction: float | None
    """Achieved all-to-all fraction, or None for the bus-bandwidth fraction. [-]"""
    peer_access: bool
    scale_up: bool
    """True on NVLink or another scale-up fabric."""


def _pcie_bandwidth(device: GPU, table: Table) -> float:
    ic = device.interconnect
    generation = ic.pcie_generation if ic.pcie_generation in table.lane_bandwidth else table.default_pcie_generation
    return table.lane_bandwidth[generation] * (ic.pcie_lanes or table.default_pcie_lanes)


def _scale_up_class(device: GPU, table: Table) -> str:
    ic = device.interconnect
    if not ic.nvlink_generation:
        return "mesh"
    if not ic.switched:
        return "nvlink-bridge"
    return "nvlink-rack" if device.scale_up_domain > table.node_gpus else "nvlink-switch"


def link_class(
    device: GPU, span: int, *, scale_out_bandwidth: float | None = None, table: Table | None = None
) -> Link:
    """The link that joins ``span`` consecutive GPUs of type ``device``.

    The rule, in order: a group within the GPU's scale-up domain uses the scale-up fabric (NVLink
    through a switch, across a rack, over bridges, or another mesh); otherwise a group within one
    server (``node_gpus``, or the scale-up domain if larger) uses PCI Express, with or without
    peer-to-peer; anything larger crosses the scale-out network.

    Parameters
    ----------
    device : GPU
        Catalogue record.
    span : int
        GPUs the collective spans (placed consecutively: tensor parallel innermost). [-]
    scale_out_bandwidth : float, optional
        NIC bandwidth per GPU and direction (a system's ``scale_out_bandwidth / 8``). [B/s]
    table : Table, optional
        Interconnect constants; default the bundled ones.

    Returns
    -------
    Link
        Class name, fitted fabric, line rate per direction and class constants.

    Examples
    --------
    >>> from gpusizer import catalog
    >>> link_class(catalog.gpu("h100-sxm"), 8).name, link_class(catalog.gpu("h100-sxm"), 16).name
    ('nvlink-switch', 'scale-out')
    >>> link_class(catalog.gpu("rtx-4090"), 2).name, link_class(catalog.gpu("gb200"), 72).name
    ('pcie-host', 'nvlink-rack')
    """
    table = table if table is not None else bundled()
    ic = device.interconnect
    node = max(device.scale_up_domain, table.node_gpus)
    inner = "pcie-host" if ic.peer_to_peer is False else "pcie-p2p"
    if span <= device.scale_up_domain and ic.bandwidth:
        name, bandwidth = _scale_up_class(device, table), ic.bandwidth / 2
    elif span <= node:
        name, bandwidth = inner, _pcie_bandwidth(device, table)
    else:
        name = "scale-out"
        bandwidth = scale_out_bandwidth or table.links[name].default_bandwidth or 50e9
    cls = table.links[name]
    fabric = cls.fabric
    if fabric == "*":  # the fabric inside the node sets the base latency
        fabric = "nvlink" if ic.bandwidth and device.scale_up_domain > 1 else table.links[inner].fabric
    return Link(
        name=name,
        fabric=fabric,
        bandwidth=float(bandwidth),
        hop_latency=cls.hop_latency_seconds,
        bandwidth_fraction=cls.bandwidth_fraction,
        alltoall_fraction=cls.alltoall_fraction,
        peer_access=cls.peer_access,
        scale_up=name not in ("pcie-p2p", "pcie-host", "scale-out"),
    )


def custom_allreduce(engine: str, link: Link, gpus: int, table: Table | None = None) -> tuple[bool, float]:
    """Whether ``engine`` runs its one-shot/two-shot all-reduce for ``gpus`` GPUs on ``link``, and its limit.

    Returns
    -------
    tuple of (bool, float)
        ``(usable, custom_max_bytes)``; an unknown engine class has no custom all-reduce. [-, B]

    Examples
    --------
    >>> from gpusizer import catalog
    >>> custom_allreduce("vllm", link_class(catalog.gpu("h100-sxm"), 8), 8)
    (True, 8388608.0)
    >>> custom_allreduce("vllm", link_class(catalog.gpu("l40s"), 4), 4)[0]  # > 2 PCIe-only GPUs: NCCL
    False
    """
    table = table if table is not None else bundled()
    entry = table.engines.get(engine)
    if entry is None or not link.peer_access or link.name == "scale-out":
        return False, 0.0
    limit = entry.custom_allreduce_max_gpus if link.scale_up else entry.custom_allreduce_pcie_max_gpus
    return bool(1 < gpus <= limit), entry.custom_allreduce_max_bytes
