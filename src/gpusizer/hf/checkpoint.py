"""The public entry points: ``from_hf_config`` (a config to a ``Model``) and ``checkpoint_bytes``.

``from_hf_config`` locates the config, picks the reader of ``model_types.ARCHITECTURES`` (through a
multimodal wrapper of ``vision.WRAPPERS`` when there is one), reads the precision, folds per-layer
lists into patterns and rejects absurd sizes before it builds the record.
"""

from __future__ import annotations

import datetime
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gpusizer import architecture, precision
from gpusizer.catalog import Model
from gpusizer.checks import instance
from gpusizer.hf.model_types import ARCHITECTURES, DEFAULTS, generic
from gpusizer.hf.patterns import Fields, cycle
from gpusizer.hf.quantization import excluded_modules, read_dtype, read_quantization, unquantized_parts
from gpusizer.hf.section import ConfigAssumptionWarning, Section, json_object, read_json, show
from gpusizer.hf.tensors import CheckpointTensors, read_checkpoint
from gpusizer.hf.vision import TEXT_DEFAULTS, WRAPPERS

__all__ = [
    "MAX_PARAMS",
    "STORED_TOLERANCE",
    "StoredBytesWarning",
    "architectures",
    "checkpoint_bytes",
    "cross_check",
    "from_hf_config",
]


#: Largest accepted rough parameter count: 1000 times the largest published model. [param]
MAX_PARAMS = 10**15


def _locate(source: str | Path | Mapping[str, Any]) -> tuple[Mapping[str, Any], Path | None, str]:
    """The config mapping, the checkpoint folder (None for a mapping) and a label for messages."""
    if isinstance(source, Mapping):
        return source, None, "config"
    if not isinstance(source, str | Path):
        raise ValueError(f"source must be a path or a mapping, got {show(source)}")
    path = Path(source)
    if path.is_dir():
        path = path / "config.json"
    return json_object(read_json(path), str(path)), path.parent, str(path)


def _rough_params(f: Fields) -> int:
    """A generous upper bound on the parameter count, to reject absurd shapes before anything multiplies them."""
    d, moe = f["hidden_size"], f.get("moe")
    width = max(f["num_heads"], f["num_kv_heads"]) * f["head_dim"] + d
    ffn = (f.get("intermediate_size") or 0) + (
        moe.num_experts * moe.expert_intermediate_size + moe.shared_width if moe else 0
    )
    mla = f.get("mla")
    if mla is not None:
        width += (mla.q_lora_rank or 0) + mla.kv_lora_rank + f["num_heads"] * (mla.qk_nope_head_dim + mla.v_head_dim)
    for block in (f.get("mamba"), f.get("linear_attention")):
        if block is not None:
            width += 4 * sum(v for v in block.model_dump().values() if isinstance(v, int))
    per_layer = 6 * d * width + 3 * d * ffn
    vision = f.get("vision")
    extra = vision.num_layers * 12 * vision.hidden_size**2 + vision.projector_params if vision else 0
    return (f["num_layers"] + f.get("mtp_layers", 0)) * per_layer + 2 * f["vocab_size"] * d + extra


