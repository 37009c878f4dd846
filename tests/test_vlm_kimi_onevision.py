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
    with pytest.raises(ValueError, match="video is modelled for Qwen-VL and InternVL only"):
        image_tokens(model, Images(frames=8))
    with pytest.raises(ValueError, match="kimi-k2 has no vision tower"):
        image_tokens(catalog.model("kimi-k2"), Images())
