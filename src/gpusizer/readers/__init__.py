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
from gpusizer.readers.detect import FORMATS, detect_format, read
from gpusizer.readers.llama_bench import GGML_FILE_TYPES, GGML_KV_TYPES, GGML_SPLITS, read_llama_bench
from gpusizer.readers.mlperf import read_mlperf
from gpusizer.readers.records import (
    METRIC_ALIASES,
    METRICS,
    UNITS,
    Measurement,
    from_case,
    gpu_class,
    parse_json,
    source_text,
    to_case,
)
from gpusizer.readers.schema import COLUMN_ALIASES, COLUMNS, IGNORED_COLUMNS, read_csv, read_json, to_csv
from gpusizer.readers.vllm import littles_law, read_vllm

__all__ = [
    "COLUMNS",
    "COLUMN_ALIASES",
    "FORMATS",
    "GGML_FILE_TYPES",
    "GGML_KV_TYPES",
    "GGML_SPLITS",
    "IGNORED_COLUMNS",
    "METRICS",
    "METRIC_ALIASES",
    "UNITS",
    "Measurement",
    "detect_format",
    "from_case",
    "gpu_class",
    "littles_law",
    "parse_json",
    "read",
    "read_csv",
    "read_json",
    "read_llama_bench",
    "read_mlperf",
    "read_vllm",
    "source_text",
    "to_case",
    "to_csv",
]
