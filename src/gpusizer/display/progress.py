"""Progress of a long loop on stderr, only when stderr is a terminal."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TextIO, TypeVar

T = TypeVar("T")


def progress(
    iterable: Iterable[T],
    total: int | None = None,
    *,
    label: str = "",
    stream: TextIO | None = None,
    interval: float = 0.1,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[T]:
    """Yield the items of ``iterable``, reporting progress on ``stream`` (stderr) when it is a terminal.

    Nothing is written when the stream is not a TTY (a pipe, a file, a CI log), so output that tools
    read stays clean. The line is redrawn at most every ``interval`` seconds and ends with a newline.

    Parameters
    ----------
    iterable : iterable
        The work items (sweep points, simulation runs).
    total : int, optional
        Number of items; default ``len(iterable)`` when it has one.
    label : str
        Shown before the counter.
    stream : file-like, optional
        Where to report; default ``sys.stderr``.
    interval : float
        Shortest time between two redraws. [s]
    clock : callable
        Monotonic clock (replaced in tests). [s]

    Examples
    --------
    >>> sum(progress(range(4), label="sweep"))  # stderr is not a terminal under doctest: silent
    6
    """
    out = sys.stderr if stream is None else stream
    if not getattr(out, "isatty", lambda: False)():
        yield from iterable
        return
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    start = last = clock()
    done = width = 0

    def draw() -> None:
        nonlocal width
        count = f"{done}/{total} ({100 * done / total:.0f}%)" if total else f"{done}"
        line = " ".join(part for part in (label, count, f"{clock() - start:.1f} s") if part)
        out.write("\r" + line.ljust(width))  # pad over a longer previous line
        width = len(line)
        out.flush()

    draw()
    try:
        for item in iterable:
            yield item
            done += 1
            if clock() - last >= interval:
                last = clock()
                draw()
    finally:
        draw()
        out.write("\n")
        out.flush()