def _fields(top: Section, hf_quant: Section | None) -> Fields:
    """Architecture fields of ``Model`` for the config ``top``, wrappers and precision included."""
    model_type = top.text("model_type")
    wrapper = WRAPPERS.get(model_type or "")
    inner = top.section("text_config") or top.section("llm_config")  # llm_config: InternVL's internvl_chat
    if inner is not None:
        model_type = inner.text("model_type") or (wrapper[0] if wrapper else None)
    if wrapper is not None and model_type not in ARCHITECTURES:  # qwen2_5_vl(_text): its text model is qwen2
        model_type = wrapper[0]
    text_type, text_defaults = TEXT_DEFAULTS.get(top.text("model_type") or "", ("", {}))
    defaults = {**DEFAULTS.get(model_type or "", {}), **(text_defaults if model_type == text_type else {})}
    text = Section((inner or top).data, (inner or top).where, top.notes, defaults)
    build = ARCHITECTURES.get(model_type or "")
    if build is None:
        top.notes.insert(
            0,
            f"model_type {model_type!r} is not one gpusizer knows ({', '.join(sorted(ARCHITECTURES))}); "
            "read as a Llama-like decoder from the standard keys",
        )
        build = generic
    fields = build(text)
    vision = top.section("vision_config") if inner is not None or wrapper is not None else None
    if vision is not None:
        if wrapper is None:
            top.notes.append(f"vision tower of {top.text('model_type')!r} not counted (vision_config ignored)")
        else:
            fields["vision"] = wrapper[1](vision, top, fields["hidden_size"])
    activation = read_dtype([top, text])
    fields.update(activation_dtype=activation, weights=activation)
    quant = read_quantization([top, text], hf_quant)
    if quant is not None:
        precision, scope = quant
        fields["expert_weights" if scope == "experts" and fields.get("moe") else "weights"] = precision
        if scope == "all":  # what the config leaves at the checkpoint dtype (experts-only formats: the rest)
            roles, layers = unquantized_parts(excluded_modules([top, text], hf_quant), fields["num_layers"])
            fields.update(unquantized_roles=roles or None, unquantized_layers=layers or None)
    return fields


def _record(fields: Fields, where: str) -> Fields:
    """Turn per-layer lists into the shortest repeating pattern and drop unset optional fields."""
    layers = fields.pop("layers", None) or ["full"] * fields["num_layers"]
    if "sliding" in layers and fields.get("sliding_window") is None:
        raise ValueError(f"{where}: sliding layers need a sliding_window shorter than max_position_embeddings")
    ffns = fields.pop("ffns", None) or ["dense"] * fields["num_layers"]
    fields["layer_types"], fields["ffn_types"] = cycle(layers), cycle(ffns)
    return {key: value for key, value in fields.items() if value is not None}


def _default_id(config: Mapping[str, Any], folder: Path | None) -> str:
    """Record id: Hugging Face cache repo name, folder name, ``_name_or_path`` or ``model_type``."""
    if folder is not None and folder.parent.name == "snapshots" and folder.parent.parent.name.startswith("models--"):
        return folder.parent.parent.name.rsplit("--", 1)[-1].lower()  # Hugging Face cache: models--org--name
    if folder is not None and folder.name:
        return folder.name.lower()
    named = config.get("_name_or_path")
    if isinstance(named, str) and named.strip() and len(named) < 200:
        return named.rstrip("/").rsplit("/", 1)[-1].lower()
    kind = config.get("model_type")
    return kind if isinstance(kind, str) and kind and len(kind) < 100 else "imported-model"


def from_hf_config(source: str | Path | Mapping[str, Any], *, id: str | None = None, name: str | None = None) -> Model:
    """Build a ``Model`` record from a Hugging Face ``config.json``.

    Parameters
    ----------
    source : str, Path or Mapping
        A path to a ``config.json``, a checkpoint folder holding one, or the parsed mapping. Beside a
        file, ``hf_quant_config.json`` is read too when present.
    id : str, optional
        Record id; default the folder name, else the last part of ``_name_or_path``, else
        ``model_type``.
    name : str, optional
        Display name; default ``id``.

    Returns
    -------
    Model
        The architecture, with ``family`` set to the ``model_type``, ``source`` to the path read and
        ``checked`` to today. ``published`` is left empty.

    Raises
    ------
    FileNotFoundError
        When the path, or ``config.json`` in the folder, does not exist.
    ValueError
        For anything that is not a usable config: the message names the key and the problem.

    Warns
    -----
    ConfigAssumptionWarning
        Once, listing every assumption, for an unknown ``model_type`` or an approximated part.

    Examples
    --------
    >>> m = from_hf_config({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
    ...                     "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
    ...                     "intermediate_size": 14336, "max_position_embeddings": 131072,
    ...                     "torch_dtype": "bfloat16"}, id="llama-3.1-8b")
    >>> m.num_kv_heads, m.head_dim, m.weights, m.layer_types
    (8, 128, 'bf16', ('full',))
    """
    for value, what in ((id, "id"), (name, "name")):
        if value is not None:
            instance(value, what, str)
    config, folder, label = _locate(source)
    notes: list[str] = []
    top = Section(json_object(config, label), label, notes)
    hf_quant = None
    if folder is not None and (folder / "hf_quant_config.json").exists():
        path = folder / "hf_quant_config.json"
        hf_quant = Section(json_object(read_json(path), str(path)), str(path), notes)
    fields = _record(_fields(top, hf_quant), label)
    if _rough_params(fields) > MAX_PARAMS:
        raise ValueError(f"{label} describes more than {MAX_PARAMS:.0e} parameters; not a real model")
    model_type = config.get("model_type")
    record_id = id if id is not None else _default_id(config, folder)
    meta = {
        "id": record_id,
        "name": name if name is not None else record_id,
        "family": model_type if isinstance(model_type, str) and model_type else "unknown",
        "source": (f"Hugging Face config.json: {label}",),
        "checked": datetime.date.today(),
        "notes": "; ".join(notes),
    }
    try:
        record = Model(**meta, **fields)
    except ValidationError as error:
        raise ValueError(f"{label} does not describe a valid model: {error}") from None
    if notes:
        warnings.warn(f"{label}: assumptions made: " + "; ".join(notes), ConfigAssumptionWarning, stacklevel=2)
    return record


