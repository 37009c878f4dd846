"""Speed and memory of ``gpusizer.sweep`` against a loop over ``gpusizer.estimate`` (plain script; medians
of repeated runs; timings are never asserted in tests).

    python benchmarks/bench_sweep.py [--quick]

Measures, for a grid of 1,000,000 configurations (10 models x 20 GPUs x 4 GPU counts x 2 weight
precisions x 25 contexts x 25 concurrencies):

* ``sweep(...)``: every estimate field computed, columns kept in their compact broadcast shapes;
* the same plus expanding every column to one value per row (what ``to_pandas`` pays);
* peak memory of each, by ``tracemalloc`` (numpy reports its buffers to it) and the process's
  resident-set high-water mark (``resource.getrusage``);
* the per-configuration cost of a Python loop over the scalar ``estimate()``, from a sample of it, and
  the ratio to the sweep's.

Targets (issue #7): one million configurations in at most 1 s and 1 GiB on a 2-core machine.
"""

import os
import resource
import statistics
import sys
import time
import tracemalloc

import numpy as np

import gpusizer
from gpusizer.sweeper import sweep

MODELS = ["llama-3.1-8b", "llama-3.1-70b", "qwen3-32b", "qwen3-30b-a3b", "gemma-3-27b", "mistral-small-24b",
          "deepseek-v3", "gpt-oss-120b", "phi-4", "mixtral-8x7b"]
GPUS = ["rtx-3090", "rtx-4090", "rtx-5090", "rtx-6000-ada", "rtx-pro-6000-bw-server", "l4", "l40s", "a10g",
        "a100-40gb-sxm", "a100-80gb-sxm", "h100-pcie", "h100-sxm", "h200-sxm", "gh200-144gb", "b200", "mi300x",
        "mi325x", "gaudi3", "apple-m3-ultra", "tpu-v6e"]
GRID = dict(
    weights=["bf16", "fp8"],
    gpu_count=[1, 2, 4, 8],
    context=np.geomspace(1024, 131072, 25).round().astype(int),
    concurrency=np.unique(np.geomspace(1, 1024, 40).round().astype(int))[:25],
)


def timed(function, repeat):
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def peak_bytes(function):
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def expanded():
    result = sweep(MODELS, GPUS, **GRID)
    for name in result.columns:
        result.columns[name]
    return result


def main(quick=False):
    repeat = 3 if quick else 7
    assert len(sweep(MODELS, GPUS, **GRID)) == 1_000_000  # also warms the record caches
    rows = 1_000_000
    compact = timed(lambda: sweep(MODELS, GPUS, **GRID), repeat)
    full = timed(expanded, max(3, repeat // 2))
    compact_peak = peak_bytes(lambda: sweep(MODELS, GPUS, **GRID))
    full_peak = peak_bytes(expanded)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux

    sample = 200 if quick else 1000
    rng = np.random.default_rng(0)
    picks = [(str(rng.choice(MODELS)), str(rng.choice(GPUS)), str(rng.choice(GRID["weights"])),
              int(rng.choice(GRID["gpu_count"])), int(rng.choice(GRID["context"])),
              int(rng.choice(GRID["concurrency"]))) for _ in range(sample)]

    def loop():
        for model, gpu, weights, count, context, users in picks:
            gpusizer.estimate(model, gpu, weights=weights, gpus=count, context=context, concurrency=users)

    loop()  # warm the per-record caches, as the sweep's were
    per_estimate = timed(loop, 3) / sample
    per_row = compact / rows
    sizes = " x ".join(str(len(v)) for v in [MODELS, GPUS, *GRID.values()])
    print(f"load average                   {os.getloadavg()[0]:8.2f}   on {os.cpu_count()} CPUs")
    print(f"grid                           {rows:,} configurations ({sizes})")
    print(f"sweep (compact columns)        {compact:8.3f} s   ({per_row * 1e9:6.0f} ns per configuration)")
    print(f"sweep + every column expanded  {full:8.3f} s   ({full / rows * 1e9:6.0f} ns per configuration)")
    print(f"peak traced memory             {compact_peak / 2**20:8.0f} MiB compact, "
          f"{full_peak / 2**20:.0f} MiB expanded")
    print(f"peak resident set (process)    {rss / 2**20:8.0f} MiB")
    print(f"loop over estimate()           {per_estimate * 1e6:8.1f} us per configuration ({sample} sampled)")
    print(f"loop / sweep per configuration {per_estimate / per_row:8.0f} x  "
          f"(expanded: {per_estimate / (full / rows):.0f} x)")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
