r"""LLaVA-OneVision (anyres-max-9): LLaVA-NeXT's canvas in 384 px SigLIP tiles, the features shrunk to about 9 tiles.

References
----------
.. [1] huggingface/transformers, src/transformers/models/llava_onevision/processing_llava_onevision.py (commit
   d2759a76fd10845a9c010ac0693fdc3b6b924050), ``_get_number_of_features`` and ``_get_unpadded_features`` (the
   ``ratio > 1.1`` shrink of anyres_max_9; videos: ``num_frames * ceil(sqrt(729) / 2)^2 + 1`` tokens);
   configuration_llava_onevision.py (commit 44b004582dfe311edb96ed55fa66bcfee218b18a), the default
   ``image_grid_pinpoints``; convert_llava_onevision_weights_to_hf.py (commit
   d058e0f712f346209059c8bbdcaaf5d9cd762075): ``num_image_tokens`` 729, ``vision_feature_select_strategy`` full.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusizer.checks import scalar_or_array
from gpusizer.images.llava import llava_next_resolution
from gpusizer.numeric import ceil, floor, number, where

__all__ = ["LLAVA_ONEVISION_PINPOINTS", "llava_onevision_tokens", "llava_onevision_video_tokens"]

#: LLaVA-OneVision's default ``image_grid_pinpoints``: every (384 a, 384 b) for a, b = 1..6. [px]
LLAVA_ONEVISION_PINPOINTS = tuple((384 * a, 384 * b) for a in range(1, 7) for b in range(1, 7))


def llava_onevision_tokens(
    height: Any, width: Any, pinpoints: Any = LLAVA_ONEVISION_PINPOINTS, tile: Any = 384, patch: Any = 14,
    max_tiles: Any = 9,
) -> tuple[Any, Any]:
    r"""LLM tokens and ViT patches of one LLaVA-OneVision image (``LlavaOnevisionProcessor._get_number_of_features``).

    Parameters
    ----------
    height, width : array_like
        Image size :math:`H, W`. [px]
    pinpoints : sequence of (int, int)
        ``image_grid_pinpoints`` (``llava_next_resolution`` picks the canvas). [px]
    tile, patch : array_like, optional
        SigLIP input side :math:`T` (384) and patch :math:`p` (14): :math:`s = \lfloor T/p \rfloor` = 27. [px]
    max_tiles : array_like, optional
        The 9 of ``anyres_max_9``. [-]

    Returns
    -------
    tokens, patches : numeric
        On the canvas of :math:`a \times b` tiles, the :math:`sa \times sb` features less the aspect ratio's padding
        rows (or columns), :math:`r \times c`; when :math:`q = \sqrt{rc / (9 s^2)} > 1.1` they shrink to
        :math:`\lfloor r/q \rfloor \times \lfloor c/q \rfloor`; tokens :math:`rc + r` (a newline a row)
        :math:`+ s^2` (the base image, no class token: ``full`` features); patches :math:`(1 + ab) s^2`. [token]

    Examples
    --------
    >>> llava_onevision_tokens(768, 1024)  # 768x1152: 54 x 81 features, 54 x 73 unpadded: 3942 + 54 + 729
    (4725.0, 5103.0)
    >>> llava_onevision_tokens(2304, 2304)  # 6x6 tiles: 162 x 162, q = 2: 81 x 81 + 81 + 729
    (7371.0, 26973.0)
    """
    h, w, t = number(height), number(width), number(tile)
    best_h, best_w = llava_next_resolution(height, width, pinpoints)
    side = floor(t / number(patch))
    rows, cols = side * floor(best_h / t), side * floor(best_w / t)
    wide = w / h > cols / rows
    r = where(wide, rows - 2 * floor((rows - floor(h * (cols / w))) / 2), rows)
    c = where(wide, cols, cols - 2 * floor((cols - floor(w * (rows / h))) / 2))
    q = np.sqrt(r * c / (number(max_tiles) * side * side))
    big = q > 1.1
    # Python's float ``//`` (numpy's floor_divide), not floor(r / q): at r = 50, q = 10/9 it gives 44, not 45
    r, c = where(big, np.floor_divide(r, where(big, q, 1.0)), r), where(big, np.floor_divide(c, where(big, q, 1.0)), c)
    tiles = floor(best_h / t) * floor(best_w / t)
    return scalar_or_array(r * c + r + side * side), scalar_or_array((1.0 + tiles) * side * side)


def llava_onevision_video_tokens(frames: Any, tile: Any = 384, patch: Any = 14) -> tuple[Any, Any]:
    r"""LLM tokens and ViT patches of one LLaVA-OneVision video of ``frames`` frames.

    Each frame is one :math:`T` px image, its :math:`s \times s` features pooled 2x2 (``ceil``): tokens
    :math:`F \lceil s/2 \rceil^2 + 1` (one newline), patches :math:`F s^2`. [token]

    >>> llava_onevision_video_tokens(8)  # 8 x 14^2 + 1
    (1569.0, 5832.0)
    """
    f, side = number(frames), floor(number(tile) / number(patch))
    return scalar_or_array(f * ceil(side / 2) ** 2 + 1.0), scalar_or_array(f * side * side)