def checkpoint_bytes(folder: str | Path) -> int | None:
    """Exact bytes of the tensors a checkpoint folder stores, or None when it holds no safetensors.

    Parameters
    ----------
    folder : str or Path
        A checkpoint folder (a path to a file in it is taken as its folder).

    Returns
    -------
    int or None
        ``tensors.read_checkpoint(folder).total_bytes``: the sum of the tensors the safetensors headers
        declare, or the index's ``metadata.total_size`` when the shards are absent. [B]

    Raises
    ------
    FileNotFoundError
        When ``folder`` does not exist.
    ValueError
        When an index or header is malformed (naming the file).
    """
    found = read_checkpoint(folder)
    return None if found is None else found.total_bytes


#: Relative difference between the stored and the computed weight bytes past which ``cross_check`` warns. [-]
STORED_TOLERANCE = 0.01


class StoredBytesWarning(UserWarning):
    """The tensors a checkpoint stores differ from the bytes its config implies by more than ``STORED_TOLERANCE``."""


def cross_check(record: Model, checkpoint: CheckpointTensors) -> tuple[float, float]:
    """The weight bytes ``record`` implies at its checkpoint precisions, and how far the stored bytes differ.

    Parameters
    ----------
    record : Model
        The model the checkpoint's config describes (``from_hf_config``).
    checkpoint : CheckpointTensors
        What the checkpoint stores (``tensors.read_checkpoint``).

    Returns
    -------
    computed : float
        ``precision.stored_weight_bytes`` of ``record`` at ``weights``, ``expert_weights`` and
        ``activation_dtype``, multi-token-prediction modules included (checkpoints store them). [B]
    difference : float
        :math:`(B_{stored} - B_{computed}) / B_{computed}`. [-]

    Warns
    -----
    StoredBytesWarning
        When ``abs(difference) > STORED_TOLERANCE``: the config and the tensors disagree (a part the
        config does not describe, or a quantisation it does not declare).
    """
    counts = architecture.parameter_counts(record)
    computed = float(precision.stored_weight_bytes(counts, record.weights, record.expert_weights,
                                                   record.activation_dtype, include_mtp=True))
    difference = (checkpoint.total_bytes - computed) / computed
    if abs(difference) > STORED_TOLERANCE:
        warnings.warn(
            f"{record.id}: the checkpoint stores {checkpoint.total_bytes:,} bytes of tensors "
            f"({checkpoint.source}), {difference:+.1%} from the {computed:,.0f} bytes its config implies at "
            f"{record.expert_weights or record.weights}; memory is sized from "
            f"{'the tensors as stored' if record.stored_weights is not None else 'the config'}",
            StoredBytesWarning, stacklevel=2)
    return computed, difference


def architectures() -> tuple[str, ...]:
    """Every ``model_type`` read without assumptions, multimodal wrappers included."""
    return tuple(sorted((*ARCHITECTURES, *WRAPPERS)))
