"""Serving at scale: gpusizer's serving answers against MLPerf Inference v4.1 and TensorRT-LLM's old tables.

Usage::

    python tools/validation_serving.py          # prints the "Serving at scale" section (markdown)

``tools/validation.py`` puts the same section into ``docs/validation.md``. Inputs, under
``data/calibration/``: ``serving-measurements.csv`` (a verbatim copy of the project's reference file) and
``serving-mapping.csv`` (each row onto catalogue ids, a layout, engine caps, lengths and, for Server rows,
the latency limits; every assumption named there).

Each row is predicted with the shipped constants (``data/efficiency.toml``; nothing here is fitted):

* ``offline``: ``serving.throughput(...).offline.tokens_per_second``, the saturated engine at the caps;
* ``server``: ``capacity.tokens_per_second``, the output rate at the largest request rate whose p99
  TTFT and TPOT meet the row's limits;
* ``ttft_p50`` / ``tpot_p50``: ``latency.ttft.p50`` / ``latency.tpot.p50`` at the request rate the
  row's Server result measured (its tok/s over the mean output tokens);
* ``case``: ``performance.predict`` (static batches, batch-1 TTFT), as in the calibration report.

with the datasheet ceiling and the p10-p90 band of the speed fit. ``rows`` is cached per process.

A separate part (``public_rows``, ``public_section``) checks the published figures of
``public-serving-measurements.csv`` (expert parallelism at scale, engine blogs) mapped by
``public-serving-mapping.csv``, whose header defines each mapping kind; all of them are held out.
"""

from __future__ import annotations

import csv
import math
import sys
from collections import defaultdict
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

import numpy as np

from gpusizer import catalog, efficiency, parallel, performance, serving, step
from gpusizer.serving import SLO, Workload

ROOT = Path(__file__).resolve().parents[1]
CALIBRATION = ROOT / "data" / "calibration"
MEASUREMENTS = CALIBRATION / "serving-measurements.csv"
MAPPING = CALIBRATION / "serving-mapping.csv"

#: Metric names of the measurement file, by kind of prediction.
METRICS = {"offline": "offline_tok_s", "server": "server_tok_s", "ttft_p50": "ttft_ms_median",
           "tpot_p50": "tpot_ms_median"}
#: Mean prompt lengths the sensitivity table puts in place of an assumed one. [token]
SENSITIVITY = (128, 512, 1024)
TIMES = {"ttft_ms_median", "tpot_ms_median"}


@dataclass(frozen=True)
class ServingCase:
    """One serving measurement and the configuration its mapping row gives it."""

    id: str
    kind: str
    """``offline``, ``server``, ``ttft_p50``, ``tpot_p50`` or ``case``."""
    metric: str
    """The measurement file's metric name."""
    value: float
    """Measured, in base units (tok/s, or s for times)."""
    label: str
    use: str
    reason: str
    model: str = ""
    gpu: str = ""
    gpus: int = 1
    engine: str = ""
    weights: str = ""
    kv_cache: str | None = None
    layout: str = ""
    max_sequences: int | None = None
    prompt: float = 0.0
    prompt_assumed: bool = False
    output: float = 0.0
    slo: SLO | None = None
    rate: float = 0.0
    """System request rate of a p50 row (its Server row's tok/s over the mean output). [1/s]"""
    load: float = math.nan
    """Measured Server over Offline throughput of the same system (p50 rows): the load the p50 was at. [-]"""
    case: efficiency.Case | None = None
    at: str = ""
    """Id of the Server row whose rate a p50 row is at."""

    @property
    def lengths(self) -> str:
        if self.case is not None:
            return f"{self.case.prompt}/{self.case.output}, batch {self.case.batch}"
        return f"{self.prompt:.0f}{'*' if self.prompt_assumed else ''}/{self.output:.0f}"


