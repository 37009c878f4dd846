"""``gpusizer throughput MODEL GPU``: offline throughput, the largest rate within targets, latencies at a rate.

    gpusizer throughput llama-3.1-8b h100 --prompt 1k --output-tokens 256
    gpusizer throughput llama-2-70b h200 --gpus 8 --layout tp1xdp8 --weights fp8 --engine trtllm \\
        --prompt 1k --output-tokens 256 --rate 30 --ttft-p95 2s --tpot-p95 200ms --quantile 0.99 --json

Readable by default; ``--json`` gives every figure (strict JSON, ``null`` for a figure that is not
finite). Argument parsing and output only: the numbers come from ``gpusizer.serving.throughput``.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from gpusizer import catalog, engines
from gpusizer.commands import common, model_argument
from gpusizer.commands import prefix as prefixing

__all__ = ["register", "text"]

EXAMPLES = (
    "gpusizer throughput llama-3.1-8b h100 --prompt 1k --output-tokens 256\n"
    "gpusizer throughput llama-3.1-8b h100 --prompt 1k --output-tokens 256 --rate 10 --ttft-p95 500ms --tpot-p95 50ms\n"
    "gpusizer throughput llama-2-70b h200 --gpus 8 --layout tp1xdp8 --weights fp8 --engine trtllm --max-seqs 806 "
    "--rate 30 --ttft-p95 2s --tpot-p95 200ms --quantile 0.99 --json\n"
    "gpusizer throughput llama-3.1-8b h100 --prompt 8k --output-tokens 256 --ttft-p95 500ms --prefix-cache 0.8"
)


def register(commands: Any) -> None:
    """Add the ``throughput`` subcommand to ``gpusizer``'s subparsers."""
    parser = commands.add_parser(
        "throughput", help="offline throughput, the largest rate within latency targets, and latencies at a rate",
        description="Serve MODEL on GPU at given prompt and output lengths: output tokens per second of the "
        "saturated engine (offline), the largest request rate whose TTFT/TPOT quantiles meet the targets, and "
        "p50/p95/p99 TTFT and TPOT at --rate; per GPU and for all GPUs (replicas x GPUs per replica).",
        **common.help_options(EXAMPLES),
    )
    parser.add_argument("model", help="catalogue id (gpusizer models), a path to a config.json / checkpoint folder, "
                        "or a Hugging Face repo id ORG/NAME[@REVISION] in the local cache (never downloaded)")
    parser.add_argument("gpu", help="catalogue id or alias (gpusizer gpus), or a system id such as hgx-h200-8x")
    parser.add_argument("--prompt", type=common.positive_tokens, default=1024, help="mean prompt tokens (default 1k)")
    parser.add_argument("--output-tokens", dest="output", type=common.positive_tokens, default=256,
                        help="mean output tokens, first token included (default 256)")
    parser.add_argument("--rate", type=common.positive_number, default=None,
                        help="requests per second to the whole system: report TTFT/TPOT p50/p95/p99 there")
    common.add_service_arguments(parser, "default 0.95; MLPerf Server uses 0.99")
    parser.add_argument("--gpus", type=common.gpu_count, default=None,
                        help=f"all GPUs of the system (default 1 or the system's; at most {common.MAX_GPUS})")
    parser.add_argument("--layout", default=None, help="one replica's split, times replicas: tp (one replica over "
                        "every GPU), tp2xdp4 (four replicas of tp2), pp, tp8+ep8, ...; a layout engines refuse is "
                        "refused (default: the valid layout with the most tokens/s, and the output says which)")
    parser.add_argument("--engine", default="vllm", help=f"engine profile: {', '.join(engines.ENGINES)}")
    parser.add_argument("--weights", help="weight precision (default: checkpoint)")
    parser.add_argument("--kv-cache", help="KV-cache dtype (default: model activation dtype)")
    parser.add_argument("--max-seqs", type=common.count, default=None,
                        help="sequences one replica runs at once (default: the engine profile's max_num_seqs)")
    parser.add_argument("--max-batched-tokens", type=common.positive_tokens, default=None,
                        help="token budget of one step (default: the engine profile's max_num_batched_tokens)")
    parser.add_argument("--simulate", action="store_true",
                        help="expected capacity and latencies by discrete-event simulation (slower)")
    parser.add_argument("--seed", type=common.count, default=None, help="seed of the simulation (default 0)")
    parser.add_argument("--allow-beyond-max-context", action="store_true",
                        help="accept --prompt + --output-tokens past the model's maximum context")
    parser.add_argument("--json", action="store_true", help="every figure as strict JSON")
    prefixing.add_arguments(parser, sessions=True)
    parser.set_defaults(handler=_handler)


