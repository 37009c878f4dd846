"""Sweeps: ``estimate`` over the cartesian product of models, GPUs, counts, precisions, engines and
workloads, by numpy broadcasting.

``sweep(models, gpus, ...)`` turns each distinct record into numbers once (a model at a precision,
a GPU, an engine: loops over the records, never over configurations), lays them out along their own
axis of one broadcast grid (models ``(M, 1, 1, ...)``, GPUs ``(1, G, 1, ...)``, ...), and runs the
same numeric core as ``estimate`` over it: ``estimator.memory_numbers`` for memory and
``performance.decode_numbers`` / ``prefill_numbers`` for speed. Every number therefore equals
``estimate``'s for that configuration; ``tests/test_sweep.py`` checks it field by field.

The answer is a ``Sweep`` (``sweeper.table``): one row per configuration, its columns flat numpy arrays
(kept compact, in the broadcast shape each depends on, until read), with ``filter``, ``best``, ``take``,
``to_pandas`` (optional extra ``pandas``), ``to_csv`` and ``to_parquet`` (``pyarrow``). Axis order,
slowest first: model, gpu, gpu_count, weights, kv_cache, engine, context, prompt (only when given),
concurrency.

Deliberate omissions: systems (``hgx-h200-8x``) are not a GPU axis value; sweep their GPU with a
``gpu_count`` instead. No physics lives here.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import numpy as np

from gpusizer import catalog, checks, configuration, efficiency, engines, estimator, parallel, performance, unpack
from gpusizer import grid as grid_
from gpusizer.checks import integer_array
from gpusizer.sweeper.table import AXES, REPEATS, Sweep, estimate_row, put

__all__ = ["AXES", "Sweep", "estimate_row", "sweep"]

# --- the grid ---------------------------------------------------------------------------------------


def _axis(value: Any, default: Iterable[Any]) -> tuple[Any, ...]:
    """Axis values: a single value is an axis of one; None means ``default``."""
    if value is None:
        return tuple(default)
    if isinstance(value, str) or not isinstance(value, Iterable):
        return (value,)
    return tuple(value)


def _counts(value: Any, name: str, maximum: int = 2**50) -> np.ndarray:
    return integer_array(np.ravel(np.asarray(value)), name, minimum=1, maximum=maximum)


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
    layout: str = "tp",
    calibration: Any = None,
    prices: Mapping[str, float] | bool | None = None,
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
    layout : str
        How the ``gpu_count`` GPUs share a model, as ``estimate``'s ``layout``: a bare ``"tp"``
        (default), ``"pp"``, ``"ep"`` or ``"layer"`` uses all of them; a spelled-out layout
        (``"tp2xpp2"``) must match every ``gpu_count``.
    calibration : Calibration, optional
        Your own calibration (``gpusizer.calibrate``), as in ``estimate``.
    prices : mapping or bool, optional
        ``True`` for the typical prices of ``gpusizer.cost``'s table, or a mapping GPU id -> USD per
        GPU-hour that overrides it: adds ``usd_per_gpu_hour``, ``usd_per_hour`` (all GPUs of the row)
        and ``usd_per_million_tokens`` (output tokens at the expected aggregate decode rate,
        ``cost.usd_per_million_tokens``). GPUs without a price get NaN.

    Returns
    -------
    Sweep
        One row per configuration, axes in the order of ``AXES``.

    Raises
    ------
    KeyError
        Unknown model or GPU (the message names the closest ids).
    TypeError
        A calibration or prices of the wrong type, naming the argument.
    ValueError
        Non-positive or fractional lengths or counts, contexts or prompts over ``checks.MAX_TOKENS``,
        counts over ``checks.MAX_GPUS``, a grid of more than ``checks.MAX_GRID_ROWS`` (5,000,000) rows,
        unknown precision or engine, a layout that does not match a ``gpu_count`` or a model.

    Examples
    --------
    >>> s = sweep(["llama-3.1-8b"], ["h100-sxm", "rtx-4090"], weights=["bf16", "fp8"], context=[4096, 32768],
    ...           concurrency=[1, 8, 64])
    >>> len(s), int(s["fits"].sum())
    (24, 14)
    >>> s.filter(gpu="rtx-4090", weights="fp8", context=4096)["max_concurrency"]
    array([18, 18, 18])
    """
    records = [catalog.model(m) for m in _axis(models, catalog.models())]
    devices = [catalog.gpu(g) for g in _axis(gpus, catalog.gpus())]
    counts = _counts(gpu_count, "gpu_count", checks.MAX_GPUS)
    profiles = [engines.engine(e) for e in _axis(engine, ("vllm",))]
    prompts = None if prompt is None else _counts(prompt, "prompt", checks.MAX_TOKENS)
    if calibration is not None:
        efficiency.check_calibration(calibration)
    if prices is not None and not isinstance(prices, bool | Mapping):
        raise TypeError(f"prices must be True or a mapping of GPU id to USD per GPU-hour, got "
                        f"{type(prices).__name__} {prices!r:.80}")
    axes = {
        "model": tuple(r.id for r in records), "gpu": tuple(d.id for d in devices), "gpu_count": tuple(counts.tolist()),
        "weights": _axis(weights, (None,)), "kv_cache": _axis(kv_cache, (None,)),
        "engine": tuple(p.name for p in profiles),
        "context": tuple(_counts(context, "context", checks.MAX_TOKENS).tolist()),
        **({} if prompts is None else {"prompt": tuple(prompts.tolist())}),
        "concurrency": tuple(_counts(concurrency, "concurrency").tolist()),
    }
    checks.grid_rows({name: len(values) for name, values in axes.items()}, checks.MAX_GRID_ROWS)
    grid = grid_.Grid(axes)
    plans = _plans(records, counts, layout)
    names, numbers, each = grid.precisions(records)  # stacked, and one record per cell
    count = grid.along("gpu_count", counts)
    plan = SimpleNamespace(**{
        name: grid.along("gpu_count", np.array([getattr(p, name) for p in plans]))
        for name in ("tp", "pp", "ep", "dp", "attention_dp")
    })
    ctx, users = grid.along("context", np.asarray(axes["context"])), grid.along("concurrency", axes["concurrency"])
    asked = ctx if prompts is None else grid.along("prompt", prompts)
    memory = _memory(grid, numbers, devices, profiles, count, ctx, users, plan)
    s, c, decode, prefill = _speed(grid, each, devices, profiles, count, layout, calibration, ctx, users, asked,
                                   prompts is None)
    _label(grid, s, c, decode, prefill, users, counts, plans)
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
    count: Any, layout: str, calibration: Any, ctx: Any, users: Any, asked: Any, same_prompt: bool,
) -> tuple[Any, Any, dict[str, Any], dict[str, Any]]:
    """The setups, constants, decode and prefill fields over the grid (``configuration.setups``,
    ``performance.decode_numbers`` and ``prefill_numbers``), each GPU x engine with its own table."""
    tables, index = grid_.tables(devices, profiles, calibration)
    engine_names = unpack.objects([p.name for p in profiles])[grid.along("engine", np.arange(len(profiles)))]
    setups = [configuration.setups(each, grid.along("gpu", unpack.objects(devices)), count, engine_names, layout, t)
              for t in tables]
    s, c = (grid_.compact(grid_.merged(index, grid, [x[k] for x in setups])) for k in (0, 1))
    bands = {(phase, batch): grid_.merged(index, grid, [performance.band_factors(t, phase, x[0], x[1], batch)
                                                        for t, x in zip(tables, setups, strict=True)])
             for phase, batch in (("decode", "batch 1"), ("decode", "batch > 1"), ("prefill", None))}
    decode = performance.decode_numbers(s, c, (bands["decode", "batch 1"], bands["decode", "batch > 1"]), ctx, users)
    first = (decode["tpot_seconds_ceiling"], decode["tpot_seconds_expected"]) if same_prompt else None
    prefill = performance.prefill_numbers(s, c, bands["prefill", None], asked, users, None, first)
    return s, c, decode, prefill


