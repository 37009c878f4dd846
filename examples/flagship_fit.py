"""Does Llama 3.1 70B in FP8 fit on one H200 at 32K context x 16 concurrent requests?

The flagship question, answered twice: once by hand from the architecture and the datasheet, once by
``gpusizer.estimate``; the script stops with an error if the two disagree.
"""

# %%


import gpusizer
from gpusizer import plot

model = gpusizer.model("llama-3.1-70b")
gpu = gpusizer.gpu("h200")
context, users = 32 * 1024, 16
GiB = 2**30

# %% Hand calculation
# Weights: every decoder linear layer in FP8 (1 byte + an FP32 scale per 128x128 block); the
# embedding, LM head and norms stay BF16, as in published FP8 checkpoints.
d, layers, vocab, ffn = model.hidden_size, model.num_layers, model.vocab_size, model.intermediate_size
heads, kv_heads, head_dim = model.num_heads, model.num_kv_heads, model.head_dim
attention = d * heads * head_dim + 2 * d * kv_heads * head_dim + heads * head_dim * d
mlp = 3 * d * ffn
linear = layers * (attention + mlp)
norms = (2 * layers + 1) * d
weights = linear * (1 + 4 / (128 * 128)) + (2 * vocab * d + norms) * 2
# KV cache: keys and values, every layer, every KV head, one byte each in FP8.
kv_per_token = 2 * layers * kv_heads * head_dim * 1
kv = kv_per_token * context * users
# vLLM: 0.9 of the memory torch reports; activation peak: the larger of the 8192-token profile pass and
# the dummy sampler run after it (256 requests x vocab, four float32 copies); 0.2 GiB non-torch memory
# and 0.3 GiB of CUDA graphs.
budget = 0.9 * gpu.capacity
activation = max(8192 * (3 * ffn + 3 * d) * 2, 16 * 256 * vocab)
runtime = 0.5 * GiB
pool = budget - weights - activation - runtime
hand = {
    "weights": weights,
    "kv_cache": kv,
    "activation": activation,
    "runtime": runtime,
    "headroom": pool - kv,
    "max_concurrency": int(pool // (kv_per_token * context)),
}

# %% The library
e = gpusizer.estimate(model, gpu, weights="fp8", kv_cache="fp8", context=context, concurrency=users)
library = {
    "weights": e.memory.weights_bytes,
    "kv_cache": e.memory.kv_cache_bytes,
    "activation": e.memory.activation_bytes,
    "runtime": e.memory.runtime_bytes,
    "headroom": e.memory.headroom_bytes,
    "max_concurrency": e.max_concurrency,
}
print(f"{'':16}{'by hand':>14}{'gpusizer':>14}   [GB]")
for key in hand:
    scale = 1 if key == "max_concurrency" else 1e9
    print(f"{key:16}{hand[key] / scale:14.3f}{library[key] / scale:14.3f}")
    if abs(hand[key] - library[key]) > 1e-6 * max(abs(hand[key]), 1):
        raise SystemExit(f"{key}: hand {hand[key]} != library {library[key]}")

verdict = "fits" if e.fits else "does not fit"
print(f"\n{model.id} FP8 on one {gpu.name} at {context:,} x {users}: {verdict}; "
      f"{e.max_concurrency} sequences of {context:,} tokens fit, or {users} of up to {e.max_context:,} tokens.")

# %% Figure: the breakdown against the H200's capacity, on one GPU and on two in tensor parallel
two = gpusizer.estimate(model, gpu, weights="fp8", kv_cache="fp8", context=context, concurrency=users, gpus=2)
ax = plot.memory_breakdown([e, two], labels=[f"1 x {gpu.name}", f"2 x {gpu.name}"])
print(f"figure: {plot.save(ax, 'flagship_memory.png')}")
