"""``gpusizer shortlist``: which configurations serve a traffic within latency targets, cheapest first.

    gpusizer shortlist llama-3.1-70b --prompt 2k --output-tokens 512 --rate 5 --ttft-p95 500ms --tpot-p95 50ms
    gpusizer shortlist qwen3-32b --rate 2 --ttft-p95 1s --price h100-sxm=2.49 --price h200=3.10 --json

Readable by default; ``--json`` and ``--csv`` give every row for tools. Argument parsing and output
only: the numbers come from ``gpusizer.shortlist``.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from gpusizer.commands import common, model_argument
from gpusizer.commands import cost as costing
from gpusizer.commands import images as imaging
from gpusizer.commands import offload as offloading
from gpusizer.commands import prefix as prefixing
from gpusizer.commands import speculative as speculating

__all__ = ["register", "text"]

EXAMPLES = (
    "gpusizer shortlist llama-3.1-70b --prompt 2k --output-tokens 512 --rate 5 --ttft-p95 500ms --tpot-p95 50ms\n"
    "gpusizer shortlist llama-3.1-8b --rate 20 --ttft-p95 300ms --tpot-p95 30ms --gpus rtx-4090,l40s,h100\n"
    "gpusizer shortlist qwen3-32b --rate 2 --ttft-p95 1s --price h100-sxm=2.49 --csv\n"
    "gpusizer shortlist llama-3.1-8b --prompt 8k --output-tokens 256 --rate 4 --ttft-p95 500ms --prefix-cache 0.8\n"
    "gpusizer shortlist llama-3.1-8b --rate 0.05 --ttft-p95 2s --tpot-p95 100ms --engine llama.cpp "
    "--gpus rtx-3090,rtx-4090 --weights q4_k_m,q8_0 --max-gpus 1\n"
    "gpusizer shortlist llama-3.1-70b --rate 0.01 --tpot-p95 1s --engine llama.cpp --gpus rtx-4090,rtx-5090 "
    "--weights q4_k_m --max-gpus 1 --offload auto"
)


def _argument(parse: Any) -> Any:
    def read(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return read


def _price(text: str) -> dict[str, float]:
    out = {}
    for item in (part.strip() for part in text.split(",") if part.strip()):
        name, sep, value = item.rpartition("=")
        if not sep:
            raise ValueError(f"expected GPU=dollars-per-hour such as h100-sxm=2.49, got {item!r}")
        out[name.strip()] = common.positive_number(value)
    return out


def _whole(minimum: int, maximum: int) -> Any:
    def read(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"expected a whole number, got {text!r}") from None
        if not minimum <= value <= maximum:
            raise ValueError(f"must be from {minimum:,} to {maximum:,}, got {text!r}")
        return value

    return read


def _list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def register(commands: Any) -> None:
    """Add the ``shortlist`` subcommand to ``gpusizer``'s subparsers."""
    parser = commands.add_parser(
        "shortlist", help="rank GPU configurations that meet latency targets by cost per token",
        description="Sweep GPUs x counts x precisions, drop what does not fit or misses the SLO, and rank the "
        "rest by the cost of a million tokens of the workload (replicas included).",
        **common.help_options(EXAMPLES),
    )
    parser.add_argument("model", help="catalogue id (gpusizer models), a path to a config.json / checkpoint folder, "
                        "or a Hugging Face repo id ORG/NAME[@REVISION] in the local cache (never downloaded)")
    parser.add_argument("--prompt", type=common.positive_tokens, default=2048,
                        help="mean prompt tokens, e.g. 2k (default 2k)")
    parser.add_argument("--output-tokens", dest="output", type=common.positive_tokens, default=512,
                        help="mean output tokens (default 512)")
    parser.add_argument("--rate", type=common.positive_number, required=True, help="requests per second to serve")
    common.add_service_arguments(parser)
    parser.add_argument("--price", type=_argument(_price), action="append", default=[],
                        help="USD per GPU-hour replacing the indicative table, e.g. h100-sxm=2.49 (repeatable)")
    parser.add_argument("--gpus", type=_list, default=None, help="GPUs to consider (default: every priced GPU)")
    parser.add_argument("--max-gpus", type=common.gpu_count, default=8,
                        help=f"most GPUs per replica (default 8, at most {common.MAX_GPUS})")
    parser.add_argument("--weights", type=_list, default=None,
                        help="weight precisions to sweep, e.g. bf16,fp8 (default: checkpoint, fp8, int4)")
    parser.add_argument("--engine", default="vllm", help="engine profile (default vllm)")
    parser.add_argument("--simulate", type=_argument(_whole(0, 20)), default=3,
                        help="cheapest rows checked by discrete-event simulation, shown in their own column beside "
                        "the closed form (default 3, at most 20)")
    parser.add_argument("--seed", type=_argument(_whole(0, 2**32 - 1)), default=0,
                        help="seed of the simulation (default 0)")
    parser.add_argument("--top", type=_argument(_whole(1, 10**6)), default=10,
                        help="rows shown in the text table (default 10)")
    speculating.add_arguments(parser)
    prefixing.add_arguments(parser, sessions=True)
    offloading.add_arguments(parser)
    imaging.add_arguments(parser)
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="every row as JSON")
    output.add_argument("--csv", action="store_true", help="every row as CSV")
    parser.set_defaults(handler=_shortlist)


