r"""Calibrate gpusizer on your own measurements, so later estimates for your engine and hardware follow them.

The workflow: pre-filter candidates with the analytical model, benchmark two or three of them, feed
the numbers back (``readers`` reads the schema and common tool outputs), then trust the calibrated
model for the rest.

``calibrate(measurements)`` fits the efficiency constants that the measurements inform, separately
for every **scope** (engine class x GPU class) present in the data: the engine's per-layer, per-step,
per-request and per-MoE-layer fixed costs, the weight-streaming and GEMM efficiencies of every
format family met, and the all-reduce latency of every fabric met. The fit is
``efficiency.fit``: ``scipy.optimize.least_squares`` on log ratios with a robust (Cauchy) loss,
physical bounds, and Gaussian priors centred on the ``base`` constants (the shipped
``data/efficiency.toml`` unless told otherwise), so a constant the data says nothing about keeps its
default. Every row is
then predicted by a fit that did not see it (leave-one-out); the p10-p90 bands of the calibrated
scope come from those residuals, and the before/after error table from them and from the base's
predictions.

The result is a frozen ``Calibration``: the fitted constants with their priors, the bands, the rows
and their errors, and provenance (rows, date, gpusizer version, base). It is saved and read as TOML
or JSON (``save``, ``load``) and accepted by ``estimate(calibration=...)`` and
``gpusizer fit --calibration``. Estimates outside its scopes are unchanged.

Deliberate omissions: a calibration stores the constants it changed, not the whole table, so it
applies on top of the table in use (the bundled one unless ``base=`` is given); scopes never share
constants (a vLLM fit on H100 does not move vLLM on RTX 4090, nor the NVLink latency of TensorRT-LLM).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import tomllib
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from gpusizer import catalog, efficiency, performance
from gpusizer.readers import Measurement, to_case

__all__ = [
    "MINIMUM_ROWS",
    "Calibration",
    "Parameter",
    "RegimeBand",
    "RegimeErrors",
    "RowError",
    "Scope",
    "calibrate",
    "efficiency_table",
    "error_table",
    "errors_by_regime",
    "from_json",
    "from_toml",
    "load",
    "save",
    "to_json",
    "to_toml",
]

#: Rows a regime needs for a band of its own, and for its error statistics to count.
MINIMUM_ROWS = 3

SIGMA = 0.05
"""Scale of a row's log residual in the fit: a benchmark repeats to about 5 %. [-]"""
LOSS = "cauchy"
"""Robust loss: a row many ``SIGMA`` away from the others (another setup, a typo) loses its pull."""


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class Parameter(_Record):
    """One constant of a scope after calibration."""

    kind: Literal["engine", "group", "fabric"]
    entry: str
    """Engine name, group key (``engine/gpu_class/format``) or fabric name."""
    name: str
    """Field, as in ``efficiency.FIELDS`` (``bandwidth``, ``layer_seconds``...)."""
    value: float
    """Calibrated value. [-] or [s]"""
    prior: float
    """Value in the base table, the centre of the prior. [-] or [s]"""
    informed: bool
    """Whether a measurement informed it (else it stays at its prior)."""
    rows: tuple[str, ...] = ()
    """Measurements that informed its entry (empty when it was not informed)."""


class RegimeBand(_Record):
    """p10-p90 of measured/expected in one regime of a scope, from leave-one-out residuals."""

    regime: str
    low: float
    """p10 of measured / expected, rates. [-]"""
    high: float
    """p90 of measured / expected, rates. [-]"""
    rows: int


class RowError(_Record):
    """One measurement and gpusizer's predictions of it, in the model's units (token/s per GPU, or s)."""

    id: str
    scope: str
    """``engine/gpu_class``."""
    regime: str
    metric: str
    measured: float
    before: float
    """Prediction with the base constants."""
    after: float
    """Prediction with the calibrated constants (in-sample)."""
    loo: float
    """Prediction by a calibration that did not see this row (leave-one-out)."""


class Scope(_Record):
    """The constants of one engine class on one GPU class, fitted together."""

    engine: str
    gpu_class: str
    rows: tuple[str, ...]
    parameters: tuple[Parameter, ...] = ()
    bands: tuple[RegimeBand, ...] = ()
    success: bool = True
    """``least_squares`` converged."""

    @property
    def key(self) -> str:
        return f"{self.engine}/{self.gpu_class}"


class Calibration(_Record):
    """Efficiency constants fitted to a user's measurements, with their provenance."""

    scopes: tuple[Scope, ...]
    measurements: tuple[Measurement, ...]
    """The rows the calibration was fitted on, as given."""
    errors: tuple[RowError, ...] = ()
    created: datetime.datetime
    """When ``calibrate`` ran (UTC)."""
    gpusizer_version: str
    base: str
    """The table the priors came from."""
    method: str
    format_version: int = 1


