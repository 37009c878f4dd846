"""Cold start of ``gpusizer fit`` against a bare ``python -c "import numpy, pydantic"`` (medians).

    python benchmarks/bench_coldstart.py [runs]

Both commands run as fresh subprocesses, alternating, ``runs`` times each (default 9), with no on-disk
cache (``GPUSIZER_CACHE_DIR=""``) and the package byte-compiled first, as ``pip install`` does. The
target (issue 13) is a median overhead of at most 0.25 s. Timings are never asserted in tests: other
processes on the machine inflate every figure, so the load average is printed alongside.

Where the overhead went (one process, ``time.perf_counter``, 2-core machine shared with other jobs):
importing the modules ``fit`` needs 70-90 ms, of which about 45 ms is pydantic itself (``import
pydantic`` in the baseline is lazy: ``BaseModel`` and its schema machinery load on first use); the
models file 26 ms (12 ms ``tomllib``, 14 ms for the first schema build, most of it pydantic's
one-time plugin discovery through ``importlib.metadata``; validating all models takes 1 ms); the
GPU file 15 ms; the estimate itself 10 ms. ``tomllib`` parses the two catalogues in about 25 ms
together, so a generated JSON copy would save under 20 ms: not worth a second copy of the data.
Measured at the restructure (issue 13): 141 ms overhead at load 0.8, 212 ms at load 1.3 (7-9 runs).
"""

import compileall
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
TARGET = 0.25
"""Largest accepted median overhead of ``gpusizer fit`` over the bare import. [s]"""

BARE = [sys.executable, "-c", "import numpy, pydantic"]
FIT = [sys.executable, "-m", "gpusizer.cli", "fit", "llama-3.1-70b", "h200"]


def _run(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(runs: int = 9) -> None:
    compileall.compile_dir(SRC / "gpusizer", quiet=1)
    env = {**os.environ, "PYTHONPATH": str(SRC), "GPUSIZER_CACHE_DIR": ""}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    _run(FIT, env)  # warm the OS file cache
    bare, fit = [], []
    for _ in range(runs):
        bare.append(_run(BARE, env))
        fit.append(_run(FIT, env))
    b, f = statistics.median(bare), statistics.median(fit)
    print(f"load average {os.getloadavg()[0]:.2f}")
    print(f"import numpy, pydantic   {b * 1e3:7.1f} ms (median of {runs})")
    print(f"gpusizer fit (cold)      {f * 1e3:7.1f} ms (median of {runs})")
    print(f"overhead                 {(f - b) * 1e3:7.1f} ms (target <= {TARGET * 1e3:.0f} ms)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 9)
