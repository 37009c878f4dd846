"""Text quantities in, base-unit floats out; the fast path and pint agree."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpusizer import units


@pytest.mark.parametrize(
    ("text", "unit", "expected"),
    [
        ("80 GB", "B", 80e9),  # decimal, as vendors state
        ("79.65 GiB", "B", 79.65 * 2**30),  # binary, as nvidia-smi reports
        ("3.35 TB/s", "B/s", 3.35e12),
        ("989.5 TFLOP/s", "FLOP/s", 989.5e12),
        ("1979 TOP/s", "FLOP/s", 1979e12),
        ("700 W", "W", 700.0),
        ("10.2 kW", "W", 10200.0),
        ("400 Gb/s", "b/s", 400e9),
        (12, "B", 12.0),
    ],
)
def test_parse(text, unit, expected):
    assert units.parse(text, unit) == pytest.approx(expected, rel=1e-12)


def test_parse_falls_back_to_pint_for_other_spellings():
    # 1 TB/s written with words, beyond the fast grammar: pint converts it
    assert units.parse("1 terabyte / second", "B/s") == pytest.approx(1e12)


@pytest.mark.parametrize("text", ["fast", "12 parsecs", "", True])
def test_parse_rejects_garbage(text):
    with pytest.raises(ValueError, match="quantity"):
        units.parse(text, "B")


@given(st.floats(min_value=1e-3, max_value=1e6, allow_nan=False), st.sampled_from(["G", "Gi", "T", "M", ""]))
def test_fast_path_matches_pint(value, prefix):
    text = f"{value!r} {prefix}B"
    via_pint = units.registry().Quantity(text.replace("B", "byte")).to("byte").magnitude
    assert units.parse(text, "B") == pytest.approx(via_pint, rel=1e-12)


@given(st.floats(min_value=1.0, max_value=1e15, allow_nan=False))
def test_quantity_round_trip(value):
    assert units.parse(str(units.quantity(value, "B").to("GiB")), "B") == pytest.approx(value, rel=1e-9)


@pytest.mark.parametrize(("text", "tokens"), [("32k", 32768), ("32K", 32768), ("128k", 131072), ("4096", 4096),
                                              ("1M", 1048576), ("0.5k", 512)])
def test_parse_tokens(text, tokens):
    assert units.parse_tokens(text) == tokens


@pytest.mark.parametrize("text", ["-5", "1.5", "lots", "3.3k"])
def test_parse_tokens_rejects(text):
    with pytest.raises(ValueError, match="token"):
        units.parse_tokens(text)
