"""Plots (optional: ``pip install gpusizer[plot]`` for matplotlib). No physics here.

matplotlib is imported on the first call, never at import. Every function draws on ``ax`` when given
(a new figure otherwise) and returns the matplotlib Axes, so plots compose and overlay.

* ``roofline``: a GPU's rooflines (one per published tensor rate), attainable FLOP/s against arithmetic
  intensity, with the decode and prefill operating points of an estimate or ``performance.speed``: the
  expected point (what the engine achieves) and the ceiling point (the roof itself) at the same intensity.
* ``memory_breakdown``: per-GPU memory as stacked bars (weights, KV cache, activations, runtime)
  with each GPU's capacity and the engine's budget; of estimates, of ``MemoryBreakdown`` records,
  or of anything with a ``.memory`` breakdown (one bar per GPU of a layout).
* ``concurrency_vs_context``: the sequences the KV pool holds against the context, of estimates
  over an array of contexts.
* ``throughput_vs_latency``: throughput against latency under increasing load, of a
  ``serving.concurrency_curve`` result or plain arrays (a concurrency sweep of ``estimate``, a simulation).
* ``load_curve``: throughput and TTFT/TPOT quantiles against concurrency or rate, the knee and the SLO
  lines, of a ``serving.load_curve`` result (``gpusizer.curve_plot``).
* ``cost_vs_slo``: cost per million tokens of each option against a latency target, with the cheapest
  option at each target, of one ``shortlist`` per target or plain arrays.

Sizes are drawn in GB (or the ``unit`` asked for), times in ms, rates in tok/s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from gpusizer import catalog
from gpusizer import roofline as roof
from gpusizer.curve_plot import load_curve
from gpusizer.performance import Decode, Prefill, Speed

__all__ = ["concurrency_vs_context", "cost_vs_slo", "load_curve", "memory_breakdown", "roofline",
           "throughput_vs_latency"]

#: Components of a memory breakdown, bottom to top: (legend label, field of ``MemoryBreakdown``).
MEMORY_PARTS = (
    ("weights", "weights_bytes"),
    ("KV cache", "kv_cache_bytes"),
    ("activations", "activation_bytes"),
    ("runtime", "runtime_bytes"),
)


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - exercised only without the extra
        raise ImportError("gpusizer.plot needs matplotlib: pip install 'gpusizer[plot]'") from None
    return plt


def _axes(ax: Any, figsize: tuple[float, float] = (7, 4.5)) -> Any:
    if ax is not None:
        return ax
    _, ax = _pyplot().subplots(figsize=figsize)
    return ax


def _items(objects: Any, *attributes: str) -> list[Any]:
    """``objects`` as a list: one object (it has one of ``attributes``) or an iterable of them."""
    if any(hasattr(objects, name) for name in attributes):
        return [objects]
    return list(objects)


def _tokens(value: float, _position: Any = None) -> str:
    """Axis label of a token count: 4K, 128K, 1M (binary, as contexts are quoted)."""
    for size, suffix in ((2**20, "M"), (2**10, "K")):
        if value >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"


def _plain_numbers(axis: Any) -> None:
    """Label a log axis 1, 10, 100 and 2, 3, 5 rather than in powers of ten."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.10g}"))
    axis.set_minor_formatter(FuncFormatter(lambda value, _: f"{value:,.10g}" if str(value)[0] in "25" else ""))


