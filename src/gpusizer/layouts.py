r"""Searching the layouts of one model on several GPUs: the ranking, and llama.cpp's uneven split.

``best_layout`` tries every layout the engine offers (``parallel.candidates``), keeps those that fit
(``estimate``) and ranks them by per-user decode rate (``objective="latency"``) or by the decode
rate of all users together with the KV pools full (``"throughput"``). ``uneven_layer_split`` splits
the layers over GPUs of different types in proportion to their memory (llama.cpp
``--tensor-split``) and adds up the stages' step times.

Each candidate costs one scalar ``estimate``: ``sweep`` takes one layout per call, and a sweep per
candidate layout is slower than the scalar call it would replace (about 4 ms against 1 ms).

Composition only: the layout algebra and the physics of a split live in ``gpusizer.parallel``,
memory and speed in ``estimator`` and ``performance``. This module sits above ``estimate``: it calls
it and nothing below imports it.

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
    engines,
    estimator,
    interconnect,
    memory,
    parallel,
    performance,
    precision,
)

__all__ = ["LayoutChoice", "UnevenSplit", "best_layout", "layer_split", "uneven_layer_split"]


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
        ``weights``, ``kv_cache``, ``context``, ``concurrency``, ``prompt``, ``engine`` as for ``estimate``;
        scalars only.

    Returns
    -------
    list of LayoutChoice
        Only layouts that fit; empty when none does (that is an answer, not an error).

    Raises
    ------
    ValueError
        Unknown objective, or options that ``estimate`` rejects.

    Examples
    --------
    >>> best = best_layout("llama-3.1-70b", "h100-sxm", 4, weights="fp8")
    >>> best[0].layout
    'tp4'
    """
    checks.one_of(objective, "objective", ("latency", "throughput"))
    checks.instance(gpu, "gpu", (str, catalog.GPU, catalog.System))
    if gpus is not None:
        gpus = checks.count(gpus, "gpus", minimum=1, maximum=checks.MAX_GPUS)
    record = catalog.model(model)
    _, count = estimator.resolve_target(gpu, gpus)
    engine = options.get("engine", "vllm")
    entry = interconnect.bundled().engines.get(engine if isinstance(engine, str) else engine.name)
    kinds = entry.layouts if entry is not None else ("tp", "pp", "ep", "dp")
    choices = []
    for plan in parallel.candidates(record, count, kinds=kinds):
        e = estimator.estimate(record, gpu, gpus=count, layout=plan, **options)
        if not np.all(e.fits):
            continue
        choices.append(_choice(record, gpu, count, plan, e, objective, options))
    # ties (to 3 significant figures) go to the layout whose KV pools hold more sequences
    return sorted(choices, key=lambda c: (-float(f"{c.tokens_per_second:.3g}"), -c.max_concurrency))


def _choice(record: catalog.Model, gpu: Any, count: int, plan: parallel.Layout, e: Any, objective: str,
            options: dict[str, Any]) -> LayoutChoice:
    p, d = e.parallel, e.decode
    rate, users = float(d.expected_tokens_per_second), int(e.concurrency)
    if objective == "throughput":
        scheduler = engines.engine(options.get("engine", "vllm")).max_sequences
        users = int(max(1, min(int(e.max_concurrency), scheduler * plan.dp * plan.attention_dp)))
        full = estimator.estimate(record, gpu, gpus=count, layout=plan, **dict(options, concurrency=users))
        d, p = full.decode, full.parallel
        rate = float(d.expected_aggregate_tokens_per_second)
    unit = "tok/s per user" if objective == "latency" else f"tok/s for {users} users"
    free = e.memory.headroom_bytes / 1e9
    why = (f"{rate:,.0f} {unit}; scaling efficiency {p.scaling_efficiency:.0%}, communication "
           f"{p.communication_share:.0%} of the step over {p.links}; {free:.0f} GB free per GPU, "
           f"KV for {int(e.max_concurrency)} sequences")
    return LayoutChoice(
        layout=plan.name,
        objective=objective,
        tokens_per_second=rate,
        concurrency=users,
        scaling_efficiency=float(p.scaling_efficiency),
        communication_share=float(p.communication_share),
        weights_bytes=float(e.memory.weights_bytes),
        headroom_bytes=float(e.memory.headroom_bytes),
        max_concurrency=int(e.max_concurrency),
        links=p.links,
        why=why,
    )


@dataclass(frozen=True)
class UnevenSplit:
    """A llama.cpp layer split over GPUs of different types, layers in proportion to memory."""

    gpus: tuple[str, ...]
    layers: tuple[int, ...]
    """Layers on each GPU. [-]"""
    weights_bytes: tuple[float, ...]
    """Weights on each GPU (the embedding on the first, the LM head on the last). [B]"""
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
    buffer = memory.llama_cpp_compute_buffer_bytes(profile.batched_tokens, record.hidden_size,
                                                   architecture.ffn_width_per_token(record), record.vocab_size)
    share = [n / record.num_layers for n in layers]
    first, last = 0, len(devices) - 1
    held = [body * f + parts.embedding * (i == first) + parts.head * (i == last) for i, f in enumerate(share)]
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
