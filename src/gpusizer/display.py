"""Rich display: text, HTML and Markdown renderings of results and catalogue records. No physics here.

Every function is pure and returns a string; classes attach them with one-line methods
(``Estimate._repr_html_`` calls ``estimate_html``). Quantities are shown with their unit, as the
nomenclature fixes them: sizes in GB (1e9 B) and GiB (2**30 B), each labelled; times in ms; rates
in tok/s; bandwidth in TB/s; tensor rates in TFLOP/s. A missing value (``None`` or ``nan``) shows as
``-``.

Generic building blocks for other results (shortlists, sweeps, serving curves):

* ``Column`` and the column factories ``bytes_column``, ``seconds_column``, ``rate_column``,
  ``count_column``, ``text_column`` describe how a field is shown;
* ``text_table``, ``html_table`` and ``markdown_table`` render rows (dicts) with those columns;
* ``sweep_rows`` flattens broadcast arrays into rows;
* ``sweep_text``/``sweep_html`` and ``shortlist_text``/``shortlist_html`` render a ``Sweep`` and a
  ``Shortlist`` (duck-typed: neither module is imported here);
* ``properties_text`` and ``properties_html`` render a record as a two-column sheet with sources;
* ``progress`` reports the progress of a long loop on stderr, only when stderr is a terminal.

Deliberate omissions: no styling beyond a few inline rules (notebook themes differ), and no
locale-dependent formatting.
"""

from __future__ import annotations

import html
import math
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO, TypeVar

import numpy as np

__all__ = [
    "BYTE_UNITS",
    "ESTIMATE_COLUMNS",
    "SHORTLIST_COLUMNS",
    "SWEEP_COLUMNS",
    "Column",
    "bytes_column",
    "count_column",
    "estimate_html",
    "estimate_rows",
    "estimate_summary",
    "estimate_text",
    "format_bandwidth",
    "format_bytes",
    "format_flops",
    "format_number",
    "format_rate",
    "format_seconds",
    "format_size",
    "gpu_html",
    "gpu_summary",
    "gpu_text",
    "html_table",
    "markdown_table",
    "model_html",
    "model_summary",
    "model_text",
    "progress",
    "properties_html",
    "properties_text",
    "rate_column",
    "seconds_column",
    "shortlist_html",
    "shortlist_rows",
    "shortlist_text",
    "sweep_html",
    "sweep_rows",
    "sweep_table",
    "sweep_text",
    "system_html",
    "system_summary",
    "system_text",
    "text_column",
    "text_table",
]

#: Bytes in one unit of each size unit shown. [B]
BYTE_UNITS = {
    "B": 1.0, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
    "KiB": 2.0**10, "MiB": 2.0**20, "GiB": 2.0**30, "TiB": 2.0**40,
}
MISSING = "-"

T = TypeVar("T")


# --- numbers --------------------------------------------------------------------------------------


def _missing(value: Any) -> bool:
    if value is None:
        return True
    try:
        return bool(np.isnan(value))
    except TypeError:
        return False


def format_number(value: Any, digits: int = 3) -> str:
    """A number with ``digits`` significant figures and thousands separators; ``-`` when missing.

    Examples
    --------
    >>> format_number(1234.5), format_number(9.6412), format_number(0.012345), format_number(None)
    ('1,234', '9.64', '0.0123', '-')
    """
    if _missing(value):
        return MISSING
    value = float(value)
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    decimals = max(digits - 1 - math.floor(math.log10(abs(value))), 0)
    return f"{value:,.{decimals}f}"


def format_bytes(value: Any, unit: str = "GB", decimals: int = 2) -> str:
    """A size in ``unit`` (a key of ``BYTE_UNITS``), with the unit.

    Examples
    --------
    >>> format_bytes(72.67e9), format_bytes(80 * 2**30, "GiB")
    ('72.67 GB', '80.00 GiB')
    """
    if _missing(value):
        return MISSING
    if unit not in BYTE_UNITS:
        raise ValueError(f"unknown size unit {unit!r}; known: {', '.join(BYTE_UNITS)}")
    return f"{float(value) / BYTE_UNITS[unit]:,.{decimals}f} {unit}"


