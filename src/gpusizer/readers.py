r"""Your own speed measurements: the schema gpusizer calibrates on, and readers for it and for benchmark tools.

A ``Measurement`` is one measured number of one configuration: a model and a GPU from the catalogue,
an engine class, precisions, a workload (prompt and output lengths, concurrency) and one metric.
The schema is the one of ``data/calibration/measurements.csv``, with catalogue ids instead of free
text; ``docs/calibration.md`` documents every column.

Readers, all returning a list of ``Measurement``:

* ``read_csv`` and ``read_json``: the schema itself (CSV with a header row, or a JSON list of objects;
  ``measurements.csv``'s column names are accepted too, and a mapping file turns its free-text rows
  into catalogue ids, as ``efficiency.load_cases`` does);
* ``read_vllm``: the result JSON of vLLM's ``benchmark_serving.py`` / ``vllm bench serve --save-result``
  (median TPOT, and median TTFT when the run had one request in flight);
* ``read_llama_bench``: ``llama-bench -o json|jsonl|csv|md`` (``pp`` and ``tg`` tests);
* ``read_mlperf``: ``mlperf_log_summary.txt`` of an MLPerf Inference LLM run (Server, Interactive or
  Offline scenario);
* ``read``: any of the above, by ``format`` name or recognised from the file.

Tool outputs do not name catalogue ids (``llama-bench`` prints ``llama 8B Q4_K - Medium`` and a GPU
description; vLLM a Hugging Face repo). The readers take ``model`` and ``gpu`` as keyword arguments
and check them against the catalogue: an unknown id raises ``KeyError`` naming the closest ones.

Deliberate omissions: per-request traces (``--save-detailed`` lists), tests the step model cannot
represent (``llama-bench`` ``pp+tg`` tests and prompts after a cached depth: a warning names them),
and other benchmark tools (convert to the CSV schema with ``to_csv``).
"""

from __future__ import annotations

import csv
import io
import json
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gpusizer import catalog, efficiency
from gpusizer import precision as precisions

__all__ = [
    "COLUMNS",
    "FORMATS",
    "METRICS",
    "Measurement",
    "detect_format",
    "from_case",
    "gpu_class",
    "read",
    "read_csv",
    "read_json",
    "read_llama_bench",
    "read_mlperf",
    "read_vllm",
    "to_case",
    "to_csv",
]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


#: Canonical metrics: what is measured, and whether its unit is a rate or a time.
METRICS: dict[str, str] = {
    "decode": "rate",
    "decode_aggregate": "rate",
    "tpot": "time",
    "prefill": "rate",
    "ttft": "time",
    "static_batch": "rate",
}

#: Metric names of ``data/calibration/measurements.csv`` (and other spellings): canonical name, default unit.
METRIC_ALIASES: dict[str, tuple[str, str]] = {
    "decode_tok_s_single_stream": ("decode", "tok/s"),
    "decode_tok_s_per_user": ("decode", "tok/s"),
    "decode_tok_s_aggregate": ("decode_aggregate", "tok/s"),
    "prefill_tok_s": ("prefill", "tok/s"),
    "ttft_ms_median": ("ttft", "ms"),
    "ttft_ms": ("ttft", "ms"),
    "tpot_ms_median": ("tpot", "ms"),
    "tpot_ms": ("tpot", "ms"),
    "output_tok_s_aggregate": ("static_batch", "tok/s"),
}

#: Accepted units: kind and factor to the base unit (token/s, or s); ``tok/s/gpu`` is per GPU.
UNITS: dict[str, tuple[str, float]] = {
    "tok/s": ("rate", 1.0),
    "tok/s/gpu": ("rate", 1.0),
    "s": ("time", 1.0),
    "ms": ("time", 1e-3),
    "us": ("time", 1e-6),
}

