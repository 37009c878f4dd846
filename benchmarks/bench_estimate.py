"""Speed of the main paths, as medians of repeated runs (plain script; timings are never asserted in tests).

    python benchmarks/bench_estimate.py

Measures: ``import gpusizer`` in a fresh interpreter, the first (catalogue-loading) ``estimate``, a
warm scalar ``estimate`` for five kinds of configuration (and a loop over distinct ones), a
broadcast ``estimate`` over a 64 x 64 context x concurrency grid, and ``gpusizer fit`` and
``gpusizer sweep`` end to end as subprocesses. Targets (issue #7) are printed alongside; the load
average is printed too, since other processes on the machine inflate every figure.

The package's modules are byte-compiled first, as ``pip install`` does: a source checkout run with
``PYTHONDONTWRITEBYTECODE`` would otherwise recompile every module on every run. ``fit`` is timed
with the cache of parsed catalogues (``gpusizer._cache``) warm, as every run after the first finds
it, and off (``GPUSIZER_CACHE_DIR=""``), as the first run after an install or a data edit does.
"""

import compileall
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

import numpy as np


def median_seconds(statement, setup="pass", number=1, repeat=7, globals_=None):
    runs = timeit.repeat(statement, setup=setup, number=number, repeat=repeat, globals=globals_)
    return statistics.median(runs) / number


def subprocess_seconds(args, repeat=7, env=None):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(args, check=True, capture_output=True, env=env)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    python = sys.executable
    package = Path(importlib.util.find_spec("gpusizer").origin).parent
    compileall.compile_dir(package, quiet=1)
    empty = subprocess_seconds([python, "-c", "pass"])
    imported = subprocess_seconds([python, "-c", "import gpusizer"])
    first = subprocess_seconds([python, "-c", "import gpusizer; gpusizer.estimate('llama-3.1-70b', 'h200')"])
    command = [python, "-m", "gpusizer.cli", "fit", "llama-3.1-70b", "h200", "--weights", "fp8", "--context", "32k",
               "--concurrency", "16", "--json"]
    fit = subprocess_seconds(command, repeat=9)
    fit_cold = subprocess_seconds(command, repeat=5, env={**os.environ, "GPUSIZER_CACHE_DIR": ""})
    with tempfile.TemporaryDirectory() as folder:
        grid = str(Path(folder) / "grid.csv")
        swept = subprocess_seconds([python, "-m", "gpusizer.cli", "sweep", "--models", "llama-3.1-8b,qwen3-32b",
                                    "--gpus", "h100,rtx-4090", "--weights", "bf16,fp8", "--context", "4k,32k",
                                    "--concurrency", "1,8,64", "-o", grid], repeat=5)
    import gpusizer

    gpusizer.estimate("llama-3.1-70b", "h200")
    scalars = {  # label -> estimate's arguments; each run 300 times per repeat, the median of 9 repeats
        "defaults (8k context: one prefill chunk)": ("llama-3.1-8b", "h100", {}),
        "flagship 32k x 16 (four prefill chunks)": ("llama-3.1-70b", "h200", dict(context=32768, concurrency=16)),
        "70B on 8 GPUs, tensor parallel": ("llama-3.1-70b", "h200", dict(context=4096, concurrency=8, gpus=8)),
        "MoE on 8 GPUs (DeepSeek-V3)": ("deepseek-v3", "h200", dict(context=4096, gpus=8)),
        "GGUF on llama.cpp": ("qwen3-30b-a3b", "rtx-4090", dict(weights="q4_k_m", engine="llama.cpp", context=4096)),
    }
    scalar = {
        label: median_seconds("estimate(*args, **kwargs)", number=300, repeat=9,
                              globals_={"estimate": gpusizer.estimate, "args": (m, g), "kwargs": kw})
        for label, (m, g, kw) in scalars.items()
    }
    contexts = [1024 + 7 * i for i in range(500)]  # distinct configurations: nothing per configuration is reused
    loop = "for c in contexts: gpusizer.estimate('llama-3.1-70b', 'h200', context=c, concurrency=16)"
    distinct = median_seconds(loop, number=1, repeat=5, globals_={"gpusizer": gpusizer, "contexts": contexts})
    distinct /= len(contexts)
    ctx = np.linspace(1024, 131072, 64).astype(int)
    users = np.arange(1, 65)[:, None]
    grid = median_seconds("gpusizer.estimate('llama-3.1-70b', 'h200', context=ctx, concurrency=users)", number=20,
                          globals_={"gpusizer": gpusizer, "ctx": ctx, "users": users})
    print(f"load average                  {os.getloadavg()[0]:8.2f}   on {os.cpu_count()} CPUs")
    print(f"python startup                {empty * 1e3:8.1f} ms")
    print(f"import gpusizer               {(imported - empty) * 1e3:8.1f} ms over bare startup, "
          f"{imported * 1e3:.0f} ms in all (target 300 ms)")
    print(f"first estimate (loads data)   {(first - imported) * 1e3:8.1f} ms")
    print(f"gpusizer fit end to end       {fit * 1e3:8.1f} ms (whole process; target 500 ms)")
    print(f"  the same, no catalogue cache {fit_cold * 1e3:7.1f} ms (the first run after an install)")
    print(f"gpusizer sweep end to end     {swept * 1e3:8.1f} ms (whole process, 48 rows to CSV)")
    for label, seconds in scalar.items():
        print(f"scalar estimate, {label:44s} {seconds * 1e6:6.1f} us (target 100 us)")
    print(f"scalar estimate, distinct 1k-4.5k contexts (one chunk) {distinct * 1e6:5.1f} us per configuration")
    print(f"64 x 64 grid estimate         {grid * 1e3:8.1f} ms ({grid / 4096 * 1e6:.2f} us per configuration)")


if __name__ == "__main__":
    main()
