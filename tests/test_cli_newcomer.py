"""Issue 20, "the first hour": what a newcomer meets at the command line, through ``gpusizer.cli.main``."""

import csv
import io
import json
import re
import warnings
from importlib import metadata

import pytest

import gpusizer
from gpusizer import catalog, cli
from gpusizer.cli import main

FLAGSHIP = ["fit", "llama-3.1-70b", "h200", "--weights", "fp8", "--kv-cache", "fp8", "--context", "32k",
            "--concurrency", "16"]


def run(capsys, *argv):
    status = main(list(argv))
    out = capsys.readouterr()
    return status, out.out, out.err


# --- 1. layouts: the best valid one by default, an invalid one refused -----------------------------------


@pytest.mark.parametrize(("argv", "model", "target", "count"), [
    (["fit", "deepseek-r1", "gb300-nvl72"], "deepseek-r1", "gb300-nvl72", None),  # was tp72: 128 heads / 72
    (["fit", "llama-3.1-70b", "h100", "--gpus", "3"], "llama-3.1-70b", "h100", 3),  # was tp3: 64 heads / 3
])
def test_a_gpu_count_without_a_layout_takes_the_best_valid_layout_and_says_which(capsys, argv, model, target, count):
    status, out, err = run(capsys, *argv)
    best = gpusizer.best_layout(model, target, count)[0].layout
    gpus = count or catalog.system(target).gpu_count
    assert status == 0 and err == ""  # no Python warning, no engine-refused layout
    assert f"layout {best}: the best valid layout of {gpus} GPUs" in out
    assert f"  parallel     {best} over" in out
    assert best != f"tp{gpus}"


def test_the_best_valid_layout_of_three_h100s_for_llama_70b_is_pp3(capsys):
    # 64 heads divide by no tensor-parallel degree of 3, so the valid layouts are pp3 and dp3; dp3 holds a whole
    # bf16 copy (141 GB) per GPU and does not fit, pp3 does
    assert [p.name for p in gpusizer.parallel.candidates(catalog.model("llama-3.1-70b"), 3)] == ["dp3", "pp3"]
    status, out, _ = run(capsys, "fit", "llama-3.1-70b", "h100", "--gpus", "3", "--json")
    data = json.loads(out)
    assert status == 0 and data["parallel"]["layout"] == "pp3" and data["gpus"] == 3 and data["fits"] is True
    assert data["layout_choice"].startswith("pp3: the best valid layout of 3 GPUs")


def test_the_default_layout_on_a_system_matches_estimate_with_that_layout(capsys):
    status, out, _ = run(capsys, "fit", "llama-3.1-70b", "hgx-h200-8x", "--json")
    data = json.loads(out)
    assert status == 0
    e = gpusizer.estimate("llama-3.1-70b", "hgx-h200-8x", layout=data["parallel"]["layout"])
    assert data["memory"]["total_bytes"] == round(e.memory.total_bytes)
    assert data["parallel"]["layout"] == "tp8"  # where tp over the whole board is valid, it is also the best


@pytest.mark.parametrize(("argv", "valid"), [
    (["fit", "llama-3.1-70b", "h100", "--gpus", "3", "--layout", "tp"], "valid layouts of 3 GPUs: dp3, pp3"),
    (["fit", "deepseek-r1", "gb300-nvl72", "--layout", "tp72"], "valid layouts of 72 GPUs: ep72, tp2+ep72"),
])
def test_a_layout_engines_refuse_is_refused_with_the_valid_ones(capsys, argv, valid):
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == ""
    assert err.startswith("gpusizer: error: --layout ") and "which engines refuse" in err and valid in err
    assert err.count("\n") == 1


def test_library_warnings_are_formatted_lines(capsys, monkeypatch):
    real = cli.estimate

    def warning_estimate(*args, **kwargs):
        warnings.warn("something to know", UserWarning, stacklevel=1)
        return real(*args, **kwargs)

    monkeypatch.setattr(cli, "estimate", warning_estimate)
    status, _, err = run(capsys, "fit", "llama-3.1-8b", "h100")
    assert status == 0
    assert err == "gpusizer: warning: something to know\n"  # no source path, no "UserWarning"


# --- 2. memory shown one way, with where it comes from ------------------------------------------------------


