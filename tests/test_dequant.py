"""llama.cpp's dequantise-then-cuBLAS path for quantised weights above 32 tokens (``gpusizer.dequant``;
builds before ggml-org/llama.cpp PR #8075, ggerganov/llama.cpp:ggml-cuda.cu at commit 005de59)."""

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusizer import catalog, configuration, dequant, efficiency, passes


def _setup(weights: str, gpu: str = "rtx-4090", engine: str = "llama.cpp@2024") -> configuration.Setup:
    return configuration.setup(catalog.model("llama-3.1-8b"), catalog.gpu(gpu), weights, None, "fp16", 1, engine,
                               "tensor", efficiency.bundled())


def _step(s: configuration.Setup, tokens: int) -> passes.Step:
    return passes.engine_step(s, tokens, 0, 1, head=1, dims=s.model.prefill_dims)


def test_formulas_by_hand():
    # Q4_0 stores 4.5 bits per weight, so its F16 copy is 16 / 4.5 = 3.556 bytes per stored byte. Llama 2 7B
    # in Q4_0 (3.66 GB): the pass reads 3.66 GB and writes 13.01 GB = 16.67 GB; the GEMM reads 13.01 GB.
    assert dequant.dequant_pass_bytes(3.66e9, 16 / 4.5) == pytest.approx(16.6733e9, rel=1e-4)
    assert dequant.gemm_weight_bytes(3.66e9, 16 / 4.5) == pytest.approx(13.0133e9, rel=1e-4)
    # MMQ_MAX_BATCH_SIZE 32: MMQ at 32 tokens, cuBLAS at 33; a threshold of 0 never switches.
    assert not dequant.dequantised(32, 32) and dequant.dequantised(33, 32) and not dequant.dequantised(512, 0)


def test_setup_takes_the_path_for_gguf_quants_on_cuda_only():
    # RTX 4090: FP16-accumulate rate 330.3 TFLOPS (llama.cpp accumulates F16 GEMMs in FP16), INT8 660.6.
    q = _setup("q4_0")
    assert (q.dequant_above, q.dequant_peak, q.dense_peak) == (32.0, 330.3e12, 660.6e12)
    assert q.dequant_ratio == pytest.approx(16 / 4.5)
    assert _setup("fp16").dequant_above == 0.0  # F16 weights need no dequantisation
    assert _setup("q4_0", engine="vllm").dequant_above == 0.0  # not an integer_matmul engine
    assert _setup("q4_0", gpu="apple-m2-ultra").dequant_above == 0.0  # Metal dequantises inside its GEMM
    assert _setup("mxfp4").dequant_above == 0.0  # MXFP4 came after PR #8075: mul_mat_q
    # The current class (builds from PR #8075 on) runs every batch size in mul_mat_q at the INT8 rate.
    current = _setup("q4_0", engine="llama.cpp")
    assert (current.dequant_above, current.dense_peak) == (0.0, 660.6e12)


def test_prefill_ceiling_by_hand():
    # Llama 3.1 8B Q4_0 on an RTX 4090, one 512-token ubatch, at the ceiling (every efficiency 1, overlap 1):
    # dense weights streamed W = 3,926,401,024 + head 295,501,824 = 4,221,902,848 B at 4.5 bits.
    # dense GEMM: 7.1479e12 FLOP / 330.3e12 = 21.641 ms against (W x 16/4.5 + 3.0141e9 activations) = 18.025e9 B
    #   / 1.008e12 B/s = 17.882 ms -> 21.641 ms;
    # attention: 6.8854e10 FLOP / 165.2e12 (BF16, FP32 accumulate) = 0.4168 ms (KV 0.067 ms below it);
    # dequantise pass: W x (1 + 16/4.5) = 19.233e9 B / 1.008e12 = 19.080 ms.  Sum 41.14 ms.
    # F16 weights: the same GEMM and attention, no pass: 22.06 ms.
    q, f = _setup("q4_0"), _setup("fp16")
    step = _step(q, 512)
    assert step.dequant_bytes == pytest.approx(4_221_902_848 * (1 + 16 / 4.5))
    assert passes.step_seconds(step, q, None, phase="prefill") == pytest.approx(41.14e-3, rel=1e-3)
    assert passes.step_seconds(_step(f, 512), f, None, phase="prefill") == pytest.approx(22.06e-3, rel=1e-3)


@settings(max_examples=25, deadline=None)
@given(tokens=st.integers(1, 600))
def test_path_changes_nothing_up_to_32_tokens_and_adds_the_pass_above(tokens):
    # Invariant: at or below the threshold the step is the MMQ step exactly; above it the step carries the
    # whole pass W (1 + r) and takes at least the pass's time at the datasheet bandwidth.
    q = _setup("q4_k_m")
    off = replace(q, dequant_above=0.0)
    on_step, off_step = _step(q, tokens), _step(off, tokens)
    on = passes.step_seconds(on_step, q, None, phase="prefill")
    if tokens <= 32:
        assert on == passes.step_seconds(off_step, off, None, phase="prefill")
        assert on_step.dequant_bytes == 0.0
    else:
        weights = off_step.dense_bytes - off_step.activation_bytes
        assert on_step.dequant_bytes == pytest.approx(weights * (1 + q.dequant_ratio))
        assert on >= on_step.dequant_bytes / q.bandwidth
