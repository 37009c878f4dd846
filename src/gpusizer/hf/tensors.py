"""Safetensors headers: every tensor's dtype, shape and stored bytes, read without reading the tensors.

A ``.safetensors`` file is an 8-byte little-endian header length ``n``, ``n`` bytes of a UTF-8 JSON
object mapping each tensor name to ``{"dtype", "shape", "data_offsets"}`` (with an optional
``"__metadata__"`` object of strings), then the tensor data, whose offsets count from the end of the
header (huggingface/safetensors README, "Format", and ``safetensors/src/tensor.rs``; checked 2026-12-05).
``read_header`` checks a header as the library's ``Metadata::validate`` does: offsets contiguous from 0,
each tensor's bytes ``prod(shape) * bits / 8`` whole, and the data ending exactly at the end of the file.
``read_checkpoint`` reads the headers of every file an index's ``weight_map`` names (or of a single
``model.safetensors``) into one ``CheckpointTensors`` record. Only ``ValueError`` (or
``FileNotFoundError``) leaves this module; no tensor data is read, so memory stays bounded by the header
limit however large a file declares itself.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpusizer.hf.section import MAX_INDEX_BYTES, json_object, read_json, show

__all__ = [
    "DTYPE_BITS",
    "MAX_HEADER_BYTES",
    "MAX_SHARDS",
    "SIXTEEN_BIT",
    "CheckpointTensors",
    "Tensor",
    "kept_16bit",
    "read_checkpoint",
    "read_header",
]

#: Largest header accepted: the safetensors library's ``MAX_HEADER_SIZE`` (100,000,000 bytes,
#: huggingface/safetensors ``safetensors/src/tensor.rs``). [B]
MAX_HEADER_BYTES = 100_000_000

#: Most files an index's ``weight_map`` may name (the largest published checkpoints have a few hundred). [-]
MAX_SHARDS = 10_000

#: Bits per element of each safetensors dtype (``Dtype::bitsize`` of huggingface/safetensors
#: ``safetensors/src/tensor.rs``, checked 2026-12-05). [bit]
DTYPE_BITS: dict[str, int] = {
    "BOOL": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32, "C64": 64, "F64": 64,
    "I64": 64, "U64": 64,
}

#: The 16-bit floating dtypes: what a quantised checkpoint keeps unquantised.
SIXTEEN_BIT = ("BF16", "F16")

#: Dtypes of an unquantised checkpoint; any other dtype in a checkpoint means it is quantised.
_PLAIN = ("BF16", "F16", "F32", "F64")

_LFS_POINTER = b"version "  # a git-LFS pointer file begins "version https://git-lfs.github.com/spec/v1"
_MAX_RANK = 64
_MAX_OFFSET = 2**64  # offsets and sizes are u64 in the library


@dataclass(frozen=True)
class Tensor:
    """One tensor as a safetensors header declares it."""

    name: str
    dtype: str
    """A key of ``DTYPE_BITS``."""
    shape: tuple[int, ...]
    bytes: int
    """Stored bytes, ``prod(shape) * DTYPE_BITS[dtype] / 8``. [B]"""
    file: str
    """Name of the file holding it."""


@dataclass(frozen=True)
class CheckpointTensors:
    """The tensors of one checkpoint folder, as stored."""

    total_bytes: int
    """Bytes of every tensor (headers excluded), or the index's ``metadata.total_size`` when
    ``source`` is ``"index"``. [B]"""
    source: str
    """``"headers"`` (read from every safetensors header) or ``"index"`` (shards absent: only the
    index's total)."""
    files: int
    """Safetensors files read (0 for ``"index"``). [-]"""
    tensors: tuple[Tensor, ...] = ()
    """Every tensor, in file then offset order (empty for ``"index"``)."""

    @property
    def bytes_by_dtype(self) -> dict[str, int]:
        """Stored bytes of each dtype, largest first. [B]"""
        totals: Counter[str] = Counter()
        for t in self.tensors:
            totals[t.dtype] += t.bytes
        return dict(totals.most_common())

    @property
    def quantised(self) -> bool:
        """Whether any tensor is stored in a dtype other than F16, BF16, F32 or F64."""
        return any(t.dtype not in _PLAIN for t in self.tensors)


def _fail(path: Path, problem: str) -> ValueError:
    return ValueError(f"{path}: {problem}")


def _header_bytes(path: Path) -> tuple[bytes, int]:
    """The JSON header of ``path`` and the file's size, with the length prefix checked."""
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    if not path.is_file():
        raise _fail(path, "is not a regular file")
    size = path.stat().st_size
    with path.open("rb") as handle:
        head = handle.read(8)
        if head.startswith(_LFS_POINTER):
            raise _fail(path, "is a git-LFS pointer file, not the tensors (run git lfs pull, or download the file)")
        if len(head) < 8:
            raise _fail(path, f"truncated: {size} bytes, fewer than the 8-byte header length")
        length = int.from_bytes(head, "little")
        if length > MAX_HEADER_BYTES:
            raise _fail(path, f"declares a {length:,}-byte header, more than the safetensors limit of "
                              f"{MAX_HEADER_BYTES:,} bytes; not a safetensors file")
        if 8 + length > size:
            raise _fail(path, f"truncated: declares a {length:,}-byte header but holds {size:,} bytes")
        return handle.read(length), size


def _parse(path: Path, raw: bytes) -> Mapping[str, Any]:
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=lambda name: _reject(path, name))
    except UnicodeDecodeError:
        raise _fail(path, "header is not UTF-8 text; not a safetensors file") from None
    except RecursionError:
        raise _fail(path, "header nests JSON too deeply") from None
    except json.JSONDecodeError as error:
        raise _fail(path, f"header is not valid JSON ({error.msg}); not a safetensors file") from None
    if not isinstance(data, Mapping):
        raise _fail(path, f"header must be a JSON object, got {show(data)}")
    return data


