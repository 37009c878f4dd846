"""The catalogue: loading the bundled records and looking them up by name.

The bundled files ``data/gpus.toml`` and ``data/models.toml`` are read lazily (``importlib.resources``
+ ``tomllib`` behind ``functools.cache``), never at import, and every record of a file is validated
when the file is first read. The record classes live in ``gpusizer.records`` and are re-exported
here (``gpusizer.catalog.GPU`` is ``gpusizer.records.GPU``).

>>> gpu("H200").id
'h200-sxm'
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from gpusizer import datafiles
from gpusizer.checks import instance
from gpusizer.records import (
    GPU,
    MLA,
    RATE_PRECISIONS,
    DenseRates,
    FfnKind,
    Interconnect,
    LayerKind,
    LinearAttention,
    Mamba,
    Model,
    MoE,
    Published,
    Record,
    System,
    Vision,
)

__all__ = [
    "GPU",
    "MLA",
    "RATE_PRECISIONS",
    "DenseRates",
    "FfnKind",
    "Interconnect",
    "LayerKind",
    "LinearAttention",
    "Mamba",
    "MoE",
    "Model",
    "Published",
    "Record",
    "System",
    "Vision",
    "closest",
    "gpu",
    "gpus",
    "load_gpus",
    "load_models",
    "model",
    "models",
    "normalise",
    "system",
    "systems",
]

def _read(path: Path | None, name: str) -> dict[str, Any]:
    source = datafiles.bundled(name) if path is None else Path(path)
    return tomllib.loads(datafiles.read_text(source, what="catalogue"))


def _unique(records: Iterable[GPU | System | Model], kind: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for record in records:
        if record.id in out:
            raise ValueError(f"duplicate {kind} id {record.id!r}")
        out[record.id] = record
    return out


def load_gpus(path: str | Path | None = None) -> tuple[dict[str, GPU], dict[str, System]]:
    """Read and validate a GPU catalogue (the bundled one when ``path`` is None)."""
    data = _read(Path(path) if path else None, "gpus.toml")
    gpus_ = _unique((GPU.model_validate(e) for e in data.get("gpu", [])), "gpu")
    systems_ = _unique((System.model_validate(e) for e in data.get("system", [])), "system")
    for record in systems_.values():
        if record.gpu not in gpus_:
            raise ValueError(f"system {record.id!r} names unknown gpu {record.gpu!r}")
    return gpus_, systems_


def load_models(path: str | Path | None = None) -> dict[str, Model]:
    """Read and validate a model catalogue (the bundled one when ``path`` is None)."""
    data = _read(Path(path) if path else None, "models.toml")
    return _unique((Model.model_validate(e) for e in data.get("model", [])), "model")


@cache
def _bundled_gpus() -> tuple[dict[str, GPU], dict[str, System]]:
    return load_gpus()


@cache
def _bundled_models() -> dict[str, Model]:
    return load_models()


def normalise(name: str) -> str:
    """The lookup key of ``name``: lower case, ``_`` as ``-``, runs of spaces as one.

    >>> normalise("H100_SXM")
    'h100-sxm'
    """
    return " ".join(name.lower().replace("_", "-").split())


@cache
def _gpu_aliases() -> dict[str, str]:
    table: dict[str, str] = {}
    gpus_, systems_ = _bundled_gpus()
    for record in gpus_.values():
        for name in (record.id, record.name, *record.aliases):
            table.setdefault(normalise(name), record.id)
    for sys_record in systems_.values():
        table.setdefault(normalise(sys_record.id), sys_record.id)
    return table


def closest(name: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """Return up to ``n`` entries of ``choices`` that look most like ``name``."""
    return difflib.get_close_matches(name, list(choices), n=n, cutoff=0.4)


def _unknown(kind: str, name: str, choices: Iterable[str]) -> KeyError:
    choices = list(choices)
    near = closest(normalise(name), choices)
    hint = f"; did you mean {', '.join(near)}?" if near else f"; known: {', '.join(sorted(choices))}"
    return KeyError(f"unknown {kind} {name!r}{hint}")


def gpus() -> tuple[GPU, ...]:
    """Every accelerator of the bundled catalogue, in file order."""
    return tuple(_bundled_gpus()[0].values())


def systems() -> tuple[System, ...]:
    """Every multi-GPU system of the bundled catalogue, in file order."""
    return tuple(_bundled_gpus()[1].values())


def models() -> tuple[Model, ...]:
    """Every model of the bundled catalogue, in file order."""
    return tuple(_bundled_models().values())


def gpu(name: str | GPU) -> GPU:
    """Look up an accelerator by id or alias, case-insensitively (``"h200"`` -> ``h200-sxm``).

    Raises
    ------
    KeyError
        Naming the closest ids when ``name`` is unknown.
    """
    if isinstance(name, GPU):
        return name
    instance(name, "name", (str, GPU))
    gpus_, _ = _bundled_gpus()
    key = _gpu_aliases().get(normalise(name))
    if key in gpus_:
        return gpus_[key]
    raise _unknown("gpu", name, gpus_)


def system(name: str | System) -> System:
    """Look up a multi-GPU system by id (``"hgx-h200-8x"``)."""
    if isinstance(name, System):
        return name
    instance(name, "name", (str, System))
    _, systems_ = _bundled_gpus()
    key = normalise(name)
    if key in systems_:
        return systems_[key]
    raise _unknown("system", name, systems_)


def model(name: str | Model) -> Model:
    """Look up a model by id, case-insensitively.

    Raises
    ------
    KeyError
        Naming the closest ids when ``name`` is unknown.
    """
    if isinstance(name, Model):
        return name
    instance(name, "model", (str, Model))
    models_ = _bundled_models()
    key = normalise(name)
    if key in models_:
        return models_[key]
    raise _unknown("model", name, models_)
