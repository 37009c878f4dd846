r"""Calibrate gpusizer on your own measurements, so later estimates for your engine and hardware follow them.

The workflow: pre-filter candidates with the analytical model, benchmark two or three of them, feed
the numbers back (``readers`` reads the schema and common tool outputs), then trust the calibrated
model for the rest.

``calibrate(measurements)`` fits the efficiency constants that the measurements inform, separately
for every **scope** (engine class x GPU class) present in the data: the engine's per-layer, per-step,
per-request and per-MoE-layer fixed costs, the weight-streaming and GEMM efficiencies of every
format family met, and the all-reduce latency of every fabric met. The fit is
``fit``: ``scipy.optimize.least_squares`` on log ratios with a robust (Cauchy) loss,
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

The package: ``scopes`` (``calibrate``, ``efficiency_table``), ``fitting`` (``fit``,
``leave_one_out``, ``leave_group_out``: the machinery of the shipped ``data/efficiency.toml`` too),
``bands`` (p10-p90 per regime), ``errors`` (error tables), ``records`` and ``files`` (save and load),
and ``toml``, the one TOML writer (``table_to_toml`` for an efficiency table). The constants a
calibration holds, and the function that applies them to a table, are the efficiency layer's
(``gpusizer.efficiency.calibrated``), so ``estimate`` applies a calibration without importing this package.
"""

from __future__ import annotations

from gpusizer.calibration.bands import log_rate_ratio, quantile_band, regime_bands
from gpusizer.calibration.errors import RegimeErrors, error_table, errors_by_regime
from gpusizer.calibration.files import from_json, from_toml, load, save, to_json, to_toml
from gpusizer.calibration.fitting import Fit, fit, leave_group_out, leave_one_out
from gpusizer.calibration.records import Calibration, Parameter, RegimeBand, RowError, Scope
from gpusizer.calibration.scopes import LOSS, MINIMUM_ROWS, SIGMA, calibrate, efficiency_table
from gpusizer.calibration.toml import dumps, table_to_toml
from gpusizer.efficiency import Case, calibrated_table, constant, load_cases, with_constants

__all__ = [
    "LOSS",
    "MINIMUM_ROWS",
    "SIGMA",
    "Calibration",
    "Case",
    "Fit",
    "Parameter",
    "RegimeBand",
    "RegimeErrors",
    "RowError",
    "Scope",
    "calibrate",
    "calibrated_table",
    "constant",
    "dumps",
    "efficiency_table",
    "error_table",
    "errors_by_regime",
    "fit",
    "from_json",
    "from_toml",
    "leave_group_out",
    "leave_one_out",
    "load",
    "load_cases",
    "log_rate_ratio",
    "quantile_band",
    "regime_bands",
    "save",
    "table_to_toml",
    "to_json",
    "to_toml",
    "with_constants",
]
