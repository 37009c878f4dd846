"""``gpusizer disagg MODEL GPU``: disaggregated prefill and decode (xPyD), against the aggregated deployment.

    gpusizer disagg llama-3.1-8b h100 --pd 1p3d --kv-link rdma-400g --prompt 2k --output-tokens 256 --rate 4 \\
        --ttft-p95 1s --tpot-p95 30ms
    gpusizer disagg llama-3.1-70b h100 --prefill-layout tp4 --decode-layout tp4 --search-ratio --rate 2 \\
        --ttft-p95 2s --tpot-p95 50ms --json

Readable by default; ``--json`` gives every figure. Argument parsing and output only: the numbers come from
``gpusizer.serving.disaggregated`` and ``disaggregation_ratio`` (docs/disaggregation.md).
"""

from __future__ import annotations

import argparse
import math
import re
from typing import Any

from gpusizer import engines, parallel
from gpusizer.commands import common, model_argument
from gpusizer.commands.common import CommandError

__all__ = ["register", "text"]

EXAMPLES = (
    "gpusizer disagg llama-3.1-8b h100 --pd 1p3d --kv-link rdma-400g --prompt 2k --output-tokens 256 --rate 4 "
    "--ttft-p95 1s --tpot-p95 30ms\n"
    "gpusizer disagg llama-3.1-8b h100 --pd 2p2d --kv-link nvlink --layerwise --prompt 8k --rate 2 --ttft-p95 2s\n"
    "gpusizer disagg llama-3.1-70b h100 --prefill-layout tp4 --decode-layout tp4 --search-ratio --rate 2 "
    "--ttft-p95 2s --tpot-p95 50ms --json"
)
_PD = re.compile(r"^(\d+)p(\d+)d$")


def _pd(text: str) -> tuple[int, int]:
    match = _PD.match(text.strip().lower())
    if not match or int(match[1]) < 1 or int(match[2]) < 1:
        raise argparse.ArgumentTypeError(f"expected xPyD such as 1p3d (x prefill, y decode instances), got {text!r}")
    return int(match[1]), int(match[2])


def register(commands: Any) -> None:
    """Add the ``disagg`` subcommand to ``gpusizer``'s subparsers."""
    parser = commands.add_parser(
        "disagg", help="disaggregated prefill/decode (xPyD): TTFT with the KV transfer, TPOT, capacity, ratio",
        description="Serve MODEL on GPU with x prefill and y decode instances (vLLM/SGLang/Dynamo PD "
        "disaggregation): the KV cache of each prompt crosses --kv-link; TTFT = prefill queue + prefill + "
        "transfer + first decode step, TPOT from the decode pool; the largest rate within the targets, each "
        "pool's own limit, and the aggregated deployment on the same GPUs. docs/disaggregation.md.",
        **common.help_options(EXAMPLES),
    )
    parser.add_argument("model", help="catalogue id (gpusizer models), a path to a config.json / checkpoint folder, "
                        "or a Hugging Face repo id ORG/NAME[@REVISION] in the local cache (never downloaded)")
    parser.add_argument("gpu", help="catalogue id or alias (gpusizer gpus), or a system id such as hgx-h200-8x")
    parser.add_argument("--prompt", type=common.positive_tokens, default=1024, help="mean prompt tokens (default 1k)")
    parser.add_argument("--output-tokens", dest="output", type=common.positive_tokens, default=256,
                        help="mean output tokens, first token included (default 256)")
    parser.add_argument("--rate", type=common.positive_number, default=1.0,
                        help="requests per second to the whole system (default 1)")
    common.add_service_arguments(parser)
    parser.add_argument("--pd", type=_pd, default=(1, 1), help="xPyD: x prefill and y decode instances (default 1p1d)")
    parser.add_argument("--prefill-layout", default="tp1", help="one prefill instance's split (default tp1)")
    parser.add_argument("--decode-layout", default="tp1", help="one decode instance's split (default tp1); the "
                        "aggregated comparison uses replicas of it")
    parser.add_argument("--kv-link", default="auto", help="link of the KV transfer: auto (the scale-out NIC, "
                        "400 Gb/s ConnectX-7 unless the system says), nvlink, intra-node, rdma-400g, rdma-800g, "
                        "ib-<N>g, or a bandwidth such as 50GB/s")
    parser.add_argument("--kv-link-latency", type=common.duration, default=None,
                        help="latency of one KV send, e.g. 20us (default: the link class's)")
    parser.add_argument("--layerwise", action="store_true",
                        help="send each layer's KV while later layers prefill (Mooncake/LMCache layer-wise)")
    parser.add_argument("--search-ratio", action="store_true", help="the fewest GPUs x*g_P + y*g_D that meet "
                        "the targets at --rate (searched up to --max-instances per pool), then report it")
    parser.add_argument("--max-instances", type=common.count, default=16,
                        help="bound of --search-ratio per pool (default 16)")
    parser.add_argument("--no-compare", action="store_true", help="skip the aggregated deployment")
    parser.add_argument("--engine", default="vllm", help=f"engine profile: {', '.join(engines.ENGINES)}")
    parser.add_argument("--max-seqs", type=common.count, default=None,
                        help="sequences one instance runs at once (default: the engine profile's max_num_seqs)")
    parser.add_argument("--max-batched-tokens", type=common.positive_tokens, default=None,
                        help="token budget of one step (default: the engine profile's max_num_batched_tokens)")
    parser.add_argument("--weights", help="weight precision (default: checkpoint)")
    parser.add_argument("--kv-cache", help="KV-cache dtype (default: model activation dtype)")
    parser.add_argument("--json", action="store_true", help="every figure as strict JSON")
    parser.set_defaults(handler=_handler)


