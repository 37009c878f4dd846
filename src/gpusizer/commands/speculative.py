"""The speculative-decoding flags of ``gpusizer fit`` and ``gpusizer shortlist``, and their output.

``--speculative {draft,eagle,mtp}``, ``--draft MODEL``, ``--draft-tokens K``, ``--acceptance A`` (one rate, or
one per draft position: ``0.9,0.7,0.6``) and ``--eagle-version {1,2,3}`` become a ``speculation.Speculative``;
``text`` and ``accepted_token_cost`` show an ``Estimate.speculation``. Parsing and output only.
"""

from __future__ import annotations

import argparse
from typing import Any

from gpusizer import cost, speculation
from gpusizer.commands.common import CommandError
from gpusizer.commands.common import number_text as _number

__all__ = ["accepted_token_cost", "add_arguments", "speculative", "text"]


def _rates(text: str) -> float | tuple[float, ...]:
    try:
        values = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a rate or comma-separated rates in [0, 1], got {text!r}") from None
    if not values or not all(0.0 <= v <= 1.0 for v in values):
        raise argparse.ArgumentTypeError(f"acceptance rates must lie in [0, 1], got {text!r}")
    return values[0] if len(values) == 1 else values


def _draft_tokens(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 1 <= value <= 64:
        raise argparse.ArgumentTypeError(f"must be from 1 to 64, got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the speculative-decoding flags."""
    group = parser.add_argument_group("speculative decoding (docs/speculation.md)")
    group.add_argument("--speculative", choices=speculation.METHODS, default=None,
                       help="draft with a separate model (draft), an EAGLE head (eagle) or the model's own MTP "
                       "module (mtp: a record with mtp_layers: DeepSeek-V3/R1/V3.2, GLM-4.5)")
    group.add_argument("--draft", default=None, help="the draft model of --speculative draft (a catalogue id)")
    group.add_argument("--draft-tokens", type=_draft_tokens, default=None,
                       help="tokens drafted per verify step k (default: mtp 1, eagle 3, draft 3)")
    group.add_argument("--acceptance", type=_rates, default=None,
                       help="acceptance rate of every draft position (0.8) or of each (0.9,0.7,0.6); default: the "
                       "method's published rate with its band")
    group.add_argument("--eagle-version", type=int, choices=(1, 2, 3), default=3,
                       help="EAGLE-1/2 heads fuse two hidden states and share the LM head; EAGLE-3 (default) fuses "
                       "three and has a 32k-token head")


def speculative(args: argparse.Namespace) -> speculation.Speculative | None:
    """The ``Speculative`` the flags ask for, or None without ``--speculative``."""
    method = getattr(args, "speculative", None)
    if method is None:
        if getattr(args, "draft", None) or getattr(args, "draft_tokens", None) or getattr(args, "acceptance", None):
            raise CommandError("--draft, --draft-tokens and --acceptance need --speculative")
        return None
    if method == "draft" and not args.draft:
        raise CommandError("--speculative draft needs --draft MODEL (e.g. llama-3.2-1b)")
    return speculation.Speculative(method, draft_tokens=args.draft_tokens, acceptance=args.acceptance,
                                   draft=args.draft if method == "draft" else None, eagle_version=args.eagle_version)


def accepted_token_cost(result: Any) -> dict[str, Any]:
    """USD per million accepted tokens at the GPU's typical price (``cost.usd_per_million_tokens`` of the
    aggregate accepted rate), with and without speculation; None when the GPU has no price."""
    s = result.speculation
    try:
        hourly = cost.price(result.gpu)
    except KeyError:
        return {"usd_per_gpu_hour": None, "usd_per_million_accepted_tokens": None,
                "usd_per_million_tokens_without": None}
    return {
        "usd_per_gpu_hour": hourly,
        "usd_per_million_accepted_tokens": cost.usd_per_million_tokens(
            hourly, result.gpus, s.expected_aggregate_tokens_per_second),
        "usd_per_million_tokens_without": cost.usd_per_million_tokens(
            hourly, result.gpus, result.decode.expected_aggregate_tokens_per_second),
    }


def text(result: Any) -> str:
    """The readable lines of ``Estimate.speculation``."""
    s = result.speculation
    money = accepted_token_cost(result)
    rates = ", ".join(f"{a:.3g}" for a in s.acceptance)
    lines = [
        f"Speculative decoding: {s.method}, {s.draft}, k = {s.draft_tokens}, acceptance {rates} "
        f"({s.acceptance_source})",
        f"  tokens per verify step {_number(s.tokens_per_step, 2)} (band {_number(s.tokens_per_step_band[0], 2)}"
        f"-{_number(s.tokens_per_step_band[1], 2)}); speedup {_number(s.speedup, 2)}x "
        f"(ceiling {_number(s.speedup_ceiling, 2)}x)",
        f"  per user {_number(s.expected_tokens_per_second)} tok/s (p10-p90 {_number(s.band[0])}-"
        f"{_number(s.band[1])}, ceiling {_number(s.ceiling_tokens_per_second)}); aggregate "
        f"{_number(s.expected_aggregate_tokens_per_second)} tok/s",
        f"  draft weights {_number(s.draft_weights_bytes / 1e9, 2)} GB and draft KV "
        f"{_number(s.draft_kv_cache_bytes / 1e9, 3)} GB per GPU; fits: {s.fits}; max concurrency "
        f"{s.max_concurrency}; pays up to concurrency {s.break_even_concurrency}"
        + (f" ({s.break_even_note})" if s.break_even_note else ""),
    ]
    if money["usd_per_million_accepted_tokens"] is not None:
        lines.append(f"  ${_number(money['usd_per_million_accepted_tokens'], 3)} per million accepted tokens at "
                     f"${money['usd_per_gpu_hour']:.2f}/GPU-h (without: "
                     f"${_number(money['usd_per_million_tokens_without'], 3)})")
    return "\n".join(lines)
