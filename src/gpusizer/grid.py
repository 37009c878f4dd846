"""The broadcast grid of a sweep: each axis of configurations along its own dimension, and the records
of arrays laid on it.

``Grid(axes)`` places values along named axes (models ``(M, 1, 1, ...)``, GPUs ``(1, G, 1, ...)``)
and unpacks every model x weights x kv_cache into numbers once (``unpack.model_numbers``).
``tables`` finds the distinct efficiency tables of a calibrated sweep, ``merged`` lets each GPU x
engine take the values computed with its own table, and ``compact`` cuts every array to length 1
along the axes it does not vary on, so that the arithmetic skips them. No physics lives here.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import fields, is_dataclass, replace
from typing import Any

import numpy as np

from gpusizer import catalog, checks, efficiency, engines, parallel, unpack
from gpusizer.checks import integer_array, map_arrays

__all__ = ["Grid", "axis_values", "compact", "layout_values", "merged", "positive_counts", "tables"]


def axis_values(value: Any, default: Iterable[Any]) -> tuple[Any, ...]:
    """Axis values: a single value (a string or a non-iterable) is an axis of one; None means ``default``."""
    if value is None:
        return tuple(default)
    if isinstance(value, str) or not isinstance(value, Iterable):
        return (value,)
    return tuple(value)


def positive_counts(value: Any, name: str, maximum: int = 2**50) -> np.ndarray:
    """``value`` as a flat array of whole numbers from 1 to ``maximum`` (else ValueError naming ``name``)."""
    return integer_array(np.ravel(np.asarray(value)), name, minimum=1, maximum=maximum)


def layout_values(layout: Any) -> tuple[tuple[Any, ...], bool]:
    """The layouts of a sweep, and whether they are an axis (a sequence) or one layout for every row."""
    if isinstance(layout, str | parallel.Layout):
        return (layout,), False
    if not isinstance(layout, Iterable):
        raise TypeError(f"layout must be a layout name, a parallel.Layout or a sequence of them, got "
                        f"{type(layout).__name__} {layout!r:.80}")
    values = tuple(layout)
    if not values:
        raise ValueError("layout must hold at least one layout, got an empty sequence")
    return values, True


def sweep_axes(models: Any, gpus: Any, *, weights: Any, kv_cache: Any, context: Any, concurrency: Any,
               gpu_count: Any, engine: Any, prompt: Any,
               layout: Any) -> tuple[dict[str, tuple[Any, ...]], tuple[Any, ...]]:
    """The checked axes of a sweep's grid, in ``AXES`` order: name -> values (model and GPU records, engine
    names; ``layout`` and ``prompt`` only when given as axes), and the layouts.

    ``layout`` is an axis when a sequence of layouts is given; otherwise the one layout applies to every row.
    """
    layouts, as_axis = layout_values(layout)
    prompts = None if prompt is None else positive_counts(prompt, "prompt", checks.MAX_TOKENS)
    values: dict[str, tuple[Any, ...]] = {
        "model": tuple(catalog.model(m) for m in axis_values(models, catalog.models())),
        "gpu": tuple(catalog.gpu(g) for g in axis_values(gpus, catalog.gpus())),
        "gpu_count": tuple(positive_counts(gpu_count, "gpu_count", checks.MAX_GPUS).tolist()),
        **({"layout": layouts} if as_axis else {}),
        "weights": axis_values(weights, (None,)), "kv_cache": axis_values(kv_cache, (None,)),
        "engine": tuple(engines.engine(e).name for e in axis_values(engine, ("vllm",))),
        "context": tuple(positive_counts(context, "context", checks.MAX_TOKENS).tolist()),
        **({} if prompts is None else {"prompt": tuple(prompts.tolist())}),
        "concurrency": tuple(positive_counts(concurrency, "concurrency").tolist()),
    }
    return values, layouts


class Grid:
    """Where each axis lies in the broadcast grid, and values laid along axes."""

    def __init__(self, axes: Mapping[str, tuple[Any, ...]]) -> None:
        self.axes = axes
        self.at = {name: i for i, name in enumerate(axes)}
        self.shape = tuple(len(v) for v in axes.values())

    def along(self, names: str | tuple[str, ...], values: Any) -> np.ndarray:
        """``values``, with one dimension per axis in ``names`` (in grid order), laid on the grid."""
        names = (names,) if isinstance(names, str) else names
        array = np.asarray(values) if not isinstance(values, np.ndarray) else values
        shape = [1] * len(self.shape)
        for name, size in zip(names, array.shape, strict=True):
            shape[self.at[name]] = size
        return array.reshape(shape)

    def precisions(self, records: list[catalog.Model]) -> tuple[np.ndarray, Any, np.ndarray]:
        """Precision names ``(weights, experts, kv_cache)`` along a trailing axis, and the numbers
        (``unpack.model_numbers``) of every model x weights x kv_cache laid on the grid: stacked into one
        record of arrays, and as an object array of records (``configuration.setups``)."""
        weights, kv = self.axes["weights"], self.axes["kv_cache"]
        names = np.empty((len(records), len(weights), len(kv), 3), dtype=object)
        numbers: list[unpack.ModelNumbers] = []
        for (i, record), (j, w), (k, cache) in itertools.product(enumerate(records), enumerate(weights), enumerate(kv)):
            names[i, j, k] = chosen = unpack.checkpoint_precisions(record, w, cache)
            numbers.append(unpack.model_numbers(record, *chosen))
        codes = self.along(("model", "weights", "kv_cache"), np.arange(len(numbers)).reshape(names.shape[:3]))
        laid = names.reshape((*codes.shape, 3))
        return laid, unpack.stack(numbers, codes), unpack.objects(numbers)[codes]


def tables(
    devices: list[catalog.GPU], profiles: list[engines.EngineProfile], calibration: Any
) -> tuple[list[efficiency.Table], np.ndarray]:
    """The distinct efficiency tables, and which one each GPU x engine uses (calibrated where
    ``calibration`` covers its engine class and GPU class, as in ``estimate``)."""
    if calibration is None:
        return [efficiency.bundled()], np.zeros((len(devices), len(profiles)), dtype=np.intp)
    from gpusizer import calibration as calibrations

    found: dict[tuple[str, str], efficiency.Table] = {}
    for device, profile in itertools.product(devices, profiles):
        key = (efficiency.engine_class(profile.name), efficiency.gpu_class(device.memory_type))
        if key not in found:
            found[key] = calibrations.efficiency_table(calibration, profile.name, device)
    distinct = list({id(t): t for t in found.values()}.values())
    index = [[next(i for i, t in enumerate(distinct) if t is found[efficiency.engine_class(p.name),
                                                                  efficiency.gpu_class(d.memory_type)])
              for p in profiles] for d in devices]
    return distinct, np.array(index, dtype=np.intp)


def merged(index: np.ndarray, grid: Grid, values: list[Any]) -> Any:
    """``values`` (one per table, each a record or tuple of arrays) merged: each GPU x engine takes the
    value computed with its own table (``index``)."""
    return values[0] if len(values) == 1 else _select(grid.along(("gpu", "engine"), index), values)


def _select(pick: np.ndarray, values: list[Any]) -> Any:
    first = values[0]
    if isinstance(first, np.ndarray) or isinstance(first, int | float | np.number):
        return np.choose(pick, np.broadcast_arrays(*values, pick)[:-1])
    if is_dataclass(first) and not isinstance(first, type):
        return replace(first, **{f.name: _select(pick, [getattr(v, f.name) for v in values]) for f in fields(first)})
    if isinstance(first, tuple):
        items = [_select(pick, list(group)) for group in zip(*values, strict=True)]
        return type(first)(*items) if hasattr(first, "_fields") else tuple(items)
    return first


def compact(value: Any) -> Any:
    """``value`` (a record of arrays) with every array cut to length 1 along each axis it does not vary
    on: the same numbers once broadcast, but the arithmetic on them then skips the axes they ignore
    (a step's FLOPs do not depend on the GPU, the fixed costs only on the engine)."""
    return map_arrays(_compact_array, value)


def _compact_array(value: np.ndarray) -> np.ndarray:
    """``value`` cut to length 1 along each axis on which every entry equals the first."""
    for axis in range(value.ndim):
        if value.shape[axis] > 1:
            first = value.take([0], axis=axis)
            if np.all((value == first) | ((value != value) & (first != first))):  # NaN equals NaN here
                value = first
    return value
