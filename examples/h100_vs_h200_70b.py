"""Llama 3.1 70B in FP8: one H200, one H100, or two H100s?

Both are Hopper GPUs; the H200 has more and faster memory (the script prints both from the
catalogue, whose entries carry their sources). The script sizes Llama 3.1 70B with FP8 weights and
an FP8 KV cache under vLLM on each setup: does it fit, how many conversations of 8K and 32K tokens
the KV pool holds, and how fast decode runs as the load grows. Every number printed comes from
``gpusizer.estimate``.

Figures (saved into ``$GPUSIZER_FIGURES``, a temporary folder by default): memory per GPU,
concurrency against context, throughput against latency, and both rooflines with their decode and
prefill operating points.
"""

# %%

import matplotlib.pyplot as plt
import numpy as np

import gpusizer
from gpusizer import display, plot


def save(ax, name):
    """Save the figure of ``ax`` into ``$GPUSIZER_FIGURES`` (a temporary folder by default)."""
    print(f"figure: {plot.save(ax, name)}")


MODEL = "llama-3.1-70b"
PRECISION = {"weights": "fp8", "kv_cache": "fp8"}
SETUPS = [("h100-sxm", 1), ("h200-sxm", 1), ("h100-sxm", 2)]  # (GPU, GPUs in tensor parallel)

for gpu in ("h100-sxm", "h200-sxm"):
    g = gpusizer.gpu(gpu)
    print(f"{g.name}: {display.format_size(g.capacity)} usable, {display.format_bandwidth(g.memory_bandwidth)}")

# %% Fit and capacity at 8K and 32K tokens per conversation
rows = []
for gpu, count in SETUPS:
    for context in (8192, 32768):
        e = gpusizer.estimate(MODEL, gpu, gpus=count, context=context, concurrency=8, **PRECISION)
        rows.append({"setup": f"{count} x {gpu}", "context": context, "fits": e.fits,
                     "weights": e.memory.weights_bytes, "pool": e.kv_pool_bytes, "max": e.max_concurrency,
                     "decode": e.decode.expected_tokens_per_second, "tpot": e.decode.tpot_seconds_expected})
print(display.text_table(rows, [
    display.text_column("setup", "setup"), display.count_column("context", "context", "token"),
    display.Column("fits", "8 fit"), display.bytes_column("weights", "weights per GPU"),
    display.bytes_column("pool", "KV pool per GPU"), display.count_column("max", "conversations"),
    display.rate_column("decode", "decode per user at 8"), display.seconds_column("tpot", "TPOT at 8"),
]))

# %% Memory per GPU at 8K tokens x 8 conversations
at_8k = [gpusizer.estimate(MODEL, gpu, gpus=count, context=8192, concurrency=8, **PRECISION) for gpu, count in SETUPS]
save(plot.memory_breakdown(at_8k, labels=[f"{e.gpus} x {e.gpu}" for e in at_8k]), "h100_vs_h200_memory.png")

# %% Conversations the KV pool holds against the context
contexts = 2 ** np.arange(11, 18)  # 2K to 128K tokens
sweeps = [gpusizer.estimate(MODEL, gpu, gpus=count, context=contexts, **PRECISION) for gpu, count in SETUPS]
save(plot.concurrency_vs_context(sweeps), "h100_vs_h200_concurrency.png")

# %% Throughput against time per output token, 8K-token conversations
users = np.array([1, 2, 4, 8, 16, 32, 64, 128])
ax = None
for gpu, count in SETUPS:
    e = gpusizer.estimate(MODEL, gpu, gpus=count, context=8192, concurrency=users, **PRECISION)
    ok = np.asarray(e.fits)
    if not ok.any():
        print(f"{count} x {gpu}: not even one conversation fits; no curve")
        continue
    per_gpu = e.decode.expected_aggregate_tokens_per_second[ok] / count
    ax = plot.throughput_vs_latency(e.decode.tpot_seconds_expected[ok], per_gpu, load=users[ok],
                                    label=f"{count} x {gpu}", throughput_name="decode per GPU", ax=ax)
    slowest = e.decode.tpot_seconds_expected[ok].max()
    print(f"{count} x {gpu}: up to {users[ok].max()} conversations, "
          f"{display.format_rate(per_gpu.max())} per GPU at TPOT {display.format_seconds(slowest)}")
save(ax, "h100_vs_h200_throughput.png")

# %% Rooflines: decode at 1, 8 and 32 conversations, and the prefill of an 8K prompt
fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
for ax, gpu in zip(axes, ("h100-sxm", "h200-sxm"), strict=True):
    e = gpusizer.estimate(MODEL, gpu, context=8192, concurrency=np.array([1, 8, 32]), prompt=8192, **PRECISION)
    plot.roofline(gpu, [e.decode, e.prefill], compute="fp8", labels=["1, 8, 32 users:", "8K prompt:"], ax=ax)
save(axes[0], "h100_vs_h200_roofline.png")
