"""Sweeps: ``estimate`` over the cartesian product of models, GPUs, counts, precisions, engines and
workloads, by numpy broadcasting.

``sweep(models, gpus, ...)`` turns each distinct record into numbers once (a model at a precision,
a GPU, an engine: loops over the records, never over configurations), lays them out along their own
axis of one broadcast grid (models ``(M, 1, 1, ...)``, GPUs ``(1, G, 1, ...)``, ...), and runs the
same numeric core as ``estimate`` over it: ``estimator.memory_numbers`` for memory and
``performance.decode_numbers`` / ``prefill_numbers`` for speed. Every number therefore equals
``estimate``'s for that configuration; ``tests/test_sweep.py`` checks it field by field.

The answer is a ``Sweep``: one row per configuration, its columns flat numpy arrays (kept compact,
in the broadcast shape each depends on, until read), with ``filter``, ``best``, ``take``,
``to_pandas`` (optional extra ``pandas``), ``to_csv`` and ``to_parquet`` (``pyarrow``). Axis order,
slowest first: model, gpu, gpu_count, weights, kv_cache, engine, context, prompt (only when given),
concurrency.

Deliberate omissions: systems (``hgx-h200-8x``) are not a GPU axis value; sweep their GPU with a
``gpu_count`` instead. No physics lives here.
"""

from __future__ import annotations

import csv
import itertools
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from types import SimpleNamespace
from typing import IO, Any

import numpy as np

from gpusizer import catalog, configuration, engines, estimator, parallel, performance, unpack
from gpusizer import grid as grid_
from gpusizer.checks import integer_array
from gpusizer.estimator import Estimate

__all__ = ["AXES", "Sweep", "estimate_row", "sweep"]

#: Axes of the grid, slowest first (``prompt`` only when given).
AXES = ("model", "gpu", "gpu_count", "weights", "kv_cache", "engine", "context", "prompt", "concurrency")

#: Estimate fields that are axis values already, or repeat one.
_REPEATS = {"decode_context", "decode_concurrency", "prefill_prompt", "parallel_gpus"}
_RENAMED = {"gpus": "gpu_count"}


def estimate_row(result: Estimate) -> dict[str, Any]:
    """One scalar ``Estimate`` as a flat row, named as ``Sweep``'s columns.

    Nested records are prefixed (``decode_``, ``prefill_``; the memory breakdown keeps its own names),
    bands become ``..._low`` and ``..._high``, and ``gpus`` is ``gpu_count``.
    """
    row: dict[str, Any] = {}
    for f in fields(result):
        value = getattr(result, f.name)
        prefix = "" if f.name == "memory" else f"{f.name}_"
        if f.name in ("memory", "decode", "prefill", "parallel"):
            for inner in fields(value):
                _put(row, prefix + inner.name, getattr(value, inner.name))
        else:
            _put(row, _RENAMED.get(f.name, f.name), value)
    if result.prefill.prompt is not None:
        row["prompt"] = result.prefill.prompt
    return {key: value for key, value in row.items() if key not in _REPEATS}


def _put(row: dict[str, Any], name: str, value: Any) -> None:
    if isinstance(value, tuple):
        row[f"{name}_low"], row[f"{name}_high"] = value
    else:
        row[name] = value


