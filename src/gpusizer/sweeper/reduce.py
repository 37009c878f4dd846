"""Reductions of a sweep that need no full table: best row per group, Pareto front, counts that fit.

Each is a function of one ``Sweep`` (``Sweep.best``, ``pareto``, ``counts``) and a class that folds
blocks into a small table one at a time (``Best``, ``Pareto``, ``Counts``, each with ``add`` and
``result``), so that a streamed or distributed sweep (``sweep_chunks``, ``sweeper.distributed``) gets
the same answer as the in-memory table without holding it: the best rows of the union of two sets of
rows are the best of their two best rows, a Pareto front of a union is the front of the two fronts,
and counts add up. Ties keep the row that comes first in the grid's flat order, as ``Sweep.best``
does, so that the folded answer equals the in-memory one row for row (``tests/test_sweep_stream.py``).
No physics lives here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Protocol

import numpy as np

from gpusizer.sweeper.table import Sweep

__all__ = ["Best", "Counts", "Pareto", "Reduction", "concat", "counts", "pareto"]


class Reduction(Protocol):
    """A fold over the blocks of a grid, in flat order."""

    def add(self, part: Sweep) -> None:
        """Fold in the next rows (a block, or the ``result`` of the same reduction over later rows)."""

    def result(self) -> Sweep:
        """The answer over every row added so far."""


def concat(parts: Sequence[Sweep]) -> Sweep:
    """The rows of ``parts`` one after the other, as one ``Sweep`` of flat columns (the first part's axes)."""
    if not parts:
        raise ValueError("concat needs at least one Sweep, got none")
    data = {name: np.concatenate([p[name] for p in parts]) for name in parts[0].data}
    return Sweep(data=data, shape=(sum(len(p) for p in parts),), axes=parts[0].axes)


def _names(value: str | Sequence[str] | None) -> list[str]:
    return [] if value is None else [value] if isinstance(value, str) else list(value)


def _numbers(s: Sweep, name: str) -> np.ndarray:
    column = s[name]
    if column.dtype.kind not in "biuf":
        raise TypeError(f"a Pareto front needs numeric columns; {name!r} holds {column.dtype}")
    return column.astype(float)


def pareto(s: Sweep, x: str, y: str, *, largest: tuple[bool, bool] = (False, False)) -> Sweep:
    """The rows of ``s`` that no other row beats on both ``x`` and ``y`` (Pareto front).

    Smaller is better on each column (larger where ``largest`` says so); a row is dominated when
    another is at least as good on both and better on one, so rows with equal values are all kept.
    Rows where either value is NaN are never on the front. The front comes sorted best ``x`` first,
    then best ``y``, then in row order.

    Examples
    --------
    >>> from gpusizer import sweep
    >>> s = sweep(["llama-3.1-8b"], ["h100-sxm", "rtx-4090"], concurrency=[1, 8, 64], prices=True)
    >>> front = pareto(s, "usd_per_million_tokens", "decode_tpot_seconds_expected")
    >>> [(g, int(c)) for g, c in zip(front["gpu"], front["concurrency"])]
    [('rtx-4090', 64), ('h100-sxm', 64), ('rtx-4090', 8), ('h100-sxm', 8), ('h100-sxm', 1)]
    """
    xs, ys = (_numbers(s, name) * (-1.0 if big else 1.0) for name, big in zip((x, y), largest, strict=True))
    rows = np.flatnonzero(~(np.isnan(xs) | np.isnan(ys)))
    if not len(rows):
        return s.take(rows)
    order = rows[np.lexsort((rows, ys[rows], xs[rows]))]
    sx, sy = xs[order], ys[order]
    first = np.flatnonzero(np.r_[True, sx[1:] != sx[:-1]])  # each distinct x, its smallest y first
    group = np.cumsum(np.r_[True, sx[1:] != sx[:-1]]) - 1
    least = sy[first]
    before = np.r_[np.inf, np.minimum.accumulate(least)[:-1]]  # best y at a strictly better x
    keep = (least < before)[group] & (sy == least[group])
    return s.take(order[keep])


def _codes(columns: list[np.ndarray]) -> np.ndarray:
    """One integer per row naming its group of values (at least one column), in sorted order of the values."""
    codes = [np.unique(c.astype(str) if c.dtype == object else c, return_inverse=True)[1].ravel() for c in columns]
    return np.ravel_multi_index(codes, [int(c.max()) + 1 if len(c) else 1 for c in codes])


def _sum_by(table: Sweep, per: list[str]) -> Sweep:
    """``table``'s ``rows`` and ``fits`` added up over the rows of each group of ``per`` values."""
    n = len(table)
    group = _codes([table[name] for name in per]) if per else np.zeros(n, dtype=np.intp)
    distinct, first, index = np.unique(group, return_index=True, return_inverse=True)
    data = {name: table[name][first] for name in per}
    for name in ("rows", "fits"):
        data[name] = np.bincount(index.ravel(), weights=table[name], minlength=len(distinct)).astype(np.int64)
    return Sweep(data=data, shape=(len(distinct),), axes=table.axes)


def counts(s: Sweep, per: str | Sequence[str] | None = None) -> Sweep:
    """Rows and rows that fit (``rows``, ``fits``) of each group of ``per`` columns (of all rows when None),
    groups sorted by their values.

    Examples
    --------
    >>> from gpusizer import sweep
    >>> s = sweep(["llama-3.1-8b"], ["h100-sxm", "rtx-4090"], context=[4096, 32768], concurrency=[1, 8, 64])
    >>> c = counts(s, per="gpu")
    >>> c["gpu"].tolist(), c["rows"].tolist(), c["fits"].tolist()
    (['h100-sxm', 'rtx-4090'], [6, 6], [5, 3])
    """
    names = _names(per)
    table = Sweep(data={**{name: s[name] for name in names}, "rows": np.ones(len(s), dtype=np.int64),
                        "fits": s["fits"].astype(np.int64)}, shape=(len(s),), axes=s.axes)
    return _sum_by(table, names)


class Best:
    """``Sweep.best(by, per, largest=...)`` folded over blocks (of the rows that fit, with ``fits_only``)."""

    def __init__(self, by: str | Sequence[str], per: str | Sequence[str] | None = None, *, largest: bool = False,
                 fits_only: bool = False) -> None:
        self.by, self.per, self.largest, self.fits_only = _names(by), _names(per), largest, fits_only
        self._kept: Sweep | None = None

    def _best(self, part: Sweep) -> Sweep:
        return part.best(self.by, self.per or None, largest=self.largest)

    def add(self, part: Sweep) -> None:
        """Fold in the next rows."""
        if self.fits_only and "fits" in part.data:
            part = part.filter(fits=True)
        best = self._best(part)
        self._kept = best if self._kept is None else self._best(concat([self._kept, best]))

    def result(self) -> Sweep:
        """The best row of each group over every row added."""
        if self._kept is None:
            raise ValueError("Best.result: no rows were added")
        return self._kept


class Pareto:
    """``pareto(x, y, largest=...)`` folded over blocks (of the rows that fit, with ``fits_only``)."""

    def __init__(self, x: str, y: str, *, largest: tuple[bool, bool] = (False, False), fits_only: bool = False) -> None:
        self.x, self.y, self.largest, self.fits_only = x, y, largest, fits_only
        self._kept: Sweep | None = None

    def add(self, part: Sweep) -> None:
        """Fold in the next rows."""
        if self.fits_only and "fits" in part.data:
            part = part.filter(fits=True)
        front = pareto(part, self.x, self.y, largest=self.largest)
        whole = front if self._kept is None else concat([self._kept, front])
        self._kept = pareto(whole, self.x, self.y, largest=self.largest)

    def result(self) -> Sweep:
        """The front over every row added."""
        if self._kept is None:
            raise ValueError("Pareto.result: no rows were added")
        return self._kept


class Counts:
    """``counts(per)`` folded over blocks; a block may also be an earlier ``result`` (with ``rows``)."""

    def __init__(self, per: str | Sequence[str] | None = None) -> None:
        self.per = _names(per)
        self._kept: Sweep | None = None

    def add(self, part: Sweep) -> None:
        """Fold in the next rows."""
        tally = part if "rows" in part.data and "concurrency" not in part.data else counts(part, self.per or None)
        whole = tally if self._kept is None else concat([self._kept, tally])
        self._kept = _sum_by(whole, self.per)

    def result(self) -> Sweep:
        """Rows and fitting rows of each group over every row added."""
        if self._kept is None:
            raise ValueError("Counts.result: no rows were added")
        return replace(self._kept)


def fold(parts: Iterable[Sweep], *reductions: Reduction) -> None:
    """Add every part, in order, to every reduction."""
    for part in parts:
        for r in reductions:
            r.add(part)
