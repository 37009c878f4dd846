"""The scalar path of the physics: Python numbers through ``gpusizer.numeric`` give numpy's answers.

Every physics function runs on Python numbers for one configuration and on arrays for many; these
helpers are where the two paths could part. Each is checked against numpy on the same values, as
scalars and as 0-d arrays: equal values (NaN included) and numpy's type (float vs int vs bool).
"""

import warnings

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from gpusizer import numeric as nx

FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64)
NUMBERS = st.one_of(FLOATS, st.integers(-(2**40), 2**40), st.booleans())


def same(ours, theirs):
    """Equal value and the Python type numpy's result turns into (``.item()``)."""
    expected = np.asarray(theirs).item()
    assert type(ours) is type(expected), (ours, expected)
    assert (ours == expected) or (ours != ours and expected != expected), (ours, expected)


def numpy_quietly(function, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return function(*args)


@given(NUMBERS, NUMBERS)
def test_maximum_and_minimum_match_numpy(x, y):
    same(nx.maximum(x, y), np.maximum(x, y))
    same(nx.minimum(x, y), np.minimum(x, y))


@given(st.booleans(), NUMBERS, NUMBERS)
def test_where_matches_numpy(condition, x, y):
    same(nx.where(condition, x, y), np.where(condition, x, y))
    same(nx.where(np.bool_(condition), x, y), np.where(condition, x, y))


@given(NUMBERS)
def test_ceil_and_floor_match_numpy(x):
    same(nx.ceil(x), np.ceil(x))
    same(nx.floor(x), np.floor(x))


@given(st.one_of(st.floats(-(2.0**62), 2.0**62), st.integers(-(2**62), 2**62)))
def test_integer_matches_numpy_within_int64(x):
    same(nx.integer(x), np.asarray(x).astype(np.int64))


@given(FLOATS, FLOATS)
def test_divide_matches_numpy_including_division_by_zero(x, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(nx.divide(x, y), numpy_quietly(np.divide, x, y))


@given(NUMBERS)
def test_number_turns_every_scalar_into_a_python_one(x):
    for value in (x, np.asarray(x), np.asarray([x])[0]):
        same(nx.number(value), np.asarray(x))
    assert isinstance(nx.number([x, x]), np.ndarray)  # a list never reaches ``*`` as a list


def test_arrays_take_numpy_s_path_with_its_broadcasting():
    a = np.array([1.0, np.nan, 3.0])
    np.testing.assert_array_equal(nx.maximum(a, 2.0), np.maximum(a, 2.0))
    np.testing.assert_array_equal(nx.where(True, a, 0.0), a)  # a scalar condition still broadcasts
    assert nx.where(np.array([True, False]), 1, 2.0).dtype == float
    assert nx.every(np.array([True, True])) is True and nx.every(False) is False