def _reject(path: Path, name: str) -> Any:
    raise _fail(path, f"header holds the JSON constant {name}")


def _entry(path: Path, name: str, info: Any) -> tuple[str, tuple[int, ...], int, int]:
    """dtype, shape, start and end of one header entry, each checked."""
    if not isinstance(info, Mapping):
        raise _fail(path, f"tensor {name!r} must be an object, got {show(info)}")
    dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
    if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
        raise _fail(path, f"tensor {name!r} has unknown dtype {show(dtype)} (known: {', '.join(DTYPE_BITS)})")
    if not isinstance(shape, list) or len(shape) > _MAX_RANK or not all(
            isinstance(d, int) and not isinstance(d, bool) and 0 <= d < _MAX_OFFSET for d in shape):
        raise _fail(path, f"tensor {name!r} shape must be a list of at most {_MAX_RANK} non-negative "
                          f"integers, got {show(shape)}")
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(
            isinstance(o, int) and not isinstance(o, bool) and 0 <= o < _MAX_OFFSET for o in offsets):
        raise _fail(path, f"tensor {name!r} data_offsets must be two non-negative integers, got {show(offsets)}")
    return dtype, tuple(shape), offsets[0], offsets[1]


def read_header(path: str | Path) -> tuple[Tensor, ...]:
    """Every tensor of one ``.safetensors`` file, from its header, checked as the safetensors library does.

    Parameters
    ----------
    path : str or Path
        A ``.safetensors`` file. Only its header is read (at most ``MAX_HEADER_BYTES``).

    Returns
    -------
    tuple of Tensor
        In offset order; each tensor's bytes are :math:`\\prod \\mathrm{shape} \\cdot b / 8` with
        :math:`b` its dtype's bits (``DTYPE_BITS``). [B]

    Raises
    ------
    FileNotFoundError
        When ``path`` is not a file.
    ValueError
        Naming the file: a git-LFS pointer, a truncated file, a header longer than ``MAX_HEADER_BYTES``,
        a header that is not a JSON object, an unknown dtype, a negative or non-integer dimension,
        offsets that overlap, leave gaps or disagree with shape x dtype, sizes past :math:`2^{64}`,
        sub-byte tensors not ending on a byte, or data that does not end exactly at the end of the file.

    Examples
    --------
    >>> import numpy, tempfile, os
    >>> from safetensors.numpy import save_file
    >>> path = os.path.join(tempfile.mkdtemp(), "t.safetensors")
    >>> save_file({"w": numpy.zeros((2, 3), numpy.float16)}, path)
    >>> read_header(path)[0].bytes    # 2 x 3 elements x 2 bytes
    12
    """
    path = Path(path)
    raw, size = _header_bytes(path)
    entries = []
    for name, info in _parse(path, raw).items():
        if name == "__metadata__":
            if not isinstance(info, Mapping) or not all(isinstance(v, str) for v in info.values()):
                raise _fail(path, f"__metadata__ must be an object of strings, got {show(info)}")
            continue
        entries.append((name, *_entry(path, name, info)))
    entries.sort(key=lambda e: (e[3], e[4]))
    tensors, end = [], 0
    for name, dtype, shape, start, stop in entries:
        if start != end or stop < start:
            raise _fail(path, f"tensor {name!r} data_offsets [{start}, {stop}] overlap or leave a gap "
                              f"(the previous tensor ends at {end})")
        bits = math.prod(shape) * DTYPE_BITS[dtype]
        if bits % 8 or bits // 8 >= _MAX_OFFSET:
            raise _fail(path, f"tensor {name!r} of shape {list(shape)} in {dtype} is not a whole number of bytes "
                              "below 2**64")
        if stop - start != bits // 8:
            raise _fail(path, f"tensor {name!r} spans {stop - start:,} bytes, but shape {list(shape)} in {dtype} "
                              f"needs {bits // 8:,}")
        tensors.append(Tensor(name, dtype, shape, bits // 8, path.name))
        end = stop
    if 8 + len(raw) + end != size:
        problem = "truncated" if 8 + len(raw) + end > size else "has bytes past its last tensor"
        raise _fail(path, f"{problem}: the header declares {end:,} bytes of tensors after a {len(raw):,}-byte "
                          f"header, the file holds {size:,} bytes")
    return tuple(tensors)


def _read_index(path: Path) -> Mapping[str, Any]:
    """The JSON object of an index file, at most ``section.MAX_INDEX_BYTES``."""
    return json_object(read_json(path, MAX_INDEX_BYTES), str(path))


def _weight_map(folder: Path, index: str) -> tuple[Mapping[str, Any], dict[str, list[str]]]:
    """The index's JSON and its ``weight_map`` grouped as file name -> tensor names, names checked."""
    path = folder / index
    data = _read_index(path)
    weight_map = data.get("weight_map", {})
    if not isinstance(weight_map, Mapping):
        raise ValueError(f"{path}: weight_map must be an object of tensor name -> file name, got {show(weight_map)}")
    files: dict[str, list[str]] = {}
    for tensor, file in weight_map.items():
        if not isinstance(file, str) or not re.fullmatch(r"[^/\\]+\.safetensors", file) or file.startswith("."):
            raise ValueError(f"{path}: weight_map[{tensor!r}] must name a .safetensors file in the same folder, "
                             f"got {show(file)}")
        files.setdefault(file, []).append(tensor)
    if len(files) > MAX_SHARDS:
        raise ValueError(f"{path}: weight_map names {len(files):,} files, more than the bound {MAX_SHARDS:,}")
    return data, files


def _index_total(path: Path, data: Mapping[str, Any]) -> int:
    meta = data.get("metadata")
    total = meta.get("total_size") if isinstance(meta, Mapping) else None
    if isinstance(total, bool) or not isinstance(total, int) or not 0 < total < 2**53:
        raise ValueError(f"{path}: metadata.total_size must be a positive integer, got {show(total)}")
    return total


def read_checkpoint(folder: str | Path) -> CheckpointTensors | None:
    """The tensors a checkpoint folder stores, from its safetensors headers; None when it holds none.

    Parameters
    ----------
    folder : str or Path
        A checkpoint folder (a path to a file in it is taken as its folder).

    Returns
    -------
    CheckpointTensors or None
        With ``model.safetensors.index.json``: the headers of every file its ``weight_map`` names
        (``source`` ``"headers"``), or, when any of those files is absent (only the config and the index
        downloaded), the index's ``metadata.total_size`` (``source`` ``"index"``). Without an index: the
        header of ``model.safetensors``. ``pytorch_model.bin.index.json`` gives its ``total_size``
        (``.bin`` files are pickles and are never opened). None when there is neither.

    Raises
    ------
    FileNotFoundError
        When ``folder`` does not exist.
    ValueError
        Naming the file: a malformed index, a header ``read_header`` refuses, or a tensor the index places
        in a file whose header lacks it.
    """
    path = Path(folder)
    if not path.exists():
        raise FileNotFoundError(f"no such folder: {path}")
    if path.is_file():
        path = path.parent
    index = path / "model.safetensors.index.json"
    if index.exists():
        data, files = _weight_map(path, index.name)
        if not files or not all((path / file).is_file() for file in files):
            return CheckpointTensors(_index_total(index, data), "index", 0)
        tensors: list[Tensor] = []
        for file, names in sorted(files.items()):
            found = read_header(path / file)
            missing = set(names) - {t.name for t in found}
            if missing:
                raise ValueError(f"{path / file}: lacks {len(missing)} tensor(s) {index.name} places there, "
                                 f"e.g. {sorted(missing)[0]!r}")
            tensors += found
        return CheckpointTensors(sum(t.bytes for t in tensors), "headers", len(files), tuple(tensors))
    if (path / "model.safetensors").is_file():
        found = read_header(path / "model.safetensors")
        return CheckpointTensors(sum(t.bytes for t in found), "headers", 1, found)
    bin_index = path / "pytorch_model.bin.index.json"
    if bin_index.exists():
        return CheckpointTensors(_index_total(bin_index, _read_index(bin_index)), "index", 0)
    return None


def kept_16bit(checkpoint: CheckpointTensors) -> dict[str, tuple[int, int]]:
    """The weight matrices a quantised checkpoint keeps in 16-bit, grouped by name pattern.

    A weight matrix is a tensor whose name ends in ``weight`` with at least two dimensions; layer
    numbers become ``*`` (``model.layers.*.mlp.gate.weight``). Empty for a checkpoint that is not
    quantised (``CheckpointTensors.quantised``), where every weight is 16-bit.

    Returns
    -------
    dict
        Pattern -> (tensors, stored bytes [B]), largest first.
    """
    if not checkpoint.quantised:
        return {}
    groups: dict[str, list[int]] = {}
    for t in checkpoint.tensors:
        if t.dtype in SIXTEEN_BIT and t.name.endswith("weight") and len(t.shape) >= 2:
            group = groups.setdefault(re.sub(r"(?<=\.)\d+(?=\.)", "*", t.name), [0, 0])
            group[0] += 1
            group[1] += t.bytes
    ordered = sorted(groups.items(), key=lambda item: -item[1][1])
    return {name: (count, size) for name, (count, size) in ordered}
