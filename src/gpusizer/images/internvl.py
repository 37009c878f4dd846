r"""InternVL: 448 px tiles of the closest aspect ratio, plus a thumbnail, 256 tokens a tile.

References
----------
.. [1] huggingface/transformers, src/transformers/models/got_ocr2/image_processing_got_ocr2.py (commit
   66951798c714fe51da4968c5034a350687ffc413), ``find_closest_aspect_ratio`` and ``crop_to_multi_image``
   (InternVL's ``dynamic_preprocess``: 448 px tiles, thumbnail, ``max_num`` 12 on the InternVL2.5/3 cards).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusizer.checks import scalar_or_array
from gpusizer.images.grids import tile_grids, with_grid_axis
from gpusizer.numeric import number, where

__all__ = ["internvl_tiles", "internvl_tokens"]


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
    cols, rows = tile_grids(max_tiles, min_tiles)
    h, w = with_grid_axis(height, width)
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
