"""Roofline: hand values and the invariants of a max of two bounds."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays, mutually_broadcastable_shapes

from gpusizer import roofline

positive = st.floats(1e-3, 1e15, allow_nan=False, allow_infinity=False)


def test_ridge_point_of_h100_bf16():
    # H100 SXM datasheet: 989.5 TFLOP/s dense BF16 over 3.35 TB/s = 295 FLOP/B
    assert roofline.ridge_point(989.5e12, 3.35e12) == pytest.approx(295.37, rel=1e-4)


def test_gemm_and_attention_flops_hand_values():
    # Llama 3.1 8B: 6.98e9 linear weights -> 2 FLOP per weight and token
    assert roofline.gemm_flops(3, 6.98e9) == pytest.approx(6 * 6.98e9)
    # GQA/MHA: 4 n_h d_h per (query, key) pair; MLA decode (absorbed): 2 n_h (576 + 512)
    assert roofline.attention_flops(10, 32, 128, 128) == 4 * 32 * 128 * 10
    assert roofline.attention_flops(1, 128, 576, 512) == 2 * 128 * (576 + 512)


def test_memory_bound_time_is_bytes_over_bandwidth():
    assert roofline.roofline_time(1.0, 16e9, 1e15, 2e12) == pytest.approx(8e-3)
    assert roofline.roofline_time(1e15, 1.0, 1e15, 2e12) == pytest.approx(1.0)


def test_unpublished_peak_keeps_a_lower_bound_on_time():
    assert roofline.roofline_time(1e15, 4e9, np.inf, 4e11) == pytest.approx(1e-2)


def test_tensor_peak_falls_back_to_16_bit_when_the_gpu_lacks_the_precision():
    a100 = {"fp16": 312e12, "bf16": 312e12, "int8": 624e12}
    assert roofline.tensor_peak(a100, "fp8") == (312e12, "bf16")
    assert roofline.tensor_peak(a100, "int8") == (624e12, "int8")
    assert roofline.tensor_peak({}, "bf16") == (np.inf, "none")
    with pytest.raises(ValueError, match="compute"):
        roofline.tensor_peak(a100, "int3")


@given(positive, positive, positive, positive, st.floats(0.05, 1.0), st.floats(0.05, 1.0))
def test_roofline_time_is_at_least_each_bound_and_derating_only_slows(flops, moved, peak, bandwidth, mu, eta):
    t = roofline.roofline_time(flops, moved, peak, bandwidth)
    assert t >= flops / peak * (1 - 1e-12) and t >= moved / bandwidth * (1 - 1e-12)
    assert roofline.roofline_time(flops, moved, peak, bandwidth, compute_efficiency=mu, bandwidth_efficiency=eta) >= t
    attainable = roofline.attainable_flops(flops / moved, peak, bandwidth)
    assert attainable <= peak * (1 + 1e-12)
    assert flops / t == pytest.approx(attainable, rel=1e-9)


@given(mutually_broadcastable_shapes(num_shapes=4, max_dims=2, max_side=3).flatmap(
    lambda s: st.tuples(*(arrays(float, shape, elements=positive) for shape in s.input_shapes))))
def test_array_result_equals_elementwise_scalars(args):
    out = np.asarray(roofline.roofline_time(*args))
    for index in np.ndindex(out.shape):
        scalars = [np.broadcast_to(a, out.shape)[index] for a in args]
        assert out[index] == roofline.roofline_time(*scalars)


_times = st.floats(min_value=0.0, max_value=1e3, allow_nan=False)
_shares = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@given(_times, _times, _shares)
def test_overlapped_time_lies_between_the_roofline_and_the_sum(c, m, w):
    t = roofline.overlapped_seconds(c, m, w)
    assert max(c, m) * (1 - 1e-12) <= t <= (c + m) * (1 + 1e-12)


@given(_times, _times)
def test_full_overlap_is_the_roofline_and_none_is_the_sum(c, m):
    assert roofline.overlapped_seconds(c, m, 1.0) == max(c, m)
    assert roofline.overlapped_seconds(c, m, 0.0) == pytest.approx(c + m, rel=1e-12)


@given(_times, _times, _shares, _shares)
def test_overlapped_time_falls_as_the_overlap_grows(c, m, w1, w2):
    low, high = sorted((w1, w2))
    assert roofline.overlapped_seconds(c, m, high) <= roofline.overlapped_seconds(c, m, low) * (1 + 1e-12)


@given(_times, _times, _times, _shares)
def test_overlapped_time_grows_with_either_time(c, m, extra, w):
    t = roofline.overlapped_seconds(c, m, w)
    assert roofline.overlapped_seconds(c + extra, m, w) >= t * (1 - 1e-12)
    assert roofline.overlapped_seconds(c, m + extra, w) >= t * (1 - 1e-12)


def test_roofline_time_with_overlap_hand_value():
    # 16 GB at 3.35 TB/s = 4.776 ms; 2 TFLOP at 989.5 TFLOP/s = 2.021 ms; half of the shorter is added
    t = roofline.roofline_time(2e12, 16e9, 989.5e12, 3.35e12, overlap=0.5)
    assert t == pytest.approx(16e9 / 3.35e12 + 0.5 * 2e12 / 989.5e12)
    assert roofline.roofline_time(2e12, 16e9, 989.5e12, 3.35e12) == pytest.approx(16e9 / 3.35e12)