@dataclass(frozen=True)
class ServingRow:
    """A serving measurement with gpusizer's answer."""

    case: ServingCase
    expected: float
    ceiling: float
    low: float
    high: float
    binding: str
    """What limits the engine in this prediction (the batch cap, the SLO target, ...)."""
    matched: float = math.nan
    """p50 rows: the prediction at the measured load (``ServingCase.load``) of the predicted offline rate,
    which separates the latency model from the capacity error. [s]"""

    @property
    def is_time(self) -> bool:
        return self.case.metric in TIMES or (self.case.case is not None and self.case.case.metric == "ttft")

    @property
    def error(self) -> float:
        """Signed error of the expected value relative to the measurement; inf when unstable. [-]"""
        return self.expected / self.case.value - 1.0 if math.isfinite(self.expected) else math.inf

    @property
    def matched_error(self) -> float:
        """Signed error of ``matched``; nan for rows without it. [-]"""
        return self.matched / self.case.value - 1.0 if not math.isnan(self.matched) else math.nan

    @property
    def over_ceiling(self) -> bool:
        return self.case.value < self.ceiling if self.is_time else self.case.value > self.ceiling

    @property
    def in_band(self) -> bool:
        return self.low <= self.case.value <= self.high


def _csv(path: Path) -> list[dict[str, str]]:
    text = path.read_text(encoding="utf-8")
    return list(csv.DictReader(line for line in text.splitlines() if not line.startswith("#")))


def _label(row: dict[str, str]) -> str:
    return f"{row['gpu']} x{row['gpu_count'] or '?'}; {row['model']}; {row['weight_precision'] or '?'}; {row['engine']}"


def _slo(m: dict[str, str]) -> SLO | None:
    if not (m["ttft_limit_ms"] or m["tpot_limit_ms"]):
        return None
    ms = {k: float(m[k]) / 1000 if m[k] else None for k in ("ttft_limit_ms", "tpot_limit_ms")}
    return SLO(ttft_p95=ms["ttft_limit_ms"], tpot_p95=ms["tpot_limit_ms"], quantile=float(m["quantile"] or 0.95))


def cases() -> list[ServingCase]:
    """Every serving measurement joined with its mapping, in file order."""
    rows = _csv(MEASUREMENTS)
    by_id = {r["id"]: r for r in rows}
    maps = {m["id"]: m for m in _csv(MAPPING)}
    calibration = {c.id: c for c in efficiency.load_cases(MEASUREMENTS, MAPPING)}
    offline = {(maps[r["id"]]["model"], maps[r["id"]]["gpu"], maps[r["id"]]["layout"], r["gpu_count"]):
               float(r["value"]) for r in rows if r["id"] in maps and maps[r["id"]]["kind"] == "offline"}
    out = []
    for row in rows:
        m = maps.get(row["id"], {"use": "exclude", "kind": "", "reason": "no mapping row"})
        base = ServingCase(id=row["id"], kind=m["kind"], metric=row["metric"], value=float(row["value"]),
                           label=_label(row), use=m["use"], reason=m.get("reason", ""))
        if m["use"] == "exclude" or m["kind"] == "case":
            out.append(replace(base, value=calibration[row["id"]].value, case=calibration[row["id"]]))
            continue
        value = base.value / 1000 if row["metric"] in TIMES else base.value
        at = by_id[m["at"]] if m["at"] else None
        output = float(m["output_tokens"])
        out.append(replace(
            base, value=value, model=m["model"], gpu=m["gpu"], gpus=int(row["gpu_count"]), engine=m["engine"],
            weights=m["weights"], kv_cache=m["kv_cache"] or None, layout=m["layout"],
            max_sequences=int(m["max_sequences"]) if m["max_sequences"] else None, prompt=float(m["prompt_tokens"]),
            prompt_assumed=m["prompt_source"] == "assumed", output=output, slo=_slo(m),
            rate=float(at["value"]) / output if at is not None else 0.0,
            load=float(at["value"]) / offline.get((m["model"], m["gpu"], m["layout"], row["gpu_count"]), math.nan)
            if at is not None else math.nan, at=m["at"]))
    return out


def source_group(source: str) -> str:
    """The source a leave-one-source-out fit holds out whole: an MLPerf submitter
    (``mlcommons/inference_results_v4.1:closed/NVIDIA``), else the source as written."""
    if source.startswith("mlcommons/"):
        return "/".join(source.split("/")[:3])
    return source


