"""Sweeps: ``estimate`` over the cartesian product of models, GPUs, counts, layouts, precisions, engines
and workloads, by numpy broadcasting.

``sweep(models, gpus, ...)`` turns each distinct record into numbers once (a model at a precision,
a GPU, an engine: loops over the records, never over configurations), lays them out along their own
axis of one broadcast grid (models ``(M, 1, 1, ...)``, GPUs ``(1, G, 1, ...)``, ...), and runs the
same numeric core as ``estimate`` over it: ``estimator.memory_numbers`` for memory and
``performance.decode_numbers`` / ``prefill_numbers`` for speed. Every number therefore equals
``estimate``'s for that configuration; ``tests/test_sweep.py`` checks it field by field.

The answer is a ``Sweep`` (``sweeper.table``): one row per configuration, its columns flat numpy arrays
(kept compact, in the broadcast shape each depends on, until read), with ``filter``, ``best``, ``take``,
``to_pandas`` (optional extra ``pandas``), ``to_csv`` and ``to_parquet`` (``pyarrow``). Axis order,
slowest first: model, gpu, gpu_count, layout (only for a sequence of layouts), weights, kv_cache,
engine, context, prompt (only when given), concurrency.

A layout axis (``layout=["tp8", "tp4xpp2", "pp8"]``) lays each GPU count's ``parallel.Layout`` along
its own dimension: ``configuration.setups`` works out the links and degrees once per distinct GPU,
engine and layout, and ``performance.regimes`` names the band regime of each; the rest of the
arithmetic broadcasts over it like any other axis. ``gpusizer.best_layout`` ranks its candidate
layouts with one such sweep.

Deliberate omissions: systems (``hgx-h200-8x``) are not a GPU axis value; sweep their GPU with a
``gpu_count`` instead (and their NIC figure, ``estimator.scale_out_bandwidth``, as
``scale_out_bandwidth``). No physics lives here.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import numpy as np

from gpusizer import catalog, checks, configuration, efficiency, engines, estimator, parallel, performance, unpack
from gpusizer import grid as grid_
from gpusizer.sweeper.table import AXES, REPEATS, Sweep, estimate_row, put

__all__ = ["AXES", "Sweep", "estimate_row", "sweep"]

# --- the grid ---------------------------------------------------------------------------------------


def sweep(
    models: Any = None,
    gpus: Any = None,
    *,
    weights: Any = (None,),
    kv_cache: Any = (None,),
    context: Any = 8192,
    concurrency: Any = 1,
    gpu_count: Any = 1,
    engine: Any = "vllm",
    prompt: Any = None,
    layout: Any = "tp",
    calibration: Any = None,
    prices: Mapping[str, float] | bool | None = None,
    scale_out_bandwidth: float | None = None,
) -> Sweep:
    """``estimate`` for every combination of the given values, by broadcasting.

    Parameters
    ----------
    models : str, Model or iterable of them, optional
        Catalogue ids or records; default every catalogue model.
    gpus : str, GPU or iterable of them, optional
        Catalogue ids, aliases or records; default every catalogue GPU.
    weights : str or iterable of str or None
        Weight precisions; ``None`` is each checkpoint's own (default).
    kv_cache : str or iterable of str or None
        KV-cache dtypes; ``None`` is each model's activation dtype (default).
    context : array_like of int
        Tokens each sequence holds. [token]
    concurrency : array_like of int
        Sequences resident at once. [-]
    gpu_count : array_like of int
        GPUs the model is split over. [-]
    engine : str or iterable of str
        ``vllm``, ``sglang``, ``trtllm``, ``llama.cpp``.
    prompt : array_like of int, optional
        Prompt tokens for prefill and TTFT, an axis of its own; default: each row's ``context``. [token]
    layout : str, parallel.Layout or sequence of them
        How the ``gpu_count`` GPUs share a model, as ``estimate``'s ``layout``: a bare ``"tp"``
        (default), ``"pp"``, ``"ep"``, ``"dp"`` or ``"layer"`` uses all of them; a spelled-out layout
        (``"tp2xpp2"``) or a ``parallel.Layout`` must match every ``gpu_count``. One layout applies
        to every row; a sequence (``["tp8", "tp4xpp2", "pp8"]``) is an axis of its own, ``layout``,
        right after ``gpu_count``, its values as given, each row's layout in ``parallel_layout``.
        Every layout must resolve at every ``gpu_count`` (else ``ValueError``, naming the layout
        and the count) and suit every model.
    calibration : Calibration, optional
        Your own calibration (``gpusizer.calibrate``), as in ``estimate``.
    prices : mapping or bool, optional
        ``True`` for the typical prices of ``gpusizer.cost``'s table, or a mapping GPU id -> USD per
        GPU-hour that overrides it: adds ``usd_per_gpu_hour``, ``usd_per_hour`` (all GPUs of the row)
        and ``usd_per_million_tokens`` (output tokens at the expected aggregate decode rate,
        ``cost.usd_per_million_tokens``). GPUs without a price get NaN.
    scale_out_bandwidth : float, optional
        NIC bandwidth per GPU and direction for collectives that leave a GPU's scale-up domain, as a
        system target gives ``estimate`` (``estimator.scale_out_bandwidth``); default the link
        table's scale-out figure. [B/s]

    Returns
    -------
    Sweep
        One row per configuration, axes in the order of ``AXES``.

    Raises
    ------
    KeyError
        Unknown model or GPU (the message names the closest ids).
    TypeError
        A calibration, prices or layout of the wrong type, naming the argument.
    ValueError
        Non-positive or fractional lengths or counts, contexts or prompts over ``checks.MAX_TOKENS``,
        counts over ``checks.MAX_GPUS``, a grid of more than ``checks.MAX_GRID_ROWS`` (5,000,000) rows,
        unknown precision or engine, an empty layout sequence, a layout that does not match a
        ``gpu_count`` or a model, a non-positive ``scale_out_bandwidth``.

    Examples
    --------
    >>> s = sweep(["llama-3.1-8b"], ["h100-sxm", "rtx-4090"], weights=["bf16", "fp8"], context=[4096, 32768],
    ...           concurrency=[1, 8, 64])
    >>> len(s), int(s["fits"].sum())
    (24, 16)
    >>> s.filter(gpu="rtx-4090", weights="fp8", context=4096)["max_concurrency"]
    array([22, 22, 22])
    >>> split = sweep(["llama-3.1-70b"], ["h100-sxm"], gpu_count=8, layout=["tp8", "tp4xpp2", "pp8"])
    >>> split["parallel_layout"].tolist(), split.shape[3]
    (['tp8', 'tp4xpp2', 'pp8'], 3)
    """
    values, layouts = grid_.sweep_axes(models, gpus, weights=weights, kv_cache=kv_cache, context=context,
                                       concurrency=concurrency, gpu_count=gpu_count, engine=engine, prompt=prompt,
                                       layout=layout)
    records, devices = list(values["model"]), list(values["gpu"])
    counts = np.asarray(values["gpu_count"], dtype=np.int64)
    profiles = [engines.engine(e) for e in values["engine"]]
    prompts = np.asarray(values["prompt"], dtype=np.int64) if "prompt" in values else None
    if calibration is not None:
        efficiency.check_calibration(calibration)
    if prices is not None and not isinstance(prices, bool | Mapping):
        raise TypeError(f"prices must be True or a mapping of GPU id to USD per GPU-hour, got "
                        f"{type(prices).__name__} {prices!r:.80}")
    scale_out = None if scale_out_bandwidth is None else float(
        checks.positive_array(scale_out_bandwidth, "scale_out_bandwidth").item())
    axes = {**values, "model": tuple(r.id for r in records), "gpu": tuple(d.id for d in devices)}
    checks.grid_rows({name: len(values) for name, values in axes.items()}, checks.MAX_GRID_ROWS)
    grid = grid_.Grid(axes)
    plans = _plans(records, counts, layouts)
    names, numbers, each = grid.precisions(records)  # stacked, and one record per cell
    count = grid.along("gpu_count", counts)
    plan = SimpleNamespace(**{
        name: _laid(grid, np.array([[getattr(p, name) for p in row] for row in plans.tolist()]))
        for name in ("tp", "pp", "ep", "dp", "attention_dp")
    })
    ctx, users = grid.along("context", np.asarray(axes["context"])), grid.along("concurrency", axes["concurrency"])
    asked = ctx if prompts is None else grid.along("prompt", prompts)
    memory = _memory(grid, numbers, devices, profiles, count, ctx, users, plan)
    s, c, decode, prefill = _speed(grid, each, devices, profiles, count, _laid(grid, plans), (calibration, scale_out),
                                   ctx, users, asked, prompts is None)
    _label(s, c, decode, prefill, users, _laid(grid, _names(plans)))
    links = np.where(count > 1, s.links, "none").astype(object)
    parallel_ = {"layout": decode["layout"],
                 **estimator.parallel_numbers(plan, count, links, decode, prefill["scaling_efficiency"])}
    flat: dict[str, Any] = {
        "model": grid.along("model", unpack.objects(axes["model"])),
        "gpu": grid.along("gpu", unpack.objects(axes["gpu"])),
        "engine": grid.along("engine", unpack.objects(axes["engine"])),
        "gpu_count": count,
        **{name: names[..., i] for i, name in enumerate(("weights", "expert_weights", "kv_cache"))},
        "context": ctx,
        "concurrency": users,
        "prompt": asked,
        **memory,
    }
    for prefix, values in (("decode_", decode), ("prefill_", prefill), ("parallel_", parallel_)):
        for name, value in values.items():
            put(flat, prefix + name, value)
    data = {name: np.asarray(value) for name, value in flat.items() if name not in REPEATS}
    if prices is not None and prices is not False:
        data.update(_costs(data, prices))
    return Sweep(data=data, shape=grid.shape, axes=axes)


def _memory(
    grid: grid_.Grid, numbers: Any, devices: list[catalog.GPU], profiles: list[engines.EngineProfile], count: Any,
    ctx: Any, users: Any, plan: Any,
) -> dict[str, Any]:
    """``estimator.memory_numbers`` over the grid: the engine profiles' fields laid along the engine axis."""
    codes = grid.along("engine", np.arange(len(profiles)))
    e = SimpleNamespace(**{
        name: unpack.column([getattr(p, name) for p in profiles], codes)
        for name in engines.EngineProfile.model_fields if not isinstance(getattr(profiles[0], name), tuple)
    })
    capacity = np.array([[estimator.engine_capacity(d, p) for p in profiles] for d in devices])
    return estimator.memory_numbers(numbers, e, grid.along(("gpu", "engine"), capacity), count, ctx, users, plan)


