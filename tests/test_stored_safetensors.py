"""Issue 21, item 2: a safetensors checkpoint's weights counted as stored, through the path GGUF files take.

The checkpoints are written with ``safetensors.numpy.save_file`` (``test_checkpoint_files`` has the writers);
every byte count is derived by hand in the comments.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors.numpy import save_file
from test_checkpoint_files import TINY, TINY_BYTES, run, tiny_tensors, write_awq, write_tiny

from gpusizer import estimate, hf, parallel, precision, unpack
from gpusizer.commands import model_argument

# write_awq (hidden 128, 2 layers, FFN 256, vocab 512, AWQ 4-bit group 128), by part (test_checkpoint_files):
#   linears 153,216 B (I*O*133/256 over 294,912 weights) and norms 5 x 128 x 2 = 1,280 B, all replicated;
#   embedding and head 512 x 128 x 2 = 131,072 B each in F16. Total 416,640.
AWQ_LAYERS, AWQ_REPLICATED, AWQ_TABLE = 153_216 + 1_280, 1_280, 131_072
AWQ_TOTAL = AWQ_LAYERS + 2 * AWQ_TABLE


def test_the_tensors_of_a_tiny_checkpoint_are_classified_by_name(tmp_path: Path) -> None:
    record, _ = model_argument.resolve_model(str(write_tiny(tmp_path / "tiny")))
    s = record.stored_weights
    # F16: embedding and head 256 x 64 x 2 = 32,768 B each; layers 2 x 36,992 + 64 (final norm) params x 2 B
    # = 148,096 B, of which the 2 x 2 + 1 norms of 64 are replicated: 640 B
    assert s is not None and (s.layers, s.replicated, s.experts, s.embedding, s.head) == (148_096, 640, 0, 32_768,
                                                                                       32_768)
    assert s.by_type == (("F16", TINY_BYTES),) and s.layers + s.embedding + s.head == TINY_BYTES


def test_fit_sizes_the_weights_from_the_stored_bytes_not_the_config(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    folder = write_tiny(tmp_path / "extra", {"model.extra.weight": np.zeros((64, 64), np.float16)})
    status, out, err = run(capsys, "fit", str(folder), "h100", "--json")
    data = json.loads(out)
    # the config implies 213,632 B; the files hold 64 x 64 x 2 = 8,192 B more, which the estimate now sizes
    assert status == 0 and data["memory"]["weights_bytes"] == TINY_BYTES + 8_192 == 221_824
    assert data["stored_weights"]["used"] is True and data["stored_weights"]["layers_bytes"] == 148_096 + 8_192
    assert data["checkpoint"]["computed_bytes"] == TINY_BYTES and "memory is sized from the tensors as stored" in err
    # another precision is counted from the config: fp8 weights 8 + 32/16,384 bits (an F32 scale per 128 x 128
    # block) per linear parameter, 73,728 x (1 + 1/4,096) = 73,746 B, the embedding and head in F16 (65,536)
    # and the 5 norms of 64 in F16 (640): 139,922 B
    status, out, _ = run(capsys, "fit", str(folder), "h100", "--weights", "fp8", "--json")
    data = json.loads(out)
    assert status == 0 and data["stored_weights"]["used"] is False and data["memory"]["weights_bytes"] == 139_922
    status, out, _ = run(capsys, "fit", str(folder), "h100", "--weights", "fp8")
    assert "(not used: --weights sizes another precision)" in out


def test_a_quantised_checkpoint_weighs_what_its_tensors_store(tmp_path: Path) -> None:
    record, _ = model_argument.resolve_model(str(write_awq(tmp_path / "awq")))
    s = record.stored_weights
    assert s is not None and (s.layers, s.replicated, s.embedding, s.head) == (AWQ_LAYERS, AWQ_REPLICATED,
                                                                                AWQ_TABLE, AWQ_TABLE)
    assert dict(s.by_type) == {"F16": 4_608 + 262_144 + 1_280, "I32": 148_608}  # scales, tables, norms; packed ints
    e = estimate(record, "h100", context=1024)
    assert record.weights == "int4" and e.memory.weights_bytes == AWQ_TOTAL == 416_640
    f = unpack.model_numbers(record, "int4", None, "fp16")
    assert (f.stored_bytes, f.dense_bytes, f.streamed_head_bytes) == (AWQ_TOTAL, AWQ_LAYERS, AWQ_TABLE)


def test_tensor_parallelism_splits_the_matrices_and_replicates_the_vectors(tmp_path: Path) -> None:
    record, _ = model_argument.resolve_model(str(write_awq(tmp_path / "awq")))
    e = estimate(record, "h100", gpus=2, layout="tp2", context=1024)
    # (154,496 - 1,280) / 2 + 1,280 replicated + (131,072 + 131,072) / 2 vocabulary-parallel = 208,960 B
    assert e.memory.weights_bytes == (AWQ_LAYERS - AWQ_REPLICATED) / 2 + AWQ_REPLICATED + AWQ_TABLE == 208_960
    parts = parallel.weight_parts(record, "int4")
    assert tuple(parts) == (AWQ_LAYERS, AWQ_REPLICATED, 0.0, AWQ_TABLE, AWQ_TABLE)


def test_undeclared_16_bit_attention_is_named_and_counted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = write_awq(tmp_path / "awq")
    config = json.loads((folder / "config.json").read_text())
    arrays = {}
    for name, shape in tiny_tensors(hidden=128, kv=64, ffn=256, vocab=512).items():
        stem = name.removesuffix(".weight")
        if len(shape) == 1 or not name.startswith("model.layers.") or ".self_attn." in name:
            arrays[name] = np.zeros(shape, np.float16)  # attention kept in F16 without a word in the config
            continue
        out, inp = shape
        arrays |= {stem + ".qweight": np.zeros((inp, out // 8), np.int32),
                   stem + ".qzeros": np.zeros((inp // 128, out // 8), np.int32),
                   stem + ".scales": np.zeros((inp // 128, out), np.float16)}
    save_file(arrays, str(folder / "model.safetensors"))
    assert "modules_to_not_convert" not in config["quantization_config"]
    record, _ = model_argument.resolve_model(str(folder))
    assert record.unquantized_roles == ("attention",) and "attention in every layer in 16-bit" in record.notes
    # attention per layer q, o 128 x 128 + k, v 64 x 128 = 49,152 params x 2 B x 2 layers = 196,608 B in F16;
    # the FFN 3 x 256 x 128 x 2 layers = 196,608 weights x 133/256 = 102,144 B; norms, tables 263,424 B
    assert record.stored_weights is not None and record.stored_weights.layers == 196_608 + 102_144 + 1_280
    status, out, _ = run(capsys, "fit", str(folder), "h100", "--json")
    data = json.loads(out)
    assert status == 0 and data["checkpoint"]["undeclared_16bit"] == {"roles": ["attention"], "layers": []}
    assert data["memory"]["weights_bytes"] == 196_608 + 102_144 + 1_280 + 2 * AWQ_TABLE
    # the config alone (every linear int4: 416,640 B) is 34.9 % below the files' 562,176 B
    assert data["checkpoint"]["difference"] == pytest.approx(562_176 / 416_640 - 1)
    assert precision.stored_applies(record, "int4")
    status, out, _ = run(capsys, "fit", str(folder), "h100")
    assert "16-bit beyond the quantization config: attention in every layer (sized as 16-bit)" in out


def test_multi_token_prediction_layers_and_a_tied_head_are_not_loaded(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    mtp = {"model.layers.2.self_attn.q_proj.weight": np.zeros((64, 64), np.float16),  # past num_hidden_layers
           "mtp.fc.weight": np.zeros((64, 128), np.float16)}  # Qwen3-Next's mtp.* module
    folder = write_tiny(tmp_path / "mtp", mtp)
    status, out, _ = run(capsys, "fit", str(folder), "h100", "--json")
    data = json.loads(out)
    # 64 x 64 x 2 + 64 x 128 x 2 = 8,192 + 16,384 = 24,576 B in the files, none of it loaded
    assert status == 0 and data["checkpoint"]["not_loaded_bytes"] == 24_576
    assert data["memory"]["weights_bytes"] == TINY_BYTES and data["stored_weights"]["total_bytes"] == TINY_BYTES
    tied = tmp_path / "tied"
    write_tiny(tied)
    (tied / "config.json").write_text(json.dumps(TINY | {"tie_word_embeddings": True}))
    record, _ = model_argument.resolve_model(str(tied))
    assert record.stored_weights is not None and record.stored_weights.head == 0  # lm_head.weight is not loaded
    assert record.stored_weights.embedding == 32_768


@pytest.mark.parametrize(("name", "part"), [
    ("model.embed_tokens.weight", "embedding"),
    ("model.language_model.embed_tokens.weight", "embedding"),
    ("transformer.word_embeddings.weight", "embedding"),
    ("backbone.embeddings.weight", "embedding"),
    ("lm_head.weight", "head"),
    ("lm_head.scales", "head"),
    ("model.layers.0.mlp.experts.gate_up_proj_blocks", "experts"),  # gpt-oss MXFP4, fused over experts
    ("model.layers.0.mlp.experts.down_proj_bias", "experts"),
    ("model.layers.1.block_sparse_moe.experts.7.w2.weight", "experts"),  # Mixtral
    ("model.layers.1.mlp.shared_experts.down_proj.weight", "layers"),  # DeepSeek shared experts
    ("model.layers.1.mlp.shared_expert.up_proj.weight", "layers"),  # Qwen2-MoE
    ("model.layers.1.mlp.gate.weight", "layers"),  # the router
    ("model.layers.61.mlp.experts.3.gate_proj.weight", "not_loaded"),  # DeepSeek-V3's MTP layer
    ("mtp.layers.0.self_attn.q_proj.weight", "not_loaded"),
    ("model.vision_tower.encoder.layers.70.mlp.fc1.weight", "layers"),  # a vision layer past the text layers
    ("model.vision_tower.embeddings.patch_embedding.weight", "layers"),
    ("model.multi_modal_projector.linear_1.weight", "layers"),
    ("model.norm.weight", "layers"),
    ("language_model.lm_head.weight", "head"),  # an older LLaVA checkpoint
    ("language_model.model.embed_tokens.weight", "embedding"),
    ("model.mtp_layers.0.input_layernorm.weight", "not_loaded"),  # MiMo
])
def test_tensor_names_follow_transformers(name: str, part: str) -> None:
    assert hf.tensor_part(name, 61) == part


NAMES = ["model.embed_tokens.weight", "lm_head.weight", "model.norm.weight", "model.layers.0.mlp.experts.3.w1.weight",
         "model.layers.1.self_attn.q_proj.weight", "model.layers.1.self_attn.q_proj.bias",
         "model.layers.5.mlp.gate_proj.weight", "mtp.fc.weight", "model.vision_tower.blocks.0.attn.qkv.weight"]


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from(NAMES), st.tuples(st.sampled_from(["BF16", "I32", "F8_E4M3", "U8"]),
                                                          st.lists(st.integers(1, 64), min_size=1, max_size=3))),
       st.booleans())
def test_every_stored_byte_is_sized_or_named_not_loaded(tensors: dict[str, tuple[str, list[int]]],
                                                        tied: bool) -> None:
    """Bytes are conserved: the parts of ``stored_weights`` and the modules left unloaded add up to the files."""
    record = hf.from_hf_config(TINY | {"tie_word_embeddings": tied})
    found = [hf.Tensor(name, dtype, tuple(shape), math.prod(shape) * hf.tensors.DTYPE_BITS[dtype] // 8, "m")
             for name, (dtype, shape) in tensors.items()]
    checkpoint = hf.CheckpointTensors(sum(t.bytes for t in found), "headers", 1, tuple(found))
    s = hf.stored_weights(checkpoint, record)
    assert s is not None
    unloaded = sum(t.bytes for t in found if hf.tensor_part(t.name, record.num_layers, tied) == "not_loaded")
    assert s.layers + s.experts + s.embedding + s.head + unloaded == checkpoint.total_bytes
    assert 0 <= s.replicated <= s.layers and sum(size for _, size in s.by_type) + unloaded == checkpoint.total_bytes
