"""From an ``EngineCommand`` to ``estimate``'s inputs, and the engine's startup figures in its own words.

A composer: the KV pool, its tokens, the concurrency and the speed all come from ``estimator.estimate``
with the engine profile the command sets (``EngineProfile.model_copy``); nothing here is a formula of its
own beyond reading the figures out in each engine's log wording.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gpusizer import catalog, engine_defaults, engines, estimator, hf, units
from gpusizer import offload as offloading
from gpusizer.commandline.flags import LLAMA_CPP_AUTO_SLOTS, VLLM_LARGE_GPU_BYTES
from gpusizer.commandline.reader import EngineCommand
from gpusizer.commands import common, model_argument

__all__ = ["TRTLLM_BACKENDS", "Prediction", "inputs", "predict", "profile_name", "resolve_model", "sglang_fraction",
           "startup_lines"]


#: Checkpoint-name suffixes that say the weights' precision (``Qwen/Qwen3-235B-A22B-FP8``, ``...-AWQ``,
#: ``model-Q4_K_M.gguf``), lower case, longest first within a name.
NAME_PRECISION = {
    "fp8": "fp8", "fp8-dynamic": "fp8", "awq": "int4", "gptq": "int4", "gptq-int4": "int4", "int4": "int4",
    "w4a16": "int4", "int8": "int8", "w8a8": "int8", "gptq-int8": "int8", "nvfp4": "nvfp4", "fp4": "nvfp4",
    "mxfp4": "mxfp4", "q8_0": "q8_0", "q6_k": "q6_k", "q5_k_m": "q5_k_m", "q4_k_m": "q4_k_m", "q4_0": "q4_0",
    "q3_k_m": "q3_k_m", "q2_k": "q2_k", "bf16": "bf16", "f16": "fp16",
}
_NAME_NOISE = ("gguf", "instruct", "chat", "hf", "it", "base", "2507")

#: ``--quantization`` methods (vLLM, SGLang) -> the precision gpusizer sizes them as; others: the checkpoint's.
QUANTIZATION = {"fp8": "fp8", "awq": "int4", "awq_marlin": "int4", "gptq": "int4", "gptq_marlin": "int4",
                "bitsandbytes": "int4", "mxfp4": "mxfp4", "modelopt_fp4": "nvfp4", "w8a8_int8": "int8",
                "w8a8_fp8": "fp8", "modelopt": "fp8"}
#: ``--dtype`` -> precision, used only when the checkpoint is unquantized.
DTYPE = {"half": "fp16", "float16": "fp16", "bfloat16": "bf16", "float": "fp32", "float32": "fp32"}
#: ``--kv-cache-dtype`` (vLLM, SGLang) -> KV precision; ``auto``: the model's dtype.
KV_DTYPE = {"auto": None, "fp8": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8_e5m2", "bf16": "bf16",
            "bfloat16": "bf16", "fp16": "fp16", "half": "fp16", "float16": "fp16"}

#: ``trtllm-serve --backend`` -> the engine profile it runs: ``tensorrt`` (alias ``trt``) builds a TensorRT engine
#: for the C++ runtime, ``pytorch`` (the default) and ``_autodeploy`` run PyTorch
#: (NVIDIA/TensorRT-LLM@00209af149e7 ``tensorrt_llm/commands/serve.py`` ``launch_server``).
TRTLLM_BACKENDS = {"pytorch": "trtllm", "_autodeploy": "trtllm", "tensorrt": "trtllm-engine", "trt": "trtllm-engine"}


def profile_name(command: EngineCommand) -> str:
    """The ``engines.ENGINES`` profile a command runs: its engine's, or for ``trtllm-serve`` its ``--backend``'s
    (``TRTLLM_BACKENDS``).

    Raises
    ------
    ValueError
        A ``--backend`` trtllm-serve does not know.

    Examples
    --------
    >>> from gpusizer.commandline import parse
    >>> profile_name(parse("trtllm-serve meta-llama/Llama-3.1-8B-Instruct --backend trt"))
    'trtllm-engine'
    """
    if command.engine != "trtllm":
        return command.engine
    backend = str(command.settings.get("backend", "pytorch"))
    if backend not in TRTLLM_BACKENDS:
        raise ValueError(f"--backend: {backend!r} is not a trtllm-serve backend; known: {', '.join(TRTLLM_BACKENDS)}")
    return TRTLLM_BACKENDS[backend]


@dataclass(frozen=True)
class Prediction:
    """What the engine will report at startup, and the speed, for one command line on one GPU type."""

    command: EngineCommand
    inputs: dict[str, Any]
    """The ``estimate`` keyword arguments the command maps to (the engine profile by its changed fields)."""
    estimate: estimator.Estimate
    """At one sequence (llama.cpp: every slot): the KV pool, its tokens, TTFT and per-user decode."""
    busy: estimator.Estimate | None
    """At the concurrency the engine will run at with its pool full (``min(max sequences, max
    concurrency)``); None when that is one sequence or the pool holds none."""
    startup: dict[str, Any]
    """The startup figures by name: ``kv_cache_bytes`` per GPU [B], ``kv_cache_tokens`` [token],
    ``max_concurrency`` [-], ``starts`` [bool]."""
    speed: dict[str, Any]
    """Per-user decode [token/s] (``decode_expected``, ``decode_p10``/``p90``, ``decode_ceiling``) and TTFT [s]
    of a ``prompt``-token prompt (``ttft_expected``, ``ttft_p10``/``p90``), with the offload when on (no band
    there: None)."""
    lines: tuple[str, ...]
    """The same figures in the engine's own log wording."""


