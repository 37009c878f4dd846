"""What a checkpoint's files hold against what its config implies: ``fit``'s ``checkpoint`` object and its text.

For a MODEL read from a checkpoint folder or the Hugging Face cache, ``summary`` takes the safetensors
headers ``commands.model_argument.resolve_model`` read (``hf.read_checkpoint``) and cross-checks their total
against the weight bytes the config implies (``hf.cross_check``, which warns past 1 %); ``text`` shows it
under ``fit``'s breakdown. The bytes the estimate sizes, by part and by dtype, are ``fit``'s
``stored_weights`` (the record's, from the same headers: ``hf.with_stored_weights``); this object holds only
the cross-check: the files' total, the modules serving does not load, and the 16-bit weights of a
quantised checkpoint.
"""

from __future__ import annotations

from typing import Any

from gpusizer import catalog, hf
from gpusizer.commands.model_argument import Checkpoint
from gpusizer.units import GB

__all__ = ["summary", "text"]

#: Most name patterns of 16-bit weights listed in the text (the JSON lists them all). [-]
SHOWN_PATTERNS = 6


def summary(record: catalog.Model, checkpoint: Checkpoint | None) -> dict[str, Any] | None:
    """``fit --json``'s ``checkpoint`` object: the files' bytes against the config's; None when
    ``checkpoint`` is None or its folder holds no safetensors (nor their index).

    Keys: ``source`` (``"headers"`` or ``"index"``), ``files``, ``tensors``, ``stored_bytes`` (every tensor
    of the files), ``computed_bytes`` (the weights the config implies at the checkpoint precisions,
    multi-token-prediction modules included), ``difference`` (stored over computed, less 1),
    ``not_loaded_bytes`` (tensors serving does not load: multi-token-prediction modules, a tied head;
    ``hf.tensor_parts``), ``kept_16bit`` (``{"tensors": pattern, "count", "bytes"}`` of the weight matrices a
    quantised checkpoint keeps in BF16/F16; empty otherwise) and ``undeclared_16bit`` (``{"roles", "layers"}``
    of those the quantization config does not declare: ``hf.unquantized_found``, counted in the record's
    ``unquantized_roles``/``unquantized_layers``).
    """
    if checkpoint is None or checkpoint.tensors is None:
        return None
    found, declared = checkpoint.tensors, checkpoint.declared
    # what the config alone implies; the warning says whether the estimate sized the tensors as stored
    computed, difference = hf.cross_check(declared.model_copy(update={"stored_weights": record.stored_weights}),
                                          found)
    roles, layers = hf.unquantized_found(found, declared)
    return {
        "source": found.source,
        "files": found.files,
        "tensors": len(found.tensors),
        "stored_bytes": found.total_bytes,
        "computed_bytes": round(computed),
        "difference": difference,
        "not_loaded_bytes": hf.tensor_parts(found, record)["not_loaded"],
        "kept_16bit": [{"tensors": name, "count": count, "bytes": size}
                       for name, (count, size) in hf.kept_16bit(found).items()],
        "undeclared_16bit": {"roles": list(roles), "layers": list(layers)},
    }


def _size(value: float) -> str:
    """Bytes in GB (``display.format_bytes``), or as bytes below 0.1 GB (a test file)."""
    from gpusizer.display import format_bytes  # loaded for text output only

    return format_bytes(value, "GB") if value >= 0.1 * GB else f"{value:,.0f} bytes"


def text(data: dict[str, Any]) -> str:
    """The ``checkpoint`` object of ``summary`` as lines under ``fit``'s breakdown."""
    where = (f"{data['tensors']:,} tensors in {data['files']} safetensors file{'s' * (data['files'] != 1)}"
             if data["source"] == "headers" else "the index's metadata.total_size (no shards cached)")
    lines = [f"checkpoint: {_size(data['stored_bytes'])} stored ({where}); the config implies "
             f"{_size(data['computed_bytes'])} ({data['difference']:+.1%})"]
    if data["not_loaded_bytes"]:
        lines.append(f"  not loaded for serving: {_size(data['not_loaded_bytes'])} (multi-token prediction, tied head)")
    kept = data["kept_16bit"]
    if kept:
        shown = ", ".join(k["tensors"] + (f" (x{k['count']})" if k["count"] > 1 else "") for k in kept[:SHOWN_PATTERNS])
        more = f" and {len(kept) - SHOWN_PATTERNS} more" if len(kept) > SHOWN_PATTERNS else ""
        total = sum(k["bytes"] for k in kept)
        lines.append(f"  kept in 16-bit ({_size(total)}): {shown}{more}")
    undeclared = data["undeclared_16bit"]
    if undeclared["roles"] or undeclared["layers"]:
        found = [*(f"{r} in every layer" for r in undeclared["roles"]),
                 *([f"layers {undeclared['layers']}"] if undeclared["layers"] else [])]
        lines.append(f"  16-bit beyond the quantization config: {', '.join(found)} (sized as 16-bit)")
    return "\n".join(lines)
