"""Links between GPUs and the time of the collectives that cross them.

Two modules:

- ``gpusizer.interconnect.collectives``: pure functions of numbers that broadcast, the time of an
  all-reduce (ring, one-shot, two-shot, and the one an engine runs), of llama.cpp's row-split
  exchange, of a point-to-point send and of an expert-parallel all-to-all;
- ``gpusizer.interconnect.links``: the link classes of ``data/interconnect.toml`` and the rule that
  says which link joins a group of GPUs of one catalogue type.

Every public name of both is re-exported here, so ``gpusizer.interconnect.X`` keeps working.
"""

from gpusizer.interconnect.collectives import (
    ALLREDUCE_METHODS,
    allreduce_methods,
    allreduce_seconds,
    alltoall_seconds,
    engine_allreduce_seconds,
    one_shot_allreduce_seconds,
    p2p_seconds,
    ring_allreduce_seconds,
    row_split_seconds,
    two_shot_allreduce_seconds,
)
from gpusizer.interconnect.links import (
    EngineCollectives,
    Link,
    LinkClass,
    Table,
    bundled,
    custom_allreduce,
    link_class,
    load,
    pcie_bandwidth,
)

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
    "pcie_bandwidth",
    "ring_allreduce_seconds",
    "row_split_seconds",
    "two_shot_allreduce_seconds",
]
