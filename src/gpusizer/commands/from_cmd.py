"""``gpusizer from-cmd --gpu GPU -- ENGINE COMMAND``: size the command line you are about to run.

    gpusizer from-cmd --gpu h100 -- vllm serve Qwen/Qwen3-8B --max-model-len 32768 --gpu-memory-utilization 0.9
    gpusizer from-cmd --gpu rtx-4090 -- llama-server -m Llama-3.1-8B-Instruct-Q4_K_M.gguf -c 32768 -np 4
    gpusizer from-cmd --gpu h100 --json "python -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 2"

gpusizer's own options come before ``--``; everything after it is the engine's command line, read with
``gpusizer.commandline.parse`` (never executed; one quoted string is split like a shell would) and
predicted with ``gpusizer.commandline.predict``. Parsing and output only.
"""

from __future__ import annotations

import argparse
from typing import Any

from gpusizer import commandline, engines
from gpusizer.commands import common, model_argument
from gpusizer.commands.common import number_text as _number

__all__ = ["json_data", "register", "text"]

EXAMPLES = (
    "gpusizer from-cmd --gpu h100 -- vllm serve Qwen/Qwen3-235B-A22B-FP8 --tensor-parallel-size 4 "
    "--max-model-len 32768 --kv-cache-dtype fp8 --max-num-seqs 256\n"
    "gpusizer from-cmd --gpu rtx-4090 -- llama-server -m Llama-3.1-8B-Instruct-Q4_K_M.gguf -c 32768 -np 4 -ngl 99\n"
    "gpusizer from-cmd --gpu h100 -- python -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 2 "
    "--context-length 32768\n"
    "gpusizer from-cmd --gpu h100 --json -- trtllm-serve meta-llama/Llama-3.1-8B-Instruct --max_seq_len 8192"
)
ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM", "llama.cpp": "llama.cpp"}


def register(commands: Any) -> None:
    """Add the ``from-cmd`` subcommand to ``gpusizer``'s subparsers."""
    parser = commands.add_parser(
        "from-cmd", help="predict what an engine command line (vllm serve, llama-server, ...) will log at startup",
        **common.help_options(EXAMPLES),
    )
    parser.add_argument("--gpu", required=True, help="the GPU the command will run on: catalogue id or alias, "
                        "or a system id such as hgx-h200-8x")
    parser.add_argument("--gpus", type=common.gpu_count, default=None,
                        help="GPUs llama-server sees (default 1 or the system's); the other engines take theirs "
                        "from the command (tensor x pipeline x data parallel)")
    parser.add_argument("--model", default=None, help="catalogue id or config path to size instead of the "
                        "command's model (default: the command's, matched to the catalogue by its name)")
    parser.add_argument("--prompt", type=common.positive_tokens, default=None,
                        help="prompt tokens of the TTFT (default: the command's context)")
    parser.add_argument("--json", action="store_true", help="machine-readable output (sizes in bytes)")
    parser.add_argument("engine_command", nargs=argparse.REMAINDER,
                        help="the engine command line, after --, or as one quoted string")
    parser.set_defaults(handler=_handler)


def _argv(words: list[str]) -> str | list[str]:
    words = words[1:] if words[:1] == ["--"] else words
    if not words:
        raise common.CommandError("command: give the engine command line after --, e.g. "
                                  "gpusizer from-cmd --gpu h100 -- vllm serve MODEL")
    return words[0] if len(words) == 1 else words


def _handler(args: argparse.Namespace) -> str:
    command = commandline.parse(_argv(args.engine_command))
    record = None if args.model is None else model_argument.model(args.model, "--model")
    prediction = commandline.predict(command, args.gpu, model=record, gpus=args.gpus, prompt=args.prompt)
    return common.json_text(json_data(prediction)) if args.json else text(prediction)


def _changed(profile: engines.EngineProfile) -> dict[str, Any]:
    base = engines.engine(profile.name)
    return {k: v for k, v in profile.model_dump().items() if k != "source" and getattr(base, k) != v}


