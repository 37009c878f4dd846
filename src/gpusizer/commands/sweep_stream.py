"""``gpusizer sweep``'s streaming flags: blocks of bounded size, reductions, a Dask cluster.

``--chunk-rows N`` computes the grid ``N`` rows at a time (``gpusizer.sweeper.chunks``) and lifts the
in-memory limits (``MAX_GRID_ROWS``, ``MAX_PREFILL_STEPS``) to ``sweeper.chunks.MAX_STREAM_ROWS``;
without it, the grid is still written block by block but the limits stay. ``--best-by``,
``--pareto`` and ``--counts`` write a reduction (``gpusizer.sweeper.reduce``) instead of every row;
``--workers N`` or ``--scheduler tcp://...`` run the blocks on Dask (``gpusizer.sweeper.distributed``).
Argument parsing and output only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from gpusizer.commands import common

__all__ = ["CRITERIA", "add_arguments", "streamed", "write"]

#: ``--best-by`` and ``--pareto`` shortcuts: column and whether larger is better.
CRITERIA = {
    "tokens": ("decode_expected_aggregate_tokens_per_second", True),
    "cost": ("usd_per_million_tokens", False),
    "latency": ("decode_tpot_seconds_expected", False),
    "ttft": ("prefill_ttft_seconds_expected", False),
    "concurrency": ("max_concurrency", True),
}


def _criterion(text: str) -> tuple[str, bool]:
    """``tokens``, ``cost``, ... or ``COLUMN[:max|:min]`` (default min) -> (column, larger is better)."""
    name, _, way = text.strip().partition(":")
    if name in CRITERIA and not way:
        return CRITERIA[name]
    if way not in ("", "max", "min"):
        raise argparse.ArgumentTypeError(f"expected COLUMN, COLUMN:max or COLUMN:min, got {text!r}")
    return CRITERIA.get(name, (name, False))[0], way == "max"


def _pair(text: str) -> tuple[tuple[str, bool], tuple[str, bool]]:
    items = [item for item in text.split(",") if item.strip()]
    if len(items) != 2:
        raise argparse.ArgumentTypeError(f"expected two columns such as cost,latency, got {text!r}")
    return _criterion(items[0]), _criterion(items[1])


def _positive(text: str) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The streaming flags, one block at the end of ``sweep``'s."""
    group = parser.add_argument_group("grids bigger than memory (docs/sweep.md)")
    group.add_argument("--chunk-rows", type=_positive, default=None,
                       help="compute the grid this many rows at a time, e.g. 262144, lifting the in-memory row "
                       "limit (memory then stays one block's, whatever the grid's size)")
    what = group.add_mutually_exclusive_group()
    what.add_argument("--best-by", type=_criterion, default=None, metavar="CRITERION",
                      help="write only the best row of each --per group: tokens (max decode tokens/s), cost (min "
                      "USD per million tokens, needs --prices), latency, ttft, concurrency, or COLUMN[:max|:min]")
    what.add_argument("--pareto", type=_pair, nargs="?", const=_pair("cost,latency"), default=None, metavar="X,Y",
                      help="write only the Pareto front of two criteria (default cost,latency: needs --prices)")
    what.add_argument("--counts", action="store_true", help="write only the rows and fitting rows of each --per group")
    group.add_argument("--per", type=lambda t: [i.strip() for i in t.split(",") if i.strip()], default=["model", "gpu"],
                       help="groups of --best-by and --counts (default model,gpu; 'none' for one group)")
    group.add_argument("--workers", type=_positive, default=None,
                       help="run the blocks on a local Dask cluster of this many single-thread workers "
                       "(needs gpusizer[dask]); full rows then go to a Parquet dataset (a folder)")
    group.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help="run the blocks on a running Dask cluster, e.g. tcp://10.0.0.5:8786")


def streamed(args: argparse.Namespace) -> bool:
    """Whether ``args`` asked for the streamed limits (``--chunk-rows`` or a Dask cluster)."""
    return args.chunk_rows is not None or args.workers is not None or args.scheduler is not None


