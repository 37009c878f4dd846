"""Catalogue tests for ``data/gpus.toml``: schema, provenance, a fingerprint and cited reference values.

The fingerprint (ids in file order, column sums) makes every data edit a visible, reviewed change: update it
in the same commit as the data. Reference values cite the document the catalogue entry was read from.
"""

import datetime
import re

import pytest

import gpusizer
from gpusizer import catalog

TIB = 2.0**30
T = 1e12

EXPECTED_GPU_IDS = (
    # the reference table, in its order
    "rtx-3090", "rtx-4090", "rtx-5090", "rtx-6000-ada", "rtx-pro-6000-bw-ws", "rtx-pro-6000-bw-server",
    "l4", "l40s", "t4", "a10", "a10g", "a100-40gb-sxm", "a100-80gb-pcie", "a100-80gb-sxm", "h100-pcie",
    "h100-sxm", "h100-nvl", "h20", "h200-sxm", "h200-nvl", "gh200-96gb", "gh200-144gb", "b200", "b300",
    "gb200", "gb300", "rubin-vr200", "mi250x", "mi300x", "mi325x", "mi355x", "gaudi3", "apple-m3-max",
    "apple-m4-max", "apple-m3-ultra", "tpu-v5e", "tpu-v6e", "trainium2", "inferentia2",
    # cards added from vendor specifications
    "rtx-a6000", "rtx-3090-ti", "rtx-4080", "rtx-4080-super", "rtx-4070-ti-super", "rtx-4060-ti-16gb",
    "rtx-5080", "rtx-a5000", "a40", "v100-sxm2-32gb", "apple-m1-max", "apple-m1-ultra", "apple-m2-max",
    "apple-m2-ultra", "apple-m4-pro",
    # China-market and older cards (issue 18)
    "h800-sxm", "a800-80gb-sxm", "a800-80gb-pcie", "l20", "l2", "rtx-4090d", "rtx-4090-48gb", "p40",
    "v100-pcie-32gb", "v100-pcie-16gb",
    # older cards buyer guides name (issue 18, 2026-12-05)
    "l40", "a16", "mi210", "mi250",
)  # fmt: skip

EXPECTED_SYSTEM_IDS = (
    "dgx-hgx-h100-8x", "hgx-h200-8x", "hgx-b200-8x", "hgx-b300-8x", "gb200-nvl72", "gb300-nvl72",
    "vera-rubin-nvl144", "amd-mi300x-platform-8x",
)  # fmt: skip

GEFORCE = ("rtx-3090", "rtx-3090-ti", "rtx-4060-ti-16gb", "rtx-4070-ti-super", "rtx-4080", "rtx-4080-super",
           "rtx-4090", "rtx-5080", "rtx-5090", "rtx-4090d", "rtx-4090-48gb")  # fmt: skip


@pytest.fixture(scope="module")
def loaded():
    return catalog.load_gpus()


@pytest.fixture(scope="module")
def gpus(loaded):
    return loaded[0]


@pytest.fixture(scope="module")
def systems(loaded):
    return loaded[1]


# --- schema and provenance ------------------------------------------------------------------------


def test_file_loads_with_expected_counts(gpus, systems):
    assert len(gpus) == 68
    assert len(systems) == 8
    assert len(gpusizer.gpus()) == 68
    assert len(gpusizer.systems()) == 8


def test_ids_in_file_order(gpus, systems):
    assert tuple(gpus) == EXPECTED_GPU_IDS
    assert tuple(systems) == EXPECTED_SYSTEM_IDS


@pytest.mark.parametrize("gpu_id", EXPECTED_GPU_IDS)
def test_id_style(gpu_id):
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", gpu_id)


