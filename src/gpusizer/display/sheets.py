"""Catalogue records (GPU, system, model) as a one-line summary, a text sheet and an HTML sheet."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpusizer.architecture import parameter_counts
from gpusizer.display.formatting import (
    MISSING,
    format_bandwidth,
    format_bytes,
    format_flops,
    format_number,
    format_params,
)
from gpusizer.display.tables import properties_html, properties_text


def _gpu_pairs(g: Any) -> list[tuple[str, str]]:
    usable = (f" listed; the driver reports {format_bytes(g.memory_usable, 'GiB')}"
              f" ({format_bytes(g.memory_usable, 'GB')})" if g.memory_usable is not None else " listed")
    pairs = [
        ("id", g.id),
        ("vendor", g.vendor),
        ("architecture", g.architecture or MISSING),
        ("memory", (f"{g.memory_type} " if g.memory_type else "") + f"{format_bytes(g.memory, 'GB')}{usable}"),
        ("memory bandwidth", format_bandwidth(g.memory_bandwidth)),
    ]
    for name, rate in g.dense.model_dump().items():
        if rate is not None:
            pairs.append((f"dense {name}", format_flops(rate)))
    link = g.interconnect
    speed = f", {format_bandwidth(link.bandwidth)}" if link.bandwidth else ""
    pairs.append(("interconnect", link.description + speed))
    pairs.append(("scale-up domain", f"{g.scale_up_domain} GPUs"))
    if g.tdp is not None:
        pairs.append(("power", f"{g.tdp:,.0f} W"))
    pairs.append(("confidence", g.confidence))
    return pairs


def gpu_summary(g: Any) -> str:
    """One line for ``repr``: ``<GPU h100-sxm: H100 SXM, 80.00 GB, 3.35 TB/s, 990 TFLOP/s bf16>``."""
    rate = f", {format_flops(g.dense.bf16)} bf16" if g.dense.bf16 is not None else ""
    return f"<GPU {g.id}: {g.name}, {format_bytes(g.memory)}, {format_bandwidth(g.memory_bandwidth)}{rate}>"


def gpu_text(g: Any) -> str:
    """A GPU record as a readable sheet."""
    return properties_text(g.name, _gpu_pairs(g), sources=g.source, checked=g.checked, notes=g.notes)


def gpu_html(g: Any) -> str:
    """A GPU record as an HTML sheet."""
    return properties_html(g.name, _gpu_pairs(g), sources=g.source, checked=g.checked, notes=g.notes)


def _system_pairs(s: Any) -> list[tuple[str, str]]:
    pairs = [("id", s.id), ("vendor", s.vendor), ("GPUs", f"{s.gpu_count} x {s.gpu}")]
    optional: list[tuple[str, Any, Callable[[Any], str]]] = [
        ("total memory", s.total_memory, lambda v: format_bytes(v, "TB" if v >= 1e12 else "GB")),
        ("aggregate bandwidth", s.aggregate_bandwidth, format_bandwidth),
        ("scale-up fabric", s.scale_up_fabric, str),
        ("scale-up bandwidth per GPU", s.scale_up_bandwidth, format_bandwidth),
        ("scale-out per GPU", s.scale_out_bandwidth, lambda v: f"{format_number(v / 1e9)} Gb/s"),
        ("power", s.power, lambda v: f"{v / 1e3:,.1f} kW"),
    ]
    pairs += [(name, fmt(value)) for name, value, fmt in optional if value is not None]
    pairs.append(("confidence", s.confidence))
    return pairs


def system_summary(s: Any) -> str:
    """One line for ``repr``: ``<System gb200-nvl72: GB200 NVL72, 72 x gb200>``."""
    return f"<System {s.id}: {s.name}, {s.gpu_count} x {s.gpu}>"


def system_text(s: Any) -> str:
    """A system record as a readable sheet."""
    return properties_text(s.name, _system_pairs(s), sources=s.source, checked=s.checked, notes=s.notes)


def system_html(s: Any) -> str:
    """A system record as an HTML sheet."""
    return properties_html(s.name, _system_pairs(s), sources=s.source, checked=s.checked, notes=s.notes)


def _attention(m: Any) -> str:
    kinds = "/".join(sorted(set(m.layers)))
    return f"MLA ({kinds})" if m.mla is not None else f"{kinds}, {m.num_heads} heads, {m.num_kv_heads} KV heads"


def _model_pairs(m: Any) -> list[tuple[str, str]]:
    moe, counts = m.moe, parameter_counts(m)
    pairs = [
        ("id", m.id),
        ("family", m.family),
        ("parameters", f"{format_params(counts.total)} total, {format_params(counts.active)} active"),
        ("layers", f"{m.num_layers}, width {m.hidden_size:,}"),
        ("attention", _attention(m)),
    ]
    if moe is not None:
        pairs.append(("experts", f"{moe.num_experts} routed (top {moe.experts_per_token}), "
                                 f"{moe.num_shared_experts} shared"))
    pairs += [
        ("weights", m.weights + (f", experts {m.expert_weights}" if m.expert_weights else "")),
        ("max context", f"{m.max_context:,} tokens" if m.max_context else MISSING),
    ]
    if m.hf_repo:
        pairs.append(("Hugging Face", m.hf_repo))
    return pairs


def model_summary(m: Any) -> str:
    """One line for ``repr``: ``<Model llama-3.1-70b: 70.55 B params, bf16, 131,072 tokens>``."""
    context = f", {m.max_context:,} tokens" if m.max_context else ""
    params = format_params(parameter_counts(m).total)
    return f"<Model {m.id}: {params} params, {m.expert_weights or m.weights}{context}>"


def model_text(m: Any) -> str:
    """A model record as a readable sheet."""
    return properties_text(m.name, _model_pairs(m), sources=m.source, checked=m.checked, notes=m.notes)


def model_html(m: Any) -> str:
    """A model record as an HTML sheet."""
    return properties_html(m.name, _model_pairs(m), sources=m.source, checked=m.checked, notes=m.notes)
