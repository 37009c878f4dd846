"""Any supported file: the readers by format name, and recognising a file's format from its content."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpusizer.readers.llama_bench import read_llama_bench
from gpusizer.readers.mlperf import read_mlperf
from gpusizer.readers.records import Measurement
from gpusizer.readers.schema import COLUMNS, read_csv, read_json, text_lines
from gpusizer.readers.vllm import read_vllm

__all__ = ["FORMATS", "REQUIRED", "accepted_context", "detect_format", "read"]

FORMATS: dict[str, Callable[..., list[Measurement]]] = {
    "csv": read_csv,
    "json": read_json,
    "vllm": read_vllm,
    "llama-bench": read_llama_bench,
    "mlperf": read_mlperf,
}

#: Keyword arguments a tool output needs because the file does not say (``read`` names the missing ones).
REQUIRED: dict[str, tuple[str, ...]] = {
    "vllm": ("model", "gpu"),
    "llama-bench": ("model", "gpu"),
    "mlperf": ("model", "gpu", "prompt", "output"),
}


def detect_format(path: str | Path) -> str:
    """The ``FORMATS`` name of a file, from its content.

    Raises
    ------
    ValueError
        When the file is none of them.
    """
    text = "\n".join(text_lines(path)).lstrip()
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


def accepted_context(name: str) -> set[str]:
    """Keyword arguments the reader of format ``name`` takes (every column name for the schema formats)."""
    parameters = inspect.signature(FORMATS[name]).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return {*COLUMNS, "mapping"} if name == "csv" else set(COLUMNS)
    return {p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY}


def read(path: str | Path, *, format: str | None = None, **context: Any) -> list[Measurement]:
    """Measurements from any supported file; ``context`` (``model=``, ``gpu=``...) goes to the reader.

    Raises
    ------
    ValueError
        Unknown ``format``, a file of no known format, or a tool output without the ``context`` it
        needs (``REQUIRED``).
    """
    name = format or detect_format(path)
    if name not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}; got {name!r}")
    missing = [key for key in REQUIRED.get(name, ()) if context.get(key) is None]
    if missing:
        raise ValueError(f"{Path(path).name} is {name} output, which does not name "
                         f"{' or '.join(missing)}: pass {', '.join(f'{key}=' for key in missing)}")
    unknown = sorted(set(context) - accepted_context(name))
    if unknown:
        raise ValueError(f"{name} output does not take {', '.join(f'{key}=' for key in unknown)}")
    return FORMATS[name](path, **context)