def _handler(args: argparse.Namespace) -> str:
    from gpusizer.serving import disaggregated, disaggregation_ratio, kv_link

    record = model_argument.model(args.model)
    workload, slo = common.service(args, args.rate)
    link = kv_link(args.kv_link, args.gpu, latency=args.kv_link_latency)
    caps = {name: value for name, value in (("max_sequences", args.max_seqs), ("batched_tokens",
                                                                              args.max_batched_tokens))
            if value is not None}
    engine = engines.engine(args.engine).model_copy(update=caps) if caps else args.engine
    options = dict(prefill_layout=args.prefill_layout, decode_layout=args.decode_layout, link=link,
                   layerwise=args.layerwise, engine=engine, weights=args.weights, kv_cache=args.kv_cache)
    x, y = args.pd
    ratio = None
    if args.search_ratio:
        if slo is None:
            raise CommandError("--search-ratio needs a target (--ttft-p95, --tpot-p95 or --e2e-p95)")
        ratio = disaggregation_ratio(record, args.gpu, workload=workload, slo=slo, max_instances=args.max_instances,
                                     **options)
        if ratio.feasible:
            x, y = ratio.prefill_instances, ratio.decode_instances
    gp, gd = (parallel.layout(layout).gpus for layout in (args.prefill_layout, args.decode_layout))
    result = disaggregated(record, args.gpu, workload=workload, slo=slo, prefill_gpus=x * gp, decode_gpus=y * gd,
                           compare=not args.no_compare, **options)
    if args.json:
        data = {"schema_version": common.SCHEMA_VERSION, **result.to_dict(),
                "ratio_search": None if ratio is None else _plain(ratio)}
        return common.json_text(data)
    lines = [text(result)]
    if ratio is not None:
        lines.insert(0, f"ratio search (up to {args.max_instances} instances per pool): " + (
            f"{ratio.name}, {ratio.gpus} GPUs, the fewest that meet the targets at {args.rate:g} req/s"
            if ratio.feasible else f"no xPyD within the bound meets the targets; showing {x}p{y}d"))
    return "\n".join(lines)


def _plain(record: Any) -> dict[str, Any]:
    """A dataclass as a plain dict."""
    from dataclasses import asdict

    from gpusizer import checks

    return dict(checks.plain(asdict(record)))


def _ms(value: float) -> str:
    return "-" if not math.isfinite(value) else f"{value * 1e3:,.1f} ms"


def _rate(value: float | None) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:,.3g}"


def text(result: Any) -> str:
    """The readable answer: pools, transfer, latencies at the rate, capacity and the aggregated comparison."""
    w, t, p, d = result.workload, result.transfer, result.prefill, result.decode
    lines = [
        f"{result.model} on {result.gpus} x {result.gpu}, {result.name}: {p.instances} x {p.layout} prefill + "
        f"{d.instances} x {d.layout} decode ({result.engine}, weights {result.weights}, KV {result.kv_cache}); "
        f"{w.prompt_tokens:,.0f} prompt + {w.output_tokens:,.0f} output tokens at {w.rate:g} req/s",
        f"KV transfer  {t.bytes_per_gpu / 2**20:,.1f} MiB per GPU over {t.link.name} ({t.link.kind}, "
        f"{t.link.bandwidth / 1e9:,.1f} of {t.link.bandwidth_ceiling / 1e9:,.1f} GB/s): {_ms(t.seconds)}, "
        f"{_ms(t.exposed_seconds)} exposed{' (layer-wise)' if t.layerwise else ''}; link busy "
        f"{t.utilisation:.0%}",
    ]
    for pool in (p, d):
        limit = f"within its share of the SLO up to {_rate(pool.max_rate)} req/s ({pool.binding})" \
            if pool.max_rate is not None else pool.binding
        batch = f", batch {pool.batch:,.1f}" if pool.role == "decode" else ""
        lines.append(f"{pool.role:<7}      {pool.instances} x {pool.layout}, {pool.rate_per_instance:.3g} req/s "
                     f"each, busy {pool.utilisation:.0%}{batch}; {limit}")
    state = "" if result.stable else f"; UNSTABLE: {result.limit} saturates"
    lines.append(f"at {w.rate:g} req/s  TTFT p50/p95/p99 {_ms(result.ttft.p50)} / {_ms(result.ttft.p95)} / "
                 f"{_ms(result.ttft.p99)} (ceiling p50 {_ms(result.ttft_ceiling.p50)}), TPOT {_ms(result.tpot.p50)} / "
                 f"{_ms(result.tpot.p95)} / {_ms(result.tpot.p99)} (ceiling p50 {_ms(result.tpot_ceiling.p50)})"
                 f"{state}")
    if result.capacity is not None:
        lines.append(f"within SLO   {_rate(result.capacity)} req/s ({_rate(result.tokens_per_second_per_gpu)} output "
                     f"tok/s per GPU), ceiling {_rate(result.capacity_ceiling)} req/s; limited by "
                     f"{result.capacity_binding}")
    a = result.aggregated
    if a is not None:
        by = "" if a.speedup is None else f" ({a.speedup:.2f}x the aggregated rate)"
        lines.append(f"aggregated   {a.layout} on {a.gpus} GPUs: {_rate(a.requests_per_second)} req/s within the "
                     f"SLO (ceiling {_rate(a.requests_per_second_ceiling)}); {a.winner} wins{by}")
    return "\n".join(lines)