class _Columns(Mapping[str, np.ndarray]):
    """Flat columns of a grid, each made (broadcast and copied) on first use and then kept."""

    def __init__(self, data: Mapping[str, np.ndarray], shape: tuple[int, ...]) -> None:
        self._data, self._shape, self._made = data, shape, dict[str, np.ndarray]()

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._made:
            array = self._data[name]
            flat = array if array.shape == self._shape else np.broadcast_to(array, self._shape)
            flat = flat.ravel()  # a copy unless the column already holds one value per row
            flat.flags.writeable = False
            self._made[name] = flat
        return self._made[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


@dataclass(frozen=True, eq=False)
class Sweep:
    """A grid of estimates, one row per configuration.

    ``columns`` maps a name to a flat array of one value per row: the axis values (``model``, ``gpu``,
    ``gpu_count``, ``weights``, ``expert_weights``, ``kv_cache``, ``engine``, ``context``, ``prompt``,
    ``concurrency``) and every field of ``Estimate`` flattened as ``estimate_row`` names them, in the
    units of ``Estimate`` (bytes, seconds, tokens/s), plus cost columns when prices were given. Rows
    are in C order over ``axes`` (the last axis varies fastest).

    ``data`` holds the same columns compactly, each in the broadcast shape that its value depends on
    (a model's weight bytes do not vary with context): a column is expanded to one value per row only
    when it is read, and ``filter``, ``take`` and ``best`` pick rows without expanding the others.
    """

    data: Mapping[str, np.ndarray]
    """Column name -> array that broadcasts to ``shape``."""
    shape: tuple[int, ...]
    """Shape of the grid (one entry per axis; ``(rows,)`` once rows have been picked)."""
    axes: Mapping[str, tuple[Any, ...]]
    """The values of each axis, as given (``None`` for a checkpoint default)."""

    @property
    def columns(self) -> Mapping[str, np.ndarray]:
        """Column name -> flat, read-only array of ``len(self)`` values (made on first read)."""
        made = self.__dict__.get("_columns")
        if made is None:
            made = _Columns(self.data, self.shape)
            object.__setattr__(self, "_columns", made)
        return made

    def __len__(self) -> int:
        return int(np.prod(self.shape))

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self.data:
            near = catalog.closest(name, self.data)
            raise KeyError(f"no column {name!r}" + (f"; did you mean {', '.join(near)}?" if near else ""))
        return self.columns[name]

    def __repr__(self) -> str:
        sizes = " x ".join(f"{len(v)} {k}" for k, v in self.axes.items() if len(v) > 1) or "one configuration"
        picked = "picked from a grid" if len(self.shape) != len(self.axes) else ""
        return f"Sweep({len(self):,} rows {picked} of {sizes}; {len(self.data)} columns)".replace("  ", " ")

    def take(self, rows: Any) -> Sweep:
        """The rows at the flat indices ``rows``, in that order."""
        index = np.asarray(rows, dtype=np.intp).ravel()
        at = np.unravel_index(index, self.shape)
        data = {name: _pick(array, at, self.shape) for name, array in self.data.items()}
        return replace(self, data=data, shape=(len(index),))

    def _mask(self, name: str, value: Any) -> np.ndarray:
        """Rows where column ``name`` equals ``value`` (or is in it), in the grid's shape (compact)."""
        if name not in self.data:
            self[name]  # raises, naming the closest columns
        array = self.data[name]
        many = isinstance(value, list | tuple | set | frozenset)
        values = [_canonical(name, v) for v in (value if many else [value])]
        return np.isin(array, values) if many else np.asarray(array == values[0])

    def filter(self, mask: Any = None, **equal: Any) -> Sweep:
        """Rows where ``mask`` (one boolean per row) is true and every keyword column equals its value
        (or is one of them, for a list, tuple or set): ``s.filter(fits=True, gpu=["h100-sxm", "h200-sxm"])``."""
        keep: Any = True
        for name, value in equal.items():
            keep = keep & self._mask(name, value)
        keep = np.broadcast_to(keep, self.shape).ravel()
        if mask is not None:
            mask = np.asarray(mask, dtype=bool)
            if mask.shape != (len(self),):
                raise ValueError(f"mask must hold one boolean per row ({len(self)}), got shape {mask.shape}")
            keep = keep & mask
        return self.take(np.flatnonzero(keep))

    def best(self, by: str | Sequence[str], per: str | Sequence[str] | None = None, *, largest: bool = False) -> Sweep:
        """The best row of each group of ``per`` columns (of all rows when ``per`` is None).

        Best is the smallest ``by`` (the largest with ``largest=True``); a sequence ``by`` breaks ties
        with the later columns. NaN and None are never best. Groups come out sorted by their ``per``
        values.

        Examples
        --------
        >>> s = sweep(["llama-3.1-8b", "qwen3-32b"], ["h100-sxm", "rtx-4090"], gpu_count=[1, 2],
        ...           weights=["bf16", "fp8"], prices={"h100": 2.0, "rtx-4090": 0.5})
        >>> cheapest = s.filter(fits=True).best(by=["usd_per_hour", "total_bytes"], per="model")
        >>> [(m, int(n), g, w) for m, n, g, w in zip(*(cheapest[c] for c in ("model", "gpu_count", "gpu", "weights")))]
        [('llama-3.1-8b', 1, 'rtx-4090', 'fp8'), ('qwen3-32b', 1, 'h100-sxm', 'fp8')]
        """
        if len(self) == 0:
            return self
        keys = [_order_key(self[name], largest) for name in _names(by)]
        groups = [_group_codes(self[name]) for name in _names(per)]
        group = np.ravel_multi_index(groups, [int(g.max()) + 1 for g in groups]) if groups else np.zeros(len(self), int)
        order = np.lexsort((*reversed(keys), group))
        ranked = group[order]
        return self.take(order[np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]])])

    def to_dict(self) -> dict[str, list[Any]]:
        """Column name -> list of Python values."""
        return {name: column.tolist() for name, column in self.columns.items()}

    def to_pandas(self) -> Any:
        """A ``pandas.DataFrame`` of the columns (needs the optional extra ``gpusizer[pandas]``)."""
        try:
            import pandas
        except ImportError:  # pragma: no cover - depends on the environment
            raise ImportError("to_pandas needs pandas: pip install 'gpusizer[pandas]'") from None
        return pandas.DataFrame(dict(self.columns))

    def to_csv(self, path: str | Path | IO[str], *, block: int = 65536) -> None:
        """Write the rows as CSV with a header to a path or an open text file, ``block`` rows at a time
        (``nan`` for a missing number, an empty field for ``None``)."""
        if not isinstance(path, str | Path):
            self._write_csv(path, block)
            return
        with open(path, "w", newline="", encoding="utf-8") as out:
            self._write_csv(out, block)

    def _write_csv(self, out: IO[str], block: int) -> None:
        writer = csv.writer(out)
        writer.writerow(self.data)
        for start in range(0, len(self), block):
            part = self.take(np.arange(start, min(start + block, len(self)))).columns
            writer.writerows(zip(*(column.tolist() for column in part.values()), strict=True))

    def to_parquet(self, path: str | Path) -> None:
        """Write the rows as Parquet (needs ``pyarrow``)."""
        try:
            import pyarrow
            import pyarrow.parquet
        except ImportError:  # pragma: no cover - depends on the environment
            raise ImportError("to_parquet needs pyarrow: pip install pyarrow") from None
        table = pyarrow.table({name: _arrow(column) for name, column in self.columns.items()})
        pyarrow.parquet.write_table(table, str(path))


