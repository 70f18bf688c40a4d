"""Overlap a task's two halves: Spark's side (the Arrow batches it sends or takes through the
worker's socket) and the store's side (Parquet encode or decode, and the NATS transfer).

Done in one thread, each half waits for the other: while a write task encodes and uploads a
part, the JVM cannot hand it rows; while a read task fetches a part, the JVM has nothing to
convert. A bounded hand-off lets both run at once, holding at most ``max_bytes`` of batches
between them. The thread Spark gave the task keeps the socket: only the store's side moves.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

import pyarrow as pa

R = TypeVar("R")

HANDOFF_BYTES = 64 * 1024 * 1024


class _Closed(Exception):
    """The other side has stopped: the side that sees it stops too."""


class BatchQueue:
    """Batches from one thread to another, with at most ``max_bytes`` waiting (a single batch
    larger than that still passes, alone). Either side can end it with an error."""

    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._items: deque[pa.RecordBatch] = deque()
        self._bytes = 0
        self._done = False  # the producer has finished
        self._error: BaseException | None = None  # what ended the hand-off early
        self._changed = threading.Condition()

    def put(self, batch: pa.RecordBatch) -> None:
        size = batch.nbytes
        with self._changed:
            while self._error is None and self._items and self._bytes + size > self._max_bytes:
                self._changed.wait()
            if self._error is not None:
                raise _Closed from self._error
            self._items.append(batch)
            self._bytes += size
            self._changed.notify_all()

    def finish(self) -> None:
        with self._changed:
            self._done = True
            self._changed.notify_all()

    def fail(self, error: BaseException) -> None:
        with self._changed:
            if self._error is None:
                self._error = error
            self._changed.notify_all()

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        while True:
            with self._changed:
                while self._error is None and not self._items and not self._done:
                    self._changed.wait()
                if not self._items:  # batches put before an error are taken first
                    if self._error is not None:
                        raise self._error
                    return
                batch = self._items.popleft()
                self._bytes -= batch.nbytes
                self._changed.notify_all()
            yield batch


def produce_ahead(
    produce: Callable[[], Iterable[pa.RecordBatch]], max_bytes: int = HANDOFF_BYTES
) -> Iterator[pa.RecordBatch]:
    """Run ``produce`` on a thread and yield its batches here, up to ``max_bytes`` ahead.
    Its errors are raised here; closing this generator early stops the thread."""
    queue = BatchQueue(max_bytes)

    def run() -> None:
        try:
            for batch in produce():
                queue.put(batch)
        except _Closed:
            return
        except BaseException as exc:
            queue.fail(exc)
            return
        queue.finish()

    thread = threading.Thread(target=run, name="natsobj-read-ahead", daemon=True)
    thread.start()
    try:
        yield from queue
    finally:
        queue.fail(_Closed("the reader stopped"))
        thread.join()


def consume_behind(
    batches: Iterable[pa.RecordBatch],
    consume: Callable[[Iterator[pa.RecordBatch]], R],
    max_bytes: int = HANDOFF_BYTES,
) -> R:
    """Pull ``batches`` here and run ``consume`` over them on a thread, up to ``max_bytes``
    behind; return its result. An error on either side stops both and is raised here."""
    queue = BatchQueue(max_bytes)
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["result"] = consume(iter(queue))
        except BaseException as exc:
            outcome["error"] = exc
            queue.fail(exc)

    thread = threading.Thread(target=run, name="natsobj-write-behind", daemon=True)
    thread.start()
    try:
        for batch in batches:
            queue.put(batch)
    except _Closed:
        pass  # the consumer failed: its error is raised below
    except BaseException as exc:
        queue.fail(exc)  # the consumer's next read raises it, so its put never completes
        thread.join()
        raise
    queue.finish()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["result"]  # type: ignore[return-value]
