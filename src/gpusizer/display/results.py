"""Estimates, sweeps and shortlists as text and HTML (duck-typed: no result module is imported)."""

from __future__ import annotations

import html
from typing import Any

import numpy as np

from gpusizer.display.formatting import format_bytes, format_number, format_rate, format_seconds, format_size
from gpusizer.display.tables import (
    Column,
    bytes_column,
    count_column,
    html_table,
    rate_column,
    seconds_column,
    sweep_rows,
    text_column,
    text_table,
)
from gpusizer.units import GB, GiB

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
    return f"{e.model} on {e.gpus} x {_gpu_name(e, None)} ({split}{e.engine}), weights {weights}, KV cache {e.kv_cache}"


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
             ("runtime", m.runtime_bytes), ("total", m.total_bytes), ("engine share", m.budget_bytes),
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
        f"(ceiling {format_seconds(p.seconds_ceiling)}); TTFT {format_seconds(p.ttft_seconds_expected)}"
        + (f" ({p.unknown})" if p.unknown else ""),
        *(["warning: the context is longer than the model's maximum; the sizes are extrapolated"]
          if e.context_exceeds_model_max else []),
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


def estimate_text(e: Any, device: Any = None, record: Any = None, layout_note: str = "given") -> str:
    """An estimate as text, as ``gpusizer fit`` prints it: the breakdown per GPU with where the capacity comes
    from, speeds (with the context they hold), the layout and the verdict; a sweep table for array inputs.

    ``device`` and ``record``: the GPU and model records (default: the catalogue's of ``e.gpu`` and ``e.model``,
    when it holds them); ``layout_note``: how the layout was chosen, shown unless it was ``"given"``.
    """
    if _is_sweep(e):
        return f"{_setup(e)}\n{text_table(estimate_rows(e), ESTIMATE_COLUMNS, max_rows=200)}"
    if device is None or record is None:
        found = _records(e)
        device, record = device or found[0], record or found[1]
    return _single_text(e, device, record, layout_note)


