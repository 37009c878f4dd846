"""Tests of the Hugging Face config importer (``gpusizer.hf``) and of the catalogue built with it.

Reference configs: ``data/model-configs/*.json`` (one per model, each citing its sources); the
spot-check values below were read by hand from those files.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import math
import struct
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusizer import architecture
from gpusizer.catalog import Model, load_models
from gpusizer.hf import (
    LIMITS,
    ConfigAssumptionWarning,
    architectures,
    checkpoint_bytes,
    from_hf_config,
    quantization_methods,
)

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "data" / "model-configs"
REFS: dict[str, dict[str, Any]] = {
    path.stem: json.loads(path.read_text(encoding="utf-8")) for path in sorted(REFERENCE.glob("*.json"))
}
PARTIAL: set[str] = set()  # qwen3-coder-30b-a3b was partial until its config.json copy was found (issue 18)
COMPLETE = sorted(set(REFS) - PARTIAL)
METADATA = {"id", "name", "family", "hf_repo", "published", "source", "checked", "notes"}


def imported(model_id: str) -> Model:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigAssumptionWarning)
        return from_hf_config(REFS[model_id]["config"], id=model_id)


@pytest.fixture(scope="module")
def catalogue() -> dict[str, Model]:
    return load_models()


def llama(**changes: Any) -> dict[str, Any]:
    """Llama-3.1-8B's config (data/model-configs/llama-3.1-8b.json) with ``changes``."""
    config = copy.deepcopy(REFS["llama-3.1-8b"]["config"])
    config.update(changes)
    return {key: value for key, value in config.items() if value is not ...}


# --- every reference config, and the catalogue built from them --------------------------------------


def test_reference_set_is_complete() -> None:
    assert len(REFS) == 61
    assert all(ref["id"] == model_id for model_id, ref in REFS.items())


@pytest.mark.parametrize("model_id", COMPLETE)
def test_every_reference_config_imports(model_id: str) -> None:
    model = imported(model_id)
    assert model.id == model_id
    assert model.num_layers == len(model.layers) == len(model.ffns)


def test_partial_config_is_refused_naming_missing_keys() -> None:
    with pytest.raises(ValueError, match="hidden_size, vocab_size"):
        # the card-level fields qwen3-coder-30b-a3b.json held before its config.json was found
        from_hf_config({"model_type": "qwen3_moe", "num_hidden_layers": 48, "num_attention_heads": 32,
                        "num_key_value_heads": 4, "head_dim": 128, "num_experts": 128, "num_experts_per_tok": 8,
                        "max_position_embeddings": 262144})


@pytest.mark.parametrize("model_id", COMPLETE)
def test_catalogue_record_equals_import(catalogue: dict[str, Model], model_id: str) -> None:
    assert imported(model_id).model_dump(exclude=METADATA) == catalogue[model_id].model_dump(exclude=METADATA)


def test_catalogue_follows_index_order_and_skips_partial(catalogue: dict[str, Model]) -> None:
    lines = (REFERENCE / "INDEX.md").read_text(encoding="utf-8").splitlines()
    rows = [line.split("|")[1].strip() for line in lines if line.startswith("|")]
    order = [row for row in rows if row in REFS]
    assert list(catalogue) == [model_id for model_id in order if model_id not in PARTIAL]
    assert len(catalogue) == 61


def test_catalogue_metadata_comes_from_reference_files(catalogue: dict[str, Model]) -> None:
    for model_id, record in catalogue.items():
        ref = REFS[model_id]
        assert record.family == ref["family"] and record.hf_repo == ref["hf_repo"]
        assert record.source == tuple(ref["source"]) and str(record.checked) == ref.get("checked", "2026-12-02")
        assert record.published.source == tuple(ref["params_source"])
        assert record.notes.startswith("Config: ")