def test_fit_names_the_engine_share_and_where_the_capacity_comes_from(capsys):
    _, out, _ = run(capsys, *FLAGSHIP)
    # H200 SXM: listed 141 GB; the driver reports 139.72 GiB = 150.02 GB; vLLM takes 0.9 of it = 135.02 GB
    assert "  engine share    135.02 GB    125.75 GiB   the vllm share of the capacity (90%)" in out
    assert "  capacity        150.02 GB    139.72 GiB   the driver reports; H200 SXM is listed as 141 GB" in out
    assert "usable" not in out


def test_gpus_lists_the_vendor_and_the_reported_memory(capsys):
    _, out, _ = run(capsys, "gpus")
    h200 = next(line for line in out.splitlines() if line.startswith("h200-sxm "))
    assert h200.split()[3:5] == ["141", "139.72"]  # id, name "H200 SXM", GB listed, GiB reported
    assert "GB listed: the vendor's figure" in out
    _, out, _ = run(capsys, "gpus", "--json")
    row = next(r for r in json.loads(out) if r["id"] == "h200-sxm")
    assert row["memory_bytes"] == 141 * 10**9 and row["memory_reported_bytes"] == round(139.72 * 2**30)


# --- 4. discoverability ------------------------------------------------------------------------------------


def test_gpus_and_systems_list_the_systems(capsys):
    _, out, _ = run(capsys, "gpus")
    for name in ("hgx-h200-8x", "gb300-nvl72", "vera-rubin-nvl144"):
        assert f"\n{name} " in out
    _, out, _ = run(capsys, "systems", "--json")
    assert [r["id"] for r in json.loads(out)] == [s.id for s in catalog.systems()]


@pytest.mark.parametrize(("name", "shown"), [
    ("hgx-h100-8x", "on 8 x H100 SXM"), ("rtx-pro-6000", "on 1 x RTX PRO 6000 Blackwell Workstation Edition"),
    ("mi300", "on 1 x Instinct MI300X"), ("RTX_PRO_6000", "on 1 x RTX PRO 6000 Blackwell Workstation Edition"),
])
def test_the_names_a_newcomer_types_resolve(capsys, name, shown):
    status, out, _ = run(capsys, "fit", "llama-3.1-8b", name)
    assert status == 0 and shown in out


def test_an_ambiguous_name_asks(capsys):
    status, _, err = run(capsys, "fit", "llama-3.1-8b", "a100")
    assert status == 2
    assert "'a100' is ambiguous" in err and "a100-40gb-sxm (40 GB), a100-80gb-sxm (80 GB), a100-80gb-pcie" in err


@pytest.mark.parametrize(("argv", "suggested"), [
    (["fit", "llama-70b", "h100"], "llama-3.1-70b"),
    (["fit", "llama-3.1-8b", "gb300-nvl7"], "gb300-nvl72"),
    (["fit", "llama-3.1-8b", "hgx-h200-8"], "hgx-h200-8x"),
])
def test_unknown_ids_suggest_models_gpus_and_systems(capsys, argv, suggested):
    status, _, err = run(capsys, *argv)
    assert status == 2 and "did you mean" in err and suggested in err.split("did you mean")[1]


def test_help_names_awq_gptq_and_llama_cpp_cache_types(capsys):
    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "awq and gptq are int4" in text and "q8_0 (sized as int8)" in text


