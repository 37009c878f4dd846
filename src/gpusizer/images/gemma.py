r"""Gemma 3: a fixed 256 tokens an image, and the pan-and-scan crops of an elongated image.

References
----------
.. [1] Gemma Team, "Gemma 3 technical report," arXiv:2503.19786, 2025 (896x896 input, 256 tokens).
.. [2] huggingface/transformers, src/transformers/models/gemma3/image_processing_gemma3.py (commit
   a391a51d5a0f01de151d84427aabaefea4e7fb85), ``pan_and_scan``; processing_gemma3.py, ``Gemma3ProcessorKwargs``
   defaults: ``do_pan_and_scan`` False, ``pan_and_scan_min_crop_size`` 256, ``pan_and_scan_max_num_crops`` 4,
   ``pan_and_scan_min_ratio_to_activate`` 1.2.
"""

from __future__ import annotations

from typing import Any

from gpusizer.checks import scalar_or_array
from gpusizer.numeric import ceil, floor, maximum, minimum, number, where

__all__ = ["gemma3_crops"]


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
