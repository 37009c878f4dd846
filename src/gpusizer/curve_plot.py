"""The load curve as a figure (``gpusizer.plot.load_curve``; optional: ``pip install gpusizer[plot]``). No physics.

Two panels over the load axis (concurrency or request rate, log scale): output tokens per second with
the knee marked, and TTFT and TPOT p50/p95/p99 in ms with the SLO targets as horizontal lines.
"""

from __future__ import annotations

from typing import Any

__all__ = ["load_curve"]


def load_curve(curve: Any, axes: Any = None) -> Any:
    """Draw a ``serving.load_curve`` result; returns the two Axes (throughput, latency).

    Parameters
    ----------
    curve : LoadCurve
        From ``gpusizer.serving.load_curve.load_curve``.
    axes : pair of Axes, optional
        Where to draw (a new figure of two panels otherwise).
    """
    if axes is None:
        try:
            import matplotlib.pyplot as plt
        except ImportError:  # pragma: no cover - exercised only without the extra
            raise ImportError("gpusizer.plot needs matplotlib: pip install 'gpusizer[plot]'") from None
        _, axes = plt.subplots(2, 1, sharex=True, figsize=(7, 7))
    top, bottom = axes
    points = [p for p in curve.points if p.reason == ""]
    x = [p.concurrency if curve.axis == "concurrency" else p.rate for p in points]
    top.plot(x, [p.tokens_per_second for p in points], marker="o", label="output tok/s")
    if curve.knee_concurrency is not None:
        knee_x = curve.knee_concurrency if curve.axis == "concurrency" else curve.knee_rate
        top.axvline(knee_x, color="grey", linestyle=":", label=f"knee ({knee_x:.3g})")
    top.set_ylabel("output tokens / s")
    top.legend()
    for name, style in (("ttft", "-"), ("tpot", "--")):
        for q, marker in (("p50", "o"), ("p95", "s"), ("p99", "^")):
            bottom.plot(x, [getattr(getattr(p, name), q) * 1e3 for p in points], linestyle=style, marker=marker,
                        label=f"{name.upper()} {q}")
    if curve.slo is not None:
        q = f"p{curve.slo.quantile * 100:g}"
        for name, target, colour in (("TTFT", curve.slo.ttft_p95, "red"), ("TPOT", curve.slo.tpot_p95, "purple"),
                                     ("E2E", curve.slo.e2e_p95, "black")):
            if target is not None:
                bottom.axhline(target * 1e3, color=colour, linestyle="-.", label=f"SLO {name} {q}")
    bottom.set_yscale("log")
    bottom.set_xscale("log")
    bottom.set_ylabel("latency (ms)")
    bottom.set_xlabel("requests in flight" if curve.axis == "concurrency" else "requests / s")
    bottom.legend(fontsize="small", ncol=2)
    top.set_title(f"{curve.model} on {curve.gpu} ({curve.engine})")
    return top, bottom
