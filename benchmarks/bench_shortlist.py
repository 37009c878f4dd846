"""Speed of ``gpusizer shortlist`` end to end, as medians of repeated runs (plain script; timings are never
asserted in tests).

    python benchmarks/bench_shortlist.py [--repeat 7]

Runs the command of issue #6 as a subprocess (interpreter start, imports, catalogue loading, the sweep,
the simulations of the three cheapest rows, and the text output):

    gpusizer shortlist llama-3.1-70b --prompt 2k --output 512 --rate 5 --ttft-p95 500ms --tpot-p95 50ms

and reports, per run, the wall-clock time and the CPU time (user + system) the process used. On a busy
machine the wall time includes waiting for a core; the CPU time is what the same run costs on an idle
one (the command is single-threaded). Also reports the in-process cost of the library call alone.
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

COMMAND = ["shortlist", "llama-3.1-70b", "--prompt", "2k", "--output", "512", "--rate", "5", "--ttft-p95", "500ms",
           "--tpot-p95", "50ms"]


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once() -> tuple[float, float]:
    """Wall and CPU seconds of one ``gpusizer shortlist`` process."""
    before = _child_cpu()
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "gpusizer.cli", *COMMAND], check=True, capture_output=True)
    return time.perf_counter() - start, _child_cpu() - before


def in_process(repeat: int) -> float:
    """Median seconds of ``gpusizer.shortlist`` in a warm interpreter (imports and catalogue loaded)."""
    import gpusizer

    workload = gpusizer.Workload(rate=5, prompt_tokens=2048, output_tokens=512)
    slo = gpusizer.SLO(ttft_p95=0.5, tpot_p95=0.05)
    gpusizer.shortlist("llama-3.1-8b", workload, slo, gpus=["h100"], simulate=0)  # load catalogues
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        gpusizer.shortlist("llama-3.1-70b", workload, slo)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    run_once()  # warm the file cache and the bytecode
    runs = [run_once() for _ in range(args.repeat)]
    wall = statistics.median(w for w, _ in runs)
    cpu = statistics.median(c for _, c in runs)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"gpusizer {' '.join(COMMAND)}")
    print(f"  cores {os.cpu_count()}, load average {load:.2f}, {args.repeat} runs")
    print(f"  wall time, median       {wall:6.2f} s   (runs: {', '.join(f'{w:.2f}' for w, _ in runs)})")
    print(f"  CPU time, median        {cpu:6.2f} s   (user + system of the process)")
    print(f"  library call, in-process {in_process(max(3, args.repeat // 2)):5.2f} s   (warm interpreter)")


if __name__ == "__main__":
    main()
