"""LoRA adapters (gpusizer.lora): bytes by hand for Llama 3.1 8B, vLLM's buffer layout under tensor parallelism,
the KV pool and decode step with the adapters, the CLI, and zero adapters being no LoRA."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusizer import estimate, lora
from gpusizer.cli import main
from gpusizer.lora import LoRA


def test_llama_8b_r16_all_linear_by_hand() -> None:
    # Per layer r x (d_in + d_out): q 4096+4096, k 4096+1024, v 4096+1024, o 4096+4096, gate 4096+14336,
    # up 4096+14336, down 14336+4096 = 81,920 x r; 32 layers x 16 = 41,943,040 parameters (PEFT prints
    # "trainable params: 41,943,040" for Llama-3-8B at r = 16 on all linear modules), 83,886,080 B in bf16.
    e = estimate("llama-3.1-8b", "h100-sxm", context=8192, concurrency=16, lora=LoRA(adapters=4, rank=16))
    a = e.lora
    assert a.adapter_params == 41_943_040 and a.adapter_bytes == 83_886_080
    assert a.buffer_bytes == 4 * 83_886_080 and a.host_bytes == 4 * 83_886_080  # 4 slots, 4 cached on the host
    assert e.kv_pool_bytes - a.kv_pool_bytes == pytest.approx(4 * 83_886_080)  # vLLM: loaded with the weights
    # 16 sequences over 4 adapters touch 4 (1 - (3/4)^16) = 3.9599 of them; the step reads their buffers
    assert a.adapters_touched == pytest.approx(4 * (1 - 0.75**16))
    assert a.step_bytes == pytest.approx(4 * (1 - 0.75**16) * 83_886_080)
    assert a.step_flops == 2 * 16 * 41_943_040  # 16 tokens through their A and B
    assert 1.0 < a.slowdown < 1.05  # Punica/S-LoRA: a few per cent on the step


def test_tensor_parallel_buffers_by_hand() -> None:
    # vLLM: column-parallel q/k/v/gate/up keep A whole and split B's output; row-parallel o/down split A's input.
    # q and o of Llama 3.1 8B at r = 16 on 2 GPUs: 16 x (4096 + 2048) each = 98,304 parameters per layer
    assert lora.sharded_params(16, 4096, 4096, 2, False) == lora.sharded_params(16, 4096, 4096, 2, True) == 98_304
    # all linear at r = 16 on TP2, per layer: q 98,304 + k,v 2 x 16 x (4096 + 512) + o 98,304 + gate,up
    # 2 x 16 x (4096 + 7168) + down 16 x (7168 + 4096) = 98304 + 147456 + 98304 + 360448 + 180224 = 884,736;
    # 32 layers x 2 B = 56,623,104 B per slot per GPU
    e = estimate("llama-3.1-8b", "h100-sxm", gpus=2, layout="tp2", lora=LoRA(adapters=1, rank=16))
    assert e.lora.buffer_bytes == 56_623_104


def test_targets_and_bad_input() -> None:
    # q and v only at r = 8: 32 x 8 x ((4096 + 4096) + (4096 + 1024)) = 3,407,872 parameters
    e = estimate("llama-3.1-8b", "h100-sxm", lora=LoRA(adapters=1, rank=8, targets=("q", "v")))
    assert e.lora.adapter_params == 3_407_872
    with pytest.raises(ValueError, match="targets"):
        estimate("llama-3.1-8b", "h100-sxm", lora=LoRA(targets=("lm_head",)))
    with pytest.raises(ValueError, match="max_cpu_loras"):
        estimate("llama-3.1-8b", "h100-sxm", lora=LoRA(adapters=4, max_loras=4, max_cpu_loras=2))
    with pytest.raises(ValueError, match="max_lora_rank"):  # vLLM's ranks are 1, 8, 16, 32, ...; only vLLM's check
        estimate("llama-3.1-8b", "h100-sxm", lora=LoRA(rank=12))
    assert estimate("llama-3.1-8b", "h100-sxm", engine="sglang", lora=LoRA(rank=12)).lora.rank == 12
    with pytest.raises(TypeError, match="lora"):
        estimate("llama-3.1-8b", "h100-sxm", lora="4:r16")  # type: ignore[arg-type]


def test_cli_fit_lora(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fit", "llama-3.1-8b", "h100-sxm", "--lora", "4:r16", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["lora"]
    assert data["adapter_params"] == 41_943_040 and data["max_loras"] == 4 and data["rank"] == 16
    assert main(["fit", "llama-3.1-8b", "h100-sxm", "--lora", "2:r8", "--lora-targets", "q_proj,v_proj"]) == 0
    assert "2 adapters of rank 8 on q,v" in capsys.readouterr().out


@settings(max_examples=10, deadline=None)
@given(concurrency=st.integers(1, 256), context=st.integers(1, 65536), rank=st.sampled_from([8, 16, 64]))
def test_zero_adapters_is_no_lora(concurrency: int, context: int, rank: int) -> None:
    e = estimate("llama-3.1-8b", "h100-sxm", context=context, concurrency=concurrency,
                 lora=LoRA(adapters=0, rank=rank))
    a = e.lora
    assert a.buffer_bytes == 0 and a.host_bytes == 0 and a.step_seconds_expected == 0
    assert a.kv_pool_bytes == e.kv_pool_bytes and a.max_concurrency == e.max_concurrency
    assert a.tpot_seconds_expected == e.decode.tpot_seconds_expected and a.fits == e.fits


@settings(max_examples=10, deadline=None)
@given(adapters=st.integers(1, 64), concurrency=st.integers(1, 512))
def test_adapters_touched_bounds(adapters: int, concurrency: int) -> None:
    # at least one adapter, never more than the adapters in use, the slots or the sequences; the step only slows
    e = estimate("llama-3.1-8b", "h100-sxm", concurrency=concurrency, lora=LoRA(adapters=adapters, rank=16))
    a = e.lora
    assert 1 - 1e-9 <= a.adapters_touched <= min(adapters, concurrency) + 1e-9
    assert a.tpot_seconds_expected >= e.decode.tpot_seconds_expected


def test_cli_refuses_lora_options_without_lora(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fit", "llama-3.1-8b", "h100-sxm", "--max-loras", "2"]) != 0
    assert "need --lora" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["fit", "llama-3.1-8b", "h100-sxm", "--lora", "4:rx"])
    assert "ADAPTERS:rRANK" in capsys.readouterr().err
    assert main(["fit", "llama-3.1-8b", "h100-sxm", "--prefix-granularity", "16"]) != 0
    assert "--prefix-granularity needs" in capsys.readouterr().err
