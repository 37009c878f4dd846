"""``gpusizer calibrate FILE... -o my.toml``: fit the efficiency constants to your own measurements.

Reads each file with ``readers.read`` (the measurement schema, or a vLLM, llama-bench or MLPerf
output, recognised from the content or named with ``--format``), calibrates, prints the median
errors before and after per regime, and writes the calibration (TOML or JSON by suffix) for
``gpusizer fit ... --calibration my.toml``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpusizer.commands import common

if TYPE_CHECKING:
    from gpusizer import readers

#: The formats of ``readers.FORMATS``, listed here so that building the parser imports nothing heavy
#: (a test checks the two agree).
FORMATS = ("csv", "json", "llama-bench", "mlperf", "vllm")

#: Options that tool outputs need (the files do not name catalogue ids), passed to the reader.
CONTEXT = ("model", "gpu", "gpus", "engine", "weights", "kv_cache", "split", "concurrency", "prompt")


EXAMPLES = (
    "gpusizer calibrate runs.csv -o my.toml\n"
    "gpusizer calibrate vllm-c1.json vllm-c16.json --model llama-3.1-8b --gpu h100 -o my.toml\n"
    "gpusizer calibrate llama-bench.json --model llama-3.1-8b --gpu rtx-4090 -o my.toml\n"
    "gpusizer calibrate data/calibration/measurements.csv --mapping data/calibration/mapping.csv\n"
    "gpusizer fit llama-3.1-70b h100 --gpus 4 --calibration my.toml"
)


def register(subparsers: Any) -> None:
    """Add the ``calibrate`` subcommand."""
    p = subparsers.add_parser("calibrate", help="fit the efficiency constants to your own measurements",
                              **common.help_options(EXAMPLES))
    p.add_argument("files", nargs="+", type=Path, help="measurements: schema CSV/JSON, or vLLM / llama-bench / "
                   "MLPerf output (docs/calibration.md)")
    p.add_argument("-o", "--output", type=Path, help="write the calibration here (.toml, or .json)")
    p.add_argument("--format", choices=FORMATS, help="input format (default: recognised)")
    p.add_argument("--mapping", type=Path, help="mapping CSV for free-text rows (data/calibration/mapping.csv)")
    p.add_argument("--base", type=Path, help="efficiency table to start from (default: the shipped one)")
    p.add_argument("--model", help="catalogue model id, for tool outputs")
    p.add_argument("--gpu", help="catalogue GPU id, for tool outputs")
    p.add_argument("--gpus", type=common.gpu_count, help="GPUs per replica, for tool outputs")
    p.add_argument("--engine", help="engine class, for tool outputs")
    p.add_argument("--weights", help="weight precision, for tool outputs")
    p.add_argument("--kv-cache", help="KV-cache dtype, for tool outputs")
    p.add_argument("--split", choices=("tensor", "layer"), help="multi-GPU split, for tool outputs")
    p.add_argument("--concurrency", type=common.count, help="requests in flight (MLPerf Offline: the batch)")
    p.add_argument("--prompt", type=common.positive_tokens, help="mean prompt tokens (MLPerf)")
    p.add_argument("--output-tokens", dest="output_tokens", type=common.positive_tokens,
                   help="mean output tokens (MLPerf)")
    p.add_argument("--json", action="store_true", help="print the calibration as JSON instead of the table")
    p.set_defaults(handler=run)


def _context(args: argparse.Namespace) -> dict[str, Any]:
    given = {name: getattr(args, name) for name in CONTEXT}
    given["output"] = args.output_tokens  # --output is the calibration file
    return {k: v for k, v in given.items() if v is not None}


def _read(path: Path, args: argparse.Namespace) -> list[readers.Measurement]:
    from gpusizer import readers

    common.input_file(path, "FILE")
    if args.mapping is not None:
        return readers.read_csv(path, mapping=common.input_file(args.mapping, "--mapping"))
    try:
        return readers.read(path, format=args.format, **_context(args))
    except ValueError as error:  # name the option a tool output needs
        message = str(error).replace("model=", "--model").replace("gpu=", "--gpu").replace(
            "prompt=", "--prompt").replace("output=", "--output-tokens").replace("concurrency=", "--concurrency")
        raise common.CommandError(f"FILE {path}: {message}") from None


def run(args: argparse.Namespace) -> str:
    """Read, calibrate, write; return the error table (or the calibration as JSON)."""
    from gpusizer import calibration, efficiency

    inputs = [*args.files, *(p for p in (args.mapping, args.base) if p is not None)]
    if args.output is not None:  # refused before the work, not after
        common.check_output(args.output, inputs=inputs)
    rows = [m for path in args.files for m in _read(path, args)]
    base = efficiency.load(common.input_file(args.base, "--base")) if args.base is not None else None
    result = calibration.calibrate(rows, base=base)
    lines = [] if args.json else [calibration.error_table(result)]
    if args.output is not None:
        common.write_atomic(args.output, lambda path: calibration.save(result, path), inputs=inputs)
        lines.append(f"wrote {args.output} ({len(rows)} rows, {len(result.scopes)} scopes)")
    return calibration.to_json(result) if args.json else "\n".join(lines)