def test_models_toml_is_up_to_date() -> None:
    spec = importlib.util.spec_from_file_location("build_models_toml", ROOT / "tools" / "build_models_toml.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert tool.build() == (ROOT / "data" / "models.toml").read_text(encoding="utf-8")


def test_published_conventions(catalogue: dict[str, Model]) -> None:
    oss, v3, gemma, scout = (
        catalogue[i].published for i in ("gpt-oss-120b", "deepseek-v3", "gemma-3-4b", "llama-4-scout")
    )
    assert oss.exact and (oss.total, oss.active) == (116.83e9, 5.13e9)
    assert not oss.active_includes_embedding and oss.active_includes_head
    assert v3.active_includes_embedding and v3.active_includes_head and not v3.includes_mtp and not v3.exact
    assert gemma.exact and gemma.includes_vision and gemma.active is None
    assert scout.includes_vision and not scout.exact
    assert catalogue["qwen2.5-7b"].published.exact and not catalogue["llama-3.1-70b"].published.exact
    v32 = catalogue["deepseek-v3.2"].published
    assert v32.total == 685.4e9 and v32.includes_mtp and not v32.exact  # the Hugging Face count of every tensor


# --- per-architecture spot checks (values read by hand from the reference configs) -------------------


def test_deepseek_v3() -> None:
    m = imported("deepseek-v3")
    assert m.mla is not None and m.moe is not None
    assert (m.mla.q_lora_rank, m.mla.kv_lora_rank, m.mla.qk_nope_head_dim, m.mla.qk_rope_head_dim) == (
        1536,
        512,
        128,
        64,
    )
    assert (m.first_dense_layers, m.mtp_layers, m.intermediate_size) == (3, 1, 18432)
    assert (m.moe.num_experts, m.moe.experts_per_token, m.moe.expert_intermediate_size) == (256, 8, 2048)
    assert m.moe.num_shared_experts == 1 and m.moe.score_correction_bias
    assert m.ffns.count("dense") == 3 and m.ffns.count("moe") == 58
    assert (m.weights, m.activation_dtype, m.max_context) == ("fp8", "bf16", 163840)


def test_deepseek_v2_lite_and_kimi() -> None:
    lite, kimi = imported("deepseek-v2-lite"), imported("kimi-k2")
    assert lite.mla is not None and lite.mla.q_lora_rank is None and lite.first_dense_layers == 1
    assert lite.moe is not None and lite.moe.num_shared_experts == 2 and not lite.moe.score_correction_bias
    assert lite.weights == "bf16" and lite.mtp_layers == 0
    assert kimi.moe is not None and kimi.moe.num_experts == 384 and kimi.num_heads == 64 and kimi.mtp_layers == 0


def test_deepseek_v32_reads_the_indexer_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConfigAssumptionWarning)
        m = from_hf_config(REFS["deepseek-v3.2"]["config"])
    assert m.mla is not None and m.mtp_layers == 1
    assert m.sparse_attention is not None and m.sparse_attention.index_topk == 2048


def test_gemma3_layers_defaults_and_vision() -> None:
    m = imported("gemma-3-27b")
    assert m.layers.count("full") == 10 and m.layers.count("sliding") == 52
    assert m.layers[:6] == ("sliding",) * 5 + ("full",) and m.sliding_window == 1024
    assert m.qk_norm and m.norms_per_layer == 4 and m.tie_embeddings
    assert m.vision is not None and (m.vision.hidden_size, m.vision.num_layers, m.vision.patch_size) == (1152, 27, 14)
    assert m.vision.projector_params == 1152 * 5376 + 1152  # mm_input_projection + mm_soft_emb_norm


@pytest.mark.parametrize("model_id", ["gemma-3-4b", "gemma-3-12b", "gemma-3-27b"])
def test_gemma3_text_defaults_match_transformers(model_id: str) -> None:
    """The effective text config (transformers defaults applied) recorded in each reference file."""
    m, effective = imported(model_id), REFS[model_id]["text_config_effective"]
    assert (m.vocab_size, m.num_heads, m.num_kv_heads, m.head_dim, m.max_context) == (
        effective["vocab_size"],
        effective["num_attention_heads"],
        effective["num_key_value_heads"],
        effective["head_dim"],
        effective["max_position_embeddings"],
    )