def _bars(items: list[Any]) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Labels, component sizes (bars x parts), capacities and budgets of every bar. [B]

    An estimate over arrays gives one bar per point, labelled ``context x concurrency``; a scalar
    estimate is labelled with its setup; a bare breakdown (one GPU of a layout) ``GPU i``.
    """
    labels: list[str] = []
    parts, capacity, budget = [], [], []
    for index, item in enumerate(items):
        m = getattr(item, "memory", item)
        fields = [getattr(m, name) for _, name in MEMORY_PARTS] + [m.capacity_bytes, m.budget_bytes]
        setup = [getattr(item, "context", 0), getattr(item, "concurrency", 0)]
        arrays = [a.ravel() for a in np.broadcast_arrays(*(np.asarray(f, dtype=float) for f in [*fields, *setup]))]
        count = arrays[0].size
        if not hasattr(item, "memory"):
            labels += [f"GPU {index}"] * count
        elif count == 1:
            labels.append(f"{item.model}\n{item.gpus} x {item.gpu}")
        else:
            labels += [f"{_tokens(c)} x {u:g}" for c, u in zip(arrays[-2], arrays[-1], strict=True)]
        parts.append(np.stack(arrays[: len(MEMORY_PARTS)], axis=-1))
        capacity.append(arrays[len(MEMORY_PARTS)])
        budget.append(arrays[len(MEMORY_PARTS) + 1])
    return labels, np.concatenate(parts), np.concatenate(capacity), np.concatenate(budget)


def memory_breakdown(
    items: Any,
    *,
    labels: Iterable[str] | None = None,
    unit: str = "GB",
    ax: Any = None,
) -> Any:
    """Draw per-GPU memory as stacked bars, with each GPU's capacity and the engine's budget.

    Parameters
    ----------
    items : Estimate, MemoryBreakdown, or an iterable of them
        One bar per scalar estimate or breakdown; an estimate over arrays gives one bar per point of
        its sweep. Anything with a ``.memory`` breakdown (or the fields of ``MemoryBreakdown``)
        works, so a multi-GPU layout can pass one breakdown per GPU.
    labels : iterable of str, optional
        One label per bar; default: the setup, ``context x concurrency`` of a sweep, or ``GPU i``.
    unit : str
        Size unit of the axis, a key of ``display.BYTE_UNITS`` (``"GB"``, ``"GiB"``).
    ax : matplotlib Axes, optional
        Where to draw; a new figure otherwise.

    Returns
    -------
    matplotlib Axes
        Bars in ``unit``: weights, KV cache, activations and runtime, bottom to top; a solid line at
        the capacity and a dashed line at the engine's budget of each GPU.

    Raises
    ------
    ImportError
        When matplotlib is not installed.
    ValueError
        When ``labels`` does not give one label per bar.
    """
    from gpusizer.display import BYTE_UNITS

    ax = _axes(ax)
    names, parts, capacity, budget = _bars(_items(items, "memory", "weights_bytes"))
    if labels is not None:
        names = list(labels)
        if len(names) != len(parts):
            raise ValueError(f"labels: expected {len(parts)} labels, one per bar, got {len(names)}")
    scale = BYTE_UNITS[unit]
    x = np.arange(len(parts))
    bottom = np.zeros(len(parts))
    for k, (part, _) in enumerate(MEMORY_PARTS):
        ax.bar(x, parts[:, k] / scale, bottom=bottom, color=f"C{k}", width=0.6, label=part)
        bottom += parts[:, k] / scale
    ax.hlines(capacity / scale, x - 0.4, x + 0.4, colors="k", lw=2, label="capacity")
    ax.hlines(budget / scale, x - 0.4, x + 0.4, colors="k", lw=1.2, linestyles="--", label="engine share")
    ax.set_xticks(x, names, fontsize=8)
    ax.set(ylabel=f"memory per GPU [{unit}]", title="Memory per GPU")
    ax.grid(True, axis="y", lw=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    return ax


def concurrency_vs_context(
    estimates: Any,
    *,
    labels: Iterable[str] | None = None,
    ax: Any = None,
) -> Any:
    """Draw the sequences the KV pool holds (``max_concurrency``) against the context.

    Parameters
    ----------
    estimates : Estimate or iterable of Estimate
        Estimates over an array of contexts (anything with ``context``, ``max_concurrency`` and,
        for the default label, ``model``, ``gpus`` and ``gpu``).
    labels : iterable of str, optional
        One legend label per estimate; default ``model on n x gpu, weights/KV``.
    ax : matplotlib Axes, optional
        Where to draw; a new figure otherwise.

    Returns
    -------
    matplotlib Axes
        Log-log axes: context [token] against sequences [-]. A context at which not even one
        sequence fits has no marker; a dotted line marks each scalar ``concurrency`` asked for.

    Raises
    ------
    ImportError
        When matplotlib is not installed.
    """
    ax = _axes(ax)  # first: it raises the ImportError that names the extra
    from matplotlib.ticker import FuncFormatter

    items = _items(estimates, "max_concurrency")
    names = list(labels) if labels is not None else [
        f"{e.model} on {e.gpus} x {e.gpu}, {e.weights}/KV {e.kv_cache}" for e in items
    ]
    for index, e in enumerate(items):
        context, fitting = np.broadcast_arrays(np.asarray(e.context), np.asarray(e.max_concurrency))
        order = np.argsort(context.ravel(), kind="stable")
        x, y = context.ravel()[order], fitting.ravel()[order].astype(float)
        y[y < 1] = np.nan  # nothing fits: no point on a log axis
        color = f"C{index % 10}"
        ax.plot(x, y, marker="o", ms=3, color=color, label=names[index])
        asked = getattr(e, "concurrency", None)
        if asked is not None and np.ndim(asked) == 0:
            ax.axhline(asked, color=color, lw=0.8, ls=":")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    _plain_numbers(ax.yaxis)
    ax.xaxis.set_major_formatter(FuncFormatter(_tokens))
    ax.set(xlabel="context per sequence [token]", ylabel="sequences the KV pool holds [-]",
           title="Concurrency against context")
    ax.grid(True, which="both", lw=0.3)
    ax.legend(fontsize=7)
    return ax


def throughput_vs_latency(
    latency: Any,
    throughput: Any = None,
    *,
    load: Any = None,
    label: str | None = None,
    slo: float | None = None,
    latency_name: str = "TPOT",
    throughput_name: str = "throughput",
    unit: str = "tok/s",
    ax: Any = None,
) -> Any:
    """Draw throughput against latency as the load grows: one curve per call (pass ``ax`` to overlay).

    Parameters
    ----------
    latency : array_like or serving.Curve
        Latency at each load point (time per output token, TTFT, end-to-end...) [s]; or a
        ``serving.concurrency_curve`` result, drawn directly: its TPOT against its aggregate tokens/s,
        each point marked with its concurrency.
    throughput : array_like
        Throughput at the same points (aggregate decode, requests served...); not with a curve. [``unit``]
    load : array_like, optional
        The load of each point (concurrency, requests per second), written beside its marker.
    label : str, optional
        Legend label of the curve.
    slo : float, optional
        A latency target drawn as a vertical dashed line. [s]
    latency_name, throughput_name, unit : str
        Axis titles and the throughput unit.
    ax : matplotlib Axes, optional
        Where to draw; a new figure otherwise.

    Returns
    -------
    matplotlib Axes
        Latency [ms] on x, throughput [``unit``] on y.

    Raises
    ------
    ImportError
        When matplotlib is not installed.
    ValueError
        When the arrays do not have the same number of points.
    """
    ax = _axes(ax)
    if throughput is None and hasattr(latency, "aggregate_tokens_per_second"):  # a serving.Curve
        curve = latency
        latency, throughput = curve.tpot_seconds, curve.aggregate_tokens_per_second
        load = curve.concurrency if load is None else load
    if throughput is None:
        raise ValueError("throughput: give the throughput of each latency point, or pass a serving.Curve")
    x = np.ravel(np.asarray(latency, dtype=float)) * 1e3
    y = np.ravel(np.asarray(throughput, dtype=float))
    if x.shape != y.shape:
        raise ValueError(f"latency and throughput must have the same points, got {x.size} and {y.size}")
    (line,) = ax.plot(x, y, marker="o", ms=4, label=label)
    if load is not None:
        for xi, yi, li in zip(x, y, np.broadcast_to(load, x.shape).ravel(), strict=True):
            ax.annotate(f"{li:g}", (xi, yi), fontsize=7, xytext=(3, 3), textcoords="offset points",
                        color=line.get_color())
    if slo is not None:
        target = f"{latency_name} target {slo * 1e3:g} ms"
        if target not in ax.get_legend_handles_labels()[1]:  # one line per target when curves are overlaid
            ax.axvline(slo * 1e3, color="grey", ls="--", lw=1, label=target)
    ax.set(xlabel=f"{latency_name} [ms]", ylabel=f"{throughput_name} [{unit}]", title="Throughput against latency")
    ax.grid(True, lw=0.3)
    if label is not None or slo is not None:
        ax.legend(fontsize=7)
    return ax


def cost_vs_slo(
    slo: Any,
    cost: Any,
    *,
    labels: Iterable[str] | None = None,
    unit: str = "$/Mtok",
    slo_name: str = "TPOT",
    frontier: bool = True,
    ax: Any = None,
) -> Any:
    """Draw the cost per million tokens of each option against a latency target (SLO).

    Parameters
    ----------
    slo : array_like
        Latency targets, increasing. [s]
    cost : mapping of str to array_like, array_like, or sequence of Shortlist
        Cost of each option at each target: ``{label: costs}``, or an array of shape
        ``(options, targets)`` (or ``(targets,)`` for one option). ``nan`` where the option cannot
        meet the target. Or one ``shortlist`` result per target, drawn directly: each configuration's
        ``usd_per_million_tokens`` (``nan`` where it misses the target). [``unit``]
    labels : iterable of str, optional
        Option names when ``cost`` is an array.
    unit : str
        Cost unit of the axis (``$/Mtok``, ``GPU-h/Mtok``).
    slo_name : str
        Name of the latency the target applies to.
    frontier : bool
        Also draw the cheapest option at each target.
    ax : matplotlib Axes, optional
        Where to draw; a new figure otherwise.

    Returns
    -------
    matplotlib Axes
        Target [ms] on x, cost [``unit``] on a log y axis.

    Raises
    ------
    ImportError
        When matplotlib is not installed.
    ValueError
        When an option's costs do not match the targets, or ``labels`` the options.
    """
    ax = _axes(ax)
    x = np.ravel(np.asarray(slo, dtype=float))
    if isinstance(cost, list | tuple) and cost and hasattr(cost[0], "rows"):  # shortlists, one per target
        cost = _shortlist_costs(cost)
    if isinstance(cost, Mapping):
        names, table = list(cost), np.array([np.ravel(np.asarray(v, dtype=float)) for v in cost.values()])
    else:
        table = np.atleast_2d(np.asarray(cost, dtype=float))
        names = list(labels) if labels is not None else [f"option {i + 1}" for i in range(len(table))]
    if table.shape[-1] != x.size or len(names) != len(table):
        raise ValueError(f"cost must be {len(names)} options x {x.size} targets, got shape {table.shape}")
    for index, (name, row) in enumerate(zip(names, table, strict=True)):
        ax.plot(x * 1e3, row, marker="o", ms=3, color=f"C{index % 10}", label=name)
    if frontier and len(table) > 1:  # thin and dashed on top, so the option it follows stays visible
        ax.plot(x * 1e3, np.fmin.reduce(table, axis=0), color="k", lw=1, ls="--", zorder=3, label="cheapest")
    ax.set_yscale("log")
    _log_ticks(ax.yaxis, table)
    ax.set(xlabel=f"{slo_name} target [ms]", ylabel=f"cost [{unit}]", title="Cost against latency target")
    ax.grid(True, which="both", lw=0.3)
    ax.legend(fontsize=7)
    return ax


def _shortlist_costs(tables: Any) -> dict[str, np.ndarray]:
    """``{configuration: $/Mtok at each target}`` of one shortlist per target (``nan`` where a row is absent)."""
    names = list(dict.fromkeys(row.configuration for table in tables for row in table.rows))
    costs = {name: np.full(len(tables), np.nan) for name in names}
    for k, table in enumerate(tables):
        for row in table.rows:
            costs[row.configuration][k] = row.usd_per_million_tokens
    return costs


def _log_ticks(axis: Any, values: np.ndarray, count: int = 5) -> None:
    """Label a log axis with ``count`` round values across the finite ``values`` (a log axis spanning less
    than a decade otherwise shows one or two labels)."""
    from matplotlib.ticker import NullFormatter

    finite = values[np.isfinite(values) & (values > 0)]
    if finite.size == 0 or finite.max() / finite.min() > 100:
        _plain_numbers(axis)
        return
    ticks = sorted({float(f"{t:.2g}") for t in np.geomspace(finite.min(), finite.max(), count)})
    axis.set_ticks(ticks, labels=[f"{t:,.10g}" for t in ticks])
    axis.set_minor_formatter(NullFormatter())


def _points(item: Any) -> list[tuple[str, Any, Any, Any]]:
    """(label, intensity, expected FLOP/s, ceiling FLOP/s) of each phase in ``item`` (an estimate, a Speed,
    a Decode or a Prefill)."""
    if isinstance(item, Speed) or not isinstance(item, Decode | Prefill):
        return _points(item.decode) + _points(item.prefill)
    if isinstance(item, Decode):
        return [("decode", item.arithmetic_intensity, np.divide(item.flops, item.tpot_seconds_expected),
                 np.divide(item.flops, item.tpot_seconds_ceiling))]
    return [("prefill", item.arithmetic_intensity, np.divide(item.flops, item.seconds_expected),
             np.divide(item.flops, item.seconds_ceiling))]


def roofline(
    gpu: str | catalog.GPU,
    points: Iterable[Any] = (),
    *,
    compute: str | None = None,
    labels: Iterable[str] | None = None,
    ax: Any = None,
) -> Any:
    """Draw ``gpu``'s rooflines and the operating points of ``points``.

    Parameters
    ----------
    gpu : str or GPU
        Catalogue id or record.
    points : iterable of Estimate, Speed, Decode or Prefill
        Results of ``estimate`` or ``performance.speed`` (arrays from sweeps are drawn as one marker per
        element). An estimate is labelled with its model and weight precision.
    compute : str, optional
        Draw only the roof of this precision (``roofline.tensor_peak``); default: one roof per dense tensor
        rate the GPU publishes (bf16, fp8, fp4), so that an FP8 point sits under the FP8 roof.
    labels : iterable of str, optional
        One legend label per item of ``points``.
    ax : matplotlib Axes, optional
        Where to draw; a new figure otherwise.

    Returns
    -------
    matplotlib Axes
        Log-log axes: arithmetic intensity [FLOP/B] against attainable rate [FLOP/s].

    Raises
    ------
    ImportError
        When matplotlib is not installed.
    """
    plt = _pyplot()
    device = catalog.gpu(gpu)
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 5))
    intensity = np.logspace(-1, 4, 200)
    roofs = [roof.tensor_peak(device.dense, compute)] if compute is not None else [
        (rate, name) for name in ("bf16", "fp8", "fp4") if (rate := getattr(device.dense, name)) is not None
    ] or [roof.tensor_peak(device.dense, "bf16")]
    for k, (peak, used) in enumerate(roofs):
        attainable = roof.attainable_flops(intensity, peak, device.memory_bandwidth)
        ax.plot(intensity, attainable, "k", ls=("-", "--", ":")[k % 3], lw=1.5, label=f"{device.name}: {used} roof")
        if np.isfinite(peak):
            ridge = roof.ridge_point(peak, device.memory_bandwidth)
            ax.annotate(f"{used} ridge {ridge:.0f} FLOP/B", (ridge, peak), fontsize=8, xytext=(4, -12),
                        textcoords="offset points")
    names = list(labels) if labels is not None else None
    for index, item in enumerate(points):
        name = names[index] if names else _point_name(item, index)
        for phase, x, expected, ceiling in _points(item):
            marker = "o" if phase == "decode" else "s"
            color = f"C{index % 10}"
            ax.scatter(np.ravel(x), np.ravel(expected), marker=marker, color=color, label=f"{name} {phase} expected")
            ax.scatter(np.ravel(x), np.ravel(ceiling), marker=marker, facecolors="none", edgecolors=color,
                       label=f"{name} {phase} ceiling")
    ax.set(xscale="log", yscale="log", xlabel="arithmetic intensity [FLOP/B]", ylabel="attainable [FLOP/s]",
           title=f"Roofline of {device.name}")
    ax.grid(True, which="both", lw=0.3)
    ax.legend(fontsize=7)
    return ax


def _point_name(item: Any, index: int) -> str:
    """Default legend name of a roofline item: an estimate's model and weight precision, else ``#i``."""
    if hasattr(item, "model") and hasattr(item, "weights"):
        return f"{item.model} {item.weights}"
    return f"#{index + 1}"


def save(ax: Any, name: str, folder: str | None = None) -> Any:
    """Write the figure holding ``ax`` as ``folder/name``, close it, and return the path.

    ``folder`` defaults to the environment variable ``GPUSIZER_FIGURES``, else a new temporary
    folder; the examples save their figures through this, and the tests point it at ``tmp_path``.
    """
    import os
    import tempfile
    from pathlib import Path

    target = Path(folder or os.environ.get("GPUSIZER_FIGURES") or tempfile.mkdtemp(prefix="gpusizer-figures-"))
    target.mkdir(parents=True, exist_ok=True)
    path = target / name
    ax.figure.savefig(path, dpi=100, bbox_inches="tight")
    _pyplot().close(ax.figure)
    return path