@cache
def offline_cases() -> tuple[efficiency.Case, ...]:
    """The Offline rows (``kind = offline``, not excluded) and the p50 TPOT rows (``_little_case``) as cases
    (metric ``offline``, output tok/s per GPU): one replica's layout, and the saturated batch that
    ``serving.throughput`` finds at the row's caps (it depends on memory and the engine's caps, never on a
    fitted constant). The source is the MLPerf submitter (``source_group``)."""
    sources = {r["id"]: r["source"] for r in _csv(MEASUREMENTS)}
    values = {r["id"]: float(r["value"]) for r in _csv(MEASUREMENTS)}
    out = []
    for c in cases():
        if c.kind == "tpot_p50" and c.use != "exclude":
            out.append(_little_case(c, values, sources))
        if c.kind != "offline" or c.use == "exclude":
            continue
        t = _answer(c)
        out.append(efficiency.Case(
            id=c.id, metric="offline", value=c.value / c.gpus, model=c.model, gpu=c.gpu,
            gpus=t.gpus_per_replica, split=t.layout or "tensor", engine=c.engine, weights=c.weights,
            kv_cache=c.kv_cache, prompt=round(c.prompt), output=round(c.output),
            batch=max(1, round(t.offline.batch)), use=c.use,
            reason=(c.reason + "; " if c.reason else "") + "mean prompt "
            + ("assumed" if c.prompt_assumed else "stated"),
            source=source_group(sources[c.id]), label=c.label))
    return tuple(out)


def _little_case(c: ServingCase, values: dict[str, float], sources: dict[str, str]) -> efficiency.Case:
    """A p50 TPOT row with its Server row as an ``offline`` case: by Little's law the Server run held
    B = X_r * TPOT sequences per replica (X_r its output tok/s per replica, the p50 standing in for the mean
    TPOT), decoding at X_r: one more point of the step time against the batch, besides the Offline row's."""
    t = _answer(replace(c, kind="offline", rate=0.0))
    replicas = c.gpus // t.gpus_per_replica
    rate = values[c.at] / replicas
    return efficiency.Case(
        id=c.id, metric="offline", value=rate / t.gpus_per_replica, model=c.model, gpu=c.gpu,
        gpus=t.gpus_per_replica, split=t.layout or "tensor", engine=c.engine, weights=c.weights,
        kv_cache=c.kv_cache, prompt=round(c.prompt), output=round(c.output), batch=max(1, round(rate * c.value)),
        use=c.use,
        reason="Server tok/s at the Little's-law batch (Server tok/s x p50 TPOT); mean prompt "
        + ("assumed" if c.prompt_assumed else "stated"), source=source_group(sources[c.id]), label=c.label)


@cache
def _answer(c: ServingCase) -> serving.Throughput:
    """``serving.throughput`` of one row's configuration (cached: rows of one system share the steps)."""
    workload = Workload(rate=c.rate or 1.0, prompt_tokens=c.prompt, output_tokens=c.output)
    return serving.throughput(c.model, c.gpu, workload=workload, slo=c.slo if c.kind == "server" else None,
                              gpus=c.gpus, layout=c.layout, engine=c.engine, weights=c.weights, kv_cache=c.kv_cache,
                              max_sequences=c.max_sequences, latencies=c.kind in ("ttft_p50", "tpot_p50"))


def _case_row(c: ServingCase, table: efficiency.Table) -> ServingRow:
    """A calibration case: ``performance.predict``, its ceiling and its regime's band."""
    case = c.case
    assert case is not None
    expected = performance.predict(case, table)
    ceiling = performance.predict(case, table, ceiling=True)
    informed = efficiency.resolve(table, *performance.keys(case)).informed
    low, high = efficiency.band_factors(table, case.regime, informed=informed)
    if case.metric == "ttft":
        band = (max(expected / high, ceiling), expected / low)
    else:
        band = (expected * low, min(expected * high, ceiling))
    return ServingRow(c, expected, ceiling, *band, case.regime)


