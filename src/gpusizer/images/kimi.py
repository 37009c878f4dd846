r"""Kimi K2.5 (MoonViT): native resolution within a patch budget, padded to whole 2x2 merges, one token each.

References
----------
.. [1] Moonshot AI, Kimi-K2.5 ``media_utils.py``, ``navit_resize_image`` (the image rule) and
   ``modeling_kimi_k25.py`` (``tpool_patch_merger``: a 2x2 merge per token), as copied in
   Ascend/MindSpeed-MM, mindspeed_mm/fsdp/models/kimik2_5/media_utils.py (commit
   d300ee2852601b3c907406467ee29720b281f7ad); ``in_patch_limit`` 16384 and ``patch_limit_on_one_side`` 512 of
   the model's ``preprocessor_config.json`` ``media_proc_cfg``, as NVIDIA's TensorRT-LLM and vLLM ports of
   Kimi K2.5 default them (checked 2026-12-05).
"""

from __future__ import annotations

from typing import Any

from gpusizer.checks import scalar_or_array
from gpusizer.numeric import ceil, floor, maximum, minimum, number

__all__ = ["kimi_tokens"]


def kimi_tokens(
    height: Any, width: Any, patch: Any = 14, merge: Any = 2, max_patches: Any = 16384, max_side: Any = 512
) -> tuple[Any, Any]:
    r"""LLM tokens and ViT patches of one Kimi K2.5 image (``navit_resize_image``).

    Parameters
    ----------
    height, width : array_like
        Image size :math:`H, W`. [px]
    patch, merge : array_like, optional
        MoonViT patch :math:`p` (14) [px] and merge kernel :math:`m` (2, ``merge_kernel_size``) [-].
    max_patches, max_side : array_like, optional
        ``in_patch_limit`` :math:`N` (16384) and ``patch_limit_on_one_side`` :math:`S` (512) of the
        processor. [-]

    Returns
    -------
    tokens, patches : numeric
        With :math:`s = \min(1, \sqrt{N / (\max(1, \lfloor W/p \rfloor) \max(1, \lfloor H/p \rfloor))}, Sp/W,
        Sp/H)`, :math:`\bar W = \min(\max(1, \lfloor W s \rfloor), Sp)` (and :math:`\bar H`), the image padded to
        whole :math:`mp` squares: tokens :math:`\lceil \bar H/(mp) \rceil \lceil \bar W/(mp) \rceil`, patches
        :math:`m^2` times as many. [token]

    Examples
    --------
    >>> kimi_tokens(768, 1024)  # 3942 patches < 16384, kept: 28 x 37 merges of 28 px (padded)
    (1036.0, 4144.0)
    >>> kimi_tokens(3000, 4000)  # 60990 patches: scaled by sqrt(16384/60990) to 2073 x 1554 px: 56 x 75
    (4200.0, 16800.0)
    """
    h, w, p, m = number(height), number(width), number(patch), number(merge)
    side = number(max_side) * p
    budget = (number(max_patches) / (maximum(1.0, floor(w / p)) * maximum(1.0, floor(h / p)))) ** 0.5
    scale = minimum(minimum(1.0, budget), minimum(side / w, side / h))
    new_h = minimum(maximum(1.0, floor(h * scale)), side)
    new_w = minimum(maximum(1.0, floor(w * scale)), side)
    tokens = ceil(new_h / (m * p)) * ceil(new_w / (m * p))
    return scalar_or_array(tokens), scalar_or_array(tokens * m * m)
