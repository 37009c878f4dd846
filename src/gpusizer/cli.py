"""Command line: argument parsing and output formatting only; every number comes from the library.

``gpusizer fit MODEL GPU`` answers "does it fit, with how much headroom"; ``gpusizer gpus`` and
``gpusizer models`` list the catalogue. ``--json`` prints a stable machine-readable contract:
sizes are integers in bytes.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gpusizer import architecture, catalog, engines, precision, units
from gpusizer.commands import common
from gpusizer.commands.common import CommandError
from gpusizer.estimator import Estimate, estimate

GB, GiB = units.GB, units.GiB


#: The model argument of every command: ``gpusizer.commands.common.model``.
model = common.model


#: Examples shown at the end of ``--help``, per command ("" for the top-level parser).
EXAMPLES = {
    "": "gpusizer fit llama-3.1-70b h200 --weights fp8 --kv-cache fp8 --context 32k --concurrency 16\n"
        "gpusizer gpus\ngpusizer fit --help",
    "fit": "gpusizer fit llama-3.1-70b h200 --weights fp8 --kv-cache fp8 --context 32k --concurrency 16\n"
           "gpusizer fit deepseek-v3 hgx-h200-8x --context 16k --concurrency 32\n"
           "gpusizer fit ./my-checkpoint/ l40s --engine llama.cpp --json",
    "gpus": "gpusizer gpus\ngpusizer gpus --json",
    "models": "gpusizer models\ngpusizer models --json",
}


def help_options(command: str, examples: str | None = None) -> dict[str, Any]:
    """Keyword arguments for ``add_parser`` (or ``ArgumentParser``): an epilog of examples, kept as written.

    Command modules pass their own ``examples``; the built-in commands' are in ``EXAMPLES``.
    """
    return common.help_options(EXAMPLES.get(command, "") if examples is None else examples)


class Parser(argparse.ArgumentParser):
    """``argparse`` with its errors as one line, ``gpusizer: error: argument --x: ...``, status 2."""

    def error(self, message: str) -> Any:
        self.exit(common.USAGE, f"gpusizer: error: {message} (see {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="gpusizer", description="Size LLM inference before renting a GPU.", **help_options("")
    )
    commands = parser.add_subparsers(dest="command", required=True)

    fit = commands.add_parser("fit", help="does MODEL fit on GPU, and with how much headroom", **help_options("fit"))
    fit.add_argument("model", help="catalogue id (gpusizer models) or a path to a config.json / checkpoint folder")
    fit.add_argument("gpu", help="catalogue id or alias (gpusizer gpus), or a system id such as hgx-h200-8x")
    fit.add_argument("--weights", help=f"weight precision: {', '.join(precision.names())} (default: checkpoint)")
    fit.add_argument("--kv-cache", help="KV-cache dtype: bf16, fp16, fp8, ... (default: model activation dtype)")
    fit.add_argument("--context", type=common.tokens, default=None,
                     help="tokens per sequence, e.g. 32k (default 8k, or the model's maximum if shorter)")
    fit.add_argument("--allow-beyond-max-context", action="store_true",
                     help="accept --context or --prompt past the model's maximum context")
    fit.add_argument("--concurrency", type=common.count, default=1, help="sequences resident at once (default 1)")
    fit.add_argument("--prompt", type=common.positive_tokens, default=None,
                     help="prompt tokens for prefill and TTFT (default context)")
    fit.add_argument("--gpus", type=common.gpu_count, default=None,
                     help=f"GPUs to split the model over (default 1 or the system's; at most {common.MAX_GPUS})")
    fit.add_argument("--layout", default="tp", help="how the GPUs share the model: tp (default), pp, ep, layer, or "
                     "degrees such as tp2xpp2, tp8+ep8, tp4xdp2 (gpusizer layouts ranks them)")
    fit.add_argument("--engine", default="vllm", help=f"memory profile: {', '.join(engines.ENGINES)}")
    fit.add_argument("--json", action="store_true", help="machine-readable output (sizes in bytes)")
    fit.add_argument("--calibration", type=Path, help="your calibration (gpusizer calibrate ... -o my.toml)")
    fit.set_defaults(handler=_fit)

    for name, what, handler in (("gpus", "accelerators", _gpus), ("models", "models", _models)):
        listing = commands.add_parser(name, help=f"list the catalogue's {what}", **help_options(name))
        listing.add_argument("--json", action="store_true", help="machine-readable output")
        listing.set_defaults(handler=handler)
    for module in COMMANDS:
        importlib.import_module(module).register(commands)
    return parser


#: Modules that add a subcommand: each has ``register(subparsers)``, which adds its parser (with
#: ``**help_options(name, examples)`` so that ``--help`` ends with examples) and sets ``handler``, a
#: function of the parsed arguments that returns the text to print.
COMMANDS: tuple[str, ...] = (
    "gpusizer.commands.sweep",
    "gpusizer.commands.calibrate",
    "gpusizer.commands.layouts",
    "gpusizer.commands.shortlist",
    "gpusizer.commands.throughput",
)


def _bytes(value: float) -> int:
    return round(value)


def fit_json(result: Estimate) -> dict[str, Any]:
    """The ``--json`` contract of ``gpusizer fit``: per GPU, sizes as integers in bytes, and the engine's
    own accounting under its own names (``engine_memory``)."""
    data = result.to_dict()
    data["memory"] = {key: _bytes(value) for key, value in data["memory"].items()}
    for key in ("kv_pool_bytes", "kv_pool_deficit_bytes"):
        data[key] = _bytes(data[key])
    data["engine_memory"] = engine_memory(result)
    return data


#: How each engine names the terms of its startup memory accounting: (its name, ``Estimate`` number) in
#: the order its log prints them (docs/memory.md, "Against engine startup logs").
_ENGINE_TERMS: dict[str, tuple[tuple[str, str], ...]] = {
    "vllm": (  # vllm/v1/worker/gpu_worker.py determine_available_memory, and the V1 startup log
        ("total_gpu_memory_bytes", "capacity"), ("requested_memory_bytes", "budget"),
        ("model_weights_bytes", "weights"), ("activation_peak_bytes", "activation"),
        ("non_torch_memory_bytes", "non_torch"), ("cuda_graph_bytes", "cuda_graph"),
        ("kv_cache_memory_bytes", "pool"), ("kv_cache_tokens", "pool_tokens"),
    ),
    "sglang": (  # sglang model_runner.py profile_max_num_token and its "KV Cache is allocated" line
        ("total_gpu_memory_bytes", "capacity"), ("weights_bytes", "weights"), ("cuda_graph_bytes", "cuda_graph"),
        ("kv_cache_memory_bytes", "pool"), ("max_total_num_tokens", "pool_tokens"),
    ),
    "trtllm": (  # the "Allocated ... for max tokens in paged KV cache" line
        ("total_gpu_memory_bytes", "capacity"), ("weights_bytes", "weights"), ("activation_bytes", "activation"),
        ("kv_cache_memory_bytes", "pool"), ("max_tokens_in_paged_kv_cache", "pool_tokens"),
    ),
    "llama.cpp": (  # llama_model_load "model buffer size", llama_kv_cache "size", "compute buffer size"
        ("model_buffer_bytes", "weights"), ("kv_cache_buffer_bytes", "kv_cache"),
        ("compute_buffer_bytes", "activation"),
    ),
}


def engine_memory(result: Estimate, profile: engines.EngineProfile | None = None) -> dict[str, Any]:
    """``result``'s memory per GPU under the names its engine's startup log uses (``_ENGINE_TERMS``), so that
    a prediction can be compared line by line with a log; sizes in bytes, the memory fraction as a share.
    ``profile``: the engine profile ``result`` was estimated with (default: its engine's)."""
    m = result.memory
    profile = engines.engine(result.engine) if profile is None else profile
    numbers = {
        "capacity": m.capacity_bytes, "budget": m.budget_bytes, "weights": m.weights_bytes,
        "activation": m.activation_bytes, "cuda_graph": profile.cuda_graph_bytes,
        "non_torch": engines.non_torch_bytes(profile.runtime_bytes, profile.runtime_bytes_multi_gpu, result.gpus),
        "pool": result.kv_pool_bytes - result.kv_pool_deficit_bytes,  # signed, as vLLM logs "-2.14 GiB"
        "pool_tokens": result.kv_pool_tokens, "kv_cache": m.kv_cache_bytes,
    }
    terms: dict[str, Any] = {name: _bytes(numbers[key]) for name, key in _ENGINE_TERMS.get(profile.name, ())}
    if profile.name == "vllm":  # "Maximum concurrency for N tokens per request: X x": pool tokens over N
        terms["max_concurrency"] = round(result.kv_pool_tokens / result.context, 2)
    return {"engine": profile.name, "memory_fraction": profile.memory_fraction, **terms}


def _plural(n: int, noun: str) -> str:
    """``"1 sequence"``, ``"16 sequences"``."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def _size(value: float) -> str:
    return f"{value / GB:9.2f} GB  {value / GiB:8.2f} GiB"


def fit_text(result: Estimate, device: catalog.GPU, record: catalog.Model) -> str:
    """A readable breakdown and a one-line verdict; a warning when the context is past the model's maximum."""
    m = result.memory
    weights = result.weights + (f" (experts {result.expert_weights})" if result.expert_weights else "")
    lines = [
        f"{result.model} on {result.gpus} x {device.name} ({result.engine}), weights {weights}, "
        f"KV cache {result.kv_cache}",
        f"context {result.context:,} tokens x {_plural(result.concurrency, 'sequence')}, per GPU:",
        "",
        f"  weights      {_size(m.weights_bytes)}",
        f"  KV cache     {_size(m.kv_cache_bytes)}",
        f"  activations  {_size(m.activation_bytes)}",
        f"  runtime      {_size(m.runtime_bytes)}",
        f"  total        {_size(m.total_bytes)}",
        f"  budget       {_size(m.budget_bytes)}   of {m.capacity_bytes / GB:.2f} GB usable",
        f"  headroom     {_size(m.headroom_bytes)}",
        "",
    ]
    fitting, asked = _plural(result.max_concurrency, "sequence"), _plural(result.concurrency, "sequence")
    limits = (
        f"the KV pool holds {result.kv_pool_tokens:,} tokens: {fitting} of {result.context:,} tokens, "
        f"or {asked} of up to {result.max_context:,} tokens"
        f"{' (the model maximum)' if result.max_context == record.max_context else ''}."
    )
    d, p = result.decode, result.prefill
    lines += [
        f"  decode       {d.expected_tokens_per_second:9.1f} tok/s per user expected "
        f"(p10-p90 {d.band[0]:.1f}-{d.band[1]:.1f}; ceiling {d.ceiling_tokens_per_second:.1f}), "
        f"{d.expected_aggregate_tokens_per_second:.0f} tok/s aggregate, {d.bound}-bound",
        prefill_text(p),
        *parallel_text(result),
        "",
    ]
    if result.context_exceeds_model_max:
        lines += [f"warning: {result.context:,} tokens exceed the model's maximum context of "
                  f"{record.max_context:,} tokens; the sizes are extrapolated", ""]
    if result.fits:
        verdict = f"FITS with {m.headroom_bytes / GB:.2f} GB headroom per GPU; {limits}"
    else:
        verdict = f"DOES NOT FIT: {-m.headroom_bytes / GB:.2f} GB short per GPU; {limits}"
    return "\n".join([*lines, verdict])


def prefill_text(p: Any) -> str:
    """The prefill line of ``fit``'s text; says why when the expected time is unknown."""
    if p.seconds_expected is None:
        return (f"  prefill      unknown for {p.prompt:,} prompt tokens: {p.unknown} (memory-bound ceiling "
                f"{p.seconds_ceiling * 1e3:.0f} ms, TTFT ceiling {p.ttft_seconds_ceiling * 1e3:.0f} ms)")
    return (f"  prefill      {p.seconds_expected * 1e3:9.0f} ms for {p.prompt:,} prompt tokens expected "
            f"(ceiling {p.seconds_ceiling * 1e3:.0f} ms); TTFT {p.ttft_seconds_expected * 1e3:.0f} ms")


def parallel_text(result: Estimate) -> list[str]:
    """The layout line of ``fit``'s text: empty on one GPU."""
    q = result.parallel
    if q is None or q.gpus == 1:
        return []
    return [
        f"  parallel     {q.layout} over {q.links}: scaling efficiency {q.scaling_efficiency:.0%} "
        f"({q.speedup:.2f}x one GPU), communication {q.communication_seconds_per_step * 1e3:.2f} ms per step "
        f"({q.communication_share:.0%})"
    ]


def _gpu_rows() -> list[dict[str, Any]]:
    return [
        {
            "id": g.id,
            "name": g.name,
            "memory_bytes": _bytes(g.memory),
            "memory_bandwidth_bytes_per_second": _bytes(g.memory_bandwidth),
            "bf16_flops": g.dense.bf16,
            "fp8_flops": g.dense.fp8,
            "fp4_flops": g.dense.fp4,
            "tdp_watts": g.tdp,
        }
        for g in catalog.gpus()
    ]


def _model_rows() -> list[dict[str, Any]]:
    rows = []
    for m in catalog.models():
        rows.append(
            {
                "id": m.id,
                "family": m.family,
                "params_total": architecture.parameter_counts(m).total,
                "params_active": architecture.parameter_counts(m).active,
                "layers": m.num_layers,
                "attention": "/".join(sorted(set(m.layers))) + ("+mla" if m.mla else ""),
                "weights": m.expert_weights or m.weights,
                "max_context": m.max_context,
            }
        )
    return rows


Column = tuple[str, str, str, float]  # key, header, format, divisor


def _table(rows: list[dict[str, Any]], columns: Sequence[Column]) -> str:
    """Left-aligned text table; ``None`` shows as ``-``."""

    def cell(value: Any, fmt: str, scale: float) -> str:
        if value is None:
            return "-"
        return format(value / scale if scale != 1 else value, fmt)

    cells = [[cell(row[key], fmt, scale) for key, _, fmt, scale in columns] for row in rows]
    headers = [header for _, header, _, _ in columns]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
    lines = [headers, *cells]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines)


