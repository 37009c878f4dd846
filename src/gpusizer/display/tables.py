"""Columns and tables (text, Markdown, HTML) of rows, and two-column record sheets with sources."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpusizer.display.formatting import BYTE_UNITS, MISSING, format_number, is_missing


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
        if is_missing(value):
            return MISSING
        if isinstance(value, bool | np.bool_):
            return "yes" if value else "no"
        if isinstance(value, str | np.str_):
            return str(value)
        scaled = value / self.scale if self.scale != 1 else value
        return format(scaled, self.fmt) if self.fmt else format_number(scaled)

    def numeric(self, rows: Sequence[Mapping[str, Any]]) -> bool:
        """Whether the column holds numbers (right-aligned)."""
        values = [row.get(self.key) for row in rows if not is_missing(row.get(self.key))]
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