def format_size(value: Any) -> str:
    """A size in GB and GiB, both labelled.

    Examples
    --------
    >>> format_size(85.9e9)
    '85.90 GB (80.00 GiB)'
    """
    if _missing(value):
        return MISSING
    return f"{format_bytes(value, 'GB')} ({format_bytes(value, 'GiB')})"


def format_seconds(value: Any, digits: int = 3) -> str:
    """A duration given in seconds, shown in milliseconds.

    Examples
    --------
    >>> format_seconds(0.009641), format_seconds(1.5)
    ('9.64 ms', '1,500 ms')
    """
    return MISSING if _missing(value) else f"{format_number(float(value) * 1e3, digits)} ms"


def format_rate(value: Any, digits: int = 3, unit: str = "tok/s") -> str:
    """A rate in tokens per second.

    Examples
    --------
    >>> format_rate(103.16)
    '103 tok/s'
    """
    return MISSING if _missing(value) else f"{format_number(value, digits)} {unit}"


def format_bandwidth(value: Any) -> str:
    """A bandwidth given in B/s, shown in TB/s (GB/s below 1 TB/s).

    Examples
    --------
    >>> format_bandwidth(3.35e12), format_bandwidth(900e9)
    ('3.35 TB/s', '900 GB/s')
    """
    if _missing(value):
        return MISSING
    if value < 1e12:
        return f"{format_number(value / 1e9)} GB/s"
    return f"{format_number(value / 1e12)} TB/s"


def format_flops(value: Any) -> str:
    """A rate given in FLOP/s, shown in TFLOP/s.

    Examples
    --------
    >>> format_flops(989.5e12)
    '990 TFLOP/s'
    """
    return MISSING if _missing(value) else f"{format_number(value / 1e12)} TFLOP/s"


def _params(value: Any) -> str:
    return MISSING if _missing(value) else f"{value / 1e9:,.2f} B"


