"""Issue 18, items 3 and 4: the 2026 checkpoints and the China-market and older cards.

Every new model's parameter count is compared with the figure its publisher prints (source named in
each row); every new card's numbers with the page they were read from; every new card and model
answers without NaN.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from test_missing_values import assert_no_nan

import gpusizer
from gpusizer import architecture, cost
from gpusizer.catalog import MLA, SparseAttention
from gpusizer.hf import from_hf_config

T = 1e12
G = 1e9
REFERENCE = Path(__file__).resolve().parents[1] / "data" / "model-configs"

#: zai-org/GLM-5:README.md (commit 1a977a8a92e810bd78b0c0a98f8623c8a2c02751): "GLM-5 scales from 355B
#: parameters (32B active) to 744B parameters (40B active)"; the download table gives 744B-A40B for GLM-5 and
#: GLM-5.1 (and GLM-5.2, whose shared indexers are not modelled, so it is not recorded).
GLM5_README = 744 * G


def total(model_id: str) -> float:
    """The count the publisher's figure is compared with (main model; vision and MTP as the record says)."""
    model = gpusizer.model(model_id)
    c = architecture.parameter_counts(model)
    return c.main + c.vision * model.published.includes_vision + c.mtp * model.published.includes_mtp


@pytest.mark.parametrize("model_id", ["glm-5", "glm-5.1"])
def test_glm5_total_is_the_readme_744b_within_1_percent(model_id):
    # 78 layers (3 dense, 75 MoE of 256 x 2048-wide experts + 1 shared), MLA with q_lora 2048, 64 heads of
    # qk 192+64 / v 256, the DSA indexer (32 heads x 128): 743.91B without the MTP layer, -0.01 %.
    assert total(model_id) == pytest.approx(GLM5_README, rel=0.01)
    assert total(model_id) == pytest.approx(743.911218432 * G, rel=1e-12)


@pytest.mark.parametrize("model_id", ["glm-5", "glm-5.1"])
def test_glm5_active_is_the_readme_40b_as_glm_counts_it(model_id):
    # "40B active" is a truncated label, as GLM-4.5's "32B" is 32.86B: the count without the input embedding
    # is 40.83B (8 of 256 routed experts + the shared one per MoE layer, head counted); with it, 41.78B.
    c = architecture.parameter_counts(gpusizer.model(model_id))
    assert 40 * G <= c.active - c.embedding < 41 * G
    assert c.active - c.embedding == pytest.approx(40.833146112 * G, rel=1e-12)


def test_glm_moe_dsa_is_read_as_mla_with_sparse_attention_and_an_mtp_layer():
    model = gpusizer.model("glm-5")
    assert model.mla == MLA(q_lora_rank=2048, kv_lora_rank=512, qk_nope_head_dim=192, qk_rope_head_dim=64,
                            v_head_dim=256)
    assert model.sparse_attention == SparseAttention(index_n_heads=32, index_head_dim=128, index_topk=2048)
    assert (model.mtp_layers, model.first_dense_layers, model.max_context) == (1, 3, 202752)
    assert model.moe is not None and (model.moe.num_experts, model.moe.experts_per_token) == (256, 8)
    # KV per token per layer is the MLA latent: 512 + 64 = 576 elements, as for DeepSeek-V3.2
    assert architecture.kv_layout(model).full == 78 * 576


