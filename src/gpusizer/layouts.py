r"""Searching the layouts of one model on several GPUs: the ranking, and llama.cpp's uneven split.

``best_layout`` tries every layout the engine offers (``parallel.candidates``), keeps those that fit
and ranks them by per-user decode rate (``objective="latency"``) or by the decode rate of all users
together with the KV pools full (``"throughput"``). ``uneven_layer_split`` splits the layers over
GPUs of different types in proportion to their memory (llama.cpp ``--tensor-split``) and adds up
the stages' step times.

The candidates are evaluated together, as one ``sweep`` whose ``layout`` axis holds them all (each
row equals ``estimate`` of that layout); ``"throughput"`` adds a second sweep of the layouts that
fit over the distinct concurrencies their KV pools hold, of which each layout reads its own.

Composition only: the layout algebra and the physics of a split live in ``gpusizer.parallel``,
memory and speed in ``estimator``, ``performance`` and ``sweeper``. This module sits above them: it
calls them and nothing below imports it.

References
----------
.. [1] llama.cpp, ``common/arg.cpp`` (the options ``--split-mode layer`` and ``--tensor-split``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpusizer import (
    architecture,
    catalog,
    checks,
    efficiency,
    engine_defaults,
    engines,
    estimator,
    interconnect,
    memory,
    parallel,
    performance,
    precision,
    sweeper,
)

__all__ = ["LayoutChoice", "UnevenSplit", "best_layout", "default_layout", "layer_split", "uneven_layer_split"]


def layer_split(num_layers: int, memory: Sequence[float]) -> tuple[int, ...]:
    """Layers per GPU when a model is split in proportion to each GPU's memory (llama.cpp ``--tensor-split``).

    Largest-remainder rounding: every GPU gets the floor of its share, the leftover layers go to the
    largest remainders.

    Examples
    --------
    >>> layer_split(80, [24e9, 24e9, 48e9])
    (20, 20, 40)
    >>> layer_split(7, [1, 1, 1])
    (3, 2, 2)
    """
    if num_layers < 1 or not memory or min(memory) <= 0:
        raise ValueError(f"memory must be positive for every GPU and num_layers >= 1, got {memory!r}, {num_layers}")
    share = np.asarray(memory, dtype=float) / float(np.sum(memory)) * num_layers
    layers = np.floor(share).astype(int)
    order = np.argsort(-(share - layers), kind="stable")
    layers[order[: num_layers - int(layers.sum())]] += 1
    return tuple(int(x) for x in layers)




@dataclass(frozen=True)
class LayoutChoice:
    """One layout that fits, as ``best_layout`` ranks it."""

    layout: str
    objective: str
    """``latency`` or ``throughput``."""
    tokens_per_second: float
    """Per-user decode rate (latency) or all users together at ``concurrency`` (throughput). [token/s]"""
    concurrency: int
    """Sequences the figure is for. [-]"""
    scaling_efficiency: float
    """Decode step of one unlimited-memory GPU over ``gpus`` times this layout's. [-]"""
    communication_share: float
    """Communication time over decode step time. [-]"""
    weights_bytes: float
    """Weights on the busiest GPU. [B]"""
    headroom_bytes: float
    """Budget left on the busiest GPU. [B]"""
    max_concurrency: int
    """Sequences of the requested context the layout's KV pools hold. [-]"""
    links: str
    """Link classes the layout's collectives cross."""
    why: str
    """One line: why it ranks where it does."""


