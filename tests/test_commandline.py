"""Engine command lines (gpusizer.commandline, gpusizer from-cmd): hand-derived parses per engine, the
startup figures against the library's own estimate and against public startup logs
(data/calibration/engine-memory-logs.csv through tools/engine_memory.py), and parse invariants."""

import json
import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_engine_logs import _tool  # tools/engine_memory.py, loaded as test_engine_logs loads it

import gpusizer
from gpusizer import catalog, engines
from gpusizer.cli import main
from gpusizer.commandline import ENGINE_FLAGS, parse, predict
from gpusizer.units import GiB

MiB = 2.0**20


# --- parses, derived by hand from each engine's flag table -----------------------------------------------

def test_vllm_parse_aliases_equals_underscores_defaults_and_unknowns():
    cmd = parse("vllm serve Qwen/Qwen3-8B -tp 2 --max-model-len=32k --gpu_memory_utilization 0.85 "
                "--kv-cache-dtype fp8 --port 8000 --foo 1 --enable-prefix-caching")
    assert cmd.engine == "vllm" and cmd.model == "Qwen/Qwen3-8B"
    # 32k is vLLM's human-readable 32,000 (lower-case k: decimal); --gpu_memory_utilization == --gpu-memory-utilization
    assert cmd.settings == {"tensor_parallel": 2, "context": 32000, "memory_fraction": 0.85, "kv_cache": "fp8"}
    assert cmd.defaults["pipeline_parallel"] == 1 and cmd.defaults["block_size"] == 16
    assert cmd.defaults["max_sequences"] is None  # derived from the GPU at startup
    assert cmd.ignored_flags == ("--port 8000", "--enable-prefix-caching")
    assert cmd.unknown_flags == ("--foo 1",)


def test_vllm_model_flag_and_python_module_form():
    cmd = parse(["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "meta-llama/Llama-3.1-8B",
                 "--max-num-seqs", "64", "--max-num-batched-tokens", "4K"])
    assert cmd.model == "meta-llama/Llama-3.1-8B"
    assert cmd.settings == {"max_sequences": 64, "batched_tokens": 4096}  # 4K: binary, 4 x 1024


def test_sglang_parse():
    cmd = parse("python -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 4 --mem-fraction-static=0.8 "
                "--context-length 32768 --max-running-requests 128 --kv-cache-dtype fp8_e4m3 "
                "--chunked-prefill-size 4096 --enable-dp-attention --host 0.0.0.0")
    assert (cmd.engine, cmd.model) == ("sglang", "Qwen/Qwen3-8B")
    assert cmd.settings == {"tensor_parallel": 4, "memory_fraction": 0.8, "context": 32768, "max_sequences": 128,
                            "kv_cache": "fp8_e4m3", "batched_tokens": 4096}
    assert cmd.ignored_flags == ("--enable-dp-attention", "--host 0.0.0.0")
    assert parse("sglang serve --model Qwen/Qwen3-8B --tensor-parallel-size 2").settings == {"tensor_parallel": 2}


def test_trtllm_parse():
    cmd = parse("trtllm-serve serve meta-llama/Llama-3.1-8B-Instruct --tp_size 2 --max_batch_size 64 "
                "--max_num_tokens 4096 --max_seq_len 8192 --kv_cache_free_gpu_memory_fraction 0.8 --backend pytorch")
    assert (cmd.engine, cmd.model) == ("trtllm", "meta-llama/Llama-3.1-8B-Instruct")
    assert cmd.settings == {"tensor_parallel": 2, "max_sequences": 64, "batched_tokens": 4096, "context": 8192,
                            "memory_fraction": 0.8, "backend": "pytorch"}
    assert cmd.ignored_flags == ()
    assert parse("trtllm-serve m").defaults["backend"] == "pytorch"  # serve.py: --backend default pytorch
    assert parse("trtllm-serve m --free_gpu_memory_fraction 0.7").settings == {"memory_fraction": 0.7}
    assert parse("trtllm-serve m").defaults["max_sequences"] == 2048  # BuildConfig.max_batch_size


