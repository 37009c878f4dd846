"""Streamed and distributed sweeps equal the in-memory sweep; the reductions equal their in-memory forms;
streamed CSV and Parquet equal the table; progress reaches a reporter only when asked (issues 21, 23)."""

import io
import math
import tracemalloc

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusizer import progress, serving
from gpusizer.cli import main
from gpusizer.commands import bars, common
from gpusizer.sweeper import Sweep, distributed, output, reduce, sweep
from gpusizer.sweeper.chunks import plan, sweep_chunks

SMALL = dict(models=["llama-3.1-8b", "qwen3-30b-a3b"], gpus=["h100-sxm", "rtx-4090"], weights=["bf16", "fp8"],
             context=[4096, 32768], concurrency=[1, 8, 64], gpu_count=[1, 2], prices=True)  # 96 rows
TOKENS = "decode_expected_aggregate_tokens_per_second"


def _same_columns(expected: Sweep, got: Sweep, rtol: float = 0.0) -> None:
    assert list(got.data) == list(expected.data)
    assert len(got) == len(expected)
    for name in expected.data:
        assert got[name].dtype == expected[name].dtype, name
        if rtol and expected[name].dtype.kind == "f":
            np.testing.assert_allclose(got[name], expected[name], rtol=rtol, atol=0, err_msg=name)
        else:
            np.testing.assert_array_equal(got[name], expected[name], err_msg=name)


def _grids():
    pick = lambda values: st.lists(st.sampled_from(values), min_size=1, max_size=2, unique=True)  # noqa: E731
    return st.fixed_dictionaries({
        "models": pick(["llama-3.1-8b", "qwen3-30b-a3b", "gemma-3-4b", "llama-3.1-70b"]),
        "gpus": pick(["h100-sxm", "rtx-4090", "mi300x", "l4"]),
        "weights": pick([None, "bf16", "fp8", "int4"]),
        "engine": pick(["vllm", "llama.cpp"]),
        "context": pick([512, 4096, 32768]),
        "concurrency": pick([1, 3, 64]),
        "gpu_count": pick([1, 2, 4]),
        "prompt": st.one_of(st.none(), pick([128, 2048])),
    })


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grid=_grids(), chunk_rows=st.one_of(st.just(1), st.integers(2, 40)))
def test_chunks_concatenated_equal_the_sweep(grid, chunk_rows):
    # invariant: cutting the flat index into blocks changes no row order and no value beyond rounding (a
    # prefill sums its chunks along an axis as long as the block's longest prompt: a last-place difference)
    full = sweep(**grid)
    parts = list(sweep_chunks(chunk_rows=chunk_rows, **grid))
    assert all(len(p) <= chunk_rows for p in parts)
    _same_columns(full, reduce.concat(parts), rtol=1e-12)


def test_blocks_cover_the_flat_index_in_order():
    # 96 rows, axes (2, 2, 2, 2, 1, 1, 2, 3): at 7 rows a block takes the last two axes (6 rows) whole
    grid = plan(**SMALL)
    assert grid.shape == (2, 2, 2, 2, 1, 1, 2, 3) and len(grid) == 96
    blocks = list(grid.blocks(7))
    assert [b.rows for b in blocks] == [6] * 16
    assert [b.start for b in blocks] == list(range(0, 96, 6))
    assert [b.rows for b in grid.blocks(12)] == [12] * 8   # two contexts x three concurrencies
    assert [b.rows for b in grid.blocks(1000)] == [96]
    with pytest.raises(ValueError, match="chunk_rows"):
        list(grid.blocks(0))


def test_plan_checks_its_arguments_before_any_row():
    with pytest.raises(KeyError):
        plan(["no-such-model"], ["h100"])
    with pytest.raises(ValueError, match="context"):
        plan(["llama-3.1-8b"], ["h100"], context=[0])
    with pytest.raises(ValueError, match="rows"):
        plan(["llama-3.1-8b"], ["h100"], context=list(range(1, 10**5)), concurrency=list(range(1, 10**5)),
             gpu_count=list(range(1, 577)), weights=["bf16", "fp8"])  # 1.15e13 rows > MAX_STREAM_ROWS (1e13)


def _dominated_brute_force(x, y):
    """Front by the definition, O(n^2): no other row at least as good on both and better on one."""
    keep = []
    for i in range(len(x)):
        if math.isnan(x[i]) or math.isnan(y[i]):
            continue
        if not any(x[j] <= x[i] and y[j] <= y[i] and (x[j] < x[i] or y[j] < y[i]) for j in range(len(x))
                   if not (math.isnan(x[j]) or math.isnan(y[j]))):
            keep.append(i)
    return keep


