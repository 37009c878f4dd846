"""Typed, bounded reading of one Hugging Face JSON file and of the objects inside it.

``read_json`` parses a file of at most ``MAX_CONFIG_BYTES`` with the standard library (no NaN or
Infinity, no deep nesting); ``Section`` reads one object of it with every value's type and size
checked against ``LIMITS``. Only ``ValueError`` (or ``FileNotFoundError``) leaves this module.
"""

from __future__ import annotations

import json
import reprlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "LIMITS",
    "MAX_CONFIG_BYTES",
    "MAX_INDEX_BYTES",
    "ConfigAssumptionWarning",
    "Section",
    "json_object",
    "read_json",
    "show",
]


#: Largest value accepted for each kind of size; anything larger is rejected as corrupt.
LIMITS: dict[str, int] = {
    "hidden": 2**20,  # hidden_size and other model widths
    "ffn": 2**22,  # FFN and expert intermediate widths
    "heads": 2**16,  # attention, key/value, linear-attention and Mamba heads
    "head_dim": 2**16,
    "layers": 10_000,  # decoder layers; also the longest per-layer list built
    "vocab": 2**24,
    "experts": 2**16,
    "context": 2**32,  # max_position_embeddings, sliding windows, attention chunks [token]
    "rank": 2**20,  # MLA ranks, SSM state size
    "small": 2**10,  # kernels, intervals, MTP layers, patch sizes, bits
}


#: Largest file read: config.json and hf_quant_config.json. [B]
MAX_CONFIG_BYTES = 16 * 2**20

#: Largest safetensors index read: it names every tensor, tens of thousands in large MoE checkpoints. [B]
MAX_INDEX_BYTES = 64 * 2**20

_MISSING: Any = object()
_SHORT = reprlib.Repr()
_SHORT.maxstring, _SHORT.maxother = 40, 40


class ConfigAssumptionWarning(UserWarning):
    """An imported config needed assumptions or approximations; the message lists them all."""


def show(value: Any) -> str:
    """A value for messages: its type and a short repr."""
    return f"{type(value).__name__} {_SHORT.repr(value)}"


class Section:
    """One object of a config (top level, ``text_config``, ...) read with types and bounds checked.

    ``defaults`` are the transformers defaults of the section's configuration class; ``notes``
    collects assumptions and is shared by every section of one import.
    """

    def __init__(self, data: Mapping[str, Any], where: str, notes: list[str], defaults: Mapping[str, Any] = {}):
        self.data, self.where, self.notes, self.defaults = data, where, notes, defaults

    def raw(self, key: str) -> Any:
        """The value of ``key``, else its default, else None."""
        return self.data[key] if key in self.data else self.defaults.get(key)

    def has(self, key: str) -> bool:
        """Whether ``key`` has a value (given or defaulted)."""
        return self.raw(key) is not None

    def name(self, key: str) -> str:
        """The dotted name of ``key`` for messages."""
        return f"{self.where}.{key}"

    def require(self, *keys: str) -> None:
        """Raise one ``ValueError`` naming every one of ``keys`` without a value."""
        missing = [key for key in keys if not self.has(key)]
        if missing:
            raise ValueError(f"{self.where} lacks essential keys: {', '.join(missing)}")

    def integer(self, key: str, limit: str, *, default: Any = _MISSING, low: int = 1) -> Any:
        """The integer ``key`` in ``[low, LIMITS[limit]]``; ``default`` when absent, else an error."""
        value = self.raw(key)
        if value is None:
            if default is _MISSING:
                raise ValueError(f"{self.where} lacks essential keys: {key}")
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{self.name(key)} must be an integer, got {show(value)}")
        if value < low:
            raise ValueError(f"{self.name(key)} must be >= {low}, got {value}")
        if value > LIMITS[limit]:
            raise ValueError(f"{self.name(key)} = {value} exceeds the sane bound {LIMITS[limit]}")
        return value

    def opt(self, key: str, limit: str, *, low: int = 1) -> int | None:
        """The integer ``key``, or None when absent."""
        return self.integer(key, limit, default=None, low=low)  # type: ignore[no-any-return]

    def flag(self, key: str, default: bool) -> bool:
        """The boolean ``key``, ``default`` when absent."""
        value = self.raw(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise ValueError(f"{self.name(key)} must be true or false, got {show(value)}")
        return value

    def text(self, key: str, default: str | None = None) -> str | None:
        """The short string ``key``, ``default`` when absent."""
        value = self.raw(key)
        if value is None:
            return default
        if not isinstance(value, str) or len(value) > 200:
            raise ValueError(f"{self.name(key)} must be a short string, got {show(value)}")
        return value

    def items(self, key: str, limit: int) -> list[Any] | None:
        """The list ``key`` of at most ``limit`` entries, or None when absent."""
        value = self.raw(key)
        if value is None:
            return None
        if not isinstance(value, list | tuple):
            raise ValueError(f"{self.name(key)} must be a list, got {show(value)}")
        if len(value) > limit:
            raise ValueError(f"{self.name(key)} has {len(value)} entries, more than the bound {limit}")
        return list(value)

    def section(self, key: str, defaults: Mapping[str, Any] = {}) -> Section | None:
        """The object ``key`` as a ``Section`` sharing these notes, or None when absent."""
        value = self.raw(key)
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise ValueError(f"{self.name(key)} must be an object, got {show(value)}")
        return Section(value, self.name(key), self.notes, defaults)


def _reject_constant(name: str) -> Any:
    """Refuse NaN and Infinity, which JSON does not allow."""
    raise ValueError(f"JSON constant {name} is not a number")


def read_json(path: Path, limit: int = MAX_CONFIG_BYTES) -> Any:
    """Parse one JSON file of at most ``limit`` bytes with the standard library."""
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    if not path.is_file():
        raise ValueError(f"{path} is not a regular file")
    if path.stat().st_size > limit:
        raise ValueError(f"{path} is larger than {limit} bytes; not a config file")
    with path.open("rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{path} is larger than {limit} bytes; not a config file")
    try:
        return json.loads(data.decode("utf-8-sig"), parse_constant=_reject_constant)
    except UnicodeDecodeError as error:
        raise ValueError(f"{path} is not UTF-8 text: {error}") from None
    except RecursionError:
        raise ValueError(f"{path} nests JSON too deeply") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON: {error}") from None


def json_object(value: Any, where: str) -> Mapping[str, Any]:
    """``value`` when it is a JSON object; else ``ValueError`` naming ``where``."""
    if not isinstance(value, Mapping):
        raise ValueError(f"{where} must hold a JSON object, got {show(value)}")
    return value
