"""``gpusizer cost MODEL GPU`` (also ``gpusizer breakeven``): all-in cost per token and per accepted token,
rented or owned, and the traffic at which self-hosting beats the cheapest hosted API.

    gpusizer breakeven llama-3.1-70b h100 --gpus 2 --weights fp8 --prompt 1000 --output-tokens 300
    gpusizer cost llama-3.1-70b h100 --gpus 2 --weights fp8 --own --tokens-per-day 50M --json

Readable by default; ``--json`` gives every figure in US dollars (and ``converted`` in ``--currency``).
Argument parsing and output only: the numbers come from ``gpusizer.selfhost``.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import asdict
from typing import Any

from gpusizer import catalog, cost, engines, estimator
from gpusizer.commands import common, model_argument
from gpusizer.commands import ownership as owning
from gpusizer.commands import speculative as speculating

__all__ = ["register", "shortlist_api", "shortlist_api_json", "shortlist_footer", "text"]

EXAMPLES = (
    "gpusizer breakeven llama-3.1-70b h100 --gpus 2 --weights fp8 --prompt 1000 --output-tokens 300\n"
    "gpusizer cost llama-3.1-70b h100 --gpus 2 --weights fp8 --own --tokens-per-day 50M\n"
    "gpusizer cost llama-3.1-8b rtx-4090 --own --electricity 0.30 --pue 1.0 --colo-kw-month 0 --utilisation 0.5 "
    "--idle 0.6 --retries 0.05 --currency EUR --exchange-rate 0.92@2026-12-01\n"
    "gpusizer cost llama-3.1-8b h100 --price 2.49 --api-price 0.05/0.08 --ttft-p95 500ms --tpot-p95 50ms --json\n"
    "gpusizer cost deepseek-v3 hgx-b200-8x --weights fp8 --speculative mtp --own --cost-of-capital 0.08"
)


def _api_price(text: str) -> tuple[float, float]:
    parts = text.replace(",", "/").split("/")
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected INPUT/OUTPUT USD per million tokens such as 0.13/0.40, "
                                         f"got {text!r}") from None
    if len(values) != 2 or not all(v >= 0 and math.isfinite(v) for v in values):
        raise argparse.ArgumentTypeError(f"expected INPUT/OUTPUT USD per million tokens such as 0.13/0.40, "
                                         f"got {text!r}")
    return values[0], values[1]


def _traffic(text: str) -> float:
    """Tokens per day with decimal suffixes (traffic is counted in SI units): ``50M`` = 5e7, ``2B`` = 2e9."""
    scale = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9}
    body = text.strip()
    factor = scale.get(body[-1:].lower(), 1.0) if body else 1.0
    try:
        value = float(body[:-1] if factor != 1.0 else body) * factor
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected tokens per day such as 50M or 2e9, got {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a positive token count, got {text!r}")
    return value


def register(commands: Any) -> None:
    """Add the ``cost`` subcommand (alias ``breakeven``) to ``gpusizer``'s subparsers."""
    parser = commands.add_parser(
        "cost", aliases=["breakeven"], help="all-in cost per (accepted) token, rented or owned, and the break-even "
        "against hosted APIs",
        description="Load MODEL on GPU at a prompt/output mix (offline capacity, or the largest rate within "
        "--ttft-p95/--tpot-p95), bill the deployment rented (GPU-hours) or owned (--own: purchase amortised over "
        "a life, electricity x PUE, colocation), and compare it with the cheapest hosted API price of "
        "data/api-prices.toml: the traffic at which self-hosting becomes cheaper and the utilisation it implies.",
        **common.help_options(EXAMPLES),
    )
    parser.add_argument("model", help="catalogue id (gpusizer models), a path to a config.json / checkpoint folder, "
                        "or a Hugging Face repo id ORG/NAME[@REVISION] in the local cache (never downloaded)")
    parser.add_argument("gpu", help="catalogue id or alias (gpusizer gpus), or a system id such as hgx-h200-8x")
    parser.add_argument("--gpus", type=common.gpu_count, default=None,
                        help=f"GPUs of one deployment (default 1 or the system's; at most {common.MAX_GPUS})")
    parser.add_argument("--layout", default="tp", help="how the GPUs share the model (default tp)")
    parser.add_argument("--engine", default="vllm", help=f"engine profile: {', '.join(engines.ENGINES)}")
    parser.add_argument("--weights", help="weight precision (default: checkpoint)")
    parser.add_argument("--kv-cache", type=common.kv_cache, help="KV-cache dtype (default: model activation dtype)")
    parser.add_argument("--prompt", type=common.positive_tokens, default=1024, help="mean prompt tokens (default 1k)")
    parser.add_argument("--output-tokens", "--output", dest="output", type=common.positive_tokens, default=256,
                        help="mean output tokens (default 256)")
    common.add_service_arguments(parser)
    parser.add_argument("--price", metavar="USD", type=common.positive_number, default=None,
                        help="rented: USD per GPU-hour (default: the typical quote of data/prices.toml)")
    parser.add_argument("--api-price", metavar="IN/OUT", type=_api_price, default=None,
                        help="hosted API price INPUT/OUTPUT in USD per million tokens, e.g. 0.13/0.40 (default: the "
                        "cheapest quote of data/api-prices.toml at the mix)")
    parser.add_argument("--tokens-per-day", metavar="T", type=_traffic, default=None,
                        help="a traffic (prompt + output tokens per day) to price both ways, e.g. 50M (= 50,000,000)")
    owning.add_arguments(parser)
    speculating.add_arguments(parser)
    parser.add_argument("--json", action="store_true", help="every figure as JSON (USD; converted in --currency)")
    parser.set_defaults(handler=_cost)


