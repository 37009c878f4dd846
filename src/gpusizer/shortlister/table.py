"""The shortlist's records: a priced configuration (``Row``), one left out (``Dropped``), the table.

Records hold data; ``Shortlist`` adds only views of it (dicts, CSV). The numbers come from
``shortlister.search``.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

from gpusizer.checks import plain
from gpusizer.serving import SLO, Workload

__all__ = ["Dropped", "Row", "Shortlist"]


@dataclass(frozen=True)
class Row:
    """One configuration that meets the SLO, priced for the workload. Units in brackets."""

    gpu: str
    """Catalogue id of the GPU."""
    gpu_name: str
    gpus: int
    """GPUs per replica. [-]"""
    layout: str
    """How a replica splits the model over its GPUs (``tp``: tensor parallel)."""
    weights: str
    """Precision of the weights."""
    kv_cache: str
    engine: str
    fits: bool
    """Whether the model and one request of the workload fit (always True in ``rows``)."""
    max_rate: float
    """Largest request rate one replica sustains within the SLO. [1/s]"""
    max_rate_band: tuple[float, float]
    """``max_rate`` at the slow and at the fast end of the speed band. [1/s]"""
    rate_method: str
    """How ``max_rate`` was found: ``closed-form`` (a simulation's check is ``simulated_max_rate``)."""
    binding: str
    """What stops a higher rate: ``ttft``, ``tpot``, ``e2e``, ``kv-cache``, ``max-sequences``, ``prefill``."""
    bottleneck: str
    """``binding`` in words, with the side of the roofline that limits decode."""
    replicas: int
    """Replicas needed for the workload's rate. [-]"""
    usd_per_gpu_hour: float
    """Price of one GPU-hour used. [USD/h]"""
    price_band: tuple[float, float]
    """Lowest and highest price of the quotes. [USD/h]"""
    usd_per_hour: float
    """All replicas together. [USD/h]"""
    usd_per_month: float
    """All replicas for 730 hours. [USD]"""
    usd_per_million_tokens: float
    """Bill over prompt + output tokens served at the workload's rate. [USD/Mtoken]"""
    usd_per_million_tokens_band: tuple[float, float]
    """At the low price and fast end, and at the high price and slow end. [USD/Mtoken]"""
    usd_per_million_input_tokens: float
    """Share of the bill spent on prefill, per prompt token. [USD/Mtoken]"""
    usd_per_million_output_tokens: float
    """Share of the bill spent on decode, per output token. [USD/Mtoken]"""
    tokens_per_dollar: float
    """Prompt + output tokens per dollar at the workload. [token/USD]"""
    joules_per_token: float
    """GPU energy per prompt + output token at the workload. [J/token]"""
    joules_per_token_band: tuple[float, float]
    """With the low and the high power fractions of ``data/power.toml``. [J/token]"""
    joules_per_output_token: float
    """GPU energy per output token. [J/token]"""
    ttft: float
    """Time to first token at the SLO quantile, at the rate each replica receives. [s]"""
    tpot: float
    """Time per output token at the SLO quantile. [s]"""
    e2e: float
    """End-to-end latency at the SLO quantile. [s]"""
    latency_method: str
    """How ``ttft``, ``tpot`` and ``e2e`` were found: ``closed-form`` (a simulation's: ``simulated_*``)."""
    busy: float
    """Share of time each replica runs engine steps at the workload. [-]"""
    batch: float
    """Mean sequences decoding per replica at the workload. [-]"""
    simulated_max_rate: float = math.nan
    """The discrete-event simulation's ``max_rate`` (NaN unless the row was simulated). [1/s]"""
    simulated_ttft: float = math.nan
    """The simulation's TTFT at the SLO quantile at the rate each of ``replicas`` receives (NaN unless simulated).
    [s]"""
    simulated_tpot: float = math.nan
    """The simulation's TPOT at the SLO quantile (NaN unless simulated). [s]"""
    simulated_e2e: float = math.nan
    """The simulation's end-to-end latency at the SLO quantile (NaN unless simulated). [s]"""

    @property
    def configuration(self) -> str:
        """``"2 x h100-sxm tp, fp8"``."""
        split = f" {self.layout}" if self.gpus > 1 else ""
        return f"{self.gpus} x {self.gpu}{split}, {self.weights}"

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (bands as two-element lists), with ``configuration``."""
        return {"configuration": self.configuration, **plain(asdict(self))}


@dataclass(frozen=True)
class Dropped:
    """A configuration left out, and why."""

    gpu: str
    gpus: int
    layout: str
    weights: str
    reason: str
    """``does not fit: ...``, ``misses the SLO: ...`` or ``no speed model: ...``."""


@dataclass(frozen=True)
class Shortlist:
    """Ranked configurations (cheapest first) and the ones dropped. Iterating yields rows."""

    model: str
    workload: Workload
    slo: SLO
    rows: tuple[Row, ...]
    dropped: tuple[Dropped, ...]
    price_source: str
    """Where the GPU-hour prices came from."""
    context_exceeds_model_max: bool = False
    """Whether a request (prompt plus output tokens) is longer than the model's maximum context: the
    rows are then extrapolated past what the model was trained for. [bool]"""

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[Row]:
        return iter(self.rows)

    def __getitem__(self, index: int) -> Row:
        return self.rows[index]

    def configurations(self) -> set[tuple[str, int, str, str]]:
        """``(gpu, gpus, layout, weights)`` of every row."""
        return {(r.gpu, r.gpus, r.layout, r.weights) for r in self.rows}

    def to_dicts(self) -> list[dict[str, Any]]:
        """One plain dict per row, in rank order."""
        return [{"rank": i + 1, **row.to_dict()} for i, row in enumerate(self.rows)]

    def to_csv(self) -> str:
        """The rows as CSV text (bands split into ``_low`` / ``_high`` columns)."""
        records = []
        for row in self.to_dicts():
            flat: dict[str, Any] = {}
            for key, value in row.items():
                if isinstance(value, list):
                    flat[f"{key}_low"], flat[f"{key}_high"] = value
                else:
                    flat[key] = value
            records.append(flat)
        out = io.StringIO()
        names = list(records[0]) if records else ["rank", "configuration"]
        writer = csv.DictWriter(out, fieldnames=names, lineterminator="\n")
        writer.writeheader()
        writer.writerows(records)
        return out.getvalue()