# --- tables ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """How one field of a row is shown: ``format(row[key] / scale, fmt)`` followed by nothing else.

    The unit appears once, in the header (``total [GB]``), so cells stay short and align.
    """

    key: str
    """Key of the row (a dict) holding the value."""
    header: str
    """Column title, without the unit."""
    unit: str = ""
    """Unit of the shown value, added to the header in brackets."""
    scale: float = 1.0
    """The value is divided by it before formatting (1e9 for GB from bytes)."""
    fmt: str = ""
    """Format spec; empty: ``format_number`` for numbers, ``str`` otherwise."""

    @property
    def label(self) -> str:
        """Header with its unit: ``total [GB]``."""
        return f"{self.header} [{self.unit}]" if self.unit else self.header

    def cell(self, row: Mapping[str, Any]) -> str:
        """The formatted value of ``row[key]``; ``-`` when absent, ``None`` or ``nan``."""
        value: Any = row.get(self.key)
        if _missing(value):
            return MISSING
        if isinstance(value, bool | np.bool_):
            return "yes" if value else "no"
        if isinstance(value, str | np.str_):
            return str(value)
        scaled = value / self.scale if self.scale != 1 else value
        return format(scaled, self.fmt) if self.fmt else format_number(scaled)

    def numeric(self, rows: Sequence[Mapping[str, Any]]) -> bool:
        """Whether the column holds numbers (right-aligned)."""
        values = [row.get(self.key) for row in rows if not _missing(row.get(self.key))]
        return bool(values) and all(
            isinstance(v, int | float | np.number) and not isinstance(v, bool | np.bool_) for v in values
        )


def bytes_column(key: str, header: str, unit: str = "GB") -> Column:
    """A size stored in bytes, shown in ``unit`` with two decimals."""
    return Column(key, header, unit, BYTE_UNITS[unit], ",.2f")


def seconds_column(key: str, header: str) -> Column:
    """A duration stored in seconds, shown in milliseconds."""
    return Column(key, header, "ms", 1e-3)


def rate_column(key: str, header: str, unit: str = "tok/s") -> Column:
    """A rate stored in tokens per second."""
    return Column(key, header, unit)


def count_column(key: str, header: str, unit: str = "") -> Column:
    """A whole count, with thousands separators."""
    return Column(key, header, unit, 1.0, ",.0f")


def text_column(key: str, header: str) -> Column:
    """A label shown as it is."""
    return Column(key, header)


def _cells(rows: Sequence[Mapping[str, Any]], columns: Sequence[Column]) -> list[list[str]]:
    return [[c.cell(row) for c in columns] for row in rows]


def _more(rows: Sequence[Any], max_rows: int | None) -> tuple[Sequence[Any], int]:
    if max_rows is None or len(rows) <= max_rows:
        return rows, 0
    return rows[:max_rows], len(rows) - max_rows


def text_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[Column], *, max_rows: int | None = None) -> str:
    """An aligned plain-text table: numbers right-aligned, labels left-aligned, units in the header.

    Examples
    --------
    >>> rows = [{"gpu": "h100-sxm", "memory": 80e9}, {"gpu": "h200-sxm", "memory": 141e9}]
    >>> print(text_table(rows, [text_column("gpu", "gpu"), bytes_column("memory", "memory")]))
    gpu       memory [GB]
    h100-sxm        80.00
    h200-sxm       141.00
    """
    shown, hidden = _more(rows, max_rows)
    cells = _cells(shown, columns)
    headers = [c.label for c in columns]
    right = [c.numeric(shown) for c in columns]
    widths = [max(len(h), *(len(row[i]) for row in cells)) if cells else len(h) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        parts = (v.rjust(w) if r else v.ljust(w) for v, w, r in zip(values, widths, right, strict=True))
        return "  ".join(parts).rstrip()

    lines = [line(headers), *(line(row) for row in cells)]
    if hidden:
        lines.append(f"... {hidden} more rows")
    return "\n".join(lines)


def _markdown_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[Column]) -> str:
    """A Markdown (GitHub/Python-Markdown) table: numbers right-aligned, units in the header.

    Cells are escaped for ``|`` only, so a row may carry Markdown (links) on purpose.

    Examples
    --------
    >>> print(markdown_table([{"gpu": "h100-sxm", "memory": 80e9}],
    ...                      [text_column("gpu", "gpu"), bytes_column("memory", "memory")]))
    | gpu | memory [GB] |
    | --- | ---: |
    | h100-sxm | 80.00 |
    """
    right = [c.numeric(rows) for c in columns]
    header = "| " + " | ".join(_markdown_cell(c.label) for c in columns) + " |"
    rule = "| " + " | ".join("---:" if r else "---" for r in right) + " |"
    body = ["| " + " | ".join(_markdown_cell(v) for v in row) + " |" for row in _cells(rows, columns)]
    return "\n".join([header, rule, *body])


_TABLE_STYLE = "border-collapse:collapse;font-size:0.9em"
_CELL_STYLE = "padding:2px 8px;text-align:{}"


def html_table(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[Column],
    *,
    caption: str | None = None,
    max_rows: int | None = 50,
) -> str:
    """An HTML table (for notebooks): numbers right-aligned, units in the header, text escaped.

    Examples
    --------
    >>> html_table([{"gpu": "a<b"}], [text_column("gpu", "gpu")])  # doctest: +ELLIPSIS
    '<table style=...><thead><tr><th style=...>gpu</th></tr></thead><tbody><tr><td ...>a&lt;b</td></tr>...'
    """
    shown, hidden = _more(rows, max_rows)
    styles = [_CELL_STYLE.format("right" if c.numeric(shown) else "left") for c in columns]
    head = "".join(f'<th style="{s}">{html.escape(c.label)}</th>' for c, s in zip(columns, styles, strict=True))
    body = "".join(
        "<tr>" + "".join(f'<td style="{s}">{html.escape(v)}</td>' for v, s in zip(row, styles, strict=True)) + "</tr>"
        for row in _cells(shown, columns)
    )
    if hidden:
        body += f'<tr><td colspan="{len(columns)}">... {hidden} more rows</td></tr>'
    title = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f'<table style="{_TABLE_STYLE}">{title}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def sweep_rows(**arrays: Any) -> list[dict[str, Any]]:
    """Rows of a sweep: broadcast the arrays together and flatten them (C order), one dict per point.

    Scalars broadcast; numpy scalars become Python numbers so cells format as plain values.

    Examples
    --------
    >>> sweep_rows(context=[4096, 8192], concurrency=1)
    [{'context': 4096, 'concurrency': 1}, {'context': 8192, 'concurrency': 1}]
    """
    names = list(arrays)
    columns = np.broadcast_arrays(*(np.asarray(arrays[n]) for n in names))
    flat = [c.ravel().tolist() for c in columns]
    return [dict(zip(names, values, strict=True)) for values in zip(*flat, strict=True)]


# --- record sheets --------------------------------------------------------------------------------


def _links(sources: Iterable[str]) -> list[str]:
    """Sources as HTML: a URL becomes a link; anything else (a document, ``owner/repo:path``) stays text."""
    out = []
    for source in sources:
        start = source.find("https://")
        if start < 0:
            out.append(html.escape(source))
            continue
        url = source[start:].split()[0]
        link = f'<a href="{html.escape(url)}" target="_blank">{html.escape(url)}</a>'
        out.append(html.escape(source[:start]) + link + html.escape(source[start + len(url):]))
    return out


def properties_text(title: str, pairs: Sequence[tuple[str, str]], *, sources: Sequence[str] = (),
                    checked: Any = None, notes: str = "") -> str:
    """A record as aligned ``name  value`` lines under a title, then its sources."""
    width = max((len(name) for name, _ in pairs), default=0)
    lines = [title, *(f"  {name.ljust(width)}  {value}" for name, value in pairs)]
    if checked is not None:
        lines.append(f"  {'checked'.ljust(width)}  {checked}")
    lines += [f"  source: {s}" for s in sources]
    if notes:
        lines.append(f"  notes: {notes}")
    return "\n".join(lines)


def properties_html(title: str, pairs: Sequence[tuple[str, str]], *, sources: Sequence[str] = (),
                    checked: Any = None, notes: str = "") -> str:
    """A record as an HTML sheet: a title, a two-column table, sources as links, notes folded away."""
    cell = _CELL_STYLE.format("left")
    body = "".join(f'<tr><th style="{cell}">{html.escape(n)}</th><td style="{cell}">{html.escape(v)}</td></tr>'
                   for n, v in pairs)
    parts = [f"<div><strong>{html.escape(title)}</strong>", f'<table style="{_TABLE_STYLE}">{body}</table>']
    if sources:
        items = "".join(f"<li>{s}</li>" for s in _links(sources))
        when = f" (checked {html.escape(str(checked))})" if checked is not None else ""
        parts.append(f'<div style="font-size:0.85em">Sources{when}:<ul>{items}</ul></div>')
    if notes:
        parts.append(f'<details style="font-size:0.85em"><summary>notes</summary>{html.escape(notes)}</details>')
    return "".join(parts) + "</div>"


def _gpu_pairs(g: Any) -> list[tuple[str, str]]:
    usable = f", {format_bytes(g.memory_usable, 'GiB')} usable" if g.memory_usable is not None else ""
    pairs = [
        ("id", g.id),
        ("vendor", g.vendor),
        ("architecture", g.architecture or MISSING),
        ("memory", f"{format_bytes(g.memory, 'GB')}{usable}" + (f" {g.memory_type}" if g.memory_type else "")),
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
    moe = m.moe
    pairs = [
        ("id", m.id),
        ("family", m.family),
        ("parameters", f"{_params(m.params_total)} total, {_params(m.params_active)} active"),
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
    return f"<Model {m.id}: {_params(m.params_total)} params, {m.expert_weights or m.weights}{context}>"


def model_text(m: Any) -> str:
    """A model record as a readable sheet."""
    return properties_text(m.name, _model_pairs(m), sources=m.source, checked=m.checked, notes=m.notes)


def model_html(m: Any) -> str:
    """A model record as an HTML sheet."""
    return properties_html(m.name, _model_pairs(m), sources=m.source, checked=m.checked, notes=m.notes)


# --- estimates ------------------------------------------------------------------------------------

#: Columns of ``estimate_rows``: the sweep table of an estimate over arrays.
ESTIMATE_COLUMNS = (
    count_column("context", "context", "token"),
    count_column("concurrency", "concurrency"),
    Column("fits", "fits"),
    bytes_column("total_bytes", "total"),
    bytes_column("headroom_bytes", "headroom"),
    count_column("max_concurrency", "max concurrency"),
    count_column("max_context", "max context", "token"),
    rate_column("decode", "decode per user"),
    rate_column("aggregate", "decode aggregate"),
    seconds_column("tpot", "TPOT"),
    seconds_column("ttft", "TTFT"),
)


def estimate_rows(e: Any) -> list[dict[str, Any]]:
    """One row per point of an estimate's sweep (one row for scalar inputs); keys of ``ESTIMATE_COLUMNS``."""
    d, p = e.decode, e.prefill
    return sweep_rows(
        context=e.context, concurrency=e.concurrency, fits=e.fits, total_bytes=e.memory.total_bytes,
        headroom_bytes=e.memory.headroom_bytes, max_concurrency=e.max_concurrency, max_context=e.max_context,
        decode=d.expected_tokens_per_second, aggregate=d.expected_aggregate_tokens_per_second,
        tpot=d.tpot_seconds_expected, ttft=p.ttft_seconds_expected,
    )


