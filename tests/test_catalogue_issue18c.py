"""Issue 18: Kimi-K2-Instruct-0905, Kimi-K2-Thinking, GLM-4.6 and GLM-4.7.

Each model's parameter count is compared with the figure its publisher prints (source in each test); the
configs are assembled from the same-architecture sibling plus the published context (data/model-configs/
INDEX.md says so), so each test also checks the record kept its sibling's architecture.
"""

from __future__ import annotations

import warnings

import pytest
from test_catalogue_issue18 import total
from test_missing_values import assert_no_nan

import gpusizer
from gpusizer import architecture

T = 1e12
G = 1e9
NEW = ["kimi-k2-instruct-0905", "kimi-k2-thinking", "glm-4.6", "glm-4.7"]


@pytest.mark.parametrize("model_id", ["glm-4.6", "glm-4.7"])
def test_glm46_and_glm47_total_is_the_readmes_355b_within_1_percent(model_id):
    # zai-org/GLM-4.5:README.md (commit 170f20b2c10659008fdbc909d478bc2a75bc3627) download table: GLM-4.6 and
    # GLM-4.7 are 355B-A32B. 92 layers (3 dense of width 12288, 89 MoE of 160 x 1536-wide experts + 1 shared,
    # top 8), GQA 96/8 x 128 with QKV bias and qk-norm, vocab 151,552 untied: 352.80B without the MTP layer,
    # -0.62 % from 355B; active 32.86B without the input embedding (GLM's convention, see GLM-4.5).
    c = architecture.parameter_counts(gpusizer.model(model_id))
    assert total(model_id) == pytest.approx(355 * G, rel=0.01)
    assert total(model_id) == pytest.approx(352.797829024 * G, rel=1e-12)
    assert c.active - c.embedding == pytest.approx(32 * G, rel=0.03)


@pytest.mark.parametrize("model_id", ["glm-4.6", "glm-4.7"])
def test_glm46_and_glm47_are_glm45_with_a_202752_token_context(model_id):
    # xorbitsai/inference:doc/source/models/builtin/llm/glm-4.6.rst / glm-4.7.rst: Context Length 202752;
    # the README: "The context window has been expanded from 128K to 200K tokens"
    new, old = gpusizer.model(model_id), gpusizer.model("glm-4.5")
    assert new.max_context == 202752 and old.max_context == 131072
    assert new.model_copy(update={"id": "x", "name": "x", "max_context": 0, "hf_repo": None, "published": None,
                                  "source": (), "notes": "", "checked": None}) == old.model_copy(
        update={"id": "x", "name": "x", "max_context": 0, "hf_repo": None, "published": None, "source": (),
                "notes": "", "checked": None})
    assert new.mtp_layers == 1 and new.weights == "bf16"


@pytest.mark.parametrize("model_id", ["kimi-k2-instruct-0905", "kimi-k2-thinking"])
def test_kimi_k2_variants_count_as_kimi_k2_against_the_cards_1t(model_id):
    # Model cards (moonshotai/Kimi-K2-Instruct-0905, moonshotai/Kimi-K2-Thinking): Total Parameters 1T,
    # Activated Parameters 32B, 256K context. "1T" is one significant figure, so the 1 % check cannot hold:
    # the per-tensor count is 1.0264T (+2.6 %), Kimi-K2-Instruct's exactly (61 layers, 1 dense + 60 MoE of
    # 384 x 2048-wide experts + 1 shared, MLA with q_lora 1536, vocab 163,840 untied).
    assert total(model_id) == total("kimi-k2") == pytest.approx(1.026408232448 * T, rel=1e-12)
    assert total(model_id) == pytest.approx(1 * T, rel=0.03)
    c = architecture.parameter_counts(gpusizer.model(model_id))
    assert c.active == pytest.approx(32 * G, rel=0.03)  # 32.86B with embedding and head
    assert gpusizer.model(model_id).max_context == 262144


