"""Helpers: numpy's broadcasting arithmetic, kept in plain Python numbers for scalar inputs.

The physics functions are written once, for arrays. numpy spends 0.5-2.5 us on each ufunc call, and on
each operator with a 0-d array, where Python spends 30-150 ns on floats. So a scalar configuration
(``estimate``) runs through the same functions in Python ``int``/``float``/``bool`` and arrays take
numpy's path, through these few helpers:

- ``number(x)``: a Python number for any scalar (numpy scalar, 0-d array), an ndarray for the rest
  (lists and tuples included, so that ``*`` and ``+`` never repeat or concatenate a list);
- ``where``, ``every``, ``maximum``, ``minimum``, ``ceil``, ``floor``, ``divide`` and ``integer``:
  numpy's results, value and type (an ``int`` only where numpy gives an integer), NaN propagation
  and division by zero included.

Operators (``+``, ``*``, ``/``, ``>``) do the rest once the operands are ``number``s. Python raises on
``x / 0.0`` where numpy returns ``inf`` or ``nan``: ``divide`` is for denominators that may be zero.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

_PLAIN = (int, float, bool)


def number(value: Any) -> Any:
    """``value`` as a Python ``int``, ``float`` or ``bool`` when it is a scalar of any kind, else an ndarray."""
    kind = type(value)
    if kind is float or kind is int or kind is bool:
        return value
    if kind is np.ndarray:
        return value.item() if value.ndim == 0 else value
    if isinstance(value, np.generic):
        return value.item()
    array = np.asarray(value)
    return array.item() if array.ndim == 0 else array


def _promoted(result: Any, x: Any, y: Any) -> Any:
    """``result`` of operands of two types as numpy types it: a float if either is one, else an int."""
    return float(result) if type(x) is float or type(y) is float else int(result)


def where(condition: Any, x: Any, y: Any) -> Any:
    """``np.where``; ``x if condition else y`` when all three are Python scalars.

    Examples
    --------
    >>> where(True, 1, 0.5), where(np.array([True, False]), 1, 0.5)
    (1.0, array([1. , 0.5]))
    """
    kind, kx, ky = type(condition), type(x), type(y)
    if (kind is bool or kind is np.bool_) and kx in _PLAIN and ky in _PLAIN:
        result = x if condition else y
        return result if kx is ky else _promoted(result, x, y)
    return np.where(condition, x, y)


def every(condition: Any) -> bool:
    """``bool(np.all(condition))``, without numpy for a Python ``bool``.

    Examples
    --------
    >>> every(True), every(np.array([True, False]))
    (True, False)
    """
    return condition if type(condition) is bool else bool(np.all(condition))


def maximum(x: Any, y: Any) -> Any:
    """``np.maximum``: the larger, NaN when either is NaN.

    Examples
    --------
    >>> maximum(3, 2.0), maximum(float("nan"), 1.0), maximum(np.array([1, 4]), 2)
    (3.0, nan, array([2, 4]))
    """
    kx, ky = type(x), type(y)
    if kx in _PLAIN and ky in _PLAIN:
        result = x if (x >= y or x != x) else y
        return result if kx is ky else _promoted(result, x, y)
    return np.maximum(x, y)


def minimum(x: Any, y: Any) -> Any:
    """``np.minimum``: the smaller, NaN when either is NaN.

    Examples
    --------
    >>> minimum(3, 2.0), minimum(1.0, float("nan")), minimum(np.array([1, 4]), 2)
    (2.0, nan, array([1, 2]))
    """
    kx, ky = type(x), type(y)
    if kx in _PLAIN and ky in _PLAIN:
        result = x if (x <= y or x != x) else y
        return result if kx is ky else _promoted(result, x, y)
    return np.minimum(x, y)


def ceil(x: Any) -> Any:
    """``np.ceil``: a float for a float (``inf`` and ``nan`` unchanged); an integer unchanged (NumPy 2).

    Examples
    --------
    >>> ceil(2.5), ceil(float("inf")), ceil(3), ceil(np.array([0.5, 2.0]))
    (3.0, inf, 3, array([1., 2.]))
    """
    if type(x) is float:
        return float(math.ceil(x)) if math.isfinite(x) else x
    return x if type(x) in _PLAIN else np.ceil(x)


def floor(x: Any) -> Any:
    """``np.floor``: a float for a float (``inf`` and ``nan`` unchanged); an integer unchanged (NumPy 2).

    Examples
    --------
    >>> floor(2.5), floor(float("-inf")), floor(3), floor(np.array([0.5, 2.0]))
    (2.0, -inf, 3, array([0., 2.]))
    """
    if type(x) is float:
        return float(math.floor(x)) if math.isfinite(x) else x
    return x if type(x) in _PLAIN else np.floor(x)


def divide(x: Any, y: Any) -> Any:
    """``x / y`` with numpy's answer (``inf``, ``nan``, and its warning) where ``y`` is zero.

    Examples
    --------
    >>> divide(1, 4), divide(np.array([1.0, 2.0]), 2)
    (0.25, array([0.5, 1. ]))
    >>> with np.errstate(divide="ignore", invalid="ignore"):
    ...     divide(1.0, 0.0), divide(0.0, 0.0)
    (inf, nan)
    """
    try:
        return x / y
    except ZeroDivisionError:
        return float(np.divide(float(x), float(y)))


def integer(x: Any) -> Any:
    """``x.astype(np.int64)``: truncated toward zero; an ``int`` for a Python scalar (exact beyond int64,
    where numpy's cast is undefined).

    Examples
    --------
    >>> integer(2.9), integer(np.array([1.5, -1.5]))
    (2, array([ 1, -1]))
    """
    if type(x) in _PLAIN and math.isfinite(x):
        return int(x)
    out = np.asarray(x).astype(np.int64)
    return out if out.ndim else out.item()
