"""Engine memory against engine startup logs: gpusizer's per-GPU figures beside the ones engines print.

Usage::

    python tools/engine_memory.py           # rewrites the "Against engine startup logs" section of docs/memory.md
    python tools/engine_memory.py --print   # prints it instead

Input: ``data/calibration/engine-memory-logs.csv`` (one row per printed figure; its companion ``.md``
explains each engine's accounting). ``CASES`` maps every log whose settings are stated well enough
onto catalogue ids, an engine profile with the log's settings (``EngineProfile.model_copy``) and the
context (``max_model_len``); nothing here is fitted. A figure the log does not print directly is
derived from the ones it does (named in ``derived``).

Figures and the estimate fields they are compared with (per GPU):

* ``weights``: ``memory.weights_bytes``;
* ``activation_peak``: ``memory.activation_bytes`` (the profile run's torch peak above the weights: the
  larger of the forward pass and the dummy sampler, whose bytes per logit follow the log's vLLM version,
  ``_V0`` and ``_SORT_SAMPLER``);
* ``non_torch``: ``memory.runtime_bytes`` less the engine's CUDA-graph term;
* ``kv_cache_memory``: ``kv_pool_bytes`` (less ``kv_pool_deficit_bytes`` when negative);
* ``kv_cache_tokens``: ``kv_pool_tokens`` of the whole layout; ``max_concurrency``: those tokens
  over ``max_model_len``, as vLLM prints it (fractional);
* ``kv_cache_bytes``: ``memory.kv_cache_bytes`` (llama.cpp's KV buffer of every slot);
* ``memory_fraction``: ``memory_fraction``, the fraction in force (SGLang's default follows the GPU and
  the tensor parallelism: ``engine_defaults.sglang_mem_fraction_static``);
* ``starts``: 1 when the pool holds one ``max_model_len`` sequence (the engine starts), else 0.

A log that states the engine's fraction sets ``memory_fraction`` and with it ``fraction_rule="fixed"``.

Targets: weights within 3 %; KV memory, tokens and concurrency within 8 % or 1.5 GiB of pool; the
memory fraction within 1 %.
"""

from __future__ import annotations

import csv
import statistics
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import gpusizer
from gpusizer import engines
from gpusizer.units import GiB

MiB = 2.0**20

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "data" / "calibration" / "engine-memory-logs.csv"
DOC = ROOT / "docs" / "memory.md"
START, END = "<!-- engine-logs:start -->", "<!-- engine-logs:end -->"
UNITS = {"GB": GiB, "GiB": GiB, "MiB": MiB, "bytes": 1.0, "tokens": 1.0, "x": 1.0, "blocks": 1.0}
"""vLLM's and SGLang's "GB" is GiB (bytes / 2^30); see the logs' companion file."""
TARGET = {"weights": 0.03, "kv_cache_memory": 0.08, "kv_cache_tokens": 0.08, "max_concurrency": 0.08,
          "memory_fraction": 0.01}
POOL_SLACK = 1.5 * GiB
"""A KV figure within this many bytes of pool is on target whatever its relative error. [B]"""


