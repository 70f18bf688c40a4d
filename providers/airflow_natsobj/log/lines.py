"""A stored log as lines of text, in time linear in its size and memory bounded by one line.

Whoever can write the log bucket decides what a log holds, so the reader assumes nothing about
its line lengths: a line longer than ``MAX_LINE_BYTES`` is cut there, with a note saying how
much was left out, and the rest of it is counted as it streams past, never held.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator

MAX_LINE_BYTES = 64 * 1024
"""The longest log line shown whole, in bytes of the stored log. A longer line is cut at this
many bytes and ends with a note naming how many bytes of it were not shown. Airflow's log
reader holds up to ``airflow.utils.log.file_task_handler.HEAP_DUMP_SIZE`` lines at once while
it interleaves a log's sources, so this cap, times that count, is what one forged log can make
the log page hold; Airflow's own lines stay below it (a JSON line with a traceback is a few
KiB, tens for a deep one)."""


def log_lines(chunks: Iterable[bytes], limit: int = MAX_LINE_BYTES) -> Iterator[str]:
    """The lines of a log given as chunks of UTF-8 bytes, without their ``\\n``; bytes that are
    not UTF-8 read as U+FFFD. Lines are split on the bytes (a ``\\n`` byte is never part of a
    longer UTF-8 character), and each byte is looked at once."""
    line = bytearray()
    skipped = 0
    for chunk in chunks:
        view = memoryview(chunk)
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            stop = len(chunk) if end < 0 else end
            taken = min(stop - start, limit - len(line))
            line += view[start : start + taken]
            skipped += stop - start - taken
            if end < 0:
                break
            yield _text(line, skipped, limit)
            line.clear()
            skipped = 0
            start = end + 1
    if line or skipped:
        yield _text(line, skipped, limit)


def _text(line: bytearray, skipped: int, limit: int) -> str:
    if not skipped:
        return line.decode("utf-8", "replace")
    # Not final: a character the cut split in two is left out (and counted) rather than shown
    # as U+FFFD.
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    head = decoder.decode(line)
    skipped += len(decoder.getstate()[0])
    return f"{head} [line cut at {limit} bytes: {skipped} more bytes not shown]"
