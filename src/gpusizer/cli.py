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
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gpusizer import architecture, catalog, engines, precision, units
from gpusizer.commands import bars, common, model_argument
from gpusizer.commands import checkpoint as checkpointing
from gpusizer.commands import images as imaging
from gpusizer.commands import lora as adapting
from gpusizer.commands import offload as offloading
from gpusizer.commands import prefix as prefixing
from gpusizer.commands import speculative as speculating
from gpusizer.commands.common import CommandError
from gpusizer.estimator import Estimate, estimate

GB, GiB = units.GB, units.GiB


#: The model argument of every command: ``gpusizer.commands.model_argument.model``.
model = model_argument.model


#: Examples shown at the end of ``--help``, per command ("" for the top-level parser).
EXAMPLES = {
    "": "gpusizer fit llama-3.1-70b h200 --weights fp8 --kv-cache fp8 --context 32k --concurrency 16\n"
        "gpusizer gpus\ngpusizer fit --help",
    "fit": "gpusizer fit llama-3.1-70b h200 --weights fp8 --kv-cache fp8 --context 32k --concurrency 16\n"
           "gpusizer fit deepseek-v3 hgx-h200-8x --context 16k --concurrency 32\n"
           "gpusizer fit llama-3.1-8b h100 --concurrency 16 --prefix-cache 0.6 --shared-prefix 4k --lora 4:r16\n"
           "gpusizer fit llama-3.1-70b rtx-4090 --weights q4_k_m --engine llama.cpp --offload auto\n"
           "gpusizer fit gemma-3-27b h100 --context 16k --images 2 --image-size 1024x768\n"
           "gpusizer fit ./my-checkpoint/ l40s --engine llama.cpp --json\n"
           "gpusizer fit llama-3.1-8b rtx-4090:memory=48GB\ngpusizer fit llama-3.1-8b h100-sxm:mig=3g.40gb\n"
           "gpusizer fit llama-3.1-8b my-card --gpu-file my-gpus.toml",
    "gpus": "gpusizer gpus\ngpusizer gpus --json",
    "systems": "gpusizer systems\ngpusizer fit deepseek-r1 gb300-nvl72",
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
    parser.add_argument("--version", action="version", version=f"gpusizer {version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    fit = commands.add_parser("fit", help="does MODEL fit on GPU, and with how much headroom", **help_options("fit"))
    fit.add_argument("model", help="catalogue id (gpusizer models), a path to a config.json / checkpoint folder, "
                     "or a Hugging Face repo id ORG/NAME[@REVISION] in the local cache (never downloaded)")
    fit.add_argument("gpu", help="catalogue id or alias (gpusizer gpus), or a system id such as hgx-h200-8x")
    fit.add_argument("--weights", help=f"weight precision: {', '.join(precision.names())}; awq and gptq are int4 "
                     "(default: checkpoint)")
    fit.add_argument("--kv-cache", type=common.kv_cache, help=f"KV-cache dtype: {common.KV_CACHE_HELP} "
                     "(default: model activation dtype)")
    fit.add_argument("--context", type=common.tokens, default=None,
                     help="tokens per sequence, e.g. 32k (default 8k, or the model's maximum if shorter)")
    fit.add_argument("--allow-beyond-max-context", action="store_true",
                     help="accept --context or --prompt past the model's maximum context")
    fit.add_argument("--concurrency", type=common.count, default=1, help="sequences resident at once (default 1)")
    fit.add_argument("--prompt", type=common.positive_tokens, default=None,
                     help="prompt tokens for prefill and TTFT (default context)")
    fit.add_argument("--gpus", type=common.gpu_count, default=None,
                     help=f"GPUs to split the model over (default 1 or the system's; at most {common.MAX_GPUS})")
    fit.add_argument("--layout", default=None, help="how the GPUs share the model: tp, pp, ep, layer, or degrees "
                     "such as tp2xpp2, tp8+ep8, tp4xdp2; a layout engines refuse is refused (default: the best "
                     "valid layout, as gpusizer layouts ranks them, and the output says which)")
    fit.add_argument("--engine", default="vllm", help=f"memory profile: {', '.join(engines.ENGINES)}")
    fit.add_argument("--json", action="store_true", help="machine-readable output (sizes in bytes)")
    fit.add_argument("--calibration", type=Path, help="your calibration (gpusizer calibrate ... -o my.toml)")
    speculating.add_arguments(fit)
    prefixing.add_arguments(fit)
    imaging.add_arguments(fit)
    adapting.add_arguments(fit)
    offloading.add_arguments(fit)
    fit.set_defaults(handler=_fit)

    for name, what, handler in (("gpus", "accelerators and systems", _gpus), ("systems", "multi-GPU systems",
                                                                             _systems), ("models", "models", _models)):
        listing = commands.add_parser(name, help=f"list the catalogue's {what}", **help_options(name))
        listing.add_argument("--json", action="store_true", help="machine-readable output")
        listing.set_defaults(handler=handler)
    for module in COMMANDS:
        importlib.import_module(module).register(commands)
    for sub in {id(p): p for p in commands.choices.values()}.values():  # your own hardware, every command once
        sub.add_argument("--gpu-file", type=Path, default=None, help="your own GPUs: a TOML file of [[gpu]] tables "
                         "in the schema of data/gpus.toml; their ids work as GPU arguments (GPU:field=value and "
                         "GPU:mig=3g.40gb work without a file)")
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
    "gpusizer.commands.curve",
    "gpusizer.commands.compare",
    "gpusizer.commands.cost",
    "gpusizer.commands.disaggregation",
    "gpusizer.commands.serve",
    "gpusizer.commands.from_cmd",
)


def parser() -> argparse.ArgumentParser:
    """The ``gpusizer`` argument parser (``gpusizer serve`` answers each request through it)."""
    return _parser()


def version() -> str:
    """The installed gpusizer's version (package metadata), or ``unknown`` when it is not installed."""
    from importlib import metadata

    try:
        return metadata.version("gpusizer")
    except metadata.PackageNotFoundError:
        return "unknown"


def _bytes(value: float) -> int:
    return round(value)


def fit_json(result: Estimate) -> dict[str, Any]:
    """The ``--json`` contract of ``gpusizer fit``: per GPU, sizes as integers in bytes, and the engine's
    own accounting under its own names (``engine_memory``)."""
    data = result.to_dict()
    data["memory"] = {key: _bytes(value) for key, value in data["memory"].items()}
    for key in ("kv_pool_bytes", "kv_pool_deficit_bytes", "host_weights_bytes"):
        data[key] = _bytes(data[key])
    data["engine_memory"] = engine_memory(result)
    return data


def stored_weights_json(record: catalog.Model, result: Estimate) -> dict[str, Any] | None:
    """``fit --json``'s ``stored_weights``: the bytes the model's files store (a GGUF file's tensors, or those
    of a safetensors checkpoint that serving loads) by part and by ggml or safetensors type (the quant mix,
    largest first), whether the estimate sized them (``used``: at the files' own precisions) and the files
    (``source``, the record's last); None for a model without them."""
    stored = record.stored_weights
    if stored is None:
        return None
    parts = {f"{part}_bytes": _bytes(getattr(stored, part)) for part in ("layers", "experts", "embedding", "head")}
    used = precision.stored_applies(record, result.weights, result.expert_weights, None)
    return {"total_bytes": sum(parts.values()), **parts, "replicated_bytes": _bytes(stored.replicated),
            "bytes_by_type": dict(stored.by_type), "used": used, "source": record.source[-1]}


def stored_weights_text(data: dict[str, Any]) -> str:
    """One line of ``fit``'s text: the stored bytes and the quant mix of ``stored_weights_json``."""
    from gpusizer.display import format_bytes

    total = data["total_bytes"]
    unit = "GB" if total >= GB else "MB"
    mix = ", ".join(f"{name} {format_bytes(size, unit)} ({size / total:.1%})"
                    for name, size in data["bytes_by_type"].items())
    how = "sized as stored" if data["used"] else "not used: --weights sizes another precision"
    return f"stored weights  {total:,} B = {format_bytes(total, unit)} ({how}): {mix}"


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
    "trtllm-engine": (  # tllmRuntime.cpp "Allocated ... for execution context memory", then the KV line
        ("total_gpu_memory_bytes", "capacity"), ("weights_bytes", "weights"),
        ("execution_context_memory_bytes", "activation"), ("kv_cache_memory_bytes", "pool"),
        ("max_tokens_in_paged_kv_cache", "pool_tokens"),
    ),
    "llama.cpp": (  # llama_model_load "model buffer size" (the GPU's, and "CPU_Mapped model buffer size": the
        # token embedding in host memory), llama_kv_cache "size", "compute buffer size"
        ("model_buffer_bytes", "weights"), ("cpu_mapped_model_buffer_bytes", "host_weights"),
        ("kv_cache_buffer_bytes", "kv_cache"), ("compute_buffer_bytes", "activation"),
    ),
}