def test_gemma2() -> None:
    m = imported("gemma-2-9b")
    assert m.layers[:2] == ("sliding", "full") and m.layers.count("full") == 21
    assert (m.head_dim, m.norms_per_layer, m.tie_embeddings, m.sliding_window) == (256, 4, True, 4096)


def test_nemotron_h() -> None:
    m = imported("nemotron-3-nano-30b-a3b")
    assert m.layers.count("mamba") == 23 and m.layers.count("full") == 6 and m.layers.count("none") == 23
    assert m.ffns.count("moe") == 23 and "dense" not in m.ffns and m.intermediate_size is None
    assert not m.ffn_gated and m.norms_per_layer == 1 and m.num_kv_heads == 2
    assert m.mamba is not None and (m.mamba.num_heads, m.mamba.head_dim, m.mamba.state_size) == (64, 64, 128)
    assert (m.mamba.n_groups, m.mamba.conv_kernel, m.mamba.state_bytes_per_element) == (8, 4, 4.0)
    assert m.moe is not None and (m.moe.num_experts, m.moe.experts_per_token, m.moe.shared_width) == (128, 6, 3712)


def test_gpt_oss() -> None:
    m = imported("gpt-oss-120b")
    assert (m.weights, m.expert_weights) == ("bf16", "mxfp4")
    assert m.attention_sinks and m.qkv_bias and m.o_bias and m.layers.count("full") == 18
    assert m.layer_types == ("sliding", "full") and m.sliding_window == 128
    assert m.moe is not None and m.moe.router_bias and m.moe.expert_bias and m.moe.num_experts == 128


def test_llama4() -> None:
    maverick, scout = imported("llama-4-maverick"), imported("llama-4-scout")
    assert maverick.layer_types == ("chunked", "chunked", "chunked", "full")
    assert maverick.attention_chunk_size == 8192
    assert maverick.ffns.count("moe") == 24 and maverick.ffns[:2] == ("dense", "moe")
    assert maverick.intermediate_size == 16384 and maverick.moe is not None
    assert (maverick.moe.expert_intermediate_size, maverick.moe.num_shared_experts) == (8192, 1)
    assert scout.ffn_types == ("moe",) and scout.intermediate_size is None
    assert scout.vision is not None and scout.vision.class_token
    # vision adapter fc1 + fc2 and multi_modal_projector, from the config dims
    assert scout.vision.projector_params == 5632 * 4096 + 4096 * 4096 + 4096 * 5120


def test_qwen_family() -> None:
    nxt = imported("qwen3-next-80b-a3b")
    assert nxt.layers.count("linear") == 36 and nxt.layers.count("full") == 12 and nxt.layers[3] == "full"
    assert nxt.linear_attention is not None and nxt.linear_attention.num_value_heads == 32
    assert nxt.attention_output_gate and nxt.qk_norm and nxt.moe is not None and nxt.moe.shared_expert_gate
    q25, q3, moe = imported("qwen2.5-7b"), imported("qwen3-0.6b"), imported("qwen3-235b-a22b")
    assert q25.qkv_bias and not q25.o_bias and not q25.qk_norm
    assert q3.qk_norm and q3.head_dim == 128 and q3.tie_embeddings  # not 1024 / 16
    assert moe.qk_norm and moe.intermediate_size is None and moe.moe is not None and moe.moe.num_shared_experts == 0


def test_glm4_moe() -> None:
    big, air = imported("glm-4.5"), imported("glm-4.5-air")
    assert big.qk_norm and not air.qk_norm
    assert big.qkv_bias and not big.o_bias and big.mtp_layers == 1
    assert (big.first_dense_layers, air.first_dense_layers) == (3, 1)
    assert big.max_context == 131072  # Glm4MoeConfig default; the key is absent from the file