def _canonical(column: str, value: Any) -> Any:
    """A model or GPU id for an alias (``"h100"`` -> ``"h100-sxm"``); other values as given."""
    lookup: Any = {"model": catalog.model, "gpu": catalog.gpu}.get(column)
    if lookup is None or not isinstance(value, str):
        return value
    try:
        return lookup(value).id
    except KeyError:
        return value


def _pick(array: np.ndarray, at: tuple[np.ndarray, ...], shape: tuple[int, ...]) -> np.ndarray:
    """Elements of ``array`` (broadcastable to ``shape``) at the grid positions ``at``, as a flat array."""
    array = array.reshape((1,) * (len(shape) - array.ndim) + array.shape)
    index = tuple(i if n > 1 else np.zeros_like(i) for i, n in zip(at, array.shape, strict=True))
    return array[index]


def _arrow(column: np.ndarray) -> Any:
    return column.tolist() if column.dtype == object else column


def _names(value: str | Sequence[str] | None) -> list[str]:
    return [] if value is None else [value] if isinstance(value, str) else list(value)


def _group_codes(column: np.ndarray) -> np.ndarray:
    """Integer codes of a column's values, in sorted order (``None`` sorts as the text ``"None"``)."""
    values = column.astype(str) if column.dtype == object else column
    return np.unique(values, return_inverse=True)[1].ravel()


