"""Arrow <-> Parquet in bounded memory: split a task's batches into part objects, encode each
as a byte stream for ``ObjectStore.put``, and cast what is read back to Spark's exact schema."""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from natsobj.model import DEFAULT_CHUNK_SIZE
from natsobj.operation_options import parquet_codec


def spark_arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema a Python data source must yield: Spark compares types, nullability and
    timestamp units/zones exactly, with timestamps in UTC."""
    if _SCHEMA_TAKES_TIMEZONE:
        return to_arrow_schema(schema, timezone="UTC")
    return to_arrow_schema(schema)  # PySpark 4.0: in UTC (its timestamp_utc=True)


_SCHEMA_TAKES_TIMEZONE = "timezone" in inspect.signature(to_arrow_schema).parameters


ROWS_PER_BATCH = 10_000


def rows_as_batches(rows: Iterable[Any], schema: StructType) -> Iterator[pa.RecordBatch]:
    """Spark Rows as Arrow batches of ``schema``: what PySpark 4.0 hands a streaming writer
    (4.1 hands Arrow batches itself), for the one write path that takes batches."""
    arrow = spark_arrow_schema(schema)
    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append(row.asDict(recursive=True))
        if len(batch) == ROWS_PER_BATCH:
            yield pa.RecordBatch.from_pylist(batch, schema=arrow)
            batch = []
    if batch:
        yield pa.RecordBatch.from_pylist(batch, schema=arrow)


# A row group is flushed at row_group_rows or at this much Arrow data, whichever comes first,
# so wide rows cannot make a write task hold more than about this much.
ROW_GROUP_BYTES = 64 * 1024 * 1024


@dataclass
class RowCount:
    """What ``parquet_stream`` reports once its file is complete."""

    rows: int = 0
    metadata: pq.FileMetaData | None = None


class _ByteSink:
    """A write-only file for ParquetWriter whose bytes are drained as soon as they are written."""

    closed = False

    def __init__(self) -> None:
        self._pending: list[bytes] = []
        self._position = 0

    def write(self, data: bytes) -> int:
        self._pending.append(bytes(data))
        self._position += len(data)
        return len(data)

    def tell(self) -> int:
        return self._position

    def flush(self) -> None:
        pass

    def writable(self) -> bool:
        return True

    def drain(self) -> Iterator[memoryview]:
        """Hand over what was written in chunk-sized views, which ``put`` forwards as is."""
        if self._pending:
            data = memoryview(b"".join(self._pending))
            self._pending.clear()
            for start in range(0, len(data), DEFAULT_CHUNK_SIZE):
                yield data[start : start + DEFAULT_CHUNK_SIZE]


def parquet_stream(
    batches: Iterable[pa.RecordBatch],
    *,
    compression: str,
    row_group_rows: int,
    counter: RowCount,
    dictionary: bool,
) -> Iterator[memoryview]:
    """Yield one Parquet file as byte blocks; at most one row group is held in memory.

    Dictionary encoding is off by default (option ``dictionary``): Arrow's writer gives up
    a column's dictionary once it passes 1 MiB, so on high-cardinality columns (ids, amounts,
    names) it builds one for nothing, and on low-cardinality ones zstd over plain pages stores
    about as little (docs/performance.md). Statistics stay on for every column: pushdown
    prunes with them."""
    sink = _ByteSink()
    writer: pq.ParquetWriter | None = None
    pending: list[pa.RecordBatch] = []
    pending_rows = 0
    pending_bytes = 0  # a running sum: nbytes walks every buffer, so summing anew is quadratic

    def flush() -> None:
        nonlocal pending_rows, pending_bytes
        assert writer is not None
        writer.write_table(pa.Table.from_batches(pending), row_group_size=row_group_rows)
        pending.clear()
        pending_rows = pending_bytes = 0

    for batch in batches:
        if writer is None:
            writer = pq.ParquetWriter(
                sink,
                batch.schema,
                compression=parquet_codec(compression),
                use_dictionary=dictionary,
            )
        pending.append(batch)
        pending_rows += batch.num_rows
        pending_bytes += batch.nbytes
        counter.rows += batch.num_rows
        if pending_rows >= row_group_rows or pending_bytes >= ROW_GROUP_BYTES:
            flush()
            yield from sink.drain()
    if writer is None:
        return
    if pending:
        flush()
    writer.close()
    counter.metadata = writer.writer.metadata  # the footer, complete once closed
    yield from sink.drain()


class ObjectSplitter:
    """Cut a stream of batches into runs of at most ``rows_per_object`` rows, one per part."""

    def __init__(self, batches: Iterable[pa.RecordBatch], rows_per_object: int) -> None:
        self._batches = iter(batches)
        self._limit = rows_per_object
        self._carry: pa.RecordBatch | None = None

    def __iter__(self) -> Iterator[Iterator[pa.RecordBatch]]:
        while self._fill():
            yield self._one_object()

    def _fill(self) -> bool:
        while self._carry is None or self._carry.num_rows == 0:
            batch = next(self._batches, None)
            if batch is None:
                return False
            self._carry = batch
        return True

    def _one_object(self) -> Iterator[pa.RecordBatch]:
        budget = self._limit
        while budget > 0 and self._fill():
            assert self._carry is not None
            batch, self._carry = self._carry[:budget], self._carry[budget:]
            budget -= batch.num_rows
            yield batch


def conform(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """Pick the target's columns by name and cast them to the exact Spark types."""
    missing = [name for name in target.names if name not in batch.schema.names]
    if missing:
        raise KeyError(f"columns {missing} are not in the object (it has {batch.schema.names})")
    return batch.select(target.names).cast(target)