def test_llama_cpp_parse():
    cmd = parse("CUDA_VISIBLE_DEVICES=0,1 ./build/bin/llama-server -m models/m-Q4_K_M.gguf -c 16384 -np 2 -ngl 99 "
                "-ctk q8_0 --cache-type-v q8_0 -b 2048 -ub 256 -fa on --n-cpu-moe 10 -ts 3,1 -sm layer --jinja")
    assert (cmd.engine, cmd.model) == ("llama.cpp", "models/m-Q4_K_M.gguf")
    assert cmd.settings == {"context": 16384, "max_sequences": 2, "gpu_layers": "99", "kv_cache_k": "q8_0",
                            "kv_cache_v": "q8_0", "batched_tokens": 256, "cpu_moe_layers": 10,
                            "tensor_split": (3.0, 1.0), "split_mode": "layer"}
    assert cmd.ignored_flags == ("-b 2048", "-fa on", "--jinja")
    assert cmd.environment == ("CUDA_VISIBLE_DEVICES=0,1",)
    assert parse("llama-server -m x.gguf").defaults["max_sequences"] == -1  # auto: 4 slots


@pytest.mark.parametrize("line, message", [
    ("vllm serve m --tensor-parallel-size x", "--tensor-parallel-size: 'x' is not a whole number"),
    ("vllm serve m --max-model-len 20000000", "--max-model-len: 20000000 is out of bounds"),
    ("vllm serve m --gpu-memory-utilization 1.5", "--gpu-memory-utilization: '1.5' is out of bounds"),
    ("vllm serve m --max-model-len", "--max-model-len: expects a value"),
    ("vllm serve m --enforce-eager=1", "--enforce-eager: takes no value"),
    ("vllm serve --port 8000", "model: the vllm command names no model"),
    ("ollama run llama3", "is not an engine command line"),
    ("llama-server -m x.gguf -ts a,b", "-ts: 'a,b' is not a list of proportions"),
    ("trtllm-serve m --tp_size 0", "--tp_size: 0 is out of bounds"),
])
def test_bad_values_name_the_flag(line, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(".", r"\.")):
        parse(line)


def test_cli_bad_value_is_one_line_exit_2(capsys):
    assert main(["from-cmd", "--gpu", "h100", "--", "vllm", "serve", "llama-3.1-8b", "--tensor-parallel-size",
                 "x"]) == 2
    err = capsys.readouterr().err
    assert err == "gpusizer: error: --tensor-parallel-size: 'x' is not a whole number\n"


