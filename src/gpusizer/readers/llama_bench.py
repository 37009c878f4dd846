"""``llama-bench`` output (``-o json``, ``jsonl``, ``csv`` or ``md``)."""

from __future__ import annotations

import csv
import io
import re
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpusizer import catalog
from gpusizer.readers.records import Measurement, parse_json, source_text

__all__ = ["GGML_FILE_TYPES", "GGML_KV_TYPES", "GGML_SPLITS", "read_llama_bench"]

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
        data = parse_json(stripped, "llama-bench output")
        if not isinstance(data, list):
            raise ValueError("llama-bench JSON output is a list of objects")
        return data
    if stripped.startswith("{"):
        return [parse_json(line, "llama-bench JSONL output") for line in stripped.splitlines() if line.strip()]
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
    rows = _llama_bench_rows(source_text(path))
    found = [_llama_bench_measurement(row, n, Path(path).stem, context) for n, row in enumerate(rows, start=1)]
    return [m for m in found if m is not None]
