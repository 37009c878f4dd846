"""``gpusizer layouts MODEL GPU --gpus N``: the ways to split a model over N GPUs that fit, best first.

    gpusizer layouts llama-3.1-70b h100 --gpus 8 --weights fp8
    gpusizer layouts deepseek-r1 hgx-h200-8x --objective throughput --context 16k
    gpusizer layouts kimi-k2 gb200-nvl72 --json

Argument parsing and output only: the ranking comes from ``gpusizer.layouts.best_layout``.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any

from gpusizer import engines
from gpusizer.commands import common, model_argument

__all__ = ["register", "text"]

EXAMPLES = (
    "gpusizer layouts llama-3.1-70b h100 --gpus 8 --weights fp8\n"
    "gpusizer layouts deepseek-r1 hgx-h200-8x --objective throughput --context 16k\n"
    "gpusizer layouts llama-3.1-70b rtx-4090 --gpus 4 --weights q4_k_m --engine llama.cpp --json"
)


def register(commands: Any) -> None:
    """Add the ``layouts`` subcommand to ``gpusizer``'s subparsers."""
    parser = commands.add_parser(
        "layouts", help="rank the layouts (tp, pp, ep, dp and their mixes) of MODEL on N GPUs that fit",
        **common.help_options(EXAMPLES),
    )
    parser.add_argument("model", help="catalogue id (gpusizer models), a path to a config.json / checkpoint folder, "
                        "or a Hugging Face repo id ORG/NAME[@REVISION] in the local cache (never downloaded)")
    parser.add_argument("gpu", help="catalogue id or alias, or a system id such as hgx-h200-8x or gb200-nvl72")
    parser.add_argument("--gpus", type=common.gpu_count, default=None,
                        help=f"GPUs to split the model over (default 1 or the system's; at most {common.MAX_GPUS})")
    parser.add_argument("--objective", choices=("latency", "throughput"), default="latency",
                        help="latency: per-user decode rate; throughput: all users with the KV pools full")
    parser.add_argument("--weights", help="weight precision (default: checkpoint)")
    parser.add_argument("--kv-cache", help="KV-cache dtype (default: model activation dtype)")
    parser.add_argument("--context", type=common.tokens, default=None,
                        help="tokens per sequence, e.g. 32k (default 8k, or the model's maximum if shorter)")
    parser.add_argument("--allow-beyond-max-context", action="store_true",
                        help="accept a --context past the model's maximum context")
    parser.add_argument("--concurrency", type=common.count, default=1, help="sequences decoded together (default 1)")
    parser.add_argument("--engine", default="vllm", help=f"engine: {', '.join(engines.ENGINES)}")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(handler=_handler)


def _handler(args: argparse.Namespace) -> str:
    from gpusizer import layouts

    record = model_argument.model(args.model)
    context = common.default_context(record, args.context)
    common.check_context(record, context, None, args.allow_beyond_max_context)
    choices = layouts.best_layout(
        record, args.gpu, args.gpus, objective=args.objective, weights=args.weights,
        kv_cache=args.kv_cache, context=context, concurrency=args.concurrency, engine=args.engine,
    )
    if args.json:
        return common.json_text([asdict(c) for c in choices])
    return text(choices, args.objective)


def text(choices: list[Any], objective: str = "latency") -> str:
    """Numbered lines, best first, each with its reason; a sentence when nothing fits."""
    if not choices:
        return "No layout fits: add GPUs, quantize the weights or the KV cache, or shorten the context."
    unit = "tok/s per user" if objective == "latency" else "tok/s, all users"
    width = max(len(c.layout) for c in choices)
    lines = [f"Layouts that fit, best {objective} first ({unit}):", ""]
    for rank, c in enumerate(choices, 1):
        lines.append(f"{rank:3d}. {c.layout.ljust(width)}  {c.why}")
    return "\n".join(lines)
