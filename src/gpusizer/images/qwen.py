r"""Qwen2-VL, Qwen2.5-VL and Qwen3-VL: dynamic resolution, a 2x2 patch merger, video frames grouped in time.

References
----------
.. [1] huggingface/transformers, src/transformers/models/qwen2_vl/image_processing_qwen2_vl.py
   (commit cb0fc56f3caccab77d00d44051a67d4b0980cbd2), ``smart_resize``; Qwen2.5-VL's
   preprocessor_config.json: ``min_pixels`` 3136, ``max_pixels`` 12845056, patch 14, merge 2,
   temporal patch 2 (https://huggingface.co/Qwen/Qwen2.5-VL-7B-Instruct/blob/main/preprocessor_config.json).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusizer.checks import scalar_or_array
from gpusizer.numeric import ceil, floor, maximum, number, where

__all__ = ["qwen_resized", "qwen_tokens"]


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
