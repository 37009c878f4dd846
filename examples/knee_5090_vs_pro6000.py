"""RTX 5090 or RTX PRO 6000 Blackwell for a 30B coding model at 16 users: where does latency bend?

Qwen3-30B-A3B (the catalogue's 30B mixture of experts, 3.3B active per token; Qwen3-Coder-30B-A3B is
built on it) served by vLLM, coding-assistant requests of 2K prompt and 256 output tokens, targets TTFT
p95 <= 1 s and TPOT p95 <= 50 ms. For each card the script picks the best precision that fits 16
conversations, draws the load curve (``gpusizer.serving.load_curve``: throughput and TTFT/TPOT
p50/p95/p99 against requests in flight), reports the knee (where one more user adds less than half an
idle user's throughput) and the most users within the targets, and compares the engines on the card
that wins (``gpusizer.comparison.compare_engines``). Every number printed comes from gpusizer.

Figures (saved into ``$GPUSIZER_FIGURES``): the load curve of each card with its SLO lines.
"""

# %%

import gpusizer
from gpusizer import comparison, plot
from gpusizer.serving import SLO, Workload
from gpusizer.serving.load_curve import load_curve

MODEL = "qwen3-30b-a3b"
CARDS = ["rtx-5090", "rtx-pro-6000-bw-ws"]
USERS = 16
WORKLOAD = Workload(rate=1, prompt_tokens=2048, output_tokens=256)
TARGETS = SLO(ttft_p95=1.0, tpot_p95=0.05)


def best_precision(card):
    """The highest-quality weight precision whose 16 conversations of prompt + output fit on ``card``."""
    for weights in ("bf16", "fp8", "int4"):
        e = gpusizer.estimate(MODEL, card, weights=weights, context=2048 + 256, concurrency=USERS)
        if e.fits:
            return weights
    return None


# %% The load curve of each card
answers = {}
for card in CARDS:
    weights = best_precision(card)
    if weights is None:
        print(f"{card}: {USERS} conversations do not fit at any precision")
        continue
    curve = load_curve(MODEL, card, workload=WORKLOAD, slo=TARGETS, weights=weights,
                       concurrency=[1, 2, 4, 8, 16, 32, 64, 128])
    at_users = next(p for p in curve.points if p.concurrency == USERS)
    answers[card] = curve
    print(f"{card} ({weights}): knee at {curve.knee_concurrency:.1f} users ({curve.knee_tokens_per_second:,.0f} "
          f"output tok/s); within the targets up to {curve.slo_concurrency:.1f} users ({curve.slo_binding} binds); "
          f"at {USERS} users TTFT p95 {at_users.ttft.p95 * 1e3:.0f} ms, TPOT p95 {at_users.tpot.p95 * 1e3:.1f} ms, "
          f"{'meets' if at_users.meets_slo else 'misses'} the targets")
    # Cost of ownership (issue #19 item 2) hooks in here: GPU-hours per million output tokens at the knee,
    # times an hourly cost of the card, is the cost per million tokens served at the knee.
    print(f"  GPU-hours per million output tokens at the knee: {1e6 / curve.knee_tokens_per_second / 3600:.3f}")
    top, _ = plot.load_curve(curve)
    print(f"figure: {plot.save(top, f'load_curve_{card}.png')}")

# %% The answer, and the engines on the card with the most users within the targets
best = max(answers, key=lambda card: answers[card].slo_concurrency or 0)
print(f"\nfor {USERS} users: {best} serves up to {answers[best].slo_concurrency:.0f} users within the targets")
for row in comparison.compare_engines(MODEL, best, engine_names=("vllm", "sglang", "trtllm", "llama.cpp"),
                                      context=2048 + 256, concurrency=USERS, weights=answers[best].weights):
    print(f"  {row.engine:9s} KV pool {row.kv_pool_bytes / 2**30:5.1f} GiB = {row.max_concurrency:4.0f} sequences, "
          f"{row.concurrency:3.0f} running at {row.decode_tokens_per_second:6,.0f} tok/s; {'; '.join(row.reasons[:2])}")
