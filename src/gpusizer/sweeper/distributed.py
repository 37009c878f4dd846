"""Sweeps spread over a Dask cluster: the grid cut by flat-index ranges, each range swept by a worker.

``partitions(plan, chunk_rows, parts)`` groups the blocks of ``sweeper.chunks`` into ``parts``
consecutive ranges of the flat index with about as many rows each; a worker runs the vectorised
``sweep`` on its range one block at a time. The plan is sent to each worker once
(``Client.scatter``), so that its records keep one identity there and the per-record caches of
``sweep`` (``unpack``, ``configuration``) serve every range (a fresh copy per task costs about a
second of setup). ``frame`` gives the rows as a ``dask.dataframe.DataFrame``
(one partition per range, in flat order; ``to_parquet`` writes it as a Parquet dataset of one file
per range), ``reduce`` folds ``sweeper.reduce``'s reductions on each range and combines the ranges'
answers in flat order on the client, so that both equal the in-memory sweep's.
``write_parquet`` has each worker write its ranges as files of one Parquet dataset (a folder).
``cluster(n_workers)`` starts a ``distributed.LocalCluster`` (one thread per worker process) or,
given ``scheduler="tcp://host:8786"``, connects to a running one.

Dask rather than Ray: it installs from PyPI as pure Python (``pip install 'gpusizer[dask]'``), its
``LocalCluster`` needs no daemon, and its DataFrame writes a Parquet dataset directly. Dask sends the
tasks (the plan's records and the reductions) to its workers with its own serialisation (cloudpickle):
use it with workers you trust. Dask is imported only inside the functions that need it. No physics
lives here.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gpusizer import checks, progress
from gpusizer.sweeper.chunks import DEFAULT_CHUNK_ROWS, Block, Plan
from gpusizer.sweeper.reduce import Reduction
from gpusizer.sweeper.table import Sweep

__all__ = ["cluster", "frame", "partitions", "reduce", "write_parquet"]


def _dask(what: str) -> None:
    """ImportError with the install line, unless Dask (and distributed) can be imported."""
    try:
        import dask.dataframe  # noqa: F401
        import distributed  # noqa: F401
    except ImportError:
        raise ImportError(f"{what} needs Dask: pip install 'gpusizer[dask]'") from None


def partitions(plan: Plan, chunk_rows: int = DEFAULT_CHUNK_ROWS, parts: int = 2) -> list[tuple[Block, ...]]:
    """The blocks of ``plan`` (``Plan.blocks(chunk_rows)``) in ``parts`` consecutive groups (fewer when
    there are fewer blocks), each about ``len(plan) / parts`` rows, in flat-index order."""
    count = int(checks.integer_array(parts, "parts", minimum=1))
    total, groups, current = len(plan), list[tuple[Block, ...]](), list[Block]()
    for block in plan.blocks(chunk_rows):
        current.append(block)
        if block.start + block.rows >= total * (len(groups) + 1) / count:
            groups.append(tuple(current))
            current = []
    if current:
        groups.append(tuple(current))
    return groups


def _rows(plan: Plan, blocks: Sequence[Block]) -> Iterator[Any]:
    for block in blocks:
        yield plan.sweep(block)


def _frame_part(plan: Plan, blocks: Sequence[Block]) -> Any:
    """One range of rows as a pandas DataFrame (the worker's task)."""
    import pandas

    frames = [part.to_pandas() for part in _rows(plan, blocks)]
    return pandas.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def _reduce_part(plan: Plan, blocks: Sequence[Block], reductions: Sequence[Reduction]) -> list[Any]:
    """Each reduction folded over one range (the worker's task): their results."""
    fresh = [copy.deepcopy(r) for r in reductions]  # a thread-local copy: tasks may share the objects
    for part in _rows(plan, blocks):
        for r in fresh:
            r.add(part)
    return [r.result() for r in fresh]


def frame(plan: Plan, *, chunk_rows: int = DEFAULT_CHUNK_ROWS, parts: int = 2) -> Any:
    """The rows of ``plan`` as a lazy ``dask.dataframe.DataFrame``, one partition per range of
    ``partitions``, in the flat order of ``sweep`` (the columns of ``Sweep.to_pandas``); computed on
    the active Dask client or scheduler. ``frame(...).to_parquet(path, write_index=False)`` writes a
    Parquet dataset (needs pyarrow)."""
    _dask("sweeper.distributed.frame")
    import dask
    import dask.dataframe as dd

    groups = partitions(plan, chunk_rows, parts)
    meta = _frame_part(plan, groups[0][:1]).iloc[:0]
    with dask.config.set({"dataframe.convert-string": False}):
        return dd.from_map(_frame_part, [plan] * len(groups), groups, meta=meta, enforce_metadata=False)


def reduce(plan: Plan, *reductions: Reduction, client: Any, chunk_rows: int = DEFAULT_CHUNK_ROWS,
           parts: int | None = None) -> None:
    """Fold ``reductions`` (``sweeper.reduce.Best``, ``Pareto``, ``Counts``) over every row of ``plan``
    on the Dask ``client``'s workers: each range of ``partitions`` is folded on a worker, and the
    ranges' answers are added to ``reductions`` on the client in flat order, so that each then holds
    the same answer as over the in-memory sweep. ``parts`` defaults to four per worker. Reports
    ``("sweep", rows done, rows)`` to ``gpusizer.progress`` as ranges finish."""
    _dask("sweeper.distributed.reduce")
    from distributed import as_completed

    if parts is None:
        parts = 4 * max(1, len(client.scheduler_info().get("workers", {})))
    groups = partitions(plan, chunk_rows, parts)
    # one copy per worker (its records keep their caches), under a key of its own: a plan scattered by an
    # earlier call may still be being released under the hashed key
    shared = client.scatter(plan, broadcast=True, hash=False)
    futures = [client.submit(_reduce_part, shared, g, list(reductions), pure=False) for g in groups]
    done, total = 0, len(plan)
    for future in as_completed(futures):
        done += sum(b.rows for b in groups[futures.index(future)])
        progress.report("sweep", done, total)
    for future in futures:
        for r, answer in zip(reductions, future.result(), strict=True):
            r.add(answer)


def _picked(part: Sweep, fits: bool, columns: Sequence[str] | None) -> Sweep:
    if fits:
        part = part.filter(fits=True)
    if columns:
        part = Sweep(data={name: part.data[name] for name in columns}, shape=part.shape, axes=part.axes)
    return part


def _write_part(plan: Plan, blocks: Sequence[Block], path: str, fits: bool, columns: Sequence[str] | None) -> int:
    """One range of rows written as one Parquet file (the worker's task); its rows. [-]"""
    from gpusizer.sweeper import output

    return output.write_parquet((_picked(part, fits, columns) for part in _rows(plan, blocks)), path)


def write_parquet(plan: Plan, path: str | Path, *, client: Any, chunk_rows: int = DEFAULT_CHUNK_ROWS,
                  parts: int | None = None, fits: bool = False, columns: Sequence[str] | None = None) -> int:
    """Write every row of ``plan`` (only those that fit with ``fits``; only ``columns`` when given) as a
    Parquet dataset: the folder ``path`` with one file per range, ``part-00000.parquet`` first, which
    ``pyarrow.parquet.read_table(path)`` or ``dask.dataframe.read_parquet`` read back in flat order.
    Each worker writes its own files (a shared file system for a remote cluster). Returns the rows
    written. [-]"""
    _dask("sweeper.distributed.write_parquet")
    from distributed import as_completed

    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    if parts is None:
        parts = 4 * max(1, len(client.scheduler_info().get("workers", {})))
    groups = partitions(plan, chunk_rows, parts)
    names = [str(folder / f"part-{i:05d}.parquet") for i in range(len(groups))]
    shared = client.scatter(plan, broadcast=True, hash=False)
    futures = [client.submit(_write_part, shared, g, name, fits, columns, pure=False)
               for g, name in zip(groups, names, strict=True)]
    done, total = 0, len(plan)
    for future in as_completed(futures):
        done += sum(b.rows for b in groups[futures.index(future)])
        progress.report("sweep", done, total)
    return sum(f.result() for f in futures)


@contextmanager
def cluster(n_workers: int = 2, *, scheduler: str | None = None, processes: bool = True) -> Iterator[Any]:
    """A ``distributed.Client``: connected to ``scheduler`` (``"tcp://host:8786"``) when given, else to a
    ``LocalCluster`` of ``n_workers`` workers with one thread each (threads of this process with
    ``processes=False``), closed on leaving the ``with`` block."""
    _dask("sweeper.distributed.cluster")
    import dask
    from distributed import Client, LocalCluster

    if scheduler is not None:
        with Client(scheduler) as client:
            yield client
        return
    count = int(checks.integer_array(n_workers, "n_workers", minimum=1))
    # distributed starts worker processes with MALLOC_TRIM_THRESHOLD_=65536, which turns off glibc's
    # dynamic mmap threshold: every block's arrays (tens of MB) then come as fresh pages, and a worker
    # sweeps 1.5-3 x slower than this process (measured with benchmarks/sweep_stream.py)
    environ = {name: value for name, value in dask.config.get("distributed.nanny.pre-spawn-environ", {}).items()
               if name != "MALLOC_TRIM_THRESHOLD_"}
    with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}), \
            LocalCluster(n_workers=count, threads_per_worker=1, processes=processes, dashboard_address=":0",
                      silence_logs=logging.ERROR) as local, \
            Client(local) as client:
        yield client
