"""Where the bundled data files are, and reading any file with a size limit.

The bundled TOML files live in ``gpusizer/data/`` inside the wheel and in ``data/`` of a source
checkout (editable install). Nothing read here can execute code: files are read as UTF-8 text and
parsed by the caller (``tomllib``, ``json``, ``csv``), never unpickled.

>>> bundled("gpus.toml").name
'gpus.toml'
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["MAX_FILE_BYTES", "bundled", "read_text"]

MAX_FILE_BYTES = 64 * 2**20
"""Largest file gpusizer reads (a measurement file, a data file); larger ones are refused. [B]"""


def bundled(name: str) -> Any:
    """The bundled data file ``name`` (``"gpus.toml"``, ``"calibration/priors.toml"``).

    Returns a ``Path`` in a source checkout and an ``importlib.resources`` traversable in a wheel;
    both have ``read_text``, ``read_bytes`` and ``name``.
    """
    packaged = resources.files("gpusizer").joinpath("data", name)
    if packaged.is_file():
        return packaged
    return Path(__file__).resolve().parents[2] / "data" / name


def read_text(path: Any, *, limit: int = MAX_FILE_BYTES, what: str = "file") -> str:
    """The UTF-8 text of ``path``, reading at most ``limit`` bytes.

    Parameters
    ----------
    path : path-like or traversable
        File to read (a FIFO or a device is read only up to the limit).
    limit : int
        Largest size accepted. [B]
    what : str
        How the error names the file (the parameter it came from).

    Raises
    ------
    ValueError
        The file is larger than ``limit`` bytes, or not UTF-8 text.
    OSError
        It cannot be opened or read (missing, a directory, no permission).
    """
    with open(path, "rb") if not hasattr(path, "open") else path.open("rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{what} {str(path)!r} is larger than {limit:,} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{what} {str(path)!r} is not UTF-8 text ({err.reason} at byte {err.start})") from None
