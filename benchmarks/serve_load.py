"""Load on ``gpusizer serve``: 1,000 requests from a few concurrent clients, p50/p99 latency and errors.

    python benchmarks/serve_load.py                     # starts its own server on a free localhost port
    python benchmarks/serve_load.py --url http://127.0.0.1:8000 --requests 1000 --clients 4

The requests cycle through a mix of questions (``fit`` of several models and GPUs, ``layouts``, a
lookup and a listing); each client is a thread with its own ``httpx.Client`` (keep-alive). Latency is
the wall time of one request as the client sees it. Only localhost is asked; the run is bounded by
``--requests``. Timings are never asserted in tests: other processes on the machine inflate them.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

SRC = Path(__file__).resolve().parents[1] / "src"
MIX = [
    ("POST", "/api/fit", {"model": "llama-3.1-70b", "gpu": "h200", "weights": "fp8", "kv_cache": "fp8",
                          "context": "32k", "concurrency": 16}),
    ("POST", "/api/fit", {"model": "llama-3.1-8b", "gpu": "rtx-4090", "context": "8k", "concurrency": 4}),
    ("POST", "/api/fit", {"model": "qwen3-30b-a3b", "gpu": "l40s", "engine": "llama.cpp", "weights": "q4_k_m"}),
    ("POST", "/api/fit", {"model": "deepseek-v3", "gpu": "hgx-h200-8x", "context": "16k", "concurrency": 32}),
    ("POST", "/api/layouts", {"model": "llama-3.1-70b", "gpu": "h100", "gpus": 4, "weights": "fp8"}),
    ("GET", "/api/models/llama-3.1-70b", None),
    ("GET", "/api/engines", None),
]


def _start() -> tuple[str, subprocess.Popen[bytes]]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    process = subprocess.Popen([sys.executable, "-m", "gpusizer.cli", "serve", "--port", str(port)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            httpx.get(url + "/api/engines", timeout=1)
            return url, process
        except httpx.HTTPError:
            time.sleep(0.1)
    process.terminate()
    raise SystemExit("the server did not start within 30 s")


def load(url: str, requests: int, clients: int) -> tuple[list[float], int]:
    """Latencies [s] of ``requests`` requests sent by ``clients`` threads, and the count of errors
    (a status other than 200, or no answer)."""
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    counter = iter(range(requests))

    def client() -> None:
        with httpx.Client(base_url=url, timeout=30) as http:
            for i in counter:
                method, path, body = MIX[i % len(MIX)]
                start = time.perf_counter()
                try:
                    ok = http.request(method, path, json=body).status_code == 200
                except httpx.HTTPError:
                    ok = False
                took = time.perf_counter() - start
                with lock:
                    latencies.append(took)
                    errors[0] += not ok

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, errors[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running gpusizer serve (default: start one)")
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    if not 1 <= args.requests <= 100_000 or not 1 <= args.clients <= 64:
        raise SystemExit("--requests from 1 to 100,000, --clients from 1 to 64")
    process = None
    url = args.url
    if url is None:
        url, process = _start()
    try:
        start = time.perf_counter()
        latencies, errors = load(url, args.requests, args.clients)
        wall = time.perf_counter() - start
    finally:
        if process is not None:
            process.terminate()
            process.wait(timeout=10)
    ordered = sorted(latencies)
    p50 = statistics.median(ordered)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    print(f"{len(latencies)} requests, {args.clients} clients, {wall:.1f} s ({len(latencies) / wall:.0f} req/s): "
          f"p50 {p50 * 1e3:.1f} ms, p99 {p99 * 1e3:.1f} ms, errors {errors}; load average "
          f"{os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