def test_glm_moe_dsa_no_longer_falls_back_to_llama_like():
    raw = json.loads((REFERENCE / "glm-5.json").read_text(encoding="utf-8"))["config"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a known model_type imports without an assumption warning
        model = from_hf_config(raw)
    assert model.family == "glm_moe_dsa" and model.mla is not None and model.sparse_attention is not None


def test_kimi_k25_text_model_is_kimi_k2_with_int4_routed_experts():
    # MoonshotAI/Kimi-K2.5:README.md (commit 6edc2543b766c0b6af9677bb9eed011beb615228): 1T total, 32B
    # activated, 61 layers, 384 experts (8 + 1 shared), 256K context. "1T" is one significant figure: the
    # per-tensor count of the text model is 1.0264T (+2.6 %), the same as Kimi-K2-Instruct's.
    k25, k2 = gpusizer.model("kimi-k2.5"), gpusizer.model("kimi-k2")
    assert total("kimi-k2.5") == total("kimi-k2") == pytest.approx(1.026408232448 * T, rel=1e-12)
    assert total("kimi-k2.5") == pytest.approx(1 * T, rel=0.03)
    assert k25.max_context == 262144 and k2.max_context == 131072
    # compressed-tensors INT4 (group 32, symmetric, BF16 scales: int4-g32, 4.5 bits) on the routed experts;
    # attention and the dense/shared MLPs kept in BF16
    assert k25.weights == "int4-g32" and set(k25.unquantized_roles) == {"attention", "ffn"}


def test_qwen3_coder_30b_alias_is_its_own_record_and_counts_its_safetensors():
    # ztxz16/fastllm copy of Qwen/Qwen3-Coder-30B-A3B-Instruct: model.safetensors.index.json total_size
    # 61,064,245,248 B of BF16 = 30,532,122,624 parameters, exactly the per-tensor count of its config; the
    # card says "30.5B in total and 3.3B activated" (3.35B with embedding and head, as for Qwen3-30B-A3B).
    coder = gpusizer.model("qwen3-coder-30b-a3b")
    c = architecture.parameter_counts(coder)
    assert c.main == 61_064_245_248 // 2
    assert c.main == pytest.approx(30.5 * G, rel=0.01) and c.active == pytest.approx(3.3 * G, rel=0.02)
    assert coder.max_context == 262144 and gpusizer.model("qwen3-30b-a3b").max_context == 40960


@pytest.mark.parametrize(
    ("model_id", "published", "rel"),
    [
        # gpt-oss model card Table 1: 116.83B and 20.91B total (exact counts)
        ("gpt-oss-120b", 116.83 * G, 0.001),
        ("gpt-oss-20b", 20.91 * G, 0.001),
        # meta-llama/llama-models MODEL_CARD (Llama 4): 109B and 400B total, vision encoder included
        ("llama-4-scout", 109 * G, 0.01),
        ("llama-4-maverick", 400 * G, 0.01),
        # Qwen model cards: Qwen3-Next-80B-A3B "80B in total", Qwen3-Coder-480B-A35B "480B in total"
        ("qwen3-next-80b-a3b", 80 * G, 0.01),
        ("qwen3-coder-480b-a35b", 480 * G, 0.01),
    ],
)
def test_checkpoints_already_catalogued_match_their_cards_within_1_percent(model_id, published, rel):
    assert total(model_id) == pytest.approx(published, rel=rel)


# --- cards ------------------------------------------------------------------------------------------

#: (id, memory [B], bandwidth [B/s], precision, dense rate [TFLOP/s or TOP/s], TDP [W] or None), from the
#: sources in each record.
CARDS = [
    # H800 datasheet via astroC86/gpu-datasheet: 80 GB, 3.35 TB/s, BF16 1979 with sparsity -> 989.5 dense
    ("h800-sxm", 80e9, 3.35e12, "bf16", 989.5, 700),
    # A100 80GB datasheet (the A800 keeps every figure but NVLink): SXM 2,039 GB/s, PCIe 1,935 GB/s, 312 BF16
    ("a800-80gb-sxm", 80e9, 2.039e12, "bf16", 312, 400),
    ("a800-80gb-pcie", 80e9, 1.935e12, "int8", 624, 300),
    # Tom's Hardware table of Vipera's listings: L20 48 GB, 864 GB/s, FP8 239; L2 24 GB, 300 GB/s, FP16 96.5
    ("l20", 48e9, 864e9, "fp8", 239, 275),
    ("l2", 24e9, 300e9, "fp16", 96.5, None),
    # NVIDIA China product page (evertiq): 24 GB, 1008 GB/s, 425 W; hmc-tech BF16 147.09 dense
    ("rtx-4090d", 24e9, 1.008e12, "bf16", 147.09, 425),
    # modded 4090 48GB: 48 GB (listings, teardown); the 4090's 1008 GB/s and whitepaper 165.2 BF16 kept
    ("rtx-4090-48gb", 48e9, 1.008e12, "bf16", 165.2, 450),
    # Tesla P40 datasheet: 24 GB GDDR5, 346 GB/s, 12 TFLOPS FP32, 47 TOPS INT8, 250 W
    ("p40", 24e9, 346e9, "int8", 47, 250),
    # V100 datasheet, PCIe column: 900 GB/s, tensor 112 TFLOPS, 250 W
    ("v100-pcie-32gb", 32e9, 900e9, "fp16", 112, 250),
    ("v100-pcie-16gb", 16e9, 900e9, "fp16", 112, 250),
]  # fmt: skip
NEW_CARDS = [row[0] for row in CARDS]


@pytest.mark.parametrize(("gpu_id", "memory", "bandwidth", "precision", "tera", "tdp"), CARDS)
def test_new_cards_carry_their_sources_numbers(gpu_id, memory, bandwidth, precision, tera, tdp):
    record = gpusizer.gpu(gpu_id)
    assert record.memory == pytest.approx(memory)
    assert record.memory_bandwidth == pytest.approx(bandwidth)
    assert getattr(record.dense, precision) == pytest.approx(tera * T)
    assert record.tdp == (None if tdp is None else pytest.approx(tdp))
    assert record.source and str(record.checked) == "2026-12-03"


def test_export_cut_cards_keep_their_parents_memory_and_rates_with_nvlink_cut_to_400_gbps():
    for child, parent in (("h800-sxm", "h100-sxm"), ("a800-80gb-sxm", "a100-80gb-sxm")):
        a, b = gpusizer.gpu(child), gpusizer.gpu(parent)
        assert (a.memory, a.memory_bandwidth, a.dense.bf16) == (b.memory, b.memory_bandwidth, b.dense.bf16)
        assert a.interconnect.bandwidth == pytest.approx(400e9)
        assert b.interconnect.bandwidth is not None and b.interconnect.bandwidth > 400e9


def test_the_modded_4090_is_a_4090_with_twice_the_memory_and_says_how_sure_it_is():
    modded, stock = gpusizer.gpu("rtx-4090-48gb"), gpusizer.gpu("rtx-4090")
    assert modded.memory == 2 * stock.memory
    assert modded.memory_bandwidth == stock.memory_bandwidth and modded.dense == stock.dense
    assert modded.confidence == "low" and "memory_bw_tbps" in modded.derived_fields
    # the 4090 D has 114 of the 4090's 128 SMs at the same boost clock: 165.2 x 114/128 = 147.1
    assert gpusizer.gpu("4090D").dense.bf16 == pytest.approx(stock.dense.bf16 * 114 / 128, rel=1e-3)


def test_lookups_reach_the_new_cards():
    assert [gpusizer.gpu(name).id for name in ("H800", "A800", "L20", "4090 48GB", "RTX 4090 D", "P40")] == [
        "h800-sxm", "a800-80gb-sxm", "l20", "rtx-4090-48gb", "rtx-4090d", "p40"]  # fmt: skip


@pytest.mark.parametrize("gpu_id", NEW_CARDS)
@pytest.mark.parametrize("model_id", ["glm-5", "kimi-k2.5", "qwen3-next-80b-a3b", "llama-3.1-8b"])
def test_no_nan_for_the_new_cards_and_models(gpu_id, model_id):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = gpusizer.estimate(model_id, gpu_id, gpus=8, context=32768, concurrency=4)
    assert_no_nan(e)


def test_p40_without_a_16bit_rate_has_unknown_prefill_not_a_guess():
    e = gpusizer.estimate("llama-3.1-8b", "p40", weights="fp16")
    assert e.prefill.unknown is not None and e.prefill.seconds_expected is None


# --- prices -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gpu_id", "low", "typical", "high"),
    [
        # ornnai.com (Ornn benchmark): B300 5.00-7.25 /h neocloud on-demand -> median of the two ends 6.125
        ("b300", 5.00, 6.125, 7.25),
        # CoreWeave GB200 4-GPU slice 42.00/h = 10.50 per GPU; Spheron GB200 Superchip 9.08/h = 4.54 per GPU
        ("gb200", 4.54, (4.54 + 10.50) / 2, 10.50),
        # deploybase 0.20-0.76 /h and gpuadvisor 0.35-0.50 /h: median of 0.20, 0.35, 0.50, 0.76 = 0.425
        ("t4", 0.20, 0.425, 0.76),
        # AIMultiple GPU index: the one Vast.ai P40 listing at 0.11 /h
        ("p40", 0.11, 0.11, 0.11),
    ],
)
def test_new_rental_prices(gpu_id, low, typical, high):
    entry = cost.load_prices()[gpu_id]
    assert (entry.min, entry.typical, entry.max) == pytest.approx((low, typical, high))
    assert all(q.source.startswith("https://") and str(q.checked) == "2026-12-03" for q in entry.quotes)