def _setup(e: Any) -> str:
    weights = e.weights + (f" (experts {e.expert_weights})" if e.expert_weights else "")
    layout = getattr(getattr(e, "parallel", None), "layout", None)
    split = f"{layout}, " if layout and e.gpus > 1 else ""
    return f"{e.model} on {e.gpus} x {e.gpu} ({split}{e.engine}), weights {weights}, KV cache {e.kv_cache}"


def _is_sweep(e: Any) -> bool:
    return bool(np.ndim(e.context) or np.ndim(e.concurrency) or np.ndim(e.fits))


def estimate_summary(e: Any) -> str:
    """One line for ``repr``: the setup and the verdict (or how many points of a sweep fit)."""
    if _is_sweep(e):
        fits = np.asarray(e.fits)
        verdict = f"sweep of {fits.size} points, {int(fits.sum())} fit"
    else:
        verdict = (f"{e.context:,} tokens x {e.concurrency}: {'fits' if e.fits else 'does not fit'}, "
                   f"headroom {format_bytes(e.memory.headroom_bytes)}")
    return f"<Estimate {_setup(e)}; {verdict}>"


def _memory_rows(e: Any) -> list[dict[str, Any]]:
    m = e.memory
    parts = [("weights", m.weights_bytes), ("KV cache", m.kv_cache_bytes), ("activations", m.activation_bytes),
             ("runtime", m.runtime_bytes), ("total", m.total_bytes), ("budget", m.budget_bytes),
             ("capacity", m.capacity_bytes), ("headroom", m.headroom_bytes)]
    return [{"part": name, "GB": value, "GiB": value} for name, value in parts]


