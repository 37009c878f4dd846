"""The cheapest hardware that fits, for ten models, from one sweep over the whole GPU catalogue.

``gpusizer.sweep`` evaluates every combination of 10 models x every catalogue GPU x 1, 2, 4 or 8 of
them x 3 weight precisions (the checkpoint's, FP8, INT4) x 6 contexts x 8 concurrencies (about
300,000 configurations) by numpy broadcasting, in well under a second. Each row carries every field
of ``gpusizer.estimate`` plus, with ``prices=True``, the typical price of the GPU-hour from
``gpusizer.cost``'s dated table.

"Cheapest" here is the lowest price per hour of the whole configuration: USD per GPU-hour x GPUs,
among the GPUs that have a price in the table (the others have no cost, so never win). Ties go to
fewer GPUs, then to the smaller memory footprint. Only memory decides whether a configuration
"fits"; the speed columns say how fast it then runs.

Figure (saved into ``$GPUSIZER_FIGURES``, a temporary folder by default): the cheapest price per
hour that fits, against the context at 8 concurrent sequences and against the concurrency at 32K
tokens of context, one line per model.
"""

# %%
import time

import numpy as np

import gpusizer
from gpusizer import plot

MODELS = ["llama-3.1-8b", "mistral-small-24b", "gemma-3-27b", "qwen3-30b-a3b", "qwen3-32b", "llama-3.1-70b",
          "gpt-oss-120b", "llama-4-scout", "qwen3-235b-a22b", "deepseek-v3"]
CONTEXTS = [2048, 8192, 16384, 32768, 65536, 131072]
CONCURRENCY = [1, 2, 4, 8, 16, 32, 64, 128]

# %% One sweep: every catalogue GPU (gpus=None), 1-8 of them, three precisions, the workloads
start = time.perf_counter()
grid = gpusizer.sweep(MODELS, None, weights=[None, "fp8", "int4"], gpu_count=[1, 2, 4, 8], context=CONTEXTS,
                      concurrency=CONCURRENCY, prices=True)
print(f"{grid!r} in {time.perf_counter() - start:.2f} s")

# %% The cheapest configuration that fits each model at 32K tokens x 8 sequences
CHEAPEST = ["usd_per_hour", "gpu_count", "total_bytes"]  # then fewer GPUs, then less memory
fitting = grid.filter(fits=True)
answer = fitting.filter(context=32768, concurrency=8).best(by=CHEAPEST, per="model")
print(f"\n{'model':18} {'configuration':32} {'USD/h':>6} {'decode tok/s':>12} {'USD/Mtok':>9}")
for i in range(len(answer)):
    setup = f"{answer['gpu_count'][i]} x {answer['gpu'][i]}, {answer['weights'][i]}"
    print(f"{answer['model'][i]:18} {setup:32} {answer['usd_per_hour'][i]:6.2f} "
          f"{answer['decode_expected_tokens_per_second'][i]:12.1f} {answer['usd_per_million_tokens'][i]:9.2f}")
missing = sorted(set(MODELS) - set(answer["model"].tolist()))
if missing:
    print(f"no priced configuration of up to 8 GPUs fits: {', '.join(missing)}")

# %% The cheapest price that fits, over the context and over the concurrency
by_context = fitting.filter(concurrency=8).best(by=CHEAPEST, per=["model", "context"])
by_users = fitting.filter(context=32768).best(by=CHEAPEST, per=["model", "concurrency"])

try:
    import matplotlib.pyplot as plt
except ImportError:  # matplotlib is optional (pip install 'gpusizer[plot]')
    plt = None

if plt is not None:
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5), sharey=True)
    for model in MODELS:
        for ax, part, axis in ((left, by_context, "context"), (right, by_users, "concurrency")):
            rows = part.filter(model=model)
            if len(rows):
                order = np.argsort(rows[axis])
                ax.plot(rows[axis][order], rows["usd_per_hour"][order], marker="o", label=model)
    left.set(xscale="log", yscale="log", xlabel="context per sequence [token]", ylabel="cheapest fit [USD/h]",
             title="8 concurrent sequences")
    right.set(xscale="log", xlabel="concurrent sequences", title="32K tokens of context")
    left.set_xticks(CONTEXTS, [f"{c // 1024}K" for c in CONTEXTS])
    right.set_xticks(CONCURRENCY, [str(c) for c in CONCURRENCY])
    right.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1))
    fig.suptitle("Cheapest configuration that fits (USD per GPU-hour x GPUs, vLLM, typical cloud prices)")
    print(f"figure: {plot.save(left, 'sweep_cheapest.png')}")
