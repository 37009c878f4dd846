"""Units at the boundary: text such as ``"80 GiB"`` or ``"3.35 TB/s"`` in, base-unit floats out.

Inside gpusizer every quantity is a plain float in one base unit: bytes (B), seconds (s),
floating-point operations (FLOP), B/s, FLOP/s, watts (W) and tokens. Text only exists where data
enters (catalogue files, command-line flags) or leaves (reports).

Catalogue strings follow one strict grammar, ``<number> <prefix><unit>``, which a small table parses
without building a pint registry (building one costs about a third of a second, more than the whole
``gpusizer fit`` budget). Anything outside that grammar is handed to pint, whose registry is built
lazily, once, with ``FLOP`` defined. ``quantity`` turns a base-unit float back into a pint Quantity
for display.

Deliberate omission: no pint Quantity ever reaches the physics modules.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

#: Decimal (SI) and binary (IEC) prefixes. ``GB`` is 1e9 bytes and ``GiB`` is 2**30 bytes: the
#: catalogue always spells which one a vendor meant.
PREFIXES: dict[str, float] = {
    "": 1.0,
    "k": 1e3,
    "K": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
}

GB = PREFIXES["G"]
"""One gigabyte, as vendors and the catalogue state capacities: 1e9. [B]"""
MiB = PREFIXES["Mi"]
"""One mebibyte, as engines' startup logs count buffers: 2**20. [B]"""
GiB = PREFIXES["Gi"]
"""One gibibyte, as drivers and engines report memory: 2**30. [B]"""

#: Base units the fast parser knows, with the canonical unit each belongs to.
BASE_UNITS: dict[str, str] = {
    "B": "B",
    "B/s": "B/s",
    "FLOP/s": "FLOP/s",
    "OP/s": "FLOP/s",
    "FLOP": "FLOP",
    "W": "W",
    "b/s": "b/s",
    "s": "s",
}

_TEXT = re.compile(
    r"^\s*(?P<value>[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?)\s*"
    r"(?P<prefix>Ki|Mi|Gi|Ti|[kKMGTPE]?)(?P<unit>B/s|B|FLOP/s|OP/s|FLOP|W|b/s|s)\s*$"
)
_TOKENS = re.compile(r"^\s*(?P<value>\d+(\.\d+)?)\s*(?P<suffix>[kKmM]?)\s*$")


@cache
def registry() -> Any:
    """Return the single pint registry, built on first use, with ``FLOP`` defined."""
    import pint

    ureg: Any = pint.UnitRegistry()
    ureg.define("FLOP = [flop]")
    ureg.define("OP = FLOP")
    return ureg


def parse(text: str | float | int, unit: str) -> float:
    """Parse a quantity written as text into a float in the base unit ``unit``.

    Parameters
    ----------
    text : str or float
        For example ``"80 GiB"``, ``"3.35 TB/s"``, ``"989.5 TFLOP/s"``. A bare number is taken to be
        in ``unit`` already.
    unit : str
        Target base unit: ``"B"``, ``"B/s"``, ``"FLOP/s"``, ``"W"``, ``"b/s"``, ``"s"``.

    Returns
    -------
    float
        The value in ``unit``. [unit]

    Examples
    --------
    >>> parse("80 GiB", "B")
    85899345920.0
    >>> parse("3.35 TB/s", "B/s")
    3350000000000.0
    """
    if isinstance(text, bool):
        raise ValueError(f"expected a quantity in {unit}, got {text!r}")
    if isinstance(text, int | float):
        return float(text)
    match = _TEXT.match(text)
    if match and BASE_UNITS[match["unit"]] == unit:
        return float(match["value"]) * PREFIXES[match["prefix"]]
    try:
        return float(registry().Quantity(text).to(unit.replace("B", "byte")).magnitude)
    except Exception as error:  # pint raises several unrelated exception types
        raise ValueError(f"cannot read {text!r} as a quantity in {unit}: {error}") from None


def parse_tokens(text: str | int) -> int:
    """Parse a token count: ``"32k"`` and ``"32K"`` mean 32,768 as model cards use; ``"1M"`` 2**20.

    Parameters
    ----------
    text : str or int
        ``"4096"``, ``"32k"``, ``"128K"``, ``"1m"``.

    Returns
    -------
    int
        Number of tokens. [token]

    Examples
    --------
    >>> parse_tokens("32k")
    32768
    >>> parse_tokens("2000")
    2000
    """
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    match = _TOKENS.match(str(text))
    if not match:
        raise ValueError(f"cannot read {text!r} as a token count (try 4096, 32k or 1M)")
    scale = {"": 1, "k": 1024, "m": 1024**2}[match["suffix"].lower()]
    value = float(match["value"]) * scale
    if value != int(value):
        raise ValueError(f"token count {text!r} is not a whole number of tokens")
    return int(value)


def quantity(value: float, unit: str) -> Any:
    """Return ``value`` in base unit ``unit`` as a pint Quantity, for display at the boundary."""
    return registry().Quantity(value, unit.replace("B", "byte"))


#: Time units a duration may be written in, with their length in seconds.
SECONDS: dict[str, float] = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}
_DURATION = re.compile(r"^\s*(?P<value>(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?)\s*(?P<unit>ns|us|µs|ms|s|min|h)?\s*$")


def parse_seconds(text: str | float | int) -> float:
    """Parse a duration such as ``"500ms"``, ``"0.5 s"`` or ``"2min"`` into seconds; a bare number is seconds.

    Examples
    --------
    >>> parse_seconds("500ms"), parse_seconds("0.5s"), parse_seconds(2)
    (0.5, 0.5, 2.0)
    """
    if isinstance(text, bool):
        raise ValueError(f"expected a duration, got {text!r}")
    if isinstance(text, int | float):
        return float(text)
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"cannot read {text!r} as a duration (try 500ms, 0.5s or 2min)")
    return float(match["value"]) * SECONDS[match["unit"] or "s"]