def test_every_record_has_provenance(gpus, systems):
    for record in (*gpus.values(), *systems.values()):
        assert record.source, record.id
        assert all(isinstance(s, str) and s.strip() for s in record.source), record.id
        assert isinstance(record.checked, datetime.date), record.id
        # compiled and checked on 2026-12-02; re-checked records say when (the five derived tensor rates)
        assert datetime.date(2026, 12, 2) <= record.checked <= datetime.date.today(), record.id
    rechecked = {g.id for g in gpus.values() if g.checked != datetime.date(2026, 12, 2)}
    assert rechecked == {"rtx-3090-ti", "rtx-4080-super", "rtx-4070-ti-super", "rtx-4060-ti-16gb", "rtx-a5000",
                         "rtx-3090", "rtx-4090", "h100-sxm", "h200-sxm",  # torch-visible totals from vLLM logs
                         # FP16-accumulate rates (GeForce) and Apple FP16/FP32 rates, 2026-12-03 (issue 16)
                         "rtx-4080", "rtx-5090", "rtx-5080", "apple-m1-max", "apple-m1-ultra", "apple-m2-max",
                         "apple-m2-ultra", "apple-m3-max", "apple-m3-ultra", "apple-m4-max", "apple-m4-pro",
                         *EXPECTED_GPU_IDS[54:],  # the issue-18 cards, compiled 2026-12-03 and 2026-12-05
                         "h20"}  # re-checked against two more spec pages, 2026-12-05


def test_added_cards_cite_a_url(gpus):
    for gpu_id in EXPECTED_GPU_IDS[39:]:
        assert any(s.startswith("https://") for s in gpus[gpu_id].source), gpu_id


def test_fingerprint(gpus, systems):
    # Count and column sums: any change to capacities, bandwidths or the set of published rates shows here.
    # 235 rates = 194 from the reference table + 28 on the added cards + 13 derived tensor rates (issue 14:
    # FP16/BF16 on the RTX 3090 Ti and A5000, FP16/BF16/FP8 on the 4080 SUPER, 4070 Ti SUPER, 4060 Ti 16GB)
    # + 16 Apple rates (issue 16: FP32 and FP16 on the 8 Apple GPUs; the GeForce fp16_acc16 rates are not in
    # RATE_PRECISIONS) = 251; + 43 on the ten issue-18 cards (5 each on the H800, two A800s, L20, L2; 6 on the
    # RTX 4090 D and 4090 48GB; 2 on the P40 and each V100 PCIe) = 294. Their bandwidths add 12.65 TB/s
    # (3350 + 2039 + 1935 + 864 + 300 + 1008 + 1008 + 346 + 900 + 900 GB/s) and their memory 456 GB.
    # + 17 on the four older cards (6 on the L40, 4 on the A16, 3 on the MI210, 4 on the MI250) = 311; they add
    # 5.864 TB/s (864 + 200 + 1600 + 3200 GB/s) and 256 GB (48 + 16 + 64 + 128).
    assert len(gpus) == 68
    assert sum(g.memory_bandwidth for g in gpus.values()) == pytest.approx(1.460176e14 + 12.65e12 + 5.864e12,
                                                                           rel=1e-12)
    assert round(sum(g.memory for g in gpus.values())) == 5_476_438_953_472 + 456_000_000_000 + 256_000_000_000
    assert sum(1 for g in gpus.values() for r in catalog.RATE_PRECISIONS if getattr(g.dense, r)) == 311
    assert sum(s.gpu_count for s in systems.values()) == 256


def test_systems_name_catalogue_gpus(gpus, systems):
    for record in systems.values():
        assert record.gpu in gpus
        assert record.gpu_count > 0


# --- reference values -----------------------------------------------------------------------------


def test_h100_sxm():
    h100 = gpusizer.gpu("h100-sxm")
    # NVIDIA H100 datasheet: 3.35 TB/s; BF16 1,979 TFLOPS with sparsity -> 989.5 dense.
    assert h100.memory_bandwidth == pytest.approx(3.35e12)
    assert h100.dense.bf16 == pytest.approx(989.5e12)
    # nvidia-smi memory.total 81559 MiB = 79.65 GiB for the nominal 80 GB.
    assert h100.memory == pytest.approx(80e9)
    assert h100.capacity == pytest.approx(79.22 * TIB)  # vllm#12126 total_gpu_memory
    assert h100.interconnect.switched
    assert h100.interconnect.bandwidth == pytest.approx(900e9)