def test_falcon_cohere_phi_mistral() -> None:
    falcon, cohere = imported("falcon-7b"), imported("command-r-v01")
    assert (falcon.num_kv_heads, falcon.intermediate_size, falcon.head_dim) == (1, 4 * 4544, 64)
    assert falcon.norm == "layer" and falcon.norms_per_layer == 1 and not falcon.ffn_gated and falcon.tie_embeddings
    assert cohere.norm == "layer_nobias" and cohere.norms_per_layer == 1 and cohere.tie_embeddings
    medium, mini = imported("phi-3-medium"), imported("phi-3.5-mini")
    assert medium.layer_types == ("sliding",) and medium.sliding_window == 2047
    assert mini.layer_types == ("full",) and mini.sliding_window is None  # 262144 >= context: inert
    mixtral = imported("mixtral-8x7b")
    assert mixtral.moe is not None and (mixtral.moe.num_experts, mixtral.moe.experts_per_token) == (8, 2)
    assert mixtral.intermediate_size is None
    assert imported("llama-2-7b").weights == "fp16" and imported("llama-3.2-1b").head_dim == 64


def test_mistral3_wrapper_with_pixtral_vision() -> None:
    text = {"model_type": "mistral", "hidden_size": 5120, "num_hidden_layers": 40, "num_attention_heads": 32,
            "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 131072, "intermediate_size": 32768,
            "max_position_embeddings": 131072, "sliding_window": None}  # fmt: skip
    vision = {
        "hidden_size": 1024,
        "num_hidden_layers": 24,
        "intermediate_size": 4096,
        "patch_size": 14,
        "image_size": 1540,
    }
    config = {"model_type": "mistral3", "torch_dtype": "bfloat16", "text_config": text, "vision_config": vision}
    with pytest.warns(ConfigAssumptionWarning, match="Pixtral"):
        m = from_hf_config(config)
    assert m.layer_types == ("full",) and m.vision is not None
    # RMSNorm + patch merger (spatial_merge_size 2) + linear_1 + linear_2, no biases
    assert m.vision.projector_params == 1024 + 1024 * 4 * 1024 + 1024 * 5120 + 5120 * 5120


def test_text_only_gemma3_and_qwen2_sliding_layers() -> None:
    gemma = {"model_type": "gemma3_text", "hidden_size": 1152, "num_hidden_layers": 26, "num_attention_heads": 4,
             "num_key_value_heads": 1, "head_dim": 256, "intermediate_size": 6912, "sliding_window": 512,
             "vocab_size": 262144, "max_position_embeddings": 32768}  # fmt: skip
    m = from_hf_config(gemma)
    assert m.layers.count("full") == 4 and m.tie_embeddings and m.vision is None and m.sliding_window == 512
    qwen = {"model_type": "qwen2", "hidden_size": 896, "num_hidden_layers": 24, "num_attention_heads": 14,
            "num_key_value_heads": 2, "vocab_size": 151936, "intermediate_size": 4864, "use_sliding_window": True,
            "sliding_window": 4096, "max_window_layers": 21, "max_position_embeddings": 32768}  # fmt: skip
    m = from_hf_config(qwen)
    assert m.layers[:21] == ("full",) * 21 and m.layers[21:] == ("sliding",) * 3 and m.sliding_window == 4096


def test_explicit_per_layer_lists() -> None:
    config = copy.deepcopy(REFS["llama-4-scout"]["config"])
    config["text_config"].update(no_rope_layers=[1, 0] * 24, moe_layers=[0, 1, 2])
    m = from_hf_config(config)
    assert m.layer_types == ("chunked", "full") and m.ffns.count("moe") == 3 and m.intermediate_size == 16384
    listed = llama(layer_types=["sliding_attention", "full_attention"] * 16, sliding_window=4096)
    assert from_hf_config(listed).layer_types == ("sliding", "full")
    with pytest.raises(ValueError, match="sliding_window"):
        from_hf_config(llama(layer_types=["sliding_attention"] * 32))


# --- parameter counts against the published figures ---------------------------------------------------


def label_tolerance(figure: float) -> float:
    """One unit in the last significant digit of a label such as 7.3e9 or 70e9 (trailing zeros not
    significant), and never under 1 %: publishers round labels loosely (GLM-4.5's 355B)."""
    digits = str(int(figure))
    unit = 10 ** (len(digits) - len(digits.rstrip("0")))
    return max(unit, 0.01 * figure)


