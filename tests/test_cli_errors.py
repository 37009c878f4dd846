"""Issue 14 at the command line: one-line errors with status 2 (a bad value) or 1 (the environment),
never a traceback; limits; atomic outputs that never overwrite an input; strict JSON."""

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpusizer import checks, datafiles, readers
from gpusizer.cli import main
from gpusizer.commands import common

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "tests" / "data" / "bench"
ROOT_USER = hasattr(os, "geteuid") and os.geteuid() == 0


def run(argv, capsys):
    """Exit status and stderr of ``argv``, SystemExit (argparse) included."""
    try:
        status = main(argv)
    except SystemExit as exit_:
        status = exit_.code
    captured = capsys.readouterr()
    return status, captured.err


def assert_error(argv, capsys, status, *words):
    got, err = run(argv, capsys)
    assert got == status, (argv, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpusizer: error: "), err
    for word in words:
        assert word in lines[0], (word, lines[0])


@pytest.fixture()
def bad(tmp_path):
    """Paths of every kind of bad input file."""
    (tmp_path / "dir").mkdir()
    os.symlink("loop", tmp_path / "loop")
    with open(tmp_path / "oversize.csv", "wb") as handle:
        handle.truncate(datafiles.MAX_FILE_BYTES + 1)  # sparse: no disk used
    unreadable = tmp_path / "unreadable.csv"
    unreadable.write_text("id\n")
    unreadable.chmod(0)
    os.mkfifo(tmp_path / "fifo")
    return tmp_path


# --- the tracebacks of issue 14, each a regression test -------------------------------------------


def test_empty_model_name(capsys):
    assert_error(["fit", "", "h100"], capsys, 2, "MODEL", "empty")


@pytest.mark.parametrize("folder", [".", "empty"])
def test_folder_without_config(folder, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    assert_error(["fit", folder, "h100"], capsys, 1, "MODEL", "config.json")


def test_model_name_over_255_characters(capsys):
    assert_error(["fit", "x" * 300, "h100"], capsys, 2, "MODEL", "255")


def test_looping_and_unreadable_config(tmp_path, capsys):
    looping = tmp_path / "looping"
    looping.mkdir()
    os.symlink("config.json", looping / "config.json")
    assert_error(["fit", str(looping), "h100"], capsys, 1, "MODEL", "symbolic links")
    if not ROOT_USER:  # root reads a file of mode 000
        locked = tmp_path / "locked"
        locked.mkdir()
        (locked / "config.json").write_text("{}")
        (locked / "config.json").chmod(0)
        assert_error(["fit", str(locked), "h100"], capsys, 1, "MODEL", "ermission")


@pytest.mark.parametrize("flag", ["--calibration", "--mapping"])
@pytest.mark.parametrize(("kind", "words"), [("missing", "No such file"), ("dir", "directory"),
                                             ("loop", "symbolic links"), ("fifo", "not a regular file"),
                                             ("oversize.csv", "larger than")])
def test_bad_calibration_and_mapping(flag, kind, words, bad, capsys):
    path = str(bad / kind)
    argv = (["fit", "llama-3.1-8b", "h100", flag, path] if flag == "--calibration"
            else ["calibrate", str(BENCH / "measurements.csv"), flag, path])
    assert_error(argv, capsys, 1, flag, words)


def test_calibration_from_dev_zero_stops_at_the_cap(capsys):
    start = time.perf_counter()
    assert_error(["fit", "llama-3.1-8b", "h100", "--calibration", "/dev/zero"], capsys, 1, "--calibration",
                 "larger than")
    assert_error(["calibrate", "/dev/zero"], capsys, 1, "FILE", "larger than")
    assert time.perf_counter() - start < 10


@pytest.mark.parametrize("kind", ["missing", "dir", "loop", "fifo", "oversize.csv"])
def test_bad_measurement_files(kind, bad, capsys):
    assert_error(["calibrate", str(bad / kind)], capsys, 1, "FILE")


@pytest.mark.skipif(ROOT_USER, reason="root reads a file of mode 000")
def test_unreadable_measurement_file(bad, capsys):
    assert_error(["calibrate", str(bad / "unreadable.csv")], capsys, 1, "FILE", "ermission")


def test_sweep_weights_comma(capsys):
    assert_error(["sweep", "--weights", ","], capsys, 2, "--weights")


def test_calibrate_vllm_without_model_and_gpu(capsys):
    assert_error(["calibrate", str(BENCH / "vllm_c1.json")], capsys, 2, "--model", "--gpu")


def test_deeply_nested_json(tmp_path, capsys):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert_error(["calibrate", str(deep)], capsys, 2, "nested too deeply")
    with pytest.raises(ValueError, match="nested too deeply"):
        readers.read_json(deep)


def test_shortlist_top_negative(capsys):
    assert_error(["shortlist", "llama-3.1-8b", "--rate", "1", "--ttft-p95", "1s", "--top", "-1"], capsys, 2,
                 "--top")


# --- outputs --------------------------------------------------------------------------------------

SMALL_SWEEP = ["sweep", "--models", "llama-3.1-8b", "--gpus", "h100", "--context", "4k,8k"]


def test_output_never_over_an_input(tmp_path, capsys):
    runs = tmp_path / "runs.csv"
    runs.write_bytes((BENCH / "measurements.csv").read_bytes())
    before = runs.read_bytes()
    assert_error(["calibrate", str(runs), "-o", str(runs)], capsys, 2, "-o", "input")
    assert runs.read_bytes() == before


def test_output_into_missing_folder_device_and_directory(tmp_path, capsys):
    assert_error([*SMALL_SWEEP, "-o", str(tmp_path / "no" / "grid.csv")], capsys, 1, "-o", "does not exist")
    assert_error([*SMALL_SWEEP, "-o", str(tmp_path)], capsys, 1, "-o", "directory")
    if Path("/dev/full").exists():
        assert_error([*SMALL_SWEEP, "-o", "/dev/full"], capsys, 1, "-o", "No space left")
    os.mkfifo(tmp_path / "fifo")
    assert_error([*SMALL_SWEEP, "-o", str(tmp_path / "fifo")], capsys, 1, "-o")


def test_parquet_without_pyarrow(tmp_path, capsys):
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        assert_error([*SMALL_SWEEP, "-o", str(tmp_path / "grid.parquet")], capsys, 1, "-o", "pyarrow")
    else:
        pytest.skip("pyarrow is installed")


def test_output_is_written_atomically(tmp_path, capsys):
    grid = tmp_path / "grid.csv"
    grid.write_text("old\n")
    assert main([*SMALL_SWEEP, "-o", str(grid)]) == 0
    assert grid.read_text().startswith("model,") and os.listdir(tmp_path) == ["grid.csv"]
    assert stat.S_IMODE(grid.stat().st_mode) & 0o044  # as open() makes it, not mkstemp's 0600

    def fail(path):
        Path(path).write_text("half")
        raise OSError(28, "No space left on device")

    with pytest.raises(common.CommandError, match="No space left"):
        common.write_atomic(grid, fail)
    assert grid.read_text().startswith("model,") and os.listdir(tmp_path) == ["grid.csv"]


def test_broken_pipe_is_quiet():
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "GPUSIZER_CACHE_DIR": ""}
    done = subprocess.run(f"{sys.executable} -m gpusizer.cli sweep --models llama-3.1-8b | head -1", shell=True,
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.stdout.startswith("model,") and done.stderr == ""


# --- limits ---------------------------------------------------------------------------------------


def test_context_limits(capsys):
    assert_error(["fit", "llama-2-7b", "h100", "--context", "16k"], capsys, 2, "--context",
                 "--allow-beyond-max-context")
    assert_error(["fit", "llama-3.1-8b", "h100", "--prompt", "1M"], capsys, 2, "--prompt")
    assert main(["fit", "llama-2-7b", "h100", "--context", "16k", "--allow-beyond-max-context", "--json"]) == 0
    beyond = json.loads(capsys.readouterr().out)
    assert (beyond["context"], beyond["context_exceeds_model_max"]) == (16384, True)
    assert main(["fit", "llama-2-7b", "h100", "--context", "16k", "--allow-beyond-max-context"]) == 0
    text = capsys.readouterr().out  # the text says so, and why max_context stops at 4,096
    assert "warning: 16,384 tokens exceed the model's maximum context of 4,096 tokens" in text
    assert "up to 4,096 tokens (the model maximum)" in text
    assert main(["fit", "llama-2-7b", "h100", "--json"]) == 0  # default: 8k, or the model's maximum if shorter
    within = json.loads(capsys.readouterr().out)
    assert (within["context"], within["context_exceeds_model_max"]) == (4096, False)  # Llama 2: 4k context
    assert_error(["fit", "llama-3.1-8b", "h100", "--context", "1048576M"], capsys, 2, "--context", "16,777,216")
    assert_error(["layouts", "llama-2-7b", "h100", "--context", "16k"], capsys, 2, "--context")


def test_gpu_count_limits(capsys):
    for argv in (["fit", "llama-3.1-8b", "h100", "--gpus", "1024M"], ["layouts", "llama-3.1-8b", "h100",
                 "--gpus", "577"], ["sweep", "--gpu-count", "1,1024"], ["shortlist", "llama-3.1-8b", "--rate",
                 "1", "--ttft-p95", "1s", "--max-gpus", "10000"]):
        assert_error(argv, capsys, 2, "576")


def test_layouts_at_the_gpu_limit_answers_quickly(capsys):
    start = time.perf_counter()
    assert main(["layouts", "deepseek-r1", "gb200-nvl72", "--gpus", str(common.MAX_GPUS)]) == 0
    assert time.perf_counter() - start < 20
    assert "Layouts that fit" in capsys.readouterr().out


def test_sweep_grid_limit_is_checked_before_any_work(capsys):
    many = ",".join(str(n) for n in range(1, 200))
    start = time.perf_counter()
    assert_error(["sweep", "--context", many, "--concurrency", many], capsys, 2, "rows", "MAX_GRID_ROWS")
    assert time.perf_counter() - start < 5


def test_grid_rows():
    assert checks.grid_rows({"models": 2, "gpus": 3}, 6) == 6
    assert checks.grid_rows([10**9, 10**9, 0], 1) == 0
    with pytest.raises(ValueError, match=r"1,000,000,000,000 rows \(a 1,000,000 x b 1,000,000\)"):
        checks.grid_rows({"a": 10**6, "b": 10**6, "c": 1}, 20_000_000)


# --- JSON -----------------------------------------------------------------------------------------


def _strict(text):
    return json.loads(text, parse_constant=lambda name: pytest.fail(f"bare {name} in JSON"))


def test_json_is_strict_for_missing_figures(capsys, rateless):
    assert main(["fit", "llama-3.1-8b", "apple-m3-max", "--json"]) == 0
    data = _strict(capsys.readouterr().out)
    assert data["prefill"]["seconds_expected"] is None  # no published tensor rate: null, never NaN
    for argv in (["gpus", "--json"], ["models", "--json"], ["layouts", "llama-3.1-8b", "h100", "--gpus", "2",
                                                             "--json"]):
        assert main(argv) == 0
        _strict(capsys.readouterr().out)


def test_readers_cap_their_input():
    with pytest.raises(ValueError, match="larger than"):
        readers.read_csv("/dev/zero")
    with pytest.raises(ValueError, match=r"model=, gpu="):
        readers.read(BENCH / "vllm_c1.json")


def test_fit_json_names_the_engine_terms_of_its_startup_log(capsys):
    assert main(["fit", "llama-3.1-8b", "h100", "--gpus", "4", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    m, terms = data["memory"], data["engine_memory"]
    assert terms["engine"] == "vllm" and terms["memory_fraction"] == 0.9
    # vLLM V1: requested = utilization x total; KV = requested - weights - activation peak - non-torch - graphs
    assert terms["requested_memory_bytes"] == m["budget_bytes"] == pytest.approx(0.9 * m["capacity_bytes"], abs=1)
    assert terms["non_torch_memory_bytes"] + terms["cuda_graph_bytes"] == pytest.approx(m["runtime_bytes"], abs=1)
    assert terms["kv_cache_memory_bytes"] == pytest.approx(
        terms["requested_memory_bytes"] - terms["model_weights_bytes"] - terms["activation_peak_bytes"]
        - terms["non_torch_memory_bytes"] - terms["cuda_graph_bytes"], abs=4)
    assert terms["max_concurrency"] == pytest.approx(data["kv_pool_tokens"] / data["context"], abs=0.005)
    assert main(["fit", "llama-3.1-8b", "h100", "--engine", "llama.cpp", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["engine_memory"]["kv_cache_buffer_bytes"] == data["memory"]["kv_cache_bytes"]


def test_fit_reports_llama_cpp_host_token_embedding(capsys):
    # llama.cpp keeps token_embd in host memory (engines.vocabulary_on_gpu): Llama 3.1 8B's, vocabulary 128,256 x
    # hidden 4,096 x 2 B (BF16) = 1,050,673,152 B, is outside memory.weights_bytes and reported beside it
    assert main(["fit", "llama-3.1-8b", "h100", "--engine", "llama.cpp", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["host_weights_bytes"] == 128_256 * 4_096 * 2 == 1_050_673_152
    assert data["engine_memory"]["cpu_mapped_model_buffer_bytes"] == 1_050_673_152
    on_gpu = data["memory"]["weights_bytes"]
    # two GPUs: one copy in host memory, not one per GPU
    assert main(["fit", "llama-3.1-8b", "h100", "--engine", "llama.cpp", "--gpus", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["host_weights_bytes"] == 1_050_673_152
    assert main(["fit", "llama-3.1-8b", "h100", "--engine", "llama.cpp"]) == 0
    assert "host memory       1.05 GB      0.98 GiB   the token embedding, which llama.cpp keeps in host memory" in (
        capsys.readouterr().out)
    # vLLM holds the embedding on the GPU: nothing in host memory, no line
    assert main(["fit", "llama-3.1-8b", "h100", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["host_weights_bytes"] == 0 and "cpu_mapped_model_buffer_bytes" not in data["engine_memory"]
    assert data["memory"]["weights_bytes"] - on_gpu == 1_050_673_152  # the same BF16 weights, embedding included
    assert main(["fit", "llama-3.1-8b", "h100"]) == 0
    assert "host memory" not in capsys.readouterr().out


def test_fit_json_kv_memory_goes_negative_as_vllm_logs_it(capsys):
    # vLLM prints the signed balance ("Available KV cache memory: -2.14 GiB", vllm#23278); Llama-3.1-70B in
    # BF16 (141 GB) on one H100 leaves a deficit: kv_pool_bytes stays 0, the engine term is minus the deficit
    assert main(["fit", "llama-3.1-70b", "h100", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["kv_pool_bytes"] == 0 and data["kv_pool_deficit_bytes"] > 60 * 2**30
    assert data["engine_memory"]["kv_cache_memory_bytes"] == pytest.approx(-data["kv_pool_deficit_bytes"], abs=1)
