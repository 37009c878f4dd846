"""Progress bars of the command line: ``gpusizer.progress`` reports drawn as tqdm bars on stderr, only
when stderr is a terminal (never in a pipe, a file or a test's capture), so that scripted output stays
exactly as it was. No physics, no numbers of its own.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from gpusizer import progress

__all__ = ["on_terminal"]

#: What each task's bar counts.
UNITS = {"sweep": "rows", "simulation": "requests"}


class _Bars:
    """One tqdm bar per task, made at its first report and closed when it is done."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream, self.bars = stream, dict[str, Any]()

    def __call__(self, task: str, done: int, total: int) -> None:
        from tqdm import tqdm

        bar = self.bars.get(task)
        if bar is None or bar.total != total:
            if bar is not None:
                bar.close()
            bar = self.bars[task] = tqdm(total=total, desc=task, unit=UNITS.get(task, "it"), unit_scale=True,
                                         file=self.stream, leave=False, dynamic_ncols=True)
        bar.update(done - bar.n)
        if done >= total:
            bar.close()
            del self.bars[task]

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()


@contextmanager
def on_terminal(stream: IO[str] | None = None) -> Iterator[None]:
    """Draw the progress reported inside the block as bars on ``stream`` (default stderr) when it is a
    terminal (tqdm is a core dependency); otherwise report to no one."""
    stream = sys.stderr if stream is None else stream
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream
        terminal = False
    if not terminal:
        with progress.reporting(None):
            yield
        return
    bars = _Bars(stream)
    try:
        with progress.reporting(bars):
            yield
    finally:
        bars.close()