def test_kv_cache_takes_llama_cpp_names(capsys):
    _, out, _ = run(capsys, "fit", "llama-3.1-8b", "rtx-4090", "--kv-cache", "q8_0", "--engine", "llama.cpp",
                    "--json")
    data = json.loads(out)
    # q8_0 is sized as int8: 1 byte per element; Llama 3.1 8B caches 32 layers x 2 x 8 heads x 128 = 65,536
    # elements per token, so 8,192 tokens hold 512 MiB
    assert data["kv_cache"] == "int8" and data["memory"]["kv_cache_bytes"] == 8192 * 65536
    with pytest.raises(SystemExit) as exit_:
        main(["fit", "llama-3.1-8b", "rtx-4090", "--kv-cache", "q4_0"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "q4_0 KV cache is a 4/5-bit block type that the catalogue does not size" in err


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"gpusizer {metadata.version('gpusizer')}\n"


# --- 5. what a figure means, where it is shown --------------------------------------------------------------


def test_decode_says_the_context_it_holds(capsys):
    for context in ("8k", "1k"):
        _, out, _ = run(capsys, "fit", "llama-3.1-8b", "h100", "--concurrency", "16", "--context", context)
        tokens = {"8k": 8192, "1k": 1024}[context]
        e = gpusizer.estimate("llama-3.1-8b", "h100", concurrency=16, context=tokens)
        line = next(line for line in out.splitlines() if line.startswith("  decode"))
        assert f"{e.decode.expected_tokens_per_second:9.1f} tok/s per user" in line
        assert line.endswith(f"each sequence holding {tokens:,} tokens")


def test_speeds_of_a_configuration_that_does_not_fit_carry_a_caveat(capsys):
    _, out, _ = run(capsys, *FLAGSHIP)
    assert "(speeds as if it fitted: no engine would start this configuration)" in out
    _, out, _ = run(capsys, *FLAGSHIP, "--gpus", "2")
    assert "FITS" in out and "speeds as if it fitted" not in out


@pytest.mark.parametrize("argv", [FLAGSHIP, ["layouts", "llama-3.1-70b", "h100", "--gpus", "4"]])
def test_json_carries_a_schema_version_where_it_is_an_object(capsys, argv):
    _, out, _ = run(capsys, *argv, "--json")
    data = json.loads(out)
    if isinstance(data, dict):
        assert data["schema_version"] == 1
    else:  # lists (layouts, gpus, models, systems) are documented as unversioned rows
        assert isinstance(data, list) and data


def test_errors_under_json_are_one_text_line_on_stderr(capsys):
    status, out, err = run(capsys, "fit", "llama-3.1-8b", "h1000", "--json")
    assert status == 2 and out == "" and err.startswith("gpusizer: error: ") and err.count("\n") == 1


# --- 6. consistency ----------------------------------------------------------------------------------------


def test_sweep_csv_has_whole_bytes(capsys):
    _, out, _ = run(capsys, "sweep", "--models", "llama-3.1-8b", "--gpus", "h100", "--context", "4k")
    row = next(csv.DictReader(io.StringIO(out)))
    # H100 SXM reports 79.22 GiB = 85,061,827,297.28 B; the CSV writes whole bytes
    assert row["capacity_bytes"] == "85061827297"
    assert all("." not in value for key, value in row.items() if key.endswith("_bytes"))


def test_shortlist_and_throughput_take_output_tokens(capsys):
    status, out, _ = run(capsys, "throughput", "llama-3.1-8b", "h100", "--prompt", "1k", "--output-tokens", "256",
                         "--json")
    data = json.loads(out)
    assert status == 0 and data["workload"]["output_tokens"] == 256 and data["schema_version"] == 1


def test_throughput_takes_the_best_valid_layout_too_and_refuses_an_invalid_one(capsys):
    status, out, err = run(capsys, "throughput", "llama-3.1-70b", "h100", "--gpus", "3")
    best = gpusizer.best_layout("llama-3.1-70b", "h100", 3, objective="throughput", context=1024 + 256)[0].layout
    assert status == 0 and err == "" and best == "pp3"  # 64 heads: no tp3
    assert out.startswith("layout pp3: the best valid layout of 3 GPUs (the most tokens/s with full KV pools")
    assert "llama-3.1-70b on 3 x H100 SXM: 1 x pp3 (vllm" in out
    status, _, err = run(capsys, "throughput", "llama-3.1-70b", "h100", "--gpus", "3", "--layout", "tp")
    assert status == 2 and "valid layouts of 3 GPUs: dp3, pp3" in err


def test_docs_cli_synopsis_names_only_flags_that_help_lists(capsys):
    # docs/cli.md's synopsis against each command's --help: a renamed flag (shortlist --output ->
    # --output-tokens) cannot linger in the documentation
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")
    synopsis = page.split("\n\n")[1]
    commands: dict[str, set[str]] = {}
    current = None
    for line in synopsis.splitlines():
        words = line.split()
        if words[:1] == ["gpusizer"] and len(words) > 1:
            current = "" if words[1].startswith("-") else words[1]  # "": the top-level parser (--version)
        commands.setdefault(current, set()).update(re.findall(r"--[a-z][a-z0-9-]*", line))
    assert {"fit", "layouts", "shortlist", "throughput", "sweep", "calibrate", "gpus", "systems", "models"} <= set(
        commands)
    for command, flags in commands.items():
        with pytest.raises(SystemExit):
            main([command, "--help"] if command else ["--help"])
        listed = set(re.findall(r"--[a-z][a-z0-9-]*", capsys.readouterr().out))
        assert flags <= listed, (command, flags - listed)