def best_layout(
    model: str | catalog.Model,
    gpu: str | catalog.GPU | catalog.System,
    gpus: int | None = None,
    *,
    objective: str = "latency",
    **options: Any,
) -> list[LayoutChoice]:
    """The layouts of ``gpus`` GPUs that fit, best first, each with a one-line reason.

    Parameters
    ----------
    model, gpu
        As for ``gpusizer.estimate`` (a system id brings its GPU count).
    gpus : int, optional
        GPUs to split the model over; default the system's, else 1.
    objective : str
        ``"latency"``: highest per-user decode rate at ``concurrency``. ``"throughput"``: highest
        decode rate of all users together when the KV pools hold as many sequences of ``context``
        tokens as fit (capped at the engine's ``max_num_seqs`` per scheduler).
    **options
        ``weights``, ``kv_cache``, ``context``, ``concurrency``, ``prompt``, ``engine``, ``calibration`` as
        for ``estimate``; scalars only.

    Returns
    -------
    list of LayoutChoice
        Only layouts that fit; empty when none does (that is an answer, not an error).

    Raises
    ------
    TypeError
        An option ``best_layout`` does not take (``layout``, ``gpus`` twice), or one that is not a scalar.
    ValueError
        Unknown objective, or options that ``estimate`` rejects.

    Examples
    --------
    >>> best = best_layout("llama-3.1-70b", "h100-sxm", 4, weights="fp8")
    >>> best[0].layout
    'tp4'
    """
    checks.one_of(objective, "objective", ("latency", "throughput"))
    plans, common = _candidates(model, gpu, gpus, options)
    if not plans:
        return []
    grid = sweeper.sweep(layout=plans, **common)
    fits = np.flatnonzero(grid["fits"])
    sizes = _rows(grid, _SIZES, fits)
    fitting = [plans[i] for i in fits.tolist()]
    speeds = _rows(grid, _SPEEDS, fits) if objective == "latency" else _at_full_pools(fitting, sizes, common)
    choices = [_choice(objective, e, d) for e, d in zip(sizes, speeds, strict=True)]
    # ties (to 3 significant figures) go to the layout whose KV pools hold more sequences
    return sorted(choices, key=lambda c: (-float(f"{c.tokens_per_second:.3g}"), -c.max_concurrency))


def default_layout(model: str | catalog.Model, gpu: str | catalog.GPU | catalog.System, gpus: int | None = None,
                   *, objective: str = "latency", **options: Any) -> tuple[str, bool] | None:
    """The layout ``gpusizer fit`` (and ``throughput``) takes when none is given, and whether it fits.

    The first of ``best_layout`` (by ``objective``) when a layout fits; else, of every valid layout
    (``parallel.candidates``), the one with the most headroom per GPU (the nearest to fitting); None
    when the model allows no layout of that many GPUs. Arguments as for ``best_layout``.

    Examples
    --------
    >>> default_layout("llama-3.1-70b", "h100-sxm", 3)   # 64 heads do not divide by 3: pipeline
    ('pp3', True)
    """
    ranked = best_layout(model, gpu, gpus, objective=objective, **options)
    if ranked:
        return ranked[0].layout, True
    plans, common = _candidates(model, gpu, gpus, options)
    if not plans:
        return None
    headroom = sweeper.sweep(layout=plans, **common)["headroom_bytes"].reshape(len(plans), -1)[:, 0]
    return plans[int(np.argmax(headroom))].name, False


def _candidates(model: str | catalog.Model, gpu: str | catalog.GPU | catalog.System, gpus: int | None,
                options: dict[str, Any]) -> tuple[list[parallel.Layout], dict[str, Any]]:
    """The valid layouts of ``gpus`` GPUs in the engine's repertoire, and ``sweep``'s other arguments."""
    checks.instance(gpu, "gpu", (str, catalog.GPU, catalog.System))
    if gpus is not None:
        gpus = checks.count(gpus, "gpus", minimum=1, maximum=checks.MAX_GPUS)
    record = catalog.model(model)
    device, count = estimator.resolve_target(gpu, gpus)
    common = _sweep_options(record, device, count, estimator.scale_out_bandwidth(gpu), options)
    engine = common["engine"][0]
    entry = interconnect.bundled().engines.get(engine if isinstance(engine, str) else engine.name)
    kinds = entry.layouts if entry is not None else ("tp", "pp", "ep", "dp")
    return parallel.candidates(record, count, kinds=kinds), common


_OPTIONS = ("weights", "kv_cache", "context", "concurrency", "prompt", "engine", "calibration")


