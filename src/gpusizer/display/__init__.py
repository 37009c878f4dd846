"""Rich display: text, HTML and Markdown renderings of results and catalogue records. No physics here.

Every function is pure and returns a string; classes attach them with one-line methods
(``Estimate._repr_html_`` calls ``estimate_html``). Quantities are shown with their unit, as the
nomenclature fixes them: sizes in GB (1e9 B) and GiB (2**30 B), each labelled; times in ms; rates
in tok/s; bandwidth in TB/s; tensor rates in TFLOP/s. A missing value (``None`` or ``nan``) shows as
``-``.

The package has one module per job: ``formatting`` (numbers with units), ``tables`` (columns,
text/Markdown/HTML tables, record sheets), ``sheets`` (GPU, system and model records), ``results``
(estimates, sweeps, shortlists); every public name is re-exported here. Importing
this package registers the record and estimate renderings in ``gpusizer.presentation``, which is how
``repr(gpusizer.gpu("h200"))`` and ``str(estimate(...))`` reach them without the records importing
display (``import gpusizer`` makes the first ``repr`` import this package).

Generic building blocks for other results (shortlists, sweeps, serving curves):

* ``Column`` and the column factories ``bytes_column``, ``seconds_column``, ``rate_column``,
  ``count_column``, ``text_column`` describe how a field is shown;
* ``text_table``, ``html_table`` and ``markdown_table`` render rows (dicts) with those columns;
* ``sweep_rows`` flattens broadcast arrays into rows;
* ``sweep_text``/``sweep_html`` and ``shortlist_text``/``shortlist_html`` render a ``Sweep`` and a
  ``Shortlist`` (duck-typed: neither module is imported here);
* ``properties_text`` and ``properties_html`` render a record as a two-column sheet with sources.

Deliberate omissions: no styling beyond a few inline rules (notebook themes differ), and no
locale-dependent formatting.
"""

from __future__ import annotations

from gpusizer import presentation
from gpusizer.display.formatting import (
    BYTE_UNITS,
    MISSING,
    format_bandwidth,
    format_bytes,
    format_flops,
    format_number,
    format_params,
    format_rate,
    format_seconds,
    format_size,
    is_missing,
)
from gpusizer.display.results import (
    ESTIMATE_COLUMNS,
    SHORTLIST_COLUMNS,
    SWEEP_COLUMNS,
    estimate_html,
    estimate_rows,
    estimate_summary,
    estimate_text,
    shortlist_html,
    shortlist_rows,
    shortlist_text,
    sweep_html,
    sweep_table,
    sweep_text,
)
from gpusizer.display.sheets import (
    gpu_html,
    gpu_summary,
    gpu_text,
    model_html,
    model_summary,
    model_text,
    system_html,
    system_summary,
    system_text,
)
from gpusizer.display.tables import (
    Column,
    bytes_column,
    count_column,
    html_table,
    markdown_table,
    properties_html,
    properties_text,
    rate_column,
    seconds_column,
    sweep_rows,
    text_column,
    text_table,
)

__all__ = [
    "BYTE_UNITS",
    "ESTIMATE_COLUMNS",
    "MISSING",
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
    "format_params",
    "format_rate",
    "format_seconds",
    "format_size",
    "gpu_html",
    "gpu_summary",
    "gpu_text",
    "html_table",
    "is_missing",
    "markdown_table",
    "model_html",
    "model_summary",
    "model_text",
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

presentation.register("gpusizer.records.GPU", summary=gpu_summary, text=gpu_text, html=gpu_html)
presentation.register("gpusizer.records.System", summary=system_summary, text=system_text, html=system_html)
presentation.register("gpusizer.records.Model", summary=model_summary, text=model_text, html=model_html)
presentation.register(
    "gpusizer.estimator.Estimate", summary=estimate_summary, text=estimate_text, html=estimate_html
)
