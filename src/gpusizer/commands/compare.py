"""``gpusizer compare MODEL GPU``: one model on one GPU under several engines, side by side, with the reasons.

    gpusizer compare llama-3.1-8b h100 --context 8k --concurrency 16

Argument parsing and output only: the numbers and the reasons come from ``gpusizer.comparison``.
"""

from __future__ import annotations

import argparse
from typing import Any

from gpusizer import engines
from gpusizer.commands import common, model_argument

__all__ = ["register", "text"]

EXAMPLES = (
    "gpusizer compare llama-3.1-8b h100 --context 8k --concurrency 16\n"
    "gpusizer compare qwen3-30b-a3b rtx-5090 --weights fp8 --engines vllm,llama.cpp --json\n"
    "gpusizer compare llama-3.1-8b rtx-4090:memory=48GB --concurrency 8"
)


def _engines(text: str) -> tuple[str, ...]:
    try:
        names = tuple(dict.fromkeys(engines.engine(n.strip()).name for n in text.split(",") if n.strip()))
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if not names:
        raise argparse.ArgumentTypeError(f"name at least one engine: {', '.join(engines.ENGINES)}")
    return names


def register(commands: Any) -> None:
    """Add the ``compare`` subcommand to ``gpusizer``'s subparsers."""
    parser = commands.add_parser(
        "compare", help="one model on one GPU under several engines: memory rule, KV pool, concurrency, speed",
        description="Size MODEL on GPU under each engine profile side by side: the memory rule and its fraction, "
        "the KV pool, the sequences it holds, the engine's caps and the decode speed, with the reason for each "
        "difference read from the profiles (docs/compare.md).",
        **common.help_options(EXAMPLES),
    )
    parser.add_argument("model", help="catalogue id (gpusizer models), a path to a config.json / checkpoint folder, "
                        "or a Hugging Face repo id ORG/NAME[@REVISION] in the local cache (never downloaded)")
    parser.add_argument("gpu", help="catalogue id or alias, GPU:field=value (rtx-4090:memory=48GB) or GPU:mig=PROFILE")
    parser.add_argument("--engines", type=_engines, default=tuple(engines.ENGINES),
                        help=f"engines to compare, comma-separated, the first the reference (default "
                        f"{','.join(engines.ENGINES)})")
    parser.add_argument("--context", type=common.tokens, default=None, help="tokens per sequence (default 8k)")
    parser.add_argument("--concurrency", type=common.count, default=1, help="sequences decoding together (default 1)")
    parser.add_argument("--prompt", type=common.positive_tokens, default=None, help="prompt tokens for TTFT "
                        "(default context)")
    parser.add_argument("--weights", help="weight precision (default: checkpoint)")
    parser.add_argument("--kv-cache", type=common.kv_cache, help="KV-cache dtype (default: model activation dtype)")
    parser.add_argument("--gpus", type=common.gpu_count, default=None, help="GPUs, tensor parallel (default 1)")
    parser.add_argument("--allow-beyond-max-context", action="store_true",
                        help="accept --context past the model's maximum")
    parser.add_argument("--json", action="store_true", help="machine-readable output (sizes in bytes)")
    parser.set_defaults(handler=_handler)


def _handler(args: argparse.Namespace) -> str:
    from gpusizer import comparison

    record = model_argument.model(args.model)
    context = common.default_context(record, args.context)
    common.check_context(record, context, args.prompt, args.allow_beyond_max_context)
    rows = comparison.compare_engines(record, args.gpu, engine_names=args.engines, context=context,
                                      concurrency=args.concurrency, prompt=args.prompt, weights=args.weights,
                                      kv_cache=args.kv_cache, gpus=args.gpus)
    if args.json:
        return common.json_text({"schema_version": common.SCHEMA_VERSION, "model": record.id, "gpu": args.gpu,
                                 "context": context, "concurrency": args.concurrency,
                                 "engines": comparison.to_dict(rows)})
    return text(rows, f"{record.id} on {args.gpu}, {context:,} tokens per sequence, {args.concurrency} asked")


def text(rows: Any, title: str) -> str:
    """The side-by-side table, then each engine's reasons."""
    gib = 2**30
    table = [("engine", "rule", "fraction", "weights GiB", "other GiB", "KV pool GiB", "KV tokens", "max seqs",
              "cap", "running", "tok/s", "TPOT ms", "TTFT ms", "fits")]
    for r in rows:
        table.append((r.engine, r.kv_rule, f"{r.memory_fraction:g}", f"{r.weights_bytes / gib:.2f}",
                      f"{r.overhead_bytes / gib:.2f}", f"{r.kv_pool_bytes / gib:.2f}", f"{r.kv_pool_tokens:,.0f}",
                      f"{r.max_concurrency:,.0f}", f"{r.max_sequences}", f"{r.concurrency:g}",
                      f"{r.decode_tokens_per_second:,.0f}", f"{r.tpot_seconds * 1e3:.2f}",
                      f"{r.ttft_seconds * 1e3:,.0f}", "yes" if r.fits else "no"))
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    lines = [title, "", *("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in table),
             ""]
    for r in rows:
        lines.append(f"{r.engine}: {r.formula}")
        lines += [f"  - {reason}" for reason in r.reasons]
    return "\n".join(lines)
