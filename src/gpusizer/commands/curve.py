"""``gpusizer curve MODEL GPU``: throughput, TTFT and TPOT p50/p95/p99 against concurrency or rate, and the knee.

    gpusizer curve qwen3-30b-a3b rtx-5090 --prompt 2k --output-tokens 256 --ttft-p95 1s --tpot-p95 50ms

A table by default; ``--json`` gives every figure, ``--csv`` one row per point, ``--plot PATH`` draws the
curve with the SLO lines (``gpusizer.plot.load_curve``; needs matplotlib). The numbers come from
``gpusizer.serving.load_curve``.
"""

from __future__ import annotations

import argparse
import csv
import io
from typing import Any

from gpusizer import engines
from gpusizer.commands import common, model_argument

__all__ = ["csv_text", "register", "text"]

EXAMPLES = (
    "gpusizer curve llama-3.1-8b h100 --prompt 1k --output-tokens 256\n"
    "gpusizer curve qwen3-30b-a3b rtx-5090 --weights fp8 --kv-cache fp8 --prompt 2k --output-tokens 256 "
    "--ttft-p95 1s --tpot-p95 50ms\n"
    "gpusizer curve llama-3.1-8b h100 --rates 1,2,4,8,16 --csv\n"
    "gpusizer curve llama-3.1-8b h100-sxm:mig=3g.40gb --concurrency 1,4,16 --json\n"
    "gpusizer curve llama-3.1-8b h100 --tpot-p95 30ms --plot curve.png"
)


def _numbers(text: str) -> list[float]:
    """Argument type of a comma-separated list of positive numbers (``1,2,4,8``)."""
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got {text!r}") from None
    if not values or any(not 0 < v < 1e9 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive numbers separated by commas, got {text!r}")
    return sorted(set(values))


def register(commands: Any) -> None:
    """Add the ``curve`` subcommand to ``gpusizer``'s subparsers."""
    parser = commands.add_parser(
        "curve", help="throughput and TTFT/TPOT p50/p95/p99 against concurrency or request rate; the knee",
        description="Load MODEL on GPU with more and more users: output tokens/s and TTFT/TPOT p50/p95/p99 at each "
        "concurrency (requests in flight) or request rate; the knee (where one more user adds less than "
        "--knee-fraction of an idle user's throughput) and, with targets, the largest rate and concurrency "
        "within them. Closed forms of gpusizer.serving; see docs/curve.md.",
        **common.help_options(EXAMPLES),
    )
    parser.add_argument("model", help="catalogue id (gpusizer models), a path to a config.json / checkpoint folder, "
                        "or a Hugging Face repo id ORG/NAME[@REVISION] in the local cache (never downloaded)")
    parser.add_argument("gpu", help="catalogue id or alias, GPU:field=value (rtx-4090:memory=48GB) or GPU:mig=PROFILE")
    parser.add_argument("--prompt", type=common.positive_tokens, default=1024, help="mean prompt tokens (default 1k)")
    parser.add_argument("--output-tokens", dest="output", type=common.positive_tokens, default=256,
                        help="mean output tokens, first token included (default 256)")
    axis = parser.add_mutually_exclusive_group()
    axis.add_argument("--concurrency", type=_numbers, default=None,
                      help="requests in flight, comma-separated (default 1,2,4,...,256)")
    axis.add_argument("--rates", type=_numbers, default=None, help="request rates per second instead, comma-separated")
    common.add_service_arguments(parser)
    parser.add_argument("--knee-fraction", type=common.share, default=0.5,
                        help="the knee: where one more user adds less than this share of an idle user's "
                        "throughput (default 0.5)")
    parser.add_argument("--gpus", type=common.gpu_count, default=None, help="GPUs of one replica, tensor parallel")
    parser.add_argument("--engine", default="vllm", help=f"engine profile: {', '.join(engines.ENGINES)}")
    parser.add_argument("--weights", help="weight precision (default: checkpoint)")
    parser.add_argument("--kv-cache", help="KV-cache dtype (default: model activation dtype)")
    parser.add_argument("--allow-beyond-max-context", action="store_true",
                        help="accept --prompt + --output-tokens past the model's maximum context")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="every figure as strict JSON")
    output.add_argument("--csv", action="store_true", help="one CSV row per point")
    parser.add_argument("--plot", default=None, help="also write the curve with its SLO lines to this image file")
    parser.set_defaults(handler=_handler)


