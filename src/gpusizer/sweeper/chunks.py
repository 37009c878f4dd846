"""Streamed sweeps: the grid of ``sweep`` in blocks of bounded size, for grids bigger than memory.

``plan(models, gpus, ...)`` resolves the axes of the grid once (the same records, values and checks
as ``sweep``) without computing any row; ``Plan.blocks(chunk_rows)`` cuts its flat index (C order,
the last axis fastest) into consecutive rectangular sub-grids of at most ``chunk_rows`` rows, and
``Plan.sweep(block)`` runs ``sweep`` on one of them. ``sweep_chunks`` yields those ``Sweep`` blocks in
order, so that concatenated they are ``sweep``'s rows (floats to within rounding), while the memory held at any
time is one block's. No physics lives here.

A block fixes every axis before some axis ``k`` to one value, takes a contiguous run of axis ``k``'s
values and every value of the axes after it: ``step = chunk_rows // rows_after_k`` values of ``k`` at
a time, where ``k`` is the first axis whose trailing axes hold at most ``chunk_rows`` rows. A block
is therefore a ``Sweep`` of its own, compact in the broadcast shape, and reading one column of it
does not expand the others.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from gpusizer import checks, efficiency, progress
from gpusizer import grid as grid_
from gpusizer.sweeper.table import Sweep

__all__ = ["DEFAULT_CHUNK_ROWS", "MAX_STREAM_ROWS", "Block", "Plan", "plan", "sweep_chunks"]

#: Rows per block by default: about 60 MB of working arrays at the sweep's 84 columns. [-]
DEFAULT_CHUNK_ROWS = 1 << 18

#: Most rows a streamed grid may hold (a bound on the flat index, not on memory). [-]
MAX_STREAM_ROWS = 10**13

#: ``sweep``'s parameter for each axis.
_PARAMETERS = {"model": "models", "gpu": "gpus", "gpu_count": "gpu_count", "layout": "layout", "weights": "weights",
               "kv_cache": "kv_cache", "engine": "engine", "context": "context", "prompt": "prompt",
               "concurrency": "concurrency"}


@dataclass(frozen=True)
class Block:
    """A rectangular sub-grid: rows ``start`` to ``start + rows`` of the flat index."""

    start: int
    """Flat index of the block's first row. [-]"""
    ranges: tuple[tuple[int, int], ...]
    """``(first, stop)`` positions along each axis, in grid order."""

    @property
    def rows(self) -> int:
        """Rows of the block. [-]"""
        return math.prod(stop - first for first, stop in self.ranges)


@dataclass(frozen=True)
class Plan:
    """The resolved axes of a grid and the options of its sweep, without any row computed."""

    values: Mapping[str, tuple[Any, ...]]
    """Axis name -> the values ``sweep`` takes for it (records for ``model`` and ``gpu``), in grid order."""
    options: Mapping[str, Any]
    """The other keywords of ``sweep`` (``calibration``, ``prices``, ``scale_out_bandwidth`` and a single
    ``layout``)."""

    @property
    def shape(self) -> tuple[int, ...]:
        """Length of every axis. [-]"""
        return tuple(len(v) for v in self.values.values())

    def __len__(self) -> int:
        return math.prod(self.shape)

    def blocks(self, chunk_rows: int = DEFAULT_CHUNK_ROWS) -> Iterator[Block]:
        """The grid's rows as consecutive blocks of at most ``chunk_rows`` rows, in flat-index order."""
        chunk = int(checks.integer_array(chunk_rows, "chunk_rows", minimum=1))
        shape = self.shape
        k = next(i for i in range(len(shape)) if math.prod(shape[i + 1:]) <= chunk)
        after = math.prod(shape[k + 1:])
        step = max(1, min(shape[k], chunk // after))
        trailing = tuple((0, n) for n in shape[k + 1:])
        start = 0
        for leading in itertools.product(*(range(n) for n in shape[:k])):
            for first in range(0, shape[k], step):
                stop = min(first + step, shape[k])
                yield Block(start, (*((i, i + 1) for i in leading), (first, stop), *trailing))
                start += (stop - first) * after

    def sweep(self, block: Block) -> Sweep:
        """``sweep`` of the sub-grid ``block``: its rows, in order, as the whole grid's sweep has them."""
        from gpusizer.sweeper import sweep

        given: dict[str, Any] = {_PARAMETERS[name]: list(values[first:stop])
                 for (name, values), (first, stop) in zip(self.values.items(), block.ranges, strict=True)}
        return sweep(**given, **self.options)


def plan(
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
    layout: Any = "tp",
    calibration: Any = None,
    prices: Mapping[str, float] | bool | None = None,
    scale_out_bandwidth: float | None = None,
) -> Plan:
    """The grid ``sweep`` would compute for these arguments (the same meaning and defaults), resolved and
    checked, its rows left to ``Plan.sweep``.

    Records, counts, tokens and engines are checked here; a precision or layout that a model refuses
    raises when the block holding it is computed. At most ``MAX_STREAM_ROWS`` rows.
    """
    values, layouts = grid_.sweep_axes(models, gpus, weights=weights, kv_cache=kv_cache, context=context,
                                       concurrency=concurrency, gpu_count=gpu_count, engine=engine, prompt=prompt,
                                       layout=layout)
    if calibration is not None:
        efficiency.check_calibration(calibration)
    checks.grid_rows({name: len(v) for name, v in values.items()}, MAX_STREAM_ROWS)
    options = {"calibration": calibration, "prices": prices, "scale_out_bandwidth": scale_out_bandwidth,
               **({} if "layout" in values else {"layout": layouts[0]})}
    return Plan(values=values, options=options)


def sweep_chunks(models: Any = None, gpus: Any = None, *, chunk_rows: int = DEFAULT_CHUNK_ROWS,
                 **options: Any) -> Iterator[Sweep]:
    """``sweep`` of the same grid, as consecutive blocks of at most ``chunk_rows`` rows.

    Takes ``sweep``'s arguments (see ``plan``); the blocks, concatenated, are ``sweep``'s rows in its
    order (floats equal to within rounding: a prefill sums as many chunks as the block's longest
    prompt has), and only one block is held at a time, so that the memory
    used does not grow with the grid. Each block is a ``Sweep`` of its sub-grid (its ``axes`` the
    values it spans). Reports ``("sweep", rows done, rows)`` to ``gpusizer.progress`` after each block.

    Examples
    --------
    >>> blocks = list(sweep_chunks(["llama-3.1-8b"], ["h100-sxm", "rtx-4090"], context=[4096, 32768],
    ...                            concurrency=[1, 8, 64], chunk_rows=5))
    >>> [len(b) for b in blocks], sum(int(b["fits"].sum()) for b in blocks)
    ([3, 3, 3, 3], 8)
    """
    grid = plan(models, gpus, **options)
    total = len(grid)
    for block in grid.blocks(chunk_rows):
        yield grid.sweep(block)
        progress.report("sweep", block.start + block.rows, total)
