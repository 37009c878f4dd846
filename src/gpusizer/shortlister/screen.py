"""The shortlist's candidates: every GPU x count x layout x weight precision, screened before it is priced.

Cheap exact screens come first (weights plus the engine's fixed memory against the budget, the
roofline floors of ``floors`` against the targets). The survivors' speed numbers come from the
vectorised ``sweep``, two per GPU count and layout (decode over the token grid at contexts 1 and the
request's, prefill over the prompt grid), the same numbers one ``estimate`` per configuration gives
(``tests/test_shortlist.py`` checks it); a group the sweep cannot take whole (it raises, or warns that
a layout does not divide the attention heads) falls back to one ``estimate`` per configuration, which
names the reason. ``serving`` turns the numbers into the step table the search loads with the workload.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import Any

import numpy as np

from gpusizer import architecture, catalog, engine_defaults, engines, parallel, precision, serving
from gpusizer import prefix_cache as caching
from gpusizer.estimator import estimate
from gpusizer.serving import SLO, Workload
from gpusizer.shortlister.table import Dropped
from gpusizer.sweeper import Sweep, sweep

__all__ = ["Candidate", "candidates", "counts", "dropped", "floors", "layouts", "precisions"]


def counts(max_gpus: int) -> list[int]:
    """GPUs per replica to sweep: the powers of two up to ``max_gpus``, and ``max_gpus`` itself. [-]

    Examples
    --------
    >>> counts(8), counts(6)
    ([1, 2, 4, 8], [1, 2, 4, 6])
    """
    found = [2**k for k in range(8) if 2**k <= max_gpus]
    return found + ([max_gpus] if max_gpus not in found else [])


def layouts(requested: Sequence[str] | None, record: catalog.Model) -> tuple[str, ...]:
    """Layouts to sweep: those requested, else ``tp`` and ``pp`` (and ``tp+ep`` for a mixture of experts).

    Examples
    --------
    >>> layouts(None, catalog.model("llama-3.1-8b")), layouts(["tp"], catalog.model("llama-3.1-8b"))
    (('tp', 'pp'), ('tp',))
    """
    if requested:
        return tuple(requested)
    return ("tp", "pp", "tp+ep") if record.moe is not None else ("tp", "pp")


def precisions(record: catalog.Model, weights: Sequence[str] | None) -> list[str | None]:
    """Weight precisions to sweep: those requested, else the checkpoint's (``None``) plus ``fp8`` and
    ``int4`` where they store fewer bits.

    Examples
    --------
    >>> precisions(catalog.model("llama-3.1-8b"), None)
    [None, 'fp8', 'int4']
    """
    if weights:
        return [precision.precision(w).name for w in weights]
    names: list[str | None] = [None]
    default = record.weights
    for candidate in ("fp8", "int4"):
        if candidate != default and precision.precision(candidate).bits < precision.precision(default).bits:
            names.append(candidate)
    return names


def _swept(layout: str, device: catalog.GPU, requested: bool) -> bool:
    """Whether a layout is worth a full evaluation on ``device``: by default pipeline layouts only where no
    NVLink joins the GPUs (there they avoid all-reduces over PCIe; on NVLink tensor parallelism gives the
    lower per-token latency a latency target asks for). Layouts the caller names are always swept."""
    return requested or layout != "pp" or not device.interconnect.nvlink_generation


def _layout_name(layout: str, count: int) -> str:
    """A bare ``tp+ep`` spelled with degrees (``tp4+ep4``); other names pass through."""
    return f"tp{count}+ep{count}" if layout == "tp+ep" else layout


@dataclass(frozen=True)
class Candidate:
    """A configuration that passed every screen, with its step table."""

    device: catalog.GPU
    gpus: int
    """GPUs per replica. [-]"""
    layout: str
    """As swept (``tp``, ``pp``, ``tp+ep``)."""
    weights: str | None
    """Weight precision (``None``: the checkpoint's)."""
    step: serving.StepModel


def dropped(device: catalog.GPU, gpus: int, layout: str, weights: str | None, record: catalog.Model,
            reason: str) -> Dropped:
    """The ``Dropped`` record of a configuration (``weights`` ``None`` named as the checkpoint's)."""
    return Dropped(device.id, gpus, layout, weights or record.weights, reason)


def floors(record: catalog.Model, weights: str | None, size: float, device: catalog.GPU, count: int,
           layout: str, workload: Workload) -> tuple[float, float]:
    r"""Lower bounds on the unloaded TPOT and TTFT of a configuration.

    Returns
    -------
    tuple of float
        :math:`W \cdot N_{active}/N_{stored} / (s\,B)`: the active weights streamed once per step at the
        datasheet bandwidth :math:`B`, and :math:`2 N_{active}\,s_{min} / (s\,R)`: the shortest prompt's
        linear FLOPs at the datasheet rate :math:`R` of the precision the matmuls can use, with
        :math:`s` the GPUs that divide the work (1 for a pipeline, which passes every stage in turn).
        The roofline ceiling is never beaten, so a target below a floor cannot be met at any rate. [s]
    """
    numbers = _parameter_counts(record)
    active = numbers.linear + numbers.experts_active
    stored = numbers.linear + numbers.experts + numbers.embedding + numbers.head
    shards = 1 if layout in ("pp", "layer") else count
    tpot = size * active / max(stored, 1) / shards / device.memory_bandwidth
    p = precision.precision(weights if weights is not None else record.weights)
    usable = {p.compute, "int8"} if p.weight_only else {p.compute}
    named = [getattr(device.dense, name, None) for name in usable]
    rates: list[float] = [r for r in named if r] or [r for r in device.dense.model_dump().values() if r]
    prompt = _uncached(float(serving.Lengths.of(workload).prompt.min()), workload)
    ttft = 2 * active * prompt / shards / max(rates) if rates else 0.0
    return tpot, ttft


def _uncached(prompt: float, workload: Workload) -> float:
    """Tokens of ``prompt`` a prefill computes at least at the workload's prefix hit rate (token-granular, the
    fewest: a screen must not drop what the step table would keep; ``prefix_cache.cached_tokens``). [token]"""
    return prompt - float(caching.cached_tokens(prompt, workload.prefix_hit_rate))


@functools.lru_cache(maxsize=16)
def _parameter_counts(record: catalog.Model) -> Any:
    return architecture.parameter_counts(record)


def _unloaded_miss(sized: Any, slo: SLO, prompts: np.ndarray, shortest: float) -> str:
    """Which target the shortest request on an idle engine already misses (``estimate``'s expected speed), or
    ``""``.

    An idle engine is the best case of every quantile, so such a configuration cannot meet the SLO at any
    rate; skipping it saves its step table. TPOT is read at the full request length (the closed form uses
    the mean context, a few microseconds less), hence the 5 % margin."""
    tpot = float(np.broadcast_to(sized.decode.tpot_seconds_expected, (2, len(prompts)))[1, 0])
    # the prefill step samples the first token
    ttft = float(np.interp(shortest, prompts, np.asarray(sized.prefill.seconds_expected, dtype=float)))
    if slo.tpot_p95 is not None and tpot > 1.05 * slo.tpot_p95:
        return f"TPOT {tpot * 1e3:.0f} ms on an idle engine"
    if slo.ttft_p95 is not None and ttft > slo.ttft_p95:
        return f"TTFT {ttft * 1e3:.0f} ms on an idle engine"
    return ""


def _weight_bytes(record: catalog.Model, weights: str | None) -> float:
    """Bytes of the weights at ``weights`` (all GPUs together), for a quick memory screen: through
    ``parallel.weight_parts``, the seam ``estimate`` sizes them by, so that a model's files
    (``Model.stored_weights``) are counted as stored at their own precision and any other is counted."""
    w = weights if weights is not None else record.weights
    experts = None if weights is not None or record.expert_weights is None else record.expert_weights
    parts = parallel.weight_parts(record, w, experts, record.activation_dtype)
    return float(parts.layers + parts.experts + parts.embedding + parts.head)


_Key = tuple[catalog.GPU, str | None, int, str]
"""A configuration: GPU, weight precision, GPUs per replica, layout as swept."""


@dataclass(frozen=True)
class _Sweep:
    """What every configuration of one shortlist shares: the model, the targets and the tabulation grids."""

    record: catalog.Model
    workload: Workload
    slo: SLO
    engine: str
    profile: engines.EngineProfile
    sizes: dict[str | None, float]
    tokens: np.ndarray
    prompts: np.ndarray
    shortest: float
    longest: float
    speculative: Any = None
    """``speculation.Speculative``: decode runs at the accepted-token rate (``estimate``'s ``speculation``)."""
    offload: Any = None
    """``offload.Offload``: weights in host memory, decode and prefill at the offloaded speed (``estimate``'s
    ``offload``); with ``auto`` the split that holds one request of the longest length."""


def _memory_screen(s: _Sweep, device: catalog.GPU, count: int, weights: str | None) -> str:
    """Why the weights and the engine's fixed memory exceed the budget, or ``""`` (always with an offload)."""
    if s.offload is not None:
        return ""
    profile = s.profile
    fixed = engines.non_torch_bytes(profile.runtime_bytes, profile.runtime_bytes_multi_gpu, count)
    fixed = fixed + profile.cuda_graph_bytes
    fraction = engine_defaults.memory_fraction(profile.fraction_rule, device.capacity, count, profile.memory_fraction)
    budget = device.capacity * fraction
    if s.sizes[weights] / count + fixed > budget:
        return (f"does not fit: weights need {s.sizes[weights] / count / 1e9:.0f} GB per GPU and the "
                f"runtime {fixed / 1e9:.1f} GB; the engine may use {budget / 1e9:.0f} GB")
    return ""


def _floor_screen(s: _Sweep, device: catalog.GPU, count: int, layout: str, weights: str | None) -> str:
    """Why a roofline floor already misses a target, or ``""``."""
    tpot_floor, ttft_floor = floors(s.record, weights, s.sizes[weights], device, count, layout, s.workload)
    if s.slo.tpot_p95 is not None and tpot_floor > s.slo.tpot_p95:
        return f"misses the SLO even unloaded: streaming the weights takes at least {tpot_floor * 1e3:.0f} ms per token"
    if s.slo.ttft_p95 is not None and ttft_floor > s.slo.ttft_p95:
        return f"misses the SLO even unloaded: the prompt needs at least {ttft_floor * 1e3:.0f} ms of compute"
    return ""


def _estimate(s: _Sweep, device: catalog.GPU, count: int, layout: str, weights: str | None) -> Any:
    """The step table's ``estimate`` of one configuration, or why it has none (a ``str``)."""
    context = s.workload.prompt_tokens + s.workload.output_tokens
    options: dict[str, Any] = dict(weights=weights, gpus=count, engine=s.engine, layout=_layout_name(layout, count))
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            split = None if s.offload is None else _split(s, device, options)
            if isinstance(split, str):
                return split
            sized = estimate(s.record, device, context=np.array([[1], [int(context)]]), concurrency=s.tokens,
                             prompt=s.prompts, speculative=s.speculative, offload=split, **options)
    except ValueError as error:
        return f"no speed model: {error}"
    if caught:  # e.g. attention heads that do not divide by the tensor-parallel degree
        return f"layout refused: {caught[0].message}"
    if sized.offload is not None:
        return _offloaded(sized)
    return sized if sized.speculation is None else _speculated(sized)


def _split(s: _Sweep, device: catalog.GPU, options: dict[str, Any]) -> Any:
    """The offload of ``s`` with its split fixed (``auto``: the one that holds one request of the longest
    length), or why none fits (a ``str``)."""
    spec = s.offload
    if spec.auto:
        probe: Any = estimate(s.record, device, context=int(s.longest), concurrency=1, offload=spec, **options).offload
        spec = replace(spec, auto=False, gpu_layers=probe.gpu_layers, cpu_moe_layers=probe.cpu_moe_layers,
                       cpu_offload_bytes=probe.cpu_offload_bytes)
    one: Any = estimate(s.record, device, context=int(s.longest), concurrency=1, offload=spec, **options).offload
    if not one.fits:
        return f"does not fit even with offload: the GPU is {-float(one.headroom_bytes) / 1e9:.1f} GB short"
    return spec


def _offloaded(sized: Any) -> Any:
    """``sized`` whose decode, prefill and KV pool are its offload's (bands scaled alike)."""
    o = sized.offload
    slow = np.asarray(o.expected_tokens_per_second) / np.asarray(sized.decode.expected_tokens_per_second)
    decode = replace(sized.decode, tpot_seconds_expected=o.tpot_seconds_expected,
                     expected_tokens_per_second=o.expected_tokens_per_second,
                     band=(sized.decode.band[0] * slow, sized.decode.band[1] * slow),
                     ceiling_tokens_per_second=o.ceiling_tokens_per_second, tpot_seconds_ceiling=o.tpot_seconds_ceiling)
    longer = np.asarray(o.prefill_seconds_expected) / np.asarray(sized.prefill.seconds_expected)
    prefill = replace(sized.prefill, seconds_expected=o.prefill_seconds_expected,
                      band=(sized.prefill.band[0] * longer, sized.prefill.band[1] * longer))
    return replace(sized, decode=decode, prefill=prefill, kv_pool_tokens=o.kv_pool_tokens)


def _speculated(sized: Any) -> Any:
    """``sized`` whose decode runs at its speculation's accepted-token rate, per user and per step."""
    spec = sized.speculation
    decode = replace(sized.decode, tpot_seconds_expected=spec.tpot_seconds_expected,
                     expected_tokens_per_second=spec.expected_tokens_per_second, band=spec.band,
                     ceiling_tokens_per_second=spec.ceiling_tokens_per_second,
                     tpot_seconds_ceiling=1.0 / np.asarray(spec.ceiling_tokens_per_second))
    return replace(sized, decode=decode)


def _swept_numbers(s: _Sweep, keys: Sequence[_Key]) -> dict[_Key, SimpleNamespace]:
    """The numbers of the step tables of ``keys``, from two sweeps per GPU count and layout (decode over
    contexts 1 and the request's and the token grid; prefill over the prompt grid), shaped as the
    ``estimate`` of ``_estimate`` has them. A group whose sweep raises or warns is left out: its
    configurations take ``_estimate``, which says why per configuration."""
    groups: dict[tuple[int, str], list[_Key]] = {}
    for key in keys:
        groups.setdefault((key[2], key[3]), []).append(key)
    context = int(s.workload.prompt_tokens + s.workload.output_tokens)
    out: dict[_Key, SimpleNamespace] = {}
    for (count, layout), members in groups.items():
        devices = list({k[0].id: k[0] for k in members}.values())
        weights = list(dict.fromkeys(k[1] for k in members))
        name = _layout_name(layout, count)
        common: dict[str, Any] = dict(gpu_count=count, weights=weights, engine=s.engine, layout=name)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                step = sweep([s.record], devices, context=[1, context], concurrency=s.tokens, **common)
                fill = sweep([s.record], devices, context=context, prompt=s.prompts, concurrency=1, **common)
        except ValueError:
            continue
        if caught:
            continue
        at = {d.id: i for i, d in enumerate(devices)}
        for key in members:
            g, w = at[key[0].id], weights.index(key[1])
            out[key] = _numbers(step, fill, g, w)
    return out


def _numbers(step: Sweep, fill: Sweep, g: int, w: int) -> SimpleNamespace:
    """What ``serving`` reads of an ``estimate``, for GPU ``g`` and weights ``w`` of two sweeps."""
    def at(table: Sweep, name: str) -> np.ndarray:
        return table.columns[name].reshape(table.shape)[0, g, 0, w, 0, 0]

    def once(name: str) -> Any:
        return at(step, name)[0, 0]

    decode = SimpleNamespace(
        tpot_seconds_expected=at(step, "decode_tpot_seconds_expected"),
        expected_tokens_per_second=at(step, "decode_expected_tokens_per_second"),
        band=(at(step, "decode_band_low"), at(step, "decode_band_high")), bound=at(step, "decode_bound"))
    prefill = SimpleNamespace(seconds_expected=at(fill, "prefill_seconds_expected")[0, :, 0],
                              band=(at(fill, "prefill_band_low")[0, :, 0], at(fill, "prefill_band_high")[0, :, 0]))
    return SimpleNamespace(
        engine=once("engine"), gpus=int(once("gpu_count")), gpu=once("gpu"), weights=once("weights"),
        kv_cache=once("kv_cache"), kv_pool_tokens=at(step, "kv_pool_tokens"), decode=decode, prefill=prefill,
        parallel=SimpleNamespace(layout=once("parallel_layout")))


def _evaluate(s: _Sweep, key: _Key, swept: SimpleNamespace | None) -> Candidate | str:
    """The candidate with its step table, or why it is dropped."""
    device, weights, count, layout = key
    sized = swept if swept is not None else _estimate(s, device, count, layout, weights)
    if isinstance(sized, str):
        return sized
    pool = float(np.broadcast_to(sized.kv_pool_tokens, (2, len(s.tokens)))[1, 0])
    if pool < s.longest:
        return f"does not fit: the KV pool holds {pool:,.0f} tokens, a request needs up to {s.longest:,.0f}"
    slow = _unloaded_miss(sized, s.slo, s.prompts, _uncached(s.shortest, s.workload))
    if slow:
        return f"misses the SLO even unloaded: {slow}"
    context = int(s.workload.prompt_tokens + s.workload.output_tokens)
    step = replace(serving.step_tables(s.record, sized, s.tokens, s.prompts, context),
                   prefix_hit_rate=s.workload.prefix_hit_rate)
    if not np.all(np.isfinite(step.prompt_seconds)):
        return "no speed model: the GPU publishes no tensor rate for prefill"
    return Candidate(device, count, layout, weights, step)


def candidates(
    record: catalog.Model, devices: Sequence[catalog.GPU], gpu_counts: Sequence[int], swept: Sequence[str],
    requested: bool, weights: Sequence[str | None], workload: Workload, slo: SLO, engine: str,
    speculative: Any = None, offload: Any = None,
) -> tuple[list[Candidate], list[Dropped]]:
    """Every configuration that fits one request and is not ruled out by a latency floor, with its step table.

    Parameters
    ----------
    record : Model
        The model.
    devices, gpu_counts, swept, weights
        The GPUs, GPUs per replica, layouts and weight precisions to combine; one GPU uses only the
        first layout.
    requested : bool
        Whether the caller named the layouts (then pipeline layouts are swept on NVLink too).
    workload, slo, engine, speculative, offload
        As for ``shortlist`` (with ``speculative`` or ``offload`` every configuration takes one ``estimate``).

    Returns
    -------
    tuple of list
        The candidates, and the configurations dropped with their reasons, in sweep order.
    """
    profile = engines.engine(engine)
    nodes = serving.Lengths.of(workload)
    tokens, prompts = serving.step_axes(profile, float(nodes.prompt[-1]))
    s = _Sweep(record, workload, slo, engine, profile, {w: _weight_bytes(record, w) for w in weights},
               tokens, prompts, float(nodes.prompt[0]), float(nodes.prompt[-1] + nodes.output[-1]), speculative,
               offload)
    keys = [(device, w, count, layout) for device in devices for w in weights for count in gpu_counts
            for layout in (swept if count > 1 else swept[:1]) if _swept(layout, device, requested)]
    early = {key: _memory_screen(s, key[0], key[2], key[1]) or _floor_screen(s, key[0], key[2], key[3], key[1])
             for key in keys}
    plain = speculative is None and offload is None
    numbers = _swept_numbers(s, [key for key in keys if not early[key]]) if plain else {}
    kept: list[Candidate] = []
    left: list[Dropped] = []
    for key in keys:
        found = early[key] or _evaluate(s, key, numbers.get(key))
        if isinstance(found, Candidate):
            kept.append(found)
        else:
            left.append(dropped(key[0], key[2], key[3], key[1], record, found))
    return kept, left
