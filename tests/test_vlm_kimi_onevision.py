"""Issue 18: Kimi K2.5's MoonViT-3D tower and projector counted from ``vision_config``, its image-token rule
(``navit_resize_image``), and LLaVA-OneVision (``llava_onevision``: SigLIP + projector + Qwen2, anyres-max-9)."""

from __future__ import annotations

import copy
import json
import math
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusizer import architecture, catalog, estimate, images
from gpusizer.hf import from_hf_config
from gpusizer.multimodal import Images, image_tokens

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "model-configs"


def _config(name: str) -> dict[str, object]:
    return json.loads((CONFIGS / f"{name}.json").read_text())["config"]  # type: ignore[no-any-return]


def test_kimi_k25_moonvit_counted_by_hand() -> None:
    # Moonshot's modeling_kimi_k25.py (Ascend/MindSpeed-MM@d300ee28 copy): MoonViT-3D, w 1152, f 4304, 27 layers:
    # Conv2d 3*14*14*1152 + 1152 = 678,528; position grid 64*64*1152 = 4,718,592 (the frames' sin-cos table is a
    # buffer); a block: norm0 + norm1 4*1152, wqkv 1152*3456 + 3456, wo 1152^2 + 1152, fc0 1152*4304 + 4304,
    # fc1 4304*1152 + 1152 = 15,239,504; 27 blocks 411,466,608; final LayerNorm 2304: 416,866,032 (README: "400M").
    # PatchMergerMLP: pre_norm LayerNorm(1152) 2304 + Linear(4608, 4608) 21,238,272 + Linear(4608, 7168) 33,037,312
    # = 54,277,888.
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a known wrapper: nothing assumed, nothing left uncounted
        model = from_hf_config(_config("kimi-k2.5"))
    vision = model.vision
    assert vision is not None and vision.projector_params == 54_277_888
    assert architecture.vit_params(vision) == 416_866_032 + 54_277_888
    assert vision == catalog.model("kimi-k2.5").vision
    # the README's 1T total and 400M encoder are labels; the text model is the compared total (+2.6 %), and the
    # tower adds 0.05 %: 1,026,408,232,448 + 471,143,920
    c = architecture.parameter_counts(catalog.model("kimi-k2.5"))
    assert c.main + c.vision == 1_026_879_376_368
    assert architecture.vit_params(vision) - vision.projector_params == pytest.approx(400e6, rel=0.05)


def test_kimi_k25_weights_hold_the_tower_at_bf16() -> None:
    # tests/test_catalogue_issue18c.py: the text model stores 594,205,305,856 B; the tower and projector add
    # 471,143,920 x 2 B = 942,287,840 B at the activation dtype when images are sized
    e = estimate("kimi-k2.5", "h200", gpus=8, images=Images(count=1))
    assert e.images is not None and e.images.vision_weights_bytes == 942_287_840


@pytest.mark.parametrize(("key", "value"), [("merge_type", "sd2"), ("mm_projector_type", "mlp"),
                                            ("merge_kernel_size", [2, 3]), ("init_pos_emb_width", 32)])
def test_kimi_k25_unknown_tower_layouts_are_refused(key: str, value: object) -> None:
    config = copy.deepcopy(_config("kimi-k2.5"))
    config["vision_config"][key] = value  # type: ignore[index]
    with pytest.raises(ValueError, match=key if key != "init_pos_emb_width" else "square"):
        from_hf_config(config)


