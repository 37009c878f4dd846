"""The files of one GGUF model: split parts found beside the first, and the bytes their tensors store.

llama.cpp's ``gguf-split`` (and gguf-py's ``GGUFWriter`` with ``split_max_tensors``/``split_max_size``)
writes ``NAME-00001-of-00003.gguf`` ... with ``split.no`` (0-based), ``split.count`` and
``split.tensors.count`` in every part (ggml-org/llama.cpp:gguf-py/gguf/gguf_writer.py ``SHARD_NAME_FORMAT``
and ``add_shard_kv_data``; src/llama-arch.cpp ``LLM_KV_SPLIT_*``, checked 2026-12-05); the model's own
metadata is in the first part. ``read_parts`` reads every part's header; ``stored_weights`` sums the
tensors by the parts ``parallel.weight_parts`` treats apart, from llama.cpp's tensor names
(gguf-py ``TENSOR_NAMES``: ``token_embd``, ``output``, ``blk.N.*``, ``*_exps`` for routed experts).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from gpusizer.catalog import StoredWeights
from gpusizer.gguf.header import Header, TensorInfo, read_header
from gpusizer.hf.stored import from_sums

__all__ = ["MAX_PARTS", "part_paths", "read_parts", "stored_weights", "tensor_part"]

#: Most parts of one split model accepted. [-]
MAX_PARTS = 1024

_SPLIT = re.compile(r"^(?P<prefix>.+)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$")


def _split_count(header: Header) -> tuple[int, int]:
    """``(split.no, split.count)`` of a header; ``(0, 1)`` when it is not a split part."""
    meta, label = header.metadata, str(header.path)
    count, no = meta.get("split.count", 1), meta.get("split.no", 0)
    for key, value in (("split.count", count), ("split.no", no)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{label}: {key} must be an integer, got {value!r}")
    if not 1 <= count <= MAX_PARTS or not 0 <= no < count:
        raise ValueError(f"{label}: split.no {no} of split.count {count} (at most {MAX_PARTS} parts)")
    return no, count


def part_paths(path: str | Path, count: int) -> tuple[Path, ...]:
    """Paths of the ``count`` parts of the split model ``path`` is a part of (``NAME-0000i-of-0000n.gguf``).

    >>> [p.name for p in part_paths("m-00002-of-00002.gguf", 2)]
    ['m-00001-of-00002.gguf', 'm-00002-of-00002.gguf']
    """
    path = Path(path)
    match = _SPLIT.match(path.name)
    if match is None or int(match["count"]) != count:
        raise ValueError(f"{path}: a part of {count} split files must be named NAME-0000i-of-{count:05d}.gguf")
    return tuple(path.with_name(f"{match['prefix']}-{i:05d}-of-{count:05d}.gguf") for i in range(1, count + 1))


def read_parts(path: str | Path) -> tuple[Header, ...]:
    """The headers of a GGUF model, every split part in order (one header for a single file).

    ``path`` may name any part; the others are looked for beside it. A missing part, a part whose
    ``split.no``/``split.count`` disagree with its name, or a tensor total other than
    ``split.tensors.count`` is a ``ValueError`` naming the file.
    """
    first = read_header(path)
    no, count = _split_count(first)
    if count == 1:
        return (first,)
    paths = part_paths(first.path, count)
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise ValueError(f"{first.path}: split model of {count} parts; missing: {', '.join(missing)}")
    headers = tuple(first if i == no else read_header(p) for i, p in enumerate(paths))
    for i, header in enumerate(headers):
        if _split_count(header) != (i, count):
            raise ValueError(f"{header.path}: split.no/split.count say {_split_count(header)}, "
                             f"its name says part {i} of {count}")
    total = headers[0].metadata.get("split.tensors.count")
    found = sum(len(h.tensors) for h in headers)
    if total is not None and total != found:
        raise ValueError(f"{headers[0].path}: split.tensors.count {total!r}, the parts hold {found} tensors")
    names = [t.name for h in headers for t in h.tensors]
    if len(set(names)) != len(names):
        raise ValueError(f"{headers[0].path}: a tensor appears in more than one part")
    return headers


def tensor_part(tensor: TensorInfo) -> str:
    """Which part of ``StoredWeights`` a tensor belongs to, from llama.cpp's tensor names (the module docstring)."""
    name = tensor.name
    if name.startswith("token_embd.") and len(tensor.dims) > 1:
        return "embedding"
    if name.startswith("output.") and len(tensor.dims) > 1:
        return "head"
    if "_exps." in name:
        return "experts"
    return "layers"


def stored_weights(headers: tuple[Header, ...]) -> StoredWeights:
    r"""The bytes every tensor of a GGUF model stores, by part and by ggml type.

    Parameters
    ----------
    headers : tuple of Header
        Every part of the model (``read_parts``).

    Returns
    -------
    StoredWeights
        :math:`\sum_t` ``ggml.tensor_bytes`` over the tensors of each part: the token embedding, the
        LM head (``output.weight``; 0 when tied), routed experts (``*_exps``), and the rest as layers,
        of which 1-D tensors (norms, biases) are replicated under tensor parallelism. [B]
    """
    parts: Counter[str] = Counter()
    by_type: Counter[str] = Counter()
    for tensor in (t for h in headers for t in h.tensors):
        parts[tensor_part(tensor)] += tensor.nbytes
        parts["replicated"] += tensor.nbytes if len(tensor.dims) == 1 else 0
        by_type[tensor.type_name] += tensor.nbytes
    return from_sums(parts, by_type)