def test_pareto_by_hand():
    # (3,3) loses to (2,3); (2,4) too; the two (2,3) are equal and both kept; NaN never on the front
    x = np.array([1.0, 2.0, 2.0, 3.0, 4.0, np.nan, 2.0])
    y = np.array([5.0, 3.0, 4.0, 3.0, 1.0, 0.0, 3.0])
    table = Sweep(data={"x": x, "y": y, "i": np.arange(7)}, shape=(7,), axes={})
    assert reduce.pareto(table, "x", "y")["i"].tolist() == [0, 1, 6, 4]
    # larger y better: (1,5) beats all x >= 1 with y <= 5 ... only (1,5) remains
    assert reduce.pareto(table, "x", "y", largest=(False, True))["i"].tolist() == [0]


@pytest.mark.parametrize("chunk_rows", [1, 5, 17, 96])
def test_folded_reductions_equal_the_in_memory_ones(chunk_rows):
    full = sweep(**SMALL)
    best = reduce.Best(TOKENS, ["model", "gpu"], largest=True, fits_only=True)
    cheap = reduce.Best(["usd_per_million_tokens", "total_bytes"], "model")
    front = reduce.Pareto("usd_per_million_tokens", "decode_tpot_seconds_expected")
    tally = reduce.Counts(["gpu", "weights"])
    reduce.fold(sweep_chunks(chunk_rows=chunk_rows, **SMALL), best, cheap, front, tally)
    _same_columns(full.filter(fits=True).best(TOKENS, ["model", "gpu"], largest=True), best.result())
    _same_columns(full.best(["usd_per_million_tokens", "total_bytes"], "model"), cheap.result())
    _same_columns(reduce.pareto(full, "usd_per_million_tokens", "decode_tpot_seconds_expected"), front.result())
    x, y = full["usd_per_million_tokens"], full["decode_tpot_seconds_expected"]
    assert sorted(front.result()["total_bytes"].tolist()) == sorted(full["total_bytes"][_dominated_brute_force(x, y)])
    counted = tally.result()
    for gpu, weights, rows, fits in zip(*(counted[c] for c in ("gpu", "weights", "rows", "fits")), strict=True):
        mask = (full["gpu"] == gpu) & (full["weights"] == weights)
        assert rows == mask.sum() == 24 and fits == full["fits"][mask].sum()
    assert counted["rows"].sum() == 96


def test_streamed_csv_and_parquet_equal_the_table(tmp_path):
    full = sweep(**SMALL)
    whole = io.StringIO()
    full.to_csv(whole)
    streamed = io.StringIO()
    assert output.write_csv(sweep_chunks(chunk_rows=7, **SMALL), streamed) == 96
    assert streamed.getvalue() == whole.getvalue()
    path = tmp_path / "grid.parquet"
    assert output.write_parquet(sweep_chunks(chunk_rows=7, **SMALL), path) == 96
    back, table = pq.read_table(path), full.to_arrow()
    assert back.column_names == table.column_names and back.num_rows == 96
    assert pq.ParquetFile(path).metadata.num_row_groups == 16  # one per block of 6 rows
    for name in table.column_names:
        assert back[name].to_pylist() == table[name].to_pylist(), name


def test_two_worker_cluster_equals_the_in_memory_sweep(tmp_path):
    full = sweep(**SMALL)
    grid = plan(**SMALL)
    assert [sum(b.rows for b in g) for g in distributed.partitions(grid, 7, 3)] == [36, 30, 30]
    with distributed.cluster(2, processes=False) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        frame = distributed.frame(grid, chunk_rows=7, parts=3)
        assert frame.npartitions == 3
        got = frame.compute().reset_index(drop=True)
        best, tally = reduce.Best(TOKENS, "gpu", largest=True), reduce.Counts("model")
        front = reduce.Pareto("usd_per_million_tokens", "decode_tpot_seconds_expected")
        distributed.reduce(grid, best, front, tally, client=client, chunk_rows=5, parts=4)
        rows = distributed.write_parquet(grid, tmp_path / "set", client=client, chunk_rows=7, parts=3, fits=True)
    expected = full.to_pandas()
    assert list(got.columns) == list(expected.columns)
    for name in expected.columns:
        np.testing.assert_array_equal(got[name].to_numpy(), expected[name].to_numpy(), err_msg=name)
    _same_columns(full.best(TOKENS, "gpu", largest=True), best.result())
    _same_columns(reduce.pareto(full, "usd_per_million_tokens", "decode_tpot_seconds_expected"), front.result())
    _same_columns(reduce.counts(full, "model"), tally.result())
    fitting = full.filter(fits=True)
    assert rows == len(fitting)
    assert pq.read_table(tmp_path / "set")["total_bytes"].to_pylist() == fitting["total_bytes"].tolist()


