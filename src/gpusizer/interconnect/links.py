"""Which link joins a group of GPUs, and the constants of each kind of link.

Reads ``data/interconnect.toml`` (lazily, once) and says which *link class* joins a group of GPUs of
one catalogue type: NVLink through a switch, a rack-scale NVLink domain, an NVLink bridge, another
switchless scale-up mesh, PCI Express with or without peer-to-peer, or the scale-out network between
nodes; and whether an engine runs its custom (one-shot/two-shot) all-reduce on that link. The time
of the collectives themselves is ``gpusizer.interconnect.collectives``.

Deliberate omissions: topology inside a PCIe tree (switch vs root complex, NUMA): each link class
has one bandwidth and one latency. NCCL itself decides from that tree whether PCIe peers use P2P: by
default only behind a common PCIe switch (``PATH_PXB``), through the CPU only for two GPUs on AMD hosts
(NVIDIA/nccl@5067397 src/graph/paths.cc ``ncclTopoCheckP2p``; NCCL 2.18 of 2023 allowed it up to
``PATH_SYS``); where it refuses, its SHM transport stages through host memory like ``pcie-host``. A
P2P-capable card keeps ``pcie-p2p`` here: the calibration's 4- and 8-way A10G rows (2023) show about
1 us per extra ring step, not the host-staged 2.5 us.
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

__all__ = [
    "EngineCollectives",
    "Link",
    "LinkClass",
    "Table",
    "bundled",
    "custom_allreduce",
    "link_class",
    "load",
    "pcie_bandwidth",
]


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
    copy_latency_seconds: float | None = None
    """Latency of one ``cudaMemcpyPeer`` between two GPUs (llama.cpp's row split); else the ring-step
    latency. [s]"""
    copy_issue_seconds: float | None = None
    """Host time to issue the next asynchronous peer copy; else the copy latency (copies in series). [s]"""
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
    row_split_products: float = 0.0
    """Tensor parallelism as a row split: split matrix products per all-reduce site whose outputs the
    main GPU gathers (``collectives.row_split_seconds``); 0: Megatron all-reduces. [-]"""
    row_split_fabric: str | None = None
    """Fitted fabric whose latency is the row split's base latency on every link (its event handshake and
    launches are host work, not a collective library's); None: the tensor-parallel link's fabric."""
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
    data = tomllib.loads(datafiles.read_text(source, what="path"))
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
    copy_latency: float
    """Latency of one peer copy (``LinkClass.copy_latency_seconds``, else ``hop_latency``). [s]"""
    copy_issue: float
    """Host time to issue the next peer copy (``LinkClass.copy_issue_seconds``, else ``copy_latency``). [s]"""
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


def pcie_bandwidth(device: GPU, table: Table | None = None) -> float:
    """PCIe line rate of one such GPU per direction: ``lane_bandwidth[generation] x lanes`` (the
    catalogue's generation and lanes, else ``[pcie]``'s defaults, ``data/interconnect.toml``). [B/s]

    Examples
    --------
    >>> from gpusizer import catalog
    >>> round(pcie_bandwidth(catalog.gpu("rtx-4090")) / 1e9, 1)
    31.5
    """
    return _pcie_bandwidth(device, bundled() if table is None else table)


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
    copy = cls.copy_latency_seconds if cls.copy_latency_seconds is not None else cls.hop_latency_seconds
    fabric = cls.fabric
    if fabric == "*":  # the fabric inside the node sets the base latency
        fabric = "nvlink" if ic.bandwidth and device.scale_up_domain > 1 else table.links[inner].fabric
    return Link(
        name=name,
        fabric=fabric,
        bandwidth=float(bandwidth),
        hop_latency=cls.hop_latency_seconds,
        copy_latency=copy,
        copy_issue=cls.copy_issue_seconds if cls.copy_issue_seconds is not None else copy,
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