#: Each engine's own name for its memory fraction (vLLM ``--gpu-memory-utilization``, SGLang
#: ``--mem-fraction-static``, TensorRT-LLM ``KvCacheConfig.free_gpu_memory_fraction``).
_FRACTION_NAMES = {"vllm": "gpu_memory_utilization", "sglang": "mem_fraction_static",
                   "trtllm": "free_gpu_memory_fraction", "trtllm-engine": "free_gpu_memory_fraction"}


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
        "pool_tokens": result.kv_pool_tokens, "kv_cache": m.kv_cache_bytes, "host_weights": result.host_weights_bytes,
    }
    terms: dict[str, Any] = {name: _bytes(numbers[key]) for name, key in _ENGINE_TERMS.get(profile.name, ())}
    if profile.name == "vllm":  # "Maximum concurrency for N tokens per request: X x": pool tokens over N
        terms["max_concurrency"] = round(result.kv_pool_tokens / result.context, 2)
    fraction = float(result.memory_fraction)  # in force: SGLang's default follows the GPU and the layout
    if profile.name in _FRACTION_NAMES:
        terms[_FRACTION_NAMES[profile.name]] = fraction
    return {"engine": profile.name, "memory_fraction": fraction, **terms}


def fit_text(result: Estimate, device: catalog.GPU, record: catalog.Model, layout_note: str = "given") -> str:
    """``fit``'s readable breakdown and one-line verdict: ``display.estimate_text``, which ``print(estimate)``
    shows too; ``layout_note`` says how the layout was chosen (``choose_layout``)."""
    from gpusizer import display

    return display.estimate_text(result, device=device, record=record, layout_note=layout_note)


