r"""Fit the efficiency constants to measurements: robust least squares on log ratios, with priors and bounds.

``fit`` is the machinery of both the shipped table (``tools/fit_efficiency.py``) and a user's
calibration (``calibrate``); ``leave_one_out`` refits without each case in turn, ``leave_group_out``
without every case of one group (one source) in turn. The speed model
enters only as the two callables ``keys`` and ``predict`` (``performance.keys``,
``performance.predict``), so this module depends on the efficiency tables alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpusizer.efficiency import BOUNDS, FIELDS, Case, Keys, Table, constant, with_constants, with_groups

__all__ = ["Fit", "fit", "leave_group_out", "leave_one_out", "sensitivity"]


@dataclass(frozen=True)
class Fit:
    """Result of ``fit``: the fitted table and what it is based on."""

    table: Table
    predictions: dict[str, float]
    """In-sample prediction of every fitted case. [tok/s or s]"""
    informed: tuple[str, ...]
    """Parameters (``kind:key:field``) the data informed."""
    cost: float
    success: bool
    parameters: tuple[tuple[str, str, str], ...] = ()
    """Every constant the fit varied, as ``(kind, name, field)``; the others are the priors'."""


def _parameters(table: Table, keys: dict[str, Keys]) -> tuple[Table, list[tuple[str, str, str]]]:
    """Add a specific group per (engine, GPU class, family) used by the cases; list the parameters."""
    table = with_groups(table, [f"{engine}/{gpu_cls}/{family}" for engine, gpu_cls, family, _ in keys.values()])
    used: list[tuple[str, str, str]] = []
    for engine, gpu_cls, family, fabric in sorted(set(keys.values())):
        for kind, name in (("engine", engine), ("group", f"{engine}/{gpu_cls}/{family}"), ("fabric", fabric)):
            for name_field in FIELDS[kind]:
                if (kind, name, name_field) not in used:
                    used.append((kind, name, name_field))
    return table, used



def fit(
    cases: Sequence[Case],
    priors: Table,
    keys: Callable[[Case], Keys],
    predict: Callable[[Case, Table], float],
    *,
    sigma: float = 0.1,
    loss: str = "soft_l1",
    start: Table | None = None,
) -> Fit:
    r"""Fit the efficiency constants to measurements, with priors and physical bounds.

    Parameters
    ----------
    cases : sequence of Case
        The measurements to fit (``use == "fit"``).
    priors : Table
        Prior values of every constant (``data/calibration/priors.toml``).
    keys : callable
        ``keys(case) -> (engine, gpu_class, family, fabric)``: which constants a case uses.
    predict : callable
        ``predict(case, table) -> value``, in the units of ``case.value``.
    sigma : float, optional
        Scale of a measurement's log residual (model and measurement noise together). [-]
    loss : str, optional
        Robust loss of ``scipy.optimize.least_squares``.
    start : Table, optional
        Starting point (a previous fit) instead of the priors.

    Returns
    -------
    Fit
        The table with a specific group per (engine, GPU class, format family) met in ``cases``,
        fitted values, and which parameters the data informed.

    Notes
    -----
    Minimises, over the logs :math:`\theta` of the constants within their ``BOUNDS``,

    .. math:: \sum_i \rho\left(\left[\frac{\ln(\hat y_i / y_i)}{\sigma}\right]^2\right)
              + \sum_j \rho\left(\left[\frac{\theta_j - \theta_j^{0}}{s_j}\right]^2\right)

    with :math:`\rho` the soft-L1 loss, :math:`\theta^0` the priors and :math:`s_j` their widths.
    Few constants, each grouped by the physics it describes, bounded to physical values: fit
    physics, not rows.

    References
    ----------
    .. [1] SciPy, ``scipy.optimize.least_squares`` (trust-region reflective, robust losses).
    """
    from scipy.optimize import least_squares

    case_keys = {c.id: keys(c) for c in cases}
    table, params = _parameters(priors, case_keys)
    prior = np.log([constant(table, *p) for p in params])
    first = start if start is not None else table
    x0 = np.log([constant(first, *p) if _has(first, p) else constant(table, *p) for p in params])
    low = np.log([BOUNDS[p[2]][0] for p in params])
    high = np.log([BOUNDS[p[2]][1] for p in params])
    width = np.array([BOUNDS[p[2]][2] for p in params])
    x0 = np.clip(x0, low + 1e-9, high - 1e-9)
    measured = np.log([c.value for c in cases])

    def trial(x: np.ndarray) -> Table:
        return with_constants(table, {p: float(np.exp(v)) for p, v in zip(params, x, strict=True)})

    def data_residuals(x: np.ndarray) -> np.ndarray:
        t = trial(x)
        predicted = np.log([predict(c, t) for c in cases])
        return (predicted - measured) / sigma

    def residuals(x: np.ndarray) -> np.ndarray:
        return np.concatenate([data_residuals(x), (x - prior) / width])

    result = least_squares(residuals, x0, bounds=(low, high), loss=loss, f_scale=1.0, x_scale=1.0)
    sensitive = sensitivity(data_residuals, result.x, high) > 1e-3  # row i informs parameter j
    informed = [p for p, column in zip(params, sensitive.T, strict=True) if column.any()]
    rows = {p: tuple(c.id for c, hit in zip(cases, column, strict=True) if hit)
            for p, column in zip(params, sensitive.T, strict=True)}
    fitted = _record(trial(result.x), params, prior, informed, rows)
    predictions = {c.id: float(predict(c, fitted)) for c in cases}
    return Fit(fitted, predictions, tuple(":".join(p) for p in informed), float(result.cost), bool(result.success),
               tuple(params))