# --- fitting --------------------------------------------------------------------------------------


def _scope_key(case: efficiency.Case) -> tuple[str, str]:
    engine, gpu_cls, _, _ = performance.keys(case)
    return engine, gpu_cls


def _base_value(base: efficiency.Table, kind: str, entry: str, name: str) -> float:
    """A constant of the base table; a group key it lacks reads the group that matches it."""
    if kind == "group":
        return float(getattr(efficiency.group(base, *entry.split("/")), name))
    return efficiency.constant(base, kind, entry, name)


def _parameters(fit: efficiency.Fit, base: efficiency.Table) -> tuple[Parameter, ...]:
    """The constants a scope's fit varied, with their priors and whether (and by which rows) data informed them.

    A constant no row informed keeps the base value exactly (the fit returns it to within rounding)."""
    out = []
    for kind, entry, name in fit.parameters:
        record = _entry(fit.table, kind, entry)
        prior = _base_value(base, kind, entry, name)
        informed = name in record.fitted
        out.append(Parameter(
            kind=kind, entry=entry, name=name, prior=prior, informed=informed,
            value=efficiency.constant(fit.table, kind, entry, name) if informed else prior,
            rows=tuple(record.rows) if informed else (),
        ))
    return tuple(out)


def _entry(table: efficiency.Table, kind: str, name: str) -> Any:
    if kind == "group":
        return next(g for g in table.groups if g.key == name)
    return (table.engines if kind == "engine" else table.fabrics)[name]


def _fit_scope(
    cases: list[efficiency.Case], base: efficiency.Table, sigma: float, loss: str
) -> tuple[Scope, list[RowError]]:
    full = efficiency.fit(cases, base, performance.keys, performance.predict, sigma=sigma, loss=loss)
    loo = efficiency.leave_one_out(cases, base, performance.keys, performance.predict, start=full.table,
                                   sigma=sigma, loss=loss)
    engine, gpu_cls = _scope_key(cases[0])
    bands = efficiency.regime_bands(cases, loo, minimum_rows=MINIMUM_ROWS)
    scope = Scope(
        engine=engine, gpu_class=gpu_cls, rows=tuple(c.id for c in cases), parameters=_parameters(full, base),
        bands=tuple(RegimeBand(regime=b.regime, low=b.low, high=b.high, rows=b.rows) for b in bands.values()),
        success=full.success,
    )
    errors = [
        RowError(id=c.id, scope=scope.key, regime=c.regime, metric=c.metric, measured=c.value,
                 before=performance.predict(c, base), after=full.predictions[c.id], loo=loo[c.id])
        for c in cases
    ]
    return scope, errors


def _check_ids(measurements: Sequence[Measurement]) -> None:
    repeated = sorted(k for k, n in Counter(m.id for m in measurements).items() if n > 1)
    if repeated:
        raise ValueError(f"measurements must have unique ids; repeated: {', '.join(repeated)}")


def _warn_above_ceiling(cases: Iterable[efficiency.Case]) -> None:
    for c in cases:
        ceiling = performance.predict(c, ceiling=True)
        if (c.value < ceiling) if c.metric == "ttft" else (c.value > ceiling):
            warnings.warn(f"measurement {c.id} beats the datasheet roofline ({c.value:.4g} vs {ceiling:.4g}): "
                          "speculative decoding, prefix caching or a wrong id? The fit cannot follow it.",
                          stacklevel=3)


def _describe(table: efficiency.Table, given: bool) -> str:
    if not given:
        return f"bundled data/efficiency.toml (fitted {table.fit.get('date', '?')}), gpusizer {_version()}"
    return f"a user table (fitted {table.fit.get('date', 'date unknown')})"


def _version() -> str:
    from gpusizer import __version__

    return __version__