def _gpu_rows() -> list[dict[str, Any]]:
    from gpusizer import cost

    table = cost.prices()
    return [
        {
            "id": g.id,
            "name": g.name,
            "memory_bytes": _bytes(g.memory),
            "memory_reported_bytes": None if g.memory_usable is None else _bytes(g.memory_usable),
            "memory_bandwidth_bytes_per_second": _bytes(g.memory_bandwidth),
            "bf16_flops": g.dense.bf16,
            "fp8_flops": g.dense.fp8,
            "fp4_flops": g.dense.fp4,
            "tdp_watts": g.tdp,
            **_rent(table.get(g.id)),
        }
        for g in catalog.gpus()
    ]


def _rent(record: Any) -> dict[str, Any]:
    """Typical rental price of a GPU in the first currency it is quoted in (US dollars when it has them; another
    currency is shown as quoted, never converted), or None."""
    if record is None:
        return {"rent_per_hour": None, "rent_currency": None}
    code = record.currencies[0]
    return {"rent_per_hour": record.figure("typical", code), "rent_currency": code}


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
    ("id", "id", "", 1), ("name", "name", "", 1), ("memory_bytes", "GB listed", ".0f", GB),
    ("memory_reported_bytes", "GiB reported", ".2f", GiB),
    ("memory_bandwidth_bytes_per_second", "TB/s", ".2f", 1e12), ("bf16_flops", "bf16 TFLOP/s", ".0f", 1e12),
    ("fp8_flops", "fp8 TFLOP/s", ".0f", 1e12), ("fp4_flops", "fp4 TFLOP/s", ".0f", 1e12),
    ("tdp_watts", "TDP W", ".0f", 1), ("rent", "rent/h", "", 1),
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
    ``gpusizer: error: ...``, naming the argument. Warnings of the library are formatted lines on stderr,
    ``gpusizer: warning: ...``, never Python's ``UserWarning`` with a source path.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        status = _main(argv)
    for message in dict.fromkeys(str(w.message) for w in caught):
        print(f"gpusizer: warning: {' '.join(message.split())}", file=sys.stderr)
    return status


def _main(argv: Sequence[str] | None) -> int:
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
    gpu_file = getattr(args, "gpu_file", None)
    with catalog.using_gpus(None if gpu_file is None else common.input_file(gpu_file, "--gpu-file")):
        with bars.on_terminal():
            text = args.handler(args)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    return 0


