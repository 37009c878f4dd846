"""Numbers with their units, as the nomenclature shows them; ``-`` for a missing value."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gpusizer.units import GB, PREFIXES

#: Bytes in one unit of each size unit shown. [B]
BYTE_UNITS = {f"{prefix}B": PREFIXES[prefix] for prefix in ("", "k", "M", "G", "T", "Ki", "Mi", "Gi", "Ti")}
MISSING = "-"



def is_missing(value: Any) -> bool:
    """Whether ``value`` shows as ``-``: ``None`` or ``nan``.

    >>> is_missing(None), is_missing(float("nan")), is_missing(0.0), is_missing("n/a")
    (True, True, False, False)
    """
    if value is None:
        return True
    try:
        return bool(np.isnan(value))
    except TypeError:
        return False


def format_number(value: Any, digits: int = 3) -> str:
    """A number with ``digits`` significant figures and thousands separators; ``-`` when missing.

    Examples
    --------
    >>> format_number(1234.5), format_number(9.6412), format_number(0.012345), format_number(None)
    ('1,234', '9.64', '0.0123', '-')
    """
    if is_missing(value):
        return MISSING
    value = float(value)
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    decimals = max(digits - 1 - math.floor(math.log10(abs(value))), 0)
    return f"{value:,.{decimals}f}"


def format_bytes(value: Any, unit: str = "GB", decimals: int = 2) -> str:
    """A size in ``unit`` (a key of ``BYTE_UNITS``), with the unit.

    Examples
    --------
    >>> format_bytes(72.67e9), format_bytes(80 * 2**30, "GiB")
    ('72.67 GB', '80.00 GiB')
    """
    if is_missing(value):
        return MISSING
    if unit not in BYTE_UNITS:
        raise ValueError(f"unknown size unit {unit!r}; known: {', '.join(BYTE_UNITS)}")
    return f"{float(value) / BYTE_UNITS[unit]:,.{decimals}f} {unit}"


def format_size(value: Any) -> str:
    """A size in GB and GiB, both labelled.

    Examples
    --------
    >>> format_size(85.9e9)
    '85.90 GB (80.00 GiB)'
    """
    if is_missing(value):
        return MISSING
    return f"{format_bytes(value, 'GB')} ({format_bytes(value, 'GiB')})"


def format_seconds(value: Any, digits: int = 3) -> str:
    """A duration given in seconds, shown in milliseconds.

    Examples
    --------
    >>> format_seconds(0.009641), format_seconds(1.5)
    ('9.64 ms', '1,500 ms')
    """
    return MISSING if is_missing(value) else f"{format_number(float(value) * 1e3, digits)} ms"


def format_rate(value: Any, digits: int = 3, unit: str = "tok/s") -> str:
    """A rate in tokens per second.

    Examples
    --------
    >>> format_rate(103.16)
    '103 tok/s'
    """
    return MISSING if is_missing(value) else f"{format_number(value, digits)} {unit}"


def format_bandwidth(value: Any) -> str:
    """A bandwidth given in B/s, shown in TB/s (GB/s below 1 TB/s).

    Examples
    --------
    >>> format_bandwidth(3.35e12), format_bandwidth(900e9)
    ('3.35 TB/s', '900 GB/s')
    """
    if is_missing(value):
        return MISSING
    if value < 1e12:
        return f"{format_number(value / GB)} GB/s"
    return f"{format_number(value / 1e12)} TB/s"


def format_flops(value: Any) -> str:
    """A rate given in FLOP/s, shown in TFLOP/s.

    Examples
    --------
    >>> format_flops(989.5e12)
    '990 TFLOP/s'
    """
    return MISSING if is_missing(value) else f"{format_number(value / 1e12)} TFLOP/s"


def format_params(value: Any) -> str:
    """A parameter count in billions (1e9 parameters); ``-`` when missing.

    >>> format_params(6_738_415_616)
    '6.74 B'
    """
    return MISSING if is_missing(value) else f"{value / 1e9:,.2f} B"
