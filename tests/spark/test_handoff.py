"""The bounded hand-off between a task's Spark side and its store side: order, bounds, and
errors from either side stopping both."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pyarrow as pa
import pytest

from natsobj.spark.handoff import consume_behind, produce_ahead


def _batch(i: int, rows: int = 1000) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({"id": pa.array(range(i * rows, (i + 1) * rows), pa.int64())})


BATCH_BYTES = _batch(0).nbytes


def test_produce_ahead_keeps_order_and_stays_within_its_bytes() -> None:
    produced: list[int] = []
    taken = 0
    most_ahead = 0

    def produce() -> Iterator[pa.RecordBatch]:
        nonlocal most_ahead
        for i in range(50):
            most_ahead = max(most_ahead, len(produced) - taken)
            produced.append(i)
            yield _batch(i)

    got = []
    for batch in produce_ahead(produce, max_bytes=3 * BATCH_BYTES):
        got.append(batch["id"][0].as_py() // 1000)
        taken += 1
    assert got == list(range(50))
    # three batches in the queue, one in the producer's hands, one being taken here
    assert 1 <= most_ahead <= 5


def test_produce_ahead_raises_the_producers_error_after_its_batches() -> None:
    def produce() -> Iterator[pa.RecordBatch]:
        yield _batch(0)
        raise KeyError("object p/part-1 has no column 'x'")

    reader = produce_ahead(produce)
    assert next(reader).num_rows == 1000
    with pytest.raises(KeyError, match="no column 'x'"):
        next(reader)


def test_closing_produce_ahead_stops_its_thread() -> None:
    stopped = threading.Event()

    def produce() -> Iterator[pa.RecordBatch]:
        try:
            for i in range(10_000):
                yield _batch(i)
        finally:
            stopped.set()

    reader = produce_ahead(produce, max_bytes=2 * BATCH_BYTES)
    next(reader)
    reader.close()  # what Spark does after a LIMIT is reached
    assert stopped.wait(30)


def test_consume_behind_returns_what_the_consumer_returns() -> None:
    total = consume_behind(
        (_batch(i) for i in range(40)),
        lambda batches: sum(b.num_rows for b in batches),
        max_bytes=2 * BATCH_BYTES,
    )
    assert total == 40_000


def test_a_consumer_error_stops_pulling_the_source() -> None:
    pulled = 0

    def source() -> Iterator[pa.RecordBatch]:
        nonlocal pulled
        for i in range(10_000):
            pulled += 1
            yield _batch(i)

    def consume(batches: Iterator[pa.RecordBatch]) -> None:
        next(batches)
        raise ConnectionError("put of part-0 failed: no responders")

    with pytest.raises(ConnectionError, match="no responders"):
        consume_behind(source(), consume, max_bytes=2 * BATCH_BYTES)
    assert pulled < 100


def test_a_source_error_reaches_the_consumer_and_is_raised() -> None:
    seen: list[BaseException] = []

    def source() -> Iterator[pa.RecordBatch]:
        yield _batch(0)
        raise RuntimeError("the JVM closed the socket")

    def consume(batches: Iterator[pa.RecordBatch]) -> int:
        try:
            return sum(b.num_rows for b in batches)
        except BaseException as exc:  # a put sees it and aborts the object
            seen.append(exc)
            raise

    with pytest.raises(RuntimeError, match="closed the socket"):
        consume_behind(source(), consume)
    assert [type(e) for e in seen] == [RuntimeError]
