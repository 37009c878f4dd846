"""What a checkpoint stores, beside what gpusizer computes: ``fit``'s ``checkpoint`` object and its text.

For a MODEL read from a checkpoint folder or the Hugging Face cache, ``summary`` reads the safetensors
headers (``hf.read_checkpoint``) and cross-checks their total against the weight bytes the config
implies (``hf.cross_check``, which warns past 1 %); ``text`` shows it under ``fit``'s breakdown.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpusizer import catalog, hf
from gpusizer.commands.common import ENVIRONMENT, CommandError
from gpusizer.units import GB

__all__ = ["summary", "text"]

#: Most name patterns of 16-bit weights listed in the text (the JSON lists them all). [-]
SHOWN_PATTERNS = 6


def summary(record: catalog.Model, folder: Path | None) -> dict[str, Any] | None:
    """``fit --json``'s ``checkpoint`` object: the stored bytes (by dtype) and the cross-check; None when
    ``folder`` is None or holds no safetensors (nor their index).

    Keys: ``source`` (``"headers"`` or ``"index"``), ``files``, ``tensors``, ``stored_bytes``,
    ``computed_bytes`` (the weights the config implies at the checkpoint precisions), ``difference``
    (stored over computed, less 1), ``bytes_by_dtype`` (safetensors dtype -> bytes) and ``kept_16bit``
    (``{"tensors": pattern, "count", "bytes"}`` of the weight matrices a quantised checkpoint keeps in
    BF16/F16; empty otherwise).

    Raises
    ------
    CommandError
        Status 1, naming the file: a header or index ``hf.read_checkpoint`` refuses.
    """
    if folder is None:
        return None
    try:
        found = hf.read_checkpoint(folder)
    except (ValueError, OSError) as error:
        raise CommandError(f"MODEL: {error}", ENVIRONMENT) from None
    if found is None:
        return None
    computed, difference = hf.cross_check(record, found)
    return {
        "source": found.source,
        "files": found.files,
        "tensors": len(found.tensors),
        "stored_bytes": found.total_bytes,
        "computed_bytes": round(computed),
        "difference": difference,
        "bytes_by_dtype": found.bytes_by_dtype,
        "kept_16bit": [{"tensors": name, "count": count, "bytes": size}
                       for name, (count, size) in hf.kept_16bit(found).items()],
    }


def _size(value: float) -> str:
    """Bytes in GB, or as bytes below 0.1 GB (a test file)."""
    return f"{value / GB:.2f} GB" if value >= 0.1 * GB else f"{value:,.0f} bytes"


def text(data: dict[str, Any]) -> str:
    """The ``checkpoint`` object of ``summary`` as lines under ``fit``'s breakdown."""
    where = (f"{data['tensors']:,} tensors in {data['files']} safetensors file{'s' * (data['files'] != 1)}"
             if data["source"] == "headers" else "the index's metadata.total_size (no shards cached)")
    lines = [f"checkpoint: {_size(data['stored_bytes'])} stored ({where}); the config implies "
             f"{_size(data['computed_bytes'])} ({data['difference']:+.1%})"]
    if data["bytes_by_dtype"]:
        lines.append("  by dtype: " + ", ".join(f"{k} {_size(v)}" for k, v in data["bytes_by_dtype"].items()))
    kept = data["kept_16bit"]
    if kept:
        shown = ", ".join(k["tensors"] + (f" (x{k['count']})" if k["count"] > 1 else "") for k in kept[:SHOWN_PATTERNS])
        more = f" and {len(kept) - SHOWN_PATTERNS} more" if len(kept) > SHOWN_PATTERNS else ""
        total = sum(k["bytes"] for k in kept)
        lines.append(f"  kept in 16-bit ({_size(total)}): {shown}{more}")
    return "\n".join(lines)
