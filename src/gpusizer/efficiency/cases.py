"""Calibration cases: one public measurement mapped onto catalogue ids, the record the speed model's
``predict`` and ``keys`` read, and the reader of the bundled measurement and mapping files.

They live here, below the speed model, because ``performance.predict(case, table)`` and the
benchmark readers take a ``Case``; the fitting itself is ``gpusizer.calibration``.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from gpusizer import datafiles

Keys = tuple[str, str, str, str]
"""(engine, gpu_class, family, fabric) of a case."""

@dataclass(frozen=True)
class Case:
    """One public measurement, mapped onto catalogue ids, with what gpusizer predicts it from."""

    id: str
    metric: str
    """``decode`` (per-user tok/s), ``decode_aggregate`` (all users, tok/s), ``prefill`` (prompt
    tok/s), ``ttft`` (s), ``static_batch`` (output tok/s of a static batch, per GPU) or ``offline``
    (output tok/s per GPU of a saturated continuous-batching engine of ``batch`` sequences, ``prompt``
    and ``output`` their mean lengths; ``split`` the layout of one replica)."""
    value: float
    """Measured value in base units (tok/s or s)."""
    model: str
    gpu: str
    gpus: int
    split: str
    """``tensor`` or ``layer`` (llama.cpp's default multi-GPU split: sequential stages)."""
    engine: str
    weights: str
    kv_cache: str | None
    prompt: int
    output: int
    batch: int
    use: str
    """``fit`` (used by the fit), ``holdout`` (checked only) or ``exclude``."""
    reason: str = ""
    source: str = ""
    label: str = ""
    """The row's own wording (GPU, model, precision, engine) for the report."""
    host_pcie: int | None = None
    """PCIe generation of the measuring host's root ports where it is below the GPU's own (the link trains to
    the lower of the two: a PCIe 4.0 card in a PCIe 3.0 server runs at 3.0; mapping column ``host_pcie``)."""
    expert_weights: str = ""
    """Routed experts' precision where it differs from ``weights`` (mapping column ``expert_weights``; empty:
    ``weights``, or the checkpoint's when ``weights`` is empty too)."""
    host: str = ""
    """The measuring host's CPU and sockets where the source shows it (mapping column ``host``); reported by the
    validation, not an input of the model."""
    condition: str = ""
    """How the source timed it (measurement column ``condition``): ``cold`` (the first and only timed batch of a
    fresh process), ``warm`` (after a warm-up of the same shape) or empty (not stated). gpusizer predicts warm
    throughput; the validation report keeps cold rows as their own class."""

    @property
    def regime(self) -> str:
        """``metric, batch, parallelism``: the grouping of bands and error statistics."""
        names = {"decode": "decode", "decode_aggregate": "decode", "static_batch": "batched decode",
                 "prefill": "prefill", "ttft": "prefill", "offline": "offline"}
        parts = [names.get(self.metric, self.metric)]
        if self.metric in ("decode", "decode_aggregate"):
            parts.append("batch 1" if self.batch == 1 else "batch > 1")
        if self.gpus > 1:
            parts.append("layer split" if self.split == "layer" else "tensor parallel")
        return ", ".join(parts)


_METRICS = {
    "decode_tok_s_single_stream": "decode",
    "prefill_tok_s": "prefill",
    "ttft_ms_median": "ttft",
    "output_tok_s_aggregate": "static_batch",
    "decode_tok_s_aggregate": "decode_aggregate",
}


def _number(text: str, default: int = 0) -> int:
    text = (text or "").strip()
    return int(float(text)) if text else default


CONDITIONS = ("", "warm", "cold")
"""Values of the measurement column ``condition`` (``Case.condition``)."""


def _condition(row: dict[str, str]) -> str:
    value = (row.get("condition") or "").strip()
    if value not in CONDITIONS:
        raise ValueError(f"condition of measurement {row['id']!r} must be one of {CONDITIONS}; got {value!r}")
    return value


def _value(metric: str, value: str, unit: str, gpus: int) -> float:
    number = float(value)
    if metric.startswith("ttft_ms"):
        return number / 1000.0
    if "per GPU" in unit or metric != "output_tok_s_aggregate":
        return number
    return number / gpus


def load_cases(measurements: str | Path | None = None, mapping: str | Path | None = None) -> list[Case]:
    """Join the measurements with their mapping onto catalogue ids.

    Parameters
    ----------
    measurements : path, optional
        CSV in the calibration format (default: the bundled ``calibration/measurements.csv``); an optional
        ``condition`` column says how each row was timed (``Case.condition``).
    mapping : path, optional
        CSV with ``id, use, model, gpu, engine, weights, kv_cache, split, reason`` and optionally ``host_pcie``
        (``Case.host_pcie``), ``host`` (``Case.host``) and ``expert_weights`` (``Case.expert_weights``) (default: the
        bundled ``calibration/mapping.csv``). A row without a mapping is reported as excluded.

    Returns
    -------
    list of Case
        In file order; excluded rows carry their reason.

    Raises
    ------
    ValueError
        A ``condition`` other than ``warm``, ``cold`` or empty, naming the row.
    """
    rows = _csv(measurements, "calibration/measurements.csv")
    maps = {m["id"]: m for m in _csv(mapping, "calibration/mapping.csv")}
    cases = []
    for row in rows:
        m = maps.get(row["id"], {"use": "exclude", "reason": "no mapping row"})
        gpus = _number(row.get("gpu_count", ""), 1)
        metric = _METRICS.get(row["metric"], row["metric"])
        use = m.get("use", "exclude")
        reason = m.get("reason", "")
        if use != "exclude" and row["metric"] not in _METRICS:
            use, reason = "exclude", f"metric {row['metric']} not predicted"
        cases.append(
            Case(
                id=row["id"],
                metric=metric,
                value=_value(row["metric"], row["value"], row.get("unit", ""), gpus),
                model=m.get("model", ""),
                gpu=m.get("gpu", ""),
                gpus=gpus,
                split=m.get("split") or "tensor",
                engine=m.get("engine", ""),
                weights=m.get("weights", ""),
                kv_cache=m.get("kv_cache") or None,
                prompt=_number(row.get("input_len", "")),
                output=_number(row.get("output_len", "")),
                batch=_number(row.get("concurrency_or_batch", ""), 1),
                use=use,
                reason=reason,
                source=row.get("source", ""),
                label=f"{row['gpu']} x{row.get('gpu_count') or '?'}; {row['model']}; "
                f"{row['weight_precision'] or '?'}; {row['engine'] or '?'}",
                host_pcie=int(m["host_pcie"]) if m.get("host_pcie") else None,
                host=m.get("host") or "",
                expert_weights=m.get("expert_weights") or "",
                condition=_condition(row),
            )
        )
    return cases


def _csv(path: str | Path | None, name: str) -> list[dict[str, str]]:
    source = datafiles.bundled(name) if path is None else Path(path)
    text = datafiles.read_text(source, what="path")
    return [dict(r) for r in csv.DictReader(line for line in text.splitlines() if not line.startswith("#"))]
