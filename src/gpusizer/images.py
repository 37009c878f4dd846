r"""Images and video frames as LLM tokens, and the vision-encoder work they cost.

Pure functions of numbers that broadcast like numpy ufuncs. A vision-language model turns an image
into placeholder tokens of its LLM's sequence, which occupy the KV cache and the prefill like text
tokens; the vision encoder (a ViT) first runs over the image's patches. Each model family publishes
its own rule for the token count:

* Qwen2-VL, Qwen2.5-VL (14 px patches) and Qwen3-VL (16 px patches): dynamic resolution. The image
  is resized so that each side is a multiple of ``patch * merge`` and the pixel count lies within
  ``[min_pixels, max_pixels]`` (``qwen_resized``); the ViT sees one patch per ``patch x patch`` square
  and a 2x2 merger makes one token of four patches (``qwen_tokens``); video frames are grouped by
  the temporal patch (2).
* Gemma 3: every image is resized to 896x896 (4096 SigLIP patches of 14 px) and pooled to a fixed
  256 tokens (``mm_tokens_per_image``); with pan-and-scan (off by default) each crop of an elongated
  image is one more such image (``gemma3_crops``).
* Pixtral and Mistral 3: the image is scaled down to fit ``longest_edge``, cut into patches of
  ``patch * merge`` pixels, one token each, with an ``[IMG_BREAK]`` after every row (the last one is
  ``[IMG_END]``) (``pixtral_tokens``).
* Llama 4: the image is fitted, without distortion, to the canvas of ``rows x cols`` tiles of 336 px
  (``rows * cols <= max_patches``, 16) that needs the least upscaling (or, failing any, the least
  downscaling), the smallest such canvas; each tile is 24 x 24 patches of 14 px, pixel-shuffled by 1/2
  to 144 tokens; with more than one tile a global tile (the whole image at 336 px) follows, with one
  separator token after each tile and the ``<|image|>`` token before the global tile (``llama4_tiles``,
  ``llama4_tokens``).
* LLaVA-NeXT (anyres): the ``image_grid_pinpoints`` canvas showing the most pixels, in 336 px tiles of 24 x 24
  features less the padding rows, each row ending in an ``image_newline``, and the image at 336 px (576 tokens).
* InternVL: the image is split into ``cols x rows`` tiles of 448 px (``min_tiles <= cols * rows <=
  max_tiles``) whose aspect ratio is closest to the image's, plus a thumbnail tile when there is more than
  one; 256 tokens a tile (``internvl_tiles``, ``internvl_tokens``).

The delimiters Qwen (``<|vision_start|>``, ``<|vision_end|>``) and Gemma 3 (``<start_of_image>``,
``<end_of_image>``) add around each image are not counted (2 tokens an image).

References
----------
.. [1] huggingface/transformers, src/transformers/models/qwen2_vl/image_processing_qwen2_vl.py
   (commit cb0fc56f3caccab77d00d44051a67d4b0980cbd2), ``smart_resize``; Qwen2.5-VL's
   preprocessor_config.json: ``min_pixels`` 3136, ``max_pixels`` 12845056, patch 14, merge 2,
   temporal patch 2 (https://huggingface.co/Qwen/Qwen2.5-VL-7B-Instruct/blob/main/preprocessor_config.json).
.. [2] huggingface/transformers, src/transformers/models/pixtral/image_processing_pixtral.py
   (commit c801cd786e2e8cd35767125b8a8e8c26538fb648), ``get_resize_output_image_size``.
.. [3] Gemma Team, "Gemma 3 technical report," arXiv:2503.19786, 2025 (896x896 input, 256 tokens).
.. [4] huggingface/transformers, src/transformers/models/llama4/image_processing_llama4_fast.py (commit
   e1b551679e267be053b45581cbabd028a14defd2), ``find_supported_resolutions``, ``get_best_fit``, the global
   tile in ``_preprocess``; src/transformers/models/llama4/processing_llama4.py (commit
   f5d3f1e134fe49e8dd4009846e54c1ccfe747328), ``_prompt_split_image`` and ``num_patches_per_chunk``.
.. [5] huggingface/transformers, src/transformers/models/got_ocr2/image_processing_got_ocr2.py (commit
   66951798c714fe51da4968c5034a350687ffc413), ``find_closest_aspect_ratio`` and ``crop_to_multi_image``
   (InternVL's ``dynamic_preprocess``: 448 px tiles, thumbnail, ``max_num`` 12 on the InternVL2.5/3 cards).
.. [6] huggingface/transformers, src/transformers/models/gemma3/image_processing_gemma3.py (commit
   a391a51d5a0f01de151d84427aabaefea4e7fb85), ``pan_and_scan``; processing_gemma3.py, ``Gemma3ProcessorKwargs``
   defaults: ``do_pan_and_scan`` False, ``pan_and_scan_min_crop_size`` 256, ``pan_and_scan_max_num_crops`` 4,
   ``pan_and_scan_min_ratio_to_activate`` 1.2.
.. [7] huggingface/transformers, src/transformers/image_processing_utils.py (commit
   091630d58781404f2b35a7f5dff1c29bda71b549), ``select_best_resolution``; models/llava_next/processing_llava_next.py
   (commit 81bb907ccf3494b5409b0b745bb10c8a617050b7), ``_get_number_of_features``, ``_get_unpadded_features``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusizer.checks import scalar_or_array
from gpusizer.numeric import ceil, floor, maximum, minimum, number, where

__all__ = [
    "LLAVA_NEXT_PINPOINTS", "encoder_flops", "gemma3_crops", "internvl_tiles", "internvl_tokens", "llama4_tiles",
    "llama4_tokens", "llava_next_resolution", "llava_next_tokens", "pixtral_tokens", "qwen_resized", "qwen_tokens",
]


def qwen_resized(height: Any, width: Any, factor: Any = 28, min_pixels: Any = 3136, max_pixels: Any = 12845056) -> Any:
    r"""Height and width a Qwen-VL image processor resizes an image to (``smart_resize``). [px]

    Parameters
    ----------
    height, width : array_like
        Image size :math:`H, W`. [px]
    factor : array_like, optional
        Patch size times merge size :math:`f` (28 for Qwen2.5-VL, 32 for Qwen3-VL). [px]
    min_pixels, max_pixels : array_like, optional
        Bounds of the resized pixel count (Qwen2.5-VL's defaults). [px]

    Returns
    -------
    tuple of numeric
        :math:`\bar H = f\,\mathrm{round}(H/f)` and :math:`\bar W` alike; above ``max_pixels`` both
        shrink by :math:`\beta = \sqrt{HW/\text{max}}` and round down to :math:`f`, below ``min_pixels``
        they grow by :math:`\beta = \sqrt{\text{min}/(HW)}` and round up. [px]

    Examples
    --------
    >>> qwen_resized(768, 1024)  # 27.4 -> 27 x 28 and 36.6 -> 37 x 28
    (756.0, 1036.0)
    >>> qwen_resized(10000, 10000)  # beta = 10000 / sqrt(12845056) = 2.790: floor(127.99) = 127 x 28
    (3556.0, 3556.0)
    """
    h, w, f = number(height), number(width), number(factor)
    lo, hi = number(min_pixels), number(max_pixels)
    h_bar, w_bar = maximum(f, _round(h / f) * f), maximum(f, _round(w / f) * f)
    shrink = (h * w / hi) ** 0.5
    grow = (lo / (h * w)) ** 0.5
    big, small = h_bar * w_bar > hi, h_bar * w_bar < lo
    h_out = where(big, maximum(f, floor(h / shrink / f) * f), where(small, ceil(h * grow / f) * f, h_bar))
    w_out = where(big, maximum(f, floor(w / shrink / f) * f), where(small, ceil(w * grow / f) * f, w_bar))
    return scalar_or_array(h_out), scalar_or_array(w_out)


def _round(x: Any) -> Any:
    """Python's ``round``: half to even, as the processors' ``round(height / factor)``."""
    return scalar_or_array(np.round(x) * 1.0)


def qwen_tokens(
    height: Any, width: Any, patch: Any = 14, merge: Any = 2, frames: Any = 1, temporal: Any = 2,
    min_pixels: Any = 3136, max_pixels: Any = 12845056,
) -> tuple[Any, Any]:
    r"""LLM tokens and ViT patches of one Qwen-VL image (``frames=1``) or video.

    Parameters
    ----------
    height, width : array_like
        Image or frame size. [px]
    patch, merge : array_like, optional
        ViT patch size :math:`p` [px] and spatial merge size :math:`m` [-].
    frames : array_like, optional
        Video frames sampled :math:`F`; an image is one frame, repeated to fill the temporal patch. [-]
    temporal : array_like, optional
        Frames per temporal patch :math:`t` (2). [-]
    min_pixels, max_pixels : array_like, optional
        Resize bounds of ``qwen_resized``. [px]

    Returns
    -------
    tokens, patches : numeric
        Patches :math:`N = \lceil F/t \rceil (\bar H/p)(\bar W/p)` the ViT attends over and tokens
        :math:`N/m^2` the merger hands the LLM. [token]

    Examples
    --------
    >>> qwen_tokens(768, 1024)  # 756 x 1036 px: 54 x 74 = 3996 patches, 999 tokens
    (999.0, 3996.0)
    >>> qwen_tokens(768, 1024, frames=16)  # 8 temporal groups
    (7992.0, 31968.0)
    """
    p, m = number(patch), number(merge)
    h, w = qwen_resized(height, width, p * m, min_pixels, max_pixels)
    patches = ceil(number(frames) / number(temporal)) * (h / p) * (w / p)
    return scalar_or_array(patches / (m * m)), scalar_or_array(patches)


def pixtral_tokens(
    height: Any, width: Any, patch: Any = 14, merge: Any = 2, longest_edge: Any = 1540
) -> tuple[Any, Any]:
    r"""LLM tokens and ViT patches of one Pixtral / Mistral 3 image.

    Parameters
    ----------
    height, width : array_like
        Image size. [px]
    patch, merge : array_like, optional
        ViT patch size :math:`p` (14 for Mistral 3, 16 for Pixtral-12B) [px] and the patch merger's
        size :math:`m` (2 for Mistral 3, 1 for Pixtral-12B) [-].
    longest_edge : array_like, optional
        Longest side the processor keeps :math:`L` (1540 for Mistral 3, 1024 for Pixtral-12B). [px]

    Returns
    -------
    tokens, patches : numeric
        With :math:`r = \max(1, H/L, W/L)`, :math:`\bar H = \lfloor H/r \rfloor`: rows
        :math:`R = \lceil \bar H/(pm) \rceil`, columns :math:`C = \lceil \bar W/(pm) \rceil`; tokens
        :math:`R (C + 1)` (one ``[IMG_BREAK]`` or ``[IMG_END]`` per row), patches :math:`R C m^2`. [token]

    Examples
    --------
    >>> pixtral_tokens(768, 1024)  # 28 rows of 37 tokens + 1 break
    (1064.0, 4144.0)
    >>> pixtral_tokens(3080, 3080)  # halved to 1540 px: 55 x 55
    (3080.0, 12100.0)
    """
    h, w, side = number(height), number(width), number(patch) * number(merge)
    edge = number(longest_edge)
    ratio = maximum(maximum(h / edge, w / edge), 1.0)
    rows, cols = ceil(floor(h / ratio) / side), ceil(floor(w / ratio) / side)
    m = number(merge)
    return scalar_or_array(rows * (cols + 1.0)), scalar_or_array(rows * cols * m * m)


def _grids(max_tiles: Any, min_tiles: Any = 1) -> tuple[np.ndarray, np.ndarray]:
    """Every grid of ``a x b`` tiles with ``min_tiles <= a b <= max_tiles``, ordered by ``a b`` then ``a``."""
    top, low = int(max_tiles), int(min_tiles)
    if top < 1 or low < 1 or low > top or top != max_tiles or low != min_tiles:
        raise ValueError(f"max_tiles = {max_tiles}, min_tiles = {min_tiles}: need whole 1 <= min_tiles <= max_tiles")
    pairs = sorted(((a, b) for a in range(1, top + 1) for b in range(1, top // a + 1) if a * b >= low),
                   key=lambda ab: (ab[0] * ab[1], ab[0]))
    grid = np.array(pairs, dtype=float)
    return grid[:, 0], grid[:, 1]


def _sizes(height: Any, width: Any) -> tuple[np.ndarray, np.ndarray]:
    """Height and width broadcast together with a trailing axis over the candidate grids."""
    h, w = np.broadcast_arrays(np.asarray(number(height), dtype=float), np.asarray(number(width), dtype=float))
    return h[..., None], w[..., None]


def llama4_tiles(height: Any, width: Any, tile: Any = 336, max_tiles: Any = 16) -> tuple[Any, Any]:
    r"""Rows and columns of tiles the Llama 4 image processor cuts an image into. [-]

    Parameters
    ----------
    height, width : array_like
        Image size :math:`H, W`. [px]
    tile : array_like, optional
        Tile side :math:`T` (336). [px]
    max_tiles : int, optional
        Most tiles a canvas may hold (``max_patches``, 16). [-]

    Returns
    -------
    tuple of numeric
        Over the grids :math:`a \times b` with :math:`ab \le` ``max_tiles``, the fit scale
        :math:`s = \min(bT/W, aT/H)`; the smallest :math:`s \ge 1` if any grid upscales, else the largest
        :math:`s`; among the grids with that scale, the one of fewest tiles: rows :math:`a`, columns :math:`b`.

    Examples
    --------
    >>> llama4_tiles(768, 1024)  # s = 1.3125 for 3x4 (and 3x5, 4x4): the 12-tile canvas 1008 x 1344
    (3.0, 4.0)
    """
    rows, cols = _grids(max_tiles)
    h, w = _sizes(height, width)
    t = number(tile)
    scale = np.minimum(cols * t / w, rows * t / h)
    up = scale >= 1.0
    least_up = np.where(up, scale, np.inf).min(axis=-1, keepdims=True)
    least_down = np.where(up, -np.inf, scale).max(axis=-1, keepdims=True)
    chosen = np.where(np.isfinite(least_up), least_up, least_down)
    pick = np.where(scale == chosen, rows * cols, np.inf).argmin(axis=-1)
    return scalar_or_array(rows[pick] * 1.0), scalar_or_array(cols[pick] * 1.0)


def llama4_tokens(
    height: Any, width: Any, tile: Any = 336, patch: Any = 14, merge: Any = 2, max_tiles: Any = 16
) -> tuple[Any, Any]:
    r"""LLM tokens and ViT patches of one Llama 4 image.

    Parameters
    ----------
    height, width : array_like
        Image size. [px]
    tile, patch : array_like, optional
        Tile side (336) and ViT patch size :math:`p` (14). [px]
    merge : array_like, optional
        Pixel-shuffle factor per side :math:`m` (``1 / pixel_shuffle_ratio`` = 2). [-]
    max_tiles : int, optional
        ``max_patches`` of the processor (16). [-]

    Returns
    -------
    tokens, patches : numeric
        With :math:`n = ab` tiles (``llama4_tiles``) and :math:`P = \lfloor \lfloor T/p \rfloor^2 / m^2 \rfloor`
        tokens a tile (144): tokens :math:`P + 1` for one tile, :math:`n(P + 1) + P + 1` for more (each tile
        and a separator, then ``<|image|>`` and the global tile); patches :math:`(n + [n > 1])
        \lfloor T/p \rfloor^2`. ``<|image_start|>`` and ``<|image_end|>`` are not counted. [token]

    Examples
    --------
    >>> llama4_tokens(768, 1024)  # 12 tiles x 145 + 145: 1885 tokens; 13 tiles x 576 patches
    (1885.0, 7488.0)
    """
    rows, cols = llama4_tiles(height, width, tile, max_tiles)
    n = rows * cols
    side = floor(number(tile) / number(patch))
    per_tile = floor(side * side / (number(merge) * number(merge)))
    many = where(n > 1, 1.0, 0.0)
    tokens = per_tile + 1.0 + many * n * (per_tile + 1.0)
    return scalar_or_array(tokens), scalar_or_array((n + many) * side * side)


def internvl_tiles(height: Any, width: Any, tile: Any = 448, max_tiles: Any = 12, min_tiles: Any = 1) -> Any:
    r"""Tiles InternVL's dynamic preprocessing cuts an image into, before the thumbnail. [-]

    Parameters
    ----------
    height, width : array_like
        Image size :math:`H, W`. [px]
    tile : array_like, optional
        Tile side :math:`T` (448). [px]
    max_tiles, min_tiles : int, optional
        Bounds of the tile count (``max_num`` 12, ``min_num`` 1). [-]

    Returns
    -------
    numeric
        :math:`ij` for the grid of :math:`i` columns and :math:`j` rows whose ratio :math:`i/j` is closest
        to :math:`W/H`; of grids equally close, taken in order of :math:`ij`, a later one replaces the best
        when :math:`HW > T^2 ij / 2`.

    Examples
    --------
    >>> internvl_tiles(768, 1024)  # 4/3 exactly: 4 x 3 tiles
    12.0
    >>> internvl_tiles(448, 448)  # 2x2 is as close but needs HW > 448^2 x 4 / 2 = 401,408 px; 200,704 is not
    1.0
    >>> internvl_tiles(896, 896)  # 802,816 px > 401,408: 2x2; 3x3 would need > 903,168
    4.0
    """
    cols, rows = _grids(max_tiles, min_tiles)
    h, w = _sizes(height, width)
    aspect, area, t = w / h, h * w, number(tile)
    best = np.full(np.broadcast(aspect).shape, np.inf)
    tiles = np.ones_like(best)
    for i, j in zip(cols, rows, strict=True):
        diff = np.abs(aspect - i / j)
        replace = (diff < best) | ((diff == best) & (area > 0.5 * t * t * i * j))
        tiles = np.where(replace, i * j, tiles)
        best = np.where(diff < best, diff, best)
    return scalar_or_array(tiles[..., 0] * 1.0)


def internvl_tokens(
    height: Any, width: Any, tile: Any = 448, tokens_per_tile: Any = 256, max_tiles: Any = 12, min_tiles: Any = 1
) -> tuple[Any, Any]:
    r"""LLM tokens and ViT patches of one InternVL image.

    Parameters
    ----------
    height, width : array_like
        Image size. [px]
    tile : array_like, optional
        Tile side (448). [px]
    tokens_per_tile : array_like, optional
        :math:`P`: 1024 patches of 14 px pixel-shuffled by 1/2 to 256. [token]
    max_tiles, min_tiles : int, optional
        Bounds of the tile count (12, 1). [-]

    Returns
    -------
    tokens, patches : numeric
        With :math:`n` tiles (``internvl_tiles``) and a thumbnail when :math:`n > 1`: tokens
        :math:`P(n + [n > 1])`; patches :math:`4P(n + [n > 1])` (the ViT's 14 px patches before the shuffle).
        ``<img>`` and ``</img>`` are not counted. [token]

    Examples
    --------
    >>> internvl_tokens(768, 1024)  # 12 tiles + thumbnail = 13 x 256
    (3328.0, 13312.0)
    """
    n = internvl_tiles(height, width, tile, max_tiles, min_tiles)
    shown = n + where(n > 1, 1.0, 0.0)
    p = number(tokens_per_tile)
    return scalar_or_array(shown * p), scalar_or_array(4.0 * shown * p)


#: LLaVA-NeXT's ``image_grid_pinpoints`` (height, width) in llava-hf's v1.6 configs. [px]
LLAVA_NEXT_PINPOINTS = ((336, 672), (672, 336), (672, 672), (1008, 336), (336, 1008))


def llava_next_resolution(height: Any, width: Any, pinpoints: Any = LLAVA_NEXT_PINPOINTS) -> tuple[Any, Any]:
    r"""Canvas (height, width) LLaVA-NeXT's anyres picks for an image (``select_best_resolution``). [px]

    Parameters
    ----------
    height, width : array_like
        Image size :math:`H, W`. [px]
    pinpoints : sequence of (int, int)
        Candidate canvases :math:`(h_i, w_i)` (``image_grid_pinpoints``). [px]

    Returns
    -------
    tuple of numeric
        With :math:`s_i = \min(w_i/W, h_i/H)`, the first canvas of most effective pixels :math:`e_i = \min(\lfloor
        W s_i \rfloor \lfloor H s_i \rfloor, WH)`, ties to the least waste :math:`h_i w_i - e_i`.

    Examples
    --------
    >>> llava_next_resolution(768, 1024)  # 672x672: 672 x 504 effective px; 336x672 and 336x1008 show 448 x 336
    (672.0, 672.0)
    """
    h, w = _sizes(height, width)
    best_e, best_waste, best_h, best_w = np.zeros_like(h), np.full_like(h, np.inf), np.zeros_like(h), np.zeros_like(h)
    for ph, pw in pinpoints:
        scale = np.minimum(pw / w, ph / h)
        effective = np.minimum(np.floor(w * scale) * np.floor(h * scale), w * h)
        better = (effective > best_e) | ((effective == best_e) & (ph * pw - effective < best_waste))
        best_e, best_waste = np.where(better, effective, best_e), np.where(better, ph * pw - effective, best_waste)
        best_h, best_w = np.where(better, float(ph), best_h), np.where(better, float(pw), best_w)
    return scalar_or_array(best_h[..., 0]), scalar_or_array(best_w[..., 0])


def llava_next_tokens(
    height: Any, width: Any, pinpoints: Any = LLAVA_NEXT_PINPOINTS, tile: Any = 336, patch: Any = 14
) -> tuple[Any, Any]:
    r"""LLM tokens and ViT patches of one LLaVA-NeXT image (``LlavaNextProcessor._get_number_of_features``).

    Parameters
    ----------
    height, width : array_like
        Image size :math:`H, W`. [px]
    pinpoints : sequence of (int, int)
        ``image_grid_pinpoints`` (``llava_next_resolution``). [px]
    tile, patch : array_like, optional
        CLIP input side :math:`T` (336) and patch :math:`p` (14). [px]

    Returns
    -------
    tokens, patches : numeric
        On the canvas of ``llava_next_resolution``, :math:`a \times b` tiles of :math:`T`, the :math:`(Ta/p) \times
        (Tb/p)` features less the aspect ratio's padding rows (or columns), :math:`r \times c`: tokens :math:`rc + r`
        (a newline a row) :math:`+ (T/p)^2` (the base image); patches :math:`(1 + ab)((T/p)^2 + 1)`. [token]

    Examples
    --------
    >>> llava_next_tokens(768, 1024)  # 2x2 tiles: 48 x 48 features, 36 rows unpadded: 1728 + 36 + 576
    (2340.0, 2885.0)
    """
    h, w, t = number(height), number(width), number(tile)
    best_h, best_w = llava_next_resolution(height, width, pinpoints)
    side = floor(t / number(patch))
    rows, cols, wide = side * floor(best_h / t), side * floor(best_w / t), w / h > best_w / best_h
    r = where(wide, rows - 2 * floor((rows - floor(h * cols / w)) / 2), rows)
    c = where(wide, cols, cols - 2 * floor((cols - floor(w * rows / h)) / 2))
    tiles = floor(best_h / t) * floor(best_w / t)
    return scalar_or_array(r * c + r + side * side), scalar_or_array((1.0 + tiles) * (side * side + 1.0))


def gemma3_crops(height: Any, width: Any, min_crop: Any = 256, max_crops: Any = 4, min_ratio: Any = 1.2) -> Any:
    r"""Pan-and-scan crops Gemma 3's image processor adds to an image when pan-and-scan is on. [-]

    Each crop is resized to 896x896 and costs what the image does (256 tokens, 4096 patches), so an image
    with :math:`c` crops is :math:`256 (1 + c)` tokens (the text the processor writes around the crops is not
    counted).

    Parameters
    ----------
    height, width : array_like
        Image size; :math:`L` the longer side, :math:`S` the shorter, :math:`r = L/S`. [px]
    min_crop, max_crops, min_ratio : array_like, optional
        ``pan_and_scan_min_crop_size`` (256) [px], ``pan_and_scan_max_num_crops`` (4) and
        ``pan_and_scan_min_ratio_to_activate`` (1.2) [-].

    Returns
    -------
    numeric
        :math:`n = \min(m, \max(2, \min(\lfloor L/c_{min} \rfloor, \lfloor r + 1/2 \rfloor)))` crops along
        the longer side, or 0 when :math:`r <` ``min_ratio`` or :math:`\min(\lceil L/n \rceil, S) < c_{min}`.

    Examples
    --------
    >>> gemma3_crops(768, 1024)  # r = 1.33 >= 1.2: floor(1.83) = 1 -> at least 2 crops of 512 x 768
    2.0
    >>> gemma3_crops(896, 896)  # square: r = 1 < 1.2, no crops
    0.0
    """
    h, w = number(height), number(width)
    long, short = maximum(h, w), minimum(h, w)
    ratio, low = long / short, number(min_crop)
    n = minimum(number(max_crops), maximum(2.0, minimum(floor(long / low), floor(ratio + 0.5))))
    active = (ratio >= number(min_ratio)) & (minimum(ceil(long / n), short) >= low)
    return scalar_or_array(where(active, n, 0.0))


def encoder_flops(patches: Any, hidden: Any, ffn: Any, layers: Any, gated: Any = False, window: Any = None) -> Any:
    r"""FLOPs of a ViT encoder's forward pass over one image's patches.

    Parameters
    ----------
    patches : array_like
        Patches (sequence length) :math:`N`. [token]
    hidden, ffn : array_like
        ViT width :math:`w` and MLP width :math:`f`. [-]
    layers : array_like
        ViT layers :math:`L`. [-]
    gated : array_like of bool, optional
        Gated MLP (three matrices: Qwen2.5-VL) rather than two. [-]
    window : array_like, optional
        Keys a patch attends to in every layer :math:`K` (default all :math:`N`). [token]

    Returns
    -------
    numeric
        :math:`L \left[2N(4w^2 + (2 + g) w f) + 4 N \min(N, K) w\right]`: the projection and MLP GEMMs,
        and the scores and weighted sum of bidirectional attention (the projector is counted with the
        LLM's prefill of the image tokens). [FLOP]

    References
    ----------
    .. [1] A. Dosovitskiy et al., "An image is worth 16x16 words," arXiv:2010.11929, 2020.

    Examples
    --------
    >>> encoder_flops(4096, 1152, 4304, 27)  # Gemma 3's SigLIP, one 896x896 image: 27 x (124.7 + 77.3) GFLOP
    5454843346944.0
    """
    n, w, f, depth = number(patches), number(hidden), number(ffn), number(layers)
    keys = n if window is None else minimum(n, number(window))
    dense = 2.0 * n * (4.0 * w * w + where(gated, 3.0, 2.0) * w * f)
    return scalar_or_array(depth * (dense + 4.0 * n * keys * w))