def calibrate(
    measurements: Iterable[Measurement],
    *,
    base: efficiency.Table | None = None,
    sigma: float = SIGMA,
    loss: str = LOSS,
) -> Calibration:
    r"""Fit gpusizer's efficiency constants to your measurements, per engine class x GPU class.

    Parameters
    ----------
    measurements : iterable of Measurement
        Rows from ``readers`` (``read_csv``, ``read_vllm``, ``read_llama_bench``...); ids unique.
    base : efficiency.Table, optional
        Constants to start from and to keep where the data says nothing; the centre of the priors.
        Default: the shipped ``data/efficiency.toml``.
    sigma : float, optional
        Scale of a row's log residual against the priors' widths (``efficiency.BOUNDS``): smaller
        trusts the measurements more. [-]
    loss : str, optional
        Robust loss of ``scipy.optimize.least_squares``.

    Returns
    -------
    Calibration
        Fitted constants per scope, bands from leave-one-out residuals, every row's error before and
        after, and provenance.

    Raises
    ------
    ValueError
        No measurement, repeated ids, or a configuration the model cannot predict.

    Notes
    -----
    Within a scope, the fit minimises over the logs :math:`\theta` of the constants, within their
    physical bounds,

    .. math:: \sum_i \rho\left(\left[\frac{\ln(\hat y_i / y_i)}{\sigma}\right]^2\right)
              + \sum_j \rho\left(\left[\frac{\theta_j - \theta_j^{base}}{s_j}\right]^2\right)

    with :math:`\rho` the Cauchy loss :math:`\ln(1 + z)` by default, solved by the trust-region
    reflective method of ``scipy.optimize.least_squares`` [1]_. Adding a row adds a term, so at the
    (global) optimum that row's residual is no larger than before it was added.

    The defaults differ from the shipped fit's (``tools/fit_efficiency.py``: soft-L1, 0.1). That fit
    pools many GPUs into one constant per class and wants a central value; a calibration wants to
    follow the user's own rows, which repeat to a few percent, while a row that disagrees with the
    rest by many ``sigma`` loses its pull. On the shared calibration file this choice lowers the
    leave-one-out median error of every regime below the priors' (``docs/calibration.md``).

    References
    ----------
    .. [1] P. Virtanen et al., "SciPy 1.0: fundamental algorithms for scientific computing in Python,"
       Nature Methods, vol. 17, pp. 261-272, 2020, doi:10.1038/s41592-019-0686-2.

    Examples
    --------
    >>> from gpusizer.readers import Measurement
    >>> rows = [Measurement(id="tg", model="llama-3.1-8b", gpu="rtx-4090", engine="llama.cpp",
    ...                     weights="q4_k_m", metric="decode", value=150.0, output=128)]
    >>> cal = calibrate(rows)
    >>> [s.key for s in cal.scopes], abs(cal.errors[0].after / 150 - 1) < abs(cal.errors[0].before / 150 - 1)
    (['llama.cpp/gddr'], True)
    """
    rows = list(measurements)
    if not rows:
        raise ValueError("measurements must hold at least one row, got none")
    if not sigma > 0:
        raise ValueError(f"sigma must be > 0, got {sigma!r}")
    _check_ids(rows)
    table = base if base is not None else efficiency.bundled()
    cases = [to_case(m) for m in rows]
    _warn_above_ceiling(cases)
    scopes: dict[tuple[str, str], list[efficiency.Case]] = {}
    for case in cases:
        scopes.setdefault(_scope_key(case), []).append(case)
    fitted, errors = [], []
    for key in sorted(scopes):
        scope, scope_errors = _fit_scope(scopes[key], table, sigma, loss)
        fitted.append(scope)
        errors += scope_errors
    order = {m.id: n for n, m in enumerate(rows)}
    return Calibration(
        scopes=tuple(fitted), measurements=tuple(rows), errors=tuple(sorted(errors, key=lambda e: order[e.id])),
        created=datetime.datetime.now(datetime.UTC).replace(microsecond=0), gpusizer_version=_version(),
        base=_describe(table, base is not None),
        method=f"scipy.optimize.least_squares (trf), {loss} loss, residuals ln(predicted/measured)/{sigma}, "
        "Gaussian priors on ln(constant) centred on the base (widths in gpusizer.efficiency.BOUNDS), physical "
        "bounds; one fit per engine class x GPU class; bands and errors from leave-one-out refits",
    )


# --- using a calibration --------------------------------------------------------------------------


def _scope(calibration: Calibration, engine: str, gpu_cls: str) -> Scope | None:
    name = efficiency.engine_class(engine)
    return next((s for s in calibration.scopes if s.engine == name and s.gpu_class == gpu_cls), None)


def _mark(entry: Any, parameters: list[Parameter], source: str) -> Any:
    fitted = tuple(p.name for p in parameters if p.informed)
    rows = tuple(dict.fromkeys(r for p in parameters for r in p.rows))
    prior = {p.name: p.prior for p in parameters}
    return dataclasses.replace(entry, fitted=fitted, rows=rows, prior=prior, source=source)


def _marked(table: efficiency.Table, scope: Scope, source: str) -> efficiency.Table:
    """Record, on the entries the scope changed, which fields the user's rows informed."""
    by_entry: dict[tuple[str, str], list[Parameter]] = {}
    for p in scope.parameters:
        by_entry.setdefault((p.kind, p.entry), []).append(p)

    def mark(kind: str, name: str, entry: Any) -> Any:
        found = by_entry.get((kind, name))
        return entry if found is None else _mark(entry, found, source)

    return dataclasses.replace(
        table,
        engines={k: mark("engine", k, e) for k, e in table.engines.items()},
        groups=tuple(mark("group", g.key, g) for g in table.groups),
        fabrics={k: mark("fabric", k, f) for k, f in table.fabrics.items()},
    )


