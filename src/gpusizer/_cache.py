"""Private: the bundled data files as parsed, validated objects, kept pickled in the user's cache directory.

Parsing ``gpus.toml`` and ``models.toml`` with ``tomllib`` and validating their records takes about
50 ms of every ``gpusizer`` command; unpickling the records takes about 2 ms. An entry's key hashes the
data file's bytes, the versions of gpusizer, Python and pydantic, and the size and modification time
of every module of the package (the validators live there), as Python does for bytecode: changing
any of them rebuilds the entry.
Anything that goes wrong (no home directory, a read-only disk, a damaged or foreign file) falls back
to parsing, so the cache is never needed and never changes an answer. ``GPUSIZER_CACHE_DIR`` moves it;
set to an empty string, it turns the cache off.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import pickle
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

_PACKAGE = Path(__file__).resolve().parent


def directory() -> Path | None:
    """Where entries live: ``$GPUSIZER_CACHE_DIR``, else ``$XDG_CACHE_HOME/gpusizer``, else
    ``~/.cache/gpusizer``; None when turned off."""
    chosen = os.environ.get("GPUSIZER_CACHE_DIR")
    if chosen is not None:
        return Path(chosen) if chosen else None
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "gpusizer"


def _key(name: str, data: bytes) -> str:
    digest = hashlib.sha256(data)
    digest.update(f"{name}|{_code()}".encode())
    return digest.hexdigest()[:32]


@functools.cache
def _code() -> str:
    """The versions of the package, Python and pydantic (whose records are pickled), and the size and
    modification time of every module of the package."""
    from pydantic.version import VERSION

    from gpusizer import __version__

    stamps = [f"{p.name}:{s.st_size}:{s.st_mtime_ns}" for p in sorted(_PACKAGE.glob("*.py")) for s in (p.stat(),)]
    return "|".join([__version__, sys.version, VERSION, *stamps])


def parsed(name: str, data: bytes, build: Callable[[bytes], T]) -> T:
    """``build(data)``, or the pickled result of an earlier call on the same bytes and the same code.

    ``name`` labels the entry (``"gpus.toml"``); ``build`` must return picklable objects.
    """
    prefix = f"{name}-"
    try:
        folder = directory()
        entry = None if folder is None else folder / f"{prefix}{_key(name, data)}.pickle"
    except (OSError, RuntimeError):  # no home directory, unreadable package folder
        entry = None
    if entry is not None:
        try:
            with entry.open("rb") as file:
                return pickle.load(file)  # written by this module, keyed by content
        except Exception:  # absent, damaged, or from classes that changed: rebuild
            pass
    value = build(data)
    if entry is not None:
        _store(entry, prefix, value)
    return value


def _store(entry: Path, prefix: str, value: Any) -> None:
    """Replace the entries of ``prefix`` by ``entry``, written atomically; skip silently on any failure."""
    temporary = None
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        for old in entry.parent.glob(f"{prefix}*.pickle"):
            old.unlink(missing_ok=True)
        handle, temporary = tempfile.mkstemp(dir=entry.parent, suffix=".tmp")
        with os.fdopen(handle, "wb") as file:
            pickle.dump(value, file, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, entry)
    except Exception:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