def predict(c: ServingCase) -> ServingRow:
    """gpusizer's answer to one serving measurement, with its ceiling, band and what limits it."""
    if c.kind == "case":
        return _case_row(c, efficiency.bundled())
    t = _answer(c)
    if c.kind == "offline":
        o = t.offline
        return ServingRow(c, o.tokens_per_second, o.tokens_per_second_ceiling, *o.tokens_per_second_band,
                          f"{o.binding} at {o.batch:.0f}")
    if c.kind == "server":
        cap = t.capacity
        assert cap is not None
        return ServingRow(c, cap.tokens_per_second, cap.tokens_per_second_ceiling, *cap.tokens_per_second_band,
                          f"{cap.binding} at {cap.batch:.0f}")
    lat = t.latency
    assert lat is not None
    name = "ttft" if c.kind == "ttft_p50" else "tpot"
    fast, slow = getattr(lat, f"{name}_band")
    capacity = _answer(replace(c, kind="offline", rate=0.0)).offline.requests_per_second
    measured = f", measured {c.load:.2f}" if math.isfinite(c.load) else ""
    why = (f"batch {lat.batch:.0f}, load {c.rate / capacity:.2f}{measured}" if lat.stable
           else f"unstable: {lat.limit} (capacity {capacity:.3g} req/s)")
    matched = math.nan
    if math.isfinite(c.load):
        at = _answer(replace(c, rate=c.load * capacity)).latency
        assert at is not None
        matched = getattr(at, name).p50
    return ServingRow(c, getattr(lat, name).p50, getattr(lat, f"{name}_ceiling").p50, fast.p50, slow.p50, why,
                      matched)


@cache
def rows(prompt: float | None = None) -> tuple[tuple[ServingRow, ...], tuple[ServingCase, ...]]:
    """Predictions for every usable serving row, and the excluded rows; ``prompt`` replaces every assumed
    mean prompt length (the sensitivity table). Cached per process."""
    found, excluded = [], []
    for c in cases():
        if c.use == "exclude":
            excluded.append(c)
            continue
        if prompt is not None and c.prompt_assumed:
            c = replace(c, prompt=float(prompt))
        found.append(predict(c))
    return tuple(found), tuple(excluded)


def clear_caches() -> None:
    """Forget every cached answer (``rows``, ``public_rows``, ``offline_cases`` and the per-row
    ``serving.throughput``), for a run with another efficiency table (``tools/serving_overlap.py``)."""
    for cached in (_answer, rows, public_rows, offline_cases):
        cached.cache_clear()


def ape_stats(errors: list[float]) -> tuple[int, float, float]:
    """Count, median and 90th percentile of absolute percentage errors (inf counts as a miss). [-, %, %]"""
    a = 100 * np.abs(np.asarray(errors, dtype=float))
    if a.size == 0:
        return 0, math.nan, math.nan
    return int(a.size), float(np.median(a)), float(np.quantile(a, 0.9, method="higher"))


def medians(found: tuple[ServingRow, ...]) -> dict[str, tuple[int, float, float, float]]:
    """(rows, median APE, p90 APE, band coverage) by measurement metric; ``<metric>, matched load`` for the
    p50 rows predicted at their measured load (no band: coverage nan)."""
    groups: dict[str, list[ServingRow]] = defaultdict(list)
    for r in found:
        groups[r.case.metric].append(r)
    out = {k: (*ape_stats([r.error for r in v]), float(np.mean([r.in_band for r in v])))
           for k, v in sorted(groups.items())}
    for k, v in sorted(groups.items()):
        matched = [r.matched_error for r in v if not math.isnan(r.matched_error)]
        if matched:
            out[f"{k}, matched load"] = (*ape_stats(matched), math.nan)
    return out


def _fmt(value: float, time: bool) -> str:
    if not math.isfinite(value):
        return "unstable" if value > 0 else "-"
    if time:
        return f"{value * 1000:,.1f} ms"
    return f"{value:,.0f}" if value >= 100 else f"{value:,.4g}"


def _pct(value: float) -> str:
    return f"{100 * value:+.1f}%" if math.isfinite(value) else "inf"