def _sweep_options(record: catalog.Model, device: catalog.GPU, count: int, scale_out: float | None,
                   options: dict[str, Any]) -> dict[str, Any]:
    """``sweep``'s arguments for one model, GPU type and count with the scalar options of ``best_layout``:
    every axis but ``layout`` of length one."""
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise TypeError(f"best_layout() got unexpected keyword arguments {', '.join(unknown)}; options are "
                        f"{', '.join(_OPTIONS)}")
    for name in ("context", "concurrency", "prompt"):
        if options.get(name) is not None and np.ndim(options[name]) != 0:
            raise TypeError(f"{name} must be a single whole number for best_layout, got {options[name]!r:.80}")
    for name in ("weights", "kv_cache"):
        checks.instance(options.get(name), name, (str, type(None)))
    engine = checks.instance(options.get("engine", "vllm"), "engine", (str, engines.EngineProfile))
    return dict(
        models=[record], gpus=[device], gpu_count=count, weights=(options.get("weights"),),
        kv_cache=(options.get("kv_cache"),), engine=(engine,), context=options.get("context", 8192),
        concurrency=options.get("concurrency", 1), prompt=options.get("prompt"),
        calibration=options.get("calibration"), scale_out_bandwidth=scale_out,
    )


def _at_full_pools(layouts: list[parallel.Layout], sizes: list[dict[str, Any]],
                   common: dict[str, Any]) -> list[dict[str, Any]]:
    """The speed (``_SPEEDS``) of each fitting layout (with its ``sizes``) at the concurrency its KV pools hold,
    capped at the engine's ``max_num_seqs`` per scheduler (one per replica and attention group): one sweep
    over the layouts and the distinct concurrencies, of which each layout takes its own."""
    if not layouts:
        return []
    schedulers = np.array([p.dp * p.attention_dp for p in layouts])
    limit = engines.engine(common["engine"][0]).max_sequences * schedulers
    users = np.maximum(1, np.minimum([e["max_concurrency"] for e in sizes], limit)).astype(np.int64)
    distinct = np.unique(users)
    full = sweeper.sweep(layout=layouts, **dict(common, concurrency=distinct))
    return _rows(full, _SPEEDS, np.arange(len(users)) * len(distinct) + np.searchsorted(distinct, users))


_SIZES = ("parallel_layout", "weights_bytes", "headroom_bytes", "max_concurrency")
_SPEEDS = ("concurrency", "decode_expected_tokens_per_second", "decode_expected_aggregate_tokens_per_second",
           "parallel_scaling_efficiency", "parallel_communication_share", "parallel_links")


def _rows(grid: sweeper.Sweep, names: tuple[str, ...], rows: np.ndarray) -> list[dict[str, Any]]:
    """The columns ``names`` of the flat rows ``rows`` of ``grid``, as Python values."""
    columns = (grid[n][rows].tolist() for n in names)
    return [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)]


def _choice(objective: str, e: dict[str, Any], d: dict[str, Any]) -> LayoutChoice:
    """The ranked entry of one fitting layout: its sizes ``e`` (``_SIZES``) and its speed ``d`` (``_SPEEDS``; at
    the concurrency its KV pools hold for throughput)."""
    latency = objective == "latency"
    rate = d["decode_expected_tokens_per_second" if latency else "decode_expected_aggregate_tokens_per_second"]
    users = int(d["concurrency"])
    unit = "tok/s per user" if latency else f"tok/s for {users} users"
    why = (f"{rate:,.0f} {unit}; scaling efficiency {d['parallel_scaling_efficiency']:.0%}, communication "
           f"{d['parallel_communication_share']:.0%} of the step over {d['parallel_links']}; "
           f"{e['headroom_bytes'] / 1e9:.0f} GB free per GPU, KV for {int(e['max_concurrency'])} sequences")
    return LayoutChoice(
        layout=e["parallel_layout"],
        objective=objective,
        tokens_per_second=float(rate),
        concurrency=users,
        scaling_efficiency=float(d["parallel_scaling_efficiency"]),
        communication_share=float(d["parallel_communication_share"]),
        weights_bytes=float(e["weights_bytes"]),
        headroom_bytes=float(e["headroom_bytes"]),
        max_concurrency=int(e["max_concurrency"]),
        links=d["parallel_links"],
        why=why,
    )


