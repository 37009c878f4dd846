"""The command line: readable by default, a stable --json contract, clear errors."""

import json
from pathlib import Path

import pytest

from gpusizer.cli import main

FLAGSHIP = ["fit", "llama-3.1-70b", "h200", "--weights", "fp8", "--kv-cache", "fp8", "--context", "32k",
            "--concurrency", "16"]


def test_fit_json_contract(capsys):
    assert main([*FLAGSHIP, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    memory = data["memory"]
    for key in ("weights_bytes", "kv_cache_bytes", "activation_bytes", "runtime_bytes", "total_bytes",
                "capacity_bytes", "headroom_bytes"):
        assert isinstance(memory[key], int), key
    assert data["fits"] is False
    assert memory["kv_cache_bytes"] == 80 * 2**30  # 163,840 B/token x 32,768 x 16 (32k = 32,768)
    parts = sum(memory[k] for k in ("weights_bytes", "kv_cache_bytes", "activation_bytes", "runtime_bytes"))
    assert abs(memory["total_bytes"] - parts) <= 2  # each rounded to whole bytes
    assert data["max_concurrency"] == 11 and isinstance(data["kv_pool_tokens"], int)
    assert data["context"] == 32768 and data["gpu"] == "h200-sxm"


def test_fit_text_has_breakdown_and_verdict(capsys):
    assert main(FLAGSHIP) == 0
    out = capsys.readouterr().out
    assert "weights" in out and "KV cache" in out and "headroom" in out
    assert "DOES NOT FIT" in out and "11 sequences" in out


def test_fit_on_two_gpus_fits(capsys):
    assert main([*FLAGSHIP, "--gpus", "2"]) == 0
    assert "FITS" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["gpus", "models"])
def test_listings(command, capsys):
    assert main([command]) == 0
    text = capsys.readouterr().out
    assert ("h100-sxm" if command == "gpus" else "llama-3.1-70b") in text
    assert main([command, "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) > 40


def test_unknown_model_is_a_clean_error(capsys):
    assert main(["fit", "llama-3.1-7b", "h100"]) == 2
    err = capsys.readouterr().err
    assert "unknown model" in err and "llama-3.1-70b" in err


@pytest.mark.parametrize("flag", [["--context", "-4"], ["--concurrency", "0"], ["--context", "lots"]])
def test_bad_numbers_are_argument_errors(flag, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["fit", "llama-3.1-8b", "h100", *flag])
    assert exit_.value.code == 2
    assert flag[0] in capsys.readouterr().err


def test_fit_accepts_a_checkpoint_folder(tmp_path, capsys):
    # the catalogue's reference config of Llama 3.1 8B, as a user's folder
    source = json.loads((Path(__file__).parents[1] / "data" / "model-configs" / "llama-3.1-8b.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(source["config"]))
    assert main(["fit", str(tmp_path), "h100", "--json"]) == 0
    from_folder = json.loads(capsys.readouterr().out)
    assert main(["fit", "llama-3.1-8b", "h100", "--json"]) == 0
    from_catalogue = json.loads(capsys.readouterr().out)
    assert from_folder["memory"] == from_catalogue["memory"]


def test_broken_config_is_a_clean_error(tmp_path, capsys):
    (tmp_path / "config.json").write_text("{not json")
    assert main(["fit", str(tmp_path), "h100"]) == 2
    err = capsys.readouterr().err
    assert "gpusizer: error" in err and "json" in err.lower()


def test_fit_json_speed_sections(capsys):
    assert main([*FLAGSHIP, "--prompt", "2k", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    decode, prefill = data["decode"], data["prefill"]
    assert decode["expected_tokens_per_second"] <= decode["ceiling_tokens_per_second"]
    low, high = decode["band"]
    assert low <= decode["expected_tokens_per_second"] <= high
    assert decode["expected_aggregate_tokens_per_second"] == pytest.approx(16 * decode["expected_tokens_per_second"])
    assert decode["bound"] in ("memory", "compute")
    assert prefill["prompt"] == 2048
    assert prefill["seconds_ceiling"] <= prefill["seconds_expected"] < prefill["ttft_seconds_expected"]
