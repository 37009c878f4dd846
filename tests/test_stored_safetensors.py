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

from gpusizer import architecture, estimate, hf, parallel, precision, unpack
from gpusizer.commands import model_argument
from gpusizer.hf.quantization import unquantized_parts

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


# --- issue 21: 16-bit shared experts and routers of a quantised MoE checkpoint ---------------------------------------

#: A tiny AWQ (4-bit, group 128) Qwen2-MoE: hidden 128, 2 layers, 4 heads of 32, 2 KV heads, 2 routed experts of
#: width 128 (top 1), one shared expert of width 256 behind a sigmoid gate, vocab 512; every layer an MoE layer.
MOE = TINY | {"model_type": "qwen2_moe", "hidden_size": 128, "vocab_size": 512, "intermediate_size": 256,
              "moe_intermediate_size": 128, "shared_expert_intermediate_size": 256, "num_experts": 2,
              "num_experts_per_tok": 1, "decoder_sparse_step": 1, "mlp_only_layers": [],
              "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}}


def _awq(stem: str, out: int, inp: int) -> dict[str, np.ndarray]:
    """AutoAWQ's GEMM layout of one linear (``write_awq``): I*O*133/256 bytes."""
    return {stem + ".qweight": np.zeros((inp, out // 8), np.int32),
            stem + ".qzeros": np.zeros((inp // 128, out // 8), np.int32),
            stem + ".scales": np.zeros((inp // 128, out), np.float16)}


def write_moe(folder: Path, shared_16bit: bool) -> Path:
    """``MOE`` with transformers' Qwen2-MoE names (``Qwen2MoeSparseMoeBlock``: ``mlp.gate``, ``mlp.experts.E``,
    ``mlp.shared_expert``, ``mlp.shared_expert_gate``); the router and the shared-expert gate in F16, as AutoAWQ
    leaves them, the shared expert in F16 too when ``shared_16bit`` (the config declares none of it)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(MOE))
    f16 = {"model.embed_tokens.weight": (512, 128), "lm_head.weight": (512, 128), "model.norm.weight": (128,)}
    arrays: dict[str, np.ndarray] = {}
    for i in range(2):
        p = f"model.layers.{i}."
        f16 |= {p + "input_layernorm.weight": (128,), p + "post_attention_layernorm.weight": (128,),
                p + "self_attn.q_proj.bias": (128,), p + "self_attn.k_proj.bias": (64,),
                p + "self_attn.v_proj.bias": (64,), p + "mlp.gate.weight": (2, 128),
                p + "mlp.shared_expert_gate.weight": (1, 128)}
        for name, out, inp in (("q_proj", 128, 128), ("k_proj", 64, 128), ("v_proj", 64, 128), ("o_proj", 128, 128)):
            arrays |= _awq(p + "self_attn." + name, out, inp)
        for e in range(2):
            for name in ("gate_proj", "up_proj", "down_proj"):
                arrays |= _awq(f"{p}mlp.experts.{e}.{name}", 128, 128)
        for name, out, inp in (("gate_proj", 256, 128), ("up_proj", 256, 128), ("down_proj", 128, 256)):
            if shared_16bit:
                f16[f"{p}mlp.shared_expert.{name}.weight"] = (out, inp)
            else:
                arrays |= _awq(f"{p}mlp.shared_expert.{name}", out, inp)
    save_file(arrays | {name: np.zeros(shape, np.float16) for name, shape in f16.items()},
              str(folder / "model.safetensors"))
    return folder


# Bytes of write_moe, per layer: attention q, o 128 x 128 + k, v 64 x 128 = 49,152 weights x 133/256 = 25,536 B;
# 2 routed experts x 3 x 128 x 128 = 98,304 weights x 133/256 = 51,072 B; the shared expert 3 x 256 x 128 = 98,304
# weights, 51,072 B in AWQ or 196,608 B in F16; F16 vectors: 2 norms 512 B, q/k/v biases 512 B, router 2 x 128 x 2
# = 512 B, shared-expert gate 256 B: 1,792 B. The final norm 256 B; embedding and head 512 x 128 x 2 = 131,072 B each.
MOE_ROUTED = 2 * 51_072
MOE_FIXED = 2 * (25_536 + 1_792) + 256  # attention and vectors of both layers and the final norm: 54,912 B


def test_16_bit_shared_experts_of_a_quantised_moe_are_named_and_counted(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    record, _ = model_argument.resolve_model(str(write_moe(tmp_path / "moe", shared_16bit=True)))
    # mlp.shared_expert.* in F16 in every layer: the ffn role (Model.unquantized_roles: dense FFN and shared experts)
    assert record.unquantized_roles == ("ffn",) and record.unquantized_layers == ()
    assert "ffn in every layer in 16-bit" in record.notes
    # the shared experts, 2 x 98,304 = 196,608 parameters, are what the record keeps at the activation dtype
    assert architecture.parameter_counts(record).unquantized == 196_608
    s = record.stored_weights
    assert s is not None and (s.layers, s.experts, s.embedding, s.head) == (MOE_FIXED + 2 * 196_608, MOE_ROUTED,
                                                                           131_072, 131_072)
    status, out, _ = run(capsys, "fit", str(tmp_path / "moe"), "h100", "--json")
    data = json.loads(out)
    assert status == 0 and data["checkpoint"]["undeclared_16bit"] == {"roles": ["ffn"], "layers": []}
    # 54,912 + 393,216 + 102,144 + 2 x 131,072 = 812,416 B
    assert data["memory"]["weights_bytes"] == MOE_FIXED + 2 * 196_608 + MOE_ROUTED + 2 * 131_072 == 812_416


def test_a_16_bit_router_alone_is_no_undeclared_role(tmp_path: Path) -> None:
    # the router (mlp.gate, 2 x 128) and the shared-expert gate (1 x 128) are 2-D F16 weights in every layer, as
    # every AWQ export leaves them, but they are vectors of the count (architecture.moe_params), already sized at
    # the activation dtype: nothing is undeclared, and mlp.gate is not read as mlp.gate_proj
    record, _ = model_argument.resolve_model(str(write_moe(tmp_path / "moe", shared_16bit=False)))
    assert record.unquantized_roles == () and record.unquantized_layers == ()
    s = record.stored_weights
    assert s is not None and s.layers == MOE_FIXED + 2 * 51_072 == 157_056 and s.experts == MOE_ROUTED


def test_deepseek_and_qwen_moe_names_map_to_their_roles() -> None:
    # transformers' names (DeepseekV3MoE: mlp.shared_experts, mlp.gate; Qwen2MoeSparseMoeBlock: mlp.shared_expert,
    # mlp.shared_expert_gate; Qwen3MoeSparseMoeBlock: mlp.gate) of 2-layer models
    def names(*modules: str) -> list[str]:
        return [f"model.layers.{i}.mlp.{m}" for i in range(2) for m in modules]

    assert unquantized_parts(names("shared_experts.gate_proj", "shared_experts.up_proj", "gate"), 2) == (
        ("ffn",), ())
    assert unquantized_parts(names("gate", "shared_expert_gate"), 2) == ((), ())
    # DeepSeek-V3's dense first layer (mlp.down_proj) and a later layer's shared experts: ffn in every layer
    assert unquantized_parts(["model.layers.0.mlp.down_proj", "model.layers.1.mlp.shared_experts.down_proj"],
                                2) == (("ffn",), ())
    # a shared expert 16-bit in one layer only: that layer is listed whole
    assert unquantized_parts(["model.layers.1.mlp.shared_expert.up_proj"], 2) == ((), (1,))
    # a config's exclusion patterns (compressed-tensors regex, glob) reach the shared experts too
    assert unquantized_parts(["re:.*shared_experts.*"], 2) == (("ffn",), ())
    assert unquantized_parts(["re:.*mlp.gate$"], 2) == ((), ())