def test_h200_usable_memory():
    # nvidia-smi reports 143771 MiB (140.4 GiB) for the nominal 141 GB (reference gpu-specs-notes.md 1.3).
    h200 = gpusizer.gpu("h200-sxm")
    assert h200.memory_usable == pytest.approx(139.72 * TIB)  # vllm#10702 total_gpu_memory
    assert h200.memory == pytest.approx(141e9)


def test_rtx_4090():
    rtx = gpusizer.gpu("rtx-4090")
    # Ada whitepaper v2.1 Appendix A: FP16 with FP32 accumulate 165.2 dense; FP8 (FP32 acc.) 330.3.
    assert rtx.dense.fp16 == pytest.approx(165.2e12)
    assert rtx.dense.fp8 == pytest.approx(330.3e12)
    assert rtx.interconnect.nvlink_generation is None
    assert rtx.interconnect.bandwidth is None
    # NVIDIA disables PCIe peer-to-peer on GeForce cards.
    assert rtx.interconnect.peer_to_peer is False


def test_b200_fp4():
    # Blackwell datasheet, HGX B200 per GPU: FP4 18 PF sparse -> 9 PF dense (HGX page "144 | 72" for 8 GPUs).
    b200 = gpusizer.gpu("b200")
    assert b200.dense.fp4 == pytest.approx(9e15)
    assert b200.fp4_format.startswith("NVFP4")
    assert b200.native_fp4


def test_gb200_nvl72():
    # NVIDIA GB200 NVL72 product page: 72 Blackwell GPUs, one NVLink Switch domain, 13.4 TB HBM3e.
    rack = gpusizer.system("gb200-nvl72")
    assert rack.gpu == "gb200"
    assert rack.gpu_count == 72
    assert rack.total_memory == pytest.approx(13.4e12)
    gb200 = gpusizer.gpu(rack.gpu)
    assert gb200.interconnect.switched
    assert gb200.scale_up_domain == 72


def test_mi300x():
    # AMD MI300X product page: 192 GB HBM3 at 5.3 TB/s; dense FP16 1307.4 TFLOPS; 7 x 128 GB/s Infinity Fabric.
    mi300x = gpusizer.gpu("mi300x")
    assert mi300x.memory == pytest.approx(192e9)
    assert mi300x.memory_bandwidth == pytest.approx(5.3e12)
    assert mi300x.dense.fp16 == pytest.approx(1307.4e12)
    assert mi300x.interconnect.bandwidth == pytest.approx(896e9)
    assert not mi300x.interconnect.switched


def test_gib_capacities():
    # AWS Neuron docs state Trainium2 and Inferentia2 memory in GiB.
    assert gpusizer.gpu("trainium2").memory == pytest.approx(96 * TIB)
    assert gpusizer.gpu("inferentia2").memory == pytest.approx(32 * TIB)


def test_system_quantities():
    # DGX H100: 640 GB, 8 x 3.35 TB/s, 900 GB/s NVLink per GPU, 400 Gb/s ConnectX-7 per GPU, ~10.2 kW.
    dgx = gpusizer.system("dgx-hgx-h100-8x")
    assert dgx.total_memory == pytest.approx(640e9)
    assert dgx.aggregate_bandwidth == pytest.approx(26.8e12)
    assert dgx.scale_up_bandwidth == pytest.approx(900e9)
    assert dgx.scale_out_bandwidth == pytest.approx(400e9)
    assert dgx.power == pytest.approx(10.2e3)