@pytest.mark.parametrize("model_id", [i for i in COMPLETE if REFS[i].get("official_params_total")])
def test_total_params_match_published(catalogue: dict[str, Model], model_id: str) -> None:
    record = catalogue[model_id]
    counts = architecture.parameter_counts(imported(model_id))
    published = record.published
    assert published.total is not None
    total = counts.main + counts.vision * published.includes_vision + counts.mtp * published.includes_mtp
    tolerance = 0.01 * published.total if published.exact else label_tolerance(published.total)
    assert abs(total - published.total) <= tolerance, f"{model_id}: {total:.4g} vs {published.total:.4g}"


# --- precision ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("quantization", "weights"),
    [
        ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}, "int4"),
        ({"quant_method": "gptq", "bits": 4, "group_size": 128}, "int4"),
        ({"quant_method": "gptq", "bits": 8}, "int8"),
        ({"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}, "fp8"),
        ({"quant_method": "fbgemm_fp8"}, "fp8"),
        ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "nvfp4"),
        ({"quant_method": "modelopt", "quantization": {"quant_algo": "FP8"}}, "fp8"),
        ({"quant_method": "mxfp4"}, "mxfp4"),  # a dense model: all linear layers
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float"}}},
            },
            "fp8",
        ),
        (
            {"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 4, "type": "int"}}}},
            "int4",
        ),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"g": {"weights": {"num_bits": 4, "type": "float", "group_size": 16}}},
            },
            "nvfp4",
        ),
        (  # Kimi K2-Thinking's scheme: symmetric INT4, one BF16 scale per 32 weights (4.5 bits)
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"g": {"weights": {"num_bits": 4, "type": "int", "group_size": 32,
                                                    "symmetric": True}}},
            },
            "int4-g32",
        ),
        (  # asymmetric group 32 or another group size: the g128 table entry
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"g": {"weights": {"num_bits": 4, "type": "int", "group_size": 32,
                                                    "symmetric": False}}},
            },
            "int4",
        ),
    ],
)
def test_quantization_config(quantization: dict[str, Any], weights: str) -> None:
    m = from_hf_config(llama(quantization_config=quantization))
    assert (m.weights, m.expert_weights, m.activation_dtype) == (weights, None, "bf16")


def test_mixed_compressed_tensors_groups_warn() -> None:
    groups = {"a": {"weights": {"num_bits": 4, "type": "int"}}, "b": {"weights": {"num_bits": 8, "type": "float"}}}
    with pytest.warns(ConfigAssumptionWarning, match="first group"):
        m = from_hf_config(llama(quantization_config={"quant_method": "compressed-tensors", "config_groups": groups}))
    assert m.weights == "int4"


def test_unknown_quantization_method_is_refused() -> None:
    with pytest.raises(ValueError, match=r"'bitsandbytes'.*known: fp8, fbgemm_fp8, awq"):
        from_hf_config(llama(quantization_config={"quant_method": "bitsandbytes", "load_in_4bit": True}))
    with pytest.raises(ValueError, match="3-bit"):
        from_hf_config(llama(quantization_config={"quant_method": "gptq", "bits": 3}))
    assert "compressed-tensors" in quantization_methods()


def test_dtype_keys() -> None:
    assert from_hf_config(llama(torch_dtype=..., dtype="float16")).weights == "fp16"
    assert from_hf_config(llama(torch_dtype=...)).activation_dtype == "bf16"
    with pytest.raises(ValueError, match="unknown dtype 'int3'"):
        from_hf_config(llama(torch_dtype="int3"))


# --- files and folders --------------------------------------------------------------------------------


