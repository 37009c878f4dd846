"""Sizing your own checkpoint: a fine-tune the catalogue does not know, read from its folder.

The script writes a small checkpoint folder (``config.json`` of a Qwen2.5-7B-style fine-tune
quantized with AWQ, plus the ``model.safetensors.index.json`` a real upload would carry), then sizes
it exactly as ``gpusizer fit ./my-finetune/ l40s`` would. Nothing in the folder is executed.
"""

# %%
import json
import tempfile
from pathlib import Path

import gpusizer
from gpusizer import architecture, hf
from gpusizer.cli import main

config = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "num_hidden_layers": 28,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "vocab_size": 152064,
    "max_position_embeddings": 32768,
    "tie_word_embeddings": False,
    "torch_dtype": "float16",
    "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True},
    "auto_map": {"AutoModelForCausalLM": "modeling_evil.Model"},  # ignored: never imported or run
}

folder = Path(tempfile.mkdtemp()) / "my-finetune"
folder.mkdir()
(folder / "config.json").write_text(json.dumps(config))
# A real upload's index holds the exact stored bytes; the figure here is a stand-in for the demo.
(folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 5_547_073_024}}))

# %% Import and check the architecture against the catalogue's Qwen2.5-7B
record = hf.from_hf_config(folder)
counts = architecture.parameter_counts(record)
print(f"{record.id}: {counts.total / 1e9:.2f}B parameters, weights {record.weights}")
assert counts.total == architecture.parameter_counts(gpusizer.model("qwen2.5-7b")).total  # same shape as the base model
assert record.weights == "int4"

# %% Stored bytes: computed from the architecture, beside what the index says
e = gpusizer.estimate(record, "l40s", context=16384, concurrency=8)
stored = hf.checkpoint_bytes(folder)
print(f"computed weights {e.memory.weights_bytes / 1e9:.2f} GB; checkpoint index says {stored / 1e9:.2f} GB")
print(f"fits on one L40S at 16K x 8: {e.fits}; KV pool holds {e.max_concurrency} sequences of 16K")

# %% The same from the command line
main(["fit", str(folder), "l40s", "--context", "16k", "--concurrency", "8"])
