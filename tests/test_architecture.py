"""Parameter counts computed from the architecture match what publishers state.

Each catalogue model carries its publisher's figure and the convention it follows (whether the
total includes the vision tower or MTP modules, whether "active" counts the embedding and head). An
exact figure (a table of counts) must be matched within 1 %; a label ("70B", "3.3B") within one unit
of its last digit, because publishers both round (Llama 2 "7B" is 6.74B) and truncate (Phi-4
"14-billion" is 14.66B, Qwen3-30B-A3B "3.3B activated" is 3.35B), and never tighter than 1 %.
"""

import math

import pytest

import gpusizer
from gpusizer import architecture
from gpusizer.catalog import MLA, LinearAttention, Mamba, MoE

MODELS = gpusizer.models()


def tolerance(value: float, exact: bool) -> float:
    if exact:
        return 0.01 * value
    digit = 10 ** math.floor(math.log10(value))
    while digit > 1 and round(value / digit) * digit != value:
        digit /= 10
    return max(digit, 0.01 * value)


def published_total(model) -> int:
    c = architecture.parameter_counts(model)
    return c.main + c.vision * model.published.includes_vision + c.mtp * model.published.includes_mtp


def published_active(model) -> int:
    c = architecture.parameter_counts(model)
    p = model.published
    return c.active - c.embedding * (not p.active_includes_embedding) - c.head * (not p.active_includes_head)


@pytest.mark.parametrize("model", [m for m in MODELS if m.published.total], ids=lambda m: m.id)
def test_total_matches_the_published_count(model):
    expected = model.published.total
    assert abs(published_total(model) - expected) <= tolerance(expected, model.published.exact), model.published.text


@pytest.mark.parametrize("model", [m for m in MODELS if m.published.active and m.moe], ids=lambda m: m.id)
def test_active_matches_the_published_count(model):
    expected = model.published.active
    assert abs(published_active(model) - expected) <= tolerance(expected, model.published.exact), model.published.text


def test_at_least_45_models_and_every_one_has_a_published_figure_or_says_why():
    assert len(MODELS) >= 45
    missing = [m.id for m in MODELS if not m.published.total]
    assert missing == ["deepseek-v3.2"] or not missing


# --- hand-derived values --------------------------------------------------------------------------


def test_llama2_7b_is_6_74b():
    # 32 x (4 x 4096^2 + 3 x 4096 x 11008) + 65 x 4096 norms + 2 x 32000 x 4096 = 6,738,415,616
    assert architecture.parameter_counts(gpusizer.model("llama-2-7b")).total == 6_738_415_616


def test_gpt_oss_120b_matches_the_model_card_table():
    # arXiv:2508.10925 Table 1: total 116.83B, active 5.13B (unembedding counted, embedding not)
    c = architecture.parameter_counts(gpusizer.model("gpt-oss-120b"))
    assert c.total == pytest.approx(116.83e9, rel=0.001)
    assert c.active - c.embedding == pytest.approx(5.13e9, rel=0.002)


def test_deepseek_v3_main_and_mtp():
    # README: 671B main model + 14B MTP module on Hugging Face = 685B; 37B activated
    c = architecture.parameter_counts(gpusizer.model("deepseek-v3"))
    assert c.main == pytest.approx(671e9, rel=0.001)
    assert c.active == pytest.approx(37e9, rel=0.02)
    assert c.total == pytest.approx(685e9, rel=0.01)


def test_moe_active_counts_k_of_e_experts():
    # Mixtral 8x7B: 2 of 8 experts; 46.7B total, 12.9B active (Mistral AI announcement)
    c = architecture.parameter_counts(gpusizer.model("mixtral-8x7b"))
    assert c.experts_active * 4 == c.experts
    assert c.main == pytest.approx(46.7e9, rel=0.005) and c.active == pytest.approx(12.9e9, rel=0.01)


def test_block_formulas_by_hand():
    # GQA, Llama 3 8B layer: q 4096x4096, k and v 4096x1024, o 4096x4096
    assert architecture.attention_params(4096, 32, 8, 128).matrix == 4096 * (4096 + 2 * 1024) + 4096 * 4096
    # MLA, DeepSeek-V3 layer (arXiv:2405.04434): q_a 7168x1536, q_b 1536x(128x192), kv_a 7168x576,
    # kv_b 512x(128x256), o (128x128)x7168; latent norms 1536 + 512
    mla = MLA(q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)
    split = architecture.mla_params(7168, 128, mla)
    assert split.matrix == 7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256 + 128 * 128 * 7168
    assert split.vector == 1536 + 512
    # MoE: router 2048x128 + 128 experts of 3 x 2048 x 768 (Qwen3-30B-A3B layer)
    moe = MoE(num_experts=128, experts_per_token=8, expert_intermediate_size=768)
    always, routed = architecture.moe_params(2048, moe)
    assert (always.total, routed.total) == (2048 * 128, 128 * 3 * 2048 * 768)
    # Gated DeltaNet, Qwen3-Next: K = 16 x 128, V = 32 x 128
    lin = LinearAttention(num_key_heads=16, num_value_heads=32, key_head_dim=128, value_head_dim=128, conv_kernel=4)
    k, v = 2048, 4096
    assert architecture.deltanet_params(2048, lin).matrix == 2048 * (2 * k + 2 * v) + 2048 * 64 + v * 2048
    # Mamba-2, Nemotron-3-Nano: inner 64 x 64 = 4096, conv 4096 + 2 x 8 x 128 = 6144
    m = Mamba(num_heads=64, head_dim=64, state_size=128, n_groups=8, conv_kernel=4)
    assert architecture.mamba2_params(2688, m).matrix == 2688 * (4096 + 6144 + 64) + 4096 * 2688


# --- KV layout ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "full", "windowed"),
    [
        ("llama-3.1-8b", 2 * 32 * 8 * 128, ()),  # 131,072 B/token in BF16 (docs/methods.md#kv-cache-per-token)
        ("llama-3.1-70b", 2 * 80 * 8 * 128, ()),  # 327,680 B/token in BF16
        ("deepseek-v3", 61 * (512 + 64), ()),  # MLA latent + rope key: 70,272 B/token in BF16
        ("gpt-oss-120b", 18 * 2 * 8 * 64, ((128, 18 * 2 * 8 * 64),)),
        ("gemma-3-27b", 10 * 2 * 16 * 128, ((1024, 52 * 2 * 16 * 128),)),  # 5 local : 1 global over 62 layers
        ("qwen3-next-80b-a3b", 12 * 2 * 2 * 256, ()),  # 12 of 48 layers attend; 36 DeltaNet layers hold state
    ],
)
def test_kv_layout(name, full, windowed):
    layout = architecture.kv_layout(gpusizer.model(name))
    assert (layout.full, layout.windowed) == (full, windowed)


def test_linear_and_ssm_layers_hold_a_constant_state():
    # Qwen3-Next: 36 DeltaNet layers x 32 heads x 128 x 128 FP32 = 75,497,472 B per sequence
    assert architecture.kv_layout(gpusizer.model("qwen3-next-80b-a3b")).state_bytes == 36 * 32 * 128 * 128 * 4
    # Nemotron-3-Nano: 23 Mamba-2 layers x 64 heads x 64 x 128 state FP32
    assert architecture.kv_layout(gpusizer.model("nemotron-3-nano-30b-a3b")).state_bytes == 23 * 64 * 64 * 128 * 4