def resolve_model(name: str) -> tuple[catalog.Model, str | None]:
    """The catalogue model a command's model string names, and the weight precision its name says.

    The string goes through ``commands.model_argument.resolve_model`` (catalogue id, or a local config.json /
    checkpoint); an unknown id is then matched to a catalogue entry by its Hugging Face repo
    (``Model.hf_repo``, case-insensitive) or by the repo's last part less precision and ``-Instruct``-style
    suffixes; a repo id that matches none is looked up in the local Hugging Face cache last.

    Raises
    ------
    KeyError
        When nothing matches (naming the closest catalogue ids).
    CommandError
        A repo id that matches no catalogue entry and is not in the local Hugging Face cache (status 1).
    """
    base = name.rstrip("/").rsplit("/", 1)[-1]
    stem, _, tag = base.lower().removesuffix(".gguf").partition(":")  # llama.cpp -hf user/repo:Q4_K_M
    hint = NAME_PRECISION.get(tag) or next((NAME_PRECISION[s] for s in sorted(NAME_PRECISION, key=len, reverse=True)
                                            if re.search(rf"[-_.]{re.escape(s)}$", stem)), None)
    try:
        return model_argument.resolve_model(name, cache=False)[0], hint
    except KeyError as error:
        wanted = name.lower().split(":")[0]
        for record in catalog.models():
            if record.hf_repo and record.hf_repo.lower() in (wanted, wanted.replace("meta-llama-", "llama-")):
                return record, hint
        short = stem
        for suffix in [*sorted(NAME_PRECISION, key=len, reverse=True), *_NAME_NOISE]:
            short = re.sub(rf"[-_.]{re.escape(suffix)}$", "", short)
        for candidate in (short, short.removeprefix("meta-")):
            try:
                return catalog.model(candidate), hint
            except KeyError:
                continue
        if hf.parse_repo_id(name) is not None:
            return model_argument.model(name), hint  # the local Hugging Face cache, or one line saying it is not there
        raise error from None


def _layout(tp: int, pp: int, dp: int, ep: bool) -> str:
    text = f"tp{tp}+ep{tp}" if ep else f"tp{tp}"
    return text + (f"xpp{pp}" if pp > 1 else "") + (f"xdp{dp}" if dp > 1 else "")