GPU_COLUMNS: list[Column] = [
    ("id", "id", "", 1), ("name", "name", "", 1), ("memory_bytes", "GB", ".0f", GB),
    ("memory_bandwidth_bytes_per_second", "TB/s", ".2f", 1e12), ("bf16_flops", "bf16 TFLOP/s", ".0f", 1e12),
    ("fp8_flops", "fp8 TFLOP/s", ".0f", 1e12), ("fp4_flops", "fp4 TFLOP/s", ".0f", 1e12),
    ("tdp_watts", "TDP W", ".0f", 1),
]
MODEL_COLUMNS: list[Column] = [
    ("id", "id", "", 1), ("family", "family", "", 1), ("params_total", "total B", ".2f", 1e9),
    ("params_active", "active B", ".2f", 1e9), ("layers", "layers", "d", 1), ("attention", "attention", "", 1),
    ("weights", "weights", "", 1), ("max_context", "max context", ",", 1),
]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``gpusizer`` command; returns the exit status.

    0 on success; 2 for a bad argument value (argparse's errors raise ``SystemExit(2)``); 1 for a
    problem of the environment (a missing or unreadable file, a full disk, output piped into a
    command that stopped reading, which is otherwise quiet). Errors are one line on stderr,
    ``gpusizer: error: ...``, naming the argument.
    """
    try:
        return _run(_parser().parse_args(argv))
    except BrokenPipeError:
        _silence_stdout()
        return common.ENVIRONMENT
    except CommandError as error:
        return _error(str(error), error.status)
    except OSError as error:
        where = f"{error.filename}: " if error.filename else ""
        return _error(f"{where}{error.strerror or error}", common.ENVIRONMENT)
    except (KeyError, ValueError, RecursionError) as error:
        message = error.args[0] if isinstance(error, KeyError) and error.args else str(error)
        return _error(str(message), common.USAGE)


def _error(message: str, status: int) -> int:
    print(f"gpusizer: error: {' '.join(message.split())}", file=sys.stderr)
    return status


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush into a closed pipe stays quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout is not a file (a test's capture)
        pass


def _run(args: argparse.Namespace) -> int:
    text = args.handler(args)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    return 0


def _fit(args: argparse.Namespace) -> str:
    record = model(args.model)
    context = common.default_context(record, args.context)
    common.check_context(record, context, args.prompt, args.allow_beyond_max_context)
    result = estimate(
        record,
        args.gpu,
        weights=args.weights,
        kv_cache=args.kv_cache,
        context=context,
        concurrency=args.concurrency,
        prompt=args.prompt,
        gpus=args.gpus,
        engine=args.engine,
        layout=args.layout,
        calibration=_calibration(args.calibration),
    )
    return common.json_text(fit_json(result)) if args.json else fit_text(result, catalog.gpu(result.gpu), record)


def _calibration(path: Path | None) -> Any:
    """The calibration file of ``--calibration``, or None."""
    if path is None:
        return None
    from gpusizer import calibration

    return calibration.load(common.input_file(path, "--calibration"))


def _gpus(args: argparse.Namespace) -> str:
    rows = _gpu_rows()
    return common.json_text(rows) if args.json else _table(rows, GPU_COLUMNS)


def _models(args: argparse.Namespace) -> str:
    rows = _model_rows()
    return common.json_text(rows) if args.json else _table(rows, MODEL_COLUMNS)


if __name__ == "__main__":
    sys.exit(main())
