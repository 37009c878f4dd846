"""Streamed output of a sweep: the blocks of ``sweep_chunks`` written one after the other as CSV or
Parquet, so that a file far bigger than memory is written holding one block at a time.

``write_csv`` writes one header and then each block's rows, the same text as ``Sweep.to_csv`` of the
whole grid; ``write_parquet`` opens one ``pyarrow.parquet.ParquetWriter`` and writes each block as a
row group (needs the optional extra ``gpusizer[parquet]``). No physics lives here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from gpusizer.sweeper.table import Sweep

__all__ = ["csv_text", "write_csv", "write_parquet"]


def csv_text(parts: Iterable[Sweep]) -> Iterator[str]:
    """The CSV text of ``parts``' rows, one string per block, the header before the first block's rows."""
    import io

    for i, part in enumerate(parts):
        text = io.StringIO()
        part.to_csv(text, header=i == 0)
        yield text.getvalue()


def write_csv(parts: Iterable[Sweep], out: str | Path | IO[str]) -> int:
    """Write ``parts``' rows as one CSV (a header, then every block's rows) to a path or an open text file;
    returns the rows written. [-]"""
    if isinstance(out, str | Path):
        with open(out, "w", newline="", encoding="utf-8") as file:
            return write_csv(parts, file)
    rows = 0
    for i, part in enumerate(parts):
        part.to_csv(out, header=i == 0)
        rows += len(part)
    return rows


def _schema(table: Any) -> Any:
    """``table``'s schema with the columns that hold only nulls (no text yet) typed as text."""
    import pyarrow

    return pyarrow.schema([pyarrow.field(f.name, pyarrow.string()) if pyarrow.types.is_null(f.type) else f
                           for f in table.schema])


def write_parquet(parts: Iterable[Sweep], path: str | Path) -> int:
    """Write ``parts``' rows as one Parquet file, a row group per block (needs ``pyarrow``); returns the
    rows written. A missing number (NaN) is a null. [-]"""
    try:
        import pyarrow.parquet
    except ImportError:
        raise ImportError("write_parquet needs pyarrow: pip install 'gpusizer[parquet]'") from None
    writer: Any = None
    rows = 0
    try:
        for part in parts:
            table = part.to_arrow()
            if writer is None:
                writer = pyarrow.parquet.ParquetWriter(str(path), _schema(table))
            writer.write_table(table.cast(writer.schema))
            rows += len(part)
    finally:
        if writer is not None:
            writer.close()
    return rows
