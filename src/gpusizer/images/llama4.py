r"""Llama 4: 336 px tiles on the canvas of least upscaling, pixel-shuffled to 144 tokens, plus a global tile.

References
----------
.. [1] huggingface/transformers, src/transformers/models/llama4/image_processing_llama4_fast.py (commit
   e1b551679e267be053b45581cbabd028a14defd2), ``find_supported_resolutions``, ``get_best_fit``, the global
   tile in ``_preprocess``; src/transformers/models/llama4/processing_llama4.py (commit
   f5d3f1e134fe49e8dd4009846e54c1ccfe747328), ``_prompt_split_image`` and ``num_patches_per_chunk``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusizer.checks import scalar_or_array
from gpusizer.images.grids import tile_grids, with_grid_axis
from gpusizer.numeric import floor, number, where

__all__ = ["llama4_tiles", "llama4_tokens"]


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
    rows, cols = tile_grids(max_tiles)
    h, w = with_grid_axis(height, width)
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