def _reduction(args: argparse.Namespace) -> Any:
    from gpusizer.sweeper import reduce

    per = None if [p.lower() for p in args.per] == ["none"] else args.per
    if args.best_by is not None:
        return reduce.Best(args.best_by[0], per, largest=args.best_by[1], fits_only=args.fits)
    if args.pareto is not None:
        (x, big_x), (y, big_y) = args.pareto
        return reduce.Pareto(x, y, largest=(big_x, big_y), fits_only=args.fits)
    return reduce.Counts(per) if args.counts else None


def _picked(part: Any, args: argparse.Namespace) -> Any:
    """A block (or a reduction's answer) with ``--fits`` and ``--columns`` applied."""
    from gpusizer.sweeper import Sweep

    if args.fits and "fits" in part.data:
        part = part.filter(fits=True)
    if args.columns:
        for name in args.columns:
            part[name]  # a KeyError names the closest columns
        part = Sweep(data={name: part.data[name] for name in args.columns}, shape=part.shape, axes=part.axes)
    return part


def write(args: argparse.Namespace, options: dict[str, Any]) -> str:
    """Compute the grid of ``options`` (``sweep``'s keywords) block by block and write what ``args`` asks."""
    from gpusizer.sweeper import chunks, output, reduce

    grid = chunks.plan(**options)
    size = args.chunk_rows or chunks.DEFAULT_CHUNK_ROWS
    reduction = _reduction(args)
    distributed = args.workers is not None or args.scheduler is not None
    if distributed and reduction is None:
        return _dask_rows(args, grid, size)
    if distributed:
        from gpusizer.sweeper import distributed as dask_sweep

        with dask_sweep.cluster(args.workers or 1, scheduler=args.scheduler) as client:
            dask_sweep.reduce(grid, reduction, client=client, chunk_rows=size)
    elif reduction is not None:
        reduce.fold(_blocks(grid, size, args, True), reduction)
    parts: Any = _blocks(grid, size, args, False) if reduction is None else [_picked(reduction.result(), args)]
    if args.output is None:
        return _stdout(output.csv_text(parts))
    path = Path(args.output)
    written = [0, 0]  # rows, columns

    def counted(items: Any) -> Any:
        for part in items:
            written[0] += len(part)
            written[1] = len(part.data)
            yield part

    def save(target: Path) -> None:
        (output.write_parquet if path.suffix.lower() == ".parquet" else output.write_csv)(counted(parts), target)

    common.write_atomic(path, save)
    return f"wrote {written[0]:,} rows x {written[1]} columns to {path}"


def _blocks(grid: Any, size: int, args: argparse.Namespace, reducing: bool) -> Any:
    """The blocks of ``grid`` (``--fits`` and ``--columns`` applied unless ``reducing``), reporting progress."""
    from gpusizer import progress

    total = len(grid)
    for block in grid.blocks(size):
        part = grid.sweep(block)
        yield part if reducing else _picked(part, args)
        progress.report("sweep", block.start + block.rows, total)


def _stdout(texts: Any) -> str:
    """Write each text to stdout but the last, which is returned without its final newline (the command
    line prints it with one), so that the output is the in-memory sweep's."""
    pending = ""
    for text in texts:
        sys.stdout.write(pending)
        pending = text
    return pending.rstrip("\n")


def _dask_rows(args: argparse.Namespace, grid: Any, size: int) -> str:
    """Every row, on Dask, written as a Parquet dataset (a folder of one file per range)."""
    from gpusizer.sweeper import distributed as dask_sweep

    if args.output is None or Path(args.output).suffix.lower() != ".parquet":
        raise common.CommandError("--workers/--scheduler write every row as a Parquet dataset: give -o NAME.parquet "
                                  "(a folder), or ask for --best-by, --pareto or --counts")
    with dask_sweep.cluster(args.workers or 1, scheduler=args.scheduler) as client:
        rows = dask_sweep.write_parquet(grid, args.output, client=client, chunk_rows=size, fits=args.fits,
                                        columns=args.columns)
    return f"wrote {rows:,} rows to the Parquet dataset {args.output} (a folder of part-*.parquet)"