@dataclass(frozen=True)
class Case:
    """One startup log as gpusizer sees it."""

    name: str
    source: str
    model: str
    gpu: str
    engine: str
    figures: dict[str, str]
    """Figure name -> the log row (``Lnnn``) that prints it."""
    gpus: int = 1
    context: int = 8192
    concurrency: int = 1
    settings: dict[str, Any] = field(default_factory=dict)
    """Engine-profile fields the log sets (``memory_fraction``, ``batched_tokens``, ``max_sequences``)."""
    weights: str | None = None
    kv_cache: str | None = None
    derived: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Figure name -> (row a, row b): the figure is a - b (e.g. torch peak less weights)."""
    starts: bool | None = None
    """Whether the engine started (a KV pool for one ``max_model_len`` sequence)."""


_BEFORE_V021 = {"cuda_graph_bytes": 0.0}
"""Every vLLM log here predates v0.21, which first counts CUDA graphs in the budget."""
_V1 = {"batched_tokens": 8192, "max_sequences": 1024}
"""vLLM V1 ``vllm serve`` defaults on 70 GB+ GPUs (arg_utils ``_set_default_args_v1``)."""
_V0 = {"sampler_bytes_per_logit": 4.0}
"""vLLM V0 (0.5-0.7): the profile's sampler holds about one float32 copy of the logits
(``memory.vllm_sampler_bytes``)."""
_SORT_SAMPLER = {"sampler_bytes_per_logit": 38.0}
"""vLLM 0.10-0.11 V1: the profile's dummy sampler runs the sort-based top-k/top-p
(``vllm/v1/sample/ops/topk_topp_sampler.py`` ``apply_top_k_top_p``; ``memory.vllm_sampler_bytes``)."""
_SGLANG_V04 = {"fraction_rule": "sglang_v04"}
"""SGLang 0.3-0.4: the default ``mem_fraction_static`` by tensor parallelism (0.88 at TP1;
``engine_defaults.sglang_v04_mem_fraction_static``)."""
_TRITON_MXFP4 = {"mxfp4_hidden_multiple": 256, "mxfp4_intermediate_multiple": 64}
"""vLLM's Triton MXFP4 MoE backend (0.14): the intermediate width per rank padded to 64
(``vllm/model_executor/layers/quantization/mxfp4.py`` ``Mxfp4MoEMethod.create_weights``) and the hidden
width to 256, the padding the 0.14.1 log's 64.38 GiB implies (2880 -> 3072; Marlin's 128-multiple
intermediate would give 65.8 GiB)."""

CASES: tuple[Case, ...] = (
    Case("Llama-3.1-8B, RTX 3090, 20k", "vllm#10517", "llama-3.1-8b", "rtx-3090", "vllm",
         {"weights": "L001", "non_torch": "L005", "kv_cache_memory": "L006", "max_concurrency": "L008"},
         context=20000, settings={"memory_fraction": 0.90, "batched_tokens": 20000, "max_sequences": 256, **_V0},
         derived={"activation_peak": ("L004", "L001")}, starts=True),
    Case("Llama-3.1-8B, RTX 3090, 29k", "vllm#10517", "llama-3.1-8b", "rtx-3090", "vllm",
         {"kv_cache_memory": "L010", "kv_cache_tokens": "L013", "max_concurrency": "L012"},
         context=29000, settings={"memory_fraction": 0.90, "batched_tokens": 29000, "max_sequences": 256, **_V0},
         derived={"activation_peak": ("L009", "L001")}, starts=False),
    Case("Llama-3.1-70B, 8 x H200 TP8", "vllm#10702", "llama-3.1-70b", "h200-sxm", "vllm",
         {"non_torch": "L019", "kv_cache_memory": "L020"}, gpus=8, context=131072,
         settings={"memory_fraction": 0.95, "batched_tokens": 2048, "max_sequences": 256, **_V0},
         starts=True),
    Case("R1-Distill-Qwen-14B, 2 x RTX 4090 TP2", "vllm#13061", "qwen2.5-14b", "rtx-4090", "vllm",
         {"weights": "L031", "non_torch": "L032", "activation_peak": "L033", "kv_cache_memory": "L034",
          "kv_cache_tokens": "L035"}, gpus=2, context=131072,
         settings={"memory_fraction": 0.98, "batched_tokens": 2048, "max_sequences": 256, **_V0}, starts=False),
    Case("Llama-3.1-70B W8A8, 1 GPU", "vllm#12569", "llama-3.1-70b", "h100-sxm", "vllm",
         {"weights": "L028"}, weights="int8", context=2048, settings={"memory_fraction": 0.98}),
    Case("Qwen3-235B-A22B-FP8, 4 x H100 TP4", "vllm#21348", "qwen3-235b-a22b", "h100-sxm", "vllm",
         {"kv_cache_memory": "L041", "kv_cache_tokens": "L042"}, gpus=4, context=40960, weights="fp8",
         settings={"memory_fraction": 0.90, **_V1, **_SORT_SAMPLER}, starts=True),
    Case("gpt-oss-120b, H100, vLLM 0.10.1", "vllm#23278", "gpt-oss-120b", "h100-sxm", "vllm",
         {"weights": "L043", "kv_cache_memory": "L044"}, context=131072,
         settings={"memory_fraction": 0.90, **_V1, **_SORT_SAMPLER}, starts=False),
    Case("gpt-oss-120b, H100, gmu 0.95, 1024 batched", "vllm#27508", "gpt-oss-120b", "h100-sxm", "vllm",
         {"kv_cache_memory": "L045"}, context=131072,
         settings={"memory_fraction": 0.95, "batched_tokens": 1024, "max_sequences": 1024, **_SORT_SAMPLER},
         starts=False),
    Case("gpt-oss-120b, H100, vLLM 0.14.1", "vllm#33155", "gpt-oss-120b", "h100-sxm", "vllm",
         {"weights": "L046"}, context=131072, settings={"memory_fraction": 0.90, **_V1, **_TRITON_MXFP4}),
    Case("gpt-oss-20b, A100 80GB, gmu 0.65", "myoceane.fr", "gpt-oss-20b", "a100-80gb-sxm", "vllm",
         {"weights": "L047", "kv_cache_memory": "L048"}, context=131072,
         settings={"memory_fraction": 0.65, "batched_tokens": 8192, "max_sequences": 256}, starts=True),
    Case("Qwen3-30B-A3B, 4 x A10 TP4", "vllm#17469", "qwen3-30b-a3b", "a10", "vllm",
         {"weights": "L049"}, gpus=4, context=1024, settings={"max_sequences": 1}),
    Case("DeepSeek-V2-Lite, vLLM 0.5", "vllm#4650", "deepseek-v2-lite", "h100-sxm", "vllm",
         {"weights": "L056"}, context=32000),
    Case("Llama-3.1-405B-FP8, 8 x H100 TP8", "vllm#6746", "llama-3.1-405b-fp8", "h100-sxm", "vllm",
         {"weights": "L058"}, gpus=8, settings=_V0),
    Case("Qwen3-235B-A22B-FP8, 4 x H100 TP4", "vllm#21348", "qwen3-235b-a22b", "h100-sxm", "sglang",
         {"kv_cache_tokens": "L074"}, gpus=4, context=40960, weights="fp8",
         settings={"memory_fraction": 0.93}, derived={"kv_cache_memory": ("L075", "-L076")}, starts=True),
    Case("Qwen3-14B, 48 GiB card (RTX A6000 capacity)", "xorbitsai/inference#3481", "qwen3-14b", "rtx-a6000",
         "sglang", {"weights": "L077", "kv_cache_tokens": "L079"}, context=40960, settings=_SGLANG_V04, starts=True),
    Case("Qwen3-0.6B, H100, default fraction", "sglang#39713", "qwen3-0.6b", "h100-sxm", "sglang",
         {"memory_fraction": "L112", "kv_cache_tokens": "L087"}, context=40960, starts=True),
    Case("Qwen3-32B, H100, default fraction", "sglang#29092", "qwen3-32b", "h100-sxm", "sglang",
         {"memory_fraction": "L113"}, context=40960),
    Case("Llama-3.1-8B-FP8, H100", "TensorRT-LLM#6294", "llama-3.1-8b", "h100-sxm", "trtllm",
         {"weights": "L089", "kv_cache_memory": "L090", "kv_cache_tokens": "L091"}, context=157, weights="fp8",
         kv_cache="fp8", settings={"memory_fraction": 0.8, "batched_tokens": 23552, "max_sequences": 4096},
         starts=True),
    Case("7B SmoothQuant (Llama-2-7B), A100 80GB", "TensorRT-LLM#1400", "llama-2-7b", "a100-80gb-sxm",
         "trtllm-engine",
         {"kv_cache_memory": "L094", "kv_cache_tokens": "L095"}, context=5120, weights="int8", kv_cache="fp16",
         settings={"memory_fraction": 0.9, "batched_tokens": 4096, "max_sequences": 1}, starts=True),
    Case("Llama-2-7B, A10, fraction 0.95", "TensorRT-LLM#224", "llama-2-7b", "a10", "trtllm-engine",
         {"kv_cache_tokens": "L096"}, context=6144, weights="fp16", kv_cache="fp16",
         settings={"memory_fraction": 0.95, "batched_tokens": 25 * 2048, "max_sequences": 25}),
    Case("gpt-oss-120b, 2 x 131072 cells", "ollama#16416", "gpt-oss-120b", "h200-sxm", "llama.cpp",
         {"weights": "L099", "kv_cache_bytes": "L100", "activation_peak": "L101"}, context=131072,
         concurrency=2, settings={"batched_tokens": 1024}),
)


@cache
def logged() -> dict[str, float]:
    """Every log row's value in bytes (or tokens, or a plain number), by row id."""
    with LOGS.open(encoding="utf-8") as handle:
        return {r["id"]: float(r["value"].replace(",", "")) * UNITS[r["unit"]] for r in csv.DictReader(handle)}


