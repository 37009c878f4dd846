"""A user's calibration applied to an efficiency table: the constants it holds and how they replace the table's.

``gpusizer.calibration.calibrate`` fits these records; ``estimate(calibration=...)`` applies them with
``calibrated_table``. Both live here, in the efficiency layer, so that ``estimate`` reads a calibration
without importing the fitting (which imports the speed model, which ``estimate`` is built on).
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from gpusizer.efficiency.schema import Band, Table, engine_class
from gpusizer.efficiency.tables import with_constants


class _Record(BaseModel):
    # built on first use, as the catalogue's records: `estimate` without a calibration never validates one
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True, defer_build=True)


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


@runtime_checkable
class Calibrated(Protocol):
    """What ``calibrated_table`` reads of a calibration (``gpusizer.calibration.Calibration`` has it)."""

    @property
    def scopes(self) -> tuple[Scope, ...]: ...

    @property
    def created(self) -> datetime.datetime: ...

    @property
    def base(self) -> str: ...


def check_calibration(value: Any, name: str = "calibration") -> Calibrated | None:
    """``value`` unchanged if it is None or a calibration (``Calibrated``), else ``TypeError`` naming ``name``."""
    if value is not None and not isinstance(value, Calibrated):
        raise TypeError(f"{name} must be a Calibration (gpusizer.calibrate, or gpusizer.calibration.load of a "
                        f"calibration file) or None, got {type(value).__name__} {value!r:.80}")
    return value


def _scope(calibration: Calibrated, engine: str, gpu_class: str) -> Scope | None:
    """The calibration's scope for ``engine`` (aliases accepted) on ``gpu_class``, None if it has none."""
    name = engine_class(engine)
    return next((s for s in calibration.scopes if s.engine == name and s.gpu_class == gpu_class), None)


def _mark(entry: Any, parameters: list[Parameter], source: str) -> Any:
    fitted = tuple(p.name for p in parameters if p.informed)
    rows = tuple(dict.fromkeys(r for p in parameters for r in p.rows))
    prior = {p.name: p.prior for p in parameters}
    return dataclasses.replace(entry, fitted=fitted, rows=rows, prior=prior, source=source)


def _marked(table: Table, found: Scope, source: str) -> Table:
    """Record, on the entries the scope changed, which fields the user's rows informed."""
    by_entry: dict[tuple[str, str], list[Parameter]] = {}
    for p in found.parameters:
        by_entry.setdefault((p.kind, p.entry), []).append(p)

    def mark(kind: str, name: str, entry: Any) -> Any:
        parameters = by_entry.get((kind, name))
        return entry if parameters is None else _mark(entry, parameters, source)

    return dataclasses.replace(
        table,
        engines={k: mark("engine", k, e) for k, e in table.engines.items()},
        groups=tuple(mark("group", g.key, g) for g in table.groups),
        fabrics={k: mark("fabric", k, f) for k, f in table.fabrics.items()},
    )


def calibrated_table(table: Table, calibration: Calibrated | None, engine: str, gpu_class: str) -> Table:
    """``table`` with a calibration's constants and bands for ``engine`` on ``gpu_class``.

    Parameters
    ----------
    table : Table
        The table the calibrated constants replace entries of (the bundled one in ``estimate``).
    calibration : Calibration or None
        None gives ``table``.
    engine : str
        Engine class (aliases accepted).
    gpu_class : str
        ``hbm``, ``gddr`` or ``unified`` (``gpu_class(gpu.memory_type)``).

    Returns
    -------
    Table
        ``table`` with the scope's constants (``with_constants``) and bands (a band the scope has too
        few rows for keeps the table's), its entries marked with the rows that informed them, and
        the calibration's provenance as ``fit``; ``table`` itself outside the calibration's scopes.

    Examples
    --------
    >>> from gpusizer.efficiency import bundled
    >>> calibrated_table(bundled(), None, "vllm", "hbm") is bundled()
    True
    """
    found = None if calibration is None else _scope(calibration, engine, gpu_class)
    if found is None or calibration is None:
        return table
    values: dict[tuple[str, str, str], float] = {(p.kind, p.entry, p.name): p.value for p in found.parameters}
    source = f"user calibration of {calibration.created.isoformat()} ({len(found.rows)} rows)"
    calibrated = _marked(with_constants(table, values), found, source)
    bands = {**table.bands, **{b.regime: Band(b.regime, b.low, b.high, b.rows, "leave-one-out, user calibration")
                               for b in found.bands}}
    provenance = {"calibration": source, "scope": found.key, "rows": list(found.rows), "base": calibration.base}
    return dataclasses.replace(calibrated, bands=bands, fit=provenance)