@dataclass(frozen=True)
class UnevenSplit:
    """A llama.cpp layer split over GPUs of different types, layers in proportion to memory."""

    gpus: tuple[str, ...]
    layers: tuple[int, ...]
    """Layers on each GPU. [-]"""
    weights_bytes: tuple[float, ...]
    """Weights on each GPU: the output layer on the last (the LM head, or a tied embedding's duplicate); the
    token embedding is in host memory (``engines.vocabulary_on_gpu``). [B]"""
    kv_cache_bytes: tuple[float, ...]
    """KV cache of ``concurrency`` sequences of ``context`` tokens on each GPU. [B]"""
    fits: tuple[bool, ...]
    """Weights, KV cache and llama.cpp's compute buffer within each GPU's memory."""
    tpot_seconds_expected: float
    """Time per output token: the stages one after the other, plus a hop per boundary. [s]"""
    tokens_per_second_expected: float
    """Per-user decode rate. [token/s]"""


def uneven_layer_split(
    model: str | catalog.Model,
    gpus: Sequence[str | catalog.GPU],
    *,
    weights: str | None = None,
    kv_cache: str | None = None,
    context: int = 8192,
    concurrency: int = 1,
) -> UnevenSplit:
    r"""llama.cpp's layer split across unequal GPUs (``--split-mode layer``, ``--tensor-split`` by memory).

    Stage :math:`i` holds :math:`L_i` layers in proportion to its memory (``layer_split``); a token
    takes :math:`\sum_i (L_i/L)\,t_i + (n-1)\,t_{hop}`, where :math:`t_i` is the expected step time
    of the whole model on GPU :math:`i` alone (``performance.speed``, unlimited memory).

    Examples
    --------
    >>> s = uneven_layer_split("llama-3.1-70b", ["rtx-4090", "rtx-3090"], weights="q4_k_m", context=4096)
    >>> s.layers, s.fits
    ((40, 40), (True, True))
    """
    record = catalog.model(model)
    devices = [catalog.gpu(g) for g in gpus]
    if not devices:
        raise ValueError("gpus must name at least one GPU")
    profile = engines.engine("llama.cpp")
    layers = layer_split(record.num_layers, [d.capacity for d in devices])
    w = weights if weights is not None else record.weights
    kv = kv_cache if kv_cache is not None else record.activation_dtype
    parts = parallel.weight_parts(record, w, None if weights is not None else record.expert_weights)
    body = parts.layers + parts.experts
    act = precision.bytes_per_element(record.activation_dtype)
    per_sequence = memory.sequence_cache_bytes(context, architecture.kv_layout(record),
                                               precision.kv_bytes_per_element(kv), act, block_size=profile.block_size)
    buffer = engine_defaults.llama_cpp_compute_buffer_bytes(
        profile.batched_tokens, record.hidden_size, architecture.ffn_width_per_token(record), record.vocab_size)
    share = [n / record.num_layers for n in layers]
    first, last = 0, len(devices) - 1
    embedding, head = engines.vocabulary_on_gpu(parts.embedding, parts.head, parts.head or parts.embedding,
                                                profile.input_embedding_on_host)  # token_embd: host memory
    held = [body * f + embedding * (i == first) + head * (i == last) for i, f in enumerate(share)]
    kv_bytes = [concurrency * per_sequence * f for f in share]
    fits = tuple(bool(h + k + buffer + profile.runtime_bytes <= d.capacity)
                 for h, k, d in zip(held, kv_bytes, devices, strict=True))
    seconds = 0.0
    for f, device in zip(share, devices, strict=True):
        d = performance.speed(record, device, weights=w, kv_cache=kv, context=context, concurrency=concurrency,
                              engine="llama.cpp").decode
        seconds += f * float(d.tpot_seconds_expected)
    hop = 0.0
    if len(devices) > 1:
        link = interconnect.link_class(devices[0], len(devices))
        fabric = efficiency.bundled().fabrics[link.fabric]
        message = concurrency * record.hidden_size * act
        bandwidth = link.bandwidth * (link.bandwidth_fraction or fabric.bandwidth_fraction)
        hop = float(interconnect.p2p_seconds(message, bandwidth, fabric.latency_seconds + link.hop_latency))
    total = seconds + (len(devices) - 1) * hop
    return UnevenSplit(
        gpus=tuple(d.id for d in devices),
        layers=layers,
        weights_bytes=tuple(float(h) for h in held),
        kv_cache_bytes=tuple(float(k) for k in kv_bytes),
        fits=fits,
        tpot_seconds_expected=total,
        tokens_per_second_expected=1.0 / total,
    )
