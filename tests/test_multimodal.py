"""Images in VLM requests (gpusizer.multimodal, estimate(images=)): token rules by hand, the composition against a
text-only estimate of the same length, the vision weights against Gemma 3's published count, and the invariants."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusizer import architecture, catalog, estimate, images, multimodal
from gpusizer.cli import main
from gpusizer.multimodal import Images


def _numbers(e: object) -> dict[str, object]:
    data = e.to_dict()  # type: ignore[attr-defined]
    data.pop("images", None)
    return data


def test_gemma3_two_images_by_hand() -> None:
    # Gemma 3: 256 tokens an image whatever its size (config mm_tokens_per_image); SigLIP sees (896/14)^2 = 4096
    # patches. Encoder: 27 x [2 x 4096 x (4 x 1152^2 + 2 x 1152 x 4304) + 4 x 4096^2 x 1152]
    # = 27 x (124,721,823,744 + 77,309,411,328) = 5,454,843,346,944 FLOP an image; two: 10,909,686,693,888.
    e = estimate("gemma-3-27b", "h100-sxm", context=8192, images=Images(count=2, width=3500, height=2500))
    assert e.images is not None
    assert e.images.image_tokens_per_request == 512.0
    assert e.images.patches_per_request == 8192.0
    assert e.images.encoder_flops == 10_909_686_693_888.0
    assert e.context == 8192 + 512
    # The vision tower and projector at bf16: 423,060,336 x 2 B.
    assert e.images.vision_weights_bytes == 846_120_672.0


def test_images_are_tokens_of_the_sequence() -> None:
    # The KV cache, max concurrency and prefill with 512 image tokens are those of a text sequence 512 longer.
    with_images = estimate("gemma-3-27b", "h100-sxm", context=8192, concurrency=8, images=Images(count=2))
    text = estimate("gemma-3-27b", "h100-sxm", context=8704, concurrency=8)
    assert with_images.memory.kv_cache_bytes == text.memory.kv_cache_bytes
    assert with_images.max_concurrency == text.max_concurrency
    assert with_images.prefill.seconds_expected == text.prefill.seconds_expected
    s = with_images.images
    assert s is not None
    # TTFT = encoder + prefill; the encoder runs at the prefill's achieved rate F_prefill / t_prefill.
    rate = text.prefill.flops / text.prefill.seconds_expected
    assert s.encoder_seconds_expected == pytest.approx(s.encoder_flops / rate)
    assert s.ttft_seconds_expected == pytest.approx(text.prefill.ttft_seconds_expected + s.encoder_flops / rate)


def test_prompt_gets_the_image_tokens() -> None:
    e = estimate("gemma-3-4b", "l4", context=4096, prompt=1000, images=Images(count=3))
    assert e.prefill.prompt == 1000 + 3 * 256


def test_gemma3_vision_tower_matches_published_count() -> None:
    # Gemma 3 technical report (arXiv:2503.19786) Table 1: vision encoder 417M (SigLIP 400M, shared by 4B/12B/27B).
    # vit_params = 423,060,336 with the 2,950,272-parameter projector: encoder 420,110,064, 0.75 % above 417M.
    vision = catalog.model("gemma-3-27b").vision
    assert vision is not None
    encoder = architecture.vit_params(vision) - vision.projector_params
    assert encoder == pytest.approx(417e6, rel=0.01)


def test_qwen_rule_and_video_through_the_family() -> None:
    # A Qwen2.5-VL-family record (14 px patches): 1024x768 -> 756 x 1036 px -> 54 x 74 = 3996 patches, 999 tokens;
    # 16 frames are 8 temporal patches: 7992 tokens.
    gemma = catalog.model("gemma-3-4b")
    assert gemma.vision is not None
    qwen = gemma.model_copy(update={"family": "Qwen2.5-VL", "id": "qwen-like"})
    assert multimodal.image_tokens(qwen, Images(count=2)) == ("qwen", 1998.0, 7992.0)
    assert multimodal.image_tokens(qwen, Images(count=1, frames=16)) == ("qwen", 7992.0, 31968.0)
    # Mistral 3 (Mistral Small 3.1's tower: 14 px, spatial merge 2, image_size 1540 = the longest edge): 1024x768
    # fits; ceil(768/28) = 28 rows of ceil(1024/28) = 37 tokens + 1 [IMG_BREAK]/[IMG_END] = 1064; 28 x 37 x 4 patches.
    tower = gemma.vision.model_copy(update={"patch_size": 14, "image_size": 1540, "spatial_merge_size": 2})
    mistral = gemma.model_copy(update={"family": "Mistral 3", "id": "mistral-like", "vision": tower})
    assert multimodal.image_tokens(mistral, Images(count=1)) == ("pixtral", 1064.0, 4144.0)
    # Pixtral-12B's tower (16 px patches, no merger, image_size 1024): 48 rows of 64 tokens + 1 = 3120 tokens,
    # 3072 patches. Before the tower's merge and longest edge were read, the rule assumed merge 2 and 1540 px:
    # 24 rows of 32 + 1 = 792 tokens, a 3.9x undercount.
    pixtral = mistral.model_copy(update={"vision": tower.model_copy(
        update={"patch_size": 16, "image_size": 1024, "spatial_merge_size": 1})})
    assert multimodal.image_tokens(pixtral, Images(count=1)) == ("pixtral", 3120.0, 3072.0)
    assert images.pixtral_tokens(768, 1024, patch=16) == (792.0, 3072.0)  # the old call: 24 rows x (32 + 1)


def test_llama4_rule_through_the_catalogue() -> None:
    # Llama 4 Scout's tower: 336 px tiles of 24 x 24 patches of 14 px, pixel shuffle 1/2 -> 144 tokens a tile.
    # 1024x768: 12 tiles (3 x 4) + the global tile; 12 x (144 + 1 separator) + <|image|> + 144 = 1885 tokens,
    # 13 x 576 = 7488 patches; two images 3770 tokens. The encoder runs over 26 tiles of 576 patches each.
    scout = catalog.model("llama-4-scout")
    assert scout.vision is not None and scout.vision.spatial_merge_size == 2
    assert multimodal.image_tokens(scout, Images(count=2)) == ("llama4", 3770.0, 14976.0)
    e = estimate("llama-4-scout", "h200", gpus=8, context=8192, images=Images(count=2))
    assert e.images is not None and e.context == 8192 + 3770
    v = scout.vision
    assert e.images.encoder_flops == pytest.approx(
        26 * images.encoder_flops(576, v.hidden_size, v.intermediate_size, v.num_layers))


def test_unmodelled_and_text_models_raise() -> None:
    with pytest.raises(ValueError, match="no published image-token rule"):
        estimate(catalog.model("llama-4-scout").model_copy(update={"family": "Phi-4-MM", "id": "x"}), "h100-sxm",
                 gpus=4, images=Images(count=1))
    with pytest.raises(ValueError, match="no vision tower"):
        estimate("llama-3.1-8b", "h100-sxm", images=Images(count=1))
    with pytest.raises(ValueError, match="video"):
        estimate("gemma-3-4b", "l4", images=Images(count=1, frames=8))
    with pytest.raises(TypeError, match="images"):
        estimate("gemma-3-4b", "l4", images=2)  # type: ignore[arg-type]


def test_tt_inference_server_comparison() -> None:
    # tenstorrent/tt-inference-server #1222/#1225: gemma-3-27b-it, 16,000 text + 64 output tokens + one image.
    # On a KV budget of 131,072 tokens: 131,072 / 16,064 = 8.16 and 131,072 / 16,320 = 8.03 (vLLM logged 268 image
    # tokens: 256 + the delimiters this count leaves out): 8 sequences either way; the image costs under 2 %.
    text = estimate("gemma-3-27b", "h200", context=16_064)
    image = estimate("gemma-3-27b", "h200", context=16_064, images=Images(count=1, width=3500, height=2500))
    assert image.context == 16_320
    assert image.max_concurrency <= text.max_concurrency
    assert image.memory.kv_cache_bytes / text.memory.kv_cache_bytes == pytest.approx(16_320 / 16_064, rel=0.02)


@settings(max_examples=15, deadline=None)
@given(count=st.integers(0, 8), extra=st.integers(1, 4), context=st.integers(1024, 32_768),
       users=st.integers(1, 64), model=st.sampled_from(["gemma-3-4b", "gemma-3-27b"]))
def test_images_invariants(count: int, extra: int, context: int, users: int, model: str) -> None:
    none = estimate(model, "h100-sxm", context=context, concurrency=users)
    zero = estimate(model, "h100-sxm", context=context, concurrency=users, images=Images(count=0))
    assert _numbers(zero) == _numbers(none)  # zero images: today's answer exactly
    fewer = estimate(model, "h100-sxm", context=context, concurrency=users, images=Images(count=count))
    more = estimate(model, "h100-sxm", context=context, concurrency=users, images=Images(count=count + extra))
    assert fewer.images is not None and more.images is not None
    assert more.memory.kv_cache_bytes >= fewer.memory.kv_cache_bytes
    assert more.images.ttft_seconds_expected >= fewer.images.ttft_seconds_expected
    assert more.images.ttft_seconds_ceiling >= fewer.images.ttft_seconds_ceiling
    assert more.max_concurrency <= fewer.max_concurrency <= none.max_concurrency


@settings(max_examples=20, deadline=None)
@given(w=st.integers(100, 2500), h=st.integers(100, 2500), grow=st.integers(1, 1000), frames=st.integers(1, 64))
def test_larger_images_never_fewer_tokens(w: int, h: int, grow: int, frames: int) -> None:
    # Within Qwen's pixel bounds. Above max_pixels the published rule is not monotone: 3173x4072 px is 16,240 tokens
    # tokens, 3174x4073 px 16,128 (smart_resize floors each side after scaling), so no invariant holds there.
    gemma = catalog.model("gemma-3-4b")
    for family in ("Qwen2.5-VL", "Mistral 3"):
        record = gemma.model_copy(update={"family": family})
        f = frames if family == "Qwen2.5-VL" else 1
        small = multimodal.image_tokens(record, Images(width=w, height=h, frames=f))[1]
        large = multimodal.image_tokens(record, Images(width=w + grow, height=h + grow, frames=f))[1]
        assert large >= small


def test_cli_fit_images_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fit", "gemma-3-27b", "h100", "--images", "2", "--image-size", "1024x768", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["images"]["image_tokens_per_request"] == 512.0
    assert data["context"] == data["prefill"]["prompt"]
    assert np.isclose(data["images"]["vision_weights_bytes"], 846_120_672)


def test_cli_fit_images_text_and_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fit", "gemma-3-4b", "l4", "--images", "1"]) == 0
    assert "256 image tokens" in capsys.readouterr().out
    assert main(["fit", "gemma-3-4b", "l4", "--image-size", "800x600"]) != 0
    assert "--image-size needs --images" in capsys.readouterr().err


def test_qwen25_vl_7b_parameters_match_published() -> None:
    # Hugging Face page of Qwen/Qwen2.5-VL-7B-Instruct: 8.29B params (safetensors, checked 2026-12-03).
    # By hand, w 1280, f 3420, 32 blocks, merge 2, out 3584: Conv3d 3 x 2 x 14^2 x 1280 = 1,505,280; a block
    # 2 x 1280 (RMSNorms) + 4 x (1280^2 + 1280) (qkv, proj) + 3 x 1280 x 3420 + 2 x 3420 + 1280 (gated MLP)
    # = 19,702,200, x 32 = 630,470,400; merger 1280 + 5120^2 + 5120 + 5120 x 3584 + 3584 = 44,574,464;
    # vision 676,550,144; text (Qwen2.5-7B, untied) 7,615,616,512; total 8,292,166,656.
    model = catalog.model("qwen2.5-vl-7b")
    counts = architecture.parameter_counts(model)
    assert counts.vision == 676_550_144
    assert counts.total == 8_292_166_656
    assert counts.total == pytest.approx(8.29e9, rel=0.01)


def test_qwen25_vl_7b_images_and_video() -> None:
    # 1024x768 -> 999 tokens, 3996 patches (images.qwen_tokens); 2 images: 1998 tokens.
    e = estimate("qwen2.5-vl-7b", "l40s", context=16_384, images=Images(count=2, width=1024, height=768))
    assert e.images is not None and e.images.rule == "qwen"
    assert e.images.image_tokens_per_request == 1998.0
    # Gated ViT: 2 x 32 x [2 x 3996 x (4 x 1280^2 + 3 x 1280 x 3420) + 4 x 3996^2 x 1280]
    # = 2 x 32 x (157,333,708,800 + 81,756,241,920) = 15,301,756,846,080 FLOP (7.65 TFLOP an image).
    assert e.images.encoder_flops == pytest.approx(15_301_756_846_080)
    # 32 frames of 640x360 -> 364 x 644 px: 26 x 46 = 1196 patches a frame group, 16 groups: 19,136 patches, 4784
    # tokens; attention within each group of 1196 patches.
    video = estimate("qwen2.5-vl-7b", "l40s", context=16_384, images=Images(count=1, width=640, height=360, frames=32))
    assert video.images is not None
    assert video.images.image_tokens_per_request == 4784.0
    assert video.images.encoder_flops == pytest.approx(16 * 32 * (2 * 1196 * (4 * 1280**2 + 3 * 1280 * 3420)
                                                                  + 4 * 1196**2 * 1280))


def test_cli_fit_video_frames(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fit", "qwen2.5-vl-7b", "l40s", "--video-frames", "32", "--image-size", "640x360", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["images"]["image_tokens_per_request"] == 4784.0


def test_unknown_matrix_rate_leaves_expected_none() -> None:
    # A prefill without a published matrix rate has seconds_expected None (prefill.unknown): so have the expected
    # encoder time and TTFT; the ceilings remain.
    e = estimate("gemma-3-4b", "l4", context=4096, images=Images(count=1))
    blind = dataclasses.replace(e.prefill, seconds_expected=None, ttft_seconds_expected=None)
    load = multimodal.encode(catalog.model("gemma-3-4b"), Images(count=1), "gemma3", 256.0, 4096.0, blind, 2.0)
    assert load.encoder_seconds_expected is None and load.ttft_seconds_expected is None
    assert load.ttft_seconds_ceiling > e.prefill.ttft_seconds_ceiling


def test_shortlist_workload_gets_the_image_tokens() -> None:
    import argparse

    from gpusizer.commands import images as imaging
    from gpusizer.serving import Workload

    traffic = Workload(rate=2, prompt_tokens=2048, output_tokens=256)
    args = argparse.Namespace(images=2, image_size=(1024, 768), video_frames=None)
    # Gemma 3: 2 x 256 tokens on the mean prompt, 2048 + 512 = 2560.
    assert imaging.workload(args, catalog.model("gemma-3-27b"), traffic).prompt_tokens == 2560
    none = argparse.Namespace(images=None, image_size=None, video_frames=None)
    assert imaging.workload(none, catalog.model("gemma-3-27b"), traffic) is traffic
