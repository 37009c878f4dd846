"""Helpers: argument validation that names the parameter, and scalar-in/scalar-out."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import numpy as np

from gpusizer.numeric import number

T = TypeVar("T")

#: Largest GPU count the Python API accepts for one deployment (64 x the largest catalogue system). [-]
MAX_GPUS = 4096

MAX_TOKENS = 2**24
"""Most tokens per sequence (context or prompt) that ``estimate``, ``sweep`` and every command accept:
16,777,216 (16M), 1.6 times the longest context a published model claims (10M, Llama 4 Scout). Past it a
size is no longer a question about a real deployment; below it a prefill takes at most 32,768 chunk steps
of the smallest engine chunk (512 tokens), evaluated a block at a time in bounded memory. [token]"""

MAX_GRID_ROWS = 5_000_000
"""Most rows ``sweep`` computes: a 1.24M-row grid (84 columns) peaks at 0.28 GB, so 5M rows stay near
1.2 GB, under the 2 GiB a command may use by its arguments alone (issue 14). [-]"""


def integer_array(value: Any, name: str, *, minimum: int = 0, maximum: int = 2**50) -> np.ndarray:
    """``value`` as an int64 array, or ``ValueError`` naming ``name`` unless it is whole and within
    ``minimum`` and ``maximum``."""
    if type(value) is int and minimum <= value <= maximum:  # the common scalar, without numpy's checks
        return np.asarray(value, dtype=np.int64)
    try:
        array = np.asarray(value)
    except Exception as error:  # ragged lists and the like
        raise ValueError(f"{name} must be a number or an array of numbers: {error}") from None
    if array.dtype == bool or array.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if array.dtype.kind == "f":
        if not np.all(np.isfinite(array)) or np.any(array != np.round(array)):
            raise ValueError(f"{name} must be a whole number, got {value!r:.80}")
    if np.any(array < minimum):
        raise ValueError(f"{name} must be >= {minimum}, got {value!r:.80}")
    if np.any(array > maximum):
        raise ValueError(f"{name} must be <= {maximum:,}, got {value!r:.80}")
    return array.astype(np.int64)


def grid_rows(sizes: Mapping[str, int] | Iterable[int], limit: int) -> int:
    """Rows of a grid, the product of its axis sizes, checked against ``limit`` before anything is allocated.

    Parameters
    ----------
    sizes : mapping of str to int, or iterable of int
        Length of each axis (by name, for the message).
    limit : int
        Most rows accepted. [-]

    Returns
    -------
    int
        :math:`\\prod_i n_i`, in Python integers (no overflow). [-]

    Raises
    ------
    ValueError
        More than ``limit`` rows, naming the axes and their sizes.

    Examples
    --------
    >>> grid_rows({"models": 2, "gpus": 3, "context": 4}, 100)
    24
    """
    named = dict(sizes) if isinstance(sizes, Mapping) else {f"axis {i}": n for i, n in enumerate(sizes)}
    rows = math.prod(int(n) for n in named.values())
    if rows > limit:
        axes = " x ".join(f"{name} {n:,}" for name, n in named.items() if n != 1)
        raise ValueError(f"the grid has {rows:,} rows ({axes}), more than the limit of {limit:,}; "
                         "narrow an axis or split the sweep")
    return rows


def positive_array(value: Any, name: str) -> np.ndarray:
    """``value`` as a float array, or ``ValueError`` naming ``name`` unless every element is > 0."""
    try:
        array = np.asarray(value, dtype=float)
    except Exception:
        raise ValueError(f"{name} must be a positive number, got {value!r}") from None
    if not np.all(np.isfinite(array)) or np.any(array <= 0):
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return array


def instance(value: Any, name: str, types: type | tuple[type, ...]) -> Any:
    """``value`` unchanged, or ``TypeError`` naming ``name`` and the accepted types."""
    if not isinstance(value, types):
        accepted = " or ".join(t.__name__ for t in (types if isinstance(types, tuple) else (types,)))
        raise TypeError(f"{name} must be {accepted}, got {type(value).__name__} {value!r:.80}")
    return value


def count(value: Any, name: str, *, minimum: int = 1, maximum: int | None = None) -> int:
    """``value`` as an int, or ``TypeError``/``ValueError`` naming ``name`` unless it is a whole
    number (not a bool) with ``minimum <= value <= maximum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be a whole number >= {minimum}, got {type(value).__name__} {value!r:.80}")
    if value < minimum or (maximum is not None and value > maximum):
        top = f" and <= {maximum}" if maximum is not None else ""
        raise ValueError(f"{name} must be >= {minimum}{top}, got {value!r}")
    return int(value)


def one_of(value: Any, name: str, choices: Any) -> Any:
    """``value`` unchanged, or ``ValueError`` naming ``name`` and ``choices`` unless it is one of them."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(str, choices))}; got {value!r:.80}")
    return value


def names(value: Any, name: str) -> list[str] | None:
    """``value`` as a list of str (``None`` stays ``None``), or ``TypeError`` naming ``name`` unless it
    is a non-string sequence of strings."""
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise TypeError(f"{name} must be a list of str, got {type(value).__name__} {value!r:.80}")
    for item in value:
        if not isinstance(item, str):
            raise TypeError(f"{name} must be a list of str, got an item {item!r:.80}")
    return list(value)


#: A Python scalar for a 0-d result, the array otherwise (NumPy 2 shows ``np.int64(5)`` else).
scalar_or_array = number


_VALUES = (str, int, float, bool, type(None))


def cache_by_identity(function: Callable[..., T]) -> Callable[..., T]:
    """``functools.cache`` for functions of frozen records: records (any argument that is not a str,
    number or None) are keyed by identity, the rest by value.

    Hashing a pydantic record hashes every field, about 2 us; its identity costs nothing. An entry keeps
    its records alive, so no id is reused while it lives; equal records that are distinct objects
    simply get entries of their own. The table is emptied when it reaches 4,096 entries.
    """
    table: dict[tuple[Any, ...], tuple[Any, ...]] = {}

    @functools.wraps(function)
    def cached(*args: Any) -> T:
        key = tuple([a if type(a) in _VALUES else id(a) for a in args])
        entry = table.get(key)
        if entry is None:
            if len(table) >= 4096:
                table.clear()
            entry = table[key] = (args, function(*args))
        return entry[1]

    return cached


def map_arrays(function: Callable[[np.ndarray], Any], value: Any) -> Any:
    """``value`` with ``function`` applied to every ndarray in it: through dataclass records, named
    tuples and tuples, rebuilt as the same types; anything else is returned as it is."""
    if isinstance(value, np.ndarray):
        return function(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(
            value, **{f.name: map_arrays(function, getattr(value, f.name)) for f in dataclasses.fields(value)}
        )
    if isinstance(value, tuple):
        items = [map_arrays(function, item) for item in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    return value


def plain(value: Any) -> Any:
    """``value`` with arrays turned into lists, numpy scalars into Python ones and records (dataclasses,
    pydantic models) into dicts of their fields (for JSON)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if hasattr(value, "model_dump"):
        return plain(value.model_dump())
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    return value


def non_negative_array(value: Any, name: str) -> np.ndarray:
    """``value`` as a float array, or ``ValueError`` naming ``name`` unless every element is finite and >= 0."""
    try:
        array = np.asarray(value, dtype=float)
    except Exception:
        raise ValueError(f"{name} must be a number >= 0, got {value!r}") from None
    if not np.all(np.isfinite(array)) or np.any(array < 0):
        raise ValueError(f"{name} must be a number >= 0, got {value!r}")
    return array
