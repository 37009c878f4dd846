"""Speed, scaling and memory of streamed and distributed sweeps (plain script; timings are never
asserted in tests).

    python benchmarks/sweep_stream.py [--rows 100000000] [--scaling-rows 20000000] [--chunk-rows 1048576]

The grid is one model (llama-3.1-8b) x 10 GPUs x 100 contexts x as many concurrencies as ``--rows``
asks for (10,000 for 1e8 rows). Every run folds two reductions over every row, the rows that fit
(``reduce.Counts``) and the fastest fitting row per model x GPU (``reduce.Best``), so that it reads
the columns a real question reads and keeps no table. Each measurement runs in a fresh interpreter,
so that its peak resident set (``resource.getrusage``'s high-water mark) is its own:

* ``1 core``: ``sweep_chunks`` folded in one process, for ``--scaling-rows`` and for ``--rows`` rows;
* ``2 workers``: ``sweeper.distributed.reduce`` on a ``LocalCluster`` of two single-thread worker
  processes, the same grids; the peak resident set of each worker is read on the worker.

Every process first sweeps one block outside the timed region (imports, catalogue, tables, heap).

Prints one line per measurement and the scaling efficiency (rate on 2 workers / 2 x rate on 1 core).
Targets (issue #23): 1e8 rows in at most 60 s on 2 cores, peak at most 1 GiB per process, and 2
workers at least 1.6 x one.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

GPUS = ["h100-sxm", "rtx-4090", "a100-80gb-sxm", "l40s", "mi300x", "h200-sxm", "b200", "l4", "rtx-5090", "h100-pcie"]
TOKENS = "decode_expected_aggregate_tokens_per_second"


def _grid(rows: int) -> dict:
    per = max(1, rows // (len(GPUS) * 100))
    return dict(models=["llama-3.1-8b"], gpus=GPUS, context=list(range(256, 256 * 101, 256)),
                concurrency=list(range(1, per + 1)))


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _warm(chunk_rows: int) -> None:
    """Import gpusizer, load its tables and grow the heap to one block's arrays, outside the timed region."""
    from gpusizer.sweeper import chunks

    grid = chunks.plan(**_grid(10 * chunk_rows))
    grid.sweep(next(iter(grid.blocks(chunk_rows))))["fits"].sum()


def _one(mode: str, rows: int, chunk_rows: int) -> dict:
    from gpusizer.sweeper import chunks, distributed, reduce

    grid = chunks.plan(**_grid(rows))
    tally, best = reduce.Counts(), reduce.Best(TOKENS, ["model", "gpu"], largest=True, fits_only=True)
    workers: list[float] = []
    if mode == "1 core":
        _warm(chunk_rows)
        start = time.perf_counter()
        reduce.fold((grid.sweep(b) for b in grid.blocks(chunk_rows)), tally, best)
        seconds = time.perf_counter() - start
    else:
        with distributed.cluster(2) as client:
            client.run(_warm, chunk_rows)
            start = time.perf_counter()
            distributed.reduce(grid, tally, best, client=client, chunk_rows=chunk_rows)
            seconds = time.perf_counter() - start
            workers = list(client.run(_peak_mib).values())
    return {"mode": mode, "rows": len(grid), "seconds": seconds, "rows_per_second": len(grid) / seconds,
            "fits": int(tally.result()["fits"][0]), "peak_mib": _peak_mib(), "worker_peak_mib": workers}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e8)
    parser.add_argument("--scaling-rows", type=float, default=2e7)
    parser.add_argument("--chunk-rows", type=int, default=1 << 20)
    parser.add_argument("--one", nargs=2, metavar=("MODE", "ROWS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(_one(args.one[0], int(float(args.one[1])), args.chunk_rows)))
        return
    results = []
    for mode, rows in (("1 core", args.scaling_rows), ("2 workers", args.scaling_rows), ("1 core", args.rows),
                       ("2 workers", args.rows)):
        command = [sys.executable, __file__, "--one", mode, str(rows), "--chunk-rows", str(args.chunk_rows)]
        line = subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
        result = json.loads(line)
        results.append(result)
        workers = ", ".join(f"{p:.0f}" for p in result["worker_peak_mib"])
        print(f"{mode:>9}: {result['rows']:>12,} rows in {result['seconds']:6.1f} s = "
              f"{result['rows_per_second'] / 1e6:5.2f} M rows/s, peak RSS {result['peak_mib']:.0f} MiB"
              + (f" (workers {workers} MiB)" if workers else "") + f", {result['fits']:,} fit", flush=True)
    for one, two in (results[0:2], results[2:4]):
        ratio = two["rows_per_second"] / one["rows_per_second"]
        print(f"{one['rows']:.0e} rows: 2 workers / 1 core = {ratio:.2f} x, scaling efficiency {ratio / 2:.0%}")

if __name__ == "__main__":
    main()
