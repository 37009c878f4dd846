"""The one TOML writer: exact (floats by ``repr``), read back by ``tomllib`` to the same values.

``dumps`` writes nested data (what ``tomllib.loads`` returns); ``table_to_toml`` writes an efficiency
table in the layout ``efficiency.load`` reads (``tools/fit_efficiency.py`` generates
``data/efficiency.toml`` with it) and ``gpusizer.calibration.to_toml`` a calibration.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
from typing import Any

from gpusizer.efficiency import Table

__all__ = ["dumps", "table_to_toml", "toml_value"]

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
#: Fields of a table entry left out when empty (the loader's defaults).
_OPTIONAL = ("prior", "fitted", "rows", "source", "method")


def _string(text: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters escaped."""
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _string(key)


def toml_value(value: Any) -> str:
    """One value as TOML: floats by ``repr`` (every digit, ``inf`` and ``nan`` included), dicts inline.

    Examples
    --------
    >>> toml_value(0.1 + 0.2), toml_value([1, "a\\"b"]), toml_value({"x": 1e-05})
    ('0.30000000000000004', '[1, "a\\\\"b"]', '{ x = 1e-05 }')
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(float(value))  # numpy floats too; 'inf', '-inf' and 'nan' are TOML
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, datetime.date):  # a datetime is a date too
        return value.isoformat()
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {toml_value(v)}" for k, v in value.items() if not _empty(v)) + " }"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} to TOML")


def _empty(value: Any) -> bool:
    """TOML has no null: None, and empty arrays and tables, are left out (the reader's defaults apply)."""
    return value is None or (isinstance(value, list | tuple | dict) and not value)


def _is_tables(value: Any) -> bool:
    return isinstance(value, list | tuple) and bool(value) and all(isinstance(v, dict) for v in value)


def _lines(data: dict[str, Any], prefix: str, top: bool) -> list[str]:
    """Key/value lines first, then ``[key]`` tables (top level only) and ``[[prefix.key]]`` arrays of tables."""
    lines = [f"{_key(k)} = {toml_value(v)}" for k, v in data.items()
             if not _empty(v) and not _is_tables(v) and not (top and isinstance(v, dict))]
    for key, value in data.items():
        if top and isinstance(value, dict) and value:
            lines += ["", f"[{_key(key)}]", *_lines(value, f"{prefix}{_key(key)}.", False)]
        elif _is_tables(value):
            for item in value:
                lines += ["", f"[[{prefix}{_key(key)}]]", *_lines(item, f"{prefix}{_key(key)}.", False)]
    return lines


def dumps(data: dict[str, Any], header: str = "") -> str:
    """``data`` as TOML text that ``tomllib.loads`` reads back to the same values.

    Parameters
    ----------
    data : dict
        Values: bool, int, float, str, date/datetime, lists, dicts. A dict at the top level becomes a
        ``[table]``, a list of dicts an ``[[array of tables]]`` (nested ones too), any other dict an
        inline table. None and empty lists or dicts are left out.
    header : str, optional
        Comment lines written first, each prefixed with ``#``.

    Examples
    --------
    >>> print(dumps({"a": 0.1, "fit": {"n": 2}, "row": [{"id": "x"}]}, header="made here"))
    # made here
    a = 0.1
    <BLANKLINE>
    [fit]
    n = 2
    <BLANKLINE>
    [[row]]
    id = "x"
    <BLANKLINE>
    """
    comments = [f"# {line}" if line else "#" for line in header.splitlines()]
    return "\n".join([*comments, *_lines(data, "", True)]) + "\n"


def _entry(entry: Any) -> dict[str, Any]:
    """A table entry's fields, in declaration order, the empty optional ones left out."""
    values = {f.name: getattr(entry, f.name) for f in dataclasses.fields(entry)}
    return {k: v for k, v in values.items() if not (k in _OPTIONAL and v in ((), {}, ""))}


def table_to_toml(table: Table, header: str = "") -> str:
    """An efficiency table as TOML text, in the layout ``efficiency.load`` reads.

    Sections ``[fit]``, then ``[[engine]]``, ``[[group]]``, ``[[fabric]]`` and ``[[band]]`` in the
    table's order; every float keeps all its digits, so ``load`` reads back the same table.

    Examples
    --------
    >>> import tomllib
    >>> from gpusizer import efficiency
    >>> text = table_to_toml(efficiency.bundled())
    >>> tomllib.loads(text)["engine"][0]["name"]
    'vllm'
    """
    data = {
        "fit": dict(table.fit),
        "engine": [_entry(e) for e in table.engines.values()],
        "group": [_entry(g) for g in table.groups],
        "fabric": [_entry(f) for f in table.fabrics.values()],
        "band": [_entry(b) for b in table.bands.values()],
    }
    return dumps(data, header)
