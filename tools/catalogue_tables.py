"""Write the bundled catalogue as Markdown pages: docs/catalogue-gpus.md and docs/catalogue-models.md.

    python tools/catalogue_tables.py           # rewrite both pages
    python tools/catalogue_tables.py --check   # exit 1 if a page differs from the catalogue

Every figure comes from ``gpusizer.catalog`` (and, for models, ``gpusizer.architecture`` and
``gpusizer.memory``); every entry is followed by its sources and the date they were checked.
``tests/test_docs.py`` fails when a page is out of date.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from gpusizer import architecture, catalog, cost, memory, precision
from gpusizer.display import Column, bytes_column, count_column, markdown_table, text_column

DOCS = Path(__file__).resolve().parents[1] / "docs"
URL = re.compile(r"https?://[^\s<>\"']+")
#: Context of the per-sequence KV column of the model table. [token]
KV_CONTEXT = 32768


def escape(text: str) -> str:
    """Plain text made safe for a Markdown table cell or list item (URLs become autolinks)."""
    out, last = [], 0
    for match in URL.finditer(text):
        url = match.group().rstrip(".,;:)")
        out.append(re.sub(r"([\\`*_\[\]<>#|])", r"\\\1", text[last:match.start()]))
        out.append(f"<{url}>")
        last = match.start() + len(url)
    out.append(re.sub(r"([\\`*_\[\]<>#|])", r"\\\1", text[last:]))
    return "".join(out).replace("\n", " ")


def sources(records: Iterable[Any]) -> str:
    """A list item per record: id, checked date, confidence when it has one, and every source."""
    items = []
    for r in records:
        confidence = f", confidence {r.confidence}" if hasattr(r, "confidence") else ""
        listed = "; ".join(escape(s) for s in r.source)
        items.append(f"* **{r.id}** (checked {r.checked}{confidence}): {listed}")
    return "\n".join(items)


def _gpu_row(g: catalog.GPU) -> dict[str, Any]:
    return {
        "id": g.id, "name": escape(g.name), "vendor": escape(g.vendor), "memory": g.memory,
        "usable": g.memory_usable, "bandwidth": g.memory_bandwidth, "bf16": g.dense.bf16, "fp8": g.dense.fp8,
        "int8": g.dense.int8, "fp4": g.dense.fp4, "tdp": g.tdp, "domain": g.scale_up_domain,
    }


GPU_COLUMNS: Sequence[Column] = (
    text_column("id", "id"), text_column("name", "name"), text_column("vendor", "vendor"),
    bytes_column("memory", "memory", "GB"), bytes_column("usable", "usable", "GiB"),
    Column("bandwidth", "bandwidth", "TB/s", 1e12, ".2f"),
    Column("bf16", "bf16", "TFLOP/s", 1e12, ",.0f"), Column("fp8", "fp8", "TFLOP/s", 1e12, ",.0f"),
    Column("int8", "int8", "TOP/s", 1e12, ",.0f"), Column("fp4", "fp4", "TFLOP/s", 1e12, ",.0f"),
    count_column("tdp", "TDP", "W"), count_column("domain", "scale-up domain", "GPU"),
)


def _system_row(s: catalog.System) -> dict[str, Any]:
    return {
        "id": s.id, "name": escape(s.name), "gpu": s.gpu, "count": s.gpu_count, "memory": s.total_memory,
        "bandwidth": s.aggregate_bandwidth, "scale_up": s.scale_up_bandwidth, "power": s.power,
    }


SYSTEM_COLUMNS: Sequence[Column] = (
    text_column("id", "id"), text_column("name", "name"), text_column("gpu", "GPU"), count_column("count", "GPUs"),
    bytes_column("memory", "memory", "TB"), Column("bandwidth", "HBM bandwidth", "TB/s", 1e12, ",.1f"),
    Column("scale_up", "scale-up per GPU", "TB/s", 1e12, ".2f"), Column("power", "power", "kW", 1e3, ",.1f"),
)


def _price_row(g: catalog.GPU, record: cost.GpuPrice) -> dict[str, Any]:
    dates = [q.as_of for q in record.quotes if q.as_of is not None]
    usd = record.in_usd
    others = [c for c in record.currencies if c != "USD"]
    return {
        "id": g.id, "min": record.min if usd else None, "typical": record.typical if usd else None,
        "max": record.max if usd else None,
        "other": ", ".join(f"{record.figure('min', c):.2f}/{record.figure('typical', c):.2f}/"
                           f"{record.figure('max', c):.2f} {c}" for c in others) or None,
        "quotes": len(record.quotes), "currencies": ", ".join(sorted({q.currency for q in record.quotes})),
        "dated": f"{min(dates)} to {max(dates)}" if dates else "-",
    }


PRICE_COLUMNS: Sequence[Column] = (
    text_column("id", "id"), Column("min", "min", "USD/h", 1.0, ".2f"),
    Column("typical", "typical", "USD/h", 1.0, ".2f"), Column("max", "max", "USD/h", 1.0, ".2f"),
    text_column("other", "min/typical/max in another currency (per hour, not converted)"),
    count_column("quotes", "quotes"), text_column("currencies", "currencies"),
    text_column("dated", "quotes dated"),
)


def price_section() -> list[str]:
    """The rental-price summary per GPU and the GPUs without a public price."""
    table = cost.prices()
    rows = [_price_row(g, table[g.id]) for g in catalog.gpus() if g.id in table]
    missing = cost.unpriced()
    return [
        "## Rental prices",
        "",
        f"{len(rows)} accelerators have bundled rental quotes (`data/prices.toml`, each a `per_hour` price in "
        "its `currency`, with its provider, source and date); min, typical and max are derived from the "
        "US-dollar quotes "
        "(`gpusizer.cost.GpuPrice`). A quote in another currency is never converted: a card quoted only in "
        "another currency (a China-market card priced in CNY) shows its figures in that currency and has no "
        "US-dollar price, so every cost answer treats it as unpriced.",
        "",
        markdown_table(rows, [c for c in PRICE_COLUMNS if c.key != "other" or any(r["other"] for r in rows)]),
        "",
        f"{len(missing)} accelerators have no public, dated rental price in the table "
        "(`gpusizer.cost.unpriced()`); pass one with `--price GPU=USD`: "
        + ", ".join(f"`{gpu_id}`" for gpu_id in missing) + ".",
        "",
    ]


def gpu_page() -> str:
    """The Markdown page of accelerators and systems."""
    gpus, systems = catalog.gpus(), catalog.systems()
    return "\n".join([
        "# Catalogue: GPUs and systems",
        "",
        "Generated by `tools/catalogue_tables.py` from `data/gpus.toml`; do not edit by hand. Rules: "
        "[Sources and rules](catalogue.md).",
        "",
        f"{len(gpus)} accelerators. Memory is the vendor's figure; *usable* is what the driver reports, "
        "which sizing uses where known. Rates are dense tensor peaks (no structured sparsity); `-` means the "
        "vendor publishes none, and nothing is derived from another precision.",
        "",
        markdown_table([_gpu_row(g) for g in gpus], GPU_COLUMNS),
        "",
        "## Systems",
        "",
        f"{len(systems)} multi-GPU systems; `gpusizer.estimate(model, \"hgx-h200-8x\")` sizes on all their GPUs.",
        "",
        markdown_table([_system_row(s) for s in systems], SYSTEM_COLUMNS),
        "",
        *price_section(),
        "## Sources",
        "",
        "### Accelerators",
        "",
        sources(gpus),
        "",
        "### Systems",
        "",
        sources(systems),
        "",
    ])


def _attention(m: catalog.Model) -> str:
    kinds = "/".join(sorted(set(m.layers)))
    text = f"MLA, {kinds}" if m.mla is not None else f"{kinds}, {m.num_heads}/{m.num_kv_heads}"
    sparse = m.sparse_attention
    return text if sparse is None else f"{text}, sparse top {sparse.index_topk:,}"


def _kv_bytes(m: catalog.Model) -> float:
    """Cache of one sequence of ``KV_CONTEXT`` tokens in the model's activation dtype. [B]"""
    bpe = precision.bytes_per_element(m.activation_dtype)
    return float(memory.sequence_cache_bytes(KV_CONTEXT, architecture.kv_layout(m), bpe, bpe))