def test_cli_json_lists_unknown_and_ignored_flags(capsys):
    assert main(["from-cmd", "--gpu", "h100", "--json", "--", "vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct",
                 "--max-model-len", "8192", "--port", "8000", "--made-up", "3"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["unknown_flags"] == ["--made-up 3"] and data["ignored_flags"] == ["--port 8000"]
    assert data["model"] == "llama-3.1-8b" and data["startup"]["kv_cache_tokens"] > 0
    assert data["log_lines"][1].startswith("GPU KV cache size: ")


def test_cli_text_names_every_flag_not_read(capsys):
    assert main(["from-cmd", "--gpu", "rtx-4090", "llama-server -m llama-3.1-8b -c 8192 --mystery -fa on"]) == 0
    out = capsys.readouterr().out
    assert "unknown flags (not read): --mystery" in out and "-fa on" in out and "KV buffer size" in out


# --- the mapping reproduces the library's own estimate ----------------------------------------------------

def test_vllm_prediction_is_the_estimate_of_the_mapped_inputs():
    cmd = parse("vllm serve meta-llama/Llama-3.1-8B-Instruct -tp 2 --max-model-len 32000 "
                "--gpu-memory-utilization 0.85 --kv-cache-dtype fp8")
    p = predict(cmd, "h100")
    # H100 SXM (79.22 GiB >= 70, not an A100): vLLM serve's 1024 sequences and 8192 batched tokens
    profile = engines.engine("vllm").model_copy(update={"memory_fraction": 0.85, "max_sequences": 1024,
                                                        "batched_tokens": 8192, "block_size": 16})
    e = gpusizer.estimate("llama-3.1-8b", "h100", gpus=2, layout="tp2", engine=profile, context=32000,
                          kv_cache="fp8")
    assert p.startup["kv_cache_bytes"] == pytest.approx(float(e.kv_pool_bytes))
    assert p.startup["kv_cache_tokens"] == int(e.kv_pool_tokens)
    assert p.lines[1] == f"GPU KV cache size: {int(e.kv_pool_tokens):,} tokens"
    assert p.lines[2].startswith("Maximum concurrency for 32,000 tokens per request: ")
    assert p.speed["decode_expected"] == pytest.approx(float(e.decode.expected_tokens_per_second))


def test_vllm_small_gpu_defaults():
    # RTX 4090 (24 GiB < 70 GiB): vLLM serve defaults to 256 sequences and 2048 batched tokens
    p = predict(parse("vllm serve llama-3.1-8b --max-model-len 4096"), "rtx-4090")
    assert p.inputs["engine"].max_sequences == 256 and p.inputs["engine"].batched_tokens == 2048


def test_llama_cpp_kv_buffer_by_hand():
    # Llama-3.1-8B: 32 layers x 8 KV heads x 128 dims x 2 (K and V) x 1 B (q8_0 sized as int8) = 64 KiB per
    # token; n_ctx 32768 cells (4 slots of 8192) -> 32768 x 65536 B = 2048 MiB
    p = predict(parse("llama-server -m Llama-3.1-8B-Instruct-Q4_K_M.gguf -c 32768 -np 4 -ctk q8_0 -ctv q8_0"),
                "rtx-4090")
    assert p.estimate.weights == "q4_k_m"  # from the file name
    assert (p.inputs["context"], p.inputs["concurrency"]) == (8192, 4)
    assert p.startup["kv_cache_bytes"] == 2048 * MiB
    assert p.lines == ("llama_context: n_ctx = 32768, n_seq_max = 4",
                       "llama_kv_cache: KV buffer size = 2048.00 MiB (per GPU)")


def test_llama_cpp_auto_slots_and_model_context():
    # -c absent (0: the model's 131,072) and -np absent (-1: auto, 4 slots): 4 x 32,768
    p = predict(parse("llama-server -m llama-3.1-8b"), "h100")
    assert (p.inputs["context"], p.inputs["concurrency"]) == (32768, 4)


def test_llama_cpp_partial_offload_is_sized_with_the_offload():
    p = predict(parse("llama-server -m llama-3.1-70b -c 8192 -np 1 -ngl 40"), "h100")
    assert p.estimate.offload is not None and p.estimate.offload.gpu_layers == 40
    assert p.startup["kv_cache_bytes"] + p.startup["host_kv_cache_bytes"] == pytest.approx(
        float(p.estimate.memory.kv_cache_bytes))
    assert p.startup["starts"] == bool(p.estimate.offload.fits)


def test_sglang_and_trtllm_lines():
    p = predict(parse("python -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 2 --context-length 32768"),
                "h100")
    assert p.lines[0].startswith(f"KV Cache is allocated. #tokens: {p.startup['kv_cache_tokens']}, K size: ")
    # unset: SGLang's default on an H100 at TP2, (81,121.28 - 14,032) / 81,121.28 MiB with a reserve of
    # 512 + 1.5 x 8192 + 2/8 x 1024 + 2 x 256 + 8 x 58 MiB (engine_defaults.sglang_mem_fraction_static)
    assert p.inputs["engine"].memory_fraction == 0.827 and p.estimate.memory_fraction == 0.827
    t = predict(parse("trtllm-serve meta-llama/Llama-3.1-8B-Instruct --max_seq_len 8192"), "h100")
    assert t.lines[0].endswith(f"paged KV cache ({t.startup['kv_cache_tokens']:,}).")
    assert t.inputs["engine"].max_sequences == 2048


def test_unsized_kv_type_is_refused_naming_the_flag():
    with pytest.raises(ValueError, match="--cache-type-k: 'q4_0'"):
        predict(parse("llama-server -m llama-3.1-8b -ctk q4_0"), "h100")
    with pytest.raises(ValueError, match="--kv-cache-dtype: 'nvfp4'"):
        predict(parse("python -m sglang.launch_server --model-path llama-3.1-8b --kv-cache-dtype nvfp4"), "h100")


def test_hugging_face_ids_find_the_catalogue_entry(monkeypatch, tmp_path):
    from gpusizer.commandline import resolve_model
    from gpusizer.commands.common import CommandError

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))  # an empty cache: a repo id no entry matches is looked up

    assert resolve_model("Qwen/Qwen3-235B-A22B-FP8")[0].id == "qwen3-235b-a22b"
    assert resolve_model("Qwen/Qwen3-235B-A22B-FP8")[1] == "fp8"
    assert resolve_model("meta-llama/Llama-3.1-8B-Instruct") == (catalog.model("llama-3.1-8b"), None)
    with pytest.raises(CommandError, match="nobody/no-such-model is not in the Hugging Face cache"):
        resolve_model("nobody/no-such-model")  # there last, and named as absent (exit status 1)
    with pytest.raises(KeyError):
        resolve_model("no-such-model")