def _config(c: ServingCase) -> str:
    if c.case is not None:
        return f"{c.case.gpus} GPU, {c.case.engine}"
    caps = f"max {c.max_sequences} seqs" if c.max_sequences else "default caps"
    return f"{c.layout}, {c.engine}, {caps}"


def _row_table(found: tuple[ServingRow, ...]) -> list[str]:
    lines = ["| id | measurement (GPU x count, model, weights, engine) | metric | configuration | lengths in/out "
             "| measured | expected | error | ceiling | p10-p90 band | limited by | at matched load |",
             "|---|---|---|---|---|---:|---:|---:|---:|---|---|---:|"]
    for r in found:
        c, t = r.case, r.is_time
        flag = " **over ceiling**" if r.over_ceiling else ""
        matched = "" if math.isnan(r.matched) else f"{_fmt(r.matched, t)} ({_pct(r.matched_error)})"
        lines.append(f"| {c.id} | {c.label} | {c.metric} | {_config(c)} | {c.lengths} | {_fmt(c.value, t)} "
                     f"| {_fmt(r.expected, t)} | {_pct(r.error)} | {_fmt(r.ceiling, t)}{flag} "
                     f"| {_fmt(r.low, t)} - {_fmt(r.high, t)} | {r.binding} | {matched} |")
    return lines


def _stats(found: tuple[ServingRow, ...]) -> list[str]:
    lines = ["| metric | rows | median APE | p90 APE | inside p10-p90 band |", "|---|---:|---:|---:|---:|"]
    for metric, (n, median, p90, coverage) in medians(found).items():
        covered = "-" if math.isnan(coverage) else f"{100 * coverage:.0f}%"
        lines.append(f"| {metric} | {n} | {_med(median)} | {_med(p90)} | {covered} |")
    return lines


def _med(value: float) -> str:
    return f"{value:.1f}%" if math.isfinite(value) else "inf"


def _sensitivity() -> list[str]:
    """Median APE by metric with every assumed prompt length replaced."""
    shown = {p: medians(rows(p)[0]) for p in (None, *SENSITIVITY)}
    metrics = [m for m in METRICS.values() if m in shown[None]]
    lines = ["| assumed mean prompt | " + " | ".join(metrics) + " |", "|---" + "|---:" * len(metrics) + "|"]
    for prompt, stats in shown.items():
        name = "256 (as mapped)" if prompt is None else f"{prompt}"
        lines.append(f"| {name} | " + " | ".join(_med(stats[m][1]) for m in metrics) + " |")
    return lines