def test_folder_with_index_and_hf_quant_config(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(REFS["llama-3.1-8b"]["config"]))
    index = {"metadata": {"total_size": 5_733_000_000}, "weight_map": {"lm_head.weight": "model-00001.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    hf_quant = {
        "producer": {"name": "modelopt", "version": "0.29"},
        "quantization": {"quant_algo": "NVFP4", "group_size": 16},
    }
    (tmp_path / "hf_quant_config.json").write_text(json.dumps(hf_quant))
    for source in (tmp_path, str(tmp_path), tmp_path / "config.json"):
        m = from_hf_config(source)
        assert (m.id, m.weights, m.activation_dtype, m.num_kv_heads) == (tmp_path.name.lower(), "nvfp4", "bf16", 8)
    assert checkpoint_bytes(tmp_path) == 5_733_000_000
    assert checkpoint_bytes(tmp_path / "config.json") == 5_733_000_000


def test_single_safetensors_file(tmp_path: Path) -> None:
    header = json.dumps({"w": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 12]}}).encode()
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + bytes(12))
    assert checkpoint_bytes(tmp_path) == 12
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", 10**6) + b"{}")
    with pytest.raises(ValueError, match=r"model\.safetensors: truncated: declares a 1,000,000-byte header"):
        checkpoint_bytes(tmp_path)


def test_checkpoint_bytes_edge_cases(tmp_path: Path) -> None:
    assert checkpoint_bytes(tmp_path) is None
    with pytest.raises(FileNotFoundError):
        checkpoint_bytes(tmp_path / "absent")
    (tmp_path / "model.safetensors.index.json").write_text('{"metadata": {"total_size": "12"}}')
    with pytest.raises(ValueError, match="total_size"):
        checkpoint_bytes(tmp_path)


def test_missing_paths(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        from_hf_config(tmp_path / "absent" / "config.json")
    with pytest.raises(FileNotFoundError):
        from_hf_config(tmp_path)  # a folder without config.json


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"not json", "not valid JSON"),
        (b"[1, 2, 3]", "must hold a JSON object"),
        (b'{"hidden_size": NaN}', "not a number"),
        (b"\xff\xfe\x00", "not UTF-8"),
        (b"[" * 100_000 + b"]" * 100_000, "JSON"),
    ],
    ids=["text", "array", "nan", "binary", "deep"],
)
def test_bad_files(tmp_path: Path, content: bytes, message: str) -> None:
    (tmp_path / "config.json").write_bytes(content)
    with pytest.raises(ValueError, match=message):
        from_hf_config(tmp_path)


def test_oversized_file_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    with path.open("wb") as handle:
        handle.truncate(17 * 2**20)  # sparse: no 17 MiB written
    with pytest.raises(ValueError, match="larger than"):
        from_hf_config(path)


def test_ignores_remote_code(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({**REFS["deepseek-v3"]["config"], "trust_remote_code": True}))
    (tmp_path / "configuration_deepseek.py").write_text("raise SystemExit('executed')\n")
    assert from_hf_config(tmp_path).mla is not None


# --- unknown architectures and bad values ------------------------------------------------------------


def test_unknown_architecture_warns_once_listing_assumptions() -> None:
    config = {"model_type": "my_llm", "hidden_size": 2048, "num_hidden_layers": 8, "num_attention_heads": 16,
              "vocab_size": 32000, "intermediate_size": 5632}  # fmt: skip
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = from_hf_config(config)
    assert len(caught) == 1 and issubclass(caught[0].category, ConfigAssumptionWarning)
    message = str(caught[0].message)
    for assumption in ("'my_llm' is not one gpusizer knows", "num_key_value_heads", "head_dim", "tie_word_embeddings"):
        assert assumption in message
    assert (m.num_kv_heads, m.head_dim, m.tie_embeddings, m.intermediate_size, m.family) == (
        16,
        128,
        False,
        5632,
        "my_llm",
    )
    assert m.notes == message.split("assumptions made: ", 1)[1]


def test_unknown_moe_architecture() -> None:
    config = llama(model_type="fancy_moe", num_local_experts=8, num_experts_per_tok=2, moe_intermediate_size=1024)
    with pytest.warns(ConfigAssumptionWarning, match="every layer taken as MoE"):
        m = from_hf_config(config)
    assert m.moe is not None and m.moe.expert_intermediate_size == 1024 and m.ffn_types == ("moe",)