def _fit(args: argparse.Namespace) -> str:
    record, read = model_argument.resolve_model(args.model)
    checkpoint = checkpointing.summary(record, read)
    context = common.default_context(record, args.context)
    common.check_context(record, context, args.prompt, args.allow_beyond_max_context)
    options = dict(weights=args.weights, kv_cache=args.kv_cache, context=context, concurrency=args.concurrency,
                   prompt=args.prompt, engine=args.engine, calibration=_calibration(args.calibration))
    layout, note = common.choose_layout(record, args.gpu, args.gpus, args.layout, options)
    speculative = speculating.speculative(args)
    result = estimate(record, args.gpu, gpus=args.gpus, layout=layout, speculative=speculative,
                      prefix=prefixing.prefix(args), lora=adapting.lora(args), offload=offloading.offload(args),
                      images=imaging.images(args), **options)
    stored = stored_weights_json(record, result)
    if args.json:
        data = {"schema_version": common.SCHEMA_VERSION, **fit_json(result), "layout_choice": note}
        if stored is not None:
            data["stored_weights"] = stored
        if result.speculation is not None:
            data["speculation"].update(speculating.accepted_token_cost(result))
        if checkpoint is not None:
            data["checkpoint"] = checkpoint
        return common.json_text(data)
    text = fit_text(result, catalog.gpu(result.gpu), record, layout_note=note)
    if checkpoint is not None:
        text = f"{text}\n{checkpointing.text(checkpoint)}"
    parts = ((result.speculation, speculating.text), (result.prefix_cache, prefixing.text),
             (result.lora, adapting.text), (result.offload, offloading.text), (result.images, imaging.text))
    lines = [stored_weights_text(stored)] if stored is not None else []
    return "\n".join([text, *lines, *(show(result) for value, show in parts if value is not None)])


def _calibration(path: Path | None) -> Any:
    """The calibration file of ``--calibration``, or None."""
    if path is None:
        return None
    from gpusizer import calibration

    return calibration.load(common.input_file(path, "--calibration"))


def _gpus(args: argparse.Namespace) -> str:
    rows = _gpu_rows()
    if args.json:
        return common.json_text(rows)
    for row in rows:
        row["rent"] = None if row["rent_per_hour"] is None else f"{row['rent_per_hour']:.2f} {row['rent_currency']}"
    return (f"{_table(rows, GPU_COLUMNS)}\n\n{MEMORY_NOTE}\n\nsystems (a system id stands for its GPUs wherever "
            f"a GPU is asked for):\n{_table(_system_rows(), SYSTEM_COLUMNS)}")


#: What the two memory columns of ``gpusizer gpus`` are.
MEMORY_NOTE = ("GB listed: the vendor's figure (10^9 bytes as sold); GiB reported: the total the driver reports "
               "(nvidia-smi, torch.cuda.mem_get_info; 2^30 bytes), the capacity engines size against, '-' where "
               "the catalogue has none (the listed figure is used). rent/h: the typical rental price of "
               "data/prices.toml in its currency (a price in another currency than USD is never converted, and "
               "no cost figure uses it), '-' where none is bundled.")


def _system_rows() -> list[dict[str, Any]]:
    return [
        {"id": s.id, "name": s.name, "gpu": s.gpu, "gpu_count": s.gpu_count,
         "total_memory_bytes": None if s.total_memory is None else _bytes(s.total_memory),
         "scale_up_fabric": s.scale_up_fabric, "status": s.status}
        for s in catalog.systems()
    ]


SYSTEM_COLUMNS: list[Column] = [
    ("id", "id", "", 1), ("gpu_count", "GPUs", "d", 1), ("gpu", "gpu", "", 1),
    ("total_memory_bytes", "GB listed", ".0f", GB), ("scale_up_fabric", "scale-up", "", 1), ("name", "name", "", 1),
]


def _systems(args: argparse.Namespace) -> str:
    rows = _system_rows()
    return common.json_text(rows) if args.json else _table(rows, SYSTEM_COLUMNS)


def _models(args: argparse.Namespace) -> str:
    rows = _model_rows()
    return common.json_text(rows) if args.json else _table(rows, MODEL_COLUMNS)


if __name__ == "__main__":
    sys.exit(main())