def _weights(s: dict[str, Any], record: catalog.Model, hint: str | None, flag: str) -> str | None:
    method = s.get("quantization")
    if method is not None:
        return QUANTIZATION.get(str(method).lower(), hint)
    dtype = DTYPE.get(str(s.get("dtype", "auto")).lower())
    if dtype and record.weights in ("bf16", "fp16", "fp32") and hint is None:
        return dtype
    return hint


def _kv(text: Any, flag: str) -> str | None:
    key = str(text).lower()
    if key not in KV_DTYPE:
        raise ValueError(f"{flag}: {text!r} is a KV-cache type gpusizer does not size; known: {', '.join(KV_DTYPE)}")
    return KV_DTYPE[key]


def _llama_kv(s: dict[str, Any]) -> str:
    sizes = []
    for key, flag in (("kv_cache_k", "--cache-type-k"), ("kv_cache_v", "--cache-type-v")):
        text = str(s[key]).lower()
        if text not in common.LLAMA_CPP_KV:
            raise ValueError(f"{flag}: {text!r} is a KV-cache type gpusizer does not size; known: "
                             f"{', '.join(common.LLAMA_CPP_KV)}")
        sizes.append(common.LLAMA_CPP_KV[text])
    order = ("int8", "fp16", "bf16", "fp32")
    return max(sizes, key=order.index)  # K and V of different types: sized at the larger, an upper bound


def _context(s: dict[str, Any], record: catalog.Model, flag: str) -> int:
    context = s.get("context") or record.max_context
    if not context:
        raise ValueError(f"{flag}: {record.id} states no maximum context; give {flag}")
    return int(context)


def inputs(command: EngineCommand, record: catalog.Model, device: catalog.GPU, *, hint: str | None = None,
           gpus: int | None = None, base: engines.EngineProfile | None = None) -> dict[str, Any]:
    """``estimate``'s keyword arguments for a command line (at one sequence; llama.cpp: every slot).

    ``hint`` is the weight precision the model's name says (``resolve_model``); ``gpus`` the GPUs
    llama.cpp sees (it splits over every visible GPU; default 1); ``base`` the engine profile the command's
    flags change (default the engine's own: a version the command line does not say, e.g. vLLM before
    v0.21, is given here). Unset settings take the engine's
    defaults (``EngineCommand.defaults``); vLLM's ``max_num_seqs`` and ``max_num_batched_tokens`` follow
    the GPU (1024 and 8192 on 70 GiB or more except A100, else 256 and 2048).

    Raises
    ------
    ValueError
        A KV-cache type gpusizer does not size, or a model without a stated maximum context and no flag
        setting it; the message names the flag.
    """
    s = {**command.defaults, **command.settings}
    profile = base or engines.engine(profile_name(command))
    update: dict[str, Any] = {}
    out: dict[str, Any] = {"concurrency": 1}
    if command.engine == "llama.cpp":
        return _llama_inputs(s, record, profile, gpus, hint)
    tp, pp, dp = (int(s.get(k) or 1) for k in ("tensor_parallel", "pipeline_parallel", "data_parallel"))
    out.update(gpus=tp * pp * dp, layout=_layout(tp, pp, dp, bool(s.get("expert_parallel"))))
    context_flag = {"vllm": "--max-model-len", "sglang": "--context-length", "trtllm": "--max_seq_len"}
    out["context"] = _context(s, record, context_flag[command.engine])
    if command.engine == "vllm":
        large = device.capacity >= VLLM_LARGE_GPU_BYTES and "a100" not in f"{device.id} {device.name}".lower()
        s["max_sequences"] = s.get("max_sequences") or (1024 if large else 256)
        s["batched_tokens"] = s.get("batched_tokens") or (8192 if large else 2048)
        if s.get("cpu_offload_gib"):
            out["offload"] = offloading.Offload(cpu_offload_bytes=float(s["cpu_offload_gib"]) * units.GiB)
    if command.engine == "sglang" and s.get("memory_fraction") is None and profile.fraction_rule == "sglang":
        s["memory_fraction"] = sglang_fraction(s, device.capacity, tp, pp)
    if command.engine == "sglang" and s.get("batched_tokens") == -1:
        s["batched_tokens"] = out["context"]  # chunked prefill off: one forward pass holds the whole prompt
    for key in ("memory_fraction", "max_sequences", "batched_tokens", "block_size"):
        if s.get(key) is not None:
            update[key] = s[key]
    if "memory_fraction" in update:
        update["fraction_rule"] = "fixed"
    if s.get("enforce_eager"):
        update["cuda_graph_bytes"] = 0.0
    out["weights"] = _weights(s, record, hint, "--quantization")
    out["kv_cache"] = _kv(s.get("kv_cache", "auto"), "--kv-cache-dtype")
    out["engine"] = profile.model_copy(update=update) if update else profile
    return out


