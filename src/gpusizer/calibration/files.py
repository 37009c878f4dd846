"""Save and read a calibration, as TOML (``.toml``) or JSON (any other suffix)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from gpusizer import datafiles
from gpusizer.calibration.records import Calibration
from gpusizer.calibration.toml import dumps

__all__ = ["from_json", "from_toml", "load", "save", "to_json", "to_toml"]

HEADER = """gpusizer calibration: efficiency constants fitted to your own measurements.
Written by gpusizer.calibration.save; use with estimate(calibration=...) or gpusizer fit --calibration."""


def to_toml(calibration: Calibration) -> str:
    """The calibration as TOML text (``from_toml`` reads it back), every float to its last digit."""
    return dumps(calibration.model_dump(), HEADER)


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
    text = datafiles.read_text(source, what="path")
    return from_toml(text) if source.suffix.lower() == ".toml" else from_json(text)