def efficiency_table(
    calibration: Calibration | None,
    engine: str,
    gpu: str | catalog.GPU,
    *,
    base: efficiency.Table | None = None,
) -> efficiency.Table:
    """The efficiency table for ``engine`` on ``gpu``: calibrated where the calibration has that scope.

    Parameters
    ----------
    calibration : Calibration or None
        None gives ``base``.
    engine : str
        Engine class (aliases accepted).
    gpu : str or GPU
        Catalogue id or record; only its GPU class matters.
    base : efficiency.Table, optional
        Table the calibrated constants replace entries of; default the bundled one.

    Returns
    -------
    efficiency.Table
        ``base`` with the scope's constants and bands (a band the scope has too few rows for keeps
        the base's); ``base`` itself outside the calibration's scopes.

    Examples
    --------
    >>> efficiency_table(None, "vllm", "h100") is efficiency.bundled()
    True
    """
    table = base if base is not None else efficiency.bundled()
    gpu_cls = efficiency.gpu_class(catalog.gpu(gpu).memory_type)
    scope = None if calibration is None else _scope(calibration, engine, gpu_cls)
    if scope is None or calibration is None:
        return table
    values: dict[tuple[str, str, str], float] = {(p.kind, p.entry, p.name): p.value for p in scope.parameters}
    source = f"user calibration of {calibration.created.isoformat()} ({len(scope.rows)} rows)"
    calibrated = _marked(efficiency.with_constants(table, values), scope, source)
    bands = {**table.bands, **{b.regime: efficiency.Band(b.regime, b.low, b.high, b.rows, "leave-one-out, "
                                                         "user calibration") for b in scope.bands}}
    provenance = {"calibration": source, "scope": scope.key, "rows": list(scope.rows), "base": calibration.base}
    return dataclasses.replace(calibrated, bands=bands, fit=provenance)


# --- errors ---------------------------------------------------------------------------------------


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


# --- files ----------------------------------------------------------------------------------------


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "inf" if value == float("inf") else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} to TOML")


def _is_tables(value: Any) -> bool:
    return isinstance(value, list | tuple) and bool(value) and all(isinstance(v, dict) for v in value)


def _toml_lines(data: dict[str, Any], prefix: str = "") -> list[str]:
    """Scalars first, then arrays of tables (``[[prefix.key]]``), recursively; ``None`` and ``()`` left out."""
    lines = [f"{k} = {_toml_value(v)}" for k, v in data.items() if v is not None and not _is_tables(v)
             and not (isinstance(v, list | tuple) and not v)]
    for key, value in data.items():
        if _is_tables(value):
            for item in value:
                lines += ["", f"[[{prefix}{key}]]", *_toml_lines(item, f"{prefix}{key}.")]
    return lines


def to_toml(calibration: Calibration) -> str:
    """The calibration as TOML text (``from_toml`` reads it back)."""
    header = [
        "# gpusizer calibration: efficiency constants fitted to your own measurements.",
        "# Written by gpusizer.calibration.save; use with estimate(calibration=...) or gpusizer fit --calibration.",
    ]
    return "\n".join([*header, *_toml_lines(calibration.model_dump())]) + "\n"


def from_toml(text: str) -> Calibration:
    """A calibration from ``to_toml`` text."""
    return Calibration.model_validate(tomllib.loads(text))


def to_json(calibration: Calibration) -> str:
    """The calibration as JSON text (``from_json`` reads it back)."""
    return calibration.model_dump_json(indent=2)


def from_json(text: str) -> Calibration:
    """A calibration from ``to_json`` text."""
    return Calibration.model_validate_json(text)


def save(calibration: Calibration, path: str | Path) -> Path:
    """Write the calibration as TOML (``.toml``) or JSON (any other suffix); returns the path."""
    target = Path(path)
    text = to_toml(calibration) if target.suffix.lower() == ".toml" else to_json(calibration)
    target.write_text(text, encoding="utf-8")
    return target


def load(path: str | Path) -> Calibration:
    """Read a calibration written by ``save`` (TOML or JSON, by suffix).

    Raises
    ------
    KeyError
        A model or GPU id no longer in the catalogue.
    pydantic.ValidationError
        A file that is not a calibration.
    """
    source = Path(path)
    text = source.read_text(encoding="utf-8")
    return from_toml(text) if source.suffix.lower() == ".toml" else from_json(text)
