"""A GPU buying guide from first principles: six workloads, the cheapest configurations that meet their SLOs.

Buying guides answer "which GPU for which model" with a table: a 7-13B chat model on a 24 GB card, a
70B model on two A100s or one H200, long context on the largest-memory parts. gpusizer answers the
buying question itself, "which configuration serves my traffic within my latency targets at the lowest
cost per token", by sweeping GPU x count x precision (``gpusizer.shortlist``) for each workload.

The guides compared (read on 2026-12-02; their recommendations are quoted as GPU names only):

* [LLMBOOK] "Appendix G.3: choosing hardware", http://llmbook.apartsin.com/appendices/appendix-g-hardware-compute/section-g.3.html
  (inference table): 7B-8B 4-bit on "any consumer GPU (RTX 3060 12GB+), L40S"; 7B-8B BF16 on "RTX 4090,
  L40S, A100"; 13B-14B 4-bit on "RTX 4080+, L40S"; 70B 4-bit on "1x A100 80GB, 1x H100, 1x MI300X";
  70B BF16 on "2x A100, 1x H200, 1x MI300X".
* [GMI] "Which GPUs are best optimized for LLM inference workloads", GMI Cloud,
  https://www.gmicloud.ai/en/blog/which-gpus-are-best-optimized-for-llm-inference-workloads :
  H100 for 7B-34B (FP8/INT8), H200 for 34B-70B+ and 32K-128K contexts, B200 for 100B-200B+.

Our numbers: expected speeds from the fitted efficiencies, prices the typical of ``data/prices.toml``
(dated quotes; pass your own with ``prices=``), and the three cheapest rows of each answer re-solved
with the discrete-event simulation. The verdict lines compare the guides' picks with the shortlist.
"""

# %%
import math

import gpusizer
from gpusizer import SLO, Workload

SCENARIOS = [
    # name, model, workload, SLO, sweep options, the guides' picks as (source, [(gpu, gpus, weights)])
    ("7-13B chat", "llama-3.1-8b",
     Workload(rate=10, prompt_tokens=1024, output_tokens=256), SLO(ttft_p95=0.5, tpot_p95=0.05),
     dict(max_gpus=2),
     [("LLMBOOK", [("rtx-4090", 1, "bf16"), ("l40s", 1, "bf16"), ("a100-80gb-sxm", 1, "bf16")]),
      ("GMI", [("h100-sxm", 1, "fp8")])]),
    ("30B chat", "qwen3-32b",
     Workload(rate=3, prompt_tokens=2048, output_tokens=512), SLO(ttft_p95=0.5, tpot_p95=0.05),
     dict(max_gpus=4), [("GMI", [("h100-sxm", 1, "fp8")])]),
    ("70B chat", "llama-3.1-70b",
     Workload(rate=5, prompt_tokens=2048, output_tokens=512), SLO(ttft_p95=0.5, tpot_p95=0.05),
     dict(max_gpus=8),
     [("LLMBOOK", [("a100-80gb-sxm", 1, "int4"), ("h100-sxm", 1, "int4"), ("mi300x", 1, "int4"),
                   ("a100-80gb-sxm", 2, "bf16"), ("h200-sxm", 1, "bf16"), ("mi300x", 1, "bf16")]),
      ("GMI", [("h200-sxm", 1, "fp8")])]),
    ("long-context RAG", "llama-3.1-8b",
     Workload(rate=1, prompt_tokens=32768, output_tokens=512), SLO(ttft_p95=3.0, tpot_p95=0.05),
     dict(max_gpus=4), [("GMI", [("h200-sxm", 1, "fp8")])]),
    ("batch / offline", "llama-3.1-8b",
     Workload(rate=50, prompt_tokens=1024, output_tokens=512), SLO(e2e_p95=600.0),
     dict(max_gpus=8),
     [("LLMBOOK", [("rtx-4090", 1, "bf16"), ("l40s", 1, "bf16"), ("a100-80gb-sxm", 1, "bf16")])]),
    ("local, one user", "llama-3.1-8b",
     Workload(rate=0.02, prompt_tokens=1024, output_tokens=512), SLO(ttft_p95=2.0, tpot_p95=0.1),
     dict(max_gpus=1, gpus=["rtx-3090", "rtx-4090", "rtx-5090", "l4"], weights=["q4_k_m", "q8_0"],
          engine="llama.cpp"),
     [("LLMBOOK", [("rtx-3090", 1, "q4_k_m"), ("rtx-4090", 1, "q4_k_m")])]),
]


def describe(row):
    """One line per shortlisted configuration."""
    low, high = row.usd_per_million_tokens_band
    return (f"  {row.configuration:<24} {row.max_rate:7.2f} req/s per replica x{row.replicas:<3} "
            f"${row.usd_per_million_tokens:6.3f}/Mtok ({low:.3f}-{high:.3f})  {row.joules_per_token:5.2f} J/tok  "
            f"{row.bottleneck}")


def verdict(table, picks):
    """Where each guide's pick lands in our ranking, and how its cost compares with our cheapest row."""
    ranked = {(row.gpu, row.gpus, row.weights): (i + 1, row) for i, row in reversed(list(enumerate(table.rows)))}
    best = table.rows[0].usd_per_million_tokens if table.rows else math.nan
    lines = []
    for source, configurations in picks:
        for gpu, count, weights in configurations:
            label = f"[{source}] {count} x {gpu} {weights}"
            if (gpu, count, weights) in ranked:
                rank, row = ranked[(gpu, count, weights)]
                ratio = row.usd_per_million_tokens / best
                word = "agrees" if ratio <= 1.25 else "meets the SLO, at a higher cost per token"
                lines.append(f"  {label}: {word}: rank {rank} of {len(table.rows)}, {ratio:.2f}x our cheapest")
            else:
                why = next((d.reason for d in table.dropped
                            if (d.gpu, d.gpus, d.weights) == (gpu, count, weights)), "not in the sweep")
                lines.append(f"  {label}: disagrees: {why}")
    return lines


# %%
for name, model, workload, slo, options, picks in SCENARIOS:
    table = gpusizer.shortlist(model, workload, slo, simulate=1, requests=800, **options)
    print(f"== {name}: {model}, {workload.rate:g} req/s, {workload.prompt_tokens:,.0f} + "
          f"{workload.output_tokens:,.0f} tokens ==")
    for row in table.rows[:3]:
        print(describe(row))
    if not table.rows:
        print("  no configuration meets the targets")
    print("\n".join(verdict(table, picks)))
    print()

# %% [markdown]
# Reading the verdicts. The guides size by memory alone ("does it fit"); the shortlist also asks whether
# the configuration meets the latency targets at the traffic, and what a million tokens cost once
# replicas are counted. Where they agree, the guide's card both fits and is among the cheapest. Where
# they disagree, the line says why: a card that fits may miss the TTFT target on long prompts (prefill
# is compute-bound), or be dearer per token than a smaller-memory card in FP8 that batches more
# requests, or not fit at all once the KV cache of the traffic is counted.
