"""MLPerf Inference ``mlperf_log_summary.txt`` (LLM benchmarks)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path

from gpusizer.readers.records import Measurement, source_text
from gpusizer.readers.vllm import littles_law

__all__ = ["read_mlperf"]


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
    text = source_text(path)
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
        users = concurrency or littles_law(_first(fields, "Completed samples per second"),
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