def section() -> list[str]:
    """The "Serving at scale" section of ``docs/validation.md``, as lines."""
    found, excluded = rows()
    over = [r.case.id for r in found if r.over_ceiling]
    unstable = [r.case.id for r in found if not math.isfinite(r.expected)]
    lines = [
        "## Serving at scale",
        "",
        "MLPerf Inference v4.1 Offline and Server results (Llama 2 70B, Mixtral 8x7B) and the old TensorRT-LLM "
        "`performance.md` tables, from `data/calibration/serving-measurements.csv` mapped by "
        "`data/calibration/serving-mapping.csv` (every assumption is named there); generated by "
        "`tools/validation_serving.py`. The rows the mapping marks `fit` (some Offline rows, and p50-TPOT rows "
        "paired with their Server row by Little's law) also feed the fit as `offline` cases, so their errors "
        "here are in-sample; the others are held out. Method (`docs/throughput.md`):",
        "",
        "* **offline_tok_s**: `serving.throughput(...).offline`, output tokens/s of all replicas with each engine "
        "as full as its caps allow (max_num_seqs, KV pool, token budget shared with chunked prefill);",
        "* **server_tok_s**: output tokens/s at `capacity`, the largest Poisson request rate whose p99 TTFT and "
        "TPOT (closed form) meet the row's limits (2 s and 200 ms);",
        "* **ttft_ms_median / tpot_ms_median** (MLPerf): p50 TTFT/TPOT (closed form) at the request rate the "
        "row's Server result measured; `unstable` where gpusizer's capacity is below that rate (counted as "
        "an infinite error). MLPerf runs the Server scenario at 80-95 % of its Offline rate, where a latency "
        "moves as 1/(1 - load): **matched load** predicts the same rows at the measured Server/Offline ratio "
        "of gpusizer's own offline rate, which separates the latency model from the capacity error. "
        "`limited by` gives the mean-field batch and the load, the rate over gpusizer's offline rate (and the "
        "measured Server/Offline ratio): a 5 % error in the offline rate moves a latency at load 0.9 by -30 % to "
        "+90 % (`docs/throughput.md#step-time-against-the-batch-and-latency-at-a-rate`);",
        "* **output_tok_s_aggregate** and TensorRT-LLM's batch-1 **ttft_ms_median**: `performance.predict`, "
        "as the calibration rows above.",
        "",
        "**Input lengths are assumed.** MLPerf logs do not record them and no published mean input length "
        "of the two datasets was found (inputs are filtered to at most 1,024 tokens); lengths marked `*` use "
        "an assumed mean of 256 tokens, and the sensitivity table shows the medians at other means. Output "
        "lengths are the means the logs give (tokens/s over samples/s). Lengths are fixed (no distribution), "
        "so p99 limits see no length scatter.",
        "",
        f"* Rows: {len(found)} predicted, {len(excluded)} not representable (listed below).",
        f"* Ceiling violations: {len(over)}" + (": " + ", ".join(over) if over else "") + ".",
        f"* Unstable at the measured Server rate (gpusizer's capacity is lower): {len(unstable)}"
        + (": " + ", ".join(unstable) if unstable else "") + ".",
        "",
        "### Errors by metric",
        "",
        *_stats(found),
        "",
        "### Sensitivity to the assumed mean input length (median APE)",
        "",
        *_sensitivity(),
        "",
        "### Every serving row",
        "",
        *_row_table(found),
        "",
        "### Serving rows gpusizer cannot represent",
        "",
        "| id | measurement | metric | reason |",
        "|---|---|---|---|",
        *(f"| {c.id} | {c.label} | {c.metric} | {c.reason or '-'} |" for c in excluded),
        *(["| - | - | - | none: every row is predicted |"] if not excluded else []),
        "",
    ]
    return lines


# --- published serving figures at scale (public-serving-measurements.csv) -------------------------------
# Kept apart from the MLPerf part above: its own files, mapping kinds, rows and table (issue 15, MoE under
# expert parallelism). Every mapped row is held out; nothing here feeds the fit.

PUBLIC_MEASUREMENTS = CALIBRATION / "public-serving-measurements.csv"
PUBLIC_MAPPING = CALIBRATION / "public-serving-mapping.csv"
#: Mapping kinds whose prediction is a time (s); the others are token rates.
PUBLIC_TIMES = {"e2e", "concurrency_tpot", "offline_tpot", "tpot_rate"}


@dataclass(frozen=True)
class PublicRow:
    """One published serving figure, its mapping and gpusizer's answer (rates per GPU or per user, times in s)."""

    id: str
    kind: str
    metric: str
    label: str
    source: str
    family: str
    """The GPU family the report groups by (Hopper, Blackwell, CDNA 3)."""
    moe: bool
    measured: float
    expected: float
    ceiling: float
    reason: str
    per_expert: float = math.nan
    """Token-expert assignments per routed expert of the busiest rank in one MoE layer of the step (decode and
    prefill instances under expert parallelism): the grouped GEMMs' rows per expert. [-]"""

    @property
    def is_time(self) -> bool:
        return self.kind in PUBLIC_TIMES

    @property
    def error(self) -> float:
        """Signed error relative to the measurement; inf when gpusizer calls the point unsustainable. [-]"""
        return self.expected / self.measured - 1.0 if math.isfinite(self.expected) else math.inf

    @property
    def over_ceiling(self) -> bool:
        return self.measured < self.ceiling if self.is_time else self.measured > self.ceiling


def _family(gpu: str) -> str:
    return "CDNA 3" if gpu.startswith("mi3") else "Blackwell" if gpu.startswith(("b", "gb")) else "Hopper"


