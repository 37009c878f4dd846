r"""The vision encoder's work: FLOPs of a ViT's forward pass over one image's patches."""

from __future__ import annotations

from typing import Any

from gpusizer.checks import scalar_or_array
from gpusizer.numeric import minimum, number, where

__all__ = ["encoder_flops"]


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