def sglang_fraction(settings: dict[str, Any], capacity: float, tp: int, pp: int) -> float:
    """SGLang's default ``mem_fraction_static`` for a command line's settings
    (``engine_defaults.sglang_mem_fraction_static``): ``--chunked-prefill-size`` (-1, chunked prefill off:
    ``max_prefill_tokens`` 16384 and no prefill graphs), ``--cuda-graph-max-bs`` and
    ``--disable-cuda-graph`` (no graphs) enter its reserve. [-]

    Examples
    --------
    >>> sglang_fraction({}, 81559 * 2**20, 1, 1), sglang_fraction({"enforce_eager": True}, 81559 * 2**20, 1, 1)
    (0.83, 0.841)
    """
    chunk = settings.get("batched_tokens")
    eager = bool(settings.get("enforce_eager"))
    graphs = 0 if eager else settings.get("cuda_graph_max_bs")
    reserve: dict[str, Any] = {"pipeline_parallel": pp, "cuda_graph_max_bs": graphs}
    if chunk == -1:
        reserve.update(chunked_prefill=16384, prefill_graph_sizes=0)
    else:
        reserve.update(chunked_prefill=chunk, prefill_graph_sizes=0 if eager else None)
    return float(engine_defaults.sglang_mem_fraction_static(capacity, tp, **reserve))