def _per_expert(m: dict[str, str]) -> float:
    """``PublicRow.per_expert`` of a mapped decode or prefill row under expert parallelism, else nan."""
    plan = parallel.layout(m["layout"], int(m["gpus"]))
    moe = catalog.model(m["model"]).moe
    if moe is None or plan.ep == 1 or m["kind"] not in ("decode", "prefill"):
        return math.nan
    routed = int(m["batch"]) * (int(m["prompt_tokens"]) if m["kind"] == "prefill" else 1)
    held = step.experts_held(moe.num_experts, plan.ep)
    return float(step.busiest_rank_assignments(routed, moe.experts_per_token, plan.ep, plan.tp, held)) / held


def _public_predict(m: dict[str, str]) -> tuple[float, float]:
    """Expected and ceiling of one mapped row, in the compared unit (``public-serving-mapping.csv`` header)."""
    gpus, batch = int(m["gpus"]), int(m["batch"] or 1)
    prompt, output = int(m["prompt_tokens"]), int(m["output_tokens"])
    weights, experts, kv = m["weights"] or None, m["expert_weights"] or None, m["kv_cache"] or None
    common = dict(gpus=gpus, layout=m["layout"], engine=m["engine"], kv_cache=kv)
    kind = m["kind"]
    if kind in ("decode", "single"):
        d = performance.speed(m["model"], m["gpu"], weights=weights, expert_weights=experts,
                              context=prompt + output // 2, concurrency=batch, **common).decode
        if kind == "single":
            return float(d.expected_tokens_per_second), float(d.ceiling_tokens_per_second)
        return (float(d.expected_aggregate_tokens_per_second) / gpus,
                float(d.ceiling_aggregate_tokens_per_second) / gpus)
    if kind in ("prefill", "static", "e2e"):
        b = performance.batch_throughput(m["model"], m["gpu"], prompt=prompt, output=output, batch=batch,
                                         weights=weights, expert_weights=experts, **common)
        if kind == "e2e":
            return (b.prefill_seconds_expected + b.decode_seconds_expected,
                    batch * output / b.ceiling_tokens_per_second)
        scale = prompt / output if kind == "prefill" else 1.0
        return b.expected_tokens_per_second * scale / gpus, b.ceiling_tokens_per_second * scale / gpus
    if kind in ("concurrency", "concurrency_tpot"):
        case = efficiency.Case(id=m["id"], metric="offline", value=1.0, model=m["model"], gpu=m["gpu"], gpus=gpus,
                               split=m["layout"], engine=m["engine"], weights=experts or weights or "", kv_cache=kv,
                               prompt=prompt, output=output, batch=batch, use="holdout")
        rates = performance.predict(case), performance.predict(case, ceiling=True)
        if kind == "concurrency_tpot":  # predict is batch / step / gpus
            return batch / (rates[0] * gpus), batch / (rates[1] * gpus)
        total = (prompt + output) / output if m["metric"].startswith("total") else 1.0
        return rates[0] * total, rates[1] * total
    workload = Workload(rate=float(m["rate"] or 1.0), prompt_tokens=prompt, output_tokens=output)
    t = serving.throughput(m["model"], m["gpu"], workload=workload, weights=experts or weights,
                           max_sequences=batch if m["batch"] else None, latencies=kind == "tpot_rate", **common)
    if kind == "tpot_rate":
        lat = t.latency
        assert lat is not None
        return lat.tpot.p50, lat.tpot_ceiling.p50
    if kind == "offline_tpot":
        return t.offline.tpot_seconds, t.offline.tpot_seconds * t.offline.tokens_per_second \
            / t.offline.tokens_per_second_ceiling
    return t.offline.tokens_per_second / t.gpus, t.offline.tokens_per_second_ceiling / t.gpus


@cache
def public_rows() -> tuple[tuple[PublicRow, ...], tuple[tuple[str, str, str, str], ...]]:
    """Predictions for every mapped row of ``public-serving-measurements.csv``, and the excluded rows
    (id, label, metric, reason). Cached per process."""
    maps = {m["id"]: m for m in _csv(PUBLIC_MAPPING)}
    found, excluded = [], []
    for row in _csv(PUBLIC_MEASUREMENTS):
        m = maps.get(row["id"], {"use": "exclude", "reason": "no mapping row"})
        if m["use"] == "exclude":
            excluded.append((row["id"], _label(row), row["metric"], m["reason"]))
            continue
        value = float(row["value"])
        measured = value / int(row["gpu_count"]) if m["per"] == "count" else value
        measured = measured / 1000 if m["kind"] in PUBLIC_TIMES else measured
        expected, ceiling = _public_predict({**m, "metric": row["metric"]})
        moe = catalog.model(m["model"]).moe is not None
        found.append(PublicRow(row["id"], m["kind"], row["metric"], _label(row), row["source"].split(" ")[0],
                               _family(m["gpu"]), moe, measured, expected, ceiling, m["reason"], _per_expert(m)))
    return tuple(found), tuple(excluded)


def public_medians(found: tuple[PublicRow, ...]) -> dict[str, tuple[int, float, float]]:
    """(rows, median APE, p90 APE): all rows, MoE rows, MoE rows by GPU family, dense rows."""
    groups: dict[str, list[float]] = defaultdict(list)
    for r in found:
        groups["all rows"].append(r.error)
        groups["MoE rows" if r.moe else "dense rows"].append(r.error)
        if r.moe:
            groups[f"MoE rows, {r.family}"].append(r.error)
            groups[f"MoE rows, {'expert parallel' if r.kind in ('decode', 'prefill') else 'other'}"].append(r.error)
    return {k: ape_stats(v) for k, v in sorted(groups.items())}


def public_section() -> list[str]:
    """The "Published serving figures at scale" part of ``docs/validation.md``, as lines."""
    found, excluded = public_rows()
    over = [r.id for r in found if r.over_ceiling]
    lines = [
        "### Published serving figures at scale (expert parallelism, engine blogs)",
        "",
        "The rows of `data/calibration/public-serving-measurements.csv` (engine-team and vendor posts: DeepSeek and "
        "Kimi under expert parallelism on H100/H200/GB200/GB300, MI300X, vLLM/SGLang closed loops), mapped by "
        "`data/calibration/public-serving-mapping.csv` (its header defines each kind and names every "
        "assumption; each row's `reason` names its own). Every mapped row is **held out**: none feeds the fit, "
        "so each error is out of sample (leave-one-source-out is the same number). Rates are per GPU (per user "
        "for `single`), times in ms; `ceiling` is the datasheet roofline.",
        "",
        f"* Rows: {len(found)} predicted, {len(excluded)} not representable (listed below).",
        f"* Ceiling violations: {len(over)}" + (": " + ", ".join(over) if over else "") + ".",
        "",
        "| group | rows | median APE | p90 APE |",
        "|---|---:|---:|---:|",
        *(f"| {k} | {n} | {_med(med)} | {_med(p90)} |" for k, (n, med, p90) in public_medians(found).items()),
        "",
        "`tokens/expert`: token-expert assignments per routed expert on the busiest rank in one MoE layer "
        "(`step.busiest_rank_assignments` over `step.experts_held`), the rows of its grouped GEMMs, for the "
        "decode and prefill instances under expert parallelism.",
        "",
        "| id | measurement (GPU x count, model, weights, engine) | kind | tokens/expert | measured | expected | error "
        "| ceiling | mapping |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in found:
        flag = " **over ceiling**" if r.over_ceiling else ""
        per = "-" if math.isnan(r.per_expert) else f"{r.per_expert:,.0f}"
        lines.append(f"| {r.id} | {r.label} | {r.kind} | {per} | {_fmt(r.measured, r.is_time)} | "
                     f"{_fmt(r.expected, r.is_time)} | {_pct(r.error)} | {_fmt(r.ceiling, r.is_time)}{flag} | "
                     f"{r.reason} |")
    lines += ["", "| id | measurement | metric | why not predicted |", "|---|---|---|---|",
              *(f"| {i} | {label} | {metric} | {reason} |" for i, label, metric, reason in excluded), ""]
    return lines


def main() -> int:
    sys.stdout.write("\n".join(section() + public_section()) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
