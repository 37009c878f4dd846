"""The answer of a sweep: ``Sweep``, one row per configuration, and the row of one ``Estimate``.

Columns are flat numpy arrays, kept compact in the broadcast shape each depends on until read, with
``filter``, ``best``, ``take``, ``to_pandas`` (optional extra ``pandas``), ``to_csv`` and ``to_parquet``
(``pyarrow``). A number an estimate does not know (None) is NaN in a float column, an empty CSV field
and a Parquet null.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import IO, Any

import numpy as np

from gpusizer import catalog
from gpusizer.estimator import Estimate

__all__ = ["AXES", "REPEATS", "Sweep", "estimate_row", "put"]

#: Axes of the grid, slowest first (``layout`` only for a sequence of layouts, ``prompt`` only when given).
AXES = ("model", "gpu", "gpu_count", "layout", "weights", "kv_cache", "engine", "context", "prompt", "concurrency")

#: Estimate fields that are axis values already, or repeat one (``gpu_name`` names the ``gpu`` axis's id).
REPEATS = {"decode_context", "decode_concurrency", "prefill_prompt", "parallel_gpus", "gpu_name"}
_RENAMED = {"gpus": "gpu_count"}


def estimate_row(result: Estimate) -> dict[str, Any]:
    """One scalar ``Estimate`` as a flat row, named as ``Sweep``'s columns.

    Nested records are prefixed (``decode_``, ``prefill_``; the memory breakdown keeps its own names),
    bands become ``..._low`` and ``..._high``, and ``gpus`` is ``gpu_count``.
    """
    row: dict[str, Any] = {}
    for f in fields(result):
        value = getattr(result, f.name)
        if f.name in ("speculation", "prefix_cache", "lora", "offload", "images"):  # options: no sweep column
            continue
        prefix = "" if f.name == "memory" else f"{f.name}_"
        if f.name in ("memory", "decode", "prefill", "parallel"):
            for inner in fields(value):
                put(row, prefix + inner.name, getattr(value, inner.name))
        else:
            put(row, _RENAMED.get(f.name, f.name), value)
    if result.prefill.prompt is not None:
        row["prompt"] = result.prefill.prompt
    return {key: value for key, value in row.items() if key not in REPEATS}


def put(row: dict[str, Any], name: str, value: Any) -> None:
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
    ``concurrency``; a ``layout`` axis shows as each row's canonical ``parallel_layout``) and every field of
    ``Estimate`` flattened as ``estimate_row`` names them, in the units of ``Estimate`` (bytes, seconds,
    tokens/s), plus cost columns when prices were given. Rows are in C order over ``axes`` (the last axis
    varies fastest).

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
        >>> from gpusizer import sweep
        >>> s = sweep(["llama-3.1-8b", "qwen3-32b"], ["h100-sxm", "rtx-4090"], gpu_count=[1, 2],
        ...           weights=["bf16", "fp8"], prices={"h100": 2.0, "rtx-4090": 0.5})
        >>> cheapest = s.filter(fits=True).best(by=["usd_per_hour", "total_bytes"], per="model")
        >>> [(m, int(n), g, w) for m, n, g, w in zip(*(cheapest[c] for c in ("model", "gpu_count", "gpu", "weights")))]
        [('llama-3.1-8b', 1, 'rtx-4090', 'fp8'), ('qwen3-32b', 2, 'rtx-4090', 'fp8')]
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

    def to_csv(self, path: str | Path | IO[str], *, block: int = 65536, header: bool = True) -> None:
        """Write the rows as CSV with a header (unless ``header`` is false) to a path or an open text file,
        ``block`` rows at a time (an empty field for a missing number, NaN in the columns, and for ``None``)."""
        if not isinstance(path, str | Path):
            self._write_csv(path, block, header)
            return
        with open(path, "w", newline="", encoding="utf-8") as out:
            self._write_csv(out, block, header)

    def _write_csv(self, out: IO[str], block: int, header: bool) -> None:
        writer = csv.writer(out)
        if header:
            writer.writerow(self.data)
        for start in range(0, len(self), block):
            part = self.take(np.arange(start, min(start + block, len(self)))).columns
            writer.writerows(zip(*(_csv_values(column, name) for name, column in part.items()), strict=True))

    def to_parquet(self, path: str | Path) -> None:
        """Write the rows as Parquet (needs ``pyarrow``); a missing number (NaN) is a null."""
        try:
            import pyarrow.parquet
        except ImportError:  # pragma: no cover - depends on the environment
            raise ImportError("to_parquet needs pyarrow: pip install 'gpusizer[parquet]'") from None
        pyarrow.parquet.write_table(self.to_arrow(), str(path))

    def to_arrow(self) -> Any:
        """The rows as a ``pyarrow.Table`` (needs ``pyarrow``); a missing number (NaN) is a null."""
        try:
            import pyarrow
        except ImportError:  # pragma: no cover - depends on the environment
            raise ImportError("to_arrow needs pyarrow: pip install 'gpusizer[parquet]'") from None
        return pyarrow.table({name: _arrow(column) for name, column in self.columns.items()})


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


def _csv_values(column: np.ndarray, name: str = "") -> list[Any]:
    """A column's values for ``csv.writer``: None (an empty field) where a float is NaN; a size (``*_bytes``)
    as a whole number of bytes, as ``gpusizer fit --json`` gives it (85061827297.28 -> 85061827297)."""
    if name.endswith("_bytes") and column.dtype.kind == "f":
        return [None if v != v else round(v) for v in column.tolist()]
    values = column.tolist()
    if column.dtype.kind == "f" and np.isnan(column).any():
        return [None if v != v else v for v in values]
    return values


def _arrow(column: np.ndarray) -> Any:
    """A column for ``pyarrow.table``: NaN becomes a Parquet null."""
    import pyarrow

    return pyarrow.array(column.tolist() if column.dtype == object else column, from_pandas=True)


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