def _model_row(m: catalog.Model) -> dict[str, Any]:
    counts = architecture.parameter_counts(m)
    return {
        "id": m.id, "family": escape(m.family), "total": counts.total, "active": counts.active,
        "layers": m.num_layers, "hidden": m.hidden_size, "attention": _attention(m),
        "experts": f"{m.moe.num_experts} (top {m.moe.experts_per_token})" if m.moe else None,
        "kv": _kv_bytes(m), "weights": m.weights + (f", experts {m.expert_weights}" if m.expert_weights else ""),
        "context": m.max_context, "repo": f"[{escape(m.hf_repo)}](https://huggingface.co/{m.hf_repo})" if m.hf_repo
        else None,
    }


MODEL_COLUMNS: Sequence[Column] = (
    text_column("id", "id"), text_column("family", "family"), Column("total", "total", "B params", 1e9, ",.2f"),
    Column("active", "active", "B params", 1e9, ",.2f"), count_column("layers", "layers"),
    count_column("hidden", "width"), text_column("attention", "attention (heads/KV heads)"),
    text_column("experts", "routed experts"), bytes_column("kv", f"KV of {KV_CONTEXT // 1024}K tokens", "GiB"),
    text_column("weights", "checkpoint"), count_column("context", "max context", "token"),
    text_column("repo", "Hugging Face"),
)


def model_page() -> str:
    """The Markdown page of model architectures."""
    models = catalog.models()
    return "\n".join([
        "# Catalogue: models",
        "",
        "Generated by `tools/catalogue_tables.py` from `data/models.toml`; do not edit by hand. Rules: "
        "[Sources and rules](catalogue.md).",
        "",
        f"{len(models)} models. Parameter counts are computed from the architecture "
        "(`gpusizer.architecture.parameter_counts`), not copied from a model card; the KV column is the "
        f"cache of one {KV_CONTEXT:,}-token sequence in the activation dtype "
        "(`gpusizer.memory.sequence_cache_bytes`), before any block rounding.",
        "",
        markdown_table([_model_row(m) for m in models], MODEL_COLUMNS),
        "",
        "## Sources",
        "",
        sources(models),
        "",
    ])


def pages() -> dict[Path, str]:
    """Every generated page and its text."""
    return {DOCS / "catalogue-gpus.md": gpu_page(), DOCS / "catalogue-models.md": model_page()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a page is out of date")
    args = parser.parse_args(argv)
    stale = []
    for path, text in pages().items():
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(path.name)
        else:
            path.write_text(text, encoding="utf-8")
    if stale:
        print(f"out of date: {', '.join(stale)}; run python tools/catalogue_tables.py", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