def test_known_architectures_do_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for model_id in COMPLETE:
            if model_id != "deepseek-v3.2":
                from_hf_config(REFS[model_id]["config"])
    # Kimi K2.5's MoonViT tower (kimi_k25 vision_config) has a reader now: no warning (tests/test_vlm_wrappers.py)
    assert from_hf_config(REFS["kimi-k2.5"]["config"]).vision is not None
    assert {"llama", "gemma3", "nemotron_h", "qwen3_next", "mistral3"} <= set(architectures())


def test_missing_essential_keys_are_all_named() -> None:
    with pytest.raises(ValueError, match="lacks essential keys: hidden_size, vocab_size"):
        from_hf_config(llama(hidden_size=..., vocab_size=...))
    with pytest.raises(ValueError, match="intermediate_size"):
        from_hf_config(llama(intermediate_size=...))
    with pytest.raises(ValueError, match="hidden_size"):
        from_hf_config({"model_type": "never_heard_of_it"})


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"hidden_size": "4096"}, "hidden_size must be an integer, got str"),
        ({"hidden_size": True}, "hidden_size must be an integer, got bool"),
        ({"hidden_size": 4096.0}, "hidden_size must be an integer, got float"),
        ({"hidden_size": [4096]}, "hidden_size must be an integer, got list"),
        ({"num_hidden_layers": 0}, "num_hidden_layers must be >= 1, got 0"),
        ({"vocab_size": -5}, "vocab_size must be >= 1"),
        ({"hidden_size": 2**21}, "exceeds the sane bound"),
        ({"num_hidden_layers": 10**12}, "exceeds the sane bound 10000"),
        ({"num_local_experts": 2**17, "model_type": "mixtral", "num_experts_per_tok": 2}, "exceeds the sane bound"),
        ({"num_key_value_heads": 7}, "not a multiple"),
        ({"tie_word_embeddings": "yes"}, "must be true or false"),
        ({"model_type": 7}, "model_type must be a short string"),
        (
            {"rope_scaling": {"nested": [[[]]]}, "text_config": "junk", "model_type": "gemma3"},
            "text_config must be an object",
        ),
        ({"layer_types": ["full_attention"] * 3}, "3 entries for 32 layers"),
        ({"layer_types": ["full_attention"] * 31 + ["weird"]}, "unknown layer type"),
        (
            {"hidden_size": 2**20, "intermediate_size": 2**22, "num_hidden_layers": 10_000},
            "parameters; not a real model",
        ),
    ],
)
def test_bad_values(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        from_hf_config(llama(**changes))


def test_source_must_be_path_or_mapping() -> None:
    with pytest.raises(ValueError, match="path or a mapping"):
        from_hf_config(42)  # type: ignore[arg-type]


# --- fuzzing: hostile input only ever raises ValueError -----------------------------------------------

SIZE_KEYS = (
    "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "vocab_size",
    "intermediate_size", "head_dim", "max_position_embeddings", "sliding_window", "num_experts",
    "num_local_experts", "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size",
    "first_k_dense_replace", "kv_lora_rank", "q_lora_rank", "layer_types", "hybrid_override_pattern",
    "text_config", "vision_config", "quantization_config", "model_type", "torch_dtype", "tie_word_embeddings",
)  # fmt: skip
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.sampled_from([0, 1, 2, 3, 64, 2**20, 2**31, 2**63, -1])
    | st.floats(allow_nan=True)
    | st.text(max_size=12)
    | st.sampled_from([*sorted(architectures()), "full_attention", "sliding_attention", "MEM*E-", "fp8", "bfloat16"])
)
flat_values = (
    json_scalars
    | st.lists(json_scalars, max_size=4)
    | st.dictionaries(st.sampled_from(SIZE_KEYS) | st.text(max_size=8), json_scalars, max_size=4)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(SIZE_KEYS) | st.text(max_size=8), inner, max_size=6)
    ),
    max_leaves=10,
)


