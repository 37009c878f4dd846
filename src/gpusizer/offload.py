r"""CPU/RAM offload: part of the weights in system RAM, the memory split and the step it costs.

Three engine mechanisms (docs/offload.md has the derivations and references):

- llama.cpp ``-ngl N`` puts the last ``N`` of ``n_layer + 1`` slots on the GPU (``i_gpu_start = n_layer + 1 -
  N``; the output layer is slot ``n_layer``): the output layer and the last ``N - 1`` repeating layers; the first
  ones and the token embedding stay in host memory and the CPU computes them, each layer's KV cache living with
  its layer (all of it on the host with ``-nkvo``):
  ggml-org/llama.cpp@a5410f046c01d01330c8a42f13b64a211fedf2c3:src/llama-model.cpp
  (``load_tensors``: ``i_gpu_start``, ``dev_input`` always CPU, ``dev_output =
  get_layer_buft_list(n_layer)``). Prompt batches of at least 32 tokens are computed by the GPU, the host
  weights copied over PCIe for every micro-batch (``ggml_backend_cuda_device_offload_op``, ``min_batch_size =
  32``: ggml-org/llama.cpp@f6d77a1ba0ac794e950bd3abb630b904bdcd8fb8:ggml/src/ggml-cuda/ggml-cuda.cu; ggml-org/
  llama.cpp PR #6083 "backend : offload large batches to GPU").
- llama.cpp ``--n-cpu-moe N`` (or ``-ot exps=CPU``) keeps the routed-expert tensors of the first ``N`` layers in
  host memory, computed by the CPU; attention, shared experts and routers stay on the GPU (ggml-org/llama.cpp
  PR #15077).
- vLLM (and SGLang) ``--cpu-offload-gb X`` keeps ``X`` GiB of weights per GPU in pinned host memory; the GPU
  reads them over PCIe in every forward pass, through unified virtual addressing (``maybe_offload_to_cpu``:
  vllm-project/vllm@82fbeae92b86e404829a01441334a9505e8b190d:vllm/model_executor/models/utils.py, L487-540;
  ``UVAOffloader`` in vllm-project/vllm:vllm/model_executor/offloader/uva.py on newer versions).

The step: the GPU's share of the plain step (its fraction of the bytes the step streams, ``gpu_share``), plus
the host's bytes at the host's memory bandwidth (llama.cpp) or over PCIe (vLLM), plus the activation copies.
llama.cpp's token embedding is host memory whatever ``-ngl`` says (``dev_input`` is always the CPU, same
commit; ``engines.vocabulary_on_gpu``): the memory breakdown leaves it out of the GPU's weights and the split
adds it to the host's, while the output layer (the head, or a tied embedding's duplicate) is the GPU's from
``-ngl 1`` on. A tied embedding with ``-ngl 0`` is counted twice on the host, as ``--no-mmap`` loads it (with
mmap both views share the file's pages).
Deliberate omissions: CPU compute (the host part is memory bound at decode), the CPU's compute buffer, dense
and MoE layers counted alike (``expert_bytes / num_layers`` per layer) and one GPU only.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from gpusizer import catalog, checks, datafiles, engines, interconnect, memory
from gpusizer.checks import scalar_or_array
from gpusizer.numeric import ceil, maximum, minimum, number, where

__all__ = [
    "GIB", "PREFILL_OFFLOAD_BATCH", "HostMemory", "Offload", "Offloaded", "activation_crossings",
    "gpu_repeating_layers", "gpu_share", "host", "host_kv_bytes", "hosts", "layer_split_bytes", "offload",
    "offloaded_step_seconds",
    "streamed_prefill_seconds", "theoretical_bandwidth",
]

GIB = 2**30
"""Bytes in the GiB of ``--cpu-offload-gb`` (vLLM's ``UVAOffloadConfig.cpu_offload_gb``: "GiB ... per GPU"). [B]"""
PREFILL_OFFLOAD_BATCH = 32
"""Smallest batch whose host-weight matrix products llama.cpp's CUDA backend computes on the GPU
(``min_batch_size``, ggml-org/llama.cpp@f6d77a1:ggml/src/ggml-cuda/ggml-cuda.cu). [token]"""
MODES = {"llama.cpp": "layers", "vllm": "stream", "sglang": "stream"}
"""How each engine offloads: ``layers`` computed by the CPU (llama.cpp), ``stream`` read over PCIe (vLLM, SGLang)."""


@dataclass(frozen=True)
class HostMemory:
    """One host memory configuration of ``data/host_memory.toml``."""

    id: str
    description: str
    channels: int
    transfers_per_second: float
    """[1/s]"""
    theoretical_bandwidth: float
    """``channels x transfers_per_second x 8 B``. [B/s]"""
    achieved_bandwidth: float
    """``theoretical x achieved_fraction``. [B/s]"""
    source: str


@dataclass(frozen=True)
class Offload:
    """What to keep in system RAM (``estimate(..., offload=...)``). Every field is optional.

    ``gpu_layers`` is llama.cpp's ``-ngl`` (slots on the GPU: the output layer and ``gpu_layers - 1`` repeating
    layers; ``num_layers + 1`` or more: all; None: all), ``cpu_moe_layers`` its ``--n-cpu-moe``, ``kv_on_host``
    its ``-nkvo``;
    ``cpu_offload_bytes`` is vLLM's ``--cpu-offload-gb`` in bytes [B]; ``auto`` picks the most on the GPU that
    fits. ``host`` names a configuration of ``hosts()``; ``host_bandwidth`` [B/s] overrides its achieved bandwidth
    and ``host_memory`` [B] is checked against what the host holds.
    """

    gpu_layers: int | None = None
    cpu_moe_layers: int = 0
    cpu_offload_bytes: float = 0.0
    kv_on_host: bool = False
    auto: bool = False
    host: str = "ddr5-5600-dual"
    host_bandwidth: float | None = None
    host_memory: float | None = None


@dataclass(frozen=True)
class Offloaded:
    """The split, the GPU's fit with it, and the speed (``Estimate.offload``). Units in brackets."""

    mode: str
    """``layers`` (llama.cpp, the CPU computes host layers) or ``stream`` (vLLM, the GPU reads them over PCIe)."""
    gpu_layers: int | None
    """``-ngl``: the output layer and ``gpu_layers - 1`` repeating layers on the GPU; None for ``stream``."""
    cpu_moe_layers: int
    """Layers whose routed experts are in host memory beyond the host layers (``--n-cpu-moe``). [-]"""
    cpu_offload_bytes: float
    """``--cpu-offload-gb`` asked or picked, in bytes (0 for ``layers``). [B]"""
    total_weight_bytes: Any
    """Weights in GPU and host memory together: the GPU's without offload (``MemoryBreakdown.weights_bytes``)
    plus what the engine keeps in host memory anyway (llama.cpp's token embedding). [B]"""
    gpu_weight_bytes: Any
    """Weights left on the GPU. [B]"""
    host_weight_bytes: Any
    """Weights in host memory, the token embedding included for llama.cpp;
    ``gpu_weight_bytes + host_weight_bytes = total_weight_bytes``. [B]"""
    gpu_kv_cache_bytes: Any
    host_kv_cache_bytes: Any
    """KV cache of the host layers (all of it with ``-nkvo``). [B]"""
    host_bytes: Any
    """Host memory the offload takes: host weights plus host KV. [B]"""
    host_memory_bytes: float | None
    """The host's memory as given (``Offload.host_memory``), None when not given. [B]"""
    host_fits: Any
    """``host_bytes <= host_memory_bytes``; None when the host's memory was not given. [bool]"""
    kv_pool_bytes: Any
    kv_pool_tokens: Any
    """Tokens of ``context``-long sequences the GPU's pool holds (the GPU layers' KV per token); None where the
    GPU holds no KV cache (``kv_on_host``, ``gpu_layers = 0``). [token]"""
    headroom_bytes: Any
    """GPU budget minus what the GPU holds with the offload: negative when it does not fit. [B]"""
    fits: Any
    """Whether the GPU's part fits (and the host's, when ``host_memory`` was given). [bool]"""
    host: str
    host_bandwidth: float
    """Host memory bandwidth achieved (given, or the configuration's). [B/s]"""
    host_bandwidth_theoretical: float
    """Its wire rate (the given figure when given). [B/s]"""
    pcie_bandwidth: float
    """PCIe host-to-device achieved per direction. [B/s]"""
    gpu_share: Any
    """Fraction of the plain step's streamed bytes that stay on the GPU. [-]"""
    host_streamed_bytes: Any
    """Bytes read from host memory per decode step. [B]"""
    gpu_seconds: Any
    host_seconds: Any
    transfer_seconds: Any
    """Activation copies between host and GPU per step, expected. [s]"""
    tpot_seconds_ceiling: Any
    tpot_seconds_expected: Any
    ceiling_tokens_per_second: Any
    expected_tokens_per_second: Any
    """Per user, with the offload. [token/s]"""
    expected_aggregate_tokens_per_second: Any
    prefill_seconds_expected: Any
    """Prefill of the prompt with the offload (the host weights copied per micro-batch); None where the plain
    prefill is (a GPU without a published matrix rate). [s]"""
    ttft_seconds_expected: Any
    note: str


def theoretical_bandwidth(channels: Any, transfers_per_second: Any) -> Any:
    r"""Wire rate of DDR memory: :math:`B = n_{ch}\, f_{MT/s} \times 8` (a 64-bit channel moves 8 B per
    transfer; JEDEC JESD79-4/-5). [B/s]

    >>> theoretical_bandwidth(2, 5.6e9) / 1e9
    89.6
    """
    return number(channels) * number(transfers_per_second) * 8.0


@cache
def _table() -> dict[str, Any]:
    return tomllib.loads(datafiles.read_text(datafiles.bundled("host_memory.toml"), what="host_memory.toml"))


def host(name: str) -> HostMemory:
    """A host memory configuration of ``data/host_memory.toml`` (``hosts()`` lists them)."""
    data = _table()
    rows = {row["id"]: row for row in data["host"]}
    if name not in rows:
        raise KeyError(f"offload host: unknown host memory {name!r}; known: {', '.join(rows)}")
    row = rows[name]
    wire = float(theoretical_bandwidth(row["channels"], row["transfers_per_second"]))
    return HostMemory(row["id"], row["description"], row["channels"], row["transfers_per_second"], wire,
                      wire * float(data["achieved_fraction"]), row["source"])


def hosts() -> tuple[str, ...]:
    """Ids of the host memory configurations of ``data/host_memory.toml`` (read on first use)."""
    return tuple(row["id"] for row in _table()["host"])


def layer_split_bytes(
    layer_bytes: Any, expert_bytes: Any, head_bytes: Any, num_layers: Any, gpu_layers: Any, cpu_moe_layers: Any = 0
) -> Any:
    r"""Weight bytes llama.cpp keeps in host memory for ``-ngl g`` and ``--n-cpu-moe m``. [B]

    .. math:: H = (L - r)\,\frac{W_l + W_e}{L} + [g = 0]\, W_{head}
              + \max(0, \min(m, L) - (L - r))\,\frac{W_e}{L}, \qquad r = \min(\max(g - 1, 0), L)

    ``layer_bytes`` :math:`W_l` (all decoder layers without routed experts), ``expert_bytes`` :math:`W_e`
    (all routed experts), ``head_bytes`` the output layer [B]; ``num_layers`` :math:`L`. ``-ngl g`` puts the
    last :math:`g` of :math:`L + 1` slots on the GPU (``i_gpu_start = L + 1 - g``), the output layer being slot
    :math:`L`: :math:`r` repeating layers (``gpu_repeating_layers``) and, for :math:`g \ge 1`, the head;
    ``--n-cpu-moe`` names the first ``m`` layers, some of them host layers already.

    >>> layer_split_bytes(80.0, 0.0, 2.0, 80, 40)  # 41 of 80 layers of 1 B on the host, the head on the GPU
    41.0
    """
    L, g, m = number(num_layers), number(gpu_layers), number(cpu_moe_layers)
    on_host = L - gpu_repeating_layers(g, L)
    extra = maximum(0.0, minimum(m, L) - on_host)
    return on_host * (number(layer_bytes) + number(expert_bytes)) / L + where(g < 1, number(head_bytes), 0.0) + (
        extra * number(expert_bytes) / L)


def gpu_repeating_layers(gpu_layers: Any, num_layers: Any) -> Any:
    r"""Repeating layers ``-ngl g`` puts on the GPU: :math:`r = \min(\max(g - 1, 0), L)` (the output layer takes
    one of the :math:`g` slots). [-]

    >>> gpu_repeating_layers(81, 80), gpu_repeating_layers(40, 80), gpu_repeating_layers(0, 80)
    (80.0, 39.0, 0.0)
    """
    return minimum(maximum(number(gpu_layers) - 1.0, 0.0), number(num_layers))


def host_kv_bytes(kv_bytes: Any, num_layers: Any, gpu_layers: Any, kv_on_host: Any = False) -> Any:
    r"""KV cache in host memory: each layer's lives with the layer, :math:`K (L - r) / L`; all of it
    :math:`K` with ``-nkvo`` (``kv_on_host``). [B]

    >>> host_kv_bytes(8.0, 80, 61), host_kv_bytes(8.0, 80, 61, True)
    (2.0, 8.0)
    """
    L = number(num_layers)
    return where(kv_on_host, number(kv_bytes), number(kv_bytes) * (L - gpu_repeating_layers(gpu_layers, L)) / L)


def gpu_share(streamed_bytes: Any, host_streamed_bytes: Any) -> Any:
    r"""Fraction of a step's streamed bytes still read from GPU memory, :math:`1 - S_h / S`, within [0, 1]. [-]

    >>> gpu_share(40.0, 10.0)
    0.75
    """
    return maximum(0.0, minimum(1.0, 1.0 - number(host_streamed_bytes) / number(streamed_bytes)))


def activation_crossings(cpu_moe_layers: Any, gpu_layers: Any, num_layers: Any) -> Any:
    r"""Host-GPU activation copies per step beyond the plain engine's: two for each GPU layer whose experts are
    the host's, :math:`2 \max(0, \min(m, L) - (L - r))`. Host layers come first and need none (the token
    embedding is the host's already). [-]

    >>> activation_crossings(30, 95, 94)
    60.0
    """
    L = number(num_layers)
    return 2.0 * maximum(0.0, minimum(number(cpu_moe_layers), L) - (L - gpu_repeating_layers(gpu_layers, L)))


def offloaded_step_seconds(
    step_seconds: Any, share: Any, host_streamed_bytes: Any, host_bandwidth: Any, crossings: Any = 0.0,
    crossing_bytes: Any = 0.0, pcie_bandwidth: Any = 1.0, copy_latency: Any = 0.0,
) -> Any:
    r"""Decode step with part of the weights in host memory. [s]

    .. math:: t = t_{GPU}\, s + \frac{S_h}{B_h} + c\,(\alpha + \frac{a}{B_{PCIe}})

    ``step_seconds`` :math:`t_{GPU}` the plain step on the GPU, ``share`` :math:`s` (``gpu_share``),
    ``host_streamed_bytes`` :math:`S_h` [B] read at ``host_bandwidth`` :math:`B_h` [B/s] (host memory for
    llama.cpp's CPU layers, PCIe for vLLM's streamed weights), ``crossings`` :math:`c` activation copies of
    ``crossing_bytes`` :math:`a` [B] each, ``copy_latency`` :math:`\alpha` [s].

    >>> offloaded_step_seconds(0.02, 0.5, 20e9, 50e9)
    0.41
    """
    transfer = number(crossings) * (number(copy_latency) + number(crossing_bytes) / number(pcie_bandwidth))
    return number(step_seconds) * number(share) + number(host_streamed_bytes) / number(host_bandwidth) + transfer


def streamed_prefill_seconds(
    prompt: Any, micro_batch: Any, host_weight_bytes: Any, pcie_bandwidth: Any, threshold: Any = 0
) -> Any:
    r"""Copies of host weights for a prefill computed on the GPU: every micro-batch of at least ``threshold``
    tokens moves them over PCIe once, :math:`\lceil P / u \rceil\, H / B_{PCIe}`; 0 below the threshold. [s]

    >>> streamed_prefill_seconds(1024, 512, 10e9, 20e9, 32)
    1.0
    """
    p = number(prompt)
    chunks = ceil(p / number(micro_batch))
    return where(minimum(p, number(micro_batch)) >= number(threshold),
                 chunks * number(host_weight_bytes) / number(pcie_bandwidth), 0.0)


# --- the composer: one configuration with an offload ------------------------------------------------------------


def _split(
    f: Any, e: Any, sizes: dict[str, Any], decode: Any, g: Any, m: Any, spec: Offload, offload_bytes: Any
) -> Any:
    """Weights moved off the GPU, host KV and host streamed bytes of one split (``g``, ``m`` for layers, bytes
    for stream). llama.cpp's output layer is the head, or a tied embedding's duplicate (``streamed_head_bytes``,
    as ``engines.vocabulary_on_gpu`` puts it on the GPU)."""
    touched = 0.0 if not f.num_experts else minimum(number(decode.experts_touched) / f.num_experts, 1.0)
    if MODES[e.name] == "stream":
        weights = minimum(number(offload_bytes), number(sizes["weights_bytes"]))
        return weights, 0.0 * weights, decode.weight_bytes * weights / sizes["weights_bytes"]
    weights = layer_split_bytes(f.layer_bytes, f.expert_bytes, f.streamed_head_bytes, f.num_layers, g, m)
    streamed = layer_split_bytes(f.layer_bytes, f.expert_bytes * touched, f.streamed_head_bytes, f.num_layers, g, m)
    kv = host_kv_bytes(sizes["kv_cache_bytes"], f.num_layers, g, spec.kv_on_host)
    return weights, kv, streamed + where(spec.kv_on_host, decode.kv_bytes, decode.kv_bytes * kv / maximum(
        sizes["kv_cache_bytes"], 1.0))


def _pool(e: Any, sizes: dict[str, Any], gpu_weights: Any) -> Any:
    non_torch = engines.non_torch_bytes(e.runtime_bytes, e.runtime_bytes_multi_gpu, 1)
    overhead = sizes["activation_bytes"] + sizes["runtime_bytes"]
    return engines.kv_pool_bytes(sizes["capacity_bytes"], gpu_weights, overhead, rule=e.kv_rule,
                                 fraction=sizes["memory_fraction"], non_torch=non_torch)


def _fits(
    f: Any, e: Any, sizes: dict[str, Any], decode: Any, g: Any, m: Any, spec: Offload, offload_bytes: Any
) -> bool:
    weights, kv, _ = _split(f, e, sizes, decode, g, m, spec, offload_bytes)
    pool = _pool(e, sizes, sizes["weights_bytes"] - weights)
    return bool(np.all(memory.headroom_bytes(pool, sizes["kv_cache_bytes"] - kv) >= 0))


def _auto(f: Any, e: Any, sizes: dict[str, Any], decode: Any, spec: Offload) -> tuple[int, int, float]:
    """The most on the GPU that fits: llama.cpp the most layers (MoE: all layers, the fewest ``--n-cpu-moe``,
    then fewer layers); vLLM the smallest whole number of GiB that leaves a KV pool for the sequences."""
    L = int(f.num_layers)
    if MODES[e.name] == "stream":
        for gib in range(int(np.ceil(float(np.max(sizes["weights_bytes"])) / GIB)) + 1):
            if _fits(f, e, sizes, decode, L + 1, 0, spec, gib * GIB):
                return L + 1, 0, float(gib * GIB)
        return L + 1, 0, float(np.ceil(float(np.max(sizes["weights_bytes"])) / GIB) * GIB)
    moe_model = bool(np.all(number(f.expert_bytes) > 0))
    for m in range(L + 1) if moe_model else (0,):
        if _fits(f, e, sizes, decode, L + 1, m, spec, 0.0):
            return L + 1, m, 0.0
    moe = L if moe_model else 0
    for g in range(L, -1, -1):
        if _fits(f, e, sizes, decode, g, moe, spec, 0.0):
            return g, moe, 0.0
    return 0, moe, 0.0


def _bandwidths(spec: Offload, device: catalog.GPU) -> tuple[HostMemory, float, float, float, float]:
    data = _table()
    preset = host(spec.host)
    achieved = preset.achieved_bandwidth if spec.host_bandwidth is None else float(spec.host_bandwidth)
    wire = preset.theoretical_bandwidth if spec.host_bandwidth is None else float(spec.host_bandwidth)
    line = interconnect.pcie_bandwidth(device)
    return preset, achieved, wire, line * float(data["pcie_fraction"]), line


def _check(spec: Offload, engine: str, gpus: int) -> None:
    checks.instance(spec, "offload", (Offload,))
    if engine not in MODES:
        raise ValueError(f"offload: engine {engine!r} has no weight offload; use one of {', '.join(MODES)}")
    if gpus != 1:
        raise ValueError(f"offload: modelled on one GPU, got gpus={gpus}")
    layers = spec.gpu_layers is not None or spec.cpu_moe_layers or spec.kv_on_host
    if MODES[engine] == "stream" and layers:
        raise ValueError("offload: gpu_layers, cpu_moe_layers and kv_on_host are llama.cpp's; vLLM and SGLang "
                         "take cpu_offload_bytes")
    if MODES[engine] == "layers" and spec.cpu_offload_bytes:
        raise ValueError("offload: cpu_offload_bytes is vLLM's and SGLang's; llama.cpp takes gpu_layers")
    for name in ("gpu_layers", "cpu_moe_layers"):
        value = getattr(spec, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ValueError(f"offload {name}: a whole number >= 0, got {value!r}")
    for name in ("cpu_offload_bytes", "host_bandwidth", "host_memory"):
        value = getattr(spec, name)
        if value is not None and not (isinstance(value, (int, float)) and np.isfinite(value) and value >= 0):
            raise ValueError(f"offload {name}: a finite number >= 0, got {value!r}")
    if spec.host_bandwidth == 0:
        raise ValueError("offload host_bandwidth: must be > 0")


def offload(
    device: catalog.GPU, engine: Any, gpus: int, f: Any, sizes: dict[str, Any], decode: Any, prefill: Any,
    ctx: Any, users: Any, spec: Offload,
) -> Offloaded:
    """One configuration with part of its weights in host memory (``estimator.estimate``'s ``offload=``):
    ``f`` its model numbers (``unpack.model_numbers``), ``sizes`` its memory numbers, ``decode`` and
    ``prefill`` its plain speed (``performance``), ``ctx`` [token] and ``users`` its context and concurrency."""
    _check(spec, engine.name, gpus)
    L = int(f.num_layers)
    g, m, moved = (L + 1 if spec.gpu_layers is None else spec.gpu_layers), spec.cpu_moe_layers, float(
        spec.cpu_offload_bytes)
    if spec.auto:
        g, m, moved = _auto(f, engine, sizes, decode, spec)
    weights, kv, streamed = _split(f, engine, sizes, decode, g, m, spec, moved)
    _, achieved, wire, pcie, line = _bandwidths(spec, device)
    stream = MODES[engine.name] == "stream"
    pool = _pool(engine, sizes, sizes["weights_bytes"] - weights)
    headroom = memory.headroom_bytes(pool, sizes["kv_cache_bytes"] - kv)
    resident = where(engine.input_embedding_on_host, number(f.embedding_bytes), 0.0)  # llama.cpp's token_embd
    host_total, gpu_kv = weights + resident + kv, sizes["kv_cache_bytes"] - kv
    host_fits = None if spec.host_memory is None else scalar_or_array(host_total <= spec.host_memory)
    share = gpu_share(decode.weight_bytes + decode.kv_bytes, streamed)
    crossings = 0.0 if stream else activation_crossings(m, g, L)
    hop = number(users) * f.hidden * 4.0  # ggml's activations are f32
    data = _table()
    bandwidth, ceiling_bandwidth = (pcie, line) if stream else (achieved, wire)
    tpot = offloaded_step_seconds(decode.tpot_seconds_expected, share, streamed, bandwidth, crossings, hop, pcie,
                                  data["copy_latency_seconds"])
    top = offloaded_step_seconds(decode.tpot_seconds_ceiling, share, streamed, ceiling_bandwidth, crossings, hop, line)
    extra = streamed_prefill_seconds(prefill.prompt, engine.batched_tokens, weights, pcie,
                                     0 if stream else PREFILL_OFFLOAD_BATCH)
    return Offloaded(
        mode=MODES[engine.name], gpu_layers=None if stream else int(g), cpu_moe_layers=int(m),
        cpu_offload_bytes=moved if stream else 0.0,
        total_weight_bytes=scalar_or_array(sizes["weights_bytes"] + resident),
        gpu_weight_bytes=sizes["weights_bytes"] - weights, host_weight_bytes=scalar_or_array(weights + resident),
        gpu_kv_cache_bytes=scalar_or_array(sizes["kv_cache_bytes"] - kv), host_kv_cache_bytes=scalar_or_array(kv),
        host_bytes=scalar_or_array(host_total), host_memory_bytes=spec.host_memory, host_fits=host_fits,
        kv_pool_bytes=maximum(pool, 0.0), headroom_bytes=scalar_or_array(headroom),
        kv_pool_tokens=memory.pool_tokens(pool, gpu_kv / number(users), ctx) if np.all(gpu_kv > 0) else None,
        fits=scalar_or_array((headroom >= 0) & (True if host_fits is None else np.asarray(host_fits))),
        host=spec.host if spec.host_bandwidth is None else "given", host_bandwidth=achieved,
        host_bandwidth_theoretical=wire, pcie_bandwidth=pcie, gpu_share=scalar_or_array(share),
        host_streamed_bytes=scalar_or_array(streamed),
        gpu_seconds=scalar_or_array(decode.tpot_seconds_expected * share),
        host_seconds=scalar_or_array(streamed / bandwidth),
        transfer_seconds=scalar_or_array(offloaded_step_seconds(0.0, 0.0, 0.0, 1.0, crossings, hop, pcie,
                                                                data["copy_latency_seconds"])),
        tpot_seconds_ceiling=scalar_or_array(top), tpot_seconds_expected=scalar_or_array(tpot),
        ceiling_tokens_per_second=scalar_or_array(1.0 / top), expected_tokens_per_second=scalar_or_array(1.0 / tpot),
        expected_aggregate_tokens_per_second=scalar_or_array(number(users) / tpot),
        prefill_seconds_expected=None if prefill.seconds_expected is None else scalar_or_array(
            prefill.seconds_expected + extra),
        ttft_seconds_expected=None if prefill.ttft_seconds_expected is None else scalar_or_array(
            prefill.ttft_seconds_expected + extra),
        note=("host weights read by the GPU over PCIe every forward pass" if stream else
              "host layers computed by the CPU at the host's memory bandwidth; prompt batches >= 32 tokens on the GPU"),
    )