def _cost(args: argparse.Namespace) -> str:
    from gpusizer import hosted, selfhost

    rate = owning.currency(args)
    own = owning.owning(args)
    if own is not None and args.price is not None:
        raise common.CommandError("--price is a rental price: drop it with --own (or use --purchase-price)")
    if own is None and args.price is None:  # the library's message names its arguments: name the flags here
        cost.price(estimator.resolve_target(args.gpu, args.gpus)[0], how="--price 2.0, or --own for a bought GPU")
    workload, slo = common.service(args, 1.0)
    api = None if args.api_price is None else hosted.ApiPrice(provider="user", input_usd=args.api_price[0],
                                                              output_usd=args.api_price[1], source="user")
    record = model_argument.model(args.model)
    result = selfhost.compare(
        record, args.gpu, workload=workload, slo=slo, gpus=args.gpus, layout=args.layout, engine=args.engine,
        weights=args.weights, kv_cache=args.kv_cache, own=own, usd_per_gpu_hour=args.price, api=api,
        tokens_per_day=args.tokens_per_day, utilisation=args.utilisation, idle=args.idle, retries=args.retries,
        speculative=speculating.speculative(args))
    if args.json:
        data = {"schema_version": common.SCHEMA_VERSION, **asdict(result)}
        if rate is not None:
            data["currency"] = {"code": rate.currency, "per_usd": rate.per_usd, "as_of": rate.as_of.isoformat(),
                                "converted": {k: rate.convert(v) for k, v in _money(result).items()}}
        return common.json_text(_plain(data))
    return text(result, rate)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "model_dump"):
        return _plain(value.model_dump(mode="json"))
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def _money(result: Any) -> dict[str, float]:
    """The money figures of a ``Comparison`` that ``--currency`` converts (USD)."""
    out = {"usd_per_hour": result.bill.usd_per_hour, "usd_per_month": result.bill.usd_per_month,
           "usd_per_million_tokens": result.usd_per_million_tokens,
           "usd_per_million_accepted_tokens": result.usd_per_million_accepted_tokens}
    b = result.breakeven
    if b is not None:
        out["api_usd_per_million_tokens"] = b.api_usd_per_million_tokens
        if b.self_usd_per_day is not None and b.api_usd_per_day is not None:
            out.update(self_usd_per_day=b.self_usd_per_day, api_usd_per_day=b.api_usd_per_day)
    return out


def _tokens(value: float) -> str:
    if not math.isfinite(value):
        return "never"
    for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:,.1f}{suffix}"
    return f"{value:,.0f}"


