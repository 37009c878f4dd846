"""Your own hardware: GPU overrides, MIG slices (NVIDIA MIG user guide fractions) and --gpu-file."""

import json
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusizer import catalog, cli, estimate, hardware

H100 = catalog.gpu("h100-sxm")

GPU_FILE = """
[[gpu]]
id = "my-4090-48g"
vendor = "NVIDIA"
name = "RTX 4090 48 GB (modded)"
memory = "48 GB"
memory_bandwidth = "1.008 TB/s"
source = ["my own card"]
checked = 2026-12-03
[gpu.dense]
bf16 = "165.2 TFLOP/s"
[gpu.interconnect]
description = "PCIe 4.0 x16"
pcie_generation = 4
"""


def test_mig_3g40gb_of_h100_by_hand():
    # MIG user guide: 3g is 4/8 of the memory and 3/7 of the SMs. 80 GB x 1/2 = 40 GB; 3.35 TB/s x 1/2
    # (bandwidth follows memory: the stated assumption); 989.5 TFLOP/s x 3/7 = 424.07 TFLOP/s; L2 50 MB x 1/2.
    s = catalog.gpu("h100-sxm:mig=3g.40gb")
    assert s.memory == pytest.approx(40e9)
    assert s.memory_bandwidth == pytest.approx(1.675e12)
    assert s.dense.bf16 == pytest.approx(989.5e12 * 3 / 7)
    assert s.l2_cache == pytest.approx(25e6)
    assert s.scale_up_domain == 1 and s.tdp is None
    assert s.id == "h100-sxm:mig=3g.40gb" and hardware.MIG_GUIDE in s.source


def test_mig_profiles_of_other_gpus_by_hand():
    # A100 40GB 1g.5gb: 1/8 of 40 GB = 5 GB, 1/7 of the SMs; RTX PRO 6000 2g.48gb: 2/4 of 96 GB; B200 7g.180gb: all.
    a = catalog.gpu("a100-40gb-sxm:mig=1g.5gb")
    assert a.memory == pytest.approx(5e9)
    assert a.dense.bf16 == pytest.approx(catalog.gpu("a100-40gb-sxm").dense.bf16 / 7)
    assert catalog.gpu("rtx-pro-6000-bw-ws:mig=2g.48gb").memory == pytest.approx(48e9)
    whole = catalog.gpu("b200:mig=7g.180gb")
    assert whole.memory == pytest.approx(180e9) and whole.dense.fp8 == pytest.approx(catalog.gpu("b200").dense.fp8)
    assert hardware.MIG_PROFILES["h200-sxm"]["1g.35gb"] == (Fraction(1, 7), Fraction(2, 8))


def test_a_slice_too_small_does_not_fit():
    # Llama-3.1-8B holds 16.06 GB of BF16 weights; 1g.10gb is 80 GB / 8 = 10 GB.
    assert not estimate("llama-3.1-8b", "h100-sxm:mig=1g.10gb").fits
    assert estimate("llama-3.1-8b", "h100-sxm:mig=3g.40gb").fits


def test_override_memory_by_hand():
    g = catalog.gpu("rtx-4090:memory=48GB")
    base = catalog.gpu("rtx-4090")
    assert g.memory == 48e9 and g.memory_usable is None and g.capacity == 48e9  # driver figure dropped
    assert g.memory_bandwidth == base.memory_bandwidth and g.dense == base.dense
    assert catalog.gpu_with("rtx-4090", memory="48GB") == g
    assert catalog.gpu("rtx-4090:bf16=200TFLOP/s+tdp=450W").dense.bf16 == 2e14
    assert catalog.gpu_with("h100-sxm", mig="3g.40gb") == catalog.gpu("h100-sxm:mig=3g.40gb")
    # KV of Llama-3.1-8B: 2 x 32 layers x 8 heads x 128 x 2 B = 131,072 B per token; 32k x 2 = 8.59 GB, plus
    # 16.06 GB of weights = 24.65 GB: above 0.9 x 24 GB, below 0.9 x 48 GB = 43.2 GB
    assert estimate("llama-3.1-8b", "rtx-4090:memory=48GB", context=32768, concurrency=2).fits
    assert not estimate("llama-3.1-8b", "rtx-4090", context=32768, concurrency=2).fits