def _order_key(column: np.ndarray, largest: bool) -> np.ndarray:
    """A float key that sorts ``column`` best first, NaN and None last."""
    if column.dtype.kind in "biuf":
        key = column.astype(float)
    else:
        present = np.array([value is not None for value in column.tolist()], dtype=bool)
        codes = np.unique(np.where(present, column, ""), return_inverse=True)[1].ravel().astype(float)
        key = np.where(present, codes, np.nan)
    return -key if largest else key


# --- the grid ---------------------------------------------------------------------------------------


def _axis(value: Any, default: Iterable[Any]) -> tuple[Any, ...]:
    """Axis values: a single value is an axis of one; None means ``default``."""
    if value is None:
        return tuple(default)
    if isinstance(value, str) or not isinstance(value, Iterable):
        return (value,)
    return tuple(value)


def _counts(value: Any, name: str) -> np.ndarray:
    return integer_array(np.ravel(np.asarray(value)), name, minimum=1)


def sweep(
    models: Any = None,
    gpus: Any = None,
    *,
    weights: Any = (None,),
    kv_cache: Any = (None,),
    context: Any = 8192,
    concurrency: Any = 1,
    gpu_count: Any = 1,
    engine: Any = "vllm",
    prompt: Any = None,
    layout: str = "tp",
    calibration: Any = None,
    prices: Mapping[str, float] | bool | None = None,
) -> Sweep:
    """``estimate`` for every combination of the given values, by broadcasting.

    Parameters
    ----------
    models : str, Model or iterable of them, optional
        Catalogue ids or records; default every catalogue model.
    gpus : str, GPU or iterable of them, optional
        Catalogue ids, aliases or records; default every catalogue GPU.
    weights : str or iterable of str or None
        Weight precisions; ``None`` is each checkpoint's own (default).
    kv_cache : str or iterable of str or None
        KV-cache dtypes; ``None`` is each model's activation dtype (default).
    context : array_like of int
        Tokens each sequence holds. [token]
    concurrency : array_like of int
        Sequences resident at once. [-]
    gpu_count : array_like of int
        GPUs the model is split over. [-]
    engine : str or iterable of str
        ``vllm``, ``sglang``, ``trtllm``, ``llama.cpp``.
    prompt : array_like of int, optional
        Prompt tokens for prefill and TTFT, an axis of its own; default: each row's ``context``. [token]
    layout : str
        How the ``gpu_count`` GPUs share a model, as ``estimate``'s ``layout``: a bare ``"tp"``
        (default), ``"pp"``, ``"ep"`` or ``"layer"`` uses all of them; a spelled-out layout
        (``"tp2xpp2"``) must match every ``gpu_count``.
    calibration : Calibration, optional
        Your own calibration (``gpusizer.calibrate``), as in ``estimate``.
    prices : mapping or bool, optional
        ``True`` for the typical prices of ``gpusizer.cost``'s table, or a mapping GPU id -> USD per
        GPU-hour that overrides it: adds ``usd_per_gpu_hour``, ``usd_per_hour`` (all GPUs of the row)
        and ``usd_per_million_tokens`` (output tokens at the expected aggregate decode rate,
        ``cost.usd_per_million_tokens``). GPUs without a price get NaN.

    Returns
    -------
    Sweep
        One row per configuration, axes in the order of ``AXES``.

    Raises
    ------
    KeyError
        Unknown model or GPU (the message names the closest ids).
    ValueError
        Non-positive or fractional lengths or counts, unknown precision or engine, a layout that
        does not match a ``gpu_count`` or a model.

    Examples
    --------
    >>> s = sweep(["llama-3.1-8b"], ["h100-sxm", "rtx-4090"], weights=["bf16", "fp8"], context=[4096, 32768],
    ...           concurrency=[1, 8, 64])
    >>> len(s), int(s["fits"].sum())
    (24, 14)
    >>> s.filter(gpu="rtx-4090", weights="fp8", context=4096)["max_concurrency"]
    array([18, 18, 18])
    """
    records = [catalog.model(m) for m in _axis(models, catalog.models())]
    devices = [catalog.gpu(g) for g in _axis(gpus, catalog.gpus())]
    counts = _counts(gpu_count, "gpu_count")
    profiles = [engines.engine(e) for e in _axis(engine, ("vllm",))]
    prompts = None if prompt is None else _counts(prompt, "prompt")
    axes = {
        "model": tuple(r.id for r in records), "gpu": tuple(d.id for d in devices), "gpu_count": tuple(counts.tolist()),
        "weights": _axis(weights, (None,)), "kv_cache": _axis(kv_cache, (None,)),
        "engine": tuple(p.name for p in profiles), "context": tuple(_counts(context, "context").tolist()),
        **({} if prompts is None else {"prompt": tuple(prompts.tolist())}),
        "concurrency": tuple(_counts(concurrency, "concurrency").tolist()),
    }
    grid = grid_.Grid(axes)
    plans = _plans(records, counts, layout)
    names, numbers, each = grid.precisions(records)  # stacked, and one record per cell
    count = grid.along("gpu_count", counts)
    plan = SimpleNamespace(**{
        name: grid.along("gpu_count", np.array([getattr(p, name) for p in plans]))
        for name in ("tp", "pp", "ep", "dp", "attention_dp")
    })
    ctx, users = grid.along("context", np.asarray(axes["context"])), grid.along("concurrency", axes["concurrency"])
    asked = ctx if prompts is None else grid.along("prompt", prompts)
    memory = _memory(grid, numbers, devices, profiles, count, ctx, users, plan)
    s, c, decode, prefill = _speed(grid, each, devices, profiles, count, layout, calibration, ctx, users, asked,
                                   prompts is None)
    _label(grid, s, c, decode, prefill, users, counts, plans)
    links = np.where(count > 1, s.links, "none").astype(object)
    parallel_ = {"layout": decode["layout"],
                 **estimator.parallel_numbers(plan, count, links, decode, prefill["scaling_efficiency"])}
    flat: dict[str, Any] = {
        "model": grid.along("model", unpack.objects(axes["model"])),
        "gpu": grid.along("gpu", unpack.objects(axes["gpu"])),
        "engine": grid.along("engine", unpack.objects(axes["engine"])),
        "gpu_count": count,
        **{name: names[..., i] for i, name in enumerate(("weights", "expert_weights", "kv_cache"))},
        "context": ctx,
        "concurrency": users,
        "prompt": asked,
        **memory,
    }
    for prefix, values in (("decode_", decode), ("prefill_", prefill), ("parallel_", parallel_)):
        for name, value in values.items():
            _put(flat, prefix + name, value)
    data = {name: np.asarray(value) for name, value in flat.items() if name not in _REPEATS}
    if prices is not None and prices is not False:
        data.update(_costs(data, prices))
    return Sweep(data=data, shape=grid.shape, axes=axes)