# --- against public startup logs: the command lines of tools/engine_memory.py's cases ----------------------

#: (case name, engine, the case's command line, profile fields of the engine version the line does not say)
LOG_COMMANDS = [
    ("Llama-3.1-8B, RTX 3090, 20k", "vllm", "rtx-3090",
     "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 20000 --gpu-memory-utilization 0.90 "
     "--max-num-batched-tokens 20000 --max-num-seqs 256", "V0"),
    ("Llama-3.1-8B, RTX 3090, 29k", "vllm", "rtx-3090",
     "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 29000 --max-num-batched-tokens 29000", "V0"),
    ("Llama-3.1-70B, 8 x H200 TP8", "vllm", "h200-sxm",
     "vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 8 --max-model-len 131072 --gpu-memory-utilization 0.95 "
     "--max-num-batched-tokens 2048 --max-num-seqs 256", "V0"),
    ("Qwen3-235B-A22B-FP8, 4 x H100 TP4", "vllm", "h100-sxm",
     "vllm serve Qwen/Qwen3-235B-A22B-FP8 --tensor-parallel-size 4 --max-model-len 40960", "SORT"),
    ("Qwen3-235B-A22B-FP8, 4 x H100 TP4", "sglang", "h100-sxm",
     "python -m sglang.launch_server --model-path Qwen/Qwen3-235B-A22B-FP8 --tp 4 --mem-fraction-static 0.93 "
     "--context-length 40960", None),
    ("Qwen3-0.6B, H100, default fraction", "sglang", "h100-sxm",
     "python -m sglang.launch_server --model-path Qwen/Qwen3-0.6B --context-length 40960", None),
    ("Llama-2-7B, A10, fraction 0.95", "trtllm-engine", "a10",
     "trtllm-serve meta-llama/Llama-2-7b-hf --max_seq_len 6144 --kv_cache_free_gpu_memory_fraction 0.95 "
     "--max_batch_size 25 --max_num_tokens 51200 --backend tensorrt", None),
    ("gpt-oss-120b, 2 x 131072 cells", "llama.cpp", "h200-sxm",
     "llama-server -m gpt-oss-120b -c 262144 -np 2 -ub 1024", None),
]


@pytest.mark.parametrize("name, engine, gpu, line, version", LOG_COMMANDS,
                         ids=[f"{c[0]} ({c[1]})" for c in LOG_COMMANDS])
def test_startup_logs_reproduce_the_library(name, engine, gpu, line, version):
    tool = _tool()
    case = next(c for c in tool.CASES if c.name == name and c.engine == engine)
    update = {"vllm": tool._BEFORE_V021}.get(engine, {})
    update = {**update, **{"V0": tool._V0, "SORT": tool._SORT_SAMPLER, None: {}}[version]}
    base = engines.engine(engine).model_copy(update=update) if update else None
    p = predict(parse(line), gpu, base=base)
    library = tool.predict(case)
    published = tool._published(case)
    for figure in ("kv_cache_tokens", "kv_cache_memory", "kv_cache_bytes"):
        if figure in published:
            ours = p.startup["kv_cache_bytes" if figure != "kv_cache_tokens" else "kv_cache_tokens"]
            want = library[figure]
            # the same inputs as the library's case: the same figure (vLLM/SGLang/TRT-LLM tokens as logged)
            assert ours == pytest.approx(want, rel=1e-9, abs=1), figure
    if "starts" in published:
        assert p.startup["starts"] == bool(published["starts"])


