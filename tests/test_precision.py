"""The bytes-per-weight table: exact fractions from each format's block layout."""

import pytest

from gpusizer import precision


@pytest.mark.parametrize(
    ("name", "bits"),
    [
        ("bf16", 16),
        ("fp8", 8 + 32 / (128 * 128)),  # E4M3 + an FP32 scale per 128x128 block (DeepSeek-V3)
        ("int4", 4 + (16 + 4) / 128),  # AWQ/GPTQ g128: fp16 scale + 4-bit zero per 128 weights = 4.15625
        ("int4-g32", 4.5),  # compressed-tensors symmetric g32 (Kimi K2-Thinking): BF16 scale per 32, no zeros
        ("nvfp4", 4.5),  # E2M1 + E4M3 scale per 16
        ("mxfp4", 4.25),  # E2M1 + E8M0 scale per 32 (gpt-oss model card: "4.25 bits per parameter")
        ("q8_0", 8.5),  # 34-byte block of 32
        ("q4_0", 4.5),  # 18-byte block of 32
        ("q4_k_m", 4.84),  # llama.cpp quantize README, Llama 2 7B
        ("q2_k", 3.35),
    ],
)
def test_bits(name, bits):
    assert precision.precision(name).bits == pytest.approx(bits, rel=1e-12)


def test_aliases_and_case():
    assert precision.precision("BF16").name == "bf16"
    assert precision.precision("awq").name == "int4"
    assert precision.precision("Q4_K_M").name == "q4_k_m"


def test_unknown_precision_names_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown precision 'fp5'.*bf16"):
        precision.precision("fp5")
    with pytest.raises(ValueError, match="kv_cache"):
        precision.kv_bytes_per_element("int3")


def test_every_precision_has_a_source_and_lower_precision_is_smaller():
    table = precision.PRECISIONS
    assert all(p.source for p in table.values())
    ordered = ["fp32", "bf16", "q8_0", "fp8", "q6_k", "q5_k_m", "q4_k_m", "nvfp4", "mxfp4", "int4", "q3_k_m", "q2_k"]
    bits = [table[name].bits for name in ordered]
    assert bits == sorted(bits, reverse=True)


def test_weight_only_formats_compute_in_16_bit():
    assert precision.precision("int4").weight_only and precision.precision("int4").compute == "bf16"
    assert not precision.precision("fp8").weight_only


@pytest.mark.parametrize("name", list(precision.PRECISIONS))
def test_table_entries_built_without_validation_pass_it_unchanged(name):
    # PRECISIONS skips validation at import (model_construct); validating each entry must change nothing,
    # the Python type of every field included.
    p = precision.PRECISIONS[name]
    again = precision.Precision.model_validate(p.model_dump())
    assert again == p
    assert {k: type(v) for k, v in dict(again).items()} == {k: type(v) for k, v in dict(p).items()}