def _published(case: Case) -> dict[str, float]:
    values = logged()
    out = {name: values[row] for name, row in case.figures.items()}
    for name, (a, b) in case.derived.items():
        out[name] = values[a] + values[b[1:]] if b.startswith("-") else values[a] - values[b]
    if case.starts is not None:
        out["starts"] = float(case.starts)
    return out


def predict(case: Case) -> dict[str, float]:
    """gpusizer's figures for one log, by the log's figure names."""
    profile = engines.engine(case.engine)
    settings = {**(_BEFORE_V021 if case.engine == "vllm" else {}), **case.settings}
    if "memory_fraction" in settings:
        settings.setdefault("fraction_rule", "fixed")
    profile = profile.model_copy(update=settings) if settings else profile
    result = gpusizer.estimate(case.model, case.gpu, gpus=case.gpus, engine=profile, context=case.context,
                               concurrency=case.concurrency, weights=case.weights, kv_cache=case.kv_cache)
    m, tokens = result.memory, float(result.kv_pool_tokens)
    engine_memory = getattr(result, "engine_memory", None)
    non_torch = (engine_memory.non_torch_memory_bytes if engine_memory is not None
                 else m.runtime_bytes - profile.cuda_graph_bytes)
    return {
        "weights": float(m.weights_bytes),
        "activation_peak": float(m.activation_bytes),
        "non_torch": float(non_torch),
        "kv_cache_memory": float(result.kv_pool_bytes - result.kv_pool_deficit_bytes),
        "kv_cache_bytes": float(m.kv_cache_bytes),
        "kv_cache_tokens": tokens,
        "max_concurrency": tokens / case.context,
        "memory_fraction": float(result.memory_fraction),
        "starts": float(bool(result.fits)),
    }