def _speed(
    grid: grid_.Grid, each: np.ndarray, devices: list[catalog.GPU], profiles: list[engines.EngineProfile],
    count: Any, plans: np.ndarray, given: tuple[Any, float | None], ctx: Any, users: Any, asked: Any,
    same_prompt: bool,
) -> tuple[Any, Any, dict[str, Any], dict[str, Any]]:
    """The setups, constants, decode and prefill fields over the grid (``configuration.setups`` of the
    layouts ``plans`` laid on it, ``performance.decode_numbers`` and ``prefill_numbers``), each GPU x engine
    with its own table; ``given`` is the calibration and the scale-out bandwidth."""
    calibration, scale_out = given
    tables, index = grid_.tables(devices, profiles, calibration)
    engine_names = unpack.objects([p.name for p in profiles])[grid.along("engine", np.arange(len(profiles)))]
    gpus = grid.along("gpu", unpack.objects(devices))
    setups = [configuration.setups(each, gpus, count, engine_names, plans, t, scale_out) for t in tables]
    s, c = (grid_.compact(grid_.merged(index, grid, [x[k] for x in setups])) for k in (0, 1))
    bands = {(phase, batch): grid_.merged(index, grid, [performance.band_factors(t, phase, x[0], x[1], batch)
                                                        for t, x in zip(tables, setups, strict=True)])
             for phase, batch in (("decode", "batch 1"), ("decode", "batch > 1"), ("prefill", None))}
    decode = performance.decode_numbers(s, c, (bands["decode", "batch 1"], bands["decode", "batch > 1"]), ctx, users)
    first = (decode["tpot_seconds_ceiling"], decode["tpot_seconds_expected"]) if same_prompt else None
    prefill = performance.prefill_numbers(s, c, bands["prefill", None], asked, users, None, first)
    return s, c, decode, prefill


