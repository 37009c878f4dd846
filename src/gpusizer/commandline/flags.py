"""The serving engines' own command-line flags, as their sources define them: names, aliases, defaults.

Facts only (names, which take a value, defaults); ``gpusizer.commandline.parse`` reads a command line
with them. Each ``Flag`` names the ``EngineCommand.settings`` key it sets; ``setting=None`` marks a flag
the engine knows but gpusizer does not model (reported as ``ignored_flags``, never dropped).

Sources (flag names, aliases and defaults read from the engines' code):

* vLLM: vllm-project/vllm@99d7eb5d6a51 ``vllm/engine/arg_utils.py`` (``EngineArgs.add_cli_args``;
  ``get_batch_defaults``: ``vllm serve`` on a GPU of 70 GiB or more that is not an A100 defaults to
  ``max_num_batched_tokens`` 8192 and ``max_num_seqs`` 1024, other GPUs 2048 and 256); vLLM's
  ``FlexibleArgumentParser`` reads ``--max_model_len`` as ``--max-model-len``.
* SGLang: sgl-project/sglang@001067fffe33 ``python/sglang/srt/server_args.py`` (``ServerArgs``:
  ``model_path`` alias ``--model``, ``tp_size`` alias ``--tensor-parallel-size``, ``pp_size``,
  ``dp_size``, ``mem_fraction_static``/``max_running_requests``/``chunked_prefill_size``/``page_size``/
  ``cuda_graph_max_bs`` default None, chosen at startup from the GPU
  (``engine_defaults.sglang_mem_fraction_static``); ``context_length`` default None: the model's;
  ``max_total_tokens``: "the maximum number of tokens in the memory pool", default None); ``--tp``
  and ``--dp`` are argparse's unique-prefix abbreviations of ``--tp-size`` and ``--dp-size``, the
  spelling SGLang's own docs use.
* TensorRT-LLM: NVIDIA/TensorRT-LLM@00209af149e7 ``tensorrt_llm/commands/serve.py`` (click options of
  ``trtllm-serve``: ``--tp_size``/``--tensor_parallel_size`` 1, ``--free_gpu_memory_fraction``/
  ``--kv_cache_free_gpu_memory_fraction`` 0.9, ``--max_batch_size``, ``--max_num_tokens``,
  ``--max_seq_len`` from ``BuildConfig``: 2048, 8192 and the model's; ``--backend`` ``pytorch`` (default),
  ``tensorrt`` (alias ``trt``: a TensorRT engine under the C++ runtime, the ``trtllm-engine`` profile) or
  ``_autodeploy``; the model argument is "model name | HF checkpoint path | TensorRT engine path").
* llama.cpp: ggml-org/llama.cpp@145b6280d6aa ``common/arg.cpp`` (``-c/--ctx-size`` default 0 = the
  model's; ``-np/--parallel`` "number of server slots (default: -1 = auto)", auto being 4 slots;
  ``-ngl/--gpu-layers/--n-gpu-layers``; ``-ctk/--cache-type-k`` and ``-ctv/--cache-type-v`` f16;
  ``-b/--batch-size`` 2048; ``-ub/--ubatch-size`` 512; ``--n-cpu-moe/-ncmoe``; ``--cpu-moe/-cmoe``;
  ``-ts/--tensor-split``; ``-sm/--split-mode`` layer (``tensor``: ggml-org/llama.cpp PR #19378; ``row`` until
  PR #24216); ``-nkvo/--no-kv-offload``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ENGINE_FLAGS", "LLAMA_CPP_AUTO_SLOTS", "SOURCES", "VLLM_LARGE_GPU_BYTES", "Flag", "lookup"]


@dataclass(frozen=True)
class Flag:
    """One flag of an engine's command line."""

    names: tuple[str, ...]
    """Every spelling the engine accepts (the first is the canonical one)."""
    setting: str | None
    """``EngineCommand.settings`` key it sets; None: known to the engine, not modelled by gpusizer."""
    kind: str = "text"
    """``int``, ``tokens`` (an integer, ``32k`` allowed), ``fraction`` (0 < f <= 1), ``number``, ``text``,
    ``split`` (comma-separated proportions) or ``switch`` (takes no value)."""
    default: Any = None
    """The engine's default (None where the engine derives it at startup)."""


def _ignored(*names: str, switch: bool = False) -> Flag:
    return Flag(names, None, "switch" if switch else "text")


VLLM_LARGE_GPU_BYTES = 70 * 2.0**30
"""vLLM's threshold for its larger batch defaults (``get_batch_defaults``: 70 GiB and not an A100). [B]"""

LLAMA_CPP_AUTO_SLOTS = 4
"""Server slots llama-server picks for ``-np -1`` (auto). [-]"""

