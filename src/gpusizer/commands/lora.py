"""The LoRA flags of ``gpusizer fit``, and their output.

``--lora N:rR`` (``4:r16``: four adapters of rank 16), ``--lora-targets q,k,v,o,gate,up,down`` (default all),
``--max-loras`` and ``--max-cpu-loras`` become a ``lora.LoRA``; ``text`` shows an ``Estimate.lora``. Parsing and
output only.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from gpusizer import lora as adapters
from gpusizer.commands.common import CommandError
from gpusizer.commands.common import number_text as _number

__all__ = ["add_arguments", "lora", "text"]


def _spec(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"\s*(\d+)\s*(?::\s*r?\s*(\d+))?\s*", text)
    if match is None or (match[2] is not None and int(match[2]) < 1):
        raise argparse.ArgumentTypeError(f"expected ADAPTERS:rRANK such as 4:r16, got {text!r}")
    return int(match[1]), int(match[2] or 16)


def _targets(text: str) -> tuple[str, ...]:
    names = tuple(part.strip().removesuffix("_proj") for part in text.split(",") if part.strip())
    if names == ("all",):
        return adapters.MODULES
    if not names or any(name not in adapters.MODULES for name in names):
        raise argparse.ArgumentTypeError(f"targets are some of {', '.join(adapters.MODULES)} (or all), got {text!r}")
    return names


def _slots(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}")
    return int(text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the LoRA flags."""
    group = parser.add_argument_group("LoRA adapters (docs/prefix-caching.md#lora-adapters)")
    group.add_argument("--lora", type=_spec, default=None, metavar="ADAPTERS:rRANK",
                       help="serve LoRA adapters, e.g. 4:r16 (four adapters, max_lora_rank 16; rank default 16)")
    group.add_argument("--lora-targets", type=_targets, default=None, metavar="MODULES",
                       help="targeted modules, e.g. q,k,v,o (default all: q,k,v,o,gate,up,down)")
    group.add_argument("--max-loras", type=_slots, default=None,
                       help="adapter slots on the GPU (vLLM --max-loras; default: the adapters)")
    group.add_argument("--max-cpu-loras", type=_slots, default=None,
                       help="adapters cached in host memory (vLLM --max-cpu-loras; default: the adapters)")


def lora(args: argparse.Namespace) -> adapters.LoRA | None:
    """The ``LoRA`` the flags ask for, or None without ``--lora``."""
    spec = getattr(args, "lora", None)
    if spec is None:
        if getattr(args, "lora_targets", None) or any(getattr(args, name, None) is not None
                                                     for name in ("max_loras", "max_cpu_loras")):
            raise CommandError("--lora-targets, --max-loras and --max-cpu-loras need --lora ADAPTERS:rRANK")
        return None
    count, rank = spec
    return adapters.LoRA(adapters=count, rank=rank, targets=args.lora_targets or adapters.MODULES,
                         max_loras=args.max_loras, max_cpu_loras=args.max_cpu_loras)


def text(result: Any) -> str:
    """The readable lines of ``Estimate.lora``."""
    a = result.lora
    return "\n".join([
        f"LoRA: {a.adapters} adapters of rank {a.rank} on {','.join(a.targets)}: {_number(a.adapter_params / 1e6)}M "
        f"parameters, {_number(a.adapter_bytes / 1e6)} MB each; {a.max_loras} GPU slots "
        f"({_number(a.buffer_bytes / 1e9, 3)} GB per GPU), {a.max_cpu_loras} in host memory "
        f"({_number(a.host_bytes / 1e9, 3)} GB)",
        f"  KV pool {_number(a.kv_pool_bytes / 1e9, 2)} GB per GPU; fits: {a.fits}; max concurrency "
        f"{a.max_concurrency} (without LoRA {result.max_concurrency})",
        f"  decode step +{_number(a.step_seconds_expected * 1e6)} us ({_number(a.adapters_touched, 2)} adapters "
        f"read per step): {_number(a.expected_tokens_per_second)} tok/s per user, x{_number(a.slowdown, 3)} step",
    ])
