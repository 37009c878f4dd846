"""Record (or check) the golden file: every field of ``estimate``, ``sweep``, ``shortlist`` and ``best_layout``.

``python tools/golden.py`` rewrites ``tests/data/golden.json.gz`` from the code as it is, for the
recorded estimate cases (so that a model or GPU added to the catalogue does not redraw them;
``--resample`` draws them afresh from ``SEED``); the test ``tests/test_golden.py`` recomputes every case
and compares (1e-12 relative). Regenerate only when an issue names a change of numbers, and say which
fields changed in the commit.
"""

from __future__ import annotations

import gzip
import json
import random
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

PATH = Path(__file__).resolve().parents[1] / "tests" / "data" / "golden.json.gz"
SEED = 20261202
CASES = 820
ENGINES = ("vllm", "sglang", "trtllm", "llama.cpp")
LAYOUTS = ("tp", "pp", "ep", "dp", "layer", "tp2xpp2", "tp4+ep4", "tp2xdp2", "tp8+ep8", "pp2", "tp2")
WEIGHTS = (None, None, None, "bf16", "fp16", "fp8", "int8", "int4", "nvfp4", "mxfp4", "q8_0", "q4_k_m", "q2_k")
KV = (None, None, "fp16", "fp8", "bf16")


def plain(value: Any) -> Any:
    """JSON-ready copy: arrays become lists, numpy scalars Python numbers."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if hasattr(value, "__dataclass_fields__"):
        return plain({k: getattr(value, k) for k in value.__dataclass_fields__})
    if hasattr(value, "model_dump"):
        return plain(value.model_dump())
    return repr(value)


def estimate_cases() -> list[dict[str, Any]]:
    """``CASES`` random keyword sets for ``estimate`` (seeded)."""
    import gpusizer

    rng = random.Random(SEED)
    models = [m.id for m in gpusizer.models()]
    targets = [g.id for g in gpusizer.gpus()] + [s.id for s in gpusizer.systems()]
    cases = []
    for i in range(CASES):
        kw: dict[str, Any] = {"model": rng.choice(models), "gpu": rng.choice(targets)}
        kw["engine"] = rng.choice(ENGINES)
        kw["layout"] = rng.choice(LAYOUTS)
        if rng.random() < 0.7:
            kw["gpus"] = rng.choice((1, 1, 2, 4, 8, 3, 6))
        if kw["layout"] in ("tp2xpp2", "tp4+ep4", "tp2xdp2", "tp8+ep8", "pp2", "tp2") and rng.random() < 0.9:
            kw.pop("gpus", None)  # an explicit layout names its GPU count; a tenth of the time ask a wrong one
        kw["weights"] = rng.choice(WEIGHTS)
        kw["kv_cache"] = rng.choice(KV)
        if i % 10 == 0:  # arrays broadcast
            kw["context"] = [1024, 8192, 131072]
            kw["concurrency"] = [[1], [16]]
        else:
            kw["context"] = int(2 ** rng.uniform(7, 20))  # 128 .. 1M tokens
            kw["concurrency"] = rng.choice((1, 1, 2, 8, 32, 64, 256))
        if rng.random() < 0.3:
            kw["prompt"] = int(2 ** rng.uniform(4, 16))
        cases.append({k: v for k, v in kw.items() if v is not None})
    return cases


def run_estimate(kw: dict[str, Any]) -> Any:
    import gpusizer

    args = dict(kw)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            e = gpusizer.estimate(args.pop("model"), args.pop("gpu"), **args)
    except (ValueError, KeyError, TypeError) as err:
        return {"error": type(err).__name__}
    return plain(e.to_dict())


SWEEPS = (
    {"models": ["llama-3.1-8b", "qwen3-30b-a3b", "deepseek-v3"], "gpus": ["h100-sxm", "rtx-4090", "mi300x"],
     "context": [2048, 32768], "concurrency": [1, 64], "gpu_count": [1, 8], "prices": True},
    {"models": ["llama-3.1-70b", "gpt-oss-120b"], "gpus": ["h200", "b200", "l40s"], "weights": [None, "fp8", "int4"],
     "kv_cache": [None, "fp8"], "context": [8192], "concurrency": [1, 16], "gpu_count": [1, 2, 4]},
    {"models": ["gemma-3-27b", "qwen3-next-80b-a3b"], "gpus": ["apple-m4-max", "rtx-5090"], "engine": ["llama.cpp"],
     "weights": ["q4_k_m"], "context": [4096, 65536], "concurrency": [1, 4], "layout": "layer", "gpu_count": [1, 2]},
    {"models": ["mixtral-8x7b", "qwen3-235b-a22b"], "gpus": ["h100-sxm"], "layout": "ep", "gpu_count": [2, 4, 8],
     "context": [8192], "concurrency": [1, 32, 128], "engine": ["vllm", "sglang"], "prompt": [512, 4096]},
)

BEST = (
    ("llama-3.1-70b", "h100-sxm", 4, {"weights": "fp8"}),
    ("deepseek-v3", "hgx-h200-8x", None, {"context": 32768, "concurrency": 16}),
    ("qwen3-235b-a22b", "mi300x", 8, {"objective": "throughput", "context": 8192}),
    ("llama-3.1-8b", "rtx-4090", 2, {"engine": "llama.cpp", "weights": "q4_k_m"}),
)

SHORTLISTS = (
    ("llama-3.1-70b", {"rate": 5, "prompt_tokens": 2048, "output_tokens": 512}, {"ttft_p95": 0.5, "tpot_p95": 0.05},
     {"prices": {"h100-sxm": 2.49}, "requests": 400}),
    ("qwen3-30b-a3b", {"rate": 2, "prompt_tokens": 1024, "output_tokens": 256, "prompt_distribution": "lognormal"},
     {"tpot_p95": 0.03}, {"max_gpus": 4, "simulate": 1, "requests": 300}),
)


def run_sweep(kw: dict[str, Any]) -> Any:
    import gpusizer

    s = gpusizer.sweep(**kw)
    return {"shape": list(s.shape), "columns": {k: plain(np.asarray(s.columns[k])) for k in sorted(s.data)}}


def run_best(case: tuple[Any, ...]) -> Any:
    import gpusizer

    model, gpu, gpus, options = case
    return [plain(c) for c in gpusizer.best_layout(model, gpu, gpus, **options)]


def run_shortlist(case: tuple[Any, ...]) -> Any:
    import gpusizer

    model, workload, slo, options = case
    table = gpusizer.shortlist(model, gpusizer.Workload(**workload), gpusizer.SLO(**slo), **options)
    return {"rows": [plain(r) for r in table.rows], "dropped": [plain(d) for d in table.dropped]}


def recorded_cases() -> list[dict[str, Any]]:
    """The estimate keyword sets of the golden file as recorded."""
    return [case["kwargs"] for case in json.loads(gzip.decompress(PATH.read_bytes()))["estimate"]]


def record(resample: bool = False) -> dict[str, Any]:
    cases = estimate_cases() if resample or not PATH.exists() else recorded_cases()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            "estimate": [{"kwargs": kw, "result": run_estimate(kw)} for kw in cases],
            "sweep": [run_sweep(kw) for kw in SWEEPS],
            "best_layout": [run_best(c) for c in BEST],
            "shortlist": [run_shortlist(c) for c in SHORTLISTS],
        }


if __name__ == "__main__":
    data = record(resample="--resample" in sys.argv)
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    PATH.write_bytes(gzip.compress(text.encode(), mtime=0))
    errors = sum("error" in c["result"] for c in data["estimate"] if isinstance(c["result"], dict))
    print(f"{PATH}: {len(data['estimate'])} estimates ({errors} rejected), {len(text):,} characters", file=sys.stderr)
