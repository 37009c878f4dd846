"""PCIe scaling: what 2, 4 and 8 cards without NVLink buy, against the public tables we could read.

"Two cards scale almost linearly, four cards over PCIe give only about 1.4x of two" is the question
after "does it fit on one card". This script prints gpusizer's answer for RTX 5090 (1x, 2x, 4x) and
RTX PRO 6000 Blackwell Server Edition (1x to 8x), then sets it against three public sources, and
says where it agrees and where it does not. No number below is invented: every measured figure is
quoted from its source, with the address, and every predicted one comes from ``gpusizer``.

Sources (read 2026-12-02):

1. NVIDIA/TensorRT-LLM ``docs/source/performance/perf-overview.md`` (commit 00f37686), copied into
   ``data/calibration/measurements.csv`` as rows m164 (1x RTX PRO 6000 Server, TP1) and m166 (4x,
   PP4): Llama 3.3 70B FP4, 1000 input / 1000 output tokens, offline maximum throughput.
2. gigagpu.com, "tokens per second benchmark, April 2026 update" (https://gigagpu.com/?p=13153):
   vLLM 0.8.x, 512 in / 256 out, total tok/s at 10 concurrent users, "tensor parallel" on 2x and 4x
   RTX 5090 and on one RTX 6000 Pro 96 GB. A vendor page with internal inconsistencies: weight it low.
3. voipmonitor/rtx6kpro, ``benchmarks/results.md`` (community knowledge base, 8x RTX PRO 6000 on
   PCIe 5 switches): NCCL and custom all-reduce latencies, bus bandwidth, P2P bandwidth.
"""

# %%
import csv
import warnings

import gpusizer
from gpusizer import catalog, datafiles, efficiency, engines, interconnect

MODEL = "llama-3.3-70b"


def verdict(predicted: float, measured: float, tolerance: float = 0.25) -> str:
    """``agree`` within ``tolerance`` (relative), else how far off, in words."""
    ratio = predicted / measured
    if abs(ratio - 1) <= tolerance:
        return f"agree ({ratio - 1:+.0%})"
    return f"DISAGREE: gpusizer {ratio:.2f}x the measurement"


def full_pool(gpu: str, gpus: int, layout: str, **options):
    """Estimate at the concurrency that fills the KV pools (capped at the engine's max_num_seqs per replica)."""
    first = gpusizer.estimate(MODEL, gpu, gpus=gpus, layout=layout, **options)
    scheduler = engines.engine(options.get("engine", "vllm")).max_sequences
    users = max(1, min(int(first.max_concurrency), scheduler * first.parallel.data_parallel))
    return gpusizer.estimate(MODEL, gpu, gpus=gpus, layout=layout, **dict(options, concurrency=users)), users


# %% gpusizer's own table: per-user decode and full-pool throughput, tensor parallel over PCIe
print(f"{MODEL}, INT4 weights (AWQ-class), vLLM, 2,048-token sequences; 'fits' per GPU; efficiency vs one")
print("unlimited-memory GPU of the same type (docs/parallel.md). No measurement backs these cells.\n")
print(f"{'GPU':24s} {'n':>2s} {'link':12s} {'fits':5s} {'tok/s/user':>10s} {'x of n/2':>8s} "
      f"{'efficiency':>10s} {'comm':>5s} {'tok/s full pool':>16s}")
for gpu, counts in (("rtx-5090", (1, 2, 4)), ("rtx-pro-6000-bw-server", (1, 2, 4, 8))):
    previous = None
    for n in counts:
        e = gpusizer.estimate(MODEL, gpu, gpus=n, weights="int4", context=2048)
        full, users = full_pool(gpu, n, "tp", weights="int4", context=2048)
        rate = e.decode.expected_tokens_per_second
        step = f"{rate / previous:.2f}x" if previous else "-"
        link = interconnect.link_class(catalog.gpu(gpu), n).name if n > 1 else "-"
        pool = f"{full.decode.expected_aggregate_tokens_per_second:,.0f} @ {users}" if full.fits else "-"
        print(f"{gpu:24s} {n:2d} {link:12s} {bool(e.fits)!s:5s} {rate:10.1f} {step:>8s} "
              f"{e.parallel.scaling_efficiency:10.0%} {e.parallel.communication_share:5.0%} {pool:>16s}")
        previous = rate
print("\nRTX 5090 and RTX PRO 6000 have no NVLink; GeForce cards also lack PCIe peer-to-peer, so every")
print("all-reduce of the 5090s is staged through host memory (link 'pcie-host').")

# %% Source 1: TensorRT-LLM, 1x vs 4x RTX PRO 6000 (pipeline parallel), offline maximum throughput
rows = {}
with open(datafiles.bundled("calibration/measurements.csv"), encoding="utf-8") as handle:
    for row in csv.DictReader(line for line in handle if not line.startswith("#")):
        if row["id"] in ("m164", "m166"):
            rows[row["id"]] = float(row["value"])