ENGINE_FLAGS: dict[str, tuple[Flag, ...]] = {
    "vllm": (
        Flag(("--model",), "model"),
        Flag(("--tensor-parallel-size", "-tp"), "tensor_parallel", "int", 1),
        Flag(("--pipeline-parallel-size", "-pp"), "pipeline_parallel", "int", 1),
        Flag(("--data-parallel-size", "-dp"), "data_parallel", "int", 1),
        Flag(("--enable-expert-parallel", "-ep"), "expert_parallel", "switch", False),
        Flag(("--max-model-len",), "context", "tokens"),
        Flag(("--gpu-memory-utilization",), "memory_fraction", "fraction", 0.9),
        Flag(("--kv-cache-dtype",), "kv_cache", "text", "auto"),
        Flag(("--max-num-seqs",), "max_sequences", "int"),
        Flag(("--max-num-batched-tokens",), "batched_tokens", "tokens"),
        Flag(("--block-size",), "block_size", "int", 16),
        Flag(("--quantization", "-q"), "quantization", "text"),
        Flag(("--dtype",), "dtype", "text", "auto"),
        Flag(("--cpu-offload-gb",), "cpu_offload_gib", "number", 0.0),
        Flag(("--enforce-eager",), "enforce_eager", "switch", False),
        _ignored("--host"), _ignored("--port"), _ignored("--served-model-name"), _ignored("--tokenizer"),
        _ignored("--swap-space"), _ignored("--seed"), _ignored("--api-key"), _ignored("--download-dir"),
        _ignored("--load-format"), _ignored("--revision"), _ignored("--config"), _ignored("--chat-template"),
        _ignored("--tool-call-parser"), _ignored("--reasoning-parser"), _ignored("--generation-config"),
        _ignored("--distributed-executor-backend"), _ignored("--speculative-config"),
        _ignored("--limit-mm-per-prompt"), _ignored("--compilation-config", "-O"), _ignored("--hf-overrides"),
        _ignored("--max-logprobs"), _ignored("--uvicorn-log-level"), _ignored("--kv-transfer-config"),
        _ignored("--trust-remote-code", switch=True), _ignored("--enable-prefix-caching", switch=True),
        _ignored("--no-enable-prefix-caching", switch=True), _ignored("--enable-chunked-prefill", switch=True),
        _ignored("--disable-log-requests", switch=True), _ignored("--disable-log-stats", switch=True),
        _ignored("--enable-auto-tool-choice", switch=True), _ignored("--disable-custom-all-reduce", switch=True),
        _ignored("--async-scheduling", switch=True),
    ),
    "sglang": (
        Flag(("--model-path", "--model"), "model"),
        Flag(("--tp-size", "--tensor-parallel-size", "--tp"), "tensor_parallel", "int", 1),
        Flag(("--pp-size", "--pipeline-parallel-size"), "pipeline_parallel", "int", 1),
        Flag(("--dp-size", "--data-parallel-size", "--dp"), "data_parallel", "int", 1),
        Flag(("--mem-fraction-static",), "memory_fraction", "fraction"),
        Flag(("--context-length",), "context", "tokens"),
        Flag(("--max-running-requests",), "max_sequences", "int"),
        Flag(("--kv-cache-dtype",), "kv_cache", "text", "auto"),
        Flag(("--chunked-prefill-size",), "batched_tokens", "int"),
        Flag(("--page-size",), "block_size", "int"),
        Flag(("--quantization",), "quantization", "text"),
        Flag(("--dtype",), "dtype", "text", "auto"),
        Flag(("--disable-cuda-graph",), "enforce_eager", "switch", False),
        _ignored("--host"), _ignored("--port"), _ignored("--served-model-name"), _ignored("--tokenizer-path"),
        Flag(("--max-total-tokens",), "max_total_tokens", "tokens"),
        _ignored("--max-prefill-tokens"), _ignored("--schedule-policy"),
        _ignored("--attention-backend"), _ignored("--log-level"), _ignored("--api-key"), _ignored("--load-format"),
        _ignored("--revision"), _ignored("--random-seed"), _ignored("--reasoning-parser"),
        _ignored("--tool-call-parser"), _ignored("--chat-template"),
        Flag(("--cuda-graph-max-bs",), "cuda_graph_max_bs", "int"),
        _ignored("--speculative-algorithm"), _ignored("--speculative-draft-model-path"),
        _ignored("--nnodes"), _ignored("--node-rank"), _ignored("--dist-init-addr"), _ignored("--ep-size"),
        _ignored("--trust-remote-code", switch=True), _ignored("--disable-radix-cache", switch=True),
        _ignored("--enable-dp-attention", switch=True), _ignored("--enable-torch-compile", switch=True),
        _ignored("--enable-metrics", switch=True),
    ),
    "trtllm": (
        Flag(("--tensor_parallel_size", "--tp_size"), "tensor_parallel", "int", 1),
        Flag(("--pipeline_parallel_size", "--pp_size"), "pipeline_parallel", "int", 1),
        Flag(("--max_batch_size",), "max_sequences", "int", 2048),
        Flag(("--max_num_tokens",), "batched_tokens", "int", 8192),
        Flag(("--max_seq_len",), "context", "int"),
        Flag(("--free_gpu_memory_fraction", "--kv_cache_free_gpu_memory_fraction"), "memory_fraction",
             "fraction", 0.9),
        _ignored("--host"), _ignored("--port"), _ignored("--tokenizer"), _ignored("--custom_tokenizer"),
        Flag(("--backend",), "backend", "text", "pytorch"), _ignored("--log_level"), _ignored("--max_beam_width"),
        _ignored("--context_parallel_size", "--cp_size"), _ignored("--moe_expert_parallel_size", "--ep_size"),
        _ignored("--moe_cluster_parallel_size", "--cluster_size"), _ignored("--gpus_per_node"),
        _ignored("--num_postprocess_workers"), _ignored("--revision"),
        _ignored("--config", "--extra_llm_api_options"), _ignored("--reasoning_parser"), _ignored("--tool_parser"),
        _ignored("--metadata_server_config_file"), _ignored("--server_role"), _ignored("--otlp_traces_endpoint"),
        _ignored("--disagg_cluster_uri"), _ignored("--media_io_kwargs"), _ignored("--chat_template"),
        _ignored("--custom_module_dirs"), _ignored("--trust_remote_code", switch=True),
        _ignored("--fail_fast_on_attention_window_too_large", switch=True),
        _ignored("--enable_chunked_prefill", switch=True),
    ),
    "llama.cpp": (
        Flag(("-m", "--model"), "model"),
        Flag(("-hf", "-hfr", "--hf-repo"), "model"),
        Flag(("-c", "--ctx-size"), "context", "int", 0),
        Flag(("-np", "--parallel"), "max_sequences", "int", -1),
        Flag(("-ngl", "--gpu-layers", "--n-gpu-layers"), "gpu_layers", "text", -1),
        Flag(("-ctk", "--cache-type-k"), "kv_cache_k", "text", "f16"),
        Flag(("-ctv", "--cache-type-v"), "kv_cache_v", "text", "f16"),
        Flag(("-ub", "--ubatch-size"), "batched_tokens", "int", 512),
        Flag(("--n-cpu-moe", "-ncmoe"), "cpu_moe_layers", "int", 0),
        Flag(("--cpu-moe", "-cmoe"), "cpu_moe_all", "switch", False),
        Flag(("-ts", "--tensor-split"), "tensor_split", "split"),
        Flag(("-sm", "--split-mode"), "split_mode", "text", "layer"),
        Flag(("-nkvo", "--no-kv-offload"), "kv_on_host", "switch", False),
        _ignored("-b", "--batch-size"), _ignored("-fa", "--flash-attn"), _ignored("--host"), _ignored("--port"),
        _ignored("-t", "--threads"), _ignored("-tb", "--threads-batch"), _ignored("-a", "--alias"),
        _ignored("--api-key"), _ignored("-mg", "--main-gpu"), _ignored("-dev", "--device"),
        _ignored("-n", "--predict", "--n-predict"), _ignored("--temp"), _ignored("--top-k"), _ignored("--top-p"),
        _ignored("--min-p"), _ignored("-ot", "--override-tensor"), _ignored("-fit", "--fit"),
        _ignored("--chat-template"), _ignored("-mm", "--mmproj"), _ignored("--numa"), _ignored("-s", "--seed"),
        _ignored("--mlock", switch=True), _ignored("--mmap", switch=True), _ignored("--no-mmap", switch=True),
        _ignored("--jinja", switch=True), _ignored("-cb", "--cont-batching", switch=True),
        _ignored("-kvu", "--kv-unified", switch=True), _ignored("--metrics", switch=True),
        _ignored("--no-webui", switch=True),
    ),
}

SOURCES: dict[str, str] = {
    "vllm": "vllm-project/vllm@99d7eb5d6a51 vllm/engine/arg_utils.py",
    "sglang": "sgl-project/sglang@001067fffe33 python/sglang/srt/server_args.py",
    "trtllm": "NVIDIA/TensorRT-LLM@00209af149e7 tensorrt_llm/commands/serve.py",
    "llama.cpp": "ggml-org/llama.cpp@145b6280d6aa common/arg.cpp",
}


def lookup(engine: str) -> dict[str, Flag]:
    """Every spelling of ``engine``'s flags -> its ``Flag``.

    Raises
    ------
    ValueError
        Naming the known engines when ``engine`` is not one of them.
    """
    if engine not in ENGINE_FLAGS:
        raise ValueError(f"engine: unknown {engine!r}; known: {', '.join(ENGINE_FLAGS)}")
    return {name: flag for flag in ENGINE_FLAGS[engine] for name in flag.names}