def test_unknown_fields_and_profiles_are_refused_by_name():
    with pytest.raises(ValueError, match="unknown field 'memroy'; did you mean memory"):
        catalog.gpu("rtx-4090:memroy=48GB")
    with pytest.raises(ValueError, match="memory"):
        catalog.gpu("rtx-4090:memory=lots")
    with pytest.raises(ValueError, match="field=value"):
        catalog.gpu("rtx-4090:memory")
    with pytest.raises(KeyError, match=r"1g\.10gb, 1g\.20gb"):
        catalog.gpu("h100-sxm:mig=9g.1gb")
    with pytest.raises(KeyError, match="no MIG profiles"):
        catalog.gpu("rtx-4090:mig=1g.5gb")
    with pytest.raises(ValueError, match="at least one field"):
        catalog.gpu_with("rtx-4090")


def test_gpu_file_in_python_and_from_the_cli(tmp_path, capsys):
    path = tmp_path / "my-gpus.toml"
    path.write_text(GPU_FILE, encoding="utf-8")
    with catalog.using_gpus(path) as records:
        assert [r.id for r in records] == ["my-4090-48g"]
        assert catalog.gpu("my-4090-48g").capacity == 48e9
        assert catalog.gpus()[-1].id == "my-4090-48g"
    with pytest.raises(KeyError):
        catalog.gpu("my-4090-48g")  # only inside the block
    assert cli.main(["fit", "llama-3.1-8b", "my-4090-48g", "--gpu-file", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["gpu"] == "my-4090-48g" and data["memory"]["capacity_bytes"] == 48_000_000_000


def test_gpu_file_errors_name_the_field(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text(GPU_FILE.replace('memory_bandwidth = "1.008 TB/s"\n', 'memroy = "1"\n'), encoding="utf-8")
    assert cli.main(["fit", "llama-3.1-8b", "my-4090-48g", "--gpu-file", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "gpu 1 ('my-4090-48g')" in err
    assert "memory_bandwidth: Field required" in err and "memroy: Extra inputs are not permitted" in err
    other = tmp_path / "other.toml"
    other.write_text("[[model]]\nid = 'x'\n", encoding="utf-8")
    with pytest.raises(ValueError, match="unknown table 'model'"):
        with catalog.using_gpus(other):
            pass
    assert cli.main(["fit", "llama-3.1-8b", "h100", "--gpu-file", str(tmp_path / "missing.toml")]) == 1


def test_custom_gpus_work_in_every_command(capsys):
    for argv in (["fit", "llama-3.1-8b", "h100-sxm:mig=3g.40gb"],
                 ["layouts", "llama-3.1-8b", "rtx-4090:memory=48GB", "--gpus", "2"],
                 ["compare", "llama-3.1-8b", "rtx-4090:memory=48GB", "--engines", "vllm,llama.cpp"],
                 ["curve", "llama-3.1-8b", "h100-sxm:mig=3g.40gb", "--concurrency", "1,4"]):
        assert cli.main(argv) == 0, argv
        assert capsys.readouterr().out.strip()
    assert cli.main(["fit", "llama-3.1-8b", "rtx-4090:memroy=48GB"]) == 2
    assert "did you mean memory" in capsys.readouterr().err


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([(g, p) for g in hardware.MIG_PROFILES for p in hardware.mig_profiles(g)]))
def test_a_slice_never_exceeds_its_gpu(case):
    gpu_id, profile = case
    base, s = catalog.gpu(gpu_id), catalog.gpu(f"{gpu_id}:mig={profile}")
    compute, memory = hardware.MIG_PROFILES[gpu_id][profile]
    assert s.memory == pytest.approx(base.memory * float(memory)) and s.memory <= base.memory
    assert s.memory_bandwidth <= base.memory_bandwidth
    for precision, rate in base.dense.model_dump().items():
        if rate is not None:
            assert getattr(s.dense, precision) == pytest.approx(rate * float(compute))
    assert f"{profile.split('.')[1]}" in profile  # the name carries the memory in GB
    assert abs(float(profile.split(".")[1].removesuffix("gb")) - s.memory / 1e9) <= 1.0
