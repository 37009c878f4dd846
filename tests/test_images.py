"""Image and video tokens by each model's published processor rule, and the ViT encoder's FLOPs."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusizer import images

sides = st.integers(min_value=28, max_value=8000)


def test_qwen25_vl_1024x768_is_999_tokens():
    # round(768/28) = 27 -> 756 px, round(1024/28) = 37 -> 1036 px; 54 x 74 patches of 14 px = 3996; /4 = 999
    assert images.qwen_tokens(768, 1024) == (999.0, 3996.0)


def test_qwen3_vl_uses_16px_patches_and_32px_factor():
    # round(768/32) = 24 -> 768, round(1024/32) = 32 -> 1024; 48 x 64 = 3072 patches, 768 tokens
    assert images.qwen_tokens(768, 1024, patch=16, max_pixels=16777216, min_pixels=65536) == (768.0, 3072.0)


def test_qwen_max_pixels_caps_a_huge_image():
    # beta = sqrt(1e8 / 12845056) = 2.7902; 10000 / beta / 28 = 127.99 -> 127 x 28 = 3556 px a side
    tokens, patches = images.qwen_tokens(10000, 10000)
    assert patches == (3556 / 14) ** 2 and tokens == 127**2


def test_qwen_min_pixels_grows_a_tiny_image():
    # 28 x 28 = 784 < 3136: beta = sqrt(3136 / 784) = 2 -> 56 x 56 px, 4 x 4 patches, 4 tokens
    assert images.qwen_tokens(28, 28) == (4.0, 16.0)


def test_qwen_video_groups_frames_by_two():
    # 16 frames -> 8 temporal patches of 999 tokens; 15 frames round up to the same 8
    assert images.qwen_tokens(768, 1024, frames=16)[0] == 8 * 999
    assert images.qwen_tokens(768, 1024, frames=15)[0] == 8 * 999


def test_tenstorrent_rule_is_a_floor_approximation():
    # tenstorrent/tt-inference-server PR #1305 uses (h // 28) * (w // 28) = 27 * 36 = 972 for Qwen2.5-VL;
    # the processor rounds to nearest: 27 * 37 = 999
    assert images.qwen_tokens(768, 1024)[0] - (768 // 28) * (1024 // 28) == 27


def test_mistral3_rows_end_with_a_break_token():
    # ceil(768/28) = 28 rows, ceil(1024/28) = 37 columns: 28 x (37 + 1) = 1064; patches 28 x 37 x 4
    assert images.pixtral_tokens(768, 1024) == (1064.0, 4144.0)


def test_pixtral_12b_16px_no_merge_and_1024_edge():
    # 2048 x 1024 halves to 1024 x 512: 64 x 32 patches of 16 px, 64 x 33 tokens
    assert images.pixtral_tokens(2048, 1024, patch=16, merge=1, longest_edge=1024) == (64 * 33.0, 64 * 32.0)


def test_encoder_flops_by_hand():
    # N = 10, w = 2, f = 3, L = 1: 2 x 10 x (16 + 12) + 4 x 100 x 2 = 560 + 800
    assert images.encoder_flops(10, 2, 3, 1) == 1360.0
    # gated: three matrices, 2 x 10 x (16 + 18) = 680; window 5 keys: 4 x 10 x 5 x 2 = 400
    assert images.encoder_flops(10, 2, 3, 1, gated=True, window=5) == 1080.0


def test_arrays_broadcast():
    tokens, _ = images.qwen_tokens(np.array([768, 28]), 1024)
    assert tokens.tolist() == [999.0, images.qwen_tokens(28, 1024)[0]]


@given(sides, sides)
def test_qwen_resize_is_a_multiple_of_28_within_the_pixel_bounds(h, w):
    hh, ww = images.qwen_resized(h, w)
    assert hh % 28 == 0 and ww % 28 == 0
    assert 3136 <= hh * ww <= 12845056


@given(sides, sides)
def test_pixtral_tokens_never_exceed_the_longest_edge_square(h, w):
    # at most 55 rows of 55 patches of 28 px (1540 px) + 1 break each
    tokens, patches = images.pixtral_tokens(h, w)
    assert 1 <= patches / 4 <= 55 * 55 and tokens <= 55 * 56


@given(st.integers(28, 1200), st.integers(28, 1200), st.integers(1, 300))
def test_inside_the_longest_edge_a_taller_image_never_takes_fewer_tokens(h, w, k):
    assert images.pixtral_tokens(h + k, w)[0] >= images.pixtral_tokens(h, w)[0]


@given(st.integers(1, 10**5), st.integers(1, 10**5))
def test_encoder_flops_grow_with_patches(n, extra):
    assert images.encoder_flops(n + extra, 1152, 4304, 27) > images.encoder_flops(n, 1152, 4304, 27)


def test_window_never_exceeds_full_attention():
    assert images.encoder_flops(4096, 1280, 3420, 32, gated=True, window=64) < images.encoder_flops(
        4096, 1280, 3420, 32, gated=True
    )
    assert images.encoder_flops(10, 2, 3, 1, window=100) == pytest.approx(images.encoder_flops(10, 2, 3, 1))


# --- Llama 4 tiles and InternVL dynamic tiling --------------------------------------------------------------


def test_llama4_tiles_hand_derived():
    # 1024x768 (W x H): s = min(b 336/1024, a 336/768); upscaling first reaches 1 at b = 4 (1.3125) and a = 3
    # (1.3125); 3x4, 3x5 and 4x4 share s = 1.3125 and 3x4 has the fewest tiles: 12 tiles + the global tile.
    assert images.llama4_tiles(768, 1024) == (3.0, 4.0)
    assert images.llama4_tokens(768, 1024) == (12 * 145 + 145.0, 13 * 576.0)
    # 300x200: 1x1 upscales by min(336/300, 336/200) = 1.12, the least of all; one tile and no global tile:
    # <|image|> + 144 tokens
    assert images.llama4_tokens(200, 300) == (145.0, 576.0)
    # a 500 x 5000 strip can only shrink: 1 column of a rows scales by min(336/500, a 336/5000) = 0.672 from a = 10
    assert images.llama4_tiles(5000, 500) == (10.0, 1.0)
    # vectorised over images
    rows, cols = images.llama4_tiles(np.array([768, 200]), np.array([1024, 300]))
    assert list(rows) == [3.0, 1.0] and list(cols) == [4.0, 1.0]


def test_internvl_tiles_hand_derived():
    # 1024x768: aspect 4/3, met exactly by 4 columns x 3 rows (12 <= max 12): 12 tiles + thumbnail = 13 x 256
    assert images.internvl_tokens(768, 1024) == (3328.0, 13312.0)
    # 1500x1000: aspect 1.5 = 3/2: 6 tiles; 448x448: 1x1 (2x2 needs HW > 2 x 448^2); 896x896: 2x2
    assert images.internvl_tiles(1000, 1500) == 6.0
    assert images.internvl_tiles(448, 448) == 1.0 and images.internvl_tokens(448, 448) == (256.0, 1024.0)
    assert images.internvl_tiles(896, 896) == 4.0
    with pytest.raises(ValueError, match="max_tiles"):
        images.internvl_tiles(448, 448, max_tiles=0)


@settings(max_examples=60, deadline=None)
@given(st.integers(16, 8000), st.integers(16, 8000))
def test_tile_rules_stay_within_their_tile_budget(h, w):
    rows, cols = images.llama4_tiles(h, w)
    assert 1 <= rows * cols <= 16
    tokens, patches = images.llama4_tokens(h, w)
    assert 145 <= tokens <= 17 * 145 and patches == (rows * cols + (rows * cols > 1)) * 576
    n = images.internvl_tiles(h, w)
    assert 1 <= n <= 12 and images.internvl_tokens(h, w)[0] == 256 * (n + (n > 1))


def test_gemma3_pan_and_scan_crops_hand_derived():
    # 1024x768: r = 4/3 >= 1.2; floor(4/3 + 1/2) = 1, floor(1024/256) = 4 -> 1, raised to 2; crops 512 x 768 >= 256:
    # 2 crops, so the image costs 256 x 3 = 768 tokens with pan-and-scan on
    assert images.gemma3_crops(768, 1024) == 2.0
    # 500 wide x 2000 tall: r = 4: floor(4.5) = 4, floor(2000/256) = 7 -> 4 crops of 500 x 500
    assert images.gemma3_crops(2000, 500) == 4.0
    # 1000 x 300: r = 3.33: floor(3.83) = 3, floor(1000/256) = 3 -> 3 crops of 334 x 300
    assert images.gemma3_crops(300, 1000) == 3.0
    # square, or too little elongation (1.19 < 1.2): none; 600 x 200: crops of 300 x 200, 200 < 256: none
    assert images.gemma3_crops(896, 896) == 0.0 and images.gemma3_crops(1000, 1190) == 0.0
    assert images.gemma3_crops(200, 600) == 0.0


@settings(max_examples=60, deadline=None)
@given(st.integers(16, 8000), st.integers(16, 8000))
def test_gemma3_crops_are_none_or_between_2_and_4_and_symmetric(h, w):
    c = images.gemma3_crops(h, w)
    assert c == 0 or 2 <= c <= 4
    assert images.gemma3_crops(w, h) == c  # the rule looks at the longer and shorter side only