def _memory(
    grid: grid_.Grid, numbers: Any, devices: list[catalog.GPU], profiles: list[engines.EngineProfile], count: Any,
    ctx: Any, users: Any, plan: Any,
) -> dict[str, Any]:
    """``estimator.memory_numbers`` over the grid: the engine profiles' fields laid along the engine axis."""
    codes = grid.along("engine", np.arange(len(profiles)))
    e = SimpleNamespace(**{
        name: unpack.column([getattr(p, name) for p in profiles], codes)
        for name in engines.EngineProfile.model_fields if not isinstance(getattr(profiles[0], name), tuple)
    })
    capacity = np.array([[estimator.engine_capacity(d, p) for p in profiles] for d in devices])
    return estimator.memory_numbers(numbers, e, grid.along(("gpu", "engine"), capacity), count, ctx, users, plan)


def _speed(
    grid: grid_.Grid, each: np.ndarray, devices: list[catalog.GPU], profiles: list[engines.EngineProfile],
    count: Any, layout: str, calibration: Any, ctx: Any, users: Any, asked: Any, same_prompt: bool,
) -> tuple[Any, Any, dict[str, Any], dict[str, Any]]:
    """The setups, constants, decode and prefill fields over the grid (``configuration.setups``,
    ``performance.decode_numbers`` and ``prefill_numbers``), each GPU x engine with its own table."""
    tables, index = grid_.tables(devices, profiles, calibration)
    engine_names = unpack.objects([p.name for p in profiles])[grid.along("engine", np.arange(len(profiles)))]
    setups = [configuration.setups(each, grid.along("gpu", unpack.objects(devices)), count, engine_names, layout, t)
              for t in tables]
    s, c = (grid_.compact(grid_.merged(index, grid, [x[k] for x in setups])) for k in (0, 1))
    bands = {(phase, batch): grid_.merged(index, grid, [performance.band_factors(t, phase, x[0], x[1], batch)
                                                        for t, x in zip(tables, setups, strict=True)])
             for phase, batch in (("decode", "batch 1"), ("decode", "batch > 1"), ("prefill", None))}
    decode = performance.decode_numbers(s, c, (bands["decode", "batch 1"], bands["decode", "batch > 1"]), ctx, users)
    first = (decode["tpot_seconds_ceiling"], decode["tpot_seconds_expected"]) if same_prompt else None
    prefill = performance.prefill_numbers(s, c, bands["prefill", None], asked, users, None, first)
    return s, c, decode, prefill