def _label(s: Any, c: Any, decode: dict[str, Any], prefill: dict[str, Any], users: Any, layouts: np.ndarray) -> None:
    """Add the labels that ``estimate`` writes as strings of one configuration to ``decode`` and ``prefill``
    (``layouts``: the layout names laid on the grid)."""
    decode["regime"] = np.where(users == 1, performance.regimes("decode", s, "batch 1"),
                                performance.regimes("decode", s, "batch > 1"))
    prefill["regime"] = performance.regimes("prefill", s)
    for values in (decode, prefill):
        values.update(constants=c.group, informed=c.informed, compute_rate_published=s.published)
    prefill["unknown"] = np.where(s.published, np.array(None, dtype=object), performance.PREFILL_UNKNOWN)
    decode.update(layout=layouts, links=s.links)


# --- the layouts ------------------------------------------------------------------------------------


def _plans(records: list[catalog.Model], counts: np.ndarray, layouts: tuple[Any, ...]) -> np.ndarray:
    """The layout at each GPU count (rows) of each given layout (columns), an object array of
    ``parallel.Layout`` checked against every model as ``estimate`` checks it."""
    plans = np.empty((len(counts), len(layouts)), dtype=object)
    for (i, n), (j, text) in itertools.product(enumerate(counts.tolist()), enumerate(layouts)):
        plans[i, j] = parallel.layout(text, n)  # a layout that does not use n GPUs raises, naming both
    for record, plan in itertools.product(records, dict.fromkeys(plans.flat)):
        parallel.check(plan, record, heads=False)
        if record.num_heads % plan.tp:
            warnings.warn(f"layout {plan.name!r}: the {record.num_heads} attention heads of {record.id} do not "
                          f"divide by {plan.tp}, which engines refuse; see gpusizer.best_layout", stacklevel=3)
    return plans


