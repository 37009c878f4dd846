"""The records of a calibration: the whole ``Calibration`` with its provenance, and one row's errors.

The constants a calibration holds (``Scope``, ``Parameter``, ``RegimeBand``) are records of the
efficiency layer, ``gpusizer.efficiency.calibrated``, which ``estimate`` applies; they are re-exported
here for users.
"""

from __future__ import annotations

import datetime

from pydantic import BaseModel, ConfigDict

from gpusizer.efficiency import Parameter, RegimeBand, Scope
from gpusizer.readers import Measurement

__all__ = ["Calibration", "Parameter", "RegimeBand", "RowError", "Scope"]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


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
