"""Progress of long loops, reported to whoever asked for it, and to no one otherwise.

Library loops that may run for long (``sweeper.sweep_chunks``, ``serving.simulate``) call
``report(task, done, total)``; that does nothing unless a caller installed a reporter with
``reporting(callback)``, which sees ``callback(task, done, total)``. The library itself never prints:
``gpusizer``'s command line installs a progress bar on stderr when stderr is a terminal
(``gpusizer.commands.bars``). The reporter lives in a ``contextvars.ContextVar``, so that threads and
tasks that did not install one see none.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["Reporter", "report", "reporting"]

Reporter = Callable[[str, int, int], None]
"""``callback(task, done, total)``: ``done`` of ``total`` units of the task named ``task``."""

_REPORTER: ContextVar[Reporter | None] = ContextVar("gpusizer_progress", default=None)


@contextmanager
def reporting(callback: Reporter | None) -> Iterator[None]:
    """Send the ``report`` calls made inside the ``with`` block to ``callback`` (None: to no one)."""
    token = _REPORTER.set(callback)
    try:
        yield
    finally:
        _REPORTER.reset(token)


def report(task: str, done: int, total: int) -> None:
    """Tell the installed reporter, if any, that ``done`` of ``total`` units of ``task`` are done."""
    callback = _REPORTER.get()
    if callback is not None:
        callback(task, done, total)