def text(result: Any, rate: Any = None) -> str:
    """The readable report of a ``selfhost.Comparison`` (money in ``rate.currency`` when given)."""
    code = "USD" if rate is None else rate.currency

    def money(usd: float, digits: int = 2) -> str:
        if not math.isfinite(usd):
            return "none (no capacity)"
        value = usd if rate is None else float(rate.convert(usd))
        return f"{value:,.{digits}f} {code}"

    b, paid = result.breakeven, result.bill
    name = catalog.gpu(result.gpu).name
    lines = [f"{result.model} on {result.gpus} x {name}: {result.prompt_tokens:,.0f} prompt + "
             f"{result.output_tokens:,.0f} output tokens per request"
             + ("" if rate is None else f"; {rate.per_usd:g} {code} per USD on {rate.as_of.isoformat()}"),
             f"  capacity ({result.capacity_method}): {_tokens(result.capacity_tokens_per_day)} tokens/day, "
             f"{result.capacity_output_tokens_per_second:,.0f} output tokens/s",
             f"  {'owned' if paid.mode == 'own' else 'rented'}: {money(paid.usd_per_hour)}/h, "
             f"{money(paid.usd_per_month, 0)}/month"]
    if paid.mode == "own":
        lines.append(f"    capital {money(paid.capital_usd_per_hour or 0.0)}/h + electricity "
                     f"{money(paid.electricity_usd_per_hour or 0.0)}/h + hosting "
                     f"{money(paid.hosting_usd_per_hour or 0.0)}/h")
    lines += [f"    {key}: {value}" for key, value in paid.sources.items()]
    lines += [f"  utilisation {result.utilisation:g}, idle {result.idle:g}, retries {result.retries:g}: "
              f"{money(result.usd_per_million_tokens, 3)} per million tokens; "
              f"{money(result.usd_per_million_accepted_tokens, 3)} per million accepted output tokens "
              f"(generated: {money(result.usd_per_million_generated_tokens, 3)})"]
    if b is None:
        lines.append(f"  no break-even: {result.note}")
        return "\n".join(lines)
    api = b.api
    dated = f", {api.as_of.isoformat()}" if api.as_of else ""
    lines += [f"  hosted API: {api.provider} {api.input_usd:g}/{api.output_usd:g} {api.currency} per million "
              f"input/output tokens ({api.source}{dated}, checked {api.checked or 'by you'}) = "
              f"{money(b.api_usd_per_million_tokens, 3)} per million at this mix",
              f"  break-even: {_tokens(b.tokens_per_day)} tokens/day"
              + ("" if not math.isfinite(b.tokens_per_day) else
                 f" ({b.requests_per_second:,.2f} req/s, {b.utilisation:.0%} of one deployment's capacity)")
              + (f"; {b.note}" if b.note else "")]
    if b.traffic_tokens_per_day is not None and b.self_usd_per_day is not None and b.api_usd_per_day is not None:
        lines.append(f"  at {_tokens(b.traffic_tokens_per_day)} tokens/day: self-hosted "
                     f"{money(b.self_usd_per_day)}/day ({b.replicas} deployment{'s' if b.replicas != 1 else ''}) vs "
                     f"API {money(b.api_usd_per_day)}/day: {b.cheaper} is cheaper")
    return "\n".join(lines)


def shortlist_api(table: Any) -> Any:
    """``selfhost.rented_breakeven`` of a shortlist's cheapest priced row; None when it has none or the model has
    no hosted API price."""
    from gpusizer import selfhost

    priced = [r for r in table.rows if math.isfinite(r.usd_per_gpu_hour)]
    if not priced:
        return None
    top = priced[0]
    return selfhost.rented_breakeven(table.model, table.workload, top.usd_per_gpu_hour, top.gpus, top.max_rate)


def shortlist_api_json(table: Any) -> dict[str, Any] | None:
    """``shortlist_api`` as plain JSON data (``hosted_api`` of ``gpusizer shortlist --json``)."""
    b = shortlist_api(table)
    return None if b is None else _plain(asdict(b))


def shortlist_footer(table: Any) -> list[str]:
    """The shortlist's footer lines on hosted APIs: the cheapest price and the break-even of the cheapest row."""
    b = shortlist_api(table)
    if b is None:
        return []
    api = b.api
    lines = [f"Hosted API: cheapest {api.provider} {api.input_usd:g}/{api.output_usd:g} {api.currency} per million "
             f"input/output "
             f"tokens = {b.api_usd_per_million_tokens:.3f}/Mtok at this mix (data/api-prices.toml, checked "
             f"{api.checked}); #1 breaks even at {_tokens(b.tokens_per_day)} tokens/day"
             + ("" if not math.isfinite(b.tokens_per_day) else f" ({b.utilisation:.0%} of one replica)")
             + (f"; {b.note}" if b.note else "") + "."]
    if b.self_usd_per_day is not None and b.api_usd_per_day is not None:
        lines.append(f"At this traffic ({_tokens(b.traffic_tokens_per_day or 0.0)} tokens/day) #1 costs "
                     f"{b.self_usd_per_day:,.2f} USD/day rented vs {b.api_usd_per_day:,.2f} USD/day by API: "
                     f"{b.cheaper} is cheaper (all-in and owned: gpusizer cost --own).")
    return lines
