"""Fuzz the command line in-process: mutated valid command lines through ``gpusizer.cli.main``.

    PYTHONPATH=src GPUSIZER_CACHE_DIR= python tools/fuzz_cli.py --runs 5000 --seed 14

Each run takes a valid command line and applies one to three mutations (a bad, huge or empty value,
an unknown id, an odd flag, a path to a missing, directory, FIFO, symlink-loop, unreadable or
oversize file, a hostile GGUF header, ``/dev/full`` as ``-o``). Repo ids resolve in a Hugging Face
cache made in the temporary folder (``HF_HUB_CACHE``): one config, and one beside a truncated
safetensors. A run passes when nothing but ``SystemExit`` escapes and the exit status is 0, 1 or 2.
The script prints the number of runs and of failures (tracebacks) and exits 1 if there was any.
``tests/test_cli_fuzz.py`` runs a shorter, seeded series.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import shutil
import sys
import tempfile
import traceback
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path

BASES = [
    ["fit", "llama-3.1-8b", "h100", "--context", "8k", "--concurrency", "4"],
    ["fit", "llama-3.1-70b", "h200", "--weights", "fp8", "--kv-cache", "fp8", "--gpus", "2", "--json"],
    ["fit", "qwen3-30b-a3b", "rtx-4090", "--engine", "llama.cpp", "--weights", "q4_k_m", "--prompt", "2k"],
    ["fit", "llama-3.1-8b", "h100", "--calibration", "{calibration}"],
    ["fit", "{config}", "l40s", "--layout", "tp", "--json"],
    ["fit", "{gguf}", "rtx-4090", "--engine", "llama.cpp", "--offload", "1", "--json"],
    ["fit", "tiny-org/tiny-llama", "h100", "--context", "4k"],
    ["fit", "tiny-org/broken", "h100"], ["fit", "tiny-org/not-cached@main", "h100"],
    ["gpus"], ["models", "--json"],
    ["layouts", "llama-3.1-70b", "h100", "--gpus", "8", "--weights", "fp8"],
    ["layouts", "llama-3.1-8b", "rtx-4090", "--gpus", "2", "--objective", "throughput", "--json"],
    ["sweep", "--models", "llama-3.1-8b", "--gpus", "h100,l4", "--context", "4k,8k", "--concurrency", "1,8"],
    ["sweep", "--models", "qwen3-32b", "--gpus", "h100", "--weights", "fp8,default", "--fits", "-o", "{out}.csv"],
    ["shortlist", "llama-3.1-8b", "--rate", "1", "--ttft-p95", "1s", "--gpus", "h100,l4", "--max-gpus", "1",
     "--simulate", "0"],
    ["throughput", "llama-3.1-8b", "h100", "--prompt", "1k", "--output", "256", "--json"],
    ["calibrate", "{measurements}", "--json"],
    ["calibrate", "{vllm}", "--model", "llama-3.1-8b", "--gpu", "h100", "-o", "{out}.toml"],
]

BAD_VALUES = ["", " ", "-1", "0", "1.5", "1e999", "nan", "inf", "-inf", "99999999999999999999", "1024M", "16M",
              "17M", "abc", "ü", "a\x00b", ",", ",,", "all", "default", "x" * 300, "h1000", "llama-3.1-7b",
              "tp2xpp2", "tp0", "tp8+ep8", "1,2,4,8", "=", "h100=", "h100=-2", "0.95", "2", "32k", "577"]
ODD_FLAGS = ["--", "-", "--json", "--csv", "--bogus", "-o", "--gpus", "--context", "--allow-beyond-max-context",
             "--fits", "--format", "--help", "-h"]


def make_files(folder: Path) -> dict[str, str]:
    """Files the mutations point at, made in ``folder``: good inputs and every kind of bad path."""
    bench = Path(__file__).resolve().parents[1] / "tests" / "data" / "bench"
    for name in ("measurements.csv", "vllm_c1.json"):  # copies: a mutation may write -o over them
        shutil.copyfile(bench / name, folder / name)
    files = {
        "measurements": str(folder / "measurements.csv"),
        "vllm": str(folder / "vllm_c1.json"),
        "missing": str(folder / "missing.csv"),
        "dir": str(folder),
        "loop": str(folder / "loop"),
        "unreadable": str(folder / "unreadable.csv"),
        "oversize": str(folder / "oversize.csv"),
        "empty": str(folder / "empty.json"),
        "deep": str(folder / "deep.json"),
        "out": str(folder / "out"),
        "fifo": str(folder / "fifo"),
    }
    os.symlink("loop", files["loop"])
    Path(files["unreadable"]).write_text("id,model\n")
    os.chmod(files["unreadable"], 0)
    with open(files["oversize"], "wb") as handle:  # sparse: no disk used
        handle.truncate(65 * 2**20)
    Path(files["empty"]).write_text("")
    Path(files["deep"]).write_text("[" * 100_000 + "]" * 100_000)
    config = folder / "model"
    config.mkdir()
    (config / "config.json").write_text(
        '{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, '
        '"intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32, '
        '"num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072, '
        '"torch_dtype": "bfloat16"}'
    )
    files["config"] = str(config)
    files.update(_model_files(folder, config / "config.json"))
    calibration = folder / "calibration.toml"
    files["calibration"] = str(calibration)
    if hasattr(os, "mkfifo"):
        os.mkfifo(files["fifo"])
    return files


def _model_files(folder: Path, config: Path) -> dict[str, str]:
    """A tiny GGUF (written with llama.cpp's gguf package when it is installed; else the hostile one), a GGUF
    header declaring 2**60 tensors, and a Hugging Face cache holding ``config`` (``tiny-org/tiny-llama``) and
    ``config`` beside a truncated safetensors file (``tiny-org/broken``)."""
    hostile = folder / "hostile.gguf"
    hostile.write_bytes(b"GGUF" + (3).to_bytes(4, "little") + (2**60).to_bytes(8, "little") + bytes(8))
    files = {"hostile_gguf": str(hostile), "gguf": str(hostile)}
    try:
        import gguf
        import numpy as np
    except ImportError:
        gguf = None
    if gguf is not None:
        path, writer = folder / "tiny.gguf", gguf.GGUFWriter(str(folder / "tiny.gguf"), "llama")
        for key, value in (("context_length", 4096), ("block_count", 1), ("embedding_length", 64),
                           ("feed_forward_length", 128), ("head_count", 4), ("head_count_kv", 2)):
            getattr(writer, f"add_{key}")(value)
        shapes = {"token_embd.weight": (32, 64), "output.weight": (32, 64), "output_norm.weight": (64,),
                  "blk.0.attn_q.weight": (64, 64), "blk.0.attn_k.weight": (32, 64), "blk.0.attn_v.weight": (32, 64),
                  "blk.0.attn_output.weight": (64, 64), "blk.0.ffn_gate.weight": (128, 64),
                  "blk.0.ffn_up.weight": (128, 64), "blk.0.ffn_down.weight": (64, 128),
                  "blk.0.attn_norm.weight": (64,), "blk.0.ffn_norm.weight": (64,)}
        for name, shape in shapes.items():
            writer.add_tensor(name, np.ones(shape, dtype=np.float32))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        files["gguf"] = str(path)
    for name, broken in (("tiny-llama", False), ("broken", True)):
        repo = folder / "hub" / f"models--tiny-org--{name}"
        snapshot = repo / "snapshots" / ("0" * 40)
        snapshot.mkdir(parents=True)
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text("0" * 40)
        shutil.copyfile(config, snapshot / "config.json")
        if broken:  # a header length of 2**40 in a 9-byte file
            (snapshot / "model.safetensors").write_bytes((2**40).to_bytes(8, "little") + b"{")
    os.environ["HF_HUB_CACHE"] = str(folder / "hub")
    return files


def paths(files: dict[str, str]) -> list[str]:
    """The bad and odd paths a mutation may use."""
    keys = ("missing", "dir", "loop", "unreadable", "oversize", "empty", "deep", "fifo", "config", "vllm", "gguf",
            "hostile_gguf")
    return [files[k] for k in keys] + ["/dev/full", "/dev/null", "/dev/zero", "."]


def arguments(rng: random.Random, files: dict[str, str]) -> list[str]:
    """One mutated command line."""
    argv = [item.format(**files) for item in rng.choice(BASES)]
    bad_paths = paths(files)
    for _ in range(rng.randint(1, 3)):
        kind = rng.random()
        where = rng.randrange(1, len(argv)) if len(argv) > 1 else 1
        if kind < 0.4 and len(argv) > 1:
            argv[where] = rng.choice(BAD_VALUES)
        elif kind < 0.6:
            value = rng.choice(bad_paths)
            if rng.random() < 0.3:
                argv += [rng.choice(["-o", "--calibration", "--mapping", "--base"]), value]
            elif len(argv) > 1:
                argv[where] = value
        elif kind < 0.75:
            argv.insert(where, rng.choice(ODD_FLAGS))
        elif kind < 0.85 and len(argv) > 2:
            del argv[where]
        else:
            argv += [rng.choice(ODD_FLAGS), rng.choice(BAD_VALUES + bad_paths)]
    return argv


def run_one(main: Callable[[list[str]], int], argv: list[str]) -> tuple[object, str | None]:
    """The exit status of ``argv``, and ``None`` if it is 0, 1 or 2 and nothing but ``SystemExit``
    escaped, else why."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            status = main(argv)
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else 0 if exit_.code is None else 2
    except BaseException:  # the failure this fuzzer looks for
        return "traceback", traceback.format_exc()
    if status not in (0, 1, 2):
        return status, f"exit status {status!r}"
    return status, None


def fuzz(runs: int, seed: int) -> tuple[list[tuple[list[str], str]], Counter[object]]:
    """``runs`` seeded runs: the failures as (argv, traceback or reason), and the count of each status."""
    from gpusizer.cli import main

    rng = random.Random(seed)
    failures: list[tuple[list[str], str]] = []
    statuses: Counter[object] = Counter()
    home, cache = os.getcwd(), os.environ.get("HF_HUB_CACHE")
    with tempfile.TemporaryDirectory() as folder:
        files = make_files(Path(folder))
        os.chdir(folder)  # relative -o names land in the temporary folder
        try:
            _runs(main, rng, files, folder, runs, failures, statuses)
        finally:
            os.chdir(home)
            if cache is None:
                os.environ.pop("HF_HUB_CACHE", None)
            else:
                os.environ["HF_HUB_CACHE"] = cache
    return failures, statuses


def _runs(main: Callable[[list[str]], int], rng: random.Random, files: dict[str, str], folder: str, runs: int,
          failures: list[tuple[list[str], str]], statuses: Counter[object]) -> None:
    keep = set(os.listdir(folder))
    for _ in range(runs):
        argv = arguments(rng, files)
        status, problem = run_one(main, argv)
        statuses[status] += 1
        if problem is not None:
            failures.append((argv, problem))
        for name in os.listdir(folder):  # outputs of the run, so that the next starts alike
            if name not in keep and os.path.isfile(os.path.join(folder, name)):
                os.unlink(os.path.join(folder, name))


def _main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=14)
    args = parser.parse_args()
    failures, statuses = fuzz(args.runs, args.seed)
    for argv, problem in failures[:20]:
        sys.stderr.write(f"{argv!r}\n{problem}\n")
    sys.stdout.write(f"{args.runs} runs, seed {args.seed}: {len(failures)} tracebacks; exit statuses "
                     f"{dict(sorted(statuses.items(), key=str))}\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(_main())