def json_data(p: commandline.Prediction) -> dict[str, Any]:
    """The ``--json`` contract of ``from-cmd``: sizes in bytes, rates in tokens per second, times in seconds."""
    e, busy, kwargs = p.estimate, p.busy, p.inputs
    inputs = {k: v for k, v in kwargs.items() if k not in ("engine", "offload")}
    inputs["engine_profile"] = _changed(kwargs["engine"])
    inputs["offload"] = None if kwargs.get("offload") is None else vars(kwargs["offload"])
    return {
        "schema_version": common.SCHEMA_VERSION,
        "engine": p.command.engine,
        "profile": kwargs["engine"].name,
        "command_model": p.command.model,
        "model": e.model,
        "gpu": e.gpu,
        "gpus": e.gpus,
        "layout": e.parallel.layout if e.parallel else None,
        "settings": p.command.settings,
        "defaults": p.command.defaults,
        "flags": list(p.command.flags),
        "ignored_flags": list(p.command.ignored_flags),
        "unknown_flags": list(p.command.unknown_flags),
        "environment": list(p.command.environment),
        "inputs": inputs,
        "startup": {**p.startup, "kv_cache_bytes": round(p.startup["kv_cache_bytes"])},
        "log_lines": list(p.lines),
        "weights_bytes_per_gpu": round(float(e.memory.weights_bytes)),
        "speed": p.speed,
        "busy": None if busy is None else {
            "concurrency": int(busy.concurrency),
            "aggregate_tokens_per_second": float(busy.decode.expected_aggregate_tokens_per_second),
            "per_user_tokens_per_second": float(busy.decode.expected_tokens_per_second)},
    }


def text(p: commandline.Prediction) -> str:
    """The human-readable answer: the mapping, the predicted log lines, the speed, and every flag not read."""
    e, cmd = p.estimate, p.command
    name = ENGINE_NAMES[cmd.engine]
    precision = f"weights {e.weights}, KV {e.kv_cache}"
    profile = p.inputs["engine"].name
    runtime = "" if profile == cmd.engine else f" (engine profile {profile})"
    layout = e.parallel.layout if e.parallel else ""
    lines = [f"{name} command{runtime}: {cmd.model} -> {e.model} ({precision}), {layout} on {e.gpus} x {e.gpu_name}",
             f"context {int(p.inputs['context']):,} tokens x {int(p.inputs['concurrency'])} sequence(s) sized; "
             f"engine settings: {', '.join(cmd.flags) or 'all defaults'}",
             f"{name} will log at startup (predicted):"]
    lines += [f"  {line}" for line in p.lines]
    v = p.speed
    band = "" if v["decode_p10"] is None else f"p10-p90 {_number(v['decode_p10'])}-{_number(v['decode_p90'])}; "
    ttft = "" if v["ttft_expected"] is None else (f", TTFT {_number(v['ttft_expected'], 2)} s for a "
                                                  f"{v['prompt']:,}-token prompt")
    offloaded = " with the offload" if e.offload is not None else ""
    lines.append(f"speed{offloaded}: decode {_number(v['decode_expected'])} tok/s per user ({band}ceiling "
                 f"{_number(v['decode_ceiling'])}){ttft}")
    if p.busy is not None:
        lines.append(f"with the pool full ({int(p.busy.concurrency)} sequences): "
                     f"{_number(p.busy.decode.expected_aggregate_tokens_per_second, 0)} tok/s aggregate, "
                     f"{_number(p.busy.decode.expected_tokens_per_second)} per user")
    if cmd.ignored_flags:
        lines.append(f"ignored flags (known to {name}, not modelled): {' '.join(cmd.ignored_flags)}")
    if cmd.unknown_flags:
        lines.append(f"unknown flags (not read): {' '.join(cmd.unknown_flags)}")
    if cmd.environment:
        lines.append(f"environment (not read): {' '.join(cmd.environment)}")
    return "\n".join(lines)
