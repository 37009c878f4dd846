"""The measurement schema as files: CSV with a header row, or a JSON list of objects."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from gpusizer import efficiency
from gpusizer.readers.records import Measurement, from_case, parse_json, source_text

__all__ = ["COLUMNS", "COLUMN_ALIASES", "IGNORED_COLUMNS", "read_csv", "read_json", "text_lines", "to_csv"]


#: Columns of the schema, in the order ``to_csv`` writes them.
COLUMNS = tuple(Measurement.model_fields)

#: Column names of ``data/calibration/measurements.csv`` that mean a schema column.
COLUMN_ALIASES = {
    "gpu_count": "gpus",
    "weight_precision": "weights",
    "kv_precision": "kv_cache",
    "input_len": "prompt",
    "output_len": "output",
    "concurrency_or_batch": "concurrency",
}

#: Informational columns of ``measurements.csv`` that the schema ignores.
IGNORED_COLUMNS = ("params_b", "active_params_b", "interconnect", "engine_version")


def _measurement(row: Mapping[str, Any], defaults: Mapping[str, Any], where: str) -> Measurement:
    data = {**defaults}
    for key, value in row.items():
        name = COLUMN_ALIASES.get(key, key)
        if name in IGNORED_COLUMNS or value is None or value == "":
            continue
        if name not in COLUMNS:
            raise ValueError(f"unknown column {key!r} in {where}; columns: {', '.join(COLUMNS)}")
        data[name] = value
    data.setdefault("id", where)
    return Measurement(**data)


def text_lines(path: str | Path) -> list[str]:
    """The lines of a measurement file (capped, as ``source_text``) without its ``#`` comment lines."""
    return [line for line in source_text(path).splitlines() if not line.startswith("#")]


def read_csv(path: str | Path, *, mapping: str | Path | None = None, **defaults: Any) -> list[Measurement]:
    """Measurements from a CSV file in the schema (header row; ``#`` lines are comments).

    Parameters
    ----------
    path : path
        The CSV file.
    mapping : path, optional
        A mapping CSV (``id, use, model, gpu, engine, weights, kv_cache, split, reason``) that turns
        free-text rows, as in ``data/calibration/measurements.csv``, into catalogue ids; rows it marks
        ``exclude`` (or does not list) are left out.
    **defaults
        Values of columns the file lacks (``gpu="h100-sxm"``, ``engine="sglang"``).

    Raises
    ------
    KeyError
        Unknown model or GPU id (naming the closest ids).
    ValueError
        Unknown column, metric, unit, engine or precision.
    """
    if mapping is not None:
        return [from_case(c) for c in efficiency.load_cases(path, mapping) if c.use != "exclude"]
    rows = csv.DictReader(text_lines(path))
    return [_measurement(row, defaults, f"{Path(path).name}:{n}") for n, row in enumerate(rows, start=1)]


def read_json(path: str | Path, **defaults: Any) -> list[Measurement]:
    """Measurements from a JSON file in the schema: a list of objects, or ``{"measurements": [...]}``."""
    data = parse_json(source_text(path), Path(path).name)
    rows = data.get("measurements") if isinstance(data, dict) else data
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        raise ValueError(f"{Path(path).name}: expected a list of objects or {{\"measurements\": [...]}}")
    return [_measurement(row, defaults, f"{Path(path).name}:{n}") for n, row in enumerate(rows, start=1)]


def to_csv(measurements: Iterable[Measurement]) -> str:
    """The measurements as CSV text in the schema (``read_csv`` reads it back)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for m in measurements:
        writer.writerow({k: "" if v is None else v for k, v in m.model_dump().items()})
    return out.getvalue()
