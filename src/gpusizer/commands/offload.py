"""The CPU/RAM offload flags of ``gpusizer fit`` and ``gpusizer shortlist``, and their output (docs/offload.md).

``--offload {auto,N}`` (llama.cpp: ``-ngl N``), ``--n-cpu-moe N``, ``--no-kv-offload`` (``-nkvo``),
``--cpu-offload-gb X`` (vLLM/SGLang), ``--host`` (a host memory of ``data/host_memory.toml``),
``--host-bandwidth 80GB/s`` and ``--host-memory 128GB`` become an ``offload.Offload``; ``text`` shows an
``Estimate.offload``. Parsing and output only.
"""

from __future__ import annotations

import argparse
from typing import Any

from gpusizer import offload as offloading
from gpusizer import units
from gpusizer.commands.common import CommandError

__all__ = ["add_arguments", "offload", "text"]


def _quantity(unit: str) -> Any:
    def parse(text: str) -> float:
        try:
            value = float(units.parse(text, unit))
        except (ValueError, TypeError, KeyError) as error:
            raise argparse.ArgumentTypeError(f"expected a quantity in {unit} (e.g. 80G{unit}), got {text!r}") from error
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
        return value
    return parse


def _whole(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def _gib(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected GiB as a number, got {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the offload flags."""
    group = parser.add_argument_group("CPU/RAM offload (docs/offload.md)")
    group.add_argument("--offload", default=None, help="auto: the most layers (or experts) on the GPU that fit; "
                       "N: llama.cpp -ngl N (layers on the GPU, the rest computed by the CPU)")
    group.add_argument("--n-cpu-moe", type=_whole, default=0, help="llama.cpp --n-cpu-moe N: routed experts of the "
                       "first N layers in system RAM")
    group.add_argument("--no-kv-offload", action="store_true", help="llama.cpp -nkvo: the whole KV cache in system RAM")
    group.add_argument("--cpu-offload-gb", type=_gib, default=None, help="vLLM/SGLang --cpu-offload-gb X: X GiB of "
                       "weights in pinned host memory, read over PCIe every forward pass")
    group.add_argument("--host", choices=offloading.hosts(), default="ddr5-5600-dual",
                       help="the host's memory (default ddr5-5600-dual: 89.6 GB/s wire, 67.2 GB/s achieved)")
    group.add_argument("--host-bandwidth", type=_quantity("B/s"), default=None,
                       help="the host's achieved memory bandwidth, e.g. 80GB/s (overrides --host)")
    group.add_argument("--host-memory", type=_quantity("B"), default=None, help="the host's RAM, e.g. 128GB: "
                       "checked against the weights and KV it holds")


def offload(args: argparse.Namespace) -> offloading.Offload | None:
    """The ``Offload`` the flags ask for, or None without ``--offload``, ``--n-cpu-moe`` or ``--cpu-offload-gb``."""
    asked = getattr(args, "offload", None)
    moe, gib = getattr(args, "n_cpu_moe", 0), getattr(args, "cpu_offload_gb", None)
    if asked is None and not moe and gib is None:
        if getattr(args, "no_kv_offload", False):
            raise CommandError("--no-kv-offload needs --offload or --n-cpu-moe")
        return None
    layers = None
    if asked is not None and asked != "auto":
        try:
            layers = _whole(asked)
        except argparse.ArgumentTypeError as error:
            raise CommandError(f"--offload: auto or a number of GPU layers ({error})") from None
    return offloading.Offload(
        gpu_layers=layers, cpu_moe_layers=moe, cpu_offload_bytes=0.0 if gib is None else gib * offloading.GIB,
        kv_on_host=args.no_kv_offload, auto=asked == "auto", host=args.host, host_bandwidth=args.host_bandwidth,
        host_memory=args.host_memory)


def _gb(value: Any) -> str:
    return f"{float(value) / 1e9:,.2f} GB"


def text(result: Any) -> str:
    """The readable lines of ``Estimate.offload``."""
    o = result.offload
    split = (f"{o.cpu_offload_bytes / offloading.GIB:g} GiB streamed (--cpu-offload-gb)" if o.mode == "stream" else
             f"-ngl {o.gpu_layers}" + (f" --n-cpu-moe {o.cpu_moe_layers}" if o.cpu_moe_layers else ""))
    host_fit = "" if o.host_fits is None else f" of {_gb(o.host_memory_bytes)} (fits: {o.host_fits})"
    return "\n".join([
        f"Offload: {split}; fits on the GPU: {o.fits} (headroom {_gb(o.headroom_bytes)})",
        f"  weights {_gb(o.gpu_weight_bytes)} on the GPU + {_gb(o.host_weight_bytes)} in host memory; KV "
        f"{_gb(o.gpu_kv_cache_bytes)} + {_gb(o.host_kv_cache_bytes)}; host holds {_gb(o.host_bytes)}{host_fit}",
        f"  host {o.host}: {o.host_bandwidth / 1e9:.1f} GB/s achieved ({o.host_bandwidth_theoretical / 1e9:.1f} wire); "
        f"PCIe {o.pcie_bandwidth / 1e9:.1f} GB/s",
        f"  decode {float(o.expected_tokens_per_second):.2f} tok/s per user (ceiling "
        f"{float(o.ceiling_tokens_per_second):.2f}): step {float(o.tpot_seconds_expected) * 1e3:.1f} ms = GPU "
        f"{float(o.gpu_seconds) * 1e3:.1f} + host {float(o.host_seconds) * 1e3:.1f} + copies "
        f"{float(o.transfer_seconds) * 1e3:.1f}; TTFT {float(o.ttft_seconds_expected):.2f} s",
        f"  ({o.note})",
    ])