def test_kimi_k2_thinking_counts_its_int4_routed_experts_as_stored():
    # K2-Thinking ships INT4 weight-only QAT (W4A16, scale per 32: Zhihu Frontier / Moonshot); compressed-tensors
    # leaves attention, shared experts, the dense MLP and lm_head in BF16 (quantization_config.ignore)
    thinking, instruct = gpusizer.model("kimi-k2-thinking"), gpusizer.model("kimi-k2-instruct-0905")
    assert thinking.weights == "int4-g32" and set(thinking.unquantized_roles) == {"attention", "ffn"}
    assert instruct.weights == "fp8"
    # routed experts: 60 layers x 384 x 3 x 7168 x 2048 = 1,014,686,023,680 params stored as compressed-tensors
    # pack-quantized INT4, group 32, symmetric: 4 bits + one BF16 scale per 32 weights = 4.5 bits = 0.5625 B
    # (weight_packed int32, weight_scale BF16 [out, in/32]: csabakecskemeti/DQ_int4-to-bf16_dequant:kernel.py,
    # commit df5bbb54f7fd0dc662effa9135cb21c6b9a3f0ab); the other 11,722,208,768 (attention, shared and dense MLPs,
    # norms, embedding, head) at 2 B: 570,760,888,320 B + 23,444,417,536 B = 594,205,305,856 B. At AWQ's g128
    # 4.156 bits it would read 550,605,515,776 B, 7.3 % short.
    routed = 60 * 384 * 3 * 7168 * 2048
    rest = 1_026_408_232_448 - routed
    assert routed * 0.5625 + rest * 2 == 594_205_305_856
    assert gpusizer.estimate(thinking, "h200").memory.weights_bytes == pytest.approx(594_205_305_856, rel=1e-12)
    # K2.5 adds its MoonViT tower and projector at BF16: 471,143,920 x 2 B = 942,287,840 B (test_vlm_kimi_onevision)
    assert gpusizer.estimate("kimi-k2.5", "h200").memory.weights_bytes == pytest.approx(
        594_205_305_856 + 942_287_840, rel=1e-12)
    assert gpusizer.estimate(thinking, "h200", weights="int4").memory.weights_bytes == pytest.approx(
        routed * 0.51953125 + rest * 2, rel=1e-12)
    # the FP8 0905 checkpoint stores about twice that: 1.03 TB
    assert gpusizer.estimate(instruct, "h200").memory.weights_bytes == pytest.approx(1.029e12, rel=1e-3)


@pytest.mark.parametrize("model_id", NEW)
def test_new_models_fit_8_h200_or_say_they_do_not_without_nan(model_id):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = gpusizer.estimate(model_id, "h200", gpus=8, context=32768, concurrency=4)
    assert_no_nan(e)
    # BF16 GLM (88 GB a GPU) and INT4-g32 K2-Thinking (75 GB) fit; FP8 K2-0905 (130 GB a GPU) does not under vLLM's 90 %
    assert e.fits == (model_id != "kimi-k2-instruct-0905")


def test_qwen3_vl_8b_counts_its_deepstack_tower_to_the_safetensors_parameter():
    # Hugging Face model API, Qwen/Qwen3-VL-8B-Instruct (revision 0c351dd0...): safetensors total 8,767,123,696.
    # Text (Qwen3-8B dims, vocab 151,936 untied): 8,190,735,360. Tower: Conv3d 3 x 2 x 16^2 x 1152 + 1152 bias
    # = 1,770,624; 2304 x 1152 position embeddings = 2,654,208; 27 blocks of 4(w^2 + w) + 2wf + f + w + 4w
    # (w 1152, f 4304) = 15,239,504 each: 411,466,608; 415,891,440 in all. Mergers (m^2 w = 4608, out 4096):
    # 4608^2 + 4608 + 4608 x 4096 + 4096 = 40,116,736 each, plus the main one's LayerNorm 2 x 1152 and the three
    # DeepStack ones' 2 x 4608: 40,119,040 + 3 x 40,125,952 = 160,496,896. 576,388,336 + 8,190,735,360 = the API's.
    merger = 4608 * 4608 + 4608 + 4608 * 4096 + 4096
    tower = 1_770_624 + 2_654_208 + 27 * (4 * (1152**2 + 1152) + 2 * 1152 * 4304 + 4304 + 1152 + 4 * 1152)
    model = gpusizer.model("qwen3-vl-8b")
    c = architecture.parameter_counts(model)
    assert tower == 415_891_440
    assert c.vision == tower + (2 * 1152 + merger) + 3 * (2 * 4608 + merger)
    assert c.main == 8_190_735_360 and c.main + c.vision == 8_767_123_696
    assert model.vision is not None and model.vision.spatial_merge_size == 2 and model.vision.patch_size == 16
    # image tokens by the Qwen rule with its 16 px patches: 1024x768 -> 768 x 1024 px -> 48 x 64 = 3072 patches, 768
    from gpusizer.multimodal import Images, image_tokens
    assert image_tokens(model, Images(count=1)) == ("qwen", 768.0, 3072.0)
