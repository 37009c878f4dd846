"""CPU/RAM offload (gpusizer.offload): hand-derived values and physical invariants."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusizer import catalog, estimate, parallel
from gpusizer import offload as off
from gpusizer.offload import Offload

MODEL = dict(weights="q4_k_m", engine="llama.cpp", context=8192)


def test_theoretical_bandwidths_by_hand():
    # channels x MT/s x 8 B: 2 x 3200e6 x 8 = 51.2 GB/s; 12 x 4800e6 x 8 = 460.8 GB/s
    assert off.host("ddr4-3200-dual").theoretical_bandwidth == pytest.approx(51.2e9)
    assert off.host("ddr5-4800-12ch").theoretical_bandwidth == pytest.approx(460.8e9)
    # achieved = 0.75 x 89.6 = 67.2 GB/s
    assert off.host("ddr5-5600-dual").achieved_bandwidth == pytest.approx(67.2e9)
    with pytest.raises(KeyError, match="host"):
        off.host("ddr9")


def test_layer_split_by_hand():
    # 80 layers of 1 B each, 80 B of experts (1 B per layer), head 3 B. -ngl g puts g of the 81 slots on the GPU,
    # the output layer being the last (llama.cpp i_gpu_start = n_layer + 1 - g).
    # -ngl 40: the head and 39 layers on the GPU, 41 host layers x (1 + 1) B = 82 B
    assert off.layer_split_bytes(80.0, 80.0, 3.0, 80, 40) == pytest.approx(82.0)
    # -ngl 81 (all slots): nothing on the host; --n-cpu-moe 10 adds 10 x 1 B of experts
    assert off.layer_split_bytes(80.0, 80.0, 3.0, 80, 81) == 0.0
    assert off.layer_split_bytes(80.0, 80.0, 3.0, 80, 81, 10) == pytest.approx(10.0)
    # -ngl 1: only the head on the GPU, 80 x 2 = 160 B; -ngl 0: the head too, 163 B
    assert off.layer_split_bytes(80.0, 80.0, 3.0, 80, 1) == pytest.approx(160.0)
    assert off.layer_split_bytes(80.0, 80.0, 3.0, 80, 0) == pytest.approx(163.0)
    # KV of the 20 host layers at -ngl 61: 8 B x 20 / 80 = 2 B
    assert off.host_kv_bytes(8.0, 80, 61) == pytest.approx(2.0)
    # 2 crossings for each GPU layer with host experts: n-cpu-moe 30 with 11 host layers (-ngl 70) -> 2 x 19
    assert off.activation_crossings(30, 70, 80) == pytest.approx(38.0)


def test_step_and_prefill_by_hand():
    # 20 ms x 0.5 + 20 GB / 50 GB/s = 0.01 + 0.4 = 0.41 s; 2 copies of 32 KB at 16 GB/s with 10 us: +2 x 12 us
    assert off.offloaded_step_seconds(0.02, 0.5, 20e9, 50e9) == pytest.approx(0.41)
    assert off.offloaded_step_seconds(0.02, 0.5, 20e9, 50e9, 2, 32e3, 16e9, 10e-6) == pytest.approx(0.41 + 24e-6)
    # 1000 tokens in micro-batches of 512: 2 copies of 10 GB at 20 GB/s = 1 s; a 16-token prompt stays on the CPU
    assert off.streamed_prefill_seconds(1000, 512, 10e9, 20e9, 32) == pytest.approx(1.0)
    assert off.streamed_prefill_seconds(16, 512, 10e9, 20e9, 32) == 0.0


def test_70b_4bit_on_a_24gb_card_fits_with_offload():
    plain = estimate("llama-3.1-70b", "rtx-4090", **MODEL)
    e = estimate("llama-3.1-70b", "rtx-4090", **MODEL, offload=Offload(auto=True))
    assert not plain.fits and e.offload.fits
    o = e.offload
    # one more layer on the GPU no longer fits
    more = estimate("llama-3.1-70b", "rtx-4090", **MODEL, offload=Offload(gpu_layers=o.gpu_layers + 1))
    assert not more.offload.fits
    assert 30 <= o.gpu_layers <= 50  # llama.cpp#2496: 70B q4_K_M on a 24 GB RTX 3090 runs -ngl 40
    # host part: the streamed bytes at 67.2 GB/s dominate; per user between 1 and 5 tok/s
    assert o.host_seconds == pytest.approx(o.host_streamed_bytes / 67.2e9)
    assert 1.0 < o.expected_tokens_per_second < 5.0
    assert e.to_dict()["offload"]["gpu_layers"] == o.gpu_layers
    assert "offload" not in plain.to_dict()


def test_vllm_auto_offload_and_engine_checks():
    e = estimate("llama-3.1-70b", "rtx-4090", weights="int4", offload=Offload(auto=True))
    o = e.offload
    assert o.mode == "stream" and o.fits and o.cpu_offload_bytes % off.GIB == 0
    # streamed weights are read over PCIe 4.0 x16 at 0.6 x 31.5 GB/s
    assert o.host_seconds == pytest.approx(o.host_streamed_bytes / (0.6 * 31.504e9))
    with pytest.raises(ValueError, match=r"llama\.cpp"):
        estimate("llama-3.1-8b", "rtx-4090", offload=Offload(gpu_layers=10))
    with pytest.raises(ValueError, match="engine"):
        estimate("llama-3.1-8b", "h100", engine="trtllm", offload=Offload(auto=True))
    with pytest.raises(ValueError, match="one GPU"):
        estimate("llama-3.1-70b", "h100", gpus=2, offload=Offload(auto=True))


LAYERS = st.integers(min_value=0, max_value=81)


@settings(max_examples=30, deadline=None)
@given(LAYERS)
def test_weights_add_up(g):
    o = estimate("llama-3.1-70b", "rtx-4090", **MODEL, offload=Offload(gpu_layers=g)).offload
    assert o.gpu_weight_bytes + o.host_weight_bytes == pytest.approx(o.total_weight_bytes, rel=1e-12)


@settings(max_examples=10, deadline=None)
@given(st.sampled_from(["llama-3.1-8b", "llama-3.1-70b", "qwen3-30b-a3b"]), st.integers(1, 8))
def test_zero_offload_is_todays_answer(model, users):
    plain = estimate(model, "rtx-4090", **MODEL | {"concurrency": users})
    o = estimate(model, "rtx-4090", **MODEL | {"concurrency": users}, offload=Offload()).offload
    assert o.tpot_seconds_expected == plain.decode.tpot_seconds_expected
    assert o.headroom_bytes == plain.memory.headroom_bytes and o.fits == plain.fits
    # llama.cpp keeps token_embd in host memory with every layer on the GPU: the embedding, at q4_k_m here
    assert o.host_weight_bytes == parallel.weight_parts(catalog.model(model), "q4_k_m").embedding > 0
    assert o.gpu_weight_bytes == plain.memory.weights_bytes


@settings(max_examples=10, deadline=None)
@given(st.sampled_from(["llama-3.1-8b", "llama-3.1-70b"]), st.floats(20e9, 400e9))
def test_full_offload_is_host_bound(model, bandwidth):
    o = estimate(model, "rtx-4090", **MODEL, offload=Offload(gpu_layers=0, host_bandwidth=bandwidth)).offload
    assert o.gpu_share == 0.0
    assert o.tpot_seconds_expected == pytest.approx(o.host_streamed_bytes / bandwidth, rel=1e-12)


@settings(max_examples=10, deadline=None)
@given(st.sampled_from(off.hosts()), st.integers(1, 4))
def test_decode_never_faster_with_more_on_the_host(name, users):
    options = MODEL | {"concurrency": users}
    times = [estimate("llama-3.1-70b", "rtx-4090", **options, offload=Offload(gpu_layers=g, host=name))
             .offload.tpot_seconds_expected for g in range(81, -1, -4)]
    assert all(b >= a * (1 - 1e-12) for a, b in itertools.pairwise(times))
    assert not any(math.isnan(t) for t in times)


def test_shortlist_keeps_an_offloaded_70b_on_a_24gb_card():
    from gpusizer.serving import SLO, Workload
    from gpusizer.shortlister import shortlist

    w = Workload(rate=0.01, prompt_tokens=1024, output_tokens=256)
    slo = SLO(tpot_p95=1.0)
    plain = shortlist("llama-3.1-70b", w, slo, gpus=["rtx-4090"], weights=["q4_k_m"], engine="llama.cpp",
                      max_gpus=1, simulate=0)
    offloaded = shortlist("llama-3.1-70b", w, slo, gpus=["rtx-4090"], weights=["q4_k_m"], engine="llama.cpp",
                          max_gpus=1, simulate=0, offload=Offload(auto=True))
    assert len(plain) == 0 and len(offloaded) == 1
    # the row decodes at the offloaded step: TPOT p95 at least the unloaded offloaded step (about 345 ms)
    one = estimate("llama-3.1-70b", "rtx-4090", weights="q4_k_m", engine="llama.cpp", context=1280,
                   offload=Offload(auto=True)).offload
    assert offloaded[0].tpot >= 0.9 * one.tpot_seconds_expected


@pytest.mark.parametrize("model", ["llama-3.1-8b", "qwen3-30b-a3b", "gpt-oss-120b", "llama-3.1-70b"])
@pytest.mark.parametrize("gpu", ["rtx-4090", "l40s", "apple-m4-max"])
def test_no_nan_in_an_offload(model, gpu):
    for engine in ("llama.cpp", "vllm"):
        o = estimate(model, gpu, engine=engine, context=4096, offload=Offload(auto=True)).offload
        for name, value in vars(o).items():
            if isinstance(value, float):
                assert math.isfinite(value), (model, gpu, engine, name)