options = dict(weights="nvfp4", context=2000, engine="trtllm")
one, users_one = full_pool("rtx-pro-6000-bw-server", 1, "tp1", **options)
four, users_four = full_pool("rtx-pro-6000-bw-server", 4, "pp4", **options)
measured_ratio = rows["m166"] / rows["m164"]
predicted_ratio = four.decode.expected_aggregate_tokens_per_second / one.decode.expected_aggregate_tokens_per_second
print("\nSource 1, TensorRT-LLM perf overview, Llama 3.3 70B FP4, 1000/1000, RTX PRO 6000 Server:")
rate_one = one.decode.expected_aggregate_tokens_per_second
rate_four = four.decode.expected_aggregate_tokens_per_second
print(f"  1x TP1: measured {rows['m164']:,.0f} tok/s, gpusizer {rate_one:,.0f} (KV pool full at {users_one} "
      f"sequences): {verdict(rate_one, rows['m164'])}")
print(f"  4x PP4: measured {rows['m166']:,.0f} tok/s, gpusizer {rate_four:,.0f} ({users_four} sequences): "
      f"{verdict(rate_four, rows['m166'])}")
print(f"  shape, 4x over 1x: measured {measured_ratio:.2f}x, gpusizer {predicted_ratio:.2f}x: "
      f"{verdict(predicted_ratio, measured_ratio, 0.15)}")
room = four.max_concurrency / one.max_concurrency
print("  Both say pipeline stages over PCIe scale throughput almost linearly: a stage hands on one")
print(f"  activation per token, and four times the memory holds {room:.1f} times the sequences. gpusizer")
print("  counts decode steps only (steady state, at most 256 sequences per scheduler); the benchmark's")
print("  larger in-flight batch and its prefill are not modelled, hence the lower absolute figures.")

# %% Source 2: gigagpu.com, 2x and 4x RTX 5090, "tensor parallel", 10 users, 512/256
published = {"fp16": (85, 145, 95), "q4": (105, 180, 115)}  # 2x 5090, 4x 5090, RTX 6000 Pro 96 GB
print("\nSource 2, gigagpu.com (https://gigagpu.com/?p=13153), Llama 3.1 70B, total tok/s at 10 users:")
targets = (("rtx-5090", 2), ("rtx-5090", 4), ("rtx-pro-6000-bw-ws", 1))
for label, weights in (("fp16", "bf16"), ("q4", "int4")):
    predicted = []
    for (gpu, n), value in zip(targets, published[label], strict=True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            e = gpusizer.estimate("llama-3.1-70b", gpu, gpus=n, weights=weights, context=768, concurrency=10)
        rate = e.decode.expected_aggregate_tokens_per_second
        predicted.append(rate if e.fits else None)
        said = verdict(rate, value) if e.fits else (
            f"DISAGREE: does not fit ({-e.memory.headroom_bytes / 1e9:.0f} GB short per GPU), so the row "
            "cannot be what it says")
        print(f"  {label:4s} {n}x {gpu:20s} published {value:4d}, gpusizer {rate:6.0f}: {said}")
    if None not in predicted[:2]:
        print(f"  {label} shape, 4x over 2x: published {published[label][1] / published[label][0]:.2f}x, "
              f"gpusizer {predicted[1] / predicted[0]:.2f}x: "
              f"{verdict(predicted[1] / predicted[0], published[label][1] / published[label][0], 0.15)}")
per_user = [rate / 10 for rate in predicted if rate is not None]
print("  The page contradicts itself (its single-GPU table gives the RTX 6000 Pro 48 tok/s for the same")
print("  70B Q4 at 10 users, lists two 'RTX 5090' columns, and runs 70B Q4 on one 32 GB card); gpusizer")
print(f"  expects {min(per_user):.0f}-{max(per_user):.0f} tok/s per user here, the page implies 10-18.")

# %% Source 3: rtx6kpro, collectives on 8x RTX PRO 6000 behind PCIe 5 switches
device = catalog.gpu("rtx-pro-6000-bw-server")
link = interconnect.link_class(device, 8)
fabric = efficiency.bundled().fabrics[link.fabric]
bus = link.bandwidth * (link.bandwidth_fraction or fabric.bandwidth_fraction)
ring = interconnect.ring_allreduce_seconds(32768, 8, bus, fabric.latency_seconds, link.hop_latency)
custom, _ = interconnect.custom_allreduce("vllm", link, 8)
print("\nSource 3, voipmonitor/rtx6kpro benchmarks/results.md, 8x RTX PRO 6000 (PCIe 5):")
print(f"  NCCL all-reduce, 32 KB: measured 24.5 us, gpusizer ring {ring * 1e6:.0f} us: {verdict(ring, 24.5e-6)}")
print(f"  NCCL bus bandwidth, 32 MB-2 GB: measured 37.6-41.1 GB/s, gpusizer {bus / 1e9:.1f} GB/s: "
      f"{verdict(bus, 39.35e9, 0.1)}")
print(f"  P2P one direction: measured 55-56 GB/s, PCIe 5.0 x16 line rate {link.bandwidth / 1e9:.0f} GB/s")
print("  custom all-reduce on 8 PCIe GPUs: measured 7.5 us at 256 B (patched SGLang on PCIe switches);")
print(f"  gpusizer follows stock vLLM, which disables it beyond two PCIe GPUs (custom = {custom}).")
print("  Our PCIe latency is fitted to 2023 measurements on PCIe 4 servers (A100, A10G); a modern PCIe 5")
print(f"  switch box is about {ring / 24.5e-6:.1f}x quicker per small all-reduce, so gpusizer is pessimistic")
print("  for TP8 on such a box.")