def _handler(args: argparse.Namespace) -> str:
    from gpusizer.serving import throughput

    record = model_argument.model(args.model)
    common.check_context(record, args.prompt + args.output, None, args.allow_beyond_max_context)
    workload, slo = common.service(args, args.rate or 1.0)
    workload = prefixing.workload(args, workload)
    options = dict(weights=args.weights, kv_cache=args.kv_cache, context=args.prompt + args.output,
                   engine=args.engine)
    layout, note = common.choose_layout(record, args.gpu, args.gpus, args.layout, options, objective="throughput")
    result = throughput(record, args.gpu, workload=workload, slo=slo, gpus=args.gpus, layout=layout,
                        engine=args.engine, weights=args.weights, kv_cache=args.kv_cache, max_sequences=args.max_seqs,
                        batched_tokens=args.max_batched_tokens, latencies=args.rate is not None,
                        method="simulation" if args.simulate else "closed-form",
                        seed=0 if args.seed is None else args.seed)
    if args.json:
        data = {"schema_version": common.SCHEMA_VERSION, **result.to_dict(), "layout_choice": note}
        if args.rate is None:
            data["workload"]["rate"] = None  # no rate was asked: latency is null
        return common.json_text(data)
    return text(result) if note == "given" else f"layout {note}\n{text(result)}"


def _rate(value: float) -> str:
    return "-" if not math.isfinite(value) else f"{value:,.0f}" if value >= 100 else f"{value:,.3g}"


def _ms(value: float) -> str:
    return "-" if not math.isfinite(value) else f"{value * 1e3:,.0f} ms" if value >= 0.01 else \
        f"{value * 1e3:.2f} ms"


def _name(gpu: str) -> str:
    """A catalogue GPU's name (``H100 SXM``), or ``gpu`` itself for a record the catalogue does not hold."""
    try:
        return catalog.gpu(gpu).name
    except KeyError:
        return gpu


def text(result: Any) -> str:
    """The readable answer: the configuration, then offline, capacity and latency lines."""
    w, o = result.workload, result.offline
    lines = [
        f"{result.model} on {result.gpus} x {_name(result.gpu)}: {result.replicas} x {result.layout} ({result.engine}, "
        f"weights {result.weights}, KV {result.kv_cache}); {w.prompt_tokens:,.0f} prompt + {w.output_tokens:,.0f} "
        f"output tokens ({w.prompt_distribution})",
        f"engine caps per replica: {result.max_sequences:,} sequences, {result.batched_tokens:,} tokens per step, "
        f"KV pool {result.kv_capacity_tokens:,.0f} tokens ({result.max_concurrency:,.0f} sequences of this length)",
        "",
        f"offline      {_rate(o.tokens_per_second)} output tok/s ({_rate(o.tokens_per_second_per_gpu)} per GPU), "
        f"p10-p90 {_rate(o.tokens_per_second_band[0])}-{_rate(o.tokens_per_second_band[1])}, ceiling "
        f"{_rate(o.tokens_per_second_ceiling)}; batch {o.batch:,.0f} per replica ({o.binding}), "
        f"TPOT {_ms(o.tpot_seconds)}, {_rate(o.requests_per_second)} req/s",
    ]
    c = result.capacity
    if c is not None:
        slo = result.slo
        q = f"p{slo.quantile * 100:g}"
        targets = ", ".join(f"{name} {q} <= {_ms(value)}" for name, value in
                            (("TTFT", slo.ttft_p95), ("TPOT", slo.tpot_p95), ("E2E", slo.e2e_p95)) if value is not None)
        lines.append(
            f"within SLO   {_rate(c.requests_per_second)} req/s = {_rate(c.tokens_per_second)} output tok/s "
            f"({_rate(c.tokens_per_second_per_gpu)} per GPU), p10-p90 {_rate(c.requests_per_second_band[0])}-"
            f"{_rate(c.requests_per_second_band[1])} req/s, ceiling {_rate(c.requests_per_second_ceiling)} req/s; "
            f"{targets}; limited by {c.binding} ({c.method})")
    lat = result.latency
    if lat is not None:
        state = "" if lat.stable else f"; UNSTABLE: {lat.limit} saturates, queues grow without bound"
        lines.append(
            f"at {lat.rate:g} req/s  TTFT p50/p95/p99 {_ms(lat.ttft.p50)} / {_ms(lat.ttft.p95)} / {_ms(lat.ttft.p99)}, "
            f"TPOT {_ms(lat.tpot.p50)} / {_ms(lat.tpot.p95)} / {_ms(lat.tpot.p99)} ({lat.method}; ceiling TTFT p50 "
            f"{_ms(lat.ttft_ceiling.p50)}, TPOT p50 {_ms(lat.tpot_ceiling.p50)}); batch {lat.batch:,.0f} per "
            f"replica{state}")
    return "\n".join(lines)