_MEMORY_COLUMNS = (text_column("part", "per GPU"), bytes_column("GB", "size", "GB"), bytes_column("GiB", "size", "GiB"))


def _limits(e: Any) -> str:
    return (f"KV pool {format_bytes(e.kv_pool_bytes)} holds {e.kv_pool_tokens:,} tokens: {e.max_concurrency:,} "
            f"sequences of {e.context:,} tokens, or {e.concurrency:,} of up to {e.max_context:,} tokens")


def _speed_lines(e: Any) -> list[str]:
    d, p = e.decode, e.prefill
    return [
        f"decode: {format_rate(d.expected_tokens_per_second)} per user expected "
        f"(p10-p90 {format_number(d.band[0])}-{format_number(d.band[1])}, ceiling "
        f"{format_rate(d.ceiling_tokens_per_second)}), {format_rate(d.expected_aggregate_tokens_per_second)} "
        f"aggregate, TPOT {format_seconds(d.tpot_seconds_expected)}, {d.bound}-bound",
        f"prefill: {format_seconds(p.seconds_expected)} for {p.prompt:,} prompt tokens expected "
        f"(ceiling {format_seconds(p.seconds_ceiling)}); TTFT {format_seconds(p.ttft_seconds_expected)}",
    ]


def _parallel_lines(e: Any) -> list[str]:
    """How the GPUs share the model, when there are several (``Estimate.parallel``)."""
    p = getattr(e, "parallel", None)
    if p is None or e.gpus == 1:
        return []
    efficiency, share = format_number(100 * p.scaling_efficiency), format_number(100 * p.communication_share)
    return [f"layout {p.layout} over {p.links or 'no link'}: scaling efficiency {efficiency} %, "
            f"communication {share} % of a decode step"]


