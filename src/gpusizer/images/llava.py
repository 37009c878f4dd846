r"""LLaVA-NeXT (anyres): the pinpoint canvas showing the most pixels, in 336 px tiles, unpadded, plus the base image.

References
----------
.. [1] huggingface/transformers, src/transformers/image_processing_utils.py (commit
   091630d58781404f2b35a7f5dff1c29bda71b549), ``select_best_resolution``; models/llava_next/processing_llava_next.py
   (commit 81bb907ccf3494b5409b0b745bb10c8a617050b7), ``_get_number_of_features``, ``_get_unpadded_features``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusizer.checks import scalar_or_array
from gpusizer.images.grids import with_grid_axis
from gpusizer.numeric import floor, number, where

__all__ = ["LLAVA_NEXT_PINPOINTS", "llava_next_resolution", "llava_next_tokens"]


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
    h, w = with_grid_axis(height, width)
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
