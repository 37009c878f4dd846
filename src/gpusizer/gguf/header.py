"""Bounded, streaming reading of a GGUF file's header: metadata and tensor infos, never the tensor data.

The layout follows the GGUF specification (ggml-org/ggml:docs/gguf.md, "File Structure", checked
2026-12-05): little-endian, the magic ``GGUF``, a ``uint32`` version, ``uint64`` tensor and metadata
counts, the metadata key/value pairs (a ``gguf_string`` key: ``uint64`` length and UTF-8 bytes, a
``uint32`` value type, the value; arrays are a ``uint32`` element type, a ``uint64`` length and the
elements), then one tensor info per tensor (name, ``uint32`` n_dims, ``uint64`` dims, ``uint32`` ggml
type, ``uint64`` offset from the start of the data section), padding to ``general.alignment``
(default 32), and the data.

Hostile input: every count and length is checked against ``LIMITS`` and against the bytes left in the
file before anything is allocated, so no declared size makes the reader allocate or loop more than the
file and the limits allow. Arrays longer than ``KEEP_ARRAY`` (the tokenizer's tokens and merges), and any
array met once ``KEEP_TOTAL`` elements are kept, are skipped by length and kept as a ``Skipped`` record of
their type and length. Tensor data must lie
within the file, aligned, without overlaps. Every problem is a ``ValueError`` naming the file; only
versions 2 and 3 are read (version 1 used 32-bit counts; big-endian files are refused).
"""

from __future__ import annotations

import itertools
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from gpusizer.gguf.ggml import ggml_type, tensor_bytes

__all__ = ["KEEP_ARRAY", "KEEP_TOTAL", "LIMITS", "Header", "Skipped", "TensorInfo", "read_header"]

#: Largest count or length accepted for each kind; anything larger is refused as corrupt.
LIMITS: dict[str, int] = {
    "tensors": 2**20,  # tensors per file (DeepSeek-V3 at 61 layers holds about 1,100)
    "metadata": 2**16,  # key/value pairs per file
    "string": 2**20,  # bytes of one string value
    "key": 2**16,  # bytes of one key or tensor name (the spec: keys at most 65535 bytes)
    "array": 2**22,  # elements of one array (tokenizer vocabularies and merges hold under 2**20)
    "header": 2**28,  # bytes of the whole header (a 262k-token vocabulary takes about 10 MB) [B]
}

#: Longest array whose elements are kept; longer ones are skipped and kept as ``Skipped``. [-]
KEEP_ARRAY = 4096

#: Most array elements kept in all; arrays met after that are skipped too, so that memory stays bounded. [-]
KEEP_TOTAL = 2**18

_MAGIC = b"GGUF"
_VERSIONS = (2, 3)
_MAX_DIMS = 4  # GGML_MAX_DIMS
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
_MAX_NESTING = 4


