"""The local Hugging Face cache, read offline: a repo id (and a revision) to the snapshot folder it holds.

The layout is the one huggingface_hub documents ("Understand caching",
<https://huggingface.co/docs/huggingface_hub/guides/manage-cache>, and its environment variables,
<https://huggingface.co/docs/huggingface_hub/package_reference/environment_variables>; checked 2026-12-05)::

    <cache>/models--ORG--NAME/refs/REVISION          a text file: the commit hash
    <cache>/models--ORG--NAME/snapshots/HASH/FILE    a symlink to ../../blobs/ETAG
    <cache>/models--ORG--NAME/blobs/ETAG             the file's bytes

The cache folder is ``HF_HUB_CACHE``, else ``HUGGINGFACE_HUB_CACHE`` (its older name), else
``HF_HOME/hub``, else ``XDG_CACHE_HOME/huggingface/hub``, else ``~/.cache/huggingface/hub``.

This module reads that layout with the standard library rather than through huggingface_hub: gpusizer
does not depend on it, a lookup is a few ``stat`` calls, and no code path here can reach the network.
A snapshot whose entries resolve outside the repo's own cache folder (a symlink to ``/etc/passwd``, or
``../../../other``) is refused.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["MAX_SNAPSHOT_ENTRIES", "NotCachedError", "cache_folder", "parse_repo_id", "snapshot_folder"]

#: Most entries of a snapshot folder checked (the largest checkpoints hold a few hundred files). [-]
MAX_SNAPSHOT_ENTRIES = 100_000

_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}"  # the hub's repo-name rule: letters, digits, - _ . ; at most 96
_REPO = re.compile(rf"({_NAME})/({_NAME})(?:@([A-Za-z0-9][A-Za-z0-9._/-]{{0,199}}))?")
_COMMIT = re.compile(r"[0-9a-f]{40}")


class NotCachedError(FileNotFoundError):
    """A repo id (or its revision) that the local cache does not hold; the message names the folder searched."""


def cache_folder() -> Path:
    """The Hugging Face hub cache folder, from the environment as huggingface_hub reads it.

    ``HF_HUB_CACHE``, else ``HUGGINGFACE_HUB_CACHE``, else ``HF_HOME/hub``, else
    ``XDG_CACHE_HOME/huggingface/hub``, else ``~/.cache/huggingface/hub`` (``~`` expanded).
    """
    for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(variable):
            return Path(os.environ[variable]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
    return Path(base).expanduser() / "huggingface" / "hub"


def parse_repo_id(name: str) -> tuple[str, str] | None:
    """``(repo_id, revision)`` of ``ORG/NAME`` or ``ORG/NAME@REVISION``; None for anything else.

    The revision is a branch or tag name (``main`` when absent) or a 40-hex-digit commit hash, after
    ``@`` as in huggingface_hub's ``hf://ORG/NAME@REVISION`` paths.

    >>> parse_repo_id("meta-llama/Llama-3.1-8B-Instruct")
    ('meta-llama/Llama-3.1-8B-Instruct', 'main')
    >>> parse_repo_id("Qwen/Qwen3-8B@v1.0"), parse_repo_id("llama-3.1-8b"), parse_repo_id("a/../b")
    (('Qwen/Qwen3-8B', 'v1.0'), None, None)
    """
    match = _REPO.fullmatch(name.strip())
    if match is None or any(part in ("..", ".") or ".." in part.split("/") for part in match.groups("main")):
        return None
    org, repo, revision = match.groups()
    return f"{org}/{repo}", revision or "main"


def _inside(path: Path, folder: Path) -> bool:
    try:
        return path.resolve(strict=True).is_relative_to(folder)
    except (OSError, RuntimeError):  # missing, a symlink loop
        return False


def _commit(repo: Path, revision: str, where: str) -> str:
    """The commit hash ``revision`` names in ``repo`` (a commit hash names itself)."""
    if _COMMIT.fullmatch(revision) and (repo / "snapshots" / revision).is_dir():
        return revision
    ref = repo / "refs" / revision
    if not ref.is_file() or not _inside(ref, repo.resolve()):
        raise NotCachedError(f"revision {revision!r} of {where} is not in the Hugging Face cache {repo.parent} "
                             f"(no {repo.name}/refs/{revision} nor snapshots/{revision})")
    with ref.open("rb") as handle:
        text = handle.read(100).decode("ascii", "replace").strip()
    if not _COMMIT.fullmatch(text):
        raise ValueError(f"{ref} must hold a 40-hex-digit commit hash, got {text[:50]!r}")
    return text


def snapshot_folder(repo_id: str, revision: str = "main", cache: str | Path | None = None) -> Path:
    """The folder of the cached snapshot of ``repo_id`` at ``revision``, offline.

    Parameters
    ----------
    repo_id : str
        ``ORG/NAME`` (as on the hub).
    revision : str, optional
        A branch or tag (``refs/REVISION`` gives the commit hash) or a 40-hex-digit commit hash.
    cache : str or Path, optional
        The hub cache folder; default ``cache_folder()``.

    Returns
    -------
    Path
        ``<cache>/models--ORG--NAME/snapshots/HASH``, every entry of which was checked to resolve inside
        ``models--ORG--NAME``.

    Raises
    ------
    NotCachedError
        When the repo, its revision or its snapshot is not in the cache; the message names the folder.
    ValueError
        A malformed ``repo_id`` or ref file, or a snapshot entry that resolves outside the repo's folder.
    """
    parsed = parse_repo_id(repo_id)
    if parsed is None or parsed[0] != repo_id:
        raise ValueError(f"repo_id must be ORG/NAME (letters, digits, '-', '_', '.'), got {repo_id!r}")
    root = Path(cache) if cache is not None else cache_folder()
    repo = root / ("models--" + repo_id.replace("/", "--"))
    if not repo.is_dir():
        raise NotCachedError(f"{repo_id} is not in the Hugging Face cache {root} (no {repo.name})")
    commit = _commit(repo, revision, repo_id)
    folder = repo / "snapshots" / commit
    if not folder.is_dir():
        raise NotCachedError(f"snapshot {commit} of {repo_id} is not in the Hugging Face cache {root}")
    _check_entries(folder, repo.resolve())
    return folder


def _check_entries(folder: Path, repo: Path) -> None:
    """Refuse a snapshot with an entry that resolves outside ``repo`` (symlinks must point into its blobs)."""
    if not _inside(folder, repo):
        raise ValueError(f"{folder} resolves outside the cache folder {repo}; refused")
    with os.scandir(folder) as entries:
        for count, entry in enumerate(entries):
            if count >= MAX_SNAPSHOT_ENTRIES:
                raise ValueError(f"{folder} holds more than {MAX_SNAPSHOT_ENTRIES:,} entries; not a model snapshot")
            path = Path(entry.path)
            if entry.is_symlink() and path.exists() and not _inside(path, repo):
                raise ValueError(f"{path} links to {os.path.realpath(path)}, outside the cache folder {repo}; "
                                 "refused")