def _plural(n: int, noun: str) -> str:
    """``"1 sequence"``, ``"16 sequences"``."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def _size(value: float) -> str:
    return f"{value / GB:9.2f} GB  {value / GiB:8.2f} GiB"


def _single_text(result: Any, device: Any, record: Any, layout_note: str) -> str:
    """One estimate as text (``estimate_text``); ``device`` and ``record`` may be None (a custom record)."""
    m = result.memory
    weights = result.weights + (f" (experts {result.expert_weights})" if result.expert_weights else "")
    lines = [
        f"{result.model} on {result.gpus} x {_gpu_name(result, device)} ({result.engine}), weights {weights}, "
        f"KV cache {result.kv_cache}",
        *([f"layout {layout_note}"] if layout_note != "given" else []),
        f"context {result.context:,} tokens x {_plural(result.concurrency, 'sequence')}, per GPU:",
        "",
        f"  weights      {_size(m.weights_bytes)}",
        f"  KV cache     {_size(m.kv_cache_bytes)}",
        f"  activations  {_size(m.activation_bytes)}",
        f"  runtime      {_size(m.runtime_bytes)}",
        f"  total        {_size(m.total_bytes)}",
        f"  engine share {_size(m.budget_bytes)}   the {result.engine} share of the capacity "
        f"({m.budget_bytes / m.capacity_bytes:.0%})",
        f"  capacity     {_size(m.capacity_bytes)}   {capacity_source(device, m.capacity_bytes)}",
        f"  headroom     {_size(m.headroom_bytes)}   engine share - total",
        *([f"  host memory  {_size(result.host_weights_bytes)}   the token embedding, which {result.engine} keeps "
           "in host memory, once (not in the total)"] if result.host_weights_bytes else []),
        "",
    ]
    fitting, asked = _plural(result.max_concurrency, "sequence"), _plural(result.concurrency, "sequence")
    limits = (
        f"the KV pool holds {result.kv_pool_tokens:,} tokens: {fitting} of {result.context:,} tokens, "
        f"or {asked} of up to {result.max_context:,} tokens"
        f"{' (the model maximum)' if record is not None and result.max_context == record.max_context else ''}."
    )
    d, p = result.decode, result.prefill
    lines += [
        f"  decode       {d.expected_tokens_per_second:9.1f} tok/s per user expected "
        f"(p10-p90 {d.band[0]:.1f}-{d.band[1]:.1f}; ceiling {d.ceiling_tokens_per_second:.1f}), "
        f"{d.expected_aggregate_tokens_per_second:.0f} tok/s aggregate, {d.bound}-bound, each sequence holding "
        f"{result.context:,} tokens",
        _prefill_line(p),
        *_parallel_line(result),
        *([] if result.fits else ["  (speeds as if it fitted: no engine would start this configuration)"]),
        "",
    ]
    if result.context_exceeds_model_max:
        maximum = f" of {record.max_context:,} tokens" if record is not None and record.max_context else ""
        lines += [f"warning: {result.context:,} tokens exceed the model's maximum context{maximum}; the sizes "
                  "are extrapolated", ""]
    if result.fits:
        verdict = f"FITS with {m.headroom_bytes / GB:.2f} GB headroom per GPU; {limits}"
    else:
        verdict = f"DOES NOT FIT: {-m.headroom_bytes / GB:.2f} GB short per GPU; {limits}"
    return "\n".join([*lines, verdict])


def capacity_source(device: Any, capacity: float) -> str:
    """Where the capacity of one GPU comes from, beside the memory the vendor lists (``gpusizer gpus``).

    >>> from gpusizer import catalog
    >>> capacity_source(catalog.gpu("h200"), 150.02e9)
    'the driver reports; H200 SXM is listed as 141 GB'
    """
    if device is None:
        return "as the GPU record gives it"
    listed = f"{device.name} is listed as {device.memory / GB:.0f} GB"
    if capacity < device.capacity * 0.999:  # unified memory: the engine's share of it
        return f"the share of unified memory the GPU may wire ({capacity / device.capacity:.0%}); {listed}"
    if device.memory_usable is not None:
        return f"the driver reports; {listed}"
    return f"as listed (the driver's figure is not in the catalogue); {listed}"


def _prefill_line(p: Any) -> str:
    """The prefill line of ``fit``'s text; says why when the expected time is unknown."""
    if p.seconds_expected is None:
        return (f"  prefill      unknown for {p.prompt:,} prompt tokens: {p.unknown} (memory-bound ceiling "
                f"{p.seconds_ceiling * 1e3:.0f} ms, TTFT ceiling {p.ttft_seconds_ceiling * 1e3:.0f} ms)")
    return (f"  prefill      {p.seconds_expected * 1e3:9.0f} ms for {p.prompt:,} prompt tokens expected "
            f"(ceiling {p.seconds_ceiling * 1e3:.0f} ms); TTFT {p.ttft_seconds_expected * 1e3:.0f} ms")


def _parallel_line(result: Any) -> list[str]:
    """The layout line of ``fit``'s text: empty on one GPU."""
    q = result.parallel
    if q is None or q.gpus == 1:
        return []
    return [
        f"  parallel     {q.layout} over {q.links}: scaling efficiency {q.scaling_efficiency:.0%} "
        f"({q.speedup:.2f}x one GPU), communication {q.communication_seconds_per_step * 1e3:.2f} ms per step "
        f"({q.communication_share:.0%})"
    ]


def _gpu_name(result: Any, device: Any) -> str:
    """The GPU's name: the estimate's own (``Estimate.gpu_name``, a custom record's too), else the record's, else
    its id."""
    return getattr(result, "gpu_name", "") or getattr(device, "name", "") or result.gpu


def _records(e: Any) -> tuple[Any, Any]:
    """The catalogue GPU and model of an estimate, each None when the catalogue does not hold it (a custom one)."""
    from gpusizer import catalog

    found: list[Any] = []
    for lookup, name in ((catalog.gpu, e.gpu), (catalog.model, e.model)):
        try:
            found.append(lookup(name))
        except KeyError:
            found.append(None)
    return found[0], found[1]


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
    marks = (f'<div title="engine share" style="position:absolute;left:{budget:.2f}%;top:0;height:100%;'
             f'border-left:2px dashed #333"></div><div title="capacity" style="position:absolute;'
             f'left:{capacity:.2f}%;top:0;height:100%;border-left:2px solid #000"></div>')
    legend = " ".join(f'<span style="color:{c}">&#9632;</span> {html.escape(n)}' for n, c in _PART_COLOURS.items())
    return (f'<div style="position:relative;display:flex;width:100%;max-width:600px;height:14px;'
            f'border:1px solid #999;margin:4px 0">{blocks}{marks}</div><div style="font-size:0.8em">{legend}; '
            f"dashed: engine share, solid: capacity</div>")


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