# --- invariants ---------------------------------------------------------------------------------------------

_VLLM = [("--tensor-parallel-size", "2"), ("--max-model-len", "16384"), ("--gpu-memory-utilization", "0.8"),
         ("--kv-cache-dtype", "fp8"), ("--max-num-seqs", "128"), ("--port", "8000"), ("--mystery", "7")]
_LLAMA = [("-c", "8192"), ("-np", "2"), ("-ngl", "99"), ("-ctk", "q8_0"), ("-ub", "256"), ("-t", "8"),
          ("--n-cpu-moe", "3")]


@settings(max_examples=40, deadline=None)
@given(st.permutations(range(len(_VLLM))), st.lists(st.booleans(), min_size=len(_VLLM), max_size=len(_VLLM)))
def test_flag_order_and_equals_form_do_not_change_a_vllm_parse(order, equals):
    def line(indices, use):
        words = ["vllm", "serve", "m"]
        for i, eq in zip(indices, use, strict=True):
            flag, value = _VLLM[i]
            words += [f"{flag}={value}"] if eq else [flag, value]
        return words

    plain = parse(line(range(len(_VLLM)), [False] * len(_VLLM)))
    other = parse(line(order, equals))
    assert other.settings == plain.settings and other.defaults == plain.defaults
    assert sorted(f.replace("=", " ") for f in other.unknown_flags + other.ignored_flags) == sorted(
        plain.unknown_flags + plain.ignored_flags)


@settings(max_examples=30, deadline=None)
@given(st.permutations(range(len(_LLAMA))))
def test_flag_order_does_not_change_a_llama_cpp_parse(order):
    first = parse(["llama-server", "-m", "x.gguf", *[w for i in range(len(_LLAMA)) for w in _LLAMA[i]]])
    other = parse(["llama-server", *[w for i in order for w in _LLAMA[i]], "-m", "x.gguf"])
    assert other.settings == first.settings and set(other.ignored_flags) == set(first.ignored_flags)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(sorted(ENGINE_FLAGS)), st.data())
def test_every_alias_of_a_flag_sets_the_same_setting(engine, data):
    flag = data.draw(st.sampled_from([f for f in ENGINE_FLAGS[engine] if f.setting not in (None, "model")]))
    value = {"int": "4", "tokens": "4096", "fraction": "0.5", "number": "2", "split": "1,1", "text": "fp8",
             "switch": None}[flag.kind]
    program = {"vllm": ["vllm", "serve", "m"], "sglang": ["python", "-m", "sglang.launch_server", "--model", "m"],
               "trtllm": ["trtllm-serve", "m"], "llama.cpp": ["llama-server", "-m", "m"]}[engine]
    parses = [parse([*program, name, *([] if value is None else [value])]).settings for name in flag.names]
    assert all(p == parses[0] for p in parses) and flag.setting in parses[0]


def test_shell_string_and_argv_list_parse_alike():
    line = "vllm serve 'my model' --max-model-len 8192 \\\n  --kv-cache-dtype fp8"
    assert parse(line) == parse(shlex.split(line.replace("\\\n", " ")))
    assert parse(line).model == "my model"


def test_pool_tokens_are_per_gib_of_pool():
    # the vLLM pool's tokens grow with --gpu-memory-utilization (more budget, larger pool)
    small = predict(parse("vllm serve llama-3.1-8b --max-model-len 8192 --gpu-memory-utilization 0.5"), "h100")
    large = predict(parse("vllm serve llama-3.1-8b --max-model-len 8192 --gpu-memory-utilization 0.9"), "h100")
    assert large.startup["kv_cache_tokens"] > small.startup["kv_cache_tokens"]
    # 0.4 of 79.22 GiB more budget, at 128 KiB per bf16 token (32 x 8 x 128 x 2 x 2 B)
    extra = (large.startup["kv_cache_bytes"] - small.startup["kv_cache_bytes"]) / GiB
    assert extra == pytest.approx(0.4 * 79.22, rel=1e-3)