def _llama_inputs(s: dict[str, Any], record: catalog.Model, profile: engines.EngineProfile, gpus: int | None,
                  hint: str | None) -> dict[str, Any]:
    slots = int(s["max_sequences"]) if int(s["max_sequences"]) > 0 else LLAMA_CPP_AUTO_SLOTS
    cells = int(s["context"]) or _context({}, record, "--ctx-size")
    visible = gpus or 1
    if s.get("tensor_split"):
        visible = sum(1 for share in s["tensor_split"] if share > 0)
    if str(s.get("split_mode")) == "none":
        visible = 1
    # -sm tensor (ggml-org/llama.cpp PR #19378) and the older -sm row split every weight: the llama.cpp class
    # prices that as its tensor split (data/interconnect.toml)
    layout = f"tp{visible}" if str(s.get("split_mode")) in ("row", "tensor") else f"layer{visible}"
    layers = str(s.get("gpu_layers", -1)).lower()
    on_gpu = None if layers in ("-1", "auto", "all") else _layers(layers)
    cpu_moe = record.num_layers if s.get("cpu_moe_all") else int(s.get("cpu_moe_layers") or 0)
    needs = (on_gpu is not None and on_gpu <= record.num_layers) or cpu_moe or s.get("kv_on_host")
    update = {"batched_tokens": int(s["batched_tokens"]), "max_sequences": slots}
    return {
        "gpus": visible, "layout": layout, "context": max(1, cells // slots), "concurrency": slots,
        "weights": hint, "kv_cache": _llama_kv(s),
        "engine": profile.model_copy(update=update),
        "offload": offloading.Offload(gpu_layers=on_gpu, cpu_moe_layers=cpu_moe, kv_on_host=bool(s.get("kv_on_host")))
        if needs else None,
    }


def _layers(text: str) -> int:
    if not text.lstrip("-").isdigit() or int(text) < 0:
        raise ValueError(f"--n-gpu-layers: {text!r} is not a layer count (a whole number, -1, auto or all)")
    return int(text)


def predict(command: EngineCommand, gpu: str | catalog.GPU | catalog.System, *,
            model: catalog.Model | None = None, gpus: int | None = None, prompt: int | None = None,
            calibration: Any = None, base: engines.EngineProfile | None = None) -> Prediction:
    """The engine's startup KV figures and the speed for one command line on one GPU type.

    Parameters
    ----------
    command : EngineCommand
        ``parse``'s answer.
    gpu : str or GPU or System
        The GPU type the command will run on (the command names none).
    model : Model, optional
        The model record; default ``resolve_model(command.model)``.
    gpus : int, optional
        GPUs llama.cpp sees (default 1, or the system's); the other engines take theirs from the command.
    prompt : int, optional
        Prompt tokens of the TTFT; default the context. [token]
    calibration : Calibration, optional
        Passed to ``estimate``.
    base : EngineProfile, optional
        The profile the command's flags change (``inputs``); default the engine's own.

    Returns
    -------
    Prediction
        ``startup`` and ``lines`` read the pool out of ``estimate`` (``kv_pool_bytes``, ``kv_pool_tokens``
        per data-parallel replica, ``max_concurrency``, ``memory.kv_cache_bytes`` for llama.cpp).

    Examples
    --------
    >>> from gpusizer.commandline import parse
    >>> p = predict(parse("vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192"), "h100")
    >>> p.lines[1].startswith("GPU KV cache size:")
    True
    """
    hint = None
    if model is None:
        model, hint = resolve_model(command.model)
    device, system_gpus = estimator.resolve_target(gpu, None)
    visible = gpus if gpus is not None else system_gpus
    kwargs = inputs(command, model, device, hint=hint, gpus=visible, base=base)
    result = estimator.estimate(model, gpu, **kwargs, prompt=prompt, calibration=calibration)
    startup = _startup(command, result, kwargs)
    busy = None
    full = min(int(kwargs["engine"].max_sequences), int(startup["max_concurrency"]))
    if command.engine != "llama.cpp" and full > 1 and startup["starts"] and result.offload is None:
        busy = estimator.estimate(model, gpu, **{**kwargs, "concurrency": full}, prompt=prompt, calibration=calibration)
    return Prediction(command=command, inputs=kwargs, estimate=result, busy=busy, startup=startup,
                      speed=_speed(result),
                      lines=startup_lines(command.engine, startup, int(kwargs["context"]), int(kwargs["concurrency"])))


def _startup(command: EngineCommand, result: estimator.Estimate, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The pool figures of ``result`` (with its offload, when on) as the engine counts them."""
    off = result.offload
    replicas = int(command.settings.get("data_parallel", 1) or 1)  # vLLM and SGLang log one replica's pool
    if command.engine == "llama.cpp":
        cells = int(kwargs["context"]) * int(kwargs["concurrency"])
        return {"kv_cache_bytes": float(result.memory.kv_cache_bytes if off is None else off.gpu_kv_cache_bytes),
                "host_kv_cache_bytes": 0.0 if off is None else float(off.host_kv_cache_bytes),
                "kv_cache_tokens": cells, "max_concurrency": float(kwargs["concurrency"]),
                "starts": bool(result.fits if off is None else off.fits)}
    pool = result.kv_pool_bytes if off is None else off.kv_pool_bytes
    tokens = result.kv_pool_tokens if off is None or off.kv_pool_tokens is None else off.kv_pool_tokens
    tokens = int(tokens) // replicas
    cap = command.settings.get("max_total_tokens")
    if cap is not None and 0 < cap < tokens:  # SGLang --max-total-tokens: the pool is cut to the cap
        pool, tokens = float(pool) * cap / tokens, int(cap)
    context = int(kwargs["context"])
    out = {"kv_cache_bytes": float(pool), "kv_cache_tokens": tokens, "max_concurrency": tokens / context,
           "starts": bool(tokens >= context and (result.fits if off is None else off.fits))}
    if kwargs["engine"].activation == "tensorrt":  # the C++ runtime logs the engine's device memory first
        out["execution_context_bytes"] = float(result.memory.activation_bytes)
    return out


def _speed(result: estimator.Estimate) -> dict[str, Any]:
    """Per-user decode and TTFT of ``result`` (with its offload, when on: no band there). [token/s], [s]"""
    d, f, off = result.decode, result.prefill, result.offload
    if off is not None:
        return {"decode_expected": float(off.expected_tokens_per_second), "decode_p10": None, "decode_p90": None,
                "decode_ceiling": float(off.ceiling_tokens_per_second), "prompt": int(f.prompt),
                "ttft_expected": None if off.ttft_seconds_expected is None else float(off.ttft_seconds_expected),
                "ttft_p10": None, "ttft_p90": None}
    return {"decode_expected": float(d.expected_tokens_per_second), "decode_p10": float(d.band[0]),
            "decode_p90": float(d.band[1]), "decode_ceiling": float(d.ceiling_tokens_per_second),
            "prompt": int(f.prompt), "ttft_expected": float(f.ttft_seconds_expected),
            "ttft_p10": float(f.ttft_band[0]), "ttft_p90": float(f.ttft_band[1])}


def startup_lines(engine: str, startup: dict[str, Any], context: int, slots: int = 1) -> tuple[str, ...]:
    """The startup figures in the engine's own log wording.

    vLLM (``vllm/v1/worker/gpu_worker.py``, ``vllm/v1/core/kv_cache_utils.py``): "Available KV cache memory",
    "GPU KV cache size: N tokens", "Maximum concurrency for X tokens per request: Y x"; SGLang
    (``model_runner``): "KV Cache is allocated. #tokens: N"; TensorRT-LLM: "Allocated X GiB for max tokens in
    paged KV cache (N)", after "Allocated X MiB for execution context memory" with a TensorRT engine
    (``cpp/tensorrt_llm/runtime/tllmRuntime.cpp``); llama.cpp (``llama-kv-cache.cpp``): "KV buffer size = X
    MiB". vLLM's and SGLang's "GB" are GiB.
    """
    pool, tokens = startup["kv_cache_bytes"], int(startup["kv_cache_tokens"])
    tail: tuple[str, ...] = ()
    if not startup["starts"] and engine != "llama.cpp" and tokens < context:
        tail = (f"(will not start: the KV cache holds {tokens:,} tokens, fewer than one {context:,}-token sequence)",)
    elif not startup["starts"]:
        tail = ("(will not start: the weights, KV cache and buffers exceed the GPU's memory)",)
    lines: tuple[str, ...]
    if engine == "vllm":
        lines = (f"Available KV cache memory: {pool / units.GiB:.2f} GiB", f"GPU KV cache size: {tokens:,} tokens",
                 f"Maximum concurrency for {context:,} tokens per request: {startup['max_concurrency']:.2f}x")
    elif engine == "sglang":
        lines = (f"KV Cache is allocated. #tokens: {tokens}, K size: {pool / 2 / units.GiB:.2f} GB, "
                 f"V size: {pool / 2 / units.GiB:.2f} GB",)
    elif engine == "trtllm":
        lines = (f"[MemUsageChange] Allocated {pool / units.GiB:.2f} GiB for max tokens in paged KV cache "
                 f"({tokens:,}).",)
        if "execution_context_bytes" in startup:
            lines = (f"[MemUsageChange] Allocated {startup['execution_context_bytes'] / units.MiB:.2f} MiB for "
                     "execution context memory.", *lines)
    else:
        lines = (f"llama_context: n_ctx = {tokens}, n_seq_max = {slots}",
                 f"llama_kv_cache: KV buffer size = {pool / units.MiB:.2f} MiB (per GPU)")
        if startup.get("host_kv_cache_bytes"):
            lines += (f"llama_kv_cache: CPU KV buffer size = {startup['host_kv_cache_bytes'] / units.MiB:.2f} MiB",)
    return lines + tail