# Dense rates exactly as the reference table gives them ([T]FLOP/s or [T]OP/s); None where it has none.
DENSE_FROM_REFERENCE = [
    ("t4", "fp16", 65), ("t4", "int8", 130), ("t4", "bf16", None), ("t4", "tf32", None),
    ("a10g", "fp16", 70), ("a10g", "fp32", None), ("a10g", "bf16", None),
    ("rtx-pro-6000-bw-server", "fp32", None), ("rtx-pro-6000-bw-server", "fp4", 1871.2),
    ("rtx-5090", "fp4", 1676), ("rtx-5090", "fp6", None),
    ("b300", "int8", 153.5), ("b300", "fp4", 14000), ("gb300", "fp4", 15000),
    ("rubin-vr200", "fp4", 35000), ("rubin-vr200", "fp32", None),
    ("mi250x", "fp16", 383), ("mi250x", "tf32", None), ("mi355x", "fp6", 10066.4), ("mi355x", "tf32", None),
    ("gaudi3", "bf16", 1835), ("gaudi3", "fp8", 1835), ("gaudi3", "fp16", None),
    ("tpu-v5e", "int8", 393), ("tpu-v6e", "bf16", 918), ("trainium2", "tf32", 667), ("trainium2", "fp8", 1299),
    ("inferentia2", "fp32", 47.5), ("gh200-96gb", "bf16", 990), ("h20", "fp8", 296),
    ("apple-m3-max", "fp8", None), ("apple-m3-ultra", "bf16", None),  # Apple FP32/FP16: issue 16, derived
]  # fmt: skip


@pytest.mark.parametrize(("gpu_id", "precision", "tera"), DENSE_FROM_REFERENCE)
def test_dense_rate_as_in_reference(gpu_id, precision, tera):
    rate = getattr(gpusizer.gpu(gpu_id).dense, precision)
    if tera is None:
        assert rate is None
    else:
        assert rate == pytest.approx(tera * T)


# Added cards: values from the vendor documents named in each entry's `source`.
ADDED_CARDS = [
    # GA102 whitepaper v2 Appendix C: RTX A6000 FP16/BF16 (FP32 acc.) 154.8 dense; 768 GB/s.
    ("rtx-a6000", 48e9, 768e9, "bf16", 154.8),
    # NVIDIA A40 datasheet: BF16 149.7 | 299.4*, INT8 299.3 | 598.6*; 696 GB/s.
    ("a40", 48e9, 696e9, "int8", 299.3),
    # Ada whitepaper Appendix A: RTX 4080 FP16 with FP32 accumulate 97.5 dense; 716.8 GB/s.
    ("rtx-4080", 16e9, 716.8e9, "fp16", 97.5),
    # RTX Blackwell whitepaper Appendix A: RTX 5080 FP4 900.4 dense (1801 AI TOPS sparse); 960 GB/s.
    ("rtx-5080", 16e9, 960e9, "fp4", 900.4),
    # V100 datasheet (SXM2): 32 GB HBM2, 900 GB/s, tensor 125 TFLOPS (no sparsity on Volta).
    ("v100-sxm2-32gb", 32e9, 900e9, "fp16", 125),
    # RTX A5000 datasheet: 24 GB, 768 GB/s, FP32 27.8 TFLOPS.
    ("rtx-a5000", 24e9, 768e9, "fp32", 27.8),
    # Apple newsroom: M2 Ultra up to 192 GB at 800 GB/s; Apple publishes no FLOPS: no BF16 rate recorded;
    # FP32 of the M1 Max from philipturner/metal-benchmarks dc2adc6 (GOPS32 10617 = 32 x 256 x 1.296 GHz).
    ("apple-m2-ultra", 192e9, 800e9, "bf16", None),
    ("apple-m1-max", 64e9, 400e9, "fp32", 10.617),
]  # fmt: skip


@pytest.mark.parametrize(("gpu_id", "memory", "bandwidth", "precision", "tera"), ADDED_CARDS)
def test_added_cards(gpu_id, memory, bandwidth, precision, tera):
    record = gpusizer.gpu(gpu_id)
    assert record.memory == pytest.approx(memory)
    assert record.memory_bandwidth == pytest.approx(bandwidth)
    rate = getattr(record.dense, precision)
    assert rate is None if tera is None else rate == pytest.approx(tera * T)


def test_apple_parts_carry_only_their_shader_alu_rates(gpus):
    # no tensor cores: FP16 runs at the FP32 rate on the shader ALUs (philipturner/metal-benchmarks), and
    # no lower precision is faster, so only fp32 and fp16 are recorded
    for record in gpus.values():
        if record.vendor == "Apple":
            rates = {r for r in catalog.RATE_PRECISIONS if getattr(record.dense, r) is not None}
            assert rates == {"fp32", "fp16"} and record.dense.fp16 == record.dense.fp32, record.id
            assert record.interconnect.peer_to_peer is None