def _label(
    grid: grid_.Grid, s: Any, c: Any, decode: dict[str, Any], prefill: dict[str, Any], users: Any,
    counts: np.ndarray, plans: list[parallel.Layout],
) -> None:
    """Add the labels that ``estimate`` writes as strings of one configuration to ``decode`` and ``prefill``."""
    decode["regime"] = np.where(users == 1, grid.along("gpu_count", _regimes("decode", s, counts, "batch 1")),
                                grid.along("gpu_count", _regimes("decode", s, counts, "batch > 1")))
    prefill["regime"] = grid.along("gpu_count", _regimes("prefill", s, counts, None))
    for values in (decode, prefill):
        values.update(constants=c.group, informed=c.informed, compute_rate_published=s.published)
    decode.update(layout=grid.along("gpu_count", unpack.objects([p.name for p in plans])), links=s.links)


def _plans(records: list[catalog.Model], counts: np.ndarray, layout: str) -> list[parallel.Layout]:
    """The layout at each GPU count, checked against every model as ``estimate`` checks it."""
    plans = [parallel.layout(layout, int(n)) for n in counts]
    for record, plan in itertools.product(records, plans):
        parallel.check(plan, record, heads=False)
        if record.num_heads % plan.tp:
            warnings.warn(f"layout {plan.name!r}: the {record.num_heads} attention heads of {record.id} do not "
                          f"divide by {plan.tp}, which engines refuse; see gpusizer.best_layout", stacklevel=3)
    return plans


def _regimes(phase: str, s: Any, counts: np.ndarray, batch: str | None) -> np.ndarray:
    """``performance.regime`` at each GPU count."""
    return unpack.objects([performance.regime(phase, replace(s, gpus=int(n)), batch) for n in counts])


def _costs(columns: Mapping[str, np.ndarray], prices: Mapping[str, float] | bool) -> dict[str, np.ndarray]:
    """Price columns from the price table (``gpusizer.cost``), ``prices`` overriding it; NaN where a GPU
    has no price."""
    from gpusizer import cost

    table = cost.prices(prices if isinstance(prices, Mapping) else None)
    gpu = columns["gpu"]
    per_gpu = np.array([table[i].typical if i in table else np.nan for i in gpu.ravel().tolist()]).reshape(gpu.shape)
    priced = np.isfinite(per_gpu)
    count = columns["gpu_count"]
    rate = columns["decode_expected_aggregate_tokens_per_second"]
    per_token = cost.usd_per_million_tokens(np.where(priced, per_gpu, 1.0), count, rate)
    return {
        "usd_per_gpu_hour": per_gpu,
        "usd_per_hour": per_gpu * count,
        "usd_per_million_tokens": np.where(priced, per_token, np.nan),
    }
