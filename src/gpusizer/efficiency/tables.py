"""Read an efficiency table, and look its constants up: the group that applies, the constants of one
configuration, the band of one regime, and a table with some constants replaced.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Iterable
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from gpusizer import datafiles
from gpusizer.efficiency.schema import (
    ANY,
    Band,
    Constants,
    EngineEntry,
    FabricEntry,
    GroupEntry,
    Table,
    engine_class,
    engine_family,
)


def _entry(kind: type, data: dict[str, Any]) -> Any:
    names = {f.name for f in dataclasses.fields(kind)}
    unknown = set(data) - names
    if unknown:
        raise ValueError(f"unknown efficiency keys {sorted(unknown)} in {kind.__name__}")
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
    return kind(**values)

def load(path: str | Path | None = None) -> Table:
    """Read an efficiency table (``data/efficiency.toml`` when ``path`` is None, or a priors file).

    Raises
    ------
    ValueError
        On unknown keys or missing engines.
    """
    source = datafiles.bundled("efficiency.toml") if path is None else Path(path)
    data = tomllib.loads(datafiles.read_text(source, what="path"))
    engines = {e["name"]: _entry(EngineEntry, e) for e in data.get("engine", [])}
    groups = tuple(_entry(GroupEntry, g) for g in data.get("group", []))
    fabrics = {f["name"]: _entry(FabricEntry, f) for f in data.get("fabric", [])}
    bands = {b["regime"]: _entry(Band, b) for b in data.get("band", [])}
    return Table(engines, groups, fabrics, bands, dict(data.get("fit", {})))

@cache
def bundled() -> Table:
    """The bundled, fitted table (read and validated once per process)."""
    return load()

def group(table: Table, engine: str, gpu_class: str, family: str) -> GroupEntry:
    """The most specific group entry matching ``engine``, ``gpu_class`` and ``family``: the engine class's own
    entries first, then its engine's (``engine_family``: a build era ``llama.cpp@2024`` falls back to ``llama.cpp``),
    then ``*``; within each, a named GPU class before ``*``, then a named format family before ``*``."""
    engines = {engine: 2, engine_family(engine): 1, ANY: 0}
    matches = [
        g
        for g in table.groups
        if g.engine in engines and g.gpu_class in (gpu_class, ANY) and g.format in (family, ANY)
    ]
    if not matches:
        raise ValueError(f"no efficiency group matches {engine}/{gpu_class}/{family}; add a '*' default")
    return max(matches, key=lambda g: (engines[g.engine], g.gpu_class != ANY, g.format != ANY))


def resolve(table: Table, engine: str, gpu_class: str, family: str, fabric: str) -> Constants:
    """The constants for one configuration.

    Raises
    ------
    ValueError
        Naming the known engines (or fabrics) when ``engine`` (or ``fabric``) is unknown.

    Examples
    --------
    >>> c = resolve(bundled(), "vllm", "hbm", "16bit", "nvlink")
    >>> 0 < c.bandwidth <= 1 and c.layer_seconds > 0
    True
    """
    key = engine_class(engine)
    if key not in table.engines:
        raise ValueError(f"unknown engine {engine!r}; known: {', '.join(table.engines)}")
    if fabric not in table.fabrics:
        raise ValueError(f"unknown fabric {fabric!r}; known: {', '.join(table.fabrics)}")
    e, f, g = table.engines[key], table.fabrics[fabric], group(table, key, gpu_class, family)
    sixteen = group(table, key, gpu_class, "16bit") if e.dequantize_above > 0 else g  # gpusizer.dequant
    return Constants(
        bandwidth=g.bandwidth,
        compute=g.compute,
        decode_compute=g.decode_compute,
        kv_bandwidth=e.kv_bandwidth,
        layer_seconds=e.layer_seconds,
        step_seconds=e.step_seconds,
        request_seconds=e.request_seconds,
        moe_layer_seconds=e.moe_layer_seconds,
        overlap=e.overlap,
        expert_compute=e.expert_compute,
        chunk_tokens=e.chunk_tokens,
        integer_matmul=e.integer_matmul,
        latency_seconds=f.latency_seconds,
        bandwidth_fraction=f.bandwidth_fraction,
        group=g.key,
        informed=bool(g.fitted),
        fp16_accumulate=e.fp16_accumulate,
        dequantize_above=e.dequantize_above,
        dequant_compute=sixteen.compute,
    )


#: Widening of the band where no measurement informed the group (docs/methods.md#uncertainty-bands).
EXTRAPOLATION_WIDENING = 1.5


@lru_cache(maxsize=256)  # a table hashes by identity and is not changed once built
def band_factors(table: Table, regime: str, *, informed: bool = True) -> tuple[float, float]:
    """``(low, high)`` multipliers of an expected rate for the p10-p90 band of ``regime``.

    Falls back from ``"decode, batch 1, tensor parallel"`` to ``"decode, batch 1"`` to ``"decode"``
    to ``"all"``; the band always contains 1 and is widened by ``EXTRAPOLATION_WIDENING`` (in log
    space) when the constants were not informed by measurements.

    Examples
    --------
    >>> low, high = band_factors(bundled(), "decode, batch 1")
    >>> low <= 1.0 <= high
    True
    """
    parts = regime.split(", ")
    found = None
    for n in range(len(parts), 0, -1):
        found = table.bands.get(", ".join(parts[:n]))
        if found is not None:
            break
    found = found or table.bands.get("all") or Band("all", 0.8, 1.2, 0)
    low, high = min(found.low, 1.0), max(found.high, 1.0)
    if not informed:
        low, high = low**EXTRAPOLATION_WIDENING, high**EXTRAPOLATION_WIDENING
    return low, high


def constant(table: Table, kind: str, name: str, name_field: str) -> float:
    """One constant of a table, keyed as in ``FIELDS`` (``"group", "vllm/hbm/16bit", "bandwidth"``).

    Examples
    --------
    >>> constant(bundled(), "fabric", "nvlink", "latency_seconds") > 0
    True
    """
    if kind == "engine":
        return float(getattr(table.engines[name], name_field))
    if kind == "fabric":
        return float(getattr(table.fabrics[name], name_field))
    return float(getattr(next(g for g in table.groups if g.key == name), name_field))


def with_groups(table: Table, keys: Iterable[str]) -> Table:
    """``table`` with a group of its own for each ``engine/gpu_class/format`` key it lacks.

    The new group is a copy of the group that matched the key (``group``), its ``source`` saying so;
    keys the table has are left alone.

    Examples
    --------
    >>> t = with_groups(bundled(), ["vllm/hbm/16bit"])
    >>> group(t, "vllm", "hbm", "16bit").key, group(bundled(), "vllm", "hbm", "16bit").key
    ('vllm/hbm/16bit', '*/hbm/16bit')
    """
    groups = list(table.groups)
    known = {g.key for g in groups}
    for key in keys:
        if key not in known:
            engine, gpu_cls, family = key.split("/")
            base = group(table, engine, gpu_cls, family)
            groups.append(dataclasses.replace(base, engine=engine, gpu_class=gpu_cls, format=family,
                                              source=f"prior from {base.key}: {base.source}"))
            known.add(key)
    return dataclasses.replace(table, groups=tuple(groups))

def with_constants(table: Table, values: dict[tuple[str, str, str], float]) -> Table:
    """``table`` with constants replaced, keyed ``(kind, name, field)`` as in ``FIELDS``.

    A group key (``engine/gpu_class/format``) not yet in the table is added as a copy of the group
    that matched it, then changed.

    Examples
    --------
    >>> t = with_constants(bundled(), {("group", "vllm/hbm/16bit", "bandwidth"): 0.5})
    >>> resolve(t, "vllm", "hbm", "16bit", "nvlink").bandwidth
    0.5
    """
    return _replaced(with_groups(table, [name for kind, name, _ in values if kind == "group"]), values)


def _replaced(table: Table, values: dict[tuple[str, str, str], float]) -> Table:
    engines, fabrics = dict(table.engines), dict(table.fabrics)
    groups = {g.key: g for g in table.groups}
    for (kind, name, name_field), value in values.items():
        stores: dict[str, dict[str, Any]] = {"engine": engines, "fabric": fabrics, "group": groups}
        store = stores[kind]
        store[name] = dataclasses.replace(store[name], **{name_field: value})
    return dataclasses.replace(table, engines=engines, groups=tuple(groups.values()), fabrics=fabrics)