def _names(plans: np.ndarray) -> np.ndarray:
    """The canonical names of an object array of layouts."""
    names = np.empty(plans.shape, dtype=object)
    for index, plan in np.ndenumerate(plans):
        names[index] = plan.name
    return names


def _laid(grid: grid_.Grid, values: np.ndarray) -> np.ndarray:
    """Values of each GPU count x layout (``_plans``' shape) laid on the grid: along ``gpu_count``, and
    along ``layout`` when the sweep has that axis."""
    if "layout" in grid.at:
        return grid.along(("gpu_count", "layout"), values)
    return grid.along("gpu_count", values[:, 0])


def _costs(columns: Mapping[str, np.ndarray], prices: Mapping[str, float] | bool) -> dict[str, np.ndarray]:
    """Price columns from the price table (``gpusizer.cost``), ``prices`` overriding it; NaN where a GPU
    has no US-dollar price (none, or quotes only in another currency, never converted)."""
    from gpusizer import cost

    table = cost.prices(prices if isinstance(prices, Mapping) else None)
    gpu = columns["gpu"]
    usd = {i: r.typical for i, r in table.items() if r.in_usd}  # a price only in another currency is no USD price
    per_gpu = np.array([usd.get(i, np.nan) for i in gpu.ravel().tolist()]).reshape(gpu.shape)
    priced = np.isfinite(per_gpu)
    count = columns["gpu_count"]
    rate = columns["decode_expected_aggregate_tokens_per_second"]
    per_token = cost.usd_per_million_tokens(np.where(priced, per_gpu, 1.0), count, rate)
    return {
        "usd_per_gpu_hour": per_gpu,
        "usd_per_hour": per_gpu * count,
        "usd_per_million_tokens": np.where(priced, per_token, np.nan),
    }
