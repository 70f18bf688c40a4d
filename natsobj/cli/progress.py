"""Transfer progress: a rich bar on stderr when stderr is a terminal, nothing otherwise.

The decision looks at the real stream, not rich's guess (which honours FORCE_COLOR), so
piped and captured runs never get control characters mixed into their output.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import BinaryIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from natsobj.cli.render import shell_escape

Advance = Callable[[int], None]


class Meter:
    """One progress task per file; a no-op when progress is off."""

    def __init__(self, progress: Progress | None) -> None:
        self._progress = progress

    @contextmanager
    def task(self, label: str, total: int | None) -> Iterator[Advance]:
        if self._progress is None:
            yield lambda _n: None
            return
        progress = self._progress
        task_id = progress.add_task(shell_escape(label), total=total)  # names are untrusted
        try:
            yield lambda n: progress.advance(task_id, n)
        finally:
            progress.refresh()  # show the final count and rate, however short the transfer
            progress.remove_task(task_id)


def wants_progress(enabled: bool | None) -> bool:
    """``--progress/--no-progress`` forces it; by default only an interactive stderr gets it."""
    if enabled is not None:
        return enabled
    try:
        return sys.stderr.isatty()
    except ValueError:
        return False


@contextmanager
def meter(enabled: bool | None) -> Iterator[Meter]:
    if not wants_progress(enabled):
        yield Meter(None)
        return
    progress = Progress(
        TextColumn("{task.description}", style="bold", markup=False),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=Console(file=sys.stderr, force_terminal=True, highlight=False),
        transient=True,
    )
    with progress:
        yield Meter(progress)


class CountingReader:
    """A binary file whose reads advance the progress bar; the store reads it like any file
    (``fileno`` is passed through so it can tell a disk file from a pipe)."""

    def __init__(self, stream: BinaryIO, advance: Advance) -> None:
        self._stream = stream
        self._advance = advance

    def read(self, n: int = -1) -> bytes:
        data = self._stream.read(n)
        self._advance(len(data))
        return data

    def fileno(self) -> int:
        return self._stream.fileno()