def _navit(width: int, height: int, patch: int = 14, merge: int = 2, limit: int = 16384, side: int = 512) -> int:
    """Moonshot's ``navit_resize_image`` (media_utils.py, MindSpeed-MM@d300ee28 copy), transcribed as written."""
    s1 = math.sqrt(limit / (max(1.0, width // patch) * max(1.0, height // patch)))
    scale = min(1.0, s1, side * patch / width, side * patch / height)
    new_w, new_h = min(max(1, int(width * scale)), side * patch), min(max(1, int(height * scale)), side * patch)
    factor = merge * patch
    pad_h, pad_w = (factor - new_h % factor) % factor, (factor - new_w % factor) % factor
    return (new_h + pad_h) // factor * ((new_w + pad_w) // factor)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 12000), st.integers(1, 12000))
def test_kimi_tokens_reproduce_navit_resize_image(height: int, width: int) -> None:
    tokens, patches = images.kimi_tokens(height, width)
    assert tokens == _navit(width, height) and patches == 4 * tokens
    assert tokens <= 16384 / 4 + 2 * 256 + 1  # the budget, give or take the padding of one row and column


def test_kimi_image_rule_through_estimate() -> None:
    # 1024x768: 3942 patches < 16384, kept; padded to 1036 x 784 px: 37 x 28 = 1036 tokens of 4 patches
    model = catalog.model("kimi-k2.5")
    assert image_tokens(model, Images(count=2)) == ("kimi", 2072.0, 8288.0)
    with pytest.raises(ValueError, match="video is modelled for Qwen-VL, InternVL and LLaVA-OneVision only"):
        image_tokens(model, Images(frames=8))
    with pytest.raises(ValueError, match="kimi-k2 has no vision tower"):
        image_tokens(catalog.model("kimi-k2"), Images())


def _onevision_05b(**top: object) -> dict[str, object]:
    """llava-hf/llava-onevision-qwen2-0.5b-ov-hf as transformers' convert_llava_onevision_weights_to_hf.py (commit
    d058e0f7) builds it: SigLIP so400m at 384 px with 26 layers and no head, Qwen2-0.5B-Instruct's text config with
    the vocabulary resized to 151,938 padded to a multiple of 64 (152,000), embeddings tied. Not the published
    config.json (none was found verbatim), so nothing here is compared with a published total."""
    return {
        "model_type": "llava_onevision", "vision_feature_layer": -1, "vision_feature_select_strategy": "full",
        "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152, "image_size": 384,
                          "intermediate_size": 4304, "num_attention_heads": 16, "num_hidden_layers": 26,
                          "patch_size": 14, "vision_use_head": False},
        "text_config": {"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
                        "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 152000,
                        "max_position_embeddings": 32768, "tie_word_embeddings": True, "torch_dtype": "bfloat16"},
        **top,
    }


def test_llava_onevision_importer_counts_siglip_projector_and_newline_by_hand() -> None:
    # SigLIP (modeling_siglip.py): Conv2d 3*14*14*1152 + 1152 = 678,528; positions (384 // 14)^2 = 729 x 1152 =
    # 839,808; a layer 15,239,504 (as MoonViT's: 2 LayerNorms, q/k/v/o with biases, fc1/fc2 with biases); 26 layers
    # 396,227,104; post_layernorm 2304: 397,747,744. Projector 1152*896 + 896 + 896*896 + 896 = 1,836,800 and the
    # image_newline 896. Qwen2-0.5B at vocab 152,000, tied: 136,192,000 + 24 x 14,912,384 + 896 = 494,090,112.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = from_hf_config(_onevision_05b())
    vision = model.vision
    assert vision is not None and vision.class_token is False and vision.grid_pinpoints is None
    assert vision.projector_params == 1_836_800 + 896
    assert architecture.vit_params(vision) == 397_747_744 + 1_837_696
    c = architecture.parameter_counts(model)
    assert c.main == 494_090_112 and c.main + c.vision == 893_675_552
    # SiglipVisionConfig's default vision_use_head=True adds the pooling head: probe 1152 + attention (in_proj
    # 3*1152^2 + 3456, out_proj 1152^2 + 1152) 5,313,024 + LayerNorm 2304 + MLP 4,962,512 + 4,959,360 = 15,238,352
    config = _onevision_05b()
    del config["vision_config"]["vision_use_head"]  # type: ignore[attr-defined]
    headed = from_hf_config(config).vision
    assert headed is not None and headed.projector_params - vision.projector_params == 15_238_352


def _features(orig_h: int, orig_w: int, pinpoints: tuple[tuple[int, int], ...]) -> int:
    """transformers' LlavaOnevisionProcessor._get_number_of_features (commit d2759a76), transcribed as written, with
    select_best_resolution (image_processing_utils.py) for 384 px tiles and 729 image tokens."""
    best, best_e, best_waste = (0, 0), 0, math.inf
    for h, w in pinpoints:
        scale = min(w / orig_w, h / orig_h)
        effective = min(int(orig_w * scale) * int(orig_h * scale), orig_w * orig_h)
        waste = h * w - effective
        if effective > best_e or (effective == best_e and waste < best_waste):
            best, best_e, best_waste = (h, w), effective, waste
    ch, cw = 27 * (best[0] // 384), 27 * (best[1] // 384)
    if orig_w / orig_h > cw / ch:
        ch -= (ch - int(orig_h * (cw / orig_w))) // 2 * 2
    else:
        cw -= (cw - int(orig_w * (ch / orig_h))) // 2 * 2
    unpadded, newline = ch * cw, ch
    ratio = math.sqrt(ch * cw / (9 * 27**2))
    if ratio > 1.1:
        unpadded, newline = int(ch // ratio) * int(cw // ratio), int(ch // ratio)
    return unpadded + newline + 729


@settings(max_examples=200, deadline=None)
@given(st.integers(16, 5000), st.integers(16, 5000))
def test_llava_onevision_tokens_reproduce_the_processor(height: int, width: int) -> None:
    tokens, patches = images.llava_onevision_tokens(height, width)
    assert tokens == _features(height, width, images.LLAVA_ONEVISION_PINPOINTS)
    assert patches % 729 == 0 and 2 * 729 <= patches <= 37 * 729  # the base image and 1 to 36 tiles


def test_llava_onevision_rule_through_estimate() -> None:
    model = from_hf_config(_onevision_05b()).model_copy(update={"id": "llava-ov-0.5b"})
    # 1024x768 on the 36 default pinpoints: 768x1152, 2x3 tiles: 54 x 73 unpadded + 54 + 729 = 4725; 7 x 729 patches
    assert image_tokens(model, Images()) == ("llava_onevision", 4725.0, 5103.0)
    # 8 frames: 8 x 14^2 + 1 = 1569 tokens (processing_llava_onevision.py), 8 x 729 patches
    assert image_tokens(model, Images(frames=8)) == ("llava_onevision", 1569.0, 5832.0)
    e = estimate(model, "h100-sxm", context=8192, images=Images())
    assert e.images is not None and e.context == 8192 + 4725
    v = model.vision
    assert v is not None
    assert e.images.encoder_flops == pytest.approx(7 * images.encoder_flops(729, 1152, 4304, 26))  # tile by tile


def test_llava_onevision_shrink_floors_as_python_floor_division() -> None:
    # 582x1921: canvas 768x2304 (2x6 tiles), 54 x 162 features, 50 x 162 unpadded; q = sqrt(8100/6561) = 10/9 in
    # float is a hair above, so the processor's 50 // q is 44 (not 45) and 162 // q is 145: 44*145 + 44 + 729 = 7153
    assert images.llava_onevision_tokens(582, 1921) == (7153.0, 13 * 729.0)


def test_llava_onevision_text_config_takes_qwen2config_defaults() -> None:
    # LlavaOnevisionConfig builds CONFIG_MAPPING["qwen2"] (Qwen2Config) from its text_config; a key left out takes
    # Qwen2Config's default (transformers configuration_qwen2.py @ caa31776): vocab 151,936, hidden 4096, ffn 22,016,
    # 32 layers, 32 heads, 32 KV heads, context 32,768, untied. A layer: q/k/v 3 x (4096^2 + 4096) + o 4096^2 =
    # 67,121,152; MLP 3 x 4096 x 22,016 = 270,532,608; 2 norms 8192: 337,661,952; x 32 = 10,805,182,464;
    # embeddings 2 x 151,936 x 4096 = 1,244,659,712; final norm 4096: 12,049,846,272.
    config = _onevision_05b(text_config={"model_type": "qwen2"})
    model = from_hf_config(config)
    assert (model.vocab_size, model.hidden_size, model.intermediate_size, model.num_layers) == (151936, 4096, 22016, 32)
    assert (model.num_heads, model.num_kv_heads, model.max_context, model.tie_embeddings) == (32, 32, 32768, False)
    assert architecture.parameter_counts(model).main == 12_049_846_272
    # the projector reads the defaulted text width: 1152*4096 + 4096 + 4096^2 + 4096 + image_newline 4096
    assert model.vision is not None and model.vision.projector_params == 21_508_096
    # a text_config naming no model_type is Qwen2 too; given keys win, omitted ones default (vocab, context)
    partial = {k: v for k, v in _onevision_05b()["text_config"].items()  # type: ignore[attr-defined]
               if k not in ("model_type", "vocab_size", "max_position_embeddings")}
    small = from_hf_config(_onevision_05b(text_config=partial))
    assert (small.vocab_size, small.hidden_size, small.num_kv_heads, small.max_context) == (151936, 896, 2, 32768)
    # Qwen2Config's num_key_value_heads default is 32, not the head count: 14 heads and no KV count is refused
    # rather than read as 14 KV heads
    del partial["num_key_value_heads"]
    with pytest.raises(ValueError, match="num_attention_heads 14 is not a multiple of num_key_value_heads 32"):
        from_hf_config(_onevision_05b(text_config=partial))
    # the defaults are Qwen2's alone: a llama text_config inside llava_onevision gets none
    with pytest.raises(ValueError, match="lacks essential keys: hidden_size, num_hidden_layers, num_attention_heads"):
        from_hf_config(_onevision_05b(text_config={"model_type": "llama", "intermediate_size": 8}))