def sensitivity(residuals: Callable[[np.ndarray], np.ndarray], x: np.ndarray, high: np.ndarray,
                step: float = 1e-4) -> np.ndarray:
    r"""How much each residual moves with each parameter: the loss-free Jacobian, by forward differences.

    Parameters
    ----------
    residuals : callable
        ``residuals(x)``, one value per measurement. [-]
    x : ndarray
        Where to differentiate (the logs of the constants). [-]
    high : ndarray
        Upper bounds of ``x``: a parameter closer to its bound than ``step`` is stepped downwards. [-]
    step : float, optional
        Step in log space. [-]

    Returns
    -------
    ndarray
        :math:`|\partial r_i / \partial x_j|`, one row per residual and one column per parameter. [-]

    Notes
    -----
    ``scipy.optimize.least_squares`` returns the Jacobian scaled by the robust loss,
    :math:`J_{ij}\sqrt{\rho'(z_i) + 2\rho''(z_i) z_i}` [1]_ (for soft-L1, :math:`(1 + z_i)^{-3/4}`), so a row far
    from the fit (large :math:`z_i`) would look as if it informed nothing; this unscaled Jacobian tells which
    rows inform which constants whatever their residual.

    References
    ----------
    .. [1] SciPy, ``scipy.optimize.least_squares``: "jac: modified Jacobian matrix at the solution, in the
       sense that J^T J is a Gauss-Newton approximation of the Hessian of the cost function"
       (scipy/optimize/_lsq/common.py, ``scale_for_robust_loss_function``).

    Examples
    --------
    >>> sensitivity(lambda x: np.array([2 * x[0], 0 * x[1]]), np.zeros(2), np.ones(2)).round(6)
    array([[2., 0.],
           [0., 0.]])
    """
    base = residuals(x)
    columns = []
    for j in range(len(x)):
        h = step if x[j] + step <= high[j] else -step
        shifted = x.copy()
        shifted[j] += h
        columns.append((residuals(shifted) - base) / h)
    return np.abs(np.stack(columns, axis=1)) if columns else np.zeros((len(base), 0))


def _has(table: Table, param: tuple[str, str, str]) -> bool:
    kind, name, _ = param
    if kind == "group":
        return any(g.key == name for g in table.groups)
    return name in (table.engines if kind == "engine" else table.fabrics)


def _record(
    table: Table,
    params: list[tuple[str, str, str]],
    prior: np.ndarray,
    informed: list[tuple[str, str, str]],
    rows: dict[tuple[str, str, str], tuple[str, ...]],
) -> Table:
    """Write priors, the fields the data informed and the rows that informed them into the table."""
    priors: dict[tuple[str, str], dict[str, float]] = {}
    fitted: dict[tuple[str, str], list[str]] = {}
    informing: dict[tuple[str, str], list[str]] = {}
    for p, value in zip(params, prior, strict=True):
        priors.setdefault(p[:2], {})[p[2]] = float(np.exp(value))
        if p in informed:
            fitted.setdefault(p[:2], []).append(p[2])
            found = informing.setdefault(p[:2], [])
            found += [r for r in rows[p] if r not in found]

    def update(entry: Any, kind: str, name: str) -> Any:
        if (kind, name) not in priors:
            return entry
        return dataclasses.replace(
            entry,
            prior=priors[(kind, name)],
            fitted=tuple(fitted.get((kind, name), [])),
            rows=tuple(informing.get((kind, name), [])),
        )

    return dataclasses.replace(
        table,
        engines={k: update(e, "engine", k) for k, e in table.engines.items()},
        groups=tuple(update(g, "group", g.key) for g in table.groups),
        fabrics={k: update(f, "fabric", k) for k, f in table.fabrics.items()},
    )


def leave_one_out(
    cases: Sequence[Case],
    priors: Table,
    keys: Callable[[Case], Keys],
    predict: Callable[[Case, Table], float],
    *,
    start: Table | None = None,
    **options: Any,
) -> dict[str, float]:
    """Prediction of every case by a fit that did not see it, in the units of ``case.value``.

    Each fit starts from ``start`` (typically the fit on every case, which makes the refits short);
    ``options`` go to ``fit``. A case with no other case to learn from is predicted by ``priors``.
    """
    out = {}
    for case in cases:
        rest = [c for c in cases if c.id != case.id]
        table = fit(rest, priors, keys, predict, start=start, **options).table if rest else priors
        out[case.id] = float(predict(case, table))
    return out


def leave_group_out(
    cases: Sequence[Case],
    priors: Table,
    keys: Callable[[Case], Keys],
    predict: Callable[[Case, Table], float],
    group: Callable[[Case], str],
    *,
    start: Table | None = None,
    **options: Any,
) -> dict[str, float]:
    """Prediction of every case by a fit that saw no case of its group, in the units of ``case.value``.

    ``group(case)`` names the group (``lambda c: c.source``: leave-one-source-out, the honest error of
    a new source whose conditions the fit has never met). One fit per group, started from ``start``;
    ``options`` go to ``fit``. A group with no other case to learn from is predicted by ``priors``.
    """
    out = {}
    for name in dict.fromkeys(group(c) for c in cases):
        rest = [c for c in cases if group(c) != name]
        table = fit(rest, priors, keys, predict, start=start, **options).table if rest else priors
        out.update({c.id: float(predict(c, table)) for c in cases if group(c) == name})
    return out
