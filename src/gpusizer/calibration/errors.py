"""Errors of a calibration: median absolute percentage errors per regime, before and after, and a text table."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import numpy as np

from gpusizer.calibration.records import Calibration, RowError

__all__ = ["RegimeErrors", "error_table", "errors_by_regime"]


@dataclasses.dataclass(frozen=True)
class RegimeErrors:
    """Median absolute percentage errors of one regime (or ``all``)."""

    regime: str
    rows: int
    before: float
    """With the base constants. [%]"""
    after: float
    """Calibrated, in-sample. [%]"""
    loo: float
    """Calibrated, leave-one-out: the honest out-of-sample error. [%]"""


def _ape(predicted: float, measured: float) -> float:
    return 100.0 * abs(predicted / measured - 1.0)


def errors_by_regime(errors: Iterable[RowError], *, minimum_rows: int = 1) -> list[RegimeErrors]:
    """Median APE before, after and leave-one-out, per regime with ``minimum_rows`` rows, then ``all``."""
    groups: dict[str, list[RowError]] = {}
    for e in errors:
        groups.setdefault(e.regime, []).append(e)
    found = [*sorted(groups.items()), ("all", [e for v in groups.values() for e in v])]
    return [
        RegimeErrors(
            regime=name, rows=len(rows),
            before=float(np.median([_ape(e.before, e.measured) for e in rows])),
            after=float(np.median([_ape(e.after, e.measured) for e in rows])),
            loo=float(np.median([_ape(e.loo, e.measured) for e in rows])),
        )
        for name, rows in found
        if rows and len(rows) >= minimum_rows
    ]


def error_table(calibration: Calibration) -> str:
    """Text table of the median absolute percentage errors before and after calibration, per regime."""
    lines = [
        f"{'regime':40} {'rows':>4} {'before':>8} {'after':>8} {'leave-one-out':>14}",
    ]
    for r in errors_by_regime(calibration.errors):
        lines.append(f"{r.regime:40} {r.rows:4d} {r.before:7.1f}% {r.after:7.1f}% {r.loo:13.1f}%")
    scopes = ", ".join(f"{s.key} ({len(s.rows)} rows)" for s in calibration.scopes)
    lines += ["", "median absolute error of each row's prediction; before: base constants; after: calibrated "
              "(in-sample); leave-one-out: calibrated without that row.", f"scopes: {scopes}"]
    return "\n".join(lines)
