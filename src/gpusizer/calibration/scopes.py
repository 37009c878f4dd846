"""``calibrate``: fit the efficiency constants of every scope (engine class x GPU class) in a user's
measurements, cross-validate them, and ``efficiency_table``: the table a calibration gives one engine
on one GPU.
"""

from __future__ import annotations

import datetime
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from gpusizer import catalog, checks, efficiency, performance
from gpusizer.calibration import fitting
from gpusizer.calibration.bands import regime_bands
from gpusizer.calibration.records import Calibration, Parameter, RegimeBand, RowError, Scope
from gpusizer.readers import Measurement, to_case

__all__ = ["LOSS", "MINIMUM_ROWS", "SIGMA", "calibrate", "efficiency_table"]

#: Rows a regime needs for a band of its own, and for its error statistics to count.
MINIMUM_ROWS = 3

SIGMA = 0.05
"""Scale of a row's log residual in the fit: a benchmark repeats to about 5 %. [-]"""
LOSS = "cauchy"
"""Robust loss: a row many ``SIGMA`` away from the others (another setup, a typo) loses its pull."""


def _scope_key(case: efficiency.Case) -> tuple[str, str]:
    engine, gpu_cls, _, _ = performance.keys(case)
    return engine, gpu_cls


def _base_value(base: efficiency.Table, kind: str, entry: str, name: str) -> float:
    """A constant of the base table; a group key it lacks reads the group that matches it."""
    if kind == "group":
        return float(getattr(efficiency.group(base, *entry.split("/")), name))
    return efficiency.constant(base, kind, entry, name)


def _parameters(fit: fitting.Fit, base: efficiency.Table) -> tuple[Parameter, ...]:
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
    full = fitting.fit(cases, base, performance.keys, performance.predict, sigma=sigma, loss=loss)
    loo = fitting.leave_one_out(cases, base, performance.keys, performance.predict, start=full.table,
                                sigma=sigma, loss=loss)
    engine, gpu_cls = _scope_key(cases[0])
    bands = regime_bands(cases, loo, minimum_rows=MINIMUM_ROWS)
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
    if isinstance(measurements, (str, bytes)) or not isinstance(measurements, Iterable):
        raise TypeError(f"measurements must be an iterable of Measurement (from gpusizer.readers), got "
                        f"{type(measurements).__name__} {measurements!r:.80}")
    rows = list(measurements)
    for row in rows:
        checks.instance(row, "measurements", Measurement)
    if base is not None:
        checks.instance(base, "base", efficiency.Table)
    checks.instance(loss, "loss", str)
    if isinstance(sigma, bool) or not isinstance(sigma, (int, float)):
        raise TypeError(f"sigma must be a positive number, got {type(sigma).__name__} {sigma!r:.80}")
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
    return efficiency.calibrated_table(table, calibration, engine, efficiency.gpu_class(catalog.gpu(gpu).memory_type))
