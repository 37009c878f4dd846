"""Issue 18: InternVL (``internvl_chat``, ``internvl``) and LLaVA (``llava``, ``llava_next``) wrappers: towers counted
from ``vision_config`` against the published safetensors totals, their image-token rules (InternVL tiles and video,
LLaVA-1.5's fixed 576, LLaVA-NeXT's anyres) through ``estimate(images=...)``, and Gemma 3's ``--pan-and-scan``."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusizer import architecture, catalog, estimate, images, multimodal
from gpusizer.cli import main
from gpusizer.hf import architectures, from_hf_config
from gpusizer.multimodal import Images
from gpusizer.web.app import create_app

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "model-configs"


def _config(name: str) -> dict[str, object]:
    return json.loads((CONFIGS / f"{name}.json").read_text())["config"]  # type: ignore[no-any-return]


def test_internvl3_1b_counts_the_safetensors_total_exactly() -> None:
    # https://huggingface.co/api/models/OpenGVLab/InternVL3-1B-hf: safetensors total 938,193,024 (also measured on
    # OpenGVLab/InternVL3-1B revision 4415a3b8...). By hand, from the printed module tree:
    # InternViT-300M: class token 1024 + Conv2d 3*14*14*1024 + 1024 = 603,136 + positions (32^2 + 1) * 1024
    # = 1,049,600; a block: qkv 1024*3072 + 3072 + proj 1024^2 + 1024 + fc1 1024*4096 + 4096 + fc2 4096*1024
    # + 1024 + 2 LayerNorms 4096 + ls1, ls2 2048 = 12,598,272; 24 blocks 302,358,528; no final norm: 304,012,288.
    # mlp1: LayerNorm(4096) 8192 + 4096*896 + 896 + 896*896 + 896 = 4,482,816.
    # Qwen2 LLM: embedding and head 151,674*896 = 135,899,904 each; a layer: q 896^2 + 896, k and v 896*128 + 128,
    # o 896^2, MLP 3*896*4864, 2 norms 896: 14,912,384; 24 layers 357,897,216; final norm 896.
    model = catalog.model("internvl3-1b")
    c = architecture.parameter_counts(model)
    assert c.vision == 304_012_288 + 4_482_816
    assert c.main == 2 * 135_899_904 + 357_897_216 + 896
    assert c.main + c.vision == 938_193_024
    v = model.vision
    assert v is not None and v.spatial_merge_size == 2 and v.image_size == 448 and v.layer_scale


def test_llava_15_7b_counts_the_safetensors_total_exactly() -> None:
    # llava-hf/llava-1.5-7b-hf: 7,063,427,072 parameters (safetensors header audit of 686 tensors, and
    # count_parameters of LlavaForConditionalGeneration built from its config). By hand:
    # CLIP ViT-L/14-336: class 1024 + Conv2d 3*14*14*1024 (no bias) 602,112 + positions 577*1024 = 590,848
    # + pre-LayerNorm 2048 + 24 blocks of 4*(1024^2 + 1024) + 1024*4096 + 4096 + 4096*1024 + 1024 + 4096
    # = 12,596,224 (302,309,376) + post-LayerNorm 2048 = 303,507,456; projector 1024*4096 + 4096 + 4096^2 + 4096
    # = 20,979,712. Vicuna-7B (LlamaConfig defaults) with vocab 32,064: 2 * 32,064*4096 = 262,668,288 +
    # 32 * (4*4096^2 + 3*4096*11008 + 2*4096) = 6,476,267,520 + 4096 = 6,738,939,904.
    model = catalog.model("llava-1.5-7b")
    c = architecture.parameter_counts(model)
    assert c.vision == 303_507_456 + 20_979_712
    assert c.main == 6_738_939_904
    assert c.main + c.vision == 7_063_427_072
    assert model.num_layers == 32 and model.hidden_size == 4096 and model.intermediate_size == 11008
    assert model.num_kv_heads == 32 and model.weights == "fp16"


def test_internvl_image_tokens_follow_the_tiles() -> None:
    # 1024x768: aspect 4/3 exactly -> 4 x 3 = 12 tiles + a thumbnail, 13 x 256 tokens = 3328 a image (two: 6656);
    # each tile is (448/14)^2 = 1024 ViT patches: 13,312 an image, encoded tile by tile.
    model = catalog.model("internvl3-1b")
    assert multimodal.image_tokens(model, Images(count=2)) == ("internvl", 6656.0, 26624.0)
    # 448x448: one tile, no thumbnail: 256 tokens.
    assert multimodal.image_tokens(model, Images(count=1, width=448, height=448)) == ("internvl", 256.0, 1024.0)
    e = estimate("internvl3-1b", "l4", context=8192, images=Images(count=2))
    assert e.images is not None and e.context == 8192 + 6656
    v = model.vision
    assert v is not None
    assert e.images.encoder_flops == pytest.approx(
        26 * images.encoder_flops(1024, v.hidden_size, v.intermediate_size, v.num_layers))


def test_llava_15_image_tokens_are_fixed() -> None:
    # Every image is cropped to 336 px: (336 // 14)^2 + 1 class token - 1 (the default strategy) = 576 tokens;
    # the encoder sees 577 patches. Three images: 1728 tokens whatever their size.
    model = catalog.model("llava-1.5-7b")
    for width, height in ((1024, 768), (336, 336), (4000, 300)):
        shown = Images(count=3, width=width, height=height)
        assert multimodal.image_tokens(model, shown) == ("llava", 1728.0, 1731.0)
    e = estimate("llava-1.5-7b", "l4", context=2048, prompt=100, images=Images(count=1))
    assert e.prefill.prompt == 100 + 576
    assert e.images is not None
    assert e.images.encoder_flops == pytest.approx(images.encoder_flops(577, 1024, 4096, 24))
    with pytest.raises(ValueError, match="video"):
        estimate("llava-1.5-7b", "l4", images=Images(count=1, frames=4))


def test_wrappers_are_known_and_read_their_sections() -> None:
    assert {"internvl_chat", "llava", "llava_next"} <= set(architectures())
    # internvl_chat keeps its LLM in llm_config: the text model is Qwen2's, not the wrapper's top-level keys.
    internvl = from_hf_config(_config("internvl3-1b"))
    assert internvl.hidden_size == 896 and internvl.num_kv_heads == 2 and internvl.qkv_bias
    # A llava text_config without dims takes LlamaConfig's defaults; given ones win.
    cfg = copy.deepcopy(_config("llava-1.5-7b"))
    cfg["text_config"] = {**cfg["text_config"], "hidden_size": 5120, "num_hidden_layers": 40,  # type: ignore[dict-item]
                          "num_attention_heads": 40, "intermediate_size": 13824}
    assert from_hf_config(cfg).num_layers == 40


def test_projector_input_widens_with_several_feature_layers() -> None:
    # vision_feature_layer [-2, -5]: the projector's first Linear takes 2 x 1024 features: + 1024 x 4096 weights.
    cfg = copy.deepcopy(_config("llava-1.5-7b"))
    base = from_hf_config(cfg).vision
    cfg["vision_feature_layer"] = [-2, -5]
    wide = from_hf_config(cfg).vision
    assert base is not None and wide is not None
    assert wide.projector_params - base.projector_params == 1024 * 4096
    cfg["multimodal_projector_bias"] = False
    assert from_hf_config(cfg).vision.projector_params == 2048 * 4096 + 4096 * 4096  # type: ignore[union-attr]


def test_internvl_bad_shuffle_ratio_is_refused() -> None:
    cfg = copy.deepcopy(_config("internvl3-1b"))
    cfg["downsample_ratio"] = 0.3
    with pytest.raises(ValueError, match="downsample_ratio must be 1/k"):
        from_hf_config(cfg)


def test_llava_next_adds_its_image_newline_and_llama_defaults_stay_in_wrappers() -> None:
    # LlavaNextForConditionalGeneration holds one more vector, image_newline, of the text width (4096).
    cfg = copy.deepcopy(_config("llava-1.5-7b"))
    cfg["model_type"] = "llava_next"
    base = from_hf_config(_config("llava-1.5-7b")).vision
    nxt = from_hf_config(cfg).vision
    assert base is not None and nxt is not None and nxt.projector_params - base.projector_params == 4096
    # LlamaConfig's defaults fill a wrapper's llama text_config only: a bare llama config still lacks its dims,
    # and a mistral text_config inside llava_next gets no Llama widths.
    with pytest.raises(ValueError, match="lacks essential keys: hidden_size"):
        from_hf_config({"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 2,
                        "intermediate_size": 8, "vocab_size": 10})
    cfg["text_config"] = {"model_type": "mistral", "vocab_size": 32064}
    with pytest.raises(ValueError, match="hidden_size"):
        from_hf_config(cfg)


@pytest.mark.parametrize(("width", "height", "crops"), [
    # (huggingface/transformers gemma3 image_processing pan_and_scan, defaults 256 px / 4 crops / ratio 1.2)
    (1024, 768, 2),  # r = 1.33: min(floor(1024/256) = 4, floor(1.83) = 1) = 1 -> at least 2 crops of 512 x 768
    (3000, 1000, 3),  # r = 3: min(11, floor(3.5) = 3) = 3 crops of 1000 x 1000
    (1000, 8000, 4),  # r = 8 (portrait): min(31, 8) = 8 -> at most 4 crops
    (896, 896, 0),  # square: r = 1 < 1.2
    (300, 100, 0),  # 2 crops of 150 x 100 would be under 256 px: none
])
def test_gemma3_pan_and_scan_adds_one_image_per_crop(width: int, height: int, crops: int) -> None:
    # Each crop is resized to 896 x 896 like the image: 256 tokens and 4096 SigLIP patches more, encoded on its own.
    model = catalog.model("gemma-3-27b")
    shown = Images(count=2, width=width, height=height, pan_and_scan=True)
    assert multimodal.image_tokens(model, shown) == ("gemma3", 2 * 256.0 * (1 + crops), 2 * 4096.0 * (1 + crops))
    e = estimate("gemma-3-27b", "h100-sxm", context=8192, images=shown)
    assert e.images is not None and e.context == 8192 + 2 * 256 * (1 + crops)
    # 5,454,843,346,944 FLOP per 896 px image (test_multimodal): the crops cost as many images.
    assert e.images.encoder_flops == pytest.approx(2 * (1 + crops) * 5_454_843_346_944)
    # Off (the processor's default) it is 256 tokens an image whatever the shape.
    assert multimodal.image_tokens(model, Images(count=2, width=width, height=height))[1] == 512.0


def test_pan_and_scan_is_refused_where_there_is_no_such_rule(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match=r"pan-and-scan is Gemma 3's rule; llava-1\.5-7b"):
        estimate("llava-1.5-7b", "l4", images=Images(count=1, pan_and_scan=True))
    assert main(["fit", "qwen2.5-vl-7b", "h100", "--images", "1", "--pan-and-scan"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pan-and-scan is Gemma 3's rule; qwen2.5-vl-7b (Qwen2.5-VL) has none" in err
    assert main(["fit", "gemma-3-27b", "h100", "--pan-and-scan"]) == 2
    assert "--pan-and-scan needs --images" in capsys.readouterr().err


def test_cli_pan_and_scan_by_hand(capsys: pytest.CaptureFixture[str]) -> None:
    # 3000x1000: 3 crops, (1 + 3) x 256 = 1024 tokens, 16,384 patches.
    args = ["fit", "gemma-3-27b", "h100", "--images", "1", "--image-size", "3000x1000", "--json"]
    assert main([*args, "--pan-and-scan"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["images"]["image_tokens_per_request"] == 1024.0
    assert data["images"]["patches_per_request"] == 16384.0
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["images"]["image_tokens_per_request"] == 256.0


def _processor_tokens(height: int, width: int, pinpoints: tuple[tuple[int, int], ...]) -> int:
    """huggingface/transformers LlavaNextProcessor._get_number_of_features (processing_llava_next.py, commit
    81bb907c) and select_best_resolution (image_processing_utils.py, commit 091630d5), transcribed, with 336 px
    tiles, 14 px patches, num_additional_image_tokens 1 and the default strategy (less that one)."""
    best, best_e, best_waste = (0, 0), 0, float("inf")
    for ph, pw in pinpoints:
        scale = min(pw / width, ph / height)
        effective = min(int(width * scale) * int(height * scale), width * height)
        if effective > best_e or (effective == best_e and ph * pw - effective < best_waste):
            best, best_e, best_waste = (ph, pw), effective, ph * pw - effective
    rows, cols = 24 * (best[0] // 336), 24 * (best[1] // 336)
    if width / height > cols / rows:
        rows -= 2 * ((rows - (height * cols) // width) // 2)
    else:
        cols -= 2 * ((cols - (width * rows) // height) // 2)
    return rows * cols + rows + 24 * 24 + 1 - 1


@settings(max_examples=200, deadline=None)
@given(st.integers(16, 5000), st.integers(16, 5000))
def test_llava_next_tokens_reproduce_the_processor(height: int, width: int) -> None:
    tokens, patches = images.llava_next_tokens(height, width)
    assert tokens == _processor_tokens(height, width, images.LLAVA_NEXT_PINPOINTS)
    h, w = images.llava_next_resolution(height, width)
    assert patches == (1 + (h // 336) * (w // 336)) * 577


def test_llava_next_rule_through_an_imported_config() -> None:
    # 1024x768 on the v1.6 pinpoints: the 672x672 canvas (672 x 504 px shown) = 2 x 2 tiles: 48 x 48 features, the
    # image fills 768 * 48 // 1024 = 36 rows (6 of padding above and below): 36 x 48 + 36 newlines + 576 = 2340
    # tokens; the encoder sees the base image and 4 tiles, 5 x 577 patches, tile by tile.
    cfg = copy.deepcopy(_config("llava-1.5-7b"))
    cfg["model_type"] = "llava_next"
    cfg["image_grid_pinpoints"] = [[336, 672], [672, 336], [672, 672], [1008, 336], [336, 1008]]
    model = from_hf_config(cfg).model_copy(update={"id": "llava-next-test"})
    assert model.vision is not None and model.vision.grid_pinpoints == images.LLAVA_NEXT_PINPOINTS
    assert multimodal.image_tokens(model, Images(count=1)) == ("llava_next", 2340.0, 2885.0)
    e = estimate(model, "l4", context=4096, images=Images(count=2))
    assert e.images is not None and e.context == 4096 + 4680
    assert e.images.encoder_flops == pytest.approx(10 * images.encoder_flops(577, 1024, 4096, 24))
    cfg["image_grid_pinpoints"] = [[336, "672"]]
    with pytest.raises(ValueError, match="image_grid_pinpoints must list"):
        from_hf_config(cfg)


def test_transformers_internvl_layout_counts_the_hf_repo_total() -> None:
    # OpenGVLab/InternVL3-1B-hf (transformers' InternVLForConditionalGeneration): safetensors total 938,193,024
    # (https://huggingface.co/api/models/OpenGVLab/InternVL3-1B-hf), the same weights as InternVL3-1B. Its config
    # layout (model_type internvl, text_config, vision_config internvl_vision with [h, w] sizes, attention_bias,
    # use_qk_norm) as in transformers' InternVLConfig; the values translated from internvl3-1b.json.
    chat = _config("internvl3-1b")
    vision = chat["vision_config"]  # type: ignore[index]
    cfg = {
        "model_type": "internvl", "downsample_ratio": 0.5, "projector_hidden_act": "gelu",
        "text_config": {**chat["llm_config"], "tie_word_embeddings": False},  # type: ignore[dict-item]
        "vision_config": {"model_type": "internvl_vision", "hidden_size": 1024, "intermediate_size": 4096,
                          "num_hidden_layers": vision["num_hidden_layers"], "num_attention_heads": 16,
                          "image_size": [448, 448], "patch_size": [14, 14], "attention_bias": True,
                          "use_qk_norm": False, "norm_type": "layer_norm"},
    }
    model = from_hf_config(cfg)
    c = architecture.parameter_counts(model)
    assert c.main + c.vision == 938_193_024
    assert model.vision == from_hf_config(chat).vision
    cfg["vision_config"]["patch_size"] = [14, 16]  # type: ignore[index]
    with pytest.raises(ValueError, match=r"patch_size must be an integer or a square \[height, width\]"):
        from_hf_config(cfg)


def test_internvl_video_is_one_tile_a_frame() -> None:
    # OpenGVLab/InternVL3-1B card, video example: load_video(..., num_segments=8, max_num=1): dynamic_preprocess
    # with max_num 1 gives one 448 px tile a frame and no thumbnail: 8 x 256 = 2048 tokens, 8 x 1024 patches,
    # whatever the frame size; encoded frame by frame.
    model = catalog.model("internvl3-1b")
    assert multimodal.image_tokens(model, Images(count=1, frames=8)) == ("internvl", 2048.0, 8192.0)
    e = estimate("internvl3-1b", "l4", context=4096, images=Images(count=1, frames=8, width=1920, height=1080))
    assert e.images is not None and e.context == 4096 + 2048
    assert e.images.encoder_flops == pytest.approx(8 * images.encoder_flops(1024, 1024, 4096, 24))


def test_web_fit_takes_pan_and_scan_as_an_option() -> None:
    # POST /api/fit options are the CLI's flags: pan_and_scan true is --pan-and-scan (3000x1000: 3 crops, 1024).
    options = {"images": 1, "image_size": "3000x1000", "pan_and_scan": True}
    with TestClient(create_app()) as client:
        r = client.post("/api/fit", json={"model": "gemma-3-27b", "gpu": "h100", "options": options})
        assert r.status_code == 200, r.text
        assert r.json()["images"]["image_tokens_per_request"] == 1024.0
        r = client.post("/api/fit", json={"model": "gemma-3-27b", "gpu": "h100", "options": {"pan_and_scan": "yes"}})
        assert r.status_code == 422 and "options.pan_and_scan: true or false" in r.text
