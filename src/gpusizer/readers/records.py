"""The measurement record: one measured number of one configuration, and its calibration case.

Also the file seams every reader shares: ``source_text`` (the capped UTF-8 read of an input file)
and ``parse_json`` (JSON that cannot exhaust the stack).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gpusizer import catalog, datafiles, efficiency
from gpusizer import precision as precisions

__all__ = ["METRICS", "METRIC_ALIASES", "UNITS", "Measurement", "from_case", "gpu_class", "parse_json",
           "source_text", "to_case"]


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
    """Engine class: ``vllm``, ``sglang``, ``trtllm``, ``llama.cpp`` (2026 builds), ``llama.cpp@2025``,
    ``llama.cpp@2024``, ``mlc`` or ``eager``."""
    weights: str | None = None
    """Weight precision (``gpusizer fit --weights`` names); ``None``: the checkpoint's."""
    expert_weights: str | None = None
    """Routed experts' precision where it differs from ``weights`` (``gpusizer.speed(expert_weights=)`` names);
    ``None``: ``weights``, or the checkpoint's when ``weights`` is ``None`` too."""
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
        batch=m.concurrency, use="fit", source=m.source, expert_weights=m.expert_weights or "",
        label=f"{m.gpu} x{m.gpus}; {m.model}; {m.weights or 'checkpoint'}; {m.engine}",
    )


def from_case(case: efficiency.Case) -> Measurement:
    """A calibration case (``efficiency.load_cases``) as a measurement in base units."""
    unit = "s" if case.metric == "ttft" else "tok/s/gpu" if case.metric == "static_batch" else "tok/s"
    return Measurement(
        id=case.id, model=case.model, gpu=case.gpu, metric=case.metric, value=case.value, unit=unit,
        gpus=case.gpus, engine=case.engine, weights=case.weights or None, kv_cache=case.kv_cache,
        expert_weights=case.expert_weights or None,
        split="layer" if case.split == "layer" else "tensor", prompt=case.prompt, output=case.output,
        concurrency=case.batch, source=case.source, notes=case.label,
    )


# --- reading input files --------------------------------------------------------------------------


def source_text(path: str | Path) -> str:
    """The UTF-8 text of a measurement file, refused before parsing when over ``datafiles.MAX_FILE_BYTES``.

    Raises
    ------
    ValueError
        The file is larger than the cap or not UTF-8 text.
    OSError
        It cannot be read (missing, a directory, no permission).
    """
    return datafiles.read_text(path, what="measurement file")


def parse_json(text: str, where: str) -> Any:
    """``json.loads(text)``, with nesting too deep for the parser reported as a ``ValueError`` naming ``where``."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(f"{where}: JSON nested too deeply") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{where}: not valid JSON ({error})") from None
