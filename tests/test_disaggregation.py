"""Disaggregated prefill and decode (``gpusizer.serving.disaggregation``, ``kv_transfer``): hand-derived values,
physical invariants (hypothesis), the ratio search, the CLI, and a public measurement."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusizer.cli import main
from gpusizer.serving import (
    SLO,
    Workload,
    disaggregated,
    disaggregation_ratio,
    exposed_transfer_seconds,
    kv_link,
    kv_transfer_bytes,
    step_model,
)
from gpusizer.serving.step_table import marginal_prefill_seconds

MIB = 2**20


def test_kv_bytes_of_a_4096_token_prompt_llama_8b():
    # 32 layers x 2 (K, V) x 8 KV heads x 128 dims x 2 B (bf16) = 131072 B/token; x 4096 = 512 MiB
    assert kv_transfer_bytes("llama-3.1-8b", 4096) == 4096 * 131072 == 512 * MIB
    # TP2 splits the 8 KV heads: each GPU holds and sends 4 of them, 256 MiB
    assert kv_transfer_bytes("llama-3.1-8b", 4096, layout="tp2") == 256 * MIB
    # an fp8 cache halves it
    assert kv_transfer_bytes("llama-3.1-8b", 4096, kv_cache="fp8") == 256 * MIB


def test_kv_bytes_of_an_mla_latent_are_held_whole_by_every_rank():
    # DeepSeek-V3: 61 MLA layers x (512 latent + 64 rotary key) x 2 B = 70272 B/token, replicated on each TP rank
    per_token = 61 * (512 + 64) * 2
    assert kv_transfer_bytes("deepseek-v3", 4096, kv_cache="bf16") == 4096 * per_token
    assert kv_transfer_bytes("deepseek-v3", 4096, kv_cache="bf16", layout="tp8") == 4096 * per_token


def test_transfer_of_512_mib_over_50_gbps():
    # 536870912 B / 50e9 B/s = 10.737 ms, plus the latency of the one send
    assert exposed_transfer_seconds(512 * MIB, 50e9, 0.0) == pytest.approx(10.737e-3, abs=1e-6)
    assert exposed_transfer_seconds(512 * MIB, 50e9, 20e-6) == pytest.approx(10.757e-3, abs=1e-6)


def test_layerwise_transfer_hidden_behind_a_long_prefill_and_not_behind_a_short_one():
    # 32 layers: 16 MiB per layer = 0.3355 ms at 50 GB/s. A 0.3 s prefill (9.4 ms a layer) hides all but the
    # last layer's send; a 3.2 ms prefill (0.1 ms a layer) hides 0.1 ms of each of 31 sends:
    # 0.3355 + 31 x (0.3355 - 0.1) = 7.64 ms
    layer = 16 * MIB / 50e9
    assert exposed_transfer_seconds(512 * MIB, 50e9, 0.0, 0.3, 32) == pytest.approx(layer)
    assert exposed_transfer_seconds(512 * MIB, 50e9, 0.0, 3.2e-3, 32) == pytest.approx(layer + 31 * (layer - 1e-4))


def test_links_of_the_catalogue():
    rdma = kv_link("rdma-400g", "h100-sxm")
    # 400 Gb/s ConnectX-7 = 50 GB/s line rate, 0.9 of it achieved (scale-out class, DeepEP's 43-47 GB/s)
    assert (rdma.kind, rdma.bandwidth_ceiling, rdma.bandwidth) == ("scale-out", 50e9, pytest.approx(45e9))
    assert kv_link("ib-800g", "h100-sxm").bandwidth_ceiling == 100e9
    assert kv_link("auto", "h100-sxm").bandwidth_ceiling == 50e9  # the interconnect table's default NIC
    nvlink = kv_link("nvlink", "h100-sxm")
    # NVLink 4: 900 GB/s both directions, 450 GB/s one way, 0.8 of it (fitted fabric 'nvlink')
    assert (nvlink.kind, nvlink.bandwidth_ceiling, nvlink.bandwidth) == ("nvlink-switch", 450e9, pytest.approx(360e9))
    assert nvlink.latency > nvlink.latency_ceiling > 0
    given_link = kv_link("50GB/s", "h100-sxm", latency=0.0)
    assert (given_link.bandwidth, given_link.latency) == (50e9, 0.0)
    with pytest.raises(ValueError, match="link: rtx-4090 has no NVLink"):
        kv_link("nvlink", "rtx-4090")
    with pytest.raises(ValueError, match="link: one of"):
        kv_link("carrier-pigeon", "h100-sxm")


@settings(max_examples=60, deadline=None)
@given(st.floats(1e3, 1e11), st.floats(1.01, 10), st.floats(1e8, 1e12), st.floats(0, 1e-3), st.floats(0, 1.0),
       st.integers(1, 128))
def test_transfer_grows_with_bytes_and_falls_with_bandwidth(size, factor, bandwidth, latency, prefill, layers):
    base = exposed_transfer_seconds(size, bandwidth, latency, prefill, layers)
    assert exposed_transfer_seconds(size * factor, bandwidth, latency, prefill, layers) >= base
    assert exposed_transfer_seconds(size, bandwidth * factor, latency, prefill, layers) <= base
    # overlap never makes it worse than sending the whole cache afterwards, and never hides the last layer
    whole = exposed_transfer_seconds(size, bandwidth, latency)
    assert base <= whole * (1 + 1e-12) + layers * latency
    assert base >= size / bandwidth / layers * (1 - 1e-12)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 200_000), st.integers(1, 50_000), st.sampled_from(["tp1", "tp2", "tp4"]))
def test_kv_bytes_grow_with_the_prompt_and_shrink_with_tensor_parallel_shards(prompt, more, layout):
    # llama-3.1-8b has 8 KV heads, so TP up to 8 shards them: bytes per GPU fall as 1/t
    base = kv_transfer_bytes("llama-3.1-8b", prompt, layout=layout)
    assert kv_transfer_bytes("llama-3.1-8b", prompt + more, layout=layout) >= base > 0
    assert kv_transfer_bytes("llama-3.1-8b", prompt) == pytest.approx(base * int(layout[2:]))


@pytest.fixture(scope="module")
def deployment():
    w = Workload(rate=4, prompt_tokens=2048, output_tokens=256)
    return disaggregated("llama-3.1-8b", "h100-sxm", workload=w, slo=SLO(ttft_p95=1.0, tpot_p95=0.03),
                         prefill_gpus=1, decode_gpus=3, link="rdma-400g")


def test_deployment_record(deployment):
    d = deployment
    assert (d.name, d.gpus, d.prefill.instances, d.decode.instances) == ("1p3d", 4, 1, 3)
    # 2048 tokens x 131072 B = 256 MiB per request over 45 GB/s + 11 us: 5.98 ms
    assert d.transfer.bytes_per_gpu == 256 * MIB
    assert d.transfer.seconds == pytest.approx(256 * MIB / 45e9 + d.transfer.link.latency)
    assert d.transfer.utilisation == pytest.approx(4 * d.transfer.seconds)
    assert d.prefill.rate_per_instance == 4 and d.decode.rate_per_instance == pytest.approx(4 / 3)
    # ceilings below the expected values; quantiles ordered
    assert d.ttft_ceiling.p50 < d.ttft.p50 < d.ttft.p95 < d.ttft.p99
    assert d.tpot_ceiling.p50 < d.tpot.p50 <= d.tpot.p95
    assert d.capacity_ceiling > d.capacity > d.workload.rate
    assert d.capacity <= min(d.prefill.max_rate, d.decode.max_rate) * 1.01
    data = d.to_dict()
    assert data["transfer"]["link"]["name"] == "rdma-400g" and data["aggregated"]["gpus"] == 4


def test_capacity_is_the_edge_of_the_slo(deployment):
    d = deployment
    for factor, meets in ((0.98, True), (1.03, False)):
        at = disaggregated("llama-3.1-8b", "h100-sxm", workload=d.workload.at(d.capacity * factor), prefill_gpus=1,
                           decode_gpus=3, link="rdma-400g", compare=False)
        assert (at.ttft.p95 <= 1.0 and at.tpot.p95 <= 0.03) is meets


def test_prefill_pool_is_distserve_m_d_1_and_ttft_adds_its_parts():
    # A prompt that fills vLLM's whole 8192-token budget leaves no room for a second one in its step, and a prefill
    # instance has no decodes: its TTFT is M/D/1, DistServe's prefill-instance form (arXiv:2401.09670 section 3.1,
    # docs/methods.md): D + R D^2 / (2 (1 - R D)) with D the prefill time and R the instance's rate.
    w = Workload(rate=2.0, prompt_tokens=8192, output_tokens=128)
    d = disaggregated("llama-3.1-8b", "h100-sxm", workload=w, prefill_gpus=2, decode_gpus=2, compare=False)
    step = step_model("llama-3.1-8b", "h100-sxm", context=8193, max_prompt=131072)  # the grid disaggregated uses
    service = float(marginal_prefill_seconds(step, np.array([8192.0]), 0.0)[0])
    rate = 1.0  # 2 req/s over two prefill instances
    assert d.prefill.ttft_mean == pytest.approx(service + rate * service**2 / (2 * (1 - rate * service)), rel=1e-9)
    assert d.ttft.mean == pytest.approx(d.prefill.ttft_mean + d.transfer.exposed_seconds + d.decode.ttft_mean)
    # the decode pool's part is about one decode step (the recomputed last block rides with the batch)
    assert 0 < d.decode.ttft_mean < 3 * d.tpot.mean


def test_comparison_with_the_aggregated_deployment(deployment):
    a = deployment.aggregated
    # the same 4 GPUs as four TP1 replicas (serving.throughput), and the ratio of the two capacities
    assert (a.layout, a.gpus) == ("tp1xdp4", 4)
    assert a.speedup == pytest.approx(deployment.capacity / a.requests_per_second)
    assert a.winner == ("disaggregated" if a.speedup > 1.02 else "aggregated" if a.speedup < 0.98 else "tie")


def test_bad_pool_sizes_name_the_parameter():
    w = Workload(rate=1, prompt_tokens=1024, output_tokens=128)
    with pytest.raises(ValueError, match="prefill_gpus: 3 GPUs is not a whole number of tp2"):
        disaggregated("llama-3.1-8b", "h100-sxm", workload=w, prefill_gpus=3, prefill_layout="tp2")


@settings(max_examples=8, deadline=None)
@given(st.sampled_from([512, 2048, 8192]), st.floats(0.05, 3.0))
def test_ttft_with_an_infinitely_fast_link_is_at_least_the_prefill(prompt, rate):
    w = Workload(rate=rate, prompt_tokens=prompt, output_tokens=128)
    d = disaggregated("llama-3.1-8b", "h100-sxm", workload=w, link=kv_link("1e18B/s", "h100-sxm", latency=0.0),
                      compare=False)
    step = step_model("llama-3.1-8b", "h100-sxm", context=prompt + 1, max_prompt=max(4 * (prompt + 64), 131072))
    prefill = float(marginal_prefill_seconds(step, np.array([float(prompt)]), 0.0)[0])
    assert d.transfer.exposed_seconds < 1e-6
    assert d.ttft.mean >= prefill
    assert d.ttft_ceiling.mean <= d.ttft.mean


def test_ratio_search_returns_the_fewest_gpus_that_meet_the_slo():
    w = Workload(rate=12, prompt_tokens=4096, output_tokens=256)
    slo = SLO(ttft_p95=0.6, tpot_p95=0.012)
    best = disaggregation_ratio("llama-3.1-8b", "h100-sxm", workload=w, slo=slo, max_instances=4)
    assert best.feasible and best.searched == 16

    def meets(x: int, y: int) -> bool:
        d = disaggregated("llama-3.1-8b", "h100-sxm", workload=w, prefill_gpus=x, decode_gpus=y, compare=False)
        return d.stable and d.ttft.p95 <= slo.ttft_p95 and d.tpot.p95 <= slo.tpot_p95

    assert meets(best.prefill_instances, best.decode_instances)
    for x in range(1, 5):
        for y in range(1, 5):
            if x + y < best.gpus:
                assert not meets(x, y), (x, y)
    # an impossible target is an answer, not an error
    none = disaggregation_ratio("llama-3.1-8b", "h100-sxm", workload=w, slo=SLO(ttft_p95=1e-3), max_instances=2)
    assert not none.feasible and none.name == "" and math.isinf(none.ttft)


def test_cli_text_and_json(capsys):
    args = ["disagg", "llama-3.1-8b", "h100", "--pd", "1p3d", "--kv-link", "rdma-400g", "--prompt", "2k",
            "--output-tokens", "256", "--rate", "4", "--ttft-p95", "1s", "--tpot-p95", "30ms"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "1p3d" in out and "KV transfer  256.0 MiB per GPU over rdma-400g" in out and "wins" in out
    assert main([*args, "--json", "--search-ratio", "--max-instances", "4"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["transfer"]["bytes_per_gpu"] == 256 * MIB and data["ratio_search"]["feasible"] is True
    assert data["name"] == data["ratio_search"]["name"]
    assert main([*args, "--json", "--max-seqs", "8", "--no-compare"]) == 0
    capped = json.loads(capsys.readouterr().out)
    assert capped["aggregated"] is None and capped["decode"]["batch"] <= 8
    with pytest.raises(SystemExit) as bad:
        main(["disagg", "llama-3.1-8b", "h100", "--pd", "3x"])
    assert bad.value.code == 2 and "expected xPyD such as 1p3d" in capsys.readouterr().err


def test_transfer_against_mooncake_transfer_engine():
    # kvcache-ai/Mooncake@3a8593f5d240b44abf24e17de6e405512067c1ba:README.md ("Performance"): the KV cache of
    # 128k tokens of LLaMA3-70B (about 40 GB) moves at up to 87 GB/s over 4 x 200 Gbps RoCE and 190 GB/s over
    # 8 x 400 Gbps RoCE with the Mooncake Transfer Engine.
    # 131072 tokens x 80 layers x 2 x 8 KV heads x 128 x 2 B = 40 GiB
    size = kv_transfer_bytes("llama-3.1-70b", 131072)
    assert size == 131072 * 80 * 2 * 8 * 128 * 2 == 40 * 2**30
    four = kv_link("roce-800g", "h100-sxm")  # 4 x 200 Gb/s: 100 GB/s line rate, 0.9 achieved
    measured = size / 87e9
    assert exposed_transfer_seconds(size, four.bandwidth, four.latency) == pytest.approx(measured, rel=0.05)
    # 8 x 400 Gb/s: 400 GB/s line rate; the engine reaches 190 GB/s, so 0.9 of the line rate overestimates the
    # bandwidth 1.9x there (docs/disaggregation.md#against-public-measurements); a measured 190GB/s link is exact
    eight = kv_link("roce-3200g", "h100-sxm")
    assert eight.bandwidth / 190e9 == pytest.approx(1.89, abs=0.01)
    assert exposed_transfer_seconds(size, kv_link("190GB/s", "h100-sxm", latency=0).bandwidth, 0) == size / 190e9
