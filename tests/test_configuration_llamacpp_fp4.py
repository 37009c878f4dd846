"""llama.cpp runs MXFP4/NVFP4 weights through ``mul_mat_q`` like its k-quants (ggml-org/llama.cpp b75c391,
ggml/src/ggml-cuda/mmq.cu): weight-only there, at the INT8 rate, except MXFP4 on sm_120 and later (GeForce
and workstation Blackwell), which takes the native FP4 MMA branch (``use_native_mxfp4``)."""

from gpusizer import catalog, configuration, efficiency


def _setup(gpu: str, engine: str) -> configuration.Setup:
    model = catalog.model("gpt-oss-20b")
    return configuration.setup(model, catalog.gpu(gpu), "mxfp4", None, "bf16", 1, engine, "tp", efficiency.bundled())


def test_gpt_oss_on_llama_cpp_is_weight_only_at_the_int8_peak():
    # A100 SXM: no FP4 rate; INT8 dense 624 TFLOPS, BF16 312. llama.cpp (integer_matmul) -> 624e12;
    # vLLM dequantises to BF16 -> 312e12. Both in the weight-only group.
    s, v = _setup("a100-80gb-sxm", "llama.cpp"), _setup("a100-80gb-sxm", "vllm")
    assert (s.dense_peak, s.expert_peak, s.family) == (624e12, 624e12, "weight-only")
    assert (v.expert_peak, v.family) == (312e12, "weight-only")


def test_mxfp4_on_llama_cpp_leaves_the_fp4_group_where_the_gpu_has_fp4():
    # B200 has an FP4 rate: vLLM stays native (fp4 group, FP4 peak); llama.cpp uses the INT8 rate, weight-only.
    d = catalog.gpu("b200")
    s, v = _setup("b200", "llama.cpp"), _setup("b200", "vllm")
    assert (s.expert_peak, s.family) == (d.dense.int8, "weight-only")
    assert (v.expert_peak, v.family) == (d.dense.fp4, "fp4")


def test_mxfp4_on_llama_cpp_stays_native_on_sm_120():
    # RTX 5090 (GB202, sm_120): blackwell_mma_available -> native MXFP4 MMA, so the FP4 peak and the fp4
    # group, as vLLM; B200 (sm_100) is below compute capability 12.0 and keeps the INT8 path (test above).
    d = catalog.gpu("rtx-5090")
    s = _setup("rtx-5090", "llama.cpp")
    assert (s.expert_peak, s.family) == (d.dense.fp4, "fp4")
