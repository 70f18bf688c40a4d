"""Transfer progress: a rich bar on stderr when stderr is a terminal, nothing otherwise.

The decision looks at the real stream, not rich's guess (which honours FORCE_COLOR), so
piped and captured runs never get control characters mixed into their output.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import BinaryIO

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from natsobj.cli.render import shell_escape, size

Advance = Callable[[int], None]


class BinarySpeedColumn(ProgressColumn):
    """The transfer rate in binary units, as the sizes beside it (rich's own column speaks
    decimal units only)."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        if speed is None:
            return Text("?", style="progress.data.speed")
        return Text(f"{size(int(speed))}/s", style="progress.data.speed")


class Meter:
    """One progress task per file; a no-op when progress is off."""

    def __init__(self, progress: Progress | None) -> None:
        self._progress = progress

    def echo(self, line: str) -> None:
        """A line of output while the bar may be showing. On one terminal with the bar, it
        goes above the bar (printed through the bar's console, which clears the bar first
        and draws it again below): written straight to stdout it would be glued to the end
        of the bar's line. Elsewhere (stdout piped or captured) it goes to stdout."""
        on_one_terminal = _is_terminal(sys.stdout) and _is_terminal(sys.stderr)
        if self._progress is not None and on_one_terminal:
            self._progress.console.print(Text(line), soft_wrap=True, highlight=False)
        else:
            click.echo(line)

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


def _is_terminal(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):
        return False


def wants_progress(enabled: bool | None) -> bool:
    """``--progress/--no-progress`` forces it; by default only an interactive stderr gets it."""
    if enabled is not None:
        return enabled
    return _is_terminal(sys.stderr)


@contextmanager
def meter(enabled: bool | None) -> Iterator[Meter]:
    if not wants_progress(enabled):
        yield Meter(None)
        return
    progress = Progress(
        TextColumn("{task.description}", style="bold", markup=False),
        BarColumn(),
        DownloadColumn(binary_units=True),
        BinarySpeedColumn(),
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

    def tell(self) -> int:
        """Lets the store measure a file before sending it (``natsobj.aio.sources.known_size``:
        a put that cannot fit the bucket is refused up front)."""
        return self._stream.tell()
