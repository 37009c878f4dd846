"""Profile of the serving figures over the overlap constant of the serving engines (issue 15).

Usage::

    python tools/serving_overlap.py            # prints the markdown table quoted in docs/throughput.md

For each value of ``overlap`` (``roofline.overlapped_seconds``' omega) held fixed for TensorRT-LLM and vLLM,
and for the shipped fit where it is free, the efficiency fit of ``tools/fit_efficiency.py`` is rerun on the
same rows (no leave-one-out), and the "Serving at scale" medians of ``tools/validation_serving.py`` are
computed with that table: the robust cost of the fit on its throughput-scale rows against the errors of the
latency rows it never sees. Nothing is written to ``data/``; each table replaces ``efficiency.bundled`` for
the run only. About ten seconds per value.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gpusizer import efficiency

sys.path.insert(0, str(Path(__file__).resolve().parent))
from siblings import sibling

#: Engines of the MLPerf serving rows, whose overlap the profile holds fixed.
ENGINES = ("trtllm", "vllm")
#: Values of the profile (None: the shipped, free fit).
VALUES = (None, 0.5, 0.25, 0.05)
METRICS = ("offline_tok_s", "server_tok_s", "ttft_ms_median", "tpot_ms_median", "ttft_ms_median, matched load",
           "tpot_ms_median, matched load")


@contextmanager
def pinned_overlap(value: float | None) -> Iterator[efficiency.Table]:
    """The priors with ``overlap`` fixed at ``value`` for ``ENGINES`` (its bounds narrowed around it), as the
    fit's prior table; the shipped bounds are restored afterwards. ``None`` leaves the priors alone."""
    tool = sibling("fit_efficiency")
    priors = tool.priors()
    saved = efficiency.BOUNDS["overlap"]
    if value is not None:
        engines = {k: dataclasses.replace(e, overlap=value) if k in ENGINES else e for k, e in priors.engines.items()}
        priors = dataclasses.replace(priors, engines=engines)
        efficiency.BOUNDS["overlap"] = (value * 0.999, 1.0, 1e-3)  # the other engines stay within [value, 1]
    try:
        yield priors
    finally:
        efficiency.BOUNDS["overlap"] = saved


def profile(value: float | None) -> tuple[float, dict[str, float], dict[str, float]]:
    """Robust cost of the fit with ``overlap`` fixed at ``value``, the overlaps it ends with, and the serving
    medians (APE, %) with its table."""
    tool, serving = sibling("fit_efficiency"), sibling("validation_serving")
    with pinned_overlap(value) as priors:
        original = tool.priors
        tool.priors = lambda: priors
        try:
            fitted = tool.fit(tool.cases("fit"))
        finally:
            tool.priors = original
    shipped = efficiency.bundled
    efficiency.bundled = lambda: fitted.table  # type: ignore[assignment]
    try:
        serving.clear_caches()
        stats = serving.medians(serving.rows()[0])
    finally:
        efficiency.bundled = shipped  # type: ignore[assignment]
        serving.clear_caches()
    overlaps = {k: fitted.table.engines[k].overlap for k in ENGINES}
    return fitted.cost, overlaps, {k: stats[k][1] for k in METRICS}


def serving_median(value: float) -> str:
    """A median APE as the report writes it (``inf`` when a row is unstable)."""
    return f"{value:.1f}%" if value != float("inf") else "inf"


def table() -> list[str]:
    lines = ["| overlap (trtllm, vllm) | fit cost | " + " | ".join(METRICS) + " |",
             "|---|---:|" + "---:|" * len(METRICS)]
    for value in VALUES:
        cost, overlaps, medians = profile(value)
        name = ", ".join(f"{v:.2f}" for v in overlaps.values()) + (" (fitted)" if value is None else " (fixed)")
        lines.append(f"| {name} | {cost:.1f} | " + " | ".join(serving_median(medians[m]) for m in METRICS) + " |")
    return lines


def main() -> int:
    sys.stdout.write("\n".join(table()) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