def test_human_readable_tokens_and_hf_quant_tags():
    # vLLM human_readable_int: lower case decimal, upper case binary
    assert parse("vllm serve m --max-model-len 25.6k").settings["context"] == 25600
    assert parse("vllm serve m --max-model-len 32K").settings["context"] == 32768
    with pytest.raises(ValueError, match=r"--max-model-len: '1\.5' is not a whole number"):
        parse("vllm serve m --max-model-len 1.5")
    from gpusizer.commandline import resolve_model

    assert resolve_model("unsloth/Qwen3-8B-GGUF:Q4_K_M") == (catalog.model("qwen3-8b"), "q4_k_m")


def test_sglang_max_total_tokens_caps_the_pool():
    free = predict(parse("python -m sglang.launch_server --model-path qwen3-8b --context-length 8192"), "h100")
    capped = predict(parse("python -m sglang.launch_server --model-path qwen3-8b --context-length 8192 "
                           "--max-total-tokens 100000"), "h100")
    assert free.startup["kv_cache_tokens"] > 100_000 and capped.startup["kv_cache_tokens"] == 100_000
    # Qwen3-8B bf16: 36 layers x 8 KV heads x 128 x 2 x 2 B = 144 KiB per token; 100,000 tokens = 13.73 GiB
    assert capped.startup["kv_cache_bytes"] == pytest.approx(100_000 * 36 * 8 * 128 * 2 * 2, rel=1e-3)
    assert capped.lines[0].startswith("KV Cache is allocated. #tokens: 100000, K size: 6.87 GB")


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(sorted(ENGINE_FLAGS)), st.data())
def test_equals_form_is_the_spaced_form(engine, data):
    flag = data.draw(st.sampled_from([f for f in ENGINE_FLAGS[engine] if f.kind != "switch"]))
    name = data.draw(st.sampled_from(flag.names))
    value = {"int": "4", "tokens": "4096", "fraction": "0.5", "number": "2", "split": "1,1", "text": "fp8"}[flag.kind]
    program = {"vllm": ["vllm", "serve", "m"], "sglang": ["python", "-m", "sglang.launch_server", "--model", "m"],
               "trtllm": ["trtllm-serve", "m"], "llama.cpp": ["llama-server", "-m", "m"]}[engine]
    spaced, joined = parse([*program, name, value]), parse([*program, f"{name}={value}"])
    assert (spaced.model, spaced.settings, spaced.defaults) == (joined.model, joined.settings, joined.defaults)
    assert [f.replace("=", " ") for f in joined.ignored_flags] == list(spaced.ignored_flags)


def test_llama_cpp_gpus_from_tensor_split_and_split_mode():
    # -ts entries above 0 are the GPUs; -sm tensor (and the older -sm row) split like tensor parallelism, -sm none
    # uses one GPU
    def layout(flags, gpus=None):
        p = predict(parse(f"llama-server -m llama-3.1-8b -c 4096 -np 1 {flags}"), "rtx-4090", gpus=gpus)
        return p.inputs["layout"]

    assert layout("-ts 1,1") == "layer2" and layout("-ts 3,1 -sm row") == "tp2" and layout("-sm tensor", 4) == "tp4"
    assert layout("-sm none", gpus=4) == "layer1" and layout("", gpus=2) == "layer2"


def test_a_system_id_and_data_parallel_replicas(capsys):
    assert main(["from-cmd", "--gpu", "hgx-h200-8x", "--json", "--", "vllm", "serve", "llama-3.1-70b", "-tp", "4",
                 "-dp", "2", "--max-model-len", "32768"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["gpus"], data["layout"]) == (8, "tp4xdp2")
    # vLLM logs one data-parallel replica's pool: half the layout's tokens
    e = gpusizer.estimate("llama-3.1-70b", "hgx-h200-8x", gpus=8, layout="tp4xdp2", context=32768,
                          engine=engines.engine("vllm").model_copy(update={"max_sequences": 1024}))
    assert data["startup"]["kv_cache_tokens"] == int(e.kv_pool_tokens) // 2
