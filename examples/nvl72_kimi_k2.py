"""A GB200 NVL72 rack for Kimi K2, a 1T-parameter mixture of experts.

Kimi K2 stores about a trillion parameters in FP8 (384 routed experts, 8 per token) and caches one
multi-head-latent-attention (MLA) latent per token and layer. The script sizes it on the
``gb200-nvl72`` system, whose 72 GPUs ``gpusizer.estimate`` uses by default, under vLLM:

* first as plain tensor parallelism over all 72 GPUs, which the library flags (the model's attention
  heads do not divide by 72) and which keeps MLA's latent whole on every GPU (``docs/memory.md``);
* then with the layouts ``gpusizer.best_layout`` ranks for throughput (expert, pipeline and data
  parallelism and their mixes), the best of which is sized in full.

Every number printed comes from the library.

Figures (saved into ``$GPUSIZER_FIGURES``, a temporary folder by default): memory per GPU of each
layout, conversations against context, and throughput against latency.
"""

# %%
import warnings

import numpy as np

import gpusizer
from gpusizer import display, plot


def save(ax, name):
    """Save the figure of ``ax`` into ``$GPUSIZER_FIGURES`` (a temporary folder by default)."""
    print(f"figure: {plot.save(ax, name)}")


MODEL, RACK = "kimi-k2", "gb200-nvl72"
WORKLOAD = {"context": 32768, "concurrency": 64}
print(repr(gpusizer.model(MODEL)))
print(repr(gpusizer.system(RACK)))
print(repr(gpusizer.gpu(gpusizer.system(RACK).gpu)))

# %% Tensor parallel over the whole rack (72 GPUs by default)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    tp = gpusizer.estimate(MODEL, RACK, layout="tp", **WORKLOAD)
for warning in caught:
    print(f"gpusizer warns: {warning.message}")
print(tp)

# %% The layouts that fit, ranked for throughput
choices = gpusizer.best_layout(MODEL, RACK, objective="throughput", **WORKLOAD)
print(f"{len(choices)} layouts of {tp.gpus} GPUs fit; the five best:")
print(display.text_table([vars(c) for c in choices[:5]], [
    display.text_column("layout", "layout"), display.rate_column("tokens_per_second", "decode, all users"),
    display.count_column("concurrency", "users"),
    display.Column("scaling_efficiency", "scaling efficiency at that load"),
    display.bytes_column("weights_bytes", "weights per GPU"), display.bytes_column("headroom_bytes", "headroom"),
    display.text_column("links", "links"),
]))
best = gpusizer.estimate(MODEL, RACK, layout=choices[0].layout, **WORKLOAD)
print(best)

# %% Memory per GPU: tensor parallel and the three best layouts, at 32K tokens x 64 conversations
layouts = [tp] + [gpusizer.estimate(MODEL, RACK, layout=c.layout, **WORKLOAD) for c in choices[:3]]
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the tp72 warning was printed above
    save(plot.memory_breakdown(layouts, labels=[e.parallel.layout for e in layouts]), "nvl72_memory.png")

# %% Conversations against context
contexts = 2 ** np.arange(12, 18)  # 4K to 128K tokens
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    sweeps = [gpusizer.estimate(MODEL, RACK, layout=e.parallel.layout, context=contexts) for e in layouts]
save(plot.concurrency_vs_context(sweeps, labels=[e.parallel.layout for e in layouts]), "nvl72_concurrency.png")

# %% Throughput against time per output token with the best layout, 32K-token conversations
users = np.array([64, 256, 1024, 2048, 4096])
e = gpusizer.estimate(MODEL, RACK, layout=choices[0].layout, context=32768, concurrency=users)
ok = np.asarray(e.fits)
per_gpu = e.decode.expected_aggregate_tokens_per_second[ok] / e.gpus
print(f"{choices[0].layout}: up to {users[ok].max():,} conversations of 32K tokens fit, "
      f"{display.format_rate(per_gpu.max())} per GPU; efficiency constants informed by measurements: "
      f"{e.decode.informed} ({e.decode.constants})")
ax = plot.throughput_vs_latency(e.decode.tpot_seconds_expected[ok], per_gpu, load=users[ok],
                                label=f"{MODEL}, {choices[0].layout} on {e.gpus} x {e.gpu}",
                                throughput_name="decode per GPU")
save(ax, "nvl72_throughput.png")