def _shortlist(args: argparse.Namespace) -> str:
    from gpusizer.shortlister import shortlist

    prices: dict[str, float] = {}
    for item in args.price:
        prices.update(item)
    workload, slo = common.service(args, args.rate)
    workload = imaging.workload(args, model_argument.model(args.model), prefixing.workload(args, workload))
    if slo is None:
        raise common.CommandError("shortlist needs at least one latency target: --ttft-p95, --tpot-p95 or --e2e-p95")
    table = shortlist(model_argument.model(args.model), workload, slo, gpus=args.gpus, max_gpus=args.max_gpus,
                      prices=prices or None, weights=args.weights, engine=args.engine, simulate=args.simulate,
                      seed=args.seed, speculative=speculating.speculative(args),
                      offload=offloading.offload(args))
    if args.json:
        data = {"schema_version": common.SCHEMA_VERSION, "model": table.model, "workload": workload.model_dump(),
                "slo": slo.model_dump(),
                "price_source": table.price_source, "context_exceeds_model_max": table.context_exceeds_model_max,
                "rows": table.to_dicts(),
                "dropped": [vars(d) for d in table.dropped], "hosted_api": costing.shortlist_api_json(table)}
        return common.json_text(data)
    if args.csv:
        return table.to_csv().rstrip("\n")
    return text(table, top=args.top)


def footer_dropped(dropped: str) -> str:
    """The footer's count of dropped configurations (``dropped``: ``"3 does not fit, 1 misses the SLO"``).

    >>> footer_dropped("2 does not fit"), footer_dropped("")
    ('dropped: 2 does not fit', 'none dropped')
    """
    return f"dropped: {dropped}" if dropped else "none dropped"


def _ms(value: float) -> str:
    return "-" if not math.isfinite(value) else f"{value * 1e3:.0f}"


def _money(value: float) -> str:
    return "-" if not math.isfinite(value) else f"{value:.3f}" if value < 10 else f"{value:,.0f}"


def text(table: Any, top: int = 10) -> str:
    """The readable shortlist: a header, the cheapest ``top`` rows, and why the others were dropped."""
    w, slo = table.workload, table.slo
    q = f"p{slo.quantile * 100:g}"
    targets = ", ".join(f"{name} {q} <= {_ms(value)} ms" for name, value in
                        (("TTFT", slo.ttft_p95), ("TPOT", slo.tpot_p95), ("E2E", slo.e2e_p95)) if value is not None)
    lines = [
        f"{table.model}: {w.rate:g} req/s, {w.prompt_tokens:,.0f} prompt + {w.output_tokens:,.0f} output tokens "
        f"({w.prompt_distribution}); {targets}",
        f"prices: {table.price_source}",
        *(["warning: a request is longer than the model's maximum context; the rows are extrapolated"]
          if table.context_exceeds_model_max else []),
        "",
    ]
    headers = ["#", "configuration", "max req/s (band)", "simulated", "replicas", "$/h", "$/Mtok (band)",
               "in/out $/Mtok", "J/tok", f"TTFT {q} ms", f"TPOT {q} ms", "limited by"]
    cells = []
    for i, r in enumerate(table.rows[:top]):
        low, high = r.max_rate_band
        cells.append([
            str(i + 1), r.configuration, f"{r.max_rate:.2f} ({low:.2f}-{high:.2f})",
            "-" if math.isnan(r.simulated_max_rate) else f"{r.simulated_max_rate:.2f}", str(r.replicas),
            "-" if not math.isfinite(r.usd_per_hour) else f"{r.usd_per_hour:,.2f}",
            f"{_money(r.usd_per_million_tokens)} ({_money(r.usd_per_million_tokens_band[0])}-"
            f"{_money(r.usd_per_million_tokens_band[1])})",
            f"{_money(r.usd_per_million_input_tokens)}/{_money(r.usd_per_million_output_tokens)}",
            "-" if not math.isfinite(r.joules_per_token) else f"{r.joules_per_token:.2f}",
            _ms(r.ttft), _ms(r.tpot), r.bottleneck,
        ])
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(headers)]
    for row in [headers, *cells]:
        lines.append("  ".join(c.ljust(wd) for c, wd in zip(row, widths, strict=True)).rstrip())
    if not cells:
        lines.append("no configuration meets the targets")
    reasons: dict[str, int] = {}
    for d in table.dropped:
        kind = d.reason.split(":")[0]
        reasons[kind] = reasons.get(kind, 0) + 1
    shown = min(top, len(table.rows))
    dropped = ", ".join(f"{n} {kind}" for kind, n in sorted(reasons.items()))
    lines += [
        "",
        f"{len(table.rows)} configurations meet the targets ({shown} shown); {footer_dropped(dropped)}.",
        "max req/s, latencies and cost: closed form; simulated: the discrete-event simulation's max req/s, for the "
        "--simulate cheapest.",
        "Bands: p10-p90 speed of the efficiency fit x lowest-highest price quote. Prices are indicative: "
        "pass --price GPU=USD.",
        *costing.shortlist_footer(table),
    ]
    return "\n".join(lines)
