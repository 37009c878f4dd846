"""The catalogue: loading the bundled records and looking them up by name.

The bundled files ``data/gpus.toml`` and ``data/models.toml`` are read lazily (``importlib.resources``
+ ``tomllib`` behind ``functools.cache``), never at import, and every record of a file is validated
when the file is first read. The record classes live in ``gpusizer.records`` and are re-exported
here (``gpusizer.catalog.GPU`` is ``gpusizer.records.GPU``).

>>> gpu("H200").id
'h200-sxm'
"""

from __future__ import annotations

import contextlib
import contextvars
import difflib
import tomllib
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path
from typing import Any, cast

from gpusizer import datafiles, hardware
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
    SparseAttention,
    StoredWeights,
    System,
    Vision,
)

__all__ = [
    "AMBIGUOUS",
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
    "SparseAttention",
    "StoredWeights",
    "System",
    "Vision",
    "closest",
    "find_system",
    "gpu",
    "gpu_with",
    "gpus",
    "load_gpus",
    "load_models",
    "model",
    "models",
    "normalise",
    "system",
    "systems",
    "using_gpus",
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
    """The lookup key of ``name``: lower case, with spaces, ``_`` and ``-`` all read as one ``-``.

    >>> normalise("H100_SXM"), normalise("RTX PRO 6000"), normalise("rtx-pro-6000")
    ('h100-sxm', 'rtx-pro-6000', 'rtx-pro-6000')
    """
    return "-".join(name.lower().replace("_", " ").replace("-", " ").split())


#: Names that the catalogue holds in several variants with different memory: a lookup refuses them and
#: lists the variants (``gpu("a100")`` asks 40 GB or 80 GB instead of guessing). Name -> variant ids.
AMBIGUOUS: dict[str, tuple[str, ...]] = {
    "a100": ("a100-40gb-sxm", "a100-80gb-sxm", "a100-80gb-pcie"),
}

#: Names users type for a record whose catalogue id spells it otherwise: name -> id. ``mi300``: the one
#: MI300 GPU of the catalogue (MI300A, the APU, is not in it); the HGX/DGX H100 system under either name.
_EXTRA_ALIASES = {
    "mi300": "mi300x",
    "hgx-h100-8x": "dgx-hgx-h100-8x",
    "dgx-h100-8x": "dgx-hgx-h100-8x",
    "dgx-h200-8x": "hgx-h200-8x",
    "dgx-b200-8x": "hgx-b200-8x",
    "dgx-b300-8x": "hgx-b300-8x",
    "mi300x-8x": "amd-mi300x-platform-8x",
}


@cache
def _gpu_aliases() -> dict[str, str]:
    table: dict[str, str] = {}
    gpus_, systems_ = _bundled_gpus()
    for record in gpus_.values():
        for name in (record.id, record.name, *record.aliases):
            table.setdefault(normalise(name), record.id)
    for sys_record in systems_.values():
        table.setdefault(normalise(sys_record.id), sys_record.id)
    for name, target in _EXTRA_ALIASES.items():
        table.setdefault(normalise(name), target)
    for name in AMBIGUOUS:
        table.pop(normalise(name), None)
    return table


def closest(name: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """Return up to ``n`` entries of ``choices`` that look most like ``name``.

    Entries that hold every ``-``-separated word of ``name`` come first (``llama-70b`` finds
    ``llama-3.1-70b``), then ``difflib``'s closest spellings.

    >>> closest("llama-70b", ["llama-3.1-8b", "llama-3.1-70b", "llama-3.3-70b"])
    ['llama-3.3-70b', 'llama-3.1-70b', 'llama-3.1-8b']
    """
    choices = list(choices)
    words = [w for w in normalise(name).split("-") if w]
    holding = [c for c in choices if words and all(w in normalise(c).split("-") for w in words)]
    near = difflib.get_close_matches(name, choices, n=len(choices), cutoff=0.4)
    ordered = sorted(holding, key=lambda c: near.index(c) if c in near else len(near))
    return list(dict.fromkeys([*ordered, *near]))[:n]


def _unknown(kind: str, name: str, choices: Iterable[str], listing: str) -> KeyError:
    choices = list(choices)
    near = closest(normalise(name), choices)
    hint = f"; did you mean {', '.join(near)}?" if near else f"; known: {', '.join(sorted(choices))}"
    return KeyError(f"unknown {kind} {name!r}{hint} ({listing} lists them all)")


def _ambiguous(name: str) -> KeyError | None:
    """The error of a name that ``AMBIGUOUS`` lists, naming its variants; None for any other name."""
    variants = AMBIGUOUS.get(normalise(name))
    if variants is None:
        return None
    gpus_, _ = _bundled_gpus()
    listed = ", ".join(f"{v} ({gpus_[v].memory / 1e9:.0f} GB)" for v in variants)
    return KeyError(f"gpu {name!r} is ambiguous: the catalogue has {listed}; name one of them")


def gpus() -> tuple[GPU, ...]:
    """Every accelerator of the bundled catalogue, in file order, then those of ``using_gpus``."""
    return (*_bundled_gpus()[0].values(), *_USER_GPUS.get().values())


def systems() -> tuple[System, ...]:
    """Every multi-GPU system of the bundled catalogue, in file order."""
    return tuple(_bundled_gpus()[1].values())


def models() -> tuple[Model, ...]:
    """Every model of the bundled catalogue, in file order."""
    return tuple(_bundled_models().values())


def gpu(name: str | GPU) -> GPU:
    """Look up an accelerator by id or alias, case-insensitively (``"h200"`` -> ``h200-sxm``).

    Spaces, ``_`` and ``-`` are alike (``"rtx-pro-6000"`` is ``"RTX PRO 6000"``). A name of several
    variants with different memory (``AMBIGUOUS``: ``"a100"``) is refused with the variants.

    Raises
    ------
    KeyError
        Naming the variants of an ambiguous name, or the closest GPU and system ids of an unknown one.
    """
    if isinstance(name, GPU):
        return name
    instance(name, "name", (str, GPU))
    base, colon, spec = name.partition(":")
    if colon:
        return hardware.modified(gpu(base), spec)
    user = _USER_GPUS.get().get(normalise(name))
    if user is not None:
        return user
    gpus_, systems_ = _bundled_gpus()
    key = _gpu_aliases().get(normalise(name))
    if key in gpus_:
        return gpus_[key]
    ambiguous = _ambiguous(name)
    if ambiguous is not None:
        raise ambiguous
    if key in systems_:
        raise KeyError(f"{name!r} is a system of {systems_[key].gpu_count} x {systems_[key].gpu}, not one GPU; "
                       "commands that take a GPU take a system id too (gpusizer systems)")
    raise _unknown("gpu or system", name, [*gpus_, *systems_], "gpusizer gpus")


#: GPUs of the ``using_gpus`` block in force: normalised id -> record.
_USER_GPUS: contextvars.ContextVar[dict[str, GPU]] = contextvars.ContextVar("user_gpus", default={})  # noqa: B039


def gpu_with(base: str | GPU, /, **fields: Any) -> GPU:
    """A GPU of your own: ``base`` with ``fields`` replaced (``hardware.OVERRIDABLE``), its ``id`` the spec.

    Values are text with units or numbers in base units (``memory="48GB"``, ``memory_bandwidth=1.1e12``);
    ``mig="3g.40gb"`` takes a MIG slice first (``hardware.mig_slice``). The same as ``gpu("rtx-4090:memory=48GB")``.

    >>> gpu_with("rtx-4090", memory="48GB").id
    'rtx-4090:memory=48GB'
    >>> gpu_with("h100-sxm", mig="3g.40gb").memory
    40000000000.0
    """
    spec = ",".join(f"{key}={value}" for key, value in fields.items())
    if not spec:
        raise ValueError("gpu_with: give at least one field to change (e.g. memory='48GB')")
    return hardware.modified(gpu(base), spec)


def _file_gpus(path: str | Path) -> tuple[GPU, ...]:
    """The ``[[gpu]]`` tables of ``path`` (the schema of ``data/gpus.toml``), each validated."""
    data = tomllib.loads(datafiles.read_text(Path(path), what="gpu file"))
    unknown = sorted(set(data) - {"gpu"})
    if unknown:
        raise ValueError(f"gpu file {str(path)!r}: unknown table {unknown[0]!r}; a gpu file holds [[gpu]] tables")
    out: dict[str, GPU] = {}
    for index, entry in enumerate(data.get("gpu", [])):
        where = f"gpu file {str(path)!r}, gpu {index + 1} ({entry.get('id', 'no id')!r})"
        record = hardware.validated(entry, where)
        if normalise(record.id) in out or ":" in record.id:
            raise ValueError(f"{where}: the id is given twice or holds ':'")
        out[normalise(record.id)] = record
    if not out:
        raise ValueError(f"gpu file {str(path)!r} holds no [[gpu]] table")
    return tuple(out.values())


@contextlib.contextmanager
def using_gpus(path: str | Path | None) -> Iterator[tuple[GPU, ...]]:
    """Within the block, ``gpu(id)`` and ``gpus()`` also know the GPUs of the TOML file ``path`` (``None``: none).

    The file has the schema of the bundled ``data/gpus.toml`` (``[[gpu]]`` tables, validated as ``GPU``); it
    is read as text with a size limit (``datafiles.read_text``) and parsed by ``tomllib``: nothing in it runs.
    Its ids come before the catalogue's: a file may redefine ``rtx-4090``. Yields the file's records.
    """
    records = () if path is None else _file_gpus(path)
    token = _USER_GPUS.set({**_USER_GPUS.get(), **{normalise(r.id): r for r in records}})
    try:
        yield records
    finally:
        _USER_GPUS.reset(token)


def find_system(name: str | GPU | System) -> System | None:
    """The system ``name`` names (its id or an alias such as ``hgx-h100-8x``), None when it names none."""
    if isinstance(name, System):
        return name
    if not isinstance(name, str):
        return None
    _, systems_ = _bundled_gpus()
    return systems_.get(_gpu_aliases().get(normalise(name), ""))


def system(name: str | System) -> System:
    """Look up a multi-GPU system by id or alias (``"hgx-h200-8x"``, ``"hgx-h100-8x"``)."""
    instance(name, "name", (str, System))
    found = find_system(name)
    if found is not None:
        return found
    raise _unknown("system", cast(str, name), _bundled_gpus()[1], "gpusizer systems")


def model(name: str | Model) -> Model:
    """Look up a model by id, case-insensitively (spaces, ``_`` and ``-`` alike).

    Raises
    ------
    KeyError
        Naming the closest ids when ``name`` is unknown (``llama-70b``: ``llama-3.1-70b`` first).
    """
    if isinstance(name, Model):
        return name
    instance(name, "model", (str, Model))
    models_ = _bundled_models()
    key = normalise(name)
    if key in models_:
        return models_[key]
    raise _unknown("model", name, models_, "gpusizer models")
