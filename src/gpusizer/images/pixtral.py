r"""Pixtral and Mistral 3: the image fitted to ``longest_edge``, one token a merged patch, a break a row.

References
----------
.. [1] huggingface/transformers, src/transformers/models/pixtral/image_processing_pixtral.py
   (commit c801cd786e2e8cd35767125b8a8e8c26538fb648), ``get_resize_output_image_size``.
"""

from __future__ import annotations

from typing import Any

from gpusizer.checks import scalar_or_array
from gpusizer.numeric import ceil, floor, maximum, number

__all__ = ["pixtral_tokens"]


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