def _verdict(e: Any) -> str:
    headroom = e.memory.headroom_bytes
    if e.fits:
        return f"FITS with {format_bytes(headroom)} headroom per GPU"
    return f"DOES NOT FIT: {format_bytes(-headroom)} short per GPU"


def estimate_text(e: Any) -> str:
    """An estimate as text: the breakdown, limits, speed and verdict; a sweep table for array inputs."""
    if _is_sweep(e):
        return f"{_setup(e)}\n{text_table(estimate_rows(e), ESTIMATE_COLUMNS, max_rows=200)}"
    lines = [
        _setup(e),
        f"context {e.context:,} tokens x {e.concurrency} sequences",
        "",
        text_table(_memory_rows(e), _MEMORY_COLUMNS),
        "",
        _limits(e),
        *_speed_lines(e),
        *_parallel_lines(e),
        _verdict(e),
    ]
    return "\n".join(lines)


#: Colours of the memory components in the HTML bar (matplotlib's tab10, as ``plot.memory_breakdown``).
_PART_COLOURS = {"weights": "#1f77b4", "KV cache": "#ff7f0e", "activations": "#2ca02c", "runtime": "#d62728"}


def _memory_bar(e: Any) -> str:
    """A horizontal stacked bar of the four components against the capacity (budget marked)."""
    m = e.memory
    scale = max(float(m.capacity_bytes), float(m.total_bytes))
    parts = {"weights": m.weights_bytes, "KV cache": m.kv_cache_bytes, "activations": m.activation_bytes,
             "runtime": m.runtime_bytes}
    blocks = "".join(
        f'<div title="{name}: {format_size(value)}" style="width:{100 * float(value) / scale:.2f}%;'
        f'background:{_PART_COLOURS[name]};height:100%"></div>'
        for name, value in parts.items() if value > 0
    )
    budget = 100 * float(m.budget_bytes) / scale
    capacity = 100 * float(m.capacity_bytes) / scale
    marks = (f'<div title="budget" style="position:absolute;left:{budget:.2f}%;top:0;height:100%;'
             f'border-left:2px dashed #333"></div><div title="capacity" style="position:absolute;'
             f'left:{capacity:.2f}%;top:0;height:100%;border-left:2px solid #000"></div>')
    legend = " ".join(f'<span style="color:{c}">&#9632;</span> {html.escape(n)}' for n, c in _PART_COLOURS.items())
    return (f'<div style="position:relative;display:flex;width:100%;max-width:600px;height:14px;'
            f'border:1px solid #999;margin:4px 0">{blocks}{marks}</div><div style="font-size:0.8em">{legend}; '
            f"dashed: engine budget, solid: capacity</div>")