def test_peak_memory_does_not_grow_with_the_grid():
    # counting 24,000 and 96,000 rows 1,000 at a time: the same peak (one block's arrays), within 25 %
    def peak(contexts):
        tracemalloc.start()
        tally = reduce.Counts()
        reduce.fold(sweep_chunks(["llama-3.1-8b"], ["h100"], context=list(range(1024, 1024 * (contexts + 1), 1024)),
                                 concurrency=list(range(1, 1001)), chunk_rows=1000), tally)
        top = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert tally.result()["rows"].tolist() == [contexts * 1000]
        return top
    small, large = peak(24), peak(96)
    assert large < 1.25 * small


def _cli(argv, capsys):
    assert main(argv) == 0
    return capsys.readouterr().out


def test_cli_streams_the_same_csv(capsys):
    argv = ["sweep", "--models", "llama-3.1-8b,qwen3-30b-a3b", "--gpus", "h100,rtx-4090", "--weights", "bf16,fp8",
            "--context", "4k,32k", "--concurrency", "1,8,64", "--gpu-count", "1,2", "--prices", "table"]
    whole = io.StringIO()
    sweep(**SMALL).to_csv(whole)
    assert _cli(argv, capsys) == whole.getvalue()
    assert _cli([*argv, "--chunk-rows", "5"], capsys) == whole.getvalue()
    best = _cli([*argv, "--chunk-rows", "5", "--best-by", "tokens", "--fits", "--columns", "model,gpu," + TOKENS],
                capsys).splitlines()
    expected = sweep(**SMALL).filter(fits=True).best(TOKENS, ["model", "gpu"], largest=True)
    assert best[0] == f"model,gpu,{TOKENS}" and len(best) == 5
    assert [float(line.split(",")[2]) for line in best[1:]] == expected[TOKENS].tolist()
    counted = _cli([*argv, "--counts", "--per", "none"], capsys).splitlines()
    assert counted == ["rows,fits", f"96,{int(sweep(**SMALL)['fits'].sum())}"]


def test_cli_chunk_rows_lifts_the_in_memory_limit(capsys, monkeypatch):
    monkeypatch.setattr(common, "MAX_GRID_ROWS", 10)
    argv = ["sweep", "--models", "llama-3.1-8b", "--gpus", "h100", "--context", "4k,32k",
            "--concurrency", "1,2,4,8,16,32"]  # 12 rows > 10
    assert main(argv) == common.USAGE and "MAX_GRID_ROWS" in capsys.readouterr().err
    counted = _cli([*argv, "--chunk-rows", "4", "--counts"], capsys).splitlines()
    assert counted[1].startswith("llama-3.1-8b,h100-sxm,12,")


def test_cli_parquet_and_dask_dataset(tmp_path, capsys):
    argv = ["sweep", "--models", "llama-3.1-8b", "--gpus", "h100", "--context", "4k,32k", "--concurrency", "1,8,64"]
    table = sweep(["llama-3.1-8b"], ["h100"], context=[4096, 32768], concurrency=[1, 8, 64]).to_arrow()
    assert "wrote 6 rows x" in _cli([*argv, "--chunk-rows", "2", "-o", str(tmp_path / "g.parquet")], capsys)
    assert pq.read_table(tmp_path / "g.parquet")["total_bytes"].to_pylist() == table["total_bytes"].to_pylist()
    assert "Parquet dataset" in _cli([*argv, "--workers", "2", "-o", str(tmp_path / "d.parquet")], capsys)
    assert pq.read_table(tmp_path / "d.parquet")["decode_tpot_seconds_expected"].to_pylist() == \
        table["decode_tpot_seconds_expected"].to_pylist()
    assert main([*argv, "--workers", "2"]) == common.USAGE and "Parquet dataset" in capsys.readouterr().err


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_reaches_a_reporter_only_when_asked():
    seen = []
    with progress.reporting(lambda *a: seen.append(a)):
        list(sweep_chunks(**SMALL, chunk_rows=40))
        step = serving.step_model("llama-3.1-8b", "h100-sxm", context=2560)
        serving.simulate(step, serving.Workload(rate=4, prompt_tokens=2048, output_tokens=256), requests=50)
    assert seen[:3] == [("sweep", 24, 96), ("sweep", 48, 96), ("sweep", 72, 96)]  # blocks of 24 rows
    assert seen[3] == ("sweep", 96, 96) and seen[-1] == ("simulation", 50, 50)
    progress.report("sweep", 1, 2)  # no reporter: nothing happens


def test_bars_only_on_a_terminal():
    terminal, pipe = _Terminal(), io.StringIO()
    with bars.on_terminal(terminal):
        progress.report("sweep", 50, 100)
        progress.report("sweep", 100, 100)
    with bars.on_terminal(pipe):
        progress.report("sweep", 50, 100)
    assert "sweep" in terminal.getvalue() and "100" in terminal.getvalue()
    assert pipe.getvalue() == ""

