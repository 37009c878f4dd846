"""The model argument of every command: a checkpoint folder or config.json, a ``.gguf`` file, a catalogue
id, or a repo id in the local Hugging Face cache (never downloaded), resolved in that order.

Errors are ``commands.common.CommandError`` (status 2 for a bad name, 1 for a file or cache that cannot be
read), which ``gpusizer.cli.main`` prints as one line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gpusizer import catalog
from gpusizer.commands.common import ENVIRONMENT, MAX_NAME, CommandError, input_file

if TYPE_CHECKING:  # hf is imported when a path or repo id is resolved, not at startup
    from gpusizer.hf import CheckpointTensors

__all__ = ["Checkpoint", "gguf_model", "model", "resolve_model"]


def model(name: str, what: str = "MODEL") -> catalog.Model:
    """The model a command names: a checkpoint path, a ``.gguf`` file, a catalogue id or a repo id in the
    Hugging Face cache (``resolve_model``, whose record it returns)."""
    return resolve_model(name, what)[0]


@dataclass(frozen=True)
class Checkpoint:
    """What ``resolve_model`` read from a checkpoint folder: the folder, the record its config alone
    describes, and its safetensors headers (None when it holds neither safetensors nor their index)."""

    folder: Path
    declared: catalog.Model
    tensors: CheckpointTensors | None


def resolve_model(name: str, what: str = "MODEL", *, cache: bool = True) -> tuple[catalog.Model, Checkpoint | None]:
    """The model a command names, and what was read from its checkpoint folder (None for a catalogue id or a
    GGUF file).

    A checkpoint's safetensors headers give the record its ``stored_weights`` (``hf.with_stored_weights``), as a
    GGUF file's header does, so that every command sizes its weights as stored at its own precision.

    In this order: an existing path to a ``.gguf`` file (``gguf_model``: any part of a split one), to a
    Hugging Face config.json or to a folder holding one; a catalogue
    id; a repo id ``ORG/NAME`` (or ``ORG/NAME@REVISION``) in the local Hugging Face cache
    (``hf.snapshot_folder``, offline: gpusizer never downloads), unless ``cache`` is False.

    Raises
    ------
    CommandError
        An empty or over-long name (status 2), or a path whose config.json is missing, a directory,
        a FIFO, oversize or unreadable, a safetensors header or index ``hf.read_checkpoint`` refuses, or a
        repo id that is not cached (status 1).
    KeyError
        An unknown catalogue id that is not a repo id, or any unknown id when ``cache`` is False
        (naming the closest ones).
    """
    if not name.strip():
        raise CommandError(f"{what}: empty; give a catalogue id (gpusizer models) or a path to a config.json")
    if len(name) > 4096 or any(len(part) > MAX_NAME for part in name.split(os.sep)):
        raise CommandError(f"{what}: a name or path component longer than {MAX_NAME} characters")
    path = Path(name)
    try:
        is_path = os.path.lexists(path)
    except (OSError, ValueError) as error:  # ValueError: an embedded NUL
        raise CommandError(f"{what}: {error}") from None
    if is_path and path.suffix.lower() == ".gguf":
        return gguf_model(path, what), None
    from gpusizer import hf

    if not is_path:
        try:
            return catalog.model(name), None
        except KeyError:
            if not cache or hf.parse_repo_id(name) is None:
                raise
        path = _cached(name, what)
    folder = path if path.is_dir() else path.parent
    input_file(folder / "config.json" if path.is_dir() else path, what)
    record = hf.from_hf_config(path)
    try:  # the safetensors headers alone, bounded by hf.MAX_HEADER_BYTES each
        found = hf.read_checkpoint(folder)
    except (ValueError, OSError) as error:
        raise CommandError(f"{what}: {error}", ENVIRONMENT) from None
    return hf.with_stored_weights(record, found), Checkpoint(folder, record, found)


def _cached(name: str, what: str) -> Path:
    """The snapshot folder of the repo id ``name`` in the Hugging Face cache, or a one-line ``CommandError``."""
    from gpusizer import hf

    repo, revision = hf.parse_repo_id(name) or (name, "main")
    try:
        return hf.snapshot_folder(repo, revision)
    except hf.NotCachedError as error:
        ids = [m.id for m in catalog.models()]
        near = catalog.closest(catalog.normalise(repo.rsplit("/", 1)[-1]), ids)
        hint = f"; or a catalogue id: {', '.join(near)}" if near else ""
        raise CommandError(
            f"{what}: {error}; gpusizer never downloads: fetch the config and the index with "
            f"`hf download {repo} config.json model.safetensors.index.json"
            f"{'' if revision == 'main' else ' --revision ' + revision}` (add the *.safetensors files for their "
            f"headers){hint}", ENVIRONMENT) from None
    except ValueError as error:
        raise CommandError(f"{what}: {error}", ENVIRONMENT) from None


def gguf_model(path: Path, what: str = "MODEL") -> catalog.Model:
    """The model of a GGUF file (``gguf.from_gguf``: split parts beside it, weights as stored).

    Raises
    ------
    CommandError
        Status 1, naming the file: not a regular file, unreadable, a malformed or hostile header
        (the reader's message), a missing split part or an architecture gpusizer does not read.
    """
    from gpusizer import gguf

    try:  # the header alone is read, within gguf.LIMITS; anything but a regular file is refused
        return gguf.from_gguf(path)
    except ValueError as error:
        raise CommandError(f"{what}: {error}", ENVIRONMENT) from None
    except OSError as error:
        raise CommandError(f"{what}: {path}: {error.strerror or error}", ENVIRONMENT) from None
