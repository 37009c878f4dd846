"""``gpusizer sweep``: estimate a grid of configurations and write one row per configuration.

    gpusizer sweep --models llama-3.1-8b,qwen3-32b --gpus h100,rtx-4090 --weights bf16,fp8 \\
        --context 4k,32k --concurrency 1,8,64 -o grid.csv

Every flag takes a comma-separated list (an axis of the grid); ``--models`` and ``--gpus`` default
to the whole catalogue. The output is CSV (``-o grid.csv``, or stdout without ``-o``) or Parquet
(``-o grid.parquet``, needs pyarrow); the columns are ``gpusizer.sweep``'s. The grid is computed and
written block by block (``gpusizer.sweep_chunks``); ``--chunk-rows``, ``--best-by``, ``--pareto``,
``--counts``, ``--workers`` and ``--scheduler`` are ``commands.sweep_stream``'s. Argument parsing and
output only: the numbers come from ``gpusizer.sweep``.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
from pathlib import Path
from typing import Any

from gpusizer import catalog, checks, units
from gpusizer.commands import common, sweep_stream

__all__ = ["register"]


def _list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def _counts(maximum: int, what: str) -> Any:
    """Argument type of a comma-separated list of whole numbers from 1 to ``maximum``."""

    def read(text: str) -> list[int]:
        try:
            values = [units.parse_tokens(item) for item in _list(text)]
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
        if not values or min(values) < 1:
            raise argparse.ArgumentTypeError(
                f"expected positive whole numbers such as 1,8,64 or 4k,32k, got {text!r}")
        if max(values) > maximum:
            raise argparse.ArgumentTypeError(f"at most {maximum:,} {what}, got {max(values):,}")
        return values

    return read


def _names(text: str) -> list[str]:
    """Argument type of a comma-separated list of names, at least one."""
    items = _list(text)
    if not items:
        raise argparse.ArgumentTypeError(f"expected comma-separated names, got {text!r}")
    return items


def _prices(text: str) -> dict[str, float] | bool:
    if text.strip().lower() == "table":
        return True
    prices = {}
    for item in _list(text):
        name, _, value = item.rpartition("=")
        try:
            prices[name.strip()] = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected GPU=dollars-per-hour pairs such as h100=2.49, got {item!r}"
            ) from None
    return prices


def _catalogue(items: list[str] | None) -> list[str] | None:
    return None if items is None or [item.lower() for item in items] == ["all"] else items


def _precisions(items: list[str] | None) -> list[str | None]:
    return [None] if items is None else [None if item.lower() == "default" else item for item in items]


def _axis_sizes(args: argparse.Namespace) -> dict[str, int]:
    """The length of every axis of the grid ``args`` asks for (the catalogue's size for ``all``)."""
    models, gpus = _catalogue(args.models), _catalogue(args.gpus)
    return {
        "models": len(catalog.models()) if models is None else len(models),
        "gpus": len(catalog.gpus()) if gpus is None else len(gpus),
        "gpu_count": len(args.gpu_count), "weights": len(_precisions(args.weights)),
        "kv_cache": len(_precisions(args.kv_cache)), "engine": len(args.engine), "context": len(args.context),
        "concurrency": len(args.concurrency), "prompt": 1 if args.prompt is None else len(args.prompt),
    }


def _prefill_chunks(args: argparse.Namespace) -> int:
    """Chunks of the longest prompt the grid asks for, at the smallest chunk of its engines (unknown
    engines are left to ``gpusizer.sweep`` to refuse). [-]"""
    from gpusizer import efficiency, prefill

    table = efficiency.bundled()
    chunks = [table.engines[key].chunk_tokens for key in (efficiency.engine_class(e) for e in args.engine)
              if key in table.engines]
    return prefill.chunk_count(max(args.prompt or args.context), min(chunks, default=math.inf))


#: ``gpusizer sweep --help`` ends with these.
EXAMPLES = """\
gpusizer sweep --models llama-3.1-8b,qwen3-32b --gpus h100,rtx-4090 --weights bf16,fp8 \\
    --context 4k,32k --concurrency 1,8,64 -o grid.csv
gpusizer sweep --models llama-3.1-70b --gpu-count 1,2,4,8 --fits --prices table -o fits.parquet
gpusizer sweep --models qwen3-30b-a3b --gpus rtx-4090 --columns context,concurrency,fits,max_concurrency
gpusizer sweep --context 1k,4k,16k,64k --concurrency 1,8,64,256 --gpu-count 1,2,4,8 --prices table \
    --chunk-rows 262144 --fits --best-by cost --per model
gpusizer sweep --models llama-3.1-70b --gpu-count 1,2,4,8 --prices table --pareto cost,latency --fits"""


def register(commands: Any) -> None:
    """Add the ``sweep`` subcommand to ``gpusizer``'s subparsers."""
    parser = commands.add_parser(
        "sweep", help="estimate every combination of models, GPUs, counts, precisions and workloads",
        description="Estimate a grid (the cartesian product of the lists given) and write one row per "
        "configuration as CSV or Parquet.",
        **common.help_options(EXAMPLES),
    )
    parser.add_argument("--models", type=_names, help="comma-separated model ids (default: all)")
    parser.add_argument("--gpus", type=_names, help="comma-separated GPU ids or aliases (default: all)")
    parser.add_argument("--gpu-count", type=_counts(common.MAX_GPUS, "GPUs"), default=[1],
                        help=f"GPUs in tensor parallel, e.g. 1,2,4,8 (at most {common.MAX_GPUS})")
    parser.add_argument("--weights", type=_names,
                        help="weight precisions, e.g. bf16,fp8,int4 ('default': the checkpoint's)")
    parser.add_argument("--kv-cache", type=_names, help="KV-cache dtypes, e.g. bf16,fp8 (default: the model's)")
    parser.add_argument("--engine", type=_names, default=["vllm"], help="engines, e.g. vllm,llama.cpp (default vllm)")
    tokens = _counts(common.MAX_TOKENS, "tokens")
    parser.add_argument("--context", type=tokens, default=[8192], help="tokens per sequence, e.g. 4k,32k")
    parser.add_argument("--concurrency", type=_counts(common.MAX_CONCURRENCY, "sequences"), default=[1],
                        help="sequences at once, e.g. 1,8,64")
    parser.add_argument("--prompt", type=tokens, default=None, help="prompt tokens for TTFT (default: context)")
    parser.add_argument("--layout", default="tp", help="how the GPUs share a model: tp (default), pp, ep, layer")
    parser.add_argument("--prices", type=_prices, default=None,
                        help="add USD columns: 'table' (gpusizer.cost's prices) or overrides, e.g. h100=2.49")
    parser.add_argument("--fits", action="store_true", help="keep only the configurations that fit")
    parser.add_argument("--columns", type=_names, help="comma-separated columns to write (default: all)")
    parser.add_argument("-o", "--output", help="file to write: .csv or .parquet (default: CSV on stdout)")
    sweep_stream.add_arguments(parser)
    parser.set_defaults(handler=_sweep)


def _sweep(args: argparse.Namespace) -> str:
    from gpusizer.sweeper import chunks

    streamed = sweep_stream.streamed(args)
    limit = chunks.MAX_STREAM_ROWS if streamed else common.MAX_GRID_ROWS
    try:
        rows = checks.grid_rows(_axis_sizes(args), limit)
    except ValueError as error:
        where = "gpusizer.sweeper.chunks.MAX_STREAM_ROWS" if streamed else "gpusizer.commands.common.MAX_GRID_ROWS"
        raise common.CommandError(f"{error} ({where})") from None
    steps = rows * _prefill_chunks(args)
    if steps > common.MAX_PREFILL_STEPS and not streamed:
        raise common.CommandError(
            f"the grid's prefills take {steps:,} chunk steps ({rows:,} rows x {steps // rows:,} chunks of the "
            f"longest prompt), more than {common.MAX_PREFILL_STEPS:,} (gpusizer.commands.common.MAX_PREFILL_STEPS): "
            "sweep fewer rows or shorter prompts, or stream them with --chunk-rows"
        )
    if args.output is not None and not (args.workers or args.scheduler):
        common.check_output(args.output)
    if args.output is not None and Path(args.output).suffix.lower() == ".parquet" \
            and importlib.util.find_spec("pyarrow") is None:
        raise common.CommandError(f"-o {args.output}: Parquet needs pyarrow (pip install 'gpusizer[parquet]'), "
                                  "or write .csv", common.ENVIRONMENT)
    if (args.workers or args.scheduler) and importlib.util.find_spec("distributed") is None:
        raise common.CommandError("--workers/--scheduler need Dask: pip install 'gpusizer[dask]'", common.ENVIRONMENT)
    return sweep_stream.write(args, dict(
        models=_catalogue(args.models), gpus=_catalogue(args.gpus), weights=_precisions(args.weights),
        kv_cache=_precisions(args.kv_cache), context=args.context, concurrency=args.concurrency,
        gpu_count=args.gpu_count, engine=args.engine, prompt=args.prompt, layout=args.layout,
        prices=args.prices,
    ))