@dataclass(frozen=True)
class Row:
    """One published figure beside gpusizer's."""

    case: Case
    figure: str
    published: float
    predicted: float

    @property
    def error(self) -> float:
        """Absolute percentage error. [-]"""
        if self.figure == "starts":
            return 0.0 if self.published == self.predicted else 1.0
        return abs(self.predicted - self.published) / abs(self.published)

    @property
    def on_target(self) -> bool | None:
        """Within the figure's target; None for figures without one."""
        if self.figure == "starts":
            return self.error == 0
        if self.figure not in TARGET:
            return None
        if self.figure == "kv_cache_memory" and abs(self.predicted - self.published) <= POOL_SLACK:
            return True
        return self.error <= TARGET[self.figure]


def rows() -> list[Row]:
    """Every published figure of every case, with gpusizer's prediction."""
    out = []
    for case in CASES:
        predicted = predict(case)
        out.extend(Row(case, name, value, predicted[name]) for name, value in _published(case).items())
    return out


def _show(figure: str, value: float) -> str:
    if figure == "starts":
        return "yes" if value else "no"
    if figure in ("kv_cache_tokens",):
        return f"{value:,.0f}"
    if figure == "max_concurrency":
        return f"{value:.2f}"
    if figure == "memory_fraction":
        return f"{value:.3f}"
    return f"{value / GiB:.2f} GiB"


def summary(table: list[Row]) -> list[tuple[str, str, int, float, int | None]]:
    """(engine, figure, count, median APE, count on target) per engine and figure."""
    groups: dict[tuple[str, str], list[Row]] = {}
    for row in table:
        groups.setdefault((row.case.engine, row.figure), []).append(row)
    out = []
    for (eng, figure), members in groups.items():
        hits = [r.on_target for r in members]
        on = None if hits[0] is None else sum(bool(h) for h in hits)
        out.append((eng, figure, len(members), statistics.median(r.error for r in members), on))
    return out


def report() -> str:
    """The markdown section, between its markers."""
    table = rows()
    lines = [
        START,
        "## Against engine startup logs",
        "",
        "Written by `tools/engine_memory.py` from `data/calibration/engine-memory-logs.csv` (public startup",
        "logs; their accounting rules are in `engine-memory-logs.md`). Each log is predicted with",
        "`gpusizer.estimate` at the log's GPU, tensor parallelism, `max_model_len` and stated engine settings",
        "(`EngineProfile.model_copy`); unstated settings take the engine's defaults. Sizes per GPU in GiB.",
        f"Targets: weights within {TARGET['weights']:.0%}; KV memory, tokens and concurrency within "
        f"{TARGET['kv_cache_memory']:.0%} (KV memory also within {POOL_SLACK / GiB:.1f} GiB); start verdict right.",
        "",
        "| engine | figure | logs | median error | on target |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for eng, figure, count, median, on in summary(table):
        lines.append(f"| {eng} | {figure} | {count} | {median:.1%} | {'' if on is None else f'{on}/{count}'} |")
    lines += ["", "| log | source | figure | logged | gpusizer | error |", "| --- | --- | --- | ---: | ---: | ---: |"]
    for r in table:
        mark = "" if r.on_target in (None, True) else " (off)"
        lines.append(f"| {r.case.name} ({r.case.engine}) | {r.case.source} | {r.figure} | "
                     f"{_show(r.figure, r.published)} | {_show(r.figure, r.predicted)} | {r.error:.1%}{mark} |")
    return "\n".join([*lines, END]) + "\n"


def write(path: Path = DOC) -> None:
    """Replace the section in ``path`` (appended the first time)."""
    text = path.read_text(encoding="utf-8")
    if START in text:
        head, rest = text.split(START, 1)
        text = head + report() + rest.split(END, 1)[1].lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n" + report()
    path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    if "--print" in sys.argv:
        print(report(), end="")
    else:
        write()
