"""Plots (optional: ``pip install gpusizer[plot]`` for matplotlib). No physics here.

``roofline`` draws a GPU's roofline, attainable FLOP/s against arithmetic intensity, and places
decode and prefill operating points from ``performance.speed`` on it: the expected point (what the
engine achieves) and the ceiling point (the roof itself) at the same intensity.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from gpusizer import catalog
from gpusizer import roofline as roof
from gpusizer.performance import Decode, Prefill, Speed

__all__ = ["roofline"]


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - exercised only without the extra
        raise ImportError("gpusizer.plot needs matplotlib: pip install 'gpusizer[plot]'") from None
    return plt


def _points(item: Speed | Decode | Prefill) -> list[tuple[str, Any, Any, Any]]:
    """(label, intensity, expected FLOP/s, ceiling FLOP/s) of each phase in ``item``."""
    if isinstance(item, Speed):
        return _points(item.decode) + _points(item.prefill)
    if isinstance(item, Decode):
        return [("decode", item.arithmetic_intensity, np.divide(item.flops, item.tpot_seconds_expected),
                 np.divide(item.flops, item.tpot_seconds_ceiling))]
    return [("prefill", item.arithmetic_intensity, np.divide(item.flops, item.seconds_expected),
             np.divide(item.flops, item.seconds_ceiling))]


def roofline(
    gpu: str | catalog.GPU,
    points: Iterable[Speed | Decode | Prefill] = (),
    *,
    compute: str = "bf16",
    labels: Iterable[str] | None = None,
    ax: Any = None,
) -> Any:
    """Draw ``gpu``'s roofline and the operating points of ``points``.

    Parameters
    ----------
    gpu : str or GPU
        Catalogue id or record.
    points : iterable of Speed, Decode or Prefill
        Results of ``performance.speed`` (arrays from sweeps are drawn as one marker per element).
    compute : str, optional
        Precision whose tensor peak is the flat roof (``roofline.tensor_peak``).
    labels : iterable of str, optional
        One legend label per item of ``points``.
    ax : matplotlib Axes, optional
        Where to draw; a new figure otherwise.

    Returns
    -------
    matplotlib Axes
        Log-log axes: arithmetic intensity [FLOP/B] against attainable rate [FLOP/s].

    Raises
    ------
    ImportError
        When matplotlib is not installed.
    """
    plt = _pyplot()
    device = catalog.gpu(gpu)
    peak, used = roof.tensor_peak(device.dense, compute)
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 5))
    intensity = np.logspace(-1, 4, 200)
    attainable = roof.attainable_flops(intensity, peak, device.memory_bandwidth)
    ax.plot(intensity, attainable, "k-", lw=1.5, label=f"{device.name}: {used} roof")
    if np.isfinite(peak):
        ridge = roof.ridge_point(peak, device.memory_bandwidth)
        ax.axvline(ridge, color="k", lw=0.5, ls=":")
        ax.annotate(f"ridge {ridge:.0f} FLOP/B", (ridge, peak), fontsize=8, xytext=(4, -12),
                    textcoords="offset points")
    names = list(labels) if labels is not None else None
    for index, item in enumerate(points):
        name = names[index] if names else f"#{index + 1}"
        for phase, x, expected, ceiling in _points(item):
            marker = "o" if phase == "decode" else "s"
            color = f"C{index % 10}"
            ax.scatter(np.ravel(x), np.ravel(expected), marker=marker, color=color, label=f"{name} {phase} expected")
            ax.scatter(np.ravel(x), np.ravel(ceiling), marker=marker, facecolors="none", edgecolors=color,
                       label=f"{name} {phase} ceiling")
    ax.set(xscale="log", yscale="log", xlabel="arithmetic intensity [FLOP/B]", ylabel="attainable [FLOP/s]",
           title=f"Roofline of {device.name}")
    ax.grid(True, which="both", lw=0.3)
    ax.legend(fontsize=7)
    return ax