@pytest.mark.parametrize("gpu_id", GEFORCE)
def test_geforce_has_no_pcie_peer_to_peer(gpu_id):
    assert gpusizer.gpu(gpu_id).interconnect.peer_to_peer is False


# --- lookups --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "gpu_id"),
    [
        ("h200", "h200-sxm"),
        ("H200", "h200-sxm"),
        ("4090", "rtx-4090"),
        ("RTX 4090", "rtx-4090"),
        ("H100", "h100-sxm"),
        ("h100", "h100-sxm"),
        ("  h100  ", "h100-sxm"),
        ("A6000", "rtx-a6000"),
        ("rtx 3090 ti", "rtx-3090-ti"),
        ("M2 Ultra", "apple-m2-ultra"),
        ("MI300X", "mi300x"),
        ("GeForce RTX 5080", "rtx-5080"),
    ],
)
def test_alias_lookup_is_case_insensitive(name, gpu_id):
    assert gpusizer.gpu(name).id == gpu_id


def test_lookup_returns_records_unchanged():
    record = gpusizer.gpu("b200")
    assert gpusizer.gpu(record) is record


@pytest.mark.parametrize("name", ["h10", "rtx4090x"])
def test_unknown_gpu_names_close_ids(name, gpus):
    with pytest.raises(KeyError) as error:
        gpusizer.gpu(name)
    message = str(error.value)
    assert name in message
    assert "did you mean" in message
    assert any(gpu_id in message for gpu_id in gpus)


def test_unknown_gpu_suggests_expected_ids():
    with pytest.raises(KeyError, match="rtx-4090"):
        gpusizer.gpu("rtx4090x")
    with pytest.raises(KeyError, match="h20"):
        gpusizer.gpu("h10")


def test_unknown_system_raises():
    with pytest.raises(KeyError, match="gb200-nvl72"):
        gpusizer.system("gb200-nvl7")


def test_every_name_and_alias_is_unique(gpus, systems):
    owner: dict[str, str] = {}
    for record in gpus.values():
        for name in {catalog.normalise(n) for n in (record.id, record.name, *record.aliases)}:
            assert name not in owner, f"{name!r} names both {owner[name]} and {record.id}"
            owner[name] = record.id
    for record in systems.values():
        assert catalog.normalise(record.id) not in owner, record.id


def test_every_alias_resolves_to_its_own_record(gpus):
    # but the names catalog.AMBIGUOUS refuses: "A100" is an alias of the 40 GB card in data/gpus.toml, and
    # the catalogue also has two 80 GB A100s, so the lookup asks instead of guessing
    for record in gpus.values():
        for name in (record.id, record.name, *record.aliases):
            if catalog.normalise(name) in catalog.AMBIGUOUS:
                with pytest.raises(KeyError, match=r"ambiguous.*a100-40gb-sxm.*a100-80gb-sxm"):
                    gpusizer.gpu(name)
            else:
                assert gpusizer.gpu(name).id == record.id


def test_every_bundled_record_validates_and_is_reachable():
    # every table of the bundled files becomes a validated, frozen record that the lookups return
    import tomllib

    from gpusizer import datafiles, records

    for name, kinds in (("gpus.toml", ("gpu", "system")), ("models.toml", ("model",))):
        raw = tomllib.loads(datafiles.read_text(datafiles.bundled(name)))
        for kind in kinds:
            cls = {"gpu": records.GPU, "system": records.System, "model": records.Model}[kind]
            reachable = {"gpu": catalog.gpus, "system": catalog.systems, "model": catalog.models}[kind]()
            assert [r.id for r in reachable] == [t["id"] for t in raw[kind]], kind
            for table, record in zip(raw[kind], reachable, strict=True):
                assert isinstance(record, cls)
                assert cls.model_validate(table) == record
                assert getattr(catalog, kind)(record.id) is record