def _handler(args: argparse.Namespace) -> str:
    from gpusizer.serving.load_curve import load_curve

    record = model_argument.model(args.model)
    common.check_context(record, args.prompt + args.output, None, args.allow_beyond_max_context)
    workload, slo = common.service(args, 1.0)
    result = load_curve(record, args.gpu, workload=workload, slo=slo, concurrency=args.concurrency, rates=args.rates,
                        gpus=args.gpus, engine=args.engine, weights=args.weights, kv_cache=args.kv_cache,
                        knee_fraction=args.knee_fraction)
    if args.plot:
        path = common.check_output(args.plot, what="--plot")
        from gpusizer import plot

        figure = plot.load_curve(result)[0].figure
        try:
            common.write_atomic(path, lambda tmp: figure.savefig(tmp, format=path.suffix.lstrip(".") or "png"),
                                what="--plot")
        finally:
            import matplotlib.pyplot as plt

            plt.close(figure)
    if args.json:
        return common.json_text({"schema_version": common.SCHEMA_VERSION, **result.to_dict()})
    return csv_text(result) if args.csv else text(result)


#: Columns of the table and the CSV: (header, function of a point), times in ms.
def _columns() -> list[tuple[str, Any]]:
    def ms(get: Any) -> Any:
        return lambda p: None if get(p) is None else get(p) * 1e3

    return [
        ("concurrency", lambda p: p.concurrency), ("rate_per_s", lambda p: p.rate),
        ("output_tok_per_s", lambda p: p.tokens_per_second),
        ("tok_per_s_per_user", lambda p: p.tokens_per_second_per_user),
        *((f"{m}_{q}_ms", ms(lambda p, m=m, q=q: None if getattr(p, m) is None else getattr(getattr(p, m), q)))
          for m in ("ttft", "tpot") for q in ("p50", "p95", "p99")),
        ("meets_slo", lambda p: p.meets_slo),
    ]


def csv_text(result: Any) -> str:
    """One row per point, the ``_columns`` headers; empty cells where a point is beyond saturation."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    columns = _columns()
    writer.writerow([name for name, _ in columns])
    for p in result.points:
        writer.writerow(["" if (v := get(p)) is None else (f"{v:.6g}" if isinstance(v, float) else v)
                         for _, get in columns])
    return out.getvalue().rstrip("\n")


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def text(result: Any) -> str:
    """The table, then the knee and the SLO lines."""
    columns = _columns()
    headers = ["C", "req/s", "tok/s", "tok/s/user", "TTFT p50", "p95", "p99 ms", "TPOT p50", "p95", "p99 ms", "SLO"]
    rows = [[_cell(get(p)) for _, get in columns] for p in result.points]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    w = result.workload
    lines = [f"{result.model} on {result.gpus} x {result.gpu} ({result.engine}, weights {result.weights}, KV "
             f"{result.kv_cache}); {w.prompt_tokens:,.0f} prompt + {w.output_tokens:,.0f} output tokens; "
             f"KV pool holds {result.max_concurrency:,.0f} sequences; saturated "
             f"{result.saturated_tokens_per_second:,.0f} output tok/s", ""]
    lines += ["  ".join(c.rjust(wd) for c, wd in zip(line, widths, strict=True)) for line in [headers, *rows]]
    beyond = [p for p in result.points if p.reason]
    if beyond:
        lines.append(f"'-': {beyond[0].reason}")
    lines.append("")
    if result.knee_concurrency is None:
        lines.append("knee: none within the curve (throughput still grows by more than "
                     f"{result.knee_fraction:g} of an idle user's per added user)")
    else:
        lines.append(f"knee: {result.knee_concurrency:,.1f} requests in flight = {result.knee_rate:.3g} req/s = "
                     f"{result.knee_tokens_per_second:,.0f} output tok/s (one more user adds under "
                     f"{result.knee_fraction:g} of an idle user's throughput)")
    if result.slo is not None:
        s = result.slo
        q = f"p{s.quantile * 100:g}"
        targets = ", ".join(f"{n} {q} <= {v * 1e3:g} ms" for n, v in (("TTFT", s.ttft_p95), ("TPOT", s.tpot_p95),
                                                                       ("E2E", s.e2e_p95)) if v is not None)
        c = "-" if result.slo_concurrency is None else f"{result.slo_concurrency:,.1f}"
        lines.append(f"within SLO ({targets}): up to {result.slo_rate:.3g} req/s = {c} requests in flight; "
                     f"limited by {result.slo_binding}")
    return "\n".join(lines)
