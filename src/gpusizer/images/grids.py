r"""Helpers of the tiling rules: the candidate tile grids and image sizes broadcast against them."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusizer.numeric import number

__all__ = ["tile_grids", "with_grid_axis"]


def tile_grids(max_tiles: Any, min_tiles: Any = 1) -> tuple[np.ndarray, np.ndarray]:
    """Every grid of ``a x b`` tiles with ``min_tiles <= a b <= max_tiles``, ordered by ``a b`` then ``a``."""
    top, low = int(max_tiles), int(min_tiles)
    if top < 1 or low < 1 or low > top or top != max_tiles or low != min_tiles:
        raise ValueError(f"max_tiles = {max_tiles}, min_tiles = {min_tiles}: need whole 1 <= min_tiles <= max_tiles")
    pairs = sorted(((a, b) for a in range(1, top + 1) for b in range(1, top // a + 1) if a * b >= low),
                   key=lambda ab: (ab[0] * ab[1], ab[0]))
    grid = np.array(pairs, dtype=float)
    return grid[:, 0], grid[:, 1]


def with_grid_axis(height: Any, width: Any) -> tuple[np.ndarray, np.ndarray]:
    """Height and width broadcast together with a trailing axis over the candidate grids."""
    h, w = np.broadcast_arrays(np.asarray(number(height), dtype=float), np.asarray(number(width), dtype=float))
    return h[..., None], w[..., None]