def estimate_html(e: Any) -> str:
    """An estimate as HTML for notebooks: verdict, memory bar and table, limits, speed; a table for sweeps."""
    title = f"<div><strong>{html.escape(_setup(e))}</strong></div>"
    if _is_sweep(e):
        return title + html_table(estimate_rows(e), ESTIMATE_COLUMNS, max_rows=200)
    colour = "#2ca02c" if e.fits else "#d62728"
    verdict = f'<div style="color:{colour};font-weight:bold">{html.escape(_verdict(e))}</div>'
    setup = f"<div>context {e.context:,} tokens x {e.concurrency} sequences, per GPU:</div>"
    lines = "".join(f"<div>{html.escape(line)}</div>" for line in [_limits(e), *_speed_lines(e), *_parallel_lines(e)])
    return (f"<div>{title}{verdict}{setup}{_memory_bar(e)}{html_table(_memory_rows(e), _MEMORY_COLUMNS)}"
            f"{lines}</div>")


# --- sweeps and shortlists -------------------------------------------------------------------------
# Duck-typed: a sweep has ``columns`` (name -> flat array), ``take(rows)`` and ``len``; a shortlist
# iterates rows with the fields of ``shortlist.Row``. Neither module is imported here.

#: Columns shown for a ``Sweep``, when it has them (axes with a single value are left out).
SWEEP_COLUMNS = (
    text_column("model", "model"), text_column("gpu", "gpu"), count_column("gpu_count", "GPUs"),
    text_column("weights", "weights"), text_column("kv_cache", "KV cache"), text_column("engine", "engine"),
    count_column("context", "context", "token"), count_column("prompt", "prompt", "token"),
    count_column("concurrency", "concurrency"), Column("fits", "fits"), bytes_column("total_bytes", "total"),
    bytes_column("headroom_bytes", "headroom"), count_column("max_concurrency", "max concurrency"),
    rate_column("decode_expected_tokens_per_second", "decode per user"),
    rate_column("decode_expected_aggregate_tokens_per_second", "decode aggregate"),
    seconds_column("decode_tpot_seconds_expected", "TPOT"), seconds_column("prefill_ttft_seconds_expected", "TTFT"),
    Column("cost_per_million_tokens", "cost", "$/Mtok", 1.0, ",.3f"),
)
_AXIS_COLUMNS = {"model", "gpu", "gpu_count", "weights", "kv_cache", "engine", "context", "prompt", "concurrency"}


def sweep_table(s: Any, *, max_rows: int = 50) -> tuple[list[dict[str, Any]], list[Column]]:
    """The first ``max_rows`` rows of a sweep and the columns worth showing (varying axes, results)."""
    shown = s.take(np.arange(min(len(s), max_rows))) if len(s) > max_rows else s
    names = set(s.columns)
    varying = {n for n in _AXIS_COLUMNS & names if len(np.unique(np.asarray(s.columns[n], dtype=str))) > 1}
    if {"prompt", "context"} <= varying and np.array_equal(s.columns["prompt"], s.columns["context"]):
        varying.discard("prompt")  # the default prompt is the context: one column says it
    columns = [c for c in SWEEP_COLUMNS if c.key in names and (c.key not in _AXIS_COLUMNS or c.key in varying)]
    rows = sweep_rows(**{c.key: shown.columns[c.key] for c in columns}) if columns else []
    return rows, columns


def _sweep_title(s: Any, hidden: int) -> str:
    more = f"; the first {len(s) - hidden:,} shown" if hidden else ""
    return f"{s!r}{more}"


def sweep_text(s: Any, *, max_rows: int = 50) -> str:
    """A sweep as an aligned text table of its first ``max_rows`` rows."""
    rows, columns = sweep_table(s, max_rows=max_rows)
    return f"{_sweep_title(s, len(s) - len(rows))}\n{text_table(rows, columns)}"


def sweep_html(s: Any, *, max_rows: int = 50) -> str:
    """A sweep as an HTML table of its first ``max_rows`` rows."""
    rows, columns = sweep_table(s, max_rows=max_rows)
    return html_table(rows, columns, caption=_sweep_title(s, len(s) - len(rows)), max_rows=None)


