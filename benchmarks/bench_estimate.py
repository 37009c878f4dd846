"""Speed of the main paths, as medians of repeated runs (plain script; timings are never asserted in tests).

    python benchmarks/bench_estimate.py

Measures: ``import gpusizer`` in a fresh interpreter, the first (catalogue-loading) ``estimate``, a
warm scalar ``estimate``, a broadcast ``estimate`` over a 64 x 64 context x concurrency grid, and
``gpusizer fit`` end to end as a subprocess.
"""

import statistics
import subprocess
import sys
import time
import timeit

import numpy as np


def median_seconds(statement, setup="pass", number=1, repeat=7, globals_=None):
    runs = timeit.repeat(statement, setup=setup, number=number, repeat=repeat, globals=globals_)
    return statistics.median(runs) / number


def subprocess_seconds(args, repeat=7):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(args, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    python = sys.executable
    empty = subprocess_seconds([python, "-c", "pass"])
    imported = subprocess_seconds([python, "-c", "import gpusizer"])
    first = subprocess_seconds([python, "-c", "import gpusizer; gpusizer.estimate('llama-3.1-70b', 'h200')"])
    fit = subprocess_seconds([python, "-m", "gpusizer.cli", "fit", "llama-3.1-70b", "h200", "--weights", "fp8",
                              "--context", "32k", "--concurrency", "16", "--json"])
    import gpusizer

    gpusizer.estimate("llama-3.1-70b", "h200")
    scalar = median_seconds("gpusizer.estimate('llama-3.1-70b', 'h200', context=32768, concurrency=16)",
                            number=200, globals_={"gpusizer": gpusizer})
    ctx = np.linspace(1024, 131072, 64).astype(int)
    users = np.arange(1, 65)[:, None]
    grid = median_seconds("gpusizer.estimate('llama-3.1-70b', 'h200', context=ctx, concurrency=users)", number=20,
                          globals_={"gpusizer": gpusizer, "ctx": ctx, "users": users})
    print(f"python startup                {empty * 1e3:8.1f} ms")
    print(f"import gpusizer               {(imported - empty) * 1e3:8.1f} ms (over bare startup)")
    print(f"first estimate (loads data)   {(first - imported) * 1e3:8.1f} ms")
    print(f"gpusizer fit end to end       {fit * 1e3:8.1f} ms (whole process)")
    print(f"scalar estimate, warm         {scalar * 1e6:8.1f} us")
    print(f"64 x 64 grid estimate         {grid * 1e3:8.1f} ms ({grid / 4096 * 1e6:.2f} us per configuration)")


if __name__ == "__main__":
    main()
