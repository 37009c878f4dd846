"""Long-context RAG on one H100: how many 128K-token conversations fit, and how long the first token takes.

Retrieval-augmented generation sends long prompts (retrieved documents) and gets short answers, so
the KV cache and the prefill dominate. Three architectures with a 128K context are compared on one
H100 SXM under vLLM, each with a BF16 and an FP8 KV cache:

* Llama 3.1 8B: every layer attends to the whole context (grouped-query attention);
* Gemma 3 12B: most layers are sliding-window layers, which cache at most their window;
* Nemotron 3 Nano 30B-A3B: a hybrid whose Mamba-2 layers keep a fixed state per sequence.

The layer kinds come from the catalogue; every number printed comes from ``gpusizer.estimate``.

Figures (saved into ``$GPUSIZER_FIGURES``, a temporary folder by default): conversations against
context, time to first token against prompt length, and memory per GPU at 128K x 4 conversations.
"""

# %%

import matplotlib.pyplot as plt
import numpy as np

import gpusizer
from gpusizer import display, plot


def save(ax, name):
    """Save the figure of ``ax`` into ``$GPUSIZER_FIGURES`` (a temporary folder by default)."""
    print(f"figure: {plot.save(ax, name)}")


GPU = "h100-sxm"
MODELS = ["llama-3.1-8b", "gemma-3-12b", "nemotron-3-nano-30b-a3b"]
KV_CACHES = ["bf16", "fp8"]
CONTEXT = 131072  # retrieved documents + question + answer [token]
ANSWER = 1024  # [token]

for name in MODELS:
    m = gpusizer.model(name)
    kinds = {kind if kind != "none" else "FFN-only": m.layers.count(kind) for kind in sorted(set(m.layers))}
    window = f", window {m.sliding_window:,} tokens" if m.sliding_window else ""
    print(f"{m.id}: {m.num_layers} layers ({', '.join(f'{n} {k}' for k, n in kinds.items())}){window}; "
          f"max context {m.max_context:,}")

# %% 128K-token conversations: KV per conversation, how many fit, TTFT, decode under that load
rows = []
for name in MODELS:
    for kv in KV_CACHES:
        one = gpusizer.estimate(name, GPU, kv_cache=kv, context=CONTEXT, prompt=CONTEXT - ANSWER)
        full = gpusizer.estimate(name, GPU, kv_cache=kv, context=CONTEXT, concurrency=max(one.max_concurrency, 1))
        rows.append({"model": name, "kv": kv, "per_conversation": one.memory.kv_cache_bytes,
                     "fit": one.max_concurrency, "ttft": one.prefill.ttft_seconds_expected,
                     "decode": full.decode.expected_tokens_per_second if full.fits else np.nan})
print(display.text_table(rows, [
    display.text_column("model", "model"), display.text_column("kv", "KV cache"),
    display.bytes_column("per_conversation", "KV per 128K conversation"),
    display.count_column("fit", "conversations that fit"), display.seconds_column("ttft", "TTFT of a 127K prompt"),
    display.rate_column("decode", "decode per user, all of them"),
]))

# %% Conversations against context, FP8 KV cache
contexts = 2 ** np.arange(12, 18)  # 4K to 128K tokens
sweeps = [gpusizer.estimate(name, GPU, kv_cache="fp8", context=contexts) for name in MODELS]
save(plot.concurrency_vs_context(sweeps), "long_context_concurrency.png")

# %% Time to first token against prompt length (idle engine), with the p10-p90 band
prompts = np.array([4096, 8192, 16384, 32768, 65536, 130048])
fig, ax = plt.subplots(figsize=(7, 4.5))
for index, name in enumerate(MODELS):
    e = gpusizer.estimate(name, GPU, kv_cache="fp8", context=CONTEXT, prompt=prompts)
    p = e.prefill
    ax.plot(prompts, p.ttft_seconds_expected, marker="o", color=f"C{index}", label=name)
    ax.fill_between(prompts, p.ttft_band[0], p.ttft_band[1], color=f"C{index}", alpha=0.15)
    print(f"{name}: TTFT {display.format_seconds(p.ttft_seconds_expected[0])} at {prompts[0]:,} tokens, "
          f"{display.format_seconds(p.ttft_seconds_expected[-1])} at {prompts[-1]:,} tokens")
ax.set(xscale="log", yscale="log", xlabel="prompt [token]", ylabel="time to first token [s]",
       title=f"Time to first token on one {gpusizer.gpu(GPU).name} (idle engine)")
ax.grid(True, which="both", lw=0.3)
ax.legend(fontsize=7)
save(ax, "long_context_ttft.png")

# %% Memory per GPU at 128K tokens x 4 conversations
at_128k = [gpusizer.estimate(name, GPU, kv_cache=kv, context=CONTEXT, concurrency=4)
           for name in MODELS for kv in KV_CACHES]
labels = [f"{e.model}\nKV {e.kv_cache}" for e in at_128k]
ax = plot.memory_breakdown(at_128k, labels=labels)
ax.tick_params(axis="x", labelrotation=30)
save(ax, "long_context_memory.png")
