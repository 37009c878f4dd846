"""Choosing a card for a 30B model: GeForce RTX 4090, RTX 5090 or RTX PRO 6000 Blackwell?

Qwen3-30B-A3B (30.5B parameters, a mixture of experts with 3.3B active per token) served by vLLM
at 32K tokens of context. For each card the script asks gpusizer which weight precision fits, how
many 32K-token conversations the KV pool then holds, how fast one of them decodes, and what one
million output tokens cost in GPU-hours at a given time-per-output-token target. Every number
printed comes from ``gpusizer.estimate``; multiply GPU-hours by your own price per GPU-hour.

Figures (saved into ``$GPUSIZER_FIGURES``, a temporary folder by default): memory per GPU, the
concurrency each card holds against the context, throughput against latency, and cost against the
latency target.
"""

# %%

import numpy as np

import gpusizer
from gpusizer import display, plot


def save(ax, name):
    """Save the figure of ``ax`` into ``$GPUSIZER_FIGURES`` (a temporary folder by default)."""
    print(f"figure: {plot.save(ax, name)}")


MODEL = "qwen3-30b-a3b"
CARDS = ["rtx-4090", "rtx-5090", "rtx-pro-6000-bw-ws"]
PRECISIONS = ["bf16", "fp8", "int4"]  # best quality first; int4 is AWQ/GPTQ with group size 128
CONTEXT = 32768

# %% Which precision fits on which card, at 32K tokens x 1 conversation
rows = []
for card in CARDS:
    for weights in PRECISIONS:
        e = gpusizer.estimate(MODEL, card, weights=weights, context=CONTEXT, concurrency=1)
        rows.append({"card": card, "weights": weights, "fits": e.fits, "weights_bytes": e.memory.weights_bytes,
                     "max_concurrency": e.max_concurrency, "max_context": e.max_context,
                     "decode": e.decode.expected_tokens_per_second, "ttft": e.prefill.ttft_seconds_expected,
                     "estimate": e})
print(display.text_table(rows, [
    display.text_column("card", "card"), display.text_column("weights", "weights"), display.Column("fits", "fits"),
    display.bytes_column("weights_bytes", "weights"), display.count_column("max_concurrency", "32K conversations"),
    display.count_column("max_context", "max context, 1 user", "token"),
    display.rate_column("decode", "decode per user"), display.seconds_column("ttft", "TTFT of a 32K prompt"),
]))

# %% The best precision that fits on each card
best = {}
for card in CARDS:
    fitting = [r["estimate"] for r in rows if r["card"] == card and r["fits"]]
    if fitting:
        best[card] = fitting[0]
    else:
        print(f"{card}: no precision of {', '.join(PRECISIONS)} fits {CONTEXT:,} tokens")
for card, e in best.items():
    print(f"{card}: {e.weights} weights fit; {e.max_concurrency} conversations of {CONTEXT:,} tokens, "
          f"{display.format_rate(e.decode.expected_tokens_per_second)} per user")
# A card with no fitting precision is shown with int4, to show by how much it misses.
shown = [best.get(card) or gpusizer.estimate(MODEL, card, weights="int4", context=CONTEXT) for card in CARDS]
save(plot.memory_breakdown(shown, labels=[f"{e.gpu}\n{e.weights}" for e in shown]), "choose_30b_memory.png")

# %% Concurrency against context, with the precision chosen above
contexts = np.array([2048, 4096, 8192, 16384, 32768, 40960])  # 40,960 is the model's maximum
sweeps = [gpusizer.estimate(MODEL, e.gpu, weights=e.weights, context=contexts) for e in shown]
save(plot.concurrency_vs_context(sweeps), "choose_30b_concurrency.png")

# %% Throughput against time per output token as conversations are added (8K tokens each)
users = np.array([1, 2, 4, 8, 16, 32, 64])
ax = None
load = {}
for e in shown:
    sweep = gpusizer.estimate(MODEL, e.gpu, weights=e.weights, context=8192, concurrency=users)
    ok = np.asarray(sweep.fits)
    load[e.gpu] = sweep
    ax = plot.throughput_vs_latency(sweep.decode.tpot_seconds_expected[ok],
                                    sweep.decode.expected_aggregate_tokens_per_second[ok], load=users[ok],
                                    label=f"{e.gpu} ({e.weights})", throughput_name="aggregate decode", ax=ax)
save(ax, "choose_30b_throughput.png")

# %% GPU-hours per million output tokens at each TPOT target
targets = np.array([0.010, 0.015, 0.020, 0.030, 0.050])  # [s]
cost = {}
for card, sweep in load.items():
    tpot, rate = sweep.decode.tpot_seconds_expected, sweep.decode.expected_aggregate_tokens_per_second
    # The fastest load that fits and meets each target, and the GPU-hours per Mtok at that load.
    meets = (tpot[None, :] <= targets[:, None]) & np.asarray(sweep.fits)[None, :]
    best_rate = np.max(np.where(meets, rate[None, :], 0.0), axis=1)
    cost[f"{card} {best[card].weights if card in best else 'int4'}"] = np.where(
        best_rate > 0, 1e6 / 3600 / np.maximum(best_rate, 1e-9), np.nan)
# The cards do not run one precision: each runs the best that fits it (the column names it), so a cheaper
# column may be buying speed with int4's lower quality, not only with a better card.
print("each card at the best precision that fits it: " + ", ".join(cost))
print(display.text_table(
    [{"target": t, **{card: c[i] for card, c in cost.items()}} for i, t in enumerate(targets)],
    [display.seconds_column("target", "TPOT target"),
     *(display.Column(card, card, "GPU-h/Mtok", 1, ".2f") for card in cost)],
))
save(plot.cost_vs_slo(targets, cost, unit="GPU-h/Mtok"), "choose_30b_cost.png")  # legend: card and precision