#: Columns shown for a ``Shortlist``.
SHORTLIST_COLUMNS = (
    count_column("rank", "rank"), text_column("configuration", "configuration"),
    count_column("replicas", "replicas"), Column("usd_per_million_tokens", "cost", "$/Mtok", 1.0, ",.3f"),
    Column("usd_per_hour", "fleet", "$/h", 1.0, ",.2f"), Column("max_rate", "max rate per replica", "req/s"),
    seconds_column("ttft", "TTFT"), seconds_column("tpot", "TPOT"), text_column("binding", "binding"),
    Column("joules_per_token", "energy", "J/token"),
)


def shortlist_rows(shortlist: Any) -> list[dict[str, Any]]:
    """One row per ranked configuration, keys of ``SHORTLIST_COLUMNS``."""
    return [{"rank": rank, **{c.key: getattr(row, c.key, None) for c in SHORTLIST_COLUMNS[1:]}}
            for rank, row in enumerate(shortlist, start=1)]


def _shortlist_title(shortlist: Any) -> str:
    dropped = len(getattr(shortlist, "dropped", ()))
    return f"{getattr(shortlist, 'model', '')}: {len(shortlist)} configurations meet the SLO, {dropped} dropped"


def shortlist_text(shortlist: Any) -> str:
    """A shortlist as a ranked text table, cheapest first."""
    return f"{_shortlist_title(shortlist)}\n{text_table(shortlist_rows(shortlist), SHORTLIST_COLUMNS)}"


def shortlist_html(shortlist: Any) -> str:
    """A shortlist as an HTML table, with the dropped configurations and their reasons folded away."""
    table = html_table(shortlist_rows(shortlist), SHORTLIST_COLUMNS, caption=_shortlist_title(shortlist),
                       max_rows=None)
    dropped = getattr(shortlist, "dropped", ())
    if not dropped:
        return table
    items = "".join(f"<li>{html.escape(f'{d.gpus} x {d.gpu} {d.layout}, {d.weights}: {d.reason}')}</li>"
                    for d in dropped)
    return f'{table}<details style="font-size:0.85em"><summary>dropped</summary><ul>{items}</ul></details>'


# --- progress -------------------------------------------------------------------------------------


def progress(
    iterable: Iterable[T],
    total: int | None = None,
    *,
    label: str = "",
    stream: TextIO | None = None,
    interval: float = 0.1,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[T]:
    """Yield the items of ``iterable``, reporting progress on ``stream`` (stderr) when it is a terminal.

    Nothing is written when the stream is not a TTY (a pipe, a file, a CI log), so output that tools
    read stays clean. The line is redrawn at most every ``interval`` seconds and ends with a newline.

    Parameters
    ----------
    iterable : iterable
        The work items (sweep points, simulation runs).
    total : int, optional
        Number of items; default ``len(iterable)`` when it has one.
    label : str
        Shown before the counter.
    stream : file-like, optional
        Where to report; default ``sys.stderr``.
    interval : float
        Shortest time between two redraws. [s]
    clock : callable
        Monotonic clock (replaced in tests). [s]

    Examples
    --------
    >>> sum(progress(range(4), label="sweep"))  # stderr is not a terminal under doctest: silent
    6
    """
    out = sys.stderr if stream is None else stream
    if not getattr(out, "isatty", lambda: False)():
        yield from iterable
        return
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    start = last = clock()
    done = width = 0

    def draw() -> None:
        nonlocal width
        count = f"{done}/{total} ({100 * done / total:.0f}%)" if total else f"{done}"
        line = " ".join(part for part in (label, count, f"{clock() - start:.1f} s") if part)
        out.write("\r" + line.ljust(width))  # pad over a longer previous line
        width = len(line)
        out.flush()

    draw()
    try:
        for item in iterable:
            yield item
            done += 1
            if clock() - last >= interval:
                last = clock()
                draw()
    finally:
        draw()
        out.write("\n")
        out.flush()