ARCH_KEYS = (
    "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "n_shared_experts", "moe_layer_freq",
    "num_nextn_predict_layers", "topk_method", "index_n_heads", "index_head_dim", "index_topk", "mamba_num_heads",
    "mamba_head_dim",
    "ssm_state_size", "n_groups", "conv_kernel", "mamba_ssm_cache_dtype", "moe_shared_expert_intermediate_size",
    "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
    "linear_conv_kernel_dim", "full_attention_interval", "shared_expert_intermediate_size", "decoder_sparse_step",
    "mlp_only_layers", "interleave_moe_layer_step", "intermediate_size_mlp", "no_rope_layers", "moe_layers",
    "attention_chunk_size", "sliding_window_pattern", "use_sliding_window", "max_window_layers", "multi_query",
    "new_decoder_architecture", "parallel_attn", "num_kv_heads", "ffn_hidden_size", "use_qk_norm", "attention_bias",
    "patch_size", "image_size", "projector_input_dim", "projector_output_dim", "vision_output_dim",
)  # fmt: skip
small_ints = st.integers(min_value=-2, max_value=300) | st.sampled_from([2**16, 2**20, 2**33])
ESSENTIAL_DRAWN = (
    "model_type",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "vocab_size",
    "intermediate_size",
)
#: Configs with the essential keys present (mostly valid) and random architecture keys: they reach every builder.
synthetic_configs = st.fixed_dictionaries(
    {
        "model_type": st.sampled_from([*architectures(), "unknown_arch"]),
        "hidden_size": st.sampled_from([64, 128, 256, 4096]) | small_ints,
        "num_hidden_layers": st.integers(1, 64) | small_ints,
        "num_attention_heads": st.sampled_from([1, 2, 4, 8]) | small_ints,
        "vocab_size": st.integers(1, 1000),
        "intermediate_size": st.sampled_from([128, 512]) | small_ints,
    },
    optional={key: small_ints | flat_values for key in {*SIZE_KEYS, *ARCH_KEYS} - set(ESSENTIAL_DRAWN)},
)


def check_only_value_error(config: Any) -> None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConfigAssumptionWarning)
            model = from_hf_config(config)
    except ValueError:
        return
    counts = architecture.parameter_counts(model)  # whatever is accepted can be sized
    assert 0 < counts.total < 10**16
    assert model.num_layers <= LIMITS["layers"]


@st.composite
def mutated_configs(draw: st.DrawFn) -> dict[str, Any]:
    """A reference config with a few keys (top level or nested) deleted, replaced or retyped."""
    config = copy.deepcopy(REFS[draw(st.sampled_from(sorted(REFS)))]["config"])
    for _ in range(draw(st.integers(1, 4))):
        target = config
        nested = [
            key for key in ("text_config", "vision_config", "quantization_config") if isinstance(config.get(key), dict)
        ]
        if nested and draw(st.booleans()):
            target = config[draw(st.sampled_from(nested))]
        keys = sorted(target, key=str)
        key = draw(st.sampled_from(keys + list(SIZE_KEYS))) if keys else draw(st.sampled_from(SIZE_KEYS))
        action = draw(st.sampled_from(["delete", "replace", "scale"]))
        if action == "delete":
            target.pop(key, None)
        elif action == "scale" and isinstance(target.get(key), int) and not isinstance(target.get(key), bool):
            target[key] = target[key] * draw(st.sampled_from([-1, 0, 2, 3, 1000, 2**40])) + draw(st.integers(-2, 2))
        else:
            target[key] = draw(flat_values)
    return config


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_configs())
def test_fuzz_mutated_reference_configs(config: dict[str, Any]) -> None:
    check_only_value_error(config)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values | synthetic_configs)
def test_fuzz_random_json(config: Any) -> None:
    if isinstance(config, dict):
        check_only_value_error(config)
    elif not isinstance(config, str):  # a string is a path
        with pytest.raises(ValueError):
            from_hf_config(config)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200) | json_values.map(lambda v: json.dumps(v).encode() if _finite(v) else b"{"))
def test_fuzz_file_bytes(tmp_path_factory: pytest.TempPathFactory, content: bytes) -> None:
    folder = tmp_path_factory.mktemp("fuzz", numbered=True)
    (folder / "config.json").write_bytes(content)
    check_only_value_error(folder)


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    return True
