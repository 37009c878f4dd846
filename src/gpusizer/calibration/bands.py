"""Bands of measured/expected per regime, from out-of-sample (leave-one-out or leave-one-source-out) log residuals."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from gpusizer.efficiency import Band, Case

__all__ = ["log_rate_ratio", "quantile_band", "regime_bands"]


def log_rate_ratio(case: Case, predicted: float) -> float:
    """:math:`\\ln(y/\\hat y)` as a *rate* ratio (times are inverted): the unit of the bands. [-]"""
    ratio = float(np.log(case.value / predicted))
    return -ratio if case.metric == "ttft" else ratio


def regime_bands(
    cases: Sequence[Case], predictions: dict[str, float], *, minimum_rows: int = 3, method: str = "leave-one-out"
) -> dict[str, Band]:
    """p10-p90 bands per regime, per coarser regime and overall (``all``), from ``minimum_rows`` residuals each.

    ``predictions`` are out-of-sample predictions of the cases, by id, made as ``method`` names
    (``leave-one-out``; the shipped table uses ``leave-one-source-out``: a new user's GPU, engine build and
    harness are a new source, so the band must hold the error of a fit that never saw that source).
    """
    groups: dict[str, list[float]] = {}
    for case in cases:
        r = log_rate_ratio(case, predictions[case.id])
        parts = case.regime.split(", ")
        for name in [", ".join(parts[:n]) for n in range(1, len(parts) + 1)] + ["all"]:
            groups.setdefault(name, []).append(r)
    return {k: quantile_band(k, v, method=method) for k, v in sorted(groups.items()) if len(v) >= minimum_rows}


def quantile_band(
    regime: str, log_residuals: Iterable[float], *, minimum: float = 0.05, method: str = "leave-one-out"
) -> Band:
    """p10-p90 band of measured/expected from log residuals :math:`\\ln(y/\\hat y)` of one regime.

    The band is at least ``minimum`` wide on each side (a measurement repeats to a few percent);
    ``method`` names how the residuals were made (recorded in the band's source).
    """
    r = np.asarray(list(log_residuals), dtype=float)
    low, high = np.quantile(r, [0.1, 0.9]) if r.size else (0.0, 0.0)
    low = min(float(low), np.log1p(-minimum))
    high = max(float(high), np.log1p(minimum))
    return Band(regime, float(np.exp(low)), float(np.exp(high)), int(r.size), f"{method} log residuals, p10/p90")
