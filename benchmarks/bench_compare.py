"""Before/after speed of two source trees in one run (plain script; the machine is shared and noisy).

    python benchmarks/bench_compare.py OLD_SRC NEW_SRC [--rounds 2]

Each tree runs in its own interpreter, alternately, ``--rounds`` times: a warm scalar ``estimate`` at
the defaults and for DeepSeek-V3 on 8 GPUs (median of 9 repeats of 300 calls), and the 1,000,000-row
``sweep`` of ``bench_sweep.py`` (median of 5, and its peak traced memory). Compare the medians.
A tree is a ``src`` folder with ``gpusizer`` in it, its ``data`` folder beside it.
"""

import argparse
import os
import subprocess
import sys
from pathlib import Path

PROBE = r"""
import statistics, sys, time, timeit, tracemalloc
sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2])
import gpusizer
from gpusizer.sweeper import sweep
from bench_sweep import GPUS, GRID, MODELS
for label, model, gpu, kw in (("defaults", "llama-3.1-8b", "h100", {}),
                              ("deepseek-v3 x8", "deepseek-v3", "h200", dict(context=4096, gpus=8))):
    gpusizer.estimate(model, gpu, **kw)
    runs = timeit.repeat(lambda: gpusizer.estimate(model, gpu, **kw), number=300, repeat=9)
    print(f"{sys.argv[1]}  scalar estimate, {label:16s} {statistics.median(runs) / 300 * 1e6:7.1f} us")
sweep(MODELS, GPUS, **GRID)
runs = []
for _ in range(5):
    start = time.perf_counter(); sweep(MODELS, GPUS, **GRID); runs.append(time.perf_counter() - start)
tracemalloc.start(); sweep(MODELS, GPUS, **GRID); peak = tracemalloc.get_traced_memory()[1]; tracemalloc.stop()
print(f"{sys.argv[1]}  sweep of 1,000,000 rows         {statistics.median(runs):7.3f} s, {peak / 2**20:.0f} MiB peak")
"""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("trees", nargs="+")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    here = str(Path(__file__).parent)
    env = {**os.environ, "GPUSIZER_CACHE_DIR": ""}
    for _ in range(args.rounds):
        for tree in args.trees:
            subprocess.run([sys.executable, "-c", PROBE, str(Path(tree).resolve()), here], check=True, env=env)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