def _label(
    grid: grid_.Grid, s: Any, c: Any, decode: dict[str, Any], prefill: dict[str, Any], users: Any,
    counts: np.ndarray, plans: list[parallel.Layout],
) -> None:
    """Add the labels that ``estimate`` writes as strings of one configuration to ``decode`` and ``prefill``."""
    decode["regime"] = np.where(users == 1, grid.along("gpu_count", _regimes("decode", s, counts, "batch 1")),
                                grid.along("gpu_count", _regimes("decode", s, counts, "batch > 1")))
    prefill["regime"] = grid.along("gpu_count", _regimes("prefill", s, counts, None))
    for values in (decode, prefill):
        values.update(constants=c.group, informed=c.informed, compute_rate_published=s.published)
    prefill["unknown"] = np.where(s.published, np.array(None, dtype=object), performance.PREFILL_UNKNOWN)
    decode.update(layout=grid.along("gpu_count", unpack.objects([p.name for p in plans])), links=s.links)


def _plans(records: list[catalog.Model], counts: np.ndarray, layout: str) -> list[parallel.Layout]:
    """The layout at each GPU count, checked against every model as ``estimate`` checks it."""
    plans = [parallel.layout(layout, int(n)) for n in counts]
    for record, plan in itertools.product(records, plans):
        parallel.check(plan, record, heads=False)
        if record.num_heads % plan.tp:
            warnings.warn(f"layout {plan.name!r}: the {record.num_heads} attention heads of {record.id} do not "
                          f"divide by {plan.tp}, which engines refuse; see gpusizer.best_layout", stacklevel=3)
    return plans


def _regimes(phase: str, s: Any, counts: np.ndarray, batch: str | None) -> np.ndarray:
    """``performance.regime`` at each GPU count."""
    return unpack.objects([performance.regime(phase, replace(s, gpus=int(n)), batch) for n in counts])


def _costs(columns: Mapping[str, np.ndarray], prices: Mapping[str, float] | bool) -> dict[str, np.ndarray]:
    """Price columns from the price table (``gpusizer.cost``), ``prices`` overriding it; NaN where a GPU
    has no price."""
    from gpusizer import cost

    table = cost.prices(prices if isinstance(prices, Mapping) else None)
    gpu = columns["gpu"]
    per_gpu = np.array([table[i].typical if i in table else np.nan for i in gpu.ravel().tolist()]).reshape(gpu.shape)
    priced = np.isfinite(per_gpu)
    count = columns["gpu_count"]
    rate = columns["decode_expected_aggregate_tokens_per_second"]
    per_token = cost.usd_per_million_tokens(np.where(priced, per_gpu, 1.0), count, rate)
    return {
        "usd_per_gpu_hour": per_gpu,
        "usd_per_hour": per_gpu * count,
        "usd_per_million_tokens": np.where(priced, per_token, np.nan),
    }