_UNIT_SPELLINGS = {"token/s": "tok/s", "tokens/s": "tok/s", "tok/s per gpu": "tok/s/gpu", "tok/s/gpu": "tok/s/gpu",
                   "token/s/gpu": "tok/s/gpu", "µs": "us"}


class Measurement(_Record):
    """One measured number of one configuration, in the units it was measured in."""

    id: str = Field(min_length=1)
    """Unique name of the row; the calibration's provenance lists these."""
    model: str
    """Catalogue model id or alias (``gpusizer models``); stored as the id."""
    gpu: str
    """Catalogue GPU id or alias (``gpusizer gpus``); stored as the id."""
    metric: str
    """``decode`` (tokens/s per user), ``decode_aggregate`` (tokens/s, all users), ``tpot`` (time per
    output token), ``prefill`` (prompt tokens/s), ``ttft`` (time to first token, idle engine) or
    ``static_batch`` (output tokens/s of a static batch). ``measurements.csv`` names are accepted."""
    value: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    """The measured number, in ``unit``."""
    unit: str = ""
    """``tok/s``, ``tok/s/gpu`` (static batch per GPU), ``s``, ``ms`` or ``us``; empty: ``tok/s`` for rates, ``s``
    for times."""
    gpus: Annotated[int, Field(ge=1)] = 1
    """GPUs serving one replica. [-]"""
    engine: str = "vllm"
    """Engine class: ``vllm``, ``sglang``, ``trtllm``, ``llama.cpp``, ``mlc`` or ``eager``."""
    weights: str | None = None
    """Weight precision (``gpusizer fit --weights`` names); ``None``: the checkpoint's."""
    kv_cache: str | None = None
    """KV-cache dtype; ``None``: the model's activation dtype."""
    split: Literal["tensor", "layer"] = "tensor"
    """Multi-GPU split: ``tensor`` parallel, or llama.cpp's sequential ``layer`` stages."""
    prompt: Annotated[int, Field(ge=0)] = 0
    """Prompt tokens per request (for ``decode``: tokens already in the context). [token]"""
    output: Annotated[int, Field(ge=0)] = 0
    """Output tokens per request. [token]"""
    concurrency: Annotated[int, Field(ge=1)] = 1
    """Requests decoded together (batch size of a static batch). [-]"""
    source: str = ""
    """Where the number comes from (tool, file, date)."""
    notes: str = ""

    @model_validator(mode="before")
    @classmethod
    def _metric_alias_and_unit(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        if data.get("metric") in METRIC_ALIASES:
            metric, unit = METRIC_ALIASES[data["metric"]]
            data = {**data, "metric": metric, "unit": data.get("unit") or unit}
        if not data.get("unit") and data.get("metric") in METRICS:
            data = {**data, "unit": "tok/s" if METRICS[data["metric"]] == "rate" else "s"}
        return data

    @field_validator("metric")
    @classmethod
    def _known_metric(cls, value: str) -> str:
        if value not in METRICS:
            known = ", ".join([*METRICS, *METRIC_ALIASES])
            raise ValueError(f"metric must be one of {known}; got {value!r}")
        return value

    @field_validator("unit")
    @classmethod
    def _known_unit(cls, value: str) -> str:
        text = value.strip().lower()
        text = _UNIT_SPELLINGS.get(text, text)
        if text and text not in UNITS:
            raise ValueError(f"unit must be one of {', '.join(UNITS)}; got {value!r}")
        return text

    @field_validator("model")
    @classmethod
    def _catalogue_model(cls, value: str) -> str:
        return catalog.model(value).id

    @field_validator("gpu")
    @classmethod
    def _catalogue_gpu(cls, value: str) -> str:
        return catalog.gpu(value).id

    @field_validator("engine")
    @classmethod
    def _engine_class(cls, value: str) -> str:
        name = efficiency.engine_class(value)
        if name not in efficiency.bundled().engines:
            raise ValueError(f"engine must be one of {', '.join(efficiency.bundled().engines)}; got {value!r}")
        return name

    @field_validator("weights")
    @classmethod
    def _weight_precision(cls, value: str | None) -> str | None:
        return precisions.precision(value).name if value else None

    @field_validator("kv_cache")
    @classmethod
    def _kv_precision(cls, value: str | None) -> str | None:
        if value:
            precisions.kv_bytes_per_element(value)
        return value or None

    @model_validator(mode="after")
    def _consistent(self) -> Measurement:
        kind = METRICS[self.metric]
        if UNITS[self.unit][0] != kind:
            raise ValueError(f"unit {self.unit!r} is not a {kind}, as metric {self.metric!r} needs (row {self.id!r})")
        if self.unit == "tok/s/gpu" and self.metric != "static_batch":
            raise ValueError(f"unit 'tok/s/gpu' is for static_batch only (row {self.id!r})")
        if self.metric in ("prefill", "ttft") and self.prompt < 1:
            raise ValueError(f"prompt must be >= 1 for metric {self.metric!r}, got {self.prompt} (row {self.id!r})")
        if self.metric == "static_batch" and self.output < 1:
            raise ValueError(f"output must be >= 1 for metric 'static_batch', got {self.output} (row {self.id!r})")
        return self


# --- measurements and the model -------------------------------------------------------------------


def gpu_class(measurement: Measurement) -> str:
    """GPU class (``hbm``, ``gddr``, ``unified``) of a measurement's GPU."""
    return efficiency.gpu_class(catalog.gpu(measurement.gpu).memory_type)


def _base_value(m: Measurement) -> tuple[str, float]:
    """Metric and value in the units ``performance.predict`` answers in (token/s per GPU, or s)."""
    value = m.value * UNITS[m.unit][1]
    if m.metric == "tpot":
        return "decode", 1.0 / value
    if m.metric == "static_batch" and m.unit == "tok/s":
        return "static_batch", value / m.gpus
    return m.metric, value


def to_case(measurement: Measurement) -> efficiency.Case:
    """The measurement as a calibration case of ``efficiency`` (value in base units, ``use="fit"``).

    Examples
    --------
    >>> m = Measurement(id="a", model="llama-3.1-8b", gpu="h100", metric="tpot", value=8.0, unit="ms",
    ...                 prompt=1000, output=200, concurrency=16)
    >>> m.gpu, to_case(m).metric, to_case(m).value  # 8 ms per token is 125 tokens/s per user
    ('h100-sxm', 'decode', 125.0)
    """
    m = measurement
    metric, value = _base_value(m)
    return efficiency.Case(
        id=m.id, metric=metric, value=value, model=m.model, gpu=m.gpu, gpus=m.gpus, split=m.split,
        engine=m.engine, weights=m.weights or "", kv_cache=m.kv_cache, prompt=m.prompt, output=m.output,
        batch=m.concurrency, use="fit", source=m.source,
        label=f"{m.gpu} x{m.gpus}; {m.model}; {m.weights or 'checkpoint'}; {m.engine}",
    )


def from_case(case: efficiency.Case) -> Measurement:
    """A calibration case (``efficiency.load_cases``) as a measurement in base units."""
    unit = "s" if case.metric == "ttft" else "tok/s/gpu" if case.metric == "static_batch" else "tok/s"
    return Measurement(
        id=case.id, model=case.model, gpu=case.gpu, metric=case.metric, value=case.value, unit=unit,
        gpus=case.gpus, engine=case.engine, weights=case.weights or None, kv_cache=case.kv_cache,
        split="layer" if case.split == "layer" else "tensor", prompt=case.prompt, output=case.output,
        concurrency=case.batch, source=case.source, notes=case.label,
    )


# --- the schema: CSV and JSON ---------------------------------------------------------------------

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


def _lines(path: str | Path) -> list[str]:
    return [line for line in Path(path).read_text(encoding="utf-8").splitlines() if not line.startswith("#")]


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
    rows = csv.DictReader(_lines(path))
    return [_measurement(row, defaults, f"{Path(path).name}:{n}") for n, row in enumerate(rows, start=1)]


def read_json(path: str | Path, **defaults: Any) -> list[Measurement]:
    """Measurements from a JSON file in the schema: a list of objects, or ``{"measurements": [...]}``."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    rows = data["measurements"] if isinstance(data, dict) else data
    return [_measurement(row, defaults, f"{Path(path).name}:{n}") for n, row in enumerate(rows, start=1)]


def to_csv(measurements: Iterable[Measurement]) -> str:
    """The measurements as CSV text in the schema (``read_csv`` reads it back)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for m in measurements:
        writer.writerow({k: "" if v is None else v for k, v in m.model_dump().items()})
    return out.getvalue()


# --- vLLM benchmark_serving -----------------------------------------------------------------------


def _littles_law(requests_per_second: float | None, latency_seconds: float | None) -> int | None:
    """Mean requests in flight, :math:`L = \\lambda W`, rounded; ``None`` if unknown.

    References
    ----------
    .. [1] J. D. C. Little, "A proof for the queuing formula: L = lambda W," Operations Research,
       vol. 9, no. 3, pp. 383-387, 1961, doi:10.1287/opre.9.3.383.
    """
    if not requests_per_second or not latency_seconds:
        return None
    return max(1, round(requests_per_second * latency_seconds))


def read_vllm(
    path: str | Path,
    *,
    model: str,
    gpu: str,
    gpus: int = 1,
    engine: str = "vllm",
    weights: str | None = None,
    kv_cache: str | None = None,
    concurrency: int | None = None,
) -> list[Measurement]:
    """Measurements from a vLLM ``benchmark_serving.py`` (``vllm bench serve``) result JSON.

    Gives a ``tpot`` row (``median_tpot_ms``) at the run's concurrency and, when one request was in
    flight at a time, a ``ttft`` row (``median_ttft_ms``: an idle engine, as gpusizer's TTFT assumes).
    Lengths are the means, ``total_input_tokens / completed`` and ``total_output_tokens / completed``.

    Parameters
    ----------
    path : path
        The JSON written with ``--save-result``.
    model, gpu : str
        Catalogue ids (the file names a Hugging Face repo, not a catalogue id).
    gpus, engine, weights, kv_cache
        As in ``Measurement``; ``engine`` also covers SGLang or TensorRT-LLM servers measured with
        the same client.
    concurrency : int, optional
        Requests in flight; default ``max_concurrency`` of the run, else Little's law [1]_
        (``request_throughput`` x mean end-to-end latency).

    Raises
    ------
    KeyError
        Unknown model or GPU id, or a result without ``median_tpot_ms``.
    ValueError
        No completed request, or no way to know the concurrency.

    References
    ----------
    .. [1] J. D. C. Little, "A proof for the queuing formula: L = lambda W," Operations Research,
       vol. 9, no. 3, pp. 383-387, 1961, doi:10.1287/opre.9.3.383.
    """
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    completed = int(data.get("completed") or 0)
    if completed < 1:
        raise ValueError(f"{Path(path).name}: no completed request")
    users = concurrency or data.get("max_concurrency") or _littles_law(
        data.get("request_throughput"), (data.get("mean_e2el_ms") or 0) / 1e3
    )
    if not users:
        raise ValueError(f"{Path(path).name}: concurrency unknown (no max_concurrency, no mean_e2el_ms); "
                         "pass concurrency=")
    common = dict(
        model=model, gpu=gpu, gpus=gpus, engine=engine, weights=weights, kv_cache=kv_cache,
        prompt=round(data["total_input_tokens"] / completed), output=round(data["total_output_tokens"] / completed),
        concurrency=int(users),
        source=f"vLLM benchmark_serving {Path(path).name} ({data.get('date', 'undated')}, "
        f"backend {data.get('backend', '?')}, {data.get('model_id', '?')})",
    )
    stem = Path(path).stem
    rows = [Measurement(id=f"{stem}:tpot", metric="tpot", value=data["median_tpot_ms"], unit="ms", **common)]
    if users == 1 and data.get("median_ttft_ms"):
        rows.append(Measurement(id=f"{stem}:ttft", metric="ttft", value=data["median_ttft_ms"], unit="ms", **common))
    return rows


# --- llama-bench ----------------------------------------------------------------------------------

#: ``llama_model_ftype_name`` as llama-bench prints it in ``model_type``, and gpusizer's precision.
GGML_FILE_TYPES = {
    "all F32": "fp32",
    "F16": "fp16",
    "BF16": "bf16",
    "Q8_0": "q8_0",
    "Q6_K": "q6_k",
    "Q5_K - Medium": "q5_k_m",
    "Q4_K - Medium": "q4_k_m",
    "Q4_0": "q4_0",
    "Q3_K - Medium": "q3_k_m",
    "Q2_K - Medium": "q2_k",
}

#: KV-cache types of llama-bench (``type_k``) that gpusizer models.
GGML_KV_TYPES = {"f32": "fp32", "f16": "fp16", "bf16": "bf16"}

#: llama-bench ``split_mode`` and gpusizer's split (``row`` splits each matrix, as tensor parallelism does).
GGML_SPLITS = {"layer": "layer", "row": "tensor"}


def _llama_bench_rows(text: str) -> list[dict[str, Any]]:
    """Rows of llama-bench output in any of its formats, as dicts with the JSON field names."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        return list(json.loads(stripped))
    if stripped.startswith("{"):
        return [json.loads(line) for line in stripped.splitlines() if line.strip()]
    if stripped.startswith("|"):
        return _markdown_rows(stripped)
    return list(csv.DictReader(io.StringIO(stripped)))


_TEST = re.compile(r"^(?:pp(?P<p>\d+))?\+?(?:tg(?P<g>\d+))?(?: @ d(?P<d>\d+))?$")


def _markdown_rows(text: str) -> list[dict[str, Any]]:
    """Rows of ``llama-bench -o md``: a cell left blank repeats the row above."""
    lines = [line for line in text.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    names = {"model": "model_type", "ngl": "n_gpu_layers", "sm": "split_mode", "t/s": "avg_ts"}
    rows: list[dict[str, Any]] = []
    previous = [""] * len(header)
    for line in lines[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        cells = [c or p for c, p in zip(cells, previous, strict=True)]
        previous = cells
        row: dict[str, Any] = {names.get(h, h): c for h, c in zip(header, cells, strict=True)}
        test = _TEST.match(row.pop("test", ""))
        if test is None:
            raise ValueError(f"llama-bench test {cells!r} not understood")
        row.update(n_prompt=int(test["p"] or 0), n_gen=int(test["g"] or 0), n_depth=int(test["d"] or 0),
                   avg_ts=float(row["avg_ts"].split("±")[0]))
        rows.append(row)
    return rows


def _ggml_weights(model_type: str) -> str:
    for name, ours in sorted(GGML_FILE_TYPES.items(), key=lambda kv: -len(kv[0])):
        if model_type.endswith(" " + name):
            return ours
    raise ValueError(f"weights of {model_type!r} not recognised ({', '.join(GGML_FILE_TYPES)}); pass weights=")


def _llama_bench_measurement(row: Mapping[str, Any], n: int, stem: str, context: dict[str, Any]) -> Measurement | None:
    prompt, gen, depth = (int(row.get(k) or 0) for k in ("n_prompt", "n_gen", "n_depth"))
    test = f"pp{prompt}" if prompt else f"tg{gen}"
    if (prompt and gen) or (prompt and depth):
        warnings.warn(f"{stem} row {n}: llama-bench test pp{prompt}+tg{gen} @ d{depth} is not modelled; skipped",
                      stacklevel=3)
        return None
    layers = int(row.get("n_gpu_layers") or 99)
    backend = str(row.get("backends") or row.get("backend") or "")
    if backend in ("CPU", "BLAS") or 0 <= layers < catalog.model(context["model"]).num_layers:
        warnings.warn(f"{stem} row {n}: {layers} layers on the GPU, backend {backend or '?'} (CPU runs and "
                      "offload are not modelled); skipped", stacklevel=3)
        return None
    weights = context.get("weights") or _ggml_weights(str(row.get("model_type", "")))
    kv = context.get("kv_cache") or GGML_KV_TYPES.get(str(row.get("type_k") or "f16"))
    mode = str(row.get("split_mode") or "layer")
    gpus = context.get("gpus") or (1 if mode == "none" else len(str(row.get("gpu_info") or "x").split(", ")))
    split = context.get("split") or (GGML_SPLITS.get(mode, "layer") if gpus > 1 else "tensor")
    return Measurement(
        id=f"{stem}:{n}:{test}" + (f"@d{depth}" if depth else ""),
        model=context["model"], gpu=context["gpu"], engine=context.get("engine") or "llama.cpp",
        metric="prefill" if prompt else "decode", value=float(row["avg_ts"]), unit="tok/s",
        weights=weights, kv_cache=kv, gpus=gpus, split=split,
        prompt=prompt or depth, output=gen, concurrency=1,
        source=f"llama-bench {stem} (build {row.get('build_commit', '?')}, {row.get('model_type', '?')})",
    )


def read_llama_bench(
    path: str | Path,
    *,
    model: str,
    gpu: str,
    gpus: int | None = None,
    engine: str = "llama.cpp",
    weights: str | None = None,
    kv_cache: str | None = None,
    split: str | None = None,
) -> list[Measurement]:
    """Measurements from llama-bench output (``-o json``, ``jsonl``, ``csv`` or the default ``md``).

    A ``ppN`` test is a ``prefill`` row of ``N`` prompt tokens; ``tgN`` (``@ dD``) a batch-1 ``decode``
    row of ``N`` tokens after ``D`` cached ones; ``avg_ts`` is the value. Tests that mix the two, and
    runs with layers left on the CPU, are skipped with a warning.

    Parameters
    ----------
    path : path
        The output file.
    model, gpu : str
        Catalogue ids (llama-bench names neither).
    gpus : int, optional
        Default: the devices listed in ``gpu_info`` (1 for ``split_mode`` ``none``).
    engine : str
        ``llama.cpp``.
    weights : str, optional
        Default from ``model_type`` (``Q4_K - Medium`` is ``q4_k_m``).
    kv_cache : str, optional
        Default from ``type_k`` (``f16``).
    split : str, optional
        Default from ``split_mode``: ``layer`` (llama.cpp's default), ``row`` as tensor parallel.
    """
    context = dict(model=model, gpu=gpu, gpus=gpus, engine=engine, weights=weights, kv_cache=kv_cache, split=split)
    catalog.model(model), catalog.gpu(gpu)  # unknown ids fail before any row does
    rows = _llama_bench_rows(Path(path).read_text(encoding="utf-8"))
    found = [_llama_bench_measurement(row, n, Path(path).stem, context) for n, row in enumerate(rows, start=1)]
    return [m for m in found if m is not None]


# --- MLPerf Inference -----------------------------------------------------------------------------


def _mlperf_fields(text: str) -> dict[str, str]:
    """``key : value`` lines of a LoadGen summary, keys with single spaces."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and value.strip():
            fields.setdefault(" ".join(key.split()), value.strip())
    return fields


def _first(fields: Mapping[str, str], *keys: str) -> float | None:
    return next((float(fields[k]) for k in keys if k in fields), None)


def read_mlperf(
    path: str | Path,
    *,
    model: str,
    gpu: str,
    prompt: int,
    output: int,
    gpus: int = 1,
    engine: str = "trtllm",
    weights: str | None = None,
    kv_cache: str | None = None,
    concurrency: int | None = None,
) -> list[Measurement]:
    """Measurements from an MLPerf Inference ``mlperf_log_summary.txt`` (LLM benchmarks).

    * Server and Interactive: a ``tpot`` row from the median time to output token, at ``concurrency``
      (default by Little's law: completed samples/s x mean latency).
    * Offline: a ``static_batch`` row from the tokens per second of the whole system, for a batch of
      ``concurrency`` requests (required: LoadGen does not report it).

    ``prompt`` and ``output`` are the mean lengths of the data set (LoadGen does not report them).
    A run whose result is not ``VALID`` is read with a warning.
    """
    text = Path(path).read_text(encoding="utf-8")
    fields = _mlperf_fields(text)
    scenario = fields.get("Scenario", "")
    if not fields.get("Result is", "").startswith("VALID"):
        warnings.warn(f"{Path(path).name}: MLPerf result is {fields.get('Result is', 'missing')}", stacklevel=2)
    common = dict(model=model, gpu=gpu, gpus=gpus, engine=engine, weights=weights, kv_cache=kv_cache,
                  prompt=prompt, output=output,
                  source=f"MLPerf {scenario} {Path(path).name} (SUT {fields.get('SUT name', '?')})")
    stem = Path(path).stem
    if scenario in ("Server", "Interactive"):
        tpot = _first(fields, "50.00 percentile time to output token (ns)", "Mean Time to Output Token (ns)")
        users = concurrency or _littles_law(_first(fields, "Completed samples per second"),
                                            (_first(fields, "Mean latency (ns)") or 0) / 1e9)
        if tpot is None or users is None:
            raise ValueError(f"{Path(path).name}: no time to output token or no concurrency; pass concurrency=")
        return [Measurement(id=f"{stem}:tpot", metric="tpot", value=tpot / 1e6, unit="ms", concurrency=users,
                            **common)]
    if scenario == "Offline":
        rate = _first(fields, "Tokens per second", "Tokens per second (inferred)")
        if rate is None or concurrency is None:
            raise ValueError(f"{Path(path).name}: Offline needs 'Tokens per second' and concurrency= (the batch)")
        return [Measurement(id=f"{stem}:offline", metric="static_batch", value=rate, unit="tok/s",
                            concurrency=concurrency, **common)]
    raise ValueError(f"{Path(path).name}: scenario {scenario!r} not supported (Server, Interactive, Offline)")


# --- any file -------------------------------------------------------------------------------------

#: Readers by format name.
FORMATS: dict[str, Callable[..., list[Measurement]]] = {
    "csv": read_csv,
    "json": read_json,
    "vllm": read_vllm,
    "llama-bench": read_llama_bench,
    "mlperf": read_mlperf,
}


def detect_format(path: str | Path) -> str:
    """The ``FORMATS`` name of a file, from its content.

    Raises
    ------
    ValueError
        When the file is none of them.
    """
    text = "\n".join(_lines(path)).lstrip()
    head = text[:4000]
    if "MLPerf Results Summary" in head:
        return "mlperf"
    if text.startswith("|") or "avg_ts" in head:
        return "llama-bench"
    if text.startswith(("{", "[")):
        return "vllm" if "tpot_ms" in head or "total_input_tokens" in head else "json"
    if head and "," in head.splitlines()[0]:
        return "csv"
    raise ValueError(f"format of {Path(path).name} not recognised; formats: {', '.join(FORMATS)}")


def read(path: str | Path, *, format: str | None = None, **context: Any) -> list[Measurement]:
    """Measurements from any supported file; ``context`` (``model=``, ``gpu=``...) goes to the reader.

    Raises
    ------
    ValueError
        Unknown ``format``, or a file of no known format.
    """
    name = format or detect_format(path)
    if name not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}; got {name!r}")
    return FORMATS[name](path, **context)