@dataclass(frozen=True)
class Skipped:
    """An array too long to keep: its element type and length."""

    value_type: int
    length: int


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of a GGUF file."""

    name: str
    dims: tuple[int, ...]
    """Elements along each dimension, innermost first (ggml ``ne``). [-]"""
    type_id: int
    """ggml type id (``ggml.GGML_TYPES``)."""
    offset: int
    """Start of the data, from the start of the data section. [B]"""
    nbytes: int
    """Bytes of the data (``ggml.tensor_bytes``). [B]"""

    @property
    def type_name(self) -> str:
        """Name of the ggml type (``Q4_K``, ``F32``, ...)."""
        return ggml_type(self.type_id).name


@dataclass(frozen=True)
class Header:
    """What a GGUF header says: its version, metadata, tensor infos and where the data starts."""

    path: Path
    version: int
    metadata: dict[str, Any]
    tensors: tuple[TensorInfo, ...]
    alignment: int
    data_offset: int
    """Start of the data section in the file. [B]"""
    file_size: int
    """[B]"""


class _Reader:
    """Reads from a file, refusing any read past its end or past ``LIMITS["header"]``."""

    def __init__(self, handle: BinaryIO, size: int, label: str) -> None:
        self.handle, self.size, self.label, self.position = handle, size, label, 0
        self.kept = 0  # array elements kept so far (``KEEP_TOTAL``)

    def error(self, message: str) -> ValueError:
        return ValueError(f"{self.label}: {message} (at byte {self.position:,})")

    def need(self, count: int, what: str) -> None:
        if count > self.size - self.position:
            raise self.error(f"truncated: {what} needs {count:,} bytes, {self.size - self.position:,} left")
        if self.position + count > LIMITS["header"]:
            raise self.error(f"header longer than {LIMITS['header']:,} bytes (gguf.LIMITS['header'])")

    def read(self, count: int, what: str) -> bytes:
        self.need(count, what)
        data = self.handle.read(count)
        if len(data) != count:
            raise self.error(f"truncated: {what}")
        self.position += count
        return data

    def skip(self, count: int, what: str) -> None:
        self.need(count, what)
        self.handle.seek(count, 1)
        self.position += count

    def scalar(self, fmt: str, what: str) -> Any:
        return struct.unpack(fmt, self.read(struct.calcsize(fmt), what))[0]

    def length(self, what: str, limit: str) -> int:
        n = self.scalar("<Q", f"length of {what}")
        if n > LIMITS[limit]:
            raise self.error(f"{what} declares {n:,} elements or bytes, more than {LIMITS[limit]:,} "
                             f"(gguf.LIMITS[{limit!r}])")
        return int(n)

    def string(self, what: str, limit: str = "string") -> str:
        data = self.read(self.length(what, limit), what)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise self.error(f"{what} is not UTF-8") from None


def _value(r: _Reader, value_type: int, what: str, depth: int = 0) -> Any:
    """One metadata value of ``value_type``; arrays longer than ``KEEP_ARRAY`` become ``Skipped``."""
    if value_type in _SCALARS:
        return r.scalar(_SCALARS[value_type], what)
    if value_type == _STRING:
        return r.string(what)
    if value_type != _ARRAY:
        raise r.error(f"{what} has unknown value type {value_type}")
    if depth >= _MAX_NESTING:
        raise r.error(f"{what}: arrays nested deeper than {_MAX_NESTING}")
    inner = r.scalar("<I", f"element type of {what}")
    n = r.length(what, "array")
    if inner in _SCALARS:
        r.need(n * struct.calcsize(_SCALARS[inner]), what)  # the whole array lies within the file
    elif inner in (_STRING, _ARRAY):
        r.need(n * 8, what)  # each element at least a uint64 length
    if n > KEEP_ARRAY or r.kept + n > KEEP_TOTAL:
        _skip_array(r, inner, n, what, depth + 1)
        return Skipped(inner, n)
    r.kept += n
    return [_value(r, inner, f"{what}[{i}]", depth + 1) for i in range(n)]


def _skip_array(r: _Reader, inner: int, n: int, what: str, depth: int) -> None:
    """Move past ``n`` elements of type ``inner`` without keeping them."""
    if inner in _SCALARS:
        r.skip(n * struct.calcsize(_SCALARS[inner]), what)
    elif inner == _STRING:
        for i in range(n):
            r.skip(r.length(f"{what}[{i}]", "string"), what)
    else:
        for i in range(n):
            _value(r, inner, f"{what}[{i}]", depth)


def _start(r: _Reader) -> tuple[int, int, int]:
    """The version, tensor count and metadata count after checking the magic."""
    magic = r.read(4, "magic")
    if magic != _MAGIC:
        raise r.error(f"not a GGUF file: magic {magic!r}, expected {_MAGIC!r}")
    version = r.scalar("<I", "version")
    if version not in _VERSIONS:
        swapped = int.from_bytes(version.to_bytes(4, "little"), "big")
        kind = "a big-endian GGUF" if swapped in _VERSIONS else f"GGUF version {version}"
        raise r.error(f"{kind} is not read; versions {_VERSIONS} (little-endian) are")
    counts = []
    for what, limit in (("tensor_count", "tensors"), ("metadata_kv_count", "metadata")):
        n = r.scalar("<Q", what)
        if n > LIMITS[limit]:
            raise r.error(f"{what} {n:,} is more than {LIMITS[limit]:,} (gguf.LIMITS[{limit!r}])")
        counts.append(int(n))
    return version, counts[0], counts[1]


def _tensor(r: _Reader) -> tuple[str, tuple[int, ...], int, int]:
    """One tensor info: name, dims, ggml type id and offset."""
    name = r.string("tensor name", "key")
    n_dims = r.scalar("<I", f"n_dims of {name}")
    if not 1 <= n_dims <= _MAX_DIMS:
        raise r.error(f"tensor {name!r} has n_dims {n_dims}; GGUF allows 1 to {_MAX_DIMS}")
    dims = tuple(int(r.scalar("<Q", f"dims of {name}")) for _ in range(n_dims))
    type_id = r.scalar("<I", f"type of {name}")
    offset = r.scalar("<Q", f"offset of {name}")
    if any(d < 1 or d > 2**50 for d in dims):
        raise r.error(f"tensor {name!r} has dimensions {dims}; each must be 1 to 2**50")
    try:
        ggml_type(type_id)
    except ValueError as error:
        raise r.error(f"tensor {name!r}: {error}") from None
    return name, dims, type_id, int(offset)


def _place(tensors: list[tuple[str, tuple[int, ...], int, int]], data_offset: int, alignment: int,
           size: int, label: str) -> tuple[TensorInfo, ...]:
    """Tensor infos with their sizes, each checked to lie aligned inside the file without overlap."""
    out = []
    for name, dims, type_id, offset in tensors:
        try:
            nbytes = tensor_bytes(type_id, dims)
        except ValueError as error:
            raise ValueError(f"{label}: tensor {name!r}: {error}") from None
        if offset % alignment:
            raise ValueError(f"{label}: tensor {name!r} offset {offset:,} is not a multiple of {alignment} (alignment)")
        if data_offset + offset + nbytes > size:
            raise ValueError(f"{label}: tensor {name!r} ({nbytes:,} bytes at data offset {offset:,}) ends past "
                             f"the end of the file ({size:,} bytes): truncated or corrupt")
        out.append(TensorInfo(name, dims, type_id, offset, nbytes))
    ordered = sorted(out, key=lambda t: t.offset)
    for a, b in itertools.pairwise(ordered):
        if a.offset + a.nbytes > b.offset:
            raise ValueError(f"{label}: tensors {a.name!r} and {b.name!r} overlap")
    if len({t.name for t in out}) != len(out):
        raise ValueError(f"{label}: duplicate tensor names")
    return tuple(out)


def _alignment(metadata: dict[str, Any], label: str) -> int:
    value = metadata.get("general.alignment", 32)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1 or value > 2**16 or value & (value - 1):
        raise ValueError(f"{label}: general.alignment must be a power of two up to 65536, got {value!r}")
    return value


def read_header(path: str | Path) -> Header:
    """Read the header of a GGUF file: metadata and tensor infos, checked, without reading tensor data.

    Parameters
    ----------
    path : str or Path
        A ``.gguf`` file.

    Returns
    -------
    Header
        The version, the metadata (arrays longer than ``KEEP_ARRAY`` as ``Skipped``), the tensor
        infos with their sizes, the alignment and where the data section starts.

    Raises
    ------
    FileNotFoundError
        When ``path`` does not exist.
    ValueError
        Naming the file, for anything that is not a well-formed GGUF header within ``LIMITS``.
    """
    path = Path(path)
    label = str(path)
    if not path.is_file():
        raise (FileNotFoundError if not path.exists() else ValueError)(f"{label}: not a regular file")
    size = path.stat().st_size
    with path.open("rb") as handle:
        r = _Reader(handle, size, label)
        version, n_tensors, n_kv = _start(r)
        metadata: dict[str, Any] = {}
        for _ in range(n_kv):
            key = r.string("metadata key", "key")
            if key in metadata:
                raise r.error(f"duplicate metadata key {key!r}")
            metadata[key] = _value(r, r.scalar("<I", f"value type of {key}"), key)
        tensors = [_tensor(r) for _ in range(n_tensors)]
        alignment = _alignment(metadata, label)
        data_offset = -(-r.position // alignment) * alignment
    infos = _place(tensors, data_offset, alignment, size, label)
    return Header(path, version, metadata, infos, alignment, data_offset, size)
