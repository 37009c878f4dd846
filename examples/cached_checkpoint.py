"""Sizing a model from the Hugging Face cache, offline, with the bytes its safetensors headers declare.

The script builds a small cache in a temporary folder, in the layout huggingface_hub writes
(``models--ORG--NAME/refs/main`` -> ``snapshots/HASH/`` -> symlinks into ``blobs/``), holding a tiny
AWQ-quantised Llama written with the safetensors library (``pip install safetensors``; gpusizer itself
reads the headers without it). It then sizes the repo id exactly as ``gpusizer fit ORG/NAME GPU`` would
with ``HF_HUB_CACHE`` pointing there. Nothing is downloaded.
"""

# %%
import json
import os
import tempfile
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

from gpusizer import hf
from gpusizer.cli import main

config = {
    "model_type": "llama", "hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "intermediate_size": 256, "vocab_size": 512, "max_position_embeddings": 4096,
    "tie_word_embeddings": False, "torch_dtype": "float16",
    "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True},
}
tensors = {"model.embed_tokens.weight": np.zeros((512, 128), np.float16),
           "lm_head.weight": np.zeros((512, 128), np.float16), "model.norm.weight": np.zeros(128, np.float16)}
linears = {"self_attn.q_proj": (128, 128), "self_attn.k_proj": (64, 128), "self_attn.v_proj": (64, 128),
           "self_attn.o_proj": (128, 128), "mlp.gate_proj": (256, 128), "mlp.up_proj": (256, 128),
           "mlp.down_proj": (128, 256)}  # (out, in)
for layer in range(2):
    prefix = f"model.layers.{layer}."
    for name, (out, inp) in linears.items():
        # AutoAWQ's layout: 8 4-bit values per int32, one F16 scale and one 4-bit zero per 128 inputs
        tensors[prefix + name + ".qweight"] = np.zeros((inp, out // 8), np.int32)
        tensors[prefix + name + ".qzeros"] = np.zeros((inp // 128, out // 8), np.int32)
        tensors[prefix + name + ".scales"] = np.zeros((inp // 128, out), np.float16)
    for norm in ("input_layernorm", "post_attention_layernorm"):
        tensors[prefix + norm + ".weight"] = np.zeros(128, np.float16)

# %% The cache, as huggingface_hub lays it out
cache = Path(tempfile.mkdtemp()) / "hub"
repo = cache / "models--tiny-org--Tiny-Llama-AWQ"
commit = "4f1c2b7e9d0a3c5b8e6f1a2d4c7b9e0f3a5d8c1b"
snapshot = repo / "snapshots" / commit
for folder in (repo / "blobs", repo / "refs", snapshot):
    folder.mkdir(parents=True)
(repo / "refs" / "main").write_text(commit)
(repo / "blobs" / "config-blob").write_text(json.dumps(config))
save_file(tensors, str(repo / "blobs" / "weights-blob"))
os.symlink("../../blobs/config-blob", snapshot / "config.json")
os.symlink("../../blobs/weights-blob", snapshot / "model.safetensors")
os.environ["HF_HUB_CACHE"] = str(cache)

# %% What the headers say: bytes by dtype, and the weights kept in 16-bit
found = hf.read_checkpoint(hf.snapshot_folder("tiny-org/Tiny-Llama-AWQ"))
print(f"{len(found.tensors)} tensors, {found.total_bytes:,} bytes: {found.bytes_by_dtype}")
print(f"kept in 16-bit: {hf.kept_16bit(found)}")

# %% The same from the command line: the repo id is resolved in the cache
main(["fit", "tiny-org/Tiny-Llama-AWQ", "l4"])
