"""The prefix-caching flags of ``gpusizer fit`` and ``gpusizer shortlist``, and their output.

``--prefix-cache H`` (the share of each prompt's tokens found in the cache), ``--shared-prefix P`` (tokens every
sequence shares, held once in the KV pool) and ``--prefix-granularity G`` become a ``prefix_cache.PrefixCaching``;
``text`` shows an ``Estimate.prefix_cache``. Parsing and output only.
"""

from __future__ import annotations

import argparse
from typing import Any

from gpusizer import prefix_cache
from gpusizer.commands.common import CommandError, positive_tokens, tokens
from gpusizer.commands.common import number_text as _number

__all__ = ["add_arguments", "prefix", "text", "workload"]


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a hit rate in [0, 1], got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"a hit rate lies in [0, 1], got {text!r}")
    return value


def _turns(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 10_000:
        raise argparse.ArgumentTypeError(f"expected a whole number of turns from 1 to 10000, got {text!r}")
    return int(text)


def add_arguments(parser: argparse.ArgumentParser, sessions: bool = False) -> None:
    """Add the prefix-caching flags (and ``--session-turns`` for the serving commands when ``sessions``)."""
    group = parser.add_argument_group("prefix caching (docs/prefix-caching.md)")
    group.add_argument("--prefix-cache", type=_rate, default=None, metavar="HIT_RATE",
                       help="share of each prompt's tokens found in the prefix cache, e.g. 0.6 (vLLM automatic "
                       "prefix caching, SGLang RadixAttention)")
    group.add_argument("--shared-prefix", type=tokens, default=None, metavar="TOKENS",
                       help="tokens every sequence starts with (a system prompt), e.g. 4096: always hit, and its "
                       "KV blocks held once in the pool")
    group.add_argument("--prefix-granularity", type=positive_tokens, default=None, metavar="TOKENS",
                       help="tokens a hit is made of (default: vllm 16, sglang 1, trtllm 32, llama.cpp 1)")
    if sessions:
        group.add_argument("--session-turns", type=_turns, default=None, metavar="TURNS",
                           help="multi-turn sessions: each of TURNS turns re-sends the --shared-prefix system prompt "
                           "and the earlier turns (cached) and adds a --prompt message; the workload's prompt becomes "
                           "the mean turn's and its hit rate what the earlier turns give")


def prefix(args: argparse.Namespace) -> prefix_cache.PrefixCaching | None:
    """The ``PrefixCaching`` the flags ask for, or None without ``--prefix-cache`` and ``--shared-prefix``."""
    rate, shared = getattr(args, "prefix_cache", None), getattr(args, "shared_prefix", None)
    if rate is None and shared is None:
        if getattr(args, "prefix_granularity", None) is not None:
            raise CommandError("--prefix-granularity needs --prefix-cache or --shared-prefix")
        return None
    return prefix_cache.PrefixCaching(hit_rate=rate or 0.0, shared_tokens=shared or 0,
                                      granularity=getattr(args, "prefix_granularity", None))


def workload(args: argparse.Namespace, traffic: Any) -> Any:
    """``traffic`` (a ``serving.Workload``) with the hit rate the flags ask for: the larger of ``--prefix-cache`` and
    ``--shared-prefix`` over the mean prompt (``Workload.prefix_hit_rate``); with ``--session-turns`` the mean turn of
    a session whose earlier turns are cached (``prefix_cache.session_hit_rate``)."""
    turns = getattr(args, "session_turns", None)
    spec = prefix(args)
    if spec is None and turns is None:
        return traffic
    spec = spec or prefix_cache.PrefixCaching()
    if turns is not None:
        rate, mean = prefix_cache.session_hit_rate(turns, spec.shared_tokens, traffic.prompt_tokens,
                                                   traffic.output_tokens)
        return traffic.model_copy(update={"prompt_tokens": float(mean),
                                          "prefix_hit_rate": max(spec.hit_rate, float(rate))})
    rate = max(spec.hit_rate, min(1.0, spec.shared_tokens / traffic.prompt_tokens))
    return traffic.model_copy(update={"prefix_hit_rate": rate})


def text(result: Any) -> str:
    """The readable lines of ``Estimate.prefix_cache``."""
    p = result.prefix_cache
    ttft = ("unknown (no published compute rate)" if p.ttft_seconds_expected is None else
            f"{_number(p.ttft_seconds_expected * 1e3)} ms (band {_number(p.ttft_band[0] * 1e3)}-"
            f"{_number(p.ttft_band[1] * 1e3)}, ceiling {_number(p.ttft_seconds_ceiling * 1e3)}); "
            f"{_number(p.ttft_speedup, 2)}x faster than uncached")
    return "\n".join([
        f"Prefix caching: {_number(p.cached_tokens, 0)} of {_number(p.cached_tokens + p.computed_tokens, 0)} prompt "
        f"tokens cached (hit rate {_number(p.hit_rate, 3)}, in units of {p.granularity} tokens)",
        f"  TTFT {ttft}",
        f"  shared prefix {_number(p.shared_tokens, 0)} tokens held once ({_number(p.shared_bytes / 1e9, 3)} GB per "
        f"GPU); KV {_number(p.kv_cache_bytes / 1e9, 2)} GB per GPU; fits: {p.fits}; max concurrency "
        f"{p.max_concurrency} (without caching {result.max_concurrency})",
    ])
